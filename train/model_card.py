"""Write a model folder's README.md (the Hub model card) from its config and the values passed in.

Nothing is invented: the architecture comes from config.json, everything else (metrics, recipe, notes)
from the caller. Sections: architecture, data, training recipe, metrics, curves (if curves.png is in the
folder), limitations, usage (with `roberta.pipeline` and with `transformers`).
"""
from __future__ import annotations

import posixpath
import re
from pathlib import Path

import torch
from huggingface_hub import EvalResult, ModelCard, ModelCardData

from roberta import RobertaConfig, RobertaForMaskedLM, RobertaForSequenceClassification, checkpoint
from roberta.config import label_names
from roberta.figure_alts import curves_alt
from roberta.files import write_atomic
from roberta.run_metrics import (COMPRESSED, KNOWN_DATA_FILES, KNOWN_DATA_FOLDERS, METRICS_NAME, PHASES_NAME,
                                  Evaluation, RunMetrics, read_phase_history, said_list)
from roberta.text import names_a_sentiment

from .data import HUB_PREFIX
from .markdown import table_cell
from .reporting import CURVES_NAME, LOG_NAME, read_log


TASKS = tuple(task for _, task in checkpoint.ARCHITECTURES.values())  # ("fill-mask", "text-classification")
# The card's library: the folders load in transformers, and the Hub shows its "Use in Transformers" snippet and
# inference widget for this name only (a name of our own hid both); this project is one of the tags.
LIBRARY_NAME, PROJECT_TAG = "transformers", "roberta-from-scratch"
# the recipe's options that name data (train.pretrain's and train.finetune's)
DATA_KEYS = ("corpus", "valid", "train", "dev", "imdb", "tokenizer")


def _is_data_key(key: str) -> bool:
    return key in DATA_KEYS


def _data_values(recipe: dict, metrics: RunMetrics) -> list:
    """What the recipe's data options and the metrics' sources name."""
    named = [recipe.get(k) for k in DATA_KEYS] + [metrics.corpus, metrics.train_data]
    return [v for v in named + [e.data for e in metrics.evaluations()] if v is not None]


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v)


def _sources(spec: str) -> list[str]:
    """The sources a data option names: a mixture's, without their weights ("a=0.5,b" -> ["a", "b"])."""
    sources = []
    for item in (part.strip() for part in spec.split(",")):
        head, eq, weight = item.rpartition("=")
        try:
            sources.append(head.strip() if eq and float(weight) else item)
        except ValueError:
            sources.append(item)
    return [source for source in sources if source]


def dataset_of(source: str) -> str | None:
    """The Hub dataset one source is: a hub: spec's dataset id, or the one a known data file is a local copy of
    (`KNOWN_DATA_FILES`: ../shared/data/sst2/dev.tsv -> stanfordnlp/sst2, and its .xz copy); None for other data."""
    if source[:len(HUB_PREFIX)].lower() == HUB_PREFIX:
        return source[len(HUB_PREFIX):].split(":")[0].strip() or None
    parts = [p for p in source.lower().replace("\\", "/").removesuffix(COMPRESSED).split("/") if p not in ("", ".")]
    if parts and parts[-1] in KNOWN_DATA_FOLDERS:
        return KNOWN_DATA_FOLDERS[parts[-1]]
    if len(parts) < 2:
        return None
    return KNOWN_DATA_FOLDERS.get(parts[-2]) or KNOWN_DATA_FILES.get((parts[-2], parts[-1]))


def infer_datasets(*values) -> list[str]:
    """Hub dataset ids of the data that paths and specs anywhere in `values` name (`dataset_of`), each once."""
    found = []
    for source in (source for v in values for text in _strings(v) for source in _sources(text)):
        hub_id = dataset_of(source)
        if hub_id and hub_id not in found:
            found.append(hub_id)
    return found


def _flatten(metrics: dict, prefix: str = "") -> list[tuple[str, object]]:
    rows = []
    for key, value in metrics.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            rows += _flatten(value, f"{name} / ")
        elif isinstance(value, (int, float, str, bool)):
            rows.append((name, value))
        elif isinstance(value, (list, tuple)) and all(isinstance(v, (int, float, str)) for v in value):
            rows.append((name, ", ".join(map(str, value))))
    return rows


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    if isinstance(value, str) and value != value.strip():  # a token's space (" the"), which the cell would trim
        value = repr(value)
    return table_cell(value)


def _table(rows, header=("", "")) -> str:
    lines = [f"| {header[0]} | {header[1]} |", "|---|---|"]
    return "\n".join(lines + [f"| {k} | {_fmt(v)} |" for k, v in rows])


def count_parameters(config: RobertaConfig, task: str) -> int:
    """Parameters of the model (tied embeddings counted once), built on the meta device: no memory used."""
    cls = RobertaForMaskedLM if task == "fill-mask" else RobertaForSequenceClassification
    with torch.device("meta"):
        return cls(config).num_parameters()


def _dataset_config(source: str) -> str | None:
    """The Hub config of a WikiText file: its `.tokens` files (rare words marked `<unk>`) are `wikitext-2-v1`, its
    `.raw` ones `wikitext-2-raw-v1` (the same for WikiText-103); None for other data."""
    low = source.lower()
    for corpus in ("wikitext-103", "wikitext-2"):
        if corpus in low:
            return f"{corpus}-raw-v1" if ".raw" in low else f"{corpus}-v1"
    return None


def _masks(evaluation: Evaluation, metrics: RunMetrics) -> int | None:
    """How many random maskings a held-out MLM figure averages: the `train.evaluate` section's count when the figure
    is its own, else None (training's final evaluation: one masking)."""
    mlm = metrics.mlm if isinstance(metrics.mlm, dict) else {}
    return mlm.get("masks") if mlm.get(evaluation.metric) == evaluation.value else None


def _names(evaluation: Evaluation, metrics: RunMetrics, hub_id: str) -> tuple[str, str | None]:
    """(dataset name, metric name) the Hub shows for `evaluation`: what the figure measures (masked tokens, not a
    fill-mask benchmark's accuracy; an IMDB sample, read whole in windows only `roberta.pipeline` reads)."""
    name, metric = evaluation.name, evaluation.metric
    if name == "held-out MLM":
        masks = _masks(evaluation, metrics)
        averaged = f" (mean of {masks} random maskings)" if masks and masks > 1 else ""
        return hub_id, f"{'masked-token accuracy' if metric == 'accuracy' else 'MLM perplexity'}{averaged}"
    if name == "held-out dev":  # train.finetune --dev-fraction: a slice of the training file, not the data set's dev
        n = (metrics.held_out_dev or {}).get("n")
        size = f"{n:,}-example " if isinstance(n, int) else ""
        return f"{hub_id}: {size}slice of train held out from fine-tuning", None
    if name in ("IMDB", "IMDB read whole") and metrics.imdb_examples:
        sample = f"{hub_id}: {metrics.imdb_examples:,}-review held-out sample of train"
        length = metrics.max_length or 128
        read = (f"each review read whole in overlapping {length}-token windows" if name == "IMDB read whole"
                else f"first {length} tokens of each review")
        return sample, f"{metric}, {read}"
    return hub_id, None  # the metric's type says it


def _eval_results(metrics: RunMetrics, task: str) -> list[EvalResult]:
    """model-index entries for the metrics whose data is a known Hub dataset: one per dataset, split and metric,
    the last of `metrics.evaluations()` (the fullest), so the Hub page shows the figures the card headlines,
    named for what they measure (`_names`)."""
    results = {}
    for evaluation in metrics.evaluations():
        source, metric, value = evaluation.data, evaluation.metric, evaluation.value
        ids = infer_datasets(source)
        if ids:
            low = source.lower()
            split = "validation" if any(s in low for s in ("dev", "valid")) else "train" if "train" in low else None
            if evaluation.name == "held-out dev":  # a slice of the training file (its path may say "dev" elsewhere)
                split = "train"
            dataset_name, metric_name = _names(evaluation, metrics, ids[0])
            results[ids[0], split, metric] = EvalResult(task_type=task, dataset_type=ids[0], dataset_name=dataset_name,
                                                        dataset_config=_dataset_config(source), dataset_split=split,
                                                        metric_type=metric, metric_name=metric_name,
                                                        metric_value=float(value))
    return list(results.values())


# the fill-mask Usage examples' sentence: one the shipped model answers right (tests/test_assets.py runs it)
FILL_MASK_USAGE = "Paris is the capital of <mask>."
# the classifier Usage examples' text: a film review for a sentiment classifier (the shipped one), else a text that
# suits no task in particular (a topic classifier's card showed a film review)
SENTIMENT_USAGE = "A gripping, beautifully acted film."
TEXT_USAGE = "The text to classify."


def classifier_title(id2label) -> str:
    """A classifier card's title's first words, by its labels (`roberta.text.names_a_sentiment`): "Sentiment
    classifier" for labels that name a sentiment (the shipped one's negative, positive), else "Text classifier"
    with its labels, e.g. "Text classifier (world, sports, business, science)"."""
    names = label_names(id2label)
    return "Sentiment classifier" if names_a_sentiment(names) else f"Text classifier ({', '.join(names)})"


# safetensors' dtype names -> torch's
SAFETENSORS_DTYPES = {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}


def stored_dtype(folder) -> str | None:
    """The dtype folder/model.safetensors stores every weight in ("float16" after `train.export`'s default), read
    from the file itself; None when it has none, several, or cannot be read."""
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(Path(folder) / "model.safetensors", "pt") as weights:
            dtypes = {weights.get_slice(name).get_dtype() for name in weights.keys()}
    except (OSError, SafetensorError):
        return None
    return SAFETENSORS_DTYPES.get(dtypes.pop()) if len(dtypes) == 1 else None


def _weights_note(folder) -> str:
    """The Usage's sentence on a folder whose weights are stored below float32: what a user downloads is not what
    runs (`roberta` always loads float32; `transformers` loads the dtype config.json names); '' otherwise."""
    stored, weights = stored_dtype(folder), Path(folder) / "model.safetensors"
    loads = checkpoint.read_json(Path(folder) / "config.json").get("dtype", "float32")
    if stored in (None, "float32"):
        return ""
    return (f"The weights are stored in {stored} (`model.safetensors`, {weights.stat().st_size / 1e6:.1f} MB); "
            f"`roberta` loads them as float32, the precision the model computes in, and `transformers` as "
            f"config.json's `dtype`, {loads}.\n\n")


def _widget_note(config: RobertaConfig) -> str:
    """Why a calibrated classifier's card gives the Hub's inference widget no examples, with its temperature."""
    temperature = getattr(config, "calibration_temperature", None)
    if not temperature or temperature == 1.0:
        return ""
    return (f"\n\nThis card gives the Hub's inference widget no examples: the widget runs `transformers`' "
            f"pipeline, so it would show the uncalibrated softmax, not the calibrated probabilities (T = "
            f"{temperature:.3f}) that `roberta.pipeline` and the app return.")


def _usage(task: str, repo: str, folder) -> str:
    config = checkpoint.load_config(folder)
    max_length, weights = config.max_length, _weights_note(folder)
    if task == "fill-mask":
        return f"""{weights}With this project's from-scratch code (`pip install` its requirements, then from its root):

```python
import roberta
fill = roberta.pipeline("fill-mask", model="{repo}")
fill("{FILL_MASK_USAGE}")
```

With `transformers` (the weights are in its RoBERTa layout; `truncation` keeps the first {max_length} tokens of
a longer text, all the model reads: without it such a text is an error):

```python
from transformers import pipeline
fill = pipeline("fill-mask", model="{repo}", tokenizer_kwargs={{"truncation": True}})
fill("{FILL_MASK_USAGE}")
```"""
    sentiment = names_a_sentiment(label_names(config.id2label))
    example, task = (SENTIMENT_USAGE, "sentiment-analysis") if sentiment else (TEXT_USAGE, "text-classification")
    sst2 = (" Text tokenized as SST-2 is (`it 's`,\n`does n't`) reads best detokenized first (the project's "
            "`roberta.text.normalize_for_classifier`).") if sentiment else ""
    return f"""{weights}The classifier was trained on lower-cased text; its `tokenizer.json` lower-cases every input (a
`tokenizers` normalizer), so `transformers` feeds it the same way when you load the tokenizer with `AutoTokenizer`
or `pipeline`: `RobertaTokenizer` and `RobertaTokenizerFast` drop the lower-casing (they rebuild the tokenizer
from its vocabulary and merges), and cased text then gets other answers.{sst2}
The model reads {max_length} tokens at a time: `roberta.pipeline` reads a longer text whole, in overlapping
windows whose logits it averages (`long_text="first"`: the first window only); with `transformers`,
`truncation=True` keeps the first {max_length} tokens.

With this project's from-scratch code:

```python
import roberta
from roberta.text import normalize_for_classifier
classify = roberta.pipeline("{task}", model="{repo}")
classify(normalize_for_classifier("{example}"))
```

With `transformers`, dividing the logits by the calibration temperature stored in config.json (1.0 when
the model was not calibrated; `transformers.pipeline` would show the uncalibrated softmax):

```python
import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer
model = AutoModelForSequenceClassification.from_pretrained("{repo}")
tokenizer = AutoTokenizer.from_pretrained("{repo}")
with torch.no_grad():
    inputs = tokenizer(["{example}"], truncation=True, return_tensors="pt")
    logits = model(**inputs).logits
probs = (logits / getattr(model.config, "calibration_temperature", 1.0)).softmax(-1)
```{_widget_note(config)}"""


# what a classifier's training file holds, by the Hub dataset it is (`infer_datasets`)
TRAINED_ON = {"stanfordnlp/sst2": "SST-2's short movie-review phrases", "stanfordnlp/imdb": "IMDB movie reviews"}


def _learnt_limitation(metrics: RunMetrics | None, max_length: int, labels: list[str] | None = None) -> str:
    """The classifier card's limitation on what it learnt from: its training file (`train_data`), after the earlier
    fine-tuning stage it continued, if any (`init_gave` with the head: the shipped one fine-tuned on IMDB reviews
    first); and on long texts, its IMDB figures read whole and on the first tokens when it has them (a measured
    figure, not a warning: the shipped one reads whole reviews about as well as SST-2 dev), else "long texts" among
    the errors to expect, unmeasured. Said of sentiment (sarcasm, mixed opinions) only when its `labels` name one
    (`roberta.text.names_a_sentiment`; none given: the shipped one's), else of its labels."""
    metrics = metrics or RunMetrics()
    found = infer_datasets(metrics.train_data) if metrics.train_data else []
    learnt = (TRAINED_ON.get(found[0], f"`{metrics.train_data}`") if found else
              f"`{metrics.train_data}`" if metrics.train_data else "its training data (see Data)")
    init = metrics.init if isinstance(metrics.init, str) and not metrics.init.startswith("several") else None
    if init and "head" in (metrics.init_gave or ""):  # a classifier's encoder and head: an earlier stage
        learnt += f", after an earlier fine-tuning stage (`{init}`)"
    whole, first, n = metrics.imdb_accuracy_whole, metrics.imdb_accuracy, metrics.imdb_examples
    if labels is not None and not names_a_sentiment(labels):
        return (f"A {len(labels)}-label classifier ({', '.join(labels)}) learnt from {learnt}: expect errors on other "
                "domains and long texts.")
    if whole is None:
        return f"Binary sentiment learnt from {learnt}: expect errors on other domains, sarcasm, mixed opinions and " \
               "long texts."
    reviews = f"{n:,} IMDB reviews" if n else "IMDB reviews"
    cut = f", {first:.1%} on their first {metrics.max_length or max_length} tokens" if first is not None else ""
    return (f"Binary sentiment learnt from {learnt}: expect errors on other domains, sarcasm and mixed opinions. "
            f"A text longer than {max_length} tokens is read in overlapping windows (`roberta.pipeline`): on "
            f"{reviews} it is right {whole:.1%} of the time read whole{cut} (see Metrics).")


def _limitations(task: str, max_length: int, metrics: RunMetrics | None = None,
                 labels: list[str] | None = None) -> str:
    items = [
        "A teaching model: small and trained on a small budget (see the recipe), so far weaker than "
        "`roberta-base`; not meant for production use.",
        "English only. The training text (see Data) carries its sources' topical, cultural and gender biases.",
        f"Inputs are limited to {max_length} tokens including `<s>` and `</s>`.",
    ]
    if task == "text-classification":
        items.append(_learnt_limitation(metrics, max_length, labels))
    else:
        items.append("WikiText-2 v1 marks rare words as `<unk>`; the model never learnt to predict them.")
    return "\n".join(f"- {item}" for item in items)


def _model_index_of_metrics(folder: Path, card: str) -> str:
    """`card` with its model-index taken from folder/metrics.json as it is now: an evaluation added after the card
    was written (`train.evaluate --out RUN/metrics.json`, e.g. 5 masks after a GPU run) is what the Hub shows."""
    metrics = RunMetrics.read(folder / METRICS_NAME, missing_ok=True)
    parsed = ModelCard(card) if card.startswith("---\n") else None
    if metrics is None or parsed is None or parsed.data.pipeline_tag not in TASKS or not parsed.data.model_name:
        return card
    results = _eval_results(metrics, parsed.data.pipeline_tag)
    if not results or results == parsed.data.eval_results:
        return card
    return with_front_matter(card, eval_results=results)


def _library_of_today(card: str) -> str:
    """`card` with library_name LIBRARY_NAME and the tag PROJECT_TAG: a card written before them (library_name
    "roberta-from-scratch", which hid the Hub's transformers snippet and widget) ships with them."""
    parsed = ModelCard(card) if card.startswith("---\n") else None
    if parsed is None or parsed.data.library_name == LIBRARY_NAME and PROJECT_TAG in (parsed.data.tags or []):
        return card
    return with_front_matter(card, library_name=LIBRARY_NAME,
                             tags=[*(t for t in parsed.data.tags or [] if t != PROJECT_TAG), PROJECT_TAG])


def curves_section(folder, metrics: RunMetrics | None) -> str:
    """The card's Training curves section: the figure, and what its evaluation curve reads when the folder's log
    says (a pretraining run's periodic evaluations read its first `--eval-rows` held-out rows, the Metrics
    table's eval_ figures the final evaluation's rows: the curve ends above or below the table beside it)."""
    folder, metrics = Path(folder), metrics or RunMetrics()
    image = f"![{_curves_alt(folder, metrics)}]({CURVES_NAME})"
    if metrics.is_average:
        return "\n\n".join(filter(None, [image, _average_curves_caption(metrics), phases_figure(folder)]))
    log = folder / LOG_NAME
    evals = [e for e in read_log(log) if e.get("type") == "eval"] if log.is_file() else []
    last = evals[-1] if evals else {}
    needed = (last.get("sequences"), last.get("eval_tokens"), last.get("accuracy"), last.get("loss"),
              metrics.eval_tokens, metrics.eval_accuracy, metrics.eval_loss)
    if any(value is None or value == 0 for value in needed):
        return "\n\n".join(filter(None, [image, phases_figure(folder)]))
    rows = "the final evaluation's rows" if "--final-eval-rows" in (metrics.command or "") else "all held-out rows"
    caption = (f"The evaluation curve reads the first {last['sequences']:,} held-out rows ({last['eval_tokens']:,} "
               f"masked tokens) at each evaluation, so it ends at accuracy {last['accuracy']:.1%} and loss "
               f"{last['loss']:.2f}; the Metrics table's eval_ figures read {rows} ({metrics.eval_tokens:,} masked "
               f"tokens): accuracy {metrics.eval_accuracy:.1%}, loss {metrics.eval_loss:.2f}.")
    mlm = metrics.mlm if isinstance(metrics.mlm, dict) else {}
    if all(mlm.get(key) for key in ("tokens", "masks", "sequences", "accuracy")):
        caption += (f" The model-index's figures are `train.evaluate`'s, on {mlm['sequences']:,} held-out rows with "
                    f"{mlm['masks']} random maskings ({mlm['tokens']:,} masked tokens): accuracy "
                    f"{mlm['accuracy']:.1%}.")
    return "\n\n".join(filter(None, [image, caption, phases_figure(folder)]))


def _average_curves_caption(metrics: RunMetrics) -> str:
    """What a masked-LM weight average's curves are: its members' training (`train.average` trains nothing, and
    keeps no log), so no curve ends at its own held-out figures, which the caption gives from the Metrics table;
    '' without them (a classifier average's table is its dev figures)."""
    accuracy, loss, tokens = metrics.eval_accuracy, metrics.eval_loss, metrics.eval_tokens
    if any(value is None for value in (accuracy, loss, tokens)):
        return ""
    mlm = metrics.mlm if isinstance(metrics.mlm, dict) else {}
    rows = f"the held-out text's first {mlm['max_chars']:,} characters" if mlm.get("max_chars") else "all held-out rows"
    masks = mlm.get("masks") or 1
    scored = (f"{tokens:,} masked tokens over {masks} fixed masks, their mean" if masks > 1
              else f"{tokens:,} masked tokens")
    return (f"The curves are the training of the {metrics.averaged} runs averaged into this model, each labelled by "
            "its folder: averaging trains nothing, so no curve ends at this model's own figures. Those are the "
            f"Metrics table's eval_ figures, on {rows} ({scored}): accuracy {accuracy:.1%}, loss {loss:.2f}.")


def _curves_alt(folder: Path, metrics: RunMetrics) -> str:
    """The alt text of the folder's curves.png: a weight average's shows its members (`train.average`), a model
    pretrained in phases (phases.json) its last phase alone, any other its own run."""
    if metrics.is_average:
        return curves_alt(f"the {metrics.averaged} runs averaged into this model", per_run=True)
    phases = read_phase_history(folder) if (folder / PHASES_NAME).is_file() else []
    if len(phases) > 1:
        tokens = f", {metrics.train_tokens:,} tokens" if metrics.train_tokens else ""
        return curves_alt(f"the last pretraining phase only (phase {len(phases)}{tokens})")
    return curves_alt("this model")


PHASES_FIGURE = "phases.png"  # `scripts.phase_curve`'s figure of a shipped MLM's phases.json


def phases_figure(folder) -> str:
    """The figure of every pretraining phase, when the folder has it and the history it is drawn from; else ''."""
    folder = Path(folder)
    if not (folder / PHASES_FIGURE).is_file() or not (folder / PHASES_NAME).is_file():
        return ""
    phases = read_phase_history(folder)
    tokens = sum(phase.train_tokens or 0 for phase in phases)
    return (f"![Held-out MLM accuracy at the end of each pretraining phase against the tokens read]({PHASES_FIGURE})"
            f"\n\nEvery pretraining phase ({len(phases)} in `{PHASES_NAME}`, {tokens:,} tokens in all): held-out MLM "
            "accuracy at the end of each against the tokens read by then (log axis), and the straight line through "
            "the last phase end whose slope fits the ends of the last doubling of tokens, carried forward: an "
            "extrapolation, not a measurement (`python -m scripts.phase_curve` draws it).")


def with_front_matter(card: str, **fields) -> str:
    """`card` with these fields of its YAML front matter set (None: left out); a card without one as it is."""
    if not card.startswith("---\n"):
        return card
    parsed = ModelCard(card)
    for name, value in fields.items():
        setattr(parsed.data, name, value)
    return f"---\n{parsed.data.to_yaml()}\n---\n{parsed.text}"


BASE_MODEL_HEADING = "Base model"
# how a Base model section that describes the project's own encoder (`scripts.release`'s `base_encoder_text`) ends
# its account of it, and how it names a phase of the shipped MLM that is not the weights that folder holds now
NOT_ON_THE_HUB = "That encoder is not on the Hub, so this card names no `base_model`."
EARLIER_PHASE = re.compile(r"phase \d+ of the \d+ phases of `[^`]+`")


class BaseModelRefused(ValueError):
    """A Hub id given as the base model of a card that says it was fine-tuned from other weights."""


def with_base_model(card: str, hub_id: str | None, text: str) -> str:
    """`card` naming the model it was fine-tuned from: `hub_id` as the front matter's `base_model` (the Hub links
    the two; it takes Hub ids only, so an encoder that is not on the Hub goes without the key) and `text` as its
    "Base model" section, before the first other section (an earlier one replaced). A section that describes the
    project's encoder (NOT_ON_THE_HUB) keeps its account, that sentence becoming the Hub link; one whose encoder is
    an earlier phase of the shipped MLM (EARLIER_PHASE) is refused a Hub id (`BaseModelRefused`): the Hub would
    link the card to weights it was not fine-tuned from."""
    own = section_of(card, BASE_MODEL_HEADING)
    if hub_id and own and NOT_ON_THE_HUB in own:
        if phase := EARLIER_PHASE.search(own):
            raise BaseModelRefused(f"--base-model {hub_id}: this model was fine-tuned from {phase.group(0)}, not the "
                                   "weights that folder holds now (its card's Base model section), so the Hub's "
                                   f"base_model would link it to weights it was not trained from: push it without "
                                   "--base-model, its card keeps that section")
        text = own.replace(NOT_ON_THE_HUB, f"That encoder is on the Hub as [{hub_id}](https://huggingface.co/{hub_id}).")
    card = with_front_matter(card, base_model=hub_id)
    if own is not None:
        return replace_section(card, BASE_MODEL_HEADING, text)
    at = card.find("\n## ")
    at = len(card) if at < 0 else at
    return card[:at].rstrip("\n") + f"\n\n## {BASE_MODEL_HEADING}\n\n{text.strip()}\n" + card[at:]


def base_model_text(hub_id: str, metrics: RunMetrics | None) -> str:
    """The Base model section of a classifier fine-tuned from the Hub's `hub_id`, with where its fine-tuning started
    in the project's files (metrics.json's `init_root`, else `init`)."""
    metrics = metrics or RunMetrics()
    start = metrics.init_root or metrics.init
    where = f" (in this project's files, fine-tuning started from `{start}`)" if isinstance(start, str) else ""
    return f"Fine-tuned from [{hub_id}](https://huggingface.co/{hub_id}){where}."


def card_for(folder, model: str, base_model: str | None = None) -> str:
    """The model card of `folder` (its README.md) with the Usage section written anew for `model`, the
    folder or Hub id users load it from: a card is written where the model was trained (a run folder),
    and its usage must name where it ships. Its model-index, library name and curves caption are today's too, and a
    weight average's Metrics section (what `metrics_markdown` says of its hardware). `base_model`: the Hub id of
    the model it was fine-tuned from, named in the front matter and a Base model section (None: the card's own, if
    any, stays)."""
    folder = Path(folder)
    card = _model_index_of_metrics(folder, (folder / "README.md").read_text(encoding="utf-8"))
    card = _library_of_today(card)
    metrics = RunMetrics.read(folder / METRICS_NAME, missing_ok=True)
    if base_model:
        card = with_base_model(card, base_model, base_model_text(base_model, metrics))
    card = replace_section(card, "Training curves", curves_section(folder, metrics))
    if metrics is not None and metrics.is_average:
        card = replace_section(card, "Metrics", metrics_markdown(card_table(metrics, folder), folder))
    usage = _usage(checkpoint.task_of(checkpoint.read_architecture(folder)), model, folder)
    return replace_section(card, "Usage", usage)


def machine_of(hardware) -> str | None:
    """A machine as the cards name it, from a metrics.json `hardware`: its GPU, else its CPU and cores ("AMD EPYC
    (2 cores)"); None when the record names neither."""
    hardware = hardware if isinstance(hardware, dict) else {}
    if hardware.get("gpu"):
        return str(hardware["gpu"])
    if not hardware.get("cpu"):
        return None
    return f"{hardware['cpu']} ({hardware['cpu_count']} cores)" if hardware.get("cpu_count") else str(hardware["cpu"])


def records_its_own_hardware(metrics: RunMetrics) -> bool:
    """Whether metrics.json's `hardware` is the machine that made the model. A weight average's is since
    `train.average` records its members' apart (`member_hardware`); before, it was one member's (`members_hardware`)."""
    return not metrics.is_average or metrics.member_hardware is not None


def members_hardware(metrics: RunMetrics, folder=None) -> list:
    """The `hardware` of each member of a weight average, in order, None where nothing says: `member_hardware` as
    `train.average` records it. A record from before that is read as it was written: its `hardware` is one member's
    (a masked LM's last, a classifier's first), and a member that is a phase of the folder's phases.json (the phase
    with the command and tokens of its row in `members`) has that phase's."""
    if isinstance(metrics.member_hardware, list):
        return metrics.member_hardware
    rows = [row for row in metrics.members or [] if isinstance(row, dict)]
    found = [None] * max(metrics.averaged or 0, len(rows))
    phases = read_phase_history(folder) if folder and (Path(folder) / PHASES_NAME).is_file() else []
    for i, row in enumerate(rows):
        same = [p.hardware for p in phases if p.hardware
                and (p.command, p.train_tokens) == (row.get("command"), row.get("train_tokens"))]
        found[i] = same[-1] if same else None
    if found and metrics.hardware:
        found[-1 if isinstance(metrics.mlm, dict) else 0] = metrics.hardware
    return found


def average_hardware_text(metrics: RunMetrics, folder=None) -> str:
    """A weight average's hardware in words: the machines its members trained on and the one that averaged them,
    which trained nothing ("an average of weights trained on NVIDIA H100 and NVIDIA H200; averaged on AMD EPYC (2
    cores)"). `folder`: where its phases.json is, for a record from before `member_hardware` (`members_hardware`)."""
    machines = [machine_of(hardware) for hardware in members_hardware(metrics, folder)]
    known = list(dict.fromkeys(machine for machine in machines if machine))
    if not known:
        trained = "an average of weights whose training hardware is not recorded"
    else:
        trained = f"an average of weights trained on {said_list(known)}"
        if None in machines:
            trained += (f" ({len(machines) - machines.count(None)} of the {len(machines)} runs it averages; the "
                        "others' hardware is not recorded)")
    if records_its_own_hardware(metrics):
        return f"{trained}; averaged on {machine_of(metrics.hardware) or 'a machine not recorded'}"
    whose = "last" if isinstance(metrics.mlm, dict) else "first"
    return (f"{trained}; the machine that averaged them is not recorded (this metrics.json is from before "
            f"`train.average` recorded it: its `hardware` is the {whose} member's)")


def card_table(metrics: RunMetrics, folder) -> RunMetrics:
    """What the Metrics table of the folder's card shows: a classifier's leaves out what its own sections show
    (`train.finetune.card_table_metrics`), a masked LM's is all of metrics.json."""
    from .finetune import card_table_metrics  # (train.finetune writes its cards with this module)

    return metrics if checkpoint.read_architecture(folder) == "RobertaForMaskedLM" else card_table_metrics(metrics)


def metrics_markdown(metrics: RunMetrics, folder=None) -> str:
    """The card's Metrics section: every value of `metrics` in a table. A weight average's hardware is said under
    it (`average_hardware_text`; `folder`: the model's, for its phases.json): the table's `hardware` is the
    machine that averaged, and one that is a member's (an earlier `train.average`'s record) is left out of the
    table, not shown as the model's."""
    shown = metrics if records_its_own_hardware(metrics) else metrics.updated(hardware=None)
    rows = _flatten(shown.to_dict())
    if not rows:
        return "(none given)"
    table = _table(rows, ("metric", "value"))
    if metrics.averaged and metrics.train_time_s and metrics.wall_time_s is not None:  # seconds of two kinds
        table += (f"\n\ntrain_time_s is the training of the {metrics.averaged} averaged members (each run counted "
                  "once); wall_time_s is the averaging command's own (`train.average`: averaging, calibration and "
                  "scoring).")
    if metrics.imdb_sample_removed_from_training is not None and metrics.train_data and metrics.imdb_data:
        table += (f"\n\nimdb_sample_removed_from_training counts the IMDB sample's reviews that this stage's own "
                  f"training file (`{metrics.train_data}`) held and that were removed from it before training")
        table += ("; an earlier stage it continued (`init`) removed those its own file held." if metrics.init and
                  "head" in (metrics.init_gave or "") else ".")
    if yardstick := constant_guess_text(metrics):
        table += f"\n\n{yardstick}"
    if metrics.is_average:
        table += f"\n\nHardware: {average_hardware_text(metrics, folder)}."
    return table


def constant_guess_text(metrics: RunMetrics) -> str:
    """What the held-out masked-token accuracy is measured against: the best constant guess over the same targets
    (`train.evaluate.constant_guess`), recorded in metrics.json's mlm section (`train.evaluate`) or else beside the
    run's own eval_ figures (`train.pretrain`'s final evaluation), each named as the Metrics table names it; '' where
    the record has none."""
    mlm = metrics.mlm if isinstance(metrics.mlm, dict) else {}
    for record, prefix in (({f"mlm / {k}": v for k, v in mlm.items()}, "mlm / "), (metrics.to_dict(), "eval_")):
        names = [f"{prefix}{key}" for key in ("accuracy", "constant_guess_token", "constant_guess_accuracy")]
        accuracy, token, guessed = map(record.get, names)
        if isinstance(token, str) and isinstance(guessed, (int, float)) and isinstance(accuracy, (int, float)):
            return (f"The yardstick of {names[0]} ({accuracy:.1%}) is {names[2]}: a model that always guessed "
                    f"{table_cell(repr(token))}, the commonest of the same targets (the same rows and masks), would "
                    f"score {guessed:.1%}.")
    return ""


LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")  # [text](target) and ![alt](target), across line breaks
FENCE = re.compile(r"^ *```.*?^ *```", re.S | re.M)  # a fenced code block (one in a list item is indented)


def linked_files(markdown: str, page=".") -> list[str]:
    """The files the relative links and images of `markdown` (outside its code blocks) point at, each once, as
    paths relative to the folder `page` (the Markdown file's path there) is in, '/'-separated and normalized
    (`docs/a.md`'s `../train/x.py#L3` is `train/x.py`); URLs and links to a heading of the page itself are none.
    A path that leaves that folder begins with `..`."""
    found = []
    for target in LINK.findall(FENCE.sub("", markdown)):
        file_part = target.split("#")[0]
        if file_part and not re.match(r"[A-Za-z][\w+.-]*:", target):  # http:, https:, mailto: ...
            path = posixpath.normpath(posixpath.join(posixpath.dirname(Path(page).as_posix()), file_part))
            found += [] if path in found else [path]
    return found


def section_of(card: str, heading: str) -> str | None:
    """The body of the card's `## heading` section, stripped; None when it has none."""
    start = card.find(f"\n## {heading}\n")
    if start < 0:
        return None
    end = card.find("\n## ", start + 1)
    return card[start + len(f"\n## {heading}\n"):len(card) if end < 0 else end].strip()


def replace_section(card: str, heading: str, body: str) -> str:
    """`card` with the body of its `## heading` section replaced by `body` (the card as it is when it has none)."""
    start = card.find(f"\n## {heading}\n")
    if start < 0:
        return card
    end = card.find("\n## ", start + 1)
    end = len(card) if end < 0 else end
    return card[:start] + f"\n## {heading}\n\n{body.strip()}\n" + card[end:]


def rewrite_card_sections(folder, sections: list[tuple[str, str]]) -> bool:
    """Write the (heading, markdown) `sections` into folder/README.md in place of the card's own, and its
    model-index from metrics.json as it is now; the rest of the card is kept (a shipped card's added sections
    too). For a command that changes a finished folder's figures (`train.calibrate`). The card is written in
    one step; False when the folder has none."""
    path = Path(folder) / "README.md"
    if not path.is_file():
        return False
    card = path.read_text(encoding="utf-8")
    for heading, body in sections:
        card = replace_section(card, heading, body)
    write_atomic(path, _model_index_of_metrics(Path(folder), card))
    return True


def write_model_card(folder, *, title: str, task: str, metrics: RunMetrics | dict, recipe: dict, notes: str = "",
                     repo_id: str | None = None, extra_sections: list[tuple[str, str]] | None = None) -> Path:
    """Write folder/README.md (YAML front matter + sections) from config.json and the values passed in.

    `task`: "fill-mask" or "text-classification". `metrics`: a RunMetrics (or its dict, the metrics.json
    schema); every value is shown, and the evaluations that name their data go into the model-index.
    `recipe`: how it was trained; a "command" entry is shown as a code block, every other entry in a table
    (e.g. batch_size, lr, masking). The datasets are those recognised in the recipe's data options
    and the metrics' sources. `extra_sections`: (heading, markdown) pairs placed after the metrics (e.g.
    calibration, behaviour checks).
    """
    folder = Path(folder)
    if task not in TASKS:
        raise ValueError(f"task must be one of {sorted(TASKS)}, got {task!r}")
    config = checkpoint.load_config(folder)  # ModelNotFoundError (a FileNotFoundError) without config.json
    repo = repo_id or str(folder)
    if not isinstance(metrics, RunMetrics):
        metrics = RunMetrics.from_dict(metrics)
    datasets = infer_datasets(_data_values(recipe, metrics))
    metric_names = sorted({e.metric for e in metrics.evaluations()})
    eval_results = _eval_results(metrics, task)
    card_data = ModelCardData(
        license="mit", language="en", library_name=LIBRARY_NAME, pipeline_tag=task,
        tags=["roberta", "from-scratch", PROJECT_TAG, "masked-lm" if task == "fill-mask" else
              "sentiment-analysis" if names_a_sentiment(label_names(config.id2label)) else "text-classification"],
        datasets=datasets or None, metrics=metric_names or None,
        model_name=title if eval_results else None, eval_results=eval_results or None,
    )

    arch_rows = [("layers", config.num_hidden_layers), ("hidden size", config.hidden_size),
                 ("attention heads", config.num_attention_heads), ("feed-forward size", config.intermediate_size),
                 ("vocabulary", config.vocab_size), ("max input tokens", config.max_length),
                 ("parameters", count_parameters(config, task))]
    if task == "text-classification":
        arch_rows.append(("labels", ", ".join(f"{i}: {n}" for i, n in sorted(config.id2label.items()))))
    head = "masked-LM head (tied to the word embeddings)" if task == "fill-mask" else "classification head on `<s>`"
    given = {k: v for k, v in recipe.items() if v is not None and k != "command"}  # None: not set
    # a data option given as '' reads nothing (--imdb '': no IMDB check): no row of its own
    data_rows = [(k, v) for k, v in given.items() if _is_data_key(k) and v != "" and not isinstance(v, dict)]
    other_rows = [(k, v) for k, v in _flatten(given) if not _is_data_key(k)]

    sections = [f"# {title}",
                f"A RoBERTa encoder ({config.num_hidden_layers} layers, hidden size {config.hidden_size}) with a "
                f"{head}, written and trained from scratch in PyTorch by the *RoBERTa from scratch* teaching project. "
                "The weights use `transformers`' RoBERTa layout, so both libraries load them."]
    sections += ["## Architecture", _table(arch_rows, ("", "value"))]
    data_text = "\n".join(f"- [{d}](https://huggingface.co/datasets/{d})" for d in datasets)
    if data_rows:  # the local files the run read (no "(not given)" above them)
        data_text += ("\n\n" if data_text else "") + _table(data_rows, ("", "value"))
    data_text = data_text or "- (not given)"
    sections += ["## Data", data_text]
    recipe_text = f"```bash\n{recipe['command']}\n```" if recipe.get("command") else ""
    if other_rows:
        recipe_text += ("\n\n" if recipe_text else "") + _table(other_rows, ("setting", "value"))
    sections += ["## Training recipe", recipe_text or "(not given)"]
    sections += ["## Metrics", metrics_markdown(metrics, folder)]
    for heading, body in extra_sections or []:
        if body:
            sections += [f"## {heading}", body.strip()]
    if (folder / CURVES_NAME).is_file():
        sections += ["## Training curves", curves_section(folder, metrics)]
    sections += ["## Limitations", _limitations(task, config.max_length, metrics, label_names(config.id2label))]
    sections += ["## Usage", _usage(task, repo, folder)]
    if notes:
        sections += ["## Notes", notes.strip()]

    card = ModelCard(f"---\n{card_data.to_yaml()}\n---\n\n" + "\n\n".join(sections) + "\n")
    path = folder / "README.md"
    write_atomic(path, str(card) if str(card).endswith("\n") else str(card) + "\n")
    return path
