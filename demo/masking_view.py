"""The Masking tab: what BERT's static masking (one fixed mask, or 10 cycling) and RoBERTa's dynamic masking
feed the model for one sentence, epoch by epoch; how much of it each scheme ever asks for; the MLM's answers
at the last epoch's targets; and the table that shows it all (sized for 128 tokens x 40 epochs)."""
from __future__ import annotations

import html

import numpy as np
import torch

from roberta.masking import (DUPE_FACTOR, KEPT, MASK_FRACTION, MASKED, MLM_PROBABILITY, NOT_SELECTED,
                             OUTCOME_NAMES, RANDOM, RANDOM_FRACTION, DynamicMasker, StaticMasker)

from .tokens_view import Tokens, token_text

SCHEMES = {
    "static1": "BERT static, one fixed mask (dupe_factor=1)",
    "static10": f"BERT static, {DUPE_FACTOR} masks cycling (dupe_factor={DUPE_FACTOR})",
    "dynamic": "RoBERTa dynamic (new mask every epoch)",
}
MASKING_COLUMNS = ["scheme", "distinct masks shown", "positions ever a target", "coverage %"]
PREDICTION_COLUMNS = ["scheme", "position", "original", "what happened", "model saw", "top-1 prediction",
                      "probability", "correct"]


def simulate_masking(tokenizer, ids: torch.Tensor, epochs: int, seed: int) -> dict:
    """What each scheme feeds the model for one sequence (example id 0), epoch by epoch."""
    maskers = {
        "static1": StaticMasker.from_tokenizer(tokenizer, seed=seed, dupe_factor=1),
        "static10": StaticMasker.from_tokenizer(tokenizer, seed=seed, dupe_factor=DUPE_FACTOR),
        "dynamic": DynamicMasker.from_tokenizer(tokenizer, seed=seed),
    }
    runs = {}
    for key, masker in maskers.items():
        if key == "dynamic":
            runs[key] = [masker(ids) for _ in range(epochs)]
        else:
            runs[key] = [masker(ids, [0], epoch) for epoch in range(epochs)]
    return runs


def masking_stats(tokens: Tokens, runs: dict) -> tuple[list[list], dict[str, list[float]]]:
    """Per scheme: a row (scheme, distinct masks shown, positions ever a target, coverage %) and its coverage
    curve (the share of the sentence that has been a target, after each epoch)."""
    n_eligible = sum(not s for s in tokens.special)
    stats, curves = [], {}
    for key, batches in runs.items():
        seen, ever, curve = set(), np.zeros(len(tokens.ids), dtype=bool), []
        for b in batches:
            seen.add((tuple(b.input_ids[0].tolist()), tuple(b.outcome[0].tolist())))
            ever |= (b.outcome[0] != NOT_SELECTED).numpy()
            curve.append(float(ever.sum()) / n_eligible)
        curves[key] = curve
        stats.append([SCHEMES[key], len(seen), f"{int(ever.sum())} of {n_eligible}", round(100 * curve[-1], 1)])
    return stats, curves


def mlm_predictions(model, tokenizer, tokens: Tokens, runs: dict) -> list[list]:
    """Top-1 prediction of the MLM at every target of each scheme's last epoch (PREDICTION_COLUMNS)."""
    last = {key: batches[-1] for key, batches in runs.items()}
    device = next(model.parameters()).device
    inputs = torch.cat([b.input_ids for b in last.values()]).to(device)  # (3, T)
    labels = torch.cat([b.labels for b in last.values()]).to(device)  # (3, T): the original id at a target, -100 else
    targets = torch.cat([b.outcome for b in last.values()]) != NOT_SELECTED  # (3, T), where labels != -100
    # masked_only: only the N targets are projected onto the vocabulary, (N, V); every token is attended to,
    # a typed "<pad>" too, as the pipelines read it (the three rows have the same length: no padding)
    with torch.inference_mode():
        logits = model(inputs, torch.ones_like(inputs), labels=labels, masked_only=True).logits  # (N, V)
        best_p, best = logits.float().softmax(dim=-1).max(dim=-1)  # (N,), (N,) row-major over `targets`
        best_p, best = best_p.cpu(), best.cpu()
    found = {(r, c): i for i, (r, c) in enumerate(torch.nonzero(targets).tolist())}
    rows = []
    for row, (key, b) in enumerate(last.items()):
        positions = torch.nonzero(b.outcome[0] != NOT_SELECTED).squeeze(-1).tolist()
        if not positions:
            # a short sentence: no token was picked (each is, with probability MLM_PROBABILITY)
            rows.append([SCHEMES[key], None, "–", "none selected", "", "", None, ""])
        for pos in positions:
            p, pick = best_p[found[row, pos]], best[found[row, pos]]
            outcome = int(b.outcome[0, pos])
            rows.append([SCHEMES[key], pos, tokens.labels[pos], OUTCOME_NAMES[outcome],
                         token_text(tokenizer, int(b.input_ids[0, pos])), token_text(tokenizer, int(pick)),
                         round(float(p), 3), "✓" if int(pick) == int(tokens.ids[pos]) else "✗"])
    return rows


SAID = {MASKED: " (was {})", RANDOM: " (random; was {})", KEPT: " (kept, a target)"}  # screen-reader text

MASKING_CSS = """<style>
.mk-scroll{max-height:min(640px,70vh);overflow:auto;border:1px solid #d4d4d8}
.mk-table{border-collapse:collapse;width:100%;table-layout:fixed;font-size:13px;line-height:1.9}
.mk-table th,.mk-table td{border:1px solid #d4d4d8;padding:4px 6px;vertical-align:top;text-align:left;
  overflow-wrap:anywhere}
.mk-scroll .mk-table thead th{position:sticky;top:0;background:var(--background-fill-secondary,#f4f4f5);
  color:var(--body-text-color,#18181b);z-index:1}
.mk-scroll .mk-table tbody th{background:var(--background-fill-secondary,#f4f4f5);color:var(--body-text-color,#18181b);
  white-space:nowrap;font-weight:600}
.mk-table col.mk-epoch{width:5.5em}
.mk-table td i{font-style:normal;border-radius:3px;padding:1px 1px;color:inherit}
/* light backgrounds keep dark text in a dark theme too; a line under each kind tells them apart without colour */
.mk-wrap .mk-1,.mk-wrap .mk-table td i.mk-1{background:#fca5a5;color:#18181b;font-weight:600}
.mk-wrap .mk-2,.mk-wrap .mk-table td i.mk-2{background:#fdba74;color:#18181b;text-decoration:underline dashed}
.mk-wrap .mk-3,.mk-wrap .mk-table td i.mk-3{background:#93c5fd;color:#18181b;text-decoration:underline dotted}
.mk-copy{font-size:11px;opacity:.75;margin-right:.4em}
.mk-table .sr{position:absolute;width:1px;height:1px;overflow:hidden;clip-path:inset(50%);white-space:nowrap}
.mk-table i[title]{position:relative;cursor:help}
.mk-table i[title]:hover::after{content:attr(title);position:absolute;left:0;top:100%;z-index:2;background:#18181b;
  color:#fff;padding:0 5px;border-radius:3px;font-size:12px;font-weight:400;white-space:nowrap}
.mk-legend span{margin-right:1em;padding:1px 6px;border-radius:3px;display:inline-block}
@media (max-width:700px){
.mk-table,.mk-table tbody,.mk-table tr,.mk-table td,.mk-table tbody th{display:block;width:auto}
.mk-table colgroup,.mk-table thead{display:none}
.mk-table td::before{display:block;font-size:11px;font-weight:600;opacity:.75}
.mk-table td:nth-of-type(1)::before{content:"BERT static, one fixed mask"}
.mk-table td:nth-of-type(2)::before{content:"BERT static, 10 masks cycling"}
.mk-table td:nth-of-type(3)::before{content:"RoBERTa dynamic, a new mask every epoch"}
}
</style>"""


def masking_table(tokenizer, tokens: Tokens, runs: dict) -> str:
    """An HTML table, one row per epoch, one column per scheme; every token escaped and coloured by outcome.

    Sized for 128 tokens x 40 epochs x 3 schemes (15,360 tokens): each token is a bare `<i>` (styled by one
    CSS rule), and only the prediction targets carry a class and a title (the original token)."""
    labels, starts = tokens.labels, tokens.word_start
    escaped = [html.escape(label, quote=True) for label in labels]
    replaced: dict[int, str] = {}  # token id -> how a masked or random replacement shows

    def shown(token_id: int) -> str:
        if token_id not in replaced:
            replaced[token_id] = html.escape(token_text(tokenizer, token_id).strip())
        return replaced[token_id]

    kept = 1 - MASK_FRACTION - RANDOM_FRACTION
    legend = (f'<div class="mk-legend"><span class="mk-1">&lt;mask&gt; ({MASK_FRACTION:.0%} of targets)</span>'
              f'<span class="mk-2">random token ({RANDOM_FRACTION:.0%})</span><span class="mk-3">unchanged, still a '
              f'target ({kept:.0%})</span><span style="border:1px solid #d4d4d8">not selected '
              f'({1 - MLM_PROBABILITY:.0%} of tokens)</span></div>')
    head = "".join(f"<th>{html.escape(name)}</th>" for name in SCHEMES.values())
    regular = [pos for pos, special in enumerate(tokens.special) if not special]
    gaps = ["" if i == 0 or not starts[pos] else " " for i, pos in enumerate(regular)]  # lines wrap between words
    rows = []
    epochs = len(next(iter(runs.values())))
    for e in range(epochs):
        cells = []
        for key in SCHEMES:
            b = runs[key][e]
            ids, outcomes = b.input_ids[0].tolist(), b.outcome[0].tolist()
            parts = []
            for gap, pos in zip(gaps, regular):
                outcome = outcomes[pos]
                if outcome == NOT_SELECTED:
                    parts.append(f"{gap}<i>{escaped[pos]}</i>")
                else:
                    text = escaped[pos] if outcome == KEPT else shown(ids[pos])
                    # what the colour says, for a screen reader (the title is not read out)
                    said = SAID[outcome].format(escaped[pos])
                    parts.append(f'{gap}<i class="mk-{outcome}" title="{escaped[pos]}">{text}<b class="sr">{said}</b>'
                                 '</i>')
            copy = {"static1": "the one mask", "static10": f"mask {e % DUPE_FACTOR + 1} of {DUPE_FACTOR}",
                    "dynamic": "new mask"}[key]
            cells.append(f'<td><span class="mk-copy">{copy}</span> {"".join(parts)}</td>')
        rows.append(f"<tr><th>epoch {e + 1}</th>{''.join(cells)}</tr>")
    note = ('<p>Hover over (or tap) a coloured token to see the original, which the model must predict there. Static '
            'masking repeats its masks (BERT duplicated its data 10 times with different masks, so over 40 epochs '
            'each mask was seen 4 times); dynamic masking draws a new one every time the sentence is fed to the '
            'model.</p>')
    return (f'{MASKING_CSS}<div class="mk-wrap">{legend}<div class="mk-scroll" role="region" tabindex="0" '
            f'aria-label="The sentence epoch by epoch, one column per scheme"><table class="mk-table">'
            f'<colgroup><col class="mk-epoch"><col><col><col></colgroup><thead><tr><th>epoch</th>{head}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table></div>{note}</div>')
