"""The Embeddings tab's word map: a few words' embeddings projected to 2-D (PCA), each word's label placed
where it covers the fewest others, and the same map as a table. A word is looked up as the other word views look
it up (`demo.embedding_view.look_up_word`)."""
from __future__ import annotations

import html
import math

import numpy as np
import torch
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from .embedding_view import EMBEDDING_CSS, look_up_word
from .figures import short_label  # importing figures also sets the Agg backend, fonts, and text never read as math
from .validation import WORD_SEPARATORS_RE, split_words

MIN_MAP_WORDS, MAX_MAP_WORDS = 3, 30  # two words make a line, not a map
REASONS_SAID = 3  # a refused map names this many words' reasons, then counts the others (30 made 2,700 characters)
SEPARATED = "separated by commas, semicolons or new lines (or by spaces, where there is none of those)"  # `parse_words`


def parse_words(text: str) -> list[str]:
    """A textbox's words (`demo.examples.MAP_WORDS`) separated as the fill-mask candidates are (commas,
    semicolons or new lines: `split_words`), blanks dropped, each word once. A text without any of those is split
    at its spaces: "cat dog bird fish" is four words (read as one, the map was refused as "1 given"), while a list
    with commas keeps a word of two ("New York, Paris, Rome": the mean of its pieces, as any word in pieces)."""
    words = split_words(text) if WORD_SEPARATORS_RE.search(text) else text.split()
    return list(dict.fromkeys(words))


def word_map_points(embeddings: torch.Tensor, tokenizer, words: list[str]) -> tuple[list[str], torch.Tensor,
                                                                                      list[float], list[str],
                                                                                      list[int]]:
    """The words (blanks and repeats dropped), their (N, 2) coordinates on the first two principal components
    of their vectors (each at unit length, so direction is what counts, as for cosine similarity), the share
    of the variance each component holds, and why each word the map leaves out was left out (a word in too
    many pieces, a special token...: `look_up_word`'s message). Signs are fixed (each component's largest
    coordinate is positive), so the same words always give the same map. Last, how many pieces each placed word
    is (more than 1: it stands at the mean of its pieces' vectors, as in Nearest words). ValueError for fewer than
    MIN_MAP_WORDS or more than MAX_MAP_WORDS words, or when fewer than MIN_MAP_WORDS can be placed (naming the
    first REASONS_SAID bad words' reasons, counting the others)."""
    words = list(dict.fromkeys(w.strip() for w in words if w.strip()))
    if not MIN_MAP_WORDS <= len(words) <= MAX_MAP_WORDS:
        raise ValueError(f"Give {MIN_MAP_WORDS} to {MAX_MAP_WORDS} different words, {SEPARATED}: "
                         f"{len(words)} given.")
    placed, vectors, left_out, pieces = [], [], [], []
    for w in words:
        try:
            shown, vector, _, ids = look_up_word(embeddings, tokenizer, w)
        except ValueError as err:
            left_out.append(str(err))
            continue
        if shown not in placed:  # "cat" and "␣cat" are one word
            placed.append(shown)
            vectors.append(vector)
            pieces.append(len(ids))
    if len(placed) < MIN_MAP_WORDS:
        more = len(left_out) - REASONS_SAID
        raise ValueError(f"Fewer than {MIN_MAP_WORDS} of the words can be placed. " + " ".join(left_out[:REASONS_SAID])
                         + (f" And {more} more word{'s' * (more > 1)} cannot be placed." if more > 0 else ""))
    words = placed
    x = torch.stack(vectors).double().cpu()  # (N, H)
    x = x / x.norm(dim=-1, keepdim=True).clamp_min(1e-12)  # (N, H)
    x = x - x.mean(dim=0)  # (N, H)
    u, s, _ = torch.linalg.svd(x, full_matrices=False)  # u (N, r), s (r,)
    u, s = u[:, :2], s[:2]
    if u.shape[1] < 2:  # fewer than two components (N = 1 cannot happen; H = 1 can in a test)
        u, s = torch.cat([u, u.new_zeros(len(u), 1)], 1), torch.cat([s, s.new_zeros(1)])
    flip = torch.sign(u.gather(0, u.abs().argmax(dim=0, keepdim=True)))  # (1, 2)
    flip[flip == 0] = 1
    points = (u * flip * s).float()  # (N, 2)
    total = float((x ** 2).sum()) or 1.0
    return words, points, [float(v) ** 2 / total for v in s], left_out, pieces


IN_PIECES = "*"  # marks a word in several pieces, on the map and in its table


def in_pieces_mark(pieces: int) -> str:
    """IN_PIECES for a word in several pieces, which the note under the map explains and a plain dot does not
    show; "" for one token."""
    return IN_PIECES if pieces > 1 else ""


def map_label(word: str, pieces: int) -> str:
    """A word as the map labels it: shortened, then marked ("serendipity*", `in_pieces_mark`)."""
    return short_label(word, 18) + in_pieces_mark(pieces)


_OFFSETS = [(6, 0, "left", "center"), (-6, 0, "right", "center"), (0, 7, "center", "bottom"),
            (0, -7, "center", "top"), (6, 8, "left", "bottom"), (6, -8, "left", "top"),
            (-6, 8, "right", "bottom"), (-6, -8, "right", "top")]
GAP = 3.0  # points kept between two labels: "Monday" and "Sunday" 1 px apart read as "MondaySunday"
CLEAR = 8.0  # points kept between a label and another word's point (a label is 6 from its own: never seems another's)
DOT = 3.0  # points, half the side of the box a point's dot is taken to fill


def _far_offsets(distance: float, directions: int) -> list[tuple]:
    """`directions` label places `distance` points from the point, all round, for a crowded map (a line leads to the
    point)."""
    out = []
    for k in range(directions):
        angle = 2 * math.pi * k / directions
        dx, dy = distance * math.cos(angle), distance * math.sin(angle)
        ha = "left" if dx > 1 else "right" if dx < -1 else "center"
        va = "bottom" if dy > 1 else "top" if dy < -1 else "center"
        out.append((round(dx, 1), round(dy, 1), ha, va))
    return out


# the near places first, then rings further out, each place with its ring (0: beside the point, no line); a ring's
# places about 31 points apart (2 pi d / (d // 5)), 12 at least: 28 words in a cluster found room
_PLACES = [(o, 0) for o in _OFFSETS] + [(o, ring) for ring, d in enumerate((22, 38, 56, 76, 100, 128), 1)
                                        for o in _far_offsets(d, max(12, d // 5))]
_ALIGN = {"left": 0, "bottom": 0, "center": 0.5, "right": 1, "top": 1}  # a label's share left of (under) its place
_SHIFTS = np.array([(dx, dy, _ALIGN[ha], _ALIGN[va]) for (dx, dy, ha, va), _ in _PLACES])  # (P, 4)
_LED = np.array([ring > 0 for _, ring in _PLACES])  # (P,): a line leads from the place to the point


def _label_boxes(x: float, y: float, width: float, height: float) -> np.ndarray:
    """A label's box (x0, y0, x1, y1) in points at each of _PLACES around its point at (x, y): (P, 4)."""
    x0 = x + _SHIFTS[:, 0] - width * _SHIFTS[:, 2]
    y0 = y + _SHIFTS[:, 1] - height * _SHIFTS[:, 3]
    return np.stack([x0, y0, x0 + width, y0 + height], axis=1)


def _covered(boxes: np.ndarray, others: np.ndarray, margin: float) -> np.ndarray:
    """The area of the boxes `others` (M, 4) that each of `boxes` (P, 4), grown by `margin`, covers: (P,)."""
    low = np.maximum(boxes[:, None, :2] - margin, others[None, :, :2])  # (P, M, 2)
    high = np.minimum(boxes[:, None, 2:] + margin, others[None, :, 2:])  # (P, M, 2)
    return (high - low).clip(min=0).prod(axis=2).sum(axis=1)


def _crossed(x: float, y: float, points: np.ndarray) -> np.ndarray:
    """How many of `points` (N, 2) the line from (x, y) to each far place passes over: (P,)."""
    line, to = _SHIFTS[:, None, :2], points[None] - (x, y)  # (P, 1, 2), (1, N, 2)
    along = ((to * line).sum(axis=2) / (line ** 2).sum(axis=2).clip(min=1e-9)).clip(0, 1)  # (P, N)
    near = np.linalg.norm(to - along[..., None] * line, axis=2) < DOT + 1  # (P, N)
    return near.sum(axis=1) * _LED


def _label_sizes(ax, labels: list[str], font: float) -> list[tuple[float, float]]:
    """Each label's (width, height) in points as the figure draws it (its fonts, its glyphs' widths: a guess from
    the number of characters was 10% short for "Monday", and "Monday" and "Sunday" touched)."""
    renderer = FigureCanvasAgg(ax.figure).get_renderer()
    probe, to_pt = ax.text(0, 0, "", fontsize=font), 72 / ax.figure.dpi
    sizes = []
    for label in labels:
        probe.set_text(label)
        box = probe.get_window_extent(renderer)
        sizes.append((box.width * to_pt, box.height * to_pt))
    probe.remove()
    return sizes


def _place_labels(xy: np.ndarray, sizes: list[tuple[float, float]], side: float) -> list[int]:
    """Each label's place (an index into _PLACES), for the points `xy` (N, 2) and labels of `sizes`, in points, in
    axes `side` points square. Left to right, each label takes the first place that stays inside the axes, GAP from
    the labels placed before and CLEAR from the other words' points, and whose line (a far place's) passes over no
    other point. Where every place covers something (a crowd of words at one spot), it takes the one that covers
    the least area of labels and points (a line over points only where there is no other choice)."""
    dots = np.concatenate([xy - DOT, xy + DOT], axis=1)  # (N, 4)
    placed, chosen = np.zeros((0, 4)), [0] * len(xy)
    for i in np.argsort(xy[:, 0], kind="stable"):
        others = np.linalg.norm(xy - xy[i], axis=1) > DOT  # a point under its own: taken as its own
        boxes = _label_boxes(*xy[i], *sizes[i])
        outside = (boxes[:, :2] < 0).any(axis=1) | (boxes[:, 2:] > side).any(axis=1)
        covered = _covered(boxes, placed, GAP) + _covered(boxes, dots[others], CLEAR - DOT)
        chosen[i] = int(np.lexsort((_crossed(*xy[i], xy[others]), covered.round(6), outside))[0])  # first of the best
        placed = np.concatenate([placed, boxes[chosen[i]][None]])
    return chosen


def word_map(embeddings: torch.Tensor, tokenizer, words: list[str]) -> tuple[Figure, str]:
    """The words' map (`word_map_points`) twice, its points computed once: as a figure (`_map_figure`), and in
    words for a screen reader and for anyone who wants the numbers (`_map_html`)."""
    mapped = word_map_points(embeddings, tokenizer, words)
    return _map_figure(mapped), _map_html(mapped)


def _map_html(mapped: tuple) -> str:
    """The words left out and why (said here alone: text to select and read out), then (closed) each word's two
    coordinates, as `_map_figure` draws them."""
    words, points, shares, left_out, pieces = mapped
    rows = "".join(f'<tr><th scope="row">{html.escape(w + in_pieces_mark(n))}</th><td>{x:+.3f}</td>'
                   f'<td>{y:+.3f}</td></tr>' for w, n, (x, y) in zip(words, pieces, points.tolist()))
    out = f'<p class="ev-note">Left out: {html.escape(" ".join(left_out))}</p>' if left_out else ""
    split = [f"“{w}” ({n})" for w, n in zip(words, pieces) if n > 1]
    if split:  # the dots of these words are no token's row
        out += (f'<p class="ev-note">{IN_PIECES} In several pieces, each placed at the mean of its pieces\' vectors '
                f'(no token of the vocabulary is the word): {html.escape(", ".join(split))}.</p>')
    return (f'{EMBEDDING_CSS}<div class="ev-view">{out}<details><summary>The map as a table '
            f'({len(words)} words)</summary><table class="ev-table"><tr><th scope="col">word</th>'
            f'<th scope="col">PC 1 ({shares[0]:.0%} of variance)</th><th scope="col">PC 2 ({shares[1]:.0%})</th>'
            f'</tr>{rows}</table></details></div>')


def _map_figure(mapped: tuple) -> Figure:
    """`word_map_points` as a scatter, each word's label beside its point, or further out with a line to it where
    the map is crowded (`_place_labels`, on the labels' sizes as drawn). Words the model uses alike land close
    together; the axes are the two directions along which these words' vectors differ most (PCA), with the share
    of the variance each holds. The words left out, and why, are said once, under the figure (`_map_html`): drawn
    in the figure as well, the page showed them twice. Its text is 12 pt (13 the title), in margins fitted to it
    (`_fit_margins`): a 390 px phone shows the figure 370 px wide, where its text is 11 px or more (the 6.2-inch
    figure of before, a fifth of it blank margin, drew the words 10 px and the ticks 9; 14 pt crowded the labels of
    a cluster until their lines crossed)."""
    words, points, shares, _, pieces = mapped
    font, side = 12.0, 4.6  # points, inches of the square axes
    fig = Figure(figsize=(side + 2, side + 2), dpi=100)  # resized to its text at the end
    ax = fig.add_axes((1 / (side + 2), 1 / (side + 2), side / (side + 2), side / (side + 2)))
    xy = points.numpy()
    ax.scatter(xy[:, 0], xy[:, 1], s=22, color="#4338ca", zorder=3)
    # limits with room for labels, then data -> points, to place each label where it is least in the way
    lo, hi = xy.min(axis=0), xy.max(axis=0)
    span = [max(float(h - l), 1e-6) for l, h in zip(lo, hi)]
    ax.set_xlim(lo[0] - 0.12 * span[0], hi[0] + 0.22 * span[0])
    ax.set_ylim(lo[1] - 0.1 * span[1], hi[1] + 0.1 * span[1])
    (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
    in_pt = (xy - (x0, y0)) / (x1 - x0, y1 - y0) * side * 72  # (N, 2)
    labels = [map_label(w, n) for w, n in zip(words, pieces)]
    for i, place in enumerate(_place_labels(in_pt, _label_sizes(ax, labels, font), side * 72)):
        (dx, dy, ha, va), ring = _PLACES[place]
        # a line to the point from a far place, and from a corner place too: "Germany" below and left of its dot,
        # with no line, read as the label of the dot beside it
        leader = ({"arrowprops": {"arrowstyle": "-", "color": "0.55", "lw": 0.6, "shrinkA": 0, "shrinkB": 3}}
                  if ring or (dx and dy) else {})
        ax.annotate(labels[i], (xy[i, 0], xy[i, 1]), xytext=(dx, dy), textcoords="offset points", ha=ha, va=va,
                    fontsize=font, **leader)
    ax.set_xlabel(f"PC 1 ({shares[0]:.0%} of variance)", fontsize=font)
    ax.set_ylabel(f"PC 2 ({shares[1]:.0%} of variance)", fontsize=font)
    ax.tick_params(labelsize=font)
    ax.set_title("Words on a map: their embeddings in 2-D", fontsize=font + 1)
    ax.grid(alpha=0.3)
    _fit_margins(fig, ax, side)
    return fig


FIGURE_PAD = 0.08  # inches of figure left clear around the word map's text


def _fit_margins(fig: Figure, ax, side: float) -> None:
    """Resize the figure to its `side`-inch square axes and the text around them (tick labels, axis labels, title),
    FIGURE_PAD clear on each side: margins as wide as the data's tick labels need ("−0.0125" is wider than "0.2"),
    and no more (a phone shrinks the whole figure to its column, the text with it). The axes keep their size in
    inches, so the labels placed in them (in points) stay where they were put."""
    renderer = FigureCanvasAgg(fig).get_renderer()
    text, axes = ax.get_tightbbox(renderer), ax.get_window_extent(renderer)  # pixels
    left, bottom = (axes.x0 - text.x0) / fig.dpi + FIGURE_PAD, (axes.y0 - text.y0) / fig.dpi + FIGURE_PAD
    right, top = (text.x1 - axes.x1) / fig.dpi + FIGURE_PAD, (text.y1 - axes.y1) / fig.dpi + FIGURE_PAD
    width, height = left + side + right, bottom + side + top
    fig.set_size_inches(width, height)
    ax.set_position((left / width, bottom / height, side / width, side / height))
