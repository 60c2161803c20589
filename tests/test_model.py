"""The from-scratch model: sizes, attention paths, loss, save/load, and the tied embedding."""
import dataclasses
import json
import os
import pickle
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file

import roberta
from roberta.loss import masked_lm_loss
from roberta.model import position_ids_from_input_ids
from helpers import padded_batch

pytestmark = pytest.mark.usefixtures("single_thread")


@pytest.fixture
def mlm(tiny_config):
    torch.manual_seed(0)
    return roberta.RobertaForMaskedLM(tiny_config).eval()


# ----- sizes -----
def test_mini_preset_has_17_7m_parameters():
    model = roberta.RobertaForMaskedLM(roberta.PRESETS["mini"])
    assert abs(model.num_parameters() - 17.7e6) <= 0.1e6


def test_presets_keep_robertas_fixed_settings():
    """What makes a RoBERTa and not a BERT, written out from roberta-base's published config.json (not read from
    our code): LayerNorm eps 1e-5 (BERT's is 1e-12), positions offset past pad_token_id 1, <s>/<pad>/</s> ids 0/1/2,
    GELU; roberta-base's sizes; the reference MiniRoBERTa's sizes. Every preset keeps the fixed settings."""
    base = roberta.PRESETS["roberta-base"]
    assert (base.vocab_size, base.hidden_size, base.num_hidden_layers, base.num_attention_heads,
            base.intermediate_size, base.max_position_embeddings) == (50265, 768, 12, 12, 3072, 514)
    mini = roberta.PRESETS["mini"]
    assert (mini.vocab_size, mini.hidden_size, mini.num_hidden_layers, mini.num_attention_heads,
            mini.intermediate_size, mini.max_length) == (50265, 256, 6, 8, 1024, 128)
    for name, config in roberta.PRESETS.items():
        assert (config.layer_norm_eps, config.hidden_act) == (1e-5, "gelu"), name
        assert (config.bos_token_id, config.pad_token_id, config.eos_token_id) == (0, 1, 2), name
        assert config.max_position_embeddings == config.max_length + 2, name
    assert roberta.RobertaConfig().layer_norm_eps == 1e-5


def test_roberta_base_parameter_count_matches_transformers():
    """Same count as transformers' RobertaForMaskedLM, minus its token-type table (type_vocab_size=1, H=768):
    RoBERTa has no segments, so we keep no token-type embedding (convert.py folds row 0 into the positions)."""
    transformers = pytest.importorskip("transformers")
    config = roberta.PRESETS["roberta-base"]
    with torch.device("meta"):  # shapes only: no memory, no initialisation time
        ours = roberta.RobertaForMaskedLM(config)
        theirs = transformers.RobertaForMaskedLM(
            transformers.RobertaConfig(**config.to_hf_dict("RobertaForMaskedLM")))
    token_type = theirs.roberta.embeddings.token_type_embeddings.weight
    assert token_type.shape == (1, config.hidden_size)
    theirs_count = sum(p.numel() for p in theirs.parameters())  # tied weights counted once
    assert ours.num_parameters() == theirs_count - token_type.numel()
    assert 124e6 < ours.num_parameters() < 126e6


# ----- attention -----
def test_sdpa_and_explicit_attention_agree(mlm, tiny_config):
    ids, mask = padded_batch(tiny_config)
    with torch.no_grad():
        fused = mlm(ids, mask)
        explicit = mlm(ids, mask, output_attentions=True)
    assert fused.attentions is None
    real = mask.bool()
    torch.testing.assert_close(fused.logits[real], explicit.logits[real], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(fused.last_hidden_state[real], explicit.last_hidden_state[real], atol=1e-5, rtol=1e-5)


def test_attentions_shape_normalised_and_blind_to_padding(mlm, tiny_config):
    ids, mask = padded_batch(tiny_config)
    B, T = ids.shape
    with torch.no_grad():
        out = mlm(ids, mask, output_attentions=True)
    assert len(out.attentions) == tiny_config.num_hidden_layers
    for probs in out.attentions:
        assert probs.shape == (B, tiny_config.num_attention_heads, T, T)
        torch.testing.assert_close(probs.sum(-1), torch.ones(B, tiny_config.num_attention_heads, T))
        pad_keys = ~mask.bool()[:, None, None, :].expand_as(probs)  # (B, nh, T, T)
        assert pad_keys.any() and probs[pad_keys].abs().max() == 0


def test_padding_does_not_change_real_tokens(mlm, tiny_config):
    ids, mask = padded_batch(tiny_config, lengths=(7, 12))
    with torch.no_grad():
        batched = mlm(ids, mask).logits[0, :7]
        alone = mlm(ids[:1, :7]).logits[0]
    torch.testing.assert_close(batched, alone, atol=1e-5, rtol=1e-5)



def test_attention_dropout_applies_on_the_explicit_path(tiny_config):
    """The path output_attentions=True takes (matmuls, not the fused kernel) drops attention probabilities in
    training too, and not in eval; hidden dropout is off, so only attention dropout can make two passes differ."""
    config = dataclasses.replace(tiny_config, attention_probs_dropout_prob=0.5, hidden_dropout_prob=0.0)
    torch.manual_seed(0)
    model = roberta.RobertaForMaskedLM(config)
    ids, mask = padded_batch(config)
    with torch.no_grad():
        first, second = (model.train()(ids, mask, output_attentions=True).logits for _ in range(2))
        assert not torch.allclose(first, second)
        first, second = (model.eval()(ids, mask, output_attentions=True).logits for _ in range(2))
        assert torch.equal(first, second)


# ----- initialisation -----
@pytest.mark.parametrize("arch", ["RobertaForMaskedLM", "RobertaForSequenceClassification"])
def test_a_new_model_is_initialised_as_transformers_initialises_it(arch, tiny_config):
    """Weights and embeddings N(0, initializer_range), biases zero, LayerNorms one and zero, and the <pad> rows of
    both embedding tables zero."""
    torch.manual_seed(0)
    model = getattr(roberta, arch)(tiny_config)
    std, pad = tiny_config.initializer_range, tiny_config.pad_token_id
    assert std == 0.02
    embeddings = model.roberta.embeddings
    for table in (embeddings.word_embeddings.weight, embeddings.position_embeddings.weight):
        assert torch.all(table[pad] == 0)
        rows = torch.cat([table[:pad], table[pad + 1:]])
        assert rows.std().item() == pytest.approx(std, abs=0.002) and abs(rows.mean().item()) < 0.002
    linears = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
    assert len(linears) > 6
    for linear in linears:
        assert torch.all(linear.bias == 0)
    weights = torch.cat([linear.weight.flatten() for linear in linears])
    assert weights.std().item() == pytest.approx(std, abs=0.001) and abs(weights.mean().item()) < 0.001
    norms = [m for m in model.modules() if isinstance(m, torch.nn.LayerNorm)]
    assert len(norms) == 2 * tiny_config.num_hidden_layers + 1 + (arch == "RobertaForMaskedLM")
    assert all(torch.all(n.weight == 1) and torch.all(n.bias == 0) for n in norms)
    if arch == "RobertaForMaskedLM":
        assert torch.all(model.lm_head.bias == 0)


# ----- loss -----
def labelled(ids, picks=((0, 2), (0, 5), (1, 1), (2, 10))):
    """Labels (B, T): the input token at `picks`, one label that differs from its input, -100 elsewhere."""
    labels = torch.full_like(ids, -100)
    for b, t in picks:
        labels[b, t] = ids[b, t]
    labels[2, 3] = 7
    return labels


def test_mlm_loss_and_logits_are_shaped_as_in_transformers(mlm, tiny_config):
    ids, mask = padded_batch(tiny_config)
    labels = labelled(ids)
    with torch.no_grad():
        out = mlm(ids, mask, labels=labels)
        masked = mlm(ids, mask, labels=labels, masked_only=True)
    selected = labels.ne(-100)
    assert out.logits.shape == (*ids.shape, tiny_config.vocab_size)  # every position, labels or not
    expected = F.cross_entropy(out.logits[selected], labels[selected])
    torch.testing.assert_close(out.loss, expected)
    # the masked-only opt-in: (N, V) logits of the labelled positions, in row-major order; the same loss
    torch.testing.assert_close(masked.logits, out.logits[selected], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(masked.loss, expected, atol=1e-5, rtol=1e-5)
    with pytest.raises(ValueError, match="labels"):
        mlm(ids, mask, masked_only=True)


def test_classifier_loss_and_logits_shape(tiny_config):
    config = roberta.RobertaConfig.from_preset("tiny", vocab_size=tiny_config.vocab_size,
                                               id2label={0: "a", 1: "b", 2: "c"})
    model = roberta.RobertaForSequenceClassification(config).eval()
    ids, mask = padded_batch(config)
    labels = torch.tensor([0, 2, 1])
    out = model(ids, mask, labels=labels)
    assert out.logits.shape == (3, 3)
    torch.testing.assert_close(out.loss, F.cross_entropy(out.logits, labels))



def test_a_regression_over_several_outputs_has_transformers_loss(tiny_config, tmp_path):
    """problem_type "regression" with num_labels > 1: the mean squared error over every output of every text, as
    transformers computes it (test_convert compares the one-output regression)."""
    transformers = pytest.importorskip("transformers")
    config = dataclasses.replace(tiny_config, id2label={0: "x", 1: "y", 2: "z"}, problem_type="regression")
    ours = roberta.RobertaForSequenceClassification(config).eval()
    ours.save_pretrained(tmp_path)
    theirs = transformers.RobertaForSequenceClassification.from_pretrained(tmp_path, dtype=torch.float32).eval()
    assert theirs.config.problem_type == "regression" and theirs.num_labels == 3
    ids, mask = padded_batch(config)
    labels = torch.randn(3, 3, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        got = ours(ids, mask, labels=labels)
        expected = theirs(input_ids=ids, attention_mask=mask, labels=labels)
    torch.testing.assert_close(got.logits, expected.logits, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(got.loss, expected.loss, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(got.loss, F.mse_loss(got.logits, labels))


def test_the_hub_mixins_own_loader_reaches_this_packages_checks(tiny_mlm_dir, tmp_path):
    """huggingface_hub's `ModelHubMixin.from_pretrained` (which `from_pretrained` above replaces) calls the class's
    `_from_pretrained`: overridden, it loads through `roberta.hub` (the same weights, the same refusals), not the
    mixin's loader, which would take a pickle checkpoint and load a partial one without a word."""
    from huggingface_hub import PyTorchModelHubMixin

    mixin_load = PyTorchModelHubMixin.from_pretrained.__func__
    model = mixin_load(roberta.RobertaForMaskedLM, str(tiny_mlm_dir))
    expected = roberta.RobertaForMaskedLM.from_pretrained(tiny_mlm_dir).state_dict()
    assert isinstance(model, roberta.RobertaForMaskedLM) and not model.training
    assert all(tensor.equal(expected[name]) for name, tensor in model.state_dict().items())
    damaged = shutil.copytree(tiny_mlm_dir, tmp_path / "damaged")
    weights = load_file(damaged / "model.safetensors")
    del weights["lm_head.bias"]
    save_file(weights, damaged / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(roberta.ModelLoadError, match="lm_head.bias"):
        mixin_load(roberta.RobertaForMaskedLM, str(damaged))


def test_outputs_index_as_transformers_outputs_do(mlm, tiny_config):
    """transformers-style calling code: out[0], out["logits"], "loss" in out, return_dict=False; a
    tokenizer's all-zero token_type_ids are taken, any other type refused."""
    ids, mask = padded_batch(tiny_config)
    labels = labelled(ids)
    with torch.no_grad():
        out = mlm(ids, mask)
        assert out[0] is out.logits and out["logits"] is out.logits and out.to_tuple() == (out.logits,)
        torch.testing.assert_close(mlm(ids, mask, token_type_ids=torch.zeros_like(ids)).logits, out.logits)
        out = mlm(ids, mask, labels=labels, output_attentions=True, output_hidden_states=True)
        assert out.to_tuple() == (out.loss, out.logits, out.hidden_states, out.attentions)  # transformers' order
        assert list(out) == ["loss", "logits", "hidden_states", "attentions"] and len(out) == 4  # keys, as theirs
        assert "loss" in out and out[-1] is out.attentions and dict(out)["loss"] is out.loss
        for absent in ("pooler_output", "last_hidden_state"):  # theirs have neither: read by attribute
            with pytest.raises(KeyError):
                out[absent]
        with pytest.raises(KeyError):  # a field that is None is not a key, as in transformers
            mlm(ids, mask)["hidden_states"]
        plain = mlm(ids, mask, labels=labels, return_dict=False)
        assert isinstance(plain, tuple) and len(plain) == 2
        torch.testing.assert_close(plain[1], out.logits)  # out took the explicit attention path
        assert mlm(ids, mask, return_dict=True).logits.shape == out.logits.shape
        with pytest.raises(ValueError, match="token_type_ids must be all zeros: RoBERTa has a single token type"):
            mlm(ids, mask, token_type_ids=torch.ones_like(ids))
        clf = roberta.RobertaForSequenceClassification(tiny_config).eval()
        clf_out = clf(ids, mask, token_type_ids=torch.zeros_like(ids))
        assert clf_out[0] is clf_out.logits and clf(ids, mask, return_dict=False)[0].shape == (3, 2)
        with pytest.raises(ValueError, match="token_type_ids must be all zeros"):
            clf(ids, mask, token_type_ids=torch.ones_like(ids))


# ----- save / load -----
def test_save_pretrained_round_trips_exactly(mlm, tiny_config, tmp_path):
    mlm.save_pretrained(tmp_path)
    assert (tmp_path / "config.json").is_file() and (tmp_path / "model.safetensors").is_file()
    saved = json.loads((tmp_path / "config.json").read_text())
    assert saved["model_type"] == "roberta" and saved["architectures"] == ["RobertaForMaskedLM"]
    assert "calibration_temperature" not in saved  # a classifier's setting
    loaded = roberta.RobertaForMaskedLM.from_pretrained(tmp_path)
    assert loaded.config == tiny_config and not loaded.training
    ours, theirs = mlm.state_dict(), loaded.state_dict()
    assert ours.keys() == theirs.keys()
    assert all(torch.equal(ours[k], theirs[k]) for k in ours)
    ids, mask = padded_batch(tiny_config)
    with torch.no_grad():
        assert torch.equal(mlm(ids, mask).logits, loaded(ids, mask).logits)


def test_saved_weights_are_readable_as_any_new_file(mlm, tmp_path):
    """safetensors creates its file owner-only (0600); ours get the umask's mode, as config.json does."""
    umask = os.umask(0o022)
    try:
        mlm.save_pretrained(tmp_path)
    finally:
        os.umask(umask)
    assert (tmp_path / "model.safetensors").stat().st_mode & 0o777 == 0o644
    assert (tmp_path / "config.json").stat().st_mode & 0o777 == 0o644


def test_a_save_writes_through_its_own_temporary_files_and_leaves_none_when_it_fails(mlm, tmp_path, monkeypatch):
    """Each file goes to a temporary name beside it that holds the process id, then is renamed into place: a fixed
    .NAME.tmp was shared by two processes saving the same folder, and a failed save left it behind."""
    others = {tmp_path / ".model.safetensors.tmp": "another process", tmp_path / ".config.json.tmp": "mid-write"}
    for path, text in others.items():
        path.write_text(text)
    renamed, real_replace = [], os.replace

    def replace(src, dst):
        renamed.append((os.path.basename(src), os.path.basename(dst)))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    mlm.save_pretrained(tmp_path)
    pid = os.getpid()
    assert renamed == [(f".config.json.tmp-{pid}", "config.json"),
                       (f".model.safetensors.tmp-{pid}", "model.safetensors")]
    assert {path: path.read_text() for path in others} == others
    saved = {path.name: path.read_bytes() for path in tmp_path.iterdir()}

    def full_disk(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full_disk)
    with pytest.raises(OSError, match="No space left"):  # save_model: the mixin's save_pretrained first deletes
        roberta.checkpoint.save_model(tmp_path, mlm.config, "RobertaForMaskedLM", {})  # config.json
    assert {path.name: path.read_bytes() for path in tmp_path.iterdir()} == saved  # nothing changed, nothing left

    def full_disk_for_the_weights(src, dst):
        if os.path.basename(dst) == "model.safetensors":
            raise OSError(28, "No space left on device")
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", full_disk_for_the_weights)
    with pytest.raises(OSError, match="No space left"):  # the mixin deletes config.json before it calls save_model
        mlm.save_pretrained(tmp_path)
    assert {path.name: path.read_bytes() for path in tmp_path.iterdir()} == saved  # config.json written again


def test_the_same_model_saved_again_is_the_same_file(mlm, tmp_path):
    """safetensors writes its metadata in a random order: a model released again unchanged was a new binary to
    git. Ours sorts it; the file reads as safetensors wrote it."""
    from safetensors import safe_open

    files = []
    for i in range(4):
        mlm.save_pretrained(tmp_path / str(i))
        files.append((tmp_path / str(i) / "model.safetensors").read_bytes())
    assert all(f == files[0] for f in files)
    header = json.loads(files[0][8:8 + int.from_bytes(files[0][:8], "little")])
    assert list(header["__metadata__"]) == sorted(header["__metadata__"])
    with safe_open(tmp_path / "0" / "model.safetensors", "pt") as f:
        assert f.metadata()["format"] == "pt"
        assert torch.equal(f.get_tensor("roberta.embeddings.word_embeddings.weight"),
                           mlm.roberta.embeddings.word_embeddings.weight)


def test_save_pretrained_writes_a_short_true_model_card(mlm, tiny_config, tmp_path):
    """huggingface_hub's default card said "This model has been pushed to the Hub" and "[More Information Needed]"
    three times, even for a local save. Ours says what the model is and how it loads, and its code runs."""
    transformers = pytest.importorskip("transformers")
    clf = roberta.RobertaForSequenceClassification(dataclasses.replace(tiny_config, id2label={0: "neg", 1: "pos"}))
    for model, head in ((mlm, "a masked-language-model head"), (clf, "a classifier head (labels neg, pos)")):
        folder = tmp_path / model.architecture
        model.save_pretrained(folder)
        card = (folder / "README.md").read_text()
        assert "[More Information Needed]" not in card and "pushed to the Hub" not in card
        assert card.startswith("---\n") and f"pipeline_tag: {roberta.checkpoint.task_of(model.architecture)}" in card
        assert f"# {model.architecture}\n" in card and head in card
        assert f"{tiny_config.num_hidden_layers} layers, hidden size {tiny_config.hidden_size}" in card
        code = card.split("```python\n", 1)[1].split("```", 1)[0]
        namespace = {"folder": str(folder)}
        exec(code, namespace)  # the card's usage: roberta's class, then transformers'
        assert isinstance(namespace["model"], getattr(transformers, model.architecture))
    # a folder's own card is kept (a training run's, written before), as huggingface_hub does
    (tmp_path / "own").mkdir()
    (tmp_path / "own" / "README.md").write_text("my card")
    mlm.save_pretrained(tmp_path / "own")
    assert (tmp_path / "own" / "README.md").read_text() == "my card"



def test_the_model_card_names_transformers_as_the_library(mlm, tmp_path):
    """The folders load in transformers: with library_name "transformers" the Hub shows its "Use in Transformers"
    snippet and the inference widget (a library of our own hid both); this package is named in the tags."""
    from huggingface_hub import ModelCard

    mlm.save_pretrained(tmp_path)
    data = ModelCard.load(tmp_path / "README.md").data
    assert data.library_name == "transformers"
    assert {"roberta", "roberta-from-scratch"} <= set(data.tags)


def test_save_pretrained_onto_a_file_says_it_writes_a_folder(mlm, tmp_path):
    """A path that is a file was os.makedirs' FileExistsError ("[Errno 17] File exists"); the file is left as it was."""
    file = tmp_path / "model.bin"
    file.write_text("mine")
    with pytest.raises(NotADirectoryError, match=re.escape(f"{file} is a file: save_pretrained writes a folder")):
        mlm.save_pretrained(file)
    assert file.read_text() == "mine"


def test_save_pretrained_refuses_an_option_it_would_drop(mlm, tmp_path):
    """huggingface_hub reads unknown keywords only when it pushes: max_shard_size= wrote one file, a misspelt
    push_to_hub pushed nothing, config= left config.json as it was, all without a word."""
    for options, message in [({"max_shard_size": "10KB"}, "'max_shard_size'.*always one model.safetensors file"),
                             ({"safe_serialization": False}, "'safe_serialization'.*always one model.safetensors"),
                             ({"push_to_hbu": True, "repo_id": "me/x"}, "'push_to_hbu'.*did you mean push_to_hub"),
                             ({"config": {"a": 1}}, r"'config'.*written from model\.config"),
                             ({"repo_id": "me/x"}, "repo_id= is used only when it pushes to the Hub"),
                             ({"private": True}, "private= is used only when it pushes to the Hub")]:
        with pytest.raises(TypeError, match=message):
            mlm.save_pretrained(tmp_path / "out", **options)
    assert not (tmp_path / "out").exists()  # refused before anything is written
    mlm.save_pretrained(tmp_path / "out", model_card_kwargs={"head": "a head named here"})
    assert "a head named here" in (tmp_path / "out" / "README.md").read_text()


def test_save_pretrained_passes_push_options_on_and_push_to_hub_still_saves(mlm, tmp_path, monkeypatch):
    """push_to_hub's own options (repo_id, private, commit_message, ...) go with push_to_hub=True, and the mixin's
    push_to_hub, which saves with config=None, is not refused."""
    from huggingface_hub import hub_mixin
    calls = []

    class FakeApi:  # the Hub, as far as the mixin's push_to_hub uses it
        def __init__(self, token=None):
            calls.append(("token", token))

        def create_repo(self, repo_id, private=None, exist_ok=False):
            calls.append(("create_repo", repo_id, private))
            return type("Repo", (), {"repo_id": repo_id})()

        def upload_folder(self, repo_id, folder_path, commit_message, **kwargs):
            calls.append(("upload", repo_id, sorted(p.name for p in Path(folder_path).iterdir()), commit_message))
            return "commit-url"

    monkeypatch.setattr(hub_mixin, "HfApi", FakeApi)
    files = ["README.md", "config.json", "model.safetensors"]
    assert mlm.save_pretrained(tmp_path / "out", push_to_hub=True, repo_id="me/x", private=True,
                               commit_message="first", token="t") == "commit-url"
    assert calls == [("token", "t"), ("create_repo", "me/x", True), ("upload", "me/x", files, "first")]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == files
    calls.clear()
    assert mlm.push_to_hub("me/y") == "commit-url"
    assert calls[-1][:3] == ("upload", "me/y", files)


def test_classifier_round_trip_keeps_labels(tiny_clf_dir):
    model = roberta.RobertaForSequenceClassification.from_pretrained(tiny_clf_dir)
    assert model.config.id2label == {0: "negative", 1: "positive"}
    assert model.config.label2id == {"negative": 0, "positive": 1}
    assert json.loads((tiny_clf_dir / "config.json").read_text())["calibration_temperature"] == 1.0


def test_each_head_class_is_the_one_hub_architectures_names():
    """checkpoint.ARCHITECTURES is the one list of the classes this package loads: each model class with a head is in
    it, saves that name into config.json and carries its task as the Hub pipeline tag, and each pipeline task
    builds the class whose task it is (a new head class must be added there, or it could not be loaded back)."""
    classes = [roberta.RobertaForMaskedLM, roberta.RobertaForSequenceClassification]
    assert sorted(cls.architecture for cls in classes) == sorted(roberta.checkpoint.ARCHITECTURES)
    config = roberta.RobertaConfig.from_preset("tiny")
    for cls in classes:
        assert cls.__name__ == cls.architecture
        assert cls._hub_mixin_info.model_card_data.pipeline_tag == roberta.checkpoint.task_of(cls.architecture)
        assert cls(config).config.to_hf_dict(cls.architecture)["architectures"] == [cls.architecture]
    for task, pipeline_class in roberta.pipelines.TASKS.items():
        assert pipeline_class.model_class.architecture in roberta.checkpoint.ARCHITECTURES, task
    assert {roberta.checkpoint.task_of(cls.architecture) for cls in classes} <= set(roberta.pipelines.TASKS)
    assert [roberta.model_class(name) for name in roberta.checkpoint.ARCHITECTURES] == classes  # one name -> class map


def test_auto_model_loads_the_class_config_json_names(tiny_mlm_dir, tiny_clf_dir, tmp_path):
    """roberta.auto_model (train.evaluate's and train.export's loader): the head the folder's config.json names,
    a masked LM where it names none."""
    assert type(roberta.auto_model(tiny_clf_dir)) is roberta.RobertaForSequenceClassification
    assert type(roberta.auto_model(tiny_mlm_dir)) is roberta.RobertaForMaskedLM
    bare = shutil.copytree(tiny_mlm_dir, tmp_path / "bare")
    config = json.loads((bare / "config.json").read_text())
    del config["architectures"]
    (bare / "config.json").write_text(json.dumps(config))
    assert type(roberta.auto_model(bare)) is roberta.RobertaForMaskedLM


def _rewrite_weights(folder, change):
    path = folder / "model.safetensors"
    state = load_file(str(path))
    change(state)
    save_file(state, str(path))


QUERY = "roberta.encoder.layer.1.attention.self.query.weight"


@pytest.mark.parametrize("change, message", [
    (lambda s: s.pop(QUERY), f"missing keys ['{QUERY}']"),
    (lambda s: s.update({"roberta.extra.weight": torch.zeros(3)}), "unexpected keys ['roberta.extra.weight']"),
    (lambda s: s.update({"lm_head.dense.weight": torch.zeros(3, 3)}), "lm_head.dense.weight has shape (3, 3)"),
], ids=["missing key", "unexpected key", "wrong shape"])
def test_weights_that_do_not_fit_are_named(mlm, tmp_path, change, message):
    mlm.save_pretrained(tmp_path)
    _rewrite_weights(tmp_path, change)
    with pytest.raises(ValueError, match=re.escape(message)):
        roberta.RobertaForMaskedLM.from_pretrained(tmp_path)


@pytest.mark.parametrize("arch", ["RobertaForMaskedLM", "RobertaForSequenceClassification"])
def test_the_shapes_a_checkpoint_is_checked_against_are_a_built_models(arch, tiny_config):
    """`expected_shapes` builds the model on the meta device without initialising it: the same names, shapes and
    order as the state dict of the model built for real."""
    cls = getattr(roberta, arch)
    built = [(name, tuple(t.shape)) for name, t in cls(tiny_config).state_dict().items()]
    assert list(roberta.loading.expected_shapes(cls, tiny_config).items()) == built


def test_the_shapes_a_checkpoint_is_checked_against_take_no_torch_dynamo():
    """Initialising on the meta device imported torch._dynamo (`normal_` is a Python decomposition there), about a
    second of the app's start-up, for values a shape check never reads."""
    code = ("import sys, roberta; from roberta.loading import expected_shapes; "
            "[expected_shapes(cls, roberta.RobertaConfig.from_preset('tiny')) "
            "for cls in (roberta.RobertaForMaskedLM, roberta.RobertaForSequenceClassification)]; "
            "print('torch._dynamo' in sys.modules)")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[1], timeout=120)
    assert (run.returncode, run.stdout.strip()) == (0, "False"), run.stderr


def test_folder_without_weights_gives_clear_error(mlm, tmp_path):
    mlm.save_pretrained(tmp_path)
    (tmp_path / "model.safetensors").unlink()
    with pytest.raises(FileNotFoundError, match="model.safetensors"):
        roberta.RobertaForMaskedLM.from_pretrained(tmp_path)


def test_pickle_checkpoints_are_never_loaded(mlm, tmp_path, monkeypatch):
    # A pytorch_model.bin alone is refused ...
    only_bin = tmp_path / "only-bin"
    mlm.save_pretrained(only_bin)
    (only_bin / "model.safetensors").unlink()
    torch.save(mlm.state_dict(), only_bin / "pytorch_model.bin")

    def refuse(*args, **kwargs):
        raise AssertionError("a pickle loader was called")
    monkeypatch.setattr(torch, "load", refuse)
    monkeypatch.setattr(pickle, "load", refuse)
    monkeypatch.setattr(pickle, "loads", refuse)
    with pytest.raises(FileNotFoundError, match="holds pytorch_model.bin but no model.safetensors: pickled weights "
                                                "are never loaded.*save_pretrained"):
        roberta.RobertaForMaskedLM.from_pretrained(only_bin)
    # ... and next to model.safetensors it is ignored: nothing is unpickled.
    both = tmp_path / "both"
    mlm.save_pretrained(both)
    (both / "pytorch_model.bin").write_bytes(b"not a pickle: loading this would fail")
    loaded = roberta.RobertaForMaskedLM.from_pretrained(both)
    assert torch.equal(loaded.lm_head.bias, mlm.lm_head.bias)


def test_from_pretrained_encoder_loads_encoder_and_fresh_head(tiny_mlm_dir):
    mlm = roberta.RobertaForMaskedLM.from_pretrained(tiny_mlm_dir)
    torch.manual_seed(1)
    clf = roberta.RobertaForSequenceClassification.from_pretrained_encoder(
        tiny_mlm_dir, id2label={0: "neg", 1: "neutral", 2: "pos"})
    assert clf.config.num_labels == 3 and clf.config.id2label[2] == "pos"
    encoder = {k: v for k, v in mlm.state_dict().items() if k.startswith("roberta.")}
    clf_state = clf.state_dict()
    assert encoder and all(torch.equal(v, clf_state[k]) for k, v in encoder.items())
    assert not any(k.startswith("lm_head") for k in clf_state)
    head = clf.classifier
    assert head.out_proj.weight.shape == (3, clf.config.hidden_size)
    assert torch.all(head.out_proj.bias == 0) and torch.all(head.dense.bias == 0)  # freshly initialised
    # N(0, 0.02), not copied from anything: 1,024 draws put the std within 0.002 (4.5 standard errors)
    assert head.dense.weight.std().item() == pytest.approx(0.02, abs=0.002)
    ids, mask = padded_batch(clf.config)
    assert clf.eval()(ids, mask).logits.shape == (3, 3)


def test_from_pretrained_ends_on_map_location(tiny_mlm_dir, monkeypatch):
    """As PyTorchModelHubMixin's: map_location="cuda" read the tensors to the GPU and returned a CPU model. (Only
    the CPU here: the move is recorded, and every tensor checked to be where it was asked.)"""
    moved = []
    real_to = torch.nn.Module.to
    monkeypatch.setattr(torch.nn.Module, "to", lambda self, *args, **kwargs: moved.append(args) or real_to(
        self, *args, **kwargs))
    for location in ("cpu", torch.device("cpu"), -1):
        moved.clear()
        model = roberta.RobertaForMaskedLM.from_pretrained(tiny_mlm_dir, map_location=location)
        assert moved == [(torch.device("cpu"),)] and not model.training
        assert {t.device for t in model.state_dict().values()} == {torch.device("cpu")}
        moved.clear()
        clf = roberta.RobertaForSequenceClassification.from_pretrained_encoder(tiny_mlm_dir, map_location=location)
        assert moved == [(torch.device("cpu"),)]
        assert {t.device for t in clf.state_dict().values()} == {torch.device("cpu")}


def test_from_pretrained_encoder_resets_the_old_heads_calibration_and_problem_type(tiny_clf_dir, tmp_path):
    """A fresh head: a classifier checkpoint's calibration_temperature (fitted to its own head) and problem_type
    were carried over into the new classifier (its probabilities divided by the old head's 2.07)."""
    import shutil

    folder = shutil.copytree(tiny_clf_dir, tmp_path / "clf")
    config = json.loads((folder / "config.json").read_text())
    config.update(calibration_temperature=2.07, problem_type="multi_label_classification")
    (folder / "config.json").write_text(json.dumps(config))
    clf = roberta.RobertaForSequenceClassification.from_pretrained_encoder(folder, num_labels=3)
    assert (clf.config.calibration_temperature, clf.config.problem_type) == (1.0, None)
    given = roberta.RobertaForSequenceClassification.from_pretrained_encoder(
        folder, num_labels=1, calibration_temperature=1.5, problem_type="regression")  # given: kept
    assert (given.config.calibration_temperature, given.config.problem_type) == (1.5, "regression")
    assert roberta.RobertaForSequenceClassification.from_pretrained(folder).config.calibration_temperature == 2.07


# ----- positions, limits, training -----
def test_position_ids_follow_roberta():
    pad = 1
    ids = torch.tensor([[0, 50, 51, 2, 1, 1],
                        [0, 60, 61, 62, 63, 2]])
    expected = torch.tensor([[2, 3, 4, 5, 1, 1],  # real tokens count from pad + 1; padding gets pad
                             [2, 3, 4, 5, 6, 7]])
    assert torch.equal(position_ids_from_input_ids(ids, pad), expected)


def test_inputs_of_the_wrong_rank_name_the_shape_expected(mlm, tiny_config):
    """One text's 1-D input_ids failed deep inside with "not enough values to unpack (expected 3, got 2)"."""
    ids, mask = padded_batch(tiny_config)
    with pytest.raises(ValueError, match=re.escape(f"input_ids must be (batch, length), got shape ({ids.shape[1]},) "
                                                   "(one text: input_ids[None])")):
        mlm(ids[0])
    with pytest.raises(ValueError, match=re.escape("input_ids must be (batch, length), got shape (1, 3, 12)")):
        mlm(ids[None])
    clf = roberta.RobertaForSequenceClassification(tiny_config)
    with pytest.raises(ValueError, match=r"input_ids must be \(batch, length\)"):
        clf(ids[0])
    embeds = mlm.roberta.embeddings.word_embeddings(ids)  # (B, T, H)
    H = tiny_config.hidden_size
    for wrong in (embeds[0], embeds[..., :5]):
        with pytest.raises(ValueError, match=re.escape(f"inputs_embeds must be (batch, length, hidden_size={H}), "
                                                       f"got shape {tuple(wrong.shape)}")):
            mlm(inputs_embeds=wrong)
    assert mlm(ids[:1]).logits.shape[:2] == (1, ids.shape[1])


def test_inputs_and_labels_of_the_wrong_type_or_shape_say_what_is_expected(mlm, tiny_config):
    """A list was "'list' object has no attribute 'dim'", float ids a RuntimeError from the embedding, and masked-LM
    labels (1,) for input_ids (1, 3) torch's "Expected input batch_size (3) to match target batch_size (1)"."""
    ids = torch.tensor([[0, 5, 2]])
    with pytest.raises(TypeError, match=re.escape("input_ids must be a torch.Tensor of token ids, (batch, length), "
                                                  "got list: torch.tensor(input_ids)")):
        mlm([[0, 5, 2]])
    with pytest.raises(TypeError, match=re.escape("input_ids must be integers (token ids, (batch, length)), got "
                                                  "torch.float32: .long() converts them")):
        mlm(ids.float())
    with pytest.raises(TypeError, match="inputs_embeds must be a torch.Tensor"):
        mlm(inputs_embeds=[[[0.0] * tiny_config.hidden_size]])
    for labels in (torch.tensor([5]), torch.tensor([[5, -100]])):
        with pytest.raises(ValueError, match=re.escape("labels must be token ids of input_ids' shape (batch, length), "
                                                       f"-100 where nothing is predicted: (1, 3) here, got shape "
                                                       f"{tuple(labels.shape)}")):
            mlm(ids, labels=labels)
        with pytest.raises(ValueError, match="labels must be token ids of input_ids' shape"):
            mlm(ids, labels=labels, masked_only=True)
    with pytest.raises(TypeError, match=r"labels must be integers .*got torch.float32"):
        mlm(ids, labels=torch.tensor([[5.0, -100, -100]]))
    assert mlm(ids, labels=torch.tensor([[-100, 5, -100]])).loss > 0
    clf = roberta.RobertaForSequenceClassification(tiny_config).eval()
    batch = ids.repeat(2, 1)  # (2, 3)
    for labels in (torch.tensor([1]), torch.tensor([[1, 0], [0, 1]])):
        with pytest.raises(ValueError, match=re.escape("labels must be one class id per text, (batch,): (2,) here, got "
                                                       f"shape {tuple(labels.shape)}")):
            clf(batch, labels=labels)
    with pytest.raises(TypeError, match="labels must be a torch.Tensor, got list"):
        clf(batch, labels=[1, 0])
    # (B,) and, as transformers reads it, (B, 1)
    assert clf(batch, labels=torch.tensor([1, 0])).loss == clf(batch, labels=torch.tensor([[1], [0]])).loss


def test_masks_positions_and_token_types_of_the_wrong_type_or_shape_are_named(mlm, tiny_config):
    """A list as attention_mask was "'list' object has no attribute 'shape'", position_ids of another length
    torch's "The size of tensor a (10) must match the size of tensor b (3)", float ones a RuntimeError from the
    embedding, a list "'list' object has no attribute 'min'"; token_type_ids (1, 3) beside (B, T) ids were taken
    silently."""
    ids, mask = padded_batch(tiny_config)  # (B, T)
    B, T = ids.shape
    with pytest.raises(TypeError, match=re.escape(f"attention_mask must be a torch.Tensor, (batch, tokens) = {(B, T)}"
                                                  " of ones and zeros, got list: torch.tensor(attention_mask)")):
        mlm(ids, mask.tolist())
    positions = position_ids_from_input_ids(ids, tiny_config.pad_token_id)  # (B, T)
    with pytest.raises(ValueError, match=re.escape(f"position_ids must be (batch, length) = {(B, T)} (or "
                                                   "broadcastable to it), got shape (3, 3)")):
        mlm(ids, mask, position_ids=positions[:, :3])
    with pytest.raises(TypeError, match=re.escape("position_ids must be integers (positions, (batch, length)), got "
                                                  "torch.float32")):
        mlm(ids, mask, position_ids=positions.float())
    with pytest.raises(TypeError, match=re.escape("position_ids must be a torch.Tensor of positions, (batch, "
                                                  "length), got list")):
        mlm(ids, mask, position_ids=positions.tolist())
    with pytest.raises(ValueError, match=re.escape(f"token_type_ids must be (batch, length) = {(B, T)} (or "
                                                   "broadcastable to it), got shape (1, 3)")):
        mlm(ids, mask, token_type_ids=torch.zeros(1, 3, dtype=torch.long))
    with pytest.raises(TypeError, match="token_type_ids must be a torch.Tensor"):
        mlm(ids, mask, token_type_ids=torch.zeros_like(ids).tolist())
    with torch.no_grad():  # what broadcasts, as in transformers, still runs: one row of positions or types for all
        expected = mlm(ids, mask).logits
        torch.testing.assert_close(mlm(ids[:1], mask[:1], position_ids=positions[0]).logits, expected[:1])
        torch.testing.assert_close(mlm(ids, mask, token_type_ids=torch.zeros(1, T, dtype=torch.long)).logits,
                                   expected)


def test_labels_outside_the_classes_are_named_on_the_cpu(mlm, tiny_config):
    """A masked-LM label past the vocabulary, or a class id past the labels, was torch's "Target 99999 is out of
    bounds"; -100 (nothing to predict) stays allowed in both heads, as in transformers."""
    ids, mask = padded_batch(tiny_config)
    V = tiny_config.vocab_size
    for bad in (V, -5):
        labels = torch.full_like(ids, -100)
        labels[0, 1] = bad
        for masked_only in (False, True):
            with pytest.raises(ValueError, match=re.escape(f"labels must be class ids from 0 to {V - 1}, or -100 "
                                                           f"where nothing is predicted, got {bad}")):
                mlm(ids, mask, labels=labels, masked_only=masked_only)
    labels = torch.full_like(ids, -100)
    labels[0, 1] = V - 1
    assert mlm(ids, mask, labels=labels).loss > 0
    clf = roberta.RobertaForSequenceClassification(tiny_config).eval()
    with pytest.raises(ValueError, match=re.escape("labels must be class ids from 0 to 1, or -100 where nothing is "
                                                   "predicted, got 2")):
        clf(ids, mask, labels=torch.tensor([0, 2, 1]))
    assert clf(ids, mask, labels=torch.tensor([0, -100, 1])).loss > 0


def test_number_targets_of_the_wrong_shape_are_named(tiny_config):
    """Float labels (B,) on a two-label model without problem_type are multi-label targets (as transformers reads
    them), which failed in torch with "Target size (torch.Size([3])) must be the same as input size"; a regression
    over several outputs broadcast (B,) targets against (B, L) with only a warning."""
    ids, mask = padded_batch(tiny_config)
    clf = roberta.RobertaForSequenceClassification(tiny_config).eval()
    with pytest.raises(ValueError, match=re.escape("labels must be 0/1 targets, (batch, num_labels), for multi-label "
                                                   "classification (float labels are read as multi-label targets")):
        clf(ids, mask, labels=torch.tensor([0.0, 1.0, 1.0]))
    assert clf(ids, mask, labels=torch.tensor([[0.0, 1.0]] * 3)).loss > 0
    regression = roberta.RobertaForSequenceClassification(
        dataclasses.replace(tiny_config, id2label={0: "a", 1: "b", 2: "c"}, problem_type="regression")).eval()
    with pytest.raises(ValueError, match=re.escape("labels must be one number per output, (batch, num_labels), for a "
                                                   "regression: (3, 3) here, got shape (3,)")):
        regression(ids, mask, labels=torch.tensor([0.5, 1.0, 2.0]))
    one = roberta.RobertaForSequenceClassification(dataclasses.replace(tiny_config, id2label={0: "score"})).eval()
    loss = one(ids, mask, labels=torch.tensor([0.5, 1.0, 2.0])).loss
    assert loss == one(ids, mask, labels=torch.tensor([[0.5], [1.0], [2.0]])).loss  # (B,) or (B, 1)
    assert one(ids[:1], mask[:1], labels=torch.tensor(0.5)).loss >= 0  # one text's number alone, as transformers
    with pytest.raises(ValueError, match=re.escape("labels must be one number per text, (batch,) or (batch, 1), for "
                                                   "a regression: (3,) here, got shape (2,)")):
        one(ids, mask, labels=torch.tensor([0.5, 1.0]))


def test_roberta_model_from_pretrained_says_how_to_load_an_encoder():
    with pytest.raises(TypeError, match=r"RobertaModel has no from_pretrained here: .*"
                                        r"RobertaForMaskedLM\.from_pretrained\('m'\)\.roberta"):
        roberta.RobertaModel.from_pretrained("m")


def test_a_4d_boolean_mask_is_read_as_given(mlm, tiny_config):
    """attention_keep_mask returns a 4-D boolean mask unchanged, whatever broadcastable shape (B or 1, nh or 1,
    T or 1, T); its docstring said (B, 1, 1, T) or (B, 1, T, T)."""
    from roberta.inputs import attention_keep_mask

    ids, mask = padded_batch(tiny_config)
    B, T = ids.shape
    nh = tiny_config.num_attention_heads
    per_head = mask.bool()[None, None, :1, :].expand(1, nh, T, T).clone()  # (1, nh, T, T)
    assert attention_keep_mask(per_head, B, T, nh) is per_head
    doc = attention_keep_mask.__doc__
    assert "broadcastable to (B, nh, T, T)" in doc and "(B, 1, 1, T) or (B, 1, T, T)" not in doc
    with torch.no_grad():
        torch.testing.assert_close(mlm(ids[:1], per_head).logits, mlm(ids[:1], mask[:1]).logits, atol=1e-5,
                                   rtol=1e-5)


def test_ids_outside_the_vocabulary_are_named_unless_compiling(mlm, tiny_config, monkeypatch):
    """An id past the vocabulary (or negative) was torch's bare "index out of range in self" (on a GPU a
    device-side assert that breaks the CUDA context); under torch.compile the check is left out."""
    ids, mask = padded_batch(tiny_config)
    V = tiny_config.vocab_size
    for bad, low, high in ((V, 0, V), (-1, -1, V - 1)):
        wrong = ids.clone()
        wrong[1, 2] = bad
        with pytest.raises(ValueError, match=re.escape(f"input_ids must be from 0 to {V - 1} (the model's "
                                                       f"vocabulary has {V} tokens), got {low} to {high}")):
            mlm(wrong, mask)
    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)
    with pytest.raises(IndexError):
        mlm(wrong, mask)


def test_a_4d_float_mask_of_nan_is_refused_as_transformers_cannot_read_it(mlm, tiny_config):
    """A NaN passed the check and was read as "do not attend"; transformers adds it to the scores (NaN outputs)."""
    ids, mask = padded_batch(tiny_config)
    additive = torch.zeros(mask.shape).masked_fill(mask.eq(0), float("-inf"))[:, None, None, :]  # (B, 1, 1, T)
    with torch.no_grad():
        torch.testing.assert_close(mlm(ids, additive).logits, mlm(ids, mask).logits)  # -inf: not attended to
        additive[0, 0, 0, -1] = float("nan")
        with pytest.raises(ValueError, match=r"a large negative number .* got other values \(NaN"):
            mlm(ids, additive)


def test_inputs_embeds_and_position_ids_give_the_input_ids_result(mlm, tiny_config):
    ids, mask = padded_batch(tiny_config)
    embeds = mlm.roberta.embeddings.word_embeddings(ids)  # (B, T, H)
    positions = position_ids_from_input_ids(ids, tiny_config.pad_token_id)
    real = mask.bool()
    with torch.no_grad():
        expected = mlm(ids, mask).logits
        given = mlm(inputs_embeds=embeds, attention_mask=mask, position_ids=positions).logits
        # without position_ids, embeddings count positions from pad_token_id + 1 (as transformers): the real
        # tokens of right-padded rows get the positions input_ids give them
        counted = mlm(inputs_embeds=embeds, attention_mask=mask).logits
    torch.testing.assert_close(given, expected)
    torch.testing.assert_close(counted[real], expected[real])
    with pytest.raises(ValueError, match="exactly one of input_ids and inputs_embeds"):
        mlm(ids, inputs_embeds=embeds)


def test_longest_input_works_and_longer_raises(mlm, tiny_config):
    n = tiny_config.max_length
    assert n == tiny_config.max_position_embeddings - tiny_config.pad_token_id - 1
    ids = torch.randint(5, tiny_config.vocab_size, (1, n))
    with torch.no_grad():
        assert mlm(ids).logits.shape == (1, n, tiny_config.vocab_size)
        with pytest.raises(ValueError, match=f"input has {n + 1} tokens but the model takes at most {n}"):
            mlm(torch.randint(5, tiny_config.vocab_size, (1, n + 1)))
        # what limits the length is the position table: a batch padded past it, its real tokens within, runs
        padded = torch.full((1, n + 7), tiny_config.pad_token_id)
        padded[0, :5] = ids[0, :5]
        torch.testing.assert_close(mlm(padded).logits[0, :5], mlm(ids[:, :5]).logits[0])
        table = tiny_config.max_position_embeddings
        with pytest.raises(ValueError, match=f"position_ids must be from 0 to {table - 1} .*, got 0 to {table}"):
            mlm(ids[:, :3], position_ids=torch.tensor([[0, 1, table]]))
        with pytest.raises(ValueError, match="got -1 to 2"):
            mlm(ids[:, :3], position_ids=torch.tensor([[-1, 1, 2]]))


def test_training_backward_reaches_tied_embedding(tiny_config):
    torch.manual_seed(0)
    model = roberta.RobertaForMaskedLM(tiny_config).train()
    ids, mask = padded_batch(tiny_config)
    labels = torch.full_like(ids, -100)
    labels[:, 1] = ids[:, 1]
    with torch.no_grad():  # dropout is active in train mode
        assert not torch.equal(model(ids, mask).logits, model(ids, mask).logits)
    out = model(ids, mask, labels=labels, masked_only=True)  # the pretraining path
    assert out.logits is None  # the fused loss never builds logits
    out.loss.backward()
    emb = model.roberta.embeddings.word_embeddings.weight
    assert emb is not None and emb.grad is not None
    # Rows of tokens absent from the input get gradient only through the tied decoder.
    absent = torch.ones(tiny_config.vocab_size, dtype=torch.bool)
    absent[ids.unique()] = False
    absent[tiny_config.pad_token_id] = False
    assert emb.grad[absent].abs().sum(-1).gt(0).all()
    assert all(p.grad is not None for n, p in model.named_parameters()), "every parameter gets a gradient"


# ----- the fused masked-only loss (roberta.loss) and the CPU bfloat16 attention path -----
@pytest.mark.parametrize("chunk_size", [1, 3, 128, None])
def test_fused_loss_matches_linear_then_cross_entropy(chunk_size):
    g = torch.Generator().manual_seed(0)
    x, weight, bias = (torch.randn(shape, generator=g, requires_grad=True) for shape in [(10, 8), (50, 8), (50,)])
    targets = torch.randint(50, (10,), generator=g)
    loss, logits = masked_lm_loss(x, weight, bias, targets, chunk_size)
    assert logits is None  # gradients on: fused, no logits
    grads = torch.autograd.grad(3 * loss, (x, weight, bias))  # 3: a non-unit upstream gradient
    expected = F.cross_entropy(F.linear(x, weight, bias), targets)
    torch.testing.assert_close(loss, expected)
    for got, want in zip(grads, torch.autograd.grad(3 * expected, (x, weight, bias))):
        torch.testing.assert_close(got, want, atol=1e-6, rtol=1e-5)


def test_fused_loss_chunks_are_cache_sized_on_cpu_and_memory_sized_on_a_gpu():
    from roberta.loss import CHUNK_ROWS, GPU_CHUNK_BYTES, chunk_rows
    assert chunk_rows(torch.device("cpu"), 32_768) == CHUNK_ROWS == 128
    # a pretraining batch of 512 x 128 tokens has ~9,800 targets: 3 chunks on a GPU, not 77
    assert chunk_rows(torch.device("cuda", 0), 32_768) == 4_096
    assert chunk_rows(torch.device("cuda"), 50_265) * 50_265 * 4 <= GPU_CHUNK_BYTES
    assert chunk_rows(torch.device("cuda"), 10_000_000) == CHUNK_ROWS  # never fewer rows than on CPU


def _loss_and_grads(model, ids, mask, labels, masked_only, autocast=False):
    model.zero_grad(set_to_none=True)
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
        out = model(ids, mask, labels=labels, masked_only=masked_only)
    out.loss.backward()
    return out, {n: p.grad.clone() for n, p in model.named_parameters()}


@pytest.fixture
def mlm_without_dropout(tiny_config):
    torch.manual_seed(0)
    config = roberta.RobertaConfig(**{**tiny_config.to_dict(), "hidden_dropout_prob": 0.0,
                                      "attention_probs_dropout_prob": 0.0})
    return roberta.RobertaForMaskedLM(config).train()


def test_masked_only_training_path_matches_the_default_loss(mlm_without_dropout):
    model = mlm_without_dropout
    ids, mask = padded_batch(model.config)
    labels = torch.where(torch.rand(ids.shape) < 0.4, ids, torch.full_like(ids, -100))
    labels[~mask.bool()] = -100
    fused, fused_grads = _loss_and_grads(model, ids, mask, labels, masked_only=True)
    plain, plain_grads = _loss_and_grads(model, ids, mask, labels, masked_only=False)
    torch.testing.assert_close(fused.loss, plain.loss, atol=1e-5, rtol=1e-5)
    for name in plain_grads:
        torch.testing.assert_close(fused_grads[name], plain_grads[name], atol=1e-6, rtol=1e-4, msg=name)


def test_masked_only_under_bf16_autocast_is_close(mlm_without_dropout):
    model = mlm_without_dropout
    ids, mask = padded_batch(model.config)
    labels = torch.where(torch.rand(ids.shape) < 0.4, ids, torch.full_like(ids, -100))
    fused, fused_grads = _loss_and_grads(model, ids, mask, labels, masked_only=True, autocast=True)
    plain, plain_grads = _loss_and_grads(model, ids, mask, labels, masked_only=False, autocast=False)
    torch.testing.assert_close(fused.loss, plain.loss, atol=2e-2, rtol=2e-2)  # bfloat16 matmuls
    emb = "roberta.embeddings.word_embeddings.weight"
    cos = F.cosine_similarity(fused_grads[emb].flatten(), plain_grads[emb].flatten(), dim=0)
    assert cos > 0.99


def test_default_loss_with_no_targets_is_nan_as_in_transformers(tiny_config):
    """No label other than -100 (a text with nothing to mask, "Hi"): the default loss is NaN, as `transformers`'
    (a mean over no position); the masked-only opt-in's is 0 (next test). The docstring says both."""
    pytest.importorskip("transformers")
    from roberta.convert import to_transformers

    torch.manual_seed(0)
    model = roberta.RobertaForMaskedLM(tiny_config).eval()
    ids, mask = padded_batch(tiny_config)
    labels = torch.full_like(ids, -100)
    with torch.no_grad():
        ours = model(ids, mask, labels=labels).loss
        theirs = to_transformers(model)(input_ids=ids, attention_mask=mask, labels=labels).loss
    assert isinstance(theirs, torch.Tensor) and torch.isnan(theirs) and torch.isnan(ours)
    doc = roberta.RobertaForMaskedLM.forward.__doc__
    assert "NaN when there is none" in doc and "(N = 0) the loss is 0" in doc


def test_masked_only_with_no_targets_is_zero_not_nan(tiny_config):
    model = roberta.RobertaForMaskedLM(tiny_config).train()
    ids, mask = padded_batch(tiny_config)
    out = model(ids, mask, labels=torch.full_like(ids, -100), masked_only=True)
    assert out.loss.item() == 0.0
    out.loss.backward()  # still differentiable
    with torch.no_grad():
        assert model(ids, mask, labels=torch.full_like(ids, -100), masked_only=True).loss.item() == 0.0


def test_bf16_autocast_attention_matches_float32(tiny_config):
    """On CPU under bfloat16 autocast attention takes the explicit matmul path; it must agree with SDPA."""
    torch.manual_seed(0)
    model = roberta.RobertaForMaskedLM(tiny_config).eval()
    ids, mask = padded_batch(tiny_config)
    with torch.no_grad():
        reference = model(ids, mask).logits
        with torch.autocast("cpu", dtype=torch.bfloat16):
            low = model(ids, mask).logits.float()
    real = mask.bool()
    assert (low[real] - reference[real]).abs().max() < 0.1
    assert (low[real].argmax(-1) == reference[real].argmax(-1)).float().mean() > 0.9
