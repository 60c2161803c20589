"""train.data, train.packing and train.tables: corpus readers, mixtures, FULL-SENTENCES packing, labelled data,
classifier normalisation."""
import errno
from pathlib import Path

import pytest
import torch

from train import data, imdb_sample, packing, tables

WIKITEXT = """ 
 = Homarus gammarus = 
 
 Homarus gammarus , known as the European lobster , is a species of <unk> lobster . It is 23 @-@ 38 cm long .
 It weighs 1 @,@ 500 g ( about 0 @.@ 7 kg ) and the " cutter " claw is sharp ; it 's used for tearing .
 
 = = Description = = 
 
 The <unk> is blue above , with spots .
 
 = Papa Stour = 
 
 Papa Stour is one of the Shetland Islands .
 
"""


@pytest.fixture
def wikitext_file(tmp_path):
    path = tmp_path / "wiki.train.tokens"
    path.write_text(WIKITEXT)
    return path


def test_wikitext_layout_is_split_cleaned_and_detokenized(wikitext_file):
    docs = data.read_documents(str(wikitext_file))
    assert len(docs) == 2
    first = docs[0].split("\n")
    assert first[0] == "Homarus gammarus"  # title kept as the first line, without = signs
    assert first[1] == ("Homarus gammarus, known as the European lobster, is a species of<unk> lobster. "
                        "It is 23-38 cm long.")
    assert first[2] == 'It weighs 1,500 g (about 0.7 kg) and the "cutter" claw is sharp; it\'s used for tearing.'
    assert first[3] == "Description"  # section heading kept as its own line
    assert first[4] == "The<unk> is blue above, with spots."
    assert docs[1] == "Papa Stour\nPapa Stour is one of the Shetland Islands."
    assert "@" not in "".join(docs)


def test_unk_drop_option(wikitext_file):
    docs = data.read_documents(str(wikitext_file), unk="drop")
    assert "<unk>" not in docs[0] and "a species of lobster." in docs[0]


def test_unk_encodes_as_one_special_token(wikitext_file, tokenizer):
    doc = data.read_documents(str(wikitext_file))[0]
    ids = tokenizer.encode(doc, add_special_tokens=False).ids
    unk_id, space_id = tokenizer.token_to_id("<unk>"), tokenizer.token_to_id("Ġ")
    assert ids.count(unk_id) == 2
    assert all(ids[i - 1] != space_id for i, t in enumerate(ids) if t == unk_id)


def test_one_document_per_line_and_folders(tmp_path):
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "a.txt").write_text("First review, it's great.\n\nSecond review (short).\n")
    (tmp_path / "corpus" / "b.txt").write_text(" = Title = \n Body text , spaced .\n")
    (tmp_path / "corpus" / "ignored.json").write_text("{}")
    docs = data.read_documents(str(tmp_path / "corpus" / "a.txt"))
    assert docs == ["First review, it's great.", "Second review (short)."]  # natural text untouched
    assert data.read_documents(str(tmp_path / "corpus")) == docs + ["Title\nBody text, spaced."]


def test_missing_and_empty_corpus_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.txt"):
        data.read_documents(str(tmp_path / "nope.txt"))
    empty = tmp_path / "empty.txt"
    empty.write_text("\n  \n")
    with pytest.raises(data.DataError, match="empty.txt.*no documents"):
        data.read_documents(str(empty))


def test_hub_spec_parsing():
    assert data.parse_hub_spec("hub:Salesforce/wikitext:wikitext-2-raw-v1:train") == (
        "Salesforce/wikitext", "wikitext-2-raw-v1", "train", None)
    assert data.parse_hub_spec("hub:stanfordnlp/sst2:default:validation") == (
        "stanfordnlp/sst2", None, "validation", None)
    assert data.parse_hub_spec("hub:stanfordnlp/imdb") == ("stanfordnlp/imdb", None, "train", None)


def test_a_hub_specs_column_is_the_labelled_text_column(monkeypatch):
    """hub:NAME:CONFIG:SPLIT:COLUMN for --train/--dev: COLUMN is the text column (it was ignored there), unless
    --text-column names one."""
    datasets = pytest.importorskip("datasets")
    table = datasets.Dataset.from_dict({"text": ["wrong", "column"], "review": ["Great.", "Dull."], "label": [1, 0]})
    monkeypatch.setattr(tables, "load_hub", lambda spec: (table, data.parse_hub_spec(spec)[3]))
    assert tables.read_labeled("hub:someone/reviews:default:train:review")[:2] == (["Great.", "Dull."], [1, 0])
    assert tables.read_labeled("hub:someone/reviews:default:train")[0] == ["wrong", "column"]
    assert tables.read_labeled("hub:someone/reviews:default:train:review", text_column="text")[0] == ["wrong", "column"]


def test_parse_mixture():
    assert data.parse_mixture("a/b.txt") == [("a/b.txt", 1.0)]
    assert data.parse_mixture("../x/wiki.train.tokens=0.5, ../y=0.5") == [
        ("../x/wiki.train.tokens", 0.5), ("../y", 0.5)]
    assert data.parse_mixture("hub:Salesforce/wikitext:wikitext-2-raw-v1:train=2") == [
        ("hub:Salesforce/wikitext:wikitext-2-raw-v1:train", 2.0)]
    with pytest.raises(ValueError, match="not a number"):
        data.parse_mixture("a=half")
    with pytest.raises(ValueError, match="positive"):
        data.parse_mixture("a=0")


def test_a_mixture_item_that_is_an_existing_path_is_one_source(tmp_path):
    """`--corpus /x/lr=2e-4/corpus.txt` was "weight '2e-4/corpus.txt' of '/x/lr' is not a number", and a path with
    a comma was cut in two: a source that exists as it is written is that path."""
    for name in ("lr=2e-4", "a,b", "w=2"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "corpus.txt").write_text("one document\n")
    assert data.parse_mixture(f"{tmp_path}/lr=2e-4/corpus.txt") == [(f"{tmp_path}/lr=2e-4/corpus.txt", 1.0)]
    assert data.parse_mixture(f"{tmp_path}/a,b/corpus.txt") == [(f"{tmp_path}/a,b/corpus.txt", 1.0)]
    assert data.parse_mixture(f"{tmp_path}/w=2") == [(f"{tmp_path}/w=2", 1.0)]  # the folder, not {tmp_path}/w at 2
    assert data.parse_mixture(f"{tmp_path}/lr=2e-4/corpus.txt=0.3,{tmp_path}/w=2=0.7") == [
        (f"{tmp_path}/lr=2e-4/corpus.txt", 0.3), (f"{tmp_path}/w=2", 0.7)]
    data.check_text_source(f"{tmp_path}/lr=2e-4/corpus.txt", "--corpus")  # the path as it is, there
    assert data.read_documents(f"{tmp_path}/a,b/corpus.txt") == ["one document"]


def test_a_source_named_twice_in_a_mixture_is_refused(tmp_path, monkeypatch):
    """`a.txt=1,a.txt=2` (or `./a.txt` and `a.txt`, one file) read it twice and silently weighed it 3: refused, with
    what to do. Local paths compare as the files they name, hub: specs as written."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.txt").write_text("one document\n")
    for spec in ("a.txt=1,a.txt=2", "./a.txt=1,a.txt", f"{tmp_path}/a.txt,b.txt,a.txt", "hub:x/y=1,hub:x/y=2"):
        with pytest.raises(ValueError, match="is named twice.*give it once, with the weight you want"):
            data.parse_mixture(spec)
    with pytest.raises(ValueError, match=r"--corpus: .*'a.txt' is named twice \(as './a.txt' and 'a.txt'\)"):
        data.check_text_source("./a.txt,a.txt", "--corpus")
    assert data.parse_mixture("a.txt,hub:x/y,hub:x/z") == [("a.txt", 1.0), ("hub:x/y", 1.0), ("hub:x/z", 1.0)]


def _lines_file(path, prefix, n, length):
    path.write_text("".join(f"{prefix}{i} " + "x" * length + "\n" for i in range(n)))
    return str(path)


def test_mixture_proportions_and_determinism(tmp_path):
    a = _lines_file(tmp_path / "a.txt", "alpha", 400, 50)
    b = _lines_file(tmp_path / "b.txt", "beta", 400, 100)
    spec = f"{a}=0.25,{b}=0.75"
    docs, stats = data.load_mixture_with_stats(spec, char_budget=20_000, seed=1)
    chars_a = sum(len(d) for d in docs if d.startswith("alpha"))
    chars_b = sum(len(d) for d in docs if d.startswith("beta"))
    assert abs(chars_a / (chars_a + chars_b) - 0.25) < 0.02
    assert abs(chars_a + chars_b - 20_000) < 300
    assert [s["passes"] for s in stats] == [1, 1]
    assert data.load_mixture_with_stats(spec, char_budget=20_000, seed=1)[0] == docs
    assert data.load_mixture_with_stats(spec, char_budget=20_000, seed=2)[0] != docs
    # without a budget: the most constraining source is used exactly once, the others in proportion
    docs, _ = data.load_mixture_with_stats(f"{a}=0.5,{b}=0.5", seed=0)
    assert sum(d.startswith("alpha") for d in docs) == 400
    # weights that are the sources' sizes (in any unit, rounded): every document once, none twice
    for unit in (1e3, 3e2, 7):
        weights = [round(sum(map(len, data.read_documents(str(f)))) / unit, 2) for f in (a, b)]
        docs, stats = data.load_mixture_with_stats(f"{a}={weights[0]},{b}={weights[1]}", seed=0)
        assert [s["passes"] for s in stats] == [1, 1] and len(docs) == len(set(docs)) >= 790
    # a source smaller than its share is repeated, and the stats say so
    _, stats = data.load_mixture_with_stats(f"{a}=0.9,{b}=0.1", char_budget=100_000)
    assert stats[0]["passes"] > 1 and stats[1]["passes"] == 1
    # ... unless repeating is off (a tokenizer's text): then the budget stops where the first source runs out
    docs, stats = data.load_mixture_with_stats(f"{a}=0.9,{b}=0.1", char_budget=100_000, repeat=False)
    assert [s["passes"] for s in stats] == [1, 1] and len(docs) == len(set(docs))
    assert sum(d.startswith("alpha") for d in docs) == 400  # all of a, once
    assert data.load_mixture_with_stats(spec, char_budget=20_000, seed=1, repeat=False)[0] == \
        data.load_mixture_with_stats(spec, char_budget=20_000, seed=1)[0]  # a budget that fits: as before


def test_a_cut_budget_is_a_cap(tmp_path):
    """`cut` (train.pretrain --corpus-chars): at most the budget, each source's last document cut at its share
    (`--corpus-chars 200000` read 212,286 characters); the same documents otherwise, in the same order."""
    a = _lines_file(tmp_path / "a.txt", "alpha", 400, 50)
    b = _lines_file(tmp_path / "b.txt", "beta", 400, 100)
    for spec, budget in [(f"{a}=0.25,{b}=0.75", 20_001), (f"{a}=0.25,{b}=0.75", 333), (f"{a}=0.9,{b}=0.1", 100_000),
                         (a, 1_030)]:
        whole, whole_stats = data.load_mixture_with_stats(spec, char_budget=budget, seed=1)
        docs, stats = data.load_mixture_with_stats(spec, char_budget=budget, seed=1, cut=True)
        total = sum(map(len, docs))
        assert sum(map(len, whole)) > budget >= total >= budget - len(stats), (spec, budget)  # whole docs go past
        assert total == sum(s["chars"] for s in stats)
        assert [s["passes"] for s in stats] == [s["passes"] for s in whole_stats]
        if len(docs) == len(whole):
            assert all(w.startswith(d) for w, d in zip(whole, docs))
            assert sum(d != w for d, w in zip(docs, whole)) <= len(stats)  # one cut document per source at most
        else:  # a source's documents ended exactly at its share rounded down (the paths' spelling seeds the order:
            # about 1 tmp_path in 150 here): there `cut` takes no further one, the whole run one more, which reorders
            # the mixture's shuffle
            assert len(whole) - len(stats) <= len(docs) < len(whole)
            assert all(any(w.startswith(d) for w in whole) for d in docs)
    # no budget: every document whole, as without `cut`
    assert data.load_mixture_with_stats(f"{a}=0.5,{b}=0.5", cut=True) == \
        data.load_mixture_with_stats(f"{a}=0.5,{b}=0.5")


def test_pack_sequences_full_sentences(tokenizer, sentences, tmp_path):
    docs = [" ".join(sentences[i:i + 3]) for i in range(0, 30, 3)]
    max_length = 16
    rows = packing.pack_sequences(docs, tokenizer, max_length)
    bos, eos, pad = (tokenizer.token_to_id(t) for t in ("<s>", "</s>", "<pad>"))
    assert rows.dtype == torch.long and rows.shape[1] == max_length
    assert (rows[:, 0] == bos).all()
    assert (rows[:-1, -1] == eos).all()
    # the body of each row, concatenated, is exactly the documents' tokens joined by </s>
    stream = []
    for i, doc in enumerate(docs):
        stream += ([eos] if i else []) + tokenizer.encode(doc, add_special_tokens=False).ids
    last = rows[-1].tolist()
    n_pad = last.count(pad)
    bodies = [r[1:-1] for r in rows[:-1].tolist()] + [last[1:max_length - n_pad - 1]]
    assert sum(bodies, []) == stream
    assert last[max_length - n_pad - 1] == eos and last[max_length - n_pad:] == [pad] * n_pad
    assert rows.shape[0] == -(-len(stream) // (max_length - 2))


def test_special_tokens_written_out_in_pretraining_text_are_read_as_text(tokenizer):
    """The reviewer's case: an HTML strikethrough in a scraped review (`<s>$20</s>`) became sequence boundaries in
    the middle of a row, a written "<pad>" a token the model never attends to, a "<mask>" an input mask with no
    target. They are read as the text they are; WikiText's `<unk>` stays the one special token (`_clean_line`)."""
    specials = {tokenizer.token_to_id(t) for t in ("<s>", "</s>", "<pad>", "<mask>", "<unk>")}
    text = "Prices: <s>$20</s> now, see <pad> and <mask> here."
    (ids,) = packing.tokenize_documents([text], tokenizer)
    assert not specials & set(ids.tolist())
    assert tokenizer.decode(ids.tolist(), skip_special_tokens=False) == text
    rows = packing.pack_sequences([text, "the cat"], tokenizer, 64)
    body = rows[0, 1:].tolist()
    assert body.count(tokenizer.token_to_id("</s>")) == 2  # the end of each document, and no other
    # <unk> (glued to the word before, as `_clean_line` writes it) is one special token, as the tokenizer reads it
    wiki = ["a species of<unk> lobster", "<unk>", "x<unk><unk> y"]
    tokenized = [ids.tolist() for ids in packing.tokenize_documents(wiki, tokenizer)]
    assert tokenized == [e.ids for e in tokenizer.encode_batch(wiki, add_special_tokens=False)]
    assert [t.count(tokenizer.token_to_id("<unk>")) for t in tokenized] == [1, 1, 2]


def test_the_shipped_corpora_are_packed_as_before(shared_file):
    """WikiText-2's validation text, with its <unk>s and none of the other special tokens written out, is
    tokenized exactly as the tokenizer's own reading of special tokens gave it (the shipped models' data)."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(Path(__file__).resolve().parents[1] / "assets" / "mini-roberta-mlm" /
                                        "tokenizer.json"))
    documents = data.read_documents(str(shared_file("wikitext-2/wiki.valid.tokens")))
    assert not any(t in d for d in documents for t in data.SPECIAL_TOKENS_WRITTEN)
    assert sum(d.count(data.UNK) for d in documents) > 1000
    before = [e.ids for e in tokenizer.encode_batch(documents, add_special_tokens=False)]
    assert [ids.tolist() for ids in packing.tokenize_documents(documents, tokenizer)] == before


def test_labelled_texts_with_special_tokens_written_out_are_noted(tmp_path, capsys):
    """Fine-tuning reads a labelled text as a classifier reads it in use, a written-out "<s>" as the special token
    (as `roberta.pipeline` and the app do): a note says how many texts hold one, and which."""
    path = tmp_path / "reviews.tsv"
    path.write_text("sentence\tlabel\nwas <s>$20</s> now $10\t1\na fine film\t1\nsee <mask>\t0\n")
    texts, _, _ = tables.read_labeled(str(path))
    assert texts[0] == "was <s>$20</s> now $10"
    err = capsys.readouterr().err
    assert f"note: {path}: 2 of 3 texts hold <s>, </s>, <mask> written out; a classifier reads each as" in err
    (tmp_path / "plain.tsv").write_text("sentence\tlabel\na fine film\t1\n")
    tables.read_labeled(str(tmp_path / "plain.tsv"))
    assert "written out" not in capsys.readouterr().err


def test_pack_sequences_cache(tokenizer, sentences, tmp_path, monkeypatch):
    docs = sentences[:50]
    first = packing.pack_sequences(docs, tokenizer, 32, cache_dir=tmp_path)
    files = list(tmp_path.glob("packed-*.safetensors"))
    assert len(files) == 1
    # a cache hit does not tokenize again
    monkeypatch.setattr(packing, "tokenize_documents", lambda *a, **k: pytest.fail("tokenized again"))
    assert torch.equal(packing.pack_sequences(docs, tokenizer, 32, cache_dir=tmp_path), first)
    monkeypatch.undo()
    packing.pack_sequences(docs, tokenizer, 24, cache_dir=tmp_path)  # another max_length: another file
    packing.pack_sequences(docs[:-1], tokenizer, 32, cache_dir=tmp_path)  # other documents: another file
    assert len(list(tmp_path.glob("packed-*.safetensors"))) == 3


def test_a_damaged_or_unwritable_packing_cache_is_a_warning_not_a_traceback(tokenizer, sentences, tmp_path,
                                                                           monkeypatch, capsys):
    """The packing cache is optional, yet a truncated entry was a SafetensorError traceback on every later run over
    the same data (until the hashed file was found and deleted), and a read-only or full cache folder was one after
    the whole corpus was tokenized, leaving its .tmpPID file. Now a damaged entry is named, packed again and
    replaced; a failed write is named, its temporary file removed, and the rows are returned all the same."""
    from safetensors import SafetensorError
    from safetensors import torch as safetensors_torch

    docs = sentences[:50]
    first = packing.pack_sequences(docs, tokenizer, 32, cache_dir=tmp_path)
    (entry,) = tmp_path.glob("packed-*.safetensors")
    entry.write_bytes(entry.read_bytes()[:100])  # truncated
    assert torch.equal(packing.pack_sequences(docs, tokenizer, 32, cache_dir=tmp_path), first)
    err = capsys.readouterr().err
    assert f"warning: the packing cache {entry} cannot be read" in err and "packing again" in err
    assert torch.equal(safetensors_torch.load_file(str(entry))["input_ids"].long(), first)  # replaced by a good one
    safetensors_torch.save_file({"input_ids": torch.zeros(2, 8)}, str(entry))  # readable, but not rows of 32 tokens
    assert torch.equal(packing.pack_sequences(docs, tokenizer, 32, cache_dir=tmp_path), first)
    assert "not packed rows of 32 tokens" in capsys.readouterr().err

    def full_disk(tensors, path, metadata=None):
        Path(path).write_bytes(b"half")
        raise SafetensorError("Error while serializing: I/O error: No space left on device (os error 28)")

    monkeypatch.setattr(safetensors_torch, "save_file", full_disk)
    other = tmp_path / "other"
    assert torch.equal(packing.pack_sequences(docs, tokenizer, 32, cache_dir=other), first)
    err = capsys.readouterr().err
    assert "warning: could not write the packing cache" in err and "No space left on device" in err
    assert list(other.iterdir()) == []  # no temporary file left
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    assert torch.equal(packing.pack_sequences(docs, tokenizer, 32, cache_dir=blocked / "cache"), first)  # no folder
    assert "warning: could not write the packing cache" in capsys.readouterr().err

    def full_disk_as_os_error(tensors, path, metadata=None):  # named once: not "(could not write X (...))"
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(safetensors_torch, "save_file", full_disk_as_os_error)
    assert torch.equal(packing.pack_sequences(docs, tokenizer, 32, cache_dir=tmp_path / "third"), first)
    err = capsys.readouterr().err
    assert err.count("could not write") == 1 and "(No space left on device); going on without it" in err


def test_read_labeled_tsv_and_csv(tmp_path):
    tsv = tmp_path / "sst2" / "dev.tsv"
    tsv.parent.mkdir()
    tsv.write_text('sentence\tlabel\nit \'s a " good " film .\t1\ndoes n\'t work\t0\n')
    texts, labels, id2label = tables.read_labeled(str(tsv))
    assert texts == ['it \'s a " good " film .', "does n't work"] and labels == [1, 0]
    assert id2label == {0: "negative", 1: "positive"}
    csv_file = tmp_path / "topics.csv"
    csv_file.write_text('id,body,topic\n1,"Hello, world",sport\n2,Plain text,news\n')
    texts, labels, id2label = tables.read_labeled(str(csv_file), text_column="body", label_column="topic",
                                                label_names=["news", "sport"])
    assert texts == ["Hello, world", "Plain text"] and labels == [1, 0] and id2label == {0: "news", 1: "sport"}


def test_read_labeled_errors_name_file_and_line(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing.tsv"):
        tables.read_labeled(str(tmp_path / "missing.tsv"))
    empty = tmp_path / "empty.tsv"
    empty.write_text("")
    with pytest.raises(data.DataError, match="empty.tsv: empty file"):
        tables.read_labeled(str(empty))
    corpus = tmp_path / "wiki.train.tokens"  # a text corpus given as labelled data: it was "empty file"
    corpus.write_text(" \n = Valkyria Chronicles = \n")
    with pytest.raises(data.DataError, match="wiki.train.tokens: its first line is blank"):
        tables.read_labeled(str(corpus))
    wrong = tmp_path / "wrong.tsv"
    wrong.write_text("review\tstars\ngood\t1\n")
    with pytest.raises(data.DataError, match=r"wrong.tsv: no text column.*columns present: \['review', 'stars'\]"):
        tables.read_labeled(str(wrong))
    bad = tmp_path / "bad.tsv"
    bad.write_text("sentence\tlabel\ngood\t1\nbad\tnegative\n")
    with pytest.raises(data.DataError, match="bad.tsv line 3: label 'negative' is not an int"):
        tables.read_labeled(str(bad))
    with pytest.raises(data.DataError, match=r"bad.tsv line 2: label 1 is not in the label set \[0\]"):
        tables.read_labeled(str(bad), label_names=["only"])
    blank = tmp_path / "blank.tsv"
    blank.write_text("sentence\tlabel\nfine\t0\n \t1\n")
    with pytest.raises(data.DataError, match="blank.tsv line 3: empty text"):
        tables.read_labeled(str(blank))


def test_non_utf8_files_name_the_file_and_line(tmp_path):
    # issue 13: these ended in a UnicodeDecodeError without the file; a long file is decoded in chunks, so
    # the bad byte sits on a later line than the one being parsed when the error comes
    corpus = tmp_path / "latin1.txt"
    corpus.write_bytes(("plain line\n" * 3000).encode() + "caf\xe9 au lait\n".encode("latin-1"))
    with pytest.raises(data.DataError, match=r"latin1.txt line 3001: not UTF-8 text \(byte 0xe9 at column 4\)"):
        data.read_documents(str(corpus))
    tsv = tmp_path / "latin1.tsv"
    tsv.write_bytes(("text\tlabel\n" + "good film\t1\n" * 2000).encode() + "na\xefve\t0\n".encode("latin-1"))
    for read in (lambda: tables.read_labeled(str(tsv)), lambda: imdb_sample.imdb_sample(str(tsv), n=1)):
        with pytest.raises(data.DataError, match="latin1.tsv line 2002: not UTF-8 text"):
            read()
    header = tmp_path / "header.tsv"
    header.write_bytes("s\xe9ntence\tlabel\n".encode("latin-1"))
    with pytest.raises(data.DataError, match="header.tsv line 1: not UTF-8"):
        tables.read_labeled(str(header))
    bom = tmp_path / "bom.tsv"
    bom.write_bytes("\ufeffsentence\tlabel\nfine\t1\n".encode())  # a byte-order mark is not part of the header
    assert tables.read_labeled(str(bom))[:2] == (["fine"], [1])


def test_a_byte_order_mark_is_not_text(tmp_path):
    """A UTF-8 byte-order mark was kept at the start of a text corpus (TSV and CSV files dropped it): a WikiText
    file lost its first heading, train.tapt_corpus wrote U+FEFF into imdb-lower.txt, and train.evaluate refused a
    checks file ("got ['\\ufeffcategory', ...]")."""
    from train import evaluate, tapt_corpus

    wiki = tmp_path / "wiki.txt"
    wiki.write_bytes("\ufeff = Alpha = \n Alpha text .\n = Beta = \n Beta text .\n".encode())
    assert data.read_documents(str(wiki)) == ["Alpha\nAlpha text.", "Beta\nBeta text."]
    unsup, sst2 = tmp_path / "unsup.txt", tmp_path / "train.tsv"
    unsup.write_bytes("\ufeffA great film.\n".encode())
    sst2.write_text("sentence\tlabel\na good and long enough sentence here\t1\n")
    tapt_corpus.write_corpora(tmp_path / "tapt", str(unsup), str(sst2), min_words=2)
    assert (tmp_path / "tapt" / "imdb-lower.txt").read_text(encoding="utf-8") == "a great film.\n"
    checks = tmp_path / "checks.tsv"
    checks.write_bytes("\ufeffcategory\tsentence\texpected\nx\tA fine film.\tpositive\n".encode())
    assert evaluate.read_checks(checks) == [{"category": "x", "sentence": "A fine film.", "expected": "positive"}]


@pytest.mark.parametrize("reader", ["checks", "fill-mask probe", "analogy probe"])
def test_the_small_tables_skip_comments_and_blank_lines_alike(reader, tmp_path):
    """train.evaluate's checks, train.fill_mask_probe's and scripts.analogy_probe's probes are one kind of file
    (train.tables.read_table): a '#' line or a blank one, above the header too, is skipped by all three (the probes
    read a comment as a row), and a row's line number counts every line."""
    from scripts import analogy_probe
    from train import evaluate, fill_mask_probe

    columns, row, read = {
        "checks": (evaluate.CHECK_COLUMNS, ("neg", "This is <mask>.", "negative"), evaluate.read_checks),
        "fill-mask probe": (fill_mask_probe.COLUMNS, ("capitals", "Paris is in <mask>.", "France"),
                            fill_mask_probe.read_probe),
        "analogy probe": (analogy_probe.COLUMNS, ("capital", "Paris", "France", "Berlin", "Germany"),
                          analogy_probe.read_probe)}[reader]
    table = tmp_path / "table.tsv"
    table.write_text("# a table of my own\n\n" + "\t".join(columns) + "\n# one row\n\n" + "\t".join(row) + "\n")
    assert [tuple(r.values()) if isinstance(r, dict) else r for r in read(table)] == [row]
    table.write_text("\t".join(columns) + "\n# a note\n" + "\t".join(row[:-1]) + "\t \n")
    with pytest.raises(data.DataError, match=f"line 3: no {columns[-1]}; each row needs"):
        read(table)


def test_a_small_table_row_with_more_fields_than_its_header_is_refused(tmp_path):
    """A third field (a note, or a sentence that holds a tab) was dropped without a word; the row is refused."""
    table = tmp_path / "checks.tsv"
    table.write_text("sentence\texpected\ngreat film\tpositive\t(a note)\n")
    with pytest.raises(data.DataError, match=r"checks.tsv line 2: 3 fields, the header has 2$"):
        tables.read_table(table, ("sentence", "expected"), "checks")
    table.write_text("sentence\texpected\ngreat film\tpositive\n")  # as many as the header: read
    assert tables.read_table(table, ("sentence", "expected"), "checks") == [
        (2, {"sentence": "great film", "expected": "positive"})]


def test_a_gzip_file_is_named_as_one(tmp_path):
    """Was "line 1: not UTF-8 text (byte 0x8b at column 2); save the file as UTF-8"; xz is what is read."""
    import gzip

    for name, text in (("corpus.txt.gz", "a document\n"), ("train.tsv.gz", "sentence\tlabel\nfine\t1\n")):
        (tmp_path / name).write_bytes(gzip.compress(text.encode()))
    with pytest.raises(data.DataError, match=r"corpus.txt.gz: a gzip file, which is not read; .*xz") as info:
        data.read_documents(str(tmp_path / "corpus.txt.gz"))
    assert "UTF-8" not in str(info.value)
    with pytest.raises(data.DataError, match=r"train.tsv.gz: a gzip file, which is not read"):
        tables.read_labeled(str(tmp_path / "train.tsv.gz"))


def test_imdb_sample_is_fixed(tmp_path):
    path = tmp_path / "imdb.tsv"
    path.write_text("text\tlabel\n" + "".join(f"Review {i}, \"quoted\".\t{i % 2}\n" for i in range(50)))
    texts, labels = imdb_sample.imdb_sample(str(path), n=10, seed=3)
    assert len(texts) == 10 and imdb_sample.imdb_sample(str(path), n=10, seed=3) == (texts, labels)
    assert all(int(t.split()[1].rstrip(",")) % 2 == y for t, y in zip(texts, labels))
    assert imdb_sample.imdb_sample(str(path), n=10, seed=4)[0] != texts


def test_a_labelled_file_is_pretraining_text_without_its_evaluation_sample(tmp_path):
    import lzma

    texts = [f"Review {i}, \"quoted\"." for i in range(1500)]
    sampled = imdb_sample.evaluation_sample(len(texts))
    copied = next(i for i in range(len(texts)) if i not in sampled)
    texts[copied] = texts[sampled[0]]  # a review the sample picks, repeated at a row it does not pick
    path = tmp_path / "imdb.tsv"
    path.write_text("text\tlabel\n" + "".join(f"{t}\t{i % 2}\n" for i, t in enumerate(texts)))
    held_out = set(imdb_sample.imdb_sample(str(path))[0])  # what train.evaluate --imdb and fine-tuning score
    assert len(held_out) == 1000
    documents = data.read_documents(str(path))
    assert not held_out & set(documents) and len(documents) == 499  # not even the repeated copy
    assert documents == [t for t in texts if t not in held_out]  # every other text, in order, no label column
    packed = tmp_path / "imdb.tsv.xz"  # as the GPU upload carries it
    packed.write_bytes(lzma.compress(path.read_bytes()))
    assert data.read_documents(str(packed)) == documents
    mixed, stats = data.load_mixture_with_stats(f"{path}=1")
    assert sorted(mixed) == sorted(documents) and stats[0]["passes"] == 1


# ----- the real shared files (skipped where absent: `shared_file`) -----
def test_real_wikitext_valid_loads(tmp_path, shared_file):
    src = shared_file("wikitext-2/wiki.valid.tokens")
    head = tmp_path / "head.tokens"
    head.write_text("".join(src.open(encoding="utf-8").readlines()[:200]), encoding="utf-8")
    docs = data.read_documents(str(head))
    assert docs[0].startswith("Homarus gammarus\n")
    text = "\n".join(docs)
    assert " @-@ " not in text and " , " not in text and " <unk>" not in text


def test_real_sst2_and_imdb_load(shared_file):
    texts, labels, id2label = tables.read_labeled(str(shared_file("sst2/dev.tsv")))
    assert len(texts) == 872 and set(labels) == {0, 1} and id2label == {0: "negative", 1: "positive"}
    imdb = str(shared_file("imdb/train.tsv"))
    texts, labels = imdb_sample.imdb_sample(imdb, n=200, seed=0)
    assert len(texts) == 200 and set(labels) == {0, 1} and min(map(len, texts)) > 0
    documents = data.read_documents(imdb)  # pretraining text: the sample left out
    assert len(documents) == 23_989 and not set(imdb_sample.imdb_sample(imdb)[0]) & set(documents)  # 2 near-copies too


def test_copies_of_the_imdb_evaluation_sample_are_left_out_of_training_text(tmp_path, capsys, monkeypatch):
    words = "plot acting score camera scene ending story music cast script light pace".split()
    reviews = [" ".join(f"{words[(i * 7 + j) % 12]}{i}x{j}" for j in range(120)) for i in range(1200)]
    imdb = tmp_path / "imdb"
    imdb.mkdir()
    (imdb / "train.tsv").write_text("text\tlabel\n" + "".join(f"{t}\t{i % 2}\n" for i, t in enumerate(reviews)))
    picked = imdb_sample.imdb_sample(str(imdb / "train.tsv"))[0]
    exact = "  " + picked[0].upper().replace(" ", "   ") + " "  # whitespace and case apart, the same review
    near = picked[1].replace("x60 ", "y60 ", 1) + " and more"  # a word changed (8 of 113 runs), extended
    unrelated = reviews[[i for i, t in enumerate(reviews) if t not in picked][0]]
    (imdb / "unsup.txt").write_text(f"{exact}\n{near}\n{unrelated}\n")
    assert exact in imdb_sample.SampleCopies(picked) and near in imdb_sample.SampleCopies(picked)
    assert data.read_documents(str(imdb / "unsup.txt")) == [unrelated]
    assert "2 lines left out" in capsys.readouterr().err
    # train.tsv and unsup.txt in one corpus: one index of the sample's shingles (1.5 s for IMDB's)
    built, build = [], imdb_sample.SampleCopies.__init__
    def counted_build(self, sample):
        built.append(len(sample))
        build(self, sample)

    monkeypatch.setattr(imdb_sample.SampleCopies, "__init__", counted_build)
    imdb_sample.imdb_sample_copies.cache_clear()
    imdb_sample._sample_copies.cache_clear()
    documents = data.read_documents(str(imdb / "train.tsv")) + data.read_documents(str(imdb / "unsup.txt"))
    assert built == [1000] and unrelated in documents and not set(picked) & set(documents)
    capsys.readouterr()
    (imdb / "train.tsv").unlink()  # no sample to draw: everything is kept, with a warning
    imdb_sample.imdb_sample_copies.cache_clear()
    assert len(data.read_documents(str(imdb / "unsup.txt"))) == 3
    assert "no IMDB train.tsv" in capsys.readouterr().err


def test_near_copies_of_sample_rows_are_left_out_of_a_labelled_file(tmp_path):
    reviews = [" ".join(f"w{i}x{j}" for j in range(30)) for i in range(1300)]
    sampled = imdb_sample.evaluation_sample(len(reviews))
    free = [i for i in range(len(reviews)) if i not in sampled]
    reviews[free[0]] = reviews[sampled[0]] + " and more"  # a near-copy: the same review, extended
    path = tmp_path / "imdb.tsv"
    path.write_text("text\tlabel\n" + "".join(f"{t}\t{i % 2}\n" for i, t in enumerate(reviews)))
    documents = data.read_documents(str(path))
    assert len(documents) == len(free) - 1 and reviews[free[1]] in documents


def test_messages_name_the_option_that_fixes_them(tmp_path):
    csv_file = tmp_path / "reviews.csv"
    csv_file.write_text("review,sentiment\ngood,2\n")
    with pytest.raises(data.DataError, match="pass --text-column NAME"):
        tables.read_labeled(str(csv_file))
    with pytest.raises(data.DataError, match=r"\[0, 1\] \(the labels negative,positive, --labels' default\); pass "
                                             "--labels"):
        tables.read_labeled(str(csv_file), "review", "sentiment", ["negative", "positive"])
    assert "hub:stanfordnlp/sst2" in str(data.missing_data("stanfordnlp/sst2", "--train"))
    tsv = tmp_path / "pandas.tsv"
    tsv.write_text("text\tlabel\n" + '"he said ""wow"""\t1\n' * 12 + '"two\nlines"\t0\n')
    with pytest.raises(data.DataError, match="without quoting"):
        tables.read_labeled(str(tsv))


def test_a_label_outside_the_label_set_says_the_default_once_and_only_for_the_default(tmp_path):
    """A file of three labels read with --labels' default said it twice: "not in the label set [0, 1] (the labels
    negative,positive, --labels' default); pass --labels with your label names in id order (default
    negative,positive)"; a file read with --labels of one's own was told of a default that was not its label set; and
    the IMDB sample, read without a label set (--labels does not choose how it is read), was told to pass --labels.
    The default is said once, where it is the label set; --labels is advised where it sets the label set."""
    def error(label, label_names) -> str:
        path = tmp_path / "labels.tsv"
        path.write_text(f"sentence\tlabel\ngood\t0\nbad\t{label}\n")
        with pytest.raises(data.DataError) as err:
            tables.read_labeled(str(path), label_names=label_names)
        return str(err.value)

    fix = "pass --labels with your label names in id order"
    assert error("2", ["negative", "positive"]).endswith(
        f"label 2 is not in the label set [0, 1] (the labels negative,positive, --labels' default); {fix}")
    assert error("neutral", ["negative", "positive"]).endswith(
        f"label 'neutral' is not an int; expected an int or one of ['negative', 'positive'] (--labels' default); {fix}")
    for label in ("3", "tech"):  # a label set of one's own: no default to speak of
        said = error(label, ["world", "sports", "business"])
        assert said.endswith(fix) and "default" not in said, said
    for label in ("pos", "-1"):  # no label set: ids
        said = error(label, None)
        assert "--labels" not in said and ("expected an int" in said or "ints >= 0" in said), said


def test_a_guessed_layout_is_noted(capsys):
    data.documents_from_lines(["Il a dit : bonjour ; puis il est parti ."] * 3, source="fr.txt")
    assert "fr.txt: read detokenized" in capsys.readouterr().err


def _shingle_count_verdicts(sample, texts):
    """What the near-copy test decides counting every shingle of every text (its definition)."""
    fold, shingles = imdb_sample._folded, imdb_sample._shingles
    folded = [fold(t) for t in sample]
    decisions = []
    for text in texts:
        mine = set(shingles(fold(text)))
        decisions.append(fold(text) in folded or any(
            len(mine & set(shingles(f))) >= max(1, -(-9 * len(set(shingles(f))) // 10)) for f in folded))
    return decisions


def test_the_near_copy_test_finds_what_counting_every_shingle_finds():
    """`SampleCopies` counts a text's shingles only when it holds one of a review's anchors (faster on IMDB's
    files: 2.5x on the lookups, measured on a shared 2-core machine), and the same answers as counting them all,
    copies at the 90% boundary included."""
    import random

    rng = random.Random(0)
    vocabulary = [f"w{i}" for i in range(60)] + ["the", "a", "film"] * 20
    sample = [" ".join(rng.choice(vocabulary) for _ in range(rng.randint(3, 60))) for _ in range(40)]
    texts = []
    for review in sample:
        words = review.split()
        for changed in range(0, 6):  # 0 to 5 words changed: near-copies on both sides of 90%
            edited = list(words)
            for place in rng.sample(range(len(words)), min(changed, len(words))):
                edited[place] = "zz"
            texts += [" ".join(edited), " ".join(edited[: len(edited) // 2 + 3]), "more " + " ".join(edited)]
    texts += [" ".join(rng.choice(vocabulary) for _ in range(40)) for _ in range(200)]
    copies = imdb_sample.SampleCopies(sample)
    verdicts = [text in copies for text in texts]
    assert verdicts == _shingle_count_verdicts(sample, texts)
    assert 0 < sum(verdicts) < len(texts)


def test_the_hub_hint_is_only_for_names_that_read_as_a_hub_dataset(tmp_path, monkeypatch):
    """"a Hub dataset is written hub:..." was said of every missing path with one slash (data/dev.tsv)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    assert "hub:stanfordnlp/imdb" in str(data.missing_data("stanfordnlp/imdb", "--train"))
    for local in ("data/dev.tsv", "corpora/wiki.txt", "mine/unsup.txt.xz", "runs/x"):
        assert "hub:" not in str(data.missing_data(local, "--train")), local


def test_the_csv_quoting_warning_is_said_once_a_file(tmp_path, capsys):
    """A recipe read one file three times and warned three times."""
    tsv = tmp_path / "quoted.tsv"
    tsv.write_text("text\tlabel\n" + '"he said ""wow"""\t1\n' * 12)
    for _ in range(3):
        tables.read_labeled(str(tsv))
    assert capsys.readouterr().err.count("cells in CSV quoting") == 1


def test_a_classifiers_columns_are_read_from_the_command_that_made_it(tmp_path):
    """Without a calibration slice (--calibration-n 0) nothing recorded the columns: the command does."""
    import json

    from train.recorded_columns import recorded_columns

    def recorded(metrics):
        (tmp_path / "metrics.json").write_text(json.dumps(metrics), encoding="utf-8")
        return recorded_columns(tmp_path)

    assert recorded_columns(tmp_path / "none") == (None, None)
    command = "python -m train.finetune --text-column review --label-col=sentiment --calibration-n 0 --out x"
    assert recorded({"command": command}) == ("review", "sentiment")
    assert recorded({"command": "python -m train.finetune --out x"}) == (None, None)
    assert recorded({"command": "python -m train.average a b", "members": [{"command": command}]}) == (
        "review", "sentiment")
    assert recorded({"command": "python -m train.export r", "checkpoint": {"command": command}}) == (
        "review", "sentiment")
    assert recorded({"calibration": {"slice": {"text_column": "body", "label_column": None}}}) == ("body", None)


def test_a_classifiers_columns_are_read_as_every_metrics_file_is(tmp_path):
    """`recorded_columns` read metrics.json on its own (`RunMetrics` is the one reader): a folder or the file itself
    reads, and a folder without one, or with one that is not a metrics object, records no columns."""
    import json

    from train.recorded_columns import recorded_columns

    file = tmp_path / "metrics.json"
    file.write_text(json.dumps({"command": "python -m train.finetune --text-column review --out x"}))
    assert recorded_columns(tmp_path) == recorded_columns(file) == ("review", None)
    for broken in ("{not json", "[1]", '"text"'):
        file.write_text(broken)
        assert recorded_columns(tmp_path) == (None, None)
    file.write_bytes(b"\xff\xfe{")  # not UTF-8
    assert recorded_columns(tmp_path) == (None, None)
    file.unlink()
    file.mkdir()  # not a file at all
    assert recorded_columns(tmp_path) == (None, None)


def test_labelled_text_is_read_without_its_labels(tmp_path):
    """A labelled file read as text (a TAPT corpus, pretraining text) failed on labels that are names."""
    tsv = tmp_path / "own.tsv"
    tsv.write_text("review\tsentiment\nA fine film.\tpos\nA dull one.\tneg\n")
    assert tables.read_texts(str(tsv), "review") == ["A fine film.", "A dull one."]
    with pytest.raises(data.DataError, match="pass --text-column NAME"):
        tables.read_texts(str(tsv))


def test_every_default_data_path_of_the_scripts_is_written_from_data_root():
    """The missing-data hint knows a default by its DATA_ROOT prefix; the defaults were ten literals in eight
    modules, one of which could drift from it without a word: no script writes the folder out again."""
    import ast

    for module in sorted(Path(__file__).resolve().parents[1].joinpath("train").glob("*.py")):
        tree = ast.parse(module.read_text(encoding="utf-8"))
        docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                      if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                      and node.body and isinstance(node.body[0], ast.Expr)}
        written = [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Constant)
                   and isinstance(node.value, str) and "shared/data" in node.value and id(node) not in docstrings]
        if module.name == "paths.py":
            assert len(written) == 1, written  # DATA_ROOT itself
        else:
            assert written == [], f"{module.name}:{written}: build the path from train.paths (DATA_ROOT)"
