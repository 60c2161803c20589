"""The masking ablation's arms, its two recipes (FULL, the budgeted one; QUICK, the pipeline in seconds) and
where each run's files go. `train.ablation` runs it; the budget arithmetic is in its --help."""
from __future__ import annotations

from pathlib import Path


ARMS = {  # name -> (label, masking, dupe factor)
    "dynamic": ("dynamic (RoBERTa)", "dynamic", None),
    "static-dupe1": ("static, one fixed mask", "static", 1),
    "static-dupe10": ("static, 10 masks (BERT)", "static", 10),
}
BASELINE = "random-init"

# The two recipes. FULL is the budgeted one (see train.ablation's docstring); QUICK checks the pipeline in seconds.
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
