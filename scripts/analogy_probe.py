"""Analogy probe: how many "a is to b as c is to ?" questions a model's word embeddings answer.

    python -m scripts.analogy_probe --model assets/mini-roberta-mlm [FOLDER_OR_HUB_ID ...] [--out probe.json]

Each question (default `demo.examples.ANALOGY_PROBE`, 43 of them: capitals, nationalities, comparatives,
gender, plurals, past tenses, every word one token to the shipped tokenizer; `--probe` a TSV with columns
category, a, b, c, expected) is answered as the app's Embeddings tab answers it (`demo.embedding_view.analogy`:
the tokens nearest to b − a + c by cosine similarity, a, b and c themselves excluded, tokens that begin a word
only; `score_analogies`).
An answer counts when its word (stripped, case-insensitive) is the expected one: top-1 and top-k (--top-k, 5 by
default). A question whose words the model cannot look up (too many pieces) is a miss, named in the output. This
reads the input embeddings only; held-out MLM accuracy and `train.fill_mask_probe` measure what the whole model
predicts.
"""
from __future__ import annotations

import json
from pathlib import Path

import roberta
from roberta.files import write_atomic
from demo.examples import ANALOGY_PROBE
from train.arguments import script_parser
from train.tables import read_table
from train.runtime import USER_ERRORS, exit_code, output_file, report_user_error

COLUMNS = ("category", "a", "b", "c", "expected")


def read_probe(path) -> list[tuple[str, str, str, str, str]]:
    """A probe TSV (columns category, a, b, c, expected; `train.tables.read_table`) as questions for
    `score_analogies`."""
    return [tuple(row[column] for column in COLUMNS) for _, row in read_table(path, COLUMNS, "analogy probe")]


def main(argv=None) -> int:
    parser = script_parser("scripts.analogy_probe", __doc__)  # the docstring's summary above the options, once
    parser.add_argument("--model", nargs="+", required=True, help="fill-mask model folders or Hub repo ids")
    parser.add_argument("--probe", help="a TSV of your own: category, a, b, c, expected (default: the 43 questions of "
                                        "demo.examples.ANALOGY_PROBE)")
    parser.add_argument("--top-k", type=int, default=5, help="answers kept per question (default: %(default)s)")
    parser.add_argument("--out", type=Path, help="write every model's scores and answers as JSON")
    args = parser.parse_args(argv)
    from demo.embedding_view import MAX_K, score_analogies  # after --help: it imports Gradio (5 s) for the app's errors
    if not 1 <= args.top_k <= MAX_K:  # by its option's name, once, not per question
        parser.error(f"--top-k must be between 1 and {MAX_K}, got {args.top_k}")
    if args.probe and not Path(args.probe).is_file():
        parser.error(f"--probe {args.probe}: " +
                     ("a folder, not a file" if Path(args.probe).is_dir() else "no such file"))
    results = {}
    try:  # a missing folder or Hub id, a classifier, a malformed probe, --out a folder
        if args.out:
            output_file(args.out, "probe.json")
        rows = read_probe(args.probe) if args.probe else ANALOGY_PROBE
        for source in args.model:
            roberta.loading.require_architecture(source, "RobertaForMaskedLM",
                                                 "the probe reads a masked-LM model's word embeddings", "--model")
            model = roberta.RobertaForMaskedLM.from_pretrained(source)
            results[source] = score_analogies(model.roberta.embeddings.word_embeddings.weight,
                                              roberta.load_tokenizer(source), rows, args.top_k)
    except USER_ERRORS as err:
        return report_user_error(err)
    categories = list(dict.fromkeys(row[0] for row in rows))
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
        args.out.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(args.out, json.dumps(results, indent=2, ensure_ascii=False))
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(exit_code(main))
