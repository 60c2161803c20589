"""The app's handlers as plain functions, with the tiny random fixture models (no server, no browser)."""
import copy
import html
import inspect
import json
import math
import re
import shutil
import unicodedata
import warnings
from pathlib import Path

import gradio as gr
import numpy as np
import pytest
import torch
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

import roberta
from demo import explain, figures, fill_mask_view, head_view, layer_lens, masking_view, tokens_view
from demo import counterfactual as CF
from demo import handlers as H
from demo import validation as V
from demo.ablation_view import ablation_markdown
from demo.formatting import format_probability, readable, word_label
from demo.models import load_models
from demo.sentiment_handlers import classifier_input
from demo.worst_case import N, with_masks, worst_case_texts

# Not a speed bound (benchmarks/bench_worst_case_inputs.py measures these; a test never asserts a duration):
# a guard that no input can hang a handler, where a pathological one (e.g. quadratic in its length) takes many
# minutes at 200,000 characters. (Marked slow: the whole corpus through every handler takes about a minute.)
HANG_S = 120

# 53 tokens with the fixture tokenizer: long enough for distinct masks, short enough not to be cut
LONG_SENTENCE = "The old man follows the river every day and our team sees a small bird near the house at night."


def _error(match):
    return pytest.raises(gr.Error, match=match)


# ----------------------------------------------------------------------------- fill mask
def test_fill_mask_one_mask(handlers):
    filled, *labels, raw, view = handlers.fill_mask("Paris is the capital of <mask>.", 4)
    assert len(labels) == V.MAX_MASKS
    first = labels[0]
    assert isinstance(first, dict) and len(first) == 4
    scores = list(first.values())
    assert all(0 < s <= 1 for s in scores) and scores == sorted(scores, reverse=True)
    assert labels[1:] == [None] * (V.MAX_MASKS - 1)
    assert len(raw) == 1 and len(raw[0]) == 4
    assert set(raw[0][0]) >= {"score", "token", "token_str", "sequence"}
    # the completed sentence: the text around the mask, the top prediction highlighted as "<mask> 1"
    # "␣" for a lone space, "⟨byte 0xE8⟩ (part of a character)" for a byte (the tiny model's answers); a word's
    # space goes with the text before it, not into the highlight
    fill = fill_mask_view.prediction_fill(raw[0][0], handlers.models.mlm.tokenizer)
    assert filled[0][0].rstrip() == "Paris is the capital of" and filled[0][1] is None and filled[1][1] == "<mask> 1"
    assert filled[0][0] + filled[1][0] == "Paris is the capital of" + fill
    # the readable view: one block per mask, named as the chip; the top bar is full width
    assert view.count('class="fm-mask"') == 1 and "&lt;mask&gt; 1" in view
    assert 'style="width:100.0%"' in view and format_probability(raw[0][0]["score"]) in view


@pytest.mark.parametrize("p, shown", [(0.123456, "12.3%"), (0.0102, "1.02%"), (0.01, "1.00%"), (0.00152, "0.152%"),
                                      (1.0, "100%"), (0.9996, "100%"), (0.93, "93.0%"), (0.052, "5.20%"),
                                      (0.0067, "0.670%"), (0.001, "0.100%"), (9.6e-4, "0.0960%"),
                                      (2.05e-5, "0.00205%"), (1e-5, "0.00100%"), (9.9e-6, "9.90 × 10⁻⁴%"),
                                      (1.36e-9, "1.36 × 10⁻⁷%"), (1.2e-12, "1.20 × 10⁻¹⁰%"), (0.0, "0%"),
                                      (float("nan"), "–")])
def test_format_probability(p, shown):
    assert format_probability(p) == shown


def test_predictions_view_scales_bars_to_the_top_answer():
    row = [{"score": 0.02, "token_str": " France"}, {"score": 0.01, "token_str": " Spain"},
           {"score": 2e-5, "token_str": "<b>"}]
    view = fill_mask_view.predictions_html([row])
    assert 'style="width:100.0%"' in view and 'style="width:50.0%"' in view and 'style="width:0.1%"' in view
    assert "2.00% " not in view and ">2.00%<" in view and ">1.00%<" in view and ">0.00200%<" in view
    assert "&lt;b&gt;" in view and "<b>" not in view.split("</style>", 1)[1]  # words are text
    assert "ln p = −3.91" in view  # the log-probability on hover, its minus sign the page's "−"


def test_look_alike_predictions_show_their_leading_space():
    """" The" (a word after a space) and "The" (glued to what precedes it) are two tokens: where both are in one
    list they read "␣The" and "The", in the view, the API's labels and the layer-by-layer guesses."""
    row = [{"token": 1, "token_str": " The", "score": 0.13}, {"token": 2, "token_str": "The", "score": 0.09},
           {"token": 3, "token_str": " cat", "score": 0.05}]
    view = fill_mask_view.predictions_html([row])
    assert ">␣The<" in view and ">The<" in view and ">cat<" in view
    assert list(fill_mask_view.mask_labels([row])[0]) == ["␣The", "The", "cat"]
    lens = [{"answer": row[0], "layers": [{"layer": 0, "top": row, "answer_score": 0.13, "answer_rank": 1}]}]
    assert "␣The 13.0%" in layer_lens.layers_html(lens) and ">The 9.00%" in layer_lens.layers_html(lens)


def test_fill_mask_view_shows_how_the_model_reads_the_text(handlers):
    """One chip per token; the chips of one word side by side make up that word; the mask in red; specials
    dimmed; the user's text escaped."""
    text = "The catalogue <b>unrolled</b> onto the <mask>."
    view = handlers.fill_mask(text)[-1]
    strip = view.split('class="fm-strip">', 1)[1].split("</div>", 1)[0]
    tokens = tokens_view.tokenize(handlers.models.mlm.tokenizer, text, 64)
    assert strip.count('class="fm-tok') == len(tokens.ids) and f"({len(tokens.ids)} tokens;" in view
    assert strip.count('class="fm-tok fm-masked">&lt;mask&gt;<') == 1
    assert strip.count('class="fm-tok fm-special" title="') == 2  # <s> and </s>, each saying what it is
    words = [html.unescape(re.sub(r"<[^>]+>", "", w))
             for w in re.findall(r'<span class="fm-w">(.*?)</span>(?:<b class="fm-sr">[^<]*</b>)?</span>', strip)]
    # a token of the space alone ("␣") belongs to the word after it
    assert [w.lstrip("␣") for w in words] == ["<s>", "The", "catalogue", "<b>unrolled</b>", "onto", "the", "<mask>.",
                                             "</s>"]
    assert "<b>" not in strip
    # a word in pieces says so in text too (for a screen reader), a word of one token does not
    groups = re.findall(r'<span class="fm-w">(.*?)</span>(<b class="fm-sr">[^<]*</b>)?</span>', strip)
    assert len(groups) == len(words)
    for chips, said in groups:
        n = chips.count('class="fm-tok')
        assert (said == f'<b class="fm-sr"> (one word in {n} pieces)</b>') if n > 1 else not said
    assert any(said for _, said in groups)  # "catalogue" is several pieces to the tiny tokenizer


def test_fill_mask_two_masks_bert_spelling_and_targets(handlers):
    filled, *labels, raw, view = handlers.fill_mask("The [MASK] sees the <mask> today.", 3)
    assert len(raw) == 2 and all(len(row) == 3 for row in raw)
    assert isinstance(labels[0], dict) and isinstance(labels[1], dict) and labels[2] is None
    assert [c for _, c in filled if c] == ["<mask> 1", "<mask> 2"]
    assert view.count('class="fm-mask"') == 2 and "&lt;mask&gt; 2" in view
    _, *labels, raw, _ = handlers.fill_mask("The <mask> sees the house.", 5, "cat, dog")
    tokenizer = handlers.models.mlm.tokenizer  # each word is scored by its first piece, after the mask's space
    firsts = {tokenizer.decode(tokenizer.encode(f" {w}", add_special_tokens=False).ids[:1]) for w in ("cat", "dog")}
    assert {row["token_str"] for row in raw[0]} == firsts and len(labels[0]) == len(firsts)


def test_fill_mask_scores_every_candidate_whatever_top_k(handlers):
    words = "cat, dog, house, day, bird, sea, sun"  # seven first pieces, none a lone space to the tiny tokenizer
    _, *labels, raw, view = handlers.fill_mask("The <mask> sees the house.", 1, words)
    assert len(raw[0]) == 7 and len(labels[0]) == 7  # top-k 1, seven candidates: all seven scored
    assert "your candidate words, all of them" in view


def test_a_candidate_word_is_one_word_long(handlers):
    """One candidate of 100,000 characters was scored and sent back whole (a 700 KB answer): a candidate is at
    most 40 characters, as a word of the Embeddings tab is, with the same message."""
    assert V.candidate_words("x" * V.MAX_WORD_CHARS) == ["x" * V.MAX_WORD_CHARS]
    for targets in ("x" * 100_000, "cat, " + "y" * (V.MAX_WORD_CHARS + 1)):
        with _error(f"” is longer than {V.MAX_WORD_CHARS} characters: type one word"):
            handlers.fill_mask("The <mask> sees the house.", 3, targets)
    with _error(f"” is longer than {V.MAX_WORD_CHARS} characters: type one word"):
        handlers.neighbours("y" * (V.MAX_WORD_CHARS + 1))


def test_fill_mask_candidates_are_separated_by_semicolons_too(handlers):
    """The reviewer's case: "France; Germany" was one candidate, scored by its first piece, with no hint that commas
    separate them. Semicolons separate candidates as commas and new lines do."""
    assert V.candidate_words("France; Germany") == ["France", "Germany"]
    assert V.candidate_words("cat;dog,\nhouse ; ") == ["cat", "dog", "house"]
    raw = handlers.fill_mask("The <mask> sees the house.", 1, "cat; dog")[-2]
    assert sorted(w for r in raw[0] for w in r["candidates"]) == ["cat", "dog"]  # two words, each scored


def _first_piece(handlers, text):
    return handlers._need("mlm").pipeline.tokenizer.encode(text, add_special_tokens=False).ids[0]


@pytest.mark.parametrize("text, spaced, completed", [
    # at the start of the text and after a space: the "Ġ" form ("sea" is one token there), as the model reads it
    ("<mask> sees the <mask>.", [True, True], ["{0}", " sees the ", "{1}", "."]),
    ("  <mask> sees the day.", [True], ["{0}", " sees the day."]),
    ("The house (<mask>) sees the sea.", [False], ["The house (", "{0}", ") sees the sea."]),  # after "("
    ("The foot<mask> sees the <mask>.", [False, True], ["The foot", "{0}", " sees the ", "{1}", "."]),
    ("The day\n<mask> sees the sea.", [True], ["The day\n", "{0}", " sees the sea."]),  # the newline kept
])
def test_fill_mask_candidates_take_the_token_form_of_each_mask(handlers, text, spaced, completed):
    """Each mask scores the candidates in the form a word takes there, from the text just before it (not one
    choice for all masks from the first one), and the completed sentence keeps the text's spacing (a fill's space
    with the text before it, outside its highlight)."""
    words = ["sea", "day"]
    filled, *labels, raw, view = handlers.fill_mask(text, 1, ", ".join(words))
    assert len(raw) == len(spaced)
    for row, space in zip(raw, spaced):
        expected = {_first_piece(handlers, (" " if space else "") + w): w for w in words}
        assert {r["token"]: r["candidates"] for r in row} == {t: [w] for t, w in expected.items()}
        assert all(r["token_str"].startswith(" ") == space for r in row)
    assert _first_piece(handlers, "sea") != _first_piece(handlers, " sea")  # so the forms are told apart
    tops = [row[0]["candidates"][0] for row in raw]
    assert [t for t, _ in filled] == [part.format(*tops) for part in completed]
    assert [c for _, c in filled if c] == [f"<mask> {i + 1}" for i in range(len(spaced))]


def test_a_candidate_at_the_start_of_the_text_scores_as_the_models_own_answer(handlers):
    """The reviewer's case: "<mask> is the capital of France." answered " France" 11.9%, and the candidate "France"
    0.012% (scored by its first piece "F", the form without a space, which the model does not answer there). A
    candidate at the start is scored in the form of the model's answers there: one word, one probability."""
    text = "<mask> sees the house."
    pipe = handlers._need("mlm").pipeline
    every = {r["token"]: r["score"] for r in pipe(text, top_k=pipe.tokenizer.get_vocab_size())}  # the top-k list
    raw = handlers.fill_mask(text, 1, "sea, day")[-2]
    assert sorted(w for r in raw[0] for w in r["candidates"]) == ["day", "sea"]
    for row in raw[0]:
        assert row["token"] == _first_piece(handlers, " " + row["candidates"][0])
        assert row["score"] == pytest.approx(every[row["token"]])


def test_fill_mask_candidate_rows_name_the_users_words(handlers):
    """Rows are labelled with the user's words, not token pieces: a word that is not one token says which
    piece scored it, and words that share that piece share one row that names them all."""
    words = ["sea", "seaside", "bird", "a<i>", *(f"sea{i}" for i in range(6))]
    filled, *labels, raw, view = handlers.fill_mask("The <mask> sees the house.", 1, ", ".join(words))
    rows = {tuple(r["candidates"]): r for r in raw[0]}
    assert set(rows) == {("sea", "seaside", *(f"sea{i}" for i in range(6))), ("bird",), ("a<i>",)}
    assert sorted(w for r in raw[0] for w in r["candidates"]) == sorted(words)  # every word, each once
    # the API's labels name every word, and say as the rows do when a score is a piece's (not simply the word's)
    assert set(labels[0]) == {"sea, seaside, sea0, sea1, sea2, sea3, sea4, sea5 (these 8 words share one first "
                              "piece ‘sea’, so one score)", "bird (scored by its first piece ‘b’)",
                              "a<i> (scored by its first piece ‘a’)"}
    body = view.split("</style>", 1)[1]
    assert (">sea, seaside, sea0, sea1, sea2 and 3 more<small>(these 8 words share one first piece ‘sea’, so one "
            "score)</small>") in body
    assert 'title="sea, seaside, sea0, sea1, sea2, sea3, sea4, sea5"' in body  # all of them on hover
    assert ">bird<small>(scored by its first piece ‘b’)</small>" in body
    assert ">a&lt;i&gt;<small>(scored by its first piece ‘a’)</small>" in body and "<i>" not in body
    assert ">Ġ" not in body and ">b</td>" not in body  # no row is named by its token piece
    # the completed sentence shows the top row's word, not its piece (the piece itself for a shared row)
    top = raw[0][0]["candidates"]
    assert filled[1] == (top[0] if len(top) == 1 else "sea", "<mask> 1") and filled[0][0].endswith(" ")


@pytest.mark.parametrize("token_str, candidates, label", [
    (" Paris", ["Paris"], ("Paris", "")),
    (" Ant", ["Antidisestablishmentarianism"],
     ("Antidisestablishmentarianism", "(scored by its first piece ‘Ant’)")),
    (" \ufffd", ["東京"], ("東京", "(scored by its first piece, a part of a character)")),
    (" ", ["東京", "Ωmega"],
     ("東京, Ωmega", "(these 2 words share one first piece, a lone space, so one score)")),
])
def test_candidate_label(token_str, candidates, label):
    assert fill_mask_view.candidate_label({"token_str": token_str, "candidates": candidates}) == label


@pytest.mark.parametrize("text, top_k, match", [
    ("", 5, "empty"),
    ("   \n\t ", 5, "empty"),
    (None, 5, "empty"),
    ("\x00\x07\x1b", 5, "empty"),
    ("no mask here", 5, "There is no mask in the text: write &lt;mask&gt;"),
    ("Paris is the capital of <MASK>.", 5, "“&lt;MASK&gt;” is not read as a mask: write &lt;mask&gt; exactly"),
    ("Paris is the capital of [mask].", 5, "“\\[mask\\]” is not read as a mask"),
    ("Paris is the capital of < mask >.", 5, "“&lt; mask &gt;” is not read as a mask"),
    ("Paris is the capital of ＜mask＞.", 5, "“＜mask＞” is not read as a mask"),  # a CJK keyboard's brackets
    ("Paris is the capital of ［MASK］.", 5, "“［MASK］” is not read as a mask"),
    ("<mask> " * 6, 5, "at most 5"),
    ("a <mask>", 0, "Top-k must be between 1 and 20"),
    ("a <mask>", 99, "Top-k must be between 1 and 20"),
    ("a <mask>", "many", "Top-k must be a whole number"),
    ("the cat " * 100 + "<mask>", 5, "beyond the first 64 tokens"),
    ("x" * (V.MAX_CHARS + 1), 5, "too long"),
])
def test_fill_mask_bad_input(handlers, text, top_k, match):
    with _error(match):
        handlers.fill_mask(text, top_k)


# 254 characters, 104 tokens: not cut by characters (`cut_to_window`), and its 2nd mask beyond the 64 tokens read
BEYOND = "<mask> " + "the cat sees the house. " * 10 + " <mask>"


@pytest.mark.parametrize("text, which", [
    (BEYOND, "The 2nd mask is beyond the first 64 tokens, which is all the model reads: shorten the text or move the "
             "mask earlier."),
    ("<mask> <mask> " + BEYOND, "The 4th mask is"),
    ("<mask> " + BEYOND + " <mask>.", "The 3rd and 4th masks are beyond the first 64 tokens, which is all the model "
                                      "reads: shorten the text or move them earlier."),
    (BEYOND[len("<mask> "):] + " <mask>", "The masks are beyond the first 64 tokens"),
])
def test_a_mask_beyond_the_window_is_named_in_the_apps_words(handlers, text, which):
    """The reviewer's case: a text the character cut leaves longer than the window got the pipeline's own message
    ("The mask is beyond ... move the mask earlier", no full stop, no word of which mask): masks are counted in
    the tokens the model reads, and the message says which are beyond."""
    for handler in (handlers.fill_mask, handlers.fill_mask_layers):
        with pytest.raises(gr.Error) as error:
            handler(text)
        assert error.value.message.startswith(which)


def test_compare_names_the_model_whatever_fails(handlers, tiny_mlm_dir, monkeypatch):
    """The reviewer's case: the comparison's mask-beyond-the-window message named no model (only a gr.Error got
    the prefix, not a ValueError): every error of one model's run says which model it is."""
    monkeypatch.setenv("APP_LOCAL_MODELS", "1")  # a folder stands in for the model compared with
    with pytest.raises(gr.Error) as error:
        H.Handlers(handlers.models).fill_mask_compare(BEYOND, 3, None, "shipped", str(tiny_mlm_dir))
    assert error.value.message == ("ours (shipped): The 2nd mask is beyond the first 64 tokens, which is all the "
                                   "model reads: shorten the text or move the mask earlier.")
    with pytest.raises(gr.Error) as error:  # a model that does not load (a ModelChoiceError, a ValueError)
        handlers.fill_mask_compare("a <mask>", 3, None, "shipped", "someone/no-such-mlm")
    # named once: by the load's own message, which says what went wrong with it
    assert error.value.message.count("someone/no-such-mlm") == 1, error.value.message


def test_a_candidate_scored_by_its_first_piece_is_said_by_the_page_not_a_python_warning(handlers):
    """The library warns (TargetPieceWarning) when a target is scored by its first piece, for a caller told nothing
    else; the app says so in the candidate's row and label, so that warning would only fill the server's log."""
    with warnings.catch_warnings(record=True) as caught:
        *_, html_view = handlers.fill_mask("The <mask> is here.", 3, "antidisestablishmentarianism")
    assert "first piece" in html_view
    assert not [w for w in caught if issubclass(w.category, roberta.pipelines.TargetPieceWarning)]


def test_a_mask_written_otherwise_beside_real_ones_is_said_once(models, tiny_mlm_dir, monkeypatch):
    """<MASK> beside a real mask is no mask: the real one is predicted, and a warning says the other is not."""
    monkeypatch.setenv("APP_LOCAL_MODELS", "1")  # a folder stands in for the model compared with
    handlers = H.Handlers(models)
    with pytest.warns(UserWarning, match="“<MASK>” is not read as a mask, so only the 1 written <mask> is predicted"):
        filled, *_ = handlers.fill_mask("Paris is <mask> and <MASK>.", 3)
    assert sum(1 for _, label in filled if label) == 1
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        handlers.fill_mask_compare("Paris is <mask> and <MASK>.", 3, None, "shipped", str(tiny_mlm_dir))
    assert sum("not read as a mask" in str(w.message) for w in said) == 1  # not once per model
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # [MASK] is read as a mask: nothing to say
        handlers.fill_mask("Paris is <mask> and [MASK].", 3)


def test_fill_mask_long_text_warns_and_controls_are_removed(handlers):
    with pytest.warns(UserWarning, match="only the first 64 tokens"):
        handlers.fill_mask("<mask> " + "the cat sees the house. " * 4000, 3)  # about 100 KB
    filled, *_ = handlers.fill_mask("Paris\x00 is\x1b the capital of <mask>.", 2)
    assert filled[0][0].rstrip() == "Paris is the capital of"


def test_ui_errors_keep_the_results_and_show_next_to_the_input(handlers):
    """The UI's events: a plain error leaves every output as it was (gr.skip) and fills the error box; a
    success hides the box. The API endpoints (the handlers themselves) still raise."""
    ui = V.keep_results(handlers.fill_mask, 8)
    *outputs, box = ui("no mask in this one", 5, "")
    assert outputs == [gr.skip()] * 8
    assert box["visible"] and "write &lt;mask&gt;" in box["value"] and 'class="input-error"' in box["value"]
    *outputs, box = ui("Paris is the capital of <mask>.", 5, "")
    assert len(outputs) == 8 and outputs[0][0] == ("Paris is the capital of", None)
    assert box == {"__type__": "update", "value": "", "visible": False}
    figure, text, box = V.keep_results(handlers.attention_token, 2)("The cat.", 1, "average", 1)
    assert isinstance(figure, Figure) and "The figure as text" in text and not box["visible"]
    *_, box = V.keep_results(handlers.masking, 5)("a sentence", 99, 0)
    assert "Epochs must be between 1 and 40" in box["value"]
    # the attention events leave the views they did not draw untouched (a late event cannot blank one)
    heatmap, grid, bars, heads, heat_text, grid_text, bars_text, box = V.keep_results(
        handlers.attention_layer, 7, keep_undrawn=True)("The cat.", 1, "average", None, "mlm", "heads")
    assert (heatmap, grid, bars, heat_text, grid_text, bars_text) == (gr.skip(),) * 6 and 'class="hv-r"' in heads
    assert not box["visible"]
    with _error("no mask"):
        handlers.fill_mask("no mask in this one", 5)


def test_ui_reads_a_slider_as_the_page_will_show_it():
    """A number typed past a slider's range is clamped as the slider will clamp it on blur, and an emptied box
    read as the minimum it will show; anything else (a string, NaN, a bool, an argument with no slider) reaches
    the handler as sent, for its message."""
    seen = []
    ui = V.read_sliders(lambda *args: seen.append(args), [None, (1, 20), (0, 1)])
    for args in [("a", 50, 5, "extra"), ("a", 0, -1), ("a", 7.0, 0.5), ("a", "x", float("nan")), ("a", True, None),
                 (None, "", 1)]:
        ui(*args)
    assert seen == [("a", 20, 1, "extra"), ("a", 1, 0), ("a", 7.0, 0.5), ("a", "x", seen[3][2]), ("a", True, 0),
                    (None, 1, 1)]
    assert seen[3][2] != seen[3][2]  # NaN passed on


def test_a_huge_whole_number_is_out_of_range_not_a_crash(handlers):
    """A 400-digit integer (JSON has no limit) raised OverflowError in the slider reader (math.isfinite), which
    the page's endpoint answered with an empty error: a slider clamps it as any number past its range, a number
    field's handler says it is out of range, quoting it cut short."""
    seen = []
    V.read_sliders(lambda *args: seen.append(args), [(1, 40), (1, 40)])(10**400, -10**400)
    assert seen == [(40, 1)]
    with _error(r"Seed must be between 0 and 2147483647, got 1e\+400\."):
        handlers.masking("a sentence", 5, 10**400)
    with _error(r"Top-k must be between 1 and 20, got -1e\+400\."):
        handlers.fill_mask("The <mask> sees the house.", -10**400)
    # the browser's number box sends 99999999999999999999 as the float 1e20: was "got 1000000000000000000…."
    with _error(r"Seed must be between 0 and 2147483647, got 1e\+20\."):
        handlers.masking("a sentence", 5, 1e20)
    with _error(r"Seed must be between 0 and 2147483647, got 1.23e\+25\."):
        handlers.masking("a sentence", 5, 12345 * 10**21)
    with _error(r"Seed must be between 0 and 2147483647, got 99999999999999999999\."):  # as typed, not 1e20
        handlers.masking("a sentence", 5, "99999999999999999999")


# ----------------------------------------------------------------------------- sentiment
def test_classify_outputs(handlers):
    text = "this film is not bad at all, i loved it."
    probabilities, highlighted, explanation = handlers.classify(text)
    assert set(probabilities) == {"negative", "positive"}
    assert sum(probabilities.values()) == pytest.approx(1.0, abs=1e-5)
    assert "".join(t for t, _ in highlighted) == text  # the whole text, word by word
    scores = [s for _, s in highlighted if s is not None]
    assert len(scores) == len(text.split())
    assert all(-1 <= s <= 1 for s in scores) and max(abs(s) for s in scores) == pytest.approx(1.0)
    assert "How to read it" in explanation and max(probabilities, key=probabilities.get) in explanation
    assert "green</span> words push towards **positive**" in explanation
    assert "pink</span> words push towards **negative**" in explanation
    # the swatches carry the colours they name (green plus, pink minus), which demo/page.css makes of the words'
    # (tests below: by construction)
    assert ('<span class="st-swatch" style="background: rgba(0, 148, 51, 0.75);' in explanation
            and '<span class="st-swatch" style="background: rgba(202, 74, 159, 0.75);' in explanation)


def _hue_rotate(rgb, degrees):
    """CSS filter hue-rotate() on an sRGB colour (the Filter Effects spec's matrix, as Chromium paints it)."""
    c, s = math.cos(math.radians(degrees)), math.sin(math.radians(degrees))
    matrix = [[0.213 + c * 0.787 - s * 0.213, 0.715 - c * 0.715 - s * 0.715, 0.072 - c * 0.072 + s * 0.928],
              [0.213 - c * 0.213 + s * 0.143, 0.715 + c * 0.285 + s * 0.140, 0.072 - c * 0.072 - s * 0.283],
              [0.213 - c * 0.213 - s * 0.787, 0.715 - c * 0.715 + s * 0.715, 0.072 + c * 0.928 + s * 0.072]]
    return tuple(max(0, min(255, round(sum(m * v for m, v in zip(row, rgb))))) for row in matrix)


def test_the_legend_swatches_are_the_colours_they_name_without_the_page_css(handlers):
    """The reviewer's case: /classify's explanation painted "green" red (rgba(239, 68, 60)) and "pink" purple
    (rgba(128, 90, 213)), right only under page.css's hue-rotate, so an API client saw colours that contradict
    their names. The swatches are now painted green and pink themselves: the colours demo/page.css turns the
    words into (Gradio's red and purple, hue-rotated by its rules), and page.css no longer filters them."""
    _, _, explanation = handlers.classify("good")
    swatches = dict((name, tuple(map(int, rgb.split(", ")))) for rgb, name in re.findall(
        r'<span class="st-swatch" style="background: rgba\((\d+, \d+, \d+), 0\.75\);[^"]*">(\w+)</span>', explanation))
    r, g, b = swatches["green"]
    assert g > r + 50 and g > b + 50, swatches  # green as painted, page.css or not
    r, g, b = swatches["pink"]
    assert r > g + 50 and b > g + 50, swatches
    css = re.sub(r"/\*.*?\*/", "", (Path(__file__).parent.parent / "demo" / "page.css").read_text(encoding="utf-8"),
                 flags=re.S)
    rules = dict(re.findall(r'^#st-words \.score-token\[style\*="(\d+, \d+, \d+)"\] \{filter: hue-rotate\((\d+)deg\)\}',
                            css, flags=re.M))
    assert set(rules) == {"239, 68, 60", "128, 90, 213"}  # the words keep the filter (Gradio paints them)
    for gradio, name in (("239, 68, 60", "green"), ("128, 90, 213", "pink")):
        assert _hue_rotate(tuple(map(int, gradio.split(", "))), int(rules[gradio])) == swatches[name]
    assert not re.search(r"\.st-swatch[^{]*\{[^}]*hue-rotate", css)  # the swatches themselves: no hue trick


def test_a_words_side_shows_without_colour(handlers):
    """The reviewer's case: under a red-green colour-blindness simulation a weak pink word and a weak green one
    were the same light grey. Every minus word (Gradio's purple, whatever its strength) is underlined with dots by
    demo/page.css and no plus word is; the legend says so, its pink swatch underlined as the words are."""
    css = re.sub(r"/\*.*?\*/", "", (Path(__file__).parent.parent / "demo" / "page.css").read_text(encoding="utf-8"),
                 flags=re.S)
    rules = re.findall(r'^#st-words \.score-token\[style\*="(\d+, \d+, \d+)"\] \.text \{([^}]*)\}', css, flags=re.M)
    underlined = {rgb for rgb, body in rules if "underline dotted" in body}
    assert underlined == {"128, 90, 213"}, rules
    line = next(body for rgb, body in rules if rgb == "128, 90, 213")
    _, _, explanation = handlers.classify("good")
    swatch = re.search(r'<span class="st-swatch" style="([^"]*)">pink</span>', explanation).group(1)
    assert line.strip() in swatch  # the legend's pink is underlined as the pink words are
    assert "underline" not in re.search(r'<span class="st-swatch" style="([^"]*)">green</span>', explanation).group(1)
    assert "every pink word is also underlined with dots" in explanation


def test_every_words_push_is_also_in_numbers(handlers):
    """What the colours say is also a table (in a closed <details>): each word, its push as the colours scale it,
    and which way, so that it reads without colour (a screen reader, a colour-blind reader)."""
    _, highlighted, explanation = handlers.classify("a gorgeous and <b>funny</b> film.")
    # the push, a number column, right-aligned (the page's CSS keeps align="right") so that its digits line up
    rows = re.findall(r'<tr><td>(.*?)</td><td align="right">([+-]\d\.\d\d)</td><td>(.*?)</td></tr>', explanation)
    assert '<th scope="col" align="right">push (−1 to +1)</th>' in explanation
    scored = [(text, score) for text, score in highlighted if score is not None]
    assert [(html.unescape(w), float(v)) for w, v, _ in rows] == [(t, pytest.approx(v, abs=0.006)) for t, v in scored]
    assert all(way == ("positive" if float(v) > 0 else "negative" if float(v) < 0 else "–") for _, v, way in rows)
    assert "&lt;b&gt;funny&lt;/b&gt;" in explanation and "<b>funny" not in explanation
    table = explain.words_table("x y", [(0, 1, 0.5), (2, 3, -1.0)], "<good>", "bad_one")
    assert "&lt;good&gt;" in table and "bad_one" in table and "+0.50" in table and "-1.00" in table


@pytest.fixture(scope="module")
def negative_handlers(tiny_mlm_dir, negative_clf_dir):
    """The app's handlers with a classifier that answers "negative" (`negative_clf_dir`: the fixture classifier
    with the same gradients)."""
    return H.Handlers(load_models(tiny_mlm_dir, negative_clf_dir))


def test_attribution_colours_keep_their_polarity_whatever_the_prediction(handlers, negative_handlers, models):
    """Plus is always "towards positive": the scores are the integrated gradients of the positive label,
    not of the predicted one (which flipped the colours with the answer). The two classifiers answer
    differently with the same gradients, so both must show the same colours."""
    loaded = models.sentiment
    tokenizer, model = loaded.tokenizer, loaded.model
    special = {tokenizer.token_to_id(t) for t in ("<s>", "<pad>", "</s>", "<unk>", "<mask>")}
    assert explain.polarity(model.config) == (1, "positive", "negative")
    predictions = set()
    for text in ["the cat loves good music every day", "the old man hates the sea at night", "a dog sees the sea"]:
        tokens = tokens_view.tokenize(tokenizer, text, loaded.config.max_length)
        attributions, _, _ = explain.integrated_gradients(model, tokens.ids, 1, tokenizer.token_to_id("<pad>"), special)
        words = explain.merge_words(tokens, attributions)
        scale = max(abs(v) for *_, v in words)
        for app in (handlers, negative_handlers):
            probabilities, highlighted, _ = app.classify(text)
            predictions.add(max(probabilities, key=probabilities.get))
            assert [s for _, s in highlighted if s is not None] == pytest.approx([v / scale for *_, v in words],
                                                                                 abs=2e-3)
    assert predictions == {"positive", "negative"}  # both answers were shown


def test_polarity_of_other_label_names():
    from types import SimpleNamespace as NS
    assert explain.polarity(NS(id2label={0: "POSITIVE", 1: "NEGATIVE"})) == (0, "POSITIVE", "NEGATIVE")
    assert explain.polarity(NS(id2label={"0": "LABEL_0", "1": "LABEL_1"})) == (1, "LABEL_1", "LABEL_0")


def test_the_sentiment_labels_are_read_in_every_spelling():
    """One alias map for the two sentiment labels (`explain.sentiment_of`), which polarity and the About tab's check
    of the showcase examples both read: "pos"/"neg" (the README's own data layout) and any case."""
    from types import SimpleNamespace as NS
    assert [explain.sentiment_of(x) for x in ("pos", "NEG", " Positive", "negative", "neutral", "LABEL_1", 1)] == [
        "positive", "negative", "positive", "negative", None, None, None]
    assert explain.polarity(NS(id2label={0: "neg", 1: "neutral", 2: "Pos"})) == (2, "Pos", "the other labels")


@pytest.fixture(scope="module")
def three_label_handlers(tmp_path_factory, tiny_mlm_dir, tokenizer):
    """The app's handlers with a 3-label classifier (negative, neutral, positive) whose answers move with its input
    (`sharp_classifier`'s initialisation) and favour "negative" (its out_proj bias)."""
    folder = tmp_path_factory.mktemp("three") / "clf"
    config = roberta.RobertaConfig.from_preset("tiny", tokenizer=tokenizer, initializer_range=0.3,
                                               id2label={0: "negative", 1: "neutral", 2: "positive"})
    torch.manual_seed(0)
    model = roberta.RobertaForSequenceClassification(config)
    with torch.no_grad():
        model.classifier.out_proj.bias.copy_(torch.tensor([3.0, 0.0, 0.0]))
    model.save_pretrained(folder)
    tokenizer.save(str(folder / "tokenizer.json"))
    return H.Handlers(load_models(tiny_mlm_dir, folder))


def test_the_class_score_of_three_labels_is_its_logit_minus_the_mean_of_the_others(three_label_handlers):
    """With three labels the pushes were checked only against `explain.integrated_gradients`, the code the handler
    runs, so a score of the logit minus the largest other logit (not their mean) passed. Now the score is checked
    against values worked out by hand, and the score integrated gradients reports for the 3-label classifier
    against the model's own logits."""
    logits = torch.tensor([[3.0, 1.0, -2.0], [0.5, 4.0, 1.5]])
    np.testing.assert_allclose(explain.class_score(logits, 0).numpy(), [3 - (1 - 2) / 2, 0.5 - (4 + 1.5) / 2])
    np.testing.assert_allclose(explain.class_score(logits, 2).numpy(), [-2 - (3 + 1) / 2, 1.5 - (0.5 + 4) / 2])
    assert explain.class_score(torch.tensor([[2.0, -1.0]]), 1).item() == pytest.approx(-3.0)  # two: the log-odds
    loaded = three_label_handlers.models.sentiment
    text = "the old man was good and the cat likes music at night."
    tokens = tokens_view.tokenize(loaded.tokenizer, text, loaded.config.max_length)
    with torch.no_grad():
        own = loaded.model(torch.tensor([tokens.ids])).logits[0].double()
    for target in range(3):
        others = torch.cat([own[:target], own[target + 1:]])
        _, score, _ = explain.integrated_gradients(loaded.model, tokens.ids, target,
                                                   loaded.tokenizer.token_to_id("<pad>"),
                                                   tokens_view.special_ids(loaded.tokenizer), steps=2)
        assert score == pytest.approx(float(own[target] - others.mean()), abs=1e-4)
    assert abs(float(own[1] - own[2])) > 1e-3  # the others' mean is not their max: the logits differ


def test_what_if_of_three_labels_edits_the_strongest_push_towards_the_answer(three_label_handlers):
    """With three labels a push away from "positive" (the colours' polarity) may be one towards "neutral": What if?
    took the most negative colour for a "negative" answer's strongest word. The word is now the strongest push
    towards the answer itself, and the table gives P(answer) and its change."""
    handlers = three_label_handlers
    loaded = handlers.models.sentiment
    text = "the old man was good and the cat likes music at night."
    probabilities, highlighted, _ = handlers.classify(text)
    answer = max(probabilities, key=probabilities.get)
    assert answer == "negative" and len(probabilities) == 3
    tokens = tokens_view.tokenize(loaded.tokenizer, text, loaded.config.max_length)
    special = tokens_view.special_ids(loaded.tokenizer)
    towards_answer, _, _ = explain.integrated_gradients(loaded.model, tokens.ids, 0,
                                                        loaded.tokenizer.token_to_id("<pad>"), special)
    pushes = {CF.core_word(text, s, e): v for s, e, v in explain.merge_words(tokens, towards_answer)}
    colours = {CF.core_word(word, 0, len(word)): score for word, score in highlighted if score is not None}
    # the words box colours the same pushes (it coloured those towards "positive", whose most negative word was
    # another: a push away from "positive" may be one towards "neutral")
    assert max(colours, key=colours.get) == max(pushes, key=pushes.get)
    view, data = handlers.counterfactual(text)
    assert data["word"] == max(pushes, key=pushes.get)
    assert data["attribution"] == pytest.approx(max(pushes.values()), abs=1e-4)
    assert (data["attribution_label"], data["towards"]) == ("negative", "negative")
    for row in data["edits"]:
        now = handlers.classify(row["text"])[0]
        assert row["change_points"] == pytest.approx(100 * (now["negative"] - probabilities["negative"]), abs=0.01)
    assert "| P(negative) |" in view and "pushed the answer (**negative**, " in view


def test_the_words_of_more_than_two_labels_push_towards_the_answer_as_what_if_says(three_label_handlers):
    """For more than two labels the words box explained every text towards one fixed label ("positive" here, a
    topic classifier's second label), whatever the answer, while What if? on the same screen measured the pushes
    towards the answer: a "science" answer's "telescope" was the word most towards "sports" and the one that pushed
    science most. The colours, the explanation, the numbers' table and the box's label now measure the pushes
    towards the answer, as What if? does."""
    handlers = three_label_handlers
    loaded = handlers.models.sentiment
    text = "the old man was good and the cat likes music at night."
    probabilities, highlighted, explanation = handlers.classify(text)
    answer = max(probabilities, key=probabilities.get)
    assert answer == "negative"  # not "positive", the label the colours once measured towards
    tokens = tokens_view.tokenize(loaded.tokenizer, text, loaded.config.max_length)
    towards_answer, _, _ = explain.integrated_gradients(loaded.model, tokens.ids, 0,
                                                        loaded.tokenizer.token_to_id("<pad>"),
                                                        tokens_view.special_ids(loaded.tokenizer))
    words = explain.merge_words(tokens, towards_answer)
    scale = max(abs(v) for *_, v in words)
    assert [s for _, s in highlighted if s is not None] == pytest.approx([v / scale for *_, v in words], abs=2e-3)
    _, data = handlers.counterfactual(text)
    most = re.search(r"Most towards \*negative\*: “([^”]+)”", explanation)
    assert most and most[1] == data["word"]  # What if?'s word is the first the explanation lists
    assert "green</span> words push towards the answer (**negative**, " in explanation
    assert "whatever the model answers" not in explanation and "positive" not in explanation.split("<details>")[0]
    # the push, a number column, right-aligned (the page's CSS keeps align="right") so that its digits line up
    rows = re.findall(r'<tr><td>(.*?)</td><td align="right">([+-]\d\.\d\d)</td><td>(.*?)</td></tr>', explanation)
    assert '<th scope="col" align="right">push (−1 to +1)</th>' in explanation
    assert rows and all(way == ("negative" if float(v) > 0 else "the other labels" if float(v) < 0 else "–")
                        for _, v, way in rows)
    _, box, *_ = handlers.classify_page(text)
    assert box["label"] == "Which words push towards the answer, negative (green), or the other labels (pink)"


@pytest.fixture(scope="module")
def topic_handlers(tmp_path_factory, tiny_mlm_dir, tokenizer):
    """The app's handlers with a topic classifier (world, sports, business, sci/tech: no label names a sentiment)
    whose answers move with its input and favour "sports"."""
    folder = tmp_path_factory.mktemp("topic") / "clf"
    config = roberta.RobertaConfig.from_preset("tiny", tokenizer=tokenizer, initializer_range=0.3,
                                               id2label={0: "world", 1: "sports", 2: "business", 3: "sci/tech"})
    torch.manual_seed(0)
    model = roberta.RobertaForSequenceClassification(config)
    with torch.no_grad():
        model.classifier.out_proj.bias.copy_(torch.tensor([0.0, 3.0, 0.0, 0.0]))
    model.save_pretrained(folder)
    tokenizer.save(str(folder / "tokenizer.json"))
    return H.Handlers(load_models(tiny_mlm_dir, folder))


# every word of it has a negation rule, whichever pushes most: "not" is negated by its removal, "good" and "bad"
# lose the "not" before them or swap for their opposite
ALL_NEGATABLE = "not good not bad"


def test_what_if_of_a_topic_classifier_only_removes_the_word_and_says_why(topic_handlers, three_label_handlers):
    """A topic classifier was offered sentiment edits (“good” → “bad”, dropping a “not”) under "Remove it or negate
    it", with notes on negation rules: for labels that name no sentiment only the removal is tried, and the text
    says so, naming the labels. A sentiment classifier of three labels keeps its negations."""
    view, data = topic_handlers.counterfactual(ALL_NEGATABLE)
    assert [row["edit"] for row in data["edits"]] == [f"remove “{data['word']}”"]
    assert "Remove it, and the model answers:" in view and "negate it" not in view
    assert ("Only its removal is tried: this classifier's labels (“world”, “sports”, “business” and “sci/tech”) "
            "name no sentiment") in view
    assert "Negation rules:" not in view and "No negation rule applies" not in view
    sentiment_view, sentiment_data = three_label_handlers.counterfactual(ALL_NEGATABLE)
    assert len(sentiment_data["edits"]) > 1 and "Remove it or negate it" in sentiment_view
    assert "Negation rules:" in sentiment_view and "name no sentiment" not in sentiment_view
    # a one-word text: its removal leaves nothing, and no negation rule is said to have been tried
    with _error(r"“good” is the only word: removing it would leave nothing to read\. Try a longer sentence\."):
        topic_handlers.counterfactual("good")
    assert three_label_handlers.counterfactual("good")[1]["edits"][0]["edit"] == "“good” → “bad”"


def test_propose_without_negations_gives_the_removal_alone():
    """`propose(..., negate=False)`: the removal only, and removing a "not" is a removal there, not a negation."""
    text = "The acting was not bad at all."
    start = text.index("bad")
    assert len(CF.propose(text, (start, start + 3, 1.0))) > 1
    (edit,) = CF.propose(text, (start, start + 3, 1.0), negate=False)
    assert (edit.kind, edit.apply(text)) == ("remove", "The acting was not at all.")
    (edit,) = CF.propose(text, (text.index("not"), text.index("not") + 3, 1.0), negate=False)
    assert (edit.kind, edit.apply(text)) == ("remove", "The acting was bad at all.")


def test_integrated_gradients_completeness_and_signs(sharp_classifier, tokenizer):
    """At the app's number of steps the attributions add up to score(input) - score(baseline) within 0.2% (the
    midpoint rule is about 1e-4 off here, a left Riemann sum 2.6%)."""
    model = sharp_classifier
    tokens = tokens_view.tokenize(tokenizer, "the cat loves good music every day", model.config.max_length)
    special = {tokenizer.token_to_id(t) for t in ("<s>", "<pad>", "</s>", "<unk>", "<mask>")}
    pad = tokenizer.token_to_id("<pad>")
    attr1, fx, fbase = explain.integrated_gradients(model, tokens.ids, 1, pad, special)
    assert abs(fx - fbase) > 0.5  # a difference the completeness check can miss
    assert attr1.sum() == pytest.approx(fx - fbase, rel=2e-3)
    # special tokens are kept in the baseline, so they get nothing
    assert np.all(attr1[np.array(tokens.special)] == 0)
    # two labels: the evidence for one is minus the evidence for the other
    attr0, _, _ = explain.integrated_gradients(model, tokens.ids, 0, pad, special)
    np.testing.assert_allclose(attr0, -attr1, rtol=1e-4, atol=1e-6)
    # the model got no gradients and still needs none
    assert all(p.grad is None and not p.requires_grad for p in model.parameters())


def test_integrated_gradients_of_a_bfloat16_model_are_float32_and_near_its_float32_ones(sharp_classifier, tokenizer):
    """A bfloat16 model (the natural inference dtype on a GPU) failed: "Got unsupported ScalarType BFloat16", numpy
    has no bfloat16. The attributions come back in float32, the path and the sums computed in float32 (only each
    point runs in the model's dtype): near the float32 model's (about 0.03 apart at most on the tiny classifier,
    whose largest is about 0.9), and adding up to score(input) - score(baseline) within 1%."""
    tokens = tokens_view.tokenize(tokenizer, "the cat loves good music every day", sharp_classifier.config.max_length)
    special = {tokenizer.token_to_id(t) for t in ("<s>", "<pad>", "</s>", "<unk>", "<mask>")}
    args = (tokens.ids, 1, tokenizer.token_to_id("<pad>"), special)
    bf16 = copy.deepcopy(sharp_classifier).to(torch.bfloat16)
    attributions, fx, fbase = explain.integrated_gradients(bf16, *args)
    expected, *_ = explain.integrated_gradients(sharp_classifier, *args)
    assert attributions.dtype == np.float32
    assert attributions.sum() == pytest.approx(fx - fbase, rel=1e-2)
    np.testing.assert_allclose(attributions, expected, atol=0.1)
    assert np.all(attributions[np.array(tokens.special)] == 0)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_every_tabs_handlers_run_on_a_half_precision_model(tiny_mlm_dir, tiny_clf_dir, handlers, dtype):
    """A model in bfloat16 or float16 (how a GPU serves one) runs in every tab: the Sentiment tab's word colouring
    (integrated gradients) failed in bfloat16. Each tab's main handler, on the tiny models cast to `dtype`; the
    classifier's answer near the float32 one's."""
    models = load_models(tiny_mlm_dir, tiny_clf_dir)
    for loaded in (models.mlm, models.sentiment):
        loaded.model.to(dtype)
    half = H.Handlers(models)
    text = "the cat likes good music."
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a tab's notes on the text, not what this test is about
        label, words, _ = half.classify(text)
        calls = [lambda: half.fill_mask("the cat <mask> on the mat.", 3),
                 lambda: half.fill_mask_layers("the cat <mask> on the mat."),
                 lambda: half.counterfactual(text), lambda: half.attention(text),
                 lambda: half.attention(text, model="sentiment"), lambda: half.masking(text, 3, 0),
                 lambda: half.tokens(text), lambda: half.neighbours("cat", 3),
                 lambda: half.analogy("cat", "dog", "music", 3), lambda: half.word_map("cat, dog, music, film"),
                 half.positions]
        for call in calls:
            assert call() is not None
    expected = handlers.classify(text)[0]
    assert label == pytest.approx(expected, abs=0.02)
    assert all(score is not None and math.isfinite(score) for word, score in words if word.strip())


def _ig_batches(model):
    """The batch sizes of the forward passes integrated gradients differentiate (`explain.integrated_gradients`),
    recorded into the returned list, with the hook's handle to remove."""
    sizes = []

    def record(module, args, kwargs):
        if torch.is_grad_enabled():  # not the two ends, scored without gradients
            sizes.append(tuple(kwargs["inputs_embeds"].shape[:2]))
    return sizes, model.register_forward_pre_hook(record, with_kwargs=True)


def test_integrated_gradients_in_batches_equal_one_batch(sharp_classifier, tokenizer):
    """The path's points run in batches of at most IG_BATCH_BUDGET tokens × layers × hidden units (the activations
    kept for the backward pass are bounded), and the attributions are those of the whole path in one batch."""
    model, cfg = sharp_classifier, sharp_classifier.config
    tokens = tokens_view.tokenize(tokenizer, "the cat loves good music every day", cfg.max_length)
    special = {tokenizer.token_to_id(t) for t in ("<s>", "<pad>", "</s>", "<unk>", "<mask>")}
    args = (model, tokens.ids, 1, tokenizer.token_to_id("<pad>"), special)
    T = len(tokens.ids)
    sizes, hook = _ig_batches(model)
    try:
        whole = explain.integrated_gradients(*args, budget=explain.IG_STEPS * T * cfg.num_hidden_layers
                                             * cfg.hidden_size, most=explain.IG_STEPS)
        assert sizes == [(explain.IG_STEPS, T)]
        sizes.clear()
        batched = explain.integrated_gradients(*args, budget=3 * T * cfg.num_hidden_layers * cfg.hidden_size + 1,
                                               most=explain.IG_STEPS)
    finally:
        hook.remove()
    assert [n for n, _ in sizes] == [3] * 6 + [2]  # 20 points, 3 at a time
    np.testing.assert_allclose(batched[0], whole[0], rtol=1e-5, atol=1e-7)
    assert batched[1:] == whole[1:]
    assert explain.ig_batch_points(cfg, T, budget=1) == 1  # however large the model, one point at a time at least
    assert explain.ig_batch_points(cfg, T) == explain.IG_BATCH_POINTS  # a small model: IG_BATCH_POINTS a batch


SHIPPED_CLASSIFIER = Path(__file__).resolve().parent.parent / "assets" / "mini-roberta-sst2"


@pytest.mark.skipif(not (SHIPPED_CLASSIFIER / "config.json").is_file(), reason="no shipped classifier")
def test_the_shipped_classifier_runs_its_integrated_gradients_in_batches_of_four_points():
    """The shipped classifier's longest text (its whole window, all of it explained) runs the path in batches of
    IG_BATCH_POINTS (4) at the app's defaults: as fast as one batch of 20 on 2 cores and a quarter of the memory
    (benchmarks/bench_integrated_gradients.py); one batch of 20 held 300 MB a request, two requests at once on a
    Space. Its config.json is all this reads: that the batches are `ig_batch_points`' and give the attributions of
    one batch is `test_integrated_gradients_in_batches_equal_one_batch`'s."""
    config = roberta.checkpoint.load_config(SHIPPED_CLASSIFIER)
    defaults = inspect.signature(explain.integrated_gradients).parameters  # the app passes neither
    assert config.max_length <= explain.IG_MAX_TOKENS
    assert explain.ig_batch_points(config, config.max_length, defaults["budget"].default,
                                   defaults["most"].default) == 4


@pytest.fixture(scope="module")
def wide_handlers(tmp_path_factory, tiny_mlm_dir, tokenizer):
    """The app's handlers with a tiny classifier that reads 256 tokens at once, more than IG_MAX_TOKENS."""
    folder = tmp_path_factory.mktemp("wide") / "clf"
    config = roberta.RobertaConfig.from_preset("tiny", tokenizer=tokenizer, id2label={0: "negative", 1: "positive"},
                                               max_position_embeddings=258)
    torch.manual_seed(0)
    roberta.RobertaForSequenceClassification(config).save_pretrained(folder)
    tokenizer.save(str(folder / "tokenizer.json"))
    return H.Handlers(load_models(tiny_mlm_dir, folder))


def test_integrated_gradients_read_at_most_ig_max_tokens_and_say_so(wide_handlers, handlers):
    """A classifier that reads more than IG_MAX_TOKENS tokens at once (roberta-large's 512) has only the first
    IG_MAX_TOKENS explained, as if the text ended there (20 forward and backward passes of roberta-large over 512
    tokens took 2 minutes): the colours stop there, and the explanation says so."""
    loaded = wide_handlers.models.sentiment
    window = loaded.pipeline.max_length
    text = " ".join([LONG_SENTENCE] * 4)
    read = len(loaded.tokenizer.encode(classifier_input(loaded, text, True)).ids)
    assert explain.IG_MAX_TOKENS < read <= window  # read in one window, explained in part
    sizes, hook = _ig_batches(loaded.model)
    try:
        _, highlighted, explanation = wide_handlers.classify(text)
    finally:
        hook.remove()
    assert {t for _, t in sizes} == {explain.IG_MAX_TOKENS}
    assert highlighted[-1] == (explain.REST_READ, None)
    assert explain.ig_cut_note(window) in explanation and f"reads {window} tokens at once" in explanation
    coloured = [piece for piece, score in highlighted if score is not None]
    assert 0 < len(coloured) < len(text.split())
    # a text within IG_MAX_TOKENS is explained whole, and a model that reads no more than that never says it
    _, highlighted, explanation = wide_handlers.classify(LONG_SENTENCE)
    assert highlighted[-1] != (explain.REST_READ, None) and "Only the first" not in explanation
    _, highlighted, explanation = handlers.classify(text)  # the tiny classifier's window (64) is cut: said as before
    assert highlighted[-1] == (explain.REST_READ, None) and "Only the first" not in explanation


def test_a_text_whose_words_start_after_the_explained_tokens_is_still_classified(wide_handlers):
    """Whether a text has words is asked of what the model reads, not of the first IG_MAX_TOKENS tokens that
    integrated gradients explain: special tokens first, then words, was refused as "no words" by a model that
    reads them all."""
    loaded = wide_handlers.models.sentiment
    text = "<pad>" * (explain.IG_MAX_TOKENS + 4) + " " + LONG_SENTENCE
    assert loaded.pipeline.max_length > len(loaded.tokenizer.encode(text).ids) > explain.IG_MAX_TOKENS
    probabilities, _, explanation = wide_handlers.classify(text)
    assert set(probabilities) == set(loaded.config.id2label.values())
    assert explain.ig_cut_note(loaded.pipeline.max_length) in explanation


def test_words_merge_bpe_pieces_of_emoji_cjk_and_rtl(models):
    loaded = models.sentiment
    text = "東京 is great 😀 مرحبا بالعالم"
    tokens = tokens_view.tokenize(loaded.tokenizer, text, loaded.config.max_length)
    assert len(tokens.ids) > len(text.split()) + 2  # several pieces per word
    words = explain.merge_words(tokens, np.ones(len(tokens.ids)))
    assert [text[s:e] for s, e, _ in words] == text.split()
    labels = tokens.labels
    assert labels[0] == "<s>" and labels[-1] == "</s>" and "東·1" in labels


def test_a_token_of_whitespace_is_labelled_as_the_other_tabs_show_it(models):
    """The Attention tab's labels (`Tokens.labels`) show a newline, a tab or a carriage return as the Tokens tab's
    chips and the predictions do ("↵", "⇥", "␍"), not all as a space."""
    tokenizer = models.mlm.tokenizer
    tokens = tokens_view.tokenize(tokenizer, "Line one\nline\ttwo\r\nend", 64)
    blank = [i for i, piece in enumerate(tokens.pieces) if piece.isspace()]
    shown = {piece: tokens.labels[i] for i, piece in ((i, tokens.pieces[i]) for i in blank)}
    assert set(shown) >= {"\n", "\t", "\r"}
    for i in blank:
        chip = readable(tokenizer.id_to_token(tokens.ids[i]))  # the Tokens tab's
        assert tokens.labels[i] == chip == word_label(tokens.pieces[i]), repr(tokens.pieces[i])
    assert len({shown["\n"], shown["\t"], shown["\r"]}) == 3


def test_the_tokens_tab_sets_the_shipped_vocabulary_beside_robertas(handlers, models):
    view = html.unescape(handlers.tokens("The cat sat.")[0])
    size = models.mlm.tokenizer.get_vocab_size()
    assert "RoBERTa reuses GPT-2's tokenizer" in view and f"its own text, with {size:,} tokens." in view


def test_classify_script_is_text_not_markup(handlers):
    text = "<script>alert(1)</script> <b>great</b> film"
    _, highlighted, explanation = handlers.classify(text)
    assert "".join(t for t, _ in highlighted) == text  # shown as typed (HighlightedText renders text)
    assert "<script>" not in explanation and "<b>" not in explanation  # Markdown gets escaped words


def test_most_towards_lists_name_each_word_once_without_its_punctuation(handlers):
    """Under "Most towards": each word once, by its strongest occurrence ("×k": k of its occurrences push that
    way; "The" and "the" are one word), without the punctuation at its edges; a word of punctuation only stays."""
    text = "The movie. The movie. The movie was great. great. dull"
    scores = [-0.1, 0.5, -0.3, 0.7, 0.05, 0.6, 0.2, -0.4, -0.9, -0.8]
    words = [(*span, score) for span, score in zip(tokens_view.word_spans(text), scores)]
    explanation = explain.explanation_markdown(text, words, "positive", "negative", "negative", 0.78)
    # the baseline of the integrated gradients keeps <s> and </s> (`explain.integrated_gradients`): not "all-padding"
    assert ("from the same input with &lt;s&gt; and &lt;/s&gt; kept and every word's tokens replaced by "
            "&lt;pad&gt;") in explanation and "all-padding" not in explanation
    assert ("Most towards *positive*: “movie” ×3, “was”, “The” · "
            "most towards *negative*: “great” ×2, “dull”, “The” ×2") in explanation
    assert explain.top_words("?!?! (wow) <b>good</b>", [(0, 4, -1.0), (5, 10, -0.5), (11, 22, 0.3)], -1.0) == [
        "“?\\!?\\!”", "“wow”"]  # Markdown-escaped
    assert explain.top_words("<b>good</b>", [(0, 11, 0.3)], 1.0) == ["“&lt;b&gt;good&lt;/b&gt;”"]
    # the real page: no word twice in a list, none ending in a full stop
    _, _, explanation = handlers.classify(text)
    line = next(line for line in explanation.split("\n") if line.startswith("Most towards"))
    for side in line.split(" · "):
        names = [name.lower() for name in re.findall(r"“(.*?)”", side)]
        assert len(names) == len(set(names)) and not any(name.endswith(".") for name in names)


def test_the_explanation_says_how_pushes_are_measured_in_plain_words_first(handlers):
    """The words' pushes were explained only as "integrated gradients over 20 steps, from ... &lt;pad&gt;": the
    explanation says it in plain words first (faded in from a blank text; a push depends on the other words), then
    the technical account."""
    _, _, explanation = handlers.classify("this film is not bad at all, i loved it.")
    plain = explanation.index("How it is measured: the text is faded in from a blank one, where every word is "
                              f"&lt;pad&gt;, in {explain.IG_STEPS} steps")
    assert "a word's push depends on the words around it, so even a neutral word can push hard" in explanation
    assert plain < explanation.index(f"(Technically: integrated gradients over {explain.IG_STEPS} steps")


def test_the_explanation_gives_the_probability_before_calibration(handlers, tiny_mlm_dir, tiny_clf_dir, tmp_path):
    """The calibration note says the logits are divided by a temperature, and the page showed only the calibrated
    probability: for a classifier with a temperature the explanation gives the answer's probability before it
    (T = 1), the softmax of the model's own logits; none for a classifier whose temperature is 1."""
    folder = shutil.copytree(tiny_clf_dir, tmp_path / "calibrated")
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "calibration_temperature": 2.5}))
    calibrated = H.Handlers(load_models(tiny_mlm_dir, folder))
    text = "this film is not bad at all, i loved it."
    probabilities, _, explanation = calibrated.classify(text)
    loaded = calibrated.models.sentiment
    read = tokens_view.tokenize(loaded.tokenizer, classifier_input(loaded, text, True), loaded.pipeline.max_length)
    with torch.no_grad():
        logits = loaded.model(torch.tensor([read.ids])).logits[0].float()
    best = max(probabilities, key=probabilities.get)
    index = {name: int(i) for i, name in loaded.config.id2label.items()}[best]
    assert probabilities[best] == pytest.approx(float((logits / 2.5).softmax(-1)[index]), abs=1e-5)
    assert (f"**Before calibration** (T = 1): {format_probability(float(logits.softmax(-1)[index]))} {best}; the "
            f"logits divided by T = 2.50 (the model's calibration temperature) give the "
            f"{format_probability(probabilities[best])} shown.") in explanation
    assert "Before calibration" not in handlers.classify(text)[2]  # the tiny classifier's temperature is 1
    assert explain.before_calibration({"a": 0.2, "b": 0.8}, 1.0, loaded.config) is None
    raw = explain.before_calibration({"a": 0.2, "b": 0.8}, 2.0, loaded.config)  # softmax(T log p)
    assert raw == pytest.approx({"a": 0.04 / 0.68, "b": 0.64 / 0.68})


@pytest.fixture(scope="module")
def shipped_tokenizer():
    """The shipped classifier's tokenizer (its vocabulary learned from English Wikipedia and movie reviews)."""
    if not (SHIPPED_CLASSIFIER / "tokenizer.json").is_file():
        pytest.skip("no shipped classifier")
    return roberta.load_tokenizer(SHIPPED_CLASSIFIER)


@pytest.mark.parametrize("text", [
    "Der Film war wirklich wunderbar.",  # the reviewer's case: negative 64.9%, with no caveat (Latin letters)
    "Die Handlung war schwach, aber die Musik war schön.", "Le film était vraiment magnifique.",
    "La película fue muy buena.", "Gli attori sono bravi ma la storia è debole.", "Bu film çok güzeldi.",
    "Schrecklich langweilig.", "这部电影很好看", "?!?!...", "😀🔥👍", "10/10 !", "x", "é"])
def test_a_text_that_is_not_english_gets_the_caveat(shipped_tokenizer, text):
    """Latin letters are no sign of English: the caveat comes unless most words are common English words or whole
    words in the vocabulary, one of them a common English word (or nearly all of a short text's are whole words)."""
    assert explain.language_note(text, shipped_tokenizer).startswith(
        ("**This text has no English words:**", "**This text may not be English:**"))


@pytest.mark.parametrize("text", [
    "A fine film.", "Terrible.", "Great film", "Loved it!", "Mediocre", "meh", "Wow!!", "ok 😀", "I ❤", "a",
    "I don't hate this movie.", "Not my cup of tea.", "10/10 would watch again", "Can't wait!",
    "Oh great, another two hours of my life gone.", "The trophy did not fit in the suitcase because it was too big."])
def test_short_english_gets_no_caveat(shipped_tokenizer, text):
    assert explain.language_note(text, shipped_tokenizer) == ""


def test_special_tokens_typed_in_the_text_are_no_words_to_the_language_caveat(shipped_tokenizer):
    """"<s> a great film </s> <pad> <unk> <mask>" was "only 3 of its 7 words are common English words ...": the
    special tokens' letters ("s", "pad", "unk") counted as words. They are left out; a text of them alone has none."""
    assert explain.english_words("<s> a great film </s> <pad> <unk> <mask>", shipped_tokenizer)[:2] == (3, 3)
    assert explain.language_note("<s> a great film </s> <pad> <unk> <mask>", shipped_tokenizer) == ""
    assert explain.english_words("<s></s><mask>", shipped_tokenizer)[0] == 0


def test_the_language_caveat_seldom_doubts_english_reviews(shipped_tokenizer, shared_file):
    """Film reviews' rare words ("stultifyingly", names) are no sign of another language: of SST-2's 872 dev
    sentences, 8 got the caveat as measured (0.9%); at most 2% do."""
    rows = shared_file("sst2/dev.tsv").read_text(encoding="utf-8").splitlines()[1:]
    sentences = [row.split("\t")[0] for row in rows]
    doubted = [s for s in sentences if explain.language_note(s, shipped_tokenizer)]
    assert len(doubted) <= 0.02 * len(sentences), doubted


def test_the_language_caveat_says_what_it_counted(shipped_tokenizer):
    """The caveat names what it found: words that are common English words or whole words in the model's
    vocabulary (one token each), and whether one is a common English word."""
    assert explain.language_note("Der Film war wirklich wunderbar.", shipped_tokenizer).startswith(
        "**This text may not be English:** none of its 5 words is a common English word such as “the” or “is”, "
        "and only 3 are whole words in the model's vocabulary (one token each). A classifier that learned from "
        "English text alone (as the shipped one did, from Wikipedia and movie reviews) gives a verdict on another "
        "language that means little.")
    assert explain.language_note("La película fue muy buena.", shipped_tokenizer).startswith(
        "**This text may not be English:** only 1 of its 5 words is a common English word or a whole word in the "
        "model's vocabulary (one token each).")


def test_classify_says_when_the_text_may_not_be_english(handlers):
    """A verdict on "?!?!...", emoji or German still comes, with a caveat first: a classifier that learned from English
    alone, as the shipped one did, says little of it. It claims nothing of the classifier served, which may be any
    (one of another language, or many: "The classifier learned from English sentences" was said of every one).
    English with common English words gets none, whatever the fixture's tiny vocabulary holds whole."""
    for text in ("?!?!...", "😀🔥👍", "这部电影很好看"):
        probabilities, _, explanation = handlers.classify(text)
        assert sum(probabilities.values()) == pytest.approx(1.0, abs=1e-5)
        assert explanation.startswith("**This text has no English words:** a classifier that learned from English "
                                      "text alone (as the shipped one did, from Wikipedia and movie reviews) gives "
                                      "a verdict here that means little.\n\n**How to read it:**")
    # the reviewer's case (the fixture's tiny vocabulary has none of its words whole: "no English words")
    caveat, rest = handlers.classify("Der Film war wirklich wunderbar.")[2].split("\n\n", 1)
    assert caveat.startswith(("**This text has no English words:**", "**This text may not be English:**"))
    assert rest.startswith("**How to read it:**")
    assert "English" not in handlers.classify("This film is not bad at all, I loved it.")[2]


@pytest.mark.parametrize("text", ["", "  ", None, "\x00\x01"])
def test_classify_empty(handlers, text):
    with _error("empty"):
        handlers.classify(text)


@pytest.mark.parametrize("text", ["<pad><pad>", "<s></s>", "<mask>", " <mask><unk> ", "<s> </s>", "<pad> <s>\n</s>"])
def test_classify_refuses_text_of_special_tokens_only(handlers, text):
    """No verdict on no words (the spaces between special tokens are none): the same rule as the masking tab's."""
    for handler in (handlers.classify, handlers.counterfactual):
        with _error("no words to classify, only special tokens"):
            handler(text)
    probabilities, highlighted, _ = handlers.classify("<mask> was great <pad>")  # one ordinary word is enough
    # every character is shown, the special tokens unscored
    assert "".join(part for part, _ in highlighted) == "<mask> was great <pad>"
    assert highlighted[0] == ("<mask> ", None) and highlighted[-1] == (" <pad>", None)


@pytest.fixture(scope="module")
def lowering_handlers(tmp_path_factory, tiny_mlm_dir, tiny_clf_dir, tokenizer):
    """The app's handlers with the tiny classifier whose tokenizer lower-cases, as the shipped one's does (and every
    classifier `train.finetune` saves): the app reads its text lower-cased (`reads_lower_case`)."""
    folder = Path(shutil.copytree(tiny_clf_dir, tmp_path_factory.mktemp("lowering") / "clf"))
    roberta.text.lowercasing(tokenizer).save(str(folder / "tokenizer.json"))
    return H.Handlers(load_models(tiny_mlm_dir, folder))


def test_classify_shows_the_text_in_the_users_case(lowering_handlers):
    """The shipped classifier reads lower-cased, whitespace-collapsed text; the page shows the user's case."""
    handlers = lowering_handlers
    _, highlighted, explanation = handlers.classify("  Great film.  Loved   it.")
    assert "".join(part for part, _ in highlighted) == "Great film. Loved it."
    assert "Great" in explanation and "great" not in explanation
    assert explain.in_users_case("It 's GREAT , isn't it ?", "it's great, isn't it?") == "It's GREAT, isn't it?"
    # where normalising rewrote a few characters, those show as read and the user's case comes back after them
    assert explain.in_users_case("Don't", "do not") == "Do not"
    typed = "A GREAT -LRB- really -RRB- film , `` Wow '' ! It does N'T age"
    assert explain.in_users_case(typed, roberta.text.normalize_for_classifier(typed)) == (
        'A GREAT (really) film, "Wow"! It doesN\'T age')
    assert explain.in_users_case("Great film", "an entirely different text") == "an entirely different text"
    # a rewrite longer than RESYNC_SPAN ("-LRB- A -RRB-", 13 characters, read as "(a)"): the user's case up to it
    # (the whole text was lower-cased), the model's text after
    assert explain.in_users_case("Great -LRB- A -RRB- Film", "great (a) film") == "Great (a) film"
    # the reviewer's case: "İ" lower-cases to two characters ("i" and a combining dot), and the whole text was
    # shown lower-cased; it shows as typed (decomposed: "I" and the dot, the length the model's text has there)
    _, highlighted, _ = handlers.classify("İstanbul is a GREAT city")
    shown = "".join(part for part, _ in highlighted)
    assert unicodedata.normalize("NFC", shown) == "İstanbul is a GREAT city"
    assert len(shown) == len("İstanbul is a GREAT city".lower())  # the model's text: its word spans apply
    assert explain.in_users_case("İİ  GREAT", "i̇i̇ great") == "I\u0307I\u0307 GREAT"


def test_a_final_capital_sigma_shows_as_typed(handlers):
    """The reviewer's case: "ΟΔΟΣ" lower-cases to "οδος" with the final "ς" (str.lower of a whole text), which the
    typed "Σ" did not match character by character, so the page showed the model's "ΟΔΟς"."""
    typed = "ΟΔΟΣ was GREAT"
    assert explain.in_users_case(typed, typed.lower()) == typed
    _, highlighted, _ = handlers.classify(typed)
    assert "".join(part for part, _ in highlighted) == typed


def test_classify_long_and_unusual_text(handlers):
    probabilities, highlighted, explanation = handlers.classify("a good film. " * 8000)  # about 100 KB
    assert re.match(r"ℹ️ \*The text is longer .* averages the logits of \d+ overlapping windows of 64 tokens"
                    r".*first 1,024 tokens", explanation)  # said with the answer it qualifies, not in a toast over it
    assert highlighted[-1] == (explain.REST_READ, None)
    probabilities, highlighted, _ = handlers.classify("مرحبا بالعالم 😀😀 東京 \u202eevil\u202c")
    assert sum(probabilities.values()) == pytest.approx(1.0, abs=1e-5)


def test_classify_reads_a_long_review_whole(handlers, models):
    """A text of a few windows: the score is the pipeline's average over all of them (not the first window's),
    the note names the windows, nothing is cut, and the colours cover the first window."""
    loaded = models.sentiment
    text = "the film is good. " * 30 + "the ending is bad and sad. " * 30
    model_text = classifier_input(loaded, text, lowercase=True)
    assert model_text == text.strip().lower()  # all of it is read (under LONG_TEXT_TOKENS)
    windows = loaded.pipeline(model_text)[0]["windows"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        probabilities, highlighted, explanation = handlers.classify(text)
    assert not any("overlapping windows" in str(w.message) for w in caught)  # no toast: it is in the explanation
    assert f"averages the logits of {windows} overlapping windows" in explanation.split("\n")[0]
    assert windows > 2 and "Only its first" not in explanation
    assert "overlapping windows" not in handlers.classify("the film is good.")[2]
    whole = {r["label"]: r["score"] for r in loaded.pipeline(model_text)}
    first = {r["label"]: r["score"] for r in loaded.pipeline(model_text, long_text="first")}
    assert probabilities == pytest.approx(whole) and probabilities != pytest.approx(first)
    assert highlighted[-1] == (explain.REST_READ, None)
    coloured = "".join(t for t, score in highlighted if score is not None)
    assert "ending" not in coloured  # the second half is beyond the first window
    # What if? on the page runs right after the text is classified, which has said it: no second warning (the
    # API's /counterfactual, called alone, still says it)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        handlers.counterfactual_page(text)
    assert not any("overlapping windows" in str(w.message) for w in caught)
    with pytest.warns(UserWarning, match="overlapping windows"):
        handlers.counterfactual(text)


def test_a_review_read_in_two_windows_says_it_averages_them(handlers, models):
    """The first text read in more than one window, two (for the shipped model, a review of ordinary length), says
    that its score averages them, as a text of many windows does."""
    loaded = models.sentiment

    def windows(text):
        return loaded.pipeline(classifier_input(loaded, text, lowercase=True))[0].get("windows", 1)

    text = next(t for t in ("the film is good. " * n for n in range(1, 60)) if windows(t) > 1)
    assert windows(text) == 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        explanation = handlers.classify(text)[2]
    assert "averages the logits of 2 overlapping windows" in explanation.split("\n")[0]
    assert "overlapping windows" not in handlers.classify(text.replace("the film is good. ", "", 1))[2]


# ----------------------------------------------------------------------------- counterfactual
def _edits(text, word):
    """{what: edited text} of the edits `propose` makes for `word` (its first occurrence as a whole word)."""
    start = next(s for s, e in tokens_view.word_spans(text) if text[s:e] == word)
    return {edit.what: edit.apply(text) for edit in CF.propose(text, (start, start + len(word), 1.0))}


def test_counterfactual_removal_keeps_the_sentence_whole():
    assert _edits("A gorgeous, funny film.", "gorgeous,") == {  # the comma goes with the word
        "remove “gorgeous”": "A funny film.", "“gorgeous” → “hideous”": "A hideous, funny film."}
    assert _edits("i loved it.", "it.") == {"remove “it”": "i loved."}  # the full stop stays
    assert _edits("Great acting here", "Great")["remove “Great”"] == "acting here"
    assert _edits("acting here", "here") == {"remove “here”": "acting"}
    assert _edits("so, wow !!!", "!!!") == {"remove “!!!”": "so, wow"}  # punctuation only: removal only
    assert _edits("Not. Bad.", "Bad.")["remove “Bad”"] == "Not."  # one sentence end, not "Not.."
    assert _edits("It was bad! Awful!", "Awful!")["remove “Awful”"] == "It was bad!"
    # a comma, semicolon or colon the removal would leave dangling goes with it
    assert _edits("great, great, great!", "great!")["remove “great”"] == "great, great!"  # not "great, great,!"
    assert _edits("I loved it; really.", "really.") == {"remove “really”": "I loved it."}
    assert _edits("good, fine", "fine") == {"remove “fine”": "good"}
    assert _edits("good , fine", "fine") == {"remove “fine”": "good"}
    # nor doubled in mid-sentence, when the separators stand apart as in SST-2 ("good , , fine")
    assert _edits("good , bad , fine", "bad")["remove “bad”"] == "good , fine"
    assert _edits("good, bad , fine", "bad")["remove “bad”"] == "good, fine"
    assert _edits("good , bad", "good")["remove “good”"] == "bad"


def test_counterfactual_data_names_the_word_and_the_label_it_pushes_towards():
    """The reviewer's case: /counterfactual gave {"word": "bad", "attribution": -1.93, "towards": "positive"} while
    the page says "bad" pushed the answer (negative) the most: "towards" was the label the attribution is measured
    against. Now "towards" is the label the word pushes towards, "attribution_label" the one its attribution (and
    every edit's change_points) measures; and the word is named as the page and the edits name it, without the
    punctuation or quotes around it ("great." was "great.", and an edit read remove “"Terrible"”)."""
    before = {"negative": 0.8, "positive": 0.2}
    text = "The acting was not bad at all."
    start = text.index("bad")
    word = (start, start + 3, -1.93)
    edits = CF.propose(text, word)
    data = CF.outcome_data(text, word, "positive", before, edits, [before] * len(edits))
    assert (data["word"], data["attribution"], data["towards"], data["attribution_label"]) == (
        "bad", -1.93, "negative", "positive")
    view = CF.outcome_markdown(text, word, "positive", before, edits, [before] * len(edits))
    assert view.startswith("**What if?** “bad” pushed the answer (**negative**, 80.0%) the most.")
    assert CF.outcome_data(text, (start, start + 3, 0.7), "positive", before, [], [])["towards"] == "positive"
    assert CF.outcome_data(text, (start, start + 3, 0.0), "positive", before, [], [])["towards"] is None
    for text, typed, named, left in [("The film was great.", "great.", "great", "The film was."),
                                     ("What a mess.", "mess.", "mess", "What a."),
                                     ("It is GREAT!!!", "GREAT!!!", "GREAT", "It is!!!"),
                                     ('"Terrible" movie.', '"Terrible"', "Terrible", "movie.")]:
        start = text.index(typed)
        word = (start, start + len(typed), -1.0)
        edits = CF.propose(text, word)
        assert CF.outcome_data(text, word, "positive", before, edits, [before] * len(edits))["word"] == named
        removal = edits[0]
        assert removal.what == f"remove “{named}”" and removal.apply(text) == left  # the edit is on the text


def test_counterfactual_probabilities_read_as_every_tab_reads_them():
    """The What if? table wrote P(positive) with one decimal: 0.0004 after removing “good” read "0.0%", as if the
    model had ruled the label out. Its probabilities are `format_probability`'s, as in every other tab."""
    text = "the film was good."
    start = text.index("good")
    word = (start, start + 4, 0.9)
    before, after = {"positive": 0.97, "negative": 0.03}, {"positive": 0.0004, "negative": 0.9996}
    view = CF.outcome_markdown(text, word, "positive", before, CF.propose(text, word)[:1], [after])
    assert "pushed the answer (**positive**, 97.0%) the most" in view
    removal = next(line for line in view.split("\n") if line.startswith("| remove “good” |"))
    assert f"| negative {format_probability(0.9996)} | {format_probability(0.0004)} |" in removal
    assert "0.0%" not in view and "0.0400%" in removal
    # P(positive) and its change right-aligned (`---:`), their digits lined up; the edit, the text and the answer
    # (a label before its probability) left-aligned
    header = view.split("\n").index("| edit | text | answer | P(positive) | change |")
    assert view.split("\n")[header + 1] == "|---|---|---|---:|---:|"


def test_counterfactual_a_small_change_is_not_written_as_none():
    """P(positive) 6.08% -> 6.12% (a word swapped in a long text) read "0.0 points" beside two different
    probabilities: under 0.1 points the change gets a second decimal; only what rounds to 0.00 is "0.0"."""
    text = "the film was terrible."
    start = text.index("terrible")
    word = (start, start + 8, -0.9)
    before = {"positive": 0.0608, "negative": 0.9392}
    changes = {after: {"positive": after, "negative": 1 - after} for after in (0.0612, 0.0604, 0.06080001, 0.0708)}
    edits = CF.propose(text, word)[:1]
    rows = {after: next(line for line in CF.outcome_markdown(text, word, "positive", before, edits, [probs])
                        .split("\n") if line.startswith("| remove")) for after, probs in changes.items()}
    assert rows[0.0612].endswith("| +0.04 points |") and "6.12%" in rows[0.0612]
    assert rows[0.0604].endswith("| −0.04 points |")
    assert rows[0.06080001].endswith("| 0.0 points |")
    assert rows[0.0708].endswith("| +1.0 points |")


@pytest.mark.parametrize("text, word, edits", [
    ("The acting was not bad at all.", "bad", {"drop “not”": "The acting was bad at all.",
                                               "“bad” → “good”": "The acting was not good at all."}),
    ("I never liked it", "liked", {"drop “never”": "I liked it", "“liked” → “disliked”": "I never disliked it"}),
    ("It isn't Good!", "Good!", {"“isn't” → “is”": "It is Good!", "“Good” → “Bad”": "It isn't Bad!"}),
    ("we won't like it", "like", {"“won't” → “will”": "we will like it"}),
    ("It can’t fail", "can’t", {"“can’t” → “can”": "It can fail"}),
    ("The film was good.", "good.", {"add “not” after “was”": "The film was not good.",
                                     "“good” → “bad”": "The film was bad."}),
    ("it's GREAT", "GREAT", {"add “not” after “it's”": "it's not GREAT", "“GREAT” → “TERRIBLE”": "it's TERRIBLE"}),
    ("The plot is a mess", "mess", {}),  # no rule: removal only
    ("The plot was, frankly, dull", "frankly,", {}),  # "was," is followed by punctuation: no "not"
    # the copula itself the strongest word: "not" after it, as the rules the table lists say (it read "No negation
    # rule applies to “was”" under "add “not” after is/was/are/were")
    ("the service was terrible.", "was", {"add “not” after “was”": "the service was not terrible."}),
    ("It was not bad", "was", {}),  # already negated: no "was not not"
    ("Fine. Is it good?", "Is", {}),  # a question's: no "Is not it good?"
    ("It has been terrible", "been", {}),  # "has not been", not "has been not": no rule
    ("Where was the plot going?", "was", {}),  # a question's: no "Where was not the plot going?"
    ("Is it good?", "it", {}),  # no "Is not it good?"
    ("It's great, right?", "great,", {"“great” → “terrible”": "It's terrible, right?"}),  # a question: no "not"
    ("Where was the plot going?", "the", {}),  # no "Where was not the plot going?"
    ("Why? The service was terrible.", "was", {"add “not” after “was”": "Why? The service was not terrible."}),
    ("The plot was, frankly, dull", "was,", {}),
])
def test_counterfactual_negation_rules(text, word, edits):
    proposed = _edits(text, word)
    removal = next(what for what in proposed if what.startswith("remove"))
    assert {what: edited for what, edited in proposed.items() if what != removal} == edits


def test_counterfactual_a_negation_word_is_negated_by_its_removal():
    start = len("The acting was ")
    (edit,) = CF.propose("The acting was not bad at all.", (start, start + 3, -1.0))
    assert (edit.kind, edit.apply("The acting was not bad at all.")) == ("negate", "The acting was bad at all.")


def test_counterfactual_one_word_texts():
    assert _edits("good", "good") == {"“good” → “bad”": "bad"}  # removing it would leave nothing
    assert _edits("film", "film") == _edits("film.", "film.") == {}  # "." alone is nothing to read
    assert _edits("good.", "good.") == {"“good” → “bad”": "bad."}
    assert CF.strongest_word([(0, 4, 0.2), (5, 9, -0.7), (10, 12, 0.5)], 1.0) == (10, 12, 0.5)
    assert CF.strongest_word([(0, 4, 0.2), (5, 9, -0.7), (10, 12, 0.5)], -1.0) == (5, 9, -0.7)


@pytest.mark.parametrize("word, core", [("film.", "film"), ("(great)", "great"), ("*good*,", "good"),
                                        ("“isn't”", "isn't"), ("!!!", "!!!"), ("?!?!...", "?!?!..."),
                                        ("<script>x</script>", "<script>x</script>"), ("<b>&amp;</b>", "<b>&amp;</b>"),
                                        ("😀🔥👍", "😀🔥👍"), ("100%", "100%")])
def test_core_word_drops_only_the_punctuation_around_a_word(word, core):
    text = f"so {word} here"
    assert CF.core_word(text, 3, 3 + len(word)) == core


def test_counterfactual_headline_and_row_name_an_html_like_word_alike(handlers):
    """The headline names the word as its removal row does: "<" and ">" kept, HTML-escaped once."""
    text = "<b>&amp;</b> <script>x</script> film"
    start = text.index("<script>")
    word = (start, start + len("<script>x</script>"), 0.8)
    edits = CF.propose(text, word)
    before = {"positive": 0.7, "negative": 0.3}
    view = CF.outcome_markdown(text, word, "positive", before, edits, [before] * len(edits))
    named = "“&lt;script&gt;x&lt;/script&gt;”"
    assert view.startswith(f"**What if?** {named} pushed the answer") and f"| remove {named} |" in view
    assert "&amp;lt;" not in view and "“script" not in view
    # the handler, whichever word the model picks: the headline's word is the one its removal row names
    text = "film <script>x</script> <b>&amp;</b>"
    view, data = handlers.counterfactual(text)
    headline = re.search(r"“(.*?)”", view.split("\n")[0]).group(1)
    assert html.unescape(headline) == data["word"] and f"| remove “{headline}” |" in view


def test_counterfactual_marks_the_change_in_escaped_markdown():
    text = "<b>so</b> *the* film was good | " + " ".join(f"w{i}" for i in range(20))
    good = text.index("good")
    marked = {edit.what: edit.marked(text) for edit in CF.propose(text, (good, good + 4, 1.0))}
    assert marked["“good” → “bad”"].startswith("&lt;b&gt;so&lt;/b&gt; \\*the\\* film was ~~good~~ **bad** \\| w0")
    assert marked["“good” → “bad”"].endswith("w6 …")  # eight words of context after the edit
    assert "**not** good" in marked["add “not” after “was”"]


def test_counterfactual_handler_changes_add_up_with_classify(handlers):
    """The P(positive) changes are the classifier's own answers on the edited texts; the word is the one with
    the strongest push towards the answer (colours of `classify`)."""
    text = "the old man was good and the cat likes music."
    view, data = handlers.counterfactual(text)
    probabilities, highlighted, _ = handlers.classify(text)
    assert data["original"]["probabilities"] == pytest.approx(probabilities, abs=1e-6)
    sign = 1 if max(probabilities, key=probabilities.get) == "positive" else -1
    scores = {CF.core_word(word, 0, len(word)): score for word, score in highlighted if score is not None}
    assert sign * scores[data["word"]] == pytest.approx(max(sign * s for s in scores.values()), abs=2e-3)
    assert data["edits"] and data["edits"][0]["edit"].startswith("remove")
    for row in data["edits"]:
        now = handlers.classify(row["text"])[0]
        assert row["probabilities"] == pytest.approx(now, abs=1e-5)
        assert row["change_points"] == pytest.approx(100 * (now["positive"] - probabilities["positive"]), abs=0.01)
        assert row["label"] == max(now, key=now.get)
    assert view.count("\n| ") == 2 + len(data["edits"])  # header, original, one row per edit
    assert "| original |" in view and "P(positive)" in view and " points |" in view


def test_counterfactual_of_a_negative_answer_edits_the_most_negative_word(negative_handlers):
    """The word edited is the strongest push towards the answer, here "negative": the lowest score, not the
    highest."""
    text = "the old man was good and the cat likes music."
    probabilities, highlighted, _ = negative_handlers.classify(text)
    assert max(probabilities, key=probabilities.get) == "negative"
    _, data = negative_handlers.counterfactual(text)
    scores = {CF.core_word(word, 0, len(word)): score for word, score in highlighted if score is not None}
    assert max(scores.values()) > 0 > min(scores.values())  # words push both ways: the choice matters
    assert scores[data["word"]] == pytest.approx(min(scores.values()), abs=2e-3)


def test_counterfactual_handler_one_word_and_empty_texts(handlers):
    _, data = handlers.counterfactual("good")
    assert [(row["edit"], row["text"]) for row in data["edits"]] == [("“good” → “bad”", "bad")]
    with _error("“film” is the only word, and no negation rule applies to it"):
        handlers.counterfactual("film")
    with _error("The text is empty"):
        handlers.counterfactual("  \u200b ")
    # a 3,000-letter "word" is quoted cut short (the whole of it ran out of the message's box)
    with pytest.warns(UserWarning, match="averages the logits of 22 overlapping windows"):  # read, then refused
        with pytest.raises(gr.Error) as error:
            handlers.counterfactual("a" * 3000)
    assert "“" + "a" * 39 + "…” is the only word" in str(error.value) and len(str(error.value)) < 200
    assert explain.top_words("a" * 3000, [(0, 3000, 1.0)], 1.0) == ["“" + "a" * 39 + "…”"]  # "Most towards" too


def test_counterfactual_offers_no_edit_that_classify_refuses(handlers):
    """The reviewer's case: "good <mask>" offered the removal of "good", "<mask>", classified positive 56%, while
    /classify refuses that text (no words, only special tokens): such an edit is not offered."""
    with _error("no words to classify"):
        handlers.classify("<mask>")
    _, data = handlers.counterfactual("good <mask>")
    assert [(row["edit"], row["text"]) for row in data["edits"]] == [("“good” → “bad”", "bad <mask>")]
    with _error("“film” is the only word, and no negation rule applies to it"):
        handlers.counterfactual("film <mask>")  # its removal was the only edit


def test_counterfactual_handler_escapes_and_is_one_batch(lowering_handlers, monkeypatch):
    handlers, read = lowering_handlers, []
    call = roberta.pipelines.TextClassificationPipeline.__call__
    monkeypatch.setattr(roberta.pipelines.TextClassificationPipeline, "__call__",
                        lambda self, text, **kw: read.append(text) or call(self, text, **kw))
    view, data = handlers.counterfactual("<script>alert(1)</script> The FILM was GOOD")
    assert "<script>" not in view and "&lt;script&gt;" in view
    assert read[0] == "<script>alert(1)</script> the film was good"  # lower-cased, as in classify
    assert read[1:] == [[row["text"].lower() for row in data["edits"]]]  # the edits: one batch


@pytest.fixture(scope="module")
def sharp_handlers(tmp_path_factory, tiny_mlm_dir, tokenizer, sharp_classifier):
    """The app's handlers with `sharp_classifier`, whose answer moves with its input (the fixture's barely does)."""
    folder = tmp_path_factory.mktemp("sharp") / "clf"
    sharp_classifier.save_pretrained(folder)
    tokenizer.save(str(folder / "tokenizer.json"))
    return H.Handlers(load_models(tiny_mlm_dir, folder))


def test_what_if_edits_the_text_the_classifier_read(sharp_handlers):
    """The reviewer's case: a blank line between two sentences is read as a space, but What if? made its edits in
    the text as shown (a line break there) and classified those, so each row's change mixed in the difference
    between a line break and a space. Each row's answer is now `classify`'s of the edited text as typed."""
    handlers = sharp_handlers
    typed = "the old man was good.\n\nthe cat likes music."
    _, data = handlers.counterfactual(typed)
    assert data["original"]["text"] == "the old man was good.\nthe cat likes music."  # the user's line break shown
    assert data["edits"]
    for row in data["edits"]:
        edited = row["text"].replace("\n", "\n\n")  # the same edit in the text as typed
        assert row["probabilities"] == pytest.approx(handlers.classify(edited)[0], abs=1e-5)


def test_a_carriage_return_is_a_line_break_and_never_breaks_what_ifs_table(handlers):
    """An API client's CR LF (or a lone CR) was kept, and What if?'s table row ended at the CR, which the page's
    Markdown renderer reads as a line end: every text reads CR LF and CR as "\n", and an edit is marked on one
    line whatever line breaks its text holds."""
    assert V.clean_text("one\r\ntwo\rthree\nfour") == "one\ntwo\nthree\nfour"
    view, data = handlers.counterfactual("the old man was good,\r\nand the cat likes music.")
    assert "\r" not in view and "\r" not in data["original"]["text"]
    assert data == handlers.counterfactual("the old man was good,\nand the cat likes music.")[1]
    assert [line for line in view.split("\n") if line.startswith("| original |")][0].endswith("|")
    marked = CF.Edit("remove", "remove “b”", 2, 4).marked("a\rb \u2028c\x0bd\x85e")
    assert not any(line_break in marked for line_break in "\r\n\u2028\x0b\x85")


def _counting(monkeypatch, module, name) -> list:
    """`module.name` (a function) counted: one entry per call, in the returned list."""
    calls, function = [], getattr(module, name)
    monkeypatch.setattr(module, name, lambda *args, **kwargs: calls.append(1) or function(*args, **kwargs))
    return calls


def test_what_if_after_classify_reads_the_text_once(models, monkeypatch):
    """The page runs What if? right after classifying the same text: the reading (the pipeline's answer and the
    integrated gradients) is kept, not computed again, and gives what a reading of its own gives. (Handlers of
    its own: the module's `handlers` keep what earlier tests read, which would leave nothing to count.)"""
    handlers = H.Handlers(models)
    read = _counting(monkeypatch, explain, "integrated_gradients")
    text = "the old man was good, and the river was small."
    classified = handlers.classify(text)
    what_if = handlers.counterfactual_page(text)
    assert handlers.classify(text) == classified and len(read) == 1
    assert what_if == H.Handlers(models).counterfactual_page(text) and len(read) == 2  # the other: its own reading
    handlers.classify(text.upper())  # another text (the shipped classifier lower-cases it, but shows the user's)
    assert len(read) == 3


def test_a_kept_reading_is_its_classifiers_alone(models, tiny_clf_dir, negative_clf_dir, monkeypatch):
    """Readings are kept per classifier while it lives: a Hub model gets its own, one the chooser evicts is not
    kept alive by them, and loaded again it reads the text again (its id may be the evicted one's)."""
    import gc
    import weakref

    from demo.model_choice import ModelChooser

    negative = negative_clf_dir  # answers "negative"
    app = H.Handlers(models, ModelChooser(models, size=1, allow_local=True))
    read = _counting(monkeypatch, explain, "integrated_gradients")
    text = "the old man was good, and the river was small."
    shipped, hub = app.classify(text)[0], app.classify(text, str(negative))[0]
    assert max(shipped, key=shipped.get) == "positive" and max(hub, key=hub.get) == "negative" and len(read) == 2
    assert app.classify(text, str(negative))[0] == hub and len(read) == 2
    evicted = weakref.ref(app.chooser.get("sentiment", str(negative)).model)
    app.classify(text, str(tiny_clf_dir))  # a second Hub model: the chooser keeps one
    gc.collect()
    assert evicted() is None and len(read) == 3
    assert app.classify(text, str(negative))[0] == pytest.approx(hub) and len(read) == 4


# ----------------------------------------------------------------------------- attention
def test_attention_reads_a_typed_pad_as_the_pipelines_do(models):
    """A "<pad>" typed in the text is a token like any other to the pipelines (`roberta.encode`): the attention
    maps attend to it too, and the masking tab's predictions read it (it used to be masked out there)."""
    tokenizer, model = models.mlm.tokenizer, models.mlm.pipeline.model
    ids = tokenizer.encode("The cat <pad> sat on the mat.").ids
    pad = ids.index(model.config.pad_token_id)
    maps = explain.attention_maps(model, ids)  # (L, nh, T, T)
    assert maps[..., pad].max() > 0
    with torch.no_grad():
        expected = model(torch.tensor([ids]), torch.ones(1, len(ids), dtype=torch.long), output_attentions=True)
    np.testing.assert_allclose(maps, torch.stack([a[0] for a in expected.attentions]).numpy(), atol=1e-6)


def test_the_attention_cache_keeps_the_newest_maps_within_its_bytes(models, monkeypatch):
    """The attention kept for the pickers is bounded in bytes, the oldest text out first (roberta-large's maps of
    one 512-token text take 384 MiB), and a text whose maps alone exceed the budget is answered, not kept."""
    from demo import attention_handlers as AH

    texts = ["The cat sees the house.", "A dog sees the sea at night every day.", "The old man follows the river.",
             "Our team sees a small bird near the house at night.", "The sea."]
    app = H.Handlers(models)
    sizes = [app.attention_data("mlm", text)[1].nbytes for text in texts]  # with the default budget: all kept
    assert list(app._attention_cache) == [("mlm", text) for text in texts]
    budget = sizes[2] + sizes[3] + sizes[4]  # the last three texts' maps fit, not the last four
    assert sizes[1] + budget > budget and budget >= max(sizes)
    monkeypatch.setattr(AH, "ATTENTION_CACHE_BYTES", budget)
    app = H.Handlers(models)
    for text in texts:
        app.attention_data("mlm", text)
        assert sum(maps.nbytes for _, maps in app._attention_cache.values()) <= budget
    assert list(app._attention_cache) == [("mlm", text) for text in texts[2:]]
    # maps larger than the whole budget: answered, not kept, and nothing else pushed out for them
    monkeypatch.setattr(AH, "ATTENTION_CACHE_BYTES", sizes[4])
    app = H.Handlers(models)
    app.attention_data("mlm", texts[4])
    tokens, maps = app.attention_data("mlm", texts[3])
    assert maps.shape[-1] == len(tokens.ids) and maps.nbytes > sizes[4]
    assert list(app._attention_cache) == [("mlm", texts[4])]


def test_the_attention_cache_keeps_eight_texts_of_the_shipped_models():
    """The byte budget leaves the shipped models as they were: ATTENTION_CACHE_SIZE texts kept, each of the
    longest (their whole window)."""
    import json

    from demo import attention_handlers as AH

    for folder in ("mini-roberta-mlm", "mini-roberta-sst2"):
        path = SHIPPED_CLASSIFIER.parent / folder / "config.json"
        if not path.is_file():
            pytest.skip("no shipped models")
        cfg = json.loads(path.read_text())
        tokens = cfg["max_position_embeddings"] - 2  # the window, <s> and </s> included
        largest = cfg["num_hidden_layers"] * cfg["num_attention_heads"] * tokens**2 * 4  # float32 maps
        assert AH.ATTENTION_CACHE_SIZE == 8 and AH.ATTENTION_CACHE_SIZE * largest <= AH.ATTENTION_CACHE_BYTES


def test_a_very_long_vocabulary_entry_does_not_stop_the_cut(models):
    """The reviewer's case: a visitor's tokenizer with one added token of 2,000 characters made `window_chars` as
    long as the longest text allowed, so a long text was tokenized whole; the entry counts as MAX_TOKEN_CHARS."""
    tokenizer = type(models.mlm.tokenizer).from_str(models.mlm.tokenizer.to_str())
    tokenizer.add_tokens(["z" * 2000])
    max_length = models.mlm.config.max_length
    text = "the old man follows the river. " * 6000
    tokens = tokens_view.tokenize(tokenizer, text, max_length)
    assert len(tokens.text) <= tokens_view.window_chars(tokenizer, max_length) < len(text)
    full_ids, _, _ = roberta.encode(tokenizer, text, max_length)
    assert tokens.ids == full_ids[0].tolist() and tokens.truncated  # the same tokens as from the whole text


def test_a_panic_in_a_library_is_answered_as_an_error(caplog):
    """The reviewer's case: a tokenizer whose pattern makes the tokenizers library panic raised pyo3's
    PanicException, a BaseException, which went past `user_errors` and left the request unanswered. It is
    answered with the generic message now, and logged; Python's own exits still pass."""
    from tokenizers import Regex, Tokenizer, models as tokenizer_models, pre_tokenizers

    panicking = Tokenizer(tokenizer_models.BPE())
    panicking.pre_tokenizer = pre_tokenizers.Split(Regex("(a|aa)+$"), "isolated")

    @V.user_errors
    def tokens(text):
        return panicking.encode(text).tokens

    with pytest.raises(gr.Error, match="Something went wrong while processing this input"):
        tokens("a" * 40 + "!")
    assert "unexpected error in tokens" in caplog.text and "PanicException" in caplog.text

    @V.user_errors
    def stops():
        raise SystemExit(3)

    with pytest.raises(SystemExit):
        stops()


def test_hub_tokenizers_are_not_held_by_the_window_cache(models):
    """window_chars remembers each tokenizer's longest entry without keeping the tokenizer alive: a Hub model the
    app lets go of takes its tokenizer with it."""
    import gc
    import weakref

    copy = type(models.mlm.tokenizer).from_str(models.mlm.tokenizer.to_str())  # as a newly loaded Hub model's
    tokens_view.window_chars(copy, 64)
    assert copy in tokens_view._LONGEST_TOKEN
    alive = weakref.ref(copy)
    del copy
    gc.collect()
    assert alive() is None  # nothing kept it: the cache's entry went with it


def test_attention_outputs(handlers, models):
    text = "The cat sees the house."
    (heatmap, grid, rollout, bars, picker, notes, heads, layers, head_picker, heat_text, grid_text,
     roll_text, bars_text) = handlers.attention(text, 2, "average")
    assert all(isinstance(f, Figure) for f in (heatmap, grid, rollout, bars))
    # every figure has a text version (the bars': every weight of the token's row, `head_roles.token_targets_html`)
    assert "Attention, layer 2, average of 4 heads: each token's 3 largest weights" in heat_text
    assert "Where token 1 " in bars_text and "the largest weight first" in bars_text
    assert "Where each head of layer 2 attends" in grid_text and grid_text.count('<th scope="row">head') == 4
    assert "Every layer at a glance" in grid_text and ('<th scope="row" class="hr-current" aria-current="true">'
                                                         'layer 2') in grid_text
    assert "Attention rollout through all 2 layers" in roll_text and roll_text.count('<th scope="row">') == len(
        tokens_view.tokenize(models.mlm.tokenizer, text, models.mlm.config.max_length).ids)
    tokens = tokens_view.tokenize(models.mlm.tokenizer, text, models.mlm.config.max_length)
    assert len(picker["choices"]) == len(tokens.ids) and picker["value"] == 1
    assert f"{len(tokens.ids)} tokens" in notes
    assert heads.count('class="hv-r"') == len(tokens.ids) and "Layer 2, average of 4 heads" in heads
    assert layers["choices"] == [1, 2] and layers["value"] == 2
    assert head_picker["value"] == "average" and len(head_picker["choices"]) == 5
    heatmap, *_ = handlers.attention(text, "1", "2", "sentiment")
    assert isinstance(heatmap, Figure)
    assert isinstance(handlers.attention_token(text, 1, 3, 0)[0], Figure)


def test_the_average_of_heads_view_is_the_mean_of_the_layers_heads(handlers):
    """The default view, "average of heads", was checked by its label alone: a view that drew head 1 (or any one
    head) under that label passed. Now the matrix `explain.head_matrix` gives, and the heatmap the tab draws from
    it, are the mean over the layer's heads of the attention the model returns (the tiny model's heads differ)."""
    text = "The cat sees the house."
    _, attentions = handlers.attention_data("mlm", text)
    mean = attentions[1].mean(0)
    assert np.abs(attentions[1] - mean).max() > 1e-3  # one head alone is not the average
    matrix, name = explain.head_matrix(attentions, 2, None)
    np.testing.assert_allclose(matrix, mean, rtol=0, atol=1e-7)
    assert name == "layer 2, average of 4 heads"
    np.testing.assert_allclose(explain.head_matrix(attentions, 2, 3)[0], attentions[1][2])
    heatmap = handlers.attention(text, 2, "average")[0]
    np.testing.assert_allclose(np.asarray(heatmap.axes[0].images[0].get_array()), mean, rtol=0, atol=1e-7)


def test_attention_notes_quote_the_text_on_one_line_as_read(handlers):
    """The notes' "Drawn for “…”" quoted the text as typed: a text of several lines split the sentence into
    paragraphs ("Drawn for “Great film." on a line of its own), and a control character the model never reads
    (U+0007, removed as in every tab) was quoted too. It is quoted as read, its line breaks as spaces."""
    notes = handlers.attention("the cat sat.\n\nthe dog\x07 ran.", 1, 1, view="heads")[5]
    assert notes.startswith("Drawn for “the cat sat\\. the dog ran\\.”: ")
    assert "\n" not in notes.split("”: ")[0] and "\x07" not in notes


def test_attention_notes_say_the_shipped_classifier_reads_lower_cased_text(lowering_handlers):
    """The reviewer's case: with the shipped SST-2 classifier the Attention tab showed "The Cat sat." as `the`,
    `cat` without saying why; its notes now say that the classifier reads lower-cased text. The fill-mask model
    reads the text as typed: no such line."""
    handlers = lowering_handlers
    picker, notes = handlers.attention("The Cat sat.", 1, "average", "sentiment", "heads")[4:6]
    labels = "".join(label.split(": ", 1)[1] for label, _ in picker["choices"][1:-1])  # the tiny model: "t", "he"...
    assert labels.startswith("thecat") and "T" not in labels and "C" not in labels
    assert "The shipped classifier reads lower-cased text, as it was fine-tuned on it" in notes
    picker, notes = handlers.attention("The Cat sat.", 1, "average", "mlm", "heads")[4:6]
    assert picker["choices"][1][0] == "1: The" and "lower-cased" not in notes


def test_attention_notes_say_when_a_chosen_models_tokenizer_lower_cases():
    """A classifier fine-tuned by this project (on the Hub) lower-cases in its tokenizer: the Attention tab showed
    its lower-case tokens with no note, where the note was given by the model's name ("sentiment") only."""
    from types import SimpleNamespace

    from tokenizers import Tokenizer, models, normalizers

    from demo.attention_handlers import LOWER_CASE_NOTE, TOKENIZER_LOWER_CASE_NOTE, AttentionHandlers
    from roberta.text import lower_cases

    cased, lowering = Tokenizer(models.BPE()), Tokenizer(models.BPE())
    lowering.normalizer = normalizers.Lowercase()
    assert lower_cases(lowering) and not lower_cases(cased)
    note = AttentionHandlers._lower_case_note
    assert note("someone/classifier", SimpleNamespace(tokenizer=lowering)) == TOKENIZER_LOWER_CASE_NOTE
    assert note("someone/classifier", SimpleNamespace(tokenizer=cased)) == ""
    assert note("sentiment", SimpleNamespace(tokenizer=lowering)) == LOWER_CASE_NOTE.format(
        classifier="The shipped classifier")


def test_only_the_asked_view_is_drawn(handlers, monkeypatch):
    """The UI passes its visible sub-tab as `view`: only that view is drawn (the others None, cleared until
    their sub-tab is opened); the API's default "all" draws every view."""
    drawn = []
    for name in ("attention_heatmap", "head_grid", "attention_bars"):
        original = getattr(figures, name)
        monkeypatch.setattr(figures, name, lambda *a, _f=original, _n=name, **k: drawn.append(_n) or _f(*a, **k))
    text = "The cat sees the house."
    heatmap, grid, rollout, bars, _, _, heads, _, _, *texts = handlers.attention(text, 2, "average", "mlm", "heads")
    assert (heatmap, grid, rollout, bars, *texts) == (None,) * 8 and 'class="hv"' in heads and drawn == []
    assert handlers.attention_layer(text, 1, 2, 1, "mlm", "heads")[:3] == (None, None, None)
    assert handlers.attention_head(text, 1, 3, 1, "mlm", "heads")[:2] == (None, None) and drawn == []
    heatmap, grid, bars, heads, heat_text, grid_text, bars_text = handlers.attention_layer(text, 1, 2, 1, "mlm", "grid")
    assert isinstance(grid, Figure) and (heatmap, bars, heads, heat_text, bars_text) == (None,) * 5
    assert drawn == ["head_grid"]
    assert "Where each head of layer 1 attends" in grid_text  # a figure comes with its text version
    assert handlers.attention_head(text, 1, 2, 1, "mlm", "grid") == (None,) * 5  # the grid has every head
    drawn.clear()
    rollout, roll_text = handlers.attention_view(text, 1, 2, 1, "mlm", "rollout")
    assert isinstance(rollout, Figure) and "draws most on" in roll_text
    assert 'class="hv"' in handlers.attention_view(text, 1, 2, 1, "mlm", "heads") and drawn == ["attention_heatmap"]
    handlers.attention(text, 1, 2)
    assert sorted(drawn) == ["attention_bars", "attention_heatmap", "attention_heatmap", "attention_heatmap",
                             "head_grid"]
    with _error("view must be"):
        handlers.attention_view(text, 1, 2, 1, "mlm", "everything")
    with _error("view must be"):
        handlers.attention(text, 1, 2, "mlm", "<b>")


def test_layer_and_head_changes_redraw_only_what_depends_on_them(handlers):
    """A layer change gives (heatmap, grid, bars, head view), a head change (heatmap, bars, head view): the
    same figures as the full view for that layer and head, the picked token kept (none: the default token)."""
    def image(fig):
        return fig.axes[0].images[0].get_array() if fig.axes[0].images else None

    text = "The cat sees the house."
    heatmap, grid, _, bars, _, _, heads, _, _, heat_text, grid_text, _, bars_text = handlers.attention(text, 2, 3)
    layer_view = handlers.attention_layer(text, 2, 3, 1)
    assert len(layer_view) == 7 and all(isinstance(f, Figure) for f in layer_view[:3])
    assert layer_view[4:] == (heat_text, grid_text, bars_text)
    np.testing.assert_array_equal(image(layer_view[0]), image(heatmap))
    assert len(layer_view[1].axes) == len(grid.axes) and layer_view[3] == heads
    head_view = handlers.attention_head(text, 2, 3, 1)
    assert len(head_view) == 5 and head_view[2] == heads and head_view[3:] == (heat_text, bars_text)
    np.testing.assert_array_equal(image(head_view[0]), image(heatmap))
    assert "token 2" in handlers.attention_head(text, 2, 3, 2)[1].axes[0].get_title()
    assert "token 1" in handlers.attention_layer(text, 1, "average", None)[2].axes[0].get_title()
    # the head view follows the layer and the head
    assert handlers.attention_layer(text, 1, 3, 1)[3] != heads
    assert handlers.attention_head(text, 2, 1, 1)[2] != heads and "Layer 2, head 1" in handlers.attention_head(
        text, 2, 1, 1)[2]


@pytest.mark.parametrize("token, message", [(99, "Token must be between 0 and 11, got 99."),
                                            (12, "Token must be between 0 and 11, got 12."),
                                            (-1, "Token must be between 0 and 11, got -1."),
                                            ("bogus", "Token must be a whole number between 0 and 11, got “bogus”."),
                                            (1.5, "Token must be a whole number between 0 and 11, got 1.5.")])
def test_layer_head_and_view_changes_refuse_a_token_the_text_does_not_have(handlers, token, message):
    """The reviewer's case: /attention_layer and /attention_head drew the default token for token 99 or "bogus",
    while /attention_token answered "Token must be between 0 and 12, got 13.": all of them check it alike (the
    same message), and none (None or empty: the picker before the first drawing) is the default token."""
    text = "The cat sees the house."  # 12 tokens in the tiny vocabulary (<s> The c at s e es the hous e . </s>)
    assert len(handlers.attention_data("mlm", text)[0].labels) == 12
    calls = [lambda: handlers.attention_token(text, 2, 3, token),
             lambda: handlers.attention_layer(text, 2, 3, token),
             lambda: handlers.attention_head(text, 2, 3, token),
             lambda: handlers.attention_view(text, 2, 3, token, "mlm", "token")]
    for call in calls:
        with pytest.raises(gr.Error) as error:
            call()
        assert error.value.message == message
    for none in (None, "", " "):
        assert "token 1" in handlers.attention_head(text, 2, 3, none)[1].axes[0].get_title()
    assert "token 11" in handlers.attention_layer(text, 2, 3, "11")[2].axes[0].get_title()  # as the picker types it


def test_a_wrong_token_stops_only_the_view_that_reads_it(handlers):
    """"zzz" typed in the token picker made the head view, heatmap, grid and rollout fail with the Token message
    too (every view event checked the token): the message showed under the Text box, and a layer or head chosen
    meanwhile was not drawn. Only the token's own view checks it now."""
    text = "The cat sees the house."
    for view in ("heads", "heatmap", "grid", "rollout"):
        assert handlers.attention_view(text, 2, 3, "zzz", "mlm", view) is not None, view
    heads = handlers.attention_view(text, 2, 3, None, "mlm", "heads")
    assert handlers.attention_layer(text, 2, 3, "zzz", "mlm", "heads")[3] == heads
    assert handlers.attention_head(text, 2, 3, "zzz", "mlm", "heads")[2] == heads
    heatmap, _, _, _, heat_text, *_ = handlers.attention_layer(text, 2, 3, "zzz", "mlm", "heatmap")
    assert heatmap.axes[0].get_title() == "Attention, layer 2, head 3" and "layer 2, head 3" in heat_text
    for call in (lambda: handlers.attention_view(text, 2, 3, "zzz", "mlm", "token"),
                 lambda: handlers.attention_layer(text, 2, 3, "zzz", "mlm", "token"),
                 lambda: handlers.attention_head(text, 2, 3, "zzz", "mlm", "all")):
        with pytest.raises(gr.Error, match="Token must be a whole number") as error:
            call()
        assert error.value.field == "Token"  # said next to the token picker (`keep_results`' others)


def _tokens(text, pieces):
    """Tokens of `text` cut as `pieces` (each a span of the text), between <s> and </s>."""
    offsets, at = [(0, 0)], 0
    for piece in pieces:
        start = text.index(piece, at)
        offsets.append((start, start + len(piece)))
        at = start + len(piece)
    offsets.append((0, 0))
    n = len(offsets)
    return tokens_view.Tokens(text, list(range(n)), offsets, [True] + [False] * (n - 2) + [True], False,
                              ["<s>", *pieces, "</s>"])


def test_the_token_picker_starts_on_a_pronoun(handlers, models):
    """The default token is the first pronoun (“it”) that is a whole word, else the first word: what the
    views start on."""
    text = "The cat sat on the mat because it was tired."
    assert explain.default_token(_tokens(text, text[:-1].split() + ["."])) == 8  # <s> The cat ... because it
    assert explain.default_token(_tokens("The house.", ["T", "he", " house", "."])) == 1  # "he" of "The": no
    assert explain.default_token(_tokens("She left.", ["She", " left", "."])) == 1
    assert explain.default_token(_tokens("", [])) == 0
    text = "the cat sees the house."
    tokens = tokens_view.tokenize(models.mlm.tokenizer, text, 64)
    query = explain.default_token(tokens)
    assert query == 1 and handlers.attention(text, 1, 1)[4]["value"] == query
    bars = handlers.attention_head(text, 1, 1, None)[1]
    assert f"token {query} “{tokens.labels[query]}”" in bars.axes[0].get_title()


def test_an_invisible_token_is_labelled_as_the_tokens_tab_labels_it(handlers):
    """A zero-width joiner's token read "5: \u200d" in the token picker (an empty-looking label) where the Tokens
    tab shows "⟨U+200D⟩": the attention labels (picker, figures, head view) name it as the Tokens tab does."""
    text = "the cat\u200dsees"
    choices = [label for label, _ in handlers.attention(text, 1, "average")[4]["choices"]]
    assert any("⟨U+200D⟩" in label for label in choices), choices  # the tiny tokenizer: in byte pieces, "·1"...
    assert not any("\u200d" in label for label in choices)
    assert "⟨U+200D⟩" in handlers.tokens(text)[0]


def test_a_variation_selectors_bytes_name_it_by_its_code(handlers):
    """The reviewer's case: the bytes of U+FE0F (the emoji selector after "❤") said `of “◌️”`, an empty dotted
    circle, beside the zero-width joiner's "⟨U+200D⟩": the Tokens tab shows it by its code, as it promises."""
    view = handlers.tokens("I \u2764\ufe0f NLP")[0]
    assert "of “⟨U+FE0F⟩”" in html.unescape(view) and "◌" not in view


def test_head_view_draws_lines_by_weight_and_escapes_labels():
    labels = ["<s>", "<b>x</b>", "it", "&amp;", "</s>"]
    matrix = np.array([[1.0, 0, 0, 0, 0],
                       [0.5, 0.49, 0.01, 0, 0],
                       [0.1, 0.6, 0.3, 0, 0],
                       [0.2, 0.2, 0.2, 0.2, 0.2],
                       [0, 0, 0, 0, 1.0]])
    page = head_view.head_view_html(labels, matrix, "Layer 1, head 2")
    assert "<b>x</b>" not in page and "&lt;b&gt;x&lt;/b&gt;" in page and "&amp;amp;" in page
    assert "<script" not in page and "onerror" not in page
    # a focusable row per attending token (a tap focuses it), the first the view's one Tab stop (the page's
    # script moves it with the arrow keys: tests/test_app_browser.py)
    assert page.count('class="hv-r" tabindex="0"') == 1 and page.count('class="hv-r" tabindex="-1"') == 4
    assert page.index('class="hv-r" tabindex="0"') < page.index('class="hv-r" tabindex="-1"')
    lines = re.findall(r'<line class="w(\d+)" x1="\d+" y1="(\d+)" x2="100%" y2="(\d+)"/>', page)
    assert len(lines) == 1 + 2 + 3 + 5 + 1  # 0.01 is under MIN_WEIGHT: no line
    levels = {(int(y1), int(y2)): int(level) for level, y1, y2 in lines}
    y = [head_view.HEAD + i * head_view.ROW + head_view.ROW // 2 for i in range(5)]
    assert levels[(y[2], y[1])] == 12 and levels[(y[2], y[0])] == 2 and levels[(y[0], y[0])] == head_view.LEVELS
    # the values a hover or tap shows, and the native tooltip
    assert "<title>“it” attends to: &lt;b&gt;x&lt;/b&gt; 60.0%, it 30.0%, &lt;s&gt; 10.0%</title>" in page
    assert '<text x="100%%" y="%d">60.0%%</text>' % y[1] in page and ">100%<" in page
    assert "Layer 1, head 2" in page and "not drawn" in page
    # the threshold as it is set, not as a measured share is written ("Lines under 2.00%")
    assert "Lines under 2%, and beyond a token's 10 strongest, are not drawn." in page
    with pytest.raises(ValueError, match="5 tokens"):
        head_view.head_view_html(labels, np.eye(4))


def test_head_view_of_128_tokens_is_small_and_scrolls():
    rng = np.random.default_rng(0)
    labels = ["<s>"] + [f"word{i}" for i in range(126)] + ["</s>"]
    for concentration in (0.05, 0.3, 3.0):  # peaked to flat attention
        page = head_view.head_view_html(labels, rng.dirichlet(np.full(128, concentration), size=128), "Layer 6")
        assert len(page.encode()) < 200_000
        assert page.count('class="hv-r"') == 128 and page.count("word125") >= 2  # both columns, every token
        assert page.count("<line ") <= 128 * head_view.TOP_K
    assert f"max-height:{head_view.BOX_HEIGHT}px;overflow-y:auto" in page
    long = head_view.head_view_html(["a" * 300, "b"], np.eye(2))
    assert "a" * 300 not in long.split("<title>")[0] and "a" * 15 + "…" in long  # shortened, whole in the tooltip


def test_head_view_takes_its_boxs_width_its_text_unscaled():
    """The view was drawn at a fixed width (418 px for the example), a third of its 1192 px box at 1280 px: it takes
    the box's width, the lines between the columns growing with it (the right column anchored at the right edge),
    its text at its own size (no viewBox to scale it), and is narrow enough at its narrowest for a 320 px phone's
    278 px box (it was 330 px wide at its narrowest, in a 360 px phone's 316 px box: the view scrolled sideways).
    Each row, the target a tap focuses, is at least 24 px high (WCAG 2.5.8; it was 18)."""
    labels = ["<s>", "The", "cat", "sat", "because", "tired", "</s>"]
    page = head_view.head_view_html(labels, np.full((7, 7), 1 / 7), "Layer 1")
    svg = re.search(r"<svg [^>]*>", page).group(0)
    assert 'width="100%"' in svg and "viewBox" not in svg
    min_width = int(re.search(r"min-width:(\d+)px", svg).group(1))
    assert min_width <= 278
    hits = re.findall(r'<rect class="hv-hit" x="0" y="(\d+)" width="\d+" height="(\d+)"/>', page)
    assert len(hits) == 7 and all(int(h) >= 24 for _, h in hits)
    tops = [int(y) for y, _ in hits]  # one under the other, touching: no gap between two rows' targets
    assert all(b - a == int(hits[0][1]) for a, b in zip(tops, tops[1:])), tops
    assert "max-width:100%" not in page  # it no longer shrinks to fit: the box scrolls where it must
    # every line runs from the left column to the right edge, less the right column's width
    lines = re.findall(r'<line class="w\d+" x1="(\d+)" y1="\d+" x2="100%" y2="\d+"/>', page)
    assert len(lines) == 7 * 7 and len(set(lines)) == 1
    shift = re.findall(r'<g class="hv-l" transform="translate\(-(\d+) 0\)">', page)
    assert len(shift) == 7 and len(set(shift)) == 1
    start = int(lines[0]) - int(shift[0])  # the lines' left end, in the view's pixels
    assert 0 < start < min_width - int(shift[0])  # ... left of their right end at the narrowest


def test_a_layer_change_changes_the_head_view_of_the_model(handlers):
    text = "The cat sees the house."
    views = {(layer, head): handlers.attention_view(text, layer, head, None, "mlm", "heads")
             for layer in (1, 2) for head in ("average", 1)}
    assert len(set(views.values())) == 4
    assert handlers.attention_layer(text, 1, 1, None, "mlm", "heads")[3] == views[(1, 1)]
    assert handlers.attention_layer(text, 2, 1, None, "mlm", "heads")[3] == views[(2, 1)]


def test_attention_figures_label_128_tokens_legibly():
    """Every token of a 128-token heatmap is labelled at 6 pt or more; the grid of heads labels its outer
    cells (it used to drop every label beyond 20 tokens)."""
    rng = np.random.default_rng(0)
    labels = ["<s>"] + [f"w{i}" for i in range(126)] + ["</s>"]
    heatmap = figures.attention_heatmap(rng.dirichlet(np.ones(128), size=128), labels, "t")
    for axis in "xy":
        ticks = figures.token_labels(heatmap.axes[0], axis)
        assert [t.get_text() for t in ticks] == labels and min(t.get_fontsize() for t in ticks) >= 6
    assert not heatmap.axes[0].get_xticks().size and not heatmap.axes[0].get_yticks().size  # no second set

    def labelled(fig):
        return [ax for ax in fig.axes if figures.token_labels(ax, "x") or figures.token_labels(ax, "y")]

    grid = figures.head_grid(rng.dirichlet(np.ones(85), size=(8, 85)), labels[:84] + ["</s>"], 3)
    assert len(labelled(grid)) == 5  # the lower row's x axes, the first column's y axes
    ticks = figures.token_labels(grid.axes[0], "y")
    assert len(ticks) >= 85 // 4 and min(t.get_fontsize() for t in ticks) >= 6
    # a short text: the same outer cells, every token labelled (the inner cells' labels only cost drawing time)
    short = figures.head_grid(rng.dirichlet(np.ones(17), size=(8, 17)), labels[:17], 1)
    assert len(labelled(short)) == 5
    assert [t.get_text() for t in figures.token_labels(short.axes[0], "y")] == labels[:17]
    bars = figures.attention_bars(rng.dirichlet(np.ones(17)), labels[:17], 3, "t")
    assert [t.get_text() for t in figures.token_labels(bars.axes[0], "x")] == labels[:17]


def test_the_attention_figures_give_weights_in_percent():
    """The colour bar (under the heatmap) and the bars' axis read 0.0–0.8 beside tables in % (“76.6%”): their ticks
    are percentages."""
    weights = np.array([0.8, 0.15, 0.05])
    labels = ["<s>", "w", "</s>"]
    for fig, axis in [(figures.attention_heatmap(np.tile(weights, (3, 1)), labels, "t"), lambda f: f.axes[-1].xaxis),
                      (figures.attention_bars(weights, labels, 1, "t"), lambda f: f.axes[0].yaxis)]:
        FigureCanvasAgg(fig).draw()
        ticks = [t.get_text() for t in axis(fig).get_ticklabels() if t.get_text()]
        assert ticks and all(t.endswith("%") for t in ticks)
        assert any(float(t.rstrip("%")) >= 50 for t in ticks)  # fractions times 100, not “0.8%”


def test_every_head_of_a_layer_is_drawn_on_one_colour_scale_with_one_colour_bar():
    """Each small heatmap was scaled to its own maximum, with no colour bar: a head spread evenly over 10 tokens
    and one that puts 92% on <s> both reached full yellow. Now one scale, 0% to 100%, for every head, read on one
    labelled colour bar in %, and the figure says so."""
    n = 10
    sharp = np.full((n, n), 0.08 / (n - 1))
    sharp[:, 0] = 0.92
    diffuse = np.full((n, n), 1 / n)
    labels = ["<s>"] + [f"w{i}" for i in range(n - 2)] + ["</s>"]
    fig = figures.head_grid(np.stack([sharp, diffuse, sharp, diffuse]), labels, 3)
    FigureCanvasAgg(fig).draw()
    images = [image for ax in fig.axes for image in ax.images]
    assert len(images) == 4 and all((image.norm.vmin, image.norm.vmax) == (0.0, 1.0) for image in images)
    shown = [float(image.norm(image.get_array().max())) for image in images]  # the brightest cell, on the scale
    assert shown[0] == pytest.approx(0.92) and shown[1] == pytest.approx(1 / n)  # not both 1.0
    bars = [ax for ax in fig.axes if not ax.images and ax.get_ylabel()]
    assert len(bars) == 1 and "every head" in bars[0].get_ylabel()
    ticks = [t.get_text() for t in bars[0].yaxis.get_ticklabels() if t.get_text()]
    assert ticks[0] == "0%" and ticks[-1] == "100%"
    assert any("One colour scale for every head" in text.get_text() for text in fig.texts)


def test_token_labels_sit_at_their_cells_outside_the_axes():
    """Each label is drawn beside its own row or column, outside the heatmap and clear of the axis titles."""
    labels = ["<s>"] + [f"w{i}" for i in range(15)] + ["</s>"]
    fig = figures.attention_heatmap(np.full((17, 17), 1 / 17), labels, "t")
    ax = fig.axes[0]
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    box = ax.get_window_extent(renderer)
    xs = [t.get_window_extent(renderer) for t in figures.token_labels(ax, "x")]
    ys = [t.get_window_extent(renderer) for t in figures.token_labels(ax, "y")]
    cell = box.width / 17
    for i, (x, y) in enumerate(zip(xs, ys)):
        assert x.y1 <= box.y0 and y.x1 <= box.x0  # outside: below and to the left
        assert abs(x.x1 - (box.x0 + (i + 0.5) * cell)) < cell  # rotated about its top right, at its column
        assert abs((y.y0 + y.y1) / 2 - (box.y1 - (i + 0.5) * cell)) < cell / 2  # centred on its row, top down
    xlabel, ylabel = ax.xaxis.label.get_window_extent(renderer), ax.yaxis.label.get_window_extent(renderer)
    assert xlabel.y1 <= min(x.y0 for x in xs) and ylabel.x1 <= min(y.x0 for y in ys)  # no overlap


def test_attention_rollout_rows_sum_to_one(handlers):
    """Rows summing to one and the identity as a fixed point hold for any product of row-stochastic matrices, in
    either order, with or without the residual: they could not tell the rule from a wrong one. A hand-computed
    two-layer case whose layers do not commute now pins the rule: average the heads, 0.5 A + 0.5 I, and multiply
    bottom to top (the upper layer's matrix on the left)."""
    _, attentions = handlers.attention_data("mlm", "The old man follows the river.")
    L, nh, T, _ = attentions.shape
    assert (L, nh) == (2, 4)
    np.testing.assert_allclose(attentions.sum(-1), 1.0, atol=1e-5)
    rollout = explain.attention_rollout(attentions)
    assert rollout.shape == (T, T) and np.all(rollout >= 0)
    np.testing.assert_allclose(rollout.sum(-1), 1.0, atol=1e-6)
    # attention that only looks at itself leaves every token with its own information
    np.testing.assert_allclose(explain.attention_rollout(np.broadcast_to(np.eye(T), (L, nh, T, T))), np.eye(T))
    lower = np.array([[1, 0, 0], [1, 0, 0], [0, 1, 0]], dtype=float)  # layer 1: tokens 1 and 2 move their input
    upper = np.array([[0, 0, 1], [0, 1, 0], [1, 0, 0]], dtype=float)  # layer 2: tokens 0 and 2 swap
    # 0.5 A + 0.5 I: lower -> [[1,0,0],[.5,.5,0],[0,.5,.5]], upper -> [[.5,0,.5],[0,1,0],[.5,0,.5]]; upper @ lower:
    expected = [[.5, .25, .25], [.5, .5, 0], [.5, .25, .25]]  # (lower @ upper: [[.5,0,.5],[.25,.5,.25],[.25,.5,.25]])
    two_heads = np.stack([np.stack([lower, lower]), np.stack([upper, upper])])  # (L=2, nh=2, 3, 3)
    np.testing.assert_allclose(explain.attention_rollout(two_heads), expected, rtol=0, atol=1e-12)
    # the heads are averaged: a layer whose two heads are lower and the identity has the mean of them as its A
    np.testing.assert_allclose(explain.attention_rollout(np.stack([lower, np.eye(3)])[None]),
                               0.25 * lower + 0.75 * np.eye(3), rtol=0, atol=1e-12)


@pytest.mark.parametrize("layer, head, model, match", [
    (99, "average", "mlm", "Layer must be between 1 and 2, got 99"),
    (0, "average", "mlm", "Layer must be between 1 and 2"),
    ("two", "average", "mlm", "Layer must be a whole number"),
    (1.5, "average", "mlm", "Layer must be a whole number"),
    (1, 99, "mlm", "Head must be between 1 and 4 or “average”, got 99"),
    (1, "everything", "mlm", "Head must be a whole number"),
    (1, 1, "not a repo id!", "“not a repo id!” is not a Hugging Face Hub repo id"),  # as typed
    (1, 1, "/etc", "local folders can be chosen only where the server allows them"),
    (1, 1, "assets/mini-roberta-sst2", "and assets/mini-roberta-sst2 is not in its download cache"),  # a Hub id
    (1, 1, 3, "model must be “mlm”, “sentiment” or a Hugging Face Hub repo id, got int"),
])
def test_attention_bad_layer_head_model(handlers, layer, head, model, match):
    with _error(match):
        handlers.attention("The cat sees the house.", layer, head, model)


def test_a_layer_is_read_as_the_head_picker_reads_a_head(handlers):
    """The Head box took "Head 2" (its option's label) but the Layer box refused "layer 2": both take a number
    after their name, in any case, spaces around."""
    assert V.parse_int(" Layer  2 ", "Layer", 1, 6) == 2 and V.parse_head("HEAD 3", 4) == 3
    assert handlers.attention_layer("The cat sees the house.", "layer 1", "head 2")[-1] == (
        handlers.attention_layer("The cat sees the house.", 1, 2)[-1])
    with _error("Layer must be a whole number between 1 and 2, got “head 1”"):
        handlers.attention("The cat sees the house.", "head 1")


def test_the_attention_page_escapes_an_error_once(handlers):
    """The page's attention event wraps the endpoint's handler: its message is escaped once, not twice."""
    with _error(r"got “&lt;x&gt;”") as info:
        handlers.attention_page("The cat.", "<x>")
    assert "&amp;" not in info.value.message


def test_error_messages_escape_html(handlers):
    """Gradio shows error messages as HTML: what the user typed must come back as text."""
    with _error("got “&lt;img src=x onerror=alert\\(1\\)&gt;”"):
        handlers.attention("The cat.", "<img src=x onerror=alert(1)>", "average")


def test_attention_bad_token_and_long_text(handlers):
    with _error("Token must be between 0 and"):
        handlers.attention_token("The cat.", 1, "average", 500)
    with pytest.warns(UserWarning, match="only the first 64 tokens"):
        picker, notes = handlers.attention("the cat sees the house. " * 4000, 1, "average")[4:6]
    assert len(picker["choices"]) == 64 and "cut to the maximum length" in notes


# ----------------------------------------------------------------------------- masking
def _stats(rows):
    return {row[0]: row for row in rows}


def test_masking_distinct_masks_and_coverage(handlers):
    table, stats, plot, predictions, plot_text = handlers.masking(LONG_SENTENCE, 12, 0)
    s = _stats(stats)
    static1, static10, dynamic = (s[masking_view.SHORT_NAMES[k]] for k in ("static1", "static10", "dynamic"))
    assert static1[1] == 1  # one fixed mask, every epoch
    assert 1 < static10[1] <= 10  # BERT's 10 copies, cycling
    assert dynamic[1] == 12  # a new mask every epoch
    n_eligible = int(static1[2].split(" of ")[1])
    for row in stats:
        ever, total = map(int, row[2].split(" of "))
        assert total == n_eligible and 0 <= ever <= total
        assert row[3] == f"{ever / total:.1%}"  # "21.4%", as every other share of the page is written
    # copy 0 of the 10 is the one fixed mask, so cycling through 10 covers at least as much
    assert int(static10[2].split(" of ")[0]) >= int(static1[2].split(" of ")[0])
    assert isinstance(plot, Figure)
    assert len(re.findall(r'<th scope="row">\d+</th>', plot_text)) == 12  # the figure as text, epoch by epoch
    assert table.count("<tr><th>epoch ") == 12
    assert {row[0] for row in predictions} <= set(masking_view.SHORT_NAMES.values())
    assert all(len(row) == len(masking_view.PREDICTION_COLUMNS) for row in predictions)


def test_masking_outputs_are_kept_for_the_next_page_load(models, monkeypatch):
    """Every page load runs the masking tab's default: its outputs are kept, the figure the same object (which
    `Plot` renders once); another seed, epoch count or text is simulated anew; the truncation warning is given
    each time. (Handlers of its own: the module's `handlers` keep what earlier tests drew.)"""
    handlers = H.Handlers(models)
    drawn = _counting(monkeypatch, figures, "coverage_plot")
    first = handlers.masking(LONG_SENTENCE, 7, 5)
    again = handlers.masking(f"{LONG_SENTENCE} ", 7, 5)  # spaces around the text are no tokens
    assert again == first and again[2] is first[2] and len(drawn) == 1
    assert handlers.masking(LONG_SENTENCE, 7, 6)[1] != first[1] and len(drawn) == 2
    handlers.masking(LONG_SENTENCE, 8, 5)
    handlers.masking(LONG_SENTENCE.lower(), 7, 5)
    assert len(drawn) == 4
    for _ in range(2):
        with pytest.warns(UserWarning, match="only the first 64 tokens"):
            handlers.masking("the cat sees the house. " * 40, 3, 0)
    assert len(drawn) == 5


def test_kept_masking_outputs_are_their_pipelines_alone(handlers, models, monkeypatch):
    """The outputs are kept by the id of the pipeline that read the text: one that lived at that id before,
    freed since (a model let go of), leaves nothing its successor would get."""
    import weakref

    drawn = _counting(monkeypatch, figures, "coverage_plot")
    dead = weakref.ref(torch.zeros(1))  # what lived at the pipeline's id before
    handlers._maskings.entries[(id(models.mlm.pipeline), ("the cat sees the house.", 4, 2))] = (dead, "the freed one's")
    assert dead() is None and isinstance(handlers.masking("the cat sees the house.", 4, 2)[2], Figure)
    assert len(drawn) == 1


def test_coverage_plot_legend_sits_below_the_lines():
    """The legend used to cover the static scheme's flat line; now it is under the axes."""
    from demo import figures
    curves = {k: [0.15] * 12 for k in masking_view.SCHEMES}
    fig = figures.coverage_plot(curves, masking_view.SCHEMES)
    fig.canvas.draw()
    ax = fig.axes[0]
    assert ax.get_legend().get_window_extent().y1 <= ax.get_window_extent().y0


# (that the schemes stack on a phone, each under its name: tests/test_app_browser.py, in Chromium)


def test_masking_predictions_match_a_full_forward(handlers, models):
    tokens = tokens_view.tokenize(models.mlm.tokenizer, LONG_SENTENCE, 64)
    runs = masking_view.simulate_masking(models.mlm.tokenizer, torch.tensor([tokens.ids]), 5, seed=0)
    rows = masking_view.mlm_predictions(models.mlm.model, models.mlm.tokenizer, tokens, runs)
    with torch.inference_mode():
        probs = models.mlm.model(runs["dynamic"][-1].input_ids).logits[0].softmax(-1)  # (T, V)
    dynamic = [r for r in rows if r[0] == masking_view.SHORT_NAMES["dynamic"] and r[1] is not None]
    assert len(dynamic) == int((runs["dynamic"][-1].outcome != 0).sum())
    for row in dynamic:
        p, pick = probs[row[1]].max(-1)
        assert row[5] == masking_view.shown_token(models.mlm.tokenizer, int(pick))
        assert row[6] == format_probability(float(p))  # "4.6%", as the Fill mask tab says it, not 0.046


def test_masking_simulation_matches_maskers(models):
    tokenizer = models.mlm.tokenizer
    ids = torch.tensor([tokens_view.tokenize(tokenizer, LONG_SENTENCE, 64).ids])
    runs = masking_view.simulate_masking(tokenizer, ids, 25, seed=3)
    distinct = {k: len({tuple(b.input_ids[0].tolist()) for b in v}) for k, v in runs.items()}
    assert distinct["static1"] == 1 and distinct["static10"] <= 10 and distinct["dynamic"] == 25
    # static masks repeat with period 10; dynamic masks are reproducible from the seed
    assert torch.equal(runs["static10"][3].input_ids, runs["static10"][13].input_ids)
    again = masking_view.simulate_masking(tokenizer, ids, 25, seed=3)
    assert all(torch.equal(a.outcome, b.outcome) for a, b in zip(runs["dynamic"], again["dynamic"]))


def test_masking_table_escapes_html(handlers):
    table, *_ = handlers.masking("<script>alert(1)</script> & <b>bold</b> 東京 😀", 3, 1)
    body = table.split("</style>", 1)[1]
    assert "<script" not in body and "<b>" not in body
    assert "&lt;" in body and "&amp;" in body


@pytest.mark.parametrize("text, epochs, seed, match", [
    ("", 5, 0, "empty"),
    ("a sentence", 0, 0, "Epochs must be between 1 and 40"),
    ("a sentence", 41, 0, "Epochs must be between 1 and 40"),
    ("a sentence", 5, -1, "Seed must be between 0 and"),
    ("a sentence", 5, "seed", "Seed must be a whole number"),
    # a cleared number box, or one holding a number too large for it (the browser sends None for both)
    ("a sentence", 5, None, r"Seed is empty \(or holds a number too large for it\): enter a whole number between 0"),
    ("a sentence", 5, " ", "Seed is empty: enter a whole number between 0 and"),  # typed spaces (API)
    ("a sentence", None, 0, "Epochs is empty"),
    ("<mask>", 5, 0, "no ordinary tokens"),
    ("<mask> " * 30, 5, 0, "no ordinary tokens"),  # was a table of "␣" with coverage figures of nothing
    (" <mask>\n <mask> ", 5, 0, "no ordinary tokens"),
])
def test_masking_bad_input(handlers, text, epochs, seed, match):
    with _error(match):
        handlers.masking(text, epochs, seed)


def test_spaces_around_the_text_are_no_tokens_in_masking_and_attention(handlers):
    """A trailing space or newline (pasted text) was a token of its own: another random draw, another map."""
    assert (handlers.masking("The cat sees the house. \n", 5, 0)[1]
            == handlers.masking("The cat sees the house.", 5, 0)[1])
    padded, plain = (handlers.attention(text, 1, "average")[4] for text in ("  The cat.\n", "The cat."))
    assert padded["choices"] == plain["choices"]


def test_masking_long_text_warns(handlers):
    with pytest.warns(UserWarning, match="only the first 64 tokens"):
        _, stats, *_ = handlers.masking("the cat sees the house. " * 4000, 2, 0)
    assert int(stats[0][2].split(" of ")[1]) == 62  # 64 minus <s> and </s>


@pytest.mark.parametrize("seed", ["seed", float("nan"), float("inf"), float("-inf"), 1.5, "1.5", "1e400", [1],
                                  True])
def test_masking_seed_must_be_a_whole_number(handlers, seed):
    """Not rounded, not Gradio's generic error: a message that names the field."""
    with _error("Seed must be a whole number"):
        handlers.masking("a sentence", 5, seed)
    assert handlers.masking("a sentence", 2, 7.0)[1] == handlers.masking("a sentence", 2, "7")[1]


@pytest.mark.parametrize("text", ["\u200b", "\u200b\u200c\u200d\u2060\ufeff" * 50, " \u200b\n\ufe0f\u00ad ",
                                  "\u202e\u202c\u200e"])
def test_zero_width_only_text_is_empty(handlers, text):
    for call in (lambda: handlers.classify(text), lambda: handlers.fill_mask(text, 5),
                 lambda: handlers.attention(text, 1, "average", "sentiment"), lambda: handlers.masking(text, 3, 0)):
        with _error("The text is empty"):
            call()
    probabilities, _, _ = handlers.classify("good\u200bfilm")  # with something visible it is a text, classified
    assert set(probabilities) == {"negative", "positive"} and sum(probabilities.values()) == pytest.approx(1)


def test_invisible_format_characters_are_removed_as_control_characters_are(handlers):
    """A zero-width space changed the answer ("capital\u200b of <mask>": Azerbaijan, France without it): the
    format characters that show nothing are removed as control characters are, wherever a text or a word is read
    (fill mask, its candidates, sentiment, attention, tokens, embeddings); the zero-width joiner and non-joiner,
    which join an emoji's parts and shape scripts, and a flag's tags are kept."""
    invisible = "\u200b\u2060\ufeff\u00ad\u200e\u202e\u2066\x00"
    assert V.clean_text(f"ca{invisible}t") == "cat"
    # ... and the format controls that shape a script: Mongolian's vowel separator, a hieroglyph joiner
    kept = ("👨\u200d👩 \u0915\u094d\u200c\u0937 🏴\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f \u0600١"
            " \u1828\u180e\u1820 \U00013000\U00013430\U00013001")
    assert V.clean_text(kept) == kept
    text = "The cat sees the house near <mask>."
    hidden = text.replace("cat", "c\u200bat\u2060").replace("house", "hou\u00adse")
    assert handlers.fill_mask(hidden, 3)[:-1] == handlers.fill_mask(text, 3)[:-1]
    assert handlers.fill_mask(text, 3, "ca\u200bt, dog")[-2] == handlers.fill_mask(text, 3, "cat, dog")[-2]
    assert handlers.classify(hidden)[0] == handlers.classify(text)[0]
    assert handlers.attention(hidden, 1, "average")[4] == handlers.attention(text, 1, "average")[4]
    assert handlers.tokens(hidden)[1] == handlers.tokens(text)[1]
    # the Tokens tab, which shows what the model reads, says what was removed
    shown = handlers.tokens(hidden)[0]
    assert "Removed before tokenizing, as in every tab: 3 invisible characters (U+200B, U+2060, U+00AD)" in shown
    assert "Removed before tokenizing" not in handlers.tokens(text)[0]
    assert handlers.neighbours("ca\u200bt")[1]["neighbours"] == handlers.neighbours("cat")[1]["neighbours"]


def test_lone_surrogates_are_removed_and_no_question_mark_is_read(handlers):
    """The reviewer's case: JSON's "lone \\ud800 surrogate <mask>" was read as "lone ? surrogate" (a surrogate
    replaced when encoded), and the candidate "\\ud800" scored as the word "?": half a character is removed, as
    an invisible one is, and a text of nothing else is empty."""
    assert V.clean_text("lone \ud800 surrogate <mask>") == "lone  surrogate <mask>"
    assert "?" not in "".join(text for text, _ in handlers.fill_mask("lone \ud800 surrogate <mask>", 3)[0])
    text = "Paris is the capital of <mask>."
    assert handlers.fill_mask(text, 3, "the, \ud800")[-2] == handlers.fill_mask(text, 3, "the")[-2]
    with _error("The text is empty"):
        handlers.fill_mask("\ud800\udfff", 3)


def test_whitespace_controls_are_read_as_line_breaks_not_removed(handlers):
    """The reviewer's case: a form feed (a PDF's page break), a vertical tab (Word's Shift+Enter), NEL and the
    separators U+001C-U+001F were removed as invisible characters, gluing the words around them ("page\x0bline"
    read as "pageline"). They are whitespace: read as line breaks (U+001F, a field separator, as a space), and the
    Tokens tab names none of them as removed."""
    typed = "the end.\x0cthe cat\x0bsees\x85the\x1chouse\u2028near\u2029the\x1fsea."
    read = "the end.\nthe cat\nsees\nthe\nhouse\nnear\nthe sea."
    assert V.clean_text(typed) == read
    assert handlers.tokens(typed)[1] == handlers.tokens(read)[1]
    assert "Removed before tokenizing" not in handlers.tokens(typed)[0]
    assert handlers.classify(typed)[1] == handlers.classify(read)[1]
    text = "the end.\x0cthe <mask> sees the house."
    assert handlers.fill_mask(text, 3)[:-1] == handlers.fill_mask(text.replace("\x0c", "\n"), 3)[:-1]


def test_decomposed_accents_are_composed_as_every_tab_reads_text(handlers):
    """The reviewer's case: "cafe\u0301" (e and a combining accent: NFD, as macOS file names write it) looks like
    "café" but got other tokens and other answers, with the accent a piece of its own. Every text and word is
    composed (NFC) as it is read, and the Tokens tab, which shows what the model reads, says so."""
    composed, decomposed = "the café sees the <mask>.", "the cafe\u0301 sees the <mask>."
    assert V.clean_text(decomposed) == composed
    assert handlers.fill_mask(decomposed, 3)[:-1] == handlers.fill_mask(composed, 3)[:-1]
    assert handlers.fill_mask(composed, 3, "cafe\u0301, sea")[-2] == handlers.fill_mask(composed, 3, "café, sea")[-2]
    assert handlers.tokens(decomposed)[1] == handlers.tokens(composed)[1]
    assert "Unicode's usual form (NFC)" in handlers.tokens(decomposed)[0]
    assert "Unicode's usual form (NFC)" not in handlers.tokens(composed)[0]
    said = []  # the fixture's vocabulary has no "é": the Embeddings tab says so, of the same pieces for either
    for word in ("cafe\u0301", "café"):
        with _error("cuts into bytes") as refused:
            handlers.neighbours(word)
        said.append(refused.value.message)
    assert said[0] == said[1]


def test_an_invisible_character_inside_a_decomposed_letter_is_still_said_to_be_composed(handlers):
    """A zero-width space between "e" and its combining accent: `clean_text` drops it, then composes "é". The
    Tokens tab says the text was changed to NFC, as for "cafe\u0301" (`composes` reads the text without its
    invisible characters, as `clean_text` composes it)."""
    typed = "the cafe\u200b\u0301 sees the <mask>."
    assert V.clean_text(typed) == "the café sees the <mask>."
    assert V.composes(typed) and not V.composes("the cafe\u200b sees the <mask>.")
    assert "Unicode's usual form (NFC)" in handlers.tokens(typed)[0]


def test_candidate_words_may_start_with_the_apps_space_sign(handlers):
    """The reviewer's case: the answers' table writes a word as "␣The" beside "The", and that label copied into
    the candidates was refused as "part of a character" ("␣" is a character of three bytes). A leading "␣" or
    "Ġ" is the word's space, as the Embeddings tab reads it: the mask's place chooses that form anyway."""
    text = "The cat sees the <mask>."
    assert handlers.fill_mask(text, 3, "␣sea, Ġday")[-2] == handlers.fill_mask(text, 3, "sea, day")[-2]
    assert V.candidate_words("␣sea; Ġday, ␣") == ["sea", "day"]
    # a space sign alone named no word: the ordinary answers came back as if they were the candidates' (an API
    # client could not tell); it is refused, saying what to type
    for sign in ("␣", "Ġ", "␣, Ġ"):
        with pytest.raises(gr.Error, match="is only the sign of a space: type a word after it"):
            handlers.fill_mask("The cat sees the <mask>.", 3, sign)


def test_a_candidates_leading_g_is_a_space_only_in_a_vocabulary_entry(tokenizer):
    """"Ġ" is also a letter (Maltese "Ġenerali"): it was left out of every candidate word, so "Ġenerali" was
    scored as "enerali". Given the model's tokenizer, it is the vocabulary's space only where the word with it is
    an entry ("Ġsea"); "␣", the app's sign of a space, always is."""
    assert tokenizer.token_to_id("Ġsea") is not None and tokenizer.token_to_id("Ġenerali") is None
    assert V.candidate_words("Ġenerali, ␣sea; Ġsea, ␣Ġirja, Ġ", tokenizer) == ["Ġenerali", "sea", "sea", "Ġirja"]


def test_a_character_nfc_replaces_is_not_said_to_be_typed_in_parts(handlers):
    """The ohm sign (U+2126) is one character that NFC writes as the Greek letter Ω: the Tokens tab said it was
    "typed in parts" ("a letter and a separate combining accent"). Its note says the text was changed to NFC and
    names the ohm sign."""
    text = "a 5 \u2126 resistor"
    assert V.clean_text(text) == "a 5 \u03a9 resistor"
    view = handlers.tokens(text)[0]
    assert "Unicode's usual form (NFC)" in view and "the ohm sign, U+2126" in view
    assert "typed in parts" not in view


def test_the_length_limit_holds_after_nfc():
    """NFC writes a few characters as several: 200,000 U+1D160 (a musical note, three code points in NFC) passed
    the limit and became 600,000 characters. The limit is checked on the text as read too, in words that say why
    it grew."""
    with _error(re.escape(f"The text must be at most {V.MAX_CHARS:,} characters long; in Unicode's usual form "
                          f"(NFC), which writes some characters as several, it is {3 * V.MAX_CHARS:,}.")):
        V.clean_text("\U0001D160" * V.MAX_CHARS)
    assert len(V.clean_text("\U0001D160" * (V.MAX_CHARS // 3))) == 3 * (V.MAX_CHARS // 3)  # within it: read


def test_a_text_too_long_is_said_for_a_singular_and_a_plural_name(handlers):
    """"The candidate words is too long" (/fill_mask) and "The words is too long" (/word_map): said in words
    that agree with either."""
    long = "x" * (V.MAX_CHARS + 1)
    for call, name in [(lambda: handlers.fill_mask("a <mask>", 3, long), "The candidate words"),
                       (lambda: handlers.word_map(long), "The words"),
                       (lambda: handlers.fill_mask(long, 3), "The text")]:
        with _error(f"^'{name} must be at most {V.MAX_CHARS:,} characters long; {len(long):,} is too long.'$"):
            call()


def test_masking_html_size_is_bounded(handlers, models):
    """128 tokens x 40 epochs used to be ~890 KB of HTML (an inline title and two classes on every token).
    Now a bare <i> per token, a class and a title on the prediction targets only."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table, stats, *_ = handlers.masking("the cat sees the house every day. " * 200, 40, 0)
    n_tokens = int(stats[0][2].split(" of ")[1])
    assert n_tokens == 62 and table.count("<tr><th>epoch ") == 40
    assert table.count("<i>") + table.count("<i class=") == 3 * 40 * n_tokens  # every token, every epoch, every scheme
    # bytes; 14-17 per token here, and 7 KB that any table has: the CSS, legend, notes (this text's: it was cut) and
    # the "more below" line
    assert len(table.encode()) < 20 * 3 * 40 * n_tokens + 7_300
    assert 'class="mk-1"' in table and "&lt;mask&gt;" in table


def test_long_text_is_cut_before_tokenizing_with_the_same_tokens(models):
    """A 200,000-character text is cut to a few thousand characters before tokenizing; the model sees the
    same tokens as from the whole text."""
    tokenizer, max_length = models.mlm.tokenizer, models.mlm.config.max_length
    for text in ["the old man follows the river. " * 6000, "東京 😀 mixed " * 15000, " " * 150_000 + "a cat " * 8000]:
        tokens = tokens_view.tokenize(tokenizer, text, max_length)
        assert len(tokens.text) <= tokens_view.window_chars(tokenizer, max_length) < len(text)
        full_ids, _, truncated = roberta.encode(tokenizer, text, max_length)
        assert tokens.ids == full_ids[0].tolist() and truncated[0] and tokens.truncated
    short = "a short text"
    assert tokens_view.cut_to_window(short, tokenizer, max_length) is short


def test_fill_mask_mask_beyond_the_cut(handlers):
    with _error("beyond the first 64 tokens"):
        handlers.fill_mask("the cat " * 20_000 + "<mask>", 5)
    with pytest.warns(UserWarning, match="only the first 64 tokens"):
        filled, *_ = handlers.fill_mask("<mask> " + "the cat " * 20_000, 5)
    assert filled[-1] == (" …", None) and sum(len(t) for t, _ in filled) < 20_000


def test_layer_by_layer_ends_in_the_models_own_answer(handlers, models):
    """One row per layer, the embeddings first; the last row is the pipeline's prediction (same token and
    probability); each row's rank of the answer agrees with its guesses, and its guesses are sorted."""
    text = "The cat sat on the <mask>, and the dog [MASK] at the house."
    view, per_mask = handlers.fill_mask_layers(text)
    _, *_, raw, _ = handlers.fill_mask(text, 1)
    n_layers = models.mlm.config.num_hidden_layers
    assert len(per_mask) == 2 and view.count('class="ll-mask"') == 2
    for mask, predicted in zip(per_mask, raw):
        assert [row["layer"] for row in mask["layers"]] == list(range(n_layers + 1))
        assert mask["answer"]["token"] == predicted[0]["token"]
        last = mask["layers"][-1]
        assert last["answer_rank"] == 1 and last["top"][0]["token"] == predicted[0]["token"]
        assert last["answer_score"] == pytest.approx(predicted[0]["score"], rel=1e-5)
        for row in mask["layers"]:
            scores = [g["score"] for g in row["top"]]
            assert len(scores) == layer_lens.GUESSES and scores == sorted(scores, reverse=True)
            tokens = [g["token"] for g in row["top"]]
            if mask["answer"]["token"] in tokens:
                assert row["answer_rank"] == tokens.index(mask["answer"]["token"]) + 1
            else:
                assert row["answer_rank"] > len(tokens) and row["answer_score"] <= scores[-1]
    assert "embeddings" in view and f"layer {n_layers}" in view


def test_the_page_draws_layer_by_layer_for_the_answers_it_shows(handlers):
    """fill_mask_page: fill_mask's outputs, then the layer view of the same text, each table following the word
    the completed sentence shows: the model's top answer, or the best candidate word when candidates are given."""
    text = "The cat sat on the <mask>."
    *outputs, view, lens = handlers.fill_mask_page(text, 3)
    assert tuple(outputs) == handlers.fill_mask(text, 3)
    assert view == handlers.fill_mask_layers(text)[0] and lens == handlers.fill_mask_layers(text)[1]
    *outputs, view, lens = handlers.fill_mask_page(text, 3, "house, dog")
    best = outputs[-2][0][0]  # the best candidate's row
    assert lens[0]["answer"]["token"] == best["token"] and best["candidates"][0] in ("house", "dog")
    assert lens[0]["layers"][-1]["answer_score"] == pytest.approx(best["score"], rel=1e-5)
    assert "each table follows the best of them" in view
    # a candidate of several pieces is named as the user wrote it, and said to be followed by its first piece
    *outputs, view, lens = handlers.fill_mask_page(text, 3, "catalogue")
    piece = html.escape(word_label(outputs[-2][0][0]["token_str"]))  # " c" to the tiny tokenizer
    assert piece != "catalogue" and lens[0]["answer"]["candidates"] == ["catalogue"]
    assert f"where “catalogue” comes from <small>(followed by its first piece, “{piece}”" in view
    # many words of one first piece are named as their row names them: the first five, then how many more
    words = [f"cat{n}" for n in range(40)]  # "cat" and a number: one first piece to the tiny tokenizer
    *outputs, view, lens = handlers.fill_mask_page(text, 3, ", ".join(words))
    assert lens[0]["answer"]["candidates"] == words and words[5] not in view
    assert f"where “{', '.join(words[:5])} and 35 more” comes from" in view


def test_bert_mask_spelling_is_read_and_shown_as_one_mask(handlers):
    """"[MASK]" is the model's <mask> token: the token strip shows one mask chip, not "[ M AS K ]"."""
    *_, view = handlers.fill_mask("Paris is the capital of [MASK].", 3)
    assert view.count("fm-tok fm-masked") == 1 and "[MASK]" not in view and ">M<" not in view
    assert handlers.fill_mask("Paris is the capital of [MASK].", 3)[-2] == \
        handlers.fill_mask("Paris is the capital of <mask>.", 3)[-2]


def test_the_completed_sentence_ends_where_the_model_stopped_reading(handlers, models):
    """A text longer than the model reads: the completed sentence stops at the last token read, then " …"."""
    text = "The <mask> sat on the mat. " + " ".join(f"word{i}" for i in range(400)) + " end."
    with pytest.warns(UserWarning, match="only the first 64 tokens"):
        filled, *_ = handlers.fill_mask(text, 1)
    shown = "".join(part for part, _ in filled)
    assert shown.endswith(" …") and "end." not in shown and "word399" not in shown
    assert "word1 " in shown or "word1" in shown


def test_layer_by_layer_embeddings_row_sees_only_the_masks_position(handlers):
    """Before any attention the mask's state is its token plus its position: two sentences with the mask at
    the same place get the same first-row guesses, and different ones after the layers."""
    _, first = handlers.fill_mask_layers("The <mask> sat on the mat.")  # <s>, "The", then the mask
    _, second = handlers.fill_mask_layers("The <mask> ran to the house every day.")
    assert first[0]["layers"][0] == second[0]["layers"][0]
    assert first[0]["layers"][-1]["top"] != second[0]["layers"][-1]["top"]


def test_layer_by_layer_view_escapes_tokens_and_checks_input(handlers):
    per_mask = [{"answer": {"token": 7, "token_str": " <b>"},
                 "layers": [{"layer": 0, "top": [{"token": 7, "token_str": " <b>", "score": 0.5}],
                             "answer_score": 0.5, "answer_rank": 1},
                            {"layer": 1, "top": [{"token": 8, "token_str": " ", "score": 0.9}],
                             "answer_score": 0.0, "answer_rank": 1234}]}]
    view = layer_lens.layers_html(per_mask)
    assert "<b>" not in view and "&lt;b&gt;" in view
    assert "#1,234" in view and ">␣ 90.0%<" in view  # a whitespace token is shown as "␣", not blank
    assert 'class="ll-guess ll-answer"' in view  # the answer among a row's guesses stands out
    for text, match in [("no mask here", "There is no mask"), ("<mask> " * 6, "at most 5"), ("", "empty"),
                        ("the cat " * 100 + "<mask>", "beyond the first 64 tokens")]:
        with _error(match):
            handlers.fill_mask_layers(text)


@pytest.mark.parametrize("targets, match", [(", ".join(f"w{i}" for i in range(101)), "at most 100"),
                                            ("x" * (V.MAX_CHARS + 1), "too long"), (5, "must be a string"),
                                            ("France, <mask>", "“&lt;mask&gt;” is a special token, not a word"),
                                            ("<s>, </s>, [MASK]", "“&lt;s&gt;”, “&lt;/s&gt;” and “\\[MASK\\]” "
                                                                  "are special tokens")])
def test_fill_mask_bad_targets(handlers, targets, match):
    with _error(match):
        handlers.fill_mask("a <mask>", 5, targets)


@pytest.mark.timeout(HANG_S)  # quadratic in the whitespace: minutes (a hang guard, not a speed bound)
def test_completed_sentence_is_linear_in_whitespace():
    parts = fill_mask_view.completed_sentence("<mask>" + " " * 199_990 + "x", ["word"])
    assert parts[0] == ("word", "<mask> 1") and parts[1] == (" " * 199_990 + "x", None)  # whitespace kept
    assert fill_mask_view.completed_sentence("a  <mask> b [MASK]", ["x", "y"]) == [
        ("a", None), ("x", "<mask> 1"), (" b", None), ("y", "<mask> 2")]


# ----------------------------------------------------------------------------- worst-case inputs
# Every handler on every worst-case input (demo/worst_case.py, 200,000 characters each): either an answer from
# the model, checked, or the plain message that kind of input calls for (asserted: not just any gr.Error).
WORST = worst_case_texts()


def with_mask_inside(texts: dict[str, str], n: int = N, after: int = 10) -> dict[str, str]:
    """Fill-mask variants the model answers: a mask after the text's first `after` characters (at most 4 bytes
    each, so within the first 64 tokens whatever the tokenizer), the text then going on to `n` characters."""
    return {f"<mask> inside {name}": text[:after] + " <mask> " + text[after:n - 8] for name, text in texts.items()}


EMPTY = {"newlines", "tabs, spaces and newlines", "zero-width characters only"}  # nothing visible
# fill mask: no mask (the plain texts), one before the text, one after it (beyond the 64 tokens read), one inside
WORST_FILL = {**WORST, **with_masks(WORST), **with_mask_inside(WORST)}
# what the classifier reads of these is one word (a long word is cut where the reading stops): the counterfactual
# has nothing to remove; after a sentence, it has
ONE_WORD = {"spaces, then a word", "a word, spaces, a bracket", "a word, spaces, a comma",
            "ideographic spaces, then a word", "one letter", "one digit", "one punctuation mark",
            "a long word, then words", "spaced brackets", "spaced commas", "combining marks",
            "zero-width between letters", "CJK", "emoji"}
SENTENCE = "The film was good. "
WORST_CF = {**WORST, **{f"a sentence, then {name}": SENTENCE + WORST[name][:V.MAX_CHARS - len(SENTENCE)]
                        for name in sorted(ONE_WORD)}}
TEXT_EMPTY = "The text is empty: type a sentence first."
ONLY_MASKS = "masks, no spaces"  # nothing but special tokens


def _outcome(fn, *args) -> tuple[object, str | None]:
    """(what `fn` returned, None), or (None, the message of the plain error it raised)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return fn(*args), None
        except gr.Error as err:
            return None, err.message


def _n_masks(text: str) -> int:
    return len(re.findall(r"<mask>|\[MASK\]", text))


def _fill_mask_error(name: str, text: str) -> str | None:
    """The message `name` calls for, or None: an answer."""
    n = _n_masks(text)
    if name in EMPTY:
        return TEXT_EMPTY
    if n == 0:
        return "There is no mask in the text: write &lt;mask&gt; where a word should be predicted"
    if n > V.MAX_MASKS:
        return f"The text has {n} masks; at most {V.MAX_MASKS} are allowed."
    if name.endswith(" + <mask>"):
        return "The mask is beyond the first 64 tokens, which is all the model reads"
    return None


def _check_fill_mask(handlers, text, outputs):
    """Each mask answered: both candidate words scored there, the sentence completed at each mask, one block each."""
    filled, *labels, raw, view = outputs
    n = _n_masks(text)
    assert len(raw) == n and all(sorted(w for r in row for w in r["candidates"]) == ["cat", "dog"] for row in raw)
    assert all(0 < r["score"] <= 1 for row in raw for r in row)
    assert [label for _, label in filled if label] == [f"<mask> {i}" for i in range(1, n + 1)]
    assert view.count('class="fm-mask"') == n and labels[n:] == [None] * (V.MAX_MASKS - n)


def _check_fill_mask_layers(handlers, text, outputs):
    """Each mask followed through every layer, ending in the model's own top answer."""
    view, per_mask = outputs
    assert len(per_mask) == _n_masks(text) == view.count('class="ll-mask"')
    for mask in per_mask:
        assert len(mask["layers"]) == handlers.models.mlm.config.num_hidden_layers + 1
        last = mask["layers"][-1]
        assert last["answer_rank"] == 1 and last["top"][0]["token"] == mask["answer"]["token"]


def _sentiment_error(name: str, text: str) -> str | None:
    if name in EMPTY:
        return TEXT_EMPTY
    if name == ONLY_MASKS:
        return "The text has no words to classify, only special tokens such as &lt;pad&gt; or &lt;mask&gt;."
    return None


def _check_probabilities(probabilities: dict):
    assert set(probabilities) == {"negative", "positive"}
    assert sum(probabilities.values()) == pytest.approx(1, abs=1e-5)
    assert all(0 <= p <= 1 for p in probabilities.values())


def _check_classify(handlers, text, outputs):
    probabilities, words, explanation = outputs
    _check_probabilities(probabilities)
    assert any(score is not None for _, score in words) and "words push towards" in explanation


def _counterfactual_error(name: str, text: str) -> str | None:
    if name in ONE_WORD:
        return "is the only word, and no negation rule applies to it"
    return _sentiment_error(name, text)


def _check_counterfactual(handlers, text, outputs):
    """The original and every edit classified; the word edited is one of the text's."""
    table, data = outputs
    _check_probabilities(data["original"]["probabilities"])
    assert data["edits"] and data["word"] in data["original"]["text"]
    for edit in data["edits"]:
        _check_probabilities(edit["probabilities"])
        assert edit["text"] != data["original"]["text"]


def _attention(handlers, text, model):
    """The attention tab's first answer, then the picker's token 5 (an error when the text has fewer tokens)."""
    return handlers.attention(text, 1, "average", model), _outcome(handlers.attention_token, text, 2, 1, 5, model)


def _check_attention(handlers, text, outputs):
    (heatmap, grid, rollout, bars, picker, notes, heads, *_), (token, error) = outputs
    n = int(re.search(r"”: (\d+) tokens", notes)[1])  # "Drawn for “…”: N tokens ..."
    assert 3 <= n <= 64 and len(picker["choices"]) == n and heads.count('class="hv-r"') == n
    assert all(isinstance(figure, Figure) for figure in (heatmap, grid, rollout, bars))
    if n > 5:
        assert error is None and "Where token 5 " in token[1], error
    else:
        assert error == f"Token must be between 0 and {n - 1}, got 5.", error


def _check_masking(handlers, text, outputs):
    table, stats, plot, predictions, plot_text = outputs
    assert table.count("<tr><th>epoch ") == V.MAX_EPOCHS and isinstance(plot, Figure) and predictions
    assert len(re.findall(r'<th scope="row">\d+</th>', plot_text)) == V.MAX_EPOCHS


def _check_tokens(handlers, text, outputs):
    view, rows, picker, merges, steps = outputs
    read = V.clean_text(text)  # the text without its invisible characters, which no tab reads
    assert rows["characters"] == len(read) and 0 < rows["read_characters"] <= len(read)
    assert 3 <= len(rows["tokens"]) <= 64


def _word_error(name: str, text: str, box: str = "The word") -> str | tuple[str, ...] | None:
    """The embeddings tab's word boxes take one word of at most 40 characters (`box`: the box's name)."""
    if name in EMPTY:
        return f"{box} is empty: type a word."
    if len(text.strip()) > 40:
        return ("” is longer than 40 characters: type one word", *([f"{box}: “"] if box != "The word" else []))
    return None


def _check_neighbours(handlers, text, outputs):
    view, result = outputs
    assert result["word"] == text.strip() and len(result["neighbours"]) == 10


def _check_analogy(handlers, text, outputs):
    view, result = outputs
    assert result["query"][0] == text.strip() and len(result["neighbours"]) == 10


def _word_map_error(name: str, text: str) -> str | None:
    """A text without commas, semicolons or new lines is split at its spaces (`word_map.parse_words`): "the cat sat
    ." is four words, a map; a text of spaced words that this tokenizer cuts into many pieces places too few."""
    if name == "spaced words":
        return None
    if name in ("SST-2-style tokens", "HTML",  # commas, semicolons (&amp;): several "words", none placeable
                "a long word, then words", "mixed scripts"):  # spaces: "the" and "cat" alone placed, or fewer
        return "Fewer than 3 of the words can be placed"
    return "Give 3 to 30 different words, separated by commas"


def _check_word_map(handlers, text, outputs):
    figure, table = outputs
    named = {name.rstrip("*") for name in re.findall(r'<th scope="row">(.*?)</th>', table)}  # "*": in pieces
    assert isinstance(figure, Figure) and {"the", "cat", "sat"} <= named


# handler: (its inputs, the call, the message each input is expected to end in (None: an answer), the answer's
# checks). The attention tab's handlers and the tokens and embeddings tabs' read the plain texts.
WORST_CASES = {
    "fill_mask": (WORST_FILL, lambda h, t: h.fill_mask(t, 20, "cat, dog"), _fill_mask_error, _check_fill_mask),
    "fill_mask_layers": (WORST_FILL, lambda h, t: h.fill_mask_layers(t), _fill_mask_error, _check_fill_mask_layers),
    "classify": (WORST, lambda h, t: h.classify(t), _sentiment_error, _check_classify),
    "counterfactual": (WORST_CF, lambda h, t: h.counterfactual(t), _counterfactual_error, _check_counterfactual),
    "attention (mlm)": (WORST, lambda h, t: _attention(h, t, "mlm"), lambda name, t: TEXT_EMPTY if name in EMPTY
                        else None, _check_attention),
    "attention (sentiment)": (WORST, lambda h, t: _attention(h, t, "sentiment"),
                              lambda name, t: TEXT_EMPTY if name in EMPTY else None, _check_attention),
    "masking": (WORST, lambda h, t: h.masking(t, V.MAX_EPOCHS, 0), lambda name, t: (
        "The text has no ordinary tokens to mask" if name == ONLY_MASKS else TEXT_EMPTY if name in EMPTY else None),
        _check_masking),
    "tokens": (WORST, lambda h, t: h.tokens(t), lambda name, t: TEXT_EMPTY if name in EMPTY else None, _check_tokens),
    "bpe_merges": (WORST, lambda h, t: h.bpe_merges(t), lambda name, t: (
        f"” is {len(V.clean_text(t, required=False).encode()):,} bytes: merge by merge shows words of up to 40 "
        "bytes"), None),
    "neighbours": (WORST, lambda h, t: h.neighbours(t), _word_error, _check_neighbours),
    "analogy": (WORST, lambda h, t: h.analogy(t, "king", "woman"), lambda name, t: _word_error(name, t, "Word a"),
                _check_analogy),
    "word_map": (WORST, lambda h, t: h.word_map(t), _word_map_error, _check_word_map),
}


# the public handlers (`user_errors`) the worst-case inputs do not run on their own, each for its reason
NOT_WORST_CASES = {
    "fill_mask_page": "fill_mask's outputs, then fill_mask_layers': both are run on the worst-case inputs",
    "counterfactual_page": "counterfactual itself, without its long-text warning (Classify has said it)",
    "classify_page": "classify's outputs (the same `_classify`), named for the classifier that answered",
    "masking_page": "masking's outputs (the same `_kept_masking`), then its two tables as Markdown",
    "attention_token": "run by the attention cases (`_attention`: token 5 of each text)",
    "attention_layer": "one view of the text `attention` drew, through the same checks (`_attention_inputs`)",
    "attention_head": "one view of the text `attention` drew, through the same checks (`_attention_inputs`)",
    "attention_view": "one view of the text `attention` drew, through the same checks (`_attention_inputs`)",
    "fill_mask_compare": "fill_mask's checks and pipeline on each model; its second model is a Hub download",
    "positions": "no text: it reads only the model",
}


def test_every_public_handler_is_run_on_the_worst_case_inputs_or_says_why_not():
    """A new handler (an API endpoint) was silently left out of WORST_CASES: each public handler (`user_errors`)
    is in it (its key, or "handler (variant)") or in NOT_WORST_CASES with the reason."""
    wrapped = V.user_errors(len).__code__  # every `user_errors` handler runs this wrapper's code
    public = {name for name, method in inspect.getmembers(H.Handlers, inspect.isfunction)
              if not name.startswith("_") and method.__code__ is wrapped}
    run = {key.split(" (")[0] for key in WORST_CASES}
    missing = sorted(public - run - NOT_WORST_CASES.keys())
    assert not missing, (f"{missing} never meet the worst-case inputs: add each to WORST_CASES (its inputs, the "
                         "call, the expected message, the checks), or to NOT_WORST_CASES with the reason")
    assert not (run | NOT_WORST_CASES.keys()) - public, "WORST_CASES or NOT_WORST_CASES names no public handler"
    assert not run & NOT_WORST_CASES.keys(), "a handler in both WORST_CASES and NOT_WORST_CASES"


@pytest.mark.slow
@pytest.mark.timeout(HANG_S)
@pytest.mark.parametrize("handler, name", [(handler, name) for handler, (inputs, *_) in WORST_CASES.items()
                                           for name in inputs])
def test_worst_case_input(handlers, single_thread, handler, name):
    inputs, call, expected_error, check = WORST_CASES[handler]
    text = inputs[name]
    result, error = _outcome(call, handlers, text)
    expected = expected_error(name, text)
    if expected is None:
        assert error is None, error
        check(handlers, text, result)
    else:  # the message, or every part of it given
        parts = (expected,) if isinstance(expected, str) else expected
        assert error is not None and all(part in error for part in parts), f"expected {parts}, got {error!r}"


# ----------------------------------------------------------------------------- missing models, ablation, long examples
# (the About tab and the notes on the models: tests/test_about.py)
def test_missing_models_give_a_clear_message(tmp_path):
    models = load_models(tmp_path / "no-mlm", tmp_path / "no-sst2")
    handlers = H.Handlers(models)
    with _error("fill-mask .* not available: the folder .*no-mlm.* does not exist.*MLM_MODEL"):
        handlers.fill_mask("a <mask>", 5)
    with _error("sentiment .* not available.*SENTIMENT_MODEL"):
        handlers.classify("good")
    with _error("not available"):
        handlers.attention("good", 1, "average")
    with _error("not available"):
        handlers.masking("good film", 3, 0)


def test_the_attention_hint_comes_from_the_model(handlers):
    hint = handlers.attention_hint("the cat sees the house.", (".", "the"))  # single tokens here
    layer, head = map(int, re.search(r"layer (\d+), head (\d+)", hint).groups())
    tokens, attentions = handlers.attention_data("mlm", "the cat sees the house.")
    source, target = [[label.strip() for label in tokens.labels].index(w) for w in (".", "the")]
    weights = np.asarray(attentions)[:, :, source, target]  # (L, nh): the hint names the largest
    assert (layer - 1, head - 1) == np.unravel_index(int(weights.argmax()), weights.shape)
    assert f"({format_probability(float(weights.max()))} of its attention" in hint
    # the layer's own average of heads (the view the tab opens on), then all heads of all layers, both named
    assert f"{format_probability(float(weights[layer - 1].mean()))} in layer {layer}'s average of heads" in hint
    assert explain.link_hint(tokens, attentions, ("it", "cat")) == ""  # the words are not in the text
    assert f"over all {attentions.shape[0] * attentions.shape[1]} heads of the {attentions.shape[0]} layers" in hint
    assert handlers.attention_hint("no such words here", ("it", "cat")) == ""


def test_the_attention_hint_says_the_even_share_and_whether_the_head_links_the_words(handlers):
    """“layer 6, head 4 is where “it” attends most to “cat” (11.8%…)” read as a coreference link, where spread
    evenly over the 13 tokens each would get 7.7%: the hint says the even share, and that no head links them
    clearly when the strongest gives less than twice it."""
    text = "the cat sees the house."
    tokens, attentions = handlers.attention_data("mlm", text)
    labels = [label.strip() for label in tokens.labels]
    weights = np.asarray(attentions)[:, :, labels.index("."), labels.index("the")]  # (L, nh)
    hint = handlers.attention_hint(text, (".", "the"))
    even = 1 / len(labels)
    assert f"spread evenly, each of the {len(labels)} tokens would get {format_probability(even)}" in hint
    assert ("no head here clearly links" in hint) == (weights.max() < 2 * even)
    # one head that gives "the" all of "."'s attention: a clear link, said without the caveat
    clear = np.array(attentions, copy=True)
    clear[0, 0, labels.index(".")] = 0
    clear[0, 0, labels.index("."), labels.index("the")] = 1
    hint = explain.link_hint(tokens, clear, (".", "the"))
    assert "layer 1, head 1 is where" in hint and "(100% of its attention" in hint
    assert "no head here clearly links" not in hint


def test_the_swap_hint_names_the_head_whose_share_falls_most(handlers):
    """The trophy example (layer 1, head 1) was never explained: the hint names the head whose share of “it”'s
    attention on “trophy” falls most from "big" to "small", with both shares and the fall, so a learner can see
    whether any head follows the referent. (It compared the largest share of all heads in each version, which can
    stay put while one head follows.)"""
    text = "the cat sees the house."  # "." and " the" are single tokens of the fixture's tokenizer
    hint = handlers.swap_hint(text, ("cat", "dog"), (".", "the"))
    shares = []
    for word in ("cat", "dog"):
        tokens, attentions = handlers.attention_data("mlm", text.replace("cat", word))
        labels = [label.strip() for label in tokens.labels]
        shares.append(np.asarray(attentions)[:, :, labels.index("."), labels.index("the")])  # (L, nh)
    fall = shares[0] - shares[1]
    layer, head = np.unravel_index(int(np.argmax(fall)), fall.shape)
    assert "swap “cat” for “dog”" in hint
    if fall.max() > 0:
        assert f"layer {layer + 1}, head {head + 1}" in hint.lower()
        assert (f"{100 * fall.max():.3g} points (from {format_probability(float(shares[0][layer, head]))} of “.”'s "
                f"attention with “cat” to {format_probability(float(shares[1][layer, head]))} with “dog”)") in hint
    else:
        assert "No head does" in hint
    assert handlers.swap_hint(text, ("cat", "dog"), (".", "nowhere")) == ""  # a word not in the text


def test_the_swap_hint_says_whether_a_head_follows(handlers, monkeypatch):
    """The hint left the reader to conclude: it says whether a head follows, clearly (its share falls by at least
    twice the even share, the bar of a clear link), not clearly, or not at all (no head's share falls)."""
    text = "the cat sees the house."
    n = len(handlers.attention_data("mlm", text)[0].labels)
    even = 1 / n
    cases = [(2.5 * even, "Layer 2, head 3 does: its share on “the” falls", "at least the"),
             (1.5 * even, "No head clearly does: the largest fall of the 6 heads, layer 2, head 3's", "under the"),
             (0.0, "No head does: none of the 6 gives “the” less with “dog” than with “cat”.", "")]
    for fall, verdict, bar in cases:
        before = np.full((2, 3), 0.3)
        after = before.copy()
        after[1, 2] -= fall
        found = iter([before, after])
        monkeypatch.setattr(explain, "link_weights", lambda *args, found=found: next(found))
        hint = handlers.swap_hint(text, ("cat", "dog"), (".", "the"))
        assert verdict in hint and bar in hint and hint.endswith("."), hint
        if bar:
            assert f"{100 * fall:.3g} points" in hint
            assert f"{100 * explain.CLEAR_LINK * even:.3g} points a clear one takes: twice the " \
                   f"{format_probability(even)} an even spread over the {n} tokens would give" in hint


def test_rollout_is_a_weight_and_its_notes_say_how_it_overcounts(handlers):
    """Rollout's colour bar said "share of information from each input token", beside heads said to park on
    <s> with "nothing to look up": it is attention multiplied through the layers, and the notes say that it
    counts every weight as information moved."""
    outputs = handlers.attention("the cat sees the house.", 2, "average")
    rollout, notes = outputs[2], outputs[5]
    assert rollout.axes[-1].get_xlabel() == "rollout weight (attention multiplied through the layers)"  # the bar's
    assert "information from each input token" not in rollout.axes[-1].get_xlabel()
    assert "counts every attention weight as information moved" in notes and "not a measurement" in notes


def test_the_explanation_says_what_the_all_pad_baseline_scores(handlers, models):
    """Integrated gradients measure each word's push from the all-<pad> input, which the shipped classifier
    already scores about 62% positive; the explanation says what this model scores it, as its pipeline would
    (the logits divided by its temperature)."""
    text = "this film is not bad at all, i loved it."
    explanation = handlers.classify(text)[2]
    loaded = models.sentiment
    tokens = tokens_view.tokenize(loaded.tokenizer, text, loaded.pipeline.max_length)
    special = tokens_view.special_ids(loaded.tokenizer)
    pad = loaded.tokenizer.token_to_id("<pad>")
    ids = torch.tensor([[i if i in special else pad for i in tokens.ids]])
    positions = roberta.model.position_ids_from_input_ids(torch.tensor([tokens.ids]), loaded.config.pad_token_id)
    with torch.no_grad():
        embeds = loaded.model.roberta.embeddings.word_embeddings(ids)
        logits = loaded.model(inputs_embeds=embeds, position_ids=positions).logits
    positive = next(i for i, name in loaded.config.id2label.items() if name == "positive")
    baseline = float(loaded.pipeline.scores(logits)[0, int(positive)])
    assert f"which this model already scores {format_probability(baseline)} positive." in explanation


def test_what_if_says_a_small_change_is_no_proof_of_an_unimportant_word(handlers):
    """“gorgeous” is the strongest push, yet removing it moves the shipped model 0.1 points: the note said only
    that a big change means the answer rested on the word, and a learner concluded one tool was broken."""
    view, _ = handlers.counterfactual("the old man was good and the cat likes music.")
    assert ("A small change does not mean the word was unimportant: other words may say the same thing, and a "
            "score near 100% barely moves.") in view


def test_the_ablation_note_says_how_often_each_mask_is_seen():
    """A static arm of 10 masks over 20 epochs shows each mask twice, where BERT showed each 4 times (10 masks
    over 40 epochs); the training-row columns are losses, and their headers say so."""
    arms = {"dynamic": {"label": "dynamic", "masking": "dynamic", "n": 1, "mean": {"mlm_loss": 4.5}},
            "static-dupe10": {"label": "static, 10 masks", "masking": "static", "dupe_factor": 10, "n": 1,
                              "mean": {"probe_seen_mask_loss": 3.9, "probe_fresh_mask_loss": 4.4}}}
    table = ablation_markdown({"results": {"arms": arms, "setup": {"epochs": 20}}})
    assert "| training-row loss,<br>mask trained on | training-row loss,<br>fresh mask |" in table
    assert "With 20 epochs and 10 masks, each mask is seen 2 times (BERT: 4 times, its 10 masks over 40 epochs)." \
        in table
    one_mask = {"dynamic": arms["dynamic"]}  # no static arm of several masks: nothing to say
    assert "each mask is seen" not in ablation_markdown({"results": {"arms": one_mask, "setup": {"epochs": 20}}})


def test_the_ablation_tables_headers_break_into_short_lines():
    """At 1280 px the seven columns, each header on one line as the page keeps them, were 1259 px in a 1214-px box:
    the last header was cut to "SST-2 dev accura…". A longer header takes two lines, none longer than
    "training-row loss," (18 characters; the number cells are 13 at most), and the header row still says every
    column's whole name."""
    arms = {"dynamic": {"label": "dynamic", "masking": "dynamic", "n": 3, "mean": {"mlm_loss": 4.5}}}
    header = ablation_markdown({"results": {"arms": arms}}).split("\n")[2]
    names = [name.strip() for name in header.strip("|").split("|")]
    lines = [line for name in names for line in name.split("<br>")]
    assert max(map(len, lines)) <= len("training-row loss,"), names
    assert [name.replace("<br>", " ") for name in names] == [
        "arm", "seeds", "held-out MLM loss", "held-out MLM accuracy", "training-row loss, mask trained on",
        "training-row loss, fresh mask", "SST-2 dev accuracy"]


def test_ablation_markdown():
    assert "not available" in ablation_markdown({})
    for other in ([1, 2, 3], {"static": {"mlm_loss": 2.5}}, {"arms": [1]}):  # not what train.ablation writes
        assert "not in the layout `train.ablation` writes" in ablation_markdown({"results": other})
    # train.ablation's layout: one row per arm with mean ± std over seeds, the paper's table beside it
    arms = {"dynamic": {"label": "dynamic (RoBERTa)", "n": 3, "mean": {"mlm_loss": 4.5, "mlm_accuracy": 0.25,
                                                                       "sst2_accuracy": 0.8},
                        "std": {"mlm_loss": 0.01, "mlm_accuracy": 0.002, "sst2_accuracy": 0.01}},
            "static-dupe1": {"label": "static, one fixed mask", "n": 1,
                             "mean": {"mlm_loss": 4.7, "probe_seen_mask_loss": 3.9, "probe_fresh_mask_loss": 4.4},
                             "std": {"mlm_loss": None}}}
    paper = {"rows": [{"masking": "dynamic", "ours": "dynamic", "squad2_f1": 78.7, "mnli_m_accuracy": 84.0,
                       "sst2_accuracy": 92.9}]}
    table = ablation_markdown({"results": {"arms": arms, "paper": paper, "status": "partial", "runs_done": 4,
                                             "runs_planned": 12, "setup": {"init": "assets/mini-roberta-mlm"}}})
    assert "| dynamic (RoBERTa) | 3 | 4.500 ± 0.010 | 25.0 ± 0.2% | – | – | 80.0 ± 1.0% |" in table
    assert "| static, one fixed mask | 1 | 4.700 | – | 3.900 | 4.400 | – |" in table
    assert "same warm start (assets/mini-roberta-mlm)" in table
    assert "| dynamic | dynamic (RoBERTa) | 78.7 | 84.0 | 92.9 |" in table and "4 of 12 runs" in table
    # the checkpoint's own description wins over its folder, which may hold other weights since
    setup = {"init": "assets/mini-roberta-mlm", "init_checkpoint": "phase 2 of the shipped pretraining: git 0f36588"}
    table = ablation_markdown({"results": {"arms": arms, "paper": paper, "setup": setup}})
    assert "same warm start (phase 2 of the shipped pretraining)" in table
    assert "Every arm has the same warm start" in table and "skips pretraining" not in table
    # train.ablation's no-pretraining baseline ("masking": null) has no warm start: the note said "Every arm has
    # the same warm start" right under its row
    baseline = {"random-init": {"label": "random init (no pretraining)", "masking": None, "n": 3,
                                "mean": {"sst2_accuracy": 0.754}, "std": {"sst2_accuracy": 0.008}}}
    table = ablation_markdown({"results": {"arms": {**arms, **baseline}, "paper": paper, "setup": setup}})
    assert "| random init (no pretraining) | 3 | – | – | – | – | 75.4 ± 0.8% |" in table
    assert "Every arm has" not in table and "Every pretraining arm has the same warm start (phase 2" in table
    assert ("The “random init (no pretraining)” row skips pretraining: the same SST-2 fine-tuning, with the same "
            "seeds, of an encoder of the same shape from random weights") in table


def test_long_examples_show_a_short_label():
    from demo.examples import LONG_REVIEW, SENTIMENT_EXAMPLES, example_label
    assert LONG_REVIEW in SENTIMENT_EXAMPLES
    label = example_label(LONG_REVIEW)
    assert len(label) < 100 and label.startswith(f"A long review ({len(LONG_REVIEW.split())} words)")
    assert LONG_REVIEW.startswith(label.split("“")[1].rstrip(" …”"))
    assert all(example_label(t) == t for t in SENTIMENT_EXAMPLES if t != LONG_REVIEW)


# ----------------------------------------------------------------------------- one token's bars as text
def test_the_bars_come_with_their_text_version(handlers, models):
    """“Where one token attends” has a text version like the heatmaps': every weight of the token's row, the
    largest first, returned next to the bars by every event that draws them, and for the same layer, head and
    token as the bars."""
    text = "The cat sees the house."
    tokens = tokens_view.tokenize(models.mlm.tokenizer, text, models.mlm.config.max_length)
    bars, bars_text = handlers.attention_token(text, 2, 3, 2)
    title = bars.axes[0].get_title()
    assert title.startswith("Where token 2") and html.escape(title) in bars_text
    assert "<details" in bars_text and "<details open" not in bars_text and "The figure as text" in bars_text
    row = explain.head_matrix(handlers.attention_data("mlm", text)[1], 2, 3)[0][2]
    weights = re.findall(r'<td class="hr-num">(\d+)</td><th scope="row">.*?</th><td class="hr-num">(.*?)</td>',
                         bars_text)
    order = np.argsort(-row, kind="stable")
    assert len(weights) == len(tokens.ids) and [int(j) for j, _ in weights] == list(order)  # every token
    assert [w for _, w in weights] == [format_probability(row[j]) for j in order]
    # the same text from the token sub-tab, a layer or head change and the whole tab, for the same view
    assert handlers.attention_view(text, 2, 3, 2, "mlm", "token")[1] == bars_text
    assert handlers.attention_layer(text, 2, 3, 2)[-1] == bars_text
    assert handlers.attention_head(text, 2, 3, 2)[-1] == bars_text
    whole = handlers.attention(text, 2, 3)
    default = explain.default_token(tokens)
    assert f"Where token {default} " in whole[-1] and whole[3].axes[0].get_title() in html.unescape(whole[-1])
    # another layer or head: another row, said in the caption
    assert "layer 1, head 3" in handlers.attention_layer(text, 1, 3, 2)[-1]
    assert "layer 2, average" in handlers.attention_head(text, 2, "average", 2)[-1]
    # a view that leaves the bars undrawn leaves their text undrawn too (the UI keeps both as they were)
    assert handlers.attention_layer(text, 1, 3, 2, "mlm", "grid")[-1] is None
    assert handlers.attention(text, 2, 3, "mlm", "heatmap")[-1] is None
    bars, bars_text = V.keep_results(handlers.attention_view, 2)(text, 2, 3, 2, "mlm", "token")[:2]
    assert isinstance(bars, Figure) and "Where token 2" in bars_text


def test_the_words_box_is_labelled_by_the_served_classifiers_labels():
    """The Sentiment tab's words box said "towards positive (green) or negative (pink)" for any classifier: one of
    topics (world, sports, ...) or of three labels is labelled by its own (`explain.polarity`), SST-2's as before."""
    from types import SimpleNamespace

    def config(*labels):
        return SimpleNamespace(id2label=dict(enumerate(labels)))

    shipped = "Which words push towards positive (green) or negative (pink)"
    assert explain.words_label(config("negative", "positive")) == shipped == explain.words_label(None)
    assert explain.words_label(config("negative", "positive"), "negative") == shipped  # whatever the answer
    # more than two labels: towards the answer (`explain.push_target`), named once there is one
    topics = config("world", "sports", "business", "sci/tech")
    assert explain.words_label(topics) == "Which words push towards the answer (green) or the other labels (pink)"
    assert explain.words_label(topics, "business") == (
        "Which words push towards the answer, business (green), or the other labels (pink)")
    assert explain.words_label(config("negative", "neutral", "positive"), "neutral") == (
        "Which words push towards the answer, neutral (green), or the other labels (pink)")
    assert explain.words_label(config("spam", "ham")) == "Which words push towards ham (green) or spam (pink)"


# the Sentiment tab's hint as it was for every classifier, and still is for SST-2's labels
FINE_TUNED = ("This classifier is a pretrained encoder **fine-tuned** on labelled examples: a small new head (two "
              "layers) reads the last layer's vector at `<s>` and gives one score per label (its *logits*), which a "
              "softmax turns into the probabilities shown. ")
SST2_HINT = (FINE_TUNED + "**Try** the negation (“The acting was not bad at all.”) and the “but” example below. "
             "**Notice** which words push towards positive and which towards negative, and whether the answer follows "
             "the words that matter: **What if?** removes or negates the strongest one.")


def test_the_sentiment_tab_names_its_answer_and_hint_for_the_classifier_that_answers(handlers, topic_handlers,
                                                                                      three_label_handlers,
                                                                                      monkeypatch):
    """The tab called any classifier's answer "Sentiment" (a topic classifier's "sports" too, and so did the screen
    reader's announcement, which reads that name) and its hint spoke of positive, negative and negation. The page's
    answer (`classify_page`) names the answer box, the words box and the hint for the classifier that answered, the
    one chosen in the model box too; SST-2's labels keep the tab's sentiment wording."""
    text = "the old man was good and the cat likes music at night."

    def page(owner, model="shipped"):
        answer, words, explanation, hint, _ = owner.classify_page(text, model)
        assert answer["value"] == owner.classify(text, model)[0] and words["value"] == owner.classify(text, model)[1]
        return answer["label"], words["label"], hint

    assert page(handlers) == ("Sentiment", "Which words push towards positive (green) or negative (pink)", SST2_HINT)
    name, words, hint = page(topic_handlers)
    assert (name, words) == ("Answer", "Which words push towards the answer, sports (green), or the other labels "
                                       "(pink)")
    assert hint.startswith(FINE_TUNED + "**Try** a text of your own: this classifier's labels are “world”, “sports”, "
                           "“business” and “sci/tech”")
    assert "which words push towards the answer and which towards the other labels" in hint
    assert "negat" not in hint and "positive" not in hint and hint.endswith("**What if?** removes the strongest one.")
    name, words, hint = page(three_label_handlers)  # a sentiment classifier of three labels: still sentiment
    assert name == "Sentiment" and "the negation" in hint
    assert "towards the answer and which towards the other labels" in hint
    # a classifier chosen in the model box is named as it answers, the served one again after it
    monkeypatch.setenv("APP_LOCAL_MODELS", "1")
    chooser = H.Handlers(handlers.models)
    assert page(chooser, topic_handlers.models.sentiment.source)[0] == "Answer"
    assert page(chooser)[0] == "Sentiment"


def test_the_sentiment_tab_is_named_for_the_classifier_that_answers(handlers, topic_handlers, three_label_handlers,
                                                                   monkeypatch):
    """The tab was named "Sentiment" whatever classifier answered in it: the page's answer (`classify_page`) names it
    "Classify" for a classifier whose labels name no sentiment (a topic classifier's), the one chosen in the model box
    too, and "Sentiment" for a sentiment classifier, SST-2's or one of three labels."""
    text = "the old man was good and the cat likes music at night."

    def tab(owner, model="shipped"):
        *_, named = owner.classify_page(text, model)
        assert set(named) == {"__type__", "label"}  # the tab's name alone: its other settings as laid out
        return named["label"]

    assert tab(handlers) == tab(three_label_handlers) == "Sentiment"
    assert tab(topic_handlers) == "Classify"
    monkeypatch.setenv("APP_LOCAL_MODELS", "1")
    chooser = H.Handlers(handlers.models)
    assert tab(chooser, topic_handlers.models.sentiment.source) == "Classify"
    assert tab(chooser) == "Sentiment"


def test_a_model_of_the_other_kind_is_sent_to_the_tab_as_the_page_names_it(handlers, topic_handlers, tiny_mlm_dir,
                                                                          tiny_clf_dir, monkeypatch):
    """A served topic classifier's tab opens as "Classify", but the refusals of a model of the wrong kind still said
    "Sentiment": a classifier in the Fill mask tab "loads in the Sentiment and Attention tabs", and an API call's
    (`_need`, which names no tab) "the Sentiment tab needs a text classifier". They name the tab as the page opens
    it (`Models.tab_name`, read once by the chooser); a served SST-2 classifier's tab is "Sentiment" as before."""
    monkeypatch.setenv("APP_LOCAL_MODELS", "1")

    def refusal(models, call) -> str:
        with pytest.raises(gr.Error) as refused:
            call(H.Handlers(models))  # a chooser of its own: no failure remembered from another app's
        return refused.value.message

    for models, tab in ((handlers.models, "Sentiment"), (topic_handlers.models, "Classify")):
        said = refusal(models, lambda owner: owner.fill_mask("Paris is the <mask>.", 3, "", str(tiny_clf_dir)))
        assert f"the Fill mask tab needs a masked language model (fill mask; RobertaForMaskedLM). It loads in the " \
               f"{tab} and Attention tabs." in said, said
        said = refusal(models, lambda owner: owner.classify("good", str(tiny_mlm_dir)))
        assert f"; the {tab} tab needs a text classifier" in said, said


def test_a_text_box_hands_an_api_value_on_as_sent(handlers):
    """The reviewer's case (an API review): candidate words sent as a list, ["France", "Germany"], were scored as
    the words "['France'" and "'Germany']", and a text sent as a list was run as its Python repr: gr.Textbox makes
    a string of any value before the handler sees it. The app's text box (demo.components.Textbox) hands the value
    on as sent, so the handler's "must be a string" message answers; a string, and None (a cleared box), reach
    the handler as they did."""
    from demo.components import Textbox
    box, gradios = Textbox(render=False), gr.Textbox(render=False)
    with _error("The candidate words must be a string, got list."):
        handlers.fill_mask("Paris is the capital of <mask>.", 3, box.preprocess(["France", "Germany"]))
    with _error("The text must be a string, got list."):
        handlers.classify(box.preprocess(["good"]))
    with _error("Word b must be a string, got list."):
        handlers.analogy("cat", box.preprocess(["dog"]), "house", 5, True)
    for value in ("a good film", "", None):
        assert box.preprocess(value) == gradios.preprocess(value)
    with _error("The text is empty"):
        handlers.classify(box.preprocess(None))
