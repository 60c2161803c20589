"""The note beside each tab's result (`model_note`): how big the model is, how it was trained, how it scores on
held-out data (from its metrics.json, through `demo.model_facts`) and which of the tab's own examples it gets wrong
(`example_failures`, checked by running the models at start-up); and the phrases the About tab's cards share with
it."""
from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path
from typing import NamedTuple

from roberta.masking import KEPT_FRACTION, MLM_PROBABILITY
from roberta.text import detokenize, lower_cases, normalize_for_classifier

from . import explain
from .calibration_note import redrawn_diagram
from .examples import FILL_MASK_EXPECTED, SENTIMENT_EXPECTED
from .formatting import format_probability, large_count, md_escape, millions, minutes, pct, readable
from .model_facts import (DEV_SLICE, SST2_DEV, SST2_SAID, checks_said, cpu_said, dev_set, dev_set_markdown,
                          finite_number, gpu_of, model_facts, training_hardware, weakest_checks)
from .models import KINDS, Models
from .training_counts import counts_for

log = logging.getLogger(__name__)


# What an MLM accuracy counts (`train.evaluate` scores every selected target, the unchanged ones too), from the
# masking rule's own rates: "15% of the tokens are targets, 1 in 10 of them left unchanged in the input"
TARGETS_SAID = (f"{MLM_PROBABILITY:.0%} of the tokens are targets, 1 in "
                f"{round(1 / KEPT_FRACTION)} of them left unchanged in the input")


class ShippedAccuracy(NamedTuple):
    """How metrics.json's SST-2 dev accuracy was measured ("float32 average"), and the shipped weights' own figure
    ("88.8%") and dtype ("float16", Markdown-escaped), as the model card gives them."""
    measured: str
    accuracy: str
    dtype: str


def shipped_accuracy(loaded, facts: dict) -> ShippedAccuracy | None:
    """How the SST-2 dev accuracy of metrics.json (facts' dev_accuracy, measured before the weights were stored in
    float16) compares with the shipped weights', when the model card gives a different figure for those
    (`redrawn_diagram`); None otherwise."""
    redrawn = redrawn_diagram(loaded.extras.get("readme")) if loaded.available else None
    if "dev_accuracy" not in facts or not redrawn or redrawn["accuracy"] in (None, pct(facts["dev_accuracy"])):
        return None
    measured = "float32 average" if facts.get("averaged") else "float32"
    return ShippedAccuracy(measured, redrawn["accuracy"], md_escape(redrawn["dtype"]))


def shipped_accuracy_said(loaded, facts: dict) -> str:
    """"float32 average; 88.8% as shipped in float16" (`shipped_accuracy`), or ""."""
    shipped = shipped_accuracy(loaded, facts)
    return f"{shipped.measured}; {shipped.accuracy} as shipped in {shipped.dtype}" if shipped else ""


class DeviceShare(NamedTuple):
    """What one kind of device trained of a model's pretraining: tokens, seconds, the device in words ("a 2-core
    CPU", "one NVIDIA H200", "GPUs"), the numbers of its phases in phases.json, and for GPUs of several models how
    many phases each ran (`gpu_phases_said`)."""
    tokens: int
    seconds: float
    named: str
    phases: tuple[int, ...]
    detail: str = ""


def gpu_phases(phases: list) -> dict[str, int]:
    """{GPU model: how many phases of phases.json trained on it}, in the order the models first ran (`gpu_of`)."""
    return Counter(gpu for gpu in map(gpu_of, phases) if gpu)


def gpu_phases_said(counts: dict[str, int]) -> str:
    """"3 phases on one NVIDIA H100 80GB HBM3, 1 on one NVIDIA H200": `gpu_phases`' counts in words."""
    return ", ".join(f"{n}{' phase' + ('s' if n > 1 else '') if i == 0 else ''} on one {md_escape(gpu)}"
                     for i, (gpu, n) in enumerate(counts.items()))


def pretraining_by_device(loaded) -> tuple[DeviceShare, DeviceShare] | None:
    """(the CPU's share, the GPU's share) of the trained phases of phases.json, when some ran on a GPU and every
    trained phase says its tokens, time and device; else None."""
    phases = loaded.extras.get("phases") if loaded.available else None
    trained = [(i, p) for i, p in enumerate(phases, 1) if p.train_tokens] if isinstance(phases, list) else []
    if not any(gpu_of(p) for _, p in trained) or any(finite_number(p.train_tokens) is None
                                                   or finite_number(p.train_time_s) is None for _, p in trained):
        return None
    on_gpu, on_cpu = [(i, p) for i, p in trained if gpu_of(p)], [(i, p) for i, p in trained if not gpu_of(p)]
    cores = {p.hardware.get("cpu_count") for _, p in on_cpu if isinstance(p.hardware, dict)}
    cpu = (cpu_said(cores.pop()) if len(cores) == 1 else None) or "the CPU"
    gpus = gpu_phases([p for _, p in on_gpu])
    gpu, detail = (f"one {md_escape(next(iter(gpus)))}", "") if len(gpus) == 1 else ("GPUs", gpu_phases_said(gpus))

    def share(part, named, detail=""):
        return DeviceShare(int(sum(p.train_tokens for _, p in part)), sum(p.train_time_s for _, p in part), named,
                           tuple(i for i, _ in part), detail)

    return share(on_cpu, cpu), share(on_gpu, gpu, detail)


def machine_said(loaded) -> str | None:
    """The machine a model's weights trained on, in words, as its records name it: for a model pretrained in phases
    (phases.json), the CPU of its phases that ran on one ("a 2-core CPU"; its GPU phases are `gpu_phases`'); else its
    run's (metrics.json; a weight average's members' where they agree, `training_hardware`): "an 8-core CPU", "one
    NVIDIA H200", "a GPU". None where the records name none."""
    if not loaded.available:
        return None
    phases = loaded.extras.get("phases")
    trained = [p.hardware for p in phases if p.train_tokens] if isinstance(phases, list) else []
    if trained:
        cpus = {h.get("cpu_count") for h in trained if isinstance(h, dict) and h.get("device") == "cpu"}
        return ((cpu_said(cpus.pop()) if len(cpus) == 1 else None) or "a CPU") if cpus else None
    metrics = loaded.extras.get("metrics")
    hardware = training_hardware(metrics) if metrics is not None else {}
    device, gpu = hardware.get("device"), hardware.get("gpu")
    if device == "cpu":
        return cpu_said(hardware.get("cpu_count")) or "a CPU"
    if isinstance(gpu, str):
        return f"one {md_escape(gpu)}"
    return "a GPU" if isinstance(device, str) and device.startswith("cuda") else None


def times_its_text(loaded, tokens: int) -> str:
    """" (about 58 times its 35.0M-token text)": how many times over the pretraining read its text, from the
    token counts of that text (`demo.training_counts`); "" without them."""
    counts = counts_for(loaded.tokenizer) if loaded.available else None
    size = int(counts.counts.sum()) if counts is not None else 0
    return f" (about {tokens / size:.0f} times its {large_count(size)}-token text)" if size else ""


def example_failures(models: Models) -> dict:
    """The showcase examples the loaded models get wrong, checked by running them (at start-up): {"mlm": [(text,
    expected, [top 5 words], the expected word's rank among them or None)], "sentiment": [(text, expected,
    label, probability)]}. A fill-mask example is wrong when the expected word is not the first answer; a sentiment
    one when the answer does not name the expected sentiment in any spelling (`roberta.text.sentiment_of`), and a
    classifier none of whose labels names one ("neutral", "LABEL_1") is not checked."""
    out = {"mlm": [], "sentiment": []}
    try:
        if models.mlm.available:
            for text, expected in FILL_MASK_EXPECTED.items():
                top = [r["token_str"].strip() for r in models.mlm.pipeline(text, top_k=5)]
                if top[0] != expected:
                    out["mlm"].append((text, expected, top, top.index(expected) + 1 if expected in top else None))
        labels = models.sentiment.config.id2label.values() if models.sentiment.available else []
        if explain.names_a_sentiment(labels):  # a classifier of other labels: nothing to check
            # read as the Sentiment tab reads them: lower-cased where the classifier's tokenizer lower-cases
            read = normalize_for_classifier if lower_cases(models.sentiment.tokenizer) else detokenize
            for text, expected in SENTIMENT_EXPECTED.items():
                best = models.sentiment.pipeline(read(text))[0]
                if explain.sentiment_of(best["label"]) != expected:  # "pos" is right for "positive"
                    out["sentiment"].append((text, expected, best["label"], float(best["score"])))
    except Exception:  # a note is not worth failing the start-up for
        log.exception("could not check the examples")
    return out


# The shipped classifier's encoder: phase 7 of the fill-mask model's pretraining, what assets/mini-roberta-mlm held
# at git 7c6d2d7 (README, "The shipped models"). Its metrics.json records the fine-tuning chain only (init_root: the
# TAPT run), so the app takes the phase from here, and says it only when both shipped folders are loaded
SHIPPED_CLASSIFIER_ENCODER_PHASE = 7
# Why the shipped classifier starts from that phase and not a later, better one (docs/sentiment-classifier.md,
# "Results by encoder"; docs/gpu-training.md): no classifier made from a later phase beat its weight average on
# SST-2 dev, and the best seeds' mean above its own is a few sentences from it. Their figures are in those pages
# alone, no file the app reads: said without them, for the shipped pair only
LATER_PHASES_SAID = (" Classifiers fine-tuned since from later phases, which fill in masked words better, scored "
                     "87.2% to 88.8% on SST-2 dev as weight averages, below its 88.9%; one's three runs averaged "
                     "89.0%, where this one's averaged 88.0%. Those gaps are a few of 872 sentences, within the noise: "
                     "a better fill-mask score has not clearly made a better classifier here.")


def phases_counted(phases: list, more: str = "") -> str:
    """"28 pretraining phases (19 of training, 9 weight averages)", or "3 pretraining phases" without averages:
    phases.json's entries, as the About tab's figure of the phases numbers them (a weight average trains
    nothing); `more`, said in the same parenthesis ("...; 45.5% of ...")."""
    trained = sum(1 for p in phases if p.train_tokens)
    averages = len(phases) - trained
    said = [f"{trained} of training, {averages} weight average{'s' if averages > 1 else ''}"] if averages else []
    said += [more] if more else []
    return f"{len(phases)} pretraining phases" + (f" ({'; '.join(said)})" if said else "")


def classifier_encoder_said(models: Models) -> str:
    """", the fill-mask model at phase 7 of its 28 pretraining phases (19 of training, 9 weight averages; 45.5%
    of the held-out targets right at the end of phase 7, 53.0% at the end of phase 28)" for the shipped classifier
    beside the shipped MLM (the figures from its phases.json, as the About tab's figure of every phase plots them:
    one measure for both); "" for any other pair, whose link the files do not say."""
    shipped = all(models[key].available and Path(models[key].source).resolve() == KINDS[key].default.resolve()
                  for key in KINDS)
    phases = models.mlm.extras.get("phases") if shipped else None
    if not isinstance(phases, list) or len(phases) <= SHIPPED_CLASSIFIER_ENCODER_PHASE:
        return ""
    then, last = (finite_number(phases[i].held_out[1]) for i in (SHIPPED_CLASSIFIER_ENCODER_PHASE - 1, -1))
    figures = (f"{pct(then)} of the held-out targets right at the end of phase {SHIPPED_CLASSIFIER_ENCODER_PHASE}, "
               f"{pct(last)} at the end of phase {len(phases)}" if then is not None and last is not None else "")
    return f", the fill-mask model at phase {SHIPPED_CLASSIFIER_ENCODER_PHASE} of its {phases_counted(phases, figures)}"


ORDINALS = {2: "second", 3: "third", 4: "fourth", 5: "fifth"}
PIECED_WORDS_SHOWN = 2  # the words of a failed example said to come in pieces, at most


def words_in_pieces(tokenizer, text: str) -> list[tuple[str, list[str]]]:
    """The words of `text` (special tokens aside) the tokenizer cuts into several pieces, in order, each with its
    pieces as the Tokens tab shows them ("␣b", "arked"): [("barked", ["␣b", "arked"])]."""
    encoding = tokenizer.encode(text)
    special = set(tokenizer.get_added_tokens_decoder())  # <s>, </s>, <mask>, ...: never a word's piece
    pieces: dict[int, list[tuple[str, int, int]]] = {}
    for token, token_id, word, (start, end) in zip(encoding.tokens, encoding.ids, encoding.word_ids,
                                                     encoding.offsets):
        if word is not None and token_id not in special:
            pieces.setdefault(word, []).append((token, start, end))
    out = []
    for word in sorted(pieces):
        if len(pieces[word]) > 1:
            start, end = pieces[word][0][1], pieces[word][-1][2]
            out.append((text[start:end].strip(), [readable(token) for token, _, _ in pieces[word]]))
    return out


def words_in_pieces_said(tokenizer, text: str) -> str:
    """"; “barked” reaches it in 2 pieces (␣b + arked), a word its vocabulary has no token for": how the words of a
    failed example that the tokenizer cuts up reach the model; "" when every word is one token or the tokenizer
    cannot say."""
    try:
        words = words_in_pieces(tokenizer, text)[:PIECED_WORDS_SHOWN]
    except Exception:  # a note is not worth failing the start-up for
        log.exception("could not split the example into tokens")
        return ""
    if not words:
        return ""
    said = [f"“{md_escape(word)}” {'reaches it ' if i == 0 else ''}in {len(parts)} pieces "
            f"({' + '.join(md_escape(p) for p in parts)})" for i, (word, parts) in enumerate(words)]
    return f"; {' and '.join(said)}, {'a word' if len(words) == 1 else 'words'} its vocabulary has no token for"


def model_note(models: Models, key: str, failures: dict | None = None) -> str:
    """One or two plain sentences next to a tab's result: how big the model is, how it scores on held-out
    data (from its metrics.json) and which of the tab's own examples it gets wrong (`example_failures`)."""
    loaded = models[key]
    if not loaded.available:
        return ""
    facts, failures = model_facts(loaded), failures or {}
    if key == "mlm":
        return _mlm_note(loaded, facts, failures)
    return _classifier_note(models, loaded, facts, failures)


def _opening(facts: dict, trained: str) -> str:
    """The first sentence of either note, "**About this model:** {size}, a small teaching model{trained}.", its size
    from the parameter count."""
    size = f"{millions(facts['parameters'])} parameters" if "parameters" in facts else "a small model"
    return f"**About this model:** {size}, a small teaching model{trained}."


def _mlm_note(loaded, facts: dict, failures: dict) -> str:
    """The fill-mask model's note: its pretraining (by device where a GPU trained part of it), its held-out and
    everyday-sentence figures, and the first showcase example it gets wrong."""
    # the Fill mask tab's note names the task once in full: the app says "MLM" for it everywhere else
    trained = (", pretrained from scratch with masked language modelling (MLM)"
               + (f" on {large_count(facts['train_tokens'])} tokens" + times_its_text(loaded, facts["train_tokens"])
                  if "train_tokens" in facts else ""))
    split = pretraining_by_device(loaded)
    if split:  # a GPU's phases read most of the tokens in minutes: one total time would hide that
        cpu, gpu = split
        # "then" only where every CPU phase came before every GPU phase: the shipped phase 23 ran on the CPU after
        # GPU phase 22
        joined = ", then" if not cpu.phases or max(cpu.phases) < min(gpu.phases) else " and"
        trained += (f": {minutes(cpu.seconds / 60)} on {cpu.named} for {large_count(cpu.tokens)} tokens{joined} "
                    f"{minutes(gpu.seconds / 60)} on {gpu.named} for {large_count(gpu.tokens)}"
                    + (f" ({gpu.detail})" if gpu.detail else ""))
    elif "train_minutes" in facts:
        trained += f" in {facts['train_minutes'] / 60:.1f} hours"
        trained += f" on {cpu}" if facts.get("device") == "cpu" and (cpu := cpu_said(facts.get("cores"))) else ""
    score = ""
    if "mlm_accuracy" in facts:
        rows = f", in {facts['mlm_rows']}-token rows" if "mlm_rows" in facts else ""
        score = (f" It guesses {pct(facts['mlm_accuracy'])} of its prediction targets in held-out Wikipedia text "
                 f"right (top-1{rows}; {TARGETS_SAID}).")
    elif "eval_accuracy" in facts:
        score = (f" It guesses {pct(facts['eval_accuracy'])} of its prediction targets in held-out text right "
                 f"(top-1; {TARGETS_SAID}).")
    if "probe" in facts:
        n = int(facts["probe"]["sentences"])
        first, top5 = round(facts["probe"]["top1"] * n), round(facts["probe"]["top5"] * n)
        score += f" Of {n} everyday sentences, it puts the expected word first in {first} and in its top 5 in " \
                 f"{top5}."
    note = _opening(facts, trained) + f"{score} Expect many wrong answers"
    wrong = failures.get("mlm") or []
    if wrong:
        text, expected, top, rank = wrong[0]
        if rank:
            note += (f": for “{md_escape(text)}” its first answer is {md_escape(top[0])}, and "
                     f"{md_escape(expected)} comes {ORDINALS.get(rank, f'#{rank}')}")
        else:
            note += (f": for “{md_escape(text)}” {md_escape(expected)} is not in its top 5 "
                     f"({', '.join(md_escape(w) for w in top[:3])}…)")
        note += words_in_pieces_said(loaded.tokenizer, text)
    return note + "."


def _dev_score(loaded, facts: dict) -> str:
    """"88.8% of the SST-2 dev sentences (872)": the classifier's dev accuracy, named by its dev set (`dev_set`) as
    the About tab's card names it: SST-2 dev's sentences, a slice held out of its training file ("of its dev set (60
    rows of `three.csv` held out from fine-tuning, seed 0)"), or its own dev file's examples."""
    accuracy, named = pct(facts["dev_accuracy"]), dev_set_markdown(facts)
    kind = dev_set(facts)
    if kind == SST2_DEV:
        said = [f"{facts['dev_examples']:,}"] if "dev_examples" in facts else []
        said += [shipped] if (shipped := shipped_accuracy_said(loaded, facts)) else []
        return f"{accuracy} of the SST-2 dev sentences" + (f" ({', '.join(said)})" if said else "")
    if kind == DEV_SLICE:  # its own count, file and seed: rows never trained on
        return f"{accuracy} of its dev set ({named})"
    return (f"{accuracy} of the " + (f"{facts['dev_examples']:,} " if "dev_examples" in facts else "")
            + "dev examples" + (f" ({named})" if named else ""))


UNSURE = "unsure"  # a behaviour check's expected verdict for a neutral or mixed sentence (train.evaluate's)


def weak_kind_said(checks: dict, name: str, figures: dict) -> str:
    """"negated negative (0/6, such as “The movie was not bad.”, expected positive)": a kind of behaviour check
    with its figures and its first sentence of the record (`items`), what it should get (for "unsure": under the
    record's `unsure_below`); its figures alone where the record holds no sentence of it."""
    said = f"{md_escape(str(name))} ({figures.get('right', 0)}/{figures.get('n', 0)}"
    example = next((item for item in checks.get("items") or [] if isinstance(item, dict)
                    and item.get("category") == name and isinstance(item.get("sentence"), str)), None)
    if example is None:
        return said + ")"
    expected = str(example.get("expected", ""))
    below = finite_number(checks.get("unsure_below"))
    if expected == UNSURE and below is not None:
        expected = f"under {below:.0%} sure"
    return said + f", such as “{md_escape(example['sentence'])}”" + (
        f", expected {md_escape(expected)})" if expected else ")")


def _classifier_note(models: Models, loaded, facts: dict, failures: dict) -> str:
    """The classifier's note: its fine-tuning (from which encoder, through which stages), its dev and IMDB
    figures, its weakest behaviour checks and the showcase examples it gets wrong."""
    # SST-2's training rows are mostly phrases cut from its sentences (the shipped model's 55,841: 5,886 whole
    # sentences), not sentences
    # a folder whose metrics.json names no data is taken for SST-2's only with SST-2's two labels
    sst2 = loaded.fine_tuned_on_sst2
    stages = facts.get("stages", [])
    then = "labelled IMDB reviews, then on " if "imdb" in stages else ""
    if "train_examples" not in facts:
        trained = f", fine-tuned on {then}{SST2_SAID}" if sst2 else f", fine-tuned on {then}its task" if then else \
            ", fine-tuned"
    elif sst2:
        trained = f", fine-tuned on {then}{facts['train_examples']:,} training examples of {SST2_SAID}"
    else:
        trained = f", fine-tuned on {then}{facts['train_examples']:,} training examples"
    start = classifier_encoder_said(models)
    why = LATER_PHASES_SAID if start else ""  # the shipped pair's: why not a later phase
    if "tapt" in stages:
        start += ", given more MLM (fill-mask) training on review text (TAPT)"
    trained = (f":{start[1:]}, then{trained[1:]}" if start else trained) + (
        f"; the weight average of {facts['averaged']} seeds' runs" if facts.get("averaged") else "")
    scores = []
    if "dev_accuracy" in facts:
        scores.append(_dev_score(loaded, facts))
    if "imdb_accuracy" in facts:
        # after a labelled IMDB stage, "out of domain" would contradict the note: these are reviews held out of it
        # (drawn from IMDB's train split, train.imdb_sample: not "test reviews", not comparable with IMDB test figures)
        held_out = "held out of training" if "imdb" in stages else "out of domain"
        scores.append(f"{pct(facts.get('imdb_accuracy_whole', facts['imdb_accuracy']))} of "
                      + (f"{facts['imdb_examples']:,} " if "imdb_examples" in facts else "")
                      + (f"IMDB reviews ({held_out}, read whole)" if "imdb_accuracy_whole" in facts
                         else f"IMDB reviews (longer, {held_out})"))
    note = _opening(facts, trained) + why
    if scores:
        note += f" It labels {' and '.join(scores)} right."
    checks = facts.get("checks")
    if checks:
        note += (f" Behaviour checks: {checks.get('right', 0)} of {checks_said(checks)} right; weakest: "
                 + ", ".join(weak_kind_said(checks, name, c) for name, c in weakest_checks(checks)) + ".")
    wrong = failures.get("sentiment") or []
    if wrong:
        said = "; ".join(f"“{md_escape(text)}” ({md_escape(label)}, {format_probability(p)})"
                         for text, _, label, p in wrong)
        note += f" Of the tab's examples, it gets {'this one' if len(wrong) == 1 else 'these'} wrong: {said}."
    return note
