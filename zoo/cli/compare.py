"""``zoo compare``: a leaderboard of finished runs."""
from __future__ import annotations

import argparse


def run(args: list[str], description: str) -> None:
    parser = argparse.ArgumentParser(prog="zoo compare", description=description)
    parser.add_argument("paths", nargs="+", help="run directories or folders holding them (e.g. a multirun sweep)")
    opts = parser.parse_args(args)
    from zoo.report.compare import find_summaries, leaderboard

    print(leaderboard(find_summaries(opts.paths)))
