"""Issue 15: calibration (ECE, temperature fitting, the held-out slice), the temperature in config.json and the
pipeline, two-stage fine-tuning (IMDB then SST-2), layer-wise lr decay, weight averaging, behaviour checks,
the seeds' summary and the experiment's plan. Tiny models and generated data; the real runs are not tested."""
import json
import math
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

import roberta
from train import (average, calibrate, evaluate, finetune, reporting, runtime, sentiment_recipe, summarize, tables,
                   tapt_corpus, trainer)
from helpers import contrast_with_white, finetune_argv, pretrain_argv, refused

ROOT = Path(__file__).resolve().parents[1]
CHECKS = ROOT / "tests" / "data" / "sentiment_checks.tsv"


# ----- expected calibration error and temperature -----
def test_ece_by_hand():
    probs = torch.tensor([[0.1, 0.9], [0.2, 0.8], [0.6, 0.4], [0.45, 0.55]])
    labels = torch.tensor([1, 0, 0, 1])
    # bins of width 0.5 (n_bins=2): (0.5, 1] holds all four, confidence mean (0.9+0.8+0.6+0.55)/4, accuracy 3/4
    assert calibrate.expected_calibration_error(probs, labels, n_bins=2) == pytest.approx(abs(0.75 - 0.7125))
    # 15 bins: 0.9 and 0.8 in bins of their own, 0.6 and 0.55 (both right) sharing one:
    # |1-0.9| + |0-0.8| + 2 x |1-(0.6+0.55)/2|, over 4
    assert calibrate.expected_calibration_error(probs, labels) == pytest.approx((0.1 + 0.8 + 0.4 + 0.45) / 4)
    bins = calibrate.reliability_bins(probs, labels)
    assert len(bins) == 15 and sum(b["n"] for b in bins) == 4
    # (8/15, 9/15] holds 0.55 and 0.6, (11/15, 12/15] 0.8, (13/15, 14/15] 0.9: bins shifted by one (floor for ceil)
    # left this ECE as it was
    assert {i: b["n"] for i, b in enumerate(bins) if b["n"]} == {8: 2, 11: 1, 13: 1}
    for b in bins:  # each bin's mean confidence lies within it (its edges as float32 rounds them)
        if b["n"]:
            assert b["lower"] - 1e-6 < b["confidence"] <= b["upper"] + 1e-6, b
    assert calibrate.reliability_bins(torch.tensor([[0.0, 1.0]]), [1])[-1]["n"] == 1  # confidence 1 in the last bin
    with pytest.raises(ValueError):
        calibrate.expected_calibration_error(probs, labels[:2])


def synthetic(n=20000, true_temperature=2.5, seed=0):
    """Logits of an over-confident model: labels drawn from softmax(z / T0), the model reports z."""
    g = torch.Generator().manual_seed(seed)
    z = torch.randn(n, 2, generator=g) * 3
    labels = torch.multinomial((z / true_temperature).softmax(-1), 1, generator=g).squeeze(1)
    return z, labels


def test_ece_of_calibrated_and_overconfident_synthetic_data():
    z, labels = synthetic()
    ece_raw = calibrate.expected_calibration_error(calibrate.probabilities(z), labels)
    ece_true = calibrate.expected_calibration_error(calibrate.probabilities(z, 2.5), labels)
    assert ece_true < 0.015 < 0.08 < ece_raw  # the true probabilities are calibrated, the raw ones are not


def test_fit_temperature_recovers_the_true_one():
    z, labels = synthetic(true_temperature=2.5)
    t = calibrate.fit_temperature(z, labels)
    assert t == pytest.approx(2.5, rel=0.06)
    assert calibrate.nll(z, labels, t) < calibrate.nll(z, labels, 1.0)
    z, labels = synthetic(true_temperature=0.5, seed=1)  # under-confident: T < 1
    assert calibrate.fit_temperature(z, labels) == pytest.approx(0.5, rel=0.06)
    # all correct with a margin: the NLL keeps falling as T -> 0 (sharper), within the clipping range
    easy = torch.tensor([[0.0, 5.0], [5.0, 0.0]])
    t = calibrate.fit_temperature(easy, [1, 0])
    assert calibrate.T_MIN <= t < 1 and calibrate.nll(easy, [1, 0], t) < calibrate.nll(easy, [1, 0])
    report = calibrate.calibration_report(z, labels, 0.5)
    assert report["ece_after"] < report["ece_before"] and report["n"] == len(labels)


def no_signal(n, seed=0):
    """Confident logits whose labels are drawn independently of them: a model at chance level."""
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, 2, generator=g) * 3, torch.randint(0, 2, (n,), generator=g)


# a slice on which the log-loss optimum (T 0.6) makes the ECE worse (0.115 -> 0.129): margins logit1 - logit0
WORSE_MARGINS = [0.5, -1.2, 2.9, 0.9, -1.1, -0.2, 2.0, 3.2, 6.1, -1.1, 1.2, -4.3]
WORSE_LABELS = [1, 0, 1, 1, 0, 0, 1, 1, 1, 1, 1, 0]


def test_a_temperature_at_its_bound_or_that_worsens_the_ece_is_said(monkeypatch, capsys):
    """The quick recipe's classifier (chance level) fitted T = 20, the silent clip, or a T of 0.113 that made the
    ECE worse, and nothing said so: the result holds `notes`, printed as `note:` lines and shown on the card."""
    z, labels = no_signal(400)
    assert calibrate.fit_temperature(z, labels) == calibrate.T_MAX  # the clip, not the data, set it
    easy = torch.tensor([[0.0, 0.1], [0.1, 0.0]] * 4)  # all right, by a small margin: T is driven down to the clip
    assert calibrate.fit_temperature(easy, [1, 0] * 4) == calibrate.T_MIN
    worse = torch.stack([torch.zeros(len(WORSE_MARGINS)), torch.tensor(WORSE_MARGINS)], 1)
    t_worse = calibrate.fit_temperature(worse, WORSE_LABELS)
    assert calibrate.T_MIN < t_worse < calibrate.T_MAX

    model = type("Model", (), {"config": type("Config", (), {})()})()
    cases = [(z, labels, ["T at its upper bound 20: the model's confidence carries no signal on this data"]),
             (easy, [1, 0] * 4, ["T at its lower bound 0.05: every example of the calibration slice is right"]),
             (worse, WORSE_LABELS, [f"T = {t_worse:.3g} makes the calibration slice's ECE worse, 0.1150 -> 0.1291 "
                                    "on its 12 examples (T minimises the log-loss"]),
             (*synthetic(n=2000), [])]  # an over-confident model: T fitted inside its range, the ECE better
    for logits, gold, expected in cases:
        texts = ["a text"] * len(gold)
        monkeypatch.setattr(evaluate, "classifier_logits", lambda *args, logits=logits, **kwargs: logits)
        result = calibrate.calibrate(model, None, (texts, list(map(int, gold))), None)
        notes, out = result.get("notes", []), capsys.readouterr().out
        assert len(notes) == len(expected) and all(note.startswith(want) for note, want in zip(notes, expected)), notes
        assert out.splitlines() == [f"note: calibration: {note}" for note in notes]
        card = calibrate.calibration_markdown(result)
        assert all(f"Note: {note}." in card for note in notes) and ("Note:" in card) == bool(notes)
        if not expected:
            assert result["calibration"]["ece_after"] < result["calibration"]["ece_before"]
    # the bound and a worse ECE together (a chance-level model on a small slice)
    report = {"n": 50, "ece_before": 0.10, "ece_after": 0.20, "nll_before": 0.7, "nll_after": 0.69}
    assert [n.split(":")[0] for n in calibrate.calibration_notes(calibrate.T_MAX, report)] == [
        "T at its upper bound 20",
        "T = 20 makes the calibration slice's ECE worse, 0.1000 -> 0.2000 on its 50 examples (T minimises the "
        "log-loss, 0.7000 -> 0.6900, not the ECE)"]


def test_t_at_its_lower_bound_is_explained_from_the_slices_accuracy():
    """A model that has not learned yet (logits nearly equal, 57% of the slice right) drives T to its lower bound,
    and the note said "every example of the calibration slice is right with a margin": it says the accuracy, and
    that the wrong answers are near ties; the all-right slice keeps its own explanation."""
    right = 57
    margins = torch.tensor([0.002] * right + [-0.002] * (100 - right))  # each text's logit for its own label
    labels = [i % 2 for i in range(100)]
    logits = torch.zeros(100, 2)
    logits[torch.arange(100), torch.tensor(labels)] = margins
    temperature = calibrate.fit_temperature(logits, labels)
    assert temperature == calibrate.T_MIN
    report = calibrate.calibration_report(logits, labels, temperature)
    assert report["accuracy"] == pytest.approx(0.57)
    notes = calibrate.calibration_notes(temperature, report)
    assert len(notes) == 1 and "every example" not in notes[0], notes
    assert notes[0].startswith("T at its lower bound 0.05 with 57.0% of the calibration slice right: its wrong "
                               "answers are near ties")
    shown = f"{report['mean_confidence_before']:.1%} -> {report['mean_confidence_after']:.1%}"
    assert shown in notes[0] and report["mean_confidence_after"] < 0.52  # a rescaling: still close to a coin
    easy = torch.tensor([[0.0, 0.1], [0.1, 0.0]] * 4)  # all right, by a small margin
    easy_report = calibrate.calibration_report(easy, [1, 0] * 4, calibrate.T_MIN)
    assert calibrate.calibration_notes(calibrate.T_MIN, easy_report)[0].startswith(
        "T at its lower bound 0.05: every example of the calibration slice is right with a margin")


def test_a_calibration_slice_too_large_names_the_option_that_fixes_it(train_files, tmp_path, tiny_mlm_dir, capsys):
    """"--calibration-n 1000 is not smaller than the 577 texts it can be drawn from" said the problem, not the fix:
    the message names --calibration-n below that count, and for train.finetune also 0 (no calibration). It gives a
    size to pick, a tenth of the file's rows (the default 1000 failed on a user's 1,000-row file with no size to
    try), smaller than the texts it can be drawn from."""
    texts = [f"the film number {i} is good" for i in range(20)]
    with pytest.raises(ValueError) as err:
        calibrate.calibration_split(texts, 50)
    assert str(err.value).endswith("nothing would be left to train on; pass --calibration-n below 20, e.g. 2 (10% of "
                                   "the 20 rows)")
    argv = finetune_argv(train_files, tmp_path / "clf", "--init", str(tiny_mlm_dir), "--calibration-n", "100000")
    assert finetune.main(argv) == 2
    message = capsys.readouterr().err
    count = re.match(r"error: --calibration-n 100000 is not smaller than the (\d+) texts ", message)
    assert count and message.count("\n") == 1, message
    rows = len(tables.read_labeled(str(train_files / "train.tsv"))[0])
    suggested = min(round(rows / 10), int(count[1]) - 1)
    assert message.endswith(f"; pass --calibration-n below {count[1]}, e.g. {suggested} ({suggested / rows:.0%} of "
                            f"the {rows:,} rows); or 0 to fit no temperature\n"), message
    with pytest.raises(ValueError) as err:  # one distinct text: no size to suggest
        calibrate.calibration_split(texts[:1] * 5, 1, mode="random")
    assert str(err.value).endswith("; pass --calibration-n below 1")


def test_a_model_near_chance_level_is_fitted_to_its_bound_not_left_at_t_1(monkeypatch, capsys):
    """An average of chance-level members (logits a few thousandths apart, 45% right) was refitted to exactly T = 1.000
    with no note while each member reached the bound 20: in float32 the log-loss is flat within its rounding, and
    L-BFGS's line search found no step. Fitted in float64, it reaches the bound, and the note says so."""
    logits = torch.tensor([[0.0007, 0.0047]] * 20)  # the quick recipe's average: every text 0.501 positive
    labels = [1] * 9 + [0] * 11
    assert calibrate.fit_temperature(logits, labels) == calibrate.T_MAX
    monkeypatch.setattr(evaluate, "classifier_logits", lambda *args, **kwargs: logits)
    model = type("Model", (), {"config": type("Config", (), {})()})()
    result = calibrate.calibrate(model, None, (["a text"] * 20, labels), None)
    assert result["temperature"] == calibrate.T_MAX and result["notes"][0].startswith("T at its upper bound 20")
    assert "note: calibration: T at its upper bound 20" in capsys.readouterr().out


def test_recalibrate_refuses_slice_options_without_calibration_data(tiny_clf_dir, tmp_path, capsys):
    """`train.calibrate CLF --calibration-n 5` fitted on the stored slice, ignoring --calibration-n, and exited 0."""
    import shutil

    folder = shutil.copytree(tiny_clf_dir, tmp_path / "clf")
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    for extra, named in [(["--calibration-n", "5"], "--calibration-n goes"),
                         (["--calibration-seed", "1", "--calibration-split", "random"],
                          "--calibration-seed, --calibration-split go"), (["--all"], "--all goes")]:
        assert calibrate.main([str(folder), *extra]) == 2
        assert capsys.readouterr().err == (f"error: {named} only with --calibration-data: without it T is fitted on "
                                           "the slice metrics.json records, which has its own\n")
    assert calibrate.main([str(folder), "--calibration-data", "x.tsv", "--all", "--calibration-n", "5"]) == 2
    assert capsys.readouterr().err == \
        "error: --all fits on every row of --calibration-data: it takes no --calibration-n\n"
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before


def test_the_card_says_held_out_only_of_fine_tunings_own_slice(two_stage, tmp_path):
    """With any --calibration-data the card said the slice was "held out from fine-tuning ... that training never
    saw": false for another seed of the run's own training file, whose rows the run trained on."""
    import shutil

    folder = shutil.copytree(two_stage[1], tmp_path / "copy")
    own = json.loads((folder / "metrics.json").read_text())["calibration"]["slice"]
    data = ["--calibration-data", own["data"], "--calibration-n", str(own["n"])]
    assert calibrate.main([str(folder), *data, "--calibration-seed", "1"]) == 0
    cal = json.loads((folder / "metrics.json").read_text())["calibration"]
    card = (folder / "README.md").read_text()
    assert cal[calibrate.HELD_OUT] is False and cal[calibrate.OWN_SLICE] == own
    assert "held out from fine-tuning" not in cal["source"] and cal["source"].endswith(", seed 1")
    assert "never trained on with their labels" not in card and "not the slice fine-tuning held out" in card
    for argv in ([*data], []):  # fine-tuning's own slice again, given or recorded: held out, as the card says
        assert calibrate.main([str(folder), *argv, *(["--calibration-seed", "0"] if argv else [])]) == 0
        cal = json.loads((folder / "metrics.json").read_text())["calibration"]
        assert calibrate.HELD_OUT not in cal and cal["source"].endswith("held out from fine-tuning, seed 0")
        card = (folder / "README.md").read_text()
        assert "held-out examples" in card and "that were never trained on with their labels" in card
        assert "that training never saw" not in card  # train.tapt_corpus gives their text to the MLM stage


def test_the_slices_text_is_in_the_task_adaptive_corpus_so_the_card_says_labels(train_files, tmp_path):
    """The card said the calibration sentences were ones "that training never saw": the task-adaptive MLM corpus
    (`train.tapt_corpus`) holds every SST-2 training row of --min-words words, the held-out sentences too."""
    unsup = tmp_path / "unsup.txt"
    unsup.write_text("a review of a film.\n")
    tapt_corpus.write_corpora(tmp_path / "tapt", str(unsup), str(train_files / "train.tsv"), min_words=1)
    corpus = set((tmp_path / "tapt" / "sst2-lower.txt").read_text().splitlines())
    texts, labels = calibrate.held_out_slice({"data": str(train_files / "train.tsv"), "n": 20, "seed": 0})
    assert all(roberta.text.normalize_for_classifier(t) in corpus for t in texts)  # their text, not their labels
    cal = {"temperature": 1.5, "bins": 15, "calibration": {"n": 20}, "source": "20 whole sentences held out"}
    text = calibrate.calibration_markdown(cal)
    assert "20 held-out examples (20 whole sentences held out) that were never trained on with their labels" in text
    assert "task-adaptive pretraining, may have read them" in text


def test_the_cards_reliability_diagram_is_described_not_labelled():
    """The card's diagram had the alt text "reliability diagram": it says what the two panels plot, and on which
    examples."""
    report = {"n": 872, "accuracy": 0.9, "ece_before": 0.07, "ece_after": 0.03, "nll_before": 0.4, "nll_after": 0.3,
              "mean_confidence_before": 0.95, "mean_confidence_after": 0.87}
    cal = {"temperature": 2.0, "bins": 15, "calibration": {"n": 20}, "dev": report, "diagram": "reliability.png"}
    image = next(line for line in calibrate.calibration_markdown(cal).splitlines() if line.startswith("!["))
    alt = image.removeprefix("![").removesuffix("](reliability.png)")
    assert "the dev set (872 examples)" in alt and "before and after temperature scaling" in alt
    assert "accuracy per confidence bin" in alt and "diagonal of perfect calibration" in alt


def test_recalibrate_cli_says_when_t_is_at_its_bound(tiny_clf_dir, train_files, tmp_path, monkeypatch, capsys):
    import shutil

    folder = shutil.copytree(tiny_clf_dir, tmp_path / "clf")
    monkeypatch.setattr(evaluate, "classifier_logits",
                        lambda model, tok, texts, *args, **kwargs: no_signal(len(texts))[0])
    assert calibrate.main([str(folder), "--calibration-data", str(train_files / "train.tsv"), "--all"]) == 0
    out = capsys.readouterr().out
    assert "note: calibration: T at its upper bound 20: the model's confidence carries no signal" in out
    assert "T = 20.0000 (at its bound)" in out
    metrics = json.loads((folder / "metrics.json").read_text())
    assert metrics["calibration"]["notes"][0].startswith("T at its upper bound 20")


def test_reliability_diagram(tmp_path, monkeypatch):
    """Before (T = 1) and after (the fitted T), each panel's bars the accuracy of its bins and its title its ECE."""
    z, labels = synthetic(n=500)
    drawn = []
    save = calibrate.save_figure
    monkeypatch.setattr(calibrate, "save_figure", lambda fig, path: drawn.append(fig) or save(fig, path))
    path = calibrate.plot_reliability(z, labels, 2.5, tmp_path / "reliability.png", title="synthetic")
    assert path.is_file() and path.stat().st_size > 10_000
    before, after = drawn[0].axes
    for ax, t in ((before, 1.0), (after, 2.5)):
        probs = calibrate.probabilities(z, t)
        assert f"(ECE {calibrate.expected_calibration_error(probs, labels):.1%})" in ax.get_title()
        accuracy = [b["accuracy"] for b in calibrate.reliability_bins(probs, labels) if b["n"]]
        heights = [bar.get_height() for bar in ax.containers[0]]  # the first bars: accuracy per bin
        assert heights == pytest.approx(accuracy)
        # the gap bars' edge is opaque: a greyscale print still shows where each gap ends
        gaps = [bar for container in ax.containers[1:] for bar in container]
        assert gaps and all(bar.get_edgecolor()[3] == 1 for bar in gaps)
        # and at least 3:1 (WCAG 1.4.11) against the white above an accuracy bar and against the accuracy bar, which
        # an under-confident bin's gap is drawn on (its brown edge was 1.2:1 there): the ratio of two colours is
        # the ratio of their ratios against white
        accuracy = contrast_with_white(ax.containers[0][0].get_facecolor())
        for bar in gaps:
            edge = contrast_with_white(bar.get_edgecolor())
            assert edge >= 3 and max(edge, accuracy) / min(edge, accuracy) >= 3, (bar.get_edgecolor(), edge, accuracy)
    assert before.get_title() != after.get_title() and after.get_title().startswith("after: T = 2.5")
    for axis in (before.xaxis, before.yaxis, after.xaxis, after.yaxis):  # in % as the app shows a probability
        assert axis.get_major_formatter().format_ticks([0.5, 0.75, 1.0]) == ["50%", "75%", "100%"]


def test_the_reliability_legend_names_every_colour_drawn_and_covers_no_bar(tmp_path, monkeypatch):
    """The legend sat in the first panel's upper left corner, over the bars of its lowest bins, and named one gap
    colour: an under-confident bin's gap, a translucent orange drawn on its blue accuracy bar, came out a mauve it
    did not show. Every bar is opaque now (the colour drawn is its own), each colour is a legend entry's (the
    under-confident gap's hatch too), and the one legend lies under the panels, clear of every bar and of the
    axes."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.colors import to_hex
    from matplotlib.patches import Rectangle

    z, labels = synthetic(n=500)  # over-confident bins before the temperature, under-confident ones too
    drawn = []
    save = calibrate.save_figure
    monkeypatch.setattr(calibrate, "save_figure", lambda fig, path: drawn.append(fig) or save(fig, path))
    calibrate.plot_reliability(z, labels, 2.5, tmp_path / "reliability.png", title="synthetic")
    fig = drawn[0]
    bars = [bar for ax in fig.axes for bar in ax.patches]
    assert all(bar.get_facecolor()[3] == 1 for bar in bars)  # opaque: nothing blends into a colour of its own
    drawn_colours = {(to_hex(bar.get_facecolor()), bar.get_hatch() or "") for bar in bars}
    assert {colour for colour, _ in drawn_colours} == {calibrate.ACCURACY_COLOUR, calibrate.OVER_COLOUR,
                                                      calibrate.UNDER_COLOUR}  # both kinds of gap are drawn
    legends = fig.legends + [ax.get_legend() for ax in fig.axes if ax.get_legend()]
    assert len(legends) == 1
    legend = legends[0]
    handles = legend.legend_handles
    shown = {(to_hex(h.get_facecolor()), h.get_hatch() or "") for h in handles if isinstance(h, Rectangle)}
    assert drawn_colours <= shown
    named = dict(zip([t.get_text() for t in legend.get_texts()], handles))
    assert set(named) == {"accuracy", "perfect calibration", *calibrate.GAP_LABELS.values()}
    assert to_hex(named["perfect calibration"].get_color()) == to_hex(fig.axes[0].lines[0].get_color())
    canvas = FigureCanvasAgg(fig)  # drawn again, laid out as saved (pyplot let go of it)
    canvas.draw()
    renderer = canvas.get_renderer()
    box = legend.get_window_extent(renderer)
    assert not any(box.overlaps(bar.get_window_extent(renderer)) for bar in bars)
    assert not any(box.overlaps(ax.get_window_extent(renderer)) for ax in fig.axes)
    assert box.x0 >= 0 and box.y0 >= 0 and box.x1 <= fig.bbox.width and box.y1 <= fig.bbox.height  # not cut off
    # a panel's x-axis title stays clear of it
    assert all(box.y1 <= ax.xaxis.label.get_window_extent(renderer).y0 for ax in fig.axes)


# ----- the held-out calibration slice -----
def test_calibration_split_holds_out_whole_sentences_and_their_phrases():
    sentences = [f"the film number {i} is good" for i in range(20)] + [f"a dull movie {i}" for i in range(20)]
    phrases = ["the film number 3", "is good", "number 3 is", "a dull movie 7", "dull movie", "unrelated words"]
    texts = sentences + phrases + ["is good"]  # a duplicate row
    train, cal, removed = calibrate.calibration_split(texts, 5, seed=0)
    assert train == calibrate.calibration_split(texts, 5, seed=0)[0]  # deterministic
    assert len(cal) == 5 and not set(train) & set(cal)
    picked = [texts[i] for i in cal]
    assert all(t in sentences or t == "unrelated words" for t in picked)  # only texts no other text contains
    for i in train:  # nothing kept for training is part of a held-out sentence
        assert not any(f" {texts[i]} " in f" {p} " for p in picked)
    assert len(train) + len(cal) + removed == len(texts)
    _, cal_other, _ = calibrate.calibration_split(texts, 5, seed=1)
    assert cal_other != cal
    train_r, cal_r, removed_r = calibrate.calibration_split(texts, 5, mode="random")
    assert len(cal_r) == 5 and len(train_r) + 5 + removed_r == len(texts)
    assert calibrate.calibration_split(texts, 0) == (list(range(len(texts))), [], 0)
    with pytest.raises(ValueError, match="nothing would be left"):
        calibrate.calibration_split(texts, 1000)


def test_no_training_row_reads_as_a_held_out_one():
    """The model reads every text normalised (lower-cased, detokenized: `normalize_for_classifier`), but the
    calibration and dev slices removed training copies by their text as written: "Team 3 wins" held out and "team 3
    wins" trained on is one input the model trained on (43 of 100 calibration rows and 53 of 130 dev rows of a
    user's file with case variants). Training rows that read as a held-out row are removed too, and counted with the
    rows the slice removed, in both modes and for the dev slice drawn from what the calibration slice left."""
    read = roberta.text.normalize_for_classifier
    base = [f"Team {i} wins the match number {i} at home" for i in range(60)]
    texts = base + [t.lower() for t in base[:30]] + [t.upper() for t in base[30:]]
    for mode in ("random", "sentences"):
        train, cal, removed = calibrate.calibration_split(texts, 20, seed=0, mode=mode)
        held = {read(texts[i]) for i in cal}
        assert not [texts[i] for i in train if read(texts[i]) in held], mode
        copies = [i for i in range(len(texts)) if i not in cal and read(texts[i]) in held]
        assert removed == len(copies) > 0 and len(train) + len(cal) + removed == len(texts)
        kept, dev, dev_removed = finetune.draw_dev(texts, train, {"n": 15, "seed": 0, "split": mode, "fraction": 0.1})
        held_dev = {read(texts[i]) for i in dev}
        assert not [texts[i] for i in kept if read(texts[i]) in held_dev | held], mode
        assert dev_removed == len([i for i in train if i not in dev and read(texts[i]) in held_dev])


@pytest.mark.slow  # SST-2 train read and split, a few seconds
def test_sst2_keeps_its_split_and_its_default_slice_is_not_warned_about(shared_file, tmp_path, capsys):
    """The shipped recipe stays reproducible: keying the draw by the normalised texts would change SST-2's slice and
    training rows (SST-2's tokenized sub-phrases, "does n't", stop being word spans once detokenized), so the draw
    stays keyed by the written text, and removing the normalised copies after it removes none of SST-2's rows (no
    two of its distinct texts read alike). Its default slice, 1,000 sentences and their sub-phrases, holds out less
    than the share `held_out_warning` warns about."""
    train = str(shared_file("sst2/train.tsv"))
    texts = tables.read_labeled(train)[0]
    distinct = {text.strip() for text in texts}
    assert len({roberta.text.normalize_for_classifier(text) for text in distinct}) == len(distinct)
    args = finetune.parse_args(["--init", "x", "--train", train, "--imdb", "", "--out", str(tmp_path / "run")])
    train_rows, cal_rows, _, held_out = finetune.split_training_data(args, texts, None)
    assert len(cal_rows) == 1000 and len(train_rows) + 1000 + held_out["calibration_removed_train_rows"] == len(texts)
    assert finetune.held_out_warning(args, len(texts), held_out, len(cal_rows), 0) is None
    finetune.read_data(args, args.id2label())
    assert "warning" not in capsys.readouterr().err


def test_a_slice_is_not_drawn_again_from_a_training_file_that_changed(train_files, tmp_path, capsys):
    """train.evaluate --dev-slice, train.calibrate and train.average draw a run's dev and calibration slices again from
    its training file: after 50 rows were appended, the draw picked other rows, some of them trained on, and the
    figure was recorded as held out without a word. The slices record the rows fine-tuning read (their count and a
    digest); a redraw from a file whose rows differ is refused in one line naming the file, and a missing file says
    it is the one fine-tuning drew the slice from. A record from before the digest is drawn again unchecked, with a
    note."""
    train = tmp_path / "mine.tsv"
    shutil.copy(train_files / "train.tsv", train)
    args = finetune.parse_args(finetune_argv(train_files, tmp_path / "clf", "--init", "x", "--imdb", "", "--train",
                                             str(train), "--dev-fraction", "0.2"))
    labels = args.id2label()
    read = finetune.read_data(args, labels)
    dev_spec = read.dev_slice
    cal_spec = {"data": str(train), "n": 40, "seed": 0, "split": "sentences", **read.train_record}  # as run() records
    assert dev_spec["data_rows"] == read.train_record["data_rows"] == 300
    assert finetune.held_out_dev(dev_spec, labels) == (read.dev_texts, read.dev_labels)
    assert calibrate.held_out_slice(cal_spec, labels) == (read.cal_texts, read.cal_labels)
    original = train.read_text()
    with train.open("a") as f:
        f.write("a row appended after fine-tuning\t1\n")
    changed = f"{train} changed since fine-tuning drew the "
    with pytest.raises(ValueError) as err:
        finetune.held_out_dev(dev_spec, labels, fix="score a file of your own with --labeled FILE")
    assert str(err.value) == (f"{changed}dev slice (metrics.json dev_slice) from it (300 rows then, 301 now): it "
                              "cannot be drawn again, the held-out rows would not be the ones held out; score a file "
                              "of your own with --labeled FILE")
    with pytest.raises(ValueError, match=f"^{changed}calibration slice .* the held-out rows would not be the ones"):
        calibrate.held_out_slice(cal_spec, labels)
    first, rest = original.split("\n", 1)
    row, others = rest.split("\n", 1)
    text, label = row.rsplit("\t", 1)
    train.write_text(f"{first}\n{text}\t{1 - int(label)}\n{others}")  # as many rows, one label changed
    with pytest.raises(ValueError, match=r"\(its 300 rows hold other texts or labels\): it cannot be drawn again"):
        finetune.held_out_dev(dev_spec, labels)
    old = {key: value for key, value in dev_spec.items() if not key.startswith("data_")}  # before the digest
    train.write_text(original)
    capsys.readouterr()
    assert finetune.held_out_dev(old, labels) == (read.dev_texts, read.dev_labels)
    assert f"records no digest of {train} " in capsys.readouterr().err
    train.unlink()
    with pytest.raises(FileNotFoundError, match=r"fine-tuning drew the dev slice \(metrics.json dev_slice\) from this "
                                                r"file, and it is drawn again from there; put it back"):
        finetune.held_out_dev(dev_spec, labels)


def test_a_temperature_that_makes_dev_calibration_worse_is_warned_about(monkeypatch, capsys):
    """A run printed "T 0.688, dev ECE 0.0658 -> 0.1244" and nothing else: the temperature fitted on its 100
    calibration examples nearly doubled the dev set's calibration error, and the user was told the model was
    calibrated. A `warning:` line says so, with the figures, when the dev ECE gets worse, and nothing when it does
    not."""
    right = torch.tensor([[0.0, 0.4]] * 16 + [[0.4, 0.0]] * 4 + [[0.0, 0.4]] * 2)  # small margins, mostly right
    right_labels = [1] * 16 + [0] * 6
    dev = torch.tensor([[0.0, 0.4]] * 10 + [[0.4, 0.0]] * 10)  # the same margins, 60% right
    dev_labels = [1] * 6 + [0] * 4 + [0] * 6 + [1] * 4
    model = type("Model", (), {"config": type("Config", (), {})()})()
    for calibration, worse in (((right, right_labels), True), ((dev, dev_labels), False)):
        logits = iter([calibration[0], dev])  # the calibration slice's, then the dev set's
        monkeypatch.setattr(evaluate, "classifier_logits", lambda *args, **kwargs: next(logits))
        result = calibrate.calibrate(model, None, (["a text"] * len(calibration[1]), calibration[1]),
                                     (["a text"] * 20, dev_labels))
        d = result["dev"]
        assert (d["ece_after"] > d["ece_before"]) == worse
        warned = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning:")]
        assert warned == ([f"warning: the temperature T = {result['temperature']:.3f}, fitted on "
                           f"{len(calibration[1])} calibration examples, makes the dev set's calibration worse: ECE "
                           f"{d['ece_before']:.4f} -> {d['ece_after']:.4f} (mean confidence "
                           f"{d['mean_confidence_before']:.1%} -> {d['mean_confidence_after']:.1%} at an accuracy of "
                           f"{d['accuracy']:.1%}): read the probabilities as rough; a larger calibration slice "
                           "(--calibration-n) fits T better"] if worse else [])


def test_the_advice_of_a_dev_calibration_warning_fits_what_the_temperature_was_fitted_on(tiny_clf_dir, train_files,
                                                                                         tmp_path, monkeypatch,
                                                                                         capsys):
    """After `train.calibrate RUN --calibration-data FILE --all` the warning that T makes the dev set's calibration
    worse advised "a larger calibration slice (--calibration-n)": --all fits every row of the file, no slice to
    enlarge, and --calibration-n is refused beside it. A T fitted on every row of a file asks for more rows; a T
    fitted on a slice (here --calibration-n 40), for a larger slice."""
    folder = shutil.copytree(tiny_clf_dir, tmp_path / "clf")
    rows = (train_files / "dev.tsv").read_text().splitlines()[1:]
    label_of = {text: int(label) for text, label in (row.split("\t") for row in rows)}
    scorings = []

    def classifier_logits(model, tokenizer, texts, *args, **kwargs):  # small margins: the calibration rows 90% right,
        right_share = 0.9 if not scorings else 0.6  # then the dev set's 60%: T sharpens them, dev gets worse
        scorings.append(texts)
        right = [i < right_share * len(texts) for i in range(len(texts))]
        return torch.tensor([[0.0, 0.4] if (label_of[text] == 1) == ok else [0.4, 0.0]
                             for text, ok in zip(texts, right)])

    monkeypatch.setattr(evaluate, "classifier_logits", classifier_logits)

    def warning(*options) -> str:
        scorings.clear()
        assert calibrate.main([str(folder), "--calibration-data", str(train_files / "dev.tsv"), "--dev",
                               str(train_files / "dev.tsv"), *options]) == 0
        return next(line for line in capsys.readouterr().err.splitlines() if line.startswith("warning:"))

    whole = warning("--all")
    assert "fitted on 60 calibration examples" in whole and "--calibration-n" not in whole
    assert whole.endswith("read the probabilities as rough; more labelled examples the model was not trained on (a "
                          "larger --calibration-data file) fit T better"), whole
    assert warning("--calibration-n", "40", "--calibration-split", "random").endswith(
        "read the probabilities as rough; a larger calibration slice (--calibration-n) fits T better")


def test_a_refit_on_a_whole_file_can_be_fitted_again_on_the_slice_it_recorded(tiny_clf_dir, train_files, tmp_path,
                                                                               capsys):
    """After `train.calibrate RUN --calibration-data FILE --all`, a plain `train.calibrate RUN` (which refits on the
    slice metrics.json records) stopped with "--calibration-split must be 'sentences' or 'random', got 'all'". The
    recorded slice, all of the file with its rows' record, is fitted on again: the same temperature."""
    folder = shutil.copytree(tiny_clf_dir, tmp_path / "clf")
    assert calibrate.main([str(folder), "--calibration-data", str(train_files / "dev.tsv"), "--all"]) == 0
    first = json.loads((folder / "metrics.json").read_text())["calibration"]
    assert first["slice"]["split"] == "all" and first["slice"]["data_rows"] == first["calibration"]["n"]
    assert calibrate.main([str(folder)]) == 0, capsys.readouterr().err
    again = json.loads((folder / "metrics.json").read_text())["calibration"]
    assert again["temperature"] == pytest.approx(first["temperature"]) and again["slice"] == first["slice"]


def test_members_with_different_calibration_slices_are_named_with_the_way_back(tmp_path):
    """"the members do not share one calibration slice" named neither the member that differed nor how to fit it on
    its fine-tuning's slice again (plain train.calibrate reuses the last slice it was given). Each member's slice is
    named, and for a member a --calibration-data refit moved off its own slice, the command that restores it."""
    own = {"data": "mine.csv", "n": 100, "seed": 0, "split": "random", "text_column": None, "label_column": "topic"}
    other = {"data": "test.csv", "n": 200, "split": "all"}
    members = [{"calibration": {"slice": own}},
               {"calibration": {"slice": other, "held_out_from_training": False, "fine_tuning_slice": own}}]
    folders = [tmp_path / "t0", tmp_path / "t1"]
    with pytest.raises(average.AverageError) as err:
        average._shared_calibration_slice(members, tmp_path / "avg", folders)
    message = str(err.value)
    assert message.startswith(f"the members do not share one calibration slice ({folders[0]}: 100 (random) of "
                              f"mine.csv, seed 0; {folders[1]}: all of test.csv): pass --no-calibration"), message
    assert message.endswith(f"fit a member on its fine-tuning's own slice again: `python -m train.calibrate "
                            f"{folders[1]} --calibration-data mine.csv --calibration-n 100 --calibration-split random "
                            "--calibration-seed 0`")
    assert average._shared_calibration_slice(members[:1] * 2, tmp_path / "avg", folders) == own
    # the same rows by another path are one slice, as for the dev slice; other rows under the same name are not
    recorded = {**own, "data_rows": 900, "data_sha256": "a" * 64}
    moved = [{"calibration": {"slice": s}} for s in (recorded, {**recorded, "data": "/home/me/mine.csv"})]
    assert average._shared_calibration_slice(moved, tmp_path / "avg", folders) == recorded
    changed = [{"calibration": {"slice": s}} for s in (recorded, {**recorded, "data_sha256": "b" * 64})]
    with pytest.raises(average.AverageError, match="do not share one calibration slice"):
        average._shared_calibration_slice(changed, tmp_path / "avg", folders)


def test_members_with_different_dev_slices_are_named_with_what_differs(tmp_path):
    """"the members do not share one dev set (see their metrics.json dev_slice and dev_data)" named neither the member
    that differed nor how: with five seeds, the user opened five metrics.json files. The first member that differs
    from the first is named by its folder, with the dev_slice fields that differ (the choices, not the counts that
    follow from them), or the dev file it reads instead. The same rows at another path (their digest recorded) are
    one slice."""
    spec = {"data": "mine.csv", "fraction": 0.2, "n": 60, "seed": 0, "split": "random", "calibration_n": 40,
            "calibration_seed": 0, "text_column": None, "label_column": None, "removed_train_rows": 0,
            "data_rows": 300, "data_sha256": "a" * 64}
    folders = [tmp_path / "s0", tmp_path / "s1", tmp_path / "s2"]

    def refusal(*slices) -> str:
        members = [{"dev_slice": s} if s else {"dev_data": "dev.tsv"} for s in slices]
        with pytest.raises(average.AverageError) as err:
            average._shared_dev_slice(members, folders)
        return str(err.value)

    how = ("one member's held-out dev rows may be another's training rows; pass --dev with a file none of them trained "
           "on")
    assert refusal(spec, spec, {**spec, "seed": 1, "n": 59}) == (
        f"the members do not share one dev set: {folders[2]}'s dev slice (metrics.json dev_slice) differs from "
        f"{folders[0]}'s: seed 1 ({folders[0]}: 0); {how}")
    assert refusal(spec, {**spec, "fraction": 0.1, "n": 30, "split": "sentences"}, spec) == (
        f"the members do not share one dev set: {folders[1]}'s dev slice (metrics.json dev_slice) differs from "
        f"{folders[0]}'s: fraction 0.1 ({folders[0]}: 0.2), split 'sentences' ({folders[0]}: 'random'); {how}")
    assert refusal(spec, {**spec, "data_sha256": "b" * 64}, spec) == (
        f"the members do not share one dev set: {folders[1]}'s dev slice (metrics.json dev_slice) differs from "
        f"{folders[0]}'s: data 'mine.csv', other rows ({folders[0]}: 'mine.csv'); {how}")
    assert refusal(spec, spec, None) == (
        f"the members do not share one dev set: {folders[2]} reads its dev set from a file (metrics.json dev_data "
        f"'dev.tsv'), {folders[0]} holds one out of its training file (dev_slice); {how}")
    moved = {**spec, "data": "/home/me/mine.csv"}  # the same rows by another path
    assert average._shared_dev_slice([{"dev_slice": s} for s in (spec, moved, spec)], folders) == spec


# ----- the temperature in config.json, the pipeline and transformers -----
def test_temperature_is_stored_and_applied_by_the_pipeline(tiny_clf_dir, tmp_path, tokenizer):
    import shutil

    folder = tmp_path / "clf"
    shutil.copytree(tiny_clf_dir, folder)
    raw = roberta.pipeline("sentiment-analysis", model=folder, device="cpu")
    calibrate.set_temperature(folder, 3.0)
    assert json.loads((folder / "config.json").read_text())["calibration_temperature"] == 3.0
    calibrated = roberta.pipeline("sentiment-analysis", model=folder, device="cpu")
    assert calibrated.model.config.calibration_temperature == 3.0 and calibrated.temperature == 3.0
    ids, mask, _ = roberta.encode(tokenizer, ["the sea"], 64)
    with torch.no_grad():
        logits = raw.model(ids, mask).logits[0]
    want = (logits / 3.0).softmax(-1).tolist()
    got = {r["label"]: r["score"] for r in calibrated("the sea")}
    assert [got["negative"], got["positive"]] == pytest.approx(want, abs=1e-6)
    assert [r["label"] for r in calibrated("the sea")] == [r["label"] for r in raw("the sea")]  # same ranking
    calibrate.set_temperature(folder, -1.0)
    with pytest.raises(ValueError, match="calibration_temperature"):
        roberta.pipeline("sentiment-analysis", model=folder, device="cpu")("the sea")


def test_transformers_keeps_the_temperature(tiny_clf_dir, tmp_path):
    import shutil
    transformers = pytest.importorskip("transformers")

    folder = tmp_path / "clf"
    shutil.copytree(tiny_clf_dir, folder)
    calibrate.set_temperature(folder, 1.7)
    config = transformers.AutoConfig.from_pretrained(folder)
    assert config.calibration_temperature == 1.7
    model = transformers.AutoModelForSequenceClassification.from_pretrained(folder)
    assert model.config.calibration_temperature == 1.7
    ours = roberta.pipeline("text-classification", model=folder, device="cpu")("the sea")
    with torch.no_grad():
        ids, mask, _ = roberta.encode(ours and roberta.load_tokenizer(folder), ["the sea"], 64)
        probs = (model(input_ids=ids, attention_mask=mask).logits / model.config.calibration_temperature).softmax(-1)
    got = {r["label"]: r["score"] for r in ours}
    assert [got["negative"], got["positive"]] == pytest.approx(probs[0].tolist(), abs=1e-5)


# ----- behaviour checks -----
def test_checks_file_is_well_formed():
    rows = evaluate.read_checks(CHECKS)
    assert len(rows) >= 40
    categories = {r["category"] for r in rows}
    assert {"negated negative", "negated positive", "contrast", "intensifier", "neutral fact", "names"} <= categories
    assert {r["expected"] for r in rows} == {"positive", "negative", "unsure"}
    assert len({r["sentence"] for r in rows}) == len(rows)


def fixed_output_classifier(folder, bias):
    """The tiny classifier with its output forced to `bias` for every input."""
    model = roberta.RobertaForSequenceClassification.from_pretrained(folder)
    with torch.no_grad():
        model.classifier.out_proj.weight.zero_()
        model.classifier.out_proj.bias.copy_(torch.tensor(bias))
    return model


def test_checks_scoring(tiny_clf_dir, tokenizer, tmp_path):
    checks = tmp_path / "checks.tsv"
    checks.write_text("category\tsentence\texpected\nA\tgood film\tpositive\nA\tbad film\tnegative\n"
                      "B\tit is long\tunsure\n")
    model = fixed_output_classifier(tiny_clf_dir, [0.0, 2.0])  # positive at 0.88 for everything
    result = evaluate.score_checks(model, tokenizer, checks)
    assert result["categories"] == {"A": {"right": 1, "n": 2, "accuracy": 0.5},
                                    "B": {"right": 0, "n": 1, "accuracy": 0.0}}
    assert result["right"] == 1 and result["n"] == 3 and result["unsure_below"] == 0.7
    assert [i["verdict"] for i in result["items"]] == ["positive"] * 3
    model.config.calibration_temperature = 4.0  # positive at sigmoid(2 / 4) = 0.62 < 0.7: unsure
    result = evaluate.score_checks(model, tokenizer, checks)
    assert [i["verdict"] for i in result["items"]] == ["unsure"] * 3 and result["right"] == 1
    assert result["items"][0]["label"] == "positive"
    assert result["items"][0]["score"] == round(1 / (1 + math.exp(-0.5)), 4)  # sigmoid(2 / 4), kept to 4 decimals
    text = evaluate.checks_markdown(result)
    assert "| A | 0/2 | 0% |" in text and "| B | 1/1 | 100% |" in text and "good film" in text
    bad = tmp_path / "bad.tsv"
    bad.write_text("category\tsentence\texpected\nA\tgood film\tgreat\n")
    with pytest.raises(ValueError, match="great"):
        evaluate.score_checks(model, tokenizer, bad)
    bad.write_text("sentence\tlabel\ngood\t1\n")
    with pytest.raises(ValueError, match="header"):
        evaluate.read_checks(bad)


def test_a_check_sentence_shows_literally_in_the_cards_table():
    """The card's table of wrong checks escaped only `|`: a sentence with `<s>` became an HTML strikethrough on the
    Hub, and one with a line break ended its row. Every cell of it shows its text as written, on one line."""
    item = {"category": "a <b>|c", "sentence": "It was <s>bad</s> | fine,\nreally & truly.", "expected": "positive",
            "verdict": "unsure", "label": "negative", "score": 0.61, "right": False}
    checks = {"n": 1, "right": 0, "accuracy": 0.0, "unsure_below": 0.7, "items": [item],
              "categories": {item["category"]: {"right": 0, "n": 1, "accuracy": 0.0}}}
    lines = evaluate.checks_markdown(checks).splitlines()
    row = lines[-1]
    assert row == ("| a &lt;b&gt;\\|c | It was &lt;s&gt;bad&lt;/s&gt; \\| fine, really &amp; truly. | positive | "
                   "unsure (negative 0.61) |")
    assert "| a &lt;b&gt;\\|c | 0/1 | 0% |" in lines
    # read back as a Markdown table does: the row's cells, split at the pipes no backslash escapes
    cells = [c.strip() for c in re.split(r"(?<!\\)\|", row)[1:-1]]
    assert len(cells) == 4 and "<" not in row and "\n" not in row


def test_evaluate_cli_checks_and_ece(tiny_clf_dir, train_files, tmp_path, capsys):
    out = tmp_path / "metrics.json"
    assert evaluate.main(["--model", str(tiny_clf_dir), "--checks", "--labeled", str(train_files / "dev.tsv"),
                          "--out", str(out)]) == 0
    metrics = json.loads(out.read_text())
    assert metrics["checks"]["n"] == len(evaluate.read_checks(CHECKS))
    assert metrics["checks"]["source"] == "tests/data/sentiment_checks.tsv"
    assert set(metrics["checks"]["categories"]) == {r["category"] for r in evaluate.read_checks(CHECKS)}
    assert 0 <= metrics["labeled"]["ece"] <= 1 and metrics["labeled"]["temperature"] == 1.0
    assert metrics["labeled"]["ece"] == pytest.approx(metrics["labeled"]["ece_uncalibrated"])
    assert metrics["labeled"]["loss_calibrated"] == pytest.approx(metrics["labeled"]["loss"])  # T = 1
    assert "| negated negative |" in capsys.readouterr().out


def test_evaluate_reports_the_log_loss_with_the_temperature_beside_the_raw_logits(tiny_clf_dir, train_files,
                                                                                  tmp_path):
    """"loss" was the raw logits' beside the calibrated ECE (the shipped card's 0.311 after T, printed 0.386)."""
    import torch.nn.functional as F

    from train.tables import read_labeled

    folder = shutil.copytree(tiny_clf_dir, tmp_path / "calibrated")
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "calibration_temperature": 2.5}))
    out = tmp_path / "metrics.json"
    assert evaluate.main(["--model", str(folder), "--labeled", str(train_files / "dev.tsv"), "--out", str(out)]) == 0
    labeled = json.loads(out.read_text())["labeled"]
    model, tokenizer = evaluate.load_model(str(folder))
    texts, labels, _ = read_labeled(str(train_files / "dev.tsv"))
    logits = evaluate.classifier_logits(model, tokenizer, texts, 8)
    gold = torch.tensor(labels)
    assert labeled["loss"] == pytest.approx(F.cross_entropy(logits, gold).item(), rel=1e-4)
    assert labeled["loss_calibrated"] == pytest.approx(F.cross_entropy(logits / 2.5, gold).item(), rel=1e-4)
    assert labeled["loss_calibrated"] != pytest.approx(labeled["loss"], rel=1e-3)


NOT_SOFTMAX = {  # a classifier whose scores are no softmax over its labels: problem_type, labels, as it is named
    "multi-label": ("multi_label_classification", {0: "negative", 1: "positive"},
                    "a multi-label classifier (config.problem_type 'multi_label_classification': a sigmoid per label)"),
    "regression": ("regression", {0: "score"}, "a regression model (config.problem_type 'regression': raw outputs)"),
    "one output": (None, {0: "positive"}, "a one-output classifier (num_labels 1: a sigmoid of its logit)"),
}


def test_every_rule_that_scores_a_classifier_with_no_softmax_is_worded():
    """`require_softmax` words the rule of `roberta.pipelines.score_rule` that decided: a second copy of the
    problem_type rule, keyed on problem_type, fell back to the one-output words for any key it did not know."""
    from roberta.pipelines import SCORE_RULES

    assert set(calibrate.NOT_SOFTMAX_SAID) == {rule for rule, kind in SCORE_RULES.items() if kind != "softmax"}


@pytest.mark.parametrize("kind", NOT_SOFTMAX)
def test_evaluate_and_calibrate_refuse_a_classifier_whose_scores_are_no_softmax(kind, tokenizer, tmp_path, capsys):
    """Their probabilities, temperature, log-loss, ECE and checks' verdicts are a softmax's over the labels, one
    label per text: a multi-label Hub model (its pipeline, and so the app, shows a sigmoid per label:
    `roberta.pipelines.scores_of`) was scored on a softmax the app never shows, a one-output model on a softmax of
    one logit (always 1), a regression's outputs as probabilities. Refused in one line that names why, before any
    data is read (the files given are not there)."""
    problem, labels, said = NOT_SOFTMAX[kind]
    folder = tmp_path / "model"
    config = roberta.RobertaConfig.from_preset("tiny", tokenizer=tokenizer, id2label=labels, problem_type=problem)
    roberta.RobertaForSequenceClassification(config).save_pretrained(folder)
    tokenizer.save(str(folder / "tokenizer.json"))
    saved = {path.name: path.read_bytes() for path in folder.iterdir()}
    gone = str(tmp_path / "gone.tsv")
    for data in (["--labeled", gone], ["--dev-slice"], ["--imdb", gone], ["--checks", gone]):
        refused(evaluate.main, ["--model", str(folder), *data], capsys, f"error: {folder} is {said}; ",
                "need a single-label classifier (a softmax over its labels)")
    for options in (["--calibration-data", gone], ["--plot-only", "--dev", gone]):
        refused(calibrate.main, [str(folder), *options], capsys, f"error: {folder} is {said}; ",
                "temperature scaling needs a single-label classifier (a softmax over its labels)")
    assert {path.name: path.read_bytes() for path in folder.iterdir()} == saved  # nothing written


# ----- layer-wise lr decay -----
def test_layer_lr_decay_groups(tiny_clf_dir):
    model = roberta.RobertaForSequenceClassification.from_pretrained(tiny_clf_dir)  # 2 layers
    groups = finetune.layer_decay_groups(model, 0.1, 0.5)
    scale = {id(p): g["lr_scale"] for g in groups for p in g["params"]}
    decay = {id(p): g["weight_decay"] for g in groups for p in g["params"]}
    named = dict(model.named_parameters())
    assert len(scale) == len(named)
    assert scale[id(named["classifier.out_proj.weight"])] == 1.0
    assert scale[id(named["roberta.encoder.layer.1.attention.self.query.weight"])] == 0.5
    assert scale[id(named["roberta.encoder.layer.0.output.dense.weight"])] == 0.25
    assert scale[id(named["roberta.embeddings.word_embeddings.weight"])] == 0.125
    assert decay[id(named["roberta.embeddings.LayerNorm.weight"])] == 0.0
    assert decay[id(named["roberta.embeddings.word_embeddings.weight"])] == 0.1


def test_finetune_with_layer_lr_decay_scales_the_lr(train_files, tmp_path, tiny_mlm_dir, monkeypatch):
    seen = []
    original = trainer.Trainer._train_step

    def spy(self, time_up):
        out = original(self, time_up)
        seen.append(sorted({round(g["lr"] / out[1], 6) for g in self.optimizer.param_groups}))
        return out

    monkeypatch.setattr(trainer.Trainer, "_train_step", spy)
    out = tmp_path / "llrd"
    assert finetune.main(finetune_argv(train_files, out, "--init", str(tiny_mlm_dir), "--layer-lr-decay", "0.5")) == 0
    assert seen and seen[-1] == [0.125, 0.25, 0.5, 1.0]  # embeddings, layer 1, layer 2, head
    assert json.loads((out / "metrics.json").read_text())["layer_lr_decay"] == 0.5
    assert finetune.main(finetune_argv(train_files, tmp_path / "bad", "--init", str(tiny_mlm_dir),
                                       "--layer-lr-decay", "1.5")) == runtime.EXIT_USER_ERROR


# ----- two stages: IMDB-like reviews, then SST-2-like sentences -----
@pytest.fixture(scope="module")
def two_stage(train_files, tiny_mlm_dir, tmp_path_factory):
    """Stage 1 trains on a file that holds the IMDB evaluation sample's reviews; stage 2 starts from it."""
    tmp = tmp_path_factory.mktemp("two-stage")
    reviews = tmp / "reviews.tsv"  # imdb.tsv's 60 reviews (the evaluation sample is drawn from it) + 100 more
    rows = (train_files / "imdb.tsv").read_text().splitlines()[1:] + \
        (train_files / "train.tsv").read_text().splitlines()[1:101]
    reviews.write_text("text\tlabel\n" + "\n".join(rows) + "\n")
    stage1, stage2 = tmp / "imdb", tmp / "imdb-sst2"
    argv = finetune_argv(train_files, stage1, "--init", str(tiny_mlm_dir), "--train", str(reviews),
                         "--calibration-n", "0", "--max-length", "32")
    assert finetune.main(argv) == 0
    assert finetune.main(finetune_argv(train_files, stage2, "--init", str(stage1))) == 0
    return stage1, stage2


@pytest.mark.slow  # end-to-end script run, several seconds
def test_two_stage_finetune(two_stage, tiny_mlm_dir):
    stage1, stage2 = two_stage
    m1 = json.loads((stage1 / "metrics.json").read_text())
    # the 20 sampled reviews are in the stage-1 training file and were held out of it (with any duplicates)
    removed = m1["imdb_sample_removed_from_training"]
    assert removed >= 20 and m1["train_examples"] == 160 - removed
    assert m1["temperature"] == 1.0 and "calibration" not in m1 and m1["calibration_examples"] == 0
    assert not (stage1 / calibrate.RELIABILITY_NAME).exists()
    m2 = json.loads((stage2 / "metrics.json").read_text())
    assert m2["init"] == str(stage1) and m2["init_gave"] == "encoder and classifier head"
    assert m2["init_root"] == str(tiny_mlm_dir)
    assert m2["calibration_examples"] == 40 and m2["train_examples"] + 40 + m2["calibration_removed_train_rows"] <= 300
    # stage 2's first evaluation is the stage-1 model itself (same weights, head included)
    first = [e for e in reporting.read_log(stage2 / "log.jsonl") if e["type"] == "eval"][0]
    model1 = roberta.RobertaForSequenceClassification.from_pretrained(stage1)
    tok = roberta.load_tokenizer(stage1)
    dev = json.loads((stage1 / "metrics.json").read_text())["dev_data"]
    from train.tables import read_labeled
    texts, labels, _ = read_labeled(dev)
    assert first["accuracy"] == pytest.approx(evaluate.evaluate_classifier(model1, tok, texts, labels)["accuracy"])
    # the tokenizer lower-cases once, not once per stage
    assert json.loads((stage2 / "tokenizer.json").read_text())["normalizer"] == \
        json.loads((stage1 / "tokenizer.json").read_text())["normalizer"]


def test_finetune_calibrates_and_reports(two_stage):
    _, out = two_stage
    metrics = json.loads((out / "metrics.json").read_text())
    config = json.loads((out / "config.json").read_text())
    cal = metrics["calibration"]
    assert config["calibration_temperature"] == pytest.approx(cal["temperature"]) == \
        pytest.approx(metrics["temperature"])
    assert calibrate.T_MIN <= cal["temperature"] <= calibrate.T_MAX
    assert cal["calibration"]["nll_after"] <= cal["calibration"]["nll_before"] + 1e-6  # fitted on that slice
    assert cal["dev"]["n"] == 60 and 0 <= cal["dev"]["ece_after"] <= 1
    assert metrics["dev_ece"] == pytest.approx(cal["dev"]["ece_after"], abs=1e-6)
    assert metrics["dev_ece_uncalibrated"] == pytest.approx(cal["dev"]["ece_before"])
    assert cal["slice"] == {"data": metrics["train_data"], "n": 40, "seed": 0, "split": "sentences",
                            "text_column": None, "label_column": None,  # and the rows read, to check a redraw by
                            **tables.rows_record(*tables.read_labeled(metrics["train_data"])[:2])}
    assert (out / calibrate.RELIABILITY_NAME).is_file()
    assert metrics["checks"]["n"] == len(evaluate.read_checks(CHECKS))
    card = (out / "README.md").read_text()
    assert "## Calibration" in card and "## Behaviour checks" in card and "| negated positive |" in card
    assert "reliability.png" in card and "calibration_temperature" in card
    assert "chose no checkpoint" in card
    # the pipeline gives the calibrated probabilities
    model = roberta.RobertaForSequenceClassification.from_pretrained(out)
    assert model.config.calibration_temperature == pytest.approx(cal["temperature"])


def test_recalibrate_cli(two_stage, tmp_path):
    import shutil

    folder = tmp_path / "copy"
    shutil.copytree(two_stage[1], folder)
    before = json.loads((folder / "metrics.json").read_text())["calibration"]["temperature"]
    calibrate.set_temperature(folder, 1.0)
    assert calibrate.main([str(folder)]) == 0  # the slice from metrics.json: the same fit again
    # equal up to float reductions: fine-tuning and this refit may split the logits' sums over different thread
    # counts (2.3e-4 apart on a shared 2-core Xeon; another slice moves it by far more)
    assert json.loads((folder / "config.json").read_text())["calibration_temperature"] == \
        pytest.approx(before, rel=1e-3)
    assert calibrate.main([str(folder), "--calibration-data", str(two_stage[0].parent / "reviews.tsv"), "--all"]) == 0
    metrics = json.loads((folder / "metrics.json").read_text())
    assert metrics["calibration"]["slice"]["split"] == "all" and metrics["calibration"]["calibration"]["n"] == 160
    # the top-level figures follow the new temperature (train.average and the cards read them)
    assert metrics["temperature"] == json.loads((folder / "config.json").read_text())["calibration_temperature"]
    if "dev" in metrics["calibration"]:
        assert metrics["dev_ece"] == metrics["calibration"]["dev"]["ece_after"]
    # the behaviour checks are scored again with the new T, and the card shows the new figures, the rest kept
    new_t = metrics["temperature"]
    assert new_t != pytest.approx(before, rel=1e-3)
    assert metrics["checks"]["temperature"] == pytest.approx(new_t)
    assert metrics["checks"] == evaluate.score_checks(roberta.RobertaForSequenceClassification.from_pretrained(folder),
                                                      roberta.load_tokenizer(folder), CHECKS, 32,
                                                      metrics["checks"]["unsure_below"], metrics["max_length"])
    card = (folder / "README.md").read_text()
    assert f"**T = {new_t:.3f}**" in card and f"**T = {before:.3f}**" not in card
    # reviews.tsv holds rows stage 2 trained on: the card no longer says they were held out (it did)
    assert f"| temperature | {new_t:.4g} |" in card and "160 examples (all of `" in card
    assert "not the slice fine-tuning held out" in card and "held-out examples" not in card
    assert metrics["calibration"][calibrate.HELD_OUT] is False
    assert metrics["calibration"][calibrate.OWN_SLICE]["n"] == 40  # fine-tuning's own slice, kept
    assert "| dev_ece_uncalibrated |" in card and "| checks |" not in card  # the table, without the sections' figures
    assert card.count("## Calibration") == card.count("## Behaviour checks") == card.count("## Metrics") == 1
    assert "chose no checkpoint" in card and "## Usage" in card  # the Notes and the rest of the card as they were
    assert sorted(p.name for p in folder.iterdir() if p.name.startswith(".")) == []  # no temporary file left


def test_plot_only_redraws_the_diagram_with_the_stored_temperature_and_writes_nothing_else(two_stage, tmp_path,
                                                                                         capsys, monkeypatch):
    """A shipped figure titled by older code ("imdb-sst2-avg: ../shared/data/sst2/dev.tsv") could only be redrawn
    by refitting, which rewrote config.json, metrics.json and the card too."""
    import shutil

    from roberta.run_metrics import dataset_name, dataset_said

    folder = tmp_path / "copy"
    shutil.copytree(two_stage[1], folder)
    (folder / calibrate.RELIABILITY_NAME).write_bytes(b"an old figure")
    kept = {p.name: p.read_bytes() for p in folder.iterdir() if p.name != calibrate.RELIABILITY_NAME}
    metrics = json.loads((folder / "metrics.json").read_text())
    drawn = []
    save = calibrate.save_figure
    monkeypatch.setattr(calibrate, "save_figure", lambda fig, path: drawn.append(fig) or save(fig, path))
    assert calibrate.main([str(folder), "--plot-only"]) == 0
    assert {p.name: p.read_bytes() for p in folder.iterdir() if p.name != calibrate.RELIABILITY_NAME} == kept
    assert (folder / calibrate.RELIABILITY_NAME).read_bytes()[:4] == b"\x89PNG"
    (figure,) = drawn
    assert figure._suptitle.get_text() == f"held out: {dataset_said(dataset_name(metrics['dev_data']))}"
    assert figure.axes[1].get_title().startswith(f"after: T = {metrics['temperature']:.3g}  (ECE ")
    out = capsys.readouterr().out  # the stored figures again (float reductions aside), and metrics.json's beside
    t, ece = out.split(" (metrics.json: ")[0].removeprefix("T = ").split(" (config.json's, not refitted); dev ECE ")
    assert float(t) == pytest.approx(metrics["temperature"], abs=1e-4)
    assert [float(x) for x in ece.split(" -> ")] == pytest.approx([metrics["dev_ece_uncalibrated"],
                                                                     metrics["dev_ece"]], abs=1e-3)
    assert f"(metrics.json: {metrics['dev_ece_uncalibrated']:.4f} -> {metrics['dev_ece']:.4f}); wrote " in out
    with pytest.raises(SystemExit):  # a refit's options with --plot-only: refused, not ignored
        calibrate.main([str(folder), "--plot-only", "--calibration-data", str(folder / "x.tsv")])


@pytest.mark.slow  # end-to-end script run, several seconds
def test_recalibrate_and_plot_only_use_the_dev_slice_held_out_of_the_training_file(train_files, tiny_mlm_dir, tmp_path,
                                                                                   capsys, monkeypatch):
    """A classifier fine-tuned with --dev-fraction records no dev file, only the slice it held out (dev_slice): a refit
    reported no dev ECE and left dev_ece at the old temperature's figure, and --plot-only stopped ("names no dev set
    ... pass --dev"). Both draw the recorded slice again: the refit on fine-tuning's own slices gives fine-tuning's
    figures back, and the diagram is titled by the slice."""
    run = tmp_path / "held"
    argv = finetune_argv(train_files, run, "--init", str(tiny_mlm_dir), "--dev-fraction", "0.2", "--dev-seed", "1")
    argv[argv.index("--dev"):argv.index("--dev") + 2] = []  # no dev file
    assert finetune.main(argv) == 0
    before = json.loads((run / "metrics.json").read_text())
    assert "dev_data" not in before and before["calibration"]["dev"]["n"] == 60
    capsys.readouterr()
    calibrate.set_temperature(run, 1.0)
    assert calibrate.main([str(run)]) == 0
    printed = capsys.readouterr().out
    after = json.loads((run / "metrics.json").read_text())
    assert after["calibration"]["dev"]["n"] == 60 and "; dev ECE " in printed
    assert after["temperature"] == pytest.approx(before["temperature"], rel=1e-3)
    assert after["dev_ece"] == after["calibration"]["dev"]["ece_after"] == pytest.approx(before["dev_ece"], abs=1e-3)
    assert after["calibration"]["dev"]["accuracy"] == before["dev_accuracy"]  # the same 60 rows
    drawn = []
    save = calibrate.save_figure
    monkeypatch.setattr(calibrate, "save_figure", lambda fig, path: drawn.append(fig) or save(fig, path))
    assert calibrate.main([str(run), "--plot-only"]) == 0, capsys.readouterr().err
    (figure,) = drawn
    title = figure._suptitle.get_text()  # as fine-tuning titled its diagram
    assert title == finetune.dev_title(None, before["dev_slice"]) and title.startswith("dev: 60 whole sentences of ")
    assert title.endswith("/train.tsv held out from fine-tuning, seed 1")
    assert "dev ECE " in capsys.readouterr().out


def test_recalibrate_counts_the_checks_file_as_it_is_and_a_failed_write_ends_in_one_line(two_stage, tmp_path, capsys,
                                                                                      monkeypatch):
    """The re-scored behaviour checks were printed over the old file's count ("40/47 -> 5/47" for a file of 6), and
    a write that failed after the fit (a full disk) ended in a traceback, leaving the folder's temporary figure
    folder behind: now the new file's count, and one error line saying how to go on."""
    import errno

    folder = Path(shutil.copytree(two_stage[1], tmp_path / "copy"))
    metrics = json.loads((folder / "metrics.json").read_text())
    fewer = tmp_path / "six.tsv"
    fewer.write_text("".join(CHECKS.read_text().splitlines(keepends=True)[:7]))  # the header and 6 checks
    metrics["checks"]["source"] = str(fewer)
    (folder / "metrics.json").write_text(json.dumps(metrics))
    assert calibrate.main([str(folder)]) == 0
    now = json.loads((folder / "metrics.json").read_text())["checks"]
    assert now["n"] == 6 and metrics["checks"]["n"] == 47
    assert f"; behaviour checks {metrics['checks']['right']}/47 -> {now['right']}/6;" in capsys.readouterr().out

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(calibrate.RunMetrics, "write", full)
    assert calibrate.main([str(folder), "--calibration-data", str(two_stage[0].parent / "reviews.tsv"), "--all"]) \
        == runtime.EXIT_USER_ERROR
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1] == (f"error: could not write {folder} (No space left on device): free some "
                                            "space, then run the same command again"), err
    assert sorted(p.name for p in folder.iterdir() if p.name.startswith(".")) == []  # the figure's folder removed


def test_recalibrate_keeps_checks_it_cannot_score_again_and_says_so(two_stage, tmp_path, capsys):
    import shutil

    folder = tmp_path / "copy"
    shutil.copytree(two_stage[1], folder)
    (folder / "README.md").unlink()  # a folder without a card: the figures are still written
    metrics = json.loads((folder / "metrics.json").read_text())
    metrics["checks"]["source"] = str(tmp_path / "gone.tsv")
    (folder / "metrics.json").write_text(json.dumps(metrics))
    assert calibrate.main([str(folder), "--calibration-data", str(two_stage[0].parent / "reviews.tsv"), "--all"]) == 0
    out = capsys.readouterr().out
    assert f"behaviour checks not scored again ({tmp_path / 'gone.tsv'} not found)" in out
    assert "README.md" not in out and not (folder / "README.md").exists()
    assert json.loads((folder / "metrics.json").read_text())["checks"] == metrics["checks"]


def test_export_ships_the_calibration(two_stage, tmp_path):
    from train import export

    out = tmp_path / "shipped"
    assert export.main([str(two_stage[1]), str(out), "--dtype", "float16"]) == 0
    assert (out / calibrate.RELIABILITY_NAME).is_file()
    temperature = json.loads((two_stage[1] / "config.json").read_text())["calibration_temperature"]
    assert roberta.pipeline("sentiment-analysis", model=out, device="cpu").temperature == pytest.approx(temperature)


# ----- averaging seeds' weights -----
@pytest.fixture(scope="module")
def seeds(train_files, tiny_mlm_dir, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("seeds")
    folders = []
    for seed in (0, 1, 2):
        folder = tmp / f"sst2-s{seed}"
        assert finetune.main(finetune_argv(train_files, folder, "--init", str(tiny_mlm_dir), "--seed", str(seed))) == 0
        folders.append(folder)
    return folders


def head_of(args: finetune.FinetuneArguments) -> dict:
    model, _, gave = finetune.build_model(args, {0: "negative", 1: "positive"})
    assert gave == "encoder"  # a new head
    return {k: v for k, v in model.state_dict().items() if k.startswith("classifier.")}


def test_a_new_head_is_drawn_from_head_seed_whatever_the_seed(tiny_mlm_dir, tmp_path):
    """Seeds 0 and 1 from one MLM got unrelated heads (`classifier.dense.weight` cosine 0.005), and their weight
    average cancelled out. The head comes from --head-seed (default 0): one start for every --seed, whose own
    stream (dropout) follows the head."""
    def args(**options):
        return finetune.FinetuneArguments(init=str(tiny_mlm_dir), out=str(tmp_path / "run"), **options)

    heads = [head_of(args(seed=seed)) for seed in (0, 1)]
    after = torch.rand(4)  # what dropout draws next: --seed 1's
    assert heads[0].keys() == heads[1].keys() and len(heads[0]) == 4
    assert all(torch.equal(heads[0][k], heads[1][k]) for k in heads[0])
    other = head_of(args(seed=0, head_seed=1))
    assert not torch.equal(other["classifier.out_proj.weight"], heads[0]["classifier.out_proj.weight"])
    torch.manual_seed(1)
    assert torch.equal(after, torch.rand(4))  # the stream after the head is the run's own --seed's
    with pytest.raises(runtime.UserError, match="--head-seed must be between 0 and"):
        args(head_seed=-1).check()


def test_select_calibration_says_its_temperature_is_fitted_on_the_slice_that_chose_it():
    """--select calibration chooses the checkpoint on the calibration slice, then fits T on the same slice: the
    slice flatters the checkpoint it chose, and T comes out low. The option says so."""
    from train import arguments

    parser = arguments.build_parser(finetune.FinetuneArguments, "train.finetune", finetune.__doc__)
    shown = " ".join(parser.format_help().split())
    assert "the temperature is then fitted on the same slice that chose the checkpoint" in shown


def edited_member(folder: Path, out: Path, **changes) -> Path:
    """A copy of a finished run with its metrics.json changed (a key given None is removed)."""
    import shutil

    shutil.copytree(folder, out)
    metrics = json.loads((out / "metrics.json").read_text())
    metrics.update(changes)
    (out / "metrics.json").write_text(json.dumps({k: v for k, v in metrics.items() if v is not None}))
    return out


def test_average_refuses_heads_of_other_seeds_and_seeds_of_other_stages(seeds, tmp_path, capsys):
    """train.average checked init_root alone: seeds whose heads started from different random weights, and seeds
    that each continued an IMDB stage of their own (one init_root, other encoders), were averaged. One line says
    which; a run from before --head-seed (none recorded) is not refused for it, and the average's card says that
    their heads' start is unknown."""
    recorded = [json.loads((f / "metrics.json").read_text()) for f in seeds]
    assert [m["head_seed"] for m in recorded] == [0, 0, 0] and recorded[0]["init_gave"] == "encoder"
    other_head = edited_member(seeds[1], tmp_path / "head-1", head_seed=1)
    out = tmp_path / "avg"
    assert average.main([str(seeds[0]), str(other_head), "--out", str(out)]) == runtime.EXIT_USER_ERROR
    err = capsys.readouterr().err
    assert err.startswith("error: the members' classifier heads start from different random weights (--head-seed "
                          "0 and 1)") and len(err.strip().splitlines()) == 1 and not out.exists()
    root = recorded[0]["init_root"]
    stages = [edited_member(f, tmp_path / f"stage-{i}", init=f"runs/imdb-s{i}", init_root=root, head_seed=None,
                            init_gave="encoder and classifier head") for i, f in enumerate(seeds[:2])]
    assert average.main([*map(str, stages), "--out", str(out)]) == runtime.EXIT_USER_ERROR
    assert capsys.readouterr().err.startswith("error: the members were fine-tuned from different folders "
                                              "(runs/imdb-s0, runs/imdb-s1), so their encoders start")
    old = edited_member(seeds[1], tmp_path / "old", head_seed=None)
    members = average.check_members([seeds[0], old])  # not refused: its head's seed is unknown
    assert average.unknown_head_seeds(members) and not average.unknown_head_seeds(recorded)
    rows = [{"folder": str(f), "seed": s, "init": root, "dev_accuracy": 0.5, "imdb_accuracy": None}
            for f, s in ((seeds[0], 0), (old, 1))]
    _, notes = average._describe_members([seeds[0], old], members, {"init_root": root, "members": rows},
                                         {seeds[0]: (6, 1.0), old: (6, 1.0)})
    assert "whether their heads started from the same weights is unknown" in notes


def test_average_shows_progress_bars_over_its_scoring_unless_told_not_to(seeds, tmp_path, monkeypatch, capsys):
    """Its scoring (the calibration slice, dev set, IMDB sample read two ways) ran without a word; the calibration
    slice's, inside train.calibrate, had no bar after the others got theirs."""
    monkeypatch.setattr(average, "progress_bars", lambda no_progress=False: not no_progress)  # as on a terminal
    assert average.main([*map(str, seeds[:2]), "--out", str(tmp_path / "avg")]) == 0
    metrics = json.loads((tmp_path / "avg" / "metrics.json").read_text())
    sizes = metrics["calibration_examples"], metrics["dev_examples"], metrics["imdb_examples"]
    assert len(set(sizes)) == 3, sizes  # each scoring's bar told apart by its count
    err = capsys.readouterr().err
    assert all(f"classifying {n:,} texts" in err for n in sizes), err
    assert average.main([*map(str, seeds[:2]), "--out", str(tmp_path / "quiet"), "--no-progress"]) == 0
    assert "classifying" not in capsys.readouterr().err


def test_the_average_says_where_its_members_started():
    """The shipped card said its 3 members were "fine-tuned from runs/sentiment-10/tapt/mlm ... with different
    seeds": each continued one shared IMDB stage (`init` runs/sentiment-10/imdb-s0, `init_root` the TAPT encoder),
    and only the SST-2 stage's seed differed; that shared start is why their weights average."""
    stage = [{"init": "runs/imdb-s0", "seed": s} for s in (0, 1, 2)]
    assert average._start(stage, "runs/tapt/mlm") == (
        "All 3 continue one earlier fine-tuning stage, `runs/imdb-s0` (whose fine-tuning started from "
        "`runs/tapt/mlm`): that stage is shared, and only their own stage's seed differs.")
    encoder = [{"init": "assets/mini-roberta-mlm", "seed": s} for s in (0, 1)]
    assert average._start(encoder, "assets/mini-roberta-mlm") == "Both start from `assets/mini-roberta-mlm`."
    assert average._start(encoder[:1], "assets/mini-roberta-mlm", one_run=True) == \
        "The run started from `assets/mini-roberta-mlm`."
    assert average._start(stage[:1], "runs/tapt/mlm", one_run=True).startswith("The run continues one earlier")
    mixed = [{"init": "runs/a"}, {"init": "runs/b"}]  # --allow-different-init: no one start to name
    assert average._start(mixed, "runs/a") == "They come from 2 different starts (`runs/a` and `runs/b`)."
    assert average._start([{"init": None}], None) == "No member's metrics.json records where its fine-tuning started."
    metrics = {"init_root": "runs/tapt/mlm", "members": [{**m, "folder": f"runs/s{m['seed']}", "dev_accuracy": 0.88,
                                                          "imdb_accuracy": 0.83} for m in stage]}
    folders = [Path(m["folder"]) for m in metrics["members"]]
    members = [{"train_steps": 10, "train_time_s": 5.0, "selection": "last"} for _ in folders]
    _, notes = average._describe_members(folders, members, metrics, {f: (10, 5.0) for f in folders})
    assert notes.startswith("The uniform average of the weights of 3 classifiers fine-tuned with the same recipe and "
                            "different seeds, 0, 1 and 2 (train_steps and train_time_s")
    assert "fine-tuned from `runs/tapt/mlm`" not in notes and "All 3 continue one earlier fine-tuning stage" in notes


@pytest.mark.slow  # end-to-end script run, several seconds
def test_average_is_the_mean_and_a_hub_ready_folder(seeds, tmp_path):
    out = tmp_path / "avg"
    assert average.main([*map(str, seeds), "--out", str(out)]) == 0
    states = [roberta.RobertaForSequenceClassification.from_pretrained(f).state_dict() for f in seeds]
    avg = roberta.RobertaForSequenceClassification.from_pretrained(out)
    for key, value in avg.state_dict().items():
        torch.testing.assert_close(value, sum(s[key] for s in states) / 3, rtol=1e-6, atol=1e-6)
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["averaged"] == 3 and [m["seed"] for m in metrics["members"]] == [0, 1, 2]
    # the training the members cost, as train_time_s: three runs of 6 steps (was the first member's 6)
    assert metrics["train_steps"] == sum(m["train_steps"] for m in metrics["members"]) == 18
    assert metrics["train_time_s"] == pytest.approx(sum(m["train_time_s"] for m in metrics["members"]), abs=0.2)
    assert metrics["calibration"]["slice"] == \
        json.loads((seeds[0] / "metrics.json").read_text())["calibration"]["slice"]
    assert avg.config.calibration_temperature == pytest.approx(metrics["temperature"])
    assert metrics["checks"]["n"] > 0 and 0 <= metrics["dev_accuracy"] <= 1 and metrics["imdb_examples"] == 20
    for name in ("config.json", "model.safetensors", "tokenizer.json", "README.md", "reliability.png"):
        assert (out / name).is_file(), name
    assert not (out / "log.jsonl").exists()  # no training of its own: the figure shows the members' curves
    selection = json.loads((seeds[0] / "metrics.json").read_text()).get("selection")
    kept = ("each member kept its end-of-run weights" if selection in (None, "last")
            else "each member kept the exponential")
    card = (out / "README.md").read_text()
    assert kept in card  # what the members' own metrics.json say they kept
    assert "fine-tuned with the same recipe and different seeds, 0, 1 and 2 (" in card
    assert f"All 3 start from `{metrics['init_root']}`." in card  # each fine-tuned from the encoder itself
    assert all((f / "log.jsonl").is_file() for f in seeds) and (out / "curves.png").read_bytes()[:4] == b"\x89PNG"
    clf = roberta.pipeline("sentiment-analysis", model=out, device="cpu")
    assert clf("a fine film")[0]["label"] in {"negative", "positive"}
    transformers = pytest.importorskip("transformers")
    assert transformers.AutoModelForSequenceClassification.from_pretrained(out).config.calibration_temperature \
        == pytest.approx(metrics["temperature"])


@pytest.mark.slow  # two pretraining runs and an evaluation under two masks
def test_average_of_masked_lm_phases_is_the_mean_scored_under_several_masks(train_files, seeds, tmp_path, capsys):
    from train import pretrain

    first, second = tmp_path / "phase-1", tmp_path / "phase-2"  # a phase and its continuation
    one_evaluation = {"max_steps": None, "eval_every": 0, "final_eval_rows": 8}  # at the end, on 8 rows
    assert pretrain.main(pretrain_argv(train_files, first, "--max-steps", "4", **one_evaluation)) == 0
    argv = [a for a in pretrain_argv(train_files, second, "--max-steps", "4", "--seed", "1", "--init", str(first),
                                     **one_evaluation)
            if a not in ("--preset", "tiny", "--model-max-length", "32")]  # the shape comes from --init
    assert pretrain.main(argv) == 0
    out = tmp_path / "avg"
    assert average.main([str(first), str(second), "--out", str(out), "--mlm-seeds", "2"]) == 0
    assert "averaged 2 masked LMs" in capsys.readouterr().out
    states = [roberta.RobertaForMaskedLM.from_pretrained(f).state_dict() for f in (first, second)]
    for key, value in roberta.RobertaForMaskedLM.from_pretrained(out).state_dict().items():
        torch.testing.assert_close(value, (states[0][key] + states[1][key]) / 2, rtol=1e-6, atol=1e-6)
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["averaged"] == 2 and [m["folder"] for m in metrics["members"]] == [str(first), str(second)]
    assert metrics["eval_data"] == str(train_files / "valid.txt") and metrics["train_tokens"] == 0
    # the same figures as `train.evaluate --mlm-seeds 2` on the averaged folder
    assert evaluate.main(["--model", str(out), "--mlm-text", metrics["eval_data"], "--mlm-seeds", "2",
                          "--out", str(tmp_path / "eval.json")]) == 0
    again = json.loads((tmp_path / "eval.json").read_text())["mlm"]
    assert metrics["mlm"]["accuracy_per_mask"] == again["accuracy_per_mask"] and len(again["accuracy_per_mask"]) == 2
    assert metrics["eval_accuracy"] == pytest.approx(sum(again["accuracy_per_mask"]) / 2)
    assert (out / "README.md").is_file() and (out / "curves.png").is_file()
    assert len(roberta.pipeline("fill-mask", model=out)("the cat <mask> here", top_k=3)) == 3
    assert average.main([str(first), str(seeds[0]), "--out", str(tmp_path / "mixed")]) == 2  # not one kind of model
    assert "average models of one kind" in capsys.readouterr().err


def test_average_refuses_what_cannot_be_averaged(seeds, two_stage, tmp_path, capsys):
    import shutil

    assert average.main([str(seeds[0]), "--out", str(tmp_path / "a")]) == 2
    assert "at least two" in capsys.readouterr().err
    other = tmp_path / "other-init"
    shutil.copytree(seeds[1], other)
    metrics = json.loads((other / "metrics.json").read_text())
    (other / "metrics.json").write_text(json.dumps({**metrics, "init_root": "somewhere/else"}))
    assert average.main([str(seeds[0]), str(other), "--out", str(tmp_path / "b")]) == 2
    assert "different weights" in capsys.readouterr().err
    assert average.main([str(seeds[0]), str(two_stage[0]), "--out", str(tmp_path / "c")]) == 2  # no shared slice
    assert "calibration slice" in capsys.readouterr().err
    assert average.main([str(seeds[0]), str(seeds[1]), "--out", str(seeds[0])]) == 2
    assert "--out" in capsys.readouterr().err
    no_init = tmp_path / "no-init"  # a run whose metrics do not say where it started
    shutil.copytree(seeds[1], no_init)
    (no_init / "metrics.json").write_text(json.dumps({k: v for k, v in metrics.items()
                                                      if k not in ("init", "init_root")}))
    assert average.main([str(seeds[0]), str(no_init), "--out", str(tmp_path / "d")]) == 2
    assert "does not say what it was fine-tuned from (init)" in capsys.readouterr().err
    swapped = tmp_path / "other-ids"  # token ids that mean other words: its weights' rows are other words'
    shutil.copytree(seeds[1], swapped)
    tokenizer = json.loads((swapped / "tokenizer.json").read_text(encoding="utf-8"))
    vocab = tokenizer["model"]["vocab"]
    first, second = list(vocab)[-2:]
    vocab[first], vocab[second] = vocab[second], vocab[first]
    (swapped / "tokenizer.json").write_text(json.dumps(tokenizer), encoding="utf-8")
    assert average.main([str(seeds[0]), str(swapped), "--out", str(tmp_path / "e")]) == 2
    assert f"{swapped}: tokenizer.json differs from {seeds[0]}'s" in capsys.readouterr().err
    assert not any((tmp_path / name).exists() for name in "abcde")


def test_average_checks_its_inputs_before_any_work(tiny_clf_dir, train_files, tmp_path, capsys):
    """`--checks /nope.tsv` and `--imdb-n 0` failed after the weights were averaged and the temperature fitted,
    leaving --out marked unfinished with a reliability.png: every input is read, or refused, first."""
    import shutil

    members = []
    for seed in (0, 1):
        folder = shutil.copytree(tiny_clf_dir, tmp_path / f"s{seed}")
        (folder / "metrics.json").write_text(json.dumps({
            "init": "mlm", "dev_data": str(train_files / "dev.tsv"), "imdb_data": str(train_files / "imdb.tsv"),
            "imdb_examples": 20, "checks": {"source": str(CHECKS), "unsure_below": 0.6},
            "calibration": {"slice": {"data": str(train_files / "train.tsv"), "n": 40, "seed": 0,
                                      "split": "sentences",
                                      **tables.rows_record(*tables.read_labeled(train_files / "train.tsv")[:2])}}}))
        members.append(str(folder))
    out = tmp_path / "avg"
    missing = tmp_path / "nope.tsv"
    for extra, says in [(["--checks", str(missing)], f"--checks {missing}: no such checks file"),
                        (["--imdb-n", "0"], "--imdb-n must be at least 1, got 0"),
                        (["--dev", str(missing)], f"--dev {missing}: no such file"),
                        (["--imdb", str(missing)], f"--imdb {missing}: no such file")]:
        assert average.main([*members, "--out", str(out), *extra]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: {says}") and err.count("\n") == 1, err
        assert not out.exists(), extra  # was .average-unfinished and reliability.png
    assert average.main([*members, "--out", str(out)]) == 0  # the same members, their own inputs
    assert json.loads((out / "metrics.json").read_text())["checks"]["n"] > 0


def test_average_refuses_mixed_kinds_an_out_file_and_a_zero_batch(tiny_mlm_dir, tiny_clf_dir, tmp_path, capsys):
    # was "config id2label is {0: 'LABEL_0', ...}, ... has {0: 'negative', ...}": not the difference that matters
    assert average.main([str(tiny_clf_dir), str(tiny_mlm_dir), "--out", str(tmp_path / "avg")]) == 2
    assert capsys.readouterr().err == (f"error: {tiny_mlm_dir} is a RobertaForMaskedLM, {tiny_clf_dir} a "
                                       "RobertaForSequenceClassification: average models of one kind\n")
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    assert average.main([str(tiny_clf_dir), str(tiny_mlm_dir), "--out", str(a_file)]) == 2  # was "[Errno 17] ..."
    assert capsys.readouterr().err == f"error: --out {a_file} is a file, not a folder\n"
    with pytest.raises(SystemExit) as exit_info:  # was "range() arg 3 must not be zero", after the members' checks
        average.main([str(tiny_clf_dir), str(tiny_mlm_dir), "--out", str(tmp_path / "avg"), "--batch-size", "0"])
    assert exit_info.value.code == 2 and "--batch-size must be at least 1, got 0" in capsys.readouterr().err


def test_summarize_refuses_a_masked_lm_run_and_an_out_folder(tmp_path, capsys):
    mlm, clf = tmp_path / "mlm", tmp_path / "clf"
    for folder, metrics in ((mlm, {"eval_accuracy": 0.1, "train_tokens": 100}), (clf, {"dev_accuracy": 0.6})):
        folder.mkdir()
        (folder / "metrics.json").write_text(json.dumps(metrics))
    assert summarize.main([str(clf), str(mlm)]) == 2  # was counted as a seed with no figures, exit 0
    assert "mlm/metrics.json: not a fine-tuned classifier's metrics" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:  # was an IsADirectoryError traceback
        summarize.main([str(clf), "--out", str(tmp_path)])
    assert exit_info.value.code == 2 and f"--out {tmp_path} is a folder" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:  # was a FileExistsError traceback, after the summary was made
        summarize.main([str(clf), "--out", str(clf / "metrics.json" / "x.json")])
    assert exit_info.value.code == 2
    assert (f"error: --out {clf / 'metrics.json' / 'x.json'}: {clf / 'metrics.json'} is a file"
            in capsys.readouterr().err)


# ----- mean and std over seeds -----
def test_summarize_warns_when_two_members_of_an_arm_are_one_run(tmp_path, capsys):
    """A run and its copy were counted as two seeds: "2 | 47.5 ± 0.0", without a word."""
    runs = {}
    for name, seed, init in (("s1", 1, "enc"), ("s1-copy", 1, "enc"), ("s2", 2, "enc"), ("s1-other", 1, "other")):
        runs[name] = tmp_path / name
        runs[name].mkdir()
        command = f"python -m train.finetune --init {init} --seed {seed} --out {runs[name]}"
        (runs[name] / "metrics.json").write_text(json.dumps({"dev_accuracy": 0.5, "command": command}))
    assert summarize.main(["--arm", "a", *(str(runs[n]) for n in ("s1", "s2", "s1-other"))]) == 0
    assert "warning" not in capsys.readouterr().err  # other seeds, another init: other runs
    assert summarize.main(["--arm", "a", str(runs["s1"]), str(runs["s2"]), str(runs["s1-copy"])]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"warning: {runs['s1-copy']} is the same run as {runs['s1']}")
    assert "in arm a" in err[0]


def test_summarize(seeds, tmp_path, capsys):
    avg = tmp_path / "avg"
    assert average.main([*map(str, seeds), "--out", str(avg)]) == 0
    out = tmp_path / "summary.json"
    assert summarize.main(["--arm", "sst2", *map(str, seeds), str(avg), "--out", str(out)]) == 0
    summary = json.loads(out.read_text())["sst2"]
    devs = [json.loads((f / "metrics.json").read_text())["dev_accuracy"] for f in seeds]
    mean = sum(devs) / 3
    assert summary["seeds"] == 3 and summary["stats"]["dev_accuracy"]["mean"] == pytest.approx(mean)
    assert summary["stats"]["dev_accuracy"]["std"] == pytest.approx(
        math.sqrt(sum((d - mean) ** 2 for d in devs) / 2))
    assert summary["averaged"][0]["averaged"] == 3 and summary["stats"]["dev_ece"]["n"] == 3
    table = out.with_suffix(".md").read_text(encoding="utf-8")
    assert "| sst2 (mean ± std) | 3 |" in table and "weight average of 3" in table and "negated negative" in table
    assert out.with_suffix(".png").read_bytes().startswith(b"\x89PNG")
    assert "end-of-run weights" not in table  # a column only for runs that kept a moving average
    length = json.loads((seeds[0] / "metrics.json").read_text())["max_length"]  # the figure says how far IMDB was read
    assert summarize.cut_to({"sst2": summary}) == f"first\n{length} tokens" and length != 128
    assert summarize.cut_to({"old": {"runs": [{"dev_accuracy": 0.8}]}}) == "cut to\nthe model's length"
    assert summarize.main([str(tmp_path / "missing")]) == 2

    import shutil
    ema = []
    for i, folder in enumerate(seeds):
        ema.append(shutil.copytree(folder, tmp_path / f"ema-{i}"))
        metrics = json.loads((ema[-1] / "metrics.json").read_text())
        (ema[-1] / "metrics.json").write_text(json.dumps({**metrics, "end_weights_dev_accuracy": 0.5 + i / 10}))
    assert summarize.main(["--arm", "ema", *map(str, ema), "--out", str(out)]) == 0
    assert json.loads(out.read_text())["ema"]["stats"]["end_weights_dev_accuracy"]["mean"] == pytest.approx(0.6)
    assert "dev acc of the end-of-run weights %" in out.with_suffix(".md").read_text(encoding="utf-8")
    assert "| 60.0 ± 10.0 |" in out.with_suffix(".md").read_text(encoding="utf-8")


def test_the_summary_figure_tells_the_arms_apart_without_their_colours():
    """The arms' bars differed in colour alone (and their place in a group), their seeds' dots in colour alone: each
    arm's bars have their own hatch and its seeds their own marker (not the weight average's diamond), the legend's
    patch shows the hatch, and the colours are colour-blind-safe ones (`reporting.arm_style`)."""
    import matplotlib.pyplot as plt
    from matplotlib.collections import PathCollection
    from matplotlib.colors import to_hex

    def arm(dev, imdb, averaged=False):
        runs = [{"dev_accuracy": dev + d, "imdb_accuracy": imdb + d, "averaged": 0, "max_length": 64,
                 "folder": f"runs/s{i}"} for i, d in enumerate((-0.01, 0.01))]
        stats = {"dev_accuracy": {"mean": dev, "std": 0.014}, "imdb_accuracy": {"mean": imdb, "std": 0.014},
                 "checks_categories": {}}
        average = [{**runs[0], "dev_accuracy": dev, "imdb_accuracy": imdb, "averaged": 2}] if averaged else []
        return {"seeds": 2, "runs": runs + average, "averaged": average, "stats": stats}

    summary = {"pretrained": arm(0.85, 0.80, averaged=True), "random": arm(0.80, 0.75), "tapt": arm(0.86, 0.82)}
    fig = summarize.summary_figure(summary)
    ax = fig.axes[0]
    bars = ax.patches  # each arm's bars in turn: one per measure it has (SST-2 dev, IMDB)
    hatches = [{bar.get_hatch() or "" for bar in bars[2 * a:2 * a + 2]} for a in range(3)]
    assert len(bars) == 6 and all(len(h) == 1 for h in hatches) and len(set.union(*hatches)) == 3
    assert {to_hex(bar.get_facecolor(), keep_alpha=False) for bar in bars} <= {c.lower() for c in
                                                                                  reporting.ARM_COLOURS}

    def shape(collection):  # a scatter's marker, as the outline it draws
        return collection.get_paths()[0].vertices.round(3).tobytes()

    scatters = [c for c in ax.collections if isinstance(c, PathCollection) and len(c.get_offsets())]
    marks = [c for c in scatters if c.get_sizes()[0] == 12]  # the seeds' (each weight average is drawn larger)
    diamonds = [c for c in scatters if c.get_sizes()[0] == 40]
    seed_shapes = [{shape(c) for c in marks[2 * a:2 * a + 2]} for a in range(3)]
    assert len(marks) == 6 and all(len(s) == 1 for s in seed_shapes) and len(set.union(*seed_shapes)) == 3
    assert diamonds and not {shape(c) for c in diamonds} & set.union(*seed_shapes)
    legend = ax.get_legend()
    assert [t.get_text() for t in legend.get_texts()] == ["pretrained", "pretrained: weight average", "random",
                                                          "tapt"]
    assert [legend.legend_handles[i].get_hatch() or "" for i in (0, 2, 3)] == [h.pop() for h in hatches]
    # the fill is faint (1.4-1.7:1 against white) and the first arm has no hatch: each bar, and its legend patch,
    # is outlined in its arm's colour at full strength, at least 3:1 against white (WCAG 1.4.11)
    for bar in [*bars, *(legend.legend_handles[i] for i in (0, 2, 3))]:
        assert bar.get_linewidth() >= 1 and bar.get_edgecolor()[3] == 1, (bar.get_linewidth(), bar.get_edgecolor())
        assert contrast_with_white(bar.get_edgecolor()) >= 3, bar.get_edgecolor()
    plt.close(fig)


# ----- the experiment's plan -----
def test_sentiment_recipe_plan(capsys):
    assert sentiment_recipe.main(["--init", "runs/mlm", "--out", "runs/x", "--dry-run", "--seeds", "0", "1",
                                  "--finetune-args", "--layer-lr-decay 0.8", "--tapt-minutes", "0"]) == 0
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    # 4 arms x 2 seeds (+ IMDB stages), the average of the one arm whose seeds share one start (sst2: the encoder,
    # and a head from --head-seed; imdb-sst2's seeds each continue an IMDB stage of their own), the summary
    assert len(lines) == 2 + 4 + 2 + 4 + 1 + 1
    assert [line for line in lines if line.startswith("python -m train.average")] == [
        "python -m train.average runs/x/sst2-s0 runs/x/sst2-s1 --out runs/x/sst2-avg"]
    notes = captured.err.splitlines()
    assert notes[0] == ("note: no weight average of the imdb-sst2 arm: each seed continues an IMDB stage of its own "
                        "(--imdb-stage-seed K: one stage for every seed, as the shipped classifier's, K = 0)")
    assert "python -m train.finetune --init runs/x/imdb-s1 --dropout 0 --ema-decay 0.999 --seed 1 --resume " \
           "--layer-lr-decay 0.8 --out runs/x/imdb-sst2-s1" in lines
    assert "python -m train.finetune --init random --tokenizer runs/mlm --epochs 0.3 --long-text windows " \
           "--calibration-n 0 --dropout 0 --seed 0 --resume --train ../shared/data/imdb/train.tsv " \
           "--out runs/x/random-imdb-s0" in lines
    assert lines[-1].startswith("python -m train.summarize --arm sst2 runs/x/sst2-s0 runs/x/sst2-s1 runs/x/sst2-avg")
    assert "--arm random-sst2 runs/x/random-sst2-s0 runs/x/random-sst2-s1 --arm" in lines[-1]
    assert sentiment_recipe.main(["--init", "a", "--out", "b", "--arms", "nope", "--dry-run"]) == 2


def test_sentiment_recipe_random_arms_are_the_encoders_shape_and_averaged_only_from_one_start(tiny_mlm_dir, capsys):
    """A random arm is the encoder's shape (it ran train.finetune's default preset, whatever the encoder was: a
    4.9M-parameter baseline beside a 29k-parameter model); its seeds start from different random weights, so no
    weight average is planned for them (train.average refused it, and the default command never finished),
    unless they continue one shared IMDB stage."""
    config = roberta.load_config(tiny_mlm_dir)
    shape = [f"--layers {config.num_hidden_layers}", f"--hidden-size {config.hidden_size}",
             f"--heads {config.num_attention_heads}", f"--intermediate-size {config.intermediate_size}"]
    plan = ["--init", str(tiny_mlm_dir), "--out", "x", "--seeds", "0", "1", "--dry-run", "--tapt-minutes", "0"]
    assert sentiment_recipe.main([*plan, "--arms", "sst2,random-sst2,random-imdb-sst2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    random_runs = [line for line in lines if "--init random" in line]
    assert len(random_runs) == 4 and all(option in line for line in random_runs for option in shape)
    assert [line.rsplit(" ", 1)[-1] for line in lines if line.startswith("python -m train.average")] == ["x/sst2-avg"]
    assert sentiment_recipe.main([*plan, "--arms", "random-imdb-sst2", "--imdb-stage-seed", "0"]) == 0
    averages = [line for line in capsys.readouterr().out.splitlines() if line.startswith("python -m train.average")]
    assert len(averages) == 1 and averages[0].endswith("--out x/random-imdb-sst2-avg")


def test_sentiment_recipe_checks_its_options_before_the_first_step(capsys):
    plan = ["--init", "m", "--out", "x", "--dry-run"]
    # --arms "": a plan of no runs whose summary step failed with train.summarize's own usage error
    assert sentiment_recipe.main([*plan, "--arms", ""]) == 2
    assert "error: --arms names no arm" in capsys.readouterr().err
    for extra in (["--tapt-minutes", "-5"], ["--ema-decay", "1.5"], ["--dropout", "-1"]):  # were planned (exit 0)
        assert sentiment_recipe.main([*plan, *extra]) == 2, extra
        assert "--tapt-minutes must be at least 0 (0 = none), --ema-decay in [0, 1)" in capsys.readouterr().err
    assert sentiment_recipe.main([*plan, "--finetune-args", '--lr "1e-4']) == 2  # was "No closing quotation" alone
    assert "error: extra train.finetune options '--lr \"1e-4': No closing quotation" in capsys.readouterr().err


def test_sentiment_recipe_shared_imdb_stage(capsys):
    assert sentiment_recipe.main(["--init", "m", "--out", "x", "--arms", "imdb-sst2", "--imdb-stage-seed", "0",
                                  "--dry-run", "--tapt-minutes", "0"]) == 0
    lines = capsys.readouterr().out.splitlines()
    stages = [line for line in lines if "--train ../shared/data/imdb/train.tsv" in line]
    assert len(stages) == 1 and "--seed 0" in stages[0] and stages[0].endswith("--out x/imdb-s0")
    assert "python -m train.average x/imdb-sst2-s0 x/imdb-sst2-s1 x/imdb-sst2-s2 --out x/imdb-sst2-avg" in lines
    for seed in (0, 1, 2):  # every seed's SST-2 run starts from the one stage
        assert (f"python -m train.finetune --init x/imdb-s0 --dropout 0 --ema-decay 0.999 --seed {seed} --resume "
                f"--out x/imdb-sst2-s{seed}") in lines
    # --ema-decay 0: the end-of-run weights, the shipped classifier's commands exactly
    assert sentiment_recipe.main(["--init", "m", "--out", "x", "--arms", "imdb-sst2", "--imdb-stage-seed", "0",
                                  "--dry-run", "--tapt-minutes", "0", "--ema-decay", "0"]) == 0
    assert "python -m train.finetune --init x/imdb-s0 --dropout 0 --seed 1 --resume --out x/imdb-sst2-s1" in \
        capsys.readouterr().out.splitlines()


def test_sentiment_recipe_plan_with_tapt(capsys):
    """--tapt-minutes: the TAPT corpus, an MLM run from --init on it, and the pretrained arms start from it (the
    random arms keep --init's tokenizer)."""
    assert sentiment_recipe.main(["--init", "m", "--out", "x", "--arms", "imdb-sst2,random-sst2", "--seeds", "0",
                                  "--dry-run"]) == 0  # TAPT for 18 minutes by default
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == ("python -m train.tapt_corpus --out x/tapt --imdb-unsup ../shared/data/imdb/unsup.txt "
                        "--sst2-train ../shared/data/sst2/train.tsv")
    assert lines[1].startswith("python -m train.pretrain --init m --corpus x/tapt/imdb-lower.txt=0.7,"
                               "x/tapt/sst2-lower.txt=0.3 ") and "--time-budget-min 18 " in lines[1]
    assert lines[1].endswith("--resume --out x/tapt/mlm")
    assert lines[2].startswith("python -m train.finetune --init x/tapt/mlm --epochs 0.3 --long-text windows ")
    assert ("python -m train.finetune --init random --tokenizer m --dropout 0 --ema-decay 0.999 --seed 0 --resume "
            "--out x/random-sst2-s0") in lines
    # random arms alone: no TAPT (it serves the pretrained arms only)
    assert sentiment_recipe.main(["--init", "m", "--out", "x", "--arms", "random-imdb-sst2", "--seeds", "0",
                                  "--imdb-stage-seed", "0", "--train-only", "--dry-run"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and all(line.startswith("python -m train.finetune --init ") for line in lines)
    assert lines[0].startswith("python -m train.finetune --init random --tokenizer m ")


def test_tapt_corpus_is_lower_cased_review_text(tmp_path, capsys):
    unsup = tmp_path / "unsup.txt"
    unsup.write_text("A GREAT Film , it 's FUN.\n\nSecond Review here.\n")
    sst2 = tmp_path / "train.tsv"
    sst2.write_text("sentence\tlabel\nit 's a charming and often affecting journey .\t1\nbad\t0\n")
    assert tapt_corpus.main(["--out", str(tmp_path / "out"), "--imdb-unsup", str(unsup), "--sst2-train",
                             str(sst2)]) == 0
    assert (tmp_path / "out" / "imdb-lower.txt").read_text() == "a great film, it's fun.\nsecond review here.\n"
    assert (tmp_path / "out" / "sst2-lower.txt").read_text() == "it's a charming and often affecting journey.\n"
    assert tapt_corpus.main(["--out", str(tmp_path / "o2"), "--imdb-unsup", str(tmp_path / "none.txt")]) == 2
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("a café review\n".encode("latin-1"))
    assert tapt_corpus.main(["--out", str(tmp_path / "o3"), "--imdb-unsup", str(latin1),
                             "--sst2-train", str(sst2)]) == 2
    # was "'utf-8' codec can't decode byte 0xe9 ...", naming no file
    assert f"error: {latin1} line 1: not UTF-8 text" in capsys.readouterr().err


def tiny_finetune_args(train_files, steps: int) -> str:
    """--finetune-args of a few steps on the tiny files."""
    return (f"--train {train_files / 'train.tsv'} --dev {train_files / 'dev.tsv'} --imdb {train_files / 'imdb.tsv'} "
            f"--imdb-n 20 --batch-size 8 --max-steps {steps} --eval-every 0 --calibration-n 40 --no-progress "
            "--precision fp32")


@pytest.mark.slow
def test_sentiment_recipe_end_to_end(train_files, tiny_mlm_dir, tmp_path):
    out = tmp_path / "exp"
    tiny = tiny_finetune_args(train_files, steps=4)
    argv = ["--init", str(tiny_mlm_dir), "--out", str(out), "--arms", "sst2,imdb-sst2", "--seeds", "0", "1",
            "--imdb-train", str(train_files / "train.tsv"), "--finetune-args", tiny,
            "--imdb-args", tiny.replace("--calibration-n 40", ""), "--no-progress", "--tapt-minutes", "0"]
    assert sentiment_recipe.main(argv) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary) == {"sst2", "imdb-sst2"} and all(arm["seeds"] == 2 for arm in summary.values())
    averaged = json.loads((out / "sst2-avg" / "metrics.json").read_text())
    assert averaged["averaged"] == 2 and averaged["head_seed"] == 0  # its seeds' heads started from one draw
    assert not (out / "imdb-sst2-avg").exists()  # each seed continued an IMDB stage of its own: no one start
    stage = json.loads((out / "imdb-s0" / "metrics.json").read_text())
    assert stage["train_rows"] >= stage["train_examples"]  # the IMDB stage reads every window of a review


@pytest.mark.slow
def test_sentiment_recipe_runs_seeds_in_parallel(train_files, tiny_mlm_dir, tmp_path, capsys):
    """--parallel 2: the shared IMDB stage here, then each seed in a process of its own (its log in OUT/logs), then
    the average and the summary here; the runs are those of the same command without --parallel."""
    out = tmp_path / "exp"
    tiny = tiny_finetune_args(train_files, steps=3)
    argv = ["--init", str(tiny_mlm_dir), "--out", str(out), "--arms", "imdb-sst2", "--imdb-stage-seed", "0",
            "--seeds", "0", "1", "--imdb-train", str(train_files / "train.tsv"), "--finetune-args", tiny,
            "--imdb-args", tiny.replace("--calibration-n 40", ""), "--no-progress", "--tapt-minutes", "0",
            "--parallel", "2"]
    assert sentiment_recipe.main(argv) == 0
    printed = capsys.readouterr().out
    assert printed.index("== imdb-s0: python -m train.finetune") < printed.index("== seed 0: python -m "
                                                                                 "train.sentiment_recipe")
    for seed in (0, 1):
        log = (out / "logs" / f"seed-{seed}.log").read_text()
        assert "== imdb-s0: already done" in log and f"== imdb-sst2-s{seed}: python -m train.finetune" in log
        assert f"imdb-sst2-s{1 - seed}" not in log  # each process runs its own seed
    summary = json.loads((out / "summary.json").read_text())
    assert summary["imdb-sst2"]["seeds"] == 2
    assert json.loads((out / "imdb-sst2-avg" / "metrics.json").read_text())["averaged"] == 2
    for name in ("imdb-sst2-s0", "imdb-sst2-s1"):  # the runs the same command makes without --parallel
        run = json.loads((out / name / "metrics.json").read_text())
        assert (run["init"] == str(out / "imdb-s0") and run["train_steps"] == 3
                and f"--out {out / name}" in run["command"])
    assert sentiment_recipe.main([*argv, "--dry-run"]) == 0
    assert "# the seeds' own steps run up to 2 at once" in capsys.readouterr().out
    assert sentiment_recipe.main([*argv[:-1], "0"]) == 2  # --parallel 0


@pytest.mark.slow
def test_a_signal_stops_the_parallel_seeds_with_their_checkpoints(train_files, tiny_mlm_dir, tmp_path):
    """SIGTERM to `--parallel` (a GPU session's deadline) reaches the seeds' processes once: each saves a
    checkpoint and stops, and the recipe exits 130. Killed outright (SIGKILL, which it cannot pass on), the seeds
    get a SIGTERM from the system instead and stop the same way."""
    tiny = tiny_finetune_args(train_files, steps=100000).replace("--eval-every 0", "--eval-every 0 --epochs 1000")
    for sig in (signal.SIGTERM, signal.SIGKILL):
        out = tmp_path / sig.name
        argv = [sys.executable, "-m", "train.sentiment_recipe", "--init", str(tiny_mlm_dir), "--out", str(out),
                "--arms", "sst2", "--seeds", "0", "1", "--finetune-args", tiny, "--no-progress", "--tapt-minutes",
                "0", "--parallel", "2"]
        proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        logs = [out / "logs" / f"seed-{seed}.log" for seed in (0, 1)]
        # both seeds in fit(), whose SIGTERM handler saves the checkpoint: each has logged a training step ("starting
        # a new run" is said before fit() installs it, and a signal then stops the seed with no checkpoint)
        runs = [out / f"sst2-s{seed}" / "log.jsonl" for seed in (0, 1)]
        try:
            deadline = time.time() + 120
            while not all(run.is_file() and '"type": "train"' in run.read_text() for run in runs):
                assert proc.poll() is None and time.time() < deadline, "the seeds did not start training"
                time.sleep(0.2)
            proc.send_signal(sig)
            printed, _ = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:  # the seeds stop with it: SIGTERM, passed on to them
                proc.terminate()
                proc.communicate(timeout=60)
        assert proc.returncode == (130 if sig == signal.SIGTERM else -signal.SIGKILL), printed
        for seed in (0, 1):
            deadline = time.time() + 60  # after a SIGKILL the seeds stop on their own time
            while not (out / f"sst2-s{seed}" / "checkpoints").is_dir() and time.time() < deadline:
                time.sleep(0.2)
            assert (out / f"sst2-s{seed}" / "checkpoints").is_dir(), logs[seed].read_text()[-2000:]
            assert "SIGTERM: saving a checkpoint" in logs[seed].read_text()


@pytest.mark.slow
def test_sentiment_recipe_with_tapt_end_to_end(train_files, tiny_mlm_dir, tmp_path):
    out = tmp_path / "exp"
    tiny = tiny_finetune_args(train_files, steps=2) + " --checks ''"
    tapt = (f"--valid {train_files / 'valid.txt'} --max-steps 3 --batch-size 4 --eval-rows 4 --cache-dir '' "
            "--precision fp32")
    argv = ["--init", str(tiny_mlm_dir), "--out", str(out), "--arms", "sst2", "--seeds", "0", "--tapt-minutes",
            "1", "--tapt-unsup", str(train_files / "corpus.txt"), "--tapt-sst2", str(train_files / "train.tsv"),
            "--tapt-args", tapt, "--finetune-args", tiny, "--no-progress"]
    assert sentiment_recipe.main(argv) == 0
    tapt_metrics = json.loads((out / "tapt" / "mlm" / "metrics.json").read_text())
    assert tapt_metrics["train_steps"] == 3 and "tapt/imdb-lower.txt=0.7" in tapt_metrics["command"]
    assert (out / "tapt" / "imdb-lower.txt").read_text().islower()
    sst2 = json.loads((out / "sst2-s0" / "metrics.json").read_text())
    assert sst2["init"] == str(out / "tapt" / "mlm")


def test_the_cards_name_the_weights_each_run_kept():
    assert finetune.kept_weights(None) == finetune.kept_weights("last") == "its end-of-run weights"
    assert finetune.kept_weights("ema 0.999").startswith("the exponential moving average of its weights (decay 0.999")
    assert finetune.kept_weights("calibration", 40) == \
        "its checkpoint with the best accuracy on the calibration slice (step 40)"


@pytest.mark.slow  # end-to-end script run, several seconds
def test_recalibrate_reproduces_a_short_runs_figures(train_files, tiny_mlm_dir, tmp_path):
    """A run fine-tuned at --max-length 8 scored its checks at the model's full length and the refit at 8
    (checks 12/47 -> 18/47 with the same weights): both now score at the run's length."""
    import shutil

    run = tmp_path / "short"
    assert finetune.main(finetune_argv(train_files, run, "--init", str(tiny_mlm_dir), "--max-length", "8")) == 0
    before = json.loads((run / "metrics.json").read_text())
    model, tokenizer = roberta.RobertaForSequenceClassification.from_pretrained(run), roberta.load_tokenizer(run)
    assert before["checks"] == evaluate.score_checks(model, tokenizer, CHECKS, 32, before["checks"]["unsure_below"], 8)
    again = tmp_path / "again"
    shutil.copytree(run, again)
    assert calibrate.main([str(again)]) == 0
    after = json.loads((again / "metrics.json").read_text())
    assert after["temperature"] == pytest.approx(before["temperature"], rel=1e-3)
    assert after["dev_ece"] == pytest.approx(before["dev_ece"], abs=1e-3)
    assert after["checks"]["right"] == before["checks"]["right"]


def test_recalibrate_writes_nothing_when_it_fails(two_stage, tmp_path, capsys):
    """A checks file that broke the rescoring left config.json with the new T and metrics.json and the card with
    the old one (the app reads the config), after a traceback."""
    import shutil

    folder = tmp_path / "copy"
    shutil.copytree(two_stage[1], folder)
    broken = tmp_path / "checks.tsv"
    rows = CHECKS.read_text(encoding="utf-8").splitlines()
    broken.write_text("\n".join([*rows[:2], "a sentence without its fields", *rows[2:]]) + "\n", encoding="utf-8")
    metrics = json.loads((folder / "metrics.json").read_text())
    metrics["checks"]["source"] = str(broken)
    (folder / "metrics.json").write_text(json.dumps(metrics))
    files = {name: (folder / name).read_bytes() for name in ("config.json", "metrics.json", "README.md",
                                                             "reliability.png")}
    assert calibrate.main([str(folder), "--calibration-data", str(two_stage[0].parent / "reviews.tsv"), "--all"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "line 3" in err and "Traceback" not in err
    assert {name: (folder / name).read_bytes() for name in files} == files
    assert sorted(p.name for p in folder.iterdir() if p.name.startswith(".")) == []  # no figure left aside


def test_a_file_of_another_layout_is_read_as_it_is_laid_out(tiny_clf_dir, tmp_path, capsys):
    """A model fine-tuned on review,sentiment could no longer be calibrated or plotted on SST-2's sentence,label
    file: every file calibrate read was read in the model's columns, and calibrate has no --text-column. The
    model's columns read the files that have them; another file is read in read_labeled's defaults."""
    import shutil

    from train import recorded_columns

    folder = shutil.copytree(tiny_clf_dir, tmp_path / "clf")
    own, sst = tmp_path / "own.tsv", tmp_path / "sst.tsv"
    own.write_text("review\tsentiment\n" + "".join(f"a fine film number {i}.\tpositive\nawful one {i}.\tnegative\n"
                                                   for i in range(30)), encoding="utf-8")
    sst.write_text("sentence\tlabel\n" + "".join(f"a fine film number {i}.\t1\nawful one {i}.\t0\n" for i in range(30)),
                   encoding="utf-8")
    command = f"python -m train.finetune --train {own} --dev {own} --text-column review --label-column sentiment"
    (folder / "metrics.json").write_text(json.dumps({"command": command, "dev_data": str(own)}), encoding="utf-8")
    recorded = recorded_columns.columns_in_metrics({"command": command})
    assert recorded == ("review", "sentiment")
    columns_for = recorded_columns.columns_for
    assert columns_for(own, recorded) == recorded and columns_for(sst, recorded) == (None, None)
    assert calibrate.main([str(folder), "--calibration-data", str(sst), "--all"]) == 0, capsys.readouterr().err
    assert json.loads((folder / "metrics.json").read_text())["calibration"]["calibration"]["n"] == 60
    assert calibrate.main([str(folder), "--dev", str(sst), "--plot-only"]) == 0, capsys.readouterr().err
    assert calibrate.main([str(folder), "--plot-only"]) == 0, capsys.readouterr().err  # its own dev, own columns
