"""Looking inside the models: integrated gradients of the classifier's input embeddings (which words pushed the
answer, and which way), attention maps and attention rollout, and how the Sentiment tab words them.

The models are shared by every request, in eval mode and without gradients: nothing here hooks or changes
them; integrated gradients run the classifier's own forward on input embeddings (`inputs_embeds`, as in
`transformers`) and differentiate with respect to those only.
"""
from __future__ import annotations

import html
import re
import unicodedata
from collections import Counter

import numpy as np
import torch

from roberta.config import label_names as config_label_names
from roberta.model import position_ids_from_input_ids
from roberta.pipelines import score_kind
from roberta.run_metrics import said_list
from roberta.text import names_a_sentiment, sentiment_of

from .counterfactual import core_word
from .examples import SENTIMENT_EXAMPLES
from .formatting import format_probability, md_escape, short_text
from .tokens_view import Tokens, word_spans

IG_STEPS = 20
# The tokens integrated gradients read at most: the shipped classifier's window. They run the model forward and
# backward IG_STEPS times, which for roberta-large over its 512 tokens took 105 s on 2 shared CPUs; a model that reads
# more at once has only the first IG_MAX_TOKENS tokens of its window explained (`IG_CUT_NOTE` says so)
IG_MAX_TOKENS = 128
IG_CUT_NOTE = ("Only the first {n} tokens are coloured, read as if the text ended there: this model reads {window} "
               "tokens at once, but integrated gradients run it forward and backward {steps} times, so they read at "
               "most {n} tokens (the shipped classifier's window). The answer comes from all the text the model read.")
# The path's points run forward and backward together, at most IG_BATCH_POINTS of them and up to IG_BATCH_BUDGET
# tokens × layers × hidden units: the activations autograd keeps for the backward pass grow with both. The shipped
# classifier's 20 points in 5 batches of 4 are as fast as one batch of 20 on 2 CPU cores and take a quarter of the
# memory (0.44 s and 75 MB added, against 0.43 s and 303 MB; 2 a batch: 0.56 s); roberta-large's shape, whose 128
# tokens take 4 points a batch too, 0.95 GiB (19.2 s; one point at a time: 0.29 GiB, 25.6 s). All 20 of
# roberta-large's 512 tokens in one batch held 9.8 GiB. (The 2-core AVX512-BF16 EPYC, 2026-11-30,
# `python benchmarks/bench_integrated_gradients.py`, and with `--roberta-large --points 4 1 --repeats 1`.)
IG_BATCH_POINTS = 4
IG_BATCH_BUDGET = 4 * 128 * 24 * 1024
# The legend's swatches, in the colours they name: the words' colours as the page shows them. HighlightedText
# paints plus rgba(239, 68, 60, a) (red) and minus rgba(128, 90, 213, a) (purple); demo/page.css turns them green
# and pink with a hue-rotate (140deg and 50deg), which gives exactly these (the filter's sRGB matrix: an API
# client's Markdown, with no page.css, shows the colours its words name)
PLUS_RGB, MINUS_RGB = "0, 148, 51", "202, 74, 159"
# A minus word's other sign, for a reader who cannot tell the colours apart (a weak pink and a weak green are one
# light grey to red-green colour blindness): a dotted line under it, whatever its strength. demo/page.css draws it
# under the words with this very rule, and the legend's pink swatch carries it too
MINUS_UNDERLINE = "text-decoration: underline dotted 2px; text-underline-offset: 3px"
UNDERLINED = "every pink word is also underlined with dots"
SWATCH = ('<span class="st-swatch" style="background: rgba({rgb}, 0.75); padding: 0 6px; border-radius: 3px{more}">'
          '{name}</span>')
PLUS_SWATCH = SWATCH.format(rgb=PLUS_RGB, name="green", more="")
MINUS_SWATCH = SWATCH.format(rgb=MINUS_RGB, name="pink", more=f"; {MINUS_UNDERLINE}")


# ----------------------------------------------------------------------------- integrated gradients
def class_score(logits: torch.Tensor, target: int) -> torch.Tensor:
    """Evidence for `target`: its logit minus the mean of the other logits (the log-odds for two labels); a
    one-output classifier's logit itself (the log-odds of its sigmoid: `transformers` saves num_labels=1 with no
    problem_type, which the Sentiment tab serves; only a regression is refused)."""
    if logits.shape[-1] == 1:
        return logits[:, 0]
    others = torch.cat([logits[:, :target], logits[:, target + 1:]], dim=-1)
    return logits[:, target] - others.mean(dim=-1)


def ig_batch_points(config, tokens: int, budget: int = IG_BATCH_BUDGET, most: int = IG_BATCH_POINTS) -> int:
    """How many points of the path run in one batch for a text of `tokens` tokens: as many as keep tokens ×
    layers × hidden units within `budget`, at most `most`, at least one."""
    return max(1, min(most, budget // (tokens * config.num_hidden_layers * config.hidden_size)))


def integrated_gradients(model, input_ids: list[int], target: int, baseline_id: int, special_ids,
                         steps: int = IG_STEPS, budget: int = IG_BATCH_BUDGET, most: int = IG_BATCH_POINTS):
    """Integrated gradients (Sundararajan et al. 2017) on the word embeddings for the class score of
    `target`, from a baseline where every regular token is `baseline_id` (special tokens kept), with the
    midpoint rule over `steps` points, in batches of `ig_batch_points` (of 4 for the shipped classifier).
    Returns (attributions (T,), score(x), score(baseline)); the attributions sum to about
    score(x) - score(baseline) (completeness)."""
    device = next(model.parameters()).device
    with torch.inference_mode(False), torch.enable_grad():
        ids = torch.tensor([input_ids], dtype=torch.long, device=device)  # (1, T)
        # the positions the pipeline gives these ids (a typed <pad> keeps its own), for every point of the path
        positions = position_ids_from_input_ids(ids, model.config.pad_token_id)  # (1, T)

        def score(embeds):  # (S, T, H) -> (S,)
            logits = model(inputs_embeds=embeds, position_ids=positions.expand(len(embeds), -1)).logits
            return class_score(logits, target)

        table = model.roberta.embeddings.word_embeddings
        is_special = torch.isin(ids, torch.tensor(sorted(special_ids), dtype=torch.long, device=device))
        base_ids = torch.where(is_special, ids, torch.full_like(ids, baseline_id))
        x, base = table(ids).detach(), table(base_ids).detach()  # (1, T, H), in the model's dtype
        # the path and the sums in float32, each point run in the model's dtype: a bfloat16 model's 8-bit mantissa
        # would blur the steps and the attributions' sum, and numpy has no bfloat16
        step = x.float() - base.float()  # (1, T, H)
        alphas = (torch.arange(steps, dtype=torch.float32, device=device) + 0.5) / steps  # (S,)
        path = (base.float() + alphas[:, None, None] * step).to(x.dtype)  # (S, T, H)
        grads = []
        for points in path.split(ig_batch_points(model.config, len(input_ids), budget, most)):
            points = points.detach().requires_grad_(True)
            grads.append(torch.autograd.grad(score(points).sum(), points)[0])  # the batch's graph is freed here
        attributions = (step[0] * torch.cat(grads).float().mean(dim=0)).sum(dim=-1)  # (T,)
        with torch.no_grad():
            ends = score(torch.cat([x, base]))  # (2,)
    return attributions.detach().cpu().numpy(), float(ends[0]), float(ends[1])


def merge_words(tokens: Tokens, token_scores) -> list[tuple[int, int, float]]:
    """Sum token scores over the BPE pieces of each whitespace-separated word: [(start, end, score)]. A word
    none of whose ordinary tokens covers more than whitespace (" <pad>": a space token, then a special one) is
    no word."""
    totals: dict[int, float] = {}
    worded = set()
    for k, score, (start, end) in zip(tokens.word_index, token_scores, tokens.offsets):
        if k is not None:
            totals[k] = totals.get(k, 0.0) + float(score)
            if tokens.text[start:end].strip():
                worded.add(k)
    spans = word_spans(tokens.text)
    return [(*spans[k], totals[k]) for k in sorted(worded)]


OTHER_LABELS = "the other labels"  # what a minus pushes towards, for more than two labels
# a one-output (sigmoid) classifier's minus side: there is no other label, a minus pushes its one label's score down
AWAY_FROM = "away from "


def polarity(config) -> tuple[int, str, str]:
    """(index of the label that plus means "towards", its name, the other side's name): the label that names
    "positive" (`sentiment_of`) when there is one, else the second label (index 1), so colours never flip with the
    answer. A one-output classifier's other side is "away from" its one label (`towards`)."""
    id2label = {int(k): str(v) for k, v in (config.id2label or {}).items()}
    index = next((i for i, name in id2label.items() if sentiment_of(name) == "positive"),
                 1 if len(id2label) > 1 else 0)
    others = [name for i, name in sorted(id2label.items()) if i != index]
    name = id2label.get(index, f"LABEL_{index}")
    away = others[0] if len(others) == 1 else (OTHER_LABELS if others else f"{AWAY_FROM}{name}")
    return index, name, away


def towards(side: str, mark: str = "") -> str:
    """Where a push goes, said: "towards" a side (`polarity`'s), or "away from" a one-output classifier's one label;
    `mark` (Markdown's "**" or "*") around the side's name."""
    if side.startswith(AWAY_FROM):
        return f"{AWAY_FROM}{mark}{side.removeprefix(AWAY_FROM)}{mark}"
    return f"towards {mark}{side}{mark}"


def measures_the_answer(config=None) -> bool:
    """Whether the words' pushes are measured towards the classifier's answer rather than a fixed label
    (`polarity`): for more than two labels, where one fixed label against the mean of the others says little of an
    answer that is another (a "science" answer's "telescope" was listed as most towards "sports"). What if?
    measures the same pushes."""
    return config is not None and len(config.id2label or {}) > 2


def push_target(config, answer: str) -> tuple[int, str, str]:
    """(index of the label each word's push is measured towards, its name, the other side's name) for a text the
    classifier answered `answer`: `polarity`'s fixed label for one or two labels, so that colours never flip with
    the answer; for more (`measures_the_answer`), the answer itself, against the other labels."""
    if not measures_the_answer(config):
        return polarity(config)
    index = {str(name): int(i) for i, name in config.id2label.items()}[answer]
    return index, answer, OTHER_LABELS


def label_names(config) -> list[str]:
    """A classifier's label names in the order of their ids (none for a config without labels)."""
    return config_label_names(config.id2label or {})


def has_sst2_labels(labels) -> bool:
    """Whether a classifier's labels are SST-2's: two, negative and positive in any spelling (`sentiment_of`); not
    a topic classifier's, nor negative, neutral, positive."""
    return sorted(str(sentiment_of(label)) for label in labels) == ["negative", "positive"]


def speaks_of_sentiment(config=None) -> bool:
    """Whether the Sentiment tab speaks of sentiment for this classifier (`names_a_sentiment` of its labels), and
    without one (none loaded, the page laid out for SST-2's)."""
    return config is None or names_a_sentiment(label_names(config))


def _pushes(config=None) -> tuple[str, str]:
    """(what green words push towards, what pink ones do) for the classifier `config` before it answers
    (`polarity`; "the answer" for more than two labels: `measures_the_answer`); without one, SST-2's labels."""
    if config is None:
        return "positive", "negative"
    return ("the answer", OTHER_LABELS) if measures_the_answer(config) else polarity(config)[1:]


def words_label(config=None, answer: str | None = None) -> str:
    """The Sentiment tab's words box's label for the classifier that answers (`polarity`: green towards the label
    that names "positive", else its second label); for more than two labels, green towards the answer, named when
    given (`measures_the_answer`); without a classifier (none loaded), SST-2's labels."""
    toward, away = _pushes(config)
    if measures_the_answer(config) and answer is not None:
        return f"Which words push towards the answer, {answer} (green), or {away} (pink)"
    return f"Which words push towards {toward} (green) or {away} (pink)"


# The Sentiment tab's name (`tab_name`): the sentiment classifier's kind's (demo/models.py), and the one it takes for a
# classifier whose labels name no sentiment
SENTIMENT_TAB, CLASSIFY_TAB = "Sentiment", "Classify"


def tab_name(config=None) -> str:
    """The Sentiment tab's name for the classifier that answers: "Sentiment" where the tab speaks of sentiment
    (`speaks_of_sentiment`), else "Classify" (a topic classifier's tab is no sentiment tab)."""
    return SENTIMENT_TAB if speaks_of_sentiment(config) else CLASSIFY_TAB


def answer_label(config=None) -> str:
    """The Sentiment tab's answer box's name, which demo/page.js says before the answer: "Sentiment" where the tab
    speaks of sentiment (`speaks_of_sentiment`), else "Answer" (a topic classifier's "sports" is no sentiment)."""
    return "Sentiment" if speaks_of_sentiment(config) else "Answer"


SCORES_SAID = {"softmax": "which a softmax turns into the probabilities shown",
               "sigmoid": "each of which a sigmoid turns into a probability of its own",
               "regression": "which are the scores shown"}


def fine_tuning_said(config=None) -> str:
    """What a classifier is, for the Sentiment tab's hint: a pretrained encoder fine-tuned, with a new layer on
    `<s>` whose scores (the logits) become what is shown as `roberta.pipelines.score_kind` says (a softmax)."""
    scores = SCORES_SAID[score_kind(config) if config is not None else "softmax"]
    return ("This classifier is a pretrained encoder **fine-tuned** on labelled examples: a small new head (two "
            f"layers) reads the last layer's vector at `<s>` and gives one score per label (its *logits*), {scores}. ")


def tab_hint(config=None) -> str:
    """The Sentiment tab's "what to try, what to notice" (Markdown) for the classifier that answers, after what a
    classifier is (`fine_tuning_said`): its words' pushes named as the words box names them (`words_label`); the
    negation and the "but" example only where the tab speaks of sentiment (`speaks_of_sentiment`): What if? only
    removes a word for another classifier, and the tab's examples are reviews."""
    toward, away = (md_escape(short_text(name)) for name in _pushes(config))
    notice = (f"**Notice** which words push towards {toward} and which {towards(away)}, and whether the answer "
              "follows the words that matter: **What if?** ")
    if speaks_of_sentiment(config):
        return (f"{fine_tuning_said(config)}**Try** the negation (“The acting was not bad at all.”) and the “but” "
                f"example below. {notice}removes or negates the strongest one.")
    named = said_list([f"“{md_escape(short_text(name))}”" for name in label_names(config)])
    return (f"{fine_tuning_said(config)}**Try** a text of your own: this classifier's labels are {named} (the "
            f"examples below are reviews, for a sentiment classifier). {notice}removes the strongest one.")


def opening_text(config=None) -> str:
    """The Sentiment tab's text as the page opens, classified at start-up: its first example, a review, where the
    tab speaks of sentiment (`speaks_of_sentiment`); else none, and nothing computed: a review's topic would be the
    first answer a topic classifier gives, and a meaningless one (its hint says the examples are reviews)."""
    return SENTIMENT_EXAMPLES[0] if speaks_of_sentiment(config) else ""


def text_placeholder(config=None) -> str | None:
    """What the Sentiment tab's text box says while empty, for a classifier whose tab opens on no text
    (`opening_text`): "A text to classify as world, sports, business or science"; None for one that opens on a
    review."""
    if opening_text(config):
        return None
    labels = [short_text(name) for name in label_names(config)]
    named = labels[0] if len(labels) < 2 else f"{', '.join(labels[:-1])} or {labels[-1]}"
    return f"A text to classify as {named}"


REST_READ = " … (the rest was read for the score, not coloured)"


def highlighted_words(shown: str, words: list[tuple[int, int, float]], truncated: bool,
                      rest: str = REST_READ) -> list[tuple]:
    """HighlightedText pairs of `shown`: every word with its score scaled so the strongest is ±1, the text
    before, between and after the words unscored (a special token such as <mask> is no word); `truncated` (the
    words cover only the first window): `rest` instead of the text after the last word."""
    scale = max((abs(v) for _, _, v in words), default=0.0) or 1.0
    highlighted, last = [], 0
    for start, end, score in words:
        if start > last:
            highlighted.append((shown[last:start], None))
        highlighted.append((shown[start:end], round(score / scale, 3)))
        last = end
    if truncated:
        highlighted.append((rest, None))
    elif shown[last:]:
        highlighted.append((shown[last:], None))
    return highlighted


RESYNC_SPAN = 12  # characters in_users_case looks ahead, on each side, past a place normalising rewrote
RESYNC_AGREE = 2  # characters that must then agree again (fewer where the texts end)


def in_users_case(text: str, model_text: str) -> str:
    """`model_text` (the classifier's input: `text` normalised) with each character as the user typed it, so its
    word spans still apply: the same length and places as `model_text`. Where normalising only lower-cased the
    text and collapsed or dropped whitespace, every character is the user's; where it rewrote a few characters
    (SST-2's "``" and "-lrb-" read as '"' and "(", "do n't" as "don't"), those show as the model read them and
    the user's case comes back after them. The one letter whose lower case is longer, Turkish "İ" ("i" and a
    combining dot), shows decomposed, "I" and the combining dot: it looks the same and has that length; a
    capital sigma that lower-cases to the final "ς" at a word's end shows as typed, "Σ". Where the texts part for
    longer than RESYNC_SPAN characters, the rest of `model_text` from there on, as the model read it. Linear in the
    length."""
    def as_typed(i: int, at: int) -> tuple[str, int] | None:
        """(text[i] as shown where it stands for model_text[at:], the next i), skipping whitespace normalising
        collapsed or dropped; None where the model read something else there."""
        while i < len(text):
            typed = text[i]
            if typed.isspace() and model_text[at].isspace():
                return typed, i + 1
            lower = typed.lower()
            form = unicodedata.normalize("NFD", typed) if len(lower) > 1 else typed
            if model_text.startswith(lower, at) and len(form) == len(lower):
                return form, i + 1
            # the same letter in another form: str.lower() of a whole text writes a word's last "Σ" as "ς"
            if len(lower) == 1 and lower.casefold() == model_text[at].casefold():
                return typed, i + 1
            if not typed.isspace():
                return None
            i += 1
        return None

    def agree(i: int, at: int) -> bool:
        """Whether the texts agree again from text[i] and model_text[at] on (for RESYNC_AGREE characters)."""
        for _ in range(RESYNC_AGREE):
            if at >= len(model_text):
                return at == len(model_text) and not text[i:].strip()
            if (step := as_typed(i, at)) is None:
                return False
            i, at = step[1], at + len(step[0])
        return True

    def resync(i: int, at: int) -> tuple[int, int] | None:
        """(typed characters, model characters) to pass over to where the texts agree again, fewest first."""
        for total in range(1, 2 * RESYNC_SPAN + 1):
            for skip_model in range(min(total, RESYNC_SPAN), -1, -1):
                skip_typed = total - skip_model
                if skip_typed <= RESYNC_SPAN and agree(i + skip_typed, at + skip_model):
                    return skip_typed, skip_model
        return None

    shown, i, at = [], 0, 0
    while at < len(model_text):
        if (step := as_typed(i, at)) is not None:
            part, i = step
        elif (skips := resync(i, at)) is not None:
            part, i = model_text[at:at + skips[1]], i + skips[0]  # what normalising wrote there, as the model read it
        else:  # no agreement within reach: the rest as the model read it
            return "".join(shown) + model_text[at:]
        shown.append(part)
        at += len(part)
    return "".join(shown)


# How the words' pushes are measured, in plain words, before the technical account (`explanation_markdown`): integrated
# gradients move the input from the baseline to the text in IG_STEPS steps, and the pushes add up to how far the
# class score moved (completeness)
PUSHES_PLAIN = ("How it is measured: the text is faded in from a blank one, where every word is &lt;pad&gt;, in "
                f"{IG_STEPS} steps, and each word is credited with its share of how far the answer moves; a word's "
                "push depends on the words around it, so even a neutral word can push hard.")
TOP_WORDS = 3  # words listed each way under "Most towards"
# A text's words, as `english_words` counts them: runs of two or more letters of any script ("don't" is "don" and a
# "t", left out with the other single letters), and the one-letter words "a" and "I"
WORD_RE = re.compile(r"[^\W\d_]{2,}|(?<![^\W\d_])[aAI](?![^\W\d_])")
# Common English words: function words, most of them rare as words of the other languages written in Latin letters
# ("a", "in", "die" and "me" are left out), and the interjections short reviews are made of ("meh", "wow")
COMMON_ENGLISH = frozenset("""
    the and of to it is was this that with for not but you they he she we are were be been have has had its his
    their my your our what who which there from by at or all just very too can could would should will does did
    don isn doesn didn wasn aren weren won couldn wouldn shouldn haven hasn than then when how why about if only
    more most much some any yes ok okay wow meh lol yay ugh oh eh hmm nope yeah""".split())
# A text reads as English (`language_note`) when at least ENGLISH_SHARE of its words are common English words or
# whole words in the model's vocabulary, and one of them is a common English word or, in a short text that has none
# ("Terrible.", "Great film"), at least ENGLISH_SHARE_ALONE of them are whole words. With the shipped classifier's
# vocabulary 8 of SST-2's 872 dev sentences get the caveat (their rare words: "stultifyingly, dumbfoundingly,
# mind-numbingly bad"), and none of 1,000 IMDB training reviews drawn at random; "Der Film war wirklich wunderbar."
# ("der", "film" and "war" are whole words) gets it
ENGLISH_SHARE, ENGLISH_SHARE_ALONE = 0.5, 0.8
# What the caveat says of the classifier: the records do not say which languages a classifier learned from (nor does
# `language_note` see them), and a server may load any classifier, of another language or of many: it says what holds
# for one that learned from English alone, as the shipped one did
LEARNED_FROM_ENGLISH = ("classifier that learned from English text alone (as the shipped one did, from Wikipedia and "
                        "movie reviews)")
NO_ENGLISH = f"**This text has no English words:** a {LEARNED_FROM_ENGLISH} gives a verdict here that means little."
MAYBE_NOT_ENGLISH = ("**This text may not be English:** {found}. A " + LEARNED_FROM_ENGLISH
                     + " gives a verdict on another language that means little.")
WHOLE_WORD = "in the model's vocabulary (one token each)"


def english_words(text: str, tokenizer) -> tuple[int, int, int]:
    """(words, words that are common English words or whole words in `tokenizer`'s vocabulary, common English
    words) of `text` (`WORD_RE`'s words; `COMMON_ENGLISH`). A whole word is one token after a space, as typed or
    lower-cased ("Terrible" and "terrible"). Special tokens typed in the text (`<s>`, `<mask>`) are no words
    ("<s> great </s>" was 3 words, "s" not English)."""
    for special in (t.content for t in tokenizer.get_added_tokens_decoder().values() if t.special):
        text = text.replace(special, " ")
    words = WORD_RE.findall(text)
    forms = sorted({form for word in words for form in (word, word.lower())})
    whole = {form for form, encoded in zip(forms, tokenizer.encode_batch([" " + f for f in forms],
                                                                         add_special_tokens=False))
             if len(encoded.ids) == 1}
    common = sum(word.lower() in COMMON_ENGLISH for word in words)
    known = sum(word.lower() in COMMON_ENGLISH or word in whole or word.lower() in whole for word in words)
    return len(words), known, common


def language_note(text: str, tokenizer) -> str:
    """A caveat for a text that may not be English (`english_words`, `ENGLISH_SHARE`), saying what was found; ""
    for one that reads as English. Latin letters are no sign: "Der Film war wirklich wunderbar." gets one."""
    words, known, common = english_words(text, tokenizer)
    if not known:
        return NO_ENGLISH
    if known < ENGLISH_SHARE * words:
        found = (f"only {known} of its {words} words "
                 + (f"is a common English word or a whole word {WHOLE_WORD}" if known == 1 else
                    f"are common English words or whole words {WHOLE_WORD}"))
    elif not common and known < ENGLISH_SHARE_ALONE * words:
        found = (f"none of its {words} words is a common English word such as “the” or “is”, and only {known} "
                 + ("is a whole word" if known == 1 else "are whole words") + f" {WHOLE_WORD}")
    else:
        return ""
    return MAYBE_NOT_ENGLISH.format(found=found)


def top_words(shown: str, words, sign: float, n: int = TOP_WORDS) -> list[str]:
    """The `n` words that push most towards `sign` (+1 or -1), strongest first, each named once as the app names
    words (`counterfactual.core_word`: "film." is "film"; "The" and "the" are one word) by its strongest
    occurrence, with "×k" when k of its occurrences push this way. Markdown-escaped."""
    ranked = sorted((w for w in words if sign * w[2] > 0), key=lambda w: -sign * w[2])
    names = [core_word(shown, start, end) for start, end, _ in ranked]
    counts = Counter(name.lower() for name in names)
    strongest = {}  # each word's strongest occurrence, in order
    for name in names:
        strongest.setdefault(name.lower(), name)
    return [f"“{md_escape(short_text(name))}”" + (f" ×{counts[key]}" if counts[key] > 1 else "")
            for key, name in list(strongest.items())[:n]]


def score_probability(score: float, temperature: float, labels: int) -> float | None:
    """P(target) of a `class_score` for a model of one or two labels, its logits divided by `temperature` as the
    pipeline divides them (the score is then the log-odds); None for more labels, where the score is not."""
    return 1 / (1 + np.exp(-score / temperature)) if labels <= 2 else None


def before_calibration(probabilities: dict[str, float], temperature: float, config) -> dict[str, float] | None:
    """The probabilities a classifier gives before its calibration (T = 1: the softmax of its logits), from the
    calibrated ones it gave, softmax(logits / T): their log is logits / T less a constant, so softmax(T · log p) is
    softmax(logits), with no second forward pass. None for T = 1 and for scores that are no softmax (a regression's,
    or a sigmoid per label: `roberta.pipelines.score_kind`)."""
    if temperature == 1.0 or score_kind(config) != "softmax" or not probabilities:
        return None
    with np.errstate(divide="ignore"):  # a probability of 0 stays 0
        logs = temperature * np.log(np.array(list(probabilities.values()), dtype=np.float64))
    raw = np.exp(logs - logs.max())
    return dict(zip(probabilities, (raw / raw.sum()).tolist()))


def calibration_said(best: str, probabilities: dict[str, float], temperature: float, config) -> str:
    """"**Before calibration** (T = 1): 99.8% positive; the logits divided by T = 2.07 (the model's calibration
    temperature) give the 95.0% shown.": the answer's probability before calibration (`before_calibration`); ""
    where there is none. (The calibration note under the tab is the served classifier's: not said to be this
    answer's, which may be another model's.)"""
    raw = before_calibration(probabilities, temperature, config)
    if raw is None:
        return ""
    return (f"**Before calibration** (T = 1): {format_probability(raw[best])} {md_escape(best)}; the logits divided "
            f"by T = {temperature:.2f} (the model's calibration temperature) give the "
            f"{format_probability(probabilities[best])} shown.")


def ig_cut_note(window: int) -> str:
    """What a model that reads `window` tokens at once, more than IG_MAX_TOKENS, has explained of a text that
    the cut shortened (`IG_CUT_NOTE`)."""
    return IG_CUT_NOTE.format(n=IG_MAX_TOKENS, window=window, steps=IG_STEPS)


def explanation_markdown(shown: str, words, toward: str, away: str, best: str, probability: float,
                         baseline: float | None = None, cut_note: str = "", of_answer: bool = False,
                         caveat: str = "") -> str:
    """How to read the colours, and the words that pushed most each way; first `caveat`, where the text may not be
    English (`language_note`): the verdict stays, but it means little. `baseline`: P(`toward`) of the
    all-<pad> input the pushes are measured from (`score_probability`), said when given. `cut_note`: that only
    the text's first IG_MAX_TOKENS tokens are coloured (`ig_cut_note`), said after how to read the colours.
    `of_answer`: the pushes are measured towards the answer `best` (`measures_the_answer`), not a fixed label."""
    pro, con = top_words(shown, words, 1.0), top_words(shown, words, -1.0)
    table = words_table(shown, words, toward, away)
    toward, away = md_escape(toward), md_escape(away)
    answered = f"**{md_escape(best)}**, {format_probability(probability)}"
    if of_answer:
        how = (f"{PLUS_SWATCH} words push towards the answer ({answered}), {MINUS_SWATCH} words away from it, "
               f"towards **{away}**; the stronger the colour, the bigger the push, and {UNDERLINED}. {PUSHES_PLAIN} "
               "(Technically: integrated gradients of the answer's logit minus the mean of the other labels' over "
               f"{IG_STEPS} steps, from the ")
    else:
        how = (f"{PLUS_SWATCH} words push towards **{toward}**, {MINUS_SWATCH} words push {towards(away, '**')}, "
               f"whatever the model answers (here {answered}); the stronger the colour, the bigger the push, and "
               f"{UNDERLINED}. {PUSHES_PLAIN} (Technically: integrated gradients over {IG_STEPS} steps, from the ")
    return (f"{caveat}\n\n" if caveat else "") + (
        f"**How to read it:** {how}"
        "same input with &lt;s&gt; and &lt;/s&gt; kept and every word's tokens replaced by &lt;pad&gt;; summed "
        "over each word's pieces, scaled so the strongest word is ±1.)"
        + (" Pushes are measured from that all-&lt;pad&gt; input, which this model already scores "
           f"{format_probability(baseline)} {toward}." if baseline is not None else "")
        + (f" {cut_note}" if cut_note else "") + "\n\n"
        f"Most towards *{toward}*: {', '.join(pro) or '—'} · most {towards(away, '*')}: {', '.join(con) or '—'}\n\n"
        f"{table}"
    )


def words_table(shown: str, words, toward: str, away: str) -> str:
    """Every word's push in numbers, in a closed <details>: what the colours say, for a screen reader or a
    colour-blind reader too, and the exact values (scaled as the colours are: the strongest word is ±1), the push
    right-aligned as a Markdown table's number column is (align="right", which the page's CSS keeps)."""
    scale = max((abs(v) for _, _, v in words), default=0.0) or 1.0
    toward, away = html.escape(toward), html.escape(away)
    rows = "".join(f'<tr><td>{html.escape(shown[s:e])}</td><td align="right">{v / scale:+.2f}</td>'
                   f"<td>{toward if v > 0 else away if v < 0 else '–'}</td></tr>" for s, e, v in words)
    return ('<details><summary>Every word\'s push, in numbers</summary><table><thead><tr><th scope="col">word</th>'
            f'<th scope="col" align="right">push (−1 to +1)</th><th scope="col">towards</th></tr></thead><tbody>{rows}'
            "</tbody></table></details>")


# ----------------------------------------------------------------------------- attention
def attention_maps(model, input_ids: list[int]) -> np.ndarray:
    """The attention of every layer and head for one sequence: (L, nh, T, T), rows summing to 1. Every token is
    attended to, a typed "<pad>" too, as the pipelines read it (`roberta.encode`)."""
    ids = torch.tensor([input_ids], device=next(model.parameters()).device)  # (1, T)
    with torch.inference_mode():
        layers = list(model(ids, torch.ones_like(ids), output_attentions=True).attentions)  # L x (1, nh, T, T)
    maps = np.empty((len(layers), *layers[0].shape[1:]), dtype=np.float32)  # (L, nh, T, T)
    for i in range(len(layers)):  # each layer's tensor goes once copied: the request holds one set of maps, not two
        maps[i] = layers[i][0].float().cpu().numpy()
        layers[i] = None
    return maps


def attention_rollout(attentions: np.ndarray) -> np.ndarray:
    """Abnar & Zuidema (2020): average heads, add the residual (0.5 A + 0.5 I), renormalise rows, multiply
    through the layers. attentions (L, nh, T, T) -> (T, T), each row a distribution over input tokens."""
    T = attentions.shape[-1]
    eye = np.eye(T, dtype=np.float64)
    rollout = eye
    for layer in attentions.astype(np.float64).mean(axis=1):  # (T, T) per layer, bottom to top
        a = 0.5 * layer + 0.5 * eye
        a = a / a.sum(axis=-1, keepdims=True)
        rollout = a @ rollout
    return rollout


def head_matrix(attentions: np.ndarray, layer: int, head: int | None) -> tuple[np.ndarray, str]:
    """One layer's (T, T) attention of one head (1-based) or the mean of its heads (None), and its name."""
    chosen = attentions[layer - 1]  # (nh, T, T)
    if head is None:
        return chosen.mean(axis=0), f"layer {layer}, average of {chosen.shape[0]} heads"
    return chosen[head - 1], f"layer {layer}, head {head}"


PRONOUNS = ("it", "he", "she", "they", "its", "him", "her", "them", "his", "their")


def default_token(tokens: Tokens) -> int:
    """The token the attention views start on: the first pronoun (“it”, “she”...), whose link to the noun it
    stands for is the classic thing to look for, else the first word (0 when there are only special tokens)."""
    regular = [i for i, special in enumerate(tokens.special) if not special]
    spans = word_spans(tokens.text)

    def is_pronoun(i):  # a whole word, not a piece of one ("he" in "t|he")
        label, k = tokens.labels[i].strip().lower(), tokens.word_index[i]
        if label not in PRONOUNS or k is None:
            return False
        start, end = spans[k]
        return tokens.text[start:end].lower().strip(".,;:!?\"'()") == label

    pronoun = next((i for i in regular if is_pronoun(i)), None)
    return pronoun if pronoun is not None else (regular[0] if regular else 0)


CLEAR_LINK = 2  # a head links two words clearly when it gives the second at least twice the even share


def link_weights(tokens: Tokens, attentions: np.ndarray, link: tuple[str, str]) -> np.ndarray | None:
    """(L, nh): the share of its attention the first word of `link` ("it") gives the second ("cat") in each head;
    None when the text lacks either as one token."""
    labels = [label.strip().lower() for label in tokens.labels]
    if link[0] not in labels or link[1] not in labels:
        return None
    return attentions[:, :, labels.index(link[0]), labels.index(link[1])]  # (L, nh)


def strongest_link(tokens: Tokens, attentions: np.ndarray, link: tuple[str, str]) -> tuple[int, int, float] | None:
    """(layer, head, weight), 1-based: the head in which the first word of `link` ("it") gives the largest share
    of its attention to the second ("cat"); None when the text lacks either as one token."""
    weights = link_weights(tokens, attentions, link)  # (L, nh)
    if weights is None:
        return None
    layer, head = np.unravel_index(int(np.argmax(weights)), weights.shape)
    return int(layer) + 1, int(head) + 1, float(weights[layer, head])


def link_hint(tokens: Tokens, attentions: np.ndarray, link: tuple[str, str]) -> str:
    """Where to look in the attention tab: the layer and head in which the first word of `link` ("it") gives
    the largest share of its attention to the second ("cat"), beside the share it would get if attention were
    spread evenly over the text's tokens, and whether that head links them clearly (`CLEAR_LINK`); "" when the
    text lacks either as one token."""
    found = strongest_link(tokens, attentions, link)
    if found is None:
        return ""
    layer, head, weight = found
    labels = [label.strip().lower() for label in tokens.labels]
    weights = link_weights(tokens, attentions, link)  # (L, nh)
    even = 1 / len(labels)
    unclear = f": no head here clearly links “{link[0]}” to “{link[1]}”" if weight < CLEAR_LINK * even else ""
    return (f"In the fill-mask model, layer {layer}, head {head} is where “{link[0]}” attends most to "
            f"“{link[1]}” ({format_probability(weight)} of its attention; "
            f"{format_probability(float(weights[layer - 1].mean()))} in layer {layer}'s average of heads, "
            f"{format_probability(float(weights.mean()))} over all {weights.size} heads of the {len(weights)} "
            f"layers; spread evenly, each of the {len(labels)} tokens would get {format_probability(even)}{unclear}).")
