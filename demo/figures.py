"""Matplotlib figures of the demo: attention heatmaps, head grids, bar charts, masking coverage.

Figures are built with the object-oriented API (`Figure`, never `pyplot`), so requests can draw them in
parallel threads. Sizes and fonts scale with the number of tokens, so inputs up to the model's maximum
length stay readable; beyond what fits, every k-th token is labelled.
"""
from __future__ import annotations

import math
import textwrap
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

# Glyphs the font lacks (CJK, emoji) are drawn as boxes; the warnings would only fill the server log.
warnings.filterwarnings("ignore", message=r"Glyph .* missing from", category=UserWarning)
warnings.filterwarnings("ignore", message=r"Matplotlib currently does not support", category=UserWarning)

SCHEME_COLORS = {"static1": "#7f7f7f", "static10": "#1f77b4", "dynamic": "#d62728"}
MIN_FONT, MAX_FONT, MAX_FONT_SKIPPING = 6.0, 11.0, 9.0


def short_label(label: str, width: int = 14) -> str:
    """A label as a figure writes it: on one line (a new line or a tab shown as \\n, \\t), cut as `short_text`."""
    return short_text(label.replace("\n", "\\n").replace("\t", "\\t"), width)


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
    """Inches of a heatmap's side for n tokens: up to 128 tokens, every one labelled at 6 pt or more."""
    return float(min(12.5, max(4.0, 2.4 + 0.08 * n)))


def _label_inches(labels, font: float) -> float:
    """Rough width of the longest (shortened) tick label, for margins without a costly layout engine."""
    longest = max((len(short_label(label)) for label in labels), default=1)
    return longest * font * 0.62 / 72


def attention_heatmap(matrix: np.ndarray, labels: list[str], title: str, cbar_label: str = "attention weight"):
    """A (T, T) matrix: row = the token that attends (query), column = the token attended to (key).
    Margins are computed from the label lengths (a layout engine would double the drawing time)."""
    n = len(labels)
    side = _square_size(n)  # the square axes, inches
    font, step = _tick_layout(n, side)
    label = _label_inches(labels[::step], font)
    left, bottom, top, right = label + 0.6, label * 0.87 + 0.6, 0.45, 1.3
    width, height = left + side + right, bottom + side + top
    fig = Figure(figsize=(width, height), dpi=100)
    ax = fig.add_axes((left / width, bottom / height, side / width, side / height))
    im = ax.imshow(matrix, cmap="viridis", vmin=0.0, vmax=max(float(np.max(matrix)), 1e-9), aspect="equal",
                   interpolation="nearest")
    _set_ticks(ax, "x", labels, font, step, rotation=60)
    _set_ticks(ax, "y", labels, font, step)
    ax.set_xlabel("attended to (key)", fontsize=10)
    ax.set_ylabel("attending token (query)", fontsize=10)
    ax.xaxis.set_label_coords(0.5, -(label * 0.87 + _TICK_PAD + 0.1) / side)  # below the token labels
    ax.yaxis.set_label_coords(-(label + _TICK_PAD + 0.1) / side, 0.5)
    ax.set_title(title, fontsize=12)
    cax = fig.add_axes(((left + side + 0.2) / width, (bottom + 0.1 * side) / height, 0.18 / width,
                        0.8 * side / height))
    fig.colorbar(im, cax=cax, label=cbar_label)
    cax.yaxis.set_major_formatter(PercentFormatter(1.0))  # a share, in % as every table beside the figure
    return fig


GRID_SCALE_NOTE = "One colour scale for every head (the bar on the right): a head that spreads its attention stays dark"


def head_grid(layer_attention: np.ndarray, labels: list[str], layer: int):
    """All heads of one layer, (nh, T, T), as small heatmaps on one colour scale, 0% to 100%, with one colour bar:
    a head that spreads its attention thin stays dark beside one that puts it all on one token (each cell scaled
    to its own maximum, as it was, made both reach full yellow). 100% rather than the layer's largest weight: a
    row's weights sum to 1, so the top of the bar means the same in every layer. The tokens are the same in every
    cell, so only the outer cells carry labels (the left column and the lowest cell of each column), and the margins
    are computed from the label lengths: text and a layout engine were most of the drawing time (1.9 s -> 0.5 s)."""
    nh, n = layer_attention.shape[0], len(labels)
    cols = min(4, nh)
    rows = math.ceil(nh / cols)
    cell = 3.2 if n <= 32 else 3.6  # inches per head
    font, step = _tick_layout(n, cell * 0.8)
    label = _label_inches(labels[::step], font)
    bar_w, bar_label = 0.18, 0.95  # the colour bar and room for its ticks and label, inches
    left, bottom, right, gap_w, gap_h = label + 0.3, label + 0.3, 0.35 + bar_w + bar_label, 0.25, 0.45
    grid_w, grid_h = cols * cell + (cols - 1) * gap_w, rows * cell + (rows - 1) * gap_h
    width = left + grid_w + right
    note = textwrap.wrap(GRID_SCALE_NOTE, int(width * 72 / (9.5 * 0.55)))  # one line, two for a one-head model
    top = 0.8 + 0.15 * len(note)
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
        ax.set_title(f"head {h + 1}", fontsize=10)
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
    fig.colorbar(image, cax=cax, label="attention weight, every head")
    cax.yaxis.set_major_formatter(PercentFormatter(1.0))  # a share, in % as the tables beside the figure
    fig.suptitle(f"Layer {layer}: every head (rows attend to columns)", fontsize=12)
    fig.text(0.5, 1 - 0.5 / height, "\n".join(note), ha="center", va="top", fontsize=9.5)
    return fig


def attention_bars(weights: np.ndarray, labels: list[str], query: int, title: str):
    """Where one token (query) attends: one bar per token it can see. The query's own bar is told apart by more
    than its colour (red, the others blue): it is hatched and outlined in black, and its label is bold, so that it
    stands out in grey or to a colour-blind reader, and among tokens that read the same ("the … the")."""
    n = len(labels)
    axis = float(min(14.0, max(5.0, 1.0 + 0.11 * n)))
    font, step = _tick_layout(n, axis)
    label = _label_inches(labels[::step], font)
    left, bottom, top, right, plot_h = 0.9, label * 0.87 + 0.25, 0.4, 0.2, 2.6
    width, height = left + axis + right, bottom + plot_h + top
    fig = Figure(figsize=(width, height), dpi=100)
    ax = fig.add_axes((left / width, bottom / height, axis / width, plot_h / height))
    colors = ["#d62728" if i == query else "#1f77b4" for i in range(n)]
    bars = ax.bar(range(n), weights, color=colors)
    if 0 <= query < n:
        bars[query].set(hatch="//", edgecolor="black", linewidth=1.2)
    _set_ticks(ax, "x", labels, font, step, rotation=60)
    for text in token_labels(ax, "x"):  # the query's label, when it is drawn (every step-th token is)
        if round(text.get_position()[0]) == query:
            text.set_fontweight("bold")
    ax.set_xlim(-0.6, n - 0.4)
    ax.set_ylabel("attention weight")
    ax.yaxis.set_major_formatter(PercentFormatter(1.0))  # as the table beside it ("76.6%")
    ax.set_title(title, fontsize=11)
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
