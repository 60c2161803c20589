"""Copy a finished run folder as a shippable, Hub-ready model folder, storing the weights in half precision by
default (half the size; the model still computes in float32: it is cast back when loaded; --dtype float32 keeps
them full size).

    python -m train.export runs/mini-roberta-mlm assets/mini-roberta-mlm --dtype float16
    python -m train.export runs/mini-roberta-mlm/checkpoints/step-00003000 runs/mlm-step-3000 --dtype float32

Copies config.json, tokenizer.json, tokenizer_config.json, README.md (its Usage section written anew to load the
exported folder, not the run), metrics.json, curves.png,
reliability.png (a classifier's calibration diagram), log.jsonl and phases.json (a shipped MLM's pretraining
history); never the checkpoints. A run without tokenizer_config.json gets one (`write_tokenizer_config`:
`transformers` needs it to read tokenizer.json as saved, and `train.push` refuses a folder without it). Loads
the result back with `roberta` to check it before returning. The new folder is built beside the destination
and swapped in whole (`staged_folder`): an export that is stopped, or fails, leaves the destination as it was.

A step checkpoint of a finished run (RUN/checkpoints/step-00001000 for step 1,000: the step in 8 digits; all kept
with --keep-checkpoints) becomes a model folder too, e.g. to average points of a run's trajectory with
`train.average`: its weights, the run's config and tokenizer files, a model card, and a metrics.json with the run's
init, init_root and data (its dev set, calibration slice, IMDB sample and checks, so that checkpoints of one run
count as one initialisation and their average is calibrated and scored as an average of seeds is), the checkpoint's
step, tokens and training time, and a `checkpoint` entry naming the run, the step and the run's command. It holds
no figure: the run's own metrics, card and curves describe its end, so they are not copied. A classifier's
`calibration_temperature` is reset to 1.0 (the run's was fitted on the weights it kept; `train.calibrate` on the
folder fits one for these weights on the run's calibration slice), and its metrics and card say so.

So does the last checkpoint of a pretraining run that stopped before its end (a signal: `train.pretrain` then
writes the config and tokenizer files beside it), as a *partial* model: its metrics.json says `stopped_by` (the
signal, "time" when only the final evaluation was cut, "unknown" for a periodic checkpoint after which the run
went on) and holds a `partial` entry that says what it is; it has no final evaluation. It loads as any model
(`--init` of a next run, `train.evaluate` to score it), but `export`, `train.push` and so `scripts.release` refuse
to ship it: a partial model is never taken for a finished one.
"""
import argparse
import contextlib
import os
import shutil
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open

import roberta
from roberta.files import WriteError
from roberta.hub import CONFIG_NAME, TOKENIZER_NAME, WEIGHTS_NAME
from roberta.run_metrics import METRICS_NAME, RunMetrics

from .arguments import NOT_RECIPE
from .checkpointing import CHECKPOINTS, Checkpoints
from .exit_codes import with_how_to_go_on
from .model_card import card_for, rewrite_card_sections, write_model_card
from .paths import other_entries
from .runtime import EXIT_OK, UserError, exit_code, output_folder, report_user_error, writable_folder

FILES = [CONFIG_NAME, TOKENIZER_NAME, "tokenizer_config.json", "README.md", METRICS_NAME, "curves.png",
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
    (Written file by file, a folder killed half-way would hold new metrics and card beside the old weights, and
    every loader would take it as whole.)"""
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
    with writes_named_in(dst), staged_folder(dst) as folder:
        export_into(src, folder, dtype, final=dst)
    return dst


@contextlib.contextmanager
def writes_named_in(dst: Path):
    """A write that fails inside the block, in `dst`'s staged copy (`staged_folder`, deleted by then: its name,
    .NAME.staging-PID, means nothing to the user), raised as a `WriteError` naming the file of `dst` it stands for;
    a full disk's with how to go on (`with_how_to_go_on`)."""
    try:
        yield
    except OSError as err:
        staging = dst.parent / STAGING.format(dst.name, os.getpid())
        path = err.path if isinstance(err, WriteError) else next(
            (Path(name) for name in (err.filename2, err.filename) if name), None)  # a copy names its target second
        named = err
        if path is not None and path.is_relative_to(staging):
            named = err if isinstance(err, WriteError) else WriteError(path, err)
            named.path = dst / path.relative_to(staging)
        named = with_how_to_go_on(named, dst, lambda: "run the same command again")
        if named is err:
            raise
        raise named from err


def check_writable_beside(dst: Path, option: str) -> None:
    """A PermissionError naming `dst` as `option` when its folder cannot be written (a read-only file system,
    permissions): the new version is built beside it and renamed into place (`staged_folder`), and a raw
    "[Errno 30] Read-only file system: '.NAME.staging-PID'" named neither."""
    if problem := writable_folder(dst.parent, option):
        why = problem.removeprefix(f"{option} {dst.parent}: ")
        raise PermissionError(f"{option} {dst}: {why}; choose a folder this process can write in")


def check_export(src, dst) -> Path:
    """Everything `export` refuses, checked before anything is written; returns dst as a Path."""
    src, dst = Path(src), output_folder(dst, "the destination")
    if dst.resolve() == src.resolve():
        raise ValueError(f"{dst} is the folder being exported: choose another destination")
    check_writable_beside(dst, "the destination")
    if (dst / CHECKPOINTS).exists() or (dst / WEIGHTS_NAME).is_file() and not _exported(dst):
        # an earlier export is replaced (scripts.release ships again into assets/); a run's files were lost
        raise ValueError(f"the destination {dst} holds a training run or a model that train.export did not write: "
                         "choose another destination")
    if not _exported(dst) and (held := other_entries(dst)):  # `train.export RUN .` replaced the project's README
        raise ValueError(f"the destination {dst} is not empty ({held}) and holds no earlier export: choose another "
                         "destination")
    if src.parent.name == CHECKPOINTS:
        if not src.is_dir():  # the checkpoint, not a file in it, is what is missing
            kept = sorted(p.name for p in src.parent.iterdir() if p.is_dir()) if src.parent.is_dir() else []
            raise FileNotFoundError(f"{src}: no such checkpoint (in {src.parent}: {', '.join(kept) or 'none'})")
        run = src.parent.parent
        if not (run / CONFIG_NAME).is_file():
            raise FileNotFoundError(f"{run} has no config.json: export a checkpoint once its run has finished, or "
                                    "once a signal stopped it (train.pretrain writes the config then)")
        check_tokenizer_and_metrics(run)
        _check_outside(run, dst, "the run")
        _check_same_kind(run, dst)
        return dst
    if (src / CHECKPOINTS).is_dir() and not (src / METRICS_NAME).is_file():  # the loaders refuse it too
        last = Checkpoints(src).latest("step")
        raise FileNotFoundError(f"{src} is a training run that has not finished (it holds checkpoints/ but no "
                                "metrics.json yet): run its command again with --resume to finish it" +
                                (f", or export its last checkpoint {last} as a partial model" if last else ""))
    if not (src / WEIGHTS_NAME).is_file() or not (src / CONFIG_NAME).is_file():
        raise FileNotFoundError(f"{src} is not a finished model folder (config.json and model.safetensors)")
    check_tokenizer_and_metrics(src)
    if note := partial_note(src):
        raise ValueError(f"{src} is a partial model, not one to ship: {note}")
    _check_outside(src, dst, "the folder")
    _check_same_kind(src, dst)
    return dst


def _check_outside(src: Path, dst: Path, what: str) -> None:
    """Refuse a destination inside the folder (or a checkpoint's run) being exported: `train.export RUN RUN/sub` was
    written, and `train.push RUN` then listed, and would upload, the export's files with the run's."""
    if dst.resolve().is_relative_to(src.resolve()):
        raise ValueError(f"the destination {dst} is inside {src}, {what} being exported: choose a destination "
                         "outside it")


def check_tokenizer_and_metrics(folder: Path) -> None:
    """What an export copies from `folder` (a model folder, or a checkpoint's run) and could not do without, checked
    before anything is written: its tokenizer.json must load (an export without one was written, exit 0, and could be
    neither loaded by name nor pushed; one a full disk had left empty was exported as a folder that did not load),
    and its metrics.json, when there is one, must read (a corrupt one was copied into the "checked" export)."""
    if not (folder / TOKENIZER_NAME).is_file():
        raise FileNotFoundError(f"{folder} has no tokenizer.json: its export could not be used (the model's users, "
                                "train.push and train.average need it); copy the run's tokenizer.json there first")
    try:
        roberta.load_tokenizer(folder / TOKENIZER_NAME)
    except roberta.ModelLoadError as err:
        raise ValueError(f"{err} (the export could not be used: copy the tokenizer.json the run trained with there, "
                         "then export again)") from None
    try:
        RunMetrics.read(folder, missing_ok=True)
    except ValueError as err:
        raise ValueError(f"{err} (fix or remove it, then export again)") from None


def partial_note(folder) -> str | None:
    """What a partial model folder's metrics.json says of it (`export_checkpoint` of a run that did not finish);
    None for any other folder (no metrics.json, or one that cannot be read, which `check_tokenizer_and_metrics`
    refuses before an export)."""
    try:
        metrics = RunMetrics.read(folder, missing_ok=True)
    except (OSError, ValueError):
        return None
    return metrics.extra.get(PARTIAL) if metrics else None


def export_into(src, dst: Path, dtype="float32", final: Path | None = None) -> Path:
    """The export itself, written into `dst` (`check_export` passed): the files, then the weights, loaded back.
    `final`: where the folder will be (`dst` is its staged copy), which a checkpoint's new card names."""
    src = Path(src)
    if src.parent.name == CHECKPOINTS:
        return export_checkpoint(src, dst, dtype, final)
    dst.mkdir(parents=True, exist_ok=True)
    for name in FILES:
        if (src / name).is_file():
            shutil.copy2(src / name, dst / name)
        else:  # left by an earlier export into this folder: it would describe another model
            (dst / name).unlink(missing_ok=True)
    weights, metadata = roberta.checkpoint.read_weights(src / WEIGHTS_NAME)  # metadata: the config it fits
    stored = _store(weights, metadata, dst, dtype, final)
    if (dst / "README.md").is_file():  # the run's card loads the run folder: its usage names where the export lives
        (dst / "README.md").write_text(card_for(dst, str(final or dst)), encoding="utf-8")
        _label_checks(dst, dtype)
    return stored


def _label_checks(folder: Path, dtype: str) -> None:
    """A classifier card's behaviour checks say whose their probabilities are once the weights are stored below
    float32 (they were measured on the float32 ones; `card_figure_sections`). Its calibration section is left as
    it is: a shipped card adds its own sentences there."""
    from .finetune import card_figure_sections

    metrics = RunMetrics.read(folder / METRICS_NAME, missing_ok=True)
    if metrics is not None and metrics.checks:
        rewrite_card_sections(folder, [s for s in card_figure_sections(metrics, dtype) if s[0] == "Behaviour checks"])


def _check_same_kind(src: Path, dst: Path) -> None:
    """Refuse a destination that holds a model of another architecture than `src`'s (config.json's
    `architectures`): `train.export MLM assets/mini-roberta-sst2` replaced the shipped classifier's weights and
    config, leaving its arms.json, baseline.json, phase and screen files beside a masked LM. A re-export (the
    same kind of model) still replaces the earlier one."""
    if not (dst / CONFIG_NAME).is_file():
        return
    ours, theirs = roberta.checkpoint.read_architecture(src), roberta.checkpoint.read_architecture(dst)
    if ours != theirs:
        raise ValueError(f"the destination {dst} holds a {theirs} model, not a {ours} like {src}: choose "
                         "another destination (an export only replaces a model of the same kind)")


def _exported(folder: Path) -> bool:
    """Whether folder/model.safetensors was written by `export` (its metadata names the stored dtype)."""
    try:
        with safe_open(folder / WEIGHTS_NAME, "pt") as f:
            return "stored_dtype" in (f.metadata() or {})
    except (OSError, SafetensorError):
        return False


# what a step checkpoint's metrics.json takes from its run: the run's init, data and model, as its metrics.json says
# (a finished run) or its options (one that did not finish), never a figure (the run's figures are of its end). A new
# RunMetrics field that describes the run goes here (tests/test_train_export.py places every field)
RUN_FIELDS = ("init", "init_root", "init_gave", "head_seed", "corpus", "corpus_sources", "masking", "max_length",
              "train_data", "train_examples", "train_rows", "parameters", "layer_lr_decay", "calibration_examples",
              "calibration_removed_train_rows", "hardware")
# ... and, from a finished run, the data its figures were measured on (an average of checkpoints scores on them)
RUN_EVALUATION_FIELDS = ("eval_data", "eval_seed", "dev_data", "dev_slice", "imdb_data", "imdb_seed", "imdb_examples",
                         "imdb_sample_removed_from_training")


def checkpoint_metrics(checkpoint: Path, run: Path, state: dict | None, run_metrics: RunMetrics | None,
                       classifier: bool, run_temperature: float | None = None) -> RunMetrics:
    """metrics.json of a model exported from `checkpoint` of `run`: the run's init, init_root and data (its
    metrics.json's), so that checkpoints of one run count as one initialisation and `train.average` scores and
    calibrates their average on the run's dev set and calibration slice; the checkpoint's own identity (`checkpoint`),
    step, tokens and training time; no figure (the run's are of its end). A classifier's temperature is 1.0: the
    run's (`run_temperature`) was fitted on the weights it kept. Of a run that did not finish (`run_metrics`
    None: a partial model), the data its checkpointed options name, and `init` the checkpoint's name, as before."""
    described = run_metrics.to_dict() if run_metrics else (state or {}).get("args", {})
    kept = RUN_FIELDS + (RUN_EVALUATION_FIELDS if run_metrics else ())
    step = Checkpoints.step_of(checkpoint)
    metrics = RunMetrics(train_steps=step, train_tokens=state["tokens"] if state else None,
                         train_time_s=round(state["elapsed"], 1) if state else None, kept_step=step,
                         **{k: described.get(k) for k in kept})
    if run_metrics is None:  # a partial model: named by the checkpoint, as it always was (the run's init is in
        metrics.init = f"checkpoint {checkpoint}"  # its `partial` note; averages and releases refuse it anyway)
    entry = {"run": str(run.resolve()), "step": step, "run_steps": run_metrics.train_steps if run_metrics else None,
             "command": run_metrics.command if run_metrics else None}
    if classifier:
        metrics.temperature = 1.0
        slice_ = (run_metrics.calibration or {}).get("slice") if run_metrics else None
        if slice_:  # not its figures: they are of the weights the run kept
            metrics.calibration = {"slice": slice_, "source": run_metrics.calibration.get("source")}
        checks = run_metrics.checks if run_metrics else None
        if checks and checks.get("source"):  # scored on the run's end: only which checks, at which threshold
            entry["checks"] = {"source": checks["source"], "unsure_below": checks.get("unsure_below")}
        was = f"the run's T = {run_temperature:.4g} was fitted on the weights it kept, not these" if \
            run_temperature not in (None, 1.0) else "the run fitted no temperature for these weights"
        refit = ("`python -m train.calibrate` on this folder fits one for them on the run's calibration slice" if slice_
                 else "`python -m train.calibrate` on this folder with --calibration-data fits one for them")
        entry["note"] = f"exported with calibration_temperature 1.0 (uncalibrated): {was}; {refit}"
    metrics.checkpoint = {k: v for k, v in entry.items() if v is not None}
    return metrics


def export_checkpoint(checkpoint: Path, dst: Path, dtype="float32", final: Path | None = None) -> Path:
    """RUN/checkpoints/step-00001000 (step 1,000) as a model folder: the checkpoint's weights with RUN's config (a
    classifier's temperature reset to 1.0) and tokenizer, a metrics.json (`checkpoint_metrics`) and a card; a partial
    one (metrics.json's PARTIAL entry, `stopped_by`) when RUN did not finish. The card's usage loads `final` (default
    `dst`: not a staged copy's name)."""
    run = checkpoint.parent.parent
    weights, state = Checkpoints.load(checkpoint)
    architecture = roberta.checkpoint.read_architecture(run)
    model = roberta.model_class(architecture)(roberta.load_config(run))
    model.load_state_dict(weights)  # strict: the checkpoint is of this run's model
    classifier = roberta.checkpoint.task_of(architecture) == "text-classification"
    run_temperature = model.config.calibration_temperature
    model.config.calibration_temperature = 1.0  # the run's T was fitted on the weights it kept, not on these
    dst.mkdir(parents=True, exist_ok=True)
    for name in FILES:
        (dst / name).unlink(missing_ok=True)
    model.save_pretrained(dst)
    for name in (TOKENIZER_NAME, "tokenizer_config.json"):
        if (run / name).is_file():
            shutil.copy2(run / name, dst / name)
    run_metrics = RunMetrics.read(run, missing_ok=True)  # None: the run did not finish
    described = run_metrics.to_dict() if run_metrics else (state or {}).get("args", {})
    metrics = checkpoint_metrics(checkpoint, run, state, run_metrics, classifier, run_temperature)
    step = metrics.train_steps
    if run_metrics is None and metrics.max_length is None:  # the option's default: rows as long as the model reads
        metrics.max_length = model.config.max_length
    recipe = {k: v for k, v in described.items() if v is not None and k not in NOT_RECIPE}
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
            "or score it (train.evaluate), but do not ship it: train.export, train.push and scripts.release refuse "
            "it")
        for name in ("log.jsonl", "curves.png"):  # its training, up to where it stopped
            if (run / name).is_file():
                shutil.copy2(run / name, dst / name)
        title, notes = f"Partial model: {checkpoint.name} of an unfinished run", metrics.extra[PARTIAL]
    else:
        of = f" of {run_metrics.train_steps:,}" if run_metrics.train_steps else ""
        title = f"Checkpoint: step {step:,} of a {'fine-tuning' if classifier else 'pretraining'} run"
        notes = (f"The weights of {checkpoint.name} of the run `{run}` (step {step:,}{of}, "
                 f"{metrics.train_tokens or 0:,} tokens), with its config and tokenizer: no evaluation of their own "
                 "(the run's metrics, card and curves describe its end). Its init and data are the run's, so "
                 "`train.average` takes checkpoints of one run as one initialisation and scores their average on the "
                 "run's data.")
        if classifier:
            notes += f" {metrics.checkpoint['note']}."
        recipe = {"command": run_metrics.command, "run": str(run), "step": step}
    extra = None
    if classifier:
        from .calibrate import calibration_markdown
        extra = [("Calibration", calibration_markdown(metrics.calibration))]
    write_model_card(dst, title=title, task=roberta.checkpoint.task_of(architecture), metrics=metrics, notes=notes,
                     recipe=recipe, extra_sections=extra, repo_id=str(final or dst))
    metrics.write(dst)
    return _store(*roberta.checkpoint.read_weights(dst / WEIGHTS_NAME), dst, dtype, final)


def _store(weights: dict, metadata: dict, dst: Path, dtype: str, final: Path | None = None) -> Path:
    """Write `weights` as dst/model.safetensors in `dtype` (and a missing tokenizer_config.json), then load the
    folder back (strictly). `final`: where the folder will be, which an error names (`dst` is its staged copy, a
    hidden sibling removed on the error). A file there that holds these tensors and metadata already (an earlier
    export's, copied into the staged folder) is kept as it is: a re-release that changes only a card leaves the
    weights' bytes as they were (the shipped files' headers order their metadata otherwise than `save_weights`: a
    26 MB change to git for the same weights)."""
    tensors = {k: v.to(DTYPES[dtype]).contiguous() for k, v in weights.items()}
    metadata = {**metadata, "format": "pt", "stored_dtype": dtype}
    if not _holds(dst / WEIGHTS_NAME, tensors, metadata):
        roberta.checkpoint.save_weights(tensors, dst / WEIGHTS_NAME, metadata)
    write_tokenizer_config(dst)
    try:
        roberta.auto_model(dst)  # a strict load: the copy is complete
    except (OSError, ValueError, RuntimeError, SafetensorError) as err:
        if final is None:
            raise
        raise UserError(f"{final}: the exported folder does not load back: "
                        f"{str(err).replace(str(dst), str(final))}") from None
    return dst


def _holds(path: Path, tensors: dict, metadata: dict) -> bool:
    """Whether the safetensors file `path` holds exactly `tensors` (names, dtypes, shapes and values, compared) and
    `metadata`; False when there is no such file or it cannot be read."""
    if not path.is_file():
        return False
    try:
        held, held_metadata = roberta.checkpoint.read_weights(path)
    except roberta.hub.ModelLoadError:  # truncated or corrupt: written anew
        return False
    return held_metadata == metadata and held.keys() == tensors.keys() and all(
        held[k].dtype == v.dtype and held[k].shape == v.shape and _same_bits(held[k], v) for k, v in tensors.items())


def _same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal bit for bit (torch.equal takes -0.0 for 0.0, so the kept file would differ from a fresh export)."""
    return torch.equal(a.contiguous().flatten().view(torch.uint8), b.contiguous().flatten().view(torch.uint8))


def write_tokenizer_config(folder: Path) -> None:
    """folder/tokenizer_config.json as `roberta.save_tokenizer` writes it, when the folder has tokenizer.json but
    not it (a run that did not write one): without it `transformers` reads tokenizer.json as a RobertaTokenizer,
    without its normalizer, and `train.push` refuses the folder. tokenizer.json is kept byte for byte
    (`train.average` compares its members' copies)."""
    if (folder / "tokenizer_config.json").is_file() or not (folder / TOKENIZER_NAME).is_file():
        return
    roberta.tokenizer.save_tokenizer_config(folder, roberta.load_config(folder).max_length)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m train.export", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("src", help="a finished run folder (train.pretrain / train.finetune output), or a step "
                               "checkpoint of one (RUN/checkpoints/step-00001000 for step 1,000)")
    p.add_argument("dst", help="the folder to write")
    p.add_argument("--dtype", choices=sorted(DTYPES), default="float16",
                   help="stored weight dtype (default: %(default)s)")
    args = p.parse_args(argv)
    try:
        dst = export(args.src, args.dst, args.dtype)
    except OSError as err:  # a full disk: the destination is as it was
        return report_user_error(with_how_to_go_on(err, args.dst, lambda: "run the same command again"))
    except (ValueError, UserError, SafetensorError) as err:  # UserError: an unreadable checkpoint
        return report_user_error(err)
    size = (dst / WEIGHTS_NAME).stat().st_size / 1e6
    print(f"wrote {dst} (model.safetensors {size:.1f} MB, {args.dtype})")
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(exit_code(main))
