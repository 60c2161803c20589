"""Accessibility of what the handlers draw, without a browser: the figures tell things apart by more than colour,
and an input error carries what a screen reader needs (that the page, in tests/test_app_browser.py, shows it as it
should: contrast, the ties to the fields, the announcements)."""
import re

import numpy as np

from demo import figures
from demo.validation import error_html


def test_the_chosen_tokens_bar_is_told_apart_by_more_than_its_colour():
    """"Where one token attends": the chosen token's own bar was red and every other blue, nothing else, and its
    label is no help when the word repeats ("the … the"). It is hatched and outlined, and its label is bold."""
    labels = ["<s>", "the", "cat", "sat", "on", "the", "mat", "</s>"]
    fig = figures.attention_bars(np.full(8, 1 / 8), labels, 5, "Where token 5 “the” attends")
    bars = fig.axes[0].patches
    assert len(bars) == 8
    marked = [i for i, bar in enumerate(bars) if bar.get_hatch() and bar.get_edgecolor()[3] > 0 and bar.get_linewidth()]
    assert marked == [5]
    ticks = figures.token_labels(fig.axes[0], "x")
    assert [t.get_text() for t in ticks] == labels  # the labels themselves unchanged
    assert [round(t.get_position()[0]) for t in ticks if t.get_fontweight() == "bold"] == [5]  # not the first "the"
    # a long text labels every k-th token only: the bar is marked all the same
    many = figures.attention_bars(np.full(128, 1 / 128), [f"w{i}" for i in range(128)], 7, "t")
    assert [i for i, bar in enumerate(many.axes[0].patches) if bar.get_hatch()] == [7]


def test_an_input_error_says_to_a_screen_reader_that_the_results_are_the_last_inputs():
    """The results kept after an input error were only greyed: a screen reader was not told that they are the last
    valid input's. The message ends with a note that says so, hidden unless demo/page.css shows it (visually
    hidden) beside results that were kept."""
    message = error_html("The text is empty: type a sentence first.")
    assert re.fullmatch(r'<div class="input-error" role="alert">⚠️ The text is empty: type a sentence first\.'
                        r'<span class="input-error-stale"> The results shown are still those of the last valid '
                        r"input\.</span></div>", message), message
