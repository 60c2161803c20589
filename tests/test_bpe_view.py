"""The "Tokens" tab's views (demo.bpe_view): a text's tokens, and byte-level BPE replayed merge by merge, checked
against `tokenizers`' own BPE model on the shipped tokenizer, the tiny test one and hand-made ones."""
from html.parser import HTMLParser
import json
import random
import re
from pathlib import Path

import pytest
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
import transformers

import roberta
from demo import bpe_view, byte_level
from demo.bpe_view import (MAX_PRETOKEN_BYTES, merge_steps, merges_html, pick_pretoken, pretokens, token_rows,
                           tokens_html)
from demo.formatting import readable, spaced
from demo.models import KINDS

SHIPPED = Path(__file__).resolve().parents[1] / "assets" / "mini-roberta-mlm" / "tokenizer.json"

# common words, rare long ones, numbers, punctuation, accents, emoji, CJK, repeats, whitespace
WORDS = ["the", " the", " The", "capital", " capital", " of", " France", " Paris", " tokenization", " tokenizer",
         " antidisestablishmentarianism", " supercalifragilistic", " pneumonoultramicroscopic", " 2024",
         " 3.14159", "1234567890", " 42", "!!!", " ...", " ?!", "'s", "n't", " café", " naïve", " Ærøskøbing",
         " élève", " 😀", " 👍🏽", "🇫🇷", " 東京", " 中文分词", " こんにちは", " 한국어", " Привет", " مرحبا",
         " aaaa", "aaaaaaa", " zzzzzz", " qwxz", " http", " \t", "\n\n", " ", " <", " />", "&amp", " ünïcödé",
         " Mississippi", " bookkeeper", " the the"]


def library_pieces(tokenizer, pretoken: str) -> list[str]:
    return [token.value for token in tokenizer.model.tokenize(pretoken)]


@pytest.fixture(scope="module")
def shipped():
    return roberta.load_tokenizer(SHIPPED)


def all_pretokens(tokenizer) -> list[str]:
    found = []
    for word in WORDS:
        found += [p for p in pretokens(tokenizer, word) if p not in found and len(p) <= MAX_PRETOKEN_BYTES]
    return found


@pytest.mark.parametrize("which", ["shipped", "tiny", "roberta_base_style"])
def test_merge_replay_ends_with_the_library_tokens(which, shipped, tokenizer, roberta_base_style_tokenizer_file):
    tok = {"shipped": shipped, "tiny": tokenizer,
           "roberta_base_style": roberta.load_tokenizer(roberta_base_style_tokenizer_file)}[which]
    words = all_pretokens(tok)
    assert len(words) >= 30
    merged_somewhere = 0
    for pretoken in words:
        steps = merge_steps(tok, pretoken)
        assert steps[0]["merged"] is None and steps[0]["rank"] is None
        assert steps[0]["pieces"] == list(pretoken)  # one piece per byte
        assert steps[-1]["pieces"] == library_pieces(tok, pretoken), pretoken
        for before, step in zip(steps, steps[1:]):  # each step joins one neighbouring pair
            assert len(step["pieces"]) == len(before["pieces"]) - 1
            assert "".join(step["pieces"]) == pretoken and "".join(step["merged"]) in step["pieces"]
            assert isinstance(step["rank"], int) and step["rank"] >= 0
        merged_somewhere += len(steps) > 1
    assert merged_somewhere >= 10


def test_merge_replay_matches_encoding_a_sentence(shipped):
    text = "The capital of France is Paris, and antidisestablishmentarianism costs $1234.56 😀 東京!"
    replayed = [piece for p in pretokens(shipped, text) for piece in merge_steps(shipped, p)[-1]["pieces"]]
    assert replayed == shipped.encode(text, add_special_tokens=False).tokens  # every pre-token occurs once


def test_text_with_a_space_is_read_as_its_pretoken(shipped):
    assert merge_steps(shipped, " tokenization") == merge_steps(shipped, "Ġtokenization")
    assert merge_steps(shipped, " café")[0]["pieces"] == list("ĠcafÃ©")  # é is two bytes
    assert merge_steps(shipped, "café")[-1]["pieces"] == library_pieces(shipped, "cafÃ©")
    assert merge_steps(shipped, "😀")[0]["pieces"] == list("ðŁĺĢ")


def random_bpe(rng: random.Random) -> Tokenizer:
    """A BPE over the bytes "a" and "b" with random merges, some of them giving the same token two ways."""
    vocab, merges = ["a", "b"], []
    while len(merges) < 12:
        left, right = rng.choice(vocab), rng.choice(vocab)
        if (left, right) in merges or len(left + right) > 6:
            continue
        merges.append((left, right))
        if left + right not in vocab:
            vocab.append(left + right)
    tok = Tokenizer(models.BPE({t: i for i, t in enumerate(vocab)}, merges))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    return tok


def test_merge_order_matches_the_library_on_repeated_pairs():
    # "aaa" with merges "a a" then "aa a": the library joins the leftmost "a a" first, so it ends as "aaa"
    tok = Tokenizer(models.BPE({"a": 0, "aa": 1, "aaa": 2}, [("a", "a"), ("aa", "a")]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    assert merge_steps(tok, "aaa")[-1]["pieces"] == ["aaa"] == library_pieces(tok, "aaa")
    steps = merge_steps(tok, "aaaa")
    assert [s["pieces"] for s in steps] == [list("aaaa"), ["aa", "a", "a"], ["aa", "aa"]]
    assert steps[-1]["pieces"] == library_pieces(tok, "aaaa")
    rng = random.Random(0)
    for _ in range(40):
        tok = random_bpe(rng)
        for _ in range(25):
            word = "".join(rng.choice("ab") for _ in range(rng.randint(1, 12)))
            assert merge_steps(tok, word)[-1]["pieces"] == library_pieces(tok, word), word


def test_merge_ranks_and_rare_bytes(shipped):
    steps = merge_steps(shipped, " tokenization")
    assert steps[1]["merged"] == ["Ġ", "t"] and steps[1]["rank"] == 0  # the first merge the tokenizer learned
    emoji = merge_steps(shipped, "😀")
    assert emoji[-1]["pieces"] == library_pieces(shipped, "ðŁĺĢ")


def test_ignore_merges_takes_a_known_word_whole():
    tok = Tokenizer(models.BPE({"a": 0, "b": 1, "ab": 2, "abb": 3}, [("a", "b")], ignore_merges=True))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    steps = merge_steps(tok, "abb")
    assert steps[-1] == {"pieces": ["abb"], "merged": None, "rank": None, "whole_word": True}
    assert steps[-1]["pieces"] == library_pieces(tok, "abb")
    assert merge_steps(tok, "abab")[-1]["pieces"] == ["ab", "ab"] == library_pieces(tok, "abab")
    assert "whole word is in the vocabulary" in merges_html("abb", steps)


def _bpe_tokenizer(vocab: list[str], merges=(), **options) -> Tokenizer:
    tok = Tokenizer(models.BPE({t: i for i, t in enumerate(vocab)}, list(merges), **options))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    return tok


@pytest.mark.parametrize("vocab, options, words", [
    # "x" is in neither the vocabulary nor as bytes (<unk>), "y" only as its byte <0x79>: the library leaves
    # a pending <unk> until the next piece in the vocabulary, after the byte pieces
    (["a", "<unk>", "<0x79>"], {"unk_token": "<unk>", "byte_fallback": True}, ["xya", "xxya", "yxa", "axyx", "xy"]),
    (["a", "<unk>", "<0x79>"], {"unk_token": "<unk>", "byte_fallback": True, "fuse_unk": True}, ["xxyxa", "xyyx"]),
    # byte fallback writes the bytes of the piece with its subword prefix / word suffix
    (["a", "<0x79>", "<0x23>"], {"byte_fallback": True, "continuing_subword_prefix": "##"}, ["ay", "aya", "ya"]),
    (["a", "<0x79>", "<0x3C>", "<0x2F>", "<0x77>", "<0x3E>"], {"byte_fallback": True, "end_of_word_suffix": "</w>"},
     ["ay", "ya"]),
])
def test_unknown_characters_start_as_the_library_starts_them(vocab, options, words):
    tok = _bpe_tokenizer(vocab, **options)
    for word in words:
        assert merge_steps(tok, word)[-1]["pieces"] == library_pieces(tok, word), word


def test_a_tokenizer_that_adds_a_prefix_space_replays_the_pretokens_of_the_text(shipped):
    """With add_prefix_space, "," alone would be read as "Ġ,": the picker's "," is still the pre-token ","."""
    data = json.loads(shipped.to_str())
    data["pre_tokenizer"]["add_prefix_space"] = True
    tok = Tokenizer.from_str(json.dumps(data))
    text = "Hello, world! (tokenization) 2024"
    found = pretokens(tok, text)
    assert "," in found and "Ġ," not in found
    for pretoken in found:
        assert merge_steps(tok, pretoken)[0]["pieces"] == list(pretoken)
        assert merge_steps(tok, pretoken)[-1]["pieces"] == library_pieces(tok, pretoken), pretoken
    replayed = [piece for p in found for piece in merge_steps(tok, p)[-1]["pieces"]]
    assert replayed == tok.encode(text, add_special_tokens=False).tokens


@pytest.mark.parametrize("word, shown", [("café", "café"), ("Zürich", "Zürich"), (" naïve", "␣naïve"),
                                         ("ĠcafÃ©", "␣café")])
def test_a_typed_word_is_named_as_typed(shipped, word, shown):
    """A word typed as text whose letters are also byte-level characters ("é" is the byte 0xE9's) is replayed
    as text, and the view names it so, not as "caf⟨byte 0xE9⟩"."""
    out = merges_html(word, merge_steps(shipped, word))
    assert f"How “{shown}” is cut" in out and f"merge: “{shown}” is " in out  # the title and the last line
    # the last line, the outcome, is marked: demo/page.js announces it (the title alone said only the question)
    assert re.search(rf'<p class="bpe-done">[^<]*merge: “{shown}” is ', out)


@pytest.mark.parametrize("word", ["\ud800", " a\udc80", "\ud800" * 50])
def test_a_lone_surrogate_is_refused_plainly(shipped, word):
    with pytest.raises(ValueError, match="broken character") as info:
        merge_steps(shipped, word)
    assert "codec" not in str(info.value) and "\ud800" not in str(info.value)


def test_long_words_and_several_pretokens_are_refused_plainly(shipped):
    with pytest.raises(ValueError, match=f"up to {MAX_PRETOKEN_BYTES} bytes"):
        merge_steps(shipped, "x" * 1000)
    with pytest.raises(ValueError, match="is 44 bytes: merge by merge shows words of up to 40 bytes"):
        merge_steps(shipped, "😀" * 11)  # 11 characters, 44 bytes
    assert len(merge_steps(shipped, "a" * MAX_PRETOKEN_BYTES)[0]["pieces"]) == MAX_PRETOKEN_BYTES
    with pytest.raises(ValueError, match="is 2 words to this tokenizer \\(hello · ␣world\\): pick or type one"):
        merge_steps(shipped, "hello world")
    with pytest.raises(ValueError, match="no word"):
        merge_steps(shipped, "")


def test_not_byte_level_bpe_is_a_plain_value_error():
    word_level = Tokenizer(models.WordLevel({"a": 0, "[UNK]": 1}, unk_token="[UNK]"))
    with pytest.raises(ValueError, match="not BPE"):
        merge_steps(word_level, "a")
    with pytest.raises(ValueError, match="not BPE"):
        pretokens(word_level, "a b")
    plain_bpe = Tokenizer(models.BPE({"a": 0, "b": 1, "ab": 2}, [("a", "b")]))
    plain_bpe.pre_tokenizer = pre_tokenizers.Whitespace()
    with pytest.raises(ValueError, match="not byte-level"):
        merge_steps(plain_bpe, "ab")


@pytest.mark.parametrize("wrapped", [
    [pre_tokenizers.ByteLevel(add_prefix_space=False)],
    [pre_tokenizers.Digits(individual_digits=True), pre_tokenizers.ByteLevel(add_prefix_space=False)],
])
def test_a_byte_level_pre_tokenizer_inside_a_sequence_is_byte_level_bpe(wrapped):
    """A Hub tokenizer may wrap its ByteLevel step in a Sequence (after a digit split, say): still byte-level BPE,
    whose merges are replayed as the library applies them; a BPE with no pre-tokenizer at all is not."""
    tok = _bpe_tokenizer(["a", "b", "ab", "Ġ", "Ġab", "1", "2"], [("a", "b"), ("Ġ", "ab")])
    tok.pre_tokenizer = pre_tokenizers.Sequence(wrapped)
    assert pretokens(tok, "ab ab") == ["ab", "Ġab"]
    steps = merge_steps(tok, " ab")
    assert [step["pieces"] for step in steps] == [["Ġ", "a", "b"], ["Ġ", "ab"], ["Ġab"]]
    assert steps[-1]["pieces"] == library_pieces(tok, "Ġab")
    bare = _bpe_tokenizer(["a", "b", "ab"], [("a", "b")])
    bare.pre_tokenizer = None
    with pytest.raises(ValueError, match="not byte-level BPE"):
        merge_steps(bare, "ab")


def test_bpe_is_parsed_once_per_tokenizer(shipped):
    merge_steps(shipped, " the")
    assert bpe_view._bpe(shipped) is bpe_view._bpe(shipped)
    assert shipped in bpe_view._BPE


def test_byte_alphabet_and_readable():
    table = byte_level.byte_of()
    assert sorted(table.values()) == list(range(256)) and set(table) == set(pre_tokenizers.ByteLevel.alphabet())
    assert table["Ġ"] == 0x20 and table["Ċ"] == 0x0A and table["a"] == ord("a")
    decoder = decoders.ByteLevel()
    assert all(decoder.decode([c]) == chr(b) for c, b in table.items() if b < 0x80)
    assert readable("Ġcapital") == "␣capital"
    assert readable("ĠĠ") == "␣␣"
    assert readable("Ċ") == "↵"
    assert readable("ĠcafÃ©") == "␣café"
    assert readable("ð") == "⟨byte 0xF0⟩"
    assert readable("ðŁĺ") == "⟨bytes 0xF0 0x9F 0x98⟩"
    assert readable("Ã©ð") == "é⟨byte 0xF0⟩"
    assert readable("ï¿½") == "\ufffd"  # a real replacement character stays one
    assert readable("<s>") == "<s>"
    assert byte_level.is_partial("ð") and not byte_level.is_partial("ðŁĺĢ") and not byte_level.is_partial("<s>")


@pytest.mark.parametrize("text", ["the", " The café", "😀 東京\n\t\r", "\u2009\u200d", "\ufffd",
                                  "".join(map(chr, range(256)))])
def test_text_in_the_byte_alphabet_is_what_the_library_writes(text):
    """`to_byte_level` (the alphabet's table, read once) writes a text as the library's byte-level pre-tokenizer
    does, and `text_of` reads it back."""
    library = "".join(piece for piece, _ in pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
                      .pre_tokenize_str(text))
    assert byte_level.to_byte_level(text) == library and byte_level.text_of(library) == text


def test_a_space_typed_as_this_tab_shows_it_is_read_as_a_space():
    """"␣" (this tab's sign of a space) and "Ġ" (the vocabulary's), where a word begins, are the spaces they stand
    for; elsewhere they are characters of the word."""
    assert spaced("␣has") == spaced("Ġhas") == " has"
    assert spaced(" ␣Ġhas") == "   has" and spaced("has␣Ġ") == "has␣Ġ"
    assert spaced("Ġhas", "␣") == "Ġhas"  # /bpe_merges leaves "Ġ" to `merge_steps`, which reads it as bytes


def test_token_rows_counts_and_offsets(shipped):
    text = "The capital of France is Paris."
    rows = token_rows(shipped, text, 64)
    tokens = rows["tokens"]
    assert (rows["characters"], rows["bytes"], rows["words"], rows["truncated"]) == (31, 31, 6, False)
    assert tokens[0]["token"] == "<s>" and tokens[-1]["token"] == "</s>"
    assert tokens[0]["special"] and tokens[0]["text"] == "" and not tokens[0]["word_start"]
    regular = [t for t in tokens if not t["special"]]
    assert [t["id"] for t in regular] == shipped.encode(text, add_special_tokens=False).ids
    assert [t["token"] for t in regular] == shipped.encode(text, add_special_tokens=False).tokens
    assert all(text[t["start"]:t["end"]] == t["text"] for t in regular)
    assert sum(t["word_start"] for t in regular) == 6
    assert rows["tokens_per_word"] == pytest.approx(len(regular) / 6)
    assert "31 characters, 31 bytes, 6 words (split at spaces) → " in tokens_html(rows)


def test_token_rows_truncates_like_the_model(shipped):
    text = " ".join(["The capital of France is Paris."] * 20)
    rows = token_rows(shipped, text, 16)
    tokens = rows["tokens"]
    assert len(tokens) == 16 and rows["truncated"]
    assert tokens[0]["token"] == "<s>" and tokens[-1]["token"] == "</s>"
    assert rows["characters"] == len(text) and rows["words"] == 120
    assert 0 < rows["read_characters"] < len(text) and rows["read_words"] < 120
    assert rows["read_characters"] == tokens[-2]["end"]
    assert rows["tokens_per_word"] == pytest.approx(14 / rows["read_words"])
    html_out = tokens_html(rows)
    assert "Cut: the model reads at most 16 tokens" in html_out
    short = token_rows(shipped, "Paris.", 16)
    assert not short["truncated"] and "Cut:" not in tokens_html(short)


def test_a_cut_text_of_masks_counts_the_masks_as_read(shipped):
    """A text of masks cut at 16 tokens said "reads only the first 0 of the 600 characters (0 words)": the
    masks, special tokens of the tokenizer, were left out of what the model reads."""
    rows = token_rows(shipped, " ".join(["<mask>"] * 100), 16)
    assert rows["truncated"] and rows["read_words"] == 14
    assert rows["read_characters"] == rows["tokens"][-2]["end"] == 14 * 7 - 1
    mixed = token_rows(shipped, "the cat " + " ".join(["<mask>"] * 30), 16)  # the words after "cat" count too
    assert mixed["read_words"] == 2 + 12


@pytest.mark.parametrize("text", ["I ❤️ 東京 😀👍🏽 ok", "中文分词很难。", "  spaced   out\n\ttext  ", "🇫🇷", ""])
def test_byte_pieces_of_one_character_cover_the_text(shipped, tokenizer, text):
    for tok in (shipped, tokenizer):
        rows = token_rows(tok, text, 128)
        regular = [t for t in rows["tokens"] if not t["special"]]
        spans = list(dict.fromkeys((t["start"], t["end"]) for t in regular))  # byte pieces share a span
        assert all(end <= next_start for (_, end), (next_start, _) in zip(spans, spans[1:]))  # in order, no overlap
        covered = "".join(text[s:e] for s, e in spans)  # every character but (some) whitespace
        assert "".join(covered.split()) == "".join(text.split())
        assert rows["bytes"] == len(text.encode())
        for t in regular:
            assert "\ufffd" not in readable(t["token"])
        html_out = tokens_html(rows)
        assert "bpe-chip" in html_out or not text
    emoji = token_rows(tokenizer, "😀", 16)["tokens"][1:-1]
    assert len(emoji) > 1 and all(t["text"] == "😀" for t in emoji)  # four bytes, one character
    assert "of “😀”" in tokens_html(token_rows(tokenizer, "😀", 16))


def test_the_note_defines_a_piece_and_compares_the_vocabulary_with_robertas(shipped):
    """The note says once what this app calls a word's pieces, and, given the shipped vocabulary's size, sets it
    beside roberta-base's (GPT-2's merges), naming a model the tab's model box offers for the comparison."""
    rows = token_rows(shipped, "antidisestablishmentarianism", 64)
    assert sum(not t["special"] for t in rows["tokens"]) > 1  # a word in pieces, as the note says
    note = tokens_html(rows, shipped_vocab_size=shipped.get_vocab_size()).split('class="bpe-note">')[1]
    assert "cut into several tokens, which this app calls the word&#x27;s pieces (elsewhere: subwords)" in note
    # GPT-2's own size, and roberta-base's with its special tokens, as transformers' configs give them
    assert (f"RoBERTa reuses GPT-2&#x27;s tokenizer ({bpe_view.GPT2_MERGES:,} merges, "
            f"{transformers.GPT2Config().vocab_size:,} tokens; roberta-base has "
            f"{transformers.RobertaConfig().vocab_size:,}: its special tokens and 3 unused fillers)") in note
    assert f"with {shipped.get_vocab_size():,} tokens. Choose {bpe_view.COMPARE_WITH} in the model box" in note
    assert bpe_view.COMPARE_WITH in KINDS["mlm"].suggested
    assert "GPT-2" not in tokens_html(rows)  # no size to compare: no sentence


def test_html_escapes_user_text(shipped):
    text = 'a <script>alert("x")</script> & b'
    out = tokens_html(token_rows(shipped, text, 64))
    assert "<script" not in out and "</script" not in out and '"x"' not in out
    assert "␣&lt;" in out and "&amp;" in out and "&lt;s&gt;" in out  # the pieces, and the special tokens' names
    word = '<&">'  # one pre-token: the view is named by the word it replays, escaped
    out = merges_html(word, merge_steps(shipped, word))
    assert word not in out and "How “&lt;&amp;&quot;&gt;” is cut" in out
    lt = merges_html("<", merge_steps(shipped, "<"))
    assert "“&lt;”" in lt


def test_merges_html_table(shipped):
    steps = merge_steps(shipped, " tokenization")
    out = merges_html(" tokenization", steps)
    assert out.count("<tr>") == len(steps) + 1  # the header row, then one per step
    assert "start: one piece per byte (13 pieces)" in out
    assert "␣ + t → ␣t · rank #0" in out
    assert "bpe-new" in out and "lower rank" in out
    assert f"After {len(steps) - 1} merges no two" in out
    assert f"is {len(steps[-1]['pieces'])} tokens: ␣token · ization" in out
    emoji = merges_html("😀", merge_steps(shipped, "😀"))
    assert "No two neighbouring pieces form a learned merge: “😀” is 4 tokens: ⟨byte 0xF0⟩ ·" in emoji


def test_pretokens_for_a_picker(shipped):
    text = "The cat sat. The cat <mask> again, 😀!"
    found = pretokens(shipped, text)
    assert found == ["The", "Ġcat", "Ġsat", ".", "ĠThe", "Ġagain", ",", "ĠðŁĺĢ!"]  # symbols group together
    assert all(len(merge_steps(shipped, p)) >= 1 for p in found)
    assert len(pretokens(shipped, " ".join(f"w{i}" for i in range(1000)))) == bpe_view.MAX_PRETOKENS
    def pick(text):
        return pick_pretoken(shipped, pretokens(shipped, text))

    assert pick("The capital of France is antidisestablishmentarianism.") == "Ġantidisestablishmentarianism"
    assert pick("a  bb") == "Ġbb"  # a word rather than the whitespace before it
    assert pick("   ") == "ĠĠĠ"  # whitespace only: still something to show
    assert pick("") is None
    assert pick("a " + "x" * 60) == "a"  # never a word too long to replay


def test_summaries_read_well_for_unspaced_scripts_single_tokens_and_invisible_characters(shipped):
    rows = token_rows(shipped, "東京は日本の首都です。", 128)
    assert "1 word (split at spaces) → 33 tokens (3.00 per character)" in tokens_html(rows)
    # special tokens alone: no ratio of tokens to characters (it said "0 tokens (0.00 per character)")
    specials = tokens_html(token_rows(shipped, "<s></s><pad>", 128))
    assert "→ 0 tokens, plus 5 special tokens" in specials and "per character" not in specials
    joiner = token_rows(shipped, "a\u200db", 128)
    assert "⟨U+200D⟩" in tokens_html(joiner)
    assert "the whole word is one token: ␣The." in merges_html("ĠThe", merge_steps(shipped, "ĠThe"))
    assert "“,” is one token as it is: ,." in merges_html(",", merge_steps(shipped, ","))


def test_merges_html_says_what_the_vocabulary_is_made_of(shipped):
    merges = len(json.loads(shipped.to_str())["model"]["merges"])
    assert 256 + 5 + merges == shipped.get_vocab_size()
    out = merges_html("Ġcat", merge_steps(shipped, "Ġcat"), shipped)
    assert f"learned {merges:,} merges: its vocabulary of {shipped.get_vocab_size():,} is the 256 bytes" in out


def test_a_word_in_the_vocabularys_writing_that_is_several_words_is_named_as_replayed(shipped):
    """The reviewer's case: "ĠĠcat" read as bytes is two words (two spaces, then "cat"), so it is replayed as the
    text "ĠĠcat", the letters Ġ (the bytes 0xC4 0xA0 each); the view titled it "␣␣cat", which it did not replay."""
    steps = merge_steps(shipped, "ĠĠcat")
    assert steps[0]["pieces"][:2] == list(byte_level.to_byte_level("Ġ"))  # the letter's bytes, not a space
    out = merges_html("ĠĠcat", steps)
    assert "How “ĠĠcat” is cut" in out and "“ĠĠcat” is " in out and "␣␣cat" not in out


def test_the_tokens_view_names_whitespace_the_space_sign_does_not_show(shipped):
    """The reviewer's case: a no-break space and a thin space were blank chips, their spoken text blank too."""
    out = tokens_html(token_rows(shipped, "a\u00a0b \u2009c", 128))
    assert re.search('<span class="bpe-face" aria-hidden="true"[^>]*><span class="bpe-piece">⟨U\\+00A0 no-break '
                     'space⟩</span>', out)  # shown, hidden from screen readers, which hear:
    assert '<span class="bpe-sr">⟨U+2009 thin space⟩, id ' in out
    assert "\u00a0" not in out and "\u2009" not in out



class ScreenReaderText(HTMLParser):
    """What a screen reader is given of a view's chips (<li class="bpe-chip">) and "merge applied" cells: each
    one's attributes and its text outside `aria-hidden` parts, and every `title` with whether it is hidden."""
    VOID = {"br", "img", "hr", "input", "wbr"}

    def __init__(self, html_text: str):
        super().__init__()
        self.items, self.titles, self.stack = [], [], [(False, None)]  # (hidden, the chip or cell it is in)
        self.feed(html_text)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        hidden, item = self.stack[-1]
        hidden = hidden or attrs.get("aria-hidden") == "true"
        if {"bpe-chip", "bpe-merge"} & set((attrs.get("class") or "").split()):
            item = {"attrs": attrs, "said": ""}
            self.items.append(item)
        if "title" in attrs:
            self.titles.append((attrs["title"], hidden))
        if tag not in self.VOID:
            self.stack.append((hidden, item))

    def handle_endtag(self, tag):
        if tag not in self.VOID:
            self.stack.pop()

    def handle_data(self, data):
        hidden, item = self.stack[-1]
        if item is not None and not hidden:
            item["said"] += data


def test_a_chip_is_named_by_what_is_said_and_its_hover_is_hidden_from_screen_readers(shipped):
    """The reviewer's case: each chip's `title` (its vocabulary entry, "Ã¨me", and how often the pretraining text
    holds it) was on the <li>, which made it the item's accessible name: the byte-level alphabet said before every
    token. The hover is on the chip's hidden part now; the item has no name of its own, and what is said of it is
    its spoken text, in merge by merge's steps too."""
    text = "crème brûlée 🍮"
    only_bytes = set(byte_level.to_byte_level(" " + text)) - set(text)  # "Ã", "¨", "Ġ", "ð", ...: the alphabet's
    rows = token_rows(shipped, text, 64)
    for view, count in [(tokens_html(rows), len(rows["tokens"])),
                        (merges_html(" brûlée", merge_steps(shipped, " brûlée")), None)]:
        seen = ScreenReaderText(view)
        chips = [item for item in seen.items if "bpe-chip" in item["attrs"]["class"]]
        assert chips and (count is None or len(chips) == count)
        assert seen.titles and all(hidden for _, hidden in seen.titles), seen.titles  # the hovers, kept for a mouse
        for chip in chips:
            assert not {"title", "aria-label", "aria-labelledby"} & set(chip["attrs"]), chip
            assert not only_bytes & set(chip["said"]), chip["said"]
    said = [chip["said"] for chip in ScreenReaderText(tokens_html(rows)).items]
    assert said[0] == "<s>, special token, id 0"
    assert said[-1] == f"</s>, special token, id {shipped.token_to_id('</s>')}"
    assert f"space + br, id {shipped.token_to_id('Ġbr')}" in said, said
    assert any(s.startswith("⟨byte 0xF0⟩, of “🍮”, id ") for s in said), said


def test_a_merge_step_is_said_with_space_for_the_space_sign(shipped):
    """The reviewer's case: the "merge applied" cell was read raw, "␣ + c → ␣c · rank #15" ("open box", "right
    arrow", or nothing for "␣"); it is said as the chips beside it are: "space and c merge into space + c"."""
    steps = merge_steps(shipped, " café")
    out = merges_html(" café", steps)
    cells = [item["said"] for item in ScreenReaderText(out).items if "bpe-merge" in item["attrs"]["class"]]
    assert len(cells) == len(steps) and cells[0] == "start: one piece per byte (6 pieces)"
    first = steps[1]  # the lowest rank of all the word's pairs: the space and its letter
    assert first["merged"] == ["Ġ", "c"], first
    assert cells[1] == f"space and c merge into space + c, rank {first['rank']:,}"
    assert "⟨byte 0xC3⟩ and ⟨byte 0xA9⟩ merge into é, rank " in " ".join(cells)
    assert not any(sign in cell for cell in cells for sign in "␣→#"), cells
    assert f"␣ + c → ␣c · rank #{first['rank']:,}" in out  # what the eye reads is as it was
