"""The Sentiment tab's handlers (`SentimentHandlers`): a text classified, each word's push towards the
positive label, or for more than two labels towards the answer (integrated gradients, `explain`), and what if its
strongest word were removed or negated (`counterfactual`)."""
from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from roberta.text import lower_cases

from . import counterfactual, explain
from .handler_base import HandlerBase, KeptResults
from .model_choice import SHIPPED, ModelChooser
from .models import Models
from .tokens_view import Tokens, classifier_text, special_ids, tokenize
from .validation import LONG_TEXT_TOKENS, clean_text, fail, user_errors, warning, windows_note

READINGS_KEPT = 8  # texts read, kept: the page's What if? reads the text its classify has just read


def classifier_input(loaded, text: str, lowercase: bool) -> str:
    """What the classifier `loaded` reads of `text` (`classifier_text`, as in fine-tuning): up to
    LONG_TEXT_TOKENS tokens, which its pipeline reads in overlapping windows; `lowercase` for a classifier that
    reads lower-cased text (`reads_lower_case`)."""
    return classifier_text(text, loaded.tokenizer, loaded.pipeline.max_length, lowercase=lowercase,
                           read_tokens=LONG_TEXT_TOKENS)


def reads_lower_case(loaded) -> bool:
    """Whether the classifier `loaded` reads lower-cased text, decided by the model, whichever slot holds it: its
    tokenizer lower-cases (`roberta.text.lower_cases`), as every classifier `train.finetune` saves does (fine-tuned
    on lower-cased text); a cased one (roberta-large's, in the server's slot too) reads the text in its own case."""
    return lower_cases(loaded.tokenizer)


def word_pushes(loaded, tokens: Tokens, target: int) -> tuple[list[tuple[int, int, float]], float]:
    """Each word's push towards label `target` of the classifier `loaded` (integrated gradients of its class
    score, `explain.class_score`, summed over the word's tokens) as (start, end, score) in `tokens.text`, and the
    class score of the all-<pad> input they are measured from."""
    tokenizer = loaded.tokenizer
    attributions, _, base_score = explain.integrated_gradients(loaded.model, tokens.ids, target,
                                                               tokenizer.token_to_id("<pad>"), special_ids(tokenizer))
    return explain.merge_words(tokens, attributions), base_score


@dataclass
class SentimentReading:
    """A text as the chosen classifier read it (`Handlers._read_sentiment`): its answer, and each word's push
    towards the `toward` label (integrated gradients, `explain.push_target`) as (start, end, score) in `shown`,
    the text as the user sees it (their own when normalising only changed the case and collapsed whitespace),
    and in `model_text`, the text the classifier read (the same length and places: `explain.in_users_case`);
    `windows_note`: for a text longer than the model reads at once, how it was read ("" otherwise). It holds no
    reference to the model."""

    lowercase: bool
    probabilities: dict[str, float]
    best: str
    toward: str
    away: str
    tokens: Tokens
    words: list[tuple[int, int, float]]
    shown: str
    model_text: str
    windows_note: str = ""
    baseline: float | None = None  # P(toward) of the all-<pad> input the pushes are measured from
    cut_note: str = ""  # that only the first explain.IG_MAX_TOKENS tokens are coloured, for a model reading more


class SentimentHandlers(HandlerBase):
    def __init__(self, models: Models, chooser: ModelChooser | None = None):
        super().__init__(models, chooser)
        self._readings = KeptResults(READINGS_KEPT)  # per classifier: text -> its reading

    def _read_sentiment(self, text, model) -> tuple[object, SentimentReading]:
        """The chosen classifier and one text as it reads it, as `classify` and `counterfactual` both need them.
        The readings of the last READINGS_KEPT texts are kept, each for its classifier while that lives: a Hub
        model evicted by the chooser is not kept alive, and the next one, given its id, finds nothing."""
        loaded = self._need("sentiment", model)
        text = clean_text(text)
        return loaded, self._readings.get(loaded.model, text,
                                          lambda: self._new_reading(loaded, text, reads_lower_case(loaded)))

    @staticmethod
    def _new_reading(loaded, text: str, lowercase: bool) -> SentimentReading:
        """The cleaned `text` through the classifier `loaded` (`_read_sentiment` keeps the result)."""
        pipe, tokenizer = loaded.pipeline, loaded.tokenizer
        model_text = classifier_input(loaded, text, lowercase)
        # the tokens integrated gradients explain: the model's window, or its first IG_MAX_TOKENS in a larger one
        tokens = tokenize(tokenizer, model_text, min(pipe.max_length, explain.IG_MAX_TOKENS))
        cut = tokens.truncated and pipe.max_length > explain.IG_MAX_TOKENS  # the model read on past the cut
        cut_note = explain.ig_cut_note(pipe.max_length) if cut else ""
        read = tokenize(tokenizer, model_text, pipe.max_length) if cut else tokens  # what the model reads at once
        if not read.has_words:  # "<pad><pad>" or "<s> </s>" would otherwise get a verdict on no words at all
            raise fail("The text has no words to classify, only special tokens such as <pad> or <mask>.")
        results = pipe(model_text)  # a long text: in overlapping windows, their logits averaged
        windows, note = results[0].get("windows", 1) if results else 1, ""
        if windows > 1:
            read = len(tokenizer.encode(model_text, add_special_tokens=False).ids)
            note = windows_note(pipe.max_length, windows, cut=read >= LONG_TEXT_TOKENS)
        # fixed polarity for two labels: every word's push towards the positive label, whatever the prediction (a
        # plus is always "towards positive", so "gorgeous" and "bad" never share a colour); for more, towards the
        # answer (a push away from one fixed label may be one towards a third, not the answer)
        target, toward, away = explain.push_target(loaded.model.config, results[0]["label"])
        words, base_score = word_pushes(loaded, tokens, target)
        cfg = loaded.model.config
        baseline = (explain.score_probability(base_score, getattr(cfg, "calibration_temperature", None) or 1.0,
                                              cfg.num_labels)
                    if cfg.problem_type not in ("regression", "multi_label_classification") else None)
        # the user's own case where normalising only lower-cased and collapsed whitespace
        return SentimentReading(lowercase, {r["label"]: float(r["score"]) for r in results},
                                results[0]["label"], toward, away, tokens, words,
                                explain.in_users_case(text, model_text), model_text, note, baseline, cut_note)

    @user_errors
    def classify(self, text, model=SHIPPED):
        """(label probabilities, per-word attribution in [-1, 1] for HighlightedText, explanation). A word's
        score is its push towards the positive label (a classifier without one: its second label): plus towards
        it, minus towards the other label (away from it, for a one-output classifier), whatever the prediction; for
        a classifier of more than two labels, towards its answer: minus towards the other labels. A long text's
        explanation starts with how it was read (in windows), one that may not be English with a caveat; a
        calibrated classifier's ends with the answer's probability before calibration. `model`: "shipped" (ours) or
        a Hugging Face Hub repo id."""
        return self._classify(text, model)[2:]

    @user_errors
    def classify_page(self, text, model=SHIPPED):
        """`classify` as the page shows it, named for the classifier that answered, which may be another than the
        one the page was laid out for (a model box's choice): the answer box (`explain.answer_label`: "Sentiment",
        or "Answer" for labels that name no sentiment) and the words box (`explain.words_label`) as updates, then
        the explanation, the tab's hint (`explain.tab_hint`) and the tab's name as an update (`explain.tab_name`:
        "Sentiment", or "Classify")."""
        config, best, probabilities, highlighted, explanation = self._classify(text, model)
        return (gr.update(value=probabilities, label=explain.answer_label(config)),
                gr.update(value=highlighted, label=explain.words_label(config, best)), explanation,
                explain.tab_hint(config), gr.update(label=explain.tab_name(config)))

    def _classify(self, text, model):
        """(the answering classifier's config, its answer, then `classify`'s three results)."""
        loaded, r = self._read_sentiment(text, model)
        explanation = explain.explanation_markdown(r.shown, r.words, r.toward, r.away, r.best, r.probabilities[r.best],
                                                   r.baseline, r.cut_note, explain.measures_the_answer(loaded.config),
                                                   caveat=explain.language_note(r.shown, loaded.tokenizer))
        # what the calibration changed of this answer, from the probabilities given (`explain.before_calibration`)
        if said := explain.calibration_said(r.best, r.probabilities, loaded.pipeline.temperature, loaded.config):
            explanation += f"\n\n{said}"
        return (loaded.config, r.best, r.probabilities,
                explain.highlighted_words(r.shown, r.words, r.tokens.truncated, rest=explain.REST_READ),
                f"ℹ️ *{r.windows_note}*\n\n{explanation}" if r.windows_note else explanation)

    @user_errors
    def counterfactual(self, text, model=SHIPPED):
        """What if the word that pushed most towards the answer were removed or negated (only removed, for a
        classifier none of whose labels names a sentiment)?
        (Markdown table: each edited text with the change marked, the new answer and the change of P(positive)
        in points, or for a classifier of more than two labels, of P(answer), the label the pushes are measured
        towards, as the words box colours them; the same as data.) The edited texts are classified in one batch,
        normalised as `classify` normalises its text; an edit that leaves no words, only special tokens, is left
        out, as `classify` refuses such a text. `model`: "shipped" (ours) or a Hugging Face Hub repo id."""
        return self._counterfactual(text, model, warn=True)

    @user_errors
    def counterfactual_page(self, text, model=SHIPPED):
        """`counterfactual` as the page runs it: right after classifying the same text, which has said already
        that a long text was read in windows."""
        return self._counterfactual(text, model, warn=False)

    def _counterfactual(self, text, model, warn: bool):
        loaded, r = self._read_sentiment(text, model)
        if warn and r.windows_note:  # the API's /counterfactual alone; the page's classify has said it
            warning(r.windows_note)
        # the words box's pushes: towards the answer for more than two labels (`explain.push_target`)
        word = counterfactual.strongest_word(r.words, 1.0 if r.best == r.toward else -1.0)
        labels = explain.label_names(loaded.config)
        negate = explain.names_a_sentiment(labels)  # negations are sentiment edits: a topic is not negated
        edits, texts = [], []
        for edit in counterfactual.propose(r.shown, word, negate):
            # made in the text the classifier read: the text shown keeps a line break where the classifier read a space
            edited = classifier_input(loaded, edit.apply(r.model_text), r.lowercase)
            # one that leaves only special tokens ("good <mask>" -> "<mask>") is refused by `classify`: not offered
            if tokenize(loaded.tokenizer, edited, loaded.pipeline.max_length).has_words:
                edits.append(edit)
                texts.append(edited)
        if not edits:
            raise fail(counterfactual.nothing_to_try(counterfactual.core_word(r.shown, word[0], word[1]), negate))
        results = loaded.pipeline(texts)  # one batch
        after = [{x["label"]: float(x["score"]) for x in row} for row in results]
        args = (r.shown, word, r.toward, r.probabilities, edits, after)
        return (counterfactual.outcome_markdown(*args, labels=None if negate else labels),
                counterfactual.outcome_data(*args))
