"""The whole recipe with one command: tokenizer -> pretraining -> fine-tuning (pretrained and random init).

    python -m train.recipe --out runs/mini                              # the shipped recipe (80 min of pretraining)
    python -m train.recipe --out runs/quick --quick                      # a tiny version in well under a minute
    python -m train.recipe --out runs/mini ... --push-to-hub USER/mini-roberta

Folders written under OUT:
    tokenizer/        tokenizer.json (train.tokenizer)
    mlm/              the pretrained masked-LM model (train.pretrain), Hub-ready
    sst2/             fine-tuned from mlm/ (train.finetune), Hub-ready
    sst2-random/      the same fine-tuning from a random encoder: what pretraining buys
    results.json, results.md   the comparison

Running the same command again continues an interrupted recipe: finished steps (a folder with
metrics.json) are skipped, an interrupted one resumes from its checkpoint. Each step is the script's own
`main(argv)`, and the exact commands are printed, so any step can be rerun by hand.
--push-to-hub PREFIX uploads mlm/ to PREFIX-mlm and sst2/ to PREFIX-sst2 (train.push).
"""
from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path

from . import finetune, pretrain, tokenizer

QUICK_CORPUS = "../shared/data/wikitext-2/wiki.train.tokens"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m train.recipe", description=__doc__.split("\n\n")[0],
                                epilog=__doc__.split("\n\n", 1)[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="folder of the whole recipe")
    p.add_argument("--quick", action="store_true",
                   help="tiny model, small corpus slices, a few steps: checks the pipeline end to end")
    p.add_argument("--time-budget-min", type=float, default=80.0,
                   help="pretraining wall-clock budget in minutes (default: %(default)s; ignored with --quick)")
    p.add_argument("--tokenizer", default=None, help="use this tokenizer.json (or folder) instead of training one")
    p.add_argument("--corpus", default=None, help="pretraining corpus/mixture (default: train.pretrain's; "
                                                  f"with --quick {QUICK_CORPUS})")
    p.add_argument("--valid", default=pretrain.DEFAULT_VALID, help="held-out text (default: %(default)s)")
    p.add_argument("--train", default=finetune.DEFAULT_TRAIN, help="fine-tuning data (default: %(default)s)")
    p.add_argument("--dev", default=finetune.DEFAULT_DEV, help="dev set (default: %(default)s)")
    p.add_argument("--imdb", default=finetune.DEFAULT_IMDB, help="out-of-domain IMDB TSV, '' to skip "
                                                                 "(default: %(default)s)")
    p.add_argument("--seed", type=int, default=0, help="seed of every step (default: %(default)s)")
    p.add_argument("--precision", choices=["auto", "fp32", "bf16"], default="auto",
                   help="autocast of every step (default: %(default)s, see train.pretrain --help)")
    p.add_argument("--push-to-hub", metavar="PREFIX", default=None,
                   help="upload mlm/ as PREFIX-mlm and sst2/ as PREFIX-sst2")
    p.add_argument("--private", action="store_true", help="create the Hub repos private")
    return p


def plan(args) -> list[tuple[str, object, list[str], Path]]:
    """[(name, module, argv, folder)] of the recipe's steps."""
    out = Path(args.out)
    common = ["--seed", str(args.seed), "--precision", args.precision]
    if args.quick:
        corpus = args.corpus or QUICK_CORPUS
        tok_argv = ["--corpus", corpus, "--vocab-size", "1000", "--max-chars", "300000", "--eval-text", "",
                    "--quiet"]
        pre = ["--preset", "tiny", "--max-length", "64", "--corpus-chars", "200000", "--batch-size", "16",
               "--max-steps", "20", "--warmup", "4", "--lr", "2e-3", "--eval-every", "10", "--eval-rows", "32",
               "--final-eval-rows", "64", "--cache-dir", "", "--no-progress"]
        fine = ["--train-n", "2000", "--batch-size", "16", "--max-steps", "20", "--warmup", "0.1", "--lr", "1e-3",
                "--eval-every", "10", "--calibration-n", "50",
                "--imdb-n", "50", "--max-length", "64", "--no-progress"]
    else:
        corpus = args.corpus  # None: each script's default (train.tokenizer's, train.pretrain's mixture)
        tok_argv = ["--corpus", corpus] if corpus else []
        pre = ["--time-budget-min", f"{args.time_budget_min:g}"]
        fine = []
    tok_path = args.tokenizer or str(out / "tokenizer" / "tokenizer.json")
    data = ["--train", args.train, "--dev", args.dev, "--imdb", args.imdb]
    steps = []
    if args.tokenizer is None:
        steps.append(("tokenizer", tokenizer, [*tok_argv, "--seed", str(args.seed), "--out", str(out / "tokenizer")],
                      out / "tokenizer"))
    steps += [
        ("pretrain", pretrain, [*(["--corpus", corpus] if corpus else []), "--valid", args.valid, "--tokenizer", tok_path, *pre, *common,
                                "--out", str(out / "mlm"), "--resume"], out / "mlm"),
        ("finetune", finetune, ["--init", str(out / "mlm"), *data, *fine, *common, "--out", str(out / "sst2"),
                                "--resume"], out / "sst2"),
        ("finetune-random", finetune, ["--init", "random", "--tokenizer", tok_path,
                                       *(["--preset", "tiny", "--max-length", "64"] if args.quick else []),
                                       *data, *fine, *common, "--out", str(out / "sst2-random"), "--resume"],
         out / "sst2-random"),
    ]
    return steps


def _done(name: str, folder: Path) -> bool:
    marker = "tokenizer.json" if name == "tokenizer" else "metrics.json"
    return (folder / marker).is_file()


def summarize(out: Path) -> dict:
    """results.json / results.md: pretraining figures and the two classifiers side by side."""
    def load(name):
        path = out / name / "metrics.json"
        return json.loads(path.read_text()) if path.is_file() else {}

    mlm, pre, rnd = load("mlm"), load("sst2"), load("sst2-random")
    results = {
        "pretraining": {k: mlm.get(k) for k in ("eval_loss", "eval_accuracy", "eval_perplexity", "train_tokens",
                                                "train_steps", "train_time_s", "parameters", "stopped_by")},
        "sst2_dev_accuracy": {"pretrained": pre.get("dev_accuracy"), "random_init": rnd.get("dev_accuracy")},
        "imdb_accuracy": {"pretrained": pre.get("imdb_accuracy"), "random_init": rnd.get("imdb_accuracy")},
        "finetune_time_s": {"pretrained": pre.get("train_time_s"), "random_init": rnd.get("train_time_s")},
    }
    (out / "results.json").write_text(json.dumps(results, indent=2) + "\n")

    def fmt(v):
        return "-" if v is None else f"{v:.4f}" if isinstance(v, float) else f"{v:,}" if isinstance(v, int) else str(v)

    p = results["pretraining"]
    lines = ["# Results", "",
             f"Pretraining: {fmt(p['train_tokens'])} tokens, {fmt(p['train_steps'])} steps, "
             f"{fmt(p['train_time_s'])} s; held-out MLM loss {fmt(p['eval_loss'])}, accuracy "
             f"{fmt(p['eval_accuracy'])}, perplexity {fmt(p['eval_perplexity'])}.", "",
             "| classifier | SST-2 dev accuracy | IMDB accuracy (out of domain) |", "|---|---|---|"]
    for key, label in (("pretrained", "fine-tuned from the pretrained encoder"),
                       ("random_init", "same recipe, random encoder")):
        lines.append(f"| {label} | {fmt(results['sst2_dev_accuracy'][key])} | {fmt(results['imdb_accuracy'][key])} |")
    (out / "results.md").write_text("\n".join(lines) + "\n")
    return results


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.time()
    for name, module, step_argv, folder in plan(args):
        command = shlex.join(["python", "-m", module.__name__, *step_argv])
        if _done(name, folder):
            print(f"== {name}: already done ({folder})", flush=True)
            continue
        print(f"== {name}: {command}", flush=True)
        code = module.main(step_argv)
        if code != 0:
            print(f"error: step {name} failed (exit code {code}); fix it and run the same recipe command again "
                  "to continue", file=sys.stderr)
            return code
    results = summarize(out)
    print((out / "results.md").read_text(), end="")
    print(f"recipe done in {time.time() - started:.0f} s: {out}", flush=True)
    if args.push_to_hub:
        from .push import PushError, push_folder
        try:
            for folder, suffix in (("mlm", "-mlm"), ("sst2", "-sst2")):
                url = push_folder(out / folder, args.push_to_hub + suffix, private=args.private)
                print(f"pushed {out / folder} -> {url}", flush=True)
        except PushError as err:
            print(f"error: {err}", file=sys.stderr)
            return 1
    return 0 if results else 1


if __name__ == "__main__":
    raise SystemExit(main())
