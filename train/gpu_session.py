"""Issue 16's GPU call in one command: everything one device command of at most 10 minutes does.

    python3 -m train.gpu_session --out $OUT         # on the GPU machine, gpu-upload/ carried (README)

1. Facts about the machine (GPU, torch) and, in the background, the tests of the training code paths, which
   there run on CUDA (`--tests`): their output comes back to be read, it decides nothing here (a test written
   for CPU arithmetic may fail on a GPU for that reason alone).
2. `train.recipe --gpu` under a deadline (`--deadline-s`; at the deadline SIGTERM, so a training step
   checkpoints, then SIGKILL 20 s later).
3. If pretraining did not finish (a divergence, a CUDA, bf16 or torch.compile failure) and enough time is left,
   the recipe once more from the start at `--retry-lr` in fp32 without `--compile`, pretraining for `--minutes`
   or what the time left allows, the less (`retry_minutes`), and one fine-tuning seed.
4. What finished, exported (`train.recipe.ship`) and packed into at most 8 parts of 15 MiB in OUT
   (`train.gpu_transfer pack`), with `session/` inside: this log, the tests' output, the machine's facts.
   Pretraining cut by the deadline comes back as its last checkpoint, a partial model (PARTIAL_MLM: no final
   evaluation, not to ship; a next call's `-- --init`), and the command exits with 1.

A device command that runs past its limit returns nothing, so the default deadline (520 s) leaves a 10-minute
command time for the 20 s grace, the tests' last 10 s, and exporting and packing (~20 s, rehearsed on CPU).
More `train.recipe` options follow `--`, e.g. `-- --pretrain-args '--layers 8'`.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from roberta.files import write_atomic
from roberta.run_metrics import RunMetrics, dataset_name

from .arguments import seed_value
from .experiment import finished
from .gpu_transfer import PART_MIB, PARTIAL_MLM, SHIPPED_FROM, check_bundle, pack
from .runtime import EXIT_USER_ERROR, USER_ERRORS, exit_code, writable_folder

TESTS = "tests/test_train_loop.py tests/test_gpu_transfer.py tests/test_model.py tests/test_masking.py"
GRACE_S = 20  # between SIGTERM (a training step saves a checkpoint) and SIGKILL
RETRY_MIN_S = 240  # no retry with less time than this left: its setup alone takes about a minute
RETRY_SETUP_S = 150  # what a retry needs besides pretraining: setup, final evaluation and one fine-tuning seed


def run_until(argv: list[str], deadline: float, log) -> int | None:
    """Run `argv`, its output appended to `log`; SIGTERM at `deadline` (time.monotonic()), SIGKILL GRACE_S later.
    Returns the exit code, or None if it had to be stopped."""
    print("$ " + shlex.join(argv), file=log, flush=True)
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
    try:
        return proc.wait(timeout=max(deadline - time.monotonic(), 1))
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=GRACE_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        print(f"(stopped at the deadline: {' '.join(argv[:4])} ...)", file=log, flush=True)
        return None


TRAINING_PACKAGES = ("tokenizers", "safetensors", "huggingface-hub", "numpy")  # besides torch (its own build there)


def machine_facts(requirements: Path = Path(__file__).resolve().parents[1] / "requirements.txt") -> dict:
    """The GPU, torch, and the training's other packages with any version other than `requirements` pins
    ("not_as_pinned"): the machine's image is not this project's install (its tokenizers 0.23.2 cut long texts'
    windows short before `encode_windows` cut them itself)."""
    from importlib.metadata import PackageNotFoundError, version

    import torch

    facts = {"torch": torch.__version__, "cuda": torch.cuda.is_available()}
    if torch.cuda.is_available():
        facts |= {"gpu": torch.cuda.get_device_name(0), "bf16": torch.cuda.is_bf16_supported(),
                  "memory_gib": round(torch.cuda.get_device_properties(0).total_memory / 2**30, 1)}
    lines = requirements.read_text(encoding="utf-8").splitlines() if requirements.is_file() else []
    pinned = dict(filter(None, map(pinned_version, lines)))
    installed = {}
    for name in TRAINING_PACKAGES:
        try:
            installed[name] = version(name)
        except PackageNotFoundError:
            installed[name] = None
    facts["packages"] = installed
    facts["not_as_pinned"] = {name: f"{got} (requirements.txt: {pinned[name]})" for name, got in installed.items()
                              if name in pinned and got != pinned[name]}
    return facts


def pinned_version(line: str) -> tuple[str, str] | None:
    """A requirements line's (name, version) when it pins one exactly (`name==1.2`, `Name_X[extra] == 1.2 ; marker`),
    the name as TRAINING_PACKAGES spells it (lower case, `-`); None for anything else."""
    found = re.fullmatch(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*==\s*([^\s;=,#]+)\s*(?:;.*)?",
                         line.split("#")[0])
    return (re.sub(r"[._]+", "-", found.group(1)).lower(), found.group(2)) if found else None


def recipe_argv(args, out: Path, *extra: str, compile: bool = True) -> list[str]:
    """The `train.recipe --gpu` command; `compile=False` drops a `--compile` of the recipe's options (the retry:
    a torch.compile failure is one of the failures it is there for)."""
    upload = Path(args.upload)
    recipe_args = [a for a in args.recipe_args if compile or a != "--compile"]
    return [sys.executable, "-m", "train.recipe", "--gpu", "--data", str(upload / "data"),
            "--tokenizer", str(upload / "tokenizer.json"), "--seeds", *map(str, args.seeds), "--out", str(out),
            "--cache-dir", session_cache_dir(args), *recipe_args, *extra]


def session_cache_dir(args) -> str:
    """The recipes' packing cache: --cache-dir, else WORK/cache, which the retry shares with the first run (the
    same corpus packed once), and never ./cache in the tree the command runs in."""
    return str(Path(args.work) / "cache") if args.cache_dir is None else args.cache_dir


def retry_minutes(asked: float, left_s: float) -> tuple[float, float]:
    """(the retry's pretraining minutes, the minutes `left_s` seconds allow): the --minutes asked, or fewer if the
    time left, less the retry's RETRY_SETUP_S, does not allow them."""
    allowed = round((left_s - RETRY_SETUP_S) / 60, 2)
    return min(asked, allowed), allowed


def session(args) -> int:
    started = time.monotonic()
    deadline = started + args.deadline_s
    work = Path(args.work)
    logs = work / "session"
    logs.mkdir(parents=True, exist_ok=True)
    write_atomic(logs / "machine.json", json.dumps(machine_facts(), indent=2) + "\n")
    tests = None
    if args.tests:
        with open(logs / "tests.txt", "w") as out:
            tests = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                                      *shlex.split(args.tests)], stdout=out, stderr=subprocess.STDOUT,
                                     env={**os.environ, "OMP_NUM_THREADS": "4"})  # most cores to the recipe
    with open(logs / "recipe.log", "a") as log:
        first = work / "run"
        code = run_until(recipe_argv(args, first, "--time-budget-min", str(args.minutes)), deadline, log)
        chosen = first
        left = deadline - time.monotonic()
        if code == EXIT_USER_ERROR:  # a bad option or a missing file: the retry would fail the same way
            print(f"(the recipe refused its options or files, exit code {code}: no retry)", file=log, flush=True)
        elif args.minutes > 0 and not finished(first / "mlm") and left >= RETRY_MIN_S:
            minutes, allowed = retry_minutes(args.minutes, left)
            print(f"(pretraining did not finish, exit code {code}: retrying at lr {args.retry_lr} in fp32 "
                  f"for {minutes:g} min: --minutes {args.minutes:g}, and the {left:.0f} s left allow {allowed:g})",
                  file=log, flush=True)
            chosen = work / "retry"
            run_until(recipe_argv(args, chosen, "--time-budget-min", str(minutes), "--gpu-lr", str(args.retry_lr),
                                  "--precision", "fp32", "--seeds", str(args.seeds[0]), compile=False), deadline, log)
    if tests is not None:
        try:
            tests.wait(timeout=max(deadline + 10 - time.monotonic(), 1))
        except subprocess.TimeoutExpired:
            tests.kill()
            with open(logs / "tests.txt", "a") as out:
                out.write("\n(stopped at the deadline)\n")
    elapsed = round(time.monotonic() - started)
    print(f"session: {elapsed} s; shipping {chosen}", flush=True)
    from .recipe import ship

    try:
        shipped = ship(chosen)
    except USER_ERRORS as err:  # nothing finished (or could not be exported): the logs alone come back
        print(f"error: {err}", file=sys.stderr)
        shipped = chosen / "ship"
        shutil.rmtree(shipped, ignore_errors=True)
        shipped.mkdir(parents=True)
    shutil.copytree(logs, shipped / "session", dirs_exist_ok=True)
    pack_what_fits(shipped, Path(args.out))
    print(report(chosen, logs), flush=True)  # last: a device call's reply carries the end of the output
    wanted = chosen / "mlm" if args.minutes > 0 else shipped / "mini-roberta-sst2"  # --minutes 0: the classifier
    return 0 if finished(wanted) else 1


def pack_what_fits(shipped: Path, out: Path, part_mib: float = PART_MIB) -> list[Path]:
    """`pack` the shipped folder; if it needs more than the 8 parts that can come back (a model too large for
    both), without the classifier: the pretrained model is what only a GPU can make."""
    try:
        return pack(shipped, out, part_mib)
    except ValueError as err:
        print(f"{err}: packing without the classifier (fine-tune it here from the returned encoder)", flush=True)
        shutil.rmtree(shipped / "mini-roberta-sst2", ignore_errors=True)
        (shipped / SHIPPED_FROM).unlink(missing_ok=True)  # it named the classifier
        return pack(shipped, out, part_mib)


# torch's own log lines ("W1129 18:16:39.943000 17177 site-packages/torch/_dynamo/...] [1/0] Graph break ..."):
# with --compile, dynamo's graph-break and recompilation warnings, a dozen lines each
TORCH_LOG_LINE = re.compile(r"[DIWEF]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ [^\]]*\] ")


def tail(path: Path, lines: int) -> str:
    """The last `lines` non-blank lines of `path`, without torch's own log lines (`TORCH_LOG_LINE`), which would
    fill them; how many of those were left out is said first."""
    text = [line for line in path.read_text(errors="replace").splitlines() if line.strip()] if path.is_file() else []
    kept = [line for line in text if not TORCH_LOG_LINE.match(line)]
    left_out = len(text) - len(kept)
    note = [f"({left_out:,} lines of torch's own log, such as torch.compile's warnings, left out here: see {path})"]
    return "\n".join((note if left_out else []) + kept[-lines:])


def training_figures(m: RunMetrics) -> str:
    """A pretraining's length and rate, from its metrics."""
    return f"{m.train_tokens:,} tokens, {m.train_steps:,} steps in {m.train_time_s} s ({rate(m)})"


def rate(m: RunMetrics) -> str:
    """A run's training tokens per second."""
    return f"{m.train_tokens / max(m.train_time_s, 1e-9):,.0f} tokens/s"


def dev_figure(m: RunMetrics) -> str:
    """A fine-tuning's dev accuracy named by its dev set as its metrics.json records it: "SST-2 dev 0.8125", or
    "dev 0.7000 (60 rows of mine.csv held out from fine-tuning, seed 0)" (a dev file of other data by its name)."""
    dev = "none" if m.dev_accuracy is None else f"{m.dev_accuracy:.4f}"
    if m.dev_is_sst2():
        return f"SST-2 dev {dev}"
    return f"dev {dev} ({m.dev_set_named(dev_file=dataset_name)})"


def report(chosen: Path, logs: Path) -> str:
    """What a reader of the command's output needs if nothing else comes back: the recipe log's end, the
    pretraining and fine-tuning figures, the tests' summary."""
    parts = [f"== machine: {(logs / 'machine.json').read_text(encoding='utf-8').strip()}",
             f"== recipe log (last lines of {logs / 'recipe.log'}):", tail(logs / "recipe.log", 40)]
    if (chosen / "ship" / SHIPPED_FROM).is_file():
        parts.append(f"== shipped classifier: {(chosen / 'ship' / SHIPPED_FROM).read_text(encoding='utf-8').strip()}")
    else:  # the exit code follows the encoder (with --minutes > 0): say it when the classifier did not come back
        parts.append("== shipped classifier: none (no fine-tuning run finished: cut by the deadline, or failed; "
                     "the recipe log says which)")
    partial = chosen / "ship" / PARTIAL_MLM
    if finished(chosen / "mlm"):
        m = RunMetrics.read(chosen / "mlm")
        parts.append(f"== pretraining ({chosen / 'mlm'}): held-out accuracy {m.eval_accuracy:.4f}, loss "
                     f"{m.eval_loss:.4f}; {training_figures(m)}, stopped by {m.stopped_by}")
    elif (m := RunMetrics.read(partial, missing_ok=True)) is not None:
        parts.append(f"== pretraining cut ({chosen / 'mlm'}), stopped by {m.stopped_by}: {training_figures(m)}, "
                     f"no final evaluation; its last checkpoint comes back as {PARTIAL_MLM}, a partial model: not to "
                     "ship, a next call's -- --init")
    sentiment = chosen / "sentiment"
    if finished(sentiment / "tapt" / "mlm"):
        m = RunMetrics.read(sentiment / "tapt" / "mlm")
        parts.append(f"== TAPT: {m.train_tokens:,} tokens in {m.train_time_s} s ({rate(m)})")
    for run in sorted(sentiment.iterdir()) if sentiment.is_dir() else []:
        if finished(run):
            m = RunMetrics.read(run)
            parts.append(f"== {run.name}: {dev_figure(m)}, {m.train_time_s} s of training")
    if (logs / "tests.txt").is_file():
        parts += ["== tests (last lines):", tail(logs / "tests.txt", 12)]
    return "\n".join(parts)


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m train.gpu_session", description=__doc__.split("\n\n")[0],
                                epilog=__doc__.split("\n\n", 1)[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="the folder that comes back ($OUT)")
    p.add_argument("--upload", default="gpu-upload", help="`train.gpu_transfer bundle`'s folder (default: %(default)s)")
    p.add_argument("--work", default="/tmp/gpu", help="the recipes' folder (default: %(default)s)")
    p.add_argument("--minutes", type=float, default=6.0,
                   help="pretraining time budget (default: %(default)s; 0: none, the classifier of -- --init alone)")
    p.add_argument("--seeds", type=seed_value, nargs="+", default=[0],
                   help="fine-tuning seeds there, all at once (default: %(default)s: one, as a check; with `-- "
                        "--tapt-minutes M --imdb-stage` they follow the shipped classifier's recipe, TAPT and one "
                        "IMDB stage, which otherwise runs here on CPU from the returned encoder, about an hour)")
    p.add_argument("--deadline-s", type=float, default=520, help="seconds for the recipe(s) (default: %(default)s)")
    p.add_argument("--retry-lr", type=float, default=5e-4, help="peak lr of the retry (default: %(default)s)")
    p.add_argument("--cache-dir", default=None,
                   help="where pretraining (and TAPT) cache their packed rows (train.recipe --cache-dir; default: "
                        "WORK/cache, shared by the first run and the retry; '' = no cache)")
    p.add_argument("--tests", default=TESTS, help="pytest arguments run alongside, '' for none (default: %(default)s)")
    p.add_argument("recipe_args", nargs=argparse.REMAINDER, help="after --: more train.recipe options")
    args = p.parse_args(argv)
    args.recipe_args = [a for a in args.recipe_args if a != "--"]
    # checked here, before the device's minutes run: what the recipe would refuse only after starting up, and
    # folders the session could not write (--out: the parts were packed into it only at the end)
    for option, folder in (("--out", args.out), ("--work", args.work)):
        if problem := writable_folder(folder, option):
            p.error(problem)
    if args.minutes < 0 or args.deadline_s <= 0:
        p.error(f"--minutes must be at least 0 (0 = no pretraining) and --deadline-s positive, got {args.minutes:g} "
                f"and {args.deadline_s:g}")
    if args.minutes == 0 and "--init" not in args.recipe_args:
        p.error("--minutes 0 (no pretraining) fine-tunes an encoder that came with the tree: give it after --, "
                "e.g. -- --init assets/mini-roberta-mlm")
    if not (Path(args.upload) / "data").is_dir():
        p.error(f"--upload {args.upload}: no data/ folder in it (write it with `python -m train.gpu_transfer "
                "bundle --out FOLDER`)")
    try:
        check_bundle(args.upload)
    except ValueError as err:
        p.error(f"--upload {err}")
    from .recipe import build_parser as recipe_parser

    recipe_parser().parse_args(recipe_argv(args, Path(args.work) / "run")[3:])  # its options, as it will read them
    if any((Path(args.work) / name).exists() for name in ("run", "retry")):
        p.error(f"--work {args.work} holds an earlier session's runs, which the recipe would take as done: choose "
                "another --work or delete that folder")
    return args


def main(argv=None) -> int:
    return session(parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(exit_code(main))
