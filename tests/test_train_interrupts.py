"""A run or an experiment stopped between two of its files, or while its seeds' processes end: what it leaves,
and what it says. Each case was found by trying it (the reviewer's kill and signal harnesses); the comment says
what it did before."""
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from roberta.run_metrics import RunMetrics
from train import checkpointing, experiment, finetune, model_card, pretrain, runtime, sentiment_recipe
from helpers import finetune_argv, lock_is_free, pretrain_argv, refused

pytestmark = pytest.mark.usefixtures("single_thread")


@pytest.mark.parametrize("script", [pretrain, finetune], ids=["pretrain", "finetune"])
def test_metrics_json_is_the_last_file_a_run_writes(script, train_files, tiny_mlm_dir, tmp_path, monkeypatch):
    """metrics.json, which marks a step done for the experiments (`train.experiment.finished`), came before the
    model card: a run stopped between them (a kill, a signal) was skipped as done, with `save_pretrained`'s stub card
    and its checkpoints left in it. Now a run stopped in its card is not finished, and --resume finishes it."""
    out = tmp_path / "run"
    argv = (pretrain_argv(train_files, out) if script is pretrain else
            finetune_argv(train_files, out, "--init", str(tiny_mlm_dir)))

    def stopped(*args, **kwargs):
        raise KeyboardInterrupt  # a SIGTERM as the card is written

    monkeypatch.setattr(model_card, "write_model_card", stopped)
    assert script.main(argv) == runtime.EXIT_INTERRUPTED
    assert not experiment.finished(out) and (out / checkpointing.CHECKPOINTS).is_dir()
    monkeypatch.undo()
    assert script.main([*argv, "--resume"]) == 0
    assert experiment.finished(out) and not (out / checkpointing.CHECKPOINTS).exists()
    assert "## Metrics" in (out / "README.md").read_text()  # the run's card, not the stub


@pytest.mark.parametrize("keep", [False, True], ids=["cleaned", "kept"])
def test_the_runner_deletes_the_checkpoints_a_finished_step_left(keep, tmp_path, capsys):
    """A step whose run was stopped after its metrics.json, before deleting its checkpoints, kept them for good
    (a real run's optimizer state: several times the model), the experiment skipping it as done. The runner
    deletes them, unless the run's own command kept them (--keep-checkpoints)."""
    out = tmp_path / "mlm"
    step = experiment.training("pretrain", pretrain, corpus="c.txt", tokenizer="t.json", max_steps=6,
                               keep_checkpoints=keep or None, out=str(out))
    RunMetrics(command=step.command, train_steps=6).write(out)
    kept = out / checkpointing.CHECKPOINTS / "step-00000006"
    kept.mkdir(parents=True)
    (kept / "model.safetensors").write_bytes(b"weights")
    assert experiment.run_steps([step]) == 0
    assert kept.is_dir() == keep
    said = capsys.readouterr().out
    assert ("deleted the checkpoints its finished run left" in said) != keep, said


def parallel_seeds(tmp_path, seeds, parallel=2):
    """(argv, args, training steps, shared step names) of `train.sentiment_recipe --parallel` with one arm."""
    argv = ["--init", "mlm", "--out", str(tmp_path / "exp"), "--arms", "sst2", "--tapt-minutes", "0",
            "--seeds", *map(str, seeds), "--parallel", str(parallel)]
    args = sentiment_recipe.build_parser().parse_args(argv)
    train_steps, _, _, shared = sentiment_recipe.plan(args)
    return argv, args, train_steps, shared


def seed_processes(monkeypatch, returncodes: dict, signal_when_started=None, windows=False, sent=None):
    """Seeds' processes that end at once with `returncodes[seed]`; `signal_when_started`: the seed whose start
    brings a Ctrl-C (to the recipe, whose handler passes it on to the seeds running); `sent`: (seed, signal) of
    each one passed on; `windows`: `send_signal` as on Windows (SIGTERM, CTRL_C_EVENT and CTRL_BREAK_EVENT only)."""
    started = []

    class Process:
        def __init__(self, command, **kwargs):
            self.seed = int(command[-4])  # ... --seeds K --train-only --parallel 1
            self.returncode = returncodes[self.seed]
            started.append(self.seed)
            if self.seed == signal_when_started:
                signal.raise_signal(signal.SIGINT)

        def poll(self):
            return self.returncode

        def send_signal(self, signum):
            if windows and signum != signal.SIGTERM:  # (Windows' CTRL_* values are not defined here)
                raise ValueError(f"Unsupported signal: {signum}")
            if sent is not None:
                sent.append((self.seed, signum))

    monkeypatch.setattr(sentiment_recipe.subprocess, "Popen", Process)
    real_sleep, waits = time.sleep, []

    def sleep(seconds):  # the recipe's polling, with an end: it used to wait for ever
        waits.append(seconds)
        if len(waits) > 50:
            raise AssertionError("the recipe still waits, 10 s after its last seed ended")
        real_sleep(0)

    monkeypatch.setattr(sentiment_recipe.time, "sleep", sleep)
    return started


def test_a_seed_that_finished_as_the_signal_came_is_done_and_one_killed_by_it_interrupted(tmp_path, monkeypatch,
                                                                                           capsys):
    """A Ctrl-C while the seeds' processes were exiting (their folders complete) killed them in the interpreter's
    teardown (exit code -2), and the recipe said "error: seed 0 stopped (exit code -2)" with the end of a successful
    log, for every seed."""
    argv, args, steps, shared = parallel_seeds(tmp_path, [0, 1])
    RunMetrics(train_steps=6).write(tmp_path / "exp" / "sst2-s0")  # seed 0 had finished
    seed_processes(monkeypatch, {0: -signal.SIGINT, 1: -signal.SIGTERM}, signal_when_started=1)
    assert sentiment_recipe.run_in_parallel(argv, args, steps, shared) == runtime.EXIT_INTERRUPTED
    out, err = capsys.readouterr()
    assert "== seed 0: done" in out and "== seed 1: exit code -15 (interrupted)" in out, out
    assert "error" not in err and err == (f"seed 1: interrupted (its log: {tmp_path / 'exp' / 'logs' / 'seed-1.log'}); "
                                          "run the same command again to continue where it stopped\n"), err


def test_seeds_waiting_for_their_turn_do_not_start_after_a_ctrl_c(tmp_path, monkeypatch, capsys):
    """With more seeds than --parallel, a Ctrl-C left the recipe waiting for the seeds it would no longer start:
    it never ended."""
    argv, args, steps, shared = parallel_seeds(tmp_path, [0, 1, 2], parallel=1)
    started = seed_processes(monkeypatch, {0: runtime.EXIT_INTERRUPTED, 1: 0, 2: 0}, signal_when_started=0)
    assert sentiment_recipe.run_in_parallel(argv, args, steps, shared) == runtime.EXIT_INTERRUPTED
    assert started == [0]
    assert "seed 0: interrupted" in capsys.readouterr().err


def test_a_ctrl_c_after_every_seed_finished_says_interrupted(tmp_path, monkeypatch, capsys):
    """Every seed that ran had finished when the Ctrl-C came: the recipe stopped (no averages) with exit code 130
    and said nothing at all."""
    argv, args, steps, shared = parallel_seeds(tmp_path, [0, 1, 2], parallel=2)
    for seed in (0, 1):
        RunMetrics(train_steps=6).write(tmp_path / "exp" / f"sst2-s{seed}")
    seed_processes(monkeypatch, {0: -signal.SIGINT, 1: 0, 2: 0}, signal_when_started=1)
    assert sentiment_recipe.run_in_parallel(argv, args, steps, shared) == runtime.EXIT_INTERRUPTED
    out, err = capsys.readouterr()
    assert "== seed 0: done" in out and "== seed 1: done" in out and "== seed 2" not in out
    assert err == "interrupted: run the same command again to continue where it stopped\n", err


@pytest.mark.parametrize("windows", [False, True], ids=["posix", "windows"])
def test_a_ctrl_c_reaches_the_running_seeds_once_on_each_platform(windows, tmp_path, monkeypatch, capsys):
    """On Windows the recipe passed the Ctrl-C on with `send_signal(SIGINT)`, which raises "ValueError: Unsupported
    signal: 2" there: the recipe ended through the error path without its "interrupted" lines, while its seeds,
    which share its console and got the Ctrl-C themselves, trained on unwatched. There it now passes nothing on and
    waits for them; on POSIX, where each seed has a session of its own, it passes the signal on once."""
    monkeypatch.setattr(runtime, "WINDOWS", windows)
    argv, args, steps, shared = parallel_seeds(tmp_path, [0, 1])
    sent = []
    seed_processes(monkeypatch, {0: runtime.EXIT_INTERRUPTED, 1: runtime.EXIT_INTERRUPTED}, signal_when_started=1,
                   windows=windows, sent=sent)
    assert sentiment_recipe.run_in_parallel(argv, args, steps, shared) == runtime.EXIT_INTERRUPTED
    assert sent == ([] if windows else [(0, signal.SIGINT)])  # (seed 1 was starting as it came)
    err = capsys.readouterr().err
    assert "seed 0: interrupted" in err and "seed 1: interrupted" in err and "error" not in err, err


# Imported by Python as it starts (a sitecustomize.py on PYTHONPATH): the script's `import torch` waits
# STARTING_SLEEP seconds, after the package `train` is imported, and says so in the file STARTING_MARK names: a signal
# sent then arrives while the script is still starting, before its main
SLOW_TORCH = """
import os
import sys
import time


class SlowTorch:
    def find_spec(self, name, path, target=None):
        if name == "torch" and "train" in sys.modules:
            open(os.environ["STARTING_MARK"], "w").close()
            time.sleep(float(os.environ["STARTING_SLEEP"]))
        return None


sys.meta_path.insert(0, SlowTorch())
"""


def signalled_while_starting(argv: list[str], tmp_path, sig, seconds: float = 30, ignore_sigint: bool = False):
    """`python -m ARGV` sent `sig` while it imports torch (`SLOW_TORCH`, `seconds` long); `ignore_sigint`: started
    with SIGINT ignored, as a shell starts a `cmd &` job. -> (exit code, stderr)."""
    (tmp_path / "sitecustomize.py").write_text(SLOW_TORCH)
    mark = tmp_path / "starting"
    env = {**os.environ, "STARTING_MARK": str(mark), "STARTING_SLEEP": str(seconds),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))}
    # SIGINT as the child starts with it: set either way, since a test run started in the background (nohup, `&`)
    # passes on an ignored SIGINT, which the script rightly keeps ignoring
    sigint = signal.SIG_IGN if ignore_sigint else signal.SIG_DFL
    proc = subprocess.Popen([sys.executable, "-m", *argv], cwd=Path(__file__).resolve().parents[1], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, sigint))
    try:
        for _ in range(300):
            if mark.exists() or proc.poll() is not None:
                break
            time.sleep(0.05)
        assert mark.exists(), proc.communicate()
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    return proc.returncode, err


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_while_a_script_starts_says_interrupted(sig, tmp_path):
    """Ctrl-C while a script imported torch (seconds; most of a short script's run, as train.export's) printed a
    KeyboardInterrupt's traceback through the imports, and SIGTERM ended it silently with 143: both now say
    "interrupted" and exit 130, as inside its main."""
    assert signalled_while_starting(["train.export", "a", "b"], tmp_path, sig) == (runtime.EXIT_INTERRUPTED,
                                                                                     "interrupted\n")


def test_a_job_that_ignores_ctrl_c_still_ignores_it(tmp_path):
    """A shell starts `cmd &` with SIGINT ignored, so that a Ctrl-C aimed at the foreground command spares its
    background jobs: the start-up handler and main's must not take the signal over. The script goes on, here to its
    own error about the model folder that does not exist."""
    code, err = signalled_while_starting(["train.export", str(tmp_path / "no-model"), str(tmp_path / "x")], tmp_path,
                                         signal.SIGINT, seconds=1, ignore_sigint=True)
    assert code == runtime.EXIT_USER_ERROR and "interrupted" not in err, err


def test_a_script_takes_its_outs_lock_before_it_reads_any_data(train_files, tmp_path, monkeypatch):
    """The lock was taken by the Trainer, after the tokenizer was written into --out and the corpus packed
    (minutes): two commands started together both prepared the folder, the second writing over the first's
    tokenizer.json. The script takes it right after its option checks; a folder made for it that the run left
    empty (here: refused at its first data check) goes with it."""
    from train import data

    out = tmp_path / "new" / "run"
    held = []

    def first_data_check(*args, **kwargs):
        held.append(not lock_is_free(out))
        raise runtime.UserError("stopped at the first data check")

    monkeypatch.setattr(data, "check_text_source", first_data_check)
    assert pretrain.main(pretrain_argv(train_files, out)) == runtime.EXIT_USER_ERROR
    assert held == [True]
    assert not out.exists() and out.parent.is_dir()  # made for the lock, left empty: removed with it


def test_a_write_error_survives_pickle_and_copy():
    """`roberta.files.WriteError`, raised by every atomic write of the package, could not be pickled or copied (a
    process pool sends exceptions pickled): OSError's own reduction called it with its errno and strerror."""
    import copy
    import errno
    import pickle

    from roberta.files import WriteError

    err = WriteError("/x/y", OSError(errno.ENOSPC, "No space left on device"), "free some space")
    for again in (pickle.loads(pickle.dumps(err)), copy.copy(err), copy.deepcopy(err)):
        assert (type(again), str(again), again.errno, again.path) == (type(err), str(err), err.errno, err.path)


def test_a_full_disk_in_a_copy_names_the_file_the_copy_wrote():
    """A copy's full-disk error names its source and its destination (filename, filename2): the destination is the
    file that could not be written, not the run's folder."""
    import errno

    from train.exit_codes import with_how_to_go_on

    err = OSError(errno.ENOSPC, "No space left on device", "/runs/a/src.bin", None, "/runs/b/dst.bin")
    said = with_how_to_go_on(err, "/runs/b", lambda: "run the same command again")
    assert str(said) == ("could not write /runs/b/dst.bin (No space left on device): free some space, then run the "
                         "same command again")


# ----- --resume of a checkpoint that the command's optimizer or moving average does not fit
# A tiny fine-tuning with layer-wise lr decay (AdamW groups with an lr_scale each), stopped as it wrote its card: the
# checkpoint of its last step is kept for the tests below, each resuming a copy of its own
STOPPED_FINETUNE = ["--imdb", "", "--checks", "", "--max-steps", "2", "--eval-every", "0", "--layer-lr-decay", "0.8"]


@pytest.fixture(scope="module")
def stopped_finetune(train_files, tiny_mlm_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("stopped-finetune") / "run"

    def stopped(*args, **kwargs):
        raise KeyboardInterrupt  # a SIGTERM as the card is written, after the last step's checkpoint

    with pytest.MonkeyPatch.context() as m:
        m.setattr(model_card, "write_model_card", stopped)
        assert finetune.main(finetune_argv(train_files, out, "--init", str(tiny_mlm_dir), *STOPPED_FINETUNE)) == \
            runtime.EXIT_INTERRUPTED
    assert [p.name for p in (out / checkpointing.CHECKPOINTS).iterdir()] == ["step-00000002"]
    return out


def resume_argv(stopped, tmp_path, train_files, tiny_mlm_dir, *extra) -> list[str]:
    """--resume of a copy of the `stopped_finetune` run in tmp_path, with its own options, then `extra`."""
    out = shutil.copytree(stopped, tmp_path / "run")
    return finetune_argv(train_files, out, "--init", str(tiny_mlm_dir), *STOPPED_FINETUNE, "--resume", *extra)


def listing(out: Path) -> dict:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def test_a_resume_whose_optimizer_groups_differ_is_refused_naming_the_option(stopped_finetune, train_files,
                                                                             tiny_mlm_dir, tmp_path, capsys):
    """--layer-lr-decay 1 (one lr: two AdamW groups) for a run of --layer-lr-decay 0.8 (a group per layer) was
    refused as "its optimizer state does not fit this model: loaded state dict has a different number of parameter
    groups": the same model, and no option named. The line now names the option that shapes the groups and differs
    from the checkpointed run, and how to go on; nothing in the run is changed. Not the other options changed with it:
    a longer --max-steps (how a run is extended) or another --lr would resume, and reverting them is no remedy."""
    argv = resume_argv(stopped_finetune, tmp_path, train_files, tiny_mlm_dir, "--layer-lr-decay", "1",
                       "--max-steps", "10", "--lr", "1e-4")
    out = Path(argv[argv.index("--out") + 1])
    before = listing(out)
    line = refused(finetune.main, argv, capsys,
                   "/checkpoints/step-00000002/trainer.pt: its optimizer state does not fit this command's",
                   "the checkpointed run's --layer-lr-decay 0.8 (this command: 1.0); resume with the run's own "
                   "--layer-lr-decay, or choose another --out")
    assert "different number of parameter groups" in line
    assert "--max-steps" not in line and "--lr " not in line and "run's own options" not in line
    assert listing(out) == before


def test_optimizer_groups_that_differ_with_no_group_option_changed_name_no_option(tmp_path):
    """Groups that differ while every option that shapes them is the run's (another cause: a code change): no option
    is named, not even those that did change, and the user is not told to undo them."""
    from train.trainer import optimizer_does_not_fit

    line = optimizer_does_not_fit(tmp_path / "trainer.pt", {"max_steps": (2, 10), "lr": (1e-3, 1e-4)},
                                  ValueError("loaded state dict has a different number of parameter groups"))
    assert line.startswith(f"{tmp_path / 'trainer.pt'}: its optimizer state does not fit this command's (loaded")
    assert "--max-steps" not in line and "--lr" not in line and "run's own" not in line


def test_a_resume_that_adds_a_moving_average_is_refused_and_the_run_still_resumes(stopped_finetune, train_files,
                                                                                 tiny_mlm_dir, tmp_path, capsys):
    """--ema-decay given to resume a run that kept no moving average of its weights (there is none to go on from):
    refused in a line that names the option, leaving the run as it was, which its own options then finish."""
    argv = resume_argv(stopped_finetune, tmp_path, train_files, tiny_mlm_dir)
    out = Path(argv[argv.index("--out") + 1])
    before = listing(out)
    refused(finetune.main, [*argv, "--ema-decay", "0.5"], capsys, "/checkpoints/step-00000002: the checkpointed run "
            "kept no moving average of the weights; resume it without --ema-decay")
    assert listing(out) == before
    assert finetune.main(argv) == 0
    assert experiment.finished(out) and not (out / checkpointing.CHECKPOINTS).exists()


def test_options_of_the_optimizer_changed_on_resume_take_effect(stopped_finetune, train_files, tiny_mlm_dir,
                                                                tmp_path, monkeypatch, capsys):
    """--weight-decay and --layer-lr-decay changed on --resume were said ("options differ from the checkpointed run:
    weight_decay 0.1 -> 0.0") and recorded with the run (metrics.json's resumed_with), but the optimizer kept the
    checkpoint's: AdamW's load_state_dict puts back each group's settings with its moments. The command's own
    settings are now the ones its steps run with."""
    from train import trainer

    seen = []
    original = trainer.Trainer._resume

    def resume(self):
        original(self)
        seen.append([(group["weight_decay"], group.get("lr_scale")) for group in self.optimizer.param_groups])

    monkeypatch.setattr(trainer.Trainer, "_resume", resume)
    argv = resume_argv(stopped_finetune, tmp_path, train_files, tiny_mlm_dir, "--weight-decay", "0",
                       "--layer-lr-decay", "0.5", "--max-steps", "3")
    assert finetune.main(argv) == 0
    warned = capsys.readouterr().err
    assert "weight_decay 0.1 -> 0.0" in warned and "layer_lr_decay 0.8 -> 0.5" in warned
    (groups,) = seen
    layers = json.loads((tiny_mlm_dir / "config.json").read_text(encoding="utf-8"))["num_hidden_layers"]
    assert {decay for decay, _ in groups} == {0.0}  # (the checkpoint's: 0.1 on the matrices)
    assert {scale for _, scale in groups} == {0.5 ** k for k in range(layers + 2)}  # head 1, ..., embeddings 0.5^(L+1)
