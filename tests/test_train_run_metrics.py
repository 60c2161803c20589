"""roberta.run_metrics: the one schema of metrics.json; shipped files (written before it) still read."""
import json
from pathlib import Path

import pytest

from roberta.run_metrics import (PHASES_NAME, RunMetrics, dev_slice_said, read_phase_history, said_list, same_text_file,
                                  write_phase_history)

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("folder", ["mini-roberta-mlm", "mini-roberta-sst2"])
def test_shipped_metrics_read_and_round_trip(folder, tmp_path):
    original = json.loads((ROOT / "assets" / folder / "metrics.json").read_text())
    metrics = RunMetrics.read(ROOT / "assets" / folder)
    assert metrics.extra == {}  # every shipped key is in the schema
    assert metrics.command == original["command"] and metrics.max_length == 128
    metrics.write(tmp_path)
    again = json.loads((tmp_path / "metrics.json").read_text())
    renamed = {("max_length" if k == "seq_length" else k): v for k, v in original.items()}
    assert again == renamed


def test_headline_figures_and_evaluations():
    mlm = RunMetrics.read(ROOT / "assets" / "mini-roberta-mlm")
    sst2 = RunMetrics.read(ROOT / "assets" / "mini-roberta-sst2")
    assert 0.3 < mlm.held_out[1] < 0.7 and mlm.classifier_accuracy is None
    assert 0.8 < sst2.classifier_accuracy < 0.9
    assert [(e.name, e.metric) for e in sst2.evaluations()] == [("dev", "accuracy"), ("IMDB", "accuracy"),
                                                                 ("IMDB read whole", "accuracy")]
    # a later train.evaluate section wins over the run's own figure; junk values are not figures
    later = mlm.updated(mlm={"source": "valid.txt", "accuracy": 0.5}, eval_accuracy="n/a")
    assert ("held-out MLM", "valid.txt", "accuracy", 0.5) in [
        (e.name, e.data, e.metric, e.value) for e in later.evaluations()]


def test_unknown_keys_are_kept_and_bad_files_named(tmp_path):
    (tmp_path / "metrics.json").write_text(json.dumps({"dev_accuracy": 0.5, "something_new": [1]}))
    metrics = RunMetrics.read(tmp_path)
    assert metrics.extra == {"something_new": [1]} and metrics.to_dict()["something_new"] == [1]
    assert RunMetrics.read(tmp_path / "missing", missing_ok=True) is None
    (tmp_path / "metrics.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match="metrics.json"):
        RunMetrics.read(tmp_path)


def test_a_finished_runs_metrics_or_one_plain_error(tmp_path):
    """scripts.release and train.summarize read a run's metrics through RunMetrics.read_finished: a run without
    metrics.json is not finished, and a masked LM's metrics are not a classifier's (the option that named it
    begins the message)."""
    with pytest.raises(FileNotFoundError, match=f"is {tmp_path} a finished training run"):
        RunMetrics.read_finished(tmp_path)
    (tmp_path / "metrics.json").write_text(json.dumps({"eval_accuracy": 0.4, "train_tokens": 100}))
    assert RunMetrics.read_finished(tmp_path).train_tokens == 100
    with pytest.raises(ValueError) as error:
        RunMetrics.read_finished(tmp_path, classifier=True, option="--baseline")
    assert str(error.value).startswith(f"--baseline {tmp_path / 'metrics.json'}: not a fine-tuned classifier's")
    (tmp_path / "metrics.json").write_text(json.dumps({"dev_accuracy": 0.8}))
    assert RunMetrics.read_finished(tmp_path, classifier=True).dev_accuracy == 0.8


def test_held_out_figures_prefer_a_later_several_mask_score_of_the_same_text():
    run = RunMetrics(eval_data="valid.txt", eval_loss=3.25, eval_accuracy=0.469, eval_perplexity=25.8)
    assert run.held_out == (3.25, 0.469, 25.8, 1)  # the end-of-training evaluation: one mask
    five = {"source": "valid.txt", "loss": 3.22, "accuracy": 0.4703, "perplexity": 25.0, "masks": 5}
    assert run.updated(mlm=five).held_out == (3.22, 0.4703, 25.0, 5)
    # one mask, or other text (e.g. shorter rows of another file), does not replace the run's own figures
    for later in ({**five, "masks": 1}, {**five, "source": "other.txt"},
                  {k: v for k, v in five.items() if k != "masks"}):
        assert run.updated(mlm=later).held_out == (3.25, 0.469, 25.8, 1)


def test_the_gpu_uploads_xz_copy_of_the_held_out_text_is_the_same_text():
    # a GPU run evaluates on gpu-upload/data/...xz (train.gpu_transfer bundle); here it is scored on the original
    run = RunMetrics(eval_data="gpu-upload/data/wikitext-2/wiki.valid.tokens.xz", eval_loss=2.96,
                     eval_accuracy=0.4852, eval_perplexity=19.3)
    five = {"source": "../shared/data/wikitext-2/wiki.valid.tokens", "loss": 2.947, "accuracy": 0.4849,
            "perplexity": 19.0, "masks": 5}
    assert run.updated(mlm=five).held_out == (2.947, 0.4849, 19.0, 5)
    assert not same_text_file("../shared/data/wikitext-2/wiki.valid.tokens",
                              "../shared/data/wikitext-2/wiki.test.tokens")
    assert not same_text_file("data/wikitext-103/wiki.valid.tokens", "data/wikitext-2/wiki.valid.tokens")
    assert not same_text_file(None, "valid.txt")


def test_the_upload_copies_xz_names_are_the_same_text_and_the_same_data_set():
    """The GPU upload's copies (`train.gpu_transfer bundle`: the corpora's layout, each file `.xz`) are the same text
    as the original for `same_text_file`, either way round, and the same data set for `readable_dataset`; another
    compression's suffix is another name."""
    from roberta.run_metrics import readable_dataset

    original, copy = "../shared/data/wikitext-2/wiki.valid.tokens", "gpu-upload/data/wikitext-2/wiki.valid.tokens"
    assert same_text_file(original, copy + ".xz") and same_text_file(copy + ".xz", original)
    assert not same_text_file(original, copy + ".zst")
    assert not same_text_file(original, "gpu-upload/data/wikitext-2/wiki.test.tokens.xz")
    assert readable_dataset("wikitext-2/wiki.valid.tokens.xz") == readable_dataset("wikitext-2/wiki.valid.tokens") \
        == "WikiText-2"
    assert readable_dataset("sst2/dev.tsv.xz") == "SST-2" and readable_dataset("sst2/relabelled.csv.xz") is None


def test_a_folder_with_a_dot_in_its_name_gets_a_metrics_file(tmp_path):
    RunMetrics(command="x").write(tmp_path / "runs" / "phase1.5")
    assert (tmp_path / "runs" / "phase1.5" / "metrics.json").is_file()
    assert RunMetrics.read(tmp_path / "runs" / "phase1.5").command == "x"
    RunMetrics(command="y").write(tmp_path / "copy.json")  # a .json name is the file itself
    assert RunMetrics.read(tmp_path / "copy.json").command == "y"
    # phases.json is found by the same rule (`read_phase_history` had its own copy of it)
    dotted = tmp_path / "runs" / "phase1.5"
    assert RunMetrics.path_of(dotted, PHASES_NAME) == dotted / PHASES_NAME
    assert RunMetrics.path_of(tmp_path / "copy.json", PHASES_NAME) == tmp_path / "copy.json"
    write_phase_history(dotted, [RunMetrics(command="z")])
    assert read_phase_history(dotted)[0].command == "z"


def test_held_out_survives_a_malformed_later_evaluation():
    metrics = RunMetrics(mlm={"masks": None, "accuracy": 0.5, "loss": 2.0}, eval_accuracy=0.4, eval_loss=2.5)
    assert metrics.held_out == (2.5, 0.4, None, 1)  # the run's own evaluation, not a TypeError


def test_phase_history_round_trip_and_errors(tmp_path):
    """phases.json (a shipped masked LM's pretraining phases): the one reader and writer, used by scripts.release,
    scripts.phase_curve and the app; the folder or the file itself (what a Hub download gives) reads."""
    phases = [RunMetrics(command="python -m train.pretrain", train_tokens=5), RunMetrics(init="runs/p1", averaged=2)]
    assert write_phase_history(tmp_path, phases) == tmp_path / PHASES_NAME
    assert [p.name for p in tmp_path.iterdir()] == [PHASES_NAME]  # renamed into place: no temporary file left
    for path in (tmp_path, tmp_path / PHASES_NAME):
        assert [p.to_dict() for p in read_phase_history(path)] == [p.to_dict() for p in phases]
    with pytest.raises(FileNotFoundError):
        read_phase_history(tmp_path / "missing")
    for text, why in (("{not json", "Expecting"), ("{}", "expected a list of the phases' metrics, got a dict"),
                      ("[1]", "metrics must be a JSON object")):
        (tmp_path / PHASES_NAME).write_text(text)
        with pytest.raises(ValueError, match=f"^{tmp_path / PHASES_NAME}: not a phases file: {why}"):
            read_phase_history(tmp_path)


def test_a_step_checkpoints_identity_is_a_field_of_the_schema(tmp_path):
    """train.export of RUN/checkpoints/step-N records the run's init and data in the usual fields and the checkpoint
    itself apart, in `checkpoint` (its init used to be "checkpoint RUN/checkpoints/step-N", so two steps of one run
    were two starts to train.average)."""
    point = {"run": "runs/sst2", "step": 10, "run_steps": 30, "command": "python -m train.finetune ..."}
    metrics = RunMetrics(init="runs/mlm", init_root="runs/mlm", train_steps=10, checkpoint=point)
    metrics.write(tmp_path)
    again = RunMetrics.read(tmp_path)
    assert again.checkpoint == point and again.extra == {} and again.init_root == "runs/mlm"
    assert again.evaluations() == []  # no figure of its own


def test_the_held_out_accuracys_yardstick_is_a_field_of_the_schema(tmp_path):
    """train.pretrain records the best constant guess over its final evaluation's targets beside eval_accuracy; it
    was kept in `extra` (no field of the schema), and is now typed fields that round-trip as themselves."""
    record = {"eval_accuracy": 0.41, "eval_data": "wikitext-2/wiki.valid.tokens",
              "eval_constant_guess_token": " the", "eval_constant_guess_accuracy": 0.0561}
    (tmp_path / "metrics.json").write_text(json.dumps(record))
    metrics = RunMetrics.read(tmp_path)
    assert metrics.extra == {}
    assert (metrics.eval_constant_guess_token, metrics.eval_constant_guess_accuracy) == (" the", 0.0561)
    written = RunMetrics(eval_accuracy=0.41, eval_constant_guess_token=" the", eval_constant_guess_accuracy=0.0561)
    written.write(tmp_path / "again")
    assert RunMetrics.read(tmp_path / "again") == written and written.to_dict()["eval_constant_guess_token"] == " the"
    # train.pretrain's way of setting them (`updated`) gives the fields too
    updated = RunMetrics(eval_accuracy=0.41).updated(eval_constant_guess_accuracy=0.05)
    assert updated.eval_constant_guess_accuracy == 0.05 and updated.extra == {}


def test_said_list_joins_items_as_a_sentence_each_between_quotes():
    """One "a, b and c" for the app's messages and the model cards (train.average wrote its own, with quotes)."""
    assert [said_list(items) for items in (["a"], ["a", "b"], ["a", "b", "c"])] == ["a", "a and b", "a, b and c"]
    assert said_list([0, 1, 2]) == "0, 1 and 2"  # seeds, as the card lists them
    assert said_list(["runs/a", "runs/b"], "`") == "`runs/a` and `runs/b`"
    assert said_list([]) == ""


def test_the_hardware_that_trained_a_model_is_its_runs_or_its_members():
    """One rule for train.average, the cards and the About tab: a weight average trains nothing, so its `hardware`
    (the machine that averaged) is not where its weights trained; its `member_hardware` is. An average recorded
    before that field holds one member's hardware, which is where that member trained."""
    cpu, h100, h200 = {"device": "cpu", "cpu_count": 2}, {"gpu": "NVIDIA H100"}, {"gpu": "NVIDIA H200"}
    assert RunMetrics(hardware=h100).trained_hardware() == [h100]
    average = RunMetrics(averaged=2, hardware=cpu, member_hardware=[h100, h200])
    assert average.is_average and average.trained_hardware() == [h100, h200]
    assert RunMetrics(averaged=2, hardware=h200).trained_hardware() == [h200]
    assert RunMetrics(averaged=1, hardware=cpu, member_hardware=[h100]).trained_hardware() == [cpu]
    # the About tab's machine from them: none for an average whose record names no run's
    from demo.model_facts import training_hardware

    assert training_hardware(RunMetrics(averaged=2, hardware=cpu, member_hardware=[])) == {}
    gpu_box = {"device": "cuda:0", "cpu_count": 16, "gpu": "NVIDIA H100"}
    assert training_hardware(RunMetrics(averaged=2, hardware=cpu, member_hardware=[gpu_box, gpu_box])) == {
        "device": "cuda:0", "cpu_count": 16}


def test_the_dev_set_is_named_in_one_place_for_every_reader():
    """The choice between SST-2 dev, a slice held out of the training file and a dev file was made again by each
    reader (the summary, the GPU report, the recipe's results, the release, the card), each its own way. They ask
    `RunMetrics.dev_set_named`, which makes it once and leaves each only its words."""
    from roberta.run_metrics import dataset_name, dev_set_said

    code = lambda file: f"`{file}`"  # noqa: E731
    spec = {"data": "../shared/data/sst2/train.tsv", "fraction": 0.1, "n": 689, "seed": 2, "split": "sentences"}
    held = RunMetrics(dev_slice=spec, dev_data=None)
    said = "689 whole sentences of SST-2 (`sst2/train.tsv`) held out from fine-tuning, seed 2"
    assert held.dev_set_named(code, sst2="SST-2 dev") == said == dev_set_said(None, spec, code)
    sst2 = RunMetrics(dev_data="../shared/data/sst2/dev.tsv")
    assert sst2.dev_set_named(code, sst2="SST-2 dev") == "SST-2 dev"
    assert sst2.dev_set_named(code) == "`../shared/data/sst2/dev.tsv`"  # without `sst2`: named as any file
    mine = RunMetrics(dev_data="/home/me/data/mine/dev.csv")
    assert mine.dev_set_named(code, sst2="SST-2 dev", dev_file=dataset_name) == "mine/dev.csv"
    assert RunMetrics(train_data="mine.csv").dev_set_named(code, none="") == ""
    assert RunMetrics(train_data="mine.csv").dev_set_named() == "the dev set" == dev_set_said(None, None)


def test_a_dev_set_held_out_of_the_training_file_is_a_classifiers_and_never_sst2_dev(tmp_path):
    """train.finetune --dev-fraction records its dev set as a slice of the training file (dev_slice) and no dev file:
    the run is a finished classifier for every reader, its dev figure is listed as the held-out slice's, and it is
    never SST-2 dev (a metrics.json naming no dev file is taken for the shipped classifier's, SST-2 dev), even held
    out of SST-2's train.tsv."""
    spec = {"data": "../shared/data/sst2/train.tsv", "fraction": 0.1, "n": 689, "seed": 0, "split": "sentences"}
    (tmp_path / "metrics.json").write_text(json.dumps({"dev_accuracy": 0.8, "dev_examples": 689, "dev_slice": spec}))
    metrics = RunMetrics.read_finished(tmp_path, classifier=True)
    assert metrics.held_out_dev == spec and metrics.dev_data is None and not metrics.dev_is_sst2()
    assert [(e.name, e.data, e.value) for e in metrics.evaluations()] == [("held-out dev", spec["data"], 0.8)]
    assert dev_slice_said(spec) == "689 whole sentences of SST-2 (sst2/train.tsv) held out from fine-tuning, seed 0"
    assert dev_slice_said({**spec, "data": "/home/me/mine.csv", "split": "random", "n": 12}, lambda f: f"`{f}`") == \
        "12 rows of `me/mine.csv` held out from fine-tuning, seed 0"
    assert RunMetrics(dev_data="../shared/data/sst2/dev.tsv").dev_is_sst2() and RunMetrics().dev_is_sst2()
    assert not RunMetrics(dev_data="mine/dev.csv").dev_is_sst2() and RunMetrics(dev_slice={}).held_out_dev is None
