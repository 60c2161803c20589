"""Finding a model's files: in a local folder, or in a Hugging Face Hub repo (downloaded and cached).

    config.json        read and checked by `roberta.checkpoint`
    model.safetensors  (or shards listed by model.safetensors.index.json) read by `roberta.checkpoint`
    tokenizer.json     read by `roberta.tokenizer.load_tokenizer`

`resolve_file` gives the local path of one of them. A folder, file or Hub repo that cannot be found is a
`ModelNotFoundError` (a FileNotFoundError, and a `ModelLoadError`, the ValueError every failure to load is, whose
message names the file); of those, a Hub repo that cannot be read is a `HubRepoNotFoundError`, and a Hub file that
could not be fetched (offline, no network) a `HubUnreachableError`. `HF_HUB_OFFLINE=1` is honoured: a Hub id is then
looked up in the local cache only, without network requests or retries; without it, the Hub's host is probed first
(`hub_reachable`). `hub_only=True` reads a model id as a Hub repo id whatever the disk holds (a server loading the ids
its visitors type: no local file is read, nor is its existence told).
"""
from __future__ import annotations

import difflib
import math
import os
import socket
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

from huggingface_hub import constants, hf_hub_download, list_repo_files
from huggingface_hub.errors import (EntryNotFoundError, GatedRepoError, HFValidationError, LocalEntryNotFoundError,
                                    RepositoryNotFoundError, RevisionNotFoundError)
from huggingface_hub.utils import validate_repo_id

CONFIG_NAME = "config.json"
WEIGHTS_NAME = "model.safetensors"
INDEX_NAME = "model.safetensors.index.json"  # a sharded checkpoint's list of shards
PICKLED_NAMES = ("pytorch_model.bin", "pytorch_model.bin.index.json")  # named when refused, never read
TOKENIZER_NAME = "tokenizer.json"
HUB_KWARGS = ("revision", "cache_dir", "force_download", "token", "local_files_only", "hub_only")
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


# ----- local or Hub -----
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


def local_folder(folder) -> Path:
    """A folder to write to, `~` read as the home folder as `resolve_file` reads it on loading (else a save would
    write into a folder named `~` in the current one)."""
    return Path(folder).expanduser()


# ----- can the Hub be reached -----
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


# ----- the Hub's options -----
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


# ----- finding a file -----
def resolve_file(model_id, filename, **hub_kwargs) -> str:
    """`filename` of a local model folder (`~` is the home folder), or downloaded (and cached) from the Hub repo
    `model_id` (always, with `hub_only`)."""
    check_hub_kwargs(hub_kwargs)
    hub_only = hub_kwargs.pop("hub_only", False)
    model_id = os.fspath(model_id)
    if model_id.startswith("~") and not hub_only:
        model_id = os.path.expanduser(model_id)
    if is_local(model_id, hub_only):
        return _local_file(model_id, filename)
    return _hub_file(model_id, filename, hub_only, hub_kwargs)


def _local_file(model_id: str, filename: str) -> str:
    """`filename` of the local model folder `model_id`; a ModelNotFoundError says what is missing: the file (in a
    training run that has not finished, why), or the folder (a file, or nothing, at that path)."""
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


def _hub_file(model_id: str, filename: str, hub_only: bool, hub_kwargs: dict) -> str:
    """`filename` of the Hub repo `model_id`, downloaded and cached: from the cache only (no requests, no retries)
    when HF_HUB_OFFLINE is set or the Hub cannot be reached (`hub_reachable`). Each of the Hub's errors is said
    as a ModelNotFoundError naming the repo and the file (a HubRepoNotFoundError, a HubUnreachableError)."""
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
