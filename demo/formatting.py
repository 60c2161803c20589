"""Small text helpers the app's views share: user text made safe inside Markdown, readable numbers, and tokens
as every tab shows them (built on `demo.byte_level`, the byte-level alphabet)."""
from __future__ import annotations

import html
import os
import re
import unicodedata
from collections import Counter

import numpy as np
from tokenizers import decoders

from .byte_level import bytes_of, is_partial, to_byte_level

_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")

# Anything but whitespace and the characters that show nothing: zero-width spaces and joiners, direction
# marks and embeddings, word joiner and invisible operators, BOM, soft hyphen, variation selectors, tags,
# Hangul fillers. A text made only of those is empty.
VISIBLE_RE = re.compile(r"[^\s\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
                        r"\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb\U0001bca0-\U0001bca3"
                        r"\U0001d173-\U0001d17a\U000e0000-\U000e0fff]")


def md_escape(text: str) -> str:
    """User text inside Markdown: shown literally (no HTML, no emphasis, no links). Backslashes stop the
    Markdown syntax; the characters that start an autolink (a bare https://, www. or an e-mail's @, which the
    renderer links whatever the escapes, keeping them inside the link) are written as HTML entities."""
    escaped = re.sub(r"([\\`*_{}\[\]()#+\-.!|~>])", r"\\\1", html.escape(text, quote=False))
    escaped = re.sub(r"@(?=[\w\\-]+\\\.)", "&#64;", escaped)  # an e-mail address's @ (name@host.tld)
    return escaped.replace("://", "&#58;//").replace("www\\.", "www&#46;")


def md_cell(value) -> str:
    """A value inside a Markdown table cell: escaped, on one line, floats with 4 significant digits."""
    text = f"{value:.4g}" if isinstance(value, float) else str(value)
    return html.escape(text).replace("|", "\\|").replace("\n", " ")


def markdown_table(header: list[str], rows: list[list[str]], numbers=()) -> str:
    """A Markdown table of `rows` under `header`, its cells as given (Markdown already, escaped by the caller), the
    columns numbered in `numbers` right-aligned (`---:`) so that their digits line up (the page's CSS keeps the
    renderer's align="right", which Gradio's own overrode)."""
    numbers = set(numbers)
    if numbers - set(range(len(header))):
        raise ValueError(f"no column {max(numbers)} in a table of {len(header)}")
    for row in rows:
        if len(row) != len(header):
            raise ValueError(f"a row of the table has {len(header)} cells, not {len(row)}: {row}")
    return "\n".join(["| " + " | ".join(header) + " |",
                      "|" + "".join("---:|" if i in numbers else "---|" for i in range(len(header))),
                      *("| " + " | ".join(row) + " |" for row in rows)])


def code(text) -> str:
    """Text as Markdown code (shown literally; a backtick inside would end it)."""
    return f"`{str(text).replace('`', '')}`"  # code spans escape < and & themselves


def short_text(text: str, width: int = 40) -> str:
    """A user's word as a message quotes it: at most `width` characters, a longer one cut with "…" (a 3,000-letter
    "word" ran out of its box)."""
    return text if len(text) <= width else text[:width - 1] + "…"


def pct(x: float) -> str:
    """An accuracy or another rate measured over a data set, with one decimal ("52.8%"). A probability or a share
    of attention is `format_probability`'s."""
    return f"{x:.1%}"


def millions(n: int) -> str:
    return f"{n / 1e6:.1f}M" if n >= 100_000 else f"{n:,}"


def large_count(n: int) -> str:
    """A count as people read it: 2.02B, 627.4M, 31,796 (not 2018.1M)."""
    return f"{n / 1e9:.2f}B" if n >= 1e9 else millions(n)


def minutes(m: float) -> str:
    return f"{m:.0f} min" if m < 120 else f"{m / 60:.1f} h"


SPACE_LABEL = "␣"  # whitespace made visible: a token of whitespace alone, or the space a word's token starts with
SPACE_SIGNS = SPACE_LABEL + "Ġ"  # a space as the app shows it ("␣has") and as the vocabulary writes it ("Ġhas")
SIGNS = {"\n": "↵", "\r": "␍", "\t": "⇥"}  # whitespace shown as a sign wherever it occurs (`show_invisible`)
PART_LABEL = "⟨part of a character⟩"  # some of a character's bytes, when the token's vocabulary entry is not known
PART_NOTE = " (part of a character)"  # after the bytes of such a token, when they are known: "⟨byte 0xE6⟩"
DOTTED_CIRCLE = "\u25cc"  # what a combining mark with no letter before it is drawn on ("◌́"), as in Unicode's charts
# The characters that end a line (those of Python's str.splitlines), a CR LF pair as one: a Markdown renderer breaks a
# line at CR as at LF, and a text box shows each as a line break
LINE_BREAK_RE = re.compile("\r\n|[\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")


def spaced(word: str, signs: str = SPACE_SIGNS) -> str:
    """`word` typed as the app shows it or as the vocabulary writes it: the signs of a space it begins with
    (`signs`), as the spaces they stand for ("␣has" and "Ġhas" → " has")."""
    bare = word.lstrip(signs + " ")
    return " " * (len(word) - len(bare)) + bare


def typed_word(word: str, vocabulary=None) -> str:
    """A word typed in a box that takes words (the Embeddings tab's, the fill-mask tab's candidates) as the word it
    names, without the space around it or a leading sign of one: "␣", as the app shows a token's space, always;
    "Ġ", as the vocabulary writes it, where the word with it is an entry of `vocabulary` (a tokenizer: "Ġcat"
    is "cat"), for "Ġ" is also a letter (Maltese "Ġenerali" stays as typed). Without a vocabulary to look in, a
    leading "Ġ" is read as a space."""
    if vocabulary is None:
        return spaced(word).strip()
    bare = spaced(word.strip(), SPACE_LABEL).strip()
    if bare.startswith("Ġ") and vocabulary.token_to_id(bare) is not None:
        bare = bare.lstrip("Ġ")  # an entry's every "Ġ" is a space ("ĠĠ": two)
    return bare


def _shown_char(c: str) -> str:
    """One character as `show_invisible` shows it: newline, carriage return and tab as signs (↵ ␍ ⇥), any other
    control or format character by its code point ("⟨U+200D⟩"), whitespace other than the space by its code point
    and name ("⟨U+2009 thin space⟩"), any other character that shows nothing (`VISIBLE_RE`'s: a variation selector,
    a combining mark, would otherwise be drawn as an empty dotted circle) by its code point ("⟨U+FE0F⟩"), anything
    else as it is."""
    if c in SIGNS:
        return SIGNS[c]
    category = unicodedata.category(c)
    if category in ("Cc", "Cf"):
        return f"⟨U+{ord(c):04X}⟩"
    if c != " " and (c.isspace() or category in ("Zs", "Zl", "Zp")):
        return f"⟨U+{ord(c):04X} {unicodedata.name(c, 'space').lower()}⟩"
    if not c.isspace() and not VISIBLE_RE.match(c):
        return f"⟨U+{ord(c):04X}⟩"
    return c


def show_invisible(text: str) -> str:
    """`text` with its invisible characters made visible (`_shown_char`: "↵", "⟨U+200D⟩", "⟨U+00A0 no-break
    space⟩"), and a combining mark that has no letter to sit on (at the start, after whitespace or a sign) drawn
    on a dotted circle ("◌́"), as it would otherwise stack on the box's border or the quote before it: how a
    token's text is shown, in the Tokens tab's chips and the Attention tab's labels alike."""
    out, bare = [], True  # bare: nothing shown yet that a combining mark would sit on
    for c in text:
        shown = _shown_char(c)
        if shown == c and bare and unicodedata.category(c).startswith("M"):
            shown = DOTTED_CIRCLE + c
        out.append(shown)
        bare = (shown != c and not shown.startswith(DOTTED_CIRCLE)) or c.isspace() or c == SPACE_LABEL
    return "".join(out)


_DECODER = decoders.ByteLevel()


def show_whitespace(text: str) -> str:
    """Text with its leading spaces shown as "␣" and its other invisible characters as `show_invisible` shows
    them ("↵", "⟨U+2009 thin space⟩")."""
    stripped = text.lstrip(" ")
    return show_invisible(SPACE_LABEL * (len(text) - len(stripped)) + stripped)


def _byte_label(values: list[int]) -> str:
    hexes = " ".join(f"0x{b:02X}" for b in values)
    return f"⟨byte {hexes}⟩" if len(values) == 1 else f"⟨bytes {hexes}⟩"


def readable(entry: str) -> str:
    """A vocabulary entry as the text it stands for, as the Tokens tab's chips show it: "Ġcapital" → "␣capital",
    "Ċ" → "↵", "Âł" → "⟨U+00A0 no-break space⟩" (`show_whitespace`). An entry that holds only part of a
    character's UTF-8 bytes (the first bytes of an emoji) shows them as "⟨byte 0xF0⟩" or "⟨bytes 0xF0 0x9F⟩"
    instead of "�". Special tokens ("<s>") and other strings that are not byte-level stay as they are."""
    text = _DECODER.decode([entry])
    data = bytes_of(entry)
    if data is not None and "\ufffd" in text:  # bytes that are not a whole character (or a real "�")
        text, run = "", []
        for c in data.decode("utf-8", "surrogateescape"):
            if 0xDC80 <= ord(c) <= 0xDCFF:  # a byte that is not part of a whole character
                run.append(ord(c) - 0xDC00)
                continue
            if run:
                text, run = text + _byte_label(run), []
            text += c
        if run:
            text += _byte_label(run)
    return show_whitespace(text)


def token_label(token_str: str, piece: str | None = None) -> str:
    """A token as the text it stands for, readable whatever it holds, as the Tokens tab shows it (`readable`):
    a space as "␣", a newline as "↵", other whitespace by name ("⟨U+2009 thin space⟩"), and a token that holds
    only some of a character's UTF-8 bytes as those bytes: "⟨byte 0xE6⟩ (part of a character)". The bytes are
    named when `piece`, the token's vocabulary entry ("æ"), is given; `token_str`, the token decoded on its own,
    has lost them to "�", so without `piece` they read "⟨part of a character⟩"."""
    if piece is not None and is_partial(piece):
        return readable(piece) + PART_NOTE
    return re.sub("\ufffd+", PART_LABEL, readable(to_byte_level(token_str)))


def reads_as_is(token_str: str) -> bool:
    """True for a token that reads as text without a label: something visible that does not start with a combining
    mark (drawn on "◌" by `show_invisible`), and no "�" of a split character."""
    word = token_str.strip()
    return (bool(word) and word.isprintable() and "\ufffd" not in word
            and not unicodedata.category(word[0]).startswith("M"))


def piece_of(tokenizer, token_id: int) -> str | None:
    """The vocabulary entry of `token_id` ("Ġit", "æ"), which names the bytes of part of a character
    (`token_label`); None without a tokenizer."""
    return None if tokenizer is None else tokenizer.id_to_token(int(token_id))


def prediction_label(result: dict, tokenizer=None) -> str:
    """`word_label` of a predicted token (a dict with "token_str" and "token"), its bytes named given the model's
    `tokenizer`."""
    return word_label(result["token_str"], None if tokenizer is None else piece_of(tokenizer, result["token"]))


def prediction_labels(results: list[dict], tokenizer=None) -> list[str]:
    """`word_labels` of one list of predicted tokens, their bytes named given the model's `tokenizer`."""
    pieces = None if tokenizer is None else [piece_of(tokenizer, r["token"]) for r in results]
    return word_labels([r["token_str"] for r in results], pieces)


def word_label(token_str: str, piece: str | None = None) -> str:
    """A predicted token as a row names it: without its leading space. A token of whitespace alone, part of a
    character or with an invisible character is named as `token_label` names it ("␣", "⟨U+2009 thin space⟩",
    "⟨byte 0xE6⟩ (part of a character)", given its vocabulary entry `piece`), not left blank or "�"."""
    if reads_as_is(token_str):
        return token_str.strip()
    label = token_label(token_str, piece)
    return label.lstrip(SPACE_LABEL) or label  # a token of spaces alone keeps them: "␣"


def word_labels(token_strs: list[str], pieces: list[str | None] | None = None) -> list[str]:
    """`word_label` of each token of one list (`pieces`: their vocabulary entries, when known); where two would
    read the same (" The" and "The", the word after a space and the word glued to what precedes it), the one
    that starts with a space says so: "␣The"."""
    labels = [word_label(t, p) for t, p in zip(token_strs, pieces or [None] * len(token_strs))]
    counts = Counter(labels)
    return [SPACE_LABEL + label if counts[label] > 1 and t[:1].isspace() and not label.startswith(SPACE_LABEL)
            else label for t, label in zip(token_strs, labels)]


def format_probability(p: float) -> str:
    """A probability, or a share of attention, as a percentage that always keeps its % sign, so that one column
    of them never mixes units: three significant digits, their trailing zeros kept so that a column reads at one
    precision ("12.3%", "93.0%", "5.20%", "0.670%", "0.00136%"), "100%" for what rounds to it, and under 0.001% a
    power of ten ("1.36 × 10⁻⁷%"), which a row of zeros would hide."""
    p = float(p)
    if not np.isfinite(p):
        return "–"
    if p <= 0:
        return "0%"
    percent = p * 100
    if float(f"{percent:.3g}") >= 100:
        return "100%"
    if float(f"{percent:.3g}") >= 1e-3:
        return f"{percent:#.3g}".rstrip(".") + "%"
    return _power_of_ten(percent, 3)


def format_exact_probability(p: float) -> str:
    """A probability's exact value for a hover, as a percentage like every score beside it: six significant digits
    ("11.8104%", "0.00136035%"), and under 0.001% a power of ten ("4.15032 × 10⁻⁵%", as `format_probability`)."""
    p = float(p)
    if not np.isfinite(p) or p <= 0:
        return format_probability(p)
    percent = p * 100
    if percent >= 1e-3:
        return f"{percent:.6g}%"
    return _power_of_ten(percent, 6)


def _power_of_ten(percent: float, digits: int) -> str:
    """A tiny percentage with `digits` significant digits, as a power of ten glued to its sign: "1.36 × 10⁻⁷%"."""
    mantissa, exponent = f"{percent:.{digits - 1}e}".split("e")
    return f"{mantissa} × 10{str(int(exponent)).translate(_SUPERSCRIPT)}%"


def bar(fraction: float, css_class: str) -> str:
    """A horizontal bar `fraction` (clipped to 0..1) of its cell wide: an empty span that `css_class` draws."""
    width = 100 * min(1.0, max(0.0, float(fraction)))
    return f'<span class="{css_class}" style="width:{width:.1f}%"></span>'


MINUS = "−"  # a negative number's sign as the page writes it (U+2212, as wide as "+"; not the hyphen "-")


def format_log_probability(p: float) -> str:
    """ln p with two decimals (what a person compares for tiny probabilities): "−4.39", "−∞" for p = 0, and
    "0.00" for what rounds to it (not "−0.00")."""
    p = float(p)
    if not p > 0:
        return MINUS + "∞"
    shown = f"{np.log(p):.2f}"
    return "0.00" if float(shown) == 0 else shown.replace("-", MINUS)


def space_page(path: str) -> str | None:
    """The Hub page of `path`, a file of the project, where the app runs on a Hugging Face Space (SPACE_ID set; the
    Space holds the files it links: `scripts.deploy_space`); None elsewhere (the app serves no files but its
    figures: the file is named instead)."""
    space = os.environ.get("SPACE_ID", "").strip()
    return f"https://huggingface.co/spaces/{space}/blob/main/{path}" if space else None
