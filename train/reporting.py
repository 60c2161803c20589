"""What a run reports while it trains: `log.jsonl` (one JSON object per logged step and per evaluation) and
`curves.png` (loss and evaluation metrics against tokens seen). The model card is `train.model_card`."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from roberta.files import WriteError, replaced_atomically, write_atomic

from .checkpointing import Checkpoints
from .exit_codes import with_how_to_go_on

LOG_NAME, CURVES_NAME = "log.jsonl", "curves.png"
# The lines of a figure that has one per run or probe: Okabe and Ito's colour-blind-safe palette, every colour at
# least 3:1 against white (WCAG 1.4.11): its yellow left out, and its orange (#E69F00, 2.2:1) and sky blue (#56B4E9,
# 2.3:1) replaced by a brown (4.3:1) and an azure (4.1:1), each at least as far from its vermillion and blue, seen
# with deuteranopia or protanopia (Machado et al.'s simulation), as the orange and sky blue were. Each line also has
# its own marker and line style, so that a reader who cannot tell two colours apart still tells the lines apart
# (WCAG 1.4.1)
BLACK, BROWN, AZURE, GREEN, BLUE, VERMILLION, PINK = (
    "#000000", "#AC6939", "#1B79F3", "#009E73", "#0072B2", "#D55E00", "#CC79A7")
LINE_COLOURS = (BLACK, BROWN, AZURE, GREEN, BLUE, VERMILLION, PINK)
LINE_MARKERS = "osD^v<>P"
LINE_DASHES = ("-", "--", "-.", ":")


def append_log(path: Path, entry: dict) -> None:
    """Add one JSON line; a write that fails (a full disk) names the file and says how to go on (`how_to_go_on`)."""
    try:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")
    except OSError as err:
        raise with_how_to_go_on(WriteError(path, err), path.parent, lambda: how_to_go_on(path.parent),
                                always=True) from None


RESUME_HINT_ENV = "TRAIN_RESUME_HINT"  # how to go on after Ctrl-C, when the run is a step of an experiment


def resume_hint() -> str:
    """How to go on with a run stopped after a checkpoint: the experiment's command again for a step of one
    (RESUME_HINT_ENV), else the same command with --resume."""
    return os.environ.get(RESUME_HINT_ENV) or "continue with the same command plus --resume"


def how_to_go_on(out: Path) -> str:
    """How to go on with the run in `out` once it stopped: a step of an experiment, the experiment's command again
    (RESUME_HINT_ENV); else the same command with --resume, from the last checkpoint or, before the first one, from
    the start (--resume all the same: without it the command refuses a folder holding the run's log)."""
    if hint := os.environ.get(RESUME_HINT_ENV):
        return hint
    if Checkpoints(out).latest("step") is not None:
        return "run the same command again with --resume (it goes on from its last checkpoint)"
    return "run the same command again with --resume (no checkpoint was written yet: the run starts over)"


def read_log(path: Path) -> list[dict]:
    """The log's entries. A torn last line (a write cut short: a full disk, a killed process) is dropped with a
    warning; a bad line before the last is an error naming the file and the line."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    last = max((number for number, line in enumerate(lines, 1) if line.strip()), default=0)
    entries = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
            if not isinstance(entry, dict) or "step" not in entry:
                raise ValueError("not a log entry")
        except ValueError as err:
            if number < last:
                raise ValueError(f"{path}: line {number} is not a log entry ({err})") from None
            print(f"warning: {path}: its last line was cut short (a write that did not finish); dropped",
                  file=sys.stderr)
            continue
        entries.append(entry)
    return entries


def truncate_log(path: Path, step: int, keep_eval_at_step: bool = True) -> None:
    """Forget log lines written after the checkpoint we resume from (they will be written again), and a torn
    last line. `keep_eval_at_step=False`: the checkpoint at `step` was saved before that step's evaluation (a closing
    evaluation after a periodic save, cut by a kill), so an evaluation logged at `step` goes too."""
    if not path.exists():
        return
    kept = [entry for entry in read_log(path) if entry["step"] < step or entry["step"] == step and
            (keep_eval_at_step or entry.get("type") != "eval")]
    write_atomic(path, "".join(json.dumps(entry) + "\n" for entry in kept))


def line_style(i: int) -> dict:
    """The colour, marker and line style of a figure's i-th line (`LINE_COLOURS`): no two of its first
    len(LINE_MARKERS) lines share a marker, and neighbours differ in colour and line style too."""
    return {"color": LINE_COLOURS[i % len(LINE_COLOURS)], "marker": LINE_MARKERS[i % len(LINE_MARKERS)],
            "linestyle": LINE_DASHES[i % len(LINE_DASHES)]}


# The bars of a figure that has one per arm (`train.summarize`), and the points drawn on them: the lines' colours
# but black (a bar's error bar is black: the arm's points would vanish in it), and each arm also its own hatch and
# marker, for the same reason as the lines'. The hatches are lines, one of each (dots would pass for the points;
# denser lines hide them, and cost PNG bytes); no diamond: such a figure keeps it for a weight average.
ARM_COLOURS = LINE_COLOURS[1:]
ARM_HATCHES = ("", "/", "-", "\\", "x", "+", "|")
ARM_MARKERS = LINE_MARKERS.replace("D", "")


def arm_style(i: int) -> dict:
    """The colour, bar hatch and point marker of a figure's i-th arm: no two of its first len(ARM_HATCHES) arms
    share a hatch or a marker, and neighbours differ in colour too."""
    return {"color": ARM_COLOURS[i % len(ARM_COLOURS)], "hatch": ARM_HATCHES[i % len(ARM_HATCHES)],
            "marker": ARM_MARKERS[i % len(ARM_MARKERS)]}


def save_figure(fig, path, dpi: int = 100) -> Path:
    """Lay out `fig` (tightly, unless it has a layout engine of its own: a constrained one places a legend outside
    its axes), write it in one step (a reader never sees half a file) and close it: an SVG or a PDF where `path`
    ends in .svg or .pdf, else a PNG."""
    import matplotlib.pyplot as plt

    fmt = {".svg": "svg", ".pdf": "pdf"}.get(Path(path).suffix.lower(), "png")
    if fig.get_layout_engine() is None:
        fig.tight_layout()
    try:
        with replaced_atomically(path) as tmp:
            fig.savefig(tmp, dpi=dpi, format=fmt)  # the temporary name does not end in the format
    finally:
        plt.close(fig)
    return Path(path)


def read_record(path, looks_right, what: str) -> dict:
    """The JSON record at `path` that a script wrote (a figure is drawn again from it), if `looks_right(record)`:
    else FileNotFoundError or ValueError naming the file and `what` it should be (not a KeyError from a figure)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file (give {what})")
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as err:
        raise ValueError(f"{path}: not {what} ({err})") from None
    if not isinstance(record, dict) or not looks_right(record):
        raise ValueError(f"{path}: not {what}")
    return record


def redraw_record(path, looks_right, what: str, draw, png) -> Path:
    """`draw(record, png)` of the record at `path` (`read_record`): a figure drawn again from its record alone. A
    record of the right outline whose insides the figure cannot read is refused as `read_record` refuses (a KeyError
    from deep in the figure was a traceback)."""
    record = read_record(path, looks_right, what)
    try:
        draw(record, png)
    except (KeyError, IndexError, TypeError) as err:
        raise ValueError(f"{path}: not {what} ({type(err).__name__}: {err})") from None
    return Path(png)


# curves.png's lines: the training loss thin, solid and plain (hundreds of points), every held-out line dashed with
# a marker at each evaluation, and their colours far apart in grey too and at least 3:1 against white (WCAG
# 1.4.11), so that the figure reads without colour (WCAG 1.4.1) and in a greyscale print
TRAIN_LINE = {"color": BLACK, "linestyle": "-", "marker": "", "lw": 1}
HELD_OUT_LINE = {"color": VERMILLION, "linestyle": "--", "marker": "o"}


def plot_curves(log_path: Path, png_path: Path) -> None:
    """Training loss and evaluation metrics against tokens seen."""
    if not Path(log_path).exists():
        return
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    entries = read_log(log_path)
    train = [e for e in entries if e["type"] == "train"]
    evals = [e for e in entries if e["type"] == "eval"]
    other = ["accuracy"] if any("accuracy" in e for e in evals) else []  # a classifier's held-out accuracy
    fig, axes = plt.subplots(1, 1 + bool(other), figsize=(11 if other else 6, 4), squeeze=False)
    ax = axes[0][0]
    if train:
        ax.plot([e["tokens"] for e in train], [e["loss"] for e in train], label="train loss", **TRAIN_LINE)
    if any("loss" in e for e in evals):
        ax.plot([e["tokens"] for e in evals if "loss" in e], [e["loss"] for e in evals if "loss" in e],
                label="eval loss", ms=4, lw=1.2, **HELD_OUT_LINE)
    ax.set(xlabel="tokens seen", ylabel="loss", title="loss")
    ax.legend()
    ax.grid(alpha=0.3)
    if other:
        ax = axes[0][1]
        for key in other:
            ax.plot([e["tokens"] for e in evals if key in e], [e[key] for e in evals if key in e],
                    label=f"eval {key}", ms=4, lw=1.2, **HELD_OUT_LINE)
        ax.set(xlabel="tokens seen", title="evaluation")
        ax.legend()
        ax.grid(alpha=0.3)
    save_figure(fig, png_path)


def distinct_labels(folders: list[Path]) -> list[str]:
    """Each folder's name, with as many of its parent folders as it takes to tell the folders apart (a phase's
    `assets/mini-roberta-mlm` and the next one's `gpu-4/mini-roberta-mlm` are both "mini-roberta-mlm"). The names
    are the resolved folders': `../run` and `../../run` are told apart by the folders holding them, not by ".."."""
    parts = [Path(folder).resolve().parts for folder in folders]
    for depth in range(1, max(len(p) for p in parts) + 1):
        labels = [Path(*p[-depth:]).as_posix() for p in parts]  # a path up to its root: "/run", not "//run"
        if len(set(labels)) == len(labels):
            break
    return labels


def plot_member_curves(members: list[tuple[str, Path]], png_path: Path) -> bool:
    """The training curves of the runs a weight average was made from (the average itself has none): each
    member's training loss and evaluation accuracy against tokens seen. False (no figure) when no member
    has a log."""
    logs = [(label, read_log(log)) for label, log in members if Path(log).is_file()]
    if not logs:
        return False
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (loss_ax, acc_ax) = plt.subplots(1, 2, figsize=(11, 4))
    for i, (label, entries) in enumerate(logs):
        train = [e for e in entries if e["type"] == "train"]
        evals = [e for e in entries if e["type"] == "eval" and "accuracy" in e]
        style = line_style(i)
        # a marker on every few of the hundreds of training points: enough to tell the lines apart, and a short
        # run's one or two points stay visible
        loss_ax.plot([e["tokens"] for e in train], [e["loss"] for e in train], lw=1, ms=4,
                     markevery=max(1, len(train) // 12), label=label, **style)
        acc_ax.plot([e["tokens"] for e in evals], [e["accuracy"] for e in evals], ms=4, label=label, **style)
    loss_ax.set(xlabel="tokens seen", ylabel="loss", title="training loss of the averaged runs")
    acc_ax.set(xlabel="tokens seen", title="their evaluation accuracy")
    for ax in (loss_ax, acc_ax):
        ax.legend()
        ax.grid(alpha=0.3)
    save_figure(fig, png_path)
    return True
