"""What goes into the model and what comes out of it, apart from the computation (`roberta.model`): the checks of
a forward pass's inputs, each a ValueError (a TypeError for a value that is no tensor, or not of integers) that
says what was expected where `transformers` fails deep inside (or not at all), the attention mask as the
attention reads it, and the output object the heads return.

Shapes: B batch, T sequence length, H hidden size, nh heads.
"""
from dataclasses import dataclass

import torch


# ----- the output -----
@dataclass
class ModelOutput:
    """What the heads return. Also read as `transformers`' outputs (an ordered dict of the fields that are not
    None, in their order: loss, logits, hidden_states, attentions): `out["logits"]`, `out[0]` (`to_tuple()`),
    `"loss" in out`, `list(out)` (the keys). last_hidden_state, which theirs do not return, is an attribute only."""
    loss: torch.Tensor | None = None
    logits: torch.Tensor | None = None
    last_hidden_state: torch.Tensor | None = None  # (B, T, H)
    attentions: tuple[torch.Tensor, ...] | None = None  # one (B, nh, T, T) per layer
    hidden_states: tuple[torch.Tensor, ...] | None = None  # (B, T, H): the embeddings', then each layer's output

    def keys(self) -> list[str]:
        return [name for name in ("loss", "logits", "hidden_states", "attentions") if getattr(self, name) is not None]

    def to_tuple(self) -> tuple:
        return tuple(getattr(self, name) for name in self.keys())

    def __getitem__(self, key):
        if isinstance(key, str):
            if key not in self.keys():
                raise KeyError(key)
            return getattr(self, key)
        return self.to_tuple()[key]

    def __iter__(self):
        return iter(self.keys())

    def __len__(self) -> int:
        return len(self.keys())

    def __contains__(self, key) -> bool:
        return key in self.keys()


def head_output(out: ModelOutput, return_dict=None):
    """A head's output: `out`, or with return_dict=False (`transformers`' option) the tuple it indexes."""
    return out.to_tuple() if return_dict is False else out


# ----- the inputs -----
def check_inputs(input_ids, inputs_embeds, token_type_ids, hidden_size: int) -> None:
    """Exactly one of input_ids (B, T) and inputs_embeds (B, T, H) (a single text's 1-D ids failed deep inside
    with "not enough values to unpack"), and token_type_ids, which `transformers`' tokenizers may return, all zeros
    (a tensor of integers broadcastable to the inputs' (B, T)) or None."""
    if (input_ids is None) == (inputs_embeds is None):
        raise ValueError("pass exactly one of input_ids and inputs_embeds")
    if input_ids is not None:
        check_integer_tensor("input_ids", input_ids, "token ids, (batch, length)")
    if inputs_embeds is not None and not isinstance(inputs_embeds, torch.Tensor):
        raise TypeError(f"inputs_embeds must be a torch.Tensor (batch, length, hidden_size={hidden_size}), got "
                        f"{type(inputs_embeds).__name__}")
    if input_ids is not None and input_ids.dim() != 2:
        hint = " (one text: input_ids[None])" if input_ids.dim() == 1 else ""
        raise ValueError(f"input_ids must be (batch, length), got shape {tuple(input_ids.shape)}{hint}")
    if inputs_embeds is not None and (inputs_embeds.dim() != 3 or inputs_embeds.shape[-1] != hidden_size):
        raise ValueError(f"inputs_embeds must be (batch, length, hidden_size={hidden_size}), got shape "
                         f"{tuple(inputs_embeds.shape)}")
    if token_type_ids is not None:
        check_integer_tensor("token_type_ids", token_type_ids, "zeros, (batch, length)")
        shape = tuple(input_ids.shape) if input_ids is not None else tuple(inputs_embeds.shape[:2])
        check_broadcasts_to("token_type_ids", token_type_ids, shape)
        if bool(token_type_ids.ne(0).any()):
            raise ValueError("token_type_ids must be all zeros: RoBERTa has a single token type (its embedding is "
                             "folded into the position embeddings), got other values")


def check_broadcasts_to(name: str, value: torch.Tensor, shape: tuple) -> None:
    """A ValueError naming `name` unless `value` broadcasts to `shape` (B, T) without changing it: token_type_ids
    (1, 3) beside input_ids (2, 10) were taken silently, position_ids of another length failed deep inside with
    "The size of tensor a (10) must match the size of tensor b (3)"."""
    try:
        fits = torch.broadcast_shapes(tuple(value.shape), shape) == torch.Size(shape)
    except RuntimeError:  # shapes that do not broadcast at all
        fits = False
    if not fits:
        raise ValueError(f"{name} must be (batch, length) = {shape} (or broadcastable to it), got shape "
                         f"{tuple(value.shape)}")


def check_integer_tensor(name: str, value, what: str) -> None:
    """A TypeError naming `name` unless `value` is a tensor of integers (`what` it holds: "token ids, (batch,
    length)"): a list failed with "'list' object has no attribute 'dim'", float ids deep in the embedding."""
    if not isinstance(value, torch.Tensor):
        hint = f": torch.tensor({name})" if isinstance(value, (list, tuple)) else ""
        raise TypeError(f"{name} must be a torch.Tensor of {what}, got {type(value).__name__}{hint}")
    if value.is_floating_point() or value.is_complex() or value.dtype == torch.bool:
        raise TypeError(f"{name} must be integers ({what}), got {value.dtype}: .long() converts them")


def check_labels(labels, shape: tuple, what: str, num_classes: int | None = None,
                 ignore_index: int | None = None) -> None:
    """A TypeError or ValueError unless `labels` are integers of the `shape` the head needs (`what`: what they
    are), before the loss fails on them: masked-LM labels of another shape than input_ids were torch's "Expected
    input batch_size (3) to match target batch_size (1)", which calls batch x length the batch size. With
    `num_classes`, a label outside 0 .. num_classes - 1 other than `ignore_index` (-100: nothing to predict) is a
    ValueError naming the range, where it was torch's "Target 99999 is out of bounds"; on the CPU only, as
    `check_token_ids` (on a GPU reading the answer would wait for it every step)."""
    check_integer_tensor("labels", labels, what)
    check_targets(labels, shape, what)
    if num_classes is None or torch.compiler.is_compiling() or labels.device.type != "cpu":
        return
    wrong = labels.ne(ignore_index) & ((labels < 0) | (labels >= num_classes))  # same shape as labels
    if bool(wrong.any()):
        raise ValueError(f"labels must be class ids from 0 to {num_classes - 1}, or {ignore_index} where nothing "
                         f"is predicted, got {int(labels[wrong][0])}")


def check_targets(labels: torch.Tensor, shape: tuple, what: str) -> None:
    """A ValueError unless `labels` have the `shape` the head needs (`what`: what they are): class ids
    (`check_labels`), and a classifier's number targets (a regression's, multi-label 0/1 ones), whose `shape` is
    what its logits give: torch broadcast a regression's (B,) against (B, L) with only a warning,
    and multi-label targets (B,) beside (B, L) logits were its "Target size (torch.Size([2])) must be the same as
    input size"."""
    if tuple(labels.shape) != tuple(shape):
        raise ValueError(f"labels must be {what}: {tuple(shape)} here, got shape {tuple(labels.shape)}")


def check_token_ids(input_ids: torch.Tensor, vocab_size: int) -> None:
    """A ValueError naming the range when an id is outside the vocabulary, before the lookup fails on it with a
    bare "index out of range in self". On the CPU only, where it is one cheap comparison: on a GPU reading its
    answer is a host sync per forward (the queue drained before every training step), so there, as in
    transformers, such an id is the device's own assert; and skipped while torch.compile traces the model, where
    a data-dependent branch would break the graph."""
    if torch.compiler.is_compiling() or input_ids.device.type != "cpu":
        return
    if bool(((input_ids < 0) | (input_ids >= vocab_size)).any()):
        raise ValueError(f"input_ids must be from 0 to {vocab_size - 1} (the model's vocabulary has {vocab_size} "
                         f"tokens), got {int(input_ids.min())} to {int(input_ids.max())}")


def check_position_ids(position_ids, shape: tuple) -> None:
    """Given `position_ids` checked before the lookup: a tensor of integers (a list was "'list' object has no
    attribute 'min'", floats a RuntimeError from the embedding) that broadcasts to the inputs' `shape` (B, T)."""
    check_integer_tensor("position_ids", position_ids, "positions, (batch, length)")
    check_broadcasts_to("position_ids", position_ids, shape)


def check_positions(position_ids: torch.Tensor, T: int, given: bool, table_size: int, pad_token_id: int) -> None:
    """A ValueError when the positions of T tokens do not fit the position table (`table_size` rows, the first
    pad_token_id + 1 of them before the first token's): `position_ids` the caller `given` outside it, or a text
    longer than the model takes. What limits the length is the table: a batch padded past the longest input still
    fits (its real tokens get positions, its padding the padding row); so positions are read, which syncs, only
    when they may not fit."""
    max_length = table_size - pad_token_id - 1
    if not given and T <= max_length:
        return
    low, high = int(position_ids.min()), int(position_ids.max())
    if given and not 0 <= low <= high < table_size:
        raise ValueError(f"position_ids must be from 0 to {table_size - 1} (the model takes at most {max_length} "
                         f"tokens), got {low} to {high}")
    if high >= table_size:
        raise ValueError(f"input has {high - pad_token_id} tokens but the model takes at most {max_length}; "
                         "truncate it")


def attention_keep_mask(attention_mask, B: int, T: int, num_heads: int):
    """`attention_mask` as the attention reads it: booleans broadcastable to (B, nh, T, T), True where a key may be
    attended to; None when every key may be (the faster kernels). Given as (B, T) ones and zeros (read as
    (B, 1, 1, T)), or as `transformers` takes a 4-D mask, (B or 1, nh or 1, T or 1, T): booleans (returned as they
    are) or additive floats (0 = attend, a large negative number = not; read as booleans of that shape)."""
    if attention_mask is None:
        return None
    if not isinstance(attention_mask, torch.Tensor):  # a list was "'list' object has no attribute 'shape'"
        hint = ": torch.tensor(attention_mask)" if isinstance(attention_mask, (list, tuple)) else ""
        raise TypeError(f"attention_mask must be a torch.Tensor, (batch, tokens) = {(B, T)} of ones and zeros, "
                        f"got {type(attention_mask).__name__}{hint}")
    shape = tuple(attention_mask.shape)
    if attention_mask.dim() == 2 and shape == (B, T):
        keep = attention_mask.bool()[:, None, None, :]  # (B, 1, 1, T)
    elif attention_mask.dim() == 4 and shape[0] in (1, B) and shape[1] in (1, num_heads) and shape[2] in (1, T) \
            and shape[3] == T:
        keep = _four_d_keep_mask(attention_mask)  # (B or 1, nh or 1, T or 1, T)
    else:
        raise ValueError(f"attention_mask must be (batch, tokens) = {(B, T)}, or 4-D (batch, 1 or heads, 1 or "
                         f"tokens, tokens), got {shape}")
    return None if bool(keep.all()) else keep


def _four_d_keep_mask(attention_mask: torch.Tensor) -> torch.Tensor:
    """A 4-D mask as booleans: booleans as they are, additive floats (0 = attend) compared with 0."""
    if attention_mask.dtype == torch.bool:
        return attention_mask
    if not attention_mask.is_floating_point():
        raise ValueError(f"a 4-D attention_mask must be booleans (True = attend) or additive floats, as in "
                         f"transformers, got {attention_mask.dtype}")
    keep = attention_mask.eq(0)
    # anything else (NaN too: transformers adds it to the scores, which turns the outputs into NaN)
    if bool((~keep & ~(attention_mask <= -1e4)).any()):
        raise ValueError("a 4-D float attention_mask is added to the scores, as in transformers: 0 where a key may "
                         "be attended to, a large negative number (at most -1e4, or -inf) where not; got other "
                         "values (NaN, or numbers between -1e4 and 0)")
    return keep
