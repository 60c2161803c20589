"""Command-line options as dataclasses: what a training run is told, in one object.

`TrainingArguments` holds the options of the training loop (optimisation, length of the run, output,
checkpoints), `ModelArguments` the shape of a new model; a script's own dataclass adds its data options
(`train.pretrain.PretrainArguments`, `train.finetune.FinetuneArguments`) and changes defaults to its recipe.
`parse(cls, argv, module, doc)` builds the `python -m MODULE` parser from the fields (each field's
`option(...)` carries its help, group, choices and deprecated spellings) and returns an instance; the
`Trainer` takes that instance, and an experiment can build one directly:

    args = PretrainArguments(corpus="corpus.txt", tokenizer="runs/tokenizer", max_steps=100, out="runs/x")
    pretrain.run(args)

Lengths: `--max-length` is the tokens per row everywhere (`<s>` and `</s>` included): the rows pretraining
packs, the length fine-tuning and evaluation cut inputs to. The shape of a new model is `--preset` and its
overrides; its position table is `--model-max-length`.
"""
from __future__ import annotations

import argparse
import dataclasses
import math
import shlex
import sys
import typing
from dataclasses import dataclass, field
from typing import ClassVar

from roberta.config import PRESETS

from .runtime import CPU_DEFAULT_PRECISION, EXIT_CODES_HELP, UserError

MAX_NEW_MODEL_LENGTH = max(c.max_length for c in PRESETS.values())  # 512: RoBERTa's longest input
# the largest seed: 32 bits, well within torch's limit. The trainer seeds torch's generators with the seed times
# 100,003 (a seed above 2**64 / 100,003 passed start-up and failed at step 1 with "Overflow when unpacking long
# long"); numpy's is seeded with seed % 2**32 (`runtime.seed_everything`), so numpy takes any seed
MAX_SEED = 2**32 - 1
# options that do not describe the run (left out of the model card's recipe, of the resume comparison and of an
# experiment's "made by another command" check): where it is written or caches, how it shows progress, and the
# digests of --train's and --imdb's rows that train.finetune keeps for its resume check (`resume_checks.ROWS_RECORDED`)
NOT_RECIPE = ("command", "resume", "out", "no_progress", "keep_checkpoints", "cache_dir", "train_sha256",
              "imdb_sha256")


def option(default=None, help: str = "", *, group: str | None = None, choices=None, required: bool = False,
           deprecated: tuple[str, ...] = (), cli: bool = True):
    """A dataclass field that is also a command-line option `--field-name`. `deprecated`: older spellings,
    still accepted with a warning on stderr; `cli=False`: not an option (set by the script)."""
    return field(default=default, metadata={"help": help, "group": group, "choices": choices,
                                            "required": required, "deprecated": deprecated, "cli": cli})


def check_seed(value: int, option: str = "--seed") -> int:
    """`value` if it is a seed every generator takes (0 to MAX_SEED), else a UserError naming `option`."""
    if not 0 <= value <= MAX_SEED:
        raise UserError(f"{option} must be between 0 and {MAX_SEED:,}, got {value}")
    return value


def seed_value(text: str) -> int:
    """argparse's `type` of a seed option: an int from 0 to MAX_SEED, refused when the command line is parsed
    ("argument --seed: must be between 0 and 4,294,967,295, got ...", exit code 2)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None
    try:
        return check_seed(value)
    except UserError as err:
        raise argparse.ArgumentTypeError(str(err).removeprefix("--seed ")) from None


def is_seed(name: str) -> bool:
    """Whether the option `name` (a field name: seed, eval_seed, imdb_seed, ...) is a seed."""
    return name == "seed" or name.endswith("_seed")


@dataclass
class ModelArguments:
    """The shape of a new model (a pretrained --init fixes its own)."""
    preset: str = option("mini", "model size preset from roberta.PRESETS (default: %(default)s)", group="model")
    hidden_size: int | None = option(None, "override the preset's hidden size", group="model")
    layers: int | None = option(None, "override the preset's number of encoder layers", group="model")
    heads: int | None = option(None, "override the preset's attention heads", group="model")
    intermediate_size: int | None = option(None, "override the preset's feed-forward size", group="model")
    model_max_length: int | None = option(
        None, "longest input of a new model, <s> and </s> included: the size of its position table (at most "
              f"{MAX_NEW_MODEL_LENGTH}, RoBERTa's; default: the preset's)", group="model")
    dropout: float | None = option(
        None, "hidden and attention dropout (default: %(default)s; the presets have 0.1; 0 makes runs "
              "comparable across process counts)", group="model")

    SHAPE: ClassVar[tuple[str, ...]] = ("hidden_size", "layers", "heads", "intermediate_size", "model_max_length")

    def shape_options_given(self) -> list[str]:
        """The model-shape options set: refused when a pretrained model fixes the shape."""
        return ["--" + n.replace("_", "-") for n in self.SHAPE if getattr(self, n) is not None]

    def check_dropout(self) -> None:
        """--dropout, checked by its own name (the config refused it as hidden_dropout_prob)."""
        if self.dropout is not None and not 0 <= self.dropout <= 1:  # nan too
            raise UserError(f"--dropout must be between 0 and 1 (a probability), got {self.dropout}")

    def check_shape(self) -> None:
        """--preset and its overrides, checked by their options' names before any data is read (the config said
        "unknown preset 'huge'" and "hidden_size (32) must be divisible by num_attention_heads (5)", naming no
        option, once the tokenizer was loaded)."""
        if self.preset not in PRESETS:
            raise UserError(f"--preset {self.preset!r} is not a preset; choose one of {sorted(PRESETS)}")
        for name in ("hidden_size", "layers", "heads", "intermediate_size"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise UserError(f"--{name.replace('_', '-')} must be at least 1, got {value}")
        preset = PRESETS[self.preset]
        hidden, heads = self.hidden_size or preset.hidden_size, self.heads or preset.num_attention_heads
        if hidden % heads:
            def shown(flag, value, given):
                return f"{flag} {value}" + ("" if given is not None else f" (the {self.preset} preset's)")
            raise UserError(f"{shown('--hidden-size', hidden, self.hidden_size)} must be divisible by "
                            f"{shown('--heads', heads, self.heads)}: each attention head takes an equal part")

    def model_config(self, tokenizer):
        """A RobertaConfig from --preset and its overrides, with the vocabulary and special ids of `tokenizer`."""
        from roberta import RobertaConfig

        self.check_dropout()
        self.check_shape()

        overrides = {"hidden_size": self.hidden_size, "num_hidden_layers": self.layers,
                     "num_attention_heads": self.heads, "intermediate_size": self.intermediate_size}
        overrides = {k: v for k, v in overrides.items() if v is not None}
        if self.dropout is not None:
            overrides.update(hidden_dropout_prob=self.dropout, attention_probs_dropout_prob=self.dropout)
        try:
            config = RobertaConfig.from_preset(self.preset, tokenizer=tokenizer, **overrides)
            if self.model_max_length is not None:
                # attention grows with the square of the length: a huge one ran for minutes without answering
                # SIGINT/SIGTERM
                if not 3 <= self.model_max_length <= MAX_NEW_MODEL_LENGTH:
                    raise ValueError(f"--model-max-length must be between 3 and {MAX_NEW_MODEL_LENGTH} (RoBERTa's "
                                     f"longest input, the roberta-base preset's), got {self.model_max_length}")
                config.max_position_embeddings = self.model_max_length + config.pad_token_id + 1
            config.__post_init__()
        except ValueError as err:
            raise UserError(str(err)) from None
        return config


@dataclass
class TrainingArguments:
    """The options of the training loop (`train.trainer.Trainer`). The defaults are the pretraining recipe's
    (batch 64, lr 5e-4, 300 warmup steps); another script changes them with `redefault`."""
    batch_size: int = option(64, "sequences per optimizer step, summed over processes and accumulation "
                                 "(default: %(default)s)", group="optimisation")
    grad_accum: int = option(1, "split each batch into this many micro-batches to save memory (default: "
                                "%(default)s)", group="optimisation")
    lr: float = option(5e-4, "peak learning rate (default: %(default)s)", group="optimisation")
    warmup: float = option(300, "warmup: a number of steps, or a fraction of the run if below 1 (with only "
                                "--time-budget-min: a fraction of the time left once the first step is over, "
                                "so that neither the step-0 evaluation nor compiling takes it) (default: "
                                "%(default)s)", group="optimisation")
    batch_order: str = option("random", "rows of a batch: 'random' = consecutive rows of the epoch's permutation; "
                                        "'length' = rows of similar length together (less padding; see "
                                        "train.trainer.length_grouped) (default: %(default)s)",
                              group="optimisation", choices=("random", "length"))
    schedule: str = option("linear", "decay after warmup (default: %(default)s)", group="optimisation",
                           choices=("linear", "cosine"))
    weight_decay: float = option(0.01, "AdamW weight decay, not applied to biases and LayerNorm (default: "
                                       "%(default)s)", group="optimisation")
    clip_grad: float = option(1.0, "gradient-norm clipping, 0 = off (default: %(default)s)", group="optimisation")

    max_steps: int | None = option(None, "optimizer steps", group="length")
    epochs: float | None = option(None, "passes over the training rows", group="length")
    token_budget: float | None = option(None, "training tokens (padding not counted), e.g. 2e7", group="length")
    time_budget_min: float | None = option(
        None, "wall-clock minutes of training (evaluations and checkpoints included; setup and the final "
              "evaluation not; summed over resumed sessions). Without --max-steps/--epochs/--token-budget, the lr "
              "decay after warmup follows the clock and reaches 0 when the time is up", group="length")

    out: str = option("runs/train", "output folder (default: %(default)s)", group="run")
    resume: bool = option(False, "continue the run in --out from its latest checkpoint", group="run")
    seed: int = option(0, "seed of initialisation, data order, masks, dropout (default: %(default)s)", group="run")
    eval_every: int = option(250, "evaluate every N steps, 0 = only at the end (default: %(default)s)", group="run")
    log_every: int = option(10, "write a log line every N steps (default: %(default)s)", group="run")
    save_every_min: float = option(30.0, "checkpoint every N minutes (0 = off; default: %(default)s)", group="run")
    save_every: int = option(0, "also checkpoint every N steps, 0 = off", group="run")
    keep_checkpoints: bool = option(False, "keep every step checkpoint, and OUT/checkpoints after a "
                                           "finished run (default: the newest two while it runs, removed at the "
                                           "end: the folder is Hub-ready)", group="run")
    precision: str = option("auto", "autocast dtype (default: %(default)s = bf16 on CUDA; on CPU bf16 with AMX "
                                    f"or AVX512-BF16, else fp32; here {CPU_DEFAULT_PRECISION})", group="run",
                            choices=("auto", "fp32", "bf16"))
    compile: bool = option(False, "torch.compile the encoder (train.trainer.compile_encoder)", group="run")
    no_progress: bool = option(False, "no progress bar: a plain progress line every minute instead (for logs)",
                               group="run")
    command: str = option("", cli=False)  # the command line that reproduces the run (set by `parse`)

    def check_loop(self, world_size: int = 1) -> None:
        """The loop's options that are wrong whatever the data and --out (a UserError naming the option), for
        `world_size` processes. `train.out_folder.check_options` adds --out's checks; a script's `check` runs both
        first, then its own."""
        batch, accum = self.batch_size, self.grad_accum
        if batch < 1 or accum < 1 or batch % (world_size * accum):
            raise UserError(f"--batch-size ({batch}) must be a positive multiple of processes ({world_size}) "
                            f"x --grad-accum ({accum})")
        if not 0 < self.lr < math.inf:  # nan or inf: a run that stops at once with a loss of nan
            raise UserError(f"--lr must be a positive number, got {self.lr}")
        if not 0 <= self.warmup < math.inf:  # nan stopped the run after its first evaluation, naming no option
            raise UserError(f"--warmup must be a number at least 0, got {self.warmup}")
        for name in ("max_steps", "epochs", "token_budget", "time_budget_min"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise UserError(f"--{name.replace('_', '-')} must be positive, got {value}")
        if self.log_every < 1:
            raise UserError(f"--log-every must be at least 1, got {self.log_every}")
        check_seed(self.seed)  # (the parser refuses it too; an experiment builds its arguments itself)
        if self.eval_every < 0 or self.save_every < 0:
            raise UserError(f"--eval-every and --save-every must be at least 0 (0 = off), got {self.eval_every} "
                            f"and {self.save_every}")
        if self.save_every_min < 0:  # a negative interval: a checkpoint after every step
            raise UserError(f"--save-every-min must be at least 0 (0 = off), got {self.save_every_min}")
        if not (self.weight_decay >= 0 and self.clip_grad >= 0):  # nan too: weights pushed away from 0, clipping off
            raise UserError(f"--weight-decay and --clip-grad must be at least 0 (--clip-grad 0 = off), got "
                            f"{self.weight_decay} and {self.clip_grad}")

    def own_files(self) -> tuple[str, ...]:
        """The names a script puts in --out before its training loop starts, and so finds there after a start that
        stopped: a new run takes them (`train.out_folder.check_fresh_out`); the loop's own are
        `out_folder.RUN_FILES`."""
        return ()

    def recorded(self) -> dict:
        """The options as plain values (checkpointed, compared on --resume)."""
        return {k: v for k, v in dataclasses.asdict(self).items()
                if k != "command" and isinstance(v, (int, float, str, bool, type(None)))}

    def recipe(self, drop=()) -> dict:
        """What a model card shows of the recipe: the command line, then every option that is set."""
        skip = {*NOT_RECIPE, *drop}
        return {"command": self.command, **{k: v for k, v in self.recorded().items()
                                            if k not in skip and v is not None}}


GROUP_TITLES = {"length": "length of the run (the first limit reached ends it)"}


class _Deprecated(argparse.Action):
    """An older spelling of an option: sets the same value and says which spelling to use."""

    def __init__(self, option_strings, dest, new: str = "", **kwargs):
        self.new = new
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"warning: {option_string} is deprecated; use {self.new}", file=sys.stderr)
        setattr(namespace, self.dest, values)


def _value_type(hint):
    """int / float / str of an annotation such as `int | None`."""
    args = [a for a in typing.get_args(hint) if a is not type(None)] or [hint]
    return args[0]


def script_parser(module: str, doc: str, epilog_extra: str = "") -> argparse.ArgumentParser:
    """`python -m MODULE`'s parser: the docstring's first paragraph above the options, the rest below."""
    summary, _, details = (doc or "").partition("\n\n")
    epilog = details.rstrip("\n") + ("\n" + epilog_extra if epilog_extra else "")
    return argparse.ArgumentParser(prog=f"python -m {module}", description=summary, epilog=epilog,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)


def build_parser(cls, module: str, doc: str, epilog_extra: str = EXIT_CODES_HELP) -> argparse.ArgumentParser:
    """`python -m MODULE`'s parser for the dataclass `cls`: the docstring's first paragraph above the options,
    the rest (and the exit codes) below; one option per field, in groups."""
    parser = script_parser(module, doc, epilog_extra)
    hints, groups = typing.get_type_hints(cls), {}
    shared = {f.name for base in (ModelArguments, TrainingArguments) for f in dataclasses.fields(base)}
    fields = dataclasses.fields(cls)  # the script's own options first, then the model's and the loop's
    for f in [f for f in fields if f.name not in shared] + [f for f in fields if f.name in shared]:
        meta = f.metadata
        if not meta.get("cli", False):
            continue
        title = meta.get("group") or "options"
        if title not in groups:
            groups[title] = parser.add_argument_group(GROUP_TITLES.get(title, title))
        flag, kind = "--" + f.name.replace("_", "-"), _value_type(hints[f.name])
        if kind is bool:
            groups[title].add_argument(flag, action="store_true", help=meta["help"])
            continue
        common = {"type": seed_value if kind is int and is_seed(f.name) else kind, "choices": meta.get("choices")}
        text = meta["help"]
        if f.default is not None and "default" not in text:  # a script's own default (finetune's --epochs 2)
            text += " (default: %(default)s)"
        groups[title].add_argument(flag, default=f.default, required=meta.get("required", False),
                                   help=text, **common)
        for old in meta.get("deprecated", ()):
            groups[title].add_argument(old, dest=f.name, action=_Deprecated, new=flag, help=argparse.SUPPRESS,
                                       **common)
    return parser


def command_line(module: str, argv) -> str:
    """The command that reproduces this run."""
    args = sys.argv[1:] if argv is None else list(argv)
    return shlex.join(["python", "-m", module, *args])


def parse(cls, argv, module: str, doc: str):
    """Parse `argv` (default sys.argv) into an instance of `cls`; its `command` reproduces the run."""
    namespace = build_parser(cls, module, doc).parse_args(argv)
    return cls(**vars(namespace), command=command_line(module, argv))


def redefault(name: str, value, *bases):
    """The option `name` of `bases` (default: ModelArguments, TrainingArguments) with the default of a script's
    recipe: `batch_size: int = redefault("batch_size", 32)` in the script's dataclass."""
    for base in bases or (ModelArguments, TrainingArguments):
        for f in dataclasses.fields(base):
            if f.name == name:
                return field(default=value, metadata=f.metadata)
    raise KeyError(name)
