"""The masking ablation's results: every finished run's figures gathered into OUT/results.json (mean ± std over
seeds, paired differences to the dynamic arm, the paper's table beside them) with curves.png, both copied to
--ship, and the table printed."""
from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

from roberta.files import write_atomic
from roberta.run_metrics import RunMetrics

from .ablation_figure import plot
from .ablation_plan import INIT_KEY, recorded_init_sha256
from .ablation_setup import ARMS, BASELINE, corpus_path, recipe_of, run_dir, tokenizer_path
from .experiment import argv_of
from .reporting import read_log
from .summarize import mean_std


# Liu et al. 2019, RoBERTa, Table 1: BERT-base, medians over 5 random initialisations; "static" is BERT's
# recipe (data duplicated 10 times with different masks, 40 epochs: each mask seen 4 times).
PAPER = {
    "source": "Liu et al. 2019, RoBERTa: A Robustly Optimized BERT Pretraining Approach, Table 1",
    "model": "BERT-base (110M parameters) pretrained in BERT's setup on BookCorpus + Wikipedia",
    "note": "medians over 5 random initialisations; the reference row is BERT-base as reported by Yang et al. 2019",
    "metrics": {"squad2_f1": "SQuAD 2.0 F1", "mnli_m_accuracy": "MNLI-m accuracy", "sst2_accuracy": "SST-2 accuracy"},
    "rows": [
        {"masking": "reference", "squad2_f1": 76.3, "mnli_m_accuracy": 84.3, "sst2_accuracy": 92.8},
        {"masking": "static", "ours": "static-dupe10", "squad2_f1": 78.3, "mnli_m_accuracy": 84.3,
         "sst2_accuracy": 92.5},
        {"masking": "dynamic", "ours": "dynamic", "squad2_f1": 78.7, "mnli_m_accuracy": 84.0, "sst2_accuracy": 92.9},
    ],
}


def load_json(path: Path):
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def _columns(entries: list[dict], keys) -> dict:
    return {k: [e.get(k) for e in entries] for k in keys}


def run_record(folder: Path, arm: str) -> dict | None:
    """Per-seed figures of one arm (None until its pretraining and fine-tuning are both finished)."""

    sst2 = RunMetrics.read(folder / "sst2", missing_ok=True)
    if arm == BASELINE:
        return None if sst2 is None else {
            "sst2_accuracy": sst2.dev_accuracy, "sst2_examples": sst2.dev_examples,
            "finetune_time_s": sst2.wall_time_s, "commands": {"finetune": sst2.command}}
    mlm, probe = RunMetrics.read(folder / "mlm", missing_ok=True), load_json(folder / "probe.json")
    if mlm is None or sst2 is None or probe is None:
        return None
    log = read_log(folder / "mlm" / "log.jsonl")
    evals = [e for e in log if e["type"] == "eval"]
    train = [e for e in log if e["type"] == "train"]
    last_epoch = max(e["epoch"] for e in train)
    final_train = [e["loss"] for e in train if e["epoch"] == last_epoch]
    seen, fresh = probe["train_rows_seen_mask"], probe["train_rows_fresh_mask"]
    return {
        "mlm_loss": mlm.eval_loss, "mlm_accuracy": mlm.eval_accuracy, "mlm_perplexity": mlm.eval_perplexity,
        "mlm_eval_targets": mlm.eval_tokens, "min_eval_loss": min(e["loss"] for e in evals),
        "train_loss_last_epoch": sum(final_train) / len(final_train),
        "probe_seen_mask_loss": seen["loss"] if seen else None,
        "probe_fresh_mask_loss": fresh["loss"], "probe_rows": probe["rows"],
        "distinct_masks_per_row": probe["masks"]["distinct_per_row_mean"], "masks": probe["masks"],
        "sst2_accuracy": sst2.dev_accuracy, "sst2_examples": sst2.dev_examples,
        "train_tokens": mlm.train_tokens, "train_steps": mlm.train_steps, "train_rows": mlm.train_rows,
        "parameters": mlm.parameters, "pretrain_time_s": mlm.wall_time_s,
        "tokens_per_s": round(mlm.train_tokens / max(mlm.train_time_s, 1e-9), 1),
        "finetune_time_s": sst2.wall_time_s, "probe_time_s": probe["time_s"], "hardware": mlm.hardware,
        "eval_curve": _columns(evals, ("step", "tokens", "loss", "accuracy")),
        "train_curve": _columns(train, ("step", "tokens", "loss", "epoch")),
        "commands": {"pretrain": mlm.command, "finetune": sst2.command},
    }


SCALARS = ("mlm_loss", "mlm_accuracy", "mlm_perplexity", "min_eval_loss", "train_loss_last_epoch",
           "probe_seen_mask_loss", "probe_fresh_mask_loss", "distinct_masks_per_row", "sst2_accuracy",
           "train_tokens", "pretrain_time_s", "finetune_time_s", "tokens_per_s")


def summarize(args, steps: list[dict], corpus_info: dict | None, started_total: float) -> dict:
    out, recipe = Path(args.out), recipe_of(args)
    arms_out, hardware, commands = {}, None, [s.command for s in steps]
    for arm in [*args.arms, *([] if args.no_baseline else [BASELINE])]:
        per_seed = {}
        for seed in args.seeds:
            record = run_record(run_dir(out, arm, seed), arm)
            if record is not None:
                per_seed[str(seed)] = record
                hardware = hardware or record.get("hardware")
        label, masking, dupe = ARMS.get(arm, ("random init (no pretraining)", None, None))
        keys = ("sst2_accuracy", "finetune_time_s") if arm == BASELINE else SCALARS
        stats = {k: mean_std([r.get(k) for r in per_seed.values()]) for k in keys}
        arms_out[arm] = {"label": label, "masking": masking, "dupe_factor": dupe, "n": len(per_seed),
                         "seeds_done": sorted(int(s) for s in per_seed),
                         "mean": {k: v[0] for k, v in stats.items()}, "std": {k: v[1] for k, v in stats.items()},
                         "seeds": per_seed}
    if "dynamic" in arms_out:  # paired by seed: same init, data order and held-out mask as the dynamic run
        base = arms_out["dynamic"]["seeds"]
        for arm in args.arms:
            if arm == "dynamic":
                continue
            paired = {}
            for key in ("mlm_loss", "mlm_accuracy", "sst2_accuracy", "train_loss_last_epoch"):
                diffs = [r[key] - base[s][key] for s, r in arms_out[arm]["seeds"].items() if s in base]
                mean, std, n = mean_std(diffs)
                paired[key] = {"mean": mean, "std": std, "n": n}
            arms_out[arm]["minus_dynamic"] = paired
    pretrained = [r for a in args.arms for r in arms_out[a]["seeds"].values()]
    first = pretrained[0] if pretrained else {}
    expected = len(args.seeds) * (len(args.arms) + (0 if args.no_baseline else 1))
    done = sum(a["n"] for a in arms_out.values())
    wall = sum(r.get("pretrain_time_s", 0) + r.get("probe_time_s", 0) + r.get("finetune_time_s", 0)
               for a in arms_out.values() for r in a["seeds"].values())
    return {
        "issue": 6,
        "title": "Static vs dynamic masking (RoBERTa, Table 1) at our scale",
        "status": "complete" if done == expected else "partial",
        "runs_done": done, "runs_planned": expected,
        "arms": arms_out,
        "paper": PAPER,
        "setup": {
            "quick": args.quick,
            "corpus": corpus_info or {"file": str(corpus_path(args, recipe))},
            "valid": args.valid, "sst2_train": args.train, "sst2_dev": args.dev,
            "init": recipe["init"] or "random", INIT_KEY: recorded_init_sha256(args.out),
            "tokenizer": tokenizer_path(args), "seeds": args.seeds, "epochs": recipe["epochs"],
            "train_rows": first.get("train_rows"), "train_tokens_per_run": first.get("train_tokens"),
            "train_steps_per_run": first.get("train_steps"), "parameters": first.get("parameters"),
            "model_args": argv_of(recipe["model"]), "pretrain_args": argv_of(recipe["pretrain"]),
            "finetune_args": argv_of(recipe["finetune"]),
            "probe_rows": recipe["probe_rows"],
            "held_out": "final: every row of --valid under one fixed mask (train.pretrain's --eval-seed, the same "
                        "for every seed and arm: train.evaluate.held_out_mask + evaluate_masked); curves: the first "
                        "--eval-rows rows, same mask",
            "sst2": "dev accuracy of the last fine-tuning step (no checkpoint selection)",
            "spread": "std = sample standard deviation over seeds (None with one seed); minus_dynamic = "
                      "per-seed difference to the dynamic run of the same seed",
        },
        "hardware": hardware,
        "wall_time_s": round(wall, 1),
        "wall_time_s_note": "sum of every run's wall time (pretraining incl. evaluations, probe, fine-tuning)",
        "time_budget_min": args.time_budget_min,
        "command": getattr(args, "command", None),
        "commands": commands,
        "written": time.strftime("%Y-%m-%d %H:%M:%S"),
        "session_time_s": round(time.time() - started_total, 1),
    }


def write_results(args, steps, corpus_info, started) -> dict:
    out = Path(args.out)
    results = summarize(args, steps, corpus_info, started)
    write_atomic(out / "results.json", json.dumps(results, indent=1) + "\n")
    plot(results, out / "curves.png")
    if args.ship:
        ship = Path(args.ship)
        ship.mkdir(parents=True, exist_ok=True)
        for name in ("results.json", "curves.png"):
            shutil.copyfile(out / name, ship / name)
    return results


def print_table(results: dict) -> None:
    def cell(info, key, scale=1.0, digits=3):
        m, s = info["mean"].get(key), info["std"].get(key)
        if m is None:
            return "-"
        return f"{m * scale:.{digits}f}" + (f" ± {s * scale:.{digits}f}" if s is not None else "")

    print(f"{'arm':<32} {'n':>2}  {'MLM loss':>15}  {'MLM acc %':>13}  {'SST-2 acc %':>13}")
    for info in results["arms"].values():
        print(f"{info['label']:<32} {info['n']:>2}  {cell(info, 'mlm_loss'):>15}  "
              f"{cell(info, 'mlm_accuracy', 100, 1):>13}  {cell(info, 'sst2_accuracy', 100, 1):>13}")
