"""MLM corruption: rates (binomial bounds), the 80/10/10 split, special tokens, dynamic vs static masks."""
import math
import warnings

import numpy as np
import pytest
import torch

from roberta.masking import (DUPE_FACTOR, IGNORE_INDEX, KEPT, MASKED, NOT_SELECTED, RANDOM, DynamicMasker, MaskedBatch,
                             StaticMasker, make_masker, widen_to_row)

pytestmark = pytest.mark.usefixtures("single_thread")

SIGMAS = 5  # a correct implementation fails a bound about once in 1.7 million runs


def within_binomial(count, n, p):
    return abs(count - n * p) <= SIGMAS * math.sqrt(n * p * (1 - p))


def special_ids(tokenizer):
    return [tokenizer.token_to_id(t) for t in ("<s>", "<pad>", "</s>", "<unk>", "<mask>")]


def corpus_batch(tokenizer, B=1100, T=256, seed=0):
    """(B, T) ids: <s> regular tokens (with some <unk>/<mask> inside) </s> <pad>...; about 200k eligible."""
    g = torch.Generator().manual_seed(seed)
    s, pad, eos, unk, mask = special_ids(tokenizer)
    ids = torch.randint(5, tokenizer.get_vocab_size(), (B, T), generator=g)
    lengths = torch.randint(T // 2, T + 1, (B,), generator=g)
    for i, n in enumerate(lengths.tolist()):
        ids[i, 0], ids[i, n - 1], ids[i, n:] = s, eos, pad
    inside = torch.rand(B, T, generator=g) < 0.02
    ids[inside & (ids > 4)] = unk
    ids[(torch.rand(B, T, generator=g) < 0.01) & (ids > 4)] = mask
    return ids


@pytest.fixture(scope="module")
def batch(tokenizer):
    return corpus_batch(tokenizer)


@pytest.fixture(scope="module")
def masked(tokenizer, batch):
    return DynamicMasker.from_tokenizer(tokenizer, seed=123)(batch)


def test_selection_rate_and_split(tokenizer, batch, masked):
    eligible = batch > 4
    n = int(eligible.sum())
    assert n > 200_000
    selected = masked.outcome != NOT_SELECTED
    n_sel = int(selected.sum())
    assert within_binomial(n_sel, n, 0.15), n_sel / n
    for outcome, p in ((MASKED, 0.8), (RANDOM, 0.1), (KEPT, 0.1)):
        count = int((masked.outcome == outcome).sum())
        assert within_binomial(count, n_sel, p), (outcome, count / n_sel)


def test_outcomes_match_the_corruption(tokenizer, batch, masked):
    mask_id = tokenizer.token_to_id("<mask>")
    out = masked.outcome
    assert torch.all(masked.input_ids[out == MASKED] == mask_id)
    assert torch.equal(masked.input_ids[out == KEPT], batch[out == KEPT])
    assert torch.equal(masked.input_ids[out == NOT_SELECTED], batch[out == NOT_SELECTED])
    random_ids = masked.input_ids[out == RANDOM]
    assert random_ids.min() > 4, "random replacements are never special tokens"
    assert random_ids.unique().numel() > 0.9 * (tokenizer.get_vocab_size() - 5), "drawn from the whole vocabulary"


def test_special_tokens_are_never_selected(tokenizer, batch, masked):
    special = torch.isin(batch, torch.tensor(special_ids(tokenizer)))
    assert special.sum() > 10_000  # <s>, </s>, padding, and the <unk>/<mask> sprinkled inside
    assert torch.all(masked.outcome[special] == NOT_SELECTED)
    assert torch.equal(masked.input_ids[special], batch[special])
    assert torch.all(masked.labels[special] == IGNORE_INDEX)


def test_labels_are_originals_exactly_where_selected(batch, masked):
    selected = masked.outcome != NOT_SELECTED
    assert torch.equal(masked.labels.ne(IGNORE_INDEX), selected)
    assert torch.equal(masked.labels[selected], batch[selected])


def test_custom_rates_are_respected(tokenizer, batch):
    out = DynamicMasker.from_tokenizer(tokenizer, mlm_probability=0.3, mask_fraction=1.0, random_fraction=0.0)(batch)
    n = int((batch > 4).sum())
    n_sel = int((out.outcome != NOT_SELECTED).sum())
    assert within_binomial(n_sel, n, 0.3)
    assert n_sel == int((out.outcome == MASKED).sum())


# ----- dynamic masking -----
def small_batch(tokenizer):
    return corpus_batch(tokenizer, B=4, T=64, seed=1)


def test_dynamic_masks_differ_across_calls_and_reproduce_by_seed(tokenizer):
    ids = small_batch(tokenizer)
    a = DynamicMasker.from_tokenizer(tokenizer, seed=7)
    b = DynamicMasker.from_tokenizer(tokenizer, seed=7)
    first, second = a(ids), a(ids)
    assert not torch.equal(first.labels, second.labels), "a fresh mask every call"
    again_first, again_second = b(ids), b(ids)
    assert torch.equal(first.input_ids, again_first.input_ids) and torch.equal(first.labels, again_first.labels)
    assert torch.equal(second.input_ids, again_second.input_ids)
    other = DynamicMasker.from_tokenizer(tokenizer, seed=8)(ids)
    assert not torch.equal(first.labels, other.labels)


def test_both_maskers_take_any_whole_number_seed_folded_into_64_bits(tokenizer):
    """A numpy seed was a TypeError (dynamic) or a numpy overflow (static), and the dynamic masker refused a seed
    from 2**64 on: both take any whole number now, the dynamic one folding it as the static one does."""
    ids = small_batch(tokenizer)
    for kind, call in (("dynamic", lambda m: m(ids)), ("static", lambda m: m(ids, [0, 1, 2, 3], 0))):
        labels = call(make_masker(kind, tokenizer, seed=3)).labels
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # numpy's overflow warning
            assert torch.equal(call(make_masker(kind, tokenizer, seed=np.int64(3))).labels, labels), kind
        assert torch.equal(call(make_masker(kind, tokenizer, seed=2 ** 64 + 3)).labels, labels), kind
        assert torch.equal(call(make_masker(kind, tokenizer, seed=-1)).labels,
                           call(make_masker(kind, tokenizer, seed=2 ** 64 - 1)).labels), kind
    assert type(make_masker("static", tokenizer, seed=np.int64(3)).seed) is int


def test_a_numpy_dupe_factor_is_a_python_int(tokenizer):
    """dupe_factor=np.int64(2) was taken, then overflowed numpy in the static masker's seeds (an OverflowError at the
    first batch, or a warning): it is a Python int, as the seed is."""
    ids = small_batch(tokenizer)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's overflow warning
        masker = make_masker("static", tokenizer, dupe_factor=np.int64(2))
        assert type(masker.dupe_factor) is int
        assert torch.equal(masker(ids, [2 ** 62, 1, 2, 3], np.int64(3)).labels,
                           make_masker("static", tokenizer, dupe_factor=2)(ids, [2 ** 62, 1, 2, 3], 1).labels)


def test_dynamic_state_dict_resumes_the_stream(tokenizer):
    ids = small_batch(tokenizer)
    a = DynamicMasker.from_tokenizer(tokenizer, seed=3)
    a(ids)
    state = a.state_dict()
    expected = [a(ids).input_ids for _ in range(3)]
    b = DynamicMasker.from_tokenizer(tokenizer, seed=999)
    b.load_state_dict(state)
    assert all(torch.equal(b(ids).input_ids, e) for e in expected)


def test_masks_follow_the_rule_position_by_position(tokenizer):
    """The vectorised corruption equals the rule written out one position at a time, on the same three draws
    (select, action, replacement) from the seed's CPU stream: the masks of a seed are those of this loop, on
    any device (a run resumed elsewhere, or a GPU run, sees the masks a CPU run would)."""
    ids = corpus_batch(tokenizer, B=40, T=32, seed=5)
    masker = DynamicMasker.from_tokenizer(tokenizer, seed=11)
    out = masker(ids)
    g = torch.Generator().manual_seed(11)
    u_select, u_action = torch.rand(ids.shape, generator=g), torch.rand(ids.shape, generator=g)
    pick = torch.randint(len(masker.regular_ids), ids.shape, generator=g)
    special, mask_id = set(special_ids(tokenizer)), tokenizer.token_to_id("<mask>")
    for (i, j), token in zip(torch.cartesian_prod(torch.arange(40), torch.arange(32)).tolist(), ids.flatten().tolist()):
        if token in special or u_select[i, j] >= 0.15:
            expected = (token, IGNORE_INDEX, NOT_SELECTED)
        elif u_action[i, j] < 0.8:
            expected = (mask_id, token, MASKED)
        elif u_action[i, j] < 0.9:
            expected = (int(masker.regular_ids[pick[i, j]]), token, RANDOM)
        else:
            expected = (token, token, KEPT)
        assert (int(out.input_ids[i, j]), int(out.labels[i, j]), int(out.outcome[i, j])) == expected, (i, j)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU: runs in train.gpu_session's tests")
def test_masking_on_a_gpu_never_waits_for_it(tokenizer):
    """On a GPU the batch is masked without a host sync (no boolean indexing, no blocking copies), so the
    training step's kernels queue behind it; and the masks are the CPU's."""
    ids = small_batch(tokenizer)
    on_cpu = DynamicMasker.from_tokenizer(tokenizer, seed=2)(ids)
    masker = DynamicMasker.from_tokenizer(tokenizer, seed=2)
    masker(ids.cuda())  # the first call copies the id tables to the GPU once
    masker.load_state_dict(DynamicMasker.from_tokenizer(tokenizer, seed=2).state_dict())
    gpu_ids = ids.cuda()
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        on_gpu = masker(gpu_ids)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    for field in ("input_ids", "labels", "outcome"):
        assert torch.equal(getattr(on_gpu, field).cpu(), getattr(on_cpu, field)), field



def test_the_copy_to_a_device_is_a_device_helper_the_masker_and_training_share():
    """`to_device` (a CPU tensor on a device; to a GPU through pinned memory, without a host sync) is no masking
    concept: it lives in roberta.devices, beside `parse_device`, and the masker and pretraining's batch indices
    use that one."""
    from roberta import devices, masking
    from train import pretrain

    ids = torch.arange(6).view(2, 3)  # (2, 3)
    moved = devices.to_device(ids, torch.device("cpu"))
    assert torch.equal(moved, ids) and moved.device == torch.device("cpu")
    assert masking.to_device is devices.to_device and pretrain.to_device is devices.to_device
    if torch.cuda.is_available():
        assert torch.equal(devices.to_device(ids, torch.device("cuda")).cpu(), ids)


# ----- static masking -----
def test_static_masks_cycle_with_period_dupe_factor(tokenizer):
    ids = small_batch(tokenizer)
    examples = torch.arange(len(ids))
    masker = StaticMasker.from_tokenizer(tokenizer, seed=5, dupe_factor=3)
    by_epoch = [masker(ids, examples, epoch=e).labels for e in range(7)]
    for e in range(4):
        assert torch.equal(by_epoch[e], by_epoch[e + 3])
    assert not torch.equal(by_epoch[0], by_epoch[1]) and not torch.equal(by_epoch[1], by_epoch[2])
    assert not torch.equal(by_epoch[0], by_epoch[2])
    # A pure function of (seed, example id, copy): a new masker and another batch order give the same masks.
    again = StaticMasker.from_tokenizer(tokenizer, seed=5, dupe_factor=3)
    order = torch.tensor([2, 0, 3, 1])
    shuffled = again(ids[order], examples[order], epoch=4)
    assert torch.equal(shuffled.labels, by_epoch[4][order])
    # ... and of the seed: another one masks the same rows otherwise
    other_seed = StaticMasker.from_tokenizer(tokenizer, seed=6, dupe_factor=3)(ids, examples, epoch=0)
    assert not torch.equal(other_seed.labels, by_epoch[0])


def test_static_masking_needs_one_example_id_per_row(tokenizer):
    """A row was dropped without a word when example_ids was shorter, and a 1-D input came back as one token."""
    ids = small_batch(tokenizer)
    masker = StaticMasker.from_tokenizer(tokenizer, seed=0)
    with pytest.raises(ValueError, match=r"one id per row of input_ids \(4\), got 1"):
        masker(ids, example_ids=[0], epoch=0)
    with pytest.raises(ValueError, match="got none"):
        masker(ids, example_ids=None, epoch=0)
    with pytest.raises(ValueError, match=r"must be \(batch, length\)"):
        masker(ids[0], example_ids=[0], epoch=0)


def test_both_maskers_refuse_a_single_row_without_its_batch_axis(tokenizer):
    """The dynamic masker took 1-D ids that the static one refused: both refuse them, saying how to add the axis."""
    row = small_batch(tokenizer)[0]
    for masker in (make_masker("dynamic", tokenizer), make_masker("static", tokenizer)):
        with pytest.raises(ValueError, match=r"input_ids must be \(batch, length\), got shape \(64,\) \(one "
                                             r"sequence: input_ids\[None\]\)"):
            masker(row, [0], 0)


def test_both_maskers_refuse_ids_that_are_not_signed_integers(tokenizer):
    """Float ids were masked silently (float labels), uint8 ids had their -100 labels wrap to 156 (every token a
    target), bools failed in torch.isin; int32 ids keep their dtype, as before."""
    ids = small_batch(tokenizer)  # (B, T)
    rows = list(range(len(ids)))
    for masker in (make_masker("dynamic", tokenizer), make_masker("static", tokenizer)):
        for wrong in (ids.float(), ids.to(torch.uint8), ids.bool()):
            with pytest.raises(TypeError, match=rf"input_ids must be token ids of a signed integer type \(their "
                                                rf"labels hold -100\), got {wrong.dtype}: \.long\(\) converts them"):
                masker(wrong, rows, 0)
        out = masker(ids.int(), rows, 0)
        assert out.input_ids.dtype == out.labels.dtype == torch.int32
        assert set(out.labels[out.outcome == NOT_SELECTED].tolist()) == {IGNORE_INDEX}
        # rows of unequal length and a str were torch's own "expected sequence of length 2 at dim 1" and
        # "new(): invalid data type 'str'", which named no argument
        for wrong, kind in (([[5, 6], [7]], "list"), ("hello", "str")):
            with pytest.raises(TypeError, match=rf"input_ids must be a \(batch, length\) tensor, or lists of token "
                                                rf"ids of one length, got {kind} \("):
                masker(wrong, [0, 1], 0)


def test_static_examples_with_same_tokens_get_different_masks(tokenizer):
    ids = small_batch(tokenizer)[:1].repeat(2, 1)
    out = StaticMasker.from_tokenizer(tokenizer, dupe_factor=2)(ids, [10, 11], epoch=0)
    assert not torch.equal(out.labels[0], out.labels[1])


def test_static_streams_never_collide_for_large_dupe_factor(tokenizer):
    """Every (example, copy) pair has its own stream, whatever dupe_factor (101 used to alias copies)."""
    row = corpus_batch(tokenizer, B=1, T=128, seed=1)  # ~19 targets of ~126 tokens: two streams never agree by chance
    # every pair of 50 examples x the default 10 copies, and of 4 examples x 150 copies (past 101)
    for dupe_factor, examples in ((10, 50), (150, 4)):
        masker = StaticMasker.from_tokenizer(tokenizer, dupe_factor=dupe_factor)
        masks = {}
        for example in range(examples):
            for copy in range(dupe_factor):
                out = masker.fixed_mask(row, example, copy)
                masks.setdefault((out.input_ids.numpy().tobytes(), out.labels.numpy().tobytes()), []).append(
                    (example, copy))
        assert len(masks) == examples * dupe_factor, [pairs for pairs in masks.values() if len(pairs) > 1][:3]


def test_dupe_factor_one_is_one_fixed_mask(tokenizer):
    ids = small_batch(tokenizer)
    masker = make_masker("static", tokenizer, dupe_factor=1)
    first = masker(ids, range(len(ids)), epoch=0)
    for epoch in (1, 2, 10):
        out = masker(ids, range(len(ids)), epoch=epoch)
        assert torch.equal(out.input_ids, first.input_ids) and torch.equal(out.labels, first.labels)
    assert masker.state_dict() == {}


def test_static_statistics_match_dynamic(tokenizer, batch):
    out = StaticMasker.from_tokenizer(tokenizer, dupe_factor=10)(batch[:200], range(200), epoch=3)
    eligible = batch[:200] > 4
    n, n_sel = int(eligible.sum()), int((out.outcome != NOT_SELECTED).sum())
    assert within_binomial(n_sel, n, 0.15)
    for outcome, share in ((MASKED, 0.8), (RANDOM, 0.1), (KEPT, 0.1)):
        assert within_binomial(int((out.outcome == outcome).sum()), n_sel, share), outcome
    assert torch.all(out.outcome[~eligible] == NOT_SELECTED)


def test_make_masker_kinds(tokenizer):
    assert isinstance(make_masker("dynamic", tokenizer), DynamicMasker)
    assert make_masker("static", tokenizer, dupe_factor=4).dupe_factor == 4
    assert make_masker("static", tokenizer).dupe_factor == DUPE_FACTOR  # BERT's 10


def test_dynamic_masking_refuses_a_dupe_factor(tokenizer):
    """A dupe factor asked of dynamic masking was dropped without a word: the run would not be what was asked."""
    with pytest.raises(ValueError, match="dupe_factor=3 is for static masking"):
        make_masker("dynamic", tokenizer, dupe_factor=3)


# ----- bad parameters -----
@pytest.mark.parametrize("kwargs, message", [
    ({"mlm_probability": 0.0}, "mlm_probability"),
    ({"mlm_probability": 1.0}, "mlm_probability"),
    ({"mlm_probability": -0.1}, "mlm_probability"),
    ({"mask_fraction": 0.8, "random_fraction": 0.3}, "sum to at most 1"),
    ({"mask_fraction": -0.1}, "mask_fraction"),
    ({"random_fraction": -0.1}, "random_fraction"),
    ({"mlm_probability": "0.15"}, "mlm_probability must be a number above 0 and below 1, got '0.15'"),
    ({"mlm_probability": float("nan")}, "mlm_probability must be a number above 0 and below 1, got nan"),
    ({"mask_fraction": float("nan")}, "mask_fraction must be a number from 0 to 1, got nan"),
    ({"random_fraction": None}, "random_fraction must be a number from 0 to 1, got None"),
])
def test_bad_rates_raise(tokenizer, kwargs, message):
    with pytest.raises(ValueError, match=message):
        DynamicMasker.from_tokenizer(tokenizer, **kwargs)


def test_bad_dupe_factor_and_kind_raise(tokenizer):
    with pytest.raises(ValueError, match="dupe_factor"):
        make_masker("static", tokenizer, dupe_factor=0)
    with pytest.raises(ValueError, match="dynamic"):
        make_masker("sometimes", tokenizer)


# ----- static masks do not depend on the batch's padding -----
def test_static_mask_is_the_same_whatever_the_batch_width(tokenizer):
    """A row's mask is fixed by (seed, example id, copy) and its tokens: padded to another batch's width it got
    another 80/10/10 choice and other random tokens (the draws after its first T were the batch's width's)."""
    _, pad, *_ = special_ids(tokenizer)
    rows = corpus_batch(tokenizer, B=6, T=48, seed=2)  # each <s> ... </s> then <pad>s
    masker = StaticMasker.from_tokenizer(tokenizer, seed=4, dupe_factor=3)
    for width in (48, 64, 200):
        wide = torch.cat([rows, torch.full((len(rows), width - 48), pad)], dim=1)  # the same rows, padded wider
        for example in range(20):
            for i in range(len(rows)):
                n = int(rows[i].ne(pad).sum())
                alone = masker(rows[i:i + 1, :n], [example], epoch=example)  # the row without any padding
                out = masker(wide[i:i + 1], [example], epoch=example)
                for field in ("input_ids", "labels", "outcome"):
                    assert torch.equal(getattr(out, field)[:, :n], getattr(alone, field)), (width, example, i, field)
                assert torch.all(out.input_ids[:, n:] == pad) and torch.all(out.labels[:, n:] == IGNORE_INDEX)
                assert torch.all(out.outcome[:, n:] == NOT_SELECTED)


def test_static_mask_of_a_row_in_a_batch_is_its_mask_alone(tokenizer):
    """Batched with longer rows (so padded past its length), a row gets the mask it gets alone, unpadded."""
    _, pad, *_ = special_ids(tokenizer)
    rows = corpus_batch(tokenizer, B=8, T=64, seed=3)
    masker = StaticMasker.from_tokenizer(tokenizer, seed=1)
    together = masker(rows, range(8), epoch=2)
    for i in range(8):
        n = int(rows[i].ne(pad).sum())
        alone = masker(rows[i:i + 1, :n], [i], epoch=2)
        assert torch.equal(together.input_ids[i, :n], alone.input_ids[0]) and torch.equal(together.labels[i, :n],
                                                                                        alone.labels[0])


def test_static_mask_is_the_same_with_padding_on_the_left(tokenizer):
    """A batch padded on the left (a transformers tokenizer's padding_side="left") drew the row's stream from
    position 0, its leading <pad>s included: another mask than the same row alone or padded on the right."""
    _, pad, *_ = special_ids(tokenizer)
    rows = corpus_batch(tokenizer, B=6, T=48, seed=5)  # each <s> ... </s> then <pad>s
    masker = StaticMasker.from_tokenizer(tokenizer, seed=2, dupe_factor=3)
    for i in range(len(rows)):
        n = int(rows[i].ne(pad).sum())
        for lead in (1, 7, 30):
            left = torch.cat([torch.full((1, lead), pad), rows[i:i + 1, :n], torch.full((1, 3), pad)], dim=1)
            for example in range(5):
                alone = masker(rows[i:i + 1, :n], [example], epoch=example)
                out = masker(left, [example], epoch=example)
                for field in ("input_ids", "labels", "outcome"):
                    assert torch.equal(getattr(out, field)[:, lead:lead + n], getattr(alone, field)), (i, lead, field)
                padding = torch.ones(left.shape[1], dtype=torch.bool)
                padding[lead:lead + n] = False
                assert torch.all(out.input_ids[0, padding] == pad) and torch.all(out.labels[0, padding] == IGNORE_INDEX)
                assert torch.all(out.outcome[0, padding] == NOT_SELECTED)
    only_padding = masker(torch.full((2, 6), pad), [0, 1], epoch=0)  # nothing to mask, on either side
    assert torch.all(only_padding.input_ids == pad) and torch.all(only_padding.labels == IGNORE_INDEX)


def test_static_masks_of_rows_without_trailing_padding_are_unchanged():
    """Every packed pretraining row but the last is full (no trailing <pad>): its masks are those the masker gave
    before it cut trailing padding, so recorded training runs reproduce. The expected tensors were computed with that
    earlier code (which masked the whole row) on these fixed inputs; a <pad> inside a row is not cut."""
    ids = torch.tensor([[0, 17, 9, 33, 4, 21, 1, 12, 30, 8, 25, 2],
                        [0, 6, 38, 14, 27, 3, 19, 11, 2, 5, 29, 2]])
    masker = StaticMasker(4, 40, [0, 1, 2, 3, 4], mlm_probability=0.5, mask_fraction=0.5, random_fraction=0.25,
                          seed=3, dupe_factor=4, pad_token_id=1)
    out = masker(ids, [7, 1000], epoch=5)
    assert out.input_ids.tolist() == [[0, 17, 4, 4, 4, 39, 1, 12, 4, 14, 4, 2],
                                      [0, 6, 38, 37, 33, 3, 27, 11, 2, 4, 29, 2]]
    assert out.outcome.tolist() == [[0, 3, 1, 1, 0, 2, 0, 0, 1, 2, 1, 0],
                                    [0, 0, 0, 2, 2, 0, 2, 0, 0, 1, 0, 0]]
    assert torch.equal(out.labels, torch.where(out.outcome != NOT_SELECTED, ids, IGNORE_INDEX))
    # the default rates and dupe_factor, seed 0
    row = torch.tensor([[0, 17, 9, 33, 5, 21, 13, 12, 30, 8, 25, 2, 0, 6, 38, 14, 27, 3, 19, 11, 7, 5, 29, 2]])
    default = StaticMasker(4, 40, [0, 1, 2, 3, 4], pad_token_id=1)
    expected = {(0, 0): ([(3, 4)], [(2, KEPT), (3, MASKED)]),
                (123, 13): ([(3, 4), (20, 31)], [(3, MASKED), (18, KEPT), (20, RANDOM)])}
    for (example, epoch), (changed, selected) in expected.items():
        out = default(row, [example], epoch=epoch)
        want_ids, want_outcome = row.clone(), torch.zeros_like(row)
        for j, token in changed:
            want_ids[0, j] = token
        for j, what in selected:
            want_outcome[0, j] = what
        assert torch.equal(out.input_ids, want_ids) and torch.equal(out.outcome, want_outcome), (example, epoch)


# ----- static masker: bad or edge inputs are its own ValueErrors -----
def test_static_masker_takes_an_empty_batch_as_the_dynamic_one_does(tokenizer):
    empty = torch.zeros(0, 5, dtype=torch.long)
    out = make_masker("static", tokenizer)(empty, [], 0)
    dynamic = make_masker("dynamic", tokenizer)(empty)
    for field in ("input_ids", "labels", "outcome"):
        assert getattr(out, field).shape == (0, 5) and torch.equal(getattr(out, field), getattr(dynamic, field))


def test_static_masker_refuses_a_bad_epoch_example_id_or_dupe_factor(tokenizer):
    ids = small_batch(tokenizer)[:1]
    masker = make_masker("static", tokenizer)
    with pytest.raises(ValueError, match="epoch must be a whole number, got None"):
        masker(ids, [0], None)
    with pytest.raises(ValueError, match="example_ids must be whole numbers, got 1.5"):
        masker(ids, [1.5], 0)
    for dupe_factor in (1.5, "10", True):  # refused when built, not at the first batch
        with pytest.raises(ValueError, match="dupe_factor must be a whole number >= 1"):
            make_masker("static", tokenizer, dupe_factor=dupe_factor)
    with pytest.raises(ValueError, match="needs pad_token_id"):
        StaticMasker(4, 40, [0, 1, 2, 3, 4])
    with pytest.raises(ValueError, match="seed must be a whole number, got 1.5"):
        make_masker("static", tokenizer, seed=1.5)
    assert torch.equal(masker(ids, [3], torch.tensor(13)).labels, masker(ids, [3], 3).labels)  # a 0-d tensor epoch


def test_static_masker_takes_any_integer_example_id(tokenizer):
    """A large id overflowed the generator's 64-bit seed; the seed is folded into 64 bits, which leaves every
    seed that worked before as it was (a negative one is the same 64-bit pattern)."""
    ids = small_batch(tokenizer)[:1]
    default = make_masker("static", tokenizer)  # dupe_factor 10: the seed is past 2**64
    big = default(ids, [2 ** 62], 0)
    assert torch.equal(big.labels, default(ids, torch.tensor([2 ** 62]), 0).labels)
    masker = make_masker("static", tokenizer, dupe_factor=1)
    assert torch.equal(masker(ids, [2 ** 64 + 5], 0).labels, masker(ids, [5], 0).labels)  # seed = id here
    assert torch.equal(masker(ids, [-1], 0).labels, masker(ids, [2 ** 64 - 1], 0).labels)
    assert torch.equal(masker(ids, torch.tensor([3, 4])[:1], 0).labels, masker(ids, [3], 0).labels)


def test_widen_to_row_puts_a_slices_mask_back_in_its_row():
    """The static masker masks a row's tokens without its padding, then widens that mask to the whole row (it was
    named `pad_to`, but pads nothing): the cut positions keep their tokens, are not selected and have no label."""
    row = torch.tensor([[1, 1, 0, 7, 8, 2, 1]])  # (1, T): <pad> <pad> <s> 7 8 </s> <pad>
    sliced = MaskedBatch(torch.tensor([[0, 4, 8, 2]]), torch.tensor([[IGNORE_INDEX, 7, IGNORE_INDEX, IGNORE_INDEX]]),
                         torch.tensor([[NOT_SELECTED, MASKED, NOT_SELECTED, NOT_SELECTED]]))  # (1, n): row[:, 2:6]
    wide = widen_to_row(sliced, row, start=2)
    assert wide.input_ids.tolist() == [[1, 1, 0, 4, 8, 2, 1]]
    assert wide.labels.tolist() == [[IGNORE_INDEX] * 3 + [7] + [IGNORE_INDEX] * 3]
    assert wide.outcome.tolist() == [[NOT_SELECTED] * 3 + [MASKED] + [NOT_SELECTED] * 3]
