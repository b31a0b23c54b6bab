"""Screenshots of the comparison report and of the live dashboard, for the docs.

    python benchmarks/dashboard_screenshots.py [--out docs] [--work /tmp/zoo-dashboard-shots]

Trains a small real sweep on the synthetic data (the gru and transformer recipes, two seeds each: a few minutes on
two cores), writes its report (``report.png``: ``zoo compare --html``), then starts one more run in the same folder
(a third seed of the gru recipe) and shoots ``zoo dashboard`` on it while it trains (``dashboard.png``), as a reader
uses it: the runs grouped by ``model`` (the leaderboard regrouped in the page) and one run unticked. The
pages are shot in headless Chromium (Playwright driving the system's ``chromium``). Look at the pictures before
committing them.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

from zoo.registry import discovery
from zoo.report.compare import write_report
from zoo.report.serve import make_server

FLAGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
#: Long enough for curves with a shape, short enough for a laptop: 400 sentences, 10 steps an epoch.
TRAINING = [
    "experiment=smoke",
    "dataset.train_size=400",
    "trainer.log_every_n_steps=1",
    "trainer.enable_progress_bar=false",
]

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--out", type=Path, default=Path("docs"))
parser.add_argument("--work", type=Path, default=Path("/tmp/zoo-dashboard-shots"), help="where the runs are trained")
args = parser.parse_args()


def train(*arguments: str, wait: bool = True) -> subprocess.Popen:
    """``zoo train ARGUMENTS`` with :data:`TRAINING`, in the work folder."""
    env = {**os.environ, "WANDB_MODE": "offline"}
    command = [sys.executable, "-m", "zoo.cli", "train", *arguments, *TRAINING]
    process = subprocess.Popen(command, cwd=args.work, env=env)
    if wait and process.wait() != 0:
        raise SystemExit(f"zoo train {' '.join(arguments)} failed")
    return process


sweep = args.work / "sweep"
if not sweep.is_dir():
    args.work.mkdir(parents=True, exist_ok=True)
    train("-m", "model=gru,transformer", "seed=1,2", "trainer.max_epochs=4", f"hydra.sweep.dir={sweep}")
live_run = sweep / "live"
shutil.rmtree(live_run, ignore_errors=True)  # left by an earlier shot
discovery.discover()
report = write_report([sweep], args.work / "report.html")
training = train("model=gru", "seed=3", "trainer.max_epochs=4", f"hydra.run.dir={live_run}", wait=False)
server = make_server([sweep], port=0, refresh=2)
threading.Thread(target=server.serve_forever, daemon=True).start()
try:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=shutil.which("chromium"), args=FLAGS)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.goto(report.as_uri(), timeout=120_000)
        page.wait_for_selector(".zoo-panel .main-svg")
        page.locator(".zoo-parallel").scroll_into_view_if_needed()  # drawn once in view
        page.wait_for_selector(".zoo-parallel .main-svg")
        page.evaluate("window.scrollTo(0, 0)")  # the bar of choices back at the top of the page
        page.screenshot(path=str(args.out / "report.png"), full_page=True)

        while not (live_run / "metrics.csv").is_file() or (live_run / "metrics.csv").read_text().count("\n") < 12:
            time.sleep(0.5)  # the live run's first validation
        page.goto(f"http://127.0.0.1:{server.server_address[1]}/", timeout=120_000)
        page.wait_for_selector(".zoo-panel .main-svg")
        page.select_option("#zoo-by", "model")  # grouped by recipe, and a run left out
        page.click(f"#zoo-runs tr[data-run='{sweep / '3'}'] .zoo-pick")
        time.sleep(2)  # an update: the running run's curves grow in place
        training.send_signal(signal.SIGSTOP)  # held mid-training (its lock too) while the page shows it running
        time.sleep(3)
        page.screenshot(
            path=str(args.out / "dashboard.png"), full_page=True, clip={"x": 0, "y": 0, "width": 1400, "height": 1700}
        )
        training.send_signal(signal.SIGCONT)
        browser.close()
finally:
    training.terminate()
    training.wait()
    server.shutdown()
print(f"wrote {args.out / 'report.png'} and {args.out / 'dashboard.png'}")
