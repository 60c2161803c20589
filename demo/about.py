"""The About tab and the notes next to each tab's result, read at start-up from what each model folder holds
(metrics.json, phases.json, README.md, curves.png, phases.png) and the pretraining text's token counts
(`demo.training_counts`): a short card per model and its figures (each
with a caption and alt text that say what it covers), the notes on its size, held-out figures and the showcase
examples it gets wrong, the calibration note, the architecture and the recipe."""
from __future__ import annotations

import html
import logging
import math
import os
import re
from pathlib import Path
from typing import NamedTuple

import numpy as np

import roberta
from roberta import figure_alts
from roberta.config import PRESETS
from roberta.masking import DUPE_FACTOR, MASK_FRACTION, MLM_PROBABILITY, RANDOM_FRACTION
from roberta.run_metrics import (RunMetrics, dataset_name, dataset_said, is_sst2, readable_dataset, said_list,
                                 trained_on)
from roberta.text import normalize_for_classifier

from . import explain
from .bpe_view import GPT2_VOCAB_SIZE
from .examples import FILL_MASK_EXPECTED, SENTIMENT_EXPECTED
from .formatting import code, format_probability, large_count, md_escape, millions, minutes, pct, readable
from .models import KINDS, ROOT, Models, shown_source
from .training_counts import counts_file, counts_for

log = logging.getLogger(__name__)

# the About tab shows it in an accordion titled "Training recipe": no heading of its own
RECIPE = """- **Pretraining** (`python -m train.pretrain`): masked language modelling only, no next-sentence prediction;
documents concatenated across their boundaries, with `</s>` between them, and cut into full rows of the model's
length (like RoBERTa's FULL-SENTENCES, except that RoBERTa ends each row at a sentence boundary); 15% of tokens
selected, of which 80% become `<mask>`, 10% a random token and 10% stay unchanged, with a fresh mask every time a
row is seen (dynamic masking); byte-level BPE tokenizer; AdamW with warm-up and a decaying learning rate.
- **Fine-tuning** (`python -m train.sentiment_recipe`): a pretrained encoder (for the shipped classifier, an
earlier phase of the fill-mask model's: the Sentiment tab's note says which) plus a new classification head
on `<s>`. BERT's `[CLS]` was pretrained by next-sentence prediction; RoBERTa has none, so `<s>` gets no
sentence-level training before fine-tuning, where the head learns to read the sentence from it (the heads that
park on `<s>` in the Attention tab are another matter). In three stages: a short masked-language-model run on
lower-cased review text (task-adaptive pretraining), a stage on IMDB reviews, then SST-2 (texts detokenized and
lower-cased, here as in training).
Each SST-2 run keeps its end-of-run weights or their moving average (no checkpoint is chosen on the dev set), and the
served classifier is the uniform weight average of several seeds' runs, with a temperature fitted on held-out
training sentences.

The exact settings, data, hardware and times of each run are in its model card.
"""


def parameter_table(model) -> tuple[str, int]:
    """Markdown table of components with their parameter counts, and the total."""
    cfg = model.config
    named = dict(model.named_parameters())

    def count(prefix):
        return sum(p.numel() for n, p in named.items() if n.startswith(prefix))

    H, L, nh, ff, V = (cfg.hidden_size, cfg.num_hidden_layers, cfg.num_attention_heads, cfg.intermediate_size,
                       cfg.vocab_size)
    layer = "roberta.encoder.layer.0."
    rows = [
        ("Token embeddings", f"{V:,} × {H}", count("roberta.embeddings.word_embeddings")),
        (position_rows_said(cfg), f"{cfg.max_position_embeddings} × {H}",
         count("roberta.embeddings.position_embeddings")),
        ("Embedding LayerNorm", f"2 × {H}", count("roberta.embeddings.LayerNorm")),
        (f"Self-attention Q, K, V ({nh} heads of {H // nh}) × {L} layers", f"3 × ({H} × {H} + {H})",
         L * sum(count(layer + f"attention.self.{m}") for m in ("query", "key", "value"))),
        (f"Attention output + LayerNorm × {L}", f"{H} × {H} + {H} + 2 × {H}", L * count(layer + "attention.output")),
        (f"Feed-forward (GELU) × {L}", f"{H} × {ff} + {ff} + {ff} × {H} + {H}",
         L * (count(layer + "intermediate") + count(layer + "output.dense"))),
        (f"Feed-forward LayerNorm × {L}", f"2 × {H}", L * count(layer + "output.LayerNorm")),
    ]
    if any(n.startswith("lm_head") for n in named):
        rows.append(("MLM head: dense + GELU + LayerNorm + bias (decoder tied to token embeddings)",
                     f"{H} × {H} + {H} + 2 × {H} + {V:,}", count("lm_head")))
    if any(n.startswith("classifier") for n in named):
        rows.append(("Classification head on <s>: dense + tanh + projection",
                     f"{H} × {H} + {H} + {H} × {cfg.num_labels} + {cfg.num_labels}", count("classifier")))
    total = sum(p.numel() for p in named.values())
    lines = ["| component | shape | parameters |", "|---|---|---:|"]
    lines += [f"| {html.escape(a)} | {b} | {c:,} |" for a, b, c in rows]
    lines.append(f"| **total** | | **{total:,}** |")
    return "\n".join(lines), total


def position_rows_said(cfg) -> str:
    """The position table's row of the parameter table, short enough for a phone's table cell: its positions and
    the rows that hold none (`position_rows_explained` says why)."""
    first = cfg.pad_token_id + 1
    return f"Position embeddings ({cfg.max_position_embeddings - first} + {first} unused)"


def position_rows_explained(cfg) -> str:
    """Why the position table has more rows than positions, for the text above the parameter table."""
    first = cfg.pad_token_id + 1
    return (f"The position table's first {first} rows hold no position: RoBERTa numbers positions from "
            f"padding_idx + 1 = {first}, as roberta-base's 514 rows for 512 tokens show.")


def card_link(loaded) -> str:
    """Where the full model card is: its Hub page; for a folder of the app's own on a Hugging Face Space
    (SPACE_ID set), the Space's page of its README.md (the Space holds assets/, `scripts.deploy_space`); else
    README.md in the model's folder, said in words (the app serves no files but its figures)."""
    source = shown_source(loaded.source)
    if not roberta.hub.is_local(loaded.source):
        return f"full model card: [huggingface.co/{source}](https://huggingface.co/{source})"
    if "readme" not in loaded.extras:
        return "no model card"
    card = f"{source}/README.md"
    inside = Path(loaded.source).resolve().is_relative_to(ROOT)
    space = os.environ.get("SPACE_ID", "").strip()
    if inside and space:
        return f"full model card: [{card}](https://huggingface.co/spaces/{space}/blob/main/{card}) on the Hub"
    return f"full model card: {code(card)}, in the " + ("project's files" if inside else "model's folder")


def data_markdown(names: list[str]) -> str:
    """Data sets by their readable names, then the files they came from: "English Wikipedia, WikiText-2 and IMDB
    reviews, from `wikipedia-en`, `wikitext-2/wiki.train.tokens.xz`, `imdb/unsup.txt.xz`" (each name once; a
    file of no known data set by its name alone)."""
    shown = []
    for name in names:
        label = readable_dataset(name) or code(name)
        if label not in shown:
            shown.append(label)
    text = said_list(shown)
    files = [code(name) for name in names if readable_dataset(name)]
    return f"{text}, from {', '.join(files)}" if files else text


def held_out_markdown(name: str) -> str:
    """The held-out text a figure was measured on: its data set's name with the file ("WikiText-2
    (`wikitext-2/wiki.valid.tokens`)"), or the file alone."""
    return dataset_said(name, code)


def dev_is_sst2(facts: dict) -> bool:
    """Whether a classifier's dev figures are SST-2's: its dev set (metrics.json's dev_data) is, or where that is
    not recorded, its training data is (`is_sst2`)."""
    return is_sst2([facts["dev_data"]] if "dev_data" in facts else facts.get("data"))


def classifier_title(loaded) -> str:
    """A model's title in Markdown (`LoadedModel.title_naming`): a classifier fine-tuned on other data than SST-2
    names its files in backticks, "sentiment (fine-tuned on `three.csv`)", and its labels escaped."""
    return loaded.title_naming(code, md_escape)


def wall_time(facts: dict) -> str:
    """What follows the training time: " (22 min wall time)" where the runs' wall time reads longer, for it
    adds what ran outside the training loop (loading and packing the data, the final evaluation); nothing where
    the two read the same, nor where it reads shorter (a run resumed after an interruption counts only its last
    session's wall time, while its training time adds up every session's)."""
    if "wall_minutes" not in facts or facts["wall_minutes"] <= facts["train_minutes"]:
        return ""
    wall = minutes(facts["wall_minutes"])
    return "" if wall == minutes(facts["train_minutes"]) else f" ({wall} wall time)"


# What a masked-LM accuracy counts (`train.evaluate` scores every selected target, the unchanged ones too), from the
# masking rule's own rates: "15% of the tokens are targets, 1 in 10 of them left unchanged in the input"
TARGETS_SAID = (f"{MLM_PROBABILITY:.0%} of the tokens are targets, 1 in "
                f"{round(1 / (1 - MASK_FRACTION - RANDOM_FRACTION))} of them left unchanged in the input")


def summary_card(loaded) -> str:
    """A short Markdown card for the About tab, from the model's metrics.json and phases.json (read at
    run time; a figure that is not there is not shown): size, data, training, held-out figures."""
    if not loaded.available:
        return f"### {loaded.title}\n\n{md_escape(loaded.error)}"
    facts, cfg = model_facts(loaded), loaded.config
    rows = [("size", f"{millions(facts['parameters'])} parameters: {cfg.num_hidden_layers} layers, hidden "
                     f"{cfg.hidden_size}, {cfg.num_attention_heads} heads, up to {cfg.max_length} tokens")]
    if facts.get("data"):
        data = data_markdown(facts["data"])
        if "train_examples" in facts:
            data += f" ({facts['train_examples']:,} examples)"
        if "imdb" in facts.get("stages", []):
            data = f"IMDB reviews (a labelled stage first), then {data}"
        rows.append(("data", data))
    training = []
    if "train_tokens" in facts:
        training.append(f"{large_count(facts['train_tokens'])} tokens")
    phases = loaded.extras.get("phases")
    phases = phases if isinstance(phases, list) else []
    trained = [p for p in phases if p.train_tokens]  # an average trains none
    averages = len(phases) - len(trained)
    if "train_minutes" in facts and facts.get("averaged"):  # a weight average: its own wall time is the averaging
        spent = minutes(facts["train_minutes"])
        if loaded.key != "mlm":
            training.append(f"a weight average of {facts['averaged']} fine-tuning runs, whose last stage took "
                            f"{spent} in all (the model card has the earlier stages)")
        elif averages > 1:  # each average's members are a phase and that phase's start
            training.append(f"{spent} of training in {len(trained)} phases and {averages} weight averages, the last "
                            f"one of {facts['averaged']} phases")
        else:
            training.append(f"{spent} of training in {len(trained)} phases, then the weight average of the last "
                            f"{facts['averaged']}")
    elif "train_minutes" in facts:
        training.append(f"{minutes(facts['train_minutes'])} of training" + wall_time(facts))
    if "cores" in facts and facts.get("device") == "cpu":
        training.append(f"on a {facts['cores']}-core CPU")
    if len(trained) > 1 and not facts.get("averaged"):  # the averages too: the figure of the phases numbers them
        training.append(f"in {len(trained)} phases" + (f" and {averages} weight averages" if averages > 1 else
                                                         " and a weight average" if averages else ""))
    if training:
        rows.append(("training", ", ".join(training)))
    if "mlm_accuracy" in facts:
        where = dataset_name(loaded.extras["metrics"].mlm.get("source", "held-out text"))
        rows.append(("held-out masked tokens", (
            f"**{pct(facts['mlm_accuracy'])}** of the prediction targets guessed right (top-1)"
            + f" on {held_out_markdown(where)}"
            + (f" in {facts['mlm_rows']}-token rows, the length it last trained on" if "mlm_rows" in facts else "")
            + (f", the mean of {facts['mlm_masks']} random maskings" if "mlm_masks" in facts else "")
            + f"; {TARGETS_SAID}"
            + (f". Perplexity {facts['mlm_perplexity']:.0f}: e^loss on the targets, as unsure as a pick among "
               f"{facts['mlm_perplexity']:.0f} tokens (comparable only between models of the same vocabulary)"
               if "mlm_perplexity" in facts else ""))))
        # training's own figure, shown where it differs for a reason: rows of another length (several mask draws
        # in rows of the model's length are the better figure for the same thing)
        same_rows_more_masks = "mlm_masks" in facts and facts.get("mlm_rows") == cfg.max_length
        if "eval_accuracy" in facts and facts["eval_accuracy"] != facts["mlm_accuracy"] and not same_rows_more_masks:
            rows.append(("the same, training's own check", (
                f"{pct(facts['eval_accuracy'])} at the end of training, in rows of up to {cfg.max_length} tokens: "
                "longer rows are predicted worse, so the two figures differ")))
    elif "eval_accuracy" in facts:
        rows.append(("held-out masked tokens", f"**{pct(facts['eval_accuracy'])}** of the prediction targets guessed "
                                               f"right (top-1; {TARGETS_SAID})"))
    if "probe" in facts:
        n = int(facts["probe"]["sentences"])
        rows.append(("everyday sentences", f"the expected word first in {round(facts['probe']['top1'] * n)} of {n}, "
                                           f"in the top 5 in {round(facts['probe']['top5'] * n)} of {n}"))
    if "dev_accuracy" in facts and dev_is_sst2(facts):
        shipped = shipped_accuracy_said(loaded, facts)
        rows.append(("SST-2 dev", f"**{pct(facts['dev_accuracy'])}** right"
                     + (f" of {facts['dev_examples']:,} sentences" if "dev_examples" in facts else "")
                     + (f" ({shipped})" if shipped else "")))
    elif "dev_accuracy" in facts:  # the user's own dev set, by its file's name
        rows.append(("dev set", f"**{pct(facts['dev_accuracy'])}** right"
                     + (f" of {facts['dev_examples']:,} examples" if "dev_examples" in facts else "")
                     + (f" of {held_out_markdown(facts['dev_data'])}" if "dev_data" in facts else "")))
    if "imdb_accuracy_whole" in facts:
        rows.append(("IMDB reviews", f"**{pct(facts['imdb_accuracy_whole'])}** right"
                     + (f" of {facts['imdb_examples']:,}" if "imdb_examples" in facts else "")
                     + " read whole, in overlapping windows"
                     + (f"; {pct(facts['imdb_accuracy'])} from their first tokens only" if "imdb_accuracy" in facts
                        else "")))
    elif "imdb_accuracy" in facts:
        rows.append(("IMDB reviews", f"**{pct(facts['imdb_accuracy'])}** right"
                     + (f" of {facts['imdb_examples']:,}" if "imdb_examples" in facts else "")
                     + " (longer texts than it was trained on)"))
    checks = facts.get("checks")
    if checks:
        rows.append(("behaviour checks", f"{checks.get('right', 0)}/{int(checks['n'])} right"))
    table = "\n".join(f"- **{name}**: {value}" for name, value in rows)  # a list reads well on a phone too
    return (f"### {classifier_title(loaded)}\n\n{table}\n\nLoaded from {code(shown_source(loaded.source))}; "
            f"{card_link(loaded)}.")


# The model card's note on a reliability diagram redrawn from the shipped weights (`train.calibrate --plot-only`
# on an exported folder), beside the calibration table measured before the export: "The diagram is drawn from this
# folder's float16 weights (`python -m train.calibrate ... --plot-only`, on ...: ECE 7.6% -> 3.0%, accuracy 88.8%)"
REDRAWN_DIAGRAM_RE = re.compile(r"diagram is drawn from this folder's (?P<dtype>\w+) weights \([^()]*?"
                                r"ECE (?P<before>\d+(?:\.\d+)?%) -> (?P<after>\d+(?:\.\d+)?%)"
                                r"(?:, accuracy (?P<accuracy>\d+(?:\.\d+)?%))?\)")


def redrawn_diagram(readme: str | None) -> dict | None:
    """What the model card (README.md) says of a reliability diagram redrawn from the folder's own weights after
    the calibration figures of metrics.json were measured: {"dtype", "before", "after", "accuracy" (or None)}, the
    figures as the card prints them; None when the card says nothing of it (the diagram is then the one drawn
    with those figures)."""
    found = REDRAWN_DIAGRAM_RE.search(readme or "")
    return found.groupdict() if found else None


def shipped_accuracy_said(loaded, facts: dict) -> str:
    """"float32 average; 88.8% as shipped in float16": how the SST-2 dev accuracy of metrics.json (facts'
    dev_accuracy, measured before the weights were stored in float16) compares with the shipped weights', when the
    model card gives a different figure for those (`redrawn_diagram`); "" otherwise."""
    redrawn = redrawn_diagram(loaded.extras.get("readme")) if loaded.available else None
    if "dev_accuracy" not in facts or not redrawn or redrawn["accuracy"] in (None, pct(facts["dev_accuracy"])):
        return ""
    measured = "float32 average" if facts.get("averaged") else "float32"
    return f"{measured}; {redrawn['accuracy']} as shipped in {md_escape(redrawn['dtype'])}"


def surest_wrong_check(checks) -> str:
    """" Other text can be wrong at a high score: of the behaviour checks, “The film is in English with French
    subtitles.” (a neutral fact) comes out 93.6% positive.": the wrong answer given with the highest score among
    the behaviour checks (train.evaluate.score_checks' items); "" when none is wrong or they are not there."""
    items = checks.get("items") if isinstance(checks, dict) else None
    wrong = [it for it in items or [] if isinstance(it, dict) and it.get("right") is False
             and _real(it.get("score")) is not None and isinstance(it.get("sentence"), str)]
    if not wrong:
        return ""
    worst = max(wrong, key=lambda it: it["score"])
    kind = f" ({md_escape(str(worst['category']))})" if worst.get("category") else ""
    return (f" Other text can be wrong at a high score: of the behaviour checks, “{md_escape(worst['sentence'])}”"
            f"{kind} comes out {format_probability(worst['score'])} {md_escape(str(worst.get('label', '')))}.")


def _data_file(path) -> str | None:
    """A data file that metrics.json names, as `dataset_name` shows it; None where it names none."""
    return dataset_name(path) if isinstance(path, str) and path else None


def calibration_data_said(metrics: RunMetrics) -> tuple[str, str, str]:
    """What the calibration note says of its data, from metrics.json's calibration slice and dev_data: the texts the
    calibration holds for, what the temperature was fitted on and the dev set, as ("SST-2-like sentences", "1,000
    held-out SST-2 training sentences", "the SST-2 dev set (872 sentences)"); for a classifier of other data, its
    files by name: ("texts like its training data", "100 held-out examples of `three.csv`", "its dev set
    (`three_dev.csv`, 100 examples)")."""
    cal = metrics.calibration
    fitted, dev = cal["calibration"]["n"], cal["dev"]["n"]
    slice_data = _data_file((cal.get("slice") or {}).get("data"))
    if is_sst2([slice_data] if slice_data else None):
        like, fitted_on = "SST-2-like sentences", f"{fitted:,} held-out SST-2 training sentences"
    else:
        like = "texts like its training data"
        fitted_on = f"{fitted:,} held-out examples of " + (held_out_markdown(slice_data) if slice_data
                                                            else "its training data")
    dev_data = _data_file(metrics.dev_data)
    if is_sst2([dev_data] if dev_data else None):
        return like, fitted_on, f"the SST-2 dev set ({dev:,} sentences)"
    return like, fitted_on, f"its dev set ({held_out_markdown(dev_data) + ', ' if dev_data else ''}{dev:,} examples)"


def calibration_markdown(metrics: RunMetrics | None, readme: str | None = None) -> str:
    """What the sentiment scores mean: the fitted temperature and the dev calibration error before and after it
    (from the classifier's metrics.json), or a plain warning when the model was never calibrated. When the model
    card (`readme`) says the reliability diagram was redrawn from the shipped weights (`redrawn_diagram`), the
    diagram's own figures too, and why they differ from metrics.json's."""
    cal = metrics.calibration if metrics else None
    if not cal:
        return ("**This classifier is not calibrated**: its scores are the raw softmax of a small model, often near "
                "100% even when it is wrong. Read them as a ranking, not as a probability.")
    dev = cal["dev"]
    like, fitted_on, dev_set = calibration_data_said(metrics)
    text = (f"The scores are calibrated on average, over {like}: the logits are divided by a temperature "
            f"T = {cal['temperature']:.2f} fitted on {fitted_on}, which changes how sure the model sounds, never "
            f"which label wins. On {dev_set} the expected calibration error (the gap between confidence and accuracy, "
            f"over 15 bins) goes from {pct(dev['ece_before'])} to {pct(dev['ece_after'])}, and the mean confidence "
            f"from {pct(dev['mean_confidence_before'])} to {pct(dev['mean_confidence_after'])} at an accuracy of "
            f"{pct(dev['accuracy'])}.{surest_wrong_check(metrics.checks)}")
    redrawn = redrawn_diagram(readme)
    if redrawn:
        dtype = md_escape(redrawn["dtype"])
        accuracy = f" (accuracy {redrawn['accuracy']})" if redrawn["accuracy"] else ""
        text += (f" The diagram below was drawn later, from the shipped {dtype} weights, so it shows an ECE of "
                 f"{redrawn['before']} before and {redrawn['after']} after{accuracy}: the figures above were measured "
                 f"when the model was made, before its weights were stored in {dtype} (the model card gives both).")
    return text + (" A bar on the diagonal below means that answers given with that confidence are right that "
                   "often.")


def reliability_alt(metrics: RunMetrics | None) -> str:
    """The reliability diagram's alt text (`roberta.figure_alts`, as the model card's), naming the dev set it was
    drawn on as metrics.json names it (SST-2 dev, or the file: "three_dev.csv"), and where the app gives its
    figures."""
    dev_data = _data_file(metrics.dev_data) if metrics else None
    dev_set = "SST-2 dev" if is_sst2([dev_data] if dev_data else None) else f"its dev set ({dev_data})"
    return figure_alts.reliability_alt(dev_set) + " (the diagram's ECE figures are in the text above)"


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
    probed = [name for name in pretrained if mean[name].get("probe_seen_mask_loss") is not None]
    bars = ""
    if probed:
        most = max(probed, key=lambda name: mean[name]["mlm_loss"] - mean[name]["probe_seen_mask_loss"])
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


REFERENCE = PRESETS["mini"]  # the MiniRoBERTa reference's shape; its vocabulary is roberta-base's 50,265
REFERENCE_PARAMETERS = "17.7M"  # its size with the MLM head as the README's comparison gives it (17,756,761 counted)
ENCODER_SHAPE = ("num_hidden_layers", "hidden_size", "num_attention_heads", "intermediate_size",
                 "max_position_embeddings")


def parameters_compared(loaded) -> tuple[str, str]:
    """The comparison table's parameter cells (this project's, then the reference's: plain counts, so that the
    table fits a phone's width) and a sentence for under the table: the shipped MLM has the reference's encoder (6
    layers of hidden size 256) and a smaller vocabulary, so the whole gap is the embedding rows (and MLM-head biases)
    of the tokens it lacks, not a smaller model. No sentence for a model of another shape."""
    if not loaded.available:
        return f"not available | {REFERENCE_PARAMETERS}", ""
    cfg = loaded.config
    cells = f"{millions(loaded.model.num_parameters())} | {REFERENCE_PARAMETERS}"
    if not all(getattr(cfg, key) == getattr(REFERENCE, key) for key in ENCODER_SHAPE):
        return cells, ""
    note = (f"Both have the same encoder ({cfg.num_hidden_layers} layers, hidden size {cfg.hidden_size}, "
            f"{cfg.num_attention_heads} heads, feed-forward {cfg.intermediate_size}): the whole difference in "
            f"parameters is the vocabulary, {REFERENCE.vocab_size:,} tokens (roberta-base's) against this project's "
            f"{cfg.vocab_size:,}, each with its own embedding row and its own output bias.")
    return cells, note


def about_sections(models: Models) -> dict:
    """Markdown for the About tab, built once at start-up from whatever exists: per model a summary card
    ("{key}_card"), its curves.png ("{key}_curves", or None) and its figures with their captions and alt texts
    ("{key}_figures", `model_figures`), then the architecture and the comparison. No raw metrics, no machine
    paths in the text (the figures' paths are for gr.Image)."""
    out = {}
    reference = models.mlm if models.mlm.available else models.sentiment
    if reference.available:
        cfg = reference.config
        table, _ = parameter_table(reference.model)
        out["architecture"] = (
            f"Post-norm Transformer encoder (LayerNorm after each residual addition, as in BERT; GPT-2 and most newer "
            f"models normalise before), {cfg.num_hidden_layers} layers, hidden size {cfg.hidden_size}, "
            f"{cfg.num_attention_heads} heads, feed-forward {cfg.intermediate_size}, vocabulary "
            f"{cfg.vocab_size:,} (byte-level BPE), up to {cfg.max_length} tokens per input. "
            f"{position_rows_explained(cfg)} Counts of the {classifier_title(reference)} model:\n\n{table}"
        )
    else:
        out["architecture"] = "Architecture: not available (no model loaded)."

    sentiment = model_facts(models.sentiment) if models.sentiment.available else {}
    # the reference's 80% is SST-2's: a classifier scored on other data has no figure to set beside it
    compared = dev_is_sst2(sentiment)
    accuracy = sentiment.get("dev_accuracy") if compared else None
    parameters, same_encoder = parameters_compared(models.mlm)
    added = [said for stage, said in (("tapt", "TAPT"), ("imdb", "a labelled IMDB stage")) if stage in
             sentiment.get("stages", [])] + ([f"a {sentiment['averaged']}-seed weight average"]
                                             if sentiment.get("averaged") else [])
    out["comparison"] = (
        f"The MiniRoBERTa reference is the model this project measures itself against: roberta-base's design cut to "
        f"{REFERENCE.num_hidden_layers} layers of hidden size {REFERENCE.hidden_size}, with roberta-base's own "
        f"{REFERENCE.vocab_size:,}-token vocabulary, pretrained on WikiText and fine-tuned on SST-2.\n\n"
        "| measure | this project | MiniRoBERTa reference |\n|---|---:|---:|\n"
        f"| parameters (with the MLM head) | {parameters} |"
        + (f"\n| SST-2 accuracy (validation) | {dev_accuracy_cell(models.sentiment, sentiment)} | 80% |"
           if compared else "")
    ) + (f"\n\n{same_encoder}" if same_encoder else "") + (
        f"\n\nOur SST-2 figure is not the encoder's alone: its classifier adds {said_list(added)}."
        if accuracy is not None and added else "")
    out["roberta_vs_bert"] = roberta_vs_bert(models)
    out["intro"] = "Both are small teaching models, trained on a 2-core CPU" + gpu_phases_text(models.mlm) + (
        "; the figures below are read from each model's metrics.json.")
    for loaded in (models.mlm, models.sentiment):
        out[f"{loaded.key}_card"] = summary_card(loaded)
        out[f"{loaded.key}_curves"] = loaded.extras.get("curves")
        out[f"{loaded.key}_figures"] = model_figures(loaded)
    if text := training_text_figure(models.mlm):
        out["mlm_figures"].append(text)
    return out


BATCH_SIZE_RE = re.compile(r"--batch-size[ =](\d+)")


def training_hardware(metrics) -> dict:
    """The machine `metrics`' weights trained on: the run's `hardware`; for a weight average, which trains nothing,
    its members' `member_hardware` where they agree on device and cores ({} where they differ). An average recorded
    before `member_hardware` was kept holds one member's hardware as its own, which is where that member trained."""
    members = metrics.member_hardware if isinstance(metrics.averaged, int) and metrics.averaged > 1 else None
    if not isinstance(members, list):
        return metrics.hardware if isinstance(metrics.hardware, dict) else {}
    machines = [{key: m.get(key) for key in ("device", "cpu_count")} if isinstance(m, dict) else None
                for m in members]
    return machines[0] if machines and machines[0] and all(m == machines[0] for m in machines) else {}


def gpu_of(phase) -> str | None:
    """The GPU a phase of phases.json trained on, as its hardware names it; None for a CPU's, and for a weight
    average, which trains nothing (its `hardware` is the machine that averaged; a record from before that field
    was kept holds its last member's: phase 28's says an H200)."""
    if phase.averaged:
        return None
    gpu = phase.hardware.get("gpu") if isinstance(phase.hardware, dict) else None
    return gpu if isinstance(gpu, str) else None


def batch_sizes_said(loaded) -> str:
    """"batches of 32 to 64 rows on the CPU, 512 on the GPU": the batch sizes of the trained phases' commands
    (phases.json), by device; "" when the commands do not say."""
    phases = loaded.extras.get("phases") if loaded.available else None
    by_device: dict[str, set[int]] = {}
    for phase in phases if isinstance(phases, list) else []:
        found = BATCH_SIZE_RE.search(phase.command or "") if phase.train_tokens else None
        if found:
            by_device.setdefault("GPU" if gpu_of(phase) else "CPU", set()).add(int(found.group(1)))
    said = [f"{min(sizes)}" + (f" to {max(sizes)}" if len(sizes) > 1 else "") + f" on the {device}"
            for device, sizes in sorted(by_device.items())]
    return f"batches of {', '.join(said).replace(' on the', ' rows on the', 1)}" if said else ""


def dev_accuracy_cell(loaded, facts: dict) -> str:
    """The comparison table's SST-2 figure: "88.9% (float32 average; 88.8% as shipped in float16)", "88.9%" or
    "not available"."""
    if "dev_accuracy" not in facts:
        return "not available"
    shipped = shipped_accuracy_said(loaded, facts)
    return pct(facts["dev_accuracy"]) + (f" ({shipped})" if shipped else "")


def roberta_vs_bert(models: Models) -> str:
    """What RoBERTa changed in BERT's recipe (Liu et al. 2019), in one list, which of it this project keeps (its
    vocabulary read from the fill-mask model) and its batch sizes, which it does not keep (most are smaller than
    BERT's)."""
    ours = ["dynamic masking", "no next-sentence prediction"]
    batches = ""
    if models.mlm.available:
        ours.append(f"its own byte-level BPE of {models.mlm.config.vocab_size:,} tokens")
        if said := batch_sizes_said(models.mlm):
            batches = f" Not its batches: {said.removeprefix('batches of ')}."
    base = PRESETS["roberta-base"]
    return (
        "What RoBERTa (Liu et al. 2019) changed in BERT's pretraining:\n\n"
        f"- **Dynamic masking**: a fresh mask every time a row is seen, where BERT fixed {DUPE_FACTOR} masks at "
        "preprocessing (the Masking tab).\n"
        "- **No next-sentence prediction**: inputs are packed across documents; the paper found that dropping NSP "
        "matches or beats keeping it (its Table 2).\n"
        "- **Larger batches, longer training**: 8K sequences a batch, against BERT's 256.\n"
        f"- **Byte-level BPE**: GPT-2's, {GPT2_VOCAB_SIZE:,} tokens ({base.vocab_size:,} in roberta-base, with its "
        "special ones), where BERT had a 30K WordPiece vocabulary with "
        "an unknown token (the Tokens tab).\n"
        "- **More text**: 160 GB, ten times BERT's 16 GB.\n\n"
        f"This project keeps, in small: {said_list(ours)}.{batches}"
    )


def training_text_figure(loaded) -> AboutFigure | None:
    """What the fill-mask model's pretraining text held (`train.token_counts`' figure, beside the counts file),
    when the counts are of its vocabulary; its caption's figures read from the counts."""
    counts = counts_for(loaded.tokenizer) if loaded.available else None
    figure = counts_file().with_suffix(".png")
    if counts is None or not figure.is_file():
        return None
    total = counts.counts.sum(axis=0)
    size = int(total.sum())
    parts = ", ".join(f"{name} {large_count(tokens)}" for name, tokens in zip(counts.names, counts.tokens))
    top = np.sort(total)[::-1]
    rare, never = int(((total > 0) & (total < 100)).sum()), int((total == 0).sum())
    return AboutFigure(str(figure), (
        f"**What it read**: its pretraining text holds {large_count(size)} tokens ({parts}), each document counted "
        f"once (pretraining read it many times over, each phase in its own mixture). The 100 commonest tokens are "
        f"{top[:100].sum() / size:.0%} of it, and {rare:,} of the "
        f"{len(total):,} tokens of the vocabulary ({rare / len(total):.0%}) occur 1 to 99 times ({never:,} never): "
        "a word the text held rarely is one the model knows little of. The Fill mask, Tokens and Embeddings tabs "
        "give each token's count."), (
        "How often the pretraining text holds each token, against the token's rank from the commonest, both on log "
        "scales: one line per kind of text and one for both, a few tokens marked, and a dotted line at 100 "
        "occurrences."))


class DeviceShare(NamedTuple):
    """What one kind of device trained of a model's pretraining: tokens, seconds, and the device in words."""
    tokens: int
    seconds: float
    named: str


def pretraining_by_device(loaded) -> tuple[DeviceShare, DeviceShare] | None:
    """(the CPU's share, the GPU's share) of the trained phases of phases.json, when some ran on a GPU and every
    trained phase says its tokens, time and device; else None."""
    phases = loaded.extras.get("phases") if loaded.available else None
    trained = [p for p in phases if p.train_tokens] if isinstance(phases, list) else []
    if not any(gpu_of(p) for p in trained) or any(_real(p.train_tokens) is None or _real(p.train_time_s) is None
                                                for p in trained):
        return None
    on_gpu, on_cpu = [p for p in trained if gpu_of(p)], [p for p in trained if not gpu_of(p)]
    cores = {p.hardware.get("cpu_count") for p in on_cpu if isinstance(p.hardware, dict)}
    cpu = f"a {cores.pop()}-core CPU" if len(cores) == 1 and None not in cores else "the CPU"
    gpus = sorted({gpu_of(p) for p in on_gpu})
    return (DeviceShare(int(sum(p.train_tokens for p in on_cpu)), sum(p.train_time_s for p in on_cpu), cpu),
            DeviceShare(int(sum(p.train_tokens for p in on_gpu)), sum(p.train_time_s for p in on_gpu),
                        "one " + md_escape(" or ".join(gpus))))


def times_its_text(loaded, tokens: int) -> str:
    """" (about 58 times its 35.0M-token text)": how many times over the pretraining read its text, from the
    token counts of that text (`demo.training_counts`); "" without them."""
    counts = counts_for(loaded.tokenizer) if loaded.available else None
    size = int(counts.counts.sum()) if counts is not None else 0
    return f" (about {tokens / size:.0f} times its {large_count(size)}-token text)" if size else ""


def gpu_phases_text(loaded) -> str:
    """", and for 3 of the encoder's 26 pretraining phases (18 of training, 8 weight averages) one GPU (NVIDIA H100
    80GB HBM3), which trained 1.58B of the encoder's 2.02B tokens in 19 min" from phases.json's hardware, or ""
    when no phase ran on a GPU (or the MLM is not there)."""
    phases = loaded.extras.get("phases") if loaded.available else None
    phases = phases if isinstance(phases, list) else []
    gpus = [gpu for gpu in map(gpu_of, phases) if gpu]
    if not gpus:
        return ""
    named = " or ".join(sorted(set(gpus)))
    text = f", and for {len(gpus)} of the encoder's {phases_counted(phases)} one GPU ({md_escape(named)})"
    split = pretraining_by_device(loaded)
    if split:
        cpu, gpu = split
        text += (f", which trained {large_count(gpu.tokens)} of the encoder's {large_count(cpu.tokens + gpu.tokens)} "
                 f"tokens in {minutes(gpu.seconds / 60)}")
    return text


class AboutFigure(NamedTuple):
    """A figure of the About tab: its image file, a caption shown above it (Markdown) that says what it covers,
    and its alt text."""
    path: str
    caption: str
    alt: str


def _file(loaded, name: str) -> str | None:
    """The path of `name` in the model's folder (or its Hub repo), or None."""
    try:
        return roberta.hub.resolve_file(loaded.source, name)
    except Exception:  # missing, or offline: the figure is left out
        return None


def _percent_of(phase, template: str) -> str:
    """`template` filled with a phase's held-out accuracy, or "" when it has none."""
    accuracy = _real(phase.held_out[1])
    return template.format(pct(accuracy)) if accuracy is not None else ""


def model_figures(loaded) -> list[AboutFigure]:
    """The figures of a model, first the one whose figures the card gives. A model pretrained in phases (its
    phases.json and phases.png): held-out accuracy at the end of every phase against the tokens so far, then its
    curves.png, which covers the last phase alone. Otherwise curves.png: the run's, or for a weight average its
    members' (`train.average`)."""
    if not loaded.available:
        return []
    out = []
    phases = loaded.extras.get("phases") if isinstance(loaded.extras.get("phases"), list) else []
    plot = _file(loaded, "phases.png") if phases else None
    trained = [i for i, phase in enumerate(phases, 1) if phase.train_tokens]
    facts = model_facts(loaded)
    total = large_count(facts["train_tokens"]) if "train_tokens" in facts else None
    if plot:
        averages = len(phases) - len(trained)
        count = f"{len(phases)} phases" + (f" ({len(trained)} of training, {averages} weight average"
                                           f"{'s' if averages > 1 else ''})" if averages else "")
        end = _percent_of(phases[-1], "{}") + (f" after {total} tokens" if total else "")
        out.append(AboutFigure(plot, (
            f"**Every phase**: held-out accuracy at the end of each of the {count}, against the tokens trained on "
            "so far" + (f"; the last point, {end}, is the model the card describes." if end else ".")), (
            f"Held-out masked-word accuracy (top-1) at the end of each of the {count}, against the total training "
            "tokens on a log scale" + _percent_of(phases[0], ", from {} after phase 1")
            + _percent_of(phases[-1], f" to {{}} after phase {len(phases)}") + (f" ({total} tokens)" if total else "")
            + "; a dashed line carries the recent rate forward, and a box beside the plot lists every phase's "
              "figure.")))
    curves = loaded.extras.get("curves")
    if curves and out and trained:
        last = trained[-1]
        tokens = large_count(phases[last - 1].train_tokens) + (f" of the {total}" if total else "")
        which = f"phase {last} alone" + (", the last one trained" if last < len(phases) else "")
        out.append(AboutFigure(curves, (
            f"**The last phase's curves** ({which}: {tokens} tokens): training and held-out loss, and training's own "
            "periodic check of held-out accuracy, on part of the held-out text, so its figures are not the card's."),
            figure_alts.curves_alt(f"the last training phase only (phase {last}, {tokens} tokens)")
            + " (the caption above says why its figures are not the card's)."))
    elif curves:
        what = "fill-mask model" if loaded.key == "mlm" else "sentiment classifier"
        averaged = facts.get("averaged")
        whose = f"the {averaged} runs averaged into the {what}" if averaged else f"the {what}"
        stage = " (their last stage)" if averaged and loaded.key != "mlm" else ""
        out.append(AboutFigure(curves, f"**Training curves** of {whose}{stage}.",
                               figure_alts.curves_alt(whose, per_run=bool(averaged))
                               + " (the card above has the final figures)."))
    return out


# ----------------------------------------------------------------------------- model notes and summaries
def _real(value) -> float | None:
    """`value` when it is a finite real number (not a bool, NaN or infinity: a diverged run's), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _number(d, *keys) -> float | None:
    """d[k1][k2]... when it is a real number, else None (metrics.json's sections are free-form dicts)."""
    for key in keys:
        if not isinstance(d, dict) or key not in d:
            return None
        d = d[key]
    return _real(d)


def _total(values) -> float | None:
    """The sum of one figure over a model's runs, when every run has it."""
    values = [_real(v) for v in values]
    return sum(values) if values and all(v is not None for v in values) else None


# train.sentiment_recipe's folders, which a classifier's metrics.json names as its start: OUT/tapt/mlm, the encoder
# after task-adaptive pretraining (init_root), and OUT/imdb-sN, the labelled IMDB stage before SST-2 (init)
TAPT_RUN_RE = re.compile(r"(?:^|/)tapt/mlm/?$")
IMDB_STAGE_RE = re.compile(r"(?:^|/)(?:random-)?imdb-s\d+/?$")


def fine_tuning_stages(metrics: RunMetrics) -> list[str]:
    """The stages a classifier went through before its last one, as its metrics.json's init and init_root name
    them: "tapt" (more masked-LM training on the task's text) and "imdb" (a labelled IMDB stage), in order."""
    def named(path, pattern) -> bool:
        return isinstance(path, str) and pattern.search(path.replace("\\", "/")) is not None

    return [stage for stage, found in (("tapt", named(metrics.init_root, TAPT_RUN_RE)),
                                       ("imdb", named(metrics.init, IMDB_STAGE_RE))) if found]


def model_facts(loaded) -> dict:
    """What the model's metrics.json (and phases.json) say, read at start-up through `RunMetrics`; a key is
    missing when its figure is. Keys: parameters, train_tokens, train_minutes, wall_minutes, averaged (members
    of a weight average), cores, device, data, and for an MLM mlm_accuracy / mlm_perplexity / mlm_rows /
    mlm_masks (the release evaluation; mlm_masks where it averages several mask draws), eval_accuracy (the
    training script's own) and probe (train.fill_mask_probe's top1 / top5 / sentences), for a classifier
    dev_accuracy / dev_examples / dev_data / imdb_accuracy / imdb_examples / train_examples, stages
    (`fine_tuning_stages`) and checks (train.evaluate.score_checks' dict)."""
    facts = {}
    if loaded.available:
        facts["parameters"] = loaded.model.num_parameters()
    metrics = loaded.extras.get("metrics") or RunMetrics()
    runs = loaded.extras.get("phases") or ([metrics] if "metrics" in loaded.extras else [])  # the training runs
    for field, key, scale in (("train_tokens", "train_tokens", 1), ("train_time_s", "train_minutes", 60),
                              ("wall_time_s", "wall_minutes", 60)):
        total = _total([getattr(r, field) for r in runs])
        if total is not None:
            facts[key] = int(total) if scale == 1 else total / scale
    if isinstance(metrics.averaged, int) and metrics.averaged > 1:
        facts["averaged"] = metrics.averaged
    hardware = training_hardware(metrics)
    if _number(hardware, "cpu_count"):
        facts["cores"] = int(hardware["cpu_count"])
    if isinstance(hardware.get("device"), str):
        facts["device"] = hardware["device"]
    if (data := trained_on(metrics)) is not None:
        facts["data"] = data
    for key in ("accuracy", "perplexity"):
        if _number(metrics.mlm, key) is not None:
            facts[f"mlm_{key}"] = _number(metrics.mlm, key)
    if _number(metrics.mlm, "max_length"):
        facts["mlm_rows"] = int(metrics.mlm["max_length"])
    if (_number(metrics.mlm, "masks") or 1) > 1:
        facts["mlm_masks"] = int(metrics.mlm["masks"])
    for key, value in (("eval_accuracy", metrics.eval_accuracy), ("dev_accuracy", metrics.classifier_accuracy),
                       ("imdb_accuracy", metrics.imdb_accuracy),
                       ("imdb_accuracy_whole", metrics.imdb_accuracy_whole)):
        if _real(value) is not None:
            facts[key] = _real(value)
    for key, value in (("dev_examples", metrics.dev_examples), ("imdb_examples", metrics.imdb_examples),
                       ("train_examples", metrics.train_examples)):
        if _real(value):
            facts[key] = int(value)
    if isinstance(metrics.dev_data, str) and metrics.dev_data:
        facts["dev_data"] = dataset_name(metrics.dev_data)
    if stages := fine_tuning_stages(metrics):
        facts["stages"] = stages
    checks = metrics.checks
    if isinstance(checks, dict) and _number(checks, "n") and isinstance(checks.get("categories"), dict):
        facts["checks"] = checks
    # train.fill_mask_probe: everyday sentences with one expected word (the last phase is the shipped model)
    probe = metrics.fill_mask_probe or (runs[-1].fill_mask_probe if runs else None)
    if _number(probe, "sentences") and _number(probe, "top1") is not None and _number(probe, "top5") is not None:
        facts["probe"] = {k: float(probe[k]) for k in ("top1", "top5", "sentences")}
    return facts


def example_failures(models: Models) -> dict:
    """The showcase examples the loaded models get wrong, checked by running them (at start-up): {"mlm": [(text,
    expected, [top 5 words], the expected word's rank among them or None)], "sentiment": [(text, expected,
    label, probability)]}. A fill-mask example is wrong when the expected word is not the first answer; a sentiment
    one when the answer does not name the expected sentiment in any spelling (`explain.sentiment_of`), and a
    classifier none of whose labels names one ("neutral", "LABEL_1") is not checked."""
    out = {"mlm": [], "sentiment": []}
    try:
        if models.mlm.available:
            for text, expected in FILL_MASK_EXPECTED.items():
                top = [r["token_str"].strip() for r in models.mlm.pipeline(text, top_k=5)]
                if top[0] != expected:
                    out["mlm"].append((text, expected, top, top.index(expected) + 1 if expected in top else None))
        labels = models.sentiment.config.id2label.values() if models.sentiment.available else []
        if explain.names_a_sentiment(labels):  # a classifier of other labels: nothing to check
            for text, expected in SENTIMENT_EXPECTED.items():
                best = models.sentiment.pipeline(normalize_for_classifier(text))[0]
                if explain.sentiment_of(best["label"]) != expected:  # "pos" is right for "positive"
                    out["sentiment"].append((text, expected, best["label"], float(best["score"])))
    except Exception:  # a note is not worth failing the start-up for
        log.exception("could not check the examples")
    return out


# The shipped classifier's encoder: phase 7 of the fill-mask model's pretraining, what assets/mini-roberta-mlm held
# at git 7c6d2d7 (README, "The shipped models"). Its metrics.json records the fine-tuning chain only (init_root: the
# TAPT run), so the app takes the phase from here, and says it only when both shipped folders are loaded
SHIPPED_CLASSIFIER_ENCODER_PHASE = 7


def phases_counted(phases: list, more: str = "") -> str:
    """"26 pretraining phases (18 of training, 8 weight averages)", or "3 pretraining phases" without averages:
    phases.json's entries, as the About tab's figure of the phases numbers them (a weight average trains
    nothing); `more`, said in the same parenthesis ("...; 45.5% of ...")."""
    trained = sum(1 for p in phases if p.train_tokens)
    averages = len(phases) - trained
    said = [f"{trained} of training, {averages} weight average{'s' if averages > 1 else ''}"] if averages else []
    said += [more] if more else []
    return f"{len(phases)} pretraining phases" + (f" ({'; '.join(said)})" if said else "")


def classifier_encoder_said(models: Models) -> str:
    """", the fill-mask model at phase 7 of its 26 pretraining phases (18 of training, 8 weight averages; 45.5%
    of the held-out targets right by training's own check, 52.7% at its last phase)" for the shipped classifier
    beside the shipped MLM (the figures from its phases.json: one measure for both); "" for any other pair, whose
    link the files do not say."""
    shipped = all(models[key].available and Path(models[key].source).resolve() == KINDS[key].default.resolve()
                  for key in KINDS)
    phases = models.mlm.extras.get("phases") if shipped else None
    if not isinstance(phases, list) or len(phases) <= SHIPPED_CLASSIFIER_ENCODER_PHASE:
        return ""
    then, last = (_real(phases[i].held_out[1]) for i in (SHIPPED_CLASSIFIER_ENCODER_PHASE - 1, -1))
    figures = (f"{pct(then)} of the held-out targets right by training's own check, {pct(last)} at its last phase"
               if then is not None and last is not None else "")
    return f", the fill-mask model at phase {SHIPPED_CLASSIFIER_ENCODER_PHASE} of its {phases_counted(phases, figures)}"


ORDINALS = {2: "second", 3: "third", 4: "fourth", 5: "fifth"}
PIECED_WORDS_SHOWN = 2  # the words of a failed example said to come in pieces, at most


def words_in_pieces(tokenizer, text: str) -> list[tuple[str, list[str]]]:
    """The words of `text` (special tokens aside) the tokenizer cuts into several pieces, in order, each with its
    pieces as the Tokens tab shows them ("␣b", "arked"): [("barked", ["␣b", "arked"])]."""
    encoding = tokenizer.encode(text)
    special = set(tokenizer.get_added_tokens_decoder())  # <s>, </s>, <mask>, ...: never a word's piece
    pieces: dict[int, list[tuple[str, int, int]]] = {}
    for token, token_id, word, (start, end) in zip(encoding.tokens, encoding.ids, encoding.word_ids,
                                                     encoding.offsets):
        if word is not None and token_id not in special:
            pieces.setdefault(word, []).append((token, start, end))
    out = []
    for word in sorted(pieces):
        if len(pieces[word]) > 1:
            start, end = pieces[word][0][1], pieces[word][-1][2]
            out.append((text[start:end].strip(), [readable(token) for token, _, _ in pieces[word]]))
    return out


def words_in_pieces_said(tokenizer, text: str) -> str:
    """"; “barked” reaches it in 2 pieces (␣b + arked), a word its vocabulary has no token for": how the words of a
    failed example that the tokenizer cuts up reach the model; "" when every word is one token or the tokenizer
    cannot say."""
    try:
        words = words_in_pieces(tokenizer, text)[:PIECED_WORDS_SHOWN]
    except Exception:  # a note is not worth failing the start-up for
        log.exception("could not split the example into tokens")
        return ""
    if not words:
        return ""
    said = [f"“{md_escape(word)}” {'reaches it ' if i == 0 else ''}in {len(parts)} pieces "
            f"({' + '.join(md_escape(p) for p in parts)})" for i, (word, parts) in enumerate(words)]
    return f"; {' and '.join(said)}, {'a word' if len(words) == 1 else 'words'} its vocabulary has no token for"


def model_note(models: Models, key: str, failures: dict | None = None) -> str:
    """One or two plain sentences next to a tab's result: how big the model is, how it scores on held-out
    data (from its metrics.json) and which of the tab's own examples it gets wrong (`example_failures`)."""
    loaded = models[key]
    if not loaded.available:
        return ""
    facts, failures = model_facts(loaded), failures or {}
    size = f"{millions(facts['parameters'])} parameters" if "parameters" in facts else "a small model"
    if key == "mlm":
        trained = (f", pretrained from scratch on {large_count(facts['train_tokens'])} tokens"
                   + times_its_text(loaded, facts["train_tokens"]) if "train_tokens" in facts
                   else ", pretrained from scratch")
        split = pretraining_by_device(loaded)
        if split:  # a GPU's phases read most of the tokens in minutes: one total time would hide that
            cpu, gpu = split
            trained += (f": {minutes(cpu.seconds / 60)} on {cpu.named} for {large_count(cpu.tokens)} tokens, then "
                        f"{minutes(gpu.seconds / 60)} on {gpu.named} for {large_count(gpu.tokens)}")
        elif "train_minutes" in facts:
            trained += f" in {facts['train_minutes'] / 60:.1f} hours"
            trained += f" on a {facts['cores']}-core CPU" if facts.get("device") == "cpu" and "cores" in facts else ""
        score = ""
        if "mlm_accuracy" in facts:
            rows = f", in {facts['mlm_rows']}-token rows" if "mlm_rows" in facts else ""
            score = (f" It guesses {pct(facts['mlm_accuracy'])} of its prediction targets in held-out Wikipedia text "
                     f"right (top-1{rows}; {TARGETS_SAID}).")
        elif "eval_accuracy" in facts:
            score = (f" It guesses {pct(facts['eval_accuracy'])} of its prediction targets in held-out text right "
                     f"(top-1; {TARGETS_SAID}).")
        if "probe" in facts:
            n = int(facts["probe"]["sentences"])
            first, top5 = round(facts["probe"]["top1"] * n), round(facts["probe"]["top5"] * n)
            score += f" Of {n} everyday sentences, it puts the expected word first in {first} and in its top 5 in " \
                     f"{top5}."
        note = f"**About this model:** {size}, a small teaching model{trained}.{score} Expect many wrong answers"
        wrong = failures.get("mlm") or []
        if wrong:
            text, expected, top, rank = wrong[0]
            if rank:
                note += (f": for “{md_escape(text)}” its first answer is {md_escape(top[0])}, and "
                         f"{md_escape(expected)} comes {ORDINALS.get(rank, f'#{rank}')}")
            else:
                note += (f": for “{md_escape(text)}” {md_escape(expected)} is not in its top 5 "
                         f"({', '.join(md_escape(w) for w in top[:3])}…)")
            note += words_in_pieces_said(loaded.tokenizer, text)
        return note + "."
    # SST-2's training rows are mostly phrases cut from its sentences (the shipped model's 55,841: 5,886 whole
    # sentences), not sentences
    # a folder whose metrics.json names no data is taken for SST-2's only with SST-2's two labels
    sst2 = loaded.fine_tuned_on_sst2
    stages = facts.get("stages", [])
    then = "labelled IMDB reviews, then on " if "imdb" in stages else ""
    if "train_examples" not in facts:
        trained = f", fine-tuned on {then}SST-2" if sst2 else f", fine-tuned on {then}its task" if then else \
            ", fine-tuned"
    elif sst2:
        trained = (f", fine-tuned on {then}{facts['train_examples']:,} SST-2 training phrases (whole sentences and "
                   "parts of them)")
    else:
        trained = f", fine-tuned on {then}{facts['train_examples']:,} training examples"
    start = classifier_encoder_said(models)
    if "tapt" in stages:
        start += ", given more masked-LM training on review text (TAPT)"
    trained = (f":{start[1:]}, then{trained[1:]}" if start else trained) + (
        f"; the weight average of {facts['averaged']} seeds' runs" if facts.get("averaged") else "")
    scores = []
    if "dev_accuracy" in facts:
        if dev_is_sst2(facts):
            said = [f"{facts['dev_examples']:,}"] if "dev_examples" in facts else []
            said += [shipped] if (shipped := shipped_accuracy_said(loaded, facts)) else []
            scores.append(f"{pct(facts['dev_accuracy'])} of the SST-2 dev sentences"
                          + (f" ({', '.join(said)})" if said else ""))
        else:
            scores.append(f"{pct(facts['dev_accuracy'])} of the "
                          + (f"{facts['dev_examples']:,} " if "dev_examples" in facts else "") + "dev examples"
                          + (f" ({held_out_markdown(facts['dev_data'])})" if "dev_data" in facts else ""))
    if "imdb_accuracy" in facts:
        # after a labelled IMDB stage, "never trained on" read as a contradiction: these are its held-out test reviews
        held_out = "held-out test reviews" if "imdb" in stages else "out of domain"
        scores.append(f"{pct(facts.get('imdb_accuracy_whole', facts['imdb_accuracy']))} of "
                      + (f"{facts['imdb_examples']:,} " if "imdb_examples" in facts else "")
                      + (f"IMDB reviews ({held_out}, read whole)" if "imdb_accuracy_whole" in facts
                         else f"IMDB reviews (longer, {held_out})"))
    note = f"**About this model:** {size}, a small teaching model{trained}."
    if scores:
        note += f" It labels {' and '.join(scores)} right."
    checks = facts.get("checks")
    if checks:
        weak = sorted(((c.get("accuracy", 0), name, c) for name, c in checks["categories"].items()
                       if isinstance(c, dict)), key=lambda t: t[0])[:2]
        note += (f" Behaviour checks: {checks.get('right', 0)}/{int(checks['n'])} right; weakest: "
                 + ", ".join(f"{md_escape(str(name))} ({c.get('right', 0)}/{c.get('n', 0)})" for _, name, c in weak)
                 + ".")
    wrong = failures.get("sentiment") or []
    if wrong:
        note += " It gets " + ("this example" if len(wrong) == 1 else "these examples") + " wrong: " + "; ".join(
            f"“{md_escape(text)}” ({md_escape(label)}, {format_probability(p)})"
            for text, _, label, p in wrong) + "."
    return note
