"""What a model folder's metrics.json (and phases.json) say, read at start-up through `RunMetrics` for the About
tab's cards, the notes beside each tab's result and the calibration note: `model_facts`, the stages a classifier
went through, the machine its weights trained on; and the words these texts share for SST-2 and the behaviour
checks."""
from __future__ import annotations

import re

from roberta.run_metrics import RunMetrics, dataset_name, dataset_said, dev_slice_said, finite_number, trained_on

from .formatting import code


def _number(d, *keys) -> float | None:
    """d[k1][k2]... when it is a real number, else None (metrics.json's sections are free-form dicts)."""
    for key in keys:
        if not isinstance(d, dict) or key not in d:
            return None
        d = d[key]
    return finite_number(d)


def _total(values) -> float | None:
    """The sum of one figure over a model's runs, when every run has it."""
    values = [finite_number(v) for v in values]
    return sum(values) if values and all(v is not None for v in values) else None


def held_out_markdown(name: str) -> str:
    """The held-out text a figure was measured on: its data set's name with the file ("WikiText-2
    (`wikitext-2/wiki.valid.tokens`)"), or the file alone."""
    return dataset_said(name, code)


def dev_is_sst2(facts: dict) -> bool:
    """Whether a classifier's dev figures are SST-2's, as `model_facts` recorded it from `RunMetrics.dev_is_sst2`
    (facts of no model: as of a metrics.json that does not say, SST-2)."""
    return facts.get("dev_is_sst2", True)


def dev_facts(metrics: RunMetrics) -> dict:
    """The facts of `model_facts` that say which dev set a classifier's figures are of, from its metrics.json:
    dev_data (its dev file, as `dataset_name` shows it), dev_slice (a dev set held out of its training file, its data
    so shown) and dev_is_sst2; for the notes that read a metrics.json alone (`demo.calibration_note`)."""
    facts = {}
    if isinstance(metrics.dev_data, str) and metrics.dev_data:
        facts["dev_data"] = dataset_name(metrics.dev_data)
    if held_out := metrics.held_out_dev:  # the dev set is a slice of the training file, named as such
        facts["dev_slice"] = {**held_out, "data": dataset_name(held_out["data"])}
    facts["dev_is_sst2"] = metrics.dev_is_sst2()
    return facts


# Which data a classifier's dev figures are of (`dev_set`): SST-2's dev set, rows held out of its own training file
# (`train.finetune --dev-fraction`), or a dev file of its own (named where its metrics.json names it)
SST2_DEV, DEV_SLICE, DEV_FILE = "SST-2 dev", "slice", "file"


def dev_set(facts: dict) -> str:
    """Which dev set a classifier's dev figures are of, from `dev_facts` (or `model_facts`): SST2_DEV (`dev_is_sst2`),
    DEV_SLICE (facts' dev_slice) or DEV_FILE; the one place the app decides it, each note saying it in its words."""
    if dev_is_sst2(facts):
        return SST2_DEV
    return DEV_SLICE if "dev_slice" in facts else DEV_FILE


def dev_set_markdown(facts: dict) -> str | None:
    """The dev set of `dev_set` in Markdown: "SST-2 dev"; a slice of the training file, "60 rows of `three.csv` held
    out from fine-tuning, seed 0" (`held_out_dev_markdown`); a dev file, "`three_dev.csv`" (`held_out_markdown`);
    None for a dev file its metrics.json does not name."""
    kind = dev_set(facts)
    if kind == SST2_DEV:
        return SST2_DEV
    if kind == DEV_SLICE:
        return held_out_dev_markdown(facts)
    return held_out_markdown(facts["dev_data"]) if "dev_data" in facts else None


def held_out_dev_markdown(facts: dict) -> str:
    """A dev set held out of the training file (facts' `dev_slice`, `train.finetune --dev-fraction`) as the app
    says it: "60 rows of `three.csv` held out from fine-tuning, seed 0"."""
    return dev_slice_said(facts["dev_slice"], code)


def training_hardware(metrics) -> dict:
    """The machine `metrics`' weights trained on (`RunMetrics.trained_hardware`): the run's `hardware`; for a weight
    average, which trains nothing, its members' machines where they agree on device and cores ({} where they
    differ)."""
    trained = metrics.trained_hardware()
    if len(trained) == 1:
        return trained[0] if isinstance(trained[0], dict) else {}
    machines = [{key: m.get(key) for key in ("device", "cpu_count")} if isinstance(m, dict) else None
                for m in trained]
    return machines[0] if machines and machines[0] and all(m == machines[0] for m in machines) else {}


def cpu_said(cores) -> str | None:
    """"a 2-core CPU", "an 8-core CPU": a CPU of `cores` (metrics.json's cpu_count) in words; None for a count that is
    no whole number (not recorded)."""
    if isinstance(cores, bool) or not isinstance(cores, int) or cores < 1:
        return None
    return f"{'an' if str(cores).startswith('8') or cores in (11, 18) else 'a'} {cores}-core CPU"


def gpu_of(phase) -> str | None:
    """The GPU a phase of phases.json trained on, as its hardware names it; None for a CPU's, and for a weight
    average, which trains nothing: its `hardware` is the machine that averaged or, in a record older than
    `member_hardware`, one member's, and neither trained the average's weights."""
    if phase.is_average:
        return None
    gpu = phase.hardware.get("gpu") if isinstance(phase.hardware, dict) else None
    return gpu if isinstance(gpu, str) else None


# SST-2 expanded, where the app first names it to a learner (the About tab's card of the classifier, the Sentiment
# tab's note): GLUE's SST-2 is the Stanford Sentiment Treebank's sentences and the phrases parsed out of them
SST2_SAID = "SST-2 (the Stanford Sentiment Treebank's movie-review sentences and phrases)"


def checks_said(checks: dict) -> str:
    """What metrics.json's behaviour checks are (`train.evaluate.score_checks`), for the three texts that give
    their figures: "47 test sentences of 8 kinds" (its `n` and the number of its categories); "" without `n`."""
    n = _number(checks, "n")
    if not n:
        return ""
    kinds = checks.get("categories")
    return f"{int(n)} test sentences" + (f" of {len(kinds)} kinds" if isinstance(kinds, dict) and kinds else "")


def weakest_checks(checks: dict, count: int = 2) -> list[tuple[str, dict]]:
    """The `count` kinds of behaviour check with the lowest accuracy, as (name, its figures {"right", "n",
    "accuracy"}), the weakest first."""
    kinds = [(name, figures) for name, figures in (checks.get("categories") or {}).items()
             if isinstance(figures, dict)]
    return sorted(kinds, key=lambda kind: kind[1].get("accuracy", 0))[:count]


# train.sentiment_recipe's folders, which a classifier's metrics.json names as its start: OUT/tapt/mlm, the encoder
# after task-adaptive pretraining (init_root), and OUT/imdb-sN, the labelled IMDB stage before SST-2 (init)
TAPT_RUN_RE = re.compile(r"(?:^|/)tapt/mlm/?$")
IMDB_STAGE_RE = re.compile(r"(?:^|/)(?:random-)?imdb-s\d+/?$")


def fine_tuning_stages(metrics: RunMetrics) -> list[str]:
    """The stages a classifier went through before its last one, as its metrics.json's init and init_root name
    them: "tapt" (more MLM training on the task's text) and "imdb" (a labelled IMDB stage), in order."""
    def named(path, pattern) -> bool:
        return isinstance(path, str) and pattern.search(path.replace("\\", "/")) is not None

    return [stage for stage, found in (("tapt", named(metrics.init_root, TAPT_RUN_RE)),
                                       ("imdb", named(metrics.init, IMDB_STAGE_RE))) if found]


def had_earlier_stages(facts: dict) -> bool:
    """Whether a classifier's last fine-tuning stage came after others, as `model_facts` recorded them: task-adaptive
    pretraining or a labelled IMDB stage (`stages`), or a start from a classifier's encoder and head (`continued`).
    One fine-tuned straight from the pretrained encoder, or whose metrics.json says neither, had none."""
    return bool(facts.get("stages")) or bool(facts.get("continued"))


def model_facts(loaded) -> dict:
    """What the model's metrics.json (and phases.json) say, read at start-up through `RunMetrics`; a key is
    missing when its figure is. Keys: parameters, train_tokens, train_minutes, wall_minutes, averaged (members
    of a weight average), cores, device, data, and for an MLM mlm_accuracy / mlm_perplexity / mlm_rows /
    mlm_masks (the release evaluation; mlm_masks where it averages several mask draws), eval_accuracy (the
    training script's own) and probe (train.fill_mask_probe's top1 / top5 / sentences), for a classifier
    dev_accuracy / dev_examples / dev_data (or dev_slice: a dev set held out of the training file, its data as
    `dataset_name` shows it) / dev_is_sst2 (`RunMetrics.dev_is_sst2`: whether the dev figures are SST-2 dev's) /
    imdb_accuracy / imdb_examples / train_examples, stages
    (`fine_tuning_stages`), continued (it started from a classifier's encoder and head: metrics.json's init_gave)
    and checks (train.evaluate.score_checks' dict)."""
    facts = {}
    if loaded.available:
        facts["parameters"] = loaded.model.num_parameters()
    metrics = loaded.extras.get("metrics") or RunMetrics()
    runs = loaded.extras.get("phases") or ([metrics] if "metrics" in loaded.extras else [])  # the training runs
    for field, key, scale in (("train_tokens", "train_tokens", 1), ("train_time_s", "train_minutes", 60),
                              ("wall_time_s", "wall_minutes", 60)):
        total = _total([getattr(r, field) for r in runs])
        if total is not None:
            facts[key] = int(total) if scale == 1 else total / scale
    if metrics.is_average:
        facts["averaged"] = metrics.averaged
    hardware = training_hardware(metrics)
    if _number(hardware, "cpu_count"):
        facts["cores"] = int(hardware["cpu_count"])
    if isinstance(hardware.get("device"), str):
        facts["device"] = hardware["device"]
    if (data := trained_on(metrics)) is not None:
        facts["data"] = data
    for key in ("accuracy", "perplexity"):
        if _number(metrics.mlm, key) is not None:
            facts[f"mlm_{key}"] = _number(metrics.mlm, key)
    if _number(metrics.mlm, "max_length"):
        facts["mlm_rows"] = int(metrics.mlm["max_length"])
    if (_number(metrics.mlm, "masks") or 1) > 1:
        facts["mlm_masks"] = int(metrics.mlm["masks"])
    for key, value in (("eval_accuracy", metrics.eval_accuracy), ("dev_accuracy", metrics.classifier_accuracy),
                       ("imdb_accuracy", metrics.imdb_accuracy),
                       ("imdb_accuracy_whole", metrics.imdb_accuracy_whole)):
        if finite_number(value) is not None:
            facts[key] = finite_number(value)
    for key, value in (("dev_examples", metrics.dev_examples), ("imdb_examples", metrics.imdb_examples),
                       ("train_examples", metrics.train_examples)):
        if finite_number(value):
            facts[key] = int(value)
    facts.update(dev_facts(metrics))
    if stages := fine_tuning_stages(metrics):
        facts["stages"] = stages
    if isinstance(metrics.init_gave, str) and "head" in metrics.init_gave:  # an earlier stage's classifier
        facts["continued"] = True
    checks = metrics.checks
    if isinstance(checks, dict) and _number(checks, "n") and isinstance(checks.get("categories"), dict):
        facts["checks"] = checks
    # train.fill_mask_probe: everyday sentences with one expected word (the last phase is the shipped model)
    probe = metrics.fill_mask_probe or (runs[-1].fill_mask_probe if runs else None)
    if _number(probe, "sentences") and _number(probe, "top1") is not None and _number(probe, "top5") is not None:
        facts["probe"] = {k: float(probe[k]) for k in ("top1", "top5", "sentences")}
    return facts
