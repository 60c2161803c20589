"""The training loop shared by `train.pretrain` and `train.finetune`.

A script describes *what* to train as a `Task` (how to build a batch, its loss, how to evaluate) and *how* as
`TrainingArguments` (`train.arguments`); the `Trainer` does the rest, the same way for both:

- AdamW with RoBERTa's betas and eps, no weight decay on biases and LayerNorm weights; warmup, then linear or
  cosine decay; gradient clipping and accumulation (`train.optim`).
- Device and precision: CUDA with bf16 autocast when there is a GPU; on CPU fp32 or bf16 autocast
  (`--precision`); optional `torch.compile` of the encoder (`compile_encoder`).
- Length: --max-steps, --epochs, --token-budget fix the schedule (a warmup of the run's steps or more is warned
  about: the lr would never decay); with only --time-budget-min the lr decay follows the clock (rank 0's, shared
  with the other ranks) and reaches 0 when the time is up, and a fractional --warmup is that share of the time
  left once the first step is over (the step-0 evaluation and compiling do not count, nor a resumed session's
  first step).
- Data order: epoch e visits the rows in a permutation seeded by (seed, e). A step takes the next
  `--batch-size` rows (the *global* batch, wrapping around at the end of the epoch, so every batch is full).
  `--batch-order length` regroups each permutation so that a batch holds rows of similar length
  (`length_grouped`): fine-tuning pads a batch to its longest row, and SST-2's phrases (3-66 tokens, <s> and
  </s> included) in random batches of 32 are 2.9x their real tokens, grouped 1.04x (the 55,841 rows beside the
  calibration slice, two epochs). The trainer state records the version of that order (`LENGTH_GROUPED_SCHEME`): a run
  resumed in the middle of an epoch that began in an earlier version's order finishes the epoch in it.
- Several processes (`torchrun --nproc_per_node N`, DistributedDataParallel): every rank builds the same
  global batch (masking included, from identically seeded generators), keeps its own 1/N slice of the rows
  and runs forward/backward on that slice only. The loss is normalised by the *global* number of targets,
  so the summed gradient equals the single-process one: the global batch does not depend on N.
- Logging: a tqdm bar (loss, lr, tokens/s), `log.jsonl` and `curves.png` (`train.reporting`); only rank 0
  writes anything.
- Checkpoints (`train.checkpointing`): `--resume` continues from the latest one (on CPU the result is
  bit-identical to an uninterrupted run with a step limit; under --time-budget-min the lr follows the training
  time, which no two runs share, so the steps replayed after a resume are close, not identical); if that one
  cannot be read (a truncated file), it is moved aside as bad-step-NNNNNNNN, the file is named, and the
  previous checkpoint is used. A checkpoint carries the run's training time and its wall time (`wall_time_s()`:
  the earlier sessions', to the checkpoint resumed, plus this one's since the script's `started`), so both cover
  every session of a resumed run. --resume refuses other model shapes and attention heads, and a fine-tuning's
  other held-out rows (`train.resume_checks`), other optimizer groups (`optimizer_does_not_fit`) and a moving average
  the run did not keep, and warns about other options, which take effect (the optimizer's too: `OWN_GROUP_SETTINGS`),
  and other training data at the same paths (`Task.training_data`). One process at a time trains into --out: it
  holds OUT/.lock (`runtime.lock_folder`).
- SIGINT/SIGTERM: finish the current step, save a checkpoint (its trainer state says `stopped_by` the signal;
  the checkpoint at the end of any fit says why it ended), exit with code 130. After the last step too: the
  closing evaluation is cut short (on one process), the last step's checkpoint is saved, and --resume evaluates
  again. A non-finite loss or gradient stops the run (exit code 1) before the optimizer touches the weights.
"""
from __future__ import annotations

import contextlib
import hashlib
import math
import os
import shutil
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from .arguments import NOT_RECIPE, TrainingArguments
from .checkpointing import CheckpointError, Checkpoints
from .optim import lr_factor, make_optimizer
from .out_folder import check_fresh_out, check_options, check_restart_out, lock_out
from .reporting import CURVES_NAME, LOG_NAME, append_log, plot_curves, resume_hint, truncate_log
from .resume_checks import (architecture_differs, does_not_fit, held_out_rows_differ, model_architecture,
                            recorded_order_scheme)
from .runtime import (Dist, TrainingDiverged, UserError, autocast, progress_bars, resolve_precision, rng_state,
                      set_rng_state)


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

    def row_lengths(self) -> torch.Tensor | None:
        """Real tokens of every row (for --batch-order length); None: the rows have no lengths to group by."""
        return None

    def evaluate(self, model) -> dict:
        """Held-out metrics (called on rank 0 with the bare model in eval mode)."""
        return {}

    def param_groups(self, model, weight_decay: float) -> list[dict] | None:
        """The optimizer's parameter groups, each may carry an "lr_scale" (e.g. layer-wise lr decay);
        None: `param_groups` (one lr for all). The options it reads are listed in `GROUP_OPTIONS`."""
        return None

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, state: dict) -> None:
        pass

    def training_data(self) -> dict:
        """What identifies the rows trained on, kept in the trainer state and compared on --resume (a tokenizer
        retrained in place, a corpus edited at its path: the same options, other data): their number and a digest
        of the tensors the task holds (a pretraining's token ids, a fine-tuning's ids and labels)."""
        tensors = [value for _, value in sorted(vars(self).items()) if isinstance(value, torch.Tensor)]
        return {"rows": self.num_rows, "digest": tensor_digest(tensors)}


def tensor_digest(tensors: list[torch.Tensor]) -> str:
    """A short fingerprint of the values of `tensors` (their dtypes and shapes included), the same on any device."""
    digest = hashlib.sha256()
    for tensor in tensors:
        tensor = tensor.detach().cpu().contiguous()
        digest.update(f"{tensor.dtype} {tuple(tensor.shape)};".encode())
        digest.update(tensor.reshape(-1).view(torch.uint8).numpy())  # the bytes as they are, not copied
    return digest.hexdigest()[:16]


# The version of `length_grouped`'s order, kept in the trainer state ("batch_order_scheme"): the rest of an epoch a
# checkpoint stopped in is ordered as the epoch began, or a resume would repeat some rows and skip others. 1: batches
# straddled length groups; 2 (since the trainer state holds warmup_paused_s, saved from the same change): they do not.
LENGTH_GROUPED_SCHEME = 2


def length_grouped(order: torch.Tensor, lengths: torch.Tensor, batch_size: int, generator: torch.Generator,
                   megabatch: int = 50, scheme: int = LENGTH_GROUPED_SCHEME) -> torch.Tensor:
    """`order` (a permutation of the rows) regrouped so that consecutive `batch_size` rows have similar lengths,
    as `transformers`' group_by_length: cut it into chunks of `megabatch` batches (a last, shorter chunk joins the
    one before it), sort each chunk by length, cut into batches; then the batches are shuffled (`generator`), so
    that the length of a batch does not drift through the epoch. Every row stays exactly once; the rows of a batch
    are still a random draw of their chunk's rows of that length.

    The trainer takes fixed slices of `batch_size` rows, the last one wrapping around to the epoch's start
    (`Trainer._next_indices`), so when the rows do not fill the batches the short one goes last, and the batch
    sorted just before it (the next shortest of its chunk) first: the wrapped slice is rows of one length group
    too. A short batch in the middle would shift every slice after it across two groups (SST-2: 1.12x the real
    tokens instead of 1.04x). `scheme` 1 shuffles the short batch with the others and lets the batches straddle
    length groups: the order of checkpoints saved before scheme 2 (`LENGTH_GROUPED_SCHEME`), kept for the rest of
    an epoch that began in it (`Trainer._keep_epoch_order`)."""
    size = batch_size * megabatch
    chunks = list(order.split(size))
    if len(chunks) > 1 and len(chunks[-1]) < size and scheme != 1:
        chunks[-2:] = [torch.cat(chunks[-2:])]
    chunks = [c[torch.argsort(lengths[c], descending=True, stable=True)] for c in chunks]
    batches = torch.cat(chunks).split(batch_size)
    if len(batches[-1]) == batch_size or len(batches) < 2 or scheme == 1:
        return torch.cat([batches[i] for i in torch.randperm(len(batches), generator=generator)])
    first, middle, short = batches[-2], batches[:-2], batches[-1]
    return torch.cat([first, *(middle[i] for i in torch.randperm(len(middle), generator=generator)), short])


class EvaluationStopped(BaseException):
    """A signal in the closing evaluation (`Trainer._closing_evaluation`): a BaseException, as KeyboardInterrupt,
    so that no `except Exception` in a task's evaluation takes it."""


@dataclass
class Result:
    status: str  # "done" (a length limit was reached), "time" (time budget), "interrupted"
    step: int
    tokens: int
    elapsed: float  # training time, summed over resumed sessions (seconds)
    best: dict | None  # {"step": ..., metric: ...} of the best evaluation
    best_path: Path | None  # its checkpoint folder
    last_eval: dict | None


# ----------------------------------------------------------------------------------------------------------
# The training loop
# ----------------------------------------------------------------------------------------------------------
def compile_encoder(model: torch.nn.Module, **compile_options) -> None:
    """`--compile`: torch.compile the encoder (`model.roberta`, else the whole model) in place, so parameter
    names, checkpoints and DDP are unchanged. Not the heads: the masked-only MLM loss gathers the masked
    positions, whose count changes every batch, and compiled, each new count is a recompilation until
    torch.compile's limit of 8 sends it back to eager (about 70 s of compiling for nothing on an H100).
    The encoder's shapes are the batch's, fixed in pretraining; the head is matrix products either way."""
    getattr(model, "roberta", model).compile(**compile_options)


# the settings of an optimizer's parameter group that the command sets (--weight-decay, --layer-lr-decay's lr scales):
# a resumed run's steps run with its command's, not with those its checkpoint's optimizer state holds, which
# `torch.optim.Optimizer.load_state_dict` puts back with the moments (the lr is set at every step)
OWN_GROUP_SETTINGS = ("weight_decay", "lr_scale")


def options_changed(recorded: dict, now: dict) -> dict:
    """The options of the recipe that this command (`now`, `TrainingArguments.recorded()`) sets otherwise than a
    checkpointed run did (`recorded`, its trainer state's "args"): field -> (the run's value, this command's)."""
    return {k: (v, now[k]) for k, v in recorded.items() if k in now and k not in NOT_RECIPE and now[k] != v}


# the recorded options that shape the optimizer's parameter groups (what `Task.param_groups` reads: fine-tuning's
# --layer-lr-decay, a group per layer below 1): the only ones that can make a checkpoint's optimizer state not fit
GROUP_OPTIONS = ("layer_lr_decay",)


def optimizer_does_not_fit(path: Path, changed: dict, err: Exception) -> str:
    """Why the optimizer state in the checkpoint's trainer.pt `path` does not load into this command's optimizer (its
    groups differ): `err`'s first line and, of the options that differ from the checkpointed run (`changed`: field ->
    (the run's value, this command's)), those that shape the groups (`GROUP_OPTIONS`), then how to go on. Not the
    others: a longer --max-steps or another --lr resumes, and undoing them would not help."""
    detail = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    differ = {f"--{name.replace('_', '-')}": changed[name] for name in GROUP_OPTIONS if name in changed}
    if not differ:
        return (f"{path}: its optimizer state does not fit this command's ({detail[:300]}): choose another --out for "
                "a new run")
    shown = ", ".join(f"{option} {old!r} (this command: {new!r})" for option, (old, new) in differ.items())
    return (f"{path}: its optimizer state does not fit this command's ({detail[:300]}): the checkpointed run's "
            f"{shown}; resume with the run's own {', '.join(differ)}, or choose another --out")


def make_ema(model: torch.nn.Module, decay: float) -> torch.optim.swa_utils.AveragedModel:
    """An exponential moving average of `model`'s parameters (torch's `AveragedModel`): the first update copies
    them, each later one moves the average (1 - decay) of the way to them, so it spans about the last
    1 / (1 - decay) steps. Its weights: `ema.module.state_dict()`, the model's own names."""
    if not 0 < decay < 1:
        raise UserError(f"the moving average's decay must be in (0, 1), got {decay}")
    from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn

    return AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(decay))


HEARTBEAT_S = 60.0  # with --no-progress (no bar), a progress line this often on stderr


class Trainer:
    """Runs one training run of a `Task` under `TrainingArguments`, the same way for pretraining and fine-tuning.

    Its life, as a script uses it:

    1. `Trainer(model, task, args)`: checks the options, plans the run's length (`total_steps`), builds the
       optimizer (and the moving average, `ema`), holds OUT/.lock, then either prepares a fresh --out or, with
       --resume, puts back the latest checkpoint's state (`_resume`).
    2. `fit()`: the loop. Steps until a length limit, the time budget or a signal ends the run, with a log entry
       every --log-every steps, an evaluation every --eval-every and checkpoints along the way; then the closing
       evaluation and the last checkpoint (`_finish`). It returns a `Result`.
    3. The script reads the `Result` (with `model`, `ema`, `wall_time_s()`, `resumed_with`), writes its final
       folder, and calls `cleanup()` to drop the checkpoints.

    `model` is the bare model (saving, evaluation); `train_model` is what forward and backward run through (DDP's
    wrapper on several processes)."""

    def __init__(self, model: torch.nn.Module, task: Task, args: TrainingArguments, dist: Dist | None = None,
                 out: Path | None = None, ema_decay: float = 0.0, started: float | None = None):
        """`ema_decay` > 0: also keep an exponential moving average of the weights (`self.ema`, updated after
        every optimizer step, checkpointed with the run); what is done with it is the script's choice.
        `started`: the `time.time()` this session of the script began (default: now), from which `wall_time_s`
        counts this session's wall time; a resumed run adds its earlier sessions' (`previous_wall_s`)."""
        dist = dist or Dist()
        self.task, self.args, self.dist, self.out = task, args, dist, Path(out or args.out)
        self.ckpt = Checkpoints(self.out, keep_all_steps=args.keep_checkpoints)
        self.precision = resolve_precision(args.precision, dist.device)
        check_options(args, dist.world_size, self.out)
        self.steps_per_epoch = self._steps_per_epoch()

        self.model = model.to(dist.device)  # the bare model: saving, evaluation
        self.optimizer = make_optimizer(self.model, args.lr, args.weight_decay,
                                        task.param_groups(self.model, args.weight_decay))
        self.ema = make_ema(self.model, ema_decay) if ema_decay else None
        # where the run is (what a checkpoint keeps, and --resume puts back)
        self.step = self.tokens = self.epoch = self.batch_in_epoch = 0
        self.elapsed = 0.0
        self.started = time.time() if started is None else started
        # the wall time of the run's earlier sessions, to the checkpoint this one resumed (0 for a new run): a
        # resumed run's metrics.json recorded only its last session's, beside a train_time_s of all of them
        self.previous_wall_s = 0.0
        self.total_steps = self._planned_steps()
        self._warn_if_warmup_is_the_whole_run()
        self.best: dict | None = None
        self.last_eval: dict | None = None
        self.clock = 0.0  # rank 0's training time at the end of the last step: the same on every process
        self.decay_start: float | None = None  # time-budget schedule: `clock` when warmup ended
        # time-budget warmup: the training time it does not count, each session's until its first step ended (the
        # step-0 evaluation, and compiling: 34 s on an H100, more than a whole 23-s warmup)
        self.warmup_paused_s = 0.0
        # this session of fit() (`fit` sets them)
        self._session_began: tuple[float, float] | None = None  # (time.monotonic(), elapsed) when fit() began
        self._session_first_step = True  # the next step is this session's first
        self._last_beat = 0.0  # with no progress bar: the time.monotonic() of the last progress line
        self._stop_signal: int | None = None
        self._stop_evaluation = False  # a signal now stops the evaluation at once (`_closing_evaluation`)
        self._curves_drawn_from: tuple[int, int] | None = None  # the log's (size, mtime) when curves.png was drawn
        # why fit() ended ("done", "time", or the signal's name, e.g. "SIGTERM"), recorded in its last checkpoint:
        # a run that stops before its end leaves there what `train.export` says of the weights (a partial model)
        self.stopped_by: str | None = None
        self.resumed_with: list[dict] = []  # options a --resume changed: [{"step": N, "changed": {option: [old, new]}}]
        # options of this command that a resumed checkpoint did not record (it came from before they existed: the run
        # started without them, whatever their value now)
        self.unrecorded_options: list[str] = []
        self._saved: tuple | None = None  # what the last checkpoint recorded (`save_checkpoint`)
        self._training_data: dict | None = None  # `task.training_data()`, once (a digest of every row)
        # the log's running window since its last train entry (checkpointed: a resumed run's entry averages the
        # whole window, not the steps after the resume alone); "seconds": training time in it before this session
        self._window = {"loss": 0.0, "tokens": 0, "steps": 0, "seconds": 0.0}
        self._window_start = time.monotonic()
        self._order: tuple[int, torch.Tensor] | None = None  # (epoch, its permutation of the rows)
        # (epoch, scheme): a resumed epoch that began in an earlier `length_grouped` scheme, finished in it
        self._earlier_scheme: tuple[int, int] | None = None
        self._row_lengths = self._lengths_to_group_by()  # (rows,), or None

        lock_out(self.out, self.dist)  # taken already by a script (right after its checks): kept
        if args.resume:
            self._resume()
        else:
            self._prepare_fresh_out()
        # Randomness of each process: rank 0 continues the seeded (or restored) stream; other ranks get
        # their own (dropout differs per rank, as with any data-parallel run).
        if dist.rank > 0:
            torch.manual_seed(args.seed * 1000 + dist.rank + self.step * 7919)
        self.train_model = self._training_model()

    def _steps_per_epoch(self) -> int:
        """Global batches in an epoch (the last one wraps around to the epoch's start, `_next_indices`). Refuses a
        task with no rows; a batch larger than the rows is said, not silent."""
        batch, rows = self.args.batch_size, self.task.num_rows
        if rows < 1:
            raise UserError("there are no training rows")
        if batch > rows and self.dist.is_main:
            print(f"warning: --batch-size {batch:,} is more than the {rows:,} training rows: every step "
                  f"repeats rows (each about {batch / rows:.1f} times)", file=sys.stderr, flush=True)
        return math.ceil(rows / batch)

    def _lengths_to_group_by(self) -> torch.Tensor | None:
        """--batch-order length: the real tokens of every row, (rows,) (`length_grouped`); else None."""
        if self.args.batch_order != "length":
            return None
        lengths = self.task.row_lengths()
        if lengths is None:
            raise UserError("--batch-order length: this task's rows have no lengths to group by")
        return lengths

    def _training_model(self) -> torch.nn.Module:
        """What forward and backward run through: on several processes DDP's wrapper of `model`, else `model`
        itself. --compile compiles the encoder in place (`compile_encoder`), under the wrapper."""
        train_model = self.model
        if self.dist.distributed:
            from torch.nn.parallel import DistributedDataParallel as DDP
            device_ids = [self.dist.local_rank] if self.dist.device.type == "cuda" else None
            train_model = DDP(self.model, device_ids=device_ids)
        if self.args.compile:
            compile_encoder(self.model)
        return train_model

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
        if limits and min(limits) < 1:
            raise UserError(f"the run would have {min(limits)} steps")
        return min(limits) if limits else None

    @property
    def warmup_steps(self) -> int:
        w = self.args.warmup
        if w < 1:  # a fraction of the run (of its time, with only a time budget: `warmup_seconds`)
            return round(w * self.total_steps) if self.total_steps else 0
        return int(w)

    @property
    def warmup_seconds(self) -> float | None:
        """Only a time budget and a fractional --warmup: the number of steps is not known in advance (it is
        what the machine gets through), so the warmup is that share of the time budget, by the clock: of the time
        left once the first step is over (`warmup_paused_s`), so that it always ends before the time is up."""
        a = self.args
        if self.total_steps is None and a.time_budget_min is not None and 0 < a.warmup < 1:
            return a.warmup * max(a.time_budget_min * 60 - self.warmup_paused_s, 0.0)
        return None

    def _warn_if_warmup_is_the_whole_run(self) -> None:
        """A warmup of at least the run's steps never decays the lr (pretraining's 300 warmup steps in a 200-step
        test run end at 2/3 of --lr, still rising): said on stderr, not refused (tiny runs are short on purpose)."""
        warmup, total = self.warmup_steps, self.total_steps
        if total is not None and warmup >= total > 0 and self.dist.is_main:
            print(f"warning: --warmup {self.args.warmup:g} is {warmup:,} steps, and the run has {total:,}: the lr "
                  f"rises for the whole run (to {lr_factor(total, warmup, total):.2g} x --lr) and never decays; pass "
                  "a --warmup below the run's steps, or a share of the run (e.g. 0.06)", file=sys.stderr, flush=True)

    # ----- output folder, resume -----
    def _prepare_fresh_out(self) -> None:
        if self.dist.is_main:
            check_fresh_out(self.out, self.args.own_files())
            self.out.mkdir(parents=True, exist_ok=True)
        self.dist.barrier()

    def _resume(self) -> None:
        """--resume: go on from the latest readable checkpoint in --out (`_restore`), keeping and saying what this
        command changes in the run (`_record_changes`); with no checkpoint there, a new run starts (`_start_over`)."""
        if self.dist.is_main:
            self.ckpt.put_back_set_aside()  # a kill in the middle of saving a step for the second time
        self.dist.barrier()
        path = self.ckpt.latest("step")
        if path is None:
            self._start_over()
            return
        weights, state, path = self._load_latest_readable(path)
        now = self.args.recorded()  # options of runs from before train.arguments that no longer exist: ignored
        self._restore(path, weights, state, now)
        if self.total_steps is not None and self.step > self.total_steps:  # (a --max-steps below it: refused earlier,
            # by `check_options`, before the data); else no step is trained and the checkpoint is saved as the run
            raise UserError(f"--resume: the checkpoint {path} is at step {self.step:,}, and this command's length "
                            f"options end the run at step {self.total_steps:,}, so nothing would be trained: resume "
                            "with the run's own --epochs or --token-budget, or choose another --out for a new run")
        self._record_changes(state, now)
        if self.dist.is_main:
            self.ckpt.clean_partial(after_step=self.step)
            # an evaluation logged at this step after its checkpoint was saved (the closing one, cut by a kill) is
            # made again: fit() evaluates when the checkpoint's last evaluation is not this step's
            truncate_log(self.out / LOG_NAME, self.step,
                         keep_eval_at_step=(self.last_eval or {}).get("step") == self.step)
            self._say(f"resumed from {path} (step {self.step}, {self.tokens:,} tokens)")

    def _start_over(self) -> None:
        """--resume with no checkpoint in --out: a new run there (what a run stopped before its first checkpoint
        left, partial checkpoints and log entries, cleared)."""
        check_restart_out(self.out, self.args.own_files())
        if self.dist.is_main:
            self._say(f"--resume: no checkpoint in {self.out}; starting a new run")
            self.out.mkdir(parents=True, exist_ok=True)
            self.ckpt.clean_partial(after_step=-1)
            truncate_log(self.out / LOG_NAME, -1)  # from a run stopped before its first checkpoint
        self.dist.barrier()

    def _restore(self, path: Path, weights: dict, state: dict, now: dict) -> None:
        """Put back the run checkpointed in `path` (its `weights` and trainer `state`): the model (refused if it has
        another architecture or, fine-tuning, other held-out rows), the optimizer (`_restore_optimizer`), the moving
        average, where the run is, its clocks, best and last evaluation, the task's state, the log window and the
        random generators. `now`: this command's recorded options."""
        try:
            self.model.load_state_dict(weights)
        except RuntimeError as err:
            raise UserError(does_not_fit(path, weights, self.model, err)) from None
        if problem := architecture_differs(path, state, self.model, now) or held_out_rows_differ(path, state, now):
            raise UserError(problem)
        self._restore_optimizer(path, state, now)
        if self.ema is not None:
            if "ema" not in state:
                raise UserError(f"{path}: the checkpointed run kept no moving average of the weights; resume "
                                "it without --ema-decay, or choose another --out for a run that keeps one")
            self.ema.load_state_dict(state["ema"])
        for key in ("step", "tokens", "epoch", "batch_in_epoch"):
            setattr(self, key, int(state[key]))
        self._keep_epoch_order(state)
        self.elapsed = self.clock = float(state["elapsed"])
        # a checkpoint from before the wall time was saved: its training time, the part of it that is known
        self.previous_wall_s = float(state.get("wall_s", state["elapsed"]))
        self.decay_start = state.get("decay_start")
        self.warmup_paused_s = float(state.get("warmup_paused_s", 0.0))  # (a checkpoint from before: none)
        # the length options of *this* command count (a resumed run may be extended); the others should not change
        self.best = state.get("best")
        self.last_eval = state.get("last_eval")
        self.task.load_state_dict(state["task"])
        self._window = dict(state.get("window", self._window))  # a checkpoint from before it was saved: none
        set_rng_state(state["rng"], self.dist.device)

    def _restore_optimizer(self, path: Path, state: dict, now: dict) -> None:
        """The checkpoint's optimizer state (AdamW's moments), with this command's own group settings
        (`OWN_GROUP_SETTINGS`), not the checkpoint's that `load_state_dict` puts back. Groups that do not fit
        (another --layer-lr-decay) are refused, naming the option that shapes them (`optimizer_does_not_fit`)."""
        own = [{k: group[k] for k in OWN_GROUP_SETTINGS if k in group} for group in self.optimizer.param_groups]
        try:
            self.optimizer.load_state_dict(state["optimizer"])
        except (ValueError, KeyError) as err:
            changed = options_changed(state["args"], now)
            raise UserError(optimizer_does_not_fit(path / "trainer.pt", changed, err)) from None
        for group, settings in zip(self.optimizer.param_groups, own):
            for key in OWN_GROUP_SETTINGS:
                group.pop(key, None)
            group.update(settings)

    def _record_changes(self, state: dict, now: dict) -> None:
        """What this command changes in the checkpointed run (`state`), kept with the run and warned about: the
        options it sets otherwise (they take effect) and, compared on rank 0, other training data at the same paths
        (`resumed_with`, which its metrics.json reports); the options the checkpoint did not record
        (`unrecorded_options`). `now`: this command's recorded options."""
        changed = options_changed(state["args"], now)
        self.unrecorded_options = sorted(k for k in now if k not in state["args"])
        data_before = state.get("training_data")  # a checkpoint from before it was kept: not compared
        if data_before is not None and self.dist.is_main and data_before != self.training_data():
            changed["training_data"] = (data_before, self.training_data())
        # kept with the run: its metrics.json says which steps ran with which options (the command it records
        # is the last one's)
        self.resumed_with = list(state.get("resumed_with", []))
        if changed:
            self.resumed_with.append({"step": self.step,
                                      "changed": {k: [old, new] for k, (old, new) in changed.items()}})
        if not self.dist.is_main:
            return
        options = {k: v for k, v in changed.items() if k != "training_data"}
        if options:
            self._say("warning: options differ from the checkpointed run: " +
                      ", ".join(f"{k} {old!r} -> {new!r}" for k, (old, new) in options.items()))
        if "training_data" in changed:
            before, after = changed["training_data"]
            rows = f"{before['rows']:,} rows" + (f" -> {after['rows']:,}" if after["rows"] != before["rows"] else
                                                 ", other token ids")
            self._say(f"warning: the training data differ from the checkpointed run's ({rows}): were the "
                      "tokenizer or the corpus changed at the same path?")

    def _keep_epoch_order(self, state: dict) -> None:
        """A checkpoint that stopped in the middle of an epoch of length-grouped batches ordered by an earlier
        `length_grouped` scheme: the rest of that epoch keeps it (said in a line), so that every row is still
        trained on once in it; the next epochs take this version's order."""
        scheme = recorded_order_scheme(state)
        grouped = state["args"].get("batch_order") == "length" and self.args.batch_order == "length"
        if not grouped or scheme == LENGTH_GROUPED_SCHEME or not 0 < self.batch_in_epoch < self.steps_per_epoch:
            return
        self._earlier_scheme = (self.epoch, scheme)
        self._say(f"note: the checkpointed run stopped after {self.batch_in_epoch:,} of the {self.steps_per_epoch:,} "
                  f"batches of an epoch, in the length-grouped order of an earlier version (scheme {scheme}; this "
                  f"version's is {LENGTH_GROUPED_SCHEME}): the rest of that epoch keeps its order, so that no row is "
                  "repeated or skipped; the next epochs take this version's")

    def _order_scheme(self) -> int:
        """The `length_grouped` scheme of the epoch in progress (`_keep_epoch_order`)."""
        earlier = self._earlier_scheme
        return earlier[1] if earlier is not None and earlier[0] == self.epoch else LENGTH_GROUPED_SCHEME

    def _load_latest_readable(self, path: Path) -> tuple[dict, dict, Path]:
        """The newest step checkpoint that can be read, from `path` back; damaged ones are named, and moved
        aside (bad-step-NNNNNNNN) by rank 0, so that the next --resume does not trip over them again."""
        candidates = [d for d in self.ckpt.dirs("step") if d.name <= path.name][::-1]
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

    def training_data(self) -> dict:
        """`task.training_data()` (rows and a digest of them), computed once: rank 0 keeps it in every checkpoint."""
        if self._training_data is None:
            self._training_data = self.task.training_data()
        return self._training_data

    def _trainer_state(self, rng: dict) -> dict:
        """What trainer.pt keeps, with `rng`, rank 0's generators (`rng_state`)."""
        args = self.args.recorded()
        return {
            "step": self.step, "tokens": self.tokens, "epoch": self.epoch, "batch_in_epoch": self.batch_in_epoch,
            "elapsed": self.elapsed, "decay_start": self.decay_start, "warmup_paused_s": self.warmup_paused_s,
            "total_steps": -1 if self.total_steps is None else self.total_steps,
            "optimizer": self.optimizer.state_dict(), "rng": rng, "task": self.task.state_dict(),
            "best": self.best, "last_eval": self.last_eval, "args": args, "world_size": self.dist.world_size,
            "resumed_with": self.resumed_with, "stopped_by": self.stopped_by, "wall_s": self.wall_time_s(),
            "window": {**self._window, "seconds": time.monotonic() - self._window_start},
            "training_data": self.training_data(), "architecture": model_architecture(self.model),
            "batch_order_scheme": self._order_scheme(),
            **({"ema": self.ema.state_dict()} if self.ema is not None else {}),
        }

    def wall_time_s(self) -> float:
        """The run's wall time so far: its earlier sessions' (to the checkpoint this one resumed) and this one's
        since `started`. What a script records as metrics.json's wall_time_s."""
        return self.previous_wall_s + time.time() - self.started

    def save_checkpoint(self) -> Path | None:
        """Save this step's checkpoint, unless the last one saved recorded all that this one would (the same step,
        last evaluation, best and end). The last checkpoint must record the closing evaluation and how the run ended
        (what --resume and train.export read), so a step is saved again when either came after a periodic save of
        it."""
        self._check_weights_finite()
        path, recorded = None, (self.step, self.last_eval, self.best, self.stopped_by)
        if self.dist.is_main:  # rank 0 alone: no collective here, as each rank decides a timed save by its own clock
            if self._saved == recorded:
                return self.ckpt.latest("step")
            path = self.ckpt.save("step", self.step, self.model.state_dict(),
                                  self._trainer_state(rng_state(self.dist.device)))
        self._last_save, self._saved = time.monotonic(), recorded
        return path

    # ----- data order -----
    def _next_indices(self) -> tuple[torch.Tensor, int]:
        """Rows of the next global batch: positions batch_in_epoch*B ... of this epoch's permutation."""
        if self.batch_in_epoch >= self.steps_per_epoch:
            self.epoch, self.batch_in_epoch = self.epoch + 1, 0
        if self._order is None or self._order[0] != self.epoch:  # a pure function of (seed, epoch)
            generator = torch.Generator().manual_seed(self.args.seed * 100_003 + self.epoch)
            order = torch.randperm(self.task.num_rows, generator=generator)
            if self._row_lengths is not None:
                order = length_grouped(order, self._row_lengths, self.args.batch_size, generator,
                                       scheme=self._order_scheme())
            self._order = (self.epoch, order)
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
        lr = a.lr * self._lr_factor()
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
        # rank 0's clock now, the step's work done (so that a time-based lr is the same on every process)
        flags = torch.tensor([loss_sum.item(), float(self._stop_signal is not None), float(time_up),
                              self._training_time() if dist.is_main else 0.0], dtype=torch.float64)
        flags = dist.all_reduce(flags)
        self._advance_clock(flags[3].item())
        loss_value = flags[0].item() / targets
        if not (math.isfinite(loss_value) and math.isfinite(grad_norm.item())):
            what = "loss" if not math.isfinite(loss_value) else "gradient norm"
            value = loss_value if what == "loss" else grad_norm.item()
            raise self._diverged(f"{what} became {value} at step {self.step}; the weights of this step were not "
                                 f"updated or saved")
        tokens = self.task.num_tokens(batch)  # before the optimizer's kernels are queued: a count on a GPU waits
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        if self.ema is not None:
            self.ema.update_parameters(self.model)
        self.tokens += tokens
        return loss_value, lr, tokens, bool(flags[1] > 0), bool(flags[2] > 0)

    def _training_time(self) -> float:
        """The run's training time now: its earlier sessions' and this one's since fit() began."""
        began, elapsed_before = self._session_began or (time.monotonic(), self.elapsed)
        return elapsed_before + time.monotonic() - began

    def _advance_clock(self, clock: float) -> None:
        """`clock`: rank 0's training time at the end of this step. A session's first step (the step-0 evaluation
        before it, compiling in it, a resumed run's recompiling) is left out of the time-budget warmup."""
        if self._session_first_step:
            self.warmup_paused_s += clock - self.clock
            self._session_first_step = False
        self.clock = clock

    def _lr_factor(self) -> float:
        """Multiplier of the peak lr for this step: `train.optim.lr_factor`, or a warmup by the clock from the end
        of the first step (it and the next have lr 0: the clock of a step is read at its end), after which the decay
        follows the clock as with any time budget."""
        warmup_s = self.warmup_seconds
        if warmup_s is not None and self.decay_start is None:
            warmed = self.clock - self.warmup_paused_s
            if warmed < warmup_s:
                return max(warmed, 0.0) / warmup_s
        return lr_factor(self.step, self.warmup_steps, self.total_steps, self.args.schedule, self._time_progress())

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
        self._check_weights_finite()
        metrics = None
        if self.dist.is_main:
            saved_rng = rng_state(self.dist.device)
            self.model.eval()
            try:  # the closing evaluation may be stopped by a signal (`_closing_evaluation`): the state stays whole
                try:
                    with torch.no_grad(), autocast(self.dist.device, self.precision):
                        metrics = self.task.evaluate(self.model)
                finally:
                    self._stop_evaluation = False  # what follows (the log, a best checkpoint) is never cut
            finally:
                self.model.train()
                set_rng_state(saved_rng, self.dist.device)
            # the log's own fields win; a metric with the same name (e.g. "tokens" evaluated) gets a prefix
            metrics = {(f"eval_{k}" if k in ("type", "step", "tokens", "elapsed_s") else k): v
                       for k, v in metrics.items()}
        self._check_held_out_loss_finite(metrics)
        if self.dist.is_main:
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
        """Train to the end of the run: the step-0 evaluation (the curves' starting point), then steps until
        --max-steps, --epochs or --token-budget is reached, the time budget is up or a process got a signal. After
        each step: the progress shown (`_show_progress`), a log entry every --log-every steps (`_log_window`), an
        evaluation every --eval-every, a checkpoint when one is due (`_checkpoint_due`). Then the closing evaluation
        and the last checkpoint (`_finish`). -> where the run ended (`Result`)."""
        a = self.args
        self._session_began = (time.monotonic(), self.elapsed)
        self._session_first_step = True
        self._last_save = time.monotonic()
        previous = {sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
        bar = self._progress_bar()
        self._last_beat = time.monotonic()
        self._window_start = self._last_beat - self._window["seconds"]
        status = "done"
        last_eval_step = self.last_eval["step"] if self.last_eval else None
        try:
            if self.step == 0 and a.eval_every:
                self.evaluate()  # the starting point of the curves
                last_eval_step = 0
            while not self._length_reached():
                self.elapsed = self._training_time()
                time_up = a.time_budget_min is not None and self.elapsed >= a.time_budget_min * 60
                self.step += 1
                loss, lr, tokens, interrupted, time_up = self._train_step(time_up)
                self.elapsed = self._training_time()
                now, tok_s = self._add_to_window(loss, tokens)
                self._show_progress(bar, now, loss, lr, tok_s)
                # every --log-every steps, and the last steps' window however the run's length was set (an
                # interrupted run's window goes on in its checkpoint)
                if self.step % a.log_every == 0 or (not interrupted and (time_up or self._length_reached())):
                    self._log_window(now, lr, tok_s)
                if a.eval_every and self.step % a.eval_every == 0:
                    self.evaluate()
                    last_eval_step = self.step
                if interrupted or time_up:
                    status = "interrupted" if interrupted else "time"
                    break
                if self._checkpoint_due():
                    self.save_checkpoint()
            status = self._finish(status, last_eval_step)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            if bar is not None:
                bar.close()
        if self.dist.is_main:
            self.write_curves()
        best_path = self.ckpt.latest("best") if self.task.best_metric else None
        return Result(status, self.step, self.tokens, self.elapsed, self.best, best_path, self.last_eval)

    def _length_reached(self) -> bool:
        """The run's length is reached: its steps (--max-steps, --epochs) or --token-budget. (The time budget is
        checked in the step, so that every process stops after the same one.)"""
        a = self.args
        if self.total_steps is not None and self.step >= self.total_steps:
            return True
        return a.token_budget is not None and self.tokens >= a.token_budget

    def _add_to_window(self, loss: float, tokens: int) -> tuple[float, float]:
        """Add the step's loss and tokens to the log window. -> (time.monotonic() now, the window's tokens/s)."""
        window = self._window
        window["loss"], window["tokens"], window["steps"] = (window["loss"] + loss, window["tokens"] + tokens,
                                                             window["steps"] + 1)
        now = time.monotonic()
        return now, window["tokens"] / max(now - self._window_start, 1e-9)

    def _show_progress(self, bar, now: float, loss: float, lr: float, tok_s: float) -> None:
        """The step on the progress bar (loss, lr, tokens/s; the time left when only a time budget sets the run's
        length). With no bar (--no-progress, or not rank 0): a plain line every HEARTBEAT_S, for logs."""
        a = self.args
        if bar is not None:
            shown = {"loss": f"{loss:.4f}", "lr": f"{lr:.2e}", "tok_s": f"{tok_s:,.0f}"}
            if self.total_steps is None and a.time_budget_min is not None:  # no step total: the time left
                left = max(a.time_budget_min * 60 - self.elapsed, 0)
                shown["left"] = f"{int(left // 60)}:{int(left % 60):02d}"
            bar.set_postfix(shown, refresh=False)
            bar.update(1)
        elif now - self._last_beat >= HEARTBEAT_S:
            self._last_beat = now
            of = f" of {self.total_steps:,}" if self.total_steps is not None else ""
            left = (f", {max(a.time_budget_min * 60 - self.elapsed, 0) / 60:.1f} min left"
                    if a.time_budget_min is not None else "")
            self._say(f"step {self.step:,}{of}: loss {loss:.4f}, lr {lr:.2e}, {tok_s:,.0f} tokens/s{left}")

    def _log_window(self, now: float, lr: float, tok_s: float) -> None:
        """A train entry in log.jsonl for the window's steps (their mean loss, tokens/s; this step's lr), then a new
        window from `now`."""
        window = self._window
        self._log({"type": "train", "step": self.step, "tokens": self.tokens,
                   "loss": round(window["loss"] / window["steps"], 6), "lr": lr,
                   "tokens_per_s": round(tok_s, 1), "elapsed_s": round(self.elapsed, 2), "epoch": self.epoch})
        window.update(loss=0.0, tokens=0, steps=0)
        self._window_start = now

    def _checkpoint_due(self) -> bool:
        """A periodic checkpoint now: every --save-every steps, or --save-every-min after the last save."""
        a = self.args
        due_minutes = a.save_every_min and time.monotonic() - self._last_save >= a.save_every_min * 60
        return bool((a.save_every and self.step % a.save_every == 0) or due_minutes)

    def _finish(self, status: str, last_eval_step: int | None) -> str:
        """After the loop, which ended with `status` ("done", "time" or "interrupted"; `last_eval_step`: its last
        evaluation's): the closing evaluation and the last checkpoint, which says why the run ended (`stopped_by`).
        -> the run's status, "interrupted" also when a signal came after the loop.

        After the loop a signal stops the run too, as it would stop the script once fit() is over (exit code 130):
        one that came in the last step's evaluation skips the closing one, one in the closing evaluation cuts it
        short (`_closing_evaluation`), one in the save below stops the run after it. The last step's checkpoint is
        saved either way, with `stopped_by` the loop's own end ("done", "time": every step ran); --resume from it
        evaluates again (a cut closing evaluation left no trace) and goes on to the script's final evaluation and
        folder."""
        ended = status
        if status != "interrupted" and self._signalled():
            status = "interrupted"
        if status != "interrupted" and last_eval_step != self.step:
            self._closing_evaluation()  # the end point of the curves (and a candidate for the best checkpoint)
        self.elapsed = self._training_time()
        signalled = ended == "interrupted" and self._stop_signal is not None  # else another process's signal
        self.stopped_by = signal.Signals(self._stop_signal).name if signalled else ended
        path = self.save_checkpoint()
        if status != "interrupted" and self._signalled():  # in the closing evaluation or the save
            status = "interrupted"
        if status == "interrupted":
            self._say_how_to_go_on(ended, path)
        return status

    def _say_how_to_go_on(self, ended: str, path: Path | None) -> None:
        """An interrupted run: where it stopped (`ended`: the loop's end), its checkpoint `path`, and how to go on
        (`RESUME_HINT_ENV`, else --resume)."""
        if not self.dist.is_main:
            return
        hint = resume_hint()
        when = f"at step {self.step}" if ended == "interrupted" else \
            f"after the last step ({self.step}), before the final evaluation"
        self._say(f"interrupted {when}: checkpoint saved to {path}; {hint}")

    def _check_weights_finite(self):
        """A step's loss and gradients can be finite while its update is not (a huge lr), and the next step, whose
        loss would show it, may never come (the run's last step) or come after a save: so every evaluation and
        checkpoint (on every process, each holding the same weights) first checks the weights."""
        bad = next((name for name, p in self.model.named_parameters() if not torch.isfinite(p).all()), None)
        if bad is not None:
            raise self._diverged(f"the weights became non-finite ({bad}) at step {self.step}; they were not saved")

    def _check_held_out_loss_finite(self, metrics: dict | None):
        """Finite weights can still be broken: one step at a huge lr leaves them near 1e30, finite, and their
        held-out loss nan. Rank 0 evaluates; every process learns the verdict (one all-reduce) and stops."""
        loss = metrics.get("loss") if metrics else None
        bad = torch.tensor([float(loss is not None and not math.isfinite(loss))], dtype=torch.float64)
        if self.dist.all_reduce(bad).item() > 0:
            raise self._diverged(f"the held-out loss became {loss if loss is not None else 'non-finite'} at step "
                                 f"{self.step}; the weights were not saved")

    def _diverged(self, what: str) -> TrainingDiverged:
        last = self.ckpt.latest("step")
        return TrainingDiverged(f"{what}; last good checkpoint: {last if last else 'none'} (try a lower --lr, more "
                                f"--warmup or --clip-grad)")

    def _signalled(self) -> bool:
        """Whether any process got SIGINT or SIGTERM (the same answer on every process)."""
        flag = torch.tensor([float(self._stop_signal is not None)], dtype=torch.float64)
        return bool(self.dist.all_reduce(flag).item() > 0)

    def _closing_evaluation(self) -> None:
        """The evaluation after the last step. On one process a signal stops it at once (`_on_signal` raises
        `EvaluationStopped` inside the task's evaluation; a scheduler's SIGTERM waited for it, ~80 s on a large
        held-out set, and the run went on to its final evaluation with exit code 0): nothing of it is kept, and
        fit() saves the last step's checkpoint. Several processes finish it (the others wait for rank 0's result
        in a collective), then stop."""
        self._stop_evaluation = not self.dist.distributed
        try:
            self.evaluate()
        except EvaluationStopped:
            pass
        finally:
            self._stop_evaluation = False

    def _on_signal(self, signum, frame):
        if self._stop_signal is not None and signum == signal.SIGINT:
            raise KeyboardInterrupt  # second Ctrl-C: stop now, without a checkpoint
        self._stop_signal = signum
        name = signal.Signals(signum).name
        if self._stop_evaluation:
            self._stop_evaluation = False
            print(f"\n{name}: stopping the closing evaluation; saving the last step's checkpoint (Ctrl-C again to "
                  "quit without saving)", file=sys.stderr, flush=True)
            raise EvaluationStopped
        if self.dist.is_main:
            print(f"\n{name}: saving a checkpoint after this step "
                  "(Ctrl-C again to quit without saving)", file=sys.stderr, flush=True)

    # ----- output -----
    def _progress_bar(self):
        if not self.dist.is_main or not progress_bars(self.args.no_progress):
            return None  # a plain line every HEARTBEAT_S instead
        from tqdm.auto import tqdm
        return tqdm(total=self.total_steps, initial=self.step, desc="train", unit="step", dynamic_ncols=True)

    def _say(self, message: str) -> None:
        if self.dist.is_main:
            from tqdm.auto import tqdm
            tqdm.write(message, file=sys.stderr)

    def _log(self, entry: dict) -> None:
        if self.dist.is_main:
            append_log(self.out / LOG_NAME, entry)

    def write_curves(self) -> None:
        """curves.png from the log, unless it was drawn from the log as it is now and is still there: the end of fit,
        then pretrain and finetune after their final metrics, ask again (a draw is about a second on a CPU, where a
        tiny run's training takes less)."""
        if not self.dist.is_main:
            return
        log, png = self.out / LOG_NAME, self.out / CURVES_NAME
        log_state = (log.stat().st_size, log.stat().st_mtime_ns) if log.is_file() else None
        if log_state is not None and log_state == self._curves_drawn_from and png.is_file():
            return
        plot_curves(log, png)
        self._curves_drawn_from = log_state

    def cleanup(self) -> None:
        """After the final folder is written: drop the checkpoints (unless --keep-checkpoints)."""
        if self.dist.is_main and not self.args.keep_checkpoints:
            shutil.rmtree(self.ckpt.root, ignore_errors=True)
