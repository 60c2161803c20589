"""docs/code-tour.md runs as the page says: its ```python blocks, in order, in one namespace, from the repository
root, as a reader pastes them into one Python session. The page's by-hand reproductions (embeddings, an encoder
layer, the MLM and classification heads, the loss) check themselves with `torch.testing.assert_close` against the
modules, so a change to the model that the page no longer describes fails here; and the outputs the page shows
(the comment lines right under a `print(...)`) must be what the block prints, so its numbers cannot go stale."""
import pytest
import torch

from helpers import ROOT, PastedPrompt, run_page_blocks, shown_output


def test_shown_output_is_the_comments_under_each_print():
    code = ("x = 1  # not output\nprint(x)  # a note on the line\n# 1\nfor i in range(2):\n    print(i,\n"
            "          i)\n# 0 0\n# 1 1\n\n# not output: a line between\ny = 2\n")
    assert shown_output(code) == ["1", "0 0", "1 1"]


def test_the_pasted_prompt_fails_where_python_s_prompt_does(capsys):
    """A statement straight after an indented block is a SyntaxError at the prompt (it ends a block at a blank
    line), named by its page line; with the blank line the block runs, and a value other than None is shown."""
    prompt = PastedPrompt({}, ROOT / "docs" / "code-tour.md")
    with pytest.raises(AssertionError, match=r"code-tour\.md, line 12, pasted at Python's prompt: SyntaxError"):
        prompt.paste(10, "for i in range(2):\n    i\nprint(i)\n")
    prompt.resetbuffer()
    prompt.paste(10, "for i in range(2):\n    pass\n\nprint(i)\ni + 1\nNone\n")
    assert capsys.readouterr().out == "1\n2\n"
    with pytest.raises(AssertionError, match=r"code-tour\.md, line 21, pasted at Python's prompt: ZeroDivisionError"):
        prompt.paste(20, "x = 1\nx / 0\n")


def test_the_tour_runs_and_prints_what_it_shows(monkeypatch):
    monkeypatch.chdir(ROOT)  # the page's paths (assets/...) are the repository root's
    # the page turns gradients off and seeds torch for the whole session: undone for the tests that follow
    with torch.random.fork_rng(), torch.enable_grad():
        run_page_blocks(ROOT / "docs" / "code-tour.md", {"__name__": "__code_tour__"}, min_blocks=10)
