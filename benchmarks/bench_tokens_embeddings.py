"""Benchmark: the Tokens and Embeddings tabs' handlers with the shipped fill-mask model.

Times each handler as the app calls it (threads per request as the app sets them, `demo.models.configure_torch`:
one on the 2-core Space), the median of `--repeats` calls in milliseconds, as a markdown table; for the two
figures (the word map, the positions) the time includes Gradio's `gr.Plot.postprocess`, where a matplotlib figure
is rendered to an image, which is most of their cost. A table of neighbours is one matrix-vector product over the
vocabulary. Browser and queue time are not included.

    python benchmarks/bench_tokens_embeddings.py            # assets/ MLM (MLM_MODEL overrides)
    python benchmarks/bench_tokens_embeddings.py --repeats 9
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent.parent), str(Path(__file__).resolve().parent)]  # from anywhere
import gradio as gr  # noqa: E402
from bench_fill_mask_page import median_ms  # noqa: E402

from demo import handlers as H  # noqa: E402
from demo.examples import ANALOGIES, MAP_WORDS, NEIGHBOURS_WORDS, TOKENS_TEXT  # noqa: E402
from demo.models import configure_torch, load_models  # noqa: E402
from demo.worst_case import worst_case_texts  # noqa: E402


def cases(handlers) -> dict:
    """What each row times: (handler, its arguments)."""
    paste = worst_case_texts()["spaced words"]  # 200,000 characters
    return {
        "`/tokens`, the default text (97 characters)": (handlers.tokens, (TOKENS_TEXT,)),
        "`/tokens`, a 200,000-character paste (the first 128 tokens read)": (handlers.tokens, (paste,)),
        "`/bpe_merges`, “␣antidisestablishmentarianism” (23 merges)": (handlers.bpe_merges,
                                                                      (" antidisestablishmentarianism",)),
        f"`/neighbours`, “{NEIGHBOURS_WORDS[0]}”, 10": (handlers.neighbours, (NEIGHBOURS_WORDS[0], 10)),
        "`/analogy`, {} : {} :: {} : ?".format(*ANALOGIES[0]): (handlers.analogy, ANALOGIES[0]),
        f"`/word_map`, the default {len(MAP_WORDS.split(','))} words, rendered": (
            rendered(handlers, lambda: handlers.word_map(MAP_WORDS)[0]), ()),
        "`/positions`, rendered (once per model: the app sends that image again)": (
            rendered(handlers, lambda: handlers.positions()[0]), ()),
    }


def rendered(handlers, figure):
    """`figure()` drawn anew (the handlers' figure cache emptied first: the first page load's cost) and rendered
    as Gradio sends it (`gr.Plot.postprocess`)."""
    def call():
        handlers._figures.entries.clear()
        return gr.Plot().postprocess(figure())
    return call


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=30, help="calls per row, median reported (default: 30)")
    args = parser.parse_args(argv)
    configure_torch(concurrency=2)
    handlers = H.Handlers(load_models())
    print("| handler | ms |")
    print("|---|---:|")
    for name, (handler, arguments) in cases(handlers).items():
        print(f"| {name} | {median_ms(lambda: handler(*arguments), args.repeats):.1f} |")


if __name__ == "__main__":
    main()
