"""The Gradio demo's building blocks (app.py lays them out and wires them):

- models.py loads the two models once, at start-up; handlers.py answers the events, one plain method per
  API endpoint, over the tabs' views: its `Handlers` joins one class per tab, fill_mask_handlers.py,
  sentiment_handlers.py, attention_handlers.py, masking_handlers.py, tokens_handlers.py and
  embedding_handlers.py, over handler_base.py (the models, a Hub model chosen in a tab);
- validation.py checks the inputs and turns errors into plain messages; tokens_view.py shows a text as the
  model reads it; formatting.py holds the shared text helpers;
- fill_mask_view.py, explain.py (integrated gradients, attention, rollout), head_view.py and head_roles.py
  (the Attention tab's head view, and what each head mostly does), counterfactual.py (the
  Sentiment tab's "What if?"), masking_view.py, ablation_view.py and calibration_note.py (the Sentiment tab's
  calibration note): what each tab shows; about.py: the About tab; model_notes.py: the note beside each tab's
  result; model_facts.py: what each model's metrics.json says, for both;
- layer_lens.py (fill mask layer by layer), bpe_view.py (the Tokens tab's merges), embedding_view.py,
  word_map.py and position_view.py (the Embeddings tab's word vectors, map of words and positions),
  training_counts.py (how often the pretraining text held each token);
- model_choice.py: which model a tab runs (the shipped one or a Hub id, loaded on first use); repeats.py: which
  events would only draw again what the page shows, and which runs are out of date;
- wiring.py: how an event reaches its handler (error boxes, queues, the guards against stale redraws);
- figures.py draws; examples.py holds the example inputs; request_guards.py refuses file uploads, oversized bodies
  and calls of no public endpoint; worst_case.py holds the hostile inputs the tests and benchmarks send;
  components.py the slider, number field and plot where Gradio's own fall short; byte_level.py the byte-level BPE
  alphabet (formatting builds on it); serve.py `python app.py`'s options, --help and a port in use; settings.py
  the environment variables the app reads, each checked as it starts (the standard library only: answered at
  once); page.css and page.js are the page's styles and script.

Nothing here imports training code (`train/`).
"""
from . import settings as _settings

# Gradio reads GRADIO_SERVER_PORT as it is imported: a value that is no number is said in one line before any module
# of the package imports Gradio (app.py imports the package first)
_settings.refuse_a_port_variable_that_is_no_number()
