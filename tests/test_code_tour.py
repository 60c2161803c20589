"""docs/code-tour.md runs as the page says: its ```python blocks, in order, in one namespace, from the repository
root, as a reader pastes them into one Python session. The page's by-hand reproductions (embeddings, an encoder
layer, the MLM and classification heads, the loss) check themselves with `torch.testing.assert_close` against the
modules, so a change to the model that the page no longer describes fails here; and the outputs the page shows
(the comment lines right under a `print(...)`) must be what the block prints, so its numbers cannot go stale."""
import torch

from helpers import ROOT, run_page_blocks, shown_output


def test_shown_output_is_the_comments_under_each_print():
    code = ("x = 1  # not output\nprint(x)  # a note on the line\n# 1\nfor i in range(2):\n    print(i,\n"
            "          i)\n# 0 0\n# 1 1\n\n# not output: a line between\ny = 2\n")
    assert shown_output(code) == ["1", "0 0", "1 1"]


def test_the_tour_runs_and_prints_what_it_shows(monkeypatch):
    monkeypatch.chdir(ROOT)  # the page's paths (assets/...) are the repository root's
    # the page turns gradients off and seeds torch for the whole session: undone for the tests that follow
    with torch.random.fork_rng(), torch.enable_grad():
        run_page_blocks(ROOT / "docs" / "code-tour.md", {"__name__": "__code_tour__"}, min_blocks=10)
