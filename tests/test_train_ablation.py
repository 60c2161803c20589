"""train.ablation --quick end to end on tiny generated data, and the app reading what it ships."""
import hashlib
import json
import lzma
import shutil

import pytest
import torch

from demo.ablation_view import ablation_markdown
from demo.models import read_ablation
from train import ablation, ablation_plan, ablation_probe
from helpers import TRAINING_DEVICE, contrast_with_white, refused

PRETRAINED_ARMS = ["dynamic", "static-dupe1", "static-dupe10"]


def quick_argv(files, out, *extra):
    return ["--quick", "--out", str(out), "--ship", str(out / "ship"), "--seeds", "0", "1",
            "--corpus", str(files / "corpus.txt"), "--valid", str(files / "valid.txt"),
            "--train", str(files / "train.tsv"), "--dev", str(files / "dev.tsv"), "--precision", "fp32", *extra]


def test_dry_run_plans_identical_arms(tmp_path, capsys):
    assert ablation.main(["--dry-run", "--out", str(tmp_path / "abl")]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("python -m train.pretrain")]
    assert len(lines) == 9  # 3 arms x 3 seeds
    assert not (tmp_path / "abl").exists()  # nothing run, nothing written

    def without_masking(line):
        return (line.replace(" --masking dynamic", "").replace(" --masking static", "")
                .replace(" --dupe-factor 10", "").replace(" --dupe-factor 1", "")
                .replace("static-dupe10-", "ARM-").replace("static-dupe1-", "ARM-").replace("dynamic-", "ARM-"))
    by_seed = {}
    for line in lines:
        assert "--dropout 0" in line and "--epochs 20" in line and "--resume" in line
        assert "--init assets/mini-roberta-mlm" in line  # the shared warm start
        by_seed.setdefault(line.split("--seed ")[1].split()[0], set()).add(without_masking(line))
    assert len(by_seed) == 3 and all(len(v) == 1 for v in by_seed.values())  # only the masking differs


@pytest.mark.slow
def test_ablation_quick_end_to_end(train_files, tmp_path, capsys, single_thread, monkeypatch):
    out = tmp_path / "abl"
    argv = quick_argv(train_files, out)
    assert ablation.main(argv) == 0
    for folder in (out, out / "ship"):
        assert (folder / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert (folder / "results.json").is_file()
    results = json.loads((out / "ship" / "results.json").read_text())
    assert results["status"] == "complete" and results["runs_done"] == results["runs_planned"] == 8
    assert set(results["arms"]) == {*PRETRAINED_ARMS, "random-init"}
    assert [row["masking"] for row in results["paper"]["rows"]] == ["reference", "static", "dynamic"]
    assert {r["ours"] for r in results["paper"]["rows"] if "ours" in r} == {"static-dupe10", "dynamic"}
    assert sum("train.pretrain" in c for c in results["commands"]) == 6
    assert sum("train.finetune" in c for c in results["commands"]) == 8
    assert results["setup"]["corpus"]["chars"] >= 20_000 and results["hardware"]["device"] == TRAINING_DEVICE
    epochs = results["setup"]["epochs"]

    tokens = {}
    for arm in PRETRAINED_ARMS:
        info = results["arms"][arm]
        assert info["n"] == 2 and info["seeds_done"] == [0, 1]
        for key in ("mlm_loss", "mlm_accuracy", "sst2_accuracy"):
            assert info["mean"][key] is not None and info["std"][key] is not None, (arm, key)
        for seed, run in info["seeds"].items():
            assert run["mlm_loss"] > 0 and 0 <= run["mlm_accuracy"] <= 1 and 0 <= run["sst2_accuracy"] <= 1
            curve = run["eval_curve"]
            assert set(curve) == {"step", "tokens", "loss", "accuracy"}
            assert len(curve["step"]) >= 3 and curve["step"][0] == 0
            assert len({len(v) for v in curve.values()}) == 1
            assert len(run["train_curve"]["loss"]) >= 3
            tokens.setdefault(seed, set()).add((run["train_tokens"], run["train_steps"]))
            assert f"--seed {seed}" in run["commands"]["pretrain"]
    assert all(len(v) == 1 for v in tokens.values())  # same token budget in every arm
    assert "minus_dynamic" in results["arms"]["static-dupe1"] and "minus_dynamic" not in results["arms"]["dynamic"]

    # the masker trains static-dupe1 on one fixed mask per row, dynamic on a new one every epoch
    masks = {arm: results["arms"][arm]["seeds"]["0"]["masks"] for arm in PRETRAINED_ARMS}
    assert masks["static-dupe1"]["distinct_per_row_max"] == 1
    assert masks["dynamic"]["distinct_per_row_min"] == epochs
    assert masks["static-dupe10"]["distinct_per_row_min"] == min(10, epochs)
    pre = json.loads((out / "static-dupe1-seed0" / "mlm" / "metrics.json").read_text())
    assert pre["masking"] == "static" and "--dupe-factor 1 " in pre["command"]
    assert results["arms"]["static-dupe1"]["mean"]["probe_seen_mask_loss"] is not None
    assert results["arms"]["dynamic"]["mean"]["probe_seen_mask_loss"] is None

    # the app reads the shipped folder and shows a compact table
    shown = read_ablation(out / "ship")
    assert shown["results"] == results and shown["curves"].endswith("curves.png")
    table = ablation_markdown(shown)
    for arm in PRETRAINED_ARMS + ["random-init"]:
        assert results["arms"][arm]["label"] in table
    assert "| arm | seeds | held-out MLM loss |" in table and " ± " in table and "92.9" in table

    # --quick without --ship ships nowhere: a tiny model's results never replace the shipped assets/masking-ablation
    quick_only = [a for a in argv if a not in ("--ship", str(out / "ship"))]
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert ablation.main([*quick_only, "--summarize-only"]) == 0
    assert "shipped to" not in capsys.readouterr().out and not (tmp_path / "assets").exists()

    # the same command again: every step is done (tokenizer; per seed 3 arms x pretrain/probe/finetune and the
    # random-init fine-tuning), except a probe that was deleted
    (out / "static-dupe10-seed1" / "probe.json").unlink()
    capsys.readouterr()
    assert ablation.main(argv) == 0
    printed = capsys.readouterr().out
    assert printed.count("already done") == 1 + 2 * (3 * 3 + 1) - 1 and "static-dupe10-seed1/probe: (" in printed
    # other options in the same folder are refused
    assert ablation.main(argv + ["--epochs", "4"]) == 2
    assert "other options" in capsys.readouterr().err


def test_ablation_checks_every_steps_data_before_the_first_step(train_files, tmp_path, capsys, monkeypatch):
    """A misspelt --dev, --train or --valid was found by the step that read it (a fine-tuning after the tokenizer and
    a pretraining run); a missing --corpus after OUT/plan.json was written. Now: exit 2, one line naming the
    option, no step run, nothing written."""
    ran = []
    monkeypatch.setattr(ablation, "run_steps", lambda steps, **kwargs: ran.append(len(steps)) or 1)
    out = tmp_path / "abl"
    argv = quick_argv(train_files, out)
    a_text, a_tsv, gone = str(train_files / "valid.txt"), str(train_files / "dev.tsv"), str(tmp_path / "dev.tvs")
    xz = tmp_path / "corpus.txt.xz"  # the mixture was called "a folder"; a compressed file failed after plan.json
    xz.write_bytes(lzma.compress(b"some text\n"))
    for option, value, words in [
        ("--dev", gone, [f"--dev {gone}: no such file"]),
        ("--train", str(train_files), [f"--train {train_files} is a folder, not a TSV/CSV file"]),
        ("--dev", a_text, [f"--dev {a_text}: no text column"]),
        ("--valid", gone, [f"--valid {gone}: no such file or folder"]),
        ("--corpus", gone, [f"--corpus {gone}: no such file or folder"]),
        ("--corpus", str(train_files), [f"--corpus {train_files} is a folder: --corpus-chars slices one plain local "
                                        "text file"]),
        ("--corpus", f"{a_text}=1,{a_tsv}=2", [f"--corpus {a_text}=1,{a_tsv}=2 is a mixture: --corpus-chars"]),
        ("--corpus", str(xz), [f"--corpus {xz} is a compressed file: --corpus-chars"]),
        ("--tokenizer", a_tsv, [f"--tokenizer {a_tsv} is not a tokenizer"]),
    ]:
        refused(ablation.main, [*argv, option, value], capsys, *words)
    assert ran == [] and not out.exists()
    assert ablation.main(argv) == 1 and len(ran) == 1  # good inputs: the steps ran (the stub stops there)


def test_runs_from_other_weights_are_refused_whatever_steps_are_planned_now(tmp_path):
    """plan.json's sha256 of the starting weights guards every run folder of the ablation, also those a later
    command does not plan (another --seeds or --arms), so that no summary mixes runs from two warm starts."""
    from types import SimpleNamespace

    out = tmp_path / "abl"

    def step(arm, seed):
        name = f"{arm}-seed{seed}/pretrain"
        return SimpleNamespace(name=name, command=f"python -m train.pretrain --seed {seed}",
                               folder=out / f"{arm}-seed{seed}" / "mlm")

    assert ablation_plan.check_plan(out, [step("dynamic", 0)], "a" * 64) == []
    step("dynamic", 0).folder.mkdir(parents=True)  # seed 0 ran from weights a
    assert ablation_plan.check_plan(out, [step("dynamic", 1)], "b" * 64) == ["dynamic-seed0"]  # seed 1 from b: refused
    assert ablation_plan.check_plan(out, [step("dynamic", 0), step("dynamic", 1)], "b" * 64) != []
    assert ablation_plan.check_plan(out, [step("dynamic", 1)], "a" * 64) == []  # the same weights: fine
    assert ablation_plan.recorded_init_sha256(out) == "a" * 64


@pytest.mark.slow
def test_ablation_warm_start(train_files, tiny_mlm_dir, tmp_path, capsys, single_thread):
    """--init: every arm continues from the same MLM folder (its weights, shape and tokenizer)."""
    import roberta

    out, init = tmp_path / "abl-init", tmp_path / "warm-start"
    shutil.copytree(tiny_mlm_dir, init)
    argv = quick_argv(train_files, out, "--seeds", "0", "--arms", "dynamic", "static-dupe1", "--init", str(init))
    assert ablation.main(argv) == 0
    assert not (out / "tokenizer").exists()  # the warm start's tokenizer, none trained
    results = json.loads((out / "results.json").read_text())
    assert results["status"] == "complete" and results["setup"]["init"] == str(init)
    assert results["setup"]["tokenizer"] == str(init / "tokenizer.json")
    # which weights it started from, not only their folder: sha256sum of model.safetensors
    sha = hashlib.sha256((init / "model.safetensors").read_bytes()).hexdigest()
    assert results["setup"]["init_weights_sha256"] == sha
    pretrain_commands = [c for c in results["commands"] if "train.pretrain" in c]
    assert len(pretrain_commands) == 2 and all(f"--init {init}" in c for c in pretrain_commands)
    # same starting point: the held-out loss before the first step is the same in both arms
    first = {arm: results["arms"][arm]["seeds"]["0"]["eval_curve"]["loss"][0] for arm in ("dynamic", "static-dupe1")}
    assert first["dynamic"] == pytest.approx(first["static-dupe1"], abs=1e-6)
    # the no-pretraining baseline has the warm start's shape
    config = roberta.RobertaForMaskedLM.from_pretrained(tiny_mlm_dir).config
    baseline = roberta.RobertaForSequenceClassification.from_pretrained(out / "random-init-seed0" / "sst2").config
    for key in ("num_hidden_layers", "hidden_size", "num_attention_heads", "intermediate_size", "vocab_size"):
        assert getattr(baseline, key) == getattr(config, key), key
    # new weights under the same folder (as the shipped model changed from phase 2 to phase 25): the runs made
    # from the old ones are not continued or summarised as if from the new
    model = roberta.RobertaForMaskedLM.from_pretrained(init)
    with torch.no_grad():
        model.lm_head.bias.add_(1.0)
    model.save_pretrained(init)
    assert ablation.main(argv) == 2
    assert "other --init weights" in capsys.readouterr().err


def test_the_mask_probe_scores_as_evaluate_does(tiny_mlm_dir, tokenizer, sentences):
    """The probe's loss and accuracy come from train.evaluate's scoring loop: the same masked rows, the same
    figures as `evaluate_mlm`."""
    import roberta
    from train import evaluate
    from train.packing import pack_sequences

    model = roberta.RobertaForMaskedLM.from_pretrained(tiny_mlm_dir).eval()
    rows = pack_sequences(sentences, tokenizer, 32)
    masked = roberta.DynamicMasker.from_tokenizer(tokenizer, seed=3)(rows)
    probe = ablation_probe._mlm_scores(model, masked, batch_size=4)
    scored = evaluate.evaluate_mlm(model, tokenizer, rows, batch_size=4, seed=3)
    assert probe["targets"] > 0
    assert (probe["loss"], probe["accuracy"], probe["targets"]) == \
        (scored["loss"], scored["accuracy"], scored["tokens"])


def test_writes_leave_another_process_s_temporary_file_alone(tmp_path):
    """plan.json and the corpus slice (probe.json and results.json too) were written through a fixed NAME.tmp,
    which a second process writing the same file shares: one replaced or renamed away the other's half-written
    file. The temporary name now holds the process id."""
    from types import SimpleNamespace

    out = tmp_path / "abl"
    out.mkdir()
    others = [out / "plan.tmp", tmp_path / "slice.tmp"]  # another process's, mid-write
    for other in others:
        other.write_text("another process")
    step = SimpleNamespace(name="dynamic-seed0/pretrain", command="python -m train.pretrain", folder=out / "x")
    assert ablation_plan.check_plan(out, [step], "a" * 64) == []
    source = tmp_path / "corpus.txt"
    source.write_text("one document\nanother\n")
    assert ablation_plan.slice_corpus(source, 5, tmp_path / "slice.txt")["documents"] == 1
    assert all(other.read_text() == "another process" for other in others)
    assert json.loads((out / "plan.json").read_text())["dynamic-seed0/pretrain"] == "python -m train.pretrain"
    assert (tmp_path / "slice.txt").read_text() == "one document\n"


def test_the_corpus_slice_counts_documents_as_train_data_reads_them(tmp_path):
    """The slice ends at a document start, and counts its documents, by `train.data`'s rule (`starts_document`): in
    WikiText layout a ` = Title = ` line (not a ` = = Section = = ` one), else each line that is not blank."""
    from train import data

    wiki = tmp_path / "wiki.txt"
    wiki.write_text(" = A = \n first paragraph \n\n = = Section = = \n more text \n = B = \n second \n"
                    " = C = \n third \n")
    sliced = ablation_plan.slice_corpus(wiki, 60, tmp_path / "wiki-slice.txt")
    documents = data.read_documents(str(tmp_path / "wiki-slice.txt"))
    assert sliced["documents"] == len(documents) == 2 and documents[0] == "A\nfirst paragraph\nSection\nmore text"
    plain = tmp_path / "plain.txt"
    plain.write_text("one\n\ntwo\nthree\n")
    sliced = ablation_plan.slice_corpus(plain, 5, tmp_path / "plain-slice.txt")
    assert sliced["documents"] == len(data.read_documents(str(tmp_path / "plain-slice.txt"))) == 1


def test_mean_and_std_are_summarize_s():
    """train.summarize and train.ablation compute mean ± std (sample, n - 1) in one place, with `statistics`:
    summarize's sums by hand differed in the last digit (std 0.02828427124746185 here)."""
    import statistics

    from train import summarize

    assert summarize.mean_std([0.8, None, 0.84]) == (statistics.fmean([0.8, 0.84]), 0.028284271247461846, 2)
    assert summarize.mean_std([0.5]) == (0.5, None, 1) and summarize.mean_std([None]) == (None, None, 0)


def test_the_figure_tells_the_arms_apart_without_colour(monkeypatch):
    """curves.png told the arms' curves apart by colour alone (every arm's held-out line "o-", its training and
    held-out lines plain, tab:orange at 2.5:1 against white), and the bars' hatches took the bars' opacity (35% on
    the memorised masks' bars; dots lost on the 95% fills). Drawn from the shipped results.json: each arm keeps one
    marker, its own, on every line of it in both loss panels (so no two lines of a panel share line style and
    marker), the legends show the markers, every line is at least 3:1 against white, and the bars' outlines and
    hatches are opaque."""
    from pathlib import Path

    from matplotlib.colors import to_rgba

    from train import ablation_figure
    from train.ablation_setup import ARMS

    def look(line):
        return line.get_linestyle(), line.get_marker() if line.get_marker() not in ("", "None", None) else None

    drawn = []
    monkeypatch.setattr(ablation_figure, "save_figure", lambda fig, path: drawn.append(fig))
    results = json.loads((Path(__file__).resolve().parents[1] / "assets" / "masking-ablation" / "results.json")
                         .read_text(encoding="utf-8"))
    ablation_figure.plot(results, Path("unused.png"))
    ax_eval, ax_train, ax_probe, _ = drawn[0].axes
    labels = {f"{info['label']} (n={info['n']})": arm for arm, info in results["arms"].items() if arm in ARMS}
    assert len(labels) == len(ARMS)
    held_out = {labels[line.get_label()]: line for line in ax_eval.get_lines()}
    markers = {arm: look(line)[1] for arm, line in held_out.items()}
    assert None not in markers.values() and len(set(markers.values())) == len(ARMS), markers
    assert all(line.get_markersize() >= 4 for line in held_out.values())  # a shape one can see, not a dot
    train_lines = ax_train.get_lines()
    assert len(train_lines) == 2 * len(ARMS)  # each arm's training loss, and its held-out loss again, dashed
    assert len({look(line) for line in train_lines}) == len(train_lines), [look(line) for line in train_lines]
    for line in train_lines:  # an arm's lines carry its marker and colour, whichever the panel
        arm = next(arm for arm, same in held_out.items() if same.get_color() == line.get_color())
        assert look(line)[1] == markers[arm], (arm, look(line))
    for ax in (ax_eval, ax_train):
        shown = ax.get_legend()
        labelled = [line for line in ax.get_lines() if not line.get_label().startswith("_")]
        assert [look(handle) for handle in shown.get_lines()] == [look(line) for line in labelled]
        assert [text.get_text() for text in shown.get_texts()] == [line.get_label() for line in labelled]
    for line in [*ax_eval.get_lines(), *train_lines]:
        assert contrast_with_white(line.get_color()) >= 3, (line.get_label(), line.get_color())
    bars = [patch for patch in ax_probe.patches if patch.get_hatch()]
    assert bars and all(to_rgba(patch.get_edgecolor())[3] == 1 for patch in bars)  # the hatch is the edge's colour


def test_the_sst2_bars_are_at_least_3_to_1_against_white(monkeypatch):
    """The SST-2 panel's bars, one per arm and told apart by their labels alone, were drawn at 80% opacity: the
    vermillion and green arms' came out at 2.95:1 and 2.67:1 against white, under WCAG 1.4.11's 3:1. Each bar, as
    it shows over the white axes, is at least 3:1."""
    from pathlib import Path

    import matplotlib.pyplot as plt
    from matplotlib.colors import to_rgba

    from train import ablation_figure

    drawn = []
    monkeypatch.setattr(ablation_figure, "save_figure", lambda fig, path: drawn.append(fig))
    results = json.loads((Path(__file__).resolve().parents[1] / "assets" / "masking-ablation" / "results.json")
                         .read_text(encoding="utf-8"))
    ablation_figure.plot(results, Path("unused.png"))
    bars = drawn[0].axes[3].patches
    assert len(bars) == len(results["arms"])  # the baseline's grey bar too
    for bar in bars:
        *rgb, alpha = to_rgba(bar.get_facecolor())
        shown = [alpha * c + 1 - alpha for c in rgb]  # blended with the white behind it
        assert contrast_with_white(shown) >= 3, (bar.get_facecolor(), round(contrast_with_white(shown), 2))
    plt.close(drawn[0])
