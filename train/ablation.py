"""Static vs dynamic masking at our scale (issue 6): RoBERTa's Table 1 with our code, in one command.

    python -m train.ablation                          # everything (~2 h on 2 CPU cores): runs/ablation,
                                                      # results shipped to assets/masking-ablation
    python -m train.ablation --dry-run                # the plan and every command, nothing run
    python -m train.ablation --quick --out /tmp/abl   # tiny, about a minute; ships nowhere unless --ship DIR
    python -m train.ablation --seeds 0 1 2 3 4        # more seeds later: finished runs are kept
    python -m train.ablation --summarize-only         # results from the runs finished so far (partial)

Arms. Everything is the same in every arm (warm start, corpus, token budget, seeds, tokenizer, held-out
evaluation, fine-tuning) except how the training rows are masked (`roberta.masking`):
    dynamic          RoBERTa: a fresh mask every time a row is fed to the model
    static-dupe1     one fixed mask per row, seen again in every epoch
    static-dupe10    BERT: 10 fixed masks per row, cycled over epochs (the paper's "static" row)
Seed s is the same for the three arms: same starting weights, same order of the rows, same held-out mask.

Shared warm start: every arm continues pretraining from one MLM model already off the early MLM plateau
(--init, default: the shipped assets/mini-roberta-mlm; the shipped results began from phase 2, what it held
then: docs/masking-ablation.md); `--init none` runs the arms from random weights.
Per arm x seed: `train.pretrain --init` (dropout 0, --epochs passes over a fixed slice of WikiText-2 train),
a mask probe (MLM loss on training rows under the trained-on and under fresh masks), and `train.finetune`
on SST-2; plus the same fine-tuning from a random encoder per seed (--no-baseline). Then OUT/results.json
and OUT/curves.png, copied to --ship. Resumable: run the same command again (finished steps are skipped,
an interrupted one resumes; OUT/plan.json refuses changes that would make runs incomparable).

Why these settings, the budget arithmetic and the measurements behind them: docs/training-notes.md.
"""
# The ablation's parts: ablation_setup (arms, recipes, run folders), ablation_plan (the steps, plan.json, the
# corpus slice), ablation_probe (the mask probe), ablation_results and ablation_figure (results.json, curves.png)
from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch

from roberta.run_metrics import RunMetrics

from . import finetune, pretrain
from .ablation_plan import check_plan, plan, slice_corpus, weights_sha256
from .ablation_results import load_json, print_table, write_results
from .ablation_setup import ARMS, FULL, QUICK, corpus_path, recipe_of
from .arguments import command_line, script_parser, seed_value
from .experiment import run_steps
from . import paths
from .runtime import EXIT_FAILED, EXIT_OK, USER_ERRORS, UserError, exit_code, output_folder, report_user_error


WIKITEXT_TRAIN = paths.WIKITEXT_TRAIN

SHIP = "assets/masking-ablation"  # where the full ablation's results go: the app and README show them


def build_parser() -> argparse.ArgumentParser:
    p = script_parser("train.ablation", __doc__)
    p.add_argument("--out", default="runs/ablation", help="folder of the whole ablation (default: %(default)s)")
    p.add_argument("--ship", default=None,
                   help=f"copy results.json and curves.png here when done, '' = do not (default: {SHIP}; with "
                        "--quick, nowhere: a tiny model's results never replace the shipped ones unasked)")
    p.add_argument("--seeds", type=seed_value, nargs="+", default=[0, 1, 2], help="seeds of every arm (default: 0 1 2)")
    p.add_argument("--arms", nargs="+", choices=list(ARMS), default=list(ARMS), help="arms to run (default: all)")
    p.add_argument("--quick", action="store_true",
                   help="tiny model, a small corpus slice, a few steps, one torch thread: checks the pipeline "
                        "end to end")
    p.add_argument("--dry-run", action="store_true", help="print the plan and the commands, run nothing")
    p.add_argument("--summarize-only", action="store_true",
                   help="run nothing: write (and ship) results from the runs finished so far")
    p.add_argument("--no-baseline", action="store_true",
                   help="skip the SST-2 fine-tuning of a random encoder per seed")
    p.add_argument("--time-budget-min", type=float, default=150.0,
                   help="wall-clock budget of the whole ablation: after each run the projected total is "
                        "printed and compared with it (guidance only; runs are never cut short, so that "
                        "every arm gets the same token budget) (default: %(default)s)")
    p.add_argument("--corpus", default=WIKITEXT_TRAIN,
                   help="pretraining text, a local file (WikiText layout or one document per line) "
                        "(default: %(default)s)")
    p.add_argument("--corpus-chars", type=int, default=None,
                   help="pretrain on the first N characters of --corpus, rounded up to whole documents "
                        f"(default: {FULL['corpus_chars']:,}; with --quick {QUICK['corpus_chars']:,}; 0 = all)")
    p.add_argument("--epochs", type=float, default=None,
                   help=f"passes over the corpus slice, the same in every arm (default: {FULL['epochs']}; "
                        f"with --quick {QUICK['epochs']})")
    p.add_argument("--init", default=None,
                   help="shared warm start: every arm continues pretraining from this MLM folder (its weights, "
                        f"shape and tokenizer); 'none' = every arm from random weights (default: {FULL['init']}; "
                        "with --quick none)")
    p.add_argument("--tokenizer", default=None,
                   help="tokenizer.json (or folder) to use; default: train one on --corpus once "
                        f"({FULL['vocab_size']:,} tokens; with --quick {QUICK['vocab_size']})")
    p.add_argument("--valid", default=pretrain.DEFAULT_VALID, help="held-out text (default: %(default)s)")
    p.add_argument("--train", default=finetune.DEFAULT_TRAIN, help="SST-2 train (default: %(default)s)")
    p.add_argument("--dev", default=finetune.DEFAULT_DEV, help="SST-2 dev (default: %(default)s)")
    p.add_argument("--precision", choices=["auto", "fp32", "bf16"], default="auto",
                   help="autocast of every step (default: %(default)s, see train.pretrain --help)")
    return p


def check_data(args, recipe: dict, steps) -> None:
    """The input files of every step still to run, checked before OUT/plan.json is written and the first step runs
    (`train.data`'s checks; a misspelt --dev was found by the first fine-tuning, after the tokenizer and a
    pretraining run): one error that names the option."""
    from . import data
    from .tokenizer import load_run_tokenizer

    kinds = {step.kind for step in steps if not step.done()}
    if kinds & {"train.tokenizer", "train.pretrain", "probe"}:
        data.check_text_source(args.corpus, "--corpus", default=args.corpus == WIKITEXT_TRAIN)
        corpus = Path(args.corpus)
        if recipe["corpus_chars"] and not args.corpus.startswith(data.HUB_PREFIX) and (
                not corpus.is_file() or corpus.suffix == ".xz"):
            what = "a folder" if corpus.is_dir() else "a compressed file" if corpus.is_file() else "a mixture"
            raise ValueError(f"--corpus {args.corpus} is {what}: --corpus-chars slices one plain local text file "
                             "(--corpus-chars 0 pretrains on all of it)")
        data.check_text_source(args.valid, "--valid", default=args.valid == pretrain.DEFAULT_VALID)
    if args.tokenizer is not None and kinds:
        try:
            load_run_tokenizer(args.tokenizer, None)
        except (OSError, ValueError) as err:
            raise UserError(f"--tokenizer {err}") from None  # its message starts with the path
    if "train.finetune" in kinds:
        data.check_labeled_source(args.train, "--train", default=args.train == finetune.DEFAULT_TRAIN)
        data.check_labeled_source(args.dev, "--dev", default=args.dev == finetune.DEFAULT_DEV)


def _progress(steps: list[dict], budget_min: float, session_start: float) -> None:
    """Measured throughput and projected total after a finished run."""
    spent, per_run, tokens_s, remaining = 0.0, [], [], 0
    for s in steps:
        if s.kind == "probe":
            probe = load_json(s.folder / "probe.json")
            spent += probe["time_s"] if probe else 0.0
            continue
        if s.kind not in ("train.pretrain", "train.finetune"):
            continue
        metrics = RunMetrics.read(s.folder, missing_ok=True)
        if metrics is None:
            remaining += 1 if s.kind == "train.pretrain" else 0
            continue
        spent += metrics.wall_time_s or 0.0
        if s.kind == "train.pretrain":
            per_run.append(metrics.wall_time_s or 0.0)
            tokens_s.append(metrics.train_tokens / max(metrics.train_time_s, 1e-9))
    if not per_run:
        return
    other = spent - sum(per_run)
    finished = len(per_run)
    projected = spent + remaining * (spent / finished) if finished else spent
    print(f"== progress: {finished} of {finished + remaining} pretraining runs done, "
          f"{statistics.fmean(tokens_s):,.0f} training tokens/s, {spent / 60:.1f} min of runs so far "
          f"({other / 60:.1f} min outside pretraining), projected total {projected / 60:.1f} min "
          f"(budget {budget_min:g} min); this session {(time.time() - session_start) / 60:.1f} min", flush=True)
    if projected > budget_min * 60 and remaining:
        print(f"warning: the projected total ({projected / 60:.0f} min) is over --time-budget-min "
              f"{budget_min:g}. Every arm must get the same token budget, so the runs are not cut short: "
              "let it finish, or stop now (Ctrl-C), delete the folder and pass a smaller --corpus-chars "
              "(or fewer --seeds; --summarize-only ships the finished seeds).", flush=True)


def main(argv=None) -> int:
    p = build_parser()
    args = p.parse_args(argv)
    if args.epochs is not None and not args.epochs > 0 or not args.time_budget_min > 0:  # were planned and run
        p.error(f"--epochs and --time-budget-min must be positive, got {args.epochs} and {args.time_budget_min}")
    if args.ship is None:
        args.ship = "" if args.quick else SHIP
    args.command = command_line("train.ablation", argv)
    threads = torch.get_num_threads()
    if args.quick and not args.dry_run:
        torch.set_num_threads(1)  # tiny models: one thread is faster, and a shared CPU is not disturbed
    try:
        return _main(args)
    except USER_ERRORS as err:
        return report_user_error(err)
    finally:
        torch.set_num_threads(threads)


def _main(args) -> int:
    started = time.time()
    out, recipe = output_folder(args.out), recipe_of(args)  # a file at --out named as one
    steps = plan(args)
    if args.dry_run:
        print(f"# {len([s for s in steps if s.kind == 'train.pretrain'])} pretraining runs, "
              f"{len([s for s in steps if s.kind == 'train.finetune'])} fine-tunings; corpus "
              f"{corpus_path(args, recipe)}")
        if recipe["corpus_chars"] and recipe["planning_tokens_per_s"] and recipe["chars_per_token"]:
            tokens = recipe["corpus_chars"] / recipe["chars_per_token"] * recipe["epochs"]
            runs = len([s for s in steps if s.kind == "train.pretrain"])
            minutes = runs * (tokens / recipe["planning_tokens_per_s"] + 120) / 60
            print(f"# ~{tokens / 1e6:.1f}M training tokens per run; at the planning figure of "
                  f"{recipe['planning_tokens_per_s']:,} tokens/s about {minutes:.0f} min in all "
                  f"(budget {args.time_budget_min:g} min; the arithmetic: docs/training-notes.md)")
        for s in steps:
            print(s.shown)
        return EXIT_OK
    if recipe["corpus_chars"] and str(args.corpus).startswith("hub:"):
        raise UserError("--corpus-chars slices a local file; pass --corpus-chars 0 with a hub: corpus")
    if not args.summarize_only:
        check_data(args, recipe, steps)
    changed = check_plan(out, steps, weights_sha256(recipe["init"]))
    if changed:
        raise UserError(f"{out} holds runs made with other options or from other --init weights "
                        f"({', '.join(changed[:3])}{', ...' if len(changed) > 3 else ''}); their commands and the "
                        f"sha256 of their starting weights are in {out / 'plan.json'}. Use the same options and "
                        "weights, or another --out")
    corpus_info = None
    if recipe["corpus_chars"]:  # an unreadable --corpus is a user error, reported by main
        corpus_info = slice_corpus(Path(args.corpus), recipe["corpus_chars"], corpus_path(args, recipe))
        corpus_info["requested_chars"] = recipe["corpus_chars"]
    if not args.summarize_only:
        if corpus_info:
            print(f"== corpus: {corpus_info['chars']:,} characters ({corpus_info['documents']:,} documents) of "
                  f"{args.corpus} -> {corpus_info['file']}", flush=True)
        def progress(step):
            if step.kind == "train.finetune":
                _progress(steps, args.time_budget_min, started)

        code = run_steps(steps, after=progress)
        if code != 0:
            return code
    results = write_results(args, steps, corpus_info, started)
    print_table(results)
    shipped = f", shipped to {args.ship}" if args.ship else ""
    print(f"ablation {results['status']} ({results['runs_done']}/{results['runs_planned']} runs): "
          f"{out / 'results.json'}, {out / 'curves.png'}{shipped}", flush=True)
    return EXIT_OK if results["status"] == "complete" or args.summarize_only else EXIT_FAILED


if __name__ == "__main__":
    raise SystemExit(exit_code(main))
