"""How much of a held-out text a training corpus holds: whether a held-out figure is on text the model never read.

    python -m train.overlap --held-out ../shared/data/wikitext-2/wiki.valid.tokens \\
        --corpus ../shared/data/wikipedia-en,../shared/data/wikitext-2/wiki.train.tokens,../shared/data/imdb/unsup.txt
    python -m train.overlap --held-out ../shared/data/sst2/dev.tsv --corpus ../shared/data/sst2/train.tsv

Prints, for the held-out file (--held-out: a text file, WikiText layout or one document a line, or a TSV/CSV whose
`sentence` or `text` column is read, every row; .xz files are read as the text inside):
- the share of its distinct n-word runs (--n, default 10) that occur in the corpus, in all and by source;
- in WikiText layout, its articles whose title is a corpus document's title (its first line): word for word, and
  with each `<unk>` of a held-out title as any one word (candidates to read: `Frank <unk>` = `Frank Slide`); on
  both sides, text before a WikiText file's first ` = Title = ` line is read, but is no article;
- a TSV/CSV, its rows (sentences) whose words occur in a line of the corpus, in order and together.

Text on both sides is read as `train.pretrain` reads it (`train.data.read_documents`: WikiText markup and spaced
punctuation undone, `it 's` -> `it's`; IMDB's train.tsv without the evaluation sample, unsup.txt without its copies).
Its words are its lower-cased runs of letters and digits, in any script, with the marks (accents, vowel signs) that
follow a letter, read in NFC (`café` is one word, composed or decomposed, and so is `हिन्दी`; `well @-@ known` is
`well known`, `it's` is `it s`), `<unk>` left out (a title's aside). Text in a script written without spaces (Chinese,
Japanese) has no word runs: all of it from one space or punctuation mark to the next is one word. A run is looked
for within a line (a paragraph, a heading, a review, a row), never across two. Every document of every --corpus
source is read, whatever its weight (the mixture syntax of `train.pretrain --corpus`): a superset of what a run
samples from it.

Memory: the held-out side is kept as the 64-bit hashes of its distinct runs (Python's `hash` of the word tuple; a
chance collision between a held-out run and one of the corpus's M runs has odds of about M x runs / 2^64, under one
in a million for the data here); the corpus is read a file at a time, a folder source's files one by one. A sentence
is confirmed word for word once a hash matches.
"""
from __future__ import annotations

import argparse
import itertools
import re
import sys
import time
import unicodedata
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

# _text_files: the one list of the files a folder source is read as (read_documents' own), here read one at a time
from .data import (HUB_PREFIX, LABELED_SUFFIXES, UNK, DataError, _text_files, check_text_source, documents_from_lines,
                   missing_data, open_text, parse_mixture, plain_suffix, read_documents, starts_document, undecodable)
from .runtime import EXIT_OK, exit_code, naming, progress_bars, report_user_error
from .tables import read_texts


def _marks() -> str:
    """Unicode's marks (categories Mn, Mc, Me: accents, vowel signs) as the ranges of a regex set (`a-b`: matched
    about 4 times as fast as their 2,000-odd characters one by one)."""
    marks = [c for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)).startswith("M")]
    runs = [[c for _, c in run] for _, run in itertools.groupby(enumerate(marks), lambda pair: pair[1] - pair[0])]
    return "".join(f"{re.escape(chr(run[0]))}-{re.escape(chr(run[-1]))}" for run in runs)


# a run of letters and digits, in any script, going on through the marks after its first letter or digit
WORD = re.compile(rf"[^\W_]+(?:[{_marks()}]+[^\W_]*)*")
ASCII_WORD = re.compile(r"[^\W_]+")  # WORD in ASCII text, which holds no mark (twice as fast)
EXAMPLES = 3  # titles or sentences found, shown after their count


def word_list(text: str) -> list[str]:
    """The lower-cased words (`WORD`) of `text`, read in NFC: `cafe` + U+0301 is `café`."""
    if text.isascii():
        return ASCII_WORD.findall(text.lower())
    return WORD.findall(unicodedata.normalize("NFC", text).lower())


def words(text: str) -> tuple[str, ...]:
    """The words of `text` (`word_list`), `<unk>` left out."""
    return tuple(word_list(text.replace(UNK, " ")))


def runs(line: tuple[str, ...], n: int):
    """The n-word runs of a line's words, in order (none for a line of fewer than n words, at no cost)."""
    return () if len(line) < n else (line[i:i + n] for i in range(len(line) - n + 1))


def title_words(text: str) -> tuple[str | None, ...]:
    """A title's words (`words`), each `<unk>` kept as None: WikiText-2 v1 replaced its rare words by it (`Frank
    <unk>`, 33 of the 60 titles of its validation text), so it matches any one word (`same_title`)."""
    title = []
    for k, part in enumerate(text.lower().split(UNK)):
        title += [None] * (k > 0) + word_list(part)
    return tuple(title)


def title_lines(lines) -> int:
    """How many text lines are ` = Title = ` lines. Of the documents `documents_from_lines` makes of the lines, the
    last that many are WikiText articles, each opened by its title; one before them is the text before the first
    title, which is no article."""
    return sum(starts_document(line, wikitext=True) for line in lines)


def same_title(title: tuple, corpus_title: tuple) -> bool:
    """Whether a held-out title (`title_words`) is a corpus title, a None in it standing for any one word. A corpus
    title holding `<unk>` is the same only word for word, `<unk>` for `<unk>`: two unknown words may not be one."""
    if None in corpus_title:
        return title == corpus_title
    return len(title) == len(corpus_title) and all(x is None or x == y for x, y in zip(title, corpus_title))


def exactly(title: tuple, matched: tuple) -> bool:
    """Whether a held-out title matched a corpus title word for word, holding no `<unk>`."""
    return title == matched and None not in title


def shown(title: tuple) -> str:
    return " ".join(UNK if word is None else word for word in title)


@dataclass
class HeldOut:
    """A held-out file as words: each line's (a paragraph, a heading, a row), each article's title (WikiText layout,
    `title_words`), each row's (a TSV/CSV; a row of punctuation alone is left out)."""
    path: str
    lines: list[tuple[str, ...]]
    titles: list[tuple[str | None, ...]] = field(default_factory=list)
    sentences: list[tuple[str, ...]] = field(default_factory=list)


def check_held_out(path: str) -> None:
    """--held-out, checked before any data is read: a local file, and a TSV/CSV with a text column."""
    if path.startswith(HUB_PREFIX):
        raise ValueError(f"--held-out {path}: a local file is read (download the split and give its path)")
    if Path(path).is_dir():
        raise IsADirectoryError(f"--held-out {path}: a folder, not a file")
    if not Path(path).is_file():
        raise missing_data(path, "--held-out", what="no such file")
    if plain_suffix(Path(path)) in LABELED_SUFFIXES:  # its header: a sentence or text column
        check_text_source(path, "--held-out")


def read_held_out(path: str) -> HeldOut:
    """The held-out file's words (`HeldOut`): every row of a TSV/CSV, every line of a text file, read as
    `train.data` reads a corpus (`documents_from_lines`)."""
    if plain_suffix(Path(path)) in LABELED_SUFFIXES:
        rows = [words(text) for text in documents_from_lines(read_texts(path, column_options=False), source=path)]
        rows = [row for row in rows if row]
        if not rows:
            raise DataError(f"{path}: no row holds a word")
        return HeldOut(path, rows, sentences=rows)
    try:
        with open_text(path) as f:
            lines = f.readlines()
    except UnicodeDecodeError as err:
        raise undecodable(Path(path), err) from None
    documents = documents_from_lines(lines, source=path)
    if not documents:
        raise DataError(f"{path}: no text (the file is empty or blank)")
    articles = documents[len(documents) - title_lines(lines):]  # none unless WikiText layout
    titles = [title_words(document.split("\n", 1)[0]) for document in articles]
    return HeldOut(path, [words(line) for document in documents for line in document.split("\n")], titles)


@dataclass
class Found:
    """What a corpus (one source, or all of them) holds of the held-out text; the counts of held-out rows and
    articles (`count`) once the corpus is read."""
    source: str = ""
    documents: int = 0
    words: int = 0
    runs: set = field(default_factory=set)  # the hashes of the held-out runs found
    titles: dict = field(default_factory=dict)  # held-out title -> the corpus title it matched (an exact one first)
    sentences: set = field(default_factory=set)  # the held-out sentences found, as words
    sentences_found: int = 0  # held-out rows whose sentence was found (a sentence may be on several rows)
    titles_found: int = 0  # held-out articles whose title a corpus document has, word for word
    titles_found_with_unk: int = 0  # ... more, when `<unk>` is any one word

    @property
    def runs_found(self) -> int:
        return len(self.runs)

    def title_found(self, title: tuple, matched: tuple) -> None:
        if title not in self.titles or exactly(title, matched):
            self.titles[title] = matched

    def add(self, other: Found) -> None:
        self.documents, self.words = self.documents + other.documents, self.words + other.words
        self.runs |= other.runs
        for title, matched in other.titles.items():
            self.title_found(title, matched)
        self.sentences |= other.sentences

    def count(self, held: HeldOut) -> None:
        self.sentences_found = sum(sentence in self.sentences for sentence in held.sentences)
        matched = [(title, self.titles[title]) for title in held.titles if title in self.titles]
        self.titles_found = sum(exactly(title, corpus_title) for title, corpus_title in matched)
        self.titles_found_with_unk = len(matched) - self.titles_found

    def title_examples(self, exact: bool) -> list[str]:
        return sorted(shown(title) if exact else f"{shown(title)} = {shown(matched)}"
                      for title, matched in self.titles.items() if exactly(title, matched) == exact)

    def sentence_examples(self) -> list[str]:
        return sorted(" ".join(sentence) for sentence in self.sentences)


def looked_for(title: tuple) -> bool:
    """Whether a held-out title is looked for: it holds a known word (`<unk> <unk>` would match any 2-word title)."""
    return any(word is not None for word in title)


class Index:
    """The held-out side, which each corpus line is looked up in: the hashes of its distinct n-word runs, its titles
    by length, its sentences by the hash of their first n words (or, when shorter, by their first word)."""

    def __init__(self, held: HeldOut, n: int):
        self.n = n
        self.runs = {hash(run) for line in held.lines for run in runs(line, n)}
        self.titles = defaultdict(set)
        for title in filter(looked_for, held.titles):
            self.titles[len(title)].add(title)
        self.longest_title = max(self.titles, default=0)
        self.long, self.short = defaultdict(set), defaultdict(set)
        for sentence in held.sentences:
            if len(sentence) >= n:
                self.long[hash(sentence[:n])].add(sentence)
            else:
                self.short[sentence[0]].add(sentence)

    def scan(self, document: str, found: Found, titled: bool = True) -> None:
        """Look up one corpus document's lines, adding what they hold to `found`; its first line is its title
        unless it is not `titled` (a WikiText file's text before its first title)."""
        found.documents += 1
        for number, text in enumerate(document.split("\n")):
            line = words(text)
            found.words += len(line)
            if number == 0 and titled and len(line) <= self.longest_title:  # (a title's <unk>s are not in `line`)
                self.match_title(title_words(text), found)
            if self.runs:  # else every held-out line, and so every sentence, is shorter than n words
                self.match_runs(line, found)
            if self.short and not self.short.keys().isdisjoint(line):
                found.sentences.update(s for i, word in enumerate(line) for s in self.short.get(word, ())
                                       if line[i:i + len(s)] == s)

    def match_runs(self, line: tuple[str, ...], found: Found) -> None:
        hashes = list(map(hash, runs(line, self.n)))
        hits = self.runs.intersection(hashes)
        found.runs |= hits
        if any(h in self.long for h in hits):  # a sentence's first n words: the rest, word for word
            found.sentences.update(s for i, h in enumerate(hashes) for s in self.long.get(h, ())
                                   if line[i:i + len(s)] == s)

    def match_title(self, corpus_title: tuple, found: Found) -> None:
        for title in self.titles.get(len(corpus_title), ()):
            if same_title(title, corpus_title):
                found.title_found(title, corpus_title)


@dataclass
class Overlap:
    """The held-out file's counts, what the corpus holds of them (`found`) and each source's part (`sources`)."""
    held_out: str
    n: int
    runs: int  # its distinct n-word runs
    titles: int  # its articles (WikiText layout)
    titles_looked_for: int  # ... whose title holds a known word (`looked_for`)
    sentences: int  # its rows (a TSV/CSV)
    found: Found
    sources: list[Found]
    seconds: float


def source_files(corpus: str) -> list[tuple[str, list[str]]]:
    """Each --corpus source and what is read of it, a file at a time: a folder's text files one by one (as
    `read_documents` reads them), a file or a hub: spec whole."""
    return [(source, [source] if source.startswith(HUB_PREFIX) or not Path(source).is_dir()
             else [str(file) for file in _text_files(Path(source))]) for source, _ in parse_mixture(corpus)]


def untitled(file: str, documents: list[str]) -> int:
    """How many of a corpus file's `documents` (`read_documents`) have no title: 1 when a WikiText file begins with
    text before its first ` = Title = ` line, else 0. In a file of one document a line (no title line) each line is
    its document's first line, taken as its title, as is a hub: split's first line (not read twice: WikiText's splits
    begin with a title)."""
    if file.startswith(HUB_PREFIX) or plain_suffix(Path(file)) in LABELED_SUFFIXES:
        return 0
    with open_text(file) as f:  # read_documents has read it as UTF-8 already
        titled = title_lines(f)
    return len(documents) - titled if titled else 0


def measure(held: HeldOut, corpus: str, n: int = 10, progress: bool = False) -> Overlap:
    """How much of the held-out text (`read_held_out`) the `corpus` mixture holds: its distinct n-word runs, titles,
    sentences."""
    started = time.perf_counter()
    index = Index(held, n)
    sources = []
    for source, files in source_files(corpus):
        found = Found(source)
        for file in files:
            documents = read_documents(file)
            before = untitled(file, documents)
            for number, document in enumerate(_bar(documents, Path(file).name, progress)):
                index.scan(document, found, titled=number >= before)
        sources.append(found)
    total = Found("all")
    for found in sources:
        total.add(found)
    for found in (total, *sources):
        found.count(held)
    return Overlap(held.path, n, len(index.runs), len(held.titles), sum(map(looked_for, held.titles)),
                   len(held.sentences), total, sources, time.perf_counter() - started)


def _bar(documents: list[str], name: str, progress: bool):
    if not progress:
        return documents
    from tqdm.auto import tqdm

    return tqdm(documents, desc=name, unit="doc", dynamic_ncols=True, leave=False)


def _share(found: int, total: int) -> str:
    return f"{found:,} of {total:,}" + (f" ({100 * found / total:.2f}%)" if total else "")


def _examples(names: list[str]) -> str:
    if not names:
        return ""
    more = f", ... ({len(names) - EXAMPLES:,} more)" if len(names) > EXAMPLES else ""
    return " (" + "; ".join(names[:EXAMPLES]) + more + ")"


def report(result: Overlap) -> list[str]:
    """The lines `main` prints."""
    n, found = result.n, result.found
    lines = [f"held-out {result.held_out}; corpus: {len(result.sources)} source(s), {found.documents:,} documents, "
             f"{found.words:,} words, every document read whatever its weight ({result.seconds:.0f} s)"]
    if result.runs:
        lines.append(f"{n}-word runs found in the corpus: {found.runs_found:,} of {result.runs:,} distinct "
                     f"({100 * found.runs_found / result.runs:.2f}%)")
    else:
        lines.append(f"no {n}-word run in the held-out text (every line is shorter)")
    if result.titles:
        exact, with_unk = found.title_examples(exact=True), found.title_examples(exact=False)
        share = _share(found.titles_found, result.titles_looked_for)
        lines.append(f"article titles that are a corpus document's title: {share} word for word{_examples(exact)}, "
                     f"{found.titles_found_with_unk:,} more if <unk> is any one word{_examples(with_unk)}; "
                     f"{result.titles - result.titles_looked_for:,} not looked for (<unk> alone)")
    if result.sentences:
        lines.append("sentences contained verbatim (as words) in a corpus line: "
                     f"{_share(found.sentences_found, result.sentences)}{_examples(found.sentence_examples())}")
    for source in result.sources:
        parts = [f"{source.runs_found:,} runs" + (f" ({100 * source.runs_found / result.runs:.2f}%)"
                                                  if result.runs else "")]
        parts += ([f"{source.titles_found:,} titles (+{source.titles_found_with_unk:,} with <unk>)"]
                  if result.titles else [])
        parts += [f"{source.sentences_found:,} sentences"] if result.sentences else []
        lines.append(f"  {source.source}: {', '.join(parts)} ({source.documents:,} documents, {source.words:,} words)")
    return lines


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m train.overlap", description=__doc__.split("\n\n")[0],
                                epilog=__doc__.split("\n\n", 1)[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--held-out", required=True,
                   help="the held-out file: WikiText-style or one document a line, or a TSV/CSV (sentence or text)")
    p.add_argument("--corpus", required=True,
                   help="the training text: a file, a folder, hub:NAME[:CONFIG[:SPLIT[:COLUMN]]], or a mixture "
                        "a=0.7,b=0.3 (train.pretrain's --corpus; every source read whole)")
    p.add_argument("--n", type=int, default=10, help="words in a run (default: %(default)s)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar (none either when stderr is no "
                                                              "terminal)")
    args = p.parse_args(argv)
    try:
        if args.n < 1:
            raise ValueError(f"--n must be at least 1, got {args.n}")
        check_held_out(args.held_out)
        check_text_source(args.corpus, "--corpus")
        with naming("--held-out"):
            held = read_held_out(args.held_out)
        with naming("--corpus"):
            result = measure(held, args.corpus, args.n, progress_bars(args.no_progress))
    except (OSError, ValueError) as err:
        return report_user_error(err)
    print("\n".join(report(result)))
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(exit_code(main))
