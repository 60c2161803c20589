"""Matplotlib figures of the demo: attention heatmaps, head grids, bar charts, masking coverage.

Figures are built with the object-oriented API (`Figure`, never `pyplot`), so requests can draw them in
parallel threads. Sizes and fonts scale with the number of tokens, so inputs up to the model's maximum
length stay readable; beyond what fits, every k-th token is labelled.
"""
from __future__ import annotations

import functools
import logging
import math
import textwrap
import unicodedata
import warnings

import matplotlib

matplotlib.use("Agg")
matplotlib.rcParams["text.parse_math"] = False  # a token like "$x$" is text, not math
matplotlib.rcParams["text.usetex"] = False
# Gradio's Plot saves a figure with savefig's own defaults: white, pinned, whatever a style or a figure says, so that
# a dark page (the app's dark mode) never shows through its black text and lines
matplotlib.rcParams["savefig.facecolor"] = "white"
import numpy as np  # noqa: E402
from matplotlib import font_manager  # noqa: E402
from matplotlib import lines as mlines  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import MaxNLocator, PercentFormatter  # noqa: E402
from matplotlib.transforms import ScaledTranslation  # noqa: E402

from roberta.masking import MLM_PROBABILITY  # noqa: E402

from .formatting import short_text  # noqa: E402

# Fall back to fonts with CJK, Arabic, Hebrew or emoji glyphs when the system has them (matplotlib >= 3.6).
_FALLBACKS = ["Noto Sans CJK JP", "Noto Sans CJK SC", "Noto Sans Arabic", "Noto Sans Hebrew", "Noto Sans",
              "Noto Emoji", "Symbola"]
_INSTALLED = {f.name for f in font_manager.fontManager.ttflist}
matplotlib.rcParams["font.family"] = ["DejaVu Sans"] + [f for f in _FALLBACKS if f in _INSTALLED]

# A character no font has is written by its name (`drawable`): these keep the server log clear of what slips through
# (a glyph a font lists but draws as a box) and of scripts drawn without their shaping (Devanagari)
warnings.filterwarnings("ignore", message=r"Glyph .* missing from", category=UserWarning)
warnings.filterwarnings("ignore", message=r"Matplotlib currently does not support", category=UserWarning)


def _not_a_missing_weight(record: logging.LogRecord) -> bool:
    """False for matplotlib's "findfont: Failed to find font weight bold for Symbola": a fallback font with no bold
    face (Symbola, the Space's emoji font) draws a bold title's emoji in its regular face, once per size logged."""
    return not record.getMessage().startswith("findfont: Failed to find font weight")


logging.getLogger("matplotlib.font_manager").addFilter(_not_a_missing_weight)

SCHEME_COLORS = {"static1": "#7f7f7f", "static10": "#1f77b4", "dynamic": "#d62728"}
MIN_FONT, MAX_FONT, MAX_FONT_SKIPPING = 6.0, 12.0, 9.0
# The page shows a figure at its own size, or shrunk to its column where that is narrower: 370 px on a 390 px phone.
# So a figure is drawn little wider than its data and its labels need, with text large enough to read at 11 px or
# more once shrunk (a short text's: a long one's figure grows with its tokens); on a computer it is shown as drawn.
# No code here reads PHONE_COLUMN_PX: it is the tests' check of that rule (tests/test_figure_text.py).
PHONE_COLUMN_PX = 370
TEXT_FONT, TICK_FONT, TITLE_FONT = 12.0, 11.5, 13.0  # points: axis titles; tick labels; figure titles


@functools.cache
def _font_files(families: tuple[str, ...]) -> tuple[str, ...]:
    """The font files of the figures' font list, in its order (a generic family, "sans-serif", stands for the fonts
    its own list names; a font not installed is left out): the fonts matplotlib falls back through."""
    names = [name for family in families
             for name in (matplotlib.rcParams[f"font.{family}"] if f"font.{family}" in matplotlib.rcParams
                          else [family])]
    files = []
    for name in names:
        try:
            path = font_manager.findfont(font_manager.FontProperties(family=name), fallback_to_default=False)
        except ValueError:  # not installed
            continue
        if path not in files:
            files.append(path)
    return tuple(files) or (font_manager.findfont(font_manager.FontProperties()),)


@functools.cache
def _drawable_chars(families: tuple[str, ...]) -> frozenset[int]:
    """The code points that some font of the figures' font list has a glyph for: what matplotlib can draw, by its
    font fallback."""
    return frozenset(c for path in _font_files(families) for c in font_manager.get_font(path).get_charmap())


def _char_name(c: str) -> str:
    """A character no font can draw, in words: "⟨slice of pizza⟩"; by its code where its name is only that code
    ("CJK UNIFIED IDEOGRAPH-65E5": "⟨U+65E5⟩") or it has none (a control character: "⟨U+0009⟩")."""
    code = f"{ord(c):04X}"
    name = unicodedata.name(c, "")
    return f"⟨U+{code}⟩" if not name or code in name else f"⟨{name.lower()}⟩"


def drawable(text: str) -> str:
    """`text` as the figures' fonts can draw it: a character none of them has (an emoji, a CJK character on a
    server with DejaVu Sans alone, as a Hugging Face Space is without packages.txt's fonts) written by its name, "🍕"
    as "⟨slice of pizza⟩", where matplotlib drew an empty box, the same for every character it lacks. A new line
    stays one."""
    chars = _drawable_chars(tuple(matplotlib.rcParams["font.family"]))
    if all(ord(c) in chars or c == "\n" for c in text):
        return text
    return "".join(c if ord(c) in chars or c == "\n" else _char_name(c) for c in text)


NAMED_ROOM = 16  # characters a label may grow by when a character in it is written by its name


def short_label(label: str, width: int = 14) -> str:
    """A label as a figure writes it: on one line (a new line or a tab shown as \\n, \\t), a character no font
    has by its name (`drawable`), cut as `short_text`. A label that a name lengthened may run NAMED_ROOM characters
    longer, so that an emoji's byte piece "🍕·1" reads "⟨slice of pizza⟩·1" whole, its piece number kept."""
    one_line = label.replace("\n", "\\n").replace("\t", "\\t")
    shown = drawable(one_line)
    return short_text(shown, width if shown == one_line else width + NAMED_ROOM)


def _tick_layout(n: int, axis_inches: float) -> tuple[float, int]:
    """Font size and label step so that n labels fit along an axis of axis_inches."""
    per_label_pt = axis_inches * 72 / max(n, 1)
    font = min(MAX_FONT, per_label_pt * 0.9)
    step = 1
    if font < MIN_FONT:
        step = math.ceil(MIN_FONT / font)
        font = min(MAX_FONT_SKIPPING, per_label_pt * step * 0.9)
    return font, step


TICK_GID = {"x": "x token label", "y": "y token label"}  # how tests and readers find the labels among ax.texts
_TICK_PAD = 3.5 / 72  # inches between an axis and its labels, matplotlib's default tick length


def _set_ticks(ax, axis: str, labels, font: float, step: int, rotation: int = 0):
    """Label every `step`-th token along an axis: plain texts and one line of tick marks. Matplotlib's own ticks
    (a Tick object per label, each with two lines and two texts) were half the drawing time of a 128-token
    heatmap."""
    positions = list(range(0, len(labels), step))
    along, across = positions, [0] * len(positions)  # data coordinates along the axis, axes coordinates across
    if axis == "x":
        ax.set_xticks([])
        base = ax.get_xaxis_transform()  # x in data, y in axes coordinates
        offset = ScaledTranslation(0, -_TICK_PAD, ax.figure.dpi_scale_trans)
        style = dict(rotation=rotation, ha="right" if rotation else "center", va="top", rotation_mode="anchor")
        xy, marker = (along, across), mlines.TICKDOWN
    else:
        ax.set_yticks([])
        base = ax.get_yaxis_transform()  # x in axes, y in data coordinates
        offset = ScaledTranslation(-_TICK_PAD, 0, ax.figure.dpi_scale_trans)
        style = dict(ha="right", va="center")
        xy, marker = (across, along), mlines.TICKLEFT
    for x, y, i in zip(*xy, positions):
        ax.text(x, y, short_label(labels[i]), transform=base + offset, fontsize=font, gid=TICK_GID[axis], **style)
    ax.plot(*xy, transform=base, ls="", marker=marker, ms=3.5, mew=0.8, color="black", clip_on=False)


def token_labels(ax, axis: str) -> list:
    """The token labels `_set_ticks` drew along an axis (Text artists), in order."""
    return [t for t in ax.texts if t.get_gid() == TICK_GID[axis]]


def _square_size(n: int) -> float:
    """Inches of a heatmap's side for n tokens: up to 128 tokens, every one labelled at 6 pt or more; a short text's
    as narrow as its labels allow, for a phone's column."""
    return float(min(12.5, max(3.4, 2.4 + 0.08 * n)))


def _label_inches(labels, font: float) -> float:
    """Width of the longest (shortened) tick label, for margins without a costly layout engine."""
    return max((_text_inches(short_label(label), font) for label in labels), default=font / 72)


def _slanted_inches(label: float, font: float) -> float:
    """How far below the axes a label `label` inches wide reaches, slanted at 60 degrees (its line's height too)."""
    return label * 0.87 + 0.6 * font / 72


def _text_inches(text: str, size: float) -> float:
    """The width of one line of `text` at `size` points in the figures' fonts (DejaVu Sans, then the fonts it falls
    back to for a character it lacks, as matplotlib draws it), without drawing anything: FreeType's, 5% more, as
    matplotlib's drawing at 100 dpi came out up to 4% wider."""
    font = font_manager.get_font(list(_font_files(tuple(matplotlib.rcParams["font.family"]))))
    font.set_size(size, 72)
    font.set_text(text)
    return font.get_width_height()[0] / 64 / 72 * 1.05


def _wrap(text: str, size: float, inches: float) -> list[str]:
    """`text` in lines of at most `inches` at `size` points, broken between words as matplotlib wraps a text
    (`wrap=True`): greedily, word by word, each line measured."""
    lines = [""]
    for word in text.split(" "):
        longer = f"{lines[-1]} {word}" if lines[-1] else word
        if lines[-1] and _text_inches(longer, size) > inches:
            lines.append(word)
        else:
            lines[-1] = longer
    return lines


def _title(title: str, size: float, centre: float, width: float) -> tuple[str, int]:
    """A title of axes whose centre lies `centre` inches from the left of a figure `width` inches wide: written as
    the fonts can draw it, and the number of lines it takes when matplotlib wraps it (`wrap=True`: a centred text at
    twice its distance to the nearer edge of the figure), for the room above the axes. It stays one line of text,
    as the page's alt text reads it."""
    title = drawable(title)
    return title, len(_wrap(title, size, 2 * min(centre, width - centre) - 0.1))


def attention_heatmap(matrix: np.ndarray, labels: list[str], title: str, cbar_label: str = "attention weight"):
    """A (T, T) matrix: row = the token that attends (query), column = the token attended to (key).
    Margins are computed from the label lengths (a layout engine would double the drawing time). The colour bar
    lies under the map, not beside it: the figure is hardly wider than the map and its labels (5.1 in for the
    default sentence's 13 tokens; 6.6 in with the bar beside it, whose text a phone showed at 8 px)."""
    n = len(labels)
    side = _square_size(n)  # the square axes, inches
    font, step = _tick_layout(n, side)
    label = _label_inches(labels[::step], font)
    left, right = label + 0.6, 0.3
    width = left + side + right
    bar_w = 0.8 * side
    bar_lines = len(_wrap(cbar_label, TEXT_FONT, 2 * right + side - 0.1))  # wrapped where it is drawn (centred)
    under = _slanted_inches(label, font) + _TICK_PAD + 0.5  # the token labels and the axis title, to the bar
    bar_y = 0.1 + 0.21 * bar_lines + 0.3  # the bar's bottom: its title's lines and its ticks under it
    bottom = bar_y + 0.16 + under
    title, lines = _title(title, TITLE_FONT, left + side / 2, width)
    height = bottom + side + 0.2 + 0.24 * lines
    fig = Figure(figsize=(width, height), dpi=100)
    ax = fig.add_axes((left / width, bottom / height, side / width, side / height))
    ax.set_title(title, fontsize=TITLE_FONT, wrap=True)
    im = ax.imshow(matrix, cmap="viridis", vmin=0.0, vmax=max(float(np.max(matrix)), 1e-9), aspect="equal",
                   interpolation="nearest")
    _set_ticks(ax, "x", labels, font, step, rotation=60)
    _set_ticks(ax, "y", labels, font, step)
    ax.set_xlabel("attended to (key)", fontsize=TEXT_FONT)
    ax.set_ylabel("attending token (query)", fontsize=TEXT_FONT)
    ax.xaxis.set_label_coords(0.5, -(_slanted_inches(label, font) + _TICK_PAD + 0.1) / side)  # below the token labels
    ax.yaxis.set_label_coords(-(label + _TICK_PAD + 0.1) / side, 0.5)
    cax = fig.add_axes(((left + (side - bar_w) / 2) / width, bar_y / height, bar_w / width, 0.16 / height))
    # a share, in % as every table beside the figure; four steps, so that the ticks fit the bar's width
    fig.colorbar(im, cax=cax, orientation="horizontal", ticks=MaxNLocator(4), format=PercentFormatter(1.0))
    cax.set_xlabel(cbar_label, fontsize=TEXT_FONT, wrap=True)
    cax.tick_params(labelsize=TICK_FONT)
    return fig


GRID_SCALE_NOTE = "One colour scale for every head (the bar on the right): a head that spreads its attention stays dark"
GRID_COLUMNS = 2  # heads a row: the page shows the grid at least 640 px wide, scrolling sideways on a phone


def head_grid(layer_attention: np.ndarray, labels: list[str], layer: int):
    """All heads of one layer, (nh, T, T), as small heatmaps on one colour scale, 0% to 100%, with one colour bar:
    a head that spreads its attention thin stays dark beside one that puts it all on one token (each cell scaled
    to its own maximum, as it was, made both reach full yellow). 100% rather than the layer's largest weight: a
    row's weights sum to 1, so the top of the bar means the same in every layer. The tokens are the same in every
    cell, so only the outer cells carry labels (the left column and the lowest cell of each column), and the margins
    are computed from the label lengths: text and a layout engine were most of the drawing time (1.9 s -> 0.5 s).
    Two heads a row (GRID_COLUMNS): four made a figure 16 in wide, which a phone's 640 px showed at 5-6 px text; two
    are 7.5 in, their text 11 px there, each head as large on a computer as the four a row were when shrunk to it."""
    nh, n = layer_attention.shape[0], len(labels)
    cols = min(GRID_COLUMNS, nh)
    rows = math.ceil(nh / cols)
    cell = 2.4 if n <= 32 else 2.8  # inches per head
    font, step = _tick_layout(n, cell * 0.8)
    label = _label_inches(labels[::step], font)
    bar_w, bar_label = 0.18, 1.05  # the colour bar and room for its ticks and label, inches
    left, bottom, right, gap_w, gap_h = label + 0.3, label + 0.3, 0.35 + bar_w + bar_label, 0.25, 0.5
    grid_w, grid_h = cols * cell + (cols - 1) * gap_w, rows * cell + (rows - 1) * gap_h
    width = left + grid_w + right
    note = textwrap.wrap(GRID_SCALE_NOTE, int(width * 72 / (TICK_FONT * 0.6)))
    top = 0.85 + 0.2 * len(note)
    height = bottom + grid_h + top
    fig = Figure(figsize=(width, height), dpi=100)
    fig.subplots_adjust(left=left / width, right=1 - right / width, bottom=bottom / height, top=1 - top / height,
                        wspace=gap_w / cell, hspace=gap_h / cell)
    axes = fig.subplots(rows, cols, squeeze=False)
    image = None
    for h in range(rows * cols):
        ax = axes[h // cols][h % cols]
        if h >= nh:
            ax.axis("off")
            continue
        image = ax.imshow(layer_attention[h], cmap="viridis", vmin=0.0, vmax=1.0, interpolation="nearest")
        ax.set_title(f"head {h + 1}", fontsize=TEXT_FONT)
        if h // cols == rows - 1 or h + cols >= nh:  # the lowest cell of its column
            _set_ticks(ax, "x", labels, font, step, rotation=90)
        else:
            ax.set_xticks([])
        if h % cols == 0:
            _set_ticks(ax, "y", labels, font, step)
        else:
            ax.set_yticks([])
    span = min(grid_h, 2 * cell)  # the bar beside the upper cells, at most two rows high
    cax = fig.add_axes(((left + grid_w + 0.35) / width, (bottom + grid_h - span) / height, bar_w / width,
                        span / height))
    fig.colorbar(image, cax=cax)
    cax.set_ylabel("attention weight, every head", fontsize=TEXT_FONT)
    cax.tick_params(labelsize=TICK_FONT)
    cax.yaxis.set_major_formatter(PercentFormatter(1.0))  # a share, in % as the tables beside the figure
    fig.suptitle(f"Layer {layer}: every head (rows attend to columns)", fontsize=TITLE_FONT)
    fig.text(0.5, 1 - 0.55 / height, "\n".join(note), ha="center", va="top", fontsize=TICK_FONT)
    return fig


def attention_bars(weights: np.ndarray, labels: list[str], query: int, title: str):
    """Where one token (query) attends: one bar per token it can see. The query's own bar is told apart by more
    than its colour (red, the others blue): it is hatched and outlined in black, and its label is bold, so that it
    stands out in grey or to a colour-blind reader, and among tokens that read the same ("the … the"). As narrow
    as a short text's bars allow (4.8 in for 13 tokens), its title wrapped, so that a phone shows its text at 11 px
    or more."""
    n = len(labels)
    axis = float(min(14.0, max(3.6, 1.0 + 0.11 * n)))
    font, step = _tick_layout(n, axis)
    label = _label_inches(labels[::step], font)
    left, bottom, right, plot_h = 1.0, _slanted_inches(label, font) + 0.25, 0.2, 2.6
    width = left + axis + right
    title, lines = _title(title, TEXT_FONT, left + axis / 2, width)
    height = bottom + plot_h + 0.2 + 0.22 * lines
    fig = Figure(figsize=(width, height), dpi=100)
    ax = fig.add_axes((left / width, bottom / height, axis / width, plot_h / height))
    ax.set_title(title, fontsize=TEXT_FONT, wrap=True)
    colors = ["#d62728" if i == query else "#1f77b4" for i in range(n)]
    bars = ax.bar(range(n), weights, color=colors)
    if 0 <= query < n:
        bars[query].set(hatch="//", edgecolor="black", linewidth=1.2)
    _set_ticks(ax, "x", labels, font, step, rotation=60)
    for text in token_labels(ax, "x"):  # the query's label, when it is drawn (every step-th token is)
        if round(text.get_position()[0]) == query:
            text.set_fontweight("bold")
    ax.set_xlim(-0.6, n - 0.4)
    ax.set_ylabel("attention weight", fontsize=TEXT_FONT)
    ax.tick_params(labelsize=TICK_FONT)
    ax.yaxis.set_major_formatter(PercentFormatter(1.0))  # as the table beside it ("76.6%")
    ax.grid(axis="y", alpha=0.3)
    return fig


COVERAGE_WIDTH, COVERAGE_FONT = 4.8, 12.0  # inches, points: on a 390 px phone (~370 px) the legend reads ~9 pt


def _legend_label(label: str, width: int = 34) -> str:
    """A legend entry in short lines, so that one column fits the narrow figure: a long name breaks before its
    parenthesis (or after its colon), then at word boundaries."""
    for mark, cut in ((" (", "\n("), (": ", ":\n")):
        if len(label) > width and mark in label:
            label = label.replace(mark, cut, 1)
    return "\n".join(textwrap.fill(line, width, break_long_words=False) for line in label.split("\n"))


def expected_coverage(epochs: int, mlm_probability: float = MLM_PROBABILITY) -> np.ndarray:
    """The share of a sentence expected to have been a target after each of `epochs` epochs with a new mask every
    epoch (each token picked with `mlm_probability`, independently): 1 − (1 − p)^epoch."""
    return 1 - (1 - mlm_probability) ** np.arange(1, epochs + 1)


def coverage_plot(curves: dict[str, list[float]], names: dict[str, str], mlm_probability: float = MLM_PROBABILITY):
    """Fraction of positions that were ever a prediction target, after each epoch, one line per scheme.
    Narrow, with large text and a one-column legend under the axes: the page shows the figure at its own size on
    a computer (480 px) and shrinks it to the screen's width on a phone, where the text must stay readable."""
    epochs = len(next(iter(curves.values())))
    x = np.arange(1, epochs + 1)
    font = COVERAGE_FONT
    fig = Figure(figsize=(COVERAGE_WIDTH, 6.2), dpi=100, layout="constrained")
    ax = fig.add_subplot()
    styles = {"static1": "s-", "static10": "o-", "dynamic": "^-"}
    for key, values in curves.items():
        ax.plot(x, np.asarray(values) * 100, styles.get(key, "o-"), color=SCHEME_COLORS.get(key),
                label=_legend_label(names[key]), markersize=5)
    ax.plot(x, expected_coverage(epochs, mlm_probability) * 100, ":", color="black", alpha=0.6,
            label=_legend_label(f"expected, a new mask every epoch: 1 − {1 - mlm_probability:.2f}^epochs"))
    ax.set_xlabel("epoch", fontsize=font)
    ax.set_ylabel("positions ever a target (%)", fontsize=font)
    ax.tick_params(labelsize=font - 1)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))  # whole epochs, one epoch too
    ax.set_ylim(0, 105)
    ax.set_xlim(0.5, epochs + 0.5)
    ax.grid(alpha=0.3)
    # below the axes, so it never covers a line; one column, so that it fits the narrow figure
    ax.legend(fontsize=font, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=1, frameon=False,
              handlelength=2.2, labelspacing=0.6)
    # wrapped when drawn, so that the title (which names the image for a screen reader) stays one line of text
    ax.set_title("Coverage: how much of the sentence the model was ever asked to predict", fontsize=font + 0.5,
                 wrap=True)
    return fig
