"""The About tab (`demo.about`): the cards name the data sets readably, say a time once, say where the full model
card is, and each model's figures come with captions and alt text that say what they cover (the phases' figure
first, for the card's figures are its last point). The tiny fixture folders, and the shipped assets."""
import json
import shutil
from pathlib import Path

import pytest

from demo import about, formatting
from demo.formatting import minutes, pct
from demo.models import ROOT, LoadedModel, load_models

ASSETS = Path(__file__).resolve().parent.parent / "assets"
PHASE = {"train_tokens": 1_000_000, "train_time_s": 600.0, "wall_time_s": 660.0, "eval_accuracy": 0.2192,
         "eval_data": "../shared/data/wikitext-2/wiki.valid.tokens",
         "corpus_sources": [{"source": "../shared/data/wikitext-2/wiki.train.tokens"}]}
AVERAGE = {**PHASE, "train_tokens": 0, "train_time_s": 0.0, "wall_time_s": 100.0, "averaged": 2,
           "eval_accuracy": 0.25}


def _folder(source, tmp_path, name, metrics, phases=None, files=()):
    """A copy of the model folder `source` with this metrics.json, phases.json and (empty) image files."""
    copy = tmp_path / name
    shutil.copytree(source, copy)
    (copy / "metrics.json").write_text(json.dumps(metrics))
    if phases is not None:
        (copy / "phases.json").write_text(json.dumps(phases))
    for file in files:
        (copy / file).write_bytes(b"")
    return copy


def _card(folder) -> str:
    return about.summary_card(load_models(folder, None).mlm)


# ----------------------------------------------------------------------------- the data sets
@pytest.mark.parametrize("names, shown", [
    (["wikipedia-en", "wikitext-2/wiki.train.tokens.xz", "imdb/unsup.txt.xz"],
     "English Wikipedia, WikiText-2 and IMDB reviews, from `wikipedia-en`, `wikitext-2/wiki.train.tokens.xz`, "
     "`imdb/unsup.txt.xz`"),
    (["sst2/train.tsv"], "SST-2, from `sst2/train.tsv`"),
    (["imdb/train.tsv", "imdb/unsup.txt"], "IMDB reviews, from `imdb/train.tsv`, `imdb/unsup.txt`"),  # named once
    (["my-corpus/a.txt"], "`my-corpus/a.txt`"),  # no known name: the file alone
    (["WikiText-2/x.txt", "my-corpus/a.txt"], "WikiText-2 and `my-corpus/a.txt`, from `WikiText-2/x.txt`"),
])
def test_data_sets_by_their_readable_names_then_their_files(names, shown):
    assert about.data_markdown(names) == shown


def test_the_card_names_the_data_sets_and_the_held_out_text(tiny_mlm_dir, tiny_clf_dir, tmp_path):
    metrics = {**PHASE, "mlm": {"accuracy": 0.34, "source": "../shared/data/wikitext-2/wiki.valid.tokens"}}
    card = _card(_folder(tiny_mlm_dir, tmp_path, "mlm", metrics))
    assert "- **data**: WikiText-2, from `wikitext-2/wiki.train.tokens`\n" in card
    assert "on WikiText-2 (`wikitext-2/wiki.valid.tokens`)" in card and "../" not in card
    clf = _folder(tiny_clf_dir, tmp_path, "clf", {"train_data": "/home/x/data/sst2/train.tsv", "train_examples": 9})
    assert "- **data**: SST-2, from `sst2/train.tsv` (9 examples)\n" in about.summary_card(load_models(None, clf)
                                                                                               .sentiment)


# ----------------------------------------------------------------------------- the training time, said once
@pytest.mark.parametrize("train_s, wall_s, shown", [
    (87763.0, 87849.0, "24.4 h of training"),  # the shipped MLM's: both read 24.4 h, said once
    (600.0, 660.0, "10 min of training (11 min wall time)"),  # longer: loading the data, the final evaluation
    (600.0, 500.0, "10 min of training"),  # shorter (a resumed run's wall time is its last session's): not said
    (600.0, None, "10 min of training"),
])
def test_the_training_time_is_said_once(tiny_mlm_dir, tmp_path, train_s, wall_s, shown):
    metrics = {**PHASE, "train_time_s": train_s, "wall_time_s": wall_s}
    assert f"- **training**: 1.0M tokens, {shown}\n" in _card(_folder(tiny_mlm_dir, tmp_path, "mlm", metrics))


@pytest.mark.parametrize("train_s", [float("nan"), float("inf"), True, "600"])
def test_a_training_time_that_is_no_number_is_not_said(tiny_mlm_dir, tmp_path, train_s):
    """A diverged or hand-edited run's metrics.json: no "nan h of training" in the card."""
    card = _card(_folder(tiny_mlm_dir, tmp_path, "mlm", {**PHASE, "train_time_s": train_s, "wall_time_s": None}))
    assert "nan" not in card and "inf " not in card and "1.0M tokens" in card


def test_the_card_counts_the_weight_averages_its_figure_numbers(tiny_mlm_dir, tmp_path):
    """phases.png numbers every phase, averages too: the card says how many of each."""
    last = {**PHASE, "eval_accuracy": 0.3}
    card = _card(_folder(tiny_mlm_dir, tmp_path, "one", last, phases=[PHASE, AVERAGE, last]))
    assert "in 2 phases and a weight average" in card and "2.0M tokens" in card
    card = _card(_folder(tiny_mlm_dir, tmp_path, "two", last, phases=[PHASE, AVERAGE, PHASE, AVERAGE, last]))
    assert "in 3 phases and 2 weight averages" in card
    assert "in 2 phases\n" in _card(_folder(tiny_mlm_dir, tmp_path, "none", last, phases=[PHASE, last]))


def test_the_intro_counts_the_gpu_phases_from_their_hardware(tiny_mlm_dir, tmp_path):
    """The About tab's first line says which pretraining phases ran on a GPU, read from phases.json (it said
    "two short phases" by hand after the third had shipped)."""
    gpu = {**PHASE, "hardware": {"device": "cuda:0", "gpu": "NVIDIA H100 80GB HBM3"}}
    folder = _folder(tiny_mlm_dir, tmp_path, "gpu", gpu, phases=[PHASE, AVERAGE, gpu, gpu])
    intro = about.about_sections(load_models(folder, None))["intro"]
    assert "and for 2 of the encoder's 3 pretraining phases one GPU (NVIDIA H100 80GB HBM3);" in intro
    folder = _folder(tiny_mlm_dir, tmp_path, "cpu", PHASE, phases=[PHASE, PHASE])
    assert about.about_sections(load_models(folder, None))["intro"] == (
        "Both are small teaching models, trained on a 2-core CPU; the figures below are read from each model's "
        "metrics.json.")
    assert "GPU" not in about.about_sections(load_models(tmp_path / "nothing", None))["intro"]


# ----------------------------------------------------------------------------- where the model card is
def test_the_model_card_is_a_link_on_a_space_and_said_in_words_elsewhere(monkeypatch, tmp_path):
    monkeypatch.delenv("SPACE_ID", raising=False)
    shipped = LoadedModel("mlm", str(ROOT / "assets" / "mini-roberta-mlm"), extras={"readme": "# card"})
    elsewhere = LoadedModel("mlm", str(tmp_path / "my-mlm"), extras={"readme": "# card"})
    assert about.card_link(shipped) == "full model card: `assets/mini-roberta-mlm/README.md`, in the project's files"
    assert about.card_link(elsewhere) == "full model card: `my-mlm/README.md`, in the model's folder"
    assert about.card_link(LoadedModel("mlm", str(tmp_path / "bare"))) == "no model card"
    assert about.card_link(LoadedModel("mlm", "someone/mini")) == (
        "full model card: [huggingface.co/someone/mini](https://huggingface.co/someone/mini)")
    # on a Space the app's own folders are files of the Space's repository, which the Hub shows formatted
    monkeypatch.setenv("SPACE_ID", "someone/roberta-from-scratch")
    assert about.card_link(shipped) == (
        "full model card: [assets/mini-roberta-mlm/README.md](https://huggingface.co/spaces/someone/"
        "roberta-from-scratch/blob/main/assets/mini-roberta-mlm/README.md) on the Hub")
    assert about.card_link(elsewhere) == "full model card: `my-mlm/README.md`, in the model's folder"  # not there


# ----------------------------------------------------------------------------- the figures
def test_a_model_trained_in_phases_shows_every_phase_first_then_the_last_ones_curves(tiny_mlm_dir, tmp_path):
    last = {**PHASE, "train_tokens": 3_000_000, "eval_accuracy": 0.3}
    folder = _folder(tiny_mlm_dir, tmp_path, "mlm", last, phases=[PHASE, AVERAGE, last],
                     files=("phases.png", "curves.png"))
    sections = about.about_sections(load_models(folder, None))
    phases, curves = sections["mlm_figures"]
    assert Path(phases.path).name == "phases.png" and Path(curves.path).name == "curves.png"
    assert phases.caption.startswith("**Every phase**: held-out accuracy at the end of each of the 3 phases (2 of "
                                     "training, 1 weight average)")
    assert "the last point, 30.0% after 4.0M tokens, is the model the card describes" in phases.caption
    assert "4.0M tokens" in sections["mlm_card"]  # the card's total is the figure's last point
    assert "from 21.9% after phase 1 to 30.0% after phase 3 (4.0M tokens)" in phases.alt
    assert curves.caption.startswith("**The last phase's curves** (phase 3 alone: 3.0M of the 4.0M tokens)")
    assert curves.alt.startswith("Curves of the last training phase only (phase 3, 3.0M of the 4.0M tokens)")
    # the last phase an average: its curves are those of the phase it averaged, the last one trained
    folder = _folder(tiny_mlm_dir, tmp_path, "avg", AVERAGE, phases=[PHASE, last, AVERAGE],
                     files=("phases.png", "curves.png"))
    curves = about.model_figures(load_models(folder, None).mlm)[1]
    assert "(phase 2 alone, the last one trained: 3.0M of the 4.0M tokens)" in curves.caption


def test_without_phases_the_curves_are_the_runs(tiny_mlm_dir, tiny_clf_dir, tmp_path):
    mlm = _folder(tiny_mlm_dir, tmp_path, "mlm", PHASE, files=("curves.png", "phases.png"))  # no phases.json
    clf = _folder(tiny_clf_dir, tmp_path, "clf", {"averaged": 3, "dev_accuracy": 0.8}, files=("curves.png",))
    sections = about.about_sections(load_models(mlm, clf))
    (figure,) = sections["mlm_figures"]
    assert Path(figure.path).name == "curves.png" and figure.caption == "**Training curves** of the fill-mask model."
    assert "training loss and held-out accuracy against tokens seen" in figure.alt
    (figure,) = sections["sentiment_figures"]
    assert figure.caption == "**Training curves** of the 3 runs averaged into the sentiment classifier (their last " \
                             "stage)."
    assert "one line per run" in figure.alt
    assert about.about_sections(load_models(tiny_mlm_dir, tmp_path / "none"))["mlm_figures"] == []
    assert about.about_sections(load_models(tiny_mlm_dir, tmp_path / "none"))["sentiment_figures"] == []


@pytest.mark.skipif(not (ASSETS / "mini-roberta-mlm" / "phases.png").is_file(), reason="no shipped MLM")
def test_the_shipped_mlm_shows_the_figure_of_its_card(monkeypatch):
    """The shipped MLM: its card's 2.02B tokens and 52.8% are the last point of phases.png, shown first; the
    last phase's curves (to about 6.3 × 10⁸ tokens, 56% on part of the held-out text) come second, said so."""
    monkeypatch.delenv("SPACE_ID", raising=False)
    loaded = load_models(ASSETS / "mini-roberta-mlm", ASSETS / "no-such-folder").mlm
    card, (phases, curves) = about.summary_card(loaded), about.model_figures(loaded)
    facts = about.model_facts(loaded)
    total = formatting.large_count(facts["train_tokens"])
    assert f"{total} tokens" in card and f"after {total} tokens" in phases.caption
    assert f"**{pct(facts['mlm_accuracy'])}** guessed right" in card
    assert f"the last point, {pct(facts['mlm_accuracy'])} after" in phases.caption
    assert Path(phases.path) == ASSETS / "mini-roberta-mlm" / "phases.png"
    assert Path(curves.path) == ASSETS / "mini-roberta-mlm" / "curves.png" and "last phase" in curves.caption
    hours = minutes(facts["train_minutes"])
    assert card.count(hours) == 1  # the wall time reads the same: said once
    assert "English Wikipedia, WikiText-2 and IMDB reviews, from `wikipedia-en`" in card
    assert "[" not in card.split("full model card:")[1] and "README.md`, in the project's files" in card
