"""Ship finished runs as the app's models: export them into assets/ and finish their model cards.

    python -m scripts.release --mlm runs/mini-roberta-mlm runs/mini-roberta-mlm-2 \\
        --classifier runs/mini-roberta-sst2 --baseline runs/random-sst2 --out assets

`--mlm` lists the pretraining phases in order (each a `train.pretrain` folder, the next one started with
`--init` from the one before); the last is shipped. A shipped folder carries the history of the phases
that made it (`phases.json`, each phase's metrics.json), so a later session continues from it with
`--mlm assets/mini-roberta-mlm runs/NEXT-PHASE` after the run folders of earlier sessions are gone.
`--classifier` is the `train.finetune` run shipped for sentiment, `--baseline` the same recipe from random
initialisation (`--init random`; its metrics ship beside the model as baseline.json, so a later release passes
`--baseline assets/mini-roberta-sst2/baseline.json` when its run folder is gone), `--summary` the
`train.summarize` outputs of the seeds' experiments that chose it (`[NAME=]PATH`: each one's table and figure
go into the card, and its JSON ships beside the model as NAME.json, so a later release can pass it again).

Each folder is copied with `train.export` (float16 weights by default), then a "Shipped model" section is
written at the end of its README.md (replacing the one a previous release wrote), with figures read from
the runs' metrics.json and answers computed by the exported model itself:
- the MLM card: one row per pretraining phase (command, time, steps, tokens, held-out MLM metrics), the
  fill-mask probe, the analogy probe, and the fill-mask predictions with probabilities on the app's examples;
- the classifier card: SST-2 dev and IMDB accuracy beside the random-initialisation baseline, and the
  predictions on the app's sentiment examples.
The MLM card's front matter gets the probe sentences the model answers right (top-1) as the Hub's fill-mask
widget examples. `--base-model` names the encoder the classifier was fine-tuned from: a Hub id (the card's
`base_model`) or an MLM folder, which is not on the Hub, so the card names it in its Base model section alone
(its phases, and which phase of the MLM shipped beside it it is). `--refresh-examples` rewrites only the cards'
tables of the app's examples in the folders of --out as they are (after `demo/examples.py` changed).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import re
from pathlib import Path

import roberta
from roberta.files import write_atomic
from demo.examples import ANALOGY_PROBE, FILL_MASK_EXAMPLES, SENTIMENT_EXAMPLES
from demo.formatting import format_probability
from roberta.run_metrics import (PHASES_NAME, RunMetrics, dataset_name, read_phase_history, said_list,
                                  same_text_file, write_phase_history)
from roberta.text import normalize_for_classifier
from train.export import DTYPES, check_export, export_into, partial_note, staged_folder, writes_named_in
from train.model_card import (NOT_ON_THE_HUB, average_hardware_text, base_model_text, card_for, machine_of,
                              with_base_model, with_front_matter)
from train.fill_mask_probe import DEFAULT_PROBE, FIGURES_DEVICE, read_probe, run_probe
from train.markdown import table_cell
from train import summarize
from train.runtime import (USER_ERRORS, UserError, check_writable_folder, exit_code, output_folder,
                           report_user_error)

MLM_NAME, CLASSIFIER_NAME = "mini-roberta-mlm", "mini-roberta-sst2"
SECTION = "## Shipped model"
BASELINE_FILE = "baseline.json"


def read_phases(run) -> list[RunMetrics]:
    """The pretraining phases that produced `run`: its phases.json (a shipped folder), else the run alone; each
    with the row length it trained on (runs from before rows could be shorter trained on full rows: the
    model's longest input)."""
    phases = read_phase_history(run) if (Path(run) / PHASES_NAME).is_file() else [RunMetrics.read_finished(run)]
    full_rows = roberta.load_config(run).max_length
    for phase in phases:
        phase.max_length = phase.max_length or full_rows
    return phases


def _identity(phase: RunMetrics) -> tuple:
    """What tells two phases apart: the command that trained them and how far it went."""
    return phase.command, phase.train_steps, phase.train_tokens


def _table(header: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def _wall_time_words(phases) -> str:
    """"N minutes wall time with data loading and evaluation" over the phases. A phase resumed before metrics.json
    summed every session's wall time recorded its last session only, less than its training time: its training
    time stands in, and the words say so."""
    short = [i for i, m in enumerate(phases, 1) if m.wall_time_s is not None and m.train_time_s is not None
             and m.wall_time_s < m.train_time_s]
    total = sum(max(m.wall_time_s or 0.0, m.train_time_s or 0.0) for m in phases)
    words = f"{_minutes(total)} minutes wall time with data loading and evaluation"
    if not short:
        return words
    which = f"phase {short[0]}" if len(short) == 1 else "phases " + ", ".join(map(str, short))
    return f"at least {words}: {which} recorded the wall time of the last session only, its training time stands in"


NOT_RECORDED = "not recorded"  # a figure a run's metrics.json lacks (a run from before it was recorded)


def _minutes(seconds: float | None) -> str:
    return NOT_RECORDED if seconds is None else f"{seconds / 60:.1f}"


def _count(number: int | None) -> str:
    return NOT_RECORDED if number is None else f"{number:,}"


def _machine(metrics: RunMetrics) -> str:
    return machine_of(metrics.hardware) or "?"


def _hardware(metrics: RunMetrics) -> str:
    hw = metrics.hardware or {}
    device = hw.get("device", "?")
    machine = f"{_machine(metrics)} ({device})" if hw.get("gpu") else f"{_machine(metrics)}, {device}"
    return (f"{machine}, {hw.get('torch_threads', '?')} torch threads, {hw.get('precision', '?')}, "
            f"torch {hw.get('torch', '?')}")


# said after `_machines` where the phases hold a weight average: its machine is the phase's before it, not the one
# that averaged (a CPU, for the shipped MLM's phase 28 after an H200's phase 27)
AVERAGES_COUNTED = "; a weight average, which trains nothing, is counted with the phase before it"


def _machines(phases: list[RunMetrics]) -> str:
    """Where the phases ran, in order: 'A (phases 1-3), B (phases 4-21), C (phase 22)'; one machine: the
    last trained phase's hardware in full. A weight average trains nothing, so it joins the machine before it (its
    own `hardware` is the machine that averaged)."""
    spans: list[list] = []  # [machine, first phase, last phase]
    for number, m in enumerate(phases, 1):
        machine = spans[-1][0] if m.is_average and spans else _machine(m)
        if spans and spans[-1][0] == machine:
            spans[-1][2] = number
        else:
            spans.append([machine, number, number])
    if len(spans) == 1:
        return _hardware(next((m for m in reversed(phases) if m.hardware and not m.is_average), phases[-1]))
    return ", ".join(f"{machine} (phase {a})" if a == b else f"{machine} (phases {a}-{b})" for machine, a, b in spans)


def _probe_cell(phase: RunMetrics) -> str:
    probe = phase.fill_mask_probe
    return f"{probe['top1']:.1%} / {probe['top5']:.1%}" if probe else ""


def _held_out_cells(phase: RunMetrics) -> list[str]:
    loss, accuracy, perplexity, masks = phase.held_out
    mark = f" ({masks} masks)" if masks > 1 else ""
    return [f"{loss:.3f}", f"{accuracy:.1%}{mark}", f"{perplexity:.1f}"]


def _held_out_text(phase: RunMetrics) -> str:
    """The file the phase's held-out figures were measured on: a later several-mask evaluation's where the
    figures are its (the original of a GPU upload's xz copy), else the run's own."""
    later = phase.mlm if isinstance(phase.mlm, dict) else {}
    return (later.get("source") if phase.held_out[3] > 1 else None) or phase.eval_data or "?"


def pretraining_section(phases: list[RunMetrics]) -> str:
    rows = [[i + 1, f"`{m.init or 'random'}`", m.max_length, _minutes(m.train_time_s),
             _count(m.train_steps), _count(m.train_tokens), *_held_out_cells(m), _probe_cell(m)]
            for i, m in enumerate(phases)]
    total_s = sum(m.train_time_s or 0.0 for m in phases)
    total_tokens = sum(m.train_tokens or 0 for m in phases)
    unrecorded = [str(i) for i, m in enumerate(phases, 1) if m.train_time_s is None]  # counted as none
    times = [_wall_time_words(phases)]
    if unrecorded:
        times.insert(0, f"phase{'s' * (len(unrecorded) > 1)} {said_list(unrecorded)} recorded no training time")
    commands = "\n".join(f"# phase {i + 1}\n{m.command}" for i, m in enumerate(phases))
    later = phases[-1].mlm  # a `train.evaluate --out RUN/metrics.json` evaluation after training
    if later and phases[-1].averaged:  # train.average: its row's figures are already the mean over masks
        per_mask = ", ".join(f"{a:.2%}" for a in later.get("accuracy_per_mask", [later["accuracy"]]))
        later = (f"The last row is the uniform average of the weights of {phases[-1].averaged} phases (`python -m "
                 f"train.average`, no training of its own): its held-out figures are the mean over "
                 f"{later.get('masks', 1)} fixed masks of all rows, measured on the float32 average as it was made "
                 f"(seeds from {later.get('seed', 0)}: accuracy {per_mask}; the folder's metrics.json holds those of "
                 "its float16 weights).")
    elif later:
        masks = later.get("masks", 1)
        command = (f"python -m train.evaluate --model RUN --mlm-text {later['source']} --max-length "
                   f"{later['max_length']}" + (f" --mlm-seeds {masks}" if masks > 1 else ""))
        over = f", the mean over {masks} fixed masks" if masks > 1 else ""
        later = (f"The shipped model on the same text packed into rows of {later['max_length']} tokens "
                 f"(`{command}`{over}): loss {later['loss']:.3f}, accuracy {later['accuracy']:.1%}, "
                 f"perplexity {later['perplexity']:.1f}.")
    full = max(m.max_length for m in phases)
    if phases[-1].max_length < full:
        later = (later or "") + (f" The last phase trained on rows of {phases[-1].max_length} tokens only, so "
                                 f"inputs longer than that are predicted worse than short ones.")
    return "\n\n".join([
        "### Pretraining phases",
        f"{len(phases)} phase(s), {'at least ' * bool(unrecorded)}{_minutes(total_s)} minutes of training "
        f"({'; '.join(times)}) and {total_tokens:,} tokens in all, on "
        f"{_machines(phases)}{AVERAGES_COUNTED * any(m.is_average for m in phases)}. Held-out figures: masked-LM "
        f"loss, accuracy and perplexity on "
        f"`{_held_out_text(phases[-1])}` at the end of each phase, all rows: the mean over several fixed masks "
        "where the phase was scored so (a weight average always, `train.evaluate --mlm-seeds N` after training), "
        "else the one fixed mask of the end-of-training evaluation.",
        _table(["phase", "started from", "row length", "train minutes", "steps", "tokens", "held-out loss",
                "accuracy", "perplexity", "probe top-1 / top-5"], rows),
        *([later.strip()] if later else []),
        f"```bash\n{commands}\n```",
    ])


def _fill_answer(prediction: dict) -> str:
    """One fill-mask prediction as the card lists it: the word, then its probability as the app shows it
    ("`France` 6.34%")."""
    word = prediction["token_str"].strip() or prediction["token_str"]
    return f"`{word}` {format_probability(prediction['score'])}"


def fill_mask_section(folder, shown=None) -> str:
    """The app's fill-mask examples answered by `folder`; the text names it as `shown` (default: the folder)."""
    fill = roberta.pipeline("fill-mask", model=folder, device=FIGURES_DEVICE)
    rows = []
    for text, top_k in FILL_MASK_EXAMPLES:
        result = fill(text, top_k=top_k)
        per_mask = result if result and isinstance(result[0], list) else [result]
        answers = " / ".join(", ".join(map(_fill_answer, preds)) for preds in per_mask)
        rows.append([table_cell(text), answers])
    return "\n\n".join([
        "### Fill-mask examples",
        "The app's examples, answered by this folder "
        f"(`roberta.pipeline(\"fill-mask\", model=\"{shown or folder}\")`): top "
        "predictions with their probabilities (several masks: one list per mask, separated by /).",
        _table(["text", "predictions"], rows),
    ])


def probe_section(folder) -> tuple[str, dict, list[str]]:
    """The fill-mask probe's scores (`train.fill_mask_probe`) for the card, the overall figures, and the sentences
    whose top prediction is the expected word as written (the card's widget examples: ones the model gets right)."""
    result = run_probe(roberta.pipeline("fill-mask", model=folder, device=FIGURES_DEVICE), read_probe(DEFAULT_PROBE))
    rows = [[name, c["sentences"], f"{c['top1']:.0%}", f"{c['top5']:.0%}"] for name, c in result["categories"].items()]
    rows.append(["**all**", result["sentences"], f"**{result['top1']:.1%}**", f"**{result['top5']:.1%}**"])
    text = "\n\n".join([
        "### Fill-mask probe",
        f"{result['sentences']} everyday sentences with one expected word (`tests/data/fill_mask_probe.tsv` in the "
        "project; `python -m train.fill_mask_probe --model FOLDER` prints every answer): how often the expected "
        "word is the top prediction, and among the top 5.",
        _table(["category", "sentences", "top-1", "top-5"], rows),
    ])
    right = [a["sentence"] for a in result["answers"] if a["predictions"][0][0] == a["expected"]]
    return text, {"top1": result["top1"], "top5": result["top5"], "sentences": result["sentences"]}, right


def analogy_section(folder) -> str:
    """How many of the analogy probe's questions the model's word embeddings answer (`scripts.analogy_probe`,
    as the app's Embeddings tab asks them), per category, for the card."""
    from demo.embedding_view import score_analogies  # here, not above: it imports Gradio (5 s) for the app's errors
    model = roberta.RobertaForMaskedLM.from_pretrained(folder)
    result = score_analogies(model.roberta.embeddings.word_embeddings.weight, roberta.load_tokenizer(folder),
                             ANALOGY_PROBE)
    rows = [[name, c["questions"], c["top1"], c["top5"]] for name, c in result["categories"].items()]
    rows.append(["**all**", result["questions"], f"**{result['top1']:.1%}**", f"**{result['top5']:.1%}**"])
    return "\n\n".join([
        "### Analogies from the word embeddings",
        f"{result['questions']} questions \"a is to b as c is to ?\" (`demo.examples.ANALOGY_PROBE` in the project; "
        "`python -m scripts.analogy_probe --model FOLDER`), answered from the input embeddings alone: the token "
        "nearest to b − a + c by cosine similarity, a, b and c excluded. How often the expected word comes first, "
        "and among the first 5.",
        _table(["category", "questions", "top-1", "top-5"], rows),
    ])


def comparison_section(classifier: RunMetrics, baseline: RunMetrics | None) -> str:
    """The classifier's figures beside the baseline's (the same fine-tuning from random weights). IMDB's columns
    and sentence only when a run scored it: one made with `--imdb ''` has none (its card read "nan%" and "a fixed
    sample of ? reviews of `?`"); the dev set is called SST-2's only when it is, and a slice held out of the training
    file (`train.finetune --dev-fraction`) is said as one."""
    runs = [("this model", classifier)] + ([("random initialisation", baseline)] if baseline else [])
    imdb = any(m.imdb_accuracy is not None for _, m in runs)
    dev = "SST-2 dev" if classifier.dev_is_sst2() else "Held-out dev" if classifier.held_out_dev else "Dev"

    def row(name, m: RunMetrics):
        scores = [f"{v:.1%}" if v is not None else "not scored" for v in (m.imdb_accuracy, m.imdb_accuracy_whole)]
        return [name, f"`{m.init or '?'}`", f"{m.dev_accuracy:.1%}", *(scores if imdb else []),
                _minutes(m.train_time_s), _count(m.train_steps)]

    rows = [row(name, m) for name, m in runs]
    commands = "\n".join(f"# {name}\n{m.command}" for name, m in runs)
    named = classifier.dev_set_named(lambda file: f"`{file}`", none="")
    if classifier.held_out_dev:
        said = f"{dev}: {named}, never trained on"
    else:
        said = f"{dev}: {named}" if named else f"{dev} set"
        said += f" ({classifier.dev_examples} sentences)" if classifier.dev_examples else ""
    if imdb:
        sample = f"{classifier.imdb_examples} reviews" if classifier.imdb_examples else "reviews"
        said += (f"; IMDB: a fixed sample of {sample}" + (f" of `{classifier.imdb_data}`" if classifier.imdb_data
                                                           else "") +
                 f", never trained on, scored on their first {classifier.max_length or 128} tokens and read whole "
                 "(overlapping windows, logits averaged, as `roberta.pipeline` reads a long text)")
    else:
        said += "; IMDB not scored (the fine-tuning skipped it: `--imdb ''`)"
    text = [
        "### What pretraining bought",
        f"Same fine-tuning recipe, encoder pretrained or random. {said}. "
        f"Hardware: {_classifier_hardware_text(classifier)}.",
        _table(["classifier", "encoder from", f"{dev} accuracy",
                *(["IMDB, first tokens", "IMDB, whole reviews"] if imdb else []), "train minutes", "steps"], rows),
    ]
    if classifier.is_average:  # train.average sums its members' training
        text.append(f"This model's train minutes and steps are those of the {classifier.averaged} runs it averages, "
                    "together (`train.average`: each run counted once).")
    text.append(f"```bash\n{commands}\n```")
    return "\n\n".join(text)


def _classifier_hardware_text(classifier: RunMetrics) -> str:
    """The classifier's hardware as the comparison names it: its run's, or for a weight average, its members' and
    the machine that averaged them (`average_hardware_text`: the average's own `hardware` trained nothing)."""
    return average_hardware_text(classifier) if classifier.is_average else _hardware(classifier)


def _prediction(best: dict) -> str:
    """A classifier's answer as the card's table shows it: the label, its probability as the app shows it, and the
    windows a long text was read in ("positive 87.8% (2 windows)")."""
    windows = f" ({best['windows']} windows)" if "windows" in best else ""
    return f"{best['label']} {format_probability(best['score'])}{windows}"


def sentiment_section(folder, shown=None) -> str:
    """The app's sentiment examples answered by `folder`; the text names it as `shown` (default: the folder)."""
    classify = roberta.pipeline("text-classification", model=folder, device=FIGURES_DEVICE)
    rows = [[table_cell(text), _prediction(classify(normalize_for_classifier(text))[0])] for text in SENTIMENT_EXAMPLES]
    return "\n\n".join(["### Sentiment examples",
                        f"The app's examples, answered by this folder as the app asks it (the text normalised "
                        f"by `roberta.text.normalize_for_classifier`, then "
                        f"`roberta.pipeline(\"text-classification\", model=\"{shown or folder}\")`; a text longer "
                        f"than the model's input is read in overlapping windows whose logits are averaged).",
                        _table(["text", "prediction"], rows)])


def parse_summary(spec: str) -> tuple[str, Path]:
    """`[NAME=]PATH` of a `train.summarize` JSON -> (NAME, PATH); NAME defaults to the file's stem. The
    summary ships as NAME.json (every run's figures) and NAME.png beside the model."""
    name, sep, path = spec.partition("=")
    path = Path(path if sep else spec)
    name = name if sep else path.stem
    if not name or not name.replace("-", "").replace("_", "").isalnum():
        raise ValueError(f"--summary {spec}: NAME must be letters, digits, - or _ (NAME=PATH)")
    return name, path


def experiment_section(summary_json, folder, name: str, summary: dict | None = None) -> str:
    """The seeds' experiment behind this classifier: `train.summarize`'s table and figure, rendered from its
    JSON (`summary`, else read from `summary_json`; so a summary shipped by an earlier release, whose run folders
    are gone, can be shipped again) and stored in the shipped folder as NAME.json and NAME.png."""
    summary_json = Path(summary_json)
    summary = summarize.read_summary(summary_json) if summary is None else summary
    write_atomic(Path(folder) / f"{name}.json", json.dumps(summary, indent=2) + "\n")
    summarize.plot_summary(summary, Path(folder) / f"{name}.png")
    return "\n\n".join([
        f"### How it was chosen ({name}): mean ± std over seeds",
        "Each run is its end-of-run weights: no checkpoint was chosen on dev, but the recipe was (these arms were "
        "compared on dev, the figure they are reported on; see the project's README). The seeds' weight average "
        f"is on its own row. From `{summary_json}` (`train.summarize`), shipped as `{name}.json`.",
        summarize.to_markdown(summary).strip(), f"![{summary_alt(summary)}]({name}.png)"])


def summary_alt(summary: dict) -> str:
    """The alt text of `train.summarize.plot_summary`'s figure of `summary`: which arms, on which measures (those
    some arm has), and how the seeds and weight averages are drawn."""
    def measure(title: str) -> str:  # "IMDB, whole\nreviews" -> "IMDB (whole reviews)"
        name, _, part = title.replace("\n", " ").partition(", ")
        return f"{name} ({part})" if part else name

    measured = [measure(title) for key, title in summarize.measure_titles(summary)
                if any((arm["stats"].get(key) or {}).get("mean") is not None for arm in summary.values())]
    arms = list(summary)
    which = f"the arm {arms[0]}" if len(arms) == 1 else f"{len(arms)} fine-tuning arms ({', '.join(arms)})"
    averaged = any(arm["averaged"] for arm in summary.values())
    return (f"Accuracy of {which} on {said_list(measured)}: per arm and measure, a bar (one hatch per arm) at the "
            "mean over the seeds with the standard deviation as an error bar and the mean written above it, each seed "
            "a mark (one shape per arm)"
            + (" and the seeds' weight average a diamond" if averaged else ""))


LEAD = "**Trained in "  # how the card's paragraph on a model of several phases starts (`phases_lead`)


def phases_lead(phases: list[RunMetrics]) -> str | None:
    """The card's paragraph under its title for a model of several phases: the sections that follow are written
    from the last phase's run (its data, command and metrics), which a reader took for the whole recipe."""
    if len(phases) < 2:
        return None
    averages = sum(1 for m in phases if m.averaged)
    kinds = f" ({len(phases) - averages} of training, {averages} weight averages of earlier ones)" if averages else ""
    lead = (f"{LEAD}{len(phases)} pretraining phases**{kinds}, {sum(m.train_tokens or 0 for m in phases):,} tokens in "
            "all, each continuing from the one before (every phase, its command and its held-out figures: "
            "[Shipped model](#shipped-model)). Data, Training recipe, Metrics and Notes below describe the last "
            f"phase, phase {len(phases)}, alone.")
    last = phases[-1]  # a weight average's corpus is its last member's, which its Metrics table shows
    if "gpu-upload/" in (last.command or "") or "gpu-upload/" in (last.corpus or ""):
        cut = "".join(f", except `{name}`, cut to its first {have / 1e6:.1f}M of {whole / 1e6:.1f}M characters "
                      "(`bundle --head`)" for name, have, whole in heads_sent(phases))
        lead += (" Its paths `gpu-upload/data/...` are the files `python -m train.gpu_transfer bundle` sent to the GPU "
                 f"machine, xz-compressed: copies of `../shared/data/...`{cut}.")
    return lead


def heads_sent(phases: list[RunMetrics]) -> list[tuple[str, int, int]]:
    """The last phase's corpus files of which it read less than the whole (`bundle --head` sends the first lines of
    a file that would not fit the upload): [(name, characters it had, the file's characters)], the whole file's size
    being the largest any phase had of it (a phase on the CPU machine, or an earlier upload of all of it). A file no
    phase read whole is not known to be cut."""
    out = []
    for source in phases[-1].corpus_sources or []:
        path, have = source.get("source"), source.get("available_chars")
        if not path or not have:
            continue
        whole = max((s.get("available_chars") or 0 for phase in phases for s in phase.corpus_sources or []
                     if same_text_file(s.get("source"), path)), default=0)
        if whole > have:
            out.append((dataset_name(path).removesuffix(".xz"), int(have), int(whole)))
    return out


def with_lead(card: str, lead: str | None) -> str:
    """`card` with `lead` as the paragraph before its first section (an earlier release's lead removed)."""
    start = card.find(f"\n\n{LEAD}")
    if start >= 0:
        end = card.find("\n\n", start + 2)
        card = card[:start] + (card[end:] if end >= 0 else "\n")
    if lead and "\n## " in card:
        at = card.index("\n## ")
        card = card[:at].rstrip("\n") + f"\n\n{lead}\n" + card[at:]
    return card


def write_section(folder, body: str, shown=None, lead: str | None = None, widget: list[str] | None = None,
                  base: tuple[str | None, str] | None = None) -> Path:
    """Replace (or add) the card's final "Shipped model" section; the usage names `shown` (default: `folder`).
    `lead`: a paragraph under the card's title (one written by an earlier release is replaced). `widget`: the
    front matter's fill-mask widget texts. `base`: (Hub id or None, text) of the model it was fine-tuned from
    (`with_base_model`; None: the card's own, if any, stays)."""
    card = Path(folder) / "README.md"
    text = card_for(folder, str(shown or folder)) if card.is_file() else ""  # its usage names the shipped folder
    if SECTION in text:
        text = text[:text.index(SECTION)]
    if widget is not None:
        text = with_front_matter(text, widget=[{"text": sentence} for sentence in widget] or None)
    if base:
        text = with_base_model(text, *base)
    text = with_lead(text, lead)
    write_atomic(card, text.rstrip("\n") + f"\n\n{SECTION}\n\n{body.strip()}\n")
    return card


def base_encoder_text(history: list[RunMetrics], alongside: list[RunMetrics], classifier: RunMetrics) -> str:
    """The Base model section of a classifier whose encoder is an MLM folder of `history` (its phases), not on the
    Hub: what it was (phases, tokens, held-out figures), which phase of the MLM shipped beside it (`alongside`, its
    phases) it is when its history begins that one's, and where fine-tuning started (metrics.json's `init_root`)."""
    n, tokens = len(history), sum(phase.train_tokens or 0 for phase in history)
    _, accuracy, _, masks = history[-1].held_out
    over = f", the mean over {masks} fixed masks" if masks > 1 else ""
    text = (f"Fine-tuned from this project's masked LM as it stood after {n} pretraining phase{'s' * (n > 1)} "
            f"({tokens:,} tokens; held-out MLM accuracy {accuracy:.1%} on `{_held_out_text(history[-1])}`{over})")
    if alongside and [_identity(p) for p in alongside[:n]] == [_identity(p) for p in history]:
        text += (f": `{MLM_NAME}`, shipped beside this model" if n == len(alongside) else
                 f": phase {n} of the {len(alongside)} phases of `{MLM_NAME}`, shipped beside this model (its card "
                 "lists every phase), not the weights that folder holds now")
    text += f". {NOT_ON_THE_HUB}"  # train.push --base-model finds this sentence and links the Hub id there
    start = classifier.init_root or classifier.init
    if isinstance(start, str) and not start.startswith("random"):
        tapt = (", `train.sentiment_recipe`'s task-adaptive pretraining of that encoder on review text"
                if Path(start).parts[-2:] == ("tapt", "mlm") else "")
        text += f" Fine-tuning started from `{start}` (`init_root` in metrics.json{tapt})."
    return text


def refresh_base_model(classifier_folder: Path, phases: list[RunMetrics]) -> bool:
    """After a release of the MLM alone: the classifier card beside it says "phase N of the M phases of
    `mini-roberta-mlm`", and M has grown (an MLM release left it at 26 of 28). Its Base model section is written
    anew from the MLM's new history (`base_encoder_text`), when that history begins with the N phases the card
    names; True when the card was rewritten."""
    card = Path(classifier_folder) / "README.md"
    text = card.read_text(encoding="utf-8") if card.is_file() else ""
    said = re.search(rf"phase (\d+) of the (\d+) phases of `{MLM_NAME}`", text)
    if not said or int(said.group(2)) == len(phases) or int(said.group(1)) >= len(phases):
        return False
    n = int(said.group(1))
    updated = text.replace(said.group(0), f"phase {n} of the {len(phases)} phases of `{MLM_NAME}`")
    fresh = base_encoder_text(phases[:n], phases, RunMetrics.read(classifier_folder))
    if updated != with_base_model(text, None, fresh):
        return False  # more than the count differs: the card's encoder is not the first N phases of this history
    write_atomic(card, updated)
    return True


def base_model_of(base_model: str | None, classifier, alongside: list[RunMetrics]) -> tuple[str | None, str] | None:
    """--base-model as the classifier card names it: (Hub id, text) for a Hub id, (None, text) for an MLM folder
    (whose architecture must be the classifier's); None without one. Read before anything is written."""
    if not base_model:
        return None
    metrics = RunMetrics.read_finished(classifier, classifier=True, option="--classifier")
    if not Path(base_model).is_dir():
        from train.push import PushError, check_base_model

        try:
            return check_base_model(base_model), base_model_text(base_model, metrics)
        except PushError as err:
            raise ValueError(f"{err} (or an MLM folder: no such folder {base_model})") from None
    roberta.loading.require_architecture(base_model, "RobertaForMaskedLM", "--base-model takes a masked-LM folder "
                                         "(the encoder the classifier was fine-tuned from) or a Hub id", "--base-model")
    shape = ("num_hidden_layers", "hidden_size", "num_attention_heads", "intermediate_size", "vocab_size")
    encoder, ours = roberta.load_config(base_model), roberta.load_config(classifier)
    if differ := [f"{k} {getattr(encoder, k)} (the classifier's: {getattr(ours, k)})" for k in shape
                  if getattr(encoder, k) != getattr(ours, k)]:
        raise ValueError(f"--base-model {base_model} is not the classifier's encoder: {', '.join(differ)}")
    return None, base_encoder_text(read_phases(base_model), alongside, metrics)


def shipped_history(folder: Path) -> list[RunMetrics]:
    """The phases of the MLM shipped in `folder`, [] when it has no history."""
    return read_phases(folder) if (folder / PHASES_NAME).is_file() else []


def release(mlm_phases: list, classifier=None, baseline=None, out="assets", dtype="float16",
            summaries: list[tuple[str, Path]] = (), base_model: str | None = None) -> list[Path]:
    for option, runs in (("--mlm", mlm_phases), ("--classifier", [classifier] if classifier else [])):
        for run in runs:  # a file was read as a metrics file: "not a metrics file: Expecting value ..."
            if Path(run).is_file():
                raise NotADirectoryError(f"{option} {run} is a file, not a model folder (give a training run's "
                                         "folder, or a shipped one)")
            if note := partial_note(run):  # any phase, not only the last (the last is also check_export's)
                raise ValueError(f"{option} {run} is a partial model, not one to ship: {note}")
    histories = [read_phases(run) for run in mlm_phases]
    phases = [phase for history in histories for phase in history]
    check_writable_folder(output_folder(out), "--out")  # the folders are built in it, beside their destinations
    for i, run in enumerate(mlm_phases):  # every input is checked before anything is written
        roberta.loading.require_architecture(run, "RobertaForMaskedLM", "--mlm takes masked-LM runs (train.pretrain)",
                                             "--mlm")
        if i and histories[i][-1].init in (None, "random"):  # was shipped as "phase 2, started from random"
            raise ValueError(f"--mlm {run} was trained from random weights, not from {mlm_phases[i - 1]}: give "
                             "the phases of one model, each continuing the one before")
        earlier = [_identity(p) for history in histories[:i] for p in history]
        if i and _identity(histories[i][-1]) in earlier:  # the same release run twice: the phase counted twice
            raise ValueError(f"--mlm {run} is already in the history of {mlm_phases[i - 1]} (phase "
                             f"{earlier.index(_identity(histories[i][-1])) + 1}): it was released before")
    metrics = RunMetrics.read_finished(classifier, classifier=True, option="--classifier") if classifier else None
    baseline_metrics = RunMetrics.read_finished(baseline, classifier=True, option="--baseline") if baseline else None
    root = baseline_metrics and (baseline_metrics.init_root or baseline_metrics.init or "")
    if baseline_metrics and not root.startswith("random"):  # the card would call a pretrained encoder random
        raise ValueError(f"--baseline {baseline}: its encoder came from {root or 'an unrecorded start'}, not from "
                         "random initialisation (train.finetune --init random, and the stages after it)")
    summaries = [(name, path, summarize.read_summary(path)) for name, path in summaries]
    base = base_model_of(base_model, classifier, phases or shipped_history(Path(out) / MLM_NAME))
    # each shipped folder is built beside its destination and swapped in whole (train.export.staged_folder), so a
    # release stopped half-way leaves each folder as it was or complete: never a new export without its
    # phases.json, from which a re-run would write a wrong history
    mlm_dst = check_export(mlm_phases[-1], Path(out) / MLM_NAME) if mlm_phases else None  # both before either
    clf_dst = check_export(classifier, Path(out) / CLASSIFIER_NAME) if classifier else None  # is written
    written = []
    # both folders are built before either is swapped in: a pair, or none; and a refusal leaves no --out it made
    with removed_if_left_empty(Path(out)), contextlib.ExitStack() as swaps:
        if mlm_phases:
            dst = mlm_dst
            with writes_named_in(dst):
                folder = swaps.enter_context(staged_folder(dst))
                export_into(mlm_phases[-1], folder, dtype, final=dst)
                probe_text, phases[-1].fill_mask_probe, right = probe_section(folder)
                write_phase_history(folder, phases)
                write_section(folder, "\n\n".join([pretraining_section(phases), probe_text, analogy_section(folder),
                                                   fill_mask_section(folder, dst)]), dst, phases_lead(phases), right)
            written.append(dst)
        if classifier:
            dst = clf_dst
            with writes_named_in(dst):
                folder = swaps.enter_context(staged_folder(dst))
                export_into(classifier, folder, dtype, final=dst)
                if baseline_metrics:  # kept across releases (the export leaves it): a later one passes it back
                    baseline_metrics.write(folder / BASELINE_FILE)
                body = comparison_section(metrics, baseline_metrics)
                for name, path, summary in summaries:
                    body += "\n\n" + experiment_section(path, folder, name, summary)
                write_section(folder, body + "\n\n" + sentiment_section(folder, dst), dst, base=base)
            written.append(dst)
    # the classifier card beside a new MLM counts the MLM's phases ("phase 7 of the 28"): once the MLM is in place
    if mlm_phases and not classifier and refresh_base_model(Path(out) / CLASSIFIER_NAME, phases):
        written.append(Path(out) / CLASSIFIER_NAME / "README.md")
    return written


@contextlib.contextmanager
def removed_if_left_empty(out: Path):
    """The folder `out`, and the folders above it, that do not exist yet: removed again if the block fails and
    leaves them empty (a refused release left an empty --out behind)."""
    made = [folder for folder in [out, *out.parents] if not folder.exists()]  # deepest first
    try:
        yield
    except BaseException:
        for folder in made:
            with contextlib.suppress(OSError):  # not empty (or already gone): kept
                folder.rmdir()
        raise


EXAMPLE_SECTIONS = ((MLM_NAME, fill_mask_section), (CLASSIFIER_NAME, sentiment_section))


def refresh_examples(out) -> list[Path]:
    """The shipped cards' tables of the app's examples written anew from the folders in `out` as they are (after
    `demo/examples.py` changed): each card's "### ... examples" section replaced, the rest of the card, the
    weights and every other file untouched; the folders whose card was rewritten. A release cannot do this alone:
    it refuses to export a folder onto itself, and re-releasing the classifier needs every run it came from."""
    written = []
    for name, section in EXAMPLE_SECTIONS:
        folder = Path(out) / name
        card = folder / "README.md"
        if not card.is_file():
            continue
        fresh = section(folder, str(folder))
        heading = fresh.split("\n", 1)[0]
        text = card.read_text(encoding="utf-8")
        if heading not in text:
            raise UserError(f"{card}: no {heading!r} section to refresh (a card a release wrote has one)")
        head, rest = text.split(heading, 1)
        after = rest.find("\n#")  # the next heading, if the section is not the card's last
        write_atomic(card, head + fresh + ("\n" + rest[after:] if after >= 0 else "\n"))
        written.append(folder)
    if not written:
        raise UserError(f"--out {out}: no {MLM_NAME}/README.md or {CLASSIFIER_NAME}/README.md to refresh there")
    return written


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m scripts.release", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mlm", nargs="+", default=[], metavar="RUN",
                   help="the pretraining phases' run folders, in order; the last is shipped")
    p.add_argument("--classifier", help="the fine-tuned run folder shipped for sentiment")
    p.add_argument("--baseline", help="the same fine-tuning from random initialisation, for comparison: its run "
                                      "folder, or the baseline.json an earlier release shipped beside the classifier")
    p.add_argument("--summary", nargs="+", default=[], metavar="[NAME=]PATH",
                   help="summary.json files of the seeds' experiments (train.summarize, train.sentiment_recipe) "
                        "that chose --classifier: each one's table and figure go into the card, and it ships as "
                        "NAME.json + NAME.png (NAME: the file's stem unless given)")
    p.add_argument("--base-model", metavar="USER/NAME|FOLDER",
                   help="the encoder --classifier was fine-tuned from, for its card: a Hub id (its base_model) or "
                        "the MLM folder (not on the Hub: named in the card's text alone)")
    p.add_argument("--out", default="assets", help="where the model folders go (default: %(default)s)")
    p.add_argument("--dtype", choices=sorted(DTYPES), default="float16",
                   help="stored weight dtype (default: %(default)s)")
    p.add_argument("--refresh-examples", action="store_true",
                   help="only rewrite the cards' tables of the app's examples from the folders in --out as they are "
                        "(after demo/examples.py changed); nothing else is written")
    args = p.parse_args(argv)
    if args.refresh_examples:
        if args.mlm or args.classifier or args.baseline or args.summary or args.base_model:
            p.error("--refresh-examples rewrites the cards in --out as they are: it takes --out alone")
        try:
            refreshed = refresh_examples(args.out)
        except USER_ERRORS as err:
            return report_user_error(err)
        for folder in refreshed:
            print(f"refreshed the example tables of {folder / 'README.md'}")
        return 0
    if not args.mlm and not args.classifier:
        p.error("nothing to release: give --mlm and/or --classifier")
    if (args.baseline or args.summary or args.base_model) and not args.classifier:
        p.error("--baseline, --summary and --base-model need --classifier")
    try:
        summaries = [parse_summary(spec) for spec in args.summary]
    except ValueError as err:
        p.error(str(err))
    if len({name for name, _ in summaries}) < len(summaries):
        p.error("--summary: two summaries with the same NAME (give NAME=PATH)")
    try:
        written = release(args.mlm, args.classifier, args.baseline, args.out, args.dtype, summaries,
                          args.base_model)
    except (*USER_ERRORS, KeyError) as err:
        return report_user_error(err)
    for folder in written:
        print(f"wrote {folder} (model card: {folder / 'README.md'})")
    return 0


if __name__ == "__main__":
    raise SystemExit(exit_code(main))
