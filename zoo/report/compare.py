"""``zoo compare``: a leaderboard of configurations, read only from run directories.

One row per configuration with each metric's mean ± standard deviation and the
number of seeds, cost columns and BLEU per source-length bucket; sorted by the
monitored metric (or ``sort``) in its own direction. Running and failed runs are
counted in the status column, never averaged in.
"""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from zoo.errors import ZooError
from zoo.report.aggregate import COSTS, Group, Stat, group_runs
from zoo.report.runs import Run, find_runs
from zoo.report.stats import METHOD, p_value, pool

FORMATS = ("table", "markdown", "csv", "json")


class CompareError(ZooError, ValueError):
    """The comparison asked for cannot be made from these runs."""


class Leaderboard:
    """Groups of runs, their columns and order, renderable as a terminal table, Markdown, CSV or JSON."""

    def __init__(self, runs: list[Run], by: list[str] | None = None, sort: str | None = None,
                 baseline: str | None = None) -> None:
        self.runs = runs
        usable = [run for run in runs if run.status not in ("old", "unreadable")]
        self.skipped = [run for run in runs if run not in usable]
        self.groups = group_runs(usable, by)
        summaries = [run.summary for run in usable]
        self.metrics = list(dict.fromkeys(name for s in summaries for name in s.get("test", {})))
        self.sort = sort or next((s["monitor"] for s in summaries if s.get("monitor")), None)
        directions = [s["test"][self.sort]["higher_is_better"] for s in summaries if self.sort in s.get("test", {})]
        self.higher_is_better = directions[0] if directions else True
        self.costs = [column for column in COSTS.values() if any(column in g.costs for g in self.groups)]
        self.buckets = sorted({b for g in self.groups for b in g.buckets}, key=lambda b: int(b.split("-")[0].rstrip("+")))
        self.groups.sort(key=self._rank)
        self.baseline = self._find(baseline) if baseline else None
        self.p_values = self._significance() if self.baseline else {}

    def _find(self, label: str) -> Group:
        """The group named ``label`` (or the only one whose name contains it)."""
        matches = [g for g in self.groups if g.label == label] or [g for g in self.groups if label in g.label]
        if len(matches) != 1:
            shown = "; ".join(g.label for g in self.groups)
            raise CompareError(f"--baseline {label!r} matches {len(matches)} configurations; choose one of: {shown}")
        return matches[0]

    def _significance(self) -> dict[str, float | None]:
        """p-value of each configuration's difference from the baseline on the sorted metric."""
        p_values = {}
        for group in self.groups:
            if group is self.baseline:
                continue
            pooled = pool(self.baseline.finished, group.finished)
            p_values[group.label] = p_value(self.sort, *pooled) if pooled else None
        return p_values

    def _rank(self, group: Group) -> float:
        stat = group.metrics.get(self.sort)
        if stat is None:
            return float("inf")
        return -stat.mean if self.higher_is_better else stat.mean

    # ------------------------------------------------------------------ cells
    @staticmethod
    def _status(group: Group) -> str:
        counts = group.statuses
        return ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))

    @staticmethod
    def _stat(stat: Stat | None, digits: int = 1) -> str:
        if stat is None:
            return ""
        return f"{stat.mean:,.{digits}f}" if stat.n == 1 else f"{stat.mean:,.{digits}f} ± {stat.std:,.{digits}f}"

    def header(self) -> list[str]:
        significance = [f"p ({self.sort})"] if self.baseline else []
        return ["configuration", "n", *self.metrics, *significance, *self.costs, *[f"BLEU {b}" for b in self.buckets],
                "runs"]

    def _p_cell(self, group: Group) -> list[str]:
        if not self.baseline:
            return []
        if group is self.baseline:
            return ["baseline"]
        p = self.p_values.get(group.label)
        return ["" if p is None else f"{p:.3f}" + (" *" if p < 0.05 else "")]

    def rows(self) -> list[list[str]]:
        rows = []
        for g in self.groups:
            costs = [self._stat(g.costs.get(c), 0 if c in ("params", "frozen", "tokens/s", "train s") else 1)
                     for c in self.costs]
            rows.append([g.label, str(len(g.finished)), *[self._stat(g.metrics.get(m)) for m in self.metrics],
                         *self._p_cell(g), *costs,
                         *[self._stat(g.buckets.get(b)) for b in self.buckets], self._status(g)])
        return rows

    # ------------------------------------------------------------------ formats
    def render(self, fmt: str = "table") -> str:
        if not self.runs:
            return "no runs found (looked for summary.json)"
        return {"table": self.table, "markdown": self.markdown, "csv": self.csv, "json": self.json}[fmt]()

    def _footnote(self) -> str:
        order = "higher" if self.higher_is_better else "lower"
        lines = [f"sorted by {self.sort} ({order} is better); mean ± std over the n finished seeds"]
        if self.baseline:
            lines.append(f"p: {self.sort} against {self.baseline.label} by {METHOD}; * p < 0.05")
        if self.skipped:
            lines.append(f"left out {len(self.skipped)} run(s) with an old or unreadable summary: "
                         + ", ".join(str(run.path) for run in self.skipped))
        return "\n".join(lines)

    def table(self) -> str:
        from rich.console import Console
        from rich.table import Table

        table = Table(caption=self._footnote(), caption_justify="left")
        for k, name in enumerate(self.header()):
            table.add_column(name, justify="left" if k in (0, len(self.header()) - 1) else "right")
        for row in self.rows():
            table.add_row(*row)
        out = io.StringIO()
        Console(file=out, width=max(100, 14 * len(self.header())), color_system=None).print(table)
        return out.getvalue().rstrip()

    def markdown(self) -> str:
        lines = ["| " + " | ".join(self.header()) + " |", "|" + "---|" * len(self.header())]
        lines += ["| " + " | ".join(row) + " |" for row in self.rows()]
        return "\n".join(lines) + "\n\n" + self._footnote()

    def csv(self) -> str:
        out = io.StringIO()
        writer = csv.writer(out)
        stat_columns = [*self.metrics, *self.costs, *[f"BLEU {b}" for b in self.buckets]]
        writer.writerow(["configuration", "n", *(f"{c} {part}" for c in stat_columns for part in ("mean", "std")),
                         "runs"])
        for g in self.groups:
            stats = [g.metrics.get(m) for m in self.metrics] + [g.costs.get(c) for c in self.costs]
            stats += [g.buckets.get(b) for b in self.buckets]
            cells = [value for s in stats for value in ((s.mean, s.std) if s else ("", ""))]
            writer.writerow([g.label, len(g.finished), *cells, self._status(g)])
        return out.getvalue().rstrip()

    def json(self) -> str:
        def stats(values: dict[str, Stat]) -> dict:
            return {k: {"mean": s.mean, "std": s.std, "n": s.n} for k, s in values.items() if s}

        rows = [{"configuration": g.label, "runs": [str(r.path) for r in g.runs], "status": dict(g.statuses),
                 "metrics": stats(g.metrics), "costs": stats(g.costs), "bleu_by_length": stats(g.buckets)}
                for g in self.groups]
        for row in rows:
            row["p_vs_baseline"] = self.p_values.get(row["configuration"])
        return json.dumps({"sort": self.sort, "higher_is_better": self.higher_is_better, "rows": rows,
                           "baseline": self.baseline.label if self.baseline else None, "method": METHOD,
                           "left_out": [str(r.path) for r in self.skipped]}, indent=2)


def compare(paths: list[str | Path], by: list[str] | None = None, sort: str | None = None, fmt: str = "table",
            baseline: str | None = None) -> str:
    """The leaderboard of every run under ``paths``."""
    return Leaderboard(find_runs(paths), by, sort, baseline).render(fmt)
