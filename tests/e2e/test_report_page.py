"""The report's page and the dashboard as a reader uses them in Chromium: one colour per configuration on every
chart and in every report, runs chosen by words, checkboxes and the parallel coordinates' brushes, grouped by any
setting, the leaderboard and the curves downloaded as CSV; on the dashboard, a run's progress from its first step
and the section being read kept in place when a run finishes. Run folders written in the shape real runs have
(helpers.report_runs), so nothing trains."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.report_runs import append_metrics, choose, finish, make_run, open_page, serving, summary, training_row

from zoo.registry import discovery
from zoo.report.colours import PALETTE, palette
from zoo.report.compare import leaderboards, write_report
from zoo.report.live import colours_of
from zoo.report.runs import find_runs
from zoo.run.claim import Lock

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("report_page")]  # its module fixtures run once

discovery.discover()

#: The configurations' names in the page (they differ in attention and in the learning rate).
ADDITIVE, DOT = "attention=additive optim.lr=0.002", "attention=dot optim.lr=0.001"


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    """Two finished seeds of attention=additive (lr 0.002) and one of attention=dot (lr 0.001)."""
    watched = tmp_path_factory.mktemp("page") / "runs"
    make_run(watched / "additive-1", "additive", 1)
    make_run(watched / "additive-2", "additive", 2)
    make_run(watched / "dot-1", "dot", 1)
    return watched


@pytest.fixture(scope="module")
def report_page(chromium, runs):
    page = open_page(chromium, write_report([runs], runs.parent / "report.html").as_uri())
    yield page
    page.close()


def shown_traces(page, chart: str) -> list[tuple[str, str]]:
    """The (name, colour) of each drawn line of the chart of ``chart`` (a curve's name), bands left out."""
    return page.evaluate(
        "name => [...document.querySelectorAll('.zoo-panel')].find(p => p.querySelector('select').value === name)"
        ".querySelector('.zoo-chart').data.filter(t => t.fill !== 'toself' && t.showlegend !== false)"
        ".map(t => [t.name, t.line.color])",
        chart,
    )


def test_a_configuration_has_one_colour_on_every_chart_and_in_every_report(report_page, runs, chromium):
    page = report_page
    expected = colours_of(leaderboards(find_runs([runs])), [])
    additive, dot = expected["key-additive"], expected["key-dot"]
    assert additive != dot
    choose(page, "#zoo-lines", "groups")
    assert dict(shown_traces(page, "val/bleu")) == {
        f"{ADDITIVE} (2 runs)": additive,
        f"{DOT} (1 run)": dot,
    }
    swatches = page.eval_on_selector_all(
        "#zoo-runs tbody tr",
        "rows => rows.map(r => [r.cells[2].innerText, getComputedStyle(r.querySelector("
        "'.zoo-swatch')).backgroundColor])",
    )
    rgb = {colour: f"rgb({int(colour[1:3], 16)}, {int(colour[3:5], 16)}, {int(colour[5:7], 16)})" for colour in PALETTE}
    assert swatches == [["additive-1", rgb[additive]], ["additive-2", rgb[additive]], ["dot-1", rgb[dot]]]
    drawn = page.evaluate(  # the figures drawn on the server: each trace of a configuration, by its name
        "[...document.querySelectorAll('.zoo-figure.js-plotly-plot')].flatMap(gd => gd.data.filter(t => t.meta)"
        ".map(t => [t.name, t.marker.color]))"
    )
    assert {tuple(trace) for trace in drawn} == {(ADDITIVE, additive), (DOT, dot)}
    rows = page.eval_on_selector_all(
        ".zoo-board-server table.leaderboard tbody tr",
        "rows => rows.map(r => [r.cells[0].innerText, r.style.getPropertyValue('--swatch')])",
    )
    assert rows == [[ADDITIVE, additive], [DOT, dot]]
    keys = ["key-additive", "model=gru", "encoder=transformer", "ünïcode", *(f"group {k}" for k in range(20))]
    assert page.evaluate("keys => Object.fromEntries(Zoo.palette(keys))", keys) == palette(keys), "the script's rule"

    alone = [runs / "additive-1", runs / "additive-2"]
    other = open_page(chromium, write_report(alone, runs.parent / "additive.html").as_uri())
    choose(other, "#zoo-lines", "groups")
    assert [colour for _, colour in shown_traces(other, "val/bleu")] == [additive], "another report, alike"
    other.close()


def test_runs_are_chosen_by_words_and_checkboxes_and_the_leaderboard_follows(report_page, runs):
    page = report_page
    choose(page, "#zoo-lines", "runs")
    page.fill("#zoo-filter", "attention=dot")
    assert page.inner_text("#zoo-count") == "1 of 3 shown"
    assert [name for name, _ in shown_traces(page, "train/loss")] == [DOT]
    dimmed = page.eval_on_selector_all("#zoo-runs tr.zoo-off", "rows => rows.map(r => r.dataset.run)")
    assert dimmed == [str(runs / "additive-1"), str(runs / "additive-2")]
    rows = "table.leaderboard tbody tr"
    shown_rows = f"[...document.querySelectorAll('{rows}')].filter(r => !r.hidden && !r.closest('[hidden]'))"
    assert page.evaluate(f"{shown_rows}.map(r => r.cells[0].innerText)") == [DOT]  # the server's table

    page.fill("#zoo-filter", "")
    page.click(f"#zoo-runs tr[data-run='{runs / 'additive-1'}'] .zoo-pick")  # a row's seeds in part: regrouped
    assert page.inner_text("#zoo-count") == "2 of 3 shown"
    regrouped = page.evaluate(f"{shown_rows}.map(r => [r.cells[0].innerText, r.cells[1].innerText])")
    assert regrouped == [[ADDITIVE, "1"], [DOT, "1"]]
    assert page.is_hidden(".zoo-board-server")
    page.click(f"#zoo-runs tr[data-run='{runs / 'additive-1'}'] .zoo-pick")
    assert page.is_visible(".zoo-board-server") and page.inner_text("#zoo-count") == "3 of 3 shown"
    assert page.errors == []


def test_runs_are_grouped_by_any_setting_in_the_leaderboard_and_the_curves(report_page):
    page = report_page
    options = page.eval_on_selector_all("#zoo-by option", "os => os.map(o => o.value)")
    assert options == ["", "attention", "seed", "optim.lr"], "the settings that tell the runs apart, and seed"
    page.select_option("#zoo-by", "seed")
    board = page.eval_on_selector_all(
        ".zoo-board-page table.leaderboard tr", "rows => rows.map(r => [...r.cells].map(c => c.innerText))"
    )
    assert [row[:3] for row in board] == [
        ["seed", "n", "bleu"],
        ["seed=2", "1", "100.0"],
        ["seed=1", "2 (2 cfg)", "63.0 ± 46.7"],  # a row of two configurations says so
    ]
    choose(page, "#zoo-lines", "groups")
    assert [name for name, _ in shown_traces(page, "val/bleu")] == ["seed=1 (2 runs)", "seed=2 (1 run)"]
    page.select_option("#zoo-by", "attention")  # a group of one configuration keeps the configuration's colour
    by_attention = dict(shown_traces(page, "val/bleu"))
    page.select_option("#zoo-by", "")
    by_configuration = dict(shown_traces(page, "val/bleu"))
    assert by_attention == {
        "attention=additive (2 runs)": by_configuration[f"{ADDITIVE} (2 runs)"],
        "attention=dot (1 run)": by_configuration[f"{DOT} (1 run)"],
    }
    assert page.is_visible(".zoo-board-server") and page.errors == []


def test_brushing_an_axis_of_the_parallel_coordinates_keeps_the_runs_in_its_range(report_page):
    page = report_page
    choose(page, "#zoo-lines", "groups")
    page.locator(".zoo-parallel").scroll_into_view_if_needed()  # drawn once in view (WebGL)
    page.wait_for_selector(".zoo-parallel .main-svg")
    labels = page.evaluate("document.querySelector('.zoo-parallel').data[0].dimensions.map(d => d.label)")
    lr = labels.index("optim.lr")
    page.evaluate(  # as a drag along the axis does: Plotly sets the range and says so (plotly_restyle)
        "([gd, k]) => Plotly.restyle(gd, {[`dimensions[${k}].constraintrange`]: [[0.0015, 0.003]]})",
        [page.query_selector(".zoo-parallel"), lr],
    )
    page.wait_for_function("document.getElementById('zoo-count').innerText === '2 of 3 shown'")
    assert "parallel coordinates keep 2" in page.inner_text("#zoo-brushed")
    assert [name for name, _ in shown_traces(page, "val/bleu")] == [f"{ADDITIVE} (2 runs)"]
    page.click("#zoo-unbrush")
    page.wait_for_function("document.getElementById('zoo-count').innerText === '3 of 3 shown'")
    assert page.errors == []


def test_after_a_brush_the_config_diff_compares_two_runs_it_kept(report_page):
    """The diff compared additive-1 with dot-1; the brush keeps additive-1 and additive-2, not dot-1."""
    page = report_page
    page.reload()  # as the report opens: the tests before it chose and brushed on the same page
    page.locator(".zoo-parallel").scroll_into_view_if_needed()  # drawn once in view (WebGL)
    page.wait_for_selector(".zoo-parallel .main-svg")
    diffed = "[...document.querySelectorAll('#zoo-settings .zoo-diff select')].map(s => s.value.split('/').pop())"
    assert page.evaluate(diffed) == ["additive-1", "dot-1"]
    labels = page.evaluate("document.querySelector('.zoo-parallel').data[0].dimensions.map(d => d.label)")
    page.evaluate(
        "([gd, k]) => Plotly.restyle(gd, {[`dimensions[${k}].constraintrange`]: [[0.0015, 0.003]]})",
        [page.query_selector(".zoo-parallel"), labels.index("optim.lr")],
    )
    page.wait_for_function("document.getElementById('zoo-count').innerText === '2 of 3 shown'")
    assert page.evaluate(diffed) == ["additive-1", "additive-2"]
    assert "optim.lr" not in page.inner_text(".zoo-diff-table") and "seed" in page.inner_text(".zoo-diff-table")
    page.click("#zoo-unbrush")
    page.wait_for_function("document.getElementById('zoo-count').innerText === '3 of 3 shown'")
    assert page.errors == []


def download(page, button: str) -> list[dict]:
    with page.expect_download() as done:
        page.click(button)
    return list(csv.DictReader(io.StringIO(Path(done.value.path()).read_text())))


def test_the_leaderboard_and_the_curves_download_as_csv_as_shown(report_page, runs):
    page = report_page
    page.fill("#zoo-filter", "additive")
    board = download(page, "#zoo-board-csv")
    assert [(row["configuration"], row["n"], float(row["bleu mean"])) for row in board] == [(ADDITIVE, "2", 98.0)]
    assert float(board[0]["bleu std"]) == pytest.approx(2.828, abs=1e-3) and board[0]["runs"] == "2 finished"
    curves = download(page, "#zoo-curves-csv")
    assert {row["run"] for row in curves} == {"additive-1", "additive-2"}
    logged = [row for row in curves if row["run"] == "additive-1" and row["curve"] == "train/loss"]
    assert [(float(row["step"]), float(row["value"])) for row in logged] == [
        (step, pytest.approx(training_row(step, 1)["train/loss"])) for step in range(0, 30, 5)
    ]
    page.fill("#zoo-filter", "")
    assert page.errors == []


# --------------------------------------------------------------------------- the dashboard, live
@pytest.fixture
def starting(tmp_path) -> Iterator[Path]:
    """Two running runs, no finished one: attention=dot two epochs in, attention=general at its 6th step of the
    first epoch (its metrics.csv has rows, its summary no step yet); this process holds both locks."""
    watched = tmp_path / "runs"
    make_run(watched / "dot-1", "dot", 1, epochs=2, status="running")
    make_run(watched / "general-1", "dot", 2, epochs=0, status="running")
    started = summary("dot", 2, 0, "running")
    for key in ("epoch", "step"):
        started.pop(key)
    (watched / "general-1" / "summary.json").write_text(json.dumps(started))
    for step in (0, 5):
        append_metrics(watched / "general-1", training_row(step, 2))
    locks = [Lock(watched / name, "run directory") for name in ("dot-1", "general-1")]
    yield watched
    for lock in locks:
        lock.release()


def test_the_dashboard_shows_progress_from_the_first_step_and_keeps_the_section_read_in_place(chromium, starting):
    with serving(starting, refresh=1) as port:
        page = open_page(chromium, f"http://127.0.0.1:{port}/")
        progress = page.eval_on_selector_all("#zoo-runs tbody tr", "rows => rows.map(r => r.cells[4].innerText)")
        assert progress == ["epoch 2 of 3 · step 20", "epoch 1 of 3 · step 5"]
        append_metrics(starting / "general-1", training_row(12, 2))
        page.wait_for_function(
            "[...document.querySelectorAll('#zoo-runs td')].some(c => c.innerText === 'epoch 2 of 3 · step 12')"
        )

        page.evaluate("document.body.append(Object.assign(document.createElement('div'), {style: 'height: 2000px'}))")
        heading = "document.evaluate(\"//h2[text()='Sample outputs']\", document).iterateNext()"  # samples' rows
        page.evaluate(f"window.scrollTo(0, {heading}.getBoundingClientRect().top + window.scrollY - 100)")
        assert page.evaluate(f"{heading}.getBoundingClientRect().top") == pytest.approx(100, abs=1)
        rows = []
        finish(starting / "dot-1", "dot", 1, rows)  # the run finishes: quality and cost, breakdowns drawn above
        for row in rows:
            append_metrics(starting / "dot-1", row)
        (starting / "dot-1" / "summary.json").write_text(json.dumps(summary("dot", 1, 3, "finished")))
        page.wait_for_selector("[data-key=board0-cost] .js-plotly-plot .main-svg")
        page.wait_for_timeout(1500)  # the next updates: nothing more moves
        assert page.evaluate(f"{heading}.getBoundingClientRect().top") == pytest.approx(100, abs=1)
        assert page.errors == []
        page.close()
