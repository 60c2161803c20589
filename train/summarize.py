"""Mean and standard deviation over seeds of fine-tuning runs: dev accuracy, IMDB accuracy, calibration.

    python -m train.summarize runs/sst2-s0 runs/sst2-s1 runs/sst2-s2
    python -m train.summarize --arm sst2 runs/sst2-s* --arm imdb-sst2 runs/imdb-sst2-s* --out runs/summary.json
    python -m train.summarize --redraw assets/mini-roberta-sst2/arms.json   # arms.png again, from the JSON alone

Each run is the model its fine-tuning kept (by default the end of the run, never a best-of-dev checkpoint),
so the mean over seeds is an honest estimate and the standard deviation (sample, n - 1) says how much one run
can differ from the next. An averaged model (`train.average`, metrics.json "averaged") is listed on its own
row, not mixed into the seeds' mean. Also per run: the fitted temperature, dev ECE before and after it, the
behaviour checks (all and per category), fine-tuning time. Writes a Markdown table (--out X.json also
writes X.md next to it, and X.png: per arm, bars of the seeds' mean with their standard deviation, each seed
a mark, the weight average a diamond; each arm has its own colour, hatch and mark). The dev figures are called SST-2
dev's only when every run's dev set is SST-2 dev; else the table names each dev set (a file, or a slice held out of
the training file: `train.finetune --dev-fraction`).

Two members of an arm that are the same run (the same recorded command, or the same seed and init: a copy of a
run folder, an export beside its run) are warned about on stderr, naming both: one seed counted twice makes the
mean lean on it and the standard deviation too small. The summary is still written.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import statistics
import sys
from pathlib import Path

from roberta.files import write_atomic
from roberta.run_metrics import RunMetrics

from .arguments import NOT_RECIPE
from .reporting import arm_style, read_record, redraw_record, save_figure
from .runtime import EXIT_OK, exit_code, output_file, report_user_error

OPTIONAL = {"end_weights_dev_accuracy"}  # a column only when some run has the figure
FIELDS = [  # (metrics.json key, column title, as a percentage)
    ("dev_accuracy", "{dev} acc", True),  # dev: `dev_name`
    ("end_weights_dev_accuracy", "dev acc of the end-of-run weights", True),  # runs that kept a moving average
    ("imdb_accuracy", "IMDB acc", True),
    ("imdb_accuracy_whole", "IMDB acc (whole)", True),
    ("dev_ece_uncalibrated", "dev ECE before T", True),
    ("dev_ece", "dev ECE after T", True),
    ("temperature", "T", False),
    ("checks_accuracy", "checks", True),
    ("train_time_s", "train s", False),
]


def read_run(folder) -> dict:
    m = RunMetrics.read_finished(folder, classifier=True).to_dict()
    row = {key: m.get(key) for key, _, _ in FIELDS}
    checks = m.get("checks") or {}
    row["checks_accuracy"] = checks.get("accuracy")
    row["checks_categories"] = {k: v["accuracy"] for k, v in (checks.get("categories") or {}).items()}
    row["averaged"] = m.get("averaged")
    row["max_length"] = m.get("max_length")  # the tokens a review was cut to for imdb_accuracy
    row["dev_set"] = run_dev_set(RunMetrics.from_dict(m))
    row["folder"] = str(folder)
    return row


SST2_DEV = "SST-2 dev"


def run_dev_set(metrics: RunMetrics) -> str:
    """A run's dev set as the summary names it: SST2_DEV, its file, or the slice held out of its training file."""
    return metrics.dev_set_named(lambda file: f"`{file}`", sst2=SST2_DEV)


def dev_name(summary: dict) -> str:
    """What the summary calls its dev figures: "SST-2 dev" when every run's dev set is (a summary written before the
    runs named theirs was of SST-2 runs), else "dev"."""
    sets = {r.get("dev_set", SST2_DEV) for arm in summary.values() for r in arm["runs"]}
    return SST2_DEV if sets <= {SST2_DEV} else "dev"


def same_runs(folders) -> list[tuple[str, str, str]]:
    """(earlier folder, later folder, what they share) for the members of one arm (weight averages left out)
    that are one run: the same recorded command (--out and the other `NOT_RECIPE` options aside), or the same
    --seed and --init."""
    seen: dict[tuple, str] = {}
    pairs = []
    for folder in folders:
        options = _recorded_options(folder)
        if options is None:
            continue
        keys = [("the same command", json.dumps(options, sort_keys=True, default=str)),
                (f"--seed {options.get('seed')} and --init {options.get('init')}", options.get("seed"),
                 options.get("init"))]
        if first := next((seen[key] for key in keys if key in seen), None):
            pairs.append((first, str(folder), next(key[0] for key in keys if key in seen)))
        for key in keys:
            seen.setdefault(key, str(folder))
    return pairs


def _recorded_options(folder) -> dict | None:
    """The options of the training command a run folder's metrics.json records, `NOT_RECIPE` left out; None for a
    weight average, a folder without a readable command (an export of a checkpoint), or another script's."""
    from .experiment import parsed_command  # here: experiment imports the training scripts, and torch

    try:
        metrics = RunMetrics.read(folder).to_dict()
        with contextlib.redirect_stderr(io.StringIO()):  # argparse's complaint about an older command
            options = None if metrics.get("averaged") or not isinstance(metrics.get("command"), str) else \
                parsed_command(metrics["command"])
    except (OSError, ValueError, SystemExit):
        return None
    return None if options is None else {k: v for k, v in options.items() if k not in NOT_RECIPE}


def mean_std(values) -> tuple[float | None, float | None, int]:
    """(mean, sample standard deviation (n - 1), n) of the values that are not None; the std is None for fewer
    than two, the mean too for none. `train.ablation` uses it too."""
    values = [v for v in values if v is not None]
    if not values:
        return None, None, 0
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else None), len(values)


def summarize(arms: dict[str, list[str]]) -> dict:
    result = {}
    for name, folders in arms.items():
        runs = [read_run(f) for f in folders]
        seeds = [r for r in runs if not r["averaged"]]
        stats = {}
        for key, _, _ in FIELDS:
            mean, std, n = mean_std(r[key] for r in seeds)
            stats[key] = {"mean": mean, "std": std, "n": n}
        categories = sorted({c for r in seeds for c in r["checks_categories"]})
        stats["checks_categories"] = {c: dict(zip(("mean", "std", "n"), mean_std(r["checks_categories"].get(c)
                                                                                for r in seeds)))
                                      for c in categories}
        result[name] = {"runs": runs, "seeds": len(seeds), "stats": stats,
                        "averaged": [r for r in runs if r["averaged"]]}
    return result


def _fmt(value, pct: bool) -> str:
    if value is None:
        return "-"
    return f"{100 * value:.1f}" if pct else f"{value:.3g}" if value < 100 else f"{value:,.0f}"


def _shown_fields(summary: dict) -> list[tuple[str, str, bool]]:
    return [f for f in FIELDS if f[0] not in OPTIONAL or any(
        (arm["stats"].get(f[0]) or {}).get("mean") is not None for arm in summary.values())]


def to_markdown(summary: dict) -> str:
    fields = _shown_fields(summary)
    dev = dev_name(summary)
    head = "| arm | runs | " + " | ".join(title.format(dev=dev) + (" %" if pct else "") for _, title, pct in fields) \
        + " |"
    lines = [head, "|" + "---|" * (len(fields) + 2)]
    for name, arm in summary.items():
        cells = []
        for key, _, pct in fields:
            s = arm["stats"].get(key) or {"mean": None, "std": None}  # a summary written before the field
            cells.append("-" if s["mean"] is None else _fmt(s["mean"], pct) +
                         (f" ± {_fmt(s['std'], pct)}" if s["std"] is not None else ""))
        lines.append(f"| {name} (mean ± std) | {arm['seeds']} | " + " | ".join(cells) + " |")
        for run in arm["averaged"]:
            lines.append(f"| {name}: weight average of {run['averaged']} (`{run['folder']}`) | 1 | " +
                         " | ".join(_fmt(run.get(key), pct) for key, _, pct in fields) + " |")
    categories = sorted({c for arm in summary.values() for c in arm["stats"]["checks_categories"]})
    if categories:
        lines += ["", "Behaviour checks per category, % right (mean over seeds):", "",
                  "| arm | " + " | ".join(categories) + " |", "|" + "---|" * (len(categories) + 1)]
        for name, arm in summary.items():
            cats = arm["stats"]["checks_categories"]
            lines.append(f"| {name} | " +
                         " | ".join(_fmt(cats.get(c, {}).get("mean"), True) for c in categories) + " |")
    lines += ["", "Runs:"] + [f"- {name}: " + ", ".join(f"`{r['folder']}`" for r in arm["runs"])
                               for name, arm in summary.items()]
    if dev != SST2_DEV:  # the runs' own dev sets, each once
        sets = dict.fromkeys(r.get("dev_set", SST2_DEV) for arm in summary.values() for r in arm["runs"])
        lines += ["", f"Dev set{'s' if len(sets) > 1 else ''}: {'; '.join(sets)}."]
    return "\n".join(lines) + "\n"


PLOTTED = [("dev_accuracy", "{dev}"), ("imdb_accuracy", "IMDB, {read}"),  # dev: `dev_name`, read: `cut_to`
           ("imdb_accuracy_whole", "IMDB, whole\nreviews"), ("checks_accuracy", "behaviour checks")]


def cut_to(summary: dict) -> str:
    """How far the IMDB reviews were read for "imdb_accuracy": "first\n64 tokens" when every run says the same
    (it said 128 whatever the runs' length), else (runs from before the rows named it) without a number."""
    lengths = {r.get("max_length") for arm in summary.values() for r in arm["runs"]}
    if len(lengths) == 1 and None not in lengths:
        return f"first\n{lengths.pop()} tokens"
    return "cut to\nthe model's length"


def measure_titles(summary: dict) -> list[tuple[str, str]]:
    """(key, title) of each measure of PLOTTED, the IMDB one saying how far its reviews were read (`cut_to`): the
    figure's labels, and what its alt text (`scripts.release.summary_alt`) names."""
    return [(key, title.format(read=cut_to(summary), dev=dev_name(summary))) for key, title in PLOTTED]


def summary_figure(summary: dict):
    """Grouped bars: for each metric of PLOTTED, one bar per arm (mean over seeds, error bar = std), the seeds
    as small marks and each weight average as a diamond, so the spread and what averaging buys are visible. Each
    arm has its own colour, hatch and mark (`arm_style`): the arms are told apart without their colours too."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import to_rgba
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    arms = list(summary)
    width = 0.8 / max(1, len(arms))
    fig, ax = plt.subplots(figsize=(2 + 1.8 * len(PLOTTED), 3.8))
    legend = []  # (handle, label): the arm's bar with its seeds' mark on it, then its weight average if any
    for a, name in enumerate(arms):
        arm, style = summary[name], arm_style(a)
        # the fill faint (the marks and error bars drawn on it stay readable; 1.4-1.7:1 against white), the outline
        # and the hatch (a hatch takes the edge's colour) at full colour: at least 3:1 (WCAG 1.4.11), the first
        # arm's bars, which have no hatch, too
        bar = {"facecolor": to_rgba(style["color"], 0.35), "edgecolor": style["color"], "hatch": style["hatch"],
               "linewidth": 1}
        seed = {"marker": style["marker"], "color": style["color"]}
        legend.append(((Patch(**bar), Line2D([], [], linestyle="none", markersize=4, **seed)), name))
        for m, (key, _) in enumerate(PLOTTED):
            x = m + (a - (len(arms) - 1) / 2) * width
            stats = arm["stats"].get(key) or {"mean": None}
            if stats["mean"] is None:
                continue
            ax.bar(x, 100 * stats["mean"], width * 0.9, **bar,
                   yerr=100 * stats["std"] if stats["std"] is not None else None, capsize=3)
            ax.text(x, 100 * (stats["mean"] + (stats["std"] or 0)) + 1, f"{100 * stats['mean']:.1f}", ha="center",
                    fontsize=7)
            seeds = [100 * r[key] for r in arm["runs"] if not r["averaged"] and r.get(key) is not None]
            ax.scatter([x] * len(seeds), seeds, s=12, zorder=3, **seed)
            averaged = [100 * r[key] for r in arm["averaged"] if r.get(key) is not None]
            ax.scatter([x] * len(averaged), averaged, s=40, marker="D", color=style["color"], edgecolor="black",
                       zorder=4)
        if arm["averaged"]:
            legend.append((Line2D([], [], linestyle="none", marker="D", markersize=6, color=style["color"],
                                  markeredgecolor="black"), f"{name}: weight average"))
    values = [100 * r[key] for arm in summary.values() for r in arm["runs"] for key, _ in PLOTTED
              if r.get(key) is not None]
    low = min(values, default=50)
    ax.set_ylim(max(0, 5 * (low // 5) - 5), 100)
    ax.set_xticks(range(len(PLOTTED)), [title for _, title in measure_titles(summary)])
    ax.set_ylabel("accuracy (%)")
    ax.set_title("Fine-tuning arms: mean ± std over seeds (a mark each), weight averages (diamonds)", fontsize=9)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(*zip(*legend), fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.tight_layout()
    return fig


def plot_summary(summary: dict, path) -> None:
    """`summary_figure` of `summary`, written as a PNG at `path` in one step."""
    save_figure(summary_figure(summary), path, dpi=110)


SUMMARY_WHAT = "a summary.json that train.summarize wrote (arms with their stats)"


def looks_like_summary(summary: dict) -> bool:
    """{arm: {"runs", "stats", ...}}, as `--out` writes it (not a metrics.json or the ablation's results)."""
    return bool(summary) and all(isinstance(arm, dict) and isinstance(arm.get("stats"), dict)
                                 for arm in summary.values())


def read_summary(path) -> dict:
    """A summary JSON this script wrote (`--out`), checked (`looks_like_summary`) before anything uses it."""
    return read_record(path, looks_like_summary, SUMMARY_WHAT)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m train.summarize", description=__doc__.split("\n\n")[0],
                                epilog=__doc__.split("\n\n", 1)[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="*", help="run folders of one arm (or use --arm)")
    p.add_argument("--arm", nargs="+", action="append", default=[], metavar=("NAME", "RUN"),
                   help="a named arm and its run folders; repeat for several arms")
    p.add_argument("--out", default=None, help="write the summary as JSON here (and the table as .md beside it)")
    p.add_argument("--redraw", nargs="+", default=[], metavar="X.json",
                   help="read no run: draw the figure of each summary X.json that --out wrote again, as X.png "
                        "beside it, from the JSON alone (a shipped one whose runs are gone, after the figure's look "
                        "changed)")
    return p


def redraw(summaries) -> int:
    """Each summary JSON's figure drawn again beside it (`--redraw`)."""
    for path in map(Path, summaries):
        try:
            redraw_record(path, looks_like_summary, SUMMARY_WHAT, plot_summary, path.with_suffix(".png"))
        except (OSError, ValueError) as err:
            return report_user_error(err)
        print(f"drew {path.with_suffix('.png')} again")
    return EXIT_OK


def main(argv=None) -> int:
    p = build_parser()
    args = p.parse_args(argv)
    if args.redraw:
        if args.runs or args.arm or args.out:
            p.error("--redraw reads summaries this script wrote: give no run folders, --arm or --out with it")
        return redraw(args.redraw)
    arms = {}
    if args.runs:
        arms["runs"] = args.runs
    for arm in args.arm:
        if len(arm) < 2:
            p.error(f"--arm {arm[0]}: give the arm's name and at least one run folder")
        if arm[0] in arms:  # else the later one would replace it without a word
            p.error(f"--arm {arm[0]} is given twice" + (" (the run folders given without --arm are the arm 'runs')"
                                                        if arm[0] == "runs" and args.runs else "") +
                    ": give each arm once, with all its run folders")
        arms[arm[0]] = arm[1:]
    if not arms:
        p.error("give run folders, or --arm NAME RUN...")
    for name, folders in arms.items():  # a run counted twice weighs twice in the mean and shrinks the std
        resolved = [Path(f).resolve() for f in folders]
        if twice := next((f for f, r in zip(folders, resolved) if resolved.count(r) > 1), None):
            p.error(f"{twice} is given twice{'' if name == 'runs' else f' in arm {name}'}")
    if args.out:
        try:  # a folder, a name that is not .json (its .md and .png are written beside it), a file that is not JSON
            output_file(args.out, "summary.json")
        except (OSError, ValueError) as err:
            p.error(str(err))
    try:
        summary = summarize(arms)
    except (OSError, ValueError) as err:
        return report_user_error(err)
    for name, folders in arms.items():
        for first, second, shared in same_runs(folders):
            print(f"warning: {second} is the same run as {first} ({shared})"
                  f"{'' if name == 'runs' else f' in arm {name}'}"
                  ": counted twice, it is one seed, and the mean ± std over-weighs it", file=sys.stderr)
    table = to_markdown(summary)
    print(table, end="")
    if args.out:
        out = Path(args.out)
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
        except OSError as err:  # a file where a folder of the path should be
            return report_user_error(OSError(f"--out {out}: {err}"))
        write_atomic(out.with_suffix(".md"), table)
        plot_summary(summary, out.with_suffix(".png"))
        write_atomic(out, json.dumps(summary, indent=2) + "\n")  # the JSON last: a recipe's sign that this step is done
        print(f"wrote {out}, {out.with_suffix('.md')} and {out.with_suffix('.png')}")
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(exit_code(main))
