"""Analogy probe: how many "a is to b as c is to ?" questions a model's word embeddings answer.

    python -m scripts.analogy_probe --model assets/mini-roberta-mlm [FOLDER_OR_HUB_ID ...] [--out probe.json]

Each question of the probe file (default `tests/data/analogies.tsv`: columns category, a, b, c, expected;
capitals, nationalities, comparatives, gender, plurals, past tenses; every word one token to the shipped
tokenizer) is answered as the app's Embeddings tab answers it (`demo.embedding_view.analogy`: the tokens
nearest to b − a + c by cosine similarity, a, b and c themselves excluded, tokens that begin a word only).
An answer counts when its word (stripped, case-insensitive) is the expected one: top-1 and top-5. A question
whose words the model cannot look up (too many pieces) is a miss, named in the output. This reads the input
embeddings only; held-out MLM accuracy and `train.fill_mask_probe` measure what the whole model predicts.
"""
from __future__ import annotations

import argparse
import csv
import json
import sys
from collections import defaultdict
from pathlib import Path

import roberta
from demo.embedding_view import analogy

DEFAULT_PROBE = Path(__file__).resolve().parent.parent / "tests" / "data" / "analogies.tsv"
COLUMNS = ("category", "a", "b", "c", "expected")


def read_probe(path) -> list[dict]:
    with open(path, encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    for i, row in enumerate(rows, start=2):
        if any(not (row.get(column) or "").strip() for column in COLUMNS):
            raise ValueError(f"{path}:{i}: each row needs {', '.join(COLUMNS)}")
    if not rows:
        raise ValueError(f"{path}: no questions (a header {' '.join(COLUMNS)}, tab-separated, then one row each)")
    return rows


def score(embeddings, tokenizer, rows: list[dict], top_k: int = 5) -> dict:
    """Every question answered from the (V, H) `embeddings`: overall and per-category top-1 and top-k counts,
    and every answer (its top-k words, or why it could not be asked)."""
    answers, by_category = [], defaultdict(lambda: [0, 0, 0])  # category -> [n, top1, topk]
    for row in rows:
        try:
            result = analogy(embeddings, tokenizer, row["a"], row["b"], row["c"], k=top_k)
            words, error = [n["token_str"].strip() for n in result["neighbours"]], None
        except ValueError as err:
            words, error = [], str(err)
        found = [w.casefold() for w in words].index(row["expected"].casefold()) + 1 \
            if row["expected"].casefold() in (w.casefold() for w in words) else None
        counts = by_category[row["category"]]
        counts[0] += 1
        counts[1] += found == 1
        counts[2] += found is not None
        answers.append({**row, "answers": words, "rank": found, **({"error": error} if error else {})})
    n = len(rows)
    return {"questions": n, "top1": sum(c[1] for c in by_category.values()) / n,
            f"top{top_k}": sum(c[2] for c in by_category.values()) / n,
            "categories": {name: {"questions": c[0], "top1": c[1], f"top{top_k}": c[2]}
                           for name, c in by_category.items()},
            "answers": answers}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--model", nargs="+", required=True, help="fill-mask model folders or Hub repo ids")
    parser.add_argument("--probe", default=DEFAULT_PROBE, help="TSV: category, a, b, c, expected")
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument("--out", type=Path, help="write every model's scores and answers as JSON")
    args = parser.parse_args(argv)
    rows = read_probe(args.probe)
    results = {}
    for source in args.model:
        model = roberta.RobertaForMaskedLM.from_pretrained(source)
        results[source] = score(model.roberta.embeddings.word_embeddings.weight, roberta.load_tokenizer(source),
                                rows, args.top_k)
    categories = list(dict.fromkeys(row["category"] for row in rows))
    k = args.top_k
    print(f"| model | top-1 | top-{k} | " + " | ".join(f"{c} (top-1)" for c in categories) + " |")
    print("|---|---:|---:|" + "---:|" * len(categories))
    for source, result in results.items():
        cells = [f"{result['categories'][c]['top1']}/{result['categories'][c]['questions']}" for c in categories]
        print(f"| {source} | {result['top1']:.1%} | {result[f'top{k}']:.1%} | " + " | ".join(cells) + " |")
    for source, result in results.items():
        for answer in result["answers"]:
            if "error" in answer:
                print(f"{source}: {answer['a']} : {answer['b']} :: {answer['c']} : ? not asked: {answer['error']}")
    if args.out:
        args.out.write_text(json.dumps(results, indent=2, ensure_ascii=False))
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
