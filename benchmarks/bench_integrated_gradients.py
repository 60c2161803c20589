"""Benchmark: the Sentiment tab's integrated gradients, time and memory against the points of the path run in one
batch (`demo.explain.IG_BATCH_BUDGET`), with the shipped classifier on a 128-token text.

Autograd keeps every point's activations for the backward pass, so the points run together cost memory in
proportion; on a CPU a larger batch is faster only up to a point. Each setting runs in a fresh process (its peak
resident memory is its own): the median of `--repeats` calls after one warm-up, and the peak RSS the calls
(the warm-up's included) added over the loaded model. A Space serves two such requests at once (`APP_CONCURRENCY`).

    python benchmarks/bench_integrated_gradients.py                    # assets/ classifier (SENTIMENT_MODEL overrides)
    python benchmarks/bench_integrated_gradients.py --points 20 4 1 --repeats 7
    python benchmarks/bench_integrated_gradients.py --roberta-large --points 4 1 --repeats 1   # random weights
                                                   # of roberta-large's shape (no Hub here), a 128-token text
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from anywhere

TEXT = " ".join(["the film was good but the ending felt rushed and the cast was fine"] * 9)


def classifier(large: bool):
    """(model, the text's token ids): the shipped classifier (or SENTIMENT_MODEL's), or random weights of
    roberta-large's shape on 126 arbitrary ids."""
    import torch

    import roberta
    from demo import explain
    from demo.models import ASSETS

    if large:
        torch.manual_seed(0)
        config = roberta.RobertaConfig(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
                                       intermediate_size=4096, id2label={0: "negative", 1: "positive"})
        return roberta.RobertaForSequenceClassification(config).eval(), [0, *range(1000, 1126), 2]
    pipe = roberta.pipeline("sentiment-analysis", model=os.environ.get("SENTIMENT_MODEL")
                            or str(ASSETS / "mini-roberta-sst2"))
    return pipe.model, pipe.tokenizer.encode(TEXT).ids[:explain.IG_MAX_TOKENS]


def measure(points: int, repeats: int, large: bool) -> dict:
    """In this process: `repeats` calls of integrated gradients at `points` points a batch."""
    import torch

    from demo import explain

    torch.set_num_threads(int(os.environ.get("TORCH_THREADS", "2")))
    model, ids = classifier(large)
    config = model.config
    budget = points * len(ids) * config.num_hidden_layers * config.hidden_size
    special = {config.bos_token_id, config.eos_token_id}
    loaded = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    explain.integrated_gradients(model, ids, 1, config.pad_token_id, special, budget=budget, most=points)  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        explain.integrated_gradients(model, ids, 1, config.pad_token_id, special, budget=budget, most=points)
        times.append(time.perf_counter() - start)
    return {"points": explain.ig_batch_points(config, len(ids), budget, points), "tokens": len(ids),
            "median_s": statistics.median(times),
            "peak_mb": (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - loaded) / 1024}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--points", type=int, nargs="+", default=[20, 10, 4, 2, 1], help="points a batch to time")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--roberta-large", action="store_true", help="random weights of roberta-large's shape")
    p.add_argument("--one", type=int, help=argparse.SUPPRESS)  # (the child process: one setting, as JSON)
    args = p.parse_args(argv)
    if args.one is not None:
        print(json.dumps(measure(args.one, args.repeats, args.roberta_large)))
        return 0
    print("| points a batch | tokens | median (s) | peak memory added (MB) |\n|---:|---:|---:|---:|")
    for points in args.points:
        child = [sys.executable, __file__, "--one", str(points), "--repeats", str(args.repeats)]
        out = subprocess.run(child + ["--roberta-large"] * args.roberta_large, check=True, capture_output=True,
                             text=True).stdout
        r = json.loads(out.strip().splitlines()[-1])
        print(f"| {r['points']} | {r['tokens']} | {r['median_s']:.3f} | {r['peak_mb']:.0f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
