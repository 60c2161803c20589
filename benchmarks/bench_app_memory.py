"""Benchmark: the app's memory over a long run, every endpoint of its API called in turn with new texts.

A Space serves for weeks: a cache without a bound (results kept per text, per session, per figure) grows with
every new input until the machine runs out of memory. This starts `python app.py` (or finds the process of an app
already running at --url by its port), then calls each named endpoint of the app's API in turn, one request at a
time, with the endpoint's default inputs but for its text, which is new each call (a sentence of --texts, or words
of `demo.examples` put together at random; a mask put into it where the default text has one; single words for
a word's inputs). An endpoint whose default names a Hub model (the fill-mask comparison) is left out: it would
download one. Every --every requests it reads the app's resident memory (VmRSS, Linux's /proc) and prints a
markdown table: requests, seconds, errors, resident MiB; then the growth over the run's second half, which is
what a leak shows (the first half also fills the app's bounded caches and the threads' memory pools).

    python benchmarks/bench_app_memory.py                                              # assets/ models, 2,400 requests
    python benchmarks/bench_app_memory.py --texts ../shared/data/sst2/dev.tsv          # SST-2 dev's sentences
    python benchmarks/bench_app_memory.py --url http://127.0.0.1:7860/ --requests 600  # an app already running
    python benchmarks/bench_app_memory.py --tiny --requests 40 --every 20              # the tests' tiny models
"""
from __future__ import annotations

import argparse
import random
import re
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from anywhere
from gradio_client import Client  # noqa: E402

from demo import examples  # noqa: E402
from scripts.app_process import AppProcess, check_app_url, listens_on  # noqa: E402
from scripts.load_check import build_tiny_models  # noqa: E402

MASK = "<mask>"
WORD_PARAMETERS = {"word", "a", "b", "c"}  # a single word each (/bpe_merges, /neighbours, /analogy)
MAP_WORDS = 12  # words of a /word_map call
SPARE_WORDS = ("cat", "dog", "house")


def resident_mib(pid: int) -> float:
    """The process's resident memory (VmRSS) in MiB, from /proc (Linux)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise ValueError(f"no VmRSS in /proc/{pid}/status")


def process_listening_on(port: int) -> int | None:
    """The pid of the process that listens on `port` (an app started elsewhere), from /proc; None if none is seen."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and listens_on(int(entry.name), port):
            return int(entry.name)
    return None


def read_texts(path: str | None) -> list[str]:
    """The sentences of a text file (one per line; a TSV's first column, its header line left out), or None
    given, sentences of 6 to 14 words drawn from the words of `demo.examples`'s example texts."""
    if path:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
        if path.endswith(".tsv"):
            lines = [line.split("\t")[0] for line in lines[1:]]
        texts = [line.strip() for line in lines if len(line.split()) >= 3]
        if not texts:
            raise ValueError(f"--texts {path}: no line of 3 words or more")
        return texts
    sources = [*examples.FILL_MASK_EXAMPLES, *examples.SENTIMENT_EXAMPLES, examples.ATTENTION_TEXT,
               examples.TOKENS_TEXT]
    words = sorted({w for source in sources for w in re.findall(r"[A-Za-z]+", str(source)) if w != "mask"})
    rng = random.Random(0)
    return [" ".join(rng.sample(words, rng.randint(6, 14))).capitalize() + "." for _ in range(2000)]


def endpoint_calls(api: dict) -> tuple[list[tuple[str, list[dict]]], list[str]]:
    """(endpoint, its parameters) for each named endpoint of `Client.view_api(return_format="dict")`, and the
    endpoints left out: those whose default inputs name a Hub model."""
    calls, left_out = [], []
    for name, endpoint in api["named_endpoints"].items():
        parameters = endpoint["parameters"]
        if any(p.get("parameter_name") not in ("text", "words") and "/" in str(p.get("parameter_default"))
               for p in parameters):
            left_out.append(name)
        else:
            calls.append((name, parameters))
    return calls, left_out


def arguments(parameters: list[dict], text: str, rng: random.Random) -> list:
    """An endpoint's inputs: its defaults, but `text` for a text (a mask put in where the default has one),
    words of it for a word's inputs and a list of words."""
    words = list(dict.fromkeys(w for w in re.findall(r"[A-Za-z]+", text) if len(w) > 2))
    words += [w for w in SPARE_WORDS if w not in words]  # a short text still gives three different words
    asked = sum(p["parameter_name"] in WORD_PARAMETERS for p in parameters)
    distinct = iter(rng.sample(words, asked))  # a, b and c differ (/analogy refuses a repeat)
    out = []
    for p in parameters:
        name, default = p["parameter_name"], p.get("parameter_default")
        if name == "text" and MASK in str(default):
            pieces = text.split()
            pieces[rng.randrange(len(pieces))] = MASK
            out.append(" ".join(pieces))
        elif name == "text":
            out.append(text)
        elif name == "words":
            out.append(", ".join(rng.choice(words) for _ in range(MAP_WORDS)))
        elif name in WORD_PARAMETERS:
            out.append((" " if str(default).startswith(" ") else "") + next(distinct))
        else:
            out.append(default)
    return out


def run(url: str, pid: int, texts: list[str], requests: int, every: int, seed: int) -> list[tuple]:
    """The requests, one at a time over the endpoints in turn; a row (requests, seconds, errors, MiB) after every
    `every` of them, the first before any. Errors are printed as they come (the first line of each)."""
    client = Client(url, verbose=False)
    calls, left_out = endpoint_calls(client.view_api(return_format="dict", print_info=False))
    print(f"{len(calls)} endpoints: {', '.join(name for name, _ in calls)}"
          + (f" (left out: {', '.join(left_out)}, whose defaults name a Hub model)" if left_out else ""), flush=True)
    rng = random.Random(seed)
    rows = [(0, 0.0, 0, resident_mib(pid))]
    errors, start = 0, time.perf_counter()
    for i in range(requests):
        name, parameters = calls[i % len(calls)]
        try:
            client.predict(*arguments(parameters, rng.choice(texts), rng), api_name=name)
        except Exception as err:  # counted and said; the run goes on
            errors += 1
            print(f"error on {name}: {str(err).splitlines()[0][:200] if str(err) else type(err).__name__}",
                  file=sys.stderr, flush=True)
        if (i + 1) % every == 0 or i + 1 == requests:
            rows.append((i + 1, time.perf_counter() - start, errors, resident_mib(pid)))
            print(f"  {i + 1} requests, {rows[-1][3]:,.0f} MiB", file=sys.stderr, flush=True)
    return rows


def report(rows: list[tuple]) -> str:
    lines = ["| requests | seconds | errors | resident (MiB) |", "|---:|---:|---:|---:|"]
    lines += [f"| {n:,} | {s:,.0f} | {e} | {mib:,.0f} |" for n, s, e, mib in rows]
    half = rows[len(rows) // 2]
    last = rows[-1]
    lines += ["", f"From {rows[0][3]:,.0f} MiB before the first request to {last[3]:,.0f} MiB after {last[0]:,} "
                  f"(peak of the readings {max(r[3] for r in rows):,.0f}); over the second half ({half[0]:,} to "
                  f"{last[0]:,} requests) {last[3] - half[3]:+,.0f} MiB."]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="an app already running (its process is found by its port)")
    parser.add_argument("--tiny", action="store_true", help="start the app with the tests' tiny random models")
    parser.add_argument("--texts", help="a file of sentences, one per line (a .tsv: its first column)")
    parser.add_argument("--requests", type=int, default=2400, help="requests in all (default: %(default)s)")
    parser.add_argument("--every", type=int, default=240, help="requests between readings (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="of the texts' and words' draws (default: %(default)s)")
    args = parser.parse_args(argv)
    if args.requests < 1 or args.every < 1:
        parser.error(f"--requests and --every must be at least 1, got {args.requests} and {args.every}")
    if not Path("/proc/self/status").exists():
        parser.error("the resident memory is read from /proc: Linux only")
    if args.url and (problem := check_app_url(args.url)):
        parser.error(problem)
    texts = read_texts(args.texts)
    if args.url:
        address = urllib.parse.urlsplit(args.url)
        port = address.port or (443 if address.scheme == "https" else 80)
        pid = process_listening_on(port)
        if pid is None:
            parser.error(f"--url {args.url}: no process of this machine listens on port {port}")
        print(report(run(args.url, pid, texts, args.requests, args.every, args.seed)))
        return 0
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as scratch:
        env = {}
        if args.tiny:
            env["MLM_MODEL"], env["SENTIMENT_MODEL"] = build_tiny_models(Path(scratch))
        with AppProcess(env, timeout=300) as app:
            print(report(run(app.url, app.proc.pid, texts, args.requests, args.every, args.seed)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
