"""metrics.json: what a training run measured, in one schema.

Every run folder (and every shipped model folder) carries a metrics.json: the run's final figures, the data
they were measured on, its length and cost, and the command that reproduces it. `RunMetrics` is the only
reader and writer of that file: the training scripts write it, `train.evaluate --out` and `train.calibrate`
add to it, the model card, the release and the app read it.

    metrics = RunMetrics.read("assets/mini-roberta-sst2")       # a folder or the file itself
    metrics.dev_accuracy, metrics.classifier_accuracy, metrics.evaluations()
    RunMetrics(command=..., dev_accuracy=0.84, dev_data="sst2/dev.tsv").write(out)

It lives in `roberta/` because shipped model folders carry the file and the app, which does not import
`train/`, reads it. Files written before this schema read as they are: `seq_length` (a pretraining run's
tokens per row) is read as `max_length`, and keys the schema does not know are kept in `extra` and written
back unchanged. A shipped masked LM's phases.json (its pretraining history, one metrics object per phase) is
read and written here too: `read_phase_history`, `write_phase_history`.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .files import write_atomic

METRICS_NAME = "metrics.json"
PHASES_NAME = "phases.json"  # a shipped masked LM's pretraining history: one metrics.json per phase, in order
# keys of files written before the schema -> the field that holds them now
RENAMED = {"seq_length": "max_length"}


def dataset_name(path) -> str:
    """A data set as a reader knows it, not where it lay on the training machine (the app, model cards and
    figures show this): "../shared/data/wikitext-2/wiki.train.tokens" -> "wikitext-2/wiki.train.tokens"."""
    parts = [p for p in str(path).replace("\\", "/").split("/") if p not in ("", ".", "..")]
    if "data" in parts:
        parts = parts[len(parts) - parts[::-1].index("data"):]
    return "/".join(parts[-2:]) or str(path)


# Readable names of the data sets, by the first part of the name `dataset_name` gives ("wikitext-2/wiki.train.tokens"
# -> "WikiText-2"): the app and the summaries show them first, the file names after
DATASETS = {"wikitext-2": "WikiText-2", "wikitext-103": "WikiText-103", "wikipedia-en": "English Wikipedia",
            "imdb": "IMDB reviews", "sst2": "SST-2", "sst-2": "SST-2"}


# The data files this project's data sets are known by, as the shared data lays them out (folder, file name): the
# Hub dataset each is a local copy of (the model card's `datasets`), and what `readable_dataset` names
KNOWN_DATA_FILES = {
    **{(folder, name): "stanfordnlp/sst2" for folder in ("sst2", "sst-2") for name in ("train.tsv", "dev.tsv")},
    **{("imdb", name): "stanfordnlp/imdb" for name in ("train.tsv", "unsup.txt")},
    **{(corpus, f"wiki.{split}.{form}"): "Salesforce/wikitext" for corpus in ("wikitext-2", "wikitext-103")
       for split in ("train", "valid", "test") for form in ("tokens", "raw")},
}
KNOWN_DATA_FOLDERS = {"wikipedia-en": "wikimedia/wikipedia"}  # a folder of files: named itself or by a file in it
COMPRESSED = ".xz"  # the GPU upload's copies of the data files (`train.gpu_transfer bundle`)


def readable_dataset(name) -> str | None:
    """The data set a file or folder belongs to, as readers know it ("sst2/train.tsv" -> "SST-2"), by the same
    known files as the model card's datasets (`KNOWN_DATA_FILES`): a file of one's own in a folder of that name
    ("sst2/relabelled.csv") is none of them; None when it is none of DATASETS."""
    parts = [p for p in str(name).replace("\\", "/").strip().lower().removesuffix(COMPRESSED).split("/")
             if p not in ("", ".")]
    dataset = DATASETS.get(parts[0]) if parts else None
    if dataset is None or len(parts) == 1 or parts[0] in KNOWN_DATA_FOLDERS:
        return dataset
    return dataset if (parts[0], parts[1]) in KNOWN_DATA_FILES else None


def is_sst2(names) -> bool:
    """Whether every one of these data files is SST-2's; none at all (a metrics.json that does not say) is taken
    for the shipped classifier's data, SST-2."""
    return all(readable_dataset(name) == "SST-2" for name in names or ["sst2"])


def dev_slice_said(spec: dict, file_name=str) -> str:
    """A dev set held out of the training file (`train.finetune --dev-fraction`, metrics.json's `dev_slice`), as the
    cards and the app say it, the file by `file_name` of it (Markdown gives `code`): "300 rows of `mine/train.csv`
    held out from fine-tuning, seed 0" (whole sentences where they were drawn as the calibration slice's are)."""
    n, data = spec.get("n"), spec.get("data")
    unit = "whole sentences" if spec.get("split") == "sentences" else "rows"
    count = f"{n:,} {unit}" if isinstance(n, int) else unit
    source = dataset_said(dataset_name(data), file_name) if isinstance(data, str) and data else "the training file"
    return f"{count} of {source} held out from fine-tuning, seed {spec.get('seed', 0)}"


def dev_set_said(dev_data: str | None, dev_slice: dict | None, file_name=str) -> str:
    """A classifier's dev set as the runs' output, cards and summaries name it: the slice held out of the training
    file (`dev_slice_said`) when there is one, else its dev file by `file_name` of it ("the dev set" for none);
    `RunMetrics.dev_set_named` of a metrics.json's."""
    return RunMetrics(dev_data=dev_data, dev_slice=dev_slice).dev_set_named(file_name)


def said_list(items: list, quote: str = "") -> str:
    """"a", "a and b", "a, b and c", each item between `quote`s ("`a` and `b`"); "" for none."""
    shown = [f"{quote}{item}{quote}" for item in items]
    return " and ".join(shown) if len(shown) < 3 else f"{', '.join(shown[:-1])} and {shown[-1]}"


def dataset_said(name: str, file_name=str) -> str:
    """One data file with its data set's readable name, the file by `file_name` of it (Markdown gives `code`):
    "WikiText-2 (wikitext-2/wiki.valid.tokens)", or the file alone when it is of no known data set."""
    dataset = readable_dataset(name)
    return f"{dataset} ({file_name(name)})" if dataset else file_name(name)


def datasets_said(names: list[str], file_name=str) -> str:
    """Data files by their data sets' readable names, a file of no known data set by `file_name` of it (Markdown
    gives `code`): "SST-2", "IMDB reviews and three.csv"."""
    return said_list([readable_dataset(name) or file_name(name) for name in names])


def trained_on(metrics: RunMetrics | None) -> list[str] | None:
    """The data a run trained on, as `dataset_name` shows it: a pretraining run's corpus sources, else its training
    file; None when its metrics.json names none."""
    if metrics is None:
        return None
    if isinstance(metrics.corpus_sources, list):
        return [dataset_name(source["source"]) for source in metrics.corpus_sources
                if isinstance(source, dict) and source.get("source")]
    if isinstance(metrics.train_data, str):
        return [dataset_name(metrics.train_data)]
    return None


@dataclass(frozen=True)
class Evaluation:
    """One measured figure and the data it was measured on (what the model card's model-index lists)."""
    name: str  # "held-out MLM", "dev", "held-out dev" (a slice of the training file), "IMDB", "labeled", ...
    data: str  # the source: a path or a hub: spec
    metric: str  # "accuracy", "perplexity"
    value: float


def same_text_file(a: str | None, b: str | None) -> bool:
    """Whether two data paths name the same text: equal, or the same file in two copies of the corpora's layout,
    e.g. `../shared/data/wikitext-2/wiki.valid.tokens` and the GPU upload's xz copy of it
    `gpu-upload/data/wikitext-2/wiki.valid.tokens.xz` (the folder and the file name, `.xz` aside)."""
    if not a or not b:
        return False
    return a == b or Path(a.removesuffix(COMPRESSED)).parts[-2:] == Path(b.removesuffix(COMPRESSED)).parts[-2:]


@dataclass
class RunMetrics:
    """The fields of metrics.json; every one is optional (a pretraining run has no dev accuracy)."""

    # A new field that describes the run (its start, data, options, model) goes in train.export's RUN_FIELDS too,
    # or an export of one of the run's step checkpoints drops it (tests/test_train_export.py places every field)
    # ----- what made the run -----
    command: str | None = None  # the command line that reproduces it
    init: str | None = None  # "random", or the folder / Hub id the weights started from
    init_root: str | None = None  # where a chain of fine-tuning stages started
    init_gave: str | None = None  # "encoder", "encoder and classifier head", "random encoder"
    head_seed: int | None = None  # a new classifier head's --head-seed (train.average compares its members')
    # ----- data -----
    corpus: str | None = None  # pretraining text (a mixture spec)
    corpus_sources: list | None = None  # per source of the mixture: share, documents, characters, passes
    masking: str | None = None  # "dynamic" or "static"
    train_data: str | None = None  # fine-tuning data
    max_length: int | None = None  # tokens per row: packed pretraining rows, or the classifier's truncation
    # ----- length and cost -----
    train_rows: int | None = None
    train_examples: int | None = None
    train_steps: int | None = None
    train_tokens: int | None = None
    stopped_by: str | None = None  # "done" (a length limit), "time" (the time budget)
    # a model exported from a step checkpoint of a run (train.export RUN/checkpoints/step-N): {"run", "step",
    # "run_steps", "command", "note"}; its other fields are the run's (init, data), its length the checkpoint's
    checkpoint: dict | None = None
    resumed_with: list | None = None  # options a --resume changed, from which step: [{"step", "changed"}]
    parameters: int | None = None
    train_time_s: float | None = None
    wall_time_s: float | None = None
    hardware: dict | None = None  # device, processes, precision, versions
    # a weight average's (which trains nothing, on the machine of `hardware`): the hardware of each run whose weights
    # it averages, in order (a member that is itself an average gives its own runs')
    member_hardware: list | None = None
    # ----- a pretraining run's final held-out MLM evaluation -----
    eval_loss: float | None = None
    eval_accuracy: float | None = None
    eval_perplexity: float | None = None
    eval_tokens: int | None = None
    eval_data: str | None = None
    eval_seed: int | None = None  # seed of the held-out masks (absent: the run's own --seed, before phase 8)
    # the yardstick of eval_accuracy: the best constant guess over the same targets (`train.evaluate.constant_guess`,
    # recorded by train.pretrain's final evaluation; absent before it): the commonest target as text (" the") and
    # the share of the targets it is
    eval_constant_guess_token: str | None = None
    eval_constant_guess_accuracy: float | None = None
    # ----- a classifier -----
    dev_accuracy: float | None = None
    dev_examples: int | None = None
    dev_data: str | None = None  # the dev file; None when the dev set is a slice of the training file (dev_slice)
    # train.finetune --dev-fraction: the dev set held out of the training file, {"data", "fraction", "n", "seed",
    # "split", "calibration_n", "calibration_seed", "text_column", "label_column", "removed_train_rows", "data_rows",
    # "data_sha256"}: n texts (fraction x the file's whole sentences, or x its rows with split "random"; a record from
    # before that took fraction x its rows) drawn from the rows the calibration slice left
    # (`train.finetune.held_out_dev` draws it again at the recorded n, from a file whose rows as read are still the
    # recorded count and digest, `train.tables.rows_record`)
    dev_slice: dict | None = None
    dev_ece: float | None = None  # expected calibration error after temperature scaling
    dev_ece_uncalibrated: float | None = None
    temperature: float | None = None
    imdb_accuracy: float | None = None  # out of domain: a fixed sample of IMDB reviews, their first tokens
    imdb_accuracy_whole: float | None = None  # the same reviews read whole (windows averaged, as the pipeline)
    imdb_examples: int | None = None
    imdb_data: str | None = None
    imdb_seed: int | None = None
    imdb_sample_removed_from_training: int | None = None
    selection: str | None = None  # which weights were kept: "last", "calibration", "ema DECAY"
    end_weights_dev_accuracy: float | None = None  # with "ema DECAY": the end-of-run weights' dev accuracy
    kept_step: int | None = None
    layer_lr_decay: float | None = None
    calibration_examples: int | None = None
    calibration_removed_train_rows: int | None = None
    averaged: int | None = None  # a weight average of this many members (train.average)
    members: list | None = None
    calibration: dict | None = None  # train.calibrate's result (temperature, ECE before/after, the slice and its file's
    # data_rows and data_sha256, as dev_slice records them)
    checks: dict | None = None  # behaviour checks per category
    # ----- added after training: train.evaluate --out, the release's fill-mask probe -----
    mlm: dict | None = None  # {"source", "max_length", "loss", "accuracy", "perplexity", ...}
    labeled: dict | None = None  # {"source", "accuracy", "ece", ...}; "dev_slice" too from train.evaluate --dev-slice
    imdb: dict | None = None  # {"source", "seed", "accuracy", ...}
    fill_mask_probe: dict | None = None  # {"top1", "top5", "sentences", ...}
    # keys this schema does not know, kept and written back as they are
    extra: dict[str, Any] = field(default_factory=dict)

    # ----- reading and writing -----
    @classmethod
    def from_dict(cls, data: dict) -> "RunMetrics":
        if not isinstance(data, dict):
            raise ValueError(f"metrics must be a JSON object, got {type(data).__name__}")
        known = {f.name for f in dataclasses.fields(cls)} - {"extra"}
        values, extra = {}, {}
        for key, value in data.items():
            name = RENAMED.get(key, key)
            if name in known and not (key in RENAMED and name in data):  # the new spelling wins over the old
                values[name] = value
            elif name not in known:
                extra[key] = value
        return cls(**values, extra=extra)

    def to_dict(self) -> dict:
        """The JSON object written to metrics.json: the fields that are set, then `extra`."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
               if f.name != "extra" and getattr(self, f.name) is not None}
        out.update((k, v) for k, v in self.extra.items() if k not in out)
        return out

    @staticmethod
    def path_of(path: str | os.PathLike, name: str = METRICS_NAME) -> Path:
        """A folder's metrics.json (or its file `name`: phases.json), or `path` itself when it names a .json file (a
        folder may have a dot in its name: runs/phase1.5)."""
        path = Path(path)
        return path / name if path.is_dir() or path.suffix.lower() != ".json" else path

    @classmethod
    def read(cls, path: str | os.PathLike, missing_ok: bool = False) -> "RunMetrics | None":
        """The metrics of a folder (or of a metrics file). A missing file raises FileNotFoundError, or gives
        None with `missing_ok`; a file that is not a JSON object raises ValueError naming it."""
        file = cls.path_of(path)
        if missing_ok and not file.is_file():
            return None
        try:
            return cls.from_dict(json.loads(file.read_text(encoding="utf-8")))
        except (json.JSONDecodeError, UnicodeDecodeError, ValueError) as err:
            raise ValueError(f"{file}: not a metrics file: {err}") from None

    @classmethod
    def read_finished(cls, run: str | os.PathLike, classifier: bool = False, option: str = "") -> "RunMetrics":
        """The metrics of a finished run (a folder, or its metrics file): FileNotFoundError when there are none (a
        run that did not finish, or not a run), and with `classifier` a ValueError for another kind of run's (no
        dev accuracy: a masked LM's). `option`: the command-line option that named the run, to begin the error."""
        file, where = cls.path_of(run), f"{option} " if option else ""
        metrics = cls.read(file, missing_ok=True)
        if metrics is None:
            raise FileNotFoundError(f"{where}{file}: no such file (is {run} a finished training run?)")
        if classifier and metrics.dev_accuracy is None:
            raise ValueError(f"{where}{file}: not a fine-tuned classifier's metrics (no dev_accuracy: a masked LM's "
                             "run?)")
        return metrics

    def write(self, path: str | os.PathLike) -> Path:
        """Write to a folder's metrics.json (or to the file `path`), atomically."""
        file = self.path_of(path)
        file.parent.mkdir(parents=True, exist_ok=True)
        return write_atomic(file, json.dumps(self.to_dict(), indent=2) + "\n")

    def updated(self, **values) -> "RunMetrics":
        """A copy with `values` set (unknown names go to `extra`)."""
        merged = {**self.to_dict(), **values}
        return type(self).from_dict(merged)

    # ----- what readers ask -----
    @property
    def is_average(self) -> bool:
        """A weight average of several runs (`train.average`), which trains nothing."""
        return isinstance(self.averaged, int) and self.averaged > 1

    def trained_hardware(self) -> list:
        """The hardware that trained these weights: [the run's `hardware`]; for a weight average, its members'
        machines (`member_hardware`), its `hardware` being the machine that averaged. A record of an average from
        before `member_hardware` was kept holds one member's hardware as its own (a masked LM's last, a
        classifier's first): that one machine, where that member trained."""
        if self.is_average and isinstance(self.member_hardware, list):
            return list(self.member_hardware)
        return [self.hardware]

    @property
    def held_out_dev(self) -> dict | None:
        """The dev slice held out of the training file (`dev_slice`, `train.finetune --dev-fraction`), or None when the
        dev set is a file of its own (`dev_data`)."""
        return self.dev_slice if isinstance(self.dev_slice, dict) and self.dev_slice.get("data") else None

    def dev_set_named(self, file_name=str, sst2: str | None = None, dev_file=None, none: str = "the dev set") -> str:
        """This classifier's dev set by name, the one choice between SST-2 dev, a slice held out of the training file
        and a dev file that the training scripts, summaries and cards make: `sst2` where the dev figures are SST-2
        dev's (`dev_is_sst2`; None: named as any other), the slice as `dev_slice_said` says it (its file by
        `file_name`), else the dev file by `dev_file` of its path (default `file_name`), `none` where none is
        recorded."""
        if sst2 is not None and self.dev_is_sst2():
            return sst2
        if self.held_out_dev:
            return dev_slice_said(self.held_out_dev, file_name)
        return (dev_file or file_name)(self.dev_data) if self.dev_data else none

    def dev_is_sst2(self) -> bool:
        """Whether the dev figures are SST-2 dev's: the dev set is a file of SST-2's (`is_sst2`), or where no dev file
        is recorded, the training data is (`trained_on`; none recorded is the shipped classifier's, SST-2); never a
        slice held out of the training file, even of SST-2 train."""
        if self.held_out_dev is not None:
            return False
        if isinstance(self.dev_data, str) and self.dev_data:
            return is_sst2([dataset_name(self.dev_data)])
        return is_sst2(trained_on(self))

    @property
    def classifier_accuracy(self) -> float | None:
        """The classifier's headline accuracy (dev set, else a later `train.evaluate --labeled`), a fraction."""
        if finite_number(self.dev_accuracy) is not None:
            return finite_number(self.dev_accuracy)
        return finite_number(self.labeled.get("accuracy")) if isinstance(self.labeled, dict) else None

    @property
    def held_out(self) -> tuple[float | None, float | None, float | None, int]:
        """(loss, accuracy, perplexity, masks) on the held-out text: the mean over several fixed masks where a
        later `train.evaluate --mlm-seeds N` (or `train.average`) measured it on the same text, else the run's
        own end-of-training evaluation (one mask). A later evaluation of the text's first characters only
        (`--mlm-max-chars`, recorded as max_chars) is not the same text."""
        later = self.mlm if isinstance(self.mlm, dict) else {}
        same_text = same_text_file(later.get("source"), self.eval_data) and not later.get("max_chars")
        number = finite_number
        if (number(later.get("masks")) or 1) > 1 and same_text and number(later.get("accuracy")) is not None:
            return number(later.get("loss")), later["accuracy"], number(later.get("perplexity")), later["masks"]
        return number(self.eval_loss), number(self.eval_accuracy), number(self.eval_perplexity), 1

    def evaluations(self) -> list[Evaluation]:
        """Every figure that names the data it was measured on, in a fixed order: a fuller evaluation of the
        same data and metric after the one it supersedes (a release's train.evaluate section after training's
        own check; IMDB reviews read whole after their first 128 tokens)."""
        found: list[Evaluation] = []

        def add(name, data, metric, value):
            value = finite_number(value)
            if isinstance(data, str) and value is not None:
                found.append(Evaluation(name, data, metric, value))

        add("held-out MLM", self.eval_data, "accuracy", self.eval_accuracy)
        add("held-out MLM", self.eval_data, "perplexity", self.eval_perplexity)
        add("dev", self.dev_data, "accuracy", self.dev_accuracy)
        if self.held_out_dev and not self.dev_data:
            add("held-out dev", self.held_out_dev["data"], "accuracy", self.dev_accuracy)
        add("IMDB", self.imdb_data, "accuracy", self.imdb_accuracy)
        add("IMDB read whole", self.imdb_data, "accuracy", self.imdb_accuracy_whole)
        for name, section in (("held-out MLM", self.mlm), ("labeled", self.labeled), ("IMDB", self.imdb)):
            if isinstance(section, dict):
                # train.evaluate --dev-slice: a slice of the training file (its source), not that file
                held_out = name == "labeled" and isinstance(section.get("dev_slice"), dict)
                for metric in ("accuracy", "perplexity"):
                    add("held-out dev" if held_out else name, section.get("source"), metric, section.get(metric))
        return found


def read_phase_history(path: str | os.PathLike) -> list[RunMetrics]:
    """The phases of a folder's phases.json (or of the file `path`), in order: FileNotFoundError if there is
    none, ValueError naming the file if it is not a list of metrics."""
    file = RunMetrics.path_of(path, PHASES_NAME)
    try:
        phases = json.loads(file.read_text(encoding="utf-8"))
        if not isinstance(phases, list):
            raise ValueError(f"expected a list of the phases' metrics, got a {type(phases).__name__}")
        return [RunMetrics.from_dict(p) for p in phases]
    except ValueError as err:  # json.JSONDecodeError and UnicodeDecodeError too
        raise ValueError(f"{file}: not a phases file: {err}") from None


def write_phase_history(folder: str | os.PathLike, phases: list[RunMetrics]) -> Path:
    """Write a folder's phases.json, atomically."""
    return write_atomic(Path(folder) / PHASES_NAME, json.dumps([p.to_dict() for p in phases], indent=1) + "\n")


def finite_number(value) -> float | None:
    """`value` as a float when it is a finite real number (not a bool, NaN or infinity: a diverged run's), else None
    (metrics.json is free-form: whatever a field holds, its readers ask this)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)
