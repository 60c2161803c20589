"""The Embeddings tab's position view: how alike the learned position embeddings are, read without running the
model.

Position embeddings, (P, H): one learned row per position (RoBERTa learns them, where the original Transformer
used fixed sinusoids). As in transformers' RoBERTa, positions count from pad_token_id + 1: the first token (<s>) uses
row 2, every <pad> reads row 1 (pad_token_id) and row 0 is never read (`roberta.model.position_ids_from_input_ids`).
`position_similarity_figure` shows how alike the used rows are, `positions_html` the same in numbers.
"""
from __future__ import annotations

import html

import torch
from matplotlib.figure import Figure

from roberta.config import PRESETS

from . import figures  # importing figures sets the Agg backend, fonts, and text never read as math
from .embedding_view import EMBEDDING_CSS, plain_table


def positions_note(cfg) -> str:
    """The position map's note (Markdown) for a model of config `cfg`: where position 0 lies in the table (RoBERTa
    numbers positions from pad_token_id + 1, as roberta-base's table has 514 rows for 512 positions), and why the
    first and last positions look unlike their neighbours (this project's pretraining rows are all of the model's
    length, each ending in </s>). Without a model, the shipped shape's."""
    cfg = cfg if cfg is not None else PRESETS["mini"]
    first = cfg.pad_token_id + 1
    base = PRESETS["roberta-base"]
    return ("Every position in the text (0 is &lt;s&gt;) has its own learned embedding, added to the word's (position "
            f"0 is the table's row {first}; row {cfg.pad_token_id} is the one every &lt;pad&gt; reads and rows "
            f"below it are never read, as in roberta-base's {base.max_position_embeddings} rows for "
            f"{base.max_length} positions). The map compares every pair of "
            "positions: red is alike, blue is opposite. The red diagonal says a position is most like its "
            "neighbours; the stripes beside it, that likeness falls and rises again a few positions away, a "
            "wave-like pattern the model found by itself (the original Transformer used fixed sine waves; BERT and "
            "RoBERTa learn theirs). Position 0 always holds &lt;s&gt;, and the shipped model's last position held "
            "&lt;/s&gt; whenever pretraining reached it, because this project packs every pretraining row full, "
            f"ending in &lt;/s&gt; (the model's {cfg.max_length} tokens, or fewer where a run was set a shorter "
            "length), so both look unlike their neighbours. The lines under the map read three of its rows.")


def position_similarities(position_embeddings: torch.Tensor, first_position: int = 2) -> torch.Tensor:
    """(N, N) cosine similarity of the used position rows, N = P - first_position; entry (i, j) compares the
    positions of the i-th and j-th tokens of a text (0 = <s>)."""
    rows = plain_table(position_embeddings)[first_position:].float().cpu()  # (N, H)
    if len(rows) < 2:
        raise ValueError("The model has fewer than two positions to compare.")
    unit = rows / rows.norm(dim=-1, keepdim=True).clamp_min(1e-12)  # (N, H)
    return unit @ unit.T  # (N, N)


POSITION_DISTANCES = 16  # the text version lists the mean similarity at distances 1 to this


def positions_html(position_embeddings: torch.Tensor, first_position: int = 2) -> str:
    """The position figure in numbers, for a screen reader and for anyone who wants them: how alike two
    positions are on average at each distance (the means of the matrix's diagonals), and the first and the
    last position against their neighbour."""
    sim = position_similarities(position_embeddings, first_position)  # (N, N)
    n = len(sim)
    rows = "".join(f"<tr><td>{d}</td><td>{float(sim.diagonal(d).mean()):.2f}</td></tr>"
                   for d in range(1, min(POSITION_DISTANCES, n - 1) + 1))
    ends = (f"Position 0 and 1: {float(sim[0, 1]):.2f}; positions {n - 2} and {n - 1}: "
            f"{float(sim[n - 2, n - 1]):.2f}.")
    return (f'{EMBEDDING_CSS}<div class="ev-view"><details><summary>The figure in numbers: how alike positions '
            f'are at each distance</summary><table class="ev-table"><tr><th scope="col">distance</th>'
            f'<th scope="col">mean cosine similarity</th></tr>{rows}</table>'
            f'<p class="ev-note">{html.escape(ends)}</p></details></div>')


def _reference_positions(n: int) -> list[int]:
    """Positions whose similarity to all others the lower panel draws: the first, one early, one mid-way
    (0, 16, 64 of 128)."""
    return sorted({0, n // 8, n // 2} - {n})


def position_similarity_figure(position_embeddings: torch.Tensor, first_position: int = 2,
                               title: str = "Learned positions: how alike is each pair?"):
    """The position rows' cosine similarities (`position_similarities`) as a heatmap, and below it, as lines,
    the similarity of a few positions to every other. A bright band along the diagonal means the model learned
    nearby positions alike, far ones apart: learned, not the original Transformer's fixed sinusoids. Positions
    are counted from the text's first token (<s> = 0), row `first_position` of the table. Narrow, its text large
    (`figures.TEXT_FONT`...), its colour bar under the map, as the coverage plot: a phone shrinks it to its column
    (6.2 in wide, its legend read 7.5 px there; 4.8 in, 12 px), a computer shows it as drawn."""
    sim = position_similarities(position_embeddings, first_position).numpy()  # (N, N)
    n = len(sim)
    fig = Figure(figsize=(4.8, 8.4), dpi=100, layout="constrained")
    top, bottom = fig.subplots(2, 1, height_ratios=[2.2, 1])
    im = top.imshow(sim, cmap="RdBu_r", vmin=-1.0, vmax=1.0, interpolation="antialiased", aspect="equal")
    top.set_xlabel("position", fontsize=figures.TEXT_FONT)
    top.set_ylabel("position", fontsize=figures.TEXT_FONT)
    top.set_title(figures.drawable(title), fontsize=figures.TITLE_FONT, wrap=True)
    bar = fig.colorbar(im, ax=top, location="bottom", shrink=0.8, aspect=30)  # under: the map as wide as the lines
    bar.set_label("cosine similarity", fontsize=figures.TEXT_FONT)
    bar.ax.tick_params(labelsize=figures.TICK_FONT)
    top.tick_params(labelsize=figures.TICK_FONT)
    styles = ["-", "--", ":"]
    # black, blue and vermillion (Okabe and Ito's): each at least 3:1 on white (matplotlib's second, orange, was 2.5)
    colours = ["#000000", "#0072B2", "#D55E00"]
    for ref, style, marker, colour in zip(_reference_positions(n), styles, "os^", colours):
        name = f"position {ref}" + (" (<s>)" if ref == 0 else "")
        bottom.plot(range(n), sim[ref], style, color=colour, linewidth=1.6, label=f"{name} vs every position")
        bottom.plot([ref], [sim[ref, ref]], marker, color=bottom.lines[-1].get_color(), markersize=6)
    bottom.axhline(0.0, color="gray", linewidth=0.8, alpha=0.6)
    bottom.set_xlim(-0.5, n - 0.5)
    bottom.set_ylim(min(-0.2, float(sim.min()) - 0.05), 1.05)
    bottom.set_xlabel("position", fontsize=figures.TEXT_FONT)
    bottom.set_ylabel("cosine similarity", fontsize=figures.TEXT_FONT)
    bottom.tick_params(labelsize=figures.TICK_FONT)
    bottom.grid(alpha=0.3)
    bottom.legend(fontsize=figures.TICK_FONT, loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=1, frameon=False)
    return fig
