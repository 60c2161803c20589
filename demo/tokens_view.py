"""A text as the model reads it, for display: its tokens, what each covers in the text, readable labels and
words; and the cut of a long paste to what the model can read, before anything scans it."""
from __future__ import annotations

import bisect
import functools
import re
import weakref
from dataclasses import dataclass

from roberta.text import detokenize, normalize_for_classifier
from roberta.tokenizer import SPECIAL_TOKENS, for_model

from .formatting import show_invisible, token_label
from .validation import require_visible

WORD_START_RE = re.compile(r"\s(?=\S)")


def word_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of every whitespace-separated word of `text`."""
    return [(m.start(), m.end()) for m in re.finditer(r"\S+", text)]


@dataclass
class Tokens:
    """One text as the model reads it, with what each token covers in the text."""

    text: str
    ids: list[int]
    offsets: list[tuple[int, int]]  # character span in `text`; (0, 0) for special tokens
    special: list[bool]
    truncated: bool
    pieces: list[str]  # each token decoded on its own (special tokens by name)

    @functools.cached_property
    def labels(self) -> list[str]:
        """Readable token labels, on one line: the characters a token covers in the text (an invisible one by its
        code, "⟨U+200D⟩", as the Tokens tab shows it: `show_invisible`); special tokens by name; a token of
        whitespace alone as `token_label` shows it, as every tab does ("␣", "↵", "⇥", "⟨U+2009 thin space⟩"). The
        byte pieces of one character (an emoji, a CJK character) show it with a piece number: 東·1 東·2 東·3."""
        out = []
        for i, ((start, end), special, piece) in enumerate(zip(self.offsets, self.special, self.pieces)):
            covered = self.text[start:end]
            if special:
                out.append(piece)
            elif not covered.strip():  # whitespace (its span can be empty: the offsets leave a space out)
                out.append(token_label(piece))
            else:
                label = show_invisible(covered)
                same = [j for j in range(len(self.offsets)) if self.offsets[j] == (start, end) and not self.special[j]]
                out.append(label + f"·{same.index(i) + 1}" if len(same) > 1 else label)
        return out

    @property
    def has_words(self) -> bool:
        """Whether any token is an ordinary one that covers more than whitespace: "<s> </s>" has none (the space
        between two special tokens is a token of its own)."""
        return any(not special and self.text[start:end].strip()
                   for special, (start, end) in zip(self.special, self.offsets))

    @functools.cached_property
    def word_index(self) -> list[int | None]:
        """For each token, the index of the whitespace-separated word of `text` it belongs to (None for
        special tokens). A token that covers only whitespace belongs to the word after it."""
        spans = word_spans(self.text)
        starts = [s for s, _ in spans]
        out = []
        for (start, _), special in zip(self.offsets, self.special):
            if special or not spans:
                out.append(None)
                continue
            k = bisect.bisect_right(starts, start) - 1
            if k < 0 or start >= spans[k][1]:
                k += 1
            out.append(min(k, len(spans) - 1))
        return out

    @functools.cached_property
    def word_start(self) -> list[bool]:
        """True for a regular token that begins a whitespace-separated word."""
        index, previous = self.word_index, None
        starts = []
        for k in index:
            starts.append(k is not None and k != previous)
            if k is not None:
                previous = k
        return starts


# tokenizer -> characters of its longest vocabulary entry; weak keys, so that the tokenizer of a Hub model the
# app has let go of (demo.model_choice keeps the last three) is freed with it
_LONGEST_TOKEN: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
# The longest entry `window_chars` counts with: a visitor's tokenizer with a token of 2,000 characters (an added
# one) made the window as long as the longest text allowed, so that no text was cut. Ours are at most 19.
MAX_TOKEN_CHARS = 64


def window_chars(tokenizer, max_length: int) -> int:
    """A length of text that holds more than `max_length` tokens: twice (max_length + 2) times the longest
    vocabulary entry (MAX_TOKEN_CHARS at most). A byte-level BPE token covers at most as many characters as its
    entry has bytes; a cut window of longer tokens than that may hold fewer than `max_length`, and then
    `cut_to_window` keeps the whole text."""
    longest = _LONGEST_TOKEN.get(tokenizer)
    if longest is None:
        longest = _LONGEST_TOKEN[tokenizer] = max(1, max(map(len, tokenizer.get_vocab(with_added_tokens=True)),
                                                         default=1))
    return 2 * (max_length + 2) * min(longest, MAX_TOKEN_CHARS)


def cut_to_window(text: str, tokenizer, max_length: int) -> str:
    """The beginning of `text` that still gives the model its first `max_length` tokens, so that a 200,000-
    character paste is not tokenized (and scanned character by character) for the ~128 tokens the model
    reads. The cut falls before a space that starts a word, in the second half of `window_chars`, so every
    word before it tokenizes as in the full text; only a "word" longer than half the window is cut inside.
    The cut text must still be longer than the window in tokens (checked), else the whole text is kept."""
    limit = window_chars(tokenizer, max_length)
    if len(text) <= limit:
        return text
    half = limit // 2
    starts = [m.start() for m in WORD_START_RE.finditer(text, half, limit + 1)]
    cut = text[:starts[-1] if starts else limit]
    if len(tokenizer.encode(cut).ids) <= max_length:  # a tokenizer that drops characters: no cut
        return text
    return cut


def cut_to_tokens(text: str, tokenizer, n: int) -> str:
    """The beginning of `text` that holds its first `n` tokens (special tokens not counted), cut before the
    token after them; the whole text when it has no more."""
    text = cut_to_window(text, tokenizer, n)  # a bounded length to tokenize
    encoding = tokenizer.encode(text, add_special_tokens=False)
    if len(encoding.ids) <= n:
        return text
    return text[:encoding.offsets[n][0]].rstrip()


def classifier_text(text: str, tokenizer, max_length: int, lowercase: bool = True,
                    read_tokens: int | None = None) -> str:
    """What the classifier reads, as in fine-tuning (detokenized, lower-cased: `roberta.text`), of no more
    text than it can read: `max_length` tokens, or with `read_tokens` the first `read_tokens` tokens (which
    the pipeline reads in overlapping windows of `max_length`). `lowercase=False` for a classifier whose
    tokenizer does not lower-case (e.g. roberta-large's: `demo.sentiment_handlers.reads_lower_case`)."""
    max_chars = 8 * window_chars(tokenizer, read_tokens or max_length)
    text = normalize_for_classifier(text, max_chars) if lowercase else detokenize(text, max_chars)
    if read_tokens:
        return require_visible(cut_to_tokens(text, tokenizer, read_tokens))
    return require_visible(cut_to_window(text, tokenizer, max_length))


def special_ids(tokenizer) -> set[int]:
    return {tokenizer.token_to_id(t) for t in SPECIAL_TOKENS}


def tokenize(tokenizer, text: str, max_length: int) -> Tokens:
    """The text cut to what the model can read (`cut_to_window`; `Tokens.text` is that text), encoded as the
    pipelines encode it (`roberta.tokenizer.for_model`: `<s> ... </s>`, cut to `max_length` tokens), with
    each token's character span for display."""
    text = cut_to_window(text, tokenizer, max_length)
    encoding = for_model(tokenizer, max_length).encode(text)
    ids, specials = list(encoding.ids), special_ids(tokenizer)
    return Tokens(text, ids, [tuple(o) for o in encoding.offsets], [i in specials for i in ids],
                  bool(encoding.overflowing), [token_text(tokenizer, i) for i in ids])


def token_text(tokenizer, token_id: int) -> str:
    return tokenizer.decode([token_id], skip_special_tokens=False)
