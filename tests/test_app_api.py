"""The app as an API: `python app.py` in a subprocess with the tiny fixture models, called with gradio_client
(the process is the point: start-up, the queue, error messages over the wire, uploads refused)."""
import http.client
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid

import pytest
import torch
from gradio_client import Client
from gradio_client.exceptions import AppError

from demo.formatting import md_escape
from demo.request_guards import MAX_BODY_BYTES
from demo.validation import MAX_CHARS
from scripts.app_process import AppProcess

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

LONG = "the cat sees the house. " * 4300  # about 100 KB
ODD = "مرحبا بالعالم 😀 東京 \u202eevil\u202c\x00\x07 tab\there"
SCRIPT = "<script>alert(1)</script> <img src=x onerror=alert(2)>"
TEXT = "Paris is the capital of <mask>."
BIASED_TO = "hous"  # the top answer of `biased_mlm_dir`: " house"'s first piece in the tiny tokenizer


def app_env(tiny_mlm_dir, tiny_clf_dir) -> dict:
    """The app's environment: the tiny models; a folder stands in for a Hub repo; no network here."""
    return {"MLM_MODEL": str(tiny_mlm_dir), "SENTIMENT_MODEL": str(tiny_clf_dir), "APP_LOCAL_MODELS": "1",
            "HF_HUB_OFFLINE": "1"}


@pytest.fixture(scope="module")
def app(tiny_mlm_dir, tiny_clf_dir):
    with AppProcess(app_env(tiny_mlm_dir, tiny_clf_dir)) as running:
        yield running


@pytest.fixture(scope="module")
def biased_mlm_dir(tiny_mlm_dir, tmp_path_factory):
    """The tiny MLM with its output bias pushed towards the first piece of " house" (`BIASED_TO`): another model
    than the server's own, whose top answer is known (a `model` argument that were ignored would give the
    server's answers)."""
    import shutil

    import roberta

    folder = tmp_path_factory.mktemp("biased") / "mlm"
    shutil.copytree(tiny_mlm_dir, folder)
    model = roberta.RobertaForMaskedLM.from_pretrained(folder)
    tokenizer = roberta.load_tokenizer(folder)
    piece = tokenizer.encode(" house", add_special_tokens=False).ids[0]
    assert tokenizer.decode([piece]).strip() == BIASED_TO
    with torch.no_grad():
        model.lm_head.bias[piece] += 100.0
    model.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def client(app):
    return Client(app.url, verbose=False)


def test_api_endpoints_and_parameters(client):
    api = client.view_api(print_info=False, return_format="dict")["named_endpoints"]
    leading = {"/fill_mask": ["text", "top_k"], "/fill_mask_layers": ["text"], "/classify": ["text"],
               "/fill_mask_compare": ["text", "top_k", "targets", "model", "other"],
               "/attention": ["text", "layer", "head"], "/masking": ["text", "epochs", "seed"],
               "/counterfactual": ["text"], "/tokens": ["text", "model"], "/bpe_merges": ["word", "model"],
               "/neighbours": ["word", "k", "words_only", "model"],
               "/analogy": ["a", "b", "c", "k", "words_only", "model"],
               "/word_map": ["words", "model"], "/positions": ["model"],
               **{name: ["text", "layer", "head", "token", "model"]
                  for name in ("/attention_layer", "/attention_head", "/attention_token")}}
    for name, params in leading.items():
        assert name in api, f"{name} missing from {sorted(api)}"
        info = api[name]["parameters"]
        assert [p["parameter_name"] for p in info[:len(params)]] == params
        assert all(p["parameter_has_default"] for p in info[len(params):]), f"{name}: extra inputs need defaults"


@pytest.mark.parametrize("api_name", ["/fill_mask_example", "/fill_mask_example_run", "/attention_example"])
def test_the_examples_events_are_the_pages_not_the_apis(client, api_name):
    """The Examples' events were callable ("undocumented"): a client's bad example index got Gradio's "upstream app
    has raised an exception" and the server a traceback. They are private: a client is told there is no such
    endpoint, as for the page's `_ui` copies."""
    with pytest.raises(ValueError, match="Cannot find a function with"):
        client.predict(0, api_name=api_name)


def test_fill_mask_compare(client, tiny_mlm_dir, biased_mlm_dir):
    """Two models side by side; `other` defaults to roberta-base, which this offline server cannot fetch."""
    view, data = client.predict(TEXT, 3, "", "shipped", str(tiny_mlm_dir), api_name="/fill_mask_compare")
    assert [column["model"] for column in data] == ["ours (shipped)", str(tiny_mlm_dir)]
    assert data[0]["predictions"] == data[1]["predictions"]  # the same weights under two names
    _, data = client.predict(TEXT, 3, "", "shipped", str(biased_mlm_dir), api_name="/fill_mask_compare")
    assert data[0]["predictions"] != data[1]["predictions"]  # another model: its own answers
    assert data[1]["predictions"][0][0]["token_str"].strip() == BIASED_TO
    assert view.count('class="fm-mask"') == 2 and "Top answers for" in view
    with pytest.raises(AppError, match="cannot be reached.*not in its download cache") as info:
        client.predict(TEXT, 3, api_name="/fill_mask_compare")
    assert "Traceback" not in str(info.value)


def test_fill_mask(client):
    filled, first, second, *_, raw, view = client.predict("Paris is the capital of <mask>.", 3,
                                                          api_name="/fill_mask")
    assert len(first["confidences"]) == 3 and first["label"] == first["confidences"][0]["label"]
    assert not second or second.get("confidences") is None  # unused mask slot
    # the completed sentence names the top answer as the label does ("⟨byte 0xE8⟩ (part of a character)", not "�")
    assert first["label"].strip() in "".join(part["token"] for part in filled) and "�" not in first["label"]
    assert 'class="fm-mask"' in view and "&lt;mask&gt; 1" in view  # the readable view, last
    *_, raw, _ = client.predict("The <mask> sat on the [MASK].", 1, "cat, dog, sea", api_name="/fill_mask")
    assert len(raw) == 2 and all(1 <= len(row) <= 3 for row in raw)  # every candidate, whatever top-k


def test_fill_mask_layers(client, tiny_mlm_dir):
    """Layer by layer: the HTML view, then the same as data, whose last row is /fill_mask's top answer."""
    view, data = client.predict("The <mask> sat on the mat.", api_name="/fill_mask_layers")
    *_, raw, _ = client.predict("The <mask> sat on the mat.", 1, api_name="/fill_mask")
    assert 'class="ll-mask"' in view and len(data) == 1
    assert data[0]["answer"]["token"] == data[0]["layers"][-1]["top"][0]["token"] == raw[0][0]["token"]
    assert [row["layer"] for row in data[0]["layers"]] == [0, 1, 2]  # the embeddings, then the tiny model's 2
    _, same = client.predict("The <mask> sat on the mat.", str(tiny_mlm_dir), api_name="/fill_mask_layers")
    assert same == data
    with pytest.raises(AppError, match="There is no mask"):
        client.predict("no mask here", api_name="/fill_mask_layers")


def test_classify(client):
    label, words, explanation = client.predict("a gorgeous, funny and moving film.", api_name="/classify")
    assert {c["label"] for c in label["confidences"]} == {"negative", "positive"}
    scores = [w["class_or_confidence"] for w in words if w["class_or_confidence"] is not None]
    assert scores and all(-1 <= s <= 1 for s in scores)
    assert "How to read it" in explanation


def test_counterfactual(client, tiny_clf_dir):
    """The word that pushed most, removed or negated: each edited text with the classifier's answer, the
    change of P(positive) the same as /classify's answers on the original and the edited text."""
    view, data = client.predict("the film was good.", api_name="/counterfactual")
    assert "| original |" in view and "P(positive)" in view
    before = {c["label"]: c["confidence"] for c in client.predict("the film was good.", api_name="/classify")[0]
              ["confidences"]}
    assert data["original"]["probabilities"] == pytest.approx(before, abs=1e-5)
    assert data["edits"] and data["edits"][0]["edit"].startswith("remove")
    for row in data["edits"]:
        label, *_ = client.predict(row["text"], api_name="/classify")
        after = {c["label"]: c["confidence"] for c in label["confidences"]}
        assert row["change_points"] == pytest.approx(100 * (after["positive"] - before["positive"]), abs=0.01)
    _, data = client.predict("good", str(tiny_clf_dir), api_name="/counterfactual")  # the model choice, last
    assert [row["text"] for row in data["edits"]] == ["bad"]


def test_model_choice(client, tiny_mlm_dir, tiny_clf_dir, biased_mlm_dir):
    """The tabs' last input, `model`: "shipped" (the default), or a Hub repo id (a folder here, as
    APP_LOCAL_MODELS=1 allows), loaded into our code; one that cannot be used is refused in plain words."""
    api = client.view_api(print_info=False, return_format="dict")["named_endpoints"]
    for name in ("/fill_mask", "/fill_mask_layers", "/classify", "/counterfactual"):
        model = api[name]["parameters"][-1]
        assert model["parameter_name"] == "model" and model["parameter_default"] == "shipped"
    model = api["/attention"]["parameters"][3]
    assert model["parameter_name"] == "model" and model["parameter_default"] == "mlm"  # or "sentiment", or an id
    *_, notes, heads, layer, head, _, _, _, _ = client.predict("The cat.", 2, 1, str(tiny_clf_dir),
                                                               api_name="/attention")
    assert md_escape(str(tiny_clf_dir)) in notes and "Layer 2, head 1" in heads
    # an API call has no current model, and sends "shipped" where the page's box lists "ours: …"
    with pytest.raises(AppError, match=r"cannot be reached.*Nothing was run with it\.") as info:
        client.predict("The cat.", 2, 1, "someone/no-such-roberta", api_name="/attention")
    assert "stays in use" not in str(info.value)
    with pytest.raises(AppError, match="“mlm” is not a Hub repo id: for the shipped model, send “shipped”") as info:
        client.predict(TEXT, 3, "", "mlm", api_name="/fill_mask")
    assert "ours" not in str(info.value)
    shipped = client.predict(TEXT, 3, "", "shipped", api_name="/fill_mask")[-2]
    assert client.predict(TEXT, 3, "", str(tiny_mlm_dir), api_name="/fill_mask")[-2] == shipped
    biased = client.predict(TEXT, 3, "", str(biased_mlm_dir), api_name="/fill_mask")[-2]  # the model asked for
    assert biased != shipped and BIASED_TO in json.dumps(biased)
    label, *_ = client.predict("a fun film", str(tiny_clf_dir), api_name="/classify")
    assert {c["label"] for c in label["confidences"]} == {"negative", "positive"}
    for args, api_name, message in [((TEXT, 3, "", "someone/no-such-roberta"), "/fill_mask", "cannot be reached"),
                                    (("good", str(tiny_mlm_dir)), "/classify", "needs a text classifier")]:
        with pytest.raises(AppError, match=message) as info:
            client.predict(*args, api_name=api_name)
        assert "Traceback" not in str(info.value)


def test_attention(client):
    (heatmap, grid, rollout, bars, picker, notes, heads, layer, head, heat_text, grid_text, roll_text,
     bars_text) = client.predict("The cat sees the house.", 2, "average", api_name="/attention")
    for plot in (heatmap, grid, rollout, bars):
        assert plot["type"] == "matplotlib" and plot["plot"].startswith("data:image/")
    assert "The figure as text" in heat_text and "draws most on" in roll_text and "head 4" in grid_text
    assert "tokens" in notes and heads.count('class="hv-r"') > 4
    assert (layer["value"], head["value"]) == (2, "average") and len(layer["choices"]) == 2  # the pickers' updates
    assert "The figure as text" in bars_text and '>position</th>' in bars_text
    bars, bars_text = client.predict("The cat sees the house.", 1, 2, 3, api_name="/attention_token")
    assert bars["plot"].startswith("data:image/") and "Where token 3" in bars_text


def test_attention_layer_head_and_view(client):
    """A layer or head change: the views that depend on it (the head view last); `view` (last, default
    "all") asks for one view only, the others come back empty."""
    text = "The cat sees the house."
    api = client.view_api(print_info=False, return_format="dict")["named_endpoints"]
    for name in ("/attention", "/attention_layer", "/attention_head"):
        view = api[name]["parameters"][-1]
        assert view["parameter_name"] == "view" and view["parameter_default"] == "all"
    heatmap, grid, bars, heads, heat_text, grid_text, bars_text = client.predict(text, 1, "average", 2, "mlm",
                                                                                 api_name="/attention_layer")
    assert all(p["plot"].startswith("data:image/") for p in (heatmap, grid, bars)) and "Layer 1, average" in heads
    assert "layer 1, average" in heat_text and "Where each head of layer 1 attends" in grid_text
    heatmap, bars, heads_2, heat_text, bars_text = client.predict(text, 1, 2, 2, "mlm", api_name="/attention_head")
    assert heatmap["plot"].startswith("data:image/") and "Layer 1, head 2" in heads_2 and heads_2 != heads
    assert "layer 1, head 2" in heat_text
    heatmap, grid, bars, heads_2, heat_text, grid_text, bars_text = client.predict(text, 2, 2, 2, "mlm", "heads",
                                                                                   api_name="/attention_layer")
    assert (heatmap, grid, bars, heat_text, grid_text, bars_text) == (None,) * 6 and "Layer 2, head 2" in heads_2
    heatmap, *_, heads, _, _, heat_text, grid_text, roll_text, bars_text = client.predict(
        text, 2, 2, "sentiment", "heatmap", api_name="/attention")
    assert heatmap["plot"].startswith("data:image/") and not heads and heat_text
    assert not (grid_text or roll_text or bars_text)
    with pytest.raises(AppError, match="view must be"):
        client.predict(text, 2, 2, "mlm", "everything", api_name="/attention")


def test_whole_number_sliders_are_documented_as_integers(client):
    """view_api listed top_k, k and epochs as float, and a client that sent 2.5 was refused: they are whole numbers,
    documented as int."""
    api = client.view_api(print_info=False, return_format="dict")["named_endpoints"]
    for name, parameter in (("/fill_mask", "top_k"), ("/fill_mask_compare", "top_k"), ("/neighbours", "k"),
                            ("/analogy", "k"), ("/masking", "epochs")):
        (info,) = [p for p in api[name]["parameters"] if p["parameter_name"] == parameter]
        assert info["python_type"]["type"] == "int", (name, info)


def test_the_layer_and_head_pickers_are_documented_as_numbers(client):
    """The API page and view_api listed Layer as Literal['1', '2'] and Head as Literal['average', '1', ...]: strings,
    and only the start-up model's count (Gradio documents a dropdown as a string enum, whose values gradio_client
    quotes whatever their type). A layer or head is a number, up to the chosen model's count, which the handler
    checks; the page's pickers are as they were."""
    api = client.view_api(print_info=False, return_format="dict")["named_endpoints"]
    for name in ("/attention", "/attention_layer", "/attention_head", "/attention_token"):
        types = {p["parameter_name"]: p["python_type"]["type"] for p in api[name]["parameters"]}
        assert (types["layer"], types["head"]) == ("int", "Literal['average'] | int"), name
        layer = next(p for p in api[name]["parameters"] if p["parameter_name"] == "layer")
        assert layer["parameter_default"] == 2 and layer["example_input"] == 1  # numbers, as the client sends them
    pickers = {c["props"]["elem_id"]: c["props"] for c in client.config["components"]
               if c["props"].get("elem_id") in ("at-layer", "at-head")}
    assert pickers["at-layer"]["choices"] == [["1", 1], ["2", 2]] and pickers["at-layer"]["value"] == 2
    assert pickers["at-head"]["choices"][:2] == [["average of heads", "average"], ["head 1", 1]]
    with pytest.raises(AppError, match="Layer must be between 1 and 2, got 3"):
        client.predict("The cat.", 3, "average", api_name="/attention")


# Imported by Python as it starts (a sitecustomize.py on PYTHONPATH), before app.py: every /attention request
# waits in the handler until the file TEST_ATTENTION_GATE names exists, holding its place in the queue for as long
# as a test needs, however fast the machine draws the figures. The page's default view, drawn at start-up in the
# main thread (requests run in Gradio's worker threads), is not held.
HOLD_ATTENTION = """
import functools
import importlib.machinery
import os
import sys
import threading
import time


class HoldAttention:
    def find_spec(self, name, path, target=None):
        if name != "demo.attention_handlers":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            attention = module.AttentionHandlers.attention

            @functools.wraps(attention)
            def held(*args, **kwargs):
                while threading.current_thread() is not threading.main_thread() and not os.path.exists(
                        os.environ["TEST_ATTENTION_GATE"]):
                    time.sleep(0.05)
                return attention(*args, **kwargs)

            module.AttentionHandlers.attention = held

        spec.loader.exec_module = exec_module
        return spec


sys.meta_path.insert(0, HoldAttention())
"""


def test_slow_requests_do_not_hold_up_quick_ones(tiny_mlm_dir, tiny_clf_dir, tmp_path):
    """Requests for the slow endpoints (here /attention) queue by themselves, as many at a time as the app runs:
    a /classify sent after them is answered while they still wait (70 of them once made it wait 103 s in the one
    queue every endpoint shared). More of them than a queue holds (APP_QUEUE_SIZE, 3 here) are refused by the slow
    queue alone, in plain words: Gradio's own bound counted every queue together, and a flood of /attention made
    /classify answer "Queue is full". The app is one of its own whose /attention requests are held until the test
    lets them go (`HOLD_ATTENTION`): without it, whether they still waited hung on how fast the figures are
    drawn."""
    from gradio_client.exceptions import ValidationError
    from gradio_client.utils import Status

    (tmp_path / "sitecustomize.py").write_text(HOLD_ATTENTION)
    gate = tmp_path / "gate"
    env = {**app_env(tiny_mlm_dir, tiny_clf_dir), "TEST_ATTENTION_GATE": str(gate), "APP_QUEUE_SIZE": "3",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))}
    with AppProcess(env) as held_app:
        client = Client(held_app.url, verbose=False)
        jobs = [client.submit("The cat sees the house.", 2, "average", "mlm", "all", api_name="/attention")
                for _ in range(10)]  # 2 running, 3 waiting: the queue is full
        try:
            for job in jobs:  # every one of them in the queue (or refused) before the quick request is sent
                while job.status().code in (Status.STARTING, Status.JOINING_QUEUE) and not job.done():
                    time.sleep(0.05)
            refused = [job for job in jobs if job.done()]
            assert len(refused) >= 10 - 2 - 3, [job.status().code for job in jobs]
            for job in refused:
                with pytest.raises(ValidationError, match="The app is busy: 3 requests are already waiting for "
                                                          "the slow views"):
                    job.result()
            try:
                label, *_ = client.submit("A fine film.", api_name="/classify").result(timeout=60)
            except TimeoutError:
                pytest.fail("/classify waited behind the held /attention requests (60 s)")
            assert len(label["confidences"]) == 2
            assert not any(job.done() for job in jobs if job not in refused)  # still held: /classify did not wait
        finally:
            gate.touch()
            answers = [job.result(timeout=60) for job in jobs if job not in refused]
    assert all(heatmap["plot"].startswith("data:image/") for heatmap, *_ in answers)  # held, then drawn


def test_tokens_and_merges(client):
    view, rows, picker, merges, steps = client.predict("The cat sees antidisestablishment.", api_name="/tokens")
    assert rows["tokens"][0]["token"] == "<s>" and rows["tokens"][-1]["token"] == "</s>" and "chip" in view
    assert steps[-1]["pieces"] == [row["token"] for row in rows["tokens"]
                                   if row["start"] >= 12 and not row["special"] and row["text"] != "."]
    merges, steps = client.predict(" cat", api_name="/bpe_merges")
    assert steps[0]["merged"] is None and "merge" in merges


def test_embeddings(client):
    view, result = client.predict("cat", 4, True, api_name="/neighbours")
    assert len(result["neighbours"]) == 4 and "Nearest to" in view
    view, result = client.predict("man", "king", "woman", api_name="/analogy")
    assert result["query"] == ["man", "king", "woman"] and len(result["neighbours"]) == 10
    view, result = client.predict("man", "king", "woman", 3, False, api_name="/analogy")
    assert len(result["neighbours"]) == 3 and not result["words_only"]
    word_map, text = client.predict("cat, dog, house", api_name="/word_map")
    assert "The map as a table (3 words)" in text
    positions, numbers = client.predict(api_name="/positions")
    assert "The figure in numbers" in numbers and "<tr><td>16</td>" in numbers
    for plot in (word_map, positions):
        assert plot["type"] == "matplotlib" and plot["plot"].startswith("data:image/")


def test_masking(client):
    table, stats, plot, predictions, plot_text = client.predict("The cat sees the house every day.", 12, 0,
                                                                api_name="/masking")
    assert table.count("<tr><th>epoch ") == 12
    assert "The figure as text" in plot_text and len(re.findall(r'<th scope="row">\d+</th>', plot_text)) == 12
    rows = {row[0]: row for row in stats["data"]}
    assert rows["BERT static, one fixed mask"][1] == 1
    assert plot["type"] == "matplotlib"
    assert predictions["headers"][0] == "scheme"


# One or two per endpoint: that a handler's message comes through the API as plain text (the handler tests,
# tests/test_app_handlers.py and tests/test_app_tokens_embeddings.py, check every kind of bad input). The API
# alone unescapes them: "write <mask>" and "got “<b>1</b>”", not "&lt;mask&gt;"; numbers and control characters
# arrive as the client sent them.
BAD_INPUTS = [
    ("/fill_mask", ("no mask here", 5), "There is no mask in the text: write <mask>"),
    ("/fill_mask", ("a <mask>", 99), "Top-k must be between 1 and 20, got 99"),
    ("/classify", ("\x00\x01\x02",), "The text is empty"),
    ("/counterfactual", ("film",), "“film” is the only word"),
    ("/attention", ("The cat.", 99, "average"), "Layer must be between 1 and 2, got 99"),
    ("/attention", ("The cat.", "<b>1</b>", "average"), "got “<b>1</b>”"),
    ("/attention_token", ("The cat.", 1, "average", 99), "Token must be between 0 and"),
    ("/masking", ("a sentence", 99, 0), "Epochs must be between 1 and 40, got 99"),
    ("/masking", ("a sentence", 5, 1.5), "Seed must be a whole number between 0 and"),
    ("/tokens", ("",), "The text is empty"),
    ("/bpe_merges", ("two words",), "is 2 words to this tokenizer"),
    ("/neighbours", ("cat", 0, True), "Neighbours must be between 1 and 100"),
    ("/analogy", ("a", "a", "b"), "three different words"),
    ("/word_map", ("cat",), "Give 3 to 30 different words"),
    ("/fill_mask", (TEXT, 3, "x" * 100_000), "is longer than 40 characters: type one word"),
    ("/attention", ("a cat", 1, "average", "mlm", "bogus"),
     "The view must be all, heads, heatmap, grid, rollout or token, got “bogus”."),
    # a list sent to a text box: refused by name (it was run as its Python repr, "['France', 'Germany']")
    ("/fill_mask", (TEXT, 5, ["France", "Germany"]), "The candidate words must be a string, got list."),
    ("/fill_mask", (["a <mask>"],), "The text must be a string, got list."),
    ("/classify", (["good"],), "The text must be a string, got list."),
    ("/neighbours", (["Monday"],), "The word must be a string, got list."),
    ("/analogy", ("cat", ["dog"], "house"), "Word b must be a string, got list."),
    ("/word_map", (["cat", "dog", "house"],), "The words must be a string, got list."),
    ("/classify", (None,), "The text is empty"),  # a cleared box's None, read as before
]


@pytest.mark.parametrize("api_name, args, message", BAD_INPUTS)
def test_bad_input_gives_clean_error(client, api_name, args, message):
    with pytest.raises(AppError) as info:
        client.predict(*args, api_name=api_name)
    assert message in str(info.value)
    assert "Traceback" not in str(info.value)


@pytest.mark.parametrize("text", [LONG, ODD, SCRIPT])
def test_long_unusual_and_html_text_is_served(client, text):
    *_, raw, _ = client.predict("<mask> " + text, 2, api_name="/fill_mask")
    assert raw[0][0].get("truncated", False) == (text is LONG)
    label, words, _ = client.predict(text, api_name="/classify")
    assert len(label["confidences"]) == 2
    if text is SCRIPT:  # the words come back as plain text, exactly as typed
        assert "".join(w["token"] for w in words) == text
    heatmap, *_ = client.predict(text, 1, "average", api_name="/attention")
    assert heatmap["plot"].startswith("data:image/")
    table, *_ = client.predict(text, 3, 0, api_name="/masking")
    assert "<script" not in table.split("</style>", 1)[1]


@pytest.mark.parametrize("seed", ["NaN", "Infinity", "-Infinity", "1.5", '"seed"'])
def test_masking_seed_in_raw_json(app, seed):
    """JSON numbers gradio_client cannot send (NaN, Infinity) posted as they are: the handler's message."""
    body = f'{{"data": ["a sentence", 5, {seed}]}}'.encode()
    request = urllib.request.Request(app.url + "gradio_api/call/masking", data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        event_id = json.load(response)["event_id"]
    with urllib.request.urlopen(app.url + f"gradio_api/call/masking/{event_id}", timeout=60) as response:
        stream = response.read().decode()
    assert "event: error" in stream and "Seed must be a whole number" in stream, stream


def test_still_serving_after_bad_inputs(app, client):
    """Every endpoint refused a bad input (one each, sent here whatever ran before): the server answers,
    and its log holds no traceback."""
    for api_name, (args, message) in {api_name: (args, message) for api_name, args, message in BAD_INPUTS}.items():
        with pytest.raises(AppError, match=re.escape(message)):
            client.predict(*args, api_name=api_name)
    label, *_ = client.predict("still alive?", api_name="/classify")
    assert label["confidences"]
    assert app.alive()
    assert "Traceback" not in app.output(), app.output()[-3000:]
    # the app's first line, said before the wait for the models (app.py printed nothing until Gradio's "Running on")
    assert app.output().splitlines()[0] == f"app.py: loading the models and laying out the page; then serving it on " \
                                          f"port {app.port}"


def test_a_direct_post_cannot_skip_the_queues(app, client):
    """POST /gradio_api/run/classify ran the handler at once, past its queue's admission check and limit (with
    APP_QUEUE_SIZE=0, which refused every queued request, it was answered). It is refused; the queued route
    gradio_client takes answers."""
    request = urllib.request.Request(app.url + "gradio_api/run/classify", method="POST",
                                     data=json.dumps({"data": ["A fine film.", "shipped"]}).encode(),
                                     headers={"Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=30)
    assert refused.value.code == 404
    label, *_ = client.predict("A fine film.", api_name="/classify")
    assert len(label["confidences"]) == 2


def test_a_call_of_no_public_endpoint_is_answered_404(app):
    """POST /gradio_api/call/<name>: a misspelt name was answered 500 (a traceback in the log), and the page's own
    events ran when named there; both are answered 404 naming the name. A public endpoint answers its event id."""
    def call(name: str, data: list):
        request = urllib.request.Request(app.url + f"gradio_api/call/{name}", method="POST",
                                         data=json.dumps({"data": data}).encode(),
                                         headers={"Content-Type": "application/json"})
        return urllib.request.urlopen(request, timeout=30)

    for name in ("nosuch", "fill_mask_ui"):
        with pytest.raises(urllib.error.HTTPError) as refused:
            call(name, ["Paris is the capital of <mask>.", 5, "", "shipped"])
        assert refused.value.code == 404
        assert refused.value.read().decode().startswith(f"This app has no public endpoint /{name}: ")
    with call("fill_mask", ["Paris is the capital of <mask>.", 5, "", "shipped"]) as answer:
        assert "event_id" in json.loads(answer.read())
    assert "Traceback" not in app.output(), app.output()[-3000:]


def test_missing_models_start_and_explain(tmp_path):
    env = {"MLM_MODEL": str(tmp_path / "no-mlm"), "SENTIMENT_MODEL": str(tmp_path / "no-sst2")}
    with AppProcess(env) as app:
        client = Client(app.url, verbose=False)
        with pytest.raises(AppError, match="not available: the folder .*no-mlm does not exist.*MLM_MODEL"):
            client.predict("Paris is the capital of <mask>.", 5, api_name="/fill_mask")
        with pytest.raises(AppError, match="not available.*SENTIMENT_MODEL"):
            client.predict("good", api_name="/classify")
        assert app.alive()


def run_app(args, env, timeout=120) -> subprocess.CompletedProcess:
    """`python app.py ARGS` to its end (a server it started would run into `timeout`)."""
    return subprocess.run([sys.executable, str(AppProcess.script), *args], cwd=AppProcess.script.parent,
                          env={**os.environ, "GRADIO_ANALYTICS_ENABLED": "False", **env}, capture_output=True,
                          text=True, timeout=timeout)


def environment_read() -> set[str]:
    """The variables the app's code reads: os.environ.get("NAME") in app.py, demo/ and roberta/, and the names it
    keeps in constants."""
    from demo import settings

    root = AppProcess.script.parent
    code = "".join(path.read_text(encoding="utf-8")
                   for path in [root / "app.py", *(root / "demo").glob("*.py"), *(root / "roberta").glob("*.py")])
    named = set(re.findall(r"""(?:environ\.get|getenv)\(["']([A-Z0-9_]+)["']""", code))
    return named | set(settings.MODEL_ENV.values()) | {settings.TOKEN_COUNTS_ENV, settings.LOCAL_ENV, settings.HUB_ENV}


def test_help_lists_the_environment_and_starts_no_server(tiny_mlm_dir, tiny_clf_dir):
    """`python app.py --help` started the server (the app read no options). It prints its options and every
    variable the app reads, and exits."""
    done = run_app(["--help"], app_env(tiny_mlm_dir, tiny_clf_dir))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "--host" in done.stdout and "--port" in done.stdout and "Running on" not in done.stdout
    variables = environment_read()
    assert {"MLM_MODEL", "APP_HUB_MODELS", "APP_QUEUE_SIZE", "APP_DEVICE", "GRADIO_SERVER_PORT",
            "HF_HUB_OFFLINE"} <= variables
    assert [name for name in sorted(variables) if name not in done.stdout] == [], done.stdout


def test_a_port_in_use_is_one_line_naming_the_option_and_the_variable(tiny_mlm_dir, tiny_clf_dir):
    """Another process on the port: Gradio's traceback ("Cannot find empty port in range: ..."), and a line naming
    `launch()`'s server_port, which a user of app.py does not see; now one line naming --port and
    GRADIO_SERVER_PORT, and a failure's exit code."""
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        port = other.getsockname()[1]
        for args, env in (([], {"GRADIO_SERVER_PORT": str(port)}), (["--port", str(port)], {})):
            done = run_app(args, {**app_env(tiny_mlm_dir, tiny_clf_dir), "GRADIO_SERVER_NAME": "127.0.0.1", **env})
            assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
            assert done.stderr.strip().splitlines() == [
                f"app.py: port {port} is in use by another process: choose another with --port or GRADIO_SERVER_PORT"]


def _two_labels(label: dict) -> None:
    """A gr.Label's value over the API: both classes, probabilities that sum to 1."""
    confidences = {c["label"]: c["confidence"] for c in label["confidences"]}
    assert set(confidences) == {"negative", "positive"} and sum(confidences.values()) == pytest.approx(1, abs=1e-5)


def _fill_mask_answer(result):
    filled, first, *_, raw, view = result
    assert len(raw) == 1 and len(raw[0]) == len(first["confidences"]) == 5 and view.count('class="fm-mask"') == 1
    assert [part["class_or_confidence"] for part in filled if part["class_or_confidence"]] == ["<mask> 1"]


def _classify_answer(result):
    label, words, explanation = result
    _two_labels(label)
    assert [w["token"] for w in words if w["class_or_confidence"] is not None] == ["x"]  # the one word read


def _counterfactual_answer(result):
    view, data = result
    assert "| original |" in view and data["edits"] and data["word"] in ("x", "good")
    assert all(sum(edit["probabilities"].values()) == pytest.approx(1, abs=1e-5) for edit in data["edits"])


def _attention_answer(result):
    heatmap, grid, rollout, bars, picker, notes, heads, *_ = result
    assert all(plot["type"] == "matplotlib" and plot["plot"].startswith("data:image/")
               for plot in (heatmap, grid, rollout, bars))
    assert re.match(r"Drawn for “.*”: 4 tokens", notes) and heads.count('class="hv-r"') == 4  # <s> x , </s>


def _masking_answer(result):
    table, stats, plot, predictions, plot_text = result  # the plot's text version last: the order clients knew
    assert table.count("<tr><th>epoch ") == 40 and plot["type"] == "matplotlib" and predictions["data"]
    assert len(re.findall(r'<th scope="row">\d+</th>', plot_text)) == 40


@pytest.mark.parametrize("api_name, args, answer", [
    ("/fill_mask", ("<mask>" + " " * 199_990, 5), _fill_mask_answer),  # took the server about 4 minutes
    ("/classify", (" " * 199_998 + "x",), _classify_answer),  # ran past 120 s, every other request timing out
    ("/counterfactual", ("x" + " " * 199_995 + "good",), _counterfactual_answer),
    ("/attention", ("x" + " " * 199_997 + ",", 1, "average", "sentiment"), _attention_answer),
    ("/masking", ("x" + " " * 199_997 + ")", 40, 0), _masking_answer),
], ids=["fill_mask", "classify", "counterfactual", "attention", "masking"])
@pytest.mark.timeout(120)  # a hang guard, not a speed bound (benchmarks/bench_worst_case_inputs.py times them)
def test_worst_case_inputs_are_answered(client, api_name, args, answer):
    """Whitespace runs at the 200,000-character cap: answered with a result of the endpoint's kind (the handler
    tests run every handler on the whole worst-case corpus), and the server answers the next request."""
    answer(client.predict(*args, api_name=api_name))
    _two_labels(client.predict("A fine film.", api_name="/classify")[0])


def _post_file(url: str, size: int) -> int:
    """POST one file of `size` bytes as multipart/form-data; the HTTP status (0: connection closed early)."""
    boundary = uuid.uuid4().hex
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; filename=\"x.bin\"\r\n"
            "Content-Type: application/octet-stream\r\n\r\n").encode() + b"0" * size + \
        f"\r\n--{boundary}--\r\n".encode()
    request = urllib.request.Request(url, data=body, method="POST",
                                     headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status
    except urllib.error.HTTPError as err:
        return err.code
    except (ConnectionError, urllib.error.URLError):
        return 0


def test_uploads_are_refused(app):
    """The app has no file input: Gradio's max_file_size is 0 and the upload routes answer 403, for a file
    over the limit as for an empty one, so nothing is stored to be served back."""
    with urllib.request.urlopen(app.url + "config", timeout=10) as response:
        assert json.load(response)["max_file_size"] == 0
    for size in (0, 10, 2_000_000):
        assert _post_file(app.url + "gradio_api/upload", size) in (403, 0)
    assert _post_file(app.url + "gradio_api/upload", 10) == 403
    assert _post_file(app.url + "gradio_api/component_server", 10) == 403
    assert _post_file(app.url + "gradio_api/process_recording", 10) == 403
    assert app.alive()


def _post(app, body: bytes = b"", headers: dict | None = None, chunked: bool = False) -> tuple[int, str]:
    """POST `body` to /masking: with its Content-Length, or `chunked` (64 KiB chunks, no Content-Length); or,
    given `headers`, with those and only `body`'s bytes sent as they are (the rest of the body never comes)."""
    connection = http.client.HTTPConnection("127.0.0.1", app.port, timeout=30)
    try:
        if headers is None:
            chunks = (body[i:i + 65536] for i in range(0, len(body), 65536)) if chunked else body
            connection.request("POST", "/gradio_api/call/masking", chunks, encode_chunked=chunked,
                               headers={"Content-Type": "application/json"})
        else:
            connection.putrequest("POST", "/gradio_api/call/masking")
            for name, value in {"Content-Type": "application/json", **headers}.items():
                connection.putheader(name, value)
            connection.endheaders(body)
        response = connection.getresponse()
        return response.status, response.read().decode()
    finally:
        connection.close()


def test_oversized_bodies_are_refused(app):
    """A body over MAX_BODY_BYTES is answered 413 before Gradio reads it (a 100-million-character text took
    5.5 s and 260 MB to be told it is too long): at once when its Content-Length says so, nothing else read;
    once that many bytes of a chunked body have come. A body of exactly MAX_BODY_BYTES (a text over MAX_CHARS,
    padded with spaces) reaches the handler, which answers it, both ways."""
    over = MAX_BODY_BYTES + 1
    status, reason = _post(app, headers={"Content-Length": str(over)})
    assert status == 413 and reason.startswith("The request is too large") and f"{MAX_CHARS:,}" in reason, reason
    status, reason = _post(app, f"{over:x}\r\n".encode() + b" " * over + b"\r\n",
                           headers={"Transfer-Encoding": "chunked"})
    assert status == 413 and reason.startswith("The request is too large"), reason
    body = json.dumps({"data": ["x" * (MAX_CHARS + 1), 5, 0]}).encode()
    for chunked in (False, True):
        status, answer = _post(app, body.ljust(MAX_BODY_BYTES), chunked=chunked)
        assert status == 200, answer
        with urllib.request.urlopen(app.url + f"gradio_api/call/masking/{json.loads(answer)['event_id']}",
                                    timeout=60) as response:
            stream = response.read().decode()
        assert "event: error" in stream and "too long" in stream, stream
    assert app.alive()
