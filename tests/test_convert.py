"""Weight compatibility with `transformers`: conversion both ways, saved folders, and the fill-mask pipeline."""
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

import roberta
from roberta.convert import from_transformers, to_transformers

pytestmark = pytest.mark.usefixtures("single_thread")

transformers = pytest.importorskip("transformers")
transformers.logging.set_verbosity_error()

# (layers, heads, hidden, vocab, num_labels)
CONFIGS = [(1, 2, 16, 64, 2), (2, 4, 32, 300, 3), (3, 3, 24, 150, 5)]


def hf_config(layers, heads, hidden, vocab, num_labels, **kwargs):
    return transformers.RobertaConfig(
        vocab_size=vocab, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
        intermediate_size=2 * hidden, max_position_embeddings=40, layer_norm_eps=1e-5,
        pad_token_id=1, bos_token_id=0, eos_token_id=2, num_labels=num_labels, **kwargs)


def randomise(model, seed=0):
    """Every parameter random (also biases, LayerNorms and the token-type table), so nothing passes by luck."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=g) * 0.05
            p.copy_(1 + noise if "LayerNorm.weight" in name or "layer_norm.weight" in name else noise)
    return model.eval()


def padded_batch(vocab, lengths=(10, 4, 7), seed=0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.full((len(lengths), max(lengths)), 1)
    for i, n in enumerate(lengths):
        ids[i, :n] = torch.randint(5, vocab, (n,), generator=g)
        ids[i, 0], ids[i, n - 1] = 0, 2
    return ids, ids.ne(1).long()


@pytest.mark.parametrize("dims", CONFIGS)
@pytest.mark.parametrize("arch", ["RobertaForMaskedLM", "RobertaForSequenceClassification"])
def test_converted_model_gives_same_outputs(arch, dims):
    """Logits at every position (padding too), the loss with labels, the attentions and the hidden states: SDPA
    and explicit."""
    torch.manual_seed(0)
    hf = randomise(getattr(transformers, arch)(hf_config(*dims, attn_implementation="eager")))
    assert hf.roberta.embeddings.token_type_embeddings.weight[0].abs().sum() > 0  # non-zero row to fold in
    ours = from_transformers(hf)
    assert isinstance(ours, getattr(roberta, arch)) and not ours.training
    ids, mask = padded_batch(dims[3])
    if arch == "RobertaForMaskedLM":
        labels = torch.where(torch.rand(ids.shape) < 0.3, ids, torch.full_like(ids, -100))
        labels[0, 1] = ids[0, 1]
        shape = (*ids.shape, dims[3])
    else:
        labels, shape = torch.arange(len(ids)) % dims[4], (len(ids), dims[4])
    with torch.no_grad():
        theirs = hf(input_ids=ids, attention_mask=mask, labels=labels, output_attentions=True,
                    output_hidden_states=True)
        explicit = ours(ids, mask, labels=labels, output_attentions=True, output_hidden_states=True)
        sdpa = ours(ids, mask, labels=labels)
    assert sdpa.hidden_states is None and sdpa.attentions is None
    for mine in (explicit, sdpa):
        assert mine.logits.shape == theirs.logits.shape == shape
        torch.testing.assert_close(mine.logits, theirs.logits, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(mine.loss, theirs.loss, atol=1e-5, rtol=1e-5)
    real = mask.bool()
    for a, b in zip(explicit.attentions, theirs.attentions, strict=True):
        keep = real[:, None, :, None].expand_as(a)  # query rows of real tokens
        torch.testing.assert_close(a[keep], b[keep], atol=1e-5, rtol=1e-5)
    assert len(explicit.hidden_states) == len(theirs.hidden_states) == dims[0] + 1  # embeddings, then each layer
    for a, b in zip(explicit.hidden_states, theirs.hidden_states, strict=True):
        torch.testing.assert_close(a[real], b[real], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(explicit.hidden_states[-1], explicit.last_hidden_state)


@pytest.mark.parametrize("attn", ["eager", "sdpa"])
@pytest.mark.parametrize("arch", ["RobertaForMaskedLM", "RobertaForSequenceClassification"])
def test_train_mode_dropout_matches_transformers(arch, attn):
    """Every dropout in transformers' place (embeddings, attention probabilities on both attention paths, both
    residual branches, the classifier head's two with classifier_dropout): with the same seed both draw the same
    masks in the same order, so train-mode outputs agree at every position. The other parity tests run in eval
    mode."""
    config = hf_config(*CONFIGS[1], attn_implementation=attn, hidden_dropout_prob=0.3,
                       attention_probs_dropout_prob=0.2, classifier_dropout=0.4)
    hf = randomise(getattr(transformers, arch)(config)).train()
    ours = from_transformers(hf).train()
    assert ours.config.classifier_dropout == 0.4
    ids, mask = padded_batch(CONFIGS[1][3])
    explicit = attn == "eager"  # our explicit path is the one that returns attentions
    with torch.no_grad():
        torch.manual_seed(123)
        theirs = hf(input_ids=ids, attention_mask=mask, output_attentions=explicit).logits
        torch.manual_seed(123)
        mine = ours(ids, mask, output_attentions=explicit).logits
        torch.manual_seed(124)
        other_seed = ours(ids, mask, output_attentions=explicit).logits
    assert not torch.allclose(mine, other_seed)  # dropout is on
    torch.testing.assert_close(mine, theirs, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("arch", ["RobertaForMaskedLM", "RobertaForSequenceClassification"])
def test_inputs_embeds_and_position_ids_as_in_transformers(arch):
    """inputs_embeds alone (positions counted from pad_token_id + 1), and explicit position_ids."""
    torch.manual_seed(0)
    hf = randomise(getattr(transformers, arch)(hf_config(*CONFIGS[1])))
    ours = from_transformers(hf)
    ids, mask = padded_batch(CONFIGS[1][3])
    embeds = torch.randn(*ids.shape, CONFIGS[1][2])  # (B, T, H): not any token's embedding
    positions = torch.randint(2, 40, ids.shape)  # any row of the position table
    hidden = mask.clone()
    hidden[0, 3] = 0  # a caller's mask that hides a real token, not padding: it must be the one obeyed
    for kwargs in ({"inputs_embeds": embeds, "attention_mask": mask}, {"inputs_embeds": embeds},
                   {"input_ids": ids, "attention_mask": mask, "position_ids": positions},
                   {"inputs_embeds": embeds, "attention_mask": mask, "position_ids": positions},
                   {"input_ids": ids, "attention_mask": hidden}):
        with torch.no_grad():
            torch.testing.assert_close(ours(**kwargs).logits, hf(**kwargs).logits, atol=1e-5, rtol=1e-5,
                                       msg=lambda m: f"{sorted(kwargs)}: {m}")
    with torch.no_grad():
        attentions = ours(ids, hidden, output_attentions=True).attentions
    assert all(bool(a[0, :, :, 3].eq(0).all()) and bool(a[1, :, :, 3].gt(0).all()) for a in attentions)


def test_a_4d_attention_mask_as_transformers_takes_it():
    """transformers takes a prepared 4-D mask: booleans (True = attend) or additive floats (0 = attend), one row
    per key or per query and key. Both give what the (B, T) mask gives; a 4-D float mask of ones and zeros, which
    transformers adds to the scores as they are, is refused; a mask of another shape is named."""
    torch.manual_seed(0)
    hf = randomise(transformers.RobertaForMaskedLM(hf_config(*CONFIGS[1])))
    ours = from_transformers(hf).eval()
    ids, mask = padded_batch(CONFIGS[1][3])
    B, T = ids.shape
    keys = mask[:, None, None, :].bool()  # (B, 1, 1, T)
    pairs = keys.expand(B, 1, T, T).clone()  # (B, 1, T, T)
    pairs[1, 0, 2, 3] = False  # query 2 may not see key 3 in row 1: only a per-pair mask says so
    additive = torch.zeros(B, 1, T, T).masked_fill(~pairs, torch.finfo(torch.float32).min)
    with torch.no_grad():
        expected = ours(ids, mask).logits
        torch.testing.assert_close(ours(ids, keys).logits, expected)
        for given in (pairs, additive):
            torch.testing.assert_close(ours(ids, given).logits, hf(ids, attention_mask=given).logits,
                                       atol=1e-5, rtol=1e-5)
        assert not torch.allclose(ours(ids, pairs).logits[1, 2], expected[1, 2])
        assert torch.equal(ours(ids, pairs).logits[0], expected[0])
        with pytest.raises(ValueError, match="0 where a key may be attended to"):
            ours(ids, keys.float())
        with pytest.raises(ValueError, match="booleans"):
            ours(ids, keys.long())
        with pytest.raises(ValueError, match=r"attention_mask must be \(batch, tokens\)"):
            ours(ids, mask[:, None, :])


@pytest.mark.parametrize("arch", ["RobertaForMaskedLM", "RobertaForSequenceClassification"])
def test_round_trip_through_transformers_is_exact(arch, tiny_config):
    torch.manual_seed(0)
    ours = randomise(getattr(roberta, arch)(tiny_config))
    back = from_transformers(to_transformers(ours))
    assert back.config == ours.config
    a, b = ours.state_dict(), back.state_dict()
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_a_converted_model_keeps_its_dtype_both_ways(dtype, tiny_config):
    # a constructor builds float32 and load_state_dict copies into it: the result is placed as its source was
    # (device too, by the same call: no GPU here to show it)
    ours = randomise(roberta.RobertaForMaskedLM(tiny_config)).to(dtype)
    hf = to_transformers(ours)
    assert {p.dtype for p in hf.parameters()} == {dtype}
    back = from_transformers(hf)
    assert {p.dtype for p in back.parameters()} == {dtype}
    a, b = ours.state_dict(), back.state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_token_type_row_is_folded_into_positions():
    hf = randomise(transformers.RobertaForMaskedLM(hf_config(2, 2, 16, 64, 2)))
    token_type = hf.roberta.embeddings.token_type_embeddings.weight
    with torch.no_grad():
        token_type[0] = torch.linspace(-1, 1, token_type.shape[1])  # large, unmistakable row
    ours = from_transformers(hf)
    expected = hf.roberta.embeddings.position_embeddings.weight + token_type[0]
    assert torch.equal(ours.roberta.embeddings.position_embeddings.weight, expected)
    ids, mask = padded_batch(64)
    with torch.no_grad():
        torch.testing.assert_close(ours(ids, mask).logits[mask.bool()], hf(input_ids=ids, attention_mask=mask)
                                   .logits[mask.bool()], atol=1e-5, rtol=1e-5)
    # Going back, the row lives in the positions and the token-type table is zero: same function again.
    again = to_transformers(ours)
    assert torch.all(again.roberta.embeddings.token_type_embeddings.weight == 0)
    with torch.no_grad():
        torch.testing.assert_close(again(input_ids=ids, attention_mask=mask).logits,
                                   hf(input_ids=ids, attention_mask=mask).logits, atol=1e-5, rtol=1e-5)


def test_unsupported_models_are_refused():
    with pytest.raises(TypeError, match="RobertaModel"):
        from_transformers(transformers.RobertaModel(hf_config(1, 2, 16, 64, 2)))
    with pytest.raises(ValueError, match="absolute"):
        from_transformers(transformers.RobertaForMaskedLM(
            hf_config(1, 2, 16, 64, 2, position_embedding_type="relative_key")))
    for activation in ("relu", "gelu_new"):  # another function: refused, not run as exact GELU
        with pytest.raises(ValueError, match=f"hidden_act: only 'gelu' .*got '{activation}'"):
            from_transformers(transformers.RobertaForMaskedLM(hf_config(1, 2, 16, 64, 2, hidden_act=activation)))


def test_to_transformers_names_what_it_takes(tiny_config):
    """A bare encoder was "'RobertaModel' object has no attribute 'architecture'", None "'NoneType' object has no
    attribute 'config'"."""
    mlm = roberta.RobertaForMaskedLM(tiny_config)
    with pytest.raises(TypeError, match=re.escape("to_transformers takes this package's RobertaForMaskedLM or "
                                                  "RobertaForSequenceClassification, got roberta.model.RobertaModel: "
                                                  "convert the model that holds it")):
        to_transformers(mlm.roberta)
    with pytest.raises(TypeError, match="got builtins.NoneType$"):
        to_transformers(None)


def test_from_transformers_refuses_this_packages_model(tiny_config):
    """Our RobertaForMaskedLM has `transformers`' class name, so from_transformers(ours) returned a copy of it without
    a word: a user who meant to_transformers got no transformers model."""
    mlm = roberta.RobertaForMaskedLM(tiny_config)
    with pytest.raises(TypeError, match=re.escape("from_transformers takes a transformers model; this is this "
                                                  "package's RobertaForMaskedLM already (to_transformers converts it "
                                                  "the other way)")):
        from_transformers(mlm)


def test_gelu_python_is_transformers_gelu():
    """transformers' "gelu_python" is exact GELU written out: converted, it gives the same logits."""
    hf = randomise(transformers.RobertaForMaskedLM(hf_config(*CONFIGS[1], hidden_act="gelu_python")))
    ours = from_transformers(hf)
    assert ours.config.hidden_act == "gelu"
    ids, mask = padded_batch(CONFIGS[1][3])
    with torch.no_grad():
        torch.testing.assert_close(ours(ids, mask).logits, hf(input_ids=ids, attention_mask=mask).logits,
                                   atol=1e-5, rtol=1e-5)


def test_without_a_mask_padding_is_not_attended_to_unlike_transformers():
    """Called without attention_mask, our models skip <pad> tokens where transformers attends to them: padded
    rows differ, unpadded ones and masked calls agree. convert.py and the forward docstrings say so."""
    hf = randomise(transformers.RobertaForMaskedLM(hf_config(*CONFIGS[1])))
    ours = from_transformers(hf)
    ids, mask = padded_batch(CONFIGS[1][3])  # rows 1 and 2 padded, row 0 not
    with torch.no_grad():
        mine, theirs = ours(ids).logits, hf(input_ids=ids).logits
        torch.testing.assert_close(ours(ids, mask).logits, hf(input_ids=ids, attention_mask=mask).logits,
                                   atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(mine[0], theirs[0], atol=1e-5, rtol=1e-5)
    assert not torch.allclose(mine[1:][mask[1:].bool()], theirs[1:][mask[1:].bool()], atol=1e-3)
    for doc in (roberta.convert.__doc__, roberta.RobertaModel.forward.__doc__):
        assert "`transformers` attends to every token" in " ".join(doc.split())


def test_another_model_type_is_refused_and_xlm_roberta_camembert_load(tokenizer, tmp_path):
    """A saved BertForMaskedLM is refused for its model_type (it said "bos_token_id must be an integer, got None");
    XLM-RoBERTa and CamemBERT checkpoints are RoBERTa's architecture and tensor names, and load with their logits."""
    bert = transformers.BertForMaskedLM(transformers.BertConfig(vocab_size=64, hidden_size=16, num_hidden_layers=1,
                                                                num_attention_heads=2, intermediate_size=32))
    bert.save_pretrained(tmp_path / "bert")
    tokenizer.save(str(tmp_path / "bert" / "tokenizer.json"))
    for load in (roberta.RobertaForMaskedLM.from_pretrained, lambda folder: roberta.pipeline("fill-mask", folder)):
        with pytest.raises(roberta.ModelLoadError, match="config.json: model_type 'bert' is not a RoBERTa checkpoint "
                                                         r"\(roberta, xlm-roberta, camembert\)"):
            load(tmp_path / "bert")
    kwargs = hf_config(*CONFIGS[1]).to_dict()
    for name in ("XLMRoberta", "Camembert"):
        hf = randomise(getattr(transformers, f"{name}ForMaskedLM")(getattr(transformers, f"{name}Config")(**kwargs)))
        hf.save_pretrained(tmp_path / name)
        ours = roberta.RobertaForMaskedLM.from_pretrained(tmp_path / name)
        # the scripts' and the app's architecture check reads it as the RoBERTa class it is
        assert roberta.loading.require_architecture(tmp_path / name, "RobertaForMaskedLM",
                                                    "a test") == "RobertaForMaskedLM"
        ids, mask = padded_batch(CONFIGS[1][3])
        with torch.no_grad():
            torch.testing.assert_close(ours(ids, mask).logits, hf(input_ids=ids, attention_mask=mask).logits,
                                       atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("family", ["XLMRoberta", "Camembert"])
def test_xlm_roberta_and_camembert_objects_convert_as_their_folders_load(family):
    """from_transformers refused the XLM-RoBERTa and CamemBERT classes whose saved folders from_pretrained loads."""
    config = getattr(transformers, f"{family}Config")(**hf_config(*CONFIGS[0]).to_dict())
    ids, mask = padded_batch(CONFIGS[0][3])
    for head in ("ForMaskedLM", "ForSequenceClassification"):
        hf = randomise(getattr(transformers, f"{family}{head}")(config))
        ours = from_transformers(hf)
        assert type(ours).__name__ == f"Roberta{head}"
        with torch.no_grad():
            torch.testing.assert_close(ours(ids, mask).logits, hf(input_ids=ids, attention_mask=mask).logits,
                                       atol=1e-5, rtol=1e-5)


def test_transformers_style_calls_give_transformers_outputs(trained_looking_mlm_dir):
    """m(**enc) with what a transformers tokenizer returns (token_type_ids too), then out[0], out["logits"], the
    tuple order with a loss and hidden states, return_dict=False: as the same model in transformers."""
    hf = transformers.AutoModelForMaskedLM.from_pretrained(trained_looking_mlm_dir).eval()
    ours = roberta.RobertaForMaskedLM.from_pretrained(trained_looking_mlm_dir)
    fast = transformers.PreTrainedTokenizerFast(tokenizer_file=str(trained_looking_mlm_dir / "tokenizer.json"),
                                                pad_token="<pad>", mask_token="<mask>")
    enc = fast(["The cat likes <mask>.", "A dog."], padding=True, return_tensors="pt", return_token_type_ids=True)
    labels = enc["input_ids"].masked_fill(enc["attention_mask"] == 0, -100)
    real = enc["attention_mask"].bool()

    def close(a, b):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)

    with torch.no_grad():
        mine, theirs = ours(**enc), hf(**enc)
        close(mine[0], theirs[0])
        close(mine["logits"], theirs["logits"])
        mine, theirs = ours(**enc, labels=labels, output_hidden_states=True), hf(**enc, labels=labels,
                                                                                   output_hidden_states=True)
        assert len(mine.to_tuple()) == len(theirs.to_tuple()) == 3  # loss, logits, hidden states
        close(mine[0], theirs[0])
        close(mine[1], theirs[1])
        for a, b in zip(mine[2], theirs[2], strict=True):
            close(a[real], b[real])
        mine, theirs = ours(**enc, labels=labels, return_dict=False), hf(**enc, labels=labels, return_dict=False)
        assert isinstance(mine, tuple) and len(mine) == len(theirs) == 2
        close(mine[0], theirs[0])


@pytest.fixture(scope="module")
def trained_looking_mlm_dir(tmp_path_factory, tokenizer, tiny_config):
    """A saved MLM with random (non-trivial) weights and our tokenizer.json: nothing else in the folder."""
    torch.manual_seed(0)
    model = randomise(roberta.RobertaForMaskedLM(tiny_config), seed=3)
    folder = tmp_path_factory.mktemp("hf-compat")
    model.save_pretrained(folder)
    tokenizer.save(str(folder / "tokenizer.json"))
    return folder


def test_saved_folder_loads_in_transformers(trained_looking_mlm_dir, tiny_config):
    ours = roberta.RobertaForMaskedLM.from_pretrained(trained_looking_mlm_dir)
    hf = transformers.AutoModelForMaskedLM.from_pretrained(trained_looking_mlm_dir).eval()
    assert type(hf).__name__ == "RobertaForMaskedLM"
    ids, mask = padded_batch(tiny_config.vocab_size)
    with torch.no_grad():
        torch.testing.assert_close(ours(ids, mask).logits[mask.bool()],
                                   hf(input_ids=ids, attention_mask=mask).logits[mask.bool()], atol=1e-5, rtol=1e-5)


def test_saved_classifier_loads_in_transformers(tiny_clf_dir, tiny_config):
    ours = roberta.RobertaForSequenceClassification.from_pretrained(tiny_clf_dir)
    hf = transformers.AutoModelForSequenceClassification.from_pretrained(tiny_clf_dir).eval()
    assert hf.config.id2label == {0: "negative", 1: "positive"}
    ids, mask = padded_batch(tiny_config.vocab_size)
    with torch.no_grad():
        torch.testing.assert_close(ours(ids, mask).logits, hf(input_ids=ids, attention_mask=mask).logits,
                                   atol=1e-5, rtol=1e-5)


def _flat(result):
    """One mask: a list of dicts; several: a list of lists of dicts -> one flat list of dicts."""
    return [d for row in result for d in (row if isinstance(row, list) else [row])]


@pytest.fixture(scope="module")
def both_fill_mask(trained_looking_mlm_dir):
    """transformers reads a folder without tokenizer_config.json too (RobertaTokenizer from config.json's
    model_type, over tokenizer.json), but then without its normalizer: what save_tokenizer writes and train.push
    requires it for."""
    theirs = transformers.pipeline("fill-mask", model=str(trained_looking_mlm_dir), device="cpu")
    ours = roberta.pipeline("fill-mask", model=trained_looking_mlm_dir, device="cpu")
    return theirs, ours


@pytest.mark.parametrize("text, kwargs", [
    ("The cat likes <mask>.", {}),
    ("The cat likes <mask>.", {"top_k": 3}),
    ("<mask> sees the sea <mask> again.", {"top_k": 2}),
    ("A dog finds <mask> every day.", {"targets": [" the", "the", " music", "zzqx"]}),
    ("A dog finds <mask> every day.", {"targets": " France", "top_k": 4}),
    ("😀 中文 <mask> עברית", {}),
])
@pytest.mark.filterwarnings("ignore::roberta.pipelines.TargetPieceWarning")  # targets of several tokens, as theirs logs
def test_fill_mask_matches_transformers_pipeline(both_fill_mask, text, kwargs):
    theirs, ours = both_fill_mask
    expected, got = theirs(text, **kwargs), ours(text, **kwargs)
    assert isinstance(got[0], list) == isinstance(expected[0], list)  # same nesting: one mask or several
    if isinstance(got[0], list):
        assert [len(r) for r in got] == [len(r) for r in expected]
    expected, got = _flat(expected), _flat(got)
    assert len(got) == len(expected) > 0
    for a, b in zip(got, expected):
        assert a.keys() == b.keys() == {"score", "token", "token_str", "sequence"}
        assert (a["token"], a["token_str"], a["sequence"]) == (b["token"], b["token_str"], b["sequence"])
        assert a["score"] == pytest.approx(b["score"], abs=1e-6)


def test_tokenizer_config_lets_transformers_truncate_like_us(trained_looking_mlm_dir, tiny_config, tmp_path):
    """tokenizer_config.json (save_tokenizer writes it, train.push requires it) holds model_max_length =
    config.max_length. Without it transformers does not know the limit and a too-long input fails inside the model."""
    import json
    import shutil

    folder = tmp_path / "with-tokenizer-config"
    shutil.copytree(trained_looking_mlm_dir, folder)
    (folder / "tokenizer_config.json").write_text(json.dumps(
        {"tokenizer_class": "RobertaTokenizer", "model_max_length": tiny_config.max_length}))
    theirs = transformers.pipeline("fill-mask", model=str(folder), device="cpu")
    ours = roberta.pipeline("fill-mask", model=folder, device="cpu")
    text = "The cat likes <mask>. " + "the sea " * 100
    expected = theirs(text, tokenizer_kwargs={"truncation": True})
    got = ours(text)
    assert all(r["truncated"] for r in got)
    assert [(r["token"], r["sequence"]) for r in got] == [(r["token"], r["sequence"]) for r in expected]
    assert [r["score"] for r in got] == pytest.approx([r["score"] for r in expected], abs=1e-6)


def test_a_sharded_transformers_folder_loads(trained_looking_mlm_dir, tiny_config, tmp_path):
    """`transformers`' sharded layout (model-0000N-of-0000M.safetensors + model.safetensors.index.json) loads as
    the single file does (the README promises "model.safetensors, or shards with an index")."""
    hf = transformers.AutoModelForMaskedLM.from_pretrained(trained_looking_mlm_dir)
    hf.save_pretrained(tmp_path / "sharded", max_shard_size="20KB")
    shutil.copy(trained_looking_mlm_dir / "tokenizer.json", tmp_path / "sharded")
    assert not (tmp_path / "sharded" / "model.safetensors").exists()
    assert len(list((tmp_path / "sharded").glob("model-*.safetensors"))) > 2
    ours = roberta.RobertaForMaskedLM.from_pretrained(tmp_path / "sharded")
    single = roberta.RobertaForMaskedLM.from_pretrained(trained_looking_mlm_dir)
    for name, tensor in single.state_dict().items():
        torch.testing.assert_close(ours.state_dict()[name], tensor, atol=0, rtol=0)
    assert roberta.pipeline("fill-mask", tmp_path / "sharded")("a <mask> b", top_k=1)


def test_a_bare_roberta_model_checkpoint_starts_fine_tuning(trained_looking_mlm_dir, tmp_path):
    """A folder saved from `transformers.RobertaModel` (tensor names without the `roberta.` prefix, as many
    Hub encoders are) gives its encoder to a classifier."""
    hf = transformers.AutoModelForMaskedLM.from_pretrained(trained_looking_mlm_dir).roberta
    hf.save_pretrained(tmp_path / "bare")
    clf = roberta.RobertaForSequenceClassification.from_pretrained_encoder(tmp_path / "bare", revision="main")
    mlm = roberta.RobertaForMaskedLM.from_pretrained(trained_looking_mlm_dir)
    for name, tensor in mlm.roberta.state_dict().items():
        torch.testing.assert_close(clf.roberta.state_dict()[name], tensor, atol=0, rtol=0)
    with pytest.raises(TypeError, match="'hidden_dropout'"):  # neither a config field nor a hub option
        roberta.RobertaForSequenceClassification.from_pretrained_encoder(tmp_path / "bare", hidden_dropout=0.1)


def test_a_bare_roberta_model_folder_given_to_a_head_class_or_pipeline_points_to_from_pretrained_encoder(
        trained_looking_mlm_dir, tmp_path):
    """It listed the head's tensors as missing keys: the folder is an encoder with no head to load."""
    transformers.AutoModelForMaskedLM.from_pretrained(trained_looking_mlm_dir).roberta.save_pretrained(tmp_path)
    hint = ("Start a classifier from its encoder with RobertaForSequenceClassification.from_pretrained_encoder"
            f"({str(tmp_path)!r})")
    for cls, needs in ((roberta.RobertaForMaskedLM, "a masked-LM model"),
                       (roberta.RobertaForSequenceClassification, "a classifier")):
        with pytest.raises(roberta.loading.ArchitectureMismatch) as info:
            cls.from_pretrained(tmp_path)
        assert str(info.value) == f"{tmp_path} is an encoder without a head (RobertaModel); {cls.__name__} needs " \
                                  f"{needs}. {hint}"
    with pytest.raises(roberta.loading.ArchitectureMismatch, match=re.escape(
            f"{tmp_path} is an encoder without a head (RobertaModel); the 'fill-mask' pipeline needs a masked-LM "
            f"model (RobertaForMaskedLM). {hint}")):
        roberta.pipeline("fill-mask", tmp_path)
    with pytest.raises(roberta.loading.ArchitectureMismatch,
                       match="the 'sentiment-analysis' pipeline needs a classifier"):
        roberta.pipeline("sentiment-analysis", str(tmp_path))


def test_truncation_true_is_what_transformers_pipeline_reads(tiny_clf_dir, tokenizer, tiny_config, tmp_path):
    """The classifier takes transformers' truncation=True as long_text="first": the same scores as theirs."""
    folder = shutil.copytree(tiny_clf_dir, tmp_path / "clf")
    roberta.save_tokenizer(tokenizer, folder, tiny_config.max_length)  # their tokenizer's length limit
    text = "the film is long and the sea is blue " * 30
    ours = roberta.pipeline("sentiment-analysis", folder, device="cpu")([text], truncation=True)[0]
    theirs = transformers.pipeline("text-classification", model=str(folder), top_k=None)([text], truncation=True)[0]
    assert [r["label"] for r in ours] == [r["label"] for r in theirs] and ours[0]["truncated"] is True
    assert [r["score"] for r in ours] == pytest.approx([r["score"] for r in theirs], abs=1e-5)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_a_half_precision_transformers_folder_gives_transformers_logits(dtype, tmp_path):
    """A float16 / bfloat16 checkpoint with a non-zero token-type row (real Hub RoBERTas have one): its row is
    folded into the positions in float32, as `transformers` adds them, not rounded to the stored dtype first."""
    hf = randomise(transformers.RobertaForMaskedLM(hf_config(2, 4, 32, 300, 2)))
    with torch.no_grad():
        hf.roberta.embeddings.token_type_embeddings.weight.normal_(0, 0.5)
    hf.to(dtype).save_pretrained(tmp_path)
    ours = roberta.RobertaForMaskedLM.from_pretrained(tmp_path)
    theirs = transformers.RobertaForMaskedLM.from_pretrained(tmp_path, dtype=torch.float32).eval()
    ids, mask = padded_batch(300)
    with torch.no_grad():
        torch.testing.assert_close(ours(ids, mask).logits[mask.bool()],
                                   theirs(input_ids=ids, attention_mask=mask).logits[mask.bool()], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("problem, num_labels", [("multi_label_classification", 3), ("regression", 1),
                                                  ("single_label_classification", 3), (None, 1)])
def test_problem_type_gives_transformers_scores_and_loss(problem, num_labels, tokenizer, tmp_path):
    """config.problem_type, as `transformers` reads it: the pipeline's scores (sigmoid per label for multi-label
    or one output, raw for a regression, softmax otherwise) and the loss (BCE, MSE, cross-entropy); it survives
    a save and reload by this package."""
    hf = randomise(transformers.RobertaForSequenceClassification(
        hf_config(2, 4, 32, tokenizer.get_vocab_size(), num_labels, problem_type=problem)))
    hf.save_pretrained(tmp_path / "hf")
    tokenizer.save(str(tmp_path / "hf" / "tokenizer.json"))
    ours = roberta.RobertaForSequenceClassification.from_pretrained(tmp_path / "hf")
    assert ours.config.problem_type == problem
    ours.save_pretrained(tmp_path / "again")
    assert transformers.AutoConfig.from_pretrained(tmp_path / "again").problem_type == problem
    text = "the cat sat on the mat"
    fast = transformers.PreTrainedTokenizerFast(tokenizer_file=str(tmp_path / "hf" / "tokenizer.json"),
                                                bos_token="<s>", eos_token="</s>", pad_token="<pad>",
                                                unk_token="<unk>", mask_token="<mask>")
    expected = transformers.pipeline("text-classification", model=hf, tokenizer=fast, top_k=None,  # hf stays on
                                     device="cpu")([text])[0]                                    # the ids' device
    got = roberta.pipeline("text-classification", model=tmp_path / "hf")(text)
    assert [r["label"] for r in got] == [r["label"] for r in expected]
    assert [r["score"] for r in got] == pytest.approx([r["score"] for r in expected], abs=1e-5)
    ids, mask = padded_batch(tokenizer.get_vocab_size(), lengths=(6, 4, 5))
    g = torch.Generator().manual_seed(1)
    if problem == "multi_label_classification":
        labels = (torch.rand(3, num_labels, generator=g) > 0.5).float()
    elif problem == "regression" or num_labels == 1:
        labels = torch.randn(3, generator=g)
    else:
        labels = torch.tensor([0, 2, 1])
    shapes = [labels, labels[:, None]] if labels.dim() == 1 and labels.is_floating_point() else [labels]
    with torch.no_grad():
        for given in shapes:  # a regression's labels (B,) or (B, 1): transformers squeezes both
            loss = ours(ids, mask, labels=given).loss
            assert loss > 0
            torch.testing.assert_close(loss, hf(input_ids=ids, attention_mask=mask, labels=given).loss, atol=1e-5,
                                       rtol=1e-5)


def test_a_decoder_checkpoint_is_refused(tokenizer, tmp_path):
    """A causal RoBERTa (is_decoder) would run here with attention both ways: a different function, refused."""
    hf = transformers.RobertaForCausalLM(hf_config(1, 2, 16, tokenizer.get_vocab_size(), 2, is_decoder=True))
    hf.save_pretrained(tmp_path)
    tokenizer.save(str(tmp_path / "tokenizer.json"))
    with pytest.raises(roberta.ModelLoadError, match="is_decoder"):
        roberta.RobertaForMaskedLM.from_pretrained(tmp_path)
    with pytest.raises(roberta.ModelLoadError, match="is_decoder"):
        roberta.pipeline("fill-mask", model=tmp_path)
    with pytest.raises(ValueError, match="is_decoder"):  # nor converted from the object
        from_transformers(transformers.RobertaForMaskedLM(hf_config(1, 2, 16, 64, 2, is_decoder=True)))


@pytest.mark.parametrize("copy, original", [("lm_head.decoder.weight", "roberta.embeddings.word_embeddings.weight"),
                                             ("lm_head.decoder.bias", "lm_head.bias")])
def test_an_untied_decoder_is_refused(copy, original, tmp_path):
    """Our decoder is the word embeddings (and lm_head.bias): a checkpoint whose decoder differs is refused, not
    loaded with its decoder silently replaced, from a state dict and from a saved folder (which names the file)."""
    hf = randomise(transformers.RobertaForMaskedLM(hf_config(*CONFIGS[0])))
    state = dict(hf.state_dict())
    state[copy] = state[original] + 0.5
    message = f"{re.escape(copy)} differs from {re.escape(original)}: this package needs tied decoder weights"
    with pytest.raises(ValueError, match=message):
        roberta.checkpoint.from_hf_state_dict(state)
    hf.config.save_pretrained(tmp_path)
    weights = tmp_path / "model.safetensors"
    # copies: save_file refuses tensors that share memory, as lm_head.bias and the decoder's bias do
    save_file({name: tensor.clone() for name, tensor in state.items()}, str(weights), metadata={"format": "pt"})
    with pytest.raises(roberta.ModelLoadError, match=re.escape(str(weights)) + ": " + message):
        roberta.RobertaForMaskedLM.from_pretrained(tmp_path)


def test_num_labels_is_read_as_transformers_reads_it(trained_looking_mlm_dir, tmp_path):
    """`num_labels` without label names: LABEL_0, LABEL_1, ... (config.json, or an option to start fine-tuning)."""
    clf = roberta.RobertaForSequenceClassification.from_pretrained_encoder(trained_looking_mlm_dir, num_labels=3)
    assert clf.config.id2label == {0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"}
    assert clf.classifier.out_proj.weight.shape[0] == 3
    named = roberta.RobertaForSequenceClassification.from_pretrained_encoder(
        trained_looking_mlm_dir, num_labels=2, id2label={0: "bad", 1: "good"})
    assert named.config.id2label == {0: "bad", 1: "good"}
    with pytest.raises(ValueError, match="num_labels is 3 but id2label names 2 labels"):
        roberta.RobertaForSequenceClassification.from_pretrained_encoder(
            trained_looking_mlm_dir, num_labels=3, id2label={0: "bad", 1: "good"})
    config = {**clf.config.to_hf_dict(clf.architecture), "num_labels": 3}
    del config["id2label"], config["label2id"]
    assert roberta.RobertaConfig.from_dict(config).id2label == clf.config.id2label
    assert transformers.RobertaConfig(**config).id2label == {0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"}


def test_a_transformers_model_object_is_pointed_to_the_converter(trained_looking_mlm_dir):
    hf = transformers.AutoModelForMaskedLM.from_pretrained(trained_looking_mlm_dir)
    with pytest.raises(ValueError, match=r"got transformers\..*RobertaForMaskedLM: convert it with "
                                         r"roberta\.convert\.from_transformers"):
        roberta.pipeline("fill-mask", model=hf, tokenizer=trained_looking_mlm_dir)
    assert roberta.pipeline("fill-mask", model=from_transformers(hf), tokenizer=trained_looking_mlm_dir)("a <mask>")


def test_the_converter_named_in_that_hint_is_there_after_import_roberta_without_transformers():
    """The hint (and the README) say roberta.convert.from_transformers, which was an AttributeError after a plain
    `import roberta`; the converter is there now, and importing roberta still does not import transformers."""
    code = ("import sys, roberta; roberta.convert.from_transformers, roberta.convert.to_transformers; "
            "print('transformers' in sys.modules)")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[1], timeout=120)
    assert (run.returncode, run.stdout.strip()) == (0, "False"), run.stderr


def test_without_transformers_the_converter_says_how_to_install_it(monkeypatch, tiny_config):
    """The app's requirements.txt leaves transformers out: to_transformers ended in a bare "No module named
    'transformers'". It names the pip command, with the version requirements-test.txt pins."""
    pinned = re.search(r"^transformers==\S+", (Path(__file__).resolve().parents[1] / "requirements-test.txt")
                       .read_text(encoding="utf-8"), re.M)
    monkeypatch.setitem(sys.modules, "transformers", None)  # as if not installed: `import transformers` fails
    with pytest.raises(ImportError) as raised:
        to_transformers(roberta.RobertaForMaskedLM(tiny_config))
    assert str(raised.value) == f"roberta.convert needs transformers, which is not installed: pip install {pinned[0]}"
    assert raised.value.__suppress_context__  # one error in the traceback, not "during handling of ..."
