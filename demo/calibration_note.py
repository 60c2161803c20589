"""The Sentiment tab's calibration note, read from the classifier's metrics.json and model card: what its scores
mean (the fitted temperature and the dev calibration error before and after it, or a warning that it is not
calibrated), the reliability diagram's figures where the card says it was redrawn from the shipped weights, and the
diagram's alt text. The model card's calibration section (`train.calibrate`) gives the same figures in its own
words."""
from __future__ import annotations

import re

from roberta import figure_alts
from roberta.run_metrics import RunMetrics, dataset_name, dev_set_said, is_sst2

from .formatting import format_probability, md_escape, pct
from .model_facts import (DEV_SLICE, SST2_DEV, checks_said, dev_facts, dev_set, dev_set_markdown, finite_number,
                          held_out_markdown)


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


def surest_wrong_check(checks) -> str:
    """" Other text can be wrong at a high score: of the behaviour checks (47 test sentences of 8 kinds), “The film
    is in English with French subtitles.” (neutral fact) comes out 93.6% positive.": the wrong answer given with the
    highest score among the behaviour checks (train.evaluate.score_checks' items, what they are said by
    `checks_said`); "" when none is wrong or they are not there."""
    items = checks.get("items") if isinstance(checks, dict) else None
    wrong = [it for it in items or [] if isinstance(it, dict) and it.get("right") is False
             and finite_number(it.get("score")) is not None and isinstance(it.get("sentence"), str)]
    if not wrong:
        return ""
    worst = max(wrong, key=lambda it: it["score"])
    kind = f" ({md_escape(str(worst['category']))})" if worst.get("category") else ""
    named = f" ({said})" if (said := checks_said(checks)) else ""
    return (f" Other text can be wrong at a high score: of the behaviour checks{named}, "
            f"“{md_escape(worst['sentence'])}”{kind} comes out {format_probability(worst['score'])} "
            f"{md_escape(str(worst.get('label', '')))}.")


def _data_file(path) -> str | None:
    """A data file that metrics.json names, as `dataset_name` shows it; None where it names none."""
    return dataset_name(path) if isinstance(path, str) and path else None


def calibration_data_said(metrics: RunMetrics) -> tuple[str, str, str]:
    """What the calibration note says of its data, from metrics.json's calibration slice and dev set: the texts the
    calibration holds for, what the temperature was fitted on and the dev set, as ("SST-2-like sentences", "1,000
    held-out SST-2 training sentences", "the SST-2 dev set (872 sentences)"); for a classifier of other data, its
    files by name: ("texts like its training data", "100 held-out examples of `three.csv`", "its dev set
    (`three_dev.csv`, 100 examples)"), or for a dev set held out of its training file (`dev_slice`), that slice:
    "its dev set (60 rows of `three.csv` held out from fine-tuning, seed 0)"."""
    cal = metrics.calibration
    fitted, dev = cal["calibration"]["n"], cal["dev"]["n"]
    slice_data = _data_file((cal.get("slice") or {}).get("data"))
    if is_sst2([slice_data] if slice_data else None):
        like, fitted_on = "SST-2-like sentences", f"{fitted:,} held-out SST-2 training sentences"
    else:
        like = "texts like its training data"
        fitted_on = f"{fitted:,} held-out examples of " + (held_out_markdown(slice_data) if slice_data
                                                            else "its training data")
    facts = dev_facts(metrics)
    kind, named = dev_set(facts), dev_set_markdown(facts)
    if kind == SST2_DEV:
        return like, fitted_on, f"the SST-2 dev set ({dev:,} sentences)"
    if kind == DEV_SLICE:  # train.finetune --dev-fraction: a slice of its own training file, said as one
        return like, fitted_on, f"its dev set ({named})"
    return like, fitted_on, f"its dev set ({named + ', ' if named else ''}{dev:,} examples)"


def made_calibration_worse(dev: dict) -> bool:
    """Whether the fitted temperature raised the dev set's expected calibration error (metrics.json's calibration
    dev figures: `ece_after` above `ece_before`), as it can when it was fitted on few examples."""
    before, after = finite_number(dev.get("ece_before")), finite_number(dev.get("ece_after"))
    return before is not None and after is not None and after > before


def calibration_note(metrics: RunMetrics | None, readme: str | None = None) -> str:
    """What the sentiment scores mean: the fitted temperature and the dev calibration error before and after it
    (from the classifier's metrics.json), said as a warning where the temperature made it worse
    (`made_calibration_worse`), or a plain warning when the model was never calibrated. When the model
    card (`readme`) says the reliability diagram was redrawn from the shipped weights (`redrawn_diagram`), the
    diagram's own figures too, and why they differ from metrics.json's."""
    cal = metrics.calibration if metrics else None
    if not cal:
        return ("**This classifier is not calibrated**: its scores are the raw softmax of a small model, often near "
                "100% even when it is wrong. Read them as a ranking, not as a probability.")
    dev = cal["dev"]
    like, fitted_on, dev_set = calibration_data_said(metrics)
    divided = ("the logits (the raw scores, one per label, before the softmax) are divided by a temperature "
               f"T = {cal['temperature']:.2f} fitted on {fitted_on}, which changes how sure the model sounds, never "
               "which label wins")
    worse = made_calibration_worse(dev)  # a temperature fitted on few examples may not carry over to the dev set
    bins = f", over {dev['bins']} bins" if isinstance(dev.get("bins"), int) else ""  # a record of before "bins"
    figures = (f"the expected calibration error (the gap between confidence and accuracy{bins}) "
               f"{'rises' if worse else 'goes'} from {pct(dev['ece_before'])} to {pct(dev['ece_after'])}, and the "
               f"mean confidence {'goes ' if worse else ''}from {pct(dev['mean_confidence_before'])} to "
               f"{pct(dev['mean_confidence_after'])} at an accuracy of {pct(dev['accuracy'])}")
    if worse:
        text = (f"**The temperature did not calibrate these scores**: {divided}. On {dev_set} "
                f"{figures}: read the scores as rough. (`python -m train.calibrate` with a larger "
                f"`--calibration-n` fits the temperature on more examples.){surest_wrong_check(metrics.checks)}")
    else:
        text = (f"The scores are calibrated on average, over {like}: {divided}. On {dev_set} {figures}."
                f"{surest_wrong_check(metrics.checks)}")
    redrawn = redrawn_diagram(readme)
    if redrawn:
        dtype = md_escape(redrawn["dtype"])
        accuracy = f" (accuracy {redrawn['accuracy']})" if redrawn["accuracy"] else ""
        text += (f" The diagram below was drawn later, from the shipped {dtype} weights, so it shows an ECE of "
                 f"{redrawn['before']} before and {redrawn['after']} after{accuracy}: the figures above were measured "
                 f"when the model was made, before its weights were stored in {dtype} (the model card gives both).")
    return text + (" A bar on the diagonal below means that answers given with that confidence are right that "
                   "often.")


def reliability_diagram_alt(metrics: RunMetrics | None) -> str:
    """The reliability diagram's alt text (`roberta.figure_alts`, as the model card's), naming the dev set it was
    drawn on as metrics.json names it (SST-2 dev, the file: "three_dev.csv", or the slice held out of the training
    file: "60 rows of three.csv held out from fine-tuning, seed 0"), and where the app gives its figures."""
    facts = dev_facts(metrics or RunMetrics())
    if dev_set(facts) == SST2_DEV:
        named = SST2_DEV
    elif "dev_data" in facts or "dev_slice" in facts:  # in plain text, as the model card's alt text names it
        named = f"its dev set ({dev_set_said(facts.get('dev_data'), facts.get('dev_slice'))})"
    else:  # (a metrics.json of other training data that names no dev set)
        named = "its dev set"
    return figure_alts.reliability_alt(named) + " (the diagram's ECE figures are in the text above)"
