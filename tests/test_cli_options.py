"""Options of the command-line entry points that change what a run does, each checked on tiny models and data:
scripts.load_check (end to end, and its worst-case p95 rule), train.finetune --new-head, train.average
--no-calibration / --allow-different-init, train.ablation --no-baseline (planned runs), train.calibrate
--calibration-seed, train.average --imdb-seed / --mlm-seed, train.evaluate --mlm-max-chars,
train.sentiment_recipe --no-average (planned runs) and train.finetune --imdb-seed / --keep-imdb-sample. (Those
of train.pretrain and the training loop: test_train_loop.py.)"""
import json
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

import roberta
from train import ablation, average, calibrate, data, evaluate, finetune, imdb_sample, runtime, tables
from helpers import finetune_argv

ENDPOINTS = ("/fill_mask", "/classify", "/attention", "/masking")  # the load check's mix, written out here


# ----------------------------------------------------------------------------------------------------------
# scripts.load_check
# ----------------------------------------------------------------------------------------------------------
@pytest.mark.slow  # starts app.py in a process (cold start of several seconds)
def test_load_check_on_the_tiny_models_answers_every_endpoint(tmp_path, capsys):
    """--tiny: app.py started with the tests' tiny models; one client x 4 requests covers the four endpoints
    (request r of client c goes to endpoint (c + r) mod 4). No latency is asserted, only answers."""
    from scripts import load_check

    figures = tmp_path / "load.json"
    assert load_check.main(["--tiny", "--clients", "1", "--requests", "4", "--json", str(figures)]) == 0
    result = json.loads(figures.read_text())
    assert result["errors"] == []
    assert set(result["latencies"]) == set(ENDPOINTS)
    assert all(len(result["latencies"][e]) == 1 and result["latencies"][e][0] > 0 for e in ENDPOINTS)
    out = capsys.readouterr().out
    assert "Cold start: HTTP answers after" in out and "died" not in out
    for endpoint in ENDPOINTS:  # the table: one request, no error, per endpoint
        assert f"| {endpoint} | 1 | 0 |" in out
    assert "| **all** | 4 | 0 |" in out


def fake_load(monkeypatch, quiet: dict, loud: dict) -> list:
    """load_check.main against a pretend app: run_load gives `quiet` then `loud` latencies (no errors), no
    hostile client sends anything. The p95 rule sits inline in main(), so it is driven through main()."""
    from scripts import app_process, load_check

    class Answer:
        def close(self):
            pass

    calls = []
    figures = iter([quiet, loud])

    def run_load(url, clients, requests):
        calls.append((url, clients, requests))
        return next(figures), [], 1.0

    monkeypatch.setattr(app_process.urllib.request, "urlopen", lambda *a, **k: Answer())
    monkeypatch.setattr(load_check, "run_load", run_load)
    monkeypatch.setattr(load_check, "hostile_clients", lambda url, n, stop: ([], []))
    return calls


def worst_case_exit(monkeypatch, quiet, loud) -> int:
    from scripts import load_check

    calls = fake_load(monkeypatch, quiet, loud)
    code = load_check.main(["--url", "http://127.0.0.1:1/", "--worst-case", "2", "--clients", "3", "--requests", "5"])
    assert calls == [("http://127.0.0.1:1/", 3, 5)] * 2  # the quiet load, then the same load beside the hostile one
    return code


@pytest.mark.parametrize("loud, code, ratio", [
    ({"/classify": [2.0] * 100}, 0, "2.00x"),  # exactly twice the quiet p95: within the target ("at most 2x")
    ({"/classify": [2.02] * 100}, 1, "2.02x"),  # just above twice
    # p95 of 100 sorted values ("inclusive" quantiles): 94.05 % of the way, between the 95th and 96th values.
    # 94 fast + 6 slow: the 95th value is slow -> p95 10 s -> 10x -> fails
    ({"/classify": [1.0] * 94, "/masking": [10.0] * 6}, 1, "10.00x"),
    # 96 fast + 4 very slow: p95 1 s (1x) although the max is 50 s and the mean 2.96 s (> 2x): passes
    ({"/classify": [1.0] * 96, "/masking": [50.0] * 4}, 0, "1.00x"),
])
def test_load_check_fails_when_the_worst_case_p95_is_above_twice_the_quiet_one(monkeypatch, capsys, loud, code,
                                                                               ratio):
    quiet = {"/fill_mask": [1.0] * 25, "/classify": [1.0] * 25, "/attention": [1.0] * 25, "/masking": [1.0] * 25}
    assert worst_case_exit(monkeypatch, quiet, loud) == code  # quiet p95: 1 s
    assert f"s without them ({ratio}; target at most 2x)." in capsys.readouterr().out


def test_load_check_json_keeps_each_load_apart(monkeypatch, tmp_path):
    """--json with --worst-case: the quiet load's figures, and the second load's under their own key with the
    p95 ratio the exit code follows."""
    from scripts import load_check

    quiet, loud = {"/classify": [1.0] * 20}, {"/classify": [3.0] * 20}
    fake_load(monkeypatch, quiet, loud)
    out = tmp_path / "load.json"
    assert load_check.main(["--url", "http://127.0.0.1:1/", "--worst-case", "2", "--clients", "1", "--requests", "20",
                            "--json", str(out)]) == 1  # 3x: above the target
    figures = json.loads(out.read_text())
    assert figures["latencies"] == quiet and figures["errors"] == []
    assert figures["beside_worst_case"] == {"latencies": loud, "errors": [], "wall": 1.0, "p95_ratio": 3.0}


def test_load_check_p95_rule_pools_the_endpoints(monkeypatch, capsys):
    """The quiet p95 is over every endpoint's latencies together: slow /attention answers in both loads keep
    the ratio under 2 even though /classify alone got 3x slower."""
    quiet = {"/classify": [1.0] * 50, "/attention": [4.0] * 50}  # pooled p95: 4 s
    loud = {"/classify": [3.0] * 50, "/attention": [4.0] * 50}  # pooled p95: 4 s -> 1x
    assert worst_case_exit(monkeypatch, quiet, loud) == 0
    assert "(1.00x; target at most 2x)" in capsys.readouterr().out


def test_load_check_without_worst_case_has_no_p95_rule(monkeypatch, capsys):
    from scripts import load_check

    calls = fake_load(monkeypatch, {"/classify": [100.0]}, {})
    assert load_check.main(["--url", "http://127.0.0.1:1/", "--clients", "1", "--requests", "1"]) == 0
    assert len(calls) == 1 and "target at most 2x" not in capsys.readouterr().out


# ----------------------------------------------------------------------------------------------------------
# train.finetune --new-head
# ----------------------------------------------------------------------------------------------------------
def _head(state: dict) -> dict:
    return {k: v for k, v in state.items() if k.startswith("classifier.")}


def _encoder(state: dict) -> dict:
    return {k: v for k, v in state.items() if k.startswith("roberta.")}


@pytest.fixture(scope="module")
def trained_looking_clf(tmp_path_factory, tiny_clf_dir):
    """The tiny classifier with a head no initialisation gives (constant weights, non-zero biases), and an
    encoder moved away from its seed-0 initialisation: a head that is kept and one that is replaced cannot be
    confused, nor an encoder loaded from --init with a freshly initialised one."""
    folder = shutil.copytree(tiny_clf_dir, tmp_path_factory.mktemp("clf-init") / "clf")
    model = roberta.RobertaForSequenceClassification.from_pretrained(folder)
    generator = torch.Generator().manual_seed(123)
    with torch.no_grad():
        for param in model.roberta.parameters():
            param.add_(0.01 * torch.randn(param.shape, generator=generator))
        model.classifier.dense.weight.fill_(0.3)
        model.classifier.dense.bias.fill_(0.5)
        model.classifier.out_proj.weight.fill_(-0.2)
        model.classifier.out_proj.bias.copy_(torch.tensor([1.0, -1.0]))
    model.save_pretrained(folder)
    return folder


def tiny_finetune(train_files, init, out, *extra):
    """One optimizer step at lr 1e-30: every weight of magnitude above ~1e-20 keeps its exact float32 value
    (AdamW moves a weight by about lr), so the saved weights are the starting weights (there is no --lr 0 or
    --max-steps 0: both are refused)."""
    argv = finetune_argv(train_files, out, "--init", str(init), "--max-steps", "1", "--lr", "1e-30",
                         "--eval-every", "0", "--calibration-n", "0", "--checks", "", "--imdb", "", *extra)
    assert finetune.main(argv) == 0
    return load_file(out / "model.safetensors"), json.loads((out / "metrics.json").read_text())


def assert_same(a: dict, b: dict):
    assert a.keys() == b.keys()
    for key in a:
        assert torch.allclose(a[key].float(), b[key].float(), rtol=0, atol=1e-20), key


@pytest.mark.slow  # two fine-tuning runs
def test_finetune_new_head_replaces_the_head_and_keeps_the_encoder(train_files, tmp_path, trained_looking_clf,
                                                                   tiny_clf_dir):
    init = load_file(trained_looking_clf / "model.safetensors")
    config = roberta.load_config(trained_looking_clf)
    fresh_seed0 = load_file(tiny_clf_dir / "model.safetensors")  # a seed-0 fresh model of this config
    # the encoder check below means something: every encoder tensor differs from a fresh one (but the all-zero
    # token-type table transformers' file layout always holds)
    assert [k for k in _encoder(init) if torch.equal(init[k], fresh_seed0[k])] == [
        "roberta.embeddings.token_type_embeddings.weight"]

    new, metrics = tiny_finetune(train_files, trained_looking_clf, tmp_path / "new", "--new-head")
    assert metrics["init_gave"] == "encoder" and metrics["train_steps"] == 1
    assert_same(_encoder(new), _encoder(init))  # the encoder starts from the init's weights
    head = _head(new)
    assert head.keys() == _head(init).keys()
    for key in head:  # fresh: nothing of the init's head is left
        assert not torch.isclose(head[key], init[key]).any(), key
    # as the init code sets a Linear: zero biases, weights N(0, initializer_range)
    for name in ("dense", "out_proj"):  # (zero at the start; one step at lr 1e-30 moves them by ~1e-30 at most)
        assert head[f"classifier.{name}.bias"].abs().max() < 1e-20, name
    dense = head["classifier.dense.weight"]  # H x H draws
    assert dense.shape == (config.hidden_size, config.hidden_size)
    assert dense.std().item() == pytest.approx(config.initializer_range, rel=0.1)
    assert abs(dense.mean().item()) < 0.1 * config.initializer_range
    # the tiny classifier was itself a fresh seed-0 model of this config: its head is what a seed-0 fresh head is
    assert_same(head, _head(fresh_seed0))

    kept, metrics = tiny_finetune(train_files, trained_looking_clf, tmp_path / "kept")  # without: the head is kept
    assert metrics["init_gave"] == "encoder and classifier head"
    assert_same(kept, init)


# ----------------------------------------------------------------------------------------------------------
# train.average --no-calibration, --allow-different-init
# ----------------------------------------------------------------------------------------------------------
def member(folder: Path, tokenizer, seed: int, init: str, temperature: float) -> Path:
    """A classifier folder as train.finetune leaves it: its own weights (seed), a fitted temperature, and the
    metrics.json fields train.average reads."""
    config = roberta.RobertaConfig.from_preset("tiny", tokenizer=tokenizer, id2label={0: "negative", 1: "positive"},
                                               calibration_temperature=temperature)
    torch.manual_seed(seed)
    roberta.RobertaForSequenceClassification(config).save_pretrained(folder)
    tokenizer.save(str(folder / "tokenizer.json"))
    (folder / "metrics.json").write_text(json.dumps({"init": init, "init_root": init, "dev_accuracy": 0.5,
                                                     "command": f"python -m train.finetune --seed {seed}"}))
    return folder


@pytest.fixture
def two_inits(tmp_path, tokenizer):
    return [member(tmp_path / "a", tokenizer, 1, "runs/mlm-a", 2.5),
            member(tmp_path / "b", tokenizer, 2, "runs/mlm-b", 0.7)]


def average_argv(members, out, *extra):
    return [*map(str, members), "--out", str(out), "--imdb", "", "--checks", "", *extra]


def test_average_refuses_members_of_different_inits_unless_allowed(two_inits, train_files, tmp_path, capsys):
    out = tmp_path / "avg"
    argv = average_argv(two_inits, out, "--dev", str(train_files / "dev.tsv"), "--no-calibration")
    assert average.main(argv) == runtime.EXIT_USER_ERROR
    err = capsys.readouterr().err
    assert err.startswith("error: the members start from different weights (['runs/mlm-a', 'runs/mlm-b'])")
    assert "--allow-different-init" in err and not out.exists()

    assert average.main([*argv, "--allow-different-init"]) == 0
    a, b = (load_file(m / "model.safetensors") for m in two_inits)
    averaged = load_file(out / "model.safetensors")
    assert averaged.keys() == a.keys()
    for key in a:  # the element-wise mean of the members' stored tensors
        assert torch.allclose(averaged[key], (a[key] + b[key]) / 2, rtol=0, atol=1e-7), key
    assert not torch.equal(a["classifier.out_proj.weight"], b["classifier.out_proj.weight"])  # a real average
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["averaged"] == 2 and metrics["init"] == "several (see members)"
    assert [m["seed"] for m in metrics["members"]] == [1, 2]
    assert metrics["dev_examples"] == 60
    # --imdb '': no IMDB sample recorded (no size, seed or removed reviews of a check that never ran)
    assert [metrics.get(key) for key in ("imdb_examples", "imdb_seed", "imdb_sample_removed_from_training")] == \
        [None] * 3


@pytest.mark.parametrize("given, recorded",
                         [([], 0.7), (["--unsure-below", "0"], 0.0), (["--unsure-below", "0.9"], 0.9)])
def test_average_unsure_below_zero_is_a_threshold(two_inits, train_files, tmp_path, given, recorded):
    """--unsure-below 0 (every label counts, however unsure) is kept, not read as "not given" (default 0.7)."""
    from train.evaluate import DEFAULT_CHECKS
    out = tmp_path / "avg"
    assert average.main([*average_argv(two_inits, out, "--dev", str(train_files / "dev.tsv"), "--no-calibration",
                                       "--allow-different-init"), "--checks", str(DEFAULT_CHECKS), *given]) == 0
    assert json.loads((out / "metrics.json").read_text())["checks"]["unsure_below"] == recorded


def test_average_no_calibration_keeps_temperature_one(two_inits, train_files, tmp_path):
    """The members' temperatures (2.5, 0.7) belong to their own weights: --no-calibration leaves T = 1."""
    assert [roberta.load_config(m).calibration_temperature for m in two_inits] == [2.5, 0.7]
    out = tmp_path / "avg"
    assert average.main(average_argv(two_inits, out, "--dev", str(train_files / "dev.tsv"), "--no-calibration",
                                     "--allow-different-init")) == 0
    assert json.loads((out / "config.json").read_text()).get("calibration_temperature", 1.0) == 1.0
    assert roberta.load_config(out).calibration_temperature == 1.0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["temperature"] == 1.0 and "calibration" not in metrics
    assert metrics.get("dev_ece_uncalibrated") is None
    model = roberta.RobertaForSequenceClassification.from_pretrained(out)  # T = 1: the ECE of the raw softmax
    texts, labels, _ = tables.read_labeled(str(train_files / "dev.tsv"), label_names=model.config.id2label)
    dev = evaluate.evaluate_classifier(model, roberta.load_tokenizer(out), texts, labels)
    assert 0 <= metrics["dev_ece"] <= 1 and metrics["dev_ece"] == pytest.approx(dev["ece"])
    assert not (out / calibrate.RELIABILITY_NAME).exists()  # no calibration: no reliability diagram
    assert [m["temperature"] for m in metrics["members"]] == [None, None]  # their metrics.json give none
    # without --no-calibration the members (no calibration slice recorded) are refused
    assert average.main(average_argv(two_inits, tmp_path / "avg2", "--allow-different-init")) == 2
    assert not (tmp_path / "avg2").exists()


def test_an_average_stopped_half_way_is_written_again_by_its_rerun(two_inits, train_files, tmp_path, monkeypatch):
    """Its folder held a model and no metrics.json, and the same command then refused it as "already holds a
    model" for ever (a recipe's average step failed on every re-run). A finished average is still kept."""
    out = tmp_path / "avg"
    argv = average_argv(two_inits, out, "--dev", str(train_files / "dev.tsv"), "--no-calibration",
                        "--allow-different-init")
    save = average.save_average

    def stopped(*args):
        save(*args)
        raise KeyboardInterrupt
    monkeypatch.setattr(average, "save_average", stopped)
    with pytest.raises(KeyboardInterrupt):
        average.main(argv)
    assert (out / "model.safetensors").is_file() and not (out / "metrics.json").exists()
    monkeypatch.undo()
    assert average.main(argv) == 0
    assert json.loads((out / "metrics.json").read_text())["averaged"] == 2
    assert not (out / average.UNFINISHED).exists()
    assert average.main(argv) == runtime.EXIT_USER_ERROR  # finished: never overwritten


# ----------------------------------------------------------------------------------------------------------
# train.ablation --no-baseline
# ----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seeds, arms", [(["0", "1"], ["dynamic", "static-dupe1"]),
                                         (["3"], ["dynamic", "static-dupe1", "static-dupe10"]),
                                         (["0", "1", "2"], ["static-dupe10"])])
def test_ablation_no_baseline_drops_one_finetuning_per_seed(tmp_path, capsys, seeds, arms):
    out = tmp_path / "abl"
    base = ["--quick", "--dry-run", "--out", str(out), "--seeds", *seeds, "--arms", *arms]
    planned = {}
    for extra in ([], ["--no-baseline"]):
        assert ablation.main([*base, *extra]) == 0
        lines = capsys.readouterr().out.splitlines()
        commands = [line for line in lines if line.startswith("python -m ")]
        pretrain_runs = [c for c in commands if c.startswith("python -m train.pretrain ")]
        finetunings = [c for c in commands if c.startswith("python -m train.finetune ")]
        baselines = [c for c in finetunings if "--init random" in c]
        assert lines[0].startswith(f"# {len(pretrain_runs)} pretraining runs, {len(finetunings)} fine-tunings;")
        planned[bool(extra)] = (len(pretrain_runs), len(finetunings), len(baselines))
    runs = len(seeds) * len(arms)
    assert planned[False] == (runs, runs + len(seeds), len(seeds))  # one random-encoder fine-tuning per seed
    assert planned[True] == (runs, runs, 0)
    assert not out.exists()  # a dry run writes nothing


# ----------------------------------------------------------------------------------------------------------
# train.calibrate --calibration-seed
# ----------------------------------------------------------------------------------------------------------
def test_calibrate_seed_chooses_the_held_out_slice(tiny_clf_dir, train_files, tmp_path, monkeypatch):
    """The slice fitted on: the texts train.calibrate passes to the fit (spied), and what it records."""
    seen = []
    real = calibrate.calibrate

    def spy(model, tokenizer, calibration, *args, **kwargs):
        seen.append(list(calibration[0]))
        return real(model, tokenizer, calibration, *args, **kwargs)

    monkeypatch.setattr(calibrate, "calibrate", spy)
    data = train_files / "train.tsv"
    rows = [line.split("\t")[0] for line in data.read_text().splitlines()[1:]]

    def run(seed: int, name: str):
        folder = shutil.copytree(tiny_clf_dir, tmp_path / name)
        assert calibrate.main([str(folder), "--calibration-data", str(data), "--calibration-n", "20",
                               "--calibration-split", "random", "--calibration-seed", str(seed)]) == 0
        return seen[-1], json.loads((folder / "metrics.json").read_text())["calibration"], folder

    slice0, recorded0, folder0 = run(0, "s0")
    slice1, recorded1, _ = run(1, "s1")
    again0, recorded0b, _ = run(0, "s0-again")
    for texts in (slice0, slice1):
        assert len(texts) == 20 and len(set(texts)) == 20 and set(texts) <= set(rows)
    assert slice0 == again0 and slice0 != slice1 and set(slice0) != set(slice1)
    assert recorded0["slice"] == {"data": str(data), "n": 20, "seed": 0, "split": "random", "text_column": None,
                                 "label_column": None,  # the columns it was read in, as fine-tuning records them
                                 **tables.rows_record(*tables.read_labeled(str(data))[:2])}  # a refit checks them
    assert recorded1["slice"]["seed"] == 1 and recorded1["source"].endswith("seed 1")
    assert recorded0["calibration"]["n"] == recorded1["calibration"]["n"] == 20
    # the same seed, the same slice: the same fit, to the bit
    assert recorded0["temperature"] == recorded0b["temperature"]
    assert recorded0["calibration"] == recorded0b["calibration"]
    stored = json.loads((folder0 / "config.json").read_text())["calibration_temperature"]
    assert stored == recorded0["temperature"]
    # the recorded slice is enough to find the texts again (train.average and a rerun rely on it)
    assert calibrate.held_out_slice(recorded1["slice"])[0] == slice1


# ----------------------------------------------------------------------------------------------------------
# train.average --imdb-seed, --mlm-seed
# ----------------------------------------------------------------------------------------------------------
def test_average_imdb_seed_chooses_the_imdb_sample(two_inits, train_files, tmp_path, monkeypatch):
    """The IMDB reviews the average is scored on: the members' imdb_seed, or --imdb-seed (the texts passed to
    the scoring are spied)."""
    from train import evaluate

    scored, evaluate_reviews = [], evaluate.evaluate_reviews
    monkeypatch.setattr(evaluate, "evaluate_reviews",
                        lambda model, tokenizer, texts, *a: (scored.append(texts)
                                                             or evaluate_reviews(model, tokenizer, texts, *a)))
    for member_folder in two_inits:  # as their fine-tuning recorded it
        metrics = json.loads((member_folder / "metrics.json").read_text())
        (member_folder / "metrics.json").write_text(json.dumps({**metrics, "imdb_seed": 5, "imdb_examples": 12}))
    imdb = str(train_files / "imdb.tsv")
    argv = lambda out, *extra: [*average_argv(two_inits, tmp_path / out, "--no-calibration", "--allow-different-init"),
                                "--imdb", imdb, *extra]
    assert average.main(argv("members-seed")) == 0
    assert average.main(argv("seed-3", "--imdb-seed", "3")) == 0
    assert scored == [imdb_sample.imdb_sample(imdb, 12, seed=5)[0], imdb_sample.imdb_sample(imdb, 12, seed=3)[0]]
    assert set(scored[0]) != set(scored[1])
    recorded = [json.loads((tmp_path / name / "metrics.json").read_text()) for name in ("members-seed", "seed-3")]
    assert [(m["imdb_seed"], m["imdb_examples"]) for m in recorded] == [(5, 12), (3, 12)]


def mlm_member(folder: Path, tiny_mlm_dir, train_files, seed: int, eval_seed: int) -> Path:
    """A pretraining run's folder as train.average reads it: the tiny MLM's weights moved by a seeded nudge,
    and a metrics.json naming its held-out text and mask seed."""
    shutil.copytree(tiny_mlm_dir, folder)
    model = roberta.RobertaForMaskedLM.from_pretrained(folder)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for param in model.parameters():
            param.add_(0.05 * torch.randn(param.shape, generator=generator))
    model.save_pretrained(folder)
    (folder / "metrics.json").write_text(json.dumps({"eval_data": str(train_files / "valid.txt"),
                                                     "eval_seed": eval_seed, "eval_accuracy": 0.1}))
    return folder


def test_average_mlm_seed_chooses_the_held_out_masks(tiny_mlm_dir, train_files, tmp_path):
    """A masked-LM average is scored under --mlm-seeds masks from the last member's eval_seed, or from
    --mlm-seed: the figures train.evaluate gives the averaged folder with --seed at that seed."""
    from train import evaluate

    members = [str(mlm_member(tmp_path / f"phase-{i}", tiny_mlm_dir, train_files, i, eval_seed=i + 4)) for i in (1, 2)]
    for out, extra, seed in (("default", [], 6), ("seed-2", ["--mlm-seed", "2"], 2)):
        assert average.main([*members, "--out", str(tmp_path / out), "--mlm-seeds", "2", *extra]) == 0
        metrics = json.loads((tmp_path / out / "metrics.json").read_text())
        assert metrics["eval_seed"] == metrics["mlm"]["seed"] == seed
        scored = tmp_path / f"{out}.json"
        assert evaluate.main(["--model", str(tmp_path / out), "--mlm-text", str(train_files / "valid.txt"),
                              "--seed", str(seed), "--mlm-seeds", "2", "--out", str(scored)]) == 0
        expected = json.loads(scored.read_text())["mlm"]
        assert metrics["mlm"]["accuracy_per_mask"] == pytest.approx(expected["accuracy_per_mask"])
        assert metrics["eval_loss"] == pytest.approx(expected["loss"], rel=1e-5)
    losses = [json.loads((tmp_path / out / "metrics.json").read_text())["eval_loss"] for out in ("default", "seed-2")]
    assert losses[0] != pytest.approx(losses[1], rel=1e-6)  # other masks, other figures for the same weights


def test_average_precision_scores_the_masked_lm_as_train_evaluate_does(tiny_mlm_dir, train_files, tmp_path):
    """train.average --precision: the masked-LM average is scored under that autocast (default fp32), its figures
    are train.evaluate's at the same --precision on the averaged folder, and metrics.json records it."""
    from train import evaluate

    members = [str(mlm_member(tmp_path / f"phase-{i}", tiny_mlm_dir, train_files, i, eval_seed=0)) for i in (1, 2)]
    for precision, extra in (("fp32", []), ("bf16", ["--precision", "bf16"])):
        out = tmp_path / precision
        assert average.main([*members, "--out", str(out), "--mlm-seeds", "1", *extra]) == 0
        metrics = json.loads((out / "metrics.json").read_text())
        assert metrics["mlm"]["precision"] == precision
        scored = tmp_path / f"{precision}.json"
        assert evaluate.main(["--model", str(out), "--mlm-text", str(train_files / "valid.txt"), "--seed", "0",
                              "--precision", precision, "--out", str(scored)]) == 0
        assert metrics["eval_loss"] == pytest.approx(json.loads(scored.read_text())["mlm"]["loss"], rel=1e-6)
    losses = [json.loads((tmp_path / p / "metrics.json").read_text())["eval_loss"] for p in ("fp32", "bf16")]
    assert losses[0] != losses[1]  # bf16 matrix products: other last digits


# ----------------------------------------------------------------------------------------------------------
# train.evaluate and train.average --mlm-max-chars
# ----------------------------------------------------------------------------------------------------------
def test_evaluate_mlm_max_chars_scores_the_first_characters_only(tiny_mlm_dir, train_files, tmp_path):
    """--mlm-max-chars N: the figures of a file holding the text's first N characters (the last document cut)."""
    from train import data, evaluate

    valid = train_files / "valid.txt"
    documents = data.read_documents(str(valid))
    first = [documents[0], documents[1], documents[2][:25].rstrip()]  # (a cut before a space: the same text)
    n = sum(map(len, first))
    head = tmp_path / "head.txt"
    head.write_text("\n".join(first) + "\n")
    assert data.read_documents(str(head)) == first

    def scored(text, *extra):
        out = tmp_path / f"{len(list(tmp_path.glob('*.json')))}.json"
        assert evaluate.main(["--model", str(tiny_mlm_dir), "--mlm-text", str(text), "--out", str(out), *extra]) == 0
        return json.loads(out.read_text())["mlm"]

    cut, whole, expected = scored(valid, "--mlm-max-chars", str(n)), scored(valid), scored(head)
    assert cut["tokens"] == expected["tokens"] < whole["tokens"] / 5
    assert cut["sequences"] == expected["sequences"] and cut["loss"] == pytest.approx(expected["loss"])
    assert cut["max_chars"] == n and "max_chars" not in whole  # said, so that no one reads it as the whole text's

    # train.average takes it too (it had no --mlm-max-chars): its figures are those of train.evaluate's cut
    members = [str(mlm_member(tmp_path / f"phase-{i}", tiny_mlm_dir, train_files, i, eval_seed=0)) for i in (1, 2)]
    assert average.main([*members, "--out", str(tmp_path / "avg"), "--mlm-seeds", "1", "--mlm-max-chars", str(n)]) == 0
    averaged = json.loads((tmp_path / "avg" / "metrics.json").read_text())
    assert averaged["mlm"]["max_chars"] == n and averaged["mlm"]["tokens"] == expected["tokens"]
    assert f"(its first {n:,} characters)" in (tmp_path / "avg" / "README.md").read_text()
    # a later evaluation of the first characters only is not taken for the whole held-out text's figures
    from roberta.run_metrics import RunMetrics

    run = RunMetrics.from_dict({"eval_data": str(valid), "eval_accuracy": 0.25,
                                "mlm": {"source": str(valid), "masks": 5, "accuracy": 0.5, "max_chars": n}})
    assert run.held_out[1:] == (0.25, None, 1)
    run.mlm.pop("max_chars")
    assert run.held_out[1] == 0.5


# ----------------------------------------------------------------------------------------------------------
# train.sentiment_recipe --no-average
# ----------------------------------------------------------------------------------------------------------
def test_sentiment_recipe_no_average_plans_no_weight_average(capsys):
    """--no-average: the same fine-tuning runs, no train.average step, and a summary of the seeds alone."""
    plan = ["--init", "runs/mlm", "--out", "runs/x", "--dry-run", "--seeds", "0", "1", "--arms", "sst2,imdb-sst2",
            "--tapt-minutes", "0", "--imdb-stage-seed", "0"]  # one IMDB stage: both arms' seeds share a start
    from train import sentiment_recipe

    commands = {}
    for extra in ([], ["--no-average"]):
        assert sentiment_recipe.main([*plan, *extra]) == 0
        commands[bool(extra)] = capsys.readouterr().out.splitlines()
    averages = [c for c in commands[False] if c.startswith("python -m train.average ")]
    assert averages == ["python -m train.average runs/x/sst2-s0 runs/x/sst2-s1 --out runs/x/sst2-avg",
                        "python -m train.average runs/x/imdb-sst2-s0 runs/x/imdb-sst2-s1 --out runs/x/imdb-sst2-avg"]
    assert commands[True][:-1] == [c for c in commands[False][:-1] if c not in averages]  # the same runs
    summary = commands[True][-1]  # the summary: the seeds' runs alone
    assert summary.startswith("python -m train.summarize ") and "-avg" not in summary
    assert summary == commands[False][-1].replace(" runs/x/sst2-avg", "").replace(" runs/x/imdb-sst2-avg", "")


# ----------------------------------------------------------------------------------------------------------
# train.finetune --imdb-seed, --keep-imdb-sample
# ----------------------------------------------------------------------------------------------------------
def test_finetune_imdb_seed_and_keep_imdb_sample(train_files, tiny_mlm_dir, tmp_path):
    """The IMDB sample (--imdb-n reviews drawn with --imdb-seed) is removed from the training rows, unless
    --keep-imdb-sample. The training file here holds the SST-2 rows and exactly the seed-1 sample's reviews: the
    seed-0 sample (the default) shares only some of them."""

    imdb = str(train_files / "imdb.tsv")
    seed1 = imdb_sample.imdb_sample(imdb, 20, seed=1)
    train = tmp_path / "train.tsv"
    train.write_text((train_files / "train.tsv").read_text() + "".join(f"{t}\t{y}\n" for t, y in zip(*seed1)))
    rows = [line.split("\t")[0] for line in train.read_text().splitlines()[1:]]  # (the tiny corpus repeats a few)
    in_training = {seed: sum(row in set(imdb_sample.imdb_sample(imdb, 20, seed=seed)[0]) for row in rows)
                   for seed in (0, 1)}
    assert in_training[1] >= 20 > in_training[0]
    runs = {}
    for name, extra in (("removed", []), ("kept", ["--keep-imdb-sample"])):
        argv = finetune_argv(train_files, tmp_path / name, "--init", str(tiny_mlm_dir), "--train", str(train),
                             "--imdb-n", "20", "--imdb-seed", "1", "--max-steps", "1", "--eval-every", "0",
                             "--calibration-n", "0", "--checks", "", *extra)
        assert finetune.main(argv) == 0
        runs[name] = json.loads((tmp_path / name / "metrics.json").read_text())
    removed = in_training[1]
    assert runs["removed"]["imdb_seed"] == 1 and runs["removed"]["imdb_sample_removed_from_training"] == removed
    assert runs["kept"]["imdb_sample_removed_from_training"] == 0
    assert runs["kept"]["train_examples"] == runs["removed"]["train_examples"] + removed == len(rows) == 320
    assert runs["removed"]["imdb_examples"] == runs["kept"]["imdb_examples"] == 20


# ----------------------------------------------------------------------------------------------------------
# train.finetune --imdb with --labels: the IMDB reviews scored by label name
# ----------------------------------------------------------------------------------------------------------
def test_finetune_imdb_labels_are_matched_to_labels_by_name(train_files, tmp_path):
    """IMDB's 0 and 1 were compared with the model's ids whatever --labels said: with --labels positive,negative
    the IMDB figure was inverted. Its labels are now the model's ids of the names negative and positive (neg and
    pos too, in any case)."""
    imdb = str(train_files / "imdb.tsv")
    texts, file_labels = imdb_sample.imdb_sample(imdb, 20)
    names = [data.SENTIMENT_LABELS[label] for label in file_labels]  # IMDB's: 0 negative, 1 positive
    assert set(names) == {"negative", "positive"}
    for labels in ("negative,positive", "positive,negative", "neg,pos", "Pos,Neg"):
        args = finetune.parse_args(finetune_argv(train_files, tmp_path / "clf", "--init", "x", "--labels", labels,
                                                 "--calibration-n", "0"))
        id2label = args.id2label()
        read = finetune.read_data(args, id2label)
        assert read.imdb[0] == texts
        polarity = {"neg": "negative", "pos": "positive"}
        scored_as = [polarity.get(id2label[i].lower(), id2label[i].lower()) for i in read.imdb[1]]
        assert scored_as == names, labels
    for labels in ({0: "negative", 1: "neutral", 2: "positive"}, {0: "neg", 1: "negative"}, {0: "bad", 1: "good"}):
        note = imdb_sample.imdb_skip_note(labels)
        assert note.startswith("note: the IMDB check is skipped") and str(list(labels.values())) in note
        with pytest.raises(ValueError, match="not a negative and a positive label"):
            imdb_sample.imdb_sample_as(imdb, 20, 0, labels)
    assert imdb_sample.imdb_skip_note({0: "pos", 1: "neg"}) is None
    graded = tmp_path / "graded.tsv"  # a review file of other labels than IMDB's 0 and 1
    graded.write_text("text\tlabel\n" + "".join(f"{text}\t{i % 3}\n" for i, text in enumerate(texts)))
    with pytest.raises(ValueError, match="label 2 is not an IMDB label"):
        imdb_sample.imdb_sample_as(str(graded), 20, 0, {0: "negative", 1: "positive"})


def test_finetune_skips_the_imdb_check_for_labels_that_are_not_negative_and_positive(train_files, tiny_mlm_dir,
                                                                                      tmp_path_factory, capsys):
    """A 3-class run (negative, neutral, positive) reported "IMDB accuracy 0.514" with IMDB's 1 scored as neutral,
    and its card's model-index and datasets named stanfordnlp/imdb: the check is skipped with a note, as --imdb ''
    does (the reviews are not read, not held out of training, and not on the card)."""
    tmp_path = tmp_path_factory.mktemp("three-labels")  # (the test's own folder has "imdb" in its name: the card
    three = tmp_path / "three.tsv"  # would recognise every file in it as IMDB)
    sentences = [line.split("\t")[0] for line in (train_files / "train.tsv").read_text().splitlines()[1:]]
    names = ("negative", "neutral", "positive")
    three.write_text("sentence\tlabel\n" + "".join(f"{s}\t{names[i % 3]}\n" for i, s in enumerate(sentences)))
    imdb_copy = tmp_path / "imdb" / "train.tsv"  # a path the card would recognise as IMDB
    imdb_copy.parent.mkdir()
    shutil.copy(train_files / "imdb.tsv", imdb_copy)
    out = tmp_path / "clf3"
    argv = finetune_argv(train_files, out, "--init", str(tiny_mlm_dir), "--train", str(three), "--dev", str(three),
                         "--imdb", str(imdb_copy), "--labels", "negative,neutral,positive", "--checks", "",
                         "--max-steps", "1", "--eval-every", "0", "--calibration-n", "0")
    assert finetune.main(argv) == 0
    captured = capsys.readouterr()  # a note on stderr, as every other note
    assert ("note: the IMDB check is skipped: its reviews are labelled negative and positive, and the labels "
            "['negative', 'neutral', 'positive'] are not a negative and a positive label") in captured.err
    assert "IMDB accuracy" not in captured.out and "IMDB check" not in captured.out
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics.get("imdb_accuracy") is None and not metrics.get("imdb_data")
    skipped = ("imdb_examples", "imdb_seed", "imdb_sample_removed_from_training")  # not the zeros of a check not run
    assert [metrics.get(key) for key in skipped] == [None] * 3, metrics
    card = (out / "README.md").read_text()
    assert "stanfordnlp/imdb" not in card and "IMDB accuracy is on" not in card
    # nor a sentence on the sample's reviews removed from training, an empty `imdb` row or zero IMDB figures
    assert "imdb_sample_removed_from_training" not in card and "| imdb |" not in card, card
    assert "| imdb_examples |" not in card and "| train_data |" in card


# ----------------------------------------------------------------------------------------------------------
# train.finetune --dev-fraction, --dev-seed
# ----------------------------------------------------------------------------------------------------------
def test_finetune_dev_fraction_holds_a_slice_of_train_out_beside_the_calibration_slice(train_files, tmp_path):
    """A user with one labelled file and no dev file could not fine-tune (--dev cannot be skipped). --dev-fraction F
    holds F of --train's rows out as the dev set: drawn from the rows the calibration slice left (which stays the
    slice it is without --dev-fraction, so train.calibrate and train.average find it again), as --calibration-split
    draws, seeded by --dev-seed whatever --seed, never trained on, and drawn again alike from its record
    (`held_out_dev`, train.average's)."""
    train = str(train_files / "train.tsv")
    texts = tables.read_labeled(train)[0]

    def read(*extra):
        args = finetune.parse_args(finetune_argv(train_files, tmp_path / "clf", "--init", "x", "--imdb", "", *extra))
        return args, finetune.read_data(args, args.id2label())

    _, plain = read()
    args, held = read("--dev-fraction", "0.2")
    spec = held.dev_slice
    assert spec == {"data": train, "fraction": 0.2, "n": round(0.2 * len(texts)), "seed": 0, "split": "sentences",
                    "calibration_n": 40, "calibration_seed": 0, "text_column": None, "label_column": None,
                    "removed_train_rows": spec["removed_train_rows"],
                    **tables.rows_record(*tables.read_labeled(train)[:2])}  # what a redraw checks the file by
    dev, cal, trained = set(held.dev_texts), set(held.cal_texts), set(held.train_texts)
    assert len(held.dev_texts) == len(dev) == spec["n"] == 60 and plain.dev_slice is None
    assert held.cal_texts == plain.cal_texts  # the calibration slice is the one it was
    assert not dev & cal and not dev & trained
    # whole sentences: no training text is a word span of a dev text (SST-2 holds both)
    assert not [t for t in trained for d in dev if f" {t} " in f" {d} "]
    assert len(plain.train_texts) - len(held.train_texts) == 60 + spec["removed_train_rows"]
    assert finetune.held_out_dev(spec, args.id2label()) == (held.dev_texts, held.dev_labels)
    assert read("--dev-fraction", "0.2", "--seed", "3")[1].dev_texts == held.dev_texts  # every --seed's dev set
    assert set(read("--dev-fraction", "0.2", "--dev-seed", "1")[1].dev_texts) != dev
    _, rows = read("--dev-fraction", "0.2", "--calibration-split", "random")
    assert rows.dev_slice["split"] == "random" and len(rows.dev_texts) == 60
    assert not set(rows.dev_texts) & (set(rows.train_texts) | set(rows.cal_texts))


def test_finetune_dev_fraction_is_a_fraction_of_the_whole_sentences_where_sentences_are_drawn(train_files, tmp_path):
    """--dev-fraction F drew F x every row of --train as whole sentences, each taking its sub-phrases out of training
    with it: on SST-2 (a tenth of its rows whole sentences), 0.05 cut training from 55,841 rows to 22,924, and the
    help's own 0.1 was refused. In "sentences" mode F is a fraction of the whole sentences (the rows that are no other
    row's sub-phrase), so 0.1 holds out a tenth of them; a file of plain sentences gives F x its rows as before, and a
    recorded slice is drawn again at its recorded size."""
    file = tmp_path / "phrases.tsv"  # 100 sentences of 5 words, each with 4 of its phrases: 500 rows
    rows = []
    for i in range(100):
        words = [f"w{i}{letter}" for letter in "abcde"]
        rows += [" ".join(words), " ".join(words[:2]), " ".join(words[2:]), " ".join(words[1:3]), words[4]]
    file.write_text("sentence\tlabel\n" + "".join(f"{text}\t{n % 2}\n" for n, text in enumerate(rows)))
    sentences = set(rows[::5])

    def read(*extra):
        args = finetune.parse_args(["--init", "x", "--train", str(file), "--dev", "", "--imdb", "", "--out",
                                    str(tmp_path / "clf"), "--calibration-n", "10", *extra])
        return args, finetune.read_data(args, args.id2label())

    args, held = read("--dev-fraction", "0.1")
    assert held.dev_slice["n"] == len(held.dev_texts) == 10 and set(held.dev_texts) <= sentences  # was 50 of 100
    assert held.held_out["dev_removed_train_rows"] == 4 * 10  # their phrases
    assert len(held.train_texts) == 500 - 5 * 10 - 5 * 10  # 400 rows trained on (200 before)
    assert len(read("--dev-fraction", "0.3")[1].dev_texts) == 30  # refused before: 150 of the 90 sentences left
    assert finetune.held_out_dev(held.dev_slice, args.id2label()) == (held.dev_texts, held.dev_labels)
    recorded = {**held.dev_slice, "n": 50}  # a record of the code before: drawn again at its own size
    again = finetune.held_out_dev(recorded, args.id2label())[0]
    assert len(again) == 50 and set(again) <= sentences
    random_rows = read("--dev-fraction", "0.1", "--calibration-split", "random")[1]
    assert random_rows.dev_slice["n"] == len(random_rows.dev_texts) == 50  # F x the rows, as before


def test_finetune_computes_its_dev_slice_spec_once(train_files, tmp_path, monkeypatch):
    """The dev slice's spec was computed twice per run (to draw it, then to record it), and only the second copy was
    given the count of training rows it removed: one spec, computed once, is drawn and recorded."""
    made = []
    real = finetune.dev_slice_spec
    monkeypatch.setattr(finetune, "dev_slice_spec", lambda *args: made.append(real(*args)) or made[-1])
    args = finetune.parse_args(finetune_argv(train_files, tmp_path / "clf", "--init", "x", "--imdb", "", "--dev", "",
                                             "--dev-fraction", "0.2"))
    read = finetune.read_data(args, args.id2label())
    assert len(made) == 1 and made[0] is read.dev_slice and "removed_train_rows" in read.dev_slice


def test_finetune_warns_when_its_slices_hold_out_much_of_the_training_file(train_files, tmp_path, capsys):
    """--calibration-n's default, 1,000, fits SST-2's 67,349 rows; on a user's 2,400-row file it held out 42% of the
    rows for calibration without a word (only the count line showed it). A `warning:` line says how much of --train
    the slices hold out when it is more than a fifth, names --calibration-n and a size to pass; a slice that holds out
    less is not warned about."""
    rows = len(tables.read_labeled(str(train_files / "train.tsv"))[0])

    def warnings(*extra):
        args = finetune.parse_args(finetune_argv(train_files, tmp_path / "clf", "--init", "x", "--imdb", "", *extra))
        read = finetune.read_data(args, args.id2label())
        lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning:")]
        return read, lines

    read, warned = warnings()  # 40 sentences and their sub-phrases of 300 rows
    held = len(read.cal_texts) + read.held_out["calibration_removed_train_rows"]
    assert held <= rows / 5 and warned == []
    read, warned = warnings("--calibration-n", "80", "--calibration-split", "random", "--dev-fraction", "0.1")
    calibration = len(read.cal_texts) + read.held_out["calibration_removed_train_rows"]
    dev = len(read.dev_texts) + read.held_out["dev_removed_train_rows"]
    assert warned == [f"warning: {calibration + dev} of the {rows} rows of --train ({(calibration + dev) / rows:.0%}) "
                      f"are held out, not trained on: {calibration} for calibration (--calibration-n 80, with copies) "
                      f"+ {dev} for dev; pass a smaller --calibration-n, e.g. {round(rows / 10)} (10% of the rows)"]
    assert warnings("--calibration-n", "0", "--dev-fraction", "0.3")[1] == []  # the dev slice alone: asked for


def test_finetune_skips_the_default_checks_for_labels_they_do_not_name(train_files, tmp_path):
    """The default --checks (sentiment sentences that expect negative, positive or unsure) stopped a topic
    classifier's run with an error, while the IMDB check, another default of sentiment's, was skipped with a note.
    The default checks are skipped the same way for labels they do not fit; labels they fit keep them, and a --checks
    file given explicitly is read whatever the labels (a file that does not fit stays an error)."""
    def args(*extra):
        return finetune.parse_args(finetune_argv(train_files, tmp_path / "clf", "--init", "x", *extra))

    topics = args("--labels", "world,sports,business,science")
    assert topics.checks_path() == ""
    note = evaluate.default_checks_skip_note(topics.id2label())
    assert note == ("note: the behaviour checks are skipped: tests/data/sentiment_checks.tsv, --checks' default, "
                    "expects the verdicts positive, negative and unsure, and the labels ['world', 'sports', "
                    "'business', 'science'] do not include them (--checks FILE scores checks of your own)")
    finetune.check_data_options(topics, topics.checks_path(), topics.id2label())  # nothing to refuse
    for labels in ("negative,positive", "neg,pos", "negative,neutral,positive"):
        fitting = args("--labels", labels)
        assert fitting.checks_path() == str(evaluate.DEFAULT_CHECKS)
        assert evaluate.default_checks_skip_note(fitting.id2label()) is None
    given = args("--labels", "world,sports,business,science", "--checks", str(evaluate.DEFAULT_CHECKS))
    assert given.checks_path() == str(evaluate.DEFAULT_CHECKS)
    with pytest.raises(ValueError, match="expected 'positive' is neither 'unsure' nor a label of the model"):
        finetune.check_data_options(given, given.checks_path(), given.id2label())


@pytest.mark.slow  # three fine-tunings and an average, several seconds
def test_average_scores_seeds_on_the_dev_slice_they_share_and_refuses_different_ones(train_files, tiny_mlm_dir,
                                                                                      tmp_path, capsys):
    """Seeds fine-tuned with --dev-fraction record no dev file: train.average scores their average on the slice they
    share (metrics.json dev_slice, drawn again), and refuses members whose slices differ (one's dev rows may be
    another's training rows) unless --dev names a file."""
    runs = {}
    for name, extra in (("s0", []), ("s1", ["--seed", "1"]), ("other", ["--dev-seed", "1"])):
        argv = finetune_argv(train_files, tmp_path / name, "--init", str(tiny_mlm_dir), "--dev", "", "--dev-fraction",
                             "0.2", "--max-steps", "1", "--eval-every", "0", "--checks", "", *extra)
        assert finetune.main(argv) == 0
        runs[name] = json.loads((tmp_path / name / "metrics.json").read_text())
    assert runs["s0"]["dev_slice"] == runs["s1"]["dev_slice"] != runs["other"]["dev_slice"]
    out = tmp_path / "avg"
    assert average.main(average_argv([tmp_path / "s0", tmp_path / "s1"], out)) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["dev_slice"] == runs["s0"]["dev_slice"] and "dev_data" not in metrics
    assert metrics["dev_examples"] == metrics["calibration"]["dev"]["n"] == 60 and 0 <= metrics["dev_accuracy"] <= 1
    assert "SST-2 dev" not in (out / "README.md").read_text()
    capsys.readouterr()
    assert average.main(average_argv([tmp_path / "s0", tmp_path / "other"], tmp_path / "avg2")) == 2
    assert "the members do not share one dev set" in capsys.readouterr().err
    assert average.main(average_argv([tmp_path / "s0", tmp_path / "other"], tmp_path / "avg3", "--dev",
                                     str(train_files / "dev.tsv"))) == 0
