"""What the Attention tab teaches besides its views (review R1): what attention, a head and a layer compute (a
closed accordion, linked to the code tour's section on the Space too), a previous-token head one example away, found
in the model at start-up by the head-role counts, and the heatmap's colour scale said."""
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from demo import attention_handlers, head_roles
from demo.attention_handlers import attention_primer, attention_tab_hint, doc_link, previous_token_head

ROOT = Path(__file__).resolve().parent.parent
LABELS = ["<s>", "The", "cat", "sat", "on", "the", "mat", ".", "</s>"]


def _tokens(labels=LABELS) -> SimpleNamespace:
    return SimpleNamespace(labels=list(labels))  # all that the head roles read of a text's tokens


def _maps(previous_at=None, share=0.95, layers=3, heads=4) -> np.ndarray:
    """(L, nh, T, T) maps spread evenly, but for one head, `previous_at` = (layer, head) from 0, that gives the
    token before it `share` of each row (the first row, which has none, all to itself). The head roles count a
    weight on <s>, "." or </s> as that kind of token, not as the previous one."""
    n = len(LABELS)
    maps = np.full((layers, heads, n, n), 1 / n)
    if previous_at is not None:
        head = np.full((n, n), (1 - share) / (n - 1))
        np.fill_diagonal(head[1:], share)  # row i, column i - 1
        head[0] = np.eye(n)[0]
        maps[previous_at] = head
    return maps


def test_the_previous_token_head_is_the_one_head_roles_names():
    """The head found is the one whose largest share, as `head_roles` counts it (the "All heads of the layer"
    table), goes to the previous token: its layer and head from 1, and that share."""
    tokens, maps = _tokens(), _maps((1, 2))
    layer, head, share = previous_token_head(tokens, maps)
    assert (layer, head) == (2, 3)
    roles = head_roles.layer_roles(maps[layer - 1], LABELS)
    assert roles[head - 1]["role"] == "previous token"
    assert share == roles[head - 1]["shares"]["previous token"]
    assert [r["head"] for r in roles if r["role"] == "previous token"] == [head]


def test_no_previous_token_head_is_claimed_where_none_is_one():
    """Attention spread evenly (or a head whose largest share goes elsewhere) names no previous-token head."""
    assert previous_token_head(_tokens(), _maps()) is None
    assert previous_token_head(_tokens(), _maps((0, 0), share=0.3)) is None


def test_the_handlers_find_it_in_the_attention_of_the_served_model(handlers, monkeypatch):
    """At start-up, in the attention the served MLM gives the tab's text (a stand-in here, with a known
    previous-token head at layer 3, head 2); and none where that attention has none."""
    asked = []

    def attention_data(kind, text, maps=_maps((2, 1), share=0.8)):
        asked.append((kind, text))
        return _tokens(), maps

    monkeypatch.setattr(handlers, "attention_data", attention_data)
    layer, head, share = handlers.previous_token_head("The cat sat on the mat.")
    assert (layer, head) == (3, 2) and 0.5 < share <= 0.8 and asked == [("mlm", "The cat sat on the mat.")]
    monkeypatch.setattr(handlers, "attention_data", lambda kind, text: (_tokens(), _maps()))
    assert handlers.previous_token_head("The cat sat on the mat.") is None


def test_the_tab_hint_names_the_head_found_and_stays_short():
    """The hint names the layer and head found (never a typed-in one), and says nothing of one when none was
    found; it stays under 80 words, as it comes before the text box."""
    hint = attention_tab_hint((4, 5, 0.61))
    assert "layer 4, head 5" in hint and "the one before it" in hint and len(hint.split()) < 80
    plain = attention_tab_hint(None)
    assert "head 5" not in plain and "before it" not in plain and "park their attention" in plain


def test_the_primer_reads_its_numbers_from_the_model_and_links_the_code_tour(monkeypatch):
    """“What attention computes” gives the model's own layers, heads and their width (256 / 8 = 32), names the
    query, key, softmax, head, feed-forward block and residual connection, and links the code tour's section
    on the encoder layer: on a Space (SPACE_ID) its page there, else the file named."""
    monkeypatch.delenv("SPACE_ID", raising=False)
    text = attention_primer(6, 8, 256)
    assert "6 layers" in text and "8 side by side, each projecting the whole 256-number vector down to 32" in text
    for word in ("*query*", "*key*", "softmax", "**head**", "**feed-forward**", "**residual connection**"):
        assert word in text
    assert "`docs/code-tour.md`" in text and "http" not in text
    assert "12 side by side, each projecting the whole 768-number vector down to 64" in attention_primer(12, 12, 768)
    monkeypatch.setenv("SPACE_ID", "someone/roberta-from-scratch")
    linked = re.search(r"\]\((https://[^)]+)\)", attention_primer(6, 8, 256))[1]
    path, anchor = attention_handlers.CODE_TOUR
    assert linked == f"https://huggingface.co/spaces/someone/roberta-from-scratch/blob/main/{path}#{anchor}"
    # the anchor is a heading of that page (GitHub's and the Hub's slug)
    headings = [line.lstrip("#").strip() for line in (ROOT / path).read_text(encoding="utf-8").splitlines()
                if line.startswith("## ")]
    assert anchor in [re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings]
    assert doc_link("docs/x.md", "y", "X") == "[X](https://huggingface.co/spaces/someone/roberta-from-scratch/blob/" \
                                              "main/docs/x.md#y)"


def test_the_notes_say_the_heatmaps_colour_scale(handlers):
    """A heatmap's colours run from 0 to its own largest weight, the grid's from 0 to 100%: the notes say so (a
    student switching heads compared colours that meant different things)."""
    notes = handlers.attention("the cat sees the house.", 1, 1)[5]
    assert "colours run from 0 to its largest weight (the colour bar under it)" in notes  # tests/test_figure_text.py
    assert "one 0-100% scale for every head" in notes


def test_the_notes_name_the_text_the_views_are_drawn_for(handlers):
    """Layer and Head redraw the text drawn last, not one edited since in the box, and the page did not say so: a
    learner took the old sentence's views for their own. The notes, which only a new text redraws, name it."""
    notes = handlers.attention("the cat sees the house.", 1, 1)[5]
    assert notes.startswith("Drawn for “the cat sees the house\\.”: ") and "press Show attention" in notes
    with pytest.warns(UserWarning, match="longer than"):  # cut to the tiny model's 64 tokens
        long = handlers.attention("the cat sees the house " * 10, 1, 1)[5]
    assert long.startswith("Drawn for “the cat sees the house the cat sees the house the cat sees…”: ")
