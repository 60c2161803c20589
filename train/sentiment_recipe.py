"""The sentiment-classifier experiment in one command: SST-2 alone vs an IMDB stage then SST-2, from the
pretrained encoder and from a random one, several seeds each; weight averages; mean ± std over seeds.

    python -m train.sentiment_recipe --init assets/mini-roberta-mlm --out runs/sentiment --dry-run   # the plan
    python -m train.sentiment_recipe --init assets/mini-roberta-mlm --out runs/sentiment

    # the shipped classifier: TAPT (18 min), one IMDB stage, SST-2 with 3 seeds (end-of-run weights), their average
    python -m train.sentiment_recipe --init assets/mini-roberta-mlm --out runs/sentiment --arms imdb-sst2 \\
        --imdb-stage-seed 0 --ema-decay 0

With --tapt-minutes M (default 18; 0 = none), first task-adaptive pretraining: `train.tapt_corpus` writes lower-cased
review text (IMDB unlabelled reviews, SST-2 training rows of 8+ words) to OUT/tapt, and `train.pretrain --init INIT`
trains on it for M minutes (batch 32, lr 2e-4, 100 warmup steps, dropout 0) -> OUT/tapt/mlm, the encoder the
pretrained arms start from (ENC below; INIT without TAPT). With random arms alone there is no TAPT.
Arms (--arms, default all four), each run with seeds --seeds (default 0 1 2):
    sst2               train.finetune --init ENC                                    -> OUT/sst2-sN
    imdb-sst2          train.finetune --init ENC --epochs 0.3 --long-text windows --calibration-n 0 --train IMDB
                                                                                    -> OUT/imdb-sN
                       train.finetune --init OUT/imdb-sN                            -> OUT/imdb-sst2-sN
                       (--imdb-stage-seed K: one IMDB stage OUT/imdb-sK for all the seeds' SST-2 runs)
    random-sst2        the same as sst2 from a random encoder of INIT's shape (--init random --tokenizer INIT)
    random-imdb-sst2   the same as imdb-sst2 from a random encoder
Every run, IMDB stage and SST-2, has dropout 0 (--dropout; the preset's 0.1 cost 1.4 points of SST-2 dev,
mean of 3 seeds); every SST-2 run keeps the moving average of its weights (--ema-decay 0.999; 0 = the end-of-run
weights, as the shipped classifier was made) and otherwise uses train.finetune's defaults (the shipped recipe: 2
epochs, lr 1e-4, warmup 6%, a temperature fitted on 1,000 held-out SST-2 train sentences, the same slice for every
seed); --finetune-args adds options to every SST-2 run (e.g. "--layer-lr-decay 0.8"),
--imdb-args to every IMDB stage (whose --train is always --imdb-train). The IMDB stage trains on the IMDB training
reviews minus the fixed 1,000-review evaluation sample (train.finetune removes them), each review as all its
overlapping 128-token windows (0.3 passes over them; before this session's experiment: one pass over each review's
first 128 tokens, `--imdb-args "--epochs 1 --long-text first"`).
Then, per arm, once all its seeds are done: OUT/ARM-avg, the uniform weight average of its seeds
(train.average, recalibrated on the shared slice), only where they share one start: not for random-sst2, whose
seeds' encoders are random weights of their own, nor for an IMDB arm without --imdb-stage-seed, whose seeds
continue IMDB stages of their own (the recipe says so); and OUT/summary.json + summary.md (train.summarize:
mean ± std over seeds of SST-2 dev accuracy, IMDB accuracy, ECE before/after, behaviour checks).

Running the same command again skips finished steps (a folder with metrics.json) and resumes an interrupted
one (train.experiment: each fine-tuning runs train.finetune's API in this process; the equivalent command is
printed and recorded in its metrics.json). --parallel N runs up to N seeds side by side, each in a process of its own
with 1/N of the threads (their output in OUT/logs/seed-K.log), once the steps they share are done: on both cores
of a 2-core CPU, --parallel 2; on a GPU, every seed at once. By hand, the same is:
    OMP_NUM_THREADS=1 python -m train.sentiment_recipe ... --seeds 0 2 --train-only &
    OMP_NUM_THREADS=1 python -m train.sentiment_recipe ... --seeds 1 --train-only; wait
    python -m train.sentiment_recipe ...                  # only averages and summarizes

CPU time on the 2-core AMD EPYC with AVX512-BF16 (bf16, one thread per run, two side by side): an SST-2 run
13-15 min of training (16.5 min wall), an IMDB stage 13-16 min, TAPT 18 min; one run at a time on both
cores, an SST-2 run 9 min, an IMDB stage 10 min, so this command with two arms takes about 1.5 hours.
Earlier, on the AVX2-only EPYC (fp32, the same setting): an SST-2 run 27-33 min (3,492 steps; batches of similar
length, train.finetune's --batch-order length: random batches of 32 SST-2 phrases are 2.9x padding and take about
twice as long); an IMDB stage 38 min (750 steps of 32 x 128 tokens). sst2 + imdb-sst2 (one shared IMDB stage) +
random-sst2, 3 seeds each: about 5 core-hours, 2.5 hours on both cores.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import roberta.hub
import roberta.loading

from . import arguments, average, finetune, pretrain, runtime, summarize, tapt_corpus
from .exit_codes import ended_interrupted
from .experiment import ARGUMENTS, Step, finished, run_steps, script, shape_of, split_options, training
from .out_folder import check_no_run
from .runtime import (EXIT_INTERRUPTED, USER_ERRORS, UserError, exit_code, output_folder, report_user_error,
                      shown_command)

ROOT = Path(__file__).resolve().parent.parent  # where `python -m train.sentiment_recipe` finds the package

ARMS = ("sst2", "imdb-sst2", "random-sst2", "random-imdb-sst2")
# The IMDB stage reads every 128-token window of each review (finetune --long-text windows, as the pipeline
# reads a long review): 0.3 passes over them are about the rows and tokens of one pass over their first windows.
IMDB_EPOCHS = 0.3


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m train.sentiment_recipe", description=__doc__.split("\n\n")[0],
                                epilog=__doc__.split("\n\n", 1)[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--init", required=True, help="the pretrained MLM folder (its tokenizer serves the random arms)")
    p.add_argument("--out", required=True, help="folder of the whole experiment")
    p.add_argument("--arms", default=",".join(ARMS), help=f"comma-separated, from {', '.join(ARMS)} (default: all)")
    p.add_argument("--seeds", type=arguments.seed_value, nargs="+", default=[0, 1, 2], help="default: %(default)s")
    p.add_argument("--imdb-train", default=finetune.DEFAULT_IMDB,
                   help="labelled reviews of the IMDB stage (default: %(default)s)")
    p.add_argument("--finetune-args", default="", help="extra train.finetune options for every SST-2 run")
    p.add_argument("--dropout", type=float, default=0.0,
                   help="hidden and attention dropout of every fine-tuning run, IMDB stage and SST-2 (default: "
                        "%(default)s, the shipped recipe's; train.finetune's own default is the preset's 0.1, "
                        "which cost 0.8 points of SST-2 dev in the SST-2 stage and 0.6 more in the IMDB stage, "
                        "mean of 3 seeds)")
    p.add_argument("--ema-decay", type=float, default=0.999,
                   help="every SST-2 run keeps the exponential moving average of its weights with this decay "
                        "(train.finetune --ema-decay); 0 = the end-of-run weights, as the shipped classifier "
                        "(default: %(default)s: on the phase-25 encoder it gained on 4 of 5 paired seeds, +0.4 "
                        "points on their mean)")
    p.add_argument("--imdb-args", default="", help="extra train.finetune options for every IMDB stage")
    p.add_argument("--tapt-minutes", type=float, default=18,
                   help="task-adaptive pretraining first: this many minutes of MLM training of INIT on lower-cased "
                        "review text (train.tapt_corpus) -> OUT/tapt/mlm, the encoder of the pretrained arms; "
                        "0 = off, the arms start from INIT (default: %(default)s, the shipped classifier's)")
    p.add_argument("--tapt-unsup", default=tapt_corpus.DEFAULT_UNSUP,
                   help="unlabelled reviews of the TAPT corpus (default: %(default)s)")
    p.add_argument("--tapt-sst2", default=tapt_corpus.DEFAULT_SST2,
                   help="SST-2 training rows of the TAPT corpus, text only (default: %(default)s)")
    p.add_argument("--tapt-args", default="", help="extra train.pretrain options for the TAPT run")
    p.add_argument("--cache-dir", default=None,
                   help="where the TAPT run caches its packed rows (train.pretrain --cache-dir; default: OUT/cache, "
                        "'' = no cache)")
    p.add_argument("--imdb-stage-seed", type=arguments.seed_value, default=None,
                   help="one IMDB stage, with this seed, shared by every seed's SST-2 run (OUT/imdb-sN; the spread "
                        "over seeds is then the SST-2 stage's alone, and the seeds are weight-averaged; default: one "
                        "IMDB stage per seed, and no average of seeds that start from different weights)")
    p.add_argument("--parallel", type=int, default=1,
                   help="run up to N seeds at once, each in a process of its own with 1/N of the CPU threads, "
                        "after the steps they share (TAPT, a shared IMDB stage) ran here; their output goes to "
                        "OUT/logs/seed-K.log (default: %(default)s, one after the other in this process; on a GPU, "
                        "which one small run leaves mostly idle, N runs take little longer than one)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars (train.finetune --no-progress)")
    p.add_argument("--train-only", action="store_true", help="train the runs, skip averaging and the summary")
    p.add_argument("--no-average", action="store_true", help="skip the weight averages")
    p.add_argument("--dry-run", action="store_true", help="print the commands, run nothing")
    return p


def check_out(path) -> Path:
    """An experiment's --out (this one's, train.recipe's), checked before any work: not a file, and not a training
    run's or a model's folder (train.out_folder.check_no_run; a config.json too), into which the experiment would
    write its run folders. The experiment's own earlier run (run folders, summary files) is accepted: the same
    command continues it."""
    out = output_folder(path)
    check_no_run(out)
    if (out / roberta.hub.CONFIG_NAME).is_file():  # a model folder without weights or metrics
        raise UserError(f"{out} already holds a run or model ({roberta.hub.CONFIG_NAME}): choose another --out")
    return out


def check_init(init: str, option: str = "--init") -> str:
    """The pretrained masked-LM folder (or Hub repo) the experiment starts from, checked before any work: it
    exists, with a config.json, and is not a classifier. Returns its architecture."""
    try:
        return roberta.loading.require_architecture(init, "RobertaForMaskedLM", "give a pretrained masked-LM folder "
                                                    "(train.pretrain output, e.g. assets/mini-roberta-mlm)", option)
    except roberta.loading.ArchitectureMismatch:
        raise
    except (OSError, ValueError) as err:
        raise UserError(f"cannot load {option} {init}: {err}") from None


def check_extra_options(extra: str, module, option: str) -> argparse.Namespace:
    """A user's extra options for `module` (train.finetune, train.pretrain), e.g. --finetune-args, parsed by the
    module's own parser without running anything (the options not given: the module's defaults): a ValueError naming
    `option` if it refuses them (an unknown option, a bad value), one line rather than argparse's usage."""
    words = split_options(extra, module.__name__)
    parser = arguments.build_parser(ARGUMENTS[module], module.__name__, module.__doc__)
    for action in parser._actions:  # the options the experiment gives itself (finetune's --init)
        action.required = False

    def refuse(message=None, *_):
        raise ValueError(f"{option} {extra!r}: {message or 'not options to pass on'} (python -m {module.__name__} "
                         "--help lists its options)")

    parser.error = refuse
    parser.exit = lambda status=0, message=None: refuse("--help or --version is not an option to pass on")
    with contextlib.redirect_stdout(io.StringIO()):  # --help's text
        return parser.parse_args(words)


def check_options(args) -> list[str]:
    """The options every step uses, checked before the first (TAPT: 18 minutes) runs; returns the arms."""
    arms = [a.strip() for a in args.arms.split(",") if a.strip()]
    if unknown := sorted(set(arms) - set(ARMS)):
        raise ValueError(f"unknown arm(s) {unknown}; choose from {list(ARMS)}")
    if not arms:
        raise ValueError(f"--arms names no arm; choose from {list(ARMS)}")
    if args.parallel < 1:
        raise ValueError(f"--parallel must be at least 1, got {args.parallel}")
    if args.tapt_minutes < 0 or not 0 <= args.ema_decay < 1 or not 0 <= args.dropout <= 1:
        raise ValueError(f"--tapt-minutes must be at least 0 (0 = none), --ema-decay in [0, 1) and --dropout in "
                         f"[0, 1], got {args.tapt_minutes:g}, {args.ema_decay:g} and {args.dropout:g}")
    if repeated := sorted({s for s in args.seeds if args.seeds.count(s) > 1}):  # one run folder, averaged twice
        raise ValueError(f"--seeds names seed {', '.join(map(str, repeated))} more than once: each seed is one run")
    for extra, option in ((args.finetune_args, "--finetune-args"), (args.imdb_args, "--imdb-args")):
        given = check_extra_options(extra, finetune, option)
        if given.dev_fraction:  # its range, and no dev file beside it: refused now, not by each run after TAPT
            finetune.FinetuneArguments(**vars(given)).check_dev_fraction()
    check_extra_options(args.tapt_args, pretrain, "--tapt-args")
    return arms


def tapt_cache_dir(args) -> str:
    """The TAPT run's --cache-dir: --cache-dir, else OUT/cache (not ./cache/packed where the command was started)."""
    return str(Path(args.out) / "cache") if args.cache_dir is None else args.cache_dir


def plan(args) -> tuple[list[Step], list[Step], dict, set[str]]:
    """(training steps, averaging steps, arms -> run folders, the names of the training steps every seed shares:
    TAPT and a shared IMDB stage)."""
    out = Path(args.out)
    arms = check_options(args)
    quiet = args.no_progress or None
    train_steps, average_steps, runs, shared = [], [], {}, set()
    encoder = args.init
    if args.tapt_minutes > 0 and not all(arm.startswith("random-") for arm in arms):  # TAPT serves pretrained arms
        corpus = out / "tapt"
        train_steps.append(script("tapt-corpus", tapt_corpus, ["--out", str(corpus), "--imdb-unsup", args.tapt_unsup,
                                                               "--sst2-train", args.tapt_sst2], corpus,
                                  marker="sst2-lower.txt"))
        shared |= {"tapt-corpus", "tapt"}
        encoder = str(corpus / "mlm")
        train_steps.append(training("tapt", pretrain, args.tapt_args, init=args.init,
                                    corpus=f"{corpus}/imdb-lower.txt=0.7,{corpus}/sst2-lower.txt=0.3", batch_size=32,
                                    lr=2e-4, warmup=100, dropout=0.0, time_budget_min=args.tapt_minutes,
                                    eval_every=500, save_every_min=10, cache_dir=tapt_cache_dir(args), resume=True,
                                    no_progress=quiet, out=encoder))
    # the random arms build a random model of the encoder's shape (train.finetune's preset could be another)
    random_model = {"init": "random", "tokenizer": args.init, **shape_of(args.init, required=False)}
    for arm in arms:
        random_init = arm.startswith("random-")
        init = random_model if random_init else {"init": encoder}
        prefix = "random-" if random_init else ""
        runs[arm] = []
        for seed in args.seeds:
            final = out / f"{arm}-s{seed}"
            if arm.endswith("imdb-sst2"):
                stage_seed = seed if args.imdb_stage_seed is None else args.imdb_stage_seed
                stage1 = out / f"{prefix}imdb-s{stage_seed}"
                # the options after `resume` are fixed: the IMDB stage's --train is always --imdb-train
                if stage1.name not in {step.name for step in train_steps}:  # a shared stage is trained once
                    train_steps.append(training(stage1.name, finetune, args.imdb_args, **init, epochs=IMDB_EPOCHS,
                                                long_text="windows", calibration_n=0, dropout=args.dropout,
                                                seed=stage_seed, resume=True, no_progress=quiet,
                                                train=args.imdb_train, out=str(stage1)))
                    if args.imdb_stage_seed is not None:
                        shared.add(stage1.name)
                start = {"init": str(stage1)}  # the stage-1 classifier (shape and tokenizer come with it)
            else:
                start = init
            train_steps.append(training(final.name, finetune, args.finetune_args, **start, dropout=args.dropout,
                                        ema_decay=args.ema_decay or None, seed=seed, resume=True, no_progress=quiet,
                                        out=str(final)))
            runs[arm].append(final)
        if not args.no_average and len(args.seeds) > 1 and different_starts(arm, args) is None:
            folder = out / f"{arm}-avg"
            quiet_average = ["--no-progress"] if args.no_progress else []
            average_steps.append(script(folder.name, average, [*map(str, runs[arm]), "--out", str(folder),
                                                               *quiet_average], folder, needs=runs[arm]))
    return train_steps, average_steps, runs, shared


def different_starts(arm: str, args) -> str | None:
    """Why the seeds of `arm` start from different weights, so that their weight average would mix unrelated
    ones (no average is planned); None when they share one start: the encoder and a head from train.finetune's
    --head-seed (the same for every seed), or one shared IMDB stage."""
    if arm.endswith("imdb-sst2"):
        if args.imdb_stage_seed is None:
            return ("each seed continues an IMDB stage of its own (--imdb-stage-seed K: one stage for every seed, "
                    "as the shipped classifier's, K = 0)")
        return None
    if arm.startswith("random-"):
        return "each seed's encoder is random weights of its own"
    return None


def data_inputs(args, steps: list[Step]) -> list[tuple[str, str, bool, str, dict]]:
    """The input files of the steps still to run, once each: (option, path, whether it is that option's default,
    kind "text", "labeled" or "lines", the check's column options). A fine-tuning's data options are named after
    the options that give them (`--finetune-args --dev`; an IMDB stage's --train is --imdb-train); TAPT's corpus is
    the tapt-corpus step's output, not an input."""
    from .imdb_sample import IMDB_TEXT_COLUMN

    inputs, seen = [], set()

    def add(option, path, default, kind, **columns):
        if path and (option, path) not in seen:
            seen.add((option, path))
            inputs.append((option, path, path == default, kind, columns))

    for step in steps:
        if step.done():
            continue
        if step.kind == tapt_corpus.__name__:
            add("--tapt-unsup", args.tapt_unsup, tapt_corpus.DEFAULT_UNSUP, "lines")
            add("--tapt-sst2", args.tapt_sst2, tapt_corpus.DEFAULT_SST2, "texts")  # its labels are not read
        elif step.kind == pretrain.__name__:  # TAPT
            add("--tapt-args --valid", step.args.valid, pretrain.DEFAULT_VALID, "text")
        elif step.kind == finetune.__name__:
            a = step.args
            stage = re.fullmatch(r"(random-)?imdb-s\d+", step.name) is not None  # an IMDB stage, not an SST-2 run
            extra = "--imdb-args" if stage else "--finetune-args"
            columns = {"text_column": a.text_column, "label_column": a.label_column}
            if stage:
                add("--imdb-train", a.train, finetune.DEFAULT_IMDB, "labeled", **columns)
            else:
                add(f"{extra} --train", a.train, finetune.DEFAULT_TRAIN, "labeled", **columns)
            if not a.dev_fraction:  # (with it, the dev set is held out of --train: --dev is not read)
                add(f"{extra} --dev", a.dev, finetune.DEFAULT_DEV, "labeled", **columns)
            add(f"{extra} --imdb", a.imdb, finetune.DEFAULT_IMDB, "labeled", text_column=IMDB_TEXT_COLUMN,
                label_column="label")
    return inputs


def check_input(option: str, path: str, default: bool, kind: str, columns: dict) -> None:
    """One of `data_inputs`, checked by `train.data`'s checks (train.tapt_corpus's for --tapt-unsup): an error
    naming `option`."""
    from . import data

    if kind == "lines":
        tapt_corpus.check_lines(path, option, default=default)
    elif kind == "text":
        data.check_text_source(path, option, default=default)
    elif kind == "labeled":
        data.check_labeled_source(path, option, default=default, **columns)
    elif kind == "texts":  # a labelled file read as text (train.tapt_corpus): its text column alone
        data.check_labeled_source(path, option, default=default, labels=False, **columns)


def check_data(args, steps: list[Step]) -> None:
    """The input files of every step still to run, checked before the first one runs (TAPT: 18 minutes, then an
    IMDB stage, before an SST-2 run read a misspelt --dev): one error that names the option."""
    for option, path, default, kind, columns in data_inputs(args, steps):
        check_input(option, path, default, kind, columns)


def _stop_with_parent():
    """What a seed's process runs before it starts (Linux; None elsewhere): SIGTERM when this recipe dies, killed
    without passing a signal on (a GPU session's SIGKILL), so that no seed trains on unwatched. `prctl` is looked
    up here, in the parent: the child of a process with threads (CUDA's) should run as little as it can before
    exec (no import, no dlopen, whose locks another thread may have held at the fork)."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    prctl = ctypes.CDLL(None, use_errno=True).prctl
    return lambda: prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def run_in_parallel(argv: list[str], args, steps: list[Step], shared: set[str]) -> int:
    """`--parallel N`: the steps the seeds share here, then each seed's own steps as `python -m
    train.sentiment_recipe ARGV --seeds K --train-only` (the shared steps found done there), at most N processes at
    once, each in a session of its own with 1/N of the CPU threads and its output in OUT/logs/seed-K.log. A
    SIGINT or SIGTERM here is passed on once to the running seeds (on Windows the console gives them the Ctrl-C
    itself), which save a checkpoint and stop (exit code 130 then, as a training script's), and no other seed
    starts. A seed whose steps are all done is done, whatever its process's exit code (a signal that reached it as
    it exited says "interrupted" and 130), and one stopped by the signal is interrupted
    (`exit_codes.ended_interrupted`), not an error."""
    if (code := run_steps([step for step in steps if step.name in shared])) != 0:
        return code
    own_steps = {seed: [step for step in steps if step.name not in shared and getattr(step.args, "seed", None) == seed]
                 for seed in args.seeds}
    logs = Path(args.out) / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    threads = max(1, (os.cpu_count() or 1) // args.parallel)
    env = {**os.environ, "OMP_NUM_THREADS": str(threads),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    pending, running, failed, stopped = list(args.seeds), {}, {}, []
    stop_with_parent = _stop_with_parent()

    def stop(signum, frame):
        # once: a second SIGINT would make a run stop without its checkpoint. Not on Windows, where the seeds share
        # the console (a new session is POSIX only), which gives each of them the Ctrl-C itself, and where
        # `send_signal` takes no SIGINT (a ValueError) and makes SIGTERM a kill, without the checkpoint.
        if not stopped and not runtime.WINDOWS:
            for proc, _ in running.values():
                proc.send_signal(signum)
        stopped.append(signum)

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        while pending and not stopped or running:
            while pending and len(running) < args.parallel and not stopped:
                seed = pending.pop(0)
                command = [sys.executable, "-m", __spec__.name, *argv, "--seeds", str(seed), "--train-only",
                           "--parallel", "1"]
                log = open(logs / f"seed-{seed}.log", "a")
                print(f"== seed {seed}: {shown_command(['python', *command[1:]])} (output: {log.name})", flush=True)
                running[seed] = (subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env,
                                                  start_new_session=True, preexec_fn=stop_with_parent), log)
            time.sleep(0.2)
            for seed, (proc, log) in list(running.items()):
                if proc.poll() is None:
                    continue
                log.close()
                del running[seed]
                code = proc.returncode
                if code != 0 and own_steps[seed] and all(step.done() for step in own_steps[seed]):
                    code = 0  # its work was finished and saved
                interrupted = " (interrupted)" if ended_interrupted(code) else ""
                print(f"== seed {seed}: {'done' if code == 0 else f'exit code {code}{interrupted}'}", flush=True)
                if code != 0:
                    failed[seed] = code
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    for seed, code in failed.items():
        if ended_interrupted(code):  # not an error to fix: its training saved a checkpoint (or had not started)
            print(f"seed {seed}: interrupted (its log: {logs / f'seed-{seed}.log'}); run the same command again to "
                  "continue where it stopped", file=sys.stderr)
            continue
        lines = (logs / f"seed-{seed}.log").read_text(errors="replace").strip().splitlines()
        print(f"error: seed {seed} stopped (exit code {code}); the end of {logs / f'seed-{seed}.log'}:\n"
              + "\n".join(lines[-15:]), file=sys.stderr)
    if stopped and not failed:  # every seed that ran had finished; the others wait for the next run
        print("interrupted: run the same command again to continue where it stopped", file=sys.stderr)
    if stopped:
        return EXIT_INTERRUPTED
    errors = [code for code in failed.values() if not ended_interrupted(code)]
    return errors[0] if errors else EXIT_INTERRUPTED if failed else 0


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    # everything checked before any work, --dry-run too, but --init and the data files: a plan may name a run or a
    # file still to come (train.ablation's dry run does not check its data either)
    try:
        train_steps, average_steps, runs, shared = plan(args)
        check_out(args.out)  # not into a model's folder (its own earlier run: continued)
        if not args.dry_run:
            check_init(args.init)
            check_data(args, train_steps)
    except USER_ERRORS as err:
        return report_user_error(err)
    if not (args.no_average or args.train_only) and len(args.seeds) > 1:
        for arm in runs:
            if why := different_starts(arm, args):
                print(f"note: no weight average of the {arm} arm: {why}", file=sys.stderr, flush=True)
    summary_argv, summarized = [], []
    for arm, folders in runs.items():
        averaged = [Path(args.out) / f"{arm}-avg"] if f"{arm}-avg" in {step.name for step in average_steps} else []
        summarized += folders + averaged
        summary_argv += ["--arm", arm, *map(str, folders + averaged)]
    summary_argv += ["--out", str(Path(args.out) / "summary.json")]
    summary = script("summary", summarize, summary_argv, Path(args.out))  # always rewritten: the runs finished now
    steps = train_steps + ([] if args.train_only else average_steps)
    if args.dry_run:
        if args.parallel > 1 and len(args.seeds) > 1:
            print(f"# the seeds' own steps run up to {args.parallel} at once, each in a process of its own "
                  f"(`--seeds K --train-only`), after: {', '.join(sorted(shared)) or 'nothing shared'}")
        for step in steps:
            print(("# done: " if step.done() else "") + step.shown)
        if not args.train_only:
            print(summary.shown)
        return 0
    if args.parallel > 1 and len(args.seeds) > 1:
        code = run_in_parallel(argv, args, train_steps, shared)
        if code == 0 and not args.train_only:
            code = run_steps(average_steps)
    else:  # run_steps, an interrupted step said as one: "interrupted", how to continue, exit code 130
        code = run_steps(steps)
    if code != 0 or args.train_only:
        return code
    if missing := [str(f) for f in summarized if not finished(f)]:
        print(f"summary skipped: unfinished {', '.join(missing)}", file=sys.stderr)
        return 0
    print(f"== summary: {summary.shown}", flush=True)
    return summary.action()


if __name__ == "__main__":
    raise SystemExit(exit_code(main))
