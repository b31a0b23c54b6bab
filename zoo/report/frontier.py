"""Who wins at which budget: each family's test score against its training compute, and where the ranking changes.

Runs trained to a budget (``trainer.budget_flops`` or ``budget_minutes``; :mod:`zoo.training.compute`) are placed
by family (the ``model`` recipe, else the encoder) and budget; each point is the mean over seeds of the test
score and of the FLOPs the runs recorded, with the seeds' standard deviation. At each budget the families are
ranked by mean score, the leader tested against the runner-up with ``zoo compare``'s test
(:mod:`zoo.report.stats`); a family that overtakes another between two budgets is named, with how sure that
is. Scaling studies ask exactly this (Kaplan et al., 2020; Tay et al., 2022).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from functools import cached_property

from zoo.report.aggregate import Stat, run_order
from zoo.report.runs import Run
from zoo.report.stats import Comparison, Scorer, compare_to_baseline, p_text, scorer_for

#: The p-value below which a lead or an overtaking is called more than noise.
SIGNIFICANCE = 0.05


#: A budget as the run record states it: its unit (``flops`` or ``minutes``) and amount.
Budget = tuple[str, float]


def spoken(spend: Budget) -> str:
    unit, amount = spend
    return f"{amount:.3g} FLOPs" if unit == "flops" else f"{amount:g} min"


@dataclass
class Point:
    """One family at one budget: its seeds' runs, mean test score and mean recorded FLOPs."""

    family: str
    budget: Budget
    runs: list[Run]
    score: Stat
    flops: float


def family(run: Run) -> str:
    """What a compute comparison compares: the ``model`` recipe, else the encoder."""
    return f"model={run.choices['model']}" if run.choices.get("model") else f"encoder={run.setting('encoder')}"


def budget(run: Run) -> Budget | None:
    """The budget the run was trained to, None for a run trained for epochs."""
    laid_out = run.summary.get("budget")
    if not isinstance(laid_out, dict):
        return None
    return next(((unit, float(laid_out[unit])) for unit in ("flops", "minutes") if laid_out.get(unit)), None)


def points(runs: list[Run], metric: str) -> list[Point]:
    """Each (family, budget) of the finished budgeted runs with a finite ``metric`` score, by family then budget."""
    cells: dict[tuple[str, Budget], list[Run]] = {}
    for run in sorted(runs, key=run_order):
        score = run.score(metric)
        if run.status == "finished" and budget(run) is not None and score is not None and math.isfinite(score):
            cells.setdefault((family(run), budget(run)), []).append(run)
    found = []
    for (name, spend), members in sorted(cells.items()):
        flops = [run.summary.get("compute", {}).get("flops") for run in members]
        found.append(
            Point(
                name,
                spend,
                members,
                Stat.of([run.score(metric) for run in members]),
                statistics.fmean(f for f in flops if f) if any(flops) else float("nan"),
            )
        )
    return found


@dataclass
class Frontier:
    """The points of a compute comparison and, per budget, the ranking and the leader's test against the next."""

    metric: str
    higher_is_better: bool
    points: list[Point]

    @property
    def budgets(self) -> list[Budget]:
        return sorted({p.budget for p in self.points})

    @property
    def families(self) -> list[str]:
        return list(dict.fromkeys(p.family for p in self.points))

    def ranking(self, spend: Budget) -> list[Point]:
        at = [p for p in self.points if p.budget == spend]
        return sorted(at, key=lambda p: -p.score.mean if self.higher_is_better else p.score.mean)

    @cached_property
    def scorer(self) -> Scorer:
        """One scorer for every test of the frontier: it reads each run's test items once."""
        return scorer_for(self.metric, self.points[0].runs)

    def test(self, spend: Budget, better: str, worse: str) -> Comparison | None:
        """``better`` against ``worse`` at ``spend`` (the baseline: ``worse``), each seed one repetition."""
        cells = {p.family: p for p in self.points if p.budget == spend}
        return compare_to_baseline(self.scorer, [[r] for r in cells[worse].runs], [[r] for r in cells[better].runs])

    def lead(self, spend: Budget) -> Comparison | None:
        """The leader at ``spend`` against the runner-up."""
        ranked = self.ranking(spend)
        return self.test(spend, ranked[0].family, ranked[1].family) if len(ranked) > 1 else None

    def overtakings(self) -> list[tuple[Budget, Budget, str, str, Comparison | None]]:
        """Each overtaking between consecutive budgets of one unit, among the families trained at both: (smaller
        budget, larger, the family that overtakes, the one overtaken, their test at the larger budget)."""
        found = []
        for low, high in zip(self.budgets, self.budgets[1:]):
            if low[0] != high[0]:  # FLOPs, then minutes: no order between them
                continue
            before = [p.family for p in self.ranking(low)]
            after = [p.family for p in self.ranking(high) if p.family in before]
            before = [name for name in before if name in after]
            for a in after:
                for b in after[after.index(a) + 1 :]:
                    if before.index(a) > before.index(b):
                        found.append((low, high, a, b, self.test(high, a, b)))
        return found

    def changes(self) -> list[str]:
        """The overtakings that are more than noise at the larger budget, each with its difference and p-value,
        then how many others are within noise (a reordering of scores that differ by chance names no winner)."""
        named, noise = [], 0
        for low, high, a, b, c in self.overtakings():
            if c is None or not sure(c):
                noise += 1
                continue
            margin = f"{c.difference:+.1f}, p {_equals(c.p)}"
            named.append(f"from {spoken(low)} to {spoken(high)} {a} overtakes {b} ({margin})")
        if noise:
            named.append(f"{noise} other change{'s' * (noise > 1)} of order within noise (p >= {SIGNIFICANCE})")
        return named

    def table(self) -> str:
        """Budgets as rows, families as columns (mean ± std over seeds), the leader and how sure it is."""
        header = ["budget", *self.families, "leader", "p vs next"]
        rows = []
        for spend in self.budgets:
            cells = {p.family: p for p in self.points if p.budget == spend}
            shown = [
                f"{cells[f].score.mean:.1f} ± {cells[f].score.std:.1f} (n={cells[f].score.n})" if f in cells else ""
                for f in self.families
            ]
            ranked, lead = self.ranking(spend), self.lead(spend)
            p = "" if lead is None else p_text(lead.p) + (" †" if lead.items_only else " *" * sure(lead))
            leader = ranked[0].family if lead is None or sure(lead) else f"{ranked[0].family} (within noise)"
            rows.append([spoken(spend), *shown, leader, p])
        widths = [max(len(h), *(len(r[k]) for r in rows)) for k, h in enumerate(header)]
        lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths))]
        lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths)) for row in rows]
        changes = self.changes()
        lines.append(
            f"test {self.metric} against training compute (mean ± std over seeds); p: the leader against the next "
            "family, t-test over seeds and test items, * p < 0.05"
        )
        lines.append("ranking changes: " + "; ".join(changes) if changes else "the ranking is the same at every budget")

        return "\n".join(lines)


def sure(c: Comparison) -> bool:
    """Whether a test says more than noise: p below :data:`SIGNIFICANCE`, with the seeds' spread in it."""
    return not c.items_only and c.p < SIGNIFICANCE


def _equals(p: float) -> str:
    return "< 0.001" if p < 0.0005 else f"= {p:.3f}"


def frontier(runs: list[Run], metric: str, higher_is_better: bool = True) -> Frontier | None:
    """The compute comparison among ``runs``, or None when they hold fewer than two budgets."""
    found = points(runs, metric)
    if len({p.budget for p in found}) < 2:
        return None
    return Frontier(metric, higher_is_better, found)
