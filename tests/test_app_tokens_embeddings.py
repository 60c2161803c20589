"""The tokens and embeddings tabs' handlers as plain functions, with the tiny random fixture models (the views
themselves: tests/test_bpe_view.py, tests/test_embedding_view.py)."""
import html
import warnings

import gradio as gr
import pytest
import torch
from matplotlib.figure import Figure

from demo import bpe_view, position_view, word_map
from demo.embedding_view import score_analogies
from demo.examples import ANALOGY_PROBE, MAP_WORDS
from demo.formatting import readable
from demo.validation import MAX_CHARS

TEXT = "The old man follows the river every day."


def _error(match):
    return pytest.raises(gr.Error, match=match)


# ----------------------------------------------------------------------------- tokens
def test_tokens_shows_every_token_and_the_default_words_merges(handlers, models):
    view, rows, picker, merges, steps = handlers.tokens(TEXT)
    tokenizer = models.mlm.tokenizer
    encoding = tokenizer.encode(TEXT)
    assert [row["id"] for row in rows["tokens"]] == encoding.ids  # <s> ... </s>, as the model reads it
    assert view.count('class="bpe-chip ') == len(encoding.ids) and not rows["truncated"]
    assert "40 characters, 40 bytes, 8 words (split at spaces)" in view
    # the picker offers the text's words (byte-level form, readable labels), the default one picked
    words = bpe_view.pretokens(tokenizer, TEXT)
    assert picker["choices"] == [(readable(w), w) for w in words]
    assert picker["value"] == bpe_view.pick_pretoken(tokenizer, words) in words
    # its merges end in the word's tokens, as the tokenizer cuts it
    assert steps[-1]["pieces"] == [t.value for t in tokenizer.model.tokenize(picker["value"])]
    assert steps[0]["merged"] is None and all(step["merged"] for step in steps[1:])
    assert merges == handlers.bpe_merges(picker["value"])[0]


def test_bpe_merges_takes_a_word_as_typed_or_as_the_picker_names_it(handlers, models):
    typed = handlers.bpe_merges(" river")[1]
    assert typed == handlers.bpe_merges("Ġriver")[1] == handlers.bpe_merges("␣river")[1]  # as typed, value, label
    assert typed[-1]["pieces"] == [t.value for t in models.mlm.tokenizer.model.tokenize("Ġriver")]


@pytest.mark.parametrize("word, match", [
    (" old man", "is 2 words to this tokenizer"),
    ("x" * 41, "up to 40 bytes"),
    (None, "no word"),
    (5, "The word must be a string"),
    ("", "no word"),
])
def test_bpe_merges_bad_words_are_plain_errors(handlers, word, match):
    with _error(match):
        handlers.bpe_merges(word)


@pytest.mark.parametrize("typed", ["<s>", " </s>", "<mask>", "<pad>"])
def test_a_special_token_has_no_merges_as_the_texts_tokens_show(handlers, typed):
    """/tokens reads "<s>" typed in a text as the special token (one dashed box); /bpe_merges called it 3 words
    (< · s · >): it says it is a special token, which BPE never merges."""
    assert any(row["special"] and row["text"] == "" and row["token"] == typed.strip()
               for row in handlers.tokens(f"a {typed} b")[1]["tokens"])
    with _error(f"“{html.escape(typed.strip())}” is a special token: the tokenizer finds it whole"):  # page's HTML
        handlers.bpe_merges(typed)


def test_tokens_of_a_long_text_say_what_is_read(handlers, models):
    """A cut text is said in the view, with the counts of the part read (no pop-up), and the picker offers the
    words of that part only."""
    max_length = models.mlm.config.max_length
    text = "the cat sees the house. " * 199 + "antidisestablishment"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        view, rows, picker, *_ = handlers.tokens(text)
    assert rows["truncated"] and len(rows["tokens"]) == max_length and not caught
    assert f'First {rows["read_characters"]:,} of {len(text):,} characters' in view and "Cut:" in view
    assert "Ġantidisestablishment" not in [value for _, value in picker["choices"]]


def test_words_too_long_for_merge_by_merge_are_said_not_silently_dropped(handlers):
    """A word over MAX_PRETOKEN_BYTES bytes is not in the picker: the merges view names it, beside the word replayed
    instead, or alone (as a message) when every word is too long."""
    long_word = "Supercalifragilisticexpialidociouslyextraordinarily"
    _, _, picker, merges, steps = handlers.tokens(f"{long_word} cat")
    assert steps and all(len(value) <= bpe_view.MAX_PRETOKEN_BYTES for _, value in picker["choices"])
    assert f"“Supercalifragilisticexpi…” ({len(long_word)} bytes) left out" in merges
    _, _, picker, merges, steps = handlers.tokens("a" * 60)
    assert not picker["choices"] and steps is None
    assert 'role="alert"' in merges and "(60 bytes) left out: merge by merge shows words of up to 40 bytes" in merges
    _, _, _, merges, _ = handlers.tokens("the cat")
    assert "left out" not in merges


def test_a_text_of_special_tokens_alone_says_why_merge_by_merge_is_empty(handlers):
    """Special tokens are found whole, not built by merges: a text of nothing else has no word to replay, and the
    merges view says so in one line (it was empty, with no reason given)."""
    view, rows, picker, merges, steps = handlers.tokens("<s></s><pad><unk><mask>")
    assert all(row["special"] for row in rows["tokens"]) and not picker["choices"] and steps is None
    assert 'role="alert"' in merges and html.escape(bpe_view.ONLY_SPECIAL, quote=False) in merges


@pytest.mark.parametrize("call, limit", [
    (lambda h, word: h.neighbours(word), "The word is 200,001 characters long: type one word of at most 40 "
                                         "characters."),
    (lambda h, word: h.analogy("man", word, "woman"), "Word b is 200,001 characters long: type one word of at most 40"),
    (lambda h, word: h.bpe_merges(word), "The word is 200,001 characters long: merge by merge shows words of up to 40 "
                                         "bytes"),
], ids=["neighbours", "analogy", "bpe_merges"])
def test_a_word_box_says_its_own_limit_for_a_paste_longer_than_a_text(handlers, call, limit):
    """A word box takes one word (at most 40 characters; merge by merge 40 bytes): a paste over the app's text
    limit is told that limit, not the 200,000 characters of a text."""
    with _error(limit) as info:
        call(handlers, "x" * (MAX_CHARS + 1))
    assert f"{MAX_CHARS:,}" not in str(info.value)


@pytest.mark.parametrize("text", ["", "   \u200b", None, 5])
def test_tokens_bad_text(handlers, text):
    with _error("empty|must be a string"):
        handlers.tokens(text)


def test_tokens_of_html_and_odd_text_are_escaped(handlers):
    text = "<script>alert(1)</script> 東京 😀"
    view, rows, picker, merges, _ = handlers.tokens(text)
    assert "<script>" not in view and "<script>" not in merges
    # the byte pieces of one character share its span: each span once, in order, gives the text back
    spans = dict.fromkeys((row["start"], row["end"]) for row in rows["tokens"] if not row["special"])
    assert "".join(text[start:end] for start, end in spans) == text.replace(" ", "")  # spans leave out spaces


# ----------------------------------------------------------------------------- embeddings
def test_neighbours_rank_by_cosine_similarity(handlers, models):
    view, result = handlers.neighbours("cat", 5, False)
    assert [n["similarity"] for n in result["neighbours"]] == sorted(
        (n["similarity"] for n in result["neighbours"]), reverse=True)
    assert len(result["neighbours"]) == 5 and "Nearest to “cat”" in view
    # the first one is the row most like the word's own, by cosine, among the other ordinary tokens
    table = models.mlm.model.roberta.embeddings.word_embeddings.weight.detach()
    own = models.mlm.tokenizer.encode(" cat", add_special_tokens=False).ids
    sims = torch.nn.functional.cosine_similarity(table, table[own].mean(0, keepdim=True))
    assert result["neighbours"][0]["similarity"] == pytest.approx(
        float(sims[result["neighbours"][0]["token"]]), abs=1e-5)
    assert not set(own) & {n["token"] for n in result["neighbours"]}


@pytest.mark.parametrize("args, match", [
    (("", 5, True), "empty"),
    (("cat", 0, True), "Neighbours must be between 1 and 100"),
    (("cat", "many", True), "Neighbours must be a whole number"),
    (("cat", 5, "yes"), "“Only tokens that begin a word” must be ticked or not \\(true or false\\), got “yes”\\."),
    (("cat", 5, 2), "“Only tokens that begin a word” must be ticked or not \\(true or false\\), got 2\\."),
    (("cat", 5, None), "“Only tokens that begin a word” is empty: send true or false\\."),
    ((3, 5, True), "The word must be a string"),
    (("😀", 5, True), "“😀” has characters this tokenizer cuts into bytes .*⟨byte 0xF0⟩.*says nothing"),
    # in part: refused too
    (("x東", 5, True), "“x東” has characters this tokenizer cuts into bytes .*⟨byte 0xE6⟩.*says nothing"),
])
def test_neighbours_bad_input(handlers, args, match):
    with _error(match):
        handlers.neighbours(*args)


def test_embeddings_read_a_word_as_the_tokens_tab_shows_it(handlers, models):
    """"␣cat" (the Tokens tab's label) is the word "cat" (it was read as bytes: "␣⟨byte 0xE2⟩ ⟨byte 0x90⟩ ⟨byte
    0xA3⟩ cat"), and so is a vocabulary entry as the vocabulary writes it ("Ġsea", which /bpe_merges takes too).
    Before a word that makes no entry, "Ġ" is a letter (Maltese "Ġenerali"): this vocabulary cuts " cat" into
    pieces, so "Ġcat" is read as typed."""
    vocabulary = models.mlm.tokenizer
    assert vocabulary.token_to_id("Ġsea") is not None and vocabulary.token_to_id("Ġcat") is None
    cat = handlers.neighbours("cat", 5, True)
    assert handlers.neighbours("␣cat", 5, True) == cat
    assert handlers.neighbours("Ġsea", 5, True) == handlers.neighbours("␣sea", 5, True) == handlers.neighbours(
        "sea", 5, True)
    assert handlers.analogy("␣man", "Ġsea", "woman")[1] == handlers.analogy("man", "sea", "woman")[1]
    assert handlers.word_map("␣cat, Ġsea, house, river")[1] == handlers.word_map("cat, sea, house, river")[1]
    with _error("“Ġcat” has characters this tokenizer cuts into bytes"):
        handlers.neighbours("Ġcat", 5, True)


def test_analogy_and_its_errors(handlers):
    view, result = handlers.analogy("man", "king", "woman")
    assert result["query"] == ["man", "king", "woman"] and len(result["neighbours"]) == 10
    assert "man is to king as woman is to" in view
    assert not {"man", "king", "woman"} & {n["token_str"].strip() for n in result["neighbours"]}
    with _error("Word b"):
        handlers.analogy("man", "", "woman")
    with _error("three different words"):
        handlers.analogy("man", "man", "woman")
    with _error("Word c is empty"):
        handlers.analogy("man", "king", None)


def test_word_map_and_positions_are_figures(handlers, models):
    figure, text = handlers.word_map("cat, dog, house, river")
    assert isinstance(figure, Figure) and "PC 1" in figure.axes[0].get_xlabel()
    # (each word in pieces to the tiny tokenizer, and marked so)
    assert {t.get_text().rstrip("*") for t in figure.axes[0].texts} >= {"cat", "dog", "house", "river"}
    # the same in words: each word's coordinates, in a closed table
    assert "<details><summary>The map as a table (4 words)" in text and '<th scope="row">river*</th>' in text
    with _error("Give 3 to 30 different words, separated by commas, semicolons or new lines.*: 1 given"):
        handlers.word_map("cat")
    # the box has several lines: a word a line is a list too (it was one word of 3), as in the candidates' box
    assert handlers.word_map("cat\ndog\nhouse;river")[1] == handlers.word_map("cat, dog, house, river")[1]
    # and words separated by spaces alone are words too: "cat dog bird fish" was refused as "(1 given)"
    assert handlers.word_map("cat dog house river")[1] == handlers.word_map("cat, dog, house, river")[1]
    with _error(r"\(or by spaces, where there is none of those\): 2 given\."):
        handlers.word_map("cat  dog")
    # the default words, chosen for the shipped tokenizer: another one leaves out those it cuts in many pieces
    default, text = handlers.word_map(MAP_WORDS)
    assert handlers.word_map(MAP_WORDS)[0] is default  # drawn once per model and words: every page load asks for it
    # the words left out are said once, under the figure: drawn in it too, the page showed them twice
    assert text.count("Left out: ") == 1 and not default.texts
    assert not any("Left out" in t.get_text() for ax in default.axes for t in ax.texts)
    note, placed = html.unescape(text), {t.get_text() for t in default.axes[0].texts}
    assert len(placed) >= word_map.MIN_MAP_WORDS
    assert all(word in placed or f"“{word}”" in note for word in word_map.parse_words(MAP_WORDS))
    positions, numbers = handlers.positions()
    assert handlers.positions()[0] is positions  # drawn once per model: every page load asks for it
    n = models.mlm.config.max_length  # the rows the model reads: max_length of them, from pad_token_id + 1
    assert isinstance(positions, Figure) and positions.axes[0].images[0].get_array().shape == (n, n)
    # the same in numbers: the mean similarity at distances 1 to 16, the ends against their neighbour
    table = models.mlm.model.roberta.embeddings.position_embeddings.weight
    sim = position_view.position_similarities(table, models.mlm.config.pad_token_id + 1)
    assert numbers.count("<tr><td>") == 16 and f"<tr><td>1</td><td>{float(sim.diagonal(1).mean()):.2f}</td>" in numbers
    assert f"Position 0 and 1: {float(sim[0, 1]):.2f}; positions {n - 2} and {n - 1}: " in numbers


def test_an_embedding_figure_is_its_tables_alone(handlers):
    """The figures are cached by the table's id: a Hub model's table freed (the model evicted) leaves its id to
    the next model's, which must get a figure of its own, not the freed table's."""
    import weakref

    import torch

    table, drawn = torch.zeros(3, 2), []
    assert handlers._figure(table, "what", lambda: drawn.append(1) or "first") == "first"
    assert handlers._figure(table, "what", lambda: drawn.append(2) or "again") == "first"  # cached
    dead = weakref.ref(torch.zeros(1))  # a table that lived at this id before, freed since
    handlers._figures.entries[(id(table), (table._version, "what"))] = (dead, "the freed table's figure")
    assert dead() is None and handlers._figure(table, "what", lambda: "its own") == "its own"
    assert drawn == [1]


def test_a_tokenizer_merge_by_merge_cannot_replay_still_shows_its_tokens(handlers, monkeypatch):
    """Merge by merge needs byte-level BPE; any other tokenizer (a Hub model's WordPiece) still shows its
    tokens, with the reason in place of the merges and an empty picker."""
    def refuse(tokenizer, text):
        raise ValueError("Merge by merge replays byte-level BPE only.")

    monkeypatch.setattr(bpe_view, "pretokens", refuse)
    view, rows, picker, merges, steps = handlers.tokens(TEXT)
    assert rows["tokens"] and 'class="bpe-chip ' in view
    assert picker["choices"] == [] and picker["value"] is None and steps is None
    assert "input-error" in merges and "byte-level BPE only" in merges


def test_a_word_merge_by_merge_refuses_is_said_once_escaped(handlers, monkeypatch):
    """The default word's replay failing (its message already HTML-escaped by `bpe_merges`) is shown in place
    of the merges as it reads: "<" once escaped, not "&amp;lt;"."""
    def refuse(tokenizer, word):
        raise ValueError("a <b> & c")

    monkeypatch.setattr(bpe_view, "merge_steps", refuse)
    view, rows, picker, merges, steps = handlers.tokens(TEXT)
    assert rows["tokens"] and steps is None and picker["choices"] == []
    assert "A &lt;b&gt; &amp; c" in merges and "&amp;lt;" not in merges


def test_the_analogy_probe_note_is_measured_on_the_shipped_model(handlers, models):
    """The Embeddings tab's note on how often analogies are right: the probe asked of the start-up model."""
    result = score_analogies(models.mlm.model.roberta.embeddings.word_embeddings.weight, models.mlm.tokenizer,
                             ANALOGY_PROBE)
    note = handlers.analogy_probe_note()
    assert "Of 43 test questions" in note and f"first for {result['top1']:.1%}" in note
    assert "the shipped model's embeddings" in note
