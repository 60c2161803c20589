"""The Fill mask tab's views read well whatever the model predicts: a token that is whitespace or part of a
character gets a readable label (never blank, `' '` or "�"), a long word's chips wrap, a candidate word that only a
lone space or a byte would score is refused, the layer-by-layer table keeps its numbers whole on a phone, and what
a hover says is there for a keyboard, a phone and a screen reader too."""
import html
import re

import gradio as gr
import pytest

from demo import fill_mask_view, layer_lens
from demo.formatting import PART_LABEL, format_exact_probability, token_label, word_label, word_labels
from demo.tokens_view import tokenize


class Vocabulary:
    """A stand-in for a tokenizer's `id_to_token`: the byte-level vocabulary entries of a few ids."""

    def __init__(self, entries: dict[int, str]):
        self.entries = entries

    def id_to_token(self, token_id: int) -> str:
        return self.entries[token_id]


# three predictions for "東京は日本の<mask>です。": two bytes of a character's UTF-8 (decoded alone, both "�"), a
# thin space; their vocabulary entries name the bytes
FRAGMENTS = [{"token": 11, "token_str": "\ufffd", "score": 0.07}, {"token": 12, "token_str": " \ufffd", "score": 0.04},
             {"token": 13, "token_str": "\u2009", "score": 0.02}]
VOCABULARY = Vocabulary({11: "æ", 12: "Ġã", 13: "âĢī", 14: "Ġ"})


def _body(view: str) -> str:
    return view.split("</style>", 1)[1]


# ----------------------------------------------------------------------------- labels
@pytest.mark.parametrize("token_str, piece, label", [
    (" Paris", None, "Paris"),  # a word as before: without its leading space
    (" ", None, "␣"), (" ", "Ġ", "␣"), ("  ", None, "␣␣"), ("\n", None, "↵"),
    ("\u2009", None, "⟨U+2009 thin space⟩"), (" \u3000", None, "⟨U+3000 ideographic space⟩"),
    ("\ufffd", "æ", "⟨byte 0xE6⟩ (part of a character)"), (" \ufffd", "Ġã", "⟨byte 0xE3⟩ (part of a character)"),
    ("\ufffd\ufffd", "ðŁ", "⟨bytes 0xF0 0x9F⟩ (part of a character)"),
    ("caf\ufffd", "cafÃ", "caf⟨byte 0xC3⟩ (part of a character)"),
    ("\ufffd", None, PART_LABEL), ("\ufffd\ufffd", None, PART_LABEL),  # decoded alone: which bytes is lost
])
def test_word_label_names_whitespace_and_bytes(token_str, piece, label):
    assert word_label(token_str, piece) == label


def test_token_label_keeps_the_leading_space_and_look_alikes_still_differ():
    assert token_label(" \ufffd", "Ġã") == "␣⟨byte 0xE3⟩ (part of a character)"
    assert token_label(" \u2009") == "␣⟨U+2009 thin space⟩"
    assert word_labels([" The", "The", " \ufffd", "\ufffd"]) == ["␣The", "The", "␣" + PART_LABEL, PART_LABEL]


# ----------------------------------------------------------------------------- predictions, Label, sentence
def test_predictions_read_as_labels_and_the_raw_values_stay():
    raw = [dict(r) for r in FRAGMENTS]
    body = _body(fill_mask_view.predictions_html([FRAGMENTS], tokenizer=VOCABULARY))
    words = re.findall(r'class="fm-word fm-label">([^<]*)<', body)  # a label wraps (tests/test_app_browser.py)
    assert words == ["⟨byte 0xE6⟩ (part of a character)", "⟨byte 0xE3⟩ (part of a character)",
                     "⟨U+2009 thin space⟩"]
    assert list(fill_mask_view.mask_labels([FRAGMENTS], VOCABULARY)[0]) == words
    assert FRAGMENTS == raw  # token_str, what the API returns, is left as the model decoded it
    # without the tokenizer the bytes cannot be named, but nothing reads "�" or is blank
    body = _body(fill_mask_view.predictions_html([FRAGMENTS]))
    assert "\ufffd" not in body and '"fm-word fm-label">⟨U+2009 thin space⟩<' in body and f">{PART_LABEL}<" in body
    assert all("\ufffd" not in name and name.strip() for name in fill_mask_view.mask_labels([FRAGMENTS])[0])


def test_a_candidates_label_says_when_its_score_is_a_pieces():
    """The reviewer's case: the API's label read {"france": 3.9e-06}, the probability of the piece " f", which only
    the page said. A candidate's label says what its row says: the piece that scored it, or the words that share
    it; a word that is one token is named alone."""
    row = [{"token": 7, "token_str": " France", "score": 0.12, "candidates": ["France"]},
           {"token": 8, "token_str": " f", "score": 3.9e-06, "candidates": ["france"]},
           {"token": 9, "token_str": " Par", "score": 2e-06, "candidates": ["Parisian", "Paradise"]}]
    assert fill_mask_view.mask_labels([row])[0] == {
        "France": 0.12, "france (scored by its first piece ‘f’)": 3.9e-06,
        "Parisian, Paradise (these 2 words share one first piece ‘Par’, so one score)": 2e-06}


def test_several_masks_are_said_to_be_separate_guesses():
    """For “The <mask> sat on the <mask> all day.” the completed sentence joins “movie” and “shelf”, each guessed
    with the other still masked: the note says so when there are two masks or more, and not for one."""
    one = [{"score": 0.5, "token": 1, "token_str": " dog"}]
    said = "Each mask is predicted on its own, with the other masks still masked"
    assert said in fill_mask_view.predictions_html([one, one])
    assert said not in fill_mask_view.predictions_html([one])
    # three masks are not "a pair"; and the caveat opens the note, not buried after the hover and count notes
    note = fill_mask_view.predictions_html([one, one, one]).split('class="fm-note">')[1]
    assert note.startswith(said) and "the pair" not in note and "any two masks together" in note


def test_a_lone_space_prediction_is_not_quoted():
    row = [{"token": 14, "token_str": " ", "score": 0.3}, {"token": 15, "token_str": " it", "score": 0.1}]
    assert re.findall(r'class="fm-word[^"]*">([^<]*)<', _body(fill_mask_view.predictions_html([row]))) == ["␣", "it"]
    summary = fill_mask_view.comparison_html("I love <mask>", [("ours", [row], "", None)])
    assert "ours “␣”" in summary and "' '" not in summary


def _summary(columns) -> str:
    return re.search(r'<p class="fm-compare-summary">(.*?)</p>', fill_mask_view.comparison_html("a <mask>", columns),
                     re.S)[1]


def _answers_table(row, tokenizer=None, candidates=None) -> list[str]:
    """The names the answers table gives a row's predictions, as its cells read (without a note's small print)."""
    view = _body(fill_mask_view.predictions_html([row], candidates, tokenizer=tokenizer))
    return [html.unescape(name) for name in re.findall(r'<th scope="row" class="fm-word[^"]*"[^>]*>([^<]*)<', view)]


def test_the_comparison_names_each_top_answer_as_its_answers_table_does():
    """The comparison's summary named a top answer by `word_label` alone: " this" where the table also lists "this"
    read “this” (the table: "␣this"), the bytes of part of a character read "⟨part of a character⟩" (the table
    names them), and a candidate scored by its first piece read as if it were the word's own probability."""
    look_alike = [{"token": 415, "token_str": " this", "score": 0.474}, {"token": 6837, "token_str": "this",
                                                                          "score": 0.01}]
    candidate = [{"token": 7, "token_str": "Par", "score": 4.63e-7, "candidates": ["Paris"]}]
    summary = _summary([("ours", [look_alike], "", None), ("bytes", [FRAGMENTS], "", VOCABULARY),
                        ("words", [candidate], "", None)])
    assert f"ours “{_answers_table(look_alike)[0]}” (47.4%)" in summary and "“␣this”" in summary
    assert f"bytes “{_answers_table(FRAGMENTS, VOCABULARY)[0]}” (7.00%)" in summary and "0xE6" in summary
    how = fill_mask_view.candidate_label(candidate[0])[1]  # what the candidate's row says, in parentheses
    assert how and f"words “Paris” (4.63 × 10⁻⁵%; {how[1:-1]})" in summary


def test_the_comparison_tells_apart_two_models_top_tokens_that_read_the_same():
    """" Paris" (after a space) from one model and "Paris" (glued to what precedes it) from the other are two
    tokens: the one with the space says so. The same token from both models reads the same."""
    spaced, glued = [{"token": 1, "token_str": " Paris", "score": 0.5}], [{"token": 2, "token_str": "Paris",
                                                                            "score": 0.4}]
    summary = _summary([("a", [spaced], "", None), ("b", [glued], "", None)])
    assert "a “␣Paris” (50.0%); b “Paris” (40.0%; ends the word before)" in summary  # "a <mask>": "aParis"
    summary = _summary([("a", [spaced], "", None), ("b", [spaced], "", None)])
    assert "a “Paris” (50.0%); b “Paris” (50.0%)" in summary


def test_a_word_piece_that_ends_the_word_before_says_so(tokenizer):
    """"Seth <mask> is an actor." gave "row" and "eth" among the shipped model's answers: pieces with no space
    before them, which end "Seth" ("Sethrow"), yet whose rows read as words of their own. The table, the Label and
    the comparison say so; a word after a space, a comma, and a piece at a mask with no space before it
    ("foot<mask>", where a glued piece is the ordinary answer) do not."""
    row = [{"token": 1, "token_str": " Paltrow", "score": 0.6}, {"token": 2, "token_str": "row", "score": 0.01},
           {"token": 3, "token_str": ",", "score": 0.005}]
    note = fill_mask_view.GLUED_NOTE
    for text, glued in (("Seth <mask> is an actor.", True), ("foot<mask> is a game.", False)):
        view = _body(fill_mask_view.predictions_html([row], tokens=tokenize(tokenizer, text, 64)))
        cells = re.findall(r'<th scope="row" class="fm-word[^"]*">(.*?)</th>', view)
        assert cells == ["Paltrow", f"row<small>{note}</small>" if glued else "row", ","]
        labels = fill_mask_view.mask_labels([row], spaces=fill_mask_view.mask_spaces(text))[0]
        assert list(labels) == ["Paltrow", "row (ends the word before)" if glued else "row", ","]
    assert note not in _body(fill_mask_view.predictions_html([row]))  # no text given: nothing is said
    summary = re.search(r'<p class="fm-compare-summary">(.*?)</p>', fill_mask_view.comparison_html(
        "Seth <mask>", [("ours", [row[1:]], "", None)]), re.S)[1]
    assert "ours “row” (1.00%; ends the word before)" in summary


def test_the_completed_sentence_shows_a_readable_fill():
    assert fill_mask_view.completed_sentence("東京は日本の<mask>です。", ["\ufffd"])[1] == (PART_LABEL, "<mask> 1")
    assert fill_mask_view.completed_sentence("I love <mask> 🍕", [" "])[1] == ("␣", "<mask> 1")
    assert fill_mask_view.completed_sentence("a <mask> b", [" \u2009"])[1] == ("␣⟨U+2009 thin space⟩", "<mask> 1")
    assert fill_mask_view.completed_sentence("a <mask> b", [" \ufffd"])[:2] == [("a ", None), (PART_LABEL, "<mask> 1")]
    # a word's space goes before its highlight: a line that wrapped there began with a blank in it ("␣tea")
    assert fill_mask_view.completed_sentence("a <mask> b", [" Paris"]) == [("a ", None), ("Paris", "<mask> 1"),
                                                                          (" b", None)]
    # a mask that opens the text: its word without the space it was predicted with; a lone space still shown
    assert fill_mask_view.completed_sentence("<mask> is the capital.", [" Paris"]) == [("Paris", "<mask> 1"),
                                                                                    (" is the capital.", None)]
    assert fill_mask_view.completed_sentence("<mask> <mask>", [" ", " b"])[0] == ("␣", "<mask> 1")
    # given the model's tokenizer, the fill names its bytes (and is left as it is by the sentence)
    fill = fill_mask_view.prediction_fill(FRAGMENTS[0], VOCABULARY)
    assert fill == "⟨byte 0xE6⟩ (part of a character)"
    assert fill_mask_view.completed_sentence("日本の<mask>です", [fill])[1] == (fill, "<mask> 1")


def test_fill_mask_never_shows_a_replacement_character(handlers):
    """Japanese text through the fixture model: whatever it predicts, the page shows no "�"; the raw values are
    the pipeline's."""
    filled, *labels, raw, view = handlers.fill_mask("東京は日本の<mask>です。", 5)
    assert "\ufffd" not in "".join(part for part, _ in filled) and "\ufffd" not in _body(view)
    assert all("\ufffd" not in name and name.strip() for name in labels[0])
    assert [r["token_str"] for r in raw[0]] == [handlers.models.mlm.tokenizer.decode([r["token"]]) for r in raw[0]]


# ----------------------------------------------------------------------------- a long word
def test_a_long_word_is_one_word_in_pieces(handlers):
    """Its chips sit together, and a screen reader hears that they are one word (that they wrap on a phone:
    tests/test_app_browser.py)."""
    view = handlers.fill_mask("<mask> https://example.com/averylongpathwithoutspaces")[-1]
    word = re.search(r'<span class="fm-w">((?:<span class="fm-tok[^"]*"[^>]*>[^<]*</span>)+)'
                     r'<b class="fm-sr"> \(one word in (\d+) pieces\)</b></span>', view)
    assert word and word[1].count('class="fm-tok') == int(word[2]) > 5


def test_a_newline_starts_a_new_word_among_the_chips(tokenizer):
    """A token of whitespace alone starts the word after it, whatever its label: a newline ("↵") too, so "one" and
    "line" of "one\nline" are two words, not one word "one↵line" in pieces."""
    from demo.tokens_view import tokenize

    view = fill_mask_view.tokens_html(tokenize(tokenizer, "one\nline", 64))
    words = [re.sub("<[^>]+>", "", word)
             for word in re.findall(r'<span class="fm-w">((?:<span class="fm-tok[^"]*"[^>]*>[^<]*</span>)+)', view)]
    assert words == ["&lt;s&gt;", "one", "↵line", "&lt;/s&gt;"]


def test_the_special_chips_and_the_space_sign_are_explained(tokenizer):
    """The first tab showed <s>, </s> and "␣" with no word on them (the Tokens tab explains them, three tabs
    later): hovering <s> or </s> says what it is, and the caption says what ␣ stands for."""
    from demo.tokens_view import tokenize

    view = fill_mask_view.tokens_html(tokenize(tokenizer, "the cat <mask>.", 64))
    titles = dict(re.findall(r'<span class="fm-tok fm-special" title="([^"]*)">([^<]*)</span>', view))
    assert {html.unescape(chip): html.unescape(title) for title, chip in titles.items()} == {
        "<s>": "<s>: the start of every text, added by the tokenizer",
        "</s>": "</s>: the end of every text, added by the tokenizer"}
    assert "␣ marks a space, which a word's first token carries (“␣b”; the chips leave it out); the Tokens tab " \
           "shows the whole cut" in html.unescape(view)


def test_the_layer_note_says_what_the_mlm_head_is():
    """“MLM head” was used on the first tab and defined nowhere in the app."""
    note = layer_lens.layers_html(_lens(FRAGMENTS)).split('class="ll-note">')[1]
    assert note.startswith("The model's MLM head (a layer on top, then a projection onto every vocabulary token, "
                           "tied to the embeddings: one score per vocabulary token, softmaxed into the probabilities "
                           "above) reads each layer's output")


# ----------------------------------------------------------------------------- candidates
@pytest.mark.parametrize("text, targets, match", [
    ("I ate a <mask>.", "🍕, house", "“🍕” cannot be scored: its first piece is a lone space, which says nothing "
                                     "about the word. Leave it out, or try a word the vocabulary has."),
    ("The (<mask>) is good.", "house, 🍕", "“🍕” cannot be scored: its first piece is part of a character"),
    ("I ate a <mask>.", "🍕, 🍔", "“🍕” and “🍔” cannot be scored: each one’s first piece is a lone space"),
    ("I ate a <mask>.", "🍕, 🍔, 🌮", "“🍕”, “🍔” and “🌮” cannot be scored: each one’s first piece is a lone space"),
])
def test_a_candidate_scored_by_a_lone_space_or_a_byte_is_refused(handlers, text, targets, match):
    with pytest.raises(gr.Error, match=re.escape(match)):
        handlers.fill_mask(text, 5, targets)


def test_ordinary_candidates_are_still_scored(handlers):
    """A word of several pieces is still scored by its first piece when that piece is more than a space (" c" for
    "catalogue" to the tiny tokenizer)."""
    filled, *labels, raw, view = handlers.fill_mask("I ate a <mask>.", 5, "house, catalogue")
    assert sorted(w for r in raw[0] for w in r["candidates"]) == ["catalogue", "house"]
    assert ">catalogue<small>(scored by its first piece ‘c’)</small>" in view


# ----------------------------------------------------------------------------- layer by layer
def _lens(top: list[dict]) -> list[dict]:
    return [{"answer": top[0], "layers": [{"layer": 0, "top": top, "answer_score": 1.99e-4, "answer_rank": 605},
                                          {"layer": 1, "top": top, "answer_score": 0.07, "answer_rank": 1}]}]


def test_layer_table_labels_whitespace_and_bytes():
    view = layer_lens.layers_html(_lens(FRAGMENTS), VOCABULARY)
    guesses = re.findall(r'class="ll-guess(?: ll-answer)?">([^<]*)<', view)
    assert guesses[:3] == ["⟨byte 0xE6⟩ (part of a character) 7.00%", "⟨byte 0xE3⟩ (part of a character) 4.00%",
                           "⟨U+2009 thin space⟩ 2.00%"]
    assert "where “⟨byte 0xE6⟩ (part of a character)” comes from" in view
    plain = layer_lens.layers_html(_lens(FRAGMENTS))  # without the tokenizer: no "�", no quoted '\u2009'
    assert "\ufffd" not in plain and "\\u2009" not in plain and "⟨U+2009 thin space⟩ 2.00%" in plain


def test_layer_table_scrolls_in_its_own_box():
    """One box per mask, with the name demo/page.js gives it, a Tab stop and a region, only while it scrolls (on a
    computer it fits: a Tab stop there was empty). That the table fits a phone scrolling in it, its bars shown and
    its numbers whole, and that the box is a Tab stop there only: tests/test_app_browser.py."""
    view = layer_lens.layers_html(_lens(FRAGMENTS))
    assert view.count('<div class="ll-scroll" data-name="&lt;mask&gt; 1, layer by layer"><table class="ll-table">') == 1
    assert "tabindex" not in view and "role=" not in view
    assert '<td class="ll-score">#605 · 0.0199%</td>' in view


# ----------------------------------------------------------------------------- what a hover says, without one
def test_a_scores_exact_value_and_a_shared_rows_words_are_there_without_a_hover():
    """A score's exact value and ln p, and all the words of a shared row (only 5 are listed), were in `title`
    only, which a keyboard, a phone and (often) a screen reader never reach. Each is also text in the cell, hidden
    from sight (`fm-exact`: read by a screen reader), that the table shows in line when it has the focus: the table
    is a Tab stop, and a tap focuses it; the note says so."""
    words = ["sea", "seaside", *(f"sea{i}" for i in range(6))]
    row = [{"token": 21, "token_str": " sea", "score": 0.3, "candidates": words},
           {"token": 22, "token_str": " bird", "score": 0.0123}]
    view = fill_mask_view.predictions_html([row], words + ["bird"])
    body = _body(view)
    table = re.search(r"<table ([^>]*)>", body)[1]
    assert 'tabindex="0"' in table and 'aria-label="&lt;mask&gt; 1: the answers"' in table
    scores = re.findall(r'<td class="fm-score" title="([^"]*)">([^<]*)<span class="fm-exact"> \((.*?)\)</span></td>',
                        body)
    # the exact value is a percentage too, as every score beside it (it was "p = 3.000e-01")
    assert [(title, shown) for title, shown, _ in scores] == [("p = 30%, ln p = −1.20", "30.0%"),
                                                              ("p = 1.23%, ln p = −4.40", "1.23%")]
    assert [re.sub("<[^>]+>", "", said) for _, _, said in scores] == [title for title, _, _ in scores]
    shared = re.search(r'<th scope="row" class="fm-word fm-cand"[^>]*>(.*?)</th>', body)[1]
    assert "and 3 more<small>" in shared and f'<span class="fm-exact"> (all 8: {", ".join(words)})</span>' in shared
    assert "Hover a score, or focus its table (Tab, or a tap), for the exact value" in body
    # hidden from sight until the table has the focus, then in line
    css = view.split("</style>", 1)[0]
    assert ".fm-exact{position:absolute;width:1px;height:1px;overflow:hidden;clip-path:inset(50%)" in css
    assert ".fm-mask table.fm-table:focus .fm-exact{position:static;display:block" in css


def test_each_chips_count_is_in_a_closed_details_too(handlers):
    """A chip of "How the model reads it" said its token's count in the pretraining text on hover only: the same
    sentences are listed, each token once, in a closed <details> under the chips (none without counts)."""
    import numpy as np

    from demo.tokens_view import tokenize
    from demo.training_counts import TrainingCounts

    tokenizer = handlers.models.mlm.tokenizer
    size = tokenizer.get_vocab_size()
    counts = TrainingCounts(("tiny text", "tiny reviews"), (1000, 2000), np.arange(2 * size).reshape(2, size), "x")
    tokens = tokenize(tokenizer, "the cat sees the <mask> and the house.", 64)
    view = fill_mask_view.tokens_html(tokens, counts=counts)
    counted = r'class="fm-tok(?! fm-special)[^"]*" title="([^"]*)"'  # <s> and </s> say what they are instead
    titles = list(dict.fromkeys(html.unescape(t) for t in re.findall(counted, view)))
    in_full = re.search(r'<details class="fm-counts fm-tok-counts"><summary>(.*?)</summary><ul>(.*?)</ul></details>',
                        view)
    assert in_full and in_full[1].startswith("Each token’s count in the pretraining text")
    assert [html.unescape(item) for item in re.findall("<li>(.*?)</li>", in_full[2])] == titles
    regular = [i for i, special in zip(tokens.ids, tokens.special) if not special]
    assert len(titles) == len(set(regular)) < len(regular)  # " the", three times in the text: said once
    assert "<details" not in fill_mask_view.tokens_html(tokens)


@pytest.mark.parametrize("p, said", [(0.118104, "11.8104%"), (1.36035e-5, "0.00136035%"),
                                     (4.150321e-7, "4.15032 × 10⁻⁵%"), (1.0, "100%"), (0.0, "0%")])
def test_a_hovers_exact_value_is_a_percentage(p, said):
    """The hover's “exact value” was a fraction in e-notation (“p = 1.181e-01”) beside the cell's “11.8%”: it is
    the same percentage with six significant digits, and a power of ten where `format_probability` uses one."""
    assert format_exact_probability(p) == said
