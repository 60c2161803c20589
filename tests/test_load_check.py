"""`python -m scripts.load_check`: its report of a load (requests, errors and latencies per endpoint), and a whole run
with `--tiny` (app.py started on the tests' tiny models, then concurrent `gradio_client` clients on its endpoints)."""
import json
import re

import pytest

from scripts import load_check
from helpers import run_module


def test_the_report_counts_each_endpoints_requests_and_errors():
    """Errors count among the requests and apart from the latencies; an endpoint without requests shows nan."""
    latencies = {"/fill_mask": [i / 10 for i in reversed(range(21))], "/classify": [1.0]}  # 2.0, 1.9, ..., 0.0
    errors = [("/classify", "ValueError('x')"), ("/attention", "TimeoutError()")]
    rows = {line.split(" | ")[0].strip("| "): line.split(" | ")[1:]
            for line in load_check.report(latencies, errors, 2.0, 3, 2).splitlines() if line.startswith("| ")}
    assert rows["/fill_mask"] == ["21", "0", "1.00", "1.90", "2.00 |"]  # requests, errors, p50, p95, max
    assert rows["/classify"] == ["2", "1", "1.00", "1.00", "1.00 |"]
    assert rows["/attention"] == ["1", "1", "nan", "nan", "nan |"]
    assert rows["/masking"] == ["0", "0", "nan", "nan", "nan |"]
    assert rows["**all**"][:3] == ["24", "2", "1.00"]
    assert load_check.report(latencies, errors, 2.0, 3, 2).endswith(
        "3 concurrent clients × 2 requests in 2.0 s (11.0 successful requests/s).")


@pytest.mark.slow  # starts app.py (a cold start of several seconds), then 8 requests
def test_a_tiny_load_check_reports_every_endpoint_answered(tmp_path):
    """Two clients of four requests each: every endpoint answers each client once, with no error, and the report
    (stdout) and the --json figures say so, after the cold start's line."""
    figures = tmp_path / "load.json"
    run = run_module("scripts.load_check", "--tiny", "--clients", 2, "--requests", 4, "--json", figures, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    cold = re.search(r"^Cold start: HTTP answers after ([\d.]+) s, first successful prediction after ([\d.]+) s "
                     r"\(process start to response\)\.$", run.stdout, re.M)
    assert cold and 0 < float(cold[1]) <= float(cold[2]), run.stdout
    rows = {line.split(" | ")[0].strip("| "): line.split(" | ")[1:3]
            for line in run.stdout.splitlines() if line.startswith("| ")}
    assert rows == {"endpoint": ["requests", "errors"], **{e: ["2", "0"] for e in load_check.ENDPOINTS},
                    "**all**": ["8", "0"]}
    assert re.search(r"^2 concurrent clients × 4 requests in [\d.]+ s \([\d.]+ successful requests/s\)\.$",
                     run.stdout, re.M)
    assert "First errors" not in run.stdout and "died" not in run.stdout
    saved = json.loads(figures.read_text(encoding="utf-8"))
    assert saved["errors"] == [] and saved["wall"] > 0
    assert {e: len(v) for e, v in saved["latencies"].items()} == {e: 2 for e in load_check.ENDPOINTS}
    assert all(0 < s <= saved["wall"] for v in saved["latencies"].values() for s in v)


def test_json_goes_into_a_new_folder(tmp_path, monkeypatch, capsys):
    """--json in a folder that does not exist yet: the folder is made and the figures written there, not a
    traceback after the whole load (the load itself stubbed: no app is started)."""
    monkeypatch.setattr(load_check, "check_app_url", lambda url: None)
    monkeypatch.setattr(load_check, "run_load", lambda url, clients, requests: ({"/classify": [0.5]}, [], 1.0))
    figures = tmp_path / "new" / "folder" / "load.json"
    assert load_check.main(["--url", "http://127.0.0.1:1/", "--clients", "1", "--requests", "1",
                            "--json", str(figures)]) == 0
    assert json.loads(figures.read_text(encoding="utf-8")) == {"latencies": {"/classify": [0.5]}, "errors": [],
                                                               "wall": 1.0}
    assert "| /classify | 1 | 0 |" in capsys.readouterr().out
