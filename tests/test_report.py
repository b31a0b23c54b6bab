"""The comparison report (one offline HTML file) and the live dashboard, checked as a user sees them."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from zoo.report.compare import write_report
from zoo.report.html import pareto_front

SENTENCES = [
    "the dog sees a cat near the old tower",
    "a small bird sings in the green garden",
    "two old men walk along the quiet river",
    "the red fox jumps over a lazy brown dog",
]


def fake_run(folder: Path, attention: str, seed: int, bleu: float, status: str = "finished") -> None:
    """A run directory as zoo writes it: summary with validations, per-item test outputs."""
    folder.mkdir(parents=True)
    summary = {
        "schema_version": 1,
        "status": status,
        "task": "translation",
        "monitor": "bleu",
        "seed": seed,
        "config_key": f"key-{attention}",
        "overrides": [f"attention={attention}", f"seed={seed}"],
        "components": {"attention": {"name": attention}, "encoder": {"name": "gru"}, "dataset": {"name": "synthetic"}},
        "latest_val": {"bleu": bleu - 1},
        "epoch": 1,
        "step": 20,
        "max_epochs": 6,
        "validations": [
            {"epoch": e, "step": 10 * (e + 1), "seconds": 5.0 * (e + 1), "bleu": bleu * (e + 1) / 3} for e in range(3)
        ],
    }
    if status == "finished":
        summary |= {
            "test": {"bleu": {"score": bleu, "higher_is_better": True, "signature": "nrefs:1|tok:13a|version:2.6.0"}},
            "breakdowns": {
                "bleu_by_length": {"1-10": {"bleu": bleu + 5, "count": 2}, "11-20": {"bleu": bleu - 5, "count": 2}}
            },
            "parameters": {"trainable": 1000 * (2 + len(attention)), "frozen": 0},
            "train_seconds": 10.0 + seed,
            "tokens_per_second": 500.0,
            "peak_memory_mb": 400.0,
            "latency_ms": {"greedy": 3.0, "beam": 9.0},
        }
        rows = [
            {
                "id": f"test-{k}",
                "source": s,
                "hypothesis": s if k % 2 else s.upper(),
                "references": [s],
                "scores": {"bleu": 100.0 if k % 2 else 0.0},
            }
            for k, s in enumerate(SENTENCES)
        ]
        (folder / "test_items.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    (folder / "summary.json").write_text(json.dumps(summary))


def sweep(root: Path) -> Path:
    for k, (attention, bleu) in enumerate((("additive", 40.0), ("dot", 35.0), ("none", 10.0))):
        for seed in (1, 2):
            fake_run(root / f"{k}{seed}", attention, seed, bleu + seed)
    return root


def test_pareto_front_keeps_what_nothing_beats():
    points = [(1, 10.0), (2, 30.0), (3, 20.0), (4, 40.0)]
    assert pareto_front(points, higher_is_better=True) == [(1, 10.0), (2, 30.0), (4, 40.0)]
    assert pareto_front(points, higher_is_better=False) == [(1, 10.0)]


def test_report_in_chromium_offline_with_leaderboard_charts_and_screenshot(chromium, tmp_path):
    report = write_report([sweep(tmp_path / "runs")], tmp_path / "report.html", baseline="attention=additive")
    page = chromium.new_page(viewport={"width": 1400, "height": 900})
    errors, requests = [], []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("request", lambda request: requests.append(request.url))
    page.goto(report.as_uri())
    page.wait_for_selector(".plotly-graph-div .main-svg")
    rows = page.eval_on_selector_all("table.leaderboard tbody tr", "rows => rows.map(r => r.cells[0].innerText)")
    assert rows == ["attention=additive", "attention=dot", "attention=none"]
    assert page.eval_on_selector_all(".plotly-graph-div", "divs => divs.length") == 3  # curves, cost, breakdown
    assert page.eval_on_selector_all("table.samples tbody tr", "rows => rows.length") == len(SENTENCES)
    page.click("table.leaderboard th:nth-child(3)")  # sort by bleu, ascending
    rows = page.eval_on_selector_all("table.leaderboard tbody tr", "rows => rows.map(r => r.cells[0].innerText)")
    assert rows[0] == "attention=none"
    page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
    assert (tmp_path / "report.png").stat().st_size > 20_000
    assert errors == [] and [url for url in requests if not url.startswith("file:")] == []


def test_dashboard_shows_a_run_as_running_then_finished(tmp_path):
    runs = tmp_path / "runs"
    fake_run(runs / "a", "additive", 1, 40.0)
    fake_run(runs / "b", "dot", 1, 30.0, status="running")
    server = subprocess.Popen(
        [sys.executable, "-m", "zoo.cli", "dashboard", str(runs), "--port", "0"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = re.search(r"http://\S+", server.stdout.readline()).group(0)
        assert url.startswith("http://127.0.0.1:")
        page = urllib.request.urlopen(url, timeout=30).read().decode()
        assert "<h2>Running</h2>" in page and "epoch 2 of 6" in page and "1 running" in page
        fake_run(tmp_path / "done", "dot", 1, 30.0)
        (runs / "b" / "summary.json").write_text((tmp_path / "done" / "summary.json").read_text())
        time.sleep(0.1)
        page = urllib.request.urlopen(url, timeout=30).read().decode()
        assert "<h2>Running</h2>" not in page and page.count("1 finished") == 2
        request = urllib.request.Request(url, data=b"x", method="POST")
        try:
            urllib.request.urlopen(request, timeout=10)
            raise AssertionError("the dashboard accepted a POST")
        except urllib.error.HTTPError as error:
            assert error.code == 405
    finally:
        server.terminate()
        server.wait(timeout=10)
