"""A screenshot of one section of the comparison report of some run folders, for the docs.

    python benchmarks/report_screenshot.py RUNS... --section "Score against compute" --out docs/compute_report.png

Writes ``zoo compare RUNS --html`` to a temporary page, opens it in headless Chromium (Playwright driving the
system's ``chromium``) and shoots from the section's heading to the next one. Look at the picture before
committing it.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

from zoo.registry import discovery
from zoo.report.compare import write_report

FLAGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("runs", nargs="+", type=Path)
parser.add_argument("--section", required=True, help="the heading (h2) the picture starts at")
parser.add_argument("--out", type=Path, required=True)
parser.add_argument("--width", type=int, default=1400)
args = parser.parse_args()

discovery.discover()
with tempfile.TemporaryDirectory() as folder, sync_playwright() as playwright:
    report = write_report(args.runs, Path(folder) / "report.html")
    browser = playwright.chromium.launch(executable_path=shutil.which("chromium"), args=FLAGS)
    page = browser.new_page(viewport={"width": args.width, "height": 900})
    page.goto(report.as_uri(), timeout=120_000)
    heading = page.locator("h2", has_text=args.section).first
    heading.scroll_into_view_if_needed()
    page.wait_for_timeout(1500)  # Plotly draws the figure once in view
    top = heading.bounding_box()
    following = page.locator("h2").evaluate_all(
        "(all, start) => all.map(h => h.getBoundingClientRect().top + window.scrollY).filter(y => y > start)",
        top["y"] + page.evaluate("window.scrollY") + 1,
    )
    start = top["y"] + page.evaluate("window.scrollY")
    end = min(following) if following else start + 900
    page.screenshot(
        path=str(args.out), full_page=True, clip={"x": 0, "y": start - 8, "width": args.width, "height": end - start}
    )
    browser.close()
print(f"wrote {args.out}")
