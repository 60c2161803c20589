"""A model's checkpoint: config.json and model.safetensors read, checked and written, in `transformers`' layout.

    config.json        RobertaConfig (checked field by field: types, ranges, ids within the vocabulary); its
                       `architectures` names the model class (ARCHITECTURES), as `architecture_named` reads it
    model.safetensors  the weights (safetensors only: nothing is ever unpickled), every value finite (no NaN or
                       infinity), or the shards `transformers` writes for a large model, with their index

The files are found by `roberta.hub.resolve_file`; every failure to read one is a `ModelLoadError` (a ValueError)
whose message names the file, and the field or tensor when there is one. The state-dict mapping to and from
`transformers`' layout is at the end. `roberta.loading` builds a model from these.
"""
from __future__ import annotations

import dataclasses
import difflib
import inspect
import json
import os
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import save

from .config import RobertaConfig
from .devices import map_location_device
from .files import write_atomic
from .hub import (CONFIG_NAME, INDEX_NAME, WEIGHTS_NAME, HubUnreachableError, ModelLoadError, ModelNotFoundError,
                  is_local, local_folder, pickled_weights, resolve_file)

# The model classes this package loads, the one place that names them: the name config.json's `architectures`
# gives -> (what it is, in messages; its task: the Hub's pipeline tag and `roberta.pipeline`'s). The classes in
# model.py take their tag from here (tests/test_model.py checks that each class is listed).
ARCHITECTURES = {"RobertaForMaskedLM": ("a masked-LM model", "fill-mask"),
                 "RobertaForSequenceClassification": ("a classifier", "text-classification")}
# the same architecture and tensor names under RoBERTa's multilingual and French re-trainings' class names
ALIASES = {f"{family}{head}": f"Roberta{head}" for family in ("XLMRoberta", "Camembert")
           for head in ("ForMaskedLM", "ForSequenceClassification")}
# Config fields the weights' shapes do not reveal (4 heads or 8 give the same matrices). They are written into
# model.safetensors' metadata and compared with config.json at load; files saved by `transformers` (or by this
# code before it wrote them) do not carry them, and then an edited value of these fields cannot be detected.
SHAPELESS_FIELDS = ("num_attention_heads", "pad_token_id", "layer_norm_eps")
_META_PREFIX = "config."
# `transformers`' encoder without a head (its bare RobertaModel), under the three families' names: its folder gives
# a classifier its encoder (RobertaForSequenceClassification.from_pretrained_encoder), and is no model of ours
BARE_ENCODERS = ("RobertaModel", "XLMRobertaModel", "CamembertModel")


class ArchitectureMismatch(ModelLoadError):
    """A model of another kind than the one needed (a classifier where a masked LM is needed, a bare encoder)."""

    @classmethod
    def of(cls, shown: str, architecture: str, why: str) -> "ArchitectureMismatch":
        """Worded from ARCHITECTURES: "`shown` is a classifier (RobertaForSequenceClassification); `why`"."""
        return cls(f"{shown} is {ARCHITECTURES[architecture][0]} ({architecture}); {why}")


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


def read_config_json(model_id, **hub_kwargs) -> tuple[dict, str]:
    """(the config.json of a model folder or Hub repo as read, unchecked; its local path)."""
    path = resolve_file(model_id, CONFIG_NAME, **hub_kwargs)
    return read_json(path), path


def find_config(model_id, **hub_kwargs) -> tuple[RobertaConfig, str]:
    """(the checked config.json of a model folder or Hub repo, its local path)."""
    data, path = read_config_json(model_id, **hub_kwargs)
    return config_from_dict(data, path), path


def load_config(model_id, **hub_kwargs) -> RobertaConfig:
    """The checked config.json of a model folder or Hub repo."""
    return find_config(model_id, **hub_kwargs)[0]


def task_of(architecture: str) -> str:
    """The task (Hub pipeline tag) of a class ARCHITECTURES names: "fill-mask" or "text-classification"."""
    return ARCHITECTURES[architecture][1]


def first_architecture(config: dict):
    """The first entry of a config.json's `architectures` as written; None when it lists none."""
    names = config.get("architectures")
    return names[0] if isinstance(names, list) and names else None


def named_architecture(config: dict) -> str | None:
    """The class a config.json's `architectures` names first, XLM-RoBERTa's and CamemBERT's read as the RoBERTa
    class they are (`ALIASES`); None when it names none, or one this package does not load."""
    name = first_architecture(config)
    name = ALIASES.get(name, name) if isinstance(name, str) else None
    return name if name in ARCHITECTURES else None


def architecture_named(model_id, config: dict, why: str, *, option: str = "", none_is_mlm: bool = False,
                       encoder_ok: bool = False) -> str | None:
    """The class the config.json dict `config` of `model_id` names (`named_architecture`): the one rule every
    reader of `architectures` follows. A config that names none is a masked LM with `none_is_mlm` (the scripts'
    rule, `read_architecture`'s), else None (left to the loader, which loads it as the class it is), as is one this
    package does not load. `transformers`' encoder without a head (BARE_ENCODERS), which no class here loads whole
    (it listed the head's tensors as missing), is an ArchitectureMismatch naming the model as `option` and
    `model_id` ("--init runs/bare"), saying `why` it was wanted and how to start a classifier from it; with
    `encoder_ok` (where its encoder is all that is wanted), its name as written."""
    first = first_architecture(config)
    if first in BARE_ENCODERS:
        if encoder_ok:
            return first
        raise ArchitectureMismatch(f"{option} {model_id}".lstrip() + f" is an encoder without a head ({first}); "
                                   f"{why}. Start a classifier from its encoder with RobertaForSequenceClassification"
                                   f".from_pretrained_encoder({str(model_id)!r})")
    if none_is_mlm and not config.get("architectures"):
        return "RobertaForMaskedLM"
    return named_architecture(config)


def read_architecture(model_id, *, encoder_ok: bool = False, **hub_kwargs) -> str:
    """The model class config.json names (`architecture_of`; RobertaForMaskedLM when it names none)."""
    return architecture_of(model_id, *read_config_json(model_id, **hub_kwargs), encoder_ok=encoder_ok)


def architecture_of(model_id, config: dict, path, encoder_ok: bool = False) -> str:
    """`read_architecture` of the config.json dict `config` of `model_id`, read from `path` (`architecture_named`):
    an ArchitectureMismatch pointing to from_pretrained_encoder for a bare encoder (unless `encoder_ok`: its
    name), a ModelLoadError naming the file for an architecture this package does not load."""
    name = architecture_named(model_id, config, f"this package loads {' or '.join(ARCHITECTURES)}, each with its "
                              "head", none_is_mlm=True, encoder_ok=encoder_ok)
    if name is None:
        raise ModelLoadError(f"{path}: architectures is {config['architectures']!r}; this package loads "
                             f"{list(ARCHITECTURES)}")
    return name


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
    """The transformers class that loads `model_id` whole (its config's architecture, a bare encoder's RobertaModel as
    written: no head to add), for a message; AutoModelForMaskedLM where its config cannot say."""
    try:
        return read_architecture(model_id, encoder_ok=True, **hub_kwargs)
    except (ModelLoadError, OSError):
        return "AutoModelForMaskedLM"


def load_weights(model_id, map_location="cpu", **hub_kwargs) -> tuple[dict[str, torch.Tensor], dict[str, str], str]:
    """(our state dict, the file's metadata, the file) from a checkpoint in `transformers`' layout (one file,
    or shards with their index: then the index is the file named); weights holding a NaN or an infinite value are
    refused, naming their file (`read_weights`)."""
    device = map_location_device(map_location)
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


def load_state_dict(model_id, map_location="cpu", **hub_kwargs) -> dict[str, torch.Tensor]:
    """Our state dict from a checkpoint in `transformers`' layout (safetensors only, never pickle)."""
    return load_weights(model_id, map_location, **hub_kwargs)[0]


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


# ----- writing -----
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
