"""Fine-tune a sentence classifier (SST-2 sentiment by default) from a pretrained MLM folder, from an earlier
classifier (a second stage), or from scratch; then calibrate it and score it.

    python -m train.finetune --init runs/mini-roberta --out runs/mini-roberta-sst2
    python -m train.finetune --init random --tokenizer runs/mini-roberta --out runs/random-sst2   # no pretraining
    # two stages: IMDB reviews (first 128 tokens of each), then SST-2 from that classifier
    python -m train.finetune --init runs/mini-roberta --train ../shared/data/imdb/train.tsv --epochs 1 \\
        --calibration-n 0 --out runs/imdb
    python -m train.finetune --init runs/imdb --out runs/imdb-sst2
    # your own labelled file, with no dev file: 10% of its rows held out as the dev set
    python -m train.finetune --init runs/mini-roberta --train mine.csv --dev-fraction 0.1 --calibration-split random \\
        --imdb '' --checks '' --out runs/mine

What it does, in order:
- Data. Every text goes through `roberta.text.normalize_for_classifier` (as in evaluation and the app):
  it is lower-cased and detokenized (SST-2's tokenized forms such as `it 's`, `does n't` and -lrb- become
  `it's`, `doesn't` and `(`), your own data too, so a classifier never sees case. Then it
  is cut to --max-length tokens (long texts such as IMDB reviews: their first 126 tokens plus <s> and </s>),
  or with --long-text windows becomes every overlapping window of --max-length tokens, each a row with the
  text's label (as `roberta.pipeline` reads a long text). Batches are padded to their longest row and, by
  default, hold rows of similar length (--batch-order length; 'random' was the recipe before).
- Held out from training: (1) a calibration slice of the training file (--calibration-n whole sentences, or
  rows with --calibration-split random, seeded by --calibration-seed, the same for every --seed; see
  `train.calibrate`; a warning says when the slices hold out more than a fifth of the file), and (2) the reviews of
  the fixed IMDB evaluation sample (--imdb, --imdb-n, --imdb-seed) wherever they occur in the training
  file: training on IMDB's train.tsv never sees the 1,000 reviews the IMDB figure is measured on
  (matched by text: give --train and --imdb the same source; --keep-imdb-sample turns this off). (3) With
  --dev-fraction F, the dev set: F of the training file's whole sentences (its rows that are no other row's
  sub-phrase; with --calibration-split random, F of its rows), drawn from those the calibration slice left, as
  --calibration-split draws (whole sentences, their sub-phrases removed from training too), seeded by --dev-seed
  (the same for every --seed); metrics.json records it as `dev_slice`, and the card names it as held out from --train.
  No training row reads as a held-out one (the same text, or the same once normalised: "Apple wins" beside a held-out
  "apple wins"). Both slices record the training file's rows as read (their count and a digest): train.evaluate
  --dev-slice, train.calibrate and train.average draw them again only from a file that still holds those rows. A
  --resume that changes --calibration-n/-seed/-split, --dev-fraction, --dev-seed, --imdb-n, --imdb-seed or
  --keep-imdb-sample, or gives a --train or an --imdb of other rows (the same rows by another path are no change),
  is refused (`train.resume_checks`).
- Initialisation. --init an MLM folder: its encoder, a new classifier head. --init a classifier folder
  (e.g. the IMDB stage): its encoder and its head, whose labels must be this run's (else the run is refused:
  --new-head starts a fresh head); its calibration temperature is not carried over. --init random: a
  from-scratch encoder.
- Optimisation (`train.trainer`): AdamW, warmup then linear decay, --epochs; --layer-lr-decay d < 1 gives the
  classifier head the full lr, the top encoder layer d x lr, the next d^2 x lr, ..., the embeddings d^(L+1).
- Which weights are kept: by default the end-of-run model (--select last). --select calibration keeps the
  checkpoint with the best accuracy on the calibration slice. --ema-decay d keeps an exponential moving
  average of the weights instead (`train.trainer.make_ema`), and records the end-of-run weights' dev accuracy
  beside it. The dev set is evaluated every --eval-every steps for the curves only: it never chooses
  anything, so the dev figure is an honest one.
- Calibration: a temperature T fitted on the calibration slice (`train.calibrate`), stored in config.json
  as `calibration_temperature` and applied by `roberta.pipeline`; dev ECE before/after and a reliability
  diagram (reliability.png). With --calibration-n 0 the model stays uncalibrated (T = 1).
- Scores, in float32 as the pipeline computes: dev accuracy and ECE, IMDB sample accuracy, and the behaviour
  checks (--checks, per category, see `train.evaluate.score_checks`). The IMDB reviews are labelled negative
  and positive: they are scored by those names through --labels (neg and pos count as such), and skipped,
  with a note, when --labels are not a negative and a positive label.

Writes a Hub-ready folder: config.json + model.safetensors, tokenizer.json, metrics.json (everything above,
train time, the command), log.jsonl, curves.png, reliability.png and a model card README.md.
Training machinery: `train.trainer` (resume, atomic checkpoints, signals, DDP: see there); the options are
`FinetuneArguments`.
"""
from __future__ import annotations

import dataclasses
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch

import roberta
from roberta.run_metrics import METRICS_NAME, RunMetrics, dev_set_said
from roberta.text import lower_cases, lowercasing, normalize_for_classifier
from roberta.tokenizer import encode_windows, save_tokenizer

from .arguments import ModelArguments, TrainingArguments, check_seed, option, parse, redefault
from .checkpointing import Checkpoints
from .evaluate import (DEFAULT_CHECKS, UNSURE_BELOW, check_expected_labels, check_unsure_below,
                       default_checks_skip_note, read_checks, shown_path)
from .imdb_sample import imdb_skip_note
from . import paths
from .optim import takes_weight_decay
from .out_folder import check_options, lock_out
from .runtime import (EXIT_INTERRUPTED, Dist, UserError, hardware_info, naming, output_folder, progress_bars,
                      run_main, seed_everything)
from .tokenizer import check_fits_init, load_run_tokenizer
from .trainer import Task, Trainer

DEFAULT_TRAIN = paths.SST2_TRAIN
DEFAULT_DEV = paths.SST2_DEV
DEFAULT_IMDB = paths.IMDB_TRAIN
SELECT = ("last", "calibration")
CALIBRATION = "calibration, selection and checks"  # a group of options


@dataclass
class FinetuneArguments(ModelArguments, TrainingArguments):
    """`python -m train.finetune`'s options: initialisation, data, calibration, then the model and the loop."""
    init: str | None = option(None, "a pretrained MLM folder (config.json, model.safetensors, tokenizer.json) or a "
                                    "Hub id; a classifier folder from an earlier train.finetune (a second stage: "
                                    "encoder and head); 'random' for a from-scratch encoder (then --preset and "
                                    "--tokenizer)", group="initialisation", required=True)
    new_head: bool = option(False, "with a classifier --init: start from a fresh classifier head (default: keep "
                                   "its head; a run with other labels is refused without this)",
                           group="initialisation")
    head_seed: int = option(0, "seed of a new classifier head's weights, the same whatever --seed (the data order "
                               "and dropout), so that the seeds of one recipe start from the same weights and their "
                               "weight average (train.average) is of matching heads; --init random draws the whole "
                               "model from --seed (default: %(default)s)", group="initialisation")
    tokenizer: str | None = option(None, "tokenizer.json or a folder holding one (default: the --init folder's)",
                                   group="initialisation")
    train: str = option(DEFAULT_TRAIN, "TSV/CSV with a header (sentence or text, label) or hub:NAME:CONFIG:SPLIT, "
                                       f"e.g. hub:stanfordnlp/sst2:default:train or {paths.IMDB_TRAIN} "
                                       "(default: %(default)s)", group="data")
    dev: str = option(DEFAULT_DEV, "evaluation set, required unless --dev-fraction holds one out of --train (it "
                                   "cannot be skipped): a file with the same columns and labels as --train; "
                                   "reported, never used to choose a checkpoint (default: %(default)s)", group="data")
    dev_fraction: float = option(0.0, "instead of --dev, hold this fraction of --train out of training as the dev set "
                                      "(e.g. 0.1 for a file of your own with no dev file), as --calibration-split "
                                      "draws: 'sentences', this fraction of its whole sentences (the rows that are no "
                                      "other row's sub-phrase: every row of a file of plain sentences), their "
                                      "sub-phrases removed from training too; 'random', this fraction of its rows; "
                                      "drawn from the rows the calibration slice leaves, seeded by --dev-seed; never "
                                      "trained on, and named in metrics.json and the card as held out from --train; "
                                      "0 = read --dev (default: %(default)s)", group="data")
    dev_seed: int = option(0, "seed of the --dev-fraction slice, the same for every --seed, so that the seeds of "
                              "one recipe share one dev set (and train.average can score their average on it) "
                              "(default: %(default)s)", group="data")
    imdb: str = option(DEFAULT_IMDB, "natural-text check: IMDB reviews TSV (text, label: 0 negative, 1 "
                                     "positive), scored through --labels' negative and positive labels and skipped "
                                     "for other labels; '' to skip (default: %(default)s)", group="data")
    imdb_n: int = option(1000, "IMDB reviews sampled (default: %(default)s)", group="data")
    imdb_seed: int = option(0, "seed of the IMDB sample, fixed whatever --seed is (default: %(default)s, as "
                               "train.evaluate)", group="data")
    keep_imdb_sample: bool = option(False, "do not remove the IMDB sample's reviews from the training data "
                                           "(default: removed, so the IMDB figure is on reviews never trained on)",
                                    group="data")
    train_n: int = option(0, "use a seeded random sample of this many training examples (after the held-out rows "
                             "are removed), 0 = all (default: %(default)s)", group="data")
    negation_augment: int = option(0, "add the rows of train.negation (\"the film is not dull .\": positive; "
                                      "written from the training rows' own sentiment adjectives, half of them, the "
                                      "other half kept for its probe) this many times over; negative,positive "
                                      "labels only; 0 = none (default: %(default)s)", group="data")
    labels: str = option("negative,positive", "label names in id order; labels in the files are ids or these "
                                              "names (default: %(default)s)", group="data")
    text_column: str | None = option(None, "default: sentence, else text", group="data")
    label_column: str | None = option(None, "default: label", group="data")
    max_length: int | None = option(128, "tokens per input, <s> and </s> included, after every text is "
                                         "lower-cased and detokenized (normalize_for_classifier): longer texts are "
                                         "cut to their first tokens, as the dev, calibration and checks scoring cut "
                                         "them (the app and roberta.pipeline read a long text whole, in windows: "
                                         "see --long-text) (at most the model's longest input; default: "
                                         "%(default)s)", group="data")
    long_text: str = option("first", "training texts longer than --max-length: 'first' = their first tokens, one "
                                     "row each; 'windows' = every overlapping window of the text a row with the "
                                     "text's label, as roberta.pipeline reads a long text (more rows: --epochs "
                                     "counts passes over them) (default: %(default)s)", group="data",
                            choices=("first", "windows"))
    calibration_n: int = option(1000, "hold this many examples of --train out of training to fit the temperature "
                                      "(and for --select calibration); 0 = none, no calibration; the default fits "
                                      "SST-2's 67,349 rows: for a file of your own, about a tenth of its rows (a "
                                      "warning says when the slices hold out more than a fifth) (default: "
                                      "%(default)s)", group=CALIBRATION)
    calibration_split: str = option("sentences", "'sentences': whole sentences, their sub-phrases removed from "
                                                 "training too (SST-2 holds both); 'random': any rows, for data "
                                                 "that are not SST-2-style phrases, where short or repeated texts "
                                                 "would be removed as sub-phrases (default: %(default)s; see "
                                                 "train.calibrate)", group=CALIBRATION,
                                    choices=("sentences", "random"))
    calibration_seed: int = option(0, "seed of the calibration slice, the same for every --seed (default: "
                                      "%(default)s)", group=CALIBRATION)
    select: str = option("last", "weights kept: 'last' = the end of the run; 'calibration' = the checkpoint with "
                                 "the best calibration-slice accuracy (needs --calibration-n and --eval-every; the "
                                 "temperature is then fitted on the same slice that chose the checkpoint, a slice "
                                 "that flatters it; dev stays untouched) (default: %(default)s)",
                         group=CALIBRATION, choices=SELECT)
    checks: str | None = option(None, f"behaviour checks TSV scored at the end, '' to skip (default: "
                                      f"{shown_path(DEFAULT_CHECKS)})", group=CALIBRATION)
    unsure_below: float = option(UNSURE_BELOW, "checks: a top probability below this is an 'unsure' verdict "
                                               "(default: %(default)s)", group=CALIBRATION)
    ema_decay: float = option(0.0, "keep an exponential moving average of the weights, updated after every "
                                   "optimizer step with this decay (0.999 spans about the last 1,000 steps), and "
                                   "keep it instead of the end-of-run weights (whose dev accuracy metrics.json "
                                   "records beside it); 0 = off (default: %(default)s)", group="fine-tuning")
    layer_lr_decay: float = option(1.0, "layer-wise lr decay: the head gets --lr, encoder layer L (the top) lr x d, "
                                        "layer L-1 lr x d^2, ..., the embeddings lr x d^(L+1); 1.0 = off (default: "
                                        "%(default)s)", group="fine-tuning")
    # Two passes over SST-2's 67k phrases; a small encoder wants a larger lr than roberta-base's 1e-5..3e-5.
    # Dropout 0.1 in fine-tuning even when the pretrained config has none (our pretraining runs without).
    epochs: float | None = redefault("epochs", 2.0)
    dropout: float | None = redefault("dropout", 0.1)
    batch_size: int = redefault("batch_size", 32)
    lr: float = redefault("lr", 1e-4)
    warmup: float = redefault("warmup", 0.06)
    weight_decay: float = redefault("weight_decay", 0.1)
    eval_every: int = redefault("eval_every", 500)
    batch_order: str = redefault("batch_order", "length")  # SST-2 batches: 1.04x their real tokens, not 2.9x
    out: str = redefault("out", "runs/finetune")
    # set by `run` once --train and --imdb are read: a sha256 of each file's rows (`tables.rows_record`; None without
    # an IMDB check), kept in the checkpoints, so that a --resume compares the rows, not the path as spelled
    # (`resume_checks.ROWS_RECORDED`)
    train_sha256: str | None = option(None, cli=False)
    imdb_sha256: str | None = option(None, cli=False)

    def checks_path(self) -> str:
        """The behaviour checks file scored at the end ('' = none): --checks, else the shipped one (sentiment
        sentences) where they fit --labels, as the IMDB check is scored: skipped, with a note
        (`evaluate.default_checks_skip_note`), for other labels such as a topic classifier's, where an explicit
        --checks file that does not fit is an error."""
        if self.checks is not None:
            return self.checks
        return "" if default_checks_skip_note(self.id2label()) else str(DEFAULT_CHECKS)

    def id2label(self) -> dict[int, str]:
        """--labels as the model's id2label, or a UserError unless it names two or more distinct labels."""
        id2label = dict(enumerate(name.strip() for name in self.labels.split(",")))
        if len(id2label) < 2 or "" in id2label.values() or len(set(id2label.values())) < len(id2label):
            raise UserError(f"--labels must name two or more distinct labels, comma-separated, got {self.labels!r}")
        return id2label

    def check_dev_fraction(self) -> None:
        """--dev-fraction: a fraction below 1, and no --dev file of the user's beside it (the dev set is one or the
        other; --dev's default, unread, is not one)."""
        if not 0 < self.dev_fraction < 1:  # nan too
            raise UserError(f"--dev-fraction must be at least 0 and below 1 (0 = read --dev), got {self.dev_fraction}")
        if self.dev.strip() and self.dev != DEFAULT_DEV:
            raise UserError(f"--dev {self.dev} and --dev-fraction {self.dev_fraction:g} both give the dev set: give "
                            "--dev for a file of its own, or --dev-fraction to hold part of --train out")

    def check(self, world_size: int = 1) -> None:
        """Every option check made before any data is read or the model built, in the order the command reports
        them (a UserError, or the ValueError of a check shared with train.evaluate, naming the option): the loop's
        options and --out (`out_folder.check_options`), then this script's. The data files' headers and the --checks
        file's rows are read by `check_data_options`."""
        from .imdb_sample import check_imdb_n

        check_options(self, world_size)
        self.check_dropout()  # by its option's name, whatever --init (the config would say hidden_dropout_prob)
        if self.calibration_n < 0 or self.train_n < 0 or self.negation_augment < 0:
            raise UserError(f"--calibration-n, --train-n and --negation-augment must be at least 0, got "
                            f"{self.calibration_n}, {self.train_n} and {self.negation_augment}")
        if self.max_length is not None and self.max_length < 3:  # <s>, a token, </s>
            raise UserError(f"--max-length must be at least 3, got {self.max_length}")
        if not 0 < self.layer_lr_decay <= 1:
            raise UserError(f"--layer-lr-decay must be in (0, 1], got {self.layer_lr_decay}")
        if not 0 <= self.ema_decay < 1:
            raise UserError(f"--ema-decay must be at least 0 and below 1 (0 = off), got {self.ema_decay}")
        check_unsure_below(self.unsure_below)
        check_seed(self.head_seed, "--head-seed")  # (the parser refuses it too; an experiment builds its arguments)
        check_seed(self.dev_seed, "--dev-seed")
        if self.dev_fraction:
            self.check_dev_fraction()
        else:
            check_dev(self.dev)
        if self.ema_decay and self.select != "last":
            raise UserError("--ema-decay keeps the moving average of the weights: it goes with --select last only")
        if self.select == "calibration" and not (self.calibration_n > 0 and self.eval_every > 0):
            raise UserError("--select calibration needs a calibration slice (--calibration-n > 0) and "
                            "periodic evaluations (--eval-every > 0)")
        checks_path = self.checks_path()
        if checks_path and not Path(checks_path).is_file():
            what = "a folder, not a file" if Path(checks_path).is_dir() else "no such file"
            raise UserError(f"--checks {checks_path}: {what} ('' to skip the behaviour checks)")
        if self.negation_augment and list(self.id2label().values()) != ["negative", "positive"]:
            raise UserError(f"--negation-augment writes negative and positive rows: it needs --labels "
                            f"negative,positive, got {self.labels}")
        self.id2label()
        if self.imdb:
            check_imdb_n(self.imdb_n)
        if self.init == "random":  # --preset and its overrides by their names (a pretrained --init fixes them)
            self.check_shape()
        elif given := self.shape_options_given():
            raise UserError(f"{', '.join(given)} only apply with --init random (the pretrained model fixes its shape)")


def parse_args(argv=None) -> FinetuneArguments:
    return parse(FinetuneArguments, argv, "train.finetune", __doc__)


def check_dev(dev: str, option: str = "--dev") -> None:
    """--dev cannot be skipped as --imdb and --checks can: its figures are the run's reported accuracy (without a
    dev file, --dev-fraction holds a part of --train out as the dev set)."""
    if not dev.strip():
        raise UserError(f"{option} is required: an evaluation file with the same columns as --train ('' does not "
                        "skip it; --dev-fraction F holds a fraction F of --train out as the dev set instead)")


def _trim(input_ids: torch.Tensor, pad_id: int) -> torch.Tensor:
    """Drop the columns that are padding in every row (dynamic padding)."""
    return input_ids[:, :max(1, int(input_ids.ne(pad_id).sum(1).max()))]


def layer_of(name: str, num_layers: int) -> int:
    """Depth of a parameter: 0 embeddings, 1..L encoder layers, L+1 everything above (the head)."""
    if name.startswith("roberta.embeddings."):
        return 0
    if name.startswith("roberta.encoder.layer."):
        return int(name.split(".")[3]) + 1
    return num_layers + 1


def layer_decay_groups(model, weight_decay: float, decay: float) -> list[dict]:
    """AdamW groups with an "lr_scale" of decay^(L+1-depth) (head 1, top layer decay, ..., embeddings
    decay^(L+1)); weight decay as `train.optim.param_groups` gives it (`takes_weight_decay`)."""
    num_layers = model.config.num_hidden_layers
    groups: dict[tuple[int, bool], dict] = {}
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        depth, matrix = layer_of(name, num_layers), takes_weight_decay(param)
        group = groups.setdefault((depth, matrix), {"params": [], "weight_decay": weight_decay if matrix else 0.0,
                                                    "lr_scale": decay ** (num_layers + 1 - depth)})
        group["params"].append(param)
    return [groups[key] for key in sorted(groups)]


class ClassificationTask(Task):
    def __init__(self, input_ids: torch.Tensor, labels: torch.Tensor, pad_id: int, evaluate=None,
                 best_metric: str | None = None, layer_lr_decay: float = 1.0):
        self.input_ids, self.labels, self.pad_id, self._evaluate = input_ids, labels, pad_id, evaluate
        self.num_rows = len(labels)
        self.best_metric = best_metric  # None: no best checkpoint, the end-of-run model is kept
        self.layer_lr_decay = layer_lr_decay

    def make_batch(self, indices, epoch):
        return {"input_ids": _trim(self.input_ids[indices], self.pad_id), "labels": self.labels[indices]}

    def micro_batch(self, batch, rows):
        return {"input_ids": _trim(batch["input_ids"][rows], self.pad_id), "labels": batch["labels"][rows]}

    def num_targets(self, batch):
        return len(batch["labels"])

    def num_tokens(self, batch):
        return int(batch["input_ids"].ne(self.pad_id).sum())

    def row_lengths(self):
        return self.input_ids.ne(self.pad_id).sum(1)

    def tokens_per_row(self):
        return self.row_lengths().sum().item() / self.num_rows

    def loss_sum(self, model, batch):
        return model(input_ids=batch["input_ids"], labels=batch["labels"]).loss * len(batch["labels"])

    def evaluate(self, model):
        return self._evaluate(model) if self._evaluate else {}

    def param_groups(self, model, weight_decay):
        if self.layer_lr_decay == 1.0:
            return None
        return layer_decay_groups(model, weight_decay, self.layer_lr_decay)


def _init_architecture(init: str) -> str:
    """The class --init's config.json names; `transformers`' bare encoder (RobertaModel, ...) too, which gives
    fine-tuning its encoder as a masked LM's folder does (`from_pretrained_encoder`)."""
    return roberta.checkpoint.read_architecture(init, encoder_ok=True)


def init_root(init: str) -> str:
    """Where a chain of fine-tuning stages started: --init itself, or for a classifier folder written by
    train.finetune, the root of its own --init (so runs of several seeds can be checked for a common start)."""
    path = Path(init) / METRICS_NAME
    if path.is_file() and "SequenceClassification" in _init_architecture(init):  # not an MLM's own phases
        metrics = RunMetrics.read(path)
        if metrics.init:
            return metrics.init_root or metrics.init
    return init


def build_model(args: FinetuneArguments, id2label: dict[int, str]):
    """(model, tokenizer, what the init gave): a pretrained encoder with a new head, an earlier classifier
    (encoder and head), or a random one (--init random)."""
    if args.init == "random":  # (no shape option with another --init: `FinetuneArguments.check`)
        if not args.tokenizer:  # (after the data options: a missing default data file is named first)
            raise UserError("--init random needs --tokenizer")
        with naming("--tokenizer"):
            tokenizer = roberta.load_tokenizer(args.tokenizer)
        config = args.model_config(tokenizer)
        config.id2label = dict(id2label)
        torch.manual_seed(args.seed)
        return roberta.RobertaForSequenceClassification(config), tokenizer, "random encoder"
    tokenizer = load_run_tokenizer(args.tokenizer, args.init, named=True)  # errors name --tokenizer or --init
    # from_pretrained_encoder resets a classifier --init's temperature and problem type (its head's, not this run's)
    overrides = {}
    if args.dropout is not None:
        overrides.update(hidden_dropout_prob=args.dropout, attention_probs_dropout_prob=args.dropout)
    # a new head from --head-seed, the same for every --seed: the heads of seeds started from unrelated random
    # weights do not match unit for unit, and their average cancels (an encoder shipped before phase 28 frozen, 3
    # heads trained on SST-2: a mean logit gap of 0.40 and 73.2% dev, against 1.05 and 74.9% from one shared start)
    torch.manual_seed(args.head_seed)
    with naming("--init"):
        model = roberta.RobertaForSequenceClassification.from_pretrained_encoder(args.init, id2label=id2label,
                                                                                 **overrides)
        architecture = _init_architecture(args.init)
    torch.manual_seed(args.seed)  # what follows (dropout): --seed's
    gave = "encoder"
    if "SequenceClassification" in architecture and not args.new_head:
        from roberta.checkpoint import load_state_dict

        init_labels = roberta.load_config(args.init).id2label
        if init_labels != model.config.id2label:
            raise UserError(f"--init {args.init} classifies into {init_labels}, this run into "
                                 f"{model.config.id2label}: pass --new-head for a fresh head")
        head = {k: v for k, v in load_state_dict(args.init).items() if k.startswith("classifier.")}
        wanted = {k for k in model.state_dict() if k.startswith("classifier.")}
        if head.keys() != wanted:
            raise UserError(f"{args.init}: the classifier head's weights {sorted(head)} do not fit "
                                 f"{sorted(wanted)}; pass --new-head")
        model.load_state_dict(head, strict=False)
        gave = "encoder and classifier head"
    check_fits_init(tokenizer, model.config.vocab_size, args.tokenizer, args.init)
    return model, tokenizer, gave


def dev_slice_spec(args: FinetuneArguments, texts: list[str]) -> dict | None:
    """The dev slice --dev-fraction holds out of a training file of these `texts`, as metrics.json records it
    (`RunMetrics.dev_slice`, without the counts the draw gives); None without --dev-fraction. Its size `n` is the
    fraction of what the draw picks from (`dev_fraction_of`); a redraw (`held_out_dev`) takes the recorded `n`."""
    if not args.dev_fraction:
        return None
    base = dev_fraction_of(texts, args.calibration_split)
    return {"data": args.train, "fraction": args.dev_fraction, "n": max(1, round(args.dev_fraction * base)),
            "seed": args.dev_seed, "split": args.calibration_split, "calibration_n": args.calibration_n,
            "calibration_seed": args.calibration_seed, "text_column": args.text_column,
            "label_column": args.label_column}


def dev_fraction_of(texts: list[str], split: str) -> int:
    """The rows --dev-fraction takes its fraction of, as --calibration-split draws: in "sentences" mode the rows that
    are whole sentences (`train.calibrate.whole_sentence_rows`: each drawn one takes its sub-phrases out of training
    too, so a fraction of every row held out far more: on SST-2's 67,349 rows, --dev-fraction 0.05 left 22,924 of the
    55,841 rows the calibration slice leaves to train on); in "random" mode every row."""
    from .calibrate import whole_sentence_rows

    return whole_sentence_rows(texts) if split == "sentences" else len(texts)


def draw_dev(texts: list[str], train_rows: list[int], spec: dict) -> tuple[list[int], list[int], int]:
    """(training rows, dev rows, training rows removed for the dev slice's sake): `spec["n"]` texts drawn from
    `train_rows` (the rows the calibration slice left) as `train.calibrate.calibration_split` draws the calibration
    slice (its mode spec["split"], its seed spec["seed"]), so the two never overlap and no copy of a dev text, nor in
    "sentences" mode a sub-phrase of one, is trained on. A UserError when the rows cannot give that many."""
    from .calibrate import calibration_split

    try:
        kept, dev, removed = calibration_split([texts[i] for i in train_rows], spec["n"], spec["seed"], spec["split"])
    except ValueError:
        sentences = spec["split"] == "sentences"
        drawn = "whole sentences (--calibration-split sentences)" if sentences else "distinct texts"
        of = (f"{dev_fraction_of(texts, 'sentences'):,} rows of --train that are whole sentences (no other row's "
              "sub-phrase)" if sentences else f"{len(texts):,} rows of --train")
        raise UserError(f"--dev-fraction {spec['fraction']:g} asks for {spec['n']:,} dev examples of the "
                        f"{of}, not fewer than the {drawn} left to draw them from once the "
                        "calibration slice is held out: nothing would be left to train on; pass a smaller "
                        "--dev-fraction" + (", or --calibration-split random for data that are not SST-2-style "
                                            "phrases" if spec["split"] == "sentences" else "")) from None
    return [train_rows[i] for i in kept], [train_rows[i] for i in dev], removed


def held_out_dev(spec: dict, label_names=None, fix: str = "") -> tuple[list[str], list[int]]:
    """The dev (texts, labels) a metrics.json `dev_slice` describes, drawn again from its training file: the
    calibration slice of the whole file first (`calibration_split`, as train.finetune drew it), then the dev slice of
    the rows it left (`draw_dev`). For train.evaluate --dev-slice, train.calibrate and train.average, whose members
    share one. Refused when the file's rows are not those fine-tuning read (`train.calibrate.read_slice_source`:
    drawn from a changed file, the slice would hold other rows, some trained on); `fix` ends that error."""
    from .calibrate import calibration_split, read_slice_source

    texts, labels = read_slice_source(spec, label_names, "dev slice", "dev_slice", fix=fix)
    train_rows, _, _ = calibration_split(texts, int(spec.get("calibration_n") or 0),
                                         int(spec.get("calibration_seed") or 0), spec.get("split", "sentences"))
    _, rows, _ = draw_dev(texts, train_rows, spec)
    return [texts[i] for i in rows], [labels[i] for i in rows]


def split_training_data(args: FinetuneArguments, texts: list[str], imdb_texts: list[str] | None,
                        dev_slice: dict | None = None):
    """(training rows, calibration rows, dev rows, counts) from the training file's rows: the calibration slice, the
    dev slice `dev_slice` (--dev-fraction's, `dev_slice_spec`, computed once by the caller; none without it) and the
    IMDB sample's reviews held out, then --train-n sampled."""
    from .calibrate import calibration_split
    from .imdb_sample import SampleCopies

    try:
        train_rows, cal_rows, cal_removed = calibration_split(texts, args.calibration_n, args.calibration_seed,
                                                              args.calibration_split)
    except ValueError as err:
        raise UserError(f"{err}; or 0 to fit no temperature") from None
    dev_rows, dev_removed = [], 0
    if dev_slice:  # before the IMDB sample: the slice depends on the file alone
        train_rows, dev_rows, dev_removed = draw_dev(texts, train_rows, dev_slice)
    imdb_removed = 0
    if imdb_texts and not args.keep_imdb_sample:
        sample = SampleCopies.of(imdb_texts)  # near-copies too (IMDB repeats reviews, some edited)
        kept = [i for i in train_rows if texts[i] not in sample]
        imdb_removed, train_rows = len(train_rows) - len(kept), kept
    if 0 < args.train_n < len(train_rows):
        train_rows = sorted(random.Random(args.seed).sample(train_rows, args.train_n))
    if not train_rows:
        raise UserError("no training examples are left after holding out the calibration slice, the dev slice and "
                        "the IMDB sample")
    return train_rows, cal_rows, dev_rows, {"calibration_removed_train_rows": cal_removed,
                                            "dev_removed_train_rows": dev_removed, "imdb_sample_removed": imdb_removed}


def removed_said(removed: int, args: FinetuneArguments) -> str:
    """The training rows a held-out slice removed beside its own, as the count line says them: copies (the same
    text, or the same once normalised), and in "sentences" mode sub-phrases too."""
    if args.calibration_split == "sentences":
        return f"{removed:,} of their copies and sub-phrases"
    return f"{removed:,} {'copy' if removed == 1 else 'copies'} of them"


def held_out_warning(args: FinetuneArguments, rows: int, held_out: dict, cal_rows: int, dev_rows: int) -> str | None:
    """A `warning:` line when the calibration slice (and the dev slice, with their copies and sub-phrases) hold out
    more than `HELD_OUT_SHARE_WARNED` of the training file's `rows`: --calibration-n's default, 1,000, fits SST-2's
    67,349 rows (17% held out with their sub-phrases), not a file of a few thousand (42% of 2,400 rows). None when
    they do not, or without a calibration slice (the dev slice alone is --dev-fraction's share, asked for)."""
    from .calibrate import HELD_OUT_SHARE_SUGGESTED, HELD_OUT_SHARE_WARNED, suggested_calibration_n

    calibration = cal_rows + held_out["calibration_removed_train_rows"]
    dev = dev_rows + held_out["dev_removed_train_rows"]
    if not cal_rows or calibration + dev <= HELD_OUT_SHARE_WARNED * rows:
        return None
    dev_said = f" + {dev:,} for dev" if dev else ""
    return (f"warning: {calibration + dev:,} of the {rows:,} rows of --train ({(calibration + dev) / rows:.0%}) are "
            f"held out, not trained on: {calibration:,} for calibration (--calibration-n {args.calibration_n}, with "
            f"{'their copies and sub-phrases' if args.calibration_split == 'sentences' else 'copies'}){dev_said}; "
            "pass a smaller --calibration-n, e.g. "
            f"{suggested_calibration_n(rows):,} ({HELD_OUT_SHARE_SUGGESTED:.0%} of the rows)")


def check_data_options(args: FinetuneArguments, checks_path: str, id2label: dict[int, str],
                       option=lambda name: f"--{name}") -> None:
    """The data options, by their names, before any is read or the model built: each file's header (a missing
    default says how to point the command at the data, `data.missing_data`), and the --checks file's rows (a
    malformed file or a label outside --labels would fail after training). `option`: the words that name an option
    in the errors, from its field name (train.recipe's name the options its --finetune-args gave)."""
    from . import data, imdb_sample

    for name, default in (("train", DEFAULT_TRAIN), ("dev", DEFAULT_DEV)):
        path = getattr(args, name)
        if name == "dev" and args.dev_fraction:  # held out of --train: --dev is not read
            continue
        if name == "dev" and path == DEFAULT_DEV and args.train != DEFAULT_TRAIN:  # a file of one's own, no --dev
            check_default_dev(args, id2label, option)
            continue
        data.check_labeled_source(path, option(name), default=path == default, text_column=args.text_column,
                                  label_column=args.label_column)
    if args.imdb and imdb_sample.imdb_label_ids(id2label) is not None:  # read as `imdb_sample.imdb_sample` reads it
        data.check_labeled_source(args.imdb, option("imdb"), default=args.imdb == DEFAULT_IMDB,
                                  text_column=imdb_sample.IMDB_TEXT_COLUMN, label_column="label")
    if checks_path:
        with naming(option("checks")):
            check_expected_labels(read_checks(checks_path), id2label, f"{option('checks')} {checks_path}",
                                  option("checks"))


def check_default_dev(args: FinetuneArguments, id2label: dict[int, str], option=lambda name: f"--{name}") -> None:
    """--dev left at its default, SST-2 dev, beside a --train of one's own: a UserError saying so when SST-2 dev does
    not fit the run, its columns (sentence, label) not the ones --train is read by, or its labels (ids 0 negative, 1
    positive) not --labels' (a topic classifier's would read them as its first two labels); the error about a column
    advised "pass --label-column" to a user who had. A missing SST-2 dev says how to point at the data
    (`data.missing_data`)."""
    from . import data
    from .imdb_sample import imdb_label_ids

    fix = (f"{option('dev')} is SST-2 dev by default ({DEFAULT_DEV}), which does not fit --train {args.train}: "
           f"{{}}; give {option('dev')} FILE, a dev file with --train's columns and labels, or "
           f"{option('dev-fraction')} F (e.g. 0.1) to hold that fraction of --train out as the dev set")
    if imdb_label_ids(id2label) != {0: 0, 1: 1}:  # SST-2's ids: 0 negative, 1 positive
        labels = ",".join(str(name) for _, name in sorted(id2label.items()))
        raise UserError(fix.format(f"its labels are negative and positive (ids 0 and 1), this run's {labels}"))
    try:
        data.check_labeled_source(DEFAULT_DEV, option("dev"), default=True, text_column=args.text_column,
                                  label_column=args.label_column)
    except data.DataError:  # a column --train has and SST-2 dev has not (a missing file is a FileNotFoundError)
        columns = [f"{option(name)} {value}" for name, value in (("text-column", args.text_column),
                                                                  ("label-column", args.label_column)) if value]
        raise UserError(fix.format(f"its columns are sentence and label, not {' and '.join(columns)}")) from None


@dataclass
class FinetuneData:
    """The texts and labels of a run: training rows, the calibration slice held out of them, dev (--dev's file, or
    with --dev-fraction the slice `dev_slice` describes), and the IMDB sample ((texts, labels) or None); `held_out`
    counts the training rows removed with the slices and the sample."""
    train_texts: list[str]
    train_labels: list[int]
    cal_texts: list[str]
    cal_labels: list[int]
    dev_texts: list[str]
    dev_labels: list[int]
    imdb: tuple[list[str], list[int]] | None
    held_out: dict[str, int]
    dev_slice: dict | None = None
    train_record: dict | None = None  # the training file's rows as read (`tables.rows_record`), which the slices record
    imdb_record: dict | None = None  # the --imdb file's rows as read (`tables.rows_record`), None without the sample
    negation_rows: int = 0  # --negation-augment's rows among the training rows (train.negation), copies counted


def read_data(args: FinetuneArguments, id2label: dict[int, str], is_main: bool = True) -> FinetuneData:
    """The run's data (`FinetuneData`); every error reading a file names its option."""
    from . import imdb_sample, tables

    with naming("--train"):
        texts, labels, _ = tables.read_labeled(args.train, args.text_column, args.label_column, id2label)
    if len(set(labels)) == 1 and is_main:  # said, not refused (a dev set of one label may be meant)
        print(f"warning: --train {args.train}: every row has the label {labels[0]} ({id2label[labels[0]]}): a "
              "classifier trained on one label learns to answer it whatever the text", file=sys.stderr, flush=True)
    imdb = imdb_record = None
    if args.imdb:
        with naming("--imdb"):
            imdb_rows = imdb_sample.read_imdb(args.imdb)  # read once: the sample, and the file's record
            imdb = imdb_sample.imdb_sample_as(args.imdb, args.imdb_n, args.imdb_seed, id2label, rows=imdb_rows)
            # the whole file's rows, as --train's are recorded (the sample alone would change with --imdb-n/-seed)
            imdb_record = tables.rows_record(*imdb_rows)
    dev_slice = dev_slice_spec(args, texts)
    train_rows, cal_rows, dev_rows, held_out = split_training_data(args, texts, imdb[0] if imdb else None, dev_slice)
    if is_main and (warning := held_out_warning(args, len(texts), held_out, len(cal_rows), len(dev_rows))):
        print(warning, file=sys.stderr, flush=True)
    record = tables.rows_record(texts, labels)  # so that a redraw of the slices can tell the file changed since
    if dev_slice:
        dev_texts, dev_labels = [texts[i] for i in dev_rows], [labels[i] for i in dev_rows]
        dev_slice.update(removed_train_rows=held_out["dev_removed_train_rows"], **record)
    else:
        with naming("--dev"):
            dev_texts, dev_labels, _ = tables.read_labeled(args.dev, args.text_column, args.label_column, id2label)
    train_texts, train_labels = [texts[i] for i in train_rows], [labels[i] for i in train_rows]
    negation = 0
    if args.negation_augment:  # after the slices, from every row but theirs: a one-word row ("dull") is often a
        from .negation import training_rows  # sub-phrase of a held-out sentence, taken out of training with it

        held = set(cal_rows) | set(dev_rows)
        kept = [i for i in range(len(texts)) if i not in held]
        rows, row_labels = training_rows([texts[i] for i in kept], [labels[i] for i in kept])
        if not rows and is_main:  # a file of plain sentences has no one-word rows to find adjectives in
            print(f"warning: --negation-augment: --train {args.train} has no sentiment adjectives train.negation "
                  "finds (one-word rows of one label that follow a degree adverb such as \"too\" elsewhere in it): "
                  "no rows added", file=sys.stderr, flush=True)
        train_texts += rows * args.negation_augment
        train_labels += row_labels * args.negation_augment
        negation = len(rows) * args.negation_augment
    return FinetuneData(train_texts=train_texts, train_labels=train_labels, negation_rows=negation,
                        cal_texts=[texts[i] for i in cal_rows], cal_labels=[labels[i] for i in cal_rows],
                        dev_texts=dev_texts, dev_labels=dev_labels, imdb=imdb, held_out=held_out, dev_slice=dev_slice,
                        train_record=record, imdb_record=imdb_record)


def run(args: FinetuneArguments, dist: Dist | None = None) -> int:
    from .evaluate import encode_for_classifier, evaluate_classifier, score_classifier

    started, dist = time.time(), dist or Dist()
    args.check(dist.world_size)  # before the data is read and the model built
    lock_out(output_folder(args.out), dist)
    out, checks_path, id2label = Path(args.out), args.checks_path(), args.id2label()
    if args.imdb and (note := imdb_skip_note(id2label)):  # as --imdb '': not read, not held out, not on the card
        if dist.is_main:
            print(note, file=sys.stderr, flush=True)
        args = dataclasses.replace(args, imdb="")
    if args.checks is None and not checks_path and dist.is_main:  # the default checks, not of these labels
        print(default_checks_skip_note(id2label), file=sys.stderr, flush=True)
    if args.dev_fraction:  # the dev set is held out of --train: --dev's default is not read, nor on the card
        args = dataclasses.replace(args, dev="")
    seed_everything(args.seed)
    check_data_options(args, checks_path, id2label)
    read = read_data(args, id2label, dist.is_main)
    args = dataclasses.replace(args, train_sha256=read.train_record["data_sha256"],
                               imdb_sha256=read.imdb_record["data_sha256"] if read.imdb_record else None)
    train_texts, train_labels, cal_texts, cal_labels = (read.train_texts, read.train_labels, read.cal_texts,
                                                        read.cal_labels)
    dev_texts, dev_labels, imdb, held_out = read.dev_texts, read.dev_labels, read.imdb, read.held_out
    dev_named = dev_set_said(args.dev, read.dev_slice)
    model, tokenizer, init_gave = build_model(args, id2label)
    if not lower_cases(tokenizer):  # (a classifier given as --init does)
        tokenizer = lowercasing(tokenizer)  # SST-2 is lower-case; the saved tokenizer.json lower-cases every input
    max_length = min(args.max_length or model.config.max_length, model.config.max_length)
    if args.max_length and args.max_length > max_length and dist.is_main:  # said, not silently cut
        print(f"note: --max-length {args.max_length:,} is more than the model's {max_length} positions: inputs "
              f"are cut to {max_length} tokens", flush=True)
    pad_id = model.config.pad_token_id

    # normalize_for_classifier, <s> text </s>, truncated: what evaluation feeds the model (the app reads a long
    # text whole, in windows)
    if args.long_text == "windows":  # every window a row, labelled as its text
        input_ids, _, owner = encode_windows(tokenizer, [normalize_for_classifier(t) for t in train_texts],
                                             max_length)  # (W, T), (W,)
        train_labels = [train_labels[i] for i in owner.tolist()]
    else:
        input_ids, _ = encode_for_classifier(tokenizer, train_texts, max_length)  # (N, T)
    eval_batch = max(32, args.batch_size)

    def periodic_eval(m):  # dev: for the curves; the calibration slice: for --select calibration
        metrics = evaluate_classifier(m, tokenizer, dev_texts, dev_labels, eval_batch, max_length=max_length)
        if cal_texts:
            cal = evaluate_classifier(m, tokenizer, cal_texts, cal_labels, eval_batch, max_length=max_length)
            metrics.update(calibration_accuracy=cal["accuracy"], calibration_loss=cal["loss"])
        return metrics

    if dist.is_main:
        windows = f" in {len(train_labels):,} windows" if args.long_text == "windows" else ""
        dev_out = (f", {len(dev_texts):,} for dev + {removed_said(held_out['dev_removed_train_rows'], args)}"
                   if read.dev_slice else "")
        negation = f" + {read.negation_rows:,} negation rows (train.negation)" if read.negation_rows else ""
        print(f"{len(train_texts):,} training examples{windows} ({args.train}{negation}; held out: "
              f"{len(cal_texts):,} for calibration + "
              f"{removed_said(held_out['calibration_removed_train_rows'], args)}{dev_out}, "
              f"{held_out['imdb_sample_removed']:,} IMDB-sample reviews), {len(dev_texts):,} dev ({dev_named}); "
              f"{model.num_parameters():,} parameters, init {args.init} ({init_gave})", flush=True)
    task = ClassificationTask(input_ids, torch.tensor(train_labels), pad_id, periodic_eval,
                              best_metric="calibration_accuracy" if args.select == "calibration" else None,
                              layer_lr_decay=args.layer_lr_decay)
    trainer = Trainer(model, task, args, dist, out, ema_decay=args.ema_decay, started=started)
    result = trainer.fit()
    if result.status == "interrupted":
        return EXIT_INTERRUPTED
    if not dist.is_main:
        return 0

    # ----- the Hub-ready folder: the end-of-run model (or the best on the calibration slice) -----
    model = trainer.model
    if args.select == "calibration" and result.best_path is not None:
        weights, _ = Checkpoints.load(result.best_path, dist.device)
        model.load_state_dict(weights)
    model.eval()
    kept_step = result.best["step"] if args.select == "calibration" and result.best else result.step
    end_weights_dev = None
    if trainer.ema is not None:  # the average replaces the end-of-run weights, measured first for comparison
        with torch.no_grad():
            end_weights_dev = evaluate_classifier(model, tokenizer, dev_texts, dev_labels, eval_batch,
                                                  max_length=max_length)["accuracy"]
        model.load_state_dict(trainer.ema.module.state_dict())
        print(f"dev accuracy of the end-of-run weights {end_weights_dev:.4f}; kept: their moving average "
              f"(decay {args.ema_decay})", flush=True)
    # said, with bars on a terminal: the IMDB sample read whole and the rest ran 88 s without a word (2 busy cores)
    print(f"final evaluation: {final_evaluation_said(len(cal_texts), len(dev_texts), imdb, checks_path)}", flush=True)
    scored = score_classifier(model, tokenizer, (cal_texts, cal_labels) if cal_texts else None,
                              (dev_texts, dev_labels), imdb, checks_path, eval_batch, max_length, args.unsure_below,
                              out, title=dev_title(args.dev, read.dev_slice), progress=progress_bars(args.no_progress))
    calibration, dev, ood, checks = scored["calibration"], scored["dev"], scored["imdb"], scored["checks"]
    if calibration:
        calibration["slice"] = {"data": args.train, "n": args.calibration_n, "seed": args.calibration_seed,
                                "split": args.calibration_split, "text_column": args.text_column,
                                "label_column": args.label_column, **read.train_record}
        calibration["source"] = (f"{len(cal_texts):,} "
                                 f"{'whole sentences' if args.calibration_split == 'sentences' else 'rows'} "
                                 f"of `{args.train}` held out from fine-tuning, seed {args.calibration_seed}")
    model.save_pretrained(out)
    save_tokenizer(tokenizer, out, model.config.max_length)
    metrics = RunMetrics(
        dev_accuracy=dev["accuracy"], dev_examples=dev["n"], dev_data=args.dev or None, dev_slice=read.dev_slice,
        dev_ece=dev["ece"], dev_ece_uncalibrated=calibration["dev"]["ece_before"] if calibration else dev["ece"],
        temperature=model.config.calibration_temperature,
        # a skipped IMDB check (--imdb '', or labels that are not negative and positive) records no sample: no
        # size, seed or removed reviews, rather than the zeros of a check that never ran
        imdb_accuracy=ood["accuracy"] if ood else None, imdb_examples=ood["n"] if ood else None,
        imdb_accuracy_whole=ood["accuracy_whole"] if ood else None,
        imdb_data=args.imdb or None, imdb_seed=args.imdb_seed if args.imdb else None,
        imdb_sample_removed_from_training=held_out["imdb_sample_removed"] if args.imdb else None,
        selection=f"ema {args.ema_decay}" if trainer.ema is not None else args.select, kept_step=kept_step,
        end_weights_dev_accuracy=end_weights_dev, init=args.init, init_gave=init_gave,
        init_root=f"random, seed {args.seed}" if args.init == "random" else init_root(args.init),
        train_examples=len(train_texts), train_data=args.train, max_length=max_length,
        train_rows=len(train_labels) if args.long_text == "windows" else None,
        layer_lr_decay=args.layer_lr_decay, calibration_examples=len(cal_texts),
        calibration_removed_train_rows=held_out["calibration_removed_train_rows"],
        train_steps=result.step, train_tokens=result.tokens, stopped_by=result.status,
        resumed_with=trainer.resumed_with or None,
        parameters=model.num_parameters(), train_time_s=round(result.elapsed, 1),
        wall_time_s=round(trainer.wall_time_s(), 1), hardware=hardware_info(dist, trainer.precision),
        command=args.command, calibration=calibration or None, checks=checks or None,
        # a new head (not --init random's, nor a classifier --init's own): train.average compares it; a run resumed
        # from before --head-seed drew its head from --seed: unknown
        head_seed=args.head_seed if init_gave == "encoder" and "head_seed" not in trainer.unrecorded_options else None)
    trainer.write_curves()
    # the card's recipe: what shaped this model (an --init folder's config, not --preset and its overrides) and
    # the length inputs were cut to (a --max-length beyond the model's positions is not it)
    shape = () if args.init == "random" else ("preset", *ModelArguments.SHAPE)
    write_card(out, metrics, {**args.recipe(drop=shape), "max_length": max_length})
    metrics.write(out)  # the last file: it marks the folder whole (`train.experiment.finished`)
    trainer.cleanup()
    imdb_msg = f", IMDB accuracy {ood['accuracy']:.4f} (whole reviews {ood['accuracy_whole']:.4f})" if ood else ""
    cal_msg = (f", T {calibration['temperature']:.3f}, dev ECE {calibration['dev']['ece_before']:.4f} -> "
               f"{calibration['dev']['ece_after']:.4f}") if calibration else ""
    checks_msg = f", checks {checks['right']}/{checks['n']}" if checks else ""
    print(f"dev accuracy {dev['accuracy']:.4f}{imdb_msg}{cal_msg}{checks_msg}; wrote {out}", flush=True)
    return 0


def final_evaluation_said(calibration_rows: int, dev_rows: int, imdb, checks_path: str) -> str:
    """What a run's closing figures are measured on, as `score_classifier` scores them, for the line said before."""
    parts = [f"{calibration_rows:,} calibration rows (the temperature)"] if calibration_rows else []
    parts.append(f"{dev_rows:,} dev rows")
    if imdb:
        parts.append(f"{len(imdb[0]):,} IMDB reviews (their first tokens, then whole)")
    if checks_path:
        parts.append(f"the behaviour checks of {checks_path}")
    return ", ".join(parts)


def write_card(out: Path, metrics: RunMetrics | dict, recipe: dict, title: str | None = None,
               notes: str | None = None):
    """The classifier's model card: metrics, then calibration and behaviour-check sections; titled by its labels
    (`model_card.classifier_title`: a topic classifier's card is not a sentiment classifier's)."""
    from .model_card import classifier_title, write_model_card

    if not isinstance(metrics, RunMetrics):
        metrics = RunMetrics.from_dict(metrics)
    init = metrics.init or "?"
    if title is None:
        kind = classifier_title(roberta.load_config(out).id2label)
        title = f"{kind} fine-tuned from {'scratch' if init == 'random' else init}"
    if notes is None:
        start = ("a randomly initialised encoder (no pretraining)" if init == "random"
                 else f"`{init}` ({metrics.init_gave or 'encoder'})")
        kept = f"it keeps {kept_weights(metrics.selection, metrics.kept_step)}"
        imdb = ""
        if metrics.imdb_data:
            imdb = (f" IMDB accuracy is on a fixed sample of {metrics.imdb_examples} reviews of "
                    f"`{metrics.imdb_data}` (seed {metrics.imdb_seed or 0}), natural text with long reviews "
                    f"cut to their first {metrics.max_length or 128} tokens; "
                    f"{metrics.imdb_sample_removed_from_training or 0} of them were in the training file "
                    "and were removed from training, so the figure is on reviews the model never trained on.")
        named = metrics.dev_set_named(lambda file: f"`{file}`", none="")
        if metrics.held_out_dev:  # --dev-fraction: a slice of the training file, said as one
            dev = f"The dev set is {named}: never trained on, it was"
        else:
            dev = f"The dev set {named} was" if named else "The dev set was"
        notes = (f"Fine-tuned from {start} on `{metrics.train_data}`; {kept}. {dev} evaluated during training for the "
                 f"curves only and chose no checkpoint, so its figure is not the best of the run's.{imdb}")
    write_model_card(out, title=title, task="text-classification", metrics=card_table_metrics(metrics),
                     recipe=recipe, notes=notes, extra_sections=card_figure_sections(metrics))


def dev_title(dev_data: str | None, dev_slice: dict | None) -> str:
    """The reliability diagram's title: the dev set it was drawn on (`train.calibrate.reliability_title` of a dev
    file; a slice held out of the training file, said as one)."""
    from .calibrate import reliability_title

    return f"dev: {dev_set_said(dev_data, dev_slice)}" if dev_slice else reliability_title(dev_data)


def kept_weights(selection: str | None, kept_step: int | None = None) -> str:
    """Which weights a run kept (its metrics.json's `selection`), as the model cards say it."""
    selection = selection or "last"
    if selection.startswith("ema "):
        return (f"the exponential moving average of its weights (decay {selection.split()[1]}, updated after every "
                "step), not its end-of-run weights")
    if selection == "calibration":
        step = f" (step {kept_step})" if kept_step is not None else ""
        return f"its checkpoint with the best accuracy on the calibration slice{step}"
    return "its end-of-run weights"


def card_table_metrics(metrics: RunMetrics) -> RunMetrics:
    """What the classifier card's Metrics table shows: calibration, checks and the members have their own
    sections, not the table; a run whose IMDB check was skipped (--imdb '', or labels that are not negative and
    positive) shows no IMDB rows (its metrics.json records none; folders written before that recorded zeros of a
    check that never ran as its sample's size, seed and removed reviews)."""
    no_imdb = {} if metrics.imdb_data else dict(imdb_examples=None, imdb_seed=None,
                                                imdb_sample_removed_from_training=None)
    return metrics.updated(calibration=None, checks=None, members=None, **no_imdb)


def card_figure_sections(metrics: RunMetrics, stored_dtype: str = "float32") -> list[tuple[str, str]]:
    """The classifier card's sections after the Metrics table, (heading, markdown): calibration and behaviour
    checks. `stored_dtype`: the folder's weights' (`train.export --dtype`): below float32, the checks say their
    probabilities are those of the float32 weights they were measured on."""
    from .calibrate import calibration_markdown
    from .evaluate import checks_markdown

    return [("Calibration", calibration_markdown(metrics.calibration)),
            ("Behaviour checks", checks_markdown(metrics.checks, measured_before_export(metrics, stored_dtype)))]


def measured_before_export(metrics: RunMetrics, stored_dtype: str) -> str:
    """Whose a classifier's figures are when `train.export` stored its weights in `stored_dtype`: '' for float32
    (its own), else the float32 weights' (train.finetune and train.average measure in float32, before any export)."""
    if stored_dtype == "float32":
        return ""
    model = "average" if metrics.averaged else "model"
    return (f"the float32 {model}'s, measured when it was made, before `train.export` stored its weights in "
            f"{stored_dtype}")


def main(argv=None) -> int:
    return run_main(run, parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
