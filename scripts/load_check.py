"""Load check of the Gradio app: cold start, then concurrent gradio_client clients on the four endpoints.

    python -m scripts.load_check                                   # start app.py with the assets/ models
    MLM_MODEL=path SENTIMENT_MODEL=path python -m scripts.load_check   # ... or with other models
    python -m scripts.load_check --url http://127.0.0.1:7860/      # an app that is already running
    python -m scripts.load_check --tiny                            # the tests' tiny random models
    python -m scripts.load_check --worst-case 4                    # then again beside 4 hostile clients

Reports the cold start (process start to the first successful prediction; only when this script starts the
app), then CLIENTS concurrent clients each sending REQUESTS requests mixed over /fill_mask, /classify,
/attention and /masking: errors (target 0) and p50/p95 latency per endpoint and overall, as a markdown table.
--worst-case N runs the same load a second time while N more clients send the worst-case inputs of
`demo.worst_case` (up to 200,000 characters each, every endpoint) as fast as they are answered, and reports
the normal clients' p95 beside its quiet value: a single request must not hold the server (target: at most
twice the quiet p95; the exit code is 1 above it).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

from gradio_client import Client

from train.exit_codes import EXIT_FAILED, EXIT_OK, EXIT_USER_ERROR, exit_code, report_user_error
from train.paths import output_file, write_output_json

from .app_process import AppProcess, check_app_url

TEXTS = [
    "The film was a gorgeous, funny and deeply moving experience.",
    "A dull, lifeless and painfully slow mess that goes nowhere.",
    "The acting was not bad at all, and the story kept me interested until the end.",
    "Paris is the capital and largest city of France, on the river Seine.",
]
MASKED = ["Paris is the capital of <mask>.", "The <mask> barked at the mailman.",
          "The <mask> sat on the <mask> all day.", "She opened the <mask> and walked into the garden."]
ENDPOINTS = ["/fill_mask", "/classify", "/attention", "/masking"]


def request_args(endpoint: str, i: int) -> tuple:
    text = TEXTS[i % len(TEXTS)]
    return {
        "/fill_mask": (MASKED[i % len(MASKED)], 5),
        "/classify": (text,),
        "/attention": (text, 1, "average"),
        "/masking": (text, 10, i),
    }[endpoint]


def build_tiny_models(folder: Path) -> tuple[str, str]:
    """The tiny random MLM and classifier the tests use (`scripts.tiny_models`: same data, tokenizer and seeds)."""
    from .tiny_models import save_tiny_model, tiny_tokenizer

    tokenizer = tiny_tokenizer()
    return (str(save_tiny_model(folder / "tiny-mlm", tokenizer)),
            str(save_tiny_model(folder / "tiny-clf", tokenizer, classifier=True)))


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


class ModelUnavailable(Exception):
    """The started app says one of its models is not available (a mistyped folder): no load to check."""


def cold_start(app: AppProcess, timeout: float) -> tuple[float, float]:
    """Start app.py; seconds until it answers HTTP, and until the first prediction succeeds. A model the app
    says is not available fails at once (ModelUnavailable), not after `timeout`."""
    app.start()
    deadline = app.started_at + timeout
    while True:
        try:
            Client(app.url, verbose=False).predict(*request_args("/classify", 0), api_name="/classify")
            break
        except Exception as err:  # a model may still be warming up; a missing one fails for good
            if "model is not available" in str(err):
                raise ModelUnavailable(str(err)) from None
            if time.perf_counter() > deadline:
                raise TimeoutError(f"no successful prediction within {timeout:.0f} s: {err}") from err
            time.sleep(0.25)
    return app.ready_seconds, time.perf_counter() - app.started_at


def worst_case_requests() -> list[tuple[str, tuple]]:
    """(endpoint, args) for every worst-case text on every endpoint (fill-mask gets a mask in front)."""
    from demo.worst_case import worst_case_texts

    return [(endpoint, {"/fill_mask": ("<mask> " + text, 5), "/classify": (text,), "/attention": (text, 1, "average"),
                        "/masking": (text, 40, 0)}[endpoint])
            for text in worst_case_texts().values() for endpoint in ENDPOINTS]


def hostile_clients(url: str, n: int, stop: threading.Event) -> tuple[list[threading.Thread], list]:
    """n clients sending worst-case requests back to back until `stop`; their (endpoint, seconds, error)."""
    hostile = worst_case_requests()
    sent: list = []

    def worker(c: int):
        client = Client(url, verbose=False)
        i = c
        while not stop.is_set():
            endpoint, args = hostile[i % len(hostile)]
            i += n
            t0 = time.perf_counter()
            try:
                client.predict(*args, api_name=endpoint)
                error = None
            except Exception as err:  # most worst cases are refused with a user error: expected
                error = repr(err)[:120]
            sent.append((endpoint, time.perf_counter() - t0, error))

    threads = [threading.Thread(target=worker, args=(c,), daemon=True) for c in range(n)]
    for t in threads:
        t.start()
    return threads, sent


def run_load(url: str, clients: int, requests: int) -> tuple[dict, list, float]:
    latencies: dict[str, list[float]] = defaultdict(list)
    errors: list[tuple[str, str]] = []
    lock = threading.Lock()
    start_barrier = threading.Barrier(clients)

    def worker(c: int):
        try:
            client = Client(url, verbose=False)
        except Exception as err:
            with lock:
                errors.extend([("connect", repr(err))] * requests)
            start_barrier.abort()
            return
        try:
            start_barrier.wait(timeout=120)
        except threading.BrokenBarrierError:
            pass
        for r in range(requests):
            endpoint = ENDPOINTS[(c + r) % len(ENDPOINTS)]
            t0 = time.perf_counter()
            try:
                client.predict(*request_args(endpoint, c * requests + r), api_name=endpoint)
            except Exception as err:
                with lock:
                    errors.append((endpoint, repr(err)[:200]))
                continue
            with lock:
                latencies[endpoint].append(time.perf_counter() - t0)

    threads = [threading.Thread(target=worker, args=(c,)) for c in range(clients)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return latencies, errors, time.perf_counter() - t0


def report(latencies: dict, errors: list, wall: float, clients: int, requests: int) -> str:
    error_counts = defaultdict(int)
    for endpoint, _ in errors:
        error_counts[endpoint] += 1
    lines = ["| endpoint | requests | errors | p50 (s) | p95 (s) | max (s) |", "|---|---:|---:|---:|---:|---:|"]
    everything = []
    for endpoint in ENDPOINTS:
        values = sorted(latencies.get(endpoint, []))
        everything += values
        n = len(values) + error_counts[endpoint]
        lines.append(f"| {endpoint} | {n} | {error_counts[endpoint]} | {percentile(values, 50):.2f} | "
                     f"{percentile(values, 95):.2f} | {max(values, default=float('nan')):.2f} |")
    everything.sort()
    lines.append(f"| **all** | {len(everything) + len(errors)} | {len(errors)} | {percentile(everything, 50):.2f} | "
                 f"{percentile(everything, 95):.2f} | {max(everything, default=float('nan')):.2f} |")
    lines.append("")
    lines.append(f"{clients} concurrent clients × {requests} requests in {wall:.1f} s "
                 f"({len(everything) / wall:.1f} successful requests/s).")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m scripts.load_check", description=__doc__.split("\n\n")[0],
                                epilog=__doc__.split("\n\n", 1)[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--url", help="target a running app instead of starting app.py")
    p.add_argument("--mlm", help="MLM_MODEL for the started app (default: the environment, else assets/)")
    p.add_argument("--sentiment", help="SENTIMENT_MODEL for the started app")
    p.add_argument("--tiny", action="store_true", help="start the app with the tests' tiny random models")
    p.add_argument("--clients", type=int, default=20, help="clients at once (default: %(default)s)")
    p.add_argument("--requests", type=int, default=10, help="requests per client (default: %(default)s)")
    p.add_argument("--timeout", type=float, default=180.0,
                   help="seconds allowed for the cold start (default: %(default)s)")
    p.add_argument("--worst-case", type=int, default=0, metavar="N",
                   help="run the load again beside N clients sending worst-case inputs; compare the p95")
    p.add_argument("--json", help="also write the raw figures to this JSON file")
    args = p.parse_args(argv)
    if args.clients < 1 or args.requests < 1 or args.worst_case < 0 or not args.timeout > 0:  # else a table of nan
        p.error(f"--clients and --requests must be at least 1, --worst-case at least 0 and --timeout positive, got "
                f"{args.clients}, {args.requests}, {args.worst_case} and {args.timeout}")
    if args.url and (problem := check_app_url(args.url)):  # an app that is not there: one line, not a table of nan
        print(f"error: {problem}", file=sys.stderr)
        return EXIT_USER_ERROR
    if args.json:  # checked before the load runs
        try:
            output_file(args.json, "load-check.json", "--json")
        except (OSError, ValueError) as err:
            return report_user_error(err)

    app = scratch = None
    lines = []
    hostile_figures = None
    try:
        if args.url:
            url = args.url
        else:
            if args.tiny:
                scratch = tempfile.TemporaryDirectory(prefix="load-check-")
                args.mlm, args.sentiment = build_tiny_models(Path(scratch.name))
            env = {k: v for k, v in (("MLM_MODEL", args.mlm), ("SENTIMENT_MODEL", args.sentiment)) if v}
            app = AppProcess(env, timeout=args.timeout)
            http_ready, first_prediction = cold_start(app, args.timeout)
            url = app.url
            lines += [f"Cold start: HTTP answers after {http_ready:.1f} s, first successful prediction after "
                      f"{first_prediction:.1f} s (process start to response).", ""]
        latencies, errors, wall = run_load(url, args.clients, args.requests)
        if args.worst_case:
            stop = threading.Event()
            threads, sent = hostile_clients(url, args.worst_case, stop)
            loaded = run_load(url, args.clients, args.requests)
            stop.set()
            for t in threads:
                t.join(timeout=300)
            hostile_figures = (loaded, list(sent))
    except ModelUnavailable as err:
        return report_user_error(err)
    finally:
        alive = app is not None and app.alive()
        if app is not None:
            app.stop()
        if scratch is not None:
            scratch.cleanup()
    lines.append(report(latencies, errors, wall, args.clients, args.requests))
    ratio = None
    if hostile_figures:
        (latencies2, errors2, wall2), sent = hostile_figures
        quiet = percentile(sorted(v for vs in latencies.values() for v in vs), 95)
        loud = percentile(sorted(v for vs in latencies2.values() for v in vs), 95)
        ratio = loud / quiet
        slowest = max(sent, key=lambda r: r[1], default=("-", float("nan"), None))
        lines += ["", f"The same load beside {args.worst_case} clients sending worst-case inputs "
                      f"({len(sent)} requests, {sum(1 for r in sent if r[2])} refused with a user error, the slowest "
                      f"{slowest[1]:.2f} s on {slowest[0]}):", "",
                  report(latencies2, errors2, wall2, args.clients, args.requests), "",
                  f"p95 of the normal clients: {loud:.2f} s beside the worst-case clients, {quiet:.2f} s without "
                  f"them ({ratio:.2f}x; target at most 2x)."]
    if app is not None and not alive:
        lines.append("\n**The app process died during the load check.**")
    all_errors = errors + (hostile_figures[0][1] if hostile_figures else [])
    if all_errors:
        lines.append("\nFirst errors:\n" + "\n".join(f"- {e}: {m}" for e, m in all_errors[:5]))
    print("\n".join(lines))
    if args.json:  # each load's own figures: the quiet one, and beside the worst-case clients with the p95 ratio
        figures = {"latencies": latencies, "errors": errors, "wall": wall}
        if hostile_figures:
            (latencies2, errors2, wall2), _ = hostile_figures
            figures["beside_worst_case"] = {"latencies": latencies2, "errors": errors2, "wall": wall2,
                                            "p95_ratio": ratio}
        write_output_json(args.json, figures)  # its folder made, written in one step (torch loaded only now)
    return EXIT_FAILED if all_errors or (ratio is not None and ratio > 2) else EXIT_OK


if __name__ == "__main__":
    raise SystemExit(exit_code(main))
