"""The README and the lab record in docs/: every relative link and image points at a file that exists, and
every #anchor at a heading of its target (GitHub's slugs), so moving a section cannot leave a dead link; every
command they and the model cards give (in code blocks and code spans, a span wrapped over two lines too) parses
with its command's own parser: option names, values and required options, and the options it passes on to another
command (train.gpu_session's after `--`, --finetune-args ...)."""
import argparse
import contextlib
import functools
import importlib
import importlib.util
import io
import re
import shlex
import typing
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
CARDS = sorted((ROOT / "assets").glob("*/README.md"))  # the shipped models' cards
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")   # [text](target) and ![alt](target), across line breaks
FENCE = re.compile(r"^ *```.*?^ *```", re.S | re.M)  # (a block in a list item is indented)


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


# ----- the commands the documents give: each parses with its command's own parser -----
COMMAND = re.compile(r"python3? (?:-m ((?:train|scripts)\.\w+)|(benchmarks/\w+\.py))")
CODE_SPAN = re.compile(r"`((?:[^`\n]|\n(?![ \t]*\n))+)`")  # `code`, across a line break but not a paragraph's end
LOGICAL_LINE = re.compile(r"^(?:.*\\\n)*.*", re.M)  # a line of a code block with its continuation lines
SUBSTITUTION = re.compile(r"\$\([^()]*\)")  # $(basename $c)
PLACEHOLDER = re.compile(r"\$\w+|\$\{\w+\}|[A-Z]")  # a shell variable ($s) or a letter (--seed N) for a number
PASSED_ON = {  # an option whose value is another command's options (the namespace's name: that command)
    "recipe_args": "train.recipe",  # train.gpu_session ... -- RECIPE OPTIONS
    "finetune_args": "train.finetune", "imdb_args": "train.finetune",
    "pretrain_args": "train.pretrain", "tapt_args": "train.pretrain",
}


class Command(typing.NamedTuple):
    """A command of ours a document gives: where (file:line), its module, its words after the module, and whether
    it is a line of a code block (to be run as it stands) rather than a code span in the prose (named in passing,
    where a required option such as --out may be left out)."""
    where: str
    module: str
    words: list[str]
    runnable: bool


class _Parsed(Exception):
    """Raised instead of parsing: the parser a command's main() built, caught before it runs anything."""


class _Refused(Exception):
    """argparse's own complaint about a command line: an unknown option, a value of the wrong type or not among
    the choices, a missing value or required option."""


@functools.cache
def command_parser(module: str) -> argparse.ArgumentParser:
    """The parser `module`'s main() builds, caught at its first parse (argparse's parse methods are replaced for
    the call): the plain parser, without the checks a command makes afterwards (that a folder exists...)."""
    parsers = []

    def stop(self, *args, **kwargs):
        parsers.append(self)
        raise _Parsed

    if module.endswith(".py"):
        spec = importlib.util.spec_from_file_location(Path(module).stem, ROOT / module)
        main = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(main)
    else:
        main = importlib.import_module(module)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(argparse.ArgumentParser, "parse_args", stop)
        patch.setattr(argparse.ArgumentParser, "parse_known_args", stop)
        try:
            main.main([])
        except _Parsed:
            pass
    assert parsers, f"{module}: main() built no parser"
    return parsers[0]


def parser_tree(parser: argparse.ArgumentParser):
    """`parser` and its subcommands' parsers."""
    todo = [parser]
    while todo:
        parser = todo.pop()
        yield parser
        todo += [sub for action in parser._actions if isinstance(action, argparse._SubParsersAction)
                 for sub in action.choices.values()]


def command_options(module: str) -> set[str]:
    """Every option string `module`'s command line accepts (subcommands' too), read from its own parser."""
    return {option for parser in parser_tree(command_parser(module)) for option in parser._option_string_actions}


def parse(module: str, words: list[str], required: bool = True) -> argparse.Namespace:
    """`words` parsed by `module`'s parser, or _Refused with argparse's message; not `required`: its required
    options (and positionals) may be left out. --help is taken (an empty namespace)."""
    def refuse(self, message):
        raise _Refused(message)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(argparse.ArgumentParser, "error", refuse)
        for parser in [] if required else parser_tree(command_parser(module)):
            for action in parser._actions:
                patch.setattr(action, "required", False)
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                return command_parser(module).parse_args(words)  # stderr: a deprecated spelling's warning
        except SystemExit:  # --help, --version
            return argparse.Namespace()


def passed_on(namespace: argparse.Namespace):
    """(option, module, words) for each command line a parsed command passes on to another of ours (PASSED_ON):
    the words after a bare `--`, or an option's value split as shell words."""
    for name, module in PASSED_ON.items():
        value = getattr(namespace, name, None)
        if isinstance(value, list):
            yield "--", module, [w for w in value if w != "--"]
        elif value:
            yield "--" + name.replace("_", "-"), module, shlex.split(value)


def code_pieces(text: str):
    """(line number, text, runnable) of each code span in the prose (its lines joined) and each line of the code
    blocks (continuation lines joined)."""
    def line_of(offset):
        return text.count("\n", 0, offset) + 1

    prose_only = FENCE.sub(lambda block: re.sub(r"[^\n]", " ", block.group()), text)  # the blocks blanked out
    for span in CODE_SPAN.finditer(prose_only):
        yield line_of(span.start()), " ".join(span.group(1).split()), False
    for block in FENCE.finditer(text):
        for line in LOGICAL_LINE.finditer(block.group()):
            yield line_of(block.start() + line.start()), line.group().replace("\\\n", " "), True


def command_words(rest: str) -> list[str] | None:
    """The words of a command line after its module, up to its end (`&&`, `&`, `;`, `|`, `)`, a backquote or a
    comment); a placeholder for a number (`$s`, `$(...)`, `N`) reads 0, an elision (`...`) is dropped. None: the
    text does not split as shell words (an unbalanced quote in prose: not a command to check)."""
    rest = re.split(r"&|;|\||\s#\s|\)|`", SUBSTITUTION.sub("$_", rest))[0]
    try:
        words = shlex.split(rest)
    except ValueError:
        return None
    return ["0" if PLACEHOLDER.fullmatch(w) else w for w in words if w not in ("...", "…")]


def documented_commands():
    """Every command of ours in the documents' code blocks and code spans: `python -m train.X ...`,
    `python -m scripts.X ...`, `python benchmarks/X.py ...`."""
    for path in [*DOCUMENTS, *CARDS]:
        for line, piece, runnable in code_pieces(path.read_text(encoding="utf-8")):
            for found in COMMAND.finditer(piece):
                if (words := command_words(piece[found.end():])) is not None:
                    yield Command(f"{path.relative_to(ROOT)}:{line}", found.group(1) or found.group(2), words,
                                  runnable)


def options_used(words: list[str]) -> set[str]:
    """The option names among a command's words, up to a bare `--` (what follows is another command's)."""
    words = words[:words.index("--")] if "--" in words else words
    return {w.split("=")[0] for w in words if w.startswith("--") and " " not in w and len(w) > 2}


def refusals(module: str, words: list[str], required: bool = True):
    """argparse's complaints about `module` given `words`, then about each command line it passes on (PASSED_ON),
    which may leave out the other command's required options: the command passing them on gives those."""
    try:
        namespace = parse(module, words, required)
    except _Refused as refused:
        yield str(refused)
        return
    for option, other, passed in passed_on(namespace):
        for problem in refusals(other, passed, required=False):
            yield f"{option} passes on to {other}: {problem}"


def test_commands_are_found_in_wrapped_spans_and_indented_blocks():
    """A code span wrapped over two lines is one command (a lone backquote does not pair past a paragraph's end);
    a block in a list item, indented, is a code block; shell placeholders read as numbers."""
    text = ("A span wraps (`python -m train.finetune --init a\n--seed $s`), then a lone ` ends.\n\n"
            "- `x`, in a list item:\n\n  ```bash\n  python -m train.average a b \\\n    --out c  # a comment\n  ```\n")
    pieces = list(code_pieces(text))
    assert (1, "python -m train.finetune --init a --seed $s", False) in pieces
    assert (4, "x", False) in pieces
    assert (7, "  python -m train.average a b      --out c  # a comment", True) in pieces
    assert command_words(" --init a --seed $s --out runs/$(basename $c) && ls") == \
        ["--init", "a", "--seed", "0", "--out", "runs/$_"]


def test_every_documented_command_uses_options_its_command_takes():
    """A renamed or removed option leaves no command in the README, docs/ or the model cards that would stop with
    "unrecognized arguments" (the options are read from each command's own parser, not from its --help)."""
    commands = list(documented_commands())
    assert len(commands) > 290  # the README, the lab record and the cards give that many
    pretrain = command_options("train.pretrain")  # the parser itself: a hidden alias counts, a made-up one not
    assert {"--time-budget-min", "--seq-length"} <= pretrain and "--time-budget-mins" not in pretrain
    wrong = [f"{c.where}: {c.module} {' '.join(unknown)}" for c in commands
             if (unknown := sorted(options_used(c.words) - command_options(c.module)))]
    assert not wrong, "\n".join(wrong)


def test_every_documented_command_parses():
    """Each documented command's words parse with its command's parser: a value of the wrong type (`--seed x`),
    not among the choices (`--precision fp16`), a missing value or, in a code block, a required option left out
    stop it as an unknown option does. So do the options it passes on to another command, parsed by that one's
    parser: train.gpu_session's after `--` (train.recipe's), --finetune-args, --pretrain-args ... (PASSED_ON)."""
    wrong = [f"{c.where}: {c.module}: {problem}" for c in documented_commands()
             for problem in refusals(c.module, c.words, required=c.runnable)]
    assert not wrong, "\n".join(wrong)


def test_passed_on_names_options_of_the_documented_commands():
    """PASSED_ON follows a rename: each of its names is an option (or `--`'s rest) of a documented command."""
    names = {action.dest for module in {c.module for c in documented_commands()}
             for parser in parser_tree(command_parser(module)) for action in parser._actions}
    assert set(PASSED_ON) <= names, sorted(set(PASSED_ON) - names)
