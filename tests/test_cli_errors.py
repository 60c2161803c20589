"""A newcomer's mistakes on the command-line entry points of train/ and scripts/: each gives exit status 2 and
one line naming the option or file (never a traceback, a silent run, or another run's files overwritten).

Each case was found by trying it; the comment says what it did before."""
import dataclasses
import json
import shutil
import socket
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

import roberta

from train import (ablation, average, calibrate, evaluate, export, fill_mask_probe, finetune, gpu_transfer, out_folder,
                   pretrain, probes, recipe, runtime, summarize, tapt_corpus, tokenizer)
from helpers import assert_user_error, finetune_argv, outcome, pretrain_argv, run_module

ROOT = Path(__file__).resolve().parents[1]


def test_a_new_run_never_overwrites_a_model_folder(train_files, tiny_mlm_dir, tmp_path, capsys):
    """A folder with a model but no log.jsonl (train.export's, a download) was overwritten by pretrain and finetune,
    and taken by --resume for an empty run folder; now refused before the data is read."""
    folder = shutil.copytree(tiny_mlm_dir, tmp_path / "model")
    weights = (folder / "model.safetensors").read_bytes()
    missing = str(tmp_path / "missing.txt")  # the corpus: the folder is refused first
    argv = pretrain_argv(train_files, folder)
    argv[argv.index("--corpus") + 1] = missing
    assert_user_error(pretrain.main, argv, capsys, f"{folder} already holds a run or model (model.safetensors)")
    assert_user_error(pretrain.main, pretrain_argv(train_files, folder, "--resume"), capsys,
                      "holds a finished run or model (model.safetensors) and no checkpoint to resume")
    assert_user_error(finetune.main, finetune_argv(train_files, folder, "--init", str(tiny_mlm_dir)), capsys,
                      "already holds a run or model")
    assert (folder / "model.safetensors").read_bytes() == weights and not (folder / "log.jsonl").exists()


def test_a_new_run_never_writes_into_a_folder_that_is_not_a_run(train_files, tiny_mlm_dir, tmp_path, capsys):
    """pretrain and finetune (--resume too, which starts a new run when there is no checkpoint) replaced a README.md
    and a config.json that were not a run's (exit 0), and so did train.export: `--out .` in the project replaced
    its README. (What a failed start of the run left there is still taken: test_pretrain_checks_its_data_and_out_before_
    training_a_tokenizer, test_train_loop's run that diverged before its first checkpoint.)"""
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "README.md").write_text("mine\n")
    (folder / "config.json").write_text('{"a": 1}\n')
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    assert_user_error(finetune.main, finetune_argv(train_files, folder, "--init", str(tiny_mlm_dir)), capsys,
                      f"{folder} is not empty (README.md, config.json)", "choose another --out")
    for extra in ([], ["--resume"]):
        assert_user_error(pretrain.main, pretrain_argv(train_files, folder, *extra), capsys,
                          f"{folder} is not empty (README.md, config.json)")
    assert_user_error(export.main, [str(tiny_mlm_dir), str(folder)], capsys,
                      f"the destination {folder} is not empty (README.md, config.json)")
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before


def test_average_and_tokenizer_never_overwrite_a_model(train_files, tiny_mlm_dir, tiny_clf_dir, tmp_path, capsys):
    """train.average wrote its average into a folder holding another model (exit 0, the old log left in it);
    train.tokenizer replaced a model's tokenizer.json with one of another vocabulary (the model still loaded)."""
    folder = shutil.copytree(tiny_mlm_dir, tmp_path / "model")
    before = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
    other = shutil.copytree(tiny_clf_dir, tmp_path / "clf-2")
    assert_user_error(average.main, [str(tiny_clf_dir), str(other), "--out", str(folder)], capsys,
                      f"{folder} already holds a run or model")
    assert_user_error(tokenizer.main, ["--corpus", str(train_files / "corpus.txt"), "--vocab-size", "300",
                                       "--eval-text", "", "--out", str(folder)], capsys,
                      "holds a model (config.json, model.safetensors)")
    assert {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()} == before


def test_bad_numbers_are_named_before_the_data_is_read(train_files, tiny_mlm_dir, tmp_path, capsys):
    """Were run (a negative weight decay, --clip-grad -1 = no clipping, --save-every-min -1 = a checkpoint every
    step), or refused under internal names after the corpus was packed (mlm_probability, dupe_factor, "the
    moving average's decay"), or ran with every check "unsure" (--unsure-below 2)."""
    loop = [(["--weight-decay", "-1"], "--weight-decay and --clip-grad must be at least 0"),
            (["--clip-grad", "-1"], "--weight-decay and --clip-grad must be at least 0"),
            (["--save-every-min", "-1"], "--save-every-min must be at least 0 (0 = off), got -1.0")]
    masking = [(["--mlm-probability", "0"], "--mlm-probability must be between 0 and 1"),
               (["--mlm-probability", "1.5"], "--mlm-probability must be between 0 and 1"),
               (["--masking", "static", "--dupe-factor", "0"], "--dupe-factor must be at least 1, got 0")]
    for extra, message in loop + masking:
        argv = pretrain_argv(train_files, tmp_path / "out", *extra)
        argv[argv.index("--corpus") + 1] = str(tmp_path / "missing.txt")
        assert "missing.txt" not in assert_user_error(pretrain.main, argv, capsys, message)
    for extra, message in loop + [(["--ema-decay", "1.5"], "--ema-decay must be at least 0 and below 1"),
                                  (["--unsure-below", "2"], "--unsure-below must be between 0 and 1")]:
        argv = finetune_argv(train_files, tmp_path / "out", "--init", str(tiny_mlm_dir), *extra)
        argv[argv.index("--train") + 1] = str(tmp_path / "missing.tsv")
        assert "missing.tsv" not in assert_user_error(finetune.main, argv, capsys, message)
    assert not (tmp_path / "out").exists()


def test_a_seed_the_generators_cannot_take_is_refused_when_the_command_is_parsed(train_files, tiny_clf_dir, tmp_path,
                                                                                 capsys):
    """--seed 1152921504606846976 (any seed above 2**64 / 100,003) passed start-up, evaluated step 0, then failed at
    step 1 with "error: Overflow when unpacking long long", naming no option, and its log blocked the same --out.
    Every seed option of the training commands is now bounded when the command line is parsed (0 to 2**32 - 1,
    numpy's range), and the largest seed trains."""
    out, huge = tmp_path / "out", "1152921504606846976"
    commands = [(pretrain.main, pretrain_argv(train_files, out), "--seed"),
                (pretrain.main, pretrain_argv(train_files, out), "--eval-seed"),
                (finetune.main, finetune_argv(train_files, out, "--init", str(tiny_clf_dir)), "--seed"),
                (finetune.main, finetune_argv(train_files, out, "--init", str(tiny_clf_dir)), "--calibration-seed"),
                (tokenizer.main, ["--corpus", str(train_files / "corpus.txt"), "--out", str(out)], "--seed"),
                (average.main, [str(tiny_clf_dir), str(tiny_clf_dir), "--out", str(out)], "--mlm-seed")]
    for main, argv, flag in commands:
        for value in (huge, "-1"):
            assert_user_error(main, [*argv, flag, value], capsys,
                              f"argument {flag}: must be between 0 and 4,294,967,295, got {value}")
    assert not out.exists()
    built = dataclasses.replace(pretrain.parse_args(pretrain_argv(train_files, out)), seed=2**40)  # an experiment's
    with pytest.raises(runtime.UserError, match="--seed must be between 0 and"):
        out_folder.check_options(built)
    argv = pretrain_argv(train_files, out, "--seed", str(2**32 - 1), "--max-steps", "2", "--eval-every", "1")
    assert pretrain.main(argv) == 0, capsys.readouterr().err


def test_the_up_front_option_checks_run_on_arguments_alone(tmp_path):
    """FinetuneArguments.check and PretrainArguments.check hold every option check a run makes before it reads
    data: they pass on arguments an experiment builds whose data files do not exist (none is opened), refuse the
    first wrong option with the command's message, and create no --out."""
    missing, out = str(tmp_path / "missing.tsv"), tmp_path / "out"
    tuned = finetune.FinetuneArguments(init="random", tokenizer=missing, train=missing, dev=missing, imdb="",
                                       checks="", out=str(out))
    trained = pretrain.PretrainArguments(corpus=missing, valid=missing, tokenizer=missing, out=str(out))
    tuned.check(world_size=4)
    trained.check(world_size=4)
    refused = [(tuned, {"batch_size": 30}, "--batch-size (30) must be a positive multiple of processes (4)"),
               (tuned, {"ema_decay": 0.5, "select": "calibration"}, "--ema-decay keeps the moving average"),
               (tuned, {"ema_decay": 1.0, "labels": "one"}, "--ema-decay must be at least 0 and below 1"),  # first
               (tuned, {"labels": "one"}, "--labels must name two or more distinct labels"),
               (tuned, {"hidden_size": 32, "heads": 5}, "--hidden-size 32 must be divisible by --heads 5"),
               (tuned, {"checks": str(tmp_path)}, f"--checks {tmp_path}: a folder, not a file"),
               (trained, {"mlm_probability": 1.0}, "--mlm-probability must be between 0 and 1"),
               (trained, {"cache_dir": missing, "dupe_factor": 0}, "--dupe-factor must be at least 1")]
    for args, change, message in refused:
        with pytest.raises(runtime.UserError) as refusal:
            dataclasses.replace(args, **change).check(world_size=4)
        assert str(refusal.value).startswith(message), (change, refusal.value)
    assert not out.exists()


def test_an_out_that_cannot_be_written_is_named_before_the_data_is_read(train_files, tiny_mlm_dir, tmp_path,
                                                                         monkeypatch, capsys):
    """An --out pretrain or finetune could not write (read-only, another user's) was found only when the log was
    first written, after the data was read and packed, and the message said to resume from a checkpoint there was
    none of. The folder (or its nearest existing parent) is now tried first, with the options."""
    import errno
    import tempfile

    def read_only(*args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(tempfile, "TemporaryDirectory", read_only)  # (root writes anywhere: the probe made to fail)
    out, missing = tmp_path / "ro" / "run", str(tmp_path / "missing.txt")
    message = f"--out {out}: cannot write in {tmp_path} (Permission denied)"
    argv = pretrain_argv(train_files, out)
    argv[argv.index("--corpus") + 1] = missing
    assert "missing.txt" not in assert_user_error(pretrain.main, argv, capsys, message)
    argv = finetune_argv(train_files, out, "--init", str(tiny_mlm_dir))
    argv[argv.index("--train") + 1] = missing
    assert "missing.txt" not in assert_user_error(finetune.main, argv, capsys, message)
    assert not (tmp_path / "ro").exists()


def test_finetune_reads_the_behaviour_checks_before_training(train_files, tiny_mlm_dir, tmp_path, capsys):
    """A checks file that did not fit --labels, or was malformed, failed after training: nothing was saved. (The
    default checks, sentiment sentences, are skipped for other labels: `test_finetune_skips_the_default_checks_...`.)"""
    out = tmp_path / "out"
    assert_user_error(finetune.main, finetune_argv(train_files, out, "--init", str(tiny_mlm_dir), "--labels", "c,a,b",
                                                   "--checks", str(evaluate.DEFAULT_CHECKS)),
                      capsys, "--checks ", "expected 'positive' is neither 'unsure' nor a label of the model (['c', "
                      "'a', 'b']); pass --checks '' to skip the sentiment checks, or write checks that expect the "
                      "model's labels")  # the labels in id order
    assert_user_error(finetune.main, finetune_argv(train_files, out, "--init", str(tiny_mlm_dir), "--checks",
                                                   str(train_files / "dev.tsv")), capsys, "the header must be")
    assert not out.exists()


def test_finetune_says_dev_is_required_when_it_is_given_empty(train_files, tiny_mlm_dir, tmp_path, capsys):
    """`--imdb ''` and `--checks ''` skip their step, so a user tried `--dev ''`: it said "--dev : no such file". It
    says that --dev is required, and what it must be, before the data are read."""
    out = tmp_path / "out"
    for empty in ("", " "):
        line = assert_user_error(finetune.main, finetune_argv(train_files, out, "--init", str(tiny_mlm_dir), "--dev",
                                                              empty), capsys,
                                 "--dev is required: an evaluation file with the same columns as --train",
                                 "--dev-fraction F holds a fraction F of --train out as the dev set instead")
        assert "no such file" not in line
    assert not out.exists()


def test_finetune_dev_fraction_errors_name_the_option(train_files, tiny_mlm_dir, tmp_path, capsys):
    """--dev-fraction (a dev set held out of --train, for a user without a dev file): a fraction outside (0, 1), a
    --dev file of the user's beside it, and a fraction the training file cannot give are each one error naming it,
    the first two before any data is read."""
    out = tmp_path / "out"

    def refused(*extra, words):
        return assert_user_error(finetune.main, finetune_argv(train_files, out, "--init", str(tiny_mlm_dir), *extra),
                                 capsys, *words)

    for fraction in ("1", "-0.1", "nan"):
        refused("--dev-fraction", fraction, words=["--dev-fraction must be at least 0 and below 1 (0 = read --dev)"])
    refused("--dev-fraction", "0.2", words=[f"--dev {train_files / 'dev.tsv'} and --dev-fraction 0.2 both give the "
                                            "dev set: give --dev for a file of its own, or --dev-fraction"])
    assert not out.exists()
    refused("--dev", "", "--dev-fraction", "0.9", words=[
        "--dev-fraction 0.9 asks for 270 dev examples of the 300 rows of --train", "pass a smaller --dev-fraction, "
        "or --calibration-split random"])


def test_finetune_says_the_default_dev_is_sst2_when_it_does_not_fit_the_training_file(train_files, tiny_mlm_dir,
                                                                                     tmp_path, capsys, shared_file,
                                                                                     monkeypatch):
    """A user fine-tuning on a file of their own who forgot --dev-fraction was told "--dev ../shared/data/sst2/dev.tsv:
    no label column 'topic' ...; pass --label-column NAME", an option they had passed: --dev had defaulted to SST-2
    dev. The error says that --dev is SST-2 dev by default and how to give a dev set, for columns and for labels that
    SST-2 dev does not have (a topic classifier would have read its 0 and 1 as its first two labels); a file of one's
    own with SST-2's columns and labels keeps SST-2 dev."""
    monkeypatch.chdir(ROOT)  # where --dev's default, ../shared/data/sst2/dev.tsv, is read from
    shared_file("sst2/dev.tsv")
    topics = tmp_path / "topics.csv"
    topics.write_text("text,topic\n" + "".join(f"story {i} of the day,{'world' if i % 2 else 'sports'}\n"
                                                  for i in range(40)))
    out = tmp_path / "out"
    fix = ("give --dev FILE, a dev file with --train's columns and labels, or --dev-fraction F (e.g. 0.1) to hold "
           "that fraction of --train out as the dev set")

    def refused(*extra) -> str:
        argv = finetune_argv(train_files, out, "--init", str(tiny_mlm_dir), "--train", str(topics), "--checks", "",
                             "--imdb", "", *extra)
        argv[argv.index("--dev"):argv.index("--dev") + 2] = []  # no --dev: its default
        line = assert_user_error(finetune.main, argv, capsys, fix)
        assert "pass --label-column" not in line and line.count("\n") == 1
        return line

    said = (f"error: --dev is SST-2 dev by default ({finetune.DEFAULT_DEV}), which does not fit --train {topics}: ")
    assert refused("--label-column", "topic", "--labels", "world,sports") == (
        f"{said}its labels are negative and positive (ids 0 and 1), this run's world,sports; {fix}\n")
    assert refused("--label-column", "topic") == (f"{said}its columns are sentence and label, not --label-column "
                                                  f"topic; {fix}\n")
    own = tmp_path / "own.tsv"  # SST-2's columns and labels: SST-2 dev is a dev set it can be scored on
    shutil.copy(train_files / "train.tsv", own)
    args = finetune.parse_args(["--init", "x", "--train", str(own), "--out", str(out)])
    finetune.check_data_options(args, "", args.id2label())
    assert not out.exists()


def test_a_hub_dataset_fails_fast_without_a_network(monkeypatch):
    """`datasets` retried for ~25 s before it said the Hub could not be reached; now one probe of the Hub (at
    most 3 s, here none) and the local cache only."""
    import datasets.config
    import huggingface_hub.constants

    import roberta.hub
    from train import data

    monkeypatch.setattr(roberta.hub, "hub_reachable", lambda *a, **k: False)
    before = datasets.config.HF_HUB_OFFLINE, huggingface_hub.constants.HF_HUB_OFFLINE
    # fast: no connection is tried and nothing waits to retry
    monkeypatch.setattr(socket, "create_connection", lambda *a, **k: pytest.fail("a connection was tried"))
    monkeypatch.setattr(time, "sleep", lambda seconds: pytest.fail(f"waited {seconds} s to retry"))
    with pytest.raises(OSError, match="could not load 'hub:nobody/no-such-dataset'.*use a local path"):
        data.read_documents("hub:nobody/no-such-dataset")
    assert (datasets.config.HF_HUB_OFFLINE, huggingface_hub.constants.HF_HUB_OFFLINE) == before  # restored


def test_tokenizer_never_replaces_a_tokenizer(train_files, tmp_path, capsys):
    """Was replaced without a word (runs pointing at it then resumed with another vocabulary); --out X/tokenizer.json
    made a folder named tokenizer.json."""
    base = ["--corpus", str(train_files / "corpus.txt"), "--vocab-size", "300", "--eval-text", "", "--quiet"]
    (tmp_path / "tok").mkdir()
    (tmp_path / "tok" / "tokenizer.json").write_text("{}")
    assert_user_error(tokenizer.main, [*base, "--out", str(tmp_path / "tok")], capsys, "tokenizer.json exists")
    assert (tmp_path / "tok" / "tokenizer.json").read_text() == "{}"
    assert_user_error(tokenizer.main, [*base, "--out", str(tmp_path / "new" / "tokenizer.json")], capsys,
                      "--out is the folder the tokenizer.json goes in")
    assert not (tmp_path / "new").exists()


def test_tokenizer_never_writes_among_other_files(train_files, tmp_path, capsys):
    """`--out` a folder of other files (a project's, a data folder) got a tokenizer.json among them, exit 0, where
    every other script refuses a folder that is not empty; a folder holding only what an experiment's tokenizer step
    leaves there (its recorded command, a stopped write's temporary file) is still written into."""
    base = ["--corpus", str(train_files / "corpus.txt"), "--vocab-size", "300", "--min-frequency", "1",
            "--max-chars", "2000", "--eval-text", "", "--quiet"]
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "README.md").write_text("mine")
    (folder / "data.csv").write_text("a,b")
    assert_user_error(tokenizer.main, [*base, "--out", str(folder)], capsys,
                      f"error: --out {folder} is not empty (README.md, data.csv): the tokenizer is written into a new "
                      "or empty folder; choose another --out")
    assert sorted(p.name for p in folder.iterdir()) == ["README.md", "data.csv"]
    step = tmp_path / "recipe" / "tokenizer"  # an experiment's step run again after its tokenizer.json was deleted
    step.mkdir(parents=True)
    (step / ".tokenizer.command").write_text("python -m train.tokenizer ...\n")
    (step / f".tokenizer.json.tmp-{12345}").write_text("{")
    assert tokenizer.main([*base, "--out", str(step)]) == 0
    assert (step / "tokenizer.json").is_file()


def test_tokenizer_eval_text_misspelled(train_files, tmp_path, capsys):
    # was skipped without a word (only the default is skipped when absent), after the tokenizer was trained
    out = tmp_path / "tok"
    assert_user_error(tokenizer.main, ["--corpus", str(train_files / "corpus.txt"), "--vocab-size", "300",
                                       "--eval-text", str(tmp_path / "valid.txtt"), "--out", str(out), "--quiet"],
                      capsys, "valid.txtt: no such file")
    assert not out.exists()


def test_evaluation_scripts_bad_numbers_and_wrong_models(tiny_mlm_dir, tiny_clf_dir, tmp_path, capsys):
    assert_user_error(evaluate.main, ["--model", str(tiny_clf_dir), "--checks", "--unsure-below", "5"], capsys,
                      "--unsure-below must be between 0 and 1")  # was: every verdict "unsure"
    assert_user_error(average.main, [str(tiny_clf_dir), str(tiny_clf_dir), "--out", str(tmp_path / "a"),
                                     "--unsure-below", "-1"], capsys, "--unsure-below")
    # were "MODEL/model.safetensors does not fit RobertaForSequenceClassification: missing keys [...]",
    # "no texts to classify" and "range() arg 3 must not be zero"
    assert_user_error(calibrate.main, [str(tiny_mlm_dir)], capsys, "calibration needs a classifier")
    for extra in (["--calibration-n", "0"], ["--batch-size", "0"]):
        assert_user_error(calibrate.main, [str(tiny_clf_dir), *extra], capsys,
                          "--batch-size and --calibration-n must be at least 1")
    # were the pipeline's "top_k must be ..." after loading the model, "[Errno 2] ...", and a traceback after
    # the probe had run
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    for extra, message in [(["--top-k", "0"], "--top-k must be at least 1"),
                           (["--probe", str(tmp_path / "none.tsv")], "none.tsv: no such file"),
                           (["--out", str(a_file / "probe.json")], f"{a_file} is a file, not a folder")]:
        assert_user_error(fill_mask_probe.main, ["--model", str(tiny_mlm_dir), *extra], capsys, message)


def test_a_bare_encoder_given_as_a_scripts_model_points_to_from_pretrained_encoder(tiny_mlm_dir, tmp_path, capsys):
    """`transformers`' bare RobertaModel folder given to train.evaluate --model was "--model BARE/config.json:
    architectures is ['RobertaModel']; this package loads [...]", with no word of how such a folder is used (the
    README promises the hint for a script's model option). Refused before the data is read (it is not there)."""
    bare = shutil.copytree(tiny_mlm_dir, tmp_path / "bare")
    config = json.loads((bare / "config.json").read_text())
    (bare / "config.json").write_text(json.dumps({**config, "architectures": ["RobertaModel"]}))
    assert_user_error(evaluate.main, ["--model", str(bare), "--mlm-text", str(tmp_path / "gone.txt")], capsys,
                      f"error: --model {bare} is an encoder without a head (RobertaModel); ",
                      "Start a classifier from its encoder with RobertaForSequenceClassification"
                      f".from_pretrained_encoder({str(bare)!r})")


def test_export_keeps_a_training_run_in_its_destination(tiny_mlm_dir, tmp_path, capsys):
    """An export into a run folder replaced its model and deleted its metrics.json and log.jsonl; an earlier
    export is still replaced (scripts.release ships again into assets/)."""
    run = shutil.copytree(tiny_mlm_dir, tmp_path / "run")
    (run / "metrics.json").write_text("{}")
    assert_user_error(export.main, [str(tiny_mlm_dir), str(run)], capsys, "holds a training run")
    assert (run / "metrics.json").is_file()
    shipped = tmp_path / "shipped"
    for _ in range(2):
        assert export.main([str(tiny_mlm_dir), str(shipped)]) == 0
    (run / "checkpoints" / "step-00000004").mkdir(parents=True)  # was "model.safetensors: unreadable (...)"
    assert_user_error(export.main, [str(run / "checkpoints" / "step-1"), str(tmp_path / "x")], capsys,
                      "step-1: no such checkpoint", "step-00000004")


def test_gpu_transfer_paths(train_files, tmp_path, capsys):
    a_file = train_files / "corpus.txt"
    bundle = ["bundle", "--data-root", str(train_files), "--files", "corpus.txt"]
    # were "[Errno 17] File exists: ...", "[Errno 2] No such file or directory: ...", and a file packed as the runs
    assert_user_error(gpu_transfer.main, [*bundle, "--out", str(a_file), "--tokenizer",
                                          str(train_files / "tokenizer.json")],
                      capsys, f"--out {a_file} is a file, not a folder")
    assert_user_error(gpu_transfer.main, [*bundle, "--out", str(tmp_path / "up"), "--tokenizer",
                                          str(tmp_path / "tok.json")], capsys, "--tokenizer", "no such file")
    assert_user_error(gpu_transfer.main, ["pack", str(tmp_path / "runs"), "--out", str(tmp_path / "p")], capsys,
                      "no such folder")
    assert_user_error(gpu_transfer.main, ["pack", str(a_file), "--out", str(tmp_path / "p")], capsys, "not a folder")


def test_experiment_scripts_check_before_running(train_files, tmp_path, capsys):
    a_file = train_files / "corpus.txt"
    # was "[Errno 17] File exists"
    assert_user_error(ablation.main, ["--out", str(a_file), "--ship", "", "--quick"], capsys,
                      f"--out {a_file} is a file, not a folder")
    # were planned, then refused by train.pretrain after a tokenizer was trained
    assert_user_error(ablation.main, ["--out", str(tmp_path / "ab"), "--epochs", "0", "--dry-run"], capsys,
                      "--epochs and --time-budget-min must be positive")
    assert_user_error(probes.main, ["--token-budget", "0", "--dry-run"], capsys, "--token-budget must be positive")
    # was "[Errno 2] No such file or directory: ..." after OUT was made
    out = tmp_path / "tapt"
    assert_user_error(tapt_corpus.main, ["--out", str(out), "--imdb-unsup", str(tmp_path / "unsup.txt"),
                                         "--sst2-train", str(train_files / "train.tsv")], capsys,
                      "--imdb-unsup", "no such file")
    assert not out.exists()
    # were an empty sst2-lower.txt, exit 0 (train.pretrain then found "no documents"), and a negative length taken
    tapt = ["--out", str(out), "--imdb-unsup", str(train_files / "corpus.txt"),
            "--sst2-train", str(train_files / "train.tsv")]
    assert_user_error(tapt_corpus.main, [*tapt, "--min-words", "1000"], capsys, "sst2-lower.txt: no document was kept")
    assert sorted(p.name for p in out.iterdir()) == []  # neither file: sst2-lower.txt marks the recipe's step done
    assert tapt_corpus.main(tapt) == 0  # the same command with a good input then writes both
    assert sorted(p.name for p in out.iterdir()) == ["imdb-lower.txt", "sst2-lower.txt"]
    assert_user_error(tapt_corpus.main, [*tapt, "--min-words", "-3"], capsys, "--min-words must be at least 1")


def test_tapt_corpus_checks_its_inputs_before_it_touches_its_finished_files(train_files, tmp_path, capsys):
    """A misspelt --sst2-train (or any input that fails) deleted the finished imdb-lower.txt and sst2-lower.txt of
    the earlier run in --out."""
    out = tmp_path / "tapt"
    tapt = ["--out", str(out), "--imdb-unsup", str(train_files / "corpus.txt"), "--sst2-train",
            str(train_files / "train.tsv")]
    assert tapt_corpus.main(tapt) == 0
    finished = {p.name: p.read_bytes() for p in out.iterdir()}
    assert_user_error(tapt_corpus.main, [*tapt[:-1], str(tmp_path / "trian.tsv")], capsys,
                      "--sst2-train", "trian.tsv: no such file")
    assert_user_error(tapt_corpus.main, [*tapt, "--min-words", "1000"], capsys, "no document was kept")
    assert {p.name: p.read_bytes() for p in out.iterdir()} == finished


def test_probe_scripts_bad_input(tiny_mlm_dir, tiny_clf_dir, tmp_path, capsys):
    from scripts import analogy_probe, phase_curve

    # each was a traceback
    assert_user_error(analogy_probe.main, ["--model", str(tmp_path / "none")], capsys, "none: no such folder")
    assert_user_error(analogy_probe.main, ["--model", str(tiny_clf_dir)], capsys, "is a classifier")
    assert_user_error(analogy_probe.main, ["--model", str(tiny_mlm_dir), "--out", str(tmp_path)], capsys,
                      f"--out {tmp_path} is a folder")
    assert_user_error(analogy_probe.main, ["--model", str(tiny_mlm_dir), "--probe", str(tmp_path / "p.tsv")], capsys,
                      "p.tsv: no such file")
    # was "not asked: Ask for 1 to 100 neighbours." for every question, exit 0
    assert_user_error(analogy_probe.main, ["--model", str(tiny_mlm_dir), "--top-k", "0"], capsys,
                      "--top-k must be between 1 and 100")
    # were drawn and extrapolated
    assert_user_error(phase_curve.main, ["--target", "2"], capsys, "--target must be between 0 and 1")
    assert_user_error(phase_curve.main, ["--tokens-per-s", "0"], capsys, "--tokens-per-s positive")


def test_json_outputs_never_replace_another_file(tiny_mlm_dir, tmp_path, capsys):
    """`--out README.md` replaced the project's README with the probe's JSON (exit 0): a JSON output must be
    named .json, and an existing .json file that is not JSON is kept; a figure's name must be an image's."""
    from scripts import analogy_probe, phase_curve

    readme, notes = tmp_path / "README.md", tmp_path / "notes.json"
    readme.write_text("# mine\n"), notes.write_text("my notes, not JSON\n")
    probe = ["--model", str(tiny_mlm_dir), "--probe", str(ROOT / "tests" / "data" / "fill_mask_probe.tsv")]
    assert_user_error(fill_mask_probe.main, [*probe, "--out", str(readme)], capsys, "give a .json file name")
    assert_user_error(fill_mask_probe.main, [*probe, "--out", str(notes)], capsys, "exists and is not JSON")
    assert_user_error(analogy_probe.main, ["--model", str(tiny_mlm_dir), "--out", str(readme)], capsys, ".json")
    assert_user_error(summarize.main, [str(tiny_mlm_dir), "--out", str(readme)], capsys, "give a .json file name")
    assert_user_error(phase_curve.main, ["--out", str(tmp_path / "curve.txt")], capsys,
                      "give a .png or .svg or .pdf file name")  # was a matplotlib traceback
    assert readme.read_text() == "# mine\n" and notes.read_text() == "my notes, not JSON\n"
    written = tmp_path / "probe.json"  # a JSON output is overwritten by the next run, as before
    written.write_text("{}")
    assert fill_mask_probe.main([*probe, "--out", str(written)]) == 0 and "answers" in written.read_text()


def test_analogy_probe_missing_model_in_a_process(tmp_path):
    result = run_module("scripts.analogy_probe", "--model", tmp_path / "none")
    assert result.returncode == runtime.EXIT_USER_ERROR and "Traceback" not in result.stderr
    assert result.stderr.startswith("error: ") and "none: no such folder" in result.stderr


def test_load_check_refuses_an_empty_load_and_a_missing_app(capsys):
    """Were a table of nan with exit 0 (--clients 0) and with exit 1 (no app at --url)."""
    from scripts import load_check

    with pytest.raises(SystemExit) as exit_:
        load_check.main(["--clients", "0", "--url", "http://127.0.0.1:9/"])
    assert exit_.value.code == 2 and "--clients and --requests must be at least 1" in capsys.readouterr().err
    assert load_check.main(["--url", "http://127.0.0.1:9/"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --url http://127.0.0.1:9/: no app answers there") and "nan" not in err


def test_a_file_given_for_a_folder_is_named_as_such(train_files, tiny_mlm_dir, tmp_path, capsys):
    """Was "[Errno 17] File exists" for a file as --cache-dir. (A folder given for a file: test_cli_messages.)"""
    a_file = train_files / "corpus.txt"
    with pytest.raises(SystemExit) as exit_:
        evaluate.main(["--model", str(tiny_mlm_dir), "--mlm-text", str(a_file), "--cache-dir", str(a_file)])
    assert exit_.value.code == 2 and "--cache-dir" in capsys.readouterr().err
    argv = ["--corpus", str(tmp_path / "missing.txt"), "--tokenizer", str(train_files / "tokenizer.json"),
            "--cache-dir", str(a_file), "--out", str(tmp_path / "run")]
    assert pretrain.main(argv) == 2
    err = capsys.readouterr().err
    assert f"--cache-dir {a_file} is a file, not a folder" in err and "missing.txt" not in err


def test_a_damaged_xz_corpus_is_named_not_a_traceback(train_files, tmp_path, capsys):
    """A cut-off .xz (a transfer that did not finish: `train.gpu_transfer` ships the corpora so) was lzma's
    EOFError or LZMAError with a traceback, exit 1."""
    import lzma
    import random

    rng = random.Random(0)
    words = [f"w{i}" for i in range(5000)]  # text that compresses little: 3 kB cut from it is not all of it
    whole = tmp_path / "whole.txt.xz"
    whole.write_bytes(lzma.compress("\n".join(" ".join(rng.choices(words, k=12)) for _ in range(5000)).encode()))
    cut, garbage = tmp_path / "cut.txt.xz", tmp_path / "garbage.txt.xz"
    cut.write_bytes(whole.read_bytes()[:3000])
    garbage.write_bytes(bytes(rng.randrange(256) for _ in range(3000)))
    for damaged in (cut, garbage):
        assert_user_error(pretrain.main, pretrain_argv(train_files, tmp_path / f"run-{damaged.stem}", "--corpus",
                                                       str(damaged), "--max-steps", "1"),
                          capsys, f"{damaged}: not a complete xz file (truncated or damaged?")
        assert_user_error(tokenizer.main, ["--corpus", str(damaged), "--out", str(tmp_path / f"tok-{damaged.stem}"),
                                           "--vocab-size", "300", "--quiet"], capsys, "not a complete xz file")


def test_pretrain_checks_its_data_and_out_before_training_a_tokenizer(train_files, tiny_mlm_dir, tmp_path, capsys):
    """A misspelt --valid was found after the tokenizer was trained (minutes on the full corpus); a tokenizer a
    failed start left in --out was reused by the next command with other options (its vocabulary size)."""
    argv = pretrain_argv(train_files, tmp_path / "run", "--max-steps", "1", "--vocab-size", "300")
    argv[argv.index("--tokenizer"):argv.index("--tokenizer") + 2] = []  # the run trains its own
    valid = argv.index("--valid") + 1
    assert_user_error(pretrain.main, [*argv[:valid], str(tmp_path / "missing.txt"), *argv[valid + 1:]], capsys,
                      "missing.txt: no such file or folder")
    assert "training a" not in capsys.readouterr().out and not (tmp_path / "run").exists()
    assert_user_error(pretrain.main, [*argv, "--corpus", f"{train_files / 'corpus.txt'}=1,{tmp_path / 'gone'}=1"],
                      capsys, "gone: no such file or folder")
    (tmp_path / "run").mkdir()
    roberta.train_tokenizer(["a b c d e"] * 5, vocab_size=270, min_frequency=1, show_progress=False).save(
        str(tmp_path / "run" / "tokenizer.json"))  # what a failed start left
    assert pretrain.main(argv) == 0
    assert roberta.load_tokenizer(tmp_path / "run").get_vocab_size() == 300  # trained again, as asked
    assert_user_error(pretrain.main, argv, capsys, "already holds a run or model")  # never into a finished one


def test_a_tokenizer_that_is_not_the_init_models_vocabulary_is_refused(train_files, tiny_mlm_dir, tmp_path, capsys):
    """Same size, other ids: the --init model read nonsense, pretraining and fine-tuning went on without a word."""
    other = tmp_path / "other.json"
    shuffled = json.loads((tiny_mlm_dir / "tokenizer.json").read_text(encoding="utf-8"))
    vocab = shuffled["model"]["vocab"]
    movable = sorted((token for token, i in vocab.items() if i > 262), key=vocab.get)  # after bytes and specials
    for a, b in zip(movable[::2], movable[1::2]):  # swap ids pairwise: the same size and tokens, other ids
        vocab[a], vocab[b] = vocab[b], vocab[a]
    other.write_text(json.dumps(shuffled))
    argv = pretrain_argv(train_files, tmp_path / "pt", "--max-steps", "1", "--init", str(tiny_mlm_dir))
    argv[argv.index("--model-max-length"):argv.index("--model-max-length") + 2] = []
    argv[argv.index("--tokenizer") + 1] = str(other)
    assert_user_error(pretrain.main, argv, capsys, f"--tokenizer {other} is not the vocabulary of --init",
                      "leave --tokenizer out")
    assert_user_error(finetune.main, finetune_argv(train_files, tmp_path / "ft", "--init", str(tiny_mlm_dir),
                                                   "--tokenizer", str(other)), capsys, "is not the vocabulary")
    argv[argv.index("--tokenizer") + 1] = str(tiny_mlm_dir / "tokenizer.json")  # its own: accepted
    assert pretrain.main(argv) == 0


def test_an_init_folder_whose_tokenizer_is_not_its_models_is_named(train_files, tiny_mlm_dir, tmp_path, capsys):
    """"the tokenizer has 265 tokens, the model 300" named no file and said nothing of what to do. Training refuses
    any difference in size; train.evaluate loads what the model runs (fewer tokens than rows) with one line
    `warning: ...`, as the scripts' other warnings read (it was Python's `file:line: TokenizerFitWarning: ...` and
    the source line that warned), and refuses more tokens than rows."""
    folder = shutil.copytree(tiny_mlm_dir, tmp_path / "init")
    smaller = roberta.train_tokenizer(["a b c d e"] * 5, vocab_size=270, min_frequency=1, show_progress=False)
    smaller.save(str(folder / "tokenizer.json"))
    said = (f"--init {folder}'s tokenizer.json has {smaller.get_vocab_size()} tokens but the --init model 300 "
            "embedding rows", "use the tokenizer the model was trained with")
    argv = pretrain_argv(train_files, tmp_path / "pt", "--max-steps", "1", "--init", str(folder))
    argv[argv.index("--model-max-length"):argv.index("--model-max-length") + 2] = []
    argv[argv.index("--tokenizer"):argv.index("--tokenizer") + 2] = []
    assert_user_error(pretrain.main, argv, capsys, *said)
    assert_user_error(finetune.main, finetune_argv(train_files, tmp_path / "ft", "--init", str(folder)), capsys,
                      *said)
    # loading (not training): 300 rows for 265 tokens is no padding (265 rounded up), but the model runs
    done = run_module("train.evaluate", "--model", folder, "--mlm-text", train_files / "corpus.txt")
    assert done.returncode == 0, done.stderr
    warned = [line for line in done.stderr.splitlines() if "warning" in line.lower()]
    tokens = smaller.get_vocab_size()
    assert warned == [f"warning: {folder}'s tokenizer.json has {tokens} tokens but the model 300 embedding rows: the "
                      f"last {300 - tokens} rows are no token's. Harmless when the vocabulary size was set by hand; if "
                      "the model answers nonsense, the tokenizer is another model's"], done.stderr
    fewer_rows = shutil.copytree(tiny_mlm_dir, tmp_path / "fewer-rows")  # its 300 tokens for 200 rows: refused
    roberta.RobertaForMaskedLM(dataclasses.replace(roberta.load_config(tiny_mlm_dir), vocab_size=200)).save_pretrained(
        fewer_rows)
    assert_user_error(evaluate.main, ["--model", str(fewer_rows), "--mlm-text", str(train_files / "corpus.txt")],
                      capsys, f"{fewer_rows}'s tokenizer.json has 300 tokens but the model only 200",
                      "use the tokenizer the model was trained with")


def test_recipe_refuses_gpu_options_without_gpu(tmp_path, capsys):
    """They were ignored without a word (--seeds 7 8 ran seed 0, --data /nonexistent was never looked at)."""
    out = tmp_path / "recipe"
    assert_user_error(recipe.main, ["--out", str(out), "--quick", "--seeds", "7", "8", "--data", "/nonexistent"],
                      capsys, "--data, --seeds need --gpu")
    assert_user_error(recipe.main, ["--out", str(out), "--quick", "--compile"], capsys, "--compile needs --gpu")
    assert not out.exists()


def test_summarize_refuses_a_run_given_twice(tiny_clf_dir, tiny_mlm_dir, capsys):
    """It counted twice: 2 runs, a std of 0."""
    code, _, err = outcome(summarize.main, [str(tiny_clf_dir), f"{tiny_clf_dir}/"], capsys)
    assert code == runtime.EXIT_USER_ERROR and f"{tiny_clf_dir} is given twice" in err
    code, _, err = outcome(summarize.main, ["--arm", "a", str(tiny_clf_dir), str(tiny_clf_dir)], capsys)
    assert code == runtime.EXIT_USER_ERROR and "given twice in arm a" in err
    # an arm's name given twice kept its last runs alone, without a word
    code, _, err = outcome(summarize.main, ["--arm", "a", str(tiny_clf_dir), "--arm", "a", str(tiny_mlm_dir)], capsys)
    assert code == runtime.EXIT_USER_ERROR and "--arm a is given twice" in err
    code, _, err = outcome(summarize.main, [str(tiny_clf_dir), "--arm", "runs", str(tiny_mlm_dir)], capsys)
    assert code == runtime.EXIT_USER_ERROR and "--arm runs is given twice" in err and "the run folders" in err


def test_phase_curve_of_an_empty_phase_list(tmp_path, capsys):
    from scripts import phase_curve

    (tmp_path / "phases.json").write_text("[]")
    assert_user_error(phase_curve.main, ["--model", str(tmp_path), "--out", str(tmp_path / "p.png")], capsys,
                      "phases.json lists no phase")


def test_every_script_ends_ctrl_c_with_130_and_one_line(capsys):
    """Ctrl-C in evaluate, average, calibrate, ... was a KeyboardInterrupt traceback and an exit by signal; the
    exit codes train/runtime.py promises hold for every script."""
    def interrupted(argv):
        raise KeyboardInterrupt

    assert runtime.exit_code(interrupted) == runtime.EXIT_INTERRUPTED
    assert capsys.readouterr().err == "interrupted\n"
    for path in sorted([*(ROOT / "train").glob("*.py"), *(ROOT / "scripts").glob("*.py")]):
        source = path.read_text(encoding="utf-8")
        if '__name__ == "__main__"' in source:
            assert "raise SystemExit(exit_code(main))" in source or "run_main(" in source, path.name


def test_pretrain_and_finetune_name_their_data_options_before_any_work(train_files, tiny_mlm_dir, tmp_path, capsys,
                                                                        monkeypatch):
    """train.pretrain and train.finetune reached their data through train.data's reading, whose errors named the file
    and not the option (`error: ../shared/data/sst2/dev.tvs: no such file`); now `train.data`'s checks, by the
    option's name, before a tokenizer is trained, a model built or anything written."""
    started = []
    monkeypatch.setattr(pretrain, "get_tokenizer", lambda *a: started.append("tokenizer"))
    monkeypatch.setattr(finetune, "build_model", lambda *a: started.append("model"))
    (tmp_path / "empty").mkdir()
    out, gone = tmp_path / "out", tmp_path / "gone.txt"
    text, labelled, sst2 = train_files / "valid.txt", train_files / "train.tsv", train_files / "dev.tsv"
    for option, value, message in [
            ("--valid", gone, f"--valid {gone}: no such file or folder"),
            ("--corpus", f"{train_files / 'corpus.txt'}=1,{gone}=1", f"--corpus {gone}: no such file or folder"),
            ("--corpus", tmp_path / "empty", f"--corpus {tmp_path / 'empty'}: folder holds no"),
            ("--corpus", "a=x", "--corpus: mixture 'a=x': weight 'x' of 'a' is not a number")]:
        argv = pretrain_argv(train_files, out, option, str(value))
        argv[argv.index("--tokenizer"):argv.index("--tokenizer") + 2] = []  # it would train one: not before the check
        line = assert_user_error(pretrain.main, argv, capsys, message).strip()
        assert line.startswith(f"error: {option}") and "\n" not in line
    for option, value, message in [
            ("--dev", tmp_path / "dev.tvs", f"--dev {tmp_path / 'dev.tvs'}: no such file"),
            ("--train", train_files, f"--train {train_files} is a folder, not a TSV/CSV file"),
            ("--dev", text, f"--dev {text}: no text column"),  # a text corpus for labelled data
            ("--imdb", sst2, f"--imdb {sst2}: no text column 'text'"),  # SST-2's layout: imdb_sample reads `text`
            ("--label-column", "stars", f"--train {labelled}: no label column 'stars'")]:
        line = assert_user_error(finetune.main, finetune_argv(train_files, out, "--init", str(tiny_mlm_dir), option,
                                                              str(value)), capsys, message).strip()
        assert line.startswith("error: --") and "\n" not in line
    assert started == [] and not out.exists()


def test_train_debug_raises_the_user_error_of_every_script(tiny_mlm_dir, tmp_path, capsys, monkeypatch):
    """One line and exit 2; with TRAIN_DEBUG=1 the error itself, traceback and all. These scripts printed the
    line by hand (train.runtime's reporter was not used), and TRAIN_DEBUG=1 showed nothing more."""
    from scripts import load_check, phase_curve
    from train import token_counts

    missing = str(tmp_path / "missing")
    (tmp_path / "phases.json").write_text("{not json")
    cases = [
        (calibrate.main, [missing]),
        (average.main, [missing, str(tiny_mlm_dir), "--out", str(tmp_path / "avg")]),
        (export.main, [missing, str(tmp_path / "exported")]),
        (tokenizer.main, ["--corpus", missing, "--eval-text", "", "--out", str(tmp_path / "tok")]),
        (tapt_corpus.main, ["--out", str(tmp_path / "tapt"), "--imdb-unsup", missing]),
        (token_counts.main, ["--out", str(tmp_path / "counts.json"), "--tokenizer", missing]),  # checked before
        (token_counts.main, ["--words", "cat", "--source", f"text={missing}"]),  # and while counting
        (summarize.main, [missing]),
        (fill_mask_probe.main, ["--model", missing]),
        (gpu_transfer.main, ["unpack", missing, "--out", str(tmp_path / "runs")]),
        (phase_curve.main, ["--model", str(tmp_path), "--out", str(tmp_path / "p.png")]),
        (load_check.main, ["--json", str(tmp_path)]),
        (ablation.main, ["--out", str(tmp_path / "ab"), "--ship", "", "--quick", "--corpus", "hub:x", "--corpus-chars",
                         "1000"]),
    ]
    for main, argv in cases:
        assert_user_error(main, argv, capsys)
        monkeypatch.setenv("TRAIN_DEBUG", "1")
        with pytest.raises(runtime.USER_ERRORS):
            main(argv)
        monkeypatch.delenv("TRAIN_DEBUG")


def fill_the_disk_at(monkeypatch, name: str) -> None:
    """Every write of a file `name` through `roberta.files` (its temporary file) fails as on a full disk, after
    writing what fitted."""
    import errno

    real_write = Path.write_bytes

    def write_bytes(self, data):
        if self.name.startswith(f".{name}.tmp-"):
            real_write(self, data[:10])
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(self, data)

    monkeypatch.setattr(Path, "write_bytes", write_bytes)


def test_a_full_disk_at_the_end_of_a_run_names_the_file_and_how_to_go_on(train_files, tmp_path, monkeypatch,
                                                                         capsys):
    """A disk that filled as pretraining wrote its tokenizer files after the loop: a traceback (`tokenizers`' bare
    Exception, exit 1) and an empty tokenizer.json; in config.json, the weights or a figure, "error: [Errno 28] No
    space left on device", naming neither the file nor how to go on. Now one line, and --resume finishes the run."""
    out = tmp_path / "run"
    fill_the_disk_at(monkeypatch, "tokenizer.json")
    assert pretrain.main(pretrain_argv(train_files, out)) == runtime.EXIT_USER_ERROR
    err = capsys.readouterr().err  # the evaluations' lines, then the error's
    assert "Traceback" not in err and err.splitlines()[-1] == (
        f"error: could not write {out / 'tokenizer.json'} (No space left on device): free some space, then run the "
        "same command again with --resume (it goes on from its last checkpoint)")
    assert not (out / "tokenizer.json").exists()
    monkeypatch.undo()  # space freed
    assert pretrain.main(pretrain_argv(train_files, out, "--resume")) == 0
    assert roberta.pipeline("fill-mask", model=str(out))("a <mask> .")


def test_a_full_disk_in_export_or_average_names_the_file_and_leaves_no_half_folder(tiny_mlm_dir, tiny_clf_dir,
                                                                                  tmp_path, monkeypatch, capsys):
    """train.export and train.average on a full disk said "error: [Errno 28] No space left on device" alone."""
    fill_the_disk_at(monkeypatch, "model.safetensors")
    shipped = tmp_path / "shipped"
    assert export.main([str(tiny_mlm_dir), str(shipped)]) == runtime.EXIT_USER_ERROR
    assert capsys.readouterr().err == (f"error: could not write {shipped / 'model.safetensors'} (No space left on "
                                       "device): free some space, then run the same command again\n")
    assert not shipped.exists() and list(tmp_path.iterdir()) == []
    other = shutil.copytree(tiny_clf_dir, tmp_path / "clf-2")
    avg = tmp_path / "avg"
    argv = [str(tiny_clf_dir), str(other), "--out", str(avg), "--no-calibration", "--no-progress",
            "--allow-different-init"]  # (the fixtures' metrics.json say no init)
    assert average.main(argv) == runtime.EXIT_USER_ERROR
    assert capsys.readouterr().err == (f"error: could not write {avg / 'model.safetensors'} (No space left on "
                                       "device): free some space, then run the same command again\n")
    monkeypatch.undo()
    assert average.main(argv) == 0 and roberta.pipeline("sentiment-analysis", model=str(avg))("fine")


def test_pretrain_refuses_what_it_cannot_do_with_these_options_before_reading_the_corpus(train_files, tiny_mlm_dir,
                                                                                         tmp_path, capsys):
    """--output-bias unigram with --init, and --batch-order length (pretraining's packed rows have no lengths to
    group by), were refused after the corpus was read and packed: minutes on the default mixture, for an error the
    options alone give. (A shape option with --init comes once the --init folder is found: test_cli_messages.)"""
    init = ["--corpus", str(train_files / "corpus.txt"), "--valid", str(train_files / "valid.txt"), "--init",
            str(tiny_mlm_dir), "--max-steps", "1", "--cache-dir", "", "--no-progress", "--out", str(tmp_path / "out")]
    new = pretrain_argv(train_files, tmp_path / "out")
    for argv, message in [([*init, "--output-bias", "unigram"], "--output-bias unigram initialises a new model"),
                          ([*init, "--layers", "3"], "--layers cannot change the shape of the --init model"),
                          ([*new, "--batch-order", "length"], "--batch-order length: pretraining's rows")]:
        code, out, err = outcome(pretrain.main, argv, capsys)
        assert code == runtime.EXIT_USER_ERROR and message in err and "Traceback" not in err, err
        assert out == "", out  # no "reading CORPUS" line, nor the model's
    assert not (tmp_path / "out").exists()


def _copy(p, folder, name: str) -> Path:
    return shutil.copytree(folder, p.tmp / name)


def _relabelled(p) -> str:
    """The tiny classifier with other label names."""
    folder = _copy(p, p.clf, "relabelled")
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    config.update(id2label={"0": "bad", "1": "good"}, label2id={"bad": 0, "good": 1})
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return str(folder)


def _headless(p) -> str:
    """The tiny classifier without the bias of its output layer."""
    from safetensors.torch import load_file, save_file

    folder = _copy(p, p.clf, "headless")
    weights = load_file(folder / "model.safetensors")
    del weights["classifier.out_proj.bias"]
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})
    return str(folder)


def _with_metrics(p, metrics: dict) -> str:
    """The tiny classifier with this metrics.json."""
    folder = _copy(p, p.clf, "with-metrics")
    (folder / "metrics.json").write_text(json.dumps(metrics), encoding="utf-8")
    return str(folder)


def _damaged(p) -> str:
    """The tiny masked LM with its weights cut in half."""
    folder = _copy(p, p.mlm, "damaged")
    weights = (folder / "model.safetensors").read_bytes()
    (folder / "model.safetensors").write_bytes(weights[:len(weights) // 2])
    return str(folder)


def _imdb_as_train(p) -> str:
    """A training file of the IMDB sample's 60 rows alone (in --train's layout)."""
    path = p.tmp / "imdb-rows.tsv"
    rows = (p.files / "imdb.tsv").read_text(encoding="utf-8").split("\n", 1)[1]
    path.write_text("sentence\tlabel\n" + rows, encoding="utf-8")
    return str(path)


def _pretrain_init(p, init: str, *extra) -> list[str]:
    return ["--corpus", str(p.files / "corpus.txt"), "--valid", str(p.files / "valid.txt"), "--init", init,
            "--max-steps", "1", "--cache-dir", "", "--no-progress", "--out", str(p.out), *extra]


def _gone(argv: list[str], option: str, p) -> list[str]:
    """`argv` with a file that does not exist for `option`: a refusal it names comes before that file is read."""
    argv[argv.index(option) + 1] = str(p.tmp / "gone")
    return argv


# R2's table of the train/ commands' refusals that no fast test ran: each reached without training, exit 2 and one
# error line (argv of the fixtures' paths `p`; a data file given as `gone` is refused before it is read). Not here:
# the Trainer's "the run would have 0 steps" (the options' checks leave no length below one step, and an empty
# --train or --corpus is refused when read) and the --resume refusals (a checkpoint: test_train_interrupts).
REFUSALS_BEFORE_TRAINING = {
    "evaluate: nothing": (evaluate.main, lambda p: ["--model", str(p.mlm)], "nothing to evaluate: give --mlm-text"),
    "evaluate: --mlm-text of a classifier": (
        evaluate.main, lambda p: ["--model", str(p.clf), "--mlm-text", str(p.files / "valid.txt")],
        "is a classifier; --mlm-text needs a masked-LM model"),
    "evaluate: --mlm-seeds 0": (
        evaluate.main, lambda p: ["--model", str(p.mlm), "--mlm-text", str(p.files / "valid.txt"), "--mlm-seeds", "0"],
        "--mlm-seeds must be at least 1, got 0"),
    "finetune: --select calibration without a slice": (
        finetune.main, lambda p: _gone(finetune_argv(p.files, p.out, "--init", str(p.mlm), "--select", "calibration",
                                                     "--calibration-n", "0"), "--train", p),
        "--select calibration needs a calibration slice (--calibration-n > 0)"),
    "finetune: a shape option with a pretrained --init": (
        finetune.main, lambda p: _gone(finetune_argv(p.files, p.out, "--init", str(p.mlm), "--layers", "2"),
                                       "--train", p),
        "--layers only apply with --init random"),
    "finetune: --init random without --tokenizer": (
        finetune.main, lambda p: finetune_argv(p.files, p.out, "--init", "random"),
        "--init random needs --tokenizer"),
    "finetune: --init classifier of other labels": (
        finetune.main, lambda p: finetune_argv(p.files, p.out, "--init", _relabelled(p)),
        "classifies into {0: 'bad', 1: 'good'}, this run into {0: 'negative', 1: 'positive'}: pass --new-head"),
    "finetune: --init classifier of another head": (
        finetune.main, lambda p: finetune_argv(p.files, p.out, "--init", _headless(p)),
        "the classifier head's weights ['classifier.dense.bias', 'classifier.dense.weight', "
        "'classifier.out_proj.weight'] do not fit"),
    "finetune: no training rows left": (
        finetune.main, lambda p: finetune_argv(p.files, p.out, "--init", str(p.mlm), "--train", _imdb_as_train(p),
                                               "--calibration-n", "0", "--imdb-n", "60"),
        "no training examples are left after holding out the calibration slice, the dev slice and the IMDB "
        "sample"),
    "loop: --eval-every -1": (
        pretrain.main, lambda p: _gone(pretrain_argv(p.files, p.out, "--eval-every", "-1"), "--corpus", p),
        "--eval-every and --save-every must be at least 0 (0 = off), got -1"),
    "pretrain: --init that cannot be loaded": (
        pretrain.main, lambda p: _pretrain_init(p, _damaged(p)), "cannot load --init"),
    "summarize: --arm without runs": (summarize.main, lambda p: ["--arm", "a"],
                                      "--arm a: give the arm's name and at least one run folder"),
    "summarize: nothing": (summarize.main, lambda p: [], "give run folders, or --arm NAME RUN..."),
    "recipe: --gpu --time-budget-min 0 without --init": (
        recipe.main, lambda p: ["--gpu", "--out", str(p.out), "--time-budget-min", "0"],
        "--time-budget-min 0 (no pretraining) fine-tunes the --init encoder: give --init MLM-FOLDER"),
    "recipe: a negative --time-budget-min": (
        recipe.main, lambda p: ["--gpu", "--out", str(p.out), "--time-budget-min", "-1"],
        "--time-budget-min must be at least 0 (0 = no pretraining), got -1"),
    "average: --mlm-seeds 0": (
        average.main, lambda p: [str(p.mlm), str(_copy(p, p.mlm, "twin")), "--out", str(p.out), "--mlm-seeds", "0"],
        "--mlm-seeds must be at least 1"),
    "average: members with no held-out text": (
        average.main, lambda p: [str(p.mlm), str(_copy(p, p.mlm, "twin")), "--out", str(p.out)],
        "name no held-out text (eval_data): pass --mlm-text"),
    "calibrate: no metrics.json": (calibrate.main, lambda p: [str(p.clf)],
                                   "has no metrics.json to name the calibration slice: pass --calibration-data"),
    "calibrate: no calibration slice": (calibrate.main, lambda p: [_with_metrics(p, {"final_eval": {}})],
                                        "metrics.json names no calibration slice: pass --calibration-data"),
}


@pytest.mark.parametrize("case", REFUSALS_BEFORE_TRAINING)
def test_a_refusal_before_training_is_one_error_line(case, train_files, tiny_mlm_dir, tiny_clf_dir, tmp_path,
                                                     capsys):
    main, argv, message = REFUSALS_BEFORE_TRAINING[case]
    p = SimpleNamespace(files=train_files, mlm=tiny_mlm_dir, clf=tiny_clf_dir, tmp=tmp_path, out=tmp_path / "out")
    assert_user_error(main, argv(p), capsys, message)
    assert not p.out.exists()
