"""scripts.phase_curve: accuracy against cumulative tokens across phases and the log-linear extrapolation."""
import json
import math

from scripts import phase_curve


def write_phases(folder, phases):
    (folder / "phases.json").write_text(json.dumps([{"train_tokens": t, "eval_accuracy": a} for t, a in phases]))


def test_extrapolation_through_the_phase_ends_of_the_last_doubling(tmp_path, capsys):
    write_phases(tmp_path, [(1e6, 0.10), (1e6, 0.20), (2e6, 0.25)])  # cumulative 1M, 2M, 4M tokens
    assert phase_curve.phase_points(tmp_path) == [(1e6, 0.10), (2e6, 0.20), (4e6, 0.25)]
    per_doubling, intercept = phase_curve.log_linear(phase_curve.phase_points(tmp_path))
    assert math.isclose(per_doubling, 0.05) and math.isclose(intercept + per_doubling * 22, 0.25, abs_tol=0.01)
    assert math.isclose(phase_curve.tokens_for(0.35, per_doubling, intercept), 16e6)  # two more doublings
    assert phase_curve.main(["--model", str(tmp_path), "--target", "0.35", "--tokens-per-s", "1000"]) == 0
    out = capsys.readouterr().out
    assert "+5.00 points per doubling" in out and "16M tokens: 12M more, 3.3 h" in out
    assert (tmp_path / "phases.png").read_bytes()[:4] == b"\x89PNG"
    # an --out of another format is written in that format, in one step (no temporary file left beside it)
    assert phase_curve.main(["--model", str(tmp_path), "--out", str(tmp_path / "curve.svg")]) == 0
    assert b"<svg" in (tmp_path / "curve.svg").read_bytes()[:1000]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["curve.svg", "phases.json", "phases.png"]


def test_no_gain_means_no_extrapolation(tmp_path, capsys):
    write_phases(tmp_path, [(1e6, 0.30), (1e6, 0.29)])
    assert phase_curve.main(["--model", str(tmp_path)]) == 0
    assert "did not improve accuracy measurably: no extrapolation" in capsys.readouterr().out
    assert phase_curve.main(["--model", str(tmp_path / "missing")]) == 2
    # equal phase ends whose fitted rate is rounding noise (2.4e-17 per doubling): no 2**(4e15) overflow
    assert phase_curve.tokens_for(0.5, 2.3724234956438363e-17, 0.085) is None
    assert phase_curve.tokens_for(0.5, 0.0, 0.085) is None and phase_curve.tokens_for(0.5, -0.01, 0.085) is None


def test_a_first_release_draws_its_one_phase_without_a_line(tmp_path, capsys):
    """One phase end: was "error: an extrapolation needs two phase ends", exit 2, after scripts.release's first run."""
    write_phases(tmp_path, [(1e6, 0.10)])
    assert phase_curve.main(["--model", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "phase 1: 1.0M tokens in all, held-out accuracy 10.0%" in out and "no rate to extrapolate yet" in out
    assert (tmp_path / "phases.png").read_bytes()[:4] == b"\x89PNG"
    # an --out of another format is written in that format, in one step (no temporary file left beside it)
    assert phase_curve.main(["--model", str(tmp_path), "--out", str(tmp_path / "curve.svg")]) == 0
    assert b"<svg" in (tmp_path / "curve.svg").read_bytes()[:1000]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["curve.svg", "phases.json", "phases.png"]


def test_a_target_far_beyond_the_line_is_out_of_reach_not_a_huge_number(tmp_path, capsys):
    """A nearly flat line printed "the line reaches 50% at 76945108120575148032M tokens" on a tiny model."""
    write_phases(tmp_path, [(1e6, 0.10), (1e6, 0.101)])  # +0.1 points per doubling: 50% needs 2**400 times more
    assert phase_curve.main(["--model", str(tmp_path), "--target", "0.5"]) == 0
    out = capsys.readouterr().out
    assert "out of reach at this rate: more than 1,000 times the tokens read so far" in out and "M more" not in out


def test_a_malformed_phases_file_or_a_folder_as_out_is_a_one_line_error(tmp_path, capsys):
    import pytest

    (tmp_path / "phases.json").write_text("{not json")  # was a JSONDecodeError traceback
    assert phase_curve.main(["--model", str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith(f"error: {tmp_path / 'phases.json'}: not a phases file: ")
    (tmp_path / "phases.json").write_text(json.dumps([{"eval_accuracy": 0.1}, {"train_tokens": 5}]))
    assert phase_curve.main(["--model", str(tmp_path)]) == 2  # was a TypeError traceback
    assert "phase 1 has no train_tokens or held-out accuracy" in capsys.readouterr().err
    write_phases(tmp_path, [(1e6, 0.10), (1e6, 0.20)])
    with pytest.raises(SystemExit) as exit_info:  # was "wrote FOLDER", while matplotlib wrote FOLDER.png
        phase_curve.main(["--model", str(tmp_path), "--out", str(tmp_path)])
    assert exit_info.value.code == 2 and f"--out {tmp_path} is a folder" in capsys.readouterr().err
    assert phase_curve.main(["--model", str(tmp_path), "--out", str(tmp_path / "new" / "curve.png")]) == 0  # was a
    assert (tmp_path / "new" / "curve.png").is_file()                                          # FileNotFoundError


def test_an_average_of_phases_is_a_point_above_the_phase_before_and_the_line_starts_earlier(tmp_path, capsys):
    # a weight average (train.average) trains no tokens: its point shares the x of the phase before it
    write_phases(tmp_path, [(1e6, 0.10), (1e6, 0.20), (2e6, 0.19), (0, 0.25)])
    points = phase_curve.phase_points(tmp_path)
    assert points[-2:] == [(4e6, 0.19), (4e6, 0.25)]
    per_doubling, _ = phase_curve.log_linear(points)
    assert math.isclose(per_doubling, 0.05)  # from 2M tokens (0.20) to the average at 4M (0.25): one doubling
    assert phase_curve.main(["--model", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "phase 4 (average): 4.0M tokens in all, held-out accuracy 25.0%" in out and "+5.00 points" in out
    write_phases(tmp_path, [(1e6, 0.10), (0, 0.12)])  # a phase and its average: drawn, no rate between them
    assert phase_curve.main(["--model", str(tmp_path)]) == 0
    assert ("no rate to extrapolate yet: it needs two phase ends at different numbers of tokens"
            in capsys.readouterr().out)


def test_the_rate_fits_every_phase_end_of_the_last_doubling(tmp_path):
    # cumulative 4M, 6M, 8M: the last step alone (+0.04 over log2(8/6)) would say +9.6 points per doubling; the
    # fit through the last end over the ends at 4M (-1 doubling, -0.04) and 6M (-0.415, -0.04) says less
    write_phases(tmp_path, [(4e6, 0.20), (2e6, 0.20), (2e6, 0.24), (0, 0.24)])
    points = phase_curve.phase_points(tmp_path)
    per_doubling, intercept = phase_curve.log_linear(points)
    dx = [-1.0, math.log2(6 / 8)]
    assert math.isclose(per_doubling, sum(x * -0.04 for x in dx) / sum(x * x for x in dx))
    assert 0.04 < per_doubling < 0.05 and math.isclose(intercept + per_doubling * math.log2(8e6), 0.24)
    # no phase end within the last doubling: the line runs through the last one before it
    write_phases(tmp_path, [(1e6, 0.10), (9e6, 0.20)])
    per_doubling, _ = phase_curve.log_linear(phase_curve.phase_points(tmp_path))
    assert math.isclose(per_doubling, 0.10 / math.log2(10))


def test_crowded_last_phase_ends_are_numbered_in_a_zoomed_inset(tmp_path):
    # seven phase ends, five of them within the last doubling of tokens: those five carry their numbers in an
    # inset, the main axes only the two before; a short history has no inset and numbers every point
    points = [(10e6, 0.10), (30e6, 0.20), (60e6, 0.30), (60e6, 0.31), (70e6, 0.32), (70e6, 0.33), (80e6, 0.34)]
    per_doubling, intercept = phase_curve.log_linear(points)
    fig = phase_curve.plot(points, per_doubling, intercept, 0.5, tmp_path / "crowded.png")
    main_axes = fig.axes[0]
    (inset,) = main_axes.child_axes
    assert [t.get_text() for t in inset.texts] == ["3", "4", "5", "6", "7"]
    assert [t.get_text() for t in main_axes.texts if t.get_text().isdigit()] == ["1", "2"]
    fig = phase_curve.plot(points[:3], per_doubling, intercept, 0.5, tmp_path / "short.png")
    assert not fig.axes[0].child_axes
    assert [t.get_text() for t in fig.axes[0].texts if t.get_text().isdigit()] == ["1", "2", "3"]


def test_a_phase_end_rescored_on_several_masks_is_drawn_at_that_score(tmp_path):
    phases = [{"train_tokens": 1e6, "eval_accuracy": 0.20, "eval_data": "valid.txt"},
              {"train_tokens": 1e6, "eval_accuracy": 0.29, "eval_data": "valid.txt",
               "mlm": {"source": "valid.txt", "accuracy": 0.30, "masks": 5}}]
    (tmp_path / "phases.json").write_text(json.dumps(phases))
    assert phase_curve.phase_points(tmp_path) == [(1e6, 0.20), (2e6, 0.30)]


def test_a_phase_trained_on_a_gpu_is_named_so(tmp_path, capsys):
    rows = [{"train_tokens": 1e6, "eval_accuracy": 0.10, "hardware": {"device": "cpu", "cpu": "EPYC"}},
            {"train_tokens": 0, "eval_accuracy": 0.12},
            {"train_tokens": 7e6, "eval_accuracy": 0.20, "hardware": {"device": "cuda:0", "gpu": "NVIDIA H100"}}]
    (tmp_path / "phases.json").write_text(json.dumps(rows))
    assert phase_curve.phase_labels(tmp_path) == ["phase 1", "phase 2 (average)", "phase 3 (GPU)"]
    assert phase_curve.main(["--model", str(tmp_path)]) == 0
    assert "phase 3 (GPU): 8.0M tokens in all, held-out accuracy 20.0%" in capsys.readouterr().out


def test_the_title_names_what_the_phases_were_scored_on(tmp_path, monkeypatch):
    """The title said "WikiText-2 valid, 128-token rows" whatever the phases' records said they were scored on."""
    (tmp_path / "config.json").write_text(json.dumps({"max_position_embeddings": 66}))  # longest input: 64 tokens
    phases = [{"train_tokens": 1e6, "eval_accuracy": 0.20, "eval_data": "../shared/data/wikitext-103/wiki.valid.tokens",
               "command": "python -m train.pretrain --eval-length 32"},  # its own evaluation at --eval-length
              {"train_tokens": 1e6, "eval_accuracy": 0.29,
               "eval_data": "gpu-upload/data/wikitext-103/wiki.valid.tokens.xz",  # the GPU upload's copy
               "mlm": {"source": "../shared/data/wikitext-103/wiki.valid.tokens", "max_length": 32, "accuracy": 0.3,
                       "masks": 5}}]  # rescored on several masks: the rescoring's text and rows
    (tmp_path / "phases.json").write_text(json.dumps(phases))
    drawn = []
    plot = phase_curve.plot
    monkeypatch.setattr(phase_curve, "plot", lambda *args, **kwargs: drawn.append(plot(*args, **kwargs)))
    assert phase_curve.main(["--model", str(tmp_path)]) == 0
    assert drawn[0].axes[0].get_title() == \
        "Held-out MLM accuracy (wikitext-103/wiki.valid.tokens, 32-token rows) across phases"
    # a phase scored otherwise (its own evaluation at the model's longest input) is named with its phases
    phases.append({"train_tokens": 1e6, "eval_accuracy": 0.31, "eval_data": "../shared/data/other/valid.txt"})
    (tmp_path / "phases.json").write_text(json.dumps(phases))
    assert phase_curve.title_of(phase_curve.scored_on(tmp_path)) == (
        "Held-out MLM accuracy (wikitext-103/wiki.valid.tokens, 32-token rows: phases 1-2; other/valid.txt, "
        "64-token rows: phase 3) across phases")
    # records that name neither text nor rows: no claim about them
    write_phases(tmp_path, [(1e6, 0.10), (1e6, 0.20)])
    (tmp_path / "config.json").unlink()
    assert phase_curve.title_of(phase_curve.scored_on(tmp_path)) == "Held-out MLM accuracy across phases"
