"""``zoo dashboard``: the comparison report served on this machine, redrawn from the run folders on every visit.

Bound to 127.0.0.1 by default and read-only: it answers GET for the page and
nothing else, so a sweep can be watched while it runs without exposing anything
writable. The page reloads itself every ``refresh`` seconds.
"""

from __future__ import annotations

import html
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from string import Template

from zoo.errors import ZooError
from zoo.report.compare import leaderboards
from zoo.report.html import asset, render
from zoo.report.runs import find_runs
from zoo.search.report import search_families


class ReportHandler(BaseHTTPRequestHandler):
    """Serves the freshly drawn report at ``/``; every other path is 404 and every other method 405."""

    def __init__(self, *args, paths: list[str], refresh: int, **kwargs) -> None:
        self.paths = paths
        self.refresh = refresh
        super().__init__(*args, **kwargs)

    def do_GET(self) -> None:  # noqa: N802 (the http.server spelling)
        if self.path.split("?")[0] != "/":
            self.send_error(404, "only / is served")
            return
        try:
            status, page = 200, self.report()
        except ZooError as error:  # a run folder removed or damaged since the start: said on the page, which reloads
            status, page = 500, self.error_page(error)
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(page)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(page)

    def error_page(self, error: ZooError) -> bytes:
        """The page served instead of the report while a run cannot be read (assets/error.html); it reloads too."""
        page = Template(asset("error.html")).substitute(refresh=self.refresh, error=html.escape(str(error)))
        return page.encode()

    def report(self) -> bytes:
        """The report of the runs as they are now."""
        runs = find_runs(self.paths)
        return render(
            leaderboards(runs),
            f"zoo dashboard: {', '.join(self.paths)}",
            Path.cwd() / "dashboard",
            refresh_seconds=self.refresh,
            families=search_families(runs),
        ).encode()

    def do_POST(self) -> None:  # noqa: N802
        self.send_error(405, "the dashboard is read-only")

    do_PUT = do_DELETE = do_PATCH = do_POST

    def log_message(self, format: str, *args) -> None:  # quiet: one line per visit is noise in a terminal
        pass


def make_server(paths: list[str], host: str = "127.0.0.1", port: int = 8765, refresh: int = 5) -> ThreadingHTTPServer:
    """A server for the report of the runs under ``paths`` (``port=0`` picks a free port)."""
    handler = partial(ReportHandler, paths=[str(p) for p in paths], refresh=refresh)
    return ThreadingHTTPServer((host, port), handler)
