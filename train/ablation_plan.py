"""The masking ablation's steps (`train.experiment`): the plan of every run, OUT/plan.json's guard against runs
made with other options or from other starting weights, and the corpus slice every arm pretrains on."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

from roberta.files import write_atomic

from . import finetune, pretrain, tokenizer
from .ablation_probe import run_probe
from .ablation_setup import ARMS, BASELINE, corpus_path, recipe_of, run_dir, tokenizer_path
from .experiment import Step, function, same_run, script, shape_of, training


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


def slice_corpus(source: Path, chars: int, dest: Path) -> dict:
    """The first `chars` characters of `source`, extended to the end of the document they stop in.

    WikiText layout: a document runs up to the next ` = Title = ` line; otherwise one line is one document.
    Writing the raw lines keeps the file readable by `train.data` exactly as the original. The same slice
    for every seed and arm (a seed only changes the order of the documents, not the tokens)."""
    from .data import is_wikitext, starts_document

    if not source.is_file():
        raise FileNotFoundError(f"--corpus {source}: no such file (--corpus-chars slices a local text file)")
    lines = source.read_text(encoding="utf-8").splitlines(keepends=True)
    wikitext = is_wikitext(lines)
    kept, taken = [], 0
    for line in lines:
        if taken >= chars and starts_document(line, wikitext):
            break
        kept.append(line)
        taken += len(line)
    text = "".join(kept)
    documents = sum(starts_document(line, wikitext) for line in kept)
    if not dest.is_file() or dest.read_text(encoding="utf-8") != text:
        dest.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(dest, text)
    return {"source": str(source), "file": str(dest), "chars": len(text), "documents": documents,
            "source_chars": sum(map(len, lines))}
