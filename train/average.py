"""Average the weights of fine-tuned classifiers (a uniform "model soup") into one Hub-ready folder.

    python -m train.average runs/sst2-s0 runs/sst2-s1 runs/sst2-s2 --out runs/sst2-avg
    python -m train.average assets/mini-roberta-mlm runs/mini-roberta-mlm-8 --out runs/mlm-avg   # masked LMs

Every weight of the result is the mean of the members' (in float32; Wortsman et al. 2022, "uniform soup").
Unlike an ensemble of logits this stays one model of the same size: `roberta.pipeline` and `transformers` load
it like any other folder, and it costs one forward pass. Averaging only makes sense for models fine-tuned
from the same starting weights (their metrics.json "init_root": the same pretrained folder, followed through
earlier fine-tuning stages; "init": the same folder each continued; "head_seed": a new classifier head drawn from
the same seed, where they record one; refused otherwise, --allow-different-init skips the check), with the same
architecture, labels and tokenizer (always checked). Step checkpoints exported with `train.export
RUN/checkpoints/step-00001000` carry their run's init_root, calibration slice and data: points along one run (with
--keep-checkpoints) are averaged, calibrated and scored as seeds are.

The result is then finished as `train.finetune` finishes a run: the temperature is refitted on the members'
calibration slice (they share it: `--calibration-seed` does not follow `--seed`; refused if their slices
differ, --no-calibration to skip), then dev accuracy and ECE (with reliability.png), the IMDB sample and the
behaviour checks, all on the data the members' metrics.json name (or --dev/--imdb/--checks), each read (or
refused) before any work. Members whose dev set is a slice held out of their training file (`train.finetune
--dev-fraction`, metrics.json's dev_slice) share it, as they share the calibration slice (refused if they differ:
one member's dev rows may be another's training rows), and the average is scored on it, drawn again. Writes
config.json, model.safetensors, tokenizer.json, metrics.json (with each member's figures; train_steps and
train_time_s are the training the members cost: their sum, a run counted once to its furthest member; hardware is the
machine that averaged and scored, member_hardware each member's), reliability.png, curves.png (the members' training
curves, each line labelled by its folder, the tokens it trained on and its machine: the average has none of its
own) and a model card.

Masked-LM members are pretraining phases of one lineage (a phase and its continuation, each `--init` from an
earlier one: their metrics.json cannot show it, so it is not checked). The result is scored on held-out text
(`--mlm-text`, default the members' eval_data) under `--mlm-seeds` fixed masks (seeds from `--mlm-seed`):
metrics.json holds the mean (`eval_*`) and each mask's accuracy (`mlm`), as `train.evaluate --mlm-seeds` does.
"""
from __future__ import annotations

import argparse
import re
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch

import roberta
from roberta.checkpoint import load_state_dict
from roberta.files import write_atomic
from roberta.hub import TOKENIZER_NAME
from roberta.run_metrics import RunMetrics, said_list

from .arguments import seed_value
from .evaluate import UNSURE_BELOW, check_expected_labels, check_unsure_below, path_shown_as, read_checks
from .exit_codes import with_how_to_go_on
from .export import partial_note
from .model_card import machine_of
from .out_folder import FINISHED_FILES, check_fresh_out
from .reporting import distinct_labels, plot_member_curves
from .runtime import (EXIT_OK, Dist, UserError, autocast, exit_code, hardware_info, naming, output_folder,
                      progress_bars, report_user_error, resolve_precision, shown_command)


class AverageError(ValueError):
    pass


def _metrics(folder: Path) -> dict:
    metrics = RunMetrics.read(folder, missing_ok=True)
    return metrics.to_dict() if metrics else {}


def check_members(folders: list[Path], allow_different_init: bool = False) -> list[dict]:
    """The members' metrics; raises AverageError naming the first thing that does not match."""
    if len(folders) < 2:
        raise AverageError("give at least two model folders to average")
    if len({folder.resolve() for folder in folders}) != len(folders):  # `run` and `x/../run` too
        raise AverageError("a folder is given twice")
    for folder in folders:
        check_member_files(folder)
    for folder in folders:  # its weights are where a run was cut, its metrics hold no final evaluation
        if note := partial_note(folder):
            raise AverageError(f"{folder} is a partial model, not a finished run to average: {note}")
    configs = [roberta.load_config(f) for f in folders]
    first = configs[0].to_dict()
    kinds = [roberta.checkpoint.read_architecture(f) for f in folders]
    for folder, config, kind in zip(folders[1:], configs[1:], kinds[1:]):
        if kind != kinds[0]:  # before the configs: a classifier's labels are not the difference that matters
            raise AverageError(f"{folder} is a {kind}, {folders[0]} a {kinds[0]}: average models of one kind")
        for key, value in config.to_dict().items():
            if key not in ("calibration_temperature", "hidden_dropout_prob", "attention_probs_dropout_prob",
                           "classifier_dropout") and value != first[key]:
                raise AverageError(f"{folder}: config {key} is {value!r}, {folders[0]} has {first[key]!r}")
        if ((folder / TOKENIZER_NAME).read_text(encoding="utf-8")
                != (folders[0] / TOKENIZER_NAME).read_text(encoding="utf-8")):
            raise AverageError(f"{folder}: tokenizer.json differs from {folders[0]}'s")
    metrics = [_metrics(f) for f in folders]
    roots = [m.get("init_root") or m.get("init") for m in metrics]
    if not allow_different_init:
        if any(r is None for r in roots):
            raise AverageError("a member's metrics.json does not say what it was fine-tuned from (init): "
                               "pass --allow-different-init to average anyway")
        if len(set(roots)) > 1:
            raise AverageError(f"the members start from different weights ({sorted(set(roots))}): averaging "
                               "only works for fine-tunings of the same initialisation (--allow-different-init "
                               "to force it)")
        check_one_start(metrics)
    return metrics


def check_one_start(metrics: list[dict]) -> None:
    """The members' fine-tuning started from the same weights, beyond their shared init_root: each continued the
    same folder (`init`: seeds that each continued an IMDB stage of their own start from different encoders and
    heads), and the new heads that train.finetune recorded were drawn from one --head-seed (heads from unrelated
    random weights do not match unit for unit, and their average cancels). A member that records no head seed (a
    run from before --head-seed) is not refused for it (`unknown_head_seeds`)."""
    inits = {m.get("init") for m in metrics} - {None}
    if len(inits) > 1:
        raise AverageError(f"the members were fine-tuned from different folders ({', '.join(sorted(inits))}), "
                           "so their encoders start from different weights: average seeds of one start "
                           "(train.sentiment_recipe --imdb-stage-seed K shares one IMDB stage), or pass "
                           "--allow-different-init")
    heads = sorted({m["head_seed"] for m in metrics if m.get("head_seed") is not None})
    if len(heads) > 1:
        raise AverageError(f"the members' classifier heads start from different random weights (--head-seed "
                           f"{said_list(heads)}): fine-tune the seeds with one --head-seed, or pass "
                           "--allow-different-init")


def unknown_head_seeds(metrics: list[dict]) -> bool:
    """Whether some member made a new head (fine-tuned from an encoder) without recording its seed: a run from
    before train.finetune's --head-seed, whose head was drawn from its --seed."""
    return any(m.get("init_gave") == "encoder" and m.get("head_seed") is None for m in metrics)


def check_member_files(folder: Path) -> None:
    """A member's model files, before anything is compared: its config, readable weights (the safetensors header
    and size: a truncated file is named) and tokenizer. A member without model.safetensors was reported as "the
    members do not share one calibration slice", one without tokenizer.json as a bare "[Errno 2] No such file"."""
    from safetensors import SafetensorError, safe_open

    if not folder.is_dir():
        raise AverageError(f"{folder}: no such model folder" if not folder.exists() else
                           f"{folder} is a file, not a model folder")
    roberta.load_config(folder)
    for file in roberta.checkpoint.weights_files(folder)[1]:
        try:
            with safe_open(file, framework="pt") as weights:
                weights.keys()
        except (SafetensorError, OSError) as err:
            raise AverageError(f"{file}: not a readable safetensors file (truncated or corrupt?): {err}") from None
    roberta.load_tokenizer(folder)


def hardware_records(members: list[dict], precision: str) -> dict:
    """metrics.json's hardware of an average: `hardware` the machine that made it, as a training run records its own
    (`hardware_info`): this one's CPU, where an average is made and scored (`precision`: its scoring's); and
    `member_hardware` the machines that trained the weights it averages, in order (`RunMetrics.trained_hardware`: an
    average among the members gives its own members' machines; None where a record names none). Its card names
    both, and never a member's GPU, or the machine that averaged a member, as the machine that made it."""
    trained = [hw for m in members for hw in RunMetrics.from_dict(m).trained_hardware()]
    return {"hardware": hardware_info(Dist(), precision), "member_hardware": trained}


def average_weights(folders: list[Path]) -> dict[str, torch.Tensor]:
    """The uniform mean of the members' state dicts (float32; integer tensors must be equal and are kept)."""
    total = None
    for folder in folders:
        state = load_state_dict(folder)
        if total is None:
            total = {k: v.float().clone() if v.is_floating_point() else v.clone() for k, v in state.items()}
            continue
        if state.keys() != total.keys():
            raise AverageError(f"{folder}: its weights {sorted(state.keys() ^ total.keys())[:5]} do not match")
        for key, value in state.items():
            if value.shape != total[key].shape:
                raise AverageError(f"{folder}: {key} has shape {tuple(value.shape)}, not {tuple(total[key].shape)}")
            if value.is_floating_point():
                total[key] += value.float()
            elif not torch.equal(value, total[key]):
                raise AverageError(f"{folder}: integer tensor {key} differs between members")
    return {k: v / len(folders) if v.is_floating_point() else v for k, v in total.items()}


def member_label(folder_label: str, metrics: dict) -> str:
    """A member's line in curves.png: its folder, and under it the tokens it trained on and the machine it trained
    on, where its metrics.json says ("gpu-4/mini-roberta-mlm" above "141.4M tokens on NVIDIA H200"): a folder name
    alone tells a reader of the Hub card nothing about which run was which."""
    record = RunMetrics.from_dict(metrics)
    machines = list(dict.fromkeys(filter(None, map(machine_of, record.trained_hardware()))))
    tokens = f"{record.train_tokens / 1e6:,.1f}M tokens" if isinstance(record.train_tokens, int) else ""
    said = " on ".join(filter(None, [tokens, said_list(machines)]))
    return f"{folder_label}\n{said}" if said else folder_label


def save_average(model, folders: list[Path], members: list[dict], out: Path) -> None:
    """The averaged model, the first member's tokenizer files, and curves.png of the members' training (the
    average has none of its own; a rerun into the same folder drops the old log and figure). `members`: the
    members' metrics, in the folders' order, for the figure's labels."""
    model.save_pretrained(out)
    for name in (TOKENIZER_NAME, "tokenizer_config.json"):
        if (folders[0] / name).is_file():
            shutil.copy2(folders[0] / name, out / name)
    for stale in ("log.jsonl", "curves.png"):
        (out / stale).unlink(missing_ok=True)
    labels = [member_label(label, m) for label, m in zip(distinct_labels(folders), members)]
    plot_member_curves([(label, f / "log.jsonl") for label, f in zip(labels, folders)], out / "curves.png")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m train.average", description=__doc__.split("\n\n")[0],
                                epilog=__doc__.split("\n\n", 1)[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("members", nargs="+", help="finished classifier folders (train.finetune output), or masked-LM "
                                              "folders (train.pretrain output)")
    p.add_argument("--out", required=True, help="the folder to write")
    p.add_argument("--allow-different-init", action="store_true",
                   help="average members fine-tuned from different weights (usually useless)")
    p.add_argument("--no-calibration", action="store_true", help="do not refit the temperature (T = 1)")
    p.add_argument("--dev", default=None, help="dev set (default: the members' dev_data, or the dev slice they held "
                                               "out of their training file: metrics.json dev_slice)")
    p.add_argument("--imdb", default=None, help="IMDB TSV, '' to skip (default: the members' imdb_data)")
    p.add_argument("--imdb-n", type=int, default=None, help="default: the members' imdb_examples")
    p.add_argument("--imdb-seed", type=seed_value, default=None, help="default: the members' imdb_seed")
    p.add_argument("--checks", default=None, help="behaviour checks TSV, '' to skip (default: the members')")
    p.add_argument("--unsure-below", type=float, default=None,
                   help=f"checks threshold (default: the members', else {UNSURE_BELOW})")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--no-progress", action="store_true",
                   help="no progress bars (else drawn on stderr when it is a terminal, over the scoring batches)")
    m = p.add_argument_group("masked-LM members")
    m.add_argument("--mlm-text", default=None, help="held-out text (default: the members' eval_data)")
    m.add_argument("--mlm-seeds", type=int, default=5, help="fixed masks to average over (default: %(default)s)")
    m.add_argument("--mlm-seed", type=seed_value, default=None,
                   help="the first mask's seed (default: the last member's eval_seed, else 0)")
    m.add_argument("--mlm-max-chars", type=int, default=0,
                   help="score only the held-out text's first N characters, as train.evaluate (default: 0, all)")
    m.add_argument("--precision", choices=["auto", "fp32", "bf16"], default="fp32",
                   help="autocast of the MLM scoring, as train.evaluate's (auto: bf16 on a CPU with native bf16, "
                        "else fp32); the figures written record it (default: %(default)s)")
    return p


def run_mlm(args, folders: list[Path], out: Path, started: float) -> dict:
    """The average of masked-LM members, scored on held-out text under several fixed masks."""
    from .arguments import command_line
    from .data import read_documents
    from .packing import pack_sequences
    from .evaluate import evaluate_mlm_masks, take_chars
    from .model_card import write_model_card

    members = check_members(folders, allow_different_init=True)  # each phase names its own --init
    if args.mlm_seeds < 1 or args.mlm_max_chars < 0:
        raise AverageError(f"--mlm-seeds must be at least 1 and --mlm-max-chars at least 0 (0 = all), got "
                           f"{args.mlm_seeds} and {args.mlm_max_chars}")
    last = members[-1]
    source = args.mlm_text or last.get("eval_data")
    if not source:
        raise AverageError("the members' metrics.json name no held-out text (eval_data): pass --mlm-text")
    seed = args.mlm_seed if args.mlm_seed is not None else last.get("eval_seed") or 0
    config = roberta.load_config(folders[0])
    model = roberta.RobertaForMaskedLM(config)
    model.load_state_dict(average_weights(folders))
    model.eval()
    tokenizer = roberta.load_tokenizer(folders[0])
    rows = pack_sequences(take_chars(read_documents(source), args.mlm_max_chars), tokenizer, config.max_length)
    cpu = torch.device("cpu")  # (the average is made and scored on the CPU)
    precision = resolve_precision(args.precision, cpu)
    with autocast(cpu, precision):
        result = evaluate_mlm_masks(model, tokenizer, rows, args.batch_size, seed, args.mlm_seeds,
                                    progress_bars(args.no_progress))
    start_writing(out)
    save_average(model, folders, members, out)
    metrics = {
        "eval_loss": result["loss"], "eval_accuracy": result["accuracy"], "eval_perplexity": result["perplexity"],
        "eval_tokens": result["tokens"], "eval_data": source, "eval_seed": seed,
        "mlm": {"source": source, "seed": seed, "max_length": config.max_length,
                **({"max_chars": args.mlm_max_chars} if args.mlm_max_chars else {}), "precision": precision,
                **result},
        "averaged": len(folders), "selection": "uniform average of the members' weights",
        "init": "weight average: " + ", ".join(map(str, folders)), "max_length": config.max_length,
        "corpus": last.get("corpus"), "corpus_sources": last.get("corpus_sources"), "masking": last.get("masking"),
        "train_steps": 0, "train_tokens": 0, "train_time_s": 0.0,
        "wall_time_s": round(time.time() - started, 1), **hardware_records(members, precision),
        "parameters": model.num_parameters(), "command": command_line("train.average", args._argv),
        "members": [{"folder": str(f), "eval_accuracy": m.get("eval_accuracy"), "eval_loss": m.get("eval_loss"),
                     "eval_seed": m.get("eval_seed"), "train_tokens": m.get("train_tokens"),
                     "command": m.get("command")} for f, m in zip(folders, members)],
    }
    RunMetrics.from_dict(metrics).write(out)
    masks = f"{args.mlm_seeds} fixed masks (seeds {seed}-{seed + args.mlm_seeds - 1})" if args.mlm_seeds > 1 else \
        f"one fixed mask (seed {seed})"
    first_chars = f" (its first {args.mlm_max_chars:,} characters)" if args.mlm_max_chars else ""
    write_model_card(out, title=f"Masked LM: weight average of {len(folders)} pretraining phases", task="fill-mask",
                     metrics=metrics, recipe={"command": metrics["command"], "members": [str(f) for f in folders]},
                     notes=f"The uniform average of the weights of {len(folders)} pretraining phases of one lineage "
                           f"(no training of its own). Held-out figures on `{source}`{first_chars}: the mean over "
                           f"{masks}.")
    return metrics


UNFINISHED = ".average-unfinished"  # in --out while an average is written: its re-run may replace what is there


def start_writing(out: Path) -> None:
    """Make --out, marked unfinished (UNFINISHED) until `run` is done with it."""
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / UNFINISHED, "train.average is writing this folder; it is finished when this file is gone\n")


def run(args) -> dict:
    """The average of `args.members` in `args.out`: an --out left by an average that was stopped half-way (it
    holds UNFINISHED) is written again; any other model or run there is refused."""
    out = output_folder(args.out)
    if (out / UNFINISHED).is_file():
        for name in (*FINISHED_FILES, "config.json", "reliability.png", "README.md"):
            (out / name).unlink(missing_ok=True)
    metrics = _run(args)
    (out / UNFINISHED).unlink(missing_ok=True)
    return metrics


def _run(args) -> dict:
    """`run`'s work: a masked-LM average (`run_mlm`), or a classifier average finished as `train.finetune` finishes
    a run, every input read or refused before --out is written."""
    from .finetune import write_card

    started = time.time()
    folders = [Path(m) for m in args.members]
    out = _fresh_out(args.out, folders)
    if roberta.checkpoint.read_architecture(folders[0]) == "RobertaForMaskedLM":
        return run_mlm(args, folders, out, started)
    members = check_members(folders, args.allow_different_init)
    config = roberta.load_config(folders[0])
    config.calibration_temperature = 1.0
    inputs = _read_inputs(args, members, config, out)
    model, tokenizer = _averaged_classifier(folders, config)
    start_writing(out)
    scores = _score(model, tokenizer, inputs, members, out, args)
    save_average(model, folders, members, out)
    runs = training_runs(folders, members)
    metrics = _classifier_metrics(model, folders, members, runs, inputs, scores, args, started)
    RunMetrics.from_dict(metrics).write(out)
    title, notes = _describe_members(folders, members, metrics, runs, config.id2label)
    write_card(out, metrics, {"command": metrics["command"], "members": [str(f) for f in folders]},
               title=title, notes=notes)
    return metrics


def _fresh_out(out_option: str, folders: list[Path]) -> Path:
    """--out, refused before any work when it is a file or a member; a finished run, a model, a run in progress
    or other files there are never overwritten (an average stopped half-way, UNFINISHED, left only its own files)."""
    out = output_folder(out_option)
    if out.resolve() in {f.resolve() for f in folders}:
        raise AverageError("--out must not be one of the members")
    check_fresh_out(out, [p.name for p in out.iterdir()] if (out / UNFINISHED).is_file() else ())
    return out


@dataclass
class _Inputs:
    """What a classifier average is scored on, every file read (or refused) before any work."""
    calibration_spec: dict | None
    calibration_rows: tuple | None
    dev_source: str | None
    dev_slice: dict | None  # the members' dev slice held out of their training file (then dev_source is None)
    dev: tuple | None
    imdb_source: str | None
    imdb_seed: int
    imdb_rows: tuple | None
    checks_path: Path | None
    unsure_below: float
    max_length: int


def _named(flag: str, given, key: str) -> str:
    """How an error names an input: its option when given, else the members' metrics.json entry it came from."""
    return flag if given is not None else f"{flag} (the members' {key})"


def _shared_calibration_slice(members: list[dict], out: Path, folders: list[Path]) -> dict:
    """The calibration slice every member's metrics.json names (calibration.slice); refused when they differ, naming
    each member's slice and, for a member a `train.calibrate --calibration-data` refit moved off its fine-tuning's
    own slice (kept as fine_tuning_slice), the command that fits it on that slice again."""
    slices = [(m.get("calibration") or {}).get("slice") for m in members]
    # the same rows by another path (relative, absolute, a copy) are one slice, as for the dev slice
    if slices[0] is not None and all(s is not None and not _slice_differences(s, slices[0]) for s in slices):
        return slices[0]
    calibrate = shown_command(["python", "-m", "train.calibrate", out, "--calibration-data", "FILE"])
    names = [str(f) for f in folders]
    said = "; ".join(f"{name}: {_slice_said(s)}" for name, s in zip(names, slices))
    back = [shown_command(["python", "-m", "train.calibrate", name, *_slice_options(own)])
            for name, m, spec in zip(names, members, slices)
            if (own := (m.get("calibration") or {}).get("fine_tuning_slice")) and own != spec]
    back_said = f"; or fit a member on its fine-tuning's own slice again: `{'`, `'.join(back)}`" if back else ""
    raise AverageError(f"the members do not share one calibration slice ({said}): pass --no-calibration, then "
                       f"`{calibrate}` with data none of them trained on{back_said}")


def _slice_said(spec: dict | None) -> str:
    """A calibration slice as the error of members that do not share one names it."""
    if not spec:
        return "none"
    if spec.get("split") == "all":
        return f"all of {spec.get('data')}"
    return f"{spec.get('n')} ({spec.get('split', 'sentences')}) of {spec.get('data')}, seed {spec.get('seed', 0)}"


def _slice_options(spec: dict) -> list[str]:
    """train.calibrate's options that draw the slice `spec` again."""
    return ["--calibration-data", str(spec["data"]), "--calibration-n", str(spec["n"]), "--calibration-split",
            spec.get("split", "sentences"), "--calibration-seed", str(spec.get("seed", 0))]


# what a dev slice records of its choice (train.finetune's options), as against what follows from them (its size, the
# training rows it removed) and its record of the file's rows
DEV_SLICE_CHOICES = ("data", "fraction", "seed", "split", "calibration_n", "calibration_seed", "text_column",
                     "label_column")


def _shared_dev_slice(members: list[dict], folders: list[Path]) -> dict | None:
    """The dev slice the members held out of their training file (metrics.json dev_slice, `train.finetune
    --dev-fraction`), None when their dev set is a file; refused when they differ, or when some hold one out and
    others read a file: one member's dev rows may be another's training rows. The error names the first member (of
    `folders`) that differs from the first, and how."""
    slices = [RunMetrics.from_dict(m).held_out_dev for m in members]
    if all(s is None for s in slices):
        return None
    first = folders[0]
    for folder, member, spec in zip(folders[1:], members[1:], slices[1:]):
        if spec is None or slices[0] is None:
            how = ", ".join(f"{name} {_dev_set_kind(held, metrics)}" for name, held, metrics
                            in ((folder, spec, member), (first, slices[0], members[0])))
        elif differences := _slice_differences(spec, slices[0]):
            rows = ", other rows" if _rows_differ(spec, slices[0]) else ""  # said beside "data"
            how = f"{folder}'s dev slice (metrics.json dev_slice) differs from {first}'s: " + ", ".join(
                f"{key} {spec.get(key)!r}{rows if key == 'data' else ''} ({first}: {slices[0].get(key)!r})"
                for key in differences)
        else:
            continue
        raise AverageError(f"the members do not share one dev set: {how}; one member's held-out dev rows may be "
                           "another's training rows; pass --dev with a file none of them trained on")
    return dict(slices[0])


def _dev_set_kind(held_out: dict | None, metrics: dict) -> str:
    """Whether a member holds its dev set out of its training file or reads a file, as `_shared_dev_slice` says."""
    if held_out:
        return "holds one out of its training file (dev_slice)"
    return f"reads its dev set from a file (metrics.json dev_data {metrics.get('dev_data')!r})"


def _rows_differ(spec: dict, first: dict) -> bool | None:
    """Whether two slices' files hold other rows, by the digest both record (a file named by another
    path, relative, absolute or a copy, is the same file when it holds the same rows); None where one records none."""
    digests = spec.get("data_sha256"), first.get("data_sha256")
    return None if None in digests else digests[0] != digests[1]


def _slice_differences(spec: dict, first: dict) -> list[str]:
    """The fields of two slices (dev or calibration) that differ: the choices that do (DEV_SLICE_CHOICES; the
    file's rows count as "data"), else every field that does. "data" by the digest of the file's rows where both
    record one."""
    rows_differ = _rows_differ(spec, first)
    differ = [key for key in {**first, **spec}
              if spec.get(key) != first.get(key) and not (key == "data" and rows_differ is False)]
    choices = [key for key in DEV_SLICE_CHOICES if key in differ or (key == "data" and rows_differ)]
    return choices or differ


def _read_inputs(args, members: list[dict], config, out: Path) -> _Inputs:
    """The options, else the first member's records, with every file read or refused before any work: a missing
    --checks file or an --imdb-n 0 failed after the weights were averaged and the temperature fitted, leaving --out
    marked unfinished with a reliability.png."""
    from . import imdb_sample, tables
    from .calibrate import held_out_slice
    from .finetune import held_out_dev
    from .recorded_columns import columns_for, columns_in_metrics

    ref, labels = members[0], config.id2label
    folders = [Path(member) for member in args.members]
    calibration_spec = None if args.no_calibration else _shared_calibration_slice(members, out, folders)
    ref_checks = ref.get("checks") or (ref.get("checkpoint") or {}).get("checks") or {}  # a checkpoint's: its run's
    dev_slice = None if args.dev is not None else _shared_dev_slice(members, folders)
    dev_source = args.dev if args.dev is not None else None if dev_slice else ref.get("dev_data")
    imdb_source = args.imdb if args.imdb is not None else ref.get("imdb_data")
    imdb_n = args.imdb_n if args.imdb_n is not None else ref.get("imdb_examples") or 1000
    imdb_seed = args.imdb_seed if args.imdb_seed is not None else ref.get("imdb_seed", 0)
    checks_source = args.checks if args.checks is not None else ref_checks.get("source")
    unsure_below = next((value for value in (args.unsure_below, ref_checks.get("unsure_below"))
                         if value is not None), UNSURE_BELOW)  # 0 is a threshold, not "not given"
    if imdb_source and imdb_n < 1:
        raise AverageError(f"{_named('--imdb-n', args.imdb_n, 'imdb_examples')} must be at least 1, got {imdb_n} "
                           "(--imdb '' skips the IMDB sample)")
    with naming("the members' calibration slice (metrics.json calibration.slice; --no-calibration to skip it)"):
        calibration_rows = held_out_slice(calibration_spec, labels) if calibration_spec else None
    if dev_slice:
        with naming("the members' dev slice (metrics.json dev_slice; --dev to score on a file instead)"):
            dev = held_out_dev(dev_slice, labels)
    else:
        with naming(_named("--dev", args.dev, "dev_data")):
            dev = tables.read_labeled(dev_source, *columns_for(dev_source, columns_in_metrics(ref)),
                                      label_names=labels, column_options=False,
                                      labels_fix="its labels must be the members'")[:2] if dev_source else None
    with naming(_named("--imdb", args.imdb, "imdb_data")):
        imdb_rows = imdb_sample.imdb_sample_as(imdb_source, imdb_n, imdb_seed, labels) if imdb_source else None
    checks_path = _checks_file(checks_source, args.checks, labels) if checks_source else None
    return _Inputs(calibration_spec, calibration_rows, dev_source, dev_slice, dev, imdb_source, imdb_seed, imdb_rows,
                   checks_path, unsure_below, ref.get("max_length") or config.max_length)


def _checks_file(checks_source: str, given, labels) -> Path:
    """The behaviour checks file (a member's records it relative to the project root), its labels the model's."""
    checks_path = path_shown_as(checks_source)  # a member's metrics.json records it relative to the project root
    with naming(_named("--checks", given, "checks file")):
        if checks_path is None:
            raise FileNotFoundError(f"{checks_source}: no such checks file ('' to skip the behaviour checks)")
        check_expected_labels(read_checks(checks_path), labels, checks_source)
    return checks_path


def _averaged_classifier(folders: list[Path], config):
    """The members' uniform weight average as a classifier ready to score, and the first member's tokenizer."""
    model = roberta.RobertaForSequenceClassification(config)
    model.load_state_dict(average_weights(folders))
    model.eval()
    return model, roberta.load_tokenizer(folders[0])


def _score(model, tokenizer, inputs: _Inputs, members: list[dict], out: Path, args) -> dict:
    """The average finished as `train.finetune` finishes a run (`train.evaluate.score_classifier`): its temperature
    fitted on the members' slice (with out/reliability.png), then dev, the IMDB sample and the behaviour checks; each
    None where it has no data."""
    from .calibrate import HELD_OUT
    from .evaluate import score_classifier
    from .finetune import dev_title

    ref = members[0]
    scored = score_classifier(model, tokenizer, inputs.calibration_rows, inputs.dev, inputs.imdb_rows,
                              inputs.checks_path, args.batch_size, inputs.max_length, inputs.unsure_below, out,
                              title=dev_title(inputs.dev_source, inputs.dev_slice), spec=inputs.calibration_spec,
                              progress=progress_bars(args.no_progress))
    if calibration := scored["calibration"]:
        calibration["slice"] = inputs.calibration_spec
        calibration["source"] = (ref.get("calibration") or {}).get("source", "the members' calibration slice")
        if not all((m.get("calibration") or {}).get(HELD_OUT, True) for m in members):
            calibration[HELD_OUT] = False  # a slice given to train.calibrate, not the one fine-tuning held out
    return scored


def _member_row(folder: Path, m: dict) -> dict:
    """A member's figures as the average's metrics.json lists them (a step checkpoint's with its run and step)."""
    point = m.get("checkpoint") or {}
    command = m.get("command") or point.get("command")
    return {"folder": str(folder), "seed": _seed(command or ""), "init": m.get("init"),
            **({"run": point["run"], "step": point.get("step")} if point.get("run") else {}),
            "dev_accuracy": m.get("dev_accuracy"), "imdb_accuracy": m.get("imdb_accuracy"),
            "imdb_accuracy_whole": m.get("imdb_accuracy_whole"),
            "dev_ece": m.get("dev_ece"), "temperature": m.get("temperature"), "train_steps": m.get("train_steps"),
            "train_time_s": m.get("train_time_s"), "command": command}


def _classifier_metrics(model, folders: list[Path], members: list[dict], runs: dict, inputs: _Inputs, scores: dict,
                        args, started: float) -> dict:
    """The average's metrics.json: its scores, the first member's data and recipe, and every member's figures."""
    from .arguments import command_line

    ref, calibration, dev, imdb = members[0], scores["calibration"], scores["dev"], scores["imdb"]
    head_seeds = {m.get("head_seed") for m in members}  # one, recorded by every member: the average's too
    metrics = {
        "dev_accuracy": dev["accuracy"] if dev else None,
        "dev_examples": dev["n"] if dev else 0, "dev_data": inputs.dev_source, "dev_slice": inputs.dev_slice,
        "dev_ece": dev["ece"] if dev else None,
        "dev_ece_uncalibrated": calibration["dev"]["ece_before"] if calibration and "dev" in calibration else None,
        "temperature": model.config.calibration_temperature,
        "imdb_accuracy": imdb["accuracy"] if imdb else None, "imdb_examples": imdb["n"] if imdb else None,
        "imdb_accuracy_whole": imdb["accuracy_whole"] if imdb else None,
        "imdb_data": inputs.imdb_source or None, "imdb_seed": inputs.imdb_seed if inputs.imdb_source else None,
        "imdb_sample_removed_from_training": (ref.get("imdb_sample_removed_from_training")
                                              if inputs.imdb_source else None),
        "averaged": len(folders), "selection": "uniform average of the members' kept weights",
        "init": ref.get("init") if len({m.get("init") for m in members}) == 1 else "several (see members)",
        "init_root": ref.get("init_root") or ref.get("init"), "init_gave": ref.get("init_gave"),
        **({"head_seed": head_seeds.pop()} if len(head_seeds) == 1 and None not in head_seeds else {}),
        "train_data": ref.get("train_data"), "train_examples": ref.get("train_examples"),
        "calibration_examples": ref.get("calibration_examples"), "max_length": inputs.max_length,
        # the training the members cost (as train_time_s): a run counted once, to its furthest member
        "train_steps": sum(steps for steps, _ in runs.values()),
        "train_time_s": round(sum(seconds for _, seconds in runs.values()), 1),
        "wall_time_s": round(time.time() - started, 1),
        **hardware_records(members, "fp32"),  # calibration and scoring run in float32 (no autocast)
        "parameters": model.num_parameters(),
        "command": command_line("train.average", args._argv),
        "members": [_member_row(f, m) for f, m in zip(folders, members)],
    }
    if calibration:
        metrics["calibration"] = calibration
    if scores["checks"]:
        metrics["checks"] = scores["checks"]
    return metrics


def _run_of(folder: Path, metrics: dict) -> Path:
    """The training run a member's weights come from: the run of a step checkpoint (train.export), else itself."""
    return Path((metrics.get("checkpoint") or {}).get("run") or folder).resolve()


def training_runs(folders: list[Path], members: list[dict]) -> dict[Path, tuple[int, float]]:
    """{run: (steps, seconds)} of the training the members cost: each run once, as far as its furthest member (a
    run and its checkpoints, or checkpoints of one run, share their first steps: summed, those counted twice)."""
    runs: dict[Path, tuple[int, float]] = {}
    for folder, m in zip(folders, members):
        run = _run_of(folder, m)
        steps, seconds = runs.get(run, (0, 0.0))
        runs[run] = (max(steps, m.get("train_steps") or 0), max(seconds, m.get("train_time_s") or 0.0))
    return runs


def _describe_members(folders: list[Path], members: list[dict], metrics: dict, runs: dict,
                      id2label: dict | None = None) -> tuple[str, str]:
    """The average's card title and notes: seeds of one recipe, or points along one run (checkpoints exported
    with train.export), or a mix; titled by the labels (`model_card.classifier_title`; none given: the shipped
    one's, a sentiment classifier). A member's IMDB figure is listed only where some member has one."""
    from .finetune import kept_weights
    from .model_card import classifier_title

    kind = classifier_title(id2label) if id2label else "Sentiment classifier"
    imdb = any(row.get("imdb_accuracy") is not None for row in metrics["members"])

    def member_line(row):
        point = f" (step {row['step']:,} of `{row['run']}`)" if row.get("run") else ""
        imdb_said = f", IMDB {_pct(row['imdb_accuracy'])}" if imdb else ""
        return f"- `{row['folder']}`{point}: dev accuracy {_pct(row['dev_accuracy'])}{imdb_said}"

    lines = "\n".join(member_line(r) for r in metrics["members"])
    cost = ("train_steps and train_time_s are the training of the members, each run counted once to its furthest "
            "member")
    if len(runs) == 1:  # points along one run: its checkpoints, perhaps its end too
        steps = ", ".join(f"{m.get('train_steps') or 0:,}" for m in members)
        notes = (f"The uniform average of the weights of {len(folders)} points along one fine-tuning run "
                 f"`{next(iter(runs))}`, at steps {steps} ({cost}); the dev set chose no checkpoint and no member. "
                 f"{_start(metrics['members'], metrics['init_root'], one_run=True)}")
        return f"{kind}: weight average of {len(folders)} points of one fine-tuning run", f"{notes}\n\n{lines}"
    kept = {"the weights of a step checkpoint of its run" if m.get("checkpoint") else
            kept_weights(m.get("selection"), m.get("kept_step")) for m in members}
    kept = (f"each member kept {kept.pop()}" if len(kept) == 1 else
            "the members kept different weights (their metrics.json say which)")
    seeds = [r.get("seed") for r in metrics["members"]]
    what = (f"with the same recipe and different seeds, {said_list(seeds)}" if len(runs) == len(folders) else
            f"in {len(runs)} runs (some members are step checkpoints of one run)")
    notes = (f"The uniform average of the weights of {len(folders)} classifiers fine-tuned {what} ({cost}); "
             f"{kept}; the dev set chose no checkpoint and no member. "
             f"{_start(metrics['members'], metrics['init_root'])}")
    if unknown_head_seeds(members):
        notes += (" Not every member's metrics.json records the seed of its new classifier head (runs from before "
                  "train.finetune's --head-seed drew it from --seed): whether their heads started from the same "
                  "weights is unknown, and heads from different ones average poorly.")
    return f"{kind}: weight average of {len(folders)} fine-tuning runs", f"{notes}\n\n{lines}"


def _start(rows: list[dict], root, one_run: bool = False) -> str:
    """The card's sentence on where the members' fine-tuning started, from their rows' `init` (each one's --init) and
    the average's init_root: one earlier fine-tuning stage that they all continue (then that stage is shared and only
    their own stage's seed differs: the shared start is why averaging their weights works), one pretrained encoder,
    or several starts. For points along one run (`one_run`), where that run started."""
    inits = {r.get("init") for r in rows}
    who = "The run" if one_run else "Both" if len(rows) == 2 else f"All {len(rows)}"
    if len(inits) > 1:
        known = sorted(str(i) for i in inits if i)
        unsaid = "; not every member's metrics.json says its own" if None in inits else ""
        return f"They come from {len(inits)} different starts ({said_list(known, '`')}{unsaid})."
    init = inits.pop() if inits else None
    if not init and not root:
        return "No member's metrics.json records where its fine-tuning started."
    if not init or init == root:
        return f"{who} {'started' if one_run else 'start'} from `{root}`."
    # a classifier of an earlier stage (train.finetune's init_root follows those back to where they started)
    stage = f"one earlier fine-tuning stage, `{init}` (whose fine-tuning started from `{root}`)"
    if one_run:
        return f"The run continues {stage}."
    return f"{who} continue {stage}: that stage is shared, and only their own stage's seed differs."


def _seed(command: str) -> int:
    found = re.search(r"--seed[ =](\d+)", command or "")
    return int(found.group(1)) if found else 0


def _pct(value) -> str:
    return "-" if value is None else f"{value:.1%}"


def main(argv=None) -> int:
    p = build_parser()
    args = p.parse_args(argv)
    if args.batch_size < 1:
        p.error(f"--batch-size must be at least 1, got {args.batch_size}")
    if args.unsure_below is not None:
        try:
            check_unsure_below(args.unsure_below)
        except ValueError as err:
            p.error(str(err))
    args._argv = list(sys.argv[1:] if argv is None else argv)
    try:
        metrics = run(args)
    except OSError as err:  # a full disk: --out is marked unfinished, and written again by the same command
        return report_user_error(with_how_to_go_on(err, args.out, lambda: "run the same command again"))
    except (ValueError, KeyError, UserError) as err:
        return report_user_error(err)
    if "mlm" in metrics:
        print(f"averaged {metrics['averaged']} masked LMs: held-out accuracy {_pct(metrics['eval_accuracy'])}, loss "
              f"{metrics['eval_loss']:.4f} (mean of {metrics['mlm'].get('masks', 1)} masks); wrote {args.out}")
        return EXIT_OK
    shown = [f"dev accuracy {_pct(metrics['dev_accuracy'])}"]
    if metrics["imdb_accuracy"] is not None:
        shown.append(f"IMDB {_pct(metrics['imdb_accuracy'])} (whole reviews {_pct(metrics['imdb_accuracy_whole'])})")
    if metrics.get("calibration"):
        shown.append(f"T {metrics['temperature']:.3f}, dev ECE {_pct(metrics['dev_ece'])}")
    print(f"averaged {metrics['averaged']} models: {', '.join(shown)}; wrote {args.out}")
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(exit_code(main))
