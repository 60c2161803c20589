"""The About tab, read at start-up from what each model folder holds (metrics.json, phases.json, README.md,
curves.png, phases.png) and the pretraining text's token counts (`demo.training_counts`): a short card per model and
its figures (each with a caption and alt text that say what it covers), the architecture, the comparison with the
MiniRoBERTa reference, what RoBERTa changed in BERT's recipe, and the recipe. The figures come from
`demo.model_facts`; the phrases the cards share with the note beside each tab's result, from `demo.model_notes`."""
from __future__ import annotations

import html
import re
from pathlib import Path
from typing import NamedTuple

import numpy as np

import roberta
from roberta import figure_alts
from roberta.config import PRESETS
from roberta.masking import DUPE_FACTOR
from roberta.run_metrics import dataset_name, readable_dataset, said_list

from . import explain
from .bpe_view import GPT2_VOCAB_SIZE
from .embedding_handlers import EMBEDDINGS_TAB
from .formatting import (code, large_count, markdown_table, md_escape, millions, minutes, pct, space_page,
                         token_label)
from .model_facts import (DEV_SLICE, SST2_DEV, SST2_SAID, checks_said, cpu_said, dev_set, dev_set_markdown,
                          finite_number, gpu_of, had_earlier_stages, held_out_markdown, model_facts, weakest_checks)
from .model_notes import (TARGETS_SAID, gpu_phases, gpu_phases_said, machine_said, phases_counted,
                          pretraining_by_device, shipped_accuracy, shipped_accuracy_said)
from .masking_view import MASKING_TAB
from .model_choice import ATTENTION_TAB
from .models import KINDS, ROOT, Models, shown_source
from .tokens_handlers import TOKENS_TAB
from .training_counts import counts_file, counts_for

# the About tab shows the recipe (`recipe_text`) in an accordion titled "Training recipe": no heading of its own
PRETRAINING_RECIPE = """\
- **Pretraining** (`python -m train.pretrain`): masked language modelling only, no next-sentence prediction;
documents concatenated across their boundaries, with `</s>` between them, and cut into full rows of the model's
length (like RoBERTa's FULL-SENTENCES, except that RoBERTa ends each row at a sentence boundary); 15% of tokens
selected, of which 80% become `<mask>`, 10% a random token and 10% stay unchanged, with a fresh mask every time a
row is seen (dynamic masking); byte-level BPE tokenizer; AdamW with warm-up and a decaying learning rate.
"""
# why the head reads `<s>`, true of any RoBERTa classifier
HEAD_ON_S = """BERT's `[CLS]` was pretrained by next-sentence prediction; RoBERTa has none, so `<s>` gets no
sentence-level training before fine-tuning, where the head learns to read the sentence from it (the heads that
park on `<s>` in the Attention tab are another matter)."""
SHIPPED_FINE_TUNING = f"""\
- **Fine-tuning** (`python -m train.sentiment_recipe`): a pretrained encoder (for the shipped classifier, an
earlier phase of the fill-mask model's: the Sentiment tab's note says which) plus a new classification head
on `<s>`. {HEAD_ON_S} In three stages: a short MLM run on
lower-cased review text (task-adaptive pretraining), a stage on IMDB reviews, then SST-2 (texts detokenized and
lower-cased, here as in training).
Each SST-2 run keeps its end-of-run weights or their moving average (no checkpoint is chosen on the dev set), and the
shipped classifier is the uniform weight average of several seeds' runs, with a temperature fitted on held-out
training sentences.
"""
RECIPE_SOURCES = "\nThe exact settings, data, hardware and times of each run are in its model card.\n"
RECIPE = PRETRAINING_RECIPE + SHIPPED_FINE_TUNING + RECIPE_SOURCES  # the shipped models'
# how a classifier of other data started (metrics.json's init_gave), for `fine_tuning_said`
STARTS = {"encoder": "a pretrained encoder plus a new classification head on `<s>`",
          "random encoder": "a randomly initialised encoder plus a new classification head on `<s>`",
          "encoder and classifier head": "the encoder and classification head of an earlier fine-tuning stage"}


def follows_shipped_recipe(loaded) -> bool:
    """Whether a classifier was made by the shipped classifier's recipe, as far as its metrics.json says: SST-2
    (`LoadedModel.fine_tuned_on_sst2`) after task-adaptive pretraining and an IMDB stage, averaged over seeds."""
    facts = model_facts(loaded)
    return loaded.fine_tuned_on_sst2 and facts.get("stages") == ["tapt", "imdb"] and bool(facts.get("averaged"))


def fine_tuning_said(loaded) -> str:
    """The recipe's fine-tuning item for a classifier the shipped recipe did not make (`follows_shipped_recipe`),
    from what its metrics.json records: how it started, its data and stages, a weight average, a temperature; or
    that it records nothing."""
    metrics = loaded.extras.get("metrics")
    if metrics is None:
        return (f"- **Fine-tuning**: this server's classifier, {classifier_title(loaded)}, has no metrics.json: how "
                f"it was fine-tuned is not recorded here ({card_link(loaded)}). {HEAD_ON_S}\n")
    facts = model_facts(loaded)
    start = STARTS.get(metrics.init_gave, "a pretrained encoder plus a classification head on `<s>`")
    data = f" on {data_markdown(facts['data'])}" if facts.get("data") else ""
    labels = said_list([md_escape(label) for label in explain.label_names(loaded.config)])
    after = {"tapt": "task-adaptive pretraining", "imdb": "a labelled IMDB stage"}
    stages = [after[stage] for stage in facts.get("stages", [])]
    said = (f"- **Fine-tuning** (this server's classifier, not the shipped one): {start}, fine-tuned{data} "
            f"(labels {labels})" + (f" after {said_list(stages)}" if stages else "") + f". {HEAD_ON_S}")
    if facts.get("averaged"):
        said += f" It is the uniform weight average of {facts['averaged']} runs."
    if metrics.calibration:
        said += (" Its scores are divided by a temperature fitted on held-out examples (the "
                 f"{explain.tab_name(loaded.config)} tab's calibration note).")
    return said + "\n"


def recipe_text(models: Models) -> str:
    """The About tab's "Training recipe": pretraining, then the shipped classifier's recipe (`RECIPE`) where the
    served classifier was made by it (`follows_shipped_recipe`) or none is loaded, else what the served
    classifier's metrics.json records (`fine_tuning_said`)."""
    loaded = models.sentiment
    if not loaded.available or follows_shipped_recipe(loaded):
        return RECIPE
    return PRETRAINING_RECIPE + fine_tuning_said(loaded) + RECIPE_SOURCES


HEADER = "A small RoBERTa written from scratch in PyTorch, pretrained with masked language modelling{tuned}. {more}"
TRY = "Try it, look inside, see how it learned."


def page_header(models: Models) -> str:
    """The lines under the page's title, for the classifier served: "... and fine-tuned on SST-2 sentiment" for the
    shipped one, or one the app names as it (`LoadedModel.title`: SST-2's data or labels), and for none loaded (the
    page is laid out for SST-2's); else "... modelling. This server's classifier: text classifier (labels world,
    sports, business and science; fine-tuned on `topics.csv`)." (its title, `classifier_title`). Then where a
    learner starts (`learning_path`)."""
    loaded = models.sentiment
    if not loaded.available or loaded.title == KINDS["sentiment"].title:
        line = HEADER.format(tuned=" and fine-tuned on SST-2 sentiment", more=TRY)
    else:
        line = HEADER.format(tuned="", more=f"This server's classifier: {classifier_title(loaded)}. {TRY}")
    return f"{line}\n\n{learning_path(models)}"


def learning_path(models: Models) -> str:
    """The tabs in the order a text goes through the model, each with what it shows and a link that opens it, for a
    learner new to transformers: the page's tabs follow the showcase instead (the Fill mask tab first). The layers
    counted from the model where one is loaded; the classifier's tab by its name as the page opens
    (`Models.tab_name`)."""
    reference = models.mlm if models.mlm.available else models.sentiment
    layers = f"{reference.config.num_hidden_layers} layers" if reference.available else "the layers"
    steps = [(TOKENS_TAB, "tokens", "text → pieces"), (EMBEDDINGS_TAB, "embeddings", "pieces → vectors"),
             (ATTENTION_TAB, "attention", f"{layers} mix the vectors"),
             (KINDS["mlm"].tab, "fill", "the last vector → a word: the pretraining task"),
             (MASKING_TAB, "masking", "how pretraining picks its blanks"),
             (models.tab_name("sentiment"), "sentiment", "the same kind of encoder, fine-tuned to give a label")]
    # each a link to its tab (its id in app.py), which page.js opens: the order is not the tabs' own
    return ("**Start here** if transformers are new to you, and follow the text through the model: "
            + " → ".join(f"[**{tab}**](#{tab_id}) ({what})" for tab, tab_id, what in steps) + ".")


def parameter_table(model) -> str:
    """Markdown table of components with their parameter counts, and the total."""
    cfg = model.config
    named = dict(model.named_parameters())

    def count(prefix):
        return sum(p.numel() for n, p in named.items() if n.startswith(prefix))

    H, L, nh, ff, V = (cfg.hidden_size, cfg.num_hidden_layers, cfg.num_attention_heads, cfg.intermediate_size,
                       cfg.vocab_size)
    layer = "roberta.encoder.layer.0."
    rows = [
        ("Token embeddings", f"{V:,} × {H}", count("roberta.embeddings.word_embeddings")),
        (position_rows_said(cfg), f"{cfg.max_position_embeddings} × {H}",
         count("roberta.embeddings.position_embeddings")),
        ("Embedding LayerNorm", f"2 × {H}", count("roberta.embeddings.LayerNorm")),
        (f"Self-attention Q, K, V ({nh} heads of {H // nh}) × {L} layers", f"3 × ({H} × {H} + {H})",
         L * sum(count(layer + f"attention.self.{m}") for m in ("query", "key", "value"))),
        (f"Attention output + LayerNorm × {L}", f"{H} × {H} + {H} + 2 × {H}", L * count(layer + "attention.output")),
        (f"Feed-forward (GELU) × {L}", f"{H} × {ff} + {ff} + {ff} × {H} + {H}",
         L * (count(layer + "intermediate") + count(layer + "output.dense"))),
        (f"Feed-forward LayerNorm × {L}", f"2 × {H}", L * count(layer + "output.LayerNorm")),
    ]
    if any(n.startswith("lm_head") for n in named):
        rows.append(("MLM head: dense + GELU + LayerNorm + bias (decoder tied to token embeddings)",
                     f"{H} × {H} + {H} + 2 × {H} + {V:,}", count("lm_head")))
    if any(n.startswith("classifier") for n in named):
        rows.append(("Classification head on <s>: dense + tanh + projection",
                     f"{H} × {H} + {H} + {H} × {cfg.num_labels} + {cfg.num_labels}", count("classifier")))
    total = sum(p.numel() for p in named.values())
    cells = [[html.escape(a), b, f"{c:,}"] for a, b, c in rows] + [["**total**", "", f"**{total:,}**"]]
    return markdown_table(["component", "shape", "parameters"], cells, numbers=[2])


def position_rows_said(cfg) -> str:
    """The position table's row of the parameter table, short enough for a phone's table cell: its positions and
    the rows that hold none (`position_rows_explained` says why)."""
    first, unused = cfg.pad_token_id + 1, cfg.pad_token_id
    return (f"Position embeddings ({cfg.max_position_embeddings - first} + 1 padding"
            + (f" + {unused} unused)" if unused else ")"))


def position_rows_explained(cfg) -> str:
    """Why the position table has more rows than positions, for the text above the parameter table."""
    first = cfg.pad_token_id + 1
    below = (f", and rows 0 to {first - 2} are never read" if first > 2 else ", and row 0 is never read" if first > 1
             else "")
    return (f"The position table's first {first} rows hold no position of the text: RoBERTa numbers positions from "
            f"padding_idx + 1 = {first}, as roberta-base's 514 rows for 512 tokens show; row {first - 1} (padding_idx) "
            f"is the one every &lt;pad&gt; reads{below}.")


def card_link(loaded) -> str:
    """Where the full model card is: its Hub page; for a folder of the app's own on a Hugging Face Space
    (SPACE_ID set), the Space's page of its README.md (the Space holds assets/, `scripts.deploy_space`); else
    README.md in the model's folder, said in words (the app serves no files but its figures)."""
    source = shown_source(loaded.source)
    if not roberta.hub.is_local(loaded.source):
        return f"full model card: [huggingface.co/{source}](https://huggingface.co/{source})"
    if "readme" not in loaded.extras:
        return "no model card"
    card = f"{source}/README.md"
    inside = Path(loaded.source).resolve().is_relative_to(ROOT)
    if inside and (page := space_page(card)):
        return f"full model card: [{card}]({page}) on the Hub"
    return f"full model card: {code(card)}, in the " + ("project's files" if inside else "model's folder")


def data_markdown(names: list[str], expanded: dict[str, str] | None = None) -> str:
    """Data sets by their readable names, then the files they came from: "English Wikipedia, WikiText-2 and IMDB
    reviews, from `wikipedia-en`, `wikitext-2/wiki.train.tokens.xz`, `imdb/unsup.txt.xz`" (each name once; a
    file of no known data set by its name alone); `expanded`: a readable name said in full ({"SST-2": SST2_SAID})."""
    shown = []
    for name in names:
        label = readable_dataset(name) or code(name)
        if label not in shown:
            shown.append(label)
    text = said_list([(expanded or {}).get(label, label) for label in shown])
    files = [code(name) for name in names if readable_dataset(name)]
    return f"{text}, from {', '.join(files)}" if files else text


def classifier_title(loaded) -> str:
    """A model's title in Markdown (`LoadedModel.title_naming`): a classifier fine-tuned on other data than SST-2
    names its files in backticks, "sentiment (fine-tuned on `three.csv`)", and its labels escaped."""
    return loaded.title_naming(code, md_escape)


def wall_time(facts: dict) -> str:
    """What follows the training time: " (22 min wall time)" where the runs' wall time reads longer, for it
    adds what ran outside the training loop (loading and packing the data, the final evaluation); nothing where
    the two read the same, nor where it reads shorter (a run resumed after an interruption counts only its last
    session's wall time, while its training time adds up every session's)."""
    if "wall_minutes" not in facts or facts["wall_minutes"] <= facts["train_minutes"]:
        return ""
    wall = minutes(facts["wall_minutes"])
    return "" if wall == minutes(facts["train_minutes"]) else f" ({wall} wall time)"


def summary_card(loaded) -> str:
    """A short Markdown card for the About tab, from the model's metrics.json and phases.json (read at
    run time; a figure that is not there is not shown): size, data, training, held-out figures."""
    if not loaded.available:
        return f"### {loaded.title}\n\n{md_escape(loaded.error)}"
    facts, cfg = model_facts(loaded), loaded.config
    rows = [("size", f"{millions(facts['parameters'])} parameters: {cfg.num_hidden_layers} layers, hidden "
                     f"{cfg.hidden_size}, {cfg.num_attention_heads} heads, up to {cfg.max_length} tokens")]
    if facts.get("data"):
        data = data_markdown(facts["data"], {"SST-2": SST2_SAID})  # the About tab's first SST-2: said in full
        if "train_examples" in facts:
            data += f" ({facts['train_examples']:,} examples)"
        if "imdb" in facts.get("stages", []):
            data = f"IMDB reviews (a labelled stage first), then {data}"
        rows.append(("data", data))
    if training := _training_row(loaded, facts):
        rows.append(training)
    rows += _held_out_rows(loaded, facts, cfg)
    if "probe" in facts:
        n = int(facts["probe"]["sentences"])
        rows.append(("everyday sentences", f"the expected word first in {round(facts['probe']['top1'] * n)} of {n}, "
                                           f"in the top 5 in {round(facts['probe']['top5'] * n)} of {n}"))
    if "dev_accuracy" in facts:
        rows.append(_dev_row(loaded, facts))
    if "imdb_accuracy_whole" in facts:
        rows.append(("IMDB reviews", f"**{pct(facts['imdb_accuracy_whole'])}** right"
                     + (f" of {facts['imdb_examples']:,}" if "imdb_examples" in facts else "")
                     + " read whole, in overlapping windows"
                     + (f"; {pct(facts['imdb_accuracy'])} from their first tokens only" if "imdb_accuracy" in facts
                        else "")))
    elif "imdb_accuracy" in facts:
        rows.append(("IMDB reviews", f"**{pct(facts['imdb_accuracy'])}** right"
                     + (f" of {facts['imdb_examples']:,}" if "imdb_examples" in facts else "")
                     + " (longer texts than it was trained on)"))
    checks = facts.get("checks")
    if checks:
        weakest = ", ".join(f"{md_escape(str(name))} ({c.get('right', 0)}/{c.get('n', 0)})"
                            for name, c in weakest_checks(checks))
        rows.append(("behaviour checks", f"{checks.get('right', 0)} of {checks_said(checks)} right"
                     + (f"; weakest: {weakest}" if weakest else "")))
    table = "\n".join(f"- **{name}**: {value}" for name, value in rows)  # a list reads well on a phone too
    return (f"### {classifier_title(loaded)}\n\n{table}\n\nLoaded from {code(shown_source(loaded.source))}; "
            f"{card_link(loaded)}.")


def _training_row(loaded, facts: dict) -> tuple[str, str] | None:
    """The card's training row: its tokens, its time (for a weight average, what the runs it averages took) and
    device, and its phases (phases.json, each weight average among them counted); None where metrics.json says
    none of it."""
    training = []
    if "train_tokens" in facts:
        training.append(f"{large_count(facts['train_tokens'])} tokens")
    phases = loaded.extras.get("phases")
    phases = phases if isinstance(phases, list) else []
    trained = [p for p in phases if p.train_tokens]  # an average trains none
    averages = len(phases) - len(trained)
    if "train_minutes" in facts and facts.get("averaged"):  # a weight average: its own wall time is the averaging
        spent = minutes(facts["train_minutes"])
        if loaded.key != "mlm" and had_earlier_stages(facts):
            training.append(f"a weight average of {facts['averaged']} fine-tuning runs, whose last stage took "
                            f"{spent} in all (the model card has the earlier stages)")
        elif loaded.key != "mlm":
            training.append(f"a weight average of {facts['averaged']} fine-tuning runs, which took {spent} in all")
        elif not trained:  # train.average's own folder, no phases.json: its members' tokens and time are not known
            training = [f"a weight average of {facts['averaged']} pretraining phases, no training of its own (its "
                        "metrics.json names them)"]
        elif averages > 1:  # each average's members are a phase and that phase's start
            training.append(f"{spent} of training in {len(trained)} phases and {averages} weight averages, the last "
                            f"one of {facts['averaged']} phases")
        else:
            training.append(f"{spent} of training in {len(trained)} phases, then the weight average of the last "
                            f"{facts['averaged']}")
    elif "train_minutes" in facts:
        training.append(f"{minutes(facts['train_minutes'])} of training" + wall_time(facts))
    if facts.get("device") == "cpu" and (cpu := cpu_said(facts.get("cores"))):
        training.append(f"on {cpu}")
    if len(trained) > 1 and not facts.get("averaged"):  # the averages too: the figure of the phases numbers them
        training.append(f"in {len(trained)} phases" + (f" and {averages} weight averages" if averages > 1 else
                                                         " and a weight average" if averages else ""))
    return ("training", ", ".join(training)) if training else None


def _dev_row(loaded, facts: dict) -> tuple[str, str]:
    """The card's row of a classifier's dev accuracy, named by its dev set (`dev_set`): SST-2 dev's sentences, a
    slice held out of its training file, said as such, or its own dev file by name."""
    right, named = f"**{pct(facts['dev_accuracy'])}** right", dev_set_markdown(facts)
    kind = dev_set(facts)
    if kind == SST2_DEV:
        shipped = shipped_accuracy_said(loaded, facts)
        return (SST2_DEV, right + (f" of {facts['dev_examples']:,} sentences" if "dev_examples" in facts else "")
                + (f" ({shipped})" if shipped else ""))
    if kind == DEV_SLICE:
        return "dev set", f"{right} of {named}"
    return "dev set", (right + (f" of {facts['dev_examples']:,} examples" if "dev_examples" in facts else "")
                       + (f" of {named}" if named else ""))


def _held_out_rows(loaded, facts: dict, cfg) -> list[tuple[str, str]]:
    """The card's rows of held-out masked-token accuracy: the release evaluation's (its text, row length, mask
    draws and perplexity), then training's own check where it differs for a reason; or training's own alone
    where there was no release evaluation."""
    rows = []
    if "mlm_accuracy" in facts:
        where = dataset_name(loaded.extras["metrics"].mlm.get("source", "held-out text"))
        rows.append(("held-out masked tokens", (
            f"**{pct(facts['mlm_accuracy'])}** of the prediction targets guessed right (top-1)"
            + f" on {held_out_markdown(where)}"
            + (f" in {facts['mlm_rows']}-token rows, the length it last trained on" if "mlm_rows" in facts else "")
            + (f", the mean of {facts['mlm_masks']} random maskings" if "mlm_masks" in facts else "")
            + f"; {TARGETS_SAID}" + _constant_guess_said(loaded.extras["metrics"].mlm)
            + (f". Perplexity {facts['mlm_perplexity']:.0f}: e^loss on the targets, as unsure as a pick among "
               f"{facts['mlm_perplexity']:.0f} tokens (comparable only between models of the same vocabulary)"
               if "mlm_perplexity" in facts else ""))))
        # training's own figure, shown where it differs for a reason: rows of another length (several mask draws
        # in rows of the model's length are the better figure for the same thing)
        same_rows_more_masks = "mlm_masks" in facts and facts.get("mlm_rows") == cfg.max_length
        if "eval_accuracy" in facts and facts["eval_accuracy"] != facts["mlm_accuracy"] and not same_rows_more_masks:
            other_rows = facts.get("mlm_rows", cfg.max_length) != cfg.max_length
            rows.append(("the same, training's own check", (
                f"{pct(facts['eval_accuracy'])} at the end of training, in rows of up to {cfg.max_length} tokens"
                + (f" (the figure above: {facts['mlm_rows']}-token rows)" if other_rows else "")
                + " and on masks of its own draw, which is why the two figures differ")))
    elif "eval_accuracy" in facts:
        own = _constant_guess_said(loaded.extras["metrics"].to_dict(), "eval_")  # train.pretrain's record of it
        rows.append(("held-out masked tokens", f"**{pct(facts['eval_accuracy'])}** of the prediction targets guessed "
                                               f"right (top-1; {TARGETS_SAID}{own})"))
    return rows


def _constant_guess_said(record: dict, prefix: str = "") -> str:
    """The yardstick of the held-out accuracy, where `train.evaluate` (an mlm section) or `train.pretrain`'s final
    evaluation (beside its eval_ figures: `prefix` "eval_") recorded it (`train.evaluate.constant_guess`): what a
    model that always guessed the commonest of the same targets would score, the token as the Tokens tab shows
    it; '' without the record."""
    token = record.get(f"{prefix}constant_guess_token")
    accuracy = finite_number(record.get(f"{prefix}constant_guess_accuracy"))
    if not isinstance(token, str) or accuracy is None:
        return ""
    return (f"; a model that always guessed {code(token_label(token))}, the commonest of these targets, would score "
            f"{pct(accuracy)}")


REFERENCE = PRESETS["mini"]  # the MiniRoBERTa reference's shape; its vocabulary is roberta-base's 50,265
REFERENCE_PARAMETERS = "17.7M"  # its size with the MLM head as the README's comparison gives it
REFERENCE_COUNTED = 17_756_761  # its shape's parameters with the MLM head, counted by this code (tests/test_about.py)
ENCODER_SHAPE = ("num_hidden_layers", "hidden_size", "num_attention_heads", "intermediate_size",
                 "max_position_embeddings")


def parameters_compared(loaded) -> tuple[list[str], str]:
    """The comparison table's parameter cells (this project's, then the reference's: plain counts, so that the
    table fits a phone's width) and a sentence for under the table: the shipped MLM has the reference's encoder (6
    layers of hidden size 256) and a smaller vocabulary, so the whole gap is the embedding rows (and MLM-head biases)
    of the tokens it lacks, not a smaller model. No sentence for a model of another shape."""
    if not loaded.available:
        return ["not available", REFERENCE_PARAMETERS], ""
    cfg = loaded.config
    cells = [millions(loaded.model.num_parameters()), REFERENCE_PARAMETERS]
    if not all(getattr(cfg, key) == getattr(REFERENCE, key) for key in ENCODER_SHAPE):
        return cells, ""
    note = (f"Both have the same encoder ({cfg.num_hidden_layers} layers, hidden size {cfg.hidden_size}, "
            f"{cfg.num_attention_heads} heads, feed-forward {cfg.intermediate_size}): the whole difference in "
            f"parameters is the vocabulary, {REFERENCE.vocab_size:,} tokens (roberta-base's) against this project's "
            f"{cfg.vocab_size:,}, each with its own embedding row and its own output bias. Counted exactly: "
            f"{REFERENCE_COUNTED:,} for the reference's shape (“{REFERENCE_PARAMETERS}” as it gives it) against "
            f"{loaded.model.num_parameters():,}.")
    return cells, note


def about_sections(models: Models) -> dict:
    """Markdown for the About tab, built once at start-up from whatever exists: per model a summary card
    ("{key}_card") and its figures (curves.png among them) with their captions and alt texts ("{key}_figures",
    `model_figures`), then the architecture and the comparison. No raw metrics, no machine
    paths in the text (the figures' paths are for gr.Image)."""
    out = {}
    reference = models.mlm if models.mlm.available else models.sentiment
    if reference.available:
        cfg = reference.config
        table = parameter_table(reference.model)
        out["architecture"] = (
            f"Post-norm Transformer encoder (LayerNorm after each residual addition, as in BERT; GPT-2 and most newer "
            f"models normalise before), {cfg.num_hidden_layers} layers, hidden size {cfg.hidden_size}, "
            f"{cfg.num_attention_heads} heads, feed-forward {cfg.intermediate_size}, vocabulary "
            f"{cfg.vocab_size:,} (byte-level BPE), up to {cfg.max_length} tokens per input. "
            f"{position_rows_explained(cfg)} Counts of the {classifier_title(reference)} model:\n\n{table}"
        )
    else:
        out["architecture"] = "Architecture: not available (no model loaded)."

    sentiment = model_facts(models.sentiment) if models.sentiment.available else {}
    # the reference's 80% is SST-2's: a classifier scored on other data has no figure to set beside it
    compared = dev_set(sentiment) == SST2_DEV
    accuracy = sentiment.get("dev_accuracy") if compared else None
    parameters, same_encoder = parameters_compared(models.mlm)
    added = [said for stage, said in (("tapt", "TAPT"), ("imdb", "a labelled IMDB stage")) if stage in
             sentiment.get("stages", [])] + ([f"a {sentiment['averaged']}-seed weight average"]
                                             if sentiment.get("averaged") else [])
    out["comparison"] = (
        f"The MiniRoBERTa reference is the model this project measures itself against: roberta-base's design cut to "
        f"{REFERENCE.num_hidden_layers} layers of hidden size {REFERENCE.hidden_size}, with roberta-base's own "
        f"{REFERENCE.vocab_size:,}-token vocabulary, pretrained on WikiText and fine-tuned on SST-2.\n\n"
        + markdown_table(["measure", "this project", "MiniRoBERTa reference"],
                         [["parameters (with the MLM head)", *parameters]]
                         + ([["SST-2 accuracy (validation)", dev_accuracy_cell(sentiment), "80%"]] if compared else []),
                         numbers=[1, 2])
    ) + (f"\n\n{shipped}" if compared and (shipped := shipped_accuracy_line(models.sentiment, sentiment)) else ""
         ) + (f"\n\n{same_encoder}" if same_encoder else "") + (
        f"\n\nOur SST-2 figure is not the encoder's alone: its classifier adds {said_list(added)}."
        if accuracy is not None and added else "")
    out["roberta_vs_bert"] = roberta_vs_bert(models)
    out["recipe"] = recipe_text(models)
    out["intro"] = f"{what_roberta_is(models)}\n\n{intro_text(models)}"
    for loaded in (models.mlm, models.sentiment):
        out[f"{loaded.key}_card"] = summary_card(loaded)
        out[f"{loaded.key}_figures"] = model_figures(loaded)
    if text := training_text_figure(models.mlm):
        out["mlm_figures"].append(text)
    return out


BATCH_SIZE_RE = re.compile(r"--batch-size[ =](\d+)")


def batch_sizes_said(loaded) -> str:
    """"batches of 32 to 64 rows on the CPU, 512 on the GPU": the batch sizes of the trained phases' commands
    (phases.json), by device; "" when the commands do not say."""
    phases = loaded.extras.get("phases") if loaded.available else None
    by_device: dict[str, set[int]] = {}
    for phase in phases if isinstance(phases, list) else []:
        found = BATCH_SIZE_RE.search(phase.command or "") if phase.train_tokens else None
        if found:
            by_device.setdefault("GPU" if gpu_of(phase) else "CPU", set()).add(int(found.group(1)))
    said = [f"{min(sizes)}" + (f" to {max(sizes)}" if len(sizes) > 1 else "") + f" on the {device}"
            for device, sizes in sorted(by_device.items())]
    return f"batches of {', '.join(said).replace(' on the', ' rows on the', 1)}" if said else ""


def dev_accuracy_cell(facts: dict) -> str:
    """The comparison table's SST-2 figure, "88.9%" or "not available": short, so that the table's three columns
    fit a phone's width (`shipped_accuracy_line` says which weights it is of, under the table)."""
    return pct(facts["dev_accuracy"]) if "dev_accuracy" in facts else "not available"


def shipped_accuracy_line(loaded, facts: dict) -> str:
    """The line under the comparison table where the shipped weights score otherwise than metrics.json's figure
    (`shipped_accuracy`): "Our SST-2 accuracy, 88.9%, is the float32 average's; the weights as shipped, in
    float16, score 88.8%."; "" otherwise."""
    shipped = shipped_accuracy(loaded, facts)
    return (f"Our SST-2 accuracy, {pct(facts['dev_accuracy'])}, is the {shipped.measured}'s; the weights as shipped, "
            f"in {shipped.dtype}, score {shipped.accuracy}.") if shipped else ""


def roberta_vs_bert(models: Models) -> str:
    """What RoBERTa changed in BERT's recipe (Liu et al. 2019), in one list, which of it this project keeps (its
    vocabulary read from the fill-mask model) and its batch sizes, which it does not keep (most are smaller than
    BERT's)."""
    ours = ["dynamic masking", "no next-sentence prediction"]
    batches = ""
    if models.mlm.available:
        ours.append(f"its own byte-level BPE of {models.mlm.config.vocab_size:,} tokens")
        if said := batch_sizes_said(models.mlm):
            batches = f" Not its batches: {said.removeprefix('batches of ')}."
    base = PRESETS["roberta-base"]
    return (
        "What RoBERTa (Liu et al. 2019) changed in BERT's pretraining:\n\n"
        f"- **Dynamic masking**: a fresh mask every time a row is seen, where BERT fixed {DUPE_FACTOR} masks at "
        "preprocessing (the Masking tab).\n"
        "- **No next-sentence prediction** (NSP, BERT's second pretraining task: given two segments of text, guess "
        "whether the second really followed the first): inputs are packed across documents; the paper found that "
        "dropping NSP matches or beats keeping it (its Table 2).\n"
        "- **Larger batches, longer training**: 8K sequences a batch, against BERT's 256.\n"
        f"- **Byte-level BPE**: GPT-2's, {GPT2_VOCAB_SIZE:,} tokens ({base.vocab_size:,} in roberta-base, with its "
        "special ones), where BERT had a 30K WordPiece vocabulary with "
        "an unknown token (the Tokens tab).\n"
        "- **More text**: 160 GB, ten times BERT's 16 GB.\n\n"
        f"This project keeps, in small: {said_list(ours)}.{batches}"
    )


def training_text_figure(loaded) -> AboutFigure | None:
    """What the fill-mask model's pretraining text held (`train.token_counts`' figure, beside the counts file),
    when the counts are of its vocabulary; its caption's figures read from the counts."""
    counts = counts_for(loaded.tokenizer) if loaded.available else None
    figure = counts_file().with_suffix(".png")
    if counts is None or not figure.is_file():
        return None
    total = counts.counts.sum(axis=0)
    size = int(total.sum())
    parts = ", ".join(f"{name} {large_count(tokens)}" for name, tokens in zip(counts.names, counts.tokens))
    top = np.sort(total)[::-1]
    rare, never = int(((total > 0) & (total < 100)).sum()), int((total == 0).sum())
    return AboutFigure(str(figure), (
        f"**What it read**: its pretraining text holds {large_count(size)} tokens ({parts}), each document counted "
        f"once (pretraining read it many times over, each phase in its own mixture). The 100 commonest tokens are "
        f"{top[:100].sum() / size:.0%} of it, and {rare:,} of the "
        f"{len(total):,} tokens of the vocabulary ({rare / len(total):.0%}) occur 1 to 99 times ({never:,} never): "
        "a word the text held rarely is one the model knows little of. The Fill mask, Tokens and Embeddings tabs "
        "give each token's count."), (
        "How often the pretraining text holds each token, against the token's rank from the commonest, both on log "
        "scales: one line per kind of text and one for both, a few tokens marked, and a dotted line at 100 "
        "occurrences."))


def what_roberta_is(models: Models) -> str:
    """The About tab's first paragraph, for a learner who looks there for an overview: what RoBERTa is, and which
    tab shows each of its two kinds of model (the classifier's by the tab's name, `Models.tab_name`)."""
    return ("**What RoBERTa is**: BERT's model with a better training recipe (Liu et al. 2019; “RoBERTa vs BERT” "
            f"below). A stack of layers turns each token of a text into a vector that takes in the rest of the text "
            f"(the {ATTENTION_TAB} tab). It is pretrained once on plain text by filling in masked words (the "
            f"{KINDS['mlm'].tab} tab), then fine-tuned for one task at a time, with a small new head on top (the "
            f"{models.tab_name('sentiment')} tab).")


def intro_text(models: Models) -> str:
    """The About tab's line after `what_roberta_is`: "Both are small teaching models, trained on a 2-core CPU, and
    on GPUs for 4 of the encoder's 28 pretraining phases ..., ...; the figures below are read from each model's
    metrics.json.", the machines each once, as the records name them (`machine_said`, `gpu_phases_text`)."""
    machines = list(dict.fromkeys(filter(None, (machine_said(models.mlm), machine_said(models.sentiment)))))
    gpus = gpu_phases_text(models.mlm, first=not machines)
    trained = f", trained on {said_list(machines)}" if machines else ""
    return f"Both are small teaching models{trained}{gpus}; the figures below are read from each model's metrics.json."


def gpu_phases_text(loaded, first: bool = False) -> str:
    """", and on GPUs for 4 of the encoder's 28 pretraining phases (19 of training, 9 weight averages), which trained
    1.72B of the encoder's 2.16B tokens in 21 min (3 phases on one NVIDIA H100 80GB HBM3, 1 on one NVIDIA H200)"
    from phases.json's hardware ("one GPU (NVIDIA H200)" where every GPU phase ran on that model), or "" when no
    phase ran on a GPU (or the MLM is not there). `first`: no machine is named before it, so it names its own first:
    ", trained on GPUs for 4 of the encoder's 28 pretraining phases, which trained ..."."""
    phases = loaded.extras.get("phases") if loaded.available else None
    phases = phases if isinstance(phases, list) else []
    gpus = gpu_phases(phases)
    if not gpus:
        return ""
    named, detail = (f"one GPU ({md_escape(next(iter(gpus)))})", "") if len(gpus) == 1 else (
        "GPUs", f" ({gpu_phases_said(gpus)})")
    counted = f"{sum(gpus.values())} of the encoder's {phases_counted(phases)}"
    # the machine before its phases, as when it is named first ("and for 4 of the encoder's 28 pretraining phases
    # (19 of training, 9 weight averages) GPUs, which trained ..." was hard to parse)
    text = f", {'trained' if first else 'and'} on {named} for {counted}"
    split = pretraining_by_device(loaded)
    if split:
        cpu, gpu = split
        text += (f", which trained {large_count(gpu.tokens)} of the encoder's {large_count(cpu.tokens + gpu.tokens)} "
                 f"tokens in {minutes(gpu.seconds / 60)}")
    return text + detail


class AboutFigure(NamedTuple):
    """A figure of the About tab: its image file, a caption shown above it (Markdown) that says what it covers,
    and its alt text."""
    path: str
    caption: str
    alt: str


def _file(loaded, name: str) -> str | None:
    """The path of `name` in the model's folder (or its Hub repo), or None."""
    try:
        return roberta.hub.resolve_file(loaded.source, name)
    except Exception:  # missing, or offline: the figure is left out
        return None


def _percent_of(phase, template: str) -> str:
    """`template` filled with a phase's held-out accuracy, or "" when it has none."""
    accuracy = finite_number(phase.held_out[1])
    return template.format(pct(accuracy)) if accuracy is not None else ""


def _climb_said(phases: list) -> str:
    """What the figure of every phase shows, where its figures show it: " Half of the climb from 14.3% after phase 1
    to 53.0% came in the first 104.1M tokens, 5% of them (to phase 3): more pretraining keeps helping, but ever more
    slowly, ...", read from phases.json (the tokens so far, as the figure's axis counts them); "" where the first
    phase end to reach half of the climb came after half of the tokens, did not stay below the last, or where a
    phase lacks its figures."""
    points, total = [], 0
    for phase in phases:
        accuracy = finite_number(phase.held_out[1])
        if accuracy is None:
            return ""
        total += finite_number(phase.train_tokens) or 0  # a weight average trains none
        points.append((total, accuracy))
    if len(points) < 3 or not total or points[-1][1] <= points[0][1]:
        return ""
    first, last = points[0][1], points[-1][1]
    half = next(i for i, (_, accuracy) in enumerate(points) if accuracy >= (first + last) / 2)
    tokens, accuracy = points[half]
    if tokens >= total / 2 or accuracy >= last:
        return ""
    return (f" Half of the climb from {pct(first)} after phase 1 to {pct(last)} came in the first "
            f"{large_count(tokens)} tokens, {tokens / total:.0%} of them (to phase {half + 1}): more pretraining keeps "
            "helping, but ever more slowly, as RoBERTa found when it trained far longer than BERT.")


def _member_phase(phases: list, member) -> int | None:
    """The number in phases.json of a run a weight average (the last phase) was made from, as its `members` record
    it: the latest earlier phase that trained its tokens (and scored its held-out accuracy, where both say); None
    where none does."""
    tokens = finite_number(member.get("train_tokens")) if isinstance(member, dict) else None
    if not tokens:
        return None
    accuracy = finite_number(member.get("eval_accuracy"))
    found = [i for i, phase in enumerate(phases[:-1], 1) if phase.train_tokens == tokens
             and (accuracy is None or finite_number(phase.eval_accuracy) in (None, accuracy))]
    return found[-1] if found else None


def _averaged_curves(curves: str, phases: list) -> AboutFigure:
    """curves.png of a model whose last phase is a weight average: `train.average` draws the training of the runs
    it averaged, one line each, labelled by folder (`train.reporting.plot_member_curves`), which are earlier phases:
    "phase 26 (627.4M tokens) and phase 27 (141.4M)" where phases.json says which (`_member_phase`)."""
    average = phases[-1]
    members = average.members if isinstance(average.members, list) else []
    numbers = [_member_phase(phases, member) for member in members]
    runs = (said_list([f"phase {n} ({large_count(phases[n - 1].train_tokens)}" + (" tokens)" if i == 0 else ")")
                       for i, n in enumerate(numbers)])
            if numbers and None not in numbers else "")
    count = len(members) or average.averaged
    return AboutFigure(curves, (
        f"**The last phase's curves**: phase {len(phases)} averages the weights of {count} runs and trains nothing, so "
        "the figure shows those runs" + (f", {runs}, one line each, labelled in this order" if runs else
                                         ", one line each, labelled") + " by the folder each was averaged from: "
        "training loss, and training's own periodic check of held-out accuracy on part of the held-out "
        "text, so its figures are not the card's."),
        figure_alts.curves_alt(f"the {count} runs averaged into phase {len(phases)}, the last"
                               + (f": {runs}" if runs else ""), per_run=True)
        + " (the caption above says why its figures are not the card's).")


def model_figures(loaded) -> list[AboutFigure]:
    """The figures of a model, first the one whose figures the card gives. A model pretrained in phases (its
    phases.json and phases.png): held-out accuracy at the end of every phase against the tokens so far, then its
    curves.png: the last phase's, or where that phase is a weight average, the runs it averaged
    (`_averaged_curves`). Otherwise curves.png: the run's, or for a weight average its members' (`train.average`)."""
    if not loaded.available:
        return []
    out = []
    phases = loaded.extras.get("phases") if isinstance(loaded.extras.get("phases"), list) else []
    plot = _file(loaded, "phases.png") if phases else None
    trained = [i for i, phase in enumerate(phases, 1) if phase.train_tokens]
    facts = model_facts(loaded)
    total = large_count(facts["train_tokens"]) if "train_tokens" in facts else None
    if plot:
        averages = len(phases) - len(trained)
        count = f"{len(phases)} phases" + (f" ({len(trained)} of training, {averages} weight average"
                                           f"{'s' if averages > 1 else ''})" if averages else "")
        end = _percent_of(phases[-1], "{}") + (f" after {total} tokens" if total else "")
        out.append(AboutFigure(plot, (
            f"**Every phase**: held-out accuracy at the end of each of the {count}, against the tokens trained on "
            "so far" + (f"; the last point, {end}, is the model the card describes." if end else ".")
            + _climb_said(phases)), (
            f"Held-out masked-word accuracy (top-1) at the end of each of the {count}, against the total training "
            "tokens on a log scale" + _percent_of(phases[0], ", from {} after phase 1")
            + _percent_of(phases[-1], f" to {{}} after phase {len(phases)}") + (f" ({total} tokens)" if total else "")
            + "; a dashed line carries the recent rate forward, and a box beside the plot lists every phase's "
              "figure.")))
    curves = loaded.extras.get("curves")
    if curves and out and phases[-1].is_average:
        out.append(_averaged_curves(curves, phases))
    elif curves and out and trained:
        last = trained[-1]
        tokens = large_count(phases[last - 1].train_tokens) + (f" of the {total}" if total else "")
        which = f"phase {last} alone" + (", the last one trained" if last < len(phases) else "")
        out.append(AboutFigure(curves, (
            f"**The last phase's curves** ({which}: {tokens} tokens): training and held-out loss, and training's own "
            "periodic check of held-out accuracy, on part of the held-out text, so its figures are not the card's."),
            figure_alts.curves_alt(f"the last training phase only (phase {last}, {tokens} tokens)")
            + " (the caption above says why its figures are not the card's)."))
    elif curves:
        what = ("fill-mask model" if loaded.key == "mlm" else
                "sentiment classifier" if explain.speaks_of_sentiment(loaded.config) else "classifier")
        averaged = facts.get("averaged")
        whose = f"the {averaged} runs averaged into the {what}" if averaged else f"the {what}"
        stage = " (their last stage)" if averaged and loaded.key != "mlm" and had_earlier_stages(facts) else ""
        out.append(AboutFigure(curves, f"**Training curves** of {whose}{stage}.",
                               figure_alts.curves_alt(whose, per_run=bool(averaged))
                               + " (the card above has the final figures)."))
    return out

