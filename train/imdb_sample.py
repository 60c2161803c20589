"""The IMDB evaluation sample and its copies: the fixed 1,000 reviews of IMDB's train.tsv on which `train.evaluate
--imdb` and fine-tuning score IMDB (`imdb_sample`, `imdb_sample_as`), and the test that keeps those reviews, their
exact and near copies included, out of every text read for training (`SampleCopies`, `without_sample_copies`).
`train.data` leaves them out of the corpora it reads (`read_documents`, `labeled_documents`)."""
from __future__ import annotations

import contextlib
import functools
import math
import random
import sys
from pathlib import Path

from roberta.text import sentiment_of

from .data import SENTIMENT_LABELS, DataError, note
from .tables import read_labeled, rows_from_file


def evaluation_sample(count: int, n: int = 1000, seed: int = 0) -> list[int]:
    """The sorted row indices of a fixed random sample of n of `count` rows (the IMDB evaluation sample's)."""
    return sorted(random.Random(seed).sample(range(count), min(n, count)))


IMDB_TEXT_COLUMN = "text"  # the column `imdb_sample` reads: IMDB's train.tsv is text<TAB>label


def check_imdb_n(n: int) -> None:
    """--imdb-n's check, one message wherever the option is given (finetune, evaluate, `imdb_sample`)."""
    if n < 1:
        raise ValueError(f"--imdb-n must be at least 1 review (--imdb '' skips the IMDB sample), got {n}")


def read_imdb(path: str) -> tuple[list[str], list[int]]:
    """Every labelled review of an IMDB file (train.tsv: header text<TAB>label, 1 = positive), as read."""
    texts, labels, _ = read_labeled(path, text_column=IMDB_TEXT_COLUMN, label_column="label")
    return texts, labels


def imdb_sample(path: str, n: int = 1000, seed: int = 0, rows=None) -> tuple[list[str], list[int]]:
    """A fixed random sample of n labelled reviews (IMDB train.tsv: header text<TAB>label, 1 = positive); `rows`:
    the file's (texts, labels) when the caller has read them already (`read_imdb`)."""
    check_imdb_n(n)
    texts, labels = rows if rows is not None else read_imdb(path)
    picked = evaluation_sample(len(texts), n, seed)
    return [texts[i] for i in picked], [labels[i] for i in picked]


def imdb_label_ids(id2label: dict) -> dict[int, int] | None:
    """The IMDB sample's label ids (0 negative, 1 positive) as the ids of a model with these labels, matched by
    name (`roberta.text.sentiment_of`): {0: 1, 1: 0} for the labels positive,negative. None unless the labels are
    exactly a negative and a positive one: scored by id, the IMDB figure of other labels would mean nothing."""
    polarity = {sentiment_of(name): int(i) for i, name in id2label.items()}
    if len(id2label) != 2 or polarity.keys() != {"negative", "positive"}:
        return None
    return {imdb_id: polarity[name] for imdb_id, name in SENTIMENT_LABELS.items()}


def _not_imdb_labels(id2label: dict) -> str:
    names = [str(name) for _, name in sorted(id2label.items())]
    return (f"its reviews are labelled negative and positive, and the labels {names} are not a negative and a "
            "positive label (neg and pos count as such)")


def imdb_skip_note(id2label: dict) -> str | None:
    """Why the IMDB check is skipped for a model with these labels (a `note:` line), or None when it is scored."""
    if imdb_label_ids(id2label) is not None:
        return None
    return f"note: the IMDB check is skipped: {_not_imdb_labels(id2label)}"


def imdb_sample_as(path: str, n: int, seed: int, id2label: dict, rows=None) -> tuple[list[str], list[int]]:
    """`imdb_sample` (of `rows`, the file as read, if given) with its labels as the ids of a model with `id2label`
    (`imdb_label_ids`; a ValueError when they are not a negative and a positive label, or for a review whose label
    is neither 0 nor 1)."""
    ids = imdb_label_ids(id2label)
    if ids is None:
        raise ValueError(f"{path}: {_not_imdb_labels(id2label)}")
    texts, labels = imdb_sample(path, n, seed=seed, rows=rows)
    if unknown := sorted(set(labels) - ids.keys()):
        raise DataError(f"{path}: label {unknown[0]} is not an IMDB label (0 = negative, 1 = positive)")
    return texts, [ids[label] for label in labels]


SHINGLE_WORDS = 8  # a near-copy's unit: runs of 8 words
NEAR_COPY_SHARE = 0.9  # of a sample review's runs found in a text: a near-copy of it


def _folded(text: str) -> str:
    return " ".join(text.split()).casefold()


def _shingles(folded: str):
    words = folded.split(" ")
    return zip(*(words[i:] for i in range(SHINGLE_WORDS)))


class SampleCopies:
    """The reviews of an evaluation sample, to keep their copies out of training: `text in SampleCopies(sample)`
    when `text` is one of them with whitespace collapsed and case folded, or a near-copy of one: a text holding at
    least 90% of its 8-word runs (shingles, of the folded words). IMDB holds such near-copies: one character
    changed, or the same review extended; in IMDB's train.tsv and unsup.txt every one found was at 100% or over
    90%, and the nearest of the other texts at 63%. The one test for every reader of review text for training.

    Fast, with the same answers as counting every shingle of every text: a near-copy of a review with S shingles,
    `needed` of them required, lacks at most S - needed, so it holds at least one of any S - needed + 1 of them
    (the review's anchors, chosen by their rarest word in the sample). A text is counted in full only when it
    holds an anchor; most texts are let go after one look at their words (none is an anchor's rarest word)."""

    def __init__(self, sample):
        sample = [_folded(text) for text in sample]
        self._folded = set(sample)
        self._needed = []  # per sample review: how many of its shingles make a near-copy
        self._owners = {}  # shingle -> the sample reviews that hold it
        self._anchors = {}  # an anchor's rarest word -> [(its place in the anchor, the anchor)]
        reviews_with = {}  # word -> how many sample reviews hold it
        for text in sample:
            for word in set(text.split(" ")):
                reviews_with[word] = reviews_with.get(word, 0) + 1
        # the words from the rarest: in the fewest sample reviews, then the longest (the rarer in other text too)
        words = sorted(reviews_with, key=lambda word: (reviews_with[word], -len(word), word))
        rank = {word: r for r, word in enumerate(words)}
        for i, text in enumerate(sample):
            shingles = set(_shingles(text))
            needed = max(1, math.ceil(NEAR_COPY_SHARE * len(shingles)))
            self._needed.append(needed)
            for shingle in shingles:
                self._owners.setdefault(shingle, []).append(i)
            rarest = {shingle: min(map(rank.__getitem__, shingle)) for shingle in shingles}
            for shingle in sorted(shingles, key=lambda s: (rarest[s], s))[:len(shingles) - needed + 1]:
                key = words[rarest[shingle]]
                self._anchors.setdefault(key, []).append((shingle.index(key), shingle))
        self._keys = frozenset(self._anchors)

    @classmethod
    def of(cls, sample) -> "SampleCopies":
        """`SampleCopies(sample)`, built once a process for the same reviews (1.5 s for IMDB's 1,000): pretraining
        on IMDB's train.tsv and unsup.txt leaves the one sample out of both."""
        return _sample_copies(tuple(sample))

    def __contains__(self, text: str) -> bool:
        words = text.casefold().split()  # the words of `_folded(text)`
        if " ".join(words) in self._folded:
            return True
        keys = self._keys.intersection(words)
        if not keys or not self._holds_an_anchor(words, keys):
            return False
        found = {}
        for shingle in self._owners.keys() & _shingles(" ".join(words)):
            for i in self._owners[shingle]:
                found[i] = found.get(i, 0) + 1
        return any(n >= self._needed[i] for i, n in found.items())

    def _holds_an_anchor(self, words: list[str], keys) -> bool:
        """Whether the 8-word runs of `words` include an anchor whose rarest word is one of `keys`."""
        for key in keys:
            place = -1
            with contextlib.suppress(ValueError):  # (no further place)
                while True:
                    place = words.index(key, place + 1)
                    for offset, anchor in self._anchors[key]:
                        start = place - offset
                        if start >= 0 and tuple(words[start:start + SHINGLE_WORDS]) == anchor:
                            return True
        return False


@functools.lru_cache(maxsize=4)
def _sample_copies(sample: tuple[str, ...]) -> SampleCopies:
    """`SampleCopies.of`'s store: the last 4 samples' `SampleCopies`."""
    return SampleCopies(sample)


IMDB_UNSUP_NAME = "unsup.txt"  # IMDB's unlabelled reviews; the evaluation sample comes from train.tsv beside it
IMDB_TRAIN_NAMES = ("train.tsv", "train.tsv.xz")


@functools.lru_cache(maxsize=None)
def imdb_sample_copies(path: str) -> SampleCopies | None:
    """For IMDB's unlabelled reviews (a file named unsup.txt, or unsup.txt.xz), the IMDB evaluation sample drawn
    from the train.tsv (or .xz) beside it as `SampleCopies`; None for any other file. With no train.tsv in IMDB's
    layout there, None and a one-line warning (once a file): the sample cannot be drawn, so nothing is left out."""
    path = Path(path)
    if path.name not in (IMDB_UNSUP_NAME, IMDB_UNSUP_NAME + ".xz"):
        return None
    for name in IMDB_TRAIN_NAMES:
        train = path.parent / name
        if train.is_file() and IMDB_TEXT_COLUMN in rows_from_file(train, header_only=True)[0]:
            return SampleCopies.of(imdb_sample(str(train))[0])
    print(f"warning: {path}: no IMDB train.tsv (text<TAB>label) beside it to draw the IMDB evaluation sample from, "
          "so its copies of the sample's reviews are not left out", file=sys.stderr, flush=True)
    return None


def without_sample_copies(path, lines: list[str]) -> list[str]:
    """`lines` of the text file `path`, less the copies of the IMDB evaluation sample's reviews when it is IMDB's
    unsup.txt (`imdb_sample_copies`), with a note of how many; any other file's lines as they are."""
    copies = imdb_sample_copies(str(path))
    if copies is None:
        return lines
    kept = [line for line in lines if line not in copies]
    if len(kept) < len(lines):
        note(f"{path}: {len(lines) - len(kept):,} lines left out: copies of the IMDB evaluation sample's reviews")
    return kept
