"""Byte-level BPE's alphabet (GPT-2's, which RoBERTa reuses): every byte written as one printable character, a
space as "Ġ", a newline as "Ċ", the two bytes of "é" as "Ã©". Read once from the `tokenizers` library, and
nothing about how the app shows a token (that is `demo.formatting`, which builds on this module)."""
from __future__ import annotations

import functools

from tokenizers import pre_tokenizers


@functools.lru_cache(maxsize=1)
def byte_of() -> dict[str, int]:
    """The byte each of the 256 characters of the byte-level alphabet stands for, read from the library: a
    sample text holding every byte that UTF-8 uses is pre-tokenized (one character out per byte in). The 13
    bytes UTF-8 never uses (0xC0, 0xC1, 0xF5..0xFF) take the alphabet's remaining characters in order (GPT-2
    maps them to themselves)."""
    sample = "".join(map(chr, range(0x800)))  # bytes 0x00..0x7F, leads 0xC2..0xDF, continuations 0x80..0xBF
    sample += "".join(map(chr, [0x800, *range(0x1000, 0x10000, 0x1000)]))  # leads 0xE0..0xEF
    sample += "".join(map(chr, [0x10000, 0x40000, 0x80000, 0xC0000, 0x100000]))  # leads 0xF0..0xF4
    mapped = "".join(piece for piece, _ in pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
                     .pre_tokenize_str(sample))
    raw = sample.encode()
    assert len(mapped) == len(raw), "the byte-level pre-tokenizer did not write one character per byte"
    table = dict(zip(mapped, raw))
    leftover = sorted(set(pre_tokenizers.ByteLevel.alphabet()) - set(table))
    table.update(zip(leftover, sorted(set(range(256)) - set(table.values()))))
    return table


@functools.lru_cache(maxsize=1)
def _char_of() -> dict[int, str]:
    return {b: c for c, b in byte_of().items()}


def to_byte_level(text: str) -> str:
    """`text` written in the alphabet, one character per UTF-8 byte: " it" → "Ġit", "é" → "Ã©"."""
    char_of = _char_of()
    return "".join(char_of[b] for b in text.encode("utf-8"))


def bytes_of(entry: str) -> bytes | None:
    """The bytes a byte-level string (a vocabulary entry: "Ġit") stands for; None when it has a character outside
    the alphabet."""
    table = byte_of()
    if not all(c in table for c in entry):
        return None
    return bytes(table[c] for c in entry)


def text_of(entry: str) -> str | None:
    """The text a byte-level string stands for ("ĠcafÃ©" → " café"); None when it has a character outside the
    alphabet or its bytes are not whole UTF-8 characters ("ð", and "café" read as bytes: "é" alone is 0xE9)."""
    data = bytes_of(entry)
    try:
        return None if data is None else data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def is_partial(entry: str) -> bool:
    """True for a byte-level string that is not whole characters: some of a character's bytes, split over
    tokens."""
    return bytes_of(entry) is not None and text_of(entry) is None
