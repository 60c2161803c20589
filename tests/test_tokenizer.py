"""Byte-level BPE tokenizer: special tokens, <s> ... </s>, the <mask> space rule, unicode, transformers parity."""
import json

import pytest
import torch

import roberta
from roberta.tokenizer import SPECIAL_TOKENS

pytestmark = pytest.mark.usefixtures("single_thread")

UNICODE_TEXTS = [
    "Emoji 😀👍🏽 and a family 👨‍👩‍👧",
    "中文分词 和 日本語のテキスト",
    "עברית וערבית: مرحبا بالعالم",
    "Combining e\u0301 and \u202eright-to-left override\u202c",
    "control \x00 \x07 \t tab \r\n newline",
    "  leading, trailing and   multiple spaces  ",
    "Ünïcödé ßtraße, naïve café",
]


def test_special_tokens_have_ids_0_to_4(tokenizer):
    assert SPECIAL_TOKENS == ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    assert [tokenizer.token_to_id(t) for t in SPECIAL_TOKENS] == [0, 1, 2, 3, 4]
    assert tokenizer.get_vocab_size() == 300


@pytest.mark.parametrize("text", ["", "The cat likes the sea.", "<mask>", *UNICODE_TEXTS])
def test_every_encoding_is_wrapped_in_s_and_slash_s(tokenizer, text):
    ids = tokenizer.encode(text).ids
    assert ids[0] == 0 and ids[-1] == 2
    assert 0 not in ids[1:] and 2 not in ids[:-1]


def test_offsets_cover_each_token_without_its_space(tokenizer):
    """The app colours and labels tokens by their offsets: a word's token covers the word, not the space before
    it (trim_offsets: the second of two spaces, a token of its own, covers nothing), and <s>, </s> cover nothing."""
    text = "The cat likes  the sea."
    encoding = tokenizer.encode(text)
    assert encoding.offsets[0] == encoding.offsets[-1] == (0, 0)
    for token_id, (start, end) in zip(encoding.ids[1:-1], encoding.offsets[1:-1]):
        piece = tokenizer.decode([token_id])
        assert text[start:end] == piece.lstrip(" "), (piece, start, end)  # a lone space token covers nothing


def test_mask_absorbs_the_space_before_it(tokenizer):
    text = "The capital of <mask>."
    encoding = tokenizer.encode(text)
    mask_at = encoding.ids.index(4)
    assert encoding.ids.count(4) == 1
    # The space went into <mask>: the token before it is "of" (with its own leading space), no lone "Ġ".
    assert "Ġ" not in encoding.tokens
    assert encoding.tokens[mask_at] == " <mask>"  # the matched text includes the space
    # ... by the lstrip the trainer's special tokens carry (re-adding <mask> after training changed nothing), kept in
    # the tokenizer.json written
    added = {t["content"]: t for t in json.loads(tokenizer.to_str())["added_tokens"]}
    assert [t for t in SPECIAL_TOKENS if added[t]["lstrip"]] == ["<mask>"]
    assert encoding.ids[:mask_at] == tokenizer.encode("The capital of").ids[:-1]
    # So a predicted word carries its space: putting " London" in the mask's place reads back as the text.
    london = tokenizer.encode(" London", add_special_tokens=False).ids
    filled = encoding.ids[:mask_at] + london + encoding.ids[mask_at + 1:]
    assert tokenizer.decode(filled) == "The capital of London."
    # Without a mask the text round-trips exactly.
    assert tokenizer.decode(tokenizer.encode("The capital of London.").ids) == "The capital of London."


def test_mask_without_space_before_is_the_same_single_token(tokenizer):
    assert tokenizer.encode("(<mask>)").ids == [0, tokenizer.token_to_id("("), 4, tokenizer.token_to_id(")"), 2]


@pytest.mark.parametrize("text", UNICODE_TEXTS)
def test_byte_level_round_trip(tokenizer, text):
    encoding = tokenizer.encode(text)
    assert 3 not in encoding.ids, "byte-level BPE never needs <unk>"
    assert tokenizer.decode(encoding.ids) == text


def test_transformers_fast_tokenizer_gives_identical_ids(tokenizer, tiny_mlm_dir):
    transformers = pytest.importorskip("transformers")
    fast = transformers.PreTrainedTokenizerFast(tokenizer_file=str(tiny_mlm_dir / "tokenizer.json"))
    auto = transformers.AutoTokenizer.from_pretrained(str(tiny_mlm_dir))  # what transformers.pipeline uses
    assert auto.mask_token_id == 4 and auto.pad_token_id == 1
    for text in ["The cat likes <mask>.", "A dog <mask> the <mask> again", *UNICODE_TEXTS]:
        expected = tokenizer.encode(text).ids
        assert fast(text)["input_ids"] == expected
        assert auto(text)["input_ids"] == expected


def test_load_tokenizer_from_file_and_folder(tokenizer, tiny_mlm_dir):
    text = "Paris is near the sea <mask>."
    expected = tokenizer.encode(text).ids
    assert roberta.load_tokenizer(tiny_mlm_dir / "tokenizer.json").encode(text).ids == expected
    assert roberta.load_tokenizer(tiny_mlm_dir).encode(text).ids == expected
    assert roberta.load_tokenizer(str(tiny_mlm_dir)).encode(text).ids == expected


def test_load_tokenizer_errors_clearly(tmp_path, tokenizer):
    with pytest.raises(FileNotFoundError, match="tokenizer.json"):
        roberta.load_tokenizer(tmp_path)
    # A tokenizer without RoBERTa's special tokens is refused by name.
    data = json.loads(tokenizer.to_str())
    data["added_tokens"] = [t for t in data["added_tokens"] if t["content"] != "<mask>"]
    del data["model"]["vocab"]["<mask>"]
    path = tmp_path / "no-mask.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="<mask>"):
        roberta.load_tokenizer(path)


def test_load_tokenizer_says_what_it_takes_when_given_a_tokenizer_object(tokenizer, tiny_mlm_dir):
    """A transformers tokenizer (or ours) was "expected str, bytes or os.PathLike object, not TokenizersBackend"."""
    from transformers import AutoTokenizer

    theirs = AutoTokenizer.from_pretrained(str(tiny_mlm_dir))
    with pytest.raises(TypeError, match=r"load_tokenizer takes a tokenizer\.json path, a model folder or a Hub repo "
                                        r"id, got \w+: a transformers tokenizer holds .* as \.backend_tokenizer"):
        roberta.load_tokenizer(theirs)
    with pytest.raises(TypeError, match="got Tokenizer: it is one already"):
        roberta.load_tokenizer(tokenizer)
    assert theirs.backend_tokenizer.encode("a <mask>").ids == tokenizer.encode("a <mask>").ids


def test_train_tokenizer_refuses_one_string_for_a_list_of_texts():
    """A string is itself an iterable of strings: "hello world" trained on its characters, without a word."""
    with pytest.raises(ValueError, match=r"texts must be a list .* got a single string: pass \[text\]"):
        roberta.train_tokenizer("hello world", vocab_size=300, show_progress=False)


@pytest.mark.parametrize("texts, message", [
    ([1], r"^expected text \(a string\), got int \(text 1 of 1\)$"),
    (["fine", None], r"^expected text \(a string\), got NoneType \(text 2 of 2\)$"),
    (None, "^expected a text or a list of texts, got NoneType$"),
    (b"hello", "^expected a text or a list of texts, got bytes$"),  # was five "texts", the bytes' numbers
    ({"a text": 1}, "^expected a text or a list of texts, got dict$"),  # was its keys, encoded without a word
    ("\ud800lone", r"^the text holds a lone surrogate \('\\ud800' at character 0\), half of a UTF-16 pair and not "
                   "a character: remove it$"),
    (["fine", "a\udc80"], r"^text 2 of 2 holds a lone surrogate \('\\udc80' at character 1\)"),
])
def test_encode_names_texts_that_are_not_text(tokenizer, texts, message):
    """tokenizers' "TextEncodeInput must be Union[TextInputSequence, ...]" named neither the argument nor the text.
    The words are the pipelines' (one check of "a text or a list of texts", `roberta.tokenizer.text_list`), but a
    lone surrogate is refused here, where the pipelines read it as "?"."""
    from roberta.tokenizer import encode_windows
    for encoder in (roberta.encode, encode_windows):
        with pytest.raises(ValueError, match=message):
            encoder(tokenizer, texts, 10)


def test_the_shortest_input_is_one_length_for_the_config_and_the_encoders(tokenizer):
    """The least length, <s> a token </s>, was written twice (config.py's `< 3`, tokenizer.py's MIN_LENGTH): one
    constant now, in config.py, which the encoders' check reads too."""
    from roberta.config import MIN_LENGTH
    from roberta.tokenizer import encode_windows

    shortest = roberta.RobertaConfig.from_preset("tiny", tokenizer=tokenizer, max_position_embeddings=MIN_LENGTH + 2)
    assert shortest.max_length == MIN_LENGTH == 3
    assert roberta.encode(tokenizer, "a long text", shortest.max_length)[0].shape == (1, MIN_LENGTH)
    assert encode_windows(tokenizer, "a long text", shortest.max_length)[0].shape[1] == MIN_LENGTH
    with pytest.raises(ValueError, match=f"max_position_embeddings .{MIN_LENGTH + 1}. must be at least"):
        roberta.RobertaConfig.from_preset("tiny", tokenizer=tokenizer, max_position_embeddings=MIN_LENGTH + 1)
    for encoder in (roberta.encode, encode_windows):
        with pytest.raises(ValueError, match=f"max_length must be a whole number of at least {MIN_LENGTH} "):
            encoder(tokenizer, "a long text", MIN_LENGTH - 1)


def test_encode_windows_is_encodes_sibling_at_the_top_of_the_package(tokenizer):
    """The code tour names `roberta.encode_windows` beside `roberta.encode`; only `roberta.tokenizer` had it."""
    from roberta.tokenizer import encode_windows

    assert roberta.encode_windows is encode_windows and "encode_windows" in roberta.__all__
    ids, mask, owner = roberta.encode_windows(tokenizer, ["a b c d e f g h"], 6)  # (W, T), (W, T), (W,)
    torch.testing.assert_close(ids[:1], roberta.encode(tokenizer, ["a b c d e f g h"], 6)[0])  # its first window


def test_roberta_base_layout_loads_with_the_same_code(tokenizer, roberta_base_style_tokenizer_file):
    """roberta-base's tokenizer.json puts <mask> last (50264) and uses the older file format."""
    theirs = roberta.load_tokenizer(roberta_base_style_tokenizer_file)
    assert theirs.token_to_id("<mask>") == theirs.get_vocab_size() - 1 == 299
    assert [theirs.token_to_id(t) for t in ("<s>", "<pad>", "</s>", "<unk>")] == [0, 1, 2, 3]
    for text in ["The capital of <mask>.", *UNICODE_TEXTS]:
        a, b = tokenizer.encode(text), theirs.encode(text)
        assert a.tokens == b.tokens  # same pieces, ids differ by the layout
        assert b.ids[0] == 0 and b.ids[-1] == 2
        assert theirs.decode(b.ids) == tokenizer.decode(a.ids)
    # Everything that reads special ids from the tokenizer follows the layout.
    config = roberta.RobertaConfig.from_preset("tiny", tokenizer=theirs)
    assert (config.vocab_size, config.pad_token_id, config.bos_token_id, config.eos_token_id) == (300, 1, 0, 2)
    masker = roberta.make_masker("dynamic", theirs)
    assert masker.mask_token_id == 299 and set(masker.special_ids.tolist()) == {0, 1, 2, 3, 299}


def test_save_tokenizer_writes_a_folder_transformers_reads_as_saved(tokenizer, tmp_path):
    import json

    from transformers import AutoTokenizer

    from roberta.text import lowercasing
    from roberta.tokenizer import save_tokenizer
    save_tokenizer(lowercasing(tokenizer), tmp_path, model_max_length=64)
    config = json.loads((tmp_path / "tokenizer_config.json").read_text())
    assert config["model_max_length"] == 64
    hf = AutoTokenizer.from_pretrained(str(tmp_path))
    ours = roberta.load_tokenizer(tmp_path)
    text = "My Friend LIKES the <mask> today."
    assert hf(text)["input_ids"] == ours.encode(text).ids == tokenizer.encode(text.lower()).ids


@pytest.mark.parametrize("length", [-5, None, 2, 64.0])
def test_save_tokenizer_refuses_a_model_max_length_that_holds_no_token(tokenizer, tmp_path, length):
    """-5 or None was written into tokenizer_config.json as it came."""
    with pytest.raises(ValueError, match=f"model_max_length must be a whole number of at least 3 .*got {length}"):
        roberta.save_tokenizer(tokenizer, tmp_path / "out", length)
    assert not (tmp_path / "out").exists()


def test_encode_follows_tokens_added_after_its_first_use(tokenizer):
    """encode's truncating copy is cached per tokenizer: a token added since is used, not an old split."""
    from tokenizers import AddedToken, Tokenizer
    tok = Tokenizer.from_str(tokenizer.to_str())
    before = roberta.encode(tok, ["an <ent> here"], max_length=16)[0][0].tolist()
    tok.add_special_tokens([AddedToken("<ent>")])
    new_id = tok.token_to_id("<ent>")
    after = roberta.encode(tok, ["an <ent> here"], max_length=16)[0][0].tolist()
    assert new_id not in before and new_id in after
    assert after[:len(tok.encode("an <ent> here").ids)] == tok.encode("an <ent> here").ids


def test_every_function_that_takes_a_tokenizer_takes_a_path_or_a_transformers_tokenizer(tokenizer, tiny_mlm_dir,
                                                                                        tmp_path):
    """As pipeline(tokenizer=) does (`as_tokenizer`): a folder or a transformers tokenizer failed deep inside
    ("cannot create weak reference to 'str' object", "'str' object has no attribute 'token_to_id'")."""
    from transformers import AutoTokenizer

    from roberta.masking import DynamicMasker
    from roberta.tokenizer import encode_windows
    theirs = AutoTokenizer.from_pretrained(str(tiny_mlm_dir))
    texts = ["The cat likes the sea.", "a dog " * 20]
    ids, mask, truncated = roberta.encode(tokenizer, texts, 16)
    windows = encode_windows(tokenizer, texts, 16)
    config = roberta.RobertaConfig.from_preset("tiny", tokenizer=tokenizer)
    assert roberta.RobertaConfig.from_preset("tiny", tokenizer=theirs) == config
    for path in (tiny_mlm_dir, str(tiny_mlm_dir)):  # a path is read by roberta.load_tokenizer (config is below it)
        with pytest.raises(TypeError, match=r"got \w+ \(roberta\.load_tokenizer reads a path or folder\)$"):
            roberta.RobertaConfig.from_preset("tiny", tokenizer=path)
    for given in (tiny_mlm_dir, str(tiny_mlm_dir / "tokenizer.json"), theirs):
        got_ids, got_mask, got_truncated = roberta.encode(given, texts, 16)
        assert torch.equal(got_ids, ids) and torch.equal(got_mask, mask) and got_truncated == truncated
        assert all(torch.equal(a, b) for a, b in zip(encode_windows(given, texts, 16), windows))
        for kind in ("dynamic", "static"):
            masker = roberta.make_masker(kind, given)
            assert masker.mask_token_id == tokenizer.token_to_id("<mask>")
            assert masker.special_ids.tolist() == roberta.make_masker(kind, tokenizer).special_ids.tolist()
        regular = DynamicMasker.from_tokenizer(tokenizer).regular_ids
        assert DynamicMasker.from_tokenizer(given).regular_ids.equal(regular)
        folder = tmp_path / type(given).__name__
        roberta.save_tokenizer(given, folder, 16)
        saved = roberta.load_tokenizer(folder)
        assert saved.get_vocab() == tokenizer.get_vocab()
        assert [e.ids for e in saved.encode_batch(texts)] == [e.ids for e in tokenizer.encode_batch(texts)]


def test_a_tokenizer_argument_of_another_kind_is_named_before_anything_is_written(tokenizer, tmp_path):
    from roberta.tokenizer import encode_windows
    message = (r"^tokenizer must be a tokenizers\.Tokenizer, a transformers fast tokenizer, a tokenizer\.json path, "
               r"a model folder or a Hub repo id, got dict$")
    for call in (lambda: roberta.encode({}, ["a"], 16), lambda: encode_windows({}, ["a"], 16),
                 lambda: roberta.make_masker("static", {}), lambda: roberta.save_tokenizer({}, tmp_path / "out", 16)):
        with pytest.raises(TypeError, match=message):
            call()
    with pytest.raises(TypeError, match=r"^tokenizer must be a tokenizers\.Tokenizer or a transformers fast tokenizer, "
                                        r"got dict$"):
        roberta.RobertaConfig.from_preset("tiny", {})
    assert not (tmp_path / "out").exists()
    with pytest.raises(roberta.ModelNotFoundError):  # a path is read: its own error
        roberta.encode(tmp_path / "missing", ["a"], 16)


def test_a_full_disk_keeps_the_saved_tokenizer_files_and_names_the_file(tokenizer, tmp_path, monkeypatch):
    """save_tokenizer wrote tokenizer.json in place with `tokenizers`' own save: a full disk left it empty (the only
    copy of a run's trained tokenizer, which the next export shipped) and raised a bare Exception, a traceback from
    every script. Now a failed write leaves the files as they were and is an OSError naming the file."""
    import errno
    from pathlib import Path

    from roberta.text import lowercasing
    roberta.save_tokenizer(tokenizer, tmp_path, 16)
    before = {name: (tmp_path / name).read_bytes() for name in ("tokenizer.json", "tokenizer_config.json")}
    real_write = Path.write_bytes

    def full_disk(self, data):  # what fits, then "No space left on device"
        real_write(self, data[:10])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Path, "write_bytes", full_disk)
    with pytest.raises(OSError) as failure:  # another tokenizer and length than the files on disk
        roberta.save_tokenizer(lowercasing(tokenizer), tmp_path, 24)
    assert str(failure.value) == f"could not write {tmp_path / 'tokenizer.json'} (No space left on device)"
    assert failure.value.errno == errno.ENOSPC
    with pytest.raises(OSError, match=r"could not write .*tokenizer_config\.json \(No space left on device\)$"):
        roberta.tokenizer.save_tokenizer_config(tmp_path, 24)
    monkeypatch.undo()
    assert {name: (tmp_path / name).read_bytes() for name in before} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(before)  # no temporary file left
    assert roberta.load_tokenizer(tmp_path).get_vocab() == tokenizer.get_vocab()


def test_the_classifier_card_loads_its_lower_casing_tokenizer_as_transformers_keeps_it(tiny_clf_dir, tokenizer,
                                                                                        tmp_path):
    """The reviewer's case: `RobertaTokenizer(Fast).from_pretrained(folder)` rebuilds the tokenizer from its
    vocabulary and merges without tokenizer.json's Lowercase normalizer (transformers 5): the shipped classifier
    then read "Not Good." as cased tokens it was never fine-tuned on, and answered positive. The card's Usage
    loads the tokenizer as `AutoTokenizer` (which keeps it) and says that the RoBERTa classes drop it."""
    import shutil

    transformers = pytest.importorskip("transformers")

    from roberta.text import lowercasing
    from train.model_card import _usage

    folder = shutil.copytree(tiny_clf_dir, tmp_path / "clf")
    roberta.save_tokenizer(lowercasing(tokenizer), folder, 64)  # as train.finetune and train.export save it
    text, lowered = "The Cat LIKES music.", tokenizer.encode("the cat likes music.").ids
    assert transformers.AutoTokenizer.from_pretrained(str(folder))(text)["input_ids"] == lowered
    for cls in (transformers.RobertaTokenizerFast, transformers.RobertaTokenizer):  # what the card warns of
        assert cls.from_pretrained(str(folder))(text)["input_ids"] != lowered
    usage = _usage("sentiment-analysis", "USER/clf", folder)
    code = usage.split("With `transformers`")[1]
    assert 'AutoTokenizer.from_pretrained("USER/clf")' in code and "RobertaTokenizer" not in code.split("```")[1]
    assert ("load the tokenizer with `AutoTokenizer` or `pipeline`: `RobertaTokenizer` and "
            "`RobertaTokenizerFast` drop the lower-casing") in " ".join(usage.split())


def test_a_plain_byte_level_bpe_is_saved_as_a_roberta_tokenizer_that_transformers_reads_alike(tokenizer, tmp_path):
    """The reviewer's case: tokenizer_config.json named "PreTrainedTokenizerFast" for every tokenizer, which
    transformers 5 loads as its generic class: `AutoTokenizer.from_pretrained(folder, add_prefix_space=True)` was
    silently ignored, so pre-split words (`is_split_into_words`, RoBERTa's token-classification recipe) lost their
    word-start "Ġ". A tokenizer that `RobertaTokenizer` rebuilds exactly (a byte-level BPE with no normalizer: the
    MLM's) is now saved as one, with the same ids; a lower-casing one (a classifier's), whose normalizer the rebuild
    would drop, keeps the generic class."""
    import json

    transformers = pytest.importorskip("transformers")

    from roberta.text import lowercasing

    roberta.save_tokenizer(tokenizer, tmp_path / "mlm", 64)
    roberta.save_tokenizer(lowercasing(tokenizer), tmp_path / "clf", 64)
    config = json.loads((tmp_path / "mlm" / "tokenizer_config.json").read_text())
    assert config["tokenizer_class"] == "RobertaTokenizer" and config["model_max_length"] == 64
    assert json.loads((tmp_path / "clf" / "tokenizer_config.json").read_text())["tokenizer_class"] == (
        "PreTrainedTokenizerFast")
    for name in ("mlm", "clf"):  # as `train.export` writes a run's missing one: for the folder's tokenizer.json
        written = (tmp_path / name / "tokenizer_config.json").read_text()
        (tmp_path / name / "tokenizer_config.json").unlink()
        roberta.tokenizer.save_tokenizer_config(tmp_path / name, 64)
        assert (tmp_path / name / "tokenizer_config.json").read_text() == written
    theirs = transformers.AutoTokenizer.from_pretrained(str(tmp_path / "mlm"))
    generic = transformers.PreTrainedTokenizerFast(tokenizer_file=str(tmp_path / "mlm" / "tokenizer.json"),
                                                   model_max_length=64, **{k: v for k, v in config.items()
                                                                           if k.endswith("_token")})
    assert isinstance(theirs, transformers.RobertaTokenizer)
    texts = ["The cat likes <mask>.", "of<mask> and  <mask>", "<s>x</s><pad>", "a dog " * 40, "", *UNICODE_TEXTS]
    for text in texts:
        for kwargs in ({}, {"truncation": True}, {"add_special_tokens": False}):
            assert theirs(text, **kwargs)["input_ids"] == generic(text, **kwargs)["input_ids"]
        assert theirs(text)["input_ids"] == tokenizer.encode(text).ids
        assert theirs(text, "a pair", truncation=True)["input_ids"] == generic(text, "a pair", truncation=True)[
            "input_ids"]
        assert (theirs(text, truncation=True, return_offsets_mapping=True)["offset_mapping"]
                == generic(text, truncation=True, return_offsets_mapping=True)["offset_mapping"])
        ids = theirs(text)["input_ids"]
        for skip in (False, True):
            assert theirs.decode(ids, skip_special_tokens=skip) == generic.decode(ids, skip_special_tokens=skip)
    assert theirs(texts[:3], padding=True)["input_ids"] == generic(texts[:3], padding=True)["input_ids"]
    split = transformers.AutoTokenizer.from_pretrained(str(tmp_path / "mlm"), add_prefix_space=True)
    words = ["The", "cat", "likes", "music"]
    assert split(words, is_split_into_words=True)["input_ids"] == tokenizer.encode(" " + " ".join(words)).ids


def test_only_a_tokenizer_roberta_tokenizer_rebuilds_exactly_is_named_one(tokenizer):
    """`RobertaTokenizer` rebuilds the tokenizer from its vocabulary and merges, with its own steps: any other step
    (a normalizer, a prefix space, BPE dropout, SentencePiece's Metaspace) would be lost, so such a tokenizer is
    named by the generic class, which reads tokenizer.json as saved."""
    from tokenizers import Tokenizer, normalizers, pre_tokenizers

    from roberta.tokenizer import tokenizer_class

    assert tokenizer_class(tokenizer) == "RobertaTokenizer"

    def changed(**steps):
        copy = Tokenizer.from_str(tokenizer.to_str())
        for name, step in steps.items():
            setattr(copy, name, step)
        return copy

    for other in (changed(normalizer=normalizers.NFKC()), changed(pre_tokenizer=pre_tokenizers.ByteLevel(True)),
                  changed(pre_tokenizer=pre_tokenizers.Metaspace()), changed(post_processor=None)):
        assert tokenizer_class(other) == "PreTrainedTokenizerFast"
    dropout = json.loads(tokenizer.to_str())
    dropout["model"]["dropout"] = 0.1
    assert tokenizer_class(Tokenizer.from_str(json.dumps(dropout))) == "PreTrainedTokenizerFast"
