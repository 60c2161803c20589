"""train.recipe, train.sentiment_recipe and train.gpu_session refuse bad input before any work: exit status 2, one
line naming the option or folder, and nothing written or started (no training here: the steps are stubbed out)."""
import os
import shutil

import pytest

from train import gpu_session, recipe, runtime, sentiment_recipe
from test_gpu_transfer import empty_bundle


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


def refused(main, argv, capsys, *words) -> str:
    """main(argv) exits 2 with one `error: ...` line holding `words`; returns that line."""
    try:
        code = main(argv)
    except SystemExit as exit_:  # argparse's own
        code = exit_.code
    captured = capsys.readouterr()
    assert code == runtime.EXIT_USER_ERROR, (argv, captured.err)
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), captured.err
    for word in words:
        assert word in lines[0], (word, lines[0])
    assert "==" not in captured.out  # no step started
    return lines[0]


# ----- 1. an --out that holds a model is refused; the recipe's own earlier run is continued -----
def test_recipes_refuse_an_out_that_holds_a_model(tiny_mlm_dir, tmp_path, capsys, no_steps):
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
    assert recipe.main(["--quick", "--out", str(earlier)]) == 1  # the stub's code: its steps ran
    assert no_steps == [["tokenizer", "pretrain", "finetune", "finetune-random"]]
    sentiment = tmp_path / "sentiment"
    (sentiment / "sst2-s0").mkdir(parents=True)
    (sentiment / "sst2-s0" / "metrics.json").write_text("{}")
    (sentiment / "summary.json").write_text("{}")
    argv = ["--init", str(tiny_mlm_dir), "--out", str(sentiment), "--tapt-minutes", "0", "--arms", "sst2", "--seeds",
            "0", "1"]
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
    (["--seeds", "-1"], ["--seeds and --imdb-stage-seed must be at least 0, got -1"]),
    (["--parallel", "0"], ["--parallel must be at least 1, got 0"]),
    (["--seeds", "0", "0"], ["--seeds names seed 0 more than once"]),
])
def test_gpu_recipe_checks_every_steps_options_before_pretraining(tmp_path, capsys, no_steps, options, words):
    out = tmp_path / "gpu"
    # was: pretraining ran first, and the sentiment step refused them minutes later (or never did)
    refused(recipe.main, ["--gpu", "--out", str(out), "--time-budget-min", "0.1", *options], capsys, *words)
    assert no_steps == [] and not out.exists()


def test_gpu_recipe_accepts_good_options_and_checks_its_init(tiny_mlm_dir, tiny_clf_dir, tmp_path, capsys, no_steps):
    out = tmp_path / "gpu"
    assert recipe.main(["--gpu", "--out", str(out), "--time-budget-min", "0.1", "--seeds", "0", "1", "--parallel",
                        "2", "--tapt-minutes", "1", "--finetune-args", "--layer-lr-decay 0.8"]) == 1
    assert no_steps == [["pretrain", "sentiment"]]
    refused(recipe.main, ["--gpu", "--out", str(tmp_path / "g2"), "--time-budget-min", "0", "--init",
                          str(tiny_clf_dir)], capsys, f"--init {tiny_clf_dir} is a classifier")
    refused(recipe.main, ["--gpu", "--out", str(tmp_path / "g2"), "--init", str(tmp_path / "nope")], capsys,
            f"--init {tmp_path / 'nope'}", "no such folder")
    assert no_steps == [["pretrain", "sentiment"]] and not (tmp_path / "g2").exists()


# ----- 4. train.sentiment_recipe: a seed given twice -----
def test_sentiment_recipe_refuses_a_seed_given_twice(tiny_mlm_dir, tmp_path, capsys, no_steps):
    out = tmp_path / "sentiment"
    for extra in ([], ["--dry-run"], ["--parallel", "2"]):  # was: the same run averaged and summarized twice
        refused(sentiment_recipe.main, ["--init", str(tiny_mlm_dir), "--out", str(out), "--tapt-minutes", "0",
                                        "--seeds", "0", "1", "0", *extra], capsys,
                "--seeds names seed 0 more than once", "each seed is one run")
    refused(sentiment_recipe.main, ["--init", str(tiny_mlm_dir), "--out", str(out), "--seeds", "-2"], capsys,
            "must be at least 0, got -2")
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
