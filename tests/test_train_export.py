"""train.export: a run folder copied for shipping, weights stored in half precision, computing in float32."""
import json
import shutil

import pytest
import torch

import roberta
from roberta.run_metrics import RunMetrics
from train.export import main

pytestmark = pytest.mark.usefixtures("single_thread")


def test_export_float16_halves_the_file_and_keeps_predictions(tiny_mlm_dir, tmp_path):
    run = shutil.copytree(tiny_mlm_dir, tmp_path / "run")  # a finished run: its metrics.json, and checkpoints/
    RunMetrics(command="python -m train.pretrain ...").write(run)
    (run / "checkpoints").mkdir()  # never copied
    out = tmp_path / "shipped"
    assert main([str(run), str(out), "--dtype", "float16"]) == 0
    assert not (out / "checkpoints").exists()
    assert (out / "tokenizer.json").is_file()
    size = (out / "model.safetensors").stat().st_size
    assert size < 0.6 * (tiny_mlm_dir / "model.safetensors").stat().st_size
    original = roberta.RobertaForMaskedLM.from_pretrained(tiny_mlm_dir)
    shipped = roberta.RobertaForMaskedLM.from_pretrained(out)
    assert next(shipped.parameters()).dtype == torch.float32
    ids = torch.tensor([[0, 10, 20, 30, 4, 2]])
    with torch.no_grad():
        torch.testing.assert_close(shipped(ids).logits, original(ids).logits, atol=2e-3, rtol=1e-2)


def test_export_over_an_earlier_one_leaves_no_file_of_the_other_model(tiny_mlm_dir, tmp_path):
    out = tmp_path / "shipped"
    assert main([str(tiny_mlm_dir), str(out)]) == 0  # an earlier export (train.export refuses any other folder)
    for stale in ("curves.png", "log.jsonl", "phases.json"):  # written by an earlier export of another run
        (out / stale).write_text("another model's")
    (out / "arms.json").write_text("{}")  # not an export's file: a release writes it after exporting
    run = tmp_path / "run"  # a copy: the fixture's folder is shared by the session
    shutil.copytree(tiny_mlm_dir, run)
    (run / "curves.png").write_bytes(b"\x89PNG this run's")
    (run / "log.jsonl").unlink(missing_ok=True)
    assert main([str(run), str(out)]) == 0
    assert (out / "curves.png").read_bytes() == b"\x89PNG this run's"
    assert not (out / "log.jsonl").exists()
    assert not (out / "phases.json").exists() and (out / "arms.json").is_file()


def test_transformers_loads_a_float16_export_as_float32(tiny_mlm_dir, tmp_path):
    transformers = pytest.importorskip("transformers")
    out = tmp_path / "shipped"
    assert main([str(tiny_mlm_dir), str(out)]) == 0
    hf = transformers.AutoModelForMaskedLM.from_pretrained(out)
    assert next(hf.parameters()).dtype == torch.float32


def test_export_of_a_folder_without_weights_is_a_clear_error(tmp_path, capsys):
    assert main([str(tmp_path), str(tmp_path / "out")]) == 2
    assert "not a finished model folder" in capsys.readouterr().err


def test_export_onto_a_file_or_onto_itself_is_a_clear_error(tiny_mlm_dir, tmp_path, capsys):
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    assert main([str(tiny_mlm_dir), str(a_file)]) == 2  # was "[Errno 17] File exists: '...'"
    assert capsys.readouterr().err == f"error: the destination {a_file} is a file, not a folder\n"
    assert main([str(tiny_mlm_dir), str(tiny_mlm_dir)]) == 2  # was "PosixPath(...) and PosixPath(...) are the same
    err = capsys.readouterr().err                                # file"
    assert err == f"error: {tiny_mlm_dir} is the folder being exported: choose another destination\n"


def test_an_export_that_fails_or_is_stopped_leaves_the_destination_as_it_was(tiny_mlm_dir, tmp_path, monkeypatch):
    """The new folder is built beside the destination and swapped in whole: new metrics and card used to sit beside
    the old weights after a stopped export, and every loader took the folder as whole."""
    from train import export as E
    out = tmp_path / "shipped"
    assert main([str(tiny_mlm_dir), str(out)]) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    run = tmp_path / "run"
    shutil.copytree(tiny_mlm_dir, run)
    (run / "README.md").write_text("another run's card")

    def stopped(*args, **kwargs):
        raise KeyboardInterrupt  # as if killed while writing the weights
    monkeypatch.setattr(E, "_store", stopped)
    with pytest.raises(KeyboardInterrupt):
        E.export(run, out)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run", "shipped"]  # no half-built copy left
    # a crash between the two renames: the old folder is put back by the next call, which then succeeds
    monkeypatch.undo()
    out.rename(tmp_path / E.OLD.format("shipped", ""))
    (tmp_path / E.STAGING.format("shipped", 99999)).mkdir()  # and a killed call's copy, cleaned up
    assert E.export(run, out) == out
    assert (out / "README.md").read_text() == "another run's card"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run", "shipped"]


def test_an_unfinished_run_is_not_exported(tiny_mlm_dir, tmp_path, capsys):
    run = tmp_path / "run"
    shutil.copytree(tiny_mlm_dir, run)
    (run / "metrics.json").unlink(missing_ok=True)
    (run / "checkpoints").mkdir(exist_ok=True)
    assert main([str(run), str(tmp_path / "out")]) == 2
    assert "has not finished" in capsys.readouterr().err and not (tmp_path / "out").exists()


def test_a_partial_model_is_not_averaged(tiny_mlm_dir, tmp_path, capsys):
    """The weights where a cut run stopped, with no final evaluation: train.average took it as a member and wrote
    an average whose metrics no longer said it was partial (and scripts.release would then have shipped it)."""
    from train import average
    from train.export import PARTIAL

    partial = shutil.copytree(tiny_mlm_dir, tmp_path / "partial")
    (partial / "metrics.json").write_text(json.dumps({PARTIAL: "stopped by SIGTERM at step 1: no final evaluation"}))
    assert average.main([str(tiny_mlm_dir), str(partial), "--out", str(tmp_path / "avg")]) == 2
    err = capsys.readouterr().err
    assert f"{partial} is a partial model, not a finished run to average: stopped by SIGTERM at step 1" in err
    assert not (tmp_path / "avg").exists()


@pytest.mark.parametrize("stopped_by, says", [
    (None, "saved these weights on its way, at step 2 (64 tokens), and may have gone on after them"),
    ("SIGINT", "was stopped by SIGINT at step 2 (64 tokens)"),
    ("time", "stopped in its final evaluation, at step 2 (64 tokens)")])
def test_a_checkpoint_of_an_unfinished_run_says_how_far_it_is(tiny_mlm_dir, tmp_path, stopped_by, says):
    """A checkpoint saved on the way (--keep-checkpoints; the trainer state's stopped_by None) said the run "went
    on after it and stopped without saving again (killed, or failed)", where the run had saved later ones."""
    from train.checkpointing import Checkpoints
    from train.export import PARTIAL

    run = tmp_path / "run"
    run.mkdir()
    for name in ("config.json", "tokenizer.json"):
        shutil.copy(tiny_mlm_dir / name, run / name)
    model = roberta.RobertaForMaskedLM.from_pretrained(tiny_mlm_dir)
    state = {"step": 2, "tokens": 64, "epoch": 0, "batch_in_epoch": 2, "elapsed": 1.5, "optimizer": {}, "rng": {},
             "task": {}, "args": {"corpus": "corpus.txt"}, "stopped_by": stopped_by}
    checkpoint = Checkpoints(run).save("step", 2, model.state_dict(), trainer_state=state)
    assert main([str(checkpoint), str(tmp_path / "out")]) == 0
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert metrics["stopped_by"] == (stopped_by or "unknown") and metrics["corpus"] == "corpus.txt"
    assert metrics["max_length"] == model.config.max_length  # --max-length's default: rows the model's longest
    assert f"the weights of step-00000002 of {run}, a run from random weights that had not finished: it {says}" \
        in metrics[PARTIAL]
