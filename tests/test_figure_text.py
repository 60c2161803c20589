"""The text of the figures the app draws at request time (`demo.figures`, `demo.position_view`): every character is
one the fonts can draw, and the text reads at 11 px or more on a phone, where the page shrinks a figure to its column.
"""
import re
import warnings
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
import torch
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.text import Text

from demo import figures, masking_view, position_view, word_map

ROOT = Path(__file__).resolve().parents[1]
# the default sentence of the Attention tab, as the shipped tokenizer cuts it
SENTENCE = ["<s>", "The", "cat", "sat", "on", "the", "mat", "because", "it", "was", "tired", ".", "</s>"]
READABLE_PX = 11  # CSS px: the smallest text a phone shows of a short text's figure


def _texts(fig):
    """Every text drawing the figure draws: titles, tick labels (not those of ticks outside the axes' limits,
    which matplotlib keeps but skips), axis and colour bar titles, legends, token labels."""
    drawn, draw = [], Text.draw

    def record(text, renderer):
        if text.get_visible() and text.get_text().strip():
            drawn.append(text)
        return draw(text, renderer)

    with mock.patch.object(Text, "draw", record):
        FigureCanvasAgg(fig).draw()
    return drawn


def _drawn_with_warnings(fig) -> list[str]:
    """The warnings drawing `fig` gives, the ones demo.figures silences for the server log included."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        FigureCanvasAgg(fig).draw()
    return [str(w.message) for w in caught]


def _grid_shown_px() -> int:
    """The width demo/page.css gives the grid of heads at least (a phone scrolls it sideways)."""
    css = (ROOT / "demo" / "page.css").read_text(encoding="utf-8")
    return int(re.search(r"#at-grid img \{min-width: (\d+)px\}", css).group(1))


def _phone_px(fig, text, shown_px: float = figures.PHONE_COLUMN_PX) -> float:
    """A text's size in CSS px where the page shows the figure `shown_px` wide (at its own size when it is
    narrower): a 390 px phone's column, 370 px."""
    natural = fig.get_figwidth() * fig.dpi
    return text.get_fontsize() * fig.dpi / 72 * min(1.0, shown_px / natural)


# ----------------------------------------------------------------------------- characters the fonts lack
def test_a_character_no_font_has_is_named_instead_of_drawn_as_a_box(handlers):
    """"I love pizza 🍕": the pizza's four byte pieces were labelled "🍕·1" ... "🍕·4", which DejaVu Sans (then a
    Hugging Face Space's only font) draws as empty boxes, in every attention figure and in the title of the bars of
    where one of them attends. Every character is now one a font has: drawing gives no missing-glyph warning. (🍕 is
    in Symbola, the Space's emoji font, which has emoji to Unicode 9; 🫠, of Unicode 14, is in no font the figures
    fall back to.)"""
    text = "I love pizza 🍕 日本 🫠"
    views = handlers.attention(text, 1, "average", "mlm", "all")[:4]  # heatmap, grid, rollout, bars
    tokens, _ = handlers.attention_data("mlm", text)
    query = next(i for i, label in enumerate(tokens.labels) if "🫠" in label)
    matrix = np.full((len(tokens.labels), len(tokens.labels)), 1 / len(tokens.labels))
    bars = figures.attention_bars(matrix[query], tokens.labels, query, f"Where token {query} “{tokens.labels[query]}”")
    for fig in [*views, bars]:
        assert not [m for m in _drawn_with_warnings(fig) if "missing from" in m]
    chars = figures._drawable_chars(tuple(figures.matplotlib.rcParams["font.family"]))
    assert ord("🫠") not in chars
    labels = [t.get_text() for t in figures.token_labels(views[0].axes[0], "x")]
    assert "⟨melting face⟩·1" in labels and "⟨melting face⟩·4" in labels
    assert "⟨melting face⟩" in bars.axes[0].get_title()
    pizza = "🍕" if ord("🍕") in chars else "⟨slice of pizza⟩"  # a machine with an emoji font draws it as it is
    assert f"{pizza}·1" in labels and f"{pizza}·4" in labels


def test_drawable_names_what_the_fonts_lack_and_keeps_the_rest():
    assert figures._char_name("🍕") == "⟨slice of pizza⟩"
    assert figures._char_name("日") == "⟨U+65E5⟩"  # its name is its code: "CJK UNIFIED IDEOGRAPH-65E5"
    assert figures._char_name("\t") == "⟨U+0009⟩"  # no name
    assert figures._char_name("\u0378") == "⟨U+0378⟩"  # unassigned
    kept = "Où est “<mask>”? ␣ ↵ ⟨U+200D⟩ naïve Ωμέγα Привет ✓ …"
    assert figures.drawable(kept) == kept  # what DejaVu Sans has stays as it is
    assert figures.drawable("two\nlines") == "two\nlines"  # a title's new line is a line break, not a character
    assert figures.drawable("a\u0378b") == "a⟨U+0378⟩b"


def test_a_label_lengthened_by_a_name_keeps_its_piece_number():
    """A token's label is cut at 14 characters; a named character may take it NAMED_ROOM further, so that the
    name and the piece number after it stay whole, and a long label is still cut."""
    chars = figures._drawable_chars(tuple(figures.matplotlib.rcParams["font.family"]))
    assert ord("🫠") not in chars  # Unicode 14's: no font the figures fall back to has it
    assert figures.short_label("🫠·1") == "⟨melting face⟩·1"
    assert figures.short_label("pizza🫠") == "pizza⟨melting face⟩"
    assert len(figures.short_label("🫠" * 20)) == 14 + figures.NAMED_ROOM
    assert figures.short_label("cat") == "cat" and figures.short_label("x" * 20) == "x" * 13 + "…"


# ----------------------------------------------------------------------------- a phone's column
def _attention_figures():
    """The attention figures of the default sentence, as the Attention tab draws them, with its longest texts: the
    rollout's colour bar title and the title of the bars of where "it" attends."""
    rng = np.random.default_rng(0)
    n = len(SENTENCE)
    matrix = rng.dirichlet(np.ones(n), size=n)
    return {"heatmap": figures.attention_heatmap(matrix, SENTENCE, "Attention, layer 6, average of 8 heads"),
            "rollout": figures.attention_heatmap(matrix, SENTENCE, "Attention rollout through all 6 layers",
                                                 cbar_label="rollout weight (attention multiplied through the "
                                                            "layers)"),
            "bars": figures.attention_bars(matrix[8], SENTENCE, 8,
                                           "Where token 8 “it” attends (layer 6, average of 8 heads)")}


def test_a_short_texts_attention_figures_read_on_a_phone():
    """At 390 px the page shrank the heatmap (6.6 in wide: its colour bar beside it) and the bars (6.1 in) to its
    370 px column: their text read at 7.8 to 9.3 px. Narrower now, the colour bar under the map, their text
    larger: 11 px or more, and on a computer, where the page shows them as drawn, still as wide as their data."""
    for name, fig in _attention_figures().items():
        sizes = [_phone_px(fig, t) for t in _texts(fig)]
        assert min(sizes) >= READABLE_PX, (name, min(sizes), fig.get_figwidth())
        assert fig.get_figwidth() <= 5.5, name


def test_the_grid_of_heads_reads_on_a_phone():
    """Four heads a row made the grid 16 in wide: the 640 px that the page shows it at on a phone (scrolling
    sideways) made its text 5 to 6 px. Two heads a row: 11 px or more, every head as large on a computer as before,
    when the page shrank the four a row to its column."""
    rng = np.random.default_rng(0)
    n = len(SENTENCE)
    fig = figures.head_grid(rng.dirichlet(np.ones(n), size=(8, n)), SENTENCE, 6)
    shown = _grid_shown_px()
    sizes = [_phone_px(fig, t, shown) for t in _texts(fig)]
    assert min(sizes) >= READABLE_PX, (min(sizes), fig.get_figwidth())
    heads = [ax for ax in fig.axes if ax.images]
    assert len(heads) == 8 and len({round(ax.get_position().x0, 3) for ax in heads}) == figures.GRID_COLUMNS
    head_px = heads[0].get_position().width * fig.get_figwidth() * fig.dpi
    assert head_px >= 1216 / 1599 * 320 * 0.95  # before: 320 px a head, the 1,599 px figure shown 1,216 px wide


def test_the_position_and_coverage_figures_read_on_a_phone():
    """The position figure was 6.2 in wide, its legend 9 pt: 7.5 px on a phone. 4.8 in, as the coverage plot."""
    g = torch.Generator().manual_seed(0)
    positions = torch.randn(130, 32, generator=g).cumsum(0)  # neighbours alike
    curves = {key: [0.15, 0.28, 0.4] for key in masking_view.SCHEMES}
    for fig in (position_view.position_similarity_figure(positions),
                figures.coverage_plot(curves, masking_view.SCHEMES)):
        sizes = [_phone_px(fig, t) for t in _texts(fig)]
        assert min(sizes) >= READABLE_PX, (fig.axes[0].get_title(), min(sizes))


@pytest.mark.parametrize("scale", [1e-7, 0.0125, 0.3, 12.5])
def test_the_word_map_reads_on_a_phone_and_its_text_stays_inside_it(scale):
    """The word map was a 6.2-inch figure, a fifth of it blank margin: its words 10 px on a phone, its ticks 9. Its
    margins are now fitted to its text, which must still lie inside it whatever tick labels the coordinates' scale
    gives ("−0.0125", "1e−7" above the axis), and read on a phone at the scales of real maps (0.3: the default
    map's coordinates lie within ±0.4)."""
    rng = np.random.default_rng(2)
    words = [f"word{i}" for i in range(12)] + ["serendipity"]
    points = torch.tensor(rng.uniform(-1.5, 1.0, size=(len(words), 2)) * scale, dtype=torch.float32)
    fig = word_map._map_figure((words, points, [0.31, 0.12], [], [1] * 12 + [3]))
    texts = _texts(fig)
    if scale == 0.3:
        assert min(_phone_px(fig, t) for t in texts) >= READABLE_PX
    renderer = FigureCanvasAgg(fig).get_renderer()
    for text in texts:
        box = text.get_window_extent(renderer)
        assert box.x0 >= 0 and box.y0 >= 0 and box.x1 <= fig.bbox.width and box.y1 <= fig.bbox.height, \
            (text.get_text(), box, fig.bbox)


@pytest.mark.parametrize("labels", [SENTENCE, ["<s>", "I", "love", "pizza", "🍕·1", "🍕·2", "🍕·3", "🍕·4",
                                               "and", "日·1", "日·2", "日·3", "</s>"],
                                    ["<s>"] + [f"word{i}" for i in range(60)] + ["</s>"]])
def test_the_attention_figures_text_stays_inside_them_and_apart(labels):
    """The margins are computed, not laid out by matplotlib: every text lies inside the figure (a wrapped title, a
    colour bar title on two lines, a named character's long label), the axis titles clear of the token labels
    and of the colour bar under the map."""
    rng = np.random.default_rng(1)
    n = len(labels)
    matrix = rng.dirichlet(np.ones(n), size=n)
    long_title = f"Where token 4 “{labels[4]}” attends (layer 12, average of 12 heads)"
    for fig in (figures.attention_heatmap(matrix, labels, long_title,
                                          cbar_label="rollout weight (attention multiplied through the layers)"),
                figures.attention_bars(matrix[4], labels, 4, long_title),
                figures.head_grid(rng.dirichlet(np.ones(n), size=(12, n)), labels, 12)):
        canvas = FigureCanvasAgg(fig)
        canvas.draw()
        renderer = canvas.get_renderer()
        for text in _texts(fig):
            box = text.get_window_extent(renderer)
            assert box.x0 >= -1 and box.y0 >= -1 and box.x1 <= fig.bbox.width + 1 and box.y1 <= fig.bbox.height + 1, \
                (text.get_text(), box, fig.bbox)
        ax = fig.axes[0]
        ticks = [t.get_window_extent(renderer) for t in figures.token_labels(ax, "x")]
        xlabel = ax.xaxis.label.get_window_extent(renderer)
        if ax.get_xlabel():
            assert xlabel.y1 <= min(t.y0 for t in ticks)
        if len(fig.axes) == 2 and ax.images:  # the heatmap: its colour bar under the axis title
            bar = fig.axes[1]
            assert bar.get_window_extent(renderer).y1 <= xlabel.y0
            assert bar.xaxis.label.get_window_extent(renderer).y0 >= -1
