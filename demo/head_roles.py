"""What each attention head mostly does, in numbers, after Clark et al. 2019 ("What does BERT look at?"):
the share of a head's attention that goes to <s>, to </s>, to punctuation, to the token itself, to the
previous or the next token, and to the rest, averaged over the tokens that attend. The Attention tab shows it
beside the figure of all the heads of a layer (its text version, and a reading of it), with every layer's
heads at a glance (`overview_html`), every heatmap's text version lists where each token attends most
(`top_targets_html`), and one token's bars come with every weight of theirs as a table (`token_targets_html`).

Each weight is counted once, in the first of these that fits the token it goes to: <s> or </s>, punctuation,
itself, the previous token, the next token, other tokens. So a row's shares sum to 100%.
"""
from __future__ import annotations

import html
import unicodedata

import numpy as np

from .formatting import format_probability

PATTERNS = ("<s>", "</s>", "punctuation", "itself", "previous token", "next token", "other tokens")
ROLE_SHARE = 0.5  # a head whose largest share reaches this is named by it; below, by its two largest
TOP_TARGETS = 3  # a heatmap's text version: this many targets per token

# a wide table's caption wraps at the width of its scroll box and stays in view as the table scrolls (on a phone
# it was one line as wide as the table, cut at the box's edge)
CSS = """<style>
.hr-view{display:flex;flex-direction:column;gap:6px;font-size:14px}
.hr-view p{margin:0}
.hr-scroll{overflow-x:auto;container-type:inline-size}
.hr-scroll caption{position:sticky;left:0;max-width:100cqw;box-sizing:border-box}
.hr-scroll:focus-visible{outline:2px solid #6366f1;outline-offset:2px}
.hr-view th.hr-current{text-decoration:underline}
.hr-view td.hr-num small{display:block;opacity:.8}
.hr-view table{display:table;border-collapse:collapse;width:100%;font-size:13px;border:0;margin:0}
.hr-view caption{text-align:left;font-size:12px;opacity:.8;padding:0 0 4px 0;caption-side:top}
.hr-view tr,.hr-view td,.hr-view th{border:0 !important;background:transparent}
.hr-view th{font-weight:600;text-align:left;padding:2px 6px;white-space:nowrap}
.hr-view td{padding:2px 6px}
.hr-view td.hr-num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.hr-view th.hr-num{text-align:right}
.hr-view table.hr-narrow{width:auto;min-width:min(100%,24rem)}
@media (max-width:600px){.hr-view table{font-size:12px}.hr-view td,.hr-view th{padding:2px 3px}}
</style>"""


def is_punctuation(label: str) -> bool:
    """A token of punctuation only (".", ",", "!?", "—"), spaces aside."""
    text = label.strip()
    return bool(text) and all(unicodedata.category(ch).startswith("P") for ch in text)


def pattern_of_cells(labels: list[str]) -> np.ndarray:
    """(T, T) indices into PATTERNS: which pattern the weight of row i (attending) on column j belongs to."""
    n = len(labels)
    rows, cols = np.indices((n, n))
    kind = np.full((n, n), PATTERNS.index("other tokens"))
    # assigned from the last rule to the first, so that the first rule that fits wins
    for name, fits in [("next token", cols == rows + 1), ("previous token", cols == rows - 1),
                       ("itself", cols == rows),
                       ("punctuation", np.array([is_punctuation(label) for label in labels])[None, :]),
                       ("</s>", np.array([label == "</s>" for label in labels])[None, :]),
                       ("<s>", np.array([label == "<s>" for label in labels])[None, :])]:
        kind = np.where(np.broadcast_to(fits, (n, n)), PATTERNS.index(name), kind)
    return kind


def pattern_shares(attention: np.ndarray, labels: list[str]) -> np.ndarray:
    """The shares of attention matrices (..., T, T) (rows sum to 1), averaged over their rows: (..., P), one
    per pattern of PATTERNS. One (T, T) matrix gives (P,); a model's (L, nh, T, T), every head's at once."""
    attention = np.asarray(attention, dtype=np.float32)
    kind = pattern_of_cells(labels)
    masks = np.stack([kind == k for k in range(len(PATTERNS))]).astype(np.float32)  # (P, T, T)
    per_pattern = np.einsum("...ij,pij->...p", attention, masks, optimize=True)  # summed over every row
    return per_pattern.astype(np.float64) / len(labels)


def spread(attention: np.ndarray) -> np.ndarray | float:
    """How many tokens a head's rows spread over, on average: exp of each row's entropy (1 = one token). One
    (T, T) matrix gives a float; (..., T, T) one value per matrix."""
    attention = np.clip(np.asarray(attention, dtype=np.float64), 1e-12, 1.0)
    out = np.exp(-(attention * np.log(attention)).sum(axis=-1)).mean(axis=-1)
    return float(out) if out.ndim == 0 else out


def role(shares: np.ndarray) -> str:
    """A head's role in words: its largest pattern if that takes ROLE_SHARE or more, else its two largest."""
    order = np.argsort(-shares, kind="stable")
    first, second = PATTERNS[order[0]], PATTERNS[order[1]]
    if shares[order[0]] >= ROLE_SHARE:
        return first
    return f"{first} and {second}"


def layer_roles(layer_attention: np.ndarray, labels: list[str]) -> list[dict]:
    """One dict per head of a layer's (nh, T, T) attention: its pattern shares, spread and role."""
    layer_attention = np.asarray(layer_attention)
    shares, spreads = pattern_shares(layer_attention, labels), spread(layer_attention)  # (nh, P), (nh,)
    return [{"head": h + 1, "shares": dict(zip(PATTERNS, shares[h].tolist())), "spread": float(spreads[h]),
             "role": role(shares[h])} for h in range(len(layer_attention))]


def layer_roles_html(layer_attention: np.ndarray, labels: list[str], layer: int) -> str:
    """The table of a layer's heads (the text version of its figure), with one sentence that reads it."""
    heads = layer_roles(layer_attention, labels)
    clear: dict[str, list[int]] = {}
    for head in heads:
        if head["role"] in PATTERNS[:-1]:  # one pattern takes half or more ("other tokens" is the rest: broad)
            clear.setdefault(head["role"], []).append(head["head"])
    jobs = "; ".join(f"{html.escape(name)}: head{'s' if len(ids) > 1 else ''} {', '.join(map(str, ids))}"
                     for name, ids in sorted(clear.items(), key=lambda item: PATTERNS.index(item[0])))
    mixed = len(heads) - sum(len(ids) for ids in clear.values())
    n_clear = len(heads) - mixed
    summary = (f"In layer {layer}, {n_clear} of {len(heads)} heads {'gives' if n_clear == 1 else 'give'} half of "
               f"{'its' if n_clear == 1 else 'their'} attention or more to one kind of token ({jobs})" if clear else
               f"In layer {layer}, no head gives half of its attention to one kind of token")
    if mixed:
        summary += (f"; the other {mixed} mix several." if clear and mixed > 1 else
                    "; the other one mixes several." if clear else
                    f"; all {mixed} mix several." if mixed > 1 else "; its one head mixes several.")
    else:
        summary += "."
    summary += (" Attention parked on &lt;s&gt; or &lt;/s&gt; is often read as “nothing to look up here” (Clark "
                "et al. 2019); a head on the previous or the next token carries word order.")
    head_cells = "".join(f'<th scope="col">{html.escape(name)}</th>' for name in PATTERNS)
    rows = []
    for head in heads:
        cells = "".join(shaded_cell(format_probability(share), share)
                        for share in (head["shares"][name] for name in PATTERNS))
        rows.append(f'<tr><th scope="row">head {head["head"]}</th><td>{html.escape(head["role"])}</td>{cells}'
                    f'<td class="hr-num">{head["spread"]:.1f}</td></tr>')
    caption = (f"Where each head of layer {layer} attends, averaged over the {len(labels)} tokens (each weight "
               "counted in the first column that fits)")
    return (f'{CSS}<div class="hr-view"><p>{summary}</p>' + scroll_box(
        f'<table><caption>{caption}</caption><thead><tr><th scope="col">head</th><th scope="col">mostly</th>'
        f'{head_cells}<th scope="col">tokens it spreads over</th></tr></thead><tbody>{"".join(rows)}</tbody>'
        "</table>", f"Heads of layer {layer}") + "</div>")


def shaded_cell(text: str, share: float) -> str:
    """A table cell of a share, shaded by it (the deeper, the larger)."""
    return f'<td class="hr-num" style="background:rgba(99,102,241,{0.45 * share:.2f})">{text}</td>'


def scroll_box(table: str, label: str) -> str:
    """A wide table in a box that scrolls sideways on a narrow screen, and by keyboard (it takes focus)."""
    return f'<div class="hr-scroll" tabindex="0" role="region" aria-label="{html.escape(label)}">{table}</div>'


def top_targets_html(labels: list[str], matrix: np.ndarray, title: str, verb: str = "attends to",
                     k: int = TOP_TARGETS) -> str:
    """A heatmap's text version: for each row's token, its `k` largest columns and their weights."""
    matrix = np.asarray(matrix, dtype=np.float64)
    rows = []
    for i, row in enumerate(matrix):
        order = np.argsort(-row, kind="stable")[:k]
        targets = ", ".join(f"{j}: “{html.escape(labels[j])}” {format_probability(row[j])}" for j in order)
        rows.append(f'<tr><th scope="row">{i}: “{html.escape(labels[i])}”</th><td>{targets}</td></tr>')
    return (f'{CSS}<details class="hr-view"><summary>The figure as text</summary><table><caption>'
            f"{html.escape(title)}: each token's {k} largest weights</caption><thead><tr><th scope=\"col\">token</th>"
            f'<th scope="col">{html.escape(verb)}</th></tr></thead><tbody>{"".join(rows)}</tbody></table></details>')


def token_targets_html(labels: list[str], row: np.ndarray, query: int, title: str) -> str:
    """One token's bars as text: every token that token `query` attends to, by weight (largest first), with its
    position; the token itself is marked. `row`: its attention over the T tokens (it sums to 1)."""
    row = np.asarray(row, dtype=np.float64)
    rows = []
    for j in np.argsort(-row, kind="stable"):
        itself = " (itself)" if j == query else ""
        rows.append(f'<tr><td class="hr-num">{j}</td><th scope="row">“{html.escape(labels[j])}”{itself}</th>'
                    f'<td class="hr-num">{format_probability(row[j])}</td></tr>')
    return (f'{CSS}<details class="hr-view"><summary>The figure as text</summary><table class="hr-narrow"><caption>'
            f"{html.escape(title)}: all {len(row)} tokens, the largest weight first</caption><thead><tr>"
            '<th scope="col" class="hr-num">position</th><th scope="col">token</th>'
            '<th scope="col" class="hr-num">weight</th></tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table></details>')


SHORT = {"<s>": "<s>", "</s>": "</s>", "punctuation": "punct.", "itself": "itself", "previous token": "previous",
         "next token": "next", "other tokens": "other"}


def overview_html(attentions: np.ndarray, labels: list[str], layer: int | None = None) -> str:
    """Every head of every layer at a glance (a closed table, one row per layer): each head's largest pattern
    and its share, shaded by that share, and under it the second largest when the first is under ROLE_SHARE
    (the head's role is then the two); `layer`, the one the tab shows, is marked. No CSS of its own: shown
    after `layer_roles_html`."""
    shares = pattern_shares(attentions, labels)  # (L, nh, P): every head at once
    n_heads = shares.shape[1]
    rows = []
    for index, layer_shares in enumerate(shares, start=1):
        cells = []
        for head_shares in layer_shares:
            first, second = np.argsort(-head_shares, kind="stable")[:2]
            text = f"{html.escape(SHORT[PATTERNS[first]])} {format_probability(head_shares[first])}"
            if head_shares[first] < ROLE_SHARE:  # no one pattern takes half: the role is the two largest
                second_share = format_probability(head_shares[second])
                text += f"<small>{html.escape(SHORT[PATTERNS[second]])} {second_share}</small>"
            cells.append(shaded_cell(text, float(head_shares[first])))
        shown = ' class="hr-current" aria-current="true"' if index == layer else ""
        rows.append(f'<tr><th scope="row"{shown}>layer {index}</th>{"".join(cells)}</tr>')
    head_cells = "".join(f'<th scope="col">head {h}</th>' for h in range(1, n_heads + 1))
    caption = ("Each head's largest share of attention and what it goes to, layer by layer; under it the second "
               "largest, when the first is under half")
    return ('<details class="hr-view"><summary>Every layer at a glance</summary>' + scroll_box(
        f'<table><caption>{caption}</caption><thead><tr><th scope="col">layer</th>{head_cells}</tr></thead>'
        f'<tbody>{"".join(rows)}</tbody></table>', "Every layer's heads") + "</details>")
