"""Screenshots of the documentation site for the README and the docs: its front page, one plugin page and the
configuration reference.

    python benchmarks/site_screenshots.py            # builds the site, writes docs/site_{front,plugins,config}.png

Builds the site (``mkdocs build --strict``) into a temporary folder, serves it on a free local port (as
``mkdocs serve`` would, so its search works) and shoots the top of each page in headless Chromium (Playwright
driving the system's ``chromium``). Look at the pictures before committing them.
"""

from __future__ import annotations

import argparse
import functools
import shutil
import subprocess
import sys
import tempfile
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[1]
FLAGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
#: picture -> (page of the built site, the element to scroll to the top; None: the page's top)
SHOTS = {
    "site_front.png": ("", None),
    "site_plugins.png": ("plugins/encoder/", None),
    "site_config.png": ("reference/configuration/", "#kind-encoder"),
}


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args) -> None:  # one line per request would bury the script's own
        pass


parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--out", type=Path, default=ROOT / "docs", help="the folder the pictures go into")
parser.add_argument("--width", type=int, default=1440)
parser.add_argument("--height", type=int, default=860)
args = parser.parse_args()

with tempfile.TemporaryDirectory() as folder, sync_playwright() as playwright:
    site = Path(folder) / "site"
    subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(site)], cwd=ROOT, check=True)
    handler = functools.partial(QuietHandler, directory=str(site))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    address = f"http://127.0.0.1:{server.server_address[1]}/"
    browser = playwright.chromium.launch(executable_path=shutil.which("chromium"), args=FLAGS)
    page = browser.new_page(viewport={"width": args.width, "height": args.height})
    for name, (path, target) in SHOTS.items():
        page.goto(address + path + (target or ""))
        page.wait_for_timeout(500)
        page.screenshot(path=str(args.out / name))
        print(f"wrote {args.out / name}")
    browser.close()
    server.shutdown()
