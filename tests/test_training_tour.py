"""docs/training-tour.md runs as the page says: its ```python blocks, in order, in one namespace, from the repository
root, as a reader pastes them into one Python session. The outputs it shows (the comment lines right under a
`print(...)`) must be what the block prints, so its numbers cannot go stale, and its claims that the code does what
its hand-written steps do print True where they hold: train.pretrain's weights equal the hand-written loop's, a
resumed run's equal an uninterrupted one's, the held-out accuracy recomputed equals metrics.json's."""
import shutil
from pathlib import Path

import torch

from helpers import ROOT, run_page_blocks


def test_the_training_tour_runs_and_prints_what_it_shows(monkeypatch, single_thread):
    monkeypatch.chdir(ROOT)  # the page's paths (assets/...) are the repository root's
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # the page's CUDA_VISIBLE_DEVICES= on a GPU machine
    namespace = {"__name__": "__training_tour__"}
    try:
        with torch.random.fork_rng():  # the page seeds torch for the whole session: undone for the tests that follow
            run_page_blocks(ROOT / "docs" / "training-tour.md", namespace, min_blocks=15)
    finally:
        if isinstance(namespace.get("work"), Path):  # the page's temporary folder
            shutil.rmtree(namespace["work"], ignore_errors=True)
