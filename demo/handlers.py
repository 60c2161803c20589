"""What the app's buttons do: plain functions of plain values, testable without a browser.

`Handlers(models)` holds the models loaded once at start-up (`demo.models.load_models`) and exposes one
method per API endpoint, each defined by its tab's class: `fill_mask_handlers`, `sentiment_handlers`,
`attention_handlers`, `masking_handlers`, `tokens_handlers`, `embedding_handlers` (over `handler_base`: the
models, a Hub model chosen in a tab). Each method checks its inputs (`demo.validation`), runs the model, and
hands the results to the tab's views (`fill_mask_view`, `layer_lens`, `explain`, `masking_view`, `figures`...).
Bad input raises `gr.Error` with a plain message; other failures become a generic `gr.Error`
(`validation.user_errors`). Truncated inputs give a `gr.Warning` (a Python warning outside Gradio); a long
review that the Sentiment tab reads in windows says so in its explanation.
"""
from __future__ import annotations

from .attention_handlers import AttentionHandlers
from .embedding_handlers import EmbeddingHandlers
from .fill_mask_handlers import FillMaskHandlers
from .masking_handlers import MaskingHandlers
from .sentiment_handlers import SentimentHandlers
from .tokens_handlers import TokensHandlers


class Handlers(FillMaskHandlers, SentimentHandlers, AttentionHandlers, MaskingHandlers, TokensHandlers,
               EmbeddingHandlers):
    """Every tab's handlers over one set of models (and one chooser of Hub models): what app.py wires."""
