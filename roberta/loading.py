"""Building a model from a checkpoint: `load_model` (what `from_pretrained` calls), `load_encoder` (a classifier
that starts fine-tuning from a checkpoint's encoder), and the checks that a folder holds the model class wanted.

Every file is checked before the model is built (`roberta.checkpoint`), so a bad config allocates nothing; a folder
of another class is an `ArchitectureMismatch` (a `roberta.hub.ModelLoadError`) that says which class loads it.
"""
from __future__ import annotations

import dataclasses
import warnings

import torch

from .checkpoint import (ARCHITECTURES, ArchitectureMismatch, architecture_named, architecture_of, check_weights,
                         config_from_dict, find_config, load_weights, read_config_json)
from .config import RobertaConfig, default_labels
from .devices import map_location_device
from .hub import HUB_KWARGS, ModelLoadError


# ----- the model class a folder holds -----
def check_architecture(model_id, config: dict, wanted: str, why: str, advice=None, *, option: str = "",
                       none_is_mlm: bool = False) -> None:
    """The one check, before any weight is read, that the config.json dict `config` is of the class `wanted`: an
    ArchitectureMismatch naming the model as `option` and `model_id` ("--init runs/clf") when it names the other
    class, saying `why` it was wanted ("the probe needs a masked-LM model") and `advice(name)` on where a model of
    class `name` goes ("load it with ...", when given); and one when it names `transformers`' encoder without a
    head (`checkpoint.BARE_ENCODERS`), saying how to start a classifier from it. The class is read as every reader
    reads it (`checkpoint.architecture_named`: a config that names none is a masked LM with `none_is_mlm`, else
    left to the loader, as is one this package does not load)."""
    name = architecture_named(model_id, config, why, option=option, none_is_mlm=none_is_mlm)
    if name is not None and name != wanted:
        shown = f"{option} {model_id}".lstrip()
        raise ArchitectureMismatch.of(shown, name, f"{why}: {advice(name)}" if advice else why)


def require_architecture(model_id, wanted: str, why: str, option: str = "", **hub_kwargs) -> str:
    """`read_architecture`, refusing any but `wanted` before a weight is read (`check_architecture`): an
    ArchitectureMismatch naming the model as `option` and `model_id` ("--init runs/clf") and saying `why` ("the
    probe needs a masked-LM model")."""
    config, path = read_config_json(model_id, **hub_kwargs)
    check_architecture(model_id, config, wanted, why, option=option, none_is_mlm=True)
    return architecture_of(model_id, config, path)


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


# ----- building a model from the files -----
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
    device = map_location_device(map_location)
    if config is not None and not isinstance(config, (RobertaConfig, dict)):  # was "'int' object has no .get"
        raise TypeError(f"config must be a RobertaConfig or a dict of its fields (None: the folder's config.json), "
                        f"got {type(config).__name__}")
    if isinstance(config, RobertaConfig):
        config_path = "the given config"
    elif config is not None:
        config, config_path = config_from_dict(config, "the given config"), "the given config"
    else:
        data, config_path = read_config_json(model_id, **hub_kwargs)
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


# The config fields that belong to a classifier's head, and their values for a new head (`load_encoder`)
FRESH_HEAD_FIELDS = {"calibration_temperature": 1.0, "problem_type": None}


def load_encoder(cls, model_id, map_location="cpu", **options):
    """A `cls` model whose encoder (`roberta.*`) comes from a checkpoint and whose head is freshly initialised
    (the start of fine-tuning), with its head's config fields reset too (FRESH_HEAD_FIELDS: no calibration, the
    problem type read from the labels), on the device `map_location` names. `options`: HUB_KWARGS (revision,
    token, ...) for the files, the rest (id2label, hidden_dropout_prob, calibration_temperature, ...) change the
    checkpoint's config."""
    device = map_location_device(map_location)
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
