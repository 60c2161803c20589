"""Writing a file in one step: a temporary file beside it, renamed into place. A reader never sees half a file, a
stopped or failed write leaves the old file (and no temporary one), and the temporary name holds the process id,
so two processes writing the same file never share one. roberta's saves write this way, and so do the scripts in
train/ and scripts/ for the files they make (JSON, figures, cards, tokenizers, weights), but for copies of files
(`shutil`), logs written as a command runs, and the few writes in place that tests/test_atomic_writes.py allows,
each with its reason (a file inside a temporary folder renamed whole, an archive's parts).
A write that fails (a full disk) is a `WriteError` naming the file.
"""
from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator
from pathlib import Path


DISK_FULL = (errno.ENOSPC, errno.EDQUOT)  # no space left, or the user's quota used up


class WriteError(OSError):
    """A file that could not be written, named: "could not write PATH (No space left on device)", then `hint` (how
    to go on) when a caller sets one. `errno` and `strerror` are the failed write's: a caller can tell a full disk
    (DISK_FULL), and one that says `err.strerror` says what it said before."""

    def __init__(self, path, err: OSError, hint: str = ""):
        super().__init__(err.errno, err.strerror)
        self.path, self.hint = Path(path), hint
        self.reason = err.strerror or str(err)

    def __reduce__(self):  # (copy, pickle: OSError's own would call __init__ with its errno and strerror)
        return _write_error, (self.path, self.errno, self.strerror, self.reason, self.hint)

    def __str__(self) -> str:  # not OSError's "[Errno 28] No space left on device", which names no file
        return f"could not write {self.path} ({self.reason})" + (f": {self.hint}" if self.hint else "")


def _write_error(path, errno_: int, strerror: str, reason: str, hint: str) -> WriteError:
    err = WriteError(path, OSError(errno_, strerror), hint)
    err.reason = reason
    return err


def temporary_prefix(name: str) -> str:
    """How the temporary file for a file `name` begins (the process id follows): a folder's cleanup can find what
    a stopped write left."""
    return f".{name}.tmp-"


@contextlib.contextmanager
def replaced_atomically(path) -> Iterator[Path]:
    """A temporary path beside `path` to write to; renamed onto `path` when the block ends without an error, and
    deleted in every case where it was not. For writers that take a file name (safetensors, matplotlib: give it
    the format, the name does not end in it). A write that fails raises a `WriteError` naming `path`."""
    path = Path(path)
    tmp = path.with_name(f"{temporary_prefix(path.name)}{os.getpid()}")
    try:
        yield tmp
        os.replace(tmp, path)
    except OSError as err:
        raise (err if isinstance(err, WriteError) else WriteError(path, err)) from err
    finally:
        tmp.unlink(missing_ok=True)


def write_atomic(path, data: str | bytes) -> Path:
    """Write `data` (text as UTF-8) to `path` in one step (`replaced_atomically`)."""
    path = Path(path)
    with replaced_atomically(path) as tmp:
        tmp.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return path
