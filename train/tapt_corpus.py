"""Task-adaptive pretraining text: the classifier's own kind of text, normalised as the classifier reads it.

    python -m train.tapt_corpus --out runs/tapt
    python -m train.pretrain --init assets/mini-roberta-mlm \\
        --corpus runs/tapt/imdb-lower.txt=0.7,runs/tapt/sst2-lower.txt=0.3 --batch-size 32 --lr 2e-4 \\
        --warmup 100 --dropout 0 --time-budget-min 18 --out runs/tapt/mlm

Why: the encoder is pretrained on cased Wikipedia, WikiText and IMDB text, but the classifier reads every input
lower-cased and detokenized (`roberta.text.normalize_for_classifier`: SST-2 ships lower-cased, so the saved
classifier's tokenizer lower-cases). A short continuation of masked-language-model training on unlabelled
text of the task's domain in that form (task-adaptive pretraining, Gururangan et al. 2020, "Don't Stop
Pretraining") lets the encoder meet lower-cased review text before it meets the labels.

Writes two corpora, one document per line, for a `train.pretrain --corpus` mixture:
- imdb-lower.txt: the unlabelled IMDB reviews (--imdb-unsup), normalised;
- sst2-lower.txt: the SST-2 training rows (--sst2-train, text only, no labels) of at least --min-words words
  (whole sentences and their longer phrases; the many short sub-phrases would repeat them), normalised.
  Every row is a candidate, the whole sentences `train.finetune --calibration-n` later holds out to fit the
  temperature too: that slice is held out of the labelled fine-tuning, not of this unlabelled text.
No dev or test text is read. The IMDB evaluation sample comes from the labelled train.tsv; the unlabelled reviews'
copies of its reviews are left out (`train.imdb_sample.imdb_sample_copies`: when --imdb-unsup is IMDB's unsup.txt, with
train.tsv beside it).
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path

from roberta.files import temporary_prefix
from roberta.text import normalize_for_classifier

from .data import check_labeled_source, missing_data, open_text, undecodable
from .imdb_sample import without_sample_copies
from . import paths
from .runtime import EXIT_OK, exit_code, output_folder, report_user_error
from .tables import read_texts

DEFAULT_UNSUP = paths.IMDB_UNSUP
DEFAULT_SST2 = paths.SST2_TRAIN


def write_corpora(out, imdb_unsup: str = DEFAULT_UNSUP, sst2_train: str = DEFAULT_SST2,
                  min_words: int = 8, text_column: str | None = None) -> dict:
    """Write OUT/imdb-lower.txt and OUT/sst2-lower.txt; returns {file name: documents written}. Each file is
    written under a temporary name and renamed once both are complete and non-empty, sst2-lower.txt last (the
    recipe's sign that this step is done): a failed or stopped run leaves an earlier run's pair as it was (a bad
    input never deletes it), or no sst2-lower.txt, so its re-run redoes it. `text_column`: --sst2-train's (default:
    sentence, else text); its labels are not read."""
    out = output_folder(out)
    if min_words < 1:
        raise ValueError(f"--min-words must be at least 1, got {min_words}")
    check_inputs(imdb_unsup, sst2_train, text_column)
    out.mkdir(parents=True, exist_ok=True)
    counts = {"imdb-lower.txt": 0, "sst2-lower.txt": 0}
    tmp = {name: out / f"{temporary_prefix(name)}{os.getpid()}" for name in counts}
    try:
        _write(imdb_unsup, sst2_train, text_column, min_words, tmp, counts)
        for name, n in counts.items():  # an empty file failed later, in train.pretrain ("no documents found")
            if n == 0:
                raise ValueError(f"{out / name}: no document was kept (--min-words {min_words}; is the input right?)")
        (out / "sst2-lower.txt").unlink(missing_ok=True)  # stopped between the renames: no sign of a finished step
        for name in counts:  # sst2-lower.txt last
            os.replace(tmp[name], out / name)
    finally:
        for path in tmp.values():
            path.unlink(missing_ok=True)
    return counts


def check_lines(path, option: str, default: bool = False) -> None:
    """A file of reviews read line by line (--imdb-unsup; train.sentiment_recipe's --tapt-unsup): there, and a
    file, not a folder; an error naming `option` (`data.missing_data`: for a missing default, how to point the
    command at the data)."""
    if Path(path).is_dir():  # a folder, named as one (not "no such file")
        raise IsADirectoryError(f"{option} {path}: a folder, not a file")
    if not Path(path).is_file():  # before OUT is made (and its finished files deleted)
        raise missing_data(path, option, default=default, what="no such file")


def check_inputs(imdb_unsup: str = DEFAULT_UNSUP, sst2_train: str = DEFAULT_SST2,
                 text_column: str | None = None) -> None:
    """The two inputs, checked by their options' names before OUT is touched (a failed input deleted the finished
    files of an earlier run there): --imdb-unsup a text file (read line by line: not a folder), --sst2-train a
    labelled file with a text column (`train.data`'s checks; a missing default says how to point at the data)."""
    check_lines(imdb_unsup, "--imdb-unsup", default=imdb_unsup == DEFAULT_UNSUP)
    check_labeled_source(sst2_train, "--sst2-train", default=sst2_train == DEFAULT_SST2, text_column=text_column,
                         labels=False)  # a hub: spec: its loader's


def _write(imdb_unsup, sst2_train, text_column, min_words: int, files: dict, counts: dict) -> None:
    try:
        with open_text(imdb_unsup) as src:
            lines = src.readlines()
    except UnicodeDecodeError as err:  # the message would not name the file
        raise undecodable(Path(imdb_unsup), err) from None
    with open(files["imdb-lower.txt"], "w", encoding="utf-8") as dst:
        for line in without_sample_copies(imdb_unsup, lines):
            text = normalize_for_classifier(line)
            if text:
                dst.write(text + "\n")
                counts["imdb-lower.txt"] += 1
    texts = read_texts(sst2_train, text_column)  # the text alone: the labels, of any kind, are not used
    with open(files["sst2-lower.txt"], "w", encoding="utf-8") as dst:
        for text in texts:
            if len(text.split()) >= min_words:
                dst.write(normalize_for_classifier(text) + "\n")
                counts["sst2-lower.txt"] += 1


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m train.tapt_corpus", description=__doc__.split("\n\n")[0],
                                epilog=__doc__.split("\n\n", 1)[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="folder for imdb-lower.txt and sst2-lower.txt")
    p.add_argument("--imdb-unsup", default=DEFAULT_UNSUP,
                   help="unlabelled reviews, one per line (default: %(default)s)")
    p.add_argument("--sst2-train", default=DEFAULT_SST2, help="SST-2 training TSV (default: %(default)s)")
    p.add_argument("--text-column", default=None,
                   help="--sst2-train's text column (default: sentence, else text); its labels are not read")
    p.add_argument("--min-words", type=int, default=8, help="shortest SST-2 row kept (default: %(default)s)")
    args = p.parse_args(argv)
    try:
        counts = write_corpora(args.out, args.imdb_unsup, args.sst2_train, args.min_words, args.text_column)
    except (OSError, ValueError) as err:
        return report_user_error(err)
    for name, n in counts.items():
        print(f"{args.out}/{name}: {n:,} documents")
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(exit_code(main))
