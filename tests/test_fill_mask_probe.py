"""train.fill_mask_probe: ranks counted right, and the script end to end on a tiny model."""
import json

import pytest

from train.fill_mask_probe import DEFAULT_PROBE, main, read_probe, run_probe


def fake_fill(answers):
    def fill(text, top_k):
        return [{"token_str": " " + w, "score": 0.5 / (i + 1)} for i, w in enumerate(answers[text][:top_k])]
    return fill


def test_ranks_and_categories():
    rows = [{"category": "a", "sentence": "x <mask>.", "expected": "Dog"},
            {"category": "a", "sentence": "y <mask>.", "expected": "cat"},
            {"category": "b", "sentence": "z <mask>.", "expected": "mat"}]
    fill = fake_fill({"x <mask>.": ["dog", "cat"], "y <mask>.": ["dog", "cat"], "z <mask>.": ["floor"] * 5})
    result = run_probe(fill, rows, top_k=5)
    assert [a["rank"] for a in result["answers"]] == [1, 2, None]   # case-insensitive, stripped
    assert result["top1"] == 1 / 3 and result["top5"] == 2 / 3
    assert result["categories"]["a"] == {"sentences": 2, "top1": 0.5, "top5": 1.0}
    assert result["categories"]["b"]["top5"] == 0.0


def test_shipped_probe_file_is_well_formed():
    rows = read_probe(DEFAULT_PROBE)
    assert len(rows) >= 20 and len({r["category"] for r in rows}) >= 4


def test_script_end_to_end(tiny_mlm_dir, tmp_path, single_thread, capsys):
    probe = tmp_path / "probe.tsv"
    probe.write_text("category\tsentence\texpected\nplaces\tThe cat likes <mask>.\tFrance\n")
    out = tmp_path / "probe.json"
    assert main(["--model", str(tiny_mlm_dir), "--probe", str(probe), "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["sentences"] == 1 and len(result["answers"][0]["predictions"]) == 5
    assert "top-1" in capsys.readouterr().out


def test_bad_probe_file_is_a_user_error(tiny_mlm_dir, tmp_path, capsys):
    probe = tmp_path / "probe.tsv"
    probe.write_text("category\tsentence\texpected\nx\tno mask here\tword\n")
    assert main(["--model", str(tiny_mlm_dir), "--probe", str(probe)]) == 2
    assert "probe.tsv:2" in capsys.readouterr().err


def test_empty_probe_classifier_model_and_out_paths(tiny_mlm_dir, tiny_clf_dir, tmp_path, single_thread, capsys):
    probe = tmp_path / "probe.tsv"
    probe.write_text("category\tsentence\texpected\n")
    assert main(["--model", str(tiny_mlm_dir), "--probe", str(probe)]) == 2  # was a ZeroDivisionError traceback
    assert capsys.readouterr().err.startswith(f"error: {probe}: no probe rows")
    # was "... does not fit RobertaForMaskedLM: missing keys [...], unexpected keys [...]"
    assert main(["--model", str(tiny_clf_dir)]) == 2
    assert capsys.readouterr().err == (f"error: {tiny_clf_dir} is a classifier (RobertaForSequenceClassification); "
                                       "the probe needs a masked-LM model\n")
    with pytest.raises(SystemExit) as exit_info:  # was an IsADirectoryError traceback after the probe ran
        main(["--model", str(tiny_mlm_dir), "--out", str(tmp_path)])
    assert exit_info.value.code == 2 and f"--out {tmp_path} is a folder" in capsys.readouterr().err
    out = tmp_path / "new" / "probe.json"  # was a FileNotFoundError traceback after the probe ran
    assert main(["--model", str(tiny_mlm_dir), "--out", str(out)]) == 0
    assert json.loads(out.read_text())["sentences"] >= 20
