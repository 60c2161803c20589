"""The whole recipe with one command: tokenizer -> pretraining -> fine-tuning (pretrained and random init).

    python -m train.recipe --out runs/mini                              # the first recipe: 80-min pretraining, SST-2
    python -m train.recipe --out runs/quick --quick                      # a tiny version in well under a minute
    python -m train.recipe --out runs/mini ... --push-to-hub USER/mini-roberta
    python -m train.recipe --gpu --out runs/gpu --time-budget-min 5      # one CUDA device, see below

Folders written under OUT:
    tokenizer/        tokenizer.json (train.tokenizer)
    mlm/              the pretrained masked-LM model (train.pretrain), Hub-ready
    sst2/             fine-tuned from mlm/ (train.finetune), Hub-ready
    sst2-random/      the same fine-tuning from a random encoder: what pretraining buys
    results.json, results.md   the comparison

Running the same command again continues an interrupted recipe: finished steps (a folder with
metrics.json) are skipped, an interrupted one resumes from its checkpoint (train.experiment). Each training
step runs train.pretrain / train.finetune in this process from an arguments object, and the equivalent
command is printed (and recorded in its metrics.json), so any step can be rerun by hand. The input files of
every step still to run are checked before the first one runs (`check_data`: one `error:` line naming the option;
the labels of --train and --dev are read too). --finetune-args passes more train.finetune options to both
fine-tunings, e.g. for your own data: --finetune-args "--text-column review --label-column sentiment --labels neg,pos",
and for a single labelled file without a dev file, --finetune-args "--dev-fraction 0.1" (then no --dev is read).
--push-to-hub PREFIX uploads mlm/ to PREFIX-mlm and sst2/ to PREFIX-sst2 (train.push); the two repo ids are
checked before the first step runs. Pretraining caches its packed rows in --cache-dir (default OUT/cache).

--gpu: the recipe for one GPU (CUDA, bf16 autocast; the same code runs on CPU, which is how it is tested).
The tokenizer is reused (--tokenizer, default assets/mini-roberta-mlm's), pretraining takes large batches
(--gpu-batch-size 512 x 128 tokens, peak lr --gpu-lr 1e-3, 6% warmup, linear decay to 0 at the
--time-budget-min deadline) from random weights (the MLM output bias at the log unigram frequencies) or
from --init (a finished MLM folder), then
`train.sentiment_recipe` fine-tunes SST-2 with --seeds (default 0 1 2; the CPU recipe's settings; all at once on
CUDA, each in a process of its own, --parallel) and averages their weights (--tapt-minutes M and --imdb-stage: the
shipped classifier's recipe, TAPT and one IMDB stage first), and everything to ship is exported in float16 to
OUT/ship: mini-roberta-mlm/, mini-roberta-sst2/ (the seeds' weight average), sentiment/ (each seed's metrics and the
summary). Folders written under OUT: mlm/, sentiment/, ship/. --data DIR reads the corpora from DIR instead of
../shared/data (the same layout, files may be .xz-compressed: `train.gpu_transfer bundle` builds it).
A 10-minute GPU command runs it through `python -m train.gpu_session --out $OUT` (a deadline, a retry if
pretraining fails, the tests alongside, what finished packed into parts), or by hand, e.g.:
    timeout -k 20 520 python -m train.recipe --gpu --data gpu-upload/data --tokenizer gpu-upload/tokenizer.json \\
        --time-budget-min 6 --seeds 0 --out /tmp/gpu; python -m train.gpu_transfer pack /tmp/gpu --ship --out $OUT
and here `python -m train.gpu_transfer unpack RETURNED --out runs/gpu-1`, then `python -m scripts.release`.
"""
from __future__ import annotations

import argparse
import json
import shlex
import shutil
import sys
import time
from collections import Counter
from pathlib import Path

import torch

from roberta.files import write_atomic
from roberta.run_metrics import RunMetrics, dataset_name, dataset_said

from . import finetune, pretrain, sentiment_recipe, tapt_corpus, tokenizer
from .arguments import seed_value
from .experiment import Step, argv_of, finished, option_text, run_steps, script, split_options, training
from .checkpointing import Checkpoints
from .export import check_export, export
from .gpu_transfer import DATA_ROOT, PARTIAL_MLM, SHIPPED_FROM
from . import paths
from .runtime import EXIT_USER_ERROR, USER_ERRORS, UserError, exit_code, naming, report_user_error, shown_command

QUICK_CORPUS = paths.WIKITEXT_TRAIN
SHARED_DATA = str(DATA_ROOT)  # "../shared/data": where the defaults point
QUICK_FINETUNE = {"train_n": 2000, "batch_size": 16, "max_steps": 20, "warmup": 0.1, "lr": 1e-3, "eval_every": 10,
                  "calibration_n": 50, "imdb_n": 50, "max_length": 64, "no_progress": True}
SHIPPED_TOKENIZER = "assets/mini-roberta-mlm/tokenizer.json"


def relocate(spec: str, data: str | None) -> str:
    """A path or mixture under ../shared/data, moved to the folder `data` (a file that is only there
    compressed becomes its .xz); hub: specs and other paths are kept."""
    if not data or not spec:
        return spec
    parts = []
    for part in spec.split(","):
        source, eq, weight = part.partition("=")
        if source.startswith(SHARED_DATA):
            source = str(Path(data) / source[len(SHARED_DATA):].lstrip("/"))
            if not Path(source).exists() and Path(source + ".xz").is_file():
                source += ".xz"
        parts.append(source + eq + weight)
    return ",".join(parts)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m train.recipe", description=__doc__.split("\n\n")[0],
                                epilog=__doc__.split("\n\n", 1)[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="folder of the whole recipe")
    p.add_argument("--quick", action="store_true",
                   help="tiny model, small corpus slices, a few steps: checks the pipeline end to end")
    p.add_argument("--time-budget-min", type=float, default=80.0,
                   help="pretraining wall-clock budget in minutes (default: %(default)s; ignored with --quick, "
                        "except 0 with --gpu: no pretraining, the classifier of --init)")
    p.add_argument("--tokenizer", default=None, help="use this tokenizer.json (or folder) instead of training one")
    p.add_argument("--corpus", default=None, help="pretraining corpus/mixture (default: train.pretrain's; "
                                                  f"with --quick {QUICK_CORPUS})")
    p.add_argument("--valid", default=pretrain.DEFAULT_VALID, help="held-out text (default: %(default)s)")
    p.add_argument("--train", default=finetune.DEFAULT_TRAIN, help="fine-tuning data (default: %(default)s)")
    p.add_argument("--dev", default=finetune.DEFAULT_DEV, help="dev set (default: %(default)s; not read when "
                                                               "--finetune-args hold one out of --train: "
                                                               "--dev-fraction)")
    p.add_argument("--imdb", default=finetune.DEFAULT_IMDB, help="out-of-domain IMDB TSV, '' to skip "
                                                                 "(default: %(default)s)")
    p.add_argument("--finetune-args", default="",
                   help="extra train.finetune options for every fine-tuning, e.g. \"--text-column review "
                        "--label-column sentiment --labels neg,pos\" for your own data (with --gpu: the sentiment "
                        "experiment's SST-2 runs)")
    p.add_argument("--seed", type=seed_value, default=0, help="seed of every step (default: %(default)s)")
    p.add_argument("--precision", choices=["auto", "fp32", "bf16"], default="auto",
                   help="autocast of every step (default: %(default)s, see train.pretrain --help)")
    p.add_argument("--cache-dir", default=None,
                   help="where pretraining caches its packed rows (train.pretrain --cache-dir; default: OUT/cache, "
                        "'' = no cache; --quick caches nothing)")
    g = p.add_argument_group("one GPU (--gpu)")
    g.add_argument("--gpu", action="store_true", help="the one-GPU recipe (see below)")
    gpu_only = []  # refused without --gpu (`check_gpu_options`)

    def gpu_option(*flags, **kwargs):
        gpu_only.append(g.add_argument(*flags, **kwargs))

    gpu_option("--data", default=None, help=f"--gpu: read the corpora from this folder instead of {SHARED_DATA}")
    gpu_option("--init", default=None, help="--gpu: continue pretraining from this MLM folder")
    gpu_option("--gpu-batch-size", type=int, default=512, help="--gpu pretraining batch (default: %(default)s)")
    gpu_option("--gpu-lr", type=float, default=1e-3, help="--gpu pretraining peak lr (default: %(default)s)")
    gpu_option("--compile", action="store_true", help="--gpu: torch.compile the pretraining model's encoder")
    gpu_option("--seeds", type=seed_value, nargs="+", default=[0, 1, 2],
               help="--gpu: fine-tuning seeds (default: %(default)s)")
    gpu_option("--baseline", action="store_true",
               help="--gpu: also fine-tune a random encoder with the same seeds (what pretraining buys)")
    gpu_option("--tapt-minutes", type=float, default=0.0,
               help="--gpu: task-adaptive pretraining of the encoder on review text before fine-tuning, in "
                    "minutes (train.sentiment_recipe --tapt-minutes; default: %(default)s, none)")
    gpu_option("--imdb-stage", action="store_true",
               help="--gpu: an IMDB stage before SST-2, one for every seed (the shipped classifier's recipe: "
                    "train.sentiment_recipe --arms imdb-sst2 --imdb-stage-seed FIRST-SEED; reads "
                    "imdb/train.tsv from --data)")
    gpu_option("--parallel", type=int, default=None,
               help="--gpu: seeds fine-tuned at once, each in a process of its own (default: every seed on "
                    "CUDA, one after the other on CPU)")
    gpu_option("--pretrain-args", default="",
               help="--gpu: extra train.pretrain options, e.g. a larger model from random weights: "
                    "'--hidden-size 384 --intermediate-size 1536 --heads 6'")
    p.add_argument("--push-to-hub", metavar="PREFIX", default=None,
                   help="upload mlm/ as PREFIX-mlm and sst2/ as PREFIX-sst2 (not with --gpu: push its ship/ folders "
                        "with train.push)")
    p.add_argument("--private", action="store_true", help="create the Hub repos private")
    p.gpu_only = gpu_only
    return p


def check_gpu_options(parser: argparse.ArgumentParser, args) -> None:
    """The one-GPU group's options need --gpu: without it they were ignored without a word."""
    given = [action.option_strings[0] for action in parser.gpu_only
             if getattr(args, action.dest) != action.default]
    if given and not args.gpu:
        raise UserError(f"{', '.join(given)} {'needs' if len(given) == 1 else 'need'} --gpu (the one-GPU recipe); "
                        "without it they would be ignored")
    if args.gpu and args.push_to_hub is not None:  # the GPU machine cannot reach the Hub: pushed here, afterwards
        raise UserError("--push-to-hub does not run with --gpu: push OUT/ship/mini-roberta-mlm and "
                        "OUT/ship/mini-roberta-sst2 with `python -m train.push FOLDER --repo-id USER/NAME` once they "
                        "are back")


# --push-to-hub: the folder under OUT, the suffix of its repo id, and the suffix of the repo it was fine-tuned from
# (sst2/ is fine-tuned from mlm/: its card's base_model)
PUSHED = (("mlm", "-mlm", None), ("sst2", "-sst2", "-mlm"))


def check_push_prefix(prefix: str) -> None:
    """--push-to-hub, checked before any work: both repo ids it gives must be ones the Hub takes (a bad one was
    found after the whole recipe had run)."""
    from .push import PushError, check_repo_id

    for _, suffix, _ in PUSHED:
        try:
            check_repo_id(prefix + suffix)
        except PushError:
            raise UserError(f"--push-to-hub {prefix!r} gives the repo id {prefix + suffix!r}, which the Hub does not "
                            "take: it must be USER/NAME, of letters, digits, '-', '_' and '.'") from None


def push(out: Path, prefix: str, private: bool) -> int:
    """--push-to-hub: the two finished folders uploaded (train.push); a push that fails is a user error (exit 2, as
    train.push's), said with the commands that finish the job."""
    from .push import PushError, push_folder

    try:
        for folder, suffix, base in PUSHED:
            url = push_folder(out / folder, prefix + suffix, private=private, base_model=base and prefix + base)
            print(f"pushed {out / folder} -> {url}", flush=True)
    except PushError as err:
        commands = " and ".join(shown_command(["python", "-m", "train.push", str(out / folder), "--repo-id",
                                               prefix + suffix, *(["--base-model", prefix + base] if base else []),
                                               *(["--private"] if private else [])])
                                for folder, suffix, base in PUSHED)
        print(f"error: {err}; the recipe's folders are finished, push them with {commands}", file=sys.stderr)
        return EXIT_USER_ERROR
    return 0


def check_tokenizer(path: str) -> None:
    """--tokenizer, loaded: one error that names it."""
    tokenizer.load_run_tokenizer(path, None, named=True)


def check_data(parser: argparse.ArgumentParser, args, steps: list[Step]) -> None:
    """The input files of every step still to run, checked before the first one runs (`train.data`'s checks): a
    misspelt --dev was found by the fine-tuning, after the tokenizer and 80 minutes of pretraining. One error that
    names the option (and, for a default that is not there, how to point the recipe at the data)."""
    from . import data

    pending = {step.name for step in steps if not step.done()}

    def default(dest: str) -> bool:
        return getattr(args, dest) == parser.get_default(dest)

    if "tokenizer" in pending:  # its corpus: --corpus, else the quick slice or train.tokenizer's mixture
        data.check_text_source(args.corpus or (QUICK_CORPUS if args.quick else tokenizer.DEFAULT_CORPUS), "--corpus",
                               default=args.corpus is None)
    elif args.tokenizer is not None and pending:
        check_tokenizer(args.tokenizer)
    if "pretrain" in pending:
        data.check_text_source(args.corpus or (QUICK_CORPUS if args.quick else pretrain.PRETRAIN_CORPUS), "--corpus",
                               default=args.corpus is None)
        data.check_text_source(args.valid, "--valid", default=default("valid"))
    fine = next((step.args for step in steps if step.name in pending and step.kind == finetune.__name__), None)
    if fine is not None:  # (the two fine-tunings read the same data)
        check_finetune_data(args, fine)


def check_finetune_data(args, fine) -> None:
    """The data of a fine-tuning step (`fine`, its arguments) as train.finetune will read them, each named by the
    recipe's option that gave it, or as --finetune-args --NAME: the headers and the --checks file
    (`finetune.check_data_options`), then every label of --train and --dev (a label outside --labels stopped the
    fine-tuning after the tokenizer and pretraining; reading SST-2 train takes a quarter of a second); --dev is not
    read when --finetune-args hold the dev set out of --train (--dev-fraction)."""
    from . import data, tables

    def option(name: str) -> str:
        given = name in ("train", "dev", "imdb") and getattr(args, name) == getattr(fine, name)  # the recipe's own
        return f"--{name}" if given else f"--finetune-args --{name}"

    if fine.dev_fraction:  # the dev set is held out of --train: no --dev file is read (nor one given beside it)
        fine.check_dev_fraction()
    else:
        finetune.check_dev(fine.dev, option("dev"))
    id2label = fine.id2label()
    finetune.check_data_options(fine, fine.checks_path(), id2label, option)
    for name in ("train",) if fine.dev_fraction else ("train", "dev"):
        source = getattr(fine, name)
        if not source.startswith(data.HUB_PREFIX):  # (a hub: spec is left to its loader, as its header is)
            with naming(option(name)):
                tables.read_labeled(source, fine.text_column, fine.label_column, id2label)


def check_gpu_data(parser: argparse.ArgumentParser, args, steps: list[Step]) -> None:
    """--gpu: the input files of every step still to run, as that step will read them (under --data, a file there
    only compressed as its .xz copy: `relocate`), checked before pretraining runs (`train.data`'s checks; the
    sentiment experiment's inputs as train.sentiment_recipe lists them). One error that names the recipe's option:
    --corpus, --valid, --train, --dev, --imdb, a file given in --finetune-args, or --data for the files no option
    gives (TAPT's review text, the IMDB stage's reviews)."""
    from . import data

    pending = {step.name: step for step in steps if not step.done()}
    if "pretrain" in pending:
        if args.tokenizer is not None and not args.init:  # (with --init, the --init folder's)
            check_tokenizer(args.tokenizer)
        step = pending["pretrain"].args
        for name, asked, default in (("corpus", args.corpus or pretrain.PRETRAIN_CORPUS, args.corpus is None),
                                     ("valid", args.valid, args.valid == parser.get_default("valid"))):
            path = getattr(step, name)  # as relocated, unless --pretrain-args gave it
            if path == relocate(asked, args.data):
                data.check_text_source(path, f"--{name}", default=default)
            else:
                data.check_text_source(path, f"--pretrain-args --{name}")
    if "sentiment" in pending:  # its steps' inputs, named by the recipe's options that gave them
        # the experiment's options, from its command (which runs as that step: `script`)
        sentiment = sentiment_recipe.build_parser().parse_args(shlex.split(pending["sentiment"].command)[3:])
        given = {name: getattr(args, name) for name in ("train", "dev", "imdb", "valid")}
        for option, path, _, kind, columns in sentiment_recipe.data_inputs(sentiment,
                                                                           sentiment_recipe.plan(sentiment)[0]):
            name = option.split()[-1][2:]
            if option in ("--imdb-train", "--tapt-unsup", "--tapt-sst2"):  # no option of the recipe's gives them
                option, default = "--data", args.data is None  # (without it, a default under ../shared/data)
            elif name in given and path == relocate(given[name], args.data):  # the recipe's --train, --dev, ...
                option, default = f"--{name}", given[name] == parser.get_default(name)
            else:  # given in --finetune-args (which reach the IMDB stages too)
                option, default = f"--finetune-args --{name}", False
            sentiment_recipe.check_input(option, path, default, kind, columns)


def finetune_dev(args) -> str | None:
    """The recipe's --dev as its fine-tunings get it: None (left out: train.finetune's default, which it then does not
    read) when --finetune-args hold the dev set out of --train (--dev-fraction) and --dev is the recipe's default;
    a --dev given beside --dev-fraction is passed on, and refused with it. (--gpu relocated the default under --data,
    and train.finetune took it for a dev file given beside --dev-fraction.)"""
    given = sentiment_recipe.check_extra_options(args.finetune_args, finetune, "--finetune-args")
    return None if given.dev_fraction and args.dev == finetune.DEFAULT_DEV else args.dev


def cache_dir(args) -> str:
    """Pretraining's --cache-dir: the recipe's own, else OUT/cache (not ./cache/packed in the folder the recipe
    was started from); --quick caches nothing."""
    if args.cache_dir is not None:
        return args.cache_dir
    return "" if args.quick else str(Path(args.out) / "cache")


def plan(args) -> list[Step]:
    """The recipe's steps: tokenizer (unless --tokenizer), pretraining, the two fine-tunings (with --finetune-args;
    their --out stays the recipe's)."""
    out = Path(args.out)
    # the user's extra options, parsed by train.finetune's own parser: refused here, not after pretraining
    sentiment_recipe.check_extra_options(args.finetune_args, finetune, "--finetune-args")
    common = {"seed": args.seed, "precision": args.precision}
    if args.quick:
        corpus = args.corpus or QUICK_CORPUS
        tok_argv = ["--corpus", corpus, "--vocab-size", "1000", "--max-chars", "300000", "--eval-text", "",
                    "--quiet"]
        pre = {"preset": "tiny", "max_length": 64, "corpus_chars": 200_000, "batch_size": 16, "max_steps": 20,
               "warmup": 4, "lr": 2e-3, "eval_every": 10, "eval_rows": 32, "final_eval_rows": 64,
               "cache_dir": cache_dir(args), "no_progress": True}
        fine = QUICK_FINETUNE
    else:
        corpus = args.corpus  # None: each script's default (train.tokenizer's, train.pretrain's mixture)
        tok_argv = ["--corpus", corpus] if corpus else []
        pre = {"time_budget_min": args.time_budget_min, "cache_dir": cache_dir(args)}
        fine = {}
    tok_path = args.tokenizer or str(out / "tokenizer" / "tokenizer.json")
    data = {"train": args.train, "dev": finetune_dev(args), "imdb": args.imdb}
    steps = []
    if args.tokenizer is None:
        tok_argv += ["--seed", str(args.seed), "--out", str(out / "tokenizer")]
        steps.append(script("tokenizer", tokenizer, tok_argv, out / "tokenizer", marker="tokenizer.json"))
    steps += [
        training("pretrain", pretrain, corpus=corpus, valid=args.valid, tokenizer=tok_path, **pre, **common,
                 out=str(out / "mlm")),
        training("finetune", finetune, args.finetune_args, init=str(out / "mlm"), **data, **fine, **common,
                 resume=True, out=str(out / "sst2")),
        training("finetune-random", finetune, args.finetune_args, init="random", tokenizer=tok_path,
                 **({"preset": "tiny"} if args.quick else {}), **data, **fine, **common, resume=True,
                 out=str(out / "sst2-random")),
    ]
    return steps


def plan_gpu(args) -> list[Step]:
    """The one-GPU recipe's steps: pretraining, then the sentiment experiment; with --time-budget-min 0 the
    sentiment experiment alone, from --init (the classifier of an encoder that needs no more pretraining)."""
    out = Path(args.out)
    data = args.data
    classifier_only = args.time_budget_min == 0
    if classifier_only and not args.init:
        raise ValueError("--time-budget-min 0 (no pretraining) fine-tunes the --init encoder: give --init MLM-FOLDER")
    if args.time_budget_min < 0:
        raise ValueError(f"--time-budget-min must be at least 0 (0 = no pretraining), got {args.time_budget_min:g}")
    # the user's extra options, parsed by train.finetune's / train.pretrain's own parsers: refused here, not when
    # the sentiment experiment starts after minutes of pretraining
    sentiment_recipe.check_extra_options(args.finetune_args, finetune, "--finetune-args")
    sentiment_recipe.check_extra_options(args.pretrain_args, pretrain, "--pretrain-args")
    # from random weights, the MLM output bias starts at the log unigram frequencies (train.probes: the held-out
    # loss gets 0.3 nats below the unigram model in half the tokens)
    start = ({"init": args.init} if args.init else
             {"tokenizer": args.tokenizer or SHIPPED_TOKENIZER, "output_bias": "unigram"})
    if args.quick:  # the same path (a time budget, warmup by the clock) on a tiny model for 3 seconds: the tests
        length = {"time_budget_min": 0.05, "eval_every": 50, "eval_rows": 32, "final_eval_rows": 64, "batch_size": 16,
                  **({} if args.init else {"preset": "tiny", "max_length": 64})}
        quick_fine = QUICK_FINETUNE
    else:
        length = {"batch_size": args.gpu_batch_size, "time_budget_min": args.time_budget_min, "eval_every": 500}
        quick_fine = {}
    pre = training("pretrain", pretrain, args.pretrain_args,
                   corpus=relocate(args.corpus or pretrain.PRETRAIN_CORPUS, data),
                   valid=relocate(args.valid, data), **start, dropout=0.0, lr=args.gpu_lr, warmup=0.06, **length,
                   save_every_min=2.0, seed=args.seed, precision=args.precision, compile=args.compile,
                   cache_dir=cache_dir(args), no_progress=True, out=str(out / "mlm"))
    fine = [*argv_of({"train": relocate(args.train, data), "dev": relocate(finetune_dev(args), data),
                      "imdb": relocate(args.imdb, data), "precision": args.precision, "no_progress": True,
                      **quick_fine}), *split_options(args.finetune_args, finetune.__name__)]
    arm = "imdb-sst2" if args.imdb_stage else "sst2"
    arms = f"{arm},random-{arm}" if args.baseline else arm
    parallel = args.parallel if args.parallel is not None else len(args.seeds) if torch.cuda.is_available() else 1
    encoder = args.init if classifier_only else str(out / "mlm")
    sentiment = ["--init", encoder, "--out", str(out / "sentiment"), "--arms", arms,
                 "--seeds", *map(str, args.seeds), "--imdb-train", relocate(finetune.DEFAULT_IMDB, data),
                 "--finetune-args", shlex.join(fine), "--imdb-args", shlex.join(fine),
                 "--tapt-minutes", option_text(args.tapt_minutes), "--parallel", str(parallel), "--no-progress",
                 "--tapt-unsup", relocate(tapt_corpus.DEFAULT_UNSUP, data),
                 "--tapt-sst2", relocate(tapt_corpus.DEFAULT_SST2, data)]
    if args.imdb_stage:
        sentiment += ["--imdb-stage-seed", str(args.seeds[0])]
    if args.tapt_minutes:  # its held-out text from --data too; with --quick a few steps (the tests)
        tapt = ["--valid", relocate(args.valid, data), "--precision", args.precision]
        tapt += ["--max-steps", "3", "--batch-size", "4", "--eval-rows", "4"] if args.quick else []
        sentiment += ["--tapt-args", shlex.join(tapt)]
    # TAPT's packing cache beside the recipe's (sentiment_recipe's own default is under its --out)
    sentiment += ["--cache-dir", cache_dir(args)]
    # the experiment's options (--seeds, --parallel, --tapt-minutes, ...) checked now, before pretraining runs
    sentiment_recipe.check_options(sentiment_recipe.build_parser().parse_args(sentiment))
    # an experiment of its own (train.sentiment_recipe runs its fine-tunings as objects): its main(argv)
    experiment = script("sentiment", sentiment_recipe, sentiment, out / "sentiment", marker="summary.json")
    return [experiment] if classifier_only else [pre, experiment]


def ship(out: Path) -> Path:
    """OUT/ship: float16 copies of the pretrained model and of the classifier to release, and the metrics of
    every fine-tuning run (no weights) with the summary over seeds. What finished ships: a command stopped by
    its time limit (`timeout`, then `train.gpu_transfer pack OUT --ship`) still returns the pretrained model,
    and the classifier is the seeds' weight average if it was made, else the first finished seed (SHIPPED_FROM, in
    the ship folder, says which). A recipe without pretraining (--time-budget-min 0: no mlm/ folder) ships its
    classifier alone. Pretraining stopped before its end (a deadline's SIGTERM) ships its last checkpoint as
    PARTIAL_MLM, a partial model (`train.export`: its metrics say where and why it stopped, it has no final
    evaluation, and train.export and scripts.release refuse to ship it), for a next run's --init or to be scored
    here; no classifier ships beside it (none was fine-tuned from it). A pretraining that left no checkpoint to
    export (stopped in its setup, or killed) ships nothing: what comes back is the logs."""
    dst, sentiment, mlm = out / "ship", out / "sentiment", out / "mlm"
    runs = sorted(p for p in sentiment.iterdir() if finished(p)) if sentiment.is_dir() else []
    classifiers = [p for arm in ("imdb-sst2", "sst2") for p in runs if p.name == f"{arm}-avg"]
    classifiers += [p for arm in ("imdb-sst2", "sst2") for p in runs if p.name.startswith(f"{arm}-s")]
    encoder = encoder_dst = None
    if mlm.exists():  # the pretrained model, or the last checkpoint of a pretraining stopped before its end
        encoder, encoder_dst = mlm, dst / "mini-roberta-mlm"
        if not finished(mlm):
            encoder, encoder_dst = Checkpoints(mlm).latest("step"), dst / PARTIAL_MLM
            if encoder is None:
                raise FileNotFoundError(f"{mlm}: pretraining did not finish (no metrics.json) and saved no "
                                        "checkpoint, nothing to ship")
            check_export(encoder, encoder_dst)  # refused (no config.json beside it) before ship/ is replaced
            classifiers = []  # none was fine-tuned from this encoder
    if not encoder and not classifiers:
        raise FileNotFoundError(f"{out}: neither pretraining nor a fine-tuning run finished, nothing to ship")
    if dst.exists():
        shutil.rmtree(dst)  # an earlier ship of this folder: it would mix two states of the recipe
    if encoder:
        export(encoder, encoder_dst, "float16")
    if classifiers:
        export(classifiers[0], dst / "mini-roberta-sst2", "float16")
        averaged = classifiers[0].name.endswith("-avg")
        write_atomic(dst / SHIPPED_FROM, f"mini-roberta-sst2: {classifiers[0].name}"
                                         f"{'' if averaged else ' (one seed, no average)'}\n")
    tapt = [sentiment / "tapt" / "mlm"] if finished(sentiment / "tapt" / "mlm") else []  # its rate and curves
    for run in runs + tapt:
        shown = dst / "sentiment" / ("tapt" if run in tapt else run.name)
        for name in ("metrics.json", "log.jsonl", "curves.png", "reliability.png"):
            if (run / name).is_file():
                shown.mkdir(parents=True, exist_ok=True)
                shutil.copy2(run / name, shown / name)
    for name in ("summary.json", "summary.md"):
        if (sentiment / name).is_file():
            shutil.copy2(sentiment / name, dst / "sentiment" / name)
    return dst


def majority_share(fine) -> float | None:
    """The share of the commonest label of a fine-tuning's dev set (`fine`, its arguments), the accuracy of always
    answering it: chance level for a classifier. The dev file read in its columns and labels, or with --dev-fraction
    the slice the finished run held out of --train, as its metrics.json records it (drawn again:
    `finetune.held_out_dev`); None when it cannot be read."""
    from .tables import read_labeled

    try:
        if fine.dev_fraction:
            held_out = (RunMetrics.read(fine.out, missing_ok=True) or RunMetrics()).held_out_dev
            labels = finetune.held_out_dev(held_out, fine.id2label())[1] if held_out else []
        else:
            labels = read_labeled(fine.dev, fine.text_column, fine.label_column, label_names=fine.id2label(),
                                  column_options=False)[1]
    except USER_ERRORS:
        return None
    return max(Counter(labels).values()) / len(labels) if labels else None


def dev_accuracy_named(metrics: RunMetrics) -> str:
    """The results' heading of a fine-tuning's dev figures (`metrics`, its metrics.json): "SST-2 dev accuracy"
    (`RunMetrics.dev_is_sst2`), or for a dev set of other data its file, named as the app and the cards name data
    (`dataset_said`): "dev accuracy on `mine/dev.csv`", or the slice held out of the training file: "dev accuracy on
    20 rows of `mine.csv` held out from fine-tuning, seed 0"."""
    def code(file: str) -> str:
        return f"`{file}`"

    if metrics.dev_is_sst2():
        return "SST-2 dev accuracy"
    named = metrics.dev_set_named(code, dev_file=lambda file: dataset_said(dataset_name(file), code), none="")
    return f"dev accuracy on {named}" if named else "dev accuracy"


def summarize(out: Path, chance: float | None = None) -> dict:
    """results.json / results.md: pretraining figures and the two classifiers side by side. `chance` (--quick):
    the dev set's majority-class share, said beside them (the quick preset's accuracies are at chance level)."""
    def load(name):
        metrics = RunMetrics.read(out / name, missing_ok=True)
        return metrics.to_dict() if metrics else {}

    mlm, pre, rnd = load("mlm"), load("sst2"), load("sst2-random")
    results = {
        "pretraining": {k: mlm.get(k) for k in ("eval_loss", "eval_accuracy", "eval_perplexity", "train_tokens",
                                                "train_steps", "train_time_s", "parameters", "stopped_by")},
        "sst2_dev_accuracy": {"pretrained": pre.get("dev_accuracy"), "random_init": rnd.get("dev_accuracy")},
        "imdb_accuracy": {"pretrained": pre.get("imdb_accuracy"), "random_init": rnd.get("imdb_accuracy")},
        "finetune_time_s": {"pretrained": pre.get("train_time_s"), "random_init": rnd.get("train_time_s")},
    }
    if chance is not None:
        results["dev_majority_class_share"] = chance
    write_atomic(out / "results.json", json.dumps(results, indent=2) + "\n")

    def fmt(v, spec=""):
        """A figure as the rest of the project writes it: `spec` for a float ("%": a percentage), counts with
        thousands separators."""
        if v is None:
            return "-"
        if isinstance(v, float):
            return f"{v:.1%}" if spec == "%" else f"{v:{spec or '.4f'}}"
        return f"{v:,}" if isinstance(v, int) else str(v)

    p = results["pretraining"]
    lines = ["# Results", "",
             f"Pretraining: {fmt(p['train_tokens'])} tokens, {fmt(p['train_steps'])} steps, "
             f"{fmt(p['train_time_s'], '.0f')} s; held-out MLM loss {fmt(p['eval_loss'])}, accuracy "
             f"{fmt(p['eval_accuracy'], '%')}, perplexity {fmt(p['eval_perplexity'], '.1f')}.", "",
             f"| classifier | {dev_accuracy_named(RunMetrics.from_dict(pre or rnd))} | IMDB accuracy "
             "(out of domain) |", "|---|---|---|"]
    for key, label in (("pretrained", "fine-tuned from the pretrained encoder"),
                       ("random_init", "same recipe, random encoder")):
        lines.append(f"| {label} | {fmt(results['sst2_dev_accuracy'][key], '%')} | "
                     f"{fmt(results['imdb_accuracy'][key], '%')} |")
    if chance is not None:
        accuracies = [a for a in results["sst2_dev_accuracy"].values() if a is not None]
        at_chance = bool(accuracies) and max(accuracies) <= chance + 0.01
        lines += ["", f"--quick checks that the pipeline runs end to end, not what a model learns: the dev set's "
                      f"majority class is {chance:.1%} of it, the accuracy of always answering it"
                      f"{' (these accuracies are at that chance level)' if at_chance else ''}."]
    for key, metrics in (("pretrained", pre), ("random encoder", rnd)):
        for note in (metrics.get("calibration") or {}).get("notes") or []:
            lines += ["", f"Calibration ({key}): {note}."]
    write_atomic(out / "results.md", "\n".join(lines) + "\n")
    return results


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:  # everything checked before any work: --out, --init, the options of every step
        check_gpu_options(parser, args)
        out = sentiment_recipe.check_out(args.out)  # not into a model's folder (this recipe's earlier run: continued)
        if args.push_to_hub is not None:
            check_push_prefix(args.push_to_hub)
        if args.gpu and args.init:
            sentiment_recipe.check_init(args.init)  # a masked-LM folder, not a classifier
        steps = plan_gpu(args) if args.gpu else plan(args)
        if args.gpu:  # after `relocate`: the files under --data, .xz copies included
            check_gpu_data(parser, args, steps)
        else:
            check_data(parser, args, steps)
        out.mkdir(parents=True, exist_ok=True)
    except USER_ERRORS as err:
        return report_user_error(err)
    started = time.time()
    # run_steps, an interrupted step said as one: "interrupted", how to continue, exit code 130
    code = run_steps(steps, rerun="the same recipe command")
    if code != 0:
        return code
    if args.gpu:
        print(f"shipped in {ship(out)}; recipe done in {time.time() - started:.0f} s", flush=True)
        return 0
    fine = next(step.args for step in steps if step.name == "finetune")
    results = summarize(out, majority_share(fine) if args.quick else None)
    print((out / "results.md").read_text(encoding="utf-8"), end="")
    print(f"recipe done in {time.time() - started:.0f} s: {out}", flush=True)
    if args.push_to_hub is not None:
        return push(out, args.push_to_hub, args.private)
    return 0 if results else 1


if __name__ == "__main__":
    raise SystemExit(exit_code(main))
