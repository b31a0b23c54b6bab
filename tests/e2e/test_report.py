"""The comparison report (one offline HTML file), checked as a user sees it (the live dashboard and the charts:
test_dashboard.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from zoo.report.compare import write_report
from zoo.report.html import pareto_front
from zoo.report.stats import p_text

pytestmark = pytest.mark.slow

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
    charts = page.eval_on_selector_all(".plotly-graph-div", "divs => divs.length")
    assert charts == 4  # curves (of val/bleu, all these runs logged), the settings, quality and cost, breakdown
    assert page.eval_on_selector_all("table.samples tbody tr", "rows => rows.length") == len(SENTENCES)
    page.click("table.leaderboard th:nth-child(3)")  # sort by bleu, ascending
    rows = page.eval_on_selector_all("table.leaderboard tbody tr", "rows => rows.map(r => r.cells[0].innerText)")
    assert rows[0] == "attention=none"
    page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
    assert (tmp_path / "report.png").stat().st_size > 20_000
    assert errors == [] and [url for url in requests if not url.startswith("file:")] == []


# --------------------------------------------------------------------------- the leaderboard table
OUTPUTS = [
    f"the {a} {n} walks to the {place} today"
    for a in ("old", "red", "shy", "big", "wet")
    for n in ("dog", "cat", "fox", "owl")
    for place in ("river", "tower")
]


def scored_run(folder: Path, attention: str, seed: int, bleu: float, latency: float, right: int) -> None:
    """A finished run (:func:`fake_run`) of greedy latency ``latency`` whose first ``right`` test outputs are right."""
    fake_run(folder, attention, seed, bleu)
    summary = json.loads((folder / "summary.json").read_text())
    summary["latency_ms"]["greedy"] = latency
    (folder / "summary.json").write_text(json.dumps(summary))
    hypotheses = [s if k < right else "nothing" for k, s in enumerate(OUTPUTS)]
    rows = [
        {"id": f"test-{k}", "hypothesis": h, "references": [s], "scores": {"bleu": 100.0 * (h == s)}}
        for k, (h, s) in enumerate(zip(hypotheses, OUTPUTS))
    ]
    (folder / "test_items.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))


@pytest.fixture(scope="module")
def leaderboard_report(tmp_path_factory) -> Path:
    """A report of three configurations whose latencies all read 3.0 (3.02, 3.01, 3.03), one running, tested
    against attention=additive: attention=none is worse beyond noise, attention=dot is not."""
    root = tmp_path_factory.mktemp("leaderboard")
    configurations = (("additive", 40.0, 3.02, 40), ("dot", 35.0, 3.01, 39), ("none", 10.0, 3.03, 10))
    for attention, bleu, latency, right in configurations:
        for seed in (1, 2):
            scored_run(root / "runs" / f"{attention}{seed}", attention, seed, bleu + seed, latency, right)
    fake_run(root / "runs" / "cosine1", "cosine", 1, 20.0, status="running")
    return write_report([root / "runs"], root / "report.html", baseline="attention=additive")


def leaderboard_cells(page: str) -> tuple[list[str], list[tuple[str, dict[str, tuple[str, dict]]]]]:
    """The leaderboard's headings, and each row's class with its cells by heading: (text, attributes)."""
    from html.parser import HTMLParser

    class Reader(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.inside, self.headings, self.rows, self.cell = False, [], [], None

        def handle_starttag(self, tag, attrs):
            attributes = dict(attrs)
            if tag == "table":
                self.inside = attributes.get("class") == "leaderboard"
            elif self.inside and tag == "tr":
                self.rows.append((attributes.get("class", ""), []))
            elif self.inside and tag in ("td", "th"):
                self.cell = [tag, "", attributes]

        def handle_data(self, data):
            if self.cell is not None:
                self.cell[1] += data

        def handle_endtag(self, tag):
            if self.cell is not None and tag == self.cell[0]:
                (self.headings if tag == "th" else self.rows[-1][1]).append((self.cell[1], self.cell[2]))
                self.cell = None
            elif tag == "table":
                self.inside = False

    reader = Reader()
    reader.feed(page)
    headings = [text for text, _ in reader.headings]
    return headings, [(kind, dict(zip(headings, cells))) for kind, cells in reader.rows if cells]


def test_the_leaderboard_carries_true_values_the_best_and_the_rows_beyond_noise(leaderboard_report):
    page = leaderboard_report.read_text()
    headings, rows = leaderboard_cells(page)
    cells = {row["configuration"][0].removeprefix("attention="): row for _, row in rows}
    assert list(cells) == ["additive", "dot", "none", "cosine"] and "target tok/s" not in headings
    assert cells["additive"]["bleu"] == ("41.5 ± 0.7", {"data-value": "41.5", "class": "best"})
    latencies = [cells[name]["ms/item greedy"] for name in ("additive", "dot", "none")]
    assert [(text, float(attributes["data-value"])) for text, attributes in latencies] == [
        ("3.0 ± 0.0", 3.02),
        ("3.0 ± 0.0", 3.01),
        ("3.0 ± 0.0", 3.03),
    ]
    assert [row["configuration"][0] for kind, row in rows if kind == "significant"] == ["attention=none"]
    text, attributes = cells["none"]["p"]
    p = float(attributes["data-value"])
    assert p < 0.05 and text == f"{p_text(p)} *" and float(cells["dot"]["p"][1]["data-value"]) > 0.05
    assert cells["additive"]["p"] == cells["cosine"]["bleu"] == ("", {"data-value": ""}), "missing: no value"
    shared = "same in every run: frozen=0, target tok/s=500, memory MB=400.0, ms/item beam=9.0"
    assert f'<p class="shared">{shared}</p>' in page


def test_leaderboard_sorts_by_true_values_in_chromium_missing_last(chromium, leaderboard_report):
    """Latencies that all read 3.0 sort by what they are; p-values sort; the baseline's and the running row's
    empty cells stay last whichever way a column is sorted; in a window of 1000 pixels the table fits the page, with
    no box to scroll: its headings wrap and a mean's ± std goes under it, never a number broken. The report's table,
    style and script alone, without the charts' seconds of loading (the whole page sorts in the test above)."""
    from zoo.report.html import asset

    drawn = r'<table class="leaderboard"><thead><tr><th onclick.*?</table>'  # not board.js's template of one
    table = re.search(drawn, leaderboard_report.read_text(), re.S)[0]
    page = chromium.new_page(viewport={"width": 1000, "height": 600})
    page.set_content(f"<style>{asset('report.css')}</style><script>{asset('report.js')}</script>{table}")
    assert page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth")
    assert page.eval_on_selector_all("table.leaderboard th", "hs => hs.some(h => h.getClientRects()[0].height > 30)")
    spreads = page.eval_on_selector_all("table.leaderboard .spread", "ss => ss.map(s => s.getClientRects().length)")
    assert spreads and set(spreads) == {1}, "a ± std stays on one line"

    def order_after_clicking(heading: str) -> list[str]:
        page.click(f"table.leaderboard th:text-is('{heading}')")
        return page.eval_on_selector_all("table.leaderboard tbody tr", "rows => rows.map(r => r.cells[0].innerText)")

    additive, dot, none, cosine = (f"attention={name}" for name in ("additive", "dot", "none", "cosine"))
    assert order_after_clicking("ms/item greedy") == [dot, additive, none, cosine]
    assert order_after_clicking("ms/item greedy") == [none, additive, dot, cosine]
    assert order_after_clicking("p")[:2] == [none, dot]
    assert order_after_clicking("p")[:2] == [dot, none]
    assert order_after_clicking("configuration") == [additive, cosine, dot, none]
    page.close()
