"""The Embeddings tab's handlers (`EmbeddingHandlers`): what the fill-mask model learned in its embedding
tables: a word's nearest tokens and analogies (`embedding_view`), a map of words (`word_map`), how alike the
positions are (`position_view`); the figures kept for the requests that ask for them again, and the start-up note on
the analogy probe."""
from __future__ import annotations

import logging

from . import embedding_view, position_view, word_map
from .examples import ANALOGY_PROBE
from .formatting import short_text
from .handler_base import HandlerBase, KeptResults
from .model_choice import SHIPPED, ModelChooser
from .models import Models
from .training_counts import counts_for
from .validation import fail, parse_int, user_errors

log = logging.getLogger(__name__)

FIGURE_CACHE_SIZE = 8  # embedding figures kept: the default word map and the positions, per model, and a few more
EMBEDDINGS_TAB = "Embeddings"  # named in the model messages of the tab (it reads the fill-mask model's embeddings)
WORDS_ONLY = "Only tokens that begin a word"  # the words_only box, as the page labels it


def add_counts(result: dict, tokenizer):
    """Adds to each of the result's neighbours, in place, "seen": {kind of text: how often it holds the token},
    as the Tokens tab's rows show it; returns the pretraining counts of `tokenizer`'s vocabulary (`counts_for`),
    or None (then nothing is added)."""
    counts = counts_for(tokenizer)
    if counts is not None:
        for n in result["neighbours"]:
            n["seen"] = dict(zip(counts.names, counts.seen(int(n["token"]))))
    return counts


class EmbeddingHandlers(HandlerBase):
    def __init__(self, models: Models, chooser: ModelChooser | None = None):
        super().__init__(models, chooser)
        self._figures = KeptResults(FIGURE_CACHE_SIZE)  # per embedding table: (its version, what) -> the figure

    def analogy_probe_note(self) -> str:
        """How many of the probe's analogies the shipped fill-mask model's embeddings answer, in Markdown,
        measured at start-up (`embedding_view.score_analogies` on `demo.examples.ANALOGY_PROBE`)."""
        try:
            loaded = self.models.mlm
            result = embedding_view.score_analogies(loaded.model.roberta.embeddings.word_embeddings.weight,
                                                    loaded.tokenizer, ANALOGY_PROBE)
            return embedding_view.probe_markdown(result, "the shipped model's embeddings")
        except Exception:  # a note is not worth failing the start-up for (another tokenizer...): logged, not raised
            log.exception("could not score the analogy probe for the Embeddings tab's note")
            return ""

    def _embeddings(self, model):
        """The chosen fill-mask model and its embeddings module (word and position tables)."""
        loaded = self._need("mlm", model, EMBEDDINGS_TAB)
        return loaded, loaded.model.roberta.embeddings

    @staticmethod
    def _neighbours_options(k, words_only) -> tuple[int, bool]:
        k = parse_int(k, "Neighbours", 1, embedding_view.MAX_K)
        if words_only is None:  # (an API call that sent nothing: not the text "None")
            raise fail(f"“{WORDS_ONLY}” is empty: send true or false.")
        if not isinstance(words_only, bool):  # text quoted as typed, anything else as it is
            got = f"“{short_text(words_only)}”" if isinstance(words_only, str) else short_text(str(words_only))
            raise fail(f"“{WORDS_ONLY}” must be ticked or not (true or false), got {got}.")
        return k, words_only

    @user_errors
    def neighbours(self, word, k=10, words_only=True, model=SHIPPED):
        """The word's nearest tokens by cosine similarity of their embeddings: (the HTML table, the same as data:
        {"word", "pieces", "words_only", "neighbours": [{"token" (id), "token_str", "label" (as the table shows
        it), "similarity", "seen" (how often each kind of pretraining text holds it)}], "baseline" (the word's mean
        similarity to every ordinary token)})."""
        k, words_only = self._neighbours_options(k, words_only)
        loaded, embeddings = self._embeddings(model)
        result = embedding_view.nearest_words(embeddings.word_embeddings.weight, loaded.tokenizer,
                                              self._word(word, "The word"), k, words_only)
        counts = add_counts(result, loaded.tokenizer)
        return embedding_view.neighbours_html(result, f"Nearest to “{result['word']}”", counts), result

    @user_errors
    def analogy(self, a, b, c, k=10, words_only=True, model=SHIPPED):
        """“a is to b as c is to ?”: the tokens nearest to b − a + c, as `neighbours` returns them, with "query"
        ([a, b, c]), "query_pieces" and "nearest_unruled" (the nearest word were a, b and c allowed); the title names
        the best one."""
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
        FIGURE_CACHE_SIZE: the same words mapped again, API calls and a model chosen again ask for a figure drawn
        before (the position figure depends on the model only), and the same figure object lets the app's `Plot`
        send the image it rendered before. An entry is the table's only while that table lives: a Hub model's table
        freed (its model evicted) leaves its id to the next one's."""
        return self._figures.get(table, (table._version, what), draw)

    @user_errors
    def word_map(self, words, model=SHIPPED):
        """The words' embeddings projected to two dimensions (PCA): (a figure, the same in words: the words left
        out and why, each word's coordinates). `words`: separated by commas, semicolons or new lines, or by spaces
        where there is none of those."""
        loaded, embeddings = self._embeddings(model)
        words = word_map.parse_words(self._word(words, "The words", limit=""))  # a box of several: a text's limit
        table = embeddings.word_embeddings.weight
        return self._figure(table, tuple(words), lambda: word_map.word_map(table, loaded.tokenizer, words))

    @user_errors
    def positions(self, model=SHIPPED):
        """How alike the learned position embeddings are, pair by pair: (a figure, the same in numbers: the mean
        similarity at each distance), drawn once per model."""
        loaded, embeddings = self._embeddings(model)
        table, first = embeddings.position_embeddings.weight, loaded.config.pad_token_id + 1
        return self._figure(table, "positions", lambda: (position_view.position_similarity_figure(table, first),
                                                         position_view.positions_html(table, first)))
