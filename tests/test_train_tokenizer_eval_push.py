"""train.tokenizer CLI, train.evaluate (functions and CLI), train.push offline behaviour, train.model_card."""
import dataclasses
import json
import math
import re
import socket
import subprocess
from pathlib import Path

import pytest
import yaml

import roberta
import torch
from roberta.text import normalize_for_classifier
from train import evaluate, model_card, push
from train.packing import pack_sequences
from helpers import run_module

ROOT = Path(__file__).resolve().parents[1]


# ----- tokenizer -----
@pytest.mark.slow  # end-to-end script run, several seconds
def test_tokenizer_cli_end_to_end(tmp_path, sentences):
    wiki = tmp_path / "wiki.tokens"
    wiki.write_text("".join(f" = Doc {i} = \n {s[:-1]} , and <unk> again .\n" for i, s in enumerate(sentences)))
    reviews = tmp_path / "reviews.txt"
    reviews.write_text("\n".join(sentences[::-1]) + "\n")
    out = tmp_path / "tok"
    result = run_module("train.tokenizer", "--corpus", f"{wiki}=0.5,{reviews}=0.5", "--vocab-size", 400,
                        "--min-frequency", 1, "--max-chars", 20_000, "--eval-text", wiki, "--out", out, "--quiet")
    assert result.returncode == 0, result.stderr
    assert "tokens per word" in result.stdout and "documents" in result.stdout
    tok = roberta.load_tokenizer(out / "tokenizer.json")
    assert tok.get_vocab_size() == 400
    assert [tok.token_to_id(t) for t in ("<s>", "<pad>", "</s>", "<unk>", "<mask>")] == [0, 1, 2, 3, 4]
    assert not any("unk" in t for t in tok.get_vocab() if t != "<unk>")  # no merges spent on <unk>
    assert tok.encode("The cat sees the sea.").ids[0] == 0


def test_tokenizer_cli_bad_corpus(tmp_path, capsys):
    from train import tokenizer as tokenizer_script
    assert tokenizer_script.main(["--corpus", str(tmp_path / "nope.txt"), "--out", str(tmp_path / "t")]) == 2
    err = capsys.readouterr().err
    assert "nope.txt" in err and "Traceback" not in err and not (tmp_path / "t").exists()


def test_tokenizer_cli_refuses_bad_sizes_and_outputs_before_training(tmp_path, train_files, capsys):
    from train import tokenizer as tokenizer_script

    a_file, empty = tmp_path / "a-file", tmp_path / "empty.txt"
    a_file.write_text("x")
    empty.write_text("")
    base = ["--corpus", str(train_files / "corpus.txt"), "--min-frequency", "1", "--max-chars", "20000",
            "--eval-text", "", "--quiet", "--out", str(tmp_path / "tok")]
    cases = [(["--vocab-size", "0"], "--vocab-size must be at least 261"),  # was a 261-token vocabulary, exit 0
             (["--vocab-size", "-5"], "--vocab-size must be at least 261"),  # was an OverflowError traceback
             (["--max-chars", "-1"], "--max-chars 0 (all) or at least 1, got 1 and -1"),  # was trained on nothing
             (["--out", str(a_file)], f"--out {a_file} is a file, not a folder"),  # was a traceback after training
             (["--eval-text", str(empty)], f"{empty}: no documents found")]  # was a traceback after training
    for extra, message in cases:
        assert tokenizer_script.main([*base, *extra]) == 2, extra
        err = capsys.readouterr().err
        assert err.startswith("error: ") and message in err, (extra, err)
    assert not (tmp_path / "tok").exists()


def test_tokenizer_cli_checks_its_numbers_before_reading_any_text(tmp_path, train_files, monkeypatch, capsys):
    """--max-chars -1 printed "reading ... (max -1 chars)" before its error, and --vocab-size 0 was refused once the
    --eval-text was read: both are refused before any text is read or anything printed."""
    from train import tokenizer as tokenizer_script

    def never(*args, **kwargs):
        raise AssertionError("text was read before the options were checked")

    monkeypatch.setattr(tokenizer_script, "read_documents", never)
    monkeypatch.setattr(tokenizer_script, "load_mixture_with_stats", never)
    base = ["--corpus", str(train_files / "corpus.txt"), "--eval-text", str(train_files / "valid.txt"), "--quiet",
            "--out", str(tmp_path / "tok")]
    for extra, message in [(["--max-chars", "-1"], "--max-chars 0 (all) or at least 1, got 2 and -1"),
                           (["--min-frequency", "-1"], "--min-frequency must be at least 0"),
                           (["--vocab-size", "0"], "--vocab-size must be at least 261")]:
        assert tokenizer_script.main([*base, *extra]) == 2, extra
        out, err = capsys.readouterr()
        assert out == "" and err.startswith("error: ") and message in err and err.count("\n") == 1, (extra, out, err)
    assert not (tmp_path / "tok").exists()


def test_tokenizer_vocab_size_has_an_upper_bound(tmp_path, train_files, monkeypatch, capsys):
    """--vocab-size 10000000000 read the corpus, then aborted the process in Rust ("memory allocation of 566935683088
    bytes failed", a backtrace, exit code 134): refused before any text is read, as a size below the alphabet is
    (train.pretrain's --vocab-size, a tokenizer trained on the fly, shares the check)."""
    from train import tokenizer as tokenizer_script

    monkeypatch.setattr(tokenizer_script, "load_mixture_with_stats",
                        lambda *a, **k: pytest.fail("text was read before --vocab-size was checked"))
    for size in ("10000000000", str(2**20 + 1)):
        assert tokenizer_script.main(["--corpus", str(train_files / "corpus.txt"), "--eval-text", "", "--quiet",
                                      "--vocab-size", size, "--out", str(tmp_path / "tok")]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: --vocab-size must be at most 1,048,576") and err.count("\n") == 1, err
    tokenizer_script.check_vocab_size(2**20)
    assert not (tmp_path / "tok").exists()


def test_tokenizer_checks_that_it_can_write_out_before_training(tmp_path, train_files, monkeypatch, capsys):
    """An --out that could not be written (read-only, another user's) was a PermissionError traceback after the BPE
    training (minutes on the default corpus, lost); a full disk at the write too. The folder is now tried before any
    text is read (`train.runtime.writable_folder`), and a write that fails all the same is one line."""
    import errno
    import tempfile

    from train import tokenizer as tokenizer_script

    argv = ["--corpus", str(train_files / "corpus.txt"), "--vocab-size", "300", "--eval-text", "", "--quiet",
            "--out", str(tmp_path / "tok")]

    def read_only(*args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied")

    with monkeypatch.context() as m:  # (root passes any permission check: the probe is made to fail)
        m.setattr(tempfile, "TemporaryDirectory", read_only)
        m.setattr(tokenizer_script, "load_mixture_with_stats", lambda *a, **k: pytest.fail("trained first"))
        assert tokenizer_script.main(argv) == 2
    err = capsys.readouterr().err
    assert err == f"error: --out {tmp_path / 'tok'}: cannot write in {tmp_path} (Permission denied)\n", err
    assert not (tmp_path / "tok").exists()

    def full_disk(path, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(tokenizer_script, "write_atomic", full_disk)
    assert tokenizer_script.main(argv) == 2
    out, err = capsys.readouterr()
    assert err.startswith(f"error: could not write {tmp_path / 'tok' / 'tokenizer.json'} (No space left on device)")
    assert err.count("\n") == 1 and "Traceback" not in err


def test_tokenizer_max_chars_is_about_that_many_characters(tmp_path, train_files, capsys):
    """--max-chars was documented "at most this many characters", and 100,000 read 116,210: whole documents are
    taken (the shipped tokenizer's sample, kept), so the help and the message say "about"."""
    from train import tokenizer as tokenizer_script

    with pytest.raises(SystemExit):
        tokenizer_script.parse_args(["--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert "--max-chars MAX_CHARS train on about this many characters of the mixture: whole documents" in shown
    assert "at most" not in shown
    argv = ["--corpus", str(train_files / "corpus.txt"), "--vocab-size", "300", "--min-frequency", "1",
            "--max-chars", "1000", "--eval-text", "", "--quiet", "--out", str(tmp_path / "tok")]
    assert tokenizer_script.main(argv) == 0
    out = capsys.readouterr().out
    assert f"reading {train_files / 'corpus.txt'} (up to about 1,000 chars, in whole documents)" in out
    chars = int(out.split("corpus.txt: ")[1].split(" chars")[0].replace(",", ""))
    assert 1000 <= chars < 1000 + max(map(len, (train_files / "corpus.txt").read_text().splitlines()))


def test_a_tokenizer_with_tokens_added_to_the_init_models_says_how_many_more(tiny_mlm_dir, tmp_path):
    """--tokenizer that was --init's own plus 200 added tokens was "0 of its 32,768 tokens have another id or none",
    which reads as "they are the same"."""
    from tokenizers import Tokenizer

    from train.runtime import UserError
    from train.tokenizer import load_run_tokenizer

    bigger = Tokenizer.from_file(str(tiny_mlm_dir / "tokenizer.json"))
    size = bigger.get_vocab_size()
    bigger.add_tokens([f"added{i}" for i in range(200)])
    bigger.save(str(tmp_path / "tokenizer.json"))
    with pytest.raises(UserError, match=f"\\(its {size:,} tokens have the same ids, but --tokenizer has 200 tokens "
                                        "more\\): leave --tokenizer out"):
        load_run_tokenizer(str(tmp_path / "tokenizer.json"), str(tiny_mlm_dir))


def test_tokens_per_word(tokenizer):
    """BPE tokens without <s> and </s>, over whitespace words, "of<unk>" (WikiText's unknown word glued to the
    word before it) counted as two words."""
    from train.tokenizer import tokens_per_word

    documents = ["the cat sees the sea", "the dog of<unk> the sea"]
    # the tiny vocabulary: t he Ġc at Ġs e es Ġthe Ġsea, and t he Ġd o g Ġo f <unk> Ġthe Ġsea
    assert [len(tokenizer.encode(d, add_special_tokens=False).ids) for d in documents] == [9, 10]
    assert tokens_per_word(tokenizer, documents) == pytest.approx(19 / 11)  # 5 + 6 words


# ----- evaluate -----
def test_evaluate_mlm_held_out_mask(tiny_mlm_dir, tokenizer, sentences):
    model = roberta.RobertaForMaskedLM.from_pretrained(tiny_mlm_dir)
    rows = pack_sequences([" ".join(sentences[i:i + 5]) for i in range(0, 100, 5)], tokenizer,
                          model.config.max_length)
    # the held-out mask is one seeded draw of the dynamic masker over the whole set (not a static masker's copy,
    # `StaticMasker.fixed_mask`): its own name, so that the two are not read as one
    held_out = evaluate.held_out_mask(tokenizer, rows, 3)
    drawn = roberta.masking.DynamicMasker.from_tokenizer(tokenizer, seed=3)(rows)
    assert torch.equal(held_out.input_ids, drawn.input_ids) and torch.equal(held_out.labels, drawn.labels)
    assert not hasattr(evaluate, "fixed_mask")
    a = evaluate.evaluate_mlm(model, tokenizer, rows, batch_size=4, seed=0)
    assert a["tokens"] > 0 and math.isfinite(a["loss"]) and 0 <= a["accuracy"] <= 1
    assert a["perplexity"] == pytest.approx(math.exp(a["loss"]))
    # a random model is near-uniform over the vocabulary
    assert abs(a["loss"] - math.log(tokenizer.get_vocab_size())) < 1.0
    # the same mask whatever the batch size; another seed masks other positions
    b = evaluate.evaluate_mlm(model, tokenizer, rows, batch_size=16, seed=0)
    assert b["tokens"] == a["tokens"] and b["loss"] == pytest.approx(a["loss"], rel=1e-5)
    assert evaluate.evaluate_mlm(model, tokenizer, rows, batch_size=4, seed=1)["loss"] != a["loss"]
    assert model.training is False


def test_the_constant_guess_is_one_token_for_every_mask_and_scores_their_mean(tokenizer):
    """The yardstick of a masked-LM accuracy: the single token that is most often the target over all the masks
    (not each mask's own), scored on each mask's targets, the mean over the masks, as the model's accuracy is."""
    from roberta.masking import IGNORE_INDEX, MaskedBatch

    def masked(targets):  # a (1, 6) row whose first positions are targets
        labels = torch.tensor([targets + [IGNORE_INDEX] * (6 - len(targets))])
        return MaskedBatch(torch.zeros_like(labels), labels, torch.zeros_like(labels))

    a, b = (tokenizer.token_to_id(entry) for entry in ("Ġthe", "Ġa"))  # " the", " a"
    guess = evaluate.constant_guess([masked([a, a, b]), masked([b, b, b, a])], tokenizer)  # b: 4 of 7, a: 3 of 7
    assert guess == {"constant_guess_token": tokenizer.decode([b]), "constant_guess_accuracy": (1 / 3 + 3 / 4) / 2}
    assert evaluate.constant_guess([masked([a, a, b])], tokenizer)["constant_guess_accuracy"] == 2 / 3
    assert guess["constant_guess_token"] == " a"


def test_evaluate_records_and_prints_the_constant_guess_of_the_same_masks(tiny_mlm_dir, sentences, tmp_path,
                                                                           capsys):
    """train.evaluate's MLM section carries its yardstick: the best constant guess over the very targets its
    masks drew (counted here from `held_out_mask`'s labels), next to the accuracy, and the CLI prints it."""
    from collections import Counter

    from roberta.masking import IGNORE_INDEX

    text = tmp_path / "valid.txt"
    text.write_text(" ".join(sentences[:120]) + "\n")
    out = tmp_path / "metrics.json"
    assert evaluate.main(list(map(str, ["--model", tiny_mlm_dir, "--mlm-text", text, "--mlm-seeds", 2,
                                        "--out", out]))) == 0
    mlm = json.loads(out.read_text())["mlm"]
    model, tokenizer = evaluate.load_model(str(tiny_mlm_dir))
    rows = pack_sequences([" ".join(sentences[:120])], tokenizer, model.config.max_length)
    targets = [[t for t in evaluate.held_out_mask(tokenizer, rows, seed).labels.flatten().tolist() if t != IGNORE_INDEX]
               for seed in (0, 1)]
    counts = Counter(targets[0] + targets[1])
    token = min(counts, key=lambda t: (-counts[t], t))  # a tie: the lowest id
    assert mlm["constant_guess_token"] == tokenizer.decode([token])
    assert mlm["constant_guess_accuracy"] == pytest.approx(sum(t.count(token) / len(t) for t in targets) / 2)
    assert 0 < mlm["constant_guess_accuracy"] < 1 and mlm["masks"] == 2
    assert f"'constant_guess_accuracy': {round(mlm['constant_guess_accuracy'], 4)}" in capsys.readouterr().out


def test_evaluate_classifier(tiny_clf_dir, tokenizer, sentences):
    model = roberta.RobertaForSequenceClassification.from_pretrained(tiny_clf_dir)
    model.train()
    texts, labels = sentences[:30] + ["x " * 500], [i % 2 for i in range(31)]  # one text longer than the model
    m = evaluate.evaluate_classifier(model, tokenizer, texts, labels, batch_size=8)
    assert m["n"] == 31 and 0 <= m["accuracy"] <= 1 and math.isfinite(m["loss"]) and 0 <= m["macro_f1"] <= 1
    assert sum(map(sum, m["confusion"])) == 31
    assert sum(m["confusion"][i][i] for i in range(2)) == round(m["accuracy"] * 31)
    assert model.training  # mode restored
    with pytest.raises(ValueError, match="do not fit"):
        evaluate.evaluate_classifier(model, tokenizer, ["a"], [5])


# 7 to 156 tokens (`sharp_classifier` reads 64), answered both ways: the last two are read in 2 and 3 windows
OF_MANY_LENGTHS = ["the cat.", "The river sees the city of London at night.", "A dog is near the bright sun every day.",
                   "This film sees France again. The old man hates good music today.",
                   "A dog follows good music at night. A dog follows good music quietly. The old man is near good "
                   "music not at all.",
                   "The old man follows the river every day and our team sees a small bird near the house at night. "
                   * 3]


def _one_at_a_time(model, tokenizer, texts, **options):
    """`classifier_logits` of each text alone (N, L): a batch of one has no other text to be mixed up with."""
    return torch.cat([evaluate.classifier_logits(model, tokenizer, [text], **options) for text in texts])


@pytest.mark.parametrize("long_text", ["first", "windows"])
def test_classifier_logits_are_each_texts_own(sharp_classifier, tokenizer, long_text):
    """`classifier_logits` runs the texts (or their windows) sorted by length, to pad less: each text gets the
    logits it gets alone, in its own place, whichever texts share its batch."""
    together = evaluate.classifier_logits(sharp_classifier, tokenizer, OF_MANY_LENGTHS, batch_size=2,
                                          long_text=long_text)
    alone = _one_at_a_time(sharp_classifier, tokenizer, OF_MANY_LENGTHS, long_text=long_text)
    torch.testing.assert_close(together, alone, rtol=1e-4, atol=1e-5)
    assert len(set(alone.argmax(-1).tolist())) == 2  # both answers: mixed up, texts would get the other one


def test_classifier_logits_of_long_texts_read_whole_are_the_pipelines(sharp_classifier, tokenizer):
    """long_text="windows" averages the logits over a text's windows as `roberta.pipeline` does: the same
    probabilities, of texts read in one window and in several."""
    texts = [normalize_for_classifier(text) for text in OF_MANY_LENGTHS]  # as classifier_logits reads them
    logits = evaluate.classifier_logits(sharp_classifier, tokenizer, OF_MANY_LENGTHS, batch_size=2,
                                        long_text="windows")
    # on the CPU: the pipeline moves its model to its device, and this one is the session's
    results = roberta.pipeline("sentiment-analysis", sharp_classifier, tokenizer, device="cpu", batch_size=2)(texts)
    assert [r[0].get("windows", 1) for r in results] == [1, 1, 1, 1, 2, 3]
    labels = sharp_classifier.config.id2label
    expected = [[next(r["score"] for r in result if r["label"] == labels[i]) for i in range(2)] for result in results]
    torch.testing.assert_close(logits.softmax(-1), torch.tensor(expected), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("long_text", ["first", "windows"])
def test_evaluate_classifier_scores_each_texts_own_logits(sharp_classifier, tokenizer, long_text):
    """The accuracy and loss are those of each text's own logits (one forward pass per text) against its own
    label, the texts read in batches of different lengths."""
    labels = [i % 2 for i in range(len(OF_MANY_LENGTHS))]  # neighbours differ: texts whose logits were swapped
    m = evaluate.evaluate_classifier(sharp_classifier, tokenizer, OF_MANY_LENGTHS, labels, batch_size=2,
                                     long_text=long_text)
    alone = _one_at_a_time(sharp_classifier, tokenizer, OF_MANY_LENGTHS, long_text=long_text)
    gold = torch.tensor(labels)
    assert m["accuracy"] == pytest.approx((alone.argmax(-1) == gold).float().mean().item())
    assert m["loss"] == pytest.approx(torch.nn.functional.cross_entropy(alone, gold).item(), rel=1e-5)


def test_evaluate_classifier_metrics_of_known_predictions(tiny_clf_dir, tokenizer, monkeypatch):
    """The metrics themselves, on logits chosen to predict 0, 1, 1, 1 against gold 0, 0, 0, 1: confusion is
    [true][predicted], and macro-F1 is the mean of each class's F1 (both 0.5 here; macro recall would be 2/3)."""
    model = roberta.RobertaForSequenceClassification.from_pretrained(tiny_clf_dir)
    gold = [0, 0, 0, 1]
    logits = torch.tensor([[2.0, 0.0], [0.0, 2.0], [0.0, 2.0], [0.0, 2.0]])
    monkeypatch.setattr(evaluate, "classifier_logits", lambda *args, **kwargs: logits)
    m = evaluate.evaluate_classifier(model, tokenizer, ["a", "b", "c", "d"], gold)
    assert m["confusion"] == [[1, 2], [0, 1]]  # two true 0s predicted 1
    assert m["accuracy"] == pytest.approx(0.5)
    assert m["macro_f1"] == pytest.approx(0.5)  # class 0: 2*1/(1+3); class 1: 2*1/(3+1)
    assert m["loss"] == pytest.approx(torch.nn.functional.cross_entropy(logits, torch.tensor(gold)).item())


@pytest.mark.slow  # end-to-end script run, several seconds
def test_evaluate_cli_writes_and_merges_json(tiny_mlm_dir, tiny_clf_dir, sentences, tmp_path):
    text = tmp_path / "valid.txt"
    text.write_text("\n".join(" ".join(sentences[i:i + 4]) for i in range(0, 200, 4)) + "\n")
    labeled = tmp_path / "sst2-dev.tsv"
    labeled.write_text("sentence\tlabel\n" +
                       "".join(f"{s.lower()[:-1]} .\t{i % 2}\n" for i, s in enumerate(sentences[:40])))
    imdb = tmp_path / "imdb.tsv"
    imdb.write_text("text\tlabel\n" + "".join(f"{s}\t{i % 2}\n" for i, s in enumerate(sentences[:60])))
    out = tmp_path / "metrics.json"
    out.write_text(json.dumps({"earlier": {"kept": True}}))
    r = run_module("train.evaluate", "--model", tiny_mlm_dir, "--mlm-text", text, "--out", out)
    assert r.returncode == 0, r.stderr
    assert evaluate.main(list(map(str, ["--model", tiny_clf_dir, "--labeled", labeled, "--imdb", imdb, "--imdb-n", 25,
                                        "--out", out]))) == 0  # in this process: an interpreter start is 3 s
    metrics = json.loads(out.read_text())
    assert metrics["earlier"] == {"kept": True}
    assert metrics["mlm"]["tokens"] > 0 and math.isfinite(metrics["mlm"]["perplexity"])
    assert 0 <= metrics["mlm"]["accuracy"] <= 1
    assert metrics["labeled"]["n"] == 40 and 0 <= metrics["labeled"]["accuracy"] <= 1
    assert metrics["imdb"]["n"] == 25 and 0 <= metrics["imdb"]["accuracy"] <= 1


@pytest.mark.slow  # end-to-end script run, several seconds
def test_evaluate_cli_mlm_max_length(tiny_mlm_dir, sentences, tmp_path, capsys, monkeypatch):
    text = tmp_path / "valid.txt"
    text.write_text(" ".join(sentences[:120]) + "\n")
    runs = {}
    for length in (None, 16):  # the first as `python -m`, the rest in this process (an interpreter start is 3 s)
        out = tmp_path / f"{length}.json"
        argv = (["--model", tiny_mlm_dir, "--mlm-text", text, "--out", out]
                + (["--max-length", length] if length else []))
        if length is None:
            r = run_module("train.evaluate", *argv)
            assert r.returncode == 0, r.stderr
        else:
            assert evaluate.main(list(map(str, argv))) == 0
        runs[length] = json.loads(out.read_text())["mlm"]
    assert runs[16]["max_length"] == 16 and runs[None]["max_length"] > 16
    out = tmp_path / "masks.json"  # the mean over 3 fixed masks: seeds 0, 1, 2
    assert evaluate.main(list(map(str, ["--model", tiny_mlm_dir, "--mlm-text", text, "--mlm-seeds", 3,
                                        "--out", out]))) == 0
    three = json.loads(out.read_text())["mlm"]
    model, tokenizer = evaluate.load_model(str(tiny_mlm_dir))
    rows = pack_sequences([" ".join(sentences[:120])], tokenizer, model.config.max_length)
    draws = [evaluate.evaluate_mlm(model, tokenizer, rows, seed=s) for s in range(3)]
    assert three["masks"] == 3 and three["accuracy_per_mask"] == pytest.approx([d["accuracy"] for d in draws])
    assert three["accuracy_per_mask"][0] == pytest.approx(runs[None]["accuracy"])  # the first mask is --seed's
    assert three["loss"] == pytest.approx(sum(d["loss"] for d in draws) / 3)
    assert three["tokens"] == sum(d["tokens"] for d in draws)
    assert runs[16]["sequences"] > runs[None]["sequences"]  # the same text in shorter rows
    # --cache-dir '' is no cache, as it is to train.pretrain: it wrote packed-*.safetensors into the working folder
    monkeypatch.chdir(tmp_path)
    assert evaluate.main(list(map(str, ["--model", tiny_mlm_dir, "--mlm-text", text, "--cache-dir", ""]))) == 0
    assert not list(tmp_path.glob("packed-*"))
    capsys.readouterr()
    assert evaluate.main(list(map(str, ["--model", tiny_mlm_dir, "--mlm-text", text, "--mlm-max-length", 10_000]))) == 2
    assert "--max-length must be between 3 and" in capsys.readouterr().err  # (the old name still works)


def test_evaluate_max_length_0_is_refused_like_any_other_bad_length(tiny_mlm_dir, tiny_clf_dir, train_files,
                                                                     capsys):
    """--max-length 0 was the model's longest input without a word (-5, 2 and 1,000 were refused)."""
    for model, data in [(tiny_clf_dir, ["--labeled", str(train_files / "dev.tsv")]),
                        (tiny_mlm_dir, ["--mlm-text", str(train_files / "valid.txt")])]:
        for length in ("0", "2", "-5"):
            assert evaluate.main(["--model", str(model), *data, "--max-length", length]) == 2, (data, length)
            err = capsys.readouterr().err
            assert err.startswith("error: --max-length must be between 3 and ") and err.endswith(f", got {length}\n")


def test_evaluate_cli_rejects_wrong_head(tiny_mlm_dir, tmp_path, capsys):
    labeled = tmp_path / "dev.tsv"
    labeled.write_text("sentence\tlabel\ngood\t1\n")
    assert evaluate.main(["--model", str(tiny_mlm_dir), "--labeled", str(labeled)]) == 2
    err = capsys.readouterr().err
    assert "masked-LM model" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_evaluate_dev_slice_is_refused_without_one_recorded_or_beside_labeled(tiny_clf_dir, train_files, capsys):
    """--dev-slice scores the dev set a classifier's fine-tuning held out of its training file: a classifier whose
    metrics.json records none (its dev set is a file) is refused in one line naming what to give instead, and so is
    --dev-slice given with --labeled (both the data to score)."""
    assert evaluate.main(["--model", str(tiny_clf_dir), "--dev-slice"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: --dev-slice: {tiny_clf_dir} records no dev set held out of its training file")
    assert "give --labeled FILE" in err and "Traceback" not in err
    with pytest.raises(SystemExit) as exit_info:
        evaluate.main(["--model", str(tiny_clf_dir), "--dev-slice", "--labeled", str(train_files / "dev.tsv")])
    assert exit_info.value.code == 2
    assert "--labeled and --dev-slice both give the labelled data to score" in capsys.readouterr().err


def test_evaluate_cli_bad_options_are_one_line_errors(tiny_clf_dir, train_files, tmp_path, capsys):
    labeled = ["--model", str(tiny_clf_dir), "--labeled", str(train_files / "dev.tsv")]
    expected = "--device must be 'cpu', 'cuda', 'cuda:N', -1 (the CPU) or N (a CUDA device), got "
    for extra, message in [(["--batch-size", "0"], "--batch-size must be at least 1"),  # "range() arg 3 ..."
                           (["--device", "nonsense"], f"{expected}'nonsense'"),  # RuntimeError traceback
                           (["--device", "cuda:99"], "--device 'cuda:99': this machine has"),  # AssertionError or
                           # RuntimeError; "mps" (which roberta.pipeline refuses) and "meta" tracebacks at the model
                           (["--device", "mps"], f"{expected}'mps': this package runs on the CPU or a CUDA device"),
                           (["--device", "meta"], f"{expected}'meta': this package runs on the CPU or a CUDA device")]:
        with pytest.raises(SystemExit) as exit_info:
            evaluate.main([*labeled, *extra])
        err = capsys.readouterr().err
        assert exit_info.value.code == 2 and f"error: {message}" in err and "Traceback" not in err, (extra, err)
    assert evaluate.parse_args([*labeled, "--device", "-1"]).device == "cpu"  # as roberta.pipeline takes it
    # was "need as many labels as texts (and at least one): 0 texts, 0 labels"
    assert evaluate.main(["--model", str(tiny_clf_dir), "--imdb", str(train_files / "imdb.tsv"), "--imdb-n", "0"]) == 2
    assert ("error: --imdb-n must be at least 1 review (--imdb '' skips the IMDB sample), got 0"
            in capsys.readouterr().err)
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    assert evaluate.main([*labeled, "--out", str(a_file)]) == 2  # was a NotADirectoryError traceback, after the work
    assert capsys.readouterr().err == f"error: --out {a_file} is not a .json file: give a .json file or a folder\n"
    assert evaluate.main([*labeled, "--out", str(tmp_path / "results.txt")]) == 2  # was JSON in a .txt file
    assert "is not a .json file" in capsys.readouterr().err and not (tmp_path / "results.txt").exists()
    folder = tmp_path / "run"  # a folder: merged into its metrics.json, not written over it
    folder.mkdir()
    (folder / "metrics.json").write_text(json.dumps({"dev_accuracy": 0.5}))
    assert evaluate.main([*labeled, "--out", str(folder)]) == 0
    metrics = json.loads((folder / "metrics.json").read_text())
    assert metrics["dev_accuracy"] == 0.5 and metrics["labeled"]["n"] == 60


# ----- push -----
@pytest.fixture
def model_folder(tiny_mlm_dir, tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    for name in ("config.json", "model.safetensors", "tokenizer.json"):
        (folder / name).write_bytes((tiny_mlm_dir / name).read_bytes())
    roberta.save_tokenizer(roberta.load_tokenizer(folder), folder, roberta.load_config(folder).max_length)
    (folder / "README.md").write_text("---\nlicense: mit\n---\n# card\n")
    return folder


def run_push(*args, env):
    """`python -m train.push ARGS`, which must end on its own: a push that hangs or retries for a minute fails."""
    try:
        return run_module("train.push", *args, env=env, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail(f"train.push {' '.join(map(str, args))} with {env} did not stop within 60 s: with no Hub to "
                    "reach it must fail at the first request, not wait or retry")


@pytest.mark.slow  # end-to-end script run, several seconds
def test_push_offline_fails_fast_and_clearly(model_folder):
    # an endpoint that refuses connections, whatever else runs on this machine: a port bound here and never
    # listened on (no network needed, nothing answers)
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        endpoint = "http://127.0.0.1:%d" % closed.getsockname()[1]
        r = run_push(model_folder, "--repo-id", "someone/tiny", env={"HF_ENDPOINT": endpoint, "HF_HUB_OFFLINE": "0"})
    assert r.returncode == 2, r.stderr
    assert f"cannot reach the Hugging Face Hub at {endpoint}" in r.stderr and "Traceback" not in r.stderr
    r = run_push(model_folder, "--repo-id", "someone/tiny", env={"HF_HUB_OFFLINE": "1"})
    assert r.returncode == 2 and "cannot reach the Hugging Face Hub" in r.stderr and "offline mode" in r.stderr


@pytest.mark.slow  # end-to-end script run, several seconds
def test_push_rejects_incomplete_folder(model_folder, monkeypatch):
    monkeypatch.setattr("huggingface_hub.HfApi", lambda *a, **k: pytest.fail("must not go online"))
    (model_folder / "README.md").unlink()
    with pytest.raises(push.PushError, match="lacks README.md"):
        push.push_folder(model_folder, "someone/tiny")
    r = run_module("train.push", model_folder, "--repo-id", "someone/tiny")
    assert r.returncode == 2 and "lacks README.md" in r.stderr


def test_push_refuses_a_folder_without_tokenizer_config_and_says_how_to_write_it(model_folder, tmp_path, monkeypatch,
                                                                                 capsys):
    """Without tokenizer_config.json transformers reads tokenizer.json as a RobertaTokenizer, without the normalizer
    (the shipped classifier's lower-casing): such a folder was uploaded. Refused; train.export writes the file."""
    from train import export

    monkeypatch.setattr("huggingface_hub.HfApi", lambda *a, **k: pytest.fail("must not go online"))
    written = (model_folder / "tokenizer_config.json").read_text()
    (model_folder / "tokenizer_config.json").unlink()
    assert push.main([str(model_folder), "--repo-id", "someone/tiny"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {model_folder} lacks tokenizer_config.json") and err.count("\n") == 1
    assert f"python -m train.export {model_folder} NEW_FOLDER` writes tokenizer_config.json" in err
    tokenizer_json = (model_folder / "tokenizer.json").read_bytes()
    assert export.main([str(model_folder), str(tmp_path / "exported")]) == 0  # as the message says
    assert (tmp_path / "exported" / "tokenizer_config.json").read_text() == written  # roberta.save_tokenizer's
    assert (tmp_path / "exported" / "tokenizer.json").read_bytes() == tokenizer_json  # untouched
    assert push.main([str(tmp_path / "exported"), "--repo-id", "someone/tiny", "--dry-run"]) == 0


@pytest.mark.parametrize("broken", ["model.safetensors", "tokenizer.json", "tokenizer_config.json", "config.json"])
def test_push_refuses_a_folder_that_does_not_load_before_any_request(model_folder, monkeypatch, capsys, broken):
    """A garbage file passed (only existence was checked) and stopped at "cannot reach the Hub", or uploaded:
    the folder is loaded strictly with roberta first, and a file that does not load is one line naming it."""
    monkeypatch.setattr("huggingface_hub.HfApi", lambda *a, **k: pytest.fail("must not go online"))
    (model_folder / broken).write_bytes(b"garbage")
    for argv in ([], ["--dry-run"]):
        assert push.main([str(model_folder), "--repo-id", "someone/tiny", *argv]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: {model_folder} does not load, so it is not uploaded: {model_folder / broken}")
        assert err.count("\n") == 1 and "Traceback" not in err


def test_push_reads_metrics_json_and_writes_the_card_before_any_request(model_folder, monkeypatch, capsys):
    """A corrupt metrics.json was a ValueError traceback in --dry-run, and a real push created the repo and uploaded
    the folder (the corrupt file too) before it crashed writing the card, leaving a Hub repo without one. Now it is
    one line before any request."""
    monkeypatch.setattr("huggingface_hub.HfApi", lambda *a, **k: pytest.fail("must not go online"))
    (model_folder / "metrics.json").write_text('{"x": \n')
    for argv in (["--dry-run"], []):
        assert push.main([str(model_folder), "--repo-id", "someone/tiny", *argv]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: {model_folder} is not uploaded: {model_folder / 'metrics.json'}: not a "
                              "metrics file") and err.count("\n") == 1, err
    (model_folder / "metrics.json").unlink()
    (model_folder / "README.md").write_bytes(b"\xff\xfe not UTF-8")  # a card that cannot be read: before any request
    assert push.main([str(model_folder), "--repo-id", "someone/tiny"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {model_folder}: its model card cannot be written, so nothing is uploaded")
    assert err.count("\n") == 1


def test_push_refuses_a_tokenizer_that_is_not_the_models(model_folder, tiny_config, monkeypatch, capsys):
    """A tokenizer.json with more tokens than the model's embeddings (another model's) loads on its own."""
    monkeypatch.setattr("huggingface_hub.HfApi", lambda *a, **k: pytest.fail("must not go online"))
    roberta.RobertaForMaskedLM(dataclasses.replace(tiny_config, vocab_size=100)).save_pretrained(model_folder)
    with pytest.raises(push.PushError, match="does not load.*do not belong together"):
        push.push_folder(model_folder, "someone/tiny")


def test_push_dry_run_lists_what_would_be_uploaded_without_a_request(model_folder, monkeypatch, capsys):
    monkeypatch.setattr("huggingface_hub.HfApi", lambda *a, **k: pytest.fail("must not go online"))
    (model_folder / "checkpoints" / "step-00000002").mkdir(parents=True)
    (model_folder / "checkpoints" / "step-00000002" / "trainer.pt").write_bytes(b"x")
    (model_folder / "optimizer.pt").write_bytes(b"x")
    model_card.write_model_card(model_folder, title="MiniRoBERTa", task="fill-mask", metrics={}, recipe={})
    assert push.main([str(model_folder), "--repo-id", "someone/tiny", "--dry-run"]) == 0
    *lines, last = capsys.readouterr().out.splitlines()
    sizes = {line.split()[-1]: int(line.split()[0].replace(",", "")) for line in lines}
    names = ["README.md", "config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"]
    assert sorted(sizes) == names  # no checkpoint, no optimizer state
    assert sizes["model.safetensors"] == (model_folder / "model.safetensors").stat().st_size
    assert sizes["README.md"] == len(model_card.card_for(model_folder, "someone/tiny").encode())  # the card pushed
    assert last.startswith("5 files, ") and last.endswith("-> https://huggingface.co/someone/tiny (dry run: nothing "
                                                          "uploaded)")
    assert push.main([str(model_folder), "--repo-id", "not-a-repo-id", "--dry-run"]) == 2


PICKLES = ["training_args.bin", "pytorch_model.bin", "sub/x.pkl", "state.pickle", "model.joblib", "optimizer.pt"]


def test_push_leaves_out_every_pickle_and_names_it(model_folder, monkeypatch, capsys):
    """Only *.pt, *.pth and *.ckpt were left out: a Trainer's training_args.bin (a torch.save pickle), a
    pytorch_model.bin, *.pkl went up, and the Hub flags a repo for them. Every pickle is left out, and named."""
    model_card.write_model_card(model_folder, title="MiniRoBERTa", task="fill-mask", metrics={}, recipe={})
    for name in PICKLES + ["checkpoints/step-00000002/trainer.pt"]:
        (model_folder / name).parent.mkdir(parents=True, exist_ok=True)
        torch.save({"x": 1}, model_folder / name)
    assert push.main([str(model_folder), "--repo-id", "someone/tiny", "--dry-run"]) == 0
    out, err = capsys.readouterr()
    listed = [line.split()[-1] for line in out.splitlines()[:-1]]
    assert listed == ["README.md", "config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"]
    assert err.startswith("note: not uploaded: ") and err.count("\n") == 1, err
    assert all(name in err for name in PICKLES) and "checkpoints" not in err  # checkpoints are left out as folders
    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "HfApi", RecordingApi)
    assert push.main([str(model_folder), "--repo-id", "someone/tiny"]) == 0
    sent = push.upload_files(model_folder, ignore_patterns=RecordingApi.called()["upload_folder"]["ignore_patterns"])
    assert [p.as_posix() for p in sent] == listed[1:]  # what upload_folder sends with those patterns
    err = capsys.readouterr().err
    assert err.startswith("note: not uploaded: ") and all(name in err for name in PICKLES), err


def test_push_refuses_a_card_that_links_a_file_the_upload_lacks(model_folder, monkeypatch, capsys):
    """A card whose figure was deleted from the folder was pushed, its image broken on the Hub."""
    monkeypatch.setattr("huggingface_hub.HfApi", lambda *a, **k: pytest.fail("must not go online"))
    card = (model_folder / "README.md").read_text()
    (model_folder / "README.md").write_text(card + "\n![Curves](curves.png)\n\nSee [the notes](notes/more.md#a), "
                                            "[the args](training_args.bin), [Usage](#usage) and "
                                            "[roberta-base](https://huggingface.co/roberta-base).\n")
    torch.save({}, model_folder / "training_args.bin")  # there, but a pickle: never uploaded
    for argv in (["--dry-run"], []):
        assert push.main([str(model_folder), "--repo-id", "someone/tiny", *argv]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: {model_folder} is not uploaded: its model card links curves.png, "
                              "notes/more.md, training_args.bin") and err.count("\n") == 1, err
    (model_folder / "curves.png").write_bytes(b"png")
    (model_folder / "notes").mkdir()
    (model_folder / "notes" / "more.md").write_text("# A\n")
    assert push.main([str(model_folder), "--repo-id", "someone/tiny", "--dry-run"]) == 2
    assert "its model card links training_args.bin" in capsys.readouterr().err
    (model_folder / "README.md").write_text(card + "\n![Curves](curves.png) [notes](notes/more.md)\n")
    assert push.main([str(model_folder), "--repo-id", "someone/tiny", "--dry-run"]) == 0
    listed = [line.split()[-1] for line in capsys.readouterr().out.splitlines()[:-1]]
    assert {"curves.png", "notes/more.md"} <= set(listed)


def test_push_uploads_through_huggingface_hub(model_folder, monkeypatch):
    calls = {}

    class FakeApi:
        def __init__(self, endpoint=None, token=None):
            calls["token"] = token

        def create_repo(self, repo_id, private, exist_ok, repo_type):
            calls["create"] = (repo_id, private, exist_ok)
            return f"https://huggingface.co/{repo_id}"

        def upload_folder(self, folder_path, repo_id, **kwargs):
            calls["upload"] = (folder_path, repo_id, kwargs["ignore_patterns"])

        def upload_file(self, path_or_fileobj, path_in_repo, repo_id, **kwargs):
            calls["card"] = (path_or_fileobj.decode(), path_in_repo, repo_id)

    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "HfApi", FakeApi)
    url = push.push_folder(model_folder, "someone/tiny", token="hf_x", private=True)
    assert url == "https://huggingface.co/someone/tiny"
    assert calls["create"] == ("someone/tiny", True, True) and calls["token"] == "hf_x"
    assert calls["upload"][:2] == (str(model_folder), "someone/tiny") and "*.pt" in calls["upload"][2]
    assert "README.md" in calls["upload"][2] and calls["card"][1:] == ("README.md", "someone/tiny")
    assert calls["card"][0] == model_card.card_for(model_folder, "someone/tiny")  # the usage names the repo


class RecordingApi:
    """huggingface_hub.HfApi as train.push and scripts.deploy_space call it, recording every call's arguments."""
    calls: list = []

    def __init__(self, endpoint=None, token=None):
        RecordingApi.calls = [("HfApi", {"token": token})]

    def create_repo(self, repo_id, **kwargs):
        RecordingApi.calls.append(("create_repo", {"repo_id": repo_id, **kwargs}))
        return f"https://huggingface.co/{repo_id}"

    def upload_folder(self, **kwargs):
        RecordingApi.calls.append(("upload_folder", kwargs))

    def upload_file(self, **kwargs):
        RecordingApi.calls.append(("upload_file", kwargs))

    @classmethod
    def called(cls) -> dict:
        return {name: kwargs for name, kwargs in cls.calls}


def test_push_cli_passes_private_token_and_message_to_the_hub(model_folder, monkeypatch, capsys):
    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "HfApi", RecordingApi)
    assert push.main([str(model_folder), "--repo-id", "someone/tiny"]) == 0  # the defaults
    called = RecordingApi.called()
    assert called["HfApi"]["token"] is None and called["create_repo"]["private"] is False
    assert called["upload_folder"]["commit_message"] == "Upload model"
    assert push.main([str(model_folder), "--repo-id", "someone/tiny", "--private", "--token", "hf_secret",
                      "--message", "Phase 3 weights"]) == 0
    called = RecordingApi.called()
    assert called["HfApi"]["token"] == "hf_secret"
    assert called["create_repo"] == {"repo_id": "someone/tiny", "private": True, "exist_ok": True, "repo_type": "model"}
    assert called["upload_folder"]["commit_message"] == "Phase 3 weights"
    assert called["upload_file"]["commit_message"] == "Phase 3 weights: model card"
    assert "pushed" in capsys.readouterr().out


def test_card_for_rewrites_only_the_usage_for_where_the_model_ships(model_folder):
    """A card is written in the run folder; card_for names the shipped folder or Hub id in its usage, and
    keeps every other section as it was."""
    metrics = {"dev_accuracy": 0.85}
    model_card.write_model_card(model_folder, title="MiniRoBERTa", task="fill-mask", metrics=metrics,
                                recipe={"command": "python -m train.pretrain --out runs/mlm"},
                                notes="Trained in runs/mlm.")
    written = (model_folder / "README.md").read_text()
    assert f'model="{model_folder}"' in written
    card = model_card.card_for(model_folder, "someone/tiny")
    before, after = written.split("## Usage", 1), card.split("## Usage", 1)
    assert before[0] == after[0] and after[1].split("\n## ", 1)[1] == before[1].split("\n## ", 1)[1]
    assert 'pipeline("fill-mask", model="someone/tiny")' in after[1] and str(model_folder) not in after[1]
    assert "Trained in runs/mlm." in card  # the notes (provenance) are kept


def test_card_for_takes_the_model_index_from_the_metrics_as_they_are_now(model_folder):
    """A GPU run writes its card after training's one-mask check; `train.evaluate --out RUN/metrics.json` adds
    the 5-mask figure later, and the card that ships (scripts.release, train.push) shows that one on the Hub."""
    training = {"eval_data": "data/wikitext-2/wiki.valid.tokens.xz", "eval_accuracy": 0.527, "eval_perplexity": 13.4}
    model_card.write_model_card(model_folder, title="MiniRoBERTa", task="fill-mask", metrics=training, recipe={})
    written = (model_folder / "README.md").read_text()
    assert model_card.card_for(model_folder, str(model_folder)) == written  # no metrics.json yet: as written
    (model_folder / "metrics.json").write_text(json.dumps({**training, "mlm": {
        "source": "../shared/data/wikitext-2/wiki.valid.tokens", "accuracy": 0.528, "perplexity": 13.18}}))
    card = model_card.card_for(model_folder, "someone/tiny")
    (result,) = _front_matter(card)["model-index"][0]["results"]
    assert result["metrics"] == [{"type": "accuracy", "value": 0.528, "name": "masked-token accuracy"},
                                 {"type": "perplexity", "value": 13.18, "name": "MLM perplexity"}]
    assert result["dataset"]["config"] == "wikitext-2-v1"  # the `<unk>`-marked .tokens files, not raw-v1
    assert card.split("\n---\n", 1)[1].split("## Usage")[0] == written.split("\n---\n", 1)[1].split("## Usage")[0]


# ----- model card -----
def _front_matter(text):
    assert text.startswith("---\n")
    return yaml.safe_load(text.split("---\n", 2)[1])


def test_model_card_fill_mask(model_folder):
    (model_folder / "curves.png").write_bytes(b"\x89PNG")
    metrics = {"mlm": {"source": "../shared/data/wikitext-2/wiki.valid.tokens", "loss": 3.25, "perplexity": 25.79,
                       "accuracy": 0.4123, "tokens": 31337}}
    recipe = {"command": "python -m train.pretrain --preset mini", "tokens_seen": 4_200_000, "wall_time": "2h 5m",
              "hardware": "2 CPU cores", "corpus": "../shared/data/wikipedia-en=0.5,../shared/data/imdb/unsup.txt=0.5"}
    path = model_card.write_model_card(model_folder, title="MiniRoBERTa", task="fill-mask", metrics=metrics,
                                       recipe=recipe, notes="Trained for a demo.", repo_id="someone/mini")
    text = path.read_text()
    meta = _front_matter(text)
    assert meta["pipeline_tag"] == "fill-mask" and meta["license"] == "mit"
    # the folder loads in transformers: the Hub shows its snippet and widget for this library name only
    assert meta["library_name"] == "transformers"
    assert meta["tags"] == ["roberta", "from-scratch", "roberta-from-scratch", "masked-lm"]
    assert set(meta["metrics"]) >= {"accuracy", "perplexity"}
    assert set(meta["datasets"]) == {"Salesforce/wikitext", "wikimedia/wikipedia", "stanfordnlp/imdb"}
    assert meta["model-index"][0]["results"][0]["metrics"][0]["value"] in (25.79, 0.4123)
    for expected in ("25.79", "0.4123", "31,337", "4,200,000", "2h 5m", "2 CPU cores",
                     "python -m train.pretrain --preset mini", "](curves.png)", "Trained for a demo.",
                     'pipeline("fill-mask", model="someone/mini")'):
        assert expected in text
    config = roberta.RobertaConfig.from_dict(json.loads((model_folder / "config.json").read_text()))
    n_params = roberta.RobertaForMaskedLM(config).num_parameters()
    assert f"| parameters | {n_params:,} |" in text


def test_model_card_gives_the_constant_guess_as_the_yardstick_of_the_accuracy_when_recorded(model_folder):
    """A learner cannot tell whether 53% of masked tokens is good: under the Metrics table the card says what always
    guessing the commonest target scores on the same targets (train.evaluate's record), and says nothing of it
    where the record has none (shipped before train.evaluate measured it)."""
    mlm = {"source": "../shared/data/wikitext-2/wiki.valid.tokens", "accuracy": 0.53, "tokens": 31337, "masks": 5}
    plain = model_card.write_model_card(model_folder, title="M", task="fill-mask", metrics={"mlm": mlm},
                                        recipe={}).read_text()
    assert "always guessed" not in plain and "constant_guess" not in plain
    guessed = {**mlm, "constant_guess_token": " the", "constant_guess_accuracy": 0.0561}
    text = model_card.write_model_card(model_folder, title="M", task="fill-mask", metrics={"mlm": guessed},
                                       recipe={}).read_text()
    table = text.split("\n## Metrics\n")[1].split("\n## ")[0]
    assert ("The yardstick of mlm / accuracy (53.0%) is mlm / constant_guess_accuracy: a model that always guessed "
            "' the', the commonest of the same targets (the same rows and masks), would score 5.6%.") in table
    assert "| mlm / constant_guess_accuracy | 0.0561 |" in table
    assert "| mlm / constant_guess_token | ' the' |" in table  # its space shown: a table cell would trim it


def test_model_card_curves_caption_says_which_rows_the_curve_reads(model_folder):
    """The curve's periodic evaluations read the first --eval-rows held-out rows, the Metrics table all of them: the
    figure ended 3 points above the table under it, unexplained. The caption gives both, from the log and metrics."""
    (model_folder / "curves.png").write_bytes(b"\x89PNG")
    metrics = {"eval_accuracy": 0.5, "eval_loss": 2.6, "eval_tokens": 9_000, "command": "python -m train.pretrain"}
    card = model_card.write_model_card(model_folder, title="M", task="fill-mask", metrics=metrics, recipe={})
    assert "](curves.png)\n\n## Limitations" in card.read_text()  # no log: the figure alone
    (model_folder / "log.jsonl").write_text(json.dumps({"type": "eval", "step": 9, "loss": 2.25, "accuracy": 0.625,
                                                        "eval_tokens": 1_234, "sequences": 32}) + "\n")
    text = model_card.write_model_card(model_folder, title="M", task="fill-mask", metrics=metrics,
                                       recipe={}).read_text()
    caption = text.split("](curves.png)\n\n")[1].split("\n")[0]
    assert caption.startswith("The evaluation curve reads the first 32 held-out rows (1,234 masked tokens)")
    assert "ends at accuracy 62.5% and loss 2.25" in caption
    assert "eval_ figures read all held-out rows (9,000 masked tokens): accuracy 50.0%, loss 2.60" in caption


def test_model_card_curves_alt_text_says_what_the_figure_shows(model_folder):
    """The figure's alt text was the label "training curves": it says what is plotted, and whose run it is (a weight
    average's members, one line each; a model pretrained in phases, its last phase alone)."""
    from roberta.run_metrics import write_phase_history

    def alt(metrics):
        card = model_card.write_model_card(model_folder, title="M", task="fill-mask", metrics=metrics, recipe={})
        return card.read_text().split("## Training curves\n\n![")[1].split("](curves.png)")[0]

    (model_folder / "curves.png").write_bytes(b"\x89PNG")
    one = alt({"command": "python -m train.pretrain"})
    assert "this model" in one and all(w in one for w in ("training and held-out loss", "held-out accuracy",
                                                           "against tokens seen"))
    averaged = alt({"averaged": 3})
    assert "the 3 runs averaged into this model, one line per run" in averaged and "held-out accuracy" in averaged
    write_phase_history(model_folder, [model_card.RunMetrics(train_tokens=10), model_card.RunMetrics(train_tokens=20)])
    assert "the last pretraining phase only (phase 2, 20 tokens)" in alt({"train_tokens": 20})


def test_model_card_transformers_fill_mask_snippet_reads_a_long_text(model_folder):
    """The card's `transformers` snippet failed on a text longer than the model reads ("index out of range"):
    it truncates, as the model card says."""
    card = model_card.write_model_card(model_folder, title="MiniRoBERTa", task="fill-mask", metrics={},
                                       recipe={}).read_text()
    snippet = "from transformers import pipeline" + card.split("from transformers import pipeline")[1].split("```")[0]
    namespace = {}
    exec(snippet, namespace)  # as the card has it: the model is the folder
    long_text = "<mask> " + "word " * 300  # > max_length tokens
    assert len(namespace["fill"](long_text)) == 5


def test_card_for_ships_a_card_written_before_with_transformers_as_its_library(model_folder):
    """A run's card written with library_name roberta-from-scratch (which hid the Hub's transformers snippet and
    widget) ships (train.push, scripts.release) with library_name transformers, the project a tag."""
    model_card.write_model_card(model_folder, title="MiniRoBERTa", task="fill-mask", metrics={}, recipe={})
    written = (model_folder / "README.md").read_text()
    old = written.replace("library_name: transformers", "library_name: roberta-from-scratch").replace(
        "- roberta-from-scratch\n", "")
    assert "library_name: roberta-from-scratch" in old and "- roberta-from-scratch" not in old
    (model_folder / "README.md").write_text(old)
    card = model_card.card_for(model_folder, "someone/tiny")
    meta = _front_matter(card)
    assert meta["library_name"] == "transformers"
    assert meta["tags"] == ["roberta", "from-scratch", "masked-lm", "roberta-from-scratch"]
    assert card.split("\n---\n", 1)[1].split("## Usage")[0] == old.split("\n---\n", 1)[1].split("## Usage")[0]


@pytest.mark.parametrize("name", ["mini-roberta-mlm", "mini-roberta-sst2"])
def test_shipped_cards_have_the_generators_metadata_and_usage(name):
    """The shipped cards were written by an earlier generator: their library name, tags and Usage are today's."""
    folder = ROOT / "assets" / name
    card = (folder / "README.md").read_text(encoding="utf-8")
    meta = _front_matter(card)
    assert meta["library_name"] == "transformers" and meta["tags"][:3] == ["roberta", "from-scratch",
                                                                          "roberta-from-scratch"]

    def usage(text):
        return text.split("\n## Usage\n", 1)[1].split("\n## ", 1)[0]

    assert usage(card) == usage(model_card.card_for(folder, f"assets/{name}"))


def test_model_index_shows_the_fullest_evaluation(model_folder, tiny_clf_dir, tmp_path):
    """The Hub page's figures are the ones the card headlines: a release's train.evaluate section over
    training's own check of the same text, IMDB reviews read whole over their first 128 tokens."""
    metrics = {"eval_data": "data/wikitext-2/wiki.valid.tokens.xz", "eval_accuracy": 0.51, "eval_perplexity": 14.2,
               "mlm": {"source": "../shared/data/wikitext-2/wiki.valid.tokens", "accuracy": 0.52, "perplexity": 14.0}}
    text = model_card.write_model_card(model_folder, title="MiniRoBERTa", task="fill-mask", metrics=metrics,
                                       recipe={}).read_text()
    (result,) = _front_matter(text)["model-index"][0]["results"]
    assert [(m["type"], m["value"]) for m in result["metrics"]] == [("accuracy", 0.52), ("perplexity", 14.0)]
    folder = tmp_path / "clf"
    folder.mkdir()
    (folder / "config.json").write_bytes((tiny_clf_dir / "config.json").read_bytes())
    metrics = {"dev_accuracy": 0.88, "dev_data": "../shared/data/sst2/dev.tsv", "imdb_accuracy": 0.83,
               "imdb_accuracy_whole": 0.87, "imdb_data": "../shared/data/imdb/train.tsv"}
    text = model_card.write_model_card(folder, title="SST-2 classifier", task="text-classification",
                                       metrics=metrics, recipe={}).read_text()
    values = {r["dataset"]["type"]: r["metrics"] for r in _front_matter(text)["model-index"][0]["results"]}
    assert values == {"stanfordnlp/sst2": [{"type": "accuracy", "value": 0.88}],
                      "stanfordnlp/imdb": [{"type": "accuracy", "value": 0.87}]}


def test_model_index_names_what_its_figures_measure(model_folder, tiny_clf_dir, tmp_path):
    """The Hub showed "Salesforce/wikitext accuracy" (no config; a masked-token figure averaged over maskings) and
    "stanfordnlp/imdb train accuracy" (a held-out sample read whole in windows only roberta.pipeline reads): the
    entries say what they are, from the metrics' own counts."""
    metrics = {"mlm": {"source": "data/wikitext-2/wiki.valid.tokens", "accuracy": 0.52, "perplexity": 14.0, "masks": 5}}
    text = model_card.write_model_card(model_folder, title="MiniRoBERTa", task="fill-mask", metrics=metrics,
                                       recipe={}).read_text()
    (result,) = _front_matter(text)["model-index"][0]["results"]
    assert result["dataset"]["config"] == "wikitext-2-v1"
    assert [m["name"] for m in result["metrics"]] == ["masked-token accuracy (mean of 5 random maskings)",
                                                      "MLM perplexity (mean of 5 random maskings)"]
    assert model_card._dataset_config("data/wikitext-103/wiki.valid.raw") == "wikitext-103-raw-v1"
    folder = tmp_path / "clf"
    folder.mkdir()
    (folder / "config.json").write_bytes((tiny_clf_dir / "config.json").read_bytes())
    metrics = {"dev_accuracy": 0.88, "dev_data": "../shared/data/sst2/dev.tsv", "imdb_accuracy_whole": 0.87,
               "imdb_examples": 321, "max_length": 64, "imdb_data": "../shared/data/imdb/train.tsv"}
    text = model_card.write_model_card(folder, title="SST-2 classifier", task="text-classification",
                                       metrics=metrics, recipe={}).read_text()
    sst2, imdb = _front_matter(text)["model-index"][0]["results"]
    assert "name" not in sst2["metrics"][0] and sst2["dataset"].get("config") is None
    assert imdb["dataset"]["name"] == "stanfordnlp/imdb: 321-review held-out sample of train"
    assert imdb["metrics"][0]["name"] == "accuracy, each review read whole in overlapping 64-token windows"


def test_model_card_classifier_flat_metrics(tiny_clf_dir, tmp_path):
    """The shape train.finetune passes: flat metrics naming their data, a recipe from vars(args) with Nones."""
    folder = tmp_path / "clf"
    folder.mkdir()
    (folder / "config.json").write_bytes((tiny_clf_dir / "config.json").read_bytes())
    metrics = {"dev_accuracy": 0.8765, "dev_data": "../shared/data/sst2/dev.tsv", "imdb_accuracy": None,
               "hardware": {"device": "cpu", "cpu_count": 2}}
    recipe = {"command": "python -m train.finetune", "train": "../shared/data/sst2/train.tsv", "imdb": None,
              "out": "runs/imdb-like-name", "lr": 1e-4, "tokenizer": None}
    text = model_card.write_model_card(folder, title="SST-2 classifier", task="text-classification",
                                       metrics=metrics, recipe=recipe).read_text()
    meta = _front_matter(text)
    assert meta["pipeline_tag"] == "text-classification" and meta["metrics"] == ["accuracy"]
    assert meta["library_name"] == "transformers" and "roberta-from-scratch" in meta["tags"]
    assert meta["datasets"] == ["stanfordnlp/sst2"]  # not imdb: the output folder's name is not data
    result = meta["model-index"][0]["results"][0]
    assert result["dataset"]["type"] == "stanfordnlp/sst2" and result["dataset"]["split"] == "validation"
    assert result["metrics"][0] == {"type": "accuracy", "value": 0.8765}
    assert "| dev_accuracy | 0.8765 |" in text and "| hardware / cpu_count | 2 |" in text
    assert "| lr | 0.0001 |" in text and "None" not in text
    assert "0: negative, 1: positive" in text and "curves.png" not in text
    with pytest.raises(ValueError, match="task"):
        model_card.write_model_card(folder, title="x", task="translation", metrics={}, recipe={})


def test_a_cards_datasets_are_the_known_data_files_not_any_path_that_holds_their_names(tiny_clf_dir, tmp_path):
    """A classifier trained on `imdb-style/train.tsv` (a folder of one's own) got stanfordnlp/imdb on its card, and
    its dev figure an IMDB model-index entry: any path holding "imdb" or "sst2" was taken for that data. The card
    now names a Hub dataset for the shared data's own files (folder and file name, their .xz copies) and for a
    hub: spec's dataset id only."""
    assert model_card.infer_datasets("../shared/data/imdb/train.tsv", "gpu-upload/data/imdb/unsup.txt.xz",
                                     r"C:\data\SST-2\dev.tsv", "../shared/data/sst2/train.tsv") == [
        "stanfordnlp/imdb", "stanfordnlp/sst2"]
    assert model_card.infer_datasets("data/wikipedia-en=0.5,data/wikitext-103/wiki.valid.raw=2",
                                     "../shared/data/wikipedia-en/wiki_03.txt") == [
        "wikimedia/wikipedia", "Salesforce/wikitext"]
    assert model_card.infer_datasets("hub:someone/reviews:default:train=1,hub:stanfordnlp/imdb") == [
        "someone/reviews", "stanfordnlp/imdb"]
    assert model_card.infer_datasets("imdb-style/train.tsv", "imdb/mine.tsv", "my-sst2-runs/dev.tsv",
                                     "runs/sst2", "wikipedia-en-notes.txt", "data/imdb.tsv") == []
    folder = tmp_path / "clf"
    folder.mkdir()
    (folder / "config.json").write_bytes((tiny_clf_dir / "config.json").read_bytes())
    metrics = {"dev_accuracy": 0.75, "dev_data": "imdb-style/dev.tsv", "train_data": "imdb-style/train.tsv"}
    recipe = {"train": "imdb-style/train.tsv", "dev": "imdb-style/dev.tsv"}
    text = model_card.write_model_card(folder, title="x", task="text-classification", metrics=metrics,
                                       recipe=recipe).read_text()
    meta = _front_matter(text)
    assert "datasets" not in meta and "model-index" not in meta and "stanfordnlp" not in text, meta
    assert "Binary sentiment learnt from `imdb-style/train.tsv`" in text


def test_evaluate_shows_progress_bars_and_honours_no_progress(tiny_mlm_dir, tiny_clf_dir, train_files, monkeypatch,
                                                              capsys):
    """31.8 s of silence for 150 IMDB reviews; the bars follow the project's rule (`progress_bars`)."""
    monkeypatch.setattr(evaluate, "progress_bars", lambda no_progress=False: not no_progress)  # as on a terminal
    mlm = ["--model", str(tiny_mlm_dir), "--mlm-text", str(train_files / "valid.txt"), "--mlm-seeds", "2"]
    assert evaluate.main(mlm) == 0
    assert "MLM scoring, mask 2/2" in capsys.readouterr().err
    clf = ["--model", str(tiny_clf_dir), "--imdb", str(train_files / "imdb.tsv"), "--imdb-n", "8", "--max-length", "8"]
    assert evaluate.main(clf) == 0
    err = capsys.readouterr().err
    assert "classifying 8 texts" in err and "windows)" in err
    assert evaluate.main(mlm + ["--no-progress"]) == 0 and evaluate.main(clf + ["--no-progress"]) == 0
    assert capsys.readouterr().err == ""


def test_evaluate_precision_reproduces_scoring_under_autocast_and_is_recorded(tiny_mlm_dir, train_files, tmp_path):
    """Pretraining's final evaluation runs under bf16 autocast; train.evaluate had no way to score that way."""
    model, tokenizer = evaluate.load_model(str(tiny_mlm_dir))
    rows = pack_sequences(evaluate.read_documents(str(train_files / "valid.txt")), tokenizer, model.config.max_length)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        under_bf16 = evaluate.evaluate_mlm(model, tokenizer, rows)
    for precision in ("bf16", "fp32"):
        out = tmp_path / f"{precision}.json"
        assert evaluate.main(["--model", str(tiny_mlm_dir), "--mlm-text", str(train_files / "valid.txt"),
                              "--precision", precision, "--no-progress", "--out", str(out)]) == 0
        scored = json.loads(out.read_text())["mlm"]
        assert scored["precision"] == precision
    assert json.loads((tmp_path / "bf16.json").read_text())["mlm"]["loss"] == pytest.approx(under_bf16["loss"])
    assert scored["loss"] == pytest.approx(evaluate.evaluate_mlm(model, tokenizer, rows)["loss"])  # fp32


def test_model_card_data_of_local_files_says_no_not_given_above_them(model_folder):
    """"Data: - (not given)" stood above a table of the run's data files."""
    recipe = {"command": "python -m train.pretrain", "corpus": "/tmp/data/wt_train.txt", "valid": "/tmp/data/v.txt"}
    text = model_card.write_model_card(model_folder, title="t", task="fill-mask", metrics={}, recipe=recipe).read_text()
    data = text.split("## Data")[1].split("\n## ")[0]
    assert "(not given)" not in data and "| corpus | /tmp/data/wt_train.txt |" in data
    text = model_card.write_model_card(model_folder, title="t", task="fill-mask", metrics={}, recipe={}).read_text()
    assert "- (not given)" in text.split("## Data")[1].split("\n## ")[0]


def test_push_names_the_base_model_in_the_card(model_folder, tiny_clf_dir, tmp_path, monkeypatch, capsys):
    """A classifier's card did not say what it was fine-tuned from: `--base-model USER/NAME` is the front matter's
    base_model (the Hub links the two) and a Base model section, kept by a later push without the option; the Hub
    takes only a Hub id there, so anything else is refused before any request."""
    monkeypatch.setattr("huggingface_hub.HfApi", lambda *a, **k: pytest.fail("must not go online"))
    folder = tmp_path / "clf"
    folder.mkdir()
    for name in ("config.json", "model.safetensors", "tokenizer.json"):
        (folder / name).write_bytes((tiny_clf_dir / name).read_bytes())
    roberta.save_tokenizer(roberta.load_tokenizer(folder), folder, roberta.load_config(folder).max_length)
    from roberta.run_metrics import RunMetrics

    metrics = RunMetrics.from_dict({"init": "runs/mlm", "dev_accuracy": 0.8})
    metrics.write(folder / "metrics.json")
    model_card.write_model_card(folder, title="SST-2 classifier", task="text-classification", metrics=metrics,
                                recipe={})
    assert "base_model" not in _front_matter(model_card.card_for(folder, "someone/tiny-sst2"))
    card = push.model_card(folder, "someone/tiny-sst2", "someone/tiny-mlm")
    assert _front_matter(card)["base_model"] == "someone/tiny-mlm"
    section = card.split("\n## Base model\n", 1)[1].split("\n## ", 1)[0]
    assert "[someone/tiny-mlm](https://huggingface.co/someone/tiny-mlm)" in section and "`runs/mlm`" in section
    assert card.index("## Base model") < card.index("## Architecture")
    (folder / "README.md").write_text(card)
    assert model_card.card_for(folder, "someone/tiny-sst2").count("## Base model") == 1  # kept, once
    assert push.main([str(folder), "--repo-id", "someone/tiny-sst2", "--base-model", "someone/tiny-mlm",
                      "--dry-run"]) == 0
    readme = next(line for line in capsys.readouterr().out.splitlines() if line.endswith(" README.md"))
    assert int(readme.split()[0].replace(",", "")) == len(card.encode())
    assert push.main([str(folder), "--repo-id", "someone/tiny-sst2", "--base-model", "runs/tapt/mlm",
                      "--dry-run"]) == 2
    assert "--base-model is the Hub id" in capsys.readouterr().err


SHIPPED_CLASSIFIER = ROOT / "assets" / "mini-roberta-sst2"


def test_push_refuses_a_base_model_when_the_card_names_an_earlier_phase_of_the_encoder(capsys):
    """The shipped classifier was fine-tuned from an earlier phase of the shipped MLM, which its card's Base model
    section says. `--base-model USER/mini-roberta-mlm` (the README's example) replaced that with "Fine-tuned from
    [USER/mini-roberta-mlm]" and set base_model to weights it was not trained from: refused, before any request."""
    shipped = (SHIPPED_CLASSIFIER / "README.md").read_text(encoding="utf-8")
    phase = re.search(r"phase \d+ of the \d+ phases of `mini-roberta-mlm`", shipped).group(0)
    with pytest.raises(push.PushError) as refused:
        push.model_card(SHIPPED_CLASSIFIER, "someone/mini-roberta-sst2", "someone/mini-roberta-mlm")
    message = str(refused.value)
    assert message.startswith("--base-model someone/mini-roberta-mlm: ") and phase in message
    assert "without --base-model" in message and "\n" not in message
    assert push.main([str(SHIPPED_CLASSIFIER), "--repo-id", "someone/mini-roberta-sst2", "--base-model",
                      "someone/mini-roberta-mlm", "--dry-run"]) == 2
    assert capsys.readouterr().err == f"error: {message}\n"
    kept = push.model_card(SHIPPED_CLASSIFIER, "someone/mini-roberta-sst2")  # without it: the section as shipped
    assert "base_model" not in _front_matter(kept) and phase in kept


def test_a_base_model_keeps_the_cards_account_of_the_encoder_and_links_it(tiny_clf_dir, tmp_path):
    """A card whose Base model section describes the project's encoder (`scripts.release`: the whole shipped MLM,
    "not on the Hub") keeps that account when --base-model names it on the Hub; only the "not on the Hub" sentence
    becomes the link, and base_model is set."""
    from roberta.run_metrics import RunMetrics
    from scripts import release

    folder = tmp_path / "clf"
    folder.mkdir()
    for name in ("config.json", "model.safetensors", "tokenizer.json"):
        (folder / name).write_bytes((tiny_clf_dir / name).read_bytes())
    roberta.save_tokenizer(roberta.load_tokenizer(folder), folder, roberta.load_config(folder).max_length)
    RunMetrics.from_dict({"init_root": "runs/tapt/mlm", "dev_accuracy": 0.8}).write(folder / "metrics.json")
    model_card.write_model_card(folder, title="SST-2 classifier", task="text-classification", metrics={}, recipe={})
    phases = release.read_phases(ROOT / "assets" / "mini-roberta-mlm")
    account = release.base_encoder_text(phases, phases, RunMetrics.read(folder))  # the whole MLM, shipped beside
    (folder / "README.md").write_text(model_card.with_base_model((folder / "README.md").read_text(), None, account))
    assert model_card.NOT_ON_THE_HUB in account and "not the weights" not in account
    card = push.model_card(folder, "someone/sst2", "someone/mini-roberta-mlm")
    assert _front_matter(card)["base_model"] == "someone/mini-roberta-mlm"
    section = card.split("\n## Base model\n", 1)[1].split("\n## ", 1)[0].strip()
    link = "[someone/mini-roberta-mlm](https://huggingface.co/someone/mini-roberta-mlm)"
    assert section == account.replace(model_card.NOT_ON_THE_HUB, f"That encoder is on the Hub as {link}.")


def test_a_card_of_float16_weights_says_so_and_what_loading_gives(model_folder, tmp_path):
    """An exported folder's weights are float16 and nothing in its card said so; the Usage says how they are
    stored, measured from the file, and what each library loads them as, which this test loads to see."""
    import transformers

    from train import export

    model_card.write_model_card(model_folder, title="MiniRoBERTa", task="fill-mask", metrics={}, recipe={})
    assert "stored in" not in model_card.card_for(model_folder, "someone/tiny")  # float32: nothing to say
    folder = export.export(model_folder, tmp_path / "exported", "float16")
    assert model_card.stored_dtype(folder) == "float16"
    usage = model_card.card_for(folder, "someone/tiny").split("\n## Usage\n", 1)[1]
    ours = {p.dtype for p in roberta.RobertaForMaskedLM.from_pretrained(folder).parameters()}
    theirs = {p.dtype for p in transformers.AutoModelForMaskedLM.from_pretrained(folder).parameters()}
    size = (folder / "model.safetensors").stat().st_size / 1e6
    assert ours == theirs == {torch.float32}
    assert (f"The weights are stored in float16 (`model.safetensors`, {size:.1f} MB); `roberta` loads them as "
            f"float32, the precision the model computes in, and `transformers` as config.json's `dtype`, float32.") \
        in usage


def test_a_calibrated_classifiers_card_says_why_it_gives_the_widget_no_examples(tiny_clf_dir, tmp_path):
    """The Hub's widget runs transformers' pipeline: for a calibrated classifier it would show other probabilities
    than the app's, so the card gives it no examples and says so, with the temperature config.json holds."""
    folder = tmp_path / "clf"
    folder.mkdir()
    config = json.loads((tiny_clf_dir / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps(config))
    card = model_card.write_model_card(folder, title="SST-2", task="text-classification", metrics={},
                                       recipe={}).read_text()
    assert "widget" not in card  # uncalibrated: the widget's softmax is the model's own
    (folder / "config.json").write_text(json.dumps({**config, "calibration_temperature": 1.8765}))
    card = model_card.write_model_card(folder, title="SST-2", task="text-classification", metrics={},
                                       recipe={}).read_text()
    assert "widget" not in _front_matter(card)
    assert ("This card gives the Hub's inference widget no examples: the widget runs `transformers`' pipeline, so it "
            "would show the uncalibrated softmax, not the calibrated probabilities (T = 1.877)") in card


def test_evaluate_reads_labeled_data_in_the_columns_the_model_was_fine_tuned_on(tmp_path):
    """train.evaluate had no --text-column/--label-column: the CSV a model was fine-tuned on (`review,sentiment`)
    was "no text column". The columns are the options', else those metrics.json's calibration slice records, else
    read_labeled's defaults (None)."""
    args = evaluate.parse_args(["--model", str(tmp_path), "--labeled", "x.csv"])
    assert evaluate.labeled_columns(args) == (None, None)  # no metrics.json
    (tmp_path / "metrics.json").write_text(json.dumps(
        {"calibration": {"slice": {"text_column": "review", "label_column": "sentiment"}}}), encoding="utf-8")
    assert evaluate.labeled_columns(args) == ("review", "sentiment")
    args = evaluate.parse_args(["--model", str(tmp_path), "--labeled", "x.csv", "--text-column", "body"])
    assert evaluate.labeled_columns(args) == ("body", "sentiment")
    (tmp_path / "metrics.json").write_text(json.dumps({"calibration": None}), encoding="utf-8")
    assert evaluate.labeled_columns(args) == ("body", None)


def test_a_check_of_a_label_the_model_lacks_names_the_option_that_skips_the_checks():
    with pytest.raises(ValueError, match=r"a label of the model \(\['neg', 'pos'\]\); pass --checks '' to skip"):
        evaluate.check_expected_labels([{"sentence": "It was a film.", "expected": "neutral"}],
                                       {0: "neg", 1: "pos"})


def test_evaluate_out_says_when_it_replaces_a_result_on_other_data(tiny_clf_dir, train_files, tmp_path, capsys):
    """metrics.json keeps one `labeled` result: a `--dev-slice` (or another --labeled file) written to the same --out
    replaced the test file's figures without a word. A note says which result is replaced by which; scoring the
    same data again is an update, not said."""
    out = tmp_path / "m.json"
    dev, train = str(train_files / "dev.tsv"), str(train_files / "train.tsv")

    def evaluated(labeled: str) -> tuple[dict, list[str]]:
        assert evaluate.main(["--model", str(tiny_clf_dir), "--labeled", labeled, "--max-length", "64",
                              "--no-progress", "--out", str(out)]) == 0
        notes = [line for line in capsys.readouterr().err.splitlines() if line.startswith("note: --out")]
        return json.loads(out.read_text())["labeled"], notes

    first, notes = evaluated(dev)
    assert notes == []
    assert evaluated(dev)[1] == []  # the same data again
    second, notes = evaluated(train)
    assert second["source"] == train
    assert notes == [f"note: --out {out}: its labeled result on {dev} (accuracy {first['accuracy']:.4f}) is replaced "
                     f"by this one on {train} (it keeps one labeled result: give another --out to keep both)"]


def test_evaluate_imdb_scores_by_label_name_and_skips_other_labels(tiny_clf_dir, train_files, tmp_path, capsys):
    """`train.evaluate --imdb` compared IMDB's 0/1 with the model's ids: a classifier with id2label {0: positive,
    1: negative} was scored inverted, a 3-class one as if 1 were its second label. The reviews are scored by the
    names negative and positive, and skipped with a note for other labels."""
    import shutil

    from train import data, imdb_sample

    imdb = str(train_files / "imdb.tsv")
    swapped = shutil.copytree(tiny_clf_dir, tmp_path / "swapped")
    config = json.loads((swapped / "config.json").read_text())
    config["id2label"], config["label2id"] = {"0": "positive", "1": "negative"}, {"positive": 0, "negative": 1}
    (swapped / "config.json").write_text(json.dumps(config))
    model = roberta.RobertaForSequenceClassification.from_pretrained(swapped)
    tokenizer = roberta.load_tokenizer(swapped)
    texts, labels = imdb_sample.imdb_sample(imdb, 20)
    answers = evaluate.classifier_logits(model, tokenizer, texts, 32, 64).argmax(-1).tolist()
    by_name = sum(model.config.id2label[a] == data.SENTIMENT_LABELS[y] for a, y in zip(answers, labels)) / len(labels)
    out = tmp_path / "m.json"
    assert evaluate.main(["--model", str(swapped), "--imdb", imdb, "--imdb-n", "20", "--max-length", "64",
                          "--no-progress", "--out", str(out)]) == 0
    assert json.loads(out.read_text())["imdb"]["accuracy"] == pytest.approx(by_name) != pytest.approx(1 - by_name)
    three = tmp_path / "three"  # a negative/neutral/positive classifier: IMDB's 1 was scored as neutral
    three_config = roberta.load_config(tiny_clf_dir)
    three_config.id2label = {0: "negative", 1: "neutral", 2: "positive"}
    roberta.RobertaForSequenceClassification(three_config).save_pretrained(three)
    shutil.copy(tiny_clf_dir / "tokenizer.json", three)
    capsys.readouterr()
    assert evaluate.main(["--model", str(three), "--imdb", imdb, "--imdb-n", "20", "--no-progress"]) == 0
    printed = capsys.readouterr()
    assert "note: the IMDB check is skipped" in printed.err and "imdb:" not in printed.out  # notes: on stderr


def test_checks_read_pos_and_neg_as_positive_and_negative():
    """A model labelled neg,pos failed the shipped checks (expected positive/negative), which the IMDB check and
    the app read through `sentiment_of`; the skip hint names the option as train.recipe knows it."""
    labels = {0: "neg", 1: "pos"}
    evaluate.check_expected_labels([{"sentence": "A wonderful film.", "expected": "positive"}], labels)
    assert evaluate.expected_label("positive", labels) == "pos"
    assert evaluate.expected_label("unsure", labels) == "unsure"
    with pytest.raises(ValueError, match=r"add --checks '' to --finetune-args to skip"):
        evaluate.check_expected_labels([{"sentence": "Meh.", "expected": "neutral"}], labels,
                                       "--finetune-args --checks x.tsv")


@pytest.mark.parametrize("typed", ["0", "01"])
def test_evaluate_names_the_device_as_typed(capsys, typed):
    """The message names the device as typed ("01" had been named 'cuda:1')."""
    if torch.cuda.is_available():
        pytest.skip("a machine with a GPU has cuda:0 and cuda:1 may be there too")
    with pytest.raises(SystemExit):
        evaluate.parse_args(["--model", "m", "--labeled", "x.tsv", "--device", typed])
    err = capsys.readouterr().err
    assert f"--device {typed!r}: this machine has no CUDA device" in err and "cuda:" not in err.split(": ", 2)[1]
