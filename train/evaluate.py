"""Held-out evaluation: masked-LM loss/accuracy/perplexity, and classifier accuracy (SST-2, IMDB, any TSV).

    python -m train.evaluate --model runs/mini --mlm-text ../shared/data/wikitext-2/wiki.valid.tokens --out runs/mini/metrics.json
    python -m train.evaluate --model runs/sst2 --labeled ../shared/data/sst2/dev.tsv \\
        --imdb ../shared/data/imdb/train.tsv --imdb-n 1000 --out runs/sst2/metrics.json

MLM figures use one fixed, seeded mask over the whole held-out set (the same positions are masked in
every run and for every batch size), so numbers are comparable between checkpoints and runs.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

from roberta import DynamicMasker, RobertaForMaskedLM, RobertaForSequenceClassification, load_tokenizer
from roberta.hub import CONFIG_NAME, resolve_file
from roberta.masking import IGNORE_INDEX

from .data import imdb_sample, normalize_for_classifier, pack_sequences, read_documents, read_labeled


def _device(model) -> torch.device:
    return next(model.parameters()).device


@torch.no_grad()
def evaluate_mlm(model, tokenizer, documents_or_rows, batch_size: int = 32, seed: int = 0,
                 max_length: int | None = None, cache_dir=None) -> dict:
    """{"loss", "accuracy", "perplexity", "tokens", "sequences"} of `model` on held-out text.

    `documents_or_rows`: a list of documents (packed FULL-SENTENCES to `max_length`, default the model's
    longest input) or an already packed LongTensor (N, T). Loss is the mean cross-entropy per masked token
    (summed over batches, not averaged per batch), accuracy the share of masked tokens predicted exactly.
    """
    if isinstance(documents_or_rows, torch.Tensor):
        rows = documents_or_rows.long()
    else:
        rows = pack_sequences(list(documents_or_rows), tokenizer, max_length or model.config.max_length, cache_dir)
    masked = DynamicMasker.from_tokenizer(tokenizer, seed=seed)(rows)  # one fixed mask for the whole set
    was_training, device = model.training, _device(model)
    model.eval()
    loss_sum, correct, count = 0.0, 0, 0
    for start in range(0, len(rows), batch_size):
        labels = masked.labels[start:start + batch_size].to(device)
        if not labels.ne(IGNORE_INDEX).any():
            continue
        out = model(masked.input_ids[start:start + batch_size].to(device), labels=labels)
        targets = labels[labels.ne(IGNORE_INDEX)]  # (N,) in the order of out.logits (N, V)
        loss_sum += F.cross_entropy(out.logits.float(), targets, reduction="sum").item()
        correct += (out.logits.argmax(-1) == targets).sum().item()
        count += targets.numel()
    model.train(was_training)
    if count == 0:
        raise ValueError("no token was masked: the evaluation text is too short")
    loss = loss_sum / count
    return {"loss": loss, "accuracy": correct / count, "perplexity": math.exp(min(loss, 700.0)),
            "tokens": count, "sequences": len(rows)}


def encode_for_classifier(tokenizer, texts: list[str], max_length: int, normalize: bool = True) -> list[list[int]]:
    """`<s> text </s>` ids per text, normalised (`normalize_for_classifier`) and truncated to max_length."""
    if normalize:
        texts = [normalize_for_classifier(t) for t in texts]
    bos, eos = tokenizer.token_to_id("<s>"), tokenizer.token_to_id("</s>")
    return [[bos] + e.ids[:max_length - 2] + [eos] for e in tokenizer.encode_batch(texts, add_special_tokens=False)]


def pad_batch(sequences: list[list[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(input_ids, attention_mask), both (B, longest), padded on the right."""
    longest = max(map(len, sequences))
    ids = torch.full((len(sequences), longest), pad_id, dtype=torch.long)
    for i, seq in enumerate(sequences):
        ids[i, :len(seq)] = torch.tensor(seq, dtype=torch.long)
    return ids, ids.ne(pad_id)


@torch.no_grad()
def evaluate_classifier(model, tokenizer, texts: list[str], labels: list[int], batch_size: int = 32,
                        max_length: int | None = None, normalize: bool = True) -> dict:
    """{"accuracy", "n", "loss", "macro_f1", "confusion"} (confusion[true][predicted]) of a classifier."""
    if len(texts) != len(labels) or not texts:
        raise ValueError(f"need as many labels as texts (and at least one): {len(texts)} texts, {len(labels)} labels")
    num_labels = model.config.num_labels
    if max(labels) >= num_labels or min(labels) < 0:
        raise ValueError(f"labels {sorted(set(labels))} do not fit the model's {num_labels} classes")
    seqs = encode_for_classifier(tokenizer, texts, max_length or model.config.max_length, normalize)
    order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))  # similar lengths together: less padding
    was_training, device = model.training, _device(model)
    model.eval()
    logits = torch.empty(len(seqs), num_labels)
    for start in range(0, len(order), batch_size):
        idx = order[start:start + batch_size]
        ids, mask = pad_batch([seqs[i] for i in idx], model.config.pad_token_id)
        logits[idx] = model(ids.to(device), attention_mask=mask.to(device)).logits.float().cpu()
    model.train(was_training)
    gold = torch.tensor(labels)
    pred = logits.argmax(-1)
    confusion = torch.zeros(num_labels, num_labels, dtype=torch.long)
    confusion.index_put_((gold, pred), torch.ones_like(gold), accumulate=True)
    tp = confusion.diag().float()
    f1 = 2 * tp / (confusion.sum(0) + confusion.sum(1)).clamp(min=1)
    present = confusion.sum(1) > 0
    return {"accuracy": (pred == gold).float().mean().item(), "n": len(labels),
            "loss": F.cross_entropy(logits, gold).item(), "macro_f1": f1[present].mean().item(),
            "confusion": confusion.tolist()}


# ----- command line -----
def load_model(model_id: str):
    """(model, tokenizer) from a saved folder or Hub id; the head follows config.json's architecture."""
    config = json.loads(Path(resolve_file(model_id, CONFIG_NAME)).read_text())
    arch = (config.get("architectures") or ["RobertaForMaskedLM"])[0]
    cls = RobertaForSequenceClassification if "SequenceClassification" in arch else RobertaForMaskedLM
    return cls.from_pretrained(model_id), load_tokenizer(model_id)


def _take_chars(documents: list[str], max_chars: int | None) -> list[str]:
    if not max_chars:
        return documents
    out, total = [], 0
    for doc in documents:
        if total >= max_chars:
            break
        out.append(doc[:max_chars - total])
        total += len(out[-1])
    return out


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="python -m train.evaluate", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--model", required=True, help="a folder from save_pretrained (with tokenizer.json) or a Hub id")
    p.add_argument("--mlm-text", help="held-out text for MLM metrics (a path, folder or hub: spec)")
    p.add_argument("--mlm-max-chars", type=int, default=0, help="use only the first N characters (0: all)")
    p.add_argument("--mlm-max-length", type=int, default=None,
                   help="pack the MLM text into rows of N tokens (default: the model's max input length)")
    p.add_argument("--labeled", help="labelled TSV/CSV (header sentence|text, label) or hub: spec")
    p.add_argument("--imdb", help="IMDB train.tsv (text<TAB>label); a fixed sample is scored")
    p.add_argument("--imdb-n", type=int, default=1000, help="IMDB sample size; default: %(default)s")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--seed", type=int, default=0, help="seed of the fixed MLM mask and the IMDB sample")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--cache-dir", help="cache the packed MLM text here")
    p.add_argument("--out", help="write the metrics as JSON (merged into the file if it exists)")
    args = p.parse_args(argv)
    if not (args.mlm_text or args.labeled or args.imdb):
        p.error("nothing to evaluate: give --mlm-text, --labeled and/or --imdb")
    return args


def run(args) -> dict:
    model, tokenizer = load_model(args.model)
    model.to(args.device)
    is_mlm = isinstance(model, RobertaForMaskedLM)
    if args.mlm_text and not is_mlm:
        raise ValueError(f"{args.model} is a classifier; --mlm-text needs a masked-LM model")
    if (args.labeled or args.imdb) and is_mlm:
        raise ValueError(f"{args.model} is a masked-LM model; --labeled/--imdb need a classifier")
    metrics = {}
    if args.mlm_text:
        docs = _take_chars(read_documents(args.mlm_text), args.mlm_max_chars)
        max_length = args.mlm_max_length or model.config.max_length
        if not 3 <= max_length <= model.config.max_length:
            raise ValueError(f"--mlm-max-length must be between 3 and {model.config.max_length}, got {max_length}")
        metrics["mlm"] = {"source": args.mlm_text, "seed": args.seed, "max_length": max_length,
                          **evaluate_mlm(model, tokenizer, docs, args.batch_size, args.seed, max_length=max_length,
                                         cache_dir=args.cache_dir)}
    if args.labeled:
        texts, labels, _ = read_labeled(args.labeled)
        metrics["labeled"] = {"source": args.labeled,
                              **evaluate_classifier(model, tokenizer, texts, labels, args.batch_size)}
    if args.imdb:
        texts, labels = imdb_sample(args.imdb, n=args.imdb_n, seed=args.seed)
        metrics["imdb"] = {"source": args.imdb, "seed": args.seed,
                           **evaluate_classifier(model, tokenizer, texts, labels, args.batch_size)}
    return metrics


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        metrics = run(args)
    except (OSError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    for name, m in metrics.items():
        shown = {k: (round(v, 4) if isinstance(v, float) else v) for k, v in m.items() if k != "confusion"}
        print(f"{name}: {shown}")
    if args.out:
        out = Path(args.out)
        merged = json.loads(out.read_text()) if out.exists() and out.stat().st_size else {}
        merged.update(metrics)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(merged, indent=2) + "\n")
        print(f"metrics -> {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
