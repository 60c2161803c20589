"""The benchmarks run end to end on tiny inputs (their numbers are not checked: a benchmark is never a timed
test), so that a README table's command keeps working."""
import importlib.util
import os
import random
import re
import sys
from pathlib import Path

import pytest
import torch

from demo.models import configure_torch
from roberta.loss import enable_fast_cpu_math

from helpers import sys_path_kept

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
THREADS = torch.get_num_threads()  # as the session runs the other test modules


@pytest.fixture(autouse=True)
def torch_threads_restored():
    """The app's benchmarks share the cores as the app does (`demo.models.configure_torch`: 1 thread on 2 cores),
    run here in the tests' process: every module collected after this one ran on that count, with other runtimes
    and float results than alone. Each test here gives the count back."""
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


def load(name):
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    with sys_path_kept():  # it puts its folders on sys.path as it loads
        spec.loader.exec_module(module)
    return module


def table_rows(text, first_cell):
    return [line for line in text.splitlines() if line.startswith(f"| {first_cell} ")]


def test_a_benchmark_sets_torchs_thread_count_for_its_own_run(monkeypatch):
    monkeypatch.setenv("TORCH_THREADS", str(THREADS + 1))
    configure_torch(concurrency=2)  # as the app's benchmarks do
    assert torch.get_num_threads() == THREADS + 1


def test_the_next_test_runs_on_the_sessions_thread_count():
    """The test before this one set another count: the fixture gave the session's back."""
    assert torch.get_num_threads() == THREADS


def test_a_loaded_benchmark_leaves_sys_path_as_it_was():
    before = sys.path[:]
    load("bench_tokens_embeddings")  # it puts the repository and benchmarks/ on sys.path as it loads
    assert sys.path == before


DENORMAL = 1e-40  # below float32's smallest normal number (1.2e-38)


def test_a_benchmark_flushes_denormals_to_zero():
    enable_fast_cpu_math()  # as the train-step and matmul benchmarks, and every training run, do in this process
    assert (torch.tensor([DENORMAL]) * 1).item() == 0.0


def test_the_next_test_keeps_denormals():
    """The test before this one turned flush-to-zero on: the tests' fixture (conftest.py) put back the session's
    setting (off), so that the files after this one compute as they do alone."""
    assert (torch.tensor([DENORMAL]) * 1).item() > 0  # flushed, it reads 0


def test_train_step_benchmark_reports_both_models(capsys):
    load("bench_train_step").main(["--preset", "tiny", "--vocab", "1000", "--dropout", "0.0", "--precision", "fp32",
                                   "bf16", "--batch-size", "4", "--seq-len", "16", "--steps", "1", "--warmup", "0",
                                   "--latency-runs", "1"])
    out = capsys.readouterr().out
    rows = table_rows(out, "tiny")
    assert len(rows) == 3  # fp32 and bf16 training steps, then the latency row
    for row in rows[:2]:
        ours, theirs, ratio = re.fullmatch(r"\| tiny \| 1000 \| 0.0 \| \w+ \| ([\d,]+) \| ([\d,]+) \| ([\d.]+)x \|",
                                           row).groups()
        assert int(ours.replace(",", "")) > 0 and int(theirs.replace(",", "")) > 0 and float(ratio) > 0


def test_matmul_roofline_benchmark_bounds_the_step(capsys):
    load("bench_matmul_roofline").main(["--preset", "tiny", "--vocab", "1000", "--batch-size", "2", "--seq-len", "16",
                                        "--precision", "fp32", "--repeats", "1"])
    out = capsys.readouterr().out
    assert len(table_rows(out, "fp32")) == 6  # five products and the whole step
    assert re.search(r"bound: \*\*[\d,]+ tokens/s\*\*", out)


@pytest.mark.slow  # loads the shipped models
def test_fill_mask_page_benchmark_reports_both_texts(capsys):
    load("bench_fill_mask_page").main(["--repeats", "1"])
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| “") or "2 masks" in line]
    assert len(rows) == 2 and all(re.search(r"(\| [\d.]+ ){3}\|$", row) for row in rows)


@pytest.mark.slow  # loads the shipped models
def test_app_benchmarks_run_with_the_shipped_models(capsys):
    load("bench_attention_view").main(["--repeats", "1", "--views", "heads"])
    assert len(table_rows(capsys.readouterr().out, "17")) >= 3  # first run, layer and head change, sub-tab
    load("bench_worst_case_inputs").main(["--chars", "200", "--only", "spaces"])
    handlers = [row.split(" | ")[0].lstrip("| ") for row in capsys.readouterr().out.splitlines()
                if re.match(r"\| \w.* \| \d+ \| [\d.]+ \|", row)]
    assert handlers[:4] == ["fill_mask", "fill_mask_layers", "classify", "masking (40 epochs)"]
    assert len(handlers) == 8


@pytest.mark.slow  # loads the shipped models
def test_tokens_embeddings_benchmark_times_every_handler(capsys):
    load("bench_tokens_embeddings").main(["--repeats", "1"])
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| `/")]
    assert [row.split("`")[1] for row in rows] == ["/tokens", "/tokens", "/bpe_merges", "/neighbours", "/analogy",
                                                   "/word_map", "/positions"]
    assert all(re.search(r"\| [\d.]+ \|$", row) for row in rows)


FAKE_API = {"named_endpoints": {
    "/fill_mask": {"parameters": [{"parameter_name": "text", "parameter_default": "Paris is the capital of <mask>."},
                                  {"parameter_name": "top_k", "parameter_default": 5},
                                  {"parameter_name": "model", "parameter_default": "shipped"}]},
    "/fill_mask_compare": {"parameters": [{"parameter_name": "text", "parameter_default": "A <mask>."},
                                          {"parameter_name": "other", "parameter_default": "FacebookAI/roberta-base"}]},
    "/bpe_merges": {"parameters": [{"parameter_name": "word", "parameter_default": " tokenization"}]},
    "/analogy": {"parameters": [{"parameter_name": name, "parameter_default": default}
                                for name, default in (("a", "man"), ("b", "king"), ("c", "woman"), ("k", 10))]},
    "/word_map": {"parameters": [{"parameter_name": "words", "parameter_default": "Monday, cat"}]},
}}


def test_memory_benchmark_sends_new_texts_and_the_other_defaults():
    """Each call's text is new (a mask put in where the default text has one), a word's inputs are words of it
    (a, b and c different, as /analogy requires; a leading space kept where the default has one), the rest the
    endpoint's defaults; an endpoint whose defaults name a Hub model is left out (it would download one)."""
    bench = load("bench_app_memory")
    calls, left_out = bench.endpoint_calls(FAKE_API)
    assert [name for name, _ in calls] == ["/fill_mask", "/bpe_merges", "/analogy", "/word_map"]
    assert left_out == ["/fill_mask_compare"]
    rng = random.Random(0)
    parameters = dict(calls)
    for text in ["The quick brown fox jumps over the lazy dog.", "It is."]:
        masked, top_k, model = bench.arguments(parameters["/fill_mask"], text, rng)
        assert masked.count("<mask>") == 1 and len(masked.split()) == len(text.split()) and (top_k, model) == (
            5, "shipped")
        assert masked.replace("<mask>", "") != text
        word, = bench.arguments(parameters["/bpe_merges"], text, rng)
        assert word.startswith(" ") and word[1:].isalpha() and 3 <= len(word[1:]) <= 4  # at most 5 BPE pieces
        a, b, c, k = bench.arguments(parameters["/analogy"], text, rng)
        assert len({a, b, c}) == 3 and k == 10 and not a.startswith(" ")
        words, = bench.arguments(parameters["/word_map"], text, rng)
        assert len(words.split(", ")) == bench.MAP_WORDS
    texts = bench.read_texts(None)
    assert len(set(texts)) > 1000 and all(6 <= len(t.split()) <= 14 for t in texts)


def test_memory_benchmark_turns_the_model_boxes_over_local_folders(tmp_path):
    """With local folders the comparison is in (its Hub-id box takes them), a model box names the served model and
    the folders in turn, and two boxes of one call never name the same folder (a model compared with itself is
    refused); --model-copies copies the files a model box reads of each served model."""
    bench = load("bench_app_memory")
    calls, left_out = bench.endpoint_calls(FAKE_API, folders=True)
    assert "/fill_mask_compare" in dict(calls) and left_out == []
    compare = [*FAKE_API["named_endpoints"]["/fill_mask_compare"]["parameters"],
               {"parameter_name": "model", "parameter_default": "shipped"}]
    assert bench.model_boxes(compare) == (["model"], ["other"])
    assert bench.model_boxes(FAKE_API["named_endpoints"]["/word_map"]["parameters"]) == ([], [])
    boxes = {"other": ["a", "b"], "model": ["shipped", "b"]}
    assert [bench.turn_of(boxes, turn) for turn in range(5)] == [
        {"other": "a", "model": "shipped"}, {"other": "b", "model": "shipped"}, {"other": "a", "model": "b"},
        {"other": "b", "model": "shipped"},  # b beside b: the next value
        {"other": "a", "model": "shipped"}]
    assert [bench.turn_of({"model": ["shipped", "x", "y"]}, turn)["model"] for turn in range(4)] == [
        "shipped", "x", "y", "shipped"]
    served = tmp_path / "served"
    served.mkdir()
    for name in ("config.json", "model.safetensors", "tokenizer.json", "README.md"):
        (served / name).write_text(name)
    copies = bench.model_copies([served], 2, tmp_path)
    assert len(copies) == 2 and len(set(copies)) == 2
    for copy in map(Path, copies):
        assert sorted(f.name for f in copy.iterdir()) == ["config.json", "model.safetensors", "tokenizer.json"]
    assert bench.served_folders({"MLM_MODEL": str(served), "SENTIMENT_MODEL": "org/not-a-folder"}) == [served]


def test_memory_benchmark_reads_its_own_resident_memory_and_a_tsvs_first_column(tmp_path):
    bench = load("bench_app_memory")
    assert 10 < bench.resident_mib(os.getpid()) < 64 * 1024
    tsv = tmp_path / "dev.tsv"
    tsv.write_text("sentence\tlabel\nit 's a charming and often affecting journey .\t1\nbad .\t0\n")
    assert bench.read_texts(str(tsv)) == ["it 's a charming and often affecting journey ."]  # header, short row out


@pytest.mark.slow  # starts app.py on the tiny models, then 30 requests
def test_memory_benchmark_runs_every_endpoint_of_a_tiny_app(capsys):
    bench = load("bench_app_memory")
    assert bench.main(["--tiny", "--requests", "30", "--every", "15"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^\| 30 \| [\d,]+ \| 0 \|", out, re.M)  # no request refused
    endpoints = re.search(r"^(\d+) endpoints: (.*) \(left out: /fill_mask_compare, whose defaults name a Hub model\)$",
                          out, re.M)
    assert endpoints and int(endpoints[1]) == len(endpoints[2].split(", ")) >= 15
    assert {"/fill_mask", "/classify", "/attention", "/masking", "/word_map"} <= set(endpoints[2].split(", "))
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in out.splitlines()
            if re.match(r"\| [\d,]+ \|", line)]
    assert [row[0] for row in rows] == ["0", "15", "30"]
    assert all(float(row[3].replace(",", "")) > 50 for row in rows)  # MiB: an app with torch and Gradio
    assert re.search(r"over the second half \(15 to 30 requests\) [+-][\d,]+ MiB\.$", out, re.M)


@pytest.mark.slow  # starts app.py on the tiny models, copies them, probes and 34 requests
def test_memory_benchmark_turns_every_model_box_over_copies_of_a_tiny_apps_models(capsys):
    """With --model-copies the comparison is in, each box takes the copies of its kind of model (the MLM's for
    the fill-mask boxes, the classifier's for Sentiment's, both for Attention's), and no request is refused."""
    bench = load("bench_app_memory")
    assert bench.main(["--tiny", "--model-copies", "1", "--requests", "34", "--every", "17"]) == 0
    out = capsys.readouterr().out
    endpoints = re.search(r"^(\d+) endpoints: (.*)$", out, re.M)
    assert endpoints and "/fill_mask_compare" in endpoints[2].split(", ") and "left out" not in endpoints[2]
    taken = dict(re.findall(r"(/\w+ \w+): (\d+)", out.split("the model boxes take", 1)[1].splitlines()[0]))
    assert taken["/fill_mask model"] == taken["/classify model"] == taken["/fill_mask_compare other"] == "1"
    assert taken["/attention model"] == "2" and taken["/fill_mask_compare model"] == "0"  # the copy is the other
    assert re.search(r"^\| 34 \| [\d,]+ \| 0 \|", out, re.M)  # 34 requests (16 endpoints, 2-3 times each), none refused

