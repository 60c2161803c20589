"""The masking ablation's figure, curves.png: held-out and training loss, the mask probe and SST-2 dev accuracy,
per arm (mean and spread over seeds).

`train.ablation` draws it beside its results.json. Run as a script, this draws it again from a results.json alone
(results shipped after their runs were deleted, once the figure's look changed); nothing else is read or run:

    python -m train.ablation_figure                   # assets/masking-ablation/curves.png, in place
    python -m train.ablation_figure runs/ablation     # FOLDER/curves.png from FOLDER/results.json
"""
from __future__ import annotations

import textwrap
from pathlib import Path

from .ablation_setup import BASELINE
from .arguments import script_parser
from .reporting import BLUE, GREEN, VERMILLION, redraw_record, save_figure
from .runtime import EXIT_OK, USER_ERRORS, exit_code, report_user_error

# Each arm's colour (Okabe and Ito's, at least 3:1 against white) and marker: its lines carry the marker too, so
# that a reader who cannot tell the colours apart, or a greyscale print, still tells the arms apart (its bars are
# told apart by their labels below them; the baseline has bars only)
ARM_LOOKS = {"dynamic": {"color": BLUE, "marker": "o"}, "static-dupe1": {"color": VERMILLION, "marker": "s"},
             "static-dupe10": {"color": GREEN, "marker": "^"}, BASELINE: {"color": "#767676"}}


def _aligned(records: list[dict], curve: str, key: str):
    """(x tokens, mean, min, max) over seeds on the steps every seed has."""
    import numpy as np

    if not records:
        return None
    steps = set(records[0][curve]["step"])
    for r in records[1:]:
        steps &= set(r[curve]["step"])
    steps = sorted(steps)
    if not steps:
        return None
    values, tokens = [], []
    for r in records:
        index = {s: i for i, s in enumerate(r[curve]["step"])}
        values.append([r[curve][key][index[s]] for s in steps])
        tokens.append([r[curve]["tokens"][index[s]] for s in steps])
    values = np.array(values, dtype=float)
    return np.mean(tokens, axis=0), values.mean(0), values.min(0), values.max(0)


def plot(results: dict, png: Path) -> None:
    """curves.png: held-out loss, training loss, the mask probe and SST-2 dev accuracy, per arm."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.colors import to_rgba
    from matplotlib.patches import Patch

    arms = {k: v for k, v in results["arms"].items() if k != BASELINE}
    fig, axes = plt.subplots(2, 2, figsize=(12, 8.5))
    (ax_eval, ax_train), (ax_probe, ax_sst) = axes
    for arm, info in arms.items():
        records = list(info["seeds"].values())
        looks, label = ARM_LOOKS[arm], f"{info['label']} (n={info['n']})"
        held = _aligned(records, "eval_curve", "loss")
        if held:
            x, mean, lo, hi = held
            ax_eval.plot(x, mean, "-", ms=4.5, lw=1.2, label=label, **looks)
            ax_eval.fill_between(x, lo, hi, color=looks["color"], alpha=0.2, lw=0)
            ax_train.plot(x, mean, "--", ms=3.5, lw=1, **looks)
        train = _aligned(records, "train_curve", "loss")
        if train:
            x, mean, lo, hi = train
            # a marker on every few of the logged steps: enough to name the arm, not a blot
            ax_train.plot(x, mean, "-", ms=4.5, lw=1.2, markevery=max(1, len(x) // 12), label=label, **looks)
            ax_train.fill_between(x, lo, hi, color=looks["color"], alpha=0.2, lw=0)
    ax_eval.set(title="held-out MLM loss (wiki.valid), mean and min-max over seeds", xlabel="training tokens",
                ylabel="loss")
    ax_train.set(title="training loss on the masks fed (solid) vs held-out (dashed)", xlabel="training tokens",
                 ylabel="loss")
    for ax in (ax_eval, ax_train):
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8)

    names = list(arms)
    kinds = [("probe_seen_mask_loss", "training rows, mask trained on", "///"),
             ("probe_fresh_mask_loss", "training rows, fresh mask", ""),
             ("mlm_loss", "held-out rows", "..")]
    width = 0.8 / len(kinds)
    for j, (key, _, hatch) in enumerate(kinds):
        xs = np.arange(len(names)) + (j - (len(kinds) - 1) / 2) * width
        for x, arm in zip(xs, names):
            mean, std = arms[arm]["mean"].get(key), arms[arm]["std"].get(key)
            if mean is None:
                continue
            # the fill alone lighter (the outline and hatch stay black and sharp), so the hatches show on any arm
            ax_probe.bar(x, mean, width, yerr=std or 0.0, color=to_rgba(ARM_LOOKS[arm]["color"], 0.3 + 0.25 * j),
                         hatch=hatch, edgecolor="black", lw=0.5, capsize=3)
    shown = [arms[a]["mean"].get(k) for a in names for k, _, _ in kinds if arms[a]["mean"].get(k) is not None]
    if shown:  # the differences are a few percent of the loss: do not start the axis at 0
        span = max(shown) - min(shown) or abs(max(shown)) * 0.05 or 1.0
        ax_probe.set_ylim(max(0.0, min(shown) - 0.6 * span), max(shown) + 0.6 * span)  # a loss is never < 0
    ax_probe.set_xticks(range(len(names)), [textwrap.fill(arms[a]["label"], 18) for a in names], fontsize=8)
    ax_probe.set(title="what was memorised: final MLM loss (mean, std over seeds)", ylabel="loss")
    ax_probe.legend([Patch(facecolor="white", edgecolor="black", hatch=h) for _, _, h in kinds],
                    [label for _, label, _ in kinds], fontsize=8)
    ax_probe.grid(alpha=0.3, axis="y")

    bars = [a for a in results["arms"] if results["arms"][a]["mean"].get("sst2_accuracy") is not None]
    for i, arm in enumerate(bars):
        info = results["arms"][arm]
        # at full colour: at 80% the vermillion and green bars were under 3:1 against white (WCAG 1.4.11)
        ax_sst.bar(i, info["mean"]["sst2_accuracy"] * 100, 0.6, yerr=(info["std"]["sst2_accuracy"] or 0) * 100,
                   color=ARM_LOOKS[arm]["color"], capsize=4)
        dots = [r["sst2_accuracy"] * 100 for r in info["seeds"].values()]
        ax_sst.plot([i] * len(dots), dots, "k.", ms=5)
    if bars:
        low = min(r["sst2_accuracy"] for a in bars for r in results["arms"][a]["seeds"].values()) * 100
        ax_sst.set_ylim(max(0, low - 5), min(100, max(
            r["sst2_accuracy"] for a in bars for r in results["arms"][a]["seeds"].values()) * 100 + 3))
    ax_sst.set_xticks(range(len(bars)), [textwrap.fill(results["arms"][a]["label"], 18) for a in bars], fontsize=8)
    ax_sst.set(title="SST-2 dev accuracy, same fine-tuning (mean, std; dots: seeds)", ylabel="accuracy %")
    ax_sst.grid(alpha=0.3, axis="y")
    setup = results["setup"]
    fig.suptitle(f"Static vs dynamic masking: {setup.get('parameters') or '?':,} parameters, "
                 f"{setup.get('epochs'):g} epochs over {setup.get('train_rows') or '?':,} rows "
                 f"({setup.get('train_tokens_per_run') or '?':,} tokens per run), status {results['status']}"
                 if setup.get("parameters") else "Static vs dynamic masking", fontsize=11)
    save_figure(fig, png)


def redraw(folder) -> Path:
    """FOLDER/curves.png drawn again from the FOLDER/results.json that `train.ablation` wrote (or shipped)."""
    return redraw_record(Path(folder) / "results.json", lambda r: isinstance(r.get("arms"), dict) and "setup" in r,
                         "a results.json that train.ablation wrote (its arms and setup)", plot,
                         Path(folder) / "curves.png")


def main(argv=None) -> int:
    from .ablation import SHIP  # (train.ablation imports this module)

    p = script_parser("train.ablation_figure", __doc__)
    p.add_argument("folder", nargs="?", default=SHIP, metavar="FOLDER",
                   help="a folder holding the ablation's results.json: FOLDER/curves.png is drawn again from it "
                        "(default: %(default)s)")
    args = p.parse_args(argv)
    try:
        print(f"drew {redraw(args.folder)} again")
    except USER_ERRORS as err:
        return report_user_error(err)
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(exit_code(main))
