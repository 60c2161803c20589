"""roberta.text: the classifier's text normalisation. Same outputs as the rules it replaced (frozen below as
the reference) on SST-2-style and natural text, and linear time on the inputs that made those rules quadratic."""
import csv
import random
import re

import pytest

from roberta import text as T
from train import data

# ----- the rules as they were in train/data.py before roberta/text.py (quadratic on long whitespace runs)
_REFERENCE_RULES = [
    (re.compile(r" @([-,.])@ "), r"\1"),
    (re.compile(r"\\/"), "/"),
    (re.compile(r"-lrb-", re.I), "("), (re.compile(r"-rrb-", re.I), ")"),
    (re.compile(r"``|''"), '"'),
    (re.compile(r" n't\b", re.I), "n't"),
    (re.compile(r" '(s|re|ve|m|ll|d)\b", re.I), r"'\1"),
    (re.compile(r"`\s*([^'`]*?)\s*'"), r"'\1'"),
    (re.compile(r'"\s*([^"]*?)\s*"'), r'"\1"'),
    (re.compile(r"([(\[{])\s+"), r"\1"),
    (re.compile(r"\s+([)\]}])"), r"\1"),
    (re.compile(r"\s+([,.;:!?%])"), r"\1"),
    (re.compile(r"([$#£€])\s+(?=\d)"), r"\1"),
    (re.compile(r"(?<=s) '(?=[\s)\],.;:!?]|$)"), "'"),
    (re.compile(r"\s{2,}"), " "),
]


def reference_detokenize(text: str) -> str:
    for pattern, repl in _REFERENCE_RULES:
        text = pattern.sub(repl, text)
    return text.strip()


def reference_normalize(text: str) -> str:
    return reference_detokenize(text).lower()


REPRESENTATIVE = [
    # SST-2 as GLUE ships it
    "it 's a charming and often affecting journey . ",
    "unflinchingly bleak and desperate ",
    "the movie does n't work , and it ca n't be saved by its cast .",
    "`` the time machine '' is a movie that wo n't go away",
    "his distinctive ` blundering ' style",
    "like one of ( spears ' ) music videos",
    "-lrb- a -rrb- rare , beautiful film ; i 'm glad i saw it !",
    "the players ' union ... and you 're left with 100 % nothing",
    "it costs $ 5 and is worth # 1 \\/ 10 of that",
    "i 've seen it , i 'd see it again , we 'll see ; you 'll see .",
    # natural text, as people type it
    "It's a GREAT film, isn't it?",
    "A gorgeous, funny and deeply moving film.",
    "Not bad at all, a really fun film.",
    "I didn't like it (the ending was weak) but the acting... wow!",
    'She said "never again" and meant it.',
    "Great.  Two spaces after a full stop.\nA second line.\tAnd a tab.",
    "Prices rose 5% to $12.50 [citation needed] {sic}",
    "Émile's café in 東京 😀 — très bien !",
    "مرحبا بالعالم, this is mixed text.",
    # WikiText-style
    "The game 's release was delayed to 1 @,@ 200 copies , a well @-@ known 3 @.@ 5 % figure .",
    " = Valkyria Chronicles III = ",
    "",
    "   ",
]


@pytest.mark.parametrize("text", REPRESENTATIVE)
def test_same_as_the_rules_it_replaced(text):
    assert T.normalize_for_classifier(text) == reference_normalize(text)
    assert T.detokenize(text) == reference_detokenize(text)
    assert data.detokenize is T.detokenize


def test_same_as_the_rules_it_replaced_on_random_tokenized_text():
    """Random mixes of the pieces the rules look at, words separated by at most one whitespace character
    (as in SST-2, WikiText and typed text): identical output, every time."""
    pieces = ["a", "s", "word", "n't", "'s", "'re", "'", "`", "``", "''", '"', "(", ")", "[", "]", "{", "}", ",",
              ".", "!", "?", ";", ":", "%", "$", "£", "5", "12", "@-@", "@,@", "@.@", "-lrb-", "-rrb-", "\\/", "é"]
    rng = random.Random(0)
    for _ in range(3000):
        text = "".join(rng.choice(pieces) + rng.choice([" ", " ", " ", "", "\n", "\t"])
                       for _ in range(rng.randint(1, 12)))
        assert T.normalize_for_classifier(text) == reference_normalize(text), repr(text)


def test_longer_whitespace_runs_are_collapsed_before_the_rules():
    """The one deliberate difference: a run of whitespace next to a rule is one space first, so the rule
    applies (the old rules left `does n't` here); the result is the same as for single-spaced text."""
    assert T.normalize_for_classifier("it does  n't work  , really") == "it doesn't work, really"
    assert T.normalize_for_classifier("it does n't work , really") == "it doesn't work, really"
    assert T.collapse_whitespace("a \t\n b\nc\td") == "a b\nc\td"


def test_idempotent():
    for text in REPRESENTATIVE:
        once = T.normalize_for_classifier(text)
        assert T.normalize_for_classifier(once) == once


def test_max_chars_cuts_before_the_work():
    text = "it 's a great film , is n't it ? " * 1000
    full = T.normalize_for_classifier(text)
    cut = T.normalize_for_classifier(text, max_chars=500)
    assert len(cut) <= 500 and full.startswith(cut)
    assert T.normalize_for_classifier("short , text", max_chars=500) == "short, text"
    # whitespace is collapsed before cutting: a long run of spaces does not eat the budget
    assert T.normalize_for_classifier("x" + " " * 10_000 + "y", max_chars=10) == "x y"


N = 200_000  # the app's cap on a text
WORST_CASES = {
    "spaces then a letter": " " * (N - 1) + "x",
    "spaces then a bracket": "x" + " " * (N - 2) + ")",
    "spaces then a comma": "x" + " " * (N - 2) + ",",
    "tabs and newlines": "\t\n" * (N // 2),
    "ideographic spaces": "\u3000" * N,
    "an unclosed quote": '"' + " a" * (N // 2 - 1),
    "an unclosed backquote": "`" + " a" * (N // 2 - 1),
    "quotes and spaces": '" ' * (N // 2),
    "backquotes and quotes": "`'" * (N // 2),
    "dollars and spaces": "$ " * (N // 2),
    "one letter": "a" * N,
    "s-quote": "s '" * (N // 3),
    "n't": " n't" * (N // 4),
    "brackets": "( " * (N // 2),
    "spaced commas": " ," * (N // 2),
    "WikiText markers": " @-@ " * (N // 5),
    "combining marks": "e" + "\u0301" * (N - 1),
    "zero-width spaces": "\u200b" * N,
    "mixed scripts": "abc東京😀مرحبا " * (N // 14),
}


@pytest.mark.timeout(120)  # a hang guard, not a speed bound: quadratic rules take many minutes here
@pytest.mark.parametrize("name", WORST_CASES)
def test_worst_case_inputs_are_normalised(name):
    """200,000 characters of what made the old rules quadratic (40,000 spaces took 29 s; 0.03-0.5 s each was
    measured on an idle core, and `python benchmarks/bench_worst_case_inputs.py` times the app's handlers on such
    inputs): normalised exactly as the reference rules normalise the text once its whitespace runs are collapsed
    (the one deliberate difference, `test_longer_whitespace_runs_are_collapsed_before_the_rules`; on such text
    the old rules are linear too, 0.8 s at most here), never longer, no double space, and normalised once for
    all (but for the documented runs of quote characters)."""
    text = WORST_CASES[name]
    out = T.normalize_for_classifier(text)
    assert out == reference_normalize(T.collapse_whitespace(text)), (len(out), out[:80])
    assert len(out) <= len(text) and "  " not in out and out == out.strip()
    if name != "backquotes and quotes":  # "`'" becomes "''", then '"' (`normalize_for_classifier`'s docstring)
        assert T.normalize_for_classifier(out) == out


def _tsv_texts(path, limit):
    csv.field_size_limit(10**9)
    with open(path, newline="", encoding="utf-8") as f:
        rows = csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
        next(rows)
        return [row[0] for _, row in zip(range(limit), rows) if row]


@pytest.mark.parametrize("name, limit", [("sst2/dev.tsv", 10_000), ("sst2/train.tsv", 5_000), ("imdb/train.tsv", 500)])
def test_same_as_before_on_the_shared_data(name, limit, shared_file):
    """The real SST-2 and IMDB texts (where present, `shared_file`): identical to the reference rules."""
    for text in _tsv_texts(shared_file(name), limit):
        assert T.normalize_for_classifier(text) == reference_normalize(text), text[:200]


def test_lowercasing_tokenizer_lowercases_text_but_not_special_tokens(tokenizer):
    """The tokenizer side of the classifier's lower-casing (baked into a classifier's tokenizer.json)."""
    low = T.lowercasing(tokenizer)
    assert low.encode("The CAT sees <mask>.").ids == tokenizer.encode("the cat sees <mask>.").ids
    assert low.encode(T.normalize_for_classifier("It 's GOOD .")).ids == low.encode("It's good.").ids
    assert tokenizer.normalizer is None  # the original is left alone
    assert T.lower_cases(low) and not T.lower_cases(tokenizer)  # what train.finetune and the app ask
    assert T.lower_cases(T.lowercasing(low))  # a normalizer sequence that lower-cases is seen too


def test_names_a_sentiment_tells_a_sentiment_classifier_from_a_topic_one():
    """The model cards (`train/`, which cannot import the app's `demo.explain.names_a_sentiment`) titled a topic
    classifier "Sentiment classifier": the rule lives here, by `sentiment_of`, for both sides."""
    assert T.names_a_sentiment(["negative", "positive"]) and T.names_a_sentiment(["NEG", "Pos"])
    assert T.names_a_sentiment(["negative", "neutral", "positive"])
    assert not T.names_a_sentiment(["world", "sports", "business", "science"])
    assert not T.names_a_sentiment(["LABEL_0", "LABEL_1"]) and not T.names_a_sentiment([])
    assert "names_a_sentiment" in T.__all__
