"""RoBERTa from scratch: the Gradio demo (`python app.py`, a Hugging Face Space, or an API).

Layout and wiring only: the page, and which handler each event calls. demo/handlers.py answers the events (over
the tabs' views in demo/), demo/about.py writes the About tab and demo/model_notes.py the notes on the models,
demo/wiring.py is how an event reaches its handler (the shared queues, the API endpoints, the race guards). Models
are loaded once, here, from MLM_MODEL / SENTIMENT_MODEL (a folder or a Hub repo id; default the assets/ folders).
"""
from pathlib import Path

from demo import settings
from demo.serve import check_address, parse_options, serve, stop_quietly_while_loading

# First, before torch, Gradio and the models load (10 to 20 s on a 2-core CPU): a bad setting stops the app in one
# line, and --help, a bad option, a host it cannot listen on and a port in use answer at once
settings.check()
OPTIONS = check_address(parse_options()) if __name__ == "__main__" else None
if OPTIONS:  # what follows took 15 s on a quiet 2-core CPU before Gradio's "Running on": said, so it is no hang
    stop_quietly_while_loading()  # Ctrl-C meanwhile: one line, not a traceback
    print(f"app.py: loading the models and laying out the page; then serving it on port {OPTIONS.port}", flush=True)

from demo import about, explain, model_choice, model_notes, position_view
from demo.ablation_view import ablation_alt, ablation_markdown
from demo.calibration_note import calibration_note, reliability_diagram_alt
from demo.components import Number, Plot, Slider, Textbox
from demo.examples import (ANALOGIES, ATTENTION_LINK, ATTENTION_TEXT, FILL_MASK_EXAMPLES, MAP_WORDS,
                           NEIGHBOURS_WORDS, SENTIMENT_EXAMPLES, TOKENS_EXAMPLES, TOKENS_TEXT, example_label)
from demo.attention_handlers import (HEAD_API_TYPE, LAYER_API_TYPE, api_typed, attention_primer, attention_tab_hint,
                                     head_choices, layer_choices)
from demo.embedding_handlers import EMBEDDINGS_TAB
from demo.handlers import Handlers
from demo.masking_view import MASKING_COLUMNS, MASKING_TAB, PREDICTION_COLUMNS, TARGETS_WHY
from demo.models import KINDS, configure_torch, load_models, read_ablation
from demo.tokens_handlers import TOKENS_TAB
from demo.request_guards import launch_options
from demo.validation import MAX_EPOCHS, MAX_MASKS, MAX_TOP_K, keep_results
from demo.wiring import CONCURRENCY, SLOW, Wiring, api, error_box, hint, left_on_success, model_note, notice

import gradio as gr  # after demo: the package refuses a GRADIO_SERVER_PORT that is no number before Gradio reads it

configure_torch(concurrency=CONCURRENCY)  # each queue's requests share the cores (both full: twice as many)
MODELS = load_models()
handlers = Handlers(MODELS)
ABOUT = about.about_sections(MODELS)
ABLATION = read_ablation()
CFG = next((m.config for m in (MODELS.mlm, MODELS.sentiment) if m.available), None)
N_LAYERS, N_HEADS = (CFG.num_hidden_layers, CFG.num_attention_heads) if CFG else (6, 8)
HIDDEN = CFG.hidden_size if CFG else 256
FAILURES = model_notes.example_failures(MODELS)  # the showcase examples the models get wrong, checked now
NOTES = {key: model_notes.model_note(MODELS, key, FAILURES) for key in KINDS}
# the served classifier, which names the Sentiment tab, its boxes and its hint (none loaded: laid out for SST-2's);
# each answer names them again for the classifier that gave it (handlers.classify_page: a model box's choice may be a
# topic classifier, whose tab is "Classify")
ST_SERVED = MODELS.sentiment.config if MODELS.sentiment.available else None
ST_TAB = MODELS.tab_name("sentiment")
LINK_HINT = handlers.attention_hint(ATTENTION_TEXT, ATTENTION_LINK) if MODELS.mlm.available else ""
# the head that looks most at the previous token, (layer, head, share), found in the served MLM now: an example
# and the hint show it (None: no head's role is that)
PREVIOUS_HEAD = handlers.previous_token_head(ATTENTION_TEXT) if MODELS.mlm.available else None
# Winograd's schema: "big" or "small" decides what "it" is; the hint says whether the attention follows
WINOGRAD_TEXT = "The trophy did not fit in the suitcase because it was too big."
SWAP_HINT = handlers.swap_hint(WINOGRAD_TEXT, ("big", "small"), ("it", "trophy")) if MODELS.mlm.available else ""
ANALOGY_NOTE = handlers.analogy_probe_note() if MODELS.mlm.available else ""  # the shipped model's score


# Soft, with text at least 4.5:1 on its background (WCAG AA): the info lines under the labels, the labels, and
# white on the primary buttons (Soft's own: 2.5:1, 3.6:1 and 4.5:1), hovered too, in dark mode as well (Soft's
# dark hover of the primary and secondary buttons, *primary_500 under white text: 4.47:1; *primary_600: 6.3:1)
THEME = gr.themes.Soft().set(block_info_text_color="*neutral_600", block_label_text_color="*primary_700",
                             block_title_text_color="*primary_700",
                             button_primary_background_fill="*primary_600",
                             button_primary_background_fill_hover="*primary_700",
                             button_primary_background_fill_hover_dark="*primary_600",
                             button_secondary_background_fill_hover_dark="*primary_600")

ENTER = "Enter runs it; Shift+Enter starts a new line."
TEXT = {"lines": 1, "max_lines": 8}  # lines=1: Enter submits, Shift+Enter adds a line (the box grows to 8)
# a Markdown output that shows the user's text: "$$...$$" in it is text, not LaTeX (Gradio renders $$ by default)
USER_TEXT = {"latex_delimiters": []}


# The page's styles and script (screen-reader announcements, accordion states, tables kept open, the head view's
# keys): files of their own, read once
CSS = (Path(__file__).parent / "demo" / "page.css").read_text(encoding="utf-8")
PAGE_JS = (Path(__file__).parent / "demo" / "page.js").read_text(encoding="utf-8")


with gr.Blocks(title="RoBERTa from scratch") as demo:
    # how each event reaches its handler (demo/wiring.py): the compute and slow queues, the API endpoint of each
    # handler, the guards that drop an event which would only draw again what the page shows, or draw over a newer run
    wiring = Wiring(demo, handlers.chooser)
    wire, examples, model_box, guarded, drawn_state = (wiring.wire, wiring.examples, wiring.model_box,
                                                       wiring.guarded, wiring.drawn_state)
    gr.Markdown("# RoBERTa from scratch\n" + about.page_header(MODELS))  # the served classifier's task
    with gr.Tabs(overflow_behavior="wrap"):  # never a "..." menu: short names fit at 390 px, else they wrap
        with gr.Tab(KINDS["mlm"].tab, id="fill", elem_id="tab-fill"):
            notice(MODELS, "mlm")
            hint("**Try** another clue (“Berlin is the capital of &lt;mask&gt;.”: a small model often copies a word "
                 "from the sentence), two masks, or candidate words "
                 "(France, Germany, India). **Notice** how thinly a small model spreads its probability (the bars "
                 "compare the answers of one mask), how often its pretraining text held each answer, how it reads "
                 "your text (a rare word comes in pieces), and, **layer by layer**, where its answer comes from.")
            with gr.Row():
                with gr.Column() as fm_input_col:
                    fm_text = Textbox(elem_id="fm-text", label="Text with one or more <mask>", info=ENTER, **TEXT,
                                      value="Paris is the capital of <mask>.")
                    fm_error = error_box()
                    fm_k = Slider(1, MAX_TOP_K, value=5, step=1, buttons=[], label="Predictions per mask (top-k)")
                    fm_targets = Textbox("", label="Candidate words to score (optional)",
                                         placeholder="France, Germany",
                                         info="Separated by commas, semicolons or new lines (Shift+Enter); these "
                                              "words only, all of them scored whatever top-k.")
                    fm_model, fm_current = model_box("mlm", "fm")
                    fm_btn = gr.Button("Predict", variant="primary")
                with gr.Column():
                    # every mask one colour, the page's: Gradio's own drew mask 1 red and mask 2 green (wrong and
                    # right, or the Sentiment tab's negative and positive)
                    fm_filled = gr.HighlightedText(label="Completed sentence (top prediction for each mask)",
                                                   elem_id="fm-filled", color_map={
                                                       f"<mask> {i}": "#6366f1" for i in range(1, MAX_MASKS + 1)})
                    # every mask's predictions, readable scores
                    fm_view = gr.HTML(elem_id="fm-view", label="predictions_html")
                    # the exact probabilities as gr.Label values, for API clients only (the UI shows fm_view)
                    fm_labels = [gr.Label(label=f"<mask> {i + 1}", visible=False, elem_id=f"fm-label-{i + 1}")
                                 for i in range(MAX_MASKS)]
                    model_note(NOTES["mlm"])
                    with gr.Accordion("Raw pipeline output (transformers format)", open=False):
                        fm_raw = gr.JSON(label="results")
            # full width: a row per layer with its guesses (demo/layer_lens.py: the logit lens)
            with gr.Accordion("Layer by layer: where the answer comes from", open=False, elem_id="fm-layers-box"):
                fm_layers = gr.HTML(elem_id="fm-layers", label="layers_html")
                fm_layers_data = gr.JSON(visible=False, label="layers")  # the same as data, for API clients only
            # another model on the same input, side by side (a Hub model is loaded in the loading queue first)
            with gr.Accordion("Compare with another model", open=False, elem_id="fm-compare-box",
                              visible=bool(model_choice.compare_choices())):
                gr.Markdown("The same text, top-k and candidate words through another RoBERTa, side by side. "
                            "FacebookAI/roberta-base is the same architecture at 125M parameters, pretrained on "
                            "160 GB of text (Liu et al. 2019).")
                with gr.Row(elem_id="fm-compare-row"):
                    with gr.Column(scale=3):
                        fm_other = gr.Dropdown(model_choice.compare_choices(model_choice.SHIPPED), label="Compare with",
                                               value=model_choice.default_comparison(model_choice.SHIPPED),
                                               allow_custom_value=True, info=model_choice.hub_note(),
                                               elem_id="fm-other")
                    with gr.Column(scale=1, min_width=160):
                        fm_cmp_btn = gr.Button("Compare", elem_id="fm-compare-btn")
                fm_cmp_status = gr.HTML(elem_id="fm-compare-status")
                fm_cmp_error = gr.HTML(visible=False, elem_id="fm-compare-error")
                fm_compare = gr.HTML(elem_id="fm-compare", label="comparison_html")
                fm_compare_data = gr.JSON(visible=False, label="comparison")  # the same as data, for API clients only
            fm_out = [fm_filled, *fm_labels, fm_raw, fm_view]
            fm_in = [fm_text, fm_k, fm_targets, fm_model]  # the API's; the page reads the tab's model (State)
            fm_ui_in = [fm_text, fm_k, fm_targets, fm_current]  # the box may hold a model still loading
            # the page shows layer by layer for the same text and answers, computed in the same event
            fm_page = [*fm_out, fm_layers, fm_layers_data]
            fm_ui = wire([fm_btn.click, fm_text.submit, fm_targets.submit, fm_k.input, fm_current.change],
                         handlers.fill_mask, fm_in, fm_out, fm_error, "fill_mask", on_load=True,
                         page=(handlers.fill_mask_page, fm_page), ui_inputs=fm_ui_in)
            api(handlers.fill_mask_layers, [fm_text, fm_model], [fm_layers, fm_layers_data], "fill_mask_layers")
            # the model to compare with, loaded first in the loading queue, saying so meanwhile; a failure is said
            # by the comparison (the chooser remembers it)
            wiring.load_first(fm_cmp_btn.click, fm_other, fm_cmp_status, "mlm", model_choice.COMPARISON,
                              "fill_mask_compare").then(
                keep_results(handlers.fill_mask_compare, 2), [fm_text, fm_k, fm_targets, fm_current, fm_other],
                [fm_compare, fm_compare_data, fm_cmp_error], api_name="fill_mask_compare_ui",
                api_visibility="private", **SLOW)  # two models, one of them up to roberta-large's size
            api(handlers.fill_mask_compare, [*fm_in, fm_other], [fm_compare, fm_compare_data], "fill_mask_compare",
                SLOW)
            # the tab's model changed: the comparison shown (or its error) was of another model; compare with ours
            # by default when the tab runs another model, else with the first suggested one; the tab's own is not
            # offered
            fm_current.change(lambda current: (gr.update(choices=model_choice.compare_choices(current),
                                                         value=model_choice.default_comparison(current)), "",
                                               gr.update(value="", visible=False)),
                              fm_current, [fm_other, fm_compare, fm_cmp_error], queue=False,
                              api_name="fill_mask_compare_default", api_visibility="private")
            # an example clears the candidate words (a third, hidden column), or it would score only those; under
            # the Predict button, not at the tab's foot (3.7 phone screens down, after the accordions)
            with fm_input_col:
                examples([[*example, ""] for example in FILL_MASK_EXAMPLES], [fm_text, fm_k, fm_targets], fm_page,
                         fm_ui, fm_error, "fill_mask", run_inputs=fm_ui_in, columns=[0, 1])

        with gr.Tab(ST_TAB, id="sentiment", elem_id="tab-sentiment") as st_tab:
            notice(MODELS, "sentiment")
            st_hint = hint(explain.tab_hint(ST_SERVED))
            with gr.Row():
                with gr.Column() as st_input_col:
                    # a review, classified at start-up; no text for a classifier whose labels name no sentiment
                    st_text = Textbox(elem_id="st-text", label="Text", info=ENTER, **TEXT,
                                      value=explain.opening_text(ST_SERVED),
                                      placeholder=explain.text_placeholder(ST_SERVED))
                    st_error = error_box("st-error")
                    # the model box's messages name the tab as it opens ("the Classify tab needs a text classifier":
                    # the chooser's `tab_names`)
                    st_model, st_current = model_box("sentiment", "st")
                    st_btn = gr.Button("Classify", variant="primary")
                with gr.Column():
                    # every label of the classifier, however many (no num_top_classes): a chosen model has at most
                    # model_choice.LIMITS' 16, and SENTIMENT_MODEL is the operator's
                    st_label = gr.Label(label=explain.answer_label(ST_SERVED), elem_id="st-label")
                    model_note(NOTES["sentiment"])
            # fixed polarity: green = towards positive (or the classifier's second label), pink = away; for more
            # than two labels, green = towards the answer (the CSS recolours Gradio's red and purple; the
            # explanation words it)
            st_words = gr.HighlightedText(label=explain.words_label(ST_SERVED), show_legend=False, elem_id="st-words")
            st_explain = gr.Markdown(elem_id="st-explain", label="explanation", show_label=False, **USER_TEXT)
            # what if the word that pushed most were removed or negated? (demo/counterfactual.py)
            st_whatif_btn = gr.Button("What if? (counterfactual)", elem_id="st-whatif-btn")
            st_whatif_error = error_box("st-whatif-error")  # the counterfactual's own: the text's go next to it
            st_whatif = gr.Markdown(elem_id="st-whatif", label="counterfactual_markdown", show_label=False,
                                    **USER_TEXT)
            st_whatif_data = gr.JSON(visible=False, label="counterfactual")  # the same as data, for API clients only
            st_whatif_out = [st_whatif, st_whatif_data]
            st_out = [st_label, st_words, st_explain]
            # the page's answer also names the boxes, the hint and the tab for its classifier
            st_page_out = [*st_out, st_hint, st_tab]
            st_ui_in = [st_text, st_current]  # the page reads the tab's model, not a box still loading one
            st_ui = wire([st_btn.click, st_text.submit, st_current.change], handlers.classify, [st_text, st_model],
                         st_out, st_error, "classify", on_load=bool(st_text.value), ui_inputs=st_ui_in,
                         page=(handlers.classify_page, st_page_out))
            with st_input_col:  # under the text, not below What if?
                examples(SENTIMENT_EXAMPLES, st_text, st_page_out, st_ui, st_error, "classify", run_inputs=st_ui_in,
                         labels=[example_label(text) for text in SENTIMENT_EXAMPLES])
            # the text may have been edited since it was classified: classify it first, so that the answer,
            # the word colours and the counterfactual on the page are the same text's
            wire([st_whatif_btn.click], handlers.counterfactual, [st_text, st_model], st_whatif_out, st_whatif_error,
                 "counterfactual", first=(st_ui, st_page_out, st_error), ui_inputs=st_ui_in,
                 page=(handlers.counterfactual_page, st_whatif_out), queue=SLOW)
            # a new answer makes the last counterfactual (or its error) stale: cleared in the browser, at once (a
            # request of its own, on a loaded server, came back after What if?'s next answer and cleared that)
            st_explain.change(None, None, [*st_whatif_out, st_whatif_error], show_progress="hidden",
                              js="() => ['', null, {__type__: 'update', value: '', visible: false}]")
            with gr.Accordion("How far to trust the score (calibration)", open=False, elem_id="st-calibration"):
                sentiment_extras = MODELS.sentiment.extras
                gr.Markdown(calibration_note(sentiment_extras.get("metrics"), sentiment_extras.get("readme")))
                if sentiment_extras.get("reliability"):  # fullscreen: its small print, as About's figures
                    gr.Image(sentiment_extras["reliability"], show_label=False, interactive=False,
                             alt_text=reliability_diagram_alt(sentiment_extras.get("metrics")),
                             buttons=["fullscreen"], elem_id="st-reliability", elem_classes="static-figure")

        with gr.Tab(model_choice.ATTENTION_TAB, id="attention", elem_id="tab-attention"):
            notice(MODELS, "mlm", "sentiment")
            # short, as it comes before the text box (on a phone, 17 lines with the measured hints): those are
            # under the views, in "What to look for"
            hint(attention_tab_hint(PREVIOUS_HEAD))
            with gr.Row():
                with gr.Column(scale=3) as at_text_col:
                    at_text = Textbox(elem_id="at-text", label="Text", info=ENTER, **TEXT, value=ATTENTION_TEXT)
                    at_error = error_box()
                with gr.Column(scale=2):
                    with gr.Row():
                        # min_width: on a phone the two stack, so "average of heads" is not cut to "average of he…"
                        # documented to the API as numbers (`api_typed`), not Gradio's strings
                        at_layer = api_typed(gr.Dropdown(layer_choices(N_LAYERS), value=N_LAYERS, label="Layer",
                                                         allow_custom_value=True, elem_id="at-layer", min_width=200),
                                             LAYER_API_TYPE)
                        at_head = api_typed(gr.Dropdown(head_choices(N_HEADS), value="average", label="Head",
                                                        allow_custom_value=True, elem_id="at-head", min_width=200),
                                            HEAD_API_TYPE)
                    # a layer or head typed in: said next to them, whichever event reads them
                    at_view_error = error_box("at-view-error", fields=("Layer", "Head"))
                    at_model, at_current = model_box("attention", "at", model_choice.attention_choices(), "mlm",
                                                     handlers.attention_model, [at_layer, at_head],
                                                     [at_layer, at_head])
                    at_btn = gr.Button("Show attention", variant="primary")
            with gr.Accordion("What attention computes, in 30 seconds", open=False, elem_id="at-primer"):
                gr.Markdown(attention_primer(N_LAYERS, N_HEADS, HIDDEN))
            gr.Markdown("## Attention views", elem_classes="section-title")
            at_notes = gr.Markdown(elem_id="at-notes", label="notes", show_label=False, **USER_TEXT)
            # Only the visible sub-tab is drawn (a matplotlib figure costs ~0.5 s): `at_visible` names it, the
            # events draw that one only and leave the others as they are (a late event must not blank a view
            # just drawn), and opening a sub-tab draws its view.
            at_visible = gr.State("heads")
            at_all = Textbox("all", visible=False)  # the API endpoints' `view`: every view, unless asked
            with gr.Tabs(elem_id="at-views", overflow_behavior="wrap"):  # no "..." menu on a phone
                with gr.Tab("Head view", id="heads") as at_tab_heads:
                    at_heads = gr.HTML(elem_id="at-heads", label="head_view_html")
                with gr.Tab("Heatmap", id="heatmap") as at_tab_heat:
                    at_heat = Plot(label="Attention heatmap", show_label=False, elem_id="at-heat")
                    at_heat_text = gr.HTML(elem_id="at-heat-text", label="heatmap_text")
                with gr.Tab("All heads of the layer", id="grid") as at_tab_grid:
                    at_grid = Plot(label="All heads of the layer", show_label=False, elem_id="at-grid")
                    # the heads' roles: the figure's text version
                    at_grid_text = gr.HTML(elem_id="at-grid-text", label="heads_text")
                with gr.Tab("Rollout across layers", id="rollout") as at_tab_roll:
                    at_roll = Plot(label="Attention rollout (Abnar & Zuidema 2020)", show_label=False,
                                      elem_id="at-roll")
                    at_roll_text = gr.HTML(elem_id="at-roll-text", label="rollout_text")
                with gr.Tab("Where one token attends", id="token") as at_tab_token:
                    at_token = gr.Dropdown(label="Token", choices=[], allow_custom_value=True, elem_id="at-token")
                    at_token_error = error_box("at-token-error", fields=("Token",))
                    at_bars = Plot(label="Where the token attends", show_label=False, elem_id="at-bars")
                    at_bars_text = gr.HTML(elem_id="at-bars-text", label="bars_text")  # its weights as a table
            if LINK_HINT or SWAP_HINT:  # measured in the shipped MLM at start-up
                # the fill-mask model's, whichever model the tab runs (an example runs the classifier)
                with gr.Accordion("What to look for: “it” in the fill-mask model's heads", open=False,
                                  elem_id="at-look-for"):
                    gr.Markdown("\n\n".join(text for text in (LINK_HINT, SWAP_HINT) if text))
            at_in = [at_text, at_layer, at_head, at_model]
            at_out = [at_heat, at_grid, at_roll, at_bars, at_token, at_notes, at_heads, at_layer, at_head,
                      at_heat_text, at_grid_text, at_roll_text, at_bars_text]
            # the text and model the views were drawn for: the layer, head, token and sub-tab events read these,
            # so that an edited but unsubmitted text is not drawn beside the last one's notes and token picker
            at_drawn_text, at_drawn_model = drawn_state(ATTENTION_TEXT), drawn_state("mlm")
            wiring.drawn_input(at_token)  # ... and the token it picked: an event that read the last text's is dropped
            at_page = [*at_out, at_drawn_text, at_drawn_model]
            # the page reads the tab's model (a State), not a box that may hold a model still loading
            at_ui_in = [at_text, at_layer, at_head, at_current, at_visible]
            at_ui = wire([at_btn.click, at_text.submit, at_current.change], handlers.attention, [*at_in, at_all],
                         at_out, at_error, "attention", on_load=True, ui_inputs=at_ui_in,
                         keep_undrawn=True, page=(handlers.attention_page, at_page), queue=SLOW,
                         clears=[at_view_error, at_token_error])
            # a layer or head change redraws only the visible view, if it depends on it (the attention is cached)
            # the API's: a token of its own, None by default (the handler picks one: the page's picker was laid out
            # with the start-up sentence's "it", token 8, which the API gave every caller's text)
            api_view_token = Number(None, precision=0, visible=False, label="token")
            at_view_in = [at_text, at_layer, at_head, api_view_token, at_model]
            at_drawn_in = [at_drawn_text, at_layer, at_head, at_token, at_drawn_model]  # the page's
            wire([at_layer.input], handlers.attention_layer, [*at_view_in, at_all],
                 [at_heat, at_grid, at_bars, at_heads, at_heat_text, at_grid_text, at_bars_text], at_view_error,
                 "attention_layer", ui_inputs=[*at_drawn_in, at_visible], keep_undrawn=True, skip_repeats=True,
                 queue=SLOW, clears=[at_error], shows=[at_token_error])
            wire([at_head.input], handlers.attention_head, [*at_view_in, at_all],
                 [at_heat, at_bars, at_heads, at_heat_text, at_bars_text], at_view_error, "attention_head",
                 ui_inputs=[*at_drawn_in, at_visible], keep_undrawn=True, skip_repeats=True, queue=SLOW,
                 clears=[at_error], shows=[at_token_error])
            api_token = Number(1, precision=0, visible=False, label="token")  # the API's: the picker starts empty
            wire([at_token.input], handlers.attention_token, [*at_view_in[:3], api_token, at_model],
                 [at_bars, at_bars_text], at_token_error, "attention_token", ui_inputs=at_drawn_in,
                 skip_repeats=True, queue=SLOW)
            for tab, view, output in [(at_tab_heads, "heads", [at_heads]),
                                      (at_tab_heat, "heatmap", [at_heat, at_heat_text]),
                                      (at_tab_grid, "grid", [at_grid, at_grid_text]),
                                      (at_tab_roll, "rollout", [at_roll, at_roll_text]),
                                      (at_tab_token, "token", [at_bars, at_bars_text])]:
                tab.select(lambda view=view: view, None, at_visible, queue=False, api_name=f"attention_visible_{view}",
                           api_visibility="private")
                # reopened with nothing changed, a sub-tab is not drawn again. Only the token's own reads the
                # token (a token the new text replaced drops the event that read it). A message about a picker
                # shows next to it; the token's stays after a success, as after a layer change (`wire`'s `shows`)
                token = at_token if view == "token" else gr.State(None)
                view_in = [at_drawn_text, at_layer, at_head, token, at_drawn_model, gr.State(view)]
                shows = [at_token_error] if view == "token" else []
                boxes = [at_view_error, *shows]
                view_out = [*output, at_error, *boxes]
                drawn = keep_results(handlers.attention_view, len(output), others=[box.fields for box in boxes])
                tab.select(guarded(left_on_success(drawn, len(shows)), f"attention_view_{view}", view_out,
                                   skip_repeat=True, inputs=view_in),
                           view_in, view_out, api_name=f"attention_view_{view}", api_visibility="private", **SLOW)
            with at_text_col:  # under the text box, not below the views and What to look for
                examples([[ATTENTION_TEXT, N_LAYERS, "average", "mlm"],
                          *([[ATTENTION_TEXT, *PREVIOUS_HEAD[:2], "mlm"]] if PREVIOUS_HEAD else []),
                          [WINOGRAD_TEXT, 1, 1, "mlm"],
                          ["Not bad at all, a really fun film.", N_LAYERS, "average", "sentiment"]], at_in, at_page,
                         at_ui, at_error, "attention", run_inputs=[*at_in, at_visible],
                         model_state=(at_model, at_current))

        with gr.Tab(TOKENS_TAB, id="tokens", elem_id="tab-tokens"):
            notice(MODELS, "mlm")
            hint("**Try** a rare word, a number, an emoji or another language. **Notice** that a common word is one "
                 "token together with the space before it (␣the), a rare one comes in pieces, and no text is ever "
                 "unknown: every byte is a token. **Merge by merge** shows how byte-level BPE builds a word from "
                 "its bytes.")
            with gr.Row():
                with gr.Column(scale=2, elem_id="tk-input-col") as tk_input_col:
                    tk_text = Textbox(elem_id="tk-text", label="Text", info=ENTER, **TEXT, value=TOKENS_TEXT)
                    tk_error = error_box()
                    tk_model, tk_current = model_box("mlm", "tk", tab=TOKENS_TAB)
                    tk_btn = gr.Button("Tokenize", variant="primary")
                with gr.Column(scale=3):
                    gr.Markdown("## The text as tokens", elem_classes="section-title")
                    tk_view = gr.HTML(elem_id="tk-view", label="tokens_html")
                    tk_data = gr.JSON(visible=False, label="tokens")  # the same as data, for API clients only
            with gr.Accordion("Merge by merge: how BPE builds one word from its bytes", open=True,
                              elem_id="tk-merges-box"):
                tk_word = gr.Dropdown(label="Word of the text", choices=[], allow_custom_value=True,
                                      elem_id="tk-word")
                tk_word_error = error_box()
                tk_merges = gr.HTML(elem_id="tk-merges", label="merges_html")
                tk_merges_data = gr.JSON(visible=False, label="merges")  # the same as data, for API clients only
            tk_merges_out = [tk_merges, tk_merges_data]
            tk_out = [tk_view, tk_data, tk_word, *tk_merges_out]
            tk_ui = wire([tk_btn.click, tk_text.submit, tk_current.change], handlers.tokens, [tk_text, tk_model],
                         tk_out, tk_error, "tokens", on_load=True, ui_inputs=[tk_text, tk_current],
                         clears=[tk_word_error])  # a word of the text just replaced
            # the API's word: an example (the picker's own value is empty until a text is tokenized)
            api_word = Textbox(" tokenization", visible=False, label="word")
            wire([tk_word.input], handlers.bpe_merges, [api_word, tk_model], tk_merges_out, tk_word_error, "bpe_merges",
                 ui_inputs=[tk_word, tk_current], skip_repeats=True)
            with tk_input_col:  # the examples under the text box, not below a long merge table
                examples([[text] for text in TOKENS_EXAMPLES], [tk_text], tk_out, tk_ui, tk_error, "tokens",
                         run_inputs=[tk_text, tk_current])

        with gr.Tab(EMBEDDINGS_TAB, id="embeddings", elem_id="tab-embeddings"):
            gr.Markdown("The model's first step turns every token into a list of numbers, its *embedding* "
                        f"({HIDDEN} numbers for the shipped model), learned in training, and adds a second learned "
                        "list for its position in the text. The same word table scores the candidate words at the "
                        "end (the MLM head's output layer is tied to it). Here you look at those tables without "
                        "running the model: words it uses in similar places get similar lists.")
            notice(MODELS, "mlm")
            hint("**Try** a word's nearest neighbours, an analogy, a map of your own words. **Notice** that words "
                 "used in the same places sit close together, opposites included (good and bad), and that "
                 "neighbouring positions were learned to look alike.")
            em_model, em_current = model_box("mlm", "em", tab=EMBEDDINGS_TAB)
            # four views, each with its own inputs and its own error box (a typo in one leaves the others alone)
            with gr.Row():
                with gr.Column(elem_id="em-nb-col") as em_nb_col:
                    gr.Markdown("## Nearest words", elem_classes="section-title")
                    em_word = Textbox(NEIGHBOURS_WORDS[0], label="Word", info="Enter runs it.",
                                      elem_id="em-word")
                    em_nb_error = error_box()
                    em_k = Slider(1, 30, value=10, step=1, buttons=[], label="Neighbours")
                    em_words_only = gr.Checkbox(True, label="Only tokens that begin a word (a space, then a letter "
                                                            "or digit)")
                    em_btn = gr.Button("Find neighbours", variant="primary")
                    em_neighbours = gr.HTML(elem_id="em-neighbours", label="neighbours_html")
                    # the same as data, for API clients only
                    em_neighbours_data = gr.JSON(visible=False, label="neighbours")
                with gr.Column(elem_id="em-an-col") as em_an_col:
                    gr.Markdown("## Analogy: a is to b as c is to ?", elem_classes="section-title")
                    with gr.Row():
                        # "Word a", as the messages name them (a field named "a" said nothing out of context)
                        em_abc = [Textbox(word, label=f"Word {name}", elem_id=f"em-{name}", min_width=80)
                                  for word, name in zip(ANALOGIES[0], "abc")]
                    em_an_error = error_box()
                    em_an_btn = gr.Button("Solve", variant="primary")
                    em_analogy = gr.HTML(elem_id="em-analogy", label="analogy_html")
                    em_analogy_data = gr.JSON(visible=False, label="analogy")  # the same as data, for API clients only
                    if ANALOGY_NOTE:
                        gr.Markdown(ANALOGY_NOTE, elem_classes="model-note", elem_id="em-probe")
            with gr.Row():
                with gr.Column(elem_id="em-map-col"):
                    gr.Markdown("## Word map", elem_classes="section-title")
                    em_map_words = Textbox(MAP_WORDS, label="Words (3 to 30, separated by commas, semicolons, new "
                                                            "lines or spaces)",
                                           info="Enter runs it; Shift+Enter starts a new line.",
                                           elem_id="em-map-words", max_lines=4)
                    em_map_error = error_box()
                    em_map_btn = gr.Button("Draw the map", variant="primary")
                    em_map = Plot(label="Word map", show_label=False, elem_id="em-map")
                    # the left-out words, the map as a table
                    em_map_text = gr.HTML(elem_id="em-map-text", label="map_text")
                    gr.Markdown("Each dot is a word's embedding squeezed into two numbers: the axes are the two "
                                "directions in which these words' embeddings differ most (principal components; "
                                "the percentage is how much of their differences each one shows). Near means "
                                "used alike; the axes themselves have no names.", elem_classes="hint")
                with gr.Column(elem_id="em-pos-col"):
                    gr.Markdown("## Position embeddings", elem_classes="section-title")
                    em_pos_error = error_box()
                    em_positions = Plot(label="Position embeddings", show_label=False, elem_id="em-positions")
                    # the figure in numbers
                    em_positions_text = gr.HTML(elem_id="em-positions-text", label="positions_text")
                    gr.Markdown(position_view.positions_note(MODELS.mlm.config if MODELS.mlm.available else CFG),
                                elem_classes="hint")
            em_changed = [em_current.change]  # another model redraws every view
            em_nb_in = [em_word, em_k, em_words_only]
            em_nb_out, em_an_out = [em_neighbours, em_neighbours_data], [em_analogy, em_analogy_data]
            em_nb_ui = wire([em_btn.click, em_word.submit, em_k.input, em_words_only.input, *em_changed],
                            handlers.neighbours, [*em_nb_in, em_model],
                            em_nb_out, em_nb_error, "neighbours", on_load=True, ui_inputs=[*em_nb_in, em_current])
            # the API's k and words_only (the page shows 10 tokens that begin a word): hidden inputs with the defaults
            em_an_in = [*em_abc, Number(10, precision=0, visible=False, label="k"), gr.Checkbox(True, visible=False)]
            em_an_ui = wire([em_an_btn.click, *[box.submit for box in em_abc], *em_changed], handlers.analogy,
                            [*em_an_in, em_model], em_an_out, em_an_error, "analogy", on_load=True,
                            ui_inputs=[*em_an_in, em_current])
            wire([em_map_btn.click, em_map_words.submit, *em_changed], handlers.word_map, [em_map_words, em_model],
                 [em_map, em_map_text], em_map_error, "word_map", on_load=True, ui_inputs=[em_map_words, em_current])
            wire(em_changed, handlers.positions, [em_model], [em_positions, em_positions_text], em_pos_error,
                 "positions", on_load=True, ui_inputs=[em_current])
            with em_nb_col:  # each section's examples under its own results
                examples([[word] for word in NEIGHBOURS_WORDS], [em_word], em_nb_out, em_nb_ui, em_nb_error,
                         "neighbours", run_inputs=[*em_nb_in, em_current])
            with em_an_col:
                examples([list(row) for row in ANALOGIES], em_abc, em_an_out, em_an_ui, em_an_error, "analogy",
                         run_inputs=[*em_an_in, em_current], labels=[f"{a} : {b} :: {c} : ?" for a, b, c in ANALOGIES])

        with gr.Tab(MASKING_TAB, id="masking", elem_id="tab-masking"):
            gr.Markdown("BERT masked its training data once, at preprocessing (*static*; it duplicated the data "
                        "10 times with different masks). RoBERTa draws a new mask every time a sentence is fed "
                        f"to the model (*dynamic*). {TARGETS_WHY} Same sentence, same seed, epoch by epoch:")
            notice(MODELS, "mlm")
            hint("**Try** 40 epochs and another seed. **Notice** that the one static mask asks for the same ~15% "
                 "of the sentence every epoch, BERT's 10 copies cycle, and dynamic masking keeps asking for new "
                 "positions until nearly all of the sentence has been a target.")
            with gr.Row():
                with gr.Column(scale=3):
                    mk_text = Textbox(elem_id="mk-text", label="Sentence", info=ENTER, **TEXT,
                                      value="The quick brown fox jumps over the lazy dog near the river bank.")
                    mk_error = error_box()
                # min_width: the Row's least share cut its "40" to "4(" at 768-1024 px
                mk_epochs = Slider(1, MAX_EPOCHS, value=12, step=1, buttons=[], label="Epochs", min_width=240)
                mk_seed = Number(value=0, precision=0, label="Seed", elem_id="mk-seed")
                mk_btn = gr.Button("Mask", variant="primary")
            # the examples under the controls (filled in below, once their event exists): the Tab order follows the
            # screen, Epochs, Seed and Mask, then the examples
            mk_examples_col = gr.Column()
            # what the hint asks to notice, before the epochs: under them it was 10 phone screens down (more at 40)
            gr.Markdown("## What each scheme showed", elem_classes="section-title")
            # the two tables as Markdown (handlers.masking_page), as wide as their words, headers wrapping on a phone;
            # a Dataframe's columns were fixed shares of a narrow box, which wrapped every name over 3-4 lines. The
            # API's outputs are the rows, in Dataframes of their own that the page does not show
            mk_stats_view = gr.Markdown(elem_id="mk-stats", label="stats_table", show_label=False, **USER_TEXT)
            mk_stats = gr.Dataframe(headers=MASKING_COLUMNS, label="What each scheme showed", interactive=False,
                                    visible=False)
            gr.Markdown("## Epoch by epoch", elem_classes="section-title")
            mk_table = gr.HTML(elem_id="mk-table", label="epochs_html")
            mk_plot = Plot(label="Coverage against epochs", show_label=False, elem_id="mk-plot")
            mk_plot_text = gr.HTML(elem_id="mk-plot-text", label="coverage_text")  # the figure as text
            gr.Markdown("## Predictions at the targets", elem_classes="section-title")
            mk_preds_view = gr.Markdown(elem_id="mk-preds", label="predictions_table", show_label=False, **USER_TEXT)
            mk_preds = gr.Dataframe(headers=PREDICTION_COLUMNS, interactive=False, visible=False,
                                    label="The MLM's top-1 prediction at every target of the last epoch")
            model_note(NOTES["mlm"])
            mk_out = [mk_table, mk_stats, mk_plot, mk_preds, mk_plot_text]  # the text version last: API order kept
            mk_page_out = [*mk_out, mk_stats_view, mk_preds_view]
            # the button, Enter in a box, moving the slider (mouse or keys) or changing the seed (typed, or its
            # arrows) reruns it (a table that no longer matched its controls looked current); any of them with
            # nothing changed since the last run (Enter after a change that already ran, a second click) does
            # not run it again: the same seed draws the same masks
            mk_ui = wire([mk_btn.click, mk_text.submit, mk_epochs.input, mk_seed.input, mk_seed.submit],
                         handlers.masking, [mk_text, mk_epochs, mk_seed], mk_out, mk_error, "masking", on_load=True,
                         page=(handlers.masking_page, mk_page_out), skip_repeats=True)
            with mk_examples_col:  # above the tables, not below them
                examples([["The quick brown fox jumps over the lazy dog near the river bank.", 12, 0],
                          ["Paris is the capital of France and the largest city of the country.", 40, 1]],
                         [mk_text, mk_epochs, mk_seed], mk_page_out, mk_ui, mk_error, "masking")
            gr.Markdown(ablation_markdown(ABLATION), elem_classes="section-title")
            if "curves" in ABLATION:
                gr.Image(ABLATION["curves"], label="Ablation curves", show_label=False, interactive=False,
                         buttons=[], elem_classes="static-figure", alt_text=ablation_alt(ABLATION.get("results")))

        with gr.Tab("About", id="about", elem_id="tab-about"):
            gr.Markdown("## The models\n" + ABOUT["intro"])
            with gr.Row(elem_classes="about-cards"):
                for key in KINDS:
                    with gr.Column(min_width=300):
                        gr.Markdown(ABOUT[f"{key}_card"], elem_classes="about-card")
                        for figure in ABOUT[f"{key}_figures"]:  # each with what it covers, the card's first
                            gr.Markdown(figure.caption, elem_classes="about-caption")
                            # fullscreen: the figures hold small print, which a phone's column cannot show
                            gr.Image(figure.path, label="Training curves", show_label=False, interactive=False,
                                     buttons=["fullscreen"], alt_text=figure.alt, elem_classes="static-figure")
            gr.Markdown("## Compared with the MiniRoBERTa reference\n" + ABOUT["comparison"])
            # beside the reference, not at the foot of a long page
            with gr.Accordion("RoBERTa vs BERT", open=False):
                gr.Markdown(ABOUT["roberta_vs_bert"])
            with gr.Accordion("Architecture and parameter counts", open=False):
                gr.Markdown(ABOUT["architecture"])
            with gr.Accordion("Training recipe", open=False):
                gr.Markdown(ABOUT["recipe"])

wiring.queue()  # the compute, slow and loading queues, each with its own bound (APP_QUEUE_SIZE waiting)

if __name__ == "__main__":
    serve(demo, OPTIONS, theme=THEME, css=CSS, js=PAGE_JS, **launch_options())  # the request guards
