"""Held-out evaluation: masked-LM loss/accuracy/perplexity, and classifier accuracy (SST-2, IMDB, any TSV).

    python -m train.evaluate --model runs/mini --mlm-text ../shared/data/wikitext-2/wiki.valid.tokens \\
        --out runs/mini/metrics.json
    python -m train.evaluate --model runs/sst2 --labeled ../shared/data/sst2/dev.tsv \\
        --imdb ../shared/data/imdb/train.tsv --imdb-n 1000 --out runs/sst2/metrics.json
    python -m train.evaluate --model runs/sst2 --checks tests/data/sentiment_checks.tsv --out runs/sst2/metrics.json
    python -m train.evaluate --model runs/mine --dev-slice --out runs/mine   # its dev set held out of its training file

IMDB reviews are scored twice: cut to their first --max-length tokens ("accuracy"), and read whole in
overlapping windows whose logits are averaged, as `roberta.pipeline` reads a long text ("accuracy_whole").

Classifier probabilities are the calibrated ones (softmax of logits / config.calibration_temperature, as
`roberta.pipeline` gives them: `roberta.pipelines.scores_of`); a classifier whose scores are no softmax over its
labels (config.problem_type multi-label or regression, or a single output) is refused. `--labeled` also reports the
expected calibration error without the temperature ("ece_uncalibrated") and the log-loss with it ("loss_calibrated";
"loss" is the raw logits', as fine-tuning's dev curves measure it). `--dev-slice` scores a classifier as `--labeled`
does on the dev set its fine-tuning held out of its training file (`train.finetune --dev-fraction`: metrics.json's
dev_slice, drawn again), recorded with that slice. `--checks` scores the behaviour checks (see `score_checks`):
accuracy per category.

With --precision bf16 (or auto where it picks bf16) the MLM text is scored under bf16 autocast: pretraining's
final evaluation runs under its training precision (its metrics.json's hardware.precision), so a matching
--precision reproduces its figures exactly; fp32 and bf16 differ in the last digits of the accuracy. The MLM
figures written record the precision used. Progress bars (scoring batches, reading windows) go to stderr when it
is a terminal; --no-progress turns them off.

MLM figures use one fixed, seeded mask over the whole held-out set (the same positions are masked in
every run and for every batch size), so numbers are comparable between checkpoints and runs. The draw of
masks moves WikiText-2 valid's accuracy by about half a point (the phase-7 model: 45.0-45.6% over 5 draws;
phase 28, the shipped one: 52.67-53.33%); `--mlm-seeds 5` averages five (seeds --seed to --seed + 4), as a
comparison of two models should. Next to the accuracy goes its yardstick, the best constant guess over the same
targets ("constant_guess_token" and "constant_guess_accuracy": what always guessing the commonest target scores).
"""
from __future__ import annotations

import argparse
import itertools
import math
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

from roberta import DynamicMasker, RobertaForMaskedLM, auto_model, encode, load_tokenizer
from roberta.config import label_names
from roberta.masking import IGNORE_INDEX, MaskedBatch
from roberta.pipelines import scores_of
from roberta.run_metrics import RunMetrics, dev_slice_said, said_list
from roberta.text import normalize_for_classifier, sentiment_of
from roberta.tokenizer import check_fits_model, encode_windows, mean_over_windows

from .arguments import seed_value
from .calibrate import expected_calibration_error, require_softmax
from .data import read_documents
from .imdb_sample import check_imdb_n, imdb_sample_as, imdb_skip_note
from .markdown import table_cell
from .packing import pack_sequences
from .recorded_columns import recorded_columns
from .runtime import (EXIT_USER_ERROR, USER_ERRORS, autocast, device_option, exit_code, naming, progress_bars,
                      report_user_error, resolve_precision, shown_command)
from .tables import read_labeled, read_table


def batch_starts(rows: int, batch_size: int, progress: str | None):
    """The first row of each batch of `batch_size` over `rows` rows; with `progress` (a description), a tqdm bar
    of the batches on stderr (the caller asks for it only where `progress_bars()` allows)."""
    starts = range(0, rows, batch_size)
    if not progress:
        return starts
    from tqdm.auto import tqdm

    return tqdm(starts, desc=progress, unit="batch", dynamic_ncols=True, leave=False)


def evaluate_mlm_masks(model, tokenizer, rows: torch.Tensor, batch_size: int, first_seed: int, masks: int,
                       progress: bool = False) -> dict:
    """`evaluate_masked` under `masks` held-out mask draws (`held_out_mask`, seeds first_seed, first_seed + 1, ...)
    -> one result: the mean loss (perplexity from it) and accuracy, the masked tokens of all draws, and each draw's
    accuracy. One draw is returned as it is. Either way with its yardstick, the best constant guess over the same
    targets (`constant_guess`). `progress`: a bar per draw."""
    masked = [held_out_mask(tokenizer, rows, seed) for seed in range(first_seed, first_seed + masks)]
    bars = [(f"MLM scoring, mask {i + 1}/{masks}" if masks > 1 else True) if progress else False for i in range(masks)]
    draws = [evaluate_masked(model, mask, batch_size, progress=bar) for mask, bar in zip(masked, bars)]
    guess = constant_guess(masked, tokenizer)
    if len(draws) == 1:
        return {**draws[0], **guess}
    loss = sum(d["loss"] for d in draws) / len(draws)
    return {"loss": loss, "accuracy": sum(d["accuracy"] for d in draws) / len(draws),
            "perplexity": math.exp(min(loss, 700.0)), "tokens": sum(d["tokens"] for d in draws),
            "sequences": draws[0]["sequences"], "masks": len(draws),
            "accuracy_per_mask": [d["accuracy"] for d in draws], **guess}


def constant_guess(masked: list[MaskedBatch], tokenizer) -> dict:
    """The yardstick of a masked-LM accuracy: the best constant guess over the same targets. The one token that is
    the target most often over all of `masked` (fixed masks of the same rows, as `evaluate_mlm_masks` draws them;
    a tie: the lowest id) and its accuracy, the share of each mask's targets it is, their mean (as the model's
    accuracy is averaged). No guess that ignores the text scores more on these targets: a unigram guess from the
    training text, drawn or always its commonest token, expects a mix of the targets' shares, at most the largest.
    {"constant_guess_token": the token as text (" the"), "constant_guess_accuracy"}."""
    targets = [m.labels[m.labels.ne(IGNORE_INDEX)] for m in masked]  # each (N,)
    token = int(torch.bincount(torch.cat(targets)).argmax())
    accuracy = sum(t.eq(token).sum().item() / t.numel() for t in targets) / len(targets)
    return {"constant_guess_token": tokenizer.decode([token], skip_special_tokens=False),
            "constant_guess_accuracy": accuracy}


def _device(model) -> torch.device:
    return next(model.parameters()).device


def evaluate_mlm(model, tokenizer, rows: torch.Tensor, batch_size: int = 32, seed: int = 0,
                 progress: bool | str = False) -> dict:
    """`evaluate_masked` of `rows`, the held-out text packed into rows (LongTensor (N, T),
    `train.packing.pack_sequences`), masked by `held_out_mask` with `seed`: the two in one call, for a check at the
    prompt (docs/gpu-training.md's) and under the name the shipped masking ablation's results.json
    (assets/masking-ablation) gives its scoring."""
    return evaluate_masked(model, held_out_mask(tokenizer, rows, seed), batch_size, progress)


def held_out_mask(tokenizer, rows: torch.Tensor, seed: int = 0) -> MaskedBatch:
    """The held-out rows masked once, for `evaluate_masked`: one draw of the dynamic masker, seeded by `seed`
    (`--eval-seed`), over the whole of `rows` (not static masking, whose copies are `StaticMasker.fixed_mask`). Its
    first rows (`first_rows`) are not those rows masked alone: the masker draws which tokens it selects, then what
    becomes of them, over the whole set."""
    return DynamicMasker.from_tokenizer(tokenizer, seed=seed)(rows.long())


def first_rows(masked: MaskedBatch, n: int) -> MaskedBatch:
    """The first `n` rows of a masked set, their masks as they are (pretraining's periodic evaluations: a slice of
    the final evaluation's masked rows)."""
    return MaskedBatch(masked.input_ids[:n], masked.labels[:n], masked.outcome[:n])


@torch.no_grad()
def evaluate_masked(model, masked: MaskedBatch, batch_size: int = 32, progress: bool | str = False) -> dict:
    """{"loss", "accuracy", "perplexity", "tokens", "sequences"} of `model` on held-out rows already masked
    (`held_out_mask`); `progress`: a bar over the batches (a string: its description).

    Loss is the mean cross-entropy per masked token (summed over batches, not averaged per batch), accuracy the share
    of masked tokens predicted exactly.
    """
    rows = masked.input_ids
    was_training = model.training
    model.eval()
    shown = (progress if isinstance(progress, str) else "MLM scoring") if progress else None
    loss_sum, correct, count = masked_lm_sums(model, masked, batch_size, shown)
    model.train(was_training)
    if count == 0:
        raise ValueError("no token was masked: the evaluation text is too short")
    loss = loss_sum / count
    return {"loss": loss, "accuracy": correct / count, "perplexity": math.exp(min(loss, 700.0)),
            "tokens": count, "sequences": len(rows)}


@torch.no_grad()
def masked_lm_sums(model, masked, batch_size: int, progress: str | None = None) -> tuple[float, int, int]:
    """(summed cross-entropy, right predictions, targets) of `model` over the targets of an already masked set
    (`masked.input_ids`, `masked.labels`: (N, T)), `batch_size` rows per forward pass on the model's device;
    `progress`: the description of a bar over the batches (`batch_starts`)."""
    device = _device(model)
    loss_sum, correct, count = 0.0, 0, 0
    for start in batch_starts(len(masked.input_ids), batch_size, progress):
        labels = masked.labels[start:start + batch_size].to(device)
        if not labels.ne(IGNORE_INDEX).any():
            continue
        out = model(masked.input_ids[start:start + batch_size].to(device), labels=labels, masked_only=True)
        targets = labels[labels.ne(IGNORE_INDEX)]  # (N,) in the order of out.logits (N, V)
        loss_sum += F.cross_entropy(out.logits.float(), targets, reduction="sum").item()
        correct += (out.logits.argmax(-1) == targets).sum().item()
        count += targets.numel()
    return loss_sum, correct, count


def encode_for_classifier(tokenizer, texts: list[str], max_length: int,
                          normalize: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """(input_ids, attention_mask), both (B, longest): the texts normalised (`normalize_for_classifier`), then
    `roberta.encode`d as the pipelines do (`<s> text </s>`, cut to max_length, padded)."""
    if normalize:
        texts = [normalize_for_classifier(t) for t in texts]
    input_ids, attention_mask, _ = encode(tokenizer, texts, max_length)
    return input_ids, attention_mask


@torch.no_grad()
def classifier_logits(model, tokenizer, texts: list[str], batch_size: int = 32, max_length: int | None = None,
                      normalize: bool = True, long_text: str = "first", progress: bool = False) -> torch.Tensor:
    """Raw logits (N, L), float32 on the CPU, in the order of `texts` (encoded as `encode_for_classifier`).
    `long_text`: "first" reads a long text's first `max_length` tokens; "windows" reads all of it, the logits
    averaged over its overlapping windows, as `roberta.pipeline` reads it. `progress`: a bar over the batches."""
    if not texts:
        raise ValueError("no texts to classify")
    max_length = max_length or model.config.max_length
    owner = None
    if long_text == "windows":
        shown = [normalize_for_classifier(t) for t in texts] if normalize else texts
        input_ids, attention_mask, owner = encode_windows(tokenizer, shown, max_length)  # (W, T), (W,)
    else:
        input_ids, attention_mask = encode_for_classifier(tokenizer, texts, max_length, normalize)  # (N, T)
    lengths = attention_mask.sum(1)  # (W,)
    order = torch.argsort(lengths, stable=True)  # similar lengths together: less padding
    was_training, device = model.training, _device(model)
    model.eval()
    logits = torch.empty(len(input_ids), model.config.num_labels)  # (W, L)
    shown = f"classifying {len(texts):,} texts" + (f" ({len(input_ids):,} windows)" if owner is not None else "")
    for start in batch_starts(len(order), batch_size, shown if progress else None):
        idx = order[start:start + batch_size]
        T = int(lengths[idx].max())
        ids, mask = input_ids[idx, :T].to(device), attention_mask[idx, :T].to(device)  # (b, T)
        logits[idx] = model(ids, attention_mask=mask).logits.float().cpu()
    model.train(was_training)
    return logits if owner is None else mean_over_windows(logits, owner, len(texts))  # (N, L)


def temperature_of(model) -> float:
    """The model's fitted calibration temperature (1.0 when it has none)."""
    return float(getattr(model.config, "calibration_temperature", 1.0) or 1.0)


@torch.no_grad()
def evaluate_classifier(model, tokenizer, texts: list[str], labels: list[int], batch_size: int = 32,
                        max_length: int | None = None, normalize: bool = True, long_text: str = "first",
                        progress: bool = False, logits: torch.Tensor | None = None) -> dict:
    """{"accuracy", "n", "loss", "macro_f1", "confusion", "ece"} of a classifier (confusion[true][predicted];
    loss: the cross-entropy of the raw logits, without the temperature; ece: expected calibration error, 15 bins,
    of the probabilities the pipeline gives, i.e. with the model's calibration_temperature). `long_text`: as
    `classifier_logits`; `logits`: the texts' logits when the caller has them already (not computed again)."""
    if len(texts) != len(labels) or not texts:
        raise ValueError(f"need as many labels as texts (and at least one): {len(texts)} texts, {len(labels)} labels")
    num_labels = model.config.num_labels
    if max(labels) >= num_labels or min(labels) < 0:
        raise ValueError(f"labels {sorted(set(labels))} do not fit the model's {num_labels} classes")
    if logits is None:
        logits = classifier_logits(model, tokenizer, texts, batch_size, max_length, normalize, long_text, progress)
    gold = torch.tensor(labels)
    pred = logits.argmax(-1)
    confusion = torch.zeros(num_labels, num_labels, dtype=torch.long)
    confusion.index_put_((gold, pred), torch.ones_like(gold), accumulate=True)
    tp = confusion.diag().float()
    f1 = 2 * tp / (confusion.sum(0) + confusion.sum(1)).clamp(min=1)
    present = confusion.sum(1) > 0
    ece = expected_calibration_error(scores_of(logits, model.config, temperature_of(model)), gold)
    return {"accuracy": (pred == gold).float().mean().item(), "n": len(labels),
            "loss": F.cross_entropy(logits, gold).item(), "macro_f1": f1[present].mean().item(),
            "confusion": confusion.tolist(), "ece": ece}


def evaluate_reviews(model, tokenizer, texts: list[str], labels: list[int], batch_size: int = 32,
                     max_length: int | None = None, progress: bool = False) -> dict:
    """`evaluate_classifier` of long texts (IMDB reviews) read two ways: their first `max_length` tokens (the
    keys of `evaluate_classifier`) and whole, in overlapping windows whose logits are averaged as
    `roberta.pipeline` reads them ("accuracy_whole", "ece_whole", "windows": the windows read in all)."""
    first = evaluate_classifier(model, tokenizer, texts, labels, batch_size, max_length, progress=progress)
    whole = evaluate_classifier(model, tokenizer, texts, labels, batch_size, max_length, long_text="windows",
                                progress=progress)
    shown = [normalize_for_classifier(t) for t in texts]
    windows = len(encode_windows(tokenizer, shown, max_length or model.config.max_length)[2])
    return {**first, "accuracy_whole": whole["accuracy"], "ece_whole": whole["ece"], "windows": windows}


# ----- behaviour checks (CheckList-style) -----
UNSURE = "unsure"
UNSURE_BELOW = 0.7  # a check that expects "unsure" is right when the top probability is below this
DEFAULT_CHECKS = Path(__file__).resolve().parents[1] / "tests" / "data" / "sentiment_checks.tsv"
CHECK_COLUMNS = ("category", "sentence", "expected")


def read_checks(path) -> list[dict]:
    """Rows {category, sentence, expected} of a checks TSV (header category<TAB>sentence<TAB>expected;
    `train.tables.read_table`)."""
    return [row for _, row in read_table(path, CHECK_COLUMNS, "checks")]


def expected_label(expected: str, id2label: dict) -> str | None:
    """The verdict that makes a check right: "unsure", the model's label of that name, or the model's one label of
    the sentiment `expected` names in another spelling (`roberta.text.sentiment_of`, as the IMDB check and the app
    read labels: "positive" is a model's "pos"); None when the model has no such label."""
    names = [str(name) for name in id2label.values()]
    if expected == UNSURE or expected in names:
        return expected
    sentiment = sentiment_of(expected)
    same = [name for name in names if sentiment is not None and sentiment_of(name) == sentiment]
    return same[0] if len(same) == 1 else None


def _skip_checks(option: str) -> str:
    """How to skip the checks, by the option as the running command knows it: "--checks", or train.recipe's
    "--finetune-args --checks" (the option inside another's value)."""
    *outer, inner = option.split()
    if outer:
        return f"add {inner} '' to {' '.join(outer)} to skip the sentiment checks"
    return f"pass {shown_command([inner, ''])} to skip the sentiment checks"


def check_expected_labels(checks: list[dict], id2label: dict, source=None, option: str | None = None) -> None:
    """Each check's expected value is "unsure" or a label of the model (`expected_label`; a ValueError otherwise,
    ending with how to skip the checks by `option`, default the options `source` starts with, else --checks)."""
    if option is None:
        option = " ".join(itertools.takewhile(lambda word: word.startswith("--"), str(source or "").split()))
    for row in checks:
        if expected_label(row["expected"], id2label) is None:
            raise ValueError(f"{f'{source}: ' if source else ''}check {row['sentence']!r}: expected "
                             f"{row['expected']!r} is neither {UNSURE!r} nor a label of the model "
                             f"({label_names(id2label)}); {_skip_checks(option or '--checks')}, or write "
                             "checks that expect the model's labels")


def default_checks_skip_note(id2label: dict) -> str | None:
    """Why the shipped behaviour checks (`DEFAULT_CHECKS`, --checks' default: sentiment sentences) are skipped for a
    model with these labels, a `note:` line, as the IMDB check is skipped (`imdb_sample.imdb_skip_note`): some check
    expects a verdict that is neither "unsure" nor one of the labels (`expected_label`: a topic classifier's). None
    when every check fits, or when the file is not there (reported as missing where it is read)."""
    if not DEFAULT_CHECKS.is_file():
        return None
    checks = read_checks(DEFAULT_CHECKS)
    if all(expected_label(row["expected"], id2label) is not None for row in checks):
        return None
    expected = said_list(list(dict.fromkeys(row["expected"] for row in checks)))
    return (f"note: the behaviour checks are skipped: {shown_path(DEFAULT_CHECKS)}, --checks' default, expects the "
            f"verdicts {expected}, and the labels {label_names(id2label)} do not include them (--checks FILE "
            "scores checks of your own)")


def check_unsure_below(value: float) -> None:
    """--unsure-below is a probability (above 1, every verdict was "unsure" without a word)."""
    if not 0 <= value <= 1:
        raise ValueError(f"--unsure-below must be between 0 and 1 (a probability), got {value}")


@torch.no_grad()
def score_checks(model, tokenizer, checks, batch_size: int = 32, unsure_below: float = UNSURE_BELOW,
                 max_length: int | None = None, source: str | None = None) -> dict:
    """Score behaviour checks (a path or `read_checks` rows) with the model's calibrated probabilities.

    Each sentence gets a verdict: its top label when the top probability is at least `unsure_below`, else
    "unsure". It is right when the verdict equals the expected value (a label name or "unsure"): a sentence
    expected positive that the model calls positive at 0.6 counts as wrong (unsure), and one expected
    unsure is right only below the threshold; an expected "positive" is a model's "pos" (`expected_label`).
    Returns {"accuracy", "n", "unsure_below", "temperature", "categories": {name: {"accuracy", "right", "n"}},
    "items": [{category, sentence, expected, verdict, label, score, right}]}. A report on the model, not a test
    that must pass. `source`: the file named in the result when `checks` are rows (a path names itself)."""
    if isinstance(checks, (str, Path)):
        source, checks = shown_path(checks), read_checks(checks)
    check_expected_labels(checks, model.config.id2label)
    temperature = temperature_of(model)
    logits = classifier_logits(model, tokenizer, [r["sentence"] for r in checks], batch_size, max_length)
    probs = scores_of(logits, model.config, temperature)  # (N, L)
    items, categories = [], {}
    for row, p in zip(checks, probs):
        score, index = p.max(-1)
        label = model.config.id2label.get(int(index), f"LABEL_{int(index)}")
        verdict = label if score.item() >= unsure_below else UNSURE
        right = verdict == expected_label(row["expected"], model.config.id2label)
        items.append({**row, "verdict": verdict, "label": label, "score": round(score.item(), 4), "right": right})
        cat = categories.setdefault(row["category"], {"right": 0, "n": 0})
        cat["right"] += right
        cat["n"] += 1
    for cat in categories.values():
        cat["accuracy"] = cat["right"] / cat["n"]
    right = sum(i["right"] for i in items)
    return {**({"source": source} if source else {}), "accuracy": right / len(items), "right": right,
            "n": len(items), "unsure_below": unsure_below, "temperature": temperature,
            "categories": categories, "items": items}


def shown_path(path) -> str:
    """A path as the project names it: relative to the repository root when it lies inside."""
    try:
        return str(Path(path).resolve().relative_to(DEFAULT_CHECKS.parents[2]))
    except ValueError:
        return str(path)


def path_shown_as(shown: str) -> Path | None:
    """The file a path `shown_path` wrote names: as written when that is a file (an absolute path, or one relative to
    the working folder), else relative to the repository root; None when neither is a file."""
    return next((p for p in (Path(shown), DEFAULT_CHECKS.parents[2] / shown) if shown and p.is_file()), None)


def checks_markdown(checks: dict | None, measured_on: str = "") -> str:
    """The model card's behaviour-check section: accuracy per category and the sentences it gets wrong.
    `measured_on`: which weights the probabilities are of, when they are not the folder's own (an export stored
    in lower precision: `train.finetune.card_figure_sections`)."""
    if not checks:
        return ""
    of = f" The probabilities are {measured_on}." if measured_on else ""
    lines = [f"{checks['n']} short sentences written for this project (`{checks.get('source', 'checks')}`), in "
             f"CheckList-style categories. A sentence's verdict is the top label when its (calibrated) "
             f"probability is at least {checks['unsure_below']:g}, else \"unsure\"; it is right when the verdict "
             f"is the expected one. A report on what the model does, not a test it must pass.{of}", "",
             "| category | right | accuracy |", "|---|---|---|"]
    for name, cat in checks["categories"].items():
        lines.append(f"| {table_cell(name)} | {cat['right']}/{cat['n']} | {cat['accuracy']:.0%} |")
    lines.append(f"| **all** | {checks['right']}/{checks['n']} | {checks['accuracy']:.0%} |")
    wrong = [i for i in checks["items"] if not i["right"]]
    if wrong:
        lines += ["", "Wrong:", "", "| category | sentence | expected | verdict (top label, probability) |",
                  "|---|---|---|---|"]
        for i in wrong:
            lines.append(f"| {table_cell(i['category'])} | {table_cell(i['sentence'])} | {table_cell(i['expected'])} "
                         f"| {table_cell(i['verdict'])} ({table_cell(i['label'])} {i['score']:.4g}) |")
    return "\n".join(lines)


# ----- command line -----
def load_model(model_id: str):
    """(model, tokenizer) from a saved folder or Hub id; the head follows config.json's architecture. The tokenizer
    is checked against the model as the pipelines check it (`check_fits_model`): one the model cannot run (more
    tokens than embedding rows, another <pad> id) is refused; one with fewer tokens than rows, not explained by
    padding, loads with a warning, since that is also what another model's tokenizer looks like (a 300-token one
    scored a 32,768-row classifier: 47.5% where its own tokenizer gives 87.5%)."""
    model, tokenizer = auto_model(model_id), load_tokenizer(model_id)
    check_fits_model(tokenizer, model.config, f"{model_id}'s tokenizer.json")
    return model, tokenizer


def take_chars(documents: list[str], max_chars: int | None) -> list[str]:
    """The documents' first `max_chars` characters (the last one cut there); all of them for 0 or None."""
    if not max_chars:
        return documents
    out, total = [], 0
    for doc in documents:
        if total >= max_chars:
            break
        out.append(doc[:max_chars - total])
        total += len(out[-1])
    return out


def labeled_columns(args) -> tuple[str | None, str | None]:
    """--labeled's (text, label) columns: --text-column/--label-column, else those the model was fine-tuned on
    (`train.recorded_columns.recorded_columns`), else None (`read_labeled`'s defaults)."""
    text_column, label_column = recorded_columns(args.model)
    return args.text_column or text_column, args.label_column or label_column


def score_classifier(model, tokenizer, calibration_rows, dev, imdb_rows, checks_path, batch_size: int,
                     max_length: int | None, unsure_below: float, out=None, title: str = "", spec: dict | None = None,
                     progress: bool = False) -> dict:
    """A classifier's closing figures, in float32 as roberta.pipeline and transformers compute them, as
    `train.finetune` ends a run and `train.average` an average: the temperature fitted on `calibration_rows` (texts,
    labels) with out/reliability.png (`train.calibrate.calibrate`, `title` and `spec` its), then accuracy on `dev`
    (texts, labels), on the IMDB sample `imdb_rows` and the behaviour checks in `checks_path`. -> {"calibration",
    "dev", "imdb", "checks"}, each None where it has no data."""
    from .calibrate import calibrate

    with torch.no_grad():
        calibration = calibrate(model, tokenizer, calibration_rows, dev, out, batch_size, max_length, title=title,
                                progress=progress, spec=spec) if calibration_rows else None
        dev_figures = evaluate_classifier(model, tokenizer, *dev, batch_size, max_length,
                                          progress=progress) if dev else None
        imdb = evaluate_reviews(model, tokenizer, *imdb_rows, batch_size, max_length, progress) if imdb_rows else None
        checks = score_checks(model, tokenizer, checks_path, batch_size, unsure_below,
                              max_length) if checks_path else None
    return {"calibration": calibration, "dev": dev_figures, "imdb": imdb, "checks": checks}


def held_out_dev(model_id: str, id2label: dict) -> tuple[list[str], list[int], dict]:
    """--dev-slice: (texts, labels, slice) of the dev set the classifier `model_id` held out of its training file, as
    its metrics.json records it (`RunMetrics.held_out_dev`), drawn again (`train.finetune.held_out_dev`: refused when
    the file changed since)."""
    from .finetune import held_out_dev as draw

    metrics = RunMetrics.read(model_id, missing_ok=True) if Path(model_id).is_dir() else None
    held_out = metrics.held_out_dev if metrics else None
    if not held_out:
        raise ValueError(f"--dev-slice: {model_id} records no dev set held out of its training file (metrics.json "
                         "dev_slice, written by train.finetune --dev-fraction): give --labeled FILE")
    with naming("--dev-slice:"):
        return *draw(held_out, id2label, fix="score a file of your own with --labeled FILE"), held_out


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="python -m train.evaluate", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--model", required=True, help="a folder from save_pretrained (with tokenizer.json) or a Hub id")
    p.add_argument("--mlm-text", help="held-out text for MLM metrics (a path, folder or hub: spec)")
    p.add_argument("--mlm-max-chars", type=int, default=0, help="use only the first N characters (0: all)")
    p.add_argument("--max-length", "--mlm-max-length", type=int, default=None,  # (--mlm-max-length: the old name)
                   help="tokens per row, <s> and </s> included: the MLM text is packed into rows of N tokens, "
                        "classifier inputs are cut to N (default: the model's longest input)")
    p.add_argument("--labeled", help="labelled TSV/CSV (header sentence|text, label) or hub: spec")
    p.add_argument("--dev-slice", action="store_true",
                   help="instead of --labeled: the dev set the classifier's fine-tuning held out of its training file "
                        "(its metrics.json's dev_slice, train.finetune --dev-fraction), drawn again")
    p.add_argument("--text-column", help="--labeled's text column (default: the one the model was fine-tuned on, "
                   "recorded in its metrics.json, else sentence or text)")
    p.add_argument("--label-column", help="--labeled's label column (default: the one the model was fine-tuned on, "
                   "recorded in its metrics.json, else label)")
    p.add_argument("--imdb", help="IMDB train.tsv (text<TAB>label); a fixed sample is scored")
    p.add_argument("--imdb-n", type=int, default=1000, help="IMDB sample size; default: %(default)s")
    p.add_argument("--checks", nargs="?", const=str(DEFAULT_CHECKS), default=None,
                   help="behaviour checks TSV (category, sentence, expected: a label or 'unsure'), scored per "
                        f"category; without a value: {shown_path(DEFAULT_CHECKS)}")
    p.add_argument("--unsure-below", type=float, default=UNSURE_BELOW,
                   help="checks: the verdict is 'unsure' when the top (calibrated) probability is below this "
                        "(default: %(default)s)")
    p.add_argument("--batch-size", type=int, default=32, help="rows per forward pass (default: %(default)s)")
    p.add_argument("--seed", type=seed_value, default=0,
                   help="seed of the fixed MLM mask and the IMDB sample (default: %(default)s)")
    p.add_argument("--mlm-seeds", type=int, default=1,
                   help="score the MLM text under this many fixed masks (seeds --seed, --seed + 1, ...) and report "
                        "their mean and each one's accuracy: two models compared on the same masks, with less of "
                        "the noise of one draw (default: %(default)s)")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu",
                   help="where the model runs (default: %(default)s, a GPU when there is one)")
    p.add_argument("--cache-dir", help="cache the packed MLM text here (default, or '': no cache)")
    p.add_argument("--precision", choices=["auto", "fp32", "bf16"], default="fp32",
                   help="autocast of the MLM scoring, as train.pretrain's --precision (auto: bf16 on a GPU or a CPU "
                        "with native bf16, else fp32). Pretraining's final evaluation runs under the run's training "
                        "precision (its metrics.json's hardware.precision): give that one to reproduce its figures "
                        "(default: %(default)s)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.add_argument("--out", help="write the metrics as JSON: a .json file, or a folder (its metrics.json, as a run "
                                 "folder's); merged into the file if it exists")
    args = p.parse_args(argv)
    if not (args.mlm_text or args.labeled or args.dev_slice or args.imdb or args.checks):
        p.error("nothing to evaluate: give --mlm-text, --labeled (or --dev-slice), --imdb and/or --checks")
    if args.labeled and args.dev_slice:
        p.error("--labeled and --dev-slice both give the labelled data to score: give one")
    if args.batch_size < 1 or args.mlm_max_chars < 0:
        p.error(f"--batch-size must be at least 1 and --mlm-max-chars at least 0 (0 = all), got {args.batch_size} "
                f"and {args.mlm_max_chars}")
    try:
        check_unsure_below(args.unsure_below)
    except ValueError as err:
        p.error(str(err))
    if args.cache_dir and Path(args.cache_dir).is_file():  # said before any work
        p.error(f"--cache-dir {args.cache_dir} is a file, not a folder")
    try:
        args.device = device_option(args.device)
    except ValueError as err:
        p.error(str(err))
    return args


def run(args) -> dict:
    if args.imdb:  # (`imdb_sample`'s own check, before the model is loaded)
        check_imdb_n(args.imdb_n)
    with naming("--model"):
        model, tokenizer = load_model(args.model)
    model.to(args.device)
    is_mlm = isinstance(model, RobertaForMaskedLM)
    if args.mlm_text and not is_mlm:
        raise ValueError(f"{args.model} is a classifier; --mlm-text needs a masked-LM model")
    if (args.labeled or args.dev_slice or args.imdb or args.checks) and is_mlm:
        raise ValueError(f"{args.model} is a masked-LM model; --labeled/--dev-slice/--imdb/--checks need a "
                         "classifier")
    if not is_mlm:  # (one of them is given) accuracy, log-loss, ECE and verdicts of a softmax, one label per text
        require_softmax(model.config, args.model, "--labeled/--dev-slice/--imdb/--checks need")
    metrics = {}
    progress = progress_bars(args.no_progress)
    if args.mlm_text:
        with naming("--mlm-text"):
            docs = take_chars(read_documents(args.mlm_text), args.mlm_max_chars)
    # None: the model's longest input
    max_length = args.max_length if args.max_length is not None else model.config.max_length
    if not 3 <= max_length <= model.config.max_length:
        raise ValueError(f"--max-length must be between 3 and {model.config.max_length}, got {max_length}")
    if args.mlm_text:
        if args.mlm_seeds < 1:
            raise ValueError(f"--mlm-seeds must be at least 1, got {args.mlm_seeds}")
        rows = pack_sequences(docs, tokenizer, max_length, args.cache_dir or None)  # '' = no cache, as elsewhere
        precision = resolve_precision(args.precision, torch.device(args.device))
        with autocast(torch.device(args.device), precision):
            scored = evaluate_mlm_masks(model, tokenizer, rows, args.batch_size, args.seed, args.mlm_seeds, progress)
        metrics["mlm"] = {"source": args.mlm_text, "seed": args.seed, "max_length": max_length,
                          **({"max_chars": args.mlm_max_chars} if args.mlm_max_chars else {}),
                          "precision": precision, **scored}
    if args.labeled or args.dev_slice:
        if args.dev_slice:  # recorded with its slice: its source is the training file, of which it is a part
            texts, labels, held_out = held_out_dev(args.model, model.config.id2label)
            source = {"source": held_out["data"], "dev_slice": held_out}
        else:
            with naming("--labeled"):
                texts, labels, _ = read_labeled(args.labeled, *labeled_columns(args),
                                                label_names=model.config.id2label,
                                                labels_fix="its labels must be the model's")
            source = {"source": args.labeled}
        logits = classifier_logits(model, tokenizer, texts, args.batch_size, max_length, progress=progress)
        metrics["labeled"] = {**source, "max_length": max_length,
                              **evaluate_classifier(model, tokenizer, texts, labels, logits=logits),
                              "temperature": temperature_of(model),
                              "ece_uncalibrated": expected_calibration_error(scores_of(logits, model.config), labels),
                              # the card's "after" log-loss ("loss" is the raw logits': 0.386 against 0.311 shipped)
                              "loss_calibrated": F.cross_entropy(logits / temperature_of(model),
                                                                 torch.tensor(labels)).item()}
    if args.imdb and (note := imdb_skip_note(model.config.id2label)):  # labels that are not negative/positive
        print(note, file=sys.stderr, flush=True)
    elif args.imdb:  # IMDB's 0 and 1 are negative and positive: scored by those names, through the model's labels
        with naming("--imdb"):
            texts, labels = imdb_sample_as(args.imdb, args.imdb_n, args.seed, model.config.id2label)
        metrics["imdb"] = {"source": args.imdb, "seed": args.seed, "max_length": max_length,
                           **evaluate_reviews(model, tokenizer, texts, labels, args.batch_size, max_length,
                                              progress)}
    if args.checks:
        with naming("--checks"):
            checks = read_checks(args.checks)
            check_expected_labels(checks, model.config.id2label, f"--checks {args.checks}")
        metrics["checks"] = score_checks(model, tokenizer, checks, args.batch_size, args.unsure_below, max_length,
                                         source=shown_path(args.checks))
    return metrics


def _data_said(section: dict) -> str:
    """The data an evaluation section of metrics.json was measured on, as a note names it."""
    source = section.get("source") or "?"
    return f"the dev slice of {source}" if isinstance(section.get("dev_slice"), dict) else str(source)


def replaced_notes(previous: RunMetrics, metrics: dict, out) -> list[str]:
    """`note:` lines for the sections of --out's metrics.json (one `labeled`, `imdb`, `mlm`, `checks` each) that
    this evaluation replaces with figures of other data: a --dev-slice after a --labeled test file replaced its
    result without a word. A section measured again on the same data is an update, not said."""
    notes = []
    for name, section in metrics.items():
        old = getattr(previous, name, None)
        if not isinstance(old, dict) or not isinstance(section, dict) or _data_said(old) == _data_said(section):
            continue
        figure = next((f"{key} {old[key]:.4f}" for key in ("accuracy", "perplexity")
                       if isinstance(old.get(key), (int, float))), None)
        notes.append(f"note: --out {out}: its {name} result on {_data_said(old)}"
                     f"{f' ({figure})' if figure else ''} is replaced by this one on {_data_said(section)} (it keeps "
                     f"one {name} result: give another --out to keep both)")
    return notes


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        out = RunMetrics.path_of(args.out) if args.out else None  # a folder's metrics.json
        named_file = args.out and not Path(args.out).is_dir() and Path(args.out).suffix.lower() not in ("", ".json")
        if out and (out.parent.is_file() or named_file):  # a file without .json; results.txt held JSON
            raise ValueError(f"--out {args.out} is not a .json file: give a .json file or a folder")
        # what --out holds already (merged into) is read first: an unreadable file costs no evaluation
        previous = RunMetrics.read(out) if out and out.is_file() and out.stat().st_size else RunMetrics()
        metrics = run(args)
    except USER_ERRORS as err:
        return report_user_error(err)
    for name, m in metrics.items():
        if name == "checks":
            print(checks_markdown(m))
            continue
        shown = {k: (round(v, 4) if isinstance(v, float) else v) for k, v in m.items() if k != "confusion"}
        if isinstance(shown.get("dev_slice"), dict):  # said as the cards say it, not as its record (a digest)
            shown["dev_slice"] = dev_slice_said(shown["dev_slice"])
        print(f"{name}: {shown}")
    if out:
        for note in replaced_notes(previous, metrics, out):
            print(note, file=sys.stderr)
        try:  # a read-only folder or a full disk: one line, not a traceback
            print(f"metrics -> {previous.updated(**metrics).write(out)}")
        except OSError as err:
            print(f"error: --out {out}: {err.strerror or err}; the figures are printed above", file=sys.stderr)
            return EXIT_USER_ERROR
    return 0


if __name__ == "__main__":
    raise SystemExit(exit_code(main))
