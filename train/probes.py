"""Short pretraining probes from random weights (issue 11, part 1): which settings leave the MLM plateau first.

    python -m train.probes --dry-run                      # the probes and their commands, nothing run
    python -m train.probes --only reference lr-5e-4       # run some (resumable: finished probes are skipped)
    OMP_NUM_THREADS=1 python -m train.probes --only reference & OMP_NUM_THREADS=1 python -m train.probes --only lr-5e-4
    python -m train.probes --summarize-only               # table + figure of the probes finished so far

Every probe is `train.pretrain` from random weights on the same data (the default mixture, seed 0), with the
same token budget and a linear decay to zero at it, evaluated every --eval-every steps on the same held-out
rows (WikiText-2 valid in 64-token rows: positions 1-64 are trained by every probe, so the figures compare).
Each probe changes one thing from the reference. A probe has left the plateau at the first evaluation whose
held-out loss is below PLATEAU_EXIT_LOSS: the plateau is where a model that has only learned token
frequencies sits (held-out loss ~6.5-6.6, accuracy ~14%: "the", ",", "." everywhere); a loss of 6.0 is
reached only by using the context. Results: OUT/results.json, OUT/results.md and OUT/curves.png, copied to
--ship.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

from . import pretrain, tokenizer
from .experiment import run_steps, script, training
from .reporting import read_log

PLATEAU_EXIT_LOSS = 6.0
SHIPPED_TOKENIZER = "assets/mini-roberta-mlm"
# 1,024 tokens per optimizer step. The reference starts at the plateau (the unigram output bias): from a zero
# bias, AdamW moves each bias by ~lr per step, and log frequencies span ~10 nats, so a model needs thousands of
# steps only to reach the plateau (bias-zero measures it).
REFERENCE = dict(batch_size=16, max_length=64, lr=1e-3, warmup=0.1, output_bias="unigram")
PROBES = {  # name -> (what it changes, options changed from REFERENCE)
    "reference": ("batch 16 x 64-token rows, peak lr 1e-3, warmup 10%, unigram output bias", {}),
    "bias-zero": ("MLM output bias zero (the shipped phase 1's start)", {"output_bias": "zero"}),
    "lr-5e-4": ("peak lr 5e-4 (the shipped phases' lr)", {"lr": 5e-4}),
    "lr-2e-3": ("peak lr 2e-3", {"lr": 2e-3}),
    "warmup-0.3": ("warmup 30% of the probe", {"warmup": 0.3}),
    "mask-0.3": ("30% of tokens masked", {"mlm_probability": 0.3}),
    "batch-32x128": ("batch 32 x 128-token rows (4x the tokens per step: the shipped phase 1's shape was 64 x 128)",
                     {"batch_size": 32, "max_length": 128}),
    "vocab-16k": ("a 16,384-token vocabulary (tokenizer trained on the same corpus)", {"tokenizer": "VOCAB16K"}),
}


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m train.probes", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--only", nargs="+", choices=list(PROBES), help="run only these probes (default: all, in order)")
    p.add_argument("--token-budget", type=float, default=1e6, help="training tokens per probe (default: %(default)g)")
    p.add_argument("--eval-every", type=int, default=100, help="steps between evaluations (default: %(default)s)")
    p.add_argument("--eval-rows", type=int, default=256, help="held-out rows (default: %(default)s)")
    p.add_argument("--out", default="runs/probes", help="folder of the probes (default: %(default)s)")
    p.add_argument("--ship", default="assets/pretrain-probes", help="where the results are copied ('' = nowhere)")
    p.add_argument("--tokenizer", default=SHIPPED_TOKENIZER, help="the reference tokenizer (default: %(default)s)")
    p.add_argument("--corpus", default=pretrain.PRETRAIN_CORPUS, help="training text (default: the shipped mixture)")
    p.add_argument("--valid", default=pretrain.DEFAULT_VALID, help="held-out text (default: %(default)s)")
    p.add_argument("--eval-length", type=int, default=64, help="tokens per held-out row (default: %(default)s)")
    p.add_argument("--preset", default="mini", help="model preset (default: %(default)s)")
    p.add_argument("--precision", default=None, help="train.pretrain's --precision (default: its own)")
    p.add_argument("--cache-dir", default=None, help="train.pretrain's --cache-dir (default: its own)")
    p.add_argument("--dry-run", action="store_true", help="print the plan, run nothing")
    p.add_argument("--summarize-only", action="store_true", help="only write the results of finished probes")
    return p.parse_args(argv)


def plan(args) -> list:
    out = Path(args.out)
    vocab16k = out / "tokenizer-16k"
    steps = []
    names = args.only or list(PROBES)
    if "vocab-16k" in names:
        steps.append(script("tokenizer-16k", tokenizer, ["--corpus", args.corpus, "--vocab-size", "16384",
                                                          "--out", str(vocab16k)], vocab16k, marker="tokenizer.json"))
    for name in names:
        options = {**REFERENCE, "tokenizer": args.tokenizer, **PROBES[name][1]}
        if options["tokenizer"] == "VOCAB16K":
            options["tokenizer"] = str(vocab16k)
        steps.append(training(
            name, pretrain, corpus=args.corpus, valid=args.valid, preset=args.preset, dropout=0.0,
            token_budget=args.token_budget, eval_every=args.eval_every, eval_rows=args.eval_rows,
            eval_length=args.eval_length, final_eval_rows=args.eval_rows, precision=args.precision,
            cache_dir=args.cache_dir, save_every_min=5, seed=0, no_progress=True, out=str(out / name), **options))
    return steps


def plateau_exit(evals: list[dict]) -> dict | None:
    """The first evaluation below PLATEAU_EXIT_LOSS, or None."""
    return next((e for e in evals if e["loss"] < PLATEAU_EXIT_LOSS), None)


def summarize(out: Path) -> dict:
    results = {}
    for name, (what, _) in PROBES.items():
        folder = out / name
        if not (folder / "log.jsonl").is_file():
            continue
        evals = [e for e in read_log(folder / "log.jsonl") if e["type"] == "eval"]
        metrics = json.loads((folder / "metrics.json").read_text()) if (folder / "metrics.json").is_file() else {}
        exit_ = plateau_exit(evals)
        results[name] = {
            "what": what, "finished": bool(metrics),
            "curve": [{"tokens": e["tokens"], "step": e["step"], "loss": e["loss"],
                       "accuracy": e["accuracy"]} for e in evals],
            "plateau_exit": {"tokens": exit_["tokens"], "step": exit_["step"]} if exit_ else None,
            "final_loss": evals[-1]["loss"] if evals else None,
            "final_accuracy": evals[-1]["accuracy"] if evals else None,
            "tokens": metrics.get("train_tokens"), "train_time_s": metrics.get("train_time_s"),
            "command": metrics.get("command"),
        }
    return results


def markdown_table(results: dict) -> str:
    lines = ["| probe | changes | left the plateau at | held-out loss / accuracy at the end |",
             "|---|---|---|---|"]
    for name, r in results.items():
        exit_ = r["plateau_exit"]
        left = f"{exit_['tokens'] / 1e6:.2f}M tokens (step {exit_['step']:,})" if exit_ else "not within the probe"
        end = (f"{r['final_loss']:.2f} / {100 * r['final_accuracy']:.1f}%" if r["final_loss"] is not None else "")
        lines.append(f"| {name}{'' if r['finished'] else ' (unfinished)'} | {r['what']} | {left} | {end} |")
    return "\n".join(lines) + "\n"


def plot(results: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 4.2))
    loss_ax, acc_ax = fig.subplots(1, 2)
    for name, r in results.items():
        tokens = [p["tokens"] / 1e6 for p in r["curve"]]
        loss_ax.plot(tokens, [p["loss"] for p in r["curve"]], marker=".", label=name)
        acc_ax.plot(tokens, [100 * p["accuracy"] for p in r["curve"]], marker=".", label=name)
    loss_ax.axhline(PLATEAU_EXIT_LOSS, color="gray", lw=0.8, ls="--")
    loss_ax.set(xlabel="training tokens (millions)", ylabel="held-out MLM loss", title="Held-out loss (64-token rows)")
    acc_ax.set(xlabel="training tokens (millions)", ylabel="held-out accuracy (%)", title="Held-out accuracy")
    acc_ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None) -> int:
    args = parse_args(argv)
    out = Path(args.out)
    steps = plan(args)
    if args.dry_run:
        for step in steps:
            print(f"{step.name}: {step.command}")
        return 0
    if not args.summarize_only:
        code = run_steps(steps, rerun="python -m train.probes " + " ".join(argv if argv is not None else sys.argv[1:]))
        if code:
            return code
    results = summarize(out)
    if not results:
        print(f"no probe has started in {out} yet", file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    (out / "results.md").write_text(markdown_table(results))
    plot(results, out / "curves.png")
    print(markdown_table(results))
    if args.ship:
        ship = Path(args.ship)
        ship.mkdir(parents=True, exist_ok=True)
        for name in ("results.json", "results.md", "curves.png"):
            shutil.copy(out / name, ship / name)
        print(f"copied the results to {ship}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
