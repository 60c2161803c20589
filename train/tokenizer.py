"""Train the byte-level BPE tokenizer on a corpus or a mixture; writes OUT/tokenizer.json.

    python -m train.tokenizer --out runs/tokenizer              # the shipped recipe (defaults below)
    python -m train.tokenizer --corpus ../shared/data/wikitext-2/wiki.train.tokens --vocab-size 8192 --out tok

Defaults = the shipped recipe: a 32,768-token vocabulary learnt from about 20M characters of the pretraining
mixture (Wikipedia, WikiText-2 train, IMDB unlabelled reviews, so movie-review words are in the vocabulary
the classifier fine-tunes with). WikiText's `<unk>` is stripped from the BPE training text (it is a special
token already; see `train.data`).

Why 32k tokens and 20M characters (tokens per word against vocabulary size, measured): docs/training-notes.md.
"""
from __future__ import annotations

import argparse
import os
import time

import roberta
from roberta import train_tokenizer
from roberta.files import temporary_prefix, write_atomic
from roberta.tokenizer import SPECIAL_TOKENS, vocab_digest

from .arguments import seed_value
from .data import UNK, check_text_source, load_mixture_with_stats, read_documents
from . import paths
from .paths import COMMAND_FILE, other_entries
from .runtime import (EXIT_OK, UserError, check_writable_folder, exit_code, naming, output_folder, progress_bars,
                      report_user_error)

DEFAULT_CORPUS = f"{paths.WIKIPEDIA}=0.5,{paths.WIKITEXT_TRAIN}=0.25,{paths.IMDB_UNSUP}=0.25"
DEFAULT_EVAL = paths.WIKITEXT_VALID
DEFAULT_VOCAB_SIZE = 32768
DEFAULT_MIN_FREQUENCY = 2
DEFAULT_MAX_CHARS = 20_000_000
MIN_VOCAB_SIZE = 256 + len(SPECIAL_TOKENS)  # the byte alphabet and the special tokens
# 2**20 tokens, 20 times roberta-base's 50,265: far more than any corpus here holds merges for (a --vocab-size of
# 1e10 makes the Rust trainer allocate 567 GB and abort the process, after the corpus is read)
MAX_VOCAB_SIZE = 2**20


def load_run_tokenizer(tokenizer: str | None, init: str | None, named: bool = False):
    """The tokenizer a training run uses: --tokenizer, else the --init model's. Given both, --tokenizer must be
    the --init model's vocabulary (a UserError otherwise): the same size is not enough, another tokenizer of
    that size gives its ids to other tokens and the model reads nonsense without a word. `named`: an error
    loading them starts with the option that gave it (--tokenizer, or --init, whose folder is checked for a
    config first: a file given as --init was "not a tokenizer")."""
    if not named:
        return _load_run_tokenizer(tokenizer, init)
    if init:
        with naming("--init"):
            roberta.load_config(init)
    with naming("--tokenizer" if tokenizer else "--init"):
        return _load_run_tokenizer(tokenizer, init)


def _load_run_tokenizer(tokenizer: str | None, init: str | None):
    chosen = roberta.load_tokenizer(tokenizer or init)
    if tokenizer and init:
        try:
            own = roberta.load_tokenizer(init)
        except roberta.ModelNotFoundError:
            return chosen  # a model folder without a tokenizer: its size is checked against the model's
        if vocab_digest(own) != vocab_digest(chosen):
            raise UserError(f"--tokenizer {tokenizer} is not the vocabulary of --init {init} "
                            f"({_how_they_differ(own, chosen)}): leave --tokenizer out to use the --init model's")
    return chosen


def check_fits_init(tokenizer, vocab_size: int, tokenizer_option: str | None, init: str) -> None:
    """A UserError unless the run's tokenizer (--tokenizer, else --init's own tokenizer.json) has exactly as many
    tokens as the --init model has embedding rows (training reaches every row: no padded rows, unlike loading,
    `roberta.tokenizer.check_fits_model`); it names the file and what to do ("the tokenizer has 300 tokens, the
    model 32768" named neither)."""
    tokens = tokenizer.get_vocab_size()
    if tokens != vocab_size:
        source = f"--tokenizer {tokenizer_option}" if tokenizer_option else f"--init {init}'s tokenizer.json"
        raise UserError(f"{source} has {tokens:,} tokens but the --init model {vocab_size:,} embedding rows: they "
                        "do not belong together; use the tokenizer the model was trained with")


def _how_they_differ(own, chosen) -> str:
    """How the --tokenizer `chosen` differs from the --init model's `own`: its tokens that have another id or none
    there, and the tokens it has beyond them ("0 of its 32,768 tokens have another id" said nothing of the 200 a
    --tokenizer had added)."""
    ours, theirs = own.get_vocab(with_added_tokens=True), chosen.get_vocab(with_added_tokens=True)
    differ = sum(theirs.get(token) != token_id for token, token_id in ours.items())
    more = len(theirs.keys() - ours.keys())
    said = (f"{differ:,} of its {len(ours):,} tokens have another id or none" if differ else
            f"its {len(ours):,} tokens have the same ids")
    return said + (f"{'; and' if differ else ', but'} --tokenizer has {more:,} token{'s' * (more > 1)} more"
                   if more else "")


def tokens_per_word(tokenizer, documents: list[str]) -> float:
    """Mean number of BPE tokens per whitespace-separated word (lower is a more efficient vocabulary)."""
    words = sum(len(d.replace(UNK, " " + UNK).split()) for d in documents)  # "of<unk>" is two words
    tokens = sum(len(e.ids) for e in tokenizer.encode_batch(documents, add_special_tokens=False))
    return tokens / max(words, 1)


def check_vocab_size(vocab_size: int) -> None:
    if vocab_size < MIN_VOCAB_SIZE:  # smaller: the trainer silently keeps the alphabet and specials anyway
        raise ValueError(f"--vocab-size must be at least {MIN_VOCAB_SIZE} (the 256 bytes and the "
                         f"{len(SPECIAL_TOKENS)} special tokens), got {vocab_size}")
    if vocab_size > MAX_VOCAB_SIZE:
        raise ValueError(f"--vocab-size must be at most {MAX_VOCAB_SIZE:,} (roberta-base has 50,265), got "
                         f"{vocab_size:,}")


def check_sizes(vocab_size: int, min_frequency: int, max_chars: int | None) -> None:
    """The numbers of a tokenizer, checked before any text is read (`max_chars` None: all)."""
    check_vocab_size(vocab_size)
    if min_frequency < 0 or (max_chars is not None and max_chars < 1):
        raise ValueError(f"--min-frequency must be at least 0 and --max-chars 0 (all) or at least 1, got "
                         f"{min_frequency} and {max_chars}")


def build_tokenizer(corpus: str, vocab_size: int = DEFAULT_VOCAB_SIZE, min_frequency: int = DEFAULT_MIN_FREQUENCY,
                    max_chars: int | None = DEFAULT_MAX_CHARS, seed: int = 0, show_progress: bool = True):
    """(tokenizer, mixture stats): BPE trained on about `max_chars` characters of the mixture `corpus` (whole
    documents: up to one document more per source; fewer when that would repeat a source)."""
    check_sizes(vocab_size, min_frequency, max_chars)
    documents, stats = load_mixture_with_stats(corpus, char_budget=max_chars, seed=seed, repeat=False)
    texts = (d.replace(UNK, "") for d in documents)
    return train_tokenizer(texts, vocab_size=vocab_size, min_frequency=min_frequency,
                           show_progress=show_progress), stats


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="python -m train.tokenizer", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--corpus", default=DEFAULT_CORPUS,
                   help="a source or mixture 'PATH=weight,...' (paths, folders or hub:NAME:CONFIG:SPLIT); "
                        f"default: {DEFAULT_CORPUS}")
    p.add_argument("--vocab-size", type=int, default=DEFAULT_VOCAB_SIZE, help="default: %(default)s")
    p.add_argument("--min-frequency", type=int, default=DEFAULT_MIN_FREQUENCY,
                   help="a merge must occur this often; default: %(default)s")
    p.add_argument("--max-chars", type=int, default=DEFAULT_MAX_CHARS,
                   help="train on about this many characters of the mixture: whole documents, each source's last "
                        "one past its share, so up to a document more per source (0: all; a corpus is never "
                        "repeated to reach it, as a repeated word would pass --min-frequency); default: %(default)s")
    p.add_argument("--seed", type=seed_value, default=0, help="sampling seed of the mixture; default: %(default)s")
    p.add_argument("--eval-text", default=DEFAULT_EVAL,
                   help="report tokens per word on this corpus ('' to skip; the default is skipped if it is "
                        "absent); default: %(default)s")
    p.add_argument("--out", required=True, help="output folder, new or empty; writes OUT/tokenizer.json")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    return p.parse_args(argv)


def own_entry(name: str) -> bool:
    """What this script, or an experiment running it, leaves in its --out besides tokenizer.json: a temporary
    file a stopped write left (`write_atomic`), the command an experiment records beside a script step's output
    (`train.experiment`'s `.STEP.command`)."""
    command_start, command_end = COMMAND_FILE.split("{}")
    return name.startswith(temporary_prefix("tokenizer.json")) or (
        name.startswith(command_start) and name.endswith(command_end))


def main(argv=None) -> int:
    args = parse_args(argv)
    start = time.time()
    try:  # the numbers, --out, --corpus and --eval-text are checked before any text is read
        check_sizes(args.vocab_size, args.min_frequency, args.max_chars or None)  # ("reading ... (max -1 chars)")
        out = output_folder(args.out)
        if out.suffix == ".json":  # else a folder named tokenizer.json would hold tokenizer.json
            raise ValueError(f"--out {out}: --out is the folder the tokenizer.json goes in, e.g. --out "
                             f"{out.parent / 'tokenizer'}")
        if held := sorted(p.name for p in out.glob("*") if p.name == "config.json" or p.suffix == ".safetensors"):
            raise ValueError(f"{out} holds a model ({', '.join(held)}): its tokenizer.json is that model's own; "
                             "choose another --out")
        if (out / "tokenizer.json").exists():  # runs that point at it would resume with another vocabulary
            raise ValueError(f"{out / 'tokenizer.json'} exists: runs that use it would read another vocabulary; "
                             "choose another --out (or delete it first)")
        # never among another folder's files, where every other script refuses to write too
        if held := other_entries(out, [p.name for p in out.glob(".*") if own_entry(p.name)]):
            raise ValueError(f"--out {out} is not empty ({held}): the tokenizer is written into a new or empty "
                             "folder; choose another --out")
        check_writable_folder(out)  # before training: else the trained tokenizer is lost
        # a missing source named with its option (the default's ../shared/data, seen from another folder, too)
        check_text_source(args.corpus, "--corpus", default=args.corpus == DEFAULT_CORPUS)
        # the default is skipped when absent; a path of the user's must exist (a misspelling is not skipped silently)
        given = args.eval_text and (args.eval_text != DEFAULT_EVAL or os.path.exists(args.eval_text))
        if given:
            check_text_source(args.eval_text, "--eval-text")
        with naming("--eval-text"):
            eval_documents = read_documents(args.eval_text) if given else None
        # about: whole documents are taken (the shipped tokenizer's sample; `train.data.load_mixture_with_stats`)
        amount = f"up to about {args.max_chars:,} chars, in whole documents" if args.max_chars else "all of it"
        print(f"reading {args.corpus} ({amount})", flush=True)
        with naming("--corpus"):
            tokenizer, stats = build_tokenizer(args.corpus, args.vocab_size, args.min_frequency, args.max_chars or None,
                                               args.seed, show_progress=progress_bars(args.quiet))
    except (OSError, ValueError) as err:
        return report_user_error(err)
    for s in stats:
        print(f"  {s['source']}: {s['chars']:,} chars, {s['documents']:,} documents, share {s['share']:.2f}"
              + (f" (repeated {s['passes']}x)" if s["passes"] > 1 else ""))
    try:
        out.mkdir(parents=True, exist_ok=True)
        write_atomic(out / "tokenizer.json", tokenizer.to_str(pretty=True))  # it marks a recipe's step done
    except OSError as err:  # a full disk, or a folder that became unwritable while the tokenizer trained
        return report_user_error(OSError(f"could not write {out / 'tokenizer.json'} ({err.strerror or err}): the "
                                         "tokenizer trained is lost; free some space or choose another --out, and "
                                         "run the command again"))
    print(f"vocabulary {tokenizer.get_vocab_size():,} tokens -> {out / 'tokenizer.json'} "
          f"({time.time() - start:.0f} s)")
    if eval_documents:
        tpw = tokens_per_word(tokenizer, eval_documents)
        print(f"tokens per word on {args.eval_text}: {tpw:.3f}")
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(exit_code(main))
