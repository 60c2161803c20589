"""Fine-tune a sentence classifier (SST-2 sentiment by default) from a pretrained MLM folder or from scratch.

    python -m train.finetune --init runs/mini-roberta --out runs/mini-roberta-sst2
    python -m train.finetune --init random --tokenizer runs/mini-roberta --out runs/random-sst2   # no pretraining

The encoder comes from --init (`RobertaForSequenceClassification.from_pretrained_encoder`), the classifier
head is new. Every text goes through `train.data.normalize_for_classifier` (as in evaluation and the app).
Batches are padded to their longest sentence. The dev set is evaluated every --eval-every steps and the best
checkpoint is the one kept; it is then also scored on a sample of IMDB reviews (out of domain).
Training machinery: `train.loop` (resume, atomic checkpoints, signals, DDP: see there).

Writes a Hub-ready folder: config.json + model.safetensors (best dev checkpoint), tokenizer.json,
metrics.json (dev and IMDB accuracy, train time, ...), log.jsonl, curves.png and a model card README.md.
"""
from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

import torch

import roberta
from roberta.tokenizer import lowercasing, save_tokenizer

from . import loop

DEFAULT_TRAIN = "../shared/data/sst2/train.tsv"
DEFAULT_DEV = "../shared/data/sst2/dev.tsv"
DEFAULT_IMDB = "../shared/data/imdb/train.tsv"


def build_parser() -> argparse.ArgumentParser:
    p = loop.script_parser("train.finetune", __doc__)
    g = p.add_argument_group("initialisation")
    g.add_argument("--init", required=True,
                   help="a pretrained MLM folder (config.json, model.safetensors, tokenizer.json) or a Hub id; "
                        "'random' for a from-scratch encoder (then --preset and --tokenizer)")
    g.add_argument("--tokenizer", default=None,
                   help="tokenizer.json or a folder holding one (default: the --init folder's)")
    g = p.add_argument_group("data")
    g.add_argument("--train", default=DEFAULT_TRAIN,
                   help="TSV/CSV with a header (sentence or text, label) or hub:NAME:CONFIG:SPLIT, e.g. "
                        "hub:stanfordnlp/sst2:default:train (default: %(default)s)")
    g.add_argument("--dev", default=DEFAULT_DEV, help="evaluation set, same format (default: %(default)s)")
    g.add_argument("--imdb", default=DEFAULT_IMDB,
                   help="out-of-domain check: IMDB reviews TSV (text, label); '' to skip (default: %(default)s)")
    g.add_argument("--imdb-n", type=int, default=1000, help="IMDB reviews sampled (default: %(default)s)")
    g.add_argument("--train-n", type=int, default=0,
                   help="use a seeded random sample of this many training examples, 0 = all (default: %(default)s)")
    g.add_argument("--labels", default="negative,positive",
                   help="label names in id order; labels in the files are ids or these names (default: %(default)s)")
    g.add_argument("--text-column", default=None, help="default: sentence, else text")
    g.add_argument("--label-column", default=None, help="default: label")
    loop.add_training_args(p, batch_size=32, lr=1e-4, warmup=0.06, weight_decay=0.1, eval_every=500,
                           out="runs/finetune", max_length=128)
    # Two passes over SST-2's 67k phrases; a small encoder wants a larger lr than roberta-base's 1e-5..3e-5.
    # Dropout 0.1 in fine-tuning even when the pretrained config has none (our pretraining runs without).
    p.set_defaults(epochs=2.0, dropout=0.1)
    return p


def _trim(input_ids: torch.Tensor, pad_id: int) -> torch.Tensor:
    """Drop the columns that are padding in every row (dynamic padding)."""
    return input_ids[:, :max(1, int(input_ids.ne(pad_id).sum(1).max()))]


class ClassificationTask(loop.Task):
    best_metric = "accuracy"

    def __init__(self, input_ids: torch.Tensor, labels: torch.Tensor, pad_id: int, evaluate=None):
        self.input_ids, self.labels, self.pad_id, self._evaluate = input_ids, labels, pad_id, evaluate
        self.num_rows = len(labels)

    def make_batch(self, indices, epoch):
        return {"input_ids": _trim(self.input_ids[indices], self.pad_id), "labels": self.labels[indices]}

    def micro_batch(self, batch, rows):
        return {"input_ids": _trim(batch["input_ids"][rows], self.pad_id), "labels": batch["labels"][rows]}

    def num_targets(self, batch):
        return len(batch["labels"])

    def num_tokens(self, batch):
        return int(batch["input_ids"].ne(self.pad_id).sum())

    def tokens_per_row(self):
        return self.input_ids.ne(self.pad_id).sum().item() / self.num_rows

    def loss_sum(self, model, batch):
        return model(input_ids=batch["input_ids"], labels=batch["labels"]).loss * len(batch["labels"])

    def evaluate(self, model):
        return self._evaluate(model) if self._evaluate else {}


def build_model(args, id2label: dict[int, str]):
    """(model, tokenizer): a pretrained encoder with a new head, or a random one (--init random)."""
    if args.init == "random":
        if not args.tokenizer:
            raise loop.UserError("--init random needs --tokenizer")
        tokenizer = roberta.load_tokenizer(args.tokenizer)
        config = loop.model_config(args, tokenizer)
        config.id2label = dict(id2label)
        torch.manual_seed(args.seed)
        return roberta.RobertaForSequenceClassification(config), tokenizer
    if given := loop.shape_options_given(args):
        raise loop.UserError(f"{', '.join(given)} only apply with --init random (the pretrained model fixes its shape)")
    tokenizer = roberta.load_tokenizer(args.tokenizer or args.init)
    overrides = {}
    if args.dropout is not None:
        overrides.update(hidden_dropout_prob=args.dropout, attention_probs_dropout_prob=args.dropout)
    torch.manual_seed(args.seed)
    model = roberta.RobertaForSequenceClassification.from_pretrained_encoder(args.init, id2label=id2label, **overrides)
    if model.config.vocab_size != tokenizer.get_vocab_size():
        raise loop.UserError(f"the tokenizer has {tokenizer.get_vocab_size()} tokens, "
                             f"the model {model.config.vocab_size}")
    return model, tokenizer


def run(args, dist: loop.Dist) -> int:
    from . import data
    from .evaluate import encode_for_classifier, evaluate_classifier, pad_batch
    from .model_card import write_model_card

    started = time.time()
    out = Path(args.out)
    loop.seed_everything(args.seed)
    id2label = dict(enumerate(name.strip() for name in args.labels.split(",")))
    train_texts, train_labels, _ = data.read_labeled(args.train, args.text_column, args.label_column, id2label)
    if 0 < args.train_n < len(train_texts):
        keep = sorted(random.Random(args.seed).sample(range(len(train_texts)), args.train_n))
        train_texts, train_labels = [train_texts[i] for i in keep], [train_labels[i] for i in keep]
    dev_texts, dev_labels, _ = data.read_labeled(args.dev, args.text_column, args.label_column, id2label)
    imdb = data.imdb_sample(args.imdb, args.imdb_n, seed=args.seed) if args.imdb else None
    model, tokenizer = build_model(args, id2label)
    tokenizer = lowercasing(tokenizer)  # SST-2 is lower-case; the saved tokenizer.json lower-cases every input
    max_length = min(args.max_length or model.config.max_length, model.config.max_length)
    pad_id = model.config.pad_token_id

    # normalize_for_classifier, <s> text </s>, truncated: exactly what evaluation (and the app) feed the model
    input_ids, _ = pad_batch(encode_for_classifier(tokenizer, train_texts, max_length), pad_id)
    eval_batch = max(32, args.batch_size)

    def dev_accuracy(m):
        return evaluate_classifier(m, tokenizer, dev_texts, dev_labels, eval_batch, max_length=max_length)

    if dist.is_main:
        print(f"{len(train_texts):,} training examples ({args.train}), {len(dev_texts):,} dev ({args.dev}); "
              f"{model.num_parameters():,} parameters, init {args.init}", flush=True)
    task = ClassificationTask(input_ids, torch.tensor(train_labels), pad_id, dev_accuracy)
    trainer = loop.Trainer(model, task, args, dist, out)
    result = trainer.fit()
    if result.status == "interrupted":
        return loop.EXIT_INTERRUPTED
    if not dist.is_main:
        return 0

    # ----- the Hub-ready folder, from the best dev checkpoint -----
    model = trainer.model
    if result.best_path is not None:
        weights, _ = loop.Checkpoints.load(result.best_path, dist.device)
        model.load_state_dict(weights)
    model.eval()
    with torch.no_grad(), loop.autocast(dist.device, trainer.precision):
        dev = dev_accuracy(model)
        ood = None
        if imdb is not None:
            ood = evaluate_classifier(model, tokenizer, imdb[0], imdb[1], batch_size=eval_batch, max_length=max_length)
    model.save_pretrained(out)
    save_tokenizer(tokenizer, out, model.config.max_length)
    metrics = {
        "dev_accuracy": dev["accuracy"], "dev_examples": dev["n"], "dev_data": args.dev,
        "imdb_accuracy": ood["accuracy"] if ood else None, "imdb_examples": ood["n"] if ood else 0,
        "imdb_data": args.imdb or None, "best_step": result.best["step"] if result.best else result.step,
        "init": args.init, "train_examples": len(train_texts), "train_data": args.train,
        "train_steps": result.step, "train_tokens": result.tokens, "stopped_by": result.status,
        "parameters": model.num_parameters(), "train_time_s": round(result.elapsed, 1),
        "wall_time_s": round(time.time() - started, 1), "hardware": loop.hardware_info(dist, trainer.precision),
        "command": args._command,
    }
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    trainer.write_curves()
    init = "a randomly initialised encoder (no pretraining)" if args.init == "random" else f"`{args.init}`"
    write_model_card(
        out, title=f"Sentiment classifier fine-tuned from {'scratch' if args.init == 'random' else args.init}",
        task="text-classification", metrics=metrics,
        recipe=loop.card_recipe(args),
        notes=f"Fine-tuned from {init} on `{args.train}`; the checkpoint with the best accuracy on `{args.dev}` "
              f"(step {metrics['best_step']}) is the one kept, so the dev figure is slightly optimistic. "
              "IMDB reviews are out of domain (long, natural-cased reviews versus SST-2's short phrases).")
    trainer.cleanup()
    imdb_msg = f", IMDB accuracy {ood['accuracy']:.4f}" if ood else ""
    print(f"dev accuracy {dev['accuracy']:.4f}{imdb_msg}; wrote {out}", flush=True)
    return 0


def main(argv=None) -> int:
    return loop.run_cli(build_parser(), run, argv, module="train.finetune")


if __name__ == "__main__":
    raise SystemExit(main())
