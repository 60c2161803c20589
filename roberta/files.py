"""Writing a file in one step: a temporary file beside it, renamed into place. A reader never sees half a file, a
stopped or failed write leaves the old file (and no temporary one), and the temporary name holds the process id,
so two processes writing the same file never share one. roberta's saves and every script in train/ write this way.
"""
from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path


def temporary_prefix(name: str) -> str:
    """How the temporary file for a file `name` begins (the process id follows): a folder's cleanup can find what
    a stopped write left."""
    return f".{name}.tmp-"


@contextlib.contextmanager
def replaced_atomically(path) -> Iterator[Path]:
    """A temporary path beside `path` to write to; renamed onto `path` when the block ends without an error, and
    deleted in every case where it was not. For writers that take a file name (safetensors, matplotlib: give it
    the format, the name does not end in it)."""
    path = Path(path)
    tmp = path.with_name(f"{temporary_prefix(path.name)}{os.getpid()}")
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_atomic(path, data: str | bytes) -> Path:
    """Write `data` (text as UTF-8) to `path` in one step (`replaced_atomically`)."""
    path = Path(path)
    with replaced_atomically(path) as tmp:
        tmp.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return path
