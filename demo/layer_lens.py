"""The fill-mask tab's "layer by layer" view: the logit lens (nostalgebraist, 2020) on a masked language model.

The MLM head reads every layer's output at each mask as if it were the last layer's
(`roberta.pipelines.FillMaskPipeline.logit_lens`). Row 0 is the embeddings alone (the mask token and its
position, before any attention), so its guesses depend on the mask's position only, never on the other words.
Shapes: L layers, M masks, V vocabulary, k guesses per layer.
"""
from __future__ import annotations

import html

import torch

from .fill_mask_view import listed_words
from .formatting import bar, format_probability, prediction_label, prediction_labels

GUESSES = 3  # a layer's top guesses the view shows


def layer_predictions(fill, text: str, answers: list[int] | None = None, top_k: int = GUESSES) -> list[dict]:
    """Per mask of `text`, from a fill-mask pipeline's logit lens (`FillMaskPipeline.logit_lens`): {"answer":
    the token followed (`answers`, one token id per mask; default the last layer's top token, the model's own
    prediction), "layers": one entry per row, the embeddings' first, each {"layer": 0..L, "top": [{"token",
    "token_str", "score"}] (its top_k), "answer_score": the answer's probability there, "answer_rank": its rank
    there (1 = top)}}. The last row is the model's own prediction (what the fill-mask pipeline returns)."""
    probs = fill.logit_lens(text)  # (L + 1, M, V)
    answers = probs[-1].argmax(dim=-1) if answers is None else torch.tensor(answers)  # (M,)
    answer_probs = probs.gather(-1, answers.expand(len(probs), -1)[..., None])  # (L + 1, M, 1)
    ranks = (probs > answer_probs).sum(dim=-1) + 1  # (L + 1, M)
    scores, picks = probs.topk(min(top_k, probs.shape[-1]), dim=-1)  # (L + 1, M, k)

    def token(token_id: int) -> dict:
        return {"token": token_id, "token_str": fill.tokenizer.decode([token_id], skip_special_tokens=False)}

    return [{"answer": token(int(answers[m])),
             "layers": [{"layer": layer,
                         "top": [{**token(int(pick)), "score": float(score)}
                                 for score, pick in zip(scores[layer, m], picks[layer, m])],
                         "answer_score": float(answer_probs[layer, m, 0]), "answer_rank": int(ranks[layer, m])}
                        for layer in range(len(probs))]}
            for m in range(probs.shape[1])]


LENS_CSS = """<style>
.ll-view{display:flex;flex-direction:column;gap:12px}
.ll-mask h2{margin:0 0 4px;font-size:14px}
.ll-scroll{overflow-x:auto}
.ll-mask table.ll-table{display:table;border-collapse:collapse;width:100%;font-size:14px;border:0;margin:0}
.ll-mask tr,.ll-mask td,.ll-mask th{border:0 !important;background:transparent !important}
.ll-mask th{font-weight:600;text-align:left;padding:2px 6px;font-size:13px}
.ll-mask td{padding:2px 6px;vertical-align:middle}
.ll-mask .ll-layer{white-space:nowrap;font-weight:400}
.ll-mask td.ll-guesses{overflow-wrap:anywhere}
.ll-guess{display:inline-block;margin:1px 6px 1px 0;padding:0 6px;border-radius:4px;white-space:nowrap;
  background:rgba(99,102,241,.08)}
.ll-guess.ll-answer{font-weight:700;color:#3730a3;background:rgba(99,102,241,.22)}
.dark .ll-mask .ll-guess.ll-answer{color:#e0e7ff;background:#3730a3}
.ll-mask td.ll-track{width:22%;min-width:40px}
.ll-mask td.ll-score{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}
.ll-bar{display:block;height:12px;border-radius:3px;background:#6366f1;min-width:2px}
@media (forced-colors:active){.ll-bar{forced-color-adjust:none;background:CanvasText}}  /* or it vanished */
.ll-note{font-size:12px;opacity:.75;margin:2px 0 0}
@media (max-width:600px){.ll-mask td.ll-track{width:15%}
  .ll-mask table.ll-table,.ll-mask th,.ll-mask td{font-size:12px}.ll-mask td,.ll-mask th{padding:2px 3px}
  .ll-guess{padding:0 3px;margin-right:3px}}
</style>"""


def _guesses(row: dict, answer: dict, tokenizer=None) -> str:
    """One layer's top guesses, each with its probability (kept on one line), the final answer's in bold."""
    top = row["top"]
    return "".join(f'<span class="ll-guess{" ll-answer" if g["token"] == answer["token"] else ""}">'
                   f'{html.escape(word)} {format_probability(g["score"])}</span>'
                   for g, word in zip(top, prediction_labels(top, tokenizer)))


def layers_html(per_mask: list[dict], tokenizer=None) -> str:
    """`layer_predictions` as a person reads it: per mask, one row per layer (the embeddings first) with that
    layer's top guesses and the final answer's rank and probability there, a bar scaled to the answer's
    highest probability across the layers, so the layer where the answer appears stands out. Each table scrolls
    in its own box when a phone is too narrow for it; its numbers never break across lines. A token that is
    whitespace or part of a character reads as a label ("␣", "⟨byte 0xE6⟩ (part of a character)"; its bytes are
    named given the model's `tokenizer`)."""
    blocks = []
    for i, mask in enumerate(per_mask):
        answer = mask["answer"]
        top = max(row["answer_score"] for row in mask["layers"]) or 1.0
        rows = []
        for row in mask["layers"]:
            guesses = _guesses(row, answer, tokenizer)
            name = "embeddings" if row["layer"] == 0 else f'layer {row["layer"]}'
            rows.append(f'<tr><th scope="row" class="ll-layer">{name}</th><td class="ll-guesses">{guesses}</td>'
                        f'<td class="ll-score">#{row["answer_rank"]:,} · {format_probability(row["answer_score"])}'
                        f'</td><td class="ll-track">{bar(row["answer_score"] / top, "ll-bar")}</td></tr>')
        word, k = html.escape(prediction_label(answer, tokenizer)), len(mask["layers"][0]["top"])
        heading = f"where “{word}” comes from"
        if answer.get("candidates"):  # a candidate word: by the token it was scored by, its first piece
            words = html.escape(listed_words(answer["candidates"]))
            heading = (f"where “{words}” comes from" if words == word else
                       f"where “{words}” comes from <small>(followed by its first piece, “{word}”, as it was "
                       "scored)</small>")
        blocks.append(f'<div class="ll-mask"><h2>&lt;mask&gt; {i + 1}: {heading}</h2>'
                      # a Tab stop, a region and its name only while it scrolls (demo/page.js: data-name)
                      f'<div class="ll-scroll" data-name="&lt;mask&gt; {i + 1}, layer by layer">'
                      f'<table class="ll-table"><tr><th scope="col">read after</th>'
                      f'<th scope="col">its top {k} guesses</th>'
                      f'<th scope="col" colspan="2">“{word}” there: rank · probability</th></tr>'
                      f'{"".join(rows)}</table></div></div>')
    note = ("The model's MLM head (a layer on top, then a projection onto every vocabulary token, tied to the "
            "embeddings: one score per vocabulary token, softmaxed into the probabilities above) reads each layer's "
            "output at the mask as if it were the last layer's (the “logit lens”); the last row is the model's own "
            "answer, its top prediction. RoBERTa is post-norm, so "
            "every layer's output has just been through a LayerNorm and the head can read it as is, but it was "
            "only trained on the last layer: read the middle rows as a rough picture. The embeddings row sees the "
            "mask and its position only, so it guesses the same for every sentence with the mask at that place.")
    if any(mask["answer"].get("candidates") for mask in per_mask):
        note += (" With candidate words, each table follows the best of them, the word the completed sentence "
                 "shows, whatever the model's own top answer.")
    return f'{LENS_CSS}<div class="ll-view">{"".join(blocks)}<p class="ll-note">{note}</p></div>'
