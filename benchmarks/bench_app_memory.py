"""Benchmark: the app's memory over a long run, every endpoint of its API called in turn with new texts.

A Space serves for weeks: a cache without a bound (results kept per text, per session, per figure) grows with
every new input until the machine runs out of memory. This starts `python app.py` (or finds the process of an app
already running at --url by its port), then calls each named endpoint of the app's API in turn, one request at a
time, with the endpoint's default inputs but for its text, which is new each call (a sentence of --texts, or words
of `demo.examples` put together at random; a mask put into it where the default text has one; single words for
a word's inputs). An endpoint whose default names a Hub model (the fill-mask comparison) is left out: it would
download one. With --model-copies N (or --models), the model boxes take local folders too: N copies of each model
the app serves, which it loads as N other models (APP_LOCAL_MODELS=1), so the loads of chosen models and their
eviction from the app's cache of 3 (`demo.model_choice.HUB_CACHE_SIZE`) run all along; each endpoint's model is then
the served one and the folders it takes in turn (found by one call with each before the run), and the fill-mask
comparison is in, against those folders. Every --every requests it reads the app's resident memory (VmRSS, Linux's
/proc) and prints a markdown table: requests, seconds, errors, resident MiB; then the growth over the run's second
half, which is what a leak shows (the first half also fills the app's bounded caches and the threads' memory pools).

    python benchmarks/bench_app_memory.py                                              # assets/ models, 2,400 requests
    python benchmarks/bench_app_memory.py --texts ../shared/data/sst2/dev.tsv          # SST-2 dev's sentences
    python benchmarks/bench_app_memory.py --url http://127.0.0.1:7860/ --requests 600  # an app already running
    python benchmarks/bench_app_memory.py --tiny --requests 40 --every 20              # the tests' tiny models
    python benchmarks/bench_app_memory.py --model-copies 2 --texts ../shared/data/sst2/dev.tsv  # models chosen too
"""
from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from anywhere
from gradio_client import Client  # noqa: E402

from demo import examples, settings  # noqa: E402
from scripts.app_process import AppProcess, check_app_url, listens_on  # noqa: E402
from scripts.load_check import build_tiny_models  # noqa: E402

MASK = "<mask>"
WORD_PARAMETERS = {"word", "a", "b", "c"}  # a single word each (/bpe_merges, /neighbours, /analogy)
# a single word's letters: the embedding views refuse a word of more than 5 pieces, and a byte-level BPE cuts a word
# of 4 letters (and its leading space) into at most 5, even the tests' tiny tokenizer
WORD_LETTERS = (3, 4)
MAP_WORDS = 12  # words of a /word_map call
SPARE_WORDS = ("cat", "dog", "sun")
MODEL_FILES = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json")  # what a copy needs
SERVED = {"shipped", "mlm", "sentiment"}  # a model box's values for the models the app serves


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


def served_folders(env: dict) -> list[Path]:
    """The local folders of the models an app started with `env` serves (MLM_MODEL, SENTIMENT_MODEL, else the
    shipped ones in assets/); a Hub id is left out."""
    root = Path(__file__).resolve().parent.parent
    sources = [env.get(var) or os.environ.get(var) or str(root / "assets" / settings.SHIPPED_FOLDER[key])
               for key, var in settings.MODEL_ENV.items()]
    return [Path(source) for source in sources if Path(source).is_dir()]


def model_copies(folders: list[Path], copies: int, scratch: Path) -> list[str]:
    """`copies` copies of each model folder (the files a model box reads), each a model of its own to the app."""
    made = []
    for i in range(copies):
        for folder in folders:
            copy = scratch / f"copy-{i}-{folder.name}"
            copy.mkdir()
            for name in MODEL_FILES:
                if (folder / name).is_file():
                    shutil.copy2(folder / name, copy / name)
            made.append(str(copy))
    return made


def endpoint_calls(api: dict, folders: bool = False) -> tuple[list[tuple[str, list[dict]]], list[str]]:
    """(endpoint, its parameters) for each named endpoint of `Client.view_api(return_format="dict")`, and the
    endpoints left out: those whose default inputs name a Hub model, unless local `folders` take its place."""
    calls, left_out = [], []
    for name, endpoint in api["named_endpoints"].items():
        parameters = endpoint["parameters"]
        if not folders and model_boxes(parameters)[1]:
            left_out.append(name)
        else:
            calls.append((name, parameters))
    return calls, left_out


def arguments(parameters: list[dict], text: str, rng: random.Random, models: dict | None = None) -> list:
    """An endpoint's inputs: its defaults, but `text` for a text (a mask put in where the default has one),
    words of it for a word's inputs and a list of words, and `models`' choice for a model box ({parameter name:
    its value}; none given, the default)."""
    words = list(dict.fromkeys(w for w in re.findall(r"[A-Za-z]+", text) if len(w) > 2))
    short = [w for w in words if WORD_LETTERS[0] <= len(w) <= WORD_LETTERS[1]]
    short += [w for w in SPARE_WORDS if w not in short]  # a short text still gives three different words
    words += [w for w in SPARE_WORDS if w not in words]
    asked = sum(p["parameter_name"] in WORD_PARAMETERS for p in parameters)
    distinct = iter(rng.sample(short, asked))  # a, b and c differ (/analogy refuses a repeat)
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
        elif models and name in models:
            out.append(models[name])
        else:
            out.append(default)
    return out


def model_boxes(parameters: list[dict]) -> tuple[list[str], list[str]]:
    """An endpoint's model boxes: (those whose default is a model the app serves, those whose default is a Hub id)."""
    served, hub = [], []
    for p in parameters:
        name, default = p["parameter_name"], str(p.get("parameter_default"))
        if default in SERVED:
            served.append(name)
        elif name not in ("text", "words") and "/" in default:
            hub.append(name)
    return served, hub


def accepts(client: Client, name: str, parameters: list[dict], text: str, models: dict) -> bool:
    """Whether the endpoint answers with `models` in its boxes (a box of the other kind of model is refused)."""
    try:
        client.predict(*arguments(parameters, text, random.Random(0), models), api_name=name)
        return True
    except Exception:  # refused: the folder is not a model this box takes
        return False


def model_rotations(client: Client, calls: list, folders: list[str], text: str) -> dict[str, dict[str, list]]:
    """For each endpoint with a model box, the values each box takes in turn: a served-model box its default and
    the `folders` it accepts, a Hub-id box the folders alone (found by one call with each, the served boxes at
    their defaults; then the served boxes' with the Hub-id boxes at their first). An endpoint whose Hub-id box
    takes none of them is left out ({endpoint: None})."""
    rotations = {}
    for name, parameters in calls:
        served, hub = model_boxes(parameters)
        boxes = {box: [f for f in folders if accepts(client, name, parameters, text, {box: f})] for box in hub}
        if any(not taken for taken in boxes.values()):
            rotations[name] = None
            continue
        defaults = {p["parameter_name"]: p.get("parameter_default") for p in parameters}
        for box in served:
            beside = [{other: next((v for v in taken if v != f), None) for other, taken in boxes.items()}
                      for f in folders]  # the Hub-id boxes at another folder (a model compared with itself is refused)
            boxes[box] = [defaults[box]] + [f for f, others in zip(folders, beside) if None not in others.values()
                                            and accepts(client, name, parameters, text, {**others, box: f})]
        if boxes:
            rotations[name] = boxes
    return rotations


def turn_of(boxes: dict[str, list], turn: int) -> dict:
    """Each box's value at the endpoint's `turn`-th call, the boxes counting like the digits of a number (the first
    box's value changes every call, the second's once the first has taken all of its own, ...), so every pairing
    comes in turn; where another box has a value already, the one after it (the fill-mask comparison refuses a
    model compared with itself)."""
    chosen, stride = {}, 1
    for box, values in boxes.items():
        index = turn // stride
        shift = next((k for k in range(len(values)) if values[(index + k) % len(values)] not in chosen.values()), 0)
        chosen[box] = values[(index + shift) % len(values)]
        stride *= len(values)
    return chosen


def run(url: str, pid: int, texts: list[str], requests: int, every: int, seed: int,
        folders: list[str] = ()) -> list[tuple]:
    """The requests, one at a time over the endpoints in turn; a row (requests, seconds, errors, MiB) after every
    `every` of them, the first before any. Errors are printed as they come (the first line of each). `folders`:
    local model folders the model boxes take in turn (the app must allow them: APP_LOCAL_MODELS=1)."""
    client = Client(url, verbose=False)
    calls, left_out = endpoint_calls(client.view_api(return_format="dict", print_info=False), bool(folders))
    rotations = model_rotations(client, calls, list(folders), texts[0]) if folders else {}
    left_out += [name for name, boxes in rotations.items() if boxes is None]
    calls = [(name, parameters) for name, parameters in calls if name not in left_out]
    print(f"{len(calls)} endpoints: {', '.join(name for name, _ in calls)}"
          + (f" (left out: {', '.join(left_out)}, whose defaults name a Hub model)" if left_out else ""), flush=True)
    if folders:
        taken = [f"{name} {box}: {sum(value in folders for value in values)}"
                 for name, boxes in rotations.items() if boxes for box, values in boxes.items()]
        print(f"of the {len(folders)} folders, the model boxes take (found by a call with each, before the first "
              f"reading): {'; '.join(taken)}", flush=True)
    rng = random.Random(seed)
    rows = [(0, 0.0, 0, resident_mib(pid))]
    errors, start = 0, time.perf_counter()
    turns = dict.fromkeys(rotations, 0)  # calls of each endpoint so far: each box takes its next value
    for i in range(requests):
        name, parameters = calls[i % len(calls)]
        models = None
        if rotations.get(name):
            models = turn_of(rotations[name], turns[name])
            turns[name] += 1
        try:
            client.predict(*arguments(parameters, rng.choice(texts), rng, models), api_name=name)
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
    parser.add_argument("--model-copies", type=int, default=0, metavar="N",
                        help="N copies of each model the started app serves, which its model boxes take in turn "
                             "(default: %(default)s, the served models only)")
    parser.add_argument("--models", nargs="+", default=[], metavar="FOLDER",
                        help="local model folders the model boxes take in turn (with --url: the app must have "
                             "APP_LOCAL_MODELS=1)")
    args = parser.parse_args(argv)
    if args.requests < 1 or args.every < 1 or args.model_copies < 0:
        parser.error(f"--requests and --every must be at least 1 and --model-copies at least 0, got {args.requests}, "
                     f"{args.every} and {args.model_copies}")
    if args.url and args.model_copies:
        parser.error("--model-copies copies the models of an app it starts: with --url, name folders with --models")
    if missing := [folder for folder in args.models if not Path(folder, "config.json").is_file()]:
        parser.error(f"--models: not a model folder (no config.json): {', '.join(missing)}")
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
        print(report(run(args.url, pid, texts, args.requests, args.every, args.seed, args.models)))
        return 0
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as scratch:
        env = {}
        if args.tiny:
            env["MLM_MODEL"], env["SENTIMENT_MODEL"] = build_tiny_models(Path(scratch))
        folders = [*args.models, *model_copies(served_folders(env), args.model_copies, Path(scratch))]
        if folders:
            env[settings.LOCAL_ENV] = "1"
        with AppProcess(env, timeout=300) as app:
            print(report(run(app.url, app.proc.pid, texts, args.requests, args.every, args.seed, folders)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
