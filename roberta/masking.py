"""Masked-language-model corruption: BERT's static masking and RoBERTa's dynamic masking.

The one place this logic lives; training, tests and the app all use it.

Of the tokens that are not special (<s>, </s>, <pad>, ...), each is selected with probability 15%.
A selected token becomes a prediction target (its label is the original id; every other label is -100)
and is replaced by <mask> 80% of the time, by a random regular token 10% of the time, and left as is 10%.

- Dynamic (RoBERTa): a fresh mask every time a sequence is fed to the model.
- Static (BERT): masks are fixed at preprocessing. BERT duplicates the data `dupe_factor` times (10) with
  different masks, so over many epochs each sequence cycles through the same 10 masks. `dupe_factor=1` is
  the "one fixed mask" variant. Masks are a pure function of (seed, example id, copy) and the row's tokens
  from its first non-<pad> one to its last: the same row padded to any batch width, on the right or on the
  left, gets the same mask (its padding is never drawn for). That is exactly what precomputing them would
  store, without holding dupe_factor copies of the corpus in memory.

Shapes: B batch, T sequence length, V vocabulary, S special ids, R regular ids (the other V - S).
"""
import numbers
from dataclasses import dataclass

import torch

from .config import whole_number
from .devices import to_device
from .loss import IGNORE_INDEX  # the label of every position that is not selected
from .tokenizer import SPECIAL_TOKENS, as_tokenizer
# The rule's rates (BERT's and RoBERTa's): select 15% of the regular tokens; of those, 80% become <mask>, 10% a
# random regular token, the rest stay. BERT's static masking keeps DUPE_FACTOR masks per sequence.
MLM_PROBABILITY, MASK_FRACTION, RANDOM_FRACTION = 0.15, 0.8, 0.1
KEPT_FRACTION = 1 - MASK_FRACTION - RANDOM_FRACTION  # the targets left as they are
DUPE_FACTOR = 10
# A masker's generator seed is folded into 64 bits (what torch.Generator.manual_seed takes), so any seed and any
# example id work; every seed torch took before (below 2**64, or a negative one as its 64-bit pattern) is unchanged.
SEED_MODULUS = 2 ** 64

# What happened to each token, for display and statistics.
NOT_SELECTED, MASKED, RANDOM, KEPT = 0, 1, 2, 3
OUTCOME_NAMES = {NOT_SELECTED: "not selected", MASKED: "<mask>", RANDOM: "random token", KEPT: "unchanged"}


@dataclass
class MaskedBatch:
    input_ids: torch.Tensor  # (B, T) corrupted inputs
    labels: torch.Tensor  # (B, T) original id where selected, -100 elsewhere
    outcome: torch.Tensor  # (B, T) NOT_SELECTED / MASKED / RANDOM / KEPT


class Masker:
    """Shared corruption rule. `mask(input_ids, generator)` applies it with the given randomness.
    `pad_token_id` (one of `special_ids`; `from_tokenizer` gives it) is what the static masker cuts off a row.
    `seed`: any whole number, folded into 64 bits (SEED_MODULUS)."""

    def __init__(self, mask_token_id: int, vocab_size: int, special_ids, mlm_probability: float = MLM_PROBABILITY,
                 mask_fraction: float = MASK_FRACTION, random_fraction: float = RANDOM_FRACTION, seed: int = 0,
                 pad_token_id: int | None = None):
        mlm_probability = _fraction("mlm_probability", mlm_probability, open_interval=True)
        mask_fraction = _fraction("mask_fraction", mask_fraction)
        random_fraction = _fraction("random_fraction", random_fraction)
        if mask_fraction + random_fraction > 1:
            raise ValueError(f"mask_fraction and random_fraction must sum to at most 1, got {mask_fraction} + "
                             f"{random_fraction}")
        self.seed = whole_number(seed)  # a Python int: a numpy one overflowed in the static masker's seeds
        if self.seed is None:
            raise ValueError(f"seed must be a whole number, got {seed!r}")
        self.mask_token_id = mask_token_id
        self.mlm_probability = mlm_probability
        self.mask_fraction = mask_fraction
        self.random_fraction = random_fraction
        self.pad_token_id = pad_token_id
        self.special_ids = torch.tensor(sorted(set(special_ids) | {mask_token_id}), dtype=torch.long)  # (S,)
        is_special = torch.zeros(vocab_size, dtype=torch.bool)  # (V,)
        is_special[self.special_ids] = True
        self.regular_ids = torch.nonzero(~is_special).squeeze(1)  # (R,): random replacements come from these
        self._ids_by_device = {}

    @classmethod
    def from_tokenizer(cls, tokenizer, **kwargs):
        """Build from a tokenizer with RoBERTa's special tokens (what `roberta.tokenizer.as_tokenizer` takes)."""
        tokenizer = as_tokenizer(tokenizer)
        special = [tokenizer.token_to_id(t) for t in SPECIAL_TOKENS]
        if any(i is None for i in special):
            raise ValueError("the tokenizer lacks one of RoBERTa's special tokens <s> <pad> </s> <unk> <mask>")
        kwargs.setdefault("pad_token_id", tokenizer.token_to_id("<pad>"))
        return cls(tokenizer.token_to_id("<mask>"), tokenizer.get_vocab_size(), special, **kwargs)

    def mask(self, input_ids: torch.Tensor, generator: torch.Generator) -> MaskedBatch:
        """BERT's corruption of `input_ids` (B, T): each token that is not a special one (<pad> is one) is selected
        with mlm_probability, and a selected one becomes <mask>, a random regular token or stays, 80/10/10 by
        default; the draws come from `generator`. Returns the corrupted ids, the labels (the original id where
        selected, IGNORE_INDEX elsewhere) and each token's outcome."""
        input_ids = as_batch(input_ids)
        shape, device = input_ids.shape, input_ids.device
        special_ids, regular_ids = self._ids_on(device)
        eligible = ~torch.isin(input_ids, special_ids)  # (B, T)
        # the draws are made on the CPU generator, in this order, so that a seed gives the same masks anywhere
        u_select = torch.rand(shape, generator=generator)  # (B, T): selected if below mlm_probability
        u_action = torch.rand(shape, generator=generator)  # (B, T): <mask>, random token or kept
        random_pick = torch.randint(len(regular_ids), shape, generator=generator)  # (B, T): a regular_ids index
        u_select, u_action, random_pick = (to_device(t, device) for t in (u_select, u_action, random_pick))
        selected = (u_select < self.mlm_probability) & eligible  # (B, T)
        to_mask = selected & (u_action < self.mask_fraction)  # (B, T)
        to_random = selected & ~to_mask & (u_action < self.mask_fraction + self.random_fraction)  # (B, T)
        # torch.where, not boolean indexing: on a GPU each `x[mask] = ...` waits for the GPU (a host sync)
        corrupted = torch.where(to_mask, self.mask_token_id, input_ids)  # (B, T)
        corrupted = torch.where(to_random, regular_ids[random_pick].to(input_ids.dtype), corrupted)  # (B, T)
        labels = torch.where(selected, input_ids, IGNORE_INDEX)  # (B, T)
        outcome = torch.full_like(input_ids, NOT_SELECTED)  # (B, T)
        for chosen, what in ((selected, KEPT), (to_mask, MASKED), (to_random, RANDOM)):
            outcome = torch.where(chosen, what, outcome)  # (B, T)
        return MaskedBatch(corrupted, labels, outcome)

    def _ids_on(self, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        """The special and the regular ids on `device`, copied there once (each copy would wait for the GPU)."""
        if device not in self._ids_by_device:
            self._ids_by_device[device] = (self.special_ids.to(device), self.regular_ids.to(device))
        return self._ids_by_device[device]


class DynamicMasker(Masker):
    """RoBERTa: every call draws a new mask from one seeded stream (reproducible from its seed): a sequence is
    not tied to a fixed set of masks, though two draws may coincide by chance (a short row has few masks)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.generator = torch.Generator().manual_seed(self.seed % SEED_MODULUS)

    def __call__(self, input_ids, example_ids=None, epoch=None) -> MaskedBatch:
        """The next draw; `example_ids` and `epoch` are taken (the static masker's signature) and not used."""
        return self.mask(input_ids, self.generator)

    def state_dict(self) -> dict:
        return {"generator": self.generator.get_state()}

    def load_state_dict(self, state: dict) -> None:
        self.generator.set_state(state["generator"])


class StaticMasker(Masker):
    """BERT: example i in epoch e always gets mask copy (e % dupe_factor), fixed by (seed, i, copy) and the row's
    tokens: the row is masked from its first to its last non-<pad> token, so its padding to the batch's width,
    on the right or on the left, changes nothing (a row without padding, as every packed training row but the
    corpus's last, is masked whole)."""

    def __init__(self, *args, dupe_factor: int = DUPE_FACTOR, **kwargs):
        super().__init__(*args, **kwargs)
        self.dupe_factor = whole_number(dupe_factor)  # a Python int, as the seed: numpy's overflowed in the seeds
        if self.dupe_factor is None or self.dupe_factor < 1:
            raise ValueError(f"dupe_factor must be a whole number >= 1, got {dupe_factor!r}")
        if self.pad_token_id is None or self.pad_token_id not in self.special_ids.tolist():
            raise ValueError(f"the static masker needs pad_token_id, one of the special ids (from_tokenizer gives "
                             f"it), got {self.pad_token_id!r}")

    def __call__(self, input_ids, example_ids, epoch: int) -> MaskedBatch:
        """input_ids (B, T), example_ids (B,): a stable id per sequence (its index in the dataset), integers;
        epoch: an integer."""
        input_ids = as_batch(input_ids)
        if example_ids is None or len(example_ids) != len(input_ids):
            got = "none" if example_ids is None else len(example_ids)
            raise ValueError(f"example_ids must give one id per row of input_ids ({len(input_ids)}), got {got}")
        number = whole_number(epoch)
        if number is None:
            raise ValueError(f"epoch must be a whole number, got {epoch!r}")
        copy = number % self.dupe_factor
        example_ids = [_example_id(ex) for ex in example_ids]
        if not example_ids:  # an empty batch: nothing to mask, as the dynamic masker gives it
            return MaskedBatch(input_ids.clone(), torch.full_like(input_ids, IGNORE_INDEX),
                               torch.full_like(input_ids, NOT_SELECTED))  # each (0, T)
        spans = self.unpadded_spans(input_ids)
        rows = [widen_to_row(self.fixed_mask(input_ids[i:i + 1, start:end], ex, copy), input_ids[i:i + 1], start)
                for i, (ex, (start, end)) in enumerate(zip(example_ids, spans))]  # each (1, T)
        # the rows (1, T) stacked: each field (B, T)
        return MaskedBatch(*(torch.cat([getattr(r, f) for r in rows]) for f in ("input_ids", "labels", "outcome")))

    def unpadded_spans(self, input_ids: torch.Tensor) -> list[tuple[int, int]]:
        """Each row's (start, end) without its leading and trailing <pad> tokens ((0, 0) for a row of padding
        only). Reading them waits for a GPU (one host sync per batch: static masking only; the dynamic masker has
        none)."""
        is_pad = input_ids.eq(self.pad_token_id)  # (B, T)
        leading = is_pad.cumprod(dim=1).sum(dim=1)  # (B,) <pad>s at the start
        trailing = is_pad.flip(1).cumprod(dim=1).sum(dim=1)  # (B,) <pad>s at the end
        ends = input_ids.shape[1] - trailing  # (B,)
        return [tuple(span) for span in torch.stack([torch.minimum(leading, ends), ends], dim=1).tolist()]  # one sync

    def fixed_mask(self, input_ids, example_id: int, copy: int) -> MaskedBatch:
        """The mask of the row `input_ids` (1, n) as copy `copy` of example `example_id`: its own seeded stream."""
        # One stream per (example, copy): copy < dupe_factor, so no two pairs share a seed (within 2**64)
        seed = ((self.seed * 1_000_003 + example_id) * self.dupe_factor + copy) % SEED_MODULUS
        return self.mask(input_ids, torch.Generator().manual_seed(seed))

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, state: dict) -> None:
        pass


def widen_to_row(masked: MaskedBatch, original: torch.Tensor, start: int = 0) -> MaskedBatch:
    """A mask of the n tokens of a row from `start` on (1, n), widened to the whole row `original` (1, T): the cut
    positions (its padding, on either side) keep their tokens, as padding always does: not selected, label -100."""
    end = start + masked.input_ids.shape[1]

    def widened(middle, cut_value=None):  # (1, n) -> (1, T); the cut positions: the row's tokens, or cut_value
        head, tail = original[:, :start], original[:, end:]
        if cut_value is not None:
            head, tail = torch.full_like(head, cut_value), torch.full_like(tail, cut_value)
        return torch.cat([head, middle, tail], dim=1)

    return MaskedBatch(widened(masked.input_ids), widened(masked.labels, IGNORE_INDEX),
                       widened(masked.outcome, NOT_SELECTED))


def as_batch(input_ids) -> torch.Tensor:
    """`input_ids` as a (B, T) tensor of signed integers (the labels keep their dtype and must hold -100); a
    ValueError for any other shape (both maskers take a batch of rows), a TypeError for other values: float ids
    were masked silently (float labels, which the loss refuses), uint8 ones had their -100 labels wrap to 156 (a
    target on every token), bools failed in torch.isin."""
    try:
        input_ids = torch.as_tensor(input_ids)
    except (TypeError, ValueError, RuntimeError) as err:  # rows of unequal length, a str: torch's own words
        raise TypeError(f"input_ids must be a (batch, length) tensor, or lists of token ids of one length, got "
                        f"{type(input_ids).__name__} ({err})") from None
    if input_ids.is_floating_point() or input_ids.is_complex() or input_ids.dtype == torch.bool \
            or torch.iinfo(input_ids.dtype).min > IGNORE_INDEX:
        raise TypeError(f"input_ids must be token ids of a signed integer type (their labels hold {IGNORE_INDEX}), "
                        f"got {input_ids.dtype}: .long() converts them")
    if input_ids.dim() != 2:
        hint = " (one sequence: input_ids[None])" if input_ids.dim() == 1 else ""
        raise ValueError(f"input_ids must be (batch, length), got shape {tuple(input_ids.shape)}{hint}")
    return input_ids


def _fraction(name: str, value, open_interval: bool = False) -> float:
    """`value` as a float: a ValueError naming `name` unless it is a real number from 0 to 1 (above 0 and below 1
    with `open_interval`); NaN is in no range."""
    inside = (isinstance(value, numbers.Real) and not isinstance(value, bool)
              and (0 < value < 1 if open_interval else 0 <= value <= 1))
    if not inside:
        bounds = "above 0 and below 1" if open_interval else "from 0 to 1"
        raise ValueError(f"{name} must be a number {bounds}, got {value!r}")
    return float(value)


def _example_id(value) -> int:
    """An example id as a Python int (an integer, or a one-element integer tensor); else a ValueError."""
    example_id = whole_number(value)
    if example_id is None:
        raise ValueError(f"example_ids must be whole numbers, got {value!r}")
    return example_id


def make_masker(kind: str, tokenizer, seed: int = 0, dupe_factor: int | None = None, **kwargs) -> Masker:
    """`kind` is "dynamic" (RoBERTa) or "static" (BERT, with `dupe_factor` copies, DUPE_FACTOR if None);
    `tokenizer`: what `roberta.tokenizer.as_tokenizer` takes."""
    if kind == "dynamic":
        if dupe_factor is not None:
            raise ValueError(f"dupe_factor={dupe_factor} is for static masking: dynamic masking draws a new mask "
                             "every time a row is seen")
        return DynamicMasker.from_tokenizer(tokenizer, seed=seed, **kwargs)
    if kind == "static":
        return StaticMasker.from_tokenizer(tokenizer, seed=seed, dupe_factor=DUPE_FACTOR if dupe_factor is None
                                           else dupe_factor, **kwargs)
    raise ValueError(f"masking must be 'dynamic' or 'static', got {kind!r}")
