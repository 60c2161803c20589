"""train.overlap: how much of a held-out text a corpus holds (its distinct n-word runs, its article titles, its TSV
sentences), on tiny files whose overlaps are counted by hand; the command line end to end; its refusals, made before
any data is read."""
import lzma

import pytest

from train import overlap, runtime
from helpers import assert_user_error, outcome, run_module

# The corpus: a WikiText-style file (tokenized, as WikiText-2 is) in a folder, and an xz file of natural reviews
CORPUS_WIKI = """ = Blue Whales = 

 The blue whale is the largest animal known to have lived . 

 = = Green Frogs = = 

 It eats krill in cold water . 

 = Red Foxes = 

 The red fox lives in well @-@ known forests . 

 = <unk> Whales = 

 They swim . 
"""
REVIEWS = "It's a charming journey and a fine film.\nWhat a dull movie, truly.\nHonestly it doesn't work.\n"

# Held out, n = 4. Blue Whales: "the blue whale is the largest animal ever seen" has 6 runs, its first 4 in the
# corpus; the <unk> line repeats 2 of them (distinct runs count once); "known to have lived it eats krill" has 4
# runs, 1 in the corpus (the others would cross a corpus line). Green Frogs (a corpus section heading, not a title):
# "a green frog lives in well known forests too", 6 runs, 2 in the corpus (@-@ undone). 16 runs, 7 found, all in
# the WikiText file. Titles: Blue Whales word for word; Red <unk> (Red Foxes) and <unk> Whales (Blue Whales, the
# first met) if <unk> is any one word; Grey Whales is not <unk> Whales (a corpus title's <unk> is no wildcard); Green
# Frogs is not found (a heading, not a title); <unk> alone is not looked for.
HELD_OUT_WIKI = """ = Blue Whales = 

 The blue whale is the largest animal ever seen . 
 The <unk> blue whale is the 
 Known to have lived , it eats krill . 

 = Green Frogs = 

 A green frog lives in well @-@ known forests too . 

 = Red <unk> = 

 = <unk> = 

 = Grey Whales = 

 = <unk> Whales = 
"""
# SST-2 style (lower-cased, tokenized). n = 4: runs 2 (both in the reviews) + 0 + 8 (in the WikiText file) + 4 new
# (none found; its other 2 are row 1's) + 0 + 0 + 1 new (not found) + 1 (in the reviews, `does n't` detokenized) =
# 16 runs, 11 found. Sentences found: rows 1 and 8 (long) and 2 and 9 (short, the same sentence twice: rows count) in
# the reviews, row 3 in the WikiText file; not row 4 (another order), 5, 6 (its first word matches), 7 (its first 4
# words match).
HELD_OUT_TSV = """sentence\tlabel
it 's a charming journey .\t1
a dull movie .\t0
the blue whale is the largest animal known to have lived .\t1
a fine film and it 's a charming journey .\t1
lifeless .\t0
a dull plot .\t0
it 's a charming film .\t1
it does n't work .\t0
a dull movie .\t1
"""


@pytest.fixture
def files(tmp_path):
    (tmp_path / "wiki").mkdir()
    (tmp_path / "wiki" / "articles.tokens").write_text(CORPUS_WIKI, encoding="utf-8")
    with lzma.open(tmp_path / "reviews.txt.xz", "wt", encoding="utf-8") as f:
        f.write(REVIEWS)
    (tmp_path / "valid.tokens").write_text(HELD_OUT_WIKI, encoding="utf-8")
    (tmp_path / "dev.tsv").write_text(HELD_OUT_TSV, encoding="utf-8")
    return tmp_path


def corpus_of(files) -> str:
    return f"{files / 'wiki'}=2,{files / 'reviews.txt.xz'}=1"


def measured(path, corpus: str, n: int) -> overlap.Overlap:
    return overlap.measure(overlap.read_held_out(str(path)), corpus, n=n)


def test_words_are_lowercased_alphanumeric_runs_without_unk_and_wikitext_joins():
    assert overlap.words("The <unk> Café's well @-@ known 1 @,@ 500") == ("the", "café", "s", "well", "known", "1",
                                                                          "500")
    assert list(overlap.runs(("a", "b", "c"), 2)) == [("a", "b"), ("b", "c")]
    assert list(overlap.runs(("a",), 2)) == []


def test_words_run_through_combining_marks_in_nfc():
    """A word goes on through a script's marks (Devanagari's vowel signs, the dot a lower-cased İ keeps); text
    decomposed (NFD) is read as composed (NFC); a script written without spaces is one word a run of it."""
    assert overlap.words("हिन्दी भाषा") == ("हिन्दी", "भाषा")
    assert overlap.words("İstanbul's") == ("İstanbul".lower(), "s")
    assert overlap.words("cafe\u0301 au lait") == overlap.words("caf\u00e9 au lait") == ("caf\u00e9", "au", "lait")
    assert overlap.title_words("Cafe\u0301 <unk>") == ("caf\u00e9", None)
    assert overlap.words("我爱北京 天安门") == ("我爱北京", "天安门")


def test_decomposed_text_is_found_in_composed_text(files):
    (files / "nfd.txt").write_text("Un cafe\u0301 au lait en terrasse\n", encoding="utf-8")
    (files / "nfc.txt").write_text("Le caf\u00e9 au lait en terrasse\n", encoding="utf-8")
    result = measured(files / "nfd.txt", str(files / "nfc.txt"), 4)
    assert (result.runs, result.found.runs_found) == (3, 2)


class Sliced(tuple):
    """A line's words that count the slices taken of them: the work of cutting a line into runs."""
    slices = 0

    def __getitem__(self, key):
        Sliced.slices += isinstance(key, slice)
        return super().__getitem__(key)


@pytest.mark.parametrize("n", [4, 10**6])
def test_lines_shorter_than_n_are_not_cut_into_runs(files, monkeypatch, n):
    """A line of fewer than n words costs nothing, whatever n; nor does the corpus when no held-out line has a run
    (the wiki file's lines of 4 or more words are not cut)."""
    words = overlap.words
    monkeypatch.setattr(overlap, "words", lambda text: Sliced(words(text)))
    monkeypatch.setattr(Sliced, "slices", 0)
    (files / "short.txt").write_text("a dull movie\nlifeless\n", encoding="utf-8")
    result = measured(files / "short.txt", corpus_of(files), n)
    assert (result.runs, result.found.runs_found, Sliced.slices) == (0, 0, 0)
    assert result.found.words == len(overlap.words(CORPUS_WIKI + REVIEWS))  # the corpus was read
    assert list(overlap.runs(("a", "b", "c"), n)) == []


def test_short_sentences_are_found_when_no_row_has_a_run(files):
    (files / "short.tsv").write_text("sentence\tlabel\na dull movie .\t0\nlifeless .\t0\n", encoding="utf-8")
    result = measured(files / "short.tsv", corpus_of(files), 4)
    assert (result.runs, result.sentences, result.found.sentences_found) == (0, 2, 1)
    assert result.found.sentence_examples() == ["a dull movie"]


def test_text_before_the_first_wikitext_title_is_no_title(files):
    """Held out, a preamble is no article (2 titles, not 3); in the corpus, the preamble `Grey Seals` is no title."""
    (files / "preamble.tokens").write_text(" Some preamble words . \n \n = Blue Whales = \n \n They swim . \n \n"
                                           " = Grey Seals = \n \n They bask . \n", encoding="utf-8")
    (files / "corpus.tokens").write_text(" Grey Seals \n \n = Blue Whales = \n \n They swim . \n \n"
                                         " = Some preamble words = \n", encoding="utf-8")
    result = measured(files / "preamble.tokens", str(files / "corpus.tokens"), 4)
    assert (result.titles, result.found.titles_found, result.found.titles_found_with_unk) == (2, 1, 0)
    assert result.found.title_examples(exact=True) == ["blue whales"]
    assert result.found.documents == 3  # the preamble is read as text: a document, its words in the runs


def test_wikitext_runs_and_titles_found_by_source(files):
    result = measured(files / "valid.tokens", corpus_of(files), 4)
    assert (result.runs, result.found.runs_found) == (16, 7)
    assert (result.titles, result.titles_looked_for, result.found.titles_found,
            result.found.titles_found_with_unk) == (6, 5, 1, 2)
    wiki, reviews = result.sources
    assert (wiki.source, wiki.documents, wiki.runs_found, wiki.titles_found, wiki.titles_found_with_unk) == \
        (str(files / "wiki"), 3, 7, 1, 2)
    assert (reviews.documents, reviews.runs_found, reviews.titles_found, reviews.titles_found_with_unk) == (3, 0, 0, 0)
    assert wiki.words == 2 + 11 + 2 + 6 + 2 + 8 + 1 + 2 and reviews.words == 9 + 5 + 5  # every line's words
    assert result.found.title_examples(exact=True) == ["blue whales"]
    assert result.found.title_examples(exact=False) == ["<unk> whales = blue whales", "red <unk> = red foxes"]
    assert result.sentences == 0  # a text file has no rows


def test_tsv_sentences_contained_verbatim_after_normalisation(files):
    result = measured(files / "dev.tsv", corpus_of(files), 4)
    assert (result.runs, result.found.runs_found, result.sentences, result.found.sentences_found) == (16, 11, 9, 5)
    wiki, reviews = result.sources
    assert (wiki.runs_found, wiki.sentences_found) == (8, 1)
    assert (reviews.runs_found, reviews.sentences_found) == (3, 4)
    assert result.found.sentence_examples() == ["a dull movie", "it doesn t work", "it s a charming journey",
                                                      "the blue whale is the largest animal known to have lived"]
    assert result.titles == 0


def test_the_run_length_changes_what_is_counted(files):
    """n = 1: the held-out text's distinct words, those in the corpus found (a section heading's words too: it is
    text, if not a title)."""
    held = overlap.read_held_out(str(files / "valid.tokens"))
    corpus_words = set(overlap.words(CORPUS_WIKI + REVIEWS))
    distinct = {w for line in held.lines for w in line}
    result = overlap.measure(held, corpus_of(files), n=1)
    assert (result.runs, result.found.runs_found) == (len(distinct), len(distinct & corpus_words))
    assert len(distinct) > len(distinct & corpus_words) > 0


def test_a_held_out_text_of_short_lines_has_no_run(files):
    (files / "short.txt").write_text("a dull movie\nlifeless\n", encoding="utf-8")
    result = measured(files / "short.txt", corpus_of(files), 4)
    assert (result.runs, result.found.runs_found) == (0, 0)
    assert "no 4-word run" in "\n".join(overlap.report(result))


def test_the_command_line_end_to_end(files):
    done = run_module("train.overlap", "--held-out", files / "dev.tsv", "--corpus", corpus_of(files), "--n", "4",
                      "--no-progress")
    assert done.returncode == 0, done.stderr
    assert "4-word runs found in the corpus: 11 of 16 distinct (68.75%)" in done.stdout
    assert "sentences contained verbatim (as words) in a corpus line: 5 of 9 (55.56%)" in done.stdout
    assert f"  {files / 'reviews.txt.xz'}: 3 runs (18.75%), 4 sentences" in done.stdout
    assert "Traceback" not in done.stderr


def test_the_command_line_on_wikitext(files, capsys):
    code, out, _ = outcome(overlap.main, ["--held-out", str(files / "valid.tokens"), "--corpus", corpus_of(files),
                                          "--n", "4", "--no-progress"], capsys)
    assert code == runtime.EXIT_OK
    assert "4-word runs found in the corpus: 7 of 16 distinct (43.75%)" in out
    assert ("article titles that are a corpus document's title: 1 of 5 (20.00%) word for word (blue whales), 2 more "
            "if <unk> is any one word (<unk> whales = blue whales; red <unk> = red foxes); 1 not looked for (<unk> "
            "alone)") in out
    assert f"  {files / 'wiki'}: 7 runs (43.75%), 1 titles (+2 with <unk>) (3 documents, 34 words)" in out
    assert "sentences" not in out


def test_refusals_name_the_option_before_any_data_is_read(files, capsys, monkeypatch):
    read = []
    monkeypatch.setattr(overlap, "read_held_out", lambda *a: read.append(a))
    monkeypatch.setattr(overlap, "read_documents", lambda *a, **k: read.append(a))
    gone = files / "gone.txt"
    (files / "empty").mkdir()
    (files / "labels.tsv").write_text("review\tlabel\ngood\t1\n", encoding="utf-8")
    held, corpus = str(files / "valid.tokens"), corpus_of(files)
    cases = [(["--held-out", held, "--corpus", corpus, "--n", "0"], "--n must be at least 1, got 0"),
             (["--held-out", str(gone), "--corpus", corpus], f"--held-out {gone}: no such file"),
             (["--held-out", str(files / "wiki"), "--corpus", corpus], f"--held-out {files / 'wiki'}: a folder"),
             (["--held-out", "hub:stanfordnlp/sst2", "--corpus", corpus], "--held-out hub:stanfordnlp/sst2: a local"),
             (["--held-out", str(files / "labels.tsv"), "--corpus", corpus], "--held-out", "no text column"),
             (["--held-out", held, "--corpus", f"{corpus},{gone}=1"], f"--corpus {gone}: no such file or folder"),
             (["--held-out", held, "--corpus", str(files / "empty")], "--corpus", "folder holds no"),
             (["--held-out", held, "--corpus", "a=x"], "--corpus: mixture 'a=x': weight 'x' of 'a' is not a number")]
    for argv, *message in cases:
        line = assert_user_error(overlap.main, [*argv, "--no-progress"], capsys, *message).strip()
        assert "\n" not in line
    assert read == []


def test_unreadable_held_out_text_is_one_error_line(files, capsys):
    (files / "blank.txt").write_text("\n \n", encoding="utf-8")
    (files / "latin1.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    corpus = corpus_of(files)
    assert_user_error(overlap.main, ["--held-out", str(files / "blank.txt"), "--corpus", corpus], capsys,
                      f"--held-out {files / 'blank.txt'}: no text")
    assert_user_error(overlap.main, ["--held-out", str(files / "latin1.txt"), "--corpus", corpus], capsys,
                      "--held-out", "not UTF-8 text")


def test_titles_keep_unk_as_any_one_word():
    assert overlap.title_words("Frank<unk> ( 2011 )") == ("frank", None, "2011")
    assert overlap.title_words("<unk> <unk>") == (None, None) and not overlap.looked_for((None, None))
    assert overlap.same_title(("frank", None), ("frank", "zappa")) and overlap.same_title((None, "b"), (None, "b"))
    assert not overlap.same_title(("frank", None), ("frank",)) and not overlap.same_title(("a", "b"), ("a", "c"))
    assert not overlap.same_title(("a", "b"), (None, "b")) and not overlap.same_title((None, "b"), ("a", None))
