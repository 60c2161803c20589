"""How often the pretraining text held each token: `train.token_counts` counts it, `demo.training_counts` reads the
shipped file and the Fill mask and Tokens tabs say it beside the shipped models' answers and tokens (never beside
a model with another vocabulary)."""
import json
import logging
from pathlib import Path

import numpy as np
import pytest

import roberta
from demo import bpe_view
from demo.fill_mask_view import answer_seen_cell, predictions_html
from demo.tokens_view import tokenize
from demo.training_counts import (COUNTS_FILE, TrainingCounts, counts_for, parse_counts, per_million, read_counts,
                                   short_count)
from roberta.tokenizer import vocab_digest
from train import pretrain, token_counts
from train.data import parse_mixture

ROOT = Path(__file__).resolve().parents[1]


def counts_of(tokenizer, texts) -> np.ndarray:
    """The counts written out by hand: every token id of every text, one by one."""
    out = np.zeros(tokenizer.get_vocab_size(), dtype=np.int64)
    for text in texts:
        for token_id in tokenizer.encode(text, add_special_tokens=False).ids:
            out[token_id] += 1
    return out


def test_the_counts_are_every_token_of_every_document(train_files, tokenizer, tmp_path, capsys):
    corpus, valid = train_files / "corpus.txt", train_files / "valid.txt"
    out = tmp_path / "counts.json"
    argv = ["--tokenizer", str(train_files / "tokenizer.json"), "--source", f"plain={corpus}",
            "--source", f"reviews={valid}", "--out", str(out), "--no-progress", "--words", "likes", "lik"]
    assert token_counts.main(argv) == 0
    printed = capsys.readouterr().out.splitlines()
    document = json.loads(out.read_text())
    assert document["tokenizer_vocab"] == vocab_digest(tokenizer)
    assert document["command"].startswith("python -m train.token_counts --tokenizer ")
    assert out.with_suffix(".png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"  # the rank-frequency figure beside it
    plain, reviews = document["sources"]
    lines = [line for line in corpus.read_text().splitlines() if line.strip()]
    texts = [line for line in valid.read_text().splitlines() if line.strip()]
    assert (plain["name"], plain["files"], plain["documents"]) == ("plain", [str(corpus)], len(lines))
    assert plain["counts"] == counts_of(tokenizer, lines).tolist()
    assert reviews["counts"] == counts_of(tokenizer, texts).tolist()
    assert reviews["tokens"] == sum(reviews["counts"]) and reviews["documents"] == len(texts)
    # whole words, per source and in all: "likes" as a word, "lik" never (only inside "likes")
    likes, more = (sum(line.split().count("likes") for line in part) for part in (lines, texts))
    assert printed[0] == "word\tplain\treviews\tall" and likes > 0
    assert printed[1] == f"likes\t{likes:,}\t{more:,}\t{likes + more:,}" and printed[2] == "lik\t0\t0\t0"
    # the app reads what the script wrote, for this tokenizer only
    counts = read_counts(out)
    assert counts.names == ("plain", "reviews") and counts_for(tokenizer, out) is counts


def test_the_default_sources_are_the_pretraining_corpora():
    """The counts describe the text the shipped encoder was pretrained on: train.pretrain's default mixture."""
    files = [path for spec in token_counts.DEFAULT_SOURCES for path in token_counts.parse_source(spec)[1]]
    assert sorted(files) == sorted(path for path, _ in parse_mixture(pretrain.PRETRAIN_CORPUS))


def test_bad_sources_and_options(train_files, tmp_path, capsys):
    out = str(tmp_path / "counts.json")
    not_json, tokenizer_copy = tmp_path / "notes.json", tmp_path / "tokenizer.json"
    not_json.write_text("notes")
    tokenizer_copy.write_bytes((train_files / "tokenizer.json").read_bytes())
    for argv, words in [(["--source", "no-equals-sign", "--out", out], "NAME=PATH"),
                        (["--source", f"x={tmp_path / 'missing.txt'}", "--out", out], "missing.txt"),
                        (["--tokenizer", str(tmp_path / "none.json"), "--out", out], "none.json"),
                        (["--out", str(not_json)], "is not JSON"),
                        (["--out", str(tokenizer_copy)], "is not a token-counts file")]:  # it was replaced
        argv = ["--tokenizer", str(train_files / "tokenizer.json"), *argv]
        assert token_counts.main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and words in err and "Traceback" not in err, (argv, err)
    assert (tokenizer_copy.read_bytes() == (train_files / "tokenizer.json").read_bytes()
            and not_json.read_text() == "notes")
    corpus, valid = train_files / "corpus.txt", train_files / "valid.txt"
    curves = tmp_path / "curves.png"  # another script's figure, where --out curves.json would draw its own
    curves.write_bytes(b"figure")
    for argv, words in [(["--source", f"a={corpus}", "--source", f"a={valid}", "--out", out], "each name once"),
                        (["--source", f"a={corpus}", "--source", f"b={valid},{corpus}", "--out", out],
                         "each file once"),
                        (["--source", f"a={corpus},{corpus}", "--out", out], "each file once"),
                        (["--out", str(tmp_path / "curves.json")], "would replace")]:
        assert token_counts.main(["--tokenizer", str(train_files / "tokenizer.json"), *argv]) == 2
        captured = capsys.readouterr()
        assert words in captured.err and not captured.out, (argv, captured)
    assert curves.read_bytes() == b"figure" and not Path(out).exists()
    for argv, words in [(["--source", f"x={corpus}"], "nothing to do"),  # nothing asked for
                        (["--tokenizer", str(train_files / "tokenizer.json"), "--words", "dog"], "--tokenizer is for"),
                        (["--words", "dog", " "], "--words: each word"), (["--words", " dog"], "--words: each word")]:
        with pytest.raises(SystemExit) as exit_:
            token_counts.main(argv)
        assert exit_.value.code == 2 and words in capsys.readouterr().err, argv


def test_a_whole_word_is_not_part_of_a_longer_one():
    documents = ["The dog barked at the dogs; dog-tired, a hotdog.", "Wow!! Dog!!!"]
    assert token_counts.count_word("dog", documents) == 2  # "dog" and "dog-tired", not "dogs" or "hotdog"
    assert token_counts.count_word("!!", documents) == 2  # punctuation has no word to stay out of: "Wow!!", "!!!"
    assert token_counts.count_word("dog-tired", documents) == 1 and token_counts.count_word("Dog", documents) == 1


def test_the_shipped_counts_fit_the_shipped_models():
    """assets/training-text/token-counts.json was counted with the shipped tokenizer (both models have it): a new
    tokenizer needs new counts, or the app would name the wrong tokens."""
    counts = read_counts(COUNTS_FILE)
    assert counts is not None and counts.names == ("Wikipedia", "movie reviews")
    for model in ("mini-roberta-mlm", "mini-roberta-sst2"):
        tokenizer = roberta.load_tokenizer(ROOT / "assets" / model)
        assert counts_for(tokenizer) is counts
        assert counts.counts.shape == (2, tokenizer.get_vocab_size())
    assert list(counts.counts.sum(axis=1)) == list(counts.tokens)
    movie = tokenizer.token_to_id("Ġmovie")
    wikipedia, reviews = counts.seen(movie)
    assert reviews > 100 * wikipedia > 0  # what the app's answers show: " movie" is a word of the reviews


def test_a_model_with_another_vocabulary_gets_no_counts(tokenizer):
    assert counts_for(tokenizer) is None  # the tiny test tokenizer: its ids are other tokens


def test_what_a_count_says():
    counts = TrainingCounts(("Wikipedia", "movie reviews"), (1000, 3000),
                            np.array([[0, 5, 1, 0, 40, 10], [0, 1, 199, 7, 60, 31]]), "x")
    assert counts.short(0) == ("never", "") and counts.short(3) == ("7", "only in movie reviews")
    assert counts.short(1) == ("6", "15× commoner in Wikipedia")  # 5 per 1,000 tokens against 1 per 3,000
    assert counts.short(2) == ("200", "66× commoner in movie reviews")
    # most of its count is in the reviews, yet it is twice as common in Wikipedia: the reviews are 3 times larger
    assert counts.short(4) == ("100", "2.0× commoner in Wikipedia")
    assert counts.short(5) == ("41", "about as common in both")  # 10 per 1,000 against 31 per 3,000
    assert counts.seen(99) == [0, 0]  # an id outside the counted vocabulary
    assert counts.sentence(3, "␣dog") == ("“␣dog”: 7 times in the pretraining text (each document counted once): 0 "
                                          "in Wikipedia (1,000 tokens: 0 per million), 7 in movie reviews (3,000 "
                                          "tokens: 2,333 per million)")
    assert counts.sentence(0).startswith("never in the pretraining text")
    assert [short_count(n) for n in (6, 1784, 12_345, 127_786, 1_494_475)] == ["6", "1,784", "12.3k", "128k", "1.5M"]
    assert [per_million(n, 10**8) for n in (0, 8, 450, 588_400)] == ["0", "0.08", "4.5", "5,884"]
    one = TrainingCounts(("all",), (10,), np.array([[3]]), "x")
    assert one.short(0) == ("3", "")  # one kind of text: nothing to compare


def test_a_broken_counts_file_is_left_out(tmp_path, caplog):
    with caplog.at_level(logging.WARNING):
        assert read_counts(tmp_path / "missing.json") is None  # $TOKEN_COUNTS naming no file: said
    assert "no token-counts file at" in caplog.text and "TOKEN_COUNTS" in caplog.text
    caplog.clear()
    for text in ("{not json", json.dumps({"sources": [{"name": "x"}]}), json.dumps({"tokenizer_vocab": "x",
                                                                                    "sources": []})):
        path = tmp_path / f"bad{len(text)}.json"
        path.write_text(text)
        with caplog.at_level(logging.WARNING):
            assert read_counts(path) is None
        assert "could not read" in caplog.text
    with pytest.raises(ValueError, match="not a token-counts file"):
        parse_counts({"tokenizer_vocab": "x", "sources": [{"name": "a", "tokens": 1, "counts": [-1]}]})


def test_the_fill_mask_view_says_how_often_each_answer_was_seen():
    tokenizer = roberta.load_tokenizer(ROOT / "assets" / "mini-roberta-mlm")
    counts = counts_for(tokenizer)
    movie, b = tokenizer.token_to_id("Ġmovie"), tokenizer.token_to_id("Ġb")
    row = [{"token": movie, "token_str": " movie", "score": 0.2},
           {"token": b, "token_str": " b", "score": 0.1, "candidates": ["barked"]}]
    text = "The <mask> barked."
    out = predictions_html([row], ["barked"], tokenize(tokenizer, text, 128), tokenizer=tokenizer, counts=counts)
    count, kind = counts.short(movie)
    assert f"{count} <span class=\"fm-kind\">· {kind}</span>" in out and kind.endswith("movie reviews")
    assert "in the pretraining text</th>" in out and "“In the pretraining text”" in out
    # the hover names the exact token, its leading space included
    assert f'title="{counts.sentence(movie, "␣movie")}">{count}' in out and "“␣movie”: " in out
    cell, said = answer_seen_cell(row[1], counts, tokenizer)  # the first piece's count is not the word's
    assert cell.endswith(">–</td>") and said.startswith("“barked”: scored by its first piece")
    assert said.endswith("says nothing of how often the text holds the word")  # in the app's words, no command
    assert f'title="{counts.sentence(tokenizer.token_to_id("arked"), "arked")}">arked</span>' in out  # the chips
    assert f'title="{counts.sentence(b, "␣b")}">b</span>' in out  # the exact token: " b", not "b"
    # every count again in a <details>, for a phone or a keyboard: the same sentences as the hovers
    details = out[out.index('<details class="fm-counts">'):out.index("</details>")]
    assert details.count("<li>") == 2 and f"<li>{counts.sentence(movie, '␣movie')}</li>" in details
    plain = predictions_html([row], ["barked"], tokenize(tokenizer, text, 128), tokenizer=tokenizer)
    assert 'class="fm-seen"' not in plain and "“In the pretraining text”" not in plain and "<details" not in plain


def test_the_tokens_tab_says_how_often_each_token_was_seen():
    tokenizer = roberta.load_tokenizer(ROOT / "assets" / "mini-roberta-mlm")
    counts = counts_for(tokenizer)
    rows = bpe_view.token_rows(tokenizer, "The dog barked.", 128, counts)
    regular = [row for row in rows["tokens"] if not row["special"]]
    assert all(row["seen"] == dict(zip(counts.names, counts.seen(row["id"]))) for row in regular)
    assert not any("seen" in row for row in rows["tokens"] if row["special"])
    out = bpe_view.tokens_html(rows, counts)
    assert f'title="vocabulary entry arked; {counts.sentence(tokenizer.token_to_id("arked"))}"' in out
    assert "Hover a token, or open “in full”, for how often" in out
    lines = out[out.index('<details class="bpe-counts">'):out.index("</details>")].split("<li>")[1:]
    assert len(lines) == len(regular) and lines[0].startswith("“The”: ") and lines[-1].startswith("“.”: ")
    repeated = bpe_view.tokens_html(bpe_view.token_rows(tokenizer, "The dog. The dog.", 128, counts), counts)
    assert repeated.count("<li>") == len(regular) - 1  # "The dog. The dog.": each token once (" The" is another)
    assert "seen" not in json.dumps(bpe_view.token_rows(tokenizer, "The dog.", 128))
    plain = bpe_view.tokens_html(bpe_view.token_rows(tokenizer, "The dog.", 128))
    assert "Hover a token" not in plain and "<details" not in plain


def test_the_app_says_it_for_the_shipped_model_only(tiny_mlm_dir, tiny_clf_dir, monkeypatch):
    """Wired through the handlers: the shipped MLM's answers and tokens carry their counts, a model with another
    vocabulary (the tiny test one, as a Hub model would be) none."""
    from demo.handlers import Handlers
    from demo.models import load_models

    monkeypatch.setenv("APP_LOCAL_MODELS", "1")  # a folder stands in for a Hub model
    handlers = Handlers(load_models(mlm=ROOT / "assets" / "mini-roberta-mlm", sentiment=tiny_clf_dir))
    view = handlers.fill_mask("The <mask> barked at the mailman.", 3)[-1]
    assert view.count('<td class="fm-seen" title="“') == 3 and "“In the pretraining text”" in view
    tokens_view, rows = handlers.tokens("The dog barked.")[:2]
    assert ("Hover a token, or open “in full”, for how often" in tokens_view
            and all("seen" in row for row in rows["tokens"][1:-1]))
    other = handlers.fill_mask("The <mask> barked at the mailman.", 3, "", str(tiny_mlm_dir))[-1]
    assert 'class="fm-seen"' not in other and "“In the pretraining text”" not in other
    assert not any("seen" in row for row in handlers.tokens("The dog barked.", str(tiny_mlm_dir))[1]["tokens"])
    # the Embeddings tab: each neighbour's count, in the table and the data (the rare ones are the odd neighbours)
    for view, result in (handlers.neighbours("Monday", 5), handlers.analogy("man", "king", "woman", 5)):
        assert view.count('<td class="ev-seen" title="“') == 5 and "“In the pretraining text”" in view
        assert view.count("<li>“") == 5 and '<details class="ev-counts">' in view
        assert all(set(n["seen"]) == {"Wikipedia", "movie reviews"} for n in result["neighbours"])
    view, result = handlers.neighbours("Monday", 5, True, str(tiny_mlm_dir))
    assert 'class="ev-seen"' not in view and not any("seen" in n for n in result["neighbours"])


def test_the_about_tab_shows_what_the_model_read(tiny_mlm_dir, tiny_clf_dir):
    from demo import about
    from demo.models import load_models

    shipped = load_models(mlm=ROOT / "assets" / "mini-roberta-mlm", sentiment=tiny_clf_dir)
    figure = about.training_text_figure(shipped.mlm)
    assert figure.path == str(COUNTS_FILE.with_suffix(".png")) and Path(figure.path).is_file()
    counts = read_counts(COUNTS_FILE)
    total = counts.counts.sum(axis=0)
    rare = int(((total > 0) & (total < 100)).sum())
    assert "holds 35.0M tokens (Wikipedia 13.3M, movie reviews 21.8M)" in figure.caption
    assert f"{rare:,} of the {len(total):,} tokens" in figure.caption
    assert about.about_sections(shipped)["mlm_figures"][-1] == figure
    assert about.training_text_figure(load_models(mlm=tiny_mlm_dir, sentiment=tiny_clf_dir).mlm) is None


def test_the_docs_split_of_barked_is_the_shipped_tokenizer_s():
    """README said " barked" is "b" + "arked": the shipped tokenizer's first piece holds the space, " b"."""
    import re

    tokenizer = roberta.load_tokenizer(ROOT / "assets" / "mini-roberta-mlm")
    ids = tokenizer.encode(" barked", add_special_tokens=False).ids
    pieces = " + ".join(f'"{tokenizer.decode([i])}"' for i in ids)
    assert pieces == '" b" + "arked"'
    for path in (ROOT / "README.md", ROOT / "train" / "token_counts.py"):
        said = re.findall(r'" barked" is ("[^"]*"(?: \+ "[^"]*")+)', path.read_text(encoding="utf-8"))
        assert said and set(said) == {pieces}, (path.name, said)
