"""The Fill mask tab's handlers (`FillMaskHandlers`): every <mask>'s predictions or the user's candidate
words scored, the same text through another model side by side, and layer by layer how each answer forms
(`fill_mask_view`, `layer_lens`)."""
from __future__ import annotations

import gradio as gr

from roberta.run_metrics import said_list

from .fill_mask_view import (comparison_html, completed_sentence, mask_labels, mask_spaces, prediction_fill,
                             predictions_html)
from .handler_base import HandlerBase
from .layer_lens import layer_predictions, layers_html
from .model_choice import COMPARISON, SHIPPED, is_shipped, same_model
from .models import KINDS
from .tokens_view import Tokens, tokenize
from .training_counts import counts_for
from .validation import (MASK, MASK_RE, MAX_TOP_K, candidate_words, clean_text, count_masks, fail, parse_int,
                         user_errors, warn_truncated)


class FillMaskHandlers(HandlerBase):
    @user_errors
    def fill_mask(self, text, top_k=5, targets=None, model=SHIPPED):
        """Predictions for every <mask>: (completed sentence, {token: probability} per mask slot (an unused slot:
        empty), raw, the readable view: per mask, every prediction with its probability and a bar scaled to the top
        one). `model`: "shipped" (ours) or a Hugging Face Hub repo id."""
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
        words = candidate_words(targets, loaded.tokenizer)  # "Ġ" a space only where it makes a vocabulary entry
        tokens, full_length = self._masked_text(loaded, text, warn=tab is None)  # a comparison warned once
        text = tokens.text  # its masks checked, and spelt <mask>, by _masked_text
        n_masks = text.count(MASK)
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
        read = text
        if tokens.truncated:  # the completed sentence ends where the model stopped reading
            read = text[:max(end for _, end in tokens.offsets)]  # <s> and </s> span nothing: (0, 0)
        filled = completed_sentence(read, fills)
        if len(read) < full_length:
            filled.append((" …", None))
        raw = [[dict(r) for r in row] for row in per_mask]
        outputs = (filled, *mask_labels(per_mask, loaded.tokenizer, mask_spaces(text)), raw,
                   predictions_html(per_mask, words, tokens, heading, loaded.tokenizer, counts_for(loaded.tokenizer)))
        return outputs, loaded, text, per_mask

    @staticmethod
    def _masked_text(loaded, text, warn: bool = True) -> tuple[Tokens, int]:
        """A fill-mask text checked (one to MAX_MASKS masks, every one within the tokens the model reads, counted
        in tokens: a text cut by characters may still hold more; `warn`: `count_masks`'), its masks spelt <mask>
        ([MASK] is read as it), as the model reads it (`tokenize`: `Tokens.text` is the text cut to what the
        model reads); with the length the text had before the cut."""
        text = MASK_RE.sub(MASK, clean_text(text))
        n_masks = count_masks(text, warn)
        tokens = tokenize(loaded.tokenizer, text, loaded.pipeline.max_length)
        read = tokens.ids.count(loaded.tokenizer.token_to_id(MASK))
        if read < n_masks:
            raise fail(_beyond_the_window(read, n_masks, loaded.pipeline.max_length))
        return tokens, len(text)

    @user_errors
    def fill_mask_compare(self, text, top_k=5, targets=None, model=SHIPPED, other=KINDS["mlm"].suggested[0]):
        """The text through the tab's model and `other` (a Hub repo id, or "shipped" when the tab runs another
        model), side by side: (the HTML view, the same as data: per model its title and, per mask, the
        predictions in `transformers`' format). An empty `other` is no choice (not the shipped model)."""
        if other is None or (isinstance(other, str) and not other.strip()):  # not the shipped model: no choice
            raise fail("No model to compare with was chosen: choose one in “Compare with”.")  # the API's `other`
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
            except (gr.Error, ValueError) as err:  # say which model, whatever failed: one may read fewer tokens
                message = str(getattr(err, "message", err))  # or not load (a ValueError), a message naming it
                raise fail(message if name in message else f"{name}: {message}") from None
            title = name if is_shipped(choice) else loaded.title
            columns.append((title, per_mask, outputs[-1], loaded.tokenizer))
            data.append({"model": title, "predictions": outputs[-2]})
            texts.append(read)
        shown = min(texts, key=len)  # what both read (a long text is cut to the model's window)
        shown = shown if len(shown) <= 300 else shown[:300] + " …"
        return comparison_html(shown, columns), data

    @user_errors
    def fill_mask_layers(self, text, model=SHIPPED):
        """How each mask's answer forms, layer by layer: (the HTML view, the same as data:
        per mask, the answer and per layer, the embeddings first, the top guesses and the answer's rank and
        probability there)."""
        loaded = self._need("mlm", model)
        tokens, _ = self._masked_text(loaded, text)
        per_mask = layer_predictions(loaded.pipeline, tokens.text)
        return layers_html(per_mask, loaded.tokenizer), per_mask

    @staticmethod
    def _score_candidates(pipe, text: str, words: list[str]) -> list[list[dict]]:
        """Every candidate word scored at every mask, in the token form the model reads there (byte-level BPE,
        `mask_spaces`): with its leading space ("Ġ" form) after whitespace and at the start of the text, as the
        model's own top answers there are, without one after anything else ("foot<mask>", "(<mask>)"). The
        pipeline scores one form per call, so the text goes through it once per form its masks need. A word that
        is not one token is scored by its first piece in that form (as transformers); each result lists under
        "candidates" the words it scored (several when they share that piece), in the user's order. A word whose
        first piece is whitespace alone or part of a character's bytes (an emoji's) is refused with a plain
        message: that piece's score says nothing about the word, and a row for it would rank with the real
        answers."""
        words = list(dict.fromkeys(words))  # "Paris, Paris" is one candidate
        spaced = [bool(space) for space in mask_spaces(text)]
        forms, unscorable = {}, {}  # form -> {token id: words}; word -> what its first piece is
        for form in sorted(set(spaced)):
            by_token = forms[form] = {}
            for word in words:
                if (found := pipe.target_piece(" " + word if form else word)) is None:
                    continue  # no token at all: skipped, as the pipeline skips it
                token = found[0]
                by_token.setdefault(token, []).append(word)
                piece = pipe.tokenizer.decode([token], skip_special_tokens=False)
                if not piece.strip() or "\ufffd" in piece:
                    unscorable.setdefault(word, "part of a character" if piece.strip() else
                                          "a lone space" if piece == " " else "whitespace alone")
        if unscorable:
            quoted = said_list([f"“{w}”" for w in unscorable])
            one = len(unscorable) == 1
            raise fail(f"{quoted} cannot be scored: {'its' if one else 'each one’s'} first piece is "
                       f"{' or '.join(dict.fromkeys(unscorable.values()))}, which says nothing about the word. "
                       f"Leave {'it' if one else 'them'} out, or try a word the vocabulary has.")
        rows = {}
        for form, by_token in forms.items():
            # the pieces themselves, vocabulary entries (so the library's TargetPieceWarning, for a caller told
            # nothing else, stays out of the server's log: each row says how its words were scored)
            pieces = [pipe.tokenizer.id_to_token(token) for token in by_token] or words  # (or none: its error)
            results = pipe(text, top_k=len(pieces), targets=pieces)  # all of them, whatever top-k
            per_mask = results if len(spaced) > 1 else [results]
            rows[form] = [[{**r, "candidates": by_token.get(r["token"], [])} for r in row] for row in per_mask]
        return [rows[form][i] for i, form in enumerate(spaced)]


ORDINAL_SUFFIXES = {1: "st", 2: "nd", 3: "rd"}  # 1st, 2nd, 3rd, then 4th, 5th (at most MAX_MASKS)


def _beyond_the_window(read: int, n_masks: int, max_length: int) -> str:
    """What the user is told when only the first `read` of the text's `n_masks` masks are within the `max_length`
    tokens the model reads: which masks are not, by their place when only some are ("The 2nd mask", "The 4th and 5th
    masks"; at most MAX_MASKS, so no "11th")."""
    places = [f"{i}{ORDINAL_SUFFIXES.get(i, 'th')}" for i in range(read + 1, n_masks + 1)]
    if read == 0:
        which = "The mask is" if n_masks == 1 else "The masks are"
    elif len(places) == 1:
        which = f"The {places[0]} mask is"
    else:
        which = f"The {said_list(places)} masks are"
    return (f"{which} beyond the first {max_length} tokens, which is all the model reads: shorten the text or move "
            f"{'the mask' if n_masks - read == 1 else 'them'} earlier.")
