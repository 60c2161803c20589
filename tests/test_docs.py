"""The README and the lab record in docs/: every relative link and image points at a file that exists, and
every #anchor at a heading of its target (GitHub's slugs), so moving a section cannot leave a dead link; every
command they and the model cards give uses only options that command takes."""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
CARDS = sorted((ROOT / "assets").glob("*/README.md"))  # the shipped models' cards
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")   # [text](target) and ![alt](target), across line breaks
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def prose(path):
    """The Markdown without its fenced code blocks (a `# comment` in a bash block is not a heading)."""
    return FENCE.sub("", path.read_text(encoding="utf-8"))


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path):
    return {slug(line.lstrip("#")) for line in prose(path).splitlines() if re.match(r"#{1,6} ", line)}


def local_links(path):
    for target in LINK.findall(prose(path)):
        if not re.match(r"[a-z]+:", target):   # http:, https:, mailto: are not checked offline
            yield target


def test_slug_follows_github():
    assert slug("Training on one GPU (issue 16)") == "training-on-one-gpu-issue-16"
    assert slug("Pretraining probes from random weights (issue 11, part 1)") == \
        "pretraining-probes-from-random-weights-issue-11-part-1"


def test_the_readme_links_the_lab_record():
    linked = {Path(t.split("#")[0]).name for t in local_links(ROOT / "README.md")}
    missing = [doc.name for doc in DOCUMENTS[1:] if doc.name not in linked]
    assert not missing, f"docs not linked from the README: {missing}"


@pytest.mark.parametrize("document", [*DOCUMENTS, *CARDS], ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_and_anchors_resolve(document):
    broken = []
    for target in local_links(document):
        file_part, _, anchor = target.partition("#")
        destination = (document.parent / file_part).resolve() if file_part else document
        if not destination.exists():
            broken.append(f"{target}: no file {destination.relative_to(ROOT)}")
        elif anchor and destination.suffix == ".md" and anchor not in anchors(destination):
            broken.append(f"{target}: no heading #{anchor} in {destination.relative_to(ROOT)}")
    assert not broken, f"{document.name}: " + "; ".join(broken)


# ----- the commands the documents give: every option they use is one the command takes -----
COMMAND = re.compile(r"python3? (?:-m ((?:train|scripts)\.\w+)|(benchmarks/\w+\.py))")
CODE_SPAN = re.compile(r"`([^`\n]+)`")


class _Parsed(Exception):
    """Raised instead of parsing: the parser a command's main() built, caught before it runs anything."""


def command_options(module: str) -> set[str]:
    """Every option string `module`'s command line accepts (subcommands' too), read from the parser its main()
    builds: argparse's parse methods are replaced for the call by one that stops it there."""
    import argparse
    import importlib.util

    parsers = []

    def stop(self, *args, **kwargs):
        parsers.append(self)
        raise _Parsed

    if module.endswith(".py"):
        spec = importlib.util.spec_from_file_location(Path(module).stem, ROOT / module)
        main = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(main)
    else:
        import importlib
        main = importlib.import_module(module)
    patch = pytest.MonkeyPatch()
    patch.setattr(argparse.ArgumentParser, "parse_args", stop)
    patch.setattr(argparse.ArgumentParser, "parse_known_args", stop)
    try:
        main.main([])
    except _Parsed:
        pass
    finally:
        patch.undo()
    assert parsers, f"{module}: main() built no parser"
    options, todo = set(), [parsers[0]]
    while todo:
        parser = todo.pop()
        options |= set(parser._option_string_actions)
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                todo.extend(action.choices.values())
    return options


def documented_commands():
    """(document, module, options used) for every command of ours in the documents' code blocks and code spans:
    `python -m train.X ...`, `python -m scripts.X ...`, `python benchmarks/X.py ...` (continuation lines
    joined; a command ends at `&&`, `;`, `|` or a comment; options after a bare `--` belong to another one)."""
    import shlex

    for path in [*DOCUMENTS, *CARDS]:
        text = path.read_text(encoding="utf-8").replace("\\\n", " ")
        pieces = [m.group(1) for m in CODE_SPAN.finditer(FENCE.sub("", text))]
        pieces += [line for block in FENCE.findall(text) for line in block.splitlines()]
        for piece in pieces:
            for found in COMMAND.finditer(piece):
                rest = re.split(r"&&|;|\||\s#\s|\)", piece[found.end():])[0]
                try:
                    words = shlex.split(rest)
                except ValueError:  # an unbalanced quote in prose: not a command to check
                    continue
                words = words[:words.index("--")] if "--" in words else words
                used = {w.split("=")[0] for w in words if w.startswith("--") and " " not in w and len(w) > 2}
                yield path.relative_to(ROOT), found.group(1) or found.group(2), used


def test_every_documented_command_uses_options_its_command_takes():
    """A renamed or removed option leaves no command in the README, docs/ or the model cards that would stop with
    "unrecognized arguments" (the options are read from each command's own parser, not from its --help)."""
    commands = list(documented_commands())
    assert len(commands) > 200  # the README, the lab record and the cards give that many
    pretrain = command_options("train.pretrain")  # the parser itself: a hidden alias counts, a made-up one not
    assert {"--time-budget-min", "--seq-length"} <= pretrain and "--time-budget-mins" not in pretrain
    known, wrong = {}, []
    for document, module, used in commands:
        if module not in known:
            known[module] = command_options(module)
        if unknown := sorted(used - known[module]):
            wrong.append(f"{document}: {module} {' '.join(unknown)}")
    assert not wrong, "\n".join(sorted(set(wrong)))
