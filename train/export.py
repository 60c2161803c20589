"""Copy a finished run folder as a shippable, Hub-ready model folder, storing the weights in half precision by
default (half the size; the model still computes in float32: it is cast back when loaded; --dtype float32 keeps
them full size).

    python -m train.export runs/mini-roberta-mlm assets/mini-roberta-mlm --dtype float16
    python -m train.export runs/mini-roberta-mlm/checkpoints/step-00003000 runs/mlm-step-3000 --dtype float32

Copies config.json, tokenizer.json, tokenizer_config.json, README.md, metrics.json, curves.png,
reliability.png (a classifier's calibration diagram), log.jsonl and phases.json (a shipped MLM's pretraining
history); never the checkpoints. Loads the result
back with `roberta` to check it before returning. The new folder is built beside the destination and swapped in
whole (`staged_folder`): an export that is stopped, or fails, leaves the destination as it was.

A step checkpoint of a finished run (RUN/checkpoints/step-N, all kept with --keep-checkpoints) becomes a model
folder too, e.g. to average points of a run's trajectory with `train.average`: its weights, the run's config and
tokenizer files, and a metrics.json naming the checkpoint, its step and tokens (the run's own metrics, card and
curves describe its end, so they are not copied).

So does the last checkpoint of a pretraining run that stopped before its end (a signal: `train.pretrain` then
writes the config and tokenizer files beside it), as a *partial* model: its metrics.json says `stopped_by` (the
signal, "time" when only the final evaluation was cut, "unknown" for a periodic checkpoint after which the run
went on) and holds a `partial` entry that says what it is; it has no final evaluation. It loads as any model
(`--init` of a next run, `train.evaluate` to score it), but `export` and so `scripts.release` refuse to ship it:
a partial model is never taken for a finished one.
"""
import argparse
import contextlib
import os
import shutil
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open

import roberta
from roberta.run_metrics import RunMetrics

from .arguments import NOT_RECIPE
from .checkpointing import CHECKPOINTS, Checkpoints
from .model_card import write_model_card
from .paths import other_entries
from .runtime import EXIT_OK, UserError, exit_code, output_folder, report_user_error

FILES = ["config.json", "tokenizer.json", "tokenizer_config.json", "README.md", "metrics.json", "curves.png",
         "reliability.png", "log.jsonl", "phases.json"]
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


PARTIAL = "partial"  # metrics.json's entry in a model exported from a checkpoint of a run that did not finish
STAGING, OLD = ".{}.staging-{}", ".{}.old"  # siblings of a folder being replaced: its next version, its last one


@contextlib.contextmanager
def staged_folder(dst):
    """Build the next version of the folder `dst` beside it, then swap it in. The block gets a fresh sibling
    holding a copy of dst's files; when the block ends without error, two renames put it in dst's place, so a
    crash at any moment leaves dst complete, as it was or as it is now (between the two renames dst is briefly
    absent: the next call puts the old one back). On an error the sibling is deleted and dst is untouched.
    (An export used to write into dst file by file: killed half-way, new metrics and card sat beside the old
    weights, and every loader took the folder as whole.)"""
    dst = Path(dst)
    old = dst.parent / OLD.format(dst.name, "")
    if not dst.exists() and old.is_dir():
        os.rename(old, dst)  # a crash between the renames below, on an earlier call
    for leftover in dst.parent.glob(STAGING.format(dst.name, "*")):  # a killed call's half-built copy
        shutil.rmtree(leftover, ignore_errors=True)
    shutil.rmtree(old, ignore_errors=True)
    tmp = dst.parent / STAGING.format(dst.name, os.getpid())
    if dst.is_dir():
        shutil.copytree(dst, tmp)  # copies, not links: the block rewrites some of these files in place
    else:
        tmp.mkdir(parents=True)
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if dst.exists():
        os.rename(dst, old)
    os.rename(tmp, dst)
    shutil.rmtree(old, ignore_errors=True)


def export(src, dst, dtype="float32") -> Path:
    """Export the finished run (or step checkpoint) `src` as the model folder `dst`, replacing an earlier export
    there as a whole (`staged_folder`)."""
    src, dst = Path(src), check_export(src, dst)
    with staged_folder(dst) as folder:
        export_into(src, folder, dtype)
    return dst


def check_export(src, dst) -> Path:
    """Everything `export` refuses, checked before anything is written; returns dst as a Path."""
    src, dst = Path(src), output_folder(dst, "the destination")
    if dst.resolve() == src.resolve():
        raise ValueError(f"{dst} is the folder being exported: choose another destination")
    if (dst / CHECKPOINTS).exists() or (dst / "model.safetensors").is_file() and not _exported(dst):
        # an earlier export is replaced (scripts.release ships again into assets/); a run's files were lost
        raise ValueError(f"the destination {dst} holds a training run or a model that train.export did not write: "
                         "choose another destination")
    if not _exported(dst) and (held := other_entries(dst)):  # `train.export RUN .` replaced the project's README
        raise ValueError(f"the destination {dst} is not empty ({held}) and holds no earlier export: choose another "
                         "destination")
    if src.parent.name == CHECKPOINTS:
        if not src.is_dir():  # was "model.safetensors: unreadable (truncated or corrupt?): No such file"
            kept = sorted(p.name for p in src.parent.iterdir() if p.is_dir()) if src.parent.is_dir() else []
            raise FileNotFoundError(f"{src}: no such checkpoint (in {src.parent}: {', '.join(kept) or 'none'})")
        run = src.parent.parent
        if not (run / "config.json").is_file():
            raise FileNotFoundError(f"{run} has no config.json: export a checkpoint once its run has finished, or "
                                    "once a signal stopped it (train.pretrain writes the config then)")
        _check_same_kind(run, dst)
        return dst
    if (src / CHECKPOINTS).is_dir() and not (src / "metrics.json").is_file():  # the loaders refuse it too
        last = Checkpoints(src).latest("step")
        raise FileNotFoundError(f"{src} is a training run that has not finished (it holds checkpoints/ but no "
                                "metrics.json yet): run its command again with --resume to finish it" +
                                (f", or export its last checkpoint {last} as a partial model" if last else ""))
    if not (src / "model.safetensors").is_file() or not (src / "config.json").is_file():
        raise FileNotFoundError(f"{src} is not a finished model folder (config.json and model.safetensors)")
    if note := partial_note(src):
        raise ValueError(f"{src} is a partial model, not one to ship: {note}")
    _check_same_kind(src, dst)
    return dst


def partial_note(folder) -> str | None:
    """What a partial model folder's metrics.json says of it (`export_checkpoint` of a run that did not finish);
    None for any other folder (no metrics.json, or one that cannot be read: the export copies it as it is)."""
    try:
        metrics = RunMetrics.read(folder, missing_ok=True)
    except (OSError, ValueError):
        return None
    return metrics.extra.get(PARTIAL) if metrics else None


def export_into(src, dst: Path, dtype="float32") -> Path:
    """The export itself, written into `dst` (`check_export` passed): the files, then the weights, loaded back."""
    src = Path(src)
    if src.parent.name == CHECKPOINTS:
        return export_checkpoint(src, dst, dtype)
    dst.mkdir(parents=True, exist_ok=True)
    for name in FILES:
        if (src / name).is_file():
            shutil.copy2(src / name, dst / name)
        else:  # left by an earlier export into this folder: it would describe another model
            (dst / name).unlink(missing_ok=True)
    weights, metadata = roberta.hub.read_weights(src / "model.safetensors")  # metadata: the config it fits
    return _store(weights, metadata, dst, dtype)


def _check_same_kind(src: Path, dst: Path) -> None:
    """Refuse a destination that holds a model of another architecture than `src`'s (config.json's
    `architectures`): `train.export MLM assets/mini-roberta-sst2` replaced the shipped classifier's weights and
    config, leaving its arms.json, baseline.json, phase and screen files beside a masked LM. A re-export (the
    same kind of model) still replaces the earlier one."""
    if not (dst / "config.json").is_file():
        return
    ours, theirs = roberta.hub.read_architecture(src), roberta.hub.read_architecture(dst)
    if ours != theirs:
        raise ValueError(f"the destination {dst} holds a {theirs} model, not a {ours} like {src}: choose "
                         "another destination (an export only replaces a model of the same kind)")


def _exported(folder: Path) -> bool:
    """Whether folder/model.safetensors was written by `export` (its metadata names the stored dtype)."""
    try:
        with safe_open(folder / "model.safetensors", "pt") as f:
            return "stored_dtype" in (f.metadata() or {})
    except (OSError, SafetensorError):
        return False


def export_checkpoint(checkpoint: Path, dst: Path, dtype="float32") -> Path:
    """RUN/checkpoints/step-N as a model folder: the checkpoint's weights with RUN's config and tokenizer; a
    partial one (metrics.json's PARTIAL entry, `stopped_by`) when RUN did not finish."""
    run = checkpoint.parent.parent
    weights, state = Checkpoints.load(checkpoint)
    architecture = roberta.hub.read_architecture(run)
    model = getattr(roberta, architecture)(roberta.load_config(run))
    model.load_state_dict(weights)  # strict: the checkpoint is of this run's model
    dst.mkdir(parents=True, exist_ok=True)
    for name in FILES:
        (dst / name).unlink(missing_ok=True)
    model.save_pretrained(dst)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        if (run / name).is_file():
            shutil.copy2(run / name, dst / name)
    run_metrics = RunMetrics.read(run, missing_ok=True)  # None: the run did not finish
    # the run's data: its metrics' (a finished run's, with the data its figures were measured on), else its options
    described = run_metrics.to_dict() if run_metrics else (state or {}).get("args", {})
    kept = ("corpus", "masking", "max_length", *(("eval_data", "eval_seed") if run_metrics else ()))
    step = Checkpoints.step_of(checkpoint)
    metrics = RunMetrics(init=f"checkpoint {checkpoint}", train_steps=step,
                         train_tokens=state["tokens"] if state else None,
                         train_time_s=round(state["elapsed"], 1) if state else None,
                         **{k: described.get(k) for k in kept})
    if run_metrics is None and metrics.max_length is None:  # the option's default: rows as long as the model reads
        metrics.max_length = model.config.max_length
    if run_metrics is None:  # these weights are where the run stopped, and why, as its trainer state says
        metrics.stopped_by = (state or {}).get("stopped_by") or "unknown"  # None: a checkpoint on its way
        at = f"at step {step:,} ({metrics.train_tokens or 0:,} tokens)"
        how = {"unknown": f"saved these weights on its way, {at}, and may have gone on after them (its log says how "
                          "far, and whether it was stopped, killed or failed)",
               "time": f"stopped in its final evaluation, {at}", "done": f"stopped in its final evaluation, {at}"}.get(
                   metrics.stopped_by, f"was stopped by {metrics.stopped_by} {at}")
        metrics.extra[PARTIAL] = (
            f"the weights of {checkpoint.name} of {run}, a run from {described.get('init') or 'random weights'} "
            f"that had not finished: it {how}, so there is no final evaluation; continue it (--init of a next run) "
            "or score it (train.evaluate), but do not ship it: train.export and scripts.release refuse it")
        for name in ("log.jsonl", "curves.png"):  # its training, up to where it stopped
            if (run / name).is_file():
                shutil.copy2(run / name, dst / name)
        write_model_card(dst, title=f"Partial model: {checkpoint.name} of an unfinished run",
                         task=roberta.hub.task_of(architecture), metrics=metrics, notes=metrics.extra[PARTIAL],
                         recipe={k: v for k, v in described.items() if v is not None and k not in NOT_RECIPE})
    metrics.write(dst)
    return _store(*roberta.hub.read_weights(dst / "model.safetensors"), dst, dtype)


def _store(weights: dict, metadata: dict, dst: Path, dtype: str) -> Path:
    """Write `weights` as dst/model.safetensors in `dtype`, then load the folder back (strictly)."""
    roberta.hub.save_weights({k: v.to(DTYPES[dtype]).contiguous() for k, v in weights.items()},
                             dst / "model.safetensors", {**metadata, "format": "pt", "stored_dtype": dtype})
    architecture = roberta.hub.read_architecture(dst)
    getattr(roberta, architecture).from_pretrained(dst)  # strict load: the copy is complete
    return dst


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m train.export", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("src", help="a finished run folder (train.pretrain / train.finetune output), or a step "
                               "checkpoint of one (RUN/checkpoints/step-N)")
    p.add_argument("dst", help="the folder to write")
    p.add_argument("--dtype", choices=sorted(DTYPES), default="float16", help="stored weight dtype (default: %(default)s)")
    args = p.parse_args(argv)
    try:
        dst = export(args.src, args.dst, args.dtype)
    except (OSError, ValueError, UserError, SafetensorError) as err:  # UserError: an unreadable checkpoint
        return report_user_error(err)
    size = (dst / "model.safetensors").stat().st_size / 1e6
    print(f"wrote {dst} (model.safetensors {size:.1f} MB, {args.dtype})")
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(exit_code(main))
