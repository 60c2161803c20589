"""Where and how training runs: processes (DDP), device, precision, randomness, and how a script ends.

Exit codes, the same for every script in `train/` and `scripts/`:

    0    finished
    1    failed: training diverged (nan/inf), or an unexpected error (with its traceback)
    2    user error: a bad option or a missing, unreadable or malformed file; one line `error: ...` naming
         it (argparse's own convention for a bad option)
    130  interrupted (SIGINT/SIGTERM, anywhere in a script's main: `exit_codes.sigterm_as_interrupt`, and while it
         starts or ends: `exit_codes.stop_cleanly_outside_main`); a training script in its training loop saved a
         checkpoint first
"""
from __future__ import annotations

import contextlib
import datetime
import os
import platform
import random
import re
import shlex
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.distributed as torch_dist

from roberta.devices import parse_device
from roberta.loss import enable_fast_cpu_math

from .exit_codes import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USER_ERROR, exit_code  # noqa: F401 (re-exported)
from .exit_codes import USER_ERRORS, UserError, naming, report_user_error  # noqa: F401 (re-exported)
from .exit_codes import sigterm_as_interrupt, with_how_to_go_on
from .paths import WRITE_PROBE_PREFIX, output_file, output_folder  # noqa: F401 (re-exported)

try:
    import fcntl
except ImportError:  # Windows: training there takes no lock on its --out
    fcntl = None

# Whether this is Windows, in one place: the modules that act otherwise there read it as `runtime.WINDOWS` when
# they act, so that a test emulates Windows for all of them with one monkeypatch of this name
WINDOWS = os.name == "nt"

# What makes cmd.exe or PowerShell read a word otherwise unless it is in double quotes: a space or tab splits it,
# '' is no empty word there, and the others are their operators (&, |, <, >, ^, cmd's; ( ) , ; { } ', PowerShell's)
_WINDOWS_QUOTED = re.compile(r"""[\s"&|<>^(),;{}']""")


def shown_command(words) -> str:
    """A command as printed for a person to type (a resume line, a plan's step, a hint), quoted for this system's
    shell: on POSIX as `shlex.join` ('a b', ''), which cmd.exe and PowerShell do not read back ('' is two quote
    characters there); on Windows in double quotes, escaped by the rules every Windows program (python.exe, through
    its C runtime) splits its command line by, which `subprocess.list2cmdline` writes too: backslashes are
    characters except before a quote. `$` and `%` stay each shell's. A command recorded in a file (metrics.json,
    a plan) stays POSIX whatever the system: it is read back with `shlex.split`."""
    words = [str(word) for word in words]
    if not WINDOWS:
        return shlex.join(words)
    return " ".join(_windows_word(word) for word in words)


def _windows_word(word: str) -> str:
    if word and not _WINDOWS_QUOTED.search(word):
        return word
    quoted = re.sub(r'(\\*)"', r'\1\1\\"', word)  # backslashes before a quote doubled, and the quote escaped
    trailing = len(quoted) - len(quoted.rstrip("\\"))  # ... and before the closing quote
    return '"' + quoted + "\\" * trailing + '"'


EXIT_DIVERGED = EXIT_FAILED
EXIT_CODES_HELP = """
exit codes:
  0    finished (a length limit or --time-budget-min was reached); the output folder is written
  1    training failed: the loss or gradient became nan/inf (the message names the last good checkpoint),
       or an unexpected error (with its traceback)
  2    user error: a bad option or a missing, unreadable or malformed file (a one-line `error: ...` naming it)
  130  interrupted (SIGINT/SIGTERM): the line says how to go on. Once the run has a checkpoint (a signal in the
       training loop saves one; after the loop, in the final evaluation, calibration or scores, the last one is
       there): the same command plus --resume. Stopped before its first checkpoint with a log or checkpoints/ in
       OUT: the same command plus --resume too, which starts the run over. Stopped in its setup before that:
       "interrupted" alone, run the command again
"""


class TrainingDiverged(Exception):
    """The loss or the gradient became nan/inf."""




def writable_folder(path, option: str = "--out") -> str | None:
    """Why `path` cannot be a folder to write (None: it can): a file there or in its way, or a place this process
    may not write (checked where the folder, or its nearest existing parent, is): what a script checks before its
    work, which an --out it could not write threw away (a tokenizer trained for minutes, a corpus packed, a
    GPU session's parts)."""
    try:
        path = output_folder(path, option)  # a file there: "--out X is a file, not a folder"
    except NotADirectoryError as err:
        return str(err)
    existing = next(p for p in [path.absolute(), *path.absolute().parents] if p.exists())
    if not existing.is_dir():
        return f"{option} {path}: {existing} is a file, not a folder"
    try:  # a folder made and removed there: permissions, a read-only file system (root passes os.access)
        tempfile.TemporaryDirectory(dir=existing, prefix=WRITE_PROBE_PREFIX).cleanup()
    except OSError as err:
        return f"{option} {path}: cannot write in {existing} ({err.strerror or err})"
    return None


def check_writable_folder(path, option: str = "--out") -> Path:
    """`path` as a Path if a script can write the folder there (`writable_folder`), else a PermissionError (an
    OSError: every script's one `error:` line) saying why."""
    if problem := writable_folder(path, option):
        raise PermissionError(problem)
    return Path(path)


def progress_bars(no_progress: bool = False) -> bool:
    """Whether to draw progress bars: not when asked not to, nor when stderr is not a terminal (a log file
    or a pipe would get every redraw, carriage returns and all, as one endless line)."""
    return not no_progress and sys.stderr.isatty()


def run_main(run, args) -> int:
    """Set up processes, call `run(args, dist) -> exit code`, and turn expected failures into exit codes:
    user errors (bad options, missing or malformed files, Hub unreachable) -> 2 with one line, a diverged run
    -> 1, Ctrl-C or SIGTERM outside the training loop (setup, the final evaluation, calibration and scoring) ->
    130 with "interrupted" (`sigterm_as_interrupt`; inside the loop the trainer saves a checkpoint first and the
    script returns 130 itself). Set TRAIN_DEBUG=1 to see the traceback of a user error."""
    dist = None
    try:
        with sigterm_as_interrupt():
            dist = init_distributed()
            code = run(args, dist)
            # every process ends together: one that left first (the other ranks return as soon as training ends)
            # tore its process group down while rank 0 still wrote the model, and sometimes died of it (SIGABRT,
            # "terminate called without an active exception"), which stopped rank 0 mid-export
            dist.barrier()
            return code
    except USER_ERRORS as err:
        if isinstance(err, OSError):  # a failed write (a full disk): named, with how to go on with the run
            from .reporting import how_to_go_on

            err = with_how_to_go_on(err, args.out, lambda: how_to_go_on(Path(args.out)), always=True)
        return report_user_error(err)
    except TrainingDiverged as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_DIVERGED
    except KeyboardInterrupt:
        print(_interrupted(args), file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        release_folder_locks()  # --out is free again whatever ended the script (an experiment's next step, a test)
        if dist is not None:
            dist.close()


def _interrupted(args) -> str:
    """The line of a training script interrupted outside its training loop: "interrupted", and how to go on when
    its --out holds a run: from its last checkpoint (stopped after the loop, in the final evaluation, calibration
    or scores; or in the setup of a resumed run), or, when it stopped before its first checkpoint (a second Ctrl-C
    cut that save short), --resume all the same, which starts the run over."""
    from .checkpointing import CHECKPOINTS, Checkpoints
    from .reporting import LOG_NAME, how_to_go_on, resume_hint

    out = getattr(args, "out", None)
    if not out:
        return "interrupted"
    if Checkpoints(out).latest("step") is not None:
        return f"interrupted: {out} holds the run's last checkpoint; {resume_hint()}"
    if (Path(out) / CHECKPOINTS).is_dir() or (Path(out) / LOG_NAME).is_file():  # without --resume: refused
        return f"interrupted: {how_to_go_on(Path(out))}"
    return "interrupted"


# ----------------------------------------------------------------------------------------------------------
# One process trains into a folder at a time
# ----------------------------------------------------------------------------------------------------------
LOCK_NAME = ".lock"  # in --out while a process trains there: its process id, under an exclusive flock
_held_locks: dict[Path, int] = {}  # this process's locks (`lock_folder`): the lock file -> its open descriptor
_made_folders: set[Path] = set()  # the folders `lock_folder` created: removed at release if nothing came in them


def lock_folder(folder) -> None:
    """Take FOLDER/.lock for this process: an exclusive `flock`, with the process id written in the file. Another
    process training into the same --out (a second terminal; a scheduler's requeue with --resume) appended its
    steps to the same log and wrote over the same checkpoints; it is now refused in a line naming this one. The
    kernel drops the lock when the process ends, however it ends (a kill -9 leaves the file, unlocked: the next run
    takes it); `release_folder_locks` drops it when a script's main returns. Taking it again in the process that
    holds it does nothing. On a file system without flock (some network mounts) the run goes on without one.
    FOLDER is created when missing (and removed at release if the run put nothing in it: a refused command)."""
    path = Path(folder) / LOCK_NAME
    if not path.parent.is_dir():
        path.parent.mkdir(parents=True)
        _made_folders.add(path.parent.absolute())
    held = _held_locks.pop(path.absolute(), None)
    if held is not None:
        if _is_open_as(held, path):
            _held_locks[path.absolute()] = held
            return
        os.close(held)  # its file was deleted since (the folder removed and made again): lock the new one
    if fcntl is None:
        return
    for _ in range(3):  # the file may be deleted by its releasing holder between our open and our flock: again
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise UserError(_locked_by(folder, path)) from None
        except OSError:  # no flock here
            os.close(fd)
            return
        if _is_open_as(fd, path):
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
            _held_locks[path.absolute()] = fd
            return
        os.close(fd)


def check_not_locked(folder) -> None:
    """A UserError naming the process that trains into `folder` when another holds its lock (`lock_folder`): what a
    training script checks with its options (which take nothing: an experiment checks its steps' options up front,
    in its own process), before it reads any data."""
    path = Path(folder) / LOCK_NAME
    held = _held_locks.get(path.absolute())
    if fcntl is None or not path.is_file() or (held is not None and _is_open_as(held, path)):
        return
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # gone since, or not ours to read: the lock itself decides
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)  # taken and dropped at once: free
    except BlockingIOError:
        raise UserError(_locked_by(folder, path)) from None
    except OSError:
        pass
    finally:
        os.close(fd)


def release_folder_locks() -> None:
    """Drop this process's folder locks (`lock_folder`) and delete their files (a finished run's folder is a model
    folder: no lock file in it); the file goes first, so that a process that opens it meanwhile finds it locked or
    gone (`lock_folder` checks that the file it locked is still the one at the path)."""
    while _held_locks:
        path, fd = _held_locks.popitem()
        with contextlib.suppress(OSError):
            if _is_open_as(fd, path):
                path.unlink()
        os.close(fd)
    while _made_folders:
        with contextlib.suppress(OSError):  # not empty: the run's
            _made_folders.pop().rmdir()


def _is_open_as(fd: int, path: Path) -> bool:
    """Whether the open file `fd` is the file now at `path` (not one deleted, or replaced, since it was opened)."""
    try:
        opened, there = os.fstat(fd), os.stat(path)
    except OSError:
        return False
    return (opened.st_dev, opened.st_ino) == (there.st_dev, there.st_ino)


def _locked_by(folder, path: Path) -> str:
    """The refusal's line: the process id the lock file holds (written by its holder once it had the lock)."""
    with contextlib.suppress(OSError, UnicodeDecodeError):
        holder = path.read_text(encoding="utf-8").strip()
        if holder.isdigit():
            return (f"{folder} is being trained by process {holder} (it holds {path}): let it finish or stop it, or "
                    "choose another --out")
    return f"{folder} is being trained by another process (it holds {path}): let it finish or stop it, or choose " \
        "another --out"


# ----------------------------------------------------------------------------------------------------------
# Processes
# ----------------------------------------------------------------------------------------------------------
@dataclass
class Dist:
    """This process's place in a (possibly one-process) run."""
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    device: torch.device = torch.device("cpu")

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.world_size > 1

    def all_reduce(self, tensor: torch.Tensor, op=None) -> torch.Tensor:
        if self.distributed:
            moved = tensor.to(self.device)
            torch_dist.all_reduce(moved, op=op or torch_dist.ReduceOp.SUM)
            tensor = moved.cpu()
        return tensor

    def barrier(self) -> None:
        if self.distributed:
            torch_dist.barrier()

    def close(self) -> None:
        if self.distributed and torch_dist.is_initialized():
            torch_dist.destroy_process_group()


def init_distributed() -> Dist:
    """One process, or one of WORLD_SIZE processes started by torchrun (gloo on CPU, nccl on GPU)."""
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    rank, local_rank = int(os.environ.get("RANK", "0")), int(os.environ.get("LOCAL_RANK", "0"))
    if torch.cuda.is_available():
        if local_rank >= torch.cuda.device_count():  # else CUDA's 'invalid device ordinal' from set_device
            raise UserError(f"process {local_rank} of a node asks for CUDA device {local_rank}, but "
                            f"this machine shows {torch.cuda.device_count()}: start one process per GPU (torchrun "
                            f"--nproc_per_node {torch.cuda.device_count()}), or hide the GPUs "
                            f"(CUDA_VISIBLE_DEVICES=) to train data-parallel on the CPU")
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
    else:
        device = torch.device("cpu")
        enable_fast_cpu_math()  # denormal softmax probabilities make CPU matmuls 10-30x slower
    if world_size > 1 and not torch_dist.is_initialized():
        torch_dist.init_process_group("nccl" if device.type == "cuda" else "gloo",
                                      timeout=datetime.timedelta(minutes=60))
    return Dist(rank, world_size, local_rank, device)


# ----------------------------------------------------------------------------------------------------------
# Device and precision
# ----------------------------------------------------------------------------------------------------------
def device_option(value: str, option: str = "--device") -> str:
    """A script's device option as typed ("cpu", "cuda", "cuda:N", or -1 and N as the package's message offers them:
    "01" is device 1), checked by the package's own rule (`roberta.devices.parse_device`: the CPU or a CUDA device of
    this machine), as a torch device name. A ValueError names the value as typed."""
    number = int(value) if re.fullmatch(r"-?\d+", value) else None
    try:
        return str(parse_device(value if number is None else number, option))
    except ValueError as err:  # the package's check names the CUDA device an int N stands for
        raise ValueError(str(err).replace(f"{option} 'cuda:{number}'", f"{option} {value!r}")) from None


def _cpu_has_bf16_matmul() -> bool:
    """Native bf16 matrix products: AMX tiles (Intel Sapphire Rapids and later) or AVX512-BF16 (AMD Zen 4+,
    Intel Cooper Lake); on such CPUs bf16 autocast trains much faster than fp32 (docs/training-notes.md)."""
    return any(bool(getattr(torch.cpu, probe, lambda: False)())
               for probe in ("_is_amx_tile_supported", "_is_avx512_bf16_supported"))


CPU_DEFAULT_PRECISION = "bf16" if _cpu_has_bf16_matmul() else "fp32"  # what --precision auto means on CPU


def resolve_precision(precision: str, device: torch.device) -> str:
    if precision == "auto":
        if device.type == "cuda":
            return "bf16" if torch.cuda.is_bf16_supported() else "fp32"
        return CPU_DEFAULT_PRECISION
    warn_if_bf16_is_emulated(precision, device)
    return precision


def warn_if_bf16_is_emulated(precision: str, device: torch.device):
    """bf16 autocast on a CPU without AMX or AVX512-BF16 runs, but emulated: measured on a 2-core AVX2 EPYC, one
    mini training step took 62-67 s in bf16 against 2.0 s in fp32."""
    if precision == "bf16" and device.type == "cpu" and CPU_DEFAULT_PRECISION != "bf16":
        print("warning: --precision bf16 on a CPU without native bf16 matrix products (no AMX or AVX512-BF16) is "
              "emulated, about 30x slower than fp32; --precision auto picks fp32 here", file=sys.stderr)


def autocast(device: torch.device, precision: str):
    """bf16 autocast (matrix products in bf16, reductions and the loss in fp32), or nothing for fp32."""
    if precision == "bf16":
        return torch.autocast(device.type, dtype=torch.bfloat16)
    return contextlib.nullcontext()


def hardware_info(dist: Dist, precision: str) -> dict:
    info = {"device": str(dist.device), "processes": dist.world_size, "precision": precision,
            "torch": torch.__version__, "torch_threads": torch.get_num_threads(), "python": platform.python_version()}
    if dist.device.type == "cuda":
        info["gpu"] = torch.cuda.get_device_name(dist.device)
    else:
        info["cpu"] = _cpu_name()
        info["cpu_count"] = os.cpu_count()
    return info


def _cpu_name() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


# ----------------------------------------------------------------------------------------------------------
# Randomness (every generator training draws from), as weights_only-loadable values
# ----------------------------------------------------------------------------------------------------------
def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def rng_state(device: torch.device = torch.device("cpu")) -> dict:
    """This process's generators: the CPU's (torch, Python, numpy) and, when it computes on a GPU, that device's
    alone (`cuda`), not every visible one's: the machine that resumes may show fewer. A checkpoint keeps rank 0's
    (the other ranks re-seed from the seed, their rank and the step: `train.trainer.Trainer`)."""
    np_state = np.random.get_state()
    state = {
        "torch": torch.get_rng_state(),
        "python": random.getstate(),
        "numpy": {"name": np_state[0], "keys": torch.from_numpy(np_state[1].astype(np.int64)),
                  "pos": int(np_state[2]), "has_gauss": int(np_state[3]), "gauss": float(np_state[4])},
    }
    if device.type == "cuda":
        state["cuda"] = torch.cuda.get_rng_state(device)
    return state


def set_rng_state(state: dict, device: torch.device = torch.device("cpu")) -> None:
    """Restore `rng_state(device)`."""
    torch.set_rng_state(state["torch"])
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    n = state["numpy"]
    np.random.set_state((n["name"], n["keys"].numpy().astype(np.uint32), n["pos"], n["has_gauss"], n["gauss"]))
    cuda = state.get("cuda")
    if isinstance(cuda, (list, tuple)):
        # a checkpoint from before: one state per GPU its machine showed: this device's, or the first where that
        # machine showed fewer GPUs than this device's index
        index = device.index or 0
        cuda = cuda[index] if index < len(cuda) else next(iter(cuda), None)
    if cuda is not None and device.type == "cuda":
        torch.cuda.set_rng_state(cuda, device)
