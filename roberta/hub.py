"""A model's files: find them (a local folder or a Hugging Face Hub repo), read and check them, write them.

    config.json        RobertaConfig (checked field by field: types, ranges, ids within the vocabulary)
    model.safetensors  the weights in `transformers`' layout (safetensors only: nothing is ever unpickled), every
                       value finite (no NaN or infinity)
    tokenizer.json     read by `roberta.tokenizer.load_tokenizer`

`load_model` builds one of the package's model classes from them (`from_pretrained` calls it), after
checking every file; the state-dict mapping to and from `transformers`' layout is at the end.

Every failure to load is a `ModelLoadError` (a ValueError) whose message names the file, and the field or
tensor when there is one; a folder, file or Hub repo that cannot be found is a `ModelNotFoundError` (also a
FileNotFoundError); of those, a Hub repo that cannot be read is a `HubRepoNotFoundError`, and a Hub file
that could not be fetched (offline, no network) a `HubUnreachableError`. `HF_HUB_OFFLINE=1` is honoured: a Hub id
is then looked up in the local cache only, without network requests or retries. `hub_only=True` reads a model id
as a Hub repo id whatever the disk holds (a server loading the ids its visitors type: no local file is read, nor
is its existence told).
"""
from __future__ import annotations

import dataclasses
import difflib
import inspect
import json
import math
import os
import socket
import threading
import time
import urllib.parse
import urllib.request
import warnings
from pathlib import Path

import torch
from huggingface_hub import constants, hf_hub_download, list_repo_files
from huggingface_hub.errors import (EntryNotFoundError, GatedRepoError, HFValidationError, LocalEntryNotFoundError,
                                    RepositoryNotFoundError, RevisionNotFoundError)
from huggingface_hub.utils import validate_repo_id
from safetensors import SafetensorError, safe_open
from safetensors.torch import save

from .config import RobertaConfig, default_labels
from .files import write_atomic

CONFIG_NAME = "config.json"
WEIGHTS_NAME = "model.safetensors"
INDEX_NAME = "model.safetensors.index.json"  # a sharded checkpoint's list of shards
PICKLED_NAMES = ("pytorch_model.bin", "pytorch_model.bin.index.json")  # named when refused, never read
TOKENIZER_NAME = "tokenizer.json"
# The model classes this package loads, the one place that names them: the name config.json's `architectures`
# gives -> (what it is, in messages; its task: the Hub's pipeline tag and `roberta.pipeline`'s). The classes in
# model.py take their tag from here (tests/test_model.py checks that each class is listed).
ARCHITECTURES = {"RobertaForMaskedLM": ("a masked-LM model", "fill-mask"),
                 "RobertaForSequenceClassification": ("a classifier", "text-classification")}
# the same architecture and tensor names under RoBERTa's multilingual and French re-trainings' class names
ALIASES = {f"{family}{head}": f"Roberta{head}" for family in ("XLMRoberta", "Camembert")
           for head in ("ForMaskedLM", "ForSequenceClassification")}
# `transformers`' encoder without a head (its bare RobertaModel), under the three families' names: its folder gives
# a classifier its encoder (RobertaForSequenceClassification.from_pretrained_encoder), and is no model of ours
BARE_ENCODERS = ("RobertaModel", "XLMRobertaModel", "CamembertModel")
HUB_KWARGS = ("revision", "cache_dir", "force_download", "token", "local_files_only", "hub_only")
# The model card (README.md) `save_pretrained` writes into a folder that has none, in place of huggingface_hub's
# default ("pushed to the Hub ...", "[More Information Needed]"): what the folder holds and how it loads, nothing
# it cannot know. A Jinja template (`PyTorchModelHubMixin`'s model_card_template), filled by
# `RobertaPreTrainedModel.generate_model_card`; the training scripts write a full card over it.
MODEL_CARD_TEMPLATE = """---
{{ card_data }}
---

# {{ architecture }}

A RoBERTa encoder ({{ config.num_hidden_layers }} layers, hidden size {{ config.hidden_size }}, \
{{ config.num_attention_heads }} heads, a vocabulary of {{ config.vocab_size }} tokens, inputs of at most \
{{ config.max_length }} tokens) with {{ head }}, saved by the `roberta` package's `save_pretrained`: `config.json` \
and `model.safetensors` in `transformers`' layout. This card records no training data or metrics.

It loads with `roberta` and with `transformers`' RoBERTa classes:

```python
import roberta
model = roberta.{{ architecture }}.from_pretrained(folder)

import transformers
model = transformers.{{ architecture }}.from_pretrained(folder)
```
{% if task %}
`roberta.pipeline("{{ task }}", model=folder)` also needs the tokenizer beside the weights (`tokenizer.json`, \
written by `roberta.save_tokenizer`).
{% endif %}"""
# Config fields the weights' shapes do not reveal (4 heads or 8 give the same matrices). They are written into
# model.safetensors' metadata and compared with config.json at load; files saved by `transformers` (or by this
# code before it wrote them) do not carry them, and then an edited value of these fields cannot be detected.
SHAPELESS_FIELDS = ("num_attention_heads", "pad_token_id", "layer_norm_eps")
_META_PREFIX = "config."
HUB_PROBE_TIMEOUT_S = 3.0  # a connection to the Hub that takes longer than this counts as no network
HUB_PROBE_TTL_S = 30.0  # a probe's answer is reused this long


class ModelLoadError(ValueError):
    """A model, config or tokenizer file that cannot be loaded; the message names the file and the problem."""


class ModelNotFoundError(ModelLoadError, FileNotFoundError):
    """The model folder, one of its files, or the Hub repo does not exist or cannot be reached."""


class HubRepoNotFoundError(ModelNotFoundError):
    """No Hub repo of that id that the token given may read: none exists, or it is private or gated."""


class HubUnreachableError(ModelNotFoundError):
    """A Hub file that could not be fetched (offline, no connection, a network or server error) and is not in
    the local cache."""


class ArchitectureMismatch(ModelLoadError):
    """A model of another kind than the one needed (a classifier where a masked LM is needed)."""

    @classmethod
    def of(cls, shown: str, architecture: str, why: str) -> "ArchitectureMismatch":
        """Worded from ARCHITECTURES: "`shown` is a classifier (RobertaForSequenceClassification); `why`"."""
        return cls(f"{shown} is {ARCHITECTURES[architecture][0]} ({architecture}); {why}")


# ----- finding files -----
def written_as_path(model_id) -> bool:
    """Whether `model_id` is written as a path (it starts with ".", "/" or "~", or has more than one slash): never
    a Hub repo id, whatever the disk holds."""
    model_id = os.fspath(model_id)
    return model_id.startswith((".", "/", "~")) or model_id.count("/") > 1


def is_local(model_id, hub_only: bool = False) -> bool:
    """Whether `model_id` means a local path (it exists, or is `written_as_path`) rather than a Hub repo id; never
    with `hub_only` (the disk is not looked at)."""
    model_id = os.path.expanduser(os.fspath(model_id))
    return not hub_only and (os.path.exists(model_id) or written_as_path(model_id))


def _looks_local(model_id: str, hub_only: bool = False) -> str:
    """A hint for a Hub id that failed: OWNER/NAME whose OWNER is a folder here may be a mistyped local folder
    (none with `hub_only`: the disk is not looked at)."""
    owner = model_id.split("/")[0]
    return f"; {owner}/ is a folder here: is {model_id} a mistyped local folder?" if (
        not hub_only and "/" in model_id and os.path.isdir(owner)) else ""


def hub_offline() -> bool:
    """HF_HUB_OFFLINE is set (read now, so that setting it after `huggingface_hub` was imported counts too)."""
    flag = os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in {"1", "ON", "YES", "TRUE"}
    return flag or constants.is_offline_mode()


_probe_lock = threading.Lock()
_probe = {"at": -math.inf, "reachable": True, "endpoint": None}


def _hub_address() -> tuple[str, int]:
    """The (host, port) of the Hub endpoint `huggingface_hub` talks to (HF_ENDPOINT if set)."""
    url = urllib.parse.urlsplit(constants.ENDPOINT)
    return url.hostname or "huggingface.co", url.port or (80 if url.scheme == "http" else 443)


def _connects(address: tuple[str, int], timeout: float) -> bool:
    """Whether a TCP connection to `address` opens within `timeout` seconds, name lookup included (run in a
    thread, since a lookup that hangs ignores the socket's timeout)."""
    opened = threading.Event()

    def connect():
        try:
            socket.create_connection(address, timeout=timeout).close()
            opened.set()
        except OSError:
            pass

    thread = threading.Thread(target=connect, daemon=True, name="hub-probe")
    thread.start()
    thread.join(timeout)
    return opened.is_set()


def hub_reachable(timeout: float = HUB_PROBE_TIMEOUT_S) -> bool:
    """Whether the Hugging Face Hub can be reached from here: a TCP connection to its endpoint opens within
    `timeout` seconds. The answer is kept for HUB_PROBE_TTL_S. Behind an HTTP(S) proxy the check cannot tell
    and answers True (the download then finds out itself)."""
    host, port = address = _hub_address()
    proxies = urllib.request.getproxies()  # HTTPS_PROXY, or ALL_PROXY (which httpx and requests honour too)
    if (proxies.get("https") or proxies.get("all")) and not urllib.request.proxy_bypass(host):
        return True
    with _probe_lock:
        now = time.monotonic()
        if _probe["endpoint"] != address or now - _probe["at"] > HUB_PROBE_TTL_S:
            _probe.update(at=now, endpoint=address, reachable=_connects(address, timeout))
        return _probe["reachable"]


# Options meant for `transformers` that this package takes another way, named when one is passed
_TO_DTYPE = "load, then call .to(dtype) on the model"
_ELSEWHERE = {"dtype": _TO_DTYPE, "torch_dtype": _TO_DTYPE,
              "device_map": "load, then call .to(device) (or pass device= to pipeline())",
              "top_k": "pass it when calling the pipeline: pipe(text, top_k=...)"}


def check_hub_kwargs(hub_kwargs: dict) -> None:
    """Refuse options other than HUB_KWARGS: dropped without a word, a misspelt `revison` would load the default
    revision."""
    for name in hub_kwargs:
        if name not in HUB_KWARGS:
            close = difflib.get_close_matches(name, HUB_KWARGS, n=1)
            hint = _ELSEWHERE.get(name) or (f"did you mean {close[0]}?" if close else "")
            raise TypeError(f"unknown option {name!r} (a model's files take {', '.join(HUB_KWARGS)})"
                            + (f": {hint}" if hint else ""))


# Options of `transformers`' save_pretrained that `save_pretrained` here does not take, and why
_ONE_FILE = "the weights are always one model.safetensors file (never a pickle): leave it out"
_NOT_SAVED_HERE = {"max_shard_size": _ONE_FILE, "safe_serialization": _ONE_FILE,
                   "config": "config.json is written from model.config: change that (dataclasses.replace) instead"}


def check_save_kwargs(push_to_hub: bool, options: dict, push, config: RobertaConfig) -> None:
    """Refuse a `save_pretrained` option that would be dropped without a word (the mixin reads its unknown
    keywords only when it pushes: max_shard_size=, a misspelt push_to_hub= wrote one file and pushed nothing).
    `options`: the keywords beside push_to_hub and model_card_kwargs; those of the model's `push` method
    (`PyTorchModelHubMixin.push_to_hub`: repo_id, token, private, ...) are taken with push_to_hub=True only, and
    `config=` only as the model's own `config` (which the mixin's push_to_hub passes back to save_pretrained)."""
    push_options = set(inspect.signature(push).parameters) - {"config", "model_card_kwargs"}
    for name, value in options.items():
        if name == "config" and (value is None or value == config or value == dataclasses.asdict(config)):
            continue  # the mixin's save_pretrained passes it to its push_to_hub as a dict
        if name in push_options:
            if not push_to_hub:
                raise TypeError(f"save_pretrained's {name}= is used only when it pushes to the Hub: add "
                                "push_to_hub=True (or call model.push_to_hub)")
            continue
        close = difflib.get_close_matches(name, [*push_options, "push_to_hub", "model_card_kwargs"], n=1)
        hint = _NOT_SAVED_HERE.get(name) or (f"did you mean {close[0]}?" if close else "")
        raise TypeError(f"save_pretrained got an unknown option {name!r} (it takes model_card_kwargs, and "
                        "push_to_hub=True with push_to_hub's options)" + (f": {hint}" if hint else ""))


def resolve_file(model_id, filename, **hub_kwargs) -> str:
    """`filename` of a local model folder (`~` is the home folder), or downloaded (and cached) from the Hub repo
    `model_id` (always, with `hub_only`)."""
    check_hub_kwargs(hub_kwargs)
    hub_only = hub_kwargs.pop("hub_only", False)
    model_id = os.fspath(model_id)
    if model_id.startswith("~") and not hub_only:
        model_id = os.path.expanduser(model_id)
    if is_local(model_id, hub_only):
        if os.path.isdir(model_id):
            path = os.path.join(model_id, filename)
            if not os.path.isfile(path):
                unfinished = os.path.isdir(os.path.join(model_id, "checkpoints"))  # a run writes its model at the end
                raise ModelNotFoundError(f"{model_id} has no {filename}" + (
                    ": it is a training run that has not finished (it holds checkpoints/ only); run its command "
                    "again with --resume to finish it" if unfinished else ""))
            return path
        if os.path.exists(model_id):
            raise ModelNotFoundError(f"{model_id} is a file, not a model folder (a folder holding {CONFIG_NAME}, "
                                     f"{WEIGHTS_NAME} and {TOKENIZER_NAME})")
        raise ModelNotFoundError(f"{model_id}: no such folder (and, written as a path, it is not a Hugging Face "
                                 "Hub repo id)")
    try:
        validate_repo_id(model_id)
    except HFValidationError:
        raise ModelNotFoundError(f"{model_id!r} is neither an existing folder nor a valid Hugging Face Hub repo id "
                                 "(NAME or OWNER/NAME)") from None
    hub_kwargs = {k: hub_kwargs[k] for k in HUB_KWARGS if hub_kwargs.get(k) is not None}
    offline = hub_offline()
    unreachable = not offline and not hub_kwargs.get("local_files_only") and not hub_reachable()
    if offline or unreachable:  # the cache only: no requests, no retries
        hub_kwargs["local_files_only"] = True
        hub_kwargs.pop("force_download", None)
    revision = hub_kwargs.get("revision")
    where = f"{filename} of the Hugging Face Hub repo {model_id!r}" + (f" at revision {revision!r}" if revision else "")
    try:
        return hf_hub_download(repo_id=model_id, filename=filename, **hub_kwargs)
    except LocalEntryNotFoundError:
        host, port = _hub_address()
        why = ("HF_HUB_OFFLINE is set" if offline else
               f"the Hub could not be reached: no connection to {host}:{port} within {HUB_PROBE_TIMEOUT_S:g} s"
               if unreachable else "local_files_only" if hub_kwargs.get("local_files_only") else
               "the Hub could not be reached; set HF_HUB_OFFLINE=1 to fail at once instead of retrying")
        raise HubUnreachableError(f"{model_id!r} is not a local folder, and {where} is not in the local cache "
                                  f"({why}{_looks_local(model_id, hub_only)})") from None
    except GatedRepoError:
        raise HubRepoNotFoundError(f"the Hub repo {model_id!r} is gated: accept its terms on the Hub and pass "
                                   "token=") from None
    except RepositoryNotFoundError:
        raise HubRepoNotFoundError(f"{model_id!r} is not a local folder, and no such Hugging Face Hub repo exists "
                                   f"(or it is private: pass token=){_looks_local(model_id, hub_only)}") from None
    except RevisionNotFoundError:
        raise ModelNotFoundError(f"the Hub repo {model_id!r} has no revision {revision!r}") from None
    except EntryNotFoundError:
        raise ModelNotFoundError(f"the Hub repo {model_id!r} has no {filename}") from None
    except Exception as err:  # network errors and the like: say which file, keep the cause
        raise HubUnreachableError(f"could not get {where} (is it meant to be a local folder? are you online?"
                                  f"{_looks_local(model_id, hub_only)}): {err}") from err


# ----- config.json -----
def read_json(path) -> dict:
    """A JSON object from `path`; errors name the file (and the line and column of a syntax error)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise ModelLoadError(f"{path}: not UTF-8 text ({_not_utf8(err)}); save it as UTF-8") from None
    except OSError as err:
        raise ModelNotFoundError(f"{path}: {err.strerror or err}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise ModelLoadError(f"{path}: not valid JSON (line {err.lineno}, column {err.colno}: {err.msg}; "
                             "truncated?)") from None
    if not isinstance(data, dict):
        raise ModelLoadError(f"{path}: expected a JSON object {{...}}, got {type(data).__name__}")
    return data


UTF16_MARKS = (b"\xff\xfe", b"\xfe\xff")  # the byte-order marks a UTF-16 file starts with (little, big endian)


def _not_utf8(err: UnicodeDecodeError) -> str:
    """What a file that is not UTF-8 is, as far as its bytes tell: UTF-16 when it starts with that byte-order mark
    (an editor's "Unicode" encoding), else its first bad byte by value and offset ("byte 0xe9 at offset 120")."""
    if err.object[:2] in UTF16_MARKS:
        return "it is UTF-16: it starts with a UTF-16 byte-order mark"
    return f"byte 0x{err.object[err.start]:02x} at offset {err.start}"


def config_from_dict(data: dict, source) -> RobertaConfig:
    """A checked RobertaConfig from a config.json dict; `source` (the file) is named in every error."""
    try:
        return RobertaConfig.from_dict(data)
    except (TypeError, ValueError) as err:
        raise ModelLoadError(f"{source}: {err}") from None


def find_config(model_id, **hub_kwargs) -> tuple[RobertaConfig, str]:
    """(the checked config.json of a model folder or Hub repo, its local path)."""
    path = resolve_file(model_id, CONFIG_NAME, **hub_kwargs)
    return config_from_dict(read_json(path), path), path


def load_config(model_id, **hub_kwargs) -> RobertaConfig:
    """The checked config.json of a model folder or Hub repo."""
    return find_config(model_id, **hub_kwargs)[0]


def task_of(architecture: str) -> str:
    """The task (Hub pipeline tag) of a class ARCHITECTURES names: "fill-mask" or "text-classification"."""
    return ARCHITECTURES[architecture][1]


def _first_architecture(config: dict):
    """The first entry of a config.json's `architectures` as written; None when it lists none."""
    names = config.get("architectures")
    return names[0] if isinstance(names, list) and names else None


def named_architecture(config: dict) -> str | None:
    """The class a config.json's `architectures` names first, XLM-RoBERTa's and CamemBERT's read as the RoBERTa
    class they are (`ALIASES`); None when it names none, or one this package does not load."""
    name = _first_architecture(config)
    name = ALIASES.get(name, name) if isinstance(name, str) else None
    return name if name in ARCHITECTURES else None


def read_architecture(model_id, **hub_kwargs) -> str:
    """The model class config.json names (`named_architecture`; RobertaForMaskedLM when it names none)."""
    path = resolve_file(model_id, CONFIG_NAME, **hub_kwargs)
    return _architecture_of(read_json(path), path)


def _architecture_of(config: dict, path) -> str:
    """`read_architecture` of the config.json dict `config` read from `path`: a ModelLoadError naming the file for
    an architecture this package does not load."""
    name = named_architecture(config) if config.get("architectures") else "RobertaForMaskedLM"
    if name is None:
        raise ModelLoadError(f"{path}: architectures is {config['architectures']!r}; this package loads "
                             f"{list(ARCHITECTURES)}")
    return name


def check_architecture(model_id, config: dict, wanted: str, why: str, advice=None, *, option: str = "",
                       none_is_mlm: bool = False) -> None:
    """The one check, before any weight is read, that the config.json dict `config` is of the class `wanted`: an
    ArchitectureMismatch naming the model as `option` and `model_id` ("--init runs/clf") when it names the other
    class, saying `why` it was wanted ("the probe needs a masked-LM model") and `advice(name)` on where a model of
    class `name` goes ("load it with ...", when given); and one when it names `transformers`' encoder without a
    head (BARE_ENCODERS), which no class here loads whole (it listed the head's tensors as missing), saying how to
    start a classifier from it. A config that names no architecture is a masked LM with `none_is_mlm`
    (`read_architecture`'s rule), else left to the loader, as is one this package does not load."""
    shown = f"{option} {model_id}".lstrip()
    first = _first_architecture(config)
    if first in BARE_ENCODERS:
        raise ArchitectureMismatch(f"{shown} is an encoder without a head ({first}); {why}. Start a classifier from "
                                   "its encoder with RobertaForSequenceClassification.from_pretrained_encoder"
                                   f"({str(model_id)!r})")
    name = "RobertaForMaskedLM" if none_is_mlm and not config.get("architectures") else named_architecture(config)
    if name is not None and name != wanted:
        raise ArchitectureMismatch.of(shown, name, f"{why}: {advice(name)}" if advice else why)


def require_architecture(model_id, wanted: str, why: str, option: str = "", **hub_kwargs) -> str:
    """`read_architecture`, refusing any but `wanted` before a weight is read (`check_architecture`): an
    ArchitectureMismatch naming the model as `option` and `model_id` ("--init runs/clf") and saying `why` ("the
    probe needs a masked-LM model")."""
    path = resolve_file(model_id, CONFIG_NAME, **hub_kwargs)
    config = read_json(path)
    check_architecture(model_id, config, wanted, why, option=option, none_is_mlm=True)
    return _architecture_of(config, path)


# ----- model.safetensors -----
def read_weights(path, device="cpu") -> tuple[dict[str, torch.Tensor], dict[str, str]]:
    """(tensors as stored, metadata) of a safetensors file; a truncated or corrupt file is named, and so are
    weights holding a NaN or an infinite value (`refuse_non_finite`)."""
    try:
        with safe_open(str(path), framework="pt", device=str(device)) as f:
            tensors, metadata = {k: f.get_tensor(k) for k in f.keys()}, dict(f.metadata() or {})
    except (SafetensorError, OSError) as err:
        raise ModelLoadError(f"{path}: not a readable safetensors file (truncated or corrupt?): {err}") from None
    refuse_non_finite(tensors, path)
    return tensors, metadata


def weights_files(model_id, **hub_kwargs) -> tuple[str, list[str]]:
    """(the file to name in messages, the safetensors files to read): model.safetensors, or, where there is none,
    the shards `transformers` writes for a large model (`save_pretrained(max_shard_size=...)`), listed by
    model.safetensors.index.json's weight_map."""
    try:
        path = resolve_file(model_id, WEIGHTS_NAME, **hub_kwargs)
        return path, [path]
    except ModelNotFoundError as missing:
        try:
            index = resolve_file(model_id, INDEX_NAME, **hub_kwargs)
        except ModelNotFoundError:
            pickled = pickled_weights(model_id, **hub_kwargs)
            if not pickled:
                raise missing from None
            where, or_else = model_id, ""
            if not is_local(model_id, hub_kwargs.get("hub_only", False)):
                where = f"the Hub repo {model_id!r}"
                or_else = ("; or, where the Hub's conversion bot opened a pull request adding safetensors weights, "
                           "pass revision=\"refs/pr/N\" (N: that pull request's number)")
            raise ModelNotFoundError(
                f"{where} holds {pickled} but no {WEIGHTS_NAME}: pickled weights are never loaded here, only "
                "safetensors (a pickle can run code). Convert them once with transformers (it writes "
                f"FOLDER/{WEIGHTS_NAME}): import transformers; transformers.{_class_of(model_id, hub_kwargs)}"
                f".from_pretrained({str(model_id)!r}).save_pretrained(\"FOLDER\"){or_else}") from None
    weight_map = read_json(index).get("weight_map")
    if not isinstance(weight_map, dict) or not weight_map or not all(isinstance(f, str) for f in weight_map.values()):
        raise ModelLoadError(f"{index}: expected a weight_map of tensor names to shard files")
    shards = sorted(set(weight_map.values()))
    outside = [f for f in shards if os.path.basename(f) != f or not f.endswith(".safetensors")]
    if outside:
        raise ModelLoadError(f"{index}: {outside[0]!r} is not a .safetensors file beside the index")
    return index, [_indexed_shard(model_id, index, shard, hub_kwargs) for shard in shards]


def _indexed_shard(model_id, index, shard: str, hub_kwargs: dict) -> str:
    """The shard file `shard` that the index names, found as `resolve_file` finds a file; one that is missing
    is said to be named by the index (its name was never typed by the user, who could not tell where it came
    from)."""
    try:
        return resolve_file(model_id, shard, **hub_kwargs)
    except HubUnreachableError:
        raise
    except ModelNotFoundError:
        where = (model_id if is_local(model_id, hub_kwargs.get("hub_only", False))
                 else f"the Hub repo {str(model_id)!r}")
        raise ModelNotFoundError(f"{index} names {shard}, which {where} does not hold (a shard missing from the "
                                 "download or the copy, or an index edited by hand)") from None


def _class_of(model_id, hub_kwargs) -> str:
    """The transformers class that loads `model_id` whole (its config's architecture), for a message."""
    try:
        return read_architecture(model_id, **hub_kwargs)
    except (ModelLoadError, OSError):
        return "AutoModelForMaskedLM"


def pickled_weights(model_id, **hub_kwargs) -> str | None:
    """The pickled weights file (PICKLED_NAMES) a model folder or Hub repo holds, named when refused, never read;
    None when it holds none, or when the Hub is not asked (offline, local_files_only, unreachable)."""
    if is_local(model_id, hub_kwargs.get("hub_only", False)):
        folder = os.path.expanduser(os.fspath(model_id))
        names = os.listdir(folder) if os.path.isdir(folder) else []
    elif hub_offline() or hub_kwargs.get("local_files_only") or not hub_reachable():
        return None
    else:
        try:
            names = list_repo_files(model_id, revision=hub_kwargs.get("revision"), token=hub_kwargs.get("token"))
        except Exception:  # the plain "has no model.safetensors" then, not a second error
            return None
    return next((name for name in PICKLED_NAMES if name in names), None)


def parse_device(device, name: str) -> torch.device:
    """`device` as a torch.device: a name ("cpu", "cuda", "cuda:1") or a torch.device, or as `transformers`'
    pipelines spell it, -1 for the CPU and N for CUDA device N. This package runs on the CPU or a CUDA device
    of this machine: a ValueError names the option (`name`) for anything else ("meta", "mps", "gpu"), and for a
    CUDA device this machine does not have (stricter than `transformers`, which then runs on the CPU)."""
    expected = f"{name} must be 'cpu', 'cuda', 'cuda:N', -1 (the CPU) or N (a CUDA device), got {device!r}"
    if isinstance(device, int) and not isinstance(device, bool):
        device = "cpu" if device == -1 else f"cuda:{device}"
    try:
        parsed = torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        raise ValueError(expected) from None
    if parsed.type not in ("cpu", "cuda"):
        raise ValueError(f"{expected}: this package runs on the CPU or a CUDA device")
    if parsed.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"{name} {str(parsed)!r}: this machine has no CUDA device ('cpu' or -1 for the CPU)")
    if parsed.type == "cuda" and parsed.index is not None and parsed.index >= torch.cuda.device_count():
        raise ValueError(f"{name} {str(parsed)!r}: this machine has {torch.cuda.device_count()} CUDA device(s), "
                         f"cuda:0 to cuda:{torch.cuda.device_count() - 1}")
    return parsed


def _device(map_location) -> torch.device:
    """`map_location` (where a loaded model ends, or `load_weights` reads the tensors to) as a device: the CPU or a
    CUDA device (`parse_device`); safetensors reads to no other (it would call the file corrupt)."""
    return parse_device(map_location, "map_location")


def load_weights(model_id, map_location="cpu", **hub_kwargs) -> tuple[dict[str, torch.Tensor], dict[str, str], str]:
    """(our state dict, the file's metadata, the file) from a checkpoint in `transformers`' layout (one file,
    or shards with their index: then the index is the file named); weights holding a NaN or an infinite value are
    refused, naming their file (`read_weights`)."""
    device = _device(map_location)
    path, files = weights_files(model_id, **hub_kwargs)
    tensors, metadata = {}, {}
    for file in files:
        shard, shard_metadata = read_weights(file, device)
        tensors.update(shard)
        metadata.update(shard_metadata)
    try:
        return from_hf_state_dict(tensors), metadata, path
    except (KeyError, ValueError, RuntimeError) as err:
        raise ModelLoadError(f"{path}: {err}") from None


def refuse_non_finite(tensors: dict[str, torch.Tensor], path) -> None:
    """A ModelLoadError naming the file `path` and its first tensor that holds a NaN or an infinite value: a
    damaged file, or one saved from a run that diverged. Such weights loaded without a word, and answered NaN, or
    (one NaN, which the CPU's fused attention swallows) finite but different answers. Checked once per file
    loaded (5 ms for the shipped MLM's 13M values); a training run checks its own weights as it trains
    (`train.trainer`), never through this."""
    for name, tensor in tensors.items():
        if tensor.is_floating_point() and tensor.element_size() == 1:
            tensor = tensor.float()  # float8: no amax on the CPU
        # the largest magnitude is NaN or infinite when any value is: ten times faster than isfinite().all()
        if tensor.is_floating_point() and tensor.numel() and not torch.isfinite(tensor.abs().amax()):
            count = tensor.numel() - int(torch.isfinite(tensor).sum())
            raise ModelLoadError(f"{path}: {name} holds {count:,} NaN or infinite value{'s' if count > 1 else ''}: "
                                 "the file is damaged or was saved from a run that diverged; copy, export or "
                                 "download it again")


def check_weights(state: dict[str, torch.Tensor], expected: dict[str, tuple], config: RobertaConfig,
                  metadata: dict[str, str], weights_path, config_path) -> None:
    """Refuse weights that do not fit the model `config` builds, before it is built: any tensor whose shape
    differs, and a config whose SHAPELESS_FIELDS differ from the values the weights were saved with.
    `expected`: tensor name -> shape of the model built from `config`. (Missing and unexpected tensors are
    reported by `load_state_dict` itself, see `load_model`.)"""
    wrong = [(name, tuple(state[name].shape), tuple(shape)) for name, shape in expected.items()
             if name in state and tuple(state[name].shape) != tuple(shape)]
    if wrong:
        name, got, want = wrong[0]
        more = (f" ({len(wrong) - 1} more differ: {[w[0] for w in wrong[1:4]]}{' ...' if len(wrong) > 4 else ''})"
                if len(wrong) > 1 else "")
        raise ModelLoadError(f"{weights_path}: {name} has shape {got}, but {config_path} describes a model that "
                             f"needs {want}{more}; the config does not belong to these weights")
    for field in SHAPELESS_FIELDS:
        saved = metadata.get(_META_PREFIX + field)
        if saved is None:
            continue
        value = getattr(config, field)
        try:
            same = type(value)(saved) == value
        except ValueError:
            same = False
        if not same:
            raise ModelLoadError(f"{config_path}: {field} is {value!r}, but {weights_path} was trained with "
                                 f"{saved}; the config does not belong to these weights")


def save_weights(tensors: dict[str, torch.Tensor], path, metadata: dict[str, str]) -> None:
    """`safetensors`' file of `tensors`, byte for byte the same for the same tensors and metadata (safetensors
    writes the metadata in a random order: the same model saved twice was two files to git), readable as any new
    file is (safetensors' save_file creates it owner-only, 0600: an app run by another user could not read it),
    written in one step."""
    write_atomic(path, _sorted_metadata(save(tensors, metadata=metadata)))


def _sorted_metadata(data: bytes) -> bytes:
    """A safetensors file's bytes with its header's metadata keys in sorted order (the header's length kept: the
    same keys and values, spaces after them as safetensors pads it)."""
    length = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + length])
    if "__metadata__" in header:
        header["__metadata__"] = dict(sorted(header["__metadata__"].items()))
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    if len(text) > length:  # never for the same keys and values; then the file is kept as it was written
        return data
    return data[:8] + text.ljust(length) + data[8 + length:]


def local_folder(folder) -> Path:
    """A folder to write to, `~` read as the home folder as `resolve_file` reads it on loading (else a save would
    write into a folder named `~` in the current one)."""
    return Path(folder).expanduser()


def save_model(folder, config: RobertaConfig, architecture: str, state: dict[str, torch.Tensor]) -> None:
    """config.json + model.safetensors (`transformers`' layout, readable by both), each written in one step
    (`roberta.files.write_atomic`): a crash never leaves a half-written file under the final name."""
    folder = local_folder(folder)
    folder.mkdir(parents=True, exist_ok=True)
    metadata = {"format": "pt", **{_META_PREFIX + f: str(getattr(config, f)) for f in SHAPELESS_FIELDS}}
    # config.json first: `PyTorchModelHubMixin.save_pretrained` deletes it before it calls us, so a weights file a
    # full disk stops would otherwise leave the folder (a training run's, which its checkpoints export with) without one
    save_config(folder, config, architecture)
    save_weights(to_hf_state_dict(state), folder / WEIGHTS_NAME, metadata)


def save_config(folder, config: RobertaConfig, architecture: str) -> None:
    """config.json alone (`transformers`' field names), written in one step (`roberta.files.write_atomic`)."""
    folder = local_folder(folder)
    folder.mkdir(parents=True, exist_ok=True)
    write_atomic(folder / CONFIG_NAME, json.dumps(config.to_hf_dict(architecture), indent=2, sort_keys=True) + "\n")


# ----- building a model from the files -----
def load_state_dict(model_id, map_location="cpu", **hub_kwargs) -> dict[str, torch.Tensor]:
    """Our state dict from a checkpoint in `transformers`' layout (safetensors only, never pickle)."""
    return load_weights(model_id, map_location, **hub_kwargs)[0]


def expected_shapes(cls, config: RobertaConfig) -> dict[str, tuple]:
    """Tensor name -> shape of the `cls` model `config` describes (built on the meta device: no memory used;
    not initialised: `_NoInit`)."""
    with torch.device("meta"), _NoInit():
        return {name: tuple(t.shape) for name, t in cls(config).state_dict().items()}


class _NoInit(torch.overrides.TorchFunctionMode):
    """Initialisation left undone: a `torch.nn.init` function or a tensor's random fill returns its tensor as it
    is. Shapes need no values, and on the meta device `normal_` runs a Python decomposition whose first call
    imports torch._dynamo (about a second of the app's start-up)."""

    RANDOM_FILLS = (torch.Tensor.normal_, torch.Tensor.uniform_)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if getattr(func, "__module__", None) == "torch.nn.init" or func in self.RANDOM_FILLS:
            return args[0] if args else kwargs["tensor"]
        return func(*args, **(kwargs or {}))


def load_model(cls, model_id, config=None, map_location="cpu", strict=True, *, why=None, advice=None, **hub_kwargs):
    """A `cls` model (RobertaForMaskedLM, ...) with the weights of a folder or Hub repo, in eval mode, on the
    device `map_location` names. `config`: a RobertaConfig or a dict instead of the folder's config.json. Every
    file is checked before the model is built, so a bad config allocates nothing. `strict=False` loads what fits
    (a folder of another head, or missing tensors, left as initialised) with a `PartialLoadWarning` naming them.
    `why`, `advice`: how a folder of the other head is refused (`refuse_other_head`; a pipeline's words)."""
    device = _device(map_location)
    if isinstance(config, RobertaConfig):
        config_path = "the given config"
    elif config is not None:
        config, config_path = config_from_dict(config, "the given config"), "the given config"
    else:
        config_path = resolve_file(model_id, CONFIG_NAME, **hub_kwargs)
        data = read_json(config_path)
        config = config_from_dict(data, config_path)
        if strict:
            refuse_other_head(cls, model_id, data, why, advice)
    # read to the CPU, where the model is built, then moved to `device` once (as PyTorchModelHubMixin does): read
    # to a GPU first, every tensor would go there and back
    state, metadata, weights_path = load_weights(model_id, "cpu", **hub_kwargs)
    check_weights(state, expected_shapes(cls, config), config, metadata, weights_path, config_path)
    model = cls(config)
    result = model.load_state_dict(state, strict=False)  # the strict error names 5 of each, the warning all
    missing, unexpected = result.missing_keys, result.unexpected_keys
    if strict and (missing or unexpected):
        raise ModelLoadError(f"{weights_path} does not fit {cls.__name__}: missing keys {_some(missing)}, "
                             f"unexpected keys {_some(unexpected)}")
    if missing or unexpected:
        warnings.warn(f"{weights_path} does not fit {cls.__name__} (loaded with strict=False): missing tensors, "
                      f"newly initialised: {missing}; unexpected tensors, not used: {unexpected}", PartialLoadWarning,
                      stacklevel=3)
    return model.to(device).eval()


class PartialLoadWarning(UserWarning):
    """A model loaded with strict=False whose checkpoint lacked some of its tensors (left as initialised, random
    for a head) or held others (not used)."""


def _some(names: list[str]) -> str:
    """The first 5 of `names`, for a message."""
    return f"{names[:5]}{' ...' if len(names) > 5 else ''}"


def refuse_other_head(cls, model_id, config: dict, why: str | None = None, advice=None) -> None:
    """`check_architecture` for a `cls` model (RobertaForMaskedLM, ...) loaded from `model_id`, whose config.json
    dict is `config` (a classifier's folder given to RobertaForMaskedLM.from_pretrained listed the missing and
    unexpected tensors). `why` and `advice`: the caller's words (a pipeline's); None: the class's own ("load it
    with RobertaForSequenceClassification.from_pretrained")."""
    if why is None:
        why = f"{cls.__name__} needs {ARCHITECTURES[cls.architecture][0]}"
        also = (f", or start fine-tuning from its encoder with {cls.__name__}.from_pretrained_encoder"
                if cls.architecture == "RobertaForSequenceClassification" else "")

        def advice(name: str) -> str:
            return f"load it with {name}.from_pretrained{also}"
    check_architecture(model_id, config, cls.architecture, why, advice)


# The config fields that belong to a classifier's head, and their values for a new head (`load_encoder`)
FRESH_HEAD_FIELDS = {"calibration_temperature": 1.0, "problem_type": None}


def load_encoder(cls, model_id, map_location="cpu", **options):
    """A `cls` model whose encoder (`roberta.*`) comes from a checkpoint and whose head is freshly initialised
    (the start of fine-tuning), with its head's config fields reset too (FRESH_HEAD_FIELDS: no calibration, the
    problem type read from the labels), on the device `map_location` names. `options`: HUB_KWARGS (revision,
    token, ...) for the files, the rest (id2label, hidden_dropout_prob, calibration_temperature, ...) change the
    checkpoint's config."""
    device = _device(map_location)
    hub_kwargs = {k: v for k, v in options.items() if k in HUB_KWARGS}
    config_overrides = {k: v for k, v in options.items() if k not in HUB_KWARGS}
    config, config_path = find_config(model_id, **hub_kwargs)
    fields = {f.name for f in dataclasses.fields(RobertaConfig)} | {"num_labels"}
    unknown = sorted(set(config_overrides) - fields)
    if unknown:
        raise TypeError(f"unknown option {unknown[0]!r}: neither a config field nor one of {', '.join(HUB_KWARGS)}")
    # the head is new: a classifier checkpoint's temperature was fitted to its own head, and its problem type
    # (a multi-label or a regression model's) is not the new head's; both are reset unless given here
    for name, fresh in FRESH_HEAD_FIELDS.items():
        config_overrides.setdefault(name, fresh)
    if "num_labels" in config_overrides:  # transformers' spelling: labels LABEL_0, LABEL_1, ... unless named
        num_labels = config_overrides.pop("num_labels")
        named = config_overrides.setdefault("id2label", default_labels(num_labels))
        if len(named) != num_labels:
            raise ValueError(f"num_labels is {num_labels} but id2label names {len(named)} labels: give one of them")
    config = dataclasses.replace(config, **config_overrides)  # checked again, like a config.json
    state, metadata, weights_path = load_weights(model_id, "cpu", **hub_kwargs)  # moved once, as in load_model
    state = {k: v for k, v in state.items() if k.startswith("roberta.")}
    encoder = {k: v for k, v in expected_shapes(cls, config).items() if k.startswith("roberta.")}
    check_weights(state, encoder, config, metadata, weights_path, config_path)
    model = cls(config)
    missing = [k for k in model.load_state_dict(state, strict=False).missing_keys if k.startswith("roberta.")]
    if missing:
        raise ModelLoadError(f"{weights_path}: the checkpoint lacks encoder weights {missing[:5]}")
    return model.to(device)


# ----- the state-dict mapping: ours <-> transformers' layout -----
# Our modules carry Hugging Face's names, so a state dict maps one to one, with three differences:
# - RoBERTa has no segments. `transformers` keeps a token-type embedding table anyway and adds row 0 to
#   every token; we fold that row into the position embeddings (same function) and, going back, write an
#   all-zero one-row table. Ours -> transformers -> ours is therefore exact.
# - `transformers`' state dict repeats the tied decoder (`lm_head.decoder.weight`/`.bias`); we drop the copies.
# - Unused weights of some Hub checkpoints (the pooler, position-id buffers) are dropped.
TOKEN_TYPE_KEY = "roberta.embeddings.token_type_embeddings.weight"
POSITION_KEY = "roberta.embeddings.position_embeddings.weight"
WORD_KEY = "roberta.embeddings.word_embeddings.weight"
TIED_COPIES = {"lm_head.decoder.weight": WORD_KEY, "lm_head.decoder.bias": "lm_head.bias"}
UNUSED_PREFIXES = ("roberta.pooler.", "roberta.embeddings.position_ids", "roberta.embeddings.token_type_ids")


def from_hf_state_dict(hf_state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """A `transformers` RoBERTa state dict (or saved checkpoint) -> ours. A bare `RobertaModel`'s checkpoint
    names its tensors without the `roberta.` prefix (`embeddings.word_embeddings.weight`): they get it."""
    if not any(k.startswith("roberta.") for k in hf_state) and any(k.startswith("embeddings.") for k in hf_state):
        hf_state = {f"roberta.{k}": v for k, v in hf_state.items()}
    state = {k: v for k, v in hf_state.items() if not k.startswith(UNUSED_PREFIXES)}
    for copy, original in TIED_COPIES.items():
        if copy in state and original in state:
            if not torch.equal(state[copy], state[original]):
                raise ValueError(f"{copy} differs from {original}: this package needs tied decoder weights")
            del state[copy]
        elif copy in state:  # a checkpoint that stored only the decoder copy
            state[original] = state.pop(copy)
    if TOKEN_TYPE_KEY in state:
        token_type = state.pop(TOKEN_TYPE_KEY)  # (type_vocab_size, H); RoBERTa always uses row 0
        # added in float32 (the model computes in float32), as a float32 `transformers` model adds them: a float16
        # sum would be rounded
        state[POSITION_KEY] = state[POSITION_KEY].float() + token_type[0].float()
    return state


def to_hf_state_dict(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Our state dict -> the layout `transformers` saves (contiguous tensors, zero token-type row)."""
    hf_state = {k: v.detach().contiguous() for k, v in state.items()}
    if POSITION_KEY in hf_state:
        position = hf_state[POSITION_KEY]
        hf_state[TOKEN_TYPE_KEY] = torch.zeros(1, position.shape[1], dtype=position.dtype, device=position.device)
    return hf_state
