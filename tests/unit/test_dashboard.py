"""The report's charts and the live dashboard, checked as a reader sees them in Chromium, on run folders written
in the shape real runs have (summary.json, config.yaml, metrics.csv as Lightning's CSV logger writes it with
zoo's training columns, an attention explorer), so no test trains."""

from __future__ import annotations

import http.client
import json
import re
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from helpers.report_runs import (
    append_metrics,
    chart,
    choose,
    ema,
    finish,
    make_run,
    open_page,
    serving,
    summary,
    traces,
    training_row,
    validation_row,
    write_metrics,
)

from zoo.registry import discovery
from zoo.report.bands import band, error_bars, metric_bounds
from zoo.report.compare import write_report
from zoo.report.live import Watch
from zoo.report.runs import find_runs, read_metrics
from zoo.report.serve import Dashboard
from zoo.run.claim import Lock
from zoo.run.layout import ATTENTION_DIR, EXPLORER_FILE, LOCK_FILE, TRAIN_GRAD_NORM, TRAIN_LOSS, TRAIN_LR

discovery.discover()


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Iterator[Path]:
    """Two seeds of attention=additive (finished) and one of attention=dot, two epochs in of three (running: this
    process holds its lock); beside the watched folder, a file the dashboard must not serve, which a link inside a
    run points to."""
    root = tmp_path_factory.mktemp("dashboard")
    watched = root / "runs"
    make_run(watched / "additive-1", "additive", 1)
    make_run(watched / "additive-2", "additive", 2)
    make_run(watched / "dot-1", "dot", 1, epochs=2, status="running")
    (root / "secret.txt").write_text("not for the dashboard")
    (watched / "additive-1" / "escape.txt").symlink_to(root / "secret.txt")
    lock = Lock(watched / "dot-1", "run directory")
    yield watched
    lock.release()


# --------------------------------------------------------------------------- ranges, bands, reading
def test_bands_stay_within_the_declared_range_else_the_observed_sign():
    assert metric_bounds("val/bleu", [-5.0, 3.0]) == (0.0, 100.0)  # declared by the metric, whatever was seen
    assert metric_bounds("chrf", []) == (0.0, 100.0)
    assert metric_bounds(TRAIN_LOSS, [0.2, 6.0]) == (0.0, None)
    assert metric_bounds("val/delta", [-2.0, -1.0]) == (None, 0.0)
    assert metric_bounds("val/delta", [-2.0, 1.0]) == (None, None)
    assert band([1.0, 99.0], [3.0, 3.0], (0.0, 100.0)) == ([0.0, 96.0], [4.0, 100.0])
    bars = error_bars([1.0, 50.0], [3.0, 3.0], (0.0, 100.0))
    assert bars["arrayminus"] == [1.0, 3.0] and bars["array"] == [3.0, 3.0]


def test_metrics_csv_is_read_column_by_column_leaving_a_half_written_line(tmp_path):
    write_metrics(tmp_path, [training_row(0, 1), validation_row("dot", 1, 0)])
    with (tmp_path / "metrics.csv").open("a") as file:
        file.write("1,12,,,0.5,2.")  # Lightning is writing this line
    curves = read_metrics(tmp_path)
    assert set(curves) == {TRAIN_LOSS, TRAIN_LR, TRAIN_GRAD_NORM, "val/bleu", "val/loss"}
    assert curves[TRAIN_LOSS] == [(0.0, 6.01)] and curves["val/bleu"] == [(9.0, 1.0)]


def test_watch_sends_what_came_after_the_cursor_and_a_rewritten_run_whole(tmp_path):
    make_run(tmp_path / "r", "dot", 1, epochs=1, status="running")
    lock = Lock(tmp_path / "r", "run directory")  # the run's process, alive
    watch = Watch()
    watch.update(find_runs([tmp_path]), {})
    first = watch.state()
    key = str(tmp_path / "r")
    assert first["whole"] == [key] and set(first["new"][key]["settings"]) >= {"attention", "optim.lr", "seed"}
    assert len(first["points"][key][TRAIN_LOSS]) == 2 and first["runs"][0]["status"] == "running"
    assert first["bounds"]["val/bleu"] == [0.0, 100.0] and first["bounds"][TRAIN_LOSS] == [0.0, None]

    append_metrics(tmp_path / "r", training_row(10, 1))
    watch.update(find_runs([tmp_path]), {})
    later = watch.state(first["cursor"])
    assert later["new"] == {} and later["whole"] == []
    assert later["points"] == {
        key: {TRAIN_LOSS: [[10.0, 3.01]], TRAIN_LR: [[10.0, 0.002]], TRAIN_GRAD_NORM: [[10.0, 0.6666667]]}
    }

    write_metrics(tmp_path / "r", [training_row(0, 1)])  # a resumed run kept fewer rows than the page holds
    watch.update(find_runs([tmp_path]), {})
    again = watch.state(later["cursor"])
    assert again["whole"] == [key] and again["points"][key][TRAIN_LOSS] == [[0.0, 6.01]]
    assert again["points"][key]["val/bleu"] == [[10, 1.0]]  # only the summary holds it now
    lock.release()


def starting_run(folder: Path, steps: list[int]) -> None:
    """A run of 3 epochs before its first validation: its summary as written at the start (no epoch, no step), its
    config and the training rows metrics.csv has at ``steps``."""
    make_run(folder, "dot", 1, epochs=0, status="running")
    started = {k: v for k, v in summary("dot", 1, 0, "running").items() if k not in ("epoch", "step", "max_epochs")}
    (folder / "summary.json").write_text(json.dumps(started))
    config = yaml.safe_load((folder / "config.yaml").read_text())
    (folder / "config.yaml").write_text(yaml.safe_dump({**config, "trainer": {"max_epochs": 3}}))
    write_metrics(folder, [training_row(step, 1) for step in steps])


def test_a_running_run_shows_its_progress_from_its_first_logged_step(tmp_path):
    starting_run(tmp_path / "r", [0, 5])
    lock = Lock(tmp_path / "r", "run directory")
    watch = Watch()
    watch.update(find_runs([tmp_path]), {})
    (run,) = watch.state()["runs"]
    assert (run["status"], run["epoch"], run["step"], run["max_epochs"]) == ("running", 0, 5, 3)
    append_metrics(tmp_path / "r", training_row(12, 1))  # into its second epoch
    watch.update(find_runs([tmp_path]), {})
    (run,) = watch.state(1)["runs"]
    assert (run["epoch"], run["step"]) == (1, 12)
    lock.release()


# --------------------------------------------------------------------------- in Chromium (conftest's `chromium`)


@pytest.mark.slow
def test_report_offline_draws_any_logged_curve_smoothed_on_a_log_axis_and_the_settings(chromium, runs, tmp_path):
    page = open_page(chromium, write_report([runs], tmp_path / "report.html").as_uri())
    logged = {TRAIN_LOSS, TRAIN_LR, TRAIN_GRAD_NORM, "val/bleu", "val/loss", "test/bleu"}  # every metrics.csv column
    selects = page.eval_on_selector_all(
        ".zoo-panel select", "ss => ss.map(s => [s.value, [...s.options].map(o => o.value)])"
    )
    assert [value for value, _ in selects] == ["val/bleu", TRAIN_LOSS, TRAIN_LR, TRAIN_GRAD_NORM]
    assert all(set(options) == logged for _, options in selects)

    band = next(t for t in traces(page, "val/bleu") if t["fill"] == "toself")  # seeds 1 and 2 of additive
    assert min(band["y"]) == 0.0 and max(band["y"]) == 100.0  # 1 - 1.41 and 98 + 2.83, clipped to BLEU's range

    choose(page, "#zoo-lines", "runs")
    choose(page, "#zoo-smoothing", "0.6")
    drawn = {(t["run"], t["shown"]): t for t in traces(page, TRAIN_LOSS)}  # per run: the values faint, smoothed
    raw = [point[TRAIN_LOSS] for point in (training_row(step, 1) for step in range(0, 30, 5))]
    first = str(runs / "additive-1")
    assert drawn[first, False]["y"] == pytest.approx(raw) and drawn[first, False]["opacity"] < 1
    assert drawn[first, True]["y"] == pytest.approx(ema(raw, 0.6))
    page.evaluate(f"{chart(TRAIN_LOSS)}.parentNode.querySelector('.zoo-log').click()")
    assert page.evaluate(f"{chart(TRAIN_LOSS)}.layout.yaxis.type") == "log"
    choose(page, "#zoo-smoothing", "0")
    choose(page, "#zoo-x", "seconds")  # the validations' clock: steps 10 and 20 at 4 s and 8 s
    dot = next(t for t in traces(page, "val/bleu") if t["run"] == str(runs / "dot-1"))
    assert dot["x"] == pytest.approx([3.6, 7.6])
    page.select_option(".zoo-panel:nth-child(4) select", "val/loss")  # the gradient norm's chart, now val/loss
    assert traces(page, "val/loss")[0]["y"] == [5.0, 4.0, 3.0]

    titles = page.evaluate(
        "[...document.querySelectorAll('.js-plotly-plot')].filter(gd => gd.data[0]?.type !== 'parcoords').map(gd =>"
        " Object.keys(gd._fullLayout).filter(k => /^[xy]axis\\d*$/.test(k)).map(k => gd._fullLayout[k].title.text))"
    )
    assert len(titles) == 6 and all(all(text for text in axes) and axes for axes in titles)  # 4 curves, cost, bars

    page.locator(".zoo-parallel").scroll_into_view_if_needed()  # drawn once in view (WebGL)
    page.wait_for_selector(".zoo-parallel .main-svg")
    dimensions = page.evaluate("document.querySelector('.zoo-parallel').data[0].dimensions.map(d => d.label)")
    assert dimensions == ["attention", "optim.lr", "validation bleu"]  # not seed, paths, nor another plugin's field
    choose(page, ".zoo-diff label:nth-child(1) select", str(runs / "additive-1"))
    choose(page, ".zoo-diff label:nth-child(2) select", str(runs / "additive-2"))
    rows = page.eval_on_selector_all("table.zoo-diff tbody tr", "rows => rows.map(r => r.innerText.split('\\t'))")
    assert rows == [["seed", "1", "2"]]

    assert page.is_hidden("#zoo-live") and page.errors == []
    assert [url for url in page.requests if not url.startswith(("file:", "data:"))] == []  # it asks for nothing
    page.close()


@pytest.fixture(scope="module")
def dashboard(runs):
    """The dashboard (``zoo dashboard RUNS --refresh 1``): its address."""
    with serving(runs, refresh=1) as port:
        yield f"http://127.0.0.1:{port}/"


@pytest.fixture(scope="module")
def live_page(chromium, dashboard):
    """The dashboard's page, open once for the tests that read it."""
    page = open_page(chromium, dashboard)
    yield page
    page.close()


def answer(address: str, method: str = "GET") -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(urllib.request.Request(address, method=method), timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, b""


@pytest.mark.slow
def test_dashboard_updates_a_chart_in_place_keeping_its_zoom_then_shows_the_run_finished(live_page, runs):
    page = live_page
    dot = str(runs / "dot-1")
    choose(page, "#zoo-lines", "runs")
    page.evaluate(
        f"(() => {{ const gd = {chart(TRAIN_LOSS)}; gd.dataset.mark = 'zoomed';"
        " return Plotly.relayout(gd, {'xaxis.range': [0, 40], 'yaxis.range': [0, 7]}); })()"
    )
    before = len(next(t for t in traces(page, TRAIN_LOSS) if t["run"] == dot)["x"])

    append_metrics(runs / "dot-1", training_row(20, 1))  # the running run logs a step
    zoomed = "document.querySelector('[data-mark=zoomed]')"
    page.wait_for_function(f"{zoomed}.data.find(t => t.legendgroup === {json.dumps(dot)}).x.length > {before}")
    view = f"[{zoomed}.layout.xaxis.range, {zoomed}.layout.yaxis.range, {zoomed} === {chart(TRAIN_LOSS)}]"
    assert page.evaluate(view) == [[0, 40], [0, 7], True]  # the same element, more points, the reader's zoom

    rows = []
    finish(runs / "dot-1", "dot", 1, rows)
    for row in rows:
        append_metrics(runs / "dot-1", row)
    (runs / "dot-1" / "summary.json").write_text(json.dumps(summary("dot", 1, 3, "finished")))
    page.wait_for_selector(f"#zoo-runs tr[data-status=finished][data-run={json.dumps(dot)}]")
    page.wait_for_function(  # the leaderboard, drawn on the server, swapped in
        "[...document.querySelectorAll('table.leaderboard tbody tr')].every(r => r.innerText.includes('finished'))"
    )
    assert page.evaluate(view) == [[0, 40], [0, 7], True]
    assert page.is_visible("#zoo-live") and page.errors == []


@pytest.mark.slow
def test_every_link_in_the_dashboard_answers(live_page):
    page = live_page
    page.wait_for_selector("table.pictures a")
    addresses = page.evaluate(
        "[...document.querySelectorAll('a[href], img[src], script[src], link[href]')]"
        ".map(e => e.href || e.src).filter(a => a.startsWith('http'))"
    )
    assert any(a.endswith(f"/{EXPLORER_FILE}") for a in addresses) and any("/assets/plotly-" in a for a in addresses)
    assert {a: answer(a)[0] for a in addresses} == {a: 200 for a in addresses}
    assert page.errors == []


def test_dashboard_serves_only_the_watched_folder_and_only_reads(dashboard, runs):
    status, body = answer(f"{dashboard}additive-1/summary.json")
    assert status == 200 and json.loads(body)["seed"] == 1
    for outside in ("../secret.txt", "%2e%2e/secret.txt", "additive-1/escape.txt"):  # up, encoded, a link out
        assert answer(f"{dashboard}{outside}")[0] in (403, 404), outside
    assert answer(f"{dashboard}%2Fetc%2Fpasswd")[0] in (403, 404) and answer(f"{dashboard}no/such/file")[0] == 404
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        assert answer(f"{dashboard}additive-1/summary.json", method)[0] == 405, method
    assert (runs / "additive-1" / "summary.json").is_file()
    assert answer(f"{dashboard}api/state?since=soon")[0] == 400
    status, body = answer(f"{dashboard}api/state?since=0")
    state = json.loads(body)
    assert status == 200 and set(state) >= {"server", "cursor", "runs", "new", "points", "bounds", "sections"}


@pytest.mark.slow
def test_no_chart_offers_to_share_or_upload_it(live_page):
    """Plotly's logo and its Chart Studio buttons (send to the cloud, edit there) are on no chart of the page, even
    where Plotly's defaults would show them."""
    chart_studio = "{showSendToCloud: %s, showEditInChartStudio: %s, displaylogo: %s, plotlyServerURL: %s}"
    live_page.evaluate(f"Plotly.setPlotConfig({chart_studio % ('true', 'true', 'true', repr('https://plot.ly'))})")
    choose(live_page, "#zoo-smoothing", "0.3")  # every curve drawn again
    contexts = live_page.evaluate(
        "[...document.querySelectorAll('.js-plotly-plot')].map(gd => gd._context).map(c => [c.displaylogo,"
        " !!c.showSendToCloud, !!c.showEditInChartStudio, c.plotlyServerURL ?? ''])"
    )
    buttons = live_page.eval_on_selector_all(".modebar-btn", "bs => bs.map(b => b.getAttribute('data-title'))")
    live_page.evaluate(f"Plotly.setPlotConfig({chart_studio % ('false', 'false', 'false', repr(''))})")
    choose(live_page, "#zoo-smoothing", "0")
    assert contexts and all(context == [False, False, False, ""] for context in contexts)
    assert buttons and [t for t in buttons if re.search("cloud|studio|plotly|share", t, re.I)] == []


# --------------------------------------------------------------------------- what it answers, and to whom
def ask(port: int, path: str, host: str | None = None) -> tuple[int, bytes]:
    """``GET path`` as written (nothing quoted or normalised), addressed to ``host`` (else 127.0.0.1:PORT)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.putrequest("GET", path, skip_host=True)
        connection.putheader("Host", host or f"127.0.0.1:{port}")
        connection.endheaders()
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def test_dashboard_of_a_home_folder_serves_its_runs_files_and_nothing_else(tmp_path):
    """``zoo dashboard ~``: a run's record, curves, config and pictures; never a dotfile, a key, a checkpoint, a
    log or any other file, nor a run's file that is a link out of the run."""
    home = tmp_path / "home"
    make_run(home / "runs" / "r", "dot", 1)
    private = [".netrc", ".ssh/id_rsa", "notes.txt", "runs/notes.txt", "runs/r/.hydra/config.yaml", "runs/r/.zoo.lock"]
    private += ["runs/r/train.log", "runs/r/checkpoints/last.ckpt", "runs/r/plugins/mine/model.py"]
    for name in private:
        (home / name).parent.mkdir(parents=True, exist_ok=True)
        (home / name).write_text("PRIVATE")
    (home / "runs" / "r" / "provenance.json").symlink_to(home / ".netrc")  # a run file's name, linking out
    pictures = f"runs/r/{ATTENTION_DIR}/the_dog_sees_the_cat"
    served = ["runs/r/summary.json", "runs/r/metrics.csv", "runs/r/config.yaml", f"{pictures}/{EXPLORER_FILE}"]
    served.append(f"{pictures}/cross_layer1_head1.png")
    with serving(home) as port:
        assert {name: ask(port, f"/{name}")[0] for name in served} == dict.fromkeys(served, 200)
        refused = {name: ask(port, f"/{name}") for name in [*private, "runs/r/provenance.json", "runs/r/", pictures]}
    assert {name: status for name, (status, _) in refused.items()} == {
        **dict.fromkeys(refused, 404),
        "runs/r/provenance.json": 403,
    }
    assert [name for name, (_, body) in refused.items() if b"PRIVATE" in body] == []


def test_a_run_folder_that_links_out_of_the_watched_folder_is_not_served(tmp_path):
    make_run(tmp_path / "elsewhere" / "r", "dot", 1)
    (tmp_path / "watched").mkdir()
    (tmp_path / "watched" / "r").symlink_to(tmp_path / "elsewhere" / "r")
    make_run(tmp_path / "watched" / "mine", "dot", 1)
    with serving(tmp_path / "watched") as port:
        assert ask(port, "/mine/summary.json")[0] == 200
        assert ask(port, "/r/summary.json")[0] == 404


@pytest.mark.parametrize(("host", "warned"), [("0.0.0.0", True), ("127.0.0.1", False)])
def test_a_dashboard_listening_beyond_this_machine_says_so(host, warned, tmp_path, monkeypatch, capsys):
    from zoo.cli import dashboard

    class Stopped:
        server_address = (host, 8765)

        def serve_forever(self):
            raise KeyboardInterrupt

        def server_close(self):
            pass

    monkeypatch.setattr("zoo.report.serve.make_server", lambda *a: Stopped())
    dashboard.run([str(tmp_path), "--host", host], "")
    said = capsys.readouterr().err
    assert ("zoo: warning: --host 0.0.0.0 serves these runs" in said) is warned


def test_dashboard_refuses_a_request_addressed_to_another_host(tmp_path):
    """A page whose DNS name an attacker rebound to 127.0.0.1 sends its own name as Host: refused (403)."""
    make_run(tmp_path / "r", "dot", 1)
    with serving(tmp_path) as port:
        for host in ("attacker.example.com", f"attacker.example.com:{port}", f"localhost:{port + 1}", "127.0.0.2"):
            status, body = ask(port, "/r/summary.json", host)
            assert status == 403 and b"localhost" in body, host
        for host in (f"localhost:{port}", "LOCALHOST", f"[::1]:{port}", "127.0.0.1"):
            assert ask(port, "/r/summary.json", host)[0] == 200, host
    named, everywhere = Dashboard([str(tmp_path)], 5, "gpu-box"), Dashboard([str(tmp_path)], 5, "0.0.0.0")
    assert named.addressed("gpu-box:8765", 8765) and not named.addressed("10.1.2.3:8765", 8765)
    assert everywhere.addressed("10.1.2.3:8765", 8765) and not everywhere.addressed("attacker.example.com", 8765)


def test_dashboard_answers_every_bad_request_with_a_4xx_and_no_traceback(tmp_path, capsys):
    make_run(tmp_path / "r", "dot", 1)
    (tmp_path / "r" / "provenance.json").symlink_to("provenance.json")  # a link to itself
    (tmp_path / "loop").symlink_to("loop")
    long = "x" * 300
    bad = {
        "/api/state?since=%C2%B2": 400,  # a digit, but not 0-9
        f"/api/state?since={'9' * 5000}": 400,
        "/api/state?since=-1": 400,
        f"/{long}": 404,
        f"/r/{long}/summary.json": 404,
        f"/r/{ATTENTION_DIR}/{long}/{EXPLORER_FILE}": 404,
        "/r/provenance.json": 404,
        "/loop/summary.json": 404,
        "/r/%00/summary.json": 404,
        "/r/summary.json%00": 404,
        "/%C3%28": 404,
        "/r/summary.json/": 404,
    }
    with serving(tmp_path) as port:
        assert {path: ask(port, path)[0] for path in bad} == bad
        assert ask(port, "/r/summary.json")[0] == 200
    assert capsys.readouterr().err == ""


def test_a_running_run_no_process_holds_the_lock_of_is_shown_killed(tmp_path):
    """SIGKILL leaves the summary saying running and the lock file, which then locks nothing."""
    make_run(tmp_path / "r", "dot", 1, epochs=1, status="running")
    lock = Lock(tmp_path / "r", "run directory")
    assert [run.status for run in find_runs([tmp_path])] == ["running"]
    lock.release()
    (tmp_path / "r" / LOCK_FILE).write_text(json.dumps({"pid": 1, "host": "here", "started": "before"}))
    assert [run.status for run in find_runs([tmp_path])] == ["killed"]
    with serving(tmp_path) as port:
        status, body = ask(port, "/api/state?since=0")
    assert status == 200 and [run["status"] for run in json.loads(body)["runs"]] == ["killed"]
