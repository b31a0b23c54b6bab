"""``zoo compare``: a leaderboard of configurations over seeds."""

from __future__ import annotations

from pathlib import Path

from zoo.cli.args import CommandParser


def run(args: list[str], description: str) -> None:
    from zoo.registry.discovery import discover
    from zoo.report.compare import FORMATS, check_report_file, compare, write_report

    discover()  # metric plugins: significance tests rebuild them by name

    parser = CommandParser(prog="zoo compare", description=description)
    parser.add_argument("paths", nargs="+", help="run directories or folders holding them (e.g. a multirun sweep)")
    parser.add_argument(
        "--by",
        default="",
        help="group by these settings instead of by configuration: any config "
        "key or config group: encoder,attention or optim.lr or seed or model",
    )
    parser.add_argument("--sort", help="metric to sort by (default: the runs' monitored metric)")
    parser.add_argument("--format", choices=FORMATS, default="table", help="table (terminal), markdown, csv or json")
    parser.add_argument(
        "--baseline",
        help="a configuration (its name in the table) to test every other against: "
        "difference, 95%% CI and Holm-adjusted p-value of the sorted metric (a test over seeds and test "
        "items, each seed once, chosen by the seed counts) and the seeds a side for 80%% power",
    )
    parser.add_argument(
        "--digits",
        type=int,
        metavar="N",
        help="decimals of every score in the table, Markdown and HTML (default: per column, the fewest that "
        "tell its rows apart); csv and json keep every digit",
    )
    parser.add_argument("--html", metavar="FILE", help="also write the self-contained HTML report (charts, samples)")
    opts = parser.parse_args(args)
    if opts.html:
        check_report_file(Path(opts.html))  # before the table: a refused command prints nothing
    by = [key.strip() for key in opts.by.split(",") if key.strip()]
    chosen = {"by": by, "sort": opts.sort, "baseline": opts.baseline, "digits": opts.digits}
    print(compare(opts.paths, fmt=opts.format, **chosen))
    if opts.html:
        print(f"wrote {write_report(opts.paths, opts.html, **chosen)}")
