"""What several test files share: the arguments of a tiny training run, running an entry point in this process or
in a new one and reading its exit status and messages, an empty upload bundle, a folder as if read-only, sys.path
kept while a benchmark loads, running a docs page's Python blocks, a figure colour's contrast against white. One
place each, so that no test file imports from another."""
import ast
import code
import contextlib
import errno
import io
import os
import re
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path

import torch

from train import gpu_transfer, runtime

ROOT = Path(__file__).resolve().parents[1]
# where a training script run in a test trains (train.runtime.init_distributed: CUDA device 0 where there is one)
TRAINING_DEVICE = "cuda:0" if torch.cuda.is_available() else "cpu"


def padded_batch(config, lengths=(9, 5, 12), seed=0):
    """input_ids (B, T): <s> random regular tokens </s>, then <pad>; attention_mask (B, T)."""
    g = torch.Generator().manual_seed(seed)
    T = max(lengths)
    ids = torch.full((len(lengths), T), config.pad_token_id)
    for i, n in enumerate(lengths):
        ids[i, :n] = torch.randint(5, config.vocab_size, (n,), generator=g)
        ids[i, 0], ids[i, n - 1] = config.bos_token_id, config.eos_token_id
    return ids, ids.ne(config.pad_token_id).long()


def pretrain_argv(files, out, *extra, max_steps=6, eval_every=3, final_eval_rows=None) -> list[str]:
    """train.pretrain's arguments for a tiny run on the `train_files` fixture's `files` into `out`, then `extra`.
    A keyword given None leaves its option out: `max_steps=None` for a run whose length `extra` gives (a budget,
    its own --max-steps), `final_eval_rows=None` (the default) for the script's own number."""
    steps = [] if max_steps is None else ["--max-steps", str(max_steps)]
    final_eval = [] if final_eval_rows is None else ["--final-eval-rows", str(final_eval_rows)]
    return ["--corpus", str(files / "corpus.txt"), "--valid", str(files / "valid.txt"),
            "--tokenizer", str(files / "tokenizer.json"), "--preset", "tiny", "--model-max-length", "32",
            "--batch-size", "8", *steps, "--warmup", "2", "--lr", "2e-3", "--eval-every", str(eval_every),
            "--eval-rows", "8", *final_eval, "--cache-dir", "", "--no-progress", "--precision", "fp32",
            "--out", str(out), *extra]


def finetune_argv(files, out, *extra) -> list[str]:
    """train.finetune's arguments for a tiny run on the `train_files` fixture's `files` into `out`, then `extra`
    (its --init among them: there is none by default)."""
    return ["--train", str(files / "train.tsv"), "--dev", str(files / "dev.tsv"), "--imdb", str(files / "imdb.tsv"),
            "--imdb-n", "20", "--batch-size", "8", "--max-steps", "6", "--lr", "1e-3", "--eval-every", "3",
            "--calibration-n", "40", "--no-progress", "--precision", "fp32", "--out", str(out), *extra]


def outcome(main, argv, capsys) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of `main(argv)`, whether it returns the status or argparse exits."""
    try:
        code = main(argv)
    except SystemExit as exit_:
        code = exit_.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def assert_user_error(main, argv, capsys, *words) -> str:
    """main(argv) exits 2 with an `error: ...` message (no traceback) holding `words`; returns stderr."""
    code, _, err = outcome(main, argv, capsys)
    assert code == runtime.EXIT_USER_ERROR, (argv, err)
    assert "error: " in err and "Traceback" not in err, err
    for word in words:
        assert word in err, (word, err)
    return err


def refused(main, argv, capsys, *words) -> str:
    """main(argv) exits 2 with one `error: ...` line holding `words`, and no step started; returns that line."""
    code, out, err = outcome(main, argv, capsys)
    assert code == runtime.EXIT_USER_ERROR, (argv, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    for word in words:
        assert word in lines[0], (word, lines[0])
    assert "==" not in out  # no step started
    return lines[0]


def run_module(module, *args, env=None, timeout=120) -> subprocess.CompletedProcess:
    """`python -m module args...` in a new process from the repository's root (each argument made a string),
    with the repository on PYTHONPATH and `env` added to this process's environment."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run([sys.executable, "-m", module, *map(str, args)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def empty_bundle(folder: Path) -> Path:
    """An upload folder as a finished bundle of no files leaves it (data/ and its bundle.json)."""
    (folder / "data").mkdir(parents=True)
    (folder / gpu_transfer.BUNDLE_NAME).write_text('{"files": {}}')
    return folder


def read_only(monkeypatch, folder):
    """`folder` as if on a read-only file system, for the write probe every script makes before its work
    (`train.runtime.writable_folder`; a test runs as root, for whom no permission makes a folder read-only)."""
    real = tempfile.TemporaryDirectory

    def probe(*args, dir=None, **kwargs):
        if dir is not None and Path(dir) == folder:
            raise OSError(errno.EROFS, "Read-only file system", str(folder))
        return real(*args, dir=dir, **kwargs)
    monkeypatch.setattr(runtime.tempfile, "TemporaryDirectory", probe)


@contextlib.contextmanager
def sys_path_kept():
    """sys.path as it was, after the block: a benchmark puts the repository on it as it loads (and
    bench_tokens_embeddings benchmarks/ too), to run as a script from anywhere, and a later test's `import bench_...`
    would work by accident in one order and not in another."""
    before = sys.path[:]
    try:
        yield
    finally:
        sys.path[:] = before


def lock_is_free(out) -> bool:
    """Whether nobody (this process included: a lock of its own is another open file) holds OUT's lock."""
    import fcntl
    path = Path(out) / runtime.LOCK_NAME
    if not path.exists():
        return True
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


# ----- a docs page whose Python blocks run (docs/code-tour.md, docs/training-tour.md) -----
PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def python_blocks(text: str) -> list[tuple[int, str]]:
    """(line number of its first line in the page, code) of each ```python block, in order."""
    return [(text.count("\n", 0, block.start(1)) + 1, block.group(1)) for block in PYTHON_BLOCK.finditer(text)]


def shown_output(code: str) -> list[str]:
    """The output a block shows: the comment lines directly under each `print(...)` statement (a print over
    several lines, or in a loop or a `with`, too), without their "# ", in order. A comment under a print that is
    not its output needs a line between them."""
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


class PastedPrompt(code.InteractiveConsole):
    """Python's interactive prompt (the plain one of Python 3.11 and 3.12) with a page's block pasted into it line
    by line: each statement is compiled as the prompt compiles it ("single" mode: a statement after an indented block
    needs a blank line before it, and an expression's value other than None is shown), and any error fails the test,
    naming the page's line where the statement began."""

    def __init__(self, namespace: dict, page: Path):
        super().__init__(namespace, filename=str(page))
        self.page, self.statement_line = page, 0

    def paste(self, first_line: int, block: str) -> None:
        """Type `block` (whose first line is the page's `first_line`) at the prompt, then the blank line a reader
        ends a paste with."""
        for offset, text in enumerate(block.splitlines() + [""]):
            if not self.buffer:  # the prompt is at ">>>": this line begins a statement
                self.statement_line = first_line + offset
            self.push(text)

    def _failed(self, statement_offset: int, what: str):
        """Fail with the page's line: `statement_offset` is the line's number within the statement the prompt
        compiled (1 for its first)."""
        raise AssertionError(f"docs/{self.page.name}, line {self.statement_line + statement_offset - 1}, pasted at "
                             f"Python's prompt: {what}") from sys.exc_info()[1]

    def showsyntaxerror(self, filename=None, **kwargs):
        error = sys.exc_info()[1]
        self._failed(error.lineno or 1, f"SyntaxError: {error.msg}")

    def showtraceback(self):
        error = sys.exc_info()[1]
        on_the_page = [frame for frame in traceback.extract_tb(error.__traceback__) if frame.filename == str(self.page)]
        self._failed(on_the_page[-1].lineno if on_the_page else 1, f"{type(error).__name__}: {error}")


def run_page_blocks(page: Path, namespace: dict, min_blocks: int) -> None:
    """Paste `page`'s ```python blocks in order into one Python prompt (`PastedPrompt`, from the current folder, as
    the page tells a reader to) and check that each shows what the page shows under its prints (`shown_output`)."""
    blocks = python_blocks(page.read_text(encoding="utf-8"))
    assert len(blocks) >= min_blocks, f"{page.name}'s python blocks were not found"
    prompt = PastedPrompt(namespace, page)
    for line, block in blocks:
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            prompt.paste(line, block)
        got = [text.rstrip() for text in printed.getvalue().splitlines()]
        shown = shown_output(block)
        assert got == shown, f"docs/{page.name}, the block at line {line}, shows other lines at Python's prompt " \
                             f"than the page shows under its prints: {got} against the page's {shown}"


def linear_rgb(colour) -> list[float]:
    """`colour`'s sRGB channels without their gamma (WCAG 2's formula), each 0 to 1."""
    from matplotlib.colors import to_rgb

    return [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in to_rgb(colour)]


def contrast_with_white(colour) -> float:
    """WCAG's contrast ratio of `colour` against a white background (1 to 21): 1.05 / (its relative luminance
    + 0.05). A figure's line needs 3 (WCAG 1.4.11)."""
    linear = linear_rgb(colour)
    return 1.05 / (0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2] + 0.05)
