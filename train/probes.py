"""Short pretraining probes from random weights (issue 11, part 1): which settings leave the MLM plateau first.

    python -m train.probes --dry-run                      # the probes and their commands, nothing run
    python -m train.probes --only reference lr-5e-4       # run some (resumable: finished probes are skipped)
    OMP_NUM_THREADS=1 python -m train.probes --only reference & OMP_NUM_THREADS=1 python -m train.probes --only lr-5e-4
    python -m train.probes --summarize-only               # table + figure of the probes finished so far
    python -m train.probes --redraw                       # the shipped figure again, from the shipped results.json

Every probe is `train.pretrain` from random weights on the same data (the default mixture, seed 0), with the
same token budget and a linear decay to zero at it, evaluated every --eval-every steps on the same held-out
rows (WikiText-2 valid in 64-token rows: positions 1-64 are trained by every probe, so the figures compare).
Each probe changes one thing from the reference. Two milestones per probe, read from its held-out curve:
- "below the unigram model": the first evaluation at least UNIGRAM_MARGIN nats below the loss of a model that
  knows only token frequencies (the probe's step-0 loss: its output bias is the log unigram frequencies of
  its tokens, ~7.6 with the shipped 32k vocabulary; bias-zero is measured from the reference's), i.e. the model
  has started to use the context;
- "left the plateau": the first evaluation below PLATEAU_EXIT_LOSS. The plateau is where the shipped phase 1
  sat for 35M tokens (held-out loss 6.5-6.6 in 128-token rows, accuracy ~14%); below 6.0 a model uses the
  context well beyond its neighbouring tokens (phase 2 ended at 5.95).
Results: OUT/results.json, OUT/results.md and OUT/curves.png, copied to --ship.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

from roberta.files import write_atomic
from roberta.run_metrics import RunMetrics

from . import pretrain, tokenizer
from .experiment import run_steps, script, training
from .recipe import SHIPPED_TOKENIZER
from .reporting import line_style, read_log, redraw_record, save_figure
from .runtime import exit_code, report_user_error, shown_command

SHIP = "assets/pretrain-probes"  # where the probes' results go: docs/pretraining.md shows them
PLATEAU_EXIT_LOSS = 6.0
UNIGRAM_MARGIN = 0.3
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
    "vocab-16k": ("a 16,384-token vocabulary (tokenizer trained on the same corpus; its losses and accuracies "
                  "count other tokens, so compare its milestones)", {"tokenizer": "VOCAB16K"}),
}


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m train.probes", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--only", nargs="+", choices=list(PROBES), help="run only these probes (default: all, in order)")
    p.add_argument("--token-budget", type=float, default=1e6, help="training tokens per probe (default: %(default)g)")
    p.add_argument("--eval-every", type=int, default=100, help="steps between evaluations (default: %(default)s)")
    p.add_argument("--eval-rows", type=int, default=256, help="held-out rows (default: %(default)s)")
    p.add_argument("--out", default="runs/probes", help="folder of the probes (default: %(default)s)")
    p.add_argument("--ship", default=SHIP,
                   help="where the results are copied ('' = nowhere; default: %(default)s, which the README shows)")
    p.add_argument("--tokenizer", default=SHIPPED_TOKENIZER, help="the reference tokenizer (default: %(default)s)")
    p.add_argument("--corpus", default=pretrain.PRETRAIN_CORPUS, help="training text (default: the shipped mixture)")
    p.add_argument("--valid", default=pretrain.DEFAULT_VALID, help="held-out text (default: %(default)s)")
    p.add_argument("--eval-length", type=int, default=64, help="tokens per held-out row (default: %(default)s)")
    p.add_argument("--preset", default="mini", help="model preset (default: %(default)s)")
    p.add_argument("--precision", choices=["auto", "fp32", "bf16"], default=None,
                   help="train.pretrain's --precision (default: its own)")
    p.add_argument("--cache-dir", default=None, help="train.pretrain's --cache-dir (default: its own)")
    p.add_argument("--dry-run", action="store_true", help="print the plan, run nothing")
    p.add_argument("--summarize-only", action="store_true", help="only write the results of finished probes")
    p.add_argument("--redraw", nargs="?", const=SHIP, metavar="FOLDER",
                   help="run nothing, read no probe: draw FOLDER/curves.png again from FOLDER/results.json (shipped "
                        "results whose probes are gone, after the figure's look changed) (FOLDER default: %(const)s)")
    args = p.parse_args(argv)
    if not args.token_budget > 0:  # once, not by train.pretrain for each probe
        p.error(f"--token-budget must be positive, got {args.token_budget:g}")
    return args


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


def first_below(evals: list[dict], loss: float | None) -> dict | None:
    """The first evaluation whose held-out loss is below `loss`, or None."""
    if loss is None:
        return None
    return next((e for e in evals if e["loss"] < loss), None)


def plateau_exit(evals: list[dict]) -> dict | None:
    return first_below(evals, PLATEAU_EXIT_LOSS)


def _milestone(e: dict | None) -> dict | None:
    return {"tokens": e["tokens"], "step": e["step"]} if e else None


def summarize(out: Path) -> dict:
    """{probe: its curve, milestones, end figures}; the unigram model's loss is the probe's first evaluation
    (its output bias is the log unigram frequencies of its own tokens), the reference's for bias-zero."""
    logs = {name: [e for e in read_log(out / name / "log.jsonl") if e["type"] == "eval"]
            for name in PROBES if (out / name / "log.jsonl").is_file()}

    def start_loss(evals):
        return evals[0]["loss"] if evals and evals[0]["step"] == 0 else None

    results = {}
    for name, evals in logs.items():
        metrics = RunMetrics.read(out / name, missing_ok=True)
        starts_at_unigram = {**REFERENCE, **PROBES[name][1]}["output_bias"] == "unigram"
        unigram_loss = start_loss(evals if starts_at_unigram else logs.get("reference"))
        margin = unigram_loss - UNIGRAM_MARGIN if unigram_loss is not None else None
        results[name] = {
            "what": PROBES[name][0], "finished": metrics is not None,
            "curve": [{"tokens": e["tokens"], "step": e["step"], "loss": e["loss"],
                       "accuracy": e["accuracy"]} for e in evals],
            "unigram_loss": unigram_loss,
            "below_unigram": _milestone(first_below(evals, margin)),
            "plateau_exit": _milestone(plateau_exit(evals)),
            "final_loss": evals[-1]["loss"] if evals else None,
            "final_accuracy": evals[-1]["accuracy"] if evals else None,
            "tokens": metrics and metrics.train_tokens, "train_time_s": metrics and metrics.train_time_s,
            "command": metrics and metrics.command,
        }
    return results


def markdown_table(results: dict) -> str:
    def at(milestone):
        return f"{milestone['tokens'] / 1e6:.2f}M (step {milestone['step']:,})" if milestone else "not within the probe"

    lines = [f"| probe | changes | {UNIGRAM_MARGIN} below the unigram model at "
             f"| left the plateau (< {PLATEAU_EXIT_LOSS}) at | held-out loss / accuracy at the end |",
             "|---|---|---|---|---|"]
    for name, r in results.items():
        end = f"{r['final_loss']:.2f} / {100 * r['final_accuracy']:.1f}%" if r["final_loss"] is not None else ""
        # without its unigram loss (bias-zero run without the reference probe) the milestone was never looked for
        below = at(r["below_unigram"]) if r["unigram_loss"] is not None else "not measured (run the reference probe)"
        lines.append(f"| {name}{'' if r['finished'] else ' (unfinished)'} | {r['what']} | {below} "
                     f"| {at(r['plateau_exit'])} | {end} |")
    return "\n".join(lines) + "\n"


def plot(results: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 4.2))
    loss_ax, acc_ax = fig.subplots(1, 2)
    for i, (name, r) in enumerate(results.items()):
        tokens = [p["tokens"] / 1e6 for p in r["curve"]]
        style = line_style(i)  # the conclusions rest on telling the 8 probes apart, colour-blind readers too
        loss_ax.plot(tokens, [p["loss"] for p in r["curve"]], ms=4, lw=1.2, label=name, **style)
        acc_ax.plot(tokens, [100 * p["accuracy"] for p in r["curve"]], ms=4, lw=1.2, label=name, **style)
    loss_ax.axhline(PLATEAU_EXIT_LOSS, color="gray", lw=0.8, ls="--", label="left the plateau")
    unigram = (results.get("reference") or {}).get("unigram_loss")
    if unigram is not None:
        loss_ax.axhline(unigram, color="gray", lw=0.8, ls=":", label="unigram model")
        loss_ax.legend(fontsize=8)
    loss_ax.set(xlabel="training tokens (millions)", ylabel="held-out MLM loss", title="Held-out loss (64-token rows)")
    acc_ax.set(xlabel="training tokens (millions)", ylabel="held-out accuracy (%)", title="Held-out accuracy")
    acc_ax.legend(fontsize=8)
    save_figure(fig, path, dpi=110)


def redraw(folder) -> Path:
    """FOLDER/curves.png drawn again from the FOLDER/results.json that `main` wrote (or shipped)."""
    return redraw_record(Path(folder) / "results.json", lambda r: all(isinstance(p, dict) and "curve" in p
                                                                      for p in r.values()),
                         "a results.json that train.probes wrote (probes and their curves)", plot,
                         Path(folder) / "curves.png")


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.redraw is not None:
        try:
            print(f"drew {redraw(args.redraw)} again")
        except (OSError, ValueError) as err:
            return report_user_error(err)
        return 0
    out = Path(args.out)
    steps = plan(args)
    if args.dry_run:
        for step in steps:
            print(f"{step.name}: {step.shown}")
        return 0
    if not args.summarize_only:
        rerun = shown_command(["python", "-m", "train.probes", *(argv if argv is not None else sys.argv[1:])])
        code = run_steps(steps, rerun=rerun)
        if code:
            return code
    results = summarize(out)
    if not results:
        print(f"no probe has started in {out} yet", file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / "results.json", json.dumps(results, indent=1) + "\n")
    write_atomic(out / "results.md", markdown_table(results))
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
    raise SystemExit(exit_code(main))
