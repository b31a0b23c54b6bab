"""``zoo dashboard``: the comparison report served on this machine, kept current while the runs train.

The page is served once (``GET /``). Its script then asks every ``refresh`` seconds for what changed
(``GET /api/state?since=N``, :class:`zoo.report.live.Watch`: new points, new runs, every run's status) and
updates the runs, curves and settings in place, so the reader's zoom, scroll and choices stay. When a run
appears, finishes or fails, it also fetches the sections drawn here (``GET /api/sections``: leaderboard,
quality and cost, breakdowns, samples, attention) and swaps them in. Plotly's script is served beside the page
(``/assets/plotly-VERSION.js``, cached by the browser) rather than inlined in it.

Read-only: bound to 127.0.0.1 by default, it answers GET and HEAD, nothing else (405), and serves no file but
those under the watched folders, which is where everything the page links to lies (explorer pages, pictures):
a path that resolves outside them (``..``, a symbolic link, an absolute path) is refused (403).
"""

from __future__ import annotations

import gzip
import hashlib
import html
import json
import mimetypes
import os
import secrets
import shutil
import threading
from functools import cache, partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from string import Template
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import plotly
from plotly.offline import get_plotlyjs

from zoo.errors import ZooError
from zoo.report.compare import leaderboards
from zoo.report.html import asset, render
from zoo.report.html import sections as drawn_sections
from zoo.report.live import Watch, run_labels
from zoo.report.runs import Run, find_runs
from zoo.search.report import search_families
from zoo.training.layout import ATTENTION_DIR, SUMMARY_FILE

#: Where the page loads Plotly from: a new Plotly is a new address, so the browser may keep this one for good.
PLOTLY_URL = f"/assets/plotly-{plotly.__version__}.js"
STATE_URL, SECTIONS_URL = "/api/state", "/api/sections"
#: Answers at least this long are sent gzipped to a browser that takes it (Plotly's 4.8 MB shrinks to 1.4 MB).
GZIP_FROM = 2048


class Refused(Exception):
    """A request for something the dashboard does not serve: its HTTP status and why."""

    def __init__(self, status: int, why: str) -> None:
        super().__init__(why)
        self.status = status


class Dashboard:
    """The watched folders and the page made of their runs; one reading of the runs at a time."""

    def __init__(self, paths: list[str], refresh: int) -> None:
        self.paths = paths
        self.refresh = refresh
        self.folders = [Path(path).resolve() for path in paths]
        #: The folder holding every watched one: the page's links are paths below it, and so are the addresses.
        self.root = Path(os.path.commonpath([f if f.is_dir() else f.parent for f in self.folders]))
        #: Changes when the dashboard restarts: a page from before holds readings this one never made.
        self.server = secrets.token_hex(4)
        self.watch = Watch()
        self.lock = threading.Lock()

    def _read(self) -> tuple[list[Run], list]:
        """The runs and their leaderboards as they are now; the watch takes in what changed."""
        runs = find_runs(self.paths)
        boards = leaderboards(runs)
        self.watch.update(runs, run_labels(boards, runs))
        return runs, boards

    def state(self, since: int) -> dict[str, Any]:
        """What a page holding every reading up to ``since`` lacks, and the mark of the sections drawn here."""
        with self.lock:
            runs, _ = self._read()
            return {"server": self.server, "sections": _sections_mark(runs), **self.watch.state(since)}

    def page(self) -> str:
        """The page as the runs are now, with every point read so far and the terms of its updates."""
        with self.lock:
            runs, boards = self._read()
            charts = {"server": self.server, "sections": _sections_mark(runs), **self.watch.state()}
            return render(
                boards,
                f"zoo dashboard: {', '.join(self.paths)}",
                self.root / "index.html",
                search_families(runs),
                charts=charts,
                live={"interval": self.refresh, "state": STATE_URL, "sections": SECTIONS_URL},
                plotly_url=PLOTLY_URL,
            )

    def sections(self) -> dict[str, str]:
        """The sections drawn here, as they are now, with their mark."""
        with self.lock:
            runs, boards = self._read()
            top, bottom = drawn_sections(boards, self.root / "index.html", search_families(runs))
            return {"mark": _sections_mark(runs), "top": top, "bottom": bottom}

    def run_file(self, address: str) -> Path:
        """The file under a watched folder that ``address`` names (a path below :attr:`root`, as the page links)."""
        try:
            target = (self.root / unquote(address).lstrip("/")).resolve()
        except (OSError, ValueError) as error:
            raise Refused(404, f"no such file ({error})") from None
        if not any(target.is_relative_to(folder) for folder in self.folders):
            raise Refused(403, "only files under the watched folders are served")
        if not target.is_file():
            raise Refused(404, "no such file under the watched folders")
        return target


def _sections_mark(runs: list[Run]) -> str:
    """Changes when a section drawn on the server would: a run appears or goes, changes status, or (once it
    stopped) its record or its attention pictures change. A running run's progress is the charts' business."""
    parts = []
    for run in runs:
        parts.append([str(run.path), run.status])
        if run.status != "running":
            parts[-1] += [_mtime(run.path / SUMMARY_FILE), _mtime(run.path / ATTENTION_DIR)]
    return hashlib.sha1(json.dumps(parts).encode()).hexdigest()[:12]


def _mtime(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return 0


@cache
def _plotly() -> bytes:
    return get_plotlyjs().encode()


class DashboardHandler(BaseHTTPRequestHandler):
    """GET and HEAD of the page, its two JSON answers, Plotly, and run files; every other method is 405."""

    def __init__(self, *args, dashboard: Dashboard, **kwargs) -> None:
        self.dashboard = dashboard
        super().__init__(*args, **kwargs)

    def do_GET(self) -> None:  # noqa: N802 (the http.server spelling)
        address = urlsplit(self.path)
        try:
            if address.path == "/":
                self.page()
            elif address.path == STATE_URL:
                since = parse_qs(address.query).get("since", ["0"])[0]
                if not since.isdigit():
                    raise Refused(400, "since= takes the cursor of the previous answer (0: everything)")
                self.json(self.dashboard.state(int(since)))
            elif address.path == SECTIONS_URL:
                self.json(self.dashboard.sections())
            elif address.path == PLOTLY_URL:
                cache = "public, max-age=31536000, immutable"
                self.reply(_plotly(), "text/javascript; charset=utf-8", cache, packed=_plotly_gzipped())
            else:
                self.file(self.dashboard.run_file(address.path))
        except Refused as refusal:
            self.send_error(refusal.status, str(refusal))
        except ZooError as error:  # a watched folder removed or damaged since the start: said, and asked again later
            if address.path == "/":
                page = Template(asset("error.html")).substitute(
                    refresh=self.dashboard.refresh, error=html.escape(str(error))
                )
                self.reply(page.encode(), "text/html; charset=utf-8", status=500)
            else:
                self.json({"error": str(error)}, status=500)

    head_only = False  # a HEAD request: the headers of the GET, no body

    def do_HEAD(self) -> None:  # noqa: N802
        self.head_only = True
        self.do_GET()

    def do_POST(self) -> None:  # noqa: N802
        self.send_response(405, "the dashboard is read-only")
        self.send_header("Allow", "GET, HEAD")
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_POST

    def page(self) -> None:
        self.reply(self.dashboard.page().encode(), "text/html; charset=utf-8")

    def json(self, data: dict, status: int = 200) -> None:
        body = json.dumps(data, separators=(",", ":"), allow_nan=False).encode()
        self.reply(body, "application/json", status=status)

    def file(self, path: Path) -> None:
        kind = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        size = path.stat().st_size
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(size))
        self.send_header("Cache-Control", "no-cache")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.end_headers()
        if not self.head_only:
            with path.open("rb") as source:
                shutil.copyfileobj(source, self.wfile)

    def reply(
        self, body: bytes, kind: str, cache: str = "no-store", status: int = 200, packed: bytes | None = None
    ) -> None:
        """``body`` (gzipped, or its ``packed`` form, where it is long and the browser takes gzip)."""
        gzipped = len(body) >= GZIP_FROM and "gzip" in self.headers.get("Accept-Encoding", "")
        if gzipped:
            body = packed or _gzip(body)
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", cache)
        if gzipped:
            self.send_header("Content-Encoding", "gzip")
        self.end_headers()
        if not self.head_only:
            self.wfile.write(body)

    def log_message(self, format: str, *args) -> None:  # quiet: a line per request is noise in a terminal
        pass


def _gzip(body: bytes) -> bytes:
    return gzip.compress(body, compresslevel=5, mtime=0)


@cache
def _plotly_gzipped() -> bytes:
    return _gzip(_plotly())


def make_server(paths: list[str], host: str = "127.0.0.1", port: int = 8765, refresh: int = 5) -> ThreadingHTTPServer:
    """A server for the dashboard of the runs under ``paths`` (``port=0`` picks a free port)."""
    dashboard = Dashboard([str(p) for p in paths], refresh)
    return ThreadingHTTPServer((host, port), partial(DashboardHandler, dashboard=dashboard))
