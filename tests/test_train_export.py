"""train.export: a run folder copied for shipping, weights stored in half precision, computing in float32."""
import json
import shlex
import shutil
from pathlib import Path

import pytest
import torch

import roberta
from roberta.run_metrics import RunMetrics
from train import export
from train.export import main

from helpers import read_only

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


def _with_metadata_reversed(path):
    """Rewrite the safetensors file `path` with its header's metadata in reverse order (as the shipped files' are
    not sorted): the same tensors and metadata, other bytes."""
    data = path.read_bytes()
    length = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + length])
    header["__metadata__"] = dict(reversed(header["__metadata__"].items()))
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    path.write_bytes(data[:8] + text.ljust(length) + data[8 + length:])
    return path.read_bytes()


def test_a_re_export_of_the_same_weights_keeps_the_destinations_file(tiny_mlm_dir, tmp_path):
    """A card-only re-release rewrote the shipped model.safetensors (same tensors, its metadata written in another
    order): 26 MB changed in git for nothing. The destination's file is kept when its tensors and metadata are the
    export's, compared; otherwise written anew."""
    from safetensors.torch import load_file, save_file

    run, out = shutil.copytree(tiny_mlm_dir, tmp_path / "run"), tmp_path / "shipped"
    assert main([str(run), str(out), "--dtype", "float16"]) == 0
    written = (out / "model.safetensors").read_bytes()
    shipped = _with_metadata_reversed(out / "model.safetensors")
    assert shipped != written
    assert main([str(run), str(out), "--dtype", "float16"]) == 0
    assert (out / "model.safetensors").read_bytes() == shipped  # kept: the same tensors and metadata
    tensors, metadata = roberta.checkpoint.read_weights(out / "model.safetensors")
    tensors["extra.bias"] = torch.zeros(1, dtype=torch.float16)
    save_file(tensors, out / "model.safetensors", metadata)  # the same names and metadata, and one tensor more
    assert main([str(run), str(out), "--dtype", "float16"]) == 0
    assert "extra.bias" not in load_file(out / "model.safetensors")
    weights, metadata = roberta.checkpoint.read_weights(run / "model.safetensors")
    name = next(iter(weights))
    weights[name] = weights[name] + 1  # the run trained on: the same names, other values
    save_file(weights, run / "model.safetensors", metadata)
    assert main([str(run), str(out), "--dtype", "float16"]) == 0
    assert torch.equal(load_file(out / "model.safetensors")[name], weights[name].half())
    assert main([str(run), str(out), "--dtype", "float32"]) == 0  # the same values in another dtype: written anew
    assert load_file(out / "model.safetensors")[name].dtype == torch.float32
    zero = torch.zeros(3)
    assert export._same_bits(zero, zero.clone()) and not export._same_bits(zero, -zero)  # -0.0 == 0.0, other bits


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


def test_a_destination_that_cannot_be_written_or_fills_up_is_named_not_its_staged_copy(tiny_mlm_dir, tmp_path,
                                                                                      monkeypatch, capsys):
    """A read-only destination was "[Errno 30] Read-only file system: '.../.exp.staging-4606'", a full disk during
    a copy named the staged copy too: the destination is named, with what to do."""
    import errno

    ro = tmp_path / "ro"
    ro.mkdir()
    read_only(monkeypatch, ro)
    assert main([str(tiny_mlm_dir), str(ro / "exp")]) == 2
    assert capsys.readouterr().err == (f"error: the destination {ro / 'exp'}: cannot write in {ro} (Read-only file "
                                       "system); choose a folder this process can write in\n")
    assert list(ro.iterdir()) == []
    monkeypatch.undo()
    copy = shutil.copy2

    def disk_full(src, dst, **kwargs):
        if Path(dst).name == "tokenizer.json":
            raise OSError(errno.ENOSPC, "No space left on device", str(src), None, str(dst))
        return copy(src, dst, **kwargs)
    monkeypatch.setattr(export.shutil, "copy2", disk_full)
    assert main([str(tiny_mlm_dir), str(tmp_path / "exp")]) == 2
    assert capsys.readouterr().err == (f"error: could not write {tmp_path / 'exp' / 'tokenizer.json'} (No space left "
                                       "on device): free some space, then run the same command again\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ro"]  # no half-built copy left


def test_an_export_whose_weights_do_not_load_back_is_refused(tiny_mlm_dir, tmp_path, monkeypatch, capsys):
    """The written folder is loaded back strictly before it replaces the destination: weights written without a
    tensor fail the export, and the earlier export stays as it was."""
    out = tmp_path / "shipped"
    assert main([str(tiny_mlm_dir), str(out)]) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    save_weights = roberta.checkpoint.save_weights

    def without_a_tensor(tensors, path, metadata):
        save_weights({k: v for k, v in tensors.items() if k != "lm_head.bias"}, path, metadata)
    monkeypatch.setattr(roberta.checkpoint, "save_weights", without_a_tensor)
    assert main([str(tiny_mlm_dir), str(out), "--dtype", "float32"]) == 2
    err = capsys.readouterr().err
    assert "missing keys ['lm_head.bias']" in err
    assert f"error: {out}" in err and ".staging-" not in err, err  # the destination, not its hidden staged copy
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["shipped"]  # no half-built copy left


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


def test_average_names_a_members_missing_or_truncated_files_first(tiny_clf_dir, tmp_path, capsys):
    """A member without model.safetensors (or with a truncated one) was reported as "the members do not share one
    calibration slice"; one without tokenizer.json as a bare "[Errno 2] No such file or directory". Each member's
    config, weights and tokenizer are now checked before anything is compared, and the file is named."""
    from train import average

    good = shutil.copytree(tiny_clf_dir, tmp_path / "good")
    (good / "metrics.json").write_text(json.dumps({"init": "x", "calibration": {"slice": {"n": 20, "seed": 1}}}))
    cases = {"no weights": lambda m: (m / "model.safetensors").unlink(),
             "truncated weights": lambda m: (m / "model.safetensors").write_bytes(
                 (m / "model.safetensors").read_bytes()[:1000]),
             "no tokenizer": lambda m: (m / "tokenizer.json").unlink()}
    said = {"no weights": "has no model.safetensors",
            "truncated weights": "model.safetensors: not a readable safetensors file (truncated or corrupt?)",
            "no tokenizer": "tokenizer.json"}
    for name, damage in cases.items():
        member = shutil.copytree(tiny_clf_dir, tmp_path / name.replace(" ", "-"))
        (member / "metrics.json").write_text(json.dumps({"init": "x"}))  # no calibration slice: not the error
        damage(member)
        assert average.main([str(good), str(member), "--out", str(tmp_path / "avg")]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: {member}") and said[name] in err and err.count("\n") == 1, (name, err)
        assert "calibration slice" not in err and "Errno" not in err, (name, err)
    assert not (tmp_path / "avg").exists()


def test_export_refuses_a_source_without_tokenizer_a_corrupt_metrics_or_a_destination_inside_it(tiny_mlm_dir,
                                                                                               tmp_path, capsys):
    """train.export wrote a folder without tokenizer.json (exit 0; train.push then refused it, and nothing could load
    it by name), copied a corrupt metrics.json into its "checked" output, and exported RUN into RUN/sub, whose files
    `train.push RUN` then listed to upload. Each is refused before anything is written."""
    source = shutil.copytree(tiny_mlm_dir, tmp_path / "model")
    (source / "tokenizer.json").unlink()
    assert main([str(source), str(tmp_path / "out")]) == 2
    assert f"error: {source} has no tokenizer.json: its export could not be used" in capsys.readouterr().err
    shutil.copy(tiny_mlm_dir / "tokenizer.json", source / "tokenizer.json")
    (source / "metrics.json").write_text('{"x": \n')
    assert main([str(source), str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {source / 'metrics.json'}: not a metrics file") and "export again" in err
    (source / "metrics.json").unlink()
    assert main([str(source), str(source / "sub")]) == 2
    assert f"the destination {source / 'sub'} is inside {source}, the folder being exported" in capsys.readouterr().err
    assert not (tmp_path / "out").exists() and not (source / "sub").exists()
    assert main([str(source), str(tmp_path / "out")]) == 0  # the folder as it should be


def test_a_model_folder_named_like_a_json_file_loads_its_tokenizer(tiny_mlm_dir, tmp_path):
    """A model folder whose name ends in .json (runs/m.json) was read as a tokenizer file: "no such tokenizer file"
    from train.evaluate --model. A folder is a folder, whatever its name."""
    folder = shutil.copytree(tiny_mlm_dir, tmp_path / "m.json")
    assert roberta.load_tokenizer(folder).get_vocab_size() == roberta.load_tokenizer(tiny_mlm_dir).get_vocab_size()
    with pytest.raises(roberta.ModelNotFoundError, match="no such tokenizer file"):
        roberta.load_tokenizer(tmp_path / "missing.json")


def unfinished_run_checkpoint(tiny_mlm_dir, folder, stopped_by="SIGTERM"):
    """RUN/checkpoints/step-00000002 of a pretraining run that did not finish: the config and tokenizer files a
    stopped train.pretrain leaves, and no metrics.json."""
    from train.checkpointing import Checkpoints

    run = folder / "run"
    run.mkdir()
    for name in ("config.json", "tokenizer.json"):
        shutil.copy(tiny_mlm_dir / name, run / name)
    model = roberta.RobertaForMaskedLM.from_pretrained(tiny_mlm_dir)
    state = {"step": 2, "tokens": 64, "epoch": 0, "batch_in_epoch": 2, "elapsed": 1.5, "optimizer": {}, "rng": {},
             "task": {}, "args": {"corpus": "corpus.txt"}, "stopped_by": stopped_by}
    return run, Checkpoints(run).save("step", 2, model.state_dict(), trainer_state=state)


def test_push_refuses_a_partial_model_before_any_request(tiny_mlm_dir, tmp_path, capsys, monkeypatch):
    """A partial model (its metrics.json: "do not ship it") passed train.push's checks and failed only at the
    network: refused with one line before any request, as train.export and scripts.release refuse it."""
    import huggingface_hub

    from train import push
    from train.export import PARTIAL

    _, checkpoint = unfinished_run_checkpoint(tiny_mlm_dir, tmp_path)
    partial = tmp_path / "partial"
    assert main([str(checkpoint), str(partial)]) == 0
    assert all((partial / name).is_file() for name in push.REQUIRED_FILES)  # what push checked, and passed
    note = json.loads((partial / "metrics.json").read_text())[PARTIAL]
    assert note.endswith("do not ship it: train.export, train.push and scripts.release refuse it")
    monkeypatch.setattr(huggingface_hub, "HfApi", lambda *args, **kwargs: pytest.fail("a request to the Hub"))
    assert push.main([str(partial), "--repo-id", "user/test"]) == 2
    assert capsys.readouterr().err == f"error: {partial} is a partial model, not one to ship: {note}\n"


# ----- a step checkpoint of a finished fine-tuning run -----
@pytest.fixture(scope="module")
def kept_run(train_files, tiny_mlm_dir, tmp_path_factory):
    """A fine-tuning run that kept its step checkpoints 2, 4 and 6 (calibrated, scored on dev, IMDB and checks)."""
    from train import finetune
    from helpers import finetune_argv

    run = tmp_path_factory.mktemp("kept") / "run"
    assert finetune.main(finetune_argv(train_files, run, "--init", str(tiny_mlm_dir), "--save-every", "2",
                                       "--keep-checkpoints")) == 0
    return run


@pytest.mark.slow  # a fine-tuning run, several seconds
def test_checkpoints_of_one_run_average_as_one_start_on_the_runs_data(kept_run, tmp_path):
    """README: an exported step checkpoint lets train.average "average points along a run". For a classifier it
    refused them ("the members start from different weights": each init was "checkpoint RUN/..."), then ("do not
    share one calibration slice"), then wrote an average with "dev accuracy -" (no dev set) and train_steps 10."""
    from train import average, evaluate, tables
    from train.checkpointing import CHECKPOINTS

    points = []
    for step in (2, 4):
        points.append(tmp_path / f"step-{step}")
        assert main([str(kept_run / CHECKPOINTS / f"step-{step:08d}"), str(points[-1])]) == 0
    run = json.loads((kept_run / "metrics.json").read_text())
    first, second = (json.loads((p / "metrics.json").read_text()) for p in points)
    for key in ("init", "init_root", "init_gave", "head_seed", "train_data", "dev_data", "imdb_data", "imdb_seed",
                "imdb_examples", "max_length", "calibration_examples"):  # the run's start and data
        assert first[key] == run[key], key
    assert first["calibration"] == {"slice": run["calibration"]["slice"], "source": run["calibration"]["source"]}
    assert first["checkpoint"] == {  # the checkpoint's own identity, apart
        "run": str(kept_run), "step": 2, "run_steps": 6, "command": run["command"],
        "checks": {"source": run["checks"]["source"], "unsure_below": run["checks"]["unsure_below"]},
        "note": first["checkpoint"]["note"]}
    assert first["train_steps"] == 2 and second["train_steps"] == 4
    assert not {"dev_accuracy", "imdb_accuracy", "checks", "selection"} & first.keys()  # no figure of the run's end

    out = tmp_path / "avg"
    argv = [*map(str, points), "--out", str(out)]
    assert average.main(argv) == 0
    avg = json.loads((out / "metrics.json").read_text())
    assert avg["init_root"] == run["init_root"] and avg["calibration"]["slice"] == run["calibration"]["slice"]
    assert avg["dev_examples"] == run["dev_examples"]
    model = roberta.RobertaForSequenceClassification.from_pretrained(out)
    texts, labels, _ = tables.read_labeled(run["dev_data"], label_names=model.config.id2label)
    dev = evaluate.evaluate_classifier(model, roberta.load_tokenizer(out), texts, labels, max_length=run["max_length"])
    assert avg["dev_accuracy"] == dev["accuracy"]  # the averaged weights', on the run's dev set
    assert avg["imdb_examples"] == run["imdb_examples"] and avg["checks"]["n"] == run["checks"]["n"]
    assert avg["command"] == shlex.join(["python", "-m", "train.average", *argv])  # as given, nothing after it
    # the training the average cost: the run, once, to its step 4 (not 2, the first member's; nor 2 + 4)
    assert avg["train_steps"] == 4 and avg["train_time_s"] == second["train_time_s"]
    assert [(m["run"], m["step"]) for m in avg["members"]] == [(str(kept_run), 2), (str(kept_run), 4)]
    card = (out / "README.md").read_text()
    assert "weight average of 2 points of one fine-tuning run" in card and "at steps 2, 4" in card
    assert "different seeds" not in card and "end-of-run weights" not in card
    assert f"The run started from `{run['init']}`." in card  # where the run, and so every point, began


# RunMetrics fields an export of a step checkpoint does not take from its run (`checkpoint_metrics`), each for its
# reason; every other field describes the run, and is in train.export's RUN_FIELDS or RUN_EVALUATION_FIELDS
NOT_FROM_THE_RUN = {
    # the checkpoint's own: its step, tokens and training time, where it stopped (a partial model), its identity
    "train_steps", "kept_step", "train_tokens", "train_time_s", "stopped_by", "checkpoint",
    # of the run's end: its figures, its wall time, the weights it kept, its resumes (some after the checkpoint's step)
    "eval_loss", "eval_accuracy", "eval_perplexity", "eval_tokens", "eval_constant_guess_token",
    "eval_constant_guess_accuracy", "dev_accuracy", "dev_examples", "dev_ece",
    "dev_ece_uncalibrated", "imdb_accuracy", "imdb_accuracy_whole", "selection", "end_weights_dev_accuracy",
    "wall_time_s", "resumed_with",
    # a classifier's temperature (reset to 1.0), calibration (its slice only) and checks (named in `checkpoint`)
    "temperature", "calibration", "checks",
    "command",  # the run's, in the `checkpoint` entry: it did not make these weights alone
    "mlm", "labeled", "imdb", "fill_mask_probe",  # measured after training, on the run's final weights
    "averaged", "members", "member_hardware",  # train.average's: an average keeps no step checkpoints
    "extra",  # keys the schema does not know
}


def test_every_run_metrics_field_is_taken_by_a_checkpoint_export_or_says_why_not():
    """A new field that describes the run (--label-smoothing's) was dropped by checkpoint exports, and nothing said
    so: each RunMetrics field is taken from the run (RUN_FIELDS, RUN_EVALUATION_FIELDS) or in NOT_FROM_THE_RUN."""
    import dataclasses

    from train.export import RUN_EVALUATION_FIELDS, RUN_FIELDS

    fields = {f.name for f in dataclasses.fields(RunMetrics)}
    taken = {*RUN_FIELDS, *RUN_EVALUATION_FIELDS}
    placed = sorted(fields - taken - NOT_FROM_THE_RUN)
    assert not placed, (f"RunMetrics fields {placed}: one that describes the run (its start, data, options, model) "
                        "goes in train/export.py's RUN_FIELDS, or an export of a step checkpoint drops it; else add it "
                        "to NOT_FROM_THE_RUN here with the reason")
    assert not (taken | NOT_FROM_THE_RUN) - fields, "RUN_FIELDS or NOT_FROM_THE_RUN names no RunMetrics field"
    assert not taken & NOT_FROM_THE_RUN, "a field both taken from the run and not"


def test_a_pretraining_checkpoints_export_keeps_the_runs_corpus_and_model_size(tmp_path):
    """The run's corpus sources (the data the card names) and parameter count describe every checkpoint of it too;
    its figures do not."""
    from roberta.run_metrics import trained_on
    from train.export import checkpoint_metrics

    run = RunMetrics(init="random", corpus="wikitext-103=1", parameters=6_000_000, train_steps=8, eval_accuracy=0.3,
                     corpus_sources=[{"source": "../shared/data/wikitext-103/wiki.train.tokens", "share": 1.0}])
    checkpoint = tmp_path / "run" / "checkpoints" / "step-00000004"
    metrics = checkpoint_metrics(checkpoint, checkpoint.parent.parent, {"tokens": 4096, "elapsed": 2.0}, run,
                                 classifier=False)
    assert (metrics.corpus_sources, metrics.parameters) == (run.corpus_sources, run.parameters)
    assert trained_on(metrics) == trained_on(run) != []
    assert (metrics.train_steps, metrics.train_tokens, metrics.eval_accuracy) == (4, 4096, None)


@pytest.mark.slow  # a fine-tuning run, several seconds
def test_a_checkpoint_export_is_not_given_the_end_of_runs_temperature(kept_run, tmp_path):
    """An exported step checkpoint carried the run's temperature, fitted on its step-N weights, and roberta.pipeline
    applied it to these: it is 1.0, said in metrics.json and the card, and train.calibrate fits one for these weights
    on the run's calibration slice."""
    from train import calibrate
    from train.checkpointing import CHECKPOINTS

    run_t = json.loads((kept_run / "config.json").read_text())["calibration_temperature"]
    assert run_t != 1.0
    out = tmp_path / "step-2"
    assert main([str(kept_run / CHECKPOINTS / "step-00000002"), str(out)]) == 0
    assert json.loads((out / "config.json").read_text())["calibration_temperature"] == 1.0
    assert roberta.pipeline("sentiment-analysis", model=out, device="cpu").temperature == 1.0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["temperature"] == 1.0
    note = metrics["checkpoint"]["note"]
    assert note.startswith(f"exported with calibration_temperature 1.0 (uncalibrated): the run's T = {run_t:.4g} "
                           "was fitted on the weights it kept, not these")
    card = (out / "README.md").read_text()
    assert "Not calibrated for these weights" in card and note in card
    assert f'model="{out}"' in card and ".staging-" not in card  # the card's usage loads the folder, not its copy
    assert calibrate.main([str(out)]) == 0  # the run's slice, recorded with the checkpoint
    refit = json.loads((out / "metrics.json").read_text())
    assert refit["calibration"]["slice"] == json.loads((kept_run / "metrics.json").read_text())["calibration"]["slice"]
    assert refit["temperature"] == json.loads((out / "config.json").read_text())["calibration_temperature"] != run_t


@pytest.mark.parametrize("stopped_by, says", [
    (None, "saved these weights on its way, at step 2 (64 tokens), and may have gone on after them"),
    ("SIGINT", "was stopped by SIGINT at step 2 (64 tokens)"),
    ("time", "stopped in its final evaluation, at step 2 (64 tokens)")])
def test_a_checkpoint_of_an_unfinished_run_says_how_far_it_is(tiny_mlm_dir, tmp_path, stopped_by, says):
    """A checkpoint saved on the way (--keep-checkpoints; the trainer state's stopped_by None) said the run "went
    on after it and stopped without saving again (killed, or failed)", where the run had saved later ones."""
    from train.export import PARTIAL

    run, checkpoint = unfinished_run_checkpoint(tiny_mlm_dir, tmp_path, stopped_by)
    assert main([str(checkpoint), str(tmp_path / "out")]) == 0
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert metrics["stopped_by"] == (stopped_by or "unknown") and metrics["corpus"] == "corpus.txt"
    max_length = roberta.load_config(tiny_mlm_dir).max_length
    assert metrics["max_length"] == max_length  # --max-length's default: rows the model's longest
    assert metrics["init"] == f"checkpoint {checkpoint}" and metrics["checkpoint"] == {"run": str(run), "step": 2}
    assert f"the weights of step-00000002 of {run}, a run from random weights that had not finished: it {says}" \
        in metrics[PARTIAL]


def test_a_classifier_cards_limitation_says_what_it_learnt_from_and_its_long_text_figure(tiny_clf_dir, tmp_path):
    """The shipped card's limitation, "learnt from short movie-review phrases (SST-2): expect errors on ... long
    texts", predated its IMDB stage: it continued an earlier classifier and reads whole IMDB reviews 87.8% right. The
    limitation names the stage it continued and its measured long-text figure; without one, long texts stay among
    the errors to expect."""
    from train.model_card import _limitations, write_model_card

    staged = RunMetrics(train_data="../shared/data/sst2/train.tsv", init="runs/imdb-s0",
                        init_gave="encoder and classifier head", imdb_accuracy=0.834, imdb_accuracy_whole=0.878,
                        imdb_examples=1000, max_length=128)
    item = _limitations("text-classification", 128, staged).splitlines()[-1]
    assert item == ("- Binary sentiment learnt from SST-2's short movie-review phrases, after an earlier fine-tuning "
                    "stage (`runs/imdb-s0`): expect errors on other domains, sarcasm and mixed opinions. A text longer "
                    "than 128 tokens is read in overlapping windows (`roberta.pipeline`): on 1,000 IMDB reviews it is "
                    "right 87.8% of the time read whole, 83.4% on their first 128 tokens (see Metrics).")
    plain = RunMetrics(train_data="../shared/data/sst2/train.tsv", init="assets/mini-roberta-mlm", init_gave="encoder")
    assert _limitations("text-classification", 128, plain).splitlines()[-1] == (
        "- Binary sentiment learnt from SST-2's short movie-review phrases: expect errors on other domains, sarcasm, "
        "mixed opinions and long texts.")
    imdb = RunMetrics(train_data="../shared/data/imdb/train.tsv", init="assets/mini-roberta-mlm", init_gave="encoder")
    assert "learnt from IMDB movie reviews:" in _limitations("text-classification", 128, imdb)
    folder = shutil.copytree(tiny_clf_dir, tmp_path / "clf")
    card = write_model_card(folder, title="t", task="text-classification", metrics=staged, recipe={}).read_text()
    assert "after an earlier fine-tuning stage (`runs/imdb-s0`)" in card and "87.8% of the time read whole" in card


def test_a_topic_classifiers_card_is_not_a_sentiment_classifiers(tiny_clf_dir, tmp_path):
    """A topic classifier's card (world, sports, business, science), the one train.push would upload, was titled
    "Sentiment classifier", tagged sentiment-analysis, warned of "Binary sentiment ... sarcasm, mixed opinions" and
    showed a film review as its usage example, as was its weight average's. The card follows the labels
    (`roberta.text.names_a_sentiment`): titled by them, tagged text-classification, its limitation and usage of no
    sentiment; a classifier whose labels name a sentiment keeps the sentiment card (the shipped one: test_assets)."""
    from train import average, finetune

    folder = shutil.copytree(tiny_clf_dir, tmp_path / "topics")
    config = json.loads((folder / "config.json").read_text())
    topics = ["world", "sports", "business", "science"]
    config["id2label"], config["label2id"] = dict(enumerate(topics)), {name: i for i, name in enumerate(topics)}
    (folder / "config.json").write_text(json.dumps(config))
    metrics = RunMetrics(train_data="mine/topics.csv", dev_data="mine/dev.csv", dev_accuracy=0.58,
                         init="assets/mini-roberta-mlm", init_gave="encoder", max_length=128)
    finetune.write_card(folder, metrics, {"command": "python -m train.finetune --train mine/topics.csv"})
    card = (folder / "README.md").read_text()
    assert "\n# Text classifier (world, sports, business, science) fine-tuned from assets/mini-roberta-mlm\n" in card
    assert "\n- text-classification\n" in card.split("---")[1]  # the front matter's tags
    assert ("\n- A 4-label classifier (world, sports, business, science) learnt from `mine/topics.csv`: expect errors "
            "on other domains and long texts.\n") in card
    assert 'roberta.pipeline("text-classification", ' in card and "SST-2" not in card
    for word in ("sentiment", "sarcasm", "film"):
        assert word not in card.lower(), word
    rows = [{"folder": f"runs/t{i}", "seed": i, "init": "assets/mini-roberta-mlm", "dev_accuracy": 0.58,
             "imdb_accuracy": None} for i in (0, 1)]
    title, notes = average._describe_members([Path("runs/t0"), Path("runs/t1")], [{}, {}],
                                             {"members": rows, "init_root": "assets/mini-roberta-mlm"},
                                             {Path("runs/t0"): (1, 1.0), Path("runs/t1"): (1, 1.0)},
                                             dict(enumerate(topics)))
    assert title == "Text classifier (world, sports, business, science): weight average of 2 fine-tuning runs"
    assert "- `runs/t0`: dev accuracy 58.0%\n" in notes and "IMDB" not in notes  # no member scored IMDB
    sentiment = shutil.copytree(tiny_clf_dir, tmp_path / "sentiment")  # negative, positive
    finetune.write_card(sentiment, metrics, {})
    card = (sentiment / "README.md").read_text()
    assert "\n# Sentiment classifier fine-tuned from " in card and "\n- sentiment-analysis\n" in card
    assert "- Binary sentiment learnt from `mine/topics.csv`" in card and "A gripping, beautifully acted film." in card


def test_an_exported_cards_usage_loads_the_export_not_the_run(tiny_mlm_dir, tmp_path):
    """The export's card told its reader to load the run folder, which may be deleted."""
    from train.model_card import write_model_card

    run = shutil.copytree(tiny_mlm_dir, tmp_path / "run")
    metrics = RunMetrics(command="python -m train.pretrain ...")
    metrics.write(run)
    write_model_card(run, title="t", task="fill-mask", metrics=metrics, recipe={"command": metrics.command})
    assert f'model="{run}"' in (run / "README.md").read_text()
    out = tmp_path / "shipped"
    assert main([str(run), str(out)]) == 0
    card = (out / "README.md").read_text()
    assert f'model="{out}"' in card and str(run) not in card


@pytest.mark.parametrize("dtype, says", [("float16", True), ("float32", False)])
def test_an_exported_classifiers_checks_say_they_were_measured_before_its_precision_was_cut(tiny_clf_dir, tmp_path,
                                                                                          dtype, says):
    """The shipped card's behaviour-check probabilities were the float32 average's, the file float16, and nothing
    said so. An export below float32 labels them; a float32 export leaves them the folder's own."""
    from train.finetune import write_card

    run = shutil.copytree(tiny_clf_dir, tmp_path / "run")
    checks = {"n": 1, "source": "checks.tsv", "unsure_below": 0.7, "right": 1, "accuracy": 1.0,
              "categories": {"simple": {"n": 1, "right": 1, "accuracy": 1.0}},
              "items": [{"category": "simple", "sentence": "Good.", "expected": "positive", "verdict": "positive",
                         "label": "positive", "score": 0.9, "right": True}]}
    metrics = RunMetrics(dev_accuracy=0.5, init="runs/mlm", averaged=2, train_time_s=100.0, wall_time_s=5.0,
                         checks=checks)
    metrics.write(run)
    write_card(run, metrics, {})
    assert main([str(run), str(tmp_path / "out"), "--dtype", dtype]) == 0
    card = (tmp_path / "out" / "README.md").read_text()
    label = f"The probabilities are the float32 average's, measured when it was made, before `train.export` stored " \
            f"its weights in {dtype}."
    assert (label in card) is says and "| Good. | positive | positive (positive 0.9) |" not in card  # right: not listed
    assert "train_time_s is the training of the 2 averaged members" in card


def test_export_refuses_a_tokenizer_json_that_does_not_load(tiny_mlm_dir, tmp_path, capsys):
    """A run whose disk filled while it wrote tokenizer.json was left with an empty one: train.export checked only
    that the file was there and wrote a folder that no loader could read (exit 0). A model folder and a checkpoint's
    run are both refused, before anything is written."""
    source = shutil.copytree(tiny_mlm_dir, tmp_path / "model")
    run, checkpoint = unfinished_run_checkpoint(tiny_mlm_dir, tmp_path)
    for folder, src in ((source, source), (run, checkpoint)):
        (folder / "tokenizer.json").write_bytes(b"")
        assert main([str(src), str(tmp_path / "out")]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: {folder / 'tokenizer.json'}: not a readable tokenizer.json") and \
            "export again" in err and err.count("\n") == 1, err
        assert not (tmp_path / "out").exists()
    shutil.copy(tiny_mlm_dir / "tokenizer.json", source / "tokenizer.json")
    assert main([str(source), str(tmp_path / "out")]) == 0
    roberta.pipeline("fill-mask", model=str(tmp_path / "out"))  # loads


def test_an_average_records_the_machine_that_made_it_and_each_members_apart(tiny_mlm_dir, train_files, tmp_path):
    """The average of phase 26 (an H100's) and phase 27 (an H200's), made on a CPU, recorded its last member's
    hardware as its own, and its card's Metrics table said an NVIDIA H200 made it: its `hardware` is the machine
    that averaged now, as a training run records its own (`hardware_info`), each member's is `member_hardware`, and
    the card says both."""
    from train import average
    from train.model_card import machine_of
    from train.runtime import Dist, hardware_info

    gpus = [{"device": "cuda:0", "gpu": "NVIDIA H100", "precision": "bf16"},
            {"device": "cuda:0", "gpu": "NVIDIA H200", "precision": "bf16"}]
    members = []
    for i, hardware in enumerate(gpus):
        member = shutil.copytree(tiny_mlm_dir, tmp_path / f"phase-{i}")
        (member / "metrics.json").write_text(json.dumps({
            "command": f"python -m train.pretrain --seed {i}", "train_tokens": 100, "hardware": hardware,
            "eval_data": str(train_files / "valid.txt")}))
        members.append(str(member))
    out = tmp_path / "avg"
    assert average.main([*members, "--out", str(out), "--mlm-seeds", "1", "--no-progress"]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["hardware"] == hardware_info(Dist(), "fp32") and "gpu" not in metrics["hardware"]
    assert metrics["member_hardware"] == gpus
    card = (out / "README.md").read_text()
    assert (f"Hardware: an average of weights trained on NVIDIA H100 and NVIDIA H200; averaged on "
            f"{machine_of(metrics['hardware'])}.") in card
    assert "NVIDIA H200 |" not in card and "| hardware / device | cpu |" in card
    # an average among the members (phase 28 is one: the next average takes it): its members' machines, not the
    # CPU that averaged it, are where those weights trained
    a100 = {"device": "cuda:0", "gpu": "NVIDIA A100", "precision": "bf16"}
    later = shutil.copytree(tiny_mlm_dir, tmp_path / "phase-2")
    (later / "metrics.json").write_text(json.dumps({
        "command": "python -m train.pretrain --seed 2", "train_tokens": 100, "hardware": a100,
        "eval_data": str(train_files / "valid.txt")}))
    again = tmp_path / "avg-again"
    assert average.main([str(out), str(later), "--out", str(again), "--mlm-seeds", "1", "--no-progress"]) == 0
    assert json.loads((again / "metrics.json").read_text())["member_hardware"] == [*gpus, a100]
    assert "trained on NVIDIA H100, NVIDIA H200 and NVIDIA A100; averaged on" in (again / "README.md").read_text()


def test_a_folder_given_twice_under_two_spellings_is_refused(tiny_mlm_dir, tmp_path, capsys):
    """`run` and `x/../run` are one folder: it was averaged with itself (the strings differ), and its two curves
    could get no distinct labels."""
    from train import average

    spelt_again = tiny_mlm_dir / ".." / tiny_mlm_dir.name
    assert average.main([str(tiny_mlm_dir), str(spelt_again), "--out", str(tmp_path / "avg")]) == 2
    assert "a folder is given twice" in capsys.readouterr().err and not (tmp_path / "avg").exists()
