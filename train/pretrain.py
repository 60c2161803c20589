"""Masked-language-model pretraining of RoBERTa from scratch (no next-sentence prediction).

    python -m train.pretrain --tokenizer runs/tokenizer --time-budget-min 180 --out runs/mini-roberta
    python -m train.pretrain ... --resume                       # continue after an interruption
    python -m train.pretrain --init runs/mini-roberta --out runs/mini-roberta-2   # a continuation phase
    torchrun --nproc_per_node 2 -m train.pretrain ...           # data-parallel, same global batch

Data: the --corpus mixture is read (`train.data.load_mixture_with_stats`), packed into full rows of
--max-length tokens (documents follow each other, separated by </s>, as in RoBERTa's FULL-SENTENCES, except that a
row ends after exactly --max-length tokens, not at a sentence boundary) and cached in
--cache-dir; held-out rows have the model's full length (or --eval-length), so figures compare across phases. Masking:
dynamic (RoBERTa, a fresh mask every time a row is seen) or static (BERT, --dupe-factor fixed masks per row,
cycled over epochs). The training machinery is `train.trainer`; the options are `PretrainArguments`.

Writes a Hub-ready folder: config.json + model.safetensors, tokenizer.json, metrics.json (held-out MLM
loss/accuracy/perplexity on --valid, tokens seen, wall time, hardware, the command line), log.jsonl,
curves.png and a model card README.md. A run stopped before its end (SIGINT/SIGTERM: a checkpoint, exit code 130)
leaves config.json and the tokenizer files beside its checkpoints (`write_model_files`), so that its last one
exports as a (partial) model folder: `python -m train.export OUT/checkpoints/step-00001000 FOLDER` (checkpoint
folders are named by their step in 8 digits).
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

import torch

import roberta
from roberta.devices import to_device
from roberta.loss import IGNORE_INDEX
from roberta.masking import DUPE_FACTOR, MLM_PROBABILITY
from roberta.run_metrics import RunMetrics
from roberta.tokenizer import save_tokenizer, write_tokenizer_json

from .arguments import ModelArguments, TrainingArguments, option, parse, redefault
from . import paths
from .out_folder import check_fresh_out, check_options, lock_out
from .runtime import (EXIT_INTERRUPTED, Dist, UserError, autocast, hardware_info, naming, output_folder,
                      progress_bars, run_main, seed_everything)
from .trainer import Task, Trainer

# The pretraining mixture: every document of the text in ../shared/data, each once per pass (35.7M tokens in
# 128-token rows). The weights are the sources' sizes in millions of characters, so no source is cut or
# repeated: the Wikipedia extract, WikiText-2 train, the unlabelled IMDB reviews and the labelled ones without
# their labels and without the IMDB evaluation sample (`data.labeled_documents`). Phases 1-7 read a 45/10/45
# share of the first three (23.1M tokens a pass); at the GPU recipe's tens of passes, unique text is what runs
# out first (docs/pretraining.md).
PRETRAIN_CORPUS = (f"{paths.WIKIPEDIA}=50.33,{paths.WIKITEXT_TRAIN}=10.25,{paths.IMDB_UNSUP}=65.26,"
                   f"{paths.IMDB_TRAIN}=31.21")

DEFAULT_VALID = paths.WIKITEXT_VALID


@dataclass
class PretrainArguments(ModelArguments, TrainingArguments):
    """`python -m train.pretrain`'s options: the data and masking, then the model and the training loop."""
    corpus: str = option(PRETRAIN_CORPUS, "training text: a file, a folder, hub:NAME[:CONFIG[:SPLIT[:COLUMN]]], or "
                                          "a mixture 'SOURCE=weight,...' sampled by characters (default: %(default)s)",
                         group="data")
    corpus_chars: int | None = option(None, "at most this many characters of the mixture, each source its share "
                                            "(the last document taken of a source is cut at it) (default: as much "
                                            "as fits the weights without repeating any source)", group="data")
    valid: str = option(DEFAULT_VALID, "held-out text for evaluation (default: %(default)s)", group="data")
    eval_rows: int = option(256, "held-out rows used by the periodic evaluations: the first of the final "
                                 "evaluation's, with its masks (default: %(default)s)", group="data")
    eval_length: int | None = option(None, "tokens per held-out row (default: the model's longest input, so "
                                     "figures compare across phases; shorter rows compare short probes)",
                                     group="data")
    final_eval_rows: int = option(0, "held-out rows of the final evaluation, 0 = all (default: %(default)s)",
                                  group="data")
    eval_seed: int = option(0, "seed of the held-out masks, fixed apart from --seed so that every run and phase "
                               "is scored on the same masked positions (default: %(default)s)", group="data")
    tokenizer: str | None = option(None, "tokenizer.json or a folder holding one; default: the --init folder's, "
                                         "else one trained on --corpus with `train.tokenizer` defaults "
                                         "(--vocab-size), saved in OUT",
                                   group="data")
    vocab_size: int = option(32768, "vocabulary of a tokenizer trained on the fly (default: %(default)s)",
                             group="data")
    cache_dir: str = option("cache/packed", "where packed rows are cached (default: %(default)s; '' = no cache)",
                            group="data")
    init: str | None = option(None, "start from this pretrained MLM folder (or Hub id) instead of random weights: "
                                    "a continuation phase with a fresh optimizer and schedule; its tokenizer is the "
                                    "default", group="data")
    max_length: int | None = option(None, "tokens per packed training row, <s> and </s> included (default: the "
                                          "model's longest input); shorter rows give more optimizer steps for the "
                                          "same tokens. Held-out rows use the model's longest input unless "
                                          "--eval-length says otherwise",
                                    group="data", deprecated=("--seq-length",))
    masking: str = option("dynamic", "dynamic: new mask every pass (RoBERTa); static: --dupe-factor fixed masks "
                                     "(BERT)", group="masking", choices=("dynamic", "static"))
    dupe_factor: int = option(DUPE_FACTOR, "static masking: masks per row (default: %(default)s)", group="masking")
    mlm_probability: float = option(MLM_PROBABILITY, "share of tokens selected (default: %(default)s)", group="masking")
    output_bias: str = option("zero", "initial MLM output bias of a new model: zero, or the log unigram "
                                      "frequencies of the training rows (add-one smoothed), so the first prediction "
                                      "is the corpus's unigram distribution instead of a uniform one (default: "
                                      "%(default)s)", group="masking", choices=("zero", "unigram"))
    # No dropout in pretraining (RoBERTa used 0.1): every shipped phase ran without it, and dropout's random masks
    # cost 25-37% of a CPU training step's throughput (docs/performance.md). Fine-tuning keeps 0.1.
    dropout: float | None = redefault("dropout", 0.0)
    out: str = redefault("out", "runs/pretrain")  # the loop's other defaults are the pretraining recipe's

    def trains_tokenizer(self) -> bool:
        """Whether the run trains its tokenizer on --corpus (no --tokenizer, no --init to take one from)."""
        return not (self.tokenizer or self.init)

    def own_files(self) -> tuple[str, ...]:
        """The tokenizer this run trains is saved in OUT before training (`get_tokenizer`)."""
        return ("tokenizer.json",) if self.trains_tokenizer() else ()

    def check(self, world_size: int = 1) -> None:
        """Every option check made before the tokenizer and the data are read (minutes on the full corpus), in the
        order the command reports them (a UserError naming the option): the loop's options and --out
        (`out_folder.check_options`), then this script's. The data sources are checked by `run`
        (`data.check_text_source`); the lengths once the model is built."""
        check_options(self, world_size)
        self.check_dropout()  # by the options' names, before the tokenizer
        if self.eval_rows < 1 or self.final_eval_rows < 0:
            raise UserError(f"--eval-rows must be at least 1 and --final-eval-rows at least 0 (0 = all), got "
                            f"{self.eval_rows} and {self.final_eval_rows}")
        if self.corpus_chars is not None and self.corpus_chars < 1:
            raise UserError(f"--corpus-chars must be at least 1, got {self.corpus_chars}")
        if self.trains_tokenizer():  # a tokenizer trained on --corpus (minutes): its size first
            from .tokenizer import check_vocab_size
            check_vocab_size(self.vocab_size)
        if not self.init:
            self.check_shape()  # --preset and its overrides, by their option names (with --init: `build_model`,
            # once the --init folder is found)
        elif self.output_bias == "unigram":
            raise UserError("--output-bias unigram initialises a new model; the --init model keeps its bias")
        if self.batch_order == "length":  # (the Trainer's own check comes after the corpus is packed)
            raise UserError("--batch-order length: pretraining's rows are packed full, with no lengths to group by; "
                            "use --batch-order random")
        if not 0 < self.mlm_probability < 1:  # by its option's name, before the corpus is packed
            raise UserError(f"--mlm-probability must be between 0 and 1 (a share of the tokens), got "
                            f"{self.mlm_probability}")
        if self.dupe_factor < 1:
            raise UserError(f"--dupe-factor must be at least 1, got {self.dupe_factor}")
        if self.cache_dir and Path(self.cache_dir).is_file():  # before the corpus is read
            raise UserError(f"--cache-dir {self.cache_dir} is a file, not a folder")


def parse_args(argv=None) -> PretrainArguments:
    return parse(PretrainArguments, argv, "train.pretrain", __doc__)


class MLMTask(Task):
    """Rows of packed token ids; a batch is masked by the masker (dynamic or static)."""

    def __init__(self, rows: torch.Tensor, masker, pad_id: int, evaluate=None):
        self.rows, self.masker, self.pad_id, self._evaluate = rows, masker, pad_id, evaluate
        self.num_rows = len(rows)

    def make_batch(self, indices, epoch):
        rows = self.rows[to_device(indices, self.rows.device)]  # (B, T)
        masked = self.masker(rows, example_ids=indices.tolist(), epoch=epoch)
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
        return out.loss * self.num_targets(batch)  # no target in this slice: 0, a zero gradient

    def evaluate(self, model):
        return self._evaluate(model) if self._evaluate else {}

    def state_dict(self):
        return {"masker": self.masker.state_dict()}

    def load_state_dict(self, state):
        self.masker.load_state_dict(state["masker"])


def get_tokenizer(args: PretrainArguments, out: Path, dist: Dist):
    """--tokenizer, or one trained on --corpus (rank 0 trains and saves it, the others read it). A resumed run
    reads the one it trained; a new run trains its own (one a failed start left there was made with that
    start's options)."""
    if not args.trains_tokenizer():
        from .tokenizer import load_run_tokenizer
        return load_run_tokenizer(args.tokenizer, args.init, named=True)  # errors name --tokenizer or --init
    path = out / "tokenizer.json"
    if dist.is_main and not (args.resume and path.exists()):
        from .tokenizer import build_tokenizer

        if not args.resume:
            check_fresh_out(out, args.own_files())  # before a tokenizer is written there
        print(f"training a {args.vocab_size}-token tokenizer on {args.corpus}", flush=True)
        with naming("--corpus"):
            tokenizer, _ = build_tokenizer(args.corpus, vocab_size=args.vocab_size, seed=args.seed,
                                           show_progress=progress_bars(args.no_progress))
        out.mkdir(parents=True, exist_ok=True)
        write_tokenizer_json(tokenizer, path)
    dist.barrier()
    return roberta.load_tokenizer(path)


def unigram_log_probs(rows: torch.Tensor, vocab_size: int, pad_id: int) -> torch.Tensor:
    """(V,) log frequencies of the tokens in `rows`, padding left out, add-one smoothed."""
    counts = torch.bincount(rows[rows.ne(pad_id)].flatten(), minlength=vocab_size).double() + 1.0
    return (counts / counts.sum()).log().float()


def build_model(args: PretrainArguments, config, tokenizer) -> roberta.RobertaForMaskedLM:
    """A random model of `config`, or the --init model (whose config fixes the shape) with --dropout."""
    if not args.init:
        return roberta.RobertaForMaskedLM(config)
    if given := args.shape_options_given():
        raise UserError(f"{', '.join(given)} cannot change the shape of the --init model")
    try:
        roberta.loading.require_architecture(args.init, "RobertaForMaskedLM", "pretraining continues a masked-LM "
                                             "folder (train.pretrain output)", "--init")
        model = roberta.RobertaForMaskedLM.from_pretrained(args.init)
    except roberta.loading.ArchitectureMismatch:
        raise
    except (OSError, ValueError) as err:
        raise UserError(f"cannot load --init {args.init}: {err}") from None
    from .tokenizer import check_fits_init
    check_fits_init(tokenizer, model.config.vocab_size, args.tokenizer, args.init)
    p = config.hidden_dropout_prob  # from --dropout; layers read it when built, so rebuild with it
    rebuilt = roberta.RobertaForMaskedLM(replace(model.config, hidden_dropout_prob=p, attention_probs_dropout_prob=p))
    rebuilt.load_state_dict(model.state_dict())
    return rebuilt


def write_model_files(out: Path, model: roberta.RobertaForMaskedLM, tokenizer) -> None:
    """config.json and the tokenizer files in OUT when the training loop ends, before the final evaluation and the
    weights: a run stopped there (a signal, or killed during its final evaluation) leaves a last checkpoint that
    `train.export RUN/checkpoints/step-00001000` makes a model folder, a partial one (`train.recipe.ship` returns it
    from a GPU call cut by its deadline). Not before the loop: a folder holding them and no checkpoint would be taken
    for a model folder, not the start of a run."""
    roberta.checkpoint.save_config(out, model.config, model.architecture)
    save_tokenizer(tokenizer, out, model.config.max_length)


def run(args: PretrainArguments, dist: Dist | None = None) -> int:
    """The recipe: the options and the data sources checked, the tokenizer and the model, the corpus and the held-out
    text packed into rows, the masks, the training loop, then (rank 0) the Hub-ready folder."""
    from .evaluate import evaluate_masked, first_rows, held_out_mask

    started, dist = time.time(), dist or Dist()
    out = Path(args.out)
    args.check(dist.world_size)  # before the tokenizer and the data: minutes on the full corpus
    lock_out(output_folder(args.out), dist)
    # the data options by their names, before anything is written: --valid first, and --corpus now if a tokenizer is
    # trained on it (minutes on the full corpus), else once the model's lengths are checked (`prepare_rows`)
    check_source(args, "--valid")
    warn_if_valid_is_trained_on(args.corpus, args.valid)
    if args.trains_tokenizer():
        check_source(args, "--corpus")
    seed_everything(args.seed)
    tokenizer = get_tokenizer(args, out, dist)
    say = print if dist.is_main else (lambda *a, **k: None)
    torch.manual_seed(args.seed)
    model = build_model(args, args.model_config(tokenizer), tokenizer)
    config = model.config
    say(f"model: {args.init or args.preset + ' preset'}, {model.num_parameters():,} parameters, "
        f"vocabulary {config.vocab_size:,}", flush=True)
    rows, valid_rows, sources, row_length = prepare_rows(args, tokenizer, config, say)

    masker = roberta.make_masker(args.masking, tokenizer, seed=args.seed, mlm_probability=args.mlm_probability,
                                 **({"dupe_factor": args.dupe_factor} if args.masking == "static" else {}))
    eval_batch = max(8, args.batch_size // max(1, args.grad_accum))
    # the held-out rows masked once, the final evaluation's masks; the periodic points score the first --eval-rows
    # of them as they are (masked on their own, the same positions got other corruptions: not the final figure's)
    held_out = held_out_mask(tokenizer, valid_rows[:args.final_eval_rows or None], args.eval_seed)
    periodic_rows = first_rows(held_out, args.eval_rows)

    def periodic_eval(model):
        return evaluate_masked(model, periodic_rows, batch_size=eval_batch)

    if args.output_bias == "unigram":  # a new model's (`PretrainArguments.check` refuses it with --init)
        with torch.no_grad():
            model.lm_head.bias.copy_(unigram_log_probs(rows, config.vocab_size, config.pad_token_id))
    # On a GPU the rows live there (35.7M tokens: 0.3 GB) and each batch is masked there: only the masker's
    # random draws come from its CPU generator (the same masks as on CPU), not ~6 ms of CPU work per 512-row batch
    task = MLMTask(rows.to(dist.device), masker, config.pad_token_id, periodic_eval)
    trainer = Trainer(model, task, args, dist, out, started=started)
    result = trainer.fit()
    if dist.is_main:
        write_model_files(out, trainer.model, tokenizer)
    if result.status == "interrupted":
        return EXIT_INTERRUPTED
    if not dist.is_main:
        return 0
    final = final_evaluation(args, trainer, held_out, tokenizer, eval_batch, dist)
    write_folder(out, args, trainer, result, final, dist, train_rows=len(rows), row_length=row_length, sources=sources)
    print(f"held-out MLM loss {final['loss']:.4f}, accuracy {final['accuracy']:.4f}, perplexity "
          f"{final['perplexity']:.2f}; wrote {out}", flush=True)
    return 0


def check_source(args: PretrainArguments, option: str) -> None:
    """--valid or --corpus by its option's name (`data.check_text_source`; a missing default says how to point the
    command at the data)."""
    from . import data

    value, default = {"--valid": (args.valid, DEFAULT_VALID), "--corpus": (args.corpus, PRETRAIN_CORPUS)}[option]
    data.check_text_source(value, option, default=value == default)


def prepare_rows(args: PretrainArguments, tokenizer, config, say) -> tuple[torch.Tensor, torch.Tensor, list, int]:
    """(training rows, held-out rows, the mixture's sources as read, tokens per training row): the row lengths
    checked against the model (--max-length, --eval-length), then --valid and --corpus read and packed
    (`packing.pack_sequences`, cached in --cache-dir). --corpus is checked here unless a tokenizer was trained on it."""
    from . import data, packing

    row_length = args.max_length or config.max_length
    if not 8 <= row_length <= config.max_length:
        raise UserError(f"--max-length must be between 8 and the model's longest input {config.max_length} "
                        f"(a new model's is --model-max-length), got {row_length}")
    eval_length = args.eval_length or config.max_length
    if not 8 <= eval_length <= config.max_length:
        raise UserError(f"--eval-length must be between 8 and the model's longest input {config.max_length}, "
                        f"got {eval_length}")
    if not args.trains_tokenizer():
        check_source(args, "--corpus")
    cache = args.cache_dir or None
    with naming("--valid"):  # before the corpus: a misspelt --valid fails in seconds
        valid_documents = data.read_documents(args.valid)
    say(f"reading {args.corpus}", flush=True)
    with naming("--corpus"):  # --corpus-chars is a cap: the last document of each source cut at its share
        documents, sources = data.load_mixture_with_stats(args.corpus, char_budget=args.corpus_chars, seed=args.seed,
                                                          cut=True)
    show_progress = False if args.no_progress else None  # None: a bar when the corpus is long
    chars = sum(map(len, documents))
    if chars > packing.LONG_TEXT_CHARS and not progress_bars(args.no_progress):  # no bar: a line, not a silent minute
        say(f"tokenizing {chars:,} characters into rows of {row_length} tokens"
            f"{f' (or reading them from the cache in {cache})' if cache else ''}", flush=True)
    rows = packing.pack_sequences(documents, tokenizer, row_length, cache_dir=cache, show_progress=show_progress)
    valid_rows = packing.pack_sequences(valid_documents, tokenizer, eval_length, cache_dir=cache,
                                        show_progress=show_progress)
    say(f"{len(rows):,} training rows of {row_length} tokens ({rows.ne(config.pad_token_id).sum():,} "
        f"tokens), {len(valid_rows):,} held-out rows", flush=True)
    return rows, valid_rows, sources, row_length


def final_evaluation(args: PretrainArguments, trainer: Trainer, held_out, tokenizer, eval_batch: int,
                     dist: Dist) -> dict:
    """The trained model's held-out figures (`evaluate.evaluate_masked`) on every held-out row, under the masks the
    periodic evaluations scored the first of, with their yardstick: the best constant guess over the same targets
    (`evaluate.constant_guess`, as `train.evaluate` records it)."""
    from .evaluate import constant_guess, evaluate_masked

    model = trainer.model.eval()
    print(f"final evaluation on {len(held_out.input_ids):,} held-out rows of {args.valid}", flush=True)
    with torch.no_grad(), autocast(dist.device, trainer.precision):
        scored = evaluate_masked(model, held_out, batch_size=eval_batch,
                                 progress="final evaluation" if progress_bars(args.no_progress) else False)
    return {**scored, **constant_guess([held_out], tokenizer)}


def write_folder(out: Path, args: PretrainArguments, trainer: Trainer, result, final: dict, dist: Dist, *,
                 train_rows: int, row_length: int, sources: list) -> None:
    """The Hub-ready folder, beside the config and tokenizer files (`write_model_files`): the weights, curves.png,
    the model card, then metrics.json (the run's `final` evaluation, its length and cost, its data and options); the
    checkpoints cleaned up."""
    from .model_card import write_model_card

    model = trainer.model
    model.save_pretrained(out)  # the weights beside the config and tokenizer files
    metrics = RunMetrics(
        eval_loss=final["loss"], eval_accuracy=final["accuracy"], eval_perplexity=final["perplexity"],
        eval_tokens=final["tokens"], eval_data=args.valid, eval_seed=args.eval_seed,
        # the yardstick of eval_accuracy: the best constant guess over the same targets
        eval_constant_guess_token=final["constant_guess_token"],
        eval_constant_guess_accuracy=final["constant_guess_accuracy"],
        train_tokens=result.tokens, train_steps=result.step, stopped_by=result.status,
        resumed_with=trainer.resumed_with or None,
        train_rows=train_rows, max_length=row_length, init=args.init or "random", corpus=args.corpus,
        corpus_sources=sources, masking=args.masking,
        parameters=model.num_parameters(), train_time_s=round(result.elapsed, 1),
        wall_time_s=round(trainer.wall_time_s(), 1), hardware=hardware_info(dist, trainer.precision),
        command=args.command,
    )
    trainer.write_curves()
    title, recipe = card_title_and_recipe(args)
    write_model_card(
        out, title=title, task="fill-mask", metrics=metrics, recipe=recipe,
        notes=f"Masked-language-model pretraining ({args.masking} masking, no next-sentence prediction) on "
              f"{result.tokens:,} tokens of `{args.corpus}`; held-out figures on `{args.valid}`.")
    metrics.write(out)  # the last file: it marks the folder whole (`train.experiment.finished`)
    trainer.cleanup()


def card_title_and_recipe(args: PretrainArguments) -> tuple[str, dict]:
    """The model card's title and recipe. With --init the --init folder shaped the model, not --preset and its
    overrides (ignored then): neither names them. --vocab-size only counts where the run trains its tokenizer."""
    drop = [] if args.trains_tokenizer() else ["vocab_size"]
    if args.init:
        return (f"MiniRoBERTa pretrained further from {args.init}",
                args.recipe(drop=[*drop, "preset", *ModelArguments.SHAPE]))
    return f"MiniRoBERTa ({args.preset}) pretrained from scratch", args.recipe(drop=drop)


def warn_if_valid_is_trained_on(corpus: str, valid: str) -> None:
    """A warning when the held-out text is also read by the corpus (`data.corpus_reads`): its figures would be on
    training text."""
    from . import data

    if data.corpus_reads(corpus, valid):
        print(f"warning: --valid {valid} is also a --corpus source: the held-out figures will be on text the "
              "model trains on", file=sys.stderr, flush=True)


def main(argv=None) -> int:
    return run_main(run, parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
