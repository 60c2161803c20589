"""Which model a tab runs: the shipped one (loaded at start-up, `demo.models`) or a RoBERTa checkpoint from
the Hugging Face Hub, such as `FacebookAI/roberta-base` or a public SST-2 classifier, loaded into this
project's own code (`roberta.RobertaForMaskedLM` / `RobertaForSequenceClassification.from_pretrained` and
`roberta.load_tokenizer`, which read `transformers` checkpoints): the same code, two training budgets.

`ModelChooser.get(key, choice)` loads a chosen model once and keeps the last `HUB_CACHE_SIZE` of them
(least recently used out); a lock per model means a large download blocks only the requests that wait for
that model, never the shipped ones. A model that cannot be loaded (unknown id, no network, wrong
architecture, a local folder when those are off, a model larger than `LIMITS`) raises `ModelChoiceError` with
a plain message, and the same message answers every request for it during the next FAILED_TTL_S seconds (a
retry of a broken repo would cost a download each time). Hub files are fetched without the server's own token.
`ModelChooser.choose` is the model box's event: it loads the choice
and says what was loaded, or keeps the current model and says why not. The Attention tab reads either kind
of model: `ModelChooser.get_any` loads a Hub RoBERTa as the class its config.json names.

Local folders (a `save_pretrained` folder) can be chosen only when `APP_LOCAL_MODELS=1` (tests, a trusted
machine): on a public server a visitor must not probe the server's file system, so there a choice's spelling
alone says what it is (a Hub repo id, or refused in the same words whatever the disk holds), and a Hub id is
fetched from the Hub even where a folder has its name (`hub_kwargs`). `APP_HUB_MODELS` says which Hub models a
visitor may load: `any` (the default on a machine of your own), `suggested` (only the ids the model boxes offer:
a public server's disk and memory then hold at most those; the default on a Hugging Face Space, where `SPACE_ID`
is set) or `off` (the shipped models only).
"""
from __future__ import annotations

import contextlib
import html
import json
import logging
import threading
import time
from collections import OrderedDict
from concurrent.futures import Future
from concurrent.futures import TimeoutError as WaitedTooLong
from contextvars import ContextVar

from huggingface_hub.utils import HFValidationError, validate_repo_id

import roberta
from roberta.checkpoint import BARE_ENCODERS, read_architecture
from roberta.hub import HubRepoNotFoundError, HubUnreachableError, hub_offline, is_local, written_as_path
from roberta.pipelines import TASKS
from roberta.tokenizer import check_fits_model

from . import models as app_models  # its DEVICE (APP_DEVICE), read as each chosen model loads
from .formatting import millions
from .models import KIND_OF_ARCHITECTURE, KINDS, LoadedModel, ModelKind, Models, name_known_labels, without_paths
from .settings import HUB_ENV, LOADS_AT_ONCE, LOCAL_ENV, hub_models_mode, local_models_allowed
from .validation import EXITS, WordedError, error_html

log = logging.getLogger(__name__)

SHIPPED = "shipped"  # the model box's value for the model loaded at start-up
COMPARISON = "comparison"  # the Fill mask tab's "compare with" box: a model there is the tab's model nowhere
ATTENTION_TAB = "Attention"  # reads either kind of model: its shipped choices are "mlm" and "sentiment"
# A Hub RoBERTa saved before tokenizer.json existed (vocab.json + merges.txt only) reads with roberta-base's
# tokenizer.json when its vocabulary has roberta-base's size: every RoBERTa fine-tune keeps that vocabulary.
FALLBACK_TOKENIZER = "FacebookAI/roberta-base"
# The steps a visitor's tokenizer.json may have (`check_tokenizer`), each of them run on every request: those of
# RoBERTa's byte-level BPE (ByteLevel pre-tokenizer and decoder, no normalizer; the shipped classifier's
# lower-cases) and of the SentencePiece tokenizers of XLM-R and CamemBERT, whose checkpoints load as RoBERTa
# (Unigram, Metaspace, a character map). A pattern of the file's own (a Split, a Replace on a regex) is refused:
# one took 50 s on a 29,000-character text, another made the tokenizers library panic.
TOKENIZER_STEPS = {"normalizer": {"Lowercase", "NFC", "NFD", "NFKC", "NFKD", "Strip", "StripAccents", "Precompiled",
                                  "Prepend", "Replace"},
                   "pre_tokenizer": {"ByteLevel", "Metaspace"}, "model": {"BPE", "Unigram"},
                   "decoder": {"ByteLevel", "Metaspace"}}
SAFE_PATTERNS = {" {2,}"}  # the one regex SentencePiece's conversion writes (a run of spaces)
HUB_CACHE_SIZE = 3
MAX_CHOICE_CHARS = 200
HUB_NOTE = "Hub models are downloaded on first use (roberta-base ~0.5 GB, roberta-large ~1.4 GB), then kept loaded."
# What a visitor's model may be: roberta-large's shape at most, a vocabulary twice roberta-large's and 16 labels (its
# config is read before anything else is downloaded), so that a small repo cannot ask the server for a 20,000-token
# window, a million-word vocabulary or 128 heads (each head's (T, T) attention map is computed and kept: a 10 MB
# model with 128 heads held 3 GiB per attention request)
LIMITS = {"max_position_embeddings": 514, "vocab_size": 100_000, "num_hidden_layers": 24, "hidden_size": 1024,
          "num_attention_heads": 16, "intermediate_size": 4096, "num_labels": 16}
LARGES_SHAPE = {"max_position_embeddings", "num_hidden_layers", "hidden_size", "num_attention_heads",
                "intermediate_size"}  # the limits that are roberta-large's own
MAX_LABEL_CHARS = 64
FAILED_TTL_S = 300  # a model that failed to load is refused at once for this long (a retry costs a download)
MAX_FAILED = 64  # failures remembered at most (the oldest forgotten first)
# An API call that names a model not loaded yet (`loading_aside`) waits LOAD_WAIT_S for it (a small or cached
# model is answered at once) before it is told to try again; at most settings.LOADS_AT_ONCE load at a time
LOAD_WAIT_S = 1.0
# The last sentence of a model's refusal: on the page the tab keeps its model (`_kept`); an API call has none
NOT_RUN = "Nothing was run with it."
KEPT = "Nothing was run with it, and the current model stays in use."
_LOAD_WAIT: ContextVar[float | None] = ContextVar("load_wait", default=None)


class ModelChoiceError(WordedError):
    """A chosen model that cannot be used; the message says why in plain words (shown as it stands: it may begin
    with the model's name as typed)."""


def _suggested(key: str) -> list[tuple[str, str]]:
    return [] if hub_models_mode() == "off" else [(repo, repo) for repo in KINDS[key].suggested]


def hub_note() -> str:
    """The model box's line under its label, as `APP_HUB_MODELS` allows and offline mode (HF_HUB_OFFLINE) leaves."""
    mode = hub_models_mode()
    if mode == "off":
        return f"This server runs only its own models ({HUB_ENV}=off)."
    note = HUB_NOTE if mode == "any" else f"{HUB_NOTE} This server offers only the suggested ones."
    if hub_offline():  # the cache is all there is: say so before a choice fails
        note += " Offline now (HF_HUB_OFFLINE): only Hub models already in this machine's download cache load."
    return note


def choices(key: str) -> list[tuple[str, str]]:
    """The model box's entries: the shipped model, then the suggested Hub ids (none if Hub models are off)."""
    return [(KINDS[key].shipped_label, SHIPPED), *_suggested(key)]


def attention_choices() -> list[tuple[str, str]]:
    """The attention tab's model box: both shipped models ("mlm", "sentiment"), then the suggested Hub MLM."""
    return [(kind.shipped_label, kind.key) for kind in KINDS.values()] + _suggested("mlm")


def is_shipped(choice) -> bool:
    return choice is None or (isinstance(choice, str) and choice.strip().lower() in ("", SHIPPED))


def _is_repo_id(source: str) -> bool:
    try:
        validate_repo_id(source)
    except HFValidationError:
        return False
    return True


def _is_folder(source: str, allow_local: bool) -> bool:
    """Whether the choice `source` is read as a local folder: only where they are allowed (`allow_local`), and
    then when it is one (`roberta.hub.is_local`); elsewhere the disk is never looked at."""
    return allow_local and is_local(source)


def _check_choice(choice, allow_local: bool, hub_mode: str = "any") -> str:
    if not isinstance(choice, str):
        raise ModelChoiceError(f"The model must be a Hugging Face Hub repo id such as {KINDS['mlm'].suggested[0]}, "
                               f"got {type(choice).__name__}.")
    source = choice.strip()
    if len(source) > MAX_CHOICE_CHARS or not source.isprintable():
        raise ModelChoiceError("That is not a Hugging Face Hub repo id (OWNER/NAME, e.g. FacebookAI/roberta-base).")
    folder = _is_folder(source, allow_local)
    if source.lower() in KINDS and not folder:  # the Attention tab's names, elsewhere
        how = ("send “shipped” (“mlm” and “sentiment” name the shipped models in the /attention endpoints only)"
               if _api_call() else
               "pick “ours: …” from the box's list (the Attention tab's list names its two “mlm” and “sentiment”)")
        raise ModelChoiceError(f"“{source}” is not a Hub repo id: for the shipped model, {how}.")
    repo_id = f"a Hugging Face Hub repo id (OWNER/NAME, e.g. {KINDS['mlm'].suggested[0]})"
    if "://" in source:  # a web address (read as a local path, for its slashes)
        raise ModelChoiceError(f"“{source}” is a web address, not {repo_id}: type the repo id alone (the part "
                               "of its address after huggingface.co/).")
    if not folder and not _is_repo_id(source):  # said here: the loader's message quotes it as a repr
        if allow_local:
            raise ModelChoiceError(f"“{source}” is neither an existing folder nor {repo_id}.")
        only_here = (f"; local folders can be chosen only where the server allows them ({LOCAL_ENV}=1)"
                     if written_as_path(source) else "")  # its spelling, not the disk, says it is meant as one
        raise ModelChoiceError(f"“{source}” is not {repo_id}{only_here}.")
    if not folder and hub_mode != "any":
        allowed = (sorted({repo for kind in KINDS.values() for repo in kind.suggested}) if hub_mode == "suggested"
                   else [])
        if source not in allowed:
            offer = f" and these Hub models: {', '.join(allowed)}" if allowed else ""
            raise ModelChoiceError(f"This server offers only its own models{offer} ({HUB_ENV}={hub_mode}).")
    return source


def _tokenizer(source: str, config, hub: dict):
    """The model's tokenizer.json, or roberta-base's for a RoBERTa saved without one (same vocabulary size)."""
    try:
        return roberta.load_tokenizer(source, **hub), None
    except roberta.ModelNotFoundError as err:
        try:
            fallback = roberta.load_tokenizer(FALLBACK_TOKENIZER, **hub)
        except roberta.ModelLoadError:
            raise err from None
        if fallback.get_vocab_size() != config.vocab_size:
            raise ModelChoiceError(f"{source} has no tokenizer.json, and its vocabulary ({config.vocab_size} "
                                   f"tokens) is not {FALLBACK_TOKENIZER}'s, whose tokenizer would fit.") from None
        return fallback, FALLBACK_TOKENIZER


def _odd_step(kind: str, step: dict | None) -> str | None:
    """What, in the tokenizer.json step `step` (its JSON; None: none) of `kind` ("normalizer"...), is no step of
    `TOKENIZER_STEPS` (a Sequence is read part by part); None when all of it is."""
    if step is None:
        return None if kind == "normalizer" else f"no {kind}"
    step_type = step.get("type")
    if step_type == "Sequence":
        parts = step.get("normalizers") or step.get("pretokenizers") or step.get("decoders") or []
        return next(filter(None, (_odd_step(kind, part) for part in parts)), None)
    if step_type not in TOKENIZER_STEPS[kind]:
        return f"a {kind} of type {step_type}"
    pattern = step.get("pattern") or {}
    if pattern.get("Regex") is not None and pattern["Regex"] not in SAFE_PATTERNS:
        return f"a {step_type} {kind} on a regex of its own"
    # a Replace or Prepend writes one character at most, for a match of one at least: a chain of steps that each
    # doubled the text would grow it exponentially
    if pattern == {"String": ""} or len(step.get("content", step.get("prepend", ""))) > 1:
        return f"a {step_type} {kind} that lengthens the text"
    return None


def check_tokenizer(tokenizer, source: str, kept: str) -> None:
    """Refuse a tokenizer whose steps are not those of `TOKENIZER_STEPS`, before it reads any text."""
    steps = {kind: getattr(tokenizer, kind) for kind in ("normalizer", "pre_tokenizer", "decoder")}
    odd = next(filter(None, (_odd_step(kind, None if step is None else json.loads(step.__getstate__()))
                             for kind, step in steps.items())), None)
    model = type(tokenizer.model).__name__
    odd = odd or (None if model in TOKENIZER_STEPS["model"] else f"a {model} model")
    if odd:
        raise ModelChoiceError(f"{source}'s tokenizer has {odd}: this app runs only the tokenizers of RoBERTa "
                               f"(byte-level BPE) and of XLM-R and CamemBERT (SentencePiece). {kept}")


@contextlib.contextmanager
def _plain_errors(source: str, kept: str):
    """Any failure to read or load `source` as a `ModelChoiceError` in plain words, ending with `kept`; a Hub
    repo that cannot be read or reached in the app's own words (the loader's advice is for a library user: pass
    token=, is it a mistyped local folder?)."""
    try:
        yield
    except ModelChoiceError:
        raise
    except HubUnreachableError:  # offline, or no network
        why = "HF_HUB_OFFLINE is set" if hub_offline() else "no network, or the Hub did not answer"
        raise ModelChoiceError(f"The Hugging Face Hub cannot be reached from this server ({why}), and {source} "
                               f"is not in its download cache. {kept}") from None
    except HubRepoNotFoundError:
        raise ModelChoiceError(f"The Hugging Face Hub has no public model {source}: no such repo, or a private or "
                               f"gated one, which this server does not load. {kept}") from None
    except roberta.ModelLoadError as err:
        raise ModelChoiceError(f"Could not load {source}: {without_paths(str(err), source)}. {kept}") from None
    except EXITS:
        raise
    except BaseException as err:  # out of memory, a broken download, a library's panic...: logged, and said plainly
        log.exception("loading %s", source)
        raise ModelChoiceError(f"Could not load {source} ({type(err).__name__}). {kept}") from None


def _kept(tab: str) -> str:
    """The last sentence of a load's error: what stays as it was, for a visitor whose choice in a tab's model box
    failed (the tab keeps its model; no tab is named, as the message is remembered for every tab that asks). An
    API call's message ends in NOT_RUN instead (`_worded_for_caller`): it has no current model."""
    if tab == COMPARISON:
        return "The comparison was not run."
    return KEPT


def _api_call() -> bool:
    """Whether the request being answered is an API call: inside `loading_aside`, as demo.wiring's
    `api_endpoint` runs every endpoint. Its client has no model box ("ours: …" is the box's entry, "shipped" the
    value it sends) and no current model."""
    return _LOAD_WAIT.get() is not None


@contextlib.contextmanager
def _worded_for_caller():
    """A ModelChoiceError raised inside, said as an API call reads it (`_api_call`): without the page's "the
    current model stays in use". The words are changed as the error leaves the chooser, because a load's message
    is written once, often in a thread of its own (`_load_aside`), and remembered for whoever asks next
    (`_refuse_recent_failure`), a visitor or an API client."""
    try:
        yield
    except ModelChoiceError as err:
        if not _api_call():
            raise
        raise ModelChoiceError(str(err).replace(KEPT, NOT_RUN)) from None


def _kind_said(kind) -> str:
    """A kind of model in words with its class, in one parenthesis: "a text classifier (sentiment;
    RobertaForSequenceClassification)", not "a text classifier (sentiment) (RobertaForSequenceClassification)"."""
    words, _, task = kind.what.partition(" (")
    return f"{words} ({task.removesuffix(')')}; {kind.architecture})" if task else f"{kind.what} ({kind.architecture})"


def _the_tab(tab: str) -> str:
    return "the comparison" if tab == COMPARISON else f"the {tab} tab"


def hub_kwargs(source: str, allow_local: bool) -> dict:
    """How a visitor's model is fetched: a local folder (where allowed) as it is; a Hub repo from the Hub, even
    where a folder has its name (`hub_only`), without the server's own token (never a private or gated repo the
    server's owner can read)."""
    return {} if _is_folder(source, allow_local) else {"token": False, "hub_only": True}


def _read_kind(source: str, hub: dict, kept: str, tab_names: dict) -> ModelKind:
    """The kind of model (`KINDS`) that `source`'s config.json names. `transformers`' encoder without a head
    (RobertaModel, ...), which no tab runs, is refused in the app's words, each tab named as `tab_names` says (the
    loader's advice, a class method to call, is for a library user)."""
    architecture = read_architecture(source, encoder_ok=True, **hub)
    if architecture in BARE_ENCODERS:
        mlm, clf = KINDS["mlm"], KINDS["sentiment"]
        raise ModelChoiceError(f"{source} is an encoder without a head ({architecture}): the {tab_names[mlm.key]} tab "
                               f"needs {mlm.what} and the {tab_names[clf.key]} tab {clf.what}. Fine-tune it into a "
                               f"classifier first (python -m train.finetune --init {source}). {kept}")
    return KIND_OF_ARCHITECTURE[architecture]


def _default_tab_names() -> dict:
    """Each kind's tab as `KINDS` names it (the page may name the Sentiment tab otherwise: `Models.tab_name`)."""
    return {kind.key: kind.tab for kind in KINDS.values()}


def architecture_key(source: str, tab: str = ATTENTION_TAB, allow_local: bool = False,
                     tab_names: dict | None = None) -> str:
    """"mlm" or "sentiment": which of our two classes the checkpoint `source` is (its config.json only).
    `tab_names`: as in `load_choice`."""
    with _plain_errors(source, _kept(tab)):
        return _read_kind(source, hub_kwargs(source, allow_local), _kept(tab), tab_names or _default_tab_names()).key


def check_limits(config, source: str, kept: str) -> None:
    """Refuse a model beyond what the app serves (`LIMITS`; label names of at most MAX_LABEL_CHARS)."""
    for field_name, limit in LIMITS.items():
        value = getattr(config, field_name)
        if value > limit:
            whose = ": roberta-large's" if field_name in LARGES_SHAPE else ""
            raise ModelChoiceError(f"{source} is larger than this app serves ({field_name} {value:,}, at most "
                                   f"{limit:,}{whose}). {kept}")
    if any(len(str(name)) > MAX_LABEL_CHARS for name in config.id2label.values()):
        raise ModelChoiceError(f"{source} has a label name longer than {MAX_LABEL_CHARS} characters. {kept}")


def load_choice(key: str, source: str, tab: str | None = None, allow_local: bool = False,
                tab_names: dict | None = None) -> LoadedModel:
    """`source` (a Hub repo id, or a local folder where `allow_local`) loaded as the `key` tab's model, frozen for
    sharing. `tab`: the tab that asked, named in the messages (default: the `key` tab); `tab_names`: each kind's
    tab as the page names it (`Models.tab_name`: the Sentiment tab is "Classify" for a served topic classifier;
    default: `KINDS`' names). Cheapest checks first: the config (architecture, `LIMITS`), then the tokenizer, then
    the weights; files are fetched as `hub_kwargs` says."""
    kind = KINDS[key]
    tab_names = tab_names or _default_tab_names()
    tab = tab or tab_names[key]
    hub = hub_kwargs(source, allow_local)
    with _plain_errors(source, _kept(tab)):
        its_kind = _read_kind(source, hub, _kept(tab), tab_names)  # config.json only, before anything large
        if its_kind is not kind:  # said with where it does load: its kind's tab, and Attention
            raise ModelChoiceError(f"{source} is {_kind_said(its_kind)}; {_the_tab(tab)} needs "
                                   f"{_kind_said(kind)}. It loads in the {tab_names[its_kind.key]} and {ATTENTION_TAB} "
                                   f"tabs. {_kept(tab)}")
        config = roberta.load_config(source, **hub)
        check_limits(config, source, _kept(tab))
        if key == "sentiment" and config.problem_type == "regression":
            raise ModelChoiceError(f"{source} is a regression model: it gives a number, not the probability of each "
                                   f"label that {_the_tab(tab)} shows. {_kept(tab)}")
        tokenizer, tokenizer_from = _tokenizer(source, config, hub)
        check_tokenizer(tokenizer, source, _kept(tab))
        # the pipeline's own rule, before the weights are downloaded: a ModelLoadError, said by _plain_errors; its
        # warnings (a model that runs, with a difference worth knowing) for the visitor (`describe`) too
        notes = check_fits_model(tokenizer, config, f"{tokenizer_from or source}'s tokenizer")
        model = kind.cls.from_pretrained(source, **hub)
        name_known_labels(key, source, model, from_hub=not _is_folder(source, allow_local))
        # checked above: the pipeline does not check (and warn) again
        pipe = TASKS[kind.task](model, tokenizer, device=app_models.DEVICE, tokenizer_name=None)
    pipe.model.eval().requires_grad_(False)  # shared by all requests; gradients only w.r.t. inputs
    extras = {"tokenizer_from": tokenizer_from} if tokenizer_from else {}
    if notes:
        extras["tokenizer_notes"] = [without_paths(note, source) for note in notes]
    return LoadedModel(key, source, pipeline=pipe, extras=extras, name=source)


@contextlib.contextmanager
def loading_aside(wait_s: float = LOAD_WAIT_S):
    """Inside, `ModelChooser.get` loads a model in the background and waits `wait_s` seconds for it, then refuses
    the request with "loading, try again in a moment": an API call runs in the compute queue, which a download of
    roberta-large held for every request (a shipped fill-mask waited 10 s behind two loads)."""
    token = _LOAD_WAIT.set(wait_s)
    try:
        yield
    finally:
        _LOAD_WAIT.reset(token)


def loading_html(choice, keeps: bool = True) -> str:
    """The model box's status while a chosen model loads (`keeps`: saying that the tab keeps its model)."""
    choice = str(choice).strip()
    where = ("" if _is_folder(choice, local_models_allowed()) else
             ": from the Hugging Face Hub on first use (a large model takes a while)")
    kept = "; this tab keeps its model until the new one is ready" if keeps else ""
    return f'<div class="model-status" role="status">Loading {html.escape(choice)}{where}{kept}.</div>'


def compare_choices(running=None) -> list[tuple[str, str]]:
    """The Fill mask tab's "compare with" box: the suggested Hub MLMs, then the shipped one (for a tab that runs
    a Hub model); none when a visitor can choose no other model (Hub models off, no local folders). `running`:
    the model the tab runs, left out (compared with itself, it would only be refused)."""
    if hub_models_mode() == "off" and not local_models_allowed():
        return []
    return [(label, value) for label, value in [*_suggested("mlm"), (KINDS["mlm"].shipped_label, SHIPPED)]
            if running is None or not same_model(value, running)]


def same_model(choice, other) -> bool:
    """Whether two choices of a model box name the same model (the shipped one however written, a repo id or
    folder up to surrounding spaces)."""
    names = ["" if is_shipped(c) else str(c).strip() for c in (choice, other)]
    return names[0] == names[1]


def default_comparison(current) -> str | None:
    """The "compare with" box's value for a Fill mask tab that runs `current`: the shipped model when the tab
    runs another one, else the first suggested Hub model (None when there is none)."""
    offered = [value for _, value in compare_choices()]
    if not is_shipped(current) and SHIPPED in offered:
        return SHIPPED
    return next((value for value in offered if value != SHIPPED), None)


def describe(loaded: LoadedModel) -> str:
    """One line on a loaded model: size, memory, shape, window, labels (HTML); then a line for each warning its
    tokenizer gave (`load_choice`), which would otherwise reach only the server's log."""
    model, cfg = loaded.model, loaded.config
    n_params = sum(p.numel() for p in model.parameters())
    megabytes = sum(p.numel() * p.element_size() for p in model.parameters()) / 2 ** 20
    name = html.escape(loaded.title, quote=False)
    memory = f"{megabytes:,.{0 if megabytes >= 10 else 1}f} MB in memory"
    parts = [f"<b>{name}</b>: {millions(n_params)} parameters ({memory})",
             f"{cfg.num_hidden_layers} layers × {cfg.num_attention_heads} heads, reads up to {cfg.max_length} tokens"]
    if loaded.key == "sentiment":
        labels = ", ".join(html.escape(str(v), quote=False) for _, v in sorted(cfg.id2label.items()))
        parts.append(f"labels {labels}")
        temperature = getattr(cfg, "calibration_temperature", 1.0) or 1.0
        parts.append(f"calibration temperature {temperature:g}" if temperature != 1.0 else "scores uncalibrated")
    if loaded.extras.get("tokenizer_from"):
        parts.append(f"tokenizer of {loaded.extras['tokenizer_from']} (the repo has no tokenizer.json)")
    notes = _tokenizer_notes_html(loaded)
    return " · ".join(parts) + (f"<br>{notes}" if notes else "")


def _tokenizer_notes_html(loaded: LoadedModel) -> str:
    """A line for each warning the model's tokenizer gave as it loaded (`load_choice`, `demo.models.load_model`),
    which would otherwise reach only the server's log: "Note: ….", escaped as HTML; "" without any."""
    return "<br>".join(f"Note: {html.escape(note, quote=False)}." for note in loaded.extras.get("tokenizer_notes", []))


def opening_status(models: Models, key: str, value=SHIPPED) -> str:
    """A model box's status as the page opens on the served model (`value`: SHIPPED, or the Attention tab's "mlm"
    or "sentiment"), laid out at start-up: its tokenizer's notes (a model of MLM_MODEL / SENTIMENT_MODEL whose
    tokenizer fits loosely), which the box showed only once a model was chosen; "" without any (the shipped
    models fit theirs)."""
    notes = _tokenizer_notes_html(models[value if value in KINDS else key])
    return f'<div class="model-status">{notes}</div>' if notes else ""


class ModelChooser:
    """The shipped models plus the chosen Hub models, loaded once each (LRU of `size`), one lock per model."""

    def __init__(self, models: Models, size: int = HUB_CACHE_SIZE, allow_local: bool | None = None,
                 hub_mode: str | None = None):
        self.models = models
        self.size = size
        self.allow_local = local_models_allowed() if allow_local is None else allow_local
        self.hub_mode = hub_models_mode() if hub_mode is None else hub_mode
        # each kind's tab as the page opens it, named in the messages (read once: the served models are the page's)
        self.tab_names = {key: models.tab_name(key) for key in KINDS}
        self._loaded: OrderedDict = OrderedDict()  # (key, source) -> LoadedModel
        self._locks: dict = {}  # (key, source) -> the lock its loading holds
        self._failed: OrderedDict = OrderedDict()  # (key or "any", source, tab) -> (when, the message), oldest first
        self._aside: dict = {}  # (key, source, tab) -> the Future of its load in the background (`loading_aside`)
        self._guard = threading.Lock()  # the four dicts

    def _refuse_recent_failure(self, failed_key) -> None:
        """A model that failed to load less than FAILED_TTL_S ago fails again at once, with the same message:
        every retry of a broken or unreachable repo would otherwise cost a download (or the Hub's retries). A
        new error each time (a raised exception keeps the frames it went through)."""
        now = time.monotonic()
        with self._guard:
            while self._failed and now - next(iter(self._failed.values()))[0] >= FAILED_TTL_S:
                self._failed.popitem(last=False)  # the oldest first: expired ones go
            failed = self._failed.get(failed_key)
        if failed:
            raise ModelChoiceError(failed[1])

    def _remember_failure(self, failed_key, err: ModelChoiceError) -> None:
        with self._guard:
            self._failed[failed_key] = (time.monotonic(), str(err))
            self._failed.move_to_end(failed_key)
            while len(self._failed) > MAX_FAILED:
                self._failed.popitem(last=False)

    def _cached(self, cache_key):
        with self._guard:
            if cache_key in self._loaded:
                self._loaded.move_to_end(cache_key)
                return self._loaded[cache_key]
            return None

    def get(self, key: str, choice=None, tab: str | None = None) -> LoadedModel:
        """The `key` tab's model for `choice` (SHIPPED or empty: the start-up model, available or not);
        `tab`: the tab that asks, when another than the `key` tab (named in the messages)."""
        if is_shipped(choice):
            return self.models[key]
        with _worded_for_caller():
            source = _check_choice(choice, self.allow_local, self.hub_mode)
            cache_key = (key, source)
            loaded = self._cached(cache_key)
            if loaded is not None:
                return loaded
            self._refuse_recent_failure((key, source, tab))
            wait_s = _LOAD_WAIT.get()
            if wait_s is not None:
                return self._load_aside(key, source, tab, wait_s)
            return self._load(key, source, tab)

    def _load_aside(self, key: str, source: str, tab: str | None, wait_s: float) -> LoadedModel:
        """`_load(key, source, tab)` in a thread of its own (one per model, LOADS_AT_ONCE at most), waited for
        `wait_s` seconds; a ModelChoiceError that says to try again when it takes longer (or when as many other
        models are loading)."""
        aside_key = (key, source, tab)
        with self._guard:
            loading = self._aside.get(aside_key)
            if loading is None:
                if len(self._aside) >= LOADS_AT_ONCE:
                    raise ModelChoiceError(f"{source} is not loaded, and this server is loading other models now: "
                                           f"try again in a moment. {_kept(tab)}")
                loading = self._aside[aside_key] = Future()
                threading.Thread(target=self._load_into, args=(loading, aside_key), daemon=True,
                                 name=f"load {source}").start()
        try:
            return loading.result(timeout=wait_s)
        except WaitedTooLong:
            raise ModelChoiceError(f"{source} is loading (a large model takes a while on first use): try again in a "
                                   f"moment. {_kept(tab)}") from None
        except ModelChoiceError as err:  # a new error for each request that waited (it keeps its frames)
            raise ModelChoiceError(str(err)) from None

    def _load_into(self, loading: Future, aside_key) -> None:
        try:
            loading.set_result(self._load(*aside_key))
        except BaseException as err:  # a ModelChoiceError; anything else, for the requests waiting to say
            loading.set_exception(err)
        finally:
            with self._guard:
                del self._aside[aside_key]

    def _load(self, key: str, source: str, tab: str | None) -> LoadedModel:
        """`source` loaded (`load_choice`) and cached, or its failure remembered; a second request for the same
        model waits for the first load."""
        cache_key = (key, source)
        with self._guard:
            lock = self._locks.setdefault(cache_key, threading.Lock())
        try:
            with lock:  # a second request for the same model waits for the first load instead of repeating it
                loaded = self._cached(cache_key)
                if loaded is None:
                    self._refuse_recent_failure((key, source, tab))  # the load it waited for failed
                    try:
                        loaded = load_choice(key, source, tab, self.allow_local, self.tab_names)
                    except ModelChoiceError as err:
                        self._remember_failure((key, source, tab), err)
                        raise
                    with self._guard:
                        self._loaded[cache_key] = loaded
                        while len(self._loaded) > self.size:
                            self._loaded.popitem(last=False)
        finally:  # loaded (then cached) or failed: the lock is done with, and the table does not grow
            with self._guard:
                if self._locks.get(cache_key) is lock:
                    del self._locks[cache_key]
        return loaded

    def is_loaded(self, key: str, choice, tab: str | None = None) -> bool:
        """Whether `get(key, choice, tab)` (`get_any(choice, tab)` for key "any") answers without loading: the
        shipped model, a model loaded already, or a choice it refuses at once (not a repo id, or one that failed
        to load less than FAILED_TTL_S ago)."""
        if is_shipped(choice) or (key == "any" and choice in KINDS):  # the attention box's shipped two
            return True
        try:
            source = _check_choice(choice, self.allow_local, self.hub_mode)
        except ModelChoiceError:
            return True
        keys = list(KINDS) if key == "any" else [key]
        if any(self._cached((k, source)) is not None for k in keys):
            return True
        now = time.monotonic()
        with self._guard:
            failed = [self._failed.get((k, source, tab)) for k in (*keys, "any")]
        return any(f is not None and now - f[0] < FAILED_TTL_S for f in failed)

    def get_any(self, choice, tab: str = ATTENTION_TAB) -> LoadedModel:
        """A Hub RoBERTa of either kind, for a tab that reads both (attention): loaded as a fill-mask model or
        a classifier, as its config.json says, and cached with the other tabs' models (loaded once)."""
        with _worded_for_caller():
            source = _check_choice(choice, self.allow_local, self.hub_mode)
            for key in KINDS:
                loaded = self._cached((key, source))
                if loaded is not None:
                    return loaded
            self._refuse_recent_failure(("any", source, tab))  # its config.json could not be read lately
            try:
                key = architecture_key(source, tab, self.allow_local, self.tab_names)
            except ModelChoiceError as err:
                self._remember_failure(("any", source, tab), err)
                raise
            return self.get(key, source, tab)

    def loaded(self) -> list[LoadedModel]:
        """The Hub models loaded now, least recently used first."""
        with self._guard:
            return list(self._loaded.values())

    def choose(self, key: str, choice=None, current=SHIPPED, tab: str | None = None) -> tuple[str, str, str]:
        """The model box's event: (the box's value, the tab's model, a status line in HTML). A model that
        loads becomes the tab's model; one that does not leaves the tab on `current` and the box on what was
        typed (to be corrected, not typed again; a suggested one back on `current`: `refused`), with the reason next
        to the box. `tab`: as in `get`."""
        current = SHIPPED if is_shipped(current) else current
        try:
            loaded = self.get(key, choice, tab)
        except ModelChoiceError as err:
            return refused(key, choice, current, str(err))
        if not loaded.available:  # the shipped model, when it failed at start-up
            return refused(key, choice, current, loaded.error)
        value = SHIPPED if is_shipped(choice) else choice.strip()
        return value, value, f'<div class="model-status">{describe(loaded)}</div>'


def running_label(key: str, current) -> str:
    """The model a tab runs, as its box lists it: "ours: …" for a shipped one (`current` SHIPPED, or the
    Attention tab's "mlm" / "sentiment"), else the repo id or folder."""
    if is_shipped(current):
        return KINDS[key].shipped_label
    return KINDS[current].shipped_label if current in KINDS else str(current)


def refused(key: str, choice, current, message: str) -> tuple[str, str, str]:
    """A model box's answer to a choice that cannot be used: (the box's value, the tab's model, the status in
    HTML). The box keeps a choice as typed, so that a typo is corrected rather than typed again, the tab keeps
    `current`, and the status gives the reason and names the model the tab still runs, since the box no longer
    shows it. A choice picked from the box's list (a suggested Hub model, offline), or one that is no text or
    empty, has nothing to correct: the box gives back the tab's model, as it showed before."""
    listed = {*KINDS[key].suggested, ""}  # the Attention tab's box lists the MLMs' (its `key` here: "mlm")
    typed = choice.strip() if isinstance(choice, str) and choice.strip() not in listed else current
    running = "" if typed == current else f" This tab still runs {running_label(key, current)}."
    message = html.escape(f"{message}{running}", quote=False)
    return typed, current, error_html(message)

