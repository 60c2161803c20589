"""The README, CONTRIBUTING.md and the lab record in docs/: every relative link and image points at a file that
exists, and every #anchor at a heading of its target (GitHub's slugs), so moving a section cannot leave a dead link;
every command they and the model cards give (in code blocks and code spans, a span wrapped over two lines too)
parses with its command's own parser: option names, values and required options, and the options it passes on to
another command (train.gpu_session's after `--`, --finetune-args ...); an option named alone in the prose
(`--ema-decay 0`) is one that a command of ours shows in its --help."""
import argparse
import contextlib
import functools
import importlib
import importlib.util
import io
import re
import shlex
import sys
import typing
from pathlib import Path

import pytest

from helpers import sys_path_kept

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
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


def test_the_readme_links_the_lab_record_and_contributing():
    linked = {Path(t.split("#")[0]).name for t in local_links(ROOT / "README.md")}
    missing = [doc.name for doc in DOCUMENTS[1:] if doc.name not in linked]
    assert not missing, f"documents not linked from the README: {missing}"


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


APP_COMMAND = "demo.serve"  # `python app.py`'s options: demo.serve.parse_options


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
        with sys_path_kept():  # a benchmark puts its folders on sys.path as it loads
            spec.loader.exec_module(main)
    else:
        main = importlib.import_module(module)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(argparse.ArgumentParser, "parse_args", stop)
        patch.setattr(argparse.ArgumentParser, "parse_known_args", stop)
        try:
            (main.parse_options if module == APP_COMMAND else main.main)([])
        except _Parsed:
            pass
    assert parsers, f"{module}: main() built no parser"
    return parsers[0]


def test_a_benchmarks_parser_read_here_leaves_sys_path_as_it_was():
    """bench_tokens_embeddings puts the repository and benchmarks/ on sys.path as it loads: after it, a later test's
    `import bench_...` worked by accident (so in one order and not in another)."""
    before = sys.path[:]
    command_parser.__wrapped__("benchmarks/bench_tokens_embeddings.py")  # loaded again, whatever the cache holds
    assert sys.path == before


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


# ----- an option named alone in the prose (`--ema-decay 0`, `-- --init`): an option of one of our commands -----
OPTION = re.compile(r"(?<![\w-])--[A-Za-z][\w-]*")  # --name in a code span (--name=value too), not a--b
NOT_OUR_OPTIONS = {  # an option a code span in the prose names that is another program's (where, whose)
    "--depth": "README's Quickstart: `git clone --depth 1`, git's",
    "--nproc_per_node": "README's Training: `torchrun --nproc_per_node N -m train.pretrain ...`, torchrun's",
    "--dist": "README's Tests: pytest.ini's `-n auto --dist loadfile`, pytest-xdist's",
    "--pdb": "CONTRIBUTING's Test loop: `-n 0` runs the tests in one process, as `--pdb` needs, pytest's",
}
OLD_SPELLINGS_NAMED = {  # an older spelling a parser still takes (hidden from --help), named on purpose (where)
    "--seq-length": "README's Training: train.pretrain's --max-length 'still takes its old spelling'",
}


def our_commands() -> list[str]:
    """Every command line of ours, as command_parser names it: each module of train/ and scripts/ run as a script
    (`if __name__ == "__main__"`), train.X or scripts.X, each benchmarks/X.py, and `python app.py`'s (demo.serve:
    its parser, which app.py reads before it builds the page)."""
    scripts = [path for folder in ("train", "scripts", "benchmarks") for path in sorted((ROOT / folder).glob("*.py"))
               if '__name__ == "__main__"' in path.read_text(encoding="utf-8")]
    return [str(p.relative_to(ROOT)) if p.parent.name == "benchmarks" else f"{p.parent.name}.{p.stem}"
            for p in scripts] + [APP_COMMAND]


@functools.cache
def shown_options() -> frozenset[str]:
    """The options any command of ours (subcommands too) shows in its --help: an older spelling it still takes
    (train.arguments' `deprecated=`, hidden) is left out, so the prose names the current one."""
    return frozenset(option for module in our_commands() for parser in parser_tree(command_parser(module))
                     for option, action in parser._option_string_actions.items() if action.help != argparse.SUPPRESS)


def prose_options(text: str):
    """(line number, option, span) for each option named in a code span of the prose; a code block's lines are
    other programs' commands as often as ours, and ours there are checked whole (above)."""
    for line, span, runnable in code_pieces(text):
        if not runnable:
            for option in OPTION.findall(span):
                yield line, option, span


def test_prose_options_are_found_in_spans_and_passed_on_words():
    """A bare option, one with a value, one after a bare `--`, one in a quoted value; not a block's, not a--b."""
    text = ("With `--label-smothing 0.1`, `-- --init` and `--finetune-args '--lr=2e-4'`; `a--b`.\n\n"
            "```bash\npip install --upgrade x\n```\n")
    assert [option for _, option, _ in prose_options(text)] == ["--label-smothing", "--init", "--finetune-args",
                                                                 "--lr"]
    commands = our_commands()
    assert {"train.finetune", "scripts.release", "benchmarks/bench_train_step.py"} <= set(commands)
    assert "train.arguments" not in commands  # the parsers' builder, not a command
    assert {"--ema-decay", "--max-length", "--seq-len", "--help"} <= shown_options()  # finetune's, a benchmark's
    assert "--seq-length" in command_options("train.pretrain") and "--seq-length" not in shown_options()


def test_every_option_named_in_the_prose_is_one_of_ours():
    """`--label-smothing 0.1` in a sentence passed while `python -m train.finetune --label-smothing 0.1` failed: an
    option named alone in a code span of the README, CONTRIBUTING.md, docs/ or a card is one that some command of
    ours (train.*, scripts.*, benchmarks/*) shows in its --help (any of them: the sentence does not say which), or
    another program's (NOT_OUR_OPTIONS), or an older spelling named on purpose (OLD_SPELLINGS_NAMED)."""
    accepted = {option for module in our_commands() for option in command_options(module)}
    assert not set(NOT_OUR_OPTIONS) & accepted, "NOT_OUR_OPTIONS names an option of ours"
    assert set(OLD_SPELLINGS_NAMED) <= accepted - shown_options(), \
        f"OLD_SPELLINGS_NAMED: no longer a spelling our parsers take: {set(OLD_SPELLINGS_NAMED) - accepted}"
    known = shown_options() | set(NOT_OUR_OPTIONS) | set(OLD_SPELLINGS_NAMED)
    named = [(f"{path.relative_to(ROOT)}:{line}", option, span) for path in [*DOCUMENTS, *CARDS]
             for line, option, span in prose_options(path.read_text(encoding="utf-8"))]
    assert len(named) > 350  # the prose names that many
    unused = (set(NOT_OUR_OPTIONS) | set(OLD_SPELLINGS_NAMED)) - {option for _, option, _ in named}
    assert not unused, f"named in no document any more, drop from the exemptions: {sorted(unused)}"
    wrong = [f"{where}: {option} (in `{span}`)" for where, option, span in named if option not in known]
    assert not wrong, ("options no command of ours shows in its --help (renamed, misspelt, an old spelling? "
                       "another program's: NOT_OUR_OPTIONS):\n" + "\n".join(wrong))
