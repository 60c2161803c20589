"""app.py's wiring, imported in this process with the tiny fixture models (no server): every event that runs a
model shares one queue, and the public endpoints are there."""
import importlib
import sys

import pytest
import torch


@pytest.fixture(scope="module")
def app(tiny_mlm_dir, tiny_clf_dir):
    """`import app` with the tiny models; the torch thread count it sets and the module are undone after."""
    patch = pytest.MonkeyPatch()
    for name, value in (("MLM_MODEL", str(tiny_mlm_dir)), ("SENTIMENT_MODEL", str(tiny_clf_dir)),
                        ("GRADIO_ANALYTICS_ENABLED", "False")):
        patch.setenv(name, value)
    threads = torch.get_num_threads()
    sys.modules.pop("app", None)
    try:
        yield importlib.import_module("app")
    finally:
        sys.modules.pop("app", None)
        torch.set_num_threads(threads)
        patch.undo()


def test_every_compute_event_shares_one_concurrency_group(app):
    """Every event that runs a handler, the examples' included (gr.Examples' run_on_click events used to get
    a concurrency group each: /fill_mask_1, /classify_1...), is in the one "compute" group with the default
    limit (APP_CONCURRENCY)."""
    events = [{"api_name": f.api_name, "fn": getattr(f.fn, "__qualname__", None), "concurrency_id": f.concurrency_id,
               "limit": f.concurrency_limit, "queue": f.queue} for f in app.demo.fns.values()]
    handler_events = [e for e in events if (e["fn"] or "").startswith("Handlers.")]
    compute = [e for e in handler_events if e["fn"] != "Handlers.attention_model"]
    assert {e["fn"].split(".")[1] for e in compute} == {"fill_mask", "fill_mask_layers", "classify",
                                                        "counterfactual", "attention", "attention_token",
                                                        "attention_layer", "attention_head", "attention_view",
                                                        "masking"}
    # the nine API endpoints, their nine UI events (errors shown next to the input), the four examples, the
    # five attention sub-tabs (each draws its view when opened) and What if?'s classification of the text first
    assert len(compute) == 28
    assert [e["api_name"] for e in compute if e["fn"] == "Handlers.classify"].count("counterfactual_first_ui") == 1
    assert [e["api_name"] for e in compute if e["fn"] == "Handlers.attention_view"] == [
        f"attention_view_{view}" for view in ("heads", "heatmap", "grid", "rollout", "token")]
    # the attention tab's model box loads in the loading queue, as the other tabs' do
    (box,) = [e for e in handler_events if e["fn"] == "Handlers.attention_model"]
    assert (box["api_name"], box["concurrency_id"]) == ("at_model", "load")
    public = {e["api_name"] for e in compute if e["api_name"] in ("fill_mask", "fill_mask_layers", "classify",
                                                                  "counterfactual", "attention", "attention_token",
                                                                  "masking")}
    assert len(public) == 7
    for e in compute:
        assert (e["concurrency_id"], e["limit"], e["queue"]) == ("compute", "default", True), e
    assert not any(e["api_name"].endswith("_1") for e in events), [e["api_name"] for e in events]
    assert all(not e["queue"] for e in events if e["api_name"].endswith("_example"))  # filling inputs only


def test_the_layer_view_follows_every_new_fill_mask_answer(app):
    """The layer-by-layer view runs whenever the predictions view changes (a click, Enter, an example, another
    model, the page opening), on the text and model box of the tab, so it always belongs to the answer shown."""
    (view_event,) = [f for f in app.demo.fns.values() if f.api_name == "fill_mask_layers_ui"]
    (fill,) = [f for f in app.demo.fns.values() if f.api_name == "fill_mask_ui"]
    predictions = fill.outputs[-2]  # the readable view (the error box comes last)
    assert predictions.elem_id == "fm-view"
    assert view_event.targets == [(predictions._id, "change")]
    assert [block.elem_id for block in view_event.inputs] == ["fm-text", "fm-model"]
    assert view_event.outputs[0].elem_id == "fm-layers"


def test_start_up_notes_come_from_the_loaded_models(app):
    assert set(app.NOTES) == {"mlm", "sentiment"} and all("parameters" in note for note in app.NOTES.values())
    assert (app.N_LAYERS, app.N_HEADS) == (2, 4)  # read from the tiny models' config
    assert "not available" not in app.ABOUT["architecture"]


def test_a_fill_mask_example_clears_the_candidate_words(app):
    """An example sets the text and top-k and empties the candidate words (a hidden third column): words left
    in that box ("Paris, France") would otherwise be all the example scores. The examples show two columns."""
    from demo.examples import FILL_MASK_EXAMPLES

    (load,) = [f for f in app.demo.fns.values() if f.api_name == "fill_mask_example"]
    (run,) = [f for f in app.demo.fns.values() if f.api_name == "fill_mask_example_run"]
    assert [c.label for c in load.outputs] == ["Text with one or more <mask>", "Predictions per mask (top-k)",
                                               "Candidate words to score (optional)"]
    assert run.inputs[:3] == load.outputs  # the example runs on the values it set
    (dataset,) = load.inputs
    shown = dataset.get_config()
    assert shown["samples"] == [list(example) for example in FILL_MASK_EXAMPLES]  # the display is unchanged
    assert shown["headers"] == ["Text with one or more <mask>", "Predictions per mask (top-k)"]
    for i, sample in enumerate(shown["samples"]):  # what a click on the i-th example sets, as the page sends it
        text, top_k, targets = load.fn((i, sample))
        assert (text["value"], top_k["value"], targets["value"]) == (*FILL_MASK_EXAMPLES[i], "")
