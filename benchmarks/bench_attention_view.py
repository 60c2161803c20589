"""Benchmark: how fast the Attention tab answers, with the shipped models (issue 14: a layer or head change
must answer in under 1 s on the app's CPU).

Times what the server does for one event, as the app calls the handlers: the handler (the model's forward
pass on a new text, then drawing the view) plus serialising its outputs for the browser (Gradio's own
`postprocess` of each output component: a matplotlib figure is rendered to an image there, which is most of
its cost; then JSON-encoding), for a ~20-token and a 128-token text:

  first run     a new text (the attention cache cleared): `attention(..., view)`
  layer change  `attention_layer(..., view)` (the attention is cached)
  head change   `attention_head(..., view)`
  open sub-tab  `attention_view(..., view)`: what opening the sub-tab costs

`view` is the visible sub-tab (the UI draws only that one): heads (the HTML head view), heatmap, grid (all
heads of the layer), rollout, token (one token's bars); "all" is the API's default, every view at once (what
an API client gets). Browser time (receiving, painting) is not included. Reports the median of
`--repeats` runs in milliseconds, and the size of what is sent, as a markdown table.

    python benchmarks/bench_attention_view.py                   # assets/ MLM (MLM_MODEL overrides)
    python benchmarks/bench_attention_view.py --repeats 9 --views heads heatmap
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

from demo import attention_handlers as A  # noqa: E402
from demo import handlers as H  # noqa: E402
from demo.examples import ATTENTION_TEXT  # noqa: E402
from demo.models import configure_torch, load_models  # noqa: E402
from demo.validation import MAX_CHARS  # noqa: E402

SHORT = ATTENTION_TEXT + " The dog slept."  # about 20 tokens
LONG = ("The cat sat on the mat because it was tired. The old man follows the river every day, and our team "
        "sees a small bird near the house at night. ") * 8  # cut to the model's 128 tokens
VIEWS = [*A.VIEWS, "all"]
COMPONENTS = {"heads": gr.HTML, "picker": gr.Dropdown, "layer": gr.Dropdown, "head": gr.Dropdown,
              "notes": gr.Markdown, **{text: gr.HTML for text in A.TEXTS.values()}}  # the others are gr.Plot


def serialise(outputs: dict) -> int:
    """Gradio's postprocess of every drawn output, JSON-encoded as sent; returns the bytes."""
    sent = []
    for name, value in outputs.items():
        if value is None:
            continue
        component = COMPONENTS.get(name, gr.Plot)()
        if isinstance(value, dict) and value.get("__type__") == "update":  # a picker update: its value
            value = value.get("value")
        data = component.postprocess(value)
        sent.append(data.model_dump() if hasattr(data, "model_dump") else data)
    return len(json.dumps(sent, default=str).encode())


def events(handlers: H.Handlers, text: str, layer: int, other_layer: int, view: str):
    """(name, call) for each event: each call returns the outputs by name."""
    def first():
        handlers._attention_cache.clear()  # a new text: the forward pass too
        out = handlers.attention(text, layer, "average", "mlm", view)
        return dict(zip(("heatmap", "grid", "rollout", "token", "picker", "notes", "heads", "layer", "head",
                         *A.TEXTS.values()), out))

    def layer_change():
        return dict(zip(("heatmap", "grid", "token", "heads", "heatmap_text", "grid_text"),
                        handlers.attention_layer(text, other_layer, "average", None, "mlm", view)))

    def head_change():
        return dict(zip(("heatmap", "token", "heads", "heatmap_text"),
                        handlers.attention_head(text, other_layer, 2, None, "mlm", view)))

    def open_tab():
        out = handlers.attention_view(text, other_layer, 2, None, "mlm", view)
        return dict(zip((view, A.TEXTS[view]), out)) if view in A.TEXTS else {view: out}

    calls = [("first run", first), ("layer change", layer_change), ("head change", head_change)]
    return calls + ([("open sub-tab", open_tab)] if view != "all" else [])


def timed(call) -> tuple[float, int]:
    start = time.perf_counter()
    size = serialise(call())
    return time.perf_counter() - start, size


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=5, help="runs per event (the median is reported)")
    p.add_argument("--views", nargs="+", default=VIEWS, choices=VIEWS)
    p.add_argument("--concurrency", type=int, default=2, help="as APP_CONCURRENCY: sets torch's threads as the app")
    args = p.parse_args(argv)
    configure_torch(concurrency=args.concurrency)
    models = load_models()
    mlm = models.mlm
    if not mlm.available:
        sys.exit(mlm.error)
    handlers = H.Handlers(models)
    n_layers = mlm.config.num_hidden_layers
    texts = [SHORT, LONG[:MAX_CHARS]]
    lengths = [len(handlers.attention_data("mlm", text)[0].ids) for text in texts]
    print(f"{mlm.title} ({mlm.source}): {n_layers} layers x {mlm.config.num_attention_heads} heads; torch "
          f"{torch.__version__}, {torch.get_num_threads()} threads; gradio {gr.__version__}; median of "
          f"{args.repeats} runs, handler + serialising the outputs (ms)\n")
    print("| tokens | view | event | ms | sent (KB) |")
    print("|---:|---|---|---:|---:|")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "only the first 128 tokens were used"
        for text, n_tokens in zip(texts, lengths):
            for view in args.views:
                for name, call in events(handlers, text, n_layers, max(1, n_layers - 1), view):
                    timed(call)  # warm-up: imports, first figure
                    runs = [timed(call) for _ in range(args.repeats)]
                    ms = 1000 * statistics.median(t for t, _ in runs)
                    print(f"| {n_tokens} | {view} | {name} | {ms:,.0f} | {runs[-1][1] / 1000:,.1f} |", flush=True)


if __name__ == "__main__":
    main()
