"""Analogies answered from a model's word embeddings, scored top-1 and top-k (`demo.embedding_view.score_analogies`)
and the command that asks them of model folders (`scripts.analogy_probe`)."""
import json

import pytest
import torch

import roberta
from demo.embedding_view import score_analogies
from demo.examples import ANALOGY_PROBE
from scripts import analogy_probe

from helpers import ROOT

WORDS = ["man", "woman", "king", "queen", "cat", "cats", "dog", "dogs", "red", "blue"]


@pytest.fixture(scope="module")
def tok():
    corpus = [" ".join(WORDS)] * 30 + ["the old man and the woman see a red king"] * 10
    tokenizer = roberta.train_tokenizer(corpus, vocab_size=300, min_frequency=1, show_progress=False)
    for word in WORDS:
        assert len(tokenizer.encode(" " + word, add_special_tokens=False).ids) == 1, word
    return tokenizer


def row_of(tokenizer, word):
    return tokenizer.encode(" " + word, add_special_tokens=False).ids[0]


def test_score_counts_top1_and_topk_per_category(tok):
    """A table built so that queen = king − man + woman exactly (each at unit length) answers that question
    first; a question whose answer is nowhere near is a miss; a word in too many pieces is not asked."""
    table = torch.randn(tok.get_vocab_size(), 16, generator=torch.Generator().manual_seed(0))
    table = table / table.norm(dim=-1, keepdim=True)
    man, woman, king, queen = (row_of(tok, w) for w in ("man", "woman", "king", "queen"))
    table[queen] = table[king] - table[man] + table[woman]
    cat, cats, dog, blue = (row_of(tok, w) for w in ("cat", "cats", "dog", "blue"))
    table[blue] = -(table[cats] - table[cat] + table[dog])  # the farthest row from that question's answer
    questions = [("gender", "man", "king", "woman", "queen"), ("plural", "cat", "cats", "dog", "blue"),
                 ("plural", "cat", "cats", "qxzjvkwpqxzj", "dogs")]
    result = score_analogies(table, tok, questions, top_k=5)
    assert result["questions"] == 3 and result["top1"] == pytest.approx(1 / 3)
    assert result["categories"] == {"gender": {"questions": 1, "top1": 1, "top5": 1},
                                    "plural": {"questions": 2, "top1": 0, "top5": 0}}
    first, _, unasked = result["answers"]
    assert first["rank"] == 1 and first["answers"][0] == "queen"
    assert unasked["rank"] is None and "pieces" in unasked["error"] and unasked["answers"] == []


def test_the_script_prints_a_table_and_writes_every_answer(tiny_mlm_dir, tmp_path, capsys):
    probe = tmp_path / "probe.tsv"
    probe.write_text("category\ta\tb\tc\texpected\nanimals\tcat\tdog\thouse\triver\n"
                     "animals\tcat\tdog\tqxzjvkwpqxzjvkwp\triver\n")
    out = tmp_path / "probe.json"
    assert analogy_probe.main(["--model", str(tiny_mlm_dir), "--probe", str(probe), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"| {tiny_mlm_dir} | " in printed and "| model | top-1 | top-5 | animals (top-1) |" in printed
    assert f"{tiny_mlm_dir}: cat : dog :: qxzjvkwpqxzjvkwp : ? not asked: Word c: " in printed
    saved = json.loads(out.read_text(encoding="utf-8"))[str(tiny_mlm_dir)]
    assert saved["questions"] == 2 and len(saved["answers"]) == 2


def test_a_bad_probe_file_is_refused_plainly(tmp_path):
    bad = tmp_path / "bad.tsv"
    bad.write_text("category\ta\tb\tc\texpected\ncapital\tParis\tFrance\t\tGermany\n")
    with pytest.raises(ValueError, match="bad.tsv line 2: no c; each row needs category, a, b, c, expected"):
        analogy_probe.read_probe(bad)
    bad.write_text("category\ta\tb\tc\texpected\ncapital\tParis\tFrance\tBerlin\tGermany\n")
    assert analogy_probe.read_probe(bad) == [("capital", "Paris", "France", "Berlin", "Germany")]
    bad.write_text("\ufeffcategory\ta\tb\tc\texpected\ncapital\tParis\tFrance\tBerlin\tGermany\n",  # a BOM: read
                   encoding="utf-8")
    assert analogy_probe.read_probe(bad) == [("capital", "Paris", "France", "Berlin", "Germany")]
    bad.write_text("category\ta\tb\tc\texpected\n")
    with pytest.raises(ValueError, match="no analogy probe rows"):
        analogy_probe.read_probe(bad)


def test_the_default_questions_are_one_token_words_to_the_shipped_tokenizer():
    tokenizer = roberta.load_tokenizer(ROOT / "assets" / "mini-roberta-mlm")  # from the repository, whatever the cwd
    assert len(ANALOGY_PROBE) == 43 and len(set(ANALOGY_PROBE)) == 43
    for question in ANALOGY_PROBE:
        for word in question[1:]:
            assert len(tokenizer.encode(" " + word, add_special_tokens=False).ids) == 1, (question, word)
