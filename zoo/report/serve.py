"""``zoo dashboard``: the comparison report served on this machine, kept current while the runs train.

The page is served once (``GET /``). Its script then asks every ``refresh`` seconds for what changed
(``GET /api/state?since=N``, :class:`zoo.report.live.Watch`: new points, new runs, every run's status) and
updates the runs, curves and settings in place, so the reader's zoom, scroll and choices stay. When a run
appears, finishes or fails, it also fetches the sections drawn here (``GET /api/sections``: leaderboard,
quality and cost, breakdowns, samples, attention) and replaces those that changed, the section being read kept
where it is on the screen. Plotly's script is served beside the page
(``/assets/plotly-VERSION.js``, cached by the browser) rather than inlined in it.

Read-only and for this machine: bound to 127.0.0.1 by default, it answers GET and HEAD, nothing else (405), and
only requests addressed to this machine by name (``Host``: 127.0.0.1, localhost, [::1], or the ``--host`` it
listens on), so a web page whose DNS name was rebound to 127.0.0.1 cannot read it (403). Of the watched folders it
serves only the files of their runs that :data:`RUN_FILES` names, which is all the page links to (explorer pages,
pictures): never a hidden file, a checkpoint, a log, nor a file a symbolic link leads to outside its run. Every
request gets an answer: a path, query or ``Host`` it cannot take is a 4xx, never a dropped connection.
"""

from __future__ import annotations

import gzip
import hashlib
import html
import ipaddress
import json
import mimetypes
import os
import re
import secrets
import shutil
import socket
import threading
import traceback
from functools import cache, partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path, PurePosixPath
from string import Template
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import plotly
from plotly.offline import get_plotlyjs

from zoo.errors import ZooError, one_line_reason, verbose
from zoo.report.compare import leaderboards
from zoo.report.html import asset, render
from zoo.report.html import sections as drawn_sections
from zoo.report.live import Watch, boards_of, colours_of, run_boards, run_labels
from zoo.report.runs import Run, find_runs
from zoo.run.layout import (
    ATTENTION_DIR,
    CONFIG_FILE,
    EXPLORER_FILE,
    HYPOTHESES_FILE,
    METRICS_FILE,
    PROVENANCE_FILE,
    SAMPLES_FILE,
    SUMMARY_FILE,
    TEST_ITEMS_FILE,
)
from zoo.search.report import Family, search_families

#: Where the page loads Plotly from: a new Plotly is a new address, so the browser may keep this one for good.
PLOTLY_URL = f"/assets/plotly-{plotly.__version__}.js"
STATE_URL, SECTIONS_URL = "/api/state", "/api/sections"
#: Answers at least this long are sent gzipped to a browser that takes it (Plotly's 4.8 MB shrinks to 1.4 MB).
GZIP_FROM = 2048
#: The files of a run that are served, by their path in its folder (``*``: any one name): its record, curves,
#: config, provenance and test outputs, and the attention pictures and explorer pages the page links to.
RUN_FILES = (
    SUMMARY_FILE,
    METRICS_FILE,
    CONFIG_FILE,
    PROVENANCE_FILE,
    TEST_ITEMS_FILE,
    HYPOTHESES_FILE,
    SAMPLES_FILE,
    f"{ATTENTION_DIR}/*/{EXPLORER_FILE}",
    f"{ATTENTION_DIR}/*/*.png",
)
NOT_SERVED = f"not a file the dashboard serves: it serves the runs' {', '.join(RUN_FILES)}"
MISSING = "no such file in the watched runs"
#: The names this machine answers to wherever it listens; and the listening addresses that mean every interface.
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
EVERYWHERE = frozenset({"", "0.0.0.0", "::"})
#: A ``Host`` header: a name or an IPv4 address, or an IPv6 address in brackets; then perhaps a port.
HOST = re.compile(r"(\[[0-9a-fA-F:.]+\]|[^\[\]:@/]+)(?::([0-9]{1,5}))?")


class Refused(Exception):
    """A request for something the dashboard does not serve: its HTTP status and why."""

    def __init__(self, status: int, why: str) -> None:
        super().__init__(why)
        self.status = status


class Dashboard:
    """The watched folders and the page made of their runs; one reading of the runs at a time."""

    def __init__(self, paths: list[str], refresh: int, host: str = "127.0.0.1") -> None:
        self.paths = paths
        self.refresh = refresh
        #: The names a request may address this machine by (``Host``); listening on every interface, also its
        #: name and any IP address (what a rebound DNS name sends is a name, never an address).
        self.everywhere = host in EVERYWHERE
        self.hosts = LOOPBACK | {socket.gethostname().lower() if self.everywhere else host.strip("[]").lower()}
        self.folders = [Path(path).resolve() for path in paths]
        #: The folder holding every watched one: the page's links are paths below it, and so are the addresses.
        self.root = Path(os.path.commonpath([f if f.is_dir() else f.parent for f in self.folders]))
        #: Changes when the dashboard restarts: a page from before holds readings this one never made.
        self.server = secrets.token_hex(4)
        self.watch = Watch()
        self.lock = threading.Lock()

    def _read(self) -> tuple[list[Run], list, list[Family]]:
        """The runs, their leaderboards and searches as they are now; the watch takes in what changed."""
        runs = find_runs(self.paths)
        boards, families = leaderboards(runs), search_families(runs)
        self.watch.update(runs, run_labels(boards, runs), colours_of(boards, families), run_boards(boards))
        return runs, boards, families

    def state(self, since: int) -> dict[str, Any]:
        """What a page holding every reading up to ``since`` lacks, and the mark of the sections drawn here."""
        with self.lock:
            runs, boards, _ = self._read()
            marks = {"server": self.server, "sections": _sections_mark(runs), "boards": boards_of(boards)}
            return {**marks, **self.watch.state(since)}

    def page(self) -> str:
        """The page as the runs are now, with every point read so far and the terms of its updates."""
        with self.lock:
            runs, boards, families = self._read()
            marks = {"server": self.server, "sections": _sections_mark(runs), "boards": boards_of(boards)}
            return render(
                boards,
                f"zoo dashboard: {', '.join(self.paths)}",
                self.root / "index.html",
                families,
                charts={**marks, **self.watch.state()},
                live={"interval": self.refresh, "state": STATE_URL, "sections": SECTIONS_URL},
                plotly_url=PLOTLY_URL,
            )

    def sections(self) -> dict[str, str]:
        """The sections drawn here, as they are now, with their mark."""
        with self.lock:
            runs, boards, families = self._read()
            top, bottom = drawn_sections(boards, self.root / "index.html", families)
            return {"mark": _sections_mark(runs), "top": top, "bottom": bottom}

    def addressed(self, host: str | None, port: int) -> bool:
        """Whether a request's ``Host`` header names this dashboard: one of :attr:`hosts`, with its port or none."""
        match = HOST.fullmatch(host or "")
        if match is None or (match[2] is not None and int(match[2]) != port):
            return False
        name = match[1].strip("[]").lower()
        return name in self.hosts or (self.everywhere and _is_address(name))

    def run_file(self, address: str) -> Path:
        """The file of a watched run that ``address`` names (a path below :attr:`root`, as the page links), when
        :data:`RUN_FILES` names it and it lies in that run's folder once links are followed."""
        parts = unquote(address).lstrip("/").split("/")
        if not {"", ".", ".."}.isdisjoint(parts):
            raise Refused(404, NOT_SERVED)
        try:
            for depth in sorted({len(pattern.split("/")) for pattern in RUN_FILES}):
                run, inside = self.root.joinpath(*parts[:-depth]), PurePosixPath(*parts[-depth:])
                if _is_run_file(inside) and self._is_run(run):
                    target = (run / inside).resolve(strict=True)
                    if not target.is_relative_to(run.resolve()):
                        raise Refused(403, "a link that leads out of its run is not followed")
                    if not target.is_file():
                        raise Refused(404, MISSING)
                    return target
        except (OSError, RuntimeError, ValueError):  # missing, a name too long, a link loop, a NUL
            raise Refused(404, MISSING) from None
        raise Refused(404, NOT_SERVED)

    def _is_run(self, folder: Path) -> bool:
        """Whether ``folder`` holds a run (its summary) at or below a watched folder, as :func:`find_runs` reads, once
        links are followed: a run folder that is a link out of the watched folders is not theirs to serve."""
        real = folder.resolve()
        return any(real.is_relative_to(f) for f in self.folders) and (folder / SUMMARY_FILE).is_file()


def _sections_mark(runs: list[Run]) -> str:
    """Changes when a section drawn on the server would: a run appears or goes, changes status, or (once it
    stopped) its record or its attention pictures change. A running run's progress is the charts' business."""
    parts = []
    for run in runs:
        parts.append([str(run.path), run.status])
        if run.status != "running":
            parts[-1] += [_mtime(run.path / SUMMARY_FILE), _mtime(run.path / ATTENTION_DIR)]
    return hashlib.sha1(json.dumps(parts).encode()).hexdigest()[:12]


def _is_run_file(inside: PurePosixPath) -> bool:
    return any(len(inside.parts) == len(p.split("/")) and inside.match(p) for p in RUN_FILES)


def _is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


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
            if not self.dashboard.addressed(self.headers.get("Host"), self.server.server_address[1]):
                raise Refused(
                    403,
                    "the dashboard answers only requests addressed to 127.0.0.1, localhost or [::1] "
                    "(or the --host it was started with), with its port",
                )
            if address.path == "/":
                self.page()
            elif address.path == STATE_URL:
                since = parse_qs(address.query).get("since", ["0"])[0]
                if not re.fullmatch("[0-9]{1,15}", since):
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
            self.send_error(refusal.status, explain=str(refusal))
        except ConnectionError:  # the reader left mid-answer: nobody to tell
            self.close_connection = True
        except ZooError as error:  # a watched folder removed or damaged since the start: said, and asked again later
            if address.path == "/":
                page = Template(asset("error.html")).substitute(
                    refresh=self.dashboard.refresh, error=html.escape(str(error))
                )
                self.reply(page.encode(), "text/html; charset=utf-8", status=500)
            else:
                self.json({"error": str(error)}, status=500)
        except Exception as error:  # a bug: answered rather than dropped (the traceback with ZOO_VERBOSE=1)
            if verbose():
                traceback.print_exception(error)
            self.send_error(500, explain=one_line_reason(error))

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
        try:
            source = path.open("rb")
        except OSError:  # removed since, or not readable by this user
            raise Refused(404, "no such file in the watched runs") from None
        with source:
            self.send_response(200)
            self.send_header("Content-Type", mimetypes.guess_type(path.name)[0] or "application/octet-stream")
            self.send_header("Content-Length", str(os.fstat(source.fileno()).st_size))
            self.send_header("Cache-Control", "no-cache")
            self.send_header("X-Content-Type-Options", "nosniff")
            self.end_headers()
            if not self.head_only:
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
    dashboard = Dashboard([str(p) for p in paths], refresh, host)
    return ThreadingHTTPServer((host, port), partial(DashboardHandler, dashboard=dashboard))
