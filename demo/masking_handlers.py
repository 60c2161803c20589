"""The Static vs dynamic masking tab's handler (`MaskingHandlers`): which tokens each scheme masks epoch by
epoch, how much of the text they cover, and what the fill-mask model predicts there (`masking_view`)."""
from __future__ import annotations

import torch

from . import figures
from .handler_base import HandlerBase, KeptResults
from .masking_view import (MASKING_COLUMNS, PREDICTION_COLUMNS, PREDICTIONS_SAID, SCHEMES, coverage_html,
                           data_markdown, masking_stats, masking_table, mlm_predictions, simulate_masking)
from .model_choice import ModelChooser
from .models import Models
from .tokens_view import Tokens, tokenize
from .validation import MAX_EPOCHS, MAX_SEED, clean_text, fail, parse_int, user_errors, warn_truncated

MASKINGS_KEPT = 8  # outputs kept: the tab's examples and a text run again (a seed moved back) are not computed again


class MaskingHandlers(HandlerBase):
    def __init__(self, models: Models, chooser: ModelChooser | None = None):
        super().__init__(models, chooser)
        self._maskings = KeptResults(MASKINGS_KEPT)  # per pipeline that reads the text: (text, epochs, seed) -> outputs

    @user_errors
    def masking(self, text, epochs=10, seed=0):
        """(HTML table epoch by epoch, summary rows, coverage plot, MLM predictions at the last epoch, the coverage
        plot as text). A text, epochs and seed run lately are not computed again, and their figure, the same
        object, is not rendered again."""
        return self._kept_masking(text, epochs, seed)

    @user_errors
    def masking_page(self, text, epochs=10, seed=0):
        """`masking` as the page shows it: its outputs (the two tables' rows for the API), then the same two tables
        as the page lays them out (`masking_view.data_markdown`: the statistics, then the predictions)."""
        outputs = self._kept_masking(text, epochs, seed)
        _, stats, _, predictions, _ = outputs
        return (*outputs, data_markdown(MASKING_COLUMNS, stats),
                data_markdown(PREDICTION_COLUMNS, predictions, PREDICTIONS_SAID))

    def _kept_masking(self, text, epochs, seed) -> tuple:
        """`masking`'s outputs for the inputs as sent: checked, then computed or found among those kept."""
        mlm = self.models.mlm
        loaded = mlm if mlm.available else self._need("sentiment")  # its tokenizer, at least
        tokenizer, max_length = loaded.tokenizer, loaded.config.max_length
        text = clean_text(text).strip()  # a trailing space or newline would be a token of its own, and a draw
        epochs = parse_int(epochs, "Epochs", 1, MAX_EPOCHS)
        seed = parse_int(seed, "Seed", 0, MAX_SEED)
        tokens = tokenize(tokenizer, text, max_length)
        if tokens.truncated:
            warn_truncated(max_length)
        if not tokens.has_words:  # spaces between mask tokens are no words either
            raise fail("The text has no ordinary tokens to mask, only special ones such as the mask token.")
        return self._maskings.get(loaded.pipeline, (text, epochs, seed),
                                  lambda: self._masking(tokenizer, tokens, epochs, seed))

    def _masking(self, tokenizer, tokens: Tokens, epochs: int, seed: int) -> tuple:
        """`masking`'s outputs for the checked `tokens` (`masking` keeps them)."""
        mlm = self.models.mlm
        runs = simulate_masking(tokenizer, torch.tensor([tokens.ids]), epochs, seed)
        stats, curves = masking_stats(tokens, runs)
        predictions = mlm_predictions(mlm.model, tokenizer, tokens, runs) if mlm.available else [
            ["(the fill-mask model is not available)", None, "", "", "", "", None, ""]]
        return (masking_table(tokenizer, tokens, runs), stats, figures.coverage_plot(curves, SCHEMES), predictions,
                coverage_html(curves, tokens))
