"""train.fill_mask_probe: ranks counted right, and the script end to end on a tiny model."""
import json
import os
import re
import subprocess
import sys

import pytest
import torch

import roberta
from train.fill_mask_probe import DEFAULT_PROBE, main, read_probe, run_probe
from helpers import ROOT


def fake_fill(answers):
    def fill(text, top_k):
        return [{"token_str": " " + w, "score": 0.5 / (i + 1)} for i, w in enumerate(answers[text][:top_k])]
    return fill


# where the README and docs give the probe's size: "28 everyday sentences", "the probe's 28 sentences", "of the 28
# sentences" (docs/pretraining.md), and "(8 of 28 for the shipped MLM)" of the card's widget examples
PROBE_COUNT = re.compile(r"(\d+)\s+everyday sentences|probe's (\d+) sentences|of the (\d+) sentences"
                         r"|(\d+) of (\d+) for the shipped MLM")


def test_the_readme_counts_the_probes_sentences():
    """The probe file is a measurement: the README's and docs' figures are on its sentences (a sentence added made
    them stale, and nothing said so), and the shipped MLM card's widget examples are the probe sentences it gets
    right, as many as the README says."""
    sentences = len(read_probe(DEFAULT_PROBE))
    widget = re.findall(r"^- text: ", (ROOT / "assets/mini-roberta-mlm/README.md").read_text(encoding="utf-8"),
                        flags=re.M)
    stale = []
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = doc.read_text(encoding="utf-8")
        for m in PROBE_COUNT.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            right, size = (m.group(4), m.group(5)) if m.group(5) else (None, next(filter(None, m.groups())))
            if int(size) != sentences or (right is not None and int(right) != len(widget)):
                stale.append(f"{doc.relative_to(ROOT)}:{line}: {m.group(0)!r}")
    assert not stale, (
        f"{DEFAULT_PROBE.name} has {sentences} sentences and the shipped MLM card {len(widget)} widget examples; "
        f"stale: {stale}: update these figures from a re-release (python -m train.fill_mask_probe --model "
        "assets/mini-roberta-mlm prints them)")
    said = [m for m in PROBE_COUNT.finditer((ROOT / "README.md").read_text(encoding="utf-8")) if m.group(1)]
    assert said and widget, "the README gives the probe's size as 'N everyday sentences'; the card has a widget"


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


def test_a_stdout_that_cannot_encode_the_text_gets_escapes_not_a_crash(tiny_mlm_dir, tmp_path):
    """Run with its output redirected on Windows (the ANSI code page, cp1252 here, as PYTHONIOENCODING sets it),
    the probe ended in a UnicodeEncodeError traceback at a sentence with an emoji; a model's answers are any
    vocabulary token, so Greek or Cyrillic ones did the same. What cp1252 has is written as it is, the rest as
    escapes."""
    probe = tmp_path / "probe.tsv"
    probe.write_text("category\tsentence\texpected\nfood\tI ate a crème brûlée and a <mask>.\tcake\n"
                     "emoji\tThis is great \N{GRINNING FACE} <mask> you.\tthank\n", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONIOENCODING": "cp1252"}
    result = subprocess.run([sys.executable, "-m", "train.fill_mask_probe", "--model", str(tiny_mlm_dir),
                             "--probe", str(probe)], cwd=ROOT, env=env, capture_output=True, timeout=120)
    out, err = result.stdout.decode("cp1252"), result.stderr.decode("cp1252")
    assert result.returncode == 0 and "Traceback" not in err, err
    assert "I ate a crème brûlée and a <mask>." in out and "This is great \\U0001f600 <mask> you." in out, out


def test_layer_by_layer_ends_in_the_probes_own_figures(tiny_mlm_dir, tmp_path, single_thread, capsys):
    """--layers: the expected word's rank at every layer; the last layer's top-1/top-5 are the probe's, and a
    word's rank is within top-5 exactly when the probe found it there."""
    import roberta
    from train.fill_mask_probe import run_layers

    fill = roberta.pipeline("fill-mask", model=tiny_mlm_dir)
    rows = [{"category": "x", "sentence": s, "expected": w}
            for s, w in [("The cat likes <mask>.", "the"), ("<mask> sees the house.", "The"),
                         ("A dog and a <mask>.", "cat"), ("The <mask> is here.", "no-such-word-at-all")]]
    probe, lens = run_probe(fill, rows), run_layers(fill, rows)
    n_layers = fill.model.config.num_hidden_layers
    assert [row["layer"] for row in lens["layers"]] == list(range(n_layers + 1))
    assert lens["layers"][-1]["top1"] == probe["top1"] and lens["layers"][-1]["top5"] == probe["top5"]
    for answer, ranks in zip(probe["answers"], lens["ranks"]):
        assert len(ranks["rank_by_layer"]) == n_layers + 1
        last = ranks["rank_by_layer"][-1]
        assert (answer["rank"] is not None) == (last is not None and last <= 5)
    assert lens["ranks"][-1]["rank_by_layer"] == [None] * (n_layers + 1)  # no token spells it
    probe_file = tmp_path / "probe.tsv"
    probe_file.write_text("category\tsentence\texpected\n" + "".join(f"x\t{r['sentence']}\t{r['expected']}\n"
                                                                    for r in rows))
    out = tmp_path / "probe.json"
    assert main(["--model", str(tiny_mlm_dir), "--probe", str(probe_file), "--layers", "--out", str(out)]) == 0
    assert json.loads(out.read_text())["by_layer"] == lens
    printed = capsys.readouterr().out
    assert "layer by layer" in printed and f"layer {n_layers}  " in printed and "embeddings" in printed


def test_bad_probe_file_is_a_user_error(tiny_mlm_dir, tmp_path, capsys):
    probe = tmp_path / "probe.tsv"
    probe.write_text("category\tsentence\texpected\nx\tno mask here\tword\n")
    assert main(["--model", str(tiny_mlm_dir), "--probe", str(probe)]) == 2
    assert f"error: {probe} line 2: the sentence needs one <mask>, it has 0" in capsys.readouterr().err


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


def test_a_byte_order_mark_is_read_and_a_missing_column_is_named(tiny_mlm_dir, tmp_path, capsys):
    """A probe saved with a byte-order mark (its header's first column read as '\\ufeffcategory') and a probe
    without a category column were a KeyError traceback (exit 1)."""
    bom = tmp_path / "bom.tsv"
    bom.write_bytes(b"\xef\xbb\xbf" + DEFAULT_PROBE.read_bytes())
    assert read_probe(bom) == read_probe(DEFAULT_PROBE)
    no_category = tmp_path / "no-category.tsv"
    no_category.write_text("sentence\texpected\nThe <mask> is here.\tcat\n")
    assert main(["--model", str(tiny_mlm_dir), "--probe", str(no_category)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {no_category}: the header must be category<TAB>sentence<TAB>expected, got "
                          "['sentence', 'expected']") and len(err.splitlines()) == 1, err
    short = tmp_path / "short.tsv"  # a row of one field: its sentence is missing, not a traceback
    short.write_text("category\tsentence\texpected\nx\n")
    assert main(["--model", str(tiny_mlm_dir), "--probe", str(short)]) == 2
    assert f"{short} line 2: no sentence, expected; each row needs" in capsys.readouterr().err


def test_the_probe_runs_on_the_cpu_unless_told_even_beside_a_gpu(tiny_mlm_dir, tmp_path, monkeypatch, single_thread,
                                                                 capsys):
    """The published figures are the CPU's, as the app runs the models; on a machine with a GPU the probe took it,
    and its figures differed from them in the last places. --device picks another, checked as train.evaluate's."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # a machine with one GPU
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    real, devices = roberta.pipeline, []

    def pipeline(task, model, device=None):
        devices.append(device)
        return real(task, model=model, device="cpu")  # the model computes here on the CPU whatever it was asked

    monkeypatch.setattr(roberta, "pipeline", pipeline)
    probe = tmp_path / "probe.tsv"
    probe.write_text("category\tsentence\texpected\nplaces\tThe cat likes <mask>.\tFrance\n")
    for given in ([], ["--device", "cuda"], ["--device", "0"]):
        assert main(["--model", str(tiny_mlm_dir), "--probe", str(probe), *given]) == 0
    assert devices == ["cpu", "cuda", "cuda:0"]
    for typed, said in (("mps", "--device must be 'cpu', 'cuda', 'cuda:N'"),
                        ("3", "--device '3': this machine has 1 CUDA device(s)")):
        with pytest.raises(SystemExit) as exit_info:
            main(["--model", str(tiny_mlm_dir), "--probe", str(probe), "--device", typed])
        assert exit_info.value.code == 2 and said in capsys.readouterr().err
    assert len(devices) == 3  # refused before the model was loaded
