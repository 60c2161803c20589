"""The masking ablation's results (assets/masking-ablation/results.json, written by `train.ablation`) as the
Masking tab shows them: what they show, in a few bullets, then one row per arm, mean ± std over seeds, the paper's
table beside it; and the alt text of the ablation's figure under that table, its figures read from the same
results."""
from __future__ import annotations

import html
import logging

from roberta.masking import DUPE_FACTOR

from .formatting import markdown_table, md_cell, millions, pct

log = logging.getLogger(__name__)


def ablation_markdown(ablation: dict) -> str:
    """`demo.models.read_ablation()`'s results as Markdown, or a note that they are not there (yet)."""
    results = ablation.get("results")
    if results is None:
        return ("_The static-vs-dynamic masking ablation (assets/masking-ablation/results.json) is not available "
                "yet._")
    try:
        return "## Ablation: pretraining with static vs dynamic masking\n\n" + ablation_arms_markdown(results)
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        log.warning("unexpected ablation results layout: %s", err)
        return "_The masking ablation's results.json is not in the layout `train.ablation` writes._"


def _mean_std(arm: dict, key: str, percent: bool = False) -> str:
    mean, std = arm.get("mean", {}).get(key), arm.get("std", {}).get(key)
    if mean is None:
        return "–"
    scale, digits = (100, 1) if percent else (1, 3)
    text = f"{mean * scale:.{digits}f}" + (f" ± {std * scale:.{digits}f}" if std is not None else "")
    return text + ("%" if percent else "")  # "25.0 ± 0.2%", as the app writes every percentage


BERT_EPOCHS = 40  # BERT's pretraining: 1M steps of 256 sequences, about 40 epochs (Devlin et al. 2019)


def masks_seen_said(arms: dict, epochs) -> str:
    """" With 20 epochs and 10 masks, each mask is seen 2 times (BERT: 4 times, its 10 masks over 40 epochs).":
    how often a static arm's model sees each of its masks, beside BERT's; "" without such an arm or the epochs."""
    static = [arm for arm in arms.values() if arm.get("masking") == "static" and (arm.get("dupe_factor") or 0) > 1]
    if not static or not isinstance(epochs, (int, float)) or epochs <= 0:
        return ""
    masks = int(static[0]["dupe_factor"])
    return (f" With {epochs:g} epochs and {masks} masks, each mask is seen {epochs / masks:g} times (BERT: "
            f"{BERT_EPOCHS / DUPE_FACTOR:g} times, its {DUPE_FACTOR} masks over {BERT_EPOCHS} epochs).")


def _start(setup: dict) -> str:
    """Which weights every pretraining arm started from: the checkpoint's own description when recorded (a folder
    may hold other weights since), else its folder; "" for random weights or none recorded."""
    init = setup.get("init")
    if not init or init == "random":
        return ""
    return str(setup.get("init_checkpoint") or init).split(":")[0].replace(chr(92), "/")


def _most_memorised(arms: dict) -> str | None:
    """The pretraining arm whose held-out MLM loss stands furthest above its loss on its training rows under the
    mask it was trained on (what it memorised of its masks); None without such a probed arm."""
    probed = [name for name, arm in arms.items() if arm.get("masking") and arm["mean"].get("mlm_loss") is not None
              and arm["mean"].get("probe_seen_mask_loss") is not None]
    return max(probed, key=lambda name: arms[name]["mean"]["mlm_loss"] - arms[name]["mean"]["probe_seen_mask_loss"],
               default=None)


def _memorised_said(arms: dict, dynamic: str | None, epochs) -> str:
    """The arm that memorised its masks most: its losses under the mask it was trained on, under a fresh one and
    held out (dynamic masking's beside them), and how often it saw each mask."""
    most = _most_memorised(arms)
    if most is None:
        return ""
    arm, mean = arms[most], arms[most]["mean"]
    fresh = mean.get("probe_fresh_mask_loss")
    if (fresh if fresh is not None else mean["mlm_loss"]) <= mean["probe_seen_mask_loss"]:
        return ""  # no better on the masks it saw than on others: nothing memorised
    masks = arm.get("dupe_factor")
    fed = (f" (each fed {epochs / masks:g} times)" if isinstance(epochs, (int, float)) and masks and epochs >= masks
           else "")
    text = (f"**“{md_cell(arm.get('label', most))}” memorised its masks**{fed}: MLM loss "
            f"{mean['probe_seen_mask_loss']:.2f} on its training rows under the mask it was trained on, "
            + (f"{fresh:.2f} under a fresh one, " if fresh is not None else "")
            + f"{mean['mlm_loss']:.2f} held out")
    if dynamic and dynamic != most and arms[dynamic]["mean"].get("mlm_loss") is not None:
        text += f" (“{md_cell(arms[dynamic].get('label', dynamic))}”: {arms[dynamic]['mean']['mlm_loss']:.2f})"
    return text + "."


def _against_dynamic_said(arms: dict, dynamic: str | None, name: str) -> str:
    """A static arm's held-out MLM loss against dynamic masking's: by how much, and on how many seeds it is higher
    (train.ablation's `minus_dynamic`, paired by seed)."""
    arm = arms[name]
    diff = (arm.get("minus_dynamic") or {}).get("mlm_loss") or {}
    ours, theirs = arm["mean"].get("mlm_loss"), arms[dynamic]["mean"].get("mlm_loss") if dynamic else None
    if diff.get("mean") is None or ours is None or theirs is None:
        return ""
    seeds, base = arm.get("seeds") or {}, arms[dynamic].get("seeds") or {}
    pairs = [(seeds[s]["mlm_loss"], base[s]["mlm_loss"]) for s in seeds
             if s in base and seeds[s].get("mlm_loss") is not None and base[s].get("mlm_loss") is not None]
    higher = sum(a > b for a, b in pairs)
    seed_said = ("" if not pairs else ", higher on every seed" if higher == len(pairs) else
                 ", lower on every seed" if not higher else f", higher on {higher} of {len(pairs)} seeds")
    spread = f" ± {diff['std']:.3f}" if diff.get("std") is not None else ""
    gap = f"{abs(diff['mean']):.2f}"  # a higher loss is worse
    side = "level with" if float(gap) == 0 else f"{gap} above" if diff["mean"] > 0 else f"{gap} below"
    return (f"**“{md_cell(arm.get('label', name))}” ends {side} "
            f"“{md_cell(arms[dynamic].get('label', dynamic))}”** in held-out MLM loss ({ours:.2f} against "
            f"{theirs:.2f}){seed_said} ({diff['mean']:+.3f}{spread}, paired by seed).")


def _sst2_said(arms: dict) -> str:
    """The pretraining arms' SST-2 dev accuracies: a spread no wider than their seeds' standard deviation says
    that SST-2 cannot tell them apart; a wider one is said as a range, by arm. With the no-pretraining arm's."""
    scored = sorted((arm["mean"]["sst2_accuracy"], name) for name, arm in arms.items()
                    if arm.get("masking") and arm["mean"].get("sst2_accuracy") is not None)
    if len(scored) < 2:
        return ""
    (low, low_name), (high, high_name) = scored[0], scored[-1]
    noise = max((arms[name].get("std", {}).get("sst2_accuracy") or 0 for _, name in scored), default=0)
    if noise and high - low <= noise:
        text = (f"**SST-2 cannot tell the pretraining arms apart**: {pct(low)} to {pct(high)}, within the "
                f"seeds' standard deviation (up to {noise * 100:.1f} points)")
    else:
        text = (f"**SST-2 dev accuracy** ranges from {pct(low)} (“{md_cell(arms[low_name].get('label', low_name))}”) "
                f"to {pct(high)} (“{md_cell(arms[high_name].get('label', high_name))}”)")
    floor = [arm["mean"]["sst2_accuracy"] for arm in arms.values()
             if "masking" in arm and arm["masking"] is None and arm["mean"].get("sst2_accuracy") is not None]
    return text + (f"; no pretraining: {pct(floor[0])}." if floor else ".")


def what_it_shows(results: dict) -> str:
    """What the ablation shows, above its table: the arm that memorised its masks, each other static arm against
    dynamic masking, and whether SST-2 tells the arms apart, every figure read from `results`; first, that it is a
    short run from the recorded start, whose arms compare with each other, not with the shipped model. "" when
    there is nothing to conclude (or a layout `train.ablation` does not write)."""
    try:
        arms, setup = results["arms"], results.get("setup") or {}
        dynamic = next((name for name, arm in arms.items() if arm.get("masking") == "dynamic"), None)
        most = _most_memorised(arms)
        others = [name for name, arm in arms.items() if arm.get("masking") == "static" and name != most]
        bullets = [_memorised_said(arms, dynamic, setup.get("epochs")),
                   *[_against_dynamic_said(arms, dynamic, name) for name in others], _sst2_said(arms)]
    except (KeyError, TypeError, ValueError, AttributeError, ZeroDivisionError) as err:
        log.warning("unexpected ablation results layout for what it shows: %s", err)
        return ""
    bullets = [bullet for bullet in bullets if bullet]
    if not bullets:
        return ""
    tokens, start = setup.get("train_tokens_per_run"), _start(setup)
    short = (f" (a short run: {millions(int(tokens))} tokens per run"
             + (f" from {html.escape(start)}" if start else "")
             + "; compare the arms with each other, not with the shipped model)" if tokens else "")
    if results.get("status") != "complete":  # the bullets rest on the seeds finished so far
        short += f" (**so far: {results.get('runs_done')} of {results.get('runs_planned')} runs**)"
    return "**What it shows**" + short + ":\n\n" + "\n".join(f"- {bullet}" for bullet in bullets) + "\n\n"


def ablation_arms_markdown(results: dict) -> str:
    """train.ablation's results.json: what it shows (`what_it_shows`), then arm | seeds | MLM loss | MLM
    accuracy | the mask probe's training-row losses | SST-2 (mean ± std), the paper's Table 1 beside it, and the
    setup in one line."""
    arms = results["arms"]
    # the longer headers in two lines, the longest "training-row loss," (the page keeps a header on one line):
    # on one, the seven columns were 1259 px in a 1214-px box at 1280 px, the last header cut to "SST-2 dev accura…"
    header = ["arm", "seeds", "held-out MLM loss", "held-out MLM<br>accuracy", "training-row loss,<br>mask trained on",
              "training-row loss,<br>fresh mask", "SST-2 dev<br>accuracy"]
    table = markdown_table(header, [
        [md_cell(arm.get("label", name)), str(int(arm.get("n", 0))), _mean_std(arm, "mlm_loss"),
         _mean_std(arm, "mlm_accuracy", True), _mean_std(arm, "probe_seen_mask_loss"),
         _mean_std(arm, "probe_fresh_mask_loss"), _mean_std(arm, "sst2_accuracy", True)]
        for name, arm in arms.items()], numbers=range(1, len(header)))
    setup = results.get("setup", {})
    shown = _start(setup)
    start = f"the same warm start ({html.escape(shown)})" if shown else "the same model"
    # an arm without masking (train.ablation's random-init baseline, "masking": null) was never pretrained
    unpretrained = [arm for arm in arms.values() if "masking" in arm and arm["masking"] is None]
    every = "Every pretraining arm" if unpretrained else "Every arm"
    note = ("Mean ± standard deviation over seeds; the two training-row columns are MLM losses on training rows "
            "under the mask trained on (static arms) and under fresh masks: their gap is what was memorised of "
            f"the masks. {every} has {start}, seeds, data, token budget, held-out mask and SST-2 fine-tuning; "
            "only the masking of the training rows differs")
    if setup.get("parameters") and setup.get("train_tokens_per_run"):
        corpus = setup.get("corpus") or {}
        name = str(corpus.get("source") or corpus.get("file") or "the corpus").replace("\\", "/").rsplit("/", 1)[-1]
        note += (f": a {millions(setup['parameters'])}-parameter encoder, {setup.get('epochs', 0):g} epochs over "
                 f"{setup.get('train_rows', 0):,} rows of {html.escape(name)} ({setup['train_tokens_per_run']:,} "
                 "tokens per run)")
    if setup.get("valid"):
        note += f". Held-out: {html.escape(str(setup['valid']).replace(chr(92), '/').rsplit('/', 1)[-1])}"
    note += "." + masks_seen_said(arms, setup.get("epochs"))
    for arm in unpretrained:
        note += (f" The “{md_cell(arm.get('label', 'random init'))}” row skips pretraining: the same SST-2 "
                 "fine-tuning, with the same seeds, of an encoder of the same shape from random weights, the floor "
                 "that pretraining is measured against.")
    if results.get("status") != "complete":
        note += f" **Partial results: {results.get('runs_done')} of {results.get('runs_planned')} runs.**"
    out = what_it_shows(results) + table + "\n\n" + note
    paper = results.get("paper")
    if isinstance(paper, dict) and paper.get("rows"):
        def num(v):
            return f"{v:.1f}" if isinstance(v, (int, float)) else "–"

        rows = [[md_cell(r.get("masking")), md_cell(arms.get(r.get("ours"), {}).get("label", "–")),
                 num(r.get("squad2_f1")), num(r.get("mnli_m_accuracy")), num(r.get("sst2_accuracy"))]
                for r in paper["rows"]]
        out += (f"\n\nFor reference, {md_cell(paper.get('source', 'the RoBERTa paper'))} "
                f"({md_cell(paper.get('model', 'BERT-base'))}; {md_cell(paper.get('note', ''))}):\n\n"
                + markdown_table(["masking (paper)", "our arm", "SQuAD 2.0 F1", "MNLI-m", "SST-2"], rows,
                                 numbers=[2, 3, 4]))
    return out


# the masking ablation's figure (train/ablation_figure.py, shown under its table on the Masking tab): its panels
ABLATION_PANELS = ("held-out MLM loss against training tokens; training loss on the masks fed (solid) against "
                   "held-out loss (dashed); the final MLM losses as bars, which show what was memorised")


def ablation_alt(results: dict | None) -> str:
    """The masking ablation figure's alt text, its figures read from results.json (`demo.models.read_ablation`):
    its four panels, the run's size, the arm whose training rows under the mask it was trained on score lowest
    against its held-out rows (what it memorised) beside the others' held-out loss, and the SST-2 range. A layout
    `train.ablation` does not write gets the panels alone."""
    panels_only = (f"Static vs dynamic masking, in four panels: {ABLATION_PANELS}; and SST-2 dev accuracy of each "
                   "arm.")
    if not results:  # the figure without its results.json
        return panels_only
    try:
        return _ablation_alt(results)
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        log.warning("unexpected ablation results layout for the figure's alt text: %s", err)
        return panels_only


def _ablation_alt(results: dict) -> str:
    arms = results["arms"]
    seeds = {int(arm["n"]) for arm in arms.values()}
    tokens = results["setup"].get("train_tokens_per_run")
    size = ", ".join(([f"{seeds.pop()} seeds per arm"] if len(seeds) == 1 else [])
                     + ([f"{int(tokens):,} training tokens per run"] if tokens else []))
    mean = {name: arm["mean"] for name, arm in arms.items()}
    pretrained = [name for name, arm in arms.items() if arm.get("masking")]  # the random-init row has none
    most = _most_memorised(arms)
    bars = ""
    if most is not None:
        held_out = sorted(mean[name]["mlm_loss"] for name in pretrained if name != most)
        others = (f" (the other arms {held_out[0]:.2f}" + (f" to {held_out[-1]:.2f}" if len(held_out) > 1 else "")
                  + " on held-out rows)" if held_out else "")
        bars = (f": “{arms[most]['label']}” scores {mean[most]['probe_seen_mask_loss']:.2f} on its training rows "
                f"under the mask it was trained on, {mean[most]['probe_fresh_mask_loss']:.2f} under a fresh mask "
                f"and {mean[most]['mlm_loss']:.2f} on held-out rows{others}")
    scored = sorted((mean[name]["sst2_accuracy"], arms[name]["label"]) for name in arms
                    if mean[name].get("sst2_accuracy") is not None)
    sst2 = "SST-2 dev accuracy of each arm" + (
        f", from {pct(scored[0][0])} for “{scored[0][1]}” to {pct(scored[-1][0])} for “{scored[-1][1]}”"
        if len(scored) > 1 else "")
    partial = (f" Partial results: {results.get('runs_done')} of {results.get('runs_planned')} runs."
               if results.get("status") != "complete" else "")
    return (f"Static vs dynamic masking{f', {size}' if size else ''}, in four panels: {ABLATION_PANELS}{bars}; "
            f"and {sst2}. The table above has every figure.{partial}")
