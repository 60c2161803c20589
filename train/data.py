"""Corpora for pretraining, from local files or the Hugging Face Hub, and the checks of data options before any
work. The labelled tables fine-tuning reads (TSV/CSV, or a `hub:` spec) are read by `train.tables`.

Sources
- A local path: a WikiText-style text file (` = Title = ` starts a document, one paragraph per line), a
  folder of such `.txt`/`.tokens` files, or a text file with one document per line (IMDB `unsup.txt`).
  A file with no ` = Title = ` heading is read as one document per non-empty line.
- A Hub spec `hub:NAME[:CONFIG[:SPLIT[:COLUMN]]]`, e.g. `hub:Salesforce/wikitext:wikitext-2-raw-v1:train`,
  read with `datasets.load_dataset` (CONFIG `default` or empty means none; SPLIT defaults to train).

Decisions (applied to every source, so training, evaluation and the app see the same text)
- Headings: a document's title is kept as its first line and section headings as lines of their own,
  without the `=` signs: they are natural text and tell the model what the paragraphs are about.
- WikiText markup: ` @-@ ` -> `-`, ` @,@ ` -> `,`, ` @.@ ` -> `.`; and when a file is tokenized (spaced
  punctuation, as in WikiText and SST-2) it is detokenized to natural English: `word , word` -> `word, word`,
  `it 's` -> `it's`, `( x )` -> `(x)`, `" x "` -> `"x"`. Natural text (Wikipedia, IMDB) is left as it is.
- `<unk>` (WikiText-2 v1 replaced rare words by it): kept as the tokenizer's `<unk>` special token, glued
  to the previous word (`of<unk> lobster`) so that it encodes as exactly one `<unk>` id with no stray
  space token. Dropping it would leave broken sentences (5% of WikiText-2's words); as a special token
  it is never a masking target, so the model is never asked to predict an unknown word. `unk="drop"`
  removes it instead. (`train.tokenizer` strips it from the BPE training text so no merges are spent on it.)
- The other special tokens written out in a text (`<s>`, `</s>`, `<pad>`, `<mask>`; `<s>…</s>` is HTML's
  strikethrough): pretraining text reads them as text (`train.packing.tokenize_documents`), never as a sequence
  boundary, a padding or a mask of its own; labelled texts are read as a classifier reads them in use, as the
  special tokens, and a note says how many hold one.

Sampling (`load_mixture_with_stats`: a tokenizer's training text, a pretraining corpus) is keyed by the seed and by
each source's path as it is written: `../shared/data/x` and `/work/shared/data/x`, the same file, give other
samples with the same seed. To reproduce a recorded command, spell its paths as it does (run it from the
project's root with the data at ../shared/data); the shipped runs' commands rely on it, so it stays so.

Missing data: the scripts' default data paths point into ../shared/data (DATA_ROOT), relative to the current
folder; `missing_data` is the one error for a path that is not there, naming the option it was given to or is
the default of and, for the default data folder, how to point the command at data kept elsewhere.
`check_text_source` and `check_labeled_source` check an option's value before any work (the experiments check
every step's inputs with them before the first step runs).
"""
from __future__ import annotations

import contextlib
import io
import lzma
import math
import os
import random
import re
import sys
from pathlib import Path, PureWindowsPath

from roberta.text import detokenize
from roberta.tokenizer import SPECIAL_TOKENS

from .exit_codes import with_option
from . import runtime
from .paths import DATA_ROOT

HUB_PREFIX = "hub:"
TEXT_SUFFIXES = (".txt", ".tokens", ".raw")
LABELED_SUFFIXES = (".tsv", ".csv")
UNK = "<unk>"
# the special tokens other than <unk> (WikiText's unknown word), which a text may hold written out (HTML's <s>)
SPECIAL_TOKENS_WRITTEN = tuple(token for token in SPECIAL_TOKENS if token != UNK)
SENTIMENT_LABELS = {0: "negative", 1: "positive"}


class DataError(ValueError):
    """Bad input data; the message names the file (and the line when there is one)."""


# ----------------------------------------------------------------------------------------------------
# Detokenization
# ----------------------------------------------------------------------------------------------------
# detokenize: imported above from roberta/text.py (one definition for training and the app, linear in time on
# any input)
_WIKI_MARKERS = re.compile(r" @([-,.])@ ")
_SPACED_PUNCT = re.compile(r" [,.;:] | [,.]$")
_ATTACHED_PUNCT = re.compile(r"\w[,.;:](?: |$)")


def _looks_tokenized(lines: list[str]) -> bool:
    """WikiText/SST-style spaced punctuation (` , `) rather than natural text (`word, `)?"""
    sample = " \n".join(lines[:2000])
    if _WIKI_MARKERS.search(sample):
        return True
    spaced, attached = len(_SPACED_PUNCT.findall(sample)), len(_ATTACHED_PUNCT.findall(sample))
    return spaced > attached


def _clean_line(line: str, tokenized: bool, unk: str) -> str:
    line = line.strip()
    if tokenized:
        line = detokenize(line)
    if UNK in line:
        if unk == "drop":
            line = re.sub(r"\s*<unk>", "", line).strip()
        else:  # glue to the previous word: encodes as one <unk> id, without a lone space token before it
            line = re.sub(r"\s+<unk>", UNK, line)
    return line


# ----------------------------------------------------------------------------------------------------
# Documents
# ----------------------------------------------------------------------------------------------------
_TITLE = re.compile(r"^ ?= ([^=].*?) = ?$")  # ` = Title = `
_SECTION = re.compile(r"^ ?(?:= ){2,}(.*?)(?: =){2,} ?$")  # ` = = Section = = `


_SAID = set()  # notes and warnings already printed: once a process each


def say_once(line: str) -> None:
    """`line` on stderr, unless this process said it already (a file read by several steps of one run)."""
    if line not in _SAID:
        _SAID.add(line)
        print(line, file=sys.stderr, flush=True)


def note(message: str) -> None:
    """`note: message` on stderr, once a process (`say_once`): what a reader did to a file (a layout guessed, rows
    left out) that the user may not expect."""
    say_once(f"note: {message}")


def is_wikitext(lines) -> bool:
    """Whether text lines are in WikiText layout: any of them a ` = Title = ` line, which starts a document."""
    return any(_TITLE.match(line.rstrip("\r\n")) for line in lines)


def starts_document(line: str, wikitext: bool) -> bool:
    """Whether `line` starts a document of a text in WikiText layout (`wikitext`, `is_wikitext`: a ` = Title = `
    line) or not (one document a line: any line that is not blank)."""
    return bool(_TITLE.match(line.rstrip("\r\n"))) if wikitext else bool(line.strip())


def documents_from_lines(lines: list[str], unk: str = "token", source: str | None = None) -> list[str]:
    """Split text lines into documents (WikiText layout if it has ` = Title = ` lines, else one per line). With
    `source` (the file the lines come from), a note says when the guesses made from the lines change the text:
    read in WikiText layout, detokenized (ordinary French typography, a space before `:`, looks tokenized)."""
    if unk not in ("token", "drop"):
        raise ValueError(f"unk must be 'token' or 'drop', got {unk!r}")
    lines = [line.rstrip("\r\n") for line in lines]
    tokenized = _looks_tokenized([line for line in lines if line.strip()])
    wikitext = is_wikitext(lines)
    if source is not None and (tokenized or wikitext):
        how = [*(["in WikiText layout (a ` = Title = ` line starts a document)"] if wikitext else []),
               *(["detokenized (its punctuation looks spaced out, `word , word`)"] if tokenized else [])]
        note(f"{source}: read {' and '.join(how)}")
    if not wikitext:
        docs = (_clean_line(line, tokenized, unk) for line in lines)
        return [d for d in docs if d]
    documents, current = [], []
    for line in lines:
        if not line.strip():
            continue
        title = _TITLE.match(line)
        if title:
            if current:
                documents.append("\n".join(current))
            current = [_clean_line(title.group(1), tokenized, unk)]
            continue
        section = _SECTION.match(line)
        text = _clean_line(section.group(1) if section else line, tokenized, unk)
        if text:
            current.append(text)
    if current:
        documents.append("\n".join(current))
    return documents


class _XzFile(lzma.LZMAFile):
    """An xz file read as its bytes; damaged or cut-off data (a transfer that did not finish) is a DataError
    naming the file, not lzma's bare EOFError or LZMAError."""

    def __init__(self, path: Path):
        super().__init__(path, "rb")
        self.path = path

    def _named(self, read, *args):
        try:
            return read(*args)
        except (EOFError, lzma.LZMAError) as err:
            raise DataError(f"{self.path}: not a complete xz file (truncated or damaged? {err})") from None

    def read(self, size=-1):
        return self._named(super().read, size)

    def read1(self, size=-1):
        return self._named(super().read1, size)

    def readinto(self, buffer):
        return self._named(super().readinto, buffer)

    def readline(self, size=-1):
        return self._named(super().readline, size)

    def peek(self, size=-1):
        return self._named(super().peek, size)


def open_text(path, mode: str = "r", **kwargs):
    """`open` for reading text files that may be xz-compressed (`name.txt.xz`: read as the text inside; `mode`
    "rb": its bytes). Text is UTF-8 unless `encoding` says otherwise, a byte-order mark at its start dropped
    ("utf-8-sig": a WikiText file saved with one lost its first heading to it, a checks file its header)."""
    path = Path(path)
    if "b" not in mode:
        kwargs.setdefault("encoding", "utf-8-sig")
    if path.suffix == ".xz":
        if mode not in ("r", "rt", "rb"):
            raise ValueError(f"open_text reads files: mode {mode!r}")
        xz = _XzFile(path)
        return xz if mode == "rb" else io.TextIOWrapper(xz, **kwargs)
    return open(path, mode, **kwargs)


def plain_suffix(path: Path) -> str:
    """`.txt` for both corpus.txt and corpus.txt.xz."""
    return Path(path.stem).suffix.lower() if path.suffix == ".xz" else path.suffix.lower()


GZIP_MAGIC = b"\x1f\x8b"  # the first bytes of every gzip file (never UTF-8: 0x8b cannot start a character)


def undecodable(path: Path, err: UnicodeDecodeError) -> DataError:
    """A DataError naming the file and its first line that is not UTF-8 (found by reading it again, as bytes), or
    saying that it is gzip-compressed."""
    with open_text(path, "rb") as f:
        if f.read(2) == GZIP_MAGIC:
            return DataError(f"{path}: a gzip file, which is not read; decompress it (gunzip), or compress it with xz "
                             "instead (a .xz file is read as the text inside)")
        f.seek(0)
        for number, line in enumerate(f, 1):
            try:
                line.decode("utf-8")
            except UnicodeDecodeError as bad:
                return DataError(f"{path} line {number}: not UTF-8 text (byte {line[bad.start]:#04x} at column "
                                 f"{bad.start + 1}); save the file as UTF-8")
    return DataError(f"{path}: not UTF-8 text ({err.reason}); save the file as UTF-8")


def link_data() -> str:
    """The command that links a data folder kept elsewhere where the defaults look (the fix for a clone whose data
    lives elsewhere): a symbolic link, or on Windows a junction (cmd's mklink /J, which needs no administrator)."""
    if runtime.WINDOWS:
        return rf"cmd /c mklink /J {PureWindowsPath(DATA_ROOT.parent)} C:\path\to\shared"
    return f"ln -s /path/to/shared {DATA_ROOT.parent}"


def missing_data(path, option: str | None = None, default: bool = False,
                 what: str = "no such file or folder") -> FileNotFoundError:
    """The error for a data path that is not there, in one place: `option` the option it was given to, `default`
    whether it is that option's default (not typed by the user). A default is relative to the current folder, so
    a command run elsewhere, or from a clone whose data is not at ../shared/data, misses it: the message says to
    pass the option or to link the data folder there. A path under ../shared/data when that folder is not there at
    all (a script that does not know the option's name) says the same."""
    path = os.fspath(path)
    under_root = Path(path).parts[:len(DATA_ROOT.parts)] == DATA_ROOT.parts
    where = "" if os.path.isabs(path) else f", relative to the current folder {Path.cwd()}"
    if option and default:
        fix = f"pass {option}" + (f", or link the data folder there: {link_data()}" if under_root else "")
        return FileNotFoundError(f"{option}'s default {path}: {what}{where}: {fix}")
    lead = f"{option} {path}" if option else path
    if under_root and not DATA_ROOT.is_dir():
        return FileNotFoundError(f"{lead}: {what}{where} (the default data folder {DATA_ROOT} is not there: pass "
                                 f"the path of your copy, or link the data folder there: {link_data()})")
    if _looks_like_hub_name(path):
        return FileNotFoundError(f"{lead}: {what}; a Hub dataset is written {HUB_PREFIX}{path}")
    return FileNotFoundError(f"{lead}: {what}")


FILE_SUFFIXES = {*TEXT_SUFFIXES, *LABELED_SUFFIXES, ".xz", ".gz", ".json", ".jsonl", ".parquet"}


def _looks_like_hub_name(path: str) -> bool:
    """Whether a missing path reads as a Hub dataset's USER/NAME (`missing_data` then says how to write one): one
    slash, no file suffix (data/dev.tsv is a file), and no local folder of that first name (runs/x is a path)."""
    if os.path.isabs(path) or not re.fullmatch(r"[\w.-]+/[\w.-]+", path):
        return False
    first, last = path.split("/")
    return Path(last).suffix.lower() not in FILE_SUFFIXES and not Path(first).is_dir()


def _text_files(path: Path) -> list[Path]:
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file() and plain_suffix(p) in TEXT_SUFFIXES)
        if not files:
            raise DataError(f"{path}: folder holds no {'/'.join(TEXT_SUFFIXES)} files (or .xz-compressed ones)")
        return files
    if not path.exists():
        raise missing_data(path)
    return [path]


def parse_hub_spec(spec: str) -> tuple[str, str | None, str, str | None]:
    """`hub:NAME[:CONFIG[:SPLIT[:COLUMN]]]` -> (name, config or None, split, column or None)."""
    parts = spec[len(HUB_PREFIX):].split(":")
    if not parts[0]:
        raise ValueError(f"{spec!r}: expected hub:NAME[:CONFIG[:SPLIT[:COLUMN]]]")
    parts += [""] * (4 - len(parts))
    name, config, split, column = parts[:4]
    return name, (None if config in ("", "default") else config), split or "train", column or None


@contextlib.contextmanager
def _datasets_offline(offline: bool):
    """`datasets` and `huggingface_hub` in offline mode (the local cache only, no requests) while inside, when
    `offline`: they read HF_HUB_OFFLINE once, at import."""
    if not offline:
        yield
        return
    import datasets.config
    from huggingface_hub import constants

    saved = datasets.config.HF_HUB_OFFLINE, constants.HF_HUB_OFFLINE
    datasets.config.HF_HUB_OFFLINE = constants.HF_HUB_OFFLINE = True
    try:
        yield
    finally:
        datasets.config.HF_HUB_OFFLINE, constants.HF_HUB_OFFLINE = saved


def load_hub(spec: str):
    """(the dataset split a `hub:NAME[:CONFIG[:SPLIT[:COLUMN]]]` spec names, its COLUMN or None), loaded with
    `datasets.load_dataset`; from the local cache alone when the Hub does not answer a short probe."""
    import datasets  # imported lazily: slow to import and only needed online

    from roberta.hub import HUB_PROBE_TIMEOUT_S, hub_offline, hub_reachable

    name, config, split, column = parse_hub_spec(spec)
    # without a network `datasets` retries for ~20 s before it reads its cache: probe the Hub first (3 s at most)
    unreachable = not hub_offline() and not hub_reachable()
    try:
        with _datasets_offline(unreachable):
            return datasets.load_dataset(name, config, split=split), column
    except Exception as err:
        why = (f"the Hub could not be reached within {HUB_PROBE_TIMEOUT_S:g} s and the dataset is not in the local "
               "cache" if unreachable else "offline?")
        raise OSError(f"could not load {spec!r} from the Hugging Face Hub ({why}; use a local path): {err}") from err


def read_documents(source: str, unk: str = "token") -> list[str]:
    """One string per document (paragraphs joined by "\\n") from a local path or a `hub:` spec.

    A labelled file (.tsv or .csv, e.g. IMDB's train.tsv) gives its texts, one document each, without the
    labels and, in IMDB's layout (a `text` column), without the IMDB evaluation sample (`labeled_documents`).
    """
    # imported here, not at the top: train.imdb_sample imports this module
    from .imdb_sample import without_sample_copies

    source = os.fspath(source)
    if source.startswith(HUB_PREFIX):
        ds, column = load_hub(source)
        column = column or ("text" if "text" in ds.column_names else ds.column_names[0])
        documents = documents_from_lines(ds[column], unk=unk)
    elif Path(source).is_file() and plain_suffix(Path(source)) in LABELED_SUFFIXES:
        documents = labeled_documents(source, unk=unk)
    else:
        documents = []
        for file in _text_files(Path(source)):
            try:
                with open_text(file) as f:
                    lines = f.readlines()
            except UnicodeDecodeError as err:
                raise undecodable(file, err) from None
            documents += documents_from_lines(without_sample_copies(file, lines), unk=unk, source=str(file))
    if not documents:
        raise DataError(f"{source}: no documents found (the file is empty or blank)")
    return documents


# ----------------------------------------------------------------------------------------------------
# Mixtures
# ----------------------------------------------------------------------------------------------------
def _same_source_key(source: str) -> str:
    """What two spellings of one source share: a hub: spec as written, a local path resolved (`./a.txt`, `a.txt`
    and a link to it are one file)."""
    return source if source.startswith(HUB_PREFIX) else os.path.realpath(source)


def corpus_reads(corpus: str, path: str) -> bool:
    """Whether the --corpus mixture `corpus` reads the file `path`: as one of its sources, or as a file of a folder
    source (every text file there is read), a file and its .xz copy being one text; False for a spec that does not
    parse (its own check says why)."""
    def key(source: str) -> str:
        return _same_source_key(source).removesuffix(".xz")

    read = set()
    try:
        for source, _ in parse_mixture(corpus):
            read.add(key(source))
            if not source.startswith(HUB_PREFIX) and Path(source).is_dir():
                read.update(key(str(file)) for file in _text_files(Path(source)))
    except (ValueError, OSError):
        return False
    return key(path) in read


def parse_mixture(spec: str) -> list[tuple[str, float]]:
    """`"a=0.5,b=0.5"` -> [("a", 0.5), ("b", 0.5)]; a source without `=weight` weighs 1.0. A spec or item that is
    an existing path as it is written is that one source, whatever `=` or `,` its name holds (`runs/lr=2e-4/x.txt`).
    A source named twice (`a.txt=1,./a.txt=2`) is refused: it would be read twice and silently weigh the sum."""
    mixture, named = [], {}
    for item in ([spec.strip()] if os.path.exists(spec.strip()) else (s.strip() for s in spec.split(","))):
        if not item:
            continue
        source, weight = item, 1.0
        if "=" in item and not os.path.exists(item):
            head, tail = item.rsplit("=", 1)
            try:
                source, weight = head.strip(), float(tail)
            except ValueError:
                raise ValueError(f"mixture {spec!r}: weight {tail!r} of {head!r} is not a number") from None
        if not weight > 0 or math.isinf(weight):
            raise ValueError(f"mixture {spec!r}: weight of {source!r} must be a positive number, got {weight}")
        key = _same_source_key(source)
        if key in named:
            spellings = "" if named[key] == source else f" (as {named[key]!r} and {source!r})"
            raise ValueError(f"mixture {spec!r}: {source!r} is named twice{spellings}: give it once, with the "
                             "weight you want for it")
        named[key] = source
        mixture.append((source, weight))
    if not mixture:
        raise ValueError(f"empty mixture spec {spec!r}")
    return mixture


def _named(err: Exception, option: str) -> Exception:
    """`err` (an OSError or a DataError whose message starts with the path) with `option` in front
    (`train.exit_codes.with_option`; a script names the option of a file it reads with `train.runtime.naming`)."""
    return with_option(err, option)


def check_text_source(spec: str, option: str, default: bool = False) -> None:
    """The value of a text option (a corpus mixture or path, held-out text), checked before any work: each local
    source is there, and a folder holds text files (`read_documents`' own check; a .tsv/.csv source, its header).
    One error (`missing_data`, or a DataError) that names `option`; hub: sources are left to their loader."""
    # imported here, not at the top: train.tables imports this module
    from .tables import pick_column, rows_from_file

    spec = os.fspath(spec)
    try:
        mixture = parse_mixture(spec)
    except ValueError as err:
        raise ValueError(f"{option}: {err}") from None
    for source, _ in mixture:
        if source.startswith(HUB_PREFIX):
            continue
        path = Path(source)
        if not path.exists():
            raise missing_data(source, option, default)
        try:
            if path.is_dir():
                _text_files(path)
            elif plain_suffix(path) in LABELED_SUFFIXES:  # its texts are the documents (`labeled_documents`)
                columns, _ = rows_from_file(path, header_only=True)
                pick_column(columns, None, ["sentence", "text"], source, "text", option=False)
        except (OSError, DataError) as err:
            raise _named(err, option) from None


def check_labeled_source(source: str, option: str, default: bool = False, text_column: str | None = None,
                         label_column: str | None = None, labels: bool = True) -> None:
    """The value of a labelled-data option, checked before any work: a TSV/CSV file (not a folder, not missing)
    whose header holds the text and label columns `train.tables.read_labeled` will look for (only its first line is
    read; the text column alone without `labels`, for `train.tables.read_texts`). One error that names `option`; a
    hub: spec is left to its loader."""
    # imported here, not at the top: train.tables imports this module
    from .tables import expected_header, pick_column, rows_from_file

    source = os.fspath(source)
    if source.startswith(HUB_PREFIX):
        return
    if not os.path.exists(source):
        raise missing_data(source, option, default, what="no such file")
    try:
        columns, _ = rows_from_file(Path(source), header_only=True,
                                    expected=expected_header(text_column, label_column))
        pick_column(columns, text_column, ["sentence", "text"], source, "text")
        if labels:
            pick_column(columns, label_column, ["label"], source, "label")
    except (OSError, DataError) as err:
        raise _named(err, option) from None


def load_mixture_with_stats(spec: str, char_budget: int | None = None, seed: int = 0, repeat: bool = True,
                            cut: bool = False):
    """Documents sampled to the mixture's proportions by characters, and per-source statistics.

    Each source's documents are shuffled (seeded) and taken in turn until its share of the budget is
    reached; a source smaller than its share is repeated (its stats say so). Without a budget, the budget is
    the largest one no source has to repeat for, and so it is with `repeat=False` when the budget is larger (a
    tokenizer: repeated text would pass any --min-frequency). Deterministic for a seed and the sources' paths as
    written (each source's generator is seeded with its spelling: see the module's doc, Sampling).

    Whole documents are taken, so a source's last one goes past its share (the total by up to a document per
    source: `train.tokenizer --max-chars`, whose shipped tokenizer was sampled so, is "about" its budget). With
    `cut` and a budget, the budget is a cap: each source's last document is cut at its share (rounded down), so
    the total is at most `char_budget` (`train.pretrain --corpus-chars`).
    """
    mixture = parse_mixture(spec)
    total_weight = sum(w for _, w in mixture)
    sources = [(src, w / total_weight, read_documents(src)) for src, w in mixture]
    sizes = [sum(map(len, docs)) for _, _, docs in sources]
    largest = min(size / share for (_, share, _), size in zip(sources, sizes))  # no source repeats up to it
    capped = cut and char_budget is not None
    no_repeats = char_budget is None or (not repeat and char_budget >= largest)
    if no_repeats:
        char_budget = largest
    chosen, stats = [], []
    for i, ((src, share, docs), size) in enumerate(zip(sources, sizes)):
        rng = random.Random(f"{seed}:{i}:{src}")
        target, taken, passes, picked = share * char_budget, 0, 0, []
        if no_repeats:  # the source that sets the budget takes all of itself, not a 2nd pass for a rounding error
            target = min(target, size)
        if capped:  # whole characters, the shares' sum at most the budget
            target = math.floor(target)
        while taken < target:
            order = list(range(len(docs)))
            rng.shuffle(order)
            passes += 1
            for j in order:
                if taken >= target:
                    break
                document = docs[j][:target - taken] if capped else docs[j]
                picked.append(document)
                taken += len(document)
        chosen += picked
        stats.append({"source": src, "share": share, "documents": len(picked), "chars": taken,
                      "available_chars": size, "passes": passes})
    random.Random(seed).shuffle(chosen)
    return chosen, stats


# ----------------------------------------------------------------------------------------------------
# Labelled files as pretraining text
# ----------------------------------------------------------------------------------------------------
def labeled_documents(path: str, unk: str = "token") -> list[str]:
    """A labelled file's texts as pretraining documents: no labels, and, for a file the IMDB evaluation can
    sample (IMDB's layout, a `text` column), without the rows of that evaluation sample.

    Left out of such a file: the texts of the rows `train.imdb_sample.imdb_sample(path)` picks (1,000 rows, seed 0),
    wherever they occur in the file (IMDB repeats a few reviews): the reviews on which `train.evaluate --imdb` and
    fine-tuning score IMDB. So IMDB's train.tsv can be pretraining text (7M tokens the unlabelled reviews do not
    hold) while that figure stays on reviews the encoder never read; their copies too, near-copies included
    (`SampleCopies`). A file without a `text` column (SST-2's sentence<TAB>label) is never the one `imdb_sample`
    reads, so every row of it is kept: a sample of 1,000 rows would take the whole of a small file (all 872 rows of
    SST-2's dev.tsv) and leave no text to train a tokenizer on.
    """
    # imported here, not at the top: train.imdb_sample and train.tables import this module
    from .imdb_sample import IMDB_TEXT_COLUMN, SampleCopies, evaluation_sample
    from .tables import read_texts, rows_from_file

    texts = read_texts(path, column_options=False)
    columns, _ = rows_from_file(Path(path), header_only=True)
    if IMDB_TEXT_COLUMN not in columns:
        return documents_from_lines(texts, unk=unk, source=path)
    sample = evaluation_sample(len(texts))
    copies = SampleCopies.of(texts[i] for i in sample)
    kept = [t for t in texts if t not in copies]
    if not kept:  # the file is not empty: say where its rows went
        raise DataError(f"{path}: the IMDB evaluation sample took every one of its {len(texts):,} rows (its "
                        f"{len(sample):,} reviews are held out of pretraining, so that the IMDB figure is on reviews "
                        "the encoder never read): nothing is left to pretrain on; give more than 1,000 rows")
    return documents_from_lines(kept, unk=unk, source=path)
