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
from __future__ import annotations

import argparse
import hashlib
import json
import math
import shutil
import statistics
import textwrap
import time
from pathlib import Path

import torch

from roberta.masking import DUPE_FACTOR
from roberta.run_metrics import RunMetrics

from . import finetune, pretrain, tokenizer
from .arguments import command_line, script_parser
from .experiment import Step, argv_of, function, run_steps, same_run, script, shape_of, training
from .evaluate import masked_lm_sums
from .paths import write_atomic
from .reporting import read_log, save_figure
from .runtime import (EXIT_FAILED, EXIT_OK, USER_ERRORS, UserError, autocast, exit_code, output_folder,
                      report_user_error, resolve_precision)
from .summarize import mean_std

WIKITEXT_TRAIN = "../shared/data/wikitext-2/wiki.train.tokens"
ARMS = {  # name -> (label, masking, dupe factor)
    "dynamic": ("dynamic (RoBERTa)", "dynamic", None),
    "static-dupe1": ("static, one fixed mask", "static", 1),
    "static-dupe10": ("static, 10 masks (BERT)", "static", 10),
}
BASELINE = "random-init"
COLORS = {"dynamic": "tab:blue", "static-dupe1": "tab:red", "static-dupe10": "tab:orange", BASELINE: "tab:gray"}
PROBE_SEED_OFFSET = 1_000_000  # fresh probe masks: a stream no training or evaluation mask comes from

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

# The two recipes. FULL is the budgeted one (see the module docstring); QUICK checks the pipeline in seconds.
FULL = {
    "init": "assets/mini-roberta-mlm", "vocab_size": 32768, "tokenizer_max_chars": 0, "corpus_chars": 600_000,
    "epochs": 20, "chars_per_token": 4.83,
    # options of train.pretrain / train.finetune (PretrainArguments / FinetuneArguments fields)
    "model": {"preset": "mini"},  # from scratch only (--init none); a warm start keeps the --init shape
    "pretrain": {"dropout": 0.0, "batch_size": 32, "lr": 2e-4, "warmup": 0.06, "weight_decay": 0.01,
                 "eval_every": 50, "eval_rows": 256, "final_eval_rows": 0, "log_every": 10, "save_every_min": 5.0},
    # calibration_n 0, checks '': the fine-tuning as the shipped ablation ran it (train.finetune's
    # calibration slice and behaviour checks came later, issue 15)
    "finetune": {"train_n": 8000, "epochs": 2.0, "batch_size": 32, "lr": 2e-4, "warmup": 0.1, "eval_every": 0,
                 "max_length": 128, "calibration_n": 0, "checks": ""},
    "probe_rows": 256,
    "planning_tokens_per_s": 4_500,
}
QUICK = {
    "init": None, "vocab_size": 500, "tokenizer_max_chars": 300_000, "corpus_chars": 20_000, "epochs": 3,
    "chars_per_token": None,
    "model": {"preset": "tiny", "model_max_length": 32},
    "pretrain": {"dropout": 0.0, "batch_size": 16, "lr": 2e-3, "warmup": 0.1, "eval_every": 5, "eval_rows": 16,
                 "final_eval_rows": 64, "log_every": 2},
    "finetune": {"train_n": 200, "max_steps": 8, "batch_size": 16, "lr": 1e-3, "warmup": 0.1, "eval_every": 0,
                 "max_length": 32, "calibration_n": 0, "checks": ""},
    "probe_rows": 16,
    "planning_tokens_per_s": None,
}


SHIP = "assets/masking-ablation"  # where the full ablation's results go: the app and README show them


def build_parser() -> argparse.ArgumentParser:
    p = script_parser("train.ablation", __doc__)
    p.add_argument("--out", default="runs/ablation", help="folder of the whole ablation (default: %(default)s)")
    p.add_argument("--ship", default=None,
                   help=f"copy results.json and curves.png here when done, '' = do not (default: {SHIP}; with "
                        "--quick, nowhere: a tiny model's results never replace the shipped ones unasked)")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="seeds of every arm (default: 0 1 2)")
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


# ----------------------------------------------------------------------------------------------------------
# The plan
# ----------------------------------------------------------------------------------------------------------
def recipe_of(args) -> dict:
    recipe = dict(QUICK if args.quick else FULL)
    if args.corpus_chars is not None:
        recipe["corpus_chars"] = args.corpus_chars
    if args.epochs is not None:
        recipe["epochs"] = args.epochs
    if args.init is not None:
        recipe["init"] = None if args.init.lower() == "none" else args.init
    return recipe


def corpus_path(args, recipe) -> Path:
    """The pretraining text: a slice of --corpus written into OUT/corpus, or --corpus itself."""
    if not recipe["corpus_chars"]:
        return Path(args.corpus)
    src = Path(args.corpus)
    return Path(args.out) / "corpus" / f"{src.stem}.first-{recipe['corpus_chars']}{src.suffix or '.txt'}"


def tokenizer_path(args) -> str:
    """--tokenizer, else the warm start's, else the one the plan trains on the corpus."""
    init = recipe_of(args)["init"]
    return args.tokenizer or (str(Path(init) / "tokenizer.json") if init else
                              str(Path(args.out) / "tokenizer" / "tokenizer.json"))


def run_dir(out: Path, arm: str, seed: int) -> Path:
    return out / f"{arm}-seed{seed}"


def plan(args) -> list[Step]:
    """Every step in order (train.experiment): tokenizer, then per seed and arm pretraining, the mask probe and
    the fine-tuning, and per seed the baseline fine-tuning."""
    out, recipe = Path(args.out), recipe_of(args)
    corpus, tok = corpus_path(args, recipe), tokenizer_path(args)
    common = {"precision": args.precision, "no_progress": True}
    steps = []
    init = recipe["init"]
    model = {"init": init} if init else recipe["model"]
    baseline_shape = {**recipe["model"], **shape_of(init)} if init else recipe["model"]  # no pretraining
    if args.tokenizer is None and not init:
        steps.append(script("tokenizer", tokenizer,
                            ["--corpus", args.corpus, "--vocab-size", str(recipe["vocab_size"]),
                             "--max-chars", str(recipe["tokenizer_max_chars"]), "--seed", "0",
                             "--eval-text", "" if args.quick else args.valid, "--quiet",
                             "--out", str(out / "tokenizer")],
                            out / "tokenizer", marker="tokenizer.json"))
    data_sst2 = {"train": args.train, "dev": args.dev, "imdb": ""}
    for seed in args.seeds:
        for arm in args.arms:
            _, masking, dupe = ARMS[arm]
            folder = run_dir(out, arm, seed)
            steps.append(training(f"{arm}-seed{seed}/pretrain", pretrain, corpus=str(corpus), valid=args.valid,
                                  tokenizer=tok, **model, masking=masking, dupe_factor=dupe, epochs=recipe["epochs"],
                                  **recipe["pretrain"], cache_dir=str(out / "cache"), seed=seed, **common,
                                  out=str(folder / "mlm")))
            steps.append(function(f"{arm}-seed{seed}/probe", folder, "probe.json",
                                  lambda folder=folder, arm=arm, seed=seed: run_probe(folder, arm, seed, args, recipe),
                                  f"(train.ablation mask probe of {folder / 'mlm'})", kind="probe"))
            steps.append(training(f"{arm}-seed{seed}/finetune", finetune, init=str(folder / "mlm"), **data_sst2,
                                  **recipe["finetune"], seed=seed, **common, out=str(folder / "sst2")))
        if not args.no_baseline:
            folder = run_dir(out, BASELINE, seed)
            steps.append(training(f"{BASELINE}-seed{seed}/finetune", finetune, init="random", tokenizer=tok,
                                  **baseline_shape, **data_sst2, **recipe["finetune"], seed=seed, **common,
                                  out=str(folder / "sst2")))
    return steps


INIT_KEY = "init_weights_sha256"  # plan.json's record of the warm start's weights, beside the step commands


def weights_sha256(init: str | None) -> str | None:
    """The sha256 of the warm start's weights (its model*.safetensors in name order; for one file, what
    `sha256sum` prints), None from random weights or a Hub id. A folder path names a model, not its weights:
    the shipped assets/mini-roberta-mlm changed from phase 2 to phase 25 under the same path."""
    files = sorted(Path(init).glob("model*.safetensors")) if init and Path(init).is_dir() else []
    if not files:
        return None
    digest = hashlib.sha256()
    for file in files:
        digest.update(file.read_bytes())
    return digest.hexdigest()


def recorded_init_sha256(out) -> str | None:
    """The warm start's weights the runs in `out` began from (plan.json), None if not recorded."""
    path = Path(out) / "plan.json"
    return json.loads(path.read_text(encoding="utf-8")).get(INIT_KEY) if path.is_file() else None


def check_plan(out: Path, steps: list[dict], init_sha256: str | None = None) -> list[str]:
    """OUT/plan.json records the command of every step ever planned and the warm start's weights. Returns the
    steps that already have output made with another run's options or from other starting weights (then
    nothing is recorded); else records the plan and returns []."""
    path = out / "plan.json"
    recorded = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    changed = [s.name for s in steps
               if not same_run(recorded.get(s.name, s.command), s.command) and s.folder.exists()]
    # runs from other weights: any run folder of this ablation, planned now or not (another --seeds, --arms)
    runs = sorted(p.name for p in out.glob("*-seed*") if p.is_dir()) if out.is_dir() else []
    if INIT_KEY in recorded and recorded[INIT_KEY] != init_sha256 and runs:
        changed += [name for name in runs if name not in changed]
    if changed:
        return changed
    if INIT_KEY in recorded or not runs:  # not guessed for runs that began before the weights were recorded
        recorded[INIT_KEY] = init_sha256
    recorded.update({s.name: s.command for s in steps})
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(recorded, indent=2) + "\n")
    return []


# ----------------------------------------------------------------------------------------------------------
# Corpus slice
# ----------------------------------------------------------------------------------------------------------
def slice_corpus(source: Path, chars: int, dest: Path) -> dict:
    """The first `chars` characters of `source`, extended to the end of the document they stop in.

    WikiText layout: a document runs up to the next ` = Title = ` line; otherwise one line is one document.
    Writing the raw lines keeps the file readable by `train.data` exactly as the original. The same slice
    for every seed and arm (a seed only changes the order of the documents, not the tokens)."""
    from .data import _TITLE

    if not source.is_file():
        raise FileNotFoundError(f"--corpus {source}: no such file (--corpus-chars slices a local text file)")
    lines = source.read_text(encoding="utf-8").splitlines(keepends=True)
    titled = any(_TITLE.match(line.rstrip("\r\n")) for line in lines)
    kept, taken = [], 0
    for line in lines:
        starts_document = _TITLE.match(line.rstrip("\r\n")) if titled else line.strip()
        if taken >= chars and starts_document:
            break
        kept.append(line)
        taken += len(line)
    text = "".join(kept)
    documents = sum(1 for line in kept if (_TITLE.match(line.rstrip("\r\n")) if titled else line.strip()))
    if not dest.is_file() or dest.read_text(encoding="utf-8") != text:
        dest.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(dest, text)
    return {"source": str(source), "file": str(dest), "chars": len(text), "documents": documents,
            "source_chars": sum(map(len, lines))}


# ----------------------------------------------------------------------------------------------------------
# Mask probe
# ----------------------------------------------------------------------------------------------------------
def _mlm_scores(model, masked, batch_size: int = 64) -> dict:
    """Mean loss and accuracy over the targets of an already masked batch (as train.evaluate.evaluate_mlm)."""
    loss_sum, correct, count = masked_lm_sums(model, masked, batch_size)
    return {"loss": loss_sum / max(count, 1), "accuracy": correct / max(count, 1), "targets": count}


def count_distinct_masks(masking: str, dupe_factor, tok, rows, seed: int, epochs: int) -> dict:
    """How many different masks the training masker gives each row over `epochs` epochs, asked the way
    `train.pretrain` asks it (`MLMTask.make_batch(indices, epoch)`)."""
    import torch

    import roberta

    masker = roberta.make_masker(masking, tok, seed=seed, dupe_factor=dupe_factor or DUPE_FACTOR)
    task = pretrain.MLMTask(rows, masker, pad_id=tok.token_to_id("<pad>"))
    indices = torch.arange(len(rows))
    seen = [set() for _ in range(len(rows))]
    for epoch in range(epochs):
        batch = task.make_batch(indices, epoch)
        for i in range(len(rows)):
            seen[i].add((tuple(batch["input_ids"][i].tolist()), tuple(batch["labels"][i].tolist())))
    distinct = [len(s) for s in seen]
    return {"rows": len(rows), "epochs": epochs, "distinct_per_row_min": min(distinct),
            "distinct_per_row_max": max(distinct), "distinct_per_row_mean": sum(distinct) / len(distinct)}


def run_probe(folder: Path, arm: str, seed: int, args, recipe) -> int:
    """The probe step: probe.json, and its figures printed."""
    probe = mask_probe(folder, arm, seed, args, recipe)
    seen = probe["train_rows_seen_mask"]
    print(f"probe: training rows with fresh masks loss {probe['train_rows_fresh_mask']['loss']:.4f}"
          + (f", with the mask trained on {seen['loss']:.4f}" if seen else "")
          + f"; {probe['masks']['distinct_per_row_mean']:g} distinct masks per row over "
            f"{probe['masks']['epochs']} epochs", flush=True)
    return 0


def mask_probe(folder: Path, arm: str, seed: int, args, recipe) -> dict:
    """probe.json: MLM loss on training rows under their last-epoch training mask and under fresh masks."""
    import torch

    import roberta

    from . import data

    started = time.time()
    mlm = folder / "mlm"
    _, masking, dupe = ARMS[arm]
    tok = roberta.load_tokenizer(tokenizer_path(args))
    model = roberta.RobertaForMaskedLM.from_pretrained(mlm).eval()
    documents, _ = data.load_mixture_with_stats(str(corpus_path(args, recipe)), char_budget=None, seed=seed)
    rows = data.pack_sequences(documents, tok, model.config.max_length, cache_dir=Path(args.out) / "cache")
    train_log = [e for e in read_log(mlm / "log.jsonl") if e["type"] == "train"]
    last_epoch = train_log[-1]["epoch"] if train_log else 0
    probe_rows = rows[:recipe["probe_rows"]]
    ids = list(range(len(probe_rows)))
    precision = resolve_precision(args.precision, torch.device("cpu"))
    with autocast(torch.device("cpu"), precision):
        fresh = _mlm_scores(model, roberta.DynamicMasker.from_tokenizer(tok, seed=PROBE_SEED_OFFSET + seed)(probe_rows))
        seen = None
        if masking == "static":
            masker = roberta.make_masker("static", tok, seed=seed, dupe_factor=dupe)
            seen = _mlm_scores(model, masker(probe_rows, example_ids=ids, epoch=last_epoch))
    epochs = math.ceil(recipe["epochs"])
    audit = count_distinct_masks(masking, dupe, tok, rows[:8], seed, epochs)
    probe = {"rows": len(probe_rows), "last_epoch": last_epoch, "precision": precision,
             "train_rows_seen_mask": seen, "train_rows_fresh_mask": fresh, "masks": audit,
             "time_s": round(time.time() - started, 1)}
    write_atomic(folder / "probe.json", json.dumps(probe, indent=2) + "\n")
    return probe


# ----------------------------------------------------------------------------------------------------------
# Results
# ----------------------------------------------------------------------------------------------------------
def _load_json(path: Path):
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
    mlm, probe = RunMetrics.read(folder / "mlm", missing_ok=True), _load_json(folder / "probe.json")
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
            "held_out": "final: every row of --valid, one fixed mask per seed (train.evaluate.evaluate_mlm); "
                        "curves: the first --eval-rows rows, same mask",
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


def _aligned(records: list[dict], curve: str, key: str):
    """(x tokens, mean, min, max) over seeds on the steps every seed has."""
    import numpy as np

    if not records:
        return None
    steps = set(records[0][curve]["step"])
    for r in records[1:]:
        steps &= set(r[curve]["step"])
    steps = sorted(steps)
    if not steps:
        return None
    values, tokens = [], []
    for r in records:
        index = {s: i for i, s in enumerate(r[curve]["step"])}
        values.append([r[curve][key][index[s]] for s in steps])
        tokens.append([r[curve]["tokens"][index[s]] for s in steps])
    values = np.array(values, dtype=float)
    return np.mean(tokens, axis=0), values.mean(0), values.min(0), values.max(0)


def plot(results: dict, png: Path) -> None:
    """curves.png: held-out loss, training loss, the mask probe and SST-2 dev accuracy, per arm."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.patches import Patch

    arms = {k: v for k, v in results["arms"].items() if k != BASELINE}
    fig, axes = plt.subplots(2, 2, figsize=(12, 8.5))
    (ax_eval, ax_train), (ax_probe, ax_sst) = axes
    for arm, info in arms.items():
        records = list(info["seeds"].values())
        color, label = COLORS.get(arm), f"{info['label']} (n={info['n']})"
        held = _aligned(records, "eval_curve", "loss")
        if held:
            x, mean, lo, hi = held
            ax_eval.plot(x, mean, "o-", ms=2.5, color=color, label=label)
            ax_eval.fill_between(x, lo, hi, color=color, alpha=0.2, lw=0)
            ax_train.plot(x, mean, "--", color=color, lw=1)
        train = _aligned(records, "train_curve", "loss")
        if train:
            x, mean, lo, hi = train
            ax_train.plot(x, mean, color=color, lw=1.2, label=label)
            ax_train.fill_between(x, lo, hi, color=color, alpha=0.2, lw=0)
    ax_eval.set(title="held-out MLM loss (wiki.valid), mean and min-max over seeds", xlabel="training tokens",
                ylabel="loss")
    ax_train.set(title="training loss on the masks fed (solid) vs held-out (dashed)", xlabel="training tokens",
                 ylabel="loss")
    for ax in (ax_eval, ax_train):
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8)

    names = list(arms)
    kinds = [("probe_seen_mask_loss", "training rows, mask trained on", "///"),
             ("probe_fresh_mask_loss", "training rows, fresh mask", ""),
             ("mlm_loss", "held-out rows", "..")]
    width = 0.8 / len(kinds)
    for j, (key, _, hatch) in enumerate(kinds):
        xs = np.arange(len(names)) + (j - (len(kinds) - 1) / 2) * width
        for x, arm in zip(xs, names):
            mean, std = arms[arm]["mean"].get(key), arms[arm]["std"].get(key)
            if mean is None:
                continue
            ax_probe.bar(x, mean, width, yerr=std or 0.0, color=COLORS.get(arm), alpha=0.35 + 0.3 * j,
                         hatch=hatch, edgecolor="black", lw=0.5, capsize=3)
    shown = [arms[a]["mean"].get(k) for a in names for k, _, _ in kinds if arms[a]["mean"].get(k) is not None]
    if shown:  # the differences are a few percent of the loss: do not start the axis at 0
        span = max(shown) - min(shown) or abs(max(shown)) * 0.05 or 1.0
        ax_probe.set_ylim(max(0.0, min(shown) - 0.6 * span), max(shown) + 0.6 * span)  # a loss is never < 0
    ax_probe.set_xticks(range(len(names)), [textwrap.fill(arms[a]["label"], 18) for a in names], fontsize=8)
    ax_probe.set(title="what was memorised: final MLM loss (mean, std over seeds)", ylabel="loss")
    ax_probe.legend([Patch(facecolor="white", edgecolor="black", hatch=h) for _, _, h in kinds],
                    [label for _, label, _ in kinds], fontsize=8)
    ax_probe.grid(alpha=0.3, axis="y")

    bars = [a for a in results["arms"] if results["arms"][a]["mean"].get("sst2_accuracy") is not None]
    for i, arm in enumerate(bars):
        info = results["arms"][arm]
        ax_sst.bar(i, info["mean"]["sst2_accuracy"] * 100, 0.6, yerr=(info["std"]["sst2_accuracy"] or 0) * 100,
                   color=COLORS.get(arm), capsize=4, alpha=0.8)
        dots = [r["sst2_accuracy"] * 100 for r in info["seeds"].values()]
        ax_sst.plot([i] * len(dots), dots, "k.", ms=5)
    if bars:
        low = min(r["sst2_accuracy"] for a in bars for r in results["arms"][a]["seeds"].values()) * 100
        ax_sst.set_ylim(max(0, low - 5), min(100, max(
            r["sst2_accuracy"] for a in bars for r in results["arms"][a]["seeds"].values()) * 100 + 3))
    ax_sst.set_xticks(range(len(bars)), [textwrap.fill(results["arms"][a]["label"], 18) for a in bars], fontsize=8)
    ax_sst.set(title="SST-2 dev accuracy, same fine-tuning (mean, std; dots: seeds)", ylabel="accuracy %")
    ax_sst.grid(alpha=0.3, axis="y")
    setup = results["setup"]
    fig.suptitle(f"Static vs dynamic masking: {setup.get('parameters') or '?':,} parameters, "
                 f"{setup.get('epochs'):g} epochs over {setup.get('train_rows') or '?':,} rows "
                 f"({setup.get('train_tokens_per_run') or '?':,} tokens per run), status {results['status']}"
                 if setup.get("parameters") else "Static vs dynamic masking", fontsize=11)
    save_figure(fig, png)


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


# ----------------------------------------------------------------------------------------------------------
# Main
# ----------------------------------------------------------------------------------------------------------
def _progress(steps: list[dict], budget_min: float, session_start: float) -> None:
    """Measured throughput and projected total after a finished run."""
    spent, per_run, tokens_s, remaining = 0.0, [], [], 0
    for s in steps:
        if s.kind == "probe":
            probe = _load_json(s.folder / "probe.json")
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
          f"({other / 60:.1f} min outside pretraining), projected total {projected / 60:.0f} min "
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
    out, recipe = output_folder(args.out), recipe_of(args)  # a file there was "[Errno 17] File exists"
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
                  f"(budget {args.time_budget_min:g} min; see --help)")
        for s in steps:
            print(s.command)
        return EXIT_OK
    if recipe["corpus_chars"] and str(args.corpus).startswith("hub:"):
        raise UserError("--corpus-chars slices a local file; pass --corpus-chars 0 with a hub: corpus")
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
