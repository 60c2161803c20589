"""The plan/skip/resume runner of the experiments (`train.recipe`, `train.ablation`, `train.sentiment_recipe`).

An experiment is a list of named `Step`s, run in order. A step whose output folder holds its finished marker
(metrics.json, unless said otherwise: the last file a training run writes) is skipped; a training step whose
folder holds a checkpoint resumes from it (the arguments object has `resume=True`: `train.trainer.Trainer` starts
a new run when there is none).
Running the same experiment command again therefore continues where it stopped.

A training step is an arguments object run in this process through the script's API:

    step = training("pretrain", pretrain, corpus="corpus.txt", tokenizer="tok.json", max_steps=20, out="runs/x")
    run_steps([step])   # == pretrain.run(PretrainArguments(...)), with the exit codes of `python -m train.pretrain`

and its `command` (printed, and recorded in the run's metrics.json) is the `python -m` line that builds the
same object, so any step can be rerun by hand. Scripts without an arguments object (train.tokenizer,
train.average, train.summarize) are `script` steps: their `main(argv)`; other work (the ablation's mask probe)
is a `function` step.
"""
from __future__ import annotations

import contextlib
import io
import os
import shlex
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from roberta.files import write_atomic
from roberta.run_metrics import METRICS_NAME, RunMetrics

from . import finetune, pretrain, runtime
from .arguments import NOT_RECIPE
from .checkpointing import CHECKPOINTS
from .paths import COMMAND_FILE
from .runtime import EXIT_INTERRUPTED, UserError, run_main
from .reporting import RESUME_HINT_ENV


ARGUMENTS = {pretrain: pretrain.PretrainArguments, finetune: finetune.FinetuneArguments}


def finished(folder: Path) -> bool:
    """A training run's folder whose run ended: metrics.json is the last file a run writes (after its weights,
    curves and model card; then the run only deletes its checkpoints, which `finish_cleanup` does for a run stopped
    before it had)."""
    return (Path(folder) / METRICS_NAME).is_file()


@dataclass
class Step:
    name: str
    folder: Path
    command: str  # the POSIX command line, recorded (a training step's in metrics.json); printed as `shown`
    action: Callable[[], int]  # does the step, returns an exit code
    marker: str = METRICS_NAME  # the file a finished step leaves in `folder`
    needs: list[Path] = field(default_factory=list)  # folders that must be finished first (else: not yet)
    args: object = None  # a training step's arguments object
    kind: str = ""  # what the step is (the experiment's own label; a training step: its module)
    is_command: bool = True  # False: a `function` step, whose `command` says what it does

    def done(self) -> bool:
        return (self.folder / self.marker).is_file()

    @property
    def shown(self) -> str:
        """The step's command as printed for a person to type: quoted for this system's shell
        (`runtime.shown_command`), while `command` stays the POSIX line recorded in files."""
        return runtime.shown_command(shlex.split(self.command)) if self.is_command else self.command


def option_text(value) -> str:
    """A value as the command line spells it (floats without a needless '.0' or float noise)."""
    if isinstance(value, float):
        short = f"{value:g}"
        return short if float(short) == value else repr(value)
    return str(value)


def shown_value(value) -> str:
    """A value in a message, as the command line spells it; an empty one quoted as this system's shell reads it
    ('' on POSIX: `--imdb ''` skips IMDB; it read "--imdb ../shared/data/imdb/train.tsv -> ", an arrow to nothing)."""
    return runtime.shown_command([""]) if value == "" else option_text(value)


def argv_of(options: dict) -> list[str]:
    """The options as command-line words, in their order (True: a flag; False, None: left out, the script's
    default)."""
    argv = []
    for name, value in options.items():
        flag = "--" + name.replace("_", "-")
        if value is True:
            argv.append(flag)
        elif value is not False and value is not None:
            argv += [flag, option_text(value)]
    return argv


def split_options(extra: str, whose: str) -> list[str]:
    """A user's extra options (--finetune-args ...) as words, as `shlex.split` makes them: quotes group, a `#` is
    a character. On Windows a backslash is a character too (it separates a path's folders: shlex's escape made
    `C:\\Users\\ana\\dev.tsv` "C:Usersanadev.tsv"). A ValueError that names the options if they do not split."""
    words = shlex.shlex(extra, posix=True)
    words.whitespace_split, words.commenters = True, ""
    if runtime.WINDOWS:
        words.escape = ""
    try:
        return list(words)
    except ValueError as err:  # "No closing quotation"
        raise ValueError(f"extra {whose} options {extra!r}: {err}") from None


def shape_of(init: str, required: bool = True) -> dict:
    """The model options (`train.arguments.ModelArguments`) that build a random model of the shape of the model
    folder `init`: a baseline without pretraining compared with fine-tunings of `init` (its max length is the
    fine-tuning's). Not `required`: {} when `init` cannot be read yet (a dry run's plan names a run to come)."""
    import roberta

    try:
        config = roberta.load_config(init)
    except (OSError, ValueError) as err:
        if not required:
            return {}
        raise UserError(f"--init {init}: cannot read its config.json ({err})") from None
    return {"layers": config.num_hidden_layers, "hidden_size": config.hidden_size,
            "heads": config.num_attention_heads, "intermediate_size": config.intermediate_size}


def training(name: str, module, extra: str = "", **options) -> Step:
    """A `train.pretrain` / `train.finetune` run of these options, with `resume=True` (at the end, unless the
    options place it). `extra`: more options as a command-line string (a user's --finetune-args), parsed exactly
    as `python -m MODULE` parses them and placed after `resume`, so the options after it are fixed."""
    options = {k: v for k, v in options.items() if v is not None}  # None: the script's default, as on the command line
    options.setdefault("resume", True)
    names = list(options)
    head, tail = names[:names.index("resume") + 1], names[names.index("resume") + 1:]
    argv = [*argv_of({k: options[k] for k in head}), *split_options(extra, module.__name__),
            *argv_of({k: options[k] for k in tail})]
    command = shlex.join(["python", "-m", module.__name__, *argv])
    if extra.strip():
        args = module.parse_args(argv)  # its command: `command`
    else:
        args = ARGUMENTS[module](**options, command=command)
    return Step(name, Path(args.out), command, lambda: run_main(module.run, args), args=args, kind=module.__name__)


def script(name: str, module, argv: list[str], folder: Path, marker: str = METRICS_NAME,
           needs: list[Path] = ()) -> Step:
    """A script without an arguments object, through its `main(argv)`."""
    return Step(name, Path(folder), shlex.join(["python", "-m", module.__name__, *argv]),
                lambda: module.main(argv), marker, list(needs), kind=module.__name__)


def function(name: str, folder: Path, marker: str, action: Callable[[], int], shown: str, kind: str = "") -> Step:
    """Work done by the experiment itself; `shown` says what it is in place of a command."""
    return Step(name, Path(folder), shown, action, marker, kind=kind, is_command=False)


_plans_running = 0  # `run_steps` calls in progress: a plan run by a step of another (`train.recipe --gpu`'s
# sentiment experiment) leaves the interrupted line to the outermost


def run_steps(steps: list[Step], after: Callable[[Step], None] | None = None, rerun: str = "") -> int:
    """Run the unfinished steps in order; the first failure stops the plan with its exit code. `after(step)`
    is called after each step run; `rerun` is the command that continues the plan (for the messages). A step
    interrupted (Ctrl-C or SIGTERM: it ends with EXIT_INTERRUPTED, a training step's checkpoint saved, or raises
    KeyboardInterrupt) stops the plan with "interrupted (step NAME): run RERUN again to continue where it
    stopped" and EXIT_INTERRUPTED: not an error to fix."""
    global _plans_running
    outermost = _plans_running == 0
    _plans_running += 1
    try:
        return _run_steps(steps, after, rerun, outermost)
    finally:
        _plans_running -= 1


def _run_steps(steps: list[Step], after, rerun: str, outermost: bool) -> int:
    for step in steps:
        if step.done():
            print(f"== {step.name}: already done ({step.folder})", flush=True)
            finish_cleanup(step)
            if differ := made_otherwise(step):
                print(f"warning: {step.name} in {step.folder} was made by another command ({differ}), and its "
                      f"results stand in for this one's; delete {step.folder} to make it with the options given now",
                      file=sys.stderr, flush=True)
            continue
        if waiting := [str(p) for p in step.needs if not finished(p)]:
            print(f"== {step.name}: not yet (waiting for {', '.join(waiting)})", flush=True)
            continue
        resuming = step.args is not None and (step.folder / "checkpoints").is_dir()
        print(f"== {step.name}: {'resuming ' if resuming else ''}{step.shown}", flush=True)
        started = time.time()
        os.environ[RESUME_HINT_ENV] = f"run {rerun or 'the same command'} again to continue (no --resume needed)"
        try:
            code = step.action()
        except KeyboardInterrupt:
            code = EXIT_INTERRUPTED
        finally:
            os.environ.pop(RESUME_HINT_ENV, None)
        if code == EXIT_INTERRUPTED:
            if outermost:
                print(f"interrupted (step {step.name}): run {rerun or 'the same command'} again to continue where it "
                      "stopped", file=sys.stderr, flush=True)
            return EXIT_INTERRUPTED
        if code != 0:
            print(f"error: step {step.name} stopped (exit code {code}); fix it and run {rerun or 'the same command'}"
                  " again to continue where it stopped", file=sys.stderr)
            return code
        print(f"== {step.name}: done in {time.time() - started:.0f} s", flush=True)
        if step.args is None:  # a training step records its command in metrics.json; a script's is kept here
            with contextlib.suppress(OSError):  # a note for a later run, not this step's result
                write_atomic(_command_file(step), step.command + "\n")
        if after:
            after(step)
    return 0




def _command_file(step: Step) -> Path:
    return step.folder / COMMAND_FILE.format(step.name.replace("/", "-"))


def finish_cleanup(step: Step) -> None:
    """Delete the checkpoints a finished training step's run left (stopped between its metrics.json and their
    deletion: for a real run, the optimizer state too, several times the model's size), as the run would have,
    unless its recorded command kept them (--keep-checkpoints)."""
    checkpoints = step.folder / CHECKPOINTS
    if step.args is None or not checkpoints.is_dir():
        return
    try:
        with contextlib.redirect_stderr(io.StringIO()):  # argparse's complaint about an old command: keep them
            recorded = parsed_command(RunMetrics.read(step.folder).command or "")
    except (OSError, ValueError, SystemExit):
        return
    if recorded is None or recorded.get("keep_checkpoints"):
        return
    shutil.rmtree(checkpoints, ignore_errors=True)
    print(f"== {step.name}: deleted the checkpoints its finished run left in {checkpoints}", flush=True)


def made_otherwise(step: Step) -> str:
    """For a finished step whose recorded command differs from the step's now, the options that differ ("--lr
    0.001 -> 0.0005, --max-steps 20 -> 8000"): a training step's from its metrics.json, a script step's (a
    tokenizer, a TAPT corpus, an average) from the command recorded beside its output; else "" (the same, or
    nothing recorded). Options that do not describe the run (`NOT_RECIPE`: --out, --cache-dir, ...) are not
    compared: a recipe folder moved elsewhere, or another cache, makes the same run."""
    if step.args is None:
        try:
            recorded = _command_file(step).read_text(encoding="utf-8").strip()
        except OSError:
            return ""
        if recorded == step.command:
            return ""
        try:
            before, now = _script_options(recorded), _script_options(step.command)
        except ValueError:  # a recorded line that does not split
            return recorded
        return _differences(_moved(before, now), now)
    try:
        recorded = RunMetrics.read(step.folder).command
    except (OSError, ValueError):
        return ""
    if not isinstance(recorded, str) or same_run(recorded, step.command):
        return ""
    try:
        with contextlib.redirect_stderr(io.StringIO()):  # argparse's own complaint is not this run's error
            before = parsed_command(recorded)
    except (SystemExit, ValueError):
        return "a command this version cannot read"
    if before is None:
        return "another script"
    now = step.args.recorded()
    return _differences(_moved(before, now), now)


def _moved(before: dict, now: dict) -> dict:
    """The recorded options with the experiment's old folder replaced by its new one, in every value: a recipe
    folder copied or moved elsewhere names its own paths (OUT/tokenizer/..., OUT/mlm) under another root. The
    roots are what is left of the two --out paths after their common end (A/run/mlm, B/gsrun/mlm: A/run, B/gsrun)."""
    old, new = before.get("out"), now.get("out")
    if not isinstance(old, str) or not isinstance(new, str) or old == new:
        return before
    old_parts, new_parts = Path(old).parts, Path(new).parts
    common = 0
    while common < min(len(old_parts), len(new_parts)) - 1 and old_parts[-1 - common] == new_parts[-1 - common]:
        common += 1
    old_root = str(Path(*old_parts[:len(old_parts) - common]))
    new_root = str(Path(*new_parts[:len(new_parts) - common]))
    return {k: v.replace(old_root + "/", new_root + "/") if isinstance(v, str) else v for k, v in before.items()}


def _differences(before: dict, now: dict) -> str:
    """ "--flag old -> new, ..." for the options (field names) whose values differ, `NOT_RECIPE` left out ("": the
    same run)."""
    return ", ".join(f"--{k.replace('_', '-')} {shown_value(before.get(k))} -> {shown_value(now.get(k))}"
                     for k in sorted({*before, *now}) if before.get(k) != now.get(k) and k not in NOT_RECIPE)


def _script_options(command: str) -> dict:
    """A script's command line as {option as a field name: its words}: an option takes the words up to the next
    `--option` (a flag: True); the words before the first option are the positional arguments ("arguments")."""
    words = shlex.split(command)[3:]  # after "python -m MODULE"
    options, name = {}, "arguments"
    for word in words:
        if word.startswith("--") and len(word) > 2:
            name = word[2:].replace("-", "_")
            options[name] = True
        else:
            value = options.get(name)
            options[name] = word if value in (None, True) else f"{value} {word}"
    return options


def parsed_command(command: str) -> dict | None:
    """The recorded options of a training command line (None: not a training script's)."""
    words = shlex.split(command)
    module = {m.__name__: m for m in ARGUMENTS}.get(words[2] if len(words) > 2 else "")
    return None if module is None else module.parse_args(words[3:]).recorded()


def same_run(recorded: str, command: str) -> bool:
    """Whether two commands of a step make the same run: equal, or (training steps) parsed to the same options,
    so that a different spelling of the same value is no change."""
    if recorded == command:
        return True
    if shlex.split(other := command)[:3] != shlex.split(recorded)[:3]:
        return False
    try:
        before = parsed_command(recorded)
        return before is not None and before == parsed_command(other)
    except SystemExit:  # an option this version no longer has
        return False
