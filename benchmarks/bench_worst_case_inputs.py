"""Benchmark: the app's handlers on worst-case inputs (demo/worst_case.py), with the shipped models.

Every input of the corpus (texts up to the app's 200,000-character cap: long runs of whitespace, of one
character, of masks, combining marks, zero-width characters, mixed scripts, unclosed quotes...) goes
through every handler as the app calls it (fill mask and its layer-by-layer view, `fill_mask_layers`, with a
mask before and after the text; classify; attention with either model and the token picker; masking over 40
epochs); a plain error message (gr.Error) counts as an answer. Reports, per handler, the slowest input and its
time, the median over the corpus, and a normal sentence for scale, as a markdown table.

    python benchmarks/bench_worst_case_inputs.py              # assets/ models (MLM_MODEL / SENTIMENT_MODEL)
    python benchmarks/bench_worst_case_inputs.py --chars 20000 --only spaces
    python benchmarks/bench_worst_case_inputs.py --json out.json   # every timing
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from anywhere
import gradio as gr  # noqa: E402
import torch  # noqa: E402

from demo import handlers as H  # noqa: E402
from demo import validation as V  # noqa: E402
from demo.models import configure_torch, load_models  # noqa: E402
from demo.worst_case import with_masks, worst_case_texts  # noqa: E402

NORMAL = "The quick brown fox jumps over the lazy dog near the river bank."


def handler_calls(handlers: H.Handlers, texts: dict[str, str], masked: dict[str, str]) -> dict:
    """handler label -> list of (input name, zero-argument call)."""
    calls = {
        "fill_mask": [(name, lambda t=t: handlers.fill_mask(t, V.MAX_TOP_K, "cat, dog")) for name, t in masked.items()],
        "fill_mask_layers": [(name, lambda t=t: handlers.fill_mask_layers(t)) for name, t in masked.items()],
        "classify": [(name, lambda t=t: handlers.classify(t)) for name, t in texts.items()],
        "masking (40 epochs)": [(name, lambda t=t: handlers.masking(t, V.MAX_EPOCHS, 0)) for name, t in texts.items()],
    }
    for model in ("mlm", "sentiment"):
        # the token picker right after its attention call reads the cache, as in the app
        calls[f"attention ({model})"] = [(name, lambda t=t, m=model: handlers.attention(t, 1, "average", m))
                                         for name, t in texts.items()]
        calls[f"attention_token ({model})"] = [(name, lambda t=t, m=model: handlers.attention_token(t, 2, 1, 3, m))
                                               for name, t in texts.items()]
    return calls


def timed(call) -> tuple[float, str]:
    """Seconds, and "ok" or the error message."""
    start = time.perf_counter()
    outcome = "ok"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            call()
        except gr.Error as err:
            outcome = err.message
    return time.perf_counter() - start, outcome


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--chars", type=int, default=V.MAX_CHARS, help="length of each input (default: the app's cap)")
    p.add_argument("--only", nargs="+", default=None, help="inputs whose name contains one of these words")
    p.add_argument("--concurrency", type=int, default=2, help="as APP_CONCURRENCY: sets torch's threads the same way")
    p.add_argument("--json", type=Path, default=None, help="write every timing here")
    args = p.parse_args(argv)

    configure_torch(concurrency=args.concurrency)
    models = load_models()
    for loaded in (models.mlm, models.sentiment):
        if not loaded.available:
            sys.exit(f"{loaded.error}")
    handlers = H.Handlers(models)
    texts = worst_case_texts(args.chars)
    if args.only:
        texts = {k: v for k, v in texts.items() if any(word in k for word in args.only)}
        if not texts:
            sys.exit(f"no input matches {args.only}; the inputs are: {', '.join(worst_case_texts(10))}")
    masked = with_masks(texts, args.chars)
    normal = handler_calls(handlers, {"normal": NORMAL}, {"normal": NORMAL.replace("fox", "<mask>")})
    calls = handler_calls(handlers, texts, masked)
    for items in normal.values():  # warm-up (first-call costs), then the normal sentence for scale
        timed(items[0][1])

    print(f"{len(texts)} inputs of up to {args.chars:,} characters; torch threads {torch.get_num_threads()}; "
          f"models {models.mlm.source}, {models.sentiment.source}", file=sys.stderr)
    results, rows = {}, []
    for label, items in calls.items():
        normal_s, _ = timed(normal[label][0][1])
        timings = []
        for name, call in items:
            seconds, outcome = timed(call)
            timings.append((seconds, name, outcome))
            print(f"  {label:28s} {seconds:7.2f} s  {name}" + ("" if outcome == "ok" else f"  ({outcome[:60]})"),
                  file=sys.stderr)
        slowest = max(timings)
        results[label] = {"normal_s": normal_s, "timings": [{"input": n, "seconds": s, "outcome": o}
                                                            for s, n, o in timings]}
        rows.append(f"| {label} | {len(timings)} | {normal_s:.2f} | {statistics.median(t[0] for t in timings):.2f} | "
                    f"{slowest[0]:.2f} | {slowest[1]} |")
    print(f"\nWorst-case inputs ({args.chars:,} characters), {torch.get_num_threads()} torch threads:\n")
    print("| handler | inputs | normal sentence (s) | median (s) | slowest (s) | slowest input |")
    print("|---|---:|---:|---:|---:|---|")
    print("\n".join(rows))
    if args.json:
        args.json.write_text(json.dumps({"chars": args.chars, "threads": torch.get_num_threads(),
                                         "results": results}, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
