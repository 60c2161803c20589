"""The README's figures of what the app shows with the shipped models, computed as the app computes them: the
Sentiment tab's first example before and after calibration (`explain.before_calibration`, which the handler's
`explain.calibration_said` line says), the previous-token head found at start-up (`previous_token_head` on the
Attention tab's text, as app.py finds it) and the share of the tokens that brought half of the MLM's climb (the
About tab's figure of every phase, `about.model_figures`). A figure that no longer matches names the README line
to update. (Marked slow: the shipped models take several seconds to load.)"""
import re

import pytest

from demo import about, explain
from demo.examples import ATTENTION_TEXT, SENTIMENT_EXAMPLES
from demo.formatting import format_probability
from demo.handlers import Handlers
from demo.models import load_models
from helpers import ROOT

ASSETS = ROOT / "assets"
README = ROOT / "README.md"

pytestmark = [pytest.mark.slow,  # loads the shipped models
              pytest.mark.skipif(not (ASSETS / "mini-roberta-mlm" / "config.json").is_file()
                                 or not (ASSETS / "mini-roberta-sst2" / "config.json").is_file(),
                                 reason="no shipped models")]


@pytest.fixture(scope="module")
def shipped():
    return Handlers(load_models())


def readme_figure(pattern: str) -> tuple[int, re.Match]:
    """(line number, match) of the one line of README.md that `pattern` matches."""
    found = [(number, match) for number, line in enumerate(README.read_text(encoding="utf-8").splitlines(), 1)
             if (match := re.search(pattern, line))]
    assert len(found) == 1, f"README.md should state this figure once, as /{pattern}/ finds it; it does " \
                            f"{len(found)} times (lines {[number for number, _ in found]})"
    return found[0]


def test_the_readme_gives_the_first_sentiment_examples_answer_before_and_after_calibration(shipped):
    """README, Sentiment tab: "the first example: 99.8% positive before, 95.0% after" is what the tab's
    explanation says of its first example: the answer's probability before calibration (T = 1) and the
    calibrated one it shows."""
    loaded = shipped.models.sentiment
    probabilities, _, explanation = shipped.classify(SENTIMENT_EXAMPLES[0])
    best = max(probabilities, key=probabilities.get)
    said = explain.calibration_said(best, probabilities, loaded.pipeline.temperature, loaded.config)
    assert said and said in explanation, explanation  # the figures below are the ones the tab shows
    raw = explain.before_calibration(probabilities, loaded.pipeline.temperature, loaded.config)
    shown = (format_probability(raw[best]), best, format_probability(probabilities[best]))
    line, quoted = readme_figure(r"\(the first example: ([\d.]+%) (\w+) before, ([\d.]+%) after\)")
    assert quoted.groups() == shown, \
        f"README.md line {line} says {quoted[0]!r}; the app says {shown[0]} {shown[1]} before calibration, " \
        f"{shown[2]} after: update that line"


def test_the_readme_names_the_previous_token_head_found_at_start_up(shipped):
    """README, Attention tab: "(layer 2, head 7 for the shipped model)" is the head that app.py finds at start-up
    on the tab's text (`previous_token_head`), which its example and hint show."""
    found = shipped.previous_token_head(ATTENTION_TEXT)
    assert found is not None, "the shipped MLM has no previous-token head on the Attention tab's text"
    line, quoted = readme_figure(r"\(layer (\d+), head (\d+) for the shipped model\)")
    assert (int(quoted[1]), int(quoted[2])) == found[:2], \
        f"README.md line {line} says {quoted[0]!r}; the app finds layer {found[0]}, head {found[1]}: update that line"


def test_the_readme_gives_the_share_of_tokens_that_brought_half_of_the_climb(shipped):
    """README, About tab: "half of the climb in the first 5% of the tokens" is what the caption of the encoder's
    figure of every phase says, read from phases.json."""
    caption = about.model_figures(shipped.models.mlm)[0].caption
    said = re.search(r"Half of the climb from [\d.]+% after phase 1 to [\d.]+% came in the first \S+ tokens, "
                     r"(\d+%) of them", caption)
    assert said, f"the About tab's figure of every phase no longer says half of the climb: {caption}"
    line, quoted = readme_figure(r"half of the climb in the first (\d+%) of the tokens")
    assert quoted[1] == said[1], \
        f"README.md line {line} says {quoted[0]!r}; the About tab says {said[1]} of the tokens: update that line"
