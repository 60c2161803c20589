"""Held-out MLM accuracy against total training tokens, phase after phase, with what more tokens would buy.

    python -m scripts.phase_curve                                  # assets/mini-roberta-mlm -> its phases.png
    python -m scripts.phase_curve --model assets/mini-roberta-mlm --target 0.50 --tokens-per-s 5300

Reads the shipped model's phases.json (each phase's metrics.json: tokens, held-out accuracy on all WikiText-2
valid 128-token rows; the mean over several fixed masks where the phase was scored so) and draws accuracy
against cumulative tokens on a log axis, titled with the text and row length the records say each phase was
scored on (`scored_on`). The extrapolation is the straight line (accuracy linear in log tokens) through the last
phase end whose slope fits the phase ends of the last doubling of tokens (least squares): the recent rate,
carried forward, less swayed by one phase than a line through the last two ends. A phase of no
tokens (a weight average of earlier phases, `train.average`) is a point above the phase before it. It is an
extrapolation, not a measurement; curves of this kind bend down (flatten) as a model of fixed size approaches
its capacity, so the line is an optimistic bound.
Prints the tokens (and hours at --tokens-per-s) at which the line reaches --target.
"""
from __future__ import annotations

import argparse
import math
import shlex
import sys
import textwrap
from pathlib import Path

import roberta
from roberta.run_metrics import PHASES_NAME, dataset_name, read_phase_history
from train.reporting import save_figure
from train.runtime import EXIT_OK, EXIT_USER_ERROR, exit_code, output_file, report_user_error


OUT_OF_REACH = 1000  # an extrapolation past this many times the tokens read is not printed as a number


def phase_points(model: Path) -> list[tuple[float, float]]:
    """(cumulative tokens, held-out accuracy) at the end of each phase."""
    points, total = [], 0.0
    for i, phase in enumerate(read_phase_history(model), 1):
        if phase.train_tokens is None or phase.held_out[1] is None:
            raise ValueError(f"{model / PHASES_NAME}: phase {i} has no train_tokens or held-out accuracy")
        total += phase.train_tokens
        points.append((total, phase.held_out[1]))
    return points


def phase_labels(model: Path) -> list[str]:
    """'phase N', with '(average)' for a weight average and '(GPU)' for a phase trained on one."""
    return [f"phase {i}" + (" (average)" if not phase.train_tokens else
                            " (GPU)" if (phase.hardware or {}).get("gpu") else "")
            for i, phase in enumerate(read_phase_history(model), 1)]


def scored_on(model: Path) -> list[str | None]:
    """Per phase, what its record says its held-out accuracy was scored on: "wikitext-2/wiki.valid.tokens,
    128-token rows" (the text as `dataset_name` names it, the GPU upload's .xz copy as the text itself); None
    where the record names neither. A figure rescored under several masks (`train.evaluate`'s "mlm" section)
    records its text and row length; a run's own final evaluation records its text (`eval_data`), and scored
    rows of the model's longest input (its config.json) unless its command passed `--eval-length`."""
    longest = _longest_input(model)
    scored = []
    for phase in read_phase_history(model):
        if phase.held_out[3] > 1:  # the figure is the rescoring's (RunMetrics.held_out)
            source, rows = phase.mlm.get("source"), phase.mlm.get("max_length")
        else:
            source, rows = phase.eval_data, _eval_length(phase.command) or longest
        parts = [dataset_name(source.removesuffix(".xz")) if isinstance(source, str) and source else None,
                 f"{rows}-token rows" if isinstance(rows, int) else None]
        scored.append(", ".join(p for p in parts if p) or None)
    return scored


def _longest_input(model: Path) -> int | None:
    """The model's longest input in tokens (what `train.pretrain` scores held-out rows at by default), None
    without a readable config.json."""
    try:
        return roberta.load_config(model).max_length
    except (OSError, ValueError):
        return None


def _eval_length(command) -> int | None:
    """N of an `--eval-length N` (or `--eval-length=N`) in a recorded command line, else None."""
    try:
        words = shlex.split(command) if isinstance(command, str) else []
    except ValueError:
        return None
    for word, after in zip(words, [*words[1:], ""]):
        name, equals, value = word.partition("=")
        if name == "--eval-length" and (value if equals else after).isdigit():
            return int(value if equals else after)
    return None


def title_of(scored: list[str | None]) -> str:
    """The figure's title: what every phase was scored on, or, where the phases differ, what each group of
    phases was ("phases 1-3, 5")."""
    groups: dict[str | None, list[int]] = {}
    for i, what in enumerate(scored, 1):
        groups.setdefault(what, []).append(i)
    if len(groups) == 1:
        (what,) = groups
        return f"Held-out MLM accuracy ({what}) across phases" if what else "Held-out MLM accuracy across phases"
    parts = [f"{what or 'not recorded'}: {_phase_ranges(phases)}" for what, phases in groups.items()]
    return f"Held-out MLM accuracy ({'; '.join(parts)}) across phases"


def _phase_ranges(numbers: list[int]) -> str:
    """[1, 2, 3, 5] -> "phases 1-3, 5"; [4] -> "phase 4"."""
    runs = []
    for n in numbers:
        if runs and n == runs[-1][1] + 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    spans = ", ".join(f"{a}-{b}" if b > a else f"{a}" for a, b in runs)
    return f"phase{'s' if len(numbers) > 1 else ''} {spans}"


def log_linear(points: list[tuple[float, float]], span: float = 2.0) -> tuple[float, float]:
    """(accuracy gained per doubling of tokens, accuracy at 1 token) of the line through the last point whose
    slope fits (least squares) the phase ends of the last `span`-fold of tokens: one phase's step, which a
    weight average or a change of data can make large or small, moves it less than alone. Where no phase end
    lies in that span, the line runs through the last one before it with fewer tokens (ValueError if none)."""
    t1, a1 = points[-1]
    earlier = [(t, a) for t, a in points[:-1] if t < t1]
    if not earlier:
        raise ValueError("an extrapolation needs two phase ends at different numbers of tokens")
    window = [(t, a) for t, a in earlier if t >= t1 / span] or earlier[-1:]
    dx = [math.log2(t / t1) for t, _ in window]
    per_doubling = sum(x * (a - a1) for x, (_, a) in zip(dx, window)) / sum(x * x for x in dx)
    return per_doubling, a1 - per_doubling * math.log2(t1)


def tokens_for(target: float, per_doubling: float, intercept: float) -> float | None:
    """The tokens at which the line reaches `target`; None where it never does in floating point (a flat or
    falling line, or one so nearly flat, as equal phase ends give up to rounding, that 2**x overflows)."""
    if per_doubling <= 0:
        return None
    doublings = (target - intercept) / per_doubling
    return 2 ** doublings if doublings < sys.float_info.max_exp else None


def plot(points, per_doubling, intercept, target, path: Path, labels: list[str] | None = None,
         title: str = "Held-out MLM accuracy across phases"):
    """Draw the phase ends and the extrapolation (none when `per_doubling` is None) to `path` under `title`
    (`title_of`); returns the matplotlib Figure."""
    import matplotlib
    import matplotlib.ticker
    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9.5, 4.6))
    ax = fig.subplots()
    tokens = [t / 1e6 for t, _ in points]
    ax.plot(tokens, [100 * a for _, a in points], "o-", color="tab:blue", label="end of each phase (measured)")
    labels = labels or [f"phase {i}" for i in range(1, len(points) + 1)]
    # the points carry their numbers: above, below when the phase before is close (within 12% more tokens), to
    # the right for an average (at the x of the phase before it), by number alone; a box beside the axes
    # lists every figure and names the averages
    # where the last phase ends crowd each other (within a doubling of the last, or two where one phase alone
    # doubled the tokens), a zoomed inset in the empty lower right carries their numbers instead
    zoomed, doublings = [], 1
    for doublings in (1, 2) if len(points) > 6 else ():
        zoomed = [i for i, (t, _) in enumerate(points, 1) if t >= points[-1][0] / 2 ** doublings]
        if len(zoomed) > 4:
            break
    crowded = len(zoomed) > 4
    if crowded:
        inset = ax.inset_axes([0.56, 0.07, 0.42, 0.29])
        inset.plot([points[i - 1][0] / 1e6 for i in zoomed], [100 * points[i - 1][1] for i in zoomed], "o-",
                   color="tab:blue", ms=4)
        inset.set_title("the last doubling of tokens, zoomed" if doublings == 1 else
                        f"the last {doublings} doublings of tokens, zoomed", fontsize=7)
        inset.tick_params(labelsize=6.5)
        inset.margins(x=0.12, y=0.25)
    for i, ((t, a), label) in enumerate(zip(points, labels), 1):
        before = points[i - 2][0] if i > 1 else 0
        offset = (7, -3) if t == before else (0, -13) if t < 1.12 * before else (0, 6)
        number = label.split()[1]
        in_inset = crowded and i in zoomed
        if in_inset and t != before:
            offset = (0, 5)  # the inset's linear scale leaves room above every point
        (inset if in_inset else ax).annotate(number, (t / 1e6, 100 * a), textcoords="offset points",
                                             fontsize=7 if in_inset else 8, xytext=offset,
                                             ha="left" if t == before else "center")
    # the box of every figure beside the axes, where it hides no point
    ax.text(1.02, 1.0, "\n".join(f"{label}: {100 * a:.1f}%" for (_, a), label in zip(points, labels)),
            transform=ax.transAxes, va="top", ha="left", fontsize=7.5, family="monospace",
            bbox={"boxstyle": "round", "facecolor": "white", "edgecolor": "0.8"})
    if per_doubling is not None:  # None: one phase end, no rate
        needed = tokens_for(target, per_doubling, intercept)
        end = max(4 * points[-1][0], (needed or 0) * 1.3)
        xs = [points[-1][0] * (end / points[-1][0]) ** (i / 50) for i in range(51)]
        ax.plot([x / 1e6 for x in xs], [100 * (intercept + per_doubling * math.log2(x)) for x in xs], "--",
                color="tab:gray",
                label=f"extrapolation: the last doubling's rate, {100 * per_doubling:+.1f} points per doubling")
    ax.axhline(100 * target, color="tab:red", lw=0.8, label=f"target {100 * target:.0f}%")
    ax.set_xscale("log")
    ax.margins(y=0.1)  # room for the labels below the lowest point
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda x, _: f"{x:g}"))
    ax.xaxis.set_minor_formatter(matplotlib.ticker.FuncFormatter(
        lambda x, _: f"{x:g}" if str(int(x))[0] in "25" else ""))
    ax.set(xlabel="total training tokens (millions, log scale)", ylabel="held-out MLM accuracy (%)")
    ax.set_title(textwrap.fill(title, 100))  # phases scored on different data list each group
    ax.legend(fontsize=7 if crowded else 8, loc="lower right", bbox_to_anchor=(0.995, 0.42) if crowded else None)
    save_figure(fig, path, dpi=110)  # laid out tightly, written in one step
    return fig


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m scripts.phase_curve", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="assets/mini-roberta-mlm", help="a shipped MLM folder with phases.json")
    p.add_argument("--target", type=float, default=0.50,
                   help="accuracy to extrapolate to (default: %(default)s, issue 16's target)")
    p.add_argument("--tokens-per-s", type=float, default=5300.0,
                   help="training speed for the hours estimate (default: %(default)s: phase 5 on the 2-core EPYC "
                        "with AVX512-BF16)")
    p.add_argument("--out", default=None, help="the figure (default: MODEL/phases.png)")
    args = p.parse_args(argv)
    if not 0 < args.target < 1 or not args.tokens_per_s > 0:  # were drawn and extrapolated without a word
        p.error(f"--target must be between 0 and 1 (an accuracy) and --tokens-per-s positive, got {args.target} and "
                f"{args.tokens_per_s}")
    model = Path(args.model)
    if not (model / PHASES_NAME).is_file():
        print(f"error: {model / PHASES_NAME} not found (a folder shipped by scripts.release)", file=sys.stderr)
        return EXIT_USER_ERROR
    try:
        out = output_file(args.out or model / "phases.png", "phases.png", suffixes=(".png", ".svg", ".pdf"))
    except (OSError, ValueError) as err:  # a .txt name: matplotlib cannot write it
        p.error(str(err))
    try:
        points, labels, title = phase_points(model), phase_labels(model), title_of(scored_on(model))
        if not points:
            raise ValueError(f"{model / PHASES_NAME} lists no phase")
        out.parent.mkdir(parents=True, exist_ok=True)
    except (OSError, ValueError) as err:
        return report_user_error(err)
    try:
        per_doubling, intercept = log_linear(points)
    except ValueError:  # a first release: one phase end, no rate yet
        per_doubling = intercept = None
    plot(points, per_doubling, intercept, args.target, out, labels, title)
    for (t, a), label in zip(points, labels):
        print(f"{label}: {t / 1e6:.1f}M tokens in all, held-out accuracy {100 * a:.1f}%")
    if per_doubling is None:
        print("no rate to extrapolate yet: it needs two phase ends at different numbers of tokens")
        print(f"wrote {out}")
        return EXIT_OK
    print(f"recent rate (the phase ends of the last doubling of tokens): {100 * per_doubling:+.2f} points per "
          "doubling of tokens")
    needed = tokens_for(args.target, per_doubling, intercept)
    if needed is None:
        print("the recent phases did not improve accuracy measurably: no extrapolation")
    elif needed <= points[-1][0]:
        print(f"the target {100 * args.target:.0f}% is already reached")
    elif needed > OUT_OF_REACH * points[-1][0]:  # a nearly flat line reaches it at absurd token counts
        print(f"the target {100 * args.target:.0f}% is out of reach at this rate: more than {OUT_OF_REACH:,} times "
              "the tokens read so far")
    else:
        more = needed - points[-1][0]
        print(f"the line reaches {100 * args.target:.0f}% at {needed / 1e6:.0f}M tokens: {more / 1e6:.0f}M more, "
              f"{more / args.tokens_per_s / 3600:.1f} h at {args.tokens_per_s:,.0f} tokens/s")
    print(f"wrote {out}")
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(exit_code(main))
