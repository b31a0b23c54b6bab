"""Headless Chromium for the tests of the pages zoo writes (the explorer, the report, the dashboard)."""

from __future__ import annotations

# How the project's machines run Chromium headless (no sandbox as root, no background traffic on a closed network).
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def watched_page(browser, address: str, timeout_ms: int = 10_000, load_timeout_ms: int = 30_000):
    """A new page opened at ``address``, its console errors and requests collected in ``page.errors`` and
    ``page.requests``."""
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.set_default_timeout(timeout_ms)
    page.errors, page.requests = [], []
    page.on("console", lambda message: page.errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: page.errors.append(str(error)))
    page.on("request", lambda request: page.requests.append(request.url))
    page.goto(address, timeout=load_timeout_ms)
    return page
