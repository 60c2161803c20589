"""Temperature scaling of a classifier (Guo et al. 2017), and how well its confidence matches its accuracy.

    python -m train.calibrate runs/sst2                     # refit on the run's own held-out calibration slice
    python -m train.calibrate runs/avg --calibration-data ../shared/data/sst2/train.tsv --calibration-n 1000
    python -m train.calibrate assets/mini-roberta-sst2 --plot-only   # redraw reliability.png, refit nothing

One number, the temperature T, is fitted on held-out labelled data that is NOT the dev set (by default the
slice of the training file that `train.finetune --calibration-n` set aside and never trained on with its labels;
`train.tapt_corpus` puts the text of its longer sentences, unlabelled, in the task-adaptive masked-LM corpus): T
minimises the negative log-likelihood of softmax(logits / T) (L-BFGS on log T). Dividing by T never changes
which label wins, so accuracy is untouched; only the probabilities move (T > 1 softens an over-confident
model). A classifier whose scores are no softmax over its labels (config.problem_type multi-label or regression, or a
single output) is refused. T is stored in the model's config.json as `calibration_temperature`; `roberta.pipeline`
(and so the app) applies it. A `transformers` user applies it by hand:

    logits = model(**inputs).logits
    probs = (logits / model.config.calibration_temperature).softmax(-1)

Reported on the dev set, before and after: expected calibration error (ECE, 15 equal-width confidence bins:
the mean over examples of |accuracy - confidence| of their bin) and a reliability diagram (reliability.png).

The calibration slice. `--calibration-split sentences` (default) holds out whole sentences: it picks N texts
that are not a word-for-word part of another text of the file (SST-2 train holds ~6,900 full sentences and
60,000 of their sub-phrases) and also removes from training every text that is part of a picked one; so the
slice looks like SST-2 dev (full, unseen sentences), not like a phrase whose own sentence was trained on,
which the model would get right with high confidence and so fit too low a temperature. On files without
sub-phrases (IMDB reviews) it is a plain random sample. `random` samples N rows. The slice depends only on
the file, N, the mode and `--calibration-seed` (default 0, the same for every training seed, so that runs of
several seeds, and their weight average, share one slice none of them trained on).

Without --calibration-data the slice is the one metrics.json records (fine-tuning's own, or the run's for a step
checkpoint exported by `train.export`); --calibration-n, --calibration-seed, --calibration-split and --all
describe a slice of --calibration-data and are refused without it. The card says the examples were held out from
fine-tuning only when they are fine-tuning's own slice: another slice (another seed or size, another file, --all)
may hold rows the model trained on, and its card says so. Without --dev the dev set is the one metrics.json records:
its dev file, or the slice `train.finetune --dev-fraction` held out of the training file (dev_slice, drawn again).
A recorded slice is drawn again only from a file whose rows are the ones it recorded (their count and digest): from a
changed file it would hold other rows, some of them trained on, and it is refused.

When this command runs on a finished folder, it rewrites config.json's calibration_temperature, merges the
figures into metrics.json ("calibration"), redraws reliability.png, scores the behaviour checks again (their
verdicts use the calibrated probabilities) and rewrites the model card's Metrics, Calibration and Behaviour
checks sections and its model-index; the rest of the card is kept. With `--plot-only` it fits nothing and writes
only reliability.png, drawn with the temperature config.json holds (a shipped model's figure redrawn by
today's code, its weights, config, metrics and card byte for byte as they were). Its ECE is measured again on
the folder's weights and this CPU: weights exported to float16 after calibration, or another CPU's arithmetic,
can move it from metrics.json's (it prints both).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import tempfile
from pathlib import Path

import torch
import torch.nn.functional as F

from roberta.figure_alts import reliability_alt
from roberta.files import write_atomic
from roberta.hub import CONFIG_NAME
from roberta.pipelines import score_kind, score_rule
from roberta.run_metrics import METRICS_NAME, RunMetrics, dataset_name, dataset_said
from roberta.text import normalize_for_classifier

from .arguments import seed_value
from .reporting import save_figure
from .exit_codes import with_how_to_go_on
from .runtime import EXIT_OK, exit_code, report_user_error

N_BINS = 15
T_MIN, T_MAX = 0.05, 20.0  # fitted temperatures are clipped here (all-correct data would drive T to 0)
MAX_SPAN_WORDS = 80  # texts longer than this are not searched for sub-phrases (reviews have none)
RELIABILITY_NAME = "reliability.png"


# ----------------------------------------------------------------------------------------------------------
# Calibration error and temperature
# ----------------------------------------------------------------------------------------------------------
def probabilities(logits: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """softmax(logits / T), float32: a single-label classifier's scores, as `roberta.pipelines.scores_of` gives them
    (the only kind calibrated here: `require_softmax`)."""
    return (logits.float() / temperature).softmax(-1)


NOT_SOFTMAX_SAID = {  # a classifier whose scores are no softmax, as errors name it: by the rule that decided
    # (`roberta.pipelines.score_rule`; each rule whose `score_kind` is not "softmax")
    "regression": "a regression model (config.problem_type 'regression': raw outputs)",
    "multi_label_classification": "a multi-label classifier (config.problem_type 'multi_label_classification': a "
                                  "sigmoid per label)",
    "one_output": "a one-output classifier (num_labels 1: a sigmoid of its logit)",
}


def require_softmax(config, model_id, needs: str) -> None:
    """A ValueError, "`model_id` is ...; `needs` a single-label classifier", for a classifier whose scores are no
    softmax over its labels (`roberta.pipelines.score_kind`: a multi-label model's sigmoid per label, a one-output
    model's sigmoid, a regression's raw outputs). Temperature scaling, the ECE, the log-loss and the checks' verdicts
    are measured here on that softmax, against one label per text: such a model was scored on probabilities its
    pipeline (and the app) never shows. Called before any data is read."""
    if score_kind(config) != "softmax":
        raise ValueError(f"{model_id} is {NOT_SOFTMAX_SAID[score_rule(config)]}; {needs} a single-label classifier "
                         "(a softmax over its labels)")


def reliability_bins(probs: torch.Tensor, labels, n_bins: int = N_BINS) -> list[dict]:
    """Per equal-width confidence bin ((0, 1/n], ..., ((n-1)/n, 1]): {"lower", "upper", "n", "confidence"
    (mean top probability), "accuracy"}; empty bins have n 0 and None for the means."""
    probs, labels = torch.as_tensor(probs, dtype=torch.float32), torch.as_tensor(labels)
    if probs.ndim != 2 or len(probs) != len(labels) or not len(labels):
        raise ValueError(f"need probabilities (N, L) and N labels, N >= 1: got {tuple(probs.shape)} and {len(labels)}")
    confidence, predicted = probs.max(-1)
    correct = (predicted == labels).float()
    index = (confidence * n_bins).ceil().long().clamp(1, n_bins) - 1
    bins = []
    for b in range(n_bins):
        inside = index == b
        n = int(inside.sum())
        bins.append({"lower": b / n_bins, "upper": (b + 1) / n_bins, "n": n,
                     "confidence": confidence[inside].mean().item() if n else None,
                     "accuracy": correct[inside].mean().item() if n else None})
    return bins


def expected_calibration_error(probs: torch.Tensor, labels, n_bins: int = N_BINS) -> float:
    """ECE: sum over bins of (share of examples in the bin) x |accuracy - mean confidence| (0 = calibrated)."""
    bins = reliability_bins(probs, labels, n_bins)
    total = sum(b["n"] for b in bins)
    return sum(b["n"] / total * abs(b["accuracy"] - b["confidence"]) for b in bins if b["n"])


def nll(logits: torch.Tensor, labels, temperature: float = 1.0) -> float:
    """Mean negative log-likelihood of the labels under softmax(logits / T)."""
    return F.cross_entropy(logits.float() / temperature, torch.as_tensor(labels)).item()


def fit_temperature(logits: torch.Tensor, labels, max_iter: int = 100) -> float:
    """The T minimising the NLL of softmax(logits / T) on (logits, labels): L-BFGS on log T from T = 1.

    The NLL is convex in 1/T, so the optimum is unique. T is clipped to [T_MIN, T_MAX]: when every example
    is right the NLL keeps falling as T -> 0 (L-BFGS stops once the gradient vanishes; such a T means the
    calibration data is too easy or too small). Fitted in float64: a model near chance level has logits a few
    thousandths apart, its NLL within float32's rounding of log 2 whatever T, and in float32 the line search found
    no step and left T at exactly 1 (its members, a little less flat, reached the bound 20)."""
    logits, labels = logits.detach().double(), torch.as_tensor(labels)
    if logits.ndim != 2 or logits.shape[-1] < 2 or len(logits) != len(labels) or not len(labels):
        raise ValueError(f"need logits (N, L >= 2) and N labels, N >= 1: got {tuple(logits.shape)}, {len(labels)}")
    log_t = torch.zeros((), dtype=torch.float64, requires_grad=True)
    optimizer = torch.optim.LBFGS([log_t], lr=1.0, max_iter=max_iter, line_search_fn="strong_wolfe")

    def closure():
        optimizer.zero_grad()
        loss = F.cross_entropy(logits / log_t.exp(), labels)
        loss.backward()
        return loss

    optimizer.step(closure)
    value = log_t.detach().exp().item()
    return float(min(max(value, T_MIN), T_MAX)) if math.isfinite(value) else 1.0


def calibration_report(logits: torch.Tensor, labels, temperature: float, n_bins: int = N_BINS) -> dict:
    """ECE, NLL and mean confidence of (logits, labels) at T = 1 and at `temperature`, with the bins."""
    raw, scaled = probabilities(logits), probabilities(logits, temperature)
    return {"n": len(labels), "accuracy": (raw.argmax(-1) == torch.as_tensor(labels)).float().mean().item(),
            "ece_before": expected_calibration_error(raw, labels, n_bins),
            "ece_after": expected_calibration_error(scaled, labels, n_bins),
            "nll_before": nll(logits, labels), "nll_after": nll(logits, labels, temperature),
            "mean_confidence_before": raw.max(-1).values.mean().item(),
            "mean_confidence_after": scaled.max(-1).values.mean().item(), "bins": n_bins}


# The reliability diagram's colours. Each gap between a bin's accuracy and its confidence is a bar of its own, opaque:
# drawn as one translucent orange, an under-confident bin's gap (inside its accuracy bar) came out a mauve that the
# legend did not show. Over-confident: the confidence above the accuracy bar, orange; under-confident: the part of the
# accuracy bar above the confidence, light blue and hatched, told apart from the orange in grey too.
ACCURACY_COLOUR, OVER_COLOUR, UNDER_COLOUR = "#4c72b0", "#f0c8b1", "#aec7e8"
GAP_LABELS = {"over": "over-confident: confidence above accuracy",
              "under": "under-confident: accuracy above confidence"}


def _gap_bars(ax, full: list[dict], width: float) -> None:
    """The gap between each bin's accuracy and confidence, as a bar outlined in black: the edge shows where each
    gap ends at 3:1 (WCAG 1.4.11) against the white above a bar and against the accuracy bar an under-confident
    bin's gap lies on (21:1 and 4.3:1). Only the kinds the panel has: an empty bar set has no colour to show."""
    over = [b for b in full if b["confidence"] >= b["accuracy"]]
    under = [b for b in full if b["confidence"] < b["accuracy"]]
    if over:
        ax.bar([b["lower"] for b in over], [b["confidence"] - b["accuracy"] for b in over], width=width,
               bottom=[b["accuracy"] for b in over], align="edge", color=OVER_COLOUR, edgecolor="black",
               label=GAP_LABELS["over"])
    if under:
        ax.bar([b["lower"] for b in under], [b["accuracy"] - b["confidence"] for b in under], width=width,
               bottom=[b["confidence"] for b in under], align="edge", color=UNDER_COLOUR, edgecolor="black",
               hatch="//", label=GAP_LABELS["under"])


def plot_reliability(logits: torch.Tensor, labels, temperature: float, path, title: str = "",
                     n_bins: int = N_BINS) -> Path:
    """Reliability diagrams before and after temperature scaling, side by side (accuracy per confidence bin
    against the diagonal of perfect calibration; the bars' labels are the examples in each bin). One legend for
    both, under them: in a panel's corner it covered a bin's bar, and it names every colour the panels draw."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import PercentFormatter

    fig, axes = plt.subplots(1, 2, figsize=(10, 5.0), sharey=True, layout="constrained")
    for ax, (name, t) in zip(axes, [("before: T = 1", 1.0), (f"after: T = {temperature:.3g}", temperature)]):
        probs = probabilities(logits, t)
        bins = reliability_bins(probs, labels, n_bins)
        ece = expected_calibration_error(probs, labels, n_bins)
        width = 1 / n_bins
        full = [b for b in bins if b["n"]]
        ax.bar([b["lower"] for b in full], [b["accuracy"] for b in full], width=width, align="edge",
               color=ACCURACY_COLOUR, edgecolor="white", label="accuracy")
        _gap_bars(ax, full, width)
        for b in full:
            ax.text(b["lower"] + width / 2, 0.02, str(b["n"]), ha="center", va="bottom", fontsize=7, rotation=90,
                    color="white")
        ax.plot([0, 1], [0, 1], "k--", lw=1, label="perfect calibration")
        low = 1 / probs.shape[-1] if probs.shape[-1] > 1 else 0.5  # the top probability is never below 1/L
        ax.set(xlim=(math.floor(low * n_bins) / n_bins, 1), ylim=(0, 1), xlabel="confidence (top probability)",
               title=f"{name}  (ECE {ece:.1%})")
        for axis in (ax.xaxis, ax.yaxis):  # in % as the app, the card and the panel's ECE show them
            axis.set_major_formatter(PercentFormatter(1.0))
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("accuracy")
    named = {}  # label -> handle, over both panels: a gap kind one panel lacks is still named once
    for ax in axes:
        named.update(zip(*reversed(ax.get_legend_handles_labels())))
    order = ["accuracy", GAP_LABELS["over"], "perfect calibration", GAP_LABELS["under"]]  # in two columns
    shown = sorted(named, key=order.index)
    fig.legend([named[label] for label in shown], shown, loc="outside lower center", ncols=2, fontsize=9,
               frameon=False)
    if title:
        fig.suptitle(title, fontsize=10)
    return save_figure(fig, path)


# ----------------------------------------------------------------------------------------------------------
# The held-out slice
# ----------------------------------------------------------------------------------------------------------
def _spans(words: list[str]):
    """Every contiguous word span of `words`, joined by spaces (the text itself included)."""
    n = len(words)
    for start in range(n):
        for end in range(start + 1, n + 1):
            yield " ".join(words[start:end])


def _first_rows(texts: list[str]) -> dict[str, int]:
    """Each distinct text (stripped) and the first row that holds it."""
    first: dict[str, int] = {}
    for i, text in enumerate(texts):
        first.setdefault(text.strip(), i)
    return first


def _sub_phrases(texts: dict[str, int]) -> set[str]:
    """The texts (`_first_rows`' keys) that are a proper word span of another of them: SST-2's phrases of its
    sentences. Texts longer than MAX_SPAN_WORDS words are not searched for spans."""
    inside = set()
    for text in texts:
        words = text.split()
        if len(words) <= MAX_SPAN_WORDS:
            inside.update(s for s in _spans(words) if s != text and s in texts)
    return inside


def whole_sentence_rows(texts: list[str]) -> int:
    """How many rows of `texts` are whole sentences, no other row's sub-phrase (a proper word span of it): what
    "sentences" mode draws from, and what `train.finetune --dev-fraction` takes its fraction of in that mode (SST-2's
    train.tsv: 6,886 of its 67,349 rows; a file of one's own without phrases of its sentences: every row)."""
    inside = _sub_phrases(_first_rows(texts))
    return sum(text.strip() not in inside for text in texts)


def calibration_split(texts: list[str], n: int, seed: int = 0, mode: str = "sentences"
                      ) -> tuple[list[int], list[int], int]:
    """(training rows, calibration rows, rows removed for the slice's sake) as indices into `texts`.

    The calibration rows are `n` distinct texts (one row each); no row whose text is one of them is kept
    for training, nor one that reads as one of them once normalised as the classifier reads every text
    (`roberta.text.normalize_for_classifier`: "Apple wins" beside a held-out "apple wins" is the same input), and in
    "sentences" mode neither is a row whose text is a word span of one of them (see the module doc). The third value
    counts the training rows lost beyond the calibration rows themselves. Deterministic for (texts, n, seed, mode).

    The draw itself is keyed by the texts as written: keyed by their normalised forms, SST-2's detokenized phrases
    ("does n't" -> "doesn't") stop being word spans of their sentences, and its split would change (seed 0: 950 of
    its 1,000 calibration rows others, 61,541 rows trained on instead of 55,841); removing the normalised copies
    after the draw removes none of SST-2's rows (no two of its 66,978 distinct texts read alike)."""
    if mode not in ("sentences", "random"):
        raise ValueError(f"--calibration-split must be 'sentences' or 'random', got {mode!r}")
    if n <= 0:
        return list(range(len(texts))), [], 0
    first = _first_rows(texts)
    candidates = list(first)
    if mode == "sentences":
        inside = _sub_phrases(first)
        candidates = [t for t in candidates if t not in inside]
    if n >= len(candidates):
        suggested = min(suggested_calibration_n(len(texts)), len(candidates) - 1)
        example = (f", e.g. {suggested} ({suggested / len(texts):.0%} of the {len(texts):,} rows)"
                   if suggested > 0 else "")
        raise ValueError(f"--calibration-n {n} is not smaller than the {len(candidates):,} texts it can be drawn "
                         f"from ({mode} mode): nothing would be left to train on; pass --calibration-n below "
                         f"{len(candidates)}{example}")
    picked = random.Random(f"calibration:{seed}").sample(candidates, n)
    removed = set(picked)
    if mode == "sentences":
        for text in picked:
            words = text.split()
            if len(words) <= MAX_SPAN_WORDS:
                removed.update(s for s in _spans(words) if s in first)
    calibration = sorted(first[t] for t in picked)
    read_as = {normalize_for_classifier(texts[i]) for i in calibration}  # as the model reads them
    train = [i for i, text in enumerate(texts)
             if text.strip() not in removed and normalize_for_classifier(text) not in read_as]
    return train, calibration, len(texts) - len(train) - len(calibration)


HELD_OUT_SHARE_WARNED = 0.2  # train.finetune warns when its slices hold out more of the training file than this
HELD_OUT_SHARE_SUGGESTED = 0.1  # ... and suggests a calibration slice of this share of the file


def suggested_calibration_n(rows: int) -> int:
    """A --calibration-n to suggest for a training file of `rows` rows: HELD_OUT_SHARE_SUGGESTED of them, at least
    one (SST-2's 67,349 rows take the default 1,000, 1.5%)."""
    return max(1, round(HELD_OUT_SHARE_SUGGESTED * rows))


# ----------------------------------------------------------------------------------------------------------
# Fit, store, report
# ----------------------------------------------------------------------------------------------------------
def set_temperature(folder, temperature: float) -> None:
    """Write `calibration_temperature` into folder/config.json (nothing else changes), atomically."""
    path = Path(folder) / CONFIG_NAME
    config = json.loads(path.read_text(encoding="utf-8"))
    config["calibration_temperature"] = float(temperature)
    write_atomic(path, json.dumps(config, indent=2, sort_keys=True) + "\n")


def reliability_title(dev_source) -> str:
    """The reliability diagram's title: the data set it was drawn on, as a reader knows it, its file after it
    ("held out: SST-2 (sst2/dev.tsv)"; a file of no known data set alone)."""
    return f"held out: {dataset_said(dataset_name(dev_source))}"


def report_dev(model, tokenizer, dev: tuple[list[str], list[int]], temperature: float, out=None,
               batch_size: int = 64, max_length: int | None = None, title: str = "", progress: bool = False) -> dict:
    """`calibration_report` of the model on `dev` (texts, labels) at `temperature`; with `out`, also
    out/reliability.png (before and after). `progress`: a bar over the scoring batches."""
    from .evaluate import classifier_logits

    logits = classifier_logits(model, tokenizer, dev[0], batch_size, max_length, progress=progress)
    if out is not None:
        plot_reliability(logits, dev[1], temperature, Path(out) / RELIABILITY_NAME, title)
    return calibration_report(logits, dev[1], temperature)


def calibration_notes(temperature: float, report: dict) -> list[str]:
    """What a reader must know about a fitted T (the fit is not changed): T at one of its bounds, where the clip, not
    the data, set it (at T_MAX the probabilities are flattened towards equal ones: the model's confidence carries no
    signal on this data, e.g. a model at chance level; at T_MIN, said from the slice's accuracy: at 100% every
    example is right with a margin, the slice is too easy or too small; below it the wrong answers are near ties,
    as a model that has not learned yet gives, which a smaller T hardly penalises); and a T that makes the
    calibration slice's own ECE worse than T = 1 (T minimises the log-loss, not the ECE: on a small slice or a model
    near chance the two disagree). `report`: the slice's `calibration_report`."""
    notes = []
    if temperature >= T_MAX:
        notes.append(f"T at its upper bound {T_MAX:g}: the model's confidence carries no signal on this data (the "
                     "probabilities are flattened towards equal ones; a model at chance level fits this)")
    elif temperature <= T_MIN and report["accuracy"] >= 1:
        notes.append(f"T at its lower bound {T_MIN:g}: every example of the calibration slice is right with a margin "
                     "(the slice is too easy or too small to fit a temperature)")
    elif temperature <= T_MIN:
        notes.append(f"T at its lower bound {T_MIN:g} with {report['accuracy']:.1%} of the calibration slice right: "
                     "its wrong answers are near ties (nearly equal logits, as a model that has not learned yet "
                     "gives), which a smaller T hardly penalises; T only rescales the logits (mean top probability "
                     f"{report['mean_confidence_before']:.1%} -> {report['mean_confidence_after']:.1%}) and does not "
                     "make the model right more often")
    if report["ece_after"] > report["ece_before"]:
        notes.append(f"T = {temperature:.3g} makes the calibration slice's ECE worse, {report['ece_before']:.4f} -> "
                     f"{report['ece_after']:.4f} on its {report['n']:,} examples (T minimises the log-loss, "
                     f"{report['nll_before']:.4f} -> {report['nll_after']:.4f}, not the ECE)")
    return notes


def calibrate(model, tokenizer, calibration: tuple[list[str], list[int]], dev: tuple[list[str], list[int]] | None,
              out=None, batch_size: int = 64, max_length: int | None = None, title: str = "",
              progress: bool = False, spec: dict | None = None) -> dict:
    """Fit T on `calibration` (texts, labels), set model.config.calibration_temperature, and report on `dev`:
    {"temperature", "calibration": {n, nll before/after, ...}, "dev": calibration_report, "notes" (only when there
    is something to say, `calibration_notes`, each also printed as a `note:` line)}; with `out`, also
    out/reliability.png (dev, before and after). `progress`: a bar over the batches of each scoring (the caller
    asks for it only where `progress_bars()` allows). `spec`: what `calibration` was drawn as, a slice spec (None: a
    slice), which the warning's advice follows (`dev_calibration_warning`)."""
    from .evaluate import classifier_logits

    cal_logits = classifier_logits(model, tokenizer, calibration[0], batch_size, max_length, progress=progress)
    temperature = fit_temperature(cal_logits, calibration[1])
    model.config.calibration_temperature = temperature
    result = {"temperature": temperature, "bins": N_BINS,
              "calibration": calibration_report(cal_logits, calibration[1], temperature)}
    if notes := calibration_notes(temperature, result["calibration"]):
        result["notes"] = notes
        for note in notes:  # train.finetune and this command both print them, before their summary line
            print(f"note: calibration: {note}", flush=True)
    if dev is not None:
        result["dev"] = report_dev(model, tokenizer, dev, temperature, out, batch_size, max_length, title, progress)
        if out is not None:
            result["diagram"] = RELIABILITY_NAME
        if warning := dev_calibration_warning(result, spec):
            print(warning, file=sys.stderr, flush=True)
    return result


def dev_calibration_warning(result: dict, spec: dict | None = None) -> str | None:
    """A `warning:` line when the fitted temperature makes the dev set's calibration worse (its ECE after above its
    ECE before: the probabilities are not calibrated on it, whatever T was fitted for), with the figures and how to
    fit T on more examples: a larger slice, or where `spec` is every row of a file (`train.calibrate --all`, no slice
    to enlarge) more rows; None when it does not, or there is no dev report. `result`: `calibrate`'s."""
    dev, n = result.get("dev"), result["calibration"]["n"]
    if not dev or dev["ece_after"] <= dev["ece_before"]:
        return None
    more = ("more labelled examples the model was not trained on (a larger --calibration-data file) fit T better"
            if (spec or {}).get("split") == "all" else "a larger calibration slice (--calibration-n) fits T better")
    return (f"warning: the temperature T = {result['temperature']:.3f}, fitted on {n:,} calibration examples, makes "
            f"the dev set's calibration worse: ECE {dev['ece_before']:.4f} -> {dev['ece_after']:.4f} (mean "
            f"confidence {dev['mean_confidence_before']:.1%} -> {dev['mean_confidence_after']:.1%} at an accuracy of "
            f"{dev['accuracy']:.1%}): read the probabilities as rough; {more}")


HELD_OUT = "held_out_from_training"  # a calibration entry's flag: False when the slice is not fine-tuning's own
OWN_SLICE = "fine_tuning_slice"  # ... and then fine-tuning's own slice, kept (a later refit on it is held out again)


def calibration_markdown(cal: dict | None, dev_name: str = "dev") -> str:
    """The model card's calibration section. It says the examples T was fitted on were held out from training only
    when they were (fine-tuning's own slice, which `train.average` shares; not a `train.calibrate
    --calibration-data` slice, which says `HELD_OUT` False)."""
    if cal and "temperature" not in cal and cal.get("slice"):  # a step checkpoint of a calibrated run
        return ("Not calibrated for these weights: the probabilities are the raw softmax (`calibration_temperature` "
                f"1.0). `python -m train.calibrate` on this folder fits T on the run's calibration slice "
                f"({cal.get('source') or 'metrics.json calibration.slice'}).")
    if not cal or "temperature" not in cal:
        return ("Not calibrated (no held-out calibration slice): the probabilities are the raw softmax "
                "(`calibration_temperature` 1.0).")
    if cal.get(HELD_OUT, True):  # held out of the labelled training only: train.tapt_corpus puts SST-2's training
        # sentences, the slice's too, in the task-adaptive masked-LM corpus, without labels
        on = (f"{cal['calibration']['n']:,} held-out examples ({cal.get('source', 'a held-out slice')}) that were "
              "never trained on with their labels (a masked-LM stage on the task's unlabelled text, such as "
              f"task-adaptive pretraining, may have read them) and that are not the {dev_name} set")
    else:
        on = (f"{cal['calibration']['n']:,} examples ({cal.get('source', 'a slice')}) given to `train.calibrate`: "
              "not the slice fine-tuning held out, so nothing records whether training saw them")
    lines = [f"Temperature scaling: the logits are divided by **T = {cal['temperature']:.3f}** before the softmax "
             f"(`calibration_temperature` in config.json), fitted by minimising the log-loss on {on}. Accuracy does "
             "not change."]
    if "dev" in cal:
        d = cal["dev"]
        lines += ["", f"| on the {dev_name} set ({d['n']:,} examples) | before (T = 1) | after |", "|---|---|---|",
                  f"| expected calibration error ({cal['bins']} bins) | {d['ece_before']:.1%} | {d['ece_after']:.1%} |",
                  f"| log-loss | {d['nll_before']:.3f} | {d['nll_after']:.3f} |",
                  f"| mean confidence (accuracy {d['accuracy']:.1%}) | {d['mean_confidence_before']:.1%} | "
                  f"{d['mean_confidence_after']:.1%} |"]
    if cal.get("notes"):
        lines += ["", *(f"Note: {note}." for note in cal["notes"])]
    if cal.get("diagram"):
        dev_set = f"the {dev_name} set" + (f" ({cal['dev']['n']:,} examples)" if "dev" in cal else "")
        lines += ["", f"![{reliability_alt(dev_set)}]({cal['diagram']})"]
    lines += ["", "`roberta.pipeline` applies T. With `transformers`, apply it yourself:", "",
              "```python\nprobs = (model(**inputs).logits / model.config.calibration_temperature).softmax(-1)\n```",
              "", "(`transformers.pipeline(\"text-classification\")` shows the uncalibrated softmax.)"]
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------------------------
# Command line: (re)calibrate a finished folder
# ----------------------------------------------------------------------------------------------------------
# how this command reads a labelled file: by the model's columns and labels, which it has no options to change
READ_AS_MODEL = {"column_options": False, "labels_fix": "its labels must be the model's"}


def read_slice_source(spec: dict, label_names=None, what: str = "calibration slice", key: str = "calibration.slice",
                      drawn_by: str = "fine-tuning", fix: str = "") -> tuple[list[str], list[int]]:
    """(texts, labels) of the file a recorded slice was drawn from (`spec["data"]`, read in its columns as the model
    reads it), checked against what the slice recorded of it (`check_rows_record`): a slice drawn again from a
    changed file would hold other rows, some of them trained on. `what` and `key`: the slice and its entry in
    metrics.json, as the errors name them; `drawn_by`: what drew it; `fix`: how to go on, ending the errors."""
    from .tables import read_labeled

    try:
        texts, labels, _ = read_labeled(spec["data"], spec.get("text_column"), spec.get("label_column"), label_names,
                                        **READ_AS_MODEL)
    except FileNotFoundError as err:
        raise FileNotFoundError(f"{err}: {drawn_by} drew the {what} (metrics.json {key}) from this file, and it is "
                                f"drawn again from there; put it back{f', or {fix}' if fix else ''}") from None
    check_rows_record(spec, texts, labels, f"{what} (metrics.json {key})", drawn_by, fix)
    return texts, labels


def check_rows_record(spec: dict, texts: list[str], labels: list[int], what: str, drawn_by: str = "fine-tuning",
                      fix: str = "") -> None:
    """A ValueError naming the file when its rows as read now are not those the slice `spec` recorded
    (`train.tables.rows_record`: their count and digest); a `note:` when it recorded none (a run from before they
    were recorded: drawn again from the file as it is, unchecked)."""
    from .tables import rows_record

    if "data_sha256" not in spec:
        print(f"note: the {what} records no digest of {spec['data']} (written before train.finetune recorded one): "
              "it is drawn again from the file as it is now, unchecked", file=sys.stderr, flush=True)
        return
    now = rows_record(texts, labels)
    if now["data_sha256"] == spec["data_sha256"]:
        return
    then = spec.get("data_rows")
    rows = (f"{then:,} rows then, {now['data_rows']:,} now" if isinstance(then, int) and then != now["data_rows"]
            else f"its {now['data_rows']:,} rows hold other texts or labels")
    raise ValueError(f"{spec['data']} changed since {drawn_by} drew the {what} from it ({rows}): it cannot be drawn "
                     f"again, the held-out rows would not be the ones held out{f'; {fix}' if fix else ''}")


def slice_of(texts: list[str], labels: list[int], spec: dict) -> tuple[list[str], list[int]]:
    """The calibration (texts, labels) a slice spec ({"n", "seed", "split"}) draws from a file's rows; "all" (a
    refit with --all): every row."""
    if spec.get("split") == "all":
        return list(texts), list(labels)
    _, rows, _ = calibration_split(texts, int(spec["n"]), int(spec.get("seed", 0)), spec.get("split", "sentences"))
    return [texts[i] for i in rows], [labels[i] for i in rows]


def held_out_slice(spec: dict, label_names=None, drawn_by: str = "fine-tuning",
                   fix: str = "") -> tuple[list[str], list[int]]:
    """The calibration (texts, labels) described by a metrics.json "calibration" entry's slice
    ({"data", "n", "seed", "split", and what it recorded of the file}), drawn again from the file, which must hold
    the rows it held then (`read_slice_source`)."""
    return slice_of(*read_slice_source(spec, label_names, drawn_by=drawn_by, fix=fix), spec)


# --calibration-n, --calibration-seed, --calibration-split: with --calibration-data only (without it the slice is
# the stored one, which has its own; given alone, they were ignored without a word)
SLICE_DEFAULTS = {"n": 1000, "seed": 0, "split": "sentences"}
SLICE_OPTIONS = {"n": "--calibration-n", "seed": "--calibration-seed", "split": "--calibration-split"}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m train.calibrate", description=__doc__.split("\n\n")[0],
                                epilog=__doc__.split("\n\n", 1)[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", help="a finished classifier folder (config.json, model.safetensors, tokenizer.json)")
    p.add_argument("--calibration-data", default=None,
                   help="labelled TSV/CSV or hub: spec to draw the slice from (default: the calibration entry of "
                        "the folder's metrics.json, i.e. the slice its fine-tuning held out)")
    p.add_argument("--calibration-n", type=int, default=None, help="with --calibration-data: slice size "
                                                                   f"(default: {SLICE_DEFAULTS['n']})")
    p.add_argument("--calibration-seed", type=seed_value, default=None,
                   help=f"with --calibration-data (default: {SLICE_DEFAULTS['seed']})")
    p.add_argument("--calibration-split", choices=["sentences", "random"], default=None,
                   help=f"with --calibration-data (default: {SLICE_DEFAULTS['split']})")
    p.add_argument("--all", action="store_true",
                   help="with --calibration-data: fit on every row of the file (a file kept apart for calibration)")
    p.add_argument("--dev", default=None, help="report ECE here (default: metrics.json's dev_data, or the dev slice "
                                               "fine-tuning held out of its training file: dev_slice)")
    p.add_argument("--batch-size", type=int, default=64, help="texts per forward pass (default: %(default)s)")
    p.add_argument("--plot-only", action="store_true",
                   help="fit nothing: redraw reliability.png on the dev set with the temperature config.json "
                        "holds, and write nothing else")
    return p


def main(argv=None) -> int:
    p = build_parser()
    args = p.parse_args(argv)
    n = args.calibration_n if args.calibration_n is not None else SLICE_DEFAULTS["n"]
    if args.batch_size < 1 or n < 1:  # by the options' names, before any work
        p.error(f"--batch-size and --calibration-n must be at least 1, got {args.batch_size} and {n}")
    if args.plot_only and (args.calibration_data or args.all):
        p.error("--plot-only draws with the stored temperature: it takes no --calibration-data or --all")
    given = [flag for key, flag in SLICE_OPTIONS.items() if getattr(args, f"calibration_{key}") is not None]
    if not args.calibration_data and (given or args.all):  # else ignored: the stored slice would be fitted on
        named = given + ["--all"] * args.all
        return report_user_error(ValueError(
            f"{', '.join(named)} {'goes' if len(named) == 1 else 'go'} only with --calibration-data: without it T "
            "is fitted on the slice metrics.json records, which has its own"))
    if args.all and given:
        return report_user_error(ValueError(f"--all fits on every row of --calibration-data: it takes no "
                                            f"{', '.join(given)}"))
    for key in SLICE_OPTIONS:
        if getattr(args, f"calibration_{key}") is None:
            setattr(args, f"calibration_{key}", SLICE_DEFAULTS[key])
    from roberta import RobertaForSequenceClassification, load_tokenizer
    from roberta.loading import require_architecture

    from .tables import read_labeled, rows_record
    from .recorded_columns import columns_for, columns_in_metrics

    folder = Path(args.model)
    metrics_path = folder / METRICS_NAME
    figure_dir = None
    try:
        require_architecture(folder, "RobertaForSequenceClassification",  # before any weight is read
                             "calibration needs a classifier (train.finetune output)")
        metrics = (RunMetrics.read(metrics_path, missing_ok=True) or RunMetrics()).to_dict()
        model = RobertaForSequenceClassification.from_pretrained(folder)
        require_softmax(model.config, folder, "temperature scaling needs")  # before any data is read
        tokenizer = load_tokenizer(folder)
        names = model.config.id2label
        recorded = columns_in_metrics(metrics)  # the model's own, as train.finetune read them

        def columns(source) -> dict:  # a file of another layout given by the user is read as it is laid out
            text_column, label_column = columns_for(source, recorded)
            return {"text_column": text_column, "label_column": label_column}
        if args.plot_only:
            return _plot_only(folder, model, tokenizer, args.dev, args.batch_size, metrics)
        stored = metrics.get("calibration") or {}
        # held out from fine-tuning: fine-tuning's own slice (the stored one, unless an earlier --calibration-data
        # replaced it, which kept it as OWN_SLICE), and no other
        own = stored.get(OWN_SLICE) or (stored.get("slice") if stored.get(HELD_OUT, True) else None)
        if args.calibration_data:
            texts, labels, _ = read_labeled(args.calibration_data, label_names=names, **READ_AS_MODEL,
                                            **columns(args.calibration_data))
            spec = {"data": args.calibration_data, "n": len(texts) if args.all else args.calibration_n,
                    **({"split": "all"} if args.all else {"seed": args.calibration_seed,
                                                          "split": args.calibration_split}),
                    **columns(args.calibration_data), **rows_record(texts, labels)}  # a later refit checks the file
            calibration = slice_of(texts, labels, spec)
        else:
            spec = stored.get("slice")
            if not spec:  # a folder train.finetune did not write (train.export's, a download) has no metrics.json
                raise ValueError(f"{metrics_path} names no calibration slice: pass --calibration-data"
                                 if metrics_path.is_file() else f"{folder} has no {METRICS_NAME} to name the "
                                 "calibration slice: pass --calibration-data")
            drawn_by = "fine-tuning" if same_slice(spec, own) else "train.calibrate"
            calibration = held_out_slice(spec, names, drawn_by, fix="pass --calibration-data FILE to fit on a file "
                                                                   "of your own")
        held_out = same_slice(spec, own)
        dev, dev_named = dev_set(args.dev, metrics, names)
        # the reliability diagram is drawn aside (in the folder: one file system) and moved in with the rest
        figure_dir = tempfile.TemporaryDirectory(prefix=".calibrate-", dir=folder)
        with torch.no_grad():  # at the length the run was scored at, so that its figures are reproduced
            result = calibrate(model, tokenizer, calibration, dev, out=figure_dir.name, batch_size=args.batch_size,
                               max_length=metrics.get("max_length"), title=dev_named, spec=spec)
        result["slice"], result["source"] = spec, _describe(spec, held_out)
        if not held_out:
            result[HELD_OUT] = False
            if own:
                result[OWN_SLICE] = own
        metrics["calibration"] = result
        metrics["temperature"] = result["temperature"]  # the top-level figures follow the new T (they kept the old)
        if "dev" in result:
            metrics["dev_ece_uncalibrated"], metrics["dev_ece"] = (result["dev"]["ece_before"],
                                                                   result["dev"]["ece_after"])
        checks_note = _rescore_checks(metrics, model, tokenizer, args.batch_size)
        written = RunMetrics.from_dict(metrics)
    except (OSError, ValueError, KeyError) as err:  # config.json, metrics.json and the figure are still the old ones
        if figure_dir is not None:
            figure_dir.cleanup()
        return report_user_error(err)
    from .finetune import card_figure_sections, card_table_metrics
    from .model_card import metrics_markdown, rewrite_card_sections

    # written once everything is computed, each file atomically; a write that fails (a full disk) can leave the files
    # of two temperatures side by side, and the same command, which fits the same T again, writes them all again
    try:
        set_temperature(folder, result["temperature"])
        written.write(metrics_path)
        figure = Path(figure_dir.name) / RELIABILITY_NAME
        drawn = figure.is_file()  # with a dev set
        if drawn:
            os.replace(figure, folder / RELIABILITY_NAME)
        card = rewrite_card_sections(folder, [("Metrics", metrics_markdown(card_table_metrics(written))),
                                              *card_figure_sections(written)])
    except OSError as err:
        return report_user_error(with_how_to_go_on(err, folder, lambda: "run the same command again", always=True))
    finally:
        figure_dir.cleanup()
    shown = f"T = {result['temperature']:.4f}" + (" (at its bound)" if T_MIN >= result["temperature"] or
                                                  result["temperature"] >= T_MAX else "")
    if "dev" in result:
        shown += f"; dev ECE {result['dev']['ece_before']:.4f} -> {result['dev']['ece_after']:.4f}"
    files = [folder / CONFIG_NAME, metrics_path, *([folder / RELIABILITY_NAME] if drawn else []),
             *([folder / "README.md"] if card else [])]
    print(f"{shown}{checks_note}; wrote {', '.join(map(str, files))}")
    return EXIT_OK


def dev_set(dev_option: str | None, metrics: dict, label_names) -> tuple[tuple[list, list] | None, str]:
    """(dev (texts, labels), the reliability diagram's title) of a refit or a redraw: --dev's file, else the dev set
    metrics.json records, a file (dev_data) or the slice fine-tuning held out of its training file (dev_slice,
    drawn again: `train.finetune.held_out_dev`); (None, "") when it records none. A file is read in the model's
    columns where it has them (`recorded_columns.columns_for`)."""
    from . import finetune
    from .tables import read_labeled
    from .recorded_columns import columns_for, columns_in_metrics

    recorded = RunMetrics.from_dict(metrics)
    if not dev_option and (held_out := recorded.held_out_dev):
        return (finetune.held_out_dev(held_out, label_names, fix="pass --dev FILE to report on a file of your own"),
                finetune.dev_title(None, held_out))
    source = dev_option or recorded.dev_data
    if not source:
        return None, ""
    dev = read_labeled(source, *columns_for(source, columns_in_metrics(metrics)), label_names=label_names,
                       **READ_AS_MODEL)[:2]
    return dev, reliability_title(source)


def _plot_only(folder: Path, model, tokenizer, dev_option: str | None, batch_size: int, metrics: dict) -> int:
    """--plot-only: reliability.png redrawn on the dev set (`dev_set`) with the model's stored temperature (drawn
    aside and moved in, as a refit's is), at the length the run was scored at; nothing else is written. Prints the
    dev ECE beside metrics.json's (the figure's are measured again)."""
    dev, title = dev_set(dev_option, metrics, model.config.id2label)
    if dev is None:
        raise ValueError(f"{folder / METRICS_NAME} names no dev set to draw the diagram on: pass --dev")
    temperature = model.config.calibration_temperature
    with tempfile.TemporaryDirectory(prefix=".calibrate-", dir=folder) as aside, torch.no_grad():
        report = report_dev(model, tokenizer, dev, temperature, aside, batch_size, metrics.get("max_length"), title)
        os.replace(Path(aside) / RELIABILITY_NAME, folder / RELIABILITY_NAME)
    stored = (metrics.get("calibration") or {}).get("dev") or {}
    was = (f" (metrics.json: {stored['ece_before']:.4f} -> {stored['ece_after']:.4f})"
           if "ece_before" in stored and "ece_after" in stored else "")
    print(f"T = {temperature:.4f} (config.json's, not refitted); dev ECE {report['ece_before']:.4f} -> "
          f"{report['ece_after']:.4f}{was}; wrote {folder / RELIABILITY_NAME}")
    return EXIT_OK


def _rescore_checks(metrics: dict, model, tokenizer, batch_size: int) -> str:
    """Score the behaviour checks metrics.json holds again with the new temperature (a verdict is "unsure" below
    a calibrated probability), in place; returns what to say of them. Checks whose file is gone are kept as
    they were, and said to be."""
    from .evaluate import path_shown_as, score_checks

    checks = metrics.get("checks")
    if not checks:
        return ""
    path = path_shown_as(checks.get("source", ""))
    if path is None:
        return (f"; behaviour checks not scored again ({checks.get('source') or 'their file'} not found): they "
                f"keep the verdicts of T = {checks.get('temperature', 1.0):.4f}")
    with torch.no_grad():
        metrics["checks"] = score_checks(model, tokenizer, str(path), batch_size, checks["unsure_below"],
                                         metrics.get("max_length"))
    now = metrics["checks"]
    return f"; behaviour checks {checks['right']}/{checks['n']} -> {now['right']}/{now['n']}"


def same_slice(spec: dict | None, other: dict | None) -> bool:
    """Whether two calibration entries' "slice" specs draw the same rows (unset columns are the defaults)."""
    if not spec or not other:
        return False
    keys = ("data", "n", "seed", "split", "text_column", "label_column")
    defaults = {k: SLICE_DEFAULTS[k] for k in ("seed", "split")}  # what a spec without them was drawn with
    return all(spec.get(k, defaults.get(k)) == other.get(k, defaults.get(k)) for k in keys)


def _describe(spec: dict, held_out: bool = True) -> str:
    """The slice as the card says it: "held out from fine-tuning" only when it is fine-tuning's own."""
    if spec.get("split") == "all":
        return f"all of `{spec['data']}`"
    return (f"{spec['n']:,} {'whole sentences' if spec.get('split') == 'sentences' else 'rows'} of "
            f"`{spec['data']}`{' held out from fine-tuning' if held_out else ''}, seed {spec.get('seed', 0)}")


if __name__ == "__main__":
    raise SystemExit(exit_code(main))
