"""The Tokens tab's handlers (`TokensHandlers`): a text as the fill-mask model's byte-level BPE tokenizer
cuts it, and one word replayed merge by merge (`bpe_view`)."""
from __future__ import annotations

import html

import gradio as gr

from . import bpe_view
from .formatting import SPACE_LABEL, readable, spaced
from .handler_base import HandlerBase
from .model_choice import SHIPPED
from .training_counts import counts_for
from .validation import INVISIBLE_RE, clean_text, composes, error_html, user_errors

TOKENS_TAB = "Tokens"  # named in the model messages of the tab (it reads the fill-mask model's tokenizer)


class TokensHandlers(HandlerBase):
    @user_errors
    def tokens(self, text, model=SHIPPED):
        """(the text's tokens in HTML, the same as data: {"tokens": [{"token", "id", "text", "start",
        "end", "special", "word_start", "seen"}], "characters", "bytes", "words", "truncated", "max_length",
        "read_characters", "read_words", "tokens_per_word"}, the word picker update (the words
        of the part the model reads that merge by merge can replay, the default one picked), merge by merge for
        that word in HTML, its steps as data). A cut text is said in the view itself (no pop-up warning). The picker
        update arrives as {"__type__": "update", "choices", "value"}."""
        loaded = self._need("mlm", model, TOKENS_TAB)
        cleaned = clean_text(text)
        # said in the view, as this tab shows what the model reads: what was removed, and whether anything was composed
        removed, composed = INVISIBLE_RE.findall(text), composes(text)
        text = cleaned
        counts = counts_for(loaded.tokenizer)
        rows = bpe_view.token_rows(loaded.tokenizer, text, loaded.config.max_length, counts)
        try:  # a tokenizer that is not byte-level BPE still shows its tokens, with the reason for no merges
            pretokens = bpe_view.pretokens(loaded.tokenizer, text[:rows["read_characters"]])
            words = [w for w in pretokens if len(w) <= bpe_view.MAX_PRETOKEN_BYTES]
            word = bpe_view.pick_pretoken(loaded.tokenizer, words)
            merges, steps = self.bpe_merges(word, model) if word else ("", None)
            if not pretokens:  # said, not an empty view
                merges = error_html(html.escape(bpe_view.ONLY_SPECIAL, quote=False))
            if too_long := [w for w in pretokens if len(w) > bpe_view.MAX_PRETOKEN_BYTES]:  # said, not silently missing
                note = html.escape(bpe_view.left_out(too_long), quote=False)
                merges = f'<p class="bpe-cut">{note}</p>' + merges if word else error_html(note)
        except (ValueError, gr.Error) as err:  # a gr.Error of `bpe_merges` (`user_errors`) is escaped already
            words, word, steps = [], None, None
            merges = error_html(err.message if isinstance(err, gr.Error) else html.escape(str(err), quote=False))
        picker = gr.update(choices=[(readable(w), w) for w in words], value=word)
        shipped = self.models.mlm  # its vocabulary's size, beside RoBERTa's, whichever model the tab shows
        shipped_size = shipped.tokenizer.get_vocab_size() if shipped.available else None
        return bpe_view.tokens_html(rows, counts, removed, shipped_size, composed), rows, picker, merges, steps

    @user_errors
    def bpe_merges(self, word, model=SHIPPED):
        """One word replayed merge by merge, from its bytes to its tokens: (HTML, the steps as data:
        [{"pieces", "merged", "rank"}]). `word`: one word as the text has it, its leading space included
        (" tokenization"), as the tokens tab's picker shows it ("␣tokenization": ␣ is a space), or as its
        values are (byte-level, "Ġtokenization")."""
        loaded = self._need("mlm", model, TOKENS_TAB)
        word = self._word(word, "The word", bpe_view.LIMIT_TEXT)
        # the picker's label typed back ("␣has"); a leading "Ġ" is left to `merge_steps`, which reads a word in the
        # vocabulary's writing whole (the picker's values: "ĠcafÃ©" is " café")
        word = spaced(word, SPACE_LABEL)
        steps = bpe_view.merge_steps(loaded.tokenizer, word)
        return bpe_view.merges_html(word, steps, loaded.tokenizer), steps
