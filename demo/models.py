"""Load the demo's two models once, at start-up, from env vars or the assets folders.

MLM_MODEL / SENTIMENT_MODEL: a local model folder or a Hugging Face Hub repo id. Defaults: the trained
models in assets/. A model that cannot be loaded does not stop the app: it is recorded with a message the
UI shows, and the tabs that need it say so. APP_DEVICE: where every model the app loads computes (`DEVICE`).
"""
from __future__ import annotations

import json
import logging
import os
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import torch

import roberta
from roberta.config import default_labels
from roberta.run_metrics import (METRICS_NAME, PHASES_NAME, RunMetrics, datasets_said, is_sst2, read_phase_history,
                                 said_list, trained_on)

from . import explain, settings

log = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parent.parent
ASSETS = ROOT / "assets"
# an absolute path (not a URL's): a slash at the start or after a space or quote, or a Windows drive (C:\ or C:/),
# then folders, then a name (group 1, or 2 for a Windows path)
ABSOLUTE_PATH_RE = re.compile(r"(?<![\w:/.~-])(?:/(?:[^/\s:'\"]+/)+([^/\s:'\"]+)"
                              r"|[A-Za-z]:[\\/](?:[^\\/\s:'\"]+[\\/])+([^\\/\s:'\"]+))")
ABLATION_DIR = ASSETS / "masking-ablation"
TITLE_LABELS = 5  # the most labels a classifier's title names (`LoadedModel.title_naming`): the rest counted


def app_device(value: str) -> torch.device:
    """The device APP_DEVICE's `value` names: "cpu" (a Space's hardware, the default), "cuda", "cuda:N", or "auto"
    (CUDA where this machine has it, else the CPU). Anything else, or a CUDA device this machine does not have,
    stops the app in one line naming the variable, as a bad queue setting does (`demo.settings`)."""
    settings.device_named(value)
    if value == "auto":
        value = "cuda" if torch.cuda.is_available() else "cpu"
    # a CUDA device this machine lacks, said here in the variable's words (roberta.devices.parse_device's message names
    # the Python forms, -1 for the CPU, which no environment variable takes)
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    _, _, index = value.partition(":")
    if value != "cpu" and int(index or 0) >= count:
        has = f"{count} CUDA device(s), cuda:0 to cuda:{count - 1}" if count else "no CUDA device"
        raise SystemExit(f"app.py: APP_DEVICE {value!r}: this machine has {has}; APP_DEVICE=cpu or auto computes on "
                         "the CPU")
    try:  # the package's own check, as roberta.pipeline's device goes through it
        return roberta.devices.parse_device(value, "APP_DEVICE")
    except ValueError as err:  # a refusal of its own, beyond the app's checks above: said in one line still
        raise SystemExit(f"app.py: {err}") from None


# where the app's models compute, the shipped ones (`load_model`) and those a visitor chooses
# (`demo.model_choice.load_choice`); read once, at start-up
DEVICE = app_device(settings.device())


@dataclass(frozen=True)
class ModelKind:
    """One of the app's two kinds of model, everything the app says or does differently for each: where the shipped
    one is and how to replace it, how it is loaded and named, and which Hub models its tab offers
    (`demo.model_choice`)."""

    key: str  # "mlm" or "sentiment": the `Models` field, and the name of the Attention tab's shipped choice
    default: Path  # the shipped model's folder, loaded when `env_var` is not set
    env_var: str  # a folder or Hub repo id that replaces the shipped model at start-up
    task: str  # `roberta.pipeline`'s task
    title: str  # the shipped model's name in the app
    architecture: str  # the class a config.json of this kind names
    what: str  # the architecture in plain words, in a refusal of the other kind
    tab: str  # the tab that runs this kind
    shipped_name: str  # the shipped model in a model box, after "ours: "
    own_name: str  # the same for the model `env_var` names in its place
    suggested: tuple[str, ...]  # the Hub ids the tab's model box offers, first the one its messages give as example
    # the label names of suggested Hub classifiers whose config.json leaves transformers' LABEL_0, LABEL_1, ...,
    # as their model cards give them (`name_known_labels`)
    known_labels: dict[str, tuple[str, ...]] = field(default_factory=dict, hash=False)

    @property
    def cls(self) -> type:
        """The model class of `architecture` (roberta.RobertaForMaskedLM, RobertaForSequenceClassification)."""
        return roberta.model_class(self.architecture)

    @property
    def replaced(self) -> bool:
        """Whether `env_var` names another model than the shipped one: the app runs the operator's (read when
        asked, as `load_model` reads it)."""
        source = os.environ.get(self.env_var)
        if not source:
            return False
        return not (roberta.hub.is_local(source) and Path(source).expanduser().resolve() == self.default.resolve())

    @property
    def shipped_label(self) -> str:
        """The app's own model in a model box: "ours: the shipped SST-2 classifier", or with `env_var` set to
        another model, "ours: this server's classifier" (a visitor knows no environment variables)."""
        return f"ours: {self.own_name if self.replaced else self.shipped_name}"


KINDS = {kind.key: kind for kind in (
    ModelKind(key="mlm", default=ASSETS / settings.SHIPPED_FOLDER["mlm"], env_var=settings.MODEL_ENV["mlm"],
              task="fill-mask", title="fill-mask (pretrained MLM)", architecture="RobertaForMaskedLM",
              what="a masked language model (fill mask)", tab="Fill mask",
              shipped_name="the shipped fill-mask model", own_name="this server's fill-mask model",
              suggested=("FacebookAI/roberta-base",)),
    ModelKind(key="sentiment", default=ASSETS / settings.SHIPPED_FOLDER["sentiment"],
              env_var=settings.MODEL_ENV["sentiment"],
              task="sentiment-analysis", title="sentiment (fine-tuned on SST-2)",
              architecture="RobertaForSequenceClassification", what="a text classifier (sentiment)",
              tab=explain.SENTIMENT_TAB,  # the page names it for its classifier ("Classify": explain.tab_name)
              shipped_name="the shipped SST-2 classifier", own_name="this server's classifier",
              suggested=("siebert/sentiment-roberta-large-english", "textattack/roberta-base-SST-2"),
              # its model card: LABEL_0 is negative, LABEL_1 positive (SST-2's order); unnamed, the tab took it
              # for a topic classifier ("Classify", an empty text, "towards LABEL_1")
              known_labels={"textattack/roberta-base-SST-2": ("negative", "positive")}))}
KIND_OF_ARCHITECTURE = {kind.architecture: kind for kind in KINDS.values()}  # what config.json names -> its kind


def name_known_labels(key: str, source: str, model, from_hub: bool) -> None:
    """Give a suggested Hub classifier the label names its model card gives (`ModelKind.known_labels`), where its
    config.json leaves transformers' LABEL_0, LABEL_1, ...: the pipeline's answers, the tab's name and its words
    then read them. Only for that repo id read from the Hub (`from_hub`), and only while every label is still
    unnamed: a local folder, any other model, or a config that names its labels keeps its own."""
    names = KINDS[key].known_labels.get(source)
    config = model.config
    if names and from_hub and config.id2label == default_labels(len(names)):
        config.id2label = dict(enumerate(names))


@dataclass
class LoadedModel:
    """One pipeline (or the reason it is missing) plus the files of its folder that the About tab shows."""

    key: str  # "mlm" or "sentiment"
    source: str  # folder or Hub repo id it was loaded from
    pipeline: object | None = None
    error: str | None = None  # why it is missing, for the page: its folder by a short name (`shown_source`)
    console_error: str | None = None  # the same for the operator's console: its folder as they typed it
    # README.md text, metrics.json and phases.json (RunMetrics, a list of them), curves.png and reliability.png paths
    extras: dict = field(default_factory=dict)
    name: str | None = None  # a model chosen in a tab (demo.model_choice): its Hub id, shown instead of the title

    @property
    def available(self) -> bool:
        return self.pipeline is not None

    @property
    def model(self):
        return self.pipeline.model

    @property
    def tokenizer(self):
        return self.pipeline.tokenizer

    @property
    def config(self):
        return self.pipeline.model.config

    @property
    def title(self) -> str:
        return self.title_naming()

    @property
    def fine_tuned_on_sst2(self) -> bool:
        """Whether the app says this classifier was fine-tuned on SST-2: its metrics.json names SST-2's data only, or
        names no data and its labels are SST-2's two (`explain.has_sst2_labels`; a topic classifier's or one of
        three labels are not)."""
        data = trained_on(self.extras.get("metrics"))
        return is_sst2(data) and (data is not None or explain.has_sst2_labels(explain.label_names(self.config)))

    def title_naming(self, file_name=str, label_name=str) -> str:
        """The model's name in the app: a chosen model's id, else its kind's title, except for a classifier whose
        labels name no sentiment (`explain.names_a_sentiment`), whatever its data, or which was not fine-tuned on
        SST-2 (`fine_tuned_on_sst2`; SENTIMENT_MODEL's own): "text classifier (labels world, sports, business and
        sci/tech; fine-tuned on agnews.csv)", "sentiment (fine-tuned on IMDB reviews and three.csv)", or where its
        metrics.json names no data, "sentiment (labels negative, neutral and positive)"; at most TITLE_LABELS labels
        named. A file of no known data set is named by `file_name` of it, a label by `label_name` of it (the About
        tab's Markdown: `code`, `md_escape`)."""
        if self.name:
            return self.name
        if self.key != "sentiment" or not self.available:
            return KINDS[self.key].title
        labels = explain.label_names(self.config)
        sentiment = explain.names_a_sentiment(labels)
        if sentiment and self.fine_tuned_on_sst2:
            return KINDS[self.key].title
        data = trained_on(self.extras.get("metrics"))
        said = []
        if not (sentiment and data):
            named = [label_name(label) for label in labels[:TITLE_LABELS]]
            more = len(labels) - TITLE_LABELS
            said.append(f"labels {said_list(named if more <= 0 else [*named[:-1], f'{more + 1} more'])}")
        if data:
            said.append(f"fine-tuned on {datasets_said(data, file_name)}")
        return f"{'sentiment' if sentiment else 'text classifier'} ({'; '.join(said)})"


@dataclass
class Models:
    mlm: LoadedModel
    sentiment: LoadedModel

    def __getitem__(self, key: str) -> LoadedModel:
        return {"mlm": self.mlm, "sentiment": self.sentiment}[key]

    def tab_name(self, key: str) -> str:
        """The `key` kind's tab as the page opens it, for the model served there: its kind's name (`KINDS`), but the
        Sentiment tab is "Classify" for a served classifier whose labels name no sentiment (`explain.tab_name`; none
        loaded: the tab is laid out for SST-2's)."""
        if key != "sentiment":
            return KINDS[key].tab
        return explain.tab_name(self.sentiment.config if self.sentiment.available else None)


def shown_source(source: str) -> str:
    """Where a model came from, without the machine's paths: a Hub repo id as it is, a folder inside the
    repository relative to it (assets/mini-roberta-mlm), any other folder by its name."""
    if not roberta.hub.is_local(source):
        return source
    path = Path(source).resolve()
    try:
        return path.relative_to(ROOT).as_posix()
    except ValueError:
        return path.name


def _source_forms(typed: str) -> list[str]:
    """How a loader's message may write the folder a user typed: as typed, with `~` expanded, resolved (every
    one without a trailing separator), and for a Windows path with either separator; longest first."""
    forms = {typed, os.path.expanduser(typed), str(Path(os.path.expanduser(typed)).resolve())}
    if re.match(r"[A-Za-z]:[\\/]", typed):  # Windows reads C:/models/mine and C:\models\mine alike
        forms |= {form.replace("/", "\\") for form in forms} | {form.replace("\\", "/") for form in forms}
    forms = {form.rstrip("/\\") for form in forms}
    return sorted((form for form in forms if form), key=len, reverse=True)


def without_paths(message: str, typed: str = "", shown: str | None = None) -> str:
    """An error message without the server's absolute paths (a download cache, a folder): each path by the name
    of its last part ("/home/user/.cache/.../config.json: not valid JSON" -> "config.json: not valid JSON"; a
    Windows one, C:\\ or C:/, too), except the folder a user typed (`typed`) and the files in it, named as typed
    ("/dev/zero is a file", not "zero is a file"; "~/model/config.json", not the home folder's path) or with the
    folder as `shown`. The typed folder is found as it is written (`_source_forms`), not by the pattern of a path,
    which stops at a space: "/srv/my models/mlm" was left as "my models/mlm"."""
    forms = _source_forms(typed) if typed else []
    if not forms:
        return ABSOLUTE_PATH_RE.sub(_last_part, message)
    folder = typed.rstrip("/\\") if shown is None else shown
    # the typed folder, then any files in it, with no character of a longer name on either side ("mlm" is not
    # "mlm2", "." is no full stop); else a path
    either = re.compile(r"(?<![\w.~/\\-])" f"(?P<typed>{'|'.join(map(re.escape, forms))})"
                        r"(?P<inside>(?:[/\\][^/\\\s:'\"]+)*)(?![\w~-]|\.\S)"
                        f"|{ABSOLUTE_PATH_RE.pattern}")
    return either.sub(lambda match: folder + match["inside"] if match["typed"] else _last_part(match), message)


def _last_part(match) -> str:
    """A path `ABSOLUTE_PATH_RE` matched (alone, or as the last two groups of a pattern), by its last part."""
    return match.group(match.re.groups - 1) or match.group(match.re.groups)


def _missing_message(key: str, source: str, err: Exception, as_typed: bool = False) -> str:
    """Why the model of `key` did not load, naming its folder for the page (`shown_source`: "mlm", not the
    server's path) or, `as_typed`, for the operator's console (the MLM_MODEL they typed: "/data/runs/mlm"), and
    what to do: a folder of the other kind goes in the other variable, a damaged one is copied again, an
    incomplete one is trained (or the variable set to another model)."""
    kind = KINDS[key]
    local = roberta.hub.is_local(source)
    shown = source if as_typed else shown_source(source)
    said = without_paths(str(err), typed=source, shown=None if as_typed else shown)
    instead = f"set {kind.env_var} to a model folder or a Hugging Face Hub repo id"
    if isinstance(err, roberta.loading.ArchitectureMismatch):  # "X is a classifier (...); the pipeline needs ...: ..."
        other = next((k for k in KINDS.values() if f"({k.architecture})" in said.split(";")[0]), None)
        reason = f"{said.split(';')[0]}, not {kind.what}" + (f": it goes in {other.env_var}" if other else "")
        todo = f"Set {kind.env_var} to a folder or Hugging Face Hub repo id of that kind"
    elif not local:
        reason, todo = f"could not load {shown} ({said})", instead[0].upper() + instead[1:]
    elif not os.path.exists(os.path.expanduser(source)):
        reason, todo = f"the folder {shown} does not exist", f"Train it (see the README) or {instead}"
    elif os.path.isfile(os.path.expanduser(source)):
        reason = f"{shown} is a file, not a model folder"
        todo = f"Set {kind.env_var} to the folder that holds it, or to a Hugging Face Hub repo id"
    elif isinstance(err, roberta.ModelNotFoundError):  # a file missing: an unfinished run, a partial copy
        reason, todo = f"{shown} is not a complete model folder ({said})", f"Train it (see the README) or {instead}"
    else:  # a file that is there but cannot be used: cut short, corrupt, or another model's
        reason = f"{shown} holds a damaged or mismatched file ({said})"
        todo = f"Otherwise {instead}" if " again" in said else f"Copy or download it again, or {instead}"
    return f"The {kind.title} model is not available: {reason}. {todo}, then restart the app."


def _read_extras(source: str) -> dict:
    """README.md, metrics.json (a `RunMetrics`), phases.json (a shipped MLM's pretraining phases, one
    `RunMetrics` each), curves.png and reliability.png (a calibrated classifier's reliability diagram) of a
    model folder (or Hub repo), when they exist and read."""
    extras = {}
    for name in ("README.md", METRICS_NAME, PHASES_NAME, "curves.png", "reliability.png"):
        try:
            path = roberta.hub.resolve_file(source, name)
        except Exception:  # missing file, or offline: the About tab says "not available"
            continue
        try:
            if name == "README.md":
                extras["readme"] = Path(path).read_text(encoding="utf-8")
            elif name == METRICS_NAME:
                extras["metrics"] = RunMetrics.read(path)
            elif name == PHASES_NAME:
                extras["phases"] = read_phase_history(path)
            else:
                extras[name[:-4]] = str(path)
        except (OSError, ValueError) as err:
            log.warning("could not read %s of %s: %s", name, source, err)
    return extras


def load_model(key: str, source=None) -> LoadedModel:
    """Load one pipeline, frozen for read-only sharing between requests; never raises."""
    kind = KINDS[key]
    source = os.fspath(source or os.environ.get(kind.env_var) or kind.default)
    loaded = LoadedModel(key, source)
    try:
        loaded.pipeline = roberta.pipeline(kind.task, model=source, device=DEVICE)
    except Exception as err:  # missing folder, offline Hub, wrong files: the app starts anyway
        loaded.error = _missing_message(key, source, err)
        loaded.console_error = _missing_message(key, source, err, as_typed=True)
        log.warning(loaded.console_error)
        return loaded
    loaded.pipeline.model.eval().requires_grad_(False)  # shared by all requests; gradients only w.r.t. inputs
    name_known_labels(key, source, loaded.pipeline.model, from_hub=not roberta.hub.is_local(source))
    loaded.extras = _read_extras(source)
    notes = _tokenizer_notes(loaded.pipeline, source)
    if notes:
        loaded.extras["tokenizer_notes"] = notes
    return loaded


def _tokenizer_notes(pipe, source: str) -> list[str]:
    """What the tokenizer rule warned about as the pipeline loaded (`roberta.tokenizer.check_fits_model`: a model
    that runs, with a difference worth knowing), for the model boxes' status lines (`model_choice.opening_status` on
    the page's first view, then `model_choice.describe`), as a model chosen there keeps them; the server's log had
    the warning already. Start-up only: `catch_warnings` is not thread-safe."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", roberta.TokenizerFitWarning)
        notes = roberta.tokenizer.check_fits_model(pipe.tokenizer, pipe.model.config, f"{source}'s tokenizer")
    return [without_paths(note, source, shown_source(source)) for note in notes]  # its folder as the page names it


def load_models(mlm=None, sentiment=None) -> Models:
    return Models(load_model("mlm", mlm), load_model("sentiment", sentiment))


def read_ablation(folder: Path = ABLATION_DIR) -> dict:
    """assets/masking-ablation/results.json and curves.png, when present."""
    out = {}
    results, curves = Path(folder) / "results.json", Path(folder) / "curves.png"
    if results.is_file():
        try:
            out["results"] = json.loads(results.read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            log.warning("could not read %s: %s", results, err)
    if curves.is_file():
        out["curves"] = str(curves)
    return out


CGROUP_CPU_MAX = Path("/sys/fs/cgroup/cpu.max")  # a container's CPU quota (cgroup v2): "QUOTA PERIOD" or "max ..."


def available_cpus() -> int:
    """The CPUs this process may use: os.cpu_count() is the host's in a container (a Hugging Face Space's 2 vCPUs
    on a larger machine), so the process's affinity mask and its container's quota (`CGROUP_CPU_MAX`) bound it."""
    count = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    try:
        quota, period = CGROUP_CPU_MAX.read_text(encoding="utf-8").split()[:2]
        if quota != "max":
            count = min(count, max(1, int(quota) // int(period)))
    except (OSError, ValueError):  # no cgroup v2 file (not Linux, cgroup v1): the mask alone
        pass
    return max(1, count)


def configure_torch(concurrency: int = 1) -> None:
    """Share the CPU cores (`available_cpus`) between the requests computed at once (TORCH_THREADS overrides)."""
    threads = settings.torch_threads() or max(1, min(4, available_cpus() // concurrency))
    torch.set_num_threads(threads)
