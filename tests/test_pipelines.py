"""roberta.pipeline: fill-mask and sentiment outputs, targets, [MASK], bad inputs, truncation, batches."""
import json
import re
import warnings

import numpy as np
import pytest
import torch
from tokenizers import Tokenizer

import roberta
from roberta.pipelines import MAX_MASKS, TargetPieceWarning
from roberta.tokenizer import encode, encode_windows, for_model, window_stride

pytestmark = pytest.mark.usefixtures("single_thread")

KEYS = {"score", "token", "token_str", "sequence"}


@pytest.fixture(scope="module")
def fill(tiny_mlm_dir):
    return roberta.pipeline("fill-mask", model=tiny_mlm_dir, device="cpu")


@pytest.fixture(scope="module")
def sentiment(tiny_clf_dir):
    return roberta.pipeline("sentiment-analysis", model=tiny_clf_dir, device="cpu")


def assert_models_answer(model, tokenizer, text, result, mask_id=4):
    """`result` (one mask's top-k) is the model's own answer at the mask of `text`: the top-k of a full forward
    pass's probabilities at the mask's position (found here, not by the pipeline), token by token."""
    ids = tokenizer.encode(text).ids
    assert ids.count(mask_id) == 1 and ids.index(mask_id) > 0  # one mask, not <s>
    with torch.no_grad():
        input_ids = torch.tensor([ids], device=next(model.parameters()).device)  # where a pipeline put it
        probs = model(input_ids).logits[0, ids.index(mask_id)].softmax(-1).cpu()  # (V,)
    top = probs.topk(len(result))
    assert [r["token"] for r in result] == top.indices.tolist()
    assert [r["score"] for r in result] == pytest.approx(top.values.tolist(), abs=1e-6)


def long_text(n_words=200):
    return " ".join(["the cat likes the sea"] * (n_words // 5))


# ----- encode -----
def test_encode_pads_and_truncates(tokenizer):
    texts = ["The cat likes the sea.", "A dog.", long_text()]
    input_ids, attention_mask, truncated = encode(tokenizer, texts, max_length=16)
    assert input_ids.dtype == torch.long and input_ids.shape == attention_mask.shape == (3, 16)
    assert truncated == [False, False, True]
    lengths = attention_mask.sum(1).tolist()
    for row, n in zip(input_ids, lengths):
        assert row[0] == 0 and row[n - 1] == 2  # <s> ... </s>, also after truncation
        assert torch.all(row[n:] == 1)  # <pad>
    assert input_ids[0, :lengths[0]].tolist() == tokenizer.encode(texts[0]).ids
    assert input_ids[2, :15].tolist() == tokenizer.encode(texts[2]).ids[:15]
    one = encode(tokenizer, "A dog.", 16)
    assert one[0].tolist() == [tokenizer.encode("A dog.").ids] and one[2] == [False]


def test_encode_ignores_the_tokenizers_own_padding_and_truncation(tokenizer):
    configured = Tokenizer.from_str(tokenizer.to_str())
    configured.enable_truncation(8)
    configured.enable_padding(length=40)
    expected = encode(tokenizer, ["A dog.", long_text()], 20)
    got = encode(configured, ["A dog.", long_text()], 20)
    assert torch.equal(got[0], expected[0]) and got[2] == expected[2] == [False, True]
    assert configured.truncation is not None and configured.padding is not None  # left as the caller set them


def test_encode_uses_one_configured_copy_per_tokenizer_and_length(tokenizer):
    copy = for_model(tokenizer, 16)
    assert copy is for_model(tokenizer, 16) and copy is not tokenizer and for_model(tokenizer, 20) is not copy
    assert copy.truncation["max_length"] == 16 and copy.padding["pad_id"] == tokenizer.token_to_id("<pad>")
    assert tokenizer.truncation is None and tokenizer.padding is None
    ids, mask, truncated = encode(tokenizer, [], 16)
    assert ids.shape == mask.shape == (0, 0) and truncated == []


# ----- fill-mask -----
def test_one_mask_output_shape(fill):
    result = fill("The cat likes <mask>.")
    assert isinstance(result, list) and len(result) == 5
    assert all(set(r) == KEYS for r in result)
    scores = [r["score"] for r in result]
    assert scores == sorted(scores, reverse=True) and all(0 < s < 1 for s in scores)
    assert all(isinstance(r["token"], int) and isinstance(r["token_str"], str) for r in result)
    assert all("<s>" not in r["sequence"] and "<mask>" not in r["sequence"] for r in result)


def test_scores_are_the_model_probabilities(fill, tokenizer):
    text = "A dog finds <mask> every day."
    result = fill(text, top_k=3)
    ids = torch.tensor([tokenizer.encode(text).ids])
    with torch.no_grad():
        probs = fill.model(ids).logits[0, ids[0].tolist().index(4)].softmax(-1)  # (V,)
    top = probs.topk(3)
    assert [r["token"] for r in result] == top.indices.tolist()
    assert [r["score"] for r in result] == pytest.approx(top.values.tolist(), abs=1e-6)


def test_a_batch_is_scored_at_each_texts_own_masks(fill):
    """The pipeline projects only the masks' hidden states onto the vocabulary: in a padded batch with one and
    two masks, each mask's scores are the full forward pass's at that text's position."""
    texts = ["<mask> sees the <mask> by the long river today.", "The cat likes <mask>."]
    results = fill(texts, top_k=4)
    input_ids, attention_mask, _ = encode(fill.tokenizer, texts, 32)
    with torch.no_grad():
        logits = fill.model(input_ids, attention_mask).logits  # (B, T, V)
    rows = [*results[0], results[1]]  # the first text's two masks, then the second's one
    positions = [(i, p) for i in range(2) for p in (input_ids[i] == 4).nonzero().squeeze(-1).tolist()]
    assert len(rows) == len(positions) == 3
    for row, (i, p) in zip(rows, positions):
        top = logits[i, p].softmax(-1).topk(4)
        assert [r["token"] for r in row] == top.indices.tolist()
        assert [r["score"] for r in row] == pytest.approx(top.values.tolist(), abs=1e-6)


def test_several_masks_give_one_list_per_mask(fill):
    result = fill("<mask> sees the <mask> again <mask>.", top_k=2)
    assert len(result) == 3 and all(len(row) == 2 for row in result)
    assert all(set(r) == KEYS for row in result for r in row)
    # As transformers: each sequence fills one mask and keeps the others (and <s> </s>) visible.
    for row in result:
        assert all(r["sequence"].count("<mask>") == 2 and r["sequence"].startswith("<s>") for r in row)
    assert len(fill("<mask> " * MAX_MASKS + ".", top_k=1)) == MAX_MASKS


@pytest.mark.parametrize("top_k", [1, 3, 12])
def test_top_k(fill, top_k):
    assert len(fill("The cat likes <mask>.", top_k=top_k)) == top_k


def test_targets_restrict_and_keep_full_vocabulary_scores(fill, tokenizer):
    text = "The cat likes <mask>."
    everything = {r["token"]: r["score"] for r in fill(text, top_k=tokenizer.get_vocab_size())}
    the = tokenizer.token_to_id("Ġthe")
    assert the is not None
    # As transformers: a vocabulary entry is used as is ("Ġthe"); anything else gives its first token
    # (" the" -> Ġthe; "the", not an entry of this small vocabulary, -> "t").
    assert tokenizer.token_to_id("the") is None
    t = tokenizer.encode("the", add_special_tokens=False).ids[0]
    with pytest.warns(TargetPieceWarning):  # "the" is several pieces
        result = fill(text, targets=[" the", "the", "Ġthe"])
    assert {r["token"] for r in result} == {the, t}
    assert len(result) == 2  # top_k is capped at the number of distinct targets
    for r in result:
        assert r["score"] == pytest.approx(everything[r["token"]], abs=1e-7)  # not renormalised
    single = fill(text, targets=" the")
    assert single[0]["token_str"] == " the" and single[0]["sequence"] == "The cat likes the."
    # Unknown words fall back to their first token; nothing usable is an error.
    with pytest.warns(TargetPieceWarning):
        assert fill(text, targets=["zzzz"])[0]["token"] == tokenizer.encode("zzzz", add_special_tokens=False).ids[0]
    for bad in ([""], [], 5, [" the", 3]):
        with pytest.raises(ValueError, match="targets"):
            fill(text, targets=bad)


def test_a_target_of_several_tokens_is_warned_about_by_its_first_piece(fill, tokenizer):
    """It was scored by its first piece without a word (transformers logs a warning); one token is not warned of."""
    pieces = tokenizer.encode(" zzqqxx", add_special_tokens=False).ids
    first = tokenizer.decode(pieces[:1])
    assert len(pieces) > 1
    with pytest.warns(TargetPieceWarning, match=f"the target ' zzqqxx' is not one token of the vocabulary: it is "
                                                f"scored by its first piece '{first}' only") as caught:
        assert fill("The cat likes <mask>.", targets=[" zzqqxx", " the"])
    assert len(caught) == 1 and caught[0].filename == __file__  # pointed at the caller's line
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fill("The cat likes <mask>.", targets=[" the", "Ġthe"])


def test_bracket_mask_equals_mask(fill):
    for a, b in [("The cat likes [MASK].", "The cat likes <mask>."),
                 ("[MASK] sees the sea [MASK].", "<mask> sees the sea <mask>."),
                 ("The cat likes[MASK] today", "The cat likes<mask> today")]:
        assert fill(a, top_k=3) == fill(b, top_k=3)


def test_batch_of_texts(fill):
    texts = ["The cat likes <mask>.", "<mask> sees the <mask>."]
    batched = fill(texts, top_k=2)
    assert len(batched) == 2
    for got, text in zip(batched, texts):
        alone = fill(text, top_k=2)
        flat_got = got if isinstance(got[0], dict) else sum(got, [])
        flat_alone = alone if isinstance(alone[0], dict) else sum(alone, [])
        assert [r["token"] for r in flat_got] == [r["token"] for r in flat_alone]
        assert [r["score"] for r in flat_got] == pytest.approx([r["score"] for r in flat_alone], abs=1e-5)


@pytest.mark.parametrize("text, kwargs, message", [
    ("", {}, "empty"),
    ("   \n\t", {}, "empty"),
    ("The cat likes the sea.", {}, "no mask"),
    (" ".join(["<mask>"] * (MAX_MASKS + 1)), {}, f"at most {MAX_MASKS}"),
    ("The cat likes <mask>.", {"top_k": 0}, "top_k"),
    ("The cat likes <mask>.", {"top_k": -2}, "top_k"),
    ("The cat likes <mask>.", {"top_k": 1.5}, "top_k"),
    (None, {}, "text"),
    ([], {}, "text"),
    (["The cat likes <mask>.", ""], {}, "^text 2 of 2 is empty"),  # which one, in a list
    (["The cat likes <mask>.", 3], {}, r"got int \(text 2 of 2\)"),
])
def test_fill_mask_bad_input(fill, text, kwargs, message):
    with pytest.raises(ValueError, match=message):
        fill(text, **kwargs)


def test_fill_mask_truncation_is_flagged(fill, tiny_config):
    result = fill("The cat likes <mask>. " + long_text())
    assert all(r["truncated"] is True for r in result)
    assert "truncated" not in fill("The cat likes <mask>.")[0]
    with pytest.raises(ValueError, match=f"beyond the first {tiny_config.max_length} tokens"):
        fill(long_text() + " <mask>.")


@pytest.mark.parametrize("text", [
    "Emoji 😀👍🏽 <mask> 👨‍👩‍👧", "中文 <mask> 日本語", "עברית <mask> مرحبا", "\u202e<mask>\u202c",
    "ctrl \x00\x07\x1b <mask>\r\n", "broken \ud800 surrogate <mask>", "<mask>",
])
def test_fill_mask_never_crashes_on_odd_characters(fill, text):
    result = fill(text, top_k=2)
    assert len(result) == 2 and all(set(r) == KEYS for r in result)
    # read as the pipeline reads it (a lone surrogate as "?"): the scores are the model's at the mask
    assert_models_answer(fill.model, fill.tokenizer, text.encode("utf-8", errors="replace").decode("utf-8"), result)


def test_logit_lens_reads_every_layer_and_ends_in_the_models_own_prediction(fill, tiny_config):
    """The logit lens: (L + 1, M, V) probabilities, the last row exactly what the pipeline scores; the first row,
    before any attention, depends on the mask's position only."""
    text = "The <mask> sat on the [MASK]."
    probs = fill.logit_lens(text)
    assert probs.shape == (tiny_config.num_hidden_layers + 1, 2, tiny_config.vocab_size)
    torch.testing.assert_close(probs.sum(-1), torch.ones(probs.shape[:2]))
    for m, row in enumerate(fill(text, top_k=3)):
        top = probs[-1, m].topk(3)
        assert [r["token"] for r in row] == top.indices.tolist()
        assert [r["score"] for r in row] == pytest.approx(top.values.tolist(), abs=1e-6)
    other = fill.logit_lens("The <mask> ran to the house every day.")  # the first mask at the same place
    torch.testing.assert_close(other[0, 0], probs[0, 0])
    assert not torch.allclose(other[-1, 0], probs[-1, 0])


@pytest.mark.parametrize("text, message", [("The cat likes the sea.", "no mask"), ("", "empty"),
                                           (" ".join(["<mask>"] * (MAX_MASKS + 1)), f"at most {MAX_MASKS}"),
                                           (["a <mask>"], "one text"), (long_text() + " <mask>.", "beyond the first")])
def test_logit_lens_bad_input(fill, text, message):
    with pytest.raises(ValueError, match=message):
        fill.logit_lens(text)


# ----- sentiment -----
def test_sentiment_returns_every_label_best_first(sentiment):
    result = sentiment("The film is good.")
    assert {r["label"] for r in result} == {"negative", "positive"}
    assert all(set(r) == {"label", "score"} for r in result)
    assert result[0]["score"] >= result[1]["score"]
    assert sum(r["score"] for r in result) == pytest.approx(1.0, abs=1e-6)
    assert sentiment("The film is good.", top_k=1) == result[:1]


def test_sentiment_scores_are_softmax_of_logits(sentiment, tokenizer):
    ids = torch.tensor([tokenizer.encode("the sea").ids])
    with torch.no_grad():
        probs = sentiment.model(ids).logits[0].softmax(-1).tolist()
    got = {r["label"]: r["score"] for r in sentiment("the sea")}
    assert [got["negative"], got["positive"]] == pytest.approx(probs, abs=1e-6)


def test_sentiment_scores_are_divided_by_the_calibration_temperature(sentiment, tokenizer, monkeypatch):
    ids = torch.tensor([tokenizer.encode("the sea").ids])
    with torch.no_grad():
        logits = sentiment.model(ids).logits[0]
    for temperature in (0.05, 4.0):  # sharper, flatter
        monkeypatch.setattr(sentiment.model.config, "calibration_temperature", temperature)
        got = {r["label"]: r["score"] for r in sentiment("the sea")}
        expected = (logits / temperature).softmax(-1)
        assert (expected - logits.softmax(-1)).abs().max() > 1e-3  # the temperature shows in the scores
        assert [got["negative"], got["positive"]] == pytest.approx(expected.tolist(), abs=1e-6)


@pytest.mark.parametrize("problem, num_labels, expected", [
    (None, 2, lambda z: z.softmax(-1)), ("multi_label_classification", 2, torch.sigmoid), (None, 1, torch.sigmoid),
    ("regression", 1, None)])  # None: the raw outputs, no temperature
def test_scores_of_is_what_the_pipeline_shows_for_each_problem_type(problem, num_labels, expected, tokenizer):
    """`roberta.pipelines.scores_of(logits, config, temperature)`: the one place where a classifier's logits become
    the scores shown (`score_kind`), which the pipeline wraps and train.evaluate calls (train.calibrate's softmax of
    two logits gave a multi-label model [0.731, 0.269] where its pipeline showed a sigmoid per label,
    [0.881, 0.731])."""
    from roberta.pipelines import scores_of

    labels = {0: "negative", 1: "positive"} if num_labels == 2 else {0: "score"}
    config = roberta.RobertaConfig.from_preset("tiny", tokenizer=tokenizer, id2label=labels, problem_type=problem,
                                               calibration_temperature=2.0)
    logits = torch.tensor([[2.0, 1.0]])[:, :num_labels]  # (1, L)
    want = logits if expected is None else expected(logits / 2.0)
    assert scores_of(logits, config, 2.0)[0].tolist() == pytest.approx(want[0].tolist())
    if expected is not None:
        assert scores_of(logits, config)[0].tolist() == pytest.approx(expected(logits)[0].tolist())  # T = 1: raw
    torch.manual_seed(0)
    model = roberta.RobertaForSequenceClassification(config)
    pipe = roberta.pipeline("text-classification", model=model, tokenizer=tokenizer, device="cpu")
    with torch.no_grad():
        shown = scores_of(model(torch.tensor([tokenizer.encode("the sea").ids])).logits, config, 2.0)[0]  # (L,)
    got = {r["label"]: r["score"] for r in pipe("the sea")}
    assert [got[labels[i]] for i in range(num_labels)] == pytest.approx(shown.tolist(), abs=1e-6)


@pytest.mark.parametrize("temperature", [0.0, -1.0, float("nan"), float("inf")])
def test_a_temperature_that_is_not_positive_is_refused_not_applied(sentiment, monkeypatch, temperature):
    """config.json refuses it when read (RobertaConfig); a config changed afterwards, as a hand-made model's, is
    refused when the scores are computed (0 divided the logits into nan or inf, a negative one reversed them)."""
    monkeypatch.setattr(sentiment.model.config, "calibration_temperature", temperature)
    with pytest.raises(ValueError, match=re.escape(f"the model's calibration_temperature must be a positive number, "
                                                   f"got {temperature!r}")):
        sentiment("the sea")


def test_sentiment_batch(sentiment):
    texts = ["The film is good.", "a dog", "The old man hates the house at night."]
    batched = sentiment(texts)
    assert len(batched) == 3
    for got, text in zip(batched, texts):
        alone = sentiment(text)
        assert [r["label"] for r in got] == [r["label"] for r in alone]
        assert [r["score"] for r in got] == pytest.approx([r["score"] for r in alone], abs=1e-5)


def test_sentiment_truncation_and_bad_input(sentiment):
    assert all(r["truncated"] is True for r in sentiment(long_text(), long_text="first"))
    mixed = sentiment(["short", long_text()], long_text="first")
    assert "truncated" not in mixed[0][0] and mixed[1][0]["truncated"] is True
    with pytest.raises(ValueError, match="long_text"):
        sentiment("fine", long_text="all")
    for bad, message in [("", "^the text is empty"), ("  ", "empty"), ([], "text"), (3, "text"),
                         (["fine", " ", "good"], "^text 2 of 3 is empty")]:
        with pytest.raises(ValueError, match=message):
            sentiment(bad)
    with pytest.raises(ValueError, match="top_k"):
        sentiment("fine", top_k=0)
    assert sentiment("😀 \x00 中文")[0]["label"] in {"negative", "positive"}


def test_encode_windows_cover_every_token_with_overlap(tokenizer):
    """Whatever the `tokenizers` version: 0.23.2's own `overflowing` windows (truncation with a stride) gave one
    short window after the first and lost the rest, so `encode_windows` cuts the windows itself."""
    texts = ["A dog.", long_text(60), long_text()]
    max_length, stride = 16, 4
    ids, mask, owner = encode_windows(tokenizer, texts, max_length, stride)  # (W, T), (W,)
    assert ids.shape == mask.shape and ids.shape[1] <= max_length and owner.tolist() == sorted(owner.tolist())
    first, _, _ = encode(tokenizer, texts, max_length)
    pad = tokenizer.token_to_id("<pad>")
    for i, text in enumerate(texts):
        rows = [ids[w][mask[w].bool()].tolist() for w in torch.nonzero(owner == i).flatten().tolist()]
        assert rows[0] == [t for t in first[i].tolist() if t != pad]  # the first window is what encode reads
        assert all(r[0] == 0 and r[-1] == 2 and len(r) <= max_length for r in rows)  # <s> ... </s> each
        inner = [r[1:-1] for r in rows]
        for before, after in zip(inner, inner[1:]):
            assert before[-stride:] == after[:stride]  # consecutive windows share `stride` tokens
        whole = inner[0] + [t for r in inner[1:] for t in r[stride:]]
        assert whole == tokenizer.encode(text, add_special_tokens=False).ids  # nothing lost, nothing added
    assert torch.bincount(owner).tolist()[0] == 1 and torch.bincount(owner).tolist()[2] > 2
    assert window_stride(128) == 32 and window_stride(16) == 4 and window_stride(3) == 0
    # a window of 16 tokens holds 14 of the text: it must move on by at least one
    assert encode_windows(tokenizer, texts, max_length, 13)[0].shape[1] <= max_length
    for stride in (14, -1, 2.0, True):
        with pytest.raises(ValueError, match="stride must be a whole number from 0 to 13"):
            encode_windows(tokenizer, texts, max_length, stride)


@pytest.mark.timeout(10)  # a stride that never moves on grew the windows without end
def test_a_window_must_hold_more_of_the_text_than_the_stride_whatever_the_post_processor_adds(tokenizer):
    """The stride's own check counts <s> and </s>; a tokenizer whose post-processor adds more (here
    `<s> <s> $A </s> </s>`) leaves less of a window for the text. A stride as large as that room would never move
    on (the windows grew without end): it is refused; one less moves on by one token a window, losing none."""
    from tokenizers import Tokenizer
    from tokenizers.processors import TemplateProcessing

    four = Tokenizer.from_str(tokenizer.to_str())
    bos, eos = four.token_to_id("<s>"), four.token_to_id("</s>")
    four.post_processor = TemplateProcessing(single="<s> <s> $A </s> </s>", special_tokens=[("<s>", bos),
                                                                                            ("</s>", eos)])
    text = "one two three four five six seven eight nine ten"
    with pytest.raises(ValueError, match="^a window of 8 tokens holds 4 of the text, which must be more than the "
                                         "stride, 4$"):
        encode_windows(four, text, 8, stride=4)
    ids, mask, _ = encode_windows(four, text, 8, stride=3)  # (W, T)
    inner = [row[2:-2] for row in ids.tolist()]
    assert mask.all() and all(row[:2] == [bos, bos] and row[-2:] == [eos, eos] for row in ids.tolist())
    assert inner[0] + [row[-1] for row in inner[1:]] == four.encode(text, add_special_tokens=False).ids


def test_an_empty_text_is_the_one_window_encode_gives(tokenizer):
    """`encode_windows` reads an empty text as `encode` does, `<s></s>` attended to, beside a text that is not
    empty (the pipelines refuse an empty text before; `train.evaluate` and fine-tuning over windows do not)."""
    ids, mask, owner = encode_windows(tokenizer, ["", "x"], 16)
    expected_ids, expected_mask, _ = encode(tokenizer, [""], 16)
    assert owner.tolist() == [0, 1]
    assert ids[0][mask[0].bool()].tolist() == expected_ids[0][expected_mask[0].bool()].tolist() == [
        tokenizer.token_to_id("<s>"), tokenizer.token_to_id("</s>")]


def test_encode_windows_do_not_rest_on_the_tokenizers_overflowing_windows(tokenizer, monkeypatch):
    """tokenizers 0.23.2 (the lent H200's) gave one short overflowing window after the first and lost the rest of a
    long text; here a `for_model` copy whose encodings carry no overflowing windows at all stands in for it, and the
    windows still cover every token (they were the first window alone)."""
    from types import SimpleNamespace

    import roberta.tokenizer as tokenization

    real = tokenization.for_model

    class NoOverflow:
        def __init__(self, copy):
            self.copy = copy

        def encode_batch(self, texts, *args, **kwargs):
            return [SimpleNamespace(ids=e.ids, attention_mask=e.attention_mask, sequence_ids=e.sequence_ids,
                                    overflowing=[]) for e in self.copy.encode_batch(texts, *args, **kwargs)]

    monkeypatch.setattr(tokenization, "for_model", lambda tok, *args, **kwargs: NoOverflow(real(tok, *args, **kwargs)))
    text, stride = long_text(), 4
    ids, mask, _ = tokenization.encode_windows(tokenizer, [text], 16, stride)  # (W, T)
    inner = [ids[w][mask[w].bool()].tolist()[1:-1] for w in range(len(ids))]
    assert len(inner) > 2
    assert inner[0] + [t for r in inner[1:] for t in r[stride:]] == tokenizer.encode(text, add_special_tokens=False).ids


def test_encode_follows_a_tokenizer_changed_after_its_first_use(tokenizer):
    """`encode` keeps a configured copy of the tokenizer per length; a normalizer, pre-tokenizer or
    post-processor set on the tokenizer afterwards is read, as tokens added to it are."""
    from tokenizers import Tokenizer, normalizers

    changed = Tokenizer.from_str(tokenizer.to_str())
    before = encode(changed, ["Hello World"], 20)[0]
    changed.normalizer = normalizers.Lowercase()
    after = encode(changed, ["Hello World"], 20)[0]
    assert not torch.equal(before, after)
    assert after[0].tolist() == changed.encode("Hello World").ids


def test_sentiment_reads_a_long_text_in_windows(tiny_clf_dir, tokenizer, sentences, monkeypatch):
    """A long text's answer is the softmax of its windows' mean logits. The tiny random classifier gives every
    window the same logits (to 1e-4), so here each window's logits are shifted by its first token: the mean
    then differs from the first window's, the last one's and their max by far more than the tolerance."""
    sentiment = roberta.pipeline("sentiment-analysis", model=tiny_clf_dir, device="cpu")
    forward = sentiment.model.forward

    def by_first_token(input_ids, attention_mask=None, **kwargs):
        out = forward(input_ids, attention_mask, **kwargs)
        shift = (input_ids[:, 1:2] % 7 - 3).float() * 0.3  # (W, 1): -0.9 to 0.9, by the window's first token
        out.logits = out.logits + shift * torch.tensor([1.0, -1.0])  # (W, 2)
        return out

    monkeypatch.setattr(sentiment.model, "forward", by_first_token)
    text = " ".join(sentences[:60])
    ids, mask, owner = encode_windows(tokenizer, [text], sentiment.max_length)
    with torch.no_grad():
        logits = sentiment.model(ids, mask).logits  # (W, L), one row per window
    expected = logits.mean(0).softmax(-1)
    for other in (logits[0], logits[-1], logits.max(0).values):  # what a wrong reading would give
        assert (other.softmax(-1) - expected).abs().max() > 0.01
    got = sentiment(text)
    assert all(r["windows"] == len(ids) > 1 and "truncated" not in r for r in got)
    by_label = {r["label"]: r["score"] for r in got}
    assert [by_label["negative"], by_label["positive"]] == pytest.approx(expected.tolist(), abs=1e-5)
    batched = sentiment(["short", text])
    assert "windows" not in batched[0][0] and batched[1][0]["windows"] == len(ids)
    assert [r["score"] for r in batched[1]] == pytest.approx([r["score"] for r in got], abs=1e-5)


# ----- the factory -----
def test_pipeline_attributes_and_aliases(fill, tiny_clf_dir):
    assert isinstance(fill, roberta.FillMaskPipeline)
    assert isinstance(fill.model, roberta.RobertaForMaskedLM) and not fill.model.training
    assert fill.device == torch.device("cpu") and fill.tokenizer.token_to_id("<mask>") == 4
    clf = roberta.pipeline("text-classification", model=str(tiny_clf_dir))
    assert isinstance(clf, roberta.TextClassificationPipeline)
    assert clf.device.type == ("cuda" if torch.cuda.is_available() else "cpu")


def test_pipeline_with_model_object(tiny_mlm_dir, tokenizer, fill):
    model = roberta.RobertaForMaskedLM.from_pretrained(tiny_mlm_dir).train()
    p = roberta.pipeline("fill-mask", model=model, tokenizer=tokenizer)
    assert not p.model.training and p.model is model
    got, want = p("The cat likes <mask>."), fill("The cat likes <mask>.")  # p on CUDA where there is one
    assert [{**r, "score": 0} for r in got] == [{**r, "score": 0} for r in want]
    assert [r["score"] for r in got] == pytest.approx([r["score"] for r in want], abs=1e-6)
    p2 = roberta.pipeline("fill-mask", model=model, tokenizer=tiny_mlm_dir / "tokenizer.json")
    assert p2.tokenizer.encode("a dog").ids == tokenizer.encode("a dog").ids


def test_pipeline_bad_arguments(tiny_mlm_dir, tiny_clf_dir, tokenizer):
    with pytest.raises(ValueError, match="unknown task"):
        roberta.pipeline("translation", model=tiny_mlm_dir)
    model = roberta.RobertaForMaskedLM.from_pretrained(tiny_mlm_dir)
    with pytest.raises(ValueError, match="tokenizer"):
        roberta.pipeline("fill-mask", model=model)
    with pytest.raises(ValueError, match="RobertaForSequenceClassification"):
        roberta.pipeline("sentiment-analysis", model=model, tokenizer=tokenizer)
    # named from config.json
    with pytest.raises(ValueError, match="is a classifier .*pipeline needs a masked-LM model"):
        roberta.pipeline("fill-mask", model=tiny_clf_dir)
    for wrong in (None, 5):  # None was "pass tokenizer= together with a model object", a model object it is not
        with pytest.raises(TypeError, match=f"model must be a model folder, a Hub repo id or a model object, got "
                                            f"{type(wrong).__name__}"):
            roberta.pipeline("fill-mask", model=wrong, tokenizer=tokenizer)


def _rows_per_forward(pipe):
    """The batch size of every encoder forward the pipeline makes (a list, filled as it runs)."""
    rows = []
    pipe.model.roberta.register_forward_hook(lambda module, args, out: rows.append(len(args[0])))
    return rows


def test_a_list_of_texts_runs_batch_size_texts_at_a_time(tiny_mlm_dir, tiny_clf_dir, fill, sentiment):
    """A long list is never one forward pass (400 texts took 570 MiB): `batch_size` texts (a classifier's
    windows) at a time, with the results of one pass."""
    texts = [f"The {word} likes <mask>." for word in ("cat", "dog", "man", "bird", "fish")]
    small = roberta.pipeline("fill-mask", model=tiny_mlm_dir, batch_size=2)
    rows = _rows_per_forward(small)
    got, expected = _flat(small(texts, top_k=3)), _flat(fill(texts, top_k=3))
    assert [token for token, _ in got] == [token for token, _ in expected]
    assert [score for _, score in got] == pytest.approx([score for _, score in expected], abs=1e-6)
    assert rows == [2, 2, 1]
    reviews = [t.replace("<mask>", "films") for t in texts] + [long_text()]
    small = roberta.pipeline("sentiment-analysis", model=tiny_clf_dir, batch_size=3)
    rows = _rows_per_forward(small)
    got, expected = small(reviews), sentiment(reviews)
    assert (got[-1][0]["windows"] > 1
            and [[r["label"] for r in g] for g in got] == [[r["label"] for r in e] for e in expected])
    assert [r["score"] for g in got for r in g] == pytest.approx([r["score"] for e in expected for r in e], abs=1e-6)
    assert max(rows) == 3 and sum(rows) == len(reviews) - 1 + got[-1][0]["windows"]
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="batch_size must be a whole number >= 1"):
            roberta.pipeline("fill-mask", model=tiny_mlm_dir, batch_size=bad)


def test_numpy_integers_count_as_whole_numbers(tiny_mlm_dir, fill, sentiment):
    """top_k and batch_size refused np.int64(2) ("must be a whole number >= 1, got np.int64(2)")."""
    text = "The cat likes <mask>."
    assert fill(text, top_k=np.int64(2)) == fill(text, top_k=2)
    assert sentiment("fine", top_k=np.int64(1)) == sentiment("fine", top_k=1)
    assert roberta.pipeline("fill-mask", model=tiny_mlm_dir, batch_size=np.int32(3)).batch_size == 3
    for bad in (np.int64(0), True, np.float64(2.0)):
        with pytest.raises(ValueError, match="top_k must be a whole number >= 1"):
            fill(text, top_k=bad)


def test_the_encoders_take_numpy_integers_as_their_lengths_and_stride(tokenizer, tmp_path):
    """encode_windows(..., max_length=np.int64(16)) was "stride must be a whole number from 0 to 13, got
    np.int64(4)": a stride the caller never gave, from the unchecked length; a numpy stride was refused too."""
    texts = ["A dog.", long_text(60)]
    windows = encode_windows(tokenizer, texts, 16)  # (W, T) ids, (W, T) mask, (W,) owner
    for got in (encode_windows(tokenizer, texts, np.int64(16)), encode_windows(tokenizer, texts, 16, np.int64(4)),
                encode_windows(tokenizer, texts, torch.tensor(16), torch.tensor(4))):
        assert all(torch.equal(a, b) for a, b in zip(got, windows))
    ids, mask, truncated = encode(tokenizer, texts, np.int32(16))  # (B, T)
    assert ids.shape == (2, 16) and truncated == [False, True]
    roberta.save_tokenizer(tokenizer, tmp_path, np.int64(16))
    assert json.loads((tmp_path / "tokenizer_config.json").read_text())["model_max_length"] == 16
    for bad in (np.float64(4.0), np.int64(14), np.True_):
        with pytest.raises(ValueError, match=r"^stride must be a whole number from 0 to 13 .*got "):
            encode_windows(tokenizer, texts, np.int64(16), bad)


def _flat(results):
    """Fill-mask results as (token, score) pairs, for approximate comparison."""
    return [(r["token"], r["score"]) for result in results for r in result]


def test_device_spellings(tiny_mlm_dir):
    """-1 and N as transformers spells the CPU and CUDA device N; N without CUDA is an error, not the CPU."""
    assert roberta.pipeline("fill-mask", model=tiny_mlm_dir, device=-1).device == torch.device("cpu")
    assert roberta.pipeline("fill-mask", model=tiny_mlm_dir, device=torch.device("cpu")).device.type == "cpu"
    with pytest.raises(ValueError, match="device must be 'cpu', 'cuda', 'cuda:N', -1"):
        roberta.pipeline("fill-mask", model=tiny_mlm_dir, device="gpu")
    if not torch.cuda.is_available():  # 0 was read as "not given" and ran on the CPU without a word
        for device in (0, "cuda"):
            with pytest.raises(ValueError, match="this machine has no CUDA device"):
                roberta.pipeline("fill-mask", model=tiny_mlm_dir, device=device)


def test_a_device_other_than_the_cpu_or_cuda_is_refused_by_name(tiny_mlm_dir, monkeypatch):
    """device="meta" was accepted and failed at the first call inside torch; "mps" (where there is none) raised
    torch's RuntimeError. As map_location: only the CPU or a CUDA device this machine has."""
    for device in ("meta", "mps", "xpu", torch.device("meta")):
        with pytest.raises(ValueError, match=r"device must be 'cpu', 'cuda', 'cuda:N', -1 .*: this package runs on "
                                             r"the CPU or a CUDA device"):
            roberta.pipeline("fill-mask", model=tiny_mlm_dir, device=device)
    with pytest.raises(ValueError, match="got -2$"):  # named as given, not as the "cuda:-2" it was read as
        roberta.pipeline("fill-mask", model=tiny_mlm_dir, device=-2)
    # a CUDA device this machine does not have (one GPU: cuda:0 only)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    assert roberta.devices.parse_device("cuda:0", "device") == torch.device("cuda:0")
    for device in ("cuda:1", 3):
        with pytest.raises(ValueError, match=r"device 'cuda:\d': this machine has 1 CUDA device\(s\), cuda:0 to "
                                             r"cuda:0"):
            roberta.devices.parse_device(device, "device")


def test_a_tokenizer_object_without_robertas_special_tokens_is_refused(tiny_mlm_dir):
    """It was accepted, then failed at the first call with a TypeError from deep in the encoding."""
    model = roberta.RobertaForMaskedLM.from_pretrained(tiny_mlm_dir)
    bert_like = roberta.train_tokenizer(["a b c d e"] * 5, vocab_size=270, min_frequency=1, show_progress=False)
    bert_like = Tokenizer.from_str(bert_like.to_str().replace('"<mask>"', '"[MASK]"'))
    with pytest.raises(roberta.ModelLoadError, match=r"lacks RoBERTa's special tokens \['<mask>'\]"):
        roberta.pipeline("fill-mask", model=model, tokenizer=bert_like)


def test_a_tokenizer_is_refused_when_the_model_cannot_run_it_and_warned_about_when_it_may_not_be_its(
        tokenizer, tiny_config, tiny_mlm_dir, tmp_path):
    """A tokenizer smaller than the model's vocabulary loaded without a word and gave garbage (300 tokens for a model
    of 32,768: "Paris is the capital of <mask>." -> 't', 'r', 'f'). Extra rows are silent only as padding (the
    tokenizer's size rounded up to a multiple of 8, 64 or 128, as some Hub checkpoints have: roberta-base's 50,265
    tokens in 50,272 rows); other extra rows, and <s>/</s> ids the model never reads, load with a
    TokenizerFitWarning (a vocabulary size set by hand runs in transformers too). What the model cannot run is
    refused: more tokens than rows, and a <pad> id other than the config's."""
    import dataclasses

    def fill_mask(**config_fields):
        model = roberta.RobertaForMaskedLM(dataclasses.replace(tiny_config, **config_fields))
        return roberta.pipeline("fill-mask", model=model, tokenizer=tokenizer)("a <mask> b")

    tokens = tokenizer.get_vocab_size()
    padded = {-(-tokens // n) * n for n in (8, 64, 128)} - {tokens}
    assert padded  # (the fixture's size is no multiple of 128)
    for rows in (tokens, *padded):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert fill_mask(vocab_size=rows)
    for rows in (tokens + 1, max(padded) + 8, 32_768):
        assert rows not in padded
        with pytest.warns(roberta.TokenizerFitWarning, match=f"^the tokenizer has {tokens:,} tokens but the model "
                                                              f"{rows:,} embedding rows: the last {rows - tokens:,} "
                                                              "rows are no token's"):
            assert fill_mask(vocab_size=rows)
    for field, value in (("bos_token_id", 3), ("eos_token_id", 1)):
        with pytest.warns(roberta.TokenizerFitWarning, match=f"the model's config has {field} {value}: the "
                                                              "tokenizer's id is used"):
            assert fill_mask(**{field: value})
    for rows in (tokens - 1, 100):
        with pytest.raises(roberta.ModelLoadError, match=f"^the tokenizer has {tokens:,} tokens but the model only "
                                                         f"{rows:,}: they do not belong together; use the tokenizer"):
            fill_mask(vocab_size=rows)
    with pytest.raises(roberta.ModelLoadError, match="^the tokenizer gives <pad> the id 1, but the model's config has "
                                                     "pad_token_id 0"):
        fill_mask(pad_token_id=0)
    # a folder's own tokenizer.json is named by its file, in one warning (the pipeline's check of the tokenizer
    # repeated it, naming "the tokenizer")
    folder = tmp_path / "big"
    roberta.RobertaForMaskedLM(dataclasses.replace(tiny_config, vocab_size=32_768)).save_pretrained(folder)
    (folder / "tokenizer.json").write_bytes((tiny_mlm_dir / "tokenizer.json").read_bytes())
    with pytest.warns(roberta.TokenizerFitWarning) as caught:
        assert roberta.pipeline("fill-mask", model=folder)("a <mask> b")
    said = [str(w.message) for w in caught if issubclass(w.category, roberta.TokenizerFitWarning)]
    assert len(said) == 1 and said[0].startswith(f"{folder}'s tokenizer.json has {tokens:,} tokens but the model "
                                                 "32,768 embedding rows"), said
    small = tmp_path / "small"  # and refused by it
    roberta.RobertaForMaskedLM(dataclasses.replace(tiny_config, vocab_size=100)).save_pretrained(small)
    (small / "tokenizer.json").write_bytes((tiny_mlm_dir / "tokenizer.json").read_bytes())
    with pytest.raises(roberta.ModelLoadError, match="^" + re.escape(f"{small}'s tokenizer.json has {tokens:,} ")):
        roberta.pipeline("fill-mask", model=small)


def test_pipeline_with_roberta_base_layout_tokenizer(roberta_base_style_tokenizer_file):
    """Nothing assumes <mask> is id 4: roberta-base has it last."""
    tok = roberta.load_tokenizer(roberta_base_style_tokenizer_file)
    torch.manual_seed(0)
    model = roberta.RobertaForMaskedLM(roberta.RobertaConfig.from_preset("tiny", tokenizer=tok))
    result = roberta.pipeline("fill-mask", model=model, tokenizer=tok)("The cat [MASK] the sea.", top_k=3)
    assert len(result) == 3 and all(set(r) == KEYS for r in result)
    assert_models_answer(model, tok, "The cat <mask> the sea.", result, mask_id=tok.token_to_id("<mask>"))
    assert all("<mask>" not in r["sequence"] for r in result)


# ----- what a transformers user passes out of habit -----
def test_the_pipeline_classes_take_a_tokenizer_path_or_a_transformers_tokenizer(tiny_mlm_dir, tiny_clf_dir, fill,
                                                                              sentiment):
    """The class constructors refused a path with a message that said a path is accepted."""
    from transformers import AutoTokenizer
    mlm = roberta.RobertaForMaskedLM.from_pretrained(tiny_mlm_dir)
    clf = roberta.RobertaForSequenceClassification.from_pretrained(tiny_clf_dir)
    for given in (tiny_mlm_dir, str(tiny_mlm_dir / "tokenizer.json"), AutoTokenizer.from_pretrained(str(tiny_mlm_dir))):
        assert roberta.FillMaskPipeline(mlm, given, device="cpu")("The cat likes <mask>.") == fill("The cat likes "
                                                                                                    "<mask>.")
        assert roberta.TextClassificationPipeline(clf, given, device="cpu")("a dog") == sentiment("a dog")
    with pytest.raises(TypeError, match="^tokenizer must be a tokenizers.Tokenizer, .* got int$"):
        roberta.FillMaskPipeline(mlm, 3)


def test_a_fill_mask_error_in_a_list_names_the_text_before_any_forward_pass(fill, tiny_config):
    """"the mask is beyond the first 64 tokens" did not say which text, and came after the batches before it ran."""
    rows = _rows_per_forward(fill)
    beyond = ["a <mask>."] * 40 + [long_text() + " <mask>."] + ["b <mask>."] * 3
    with pytest.raises(ValueError, match=f"^text 41 of 44 has its mask beyond the first {tiny_config.max_length} "
                                         "tokens, which is all the model reads"):
        fill(beyond)
    assert rows == []  # refused before the first batch ran
    with pytest.raises(ValueError, match=f"^text 2 of 3 has {MAX_MASKS + 1} masks; at most {MAX_MASKS}"):
        fill(["a <mask>.", "<mask> " * (MAX_MASKS + 1), "c <mask>"])
    with pytest.raises(ValueError, match="^text 2 of 2 has no mask"):
        fill(["a <mask>.", "no mask here"])
    with pytest.raises(ValueError, match="^the text has its mask beyond the first"):
        fill(long_text() + " <mask>.")
    with pytest.raises(ValueError, match="^the text has a mask beyond the first"):  # one of two cut off
        fill("<mask> " + long_text() + " <mask>.")


def test_top_k_none_is_the_default_as_in_transformers(fill):
    assert fill("The cat likes <mask>.", top_k=None) == fill("The cat likes <mask>.")
    assert len(fill("The cat likes <mask>.", top_k=None)) == 5


def test_any_iterable_of_texts_is_a_list_of_texts(fill, sentiment):
    """A generator (or a pandas Series) was "expected a text or a non-empty list of texts, got generator"."""
    texts = ["The cat likes <mask>.", "a <mask> dog"]
    assert fill(t for t in texts) == fill(texts) == fill(tuple(texts))
    reviews = ["a dog", "the sea"]
    assert sentiment(iter(reviews)) == sentiment(reviews)
    for bad in ({"a <mask>": 1}, b"a <mask>", 3):  # a dict is no list of texts, nor are bytes
        for pipe in (fill, sentiment):  # in the words `encode` refuses them with (`roberta.tokenizer.text_list`)
            with pytest.raises(ValueError, match=f"^expected a text or a list of texts, got {type(bad).__name__}$"):
                pipe(bad)
        with pytest.raises(ValueError, match=f"^expected a text or a list of texts, got {type(bad).__name__}$"):
            encode(fill.tokenizer, bad, 16)
    for empty in ((t for t in []), []):  # what `encode` takes (no rows), but no call of a pipeline
        with pytest.raises(ValueError, match=f"^expected a text or a non-empty list of texts, got an empty "
                                             f"{type(empty).__name__}$"):
            fill(empty)


def test_the_classifier_reads_truncation_true_as_long_text_first(sentiment):
    """transformers' truncation=True cuts a text to the model's length: long_text="first" here; anything else
    named long_text instead of "unexpected keyword argument"."""
    assert sentiment(long_text(), truncation=True) == sentiment(long_text(), long_text="first")
    assert sentiment(long_text(), truncation=True, long_text="first")[0]["truncated"] is True
    assert "windows" in sentiment(long_text())[0]
    for kwargs in ({"truncation": False}, {"truncation": "longest_first"},
                   {"truncation": True, "long_text": "windows"}):
        with pytest.raises(ValueError, match=r"^truncation=.*: this pipeline takes long_text= instead, 'windows' .*"
                                             r"'first' for its first \d+ tokens only \(what truncation=True means\)"):
            sentiment("fine", **kwargs)
    for value in ("none", "softmax", "sigmoid"):
        with pytest.raises(ValueError, match=f"^function_to_apply='{value}' is not taken here: the scores follow the "
                                             "model's config.problem_type"):
            sentiment("fine", function_to_apply=value)


def test_a_target_with_a_lone_surrogate_is_refused_in_plain_words(fill):
    """The reviewer's case: a text's lone surrogate is read as "?", but a target's was UnicodeEncodeError from the
    tokenizer; its "?" scored would pass for the word, so it is refused, the target named, as `encode` refuses a
    text's."""
    for targets in (["\ud800"], [" the", "a\udc80"]):
        with pytest.raises(ValueError, match="the target .* holds a lone surrogate .* remove it"):
            fill("The cat likes <mask>.", targets=targets)
    with pytest.raises(ValueError) as target:
        fill("The cat likes <mask>.", targets="a\udc80")
    with pytest.raises(ValueError) as text:
        encode(fill.tokenizer, "a\udc80", 16)
    said = "holds a lone surrogate ('\\udc80' at character 1), half of a UTF-16 pair and not a character: remove it"
    assert str(target.value) == f"the target 'a\\udc80' {said}" and str(text.value) == f"the text {said}"
