"""The alt texts of the figures a model folder ships: what each shows, in words, for readers who cannot see it.

The app's About and Sentiment tabs (`demo/`) and the model cards (`train/`, `scripts.release`) show the same
curves.png and reliability.png, and neither side may import the other, so their descriptions live here, once.
Each text describes the figure alone; a caller adds where its figures are given in numbers ("the card above has
the final figures"), which differs between the app and a card.
"""
from __future__ import annotations


def curves_alt(whose: str, per_run: bool = False) -> str:
    """curves.png of `whose` training ("this model", "the last pretraining phase only (phase 26, ...)"): one run's
    loss and held-out accuracy (`train.reporting.plot_curves`), or, `per_run`, those of the runs a weight average
    was made from, one line each (`train.reporting.plot_member_curves`)."""
    if per_run:
        return (f"Training curves of {whose}, one line per run: each run's training loss, and its held-out accuracy, "
                "against tokens seen")
    return f"Training curves of {whose}: training and held-out loss, and held-out accuracy, against tokens seen"


def reliability_alt(dev_set: str) -> str:
    """reliability.png (`train.calibrate.plot_reliability`), drawn on `dev_set` ("SST-2 dev", "the dev set
    (872 examples)")."""
    return (f"Reliability diagrams of the classifier on {dev_set}, before and after temperature scaling: accuracy "
            "per confidence bin as bars, the gap to the bin's confidence as a bar of its own (orange where the model "
            "is over-confident, hatched blue where it is under-confident), against the diagonal of perfect "
            "calibration")
