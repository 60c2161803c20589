"""Labelled tables: the TSV/CSV files a classifier is fine-tuned and scored on (`read_labeled`, or their texts
alone: `read_texts`), from a local file or a `hub:` spec, and the small hand-written TSVs of behaviour checks and
probes (`read_table`). Every error names the file, and the line at fault when there is one.

A .tsv is read GLUE style, without quoting (a cell cannot hold a tab or a line break); a .csv with the csv module's
quoting. Labelled texts are read as a classifier reads them in use: a special token written out (`<s>`) is that
token, and a note says how many texts hold one (see `train.data`'s Decisions)."""
from __future__ import annotations

import csv
import hashlib
import json
import os
import sys
from pathlib import Path

from .data import (HUB_PREFIX, SENTIMENT_LABELS, SPECIAL_TOKENS_WRITTEN, DataError, load_hub, missing_data, note,
                   open_text, plain_suffix, say_once, undecodable)


def _default_label_names(source: str, labels: list[int]) -> dict[int, str]:
    name = source.lower()
    if set(labels) <= {0, 1} and any(k in name for k in ("sst", "imdb", "sentiment")):
        return dict(SENTIMENT_LABELS)
    return {i: f"LABEL_{i}" for i in range(max(labels) + 1)}


def _shown_columns(columns) -> str:
    """A header's columns for an error message, each cut to 40 characters (a text file read as a table has a
    whole review for a header)."""
    return str([c if len(c) <= 40 else c[:40] + "…" for c in columns])


def pick_column(columns, wanted, defaults, source, what, option: bool = True) -> str:
    """The column of `columns` named `wanted`, else the first of `defaults` there; the error names the option that
    picks it (--text-column, --label-column) unless `option` is False (pretraining text has no such option)."""
    fix = f"; pass --{what}-column NAME" if option else ""
    if wanted is not None:
        if wanted not in columns:
            raise DataError(f"{source}: no {what} column {wanted!r}; columns present: {_shown_columns(columns)}{fix}")
        return wanted
    for name in defaults:
        if name in columns:
            return name
    raise DataError(f"{source}: no {what} column (looked for {list(defaults)}); columns present: "
                    f"{_shown_columns(columns)}{fix}")


# how to fix a label outside the label set that train.finetune's --labels sets; its default, where it is the label
# set, is said with the label set (not in the fix: a file of other labels, read with a label set of one's own, is not
# about the default)
LABELS_FIX = "pass --labels with your label names in id order"


def _parse_label(value, where: str, label2id: dict[str, int] | None, id2label: dict[int, str] | None,
                 fix: str | None = LABELS_FIX) -> int:
    """A label cell as its id; an error ends with `fix` (how to give the right label set), if any. Where `fix` is
    LABELS_FIX, the label set is --labels' (another fix names another one: the model's, the members'): its default is
    said to be it, and a file read without a label set (ids only, as the IMDB sample is read) is not told to pass
    --labels, which does not change how it is read."""
    text = str(value).strip()
    if label2id is not None and text in label2id:
        return label2id[text]
    by_labels = fix == LABELS_FIX
    default = by_labels and id2label == SENTIMENT_LABELS
    fix = f"; {fix}" if fix and not (by_labels and id2label is None) else ""
    try:
        label = int(text)
    except ValueError:
        known = f"; expected an int or one of {sorted(label2id)}" if label2id else "; expected an int"
        said = " (--labels' default)" if default else ""
        raise DataError(f"{where}: label {text!r} is not an int{known}{said}{fix}") from None
    if label < 0 or (id2label is not None and label not in id2label):
        allowed = sorted(id2label) if id2label is not None else "ints >= 0"
        said = " (the labels negative,positive, --labels' default)" if default else ""
        raise DataError(f"{where}: label {label} is not in the label set {allowed}{said}{fix}")
    return label


def read_table(path, columns: tuple[str, ...], what: str) -> list[tuple[int, dict[str, str]]]:
    """(line number, {column: cell}) for each row of a small hand-written TSV whose header names `columns` (in
    any order; other columns are ignored): behaviour checks, probes. UTF-8 (a byte-order mark dropped), cells
    split at tabs as `read_labeled` splits them (no quoting) and stripped; blank lines and lines that start with
    '#' are skipped, above the header too; every row fills every one of `columns`. Errors name the file, and the
    line where one is at fault; `what` names the kind of file ("checks", "probe")."""
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"{path}: a folder, not a {what} file")
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such {what} file")
    try:
        with open_text(path, newline="") as f:
            lines = list(enumerate(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE), start=1))
    except UnicodeDecodeError as err:
        raise undecodable(path, err) from None
    lines = [(number, [cell.strip() for cell in cells]) for number, cells in lines
             if any(cell.strip() for cell in cells) and not cells[0].startswith("#")]
    header = lines[0][1] if lines else []
    expected = "<TAB>".join(columns)
    if not set(columns) <= set(header):
        raise DataError(f"{path}: the header must be {expected}, got {header}")
    rows = []
    for number, cells in lines[1:]:
        if len(cells) > len(header):
            raise DataError(f"{path} line {number}: {len(cells)} fields, the header has {len(header)}")
        row = dict(zip(header, cells))
        if empty := [column for column in columns if not row.get(column)]:
            raise DataError(f"{path} line {number}: no {', '.join(empty)}; each row needs {', '.join(columns)}, "
                            "tab-separated")
        rows.append((number, {column: row[column] for column in columns}))
    if not rows:
        raise DataError(f"{path}: no {what} rows (a header {expected}, then one row each)")
    return rows


def expected_header(text_column: str | None = None, label_column: str | None = None) -> str:
    """The header a labelled file read for these columns would have, as an error message suggests it: the columns
    it is read by (text<TAB>label for IMDB's train.tsv, read by its `text` column), else sentence<TAB>label."""
    return f"{text_column or 'sentence'}<TAB>{label_column or 'label'}"


QUOTED_CELLS_WARNING = 10  # cells in CSV quoting in a .tsv before it is warned about


def _csv_quoted(cell: str) -> bool:
    """A cell as the csv module writes one that holds a quote: in quotes, its own quotes doubled."""
    cell = cell.strip()
    return len(cell) >= 2 and cell[0] == cell[-1] == '"' and '""' in cell


def rows_from_file(path: Path, header_only: bool = False, expected: str = expected_header()):
    """(columns, iterator of (line number, row dict)) from a TSV or CSV file with a header (UTF-8, a byte-order
    mark allowed); `header_only`: the columns, and no rows (the file is closed). `expected`: the header an error
    about a missing one suggests. The one reader of these files: `read_labeled` and `read_texts` read their rows,
    and a file's header alone (`header_only`) is what train.data's option checks, train.imdb_sample and
    train.recorded_columns look at."""
    if path.is_dir():
        raise IsADirectoryError(f"{path} is a folder, not a TSV/CSV file")
    if not path.is_file():
        raise missing_data(path, what="no such file")
    f = open_text(path, newline="")
    try:
        header = f.readline()
    except UnicodeDecodeError as err:
        f.close()
        raise undecodable(path, err) from None
    if not header.strip():
        f.close()
        what = "its first line is blank" if path.stat().st_size > len(header) else "empty file"  # a text corpus?
        raise DataError(f"{path}: {what} (expected a header line such as '{expected}')")
    tsv = plain_suffix(path) == ".tsv" or (plain_suffix(path) != ".csv" and "\t" in header)
    f.seek(0)
    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
    reader = (csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE) if tsv else csv.reader(f))
    columns = [c.strip() for c in next(reader)]
    if header_only:
        f.close()
        return columns, iter(())

    quoting = (" (a .tsv is read without quoting, GLUE style: a quoted field cannot hold a tab or a line break; "
               "write it with csv.QUOTE_NONE, or as a .csv)") if tsv else ""

    def rows():
        quoted = 0  # cells in CSV quoting ("a ""b"" c"), which a .tsv keeps as written
        with f:
            try:
                for row in reader:
                    if not any(cell.strip() for cell in row):
                        continue
                    if len(row) != len(columns):
                        raise DataError(f"{path} line {reader.line_num}: {len(row)} fields, the header has "
                                        f"{len(columns)}{quoting}")
                    if tsv and quoted < QUOTED_CELLS_WARNING:
                        quoted += sum(_csv_quoted(cell) for cell in row)
                        if quoted >= QUOTED_CELLS_WARNING:
                            say_once(f'warning: {path}: cells in CSV quoting ("a ""b"" c") are read as written'
                                      f'{quoting}')
                    yield reader.line_num, dict(zip(columns, row))
            except UnicodeDecodeError as err:
                raise undecodable(path, err) from None

    return columns, rows()


def read_labeled(source: str, text_column: str | None = None, label_column: str | None = None,
                 label_names=None, labels_fix: str | None = LABELS_FIX,
                 column_options: bool = True) -> tuple[list[str], list[int], dict[int, str]]:
    """(texts, labels, id2label) from a TSV/CSV with a header, or a `hub:NAME:CONFIG:SPLIT[:COLUMN]` spec.

    Text column defaults to the spec's COLUMN, else `sentence` then `text`; label column to `label`. `label_names` (a
    list in id order, or a dict id -> name) fixes the label set; labels may then also be given by name. Without it, a
    Hub ClassLabel's names are used, SST-2/IMDB get {0: negative, 1: positive}, and anything else LABEL_i.
    Texts are returned as stored (apply `roberta.text.normalize_for_classifier` before tokenizing). Errors say
    how to fix them: a label outside the label set ends with `labels_fix` (by default, pass --labels:
    train.finetune's option; not said of a file read without a label set, whose labels are ids), a missing column
    names --text-column or --label-column unless `column_options` is False.
    """
    source = os.fspath(source)
    id2label = None
    if label_names is not None:
        id2label = dict(label_names) if isinstance(label_names, dict) else dict(enumerate(label_names))
        id2label = {int(k): str(v) for k, v in id2label.items()}
    if source.startswith(HUB_PREFIX):
        ds, spec_column = load_hub(source)  # a spec's :COLUMN is the text column, unless --text-column says
        text_column = text_column or spec_column
        columns = ds.column_names
        label_col = pick_column(columns, label_column, ["label"], source, "label", column_options)
        feature = ds.features[label_col]
        if id2label is None and hasattr(feature, "names"):
            id2label = dict(enumerate(feature.names))
        text_col = pick_column(columns, text_column, ["sentence", "text"], source, "text", column_options)
        rows = ((i + 1, row) for i, row in enumerate(ds))
        place = "row"
    else:
        columns, rows = rows_from_file(Path(source), expected=expected_header(text_column, label_column))
        text_col = pick_column(columns, text_column, ["sentence", "text"], source, "text", column_options)
        label_col = pick_column(columns, label_column, ["label"], source, "label", column_options)
        place = "line"
    label2id = {v: k for k, v in id2label.items()} if id2label else None
    texts, labels = [], []
    for number, row in rows:
        where = f"{source} {place} {number}"
        text = str(row[text_col] or "").strip()
        if not text:
            raise DataError(f"{where}: empty text in column {text_col!r}")
        texts.append(text)
        labels.append(_parse_label(row[label_col], where, label2id, id2label, labels_fix))
    if not texts:
        raise DataError(f"{source}: no examples (only a header?)")
    _note_special_tokens_written(source, texts)
    return texts, labels, id2label or _default_label_names(source, labels)


def rows_record(texts: list[str], labels: list[int]) -> dict:
    """What a slice held out of a labelled file records of the file, so that drawing it again can tell whether the
    file changed since (`train.calibrate.check_rows_record`): {"data_rows": the rows read, "data_sha256": a sha256 of
    their texts and label ids as `read_labeled` gives them} (the rows as read, not the file's bytes: a hub: spec has
    none, and a file saved again with other line endings holds the same rows)."""
    rows = json.dumps([texts, labels], ensure_ascii=False).encode("utf-8")
    return {"data_rows": len(texts), "data_sha256": hashlib.sha256(rows).hexdigest()}


def _note_special_tokens_written(source: str, texts: list[str]) -> None:
    """A note when labelled texts hold a special token written out (`<s>`…`</s>` is HTML's strikethrough): a
    classifier reads each as that token, in fine-tuning as in `roberta.pipeline` and the app, not as the text it
    is (pretraining text reads it as text: `train.packing.tokenize_documents`)."""
    held = [t for t in texts if any(token in t for token in SPECIAL_TOKENS_WRITTEN)]
    if held:
        found = [token for token in SPECIAL_TOKENS_WRITTEN if any(token in t for t in held)]
        note(f"{source}: {len(held):,} of {len(texts):,} texts hold {', '.join(found)} written out; a classifier "
              "reads each as that special token, not as text, as it will in use")


def read_texts(source: str, text_column: str | None = None, column_options: bool = True) -> list[str]:
    """The texts of a labelled TSV/CSV (or `hub:` spec) without its labels, which are not read (they may be names,
    and no label set is known): labelled data as unlabelled text (`labeled_documents`, train.tapt_corpus). Text
    column as `read_labeled`'s; `column_options`: as there."""
    source = os.fspath(source)
    if source.startswith(HUB_PREFIX):
        ds, spec_column = load_hub(source)
        columns, rows = ds.column_names, ((i + 1, row) for i, row in enumerate(ds))
        text_column, place = text_column or spec_column, "row"
    else:
        columns, rows = rows_from_file(Path(source), expected=expected_header(text_column))
        place = "line"
    text_col = pick_column(columns, text_column, ["sentence", "text"], source, "text", column_options)
    texts = []
    for number, row in rows:
        text = str(row[text_col] or "").strip()
        if not text:
            raise DataError(f"{source} {place} {number}: empty text in column {text_col!r}")
        texts.append(text)
    if not texts:
        raise DataError(f"{source}: no examples (only a header?)")
    return texts


