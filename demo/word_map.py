"""The Embeddings tab's word map: a few words' embeddings projected to 2-D (PCA), each word's label placed
where it covers the fewest others, and the same map as a table. A word is looked up as the other word views look
it up (`demo.embedding_view.look_up_word`)."""
from __future__ import annotations

import html
import math

import torch
from matplotlib.figure import Figure

from .embedding_view import EMBEDDING_CSS, look_up_word
from .figures import short_label  # importing figures also sets the Agg backend, fonts, and text never read as math
from .validation import split_words

MIN_MAP_WORDS, MAX_MAP_WORDS = 3, 30  # two words make a line, not a map
REASONS_SAID = 3  # a refused map names this many words' reasons, then counts the others (30 made 2,700 characters)


def parse_words(text: str) -> list[str]:
    """A textbox's words (`demo.examples.MAP_WORDS`) separated as the fill-mask candidates are (commas,
    semicolons or new lines: `split_words`), blanks dropped, each word once."""
    return list(dict.fromkeys(split_words(text)))


def word_map_points(embeddings: torch.Tensor, tokenizer, words: list[str]) -> tuple[list[str], torch.Tensor,
                                                                                      list[float], list[str]]:
    """The words (blanks and repeats dropped), their (N, 2) coordinates on the first two principal components
    of their vectors (each at unit length, so direction is what counts, as for cosine similarity), the share
    of the variance each component holds, and why each word the map leaves out was left out (a word in too
    many pieces, a special token...: `look_up_word`'s message). Signs are fixed (each component's largest
    coordinate is positive), so the same words always give the same map. ValueError for fewer than
    MIN_MAP_WORDS or more than MAX_MAP_WORDS words, or when fewer than MIN_MAP_WORDS can be placed (naming the
    first REASONS_SAID bad words' reasons, counting the others)."""
    words = list(dict.fromkeys(w.strip() for w in words if w.strip()))
    if not MIN_MAP_WORDS <= len(words) <= MAX_MAP_WORDS:
        raise ValueError(f"Give {MIN_MAP_WORDS} to {MAX_MAP_WORDS} different words, separated by commas, "
                         f"semicolons or new lines ({len(words)} given).")
    placed, vectors, left_out = [], [], []
    for w in words:
        try:
            shown, vector, *_ = look_up_word(embeddings, tokenizer, w)
        except ValueError as err:
            left_out.append(str(err))
            continue
        if shown not in placed:  # "cat" and "␣cat" are one word
            placed.append(shown)
            vectors.append(vector)
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
    return words, points, [float(v) ** 2 / total for v in s], left_out


_OFFSETS = [(6, 0, "left", "center"), (-6, 0, "right", "center"), (0, 7, "center", "bottom"),
            (0, -7, "center", "top"), (6, 8, "left", "bottom"), (6, -8, "left", "top"),
            (-6, 8, "right", "bottom"), (-6, -8, "right", "top")]


def _far_offsets(distance: float, directions: int = 12) -> list[tuple]:
    """Label places `distance` points from the point, all round, for a crowded map (a line leads to the point)."""
    out = []
    for k in range(directions):
        angle = 2 * math.pi * k / directions
        dx, dy = distance * math.cos(angle), distance * math.sin(angle)
        ha = "left" if dx > 1 else "right" if dx < -1 else "center"
        va = "bottom" if dy > 1 else "top" if dy < -1 else "center"
        out.append((round(dx, 1), round(dy, 1), ha, va))
    return out


# the near places first, then rings further out: a far place is taken only where every nearer one covers more
_PLACES = [(o, 0) for o in _OFFSETS] + [(o, ring) for ring, d in enumerate((22, 38, 56), 1) for o in _far_offsets(d)]


def _label_box(x: float, y: float, text: str, font: float, offset) -> tuple[float, float, float, float]:
    """A label's rough box in points (x0, y0, x1, y1), placed at `offset` from its point at (x, y) points."""
    dx, dy, ha, va = offset
    w, h = len(text) * font * 0.6, font * 1.2
    x0 = x + dx - (w if ha == "right" else w / 2 if ha == "center" else 0)
    y0 = y + dy - (h if va == "top" else h / 2 if va == "center" else 0)
    return x0, y0, x0 + w, y0 + h


def _overlap(a, b) -> float:
    return max(0.0, min(a[2], b[2]) - max(a[0], b[0])) * max(0.0, min(a[3], b[3]) - max(a[1], b[1]))


def word_map(embeddings: torch.Tensor, tokenizer, words: list[str]) -> tuple[Figure, str]:
    """The words' map (`word_map_points`) twice, its points computed once: as a figure (`_map_figure`), and in
    words for a screen reader and for anyone who wants the numbers (`_map_html`)."""
    mapped = word_map_points(embeddings, tokenizer, words)
    return _map_figure(mapped), _map_html(mapped)


def _map_html(mapped: tuple) -> str:
    """The words left out and why (said here alone: text to select and read out), then (closed) each word's two
    coordinates, as `_map_figure` draws them."""
    words, points, shares, left_out = mapped
    rows = "".join(f'<tr><th scope="row">{html.escape(w)}</th><td>{x:+.3f}</td><td>{y:+.3f}</td></tr>'
                   for w, (x, y) in zip(words, points.tolist()))
    out = f'<p class="ev-note">Left out: {html.escape(" ".join(left_out))}</p>' if left_out else ""
    return (f'{EMBEDDING_CSS}<div class="ev-view">{out}<details><summary>The map as a table '
            f'({len(words)} words)</summary><table class="ev-table"><tr><th scope="col">word</th>'
            f'<th scope="col">PC 1 ({shares[0]:.0%} of variance)</th><th scope="col">PC 2 ({shares[1]:.0%})</th>'
            f'</tr>{rows}</table></details></div>')


def _map_figure(mapped: tuple) -> Figure:
    """`word_map_points` as a scatter, each word's label beside its point: the side is picked where it covers
    the fewest labels and points already drawn (estimated from the text's length, no layout engine). Words
    the model uses alike land close together; the axes are the two directions along which these words'
    vectors differ most (PCA), with the share of the variance each holds. The words left out, and why, are said
    once, under the figure (`_map_html`): drawn in the figure as well, the page showed them twice."""
    words, points, shares, _ = mapped
    font, side, height = 10.0, 4.6, 6.2  # points, inches of the square axes, of the figure
    fig = Figure(figsize=(6.2, height), dpi=100)
    ax = fig.add_axes((0.14, 0.74 / height, side / 6.2, side / height))
    xy = points.numpy()
    ax.scatter(xy[:, 0], xy[:, 1], s=22, color="#4338ca", zorder=3)
    # limits with room for labels, then data -> points, to place each label where it is least in the way
    lo, hi = xy.min(axis=0), xy.max(axis=0)
    span = [max(float(h - l), 1e-6) for l, h in zip(lo, hi)]
    ax.set_xlim(lo[0] - 0.12 * span[0], hi[0] + 0.22 * span[0])
    ax.set_ylim(lo[1] - 0.1 * span[1], hi[1] + 0.1 * span[1])
    (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
    to_pt = [(p[0] - x0) / (x1 - x0) * side * 72 for p in xy], [(p[1] - y0) / (y1 - y0) * side * 72 for p in xy]
    dots = [(px - 3, py - 3, px + 3, py + 3) for px, py in zip(*to_pt)]
    placed = []
    for i in sorted(range(len(words)), key=lambda i: to_pt[0][i]):
        label = short_label(words[i], 18)
        boxes = [_label_box(to_pt[0][i], to_pt[1][i], label, font, o) for o, _ in _PLACES]

        def cost(j):
            box, ring = boxes[j], _PLACES[j][1]
            outside = box[0] < 0 or box[2] > side * 72 or box[1] < 0 or box[3] > side * 72
            return sum(_overlap(box, b) for b in placed + dots) + (1e4 if outside else 0) + 4.0 * ring

        best = min(range(len(_PLACES)), key=cost)
        placed.append(boxes[best])
        (dx, dy, ha, va), ring = _PLACES[best]
        leader = ({"arrowprops": {"arrowstyle": "-", "color": "0.55", "lw": 0.6, "shrinkA": 0, "shrinkB": 3}}
                  if ring else {})
        ax.annotate(label, (xy[i, 0], xy[i, 1]), xytext=(dx, dy), textcoords="offset points", ha=ha, va=va,
                    fontsize=font, **leader)
    ax.set_xlabel(f"PC 1 ({shares[0]:.0%} of variance)", fontsize=11)
    ax.set_ylabel(f"PC 2 ({shares[1]:.0%} of variance)", fontsize=11)
    ax.set_title("Words on a map: their embeddings in 2-D", fontsize=12)
    ax.grid(alpha=0.3)
    return fig
