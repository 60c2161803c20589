"""How often the pretraining text held each token (`train.token_counts`' file in assets/), said beside the
fill-mask answers and the Tokens tab's tokens: a model knows a word about as well as its text showed it."""
from __future__ import annotations

import functools
import html
import json
import logging
import os
import weakref
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from roberta.tokenizer import vocab_digest

from .formatting import large_count

log = logging.getLogger(__name__)

COUNTS_FILE = Path(__file__).resolve().parent.parent / "assets" / "training-text" / "token-counts.json"
ENV_VAR = "TOKEN_COUNTS"  # another counts file, for models trained on other text (or with another tokenizer)


def short_count(n: int) -> str:
    """A count in a few characters: 6, 1,784, 12.3k, 128k, 1.2M."""
    if n < 10_000:
        return f"{n:,}"
    if n < 100_000:
        return f"{n / 1e3:.1f}k"
    if n < 1_000_000:
        return f"{n / 1e3:.0f}k"
    return f"{n / 1e6:.1f}M"


@dataclass(frozen=True, eq=False)
class TrainingCounts:
    """Per kind of pretraining text (Wikipedia, movie reviews), how often it holds each token id."""

    names: tuple[str, ...]
    tokens: tuple[int, ...]  # each source's size in tokens
    counts: np.ndarray  # (sources, vocabulary) int64
    vocab: str  # `vocab_digest` of the tokenizer they were counted with

    def seen(self, token_id: int) -> list[int]:
        """The token's count in each source; zeros for an id outside the counted vocabulary."""
        if not 0 <= token_id < self.counts.shape[1]:
            return [0] * len(self.names)
        return [int(c) for c in self.counts[:, token_id]]

    def short(self, token_id: int) -> tuple[str, str]:
        """What a table cell says, in two parts: ("128k", "99% movie reviews"), ("6", "all movie reviews"),
        ("never", "")."""
        per_source = self.seen(token_id)
        total = sum(per_source)
        if total == 0:
            return "never", ""
        share, name = max(zip(per_source, self.names))
        part = "all" if share == total else f"{100 * share // total}%"  # 99%, not a rounded "100%"
        return short_count(total), f"{part} {name}" if len(self.names) > 1 else ""

    def sentence(self, token_id: int) -> str:
        """The full count, said: "seen 128,958 times in the pretraining text (each document once): 605 in
        Wikipedia (13.3M tokens), 128,353 in movie reviews (21.8M tokens)"."""
        per_source = self.seen(token_id)
        total = sum(per_source)
        times = "never seen" if total == 0 else f"seen {total:,} time{'s' if total != 1 else ''}"
        parts = ", ".join(f"{count:,} in {name} ({large_count(size)} tokens)"
                          for count, name, size in zip(per_source, self.names, self.tokens))
        return f"{times} in the pretraining text (each document once): {parts}"


def seen_cell(counts: TrainingCounts, token_id: int, prefix: str) -> str:
    """A table cell that says a token's count, "128k · 99% movie reviews" (classes PREFIX-seen and, for the
    second part, PREFIX-kind, which a phone's narrow table puts on a line of its own), every count on hover."""
    count, kind = counts.short(token_id)
    kind = f' <span class="{prefix}-kind">· {html.escape(kind)}</span>' if kind else ""
    return (f'<td class="{prefix}-seen" title="{html.escape(counts.sentence(token_id))}">{html.escape(count)}'
            f"{kind}</td>")


def parse_counts(document: dict) -> TrainingCounts:
    """`train.token_counts`' JSON document (ValueError if it is not one)."""
    try:
        sources = document["sources"]
        counts = np.array([source["counts"] for source in sources], dtype=np.int64)
        names = tuple(str(source["name"]) for source in sources)
        tokens = tuple(int(source["tokens"]) for source in sources)
        vocab = str(document["tokenizer_vocab"])
    except (KeyError, TypeError, ValueError) as err:
        raise ValueError(f"not a token-counts file ({type(err).__name__}: {err})") from None
    if counts.ndim != 2 or not names or (counts < 0).any():
        raise ValueError("not a token-counts file (its counts are not one list of counts per source)")
    return TrainingCounts(names, tokens, counts, vocab)


@functools.lru_cache(maxsize=4)
def read_counts(path: Path = COUNTS_FILE) -> TrainingCounts | None:
    """The counts file, or None (logged) when it is missing or unreadable: the views then leave the counts out."""
    try:
        return parse_counts(json.loads(Path(path).read_text(encoding="utf-8")))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:
        log.warning("could not read %s: %s", path, err)
        return None


# tokenizer -> its counts or None; weak keys, so a Hub model's tokenizer the app lets go of is freed with it
_FOR_TOKENIZER: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def counts_file() -> Path:
    """The counts file the app reads: $TOKEN_COUNTS, else the shipped one (its figure: the same name in .png)."""
    return Path(os.environ.get(ENV_VAR) or COUNTS_FILE)


def counts_for(tokenizer, path: Path | None = None) -> TrainingCounts | None:
    """The counts of `path` (default: $TOKEN_COUNTS, else the shipped file), if they were made with `tokenizer`'s
    vocabulary (the shipped models'); None for any other model (a Hub model's token ids mean other tokens)."""
    path = Path(path or counts_file())
    counts = read_counts(path)
    if counts is None:
        return None
    key = (path, counts.vocab)
    cached = _FOR_TOKENIZER.setdefault(tokenizer, {})
    if key not in cached:
        cached[key] = vocab_digest(tokenizer) == counts.vocab
    return counts if cached[key] else None
