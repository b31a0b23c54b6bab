"""The suite's results as files: results.csv, results.md and machine.json under --out."""

from __future__ import annotations

import csv
import json
from dataclasses import asdict

from speed.common import Context, Row

COLUMNS = ("what", "ours", "reference", "ratio", "goal", "met", "note")


def ratio_text(row: Row) -> str:
    """Shares as percentages, speed ratios as multiples."""
    if row.ratio is None:
        return ""
    return f"{row.ratio:.1%}" if "%" in row.goal else f"{row.ratio:.2f}x"


def met_text(row: Row) -> str:
    return {True: "yes", False: "NO", None: ""}[row.met]


def write_csv(ctx: Context, rows: list[Row]) -> None:
    with open(ctx.out / "results.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, COLUMNS)
        writer.writeheader()
        for row in rows:
            writer.writerow(
                {**asdict(row), "ratio": "" if row.ratio is None else f"{row.ratio:.4f}", "met": met_text(row)}
            )


def markdown(machine: dict[str, str], rows: list[Row], cost_table: str) -> str:
    """The machine's details, the results table and, when measured, the cost-vs-length table."""
    lines = [
        "# Speed suite",
        "",
        ", ".join(f"{k}: {v}" for k, v in machine.items()),
        "",
        "| what | ours | reference | ratio | goal | met? | note |",
        "|---|---|---|---:|---|---|---|",
    ]
    lines += [
        f"| {r.what} | {r.ours} | {r.reference} | {ratio_text(r)} | {r.goal} | {met_text(r)} | {r.note} |" for r in rows
    ]
    if cost_table:
        lines += ["", "## Cost against length (cost_vs_length.png)", "", cost_table]
    return "\n".join(lines) + "\n"


def write(ctx: Context, machine: dict[str, str], rows: list[Row]) -> str:
    """Write every file and return the markdown."""
    ctx.out.mkdir(parents=True, exist_ok=True)
    write_csv(ctx, rows)
    (ctx.out / "machine.json").write_text(json.dumps(machine, indent=2) + "\n")
    cost = ctx.out / "cost_vs_length.md"
    text = markdown(machine, rows, cost.read_text() if cost.exists() else "")
    (ctx.out / "results.md").write_text(text)
    return text
