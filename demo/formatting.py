"""Small text helpers the app's views share: user text made safe inside Markdown, readable numbers."""
from __future__ import annotations

import html
import re
from collections import Counter

import numpy as np

_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def md_escape(text: str) -> str:
    """User text inside Markdown: shown literally (no HTML, no emphasis, no links)."""
    return re.sub(r"([\\`*_{}\[\]()#+\-.!|~>])", r"\\\1", html.escape(text, quote=False))


def md_cell(value) -> str:
    """A value inside a Markdown table cell: escaped, on one line, floats with 4 significant digits."""
    text = f"{value:.4g}" if isinstance(value, float) else str(value)
    return html.escape(text).replace("|", "\\|").replace("\n", " ")


def code(text) -> str:
    """Text as Markdown code (shown literally; a backtick inside would end it)."""
    return f"`{str(text).replace('`', '')}`"  # code spans escape < and & themselves


def pct(x: float) -> str:
    return f"{x:.1%}"


def millions(n: int) -> str:
    return f"{n / 1e6:.1f}M" if n >= 100_000 else f"{n:,}"


def minutes(m: float) -> str:
    return f"{m:.0f} min" if m < 120 else f"{m / 60:.1f} h"


SPACE_LABEL = "␣"  # whitespace made visible: a token of whitespace alone, or the space a word's token starts with


def word_label(token_str: str) -> str:
    """A predicted token as a row names it: without its leading space, or quoted when it is only whitespace."""
    return token_str.strip() or repr(token_str)


def word_labels(token_strs: list[str]) -> list[str]:
    """`word_label` of each token of one list; where two would read the same (" The" and "The", the word after a
    space and the word glued to what precedes it), the one that starts with a space says so: "␣The"."""
    labels = [word_label(t) for t in token_strs]
    counts = Counter(labels)
    return [SPACE_LABEL + label if counts[label] > 1 and t[:1].isspace() else label
            for t, label in zip(token_strs, labels)]


def format_probability(p: float) -> str:
    """A probability a person can read: a percentage with three significant digits down to 0.1%
    ("12.3%", "1.02%", "0.152%"), below that scientific notation with three ("2.05 × 10⁻⁵")."""
    p = float(p)
    if not np.isfinite(p):
        return "–"
    if p <= 0:
        return "0"
    if p >= 1e-3:
        return f"{float(f'{p * 100:.3g}'):g}%"
    mantissa, exponent = f"{p:.2e}".split("e")
    return f"{mantissa} × 10{str(int(exponent)).translate(_SUPERSCRIPT)}"


def format_log_probability(p: float) -> str:
    """ln p with two decimals (what a person compares for tiny probabilities)."""
    p = float(p)
    return f"{np.log(p):.2f}" if p > 0 else "−∞"
