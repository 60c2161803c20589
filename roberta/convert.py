"""Move weights between this package and `transformers`' RoBERTa classes.

Our modules carry Hugging Face's names, so a state dict maps one to one, with three differences:
- RoBERTa has no segments. `transformers` keeps a token-type embedding table anyway and adds row 0 to
  every token; we fold that row into the position embeddings (same function) and, going back, write an
  all-zero one-row table. Ours -> transformers -> ours is therefore exact.
- `transformers`' state dict repeats the tied decoder (`lm_head.decoder.weight`/`.bias`); we drop the copies.
- Unused weights of some Hub checkpoints (the pooler, position-id buffers) are dropped.

`transformers` is only needed for `to_transformers`/`from_transformers` (imported lazily).
"""
import torch

TOKEN_TYPE_KEY = "roberta.embeddings.token_type_embeddings.weight"
POSITION_KEY = "roberta.embeddings.position_embeddings.weight"
WORD_KEY = "roberta.embeddings.word_embeddings.weight"
TIED_COPIES = {"lm_head.decoder.weight": WORD_KEY, "lm_head.decoder.bias": "lm_head.bias"}
UNUSED_PREFIXES = ("roberta.pooler.", "roberta.embeddings.position_ids", "roberta.embeddings.token_type_ids")


def from_hf_state_dict(hf_state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """A `transformers` RoBERTa state dict (or saved checkpoint) -> ours."""
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
        state[POSITION_KEY] = state[POSITION_KEY] + token_type[0]
    return state


def to_hf_state_dict(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Our state dict -> the layout `transformers` saves (contiguous tensors, zero token-type row)."""
    hf_state = {k: v.detach().contiguous() for k, v in state.items()}
    if POSITION_KEY in hf_state:
        position = hf_state[POSITION_KEY]
        hf_state[TOKEN_TYPE_KEY] = torch.zeros(1, position.shape[1], dtype=position.dtype, device=position.device)
    return hf_state


def to_transformers(model):
    """Our RobertaForMaskedLM / RobertaForSequenceClassification -> the `transformers` class of the same name."""
    import transformers

    hf_config = transformers.RobertaConfig(**model.config.to_hf_dict(model.architecture))
    hf_model = getattr(transformers, model.architecture)(hf_config)
    hf_state = to_hf_state_dict(model.state_dict())
    for copy, original in TIED_COPIES.items():
        if copy in hf_model.state_dict():
            hf_state[copy] = hf_state[original]
    hf_model.load_state_dict(hf_state, strict=True)
    return hf_model.eval() if not model.training else hf_model


def from_transformers(hf_model):
    """A `transformers` RobertaForMaskedLM / RobertaForSequenceClassification -> ours."""
    from . import model as ours
    from .config import RobertaConfig

    name = type(hf_model).__name__
    if name not in ("RobertaForMaskedLM", "RobertaForSequenceClassification"):
        raise TypeError(f"cannot convert {name}; expected RobertaForMaskedLM or RobertaForSequenceClassification")
    hf = hf_model.config
    if getattr(hf, "position_embedding_type", "absolute") != "absolute" or hf.hidden_act != "gelu":
        raise ValueError("only absolute position embeddings and GELU are supported")
    config = RobertaConfig.from_dict(hf.to_dict())
    model = getattr(ours, name)(config)
    model.load_state_dict(from_hf_state_dict(hf_model.state_dict()), strict=True)
    return model.train(hf_model.training)
