"""The Gradio demo's building blocks (app.py lays them out and wires them):

- models.py loads the two models once, at start-up; handlers.py answers the events, one plain method per
  API endpoint, over the tabs' views;
- validation.py checks the inputs and turns errors into plain messages; tokens_view.py shows a text as the
  model reads it; formatting.py holds the shared text helpers;
- fill_mask_view.py, explain.py (integrated gradients, attention, rollout), head_view.py and head_roles.py
  (the Attention tab's head view, and what each head mostly does), counterfactual.py (the
  Sentiment tab's "What if?"), masking_view.py and ablation_view.py: what each tab shows; about.py: the
  About tab and the notes on the models;
- figures.py draws; examples.py holds the example inputs; uploads.py refuses file uploads;
  worst_case.py holds the hostile inputs the tests and benchmarks send.

Nothing here imports training code (`train/`).
"""
