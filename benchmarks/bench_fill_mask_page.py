"""Benchmark: what layer by layer adds to the Fill mask tab, with the shipped fill-mask model.

The page's fill-mask event (`Handlers.fill_mask_page`) answers as `/fill_mask` does, then runs the logit lens
(`FillMaskPipeline.logit_lens`: a second forward pass keeping every layer's hidden states, each read through
the MLM head at the masks) on the same text. Times the handlers alone, as the app calls them (threads per
request as the app sets them, `demo.models.configure_torch`: one on the 2-core Space), for a one-mask and a
two-mask text; reports the median of `--repeats` calls in milliseconds as a markdown table. Browser and queue
time are not included.

    python benchmarks/bench_fill_mask_page.py            # assets/ MLM (MLM_MODEL overrides)
    python benchmarks/bench_fill_mask_page.py --repeats 9
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from anywhere
from demo import handlers as H  # noqa: E402
from demo.models import configure_torch, load_models  # noqa: E402

TEXTS = {
    "“Paris is the capital of &lt;mask&gt;.” (1 mask)": "Paris is the capital of <mask>.",
    "213 characters, 2 masks": ("The cat sat on the mat all day, and the dog watched it from the cat. " * 2
                                + "The <mask> sat on the mat all day, and the dog watched it from the <mask>. "),
}


def median_ms(call, repeats: int) -> float:
    call()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=30, help="calls per cell, median reported (default: 30)")
    args = parser.parse_args(argv)
    configure_torch(concurrency=2)
    handlers = H.Handlers(load_models())
    print("| text | `/fill_mask` (ms) | the page's event (ms) | `/fill_mask_layers` alone (ms) |")
    print("|---|---:|---:|---:|")
    for name, text in TEXTS.items():
        cells = [median_ms(lambda: handlers.fill_mask(text, 5), args.repeats),
                 median_ms(lambda: handlers.fill_mask_page(text, 5), args.repeats),
                 median_ms(lambda: handlers.fill_mask_layers(text), args.repeats)]
        print(f"| {name} | " + " | ".join(f"{ms:.1f}" for ms in cells) + " |")


if __name__ == "__main__":
    main()
