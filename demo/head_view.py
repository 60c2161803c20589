"""The Attention tab's head view, after bertviz (Vig 2019): the tokens in two columns, the attending token on
the left, the attended-to token on the right, and a line between them whose opacity and width grow with the
attention weight. Hovering over a token on the left (or tapping it on a phone: it takes the keyboard focus)
shows only its lines and the value of each, beside the tokens they reach.

Rendered here as one SVG with CSS (Gradio's HTML component runs no scripts), so it costs milliseconds to
draw, and hover and tap need nothing from the server. The keyboard gets one Tab stop, the first token's row;
the page's script (demo/page.js) moves it with the arrow keys, Home and End (a "roving tabindex"), so that
Tab leaves the view instead of walking through its up to 128 rows. Sized for the model's 128 tokens: a row
per token, `ROW` high, a finger's target (WCAG 2.5.8's 24 px at least: rows of 18 px were hard to tap on a
phone), fixed-size labels, and a box of fixed height that scrolls. The view takes its box's width, up to
`MAX_WIDTH`: the labels keep their size and the lines between the columns grow (the right column is placed from
the right edge, in percentages of the view's width); at its narrowest, `MIN_GAP` between the columns, it fits a
320 px phone's 278 px box (with long labels its box scrolls sideways a little). To keep the page small, a token's
lines below `MIN_WEIGHT` and beyond its `TOP_K` strongest are not drawn (the caption says so).
"""
from __future__ import annotations

import html

import numpy as np

from .formatting import format_probability, short_text

MIN_WEIGHT = 0.02  # lines weaker than this are not drawn
TOP_K = 10  # at most this many lines per attending token
ROW = 26  # px per token row: the left column's rows are tap targets
FONT = 12  # px
CHAR = 7.2  # px: a rough width of one character at FONT, for the columns
TITLES = ("attending token", "attends to")  # the columns' titles, at 11 px
TITLE_CHAR = 6.3  # px: a rough width of one character of a title
MIN_GAP = 32  # px between the two columns, where the lines run, at the view's narrowest
MAX_WIDTH = 760  # px: the widest the view grows, centred in a wider box (flatter lines are harder to follow)
VALUES = 50  # px for the values beside the right column ("0.670%")
HEAD = 22  # px above the first row, for the column titles
LABEL_CHARS = 16  # longer labels are shortened with "…" (the full label is in the tooltip)
BOX_HEIGHT = 560  # px: the view scrolls inside a box this high
LEVELS = 20  # a line's opacity and width take one of this many steps (a CSS class each: a small page)

# dark mode (.dark): lighter lines, #2563eb and #dc2626 were 3.7:1 and 4.0:1 on the dark page even at full
# opacity, and most lines are drawn at 15-50%
CSS = """<style>
.hv-wrap{font-size:13px}
.hv-note{margin:0 0 6px 0;opacity:.85}
.hv-box{max-height:%(box)dpx;overflow-y:auto;overflow-x:auto;border:1px solid var(--border-color-primary,#e5e7eb);
 border-radius:6px;padding:4px 0}
.hv{display:block;width:100%%;max-width:%(max)dpx;margin:0 auto;font-family:var(--font,sans-serif)}
.hv text{font-size:%(font)dpx;fill:var(--body-text-color,#1f2937);dominant-baseline:central}
.hv .hv-h{font-size:11px;opacity:.7}
.hv line{stroke:#2563eb;pointer-events:none}
.hv .hv-v{display:none;pointer-events:none}
.hv .hv-v text{fill:#b91c1c;font-weight:600}
.dark .hv .hv-v text{fill:#fca5a5}
.hv .hv-hit{fill:transparent}
.hv-r{cursor:pointer;outline:none}
.hv-r:focus-visible .hv-hit{stroke:#2563eb;stroke-width:2}
.hv-r:hover .hv-hit,.hv-r:focus .hv-hit{fill:rgba(37,99,235,.14)}
.hv-r:hover .hv-q,.hv-r:focus .hv-q{font-weight:700}
.hv:has(.hv-r:hover) .hv-r:not(:hover) line,
.hv:not(:has(.hv-r:hover)):has(.hv-r:focus) .hv-r:not(:focus) line{visibility:hidden}
.hv-r:hover line,.hv:not(:has(.hv-r:hover)) .hv-r:focus line{stroke:#dc2626}
.hv-r:hover .hv-v,.hv:not(:has(.hv-r:hover)) .hv-r:focus .hv-v{display:inline}
.dark .hv line{stroke:#60a5fa}
.dark .hv-r:hover line,.dark .hv:not(:has(.hv-r:hover)) .hv-r:focus line{stroke:#f87171}
.dark .hv-r:focus-visible .hv-hit{stroke:#60a5fa}
.dark .hv-r:hover .hv-hit,.dark .hv-r:focus .hv-hit{fill:rgba(96,165,250,.25)}
%(levels)s
</style>""" % {"box": BOX_HEIGHT, "font": FONT, "max": MAX_WIDTH, "levels": "".join(
    f".hv .w{k}{{stroke-opacity:{0.15 + 0.85 * k / LEVELS:.2f};stroke-width:{0.6 + 3.4 * k / LEVELS:.1f}px}}"
    for k in range(1, LEVELS + 1))}


def level(weight: float) -> int:
    """The step (1..LEVELS) of a line's opacity and width."""
    return min(LEVELS, max(1, round(float(weight) * LEVELS)))


def kept_lines(row: np.ndarray, min_weight: float = MIN_WEIGHT, top_k: int = TOP_K) -> list[int]:
    """The columns of one attention row that get a line: its `top_k` strongest of at least `min_weight`,
    strongest first."""
    order = np.argsort(-row, kind="stable")[:top_k]
    return [int(j) for j in order if row[j] >= min_weight]


def head_view_html(labels: list[str], matrix, title: str = "", min_weight: float = MIN_WEIGHT,
                   top_k: int = TOP_K) -> str:
    """The head view of one (T, T) attention matrix (rows: attending tokens, each summing to 1) over the
    token `labels`, as an HTML string (HTML-escaped labels, no scripts)."""
    matrix = np.asarray(matrix, dtype=np.float64)
    n = len(labels)
    if matrix.shape != (n, n):
        raise ValueError(f"the attention matrix is {matrix.shape}, but there are {n} tokens")
    shown = [short_text(label, LABEL_CHARS) for label in labels]  # labels are one line (`Tokens.labels`)
    # each column as wide as its longest label, or its title
    width = max((len(s) for s in shown), default=1) * CHAR
    left, right = (max(width, len(title) * TITLE_CHAR) for title in TITLES)
    x_left = round(8 + left)  # the left labels end here (text-anchor end)
    x_from = x_left + 6  # where the lines start
    # the right side, in px from the view's right edge: a group moved left by that much from x="100%"
    to_right = round(VALUES + 10 + right)  # the right labels start here
    to_end = to_right + 6  # the lines end here
    min_w, total_h = x_from + MIN_GAP + to_end, HEAD + n * ROW + 4

    def y(i):
        return HEAD + i * ROW + ROW // 2

    esc = [html.escape(s) for s in shown]
    parts = [f'<svg class="hv" xmlns="http://www.w3.org/2000/svg" width="100%" height="{total_h}" '
             f'style="min-width:{min_w}px" role="group" aria-label="{html.escape(title or "head view")}">',
             f'<text class="hv-h" x="{x_left}" y="10" text-anchor="end">{TITLES[0]}</text>',
             f'<text class="hv-h" x="100%" dx="-{to_right}" y="10">{TITLES[1]}</text>',
             f'<g class="hv-k" transform="translate(-{to_right} 0)">',
             *[f'<text x="100%" y="{y(j)}">{esc[j]}</text>' for j in range(n)], '</g>']
    for i in range(n):
        row = matrix[i]
        kept = kept_lines(row, min_weight, top_k)
        tooltip = f"“{labels[i]}” attends to: " + (
            ", ".join(f"{labels[j]} {format_probability(row[j])}" for j in kept)
            or f"no token gets {format_probability(min_weight)} or more")
        # a row is one image to assistive technology, named by its <title> (what the token attends to); the
        # first row is the view's Tab stop, the others take the focus from a tap or the arrow keys
        parts.append(f'<g class="hv-r" tabindex="{0 if i == 0 else -1}" role="img">'
                     f'<title>{html.escape(tooltip)}</title>'
                     f'<rect class="hv-hit" x="0" y="{y(i) - ROW // 2}" width="{x_from}" height="{ROW}"/>'
                     f'<text class="hv-q" x="{x_left}" y="{y(i)}" text-anchor="end">{esc[i]}</text>')
        parts.append(f'<g class="hv-l" transform="translate(-{to_end} 0)">')  # x2: the right edge, less to_end
        parts.extend(f'<line class="w{level(row[j])}" x1="{x_from + to_end}" y1="{y(i)}" x2="100%" y2="{y(j)}"/>'
                     for j in kept)
        parts.append(f'</g><g class="hv-v" transform="translate(-{VALUES} 0)">')
        parts.extend(f'<text x="100%" y="{y(j)}">{format_probability(row[j])}</text>' for j in kept)
        parts.append("</g></g>")
    parts.append("</svg>")
    note = (f"{html.escape(title)}: " if title else "") + (
        "each line joins a token (left) to a token it attends to (right); the bolder and thicker the line, "
        "the more attention. <b>Hover over a token on the left, or tap it,</b> to see only its lines and their values "
        "(with the keyboard: Tab to the first token, then the arrow keys). "
        # a threshold as set ("2%"), not a measured share's three digits ("2.00%")
        f"Lines under {100 * min_weight:g}%, and beyond a token's {top_k} strongest, are not drawn.")
    return (f'<div class="hv-wrap">{CSS}<p class="hv-note">{note}</p>'
            f'<div class="hv-box">{"".join(parts)}</div></div>')
