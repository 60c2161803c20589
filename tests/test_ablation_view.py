"""The masking ablation on the Masking tab says what it shows (review R1: a dense seven-column table and no
conclusion, where the README gives three): three bullets above the table, every figure read from results.json, and
that it is a short run from an early checkpoint, whose arms compare with each other, not with the shipped model."""
import copy
import json
from pathlib import Path

from demo.ablation_view import ablation_markdown, what_it_shows

SHIPPED = Path(__file__).resolve().parent.parent / "assets" / "masking-ablation" / "results.json"


def _seeds(**losses) -> dict:
    return {str(seed): {"mlm_loss": loss} for seed, loss in enumerate(losses["mlm_loss"])}


# a small results.json in train.ablation's layout: dynamic, one fixed mask, 4 masks, no pretraining; 2 seeds
FAKE = {
    "status": "complete",
    "setup": {"init": "runs/x", "init_checkpoint": "phase 9 of somewhere: git abc", "epochs": 8,
              "train_tokens_per_run": 1_200_000},
    "arms": {
        "dynamic": {"label": "dyn", "masking": "dynamic", "n": 2, "seeds": _seeds(mlm_loss=[3.0, 3.2]),
                    "mean": {"mlm_loss": 3.1, "probe_seen_mask_loss": None, "probe_fresh_mask_loss": 3.0,
                             "sst2_accuracy": 0.70},
                    "std": {"mlm_loss": 0.1, "sst2_accuracy": 0.02}},
        "one": {"label": "one mask", "masking": "static", "dupe_factor": 1, "n": 2,
                "seeds": _seeds(mlm_loss=[4.0, 4.2]),
                "mean": {"mlm_loss": 4.1, "probe_seen_mask_loss": 0.5, "probe_fresh_mask_loss": 3.9,
                         "sst2_accuracy": 0.71},
                "std": {"mlm_loss": 0.1, "sst2_accuracy": 0.03},
                "minus_dynamic": {"mlm_loss": {"mean": 1.0, "std": 0.0, "n": 2}}},
        "four": {"label": "four masks", "masking": "static", "dupe_factor": 4, "n": 2,
                 "seeds": _seeds(mlm_loss=[2.9, 3.4]),
                 "mean": {"mlm_loss": 3.15, "probe_seen_mask_loss": 2.8, "probe_fresh_mask_loss": 3.1,
                          "sst2_accuracy": 0.72},
                 "std": {"mlm_loss": 0.3, "sst2_accuracy": 0.01},
                 "minus_dynamic": {"mlm_loss": {"mean": 0.05, "std": 0.2, "n": 2}}},
        "none": {"label": "no pretraining", "masking": None, "n": 2, "mean": {"sst2_accuracy": 0.6},
                 "std": {"sst2_accuracy": 0.01}},
    },
}


def test_the_bullets_follow_a_small_results_file():
    """Whatever the arms: the one that memorised most (its losses, how often it saw each mask), each other
    static arm against dynamic masking (seed by seed), the SST-2 spread against the seeds' noise."""
    text = what_it_shows(FAKE)
    head, listed = text.strip().split("\n\n")
    bullets = listed.removeprefix("- ").split("\n- ")
    assert head == ("**What it shows** (a short run: 1.2M tokens per run from phase 9 of somewhere; compare the arms "
                    "with each other, not with the shipped model):")
    assert bullets == [
        "**“one mask” memorised its masks** (each fed 8 times): MLM loss 0.50 on its training rows under the mask "
        "it was trained on, 3.90 under a fresh one, 4.10 held out (“dyn”: 3.10).",
        "**“four masks” ends 0.05 above “dyn”** in held-out MLM loss (3.15 against 3.10), higher on 1 of 2 "
        "seeds (+0.050 ± 0.200, paired by seed).",
        "**SST-2 cannot tell the pretraining arms apart**: 70.0% to 72.0%, within the seeds' standard deviation "
        "(up to 3.0 points); no pretraining: 60.0%."]
    # a wider spread is said as a range, by arm
    wide = copy.deepcopy(FAKE)
    wide["arms"]["four"]["mean"]["sst2_accuracy"] = 0.80
    assert ("**SST-2 dev accuracy** ranges from 70.0% (“dyn”) to 80.0% (“four masks”); no pretraining: 60.0%."
            in what_it_shows(wide))
    # every seed higher: said so
    every = copy.deepcopy(FAKE)
    every["arms"]["four"]["seeds"] = _seeds(mlm_loss=[3.1, 3.3])
    assert "higher on every seed" in what_it_shows(every)


def test_the_bullets_are_above_the_table_and_vanish_without_their_figures():
    table = ablation_markdown({"results": FAKE})
    assert table.index("**What it shows**") < table.index("| arm | seeds |")
    # a results file without probes, pairs or several SST-2 scores has nothing to conclude: no section
    assert what_it_shows({"arms": {"dynamic": FAKE["arms"]["dynamic"]}, "setup": FAKE["setup"]}) == ""
    # a layout that is not train.ablation's: no section, and the table is still there
    assert what_it_shows({"arms": {"x": {"label": "x", "masking": "static", "mean": "?"}}}) == ""


def test_the_shipped_ablation_says_the_readmes_three_conclusions():
    """On the shipped results.json, the README's three bullets, with its figures."""
    results = json.loads(SHIPPED.read_text(encoding="utf-8"))
    text = what_it_shows(results)
    assert "(a short run: 2.5M tokens per run from phase 2 of the shipped pretraining" in text
    assert ("**“static, one fixed mask” memorised its masks** (each fed 20 times): MLM loss 0.93 on its training "
            "rows under the mask it was trained on, 6.70 under a fresh one, 7.33 held out (“dynamic (RoBERTa)”: "
            "5.74).") in text
    assert ("**“static, 10 masks (BERT)” ends 0.05 above “dynamic (RoBERTa)”** in held-out MLM loss (5.79 "
            "against 5.74), higher on every seed (+0.050 ± 0.008, paired by seed).") in text
    assert "**SST-2 cannot tell the pretraining arms apart**: 77.7% to 78.1%" in text
    assert text.strip().endswith("no pretraining: 75.4%.")
