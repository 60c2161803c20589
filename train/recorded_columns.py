"""The (text, label) columns a classifier was fine-tuned on, read from its model folder's metrics.json (the recorded
`train.finetune` command, else its calibration slice), and the columns to read another data file in for it. The
scripts that read a classifier's own data files (train.evaluate, train.average, train.calibrate) read them so."""
from __future__ import annotations

import argparse
import contextlib
import os
import shlex
from pathlib import Path

from roberta.run_metrics import RunMetrics

from .data import HUB_PREFIX, DataError
from .tables import rows_from_file


def _finetune_columns(command) -> tuple[str | None, str | None] | None:
    """The --text-column and --label-column of a recorded `python -m train.finetune` command (None for one it does
    not give), or None when it is not such a command."""
    try:
        words = shlex.split(command) if isinstance(command, str) else []
    except ValueError:
        return None
    if words[1:3] != ["-m", "train.finetune"]:
        return None
    parser = argparse.ArgumentParser(add_help=False, exit_on_error=False)  # its two options, spelt as it allows
    parser.add_argument("--text-column")
    parser.add_argument("--label-column")
    try:
        known, _ = parser.parse_known_args(words[3:])
    except (argparse.ArgumentError, SystemExit):
        return None
    return known.text_column, known.label_column


def recorded_columns(model_folder) -> tuple[str | None, str | None]:
    """The (text, label) columns a classifier was fine-tuned on, from its metrics.json (`columns_in_metrics`);
    (None, None) for a folder without a readable one. The scripts that read a classifier's own data files
    (train.evaluate, train.average, train.calibrate) read them by these columns."""
    metrics = RunMetrics()  # none recorded
    with contextlib.suppress(OSError, ValueError):
        metrics = RunMetrics.read(model_folder, missing_ok=True) or metrics  # a folder, or its metrics.json itself
    return columns_in_metrics(metrics.to_dict())


def columns_in_metrics(metrics: dict) -> tuple[str | None, str | None]:
    """The (text, label) columns of the `train.finetune` command a metrics.json records (its own, its run's for a
    step checkpoint, the first member's for a weight average), else of its calibration slice; None for a column
    it does not name (`read_labeled`'s defaults: sentence or text, and label)."""
    if not isinstance(metrics, dict):
        return None, None
    members = metrics.get("members") if isinstance(metrics.get("members"), list) else []
    for record in (metrics, metrics.get("checkpoint"), *members[:1]):
        if isinstance(record, dict) and (columns := _finetune_columns(record.get("command"))):
            return columns
    calibration = metrics.get("calibration")
    spec = calibration.get("slice") if isinstance(calibration, dict) else None
    if not isinstance(spec, dict):
        return None, None
    return spec.get("text_column"), spec.get("label_column")


def columns_for(source, columns: tuple[str | None, str | None]) -> tuple[str | None, str | None]:
    """The (text, label) columns to read `source` in, for a model fine-tuned in `columns` (`columns_in_metrics`):
    those when the file has them (the files the model recorded), else `read_labeled`'s defaults: a file of another
    layout that a user names (SST-2's sentence,label for a model fine-tuned on review,sentiment) is read as it is
    laid out, not refused. A hub: spec keeps them."""
    source = os.fspath(source)
    if source.startswith(HUB_PREFIX) or not any(columns):
        return columns
    try:
        header, _ = rows_from_file(Path(source), header_only=True)
    except (OSError, DataError):
        return columns  # the read that follows says what is wrong with the file
    return columns if all(column is None or column in header for column in columns) else (None, None)
