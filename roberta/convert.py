"""Move a model between this package and `transformers`' RoBERTa classes (same weights, same function).

Same function given an `attention_mask`. Called without one, our models do not attend to <pad> tokens, where
`transformers` attends to every token: the outputs of a padded row then differ (pass the mask to compare).

The state-dict mapping itself (the folded token-type row, the tied decoder copies) is `roberta.checkpoint`'s,
the one `save_pretrained`/`from_pretrained` use. `transformers` is imported only when these are called.
"""
from . import model as ours
from .checkpoint import ALIASES, ARCHITECTURES, TIED_COPIES, from_hf_state_dict, to_hf_state_dict
from .config import RobertaConfig

# the version tested (requirements-test.txt pins it; pyproject.toml's `convert` extra too)
INSTALL_TRANSFORMERS = "pip install transformers==5.23.0"


def import_transformers():
    """`transformers`, or one line that says how to install it: the package's core and the app do not need it,
    so requirements.txt leaves it out."""
    try:
        import transformers
    except ModuleNotFoundError as missing:
        if missing.name != "transformers":  # installed, but one of its own imports failed: its error says which
            raise
        raise ImportError(f"roberta.convert needs transformers, which is not installed: {INSTALL_TRANSFORMERS}"
                          ) from None
    return transformers


def _placed_like(converted, source):
    """`converted` on the device and in the dtype of `source`'s weights: a converted CUDA or bfloat16 model stays
    one (a class's constructor builds a float32 CPU model, and load_state_dict copies values into it)."""
    weight = next(source.parameters())
    return converted.to(device=weight.device, dtype=weight.dtype)


def to_transformers(model):
    """Our RobertaForMaskedLM / RobertaForSequenceClassification -> the `transformers` class of the same name, on
    the same device and in the same dtype."""
    if not isinstance(model, (ours.RobertaForMaskedLM, ours.RobertaForSequenceClassification)):
        # a bare encoder was "'RobertaModel' object has no attribute 'architecture'"
        hint = (": convert the model that holds it (its .roberta is the encoder)"
                if isinstance(model, ours.RobertaModel) else "")
        raise TypeError(f"to_transformers takes this package's RobertaForMaskedLM or RobertaForSequenceClassification,"
                        f" got {type(model).__module__}.{type(model).__name__}{hint}")
    transformers = import_transformers()
    hf_config = transformers.RobertaConfig(**model.config.to_hf_dict(model.architecture))
    hf_model = getattr(transformers, model.architecture)(hf_config)
    hf_state = to_hf_state_dict(model.state_dict())
    for copy, original in TIED_COPIES.items():
        if copy in hf_model.state_dict():
            hf_state[copy] = hf_state[original]
    hf_model.load_state_dict(hf_state, strict=True)
    hf_model = _placed_like(hf_model, model)
    return hf_model.eval() if not model.training else hf_model


def from_transformers(hf_model):
    """A `transformers` RobertaForMaskedLM / RobertaForSequenceClassification -> ours; XLM-RoBERTa's and
    CamemBERT's classes too, which are the same architecture (`ALIASES`), as `from_pretrained` loads them; on the
    same device and in the same dtype."""
    if isinstance(hf_model, (ours.RobertaModel, ours.RobertaForMaskedLM, ours.RobertaForSequenceClassification)):
        # this package's class has transformers' name: it was converted "back" into a copy of itself
        raise TypeError(f"from_transformers takes a transformers model; this is this package's "
                        f"{type(hf_model).__name__} already (to_transformers converts it the other way)")
    name = ALIASES.get(type(hf_model).__name__, type(hf_model).__name__)
    if name not in ARCHITECTURES:
        raise TypeError(f"cannot convert {type(hf_model).__name__}; expected one of "
                        f"{', '.join([*ARCHITECTURES, *ALIASES])}")
    # RobertaConfig refuses what this package cannot run (another activation, relative positions, a decoder)
    model = getattr(ours, name)(RobertaConfig.from_dict(hf_model.config.to_dict()))
    model.load_state_dict(from_hf_state_dict(hf_model.state_dict()), strict=True)
    return _placed_like(model, hf_model).train(hf_model.training)
