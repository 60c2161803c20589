"""The Attention tab's handlers (`AttentionHandlers`): one text's attention maps, computed once and kept for
the layer, head and token pickers, drawn as the head view, heatmap, the layer's heads, rollout and one token's
bars, each with its text version (`explain`, `head_view`, `head_roles`, `figures`); the tab's model box; and
what the tab says before its views: its hint, with a previous-token head found in the model at start-up, and what
attention computes."""
from __future__ import annotations

import logging
import threading
from collections import OrderedDict

import gradio as gr
import numpy as np

from . import explain, figures, head_roles, head_view

from .formatting import code, format_probability, md_escape, short_text, space_page
from .handler_base import HandlerBase
from .model_choice import ModelChoiceError, ModelChooser, describe, is_shipped, refused
from .models import KINDS, Models
from .sentiment_handlers import reads_lower_case
from .tokens_view import Tokens, classifier_text, cut_to_window, tokenize
from .validation import clean_text, fail, parse_head, parse_int, user_errors, warn_truncated

log = logging.getLogger(__name__)

ATTENTION_CACHE_SIZE = 8  # texts whose attention is kept for the layer, head and token pickers
# ... and the bytes their (L, nh, T, T) maps may hold together, oldest out first: the shipped models' maps take at
# most 3 MiB each, roberta-large's 384 MiB (24 × 16 × 512² float32), so one of those is kept, and a map larger than
# the budget is not kept at all
ATTENTION_CACHE_BYTES = 512 * 2**20
# The attention tab's views, one sub-tab each: the head view (HTML), heatmap, the layer's heads, rollout, one
# token's bars. The UI draws only the visible one; the API draws all of them unless asked for one ("view").
VIEWS = ("heads", "heatmap", "grid", "rollout", "token")
VIEW_NAMES = ", ".join(VIEWS[:-1]) + " or " + VIEWS[-1]  # as the messages list them
# The figures' text versions (HTML), drawn with their figure: each token's largest weights for the heatmaps, the
# heads' roles for the layer's heads, every weight of one token's bars (`head_roles`)
TEXTS = {"heatmap": "heatmap_text", "grid": "grid_text", "rollout": "rollout_text", "token": "token_text"}
# The notes' line when the server's classifier reads lower-cased text (`reads_lower_case`: the shipped one does): its
# tokens are lower case, whatever was typed (the Sentiment tab reads it so too)
LOWER_CASE_NOTE = ("{classifier} reads lower-cased text, as it was fine-tuned on it: its tokens are lower case, "
                   "whatever the case typed. ")
# ... and when a chosen model's tokenizer lower-cases the text (its normalizer; the app lower-cases a classifier's too)
TOKENIZER_LOWER_CASE_NOTE = ("This model's tokenizer lower-cases the text: its tokens are lower case, whatever the "
                             "case typed. ")


# The code tour's section that computes one encoder layer by hand from the shipped weights (a heading's anchor)
CODE_TOUR = ("docs/code-tour.md", "4-one-encoder-layer")


def doc_link(path: str, anchor: str, text: str) -> str:
    """A link to a section of a page of docs/ that works where the app runs: on a Hugging Face Space (SPACE_ID
    set; the Space holds docs/, `scripts.deploy_space`) its page there, else the file named (the app serves no
    files but its figures)."""
    page = space_page(path)
    return f"[{text}]({page}#{anchor})" if page else f"{text}, in {code(path)} of the project's files"


def attention_primer(n_layers: int, n_heads: int, hidden: int) -> str:
    """What attention, a head and a layer compute, in a few sentences with the model's own sizes, and where the
    code tour computes one layer by hand (the tab's closed accordion above its views)."""
    return (f"Each of the model's {n_layers} layers updates every token's vector twice. First **attention**: each "
            "token scores every token (its *query* · their *key*, scaled), a softmax turns that row of scores into "
            "weights that sum to 1 (one row of the heatmap), and the token takes in that weighted mix of the "
            f"tokens' *values*. A **head** is one such set of weights; a layer runs {n_heads} side by side, each "
            f"projecting the whole {hidden}-number vector down to {hidden // n_heads} numbers for its query, key and "
            "value, so they can follow different relations; their outputs are joined and projected back. "
            "Then a small two-layer network (**feed-forward**) works on each token alone. Each block adds its "
            "input back (the **residual connection**) and normalises the sum (LayerNorm). One layer by hand, from "
            f"the shipped weights: {doc_link(*CODE_TOUR, 'A tour of the code, section 4')}.")


def previous_token_head(tokens: Tokens, attentions: np.ndarray) -> tuple[int, int, float] | None:
    """The head that gives the previous token the largest share of its attention, as "All heads of the layer"
    counts it (`head_roles.pattern_shares`): (layer, head, that share), both numbered from 1; None when even that
    head's role (`head_roles.role`) is not "previous token"."""
    shares = head_roles.pattern_shares(attentions, tokens.labels)  # (L, nh, P)
    previous = shares[..., head_roles.PATTERNS.index("previous token")]
    layer, head = np.unravel_index(int(np.argmax(previous)), previous.shape)
    if head_roles.role(shares[layer, head]) != "previous token":
        return None
    return int(layer) + 1, int(head) + 1, float(previous[layer, head])


def attention_tab_hint(previous: tuple[int, int, float] | None = None) -> str:
    """The tab's hint, above its text box (short: on a phone, all of it comes first); `previous`
    (`previous_token_head` in the served MLM, found at start-up): the head that follows one relation most clearly,
    one example away."""
    clear = (f" (in the fill-mask model, layer {previous[0]}, head {previous[1]}: each token looks at the one before "
             "it)" if previous else "")
    return (f"**Try** single heads{clear}, and hover over (or tap) “it” in the head view; then "
            "FacebookAI/roberta-base, the same code with far more training. **Notice** how many heads "
            "park their attention on &lt;s&gt;, &lt;/s&gt; or the full stop (“All heads of the layer” counts "
            "them): attention shows how each token mixes the others' vectors, not how much information actually "
            "moves, nor why the model decides.")


def layer_choices(n_layers: int) -> list[int]:
    return list(range(1, n_layers + 1))


def head_choices(n_heads: int) -> list[tuple[str, object]]:
    return [("average of heads", "average")] + [(f"head {h}", h) for h in range(1, n_heads + 1)]


# What the API documents the Layer and Head pickers' values to be. Gradio documents every dropdown as a string
# enum of its start-up choices, which its API page and gradio_client's view_api write as Literal['1', ..., '6']:
# strings, and only the shipped model's six layers. A layer or head is a whole number, up to the count of the tab's
# model (12 of each in roberta-base); the handlers check it (`parse_int`, which also takes "2" and "head 2").
LAYER_API_TYPE = {"type": "integer", "minimum": 1, "additional_description": "1 to the model's number of layers"}
HEAD_API_TYPE = {"anyOf": [{"type": "string", "enum": ["average"]}, {"type": "integer", "minimum": 1}],
                 "additional_description": "“average” of the heads, or one head: 1 to the model's heads per layer"}


def api_typed(dropdown: gr.Dropdown, api_type: dict) -> gr.Dropdown:
    """`dropdown`, documented to the API as `api_type` (a JSON schema) instead of Gradio's string enum; what the
    page shows and what the handler receives are unchanged."""
    dropdown.api_info = lambda: dict(api_type)
    return dropdown


def _view(view, names: str = VIEW_NAMES) -> str:
    """`view` as VIEWS name it (in any case, spaces around); `names`: what the endpoint takes, in its message."""
    name = view.strip().lower() if isinstance(view, str) else view
    if name not in VIEWS:
        raise fail(f"The view must be {names}, got “{short_text(str(view))}”.")
    return name


def _wanted(view, depends) -> set:
    """The views to draw: those in `depends` (what the event changes), all of them for "all" (the API's
    default), else only `view` (the visible sub-tab) when it is one of them."""
    if view is None or (isinstance(view, str) and view.strip().lower() in ("", "all")):
        return set(depends)
    return {_view(view, f"all, {VIEW_NAMES}")} & set(depends)


class AttentionHandlers(HandlerBase):
    def __init__(self, models: Models, chooser: ModelChooser | None = None):
        super().__init__(models, chooser)
        self._attention_cache: OrderedDict = OrderedDict()  # (model, text) -> (tokens, attentions)
        self._attention_lock = threading.Lock()

    def _attention_model(self, model):
        """The attention tab's model: "mlm" or "sentiment" (the shipped ones; SHIPPED is "mlm"), or a Hub
        repo id of either kind (`ModelChooser.get_any`); the shipped ones in any case, spaces around. Returns (its
        name: the shipped one's "mlm" or "sentiment", else the repo id, also its name in the attention cache; the
        model)."""
        if is_shipped(model):
            model = "mlm"
        if not isinstance(model, str):
            raise fail("model must be “mlm”, “sentiment” or a Hugging Face Hub repo id, got "
                       f"{type(model).__name__}.")
        model = model.strip()
        if model.lower() in KINDS:
            return model.lower(), self._need(model.lower())
        loaded = self.chooser.get_any(model)
        return loaded.source, loaded

    @staticmethod
    def _lower_case_note(model, loaded) -> str:
        """The notes' line on case, decided by the model (`reads_lower_case`: its tokenizer lower-cases), whichever
        slot holds it: the server's classifier was fine-tuned on lower-cased text; another model's tokenizer
        lower-cases it. "" for a model that reads the text in its own case."""
        if not reads_lower_case(loaded):
            return ""
        if isinstance(model, str) and model.strip().lower() == "sentiment":
            sentiment = KINDS["sentiment"]
            return LOWER_CASE_NOTE.format(classifier=sentiment.own_name.capitalize() if sentiment.replaced
                                          else "The shipped classifier")
        return TOKENIZER_LOWER_CASE_NOTE

    def attention_data(self, model, text: str) -> tuple[Tokens, object]:
        """Tokens and attentions (L, nh, T, T) of one text as the model reads it, cached for the pickers."""
        name, loaded = self._attention_model(model)
        return self._cached_attention(name, loaded, text)

    def _cached_attention(self, name: str, loaded, text: str) -> tuple[Tokens, object]:
        cache_key = (name, text)
        with self._attention_lock:
            if cache_key in self._attention_cache:
                self._attention_cache.move_to_end(cache_key)
                return self._attention_cache[cache_key]
        tokens = tokenize(loaded.tokenizer, text, loaded.config.max_length)
        attentions = explain.attention_maps(loaded.model, tokens.ids)
        if attentions.nbytes > ATTENTION_CACHE_BYTES:  # kept, it would push every other text out and still not fit
            return tokens, attentions
        with self._attention_lock:
            self._attention_cache[cache_key] = (tokens, attentions)
            while (len(self._attention_cache) > ATTENTION_CACHE_SIZE
                   or sum(maps.nbytes for _, maps in self._attention_cache.values()) > ATTENTION_CACHE_BYTES):
                self._attention_cache.popitem(last=False)
        return tokens, attentions

    def _attention_inputs(self, text, layer, head, model):
        name, loaded = self._attention_model(model)
        text = clean_text(text).strip()  # spaces at the ends would be tokens of their own, rows of the maps
        cfg = loaded.config
        if loaded.key == "sentiment":  # a classifier reads text as the Sentiment tab gives it (lower-cased or not)
            text = classifier_text(text, loaded.tokenizer, cfg.max_length, lowercase=reads_lower_case(loaded))
        text = cut_to_window(text, loaded.tokenizer, cfg.max_length)  # also what the cache keeps
        layer = parse_int(layer, "Layer", 1, cfg.num_hidden_layers)
        head = parse_head(head, cfg.num_attention_heads)
        tokens, attentions = self._cached_attention(name, loaded, text)
        return loaded, tokens, attentions, layer, head

    @staticmethod
    def _query(tokens: Tokens, token) -> int:
        """The picked token: none (None or empty: the picker before the first drawing) is the default one
        (`explain.default_token`); any other must be one of this text's, checked as `attention_token` checks it
        (a plain error, not the default token drawn in its place)."""
        if token is None or (isinstance(token, str) and not token.strip()):
            return explain.default_token(tokens)
        return parse_int(token, "Token", 0, len(tokens.labels) - 1)

    @staticmethod
    def _bars(tokens: Tokens, matrix, query: int, what: str) -> tuple:
        """(the bars of where token `query` attends, their text version: every weight, largest first)."""
        labels = tokens.labels
        title = f"Where token {query} “{labels[query]}” attends ({what})"
        return (figures.attention_bars(matrix[query], labels, query, title),
                head_roles.token_targets_html(labels, matrix[query], query, title))

    def _draw(self, tokens, attentions, layer, head, token, wanted) -> dict:
        """The views named in `wanted` (a set of VIEWS), drawn; the others None (the UI leaves them as they
        are, and a sub-tab draws its view when it is opened). `token`: the picked token, checked (`_query`) only
        when its view is drawn: a token typed wrong in its picker does not stop a layer or head change from
        drawing the views that do not read it. The head view is HTML, drawn in milliseconds; each matplotlib
        figure costs ~0.3-0.5 s to draw and send, which is why only the visible one is drawn."""
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
                                                         cbar_label="rollout weight (attention multiplied through "
                                                                    "the layers)")
            views["rollout_text"] = head_roles.top_targets_html(labels, rollout, title, verb="draws most on")
        if "token" in wanted:
            views["token"], views["token_text"] = self._bars(tokens, matrix, self._query(tokens, token), what)
        return views

    @user_errors
    def attention(self, text, layer=1, head="average", model="mlm", view="all"):
        """(heatmap, all heads of the layer, rollout, bars of the default token, token picker update, notes,
        head view HTML, layer picker update, head picker update, then the text versions of the heatmap, the
        layer's heads, the rollout and the bars). `model`: "mlm", "sentiment" or a Hub repo id; `view`: "all"
        draws every view; "heads", "heatmap", "grid", "rollout" or "token" only that one, with its text
        version (the others are None). A picker update arrives as {"__type__": "update", "choices", "value"}."""
        wanted = _wanted(view, VIEWS)
        loaded, tokens, attentions, layer, head = self._attention_inputs(text, layer, head, model)
        if tokens.truncated:
            warn_truncated(loaded.config.max_length)
        labels, query = tokens.labels, explain.default_token(tokens)
        views = self._draw(tokens, attentions, layer, head, query, wanted)
        picker = gr.update(choices=[(f"{i}: {label}", i) for i, label in enumerate(labels)], value=query)
        n_layers, n_heads = attentions.shape[:2]
        # the text named: Layer, Head, Token and the sub-tabs redraw this one, not a text edited since in the box;
        # as read (no control characters) and on one line (its line breaks split the notes into paragraphs)
        quoted = " ".join(clean_text(text).split())
        shown = short_text(quoted, 60)
        shown = shown if shown == quoted else shown[:-1].rsplit(" ", 1)[0].rstrip() + "…"  # at a word's end
        notes = (f"Drawn for “{md_escape(shown)}”: {len(labels)} tokens"
                 f"{' (cut to the maximum length)' if tokens.truncated else ''} · "
                 f"{md_escape(loaded.title)} · {n_layers} layers × {n_heads} heads. Layer, Head and the views "
                 "redraw this text; after editing it, press Show attention (or Enter). "
                 f"{self._lower_case_note(model, loaded)}"
                 "Each row of a heatmap is one token's attention over all tokens (it sums to 1); the map's colours "
                 "run from 0 to its largest weight (the colour bar under it), where “All heads of the layer” uses one "
                 "0-100% scale for every head. "
                 "Rollout multiplies attention through every layer, counting the residual connection: it counts "
                 "every attention weight as information moved, so heads that park on &lt;s&gt; make &lt;s&gt; look "
                 "like every token's main source. A rough heuristic, not a measurement.")
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
        views = self._draw(tokens, attentions, layer, head, token, wanted)
        return (views["heatmap"], views["grid"], views["token"], views["heads"], views["heatmap_text"],
                views["grid_text"], views["token_text"])

    @user_errors
    def attention_head(self, text, layer=1, head="average", token=None, model="mlm", view="all"):
        """A new head: (heatmap, bars of the picked token, head view, the text versions of the heatmap and of the
        bars). `view` as in `attention`."""
        wanted = _wanted(view, {"heatmap", "token", "heads"})
        _, tokens, attentions, layer, head = self._attention_inputs(text, layer, head, model)
        views = self._draw(tokens, attentions, layer, head, token, wanted)
        return views["heatmap"], views["token"], views["heads"], views["heatmap_text"], views["token_text"]

    @user_errors
    def attention_view(self, text, layer=1, head="average", token=None, model="mlm", view="heads"):
        """One view (one of VIEWS), drawn when its sub-tab is opened; a view with a text version (TEXTS) comes
        as (figure, text)."""
        view = _view(view)
        _, tokens, attentions, layer, head = self._attention_inputs(text, layer, head, model)
        views = self._draw(tokens, attentions, layer, head, token, {view})
        return (views[view], views[TEXTS[view]]) if view in TEXTS else views[view]

    @user_errors
    def attention_token(self, text, layer=1, head="average", token=1, model="mlm"):
        """(bar chart of where one token (0-based index, <s> is 0) attends in the chosen layer/head, its text
        version: every weight, largest first)."""
        _, tokens, attentions, layer, head = self._attention_inputs(text, layer, head, model)
        query = parse_int(token, "Token", 0, len(tokens.labels) - 1)  # as `_query` checks the other endpoints'
        matrix, what = explain.head_matrix(attentions, layer, head)
        return self._bars(tokens, matrix, query, what)

    def attention_model(self, choice, current="mlm", layer=None, head="average"):
        """The attention tab's model box: (box value, the tab's model, a status line in HTML, layer picker
        update, head picker update). A model that can be used becomes the tab's model, the pickers offer its
        layers and heads (the current ones kept where it has them); one that cannot leaves the tab on `current`
        and the box on what was typed (`model_choice.refused`), with the reason next to the box (offline: that it
        needs the Hub)."""
        current = "mlm" if is_shipped(current) else current
        try:
            value, loaded = self._attention_model(choice)  # the box shows a shipped one as its list names it
        except (ModelChoiceError, gr.Error) as err:
            message = err.message if isinstance(err, gr.Error) else str(err)
            return (*refused("mlm", choice, current, message), gr.skip(), gr.skip())
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

    def swap_hint(self, text: str, swap: tuple[str, str], link: tuple[str, str]) -> str:
        """Whether a head of the loaded MLM follows what "it" means when one word of `text` is swapped for another
        that changes it (Winograd's trophy and suitcase, too big or too small): such a head gives `link[1]` less of
        `link[0]`'s attention once "it" means the other noun. The head whose share falls most, and whether the fall
        is clear: at least `explain.CLEAR_LINK` times the share an even spread would give, as a clear link's share
        must be. "" when a version lacks either word as one token."""
        try:
            versions = [self.attention_data("mlm", text.replace(swap[0], word)) for word in swap]
            weights = [explain.link_weights(tokens, attentions, link) for tokens, attentions in versions]
        except Exception:  # a hint is not worth failing the start-up for, but a crash is logged, not hidden
            log.exception("could not compare the swapped texts' attention")
            return ""
        if any(w is None for w in weights):
            return ""
        (a, b), (it, noun) = swap, link
        before, after = weights  # (L, nh) each: the share of its attention "it" gives the noun, in each version
        fall = before - after  # (L, nh)
        layer, head = np.unravel_index(int(np.argmax(fall)), fall.shape)
        n_tokens = len(versions[0][0].labels)
        question = (f"In the trophy example, swap “{a}” for “{b}” and “{it}” means the other noun: does any head "
                    f"follow it, giving “{noun}” less of “{it}”'s attention?")
        if fall[layer, head] <= 0:
            return f"{question} No head does: none of the {fall.size} gives “{noun}” less with “{b}” than with “{a}”."
        was, now = (format_probability(float(w[layer, head])) for w in weights)
        points = f"{100 * float(fall[layer, head]):.3g} points (from {was} of “{it}”'s attention with “{a}” to {now} " \
                 f"with “{b}”)"
        clear = explain.CLEAR_LINK / n_tokens
        bar = (f"{100 * clear:.3g} points a clear one takes: twice the {format_probability(1 / n_tokens)} an even "
               f"spread over the {n_tokens} tokens would give")
        if fall[layer, head] >= clear:
            return (f"{question} Layer {layer + 1}, head {head + 1} does: its share on “{noun}” falls {points}, the "
                    f"largest fall of the {fall.size} heads, at least the {bar}.")
        return (f"{question} No head clearly does: the largest fall of the {fall.size} heads, layer {layer + 1}, "
                f"head {head + 1}'s, is {points}, under the {bar}.")

    def previous_token_head(self, text: str) -> tuple[int, int, float] | None:
        """`previous_token_head` in the loaded MLM's attention on `text`, found at start-up for the tab's example
        and hint; None when it has none, or on a crash (logged)."""
        try:
            return previous_token_head(*self.attention_data("mlm", text))
        except Exception:  # an example is not worth failing the start-up for, but a crash is logged, not hidden
            log.exception("could not find the previous-token head")
            return None

    def attention_hint(self, text: str, link: tuple[str, str]) -> str:
        """Where to look in the attention tab, found in the loaded MLM at start-up (`explain.link_hint`)."""
        try:
            return explain.link_hint(*self.attention_data("mlm", text), link)
        except Exception:  # a hint is not worth failing the start-up for, but a crash is logged, not hidden
            log.exception("could not find the attention hint")
            return ""
