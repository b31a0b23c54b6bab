"""Reservoir states per second: zoo against reservoirpy (bench_reservoir's contestants)."""

from __future__ import annotations

import importlib.util

import bench_reservoir

from speed.common import Context, Row, interleaved, median, median_speedup, speedup_row


def measure_reservoir(ctx: Context) -> list[Row]:
    """States/s of zoo's reservoir (one batch of all sequences, its default W product) against
    reservoirpy (one sequence after another, as Reservoir.run does), N=1000, 64 x 100 steps.

    Fair because both compute the same recurrence at the same size, density and thread count
    (bench_reservoir checks that reservoirpy on zoo's weights gives zoo's states); the goal
    row uses reservoirpy's own initialisers (its defaults: float64, sparse W), the second row
    the very same weights as dense arrays. Calls are interleaved; the ratio is the median.
    """
    if importlib.util.find_spec("reservoirpy") is None:
        return [
            Row(
                "reservoir states/s vs reservoirpy",
                "-",
                "reservoirpy is not installed",
                None,
                ">= 10x",
                None,
                "pip install -e '.[bench]' to measure",
            )
        ]
    sizes = ctx.size(["--units", "200", "--sequences", "8", "--steps", "20"], [])
    args = bench_reservoir.parse_args([*sizes, "--threads", str(ctx.threads)])
    runs = bench_reservoir.contestants(args)
    labels = list(runs)  # zoo default, zoo dense, rpy same weights, rpy own init
    seconds = interleaved(ctx, {label: run for label, (_, run) in runs.items()}, ctx.size(3, 7), 1)
    states = args.sequences * args.steps
    size = f"N={args.units}, {args.sequences} x {args.steps} steps"
    rows = []
    for reference, goal, whose in ((labels[3], 10.0, "its own init"), (labels[2], None, "zoo's weights")):
        rows.append(
            speedup_row(
                f"reservoir states/s vs reservoirpy with {whose} ({size})",
                f"{states / median(seconds[labels[0]]):,.0f} states/s ({runs[labels[0]][0]})",
                f"{states / median(seconds[reference]):,.0f} states/s ({runs[reference][0]})",
                median_speedup(seconds, labels[0], reference),
                goal,
            )
        )
    return rows
