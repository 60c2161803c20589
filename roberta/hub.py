"""A model's files: find them (a local folder or a Hugging Face Hub repo), read and check them, write them.

    config.json        RobertaConfig (checked field by field: types, ranges, ids within the vocabulary)
    model.safetensors  the weights in `transformers`' layout (safetensors only: nothing is ever unpickled)
    tokenizer.json     read by `roberta.tokenizer.load_tokenizer`

Every failure to load is a `ModelLoadError` (a ValueError) whose message names the file, and the field or
tensor when there is one; a folder, file or Hub repo that cannot be found is a `ModelNotFoundError` (also a
FileNotFoundError). `HF_HUB_OFFLINE=1` is honoured: a Hub id is then looked up in the local cache only,
without network requests or retries.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import torch
from huggingface_hub import constants, hf_hub_download
from huggingface_hub.errors import (EntryNotFoundError, GatedRepoError, HFValidationError, LocalEntryNotFoundError,
                                    RepositoryNotFoundError, RevisionNotFoundError)
from huggingface_hub.utils import validate_repo_id
from safetensors import SafetensorError, safe_open
from safetensors.torch import save_file

from .config import RobertaConfig
from .convert import from_hf_state_dict

CONFIG_NAME = "config.json"
WEIGHTS_NAME = "model.safetensors"
TOKENIZER_NAME = "tokenizer.json"
HUB_KWARGS = ("revision", "cache_dir", "force_download", "token", "local_files_only")
# Config fields the weights' shapes do not reveal (4 heads or 8 give the same matrices). They are written into
# model.safetensors' metadata and compared with config.json at load; files saved before (or by `transformers`)
# do not carry them, and then an edited value of these fields cannot be detected.
SHAPELESS_FIELDS = ("num_attention_heads", "pad_token_id", "layer_norm_eps")
_META_PREFIX = "config."


class ModelLoadError(ValueError):
    """A model, config or tokenizer file that cannot be loaded; the message names the file and the problem."""


class ModelNotFoundError(ModelLoadError, FileNotFoundError):
    """The model folder, one of its files, or the Hub repo does not exist or cannot be reached."""


# ----- finding files -----
def is_local(model_id) -> bool:
    """Whether `model_id` means a local path (it exists, or looks like a path) rather than a Hub repo id."""
    model_id = os.fspath(model_id)
    return os.path.exists(model_id) or model_id.startswith((".", "/", "~")) or model_id.count("/") > 1


def hub_offline() -> bool:
    """HF_HUB_OFFLINE is set (read now, so that setting it after `huggingface_hub` was imported counts too)."""
    flag = os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in {"1", "ON", "YES", "TRUE"}
    return flag or constants.is_offline_mode()


def resolve_file(model_id, filename, **hub_kwargs) -> str:
    """`filename` of a local model folder, or downloaded (and cached) from the Hub repo `model_id`."""
    model_id = os.fspath(model_id)
    if is_local(model_id):
        if os.path.isdir(model_id):
            path = os.path.join(model_id, filename)
            if not os.path.isfile(path):
                raise ModelNotFoundError(f"{model_id} has no {filename}")
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
    if offline:
        hub_kwargs["local_files_only"] = True
    where = f"{filename} of the Hugging Face Hub repo {model_id!r}"
    try:
        return hf_hub_download(repo_id=model_id, filename=filename, **hub_kwargs)
    except LocalEntryNotFoundError:
        why = ("HF_HUB_OFFLINE is set" if offline else "local_files_only" if hub_kwargs.get("local_files_only")
               else "the Hub could not be reached; set HF_HUB_OFFLINE=1 to fail at once instead of retrying")
        raise ModelNotFoundError(f"{model_id!r} is not a local folder, and {where} is not in the local cache "
                                 f"({why})") from None
    except GatedRepoError:
        raise ModelNotFoundError(f"the Hub repo {model_id!r} is gated: accept its terms on the Hub and pass token=") from None
    except RepositoryNotFoundError:
        raise ModelNotFoundError(f"{model_id!r} is not a local folder, and no such Hugging Face Hub repo exists "
                                 "(or it is private: pass token=)") from None
    except RevisionNotFoundError:
        raise ModelNotFoundError(f"the Hub repo {model_id!r} has no revision {hub_kwargs.get('revision')!r}") from None
    except EntryNotFoundError:
        raise ModelNotFoundError(f"the Hub repo {model_id!r} has no {filename}") from None
    except Exception as err:  # network errors and the like: say which file, keep the cause
        raise ModelNotFoundError(f"could not get {where} (is it meant to be a local folder? are you online?): "
                                 f"{err}") from err


# ----- config.json -----
def read_json(path) -> dict:
    """A JSON object from `path`; errors name the file (and the line and column of a syntax error)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise ModelLoadError(f"{path}: not UTF-8 text (byte {err.start})") from None
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


def config_from_dict(data: dict, source) -> RobertaConfig:
    """A checked RobertaConfig from a config.json dict; `source` (the file) is named in every error."""
    position = data.get("position_embedding_type", "absolute")
    if position != "absolute":
        raise ModelLoadError(f"{source}: position_embedding_type {position!r} is not supported (only 'absolute')")
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


# ----- model.safetensors -----
def read_weights(path, device="cpu") -> tuple[dict[str, torch.Tensor], dict[str, str]]:
    """(tensors as stored, metadata) of a safetensors file; a truncated or corrupt file is named."""
    try:
        with safe_open(str(path), framework="pt", device=str(device)) as f:
            return {k: f.get_tensor(k) for k in f.keys()}, dict(f.metadata() or {})
    except (SafetensorError, OSError) as err:
        raise ModelLoadError(f"{path}: not a readable safetensors file (truncated or corrupt?): {err}") from None


def load_weights(model_id, map_location="cpu", **hub_kwargs) -> tuple[dict[str, torch.Tensor], dict[str, str], str]:
    """(our state dict, the file's metadata, the file) from a checkpoint in `transformers`' layout."""
    path = resolve_file(model_id, WEIGHTS_NAME, **hub_kwargs)
    tensors, metadata = read_weights(path, map_location)
    try:
        return from_hf_state_dict(tensors), metadata, path
    except (KeyError, ValueError, RuntimeError) as err:
        raise ModelLoadError(f"{path}: {err}") from None


def check_weights(state: dict[str, torch.Tensor], expected: dict[str, tuple], config: RobertaConfig,
                  metadata: dict[str, str], weights_path, config_path, model_name: str, strict: bool = True) -> None:
    """Refuse weights that do not fit the model `config` builds: missing or unexpected tensors (when
    `strict`), any tensor whose shape differs, and a config whose SHAPELESS_FIELDS differ from the values the
    weights were saved with. `expected`: tensor name -> shape of the model built from `config`."""
    missing, unexpected = sorted(expected.keys() - state.keys()), sorted(state.keys() - expected.keys())
    if strict and (missing or unexpected):
        def some(names):
            return f"{names[:5]}{' ...' if len(names) > 5 else ''}"
        raise ModelLoadError(f"{weights_path} does not fit {model_name}: missing keys {some(missing)}, "
                             f"unexpected keys {some(unexpected)}")
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


def save_model(folder, config: RobertaConfig, architecture: str, state: dict[str, torch.Tensor]) -> None:
    """config.json + model.safetensors (`transformers`' layout, readable by both), each written to a temporary
    file and renamed into place, so that a crash never leaves a half-written file under the final name."""
    from .convert import to_hf_state_dict

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    metadata = {"format": "pt", **{_META_PREFIX + f: str(getattr(config, f)) for f in SHAPELESS_FIELDS}}
    tmp = folder / f".{WEIGHTS_NAME}.tmp"
    save_file(to_hf_state_dict(state), str(tmp), metadata=metadata)
    os.replace(tmp, folder / WEIGHTS_NAME)
    tmp = folder / f".{CONFIG_NAME}.tmp"
    tmp.write_text(json.dumps(config.to_hf_dict(architecture), indent=2, sort_keys=True) + "\n")
    os.replace(tmp, folder / CONFIG_NAME)
