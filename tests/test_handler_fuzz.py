"""Property-based robustness of the app's handlers (hypothesis), with the tiny random fixture models.

The project's rule: a user never sees a stack trace. Given any input an API client or the page can send (any text:
control, zero-width and format characters, combining marks, right-to-left script, emoji, CJK, masks written every
way, long runs of one character; any number: negative, huge, NaN, a string, None), each handler either answers
with a well-formed result or raises the plain message of `demo.validation.fail`. A failure that `user_errors` only
caught (it logs the traceback and says "Something went wrong") is a crash the user meets as a generic message: it
fails these tests, with its traceback. An answer is checked too: its probabilities finite and in [0, 1] (summing to
1 where they are a distribution), no "nan" or "inf" the input did not hold in what it shows, and in every HTML
table every row as wide as the others.

Each handler is fuzzed twice where it takes more than a text: its text (or word) with valid options, and its
options (numbers, boxes, the model box) on a text it answers, so that each odd input reaches the code past the
checks of the others. The examples are derandomized (the same on every run, in CI too) and few, for the file to
run in about half a minute; a hunt for new failures runs the same tests on many more new ones (`fuzz`:
FUZZ_EXAMPLES=2000 FUZZ_RANDOM=1).
"""
import io
import math
import os
import re
import traceback
import warnings
from contextlib import contextmanager
from unittest import mock

import gradio as gr
import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st
from matplotlib.figure import Figure

from demo import validation as V
from demo.attention_handlers import VIEWS
from demo.masking_view import MASKING_COLUMNS, PREDICTION_COLUMNS
from scripts.tiny_models import ADVERBS, OBJECTS, SUBJECTS, VERBS

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "0"))  # 0: each test's own count (a few dozen), else this many


def fuzz(n: int):
    """Hypothesis' settings for a test of `n` examples: derandomized (the same examples on every run, nothing
    stored in .hypothesis/), no deadline (a first call warms up what later ones reuse); FUZZ_EXAMPLES overrides
    `n`, and FUZZ_RANDOM=1 draws new examples on each run (a local hunt for failures, never CI's)."""
    return settings(max_examples=EXAMPLES or n, derandomize=not os.environ.get("FUZZ_RANDOM"), deadline=None,
                    database=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                          HealthCheck.too_slow, HealthCheck.data_too_large])


# ----------------------------------------------------------------------------- strategies
# every code point but the lone surrogates (Cs), which only JSON can send ("\ud800": one of PIECES)
ANY_CHAR = st.characters(exclude_categories=("Cs",))
WORDS = sorted({w for phrase in SUBJECTS + VERBS + OBJECTS + ADVERBS for w in phrase.split()})  # the tiny corpus'
# ... and the words What if? reads (negations, copulas, contractions, opposites), in the cases and quotes typed
SENTIMENT_WORDS = ["good", "Bad", "GREAT", "terrible", "love", "not", "never", "Not", "n't", "isn't", "wasn’t",
                   "won't", "can't", "cannot", "ain't", "Is", "is", "was", "were", "am", "be", "been", "it's", "It's",
                   "they're", "I'm", "Where", "no", "very", "film.", "good.", "bad!", "(great)", "great,", "?", ".",
                   "…", ",", ";", ":", "not.", "never,"]
# what makes text handling go wrong: masks written every way, special tokens, line breaks of every kind, invisible
# control and format characters, a lone surrogate, combining marks, letters whose case changes their length,
# characters NFC writes otherwise, right-to-left script, emoji (a skin tone, joiners, a flag's tags), CJK, the
# vocabulary's and the picker's signs of a space, SST-2's spellings, markup, math and format signs
PIECES = ["<mask>", "<MASK>", "< mask >", "<mask><mask>", " <mask> ", "[MASK]", "[mask]", "＜mask＞", "&lt;mask&gt;",
          "<mask", "mask>", "<s>", "</s>", "<pad>", "<unk>", " ", "  ", "\n", "\r\n", "\r", "\t", "\x0b", "\x0c",
          "\x1c", "\x1f", "\x85", "\u2028", "\u2029", "\u3000", "\xa0", "\x00", "\x7f", "\u200b", "\u200c", "\u200d",
          "\u2060", "\ufeff", "\xad", "\u202e", "\u202c", "\u2066", "\u061c", "\ud800", "\u0301", "\u0308\u0301",
          "e\u0301", "\u0600", "İ", "ΣΑΣ ", "ß", "ﬁ", "\u212a", "\u2126", "\U0001d160", "😀", "👍🏽",
          "👨\u200d👩\u200d👧", "🏴\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f", "東京", "大阪",
          "مرحبا", "שלום", "кошка", "Ωμέγα", "हिन्दी", "$x$", "\\", "Ġ", "␣", "Ġthe", "␣the", "...", "!!", "?", ",",
          ";", "(", ")", '"', "`", "``", "''", "-lrb-", "n't", "do n't", "<b>", "&amp;", "nan", "%", "{}", "{0}",
          "%s"]
TEXTS = st.one_of(
    st.text(ANY_CHAR, max_size=30),  # any characters
    st.lists(st.one_of(st.sampled_from(WORDS), st.sampled_from(PIECES), st.text(ANY_CHAR, max_size=4)),
             max_size=16).map("".join),  # words and pieces glued
    st.lists(st.one_of(st.sampled_from(WORDS), st.sampled_from(PIECES)), max_size=16).map(" ".join),  # spaced
    st.lists(st.one_of(st.sampled_from(WORDS), st.sampled_from(SENTIMENT_WORDS)), min_size=1, max_size=12).map(
        " ".join),  # a review
    st.builds(lambda piece, n: piece * n, st.sampled_from([*PIECES, *WORDS, "a", "7"]),
              st.integers(1, 400)),  # a long run of one piece
    st.sampled_from(["", " ", "\n\t ", "\u200b\u200b", "...", "!?!?", "<mask>", "<mask> <mask>", "<s></s>"]),
)
SHORT_TEXTS = st.one_of(st.text(ANY_CHAR, max_size=12), st.lists(st.one_of(st.sampled_from(WORDS), st.sampled_from(
    PIECES)), max_size=6).map(" ".join))  # within the 64 tokens the tiny models read
MASK_WRITTEN = st.sampled_from(["<mask>", " <mask>", "<mask> ", "[MASK]", "<mask><mask>"])
# a fill-mask text: mostly a mask within what the model reads, among any characters; one near the end of what it
# reads (the 62nd of its 64 tokens is the last a text's own: test_app_handlers' `with_mask_inside`'s window);
# now and then any text
MASKED = st.one_of(st.builds(lambda a, mask, b: f"{a}{mask}{b}", SHORT_TEXTS, MASK_WRITTEN, TEXTS),
                   st.builds(lambda n, piece, mask, b: piece * n + mask + b, st.integers(50, 70),
                             st.sampled_from([" the", "a", " 😀", "東", ".", " <mask>", "\u200b x"]), MASK_WRITTEN,
                             SHORT_TEXTS),
                   TEXTS)
# one word, as a word box gets it: the vocabulary's, with a piece before it, any few characters, or any text
VOCAB_WORD = st.sampled_from(WORDS)
WORD = st.one_of(VOCAB_WORD, st.builds(str.__add__, st.sampled_from(PIECES), st.sampled_from(WORDS)),
                 st.text(ANY_CHAR, min_size=1, max_size=6), st.sampled_from(PIECES), TEXTS)
# what a Gradio box may send instead of a string: nothing, a number, a list or a dict (an API client's JSON)
NOT_TEXT = st.sampled_from([None, 0, 1.5, True, ["a", "b"], {"a": 1}])
NUMBERS = st.one_of(
    st.integers(-3, 25), st.integers(), st.integers(-10**40, 10**40),
    st.floats(allow_nan=True, allow_infinity=True), st.floats(0, 30),
    st.sampled_from([None, True, False, "", " ", "3", " 2 ", "+1", "-1", "1.0", "1e1", "1_0", "0x10", "２", "٣",
                     "nan", "inf", "-inf", "1e400", "head 2", "layer 1", "Layer 3", "average", "ten", [1], {}]),
    st.text(max_size=6),
)
HEADS = st.one_of(NUMBERS, st.sampled_from(["average", " Average ", "mean", "avg", "ALL", "head 1", "Head 2"]))
BOOLEANS = st.one_of(st.booleans(), st.sampled_from([None, "true", "false", "", 0, 1, 1.0, "yes"]))
VIEW_NAMES = st.one_of(st.sampled_from([*VIEWS, "all", "", " HEATMAP ", "Token", "none", None, 3]),
                       st.text(max_size=8))
# a model box's value: the shipped model however written, or anything else (the Hub is offline in the tests,
# conftest's HF_HUB_OFFLINE: a repo id is refused at once, in plain words)
MODELS = st.one_of(st.sampled_from(["shipped", " Shipped ", "", None, "no-such-owner/no-such-model", "a/b/c", "..",
                                    "./models", "/etc", "https://huggingface.co/x", "roberta-base", "x" * 300, 3,
                                    ["shipped"], "mlm", "Sentiment"]), st.text(max_size=12))
ATTENTION_MODELS = st.one_of(st.sampled_from(["mlm", "sentiment", " MLM ", "Sentiment"]), MODELS)
# ... and the model the Attention tab holds (a gr.State the server keeps: a model its box accepted)
ATTENTION_CURRENT = st.sampled_from(["mlm", "sentiment", "shipped", "FacebookAI/roberta-base"])


# ----------------------------------------------------------------------------- the property
GENERIC = "Something went wrong"  # `user_errors`' message for a failure it did not expect


@contextmanager
def crashes_recorded():
    """The tracebacks of the failures `user_errors` turned into its generic message (it logs each one with
    `log.exception`, inside the `except` that caught it), in the list this yields."""
    crashes = []
    with mock.patch.object(V.log, "exception", lambda *args, **kwargs: crashes.append(traceback.format_exc())):
        yield crashes


def outcome(fn, *args):
    """(what `fn(*args)` returned, None), or (None, the message of the plain error it raised). Any other exception,
    and a failure `user_errors` hid behind its generic message, fails the test with its traceback."""
    with crashes_recorded() as crashes, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a cut text's gr.Warning (a Python warning outside Gradio)
        try:
            result = fn(*args)
        except gr.Error as err:
            assert not crashes, f"{fn.__name__}{args!r} crashed:\n{crashes[0]}"
            assert GENERIC not in err.message and err.message.strip(), f"{fn.__name__}{args!r}: {err.message!r}"
            # (--hypothesis-show-statistics: the messages the examples met, what they quote and their numbers elided)
            event(f"a plain message: {re.sub(r'“.*?”|[0-9]+', '…', err.message)[:90]}")
            return None, err.message
    assert not crashes, f"{fn.__name__}{args!r} crashed:\n{crashes[0]}"
    event("an answer")
    return result, None


NAN_RE = re.compile(r"(?<![A-Za-z])(?:nan|inf)(?![A-Za-z])", re.IGNORECASE)
TABLE_RE = re.compile(r"<table\b.*?</table>", re.DOTALL)
ROW_RE = re.compile(r"<tr\b.*?</tr>", re.DOTALL)
CELL_RE = re.compile(r"<t[dh]\b([^>]*)>")
COLSPAN_RE = re.compile(r'colspan="(\d+)"')
MD_TABLE_RE = re.compile(r"(?:^\|.*\|$\n?){2,}", re.MULTILINE)  # two lines or more that begin and end with "|"
MD_PIPE_RE = re.compile(r"(?<!\\)((?:\\\\)*)\|")  # a pipe no backslash escapes (an even number before it)


def check_figure(figure, where="a figure"):
    """The figure rendered as Gradio's Plot renders it (a PNG): a failure there would reach the page after the
    handler returned, past `user_errors`."""
    assert isinstance(figure, Figure), f"{where} is {type(figure).__name__}"
    figure.savefig(io.BytesIO(), format="png")


def strings_in(value) -> list[str]:
    """Every string in `value` (lists, tuples and dicts walked): what a model answered, which joins the inputs of
    `check_sane` (a fill-mask answer "f" after a typed "in" shows "inf": the model wrote it, no number did)."""
    if isinstance(value, str):
        return [value]
    items = value.values() if isinstance(value, dict) else value if isinstance(value, (list, tuple)) else []
    return [s for item in items for s in strings_in(item)]


def check_sane(value, inputs, where="result"):
    """Every float in `value` finite, no string showing "nan" or "inf" unless the inputs held one, and in every HTML
    table each row as many cells wide as the others (a colspan counted as its width). Walks lists, tuples and
    dicts (Gradio's updates too); figures and other objects are the tests' own to check."""
    if isinstance(value, float):
        assert math.isfinite(value), f"{where} is {value}"
    elif isinstance(value, str):
        typed = " ".join(map(str, inputs)).lower()
        if "nan" not in typed and "inf" not in typed and (found := NAN_RE.search(value)):
            pytest.fail(f"{where} shows {found.group()!r}: …{value[max(0, found.start() - 80):found.end() + 80]}…")
        for table in TABLE_RE.findall(value):
            widths = {sum(int(m[1]) if (m := COLSPAN_RE.search(attrs)) else 1 for attrs in CELL_RE.findall(row))
                      for row in ROW_RE.findall(table)}
            assert len(widths) <= 1, f"{where}: a table's rows are {sorted(widths)} cells wide: {table[:800]}"
        for table in MD_TABLE_RE.findall(value):  # a Markdown table: its cells split at its unescaped pipes
            widths = {len(MD_PIPE_RE.findall(row)) for row in table.splitlines()}
            assert len(widths) == 1, f"{where}: a Markdown table's rows are {sorted(widths)} cells wide: {table}"
    elif isinstance(value, Figure):
        check_figure(value, where)
    elif isinstance(value, dict):
        for key, item in value.items():
            check_sane(item, inputs, f"{where}[{key!r}]")
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            check_sane(item, inputs, f"{where}[{i}]")


def check_probability(p, where="a probability"):
    assert isinstance(p, float) and math.isfinite(p) and 0 <= p <= 1, f"{where} is {p!r}"


def check_distribution(probabilities: dict, where="the probabilities"):
    for label, p in probabilities.items():
        check_probability(p, f"{where}[{label!r}]")
    assert sum(probabilities.values()) == pytest.approx(1, abs=1e-4), f"{where} sum to {sum(probabilities.values())}"


@pytest.fixture(scope="module", autouse=True)
def one_thread(single_thread):
    """The tiny models on one thread (`single_thread`): many times faster on a shared CPU."""


# ----------------------------------------------------------------------------- fill mask
def check_fill_mask(outputs, top_k: int, candidates: bool):
    """One block, one label and one row of answers per mask; each answer's score a probability; without candidate
    words, top-k of them, best first, their sum at most 1 (a share of one distribution)."""
    filled, *labels, raw, view = outputs
    assert raw and all(raw) and len(labels) == V.MAX_MASKS
    assert [label for _, label in filled if label] == [f"<mask> {i}" for i in range(1, len(raw) + 1)]
    assert labels[len(raw):] == [None] * (V.MAX_MASKS - len(raw)) and view.count('class="fm-mask"') == len(raw)
    for i, row in enumerate(raw):
        scores = [r["score"] for r in row]
        for r in row:
            check_probability(r["score"], f"mask {i + 1}'s {r['token_str']!r}")
        if not candidates:
            assert len(row) == top_k and sum(scores) <= 1 + 1e-4 and scores == sorted(scores, reverse=True)
    for label in labels[:len(raw)]:
        for p in label.values():
            check_probability(p, "a mask's label")


def check_fill_mask_page(result, top_k, targets, inputs):
    *outputs, lens_view, lens = result
    candidates = isinstance(targets, str) and bool(V.candidate_words(targets))
    check_fill_mask(outputs, V.parse_int(top_k, "Top-k", 1, V.MAX_TOP_K), candidates)
    check_layers(lens_view, lens)
    assert len(lens) == len(outputs[-2])
    check_sane(result, (*inputs, *strings_in(outputs[-2]), *strings_in(lens)))  # the answers', layer by layer too


def check_layers(view, per_mask):
    """Each mask followed through the embeddings and every layer: the answer's probability and rank at each."""
    assert per_mask and len(per_mask) == view.count('class="ll-mask"')
    for mask in per_mask:
        assert len(mask["layers"]) == 3  # the embeddings, then the tiny models' two layers
        for layer in mask["layers"]:
            check_probability(layer["answer_score"], "a layer's answer")
            assert layer["answer_rank"] >= 1
            for guess in layer["top"]:
                check_probability(guess["score"], "a layer's guess")


@fuzz(50)
@given(text=MASKED, top_k=st.integers(1, V.MAX_TOP_K),
       targets=st.one_of(st.none(), st.lists(st.sampled_from([*WORDS, "Ġthe", "␣cat", "France"]), min_size=1,
                                             max_size=4).map(", ".join)))
def test_fill_mask_on_any_text(handlers, text, top_k, targets):
    """The page's fill mask (`fill_mask_page`: /fill_mask's outputs, then layer by layer) on any text: an answer per
    mask, or a plain message (no mask, too many, beyond what the model reads, an empty text)."""
    result, error = outcome(handlers.fill_mask_page, text, top_k, targets)
    if error is None:
        check_fill_mask_page(result, top_k, targets, (text, top_k, targets))


@fuzz(40)
@given(text=st.sampled_from(["Paris is the capital of <mask>.", "<mask> 😀 <mask>", "the cat <mask> the house"]),
       top_k=NUMBERS, targets=st.one_of(st.none(), NOT_TEXT, WORD, st.lists(WORD, max_size=5).map(", ".join),
                                        st.lists(WORD, max_size=5).map("; ".join)))
def test_fill_mask_on_any_options(handlers, text, top_k, targets):
    """/fill_mask with any top-k and any candidate words: the candidates scored (or the top-k answers), or a plain
    message about the field."""
    result, error = outcome(handlers.fill_mask, text, top_k, targets)
    if error is None:
        candidates = isinstance(targets, str) and bool(V.candidate_words(targets))
        check_fill_mask(result, V.parse_int(top_k, "Top-k", 1, V.MAX_TOP_K), candidates)
        check_sane(result, (text, top_k, targets, *strings_in(result[-2])))


@fuzz(30)
@given(text=MASKED, model=MODELS)
def test_fill_mask_layers_on_any_text(handlers, text, model):
    """/fill_mask_layers on any text and model box value: each mask followed through every layer, or a plain
    message."""
    result, error = outcome(handlers.fill_mask_layers, text, model)
    if error is None:
        check_layers(*result)
        check_sane(result, (text, model, *strings_in(result[1])))


@fuzz(25)
@given(text=MASKED, top_k=NUMBERS, targets=st.one_of(st.none(), WORD), model=MODELS, other=MODELS)
@example(text="the cat <mask> on the mat.", top_k=5, targets=None, model="shipped", other="roberta-base")
def test_fill_mask_compare_on_any_input(handlers, text, top_k, targets, model, other):
    """/fill_mask_compare on any input: the Hub is offline, so no second model loads, and the answer is a plain
    message (which model, and why). (Its result was ignored: a comparison that answered without loading a second
    model passed. Now the plain message is asserted, and a valid request the drawn inputs rarely make is always
    tried: the tab's shipped model against a Hub id, where only the second model can make it fail.)"""
    result, error = outcome(handlers.fill_mask_compare, text, top_k, targets, model, other)
    assert error is not None and result is None, f"compared with {other!r} although no second model can load"


# ----------------------------------------------------------------------------- sentiment
@fuzz(40)
@given(text=TEXTS)
def test_classify_on_any_text(handlers, text):
    """/classify and the page's `classify_page` on any text: a distribution over the labels and each word's push
    in [-1, 1], or a plain message (an empty text, only special tokens)."""
    result, error = outcome(handlers.classify, text)
    page, page_error = outcome(handlers.classify_page, text)
    assert page_error == error
    if error is None:
        probabilities, words, explanation = result
        check_distribution(probabilities)
        assert all(score is None or -1 <= score <= 1 for _, score in words)
        assert page[0]["value"] == probabilities and explanation in page[2]
        check_sane(result, (text,))


@fuzz(40)
@given(text=TEXTS)
def test_counterfactual_on_any_text(handlers, text):
    """/counterfactual on any text: the original and every edit classified, each a distribution, or a plain message
    (nothing to remove or negate)."""
    result, error = outcome(handlers.counterfactual, text)
    if error is None:
        table, data = result
        check_distribution(data["original"]["probabilities"])
        assert data["edits"]
        for edit in data["edits"]:
            check_distribution(edit["probabilities"], f"{edit['text']!r}'s probabilities")
        check_sane(result, (text,))


# ----------------------------------------------------------------------------- attention
def check_attention(result, inputs):
    heatmap, grid, rollout, bars, picker, notes, heads, layers, heads_picker, *texts = result
    n = len(picker["choices"])
    assert n >= 2 and picker["value"] in range(n)
    assert heads is None or heads.count('class="hv-r"') == n
    assert layers["value"] in layers["choices"]
    check_sane((heatmap, grid, rollout, bars, notes, heads, *texts), inputs)  # the figures drawn, rendered


@fuzz(40)
@given(text=TEXTS, layer=st.integers(1, 2), head=st.sampled_from(["average", 1, 2]),
       model=st.sampled_from(["mlm", "sentiment"]))
def test_attention_on_any_text(handlers, text, layer, head, model):
    """/attention's head view (HTML: the figures cost most, and read the same maps) on any text, through either
    shipped model: the maps' views, or a plain message (an empty text)."""
    result, error = outcome(handlers.attention, text, layer, head, model, "heads")
    if error is None:
        check_attention(result, (text, layer, head, model))


@fuzz(8)
@given(text=TEXTS, model=st.sampled_from(["mlm", "sentiment"]))
def test_attention_figures_on_any_text(handlers, text, model):
    """/attention's every view (`view` "all": the heatmap, the layer's heads, rollout and one token's bars, each a
    figure, each rendered as the page's Plot renders it) on any text: a token's label of any characters draws."""
    result, error = outcome(handlers.attention, text, 2, 1, model, "all")
    if error is None:
        check_attention(result, (text, model))
        assert all(isinstance(figure, Figure) for figure in result[:4])


@fuzz(40)
@given(text=st.sampled_from(["the cat sees the house.", "😀 <mask> مرحبا", "a"]), layer=NUMBERS, head=HEADS,
       token=NUMBERS, model=ATTENTION_MODELS, view=VIEW_NAMES,
       handler=st.sampled_from(["attention", "attention_layer", "attention_head", "attention_view",
                                "attention_token"]))
def test_attention_on_any_options(handlers, text, layer, head, token, model, view, handler):
    """The attention tab's endpoints (/attention, and the Layer, Head and Token pickers' and the sub-tabs') on any
    layer, head, token, model and view: the views, or a plain message about the field."""
    if handler == "attention":
        args = (text, layer, head, model, view)
    elif handler == "attention_token":
        args = (text, layer, head, token, model)
    else:
        args = (text, layer, head, token, model, view)
    result, error = outcome(getattr(handlers, handler), *args)
    if error is None:
        if handler == "attention":
            check_attention(result, args)
        else:
            check_sane(result, args)


@fuzz(30)
@given(choice=ATTENTION_MODELS, current=ATTENTION_CURRENT, layer=NUMBERS, head=HEADS)
def test_attention_model_box_on_any_choice(handlers, choice, current, layer, head):
    """The Attention tab's model box (`attention_model`, without `user_errors`: it answers every choice itself):
    the pickers of the model chosen, or the box's refusal, for any value and any current pickers."""
    value, model, status, layers, heads = handlers.attention_model(choice, current, layer, head)
    assert isinstance(status, str) and status
    if layers != gr.skip():
        assert layers["value"] in layers["choices"]
        assert heads["value"] in [value for _, value in heads["choices"]]


# ----------------------------------------------------------------------------- masking
def check_masking(result, inputs):
    table, stats, plot, predictions, plot_text, *markdown = result
    assert stats and predictions
    assert all(len(row) == len(MASKING_COLUMNS) for row in stats)
    assert all(len(row) == len(PREDICTION_COLUMNS) for row in predictions)
    for row in predictions:  # a probability as shown ("12.3%", "1.36 × 10⁻⁷%"), or None where no token was picked
        assert row[6] is None or re.fullmatch(r"[0-9.]+(?: × 10⁻[⁰-⁹]+)?%", row[6]), row
    check_sane((table, stats, plot, predictions, plot_text, *markdown), (*inputs, *strings_in(predictions)))


@fuzz(30)
@given(text=TEXTS, epochs=st.integers(1, V.MAX_EPOCHS), seed=st.integers(0, V.MAX_SEED))
def test_masking_on_any_text(handlers, text, epochs, seed):
    """The page's masking (`masking_page`: /masking's outputs and its two tables as Markdown) on any text: tables
    as wide as their columns, or a plain message (an empty text, only special tokens)."""
    result, error = outcome(handlers.masking_page, text, epochs, seed)
    if error is None:
        check_masking(result, (text, epochs, seed))


@fuzz(30)
@given(text=st.sampled_from(["the cat sees the house.", "😀 <mask> مرحبا a", "a"]), epochs=NUMBERS, seed=NUMBERS)
def test_masking_on_any_options(handlers, text, epochs, seed):
    """/masking with any epochs and seed (negative, huge, NaN, text...): the tables, or a plain message about the
    field."""
    result, error = outcome(handlers.masking, text, epochs, seed)
    if error is None:
        check_masking(result, (text, epochs, seed))


# ----------------------------------------------------------------------------- tokens
@fuzz(40)
@given(text=TEXTS, model=st.sampled_from(["shipped", " Shipped ", "", None]))
def test_tokens_on_any_text(handlers, text, model):
    """/tokens on any text: its tokens, each covering characters of the text as read, and merge by merge for one
    of its words, or a plain message."""
    result, error = outcome(handlers.tokens, text, model)
    if error is None:
        view, rows, picker, merges, steps = result
        read = V.clean_text(text)
        assert rows["characters"] == len(read) and 0 <= rows["read_characters"] <= len(read)
        assert all(0 <= token["start"] <= token["end"] <= len(read) for token in rows["tokens"])
        assert picker["value"] is None or picker["value"] in [value for _, value in picker["choices"]]
        check_sane((view, rows, merges, steps), (text, model))


@fuzz(40)
@given(word=st.one_of(WORD, NOT_TEXT, st.sampled_from(["Ġthe", "␣the", "ĠcafÃ©", "Ġ", "␣", "Ã", "ĠĠ", "Ċ"])),
       model=MODELS)
def test_bpe_merges_on_any_word(handlers, word, model):
    """/bpe_merges on any word (as typed, as the picker labels it, as the vocabulary writes it): its merges, or a
    plain message."""
    result, error = outcome(handlers.bpe_merges, word, model)
    if error is None:
        check_sane(result, (word, model))


# ----------------------------------------------------------------------------- embeddings
def check_neighbours(result, k, inputs):
    """At most k neighbours, each similarity a cosine."""
    view, data = result
    assert len(data["neighbours"]) <= V.parse_int(k, "Neighbours", 1, 100)  # k as the handler read it ("3", 3.0)
    for n in data["neighbours"]:
        assert math.isfinite(n["similarity"]) and -1 - 1e-5 <= n["similarity"] <= 1 + 1e-5, n
    check_sane(result, inputs)


@fuzz(40)
@given(word=WORD, k=st.integers(1, 100), words_only=st.booleans())
def test_neighbours_on_any_word(handlers, word, k, words_only):
    """/neighbours on any word: its nearest tokens, or a plain message (empty, too long, in too many pieces, a
    special token)."""
    result, error = outcome(handlers.neighbours, word, k, words_only)
    if error is None:
        check_neighbours(result, k, (word, k, words_only))


@fuzz(30)
@given(word=st.one_of(VOCAB_WORD, NOT_TEXT), k=NUMBERS, words_only=BOOLEANS, model=MODELS)
def test_neighbours_on_any_options(handlers, word, k, words_only, model):
    """/neighbours with any k, "only words" box and model box value: at most k tokens, or a plain message about the
    field."""
    result, error = outcome(handlers.neighbours, word, k, words_only, model)
    if error is None:
        check_neighbours(result, k, (word, k, words_only, model))


@fuzz(40)
@given(words=st.builds(lambda odd, at, others: [*others[:at], odd, *others[at:]], WORD, st.integers(0, 2),
                       st.lists(VOCAB_WORD, min_size=2, max_size=2)),
       k=st.integers(1, 100), words_only=st.booleans())
def test_analogy_on_any_words(handlers, words, k, words_only):
    """/analogy on any three words, one of them at least any word a box can get (its k and box are /neighbours',
    checked by the same code): the tokens nearest to b − a + c, or a plain message naming the word at fault."""
    a, b, c = words
    result, error = outcome(handlers.analogy, a, b, c, k, words_only)
    if error is None:
        check_neighbours(result, k, (a, b, c, k, words_only))


@fuzz(40)
@given(words=st.one_of(st.builds(str.join, st.sampled_from([", ", ";", "\n", " ", ",,", " ,"]),
                                 st.lists(st.one_of(VOCAB_WORD, WORD), min_size=3, max_size=12, unique=True)),
                       TEXTS, NOT_TEXT))
def test_word_map_on_any_words(handlers, words):
    """/word_map on any box of words: the map and its table, or a plain message (too few or too many words, too few
    placeable)."""
    result, error = outcome(handlers.word_map, words)
    if error is None:
        check_figure(result[0])
        check_sane(result, (words,))


@fuzz(10)
@given(model=MODELS)
def test_positions_on_any_model(handlers, model):
    """/positions on any model box value: the figure and its numbers, or a plain message."""
    result, error = outcome(handlers.positions, model)
    if error is None:
        check_figure(result[0])
        check_sane(result, (model,))
