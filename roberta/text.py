"""The text normalisation the classifier needs, at training time (`train.finetune`, `train.evaluate`,
`train.tapt_corpus`; `train.data` uses `detokenize`) and in the app (`demo.tokens_view.classifier_text`,
`demo.model_notes`): one definition, so both sides see the same text. Lower-casing, the one step a saved
classifier's tokenizer also does, lives here too (`lowercasing`, `lower_cases`), and the spellings of the two
sentiment labels (`sentiment_of`) and whether a classifier's labels name one (`names_a_sentiment`).

Every function here runs in time linear in the length of the text, whatever the text: the app calls them
inside a request, on up to 200,000 characters a visitor pasted. Python's `re` backtracks, so a pattern
such as `\\s+([,.])` tried at every position of a run of n spaces costs n² steps (40,000 spaces took 29 s
before this module existed). The rules below are safe because runs of whitespace are collapsed to one
character first, and the patterns that start with `\\s+` only start at the beginning of a run (a
`(?<!\\s)` look-behind), so no position is scanned more than a bounded number of times.
"""
from __future__ import annotations

import re

from tokenizers import Tokenizer, normalizers

__all__ = ["collapse_whitespace", "detokenize", "normalize_for_classifier", "lowercasing", "lower_cases",
           "sentiment_of", "names_a_sentiment", "SENTIMENT_ALIASES"]

_WHITESPACE_RUN = re.compile(r"\s{2,}")

# Applied in order, to text whose whitespace runs are at most one character long (see `collapse_whitespace`)
_TOKENIZED_RULES = [
    (re.compile(r" @([-,.])@ "), r"\1"),  # WikiText number/compound markers
    (re.compile(r"\\/"), "/"),  # SST-2 escapes slashes
    (re.compile(r"-lrb-", re.I), "("), (re.compile(r"-rrb-", re.I), ")"),
    (re.compile(r"``|''"), '"'),  # PTB quotes
    (re.compile(r" n't\b", re.I), "n't"),  # does n't -> doesn't, ca n't -> can't
    (re.compile(r" '(s|re|ve|m|ll|d)\b", re.I), r"'\1"),  # it 's -> it's
    (re.compile(r"`\s*([^'`]*?)\s*'"), r"'\1'"),  # ` quoted ' -> 'quoted'
    (re.compile(r'"\s*([^"]*?)\s*"'), r'"\1"'),  # " quoted " -> "quoted"
    (re.compile(r"([(\[{])\s+"), r"\1"),  # ( x ) -> (x)
    (re.compile(r"(?<!\s)\s+([)\]}])"), r"\1"),
    (re.compile(r"(?<!\s)\s+([,.;:!?%])"), r"\1"),  # word , word -> word, word
    (re.compile(r"([$#£€])\s+(?=\d)"), r"\1"),  # $ 5 -> $5
    (re.compile(r"(?<=s) '(?=[\s)\],.;:!?]|$)"), "'"),  # the players ' union -> the players' union
    (_WHITESPACE_RUN, " "),
]


# The spellings of the two sentiment labels that classifiers use ("pos" and "neg" in many data sets, "POSITIVE" in
# some Hub models'), case folded: the app's colours and checks, and the IMDB figure's labels, read them alike
SENTIMENT_ALIASES = {"positive": "positive", "pos": "positive", "negative": "negative", "neg": "negative"}


def sentiment_of(label) -> str | None:
    """"positive" or "negative" for a label that names that sentiment in any of its spellings (`SENTIMENT_ALIASES`:
    "POSITIVE", "pos", "Neg"), else None ("neutral", "LABEL_1")."""
    return SENTIMENT_ALIASES.get(str(label).strip().lower())


def names_a_sentiment(labels) -> bool:
    """Whether any of a classifier's labels names a sentiment in any spelling (`sentiment_of`): "negative",
    "positive" do; a topic classifier's "world", "sports"... and "LABEL_0", "LABEL_1" do not. The model cards and
    the app say "sentiment" by it."""
    return any(sentiment_of(label) for label in labels)


def collapse_whitespace(text: str) -> str:
    """Every run of two or more whitespace characters becomes one space; a single tab or newline stays."""
    return _WHITESPACE_RUN.sub(" ", text)


def detokenize(text: str, max_chars: int | None = None) -> str:
    """Turn tokenized text (`it 's`, `word , word`, `( x )`, WikiText's ` @-@ `) into natural English.

    Whitespace runs are collapsed first (what the last rule always did at the end), then, when `max_chars`
    is given, the text is cut to that many characters before the rules run: a caller that reads only the
    beginning (a model with a fixed window) pays for no more than it uses."""
    text = collapse_whitespace(text)
    if max_chars is not None and len(text) > max_chars:
        text = text[:max_chars]
    for pattern, repl in _TOKENIZED_RULES:
        text = pattern.sub(repl, text)
    return text.strip()


def normalize_for_classifier(text: str, max_chars: int | None = None) -> str:
    """The one normalisation applied to classifier inputs, at training AND at inference time.

    SST-2 is lower-cased and tokenized (`it 's`, `does n't`, ` , `); people type natural text
    (`It's`, `doesn't`, `,`). A byte-level BPE tokenizes the two forms differently (` does`,` n`,`'t` versus
    ` doesn`,`'t`; `Great` versus ` great`), so a classifier trained on one form meets unfamiliar tokens in
    the other. We meet in the middle: detokenize (fixes the spacing; a no-op on natural text) and lower-case
    (SST-2's case cannot be restored reliably, user text can always be lower-cased). The pretraining text
    is natural (WikiText is detokenized too), so fine-tuning inputs stay in the form the encoder was
    pretrained on. Normalising normalised text changes nothing, except in rare runs of quote characters (a
    backtick before a `''`: "`'" becomes "''", then '"'); training and the app both normalise exactly once.

    `max_chars`: cut the text (after collapsing whitespace) to that many characters before the rest of the
    work; the result is then a prefix of the full text's normalisation except at most near the cut (a
    quotation that closes after the cut keeps the space after its opening quote).

    Measured with the 32k BPE of `train.tokenizer` (defaults): share of the tokens of 500 IMDB reviews never
    seen in SST-2 train: 15.3% raw/raw, 4.5% when only user text is lower-cased, 3.0% with this function on
    both sides. A bag-of-BPE-tokens logistic regression trained on SST-2 train (mean of 2-3 seeds) scores
    the same on SST-2 dev either way (0.811-0.819) and, on 2000 IMDB reviews with punctuation tokens left
    out, 0.749 raw/raw, 0.750 lower-cased user text, 0.745 this function: equal within noise for words.
    With punctuation tokens in, matching forms scored lower on IMDB (0.741 vs 0.772): a bag of tokens
    learns spurious punctuation cues from SST-2's short phrases, which an encoder reading context should not
    depend on. The decisive test, fine-tuning the pretrained encoder both ways, is left to `train.finetune`.
    """
    return detokenize(text, max_chars).lower()


def lower_cases(tokenizer) -> bool:
    """Whether `tokenizer` (a `tokenizers.Tokenizer`) lower-cases what it reads: its normalizer does, as
    `lowercasing`'s copy's does."""
    normalizer = getattr(tokenizer, "normalizer", None)
    return normalizer is not None and normalizer.normalize_str("Ab") == "ab"


def lowercasing(tokenizer: Tokenizer) -> Tokenizer:
    """A copy of `tokenizer` that lower-cases text before BPE (special tokens such as <mask> are untouched).

    The SST-2 classifier is trained on lower-cased text (`normalize_for_classifier`); baking the lower-casing
    into its tokenizer.json means every user of the folder (our pipelines, the app, `transformers`) feeds it
    the same way, also without this module.
    """
    copy = Tokenizer.from_str(tokenizer.to_str())
    lower = normalizers.Lowercase()
    copy.normalizer = lower if copy.normalizer is None else normalizers.Sequence([copy.normalizer, lower])
    return copy
