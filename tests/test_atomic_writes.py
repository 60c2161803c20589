"""The files that `roberta`, `train/` and `scripts/` write go through `roberta.files.write_atomic` (a pid-named
temporary file beside the file, then a rename): a reader never sees half a file, and a stopped or failed write leaves
the file that was there. This reads the code itself: a new `.write_text(`, `.write_bytes(` or `open(path, "w")` of a
final output fails here, unless it is one of the writes below, each with the reason it may write in place.
(Appending, `open(path, "a")`, is how a log grows one line at a time, and is not looked at.)"""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("roberta", "train", "scripts")

# (file, function, the file written) -> why it is written in place
ALLOWED = {
    ("roberta/files.py", "write_atomic", "tmp"): "the temporary file that write_atomic renames into place",
    ("train/checkpointing.py", "save", "tmp / 'trainer.pt'"): "inside the temporary checkpoint folder, renamed whole",
    ("train/checkpointing.py", "save", "tmp / 'info.json'"): "inside the temporary checkpoint folder, renamed whole",
    ("train/export.py", "export_into", "dst / 'README.md'"): "inside the staged copy that export() renames whole",
    ("train/tapt_corpus.py", "_write", "files['imdb-lower.txt']"): "streamed line by line to a temporary name that "
                                                                   "write_corpora renames when both files are whole",
    ("train/tapt_corpus.py", "_write", "files['sst2-lower.txt']"): "streamed line by line, as imdb-lower.txt",
    ("train/gpu_transfer.py", "pack", "written[-1]"): "one part of an archive that is already whole: a stopped pack "
                                                      "leaves parts that unpack refuses as not a whole archive",
    ("train/gpu_transfer.py", "unpack", "archive"): "the parts joined into a temporary archive, deleted after it is "
                                                    "extracted",
    ("train/gpu_session.py", "session", "logs / 'tests.txt'"): "the test run's output, streamed while it runs",
    ("scripts/deploy_space.py", "stage", "dst"): "inside the temporary folder staged for one upload",
}


def writes_in_place(path: Path) -> list[tuple[str, str, int]]:
    """(function, the file written, line) of each `.write_text(`, `.write_bytes(` and `open(FILE, "w...")` (or
    "x") in the module at `path`; the function is the outermost one around the call ("" at module level)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []

    def visit(node, function: str):
        if isinstance(node, ast.Call):
            target = written_file(node)
            if target is not None:
                found.append((function, target, node.lineno))
        for child in ast.iter_child_nodes(node):
            inner = function or (child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else "")
            visit(child, inner)

    visit(tree, "")
    return found


def written_file(call: ast.Call) -> str | None:
    """The file a call writes in place, as its source text, or None for a call that is no such write."""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr in ("write_text", "write_bytes"):
        return ast.unparse(func.value)
    if isinstance(func, ast.Name) and func.id == "open" and call.args:
        mode = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "mode"), None)
        if isinstance(mode, ast.Constant) and isinstance(mode.value, str) and set(mode.value) & {"w", "x"}:
            return ast.unparse(call.args[0])
    return None


def scanned_writes() -> dict[tuple[str, str, str], list[int]]:
    """(file, function, the file written) -> its lines, for every module of SCANNED."""
    writes = {}
    for folder in SCANNED:
        for path in sorted((ROOT / folder).glob("*.py")):
            for function, target, line in writes_in_place(path):
                writes.setdefault((path.relative_to(ROOT).as_posix(), function, target), []).append(line)
    return writes


def test_the_scan_finds_each_kind_of_write(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("def f(p, q, r, s):\n    p.write_text('x')\n    (q / 'a').write_bytes(b'')\n"
                      "    open(r, 'w').close()\n    open(s, mode='xb')\n    open(s, 'a')\n    open(s)\n"
                      "    open(s, 'rb')\n    write_atomic(p, 'x')\n")
    assert writes_in_place(module) == [("f", "p", 2), ("f", "q / 'a'", 3), ("f", "r", 4), ("f", "s", 5)]


def test_every_write_of_a_final_output_is_atomic():
    in_place = sorted(f"{file}:{lines[0]} {function}(): {target}"
                      for (file, function, target), lines in scanned_writes().items()
                      if (file, function, target) not in ALLOWED)
    assert not in_place, ("written in place: use roberta.files.write_atomic (or replaced_atomically for a writer "
                          f"that takes a file name), or add it to ALLOWED with the reason: {in_place}")


def test_every_allowed_write_is_still_there():
    """An entry whose write was removed or renamed would let a new write of that name through unseen."""
    assert not set(ALLOWED) - set(scanned_writes()), sorted(set(ALLOWED) - set(scanned_writes()))
