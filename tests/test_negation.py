"""train.negation: sentiment adjectives found in a training file, the negation rows written from them (half of the
words for training, the other half for the probe), train.finetune --negation-augment and the probe's command."""
import json

import pytest

from tests.helpers import outcome
from train import finetune, negation
from train.arguments import UserError

NEGATIVE = ["dull", "slow", "boring", "bad", "tedious", "bland", "lame", "stale"]
POSITIVE = ["fun", "great", "smart", "clever", "warm", "vivid", "funny", "charming"]


def sst2_like_rows() -> list[tuple[str, int]]:
    """An SST-2-like table: each adjective a one-word row of its label and after a degree adverb in a phrase, plus
    words that are no sentiment adjectives by one rule each."""
    rows = []
    for label, words in ((0, NEGATIVE), (1, POSITIVE)):
        for word in words:
            rows += [(word, label), (f"the film is too {word} .", label), (f"it 's a {word} movie", label)]
    rows += [("quickly", 0), ("so quickly ,", 0),  # an adverb in -ly
             ("sadness", 0), ("such sadness , too sadness .", 0),  # a noun in -ness
             ("not-at-all-good", 0), ("so not-at-all-good .", 0),  # negated already
             ("enough", 0), ("not good enough .", 0), ("too enough .", 0),  # NOT_ADJECTIVES
             ("long", 0), ("long", 1), ("too long .", 0),  # a one-word row of both labels
             ("gritty", 1)]  # never after a degree adverb
    return rows


def test_sentiment_adjectives_are_one_word_rows_of_one_label_after_a_degree_adverb():
    texts, labels = map(list, zip(*sst2_like_rows()))
    assert negation.sentiment_adjectives(texts, labels) == {0: sorted(NEGATIVE), 1: sorted(POSITIVE)}


def test_negation_rows_flip_the_label_and_keep_the_probes_words_and_frames_apart():
    adjectives = {0: sorted(NEGATIVE), 1: sorted(POSITIVE)}
    trained, held = negation.negation_rows(adjectives, 0), negation.negation_rows(adjectives, 1)
    words = {w for ws in adjectives.values() for w in ws}
    used = [{w for w in words if any(f" {w} " in f" {text} " for text in rows[0])} for rows in (trained, held)]
    assert used[0] and used[1] and not used[0] & used[1]  # each word in one half only
    assert used[0] | used[1] == words
    frames = [{text.replace(w, "X") for text in rows[0] for w in words if f" {w} " in f" {text} "}
              for rows in (trained, held)]
    assert not frames[0] & frames[1]  # the probe's sentence frames are no training row's
    for texts, labels, kinds in (trained, held):
        assert len(texts) == len(labels) == len(kinds) and set(kinds) == {"negated", "plain"}
        for text, label, kind in zip(texts, labels, kinds):
            word = next(w for w in words if f" {w} " in f" {text} ")
            own = 0 if word in NEGATIVE else 1
            negated = any(n in text.split() for n in ("not", "never", "n't"))
            assert kind == ("negated" if negated else "plain")
            assert label == (1 - own if negated else own), text  # "the film is not dull ." positive
    # every frame plain and with each negator, but "n't" after "'s" ("it 's n't dull": no English)
    per_word = len(negation.TRAINING_TEMPLATES) * (len(negation.TRAINING_NEGATORS) + 1) - 1
    assert len(trained[0]) == per_word * len(used[0])
    assert not [text for text in trained[0] if "'s n't" in text] and [t for t in trained[0] if "is n't" in t]
    assert [(text, label) for text, label in zip(*trained[:2]) if text.startswith("the film is never slow")] == \
        [("the film is never slow .", 1)]  # "slow": the training half
    assert ("the script is not dull .", 1) in zip(*held[:2])  # "dull": the probe's half


def test_the_file_s_own_negated_adjectives_are_counted_per_kind():
    """What the probe prints of the training file: rows with "not", "n't" or "never" right before a sentiment
    adjective, per kind, and how many of them carry the flipped label; a row counts once, "nothing" is no negator."""
    texts = ["it 's not dull", "never dull , never slow", "is n't dull at all", "not fun", "nothing dull", "dull"]
    labels = [1, 1, 0, 0, 0, 0]
    assert negation.negated_in_file(texts, labels, {0: ["dull", "slow"], 1: ["fun"]}) == {
        "negative adjective": {"rows": 3, "positive": 2}, "positive adjective": {"rows": 1, "negative": 1}}


def test_the_halves_are_fixed_by_the_word():
    """The same split on every machine and every run (a hash of the word, not Python's salted `hash`): published
    probe figures depend on it. The words of the behaviour checks' negated negatives ("not bad", "never boring",
    "not dull") are in the probe's half, so no augmented run reads them either."""
    assert {w: negation.half(w) for w in ["bad", "boring", "dull", "slow", "stupid", "good", "great", "fun"]} == \
        {"bad": 1, "boring": 1, "dull": 1, "slow": 0, "stupid": 0, "good": 1, "great": 1, "fun": 0}


@pytest.fixture
def sst2_like(tmp_path):
    path = tmp_path / "train.tsv"
    path.write_text("sentence\tlabel\n" + "".join(f"{t}\t{label}\n" for t, label in sst2_like_rows()))
    return path


def _read(path, tmp_path, *extra):
    args = finetune.parse_args(["--init", "x", "--train", str(path), "--dev", str(path), "--imdb", "", "--checks", "",
                                "--calibration-n", "4", "--out", str(tmp_path / "clf"), *extra])
    return finetune.read_data(args, args.id2label())


def test_finetune_negation_augment_adds_the_rows_after_the_held_out_slices(sst2_like, tmp_path):
    """--negation-augment N adds train.negation's rows N times over after the calibration slice is drawn (it stays the
    slice it is without them), written from every row of --train but the slice's own: a one-word row ("dull") taken
    out of training as a sub-phrase of a held-out sentence still gives its word. No row has a word the probe keeps."""
    plain, augmented = _read(sst2_like, tmp_path), _read(sst2_like, tmp_path, "--negation-augment", "2")
    assert augmented.cal_texts == plain.cal_texts and plain.negation_rows == 0
    kept = [(text, label) for text, label in sst2_like_rows() if text not in plain.cal_texts]
    rows, labels = negation.training_rows(*zip(*kept))
    assert rows and augmented.negation_rows == 2 * len(rows)
    assert augmented.train_texts == plain.train_texts + rows * 2
    assert augmented.train_labels == plain.train_labels + labels * 2
    removed = {w for w in NEGATIVE + POSITIVE if w not in plain.train_texts and negation.half(w) == 0}
    assert removed and all(any(f" {w} " in f" {text} " for text in rows) for w in removed)
    held = {w for w in NEGATIVE + POSITIVE if negation.half(w) == 1}
    assert not [text for text in rows for w in held if f" {w} " in f" {text} "]


def test_finetune_negation_augment_warns_when_the_file_gives_no_rows(tmp_path, capsys):
    """A file of plain sentences (no one-word rows) gives train.negation no adjectives: said, not silently nothing."""
    plain = tmp_path / "plain.tsv"
    plain.write_text("sentence\tlabel\n" + "".join(f"the film number {i} was seen .\t{i % 2}\n" for i in range(40)))
    read = _read(plain, tmp_path, "--negation-augment", "3")
    assert read.negation_rows == 0 and len(read.train_texts) == 40 - 4
    assert f"warning: --negation-augment: --train {plain} has no sentiment adjectives" in capsys.readouterr().err


def test_finetune_negation_augment_is_refused_below_zero_and_for_other_labels(sst2_like, tmp_path):
    with pytest.raises(UserError, match="--negation-augment must be at least 0|and --negation-augment"):
        finetune.parse_args(["--init", "x", "--negation-augment", "-1", "--out", str(tmp_path / "a")]).check()
    with pytest.raises(UserError, match="--negation-augment writes negative and positive rows: it needs --labels"):
        finetune.parse_args(["--init", "x", "--negation-augment", "1", "--labels", "sad,happy,calm",
                             "--out", str(tmp_path / "b")]).check()


@pytest.mark.slow
def test_the_probe_scores_a_classifier_per_kind_on_the_held_out_half(sst2_like, tmp_path, capsys):
    """`python -m train.negation --model CLASSIFIER --train FILE` scores the held-out half (words and frames no
    augmented run reads) per kind, prints the table and writes it as JSON; a masked LM is refused in one line."""
    out = tmp_path / "negation.json"
    code, printed, _ = outcome(negation.main, ["--model", "assets/mini-roberta-sst2", "--train", str(sst2_like),
                                               "--out", str(out)], capsys)
    result = json.loads(out.read_text())
    held = negation.negation_rows(negation.sentiment_adjectives(*map(list, zip(*sst2_like_rows()))), 1)
    assert code == 0 and result["n"] == len(held[0]) > 0
    assert {kind for kind in result["kinds"]} <= {"negated negative", "negated positive", "plain negative",
                                                  "plain positive"}
    assert sum(c["n"] for c in result["kinds"].values()) == result["n"]
    negated = {kind: c for kind, c in result["kinds"].items() if kind.startswith("negated")}
    assert {kind.split(", ")[1] for kind in result["negators"]} == set(negation.HELD_OUT_NEGATORS)
    for kind, counts in negated.items():  # each negator's share of a kind adds up to it
        parts = [c for name, c in result["negators"].items() if name.startswith(f"{kind}, ")]
        assert [sum(c[k] for c in parts) for k in ("right", "n")] == [counts["right"], counts["n"]]
    assert len(result["wrong"]) == result["n"] - sum(c["right"] for c in result["kinds"].values())
    assert f"held-out negation probe: {result['accuracy']:.1%} of {result['n']} sentences" in printed
    assert result["negated_in_train"] == negation.negated_in_file(*map(list, zip(*sst2_like_rows())),
                                                                  {0: sorted(NEGATIVE), 1: sorted(POSITIVE)})
    assert printed.startswith(f"{sst2_like}: {len(sst2_like_rows())} rows, 16 sentiment adjectives; ")
    code, _, err = outcome(negation.main, ["--model", "assets/mini-roberta-mlm", "--train", str(sst2_like)], capsys)
    assert code != 0 and err.startswith("error: assets/mini-roberta-mlm is a masked-LM model") and \
        err.strip().count("\n") == 0, err


def test_the_probe_names_a_training_file_it_cannot_read_without_options_it_lacks(tmp_path, capsys):
    """A --train without a text column or with labels other than 0 and 1 is one `error:` line, before any model is
    loaded, and names no option of train.finetune's (--text-column, --labels) that this command does not have."""
    bad = tmp_path / "bad.tsv"
    bad.write_text("sentence\tlabel\nfoo\t7\n")
    for train, words in (("README.md", "no text column"), (str(bad), "label 7 is not in the label set")):
        code, _, err = outcome(negation.main, ["--model", "no/such-model", "--train", train], capsys)
        assert code == 2 and err.startswith(f"error: {train}") and words in err, err
        assert "--text-column" not in err and "--labels" not in err
