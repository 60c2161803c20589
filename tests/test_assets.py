"""The shipped models in assets/ load and run (their quality is reported in their model cards, not tested)."""
import json
from pathlib import Path

import pytest

import roberta

pytestmark = pytest.mark.usefixtures("single_thread")

ASSETS = Path(__file__).resolve().parent.parent / "assets"
FOLDERS = {"mini-roberta-mlm": "fill-mask", "mini-roberta-sst2": "sentiment-analysis"}
HUB_FILES = ["config.json", "model.safetensors", "tokenizer.json", "README.md", "metrics.json", "curves.png"]


@pytest.mark.parametrize("name", FOLDERS)
def test_shipped_folder_is_hub_ready_and_small(name):
    folder = ASSETS / name
    for file in HUB_FILES:
        assert (folder / file).is_file(), f"{folder / file} is missing"
    assert sum(f.stat().st_size for f in folder.iterdir()) < 50e6
    card = (folder / "README.md").read_text()
    assert card.startswith("---\n") and "\n---\n" in card[4:]  # YAML metadata block
    assert json.loads((folder / "metrics.json").read_text())


def test_shipped_mlm_fills_a_mask():
    fill = roberta.pipeline("fill-mask", model=ASSETS / "mini-roberta-mlm")
    results = fill("Paris is the capital of <mask>.", top_k=3)
    assert len(results) == 3 and all(0 < r["score"] <= 1 for r in results)


def test_shipped_classifier_returns_both_labels():
    classify = roberta.pipeline("sentiment-analysis", model=ASSETS / "mini-roberta-sst2")
    result = classify("A gorgeous, funny and deeply moving film.")
    assert sorted(r["label"] for r in result) == ["negative", "positive"]
    assert abs(sum(r["score"] for r in result) - 1) < 1e-5
