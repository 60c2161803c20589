"""train.probes end to end on tiny generated data: probes run from random weights, the table and figure."""
import json

import pytest

from train import probes


def test_plateau_exit_is_the_first_evaluation_below_the_line():
    evals = [{"loss": 6.6, "tokens": 1, "step": 1}, {"loss": 5.9, "tokens": 2, "step": 2},
             {"loss": 5.5, "tokens": 3, "step": 3}]
    assert probes.plateau_exit(evals)["step"] == 2
    assert probes.plateau_exit(evals[:1]) is None
    assert probes.first_below(evals, 5.6)["step"] == 3 and probes.first_below(evals, None) is None


def test_dry_run_changes_one_thing_per_probe(tmp_path, capsys):
    assert probes.main(["--dry-run", "--out", str(tmp_path / "p")]) == 0
    lines = dict(line.split(": ", 1) for line in capsys.readouterr().out.splitlines())
    assert set(lines) == {"tokenizer-16k", *probes.PROBES}
    reference = lines["reference"]
    assert "--token-budget 1e+06" in reference and "--eval-length 64" in reference and "--init" not in reference
    assert lines["lr-5e-4"] == reference.replace("--lr 0.001", "--lr 0.0005").replace("/reference", "/lr-5e-4")
    assert lines["bias-zero"] == reference.replace("--output-bias unigram", "--output-bias zero").replace(
        "/reference", "/bias-zero")
    assert lines["vocab-16k"].endswith("p/tokenizer-16k --resume") and not (tmp_path / "p").exists()


@pytest.mark.slow
def test_probes_run_and_summarize(train_files, tmp_path, single_thread):
    out, ship = tmp_path / "probes", tmp_path / "ship"
    argv = ["--only", "reference", "bias-zero", "--out", str(out), "--ship", str(ship), "--preset", "tiny",
            "--corpus", str(train_files / "corpus.txt"), "--valid", str(train_files / "valid.txt"),
            "--tokenizer", str(train_files / "tokenizer.json"), "--token-budget", "4000", "--eval-every", "2",
            "--eval-rows", "8", "--eval-length", "32", "--precision", "fp32", "--cache-dir", ""]
    assert probes.main(argv) == 0
    results = json.loads((ship / "results.json").read_text())
    assert list(results) == ["reference", "bias-zero"]
    for r in results.values():
        assert r["finished"] and r["tokens"] >= 4000 and len(r["curve"]) >= 3
        assert r["curve"][-1]["tokens"] == r["tokens"]  # the last evaluation is at the end of the budget
    table = (ship / "results.md").read_text()
    assert table.count("\n") == 4 and "| bias-zero |" in table
    assert (ship / "curves.png").read_bytes()[:4] == b"\x89PNG"
    # the unigram bias starts the model at the corpus's token frequencies: a lower first held-out loss
    assert results["reference"]["curve"][0]["loss"] < results["bias-zero"]["curve"][0]["loss"]
    # ... which is the unigram model every probe's first milestone is measured from
    assert results["bias-zero"]["unigram_loss"] == results["reference"]["curve"][0]["loss"]
    assert probes.main(argv) == 0  # run again: every probe is already done, the summary is rewritten
    # bias-zero without the reference probe has no unigram loss: its milestone was never looked for
    alone = {"bias-zero": {**results["bias-zero"], "unigram_loss": None, "below_unigram": None}}
    assert "| not measured (run the reference probe) |" in probes.markdown_table(alone)


def test_the_figure_tells_the_probes_apart_without_colour(monkeypatch, tmp_path):
    """The 8 probes' lines differed by colour alone (one marker for all), and lr-5e-4 (green) against lr-2e-3 (red),
    the docs' stuck probe, are hard to tell apart for a deuteranope: each probe has its own marker, and no two
    neighbours share a line style, in both panels."""
    from pathlib import Path

    from matplotlib.figure import Figure

    drawn = []  # (the figure is written to a temporary name that is then renamed: one to rename)
    monkeypatch.setattr(Figure, "savefig", lambda fig, path, **kw: drawn.append(fig) or Path(path).touch())
    curve = [{"tokens": t, "step": t, "loss": 7.0 - t / 1e6, "accuracy": 0.05 + t / 1e7} for t in (0, 5e5, 1e6)]
    probes.plot({name: {"curve": curve} for name in probes.PROBES}, tmp_path / "curves.png")
    for ax in drawn[0].axes:
        lines = [line for line in ax.get_lines() if line.get_label() in probes.PROBES]
        assert len(lines) == len(probes.PROBES)
        assert len({line.get_marker() for line in lines}) == len(lines)
        assert all(a.get_linestyle() != b.get_linestyle() and a.get_color() != b.get_color()
                   for a, b in zip(lines, lines[1:]))
