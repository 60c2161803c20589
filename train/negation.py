"""Negation, generated from the training file itself: rows that teach "not bad" and a probe that measures it.

    python -m train.negation --model assets/mini-roberta-sst2          # the held-out probe, per kind
    python -m train.finetune --init assets/mini-roberta-sst2 --negation-augment 3 ...   # train on the rows

Of SST-2's 67,349 training rows, 27 put "not", "n't" or "never" right before a negative adjective ("the film is
never dull") and 92 before a positive one (the probe prints these counts): a classifier trained on it meets "not"
mostly in negative rows, and the shipped one called every "the script is not X ." with a negative X ("dull",
"boring") negative. The rows here come from the training rows alone, no word list typed in:
- a sentiment adjective is a one-word row of a single label (one-word rows of both labels are left out) that also
  follows a degree adverb ("too", "so", "very", ...) at the end of a clause somewhere in the file ("too slow .",
  "so boring ,"), not an adverb in -ly, a noun in -ness, a word negated already ("not-at-all-good") or one of
  `NOT_ADJECTIVES` (words that pass the test and are no adjectives: "enough", "least");
- the adjectives are split in two halves by a hash of the word (`half`), the same in every run: the first half
  is written into `TRAINING_TEMPLATES` (negated with "not", "never" and "n't": the label flips; plain: it stays), the
  second into `HELD_OUT_TEMPLATES`, which no training row uses, for the probe. The probe's figure is thus on words
  and sentence frames the augmented runs never read: what generalised, not what was memorised.
"Not X" is no exact opposite of X ("not brilliant" is no praise, "not boring" faint praise); SST-2's own phrases
label it so ("it 's not bad prose": positive), and the rows follow them.
"""
from __future__ import annotations

import argparse
import hashlib
import re
from collections import Counter
from pathlib import Path

import roberta

from .paths import SST2_TRAIN, write_output_json
from .runtime import EXIT_OK, device_option, exit_code, output_file, report_user_error

DEGREE_ADVERBS = {"too", "so", "very", "rather", "quite", "pretty", "extremely", "incredibly", "fairly"}
CLAUSE_ENDS = {".", ",", "and", "but", "to", "for", "as", "that", "--", ";", ":"}
NOT_ADJECTIVES = {"enough", "least", "best", "well", "able", "full", "real", "much", "many", "few", "little", "far"}
WORD = re.compile(r"[a-z][a-z-]+")
# (negated, plain): "{n}" the negator, "{w}" the adjective; SST-2's form (lower case, "it 's", "is n't")
TRAINING_TEMPLATES = [("the film is {n} {w} .", "the film is {w} ."), ("it 's {n} {w} .", "it 's {w} ."),
                      ("the acting was {n} {w} .", "the acting was {w} ."),
                      ("this movie is {n} {w} at all .", "this movie is {w} ."),
                      ("the story is {n} {w} , really .", "the story is really {w} .")]
TRAINING_NEGATORS = ("not", "never", "n't")  # "n't" not after "'s" ("it 's n't": no English)
HELD_OUT_TEMPLATES = [("the script is {n} {w} .", "the script is {w} ."),
                      ("i thought the direction was {n} {w} .", "i thought the direction was {w} .")]
HELD_OUT_NEGATORS = ("not", "n't really")  # "was n't really", as SST-2 writes "was n't"
LABEL_NAMES = ("negative", "positive")


def sentiment_adjectives(texts: list[str], labels: list[int]) -> dict[int, list[str]]:
    """{label: sorted adjectives} of a negative (0) / positive (1) training file, as the module's docstring says."""
    single = {0: set(), 1: set()}
    for text, label in zip(texts, labels):
        words = text.split()
        if len(words) == 1 and WORD.fullmatch(words[0]) and label in single:
            single[label].add(words[0])
    after_adverb = Counter()
    for text in texts:
        words = text.split() + ["."]
        for adverb, word, after in zip(words, words[1:], words[2:]):
            if adverb in DEGREE_ADVERBS and after in CLAUSE_ENDS:
                after_adverb[word] += 1
    return {label: sorted(w for w in words if after_adverb[w] and w not in single[1 - label]
                          and not w.endswith(("ly", "ness")) and w not in NOT_ADJECTIVES
                          and not {"not", "no", "never"} & set(w.split("-")))  # "not-at-all-good": negated already
            for label, words in single.items()}


def half(word: str) -> int:
    """0: the word's rows are for training; 1: held out for the probe. A hash, the same on every machine."""
    return hashlib.sha256(word.encode("utf-8")).digest()[0] % 2


def negation_rows(adjectives: dict[int, list[str]], which: int) -> tuple[list[str], list[int], list[str]]:
    """(texts, labels, kinds) of the adjectives of half `which` (0: training rows, 1: the probe's), each in every
    template of that half, negated by each negator (the label flipped) and plain; kinds "negated" or "plain"."""
    templates, negators = ((TRAINING_TEMPLATES, TRAINING_NEGATORS) if which == 0 else
                           (HELD_OUT_TEMPLATES, HELD_OUT_NEGATORS))
    rows = []  # (text, label, kind)
    for label, words in adjectives.items():
        for word in (w for w in words if half(w) == which):
            for negated, plain in templates:
                rows += [(negated.format(n=negator, w=word), 1 - label, "negated") for negator in negators
                         if not (negator == "n't" and "'s {n}" in negated)]
                rows.append((plain.format(w=word), label, "plain"))
    texts, labels, kinds = (list(column) for column in zip(*rows)) if rows else ([], [], [])
    return texts, labels, kinds


def training_rows(texts, labels) -> tuple[list[str], list[int]]:
    """The rows `train.finetune --negation-augment` adds, from the rows of its training file that are not held out
    themselves (`texts`, `labels`)."""
    rows, row_labels, _ = negation_rows(sentiment_adjectives(texts, labels), 0)
    return rows, row_labels


def negated_in_file(texts, labels, adjectives: dict[int, list[str]]) -> dict:
    """How often the training file itself puts "not", "n't" or "never" right before one of its sentiment adjectives:
    {"negative adjective": {"rows": n, "positive": rows labelled positive}, "positive adjective": {..., "negative":
    ...}} (a row counted once per kind; SST-2's sub-phrases repeat one another: "is never dull", "the film is never
    dull")."""
    counts = {}
    for label, words in adjectives.items():
        words, flipped = set(words), LABEL_NAMES[1 - label]
        hits = [row_label for text, row_label in zip(texts, labels)
                if any(a in {"not", "n't", "never"} and b in words for a, b in zip(text.split(), text.split()[1:]))]
        counts[f"{LABEL_NAMES[label]} adjective"] = {"rows": len(hits), flipped: hits.count(1 - label)}
    return counts


def run_probe(classify, adjectives: dict[int, list[str]]) -> dict:
    """Accuracy of a sentiment pipeline on the held-out half, overall, per kind ("negated positive": a negated
    negative adjective, expected positive) and per kind and negator ("negated positive, n't really"), with every
    wrong answer."""
    texts, labels, kinds = negation_rows(adjectives, 1)
    answers = [result[0] for result in classify(texts)]
    by_kind, by_negator, wrong = {}, {}, []
    for text, label, kind, answer in zip(texts, labels, kinds, answers):
        name = f"{kind} {LABEL_NAMES[label]}"
        right = answer["label"] == LABEL_NAMES[label]
        groups = [by_kind.setdefault(name, {"right": 0, "n": 0})]
        if kind == "negated":
            negator = next(n for n in HELD_OUT_NEGATORS if f" {n} " in f" {text} ")
            groups.append(by_negator.setdefault(f"{name}, {negator}", {"right": 0, "n": 0}))
        for counts in groups:
            counts["right"] += right
            counts["n"] += 1
        if not right:
            wrong.append({"text": text, "expected": LABEL_NAMES[label], "answer": answer["label"],
                          "score": round(answer["score"], 4)})
    for counts in [*by_kind.values(), *by_negator.values()]:
        counts["accuracy"] = counts["right"] / counts["n"]
    return {"n": len(texts), "accuracy": sum(c["right"] for c in by_kind.values()) / max(len(texts), 1),
            "kinds": dict(sorted(by_kind.items())), "negators": dict(sorted(by_negator.items())),
            "held_out_words": {LABEL_NAMES[k]: [w for w in v if half(w)] for k, v in adjectives.items()},
            "wrong": wrong}


def main(argv=None) -> int:
    from . import tables
    from .fill_mask_probe import FIGURES_DEVICE

    p = argparse.ArgumentParser(prog="python -m train.negation", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, help="a negative/positive classifier folder or Hub id")
    p.add_argument("--train", default=str(SST2_TRAIN),
                   help="the training file the adjectives are found in (sentence, label: 0 negative, 1 positive) "
                        "(default: %(default)s)")
    p.add_argument("--out", help="write the result as JSON here")
    p.add_argument("--device", default=FIGURES_DEVICE, help="'cpu', 'cuda' or 'cuda:N' (default: %(default)s)")
    args = p.parse_args(argv)
    try:
        args.device = device_option(args.device)
        if args.out:
            output_file(args.out, "negation.json")
    except (OSError, ValueError) as err:
        p.error(str(err))
    if not Path(args.train).is_file():
        p.error(f"--train {args.train}: " + ("a folder, not a file" if Path(args.train).is_dir() else "no such file"))
    try:
        texts, labels, _ = tables.read_labeled(args.train, None, None, dict(enumerate(LABEL_NAMES)), labels_fix=None,
                                             column_options=False)
        classify = roberta.pipeline("sentiment-analysis", model=args.model, device=args.device)
        if [classify.model.config.id2label[i] for i in range(classify.model.config.num_labels)] != list(LABEL_NAMES):
            raise ValueError(f"{args.model} is no negative/positive classifier: its labels are "
                             f"{classify.model.config.id2label}")
        adjectives = sentiment_adjectives(texts, labels)
        result = run_probe(classify, adjectives)
    except (OSError, ValueError) as err:
        return report_user_error(err)
    result["negated_in_train"] = negated_in_file(texts, labels, adjectives)
    said = [f"{c['rows']:,} before a {kind} ({c[flipped]:,} of them {flipped})"
            for kind, c in result["negated_in_train"].items() for flipped in [k for k in c if k != "rows"]]
    print(f"{args.train}: {len(texts):,} rows, {sum(map(len, adjectives.values())):,} sentiment adjectives; rows with "
          f"\"not\", \"n't\" or \"never\" right before one: {' and '.join(said)}")
    for kind, counts in [*result["kinds"].items(), *result["negators"].items()]:
        print(f"{kind:<30} {counts['right']:>4} of {counts['n']:<4} {counts['accuracy']:6.1%}")
    print(f"held-out negation probe: {result['accuracy']:.1%} of {result['n']} sentences (words and sentence frames "
          "that no --negation-augment row uses)")
    if args.out:
        write_output_json(args.out, result)
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(exit_code(main))
