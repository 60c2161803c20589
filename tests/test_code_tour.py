"""docs/code-tour.md runs as the page says: its ```python blocks, in order, in one namespace, from the repository
root, as a reader pastes them into one Python session. The page's by-hand reproductions (embeddings, an encoder
layer, the MLM and classification heads, the loss) check themselves with `torch.testing.assert_close` against the
modules, so a change to the model that the page no longer describes fails here; and the outputs the page shows
(the comment lines right under a `print(...)`) must be what the block prints, so its numbers cannot go stale."""
import ast
import contextlib
import io
import re
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
TOUR = ROOT / "docs" / "code-tour.md"
PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def python_blocks(text: str) -> list[tuple[int, str]]:
    """(line number of its first line in the page, code) of each ```python block, in order."""
    return [(text.count("\n", 0, block.start(1)) + 1, block.group(1)) for block in PYTHON_BLOCK.finditer(text)]


def shown_output(code: str) -> list[str]:
    """The output a block shows: the comment lines directly under each `print(...)` statement (a print over
    several lines too), without their "# ", in order. A comment under a print that is not its output needs a
    line between them."""
    lines = code.splitlines()
    ends = [node.end_lineno for node in ast.walk(ast.parse(code))
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Name) and node.value.func.id == "print"]
    shown = []
    for end in sorted(ends):
        for line in lines[end:]:  # the lines after the statement's last one (end is 1-based)
            if not line.lstrip().startswith("#"):
                break
            shown.append(line.lstrip()[1:].removeprefix(" ").rstrip())
    return shown


def test_shown_output_is_the_comments_under_each_print():
    code = ("x = 1  # not output\nprint(x)  # a note on the line\n# 1\nfor i in range(2):\n    print(i,\n"
            "          i)\n# 0 0\n# 1 1\n\n# not output: a line between\ny = 2\n")
    assert shown_output(code) == ["1", "0 0", "1 1"]


def test_the_tour_runs_and_prints_what_it_shows(monkeypatch):
    blocks = python_blocks(TOUR.read_text(encoding="utf-8"))
    assert len(blocks) >= 10, "the tour's python blocks were not found"
    monkeypatch.chdir(ROOT)  # the page's paths (assets/...) are the repository root's
    namespace = {"__name__": "__code_tour__"}
    # the page turns gradients off and seeds torch for the whole session: undone for the tests that follow
    with torch.random.fork_rng(), torch.enable_grad():
        for line, code in blocks:
            where = f"docs/code-tour.md, the block at line {line}"
            printed = io.StringIO()
            with contextlib.redirect_stdout(printed):
                # compiled as lines of the page: a traceback names the page's own line
                exec(compile("\n" * (line - 1) + code, str(TOUR), "exec"), namespace)
            got = [text.rstrip() for text in printed.getvalue().splitlines()]
            assert got == shown_output(code), f"{where} prints other lines than the page shows under its prints"
