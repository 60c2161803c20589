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
from .settings import TOKEN_COUNTS_ENV

log = logging.getLogger(__name__)

COUNTS_FILE = Path(__file__).resolve().parent.parent / "assets" / "training-text" / "token-counts.json"


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

    def commoner(self, token_id: int) -> str:
        """Where the token is commoner, per token of each kind of text (the kinds differ in size, so a share of
        the count would mislead): "130× commoner in movie reviews", "only in movie reviews", "about as common in
        both"; "" for a token never seen or a single kind of text. The kind with the highest rate is compared with
        the rest together."""
        per_source = self.seen(token_id)
        total = sum(per_source)
        if total == 0 or len(self.names) < 2:
            return ""
        best = max(range(len(self.names)), key=lambda i: per_source[i] / max(self.tokens[i], 1))
        rest, rest_tokens = total - per_source[best], sum(self.tokens) - self.tokens[best]
        if rest == 0:
            return f"only in {self.names[best]}"
        ratio = (per_source[best] / max(self.tokens[best], 1)) / (rest / max(rest_tokens, 1))
        if ratio < 1.5:
            return f"about as common in {'both' if len(self.names) == 2 else 'each'}"
        return f"{ratio:.{1 if ratio < 10 else 0}f}× commoner in {self.names[best]}"

    def short(self, token_id: int) -> tuple[str, str]:
        """What a table cell says, in two parts: ("128k", "130× commoner in movie reviews"), ("6", "only in movie
        reviews"), ("never", "")."""
        total = sum(self.seen(token_id))
        return ("never", "") if total == 0 else (short_count(total), self.commoner(token_id))

    def sentence(self, token_id: int, label: str | None = None) -> str:
        """The full count, said, after the token's `label` when given: "“␣movie”: 127,767 times in the pretraining
        text (each document counted once): 595 in Wikipedia (13.3M tokens: 45 per million), 127,172 in movie reviews
        (21.8M tokens: 5,843 per million)"."""
        per_source = self.seen(token_id)
        total = sum(per_source)
        times = "never" if total == 0 else f"{total:,} time{'s' if total != 1 else ''}"
        parts = ", ".join(f"{count:,} in {name} ({large_count(size)} tokens: {per_million(count, size)} per million)"
                          for count, name, size in zip(per_source, self.names, self.tokens))
        said = f"{times} in the pretraining text (each document counted once): {parts}"
        return f"“{label}”: {said}" if label else said


def per_million(count: int, tokens: int) -> str:
    """A rate per million tokens: "5,888", "4.5", "0.08"."""
    rate = 1e6 * count / max(tokens, 1)
    return f"{rate:,.0f}" if rate >= 10 or rate == 0 else f"{rate:.2g}"


def seen_cell(counts: TrainingCounts, token_id: int, prefix: str, label: str | None = None) -> str:
    """A table cell that says a token's count, "128k · 130× commoner in movie reviews" (classes PREFIX-seen and,
    for the second part, PREFIX-kind, which a phone's narrow table puts on a line of its own), every count on
    hover (`counts.sentence`, naming the token by `label`)."""
    count, kind = counts.short(token_id)
    kind = f' <span class="{prefix}-kind">· {html.escape(kind)}</span>' if kind else ""
    return (f'<td class="{prefix}-seen" title="{html.escape(counts.sentence(token_id, label))}">'
            f"{html.escape(count)}{kind}</td>")


def counts_css(prefix: str) -> str:
    """The style of `counts_details`' list, for a view's <style> block. Its summary's aside (<small>) keeps the
    summary's 12 px: smaller, it read 9.6 px."""
    return (f".{prefix}-counts{{font-size:12px;margin-top:4px}}.{prefix}-counts summary{{cursor:pointer;opacity:.8}}"
            f".{prefix}-counts summary small{{font-size:inherit}}.{prefix}-counts ul{{margin:4px 0;padding-left:18px}}")


def counts_details(lines: list[str], prefix: str) -> str:
    """Every count of a table in full (each line a `TrainingCounts.sentence`), in a closed <details> under it:
    what the cells' hover says, for a phone or a keyboard, where there is no hover."""
    items = "".join(f"<li>{html.escape(line)}</li>" for line in lines)
    return (f'<details class="{prefix}-counts"><summary>Counts in the pretraining text, in full <small>(each '
            "document counted once; pretraining read the text many times over)</small></summary>"
            f"<ul>{items}</ul></details>")


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
    """The counts file, or None (logged) when it is missing or unreadable: the views then leave the counts out.
    A missing shipped file is said nowhere (a copy of the app may leave assets/training-text out), another one
    (`$TOKEN_COUNTS`) is: it was asked for."""
    try:
        return parse_counts(json.loads(Path(path).read_text(encoding="utf-8")))
    except FileNotFoundError:
        if Path(path) != COUNTS_FILE:
            log.warning("no token-counts file at %s ($%s): the views show no counts", path, TOKEN_COUNTS_ENV)
        return None
    except (OSError, ValueError) as err:
        log.warning("could not read %s: %s", path, err)
        return None


# tokenizer -> its counts or None; weak keys, so a Hub model's tokenizer the app lets go of is freed with it
_FOR_TOKENIZER: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def counts_file() -> Path:
    """The counts file the app reads: $TOKEN_COUNTS, else the shipped one (its figure: the same name in .png)."""
    return Path(os.environ.get(TOKEN_COUNTS_ENV) or COUNTS_FILE)


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
