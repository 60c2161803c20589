"""The checks of a training run's --out folder: a new run never overwrites another run or anything else, --resume
continues only a run of its own, and one process at a time trains there (its lock). The scripts run them before
reading any data (`check_options`, then `lock_out`), and `train.trainer.Trainer` again."""
from __future__ import annotations

import os
from pathlib import Path

import torch

from roberta.hub import CONFIG_NAME, TOKENIZER_NAME, WEIGHTS_NAME
from roberta.run_metrics import METRICS_NAME

from .arguments import TrainingArguments
from .checkpointing import CHECKPOINTS, Checkpoints
from .paths import other_entries
from .reporting import CURVES_NAME, LOG_NAME
from .runtime import LOCK_NAME, Dist, UserError, check_not_locked, check_writable_folder, lock_folder, output_folder

FINISHED_FILES = (METRICS_NAME, WEIGHTS_NAME)  # a finished run's or a model folder's: never overwritten
RUN_FILES = (LOG_NAME, CURVES_NAME, CHECKPOINTS)  # what a run writes into --out as it goes (a start that stopped: them)
# what a run stopped after its loop leaves beside its log, so that its last checkpoint exports (train.pretrain)
STOPPED_RUN_FILES = (CONFIG_NAME, TOKENIZER_NAME, "tokenizer_config.json")


def check_options(args: TrainingArguments, world_size: int = 1, out=None) -> None:
    """The loop's options that are wrong whatever the data (`TrainingArguments.check_loop`), then --out (or `out`):
    writable, not being trained into by another process (the script takes the lock right after these checks:
    `lock_out`), and new unless --resume finds a run there to continue. A UserError naming the option; the scripts
    check them before reading any data (their arguments' `check`), the Trainer again."""
    args.check_loop(world_size)
    out = output_folder(out or args.out)
    check_writable_folder(out)  # before the data is read and packed
    if os.environ.get("RANK", "0") == "0":  # (the other processes of a torchrun job would find its rank 0's lock)
        check_not_locked(out)
    if not args.resume:
        check_fresh_out(out, args.own_files())
    elif (latest := Checkpoints(out).latest("step")) is None:  # --resume starts a new run there
        check_restart_out(out, args.own_files())
    elif args.max_steps is not None and args.max_steps < (step := Checkpoints.step_of(latest)):
        # else no step is trained and the checkpoint's weights are saved as the run's
        raise UserError(f"--resume: the checkpoint {latest} is at step {step:,} and --max-steps {args.max_steps:,} "
                        f"is below it, so nothing would be trained: resume with --max-steps {step} or more (the "
                        "run's own, to end it as planned), or choose another --out for a new run")


def lock_out(out, dist: Dist) -> None:
    """Rank 0 takes --out's lock (`runtime.lock_folder`, released when the script's main ends), every rank stopping
    when another process holds it. The scripts take it right after their option checks, before the tokenizer or the
    data are read into --out (minutes): two commands started together there would both prepare the folder, the second
    writing over the first's tokenizer.json."""
    refused = None
    if dist.is_main:
        try:
            lock_folder(out)
        except UserError as err:
            refused = err
    if dist.all_reduce(torch.tensor([float(refused is not None)], dtype=torch.float64)).item() > 0:
        raise refused or UserError(f"{out} is being trained by another process")


def finished_files(out: Path) -> list[str]:
    """The files of a finished run or of a saved model in `out` (FINISHED_FILES), which a new run would overwrite."""
    return [name for name in FINISHED_FILES if (out / name).exists()]


def check_fresh_out(out: Path, own=()) -> None:
    """A new run never overwrites another, nor anything else: an --out holding a run's checkpoints or log needs
    --resume, one holding a finished run or a model folder (train.export's, a download: no log) is refused
    (`check_no_run`), and so is one holding anything else (a README.md, a config.json; `--out .` in a project) but
    `own`, what the script itself put there before its training loop (`TrainingArguments.own_files`)."""
    check_no_run(out)
    if held := other_entries(out, (*own, LOCK_NAME)):
        raise UserError(f"{out} is not empty ({held}): a new run writes into a new or empty folder; choose another "
                        "--out")


def check_restart_out(out: Path, own=()) -> None:
    """--resume finding no checkpoint in `out` starts a new run there: not over a finished run or a model, nor
    beside anything but what a start of the same run left (its log, curves and checkpoints folder, and `own`; with
    its log, the config and tokenizer files a run stopped after its loop writes: STOPPED_RUN_FILES)."""
    if finished := finished_files(out):
        raise UserError(f"{out} holds a finished run or model ({', '.join(finished)}) and no checkpoint to resume")
    stopped = STOPPED_RUN_FILES if (out / LOG_NAME).is_file() else ()
    if held := other_entries(out, (*RUN_FILES, LOCK_NAME, *stopped, *own)):
        raise UserError(f"{out} is not empty ({held}) and holds no checkpoint to resume: choose another --out")


def check_no_run(out: Path) -> None:
    """No run or model in `out`: a run's checkpoints or log (which --resume continues), a finished run or a model
    folder. (An experiment's --out, which holds its own run folders, is checked with this alone.)"""
    finished = finished_files(out)
    started = (out / LOG_NAME).exists() or (out / CHECKPOINTS).exists()
    if started and not finished and Checkpoints(out).latest("step") is None:  # a diverged start, a second Ctrl-C
        raise UserError(f"{out} holds a run that stopped before its first checkpoint; pass --resume to start it "
                        "again there, or choose another --out")
    if (out / CHECKPOINTS).exists():
        raise UserError(f"{out} already holds a run; pass --resume to continue it, or choose another --out")
    if finished:  # a finished run is never overwritten, log.jsonl or not
        raise UserError(f"{out} already holds a run or model ({', '.join(finished)}): choose another --out")
