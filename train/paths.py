"""Checks of the paths a script writes, made before any work: a file where a folder should be, a folder where a
file should be. No torch here: `train.gpu_transfer` uses them too (`train.runtime` re-exports the checks). How a
script writes a file is `roberta.files.write_atomic` (not imported here: importing roberta loads torch)."""
from __future__ import annotations

import json
from pathlib import Path

# Where the scripts' default data paths point, relative to the current folder (the project's root, with the
# data beside it); every default below is written from it, so that train.data's hint for missing data
# (`missing_data`) knows them all. Written with "/" on every system: recorded commands carry them.
DATA_ROOT = Path("../shared/data")


def shared_data(name: str) -> str:
    """A file or folder under DATA_ROOT, as the defaults write it ("../shared/data/sst2/dev.tsv")."""
    return f"{DATA_ROOT.as_posix()}/{name}"


WIKIPEDIA = shared_data("wikipedia-en")
WIKITEXT_TRAIN = shared_data("wikitext-2/wiki.train.tokens")
WIKITEXT_VALID = shared_data("wikitext-2/wiki.valid.tokens")
IMDB_UNSUP = shared_data("imdb/unsup.txt")
IMDB_TRAIN = shared_data("imdb/train.tsv")
SST2_TRAIN = shared_data("sst2/train.tsv")
SST2_DEV = shared_data("sst2/dev.tsv")


def output_folder(path, option: str = "--out") -> Path:
    """`path` as a Path, checked before any work is done: an existing file there (not a folder), or a file where
    one of its folders should be, is a user error, raised as NotADirectoryError so that every script's
    `except OSError` reports it in one line."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise NotADirectoryError(f"{option} {path} is a file, not a folder")
    _check_parents(path, option)
    return path


def output_file(path, example: str, option: str = "--out", suffixes: tuple[str, ...] = ()) -> Path:
    """`path` as a Path for a file to write, checked before any work is done: a folder there, or a file where one
    of its folders should be, is a user error (an OSError naming the option; `example`: a file name to suggest),
    and so is a name without one of `suffixes` (default: `example`'s), or an existing .json file that is not JSON
    (a ValueError)."""
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"{option} {path} is a folder: give a file name, e.g. {path / example}")
    _check_parents(path, option)
    suffix = Path(example).suffix
    if path.suffix.lower() not in (suffixes or (suffix,)):  # `--out README.md` became a probe's JSON
        raise ValueError(f"{option} {path}: give a {' or '.join(suffixes or (suffix,))} file name, e.g. "
                         f"{path.with_suffix(suffix).name}")
    if suffix == ".json" and path.is_file():  # a JSON document is overwritten, any other file is kept
        try:
            json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError):
            raise ValueError(f"{option} {path} exists and is not JSON: choose another file name") from None
    return path


def write_output_json(path, data) -> Path:
    """A command's --out JSON (checked by `output_file` before the work): its folder made, `data` written in one
    step."""
    from roberta.files import write_atomic  # here: importing roberta loads torch

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    return write_atomic(path, json.dumps(data, indent=1) + "\n")


# in a script step's folder: the command that made it (`train.experiment`), `.STEP.command`
COMMAND_FILE = ".{}.command"


# The prefix of the folder `runtime.writable_folder` makes and removes to see whether it may write somewhere: one
# process of a torchrun job probing --out while another checks that --out is empty must not see the probe there
WRITE_PROBE_PREFIX = ".write-probe-"


def other_entries(folder, own=()) -> str:
    """What `folder` holds besides the names in `own` (and a passing write probe, `WRITE_PROBE_PREFIX`), as an error
    message shows it ("README.md, config.json", at most three names and a count); "" when nothing else (or no
    folder) is there. A script that writes into a folder refuses one that holds anything but its own files (`--out
    .` in a project held its README.md)."""
    folder = Path(folder)
    others = sorted(p.name for p in folder.iterdir() if p.name not in own and
                    not p.name.startswith(WRITE_PROBE_PREFIX)) if folder.is_dir() else []
    return ", ".join(others[:3]) + (f" and {len(others) - 3} more" if len(others) > 3 else "")


def _check_parents(path: Path, option: str) -> None:
    """A NotADirectoryError when the nearest existing folder above `path` is a file (`mkdir` would fail later)."""
    parent = next((p for p in path.parents if p.exists()), None)
    if parent is not None and not parent.is_dir():
        raise NotADirectoryError(f"{option} {path}: {parent} is a file, not a folder")
