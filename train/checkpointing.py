"""Atomic training checkpoints: OUT/checkpoints/step-NNNNNNNN/ (for --resume) and best-NNNNNNNN/.

A checkpoint holds `model.safetensors` (weights; never pickle) and `trainer.pt` (optimizer, RNG, data
position, masker, counters: tensors and plain Python values only, so `torch.load(..., weights_only=True)`
reads it). Each is written into a temporary folder next to it, fsync'ed, read back, and the folder is renamed
into place; the previous checkpoint is deleted only after that, and one older step checkpoint is always kept. A
step saved a second time keeps its first copy (set aside) until the second is in place.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from . import runtime
from .runtime import UserError

CHECKPOINTS = "checkpoints"
SET_ASIDE = ".old-"  # a checkpoint saved again is renamed to .old-NAME until its new copy is in place
TRAINER_STATE_KEYS = ("step", "tokens", "epoch", "batch_in_epoch", "elapsed", "optimizer", "rng", "task", "args")


class CheckpointError(UserError):
    """A checkpoint file that cannot be read (truncated, corrupt); the message names the file."""


def _fsync(path: Path) -> None:
    """Flush a written file, or a folder's entries, to the disk: on POSIX a rename is durable only once its folder
    is flushed too. Windows flushes a file only through a handle that may write (EBADF on a read-only one) and
    `os.open` cannot open a folder there (EACCES): the files alone are flushed, and the rename is left to NTFS's
    metadata journal."""
    if runtime.WINDOWS:
        if not path.is_dir():
            with open(path, "rb+") as f:
                os.fsync(f.fileno())
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Checkpoints:
    """OUT/checkpoints/step-NNNNNNNN/ (for --resume) and best-NNNNNNNN/ (best evaluation so far).

    A checkpoint is written into `.tmp-*` in the same folder, every file fsync'ed and read back, then renamed
    into place (a rename is atomic). Older ones are deleted only after that; of the step checkpoints the
    newest two are kept, so that --resume can fall back when the latest is damaged afterwards; `keep_all_steps`
    keeps every one (the points of a run's trajectory, e.g. to average along it with `train.average`).
    """

    keep = {"step": 2, "best": 1}

    def __init__(self, out: Path, keep_all_steps: bool = False):
        self.root = Path(out) / CHECKPOINTS
        self.keep_all_steps = keep_all_steps

    def dirs(self, kind: str) -> list[Path]:
        """The checkpoint folders of `kind` ("step", "best"), oldest first."""
        if not self.root.is_dir():
            return []
        return sorted(p for p in self.root.glob(f"{kind}-*") if p.is_dir() and p.name[len(kind) + 1:].isdigit())

    def latest(self, kind: str = "step") -> Path | None:
        dirs = self.dirs(kind)
        return dirs[-1] if dirs else None

    @staticmethod
    def step_of(path: Path) -> int:
        return int(path.name.split("-")[-1])

    def save(self, kind: str, step: int, model_state: dict, trainer_state: dict | None = None,
             extra_json: dict | None = None) -> Path:
        self.root.mkdir(parents=True, exist_ok=True)
        final = self.root / f"{kind}-{step:08d}"
        tmp = self.root / f".tmp-{kind}-{step:08d}-{os.getpid()}"
        aside = self.root / f"{SET_ASIDE}{final.name}"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        try:
            tensors = {k: v.detach().contiguous().cpu() for k, v in model_state.items()}
            try:
                save_file(tensors, str(tmp / "model.safetensors"))
                if trainer_state is not None:
                    with open(tmp / "trainer.pt", "wb") as f:
                        torch.save(trainer_state, f)
                if extra_json is not None:
                    (tmp / "info.json").write_text(json.dumps(extra_json, indent=2) + "\n", encoding="utf-8")
            except (OSError, RuntimeError, SafetensorError) as err:  # a full disk: torch.save says "unexpected pos"
                from .reporting import how_to_go_on  # (reporting reads checkpoints: imported here, not above)

                kept = [d.name for d in self.dirs(kind)]
                raise UserError(f"could not write the checkpoint {final.name} in {self.root} (is the disk full? "
                                f"{err}); {'the checkpoint ' + kept[-1] + ' is kept: ' if kept else ''}"
                                f"free some space, then {how_to_go_on(self.root.parent)}") from err
            for file in tmp.iterdir():
                _fsync(file)
            _fsync(tmp)
            self.load(tmp, trainer_state=trainer_state is not None)  # verified before the old ones go
            if final.exists():  # the same step saved again (its closing evaluation, its end): set aside, not deleted
                shutil.rmtree(aside, ignore_errors=True)  # (one an earlier save of it had no time to delete)
                os.replace(final, aside)
            os.replace(tmp, final)
            _fsync(self.root)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            with contextlib.suppress(OSError):  # stopped between the two renames (a second Ctrl-C): the old one back
                self.put_back_set_aside()
            raise
        shutil.rmtree(aside, ignore_errors=True)
        if kind == "step" and self.keep_all_steps:
            return final
        older, n = [d for d in self.dirs(kind) if d.name < final.name], self.keep.get(kind, 1)
        keep = {final, *(older[-(n - 1):] if n > 1 else [])}
        for old in self.dirs(kind):
            if old not in keep:
                shutil.rmtree(old, ignore_errors=True)
        return final

    @staticmethod
    def load(path: Path, device="cpu", trainer_state: bool | None = None) -> tuple[dict, dict | None]:
        """(weights on `device`, trainer state on the CPU or None); `trainer_state=True` requires trainer.pt. A
        file that cannot be read, or a trainer state that lacks TRAINER_STATE_KEYS, raises CheckpointError naming
        the file. The trainer state stays on the CPU whatever the device: random-generator states must be CPU
        byte tensors (`torch.set_rng_state`, `Generator.set_state`), and the optimizer moves its own state to its
        parameters' device when it loads it."""
        file = Path(path) / "model.safetensors"
        try:
            weights = load_file(str(file), device=str(device))
        except (SafetensorError, OSError) as err:
            raise CheckpointError(f"{file}: unreadable (truncated or corrupt?): {err}") from None
        file = Path(path) / "trainer.pt"
        if trainer_state is None:
            trainer_state = file.exists()
        if not trainer_state:
            return weights, None
        try:
            state = torch.load(file, map_location="cpu", weights_only=True)
        except Exception as err:  # a missing file, a truncated zip, an unpicklable value: the same answer
            raise CheckpointError(f"{file}: unreadable (truncated or corrupt?): {err}") from None
        missing = [k for k in TRAINER_STATE_KEYS if k not in state] if isinstance(state, dict) else "everything"
        if missing:
            raise CheckpointError(f"{file}: not a complete trainer state (missing {missing})")
        return weights, state

    def put_back_set_aside(self) -> None:
        """A kill between the two renames of a second save of a step (`save`) leaves that step only in its set-aside
        folder: put it back (its new copy, in a `.tmp-*` folder, is deleted by `clean_partial`). A set-aside folder
        whose step is in place is the leftover of a save that finished: deleted."""
        if not self.root.is_dir():
            return
        for aside in self.root.glob(f"{SET_ASIDE}*"):
            final = self.root / aside.name[len(SET_ASIDE):]
            if final.exists():
                shutil.rmtree(aside, ignore_errors=True)
            else:
                os.replace(aside, final)

    def clean_partial(self, after_step: int | None = None) -> None:
        """Remove temporary folders of a crashed save and (on resume) best-* newer than the resume point."""
        if not self.root.is_dir():
            return
        for tmp in self.root.glob(".tmp-*"):
            shutil.rmtree(tmp, ignore_errors=True)
        if after_step is not None:
            for best in self.dirs("best"):
                if self.step_of(best) > after_step:
                    shutil.rmtree(best, ignore_errors=True)


