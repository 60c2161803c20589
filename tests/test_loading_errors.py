"""Loading a broken or missing model: one error class, a message that names the file and the field or tensor.

Issue 13 item 4: every crafted file below used to end in an unrelated exception (HFValidationError, TypeError,
ZeroDivisionError, AssertionError, AttributeError, a bare JSONDecodeError or SafetensorError) or, worse, loaded.
"""
import dataclasses
import functools
import json
import re
import shutil
import socket
import threading
import time
import warnings

import pytest
import torch
from safetensors.torch import load_file, save_file

import roberta
from roberta import ModelLoadError, ModelNotFoundError
from roberta import checkpoint, hub, loading

pytestmark = pytest.mark.usefixtures("single_thread")


@pytest.fixture
def folder(tiny_mlm_dir, tmp_path):
    """A private copy of the tiny MLM folder (4 heads, hidden 32, vocabulary 300) to damage."""
    return shutil.copytree(tiny_mlm_dir, tmp_path / "model")


def edit_config(folder, **changes):
    path = folder / "config.json"
    config = json.loads(path.read_text())
    config.update(changes)
    path.write_text(json.dumps(config))
    return path


def truncate(path, keep=0.5):
    data = path.read_bytes()
    path.write_bytes(data[:int(len(data) * keep)])


def test_missing_folder_is_named_not_a_hub_validation_error():
    with pytest.raises(ModelNotFoundError, match="/nonexistent: no such folder") as info:
        roberta.pipeline("fill-mask", model="/nonexistent")
    assert isinstance(info.value, FileNotFoundError) and isinstance(info.value, ValueError)
    with pytest.raises(ModelNotFoundError, match="neither an existing folder nor a valid Hugging Face Hub repo id"):
        roberta.RobertaForMaskedLM.from_pretrained("not a repo id!")


def test_an_unfinished_run_is_named_as_one(tmp_path):
    """A run folder with checkpoints only (interrupted) said just "has no config.json" to train.average, calibrate,
    export and the app."""
    (tmp_path / "run" / "checkpoints").mkdir(parents=True)
    with pytest.raises(ModelNotFoundError, match="has no config.json: it is a training run that has not finished"):
        roberta.RobertaForMaskedLM.from_pretrained(tmp_path / "run")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelNotFoundError, match="has no config.json$"):
        roberta.RobertaForMaskedLM.from_pretrained(tmp_path / "empty")
    (tmp_path / "corpus.txt").write_text("some text\n")  # a corpus given as --tokenizer: said so, not "not a folder"
    with pytest.raises(ModelLoadError, match="corpus.txt is not a tokenizer: give a tokenizer.json, a model folder"):
        roberta.load_tokenizer(tmp_path / "corpus.txt")


def test_a_hub_id_that_may_be_a_mistyped_folder_says_so(monkeypatch, tmp_path):
    """"assets/mini-roberta-mlmm" has the shape of a Hub id, so the Hub is asked (a Hub owner may share a local
    folder's name); when that fails and assets/ is a folder here, the message asks whether it is a typo."""
    from huggingface_hub.errors import LocalEntryNotFoundError

    monkeypatch.chdir(tmp_path)
    (tmp_path / "assets").mkdir()

    def not_cached(**kwargs):
        raise LocalEntryNotFoundError("not cached")

    monkeypatch.setattr(hub, "hf_hub_download", not_cached)
    with pytest.raises(ModelNotFoundError, match="assets/ is a folder here: is assets/mini-roberta-mlmm a mistyped "
                                                 "local folder"):
        roberta.pipeline("fill-mask", model="assets/mini-roberta-mlmm")
    assert not hub.is_local("assets/x") and not hub.is_local("FacebookAI/roberta-base")
    with pytest.raises(ModelNotFoundError) as info:
        roberta.pipeline("fill-mask", model="someone/some-model")
    assert "mistyped" not in str(info.value)  # no such folder here: no hint


def test_hub_offline_fails_at_once_without_retries(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # set after huggingface_hub was imported: still honoured
    # at once: no connection is tried and nothing waits to retry
    monkeypatch.setattr(socket, "create_connection", lambda *a, **k: pytest.fail("a connection was tried"))
    monkeypatch.setattr(time, "sleep", lambda seconds: pytest.fail(f"waited {seconds} s to retry"))
    with pytest.raises(ModelNotFoundError, match="not in the local cache .HF_HUB_OFFLINE is set"):
        roberta.pipeline("fill-mask", model="some-model-name", cache_dir=str(tmp_path))
    with pytest.raises(ModelNotFoundError, match="config.json of the Hugging Face Hub repo 'me/mlm' at revision 'v2' "
                                                 "is not in the local cache"):
        roberta.RobertaForMaskedLM.from_pretrained("me/mlm", revision="v2", cache_dir=str(tmp_path))


def test_gated_repos_and_unknown_revisions_of_the_hub_are_named(monkeypatch):
    """What the Hub answers for a gated repo without access and for a revision it lacks, said as one
    ModelNotFoundError naming the repo (the errors built as huggingface_hub's own tests build them)."""
    import httpx
    from huggingface_hub.errors import GatedRepoError, RevisionNotFoundError

    def answer(error, status):
        def download(**kwargs):
            url = f"https://huggingface.co/{kwargs['repo_id']}/resolve/main/{kwargs['filename']}"
            raise error("refused", response=httpx.Response(status, request=httpx.Request("GET", url)))
        return download

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # no reachability probe: the download below answers
    monkeypatch.setattr(hub, "hf_hub_download", answer(GatedRepoError, 403))
    with pytest.raises(ModelNotFoundError, match=re.escape("the Hub repo 'me/gated' is gated: accept its terms on "
                                                           "the Hub and pass token=")):
        roberta.RobertaForMaskedLM.from_pretrained("me/gated")
    monkeypatch.setattr(hub, "hf_hub_download", answer(RevisionNotFoundError, 404))
    with pytest.raises(ModelNotFoundError, match=re.escape("the Hub repo 'me/mlm' has no revision 'v9'")):
        roberta.pipeline("fill-mask", model="me/mlm", revision="v9")


def test_from_pretrained_takes_a_config_instead_of_config_json(folder, tiny_mlm_dir):
    """`config=`, a RobertaConfig or a dict, is used instead of the folder's config.json (here made unreadable),
    and checked against the weights as config.json is."""
    saved = json.loads((tiny_mlm_dir / "config.json").read_text())
    edit_config(folder, hidden_size="broken")
    for config in (saved, roberta.RobertaConfig.from_dict(saved)):
        assert_loaded_from(roberta.RobertaForMaskedLM.from_pretrained(folder, config=config), tiny_mlm_dir)
    wider = {**saved, "intermediate_size": 2 * saved["intermediate_size"]}
    with pytest.raises(ModelLoadError, match="but the given config describes a model that needs"):
        roberta.RobertaForMaskedLM.from_pretrained(folder, config=wider)
    deeper = roberta.RobertaConfig.from_dict({**saved, "num_hidden_layers": saved["num_hidden_layers"] + 1})
    layer = saved["num_hidden_layers"]
    with pytest.raises(ModelLoadError, match=re.escape(f"does not fit RobertaForMaskedLM: missing keys "
                                                       f"['roberta.encoder.layer.{layer}.")):
        roberta.RobertaForMaskedLM.from_pretrained(folder, config=deeper)
    for wrong in (5, "config.json", [saved]):  # an int was "'int' object has no attribute 'get'"
        with pytest.raises(TypeError, match=f"config must be a RobertaConfig or a dict of its fields .*, got "
                                            f"{type(wrong).__name__}"):
            roberta.RobertaForMaskedLM.from_pretrained(folder, config=wrong)


@pytest.mark.parametrize("make, message", [
    (lambda: roberta.RobertaConfig(problem_type="ranking"), "problem_type must be one of (None, "),
    (lambda: roberta.RobertaConfig.from_preset("huge"), "unknown preset 'huge'; choose one of ["),
    (lambda: roberta.RobertaConfig.from_dict({"num_labels": 0}), "num_labels must be a whole number >= 1, got 0"),
    (lambda: roberta.RobertaConfig(id2label={"zero": "a"}), "id2label: key 'zero' is not a label id (0, 1, ...)"),
    (lambda: roberta.RobertaConfig(id2label={0: ["a"]}), "id2label: the name of label 0 must be a string, got ['a']"),
    (lambda: roberta.RobertaConfig(layer_norm_eps="small"), "layer_norm_eps must be a number, got 'small'"),
])
def test_a_config_built_in_code_names_its_bad_field(make, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        make()


def test_a_config_takes_numpy_integers_as_python_ints():
    """num_hidden_layers=np.int64(3) was "must be an integer", where the masker and the pipelines take numpy
    integers (`roberta.config.whole_number`, the one rule); kept as Python ints, so config.json is still written."""
    import numpy as np

    config = roberta.RobertaConfig.from_preset("tiny", num_hidden_layers=np.int64(3), pad_token_id=np.int32(1),
                                               layer_norm_eps=np.int64(1), id2label={np.int64(0): "a", 1: "b"})
    assert config == roberta.RobertaConfig.from_preset("tiny", num_hidden_layers=3, layer_norm_eps=1,
                                                       id2label={0: "a", 1: "b"})
    assert all(type(getattr(config, name)) is int for name in ("num_hidden_layers", "pad_token_id", "layer_norm_eps"))
    assert json.loads(json.dumps(config.to_hf_dict("RobertaForMaskedLM")))["num_hidden_layers"] == 3
    assert roberta.RobertaConfig.from_dict({"num_labels": np.int64(3)}).num_labels == 3
    for bad in (np.float64(3.0), True, np.True_):
        with pytest.raises(ValueError, match="num_hidden_layers must be an integer"):
            roberta.RobertaConfig.from_preset("tiny", num_hidden_layers=bad)


@pytest.mark.parametrize("field, value, message", [
    ("hidden_size", "256", "hidden_size must be an integer, got '256'"),
    ("num_attention_heads", 0, "num_attention_heads must be at least 1"),
    ("num_attention_heads", 5, r"hidden_size \(32\) must be divisible by num_attention_heads \(5\)"),
    ("pad_token_id", 500, r"pad_token_id \(500\) must be below vocab_size \(300\)"),
    ("id2label", ["negative", "positive"], "id2label must be a non-empty mapping"),
    ("id2label", {"0": "a", "2": "b"}, r"id2label: ids must be 0..1"),
    ("hidden_dropout_prob", 1.5, "hidden_dropout_prob must be at least 0 and at most 1"),
    ("layer_norm_eps", -1, "layer_norm_eps must be above 0"),
    ("max_position_embeddings", 3, "max_position_embeddings .3. must be at least"),
    ("hidden_act", "relu", "hidden_act: only 'gelu'"),
    ("hidden_act", "gelu_new", "hidden_act: only 'gelu'"),  # tanh-approximated GELUs are other functions
    ("hidden_act", "gelu_pytorch_tanh", "hidden_act: only 'gelu'"),
    ("pad_token_id", None, "pad_token_id must be an integer, got None: RoBERTa's position ids count from "
                           r"pad_token_id \+ 1"),
    ("model_type", "bert", r"model_type 'bert' is not a RoBERTa checkpoint \(roberta, xlm-roberta, camembert\)"),
    ("position_embedding_type", "relative_key", "position_embedding_type 'relative_key' is not supported"),
])
def test_bad_config_field_names_file_and_field(folder, field, value, message):
    path = edit_config(folder, **{field: value})
    with pytest.raises(ModelLoadError, match=re.escape(str(path)) + ".*" + message):
        roberta.RobertaForMaskedLM.from_pretrained(folder)



def assert_loaded_from(model, folder):
    """`model` holds the weights of the model saved in `folder` (a loader that returned a random initialisation
    of the same shape would pass a check of the shape alone)."""
    saved = roberta.RobertaForMaskedLM.from_pretrained(folder).state_dict()
    loaded = model.state_dict()
    assert loaded.keys() == saved.keys() and all(loaded[key].equal(saved[key]) for key in saved)


def test_a_bert_config_is_refused_for_its_model_type_first(folder, tiny_mlm_dir):
    """A transformers BERT folder's config.json (bos_token_id null, no RoBERTa position offset) was refused for
    "bos_token_id must be an integer, got None"; its model_type is what makes it another model."""
    path = edit_config(folder, model_type="bert", bos_token_id=None, eos_token_id=None, pad_token_id=0)
    with pytest.raises(ModelLoadError, match=re.escape(f"{path}: model_type 'bert' is not a RoBERTa checkpoint")):
        roberta.RobertaForMaskedLM.from_pretrained(folder)
    for model_type in ("xlm-roberta", "camembert"):  # the same architecture and tensor names
        edit_config(folder, model_type=model_type, bos_token_id=0, eos_token_id=2, pad_token_id=1)
        assert_loaded_from(roberta.RobertaForMaskedLM.from_pretrained(folder), tiny_mlm_dir)
    config = json.loads(path.read_text())
    del config["model_type"]  # none given: read as RoBERTa
    path.write_text(json.dumps(config))
    assert_loaded_from(roberta.RobertaForMaskedLM.from_pretrained(folder), tiny_mlm_dir)


def test_config_values_transformers_accepts_for_the_same_model(folder, tmp_path):
    """hidden_act "gelu_python" is transformers' other name of exact GELU; eos_token_id may be a list (its first
    id is taken). Both load, and save back as "gelu" and a single id."""
    edit_config(folder, hidden_act="gelu_python", eos_token_id=[2, 5])
    model = roberta.RobertaForMaskedLM.from_pretrained(folder)
    assert (model.config.hidden_act, model.config.eos_token_id) == ("gelu", 2)
    model.save_pretrained(tmp_path / "again")
    saved = json.loads((tmp_path / "again" / "config.json").read_text())
    assert (saved["hidden_act"], saved["eos_token_id"]) == ("gelu", 2)


def test_bad_json_and_non_utf8_config_name_the_file(folder):
    path = folder / "config.json"
    truncate(path)
    with pytest.raises(ModelLoadError, match=re.escape(str(path)) + r": not valid JSON \(line \d+, column \d+"):
        roberta.pipeline("fill-mask", model=folder)
    data = b'{"hidden_size": "\xff"}'
    path.write_bytes(data)
    with pytest.raises(ModelLoadError, match=re.escape(f"{path}: not UTF-8 text (byte 0xff at offset "
                                                       f"{data.index(0xff)}); save it as UTF-8")):
        roberta.load_config(folder)
    # an editor's "Unicode": "byte 0" read as a byte's value, and said nothing of what to do
    path.write_text(json.dumps({"hidden_size": 32}), encoding="utf-16")
    with pytest.raises(ModelLoadError, match=re.escape(f"{path}: not UTF-8 text (it is UTF-16: it starts with a "
                                                       "UTF-16 byte-order mark); save it as UTF-8")):
        roberta.load_config(folder)
    path.write_text("[1, 2]")
    with pytest.raises(ModelLoadError, match="expected a JSON object"):
        roberta.load_config(folder)


def test_config_that_does_not_match_the_weights_shapes(folder):
    path = edit_config(folder, vocab_size=400)
    with pytest.raises(ModelLoadError, match=re.escape(str(folder / "model.safetensors")) +
                       r": roberta\.embeddings\.word_embeddings\.weight has shape \(300, 32\).*" +
                       re.escape(str(path))):
        roberta.RobertaForMaskedLM.from_pretrained(folder)


@pytest.mark.parametrize("field, value, saved", [
    ("num_attention_heads", 8, "4"),  # 8 heads of 4 instead of 4 of 8: every tensor has the same shape
    ("pad_token_id", 0, "1"),  # positions counted from another row
    ("layer_norm_eps", 1e-12, "1e-05"),
])
def test_a_shapeless_field_changed_in_config_is_caught_by_the_saved_metadata(folder, field, value, saved):
    """Each field that changes the predictions but no tensor's shape is recorded in the safetensors metadata and
    compared with config.json on load (as the README says of all three)."""
    path = edit_config(folder, **{field: value})
    with pytest.raises(ModelLoadError, match=re.escape(f"{path}: {field} is {value!r}, but ") + ".* trained with "
                                             + re.escape(f"{saved};")):
        roberta.pipeline("fill-mask", model=folder)


def test_weights_saved_without_metadata_still_load(folder):
    # checkpoints written before the metadata existed (and by transformers): no check possible, still loads
    weights = folder / "model.safetensors"
    save_file(load_file(str(weights)), str(weights), metadata={"format": "pt"})
    edit_config(folder, num_attention_heads=8)  # the documented blind spot
    assert roberta.RobertaForMaskedLM.from_pretrained(folder).config.num_attention_heads == 8


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_weights_holding_nan_or_infinity_are_refused_naming_the_file_and_tensor(folder, bad):
    """One NaN in a float16 file loaded without a word: the app showed NaN scores as answers (or, with one NaN that
    the CPU's fused attention swallowed, finite but different ones), and evaluate, calibrate, average and release
    went on with them. Every loader reads weights through `checkpoint.load_weights`, which now refuses them."""
    weights = folder / "model.safetensors"
    tensors = {name: tensor.half() for name, tensor in load_file(str(weights)).items()}
    name = "roberta.encoder.layer.1.attention.self.query.weight"
    tensors[name][0, 0] = bad
    save_file(tensors, str(weights), metadata={"format": "pt"})
    said = re.escape(f"{weights}: {name} holds 1 NaN or infinite value: the file is damaged or was saved from a run "
                     "that diverged; copy, export or download it again")
    for load in (roberta.RobertaForMaskedLM.from_pretrained, checkpoint.load_state_dict,
                 roberta.RobertaForSequenceClassification.from_pretrained_encoder,
                 functools.partial(roberta.pipeline, "fill-mask")):
        with pytest.raises(ModelLoadError, match=f"^{said}$"):
            load(folder)
    tensors[name][0, 0] = 65504.0  # float16's largest finite value is a value like any other
    save_file(tensors, str(weights), metadata={"format": "pt"})
    assert roberta.RobertaForMaskedLM.from_pretrained(folder).roberta.encoder.layer[1].attention.self.query.weight[
        0, 0] == 65504.0


def test_truncated_weights_and_tokenizer_name_the_file(folder):
    weights = folder / "model.safetensors"
    truncate(weights)
    with pytest.raises(ModelLoadError, match=re.escape(str(weights)) + ": not a readable safetensors file"):
        roberta.pipeline("fill-mask", model=folder)

    tokenizer = folder / "tokenizer.json"
    truncate(tokenizer)
    with pytest.raises(ModelLoadError, match=re.escape(str(tokenizer)) + ": not a readable tokenizer.json"):
        roberta.load_tokenizer(folder)
    with pytest.raises(ModelNotFoundError, match="missing.json: no such tokenizer file"):
        roberta.load_tokenizer("missing.json")
    with pytest.raises(ModelLoadError, match="config.json is a model folder's config.json, not a tokenizer: give the "
                                             "folder"):  # --init FOLDER/config.json said "truncated or corrupt?"
        roberta.load_tokenizer(folder / "config.json")


def test_a_null_calibration_temperature_means_no_calibration(tiny_clf_dir, tmp_path):
    """`"calibration_temperature": null` was refused ("must be a number, got None") though transformers loads
    the file and its pipeline reads None as 1.0: it is no calibration here too."""
    transformers = pytest.importorskip("transformers")
    folder = shutil.copytree(tiny_clf_dir, tmp_path / "clf")
    edit_config(folder, calibration_temperature=None)
    assert transformers.AutoConfig.from_pretrained(folder).calibration_temperature is None
    model = roberta.RobertaForSequenceClassification.from_pretrained(folder)
    assert model.config.calibration_temperature == 1.0
    pipe = roberta.pipeline("text-classification", folder, device="cpu")
    assert pipe.temperature == 1.0
    with torch.no_grad():
        ids, mask, _ = roberta.encode(pipe.tokenizer, ["fine"], model.config.max_length)
        probs = model(ids, mask).logits.softmax(-1)[0]
    scores = {r["label"]: r["score"] for r in pipe("fine")}
    assert scores == pytest.approx({model.config.id2label[i]: float(p) for i, p in enumerate(probs)}, abs=1e-6)


def test_a_single_label_problem_with_one_label_is_refused(tiny_config, folder):
    """problem_type "single_label_classification" over one label gave a loss of 0, zero gradients and a sigmoid
    score, and was saved into a config.json transformers refuses: refused here too, naming both fields."""
    message = "problem_type 'single_label_classification' needs at least 2 labels, but id2label names one"
    with pytest.raises(ValueError, match=message):
        dataclasses.replace(tiny_config, id2label={0: "yes"}, problem_type="single_label_classification")
    edit_config(folder, id2label={"0": "yes"}, problem_type="single_label_classification")
    with pytest.raises(ModelLoadError, match=message):
        roberta.RobertaForSequenceClassification.from_pretrained_encoder(folder)
    edit_config(folder, problem_type="regression")
    assert roberta.RobertaForSequenceClassification.from_pretrained_encoder(folder).config.num_labels == 1


def test_classifier_labels_checked_when_fine_tuning_starts(folder):
    with pytest.raises(ValueError, match="id2label: label names must be distinct"):
        roberta.RobertaForSequenceClassification.from_pretrained_encoder(folder, id2label={0: "a", 1: "a"})


@pytest.fixture
def fresh_probe(monkeypatch):
    """The Hub probe's remembered answer forgotten (and restored after the test)."""
    monkeypatch.setitem(hub._probe, "at", float("-inf"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)  # CI sets it before huggingface_hub is imported,
    monkeypatch.setattr(hub.constants, "HF_HUB_OFFLINE", False)  # which then reads it once
    for name in ("https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)  # NO_PROXY: conftest.py lists loopback, where these tests' Hub is


def test_no_network_reads_the_cache_at_once_instead_of_retrying(monkeypatch, fresh_probe, tmp_path):
    """With no connection to the Hub, a Hub id is looked up in the local cache only: a cached file is served,
    a missing one fails at once with the reason (huggingface_hub alone retries 5 times, ~22 s, first)."""
    from huggingface_hub.errors import LocalEntryNotFoundError

    cached = tmp_path / "config.json"
    cached.write_text("{}")
    calls = []

    def download(repo_id, filename, **kwargs):
        calls.append(kwargs)
        if repo_id == "owner/cached":
            return str(cached)
        raise LocalEntryNotFoundError("not cached")

    monkeypatch.setattr(hub, "_connects", lambda address, timeout: False)
    monkeypatch.setattr(hub, "hf_hub_download", download)
    assert hub.resolve_file("owner/cached", "config.json", force_download=True) == str(cached)
    with pytest.raises(ModelNotFoundError, match=r"not in the local cache \(the Hub could not be reached: no "
                                                 r"connection to huggingface.co:443 within 3 s\)"):
        hub.resolve_file("owner/missing", "config.json")
    assert all(kwargs.get("local_files_only") is True and "force_download" not in kwargs for kwargs in calls)



def test_hub_only_reads_a_hub_id_from_the_hub_whatever_the_disk_holds(monkeypatch, fresh_probe, tmp_path,
                                                                       tiny_mlm_dir):
    """`hub_only=True` (a server loading the ids its visitors type): a Hub id is fetched from the Hub even where a
    folder of that name loads, and no message says what the disk holds ("mistyped local folder"); without it, the
    folder loads as before. A repo that cannot be read and a Hub that cannot be reached are errors of their own
    (HubRepoNotFoundError, HubUnreachableError: ModelNotFoundErrors as before), for a caller to word."""
    from types import SimpleNamespace

    from huggingface_hub.errors import LocalEntryNotFoundError, RepositoryNotFoundError

    monkeypatch.chdir(tmp_path)
    shutil.copytree(tiny_mlm_dir, tmp_path / "owner" / "model")
    shutil.copy(tiny_mlm_dir / "tokenizer.json", tmp_path / "owner")
    asked = []

    def download(repo_id, filename, error=None, **kwargs):
        asked.append((repo_id, filename, kwargs))
        raise error

    monkeypatch.setattr(hub, "_connects", lambda address, timeout: True)
    assert roberta.RobertaForMaskedLM.from_pretrained("owner/model") is not None and not asked  # the folder
    assert hub.is_local("owner/model") and not hub.is_local("owner/model", hub_only=True)
    for error, kind in [(RepositoryNotFoundError("404", response=SimpleNamespace(headers={}, request=None)),
                         hub.HubRepoNotFoundError),
                        (LocalEntryNotFoundError("not cached"), hub.HubUnreachableError),
                        (ConnectionError("HTTPSConnectionPool(host='huggingface.co')"), hub.HubUnreachableError)]:
        monkeypatch.setattr(hub, "hf_hub_download", functools.partial(download, error=error))
        with pytest.raises(kind) as info:
            roberta.RobertaForMaskedLM.from_pretrained("owner/model", hub_only=True, token=False)
        assert isinstance(info.value, ModelNotFoundError) and "mistyped" not in str(info.value)
        assert asked[-1] == ("owner/model", "config.json", {"token": False})  # hub_only is ours, not passed on
        with pytest.raises(kind):  # the tokenizer too: no folder's tokenizer.json read in its stead
            roberta.load_tokenizer("owner/model", hub_only=True, token=False)
        assert asked[-1] == ("owner/model", "tokenizer.json", {"token": False})
        with pytest.raises(kind):  # a name that is a tokenizer file here is a repo id all the same
            roberta.load_tokenizer("owner/tokenizer.json", hub_only=True, token=False)
        with pytest.raises(kind, match="mistyped local folder"):  # the hint, for a library user
            roberta.RobertaForMaskedLM.from_pretrained("owner/other")


def test_a_hub_repo_with_pickled_weights_only_says_how_to_get_safetensors(monkeypatch, fresh_probe):
    """A Hub repo that ships only pytorch_model.bin said just "has no model.safetensors"; it is now named, never
    downloaded, with the two ways to safetensors weights: a conversion with transformers, the bot's pull request."""
    from huggingface_hub.errors import EntryNotFoundError

    asked = []

    def download(repo_id, filename, **kwargs):
        asked.append(filename)
        raise EntryNotFoundError(f"404: {filename}")

    monkeypatch.setattr(hub, "_connects", lambda address, timeout: True)
    monkeypatch.setattr(hub, "hf_hub_download", download)
    monkeypatch.setattr(hub, "list_repo_files", lambda repo_id, **kwargs: ["config.json", "pytorch_model.bin"])
    with pytest.raises(ModelNotFoundError) as info:
        checkpoint.weights_files("owner/old-model")
    message = str(info.value)
    assert message.startswith("the Hub repo 'owner/old-model' holds pytorch_model.bin but no model.safetensors: "
                              "pickled weights are never loaded here, only safetensors")
    assert ("import transformers; transformers.AutoModelForMaskedLM.from_pretrained('owner/old-model')"
            '.save_pretrained("FOLDER")') in message  # no config.json to say the class: the fill-mask one
    assert 'revision="refs/pr/N"' in message
    assert "pytorch_model.bin" not in asked  # named from the file list, never downloaded
    monkeypatch.setattr(hub, "list_repo_files", lambda repo_id, **kwargs: ["config.json"])
    with pytest.raises(ModelNotFoundError, match="^the Hub repo 'owner/empty' has no model.safetensors$"):
        checkpoint.weights_files("owner/empty")  # no weights at all: no conversion hint


@pytest.mark.parametrize("architecture", ["RobertaModel", "XLMRobertaModel"])
def test_pickled_weights_of_a_bare_encoder_are_converted_as_the_encoder_they_are(folder, architecture):
    """The conversion advice for a folder of pickled weights named its config's class, but a bare encoder's config
    (RobertaModel, `transformers`' encoder without a head) raised as no model of ours and the advice fell back to
    AutoModelForMaskedLM, which would add an untrained head; it now names the encoder's own class."""
    (folder / "model.safetensors").unlink()
    (folder / "pytorch_model.bin").write_bytes(b"never unpickled")
    convert = f".from_pretrained({str(folder)!r}).save_pretrained(\"FOLDER\")"
    with pytest.raises(ModelNotFoundError) as info:
        checkpoint.weights_files(folder)
    assert f"import transformers; transformers.RobertaForMaskedLM{convert}" in str(info.value)  # its config's class
    edit_config(folder, architectures=[architecture])
    with pytest.raises(ModelNotFoundError) as info:
        checkpoint.weights_files(folder)
    assert f"import transformers; transformers.{architecture}{convert}" in str(info.value)
    assert "AutoModelForMaskedLM" not in str(info.value)


def test_the_hub_probe_connects_once_per_ttl_and_trusts_a_proxy(monkeypatch, fresh_probe):
    import socket

    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    monkeypatch.setattr(hub.constants, "ENDPOINT", f"http://127.0.0.1:{port}")
    assert hub._hub_address() == ("127.0.0.1", port)
    assert hub.hub_reachable()  # a listening port (the connection waits in the backlog)
    server.close()
    assert hub.hub_reachable()  # remembered: no new connection within the TTL
    monkeypatch.setitem(hub._probe, "at", float("-inf"))
    waits = []
    connects = hub._connects
    monkeypatch.setattr(hub, "_connects", lambda address, timeout: waits.append(timeout) or connects(address, timeout))
    assert not hub.hub_reachable()  # the port is closed now
    assert waits == [hub.HUB_PROBE_TIMEOUT_S]  # one probe, given up after the probe's timeout at most
    monkeypatch.setattr(hub, "_connects", lambda address, timeout: pytest.fail("a proxy's Hub is not probed"))
    for name in ("HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.setenv(name, "http://proxy.example:3128")
        monkeypatch.setitem(hub._probe, "at", float("-inf"))
        assert hub.hub_reachable()
        monkeypatch.delenv(name)


def test_a_probe_that_hangs_gives_up_after_its_timeout(monkeypatch):
    released = threading.Event()

    def hang(address, timeout):  # a name lookup that ignores the socket's timeout: it ends when the test says
        released.wait()
        raise OSError("timed out")

    monkeypatch.setattr(hub.socket, "create_connection", hang)
    assert not hub._connects(("huggingface.co", 443), timeout=0.2)
    assert not released.is_set()  # it gave up while the connection still hung, rather than waiting it out
    released.set()


def test_options_that_are_not_hub_options_are_refused(folder):
    """They used to be dropped without a word: a misspelt revision loaded the default one, top_k= given to
    pipeline() left 5 answers, dtype= left float32."""
    with pytest.raises(TypeError, match="'revison'.*did you mean revision"):
        roberta.RobertaForMaskedLM.from_pretrained(folder, revison="v2")
    with pytest.raises(TypeError, match=r"'dtype'.*\.to\(dtype\)"):
        roberta.RobertaForMaskedLM.from_pretrained(folder, dtype="bfloat16")
    with pytest.raises(TypeError, match=r"'top_k'.*pipe\(text, top_k=\.\.\.\)"):
        roberta.pipeline("fill-mask", folder, top_k=2)
    with pytest.raises(TypeError, match="'revison'"):
        roberta.load_tokenizer(folder, revison="v2")
    with_revision = roberta.RobertaForMaskedLM.from_pretrained(folder, revision="main")  # ignored for a folder
    plain = roberta.RobertaForMaskedLM.from_pretrained(folder).state_dict()
    assert all(value.equal(plain[key]) for key, value in with_revision.state_dict().items())


def test_a_bad_map_location_is_named_not_called_a_corrupt_file(folder):
    for location in ("gpu", "meta", "cuda:x"):
        with pytest.raises(ValueError, match=f"map_location must be .*got '{location}'"):
            roberta.RobertaForMaskedLM.from_pretrained(folder, map_location=location)
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="map_location 'cuda': this machine has no CUDA device"):
            roberta.RobertaForMaskedLM.from_pretrained(folder, map_location="cuda")


def test_a_path_from_the_home_folder_is_a_local_folder(folder, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))  # `folder` is tmp_path / "model"
    assert_loaded_from(roberta.RobertaForMaskedLM.from_pretrained("~/model"), folder)
    assert roberta.load_tokenizer("~/model").to_str() == roberta.load_tokenizer(folder).to_str()
    assert roberta.pipeline("fill-mask", "~/model")("a <mask> b") == roberta.pipeline("fill-mask", folder)("a <mask> b")
    with pytest.raises(ModelNotFoundError, match="no such folder"):
        roberta.RobertaForMaskedLM.from_pretrained("~/elsewhere")


def test_a_path_from_the_home_folder_is_where_a_model_is_saved(folder, tmp_path, monkeypatch):
    """`~` was read as the home folder on loading only: saving made a folder named ~ in the current one."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    roberta.RobertaForMaskedLM.from_pretrained(folder).save_pretrained("~/saved")
    roberta.save_tokenizer(roberta.load_tokenizer(folder), "~/saved", 64)
    names = {"config.json", "model.safetensors", "README.md", "tokenizer.json", "tokenizer_config.json"}
    assert names <= {p.name for p in (tmp_path / "home" / "saved").iterdir()}
    assert not (tmp_path / "~").exists()
    assert roberta.pipeline("fill-mask", "~/saved")("a <mask> b", top_k=1)


def test_a_broken_shard_index_is_named(folder):
    (folder / "model.safetensors").rename(folder / "model-00001-of-00001.safetensors")
    index = folder / "model.safetensors.index.json"
    index.write_text(json.dumps({"weight_map": {"x": "../model-00001-of-00001.safetensors"}}))
    with pytest.raises(ModelLoadError, match="not a .safetensors file beside the index"):
        roberta.RobertaForMaskedLM.from_pretrained(folder)
    index.write_text(json.dumps({"weight_map": {"x": "model-00002-of-00002.safetensors"}}))
    # said to come from the index: a name the user never typed ("FOLDER has no model-00002-of-00002.safetensors")
    with pytest.raises(ModelNotFoundError, match=re.escape(f"{index} names model-00002-of-00002.safetensors, which "
                                                           f"{folder} does not hold (a shard missing from the")):
        roberta.RobertaForMaskedLM.from_pretrained(folder)
    index.write_text(json.dumps({"metadata": {}}))
    with pytest.raises(ModelLoadError, match="expected a weight_map"):
        roberta.RobertaForMaskedLM.from_pretrained(folder)
    index.unlink()  # neither: the message names the single file, as before
    with pytest.raises(ModelNotFoundError, match="has no model.safetensors"):
        roberta.RobertaForMaskedLM.from_pretrained(folder)


def test_require_architecture_words_a_model_of_the_other_kind(tiny_mlm_dir, tiny_clf_dir):
    """The one check that a folder is a masked LM or a classifier, worded from checkpoint.ARCHITECTURES (the scripts'
    --init, --model and --mlm, train.calibrate's folder)."""
    assert loading.require_architecture(tiny_mlm_dir, "RobertaForMaskedLM", "unused") == "RobertaForMaskedLM"
    with pytest.raises(loading.ArchitectureMismatch) as info:
        loading.require_architecture(tiny_clf_dir, "RobertaForMaskedLM", "the probe needs a masked-LM model", "--init")
    assert str(info.value) == (f"--init {tiny_clf_dir} is a classifier (RobertaForSequenceClassification); the probe "
                               "needs a masked-LM model") and isinstance(info.value, ModelLoadError)
    with pytest.raises(loading.ArchitectureMismatch,
                       match=f"^{tiny_mlm_dir} is a masked-LM model \\(RobertaForMaskedLM\\); "):
        loading.require_architecture(tiny_mlm_dir, "RobertaForSequenceClassification", "calibration needs a classifier")
    with pytest.raises(ModelNotFoundError):  # a folder that cannot be read: the loader's own error, unworded
        loading.require_architecture(tiny_mlm_dir.parent / "missing", "RobertaForMaskedLM", "unused")


def test_from_pretrained_words_a_folder_of_the_other_head_as_the_pipeline_does(tiny_mlm_dir, tiny_clf_dir):
    """A classifier's folder given to RobertaForMaskedLM.from_pretrained listed missing and unexpected keys."""
    with pytest.raises(loading.ArchitectureMismatch) as info:
        roberta.RobertaForMaskedLM.from_pretrained(tiny_clf_dir)
    assert str(info.value) == (f"{tiny_clf_dir} is a classifier (RobertaForSequenceClassification); RobertaForMaskedLM "
                               "needs a masked-LM model: load it with RobertaForSequenceClassification.from_pretrained")
    with pytest.raises(loading.ArchitectureMismatch, match=f"^{tiny_mlm_dir} is a masked-LM model .*: load it with "
                                                       r"RobertaForMaskedLM\.from_pretrained, or start fine-tuning "
                                                       r"from its encoder with .*\.from_pretrained_encoder$"):
        roberta.RobertaForSequenceClassification.from_pretrained(tiny_mlm_dir)
    with pytest.warns(loading.PartialLoadWarning) as caught:  # asked for, and told what was not loaded
        partial = roberta.RobertaForSequenceClassification.from_pretrained(tiny_mlm_dir, strict=False)
    assert isinstance(partial, roberta.RobertaForSequenceClassification)
    assert len(caught) == 1 and caught[0].filename == __file__  # pointed at the caller's line


def test_strict_false_warns_which_tensors_are_new_and_which_unused(tiny_mlm_dir):
    """strict=False returned a classifier with a random head without a word (transformers logs it)."""
    clf = roberta.RobertaForSequenceClassification(roberta.load_config(tiny_mlm_dir))
    head = sorted(k for k in clf.state_dict() if k.startswith("classifier."))
    mlm_head = sorted(k for k in roberta.RobertaForMaskedLM.from_pretrained(tiny_mlm_dir).state_dict()
                      if k.startswith("lm_head."))
    with pytest.warns(loading.PartialLoadWarning) as caught:
        roberta.RobertaForSequenceClassification.from_pretrained(tiny_mlm_dir, strict=False)
    message = str(caught[0].message)
    assert message.startswith(f"{tiny_mlm_dir / 'model.safetensors'} does not fit RobertaForSequenceClassification "
                              "(loaded with strict=False): missing tensors, newly initialised: [")
    new, unused = message.split("; unexpected tensors, not used: ")
    assert sorted(re.findall(r"'([^']+)'", new)) == head and sorted(re.findall(r"'([^']+)'", unused)) == mlm_head
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a checkpoint that fits: no warning
        roberta.RobertaForMaskedLM.from_pretrained(tiny_mlm_dir, strict=False)


def test_loading_a_folder_reads_its_config_json_once(folder, monkeypatch):
    """The config and the other-head check share one read of config.json."""
    reads = []
    real_read_json = checkpoint.read_json
    monkeypatch.setattr(checkpoint, "read_json", lambda path: reads.append(path) or real_read_json(path))
    roberta.RobertaForMaskedLM.from_pretrained(folder)
    assert [p for p in reads if str(p).endswith("config.json")] == [str(folder / "config.json")]
    reads.clear()  # a pipeline's architecture check too: it read the file, then its loader read it again
    roberta.pipeline("fill-mask", folder, device="cpu")
    assert [p for p in reads if str(p).endswith("config.json")] == [str(folder / "config.json")]


def test_the_three_architecture_checks_are_one(folder, tiny_clf_dir):
    """`require_architecture` (the scripts), `refuse_other_head` (from_pretrained) and the pipeline each had a check
    of their own: one rule now (`loading.check_architecture`), each caller saying why it needed the other kind. A bare
    encoder was an ArchitectureMismatch for two of them, and for `require_architecture` "architectures is
    ['RobertaModel']; this package loads [...]"."""
    clf = f"{tiny_clf_dir} is a classifier (RobertaForSequenceClassification); "
    for call, why in ((lambda: loading.require_architecture(tiny_clf_dir, "RobertaForMaskedLM", "the probe needs one"),
                       "the probe needs one"),
                      (lambda: roberta.RobertaForMaskedLM.from_pretrained(tiny_clf_dir),
                       "RobertaForMaskedLM needs a masked-LM model: load it with "
                       "RobertaForSequenceClassification.from_pretrained"),
                      (lambda: roberta.pipeline("fill-mask", tiny_clf_dir),
                       "the 'fill-mask' pipeline needs a masked-LM model (RobertaForMaskedLM): use "
                       "pipeline('text-classification', ...) for this one")):
        with pytest.raises(loading.ArchitectureMismatch) as info:
            call()
        assert str(info.value) == clf + why
    for option in ("why", "advice"):  # the pipeline's words to the loader (`loading.load_model`), no option
        for load in (roberta.RobertaForMaskedLM.from_pretrained, functools.partial(roberta.pipeline, "fill-mask")):
            with pytest.raises(TypeError, match=f"unknown option '{option}'"):
                load(tiny_clf_dir, **{option: "the probe needs one"})
    edit_config(folder, architectures=["RobertaModel"])
    hint = ("Start a classifier from its encoder with RobertaForSequenceClassification.from_pretrained_encoder"
            f"({str(folder)!r})")
    with pytest.raises(loading.ArchitectureMismatch) as info:
        loading.require_architecture(folder, "RobertaForMaskedLM", "the probe needs a masked-LM model", "--model")
    assert str(info.value) == (f"--model {folder} is an encoder without a head (RobertaModel); the probe needs a "
                               f"masked-LM model. {hint}")
    # a config that names no architecture: a masked LM for the scripts (`read_architecture`), left to the loader
    # by the others (which load it as the class they are)
    edit_config(folder, architectures=[])
    assert loading.require_architecture(folder, "RobertaForMaskedLM", "unused") == "RobertaForMaskedLM"
    with pytest.raises(loading.ArchitectureMismatch, match=f"^{folder} is a masked-LM model "):
        loading.require_architecture(folder, "RobertaForSequenceClassification", "calibration needs a classifier")
    loading.check_architecture(folder, {"architectures": []}, "RobertaForSequenceClassification", "unused")
    edit_config(folder, architectures=["BertForMaskedLM"])  # one this package does not load: named, as before
    with pytest.raises(ModelLoadError, match=r"architectures is \['BertForMaskedLM'\]; this package loads"):
        loading.require_architecture(folder, "RobertaForMaskedLM", "unused")


def test_a_bare_encoder_read_as_a_whole_model_points_to_from_pretrained_encoder(folder):
    """`checkpoint.read_architecture` (a script's --model, train.export, the app's model box) and `roberta.auto_model`
    said "architectures is ['RobertaModel']; this package loads [...]", not the ArchitectureMismatch of every other
    loader (`loading.check_architecture`) that says how such a folder is used. With `encoder_ok` (train.finetune's
    --init, which wants the encoder alone) its class is read as it is named."""
    hint = ("Start a classifier from its encoder with RobertaForSequenceClassification.from_pretrained_encoder"
            f"({str(folder)!r})")
    for bare in checkpoint.BARE_ENCODERS:
        edit_config(folder, architectures=[bare])
        for read in (checkpoint.read_architecture, roberta.auto_model):
            with pytest.raises(loading.ArchitectureMismatch) as info:
                read(folder)
            assert str(info.value) == (f"{folder} is an encoder without a head ({bare}); this package loads "
                                       f"RobertaForMaskedLM or RobertaForSequenceClassification, each with its head. "
                                       f"{hint}")
        assert checkpoint.read_architecture(folder, encoder_ok=True) == bare
    edit_config(folder, architectures=["RobertaForMaskedLM"])
    assert checkpoint.read_architecture(folder, encoder_ok=True) == "RobertaForMaskedLM"


def test_a_config_that_names_no_architecture_is_a_masked_lm_for_every_reader(folder):
    """The rule was written twice (`checkpoint.architecture_of`, `loading.check_architecture`'s none_is_mlm): one
    helper (`checkpoint.architecture_named`) now, which both readers agree on, whatever names no class."""
    for unnamed in ({}, {"architectures": None}, {"architectures": []}):
        config = {k: v for k, v in json.loads((folder / "config.json").read_text()).items() if k != "architectures"}
        (folder / "config.json").write_text(json.dumps({**config, **unnamed}))
        assert checkpoint.architecture_named(folder, unnamed, "unused", none_is_mlm=True) == "RobertaForMaskedLM"
        assert checkpoint.architecture_named(folder, unnamed, "unused") is None  # left to the loader
        assert checkpoint.read_architecture(folder) == "RobertaForMaskedLM"
        with pytest.raises(loading.ArchitectureMismatch, match=f"^{re.escape(str(folder))} is a masked-LM model "):
            loading.require_architecture(folder, "RobertaForSequenceClassification", "calibration needs a classifier")


def test_the_finite_check_reads_one_byte_floats():
    """float8 weights loaded before the check, which then stopped them with torch's "max_values_cpu not
    implemented for 'Float8_e4m3fn'"."""
    from roberta.checkpoint import refuse_non_finite

    fine = torch.tensor([0.5, -2.0, 448.0]).to(torch.float8_e4m3fn)
    refuse_non_finite({"w": fine}, "f.safetensors")  # raises nothing
    with pytest.raises(roberta.ModelLoadError, match="f.safetensors: w holds 1 NaN"):
        refuse_non_finite({"w": torch.tensor([0.5, float("nan")]).to(torch.float8_e4m3fn)}, "f.safetensors")


def _with_rows(classifier, rows: int):
    """`classifier` (a RobertaForSequenceClassification) with `rows` word-embedding rows: its own first, then random
    ones (a vocabulary size set by hand, above the tokenizer's)."""
    config = dataclasses.replace(classifier.config, vocab_size=rows)
    bigger = roberta.RobertaForSequenceClassification(config)
    state = classifier.state_dict()
    own = state["roberta.embeddings.word_embeddings.weight"]
    extra = torch.randn(rows - len(own), own.shape[1], generator=torch.Generator().manual_seed(0))
    state["roberta.embeddings.word_embeddings.weight"] = torch.cat([own, extra])
    bigger.load_state_dict(state)
    return bigger


def test_harmless_differences_from_the_config_load_with_a_warning_and_change_no_answer(tiny_clf_dir, tmp_path):
    """A community checkpoint with a vocabulary size set by hand (52,000 rows for roberta-base's 50,265 tokens),
    or a config with other bos/eos ids, runs in transformers but was refused here ("they do not belong together").
    Rows no token reaches and bos/eos ids the model never reads are warned about (TokenizerFitWarning), and the
    model answers exactly as without them."""
    from roberta.tokenizer import TokenizerFitWarning

    texts = ["a fine film", "the worst of the year, and far too long"]
    own = roberta.pipeline("text-classification", model=tiny_clf_dir, device="cpu")
    tokens = own.tokenizer.get_vocab_size()
    rows = tokens + 37  # no multiple of 8, 64 or 128 above the size: not padding
    assert rows not in {-(-tokens // n) * n for n in (8, 64, 128)}
    folder = tmp_path / "hand-set"
    _with_rows(own.model, rows).save_pretrained(folder)
    shutil.copy(tiny_clf_dir / "tokenizer.json", folder / "tokenizer.json")
    edit_config(folder, bos_token_id=5, eos_token_id=6)
    with pytest.warns(TokenizerFitWarning) as caught:
        loaded = roberta.pipeline("text-classification", model=folder, device="cpu")
    said = {str(w.message) for w in caught}
    source = f"{folder}'s tokenizer.json"
    assert {f"{source} has {tokens:,} tokens but the model {rows:,} embedding rows: the last 37 rows are no "
            "token's. Harmless when the vocabulary size was set by hand; if the model answers nonsense, the tokenizer "
            "is another model's",
            f"{source} gives <s> the id 0, but the model's config has bos_token_id 5: the tokenizer's id is used (the "
            "model does not read bos_token_id)",
            f"{source} gives </s> the id 2, but the model's config has eos_token_id 6: the tokenizer's id is used "
            "(the model does not read eos_token_id)"} <= said
    assert all(w.filename == __file__ for w in caught)  # the caller's line, not the package's that checked it
    assert loaded(texts) == own(texts)
    padded = tmp_path / "padded"  # rounded up to a multiple of 8: silent, as before
    _with_rows(own.model, -(-tokens // 8) * 8).save_pretrained(padded)
    shutil.copy(tiny_clf_dir / "tokenizer.json", padded / "tokenizer.json")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert roberta.pipeline("text-classification", model=padded, device="cpu")(texts) == own(texts)


def test_a_tokenizer_the_model_cannot_run_is_still_refused(tiny_clf_dir, tiny_mlm_dir, tmp_path):
    """What breaks the model stays a ModelLoadError: a token id with no embedding row (more tokens than rows, or a
    special token's id beyond them), and another padding id (positions are numbered by the config's)."""
    tokenizer = roberta.load_tokenizer(tiny_clf_dir)
    tokens = tokenizer.get_vocab_size()
    model = roberta.RobertaForSequenceClassification.from_pretrained(tiny_clf_dir)
    smaller = roberta.RobertaForSequenceClassification(dataclasses.replace(model.config, vocab_size=200))
    with pytest.raises(ModelLoadError, match=f"^the tokenizer has {tokens:,} tokens but the model only 200: they do "
                                             "not belong together"):
        roberta.pipeline("text-classification", model=smaller, tokenizer=tokenizer)
    # <mask> moved to id 5,000, leaving a gap
    data = json.loads((tiny_mlm_dir / "tokenizer.json").read_text(encoding="utf-8"))
    for added in data["added_tokens"]:
        added["id"] = 5000 if added["content"] == "<mask>" else added["id"]
    data["model"]["vocab"] = {t: (5000 if t == "<mask>" else i) for t, i in data["model"]["vocab"].items()}
    (tmp_path / "tokenizer.json").write_text(json.dumps(data))
    gapped = roberta.load_tokenizer(tmp_path / "tokenizer.json")
    assert gapped.token_to_id("<mask>") == 5000 and gapped.get_vocab_size() <= tokens
    with pytest.raises(ModelLoadError, match=f"^the tokenizer gives <mask> the id 5,000, beyond the model's "
                                             f"{tokens:,} embedding rows"):
        roberta.pipeline("text-classification", model=model, tokenizer=gapped)
    other_pad = roberta.RobertaForSequenceClassification(dataclasses.replace(model.config, pad_token_id=0))
    with pytest.raises(ModelLoadError, match="^the tokenizer gives <pad> the id 1, but the model's config has "
                                             "pad_token_id 0: the model numbers positions by that id"):
        roberta.pipeline("text-classification", model=other_pad, tokenizer=tokenizer)

