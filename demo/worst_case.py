"""Worst-case inputs for the app's handlers: texts up to the app's 200,000-character cap made of what makes
text processing slow (long runs of one character, of whitespace, of masks, combining marks, zero-width
characters, mixed scripts, unclosed quotes). Used by tests/test_app_handlers.py (each handler under a time
bound, each answer checked) and benchmarks/bench_worst_case_inputs.py (the slowest input per handler with the
shipped models)."""
from __future__ import annotations

from demo.validation import MAX_CHARS

N = MAX_CHARS  # the longest text the app accepts: every input is at the cap


def _fill(unit: str, n: int = N) -> str:
    return (unit * (n // len(unit) + 1))[:n]


def worst_case_texts(n: int = N) -> dict[str, str]:
    """name -> text of at most `n` characters."""
    return {
        "spaces, then a word": _fill(" ", n - 1) + "x",
        "a word, spaces, a bracket": "x" + _fill(" ", n - 2) + ")",
        "a word, spaces, a comma": "x" + _fill(" ", n - 2) + ",",
        "newlines": _fill("\n", n),
        "tabs, spaces and newlines": _fill("\t \n", n),
        "ideographic spaces, then a word": _fill("\u3000", n - 1) + "x",
        "one letter": _fill("a", n),
        "one digit": _fill("7", n),
        "one punctuation mark": _fill("!", n),
        "a long word, then words": _fill("a", n * 3 // 4) + _fill(" the cat", n - n * 3 // 4),
        "masks, no spaces": _fill("<mask>", n),
        "BERT masks, spaced": _fill("[MASK] ", n),
        "spaced words": _fill("the cat sat . ", n),
        "SST-2-style tokens": _fill("it 's not bad , is n't it ? -lrb- `` ok '' -rrb- ", n),
        "an unclosed quote": '"' + _fill(" a", n - 1),
        "an unclosed backquote": "`" + _fill(" a", n - 1),
        "spaced brackets": _fill("( ", n),
        "spaced commas": _fill(" ,", n),
        "combining marks": "e" + _fill("\u0301", n - 1),
        "letters with combining marks": _fill("e\u0301\u0302\u0303 ", n),
        "zero-width characters only": _fill("\u200b\u200c\u200d\u2060\ufeff", n),
        "zero-width between letters": _fill("a\u200b", n),
        "CJK": _fill("東京大阪", n),
        "emoji": _fill("😀👍🏽", n),
        "right-to-left and controls": _fill("\u202eمرحبا بالعالم\u202c ", n),
        "mixed scripts": _fill("abc 東京 😀 مرحبا Ωμέγα кошка ", n),
        "HTML": _fill("<b>&amp;</b><script>x</script> ", n),
    }


def with_masks(texts: dict[str, str], n: int = N) -> dict[str, str]:
    """Fill-mask variants: a mask before the text and a mask after it (beyond what the model reads)."""
    out = {}
    for name, text in texts.items():
        out[f"<mask> + {name}"] = "<mask> " + text[:n - 7]
        out[f"{name} + <mask>"] = text[:n - 7] + " <mask>"
    return out
