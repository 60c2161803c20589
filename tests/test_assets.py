"""The shipped models in assets/ load, run, and get clear cases right (their full figures are in their model
cards): an MLM trained on Wikipedia and film reviews fills in "member" and "great", the classifier labels an
obviously positive and an obviously negative review."""
from pathlib import Path

import pytest

import roberta
from roberta.run_metrics import RunMetrics
from roberta.text import normalize_for_classifier

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
    card = (folder / "README.md").read_text(encoding="utf-8")
    assert card.startswith("---\n") and "\n---\n" in card[4:]  # YAML metadata block
    # the figures the model card's model-index, the About tab and the README read from it
    metrics = RunMetrics.read(folder / "metrics.json")
    wanted = ("held-out MLM", "accuracy") if FOLDERS[name] == "fill-mask" else ("dev", "accuracy")
    values = [e.value for e in metrics.evaluations() if (e.name, e.metric) == wanted]
    assert values and all(0.4 < v < 1 for v in values), values  # shipped: 52.8% held-out MLM, 88.9% SST-2 dev
    assert metrics.parameters > 1e6 and metrics.command.startswith("python -m train.")


@pytest.fixture(scope="module")
def fill():
    return roberta.pipeline("fill-mask", model=ASSETS / "mini-roberta-mlm", device="cpu")


@pytest.fixture(scope="module")
def classify():
    return roberta.pipeline("sentiment-analysis", model=ASSETS / "mini-roberta-sst2", device="cpu")


@pytest.mark.parametrize("text, expected, top_k", [
    ("She is a <mask> of the United States.", "member", 3),  # top-1 with about 46% in phase 3
    ("This movie was <mask>.", "great", 5),  # top-1 with about 9%
])
def test_shipped_mlm_fills_clear_masks(fill, text, expected, top_k):
    results = fill(text, top_k=top_k)
    words = [r["token_str"].strip() for r in results]
    assert expected in words, words
    assert all(0 < r["score"] <= 1 for r in results) and results == sorted(results, key=lambda r: -r["score"])


@pytest.mark.parametrize("text, expected", [
    ("A gorgeous, funny and deeply moving film.", "positive"),
    ("One of the best films of the year.", "positive"),
    ("A dull, lifeless and painfully slow mess.", "negative"),
    ("A terrible, boring waste of time.", "negative"),
])
def test_shipped_classifier_labels_clear_reviews(classify, text, expected):
    result = classify(normalize_for_classifier(text))  # lower-cased and detokenized, as in fine-tuning
    assert sorted(r["label"] for r in result) == ["negative", "positive"]
    assert abs(sum(r["score"] for r in result) - 1) < 1e-5
    assert result[0]["label"] == expected and result[0]["score"] > 0.75, result


# ----------------------------------------------------------------------------- the cards' generated sentences
def _lines(name: str) -> list[str]:
    return (ASSETS / name / "README.md").read_text(encoding="utf-8").splitlines()


def test_the_mlm_cards_lead_is_what_a_release_writes_and_says_which_upload_was_cut():
    """The lead called every `gpu-upload/data/...` file a copy of `../shared/data/...`: phase 26's IMDB text held
    its first 17.0M of 65.3M characters (its corpus_sources' available_chars against the phases that read it all).
    Phase 28, the average of phases 26 and 27, has phase 27's corpus (16,976,180 characters: 6 copies of IMDB
    evaluation-sample reviews left out), and its lead lost the sentence, written only for a `gpu-upload/` command."""
    from scripts.release import heads_sent, phases_lead, read_phases

    phases = read_phases(ASSETS / "mini-roberta-mlm")
    assert phases[-1].averaged and "gpu-upload/" not in phases[-1].command
    assert heads_sent(phases) == [("imdb/unsup.txt", 16_976_180, 65_257_349)]
    lead = phases_lead(phases)
    assert lead in _lines("mini-roberta-mlm")  # a re-release writes the same paragraph
    assert "copies of `../shared/data/...`, except `imdb/unsup.txt`, cut to its first 17.0M of 65.3M characters" in lead


def test_the_mlm_cards_wall_time_is_never_below_its_training_time():
    """Phase 7 was resumed before metrics.json summed every session's wall time: its 105 minutes of wall time were
    below its 135 minutes of training, and the card's total wall time counted it so. Its training time stands in,
    and the card says so, as a re-release writes it."""
    from scripts.release import pretraining_section, read_phases

    phases = read_phases(ASSETS / "mini-roberta-mlm")
    short = [i for i, m in enumerate(phases, 1) if m.wall_time_s < m.train_time_s]
    assert short == [7]
    summary = next(line for line in pretraining_section(phases).splitlines() if " phase(s), " in line)
    assert summary in _lines("mini-roberta-mlm")
    wall = float(summary.split("at least ")[1].split(" minutes wall time")[0])
    assert wall * 60 >= sum(max(m.wall_time_s, m.train_time_s) for m in phases) - 3
    assert "phase 7 recorded the wall time of the last session only" in summary


@pytest.mark.parametrize("name, section", [("mini-roberta-mlm", "fill_mask_section"),
                                           ("mini-roberta-sst2", "sentiment_section")])
def test_the_cards_example_answers_are_what_the_shipped_folder_answers_today(name, section):
    """Each card's table of the app's examples is what a re-release writes from the shipped folder, probabilities
    in the app's format (`format_probability`: "`France` 6.34%", "positive 95.0%"), not fractions."""
    from scripts import release

    written = getattr(release, section)(ASSETS / name, f"assets/{name}")
    assert written in (ASSETS / name / "README.md").read_text(encoding="utf-8"), (
        f"assets/{name}/README.md: the card's example tables are stale (demo/examples.py or the shipped model "
        "changed): run python -m scripts.release --refresh-examples")


def test_the_cards_examples_are_computed_on_the_cpu_as_the_app_runs_them(monkeypatch):
    """On a machine with a GPU the pipelines' default device is CUDA, whose float32 sums differ from the CPU's in the
    last places: the card's digits are the app's, so a release computes them on the CPU. Simulated: CUDA said to be
    there (this machine has none, so a pipeline that used it would fail)."""
    import torch

    from scripts import release

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    made = []
    real = roberta.pipeline
    monkeypatch.setattr(release.roberta, "pipeline", lambda *a, **k: made.append(k.get("device")) or real(*a, **k))
    release.sentiment_section(ASSETS / "mini-roberta-sst2")
    release.fill_mask_section(ASSETS / "mini-roberta-mlm")
    assert made == ["cpu", "cpu"]


def test_the_classifier_cards_generated_sentences_are_todays():
    """The calibration slice's text was in the task-adaptive MLM corpus (only its labels were never trained on), the
    averaged members continued one IMDB stage, and the IMDB stage made long reviews no weakness: the card's
    sentences say so, as today's generators write them."""
    from train import average
    from train.calibrate import calibration_markdown
    from train.finetune import card_table_metrics
    from train.model_card import _limitations

    lines = _lines("mini-roberta-sst2")
    metrics = RunMetrics.read(ASSETS / "mini-roberta-sst2")
    calibration = calibration_markdown(metrics.calibration).split("\n")[0]
    assert calibration in lines and "never trained on with their labels" in calibration
    assert "training never saw" not in "\n".join(lines)
    limitation = _limitations("text-classification", metrics.max_length, card_table_metrics(metrics)).splitlines()[-1]
    assert limitation in lines and "long texts" not in limitation
    assert f"{metrics.imdb_accuracy_whole:.1%} of the time read whole" in limitation
    start = average._start(metrics.members, metrics.init_root)
    assert {m["init"] for m in metrics.members} == {metrics.init} != {metrics.init_root}
    notes = next(line for line in lines if line.startswith("The uniform average of the weights"))
    assert notes.endswith(start) and f"earlier fine-tuning stage, `{metrics.init}`" in start


def test_the_classifier_cards_checks_and_seconds_say_whose_they_are():
    """The behaviour checks' probabilities are the float32 average's (measured before the float16 export) and the
    Metrics table put the members' 1,524 s of training beside the averaging command's 54.2 s of wall time, neither
    labelled: the card's generated sentences say so now."""
    from train.finetune import card_figure_sections, card_table_metrics
    from train.model_card import metrics_markdown

    lines = _lines("mini-roberta-sst2")
    metrics = RunMetrics.read(ASSETS / "mini-roberta-sst2")
    checks = dict(card_figure_sections(metrics, "float16"))["Behaviour checks"].split("\n")[0]
    assert checks in lines and checks.endswith("the float32 average's, measured when it was made, before "
                                               "`train.export` stored its weights in float16.")
    seconds = next(line for line in metrics_markdown(card_table_metrics(metrics)).split("\n")
                   if line.startswith("train_time_s is"))
    assert seconds in lines and lines.index(seconds) - 2 == lines.index("| averaged | 3 |")
    assert "wall_time_s is the averaging command's own" in seconds


@pytest.mark.parametrize("name", FOLDERS)
def test_the_cards_are_what_a_release_writes_today(name):
    """A re-release (scripts.release: `card_for`) writes each card's model-index, curves caption and Usage anew;
    the classifier's Metrics section is `train.calibrate`'s. The shipped cards are the same."""
    from train.finetune import card_table_metrics
    from train.model_card import card_for, metrics_markdown, replace_section

    folder = ASSETS / name
    card = card_for(folder, f"assets/{name}")
    if FOLDERS[name] == "sentiment-analysis":
        card = replace_section(card, "Metrics", metrics_markdown(card_table_metrics(RunMetrics.read(folder))))
    assert card == (folder / "README.md").read_text(encoding="utf-8")


def test_the_mlm_cards_curves_say_which_rows_their_evaluation_reads():
    """curves.png ends at 55.9% (the first 256 held-out rows) beside a Metrics table of 52.7% (all rows): the
    caption under it gives both, from the folder's log.jsonl and metrics.json. A weight average (phase 28) has no
    log of its own: its figure is its members' curves, labelled apart, and its caption says so and gives the
    average's own figures (this test checked no caption for it). The card is read as a release writes it today
    (the shipped one is that: test_the_cards_are_what_a_release_writes_today)."""
    import json

    from train.model_card import card_for

    folder = ASSETS / "mini-roberta-mlm"
    metrics = RunMetrics.read(folder)
    lines = card_for(folder, "assets/mini-roberta-mlm").splitlines()
    image = next(line for line in lines if line.startswith("![Training curves") and line.endswith("](curves.png)"))
    caption = lines[lines.index(image) + 2]
    if metrics.averaged:
        assert not (folder / "log.jsonl").exists()
        assert image.startswith(f"![Training curves of the {metrics.averaged} runs averaged into this model, one "
                                "line per run")
        assert caption.startswith(f"The curves are the training of the {metrics.averaged} runs averaged into this "
                                  "model, each labelled by its folder: averaging trains nothing")
        assert (f"on all held-out rows ({metrics.eval_tokens:,} masked tokens over {metrics.mlm['masks']} fixed masks, "
                f"their mean): accuracy {metrics.eval_accuracy:.1%}, loss {metrics.eval_loss:.2f}.") in caption
        assert metrics.eval_tokens == metrics.mlm["tokens"] and metrics.mlm["masks"] > 1
        return
    last = [e for e in map(json.loads, (folder / "log.jsonl").read_text().splitlines()) if e["type"] == "eval"][-1]
    assert caption.startswith("The evaluation curve")
    assert f"first {last['sequences']:,} held-out rows ({last['eval_tokens']:,} masked tokens)" in caption
    assert f"accuracy {last['accuracy']:.1%}" in caption and f"accuracy {metrics.eval_accuracy:.1%}" in caption
    assert f"all held-out rows ({metrics.eval_tokens:,} masked tokens)" in caption
    assert last["eval_tokens"] < metrics.eval_tokens < metrics.mlm["tokens"]


def test_the_mlm_cards_metrics_name_no_members_gpu_as_the_machine_that_made_it():
    """Phase 28 is the average of phase 26 (trained on an NVIDIA H100) and phase 27 (an NVIDIA H200), made on a CPU;
    its metrics.json, written before train.average recorded its own machine, holds phase 27's hardware as its own,
    and the card's Metrics table said an NVIDIA H200 made it. As a release writes the card today, the table leaves
    a member's hardware out, and the sentence under it names the members' machines (from phases.json, the phases
    whose command and tokens the members' rows give) and the one that averaged, or says it is not recorded."""
    from roberta.run_metrics import read_phase_history
    from train.model_card import card_for, machine_of

    folder = ASSETS / "mini-roberta-mlm"
    metrics, phases = RunMetrics.read(folder), read_phase_history(folder)
    members = [next(p for p in phases if (p.command, p.train_tokens) == (row["command"], row["train_tokens"]))
               for row in metrics.members]
    assert metrics.averaged == 2 and members == phases[-3:-1]
    trained_on = [machine_of(member.hardware) for member in members]
    assert len(set(trained_on)) == 2 and all("NVIDIA" in machine for machine in trained_on)
    table = card_for(folder, "assets/mini-roberta-mlm").split("\n## Metrics\n")[1].split("\n## ")[0]
    said = next(line for line in table.splitlines() if line.startswith("Hardware: "))
    assert said.startswith(f"Hardware: an average of weights trained on {trained_on[0]} and {trained_on[1]}; ")
    if "member_hardware" in metrics.to_dict():  # a record of today's train.average: the machine that averaged
        assert "gpu" not in metrics.hardware and said.endswith(f"averaged on {machine_of(metrics.hardware)}.")
    else:
        assert metrics.hardware == members[-1].hardware and "| hardware / " not in table
        assert "the machine that averaged them is not recorded" in said and "last member's" in said


def test_the_classifier_cards_comparison_names_its_hardware_as_a_release_writes_it_today():
    """The "What pretraining bought" section says where the classifier trained as `scripts.release` writes it: for a
    weight average, its members' machines and the one that averaged them, never a member's record as its own."""
    from scripts.release import _classifier_hardware_text

    folder = ASSETS / "mini-roberta-sst2"
    section = (folder / "README.md").read_text(encoding="utf-8").split("### What pretraining bought")[1]
    assert f"Hardware: {_classifier_hardware_text(RunMetrics.read(folder))}." in section.split("\n### ")[0]


def test_the_classifier_cards_figures_are_described_as_todays_generators_write_it():
    """Its figures' alt texts were labels ("reliability diagram", "arms: every seed"): the reliability diagram's is
    `train.calibrate`'s and each seeds' experiment figure's is `scripts.release`'s, from the NAME.json shipped beside
    it. (The curves' come with `card_for`: test_the_cards_are_what_a_release_writes_today.)"""
    import json

    from scripts.release import summary_alt
    from train.calibrate import calibration_markdown

    lines = _lines("mini-roberta-sst2")
    calibration = RunMetrics.read(ASSETS / "mini-roberta-sst2").calibration
    assert next(line for line in calibration_markdown(calibration).splitlines() if line.startswith("![")) in lines
    figures = [line for line in lines if line.startswith("![") and "](reliability.png)" not in line
               and "](curves.png)" not in line]
    assert len(figures) == 5
    for line in figures:
        name = line.rsplit("](", 1)[1].removesuffix(".png)")
        summary = json.loads((ASSETS / "mini-roberta-sst2" / f"{name}.json").read_text(encoding="utf-8"))
        assert line == f"![{summary_alt(summary)}]({name}.png)"


def test_the_mlm_cards_usage_example_is_one_the_model_gets_right(fill):
    """The Usage example was "The capital of France is <mask>.", answered " France" (France is France)."""
    from train.model_card import FILL_MASK_USAGE

    usage = "\n".join(_lines("mini-roberta-mlm")).split("## Usage")[1].split("\n## ")[0]
    assert usage.count(f'fill("{FILL_MASK_USAGE}")') == 2
    assert fill(FILL_MASK_USAGE)[0]["token_str"].strip() == "France"


def test_the_classifier_card_says_what_its_zero_removed_reviews_count():
    """`imdb_sample_removed_from_training | 0` read as "the sample was trained on": the table's note says whose
    training file it counts."""
    metrics = RunMetrics.read(ASSETS / "mini-roberta-sst2")
    note = next(line for line in _lines("mini-roberta-sst2") if line.startswith("imdb_sample_removed_from_training"))
    assert f"(`{metrics.train_data}`)" in note and "earlier stage it continued (`init`)" in note


def test_the_classifier_card_names_the_encoder_it_was_fine_tuned_from():
    """The classifier's card did not say which encoder it started from. It is phase 7 of the shipped MLM's
    pretraining (then task-adaptive pretraining), which is not on the Hub: the card names it in its Base model
    section, with that phase's figures from the MLM's phases.json, and leaves the Hub's base_model key out."""
    import yaml

    from scripts.release import read_phases

    card = (ASSETS / "mini-roberta-sst2" / "README.md").read_text(encoding="utf-8")
    assert "base_model" not in yaml.safe_load(card.split("---\n", 2)[1])
    section = card.split("\n## Base model\n", 1)[1].split("\n## ", 1)[0]
    phases = read_phases(ASSETS / "mini-roberta-mlm")
    assert (f"after 7 pretraining phases ({sum(p.train_tokens for p in phases[:7]):,} tokens; held-out MLM accuracy "
            f"{phases[6].held_out[1]:.1%} on `{phases[6].eval_data}`): phase 7 of the {len(phases)} phases of "
            "`mini-roberta-mlm`") in section
    init_root = RunMetrics.read(ASSETS / "mini-roberta-sst2").init_root
    assert f"Fine-tuning started from `{init_root}`" in section and "task-adaptive pretraining" in section


def test_the_mlm_card_shows_every_phase_and_says_its_weights_are_float16():
    """The MLM folder ships phases.png and float16 weights; its card showed neither."""
    import torch
    from safetensors import safe_open

    from scripts.release import read_phases

    folder, lines = ASSETS / "mini-roberta-mlm", _lines("mini-roberta-mlm")
    figure = next(line for line in lines if line.endswith("](phases.png)"))
    assert (folder / "phases.png").is_file() and lines.index(figure) < lines.index("## Usage")
    phases = read_phases(folder)
    caption = lines[lines.index(figure) + 2]
    assert f"({len(phases)} in `phases.json`, {sum(p.train_tokens for p in phases):,} tokens in all)" in caption
    with safe_open(folder / "model.safetensors", "pt") as weights:
        assert {weights.get_slice(name).get_dtype() for name in weights.keys()} == {"F16"}
    assert {p.dtype for p in roberta.RobertaForMaskedLM.from_pretrained(folder).parameters()} == {torch.float32}
    assert any(line.startswith("The weights are stored in float16 (`model.safetensors`, ") and
               "`roberta` loads them as float32" in line for line in lines)


def test_the_mlm_cards_widget_examples_are_the_probe_sentences_it_gets_right(fill):
    """The card had no widget examples; they are the fill-mask probe's sentences whose top answer is the expected
    word, all of them."""
    import yaml

    from train.fill_mask_probe import DEFAULT_PROBE, read_probe

    card = (ASSETS / "mini-roberta-mlm" / "README.md").read_text(encoding="utf-8")
    widget = [example["text"] for example in yaml.safe_load(card.split("---\n", 2)[1])["widget"]]
    right = [row["sentence"] for row in read_probe(DEFAULT_PROBE)
             if fill(row["sentence"])[0]["token_str"].strip() == row["expected"]]
    assert widget == right and len(right) >= 5


def test_an_mlm_release_counts_its_phases_in_the_classifier_card_beside_it(tmp_path):
    """Releasing phase 28 (`scripts.release --mlm ...` alone) left the classifier card saying "phase 7 of the 26
    phases of `mini-roberta-mlm`": its Base model section is written anew from the MLM's history, as a release of
    the classifier writes it."""
    import shutil

    from scripts.release import read_phases, refresh_base_model

    folder = tmp_path / "mini-roberta-sst2"
    shutil.copytree(ASSETS / "mini-roberta-sst2", folder)
    card = (folder / "README.md").read_text(encoding="utf-8")
    phases = read_phases(ASSETS / "mini-roberta-mlm")
    said = f"phase 7 of the {len(phases)} phases of `mini-roberta-mlm`"
    assert said in card
    (folder / "README.md").write_text(card.replace(said, "phase 7 of the 26 phases of `mini-roberta-mlm`"),
                                      encoding="utf-8")
    assert refresh_base_model(folder, phases)
    assert (folder / "README.md").read_text(encoding="utf-8") == card
    assert not refresh_base_model(folder, phases)  # up to date: left as it is


def test_an_mlm_release_leaves_a_classifier_card_whose_encoder_another_history_does_not_begin_with(tmp_path):
    """`refresh_base_model` rewrites the count only when the card's encoder is the first N phases of the new
    history: a history rebuilt or reordered (here without its first phase), or a card whose Base model section
    says other figures, is left as it is, not made to name a different model."""
    import shutil

    from scripts.release import read_phases, refresh_base_model

    folder = tmp_path / "mini-roberta-sst2"
    shutil.copytree(ASSETS / "mini-roberta-sst2", folder)
    card = folder / "README.md"
    phases = read_phases(ASSETS / "mini-roberta-mlm")
    text = card.read_text(encoding="utf-8").replace(f"phase 7 of the {len(phases)} phases",
                                                    "phase 7 of the 26 phases")
    card.write_text(text, encoding="utf-8")
    assert not refresh_base_model(folder, phases[1:])
    assert card.read_text(encoding="utf-8") == text
    tokens = f"({sum(m.train_tokens for m in phases[:7]):,} tokens;"
    assert tokens in text
    other = text.replace(tokens, "(1 tokens;")
    card.write_text(other, encoding="utf-8")
    assert not refresh_base_model(folder, phases)
    assert card.read_text(encoding="utf-8") == other


def test_a_one_phase_mlm_release_has_no_lead():
    """The lead says the card's sections describe the last of several phases; a model of one phase has none (it
    said "Trained in **1 pretraining phases**")."""
    from scripts.release import LEAD, phases_lead, read_phases

    phases = read_phases(ASSETS / "mini-roberta-mlm")
    assert phases_lead(phases[:1]) is None
    assert phases_lead(phases[:2]).startswith(f"{LEAD}2 pretraining phases**")


def test_the_readmes_trophy_shares_are_the_shipped_models():
    """The README quotes the trophy hint's head (the one whose it -> trophy share falls most from "big" to "small"),
    its two shares, its fall and the bar of a clear fall, as the app measures them on the shipped models at start-up
    (`swap_hint`): they were an earlier model's once (36.7%, 39.4%)."""
    import re

    from demo.handlers import Handlers
    from demo.models import load_models

    readme = " ".join((ASSETS.parent / "README.md").read_text(encoding="utf-8").split())
    quoted = re.search(r'falls most from "big" to "small", layer (\d+), head (\d+)\'s \(([\d.]+%) to ([\d.]+%), '
                       r'([\d.]+) points\), falls far less than a clear one would \(([\d.]+) points', readme)
    text = re.search(r'^WINOGRAD_TEXT = "(.+)"$', (ASSETS.parent / "app.py").read_text(encoding="utf-8"), re.M)[1]
    hint = Handlers(load_models()).swap_hint(text, ("big", "small"), ("it", "trophy"))
    assert quoted, "the README's trophy sentence changed: this test reads it"
    layer, head, was, now, fall, bar = quoted.groups()
    assert (f"No head clearly does: the largest fall of the 48 heads, layer {layer}, head {head}'s, is {fall} points "
            f"(from {was} of “it”'s attention with “big” to {now} with “small”), under the {bar} points") in hint, hint
