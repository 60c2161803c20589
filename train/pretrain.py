"""Masked-language-model pretraining of RoBERTa from scratch (no next-sentence prediction).

    python -m train.pretrain --tokenizer runs/tokenizer --time-budget-min 180 --out runs/mini-roberta
    python -m train.pretrain ... --resume                       # continue after an interruption
    python -m train.pretrain --init runs/mini-roberta --out runs/mini-roberta-2   # a continuation phase
    torchrun --nproc_per_node 2 -m train.pretrain ...           # data-parallel, same global batch

Data: the --corpus mixture is read (`train.data.load_mixture`), packed RoBERTa-style into full rows of
--max-length tokens (FULL-SENTENCES: documents follow each other, separated by </s>) and cached in
--cache-dir. Masking: dynamic (RoBERTa, a fresh mask every time a row is seen) or static (BERT,
--dupe-factor fixed masks per row, cycled over epochs). The training machinery is `train.loop`.

Writes a Hub-ready folder: config.json + model.safetensors, tokenizer.json, metrics.json (held-out MLM
loss/accuracy/perplexity on --valid, tokens seen, wall time, hardware, the command line), log.jsonl,
curves.png and a model card README.md.
"""
from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path

import torch

import roberta
from roberta.masking import IGNORE_INDEX
from roberta.tokenizer import save_tokenizer

from . import loop

# The shipped pretraining mixture, by characters: all of WikiText-2 train, as much Wikipedia and IMDB
# (unlabelled reviews: the domain of SST-2) as keeps these shares without repeating a source (~23M tokens).
PRETRAIN_CORPUS = ("../shared/data/wikipedia-en=0.45,../shared/data/wikitext-2/wiki.train.tokens=0.1,"
                   "../shared/data/imdb/unsup.txt=0.45")

DEFAULT_VALID = "../shared/data/wikitext-2/wiki.valid.tokens"


def build_parser() -> argparse.ArgumentParser:
    p = loop.script_parser("train.pretrain", __doc__)
    g = p.add_argument_group("data")
    g.add_argument("--corpus", default=PRETRAIN_CORPUS,
                   help="training text: a file, a folder, hub:NAME[:CONFIG[:SPLIT[:COLUMN]]], or a mixture "
                        "'SOURCE=weight,...' sampled by characters (default: %(default)s)")
    g.add_argument("--corpus-chars", type=int, default=None,
                   help="characters to take from the mixture (default: as much as fits the weights without "
                        "repeating any source)")
    g.add_argument("--valid", default=DEFAULT_VALID, help="held-out text for evaluation (default: %(default)s)")
    g.add_argument("--eval-rows", type=int, default=256,
                   help="held-out rows used by the periodic evaluations (default: %(default)s)")
    g.add_argument("--final-eval-rows", type=int, default=0,
                   help="held-out rows of the final evaluation, 0 = all (default: %(default)s)")
    g.add_argument("--tokenizer", default=None,
                   help="tokenizer.json or a folder holding one; default: train one on --corpus with "
                        "`train.tokenizer` defaults (--vocab-size) and save it in OUT")
    g.add_argument("--vocab-size", type=int, default=32768,
                   help="vocabulary of a tokenizer trained on the fly (default: %(default)s)")
    g.add_argument("--cache-dir", default="cache/packed",
                   help="where packed rows are cached (default: %(default)s; '' = no cache)")
    g.add_argument("--init", default=None,
                   help="start from this pretrained MLM folder (or Hub id) instead of random weights: a "
                        "continuation phase with a fresh optimizer and schedule; its tokenizer is the default")
    g.add_argument("--seq-length", type=int, default=None,
                   help="tokens per packed training row (default: the model's max input length); shorter rows "
                        "give more optimizer steps for the same tokens. Held-out rows always use the max length")
    g = p.add_argument_group("masking")
    g.add_argument("--masking", choices=["dynamic", "static"], default="dynamic",
                   help="dynamic: new mask every pass (RoBERTa); static: --dupe-factor fixed masks (BERT)")
    g.add_argument("--dupe-factor", type=int, default=10, help="static masking: masks per row (default: %(default)s)")
    g.add_argument("--mlm-probability", type=float, default=0.15,
                   help="share of tokens selected (default: %(default)s)")
    g.add_argument("--output-bias", choices=["zero", "unigram"], default="zero",
                   help="initial MLM output bias of a new model: zero, or the log unigram frequencies of the "
                        "training rows (add-one smoothed), so the first prediction is the corpus's unigram "
                        "distribution instead of a uniform one (default: %(default)s)")
    loop.add_training_args(p, batch_size=64, lr=5e-4, warmup=300, weight_decay=0.01, eval_every=250,
                           out="runs/pretrain", max_length=None)
    # No dropout in pretraining: a run of ~1 pass over the data does not overfit, and dropout's random
    # masks cost ~30% of a CPU training step (benchmarks/bench_train_step.py). Fine-tuning keeps 0.1.
    p.set_defaults(dropout=0.0)
    return p


class MLMTask(loop.Task):
    """Rows of packed token ids; a batch is masked by the masker (dynamic or static)."""

    def __init__(self, rows: torch.Tensor, masker, pad_id: int, evaluate=None):
        self.rows, self.masker, self.pad_id, self._evaluate = rows, masker, pad_id, evaluate
        self.num_rows = len(rows)

    def make_batch(self, indices, epoch):
        masked = self.masker(self.rows[indices], example_ids=indices.tolist(), epoch=epoch)
        return {"input_ids": masked.input_ids, "labels": masked.labels}

    def num_targets(self, batch):
        return int(batch["labels"].ne(IGNORE_INDEX).sum())

    def num_tokens(self, batch):
        return int(batch["input_ids"].ne(self.pad_id).sum())

    def tokens_per_row(self):
        return self.rows.ne(self.pad_id).sum().item() / len(self.rows)

    def loss_sum(self, model, batch):
        # masked_only (roberta.loss): only the masked positions meet the vocabulary, by the fused training loss
        out = model(input_ids=batch["input_ids"], labels=batch["labels"], masked_only=True)
        return out.loss * int(batch["labels"].ne(IGNORE_INDEX).sum())  # no target in this slice: 0, a zero gradient

    def evaluate(self, model):
        return self._evaluate(model) if self._evaluate else {}

    def state_dict(self):
        return {"masker": self.masker.state_dict()}

    def load_state_dict(self, state):
        self.masker.load_state_dict(state["masker"])


def get_tokenizer(args, out: Path, dist: loop.Dist):
    """--tokenizer, or one trained on --corpus (rank 0 trains and saves it, the others read it)."""
    if args.tokenizer or args.init:
        return roberta.load_tokenizer(args.tokenizer or args.init)
    path = out / "tokenizer.json"
    if dist.is_main and not path.exists():
        from .tokenizer import build_tokenizer
        print(f"training a {args.vocab_size}-token tokenizer on {args.corpus}", flush=True)
        tokenizer, _ = build_tokenizer(args.corpus, vocab_size=args.vocab_size, seed=args.seed,
                                       show_progress=not args.no_progress)
        out.mkdir(parents=True, exist_ok=True)
        tokenizer.save(str(path))
    dist.barrier()
    return roberta.load_tokenizer(path)


def unigram_log_probs(rows: torch.Tensor, vocab_size: int, pad_id: int) -> torch.Tensor:
    """(V,) log frequencies of the tokens in `rows`, padding left out, add-one smoothed."""
    counts = torch.bincount(rows[rows.ne(pad_id)].flatten(), minlength=vocab_size).double() + 1.0
    return (counts / counts.sum()).log().float()


def build_model(args, config, tokenizer) -> roberta.RobertaForMaskedLM:
    """A random model of `config`, or the --init model (whose config fixes the shape) with --dropout."""
    if not args.init:
        return roberta.RobertaForMaskedLM(config)
    if given := loop.shape_options_given(args, "max_length"):
        raise loop.UserError(f"{', '.join(given)} cannot change the shape of the --init model")
    try:
        model = roberta.RobertaForMaskedLM.from_pretrained(args.init)
    except (OSError, ValueError) as err:
        raise loop.UserError(f"cannot load --init {args.init}: {err}") from None
    if model.config.vocab_size != tokenizer.get_vocab_size():
        raise loop.UserError(f"the tokenizer has {tokenizer.get_vocab_size()} tokens, the --init model "
                             f"{model.config.vocab_size}")
    p = config.hidden_dropout_prob  # from --dropout; layers read it when built, so rebuild with it
    resized = roberta.RobertaForMaskedLM(replace(model.config, hidden_dropout_prob=p, attention_probs_dropout_prob=p))
    resized.load_state_dict(model.state_dict())
    return resized


def run(args, dist: loop.Dist) -> int:
    from . import data
    from .evaluate import evaluate_mlm
    from .model_card import write_model_card

    started = time.time()
    out = Path(args.out)
    loop.seed_everything(args.seed)
    tokenizer = get_tokenizer(args, out, dist)
    say = print if dist.is_main else (lambda *a, **k: None)
    torch.manual_seed(args.seed)
    model = build_model(args, loop.model_config(args, tokenizer), tokenizer)
    config = model.config
    say(f"model: {args.init or args.preset + ' preset'}, {model.num_parameters():,} parameters, "
        f"vocabulary {config.vocab_size:,}", flush=True)
    seq_length = args.seq_length or config.max_length
    if not 8 <= seq_length <= config.max_length:
        raise loop.UserError(f"--seq-length must be between 8 and the model's max length {config.max_length}, "
                             f"got {seq_length}")
    cache = args.cache_dir or None
    say(f"reading {args.corpus}", flush=True)
    documents, sources = data.load_mixture_with_stats(args.corpus, char_budget=args.corpus_chars, seed=args.seed)
    rows = data.pack_sequences(documents, tokenizer, seq_length, cache_dir=cache)
    valid_rows = data.pack_sequences(data.read_documents(args.valid), tokenizer, config.max_length, cache_dir=cache)
    del documents
    say(f"{len(rows):,} training rows of {seq_length} tokens ({rows.ne(config.pad_token_id).sum():,} "
        f"tokens), {len(valid_rows):,} held-out rows", flush=True)

    masker = roberta.make_masker(args.masking, tokenizer, seed=args.seed, dupe_factor=args.dupe_factor,
                                 mlm_probability=args.mlm_probability)
    eval_batch = max(8, args.batch_size // max(1, args.grad_accum))

    def periodic_eval(model):
        return evaluate_mlm(model, tokenizer, valid_rows[:args.eval_rows], batch_size=eval_batch, seed=args.seed)

    if args.output_bias == "unigram":
        if args.init:
            raise loop.UserError("--output-bias unigram initialises a new model; the --init model keeps its bias")
        with torch.no_grad():
            model.lm_head.bias.copy_(unigram_log_probs(rows, config.vocab_size, config.pad_token_id))
    task = MLMTask(rows, masker, config.pad_token_id, periodic_eval)
    trainer = loop.Trainer(model, task, args, dist, out)
    result = trainer.fit()
    if result.status == "interrupted":
        return loop.EXIT_INTERRUPTED
    if not dist.is_main:
        return 0

    # ----- the Hub-ready folder -----
    model = trainer.model.eval()
    if args.final_eval_rows:
        valid_rows = valid_rows[:args.final_eval_rows]
    print(f"final evaluation on {len(valid_rows):,} held-out rows of {args.valid}", flush=True)
    with torch.no_grad(), loop.autocast(dist.device, trainer.precision):
        final = evaluate_mlm(model, tokenizer, valid_rows, batch_size=eval_batch, seed=args.seed)
    model.save_pretrained(out)
    save_tokenizer(tokenizer, out, model.config.max_length)
    metrics = {
        "eval_loss": final["loss"], "eval_accuracy": final["accuracy"], "eval_perplexity": final["perplexity"],
        "eval_tokens": final["tokens"], "eval_data": args.valid,
        "train_tokens": result.tokens, "train_steps": result.step, "stopped_by": result.status,
        "train_rows": len(rows), "seq_length": seq_length, "init": args.init or "random", "corpus": args.corpus,
        "corpus_sources": sources, "masking": args.masking,
        "parameters": model.num_parameters(), "train_time_s": round(result.elapsed, 1),
        "wall_time_s": round(time.time() - started, 1), "hardware": loop.hardware_info(dist, trainer.precision),
        "command": args._command,
    }
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    trainer.write_curves()
    write_model_card(
        out, title=f"MiniRoBERTa ({args.preset}) pretrained from scratch", task="fill-mask", metrics=metrics,
        recipe=loop.card_recipe(args, drop=["vocab_size"] if args.tokenizer else []),
        notes=f"Masked-language-model pretraining ({args.masking} masking, no next-sentence prediction) on "
              f"{result.tokens:,} tokens of `{args.corpus}`; held-out figures on `{args.valid}`.")
    trainer.cleanup()
    print(f"held-out MLM loss {final['loss']:.4f}, accuracy {final['accuracy']:.4f}, perplexity "
          f"{final['perplexity']:.2f}; wrote {out}", flush=True)
    return 0


def main(argv=None) -> int:
    return loop.run_cli(build_parser(), run, argv, module="train.pretrain")


if __name__ == "__main__":
    raise SystemExit(main())
