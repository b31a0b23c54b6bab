"""``zoo dashboard``: watch runs and sweeps in a browser while they train (the page updates itself in place)."""

from __future__ import annotations

import sys

from zoo.cli.args import CommandParser, port_number, positive_int


def run(args: list[str], description: str) -> None:
    parser = CommandParser(prog="zoo dashboard", description=description)
    parser.add_argument("paths", nargs="+", help="run directories or folders holding them (e.g. multirun/)")
    parser.add_argument("--port", type=port_number, default=8765, help="port on this machine (0: any free port)")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default: this machine only)")
    parser.add_argument("--refresh", type=positive_int, default=5, help="seconds between the page's updates")
    opts = parser.parse_args(args)
    from zoo.errors import ZooError
    from zoo.registry.discovery import discover

    try:
        from zoo.report.serve import LOOPBACK, make_server
    except ImportError as error:
        raise ZooError(f"the dashboard needs Plotly ({error}); install it with: pip install 'zoo[report]'") from None

    from zoo.report.runs import existing

    existing(opts.paths)
    discover()
    try:
        server = make_server(opts.paths, opts.host, opts.port, opts.refresh)
    except OSError as error:  # the port is taken, or the address is not this machine's
        raise ZooError(
            f"cannot listen on {opts.host}:{opts.port} ({error.strerror or error}); "
            "choose another --port (0: any free one) or --host"
        ) from None
    host, port = server.server_address[:2]
    print(f"zoo dashboard: http://{host}:{port}/ (Ctrl-C stops it)", flush=True)
    if opts.host not in LOOPBACK:
        print(
            f"zoo: warning: --host {opts.host} serves these runs (their configs, scores and outputs) to every machine "
            "that can reach this one, with no password; --host 127.0.0.1 keeps them on this machine",
            file=sys.stderr,
            flush=True,
        )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
