"""train.gpu_transfer and the .xz corpora it ships: bundle, pack into parts, unpack, read compressed text."""
import importlib.util
import json
import lzma
import shutil
from pathlib import Path

import pytest

import roberta
from train import checkpointing, data, gpu_transfer, tables
from helpers import empty_bundle


@pytest.fixture()
def data_root(tmp_path, train_files):
    root = tmp_path / "shared"
    (root / "corpus").mkdir(parents=True)
    shutil.copy(train_files / "corpus.txt", root / "corpus" / "a.txt")
    shutil.copy(train_files / "valid.txt", root / "valid.tokens")
    shutil.copy(train_files / "train.tsv", root / "train.tsv")
    return root


def test_bundle_compresses_the_layout_and_reads_back(data_root, train_files, tmp_path):
    out = tmp_path / "upload"
    written = gpu_transfer.bundle(out, data_root, ["corpus", "valid.tokens", "train.tsv"],
                                  tokenizer=train_files / "tokenizer.json")
    assert {p.relative_to(out).as_posix() for p in written} == {
        "tokenizer.json", "data/corpus/a.txt.xz", "data/valid.tokens.xz", "data/train.tsv.xz"}
    # The training readers take the compressed files as they are.
    assert data.read_documents(out / "data" / "corpus") == data.read_documents(data_root / "corpus")
    assert data.read_documents(out / "data" / "valid.tokens.xz") == data.read_documents(data_root / "valid.tokens")
    assert tables.read_labeled(out / "data" / "train.tsv.xz") == tables.read_labeled(data_root / "train.tsv")
    with pytest.raises(ValueError, match="over --max-mib"):
        gpu_transfer.bundle(out, data_root, ["corpus"], tokenizer=train_files / "tokenizer.json", max_mib=1e-4)
    with pytest.raises(FileNotFoundError, match="missing"):
        gpu_transfer.bundle(out, data_root, ["missing"], tokenizer=train_files / "tokenizer.json")


def test_a_new_bundle_leaves_nothing_of_an_earlier_one(data_root, train_files, tmp_path, capsys):
    """A corpus dropped from --files would otherwise travel to the device, uncounted against its 64 MiB."""
    out, tokenizer = tmp_path / "upload", train_files / "tokenizer.json"
    gpu_transfer.bundle(out, data_root, ["corpus", "valid.tokens"], tokenizer=tokenizer)
    (out / "notes.txt").write_text("mine")  # not the bundle's: left alone
    written = gpu_transfer.bundle(out, data_root, ["corpus"], tokenizer=tokenizer)
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == [
        "bundle.json", "data/corpus/a.txt.xz", "notes.txt", "tokenizer.json"]
    assert (len(written) == 2
            and f"removed {out / 'data' / 'valid.tokens.xz'}: an earlier bundle's" in capsys.readouterr().out)


def test_a_bundle_that_failed_or_was_refused_is_never_taken_for_a_finished_one(data_root, train_files, tmp_path,
                                                                             monkeypatch):
    """A compression stopped half-way (Ctrl-C, a failed --head) left a broken or empty .xz that the next bundle
    kept, exit 0; a bundle refused for its size stayed on disk and train.gpu_session took it."""
    out, tokenizer = tmp_path / "upload", train_files / "tokenizer.json"
    target = out / "data" / "valid.tokens.xz"
    with pytest.raises(ValueError, match="first line is longer"):
        gpu_transfer.bundle(out, data_root, ["valid.tokens"], tokenizer=tokenizer, heads={"valid.tokens": 10})
    assert not target.exists() and not list(out.rglob("*.partial"))

    def interrupted(src, dst, max_bytes):
        Path(dst).write_bytes(b"\xfd7zXZ half")
        raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(gpu_transfer, "_compress", interrupted)
        with pytest.raises(KeyboardInterrupt):
            gpu_transfer.bundle(out, data_root, ["valid.tokens"], tokenizer=tokenizer)
    assert not target.exists() and not list(out.rglob("*.partial"))
    with pytest.raises(ValueError, match="not a finished bundle"):
        gpu_transfer.check_bundle(out)
    gpu_transfer.bundle(out, data_root, ["valid.tokens"], tokenizer=tokenizer)
    assert lzma.open(target).read() == (data_root / "valid.tokens").read_bytes()  # whole
    gpu_transfer.check_bundle(out)
    (out / "tokenizer.json").unlink()  # as the GPU plan does (the --init folder carries its own): still finished
    gpu_transfer.check_bundle(out)
    target.write_bytes(target.read_bytes()[:100])
    with pytest.raises(ValueError, match="valid.tokens.xz: not the size bundled"):
        gpu_transfer.check_bundle(out)
    with pytest.raises(ValueError, match="over --max-mib"):
        gpu_transfer.bundle(out, data_root, ["valid.tokens"], tokenizer=tokenizer, max_mib=1e-4)
    with pytest.raises(ValueError, match="not a finished bundle"):
        gpu_transfer.check_bundle(out)


def test_bundle_sends_the_head_of_a_file_when_asked(data_root, train_files, tmp_path):
    """--head FILE=BYTES: the first lines that fit (a mixture that reads 15M characters of a 65M file needs
    no more), and a later bundle without it sends the whole file again."""
    out, text = tmp_path / "upload", (data_root / "valid.tokens").read_bytes()
    assert len(text) > 2000
    gpu_transfer.bundle(out, data_root, ["valid.tokens"], tokenizer=train_files / "tokenizer.json",
                        heads=gpu_transfer.parse_heads(["valid.tokens=2e3"]))
    head = lzma.open(out / "data" / "valid.tokens.xz").read()
    assert 0 < len(head) <= 2000 and head.endswith(b"\n") and text.startswith(head)
    assert b"\n" not in text[len(head):2000]  # as many whole lines as fit
    gpu_transfer.bundle(out, data_root, ["valid.tokens"], tokenizer=train_files / "tokenizer.json")
    assert lzma.open(out / "data" / "valid.tokens.xz").read() == text
    with pytest.raises(ValueError, match="not one of --files"):
        gpu_transfer.bundle(out, data_root, ["valid.tokens"], tokenizer=train_files / "tokenizer.json",
                            heads={"train.tsv": 100})
    with pytest.raises(ValueError, match="first line is longer than 10 bytes"):
        gpu_transfer.bundle(out, data_root, ["valid.tokens"], tokenizer=train_files / "tokenizer.json",
                            heads={"valid.tokens": 10})
    for bad in ("valid.tokens", "valid.tokens=x", "=5", "valid.tokens=0"):
        with pytest.raises(ValueError, match="FILE=BYTES"):
            gpu_transfer.parse_heads([bad])


def test_bundle_counts_the_tree_that_travels_beside_it(tmp_path):
    """The device copies git's files of the working tree (tracked, or untracked and not ignored) with the carried
    folder, 64 MiB in all: `tree_bytes` is their size, ignored files (runs/, the upload itself) left out."""
    import subprocess

    repo = tmp_path / "repo"
    (repo / "runs").mkdir(parents=True)
    (repo / ".gitignore").write_text("runs/\n")
    (repo / "app.py").write_bytes(b"x" * 1000)
    (repo / "runs" / "big.bin").write_bytes(b"y" * 5000)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    assert gpu_transfer.tree_bytes(repo) == 1000 + len("runs/\n")
    assert gpu_transfer.tree_bytes(tmp_path / "repo" / "runs") == 0  # inside the repo, all ignored
    outside = tmp_path / "plain"
    outside.mkdir()
    assert gpu_transfer.tree_bytes(outside) is None


def test_pack_and_unpack_round_trip(tiny_mlm_dir, tmp_path):
    runs = tmp_path / "runs"
    shutil.copytree(tiny_mlm_dir, runs / "mlm")
    (runs / "mlm" / "checkpoints" / "step-1").mkdir(parents=True)
    (runs / "mlm" / "checkpoints" / "step-1" / "trainer.pt").write_bytes(b"x" * 1000)
    parts = gpu_transfer.pack(runs, tmp_path / "out", part_mib=0.05)  # several parts of 50 KiB
    assert len(parts) > 1 and all(p.stat().st_size <= 0.05 * gpu_transfer.MIB for p in parts)
    back = gpu_transfer.unpack(tmp_path / "out", tmp_path / "back")
    assert not (back / "mlm" / "checkpoints").exists()
    assert (back / "mlm" / "model.safetensors").read_bytes() == (runs / "mlm" / "model.safetensors").read_bytes()
    unpacked, packed = (roberta.RobertaForMaskedLM.from_pretrained(f).state_dict()
                        for f in (back / "mlm", runs / "mlm"))
    assert unpacked.keys() == packed.keys() and all(unpacked[k].equal(packed[k]) for k in packed)
    with pytest.raises(FileExistsError, match="already holds mlm"):  # was merged over the first unpack
        gpu_transfer.unpack(tmp_path / "out", back)
    parts[1].unlink()
    with pytest.raises(ValueError, match="one missing"):
        gpu_transfer.unpack(tmp_path / "out", tmp_path / "again")
    with pytest.raises(ValueError, match="more than 2 parts"):
        gpu_transfer.pack(runs, tmp_path / "out2", part_mib=0.05, max_files=2)


def test_command_line_errors(tmp_path, capsys):
    assert gpu_transfer.main(["unpack", str(tmp_path), "--out", str(tmp_path / "x")]) == 2
    assert "runs.tar.xz.partNN" in capsys.readouterr().err
    missing = tmp_path / "missing"  # was "... holds no runs.tar.xz.partNN files", as if the folder were there
    assert gpu_transfer.main(["unpack", str(missing), "--out", str(tmp_path / "x")]) == 2
    assert capsys.readouterr().err.startswith(f"error: {missing}: no such folder")


def test_pack_ship_returns_what_finished_in_a_stopped_recipe(tiny_mlm_dir, tiny_clf_dir, tmp_path, capsys):
    """A GPU command stopped by `timeout` mid-way: `pack RECIPE --ship` exports the finished runs only."""
    out = tmp_path / "gpu"
    assert gpu_transfer.main(["pack", str(out), "--ship", "--out", str(tmp_path / "none")]) == 2
    assert "nothing to ship" in capsys.readouterr().err  # nothing to return: said, not a traceback
    (out / "mlm").mkdir(parents=True)  # pretraining cut off: not shipped, even with a classifier that finished
    assert gpu_transfer.main(["pack", str(out), "--ship", "--out", str(tmp_path / "none")]) == 2
    assert "pretraining did not finish" in capsys.readouterr().err
    for name in ("config.json", "tokenizer.json"):  # cut, its last checkpoint unreadable: said, no traceback
        shutil.copy(tiny_mlm_dir / name, out / "mlm")
    (out / "mlm" / "checkpoints" / "step-00000001").mkdir(parents=True)
    (out / "mlm" / "checkpoints" / "step-00000001" / "model.safetensors").write_bytes(b"not safetensors")
    assert gpu_transfer.main(["pack", str(out), "--ship", "--out", str(tmp_path / "none")]) == 2
    assert "step-00000001" in capsys.readouterr().err
    shutil.rmtree(out / "mlm")

    def finished_run(src, dst, metrics):
        shutil.copytree(src, dst)
        (dst / "metrics.json").write_text(json.dumps(metrics))

    finished_run(tiny_mlm_dir, out / "mlm", {"eval_accuracy": 0.5})
    finished_run(tiny_clf_dir, out / "sentiment" / "random-sst2-s0", {"dev_accuracy": 0.5})  # not a candidate
    finished_run(tiny_clf_dir, out / "sentiment" / "sst2-s1", {"dev_accuracy": 0.8})
    shutil.copytree(tiny_clf_dir, out / "sentiment" / "sst2-s0")  # cut off: no metrics.json
    (out / "ship" / "stale").mkdir(parents=True)  # an earlier ship of this folder is replaced
    assert gpu_transfer.main(["pack", str(out), "--ship", "--out", str(tmp_path / "returned")]) == 0
    back = gpu_transfer.unpack(tmp_path / "returned", tmp_path / "back")
    assert sorted(p.name for p in back.iterdir()) == ["mini-roberta-mlm", "mini-roberta-sst2", "sentiment",
                                                      gpu_transfer.SHIPPED_FROM]
    # no average was made: one seed ships, and says so
    assert (back / gpu_transfer.SHIPPED_FROM).read_text() == "mini-roberta-sst2: sst2-s1 (one seed, no average)\n"
    assert json.loads((back / "mini-roberta-sst2" / "metrics.json").read_text()) == {"dev_accuracy": 0.8}
    assert sorted(p.name for p in (back / "sentiment").iterdir()) == ["random-sst2-s0", "sst2-s1"]
    weights = roberta.checkpoint.read_weights(back / "mini-roberta-mlm" / "model.safetensors")[0]
    assert {str(t.dtype) for t in weights.values()} == {"torch.float16"}
    classifier = roberta.RobertaForSequenceClassification.from_pretrained(back / "mini-roberta-sst2")
    assert classifier.config.id2label == {0: "negative", 1: "positive"}
    assert all(p.isfinite().all() for p in classifier.parameters())


def make_upload(train_files, tmp_path) -> Path:
    """`gpu_transfer.bundle` of tiny corpora in ../shared/data's layout."""
    root = tmp_path / "shared"
    for name, src in [("wikipedia-en/a.txt", "corpus.txt"), ("wikitext-2/wiki.train.tokens", "corpus.txt"),
                      ("wikitext-2/wiki.valid.tokens", "valid.txt"), ("imdb/unsup.txt", "corpus.txt"),
                      ("sst2/train.tsv", "train.tsv"), ("sst2/dev.tsv", "dev.tsv")]:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(train_files / src, root / name)
    # labelled reviews, also pretraining text less their 1,000-row evaluation sample: more rows than that
    reviews = (train_files / "corpus.txt").read_text().replace("\n", " ").split(". ")
    (root / "imdb" / "train.tsv").write_text("text\tlabel\n" +
                                             "".join(f"{r}.\t{i % 2}\n" for i, r in enumerate(reviews)))
    upload = tmp_path / "upload"
    gpu_transfer.bundle(upload, root, tokenizer=train_files / "tokenizer.json")
    return upload


@pytest.mark.slow
def test_gpu_session_retries_a_failed_pretraining_and_returns_what_finished_with_its_logs(train_files, tmp_path,
                                                                                          capsys):
    """The one device command (train.gpu_session): the first recipe diverges (lr 1e30), the retry at --retry-lr
    in fp32 finishes, and its models come back in parts with the session's logs inside. The retry pretrains for
    --minutes, not for all the time left (--quick's pretraining takes 3 s whatever the budget: the command line
    says it). `--max-steps 3`: a schedule by steps, so that the first recipe diverges however slow its steps are
    (by the clock alone, a loaded machine spent the 3 s in warmup, at lr 0, and nothing diverged)."""
    from train import gpu_session

    upload, out = make_upload(train_files, tmp_path), tmp_path / "OUT"
    assert gpu_session.main(["--out", str(out), "--upload", str(upload), "--work", str(tmp_path / "work"),
                             "--deadline-s", "400", "--retry-lr", "2e-3", "--tests", "", "--minutes", "0.5",
                             "--", "--quick", "--seeds", "0", "--gpu-lr", "1e30",
                             "--pretrain-args", "--max-steps 3"]) == 0
    printed = capsys.readouterr().out  # the end of a device call's output: the figures, should nothing come back
    assert "retrying at lr 0.002" in printed and "tokens/s), stopped by " in printed
    assert "== sst2-s0: SST-2 dev" in printed
    back = gpu_transfer.unpack(out, tmp_path / "back")
    assert {p.name for p in back.iterdir()} == {"mini-roberta-mlm", "mini-roberta-sst2", "sentiment", "session",
                                                gpu_transfer.SHIPPED_FROM}
    assert "== shipped classifier: mini-roberta-sst2: sst2-s0 (one seed, no average)" in printed
    log = (back / "session" / "recipe.log").read_text()
    assert any(f"became {what}" in log for what in ("nan", "inf", "non-finite"))  # the first pretraining diverged ...
    assert "retrying at lr 0.002 in fp32 for 0.5 min: --minutes 0.5, and the" in log  # ... and the retry ran,
    retry = next(line for line in log.splitlines() if line.startswith("$ ") and "/retry" in line)  # as long as asked
    assert "--time-budget-min 0.5 --gpu-lr 0.002" in retry  # (was the ~4 min the 390 s left allowed)
    metrics = json.loads((back / "mini-roberta-mlm" / "metrics.json").read_text())
    assert "--lr 0.002" in metrics["command"] and metrics["hardware"]["precision"] == "fp32"
    assert json.loads((back / "session" / "machine.json").read_text())["torch"]
    retried = roberta.RobertaForMaskedLM.from_pretrained(back / "mini-roberta-mlm")
    assert all(p.isfinite().all() for p in retried.parameters())  # the retry's weights, not the diverged run's


def test_gpu_session_retry_pretrains_for_minutes_asked_or_what_the_time_left_allows():
    """The retry after a failed pretraining was sized by the time left alone: `--minutes 2` and a first run that
    failed at once gave a retry of ~5 minutes, longer than asked, with less time for the rest."""
    from train import gpu_session

    assert gpu_session.RETRY_SETUP_S == 150
    assert gpu_session.retry_minutes(2, 480) == (2, 5.5)  # what was asked: the time left allows more
    assert gpu_session.retry_minutes(6, 390) == (4, 4)  # what the time left allows: less than asked


def test_gpu_session_log_tail_leaves_out_torchs_own_log_lines(tmp_path):
    """With --compile, dynamo's graph-break warnings (a dozen glog-style lines each) filled the 40 lines of the
    recipe log that the device call's reply shows; they are left out and counted, the recipe's own lines kept."""
    from train import gpu_session

    warning = ("W1129 18:16:39.943000 17177 site-packages/torch/_dynamo/variables/tensor.py:1759] [1/0] "
               "Graph break from `Tensor.item()`")
    log = tmp_path / "recipe.log"
    log.write_text("\n".join(["step 10 loss 7.1", *[warning] * 50, "", "step 20 loss 6.9", warning,
                              "error: something failed"]) + "\n", encoding="utf-8")
    assert gpu_session.tail(log, 2).splitlines() == [
        f"(51 lines of torch's own log, such as torch.compile's warnings, left out here: see {log})",
        "step 20 loss 6.9", "error: something failed"]
    log.write_text("step 1\nW1 not a torch line\n", encoding="utf-8")
    assert gpu_session.tail(log, 40) == "step 1\nW1 not a torch line"
    assert gpu_session.tail(tmp_path / "missing.log", 40) == ""


def test_gpu_session_deadline_is_a_sigterm_that_a_run_can_answer(tmp_path):
    """At the deadline the recipe gets SIGTERM (a training step then saves a checkpoint), not a kill."""
    import sys
    import time
    from train import gpu_session

    child = ("import signal, sys, time\n"
             "signal.signal(signal.SIGTERM, lambda *a: (print('got SIGTERM', flush=True), sys.exit(130)))\n"
             "print('ready', flush=True)\ntime.sleep(60)\n")
    # 2 s is time enough for the child to start and install its handler (it says "ready" once it has); on a loaded
    # machine where it was not, the SIGTERM came too early to tell anything, and 8 s is tried
    for wait_s in (2, 8):
        path = tmp_path / f"log-{wait_s}"
        with open(path, "w") as log:
            started = time.monotonic()
            assert gpu_session.run_until([sys.executable, "-c", child], started + wait_s, log) is None
        took = time.monotonic() - started
        if "ready" in path.read_text():
            break
    assert took < wait_s + gpu_session.GRACE_S / 2  # it answered the SIGTERM: no kill waited for
    assert "ready\ngot SIGTERM\n(stopped at the deadline" in path.read_text()


def sigterm_at(monkeypatch, step):
    """The deadline's SIGTERM during pretraining step `step` (the real signal path: that step ends, a checkpoint is
    saved, the recipe exits)."""
    import os
    import signal
    from train import pretrain, trainer

    original = trainer.Trainer._train_step

    def train_step(self, time_up):
        if self.step == step and isinstance(self.task, pretrain.MLMTask):
            os.kill(os.getpid(), signal.SIGTERM)
        return original(self, time_up)

    monkeypatch.setattr(trainer.Trainer, "_train_step", train_step)


@pytest.mark.slow
def test_gpu_session_returns_a_pretraining_cut_by_its_deadline_as_a_partial_encoder(train_files, tmp_path,
                                                                                    monkeypatch, capsys):
    """A deadline that cuts pretraining returned its logs alone (the run writes its model folder when it finishes).
    Now its last checkpoint comes back in float16 as mini-roberta-mlm-partial, a model folder whose metrics say
    where and why it stopped and that it has no final evaluation: it loads, scores on CPU and continues with --init,
    but it is never taken for a finished encoder (another name; train.export and scripts.release refuse it), and
    the command says pretraining did not finish (exit code 1). Here the recipe runs in this process and gets the
    deadline's SIGTERM in its first step (the real signal path; only the timer is not)."""
    from scripts import release
    from train import evaluate, export, gpu_session, pretrain, recipe

    def cut_at_the_deadline(argv, deadline, log):  # run_until's answer for a run stopped at its deadline
        with monkeypatch.context() as m:
            sigterm_at(m, 1)  # (the tiny run's time budget, 3 s, may end before a later step)
            assert recipe.main(argv[3:]) == 130  # interrupted, a checkpoint saved
        return None

    monkeypatch.setattr(gpu_session, "run_until", cut_at_the_deadline)
    upload, out, work = make_upload(train_files, tmp_path), tmp_path / "OUT", tmp_path / "work"
    assert gpu_session.main(["--out", str(out), "--upload", str(upload), "--work", str(work), "--deadline-s", "1",
                             "--tests", "", "--", "--quick", "--seeds", "0"]) == 1  # pretraining did not finish
    printed = capsys.readouterr().out
    assert "== pretraining cut" in printed and "stopped by SIGTERM: " in printed and "retrying" not in printed
    assert "== shipped classifier: none (no fine-tuning run finished" in printed  # said, whatever the exit code
    back = gpu_transfer.unpack(out, tmp_path / "back")
    partial = back / gpu_transfer.PARTIAL_MLM
    assert {p.name for p in back.iterdir()} == {gpu_transfer.PARTIAL_MLM, "session"}  # no mini-roberta-mlm
    metrics = json.loads((partial / "metrics.json").read_text())
    assert metrics["stopped_by"] == "SIGTERM" and metrics["train_steps"] == 1 and metrics["train_tokens"] > 0
    assert "no final evaluation" in metrics["partial"] and "eval_accuracy" not in metrics
    assert ".xz" in metrics["corpus"] and metrics["init"].endswith("step-00000001")
    assert (partial / "log.jsonl").is_file()  # its training up to the cut
    # the weights of the checkpoint the SIGTERM saved, in float16, with the config and tokenizer of its run
    saved, _ = checkpointing.Checkpoints.load(work / "run" / "mlm" / "checkpoints" / "step-00000001")
    stored = roberta.checkpoint.read_weights(partial / "model.safetensors")[0]
    assert {str(t.dtype) for t in stored.values()} == {"torch.float16"}
    model = roberta.RobertaForMaskedLM.from_pretrained(partial)
    assert all(value.equal(saved[name].half().float()) for name, value in model.state_dict().items())
    assert len(roberta.pipeline("fill-mask", model=partial)("The cat likes <mask>.", top_k=3)) == 3

    # never shipped as a finished encoder: refused by name, also after it was scored here
    valid = str(train_files / "valid.txt")
    assert evaluate.main(["--model", str(partial), "--mlm-text", valid, "--out", str(partial)]) == 0
    assert json.loads((partial / "metrics.json").read_text())["mlm"]["accuracy"] >= 0
    capsys.readouterr()
    assert release.main(["--mlm", str(partial), "--out", str(tmp_path / "assets")]) == 2
    assert "is a partial model, not one to ship" in capsys.readouterr().err and not (tmp_path / "assets").exists()
    assert export.main([str(partial), str(tmp_path / "again")]) == 2
    # a next call continues from it
    assert pretrain.main(["--init", str(partial), "--corpus", str(train_files / "corpus.txt"), "--valid", valid,
                          "--max-steps", "2", "--batch-size", "8", "--eval-every", "0", "--eval-rows", "8",
                          "--final-eval-rows", "8", "--cache-dir", "", "--no-progress", "--precision", "fp32",
                          "--out", str(tmp_path / "next")]) == 0
    assert json.loads((tmp_path / "next" / "metrics.json").read_text())["init"] == str(partial)


def test_gpu_session_runs_every_test_that_waits_for_a_gpu():
    """A test skipped here for want of a GPU says it runs in train.gpu_session's tests: its file must be there."""
    from train import gpu_session
    waiting = {f"tests/{path.name}" for path in Path(__file__).parent.glob("test_*.py")
               if "runs in train.gpu_session's tests" in path.read_text(encoding="utf-8")}
    waiting -= {"tests/test_gpu_transfer.py"}
    assert waiting and waiting <= set(gpu_session.TESTS.split())


def test_gpu_session_retry_runs_without_torch_compile(tmp_path):
    """A torch.compile failure is one of the failures the retry is for: it drops `--compile`, keeps the rest."""
    from train import gpu_session

    empty_bundle(tmp_path / "up")
    args = gpu_session.parse_args(["--out", "o", "--upload", str(tmp_path / "up"), "--work", str(tmp_path / "w"),
                                   "--", "--init", "m", "--compile", "--gpu-lr", "5e-4"])
    first, retry = gpu_session.recipe_argv(args, Path("run")), gpu_session.recipe_argv(args, Path("r"), compile=False)
    assert "--compile" in first and "--compile" not in retry
    assert retry[retry.index("--init") + 1] == "m" and retry[retry.index("--gpu-lr") + 1] == "5e-4"


def test_gpu_session_retry_fine_tunes_the_first_seed_alone(tmp_path, monkeypatch, capsys):
    """The retry's time is sized for one fine-tuning seed (RETRY_SETUP_S): it fine-tunes the first of --seeds, the
    first run all of them (as the recipe reads its options: the last --seeds counts)."""
    from train import gpu_session
    from train.recipe import build_parser

    commands = []

    def failed(argv, deadline, log):  # every recipe fails at once, writing nothing
        print("$ " + " ".join(argv), file=log, flush=True)
        commands.append(argv)
        return 1

    monkeypatch.setattr(gpu_session, "run_until", failed)
    empty_bundle(tmp_path / "up")
    assert gpu_session.main(["--out", str(tmp_path / "OUT"), "--upload", str(tmp_path / "up"), "--work",
                             str(tmp_path / "work"), "--tests", "", "--seeds", "3", "4", "--", "--quick"]) == 1
    assert "retrying at lr" in (tmp_path / "work" / "session" / "recipe.log").read_text()
    assert [build_parser().parse_args(argv[3:]).seeds for argv in commands] == [[3, 4], [3]]


@pytest.mark.parametrize("options, match", [
    (["--upload", "{tmp}/nope"], "no data/ folder in it"), (["--minutes", "-1"], "must be at least 0"),
    (["--minutes", "0"], "give it after --, e.g. -- --init"),  # no pretraining and no encoder to fine-tune
    (["--deadline-s", "-5"], "--deadline-s positive"), (["--work", "{tmp}/used"], "holds an earlier session's runs"),
    (["--upload", "{tmp}/refused"], "not a finished bundle (no readable bundle.json"),  # refused for its size
    (["--", "--bogus"], "unrecognized arguments: --bogus")])  # the recipe's options, as it will parse them
def test_gpu_session_refuses_what_would_waste_the_device_before_starting(tmp_path, capsys, options, match):
    """Checked before any minute of the device runs: a missing upload, budgets that are not positive (or no
    pretraining without an encoder), a work folder with an earlier session's runs in it (the recipe would take
    them as done)."""
    from train import gpu_session

    empty_bundle(tmp_path / "up")
    (tmp_path / "refused" / "data").mkdir(parents=True)
    (tmp_path / "used" / "run").mkdir(parents=True)
    options = [o.format(tmp=tmp_path) for o in options]
    with pytest.raises(SystemExit) as exit_:
        gpu_session.parse_args(["--out", "o", "--upload", str(tmp_path / "up"), "--work", str(tmp_path / "w"),
                                *options])
    assert exit_.value.code == 2 and match in capsys.readouterr().err


def test_gpu_session_does_not_retry_a_recipe_that_refused_its_options(tmp_path, capsys):
    """Exit code 2 is a user error (an unknown option, a missing file): the retry would fail the same way."""
    from train import gpu_session

    empty_bundle(tmp_path / "up")
    assert gpu_session.main(["--out", str(tmp_path / "OUT"), "--upload", str(tmp_path / "up"), "--work",
                             str(tmp_path / "w"), "--tests", "", "--", "--init", str(tmp_path / "no-model")]) == 1
    log = (tmp_path / "w" / "session" / "recipe.log").read_text()
    assert "exit code 2: no retry" in log and "retrying" not in log


def test_gpu_session_returns_the_pretrained_model_when_both_do_not_fit(tiny_mlm_dir, tiny_clf_dir, tmp_path, capsys):
    from train import gpu_session

    shipped = tmp_path / "ship"
    shutil.copytree(tiny_mlm_dir, shipped / "mini-roberta-mlm")
    shutil.copytree(tiny_clf_dir, shipped / "mini-roberta-sst2")
    (shipped / gpu_transfer.SHIPPED_FROM).write_text("mini-roberta-sst2: sst2-avg\n")  # goes with the classifier
    alone = gpu_transfer.pack(tiny_mlm_dir, tmp_path / "measure", part_mib=1000)[0].stat().st_size / gpu_transfer.MIB
    parts = gpu_session.pack_what_fits(shipped, tmp_path / "out", part_mib=alone / 7.5)  # the two need over 8 parts
    assert len(parts) <= 8 and "packing without the classifier" in capsys.readouterr().out
    back = gpu_transfer.unpack(tmp_path / "out", tmp_path / "back")
    assert sorted(p.name for p in back.iterdir()) == ["mini-roberta-mlm"]


@pytest.mark.slow
def test_gpu_recipe_end_to_end_on_cpu(train_files, tmp_path):
    """The one-GPU recipe's code path on CPU and a tiny model: bundle (xz corpora in ../shared/data's layout),
    pretrain + fine-tune 2 seeds + weight average, ship in float16, pack into parts, unpack, release; then a
    second run continues from the returned weights."""
    from scripts import release
    from train import recipe

    upload = make_upload(train_files, tmp_path)
    assert not list((upload / "data").rglob("*.tsv")) and (upload / "data" / "sst2" / "dev.tsv.xz").is_file()

    def run_recipe(out, *extra):
        return recipe.main(["--gpu", "--quick", "--data", str(upload / "data"), "--seeds", "0", "1",
                            "--out", str(out), *extra])

    first = tmp_path / "gpu-1"
    assert run_recipe(first, "--tokenizer", str(upload / "tokenizer.json")) == 0
    metrics = json.loads((first / "mlm" / "metrics.json").read_text())
    assert metrics["eval_data"].endswith("wiki.valid.tokens.xz") and ".xz" in metrics["corpus"]
    assert [Path(s["source"]).name for s in metrics["corpus_sources"]] == [  # the default mixture, relocated
        "wikipedia-en", "wiki.train.tokens.xz", "unsup.txt.xz", "train.tsv.xz"]
    assert "--output-bias unigram" in metrics["command"]  # from random weights: start at the unigram model
    # the schedule of the real run: only a time budget, so the 6% warmup is 6% of the time (not of the steps)
    assert metrics["stopped_by"] == "time" and "--warmup 0.06" in metrics["command"]
    ship = first / "ship"
    assert {p.name for p in ship.iterdir()} == {"mini-roberta-mlm", "mini-roberta-sst2", "sentiment",
                                                gpu_transfer.SHIPPED_FROM}
    assert (ship / gpu_transfer.SHIPPED_FROM).read_text() == "mini-roberta-sst2: sst2-avg\n"
    assert json.loads((ship / "mini-roberta-sst2" / "metrics.json").read_text()).get("averaged")
    assert (ship / "sentiment" / "summary.md").is_file() and (ship / "sentiment" / "sst2-s1" / "metrics.json").is_file()

    parts = gpu_transfer.pack(ship, tmp_path / "returned")
    assert len(parts) <= 8
    back = gpu_transfer.unpack(tmp_path / "returned", tmp_path / "runs-gpu-1")
    if importlib.util.find_spec("gradio"):  # the release is made back here; the GPU machine, which runs this test
        assert release.main(["--mlm", str(back / "mini-roberta-mlm"),  # in train.gpu_session, has no Gradio
                             "--classifier", str(back / "mini-roberta-sst2"), "--out", str(tmp_path / "assets")]) == 0
        fill = roberta.pipeline("fill-mask", model=tmp_path / "assets" / "mini-roberta-mlm")
        assert len(fill("The cat likes <mask>.", top_k=3)) == 3

    # A second 10-minute run continues from the first run's returned weights.
    second = tmp_path / "gpu-2"
    assert run_recipe(second, "--init", str(back / "mini-roberta-mlm")) == 0
    metrics = json.loads((second / "mlm" / "metrics.json").read_text())
    assert metrics["init"] == str(back / "mini-roberta-mlm") and "--output-bias" not in metrics["command"]


@pytest.mark.slow
def test_gpu_recipe_runs_the_shipped_classifiers_recipe(train_files, tmp_path):
    """--tapt-minutes and --imdb-stage: the classifier the GPU command returns is made as the shipped one (TAPT on
    the review text of --data, one IMDB stage, the seeds from it, here 2 at once in processes of their own, and
    their weight average), so it can ship without an hour of CPU fine-tuning."""
    from train import recipe

    upload, out = make_upload(train_files, tmp_path), tmp_path / "gpu"
    assert recipe.main(["--gpu", "--quick", "--data", str(upload / "data"), "--tokenizer",
                        str(upload / "tokenizer.json"), "--seeds", "0", "1", "--tapt-minutes", "1", "--imdb-stage",
                        "--parallel", "2", "--out", str(out)]) == 0
    sentiment = out / "sentiment"
    tapt = json.loads((sentiment / "tapt" / "mlm" / "metrics.json").read_text())
    assert tapt["init"] == str(out / "mlm") and tapt["eval_data"].endswith("wiki.valid.tokens.xz")
    assert (sentiment / "tapt" / "imdb-lower.txt").read_text().islower()  # from the upload's unsup.txt.xz
    stage = json.loads((sentiment / "imdb-s0" / "metrics.json").read_text())
    assert stage["init"] == str(sentiment / "tapt" / "mlm") and stage["train_data"].endswith("imdb/train.tsv.xz")
    for seed in (0, 1):
        assert json.loads((sentiment / f"imdb-sst2-s{seed}" / "metrics.json").read_text())["init"] == str(
            sentiment / "imdb-s0")
        assert (sentiment / "logs" / f"seed-{seed}.log").is_file()
    assert json.loads((out / "ship" / "sentiment" / "tapt" / "metrics.json").read_text()) == tapt  # its rate back
    shipped = json.loads((out / "ship" / "mini-roberta-sst2" / "metrics.json").read_text())
    averaged = json.loads((sentiment / "imdb-sst2-avg" / "metrics.json").read_text())
    assert shipped["averaged"] == 2 and shipped["dev_accuracy"] == averaged["dev_accuracy"]


@pytest.mark.slow
def test_gpu_session_without_pretraining_returns_the_classifier_alone(train_files, tiny_mlm_dir, tmp_path, capsys):
    """--minutes 0: the GPU command fine-tunes the encoder that came with the tree (the shipped classifier's recipe,
    2 seeds at once) and returns the classifier alone, with the session's logs; no retry of a pretraining."""
    from train import gpu_session, recipe

    upload, out = make_upload(train_files, tmp_path), tmp_path / "OUT"
    assert gpu_session.main(["--out", str(out), "--upload", str(upload), "--work", str(tmp_path / "work"),
                             "--minutes", "0", "--seeds", "0", "1", "--tests", "", "--",
                             "--quick", "--init", str(tiny_mlm_dir), "--tapt-minutes", "1", "--imdb-stage"]) == 0
    report = capsys.readouterr().out
    assert "== imdb-sst2-avg: SST-2 dev" in report and "retrying" not in report
    back = gpu_transfer.unpack(out, tmp_path / "back")
    assert {p.name for p in back.iterdir()} == {"mini-roberta-sst2", "sentiment", "session", gpu_transfer.SHIPPED_FROM}
    assert json.loads((back / "mini-roberta-sst2" / "metrics.json").read_text())["averaged"] == 2
    with pytest.raises(ValueError, match="give --init"):  # the recipe refuses it too
        recipe.plan_gpu(recipe.build_parser().parse_args(["--gpu", "--out", "x", "--time-budget-min", "0"]))


def test_gpu_session_report_reads_the_runs_metrics(tmp_path):
    """The report a GPU command's reply ends with reads each run's metrics.json through RunMetrics: the
    pretraining's figures, a cut pretraining's partial model, TAPT's rate and each fine-tuning's dev accuracy (a
    run without one says so, not a KeyError)."""
    from roberta.run_metrics import RunMetrics
    from train import gpu_session

    chosen, logs = tmp_path / "gpu", tmp_path / "logs"
    logs.mkdir()
    (logs / "machine.json").write_text('{"gpu": "H200"}')
    (logs / "recipe.log").write_text("step 1\nstep 2\n")
    length = {"train_tokens": 4000, "train_steps": 20, "train_time_s": 2.0, "stopped_by": "time"}
    RunMetrics(eval_accuracy=0.25, eval_loss=5.5, **length).write(chosen / "mlm")
    RunMetrics(**length).write(chosen / "sentiment" / "tapt" / "mlm")
    RunMetrics(dev_accuracy=0.8125, train_time_s=3.0).write(chosen / "sentiment" / "sst2-s0")
    RunMetrics(train_time_s=1.0).write(chosen / "sentiment" / "sst2-s1")
    report = gpu_session.report(chosen, logs)
    assert (f"== pretraining ({chosen / 'mlm'}): held-out accuracy 0.2500, loss 5.5000; 4,000 tokens, 20 steps in "
            "2.0 s (2,000 tokens/s), stopped by time") in report
    assert "== TAPT: 4,000 tokens in 2.0 s (2,000 tokens/s)" in report
    assert "== sst2-s0: SST-2 dev 0.8125, 3.0 s of training" in report
    assert "== sst2-s1: SST-2 dev none, 1.0 s of training" in report
    # a run scored on a slice of its own training file (--dev-fraction), or on a dev file of other data: not SST-2's
    held_out = {"data": "/home/ana/mine.csv", "n": 60, "seed": 0, "split": "random"}
    RunMetrics(dev_accuracy=0.7, dev_slice=held_out, train_data="/home/ana/mine.csv",
               train_time_s=2.0).write(chosen / "sentiment" / "sst2-s2")
    RunMetrics(dev_accuracy=0.6, dev_data="/home/ana/mine_dev.csv", train_time_s=2.0).write(chosen / "sentiment" /
                                                                                             "sst2-s3")
    report = gpu_session.report(chosen, logs)
    assert "== sst2-s2: dev 0.7000 (60 rows of ana/mine.csv held out from fine-tuning, seed 0), 2.0 s of training" \
        in report
    assert "== sst2-s3: dev 0.6000 (ana/mine_dev.csv), 2.0 s of training" in report
    shutil.rmtree(chosen / "mlm")
    RunMetrics(**length).write(chosen / "ship" / gpu_transfer.PARTIAL_MLM)
    assert f"== pretraining cut ({chosen / 'mlm'}), stopped by time: 4,000 tokens, 20 steps" in gpu_session.report(
        chosen, logs)


def test_bundle_takes_a_head_for_a_file_under_a_files_folder(data_root, train_files, tmp_path):
    """`--files corpus --head corpus/a.txt=...` was refused: "not one of --files", though the file is bundled."""
    out, text = tmp_path / "upload", (data_root / "corpus" / "a.txt").read_bytes()
    gpu_transfer.bundle(out, data_root, ["corpus"], tokenizer=train_files / "tokenizer.json",
                        heads={"corpus/a.txt": 2000})
    head = lzma.open(out / "data" / "corpus" / "a.txt.xz").read()
    assert 0 < len(head) <= 2000 and text.startswith(head)
    with pytest.raises(ValueError, match="no such file under --data-root"):
        gpu_transfer.bundle(out, data_root, ["corpus"], tokenizer=train_files / "tokenizer.json",
                            heads={"corpus/b.txt": 2000})


def test_pack_refuses_nothing_to_pack_and_replaces_an_earlier_packs_parts(tiny_mlm_dir, tmp_path, capsys):
    empty = tmp_path / "empty"
    (empty / "mlm" / "checkpoints").mkdir(parents=True)
    (empty / "mlm" / "checkpoints" / "trainer.pt").write_bytes(b"x")  # never packed: nothing to return
    assert gpu_transfer.main(["pack", str(empty), "--out", str(tmp_path / "out")]) == 2
    assert "nothing to pack" in capsys.readouterr().err and not (tmp_path / "out").exists()
    runs = tmp_path / "runs"
    shutil.copytree(tiny_mlm_dir, runs / "mlm")
    many = gpu_transfer.pack(runs, tmp_path / "out", part_mib=0.05)
    one = gpu_transfer.pack(runs, tmp_path / "out")
    assert len(many) > 1 and sorted((tmp_path / "out").iterdir()) == one


def test_unpack_of_broken_parts_leaves_no_new_out_behind(tiny_mlm_dir, tmp_path):
    runs = tmp_path / "runs"
    shutil.copytree(tiny_mlm_dir, runs / "mlm")
    parts = gpu_transfer.pack(runs, tmp_path / "out", part_mib=0.05)
    parts[-1].write_bytes(parts[-1].read_bytes()[:10])  # truncated
    with pytest.raises(ValueError, match="one missing"):
        gpu_transfer.unpack(tmp_path / "out", tmp_path / "back")
    assert not (tmp_path / "back").exists()
    (tmp_path / "kept").mkdir()  # a folder that was there stays
    with pytest.raises(ValueError):
        gpu_transfer.unpack(tmp_path / "out", tmp_path / "kept")
    assert (tmp_path / "kept").is_dir()


def test_machine_facts_name_a_training_package_not_at_its_pinned_version(tmp_path):
    """The GPU machine's image is not this project's install: its tokenizers 0.23.2 cut long texts' windows short
    (found on a lent H200, 2026-11-30). The session's machine facts say which version differs from requirements.txt."""
    import tokenizers

    from train import gpu_session

    requirements = tmp_path / "requirements.txt"
    requirements.write_text("torch==2.13.0\ntokenizers==0.0.1  # not this one\nnumpy == 0.0.2\n"
                            "Huggingface_Hub[cli]==0.0.3 ; python_version >= '3'\nsafetensors===0.0.4\n",
                            encoding="utf-8")
    facts = gpu_session.machine_facts(requirements)
    assert facts["packages"]["tokenizers"] == tokenizers.__version__
    assert facts["not_as_pinned"]["tokenizers"] == f"{tokenizers.__version__} (requirements.txt: 0.0.1)"
    # torch is the machine's own build; an arbitrary-equality pin (===) is not read as one
    assert set(facts["not_as_pinned"]) == {"tokenizers", "numpy", "huggingface-hub"}
    assert gpu_session.pinned_version("Huggingface_Hub[cli]==0.0.3 ; python_version >= '3'") == (
        "huggingface-hub", "0.0.3")
    assert gpu_session.pinned_version("numpy>=2") is None and gpu_session.pinned_version("# numpy==2") is None
