"""The heads' roles (`demo.head_roles`): each weight counted once, in the first pattern that fits; a head named
by the pattern that takes half of its attention or more; the figures' text versions."""
import re

import numpy as np
import pytest

from demo import head_roles as R
from demo import head_view

LABELS = ["<s>", "The", "cat", "sat", ",", "it", "slept", ".", "</s>"]
N = len(LABELS)


def one_hot_rows(columns) -> np.ndarray:
    """A (N, N) attention matrix whose row i puts all of its weight on columns[i]."""
    matrix = np.zeros((N, N))
    matrix[np.arange(N), columns] = 1.0
    return matrix


def shares(matrix) -> dict:
    return dict(zip(R.PATTERNS, R.pattern_shares(matrix, LABELS)))


def test_each_cell_counts_in_the_first_pattern_that_fits():
    kind = R.pattern_of_cells(LABELS)
    name = {(i, j): R.PATTERNS[kind[i, j]] for i in range(N) for j in range(N)}
    assert name[1, 0] == "<s>"  # the previous token of "The" is <s>: <s> comes first
    assert name[7, 8] == "</s>" and name[8, 8] == "</s>"
    assert name[3, 4] == "punctuation" and name[4, 4] == "punctuation" and name[5, 4] == "punctuation"
    assert (name[2, 2], name[2, 1], name[2, 3], name[2, 5]) == ("itself", "previous token", "next token",
                                                                 "other tokens")
    random = np.random.default_rng(0).dirichlet(np.ones(N), size=N)  # rows sum to 1
    assert sum(shares(random).values()) == pytest.approx(1.0)


@pytest.mark.parametrize("columns, role, share", [
    ([0] * N, "<s>", 1.0),
    ([N - 1] * N, "</s>", 1.0),
    (list(range(N)), "itself", 5 / N),  # <s>, </s>, "," and "." on themselves count as <s>, </s>, punctuation
    ([max(i - 1, 0) for i in range(N)], "previous token", 5 / N),  # "The" -> <s>, "it" -> ",", "</s>" -> "."
    ([min(i + 1, N - 1) for i in range(N)], "next token", 5 / N),  # "sat" -> ",", "slept" -> "." are punctuation
])
def test_a_head_with_one_job_is_named_by_it(columns, role, share):
    matrix = one_hot_rows(columns)
    assert shares(matrix)[role] == pytest.approx(share)
    assert R.spread(matrix) == pytest.approx(1.0)  # one token each
    heads = R.layer_roles(np.stack([matrix, np.full((N, N), 1 / N)]), LABELS)
    assert share >= R.ROLE_SHARE and heads[0]["role"] == role  # the job takes over half: it names the head
    assert heads[1]["spread"] == pytest.approx(N)  # uniform attention spreads over every token
    assert " and " in heads[1]["role"]  # no pattern takes half: its two largest


def test_a_heads_spread_is_the_mean_over_its_rows():
    """Spread was checked on one-hot and uniform matrices only, whose rows all spread alike, so the max (or min)
    over rows passed for the mean. Now rows differ: half one-hot (1 token each), half uniform (N tokens), and
    one over two tokens (2: exp of the entropy, not the entropy); the layer table's column reads the same mean."""
    half = N // 2
    matrix = np.vstack([one_hot_rows([0] * N)[:half], np.full((N - half, N), 1 / N)])
    assert R.spread(matrix) == pytest.approx((half + (N - half) * N) / N)
    two = one_hot_rows([0] * N)
    two[-1] = 0
    two[-1, :2] = 0.5
    assert R.spread(two) == pytest.approx((N - 1 + 2) / N)
    np.testing.assert_allclose(R.spread(np.stack([matrix, two])), [R.spread(matrix), R.spread(two)])
    assert R.layer_roles(np.stack([matrix, two]), LABELS)[0]["spread"] == pytest.approx(R.spread(matrix))


def test_the_layer_table_reads_its_heads():
    layer = np.stack([one_hot_rows([0] * N), one_hot_rows([0] * N), one_hot_rows([max(i - 1, 0) for i in range(N)]),
                      np.full((N, N), 1 / N)])
    text = R.layer_roles_html(layer, LABELS, layer=3)
    assert "In layer 3, 3 of 4 heads give half of their attention or more to one kind of token (&lt;s&gt;: heads " \
           "1, 2; previous token: head 3); the other one mixes several." in text
    assert text.count('<th scope="row">head') == 4 and "tokens it spreads over" in text
    assert "<s>" not in text.replace("<style>", "")  # every label escaped
    one = R.layer_roles_html(layer[:1], LABELS, layer=1)
    assert "1 of 1 heads gives half of its attention" in one and "mix" not in one
    assert "no head gives half of its attention to one kind of token; its one head mixes several" in R.layer_roles_html(
        layer[3:], LABELS, layer=1)


def test_the_heatmap_text_lists_each_tokens_largest_weights():
    matrix = np.full((N, N), 0.01)
    matrix[:, 2] = 0.5
    matrix[:, 5] = 0.3
    text = R.top_targets_html(LABELS, matrix, "Attention, layer 1, head 2", verb="attends to", k=2)
    assert "<summary>The figure as text</summary>" in text
    assert "Attention, layer 1, head 2: each token's 2 largest weights" in text
    assert text.count('<th scope="row">') == N and "8: “&lt;/s&gt;”</th><td>2: “cat” 50.0%, 5: “it” 30.0%" in text


def test_punctuation():
    assert all(map(R.is_punctuation, [".", " ,", "!?", "—", "“"]))
    assert not any(map(R.is_punctuation, ["", " ", "a.", "1"]))


def test_every_layer_at_a_glance():
    """One row per layer, one cell per head: its largest pattern and share; the layer the tab shows marked."""
    attentions = np.stack([np.stack([one_hot_rows([0] * N), np.full((N, N), 1 / N)]),
                           np.stack([one_hot_rows([max(i - 1, 0) for i in range(N)]), one_hot_rows([N - 1] * N)])])
    text = R.overview_html(attentions, LABELS, layer=2)
    assert text.count('<th scope="row"') == 2 and text.count('<th scope="col">head') == 2
    assert "&lt;s&gt; 100%" in text and "&lt;/s&gt; 100%" in text and "previous 55.6%" in text
    # uniform: what fits none of the named patterns is its largest share, under half, so the second shows too
    assert "other 37.0%<small>punct. 22.2%</small>" in text
    assert "previous 55.6%<small>" not in text  # over half: one role
    assert '<th scope="row" class="hr-current" aria-current="true">layer 2</th>' in text
    assert "<summary>Every layer at a glance</summary>" in text and 'tabindex="0" role="region"' in text


def test_other_tokens_is_not_one_job():
    """"other tokens" is what no named pattern takes: a head whose largest share it is has no one job."""
    matrix = np.zeros((N, N))
    matrix[:, 2], matrix[:, 5] = 0.6, 0.4  # "cat" and "it": other tokens for most rows
    text = R.layer_roles_html(matrix[None], LABELS, layer=1)
    assert "no head gives half of its attention to one kind of token; its one head mixes several" in text


def test_one_tokens_bars_as_text_list_every_weight_largest_first():
    """The bars' text version: every token the chosen one attends to, sorted by weight, with its position and the
    heatmap text's percent; the chosen token itself marked, every label escaped."""
    row = np.array([0.05, 0.1, 0.4, 0.05, 0.0, 0.25, 0.05, 0.1, 0.0])
    text = R.token_targets_html(LABELS, row, 2, "Where token 2 “cat” attends (layer 1, head 2)")
    assert text.startswith(R.CSS) and '<details class="hr-view"><summary>The figure as text</summary>' in text
    assert "<details open" not in text  # closed, as the heatmaps' text versions
    assert "Where token 2 “cat” attends (layer 1, head 2): all 9 tokens, the largest weight first" in text
    assert ('<th scope="col" class="hr-num">position</th><th scope="col">token</th>'
            '<th scope="col" class="hr-num">weight</th>') in text
    rows = re.findall(r'<tr><td class="hr-num">(\d+)</td><th scope="row">(.*?)</th><td class="hr-num">(.*?)</td>',
                      text)
    assert len(rows) == N and [int(j) for j, _, _ in rows] == [2, 5, 1, 7, 0, 3, 6, 4, 8]  # ties by position
    assert rows[0] == ("2", "“cat” (itself)", "40.0%") and rows[1] == ("5", "“it”", "25.0%")
    assert rows[4] == ("0", "“&lt;s&gt;”", "5.00%") and rows[-1] == ("8", "“&lt;/s&gt;”", "0%")
    assert "<s>" not in text.replace("<style>", "").replace("</style>", "")
    assert "100%" in R.token_targets_html(LABELS, np.eye(N)[3], 3, "t")  # the same percent as the heatmap text


def test_a_tiny_share_of_attention_keeps_its_percent_sign_in_every_view():
    """Attention shares are written as the app writes a probability: a percentage whatever its size, in the text
    versions, the overview and the head view alike, never "0.0%" for a weight that is not zero."""
    row = np.array([0.9, 0.099, 9.6e-4, 4e-5, 1e-9, 0, 0, 0, 0])
    cells = re.findall(r'<td class="hr-num">([^<]*)</td></tr>', R.token_targets_html(LABELS, row, 0, "t"))
    assert len(cells) == N and all(cell.endswith("%") for cell in cells)
    values = [float(cell.rstrip(" %").replace(" × 10", "e").translate(str.maketrans("⁻⁰¹²³⁴⁵⁶⁷⁸⁹", "-0123456789")))
              for cell in cells]
    np.testing.assert_allclose(values, 100 * np.sort(row)[::-1], rtol=5e-3)  # three significant digits
    matrix = np.tile(row, (N, 1))
    view = head_view.head_view_html(LABELS, matrix, min_weight=0.0, top_k=N)
    assert ">0.0960%<" in view and ">0.0%<" not in view and ">9.90%<" in view
