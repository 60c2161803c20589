"""The app's shared text helpers (demo.formatting): one way to write a probability, one way to draw a bar, and
token labels built on the byte-level alphabet (demo.byte_level) without importing a tab's view."""
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from demo.byte_level import to_byte_level
from demo.formatting import (DOTTED_CIRCLE, bar, format_log_probability, format_probability, markdown_table, readable,
                             reads_as_is, show_invisible, show_whitespace, token_label, word_label)

_DIGITS = str.maketrans("⁻⁰¹²³⁴⁵⁶⁷⁸⁹", "-0123456789")


def percent_read_back(shown: str) -> float:
    """The percentage a person reads in `shown` ("0.0960%", "1.36 × 10⁻⁷%")."""
    assert shown.endswith("%"), shown
    return float(shown.rstrip(" %").replace(" × 10", "e").translate(_DIGITS))


@pytest.mark.parametrize("p", [0.987, 0.5, 0.0667, 9.6e-4, 1.36e-5, 1.0001e-5, 9.9e-6, 2.3e-8, 1.4e-9, 5e-13])
def test_a_probability_is_a_percentage_whatever_its_size(p):
    """Every probability keeps its % sign (a tiny one too: no bare "9.60 × 10⁻⁴" beside "0.670%" in one column),
    and reads back as 100 p to three significant digits."""
    assert percent_read_back(format_probability(p)) == pytest.approx(100 * p, rel=5e-3)


def significant_digits(shown: str) -> int:
    """How many significant digits the number in `shown` is written with ("5.20%": 3, "1.36 × 10⁻⁷%": 3)."""
    mantissa = shown.rstrip("%").split(" × ")[0]
    return len(mantissa.replace(".", "").lstrip("0"))


@pytest.mark.parametrize("p", [0.93, 0.052, 0.0067, 0.5, 0.01, 1e-3, 1e-5, 2e-9, 0.123456, 0.0102, 1.36e-9])
def test_a_column_of_probabilities_reads_at_one_precision(p):
    """Three significant digits whatever the value, trailing zeros kept: "93.0%" beside "91.2%", not "93%"."""
    assert significant_digits(format_probability(p)) == 3


def test_only_what_rounds_to_certainty_is_written_without_decimals():
    assert format_probability(0.9996) == "100%" and format_probability(0.999) == "99.9%"


def test_a_power_of_ten_only_below_a_thousandth_of_a_percent_and_glued_to_its_sign():
    assert "×" not in format_probability(1e-5) and "×" in format_probability(9.9e-6)
    assert format_probability(3.67e-6).endswith("10⁻⁴%")


def test_probabilities_in_one_column_share_the_unit_and_keep_their_order():
    probabilities = np.geomspace(0.9, 1e-12, 60)
    read = [percent_read_back(format_probability(p)) for p in probabilities]
    assert read == sorted(read, reverse=True)
    assert format_probability(0.0) == "0%" and format_probability(float("nan")) == "–"


@pytest.mark.parametrize("p", [0.0124, 0.3, 1e-9, 0.99])
def test_a_log_probability_has_the_pages_minus_sign(p):
    """ln p was written with the hyphen-minus ("-4.39") beside the page's "−∞" and other negative numbers: every
    minus is U+2212, and the number reads back as ln p to two decimals."""
    shown = format_log_probability(p)
    assert "-" not in shown and shown.startswith("−")
    assert float(shown.replace("−", "-")) == pytest.approx(np.log(p), abs=0.005)


def test_a_log_probability_that_rounds_to_zero_has_no_sign():
    assert format_log_probability(0.9999) == "0.00" and format_log_probability(1.0) == "0.00"
    assert format_log_probability(0.0) == "−∞"


@pytest.mark.parametrize("fraction, width", [(0.5, "50.0%"), (1.0, "100.0%"), (3.0, "100.0%"), (-0.2, "0.0%"),
                                             (1 / 3, "33.3%")])
def test_a_bar_is_its_fraction_of_the_cell_clipped(fraction, width):
    assert bar(fraction, "ll-bar") == f'<span class="ll-bar" style="width:{width}"></span>'


def test_token_labels_do_not_import_a_tab():
    """demo.formatting builds its labels on demo.byte_level: labelling a token loads no tab's view (bpe_view once
    imported formatting, which imported it back)."""
    code = ("import sys; from demo.formatting import token_label; "
            "assert token_label(' \\n') == '␣↵' and token_label('\\u2009') == '⟨U+2009 thin space⟩'; "
            "print(sorted(m for m in sys.modules if m.startswith('demo.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[1]).stdout
    assert "demo.bpe_view" not in out and "demo.byte_level" in out


def test_whitespace_other_than_the_space_is_named_wherever_a_token_is_shown():
    """The reviewer's case: the Tokens tab showed a no-break space, a thin space and an ideographic space as blank
    chips and blank picker entries (`readable`), while the other tabs named them (`token_label`). Every label of a
    token names them by code point and name; the space itself is "␣" where it leads and stays a space inside."""
    assert readable(to_byte_level("\u00a0")) == "⟨U+00A0 no-break space⟩"
    assert readable(to_byte_level(" \u2009x")) == "␣⟨U+2009 thin space⟩x"
    assert show_whitespace("\u3000") == "⟨U+3000 ideographic space⟩"
    assert show_invisible("a b\u202fc") == "a b⟨U+202F narrow no-break space⟩c"
    assert token_label("\u2009") == readable(to_byte_level("\u2009"))  # one way to show it, in every tab


@pytest.mark.parametrize("text, shown", [
    ("\u0301", "◌\u0301"),  # a bare combining mark: on a dotted circle, not on the box's border
    ("e\u0301", "e\u0301"),  # a mark on its letter stays there
    (" \u0301", "␣◌\u0301"),  # after a space it has no letter either
    ("\t\u0308", "⇥◌\u0308"),  # nor after a sign
    ("\u0301\u0302", "◌\u0301\u0302"),  # two marks on one circle
    ("\u093f", "◌\u093f"),  # a vowel sign of Devanagari (a spacing mark) alone
])
def test_a_combining_mark_with_no_letter_is_drawn_on_a_dotted_circle(text, shown):
    """The reviewer's case: a token that is a bare combining mark (the accent of a decomposed "é", a run of
    accents) stacked on whatever the page drew before it: a quote, a chip's border, nothing."""
    assert show_whitespace(text) == shown
    assert readable(to_byte_level(text)) == shown
    assert reads_as_is(text) == (shown == text)  # a predicted token too: labelled, not shown bare
    assert word_label(text) == shown.lstrip("␣")


@pytest.mark.parametrize("text, shown", [
    ("\u2764\ufe0f", "\u2764⟨U+FE0F⟩"),  # the reviewer's case: the red heart's emoji selector, VS16
    ("\ufe0f", "⟨U+FE0F⟩"),  # a token of the selector alone: a code, not an empty dotted circle
    ("\ufe0e", "⟨U+FE0E⟩"),
    ("\u845b\U000e0100", "\u845b⟨U+E0100⟩"),  # an ideographic variation selector (VS17)
    ("\u034f", "⟨U+034F⟩"),  # the combining grapheme joiner: a mark that shows nothing either
])
def test_a_variation_selector_shows_as_its_code_like_the_other_invisible_characters(text, shown):
    """The reviewer's case: U+FE0F (a combining mark, Mn, that shows nothing) was drawn as an empty dotted circle
    "◌" beside the zero-width joiner's "⟨U+200D⟩", where the Tokens tab says an invisible character shows as its
    code. Every character that shows nothing (`VISIBLE_RE`'s) and is not whitespace is shown by its code."""
    assert show_invisible(text) == shown
    assert readable(to_byte_level(text)) == shown
    assert DOTTED_CIRCLE not in show_whitespace(text)


def test_a_figures_label_is_cut_as_a_message_cuts_a_word_and_kept_on_one_line():
    """One rule for "…" (demo.formatting.short_text); a figure's label also shows a new line or tab as \\n, \\t."""
    from demo.figures import short_label
    from demo.formatting import short_text

    for label in ["cat", "x" * 14, "x" * 15, "a very long token label indeed"]:
        assert short_label(label) == short_text(label, 14)
    assert short_label("a\tb\nc", 18) == "a\\tb\\nc"
    assert short_label("tab\t" * 9, 18) == short_text("tab\\t" * 9, 18) and len(short_label("tab\t" * 9, 18)) == 18


def test_a_markdown_table_right_aligns_its_number_columns():
    """A table's number columns are marked `---:` (the renderer writes align="right", and the page's CSS keeps it),
    so that their digits line up; the others are left as text is. Every row has the header's cells."""
    table = markdown_table(["component", "shape", "parameters"],
                           [["Token embeddings", "32,768 × 256", "8,388,608"], ["**total**", "", "**13,260,000**"]],
                           numbers=[2])
    lines = table.split("\n")
    assert lines[0] == "| component | shape | parameters |"
    assert lines[1] == "|---|---|---:|"
    assert lines[2:] == ["| Token embeddings | 32,768 × 256 | 8,388,608 |", "| **total** |  | **13,260,000** |"]
    assert markdown_table(["a", "b"], [], numbers=[0, 1]).split("\n")[1] == "|---:|---:|"
    with pytest.raises(ValueError, match="2 cells, not 3"):
        markdown_table(["a", "b"], [["x", "y", "z"]])
    with pytest.raises(ValueError, match="column 2"):
        markdown_table(["a", "b"], [], numbers=[2])
