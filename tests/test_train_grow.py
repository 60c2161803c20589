"""train.grow: a masked LM's feed-forward layers widened without changing its function (Net2WiderNet), in a folder
that `transformers` and `train.pretrain --init` read."""
import json

import pytest
import torch

import roberta
from helpers import outcome, padded_batch, pretrain_argv, refused
from train import grow, pretrain


@pytest.fixture(scope="module")
def small(tiny_mlm_dir):
    return roberta.RobertaForMaskedLM.from_pretrained(tiny_mlm_dir).eval()


def first_ffn(model):
    """The first layer's feed-forward input weights, (I, H)."""
    return model.roberta.encoder.layer[0].intermediate.dense.weight


def logits(model, batch):
    with torch.no_grad():
        return model.eval()(*batch).logits  # (B, T, V)


@pytest.mark.parametrize("factor", [2, 3])
def test_without_noise_the_wider_model_computes_the_same_function(small, factor):
    config = small.config
    grown = grow.widen_ffn(small, factor * config.intermediate_size, noise=0.0)
    assert grown.config.intermediate_size == factor * config.intermediate_size and small.config is config
    added = (factor - 1) * config.num_hidden_layers * config.intermediate_size * (2 * config.hidden_size + 1)
    assert grown.num_parameters() == small.num_parameters() + added
    batch = padded_batch(config)
    torch.testing.assert_close(logits(grown, batch), logits(small, batch), atol=1e-5, rtol=1e-5)
    # (factor * I, H): copy c of unit u at row c * I + u
    assert all(torch.equal(part, first_ffn(small)) for part in first_ffn(grown).split(config.intermediate_size))


def test_noise_tells_the_copies_apart_in_pairs_and_moves_the_function_to_its_second_order(small):
    inter = small.config.intermediate_size
    batch = padded_batch(small.config)
    grown = grow.widen_ffn(small, 4 * inter, noise=0.01, seed=1)
    for big, old in zip(grown.roberta.encoder.layer, small.roberta.encoder.layer):
        w, copies = old.intermediate.dense.weight, big.intermediate.dense.weight.split(inter)  # 4 of (I, H)
        assert not torch.equal(copies[0], copies[1]) and not torch.equal(copies[0], copies[2])
        torch.testing.assert_close(copies[0] + copies[1], 2 * w)  # a pair: +d and -d
        torch.testing.assert_close(copies[2] + copies[3], 2 * w)
    # the function moves with the square of the noise, not in proportion to it: 10x the noise, ~100x the change
    change = {noise: (logits(grow.widen_ffn(small, 2 * inter, noise, seed=1), batch) - logits(small, batch)).abs().max()
              for noise in (0.02, 0.2)}
    assert change[0.2] > 40 * change[0.02] > 0
    # an odd number of copies: the last has no partner and stays the unit's own weights
    assert torch.equal(first_ffn(grow.widen_ffn(small, 3 * inter, noise=0.01))[2 * inter:], first_ffn(small))
    assert torch.equal(first_ffn(grow.widen_ffn(small, 2 * inter, 0.01, seed=1)),  # the seed fixes the draws
                       first_ffn(grow.widen_ffn(small, 2 * inter, 0.01, seed=1)))


@pytest.mark.parametrize("size, noise, words", [(96, 0.0, "a multiple of the model's 64"),
                                                (64, 0.0, "larger than it"), (128, -1.0, "at least 0")])
def test_widen_ffn_refuses_what_it_cannot_grow(small, size, noise, words):
    assert small.config.intermediate_size == 64  # the tiny preset, as the messages expect
    with pytest.raises(ValueError, match=words):
        grow.widen_ffn(small, size, noise)


@pytest.mark.slow  # a pretraining run on the grown folder
def test_the_grown_folder_loads_in_transformers_and_pretrains_with_init(tiny_mlm_dir, small, train_files, tmp_path,
                                                                        capsys):
    transformers = pytest.importorskip("transformers")
    out = tmp_path / "grown"
    code, printed, err = outcome(grow.main, ["--model", str(tiny_mlm_dir), "--intermediate-size", "128",
                                             "--out", str(out)], capsys)
    assert code == 0, err
    assert printed.startswith(f"grew {tiny_mlm_dir}: feed-forward 64 -> 128 units a layer") and str(out) in printed
    assert json.loads((out / "config.json").read_text())["intermediate_size"] == 128
    ours = roberta.RobertaForMaskedLM.from_pretrained(out)
    batch = padded_batch(ours.config)
    torch.testing.assert_close(logits(ours, batch), logits(grow.widen_ffn(small, 128, 0.01), batch))
    theirs = transformers.AutoModelForMaskedLM.from_pretrained(out).eval()
    with torch.no_grad():
        torch.testing.assert_close(theirs(input_ids=batch[0], attention_mask=batch[1]).logits, logits(ours, batch),
                                   atol=1e-5, rtol=1e-5)
    phase = tmp_path / "phase"
    argv = pretrain_argv(train_files, phase, "--init", str(out))
    for option in ("--model-max-length", "--preset", "--tokenizer"):  # the --init folder's shape and tokenizer
        argv[argv.index(option):argv.index(option) + 2] = []
    assert pretrain.main(argv) == 0
    assert roberta.load_config(phase).intermediate_size == 128
    assert json.loads((phase / "metrics.json").read_text())["init"] == str(out)


def test_the_command_refuses_in_one_line(tiny_mlm_dir, tiny_clf_dir, tmp_path, capsys):
    def argv(model, size, out):
        return ["--model", str(model), "--intermediate-size", str(size), "--out", str(out)]
    refused(grow.main, argv(tiny_mlm_dir, 100, tmp_path / "a"), capsys, "a multiple of the model's 64")
    refused(grow.main, argv(tiny_clf_dir, 128, tmp_path / "b"), capsys, "masked LM")
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "notes.txt").write_text("mine")
    refused(grow.main, argv(tiny_mlm_dir, 128, tmp_path / "c"), capsys, "is not empty")
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
    assert [p.name for p in (tmp_path / "c").iterdir()] == ["notes.txt"]
