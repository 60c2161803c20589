"""The training machinery shared by `train.pretrain` and `train.finetune`.

A script describes *what* to train as a `Task` (how to build a batch, its loss, how to evaluate); the
`Trainer` here does the rest, the same way for both:

- AdamW with RoBERTa's betas (0.9, 0.98) and eps 1e-6, no weight decay on biases and LayerNorm weights;
  linear warmup, then linear (or cosine) decay; gradient clipping; gradient accumulation.
- Device and precision: CUDA with bf16 autocast when there is a GPU; on CPU fp32 or bf16 autocast
  (`--precision`, default CPU_DEFAULT_PRECISION); optional `torch.compile`.
- Length: --max-steps, --epochs, --token-budget fix the schedule; with only --time-budget-min the lr decay
  follows the clock (rank 0's, shared with the other ranks) and reaches 0 when the time is up.
- Data order: epoch e visits the rows in a permutation seeded by (seed, e). A step takes the next
  `--batch-size` rows (the *global* batch, wrapping around at the end of the epoch, so every batch is full).
- Several processes (`torchrun --nproc_per_node N`, DistributedDataParallel): every rank builds the same
  global batch (masking included, from identically seeded generators), keeps its own 1/N slice of the rows
  and runs forward/backward on that slice only. The loss is normalised by the *global* number of targets,
  so the summed gradient equals the single-process one: the global batch does not depend on N.
- Logging: a tqdm bar (loss, lr, tokens/s), `log.jsonl` (every logged step and every evaluation),
  `curves.png` (matplotlib). Only rank 0 writes anything.
- Checkpoints in OUT/checkpoints/step-NNNNNNNN/: `model.safetensors` (weights; never pickle) and
  `trainer.pt` (optimizer, RNG, data position, masker, counters: tensors and plain Python values only, so
  `torch.load(..., weights_only=True)` reads it). Each is written into a temporary folder next to it,
  fsync'ed, read back, and the folder is renamed into place; the previous checkpoint is deleted only after
  that, and one older step checkpoint is always kept. `--resume` continues from the latest one (on CPU the
  result is bit-identical to an uninterrupted run); if that one cannot be read (a truncated file), it is
  moved aside as bad-step-NNNNNNNN, the file is named, and the previous checkpoint is used.
- SIGINT/SIGTERM: finish the current step, save a checkpoint, exit with code 130.
  A non-finite loss or gradient stops the run (exit code 1) before the optimizer touches the weights.
- Exit codes (EXIT_CODES_HELP, shown by each script's --help): 0 finished, 1 training failed, 2 user error
  (a one-line `error: ...` naming the option or file), 130 interrupted.
"""
from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import math
import os
import platform
import random
import shlex
import shutil
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.distributed as torch_dist
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from roberta.config import PRESETS
from roberta.model import enable_fast_cpu_math


def _cpu_has_bf16_matmul() -> bool:
    """Native bf16 matrix products: AMX tiles (Intel Sapphire Rapids and later) or AVX512-BF16 (AMD Zen 4+,
    Intel Cooper Lake); on such CPUs bf16 autocast trains much faster than fp32."""
    return any(bool(getattr(torch.cpu, probe, lambda: False)())
               for probe in ("_is_amx_tile_supported", "_is_avx512_bf16_supported"))


# What --precision auto means on CPU ("fp32" or "bf16"). Measured (mini preset, median step time):
# 2-core Xeon with AMX, batch 32 x 128: fp32 1.23 s/step, bf16 autocast 0.71 s/step;
# 2-core AMD EPYC with AVX512-BF16, no AMX: batch 32 x 64 fp32 0.79 s, bf16 0.51 s; 64 x 128 fp32 2.97 s,
# bf16 1.57 s. Without either, bf16 autocast is usually slower than fp32.
CPU_DEFAULT_PRECISION = "bf16" if _cpu_has_bf16_matmul() else "fp32"
BETAS, EPS = (0.9, 0.98), 1e-6  # RoBERTa's Adam settings (Liu et al. 2019, table 9)
CHECKPOINTS = "checkpoints"
LOG_NAME, CURVES_NAME = "log.jsonl", "curves.png"
EXIT_INTERRUPTED, EXIT_DIVERGED, EXIT_USER_ERROR = 130, 1, 2
EXIT_CODES_HELP = """
exit codes:
  0    finished (a length limit or --time-budget-min was reached); the output folder is written
  1    training failed: the loss or gradient became nan/inf (the message names the last good checkpoint),
       or an unexpected error (with its traceback)
  2    user error: a bad option or a missing, unreadable or malformed file (a one-line `error: ...` naming it)
  130  interrupted (SIGINT/SIGTERM): a checkpoint was saved; continue with the same command plus --resume
"""
MAX_NEW_MODEL_LENGTH = max(c.max_length for c in PRESETS.values())  # 512: a new model's longest --max-length
TRAINER_STATE_KEYS = ("step", "tokens", "epoch", "batch_in_epoch", "elapsed", "optimizer", "rng", "task", "args")


class UserError(Exception):
    """A problem with the command line or the input files: reported as `error: ...`, without a traceback."""


class CheckpointError(UserError):
    """A checkpoint file that cannot be read (truncated, corrupt); the message names the file."""


class TrainingDiverged(Exception):
    """The loss or the gradient became nan/inf."""


# ----------------------------------------------------------------------------------------------------------
# Command line
# ----------------------------------------------------------------------------------------------------------
def script_parser(module: str, doc: str) -> argparse.ArgumentParser:
    """`python -m MODULE`'s parser: the docstring's first paragraph above the options, the rest below."""
    summary, _, details = doc.partition("\n\n")
    return argparse.ArgumentParser(prog=f"python -m {module}", description=summary, epilog=details,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)


def add_training_args(parser: argparse.ArgumentParser, *, batch_size: int, lr: float, warmup: float,
                      weight_decay: float, eval_every: int, out: str, max_length: int | None) -> None:
    """The options every training script shares; the script chooses the defaults of its recipe."""
    parser.epilog = (parser.epilog or "").rstrip("\n") + "\n" + EXIT_CODES_HELP
    g = parser.add_argument_group("model")
    g.add_argument("--preset", default="mini", help="model size preset from roberta.PRESETS (default: %(default)s)")
    for name, help_ in [("--hidden-size", "hidden size"), ("--layers", "number of encoder layers"),
                        ("--heads", "attention heads"), ("--intermediate-size", "feed-forward size")]:
        g.add_argument(name, type=int, default=None, help=f"override the preset's {help_}")
    g.add_argument("--max-length", type=int, default=max_length,
                   help="tokens per input, <s> and </s> included. A new model gets a position table of this "
                        f"length (at most {MAX_NEW_MODEL_LENGTH}, RoBERTa's); an --init model fixes its own "
                        f"maximum (finetune cuts inputs to it) (default: {max_length or 'the preset maximum'})")
    g.add_argument("--dropout", type=float, default=None,
                   help="override hidden and attention dropout (the preset has 0.1; 0 makes runs comparable "
                        "across process counts)")

    g = parser.add_argument_group("optimisation")
    g.add_argument("--batch-size", type=int, default=batch_size,
                   help="sequences per optimizer step, summed over processes and accumulation (default: %(default)s)")
    g.add_argument("--grad-accum", type=int, default=1,
                   help="split each batch into this many micro-batches to save memory (default: %(default)s)")
    g.add_argument("--lr", type=float, default=lr, help="peak learning rate (default: %(default)s)")
    g.add_argument("--warmup", type=float, default=warmup,
                   help="warmup: a number of steps, or a fraction of the run if below 1 (default: %(default)s)")
    g.add_argument("--schedule", choices=["linear", "cosine"], default="linear",
                   help="decay after warmup (default: %(default)s)")
    g.add_argument("--weight-decay", type=float, default=weight_decay,
                   help="AdamW weight decay, not applied to biases and LayerNorm (default: %(default)s)")
    g.add_argument("--clip-grad", type=float, default=1.0,
                   help="gradient-norm clipping, 0 = off (default: %(default)s)")

    g = parser.add_argument_group("length of the run (the first limit reached ends it)")
    g.add_argument("--max-steps", type=int, default=None, help="optimizer steps")
    g.add_argument("--epochs", type=float, default=None, help="passes over the training rows")
    g.add_argument("--token-budget", type=float, default=None, help="training tokens (padding not counted), e.g. 2e7")
    g.add_argument("--time-budget-min", type=float, default=None,
                   help="wall-clock minutes of training (evaluations and checkpoints included; setup and the "
                        "final evaluation not; summed over resumed sessions). Without --max-steps/--epochs/"
                        "--token-budget, the lr decay after warmup follows the clock and reaches 0 when the "
                        "time is up")

    g = parser.add_argument_group("run")
    g.add_argument("--out", default=out, help="output folder (default: %(default)s)")
    g.add_argument("--resume", action="store_true", help="continue the run in --out from its latest checkpoint")
    g.add_argument("--seed", type=int, default=0,
                   help="seed of initialisation, data order, masks, dropout (default: %(default)s)")
    g.add_argument("--eval-every", type=int, default=eval_every, help="evaluate every N steps, 0 = only at the end "
                                                                      "(default: %(default)s)")
    g.add_argument("--log-every", type=int, default=10, help="write a log line every N steps (default: %(default)s)")
    g.add_argument("--save-every-min", type=float, default=30.0,
                   help="checkpoint every N minutes (default: %(default)s)")
    g.add_argument("--save-every", type=int, default=0, help="also checkpoint every N steps, 0 = off")
    g.add_argument("--keep-checkpoints", action="store_true",
                   help="keep OUT/checkpoints after a finished run (default: removed, the folder is Hub-ready)")
    g.add_argument("--precision", choices=["auto", "fp32", "bf16"], default="auto",
                   help="autocast dtype (default: %(default)s = bf16 on CUDA; on CPU bf16 with AMX or "
                        "AVX512-BF16, else fp32; "
                        f"here {CPU_DEFAULT_PRECISION})")
    g.add_argument("--compile", action="store_true", help="torch.compile the model")
    g.add_argument("--no-progress", action="store_true", help="no progress bar")


def card_recipe(args, drop=()) -> dict:
    """What a model card shows of the recipe: the command line, then every option that is set."""
    skip = {"resume", "out", "no_progress", "keep_checkpoints", *drop}
    return {"command": args._command, **{k: v for k, v in vars(args).items()
                                         if not k.startswith("_") and k not in skip and v is not None}}


def command_line(module: str, argv) -> str:
    """The command that reproduces this run."""
    args = sys.argv[1:] if argv is None else list(argv)
    return shlex.join(["python", "-m", module, *args])


def run_cli(parser: argparse.ArgumentParser, run, argv=None, module: str = "") -> int:
    """Parse, set up processes, call `run(args, dist) -> exit code`; turn expected failures into messages.

    User errors (bad options, missing or malformed files, Hub unreachable) print `error: ...` without a
    traceback and return 2; a diverged run returns 1; Ctrl-C during setup returns 130.
    Set TRAIN_DEBUG=1 to see the traceback of a user error. `args._command` is the reproducing command.
    """
    args = parser.parse_args(argv)
    args._command = command_line(module, argv)
    dist = None
    try:
        dist = init_distributed()
        return run(args, dist)
    except (UserError, OSError, ValueError) as err:  # ValueError includes train.data.DataError
        if os.environ.get("TRAIN_DEBUG"):
            raise
        print(f"error: {err}", file=sys.stderr)
        return EXIT_USER_ERROR
    except TrainingDiverged as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_DIVERGED
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        if dist is not None:
            dist.close()


# ----------------------------------------------------------------------------------------------------------
# Processes, device, precision
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
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
    else:
        device = torch.device("cpu")
        enable_fast_cpu_math()  # denormal softmax probabilities make CPU matmuls 10-30x slower
    if world_size > 1 and not torch_dist.is_initialized():
        torch_dist.init_process_group("nccl" if device.type == "cuda" else "gloo",
                                      timeout=datetime.timedelta(minutes=60))
    return Dist(rank, world_size, local_rank, device)


def shape_options_given(args, *extra: str) -> list[str]:
    """The model-shape options (--hidden-size, --layers, --heads, --intermediate-size, and `extra` attribute
    names such as "max_length") set on the command line: refused when a pretrained model fixes the shape."""
    names = ("hidden_size", "layers", "heads", "intermediate_size", *extra)
    return ["--" + n.replace("_", "-") for n in names if getattr(args, n) is not None]


def model_config(args, tokenizer):
    """A RobertaConfig from --preset and its overrides (--hidden-size, --layers, --heads, --intermediate-size,
    --max-length, --dropout), with the vocabulary and special ids of `tokenizer`."""
    from roberta import RobertaConfig

    overrides = {"hidden_size": args.hidden_size, "num_hidden_layers": args.layers,
                 "num_attention_heads": args.heads, "intermediate_size": args.intermediate_size}
    overrides = {k: v for k, v in overrides.items() if v is not None}
    if args.dropout is not None:
        overrides.update(hidden_dropout_prob=args.dropout, attention_probs_dropout_prob=args.dropout)
    try:
        config = RobertaConfig.from_preset(args.preset, tokenizer=tokenizer, **overrides)
        if args.max_length is not None:
            # any length used to be accepted, and the first step of a huge one ran for many minutes without
            # answering SIGINT/SIGTERM (attention grows with the square of the length)
            if not 3 <= args.max_length <= MAX_NEW_MODEL_LENGTH:
                raise ValueError(f"--max-length must be between 3 and {MAX_NEW_MODEL_LENGTH} (RoBERTa's longest "
                                 f"input, the roberta-base preset's), got {args.max_length}")
            config.max_position_embeddings = args.max_length + config.pad_token_id + 1
        config.__post_init__()
    except ValueError as err:
        raise UserError(str(err)) from None
    return config


def resolve_precision(precision: str, device: torch.device) -> str:
    if precision == "auto":
        if device.type == "cuda":
            return "bf16" if torch.cuda.is_bf16_supported() else "fp32"
        return CPU_DEFAULT_PRECISION
    return precision


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
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


# ----------------------------------------------------------------------------------------------------------
# Optimizer and learning-rate schedule
# ----------------------------------------------------------------------------------------------------------
def param_groups(model: torch.nn.Module, weight_decay: float) -> list[dict]:
    """Weight decay on matrices (linear and embedding weights) only, not on biases and LayerNorm weights."""
    decay, no_decay = [], []
    for _, param in model.named_parameters():
        if param.requires_grad:
            (decay if param.ndim >= 2 else no_decay).append(param)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def make_optimizer(model: torch.nn.Module, lr: float, weight_decay: float, groups=None) -> torch.optim.AdamW:
    """AdamW over `groups` (default `param_groups`); a group's optional "lr_scale" multiplies the scheduled lr."""
    return torch.optim.AdamW(groups or param_groups(model, weight_decay), lr=lr, betas=BETAS, eps=EPS)


def decay(progress: float, schedule: str = "linear") -> float:
    """From 1 at progress 0 to 0 at progress 1."""
    progress = min(max(progress, 0.0), 1.0)
    return 0.5 * (1 + math.cos(math.pi * progress)) if schedule == "cosine" else 1.0 - progress


def lr_factor(step: int, warmup: int, total: int | None, schedule: str = "linear",
              time_progress: float | None = None) -> float:
    """Multiplier of the peak lr for optimizer step `step` (1, 2, ...): linear warmup over `warmup` steps,
    then decay to 0 at step `total` (the last step still gets a small positive lr).
    Without `total` (only a time budget), the decay follows `time_progress`: the share of the time left
    after warmup that has been used, so it reaches 0 when the time is up, however fast the machine is."""
    if step <= warmup:
        return step / warmup
    if total is None:
        return 1.0 if time_progress is None else decay(time_progress, schedule)
    return decay((step - warmup - 1) / max(1, total - warmup), schedule)  # 1 right after warmup


# ----------------------------------------------------------------------------------------------------------
# Random state (every generator training draws from), as weights_only-loadable values
# ----------------------------------------------------------------------------------------------------------
def rng_state() -> dict:
    np_state = np.random.get_state()
    state = {
        "torch": torch.get_rng_state(),
        "python": random.getstate(),
        "numpy": {"name": np_state[0], "keys": torch.from_numpy(np_state[1].astype(np.int64)),
                  "pos": int(np_state[2]), "has_gauss": int(np_state[3]), "gauss": float(np_state[4])},
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict) -> None:
    torch.set_rng_state(state["torch"])
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    n = state["numpy"]
    np.random.set_state((n["name"], n["keys"].numpy().astype(np.uint32), n["pos"], n["has_gauss"], n["gauss"]))
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


# ----------------------------------------------------------------------------------------------------------
# Atomic checkpoints
# ----------------------------------------------------------------------------------------------------------
def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Checkpoints:
    """OUT/checkpoints/step-NNNNNNNN/ (for --resume) and best-NNNNNNNN/ (best evaluation so far).

    A checkpoint is written into `.tmp-*` in the same folder, every file fsync'ed and read back, then renamed
    into place (a rename is atomic). Older ones are deleted only after that; of the step checkpoints the
    newest two are kept, so that --resume can fall back when the latest is damaged afterwards.
    """

    keep = {"step": 2, "best": 1}

    def __init__(self, out: Path):
        self.root = Path(out) / CHECKPOINTS

    def _dirs(self, kind: str) -> list[Path]:
        if not self.root.is_dir():
            return []
        return sorted(p for p in self.root.glob(f"{kind}-*") if p.is_dir() and p.name[len(kind) + 1:].isdigit())

    def latest(self, kind: str = "step") -> Path | None:
        dirs = self._dirs(kind)
        return dirs[-1] if dirs else None

    @staticmethod
    def step_of(path: Path) -> int:
        return int(path.name.split("-")[-1])

    def save(self, kind: str, step: int, model_state: dict, trainer_state: dict | None = None,
             extra_json: dict | None = None) -> Path:
        self.root.mkdir(parents=True, exist_ok=True)
        final = self.root / f"{kind}-{step:08d}"
        tmp = self.root / f".tmp-{kind}-{step:08d}-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        try:
            tensors = {k: v.detach().contiguous().cpu() for k, v in model_state.items()}
            save_file(tensors, str(tmp / "model.safetensors"))
            if trainer_state is not None:
                with open(tmp / "trainer.pt", "wb") as f:
                    torch.save(trainer_state, f)
            if extra_json is not None:
                (tmp / "info.json").write_text(json.dumps(extra_json, indent=2) + "\n")
            for file in tmp.iterdir():
                _fsync(file)
            _fsync(tmp)
            self.load(tmp, trainer_state=trainer_state is not None)  # verified before the old ones go
            if final.exists():  # the same step saved twice (e.g. a signal right after a periodic save)
                shutil.rmtree(final)
            os.replace(tmp, final)
            _fsync(self.root)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        older, n = [d for d in self._dirs(kind) if d.name < final.name], self.keep.get(kind, 1)
        keep = {final, *(older[-(n - 1):] if n > 1 else [])}
        for old in self._dirs(kind):
            if old not in keep:
                shutil.rmtree(old, ignore_errors=True)
        return final

    @staticmethod
    def load(path: Path, device="cpu", trainer_state: bool | None = None) -> tuple[dict, dict | None]:
        """(weights, trainer state or None); `trainer_state=True` requires trainer.pt. A file that cannot be
        read, or a trainer state that lacks TRAINER_STATE_KEYS, raises CheckpointError naming the file."""
        file = Path(path) / "model.safetensors"
        try:
            weights = load_file(str(file), device=str(device))
        except (SafetensorError, OSError) as err:
            raise CheckpointError(f"{file}: unreadable (truncated or corrupt?): {err}") from None
        file = Path(path) / "trainer.pt"
        if trainer_state is None:
            trainer_state = file.exists()
        if not trainer_state:
            return weights, None
        try:
            state = torch.load(file, map_location=device, weights_only=True)
        except Exception as err:  # a missing file, a truncated zip, an unpicklable value: the same answer
            raise CheckpointError(f"{file}: unreadable (truncated or corrupt?): {err}") from None
        missing = [k for k in TRAINER_STATE_KEYS if k not in state] if isinstance(state, dict) else "everything"
        if missing:
            raise CheckpointError(f"{file}: not a complete trainer state (missing {missing})")
        return weights, state

    def clean_partial(self, after_step: int | None = None) -> None:
        """Remove temporary folders of a crashed save and (on resume) best-* newer than the resume point."""
        if not self.root.is_dir():
            return
        for tmp in self.root.glob(".tmp-*"):
            shutil.rmtree(tmp, ignore_errors=True)
        if after_step is not None:
            for best in self._dirs("best"):
                if self.step_of(best) > after_step:
                    shutil.rmtree(best, ignore_errors=True)


# ----------------------------------------------------------------------------------------------------------
# What a script provides
# ----------------------------------------------------------------------------------------------------------
class Task:
    """A training job seen by the Trainer. Batches are dicts of CPU tensors whose first dimension is the row."""

    num_rows: int = 0  # training examples (rows) per epoch
    best_metric: str | None = None  # an evaluation metric to maximise: keep the best checkpoint

    def make_batch(self, indices: torch.Tensor, epoch: int) -> dict:
        """The global batch of rows `indices` (the same on every process, randomness included)."""
        raise NotImplementedError

    def micro_batch(self, batch: dict, rows: slice) -> dict:
        """Rows `rows` of a batch (a script may also trim padding here)."""
        return {k: v[rows] for k, v in batch.items()}

    def num_targets(self, batch: dict) -> int:
        """What the loss averages over (masked tokens, examples): the loss is normalised by the global count."""
        raise NotImplementedError

    def num_tokens(self, batch: dict) -> int:
        """Real (not padding) tokens in the batch, for throughput and token budgets."""
        raise NotImplementedError

    def tokens_per_row(self) -> float:
        """Average real tokens in a row (turns --token-budget into a number of steps)."""
        raise NotImplementedError

    def loss_sum(self, model, batch: dict) -> torch.Tensor:
        """The loss summed (not averaged) over the batch's targets."""
        raise NotImplementedError

    def evaluate(self, model) -> dict:
        """Held-out metrics (called on rank 0 with the bare model in eval mode)."""
        return {}

    def param_groups(self, model, weight_decay: float) -> list[dict] | None:
        """The optimizer's parameter groups, each may carry an "lr_scale" (e.g. layer-wise lr decay);
        None: `param_groups` (one lr for all)."""
        return None

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, state: dict) -> None:
        pass


@dataclass
class Result:
    status: str  # "done" (a length limit was reached), "time" (time budget), "interrupted"
    step: int
    tokens: int
    elapsed: float  # training wall time, summed over resumed sessions (seconds)
    best: dict | None  # {"step": ..., metric: ...} of the best evaluation
    best_path: Path | None  # its checkpoint folder
    last_eval: dict | None


# ----------------------------------------------------------------------------------------------------------
# The training loop
# ----------------------------------------------------------------------------------------------------------
class Trainer:
    def __init__(self, model: torch.nn.Module, task: Task, args, dist: Dist, out: Path):
        self.task, self.args, self.dist, self.out = task, args, dist, Path(out)
        self.ckpt = Checkpoints(self.out)
        self.precision = resolve_precision(args.precision, dist.device)
        batch, world, accum = args.batch_size, dist.world_size, args.grad_accum
        if batch < 1 or accum < 1 or batch % (world * accum):
            raise UserError(f"--batch-size ({batch}) must be a positive multiple of processes ({world}) "
                            f"x --grad-accum ({accum})")
        if task.num_rows < 1:
            raise UserError("there are no training rows")
        self.steps_per_epoch = math.ceil(task.num_rows / batch)

        self.model = model.to(dist.device)  # the bare model: saving, evaluation
        self.optimizer = make_optimizer(self.model, args.lr, args.weight_decay,
                                        task.param_groups(self.model, args.weight_decay))
        self.step = self.tokens = self.epoch = self.batch_in_epoch = 0
        self.elapsed = 0.0
        self.total_steps = self._planned_steps()
        self.best: dict | None = None
        self.last_eval: dict | None = None
        self.clock = 0.0  # rank 0's training time at the last step: the same on every process
        self.decay_start: float | None = None  # time-budget schedule: `clock` when warmup ended
        self._stop_signal: int | None = None
        self._saved_step = -1
        self._order: tuple[int, torch.Tensor] | None = None  # (epoch, its permutation of the rows)
        if args.resume:
            self.resumed_from = self._resume()
        else:
            self.resumed_from = None
            self._prepare_fresh_out()
        # Randomness of each process: rank 0 continues the seeded (or restored) stream; other ranks get
        # their own (dropout differs per rank, as with any data-parallel run).
        if dist.rank > 0:
            torch.manual_seed(args.seed * 1000 + dist.rank + self.step * 7919)

        self.train_model = self.model
        if dist.distributed:
            from torch.nn.parallel import DistributedDataParallel as DDP
            self.train_model = DDP(self.model, device_ids=[dist.local_rank] if dist.device.type == "cuda" else None)
        if args.compile:
            self.train_model = torch.compile(self.train_model)

    # ----- length of the run -----
    def _planned_steps(self) -> int | None:
        """Steps of the lr schedule, from the length options (the time budget is converted later)."""
        a, limits = self.args, []
        if a.max_steps is not None:
            limits.append(a.max_steps)
        if a.epochs is not None:
            limits.append(math.ceil(a.epochs * self.steps_per_epoch))
        if a.token_budget is not None:
            limits.append(math.ceil(a.token_budget / (a.batch_size * self.task.tokens_per_row())))
        if not limits and a.time_budget_min is None:
            raise UserError("say how long to train: --max-steps, --epochs, --token-budget or --time-budget-min")
        if not limits and 0 < a.warmup < 1:
            raise UserError("with only --time-budget-min the number of steps is not known in advance: "
                            "give --warmup as a number of steps")
        if limits and min(limits) < 1:
            raise UserError(f"the run would have {min(limits)} steps")
        return min(limits) if limits else None

    @property
    def warmup_steps(self) -> int:
        w = self.args.warmup
        if w < 1:  # a fraction of the run
            return round(w * self.total_steps) if self.total_steps else 0
        return int(w)

    # ----- output folder, resume -----
    def _prepare_fresh_out(self) -> None:
        if self.dist.is_main:
            if (self.out / CHECKPOINTS).exists() or (self.out / LOG_NAME).exists():
                raise UserError(f"{self.out} already holds a run; pass --resume to continue it, "
                                "or choose another --out")
            self.out.mkdir(parents=True, exist_ok=True)
        self.dist.barrier()

    def _resume(self) -> Path | None:
        path = self.ckpt.latest("step")
        if path is None:
            if (self.out / "metrics.json").exists():
                raise UserError(f"{self.out} holds a finished run (metrics.json) and no checkpoint to resume")
            if self.dist.is_main:
                self._say(f"--resume: no checkpoint in {self.out}; starting a new run")
                self.out.mkdir(parents=True, exist_ok=True)
                self.ckpt.clean_partial(after_step=-1)
                _truncate_log(self.out / LOG_NAME, -1)  # from a run stopped before its first checkpoint
            self.dist.barrier()
            return path
        weights, state, path = self._load_latest_readable(path)
        try:
            self.model.load_state_dict(weights)
        except RuntimeError as err:
            raise UserError(f"{path} does not fit this model (were the model options changed?): {err}") from err
        try:
            self.optimizer.load_state_dict(state["optimizer"])
        except (ValueError, KeyError) as err:
            raise UserError(f"{path / 'trainer.pt'}: its optimizer state does not fit this model: {err}") from None
        for key in ("step", "tokens", "epoch", "batch_in_epoch"):
            setattr(self, key, int(state[key]))
        self.elapsed = self.clock = float(state["elapsed"])
        self.decay_start = state.get("decay_start")
        # the length options of *this* command count (a resumed run may be extended); the others should not change
        self.best = state.get("best")
        self.last_eval = state.get("last_eval")
        self.task.load_state_dict(state["task"])
        set_rng_state(state["rng"])
        ignored = ("resume", "out", "no_progress", "keep_checkpoints")
        changed = {k: (v, getattr(self.args, k, None)) for k, v in state["args"].items()
                   if k not in ignored and getattr(self.args, k, None) != v}
        if self.dist.is_main:
            if changed:
                self._say("warning: options differ from the checkpointed run: " +
                          ", ".join(f"{k} {old!r} -> {new!r}" for k, (old, new) in changed.items()))
            self.ckpt.clean_partial(after_step=self.step)
            _truncate_log(self.out / LOG_NAME, self.step)
            self._say(f"resumed from {path} (step {self.step}, {self.tokens:,} tokens)")
        return path

    def _load_latest_readable(self, path: Path) -> tuple[dict, dict, Path]:
        """The newest step checkpoint that can be read, from `path` back; damaged ones are named, and moved
        aside (bad-step-NNNNNNNN) by rank 0, so that the next --resume does not trip over them again."""
        candidates = [d for d in self.ckpt._dirs("step") if d.name <= path.name][::-1]
        bad = []
        for candidate in candidates:
            try:
                weights, state = self.ckpt.load(candidate, self.dist.device, trainer_state=True)
            except CheckpointError as err:
                bad.append((candidate, err))
                self._say(f"warning: cannot resume from {candidate.name}: {err}")
                continue
            if bad and self.dist.is_main:
                for folder, _ in bad:
                    aside = folder.with_name("bad-" + folder.name)
                    shutil.rmtree(aside, ignore_errors=True)
                    os.replace(folder, aside)
                self._say(f"falling back to the previous checkpoint {candidate} (the damaged one was moved to "
                          f"{bad[0][0].with_name('bad-' + bad[0][0].name).name})")
            return weights, state, candidate
        raise CheckpointError(f"no readable checkpoint to resume from in {self.ckpt.root}: " +
                              "; ".join(str(err) for _, err in bad))

    def _trainer_state(self) -> dict:
        args = {k: v for k, v in vars(self.args).items()
                if not k.startswith("_") and isinstance(v, (int, float, str, bool, type(None)))}
        return {
            "step": self.step, "tokens": self.tokens, "epoch": self.epoch, "batch_in_epoch": self.batch_in_epoch,
            "elapsed": self.elapsed, "decay_start": self.decay_start,
            "total_steps": -1 if self.total_steps is None else self.total_steps,
            "optimizer": self.optimizer.state_dict(), "rng": rng_state(), "task": self.task.state_dict(),
            "best": self.best, "last_eval": self.last_eval, "args": args, "world_size": self.dist.world_size,
        }

    def save_checkpoint(self) -> Path | None:
        path = None
        if self.dist.is_main:
            if self._saved_step == self.step:
                return self.ckpt.latest("step")
            path = self.ckpt.save("step", self.step, self.model.state_dict(), self._trainer_state())
        self._last_save, self._saved_step = time.monotonic(), self.step
        return path

    # ----- data order -----
    def _next_indices(self) -> tuple[torch.Tensor, int]:
        """Rows of the next global batch: positions batch_in_epoch*B ... of this epoch's permutation."""
        if self.batch_in_epoch >= self.steps_per_epoch:
            self.epoch, self.batch_in_epoch = self.epoch + 1, 0
        if self._order is None or self._order[0] != self.epoch:  # a pure function of (seed, epoch)
            generator = torch.Generator().manual_seed(self.args.seed * 100_003 + self.epoch)
            self._order = (self.epoch, torch.randperm(self.task.num_rows, generator=generator))
        b = self.args.batch_size
        positions = torch.arange(self.batch_in_epoch * b, (self.batch_in_epoch + 1) * b) % self.task.num_rows
        self.batch_in_epoch += 1
        return self._order[1][positions], self.epoch  # the last batch wraps around to the epoch's start

    # ----- one optimizer step -----
    def _train_step(self, time_up: bool) -> tuple[float, float, int, bool, bool]:
        """-> (loss, lr, tokens, some process got a signal, time is up); all processes get the same answer."""
        a, dist = self.args, self.dist
        indices, epoch = self._next_indices()
        batch = self.task.make_batch(indices, epoch)
        targets = max(1, self.task.num_targets(batch))
        per_rank = a.batch_size // dist.world_size
        micro = per_rank // a.grad_accum
        lr = a.lr * lr_factor(self.step, self.warmup_steps, self.total_steps, a.schedule, self._time_progress())
        for group in self.optimizer.param_groups:
            group["lr"] = lr * group.get("lr_scale", 1.0)

        self.train_model.train()
        loss_sum = torch.zeros((), device=dist.device)
        for i in range(a.grad_accum):
            start = dist.rank * per_rank + i * micro
            part = {k: v.to(dist.device) for k, v in self.task.micro_batch(batch, slice(start, start + micro)).items()}
            last = i == a.grad_accum - 1
            sync = contextlib.nullcontext() if last or not dist.distributed else self.train_model.no_sync()
            with sync:
                with autocast(dist.device, self.precision):
                    loss = self.task.loss_sum(self.train_model, part)
                # DDP averages gradients over processes: scale so that the result is sum / global targets
                (loss * dist.world_size / targets).backward()
            loss_sum += loss.detach().float()
        grad_norm = torch.nn.utils.clip_grad_norm_(
            self.model.parameters(), a.clip_grad if a.clip_grad > 0 else float("inf"))
        # One all-reduce: the global loss, whether any process wants to stop (signal, time budget), and
        # rank 0's clock (so that a time-based lr is the same on every process)
        flags = torch.tensor([loss_sum.item(), float(self._stop_signal is not None), float(time_up),
                              self.elapsed if dist.is_main else 0.0], dtype=torch.float64)
        flags = dist.all_reduce(flags)
        self.clock = flags[3].item()
        loss_value = flags[0].item() / targets
        if not (math.isfinite(loss_value) and math.isfinite(grad_norm.item())):
            what = "loss" if not math.isfinite(loss_value) else "gradient norm"
            value = loss_value if what == "loss" else grad_norm.item()
            last = self.ckpt.latest("step")
            raise TrainingDiverged(f"{what} became {value} at step {self.step}; the weights of this step were not "
                                   f"updated or saved; last good checkpoint: {last if last else 'none'} "
                                   f"(try a lower --lr, more --warmup or --clip-grad)")
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.tokens += self.task.num_tokens(batch)
        return loss_value, lr, self.task.num_tokens(batch), bool(flags[1] > 0), bool(flags[2] > 0)

    def _time_progress(self) -> float | None:
        """Only a time budget: the share of the budget after warmup that is used (drives the lr decay)."""
        if self.total_steps is not None or self.args.time_budget_min is None or self.step <= self.warmup_steps:
            return None
        if self.decay_start is None:
            self.decay_start = self.clock
        budget = self.args.time_budget_min * 60
        return (self.clock - self.decay_start) / max(budget - self.decay_start, 1e-9)

    # ----- evaluation -----
    def evaluate(self) -> dict | None:
        """Held-out metrics on rank 0 (training randomness untouched), logged; saves a new best checkpoint."""
        metrics = None
        if self.dist.is_main:
            saved_rng = rng_state()
            self.model.eval()
            with torch.no_grad(), autocast(self.dist.device, self.precision):
                metrics = self.task.evaluate(self.model)
            self.model.train()
            set_rng_state(saved_rng)
            # the log's own fields win; a metric with the same name (e.g. "tokens" evaluated) gets a prefix
            metrics = {(f"eval_{k}" if k in ("type", "step", "tokens", "elapsed_s") else k): v
                       for k, v in metrics.items()}
            self.last_eval = {"step": self.step, **metrics}
            self._log({"type": "eval", "step": self.step, "tokens": self.tokens,
                       "elapsed_s": round(self.elapsed, 2), **metrics})
            name = self.task.best_metric
            if name is not None and (self.best is None or metrics[name] > self.best[name]):
                self.best = {"step": self.step, name: metrics[name]}
                self.ckpt.save("best", self.step, self.model.state_dict(), extra_json=self.last_eval)
            self.write_curves()
            shown = ", ".join(f"{k} {v:.4g}" for k, v in metrics.items() if isinstance(v, float))
            self._say(f"eval at step {self.step}: {shown}")
        self.dist.barrier()
        return metrics

    # ----- the loop -----
    def fit(self) -> Result:
        a = self.args
        session_start = time.monotonic()
        elapsed_at_start = self.elapsed
        self._last_save = time.monotonic()
        previous = {sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
        bar = self._progress_bar()
        window_loss = window_tokens = window_steps = 0
        window_start = time.monotonic()
        status = "done"
        last_eval_step = self.last_eval["step"] if self.last_eval else None
        try:
            if self.step == 0 and a.eval_every:
                self.evaluate()  # the starting point of the curves
                last_eval_step = 0
            while True:
                if self.total_steps is not None and self.step >= self.total_steps:
                    break
                if a.token_budget is not None and self.tokens >= a.token_budget:
                    break
                self.elapsed = elapsed_at_start + time.monotonic() - session_start
                time_up = a.time_budget_min is not None and self.elapsed >= a.time_budget_min * 60
                self.step += 1
                loss, lr, tokens, interrupted, time_up = self._train_step(time_up)
                self.elapsed = elapsed_at_start + time.monotonic() - session_start

                window_loss, window_tokens, window_steps = window_loss + loss, window_tokens + tokens, window_steps + 1
                now = time.monotonic()
                tok_s = window_tokens / max(now - window_start, 1e-9)
                if bar is not None:
                    if bar.total != self.total_steps:
                        bar.total = self.total_steps
                    bar.set_postfix(loss=f"{loss:.4f}", lr=f"{lr:.2e}", tok_s=f"{tok_s:,.0f}", refresh=False)
                    bar.update(1)
                if self.step % a.log_every == 0 or self.step == self.total_steps:
                    self._log({"type": "train", "step": self.step, "tokens": self.tokens,
                               "loss": round(window_loss / window_steps, 6), "lr": lr,
                               "tokens_per_s": round(tok_s, 1), "elapsed_s": round(self.elapsed, 2),
                               "epoch": self.epoch})
                    window_loss = window_tokens = window_steps = 0
                    window_start = now
                if a.eval_every and self.step % a.eval_every == 0:
                    self.evaluate()
                    last_eval_step = self.step
                if interrupted or time_up:
                    status = "interrupted" if interrupted else "time"
                    break
                due_minutes = a.save_every_min and time.monotonic() - self._last_save >= a.save_every_min * 60
                if (a.save_every and self.step % a.save_every == 0) or due_minutes:
                    self.save_checkpoint()
            if status != "interrupted" and last_eval_step != self.step:
                self.evaluate()  # the end point of the curves (and a candidate for the best checkpoint)
            self.elapsed = elapsed_at_start + time.monotonic() - session_start
            path = self.save_checkpoint()
            if status == "interrupted" and self.dist.is_main:
                self._say(f"interrupted at step {self.step}: checkpoint saved to {path}; "
                          f"continue with the same command plus --resume")
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            if bar is not None:
                bar.close()
        if self.dist.is_main:
            self.write_curves()
        best_path = self.ckpt.latest("best") if self.task.best_metric else None
        return Result(status, self.step, self.tokens, self.elapsed, self.best, best_path, self.last_eval)

    def _on_signal(self, signum, frame):
        if self._stop_signal is not None and signum == signal.SIGINT:
            raise KeyboardInterrupt  # second Ctrl-C: stop now, without a checkpoint
        self._stop_signal = signum
        if self.dist.is_main:
            print(f"\n{signal.Signals(signum).name}: saving a checkpoint after this step "
                  "(Ctrl-C again to quit without saving)", file=sys.stderr, flush=True)

    # ----- output -----
    def _progress_bar(self):
        if not self.dist.is_main or self.args.no_progress:
            return None
        from tqdm.auto import tqdm
        return tqdm(total=self.total_steps, initial=self.step, desc="train", unit="step", dynamic_ncols=True)

    def _say(self, message: str) -> None:
        if self.dist.is_main:
            from tqdm.auto import tqdm
            tqdm.write(message, file=sys.stderr)

    def _log(self, entry: dict) -> None:
        if self.dist.is_main:
            with open(self.out / LOG_NAME, "a") as f:
                f.write(json.dumps(entry) + "\n")

    def write_curves(self) -> None:
        if self.dist.is_main:
            plot_curves(self.out / LOG_NAME, self.out / CURVES_NAME)

    def cleanup(self) -> None:
        """After the final folder is written: drop the checkpoints (unless --keep-checkpoints)."""
        if self.dist.is_main and not self.args.keep_checkpoints:
            shutil.rmtree(self.ckpt.root, ignore_errors=True)


def _truncate_log(path: Path, step: int) -> None:
    """Forget log lines written after the checkpoint we resume from (they will be written again)."""
    if not path.exists():
        return
    kept = [line for line in path.read_text().splitlines() if line.strip() and json.loads(line)["step"] <= step]
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(line + "\n" for line in kept))
    os.replace(tmp, path)


def read_log(path: Path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def plot_curves(log_path: Path, png_path: Path) -> None:
    """Training loss and evaluation metrics against tokens seen."""
    if not Path(log_path).exists():
        return
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    entries = read_log(log_path)
    train = [e for e in entries if e["type"] == "train"]
    evals = [e for e in entries if e["type"] == "eval"]
    other = [k for k in ("accuracy", "f1") if any(k in e for e in evals)]
    fig, axes = plt.subplots(1, 1 + bool(other), figsize=(11 if other else 6, 4), squeeze=False)
    ax = axes[0][0]
    if train:
        ax.plot([e["tokens"] for e in train], [e["loss"] for e in train], label="train loss", lw=1)
    if any("loss" in e for e in evals):
        ax.plot([e["tokens"] for e in evals if "loss" in e], [e["loss"] for e in evals if "loss" in e],
                "o-", label="eval loss", ms=3)
    ax.set(xlabel="tokens seen", ylabel="loss", title="loss")
    ax.legend()
    ax.grid(alpha=0.3)
    if other:
        ax = axes[0][1]
        for key in other:
            ax.plot([e["tokens"] for e in evals if key in e], [e[key] for e in evals if key in e], "o-",
                    label=f"eval {key}", ms=3)
        ax.set(xlabel="tokens seen", title="evaluation")
        ax.legend()
        ax.grid(alpha=0.3)
    fig.tight_layout()
    tmp = Path(png_path).with_suffix(".tmp.png")
    fig.savefig(tmp, dpi=100)
    plt.close(fig)
    os.replace(tmp, png_path)
