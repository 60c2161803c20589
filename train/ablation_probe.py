"""The masking ablation's mask probe (probe.json per arm and seed): MLM loss on training rows under the mask
they were trained on and under fresh masks, and how many distinct masks the training masker gave each row."""
from __future__ import annotations

import json
import math
import time
from pathlib import Path

from roberta.files import write_atomic

from . import pretrain
from .ablation_setup import ARMS, corpus_path, tokenizer_path
from .evaluate import masked_lm_sums
from .reporting import read_log
from .runtime import autocast, resolve_precision


PROBE_SEED_OFFSET = 1_000_000  # fresh probe masks: a stream no training or evaluation mask comes from


def _mlm_scores(model, masked, batch_size: int = 64) -> dict:
    """Mean loss and accuracy over the targets of an already masked batch (as train.evaluate.evaluate_masked)."""
    loss_sum, correct, count = masked_lm_sums(model, masked, batch_size)
    return {"loss": loss_sum / max(count, 1), "accuracy": correct / max(count, 1), "targets": count}


def count_distinct_masks(masking: str, dupe_factor, tok, rows, seed: int, epochs: int) -> dict:
    """How many different masks the training masker gives each row over `epochs` epochs, asked the way
    `train.pretrain` asks it (`MLMTask.make_batch(indices, epoch)`)."""
    import torch

    import roberta

    masker = roberta.make_masker(masking, tok, seed=seed, dupe_factor=dupe_factor)
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

    from . import data, packing

    started = time.time()
    mlm = folder / "mlm"
    _, masking, dupe = ARMS[arm]
    tok = roberta.load_tokenizer(tokenizer_path(args))
    model = roberta.RobertaForMaskedLM.from_pretrained(mlm).eval()
    documents, _ = data.load_mixture_with_stats(str(corpus_path(args, recipe)), char_budget=None, seed=seed)
    rows = packing.pack_sequences(documents, tok, model.config.max_length, cache_dir=Path(args.out) / "cache")
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
