"""Move a training run to a GPU machine and back, within a file-transfer budget.

    python -m train.gpu_transfer bundle --out gpu-upload [--init assets/mini-roberta-mlm]   # here
    python -m train.gpu_transfer pack runs/gpu --ship --out $OUT                            # there
    python -m train.gpu_transfer unpack RETURNED_FOLDER --out runs/gpu                      # here

`bundle` builds the folder that travels to the GPU machine: the corpora of ../shared/data compressed with
xz in the same layout (data/wikipedia-en/wiki_00.txt.xz, ...; the training scripts read `.xz` files as
text), the tokenizer to reuse (tokenizer.json), and optionally a model folder to continue from (`--init`, float16
weights). It prints every file's size and refuses to exceed `--max-mib` (default 60: the machine takes 64 MiB with the
code). `pack` turns run folders (float16 exports) into at most 8 parts of at most 15 MiB of one `runs.tar.xz`
(checkpoints left out); with `--ship` it first exports what finished in a `train.recipe --gpu` folder
(`train.recipe.ship`), so a recipe stopped by `timeout` before the machine's 10-minute limit still returns its
pretrained model and finished fine-tunings (or, if the deadline cut pretraining, its last checkpoint as a partial
model, PARTIAL_MLM). `unpack` joins the parts and rebuilds the folders.
"""
from __future__ import annotations

import argparse
import json
import lzma
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

from .exit_codes import EXIT_OK, USER_ERRORS, exit_code, report_user_error
from .paths import DATA_ROOT, output_folder

# What the GPU recipe reads: the pretraining mixture's sources, the held-out text, SST-2 and IMDB.
DATA_FILES = ["wikipedia-en", "wikitext-2/wiki.train.tokens", "wikitext-2/wiki.valid.tokens",
              "imdb/unsup.txt", "imdb/train.tsv", "sst2/train.tsv", "sst2/dev.tsv"]
TOKENIZER = "assets/mini-roberta-mlm/tokenizer.json"
MIB = 1 << 20
BUNDLE_NAME = "bundle.json"  # written last, by a bundle that finished within --max-mib: its files and sizes
PART_MIB = 15
SHIPPED_FROM = "shipped-from.txt"  # in a shipped folder: which fine-tuning run its classifier is
PARTIAL_MLM = "mini-roberta-mlm-partial"  # in a shipped folder: the last checkpoint of a pretraining cut short
ARCHIVE = "runs.tar.xz"


def compress(src: Path, dst: Path, max_bytes: int | None = None) -> Path:
    """xz of `src`, or of its first lines that fit in `max_bytes` (a head cut after a newline). Written aside and
    renamed when whole: a failed or interrupted run never leaves half a file that a later bundle would keep."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    partial = dst.with_name(dst.name + ".partial")
    try:
        _compress(src, partial, max_bytes)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    os.replace(partial, dst)
    return dst


def _compress(src: Path, dst: Path, max_bytes: int | None) -> None:
    with open(src, "rb") as f, lzma.open(dst, "wb", preset=6) as out:
        if max_bytes is None:
            shutil.copyfileobj(f, out, length=4 * MIB)
        else:
            head = f.read(max_bytes)
            if len(head) == max_bytes:  # cut after the last whole line
                if (end := head.rfind(b"\n")) < 0:
                    raise ValueError(f"--head {src}: its first line is longer than {max_bytes:,} bytes")
                head = head[:end + 1]
            out.write(head)


def parse_heads(specs) -> dict[str, int]:
    """`NAME=BYTES` -> {NAME: BYTES}: which files travel as their first lines only (e.g. imdb/unsup.txt=17e6)."""
    heads = {}
    for spec in specs or []:
        name, sep, size = spec.rpartition("=")
        try:
            heads[name] = int(float(size))
        except ValueError:
            raise ValueError(f"--head {spec}: give FILE=BYTES, e.g. imdb/unsup.txt=17e6") from None
        if not sep or not name or heads[name] <= 0:
            raise ValueError(f"--head {spec}: give FILE=BYTES with a positive size, e.g. imdb/unsup.txt=17e6")
    return heads


def bundle(out, data_root=DATA_ROOT, files=DATA_FILES, tokenizer=TOKENIZER, init=None,
           max_mib: float = 60.0, heads: dict[str, int] | None = None) -> list[Path]:
    """Write the upload folder; returns the files written. Already compressed files are kept, but for the
    files named in `heads` ({NAME: BYTES}, NAME as in `files`), which travel as their first lines only."""
    out, data_root, heads = output_folder(out), Path(data_root), dict(heads or {})
    if not max_mib > 0:  # nan too; before the bundle is built
        raise ValueError(f"--max-mib must be a positive number of MiB, got {max_mib:g}")
    check_heads(heads, files, data_root)
    if not Path(tokenizer).is_file():
        raise FileNotFoundError(f"--tokenizer {tokenizer}: no such file (a tokenizer.json)")
    out.mkdir(parents=True, exist_ok=True)
    (out / BUNDLE_NAME).unlink(missing_ok=True)  # the folder is a finished bundle again only when this one is
    written = [Path(shutil.copy2(tokenizer, out / "tokenizer.json"))]
    for name in files:
        src = data_root / name
        if not src.exists():
            raise FileNotFoundError(f"{src}: no such file or folder (is --data-root right?)")
        for file in sorted(p for p in src.rglob("*") if p.is_file()) if src.is_dir() else [src]:
            if file.suffix == ".md":
                continue
            dst = out / "data" / file.relative_to(data_root).with_name(file.name + ".xz")
            head = heads.get(name) or heads.get(file.relative_to(data_root).as_posix())
            if head:  # dated 1970, so a bundle without --head replaces it with the whole file
                os.utime(compress(file, dst, head), (0, 0))
            elif not dst.is_file() or dst.stat().st_mtime < file.stat().st_mtime:
                compress(file, dst)
            written.append(dst)
    if init:
        from .export import export
        written += sorted(p for p in export(init, out / "init", "float16").iterdir())
    _remove_stale(out, set(written))
    total = sum(p.stat().st_size for p in written)
    for p in written:
        print(f"{p.stat().st_size / MIB:8.2f} MiB  {p}")
    print(f"{total / MIB:8.2f} MiB  in all ({out})")
    tree = tree_bytes()
    if tree is not None:  # the device copies the working tree beside the carried folder: 64 MiB in all
        warn = ("  OVER the device's 64 MiB: move folders out of the tree for the call" if tree + total > 64 * MIB
                else "")
        print(f"{tree / MIB:8.2f} MiB  the working tree that travels with it (git's files): "
              f"{(tree + total) / MIB:.2f} MiB together{warn}")
    if total > max_mib * MIB:
        raise ValueError(f"{out} holds {total / MIB:.1f} MiB, over --max-mib {max_mib:g}: bundle fewer files "
                         "(--files) or no --init")
    shipped = {p.relative_to(out).as_posix(): p.stat().st_size for p in written if p.name != "tokenizer.json"}
    # imported here, not at the top: importing roberta loads torch, which pack and unpack do without
    from roberta.files import write_atomic

    write_atomic(out / BUNDLE_NAME, json.dumps({"files": shipped}, indent=2) + "\n")
    return written


def check_heads(heads: dict[str, int], files, data_root: Path) -> None:
    """Each --head names one of --files, or a file under one of its folders (`wikitext-2/wiki.train.tokens` with
    `--files wikitext-2`): a ValueError naming the others, before anything is written."""
    folders = [name.rstrip("/") + "/" for name in files]
    for name in heads:
        if name in files:
            continue
        if not any(name.startswith(folder) for folder in folders):
            raise ValueError(f"--head names {name}, not one of --files nor a file under one of their folders")
        if not (data_root / name).is_file():
            raise ValueError(f"--head names {name}: no such file under --data-root {data_root}")


def check_bundle(folder) -> None:
    """A ValueError naming what is wrong unless `folder` is a bundle that finished (its BUNDLE_NAME, written
    last) with every file it lists, at its size: a bundle refused for its size or stopped half-way is not one."""
    folder = Path(folder)
    try:
        files = json.loads((folder / BUNDLE_NAME).read_text(encoding="utf-8"))["files"]
    except (OSError, ValueError, KeyError, TypeError):
        raise ValueError(f"{folder}: not a finished bundle (no readable {BUNDLE_NAME}: the bundle was refused or "
                         "stopped): run `python -m train.gpu_transfer bundle` again") from None
    for name, size in files.items():
        path = folder / name
        if not path.is_file() or path.stat().st_size != size:
            raise ValueError(f"{path}: {'missing' if not path.is_file() else 'not the size bundled'}; run "
                             "`python -m train.gpu_transfer bundle` again")


def _remove_stale(out: Path, kept: set[Path]) -> None:
    """Delete what an earlier bundle into `out` left that this one did not write (a corpus no longer in --files,
    the weights of an earlier --init): it would travel to the device uncounted. Only the bundle's own files
    (OUT/data/**/*.xz, OUT/init/*) are touched."""
    for sub, pattern in (("data", "*.xz"), ("data", "*.partial"), ("init", "*")):
        for path in sorted((out / sub).rglob(pattern)) if (out / sub).is_dir() else []:
            if path.is_file() and path not in kept:
                path.unlink()
                print(f"removed {path}: an earlier bundle's, not in this one")


def tree_bytes(root=".") -> int | None:
    """Bytes of the files git would copy from `root` (tracked and untracked, not ignored; those on disk), or None
    outside a git checkout."""
    try:
        listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=root, capture_output=True,
                                check=True).stdout.decode("utf-8", "surrogateescape")
    except (OSError, subprocess.CalledProcessError):
        return None
    files = (Path(root) / name for name in listed.split("\0") if name)
    return sum(f.stat().st_size for f in files if f.is_file())


def _skip_checkpoints(info: tarfile.TarInfo):
    path = Path(info.name)
    return None if "checkpoints" in path.parts or path.suffix == ".pt" else info


def pack(runs, out, part_mib: float = PART_MIB, max_files: int = 8) -> list[Path]:
    """The run folders under `runs` (checkpoints left out) -> `out/runs.tar.xz.partNN`, each at most
    `part_mib` MiB. Parts, not safetensors shards: the tied embedding matrix alone is 16 MiB in float16."""
    runs, out = Path(runs), output_folder(out)
    if not runs.is_dir():  # a file would be packed as if it were the runs
        raise NotADirectoryError(f"{runs}: {'not a' if runs.exists() else 'no such'} folder (give the folder that "
                                 "holds the run folders)")
    if not any(p.is_file() and _skip_checkpoints(tarfile.TarInfo(p.relative_to(runs).as_posix()))
               for p in runs.rglob("*")):  # an empty pack was a wasted return, without a word
        raise ValueError(f"{runs}: nothing to pack (it holds no file outside checkpoints/)")
    out.mkdir(parents=True, exist_ok=True)
    for stale in sorted(out.glob(f"{ARCHIVE}.part*")):  # an earlier pack's: unpack would join them to these
        stale.unlink()
    archive = out / ARCHIVE
    # preset 0: float16 weights hardly compress (xz -6 keeps 89% of a model file, -0 90%, 4x faster), and
    # on the GPU machine every second of packing is taken from the 10-minute command
    with tarfile.open(archive, "w:xz", preset=0) as tar:
        tar.add(runs, arcname=".", filter=_skip_checkpoints)
    size, part_size = archive.stat().st_size, int(part_mib * MIB)
    n_parts = -(-size // part_size)
    if n_parts > max_files:
        archive.unlink()
        raise ValueError(f"{runs} packs to {size / MIB:.1f} MiB: more than {max_files} parts of {part_mib:g} MiB")
    written = []
    with open(archive, "rb") as f:
        for i in range(n_parts):
            written.append(out / f"{ARCHIVE}.part{i:02d}")
            written[-1].write_bytes(f.read(part_size))
    archive.unlink()
    for p in written:
        print(f"{p.stat().st_size / MIB:8.2f} MiB  {p}")
    return written


def unpack(returned, out) -> Path:
    """The parts `pack` wrote -> the run folders again, under `out`."""
    returned, out = Path(returned), output_folder(out)
    if not returned.is_dir():
        raise FileNotFoundError(f"{returned}: no such folder (give the folder the parts were returned in)")
    parts = sorted(returned.glob(f"{ARCHIVE}.part*"))
    if not parts:
        raise FileNotFoundError(f"{returned} holds no {ARCHIVE}.partNN files (is it what `pack` wrote?)")
    created = not out.exists()  # removed again if nothing could be unpacked into it
    out.mkdir(parents=True, exist_ok=True)
    archive = out / ARCHIVE
    with open(archive, "wb") as f:
        for part in parts:
            f.write(part.read_bytes())
    try:
        with tarfile.open(archive, "r:xz") as tar:
            tops = sorted({Path(name).parts[0] for name in tar.getnames() if Path(name).parts})
            if held := [top for top in tops if (out / top).exists()]:  # never merged into them without a word
                raise FileExistsError(f"{out} already holds {', '.join(held)}: unpack into another --out (or move "
                                      "them away first)")
            tar.extractall(out, filter="data")
    except (tarfile.TarError, EOFError, lzma.LZMAError) as err:
        if created:
            shutil.rmtree(out, ignore_errors=True)
        raise ValueError(f"{returned}: the parts do not make a whole archive (one missing?): {err}") from err
    finally:
        archive.unlink(missing_ok=True)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m train.gpu_transfer", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    b = sub.add_parser("bundle", help="build the upload folder")
    b.add_argument("--out", default="gpu-upload", help="default: %(default)s (ignored by git)")
    b.add_argument("--data-root", default=str(DATA_ROOT), help="default: %(default)s")
    b.add_argument("--files", nargs="+", default=DATA_FILES, help="files or folders under --data-root "
                   "(default: %(default)s)")
    b.add_argument("--tokenizer", default=TOKENIZER, help="tokenizer.json to reuse (default: %(default)s)")
    b.add_argument("--init", help="a model folder to continue from, shipped as float16 shards")
    b.add_argument("--max-mib", type=float, default=60.0, help="size limit (default: %(default)s)")
    b.add_argument("--head", nargs="+", default=[], metavar="FILE=BYTES",
                   help="send only the first lines (up to BYTES) of these --files (or of files under a --files "
                        "folder), e.g. imdb/unsup.txt=17e6 when "
                        "the mixture reads 15M characters of its 65M and the whole file would not fit")
    k = sub.add_parser("pack", help="run folders -> parts to return (on the GPU machine)")
    k.add_argument("runs", help="the folder that holds the run folders to return (with --ship: the "
                                "`train.recipe --gpu` folder)")
    k.add_argument("--out", required=True, help="the folder for the parts (runs.tar.xz.partNN), e.g. $OUT")
    k.add_argument("--ship", action="store_true",
                   help="RUNS is a `train.recipe --gpu` folder: export what finished into RUNS/ship first (float16; "
                        "a recipe stopped by its time limit still returns its finished runs, and a pretraining it cut "
                        f"returns its last checkpoint as {PARTIAL_MLM}), then pack RUNS/ship")
    u = sub.add_parser("unpack", help="returned files -> run folders")
    u.add_argument("returned", help="the folder the parts (runs.tar.xz.partNN) came back in")
    u.add_argument("--out", required=True, help="the folder to rebuild the run folders in (a run folder it "
                                                "already holds is refused, never merged into)")
    args = p.parse_args(argv)
    try:
        if args.command == "bundle":
            bundle(args.out, args.data_root, args.files, args.tokenizer, args.init, args.max_mib,
                   parse_heads(args.head))
        elif args.command == "pack":
            if args.ship:
                from .recipe import ship  # train.recipe imports this module
                pack(ship(Path(args.runs)), args.out)
            else:
                pack(args.runs, args.out)
        else:
            print(f"unpacked into {unpack(args.returned, args.out)}")
    except (*USER_ERRORS, tarfile.TarError) as err:  # UserError: e.g. a last checkpoint that cannot be read
        return report_user_error(err)
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(exit_code(main))
