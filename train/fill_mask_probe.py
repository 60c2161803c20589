"""Fill-mask probe: everyday sentences with one expected word, scored top-1 and top-k (--top-k, 5 by default).

    python -m train.fill_mask_probe --model assets/mini-roberta-mlm [--out probe.json]
    python -m train.fill_mask_probe --model assets/mini-roberta-mlm --layers   # and layer by layer
    python -m train.fill_mask_probe --model assets/mini-roberta-mlm --device cuda   # on a GPU

The probe file (default `tests/data/fill_mask_probe.tsv`: columns category, sentence with one <mask>,
expected word) is small and hand-written: capitals, animals, everyday objects, grammar. A prediction counts
when its word (stripped, case-insensitive) equals the expected word. Held-out MLM accuracy measures the
model on every kind of token; this probe says whether the answers a person types first are right.
The file is a measurement: changing it changes published figures (the cards' probe and phase tables, the README's
sentence count and scores), so change it only with a re-release (`scripts.release`) and a README update.
`--layers` also scores the logit lens (`FillMaskPipeline.logit_lens`: the MLM head read on every layer's output):
per layer, how many expected words are top-1 and top-k there, and each sentence's rank of its word per layer.
"""
from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path

import roberta

from .data import DataError
from .paths import write_output_json
from .runtime import EXIT_OK, device_option, exit_code, output_file, report_user_error
from .tables import read_table

DEFAULT_PROBE = Path(__file__).resolve().parent.parent / "tests" / "data" / "fill_mask_probe.tsv"
COLUMNS = ("category", "sentence", "expected")
# Published figures (the cards' probe and example answers, the README's) are computed on the CPU, as the app runs the
# models: the same digits on a machine with a GPU, whose float32 sums differ in the last places
FIGURES_DEVICE = "cpu"


def read_probe(path) -> list[dict]:
    """Rows {category, sentence, expected} of a probe TSV (`train.tables.read_table`), each sentence with one
    <mask>."""
    rows = read_table(path, COLUMNS, "probe")
    for number, row in rows:
        if (masks := row["sentence"].count("<mask>")) != 1:
            raise DataError(f"{path} line {number}: the sentence needs one <mask>, it has {masks}")
    return [row for _, row in rows]


def run_probe(fill, rows: list[dict], top_k: int = 5) -> dict:
    """Score a fill-mask pipeline on the probe rows: overall and per-category top-1/top-k, every answer."""
    answers, by_category = [], defaultdict(lambda: [0, 0, 0])   # category -> [n, top1, topk]
    for row in rows:
        predictions = fill(row["sentence"], top_k=top_k)
        words = [p["token_str"].strip() for p in predictions]
        rank = next((i + 1 for i, w in enumerate(words) if w.lower() == row["expected"].lower()), None)
        counts = by_category[row["category"]]
        counts[0] += 1
        counts[1] += rank == 1
        counts[2] += rank is not None
        answers.append({"sentence": row["sentence"], "expected": row["expected"], "rank": rank,
                        "predictions": [[w, round(p["score"], 4)] for w, p in zip(words, predictions)]})
    n = len(rows)
    return {
        "top1": sum(c[1] for c in by_category.values()) / n,
        f"top{top_k}": sum(c[2] for c in by_category.values()) / n,
        "sentences": n,
        "categories": {k: {"sentences": c[0], "top1": c[1] / c[0], f"top{top_k}": c[2] / c[0]}
                       for k, c in by_category.items()},
        "answers": answers,
    }


def word_ids(tokenizer) -> dict[str, list[int]]:
    """Every token id by the word it spells, stripped and lower-cased (" France" and "France" are both "france"):
    the probe's matching rule over the whole vocabulary."""
    ids: dict[str, list[int]] = defaultdict(list)
    for token_id in range(tokenizer.get_vocab_size()):
        ids[tokenizer.decode([token_id]).strip().lower()].append(token_id)
    return ids


def run_layers(fill, rows: list[dict], top_k: int = 5) -> dict:
    """The probe on every layer (`fill.logit_lens`, one mask per sentence): per layer the share of sentences whose
    expected word is top-1 and top-k there, and per sentence the word's rank per layer (its best-ranked token
    form; None if no token spells it), and how many words rank better at an earlier layer than at the last. The
    last layer's figures are `run_probe`'s."""
    by_word = word_ids(fill.tokenizer)
    ranks = []
    for row in rows:
        probs = fill.logit_lens(row["sentence"])[:, 0]  # (L + 1, V): the one mask
        ids = by_word.get(row["expected"].strip().lower())
        ranks.append([int((p > p[ids].max()).sum()) + 1 if ids else None for p in probs])
    n, layers = len(rows), len(ranks[0]) if ranks else 0
    earlier = sum(r[-1] is not None and min(r[:-1]) < r[-1] for r in ranks)
    return {"better_at_an_earlier_layer": earlier,
            "layers": [{"layer": layer,
                        "top1": sum(r[layer] == 1 for r in ranks) / n,
                        f"top{top_k}": sum(r[layer] is not None and r[layer] <= top_k for r in ranks) / n}
                       for layer in range(layers)],
            "ranks": [{"sentence": row["sentence"], "expected": row["expected"], "rank_by_layer": r}
                      for row, r in zip(rows, ranks)]}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m train.fill_mask_probe", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, help="MLM folder or Hub id")
    p.add_argument("--probe", default=str(DEFAULT_PROBE), help="probe TSV (default: %(default)s)")
    p.add_argument("--top-k", type=int, default=5, help="default: %(default)s")
    p.add_argument("--layers", action="store_true",
                   help="also score every layer's output through the MLM head (the logit lens)")
    p.add_argument("--out", help="write the result as JSON here")
    p.add_argument("--device", default=FIGURES_DEVICE,
                   help="where the model runs: 'cpu', 'cuda' or 'cuda:N' (default: %(default)s, as the app runs it and "
                        "as the published figures were computed; a GPU may differ in the last digits)")
    args = p.parse_args(argv)
    if args.top_k < 1:  # by its option's name, before the model is loaded
        p.error(f"--top-k must be at least 1, got {args.top_k}")
    try:
        args.device = device_option(args.device)
    except ValueError as err:
        p.error(str(err))
    if not Path(args.probe).is_file():
        p.error(f"--probe {args.probe}: " + ("a folder, not a file" if Path(args.probe).is_dir() else "no such file"))
    try:
        if args.out:
            output_file(args.out, "probe.json")
    except (OSError, ValueError) as err:  # a file under a file: said before the probe runs
        p.error(str(err))
    try:
        rows = read_probe(args.probe)
        roberta.loading.require_architecture(args.model, "RobertaForMaskedLM", "the probe needs a masked-LM model")
        fill = roberta.pipeline("fill-mask", model=args.model, device=args.device)
        result = run_probe(fill, rows, args.top_k)
        if args.layers:
            result["by_layer"] = run_layers(fill, rows, args.top_k)
    except (OSError, ValueError) as err:
        return report_user_error(err)
    k = args.top_k
    for a in result["answers"]:
        mark = "ok " if a["rank"] == 1 else (f"#{a['rank']} " if a["rank"] else "-- ")
        print(f"{mark} {a['sentence']:<55} {a['expected']:<10} " + ", ".join(w for w, _ in a["predictions"]))
    print(f"top-1 {result['top1']:.1%}, top-{k} {result[f'top{k}']:.1%} on {result['sentences']} sentences")
    if args.layers:
        lens = result["by_layer"]
        print("\nlayer by layer (the MLM head on each layer's output): the expected word's rank")
        for r in lens["ranks"]:
            shown = " ".join("-" if rank is None else f"{rank:,}" for rank in r["rank_by_layer"])
            print(f"  {r['sentence']:<55} {r['expected']:<10} {shown}")
        for row in lens["layers"]:
            name = "embeddings" if row["layer"] == 0 else f"layer {row['layer']}"
            print(f"{name:<11} top-1 {row['top1']:6.1%}, top-{k} {row[f'top{k}']:6.1%}")
        print(f"{lens['better_at_an_earlier_layer']} of {result['sentences']} expected words rank better at an "
              "earlier layer than at the last")
    if args.out:
        write_output_json(args.out, result)
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(exit_code(main))
