"""What the app's buttons do: plain functions of plain values, testable without a browser.

`Handlers(models)` holds the models loaded once at start-up (`demo.models.load_models`) and exposes one
method per API endpoint: each checks its inputs (`demo.validation`), runs the model, and hands the results to
the tab's views (`fill_mask_view`, `layer_lens`, `explain`, `masking_view`, `figures`). Bad input raises
`gr.Error` with a plain message; other failures become a generic `gr.Error` (`validation.user_errors`).
Truncated inputs give a `gr.Warning` (a Python warning outside Gradio); a long review that the Sentiment tab
reads in windows says so in its explanation.
"""
from __future__ import annotations

import html
import logging
import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass

import gradio as gr
import torch

from . import bpe_view, counterfactual, embedding_view, explain, figures, head_roles, head_view
from .fill_mask_view import (comparison_html, completed_sentence, mask_labels, mask_spaces, prediction_fill,
                             predictions_html)
from .examples import ANALOGY_PROBE
from .formatting import SPACE_LABEL, md_escape
from .layer_lens import layer_predictions, layers_html
from .masking_view import SCHEMES, masking_stats, masking_table, mlm_predictions, simulate_masking
from .model_choice import (COMPARISON, SHIPPED, SUGGESTED, ModelChoiceError, ModelChooser, describe, is_shipped,
                           same_model)
from .models import Models
from .training_counts import counts_for
from .tokens_view import Tokens, classifier_text, cut_to_window, special_ids, tokenize
from .validation import (LONG_TEXT_TOKENS, MASK, MASK_RE, MAX_EPOCHS, MAX_SEED, MAX_TOP_K, candidate_words,
                         clean_text, count_masks, error_html, fail, parse_head, parse_int, user_errors, warning,
                         warn_truncated, windows_note)

log = logging.getLogger(__name__)


def classifier_input(loaded, text: str, lowercase: bool) -> str:
    """What the classifier `loaded` reads of `text` (`classifier_text`, as in fine-tuning): up to
    LONG_TEXT_TOKENS tokens, which its pipeline reads in overlapping windows; `lowercase` for the shipped
    classifier, fine-tuned on lower-cased text (a Hub classifier may be cased)."""
    return classifier_text(text, loaded.tokenizer, loaded.pipeline.max_length, lowercase=lowercase,
                           read_tokens=LONG_TEXT_TOKENS)


@dataclass
class SentimentReading:
    """A text as the chosen classifier read it (`Handlers._read_sentiment`): its answer, and each word's push
    towards the `toward` label (integrated gradients, `explain.polarity`) as (start, end, score) in `shown`,
    the text as the user sees it (their own when normalising only changed the case); `windows_note`: for a text
    longer than the model reads at once, how it was read ("" otherwise)."""

    loaded: object
    lowercase: bool
    probabilities: dict[str, float]
    best: str
    toward: str
    away: str
    tokens: Tokens
    words: list[tuple[int, int, float]]
    shown: str
    windows_note: str = ""


ATTENTION_CACHE_SIZE = 8  # texts whose attention is kept for the layer, head and token pickers
# The attention tab's views, one sub-tab each: the head view (HTML), heatmap, the layer's heads, rollout, one
# token's bars. The UI draws only the visible one; the API draws all of them unless asked for one ("view").
VIEWS = ("heads", "heatmap", "grid", "rollout", "token")
# The figures' text versions (HTML), drawn with their figure: each token's largest weights for the heatmaps, the
# heads' roles for the layer's heads, every weight of one token's bars (`head_roles`)
TEXTS = {"heatmap": "heatmap_text", "grid": "grid_text", "rollout": "rollout_text", "token": "token_text"}
FIGURE_CACHE_SIZE = 8  # embedding figures kept: the default word map and the positions, per model, and a few more
# Tabs that read the fill-mask model's tokenizer or embeddings, named in the model messages they give
TOKENS_TAB, EMBEDDINGS_TAB = "Tokens", "Embeddings"


def layer_choices(n_layers: int) -> list[int]:
    return list(range(1, n_layers + 1))


def head_choices(n_heads: int) -> list[tuple[str, object]]:
    return [("average of heads", "average")] + [(f"head {h}", h) for h in range(1, n_heads + 1)]


def _wanted(view, depends) -> set:
    """The views to draw: those in `depends` (what the event changes), all of them for "all" (the API's
    default), else only `view` (the visible sub-tab) when it is one of them."""
    if view is None or (isinstance(view, str) and view.strip().lower() in ("", "all")):
        return set(depends)
    if view not in VIEWS:
        raise fail(f"view must be “all” or one of {list(VIEWS)}, got {view!r}.")
    return {view} & set(depends)


def add_counts(result: dict, tokenizer):
    """Adds to each of the result's neighbours, in place, "seen": {kind of text: how often it holds the token},
    as the Tokens tab's rows show it; returns the pretraining counts of `tokenizer`'s vocabulary (`counts_for`),
    or None (then nothing is added)."""
    counts = counts_for(tokenizer)
    if counts is not None:
        for n in result["neighbours"]:
            n["seen"] = dict(zip(counts.names, counts.seen(int(n["token"]))))
    return counts


class Handlers:
    def __init__(self, models: Models, chooser: ModelChooser | None = None):
        self.models = models
        self.chooser = chooser or ModelChooser(models)  # the Hub models a tab can run instead (model=...)
        self._attention_cache: OrderedDict = OrderedDict()
        # (id of an embedding table, its version, what) -> (a weak reference to the table, the figure)
        self._figure_cache: OrderedDict = OrderedDict()
        self._cache_lock = threading.Lock()

    def _need(self, key: str, choice=SHIPPED, tab: str | None = None):
        """The `key` tab's model: the shipped one, or the chosen Hub model (loaded once; a `ModelChoiceError`,
        a ValueError, says plainly why one cannot be used). `tab`: the tab that asks, when another than the
        `key` tab (named in the messages)."""
        loaded = self.chooser.get(key, choice, tab)
        if not loaded.available:
            raise fail(loaded.error)
        return loaded

    # ---- 1. fill mask
    @user_errors
    def fill_mask(self, text, top_k=5, targets=None, model=SHIPPED):
        """Predictions for every <mask>: (completed sentence, {token: probability} per mask slot or None, raw,
        the readable view: per mask, every prediction with its probability and a bar scaled to the top one).
        `model`: "shipped" (ours) or a Hugging Face Hub repo id (`demo.model_choice`)."""
        return self._fill_mask(text, top_k, targets, model)[0]

    @user_errors
    def fill_mask_page(self, text, top_k=5, targets=None, model=SHIPPED):
        """What the page shows: `fill_mask`'s outputs, then layer by layer (`fill_mask_layers`' two outputs) for
        the same text, each table following the answer the page shows (the best candidate word, when given)."""
        outputs, loaded, text, per_mask = self._fill_mask(text, top_k, targets, model)
        lens = layer_predictions(loaded.pipeline, text, [row[0]["token"] for row in per_mask])
        for mask, row in zip(lens, per_mask):
            if row[0].get("candidates"):  # the user's word(s) that token stands for (its first piece)
                mask["answer"]["candidates"] = row[0]["candidates"]
        return (*outputs, layers_html(lens, loaded.tokenizer), lens)

    def _fill_mask(self, text, top_k, targets, model, heading="h2", tab=None):
        """`fill_mask`'s outputs, and what the page's layer view needs: the model, the text read (masks spelt
        <mask>) and the predictions per mask. `heading`: the element of the view's headings; `tab`: who asks
        for the model, when not the Fill mask tab (named in its errors)."""
        loaded = self._need("mlm", model, tab)
        pipe = loaded.pipeline
        top_k = parse_int(top_k, "Top-k", 1, MAX_TOP_K)
        words = candidate_words(targets)
        text, full_length = self._masked_text(loaded, text, warn=tab is None)  # a comparison warned once
        n_masks = text.count(MASK)  # checked, and spelt <mask>, by _masked_text
        if words:  # every candidate word is scored, whatever top-k (the number of vocabulary predictions)
            per_mask = self._score_candidates(pipe, text, words)
            # the completed sentence shows the user's word after the whitespace its mask absorbed (the piece
            # itself when several words share it)
            fills = [space + (row[0]["candidates"][0] if len(row[0]["candidates"]) == 1
                              else row[0]["token_str"].strip())
                     for space, row in zip(mask_spaces(text), per_mask)]
        else:
            results = pipe(text, top_k=top_k)
            per_mask = results if n_masks > 1 else [results]
            fills = [prediction_fill(row[0], loaded.tokenizer) for row in per_mask]
        if any(r.get("truncated") for row in per_mask for r in row):
            warn_truncated(pipe.max_length)
        tokens = tokenize(loaded.tokenizer, text, pipe.max_length)  # shown: how the model reads the text
        read = text
        if tokens.truncated:  # the completed sentence ends where the model stopped reading
            read = text[:max(end for _, end in tokens.offsets)]  # <s> and </s> span nothing: (0, 0)
        filled = completed_sentence(read, fills)
        if len(read) < full_length:
            filled.append((" …", None))
        raw = [[dict(r) for r in row] for row in per_mask]
        outputs = (filled, *mask_labels(per_mask, loaded.tokenizer), raw,
                   predictions_html(per_mask, words, tokens, heading, loaded.tokenizer, counts_for(loaded.tokenizer)))
        return outputs, loaded, text, per_mask

    @staticmethod
    def _masked_text(loaded, text, warn: bool = True) -> tuple[str, int]:
        """A fill-mask text checked (one to MAX_MASKS masks, every one within what the model reads; `warn`:
        `count_masks`'), its masks spelt <mask> ([MASK] is read as it), and cut to what the model reads; with the
        length it had before the cut."""
        text = MASK_RE.sub(MASK, clean_text(text))
        n_masks = count_masks(text, warn)
        full_length = len(text)
        text = cut_to_window(text, loaded.tokenizer, loaded.pipeline.max_length)  # the rest is never read
        if text.count(MASK) < n_masks:
            raise fail(f"The mask is beyond the first {loaded.pipeline.max_length} tokens, which is all the model "
                       "reads: shorten the text or move the mask earlier.")
        return text, full_length

    @user_errors
    def fill_mask_compare(self, text, top_k=5, targets=None, model=SHIPPED, other=SUGGESTED["mlm"][0]):
        """The text through the tab's model and `other` (a Hub repo id, or SHIPPED when the tab runs another
        model), side by side: (the HTML view, the same as data: per model its title and, per mask, the
        predictions in `transformers`' format)."""
        if same_model(model, other):
            raise fail("Choose a model to compare with other than the one this tab runs.")
        names = ["ours (shipped)" if is_shipped(choice) else str(choice).strip() for choice in (model, other)]
        # what is wrong with the input whatever the model is said once, not as one model's error
        count_masks(clean_text(text))
        parse_int(top_k, "Top-k", 1, MAX_TOP_K)
        candidate_words(targets)
        columns, data, texts = [], [], []
        for choice, name in zip((model, other), names):
            try:
                outputs, loaded, read, per_mask = self._fill_mask(text, top_k, targets, choice, "h3", COMPARISON)
            except gr.Error as err:  # say which model: one may read fewer tokens than the other
                raise fail(f"{name}: {err.message}") from None
            title = name if is_shipped(choice) else loaded.title
            columns.append((title, per_mask, outputs[-1]))
            data.append({"model": title, "predictions": outputs[-2]})
            texts.append(read)
        shown = min(texts, key=len)  # what both read (a long text is cut to the model's window)
        shown = shown if len(shown) <= 300 else shown[:300] + " …"
        return comparison_html(shown, columns), data

    @user_errors
    def fill_mask_layers(self, text, model=SHIPPED):
        """How each mask's answer forms, layer by layer (`demo.layer_lens`): (the HTML view, the same as data:
        per mask, the answer and per layer, the embeddings first, the top guesses and the answer's rank and
        probability there)."""
        loaded = self._need("mlm", model)
        text, _ = self._masked_text(loaded, text)
        per_mask = layer_predictions(loaded.pipeline, text)
        return layers_html(per_mask, loaded.tokenizer), per_mask

    @staticmethod
    def _score_candidates(pipe, text: str, words: list[str]) -> list[list[dict]]:
        """Every candidate word scored at every mask, in the token form a word takes there (byte-level BPE):
        with its leading space ("Ġ" form) after whitespace, without one at the start of the text or after
        anything else ("foot<mask>", "(<mask>)"). The pipeline scores one form per call, so the text goes
        through it once per form its masks need. A word that is not one token is scored by its first piece
        (as transformers); each result lists under "candidates" the words it scored (several when they share
        that piece), in the user's order. A word whose first piece is whitespace alone or part of a character's
        bytes (an emoji's) is refused with a plain message: that piece's score says nothing about the word, and a
        row for it would rank with the real answers."""
        words = list(dict.fromkeys(words))  # "Paris, Paris" is one candidate
        spaced = [bool(space) for space in mask_spaces(text)]
        forms, unscorable = {}, {}  # form -> {token id: words}; word -> what its first piece is
        for form in sorted(set(spaced)):
            by_token = forms[form] = {}
            for word in words:
                try:
                    token = int(pipe.target_ids([" " + word if form else word])[0])
                except ValueError:  # no token at all: skipped, as the pipeline skips it
                    continue
                by_token.setdefault(token, []).append(word)
                piece = pipe.tokenizer.decode([token], skip_special_tokens=False)
                if not piece.strip() or "\ufffd" in piece:
                    unscorable.setdefault(word, "part of a character" if piece.strip() else
                                          "a lone space" if piece == " " else "whitespace alone")
        if unscorable:
            quoted = " and ".join(f"“{w}”" for w in unscorable)
            one = len(unscorable) == 1
            raise fail(f"{quoted} cannot be scored: {'its' if one else 'each one’s'} first piece is "
                       f"{' or '.join(dict.fromkeys(unscorable.values()))}, which says nothing about the word. "
                       f"Leave {'it' if one else 'them'} out, or try a word the vocabulary has.")
        rows = {}
        for form, by_token in forms.items():
            shaped = [" " + w if form else w for w in words]
            results = pipe(text, top_k=len(shaped), targets=shaped)  # all of them, whatever top-k
            per_mask = results if len(spaced) > 1 else [results]
            rows[form] = [[{**r, "candidates": by_token.get(r["token"], [])} for r in row] for row in per_mask]
        return [rows[form][i] for i, form in enumerate(spaced)]

    # ---- 2. sentiment
    def _read_sentiment(self, text, model) -> SentimentReading:
        """One text through the chosen classifier, as `classify` and `counterfactual` both need it."""
        lowercase = is_shipped(model)  # as the shipped classifier was fine-tuned; a Hub classifier may be cased
        loaded = self._need("sentiment", model)
        pipe, tokenizer = loaded.pipeline, loaded.tokenizer
        text = clean_text(text)
        model_text = classifier_input(loaded, text, lowercase)
        tokens = tokenize(tokenizer, model_text, pipe.max_length)
        if not tokens.has_words:  # "<pad><pad>" or "<s> </s>" would otherwise get a verdict on no words at all
            raise fail("The text has no words to classify, only special tokens such as <pad> or <mask>.")
        results = pipe(model_text)  # a long text: in overlapping windows, their logits averaged
        windows, note = results[0].get("windows", 1) if results else 1, ""
        if windows > 1:
            read = len(tokenizer.encode(model_text, add_special_tokens=False).ids)
            note = windows_note(pipe.max_length, windows, cut=read >= LONG_TEXT_TOKENS)
        # fixed polarity: every word's push towards the positive label, whatever the prediction (a plus is
        # always "towards positive", so "gorgeous" and "bad" never share a colour)
        target, toward, away = explain.polarity(loaded.model.config)
        attributions, _, _ = explain.integrated_gradients(loaded.model, tokens.ids, target,
                                                          tokenizer.token_to_id("<pad>"), special_ids(tokenizer))
        # the user's own case where normalising only lower-cased and collapsed whitespace
        return SentimentReading(loaded, lowercase, {r["label"]: float(r["score"]) for r in results},
                                results[0]["label"], toward, away, tokens, explain.merge_words(tokens, attributions),
                                explain.in_users_case(text, model_text), note)

    @user_errors
    def classify(self, text, model=SHIPPED):
        """(label probabilities, per-word attribution in [-1, 1] for HighlightedText, explanation). A word's
        score is its push towards the positive label (`explain.polarity`): plus towards positive, minus towards
        negative, whatever the prediction. A long text's explanation starts with how it was read (in windows).
        `model`: "shipped" (ours) or a Hugging Face Hub repo id (`demo.model_choice`)."""
        r = self._read_sentiment(text, model)
        explanation = explain.explanation_markdown(r.shown, r.words, r.toward, r.away, r.best, r.probabilities[r.best])
        return (r.probabilities, explain.highlighted_words(r.shown, r.words, r.tokens.truncated,
                                                            rest=explain.REST_READ),
                f"ℹ️ *{r.windows_note}*\n\n{explanation}" if r.windows_note else explanation)

    @user_errors
    def counterfactual(self, text, model=SHIPPED):
        """What if the word that pushed most towards the answer were removed or negated (`demo.counterfactual`)?
        (Markdown table: each edited text with the change marked, the new answer and the change of P(positive)
        in points; the same as data.) The edited texts are classified in one batch, normalised as `classify`
        normalises its text. `model`: "shipped" (ours) or a Hugging Face Hub repo id (`demo.model_choice`)."""
        return self._counterfactual(text, model, warn=True)

    @user_errors
    def counterfactual_page(self, text, model=SHIPPED):
        """`counterfactual` as the page runs it: right after classifying the same text, which has said already
        that a long text was read in windows."""
        return self._counterfactual(text, model, warn=False)

    def _counterfactual(self, text, model, warn: bool):
        r = self._read_sentiment(text, model)
        if warn and r.windows_note:  # the API's /counterfactual alone; the page's classify has said it
            warning(r.windows_note)
        word = counterfactual.strongest_word(r.words, 1.0 if r.best == r.toward else -1.0)
        edits = counterfactual.propose(r.shown, word)
        if not edits:
            raise fail(counterfactual.nothing_to_try(counterfactual.core_word(r.shown, word[0], word[1])))
        texts = [classifier_input(r.loaded, edit.apply(r.shown), r.lowercase) for edit in edits]
        results = r.loaded.pipeline(texts)  # one batch
        after = [{x["label"]: float(x["score"]) for x in row} for row in results]
        args = (r.shown, word, r.toward, r.probabilities, edits, after)
        return counterfactual.outcome_markdown(*args), counterfactual.outcome_data(*args)

    # ---- 3. attention
    def _attention_model(self, model):
        """The attention tab's model: "mlm" or "sentiment" (the shipped ones; SHIPPED is "mlm"), or a Hub
        repo id of either kind (`ModelChooser.get_any`). Returns (its name in the attention cache, the model,
        whether it reads lower-cased text: only the shipped classifier was fine-tuned on it)."""
        if is_shipped(model):
            model = "mlm"
        if not isinstance(model, str):
            raise fail("model must be “mlm”, “sentiment” or a Hugging Face Hub repo id, got "
                       f"{type(model).__name__}.")
        model = model.strip()
        if model in ("mlm", "sentiment"):
            return model, self._need(model), model == "sentiment"
        loaded = self.chooser.get_any(model)
        return loaded.source, loaded, False

    def attention_data(self, model, text: str) -> tuple[Tokens, object]:
        """Tokens and attentions (L, nh, T, T) of one text as the model reads it, cached for the pickers."""
        name, loaded, _ = self._attention_model(model)
        return self._cached_attention(name, loaded, text)

    def _cached_attention(self, name: str, loaded, text: str) -> tuple[Tokens, object]:
        cache_key = (name, text)
        with self._cache_lock:
            if cache_key in self._attention_cache:
                self._attention_cache.move_to_end(cache_key)
                return self._attention_cache[cache_key]
        tokens = tokenize(loaded.tokenizer, text, loaded.config.max_length)
        attentions = explain.attention_maps(loaded.model, tokens.ids)
        with self._cache_lock:
            self._attention_cache[cache_key] = (tokens, attentions)
            while len(self._attention_cache) > ATTENTION_CACHE_SIZE:
                self._attention_cache.popitem(last=False)
        return tokens, attentions

    def _attention_inputs(self, text, layer, head, model):
        name, loaded, lowercase = self._attention_model(model)
        text = clean_text(text).strip()  # spaces at the ends would be tokens of their own, rows of the maps
        cfg = loaded.config
        if loaded.key == "sentiment":  # a classifier reads text as in fine-tuning (the shipped one lower-cased)
            text = classifier_text(text, loaded.tokenizer, cfg.max_length, lowercase=lowercase)
        text = cut_to_window(text, loaded.tokenizer, cfg.max_length)  # also what the cache keeps
        layer = parse_int(layer, "Layer", 1, cfg.num_hidden_layers)
        head = parse_head(head, cfg.num_attention_heads)
        tokens, attentions = self._cached_attention(name, loaded, text)
        return loaded, tokens, attentions, layer, head

    @staticmethod
    def _query(tokens: Tokens, token) -> int:
        """The picked token when it is one of this text's, else the default one (`explain.default_token`)."""
        try:
            query = int(token)
        except (TypeError, ValueError):
            return explain.default_token(tokens)
        return query if 0 <= query < len(tokens.labels) else explain.default_token(tokens)

    @staticmethod
    def _bars(tokens: Tokens, matrix, query: int, what: str) -> tuple:
        """(the bars of where token `query` attends, their text version: every weight, largest first)."""
        labels = tokens.labels
        title = f"Where token {query} “{labels[query]}” attends ({what})"
        return (figures.attention_bars(matrix[query], labels, query, title),
                head_roles.token_targets_html(labels, matrix[query], query, title))

    def _draw(self, tokens, attentions, layer, head, query, wanted) -> dict:
        """The views named in `wanted` (a set of VIEWS), drawn; the others None (the UI leaves them as they
        are, and a sub-tab draws its view when it is opened). The head view is HTML, drawn in milliseconds; each
        matplotlib figure costs ~0.3-0.5 s to draw and send, which is why only the visible one is drawn."""
        views = dict.fromkeys([*VIEWS, *TEXTS.values()])
        labels = tokens.labels
        matrix, what = explain.head_matrix(attentions, layer, head)
        if "heads" in wanted:
            views["heads"] = head_view.head_view_html(labels, matrix, what[:1].upper() + what[1:])
        if "heatmap" in wanted:
            views["heatmap"] = figures.attention_heatmap(matrix, labels, f"Attention, {what}")
            views["heatmap_text"] = head_roles.top_targets_html(labels, matrix, f"Attention, {what}")
        if "grid" in wanted:
            views["grid"] = figures.head_grid(attentions[layer - 1], labels, layer)
            views["grid_text"] = (head_roles.layer_roles_html(attentions[layer - 1], labels, layer)
                                  + head_roles.overview_html(attentions, labels, layer))
        if "rollout" in wanted:
            rollout = explain.attention_rollout(attentions)
            title = f"Attention rollout through all {len(attentions)} layers"
            views["rollout"] = figures.attention_heatmap(rollout, labels, title,
                                                         cbar_label="share of information from each input token")
            views["rollout_text"] = head_roles.top_targets_html(labels, rollout, title, verb="draws most on")
        if "token" in wanted:
            views["token"], views["token_text"] = self._bars(tokens, matrix, query, what)
        return views

    @user_errors
    def attention(self, text, layer=1, head="average", model="mlm", view="all"):
        """(heatmap, all heads of the layer, rollout, bars of the default token, token picker update, notes,
        head view HTML, layer picker update, head picker update, then the text versions of the heatmap, the
        layer's heads, the rollout and the bars). `model`: "mlm", "sentiment" or a Hub repo id; `view`: "all"
        draws every view, one of VIEWS only that one, with its text version (the others are None)."""
        wanted = _wanted(view, VIEWS)
        loaded, tokens, attentions, layer, head = self._attention_inputs(text, layer, head, model)
        if tokens.truncated:
            warn_truncated(loaded.config.max_length)
        labels, query = tokens.labels, explain.default_token(tokens)
        views = self._draw(tokens, attentions, layer, head, query, wanted)
        picker = gr.update(choices=[(f"{i}: {label}", i) for i, label in enumerate(labels)], value=query)
        n_layers, n_heads = attentions.shape[:2]
        notes = (f"{len(labels)} tokens{' (cut to the maximum length)' if tokens.truncated else ''} · "
                 f"{md_escape(loaded.title)} · {n_layers} layers × {n_heads} heads. "
                 "Each row of a heatmap is one token's attention over all tokens (it sums to 1). "
                 "Rollout follows attention through every layer, counting the residual connection, to "
                 "estimate how much each input token contributes to each position at the top.")
        return (views["heatmap"], views["grid"], views["rollout"], views["token"], picker, notes, views["heads"],
                gr.update(choices=layer_choices(n_layers), value=layer),
                gr.update(choices=head_choices(n_heads), value=head or "average"), *[views[t] for t in TEXTS.values()])

    def attention_page(self, text, layer=1, head="average", model="mlm", view="all"):  # `attention` words errors
        """What the page's attention event shows: `attention`'s outputs, then the text and the model they were
        drawn for, which the layer, head, token and sub-tab events then read (not a text edited since)."""
        return (*self.attention(text, layer, head, model, view), text, model)

    @user_errors
    def attention_layer(self, text, layer=1, head="average", token=None, model="mlm", view="all"):
        """A new layer: (heatmap, all heads of the layer, bars of the picked token, head view, the text versions
        of the heatmap, of the layer's heads and of the bars); the rollout, which does not depend on the layer, is
        not redrawn. `view` as in `attention`."""
        wanted = _wanted(view, {"heatmap", "grid", "token", "heads"})
        _, tokens, attentions, layer, head = self._attention_inputs(text, layer, head, model)
        views = self._draw(tokens, attentions, layer, head, self._query(tokens, token), wanted)
        return (views["heatmap"], views["grid"], views["token"], views["heads"], views["heatmap_text"],
                views["grid_text"], views["token_text"])

    @user_errors
    def attention_head(self, text, layer=1, head="average", token=None, model="mlm", view="all"):
        """A new head: (heatmap, bars of the picked token, head view, the text versions of the heatmap and of the
        bars). `view` as in `attention`."""
        wanted = _wanted(view, {"heatmap", "token", "heads"})
        _, tokens, attentions, layer, head = self._attention_inputs(text, layer, head, model)
        views = self._draw(tokens, attentions, layer, head, self._query(tokens, token), wanted)
        return views["heatmap"], views["token"], views["heads"], views["heatmap_text"], views["token_text"]

    @user_errors
    def attention_view(self, text, layer=1, head="average", token=None, model="mlm", view="heads"):
        """One view (one of VIEWS), drawn when its sub-tab is opened; a view with a text version (TEXTS) comes
        as (figure, text)."""
        if view not in VIEWS:
            raise fail(f"view must be one of {list(VIEWS)}, got {view!r}.")
        _, tokens, attentions, layer, head = self._attention_inputs(text, layer, head, model)
        views = self._draw(tokens, attentions, layer, head, self._query(tokens, token), {view})
        return (views[view], views[TEXTS[view]]) if view in TEXTS else views[view]

    @user_errors
    def attention_token(self, text, layer=1, head="average", token=1, model="mlm"):
        """(bar chart of where one token (0-based index, <s> is 0) attends in the chosen layer/head, its text
        version: every weight, largest first)."""
        _, tokens, attentions, layer, head = self._attention_inputs(text, layer, head, model)
        query = parse_int(token, "Token", 0, len(tokens.labels) - 1)
        matrix, what = explain.head_matrix(attentions, layer, head)
        return self._bars(tokens, matrix, query, what)

    def attention_model(self, choice, current="mlm", layer=None, head="average"):
        """The attention tab's model box: (box value, the tab's model, a status line in HTML, layer picker
        update, head picker update). A model that can be used becomes the tab's model, the pickers offer its
        layers and heads (the current ones kept where it has them); one that cannot leaves the box and the tab
        on `current`, with the reason next to the box (offline: that it needs the Hub)."""
        current = "mlm" if is_shipped(current) else current
        try:
            _, loaded, _ = self._attention_model(choice)
        except (ModelChoiceError, gr.Error) as err:
            message = err.message if isinstance(err, gr.Error) else str(err)
            return current, current, error_html(html.escape(message, quote=False)), gr.skip(), gr.skip()
        value = "mlm" if is_shipped(choice) else choice.strip()
        cfg = loaded.config
        try:
            layer = parse_int(layer, "Layer", 1, cfg.num_hidden_layers)
        except gr.Error:
            layer = cfg.num_hidden_layers
        try:
            head = parse_head(head, cfg.num_attention_heads) or "average"
        except gr.Error:
            head = "average"
        return (value, value, f'<div class="model-status">{describe(loaded)}</div>',
                gr.update(choices=layer_choices(cfg.num_hidden_layers), value=layer),
                gr.update(choices=head_choices(cfg.num_attention_heads), value=head))

    def analogy_probe_note(self) -> str:
        """How many of the probe's analogies the shipped fill-mask model's embeddings answer, in Markdown,
        measured at start-up (`embedding_view.score_analogies` on `demo.examples.ANALOGY_PROBE`)."""
        try:
            loaded = self.models.mlm
            result = embedding_view.score_analogies(loaded.model.roberta.embeddings.word_embeddings.weight,
                                                    loaded.tokenizer, ANALOGY_PROBE)
            return embedding_view.probe_markdown(result, "the shipped model's embeddings")
        except Exception:  # a note is not worth failing the start-up for (no model, another tokenizer...)
            return ""

    def attention_hint(self, text: str, link: tuple[str, str]) -> str:
        """Where to look in the attention tab, found in the loaded MLM at start-up (`explain.link_hint`)."""
        try:
            return explain.link_hint(*self.attention_data("mlm", text), link)
        except Exception:  # a hint is not worth failing the start-up for, but a crash is logged, not hidden
            log.exception("could not find the attention hint")
            return ""

    # ---- 4. static vs dynamic masking
    @user_errors
    def masking(self, text, epochs=10, seed=0):
        """(HTML table epoch by epoch, summary rows, coverage plot, MLM predictions at the last epoch)."""
        mlm = self.models.mlm
        loaded = mlm if mlm.available else self._need("sentiment")  # its tokenizer, at least
        tokenizer, max_length = loaded.tokenizer, loaded.config.max_length
        text = clean_text(text).strip()  # a trailing space or newline would be a token of its own, and a draw
        epochs = parse_int(epochs, "Epochs", 1, MAX_EPOCHS)
        seed = parse_int(seed, "Seed", 0, MAX_SEED)
        tokens = tokenize(tokenizer, text, max_length)
        if tokens.truncated:
            warn_truncated(max_length)
        if not tokens.has_words:  # spaces between mask tokens are no words either
            raise fail("The text has no ordinary tokens to mask, only special ones such as the mask token.")
        runs = simulate_masking(tokenizer, torch.tensor([tokens.ids]), epochs, seed)
        stats, curves = masking_stats(tokens, runs)
        predictions = mlm_predictions(mlm.model, tokenizer, tokens, runs) if mlm.available else [
            ["(the fill-mask model is not available)", None, "", "", "", "", None, ""]]
        return masking_table(tokenizer, tokens, runs), stats, figures.coverage_plot(curves, SCHEMES), predictions

    # ---- 5. tokens: how the byte-level BPE tokenizer reads a text (demo/bpe_view.py)
    @user_errors
    def tokens(self, text, model=SHIPPED):
        """(the text's tokens in HTML, the same as data (`bpe_view.token_rows`), the word picker update (the words
        of the part the model reads that merge by merge can replay, the default one picked), merge by merge for
        that word in HTML, its steps as data). A cut text is said in the view itself (no pop-up warning)."""
        loaded = self._need("mlm", model, TOKENS_TAB)
        text = clean_text(text)
        counts = counts_for(loaded.tokenizer)
        rows = bpe_view.token_rows(loaded.tokenizer, text, loaded.config.max_length, counts)
        try:  # a tokenizer that is not byte-level BPE still shows its tokens, with the reason for no merges
            pretokens = bpe_view.pretokens(loaded.tokenizer, text[:rows["read_characters"]])
            words = [w for w in pretokens if len(w) <= bpe_view.MAX_WORD_CHARS]
            word = bpe_view.pick_pretoken(loaded.tokenizer, words)
            merges, steps = self.bpe_merges(word, model) if word else ("", None)
            if too_long := [w for w in pretokens if len(w) > bpe_view.MAX_WORD_CHARS]:  # said, not silently missing
                note = html.escape(bpe_view.left_out(too_long), quote=False)
                merges = f'<p class="bpe-cut">{note}</p>' + merges if word else error_html(note)
        except (ValueError, gr.Error) as err:  # a gr.Error of `bpe_merges` (`user_errors`) is escaped already
            words, word, steps = [], None, None
            merges = error_html(err.message if isinstance(err, gr.Error) else html.escape(str(err), quote=False))
        picker = gr.update(choices=[(bpe_view.readable(w), w) for w in words], value=word)
        return bpe_view.tokens_html(rows, counts), rows, picker, merges, steps

    @user_errors
    def bpe_merges(self, word, model=SHIPPED):
        """One word replayed merge by merge, from its bytes to its tokens: (HTML, the steps as data:
        [{"pieces", "merged", "rank"}]). `word`: one word as the text has it, its leading space included
        (" tokenization"), as the tokens tab's picker shows it ("␣tokenization": ␣ is a space), or as its
        values are (byte-level, "Ġtokenization")."""
        loaded = self._need("mlm", model, TOKENS_TAB)
        word = self._word(word, "The word")
        bare = word.lstrip(SPACE_LABEL)  # the picker's label typed back ("␣has"): its ␣ are spaces
        word = " " * (len(word) - len(bare)) + bare
        steps = bpe_view.merge_steps(loaded.tokenizer, word)
        return bpe_view.merges_html(word, steps, loaded.tokenizer), steps

    # ---- 6. embeddings: what the model learned in its embedding tables (demo/embedding_view.py)
    def _embeddings(self, model):
        """The chosen fill-mask model and its embeddings module (word and position tables)."""
        loaded = self._need("mlm", model, EMBEDDINGS_TAB)
        return loaded, loaded.model.roberta.embeddings

    @staticmethod
    def _word(value, name: str) -> str:
        """A word typed in: control characters removed as from a text (`clean_text`), empty allowed (the views
        say so in their own words)."""
        return clean_text(value, name, required=False)

    @staticmethod
    def _neighbours_options(k, words_only) -> tuple[int, bool]:
        k = parse_int(k, "Neighbours", 1, embedding_view.MAX_K)
        if not isinstance(words_only, bool):
            raise fail(f"words_only must be true or false, got {words_only!r}.")
        return k, words_only

    @user_errors
    def neighbours(self, word, k=10, words_only=True, model=SHIPPED):
        """The word's nearest tokens by cosine similarity of their embeddings: (the HTML table, the same as data:
        {"word", "pieces", "words_only", "neighbours": [{"token", "token_str", "similarity"}]})."""
        k, words_only = self._neighbours_options(k, words_only)
        loaded, embeddings = self._embeddings(model)
        result = embedding_view.nearest_words(embeddings.word_embeddings.weight, loaded.tokenizer,
                                              self._word(word, "The word"), k, words_only)
        counts = add_counts(result, loaded.tokenizer)
        return embedding_view.neighbours_html(result, f"Nearest to “{result['word']}”", counts), result

    @user_errors
    def analogy(self, a, b, c, k=10, words_only=True, model=SHIPPED):
        """“a is to b as c is to ?”: the tokens nearest to b − a + c (`embedding_view.analogy`), as
        `neighbours` returns them; the title names the best one."""
        k, words_only = self._neighbours_options(k, words_only)
        loaded, embeddings = self._embeddings(model)
        words = [self._word(w, f"Word {name}") for w, name in zip((a, b, c), "abc")]
        result = embedding_view.analogy(embeddings.word_embeddings.weight, loaded.tokenizer, *words, k, words_only)
        a, b, c = result["query"]
        best = result["neighbours"][0]["token_str"].strip() + "?" if result["neighbours"] else "?"
        counts = add_counts(result, loaded.tokenizer)
        return embedding_view.neighbours_html(result, f"{a} is to {b} as {c} is to … {best}", counts), result

    def _figure(self, table, what, draw):
        """`draw()`'s figure (or figure and text), drawn once per (table, `what`) among the last
        FIGURE_CACHE_SIZE: every page load asks for the default word map and the position figure, and the same
        figure object lets the app's `Plot` send the image it rendered before. An entry is the table's only while
        that table lives: a Hub model's table freed (its model evicted) leaves its id to the next one's."""
        key = (id(table), table._version, what)
        with self._cache_lock:
            hit = self._figure_cache.get(key)
            if hit is not None and hit[0]() is table:
                self._figure_cache.move_to_end(key)
                return hit[1]
        figure = draw()
        with self._cache_lock:
            self._figure_cache[key] = (weakref.ref(table), figure)
            self._figure_cache.move_to_end(key)
            while len(self._figure_cache) > FIGURE_CACHE_SIZE:
                self._figure_cache.popitem(last=False)
        return figure

    @user_errors
    def word_map(self, words, model=SHIPPED):
        """The words' embeddings projected to two dimensions (PCA): (a figure, the same in words: the words left
        out and why, each word's coordinates). `words`: comma-separated."""
        loaded, embeddings = self._embeddings(model)
        table, words = embeddings.word_embeddings.weight, embedding_view.parse_words(self._word(words, "The words"))
        return self._figure(table, tuple(words), lambda: embedding_view.word_map(table, loaded.tokenizer, words))

    @user_errors
    def positions(self, model=SHIPPED):
        """How alike the learned position embeddings are, pair by pair: (a figure, the same in numbers: the mean
        similarity at each distance), drawn once per model."""
        loaded, embeddings = self._embeddings(model)
        table, first = embeddings.position_embeddings.weight, loaded.config.pad_token_id + 1
        return self._figure(table, "positions", lambda: (embedding_view.position_similarity_figure(table, first),
                                                         embedding_view.positions_html(table, first)))
