"""train.recipe, train.sentiment_recipe and train.gpu_session refuse bad input before any work: exit status 2, one
line naming the option or folder, and nothing written or started (no training here: the steps are stubbed out)."""
import json
import lzma
import os
import shlex
import shutil

import pytest

from train import (ablation, data, experiment, finetune, gpu_session, pretrain, recipe, runtime, sentiment_recipe,
                   tapt_corpus, tokenizer)
from helpers import empty_bundle, refused


def listing(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.fixture
def no_steps(monkeypatch):
    """The experiments' step runner replaced: `ran` records each call (a list of step names); it returns 1, so a
    recipe that gets that far stops there (without shipping or summarizing)."""
    ran = []

    def run_steps(steps, *args, **kwargs):
        ran.append([step.name for step in steps])
        return 1

    monkeypatch.setattr(recipe, "run_steps", run_steps)
    monkeypatch.setattr(sentiment_recipe, "run_steps", run_steps)
    return ran


@pytest.fixture
def data_files(tmp_path):
    """Tiny inputs of every recipe step (the recipe's steps are stubbed, so only their names and headers matter):
    {option: path} and its command-line words."""
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "corpus.txt").write_text("the cat sat on the mat\n" * 20)
    (folder / "valid.txt").write_text("a dog barked at the mailman\n" * 5)
    for name, column in (("train.tsv", "sentence"), ("dev.tsv", "sentence"), ("imdb.tsv", "text")):
        (folder / name).write_text(f"{column}\tlabel\n" + "".join(f"row {i}\t{i % 2}\n" for i in range(10)))
    files = {"--corpus": folder / "corpus.txt", "--valid": folder / "valid.txt", "--train": folder / "train.tsv",
             "--dev": folder / "dev.tsv", "--imdb": folder / "imdb.tsv"}
    return files, [word for option, path in files.items() for word in (option, str(path))]


@pytest.fixture
def gpu_data(tmp_path):
    """A --data folder for train.recipe --gpu in ../shared/data's layout, some files only as their .xz copies (as
    `train.gpu_transfer bundle` leaves them); the steps are stubbed, so only the names and headers matter."""
    folder = tmp_path / "gpu-data"
    text, sentences, reviews = ("the cat sat on the mat\n" * 20, "sentence\tlabel\n" + "a row\t1\n" * 5,
                                "text\tlabel\n" + "a review\t0\n" * 5)
    for name, body in (("wikipedia-en/a.txt", text), ("wikitext-2/wiki.train.tokens", text),
                       ("wikitext-2/wiki.valid.tokens.xz", text), ("imdb/unsup.txt.xz", text),
                       ("imdb/train.tsv", reviews), ("sst2/train.tsv.xz", sentences), ("sst2/dev.tsv", sentences)):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(lzma.compress(body.encode()) if name.endswith(".xz") else body.encode())
    return folder


# ----- 1. an --out that holds a model is refused; the recipe's own earlier run is continued -----
def test_recipes_refuse_an_out_that_holds_a_model(tiny_mlm_dir, tmp_path, capsys, no_steps, data_files):
    model = shutil.copytree(tiny_mlm_dir, tmp_path / "model")  # config.json, model.safetensors, tokenizer.json
    config_only = tmp_path / "config-only"
    config_only.mkdir()
    shutil.copy(tiny_mlm_dir / "config.json", config_only)
    before = {folder: listing(folder) for folder in (model, config_only)}
    for folder, held in ((model, "model.safetensors"), (config_only, "config.json")):
        # was: tokenizer/, mlm/, sst2/, sst2-random/ and results.* written into the model folder
        refused(recipe.main, ["--quick", "--out", str(folder)], capsys, f"{folder} already holds a run or model",
                held, "choose another --out")
        refused(recipe.main, ["--gpu", "--out", str(folder), "--time-budget-min", "0.1"], capsys,
                "already holds a run or model")
        # was: sst2-s0/, imdb-lower.txt, sst2-lower.txt written into it
        for dry in ([], ["--dry-run"]):
            refused(sentiment_recipe.main, ["--init", str(tiny_mlm_dir), "--out", str(folder), "--tapt-minutes", "0",
                                            "--arms", "sst2", "--seeds", "0", *dry], capsys,
                    "already holds a run or model", held)
    assert no_steps == [] and {folder: listing(folder) for folder in before} == before

    # the recipes' own earlier runs are continued (their steps run), not refused
    earlier = tmp_path / "recipe"
    for name in ("tokenizer", "mlm", "sst2"):
        (earlier / name).mkdir(parents=True)
    (earlier / "mlm" / "metrics.json").write_text("{}")
    (earlier / "results.json").write_text("{}")
    assert recipe.main(["--quick", "--out", str(earlier), *data_files[1]]) == 1  # the stub's code: its steps ran
    assert no_steps == [["tokenizer", "pretrain", "finetune", "finetune-random"]]
    sentiment = tmp_path / "sentiment"
    (sentiment / "sst2-s0").mkdir(parents=True)
    (sentiment / "sst2-s0" / "metrics.json").write_text("{}")
    (sentiment / "summary.json").write_text("{}")
    files = data_files[0]
    argv = ["--init", str(tiny_mlm_dir), "--out", str(sentiment), "--tapt-minutes", "0", "--arms", "sst2", "--seeds",
            "0", "1", "--finetune-args", f"--train {files['--train']} --dev {files['--dev']} --imdb {files['--imdb']}"]
    capsys.readouterr()
    assert sentiment_recipe.main([*argv, "--dry-run"]) == 0
    assert f"# done: python -m train.finetune --init {tiny_mlm_dir}" in capsys.readouterr().out
    assert sentiment_recipe.main(argv) == 1 and no_steps[-1] == ["sst2-s0", "sst2-s1", "sst2-avg"]


# ----- 2. train.gpu_session: an --out it could not pack into is refused before the session starts -----
def test_gpu_session_refuses_an_out_it_cannot_write_before_starting(tmp_path, capsys, monkeypatch):
    started = []
    monkeypatch.setattr(gpu_session, "session", lambda args: started.append(args) or 0)
    empty_bundle(tmp_path / "up")
    a_file = tmp_path / "garbage.txt"
    a_file.write_text("x")
    common = ["--upload", str(tmp_path / "up"), "--tests", ""]
    work = ["--work", str(tmp_path / "work")]

    def gpu_refused(argv, *words):
        with pytest.raises(SystemExit) as exit_:
            gpu_session.main([*argv, *common])
        err = capsys.readouterr().err
        assert exit_.value.code == runtime.EXIT_USER_ERROR and "Traceback" not in err, err
        assert err.strip().splitlines()[-1].startswith("python -m train.gpu_session: error: ")
        for word in words:
            assert word in err, (word, err)

    # was: the whole session ran, then a NotADirectoryError traceback when packing
    gpu_refused(["--out", str(a_file), *work], f"--out {a_file} is a file, not a folder")
    gpu_refused(["--out", str(a_file / "sub"), *work], f"--out {a_file / 'sub'}: {a_file} is a file, not a folder")
    gpu_refused(["--out", str(tmp_path / "OUT"), "--work", str(a_file)], f"--work {a_file} is a file, not a folder")
    if os.geteuid() != 0:  # root writes anywhere
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        gpu_refused(["--out", str(locked / "OUT"), *work], "cannot write in", str(locked))
    assert started == [] and a_file.read_text() == "x"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["up", "garbage.txt"] + (
        ["locked"] if (tmp_path / "locked").exists() else []))  # no --work, no --out made
    assert gpu_session.main(["--out", str(tmp_path / "OUT"), *work, *common]) == 0 and len(started) == 1


# ----- 3. train.recipe --gpu: every step's options checked before pretraining -----
@pytest.mark.parametrize("options, words", [
    (["--tapt-minutes", "-1"], ["--tapt-minutes must be at least 0", "got -1"]),
    (["--finetune-args", "--nope 3"], ["--finetune-args '--nope 3'", "unrecognized arguments: --nope 3",
                                       "train.finetune"]),
    (["--finetune-args", "--lr fast"], ["--finetune-args '--lr fast'", "invalid float value: 'fast'"]),
    (["--pretrain-args=--layers"], ["--pretrain-args '--layers'", "expected one argument", "train.pretrain"]),
    (["--finetune-args", "--seed 99999999999999999999"], ["--finetune-args '--seed 99999999999999999999'",
                                                          "argument --seed: must be between 0 and 4,294,967,295"]),
    (["--pretrain-args", "--eval-seed -1"], ["--pretrain-args '--eval-seed -1'",
                                             "argument --eval-seed: must be between 0 and 4,294,967,295, got -1"]),
    (["--parallel", "0"], ["--parallel must be at least 1, got 0"]),
    (["--seeds", "0", "0"], ["--seeds names seed 0 more than once"]),
])
def test_gpu_recipe_checks_every_steps_options_before_pretraining(tmp_path, capsys, no_steps, options, words):
    out = tmp_path / "gpu"
    # was: pretraining ran first, and the sentiment step refused them minutes later (or never did)
    refused(recipe.main, ["--gpu", "--out", str(out), "--time-budget-min", "0.1", *options], capsys, *words)
    assert no_steps == [] and not out.exists()


@pytest.mark.parametrize("main, argv, flag", [
    (recipe.main, ["--gpu", "--time-budget-min", "0.1", "--seeds", "0"], "--seeds"),
    (sentiment_recipe.main, ["--init", "x", "--seeds", "0"], "--seeds"),
    (sentiment_recipe.main, ["--init", "x"], "--imdb-stage-seed"),
    (ablation.main, ["--seeds", "0"], "--seeds"),
    (gpu_session.main, ["--seeds", "0"], "--seeds"),
], ids=["recipe", "sentiment_recipe", "sentiment_recipe-imdb-stage", "ablation", "gpu_session"])
def test_experiment_seeds_are_bounded_when_the_command_is_parsed(main, argv, flag, tmp_path, capsys, no_steps):
    """The experiments' seed options took any int (`type=int`) and were refused later, by the run of that seed or a
    check after parsing (train.ablation's only after the arms before it had run): each is a seed option as every
    other (`train.arguments.seed_value`), 0 to 2**32 - 1, refused by argparse when the command is parsed."""
    out = tmp_path / "out"
    for value in ("-1", str(2**32)):
        with pytest.raises(SystemExit) as exit_:
            main([*argv, "--out", str(out), flag, value])
        assert exit_.value.code == runtime.EXIT_USER_ERROR
        assert capsys.readouterr().err.strip().splitlines()[-1].endswith(
            f" error: argument {flag}: must be between 0 and 4,294,967,295, got {value}")
    assert no_steps == [] and not out.exists()


def test_gpu_recipe_accepts_good_options_and_checks_its_init(tiny_mlm_dir, tiny_clf_dir, tmp_path, capsys, no_steps,
                                                             gpu_data):
    out = tmp_path / "gpu"
    assert recipe.main(["--gpu", "--out", str(out), "--time-budget-min", "0.1", "--seeds", "0", "1", "--parallel",
                        "2", "--tapt-minutes", "1", "--finetune-args", "--layer-lr-decay 0.8", "--data",
                        str(gpu_data)]) == 1
    assert no_steps == [["pretrain", "sentiment"]]
    refused(recipe.main, ["--gpu", "--out", str(tmp_path / "g2"), "--time-budget-min", "0", "--init",
                          str(tiny_clf_dir)], capsys, f"--init {tiny_clf_dir} is a classifier")
    refused(recipe.main, ["--gpu", "--out", str(tmp_path / "g2"), "--init", str(tmp_path / "nope")], capsys,
            f"--init {tmp_path / 'nope'}", "no such folder")
    assert no_steps == [["pretrain", "sentiment"]] and not (tmp_path / "g2").exists()


def test_gpu_recipe_checks_its_data_under_data_before_pretraining(tiny_mlm_dir, tmp_path, capsys, no_steps, gpu_data):
    """--gpu checked no input file: a --data folder without sst2/dev.tsv (nor its .xz copy) was found by the
    sentiment step, after the minutes of pretraining a GPU call has. Now each step's files as it will read them
    (relocated under --data, .xz copies accepted), one error naming the recipe's option (--data for the files
    that no option gives)."""
    out, gone = tmp_path / "gpu", str(tmp_path / "gone.txt")
    corpus = str(gpu_data / "wikitext-2" / "wiki.train.tokens")
    good = ["--gpu", "--out", str(out), "--time-budget-min", "0.1", "--seeds", "0", "--data", str(gpu_data)]
    every = ["--tapt-minutes", "1", "--imdb-stage"]  # TAPT's review text and the IMDB stage's reviews too
    ran = ["--out", str(tmp_path / "ran")]  # (the recipe makes its --out before its steps run)
    assert recipe.main([*good, *every, *ran]) == 1  # the .xz copies are taken: the steps ran
    assert no_steps == [["pretrain", "sentiment"]]
    for extra, words in [
            (["--dev", "../shared/data/sst2/dev.tvs"], [f"--dev {gpu_data}/sst2/dev.tvs: no such file"]),
            (["--valid", gone], [f"--valid {gone}: no such file or folder"]),
            (["--corpus", f"{corpus}=1,{gone}=1"], [f"--corpus {gone}: no such file or folder"]),
            (["--train", str(gpu_data / "wikitext-2" / "wiki.train.tokens")], ["--train ", ": no text column"]),
            (["--imdb", str(gpu_data / "sst2" / "dev.tsv")], ["--imdb ", "no text column 'text'"]),
            (["--pretrain-args", f"--valid {gone}"], [f"--pretrain-args --valid {gone}: no such file or folder"]),
            (["--finetune-args", f"--dev {gone}"], [f"--finetune-args --dev {gone}: no such file"]),
            (["--tokenizer", str(tmp_path / "tok.json")], [f"--tokenizer {tmp_path / 'tok.json'}: no such tokenizer"])]:
        refused(recipe.main, [*good, *every, *extra], capsys, *words)
    (gpu_data / "sst2" / "dev.tsv").unlink()
    refused(recipe.main, good, capsys, f"--dev's default {gpu_data}/sst2/dev.tsv: no such file", "pass --dev")
    (gpu_data / "imdb" / "unsup.txt.xz").unlink()  # a source of the default corpus, and TAPT's review text
    (gpu_data / "imdb" / "train.tsv").unlink()  # the same, and the IMDB stage's reviews
    dev = ["--dev", str(gpu_data / "sst2" / "train.tsv.xz"), "--imdb", ""]
    refused(recipe.main, [*good, *dev], capsys, f"--corpus's default {gpu_data}/imdb/unsup.txt: no such file",
            "pass --corpus")
    refused(recipe.main, [*good, *dev, "--corpus", corpus, "--tapt-minutes", "1"], capsys,
            f"--data {gpu_data}/imdb/unsup.txt: no such file")
    refused(recipe.main, [*good, *dev, "--corpus", corpus, "--imdb-stage"], capsys,
            f"--data {gpu_data}/imdb/train.tsv: no such file")
    assert no_steps == [["pretrain", "sentiment"]] and not out.exists()
    # no pretraining (--time-budget-min 0): its corpus is not read, and not needed
    assert recipe.main([*good, *dev, "--time-budget-min", "0", "--init", str(tiny_mlm_dir), *ran]) == 1
    assert no_steps[-1] == ["sentiment"]


# ----- 4. train.sentiment_recipe: a seed given twice -----
def test_sentiment_recipe_refuses_a_seed_given_twice(tiny_mlm_dir, tmp_path, capsys, no_steps):
    out = tmp_path / "sentiment"
    for extra in ([], ["--dry-run"], ["--parallel", "2"]):  # was: the same run averaged and summarized twice
        refused(sentiment_recipe.main, ["--init", str(tiny_mlm_dir), "--out", str(out), "--tapt-minutes", "0",
                                        "--seeds", "0", "1", "0", *extra], capsys,
                "--seeds names seed 0 more than once", "each seed is one run")
    assert no_steps == [] and not out.exists()


# ----- 5. train.sentiment_recipe: --out a file (--dry-run too), --init missing or a classifier (a dry run may
# plan from a run still to come) -----
@pytest.mark.parametrize("dry", [[], ["--dry-run"]])
def test_sentiment_recipe_checks_out_and_init_before_any_work(tiny_mlm_dir, tiny_clf_dir, tmp_path, capsys, no_steps,
                                                               dry):
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    out = tmp_path / "sentiment"

    def argv(init, out_):
        return ["--init", str(init), "--out", str(out_), "--tapt-minutes", "0", "--arms", "sst2", *dry]

    # was: "error: [Errno 20] Not a directory: ..."
    line = refused(sentiment_recipe.main, argv(tiny_mlm_dir, a_file), capsys)
    assert line == f"error: --out {a_file} is a file, not a folder"
    missing = tmp_path / "no-such-mlm"
    if dry:  # the plan is printed, nothing run
        assert sentiment_recipe.main(argv(missing, out)) == 0 and str(missing) in capsys.readouterr().out
    else:
        refused(sentiment_recipe.main, argv(missing, out), capsys, f"--init {missing}", "no such folder")
        # was: fine-tuned from a classifier's encoder; the help asks for the pretrained MLM folder
        refused(sentiment_recipe.main, argv(tiny_clf_dir, out), capsys,
                f"--init {tiny_clf_dir} is a classifier (RobertaForSequenceClassification)", "masked-LM folder")
    assert no_steps == [] and not out.exists() and a_file.read_text() == "x"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]


# ----- 5b. train.sentiment_recipe: every step's input files checked before the first step (not in a dry run) -----
def test_sentiment_recipe_checks_every_steps_data_before_the_first_step(tiny_mlm_dir, tmp_path, capsys, no_steps,
                                                                        data_files):
    """A misspelt --imdb-train was found by the IMDB stage, after 18 minutes of TAPT; a misspelt --dev in
    --finetune-args by the first SST-2 run, after TAPT and the IMDB stage (`error: PATH: no such file`)."""
    files, _ = data_files
    out, gone = tmp_path / "sentiment", str(tmp_path / "gone.tsv")
    sst2 = f"--train {files['--train']} --dev {files['--dev']} --imdb {files['--imdb']}"
    good = ["--init", str(tiny_mlm_dir), "--out", str(out), "--arms", "imdb-sst2", "--seeds", "0", "1",
            "--tapt-minutes", "1", "--tapt-unsup", str(files["--corpus"]), "--tapt-sst2", str(files["--train"]),
            "--tapt-args", f"--valid {files['--valid']}", "--imdb-train", str(files["--imdb"]), "--finetune-args",
            sst2, "--imdb-args", sst2]
    for option, value, words in [
            ("--tapt-unsup", str(tmp_path), [f"--tapt-unsup {tmp_path}: a folder, not a file"]),
            ("--tapt-sst2", str(files["--valid"]), [f"--tapt-sst2 {files['--valid']}: no text column"]),
            ("--tapt-args", f"--valid {gone}", [f"--tapt-args --valid {gone}: no such file or folder"]),
            ("--imdb-train", gone, [f"--imdb-train {gone}: no such file"]),
            ("--imdb-args", f"{sst2} --dev {gone}", [f"--imdb-args --dev {gone}: no such file"]),
            ("--finetune-args", f"{sst2} --dev {gone}", [f"--finetune-args --dev {gone}: no such file"]),
            ("--finetune-args", f"{sst2} --imdb {files['--dev']}", [f"--finetune-args --imdb {files['--dev']}: no "
                                                                     "text column 'text'"])]:
        argv = [*good, option, value]
        refused(sentiment_recipe.main, argv, capsys, *words)
        assert sentiment_recipe.main([*argv, "--dry-run"]) == 0  # the plan, whose files may be made later
        capsys.readouterr()  # (its note that the imdb-sst2 seeds are not averaged)
    assert no_steps == [] and not out.exists()
    assert sentiment_recipe.main(good) == 1  # good inputs: the steps ran
    # one IMDB stage per seed: the imdb-sst2 seeds start from different weights, and are not averaged
    assert no_steps == [["tapt-corpus", "tapt", "imdb-s0", "imdb-sst2-s0", "imdb-s1", "imdb-sst2-s1"]]
    # a finished step's inputs are not needed again: TAPT done, its review text moved away
    for name in ("tapt/sst2-lower.txt", "tapt/mlm/metrics.json"):
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_text("x")
    assert sentiment_recipe.main([*good, "--tapt-unsup", gone, "--tapt-args", f"--valid {gone}"]) == 1


# ----- 6. train.recipe (CPU): every step's input files checked before the first step -----
def bad_inputs(tmp_path, files):
    """(option, value, words of the error) for each kind of bad input."""
    (tmp_path / "empty").mkdir()
    text = files["--valid"]
    return [
        ("--dev", str(tmp_path / "data" / "dev.tvs"), [f"--dev {tmp_path / 'data' / 'dev.tvs'}: no such file"]),
        ("--train", str(tmp_path / "data"), [f"--train {tmp_path / 'data'} is a folder, not a TSV/CSV file"]),
        ("--dev", str(text), [f"--dev {text}: no text column", "columns present"]),  # a text corpus for labels
        ("--imdb", str(files["--dev"]), [f"--imdb {files['--dev']}: no text column 'text'"]),  # SST-2's layout
        ("--valid", str(tmp_path / "valid.txtt"), [f"--valid {tmp_path / 'valid.txtt'}: no such file or folder"]),
        ("--corpus", f"{files['--corpus']}=1,{tmp_path / 'gone'}=1", [f"--corpus {tmp_path / 'gone'}: no such file"]),
        ("--corpus", str(tmp_path / "empty"), [f"--corpus {tmp_path / 'empty'}: folder holds no"]),
        ("--tokenizer", str(tmp_path / "tok.json"), [f"--tokenizer {tmp_path / 'tok.json'}: no such tokenizer file"]),
    ]


@pytest.mark.parametrize("preset", [["--quick"], []])
def test_recipe_checks_every_steps_data_before_the_first_step(tmp_path, capsys, no_steps, data_files, preset):
    """A misspelt --dev was found by the fine-tuning step, after the tokenizer and 80 minutes of pretraining; a
    folder for --train after tokenizer and pretraining; a missing --valid by pretraining."""
    files, good = data_files
    out = tmp_path / "recipe"
    for option, value, words in bad_inputs(tmp_path, files):
        refused(recipe.main, [*preset, "--out", str(out), *good, option, value], capsys, *words)
    assert no_steps == [] and not out.exists()
    assert recipe.main([*preset, "--out", str(out), *good]) == 1  # good inputs: the steps ran
    assert recipe.main([*preset, "--out", str(out), *good, "--imdb", ""]) == 1  # '' skips IMDB
    assert no_steps == [["tokenizer", "pretrain", "finetune", "finetune-random"]] * 2


def test_recipe_checks_the_inputs_of_the_steps_still_to_run(tmp_path, capsys, no_steps, data_files):
    """A finished step's inputs are not needed again (a recipe continued after its corpus moved)."""
    files, good = data_files
    out = tmp_path / "recipe"
    (out / "tokenizer").mkdir(parents=True)
    (out / "tokenizer" / "tokenizer.json").write_text("{}")
    (out / "mlm").mkdir()
    (out / "mlm" / "metrics.json").write_text("{}")
    gone = str(tmp_path / "gone.txt")
    assert recipe.main(["--quick", "--out", str(out), *good, "--corpus", gone, "--valid", gone]) == 1
    refused(recipe.main, ["--quick", "--out", str(out), *good, "--dev", gone], capsys, f"--dev {gone}: no such file")
    assert len(no_steps) == 1


def own_data(tmp_path):
    """A user's own labelled files: review,sentiment CSVs labelled pos/neg, and a text,label TSV of three labels."""
    folder = tmp_path / "mine"
    folder.mkdir()
    files = {}
    for name in ("reviews.csv", "reviews_dev.csv"):
        files[name] = folder / name
        files[name].write_text("review,sentiment\n" + "".join(f"review {i},{['neg', 'pos'][i % 2]}\n"
                                                              for i in range(10)))
    files["three.tsv"] = folder / "three.tsv"
    files["three.tsv"].write_text("text\tlabel\n" + "".join(f"row {i}\t{['negative', 'neutral', 'positive'][i % 3]}\n"
                                                           for i in range(10)))
    return files


def test_cpu_recipe_passes_finetune_args_to_both_fine_tunings(tmp_path, capsys, no_steps, data_files):
    """The CPU recipe refused --finetune-args ("needs --gpu"), so one's own columns and labels could not be given:
    they reach both fine-tunings, and their folders stay the recipe's."""
    files, good = data_files
    mine = own_data(tmp_path)
    out = tmp_path / "recipe"
    own = ["--train", str(mine["reviews.csv"]), "--dev", str(mine["reviews_dev.csv"]), "--imdb", "",
           "--finetune-args", "--text-column review --label-column sentiment --labels neg,pos --checks '' "
                              f"--out {tmp_path / 'elsewhere'}"]
    argv = ["--quick", "--out", str(out), *good, *own]
    assert recipe.main(argv) == 1  # the stub's code: the steps ran
    assert no_steps == [["tokenizer", "pretrain", "finetune", "finetune-random"]]
    steps = recipe.plan(recipe.build_parser().parse_args(argv))
    fine = {step.name: step.args for step in steps if step.kind == finetune.__name__}
    assert sorted(fine) == ["finetune", "finetune-random"]
    for name, args in fine.items():
        assert (args.text_column, args.label_column, args.labels, args.checks) == ("review", "sentiment", "neg,pos",
                                                                                   "")
        assert args.out == str(out / {"finetune": "sst2", "finetune-random": "sst2-random"}[name])
        assert args.id2label() == {0: "neg", 1: "pos"} and args.train == str(mine["reviews.csv"])
    refused(recipe.main, [*argv[:-1], "--nope 3"], capsys, "--finetune-args '--nope 3'", "unrecognized arguments")


def test_cpu_recipe_reads_the_labels_of_train_and_dev_before_the_first_step(tmp_path, capsys, no_steps, data_files):
    """Labels were checked by the fine-tuning, after the tokenizer and pretraining: `label 'neutral' is not an int`
    came after 80 minutes. The labels of --train and --dev are read before the first step, as --labels (given in
    --finetune-args) reads them, and so are the --checks file's expected labels; the IMDB check, skipped for labels
    that are not a negative/positive pair, is not checked for them."""
    files, good = data_files
    mine = own_data(tmp_path)
    out = tmp_path / "recipe"
    three = str(mine["three.tsv"])
    base = ["--quick", "--out", str(out), *good]
    refused(recipe.main, [*base, "--train", three], capsys,
            f"--train {three} line 3: label 'neutral' is not an int")
    refused(recipe.main, [*base, "--finetune-args", f"--dev {three}"], capsys,
            f"--finetune-args --dev {three} line 3: label 'neutral' is not an int")
    checks = tmp_path / "checks.tsv"  # a check of a label the model lacks (neg/pos are negative/positive)
    checks.write_text("category\tsentence\texpected\nsimple\tA plain film.\tneutral\n", encoding="utf-8")
    reviews = ["--text-column review --label-column sentiment --labels neg,pos"]
    refused(recipe.main, [*base, "--train", str(mine["reviews.csv"]), "--dev", str(mine["reviews_dev.csv"]),
                          "--finetune-args", f"{reviews[0]} --checks {checks}"],
            capsys, "--finetune-args --checks ", "expected 'neutral' is neither 'unsure' nor a label",
            "add --checks '' to --finetune-args")
    refused(recipe.main, [*base, "--dev", ""], capsys, "--dev is required: an evaluation file")
    assert no_steps == [] and not out.exists()
    # the documented example: neg,pos labels pass the default sentiment checks
    assert recipe.main([*base, "--train", str(mine["reviews.csv"]), "--dev", str(mine["reviews_dev.csv"]),
                        "--finetune-args", reviews[0]]) == 1
    assert no_steps == [["tokenizer", "pretrain", "finetune", "finetune-random"]]
    no_steps.clear()
    labels = ["--finetune-args", "--labels negative,neutral,positive --checks ''"]
    gone = str(tmp_path / "no-imdb.tsv")  # not read for three labels
    assert recipe.main([*base, "--train", three, "--dev", three, "--imdb", gone, *labels]) == 1
    assert no_steps == [["tokenizer", "pretrain", "finetune", "finetune-random"]]


def test_recipes_with_a_dev_slice_held_out_of_train_read_no_dev_file(tmp_path, capsys, no_steps, data_files, gpu_data,
                                                                     monkeypatch):
    """`--finetune-args "--dev-fraction 0.1"` (one's own single labelled file, no dev file): the CPU recipe read
    --dev's default before the first step anyway (refused where ../shared/data is not there, or its labels not the
    file's), and --gpu --data relocated that default under --data and passed it on, which train.finetune took for a
    dev file given beside --dev-fraction: each SST-2 run would have stopped, after pretraining. Neither reads nor
    passes a --dev now; a --dev given beside --dev-fraction is refused before any work."""
    files, _ = data_files
    three = str(own_data(tmp_path)["three.tsv"])
    monkeypatch.chdir(tmp_path)  # no ../shared/data here: --dev's default is not there
    held = ["--finetune-args", "--dev-fraction 0.1 --labels negative,neutral,positive --checks ''"]
    argv = ["--quick", "--out", str(tmp_path / "recipe"), "--corpus", str(files["--corpus"]), "--valid",
            str(files["--valid"]), "--train", three, "--imdb", "", *held]
    assert recipe.main(argv) == 1, capsys.readouterr().err  # the stub's code: the steps ran
    assert no_steps == [["tokenizer", "pretrain", "finetune", "finetune-random"]]
    for step in recipe.plan(recipe.build_parser().parse_args(argv)):
        if step.kind == finetune.__name__:
            assert step.args.dev_fraction == 0.1 and " --dev " not in step.command, step.command
            step.args.check_dev_fraction()
    dev = str(files["--dev"])
    refused(recipe.main, [*argv, "--dev", dev], capsys, f"--dev {dev} and --dev-fraction 0.1 both give the dev set")
    # --gpu: the default --dev under --data is neither checked (it may be missing) nor passed on
    (gpu_data / "sst2" / "dev.tsv").unlink()
    gpu = ["--gpu", "--out", str(tmp_path / "gpu"), "--time-budget-min", "0.1", "--seeds", "0", "--data",
           str(gpu_data), *held]
    assert recipe.main(gpu) == 1, capsys.readouterr().err
    assert no_steps[-1] == ["pretrain", "sentiment"]
    sentiment = next(step for step in recipe.plan_gpu(recipe.build_parser().parse_args(gpu))
                     if step.name == "sentiment")
    experiment_args = sentiment_recipe.build_parser().parse_args(shlex.split(sentiment.command)[3:])
    runs = [step.args for step in sentiment_recipe.plan(experiment_args)[0] if step.kind == finetune.__name__]
    assert runs and all(run.dev == finetune.DEFAULT_DEV and run.dev_fraction == 0.1 for run in runs)
    for run in runs:
        run.check_dev_fraction()  # as train.finetune checks it when the run starts
    refused(recipe.main, [*gpu, "--dev", dev], capsys, f"--dev {dev} and --dev-fraction 0.1 both give the dev set")
    assert no_steps[-1] == ["pretrain", "sentiment"] and len(no_steps) == 2


def test_missing_default_data_names_its_option_and_how_to_point_at_the_data(tiny_mlm_dir, tmp_path, capsys, no_steps,
                                                                            data_files, monkeypatch):
    """From a clone whose data is not at ../shared/data: was `error: ../shared/data/wikitext-2/wiki.train.tokens:
    no such file or folder`, naming neither the option nor the fix."""
    files, _ = data_files
    elsewhere = tmp_path / "clone"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # ../shared/data: tmp_path/shared/data, not there
    fix = ["relative to the current folder", "ln -s /path/to/shared ../shared"]
    out = str(tmp_path / "quick")
    refused(recipe.main, ["--quick", "--out", out], capsys,
            f"--corpus's default {recipe.QUICK_CORPUS}: no such file or folder", "pass --corpus", *fix)
    refused(recipe.main, ["--quick", "--out", out, "--corpus", str(files["--corpus"])], capsys,
            f"--valid's default {pretrain.DEFAULT_VALID}: no such file or folder", "pass --valid", *fix)
    refused(recipe.main, ["--quick", "--out", out, "--corpus", str(files["--corpus"]), "--valid",
                          str(files["--valid"])], capsys, "--train's default ../shared/data/sst2/train.tsv: no such "
                                                          "file", "pass --train", *fix)
    refused(recipe.main, ["--out", out], capsys, "--corpus's default ../shared/data/", *fix)
    refused(tokenizer.main, ["--out", str(tmp_path / "tok")], capsys, "--corpus's default ../shared/data/", *fix)
    # the training scripts and the other experiments check their data options by name too (train.pretrain said
    # `error: ../shared/data/wikitext-2/wiki.valid.tokens: no such file or folder (the default data folder ...)`,
    # train.finetune `error: ../shared/data/sst2/train.tsv: no such file`, naming no option)
    refused(pretrain.main, ["--out", str(tmp_path / "mlm")], capsys,
            f"--valid's default {pretrain.DEFAULT_VALID}: no such file or folder", "pass --valid", *fix)
    for tokenizer_given in ([], ["--tokenizer", str(tiny_mlm_dir)]):  # checked before one is trained, or one read
        refused(pretrain.main, ["--out", str(tmp_path / "mlm"), "--valid", str(files["--valid"]), *tokenizer_given],
                capsys, "--corpus's default ../shared/data/wikipedia-en: no such file or folder", "pass --corpus", *fix)
    refused(finetune.main, ["--init", "random", "--out", str(tmp_path / "clf")], capsys,
            f"--train's default {finetune.DEFAULT_TRAIN}: no such file", "pass --train", *fix)
    refused(finetune.main, ["--init", "random", "--out", str(tmp_path / "clf"), "--train", str(files["--train"]),
                            "--dev", str(files["--dev"])], capsys,
            f"--imdb's default {finetune.DEFAULT_IMDB}: no such file", "pass --imdb", *fix)
    refused(tapt_corpus.main, ["--out", str(tmp_path / "tapt")], capsys,
            f"--imdb-unsup's default {tapt_corpus.DEFAULT_UNSUP}: no such file", "pass --imdb-unsup", *fix)
    refused(sentiment_recipe.main, ["--init", str(tiny_mlm_dir), "--out", str(tmp_path / "sentiment")], capsys,
            f"--tapt-unsup's default {tapt_corpus.DEFAULT_UNSUP}: no such file", "pass --tapt-unsup", *fix)
    refused(recipe.main, ["--gpu", "--out", str(tmp_path / "gpu")], capsys,
            "--corpus's default ../shared/data/wikipedia-en: no such file or folder", "pass --corpus", *fix)
    refused(recipe.main, ["--gpu", "--out", str(tmp_path / "gpu"), "--time-budget-min", "0", "--init",
                          str(tiny_mlm_dir), "--imdb-stage", "--tapt-minutes", "0", "--imdb", ""], capsys,
            f"--data's default {finetune.DEFAULT_IMDB}: no such file", "pass --data", *fix)  # its IMDB stage's
    assert no_steps == [] and sorted(p.name for p in tmp_path.iterdir()) == ["clone", "data"]


@pytest.mark.parametrize("windows", [False, True], ids=["posix", "windows"])
def test_the_missing_data_hint_links_the_data_folder_as_the_platform_does(windows, tmp_path, capsys, no_steps,
                                                                          monkeypatch):
    r"""On Windows the hint said `ln -s /path/to/shared ../shared`, which neither cmd.exe nor PowerShell has: there
    it is a junction (`mklink /J`, which needs no administrator) through cmd, which PowerShell runs too; on POSIX
    still the symbolic link."""
    monkeypatch.setattr(runtime, "WINDOWS", windows)
    (tmp_path / "clone").mkdir()
    monkeypatch.chdir(tmp_path / "clone")  # ../shared/data: not there
    link = r"cmd /c mklink /J ..\shared C:\path\to\shared" if windows else "ln -s /path/to/shared ../shared"
    refused(recipe.main, ["--quick", "--out", str(tmp_path / "quick")], capsys,
            f"--corpus's default {recipe.QUICK_CORPUS}: no such file or folder", "pass --corpus",
            f", or link the data folder there: {link}")
    message = str(data.missing_data("../shared/data/sst2/dev.tsv"))  # a script that does not name the option
    assert message.endswith(f"pass the path of your copy, or link the data folder there: {link})"), message


def test_a_step_made_with_an_empty_option_shows_it_as_two_quotes(tmp_path, data_files):
    """Re-running the recipe with --imdb '' warned `(--imdb .../imdb/train.tsv -> )`."""
    files, good = data_files
    out = tmp_path / "recipe"
    parser = recipe.build_parser()
    made = [s for s in recipe.plan(parser.parse_args(["--quick", "--out", str(out), *good])) if s.name == "finetune"][0]
    made.folder.mkdir(parents=True)
    (made.folder / "metrics.json").write_text(json.dumps({"command": made.command}))
    now = [s for s in recipe.plan(parser.parse_args(["--quick", "--out", str(out), *good, "--imdb", ""]))
           if s.name == "finetune"][0]
    assert experiment.made_otherwise(now) == f"--imdb {files['--imdb']} -> ''"
    assert experiment.shown_value("") == "''" and experiment.shown_value(0.001) == "0.001"


@pytest.mark.parametrize("windows", [False, True], ids=["posix", "windows"])
def test_extra_options_keep_the_backslashes_of_a_windows_path(windows, monkeypatch, capsys):
    r"""`--finetune-args '--dev C:\Users\ana\sst\dev.tsv'` planned every SST-2 run with `--dev C:Usersanasstdev.tsv`
    (shlex's escape character), and a real run failed on that file. On Windows a backslash is now a character;
    quotes still group, and on POSIX the words are shlex.split's, as before."""
    monkeypatch.setattr(runtime, "WINDOWS", windows)
    typed = r'--dev C:\Users\ana\sst\dev.tsv --train "C:\my data\train.tsv" --lr 1e-4 #7'
    words = experiment.split_options(typed, "train.finetune")
    if windows:
        assert words == ["--dev", "C:\\Users\\ana\\sst\\dev.tsv", "--train", "C:\\my data\\train.tsv", "--lr", "1e-4",
                         "#7"]
    else:
        assert words == shlex.split(typed)
    assert experiment.split_options(shlex.join(words), "train.finetune") == words  # train.recipe passes them so
    with pytest.raises(ValueError, match="No closing quotation"):
        experiment.split_options('--lr "1e-4', "train.finetune")
    assert sentiment_recipe.main(["--init", "m", "--out", "x", "--dry-run", "--arms", "sst2", "--seeds", "0",
                                  "--tapt-minutes", "0", "--finetune-args", r"--dev C:\Users\ana\sst\dev.tsv"]) == 0
    planned = [line for line in capsys.readouterr().out.splitlines() if line.startswith("python -m train.finetune")]
    dev = "C:\\Users\\ana\\sst\\dev.tsv" if windows else "C:Usersanasstdev.tsv"  # printed for cmd.exe there
    assert planned and all(f"--dev {dev} " in line for line in planned), planned


def test_quick_results_say_the_accuracies_are_at_chance_level(tmp_path, capsys, monkeypatch, data_files):
    """SST-2 dev 0.5092 for both classifiers (the majority class) and nothing said so."""
    files, good = data_files
    out = tmp_path / "quick"
    for name, dev in (("mlm", None), ("sst2", 0.5), ("sst2-random", 0.5)):
        (out / name).mkdir(parents=True)
        metrics = {"dev_accuracy": dev} if dev else {"eval_loss": 6.0}
        if name == "sst2":  # a fine-tuning whose calibration had something to say
            metrics["calibration"] = {"temperature": 20.0, "notes": ["T at its upper bound 20: no signal"]}
        (out / name / "metrics.json").write_text(json.dumps(metrics))
    monkeypatch.setattr(recipe, "run_steps", lambda steps, **kwargs: 0)
    (files["--dev"]).write_text("sentence\tlabel\n" + "a\t0\nb\t1\nc\t1\nd\t1\n")  # 3 of 4 positive
    assert recipe.main(["--quick", "--out", str(out), *good]) == 0
    shown = capsys.readouterr().out
    line = ("--quick checks that the pipeline runs end to end, not what a model learns: the dev set's majority class "
            "is 75.0% of it, the accuracy of always answering it (these accuracies are at that chance level).")
    assert line in shown and line in (out / "results.md").read_text()
    (out / "sst2" / "metrics.json").write_text(json.dumps({"dev_accuracy": 0.9}))  # above chance: not said to be at it
    recipe.summarize(out, chance=0.75)
    assert "of it, the accuracy of always answering it." in (out / "results.md").read_text()
    assert "Calibration (pretrained): T at its upper bound 20: no signal." in shown
    assert json.loads((out / "results.json").read_text())["dev_majority_class_share"] == 0.75
    recipe.summarize(out)  # the full recipe's results: no such line
    assert "chance level" not in (out / "results.md").read_text()


# ----- 7. train.recipe --push-to-hub: refused with --gpu, its repo ids checked before any work -----
def test_recipe_refuses_push_to_hub_with_gpu(tmp_path, capsys, no_steps, gpu_data):
    """--gpu returned before the push: nothing uploaded, no word, exit 0."""
    refused(recipe.main, ["--gpu", "--data", str(gpu_data), "--out", str(tmp_path / "gpu"), "--push-to-hub", "me/x"],
            capsys, "--push-to-hub does not run with --gpu", "OUT/ship/mini-roberta-mlm", "train.push")
    assert no_steps == [] and not (tmp_path / "gpu").exists()


def test_recipe_checks_the_push_repo_ids_before_any_work(tmp_path, capsys, no_steps, data_files):
    """A bad id was found after the whole recipe, as "--repo-id must look like USER/NAME" and exit 1."""
    _, good = data_files
    line = refused(recipe.main, ["--quick", "--out", str(tmp_path / "quick"), *good, "--push-to-hub", "bad id"],
                   capsys, "--push-to-hub 'bad id'", "'bad id-mlm'")
    assert "--repo-id" not in line and no_steps == [] and not (tmp_path / "quick").exists()


def test_a_failed_push_exits_2_with_the_commands_that_finish_it(tmp_path, capsys, monkeypatch, data_files):
    from train import push

    _, good = data_files
    out = tmp_path / "quick"
    for name in ("mlm", "sst2", "sst2-random"):
        (out / name).mkdir(parents=True)
        (out / name / "metrics.json").write_text(json.dumps({"dev_accuracy": 0.5}))
    monkeypatch.setattr(recipe, "run_steps", lambda steps, **kwargs: 0)

    def offline(folder, repo_id, **kwargs):
        raise push.PushError("cannot reach the Hugging Face Hub")

    monkeypatch.setattr(push, "push_folder", offline)
    code = recipe.main(["--quick", "--out", str(out), *good, "--push-to-hub", "me/quick"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == runtime.EXIT_USER_ERROR and len(err) == 1 and "cannot reach the Hugging Face Hub" in err[0]
    assert f"python -m train.push {out / 'mlm'} --repo-id me/quick-mlm" in err[0]
    assert f"python -m train.push {out / 'sst2'} --repo-id me/quick-sst2 --base-model me/quick-mlm" in err[0]


def test_the_recipe_pushes_its_classifier_naming_its_encoder_as_base_model(tmp_path, monkeypatch, data_files):
    """sst2/ is fine-tuned from mlm/: its card's base_model is the repo mlm/ goes to (it named none)."""
    from train import push

    _, good = data_files
    out = tmp_path / "quick"
    monkeypatch.setattr(recipe, "run_steps", lambda steps, **kwargs: 0)
    pushed = {}
    monkeypatch.setattr(push, "push_folder", lambda folder, repo_id, **kwargs: pushed.setdefault(
        repo_id, kwargs["base_model"]))
    assert recipe.main(["--quick", "--out", str(out), *good, "--push-to-hub", "me/quick"]) == 0
    assert pushed == {"me/quick-mlm": None, "me/quick-sst2": "me/quick-mlm"}


# ----- 8. the recipes' packing cache goes under their --out (or --work), not ./cache/packed -----
def test_recipes_cache_packed_rows_under_their_out(tiny_mlm_dir, tmp_path, data_files, gpu_data):
    _, good = data_files
    parser = recipe.build_parser()
    out = tmp_path / "recipe"
    step = {s.name: s for s in recipe.plan(parser.parse_args(["--out", str(out), *good]))}["pretrain"]
    assert step.args.cache_dir == str(out / "cache") and f"--cache-dir {out / 'cache'}" in step.command
    step = {s.name: s for s in recipe.plan(parser.parse_args(["--out", str(out), *good,
                                                              "--cache-dir", ""]))}["pretrain"]
    assert step.args.cache_dir == ""
    gpu = parser.parse_args(["--gpu", "--data", str(gpu_data), "--out", str(out), "--tapt-minutes", "1"])
    pre, sentiment = recipe.plan_gpu(gpu)
    assert pre.args.cache_dir == str(out / "cache")
    tapt = {s.name: s for s in sentiment_recipe.plan(
        sentiment_recipe.build_parser().parse_args(shlex.split(sentiment.command)[3:]))[0]}["tapt"]
    assert tapt.args.cache_dir == str(out / "cache")
    alone = sentiment_recipe.build_parser().parse_args(["--init", str(tiny_mlm_dir), "--out", str(tmp_path / "s")])
    tapt = {s.name: s for s in sentiment_recipe.plan(alone)[0]}["tapt"]
    assert tapt.args.cache_dir == str(tmp_path / "s" / "cache") and "--cache-dir" in tapt.command


def test_gpu_session_caches_under_work_and_passes_it_to_the_recipe(tmp_path):
    upload = empty_bundle(tmp_path / "upload")
    argv = ["--out", str(tmp_path / "out"), "--upload", str(upload), "--work", str(tmp_path / "work"), "--tests", "",
            "--", "--init", "assets/mini-roberta-mlm"]
    words = gpu_session.recipe_argv(gpu_session.parse_args(argv), tmp_path / "work" / "run")
    assert words[words.index("--cache-dir") + 1] == str(tmp_path / "work" / "cache")
    words = gpu_session.recipe_argv(gpu_session.parse_args(argv[:6] + ["--cache-dir", ""] + argv[6:]), tmp_path)
    assert words[words.index("--cache-dir") + 1] == ""


# ----- 9. train.recipe --quick's results: seconds, perplexity and accuracies as the project writes them -----
def test_quick_results_round_seconds_and_perplexity_and_show_percentages(tmp_path):
    out = tmp_path / "quick"
    figures = {"mlm": {"train_time_s": 13.1, "eval_loss": 6.6065, "eval_accuracy": 0.0275, "eval_perplexity": 739.9069,
                       "train_tokens": 20480, "train_steps": 20},
               "sst2": {"dev_accuracy": 0.5092}, "sst2-random": {"dev_accuracy": 0.5}}
    for name, metrics in figures.items():
        (out / name).mkdir(parents=True)
        (out / name / "metrics.json").write_text(json.dumps(metrics))
    recipe.summarize(out)
    text = (out / "results.md").read_text()
    assert ("Pretraining: 20,480 tokens, 20 steps, 13 s; held-out MLM loss 6.6065, accuracy 2.8%, perplexity 739.9."
            in text), text
    assert "| 50.9% |" in text and "| 50.0% |" in text


def test_results_name_a_dev_set_that_is_not_sst2s_by_its_file(tmp_path):
    """`--finetune-args "--dev mine/dev.csv"` gave results.md a column "SST-2 dev accuracy" of figures on the user's
    own file: the heading names the dev file as the app does; SST-2's dev set (or a run that does not say) keeps
    the SST-2 heading."""
    out = tmp_path / "own"
    for dev_data, heading in (("/home/ana/mine/dev.csv", "| classifier | dev accuracy on `mine/dev.csv` |"),
                              ("../shared/data/imdb/train.tsv", "| classifier | dev accuracy on IMDB reviews "
                                                                "(`imdb/train.tsv`) |"),
                              ("../shared/data/sst2/dev.tsv", "| classifier | SST-2 dev accuracy |"),
                              (None, "| classifier | SST-2 dev accuracy |")):
        for name in ("sst2", "sst2-random"):
            (out / name).mkdir(parents=True, exist_ok=True)
            metrics = {"dev_accuracy": 0.6, **({"dev_data": dev_data} if dev_data else {})}
            (out / name / "metrics.json").write_text(json.dumps(metrics))
        recipe.summarize(out)
        text = (out / "results.md").read_text()
        assert heading in text and ("SST-2" in text) == (heading.endswith("SST-2 dev accuracy |")), text


# ----- 10. "made by another command": NOT_RECIPE options left out, script steps shown option by option -----
def test_made_otherwise_ignores_where_the_step_was_written_and_diffs_script_steps(tmp_path, data_files):
    _, good = data_files
    parser = recipe.build_parser()
    old = {s.name: s for s in recipe.plan(parser.parse_args(["--quick", "--out", str(tmp_path / "old"), *good]))}
    moved = {s.name: s for s in recipe.plan(parser.parse_args(["--quick", "--out", str(tmp_path / "new"), *good]))}
    reseeded = {s.name: s for s in recipe.plan(parser.parse_args(["--quick", "--out", str(tmp_path / "new"), *good,
                                                                 "--seed", "1"]))}
    pretrain_step = moved["pretrain"]
    pretrain_step.folder.mkdir(parents=True)
    (pretrain_step.folder / "metrics.json").write_text(json.dumps({"command": old["pretrain"].command}))
    assert experiment.made_otherwise(pretrain_step) == ""  # only --out differs
    assert experiment.made_otherwise(reseeded["pretrain"]) == "--seed 0 -> 1"
    tok = moved["tokenizer"]
    tok.folder.mkdir(parents=True)
    experiment._command_file(tok).write_text(old["tokenizer"].command + "\n")
    assert experiment.made_otherwise(tok) == ""
    assert experiment.made_otherwise(reseeded["tokenizer"]) == "--seed 0 -> 1"


def test_the_quick_recipes_chance_level_reads_the_dev_file_as_its_fine_tuning_does(tmp_path, data_files):
    """majority_share read --dev with the default columns and labels: one's own review,sentiment file of neg/pos
    labels gave no chance level, and the note beside the results was silently left out."""
    _, good = data_files
    mine = own_data(tmp_path)
    three = tmp_path / "three_dev.tsv"  # 3 of 4 rows neutral: the commonest label's share is 0.75
    three.write_text("text\tlabel\n" + "".join(f"row {i}\t{label}\n" for i, label in
                                                enumerate(["neutral", "neutral", "neutral", "positive"])))
    for dev, extra, share in ((mine["reviews_dev.csv"], "--text-column review --label-column sentiment "
                                                        "--labels neg,pos --checks ''", 0.5),
                              (three, "--labels negative,neutral,positive --checks ''", 0.75)):
        args = recipe.build_parser().parse_args(["--quick", "--out", str(tmp_path / "r"), *good, "--dev", str(dev),
                                                 "--finetune-args", extra])
        fine = next(step.args for step in recipe.plan(args) if step.name == "finetune")
        assert recipe.majority_share(fine) == share


def test_the_sentiment_recipe_checks_its_tapt_text_file_as_text(tmp_path):
    """train.tapt_corpus reads --sst2-train's texts alone, but the recipe's up-front check asked the file for a
    label column: a text-only file tapt_corpus takes was refused. A file without its text column still is."""
    texts, labelled = tmp_path / "texts.tsv", tmp_path / "reviews.tsv"
    texts.write_text("sentence\nA fine film.\nA dull one.\n", encoding="utf-8")
    labelled.write_text("review\tsentiment\nA fine film.\tpos\n", encoding="utf-8")
    parser = sentiment_recipe.build_parser()
    args = parser.parse_args(["--init", "assets/mini-roberta-mlm", "--out", str(tmp_path / "s"),
                              "--tapt-sst2", str(texts)])
    inputs = [i for i in sentiment_recipe.data_inputs(args, sentiment_recipe.plan(args)[0]) if i[0] == "--tapt-sst2"]
    assert [kind for _, _, _, kind, _ in inputs] == ["texts"]
    sentiment_recipe.check_input(*inputs[0])  # no error: the texts are all it reads
    with pytest.raises(ValueError, match="--tapt-sst2 .*no text column"):
        sentiment_recipe.check_input("--tapt-sst2", str(labelled), False, "texts", {})
