"""A tab's model choice (`demo.model_choice`): a Hub RoBERTa loaded into our code instead of the shipped model.

The Hub repo is stood in for by a local folder that `transformers` itself wrote (`save_pretrained` of a tiny
random `transformers.RobertaForMaskedLM` / `RobertaForSequenceClassification`, with the tokenizer.json of a
`transformers` fast tokenizer), so the tests check our loader against `transformers`' own numbers, offline."""
import contextlib
import json
import os
import shutil
import threading
import urllib.request

import gradio as gr
import numpy as np
import pytest
import torch
from matplotlib.figure import Figure

import roberta
from demo import model_choice as MC
from demo.formatting import format_probability, md_escape, word_label
from demo.handlers import Handlers
from demo import explain
from demo import models as app_models
from demo.examples import SENTIMENT_EXAMPLES
from demo.models import KINDS, app_device, load_model, without_paths
from demo.tokens_view import special_ids, tokenize

transformers = pytest.importorskip("transformers")

TEXT = "Paris is the capital of <mask>."


def _hf_config(tokenizer, **extra):
    return transformers.RobertaConfig(
        vocab_size=tokenizer.get_vocab_size(), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=64, max_position_embeddings=66, type_vocab_size=1, pad_token_id=1, bos_token_id=0,
        eos_token_id=2, layer_norm_eps=1e-5, **extra)


def _save_hf(folder, model, tokenizer, with_tokenizer=True):
    model.save_pretrained(folder)  # config.json + model.safetensors, as on the Hub
    if with_tokenizer:
        fast = transformers.PreTrainedTokenizerFast(
            tokenizer_object=tokenizer, bos_token="<s>", eos_token="</s>", unk_token="<unk>", pad_token="<pad>",
            mask_token="<mask>", cls_token="<s>", sep_token="</s>")
        fast.save_pretrained(folder)  # tokenizer.json (+ tokenizer_config.json, special_tokens_map.json)
    return folder


@pytest.fixture(scope="module")
def hf_mlm_dir(tmp_path_factory, tokenizer):
    torch.manual_seed(1)
    model = transformers.RobertaForMaskedLM(_hf_config(tokenizer))
    return _save_hf(tmp_path_factory.mktemp("hf-mlm"), model, tokenizer)


@pytest.fixture(scope="module")
def hf_clf_dir(tmp_path_factory, tokenizer):
    """A textattack-style classifier: transformers' default labels LABEL_0 / LABEL_1, no calibration."""
    torch.manual_seed(2)
    model = transformers.RobertaForSequenceClassification(_hf_config(tokenizer, num_labels=2))
    return _save_hf(tmp_path_factory.mktemp("hf-clf"), model, tokenizer)


@pytest.fixture(scope="module")
def handlers(models, single_thread):
    return Handlers(models, MC.ModelChooser(models, allow_local=True))


def _hf_probabilities(folder, tokenizer, text, cls):
    model = cls.from_pretrained(folder).eval()
    ids = torch.tensor([tokenizer.encode(text).ids])
    with torch.no_grad():
        return model(ids).logits.softmax(-1)[0], ids[0]


# ----------------------------------------------------------------------------- our code reads the folders
def test_transformers_folders_load_with_our_code(hf_mlm_dir, hf_clf_dir):
    assert (hf_mlm_dir / "tokenizer.json").is_file() and (hf_mlm_dir / "model.safetensors").is_file()
    mlm = roberta.RobertaForMaskedLM.from_pretrained(hf_mlm_dir)
    clf = roberta.RobertaForSequenceClassification.from_pretrained(hf_clf_dir)
    assert isinstance(mlm, roberta.RobertaForMaskedLM) and clf.config.id2label == {0: "LABEL_0", 1: "LABEL_1"}
    assert roberta.load_tokenizer(hf_mlm_dir).token_to_id("<mask>") is not None


def test_fill_mask_runs_the_chosen_model(handlers, hf_mlm_dir, tokenizer):
    probabilities, ids = _hf_probabilities(hf_mlm_dir, tokenizer, TEXT, transformers.RobertaForMaskedLM)
    position = (ids == tokenizer.token_to_id("<mask>")).nonzero()[0, 0]
    expected = probabilities[position]
    filled, first, *_, raw, view = handlers.fill_mask(TEXT, 3, "", str(hf_mlm_dir))
    assert [r["token"] for r in raw[0]] == expected.topk(3).indices.tolist()  # transformers' own ranking
    assert raw[0][0]["score"] == pytest.approx(float(expected.max()), abs=1e-5)
    shipped = handlers.fill_mask(TEXT, 3)[-2]
    assert [r["token"] for r in shipped[0]] != [r["token"] for r in raw[0]]  # the default is still ours
    assert handlers.fill_mask(TEXT, 3, "", MC.SHIPPED)[-2] == shipped


def test_classify_runs_the_chosen_model_with_its_labels(handlers, hf_clf_dir, tokenizer):
    label, words, explanation = handlers.classify("the cat likes good music.", str(hf_clf_dir))
    assert set(label) == {"LABEL_0", "LABEL_1"}  # the model's own id2label names, shown as they are
    expected, _ = _hf_probabilities(hf_clf_dir, tokenizer, "the cat likes good music.",
                                    transformers.RobertaForSequenceClassification)
    assert label["LABEL_1"] == pytest.approx(float(expected[1]), abs=1e-5)  # no calibration: temperature 1
    assert r"*LABEL\_1*" in explanation and any(score is not None for _, score in words)
    assert set(handlers.classify("the cat likes good music.")[0]) == {"negative", "positive"}


def test_the_servers_classifier_reads_the_text_as_its_tokenizer_does(tiny_mlm_dir, tokenizer, tmp_path, monkeypatch):
    """The reviewer's case: whatever classifier SENTIMENT_MODEL named was lower-cased, decided by its slot, and
    the Attention notes said it "reads lower-cased text, as it was fine-tuned on it": a cased `transformers`
    classifier answered otherwise than `transformers` and than the same folder in the model box. The model now
    decides (`roberta.text.lower_cases`, as `train.finetune` saves this project's classifiers), in both tabs and
    both slots."""
    text = "The Cat likes GOOD music."
    torch.manual_seed(2)  # larger weights than `hf_clf_dir`'s, whose answers the case hardly moves
    model = transformers.RobertaForSequenceClassification(_hf_config(tokenizer, num_labels=2, initializer_range=0.2))
    cased_dir = _save_hf(tmp_path / "cased", model, tokenizer)
    expected, _ = _hf_probabilities(cased_dir, tokenizer, text, transformers.RobertaForSequenceClassification)
    lowered, _ = _hf_probabilities(cased_dir, tokenizer, text.lower(), transformers.RobertaForSequenceClassification)
    assert abs(float(expected[1] - lowered[1])) > 1e-3
    lowering_dir = _with_tokenizer_steps(cased_dir, tmp_path, normalizer={"type": "Lowercase"})  # as ours are
    read = []
    call = roberta.pipelines.TextClassificationPipeline.__call__
    monkeypatch.setattr(roberta.pipelines.TextClassificationPipeline, "__call__",
                        lambda self, text, **kw: read.append(text) or call(self, text, **kw))
    for folder, reads, probability in ((cased_dir, text, expected[1]), (lowering_dir, text.lower(), lowered[1])):
        server = Handlers(app_models.load_models(tiny_mlm_dir, folder),
                          MC.ModelChooser(app_models.load_models(tiny_mlm_dir, folder), allow_local=True))
        for model_choice in (MC.SHIPPED, str(folder)):  # the server's slot and the model box alike
            read.clear()
            probabilities = server.classify(text, model_choice)[0]
            assert read == [reads] and probabilities["LABEL_1"] == pytest.approx(float(probability), abs=1e-5)
        for attention_model in ("sentiment", str(folder)):
            picker, notes = server.attention(text, 1, "average", attention_model, "heads")[4:6]
            labels = "".join(label.split(": ", 1)[1] for label, _ in picker["choices"][1:-1])
            assert labels.replace("␣", "").startswith("TheCat" if reads == text else "thecat")
            assert ("lower-cases" in notes or "lower-cased" in notes) == (reads != text)


def test_counterfactual_runs_the_chosen_model_in_its_own_case(handlers, hf_clf_dir, monkeypatch):
    read = []
    call = roberta.pipelines.TextClassificationPipeline.__call__
    monkeypatch.setattr(roberta.pipelines.TextClassificationPipeline, "__call__",
                        lambda self, text, **kw: read.append(text) or call(self, text, **kw))
    view, data = handlers.counterfactual("The Cat was GOOD", str(hf_clf_dir))
    assert data["attribution_label"] == "LABEL_1" and "P(LABEL\\_1)" in view  # the model's own label names
    assert data["towards"] in ("LABEL_0", "LABEL_1")
    assert read == ["The Cat was GOOD", [row["text"] for row in data["edits"]]]  # cased, the edits in one batch
    if data["word"] == "GOOD":  # the opposite keeps the case too
        assert "The Cat was BAD" in read[1]


def test_attention_runs_the_chosen_model_as_transformers_does(handlers, hf_mlm_dir, hf_clf_dir, tokenizer):
    """The attention tab reads a Hub RoBERTa of either kind: the same attention weights as `transformers`."""
    text = "the cat likes good music."
    for folder, cls in ((hf_mlm_dir, transformers.RobertaForMaskedLM),
                        (hf_clf_dir, transformers.RobertaForSequenceClassification)):
        model = cls.from_pretrained(folder, attn_implementation="eager").eval()
        ids = torch.tensor([tokenizer.encode(text).ids])
        with torch.no_grad():
            expected = torch.stack(model(ids, output_attentions=True).attentions)[:, 0].numpy()  # (L, nh, T, T)
        tokens, attentions = handlers.attention_data(str(folder), text)
        assert tokens.ids == ids[0].tolist()
        np.testing.assert_allclose(attentions, expected, atol=1e-5)
        *_, notes, heads, layers, head_picker, _, _, _, _ = handlers.attention(text, 2, 1, str(folder), "heads")
        assert md_escape(str(folder)) in notes and "2 layers × 4 heads" in notes and "Layer 2, head 1" in heads
    assert handlers.attention(text, 2, 1)[5] != notes  # the default is still ours


def test_attention_model_box(models, handlers, hf_mlm_dir, hf_clf_dir, monkeypatch):
    """The attention tab's box: both shipped models, or a Hub RoBERTa of either kind (loaded once, shared with
    the other tabs); its layers and heads offered, the current ones kept where it has them."""
    value, current, status, layers, heads = handlers.attention_model(str(hf_mlm_dir), "mlm", 2, 3)
    assert value == current == str(hf_mlm_dir) and "2 layers × 4 heads" in status
    assert layers["choices"] == [1, 2] and layers["value"] == 2 and heads["value"] == 3
    assert handlers.chooser.get_any(str(hf_mlm_dir)) is handlers.chooser.get("mlm", str(hf_mlm_dir))
    assert handlers.attention_model(str(hf_clf_dir), "mlm", 99, 99)[3:] == (
        {"__type__": "update", "choices": [1, 2], "value": 2},
        {"__type__": "update", "choices": [("average of heads", "average")] + [(f"head {h}", h) for h in range(1, 5)],
         "value": "average"})
    assert handlers.chooser.get_any(str(hf_clf_dir)).key == "sentiment"
    value, current, status, *_ = handlers.attention_model("sentiment", str(hf_mlm_dir), 1, "average")
    assert value == current == "sentiment" and "model-status" in status
    assert handlers.attention_model(MC.SHIPPED, "sentiment", 1, "average")[:2] == ("mlm", "mlm")
    # offline, a Hub model is refused in plain words; the tab keeps its model and the shipped ones answer. One
    # picked from the list has no typo to correct: the box shows the tab's model again (the status need not name it)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    value, current, status, layers, heads = handlers.attention_model("FacebookAI/roberta-base", "sentiment", 1, 1)
    assert (value, current) == ("sentiment", "sentiment") and layers == heads == gr.skip()
    assert "The Hugging Face Hub cannot be reached" in status and MC._kept(MC.ATTENTION_TAB) in status
    assert "current model stays in use.<" in status and "This tab still runs" not in status, status
    value, current, status, *_ = handlers.attention_model("owner/typo", "sentiment", 1, 1)  # typed: kept to correct
    assert (value, current) == ("owner/typo", "sentiment") and "This tab still runs ours: the shipped SST-2" in status
    with pytest.raises(gr.Error, match="cannot be reached"):
        handlers.attention("the cat.", 1, "average", "FacebookAI/roberta-base")
    assert handlers.attention("the cat.", 1, "average", "sentiment")[6].count('class="hv-r"') > 2
    refused = handlers.attention_model("<b>", "mlm")[2]
    assert ("“&lt;b&gt;” is neither an existing folder nor a Hugging Face Hub repo id" in refused
            and "<b>" not in refused)


def test_the_attention_tab_reads_its_model_and_view_names_in_any_case(handlers):
    """The reviewer's case: model "Sentiment" or " MLM " was "not a Hub repo id: … the Attention tab's list names
    its two “mlm” and “sentiment”" (what was typed), and view "HEADS" or " heads " was refused, while "SHIPPED"
    and " ALL " were read: every name is read in any case, spaces around."""
    text = "The Cat sees the house."
    for typed, name in [("Sentiment", "sentiment"), (" MLM ", "mlm"), ("SENTIMENT", "sentiment")]:
        drawn, named = handlers.attention(text, 1, "average", typed), handlers.attention(text, 1, "average", name)
        assert drawn[6] == named[6] and drawn[5] == named[5]  # the same head view and notes (the model's name)
        assert handlers.attention_model(typed, "mlm", 1, "average")[:2] == (name, name)  # as the box lists it
    for view in ("HEADS", " heads ", "Heads"):
        drawn = handlers.attention(text, 1, "average", "mlm", view)
        assert drawn[6] is not None and drawn[0] is None  # the head view only
        assert handlers.attention_layer(text, 2, "average", None, "mlm", view)[3] is not None
        assert handlers.attention_view(text, 1, "average", None, "mlm", view) == drawn[6]
    assert handlers.attention_view(text, 1, "average", None, "mlm", " Heatmap ")[1] is not None
    with pytest.raises(gr.Error, match="The view must be heads, heatmap, grid, rollout or token, got “all”"):
        handlers.attention_view(text, 1, "average", None, "mlm", "all")  # one view only: "all" is no view here


def test_tokens_and_embeddings_tabs_read_a_hub_model(handlers, hf_mlm_dir, monkeypatch):
    """The tokens and embeddings tabs take a Hub fill-mask model (its tokenizer, its embedding tables) as the
    fill-mask tab does, loaded once and shared; a refusal says that nothing was run and the model stays."""
    hub = str(hf_mlm_dir)
    assert handlers.tokens("The cat sat.", hub)[1] == handlers.tokens("The cat sat.")[1]  # the same tokenizer
    table = handlers.chooser.get("mlm", hub).model.roberta.embeddings.word_embeddings.weight
    theirs = transformers.RobertaForMaskedLM.from_pretrained(hf_mlm_dir).roberta.embeddings.word_embeddings.weight
    assert torch.equal(table, theirs)
    assert handlers.neighbours("cat", 3, True, hub)[1] != handlers.neighbours("cat", 3, True)[1]  # its own table
    assert isinstance(handlers.positions(hub)[0], Figure)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    for call, tab in [(lambda: handlers.tokens("the cat", "someone/no-such-roberta"), "Tokens"),
                      (lambda: handlers.positions("someone/no-such-roberta"), "Embeddings")]:
        with pytest.raises(gr.Error, match="cannot be reached.*Nothing was run with it, and the current model stays"):
            call()
    _, current, status = handlers.chooser.choose("mlm", "someone/other-roberta", MC.SHIPPED, "Embeddings")
    assert current == MC.SHIPPED and "Nothing was run with it, and the current model stays in use." in status


def test_a_model_that_cannot_load_is_explained_to_a_page_visitor_and_an_api_caller_alike(handlers, monkeypatch):
    """The reviewer's case: offline, /fill_mask(text, 5, "", "FacebookAI/roberta-base") answered "… not in its
    download cache. The Fill mask tab keeps its current model." (the same on /classify and /attention), which
    speaks of a tab to an API client. The message now names no tab: nothing was run with that model, and the
    current one stays (in a tab's box: the tab keeps its model). A call through the API (`MC.loading_aside`) is
    told less: `test_an_api_call_is_told_the_value_to_send_and_not_of_a_current_model`."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    kept = "Nothing was run with it, and the current model stays in use."
    for call in (lambda model: handlers.fill_mask(TEXT, 5, "", model),
                 lambda model: handlers.classify("a fun film", model),
                 lambda model: handlers.attention("The cat.", 1, "average", model)):
        with pytest.raises(gr.Error) as error:
            call("FacebookAI/roberta-base")
        message = error.value.message
        assert message.startswith("The Hugging Face Hub cannot be reached") and message.endswith(kept), message
        assert " tab" not in message, message
    # the page's model box says the same, in its status next to the box, and keeps the tab's model (and shows it
    # again: the choice was the box's own suggestion)
    value, current, status = handlers.chooser.choose("mlm", "FacebookAI/roberta-base", MC.SHIPPED)
    assert (value, current) == (MC.SHIPPED, MC.SHIPPED) and kept in status


# ----------------------------------------------------------------------------- the model box
def test_choose_loads_once_and_describes_the_model(models, hf_mlm_dir, monkeypatch):
    chooser = MC.ModelChooser(models, allow_local=True)
    calls = []
    load = MC.load_choice
    monkeypatch.setattr(MC, "load_choice", lambda key, source, *rest: calls.append(source) or load(key, source, *rest))
    value, current, status = chooser.choose("mlm", str(hf_mlm_dir), MC.SHIPPED)
    assert value == current == str(hf_mlm_dir)
    assert "model-status" in status and "parameters" in status and "MB in memory" in status
    assert "2 layers × 4 heads" in status and "64 tokens" in status
    assert chooser.get("mlm", str(hf_mlm_dir)) is chooser.get("mlm", f"  {hf_mlm_dir} ")
    assert len(calls) == 1
    assert chooser.choose("mlm", MC.SHIPPED, str(hf_mlm_dir))[:2] == (MC.SHIPPED, MC.SHIPPED)


def test_a_models_size_is_counted_as_the_about_tab_counts_it(tokenizer):
    """The model box wrote 500,000 parameters where the About tab writes 0.5M (millions from 100,000 on)."""
    from types import SimpleNamespace

    from demo.formatting import millions
    from demo.models import LoadedModel

    config = roberta.RobertaConfig.from_preset("tiny", tokenizer=tokenizer, hidden_size=128, intermediate_size=256)
    model = roberta.RobertaForMaskedLM(config)
    assert 100_000 <= model.num_parameters() < 1_000_000  # where the two ways of counting differed
    loaded = LoadedModel("mlm", "a-folder", pipeline=SimpleNamespace(model=model, tokenizer=None))
    assert f": {millions(model.num_parameters())} parameters (" in MC.describe(loaded)


def test_choosing_a_shipped_model_that_failed_at_start_up_keeps_the_tab_on_its_model(models, hf_mlm_dir):
    """As any model that cannot be used: the tab stays on the current one, the box on the choice, the reason and
    the model still in use beside the box."""
    from demo.models import LoadedModel, Models

    broken = Models(LoadedModel("mlm", "assets/gone", error="assets/gone: no such folder"), models.sentiment)
    chooser = MC.ModelChooser(broken, allow_local=True)
    assert chooser.choose("mlm", str(hf_mlm_dir), MC.SHIPPED)[:2] == (str(hf_mlm_dir), str(hf_mlm_dir))
    value, current, status = chooser.choose("mlm", MC.SHIPPED, str(hf_mlm_dir))
    assert (value, current) == (MC.SHIPPED, str(hf_mlm_dir))
    assert "assets/gone: no such folder" in status and "input-error" in status
    assert f"This tab still runs {hf_mlm_dir}." in status


def test_cache_keeps_the_last_few_models(models, tmp_path, monkeypatch):
    monkeypatch.setattr(MC, "load_choice", lambda key, source, *_: models[key])
    chooser = MC.ModelChooser(models, size=2, allow_local=True)
    for name in ("a", "b", "a", "c"):
        chooser.get("mlm", str(tmp_path / name))
    assert [key[1][-1] for key in chooser._loaded] == ["a", "c"]  # b, least recently used, dropped


def test_a_slow_load_blocks_only_that_model(models, monkeypatch):
    """Two requests for one model load it once; the shipped model answers meanwhile."""
    started, release, calls = threading.Event(), threading.Event(), []

    def slow(key, source, *_):
        calls.append(source)
        started.set()
        release.wait(10)
        return models[key]

    monkeypatch.setattr(MC, "load_choice", slow)
    chooser = MC.ModelChooser(models)
    threads = [threading.Thread(target=chooser.get, args=("mlm", "owner/big-model")) for _ in range(2)]
    for thread in threads:
        thread.start()
    assert started.wait(10)
    assert chooser.get("mlm", MC.SHIPPED) is models.mlm and chooser.get("sentiment") is models.sentiment
    assert not release.is_set()  # they answered while the load still waits: no clock needed
    release.set()
    for thread in threads:
        thread.join(10)
    assert calls == ["owner/big-model"]


@pytest.mark.parametrize("key, choice, allow_local, message", [
    ("mlm", "someone/no-such-roberta", True, "The Hugging Face Hub cannot be reached from this server "
                                             "(HF_HUB_OFFLINE is set)"),
    ("sentiment", "FacebookAI/roberta-base", True, "cannot be reached"),  # typed: the box lists other ones
    ("mlm", "not a repo id!", True, "“not a repo id!” is neither an existing folder nor a Hugging Face Hub repo id"),
    ("mlm", "<b>x</b>/y", True, "&lt;b&gt;"),
    ("mlm", "a" * 300, True, "That is not a Hugging Face Hub repo id"),
    ("mlm", "/etc", False, "local folders can be chosen only where the server allows them"),
    ("mlm", "../assets", False, "local folders can be chosen only"),
    ("mlm", "/no/such/folder", True, "no such folder"),
])
def test_a_model_that_cannot_load_keeps_the_current_one(models, monkeypatch, key, choice, allow_local, message):
    """The tab keeps its model; the box keeps what was typed (a typo is corrected, not typed again), so the status
    names the model still in use."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    chooser = MC.ModelChooser(models, allow_local=allow_local)
    value, current, status = chooser.choose(key, choice, "owner/current")
    assert (value, current) == (choice, "owner/current")  # the box keeps the choice as typed, to be corrected
    assert 'class="input-error"' in status and message in status and "Traceback" not in status
    assert "This tab still runs owner/current." in status
    assert not chooser.loaded()  # nothing cached: it can be tried again


@pytest.mark.parametrize("key", ["mlm", "sentiment"])
def test_a_suggested_model_that_cannot_load_gives_the_box_back_the_tabs_model(models, monkeypatch, key):
    """Offline, a suggested Hub model picked from the box's list failed, and the box went on showing it while the
    tab ran another model: there is no typo to correct, so the box shows the tab's model again."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    for current in (MC.SHIPPED, "owner/current"):
        value, now, status = MC.ModelChooser(models).choose(key, MC.KINDS[key].suggested[0], current)
        assert value == now == current and "cannot be reached" in status and "This tab still runs" not in status


@pytest.mark.parametrize("choice, allow_local, message", [
    ("C:\\Windows", False,
     "“C:\\Windows” is not a Hugging Face Hub repo id (OWNER/NAME, e.g. FacebookAI/roberta-base)."),
    ("C:\\Windows", True, "“C:\\Windows” is neither an existing folder nor a Hugging Face Hub repo id (OWNER/NAME"),
    ("http://evil.com/x", False, "“http://evil.com/x” is a web address, not a Hugging Face Hub repo id (OWNER/NAME"),
    ("https://huggingface.co/FacebookAI/roberta-base", True, "is a web address, not a Hugging Face Hub repo id"),
])
def test_a_choice_that_is_no_repo_id_is_named_as_typed(models, choice, allow_local, message):
    """A Windows path was quoted as Python writes it ('C:\\\\Windows', its backslash doubled), and a web address
    was called a local folder (its slashes): each is said to be no repo id, as typed, before anything loads."""
    with pytest.raises(MC.ModelChoiceError) as info:
        MC.ModelChooser(models, allow_local=allow_local).get("mlm", choice)
    assert message in str(info.value) and "\\\\" not in str(info.value)
    assert "local folder" not in str(info.value)


def test_without_local_folders_a_choice_tells_nothing_of_the_servers_disk(models, tiny_mlm_dir, tmp_path,
                                                                        monkeypatch):
    """The reviewer's case: with local folders off (a Space), an existing path (assets, README.md, roberta/hub.py,
    assets/mini-roberta-mlm) was "not a Hugging Face Hub repo id…; local folders can be chosen only…" and a missing
    one (assets/nothing, nonexist, demo/x) "cannot be reached… not in its download cache": the model box told a
    visitor which files the server holds. Now the spelling alone decides: a repo id goes to the Hub (never to the
    folder of its name, even one that loads), anything else is refused in the same words, whatever is on disk."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(MC.LOCAL_ENV, raising=False)  # the loading note's reading of it
    shutil.copytree(tiny_mlm_dir, tmp_path / "assets" / "mini-roberta-mlm")  # a folder that would load
    (tmp_path / "README.md").write_text("# the server's files\n")
    chooser = MC.ModelChooser(models, allow_local=False)

    def said(choice):
        """What the model box and the loading note say of `choice`, its name put aside."""
        status = chooser.choose("mlm", choice, MC.SHIPPED)[2]
        return status.replace(choice, "NAME"), MC.loading_html(choice).replace(choice, "NAME")

    existing = ["assets", "README.md", "assets/mini-roberta-mlm"]
    missing = ["nothing", "nonexist", "assets/nothing"]
    assert len({said(choice) for choice in existing + missing}) == 1
    assert "cannot be reached" in said("assets")[0]  # the Hub was asked (offline here), not the folder
    assert "from the Hugging Face Hub" in said("assets")[1]
    assert said("./assets") == said("./nothing") and "local folders can be chosen only" in said("./assets")[0]
    assert not chooser.loaded()


@pytest.fixture
def online(monkeypatch):
    """The Hub reachable (its probe answers yes), HF_HUB_OFFLINE unset: what hf_hub_download then does is the
    test's."""
    monkeypatch.setitem(roberta.hub._probe, "at", float("-inf"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(roberta.hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(roberta.hub, "_connects", lambda address, timeout: True)


def test_a_missing_or_unreachable_hub_repo_is_said_in_the_apps_words(models, online, tmp_path, monkeypatch):
    """The reviewer's cases: a Hub 404 for assets/nothing said "… no such Hugging Face Hub repo exists (or it is
    private: pass token=); assets/ is a folder here: is assets/nothing a mistyped local folder?." (a library
    user's advice, a folder of the server, "?."), and a connection error showed urllib3's text. Each is now a
    plain sentence of the app's own."""
    from types import SimpleNamespace

    from huggingface_hub.errors import RepositoryNotFoundError

    monkeypatch.chdir(tmp_path)
    (tmp_path / "assets").mkdir()
    raw = ("HTTPSConnectionPool(host='huggingface.co', port=443): Max retries exceeded (Caused by NewConnectionError("
           "'<urllib3.connection.HTTPSConnection object at 0x7f3a2c1d0>: Failed to establish a new connection'))")
    kept = "Nothing was run with it, and the current model stays in use."
    not_found = SimpleNamespace(headers={}, status_code=404, request=None)  # the response huggingface_hub reads
    for error, message in [
            (RepositoryNotFoundError("404 Client Error", response=not_found),
             "The Hugging Face Hub has no public model assets/nothing: no such repo, or a private or gated one, "
             f"which this server does not load. {kept}"),
            (ConnectionError(raw), "The Hugging Face Hub cannot be reached from this server (no network, or the Hub "
                                   f"did not answer), and assets/nothing is not in its download cache. {kept}")]:
        def download(*args, error=error, **kwargs):
            raise error

        monkeypatch.setattr(roberta.hub, "hf_hub_download", download)
        with pytest.raises(MC.ModelChoiceError) as info:
            MC.ModelChooser(models, allow_local=False).get("mlm", "assets/nothing")
        assert str(info.value) == message


def test_a_model_name_is_never_re_cased(handlers, hf_clf_dir, tmp_path, monkeypatch):
    """The reviewer's case: /fill_mask with model "assets" said "Assets is not a Hugging Face Hub repo id…" (the
    first word of any message was capitalised): a model's name stays as typed, on the page and in the API."""
    monkeypatch.chdir(tmp_path)
    shutil.copytree(hf_clf_dir, tmp_path / "assets")  # a local folder (allowed here) holding a classifier
    with pytest.raises(gr.Error) as info:
        handlers.fill_mask(TEXT, 3, "", "assets")
    assert info.value.message.startswith("assets is a text classifier (sentiment; "), info.value.message


def test_a_local_path_is_named_as_typed_in_its_error(models, tmp_path):
    """With local folders allowed, /dev/zero was "zero is a file" and /proc/self "self has no config.json" (the
    server's paths cut to their last part) while /etc stayed "/etc": a path the user typed is now named as typed,
    and so are the files in it; other paths (a download cache's) still by their last part."""
    chooser = MC.ModelChooser(models, allow_local=True)
    (tmp_path / "a-file").write_text("not a model")
    (tmp_path / "empty").mkdir()
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "config.json").write_text("{not json")
    for name, said in [("a-file", "{0} is a file, not a model folder"), ("empty", "{0} has no config.json"),
                       ("broken", "{0}/config.json: not valid JSON")]:
        typed = str(tmp_path / name)
        assert f"Could not load {typed}: {said.format(typed)}" in chooser.choose("mlm", typed)[2]
    assert without_paths("/home/someone/.cache/hub/config.json: bad", "/etc") == "config.json: bad"


def test_a_windows_path_is_kept_out_of_a_message_too():
    r"""On a Windows server a message kept the download cache's whole path (C:\Users\ana\.cache\huggingface\...),
    with either separator: only a /-rooted path was shortened. A Windows path is now named by its last part, except
    the folder a user typed, named as typed whichever separator they used."""
    cache = r"C:\Users\ana\.cache\huggingface\hub\models--a--b\snapshots\123\config.json"
    for path in (cache, cache.replace("\\", "/"), r"D:\models/mine\config.json"):
        assert without_paths(f"{path}: not valid JSON") == "config.json: not valid JSON", path
        assert without_paths(f"Could not load '{path}'") == "Could not load 'config.json'", path
    assert (without_paths(r"C:\models\mine\config.json: not valid JSON", "C:/models/mine/")
            == "C:/models/mine\\config.json: not valid JSON")
    assert without_paths(r"C:\models\mine is a file", "C:\\models\\mine") == r"C:\models\mine is a file"
    assert without_paths(r"C:\models\other\config.json: bad", r"C:\models\mine") == "config.json: bad"
    assert without_paths("see https://huggingface.co/a/b/c") == "see https://huggingface.co/a/b/c"  # not a path


def test_wrong_architecture_is_refused_by_name(models, hf_mlm_dir, hf_clf_dir, handlers):
    """The refusal says what the model is, what the tab needs and, before what stays as it was, where the model does
    load (it said only what it was not); each kind with its class in one parenthesis (it read "a text classifier
    (sentiment) (RobertaForSequenceClassification)")."""
    chooser = MC.ModelChooser(models, allow_local=True)
    _, current, status = chooser.choose("sentiment", str(hf_mlm_dir))
    assert current == MC.SHIPPED and "a masked language model (fill mask; RobertaForMaskedLM)" in status
    assert ("needs a text classifier (sentiment; RobertaForSequenceClassification). It loads in the Fill mask and "
            "Attention tabs. Nothing was run with it, and the current model stays in use.") in status
    with pytest.raises(gr.Error, match=r"is a text classifier \(sentiment; RobertaForSequenceClassification\); the "
                                       r"Fill mask tab needs a masked language model \(fill mask; "
                                       r"RobertaForMaskedLM\)\. It loads in the Sentiment and Attention tabs\. "
                                       "Nothing was run"):
        handlers.fill_mask(TEXT, 3, "", str(hf_clf_dir))
    with pytest.raises(gr.Error, match=r"the comparison needs a masked language model \(fill mask; "
                                       r"RobertaForMaskedLM\)\. It loads in the Sentiment and Attention tabs\. "
                                       "The comparison was not run") as error:
        handlers.fill_mask_compare(TEXT, 3, "", MC.SHIPPED, str(hf_clf_dir))
    assert ") (" not in error.value.message  # the reviewer's case: "(sentiment) (RobertaForSequenceClassification)"


def test_a_bare_encoder_is_refused_in_the_apps_words(models, tmp_path, tokenizer, handlers):
    """`transformers`' RobertaModel (no head) in a model box was refused with the library's advice
    ("this package loads ...; ... RobertaForSequenceClassification.from_pretrained_encoder('X')"): the visitor is
    told what each tab needs and how to make a classifier of it, in the app's words, wherever it is chosen."""
    folder = str(_save_hf(tmp_path / "bare", transformers.RobertaModel(_hf_config(tokenizer)), tokenizer))
    assert json.loads((tmp_path / "bare" / "config.json").read_text())["architectures"] == ["RobertaModel"]
    chooser = MC.ModelChooser(models, allow_local=True)
    said = (f"{folder} is an encoder without a head (RobertaModel): the Fill mask tab needs a masked language model "
            f"(fill mask) and the {chooser.tab_names['sentiment']} tab a text classifier (sentiment). Fine-tune it "
            f"into a classifier first (python -m train.finetune --init {folder}).")
    for key in KINDS:
        value, current, status = chooser.choose(key, folder, MC.SHIPPED)
        assert (value, current) == (folder, MC.SHIPPED) and 'class="input-error"' in status
        assert f"{said} {MC.KEPT}" in status, status
        assert "from_pretrained_encoder" not in status and "this package" not in status
    with pytest.raises(MC.ModelChoiceError, match="encoder without a head") as error:
        chooser.get_any(folder)  # the Attention tab, which reads either kind
    assert said in str(error.value) and "from_pretrained_encoder" not in str(error.value)
    with pytest.raises(gr.Error, match="Fine-tune it into a classifier first") as error:
        handlers.fill_mask_compare(TEXT, 3, "", MC.SHIPPED, folder)
    assert "The comparison was not run" in error.value.message
    assert not chooser.loaded()


def test_a_regression_model_is_refused_by_the_sentiment_tab(tmp_path, tokenizer, models):
    """Its output is a number, not label probabilities; a multi-label classifier is served, a sigmoid per label
    (`transformers`' reading of problem_type)."""
    torch.manual_seed(4)
    regression = _save_hf(tmp_path / "regression", transformers.RobertaForSequenceClassification(
        _hf_config(tokenizer, num_labels=1, problem_type="regression")), tokenizer)
    with pytest.raises(MC.ModelChoiceError, match="is a regression model: it gives a number, not the probability"):
        MC.load_choice("sentiment", str(regression), allow_local=True)
    multi = _save_hf(tmp_path / "multi", transformers.RobertaForSequenceClassification(
        _hf_config(tokenizer, num_labels=3, problem_type="multi_label_classification")), tokenizer)
    scores = MC.load_choice("sentiment", str(multi), allow_local=True).pipeline("a good film")
    assert len(scores) == 3 and sum(r["score"] for r in scores) != pytest.approx(1.0)


def test_a_one_label_classifier_is_served_with_a_sigmoid_and_its_words_push_its_one_logit(tmp_path, tokenizer,
                                                                                           handlers):
    """A one-output classifier as `transformers` saves it (num_labels=1, no problem_type) is no regression to the
    app: served with a sigmoid, as `transformers`' pipeline serves it (`roberta.pipelines.score_kind`). Its words'
    pushes are integrated gradients of its one logit (`explain.class_score`: there are no other logits to subtract),
    which add up to how far that logit moves from the all-<pad> input; the baseline said is that input's sigmoid.
    There is no other label for a minus to push towards: pink words push away from its one label."""
    torch.manual_seed(5)
    folder = _save_hf(tmp_path / "one-label", transformers.RobertaForSequenceClassification(
        _hf_config(tokenizer, num_labels=1, initializer_range=0.2)), tokenizer)
    assert "problem_type" not in json.loads((folder / "config.json").read_text(encoding="utf-8"))
    text = "the cat likes good music."
    hf = transformers.RobertaForSequenceClassification.from_pretrained(folder).eval()
    with torch.no_grad():
        logit = float(hf(torch.tensor([tokenizer.encode(text).ids])).logits[0, 0])
    label, words, explanation = handlers.classify(text, str(folder))
    assert label == {"LABEL_0": pytest.approx(float(torch.sigmoid(torch.tensor(logit))), abs=1e-5)}
    pushes = [score for _, score in words if score is not None]
    assert len(pushes) == 5 and all(np.isfinite(pushes)) and max(map(abs, pushes)) == 1.0
    loaded = MC.load_choice("sentiment", str(folder), allow_local=True)
    ids = tokenize(tokenizer, text, loaded.pipeline.max_length).ids
    attributions, fx, fbase = explain.integrated_gradients(loaded.model, ids, 0, tokenizer.token_to_id("<pad>"),
                                                           special_ids(tokenizer))
    assert fx == pytest.approx(logit, abs=1e-4) and abs(fx - fbase) > 0.1  # the logit itself, not one less another
    assert attributions.sum() == pytest.approx(fx - fbase, rel=1e-2)
    baseline = format_probability(float(torch.sigmoid(torch.tensor(fbase))))
    assert f"which this model already scores {baseline} LABEL\\_0." in explanation
    config = loaded.model.config
    assert "other label" not in explanation + explain.words_label(config) + explain.tab_hint(config)
    assert "words push away from **LABEL\\_0**, whatever the model answers" in explanation
    assert "most away from *LABEL\\_0*:" in explanation
    assert explain.words_label(config) == "Which words push towards LABEL_0 (green) or away from LABEL_0 (pink)"
    assert "which words push towards LABEL\\_0 and which away from LABEL\\_0," in explain.tab_hint(config)


def test_handlers_refuse_a_bad_choice_plainly(handlers, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(gr.Error, match="cannot be reached"):
        handlers.classify("good", "someone/no-such-roberta")
    assert set(handlers.classify("good")[0]) == {"negative", "positive"}  # the shipped one still answers
    for name in ("mlm", " Sentiment "):  # the Attention tab's names, sent to another tab: said so, no Hub lookup
        with pytest.raises(gr.Error, match=f"“{name.strip()}” is not a Hub repo id: for the shipped model, pick “ours"):
            handlers.classify("good", name)


def test_a_repo_without_tokenizer_json_reads_with_roberta_bases(tmp_path_factory, tokenizer, tiny_mlm_dir,
                                                                monkeypatch, models):
    """Older Hub classifiers (vocab.json + merges.txt) share roberta-base's vocabulary: its tokenizer.json."""
    torch.manual_seed(3)
    folder = _save_hf(tmp_path_factory.mktemp("hf-old"),
                      transformers.RobertaForSequenceClassification(_hf_config(tokenizer, num_labels=2)), tokenizer,
                      with_tokenizer=False)
    monkeypatch.setattr(MC, "FALLBACK_TOKENIZER", str(tiny_mlm_dir))  # stands in for FacebookAI/roberta-base
    loaded = MC.load_choice("sentiment", str(folder), allow_local=True)
    assert loaded.extras["tokenizer_from"] == str(tiny_mlm_dir)
    assert "the repo has no tokenizer.json" in MC.describe(loaded)
    other = tmp_path_factory.mktemp("small-vocab")
    roberta.train_tokenizer(["a b c d e"] * 5, vocab_size=270, min_frequency=1, show_progress=False).save(
        str(other / "tokenizer.json"))
    monkeypatch.setattr(MC, "FALLBACK_TOKENIZER", str(other))
    with pytest.raises(MC.ModelChoiceError, match="has no tokenizer.json, and its vocabulary"):
        MC.load_choice("sentiment", str(folder), allow_local=True)


@pytest.mark.skipif(not all((kind.default / "config.json").is_file() for kind in KINDS.values()),
                    reason="no shipped models")
@pytest.mark.parametrize("key", list(KINDS))
def test_each_kind_of_model_is_described_as_loading_finds_it(key, tiny_mlm_dir, tiny_clf_dir, monkeypatch):
    """KINDS[key] says where the shipped model is, which variable replaces it, which pipeline and class read it
    and which Hub models its box offers: each as the loaders and the server's checks find it."""
    kind = KINDS[key]
    monkeypatch.delenv(kind.env_var, raising=False)
    shipped = load_model(key)
    assert shipped.available and shipped.source == str(kind.default) and shipped.title == kind.title
    assert roberta.checkpoint.read_architecture(kind.default) == kind.architecture
    assert type(shipped.model) is kind.cls and isinstance(shipped.pipeline, roberta.pipelines.TASKS[kind.task])
    assert MC.architecture_key(str(kind.default), allow_local=True) == key  # a chosen folder is read as its kind
    replacement = str({"mlm": tiny_mlm_dir, "sentiment": tiny_clf_dir}[key])
    monkeypatch.setenv(kind.env_var, replacement)
    assert load_model(key).source == replacement
    other_kinds = {repo for other in KINDS.values() if other is not kind for repo in other.suggested}
    for repo in kind.suggested:  # a Hub id offered by one tab only (a checkpoint has one class), and served
        assert repo not in other_kinds
        assert MC._check_choice(repo, allow_local=False, hub_mode="suggested") == repo


def test_choices_offer_the_shipped_model_first():
    assert MC.choices("mlm")[0] == (MC.KINDS["mlm"].shipped_label, MC.SHIPPED)
    assert "FacebookAI/roberta-base" in [value for _, value in MC.choices("mlm")]
    assert all("/" in value for _, value in MC.choices("sentiment")[1:])


@pytest.mark.parametrize("mode, choice, allowed", [
    ("suggested", "FacebookAI/roberta-base", True), ("suggested", "someone/big-model", False),
    ("off", "FacebookAI/roberta-base", False), ("any", "someone/big-model", True)])
def test_hub_models_can_be_limited_by_the_server(models, monkeypatch, mode, choice, allowed):
    """APP_HUB_MODELS: a public server decides which Hub models a visitor can make it download and hold."""
    monkeypatch.setattr(MC, "load_choice", lambda key, source, *_: models[key])
    monkeypatch.setenv(MC.HUB_ENV, mode)
    chooser = MC.ModelChooser(models)
    value, current, status = chooser.choose("mlm", choice)
    if allowed:
        assert current == choice and "model-status" in status
    else:
        assert current == MC.SHIPPED and f"{MC.HUB_ENV}={mode}" in status and "input-error" in status
    offered = [value for _, value in MC.choices("mlm")]
    assert offered == ([MC.SHIPPED] if mode == "off" else [MC.SHIPPED, "FacebookAI/roberta-base"])
    assert ("only its own models" in MC.hub_note()) == (mode == "off")  # the box's note says what it offers
    assert ("only the suggested ones" in MC.hub_note()) == (mode == "suggested")
    assert chooser.get("mlm", MC.SHIPPED) is models.mlm  # the shipped models always answer
    for offline in (True, False):  # offline, a Hub model loads only from the download cache: the note says so
        monkeypatch.setattr(MC, "hub_offline", lambda: offline)
        assert ("already in this machine's download cache" in MC.hub_note()) == (offline and mode != "off")


@pytest.mark.slow  # starts the app
def test_the_screenshots_show_the_model_box_hint_of_an_online_server(tiny_mlm_dir, tiny_clf_dir, tmp_path,
                                                                     monkeypatch):
    """The README's and the Space card's pictures showed "Offline now (HF_HUB_OFFLINE): ...", the state of the
    machine that took them, which no visitor of an online Space reads: the screenshots' app is started online."""
    from scripts import screenshots

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    monkeypatch.setenv("MLM_MODEL", str(tiny_mlm_dir))
    monkeypatch.setenv("SENTIMENT_MODEL", str(tiny_clf_dir))
    monkeypatch.setattr(screenshots, "CHROMIUM", __file__)  # any existing file: the page is read without a browser
    pages = []

    def read_the_page(url, out, browser=None):  # what the browser would render: the page's components
        with urllib.request.urlopen(url + "config", timeout=30) as response:
            pages.append(response.read().decode())
        return []

    monkeypatch.setattr(screenshots, "take", read_the_page)
    assert screenshots.main(["--out", str(tmp_path / "shots")]) == 0
    hint = MC.hub_note()
    assert hint.count("Offline now") == 1  # this test's own process is offline
    online_hint = hint[:hint.index(" Offline now")]
    assert json.dumps(online_hint)[1:-1] in pages[0] and "Offline now" not in pages[0]


def test_an_unknown_hub_mode_is_refused_at_start_up(monkeypatch):
    monkeypatch.setenv(MC.HUB_ENV, "some")
    with pytest.raises(ValueError, match="APP_HUB_MODELS must be one of any, suggested, off"):
        MC.hub_models_mode()


def test_the_lock_table_does_not_grow_with_each_model_tried(models, monkeypatch):
    """One lock per model while it loads, dropped after: a visitor trying many ids leaves nothing behind."""
    def fail(key, source, *_):
        raise MC.ModelChoiceError("no such model")

    monkeypatch.setattr(MC, "load_choice", fail)
    chooser = MC.ModelChooser(models)
    for i in range(20):
        chooser.choose("mlm", f"someone/model-{i}")
    monkeypatch.setattr(MC, "load_choice", lambda key, source, *_: models[key])
    chooser.get("mlm", "someone/works")
    assert chooser._locks == {} and len(chooser.loaded()) == 1


# ----- a public server: what a visitor's model choice may cost it -----
@pytest.mark.parametrize("field, value", [("max_position_embeddings", 20_002), ("vocab_size", 1_000_000),
                                          ("num_hidden_layers", 25), ("hidden_size", 2048),
                                          ("num_attention_heads", 32)])
def test_a_model_larger_than_the_app_serves_is_refused_before_its_weights(tmp_path, tiny_mlm_dir, monkeypatch,
                                                                          field, value):
    """A few-MB repo must not get a 20,000-token window, a million-word vocabulary or 128 heads (each head's
    (T, T) attention map is computed and kept): its config is checked
    against LIMITS (roberta-large's shape; a vocabulary of 100,000, which is not roberta-large's, said without its
    name) before the tokenizer or the weights are read."""
    import json
    import shutil

    folder = tmp_path / "big"
    shutil.copytree(tiny_mlm_dir, folder)
    config = json.loads((folder / "config.json").read_text())
    config[field] = value
    (folder / "config.json").write_text(json.dumps(config))
    monkeypatch.setattr(roberta.RobertaForMaskedLM, "from_pretrained",
                        classmethod(lambda cls, *a, **k: pytest.fail("the weights were read")))
    monkeypatch.setattr(MC.roberta, "load_tokenizer", lambda *a, **k: pytest.fail("the tokenizer was read"))
    whose = "" if field == "vocab_size" else ": roberta-large's"
    with pytest.raises(MC.ModelChoiceError, match=f"larger than this app serves .{field} {value:,}, at most "
                                                  f"{MC.LIMITS[field]:,}{whose}.") as refused:
        MC.load_choice("mlm", str(folder), allow_local=True)
    assert str(refused.value).startswith(f"{folder} is larger than this app serves")  # named as the user typed it


def test_hub_files_are_fetched_without_the_servers_token(models, tiny_mlm_dir, monkeypatch):
    """A visitor's model never borrows the server's HF_TOKEN (a Space's secret): token=False on every file it
    fetches (config, tokenizer, weights), in the tabs and in the attention tab's either-kind loading."""
    calls = []

    def download(repo_id, filename, **kwargs):  # the tiny model's files stand in for the repo's
        calls.append((filename, kwargs.get("token", "the server's")))
        path = tiny_mlm_dir / filename
        if not path.is_file():
            from huggingface_hub.errors import EntryNotFoundError
            raise EntryNotFoundError(filename)
        return str(path)

    monkeypatch.setattr(roberta.hub, "hf_hub_download", download)
    monkeypatch.setenv("HF_TOKEN", "hf_secret_of_the_owner")
    chooser = MC.ModelChooser(models)
    assert chooser.get("mlm", "owner/some-model").available
    assert chooser.get_any("owner/another-model").available
    fetched = {filename for filename, _ in calls}
    assert {"config.json", "tokenizer.json", "model.safetensors"} <= fetched
    assert all(token is False for _, token in calls), calls


SST2_HUB_ID = "textattack/roberta-base-SST-2"  # a suggested sentiment classifier, labels LABEL_0 and LABEL_1


@pytest.fixture
def hub_of_label_0_1(hf_clf_dir, monkeypatch):
    """Every Hub repo stood in for by the tiny classifier of labels LABEL_0 / LABEL_1 (`hf_clf_dir`), as
    textattack/roberta-base-SST-2 names its labels in its config.json."""
    from huggingface_hub.errors import EntryNotFoundError

    def download(repo_id, filename, **kwargs):
        path = hf_clf_dir / filename
        if not path.is_file():
            raise EntryNotFoundError(filename)
        return str(path)

    monkeypatch.setattr(roberta.hub, "hf_hub_download", download)


def test_the_suggested_sst2_classifier_is_chosen_as_a_sentiment_classifier(models, hf_clf_dir, hub_of_label_0_1,
                                                                          tokenizer):
    """Choosing the suggested textattack/roberta-base-SST-2, whose config.json names its labels LABEL_0 and LABEL_1,
    renamed the Sentiment tab "Classify" and its answers "LABEL_1": its labels are read as its model card gives
    them, negative and positive (SST-2's order), for the answer, the tab, the words box and What if?. The same
    files under another repo id, or as a local folder, keep their own labels."""
    assert SST2_HUB_ID in KINDS["sentiment"].suggested
    handlers = Handlers(models, MC.ModelChooser(models, allow_local=True))
    text = "the cat likes good music."
    answer, words, _, hint, tab = handlers.classify_page(text, SST2_HUB_ID)
    expected, _ = _hf_probabilities(hf_clf_dir, tokenizer, text, transformers.RobertaForSequenceClassification)
    assert answer["value"]["negative"] == pytest.approx(float(expected[0]), abs=1e-5)  # LABEL_0 is negative
    assert answer["value"]["positive"] == pytest.approx(float(expected[1]), abs=1e-5)
    assert (tab["label"], answer["label"]) == ("Sentiment", "Sentiment")
    assert words["label"] == "Which words push towards positive (green) or negative (pink)"
    assert "the negation" in hint
    _, data = handlers.counterfactual(text, SST2_HUB_ID)
    assert data["attribution_label"] == "positive" and data["towards"] in ("negative", "positive")
    assert "labels negative, positive" in handlers.chooser.choose("sentiment", SST2_HUB_ID)[2]  # the model box
    for other in ("owner/sst2-copy", str(hf_clf_dir)):  # not the suggested repo: its own labels
        answer, *_, tab = handlers.classify_page(text, other)
        assert set(answer["value"]) == {"LABEL_0", "LABEL_1"} and tab["label"] == "Classify"


def test_the_suggested_sst2_classifier_served_opens_as_the_sentiment_tab(models, hub_of_label_0_1):
    """SENTIMENT_MODEL=textattack/roberta-base-SST-2 opened the tab as "Classify", on an empty text, with a "text
    classifier (labels LABEL_0 and LABEL_1)" header: served, it is named by its model card's labels too."""
    loaded = load_model("sentiment", SST2_HUB_ID)
    assert loaded.available and explain.label_names(loaded.config) == ["negative", "positive"]
    served = app_models.Models(models.mlm, loaded)
    assert served.tab_name("sentiment") == "Sentiment"
    assert explain.opening_text(loaded.config) == SENTIMENT_EXAMPLES[0]
    assert loaded.title == KINDS["sentiment"].title  # SST-2's two labels, no metrics.json: SST-2's classifier
    assert loaded.pipeline("a good film")[0]["label"] in ("negative", "positive")
    assert explain.label_names(load_model("sentiment", "owner/sst2-copy").config) == ["LABEL_0", "LABEL_1"]


def test_a_failed_model_is_refused_at_once_for_a_while(models, monkeypatch):
    """Every retry of a broken or unreachable repo would cost a download (or the Hub's retries): for
    FAILED_TTL_S the same message answers at once, then it can be tried again."""
    calls, now = [], [1000.0]

    def fail(key, source, *_):
        calls.append(source)
        raise MC.ModelChoiceError(f"Could not load {source}.")

    monkeypatch.setattr(MC, "load_choice", fail)
    monkeypatch.setattr(MC.time, "monotonic", lambda: now[0])
    chooser = MC.ModelChooser(models)
    for _ in range(3):
        with pytest.raises(MC.ModelChoiceError, match="Could not load owner/broken"):
            chooser.get("mlm", "owner/broken")
    assert calls == ["owner/broken"]
    now[0] += MC.FAILED_TTL_S + 1
    with pytest.raises(MC.ModelChoiceError):
        chooser.get("mlm", "owner/broken")
    assert calls == ["owner/broken"] * 2
    for i in range(MC.MAX_FAILED + 10):  # many ids tried: the table of failures stays bounded
        with pytest.raises(MC.ModelChoiceError):
            chooser.get("mlm", f"owner/m{i}")
    assert len(chooser._failed) == MC.MAX_FAILED
    # the attention tab reads the config first (which kind of model): a failure there is remembered too
    reads = []

    def unreadable(source, *_):
        reads.append(source)
        raise MC.ModelChoiceError(f"Could not read {source}'s config.")

    monkeypatch.setattr(MC, "architecture_key", unreadable)
    for _ in range(3):
        with pytest.raises(MC.ModelChoiceError, match="Could not read owner/unreadable's config"):
            chooser.get_any("owner/unreadable")
    assert reads == ["owner/unreadable"]
    # each refusal is a new error: a re-raised one would keep every request's frames (and its text)
    first, second = (pytest.raises(MC.ModelChoiceError), pytest.raises(MC.ModelChoiceError))
    with first as one:
        chooser.get_any("owner/unreadable")
    with second as two:
        chooser.get_any("owner/unreadable")
    assert one.value is not two.value


def test_error_messages_do_not_show_server_paths(models, tmp_path):
    """A broken file's message names the file, not where it lies on the server (a download cache, a folder)."""
    folder = tmp_path / "deep" / "inside" / "broken"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{not json")
    chooser = MC.ModelChooser(models, allow_local=True)
    _, _, status = chooser.choose("mlm", str(folder))
    assert "config.json" in status and "not valid JSON" in status
    assert str(tmp_path) not in status.replace(str(folder), "")  # the choice itself is the visitor's own text


def test_a_start_up_model_that_cannot_load_is_named_as_typed_on_the_console_only(tmp_path, caplog):
    """MLM_MODEL=/data/runs/mlm that did not exist was "the folder mlm does not exist" on the operator's own console
    too: the console names the folder as they typed it, files in it included; the page still by its name alone."""
    missing, broken = tmp_path / "runs" / "mlm", tmp_path / "runs" / "broken"
    broken.mkdir(parents=True)
    (broken / "config.json").write_text("{not json")
    for folder, page_reason, console_reason in [
            (missing, "the folder mlm does not exist", f"the folder {missing} does not exist"),
            (broken, "broken holds a damaged or mismatched file (broken/config.json: not valid JSON",
             f"{broken} holds a damaged or mismatched file ({broken}/config.json: not valid JSON")]:
        with caplog.at_level("WARNING", logger="demo.models"):
            caplog.clear()
            loaded = load_model("mlm", folder)
        assert not loaded.available and page_reason in loaded.error and str(tmp_path) not in loaded.error
        assert console_reason in loaded.console_error and caplog.messages == [loaded.console_error]


def test_a_start_up_folder_with_spaces_and_accents_shows_no_server_path(tmp_path, tiny_mlm_dir, monkeypatch):
    """A path stopped at a space in the pattern of a path: the page read "dir with spaces/modèle ü/mlm trunc/
    model.safetensors" (only the part before the first space was cut), the console the same in place of the
    folder as typed. The folder is now replaced as written, typed, with ~ expanded or resolved."""
    folder = tmp_path / "dir with spaces" / "modèle ü 日本" / "mlm trunc"
    shutil.copytree(tiny_mlm_dir, folder)
    data = (folder / "model.safetensors").read_bytes()
    (folder / "model.safetensors").write_bytes(data[:len(data) // 2])
    loaded = load_model("mlm", folder)
    assert "(mlm trunc/model.safetensors: not a readable safetensors file" in loaded.error
    assert "dir with spaces" not in loaded.error and "modèle" not in loaded.error
    assert f"({folder}/model.safetensors: not a readable" in loaded.console_error
    monkeypatch.chdir(tmp_path)
    typed = str(folder.relative_to(tmp_path))  # a relative folder, which a loader may name resolved
    message = f"{folder}/config.json: bad; see /srv/data/x.json"
    assert without_paths(message, typed) == f"{typed}/config.json: bad; see x.json"
    assert without_paths(message, typed, shown="mlm trunc") == "mlm trunc/config.json: bad; see x.json"
    assert without_paths("/srv/mlm2/x.json: bad", "/srv/mlm") == "x.json: bad"  # a longer name is another folder


def test_a_start_up_model_that_cannot_load_says_what_to_do_about_it(tiny_mlm_dir, tiny_clf_dir, tmp_path,
                                                                     monkeypatch):
    """Every failure was "X is not a complete model folder (...). Train it (see the README) or set ...": a complete
    classifier's folder in MLM_MODEL (with a library user's advice, pipeline('text-classification', ...)), a
    damaged file, the weights file in place of its folder. Now: the other kind is said to go in the other
    variable, a damaged file to be copied again, a file to be replaced by its folder; "not a complete model folder"
    and "Train it" are kept for a missing file."""
    monkeypatch.chdir(tmp_path)
    damaged = shutil.copytree(tiny_mlm_dir, tmp_path / "damaged")
    (damaged / "tokenizer.json").write_text("{")
    incomplete = shutil.copytree(tiny_mlm_dir, tmp_path / "incomplete")
    (incomplete / "tokenizer.json").unlink()
    for key, folder, reason, todo in [
            ("mlm", tiny_clf_dir, f"{tiny_clf_dir.name} is a classifier (RobertaForSequenceClassification), not a "
             "masked language model (fill mask): it goes in SENTIMENT_MODEL.",
             "Set MLM_MODEL to a folder or Hugging Face Hub repo id of that kind"),
            ("sentiment", tiny_mlm_dir, f"{tiny_mlm_dir.name} is a masked-LM model (RobertaForMaskedLM), not a text "
             "classifier (sentiment): it goes in MLM_MODEL.", "Set SENTIMENT_MODEL to a folder"),
            ("mlm", damaged, "damaged holds a damaged or mismatched file (damaged/tokenizer.json: not a readable "
             "tokenizer.json", "Copy or download it again, or set MLM_MODEL"),
            ("mlm", incomplete / "model.safetensors", "model.safetensors is a file, not a model folder.",
             "Set MLM_MODEL to the folder that holds it"),
            ("mlm", incomplete, "incomplete is not a complete model folder (incomplete has no tokenizer.json)",
             "Train it (see the README) or set MLM_MODEL")]:
        error = load_model(key, folder).error
        assert reason in error and f"{todo}" in error and "pipeline(" not in error, error
        assert ("Train it" in error) == (folder == incomplete), error


def test_the_model_box_applies_the_pipelines_rule_of_tokenizer_and_model(models, tiny_config, tiny_mlm_dir,
                                                                         tmp_path):
    """A tokenizer of 300 tokens beside a model of 32,768 was accepted ("13.3M parameters ...") while only a larger
    one was refused; the box applies the pipelines' one rule (`roberta.tokenizer.check_fits_model`), before the
    weights are read: a tokenizer with more tokens than the model has rows is refused, and rows no token reaches
    (a vocabulary size set by hand) load, with the rule's TokenizerFitWarning."""
    import dataclasses

    from roberta.tokenizer import TokenizerFitWarning

    tokens = roberta.load_tokenizer(tiny_mlm_dir).get_vocab_size()
    chooser = MC.ModelChooser(models, allow_local=True)
    for rows in (100, 32_768):
        folder = tmp_path / f"rows{rows}"
        roberta.RobertaForMaskedLM(dataclasses.replace(tiny_config, vocab_size=rows)).save_pretrained(folder)
        shutil.copy(tiny_mlm_dir / "tokenizer.json", folder / "tokenizer.json")
        with pytest.warns(TokenizerFitWarning) if rows > tokens else contextlib.nullcontext() as caught:
            _, current, status = chooser.choose("mlm", str(folder))
        if rows < tokens:
            assert current == MC.SHIPPED
            assert (f"Could not load {folder}: {folder}'s tokenizer has {tokens:,} tokens but the model only 100: "
                    "they do not belong together") in status
        else:
            assert current == str(folder) and "could not" not in status.lower(), status
            assert (f"{folder}'s tokenizer has {tokens:,} tokens but the model 32,768 embedding rows"
                    in str(caught[0].message))


def test_the_model_box_shows_the_visitor_what_the_tokenizer_rule_warns_about(models, tiny_config, tiny_mlm_dir,
                                                                           tmp_path):
    """A model of 32,768 rows beside a smaller tokenizer loads with a TokenizerFitWarning, which reached only the
    server's log (twice: the box's check, then the pipeline's); the visitor saw a model that loaded like any other,
    and then its answers. The warning is now a note in the box's status line (escaped as HTML), and the log gets it
    once."""
    import dataclasses
    import html

    from roberta.tokenizer import TokenizerFitWarning

    tokens = roberta.load_tokenizer(tiny_mlm_dir).get_vocab_size()
    folder = tmp_path / "rows & more"  # a name to escape
    roberta.RobertaForMaskedLM(dataclasses.replace(tiny_config, vocab_size=32_768)).save_pretrained(folder)
    shutil.copy(tiny_mlm_dir / "tokenizer.json", folder / "tokenizer.json")
    with pytest.warns(TokenizerFitWarning) as caught:
        _, current, status = MC.ModelChooser(models, allow_local=True).choose("mlm", str(folder))
    assert current == str(folder), status
    note = (f"{folder}'s tokenizer has {tokens:,} tokens but the model 32,768 embedding rows: the last "
            f"{32_768 - tokens:,} rows are no token's. Harmless when the vocabulary size was set by hand; if the model "
            "answers nonsense, the tokenizer is another model's")
    assert [str(w.message) for w in caught if issubclass(w.category, TokenizerFitWarning)] == [note]
    assert f"<br>Note: {html.escape(note, quote=False)}.</div>" in status and "&amp; more" in status, status
    assert status.count("Note: ") == 1
    # the same folder as the server's model (MLM_MODEL): the same note, where the box describes it, naming the
    # folder as the page names a served one (`shown_source`: its name), not by the server's path
    from demo.models import load_model

    with pytest.warns(TokenizerFitWarning) as caught:
        shipped = load_model("mlm", folder)
    served_note = note.replace(str(folder), folder.name)
    assert f"<br>Note: {html.escape(served_note, quote=False)}." in MC.describe(shipped)
    assert str(tmp_path) not in MC.describe(shipped)
    assert len([w for w in caught if issubclass(w.category, TokenizerFitWarning)]) == 1  # the log's, once


def test_a_space_offers_only_the_suggested_hub_models_by_default(monkeypatch):
    monkeypatch.delenv(MC.HUB_ENV, raising=False)
    monkeypatch.delenv("SPACE_ID", raising=False)
    assert MC.hub_models_mode() == "any"
    monkeypatch.setenv("SPACE_ID", "someone/roberta-from-scratch")
    assert MC.hub_models_mode() == "suggested"
    monkeypatch.setenv(MC.HUB_ENV, "any")  # the Space's owner can still open it
    assert MC.hub_models_mode() == "any"


def test_compare_puts_two_models_side_by_side(handlers, hf_mlm_dir):
    """The Fill mask tab's comparison: the same input through the tab's model and another, each column the
    predictions view of a model alone, a line per mask naming each model's top answer."""
    other = str(hf_mlm_dir)
    view, data = handlers.fill_mask_compare(TEXT, 3, "", MC.SHIPPED, other)
    ours, theirs = handlers.fill_mask(TEXT, 3)[-2], handlers.fill_mask(TEXT, 3, "", other)[-2]
    assert [column["model"] for column in data] == ["ours (shipped)", other]
    assert [column["predictions"] for column in data] == [ours, theirs]
    assert view.count('<section aria-label=') == 2 and view.count('class="fm-mask"') == 2
    # one heading level per layer of the page: a model's name (h3) over its masks and tokens (h4)
    assert view.count("<h2") == 2 and view.count("<h3>") == 4
    alone = handlers.fill_mask(TEXT, 3)[-1]
    assert alone.count("<h2>") == 2 and "<h3>" not in alone
    top = word_label(theirs[0][0]["token_str"])  # as the view names it: "⟨U+0017⟩" for a control character
    assert f"{other} “{top}”" in view
    # the other way round: a tab that runs the Hub model compares it with ours; candidates as in the tab
    _, data = handlers.fill_mask_compare("The <mask> sat on the <mask>.", 5, "cat, mat", other, MC.SHIPPED)
    assert [column["model"] for column in data] == [other, "ours (shipped)"]
    assert all(len(column["predictions"]) == 2 and column["predictions"][0][0].get("candidates")
               for column in data)
    for model, choice in [(MC.SHIPPED, MC.SHIPPED), (other, f" {other} ")]:
        with pytest.raises(gr.Error, match="Choose a model to compare with other than the one this tab runs"):
            handlers.fill_mask_compare(TEXT, 3, "", model, choice)
    with pytest.raises(gr.Error, match="write &lt;mask&gt;"):
        handlers.fill_mask_compare("no mask here", 3, "", MC.SHIPPED, other)


@pytest.mark.parametrize("model", [MC.SHIPPED, "someone/roberta"])
@pytest.mark.parametrize("other", [None, "", "  "])
def test_compare_with_no_model_chosen_says_so(handlers, model, other):
    """The reviewer's case: /fill_mask_compare("a <mask>", 5, "", "shipped", None) answered "Choose a model to
    compare with other than the one this tab runs." when none was chosen: an empty choice is no choice (not the
    shipped model, whatever the tab runs), and the message says so."""
    with pytest.raises(gr.Error) as error:
        handlers.fill_mask_compare("a <mask>", 5, "", model, other)
    assert error.value.message == "No model to compare with was chosen: choose one in “Compare with”."
    assert "API" not in error.value.message  # the page's words (the API's name for it, `other`, was in them)


def test_compare_offers_the_models_a_visitor_may_choose(models, monkeypatch, hf_mlm_dir):
    monkeypatch.delenv(MC.LOCAL_ENV, raising=False)
    for mode, offered in [("any", ["FacebookAI/roberta-base", MC.SHIPPED]),
                          ("suggested", ["FacebookAI/roberta-base", MC.SHIPPED]), ("off", [])]:
        monkeypatch.setenv(MC.HUB_ENV, mode)
        assert [value for _, value in MC.compare_choices()] == offered
    monkeypatch.setenv(MC.LOCAL_ENV, "1")  # Hub models off, local folders allowed: a folder can be typed in
    assert [value for _, value in MC.compare_choices()] == [MC.SHIPPED]
    # the model the tab runs is not offered (compared with itself, it would only be refused)
    monkeypatch.setenv(MC.HUB_ENV, "any")
    assert [value for _, value in MC.compare_choices(MC.SHIPPED)] == ["FacebookAI/roberta-base"]
    assert [value for _, value in MC.compare_choices(" FacebookAI/roberta-base ")] == [MC.SHIPPED]
    assert MC.same_model(None, " shipped ") and not MC.same_model(MC.SHIPPED, "FacebookAI/roberta-base")
    monkeypatch.setenv(MC.HUB_ENV, "off")
    chooser = MC.ModelChooser(models, allow_local=True)
    assert chooser.is_loaded("mlm", MC.SHIPPED) and chooser.is_loaded("mlm", "not a repo id!")  # nothing to load
    assert not chooser.is_loaded("mlm", str(hf_mlm_dir))
    chooser.get("mlm", str(hf_mlm_dir))
    assert chooser.is_loaded("mlm", str(hf_mlm_dir)) and not chooser.is_loaded("sentiment", str(hf_mlm_dir))
    assert "Loading someone/model: from the Hugging Face Hub" in MC.loading_html("someone/model", keeps=False)
    assert "keeps its model" not in MC.loading_html("someone/model", keeps=False)


def test_compare_follows_the_tabs_model_and_names_the_model_that_fails(handlers, hf_mlm_dir, monkeypatch):
    monkeypatch.setenv(MC.HUB_ENV, "any")
    assert MC.default_comparison(MC.SHIPPED) == "FacebookAI/roberta-base"
    assert MC.default_comparison("FacebookAI/roberta-base") == MC.SHIPPED  # the tab runs another: ours
    long_text = "Paris is the capital of <mask>. " + "blah " * 2000
    with pytest.warns(UserWarning, match="longer than the 64 tokens the model reads; only the first 64 tokens"):
        view, _ = handlers.fill_mask_compare(long_text, 3, "", MC.SHIPPED, str(hf_mlm_dir))
    assert view.count("blah") < 150  # the summary shows what the models read (a 64-token window), not all 2,000
    with pytest.raises(gr.Error, match=f"{hf_mlm_dir}: The mask is beyond the first"):  # the model that failed
        handlers.fill_mask_compare("blah " * 400 + "<mask>.", 3, "", str(hf_mlm_dir), MC.SHIPPED)
    # an input that is wrong whatever the model is said once, naming no model
    for args, match in [(("",), "^'The text is empty"), (("no mask here",), "^'There is no mask"),
                        (("a <mask>", 0), "^'Top-k must be"), (("a <mask>", 3, "<s>"), "^'“&lt;s&gt;” is a special")]:
        with pytest.raises(gr.Error, match=match):
            handlers.fill_mask_compare(*args)


def test_a_compare_model_that_fails_says_so_once_and_leaves_the_tab_as_it_was(handlers, hf_clf_dir, monkeypatch):
    """The comparison's errors say that it was not run, true for a page's visitor and an API client alike (it
    said "the predictions above are unchanged": an API client has none above); a model that failed is refused at
    once next time, so the loading note does not flash up for it."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    missing, chooser = "someone/no-such-roberta", handlers.chooser
    assert not chooser.is_loaded("mlm", missing, MC.COMPARISON)
    with pytest.raises(gr.Error) as error:
        handlers.fill_mask_compare(TEXT, 3, "", MC.SHIPPED, missing)
    assert error.value.message.endswith("cannot be reached from this server (HF_HUB_OFFLINE is set), and "
                                        f"{missing} is not in its download cache. The comparison was not run.")
    assert error.value.message.count(missing) == 1  # named by the load's message: not again before it
    assert chooser.is_loaded("mlm", missing, MC.COMPARISON)  # refused at once within FAILED_TTL_S: no loading
    assert not chooser.is_loaded("mlm", missing)  # the tab's own box has not tried it: its message differs
    with pytest.raises(gr.Error, match="needs a masked language model"):
        handlers.fill_mask_compare(TEXT, 3, "", MC.SHIPPED, str(hf_clf_dir))
    assert chooser.is_loaded("mlm", str(hf_clf_dir), MC.COMPARISON)
    assert chooser.is_loaded("any", "sentiment") and not chooser.is_loaded("any", missing, MC.ATTENTION_TAB)


@pytest.mark.parametrize("choice, box", [("  someone/typo-roberta ", "someone/typo-roberta"), (42, MC.SHIPPED),
                                         ("   ", MC.SHIPPED)])
def test_a_refused_choice_stays_in_the_box_unless_it_is_no_text(models, monkeypatch, choice, box):
    """The box used to go back to the tab's model after an error, so a visitor's typed repo id was lost; a value
    that is no text (an API client's) or blank gives the box back the model in use, with no note that repeats it."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    value, current, status = MC.ModelChooser(models).choose("mlm", choice, MC.SHIPPED)
    assert (value, current) == (box, MC.SHIPPED)
    assert ("still runs ours: the shipped fill-mask model" in status) == (box != MC.SHIPPED), status


# ----------------------------------------------------------------------------- a visitor's tokenizer.json
def _with_tokenizer_steps(folder, tmp_path, **steps):
    """A copy of the model folder `folder` whose tokenizer.json has `steps` ("pre_tokenizer": its JSON...)."""
    import json

    copy = shutil.copytree(folder, tmp_path / "copy")
    data = json.loads((copy / "tokenizer.json").read_text(encoding="utf-8"))
    (copy / "tokenizer.json").write_text(json.dumps({**data, **steps}))
    return copy


BYTE_LEVEL = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}


@pytest.mark.parametrize("steps, said", [
    # the reviewer's two: a pattern that held /tokens for minutes, one that made the tokenizers library panic
    ({"pre_tokenizer": {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": "(a|aa)+$"}, "behavior": "Isolated", "invert": False}, BYTE_LEVEL]}},
     "a pre_tokenizer of type Split"),
    ({"normalizer": {"type": "Replace", "pattern": {"Regex": "(a|aa)+b"}, "content": ""}},
     "a Replace normalizer on a regex of its own"),
    ({"normalizer": {"type": "Sequence", "normalizers": [{"type": "Replace", "pattern": {"String": "a"},
                                                          "content": "aa"}] * 3}},
     "a Replace normalizer that lengthens the text"),
    ({"pre_tokenizer": {"type": "Whitespace"}}, "a pre_tokenizer of type Whitespace"),
    ({"pre_tokenizer": None}, "no pre_tokenizer"),
])
def test_a_tokenizer_with_steps_of_its_own_is_refused_before_it_reads_text(handlers, hf_mlm_dir, tmp_path, steps,
                                                                           said):
    """A visitor's tokenizer.json runs on every request: a step RoBERTa's tokenizers do not have (a pattern of
    its own) is refused when the model loads, in plain words, before any text is tokenized."""
    folder = str(_with_tokenizer_steps(hf_mlm_dir, tmp_path, **steps))
    with pytest.raises(gr.Error, match=f"tokenizer has {said}: this app runs only the tokenizers of RoBERTa"):
        handlers.tokens("a" * 40 + "!", folder)  # the text the first pattern panics on, had it been read


def test_roberta_family_tokenizers_are_accepted(handlers, hf_mlm_dir, tmp_path, models, tokenizer,
                                                roberta_base_style_tokenizer_file):
    """RoBERTa's byte-level BPE (the tiny folders', roberta-base's layout, the shipped classifier's lower-casing)
    and the SentencePiece steps of CamemBERT and XLM-R (Unigram, Metaspace, a run of spaces replaced) all load."""
    from tokenizers import Regex, Tokenizer, decoders, normalizers, pre_tokenizers
    from tokenizers import models as tokenizer_models

    for accepted in (models.mlm.tokenizer, models.sentiment.tokenizer,
                     Tokenizer.from_file(str(roberta_base_style_tokenizer_file)),
                     roberta.text.lowercasing(models.mlm.tokenizer)):
        MC.check_tokenizer(accepted, "m", "")
    spm = Tokenizer(tokenizer_models.Unigram([("<unk>", 0.0), ("▁a", -1.0)], 0, False))
    spm.normalizer = normalizers.Sequence([normalizers.Replace("\n", " "), normalizers.Replace(Regex(" {2,}"), "▁")])
    spm.pre_tokenizer = pre_tokenizers.Metaspace()
    spm.decoder = decoders.Metaspace()
    MC.check_tokenizer(spm, "m", "")
    lower_cased = _with_tokenizer_steps(hf_mlm_dir, tmp_path, normalizer={"type": "Lowercase"})
    _, rows, *_ = handlers.tokens("The Cat", str(lower_cased))  # loads, and reads the text lower-cased
    assert [row["id"] for row in rows["tokens"]] == tokenizer.encode("the cat").ids != tokenizer.encode("The Cat").ids


# ----------------------------------------------------------------------------- an API call's model loads aside
def test_an_api_call_does_not_hold_the_compute_queue_while_its_model_loads(models, hf_mlm_dir, tokenizer,
                                                                            monkeypatch):
    """The reviewer's case: /classify naming a roberta-large not loaded yet loaded it in the compute queue, where
    a shipped /fill_mask waited 10 s behind it. The endpoint now answers at once that the model is loading (it
    loads in the background), and once it is loaded answers with it."""
    from demo import wiring

    release, real_load = threading.Event(), MC.load_choice

    def slow_load(*args, **kwargs):
        release.wait(20)
        return real_load(*args, **kwargs)

    monkeypatch.setattr(MC, "load_choice", slow_load)
    handlers = Handlers(models, MC.ModelChooser(models, allow_local=True))
    with gr.Blocks() as blocks:
        boxes = [gr.Textbox(), gr.Number(), gr.Textbox(), gr.Textbox()]
        wiring.api(handlers.fill_mask, boxes, [gr.HighlightedText(), gr.Label(), gr.JSON(), gr.HTML()], "fill_mask")
    endpoint = next(block.fn for block in blocks.fns.values() if block.api_name == "fill_mask")
    answers = []
    asking = threading.Thread(target=lambda: answers.append(_outcome(endpoint, TEXT, 5, "", str(hf_mlm_dir))))
    asking.start()
    asking.join(10)  # before: the call waited for the load (until `release`)
    assert answers and isinstance(answers[0], gr.Error) and "is loading" in answers[0].message
    assert "try again in a moment" in answers[0].message and not release.is_set()
    shipped = []  # the shipped model answers meanwhile, as it answers without a load going on
    answering = threading.Thread(target=lambda: shipped.append(endpoint(TEXT, 5, "", MC.SHIPPED)))
    answering.start()
    answering.join(10)
    assert shipped == [handlers.fill_mask(TEXT, 5)] and not release.is_set()
    release.set()
    for _ in range(100):  # the load ends in the background
        if handlers.chooser.is_loaded("mlm", str(hf_mlm_dir)):
            break
        threading.Event().wait(0.1)
    probabilities, ids = _hf_probabilities(hf_mlm_dir, tokenizer, TEXT, transformers.RobertaForMaskedLM)
    expected = probabilities[(ids == tokenizer.token_to_id("<mask>")).nonzero()[0, 0]]
    raw = endpoint(TEXT, 3, "", str(hf_mlm_dir))[-2]  # now answered with it
    assert [r["token"] for r in raw[0]] == expected.topk(3).indices.tolist()


def _outcome(fn, *args):
    try:
        return fn(*args)
    except gr.Error as err:
        return err


def test_an_api_call_is_told_the_value_to_send_and_not_of_a_current_model(models, monkeypatch):
    """The reviewer's case (an API review): /fill_mask with model "mlm" was told to "pick “ours: …” from the box's
    list", and a model that could not load said "the current model stays in use", though an API client sends
    "shipped" and has no current model. Inside `loading_aside` (as demo.wiring's `api_endpoint` runs every
    endpoint) the messages speak to the caller; the page's stay as they were, whoever asked first (a failure is
    remembered for both: `_refuse_recent_failure`)."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    chooser = MC.ModelChooser(models, allow_local=False, hub_mode="any")

    def refusal(call) -> str:
        with pytest.raises(MC.ModelChoiceError) as error:
            call()
        return str(error.value)

    page_first = refusal(lambda: chooser.get("mlm", "someone/first-roberta"))  # the page's wording, remembered
    with MC.loading_aside(wait_s=60):
        api = [refusal(lambda: chooser.get("mlm", "someone/first-roberta")),  # remembered from the page's request
               refusal(lambda: chooser.get("sentiment", "someone/other-roberta")),  # loaded in a thread of its own
               refusal(lambda: chooser.get_any("someone/third-roberta"))]  # the attention endpoints' reading
        named = refusal(lambda: chooser.get("mlm", " Sentiment "))
    assert page_first.endswith(" Nothing was run with it, and the current model stays in use."), page_first
    for message in api:
        assert message.startswith("The Hugging Face Hub cannot be reached"), message
        assert message.endswith(" Nothing was run with it."), message
    assert named.startswith("“Sentiment” is not a Hub repo id: for the shipped model, send “shipped”"), named
    assert "ours" not in named and "box" not in named
    # the page, after the API's failures: its own words (the failure remembered from the API's request)
    status = chooser.choose("sentiment", "someone/other-roberta", MC.SHIPPED)[2]
    assert "Nothing was run with it, and the current model stays in use." in status, status
    assert "pick “ours: …” from the box's list" in refusal(lambda: chooser.get("mlm", "mlm"))



@pytest.fixture
def held_loads(models, monkeypatch):
    """`load_choice` replaced by one that records each source it loads and waits for the test's `release`; the
    loads still waiting are released when the test ends, and their threads' ends waited for."""
    release, calls = threading.Event(), []

    def held(key, source, *_):
        calls.append(source)
        assert release.wait(20), "the test never released the load"
        return models[key]

    monkeypatch.setattr(MC, "load_choice", held)
    yield release, calls
    release.set()
    _loads_ended()


def _loading_threads() -> list[threading.Thread]:
    """The threads loading a model aside (`ModelChooser._load_aside` names each "load <source>")."""
    return [thread for thread in threading.enumerate() if thread.name.startswith("load ")]


def _loads_ended() -> None:
    for thread in _loading_threads():
        thread.join(10)


def _refusal(call) -> str:
    with pytest.raises(MC.ModelChoiceError) as refused:
        call()
    return str(refused.value)


def test_an_api_call_is_refused_while_as_many_models_as_the_server_loads_at_once_are_loading(models, held_loads):
    """A busy Space: LOADS_AT_ONCE models loading aside (each call told it "is loading"), a call naming yet another
    is refused at once, without starting its load, and told to try again; once the loads end, it loads."""
    release, calls = held_loads
    chooser = MC.ModelChooser(models, hub_mode="any")
    loading = [f"someone/roberta-{i}" for i in range(MC.LOADS_AT_ONCE)]
    with MC.loading_aside(wait_s=0.05):
        for source in loading:
            assert "is loading" in _refusal(lambda: chooser.get("mlm", source))
        busy = _refusal(lambda: chooser.get("mlm", "someone/one-more"))
    assert busy == ("someone/one-more is not loaded, and this server is loading other models now: try again in a "
                    "moment. Nothing was run with it.")
    assert calls == loading  # its load never started
    release.set()
    _loads_ended()
    with MC.loading_aside(wait_s=20):
        assert chooser.get("mlm", "someone/one-more") is models.mlm
    assert calls == [*loading, "someone/one-more"]


def test_a_second_api_call_for_a_model_loading_aside_joins_its_load(models, held_loads):
    """Two visitors choosing the same Hub model at once: the second call waits for the first call's load (one
    download, not two), takes no second place among the LOADS_AT_ONCE, and gets the same model."""
    release, calls = held_loads
    chooser = MC.ModelChooser(models, hub_mode="any")
    started, load_into = [], chooser._load_into  # each load started aside (a thread of its own)
    chooser._load_into = lambda loading, aside_key: started.append(aside_key[1]) or load_into(loading, aside_key)
    with MC.loading_aside(wait_s=0.05):
        first = _refusal(lambda: chooser.get("sentiment", "someone/big-roberta"))
    got = []
    second = threading.Thread(target=lambda: got.append(_joined(chooser, "someone/big-roberta")))
    second.start()  # before or after the calls below, it joins the load (else one of them, or it, is refused)
    others = [f"someone/other-{i}" for i in range(MC.LOADS_AT_ONCE - 1)]
    with MC.loading_aside(wait_s=0.05):  # the places left: the one load took one
        for source in others:
            assert "is loading" in _refusal(lambda: chooser.get("sentiment", source))
    assert "is loading" in first and not release.is_set()
    release.set()
    second.join(20)
    assert got == [models.sentiment]
    assert started == calls == ["someone/big-roberta", *others]  # the model the two calls asked for loaded once


def _joined(chooser, source):
    with MC.loading_aside(wait_s=20):
        return chooser.get("sentiment", source)


def test_a_model_with_a_label_name_longer_than_the_app_shows_is_refused(tiny_config):
    """A classifier's label names are shown in the page's bars and messages: at most MAX_LABEL_CHARS characters."""
    import dataclasses

    longest = dataclasses.replace(tiny_config, id2label={0: "no", 1: "y" * MC.MAX_LABEL_CHARS})
    MC.check_limits(longest, "someone/labels", MC.KEPT)  # the longest taken
    too_long = dataclasses.replace(tiny_config, id2label={0: "no", 1: "y" * (MC.MAX_LABEL_CHARS + 1)})
    with pytest.raises(MC.ModelChoiceError) as refused:
        MC.check_limits(too_long, "someone/labels", MC.KEPT)
    assert str(refused.value) == (f"someone/labels has a label name longer than {MC.MAX_LABEL_CHARS} characters. "
                                  f"{MC.KEPT}")


@pytest.mark.parametrize("error", [MemoryError(), RuntimeError("a library's panic at /srv/secret/path")])
def test_an_unexpected_failure_while_loading_is_said_plainly_and_its_traceback_logged(models, monkeypatch, caplog,
                                                                                        error):
    """Out of memory, or any error the loader does not expect: the visitor reads its kind only (no message, which
    may hold a server path), the server's log has the traceback, and the tab keeps its model."""
    def fails(*args, **kwargs):
        raise error

    monkeypatch.setattr(MC, "read_architecture", fails)
    with caplog.at_level("ERROR", logger=MC.log.name):
        value, current, status = MC.ModelChooser(models, hub_mode="any").choose("mlm", "someone/huge-roberta")
    said = f"Could not load someone/huge-roberta ({type(error).__name__}). {MC.KEPT}"
    assert current == MC.SHIPPED and value == "someone/huge-roberta" and said in status, status
    assert "/srv" not in status
    logged = [record for record in caplog.records if record.name == MC.log.name]
    assert [record.getMessage() for record in logged] == ["loading someone/huge-roberta"]
    assert logged[0].exc_info and logged[0].exc_info[1] is error


def test_an_interrupt_while_loading_is_not_made_a_message(models, monkeypatch):
    """A KeyboardInterrupt (the server being stopped) passes through the loader's catch-all."""
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(MC, "read_architecture", interrupted)
    with pytest.raises(KeyboardInterrupt):
        MC.ModelChooser(models, hub_mode="any").get("mlm", "someone/huge-roberta")

# ----------------------------------------------------------------------------- the shipped models' notes
def test_the_model_notes_worked_examples_are_what_they_say_of_the_shipped_models():
    """The worked examples of demo/model_notes.py's docstrings quoted an older release ("26 pretraining phases (18 of
    training, 8 weight averages)", "52.7% at its last phase"): each one is what its function says of the shipped
    models now."""
    import re

    from demo import model_notes
    from demo.models import load_models

    shipped = load_models()
    phases = shipped.mlm.extras["phases"]
    for function, said in ((model_notes.phases_counted, model_notes.phases_counted(phases)),
                           (model_notes.classifier_encoder_said, model_notes.classifier_encoder_said(shipped))):
        example = re.match(r'"([^"]+)"', " ".join(function.__doc__.split()))  # its first quote, in one line
        assert example and example[1] == said, (function.__name__, example and example[1], said)


# ----------------------------------------------------------------------------- the device the models compute on
def test_app_device_names_cpu_cuda_or_auto_and_refuses_anything_else_in_one_line():
    """The app computed on the CPU whatever the machine, and nothing said so: APP_DEVICE names the device, and a
    value it cannot use stops the app at start-up, in one line naming the variable."""
    assert app_device("cpu") == torch.device("cpu")
    assert app_device("auto") == torch.device("cuda" if torch.cuda.is_available() else "cpu")
    for value in ("gpu", "", "CPU", " cpu", "cuda:x", "mps", "0"):
        with pytest.raises(SystemExit) as stopped:
            app_device(value)
        assert str(stopped.value) == f"app.py: APP_DEVICE must be cpu, cuda, cuda:N or auto, got {value!r}"
    beyond = f"cuda:{torch.cuda.device_count()}"  # one past this machine's last CUDA device (cuda:0 where none)
    with pytest.raises(SystemExit) as stopped:
        app_device(beyond)
    said = str(stopped.value)
    assert said.startswith(f"app.py: APP_DEVICE {beyond!r}: this machine has ") and "\n" not in said, said
    assert said.endswith("; APP_DEVICE=cpu or auto computes on the CPU") and "-1" not in said, said


def test_app_device_says_a_missing_cuda_device_in_its_own_words(monkeypatch):
    """APP_DEVICE's message for a CUDA device this machine lacks was roberta.devices.parse_device's, cut where its hint
    for Python callers began (" ('cpu' or -1"): a change of the package's wording changed the app's message, or
    left the hint in it. The app checks the device itself and says it in one line of its own, whatever the package
    says, on a machine without CUDA and on one with two devices (faked here: only their count is read)."""
    def reworded(device, name):
        raise ValueError(f"{name}={device} is not a device here; use -1 for the CPU")

    monkeypatch.setattr(roberta.devices, "parse_device", reworded)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    for value in ("cuda", "cuda:0", "cuda:3"):
        with pytest.raises(SystemExit) as stopped:
            app_device(value)
        assert str(stopped.value) == (f"app.py: APP_DEVICE {value!r}: this machine has no CUDA device; APP_DEVICE=cpu "
                                      "or auto computes on the CPU")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    with pytest.raises(SystemExit) as stopped:
        app_device("cuda:2")
    assert str(stopped.value) == ("app.py: APP_DEVICE 'cuda:2': this machine has 2 CUDA device(s), cuda:0 to cuda:1; "
                                  "APP_DEVICE=cpu or auto computes on the CPU")
    monkeypatch.undo()  # the package's own check again: cuda:1 of the two faked devices is one it takes
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert app_device("cuda:1") == torch.device("cuda:1")


@pytest.mark.skipif("APP_DEVICE" in os.environ, reason="the default is what this test checks")
def test_by_default_the_app_computes_on_the_cpu(models):
    assert app_models.DEVICE == torch.device("cpu")
    for loaded in (models.mlm, models.sentiment):
        assert loaded.pipeline.device == torch.device("cpu")
        assert next(loaded.model.parameters()).device == torch.device("cpu")


def test_the_app_device_reaches_the_shipped_and_the_chosen_pipelines(monkeypatch, tiny_mlm_dir, hf_mlm_dir):
    """Both places that build the app's pipelines, the shipped models at start-up (`load_model`) and a model chosen
    in a tab (`load_choice`), said device="cpu" whatever the machine; they ask for APP_DEVICE's now
    (`demo.models.DEVICE`). This machine may have no GPU: the pipelines are asked for cuda:1, which is recorded,
    and built on the CPU."""
    asked = []
    real_pipeline, real_fill_mask = roberta.pipeline, roberta.pipelines.TASKS["fill-mask"]

    def pipeline(task, model, device=None, **kwargs):  # roberta.pipeline, as load_model calls it
        asked.append(device)
        return real_pipeline(task, model, device="cpu", **kwargs)

    def fill_mask(model, tokenizer, device=None, **kwargs):  # the pipeline's class, as load_choice calls it
        asked.append(device)
        return real_fill_mask(model, tokenizer, device="cpu", **kwargs)

    monkeypatch.setattr(app_models, "DEVICE", torch.device("cuda:1"))
    monkeypatch.setattr(roberta, "pipeline", pipeline)
    assert load_model("mlm", tiny_mlm_dir).available
    monkeypatch.setitem(roberta.pipelines.TASKS, "fill-mask", fill_mask)  # after: roberta.pipeline calls it too
    assert MC.load_choice("mlm", str(hf_mlm_dir), allow_local=True).available
    assert asked == [torch.device("cuda:1")] * 2
