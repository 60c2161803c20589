"""How often each token of the vocabulary occurs in the pretraining text: what the app shows beside a prediction.

    python -m train.token_counts --out assets/training-text/token-counts.json      # the shipped file (84 s on a
                                                                                   # 2-core AVX2 EPYC)
    python -m train.token_counts --words barked dog mailman                          # whole words, printed

A model knows a word about as well as its text showed it: " movie" comes up in fill-mask answers because movie
reviews are 62% of the pretraining corpora's tokens (and about a third of what the phases read, each in its own
mixture), and "barked" (never in the Wikipedia text, 6 times in the reviews) is a verb it cannot tie to dogs. Each
`--source NAME=PATH[,PATH...]` (default: the shipped pretraining corpora in two groups, Wikipedia and movie reviews)
is read as `train.pretrain` reads it (`train.data.read_documents`: IMDB's train.tsv without its evaluation sample) and
tokenized with `--tokenizer`; every document counts once (the model read them many times, in a different mixture each
phase). The JSON file holds, per source, its files, documents and tokens, and the count of every token id (beside it,
the same name in .png: the counts against their rank, the About tab's figure); `tokenizer_vocab`
(`roberta.tokenizer.vocab_digest`) ties it to the vocabulary it counts, and the app shows the counts only beside a
model with that vocabulary.
`--words` prints how often each word occurs whole (case-sensitive, not inside a longer word) in each source and
in all, which tokens cannot say for a word the tokenizer splits (" barked" is " b" + "arked").
"""
from __future__ import annotations

import argparse
import json
import re
import shlex
import sys
from pathlib import Path

import numpy as np

from roberta import load_tokenizer
from roberta.files import write_atomic
from roberta.tokenizer import vocab_digest

from .data import read_documents
from .packing import tokenize_documents
from . import paths
from .runtime import EXIT_OK, exit_code, output_file, report_user_error

# The shipped encoder's pretraining corpora (train.pretrain.PRETRAIN_CORPUS's files), by kind of text
DEFAULT_SOURCES = (f"Wikipedia={paths.WIKIPEDIA},{paths.WIKITEXT_TRAIN}",
                   f"movie reviews={paths.IMDB_UNSUP},{paths.IMDB_TRAIN}")
DEFAULT_TOKENIZER = "assets/mini-roberta-mlm"


def parse_sources(specs: list[str]) -> list[tuple[str, list[str]]]:
    """Every --source, each name and each file once (a file in two sources would be counted twice)."""
    sources = [parse_source(spec) for spec in specs]
    names = [name for name, _ in sources]
    files = [str(Path(path).resolve()) for _, paths in sources for path in paths]
    for kind, items in (("name", names), ("file", files)):
        twice = sorted({item for item in items if items.count(item) > 1})
        if twice:
            raise ValueError(f"--source: each {kind} once (given more than once: {', '.join(twice)})")
    return sources


def parse_source(spec: str) -> tuple[str, list[str]]:
    """"NAME=PATH[,PATH...]" -> (name, paths)."""
    name, eq, paths = spec.partition("=")
    files = [p.strip() for p in paths.split(",") if p.strip()]
    if not eq or not name.strip() or not files:
        raise ValueError(f"--source {spec!r}: write NAME=PATH[,PATH...], e.g. \"{DEFAULT_SOURCES[0]}\"")
    return name.strip(), files


def count_tokens(tokenizer, documents: list[str], show_progress: bool | None = None) -> np.ndarray:
    """How often each token id occurs in `documents` (no special tokens added): an int64 array of the
    vocabulary's size."""
    counts = np.zeros(tokenizer.get_vocab_size(with_added_tokens=True), dtype=np.int64)
    for ids in tokenize_documents(documents, tokenizer, show_progress=show_progress):
        counts += np.bincount(ids, minlength=len(counts))
    return counts


def count_word(word: str, documents: list[str]) -> int:
    """How often `word` occurs whole in `documents` (case-sensitive; not inside a longer word: an end of `word`
    that is a letter or digit must not touch another, so "dog" is not counted in "dogs", and "!!" is in "wow!!")."""
    before = r"(?<!\w)" if re.match(r"\w", word) else ""
    after = r"(?!\w)" if re.search(r"\w$", word) else ""
    pattern = re.compile(before + re.escape(word) + after)
    return sum(len(pattern.findall(doc)) for doc in documents)


def build_counts(tokenizer, sources: list[tuple[str, list[str]]], show_progress: bool | None = None) -> dict:
    """The JSON document: per source its files, documents, tokens and per-token counts."""
    out = {"tokenizer_vocab": vocab_digest(tokenizer), "sources": []}
    for name, files in sources:
        documents = [doc for path in files for doc in read_documents(path)]
        counts = count_tokens(tokenizer, documents, show_progress)
        out["sources"].append({"name": name, "files": files, "documents": len(documents),
                               "tokens": int(counts.sum()), "counts": counts.tolist()})
    return out


def write_counts(document: dict, path: Path) -> None:
    """One source per line block, each count list on one line: a 32k vocabulary is ~0.1 MB per source."""
    path.parent.mkdir(parents=True, exist_ok=True)
    head = {k: v for k, v in document.items() if k != "sources"}  # the tokenizer's fingerprint, the command
    sources = [json.dumps(source, ensure_ascii=False, separators=(",", ":")) for source in document["sources"]]
    text = json.dumps(head, indent=2)[:-2] + ',\n  "sources": [\n    ' + ",\n    ".join(sources) + "\n  ]\n}\n"
    write_atomic(path, text)


def is_counts_file(path: Path) -> bool:
    """Whether `path` holds a document this script wrote (which a new one may replace)."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(document, dict) and {"tokenizer_vocab", "sources"} <= document.keys()


# tokens the figure marks: a function word, the reviews' word, a country, the rare half of " barked"
MARKED = ("Ġthe", "Ġmovie", "ĠFrance", "arked")
RARE = 100  # the figure's line: tokens seen fewer times than this


def plot_counts(document: dict, tokenizer, path: Path) -> Path:
    """The rank-frequency figure (log-log) of the counts: one line per source and their total, a few tokens
    marked, and how much of the vocabulary lies under RARE occurrences."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    from .reporting import save_figure

    counts = np.array([source["counts"] for source in document["sources"]], dtype=np.int64)
    total = counts.sum(axis=0)
    fig = Figure(figsize=(8, 4.6))
    ax = fig.add_subplot()
    ranks = np.arange(1, len(total) + 1)
    for source, row in zip(document["sources"], counts):
        ax.loglog(ranks, np.sort(row)[::-1], lw=1.2, alpha=.8,
                  label=f"{source['name']} ({tokens_said(source['tokens'])})")
    if len(counts) > 1:
        ax.loglog(ranks, np.sort(total)[::-1], color="black", lw=1.8,
                  label=f"{'both' if len(counts) == 2 else 'all'} ({tokens_said(int(total.sum()))})")
    order = np.argsort(-total, kind="stable")
    rank_of = np.empty_like(order)
    rank_of[order] = ranks
    for token in MARKED:
        token_id = tokenizer.token_to_id(token)
        if token_id is None or total[token_id] == 0:
            continue
        x, y = rank_of[token_id], total[token_id]
        ax.plot([x], [y], "o", color="black", ms=4)
        ax.annotate(f"“{token.replace('Ġ', '␣')}” {y:,}", (x, y), xytext=(6, 4), textcoords="offset points",
                    fontsize=9)
    rare, never = int(((total > 0) & (total < RARE)).sum()), int((total == 0).sum())
    ax.axhline(RARE, color="grey", ls=":", lw=1)  # under the curves, in the corner the legend leaves free
    ax.text(0.02, 0.03, f"dotted line: {RARE} occurrences; {rare:,} of the {len(total):,} tokens occur 1 to "
            f"{RARE - 1} times, {never:,} never", transform=ax.transAxes, fontsize=9, color="dimgrey")
    ax.set_xlabel("token, from the commonest (rank, log scale)")
    ax.set_ylabel("occurrences (log scale)")
    ax.set_title("How often the pretraining text holds each token of the vocabulary", fontsize=11)
    ax.legend(fontsize=9, loc="upper right")
    ax.grid(True, which="major", alpha=.3)
    return save_figure(fig, path)


def tokens_said(n: int) -> str:
    """A source's size in the figure's legend: "13.3M tokens", "2,130 tokens"."""
    return f"{n / 1e6:.1f}M tokens" if n >= 100_000 else f"{n:,} tokens"


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="python -m train.token_counts", description=__doc__.split("\n\n")[0],
                                epilog=__doc__.split("\n\n", 1)[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tokenizer", default=None,
                   help=f"with --out: tokenizer.json or a model folder holding one (default: {DEFAULT_TOKENIZER})")
    p.add_argument("--source", action="append", default=None, metavar="NAME=PATH[,PATH...]",
                   help="a kind of text and its files, as train.pretrain reads them; repeat for each (default: "
                        + "; ".join(DEFAULT_SOURCES) + ")")
    p.add_argument("--out", default=None, help="the JSON file to write, e.g. assets/training-text/token-counts.json")
    p.add_argument("--words", nargs="+", default=[], help="also print how often each of these words occurs whole")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    args = p.parse_args(argv)
    if not args.out and not args.words:
        p.error("nothing to do: give --out FILE (the counts) and/or --words WORD ...")
    if args.tokenizer and not args.out:
        p.error("--tokenizer is for the counts of --out FILE; --words counts whole words, with no tokenizer")
    if any(not word.strip() or word != word.strip() for word in args.words):
        p.error(f"--words: each word without spaces around it, not empty (got {args.words!r})")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        out = output_file(args.out, "token-counts.json") if args.out else None
        if out and out.is_file() and not is_counts_file(out):  # `--out .../tokenizer.json` would replace it
            raise ValueError(f"--out {out} exists and is not a token-counts file: choose another file name")
        figure = out.with_suffix(".png") if out else None
        if figure and figure.exists() and not is_counts_file(out):  # `--out .../curves.json`: its curves.png
            raise ValueError(f"--out {out} would replace {figure}, which is not the figure of a token-counts file: "
                             "choose another file name")
        sources = parse_sources(args.source or list(DEFAULT_SOURCES))
        tokenizer = load_tokenizer(args.tokenizer or DEFAULT_TOKENIZER) if out else None
    except (OSError, ValueError) as err:
        return report_user_error(err)
    progress = False if args.no_progress else None
    try:
        if args.words:
            documents = {name: [doc for path in paths for doc in read_documents(path)] for name, paths in sources}
            print("\t".join(["word", *documents, *(["all"] if len(documents) > 1 else [])]))
            for word in args.words:
                found = [count_word(word, docs) for docs in documents.values()]
                found += [sum(found)] if len(found) > 1 else []
                print("\t".join([word, *(f"{n:,}" for n in found)]))
        if out:
            document = build_counts(tokenizer, sources, progress)
            document["command"] = shlex.join(["python", "-m", "train.token_counts", *(argv or sys.argv[1:])])
            write_counts(document, out)
            figure = plot_counts(document, tokenizer, out.with_suffix(".png"))
            totals = ", ".join(f"{s['name']} {s['tokens']:,} tokens in {s['documents']:,} "
                               f"document{'s' if s['documents'] != 1 else ''}" for s in document["sources"])
            print(f"wrote {out} and {figure.name}: {totals}")
    except (OSError, ValueError) as err:  # a missing or unreadable corpus file
        return report_user_error(err)
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(exit_code(main))
