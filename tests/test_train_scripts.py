"""train.pretrain, train.finetune, train.recipe end to end on tiny generated data, and their error messages."""
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import roberta
from roberta.run_metrics import PHASES_NAME
from roberta.text import lowercasing, normalize_for_classifier
from train import checkpointing, finetune, imdb_sample, pretrain, recipe, reporting, runtime, summarize
from train.markdown import table_cell
from helpers import TRAINING_DEVICE, finetune_argv, pretrain_argv, read_only, run_module

ROOT = Path(__file__).resolve().parents[1]


def assert_hub_folder(out: Path):
    for name in ("config.json", "model.safetensors", "tokenizer.json", "metrics.json", "log.jsonl", "curves.png",
                 "README.md"):
        assert (out / name).is_file(), name
    assert not (out / checkpointing.CHECKPOINTS).exists()
    entries = reporting.read_log(out / "log.jsonl")
    assert {"train", "eval"} <= {e["type"] for e in entries}
    train = [e for e in entries if e["type"] == "train"]
    assert set(train[0]) >= {"step", "tokens", "loss", "lr", "tokens_per_s", "elapsed_s"}
    return json.loads((out / "metrics.json").read_text())


def test_help_documents_every_option(capsys):
    with pytest.raises(SystemExit):
        pretrain.main(["--help"])
    text = capsys.readouterr().out
    for option in ("--corpus", "--valid", "--tokenizer", "--preset", "--hidden-size", "--layers", "--heads",
                   "--intermediate-size", "--model-max-length", "--max-length", "--masking", "--dupe-factor",
                   "--batch-size", "--grad-accum",
                   "--lr", "--warmup", "--max-steps", "--token-budget", "--time-budget-min", "--epochs",
                   "--eval-every", "--save-every-min", "--seed", "--resume", "--precision", "--compile", "--cache-dir"):
        assert option in text, option


@pytest.mark.parametrize("masking", ["dynamic", "static"])
def test_pretrain_end_to_end(train_files, tmp_path, masking):
    out = tmp_path / "mlm"
    assert pretrain.main(pretrain_argv(train_files, out, "--masking", masking)) == 0
    metrics = assert_hub_folder(out)
    model = roberta.RobertaForMaskedLM.from_pretrained(out)
    assert model.config.max_length == 32 and model.config.num_hidden_layers == 2
    assert metrics["masking"] == masking and metrics["train_steps"] == 6 and metrics["train_tokens"] > 0
    assert metrics["eval_loss"] > 0 and 0 <= metrics["eval_accuracy"] <= 1 and metrics["eval_perplexity"] > 1
    assert "train.pretrain" in metrics["command"] and metrics["hardware"]["device"] == TRAINING_DEVICE
    evals = [e for e in reporting.read_log(out / "log.jsonl") if e["type"] == "eval"]
    assert [e["step"] for e in evals] == [0, 3, 6]


def test_pretrain_token_budget_and_model_overrides(train_files, tmp_path):
    out = tmp_path / "mlm"
    argv = pretrain_argv(train_files, out, "--layers", "1", "--hidden-size", "16", "--heads", "2",
                         "--intermediate-size", "32", "--token-budget", "1000", "--eval-every", "0", max_steps=None)
    assert pretrain.main(argv) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert abs(metrics["train_tokens"] - 1000) < 8 * 32  # within one batch of the budget
    config = roberta.RobertaForMaskedLM.from_pretrained(out).config
    assert (config.num_hidden_layers, config.hidden_size, config.num_attention_heads) == (1, 16, 2)


def test_pretrain_card_names_the_init_not_the_ignored_preset(train_files, tmp_path):
    """With --init the card said "MiniRoBERTa (roberta-base) pretrained from scratch" and listed --preset in its
    recipe, whatever model --init held: --preset (and --vocab-size, no tokenizer being trained) is ignored then."""
    argv = pretrain_argv(train_files, tmp_path / "mlm", "--init", "runs/mlm", "--preset", "roberta-base")
    argv[argv.index("--tokenizer"):argv.index("--tokenizer") + 2] = []  # the --init folder's
    title, recipe = pretrain.card_title_and_recipe(pretrain.parse_args(argv))
    assert title == "MiniRoBERTa pretrained further from runs/mlm"
    assert recipe["init"] == "runs/mlm" and not {"preset", "model_max_length", "vocab_size"} & set(recipe)
    title, recipe = pretrain.card_title_and_recipe(pretrain.parse_args(pretrain_argv(train_files, tmp_path / "new")))
    assert title == "MiniRoBERTa (tiny) pretrained from scratch"
    assert recipe["preset"] == "tiny" and recipe["model_max_length"] == 32 and "vocab_size" not in recipe


@pytest.mark.slow  # end-to-end script run, several seconds
def test_pretrain_continuation_phase_starts_from_init_weights(train_files, tmp_path):
    phase1, phase2 = tmp_path / "phase1", tmp_path / "phase2"
    assert pretrain.main(pretrain_argv(train_files, phase1)) == 0
    argv = pretrain_argv(train_files, phase2, "--init", str(phase1), "--dropout", "0.1", "--max-length", "16",
                         "--seed", "3")  # another seed: other training masks and order, the same held-out masks
    argv[argv.index("--model-max-length"):argv.index("--model-max-length") + 2] = []  # the --init model fixes the shape
    argv[argv.index("--tokenizer"):argv.index("--tokenizer") + 2] = []  # default: the --init folder's
    assert pretrain.main(argv) == 0
    metrics = assert_hub_folder(phase2)
    assert metrics["init"] == str(phase1) and metrics["train_steps"] == 6 and metrics["max_length"] == 16
    assert metrics["eval_seed"] == 0
    last_of_phase1 = [e for e in reporting.read_log(phase1 / "log.jsonl") if e["type"] == "eval"][-1]
    first_of_phase2 = [e for e in reporting.read_log(phase2 / "log.jsonl") if e["type"] == "eval"][0]
    assert first_of_phase2["step"] == 0
    # same weights, same held-out masks
    assert first_of_phase2["loss"] == pytest.approx(last_of_phase1["loss"], rel=1e-5)
    config = roberta.RobertaForMaskedLM.from_pretrained(phase2).config
    assert config.hidden_dropout_prob == 0.1 and config.max_length == 32
    card = (phase2 / "README.md").read_text()  # titled by the --init, its recipe without --preset's "tiny"
    assert f"MiniRoBERTa pretrained further from {phase1}" in card and "| preset |" not in card
    assert pretrain.main(argv + ["--layers", "3"]) == 2  # cannot reshape a pretrained model
    assert pretrain.main(argv + ["--max-length", "33"]) == 2  # rows longer than the model takes


@pytest.mark.slow  # end-to-end script run, several seconds
def test_finetune_from_pretrained_and_from_random(train_files, tmp_path, tiny_mlm_dir, capsys):
    pre = tmp_path / "from-pretrained"
    assert finetune.main(finetune_argv(train_files, pre, "--init", str(tiny_mlm_dir))) == 0
    # the default --max-length (128) is more than the tiny model's 64 positions: said, and the inputs cut to 64
    assert "note: --max-length 128 is more than the model's 64 positions: inputs are cut to 64 tokens" in \
        capsys.readouterr().out
    metrics = assert_hub_folder(pre)
    model = roberta.RobertaForSequenceClassification.from_pretrained(pre)
    assert model.config.id2label == {0: "negative", 1: "positive"}
    assert 0 <= metrics["dev_accuracy"] <= 1 and 0 <= metrics["imdb_accuracy"] <= 1
    assert metrics["dev_examples"] == 60 and metrics["imdb_examples"] == 20
    assert metrics["selection"] == "last" and metrics["kept_step"] == 6
    card = (pre / "README.md").read_text()  # the recipe the card shows: the --init's shape, the length used
    assert "preset" not in card and f"max_length | {metrics['max_length']}" in card
    assert "sha256" not in card  # the digests of --train's and --imdb's rows kept for --resume: not the recipe's

    rnd = tmp_path / "random"
    assert finetune.main(finetune_argv(train_files, rnd, "--init", "random", "--preset", "tiny",
                                       "--tokenizer", str(train_files / "tokenizer.json"),
                                       "--model-max-length", "32")) == 0
    metrics = assert_hub_folder(rnd)
    assert metrics["init"] == "random"
    assert roberta.RobertaForSequenceClassification.from_pretrained(rnd).config.max_length == 32


def test_finetune_says_its_final_evaluation_and_shows_its_bars_unless_told_not_to(train_files, tmp_path, tiny_mlm_dir,
                                                                                  monkeypatch, capsys):
    """After the training bar, its closing scoring (the calibration slice, dev, the IMDB sample read two ways, the
    checks) ran without a word, 88 s for SST-2 and 1,000 reviews on a busy 2-core CPU, bars or --no-progress."""
    monkeypatch.setattr(finetune, "progress_bars", lambda no_progress=False: not no_progress)  # as on a terminal
    argv = finetune_argv(train_files, tmp_path / "bars", "--init", str(tiny_mlm_dir))
    assert finetune.main([a for a in argv if a != "--no-progress"]) == 0
    out, err = capsys.readouterr()
    assert ("final evaluation: 40 calibration rows (the temperature), 60 dev rows, 20 IMDB reviews (their first "
            "tokens, then whole), the behaviour checks of ") in out, out
    assert all(f"classifying {n} texts" in err for n in (40, 60, 20)), err  # each scoring's bar, told by its count
    assert finetune.main(finetune_argv(train_files, tmp_path / "quiet", "--init", str(tiny_mlm_dir), "--imdb", "",
                                       "--calibration-n", "0", "--checks", "")) == 0
    out, err = capsys.readouterr()
    assert "final evaluation: 60 dev rows\n" in out and "classifying" not in err, (out, err)


@pytest.mark.slow  # end-to-end script run, several seconds
def test_finetune_trains_on_every_window_of_long_texts(train_files, tmp_path, tiny_mlm_dir, tokenizer):
    """--long-text windows: each overlapping window of a long training text is a row with its text's label
    (as roberta.pipeline reads long texts); the IMDB check reports the reviews' first tokens and whole."""
    lines = (train_files / "train.tsv").read_text().splitlines()[1:]
    long_texts = [(" ".join(r.split("\t")[0] for r in lines[i:i + 6]), lines[i].split("\t")[1])
                  for i in range(0, 240, 6)]  # 40 texts of 6 sentences, labelled by their first
    train = tmp_path / "long.tsv"
    train.write_text("sentence\tlabel\n" + "".join(f"{t}\t{y}\n" for t, y in long_texts))
    out = tmp_path / "windows"
    argv = finetune_argv(train_files, out, "--init", str(tiny_mlm_dir), "--train", str(train), "--calibration-n",
                         "0", "--max-length", "16", "--long-text", "windows", "--max-steps", "2")
    assert finetune.main(argv) == 0
    metrics = assert_hub_folder(out)
    # the texts that hold a whole IMDB-sample review (the tiny grammar repeats sentences) are held out as its copies
    copies = imdb_sample.SampleCopies(imdb_sample.imdb_sample(str(train_files / "imdb.tsv"), 20)[0])
    kept = [t for t, _ in long_texts if t not in copies]
    assert metrics["imdb_sample_removed_from_training"] == 40 - len(kept) < 5
    shown = [normalize_for_classifier(t) for t in kept]  # what fine-tuning reads, as the pipeline
    _, _, owner = roberta.tokenizer.encode_windows(lowercasing(tokenizer), shown, 16)
    assert metrics["train_examples"] == len(kept) and metrics["train_rows"] == len(owner) > 80
    assert 0 <= metrics["imdb_accuracy"] <= 1 and 0 <= metrics["imdb_accuracy_whole"] <= 1
    first = tmp_path / "first"
    assert finetune.main(argv[:-4] + ["--max-steps", "2", "--out", str(first)]) == 0
    assert json.loads((first / "metrics.json").read_text()).get("train_rows") is None


@pytest.mark.slow  # end-to-end script run, several seconds
def test_finetune_with_dev_fraction_reports_a_slice_held_out_of_its_training_file(train_files, tmp_path, tiny_mlm_dir,
                                                                                 capsys):
    """A user fine-tuning on a single labelled file has no dev file, and --dev could not be skipped. With
    --dev-fraction the run holds a seeded slice of --train out as its dev set and reports its accuracy; metrics.json
    records the slice (dev_slice, no dev_data: --dev's default was not read), and the card names it as held out from
    the training file, never as SST-2 dev, even when that file is SST-2's train.tsv."""
    train = tmp_path / "sst2" / "train.tsv"  # a path the cards know as SST-2's
    train.parent.mkdir()
    shutil.copy(train_files / "train.tsv", train)
    out = tmp_path / "held"
    argv = finetune_argv(train_files, out, "--init", str(tiny_mlm_dir), "--train", str(train), "--dev-fraction", "0.2",
                         "--dev-seed", "1")
    argv[argv.index("--dev"):argv.index("--dev") + 2] = []  # no dev file: the user has none
    assert finetune.main(argv) == 0
    printed = capsys.readouterr().out
    metrics = assert_hub_folder(out)
    spec = metrics["dev_slice"]
    assert "dev_data" not in metrics and 0 <= metrics["dev_accuracy"] <= 1
    assert (spec["data"], spec["fraction"], spec["n"], spec["seed"]) == (str(train), 0.2, 60, 1)
    assert metrics["dev_examples"] == 60 and metrics["calibration"]["dev"]["n"] == 60
    assert metrics["train_examples"] == (300 - 40 - metrics["calibration_removed_train_rows"] - 60
                                         - spec["removed_train_rows"] - metrics["imdb_sample_removed_from_training"])
    said = "60 whole sentences of SST-2 (`sst2/train.tsv`) held out from fine-tuning, seed 1"
    assert f"60 dev ({said.replace('`', '')})" in printed
    # the rows removed beside each slice: their copies and, as sentences are drawn, sub-phrases
    assert (f"held out: 40 for calibration + {metrics['calibration_removed_train_rows']} of their copies and "
            f"sub-phrases, 60 for dev + {spec['removed_train_rows']} of their copies and sub-phrases, ") in printed
    card = (out / "README.md").read_text()
    assert f"The dev set is {said}: never trained on, it was evaluated during training" in card
    assert "SST-2 dev" not in card and "sst2/dev.tsv" not in card and "| dev_fraction | 0.2 |" in card
    assert ("name: 'stanfordnlp/sst2: 60-example slice of train held out from fine-tuning'\n"
            "      type: stanfordnlp/sst2\n      split: train\n") in card  # the model-index: not SST-2's validation
    # a finished classifier for every reader: the summary (its dev column not called SST-2's) and the release
    assert summarize.summarize({"held": [str(out)]})["held"]["runs"][0]["dev_accuracy"] == metrics["dev_accuracy"]
    table = summarize.to_markdown(summarize.summarize({"held": [str(out)]}))
    assert "| dev acc % |" in table and f"Dev set: {said}." in table and "SST-2 dev" not in table
    from roberta.run_metrics import RunMetrics
    from scripts import release

    section = release.comparison_section(RunMetrics.read(out), None)
    assert f"Held-out dev: {said}, never trained on;" in section and "| Held-out dev accuracy |" in section
    assert "SST-2 dev" not in section
    # train.evaluate --dev-slice scores the classifier on that slice again (--labeled needs a file it has not): the
    # same 60 rows, the same accuracy, recorded with the slice and named in the model-index as held out, not as train
    from train import evaluate

    assert evaluate.main(["--model", str(out), "--dev-slice", "--out", str(out)]) == 0
    again = RunMetrics.read(out)
    assert again.labeled["dev_slice"] == spec and again.labeled["source"] == str(train) and again.labeled["n"] == 60
    assert again.labeled["accuracy"] == pytest.approx(metrics["dev_accuracy"])
    assert [e.name for e in again.evaluations() if e.data == str(train)] == ["held-out dev", "held-out dev"]
    # rows appended to the training file since: the slice drawn again would hold other rows, some trained on
    with train.open("a") as f:
        f.write("a review appended after fine-tuning\t1\n")
    capsys.readouterr()
    assert evaluate.main(["--model", str(out), "--dev-slice"]) == 2
    assert capsys.readouterr().err == (f"error: --dev-slice: {train} changed since fine-tuning drew the dev slice "
                                       "(metrics.json dev_slice) from it (300 rows then, 301 now): it cannot be drawn "
                                       "again, the held-out rows would not be the ones held out; score a file of your "
                                       "own with --labeled FILE\n")


@pytest.mark.slow  # the quick recipe end to end, half a minute
def test_recipe_quick_with_a_dev_slice_held_out_of_its_training_file(train_files, tmp_path, monkeypatch):
    """The quick recipe on one's own single labelled file: `--finetune-args "--dev-fraction 0.2"` read --dev's default
    anyway (refused here, where ../shared/data is not), its chance level was that file's, and results.md called the
    figures SST-2 dev accuracy. Both fine-tunings hold out one slice (the --dev-seed's), the results name it, and the
    chance level is that of the slice they were scored on."""
    from collections import Counter

    from roberta.run_metrics import dataset_name

    monkeypatch.chdir(tmp_path)  # --dev's default is not there
    out = tmp_path / "recipe"
    argv = ["--out", str(out), "--quick", "--corpus", str(train_files / "corpus.txt"), "--valid",
            str(train_files / "valid.txt"), "--train", str(train_files / "train.tsv"), "--imdb",
            str(train_files / "imdb.tsv"), "--precision", "fp32", "--finetune-args", "--dev-fraction 0.2 --dev-seed 1"]
    assert recipe.main(argv) == 0
    runs = [json.loads((out / name / "metrics.json").read_text()) for name in ("sst2", "sst2-random")]
    assert all("dev_data" not in m and m["dev_examples"] == 60 for m in runs)
    assert runs[0]["dev_slice"] == runs[1]["dev_slice"] and runs[0]["dev_slice"]["seed"] == 1
    text = (out / "results.md").read_text()
    said = f"60 whole sentences of `{dataset_name(str(train_files / 'train.tsv'))}` held out from fine-tuning, seed 1"
    assert f"| classifier | dev accuracy on {said} | IMDB accuracy" in text and "SST-2" not in text, text
    labels = finetune.held_out_dev(runs[0]["dev_slice"], {0: "negative", 1: "positive"})[1]
    assert len(labels) == 60
    share = max(Counter(labels).values()) / 60
    assert f"the dev set's majority class is {share:.1%} of it" in text, text
    assert json.loads((out / "results.json").read_text())["dev_majority_class_share"] == share


@pytest.mark.slow  # end-to-end script run, several seconds
def test_finetune_never_selects_on_dev(train_files, tmp_path, tiny_mlm_dir):
    """Default: the end-of-run weights. --select calibration: the best checkpoint on the calibration slice."""
    out = tmp_path / "clf"
    assert finetune.main(finetune_argv(train_files, out, "--init", str(tiny_mlm_dir), "--eval-every", "2",
                                       "--select", "calibration", "--seed", "1", "--head-seed", "1")) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    evals = [e for e in reporting.read_log(out / "log.jsonl") if e["type"] == "eval"]
    assert all("accuracy" in e and "calibration_accuracy" in e for e in evals)  # dev: logged for the curves
    # not all equal (a head drawn from seed 1: 0.3 at step 0, then 0.7): with ties everywhere, keeping the lowest
    # passed too
    assert len({e["calibration_accuracy"] for e in evals}) > 1
    best = max(evals, key=lambda e: e["calibration_accuracy"])  # the first of equals
    assert metrics["selection"] == "calibration" and metrics["kept_step"] == best["step"]
    last = tmp_path / "last"
    assert finetune.main(finetune_argv(train_files, last, "--init", str(tiny_mlm_dir), "--eval-every", "2")) == 0
    metrics = json.loads((last / "metrics.json").read_text())
    assert metrics["selection"] == "last" and metrics["kept_step"] == metrics["train_steps"] == 6
    assert not any(p.name.startswith("best") for p in (last / checkpointing.CHECKPOINTS).glob("*"))
    assert finetune.main(finetune_argv(train_files, tmp_path / "x", "--init", str(tiny_mlm_dir), "--select",
                                       "calibration", "--calibration-n", "0")) == runtime.EXIT_USER_ERROR


@pytest.mark.slow  # end-to-end script run, several seconds
def test_select_calibration_keeps_the_first_highest_evaluation(train_files, tmp_path, tiny_mlm_dir, monkeypatch):
    """The best checkpoint, on fixed evaluations: the highest one, the first of equals (keeping the lowest went
    unnoticed)."""
    scores = [0.5, 0.9, 0.7, 0.9]  # the evaluations at steps 0, 2, 4 and 6
    evaluate = finetune.ClassificationTask.evaluate
    monkeypatch.setattr(finetune.ClassificationTask, "evaluate",
                        lambda self, model: {**evaluate(self, model), "calibration_accuracy": scores.pop(0)})
    out = tmp_path / "clf"
    assert finetune.main(finetune_argv(train_files, out, "--init", str(tiny_mlm_dir), "--eval-every", "2",
                                       "--select", "calibration", "--keep-checkpoints")) == 0
    assert scores == []  # every one was used
    assert json.loads((out / "metrics.json").read_text())["kept_step"] == 2
    (best,) = (out / checkpointing.CHECKPOINTS).glob("best-*")
    assert best.name == "best-00000002"
    kept = roberta.RobertaForSequenceClassification.from_pretrained(out).state_dict()
    saved, _ = checkpointing.Checkpoints.load(best)
    assert saved.keys() == kept.keys() and all(torch.equal(kept[k], v) for k, v in saved.items())  # its weights


@pytest.mark.slow
def test_recipe_quick(train_files, tmp_path, capsys):
    out = tmp_path / "recipe"
    argv = ["--out", str(out), "--quick", "--corpus", str(train_files / "corpus.txt"),
            "--valid", str(train_files / "valid.txt"), "--train", str(train_files / "train.tsv"),
            "--dev", str(train_files / "dev.tsv"), "--imdb", str(train_files / "imdb.tsv"), "--precision", "fp32"]
    assert recipe.main(argv) == 0
    for folder in ("mlm", "sst2", "sst2-random"):
        assert_hub_folder(out / folder)
    assert (out / "tokenizer" / "tokenizer.json").is_file()
    results = json.loads((out / "results.json").read_text())
    assert set(results["sst2_dev_accuracy"]) == {"pretrained", "random_init"}
    assert all(v is not None for v in results["sst2_dev_accuracy"].values())
    assert "| classifier |" in (out / "results.md").read_text()
    # running it again: every step is already done
    capsys.readouterr()
    assert recipe.main(argv) == 0
    captured = capsys.readouterr()
    assert captured.out.count("already done") == 4 and "warning" not in captured.err
    # again with another seed: the finished steps are kept, and each says it was made by another command
    assert recipe.main([*argv, "--seed", "5"]) == 0
    err = capsys.readouterr().err
    assert err.count("was made by another command (") == 4 and "--seed 0 -> 5" in err  # pretrain and 2 finetunes,
    # and the tokenizer, a script step: its command is kept beside its output, and compared option by option
    assert f"tokenizer in {out / 'tokenizer'} was made by another command (--seed 0 -> 5)" in err
    assert f"delete {out / 'mlm'} to make it with the options given now" in err


@pytest.mark.parametrize("options", [["--quick"], [], ["--gpu", "--quick"],
                                     ["--gpu", "--init", "runs/mlm", "--compile"],
                                     ["--gpu", "--pretrain-args", "--hidden-size 384 --heads 6 --layers 8"]])
def test_recipe_steps_record_commands_that_rebuild_their_arguments(tmp_path, options):
    """Each training step runs an arguments object; its recorded command parses back to the same object (and
    the user's --finetune-args reach the sentiment experiment's fine-tunings)."""
    args = recipe.build_parser().parse_args(["--out", str(tmp_path / "r"), *options,
                                             "--finetune-args", "--layer-lr-decay 0.8"])
    steps = recipe.plan_gpu(args) if args.gpu else recipe.plan(args)
    training = [s for s in steps if s.args is not None]
    assert [s.name for s in training] == (["pretrain"] if args.gpu else ["pretrain", "finetune", "finetune-random"])
    for step in training:
        module = {"train.pretrain": pretrain, "train.finetune": finetune}[step.kind]
        assert step.command.startswith(f"python -m {step.kind} ") and step.args.resume
        assert module.parse_args(shlex.split(step.command)[3:]) == step.args
    if args.pretrain_args:  # a larger model for the GPU: the user's options reach pretraining
        assert (training[0].args.hidden_size, training[0].args.heads, training[0].args.layers) == (384, 6, 8)
    if args.gpu:
        sentiment = shlex.split(steps[-1].command)
        assert "--layer-lr-decay 0.8" in sentiment[sentiment.index("--finetune-args") + 1]
    assert not (tmp_path / "r").exists()  # planning writes nothing


def test_experiment_runner_skips_finished_steps_and_stops_at_a_failure(tmp_path, capsys):
    from train import experiment

    ran = []

    def step(name, code=0):
        def action():
            ran.append(name)
            (tmp_path / name).mkdir()
            if code == 0:
                (tmp_path / name / "metrics.json").write_text("{}")
            return code
        return experiment.function(name, tmp_path / name, "metrics.json", action, f"(make {name})")

    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "metrics.json").write_text("{}")
    assert experiment.run_steps([step("a"), step("b"), step("c", code=3), step("d")]) == 3
    assert ran == ["b", "c"]
    out, err = capsys.readouterr()
    assert "== a: already done" in out and "== b: (make b)" in out and "step c stopped (exit code 3)" in err
    # a step interrupted by Ctrl-C: its trainer's hint says to run the experiment again, not to add --resume
    from train.reporting import RESUME_HINT_ENV
    hints = []
    hinted = experiment.function("e", tmp_path / "e", "metrics.json",
                                 lambda: hints.append(os.environ.get(RESUME_HINT_ENV)) or 130, "(make e)")
    assert experiment.run_steps([hinted], rerun="python -m train.recipe --out r") == 130
    assert hints == ["run python -m train.recipe --out r again to continue (no --resume needed)"]
    assert RESUME_HINT_ENV not in os.environ
    assert experiment.option_text(2e-4) == "0.0002" and experiment.option_text(20.0) == "20"
    assert experiment.same_run("python -m train.finetune --init x --lr 2e-4 --out y",
                               "python -m train.finetune --init x --lr 0.0002 --out y")
    assert not experiment.same_run("python -m train.finetune --init x --lr 2e-4 --out y",
                                   "python -m train.finetune --init x --lr 3e-4 --out y")


def windows_words(line: str) -> list[str]:
    r"""The words a Windows program gets from its command line (the C runtime's rules, CommandLineToArgvW's since
    2008): whitespace outside quotes splits, 2n backslashes before a quote are n and the quote toggles quoting,
    2n+1 are n and a literal quote, other backslashes are characters, and "" inside quotes is a literal quote."""
    words, word, quoted, started, i = [], "", False, False, 0
    while i < len(line):
        if line[i] == "\\":
            run = len(line[i:]) - len(line[i:].lstrip("\\"))
            if line[i + run:i + run + 1] == '"':
                word += "\\" * (run // 2) + ('"' if run % 2 else "")
                i += run + (run % 2)
            else:
                word, i = word + "\\" * run, i + run
            started = True
        elif line[i] == '"':
            if quoted and line[i + 1:i + 2] == '"':
                word, i = word + '"', i + 2
            else:
                quoted, i = not quoted, i + 1
            started = True
        elif line[i] in " \t" and not quoted:
            if started:
                words.append(word)
            word, started, i = "", False, i + 1
        else:
            word, started, i = word + line[i], True, i + 1
    return words + [word] if started else words


TYPED_WORDS = ["python", "-m", "train.finetune", "--train", r"C:\my data\train.tsv", "--imdb", "", "--dev",
               "C:\\Users\\ana\\", "--out", "C:\\runs\\my run\\", "--finetune-args", '--lr 1e-4 --note "a b"', "R&D"]


@pytest.mark.parametrize("windows", [False, True], ids=["posix", "windows"])
def test_a_printed_command_reads_back_as_the_same_words_in_the_systems_shell(windows, monkeypatch):
    r"""A command printed to be typed was quoted for POSIX shells only: on Windows `--imdb ''` passed two quote
    characters and `'C:\my data\train.tsv'` two words. There it is now in double quotes by the rules Windows
    programs split their command line by (the ones `subprocess.list2cmdline` writes), spaces, an empty value,
    backslashes (before a closing quote too), a quote and cmd's & included; on POSIX it is `shlex.join`'s."""
    monkeypatch.setattr(runtime, "WINDOWS", windows)
    line = runtime.shown_command(TYPED_WORDS)
    if windows:
        assert windows_words(subprocess.list2cmdline(TYPED_WORDS)) == TYPED_WORDS  # the parser's rules: Python's
        assert windows_words(line) == TYPED_WORDS and "''" not in line and '--imdb "" ' in line, line
        assert f'--train "{TYPED_WORDS[4]}" ' in line and ' "R&D"' in line  # a backslash is a character there
        assert runtime.shown_command(["--out", "C:\\runs\\"]) == "--out C:\\runs\\"  # no quotes: nothing doubled
    else:
        assert line == shlex.join(TYPED_WORDS) and shlex.split(line) == TYPED_WORDS


@pytest.mark.parametrize("windows", [False, True], ids=["posix", "windows"])
def test_printed_steps_and_hints_use_the_systems_shell_and_records_stay_posix(windows, tmp_path, monkeypatch,
                                                                             capsys):
    """The experiment runner printed each step's recorded (POSIX) command as it is, and hints spelled an empty
    value ''. Both are now printed as the system's shell reads them; the command recorded beside the step (and in
    a run's metrics.json) is still the POSIX line `shlex.split` reads back."""
    from train import evaluate, experiment

    monkeypatch.setattr(runtime, "WINDOWS", windows)
    argv = TYPED_WORDS[3:]
    step = experiment.script("made", summarize, argv, tmp_path / "made")
    monkeypatch.setattr(summarize, "main", lambda argv: (tmp_path / "made").mkdir() or 0)
    assert experiment.run_steps([step]) == 0
    words = ["python", "-m", "train.summarize", *argv]
    assert f"== made: {runtime.shown_command(words)}\n" in capsys.readouterr().out
    recorded = (tmp_path / "made" / ".made.command").read_text(encoding="utf-8").strip()
    assert recorded == shlex.join(words) and shlex.split(recorded) == words
    empty = '""' if windows else "''"
    assert evaluate._skip_checks("--checks") == f"pass --checks {empty} to skip the sentiment checks"
    # inside another option's value the words are shlex's (`experiment.split_options`) on every system
    assert evaluate._skip_checks("--finetune-args --checks") == "add --checks '' to --finetune-args to skip the " \
                                                                 "sentiment checks"
    assert experiment.shown_value("") == empty


def test_pretrain_corpus_chars_is_a_cap(train_files, tmp_path, monkeypatch, capsys):
    """--corpus-chars 200000 read 212,286 characters (whole documents): now at most that many, the last document
    of each source cut at its share."""
    from train import data

    class Read(Exception):
        pass

    real, read = data.load_mixture_with_stats, []

    def spy(*args, **kwargs):
        read.append(real(*args, **kwargs))
        raise Read  # what was read is all this test needs

    monkeypatch.setattr(data, "load_mixture_with_stats", spy)
    corpus = train_files / "corpus.txt"
    mixture = f"{corpus}=0.5,{train_files / 'valid.txt'}=0.5"
    for spec, budget in [(str(corpus), 1_000), (str(corpus), 77_777), (mixture, 3_001)]:
        argv = pretrain_argv(train_files, tmp_path / "out", "--corpus-chars", str(budget))
        argv[argv.index("--corpus") + 1] = spec
        with pytest.raises(Read):
            pretrain.main(argv)
        documents, sources = read.pop()
        assert budget - len(sources) <= sum(map(len, documents)) == sum(s["chars"] for s in sources) <= budget
    with pytest.raises(SystemExit):
        pretrain.main(["--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert "--corpus-chars CORPUS_CHARS at most this many characters of the mixture" in shown


def test_pretrain_says_it_tokenizes_a_long_corpus_where_no_bar_shows_it(train_files, tmp_path, monkeypatch, capsys):
    """With --no-progress (the recipes' choice) or into a log, the default corpus's 160M characters were tokenized in
    65 s of silence after "reading ...": the bar a terminal gets was all that said it."""
    from train import packing

    class Packed(Exception):
        pass

    def stop(*args, **kwargs):
        raise Packed  # what was said before packing is all this test needs

    monkeypatch.setattr(packing, "pack_sequences", stop)
    for cache, long_text_chars in [("", 100), (str(tmp_path / "cache"), 100), ("", packing.LONG_TEXT_CHARS)]:
        monkeypatch.setattr(packing, "LONG_TEXT_CHARS", long_text_chars)
        argv = pretrain_argv(train_files, tmp_path / "out", "--max-length", "16")
        argv[argv.index("--cache-dir") + 1] = cache
        with pytest.raises(Packed):
            pretrain.main(argv)
        said = re.findall(r"^tokenizing [\d,]+ characters into rows of 16 tokens(.*)$", capsys.readouterr().out,
                          re.MULTILINE)
        if long_text_chars == 100:  # the tiny corpus, long enough for the test
            assert said == [f" (or reading them from the cache in {cache})" if cache else ""]
        else:
            assert said == []  # a short corpus goes by in seconds


# `python -m MODULE ARGV` in which TARGET (a function another module looks up when it calls it) sends this process
# SIGTERM: a `timeout`, a scheduler or a GPU session's deadline stopping it at that point
SIGTERM_AT = """
import importlib, os, runpy, signal, sys
module, target, argv = sys.argv[1], sys.argv[2], sys.argv[3:]
owner, name = target.rsplit(".", 1)
def stop(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGTERM)
    raise AssertionError("SIGTERM did not stop it")
setattr(importlib.import_module(owner), name, stop)
sys.argv = [module, *argv]
runpy.run_module(module, run_name="__main__", alter_sys=True)
"""


@pytest.mark.slow  # a few interpreter starts
@pytest.mark.parametrize("module, target", [
    ("train.pretrain", "train.data.load_mixture_with_stats"),  # its setup
    ("train.finetune", "train.calibrate.calibrate"),  # after its training loop: calibration, then the scores
    ("train.evaluate", "train.packing.pack_sequences"),
    ("train.tokenizer", "train.data.load_mixture_with_stats"),
    ("train.recipe", "train.data.load_mixture_with_stats"),  # the setup of its pretraining step
])
def test_sigterm_outside_the_training_loop_is_an_interruption(module, target, train_files, tiny_mlm_dir, tmp_path):
    """Outside the training loop (whose own handler saves a checkpoint first) SIGTERM killed a script silently with
    exit code 143, though `--help` promises "130 interrupted (SIGINT/SIGTERM)" and Ctrl-C there said "interrupted":
    now SIGTERM is Ctrl-C for the whole of a script's main (`train.exit_codes.sigterm_as_interrupt`). An
    experiment says which step was interrupted and how to continue, not "error: step ... fix it"."""
    out = tmp_path / "out"
    argv = {
        "train.pretrain": pretrain_argv(train_files, out),
        "train.finetune": finetune_argv(train_files, out, "--init", str(tiny_mlm_dir), "--checks", ""),
        "train.evaluate": ["--model", str(tiny_mlm_dir), "--mlm-text", str(train_files / "valid.txt")],
        "train.tokenizer": ["--corpus", str(train_files / "corpus.txt"), "--vocab-size", "300", "--eval-text", "",
                            "--quiet", "--out", str(out)],
        "train.recipe": ["--quick", "--out", str(out), "--tokenizer", str(train_files / "tokenizer.json"),
                         "--corpus", str(train_files / "corpus.txt"), "--valid", str(train_files / "valid.txt"),
                         "--train", str(train_files / "train.tsv"), "--dev", str(train_files / "dev.tsv"),
                         "--imdb", str(train_files / "imdb.tsv"), "--precision", "fp32"],
    }[module]
    result = subprocess.run([sys.executable, "-c", SIGTERM_AT, module, target, *argv], cwd=ROOT, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == runtime.EXIT_INTERRUPTED, (result.returncode, result.stderr[-3000:])
    last = result.stderr.strip().splitlines()[-1]
    if module == "train.recipe":
        assert last == ("interrupted (step pretrain): run the same recipe command again to continue where it "
                        "stopped") and "error:" not in result.stderr, result.stderr
    elif module == "train.finetune":  # after its loop: a checkpoint is there, and the line says how to go on
        assert last == (f"interrupted: {out} holds the run's last checkpoint; continue with the same command plus "
                        "--resume") and "Traceback" not in result.stderr, result.stderr
    else:
        assert last == "interrupted" and "Traceback" not in result.stderr, result.stderr
    if module == "train.finetune":  # its checkpoint is kept: the same command with --resume finishes the run
        assert (out / "checkpoints").is_dir() and not (out / "metrics.json").exists()
        assert finetune.main(finetune_argv(train_files, out, "--init", str(tiny_mlm_dir), "--checks", "",
                                           "--resume")) == 0
        assert (out / "metrics.json").is_file()


def test_an_interrupted_experiment_step_is_not_an_error_to_fix(train_files, tmp_path, monkeypatch, capsys):
    """An interrupted step of train.recipe said "error: step finetune stopped (exit code 130); fix it and run ...":
    now "interrupted", which step, how to continue, and exit code 130 (`train.experiment.run_steps`); a step that
    fails is still an error."""
    argv = ["--quick", "--out", str(tmp_path / "r"), "--tokenizer", str(train_files / "tokenizer.json"),
            "--corpus", str(train_files / "corpus.txt"), "--valid", str(train_files / "valid.txt"),
            "--train", str(train_files / "train.tsv"), "--dev", str(train_files / "dev.tsv"),
            "--imdb", str(train_files / "imdb.tsv"), "--precision", "fp32"]

    def interrupted(args, dist=None):
        raise KeyboardInterrupt  # Ctrl-C (or SIGTERM) in its setup

    monkeypatch.setattr(pretrain, "run", interrupted)
    assert recipe.main(argv) == runtime.EXIT_INTERRUPTED
    err = capsys.readouterr().err
    assert err == ("interrupted\ninterrupted (step pretrain): run the same recipe command again to continue where it "
                   "stopped\n"), err
    monkeypatch.setattr(pretrain, "run", lambda args, dist=None: runtime.EXIT_INTERRUPTED)  # a checkpoint saved
    assert recipe.main(argv) == runtime.EXIT_INTERRUPTED
    assert capsys.readouterr().err == ("interrupted (step pretrain): run the same recipe command again to continue "
                                       "where it stopped\n")
    monkeypatch.setattr(pretrain, "run", lambda args, dist=None: 1)  # a failure is still one
    assert recipe.main(argv) == 1
    assert "error: step pretrain stopped (exit code 1); fix it" in capsys.readouterr().err


def test_a_seed_interrupted_in_its_own_process_is_said_so(tmp_path, monkeypatch, capsys):
    """train.sentiment_recipe --parallel: a seed's process that ended interrupted (130: a SIGTERM, its checkpoint
    saved) was "error: seed 1 stopped (exit code 130)" with its log's end, as if it had failed."""
    from train import sentiment_recipe

    class Process:  # a seed's process that has ended
        def __init__(self, command, **kwargs):
            self.returncode = 130 if command[-5:-3] == ["--seeds", "1"] else 0  # (... --train-only --parallel 1)

        def poll(self):
            return self.returncode

    monkeypatch.setattr(sentiment_recipe.subprocess, "Popen", Process)
    argv = ["--init", "mlm", "--out", str(tmp_path / "exp"), "--arms", "sst2", "--seeds", "0", "1", "--parallel", "2"]
    args = sentiment_recipe.build_parser().parse_args(argv)
    assert sentiment_recipe.run_in_parallel(argv, args, [], set()) == runtime.EXIT_INTERRUPTED
    out, err = capsys.readouterr()
    assert "== seed 0: done" in out and "== seed 1: exit code 130" in out
    assert err == (f"seed 1: interrupted (its log: {tmp_path / 'exp' / 'logs' / 'seed-1.log'}); run the same command "
                   "again to continue where it stopped\n")


# ----- user errors: a clear message naming the file, non-zero exit, no traceback -----
@pytest.mark.slow  # end-to-end script run, several seconds
def test_missing_corpus_file(train_files, tmp_path):
    missing = tmp_path / "nope.txt"
    argv = pretrain_argv(train_files, tmp_path / "out")
    argv[argv.index("--corpus") + 1] = str(missing)
    result = run_module("train.pretrain", *argv)
    assert result.returncode != 0
    assert "error:" in result.stderr and str(missing) in result.stderr
    assert "Traceback" not in result.stderr


def test_empty_corpus(train_files, tmp_path, capsys):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    argv = pretrain_argv(train_files, tmp_path / "out")
    argv[argv.index("--corpus") + 1] = str(empty)
    assert pretrain.main(argv) == runtime.EXIT_USER_ERROR
    err = capsys.readouterr().err
    assert err.startswith("error:") and str(empty) in err


def test_wrong_tsv_columns(train_files, tmp_path, tiny_mlm_dir, capsys):
    bad = tmp_path / "bad.tsv"
    bad.write_text("review\tstars\ngreat film\t1\n")
    argv = finetune_argv(train_files, tmp_path / "out", "--init", str(tiny_mlm_dir))
    argv[argv.index("--train") + 1] = str(bad)
    assert finetune.main(argv) == runtime.EXIT_USER_ERROR
    err = capsys.readouterr().err
    assert err.startswith("error:") and str(bad) in err and "column" in err


@pytest.mark.slow  # end-to-end script run, several seconds
def test_label_outside_label_set(train_files, tmp_path, tiny_mlm_dir):
    bad = tmp_path / "labels.tsv"
    bad.write_text("sentence\tlabel\na fine film\t1\na dull film\t0\nwhat is this\t2\n")
    argv = finetune_argv(train_files, tmp_path / "out", "--init", str(tiny_mlm_dir))
    argv[argv.index("--train") + 1] = str(bad)
    result = run_module("train.finetune", *argv)
    assert result.returncode != 0
    assert "error:" in result.stderr and f"{bad} line 4" in result.stderr and "label 2" in result.stderr
    assert "Traceback" not in result.stderr


def test_bad_options(train_files, tmp_path, tiny_mlm_dir, capsys):
    out = tmp_path / "out"
    assert pretrain.main(pretrain_argv(train_files, out, "--batch-size", "6", "--grad-accum", "4")) == 2
    assert "--batch-size" in capsys.readouterr().err
    argv = pretrain_argv(train_files, out, max_steps=None)
    assert pretrain.main(argv) == 2
    assert "how long to train" in capsys.readouterr().err
    assert finetune.main(finetune_argv(train_files, out, "--init", "random")) == 2
    assert "--tokenizer" in capsys.readouterr().err
    assert finetune.main(finetune_argv(train_files, out, "--init", str(tiny_mlm_dir), "--layers", "3")) == 2
    assert "--init random" in capsys.readouterr().err


def test_bad_loop_options_are_named_before_the_data_is_read(train_files, tmp_path, tiny_mlm_dir, capsys):
    """Each was run (a negative time budget trained a step), a ZeroDivisionError traceback (--log-every 0), torch's
    "Invalid learning rate", or an error about something else; the corpus is missing, so the option comes first."""
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    cases = [(["--lr", "-1"], "--lr must be a positive number, got -1.0"),
             (["--lr", "inf"], "--lr must be a positive number, got inf"),  # was a run stopped by a nan loss
             (["--epochs", "0"], "--epochs must be positive"),
             (["--time-budget-min", "-5"], "--time-budget-min must be positive, got -5.0"),
             (["--max-steps", "0"], "--max-steps must be positive"),
             (["--warmup", "-1"], "--warmup must be a number at least 0"),
             (["--warmup", "nan"], "--warmup must be a number at least 0, got nan"),  # stopped after an evaluation
             (["--clip-grad", "nan"], "--clip-grad must be at least 0"),
             (["--log-every", "0"], "--log-every must be at least 1"),
             (["--out", str(a_file)], f"--out {a_file} is a file, not a folder")]
    for extra, message in cases:
        argv = pretrain_argv(train_files, tmp_path / "out", *extra)
        argv[argv.index("--corpus") + 1] = str(tmp_path / "missing.txt")
        assert pretrain.main(argv) == runtime.EXIT_USER_ERROR, extra
        err = capsys.readouterr().err
        assert err.startswith("error: ") and message in err and "missing.txt" not in err, (extra, err)
        argv = finetune_argv(train_files, tmp_path / "out", "--init", str(tiny_mlm_dir), *extra)
        argv[argv.index("--train") + 1] = str(tmp_path / "missing.tsv")
        assert finetune.main(argv) == runtime.EXIT_USER_ERROR, extra
        err = capsys.readouterr().err
        assert err.startswith("error: ") and message in err and "missing.tsv" not in err, (extra, err)
    for extra, message in [(["--eval-rows", "0"], "--eval-rows must be at least 1"),  # "no token was masked"
                           (["--corpus-chars", "-1"], "--corpus-chars must be at least 1")]:  # "nothing to pack"
        assert pretrain.main(pretrain_argv(train_files, tmp_path / "out", *extra)) == runtime.EXIT_USER_ERROR
        assert message in capsys.readouterr().err
    # held-out text and its row length before the corpus (which is missing here): were found after reading it
    for extra, message in [(["--valid", str(tmp_path / "valid.txtt")], "valid.txtt"),
                           (["--eval-length", "1000"], "--eval-length must be between 8")]:
        argv = pretrain_argv(train_files, tmp_path / "out", *extra)
        argv[argv.index("--corpus") + 1] = str(tmp_path / "missing.txt")
        assert pretrain.main(argv) == runtime.EXIT_USER_ERROR
        err = capsys.readouterr().err
        assert message in err and "missing.txt" not in err, (extra, err)


def test_pretrain_init_must_be_a_masked_lm(train_files, tmp_path, tiny_clf_dir, capsys):
    argv = [a for a in pretrain_argv(train_files, tmp_path / "out", "--init", str(tiny_clf_dir))
            if a not in ("--preset", "tiny", "--model-max-length", "32")]  # the shape comes from --init
    assert pretrain.main(argv) == runtime.EXIT_USER_ERROR
    err = capsys.readouterr().err  # was: "... does not fit RobertaForMaskedLM: missing keys [...]"
    assert err.startswith(f"error: --init {tiny_clf_dir} is a classifier") and "missing keys" not in err


def test_finetune_bad_data_options(train_files, tmp_path, tiny_mlm_dir, capsys):
    cases = [(["--imdb-n", "0"], "error: --imdb-n must be at least 1 review"),  # "need as many labels as texts"
             (["--labels", ""], "--labels must name two or more distinct labels"),  # "label 1 is not in the label
             # set [0]"
             (["--max-length", "2"], "--max-length must be at least 3"),  # "input has 33 tokens ... truncate it"
             (["--calibration-n", "-1"], "--calibration-n, --train-n and --negation-augment must be at least 0")]  # ran
    for extra, message in cases:
        assert finetune.main(finetune_argv(train_files, tmp_path / "out", "--init", str(tiny_mlm_dir),
                                           *extra)) == runtime.EXIT_USER_ERROR, extra
        err = capsys.readouterr().err
        assert err.startswith("error: ") and message in err, (extra, err)


def test_recipe_out_file_and_unsplittable_extra_options_are_one_line_errors(tmp_path, capsys):
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    assert recipe.main(["--out", str(a_file), "--quick"]) == runtime.EXIT_USER_ERROR  # was a FileExistsError traceback
    assert capsys.readouterr().err == f"error: --out {a_file} is a file, not a folder\n"
    # was a traceback of shlex's "No closing quotation"
    assert recipe.main(["--out", str(tmp_path / "r"), "--gpu", "--quick", "--finetune-args", '--lr "1e-4']) == 2
    assert capsys.readouterr().err == "error: extra train.finetune options '--lr \"1e-4': No closing quotation\n"


def test_release_names_each_machine_with_the_phases_it_ran():
    from roberta.run_metrics import RunMetrics
    from scripts import release

    xeon = RunMetrics(hardware={"cpu": "Xeon", "cpu_count": 2, "device": "cpu", "torch_threads": 2,
                                "precision": "bf16", "torch": "2.13.0+cpu"})
    epyc = RunMetrics(hardware={**xeon.hardware, "cpu": "EPYC"})
    h100 = RunMetrics(hardware={"device": "cuda:0", "gpu": "NVIDIA H100", "torch_threads": 16,
                                "precision": "bf16", "torch": "2.11.0+cu130"})
    average = RunMetrics(averaged=2)  # trains nothing: counted with the machine before it
    assert (release._machines([xeon, epyc, average, epyc, h100])
            == "Xeon (2 cores) (phase 1), EPYC (2 cores) (phases 2-4), NVIDIA H100 (phase 5)")
    assert release._machines([epyc, average]) == "EPYC (2 cores), cpu, 2 torch threads, bf16, torch 2.13.0+cpu"
    assert release._hardware(h100) == "NVIDIA H100 (cuda:0), 16 torch threads, bf16, torch 2.11.0+cu130"
    # an average records the machine that averaged it (train.average): it still joins the machine before it, and
    # the one machine named in full is the one that trained
    averaged_on_xeon = RunMetrics.from_dict({"averaged": 2, "hardware": xeon.hardware,
                                             "member_hardware": [h100.hardware] * 2})
    assert release._machines([h100, averaged_on_xeon]) == release._hardware(h100)
    assert release._machines([epyc, h100, averaged_on_xeon]) == "EPYC (2 cores) (phase 1), NVIDIA H100 (phases 2-3)"


def test_release_says_when_a_classifiers_minutes_and_steps_are_several_runs():
    from roberta.run_metrics import RunMetrics
    from scripts import release

    figures = dict(init="enc", dev_accuracy=0.9, imdb_accuracy=0.8, imdb_accuracy_whole=0.85, command="c")
    average = RunMetrics(**figures, averaged=3, train_time_s=1524.3, train_steps=10476)
    single = RunMetrics(**figures, train_time_s=594.0, train_steps=3492)
    card = release.comparison_section(average, single)
    assert "| 25.4 | 10,476 |" in card and "| 9.9 | 3,492 |" in card
    assert "are those of the 3 runs it averages, together" in card
    assert "runs it averages" not in release.comparison_section(single, None)


def test_release_says_an_averaged_classifiers_members_trained_and_a_cpu_averaged():
    """The comparison's "Hardware:" was the average's `hardware`, its first member's: now the members' machines
    and the one that averaged them. A record from before train.average recorded its own machine says that machine
    is not recorded, and names only the member whose hardware it holds."""
    from roberta.run_metrics import RunMetrics
    from scripts import release

    epyc = {"cpu": "AMD EPYC", "cpu_count": 2, "device": "cpu", "torch_threads": 2, "precision": "bf16",
            "torch": "2.13.0+cpu"}
    xeon = {**epyc, "cpu": "Xeon", "cpu_count": 16, "precision": "fp32"}
    figures = dict(init="enc", dev_accuracy=0.9, train_time_s=60.0, train_steps=10, command="c", averaged=3)
    today = release.comparison_section(
        RunMetrics.from_dict({**figures, "hardware": xeon, "member_hardware": [epyc, epyc, None]}), None)
    assert ("Hardware: an average of weights trained on AMD EPYC (2 cores) (2 of the 3 runs it averages; the "
            "others' hardware is not recorded); averaged on Xeon (16 cores).") in today
    earlier = release.comparison_section(RunMetrics(**figures, hardware=epyc), None)
    assert ("Hardware: an average of weights trained on AMD EPYC (2 cores) (1 of the 3 runs it averages; the "
            "others' hardware is not recorded); the machine that averaged them is not recorded (this metrics.json is "
            "from before `train.average` recorded it: its `hardware` is the first member's).") in earlier


def test_release_of_runs_that_recorded_no_training_time_says_so():
    """A classifier or a phase whose metrics.json has no train_time_s (nor train_steps) was a TypeError
    (`_minutes(None)`) in the middle of a release: its cells say "not recorded", and the phases' total is a floor."""
    from roberta.run_metrics import RunMetrics
    from scripts import release

    untimed = RunMetrics(init="enc", dev_accuracy=0.9, command="c")
    assert "| this model | `enc` | 90.0% | not recorded | not recorded |" in release.comparison_section(untimed, None)
    timed = RunMetrics(command="python -m train.pretrain", train_time_s=120.0, wall_time_s=130.0, train_steps=5,
                       train_tokens=1000, eval_loss=3.0, eval_accuracy=0.3, eval_perplexity=20.0, max_length=128)
    section = release.pretraining_section([timed, timed.updated(init="runs/p1", train_time_s=None)])
    assert "2 phase(s), at least 2.0 minutes of training (phase 2 recorded no training time; " in section
    assert "| 2 | `runs/p1` | 128 | not recorded | 5 | 1,000 |" in section
    # a weight average joins the machine of the phase before it (`_machines`): the card says so, as "NVIDIA H200
    # (phases 27-28)" read as if the average (phase 28, made on a CPU) had run there
    assert release.AVERAGES_COUNTED not in section
    averaged = release.pretraining_section([timed, timed.updated(averaged=2, train_time_s=0.0, train_tokens=0)])
    assert f"torch ?{release.AVERAGES_COUNTED}. Held-out figures" in averaged


def test_release_of_a_classifier_that_skipped_imdb_says_so_without_nan_or_question_marks():
    """`--imdb ''` is the documented way to skip IMDB; the release's card then read "a fixed sample of ? reviews of
    `?`" and "| 62.5% | nan% | nan% |". Its IMDB columns are left out, and a dev set of one's own is not called
    SST-2's."""
    from roberta.run_metrics import RunMetrics
    from scripts import release

    hardware = {"cpu": "Xeon", "cpu_count": 2, "device": "cpu", "torch_threads": 2, "precision": "fp32",
                "torch": "2.13.0+cpu"}
    figures = dict(init="runs/mlm", dev_accuracy=0.625, dev_examples=40, train_time_s=6.0, train_steps=2,
                   command="python -m train.finetune ... --imdb ''", hardware=hardware, max_length=128)
    skipped = RunMetrics(**figures, dev_data="sst2/dev.tsv")
    card = release.comparison_section(skipped, None)
    assert "nan" not in card and "?" not in card and "IMDB, first tokens" not in card
    assert "SST-2 dev: `sst2/dev.tsv` (40 sentences); IMDB not scored (the fine-tuning skipped it" in card
    assert "| this model | `runs/mlm` | 62.5% | 0.1 | 2 |" in card
    own = release.comparison_section(RunMetrics(**figures, dev_data="mine/dev.csv"), None)
    assert "Dev: `mine/dev.csv`" in own and "| Dev accuracy |" in own and "SST-2" not in own
    # a baseline that scored IMDB beside a classifier that did not: its columns, and the classifier's cells say so
    baseline = RunMetrics(**{**figures, "init": "random"}, imdb_accuracy=0.5, imdb_accuracy_whole=0.55,
                          imdb_examples=20, imdb_data="imdb/train.tsv")
    both = release.comparison_section(skipped, baseline)
    assert "| not scored | not scored |" in both and "| 50.0% | 55.0% |" in both and "nan" not in both


def test_release_cards_show_probabilities_as_the_app_does(tiny_mlm_dir, tiny_clf_dir):
    """The cards' examples gave fractions ("`France` 0.063", "positive 0.950") where the app shows every probability
    as a percentage: they are `format_probability`'s now, of the answers the folder's own pipeline gives."""
    from demo.examples import FILL_MASK_EXAMPLES, SENTIMENT_EXAMPLES
    from demo.formatting import format_probability
    from scripts import release

    def row_of(section: str, text: str) -> str:
        return next(line for line in section.splitlines() if line.startswith(f"| {table_cell(text)} |"))

    fill, section = roberta.pipeline("fill-mask", model=tiny_mlm_dir), release.fill_mask_section(tiny_mlm_dir)
    for text, top_k in FILL_MASK_EXAMPLES:
        result = fill(text, top_k=top_k)
        predictions = [p for preds in (result if isinstance(result[0], list) else [result]) for p in preds]
        shown = re.findall(r"` ([^,/|`]+%)", row_of(section, text))  # after each word: its probability
        assert shown == [format_probability(p["score"]) for p in predictions]
    classify, section = (roberta.pipeline("text-classification", model=tiny_clf_dir),
                         release.sentiment_section(tiny_clf_dir))
    for text in SENTIMENT_EXAMPLES:
        best = classify(normalize_for_classifier(text))[0]
        assert f"| {best['label']} {format_probability(best['score'])}" in row_of(section, text)


@pytest.mark.slow  # end-to-end script run, several seconds
def test_release_ships_folders_with_finished_model_cards(train_files, tmp_path, monkeypatch):
    from demo.examples import FILL_MASK_EXAMPLES, SENTIMENT_EXAMPLES
    from scripts import release

    phase1, phase2, clf, rnd = (tmp_path / n for n in ("phase1", "phase2", "clf", "random"))
    assert pretrain.main(pretrain_argv(train_files, phase1)) == 0
    argv = pretrain_argv(train_files, phase2, "--init", str(phase1))
    argv[argv.index("--model-max-length"):argv.index("--model-max-length") + 2] = []
    assert pretrain.main(argv) == 0
    assert finetune.main(finetune_argv(train_files, clf, "--init", str(phase2))) == 0
    assert finetune.main(finetune_argv(train_files, rnd, "--init", "random", "--preset", "tiny",
                                       "--tokenizer", str(train_files / "tokenizer.json"))) == 0
    out, summary = tmp_path / "assets", tmp_path / "summary.json"
    assert summarize.main(["--arm", "sst2", str(clf), "--arm", "random-sst2", str(rnd), "--out", str(summary)]) == 0
    argv = ["--mlm", str(phase1), str(phase2), "--classifier", str(clf), "--baseline", str(rnd), "--out", str(out),
            "--summary", f"arms={summary}"]
    for _ in range(2):  # a second release replaces the section instead of adding another
        assert release.main(argv) == 0
    shipped = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}

    def fails(*args):
        raise RuntimeError("the classifier's card failed")

    with monkeypatch.context() as m:  # the masked LM was swapped in before the classifier was built: half a pair
        m.setattr(release, "comparison_section", fails)
        with pytest.raises(RuntimeError, match="card failed"):
            release.main([*argv[:argv.index("--classifier")], "--dtype", "float32", *argv[argv.index("--classifier"):]])
    assert {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()} == shipped
    mlm_card = (out / release.MLM_NAME / "README.md").read_text()
    clf_card = (out / release.CLASSIFIER_NAME / "README.md").read_text()
    for card, name, run in ((mlm_card, release.MLM_NAME, phase2), (clf_card, release.CLASSIFIER_NAME, clf)):
        assert card.count(release.SECTION) == 1 and card.startswith("---\n")  # YAML front matter kept
        usage = card.split("## Usage", 1)[1].split("\n## ", 1)[0]  # names the shipped folder, not the run
        assert f'"{out / name}"' in usage and f'"{run}"' not in usage
    phase_rows = [line for line in mlm_card.splitlines() if line.startswith(("| 1 |", "| 2 |"))]
    assert len(phase_rows) == 2 and f"`{phase1}`" in phase_rows[1]
    # under the title, once (the release ran twice): the sections that follow describe the last phase alone
    tokens = sum(json.loads((run / "metrics.json").read_text())["train_tokens"] for run in (phase1, phase2))
    lead = f"**Trained in 2 pretraining phases**, {tokens:,} tokens in all"
    assert mlm_card.count("**Trained in ") == 1 and lead in mlm_card
    assert mlm_card.index(lead) < mlm_card.index("## Architecture") and "gpu-upload" not in mlm_card
    assert "**Trained in " not in clf_card
    assert mlm_card.count("# phase ") == 2 and "--init" in mlm_card
    # the examples' section names the shipped folder too (not the last example's answers)
    assert f'(`roberta.pipeline("fill-mask", model="{out / release.MLM_NAME}")`)' in mlm_card
    for text, _ in FILL_MASK_EXAMPLES:
        row = next(line for line in mlm_card.splitlines() if line.startswith(f"| {table_cell(text)} |"))
        assert row.count(" / ") == text.count("<mask>") - 1  # one list of predictions per mask
    dev = json.loads((clf / "metrics.json").read_text())["dev_accuracy"]
    assert f"| this model | `{phase2}` | {dev:.1%} |" in clf_card
    assert "| random initialisation | `random` |" in clf_card
    assert json.loads((out / release.CLASSIFIER_NAME / release.BASELINE_FILE).read_text())["init"] == "random"
    assert "| random-sst2 (mean ± std) | 1 |" in clf_card and (out / release.CLASSIFIER_NAME / "arms.png").is_file()
    assert json.loads((out / release.CLASSIFIER_NAME / "arms.json").read_text())["sst2"]["seeds"] == 1
    for text in SENTIMENT_EXAMPLES:
        assert f"| {table_cell(text)} | " in clf_card
    shipped = roberta.RobertaForSequenceClassification.from_pretrained(out / release.CLASSIFIER_NAME).state_dict()
    trained = roberta.RobertaForSequenceClassification.from_pretrained(clf).state_dict()
    for key, value in trained.items():  # the run's weights, stored in float16
        torch.testing.assert_close(shipped[key], value, rtol=1e-3, atol=1e-3, msg=key)
    assert "### Fill-mask probe" in mlm_card and "### Analogies from the word embeddings" in mlm_card
    # a later release ships a new experiment's summary beside the one shipped before (its runs are gone)
    shipped = out / release.CLASSIFIER_NAME
    summary.unlink()
    assert summarize.main(["--arm", "lr 2e-4", str(clf), "--out", str(tmp_path / "choices.json")]) == 0
    assert release.main(["--classifier", str(clf), "--out", str(out), "--summary", str(shipped / "arms.json"),
                         str(tmp_path / "choices.json")]) == 0
    clf_card = (shipped / "README.md").read_text()
    assert "| random initialisation |" not in clf_card  # no --baseline this time
    # ... and the shipped baseline.json brings the random-initialisation row back without its run folder
    shutil.rmtree(rnd)
    assert release.main(["--classifier", str(clf), "--out", str(out),
                         "--baseline", str(shipped / release.BASELINE_FILE),
                         "--summary", str(shipped / "arms.json"), str(tmp_path / "choices.json")]) == 0
    clf_card = (shipped / "README.md").read_text()
    assert "| random initialisation | `random` |" in clf_card
    assert "(arms): mean ± std" in clf_card and "| random-sst2 (mean ± std) | 1 |" in clf_card
    assert "(choices): mean ± std" in clf_card and "| lr 2e-4 (mean ± std) | 1 |" in clf_card
    assert ((shipped / "choices.png").is_file()
            and json.loads((shipped / "arms.json").read_text())["sst2"]["seeds"] == 1 and "| **all** |" in mlm_card)

    # A later session: the run folders are gone, the next phase starts from the shipped folder, whose
    # phases.json carries the history into the next release.
    phase3 = tmp_path / "phase3"
    argv = pretrain_argv(train_files, phase3, "--init", str(out / release.MLM_NAME))
    argv[argv.index("--model-max-length"):argv.index("--model-max-length") + 2] = []
    assert pretrain.main(argv) == 0
    out2 = tmp_path / "assets2"
    assert release.main(["--mlm", str(out / release.MLM_NAME), str(phase3), "--out", str(out2)]) == 0
    phases = json.loads((out2 / release.MLM_NAME / PHASES_NAME).read_text())
    assert [p["init"] if "init" in p else "random" for p in phases] == [
        "random", str(phase1), str(out / release.MLM_NAME)]
    assert "fill_mask_probe" in phases[1] and 0 <= phases[2]["fill_mask_probe"]["top5"] <= 1
    card = (out2 / release.MLM_NAME / "README.md").read_text()
    assert len([line for line in card.splitlines() if line.startswith(("| 1 |", "| 2 |", "| 3 |"))]) == 3
    assert card.count("**Trained in ") == 1 and "**Trained in 3 pretraining phases**" in card

    # The weight average of a phase and its continuation (train.average) ships as a phase of no tokens.
    from scripts import phase_curve
    from train import average

    avg, out3 = tmp_path / "avg", tmp_path / "assets3"
    assert average.main([str(out / release.MLM_NAME), str(phase3), "--out", str(avg), "--mlm-seeds", "2"]) == 0
    assert release.main(["--mlm", str(out2 / release.MLM_NAME), str(avg), "--out", str(out3)]) == 0
    phases = json.loads((out3 / release.MLM_NAME / PHASES_NAME).read_text())
    assert len(phases) == 4 and phases[3]["averaged"] == 2 and phases[3]["train_tokens"] == 0
    card = (out3 / release.MLM_NAME / "README.md").read_text()
    assert "The last row is the uniform average of the weights of 2 phases" in card and "over 2 fixed masks" in card
    assert phase_curve.main(["--model", str(out3 / release.MLM_NAME)]) == 0

    # The next phase continues from the shipped average and is scored under fixed masks (train.evaluate
    # --mlm-seeds) before it ships: its card names that evaluation.
    from train import evaluate

    phase5, out4 = tmp_path / "phase5", tmp_path / "assets4"
    argv = pretrain_argv(train_files, phase5, "--init", str(out3 / release.MLM_NAME))
    argv[argv.index("--model-max-length"):argv.index("--model-max-length") + 2] = []
    assert pretrain.main(argv) == 0
    assert evaluate.main(["--model", str(phase5), "--mlm-text", str(train_files / "valid.txt"), "--mlm-seeds", "2",
                          "--out", str(phase5 / "metrics.json")]) == 0
    assert release.main(["--mlm", str(out3 / release.MLM_NAME), str(phase5), "--out", str(out4)]) == 0
    phases = json.loads((out4 / release.MLM_NAME / PHASES_NAME).read_text())
    assert len(phases) == 5 and phases[3]["averaged"] == 2 and phases[4]["train_tokens"] > 0
    card = (out4 / release.MLM_NAME / "README.md").read_text()
    assert "--mlm-seeds 2`, the mean over 2 fixed masks): loss" in card


def test_release_errors(tmp_path, capsys):
    from scripts import release

    assert release.main(["--mlm", str(tmp_path / "missing")]) == 2
    assert "metrics.json: no such file" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        release.main([])
    for summaries in (["bad name=x.json"], ["a.json", "b/a.json"]):  # a NAME that is no file name; the same twice
        with pytest.raises(SystemExit):
            release.main(["--classifier", str(tmp_path), "--summary", *summaries])
    assert "--summary" in capsys.readouterr().err


def test_release_refuses_the_wrong_kind_of_run_before_writing(tiny_mlm_dir, tiny_clf_dir, tmp_path, capsys):
    import shutil

    from scripts import release

    mlm, clf = shutil.copytree(tiny_mlm_dir, tmp_path / "mlm"), shutil.copytree(tiny_clf_dir, tmp_path / "clf")
    (mlm / "metrics.json").write_text(json.dumps({"eval_accuracy": 0.1, "train_tokens": 100}))
    (clf / "metrics.json").write_text(json.dumps({"dev_accuracy": 0.6, "train_steps": 4}))
    out = tmp_path / "shipped"
    # was a TypeError traceback (the classifier card formats the MLM's dev accuracy, None)
    assert release.main(["--classifier", str(mlm), "--out", str(out)]) == 2
    not_a_classifier = f"{mlm / 'metrics.json'}: not a fine-tuned classifier's metrics (no dev_accuracy"
    assert capsys.readouterr().err.startswith(f"error: --classifier {not_a_classifier}")
    assert release.main(["--classifier", str(clf), "--baseline", str(mlm), "--out", str(out)]) == 2
    assert capsys.readouterr().err.startswith(f"error: --baseline {not_a_classifier}")
    # a classifier fine-tuned from a pretrained encoder was shipped as the "random initialisation" baseline
    pretrained = shutil.copytree(tiny_clf_dir, tmp_path / "pretrained-clf")
    (pretrained / "metrics.json").write_text(json.dumps({"dev_accuracy": 0.6, "train_steps": 4, "init": str(mlm),
                                                         "init_root": str(mlm)}))
    assert release.main(["--classifier", str(clf), "--baseline", str(pretrained), "--out", str(out)]) == 2
    assert capsys.readouterr().err.startswith(f"error: --baseline {pretrained}: its encoder came from {mlm}, not from "
                                              "random initialisation")
    # was "OUT/mini-roberta-mlm/model.safetensors does not fit RobertaForMaskedLM", after exporting the classifier
    assert release.main(["--mlm", str(clf), "--out", str(out)]) == 2
    assert capsys.readouterr().err == (f"error: --mlm {clf} is a classifier (RobertaForSequenceClassification); "
                                       "--mlm takes masked-LM runs (train.pretrain)\n")
    # a second phase trained from random weights was shipped as "phase 2 ... started from random"
    assert release.main(["--mlm", str(mlm), str(mlm), "--out", str(out)]) == 2
    assert f"--mlm {mlm} was trained from random weights, not from {mlm}" in capsys.readouterr().err
    # a misspelt --summary was found after the classifier had been exported into --out (assets/, by default)
    assert release.main(["--classifier", str(clf), "--summary", str(tmp_path / "nope.json"), "--out", str(out)]) == 2
    assert "nope.json: no such file" in capsys.readouterr().err
    # another JSON as the summary was a TypeError after the masked LM had been swapped in
    assert release.main(["--classifier", str(clf), "--summary", str(clf / "metrics.json"), "--out", str(out)]) == 2
    assert "not a summary.json that train.summarize wrote" in capsys.readouterr().err
    assert not out.exists()
    bad = tmp_path / "summary.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="summary.json: not a summary.json"):  # was JSONDecodeError's bare message
        release.experiment_section(bad, tmp_path, "sst2")


def test_release_names_an_out_it_cannot_write_and_leaves_no_empty_one(tiny_mlm_dir, tiny_clf_dir, tmp_path,
                                                                       monkeypatch, capsys):
    """A read-only --out was "[Errno 30] Read-only file system: '.../assets'"; a refused release (a truncated
    model.safetensors) left the empty --out it had made."""
    from scripts import release

    mlm, clf = shutil.copytree(tiny_mlm_dir, tmp_path / "mlm"), shutil.copytree(tiny_clf_dir, tmp_path / "clf")
    (mlm / "metrics.json").write_text(json.dumps({"eval_accuracy": 0.1, "train_tokens": 100}))
    (clf / "metrics.json").write_text(json.dumps({"dev_accuracy": 0.6, "train_steps": 4}))
    weights = (clf / "model.safetensors").read_bytes()
    (clf / "model.safetensors").write_bytes(weights[:len(weights) // 2])
    out = tmp_path / "new" / "assets"
    assert release.main(["--classifier", str(clf), "--out", str(out)]) == 2
    assert "model.safetensors: not a readable safetensors file" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["clf", "mlm"]  # neither new/ nor new/assets/ left
    ro = tmp_path / "ro"
    ro.mkdir()
    read_only(monkeypatch, ro)
    assert release.main(["--mlm", str(mlm), "--out", str(ro / "assets")]) == 2
    assert capsys.readouterr().err == (f"error: --out {ro / 'assets'}: cannot write in {ro} (Read-only file "
                                       "system)\n")


def test_the_cards_experiment_figure_is_described_not_labelled(tmp_path):
    """Each seeds' experiment figure had the alt text "NAME: every seed": it names the arms and the measures
    plotted, and says how the seeds and the weight average are drawn (the diamond only where an arm has one)."""
    from scripts import release

    def arm(averaged):
        run = {"dev_accuracy": 0.8, "imdb_accuracy": 0.7, "averaged": 0, "max_length": 64, "folder": "runs/s0"}
        stats = {"dev_accuracy": {"mean": 0.8, "std": 0.01}, "imdb_accuracy": {"mean": 0.7, "std": 0.02},
                 "checks_categories": {}}
        average = {**run, "averaged": 2, "folder": "runs/avg"}
        return {"seeds": 2, "runs": [run, run] + [average] * averaged, "averaged": [average] * averaged,
                "stats": stats}

    def alt(summary):
        (tmp_path / "summary.json").write_text(json.dumps(summary))
        section = release.experiment_section(tmp_path / "summary.json", tmp_path, "arms")
        return section.rsplit("![", 1)[1].removesuffix("](arms.png)")

    both = alt({"pretrained": arm(True), "random": arm(False)})
    assert "2 fine-tuning arms (pretrained, random)" in both and "SST-2 dev and IMDB (first 64 tokens)" in both
    assert "IMDB (whole reviews)" not in both  # no arm measured it: the figure has no bars for it
    assert "mean over the seeds" in both and "one hatch per arm" in both
    assert "each seed a mark (one shape per arm)" in both and "weight average a diamond" in both
    assert "diamond" not in alt({"random": arm(False)})


def test_the_figure_and_its_alt_text_name_the_measures_alike():
    """The figure's labels and its alt text each said how far IMDB was read with their own copy of one replace:
    both come from `summarize.measure_titles`, which says how far the runs read (`cut_to`)."""
    import matplotlib.pyplot as plt

    from scripts import release

    def summary(max_length):
        run = {"dev_accuracy": 0.8, "imdb_accuracy": 0.7, "averaged": 0, "max_length": max_length, "folder": "r"}
        stats = {"dev_accuracy": {"mean": 0.8, "std": None}, "imdb_accuracy": {"mean": 0.7, "std": None},
                 "checks_categories": {}}
        return {"sst2": {"seeds": 1, "runs": [run], "averaged": [], "stats": stats}}

    for max_length, read in ((64, "first 64 tokens"), (None, "cut to the model's length")):
        titles = dict(summarize.measure_titles(summary(max_length)))
        assert titles["imdb_accuracy"].replace("\n", " ") == f"IMDB, {read}"
        fig = summarize.summary_figure(summary(max_length))
        assert [label.get_text() for label in fig.axes[0].get_xticklabels()] == list(titles.values())
        plt.close(fig)
        assert f"on SST-2 dev and IMDB ({read}):" in release.summary_alt(summary(max_length))


@pytest.mark.slow  # end-to-end script run, several seconds
def test_unigram_output_bias_starts_at_the_unigram_distribution(train_files, tmp_path, capsys):
    import torch

    from train.pretrain import unigram_log_probs

    rows = torch.tensor([[0, 5, 5, 6, 2, 1, 1]])
    log_probs = unigram_log_probs(rows, vocab_size=8, pad_id=1)
    assert torch.allclose(log_probs.exp().sum(), torch.tensor(1.0))
    assert log_probs[5] > log_probs[6] > log_probs[7] and log_probs[1] == log_probs[7]  # padding not counted

    def first_eval_loss(out, *extra):
        assert pretrain.main(pretrain_argv(train_files, out, "--max-steps", "1", *extra)) == 0
        lines = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
        return next(r["loss"] for r in lines if r.get("type") == "eval" and r["step"] == 0)

    zero = first_eval_loss(tmp_path / "zero")
    unigram = first_eval_loss(tmp_path / "unigram", "--output-bias", "unigram")
    assert unigram < zero - 0.5  # a uniform start pays log(V) nats; the unigram start much less
    assert pretrain.main(pretrain_argv(train_files, tmp_path / "x", "--init", str(tmp_path / "zero"),
                                       "--output-bias", "unigram")) == 2


def test_a_release_stopped_half_way_leaves_the_shipped_folder_whole(tiny_mlm_dir, train_files, tmp_path, monkeypatch):
    """A release is built beside the shipped folder and swapped in whole: stopped after its export (here while the
    probe runs), it used to leave the export's files without phases.json, and the documented re-run then wrote
    a wrong history. The same phase released twice is refused rather than counted twice."""
    from scripts import release
    phase1, phase2, out = tmp_path / "phase1", tmp_path / "phase2", tmp_path / "assets"
    assert pretrain.main(pretrain_argv(train_files, phase1)) == 0
    assert release.main(["--mlm", str(phase1), "--out", str(out)]) == 0
    shipped = out / release.MLM_NAME
    before = {p.name: p.read_bytes() for p in shipped.iterdir()}
    argv = pretrain_argv(train_files, phase2, "--init", str(shipped))
    argv[argv.index("--model-max-length"):argv.index("--model-max-length") + 2] = []
    assert pretrain.main(argv) == 0

    def stopped(folder):
        raise KeyboardInterrupt
    monkeypatch.setattr(release, "probe_section", stopped)
    with pytest.raises(KeyboardInterrupt):
        release.release([str(shipped), str(phase2)], out=str(out))
    assert {p.name: p.read_bytes() for p in shipped.iterdir()} == before
    assert sorted(p.name for p in out.iterdir()) == [release.MLM_NAME]
    monkeypatch.undo()
    assert release.main(["--mlm", str(shipped), str(phase2), "--out", str(out)]) == 0
    phases = json.loads((shipped / PHASES_NAME).read_text())
    assert [p.get("init", "random") for p in phases] == ["random", str(shipped)]
    with pytest.raises(ValueError, match="already in the history"):  # the same release again
        release.release([str(shipped), str(phase2)], out=str(out))


@pytest.mark.slow  # end-to-end script run, several seconds
def test_finetune_from_a_multi_label_classifier_trains_with_label_ids(train_files, tiny_clf_dir, tmp_path):
    """A classifier --init's problem type is not the run's: a multi-label one made the SST-2 run compare label
    ids with BCE ("Target size ... must be the same as input size") deep inside training."""
    init = tmp_path / "multi-label"
    shutil.copytree(tiny_clf_dir, init)
    config = json.loads((init / "config.json").read_text())
    (init / "config.json").write_text(json.dumps({**config, "problem_type": "multi_label_classification"}))
    out = tmp_path / "sst2"
    assert finetune.main(finetune_argv(train_files, out, "--init", str(init))) == 0
    assert roberta.load_config(out).problem_type is None  # softmax over the labels, as the run trained them


@pytest.mark.slow  # end-to-end script run, several seconds
def test_finetune_starts_from_a_bare_encoders_folder(train_files, tiny_mlm_dir, tmp_path):
    """`transformers`' bare RobertaModel folder (its tensors without the `roberta.` prefix, no head) is where
    fine-tuning starts, through `from_pretrained_encoder` like a masked LM's folder; --init refused it
    ("architectures is ['RobertaModel']; this package loads [...]") after loading its encoder."""
    from safetensors.torch import load_file, save_file

    bare = tmp_path / "bare"
    bare.mkdir()
    shutil.copy(tiny_mlm_dir / "tokenizer.json", bare)
    config = json.loads((tiny_mlm_dir / "config.json").read_text())
    (bare / "config.json").write_text(json.dumps({**config, "architectures": ["RobertaModel"]}))
    encoder = {k.removeprefix("roberta."): v for k, v in load_file(tiny_mlm_dir / "model.safetensors").items()
               if k.startswith("roberta.")}
    save_file(encoder, bare / "model.safetensors", metadata={"format": "pt"})
    out = tmp_path / "sst2"
    assert finetune.main(finetune_argv(train_files, out, "--init", str(bare))) == 0
    metrics = assert_hub_folder(out)
    assert metrics["init"] == str(bare) and metrics["init_gave"] == "encoder"
    assert roberta.checkpoint.read_architecture(out) == "RobertaForSequenceClassification"


def test_release_refuses_a_partial_model_as_any_phase(tiny_mlm_dir, tmp_path, capsys):
    """A partial model (a cut run's last checkpoint) given as an earlier --mlm phase, before the phase continued
    from it: release failed with a traceback ("unsupported format string passed to NoneType") on its missing
    held-out figures; only the last phase was checked."""
    from scripts import release
    from train.export import PARTIAL

    partial = shutil.copytree(tiny_mlm_dir, tmp_path / "partial")
    (partial / "metrics.json").write_text(json.dumps({PARTIAL: "stopped by SIGTERM at step 3: no final evaluation"}))
    assert release.main(["--mlm", str(partial), str(tiny_mlm_dir), "--out", str(tmp_path / "assets")]) == 2
    err = capsys.readouterr().err
    assert f"--mlm {partial} is a partial model, not one to ship: stopped by SIGTERM at step 3" in err
    assert "Traceback" not in err and not (tmp_path / "assets").exists()


def test_release_names_the_encoder_the_classifier_was_fine_tuned_from(tiny_mlm_dir, tiny_clf_dir, tmp_path, capsys):
    """The classifier's card did not say which encoder it started from. `--base-model` is a Hub id (the card's
    base_model) or the encoder's MLM folder, which is not on the Hub: then the card says in words what it was, and
    which phase of the MLM shipped beside it, from the two histories."""
    from roberta.run_metrics import RunMetrics, write_phase_history
    from scripts import release

    def phase(n):
        return RunMetrics(command=f"python -m train.pretrain --seed {n}", train_steps=n, train_tokens=1000 * n,
                          eval_data="data/valid.txt", eval_loss=4.0, eval_accuracy=0.3 + n / 100, eval_perplexity=55.0)

    encoder, clf = (shutil.copytree(d, tmp_path / name) for d, name in ((tiny_mlm_dir, "mlm"), (tiny_clf_dir, "clf")))
    write_phase_history(encoder, [phase(1), phase(2)])
    RunMetrics(dev_accuracy=0.8, init="runs/s/imdb-s0", init_root="runs/s/tapt/mlm").write(clf)
    hub_id, text = release.base_model_of(str(encoder), clf, [phase(1), phase(2), phase(3)])
    assert hub_id is None and "no `base_model`" in text
    assert ("after 2 pretraining phases (3,000 tokens; held-out MLM accuracy 32.0% on `data/valid.txt`): phase 2 of "
            "the 3 phases of `mini-roberta-mlm`, shipped beside this model") in text
    assert "started from `runs/s/tapt/mlm` (`init_root` in metrics.json, `train.sentiment_recipe`'s task-adaptive" \
        in text
    _, text = release.base_model_of(str(encoder), clf, [phase(1), phase(3)])  # another model's history
    assert "shipped beside" not in text
    assert release.base_model_of("someone/mini-mlm", clf, [])[0] == "someone/mini-mlm"
    with pytest.raises(ValueError, match="--base-model"):
        release.base_model_of("runs/s/tapt/mlm", clf, [])  # neither a folder nor a Hub id
    with pytest.raises(ValueError, match="--base-model"):
        release.base_model_of(str(clf), clf, [])  # a classifier is no encoder to name
    with pytest.raises(SystemExit):
        release.main(["--mlm", str(encoder), "--base-model", "someone/mini-mlm", "--out", str(tmp_path / "out")])
    assert "--base-model need --classifier" in capsys.readouterr().err


def test_refresh_examples_rewrites_only_the_cards_example_tables(tmp_path, monkeypatch, capsys):
    """After demo/examples.py changed, the cards' example tables could not be refreshed: a release refuses to export
    a folder onto itself, and re-releasing the classifier needs every run it came from. --refresh-examples rewrites
    those tables alone, from the folders as they are: an up-to-date card comes back byte for byte, a new example
    appears in its table, and no other file changes."""
    from scripts import release

    out = Path("assets")  # as typed from the project's root: the cards name the folders so (`model="assets/..."`)
    for name in (release.MLM_NAME, release.CLASSIFIER_NAME):
        shutil.copytree(out / name, tmp_path / out / name)
    monkeypatch.chdir(tmp_path)
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert release.main(["--refresh-examples", "--out", str(out)]) == 0
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    monkeypatch.setattr(release, "FILL_MASK_EXAMPLES", [*release.FILL_MASK_EXAMPLES, ("My dog likes to <mask>.", 3)])
    assert release.main(["--refresh-examples", "--out", str(out)]) == 0
    card = (out / release.MLM_NAME / "README.md").read_text(encoding="utf-8")
    assert "My dog likes to" in card.split("### Fill-mask examples")[1]
    assert release.fill_mask_section(out / release.MLM_NAME, str(out / release.MLM_NAME)) in card
    changed = [p for p in out.rglob("*") if p.is_file() and p.read_bytes() != before[p]]
    assert changed == [out / release.MLM_NAME / "README.md"]
    assert "refreshed the example tables" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        release.main(["--refresh-examples", "--classifier", "runs/x"])
    with pytest.raises(SystemExit):
        release.main(["--refresh-examples", "--base-model", "me/mlm"])
    assert release.main(["--refresh-examples", "--out", "elsewhere"]) == 2  # a wrong --out is said, not skipped
    assert "--out elsewhere: no mini-roberta-mlm/README.md" in capsys.readouterr().err


def test_averaged_runs_are_labelled_by_their_resolved_folders(tmp_path, monkeypatch):
    """`../run` and `../../run` differ only above the working folder: their labels were "../run" and "../../run"
    (then "main/../run"), names of no folder. They are the folders' own names now, with the parent that tells them
    apart."""
    cwd = tmp_path / "a" / "b"
    cwd.mkdir(parents=True)
    monkeypatch.chdir(cwd)
    labels = reporting.distinct_labels([Path("../../run"), Path("../run")])
    assert labels == [f"{tmp_path.resolve().name}/run", "a/run"]  # (tmp_path/run and tmp_path/a/run)
    assert reporting.distinct_labels([Path("/run"), Path("/x/run")]) == ["/run", "x/run"]  # not "//run"
