"""Who wins at which budget: each family's test score against its training compute, and where the ranking changes.

Runs trained to a budget (``trainer.budget_flops`` or ``budget_minutes``; :mod:`zoo.training.compute`) are placed
by family (the ``model`` recipe, else the encoder) and budget; each point is the mean over seeds of the test
score, with the seeds' standard deviation, and the mean of the FLOPs the runs recorded. As in ``zoo compare``, the
seed is the unit (:attr:`zoo.report.aggregate.Group.clusters`): runs that share a seed, reruns or configurations a
family pools, are averaged into one score, so a copied run changes nothing. At each budget the families are
ranked by mean score, the leader tested against the runner-up with ``zoo compare``'s test (:mod:`zoo.report.stats`:
chosen by the seed counts; no verdict from one seed); a family that overtakes another between two budgets is
named, with how sure that is. Scaling studies ask exactly this (Kaplan et al., 2020; Tay et al., 2022).
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property

from zoo.report.aggregate import Group, Stat, run_order
from zoo.report.runs import Run
from zoo.report.stats import CALIBRATED_RATIO, Comparison, Scorer, compare_to_baseline, p_text, scorer_for

#: The p-value below which a lead or an overtaking is called more than noise.
SIGNIFICANCE = 0.05
#: Why an overtaking has no test: the two families share no scored test item.
NO_ITEMS = "no shared test items"


#: A budget as the run record states it: its unit (``flops`` or ``minutes``) and amount.
Budget = tuple[str, float]


def spoken(spend: Budget) -> str:
    unit, amount = spend
    return f"{amount:.3g} FLOPs" if unit == "flops" else f"{amount:g} min"


@dataclass
class Point:
    """One family at one budget: its runs (a :class:`Group`, by seed), the mean test score over seeds and the mean
    recorded FLOPs."""

    family: str
    budget: Budget
    group: Group
    score: Stat
    flops: float

    @property
    def runs(self) -> list[Run]:
        return self.group.runs

    @property
    def seeds(self) -> list[list[Run]]:
        """The runs by seed: the unit of the mean, its ± and the test."""
        return self.group.clusters

    @property
    def note(self) -> str:
        """What the table says under it of a point whose runs are not one per seed: how many runs, configurations
        and seeds it averages ("" where each run is a seed of its own)."""
        runs, seeds, pooled = len(self.runs), len(self.seeds), len(self.group.configurations)
        if runs == seeds and pooled == 1:
            return ""
        of = f" of {pooled} configurations" if pooled > 1 else ""
        at = f"{seeds} seed{'s' * (seeds > 1)}"
        return f"{self.family} at {spoken(self.budget)}: {runs} runs{of} at {at}, each seed's runs averaged"


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
    return [point(name, spend, members, metric) for (name, spend), members in sorted(cells.items())]


def point(name: str, spend: Budget, runs: list[Run], metric: str) -> Point:
    """One family's runs at one budget: the score a mean over seeds, each seed's runs averaged first."""
    group = Group(name, runs)
    score = Stat.of([statistics.fmean(run.score(metric) for run in seed) for seed in group.clusters])
    flops = [run.summary.get("compute", {}).get("flops") for run in runs]
    return Point(name, spend, group, score, statistics.fmean(f for f in flops if f) if any(flops) else float("nan"))


@dataclass
class Frontier:
    """The points of a compute comparison and, per budget, the ranking and the leader's test against the next."""

    metric: str
    higher_is_better: bool
    points: list[Point]
    #: The tests made so far, by (budget, better, worse): the table, its overtakings and its notes ask for the same.
    tested: dict[tuple[Budget, str, str], Comparison | None] = field(default_factory=dict, init=False, repr=False)

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
        """``better`` against ``worse`` at ``spend`` (the baseline: ``worse``), each seed one unit (its runs
        averaged); made once, as each test draws the test items a thousand times."""
        key = (spend, better, worse)
        if key not in self.tested:
            cells = {p.family: p for p in self.points if p.budget == spend}
            self.tested[key] = compare_to_baseline(self.scorer, cells[worse].seeds, cells[better].seeds)
        return self.tested[key]

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
        """The overtakings that are more than noise at the larger budget, each with its difference and p-value, then
        how many others are within noise (a reordering of scores that differ by chance names no winner) and how
        many have no verdict, and why (one seed on a side)."""
        named, noise, unjudged = [], 0, Counter()
        for low, high, a, b, c in self.overtakings():
            if c is not None and sure(c):
                margin = ", ".join(filter(None, (f"{c.difference:+.1f}", f"p {_equals(c.p)}", c.caveat)))
                named.append(f"from {spoken(low)} to {spoken(high)} {a} overtakes {b} ({margin})")
            elif c is not None and c.verdict:
                noise += 1
            else:
                unjudged[NO_ITEMS if c is None else c.caveat] += 1
        if noise:
            named.append(f"{_others(noise)} within noise (p >= {SIGNIFICANCE})")
        named += [f"{_others(count)} with no verdict ({why})" for why, count in unjudged.items()]
        return named

    def table(self) -> str:
        """Budgets as rows, families as columns (mean ± std over seeds), the leader and how sure it is; under it how
        it was tested, what keeps a test from a verdict, the points that average several runs a seed."""
        header = ["budget", *self.families, "leader", "p vs next"]
        rows = []
        for spend in self.budgets:
            cells = {p.family: p for p in self.points if p.budget == spend}
            shown = [
                f"{cells[f].score.mean:.1f} ± {cells[f].score.std:.1f} (n={cells[f].score.n})" if f in cells else ""
                for f in self.families
            ]
            ranked, lead = self.ranking(spend), self.lead(spend)
            rows.append([spoken(spend), *shown, leader_text(ranked[0].family, lead), p_cell(lead)])
        widths = [max(len(h), *(len(r[k]) for r in rows)) for k, h in enumerate(header)]
        lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths))]
        lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths)) for row in rows]
        changes = self.changes()
        lines += self.footnotes()
        lines.append("ranking changes: " + "; ".join(changes) if changes else "the ranking is the same at every budget")
        return "\n".join(lines)

    def footnotes(self) -> list[str]:
        """How to read the table: what a point is, how each lead was tested, the lines ``zoo compare`` writes under
        its table for a test without a verdict or with spreads beyond calibration, and each point's seeds."""
        leads = [self.lead(spend) for spend in self.budgets]
        overtakings = [test for *_, test in self.overtakings()]
        tests = [c for c in leads + overtakings if c is not None]
        methods = list(dict.fromkeys(c.method for c in tests if c.verdict))
        line = f"test {self.metric} against training compute (mean ± std over seeds, each seed's runs averaged)"
        if methods:
            line += (
                f"; p: the leader against the next family, two-sided, each seed once: {'; '.join(methods)} "
                f"(docs/guide/comparing.md); * p < {SIGNIFICANCE}"
            )
        lines = [line]
        if any(c.items_only for c in tests):
            lines.append("needs ≥ 2 seeds for a verdict: with one seed on a side its training noise is unknown")
        if any(not c.calibrated for c in tests):
            lines.append(beyond_calibration())
        return lines + [p.note for p in self.points if p.note]


def beyond_calibration() -> str:
    """``zoo compare``'s line under a table with a row whose spreads are beyond those the test was calibrated at."""
    from zoo.report.compare import RATE_AT_10X  # compare imports this module as it loads

    return (
        f"spreads differ: at 2 seeds a side with seed spreads more than {CALIBRATED_RATIO:g}× apart no test "
        f"holds its false-positive rate ({RATE_AT_10X} at 10×); add seeds"
    )


def leader_text(name: str, lead: Comparison | None) -> str:
    """The leader, ``(within noise)`` where its test says no more, ``(no verdict)`` where it cannot say."""
    if lead is None or sure(lead):
        return name
    return f"{name} (within noise)" if lead.verdict else f"{name} (no verdict)"


def p_cell(lead: Comparison | None) -> str:
    """``0.012 *``, as ``zoo compare``'s p column: what keeps the lead from a verdict after its p (spreads beyond
    calibration) or instead of it (one seed: no p)."""
    if lead is None:
        return ""
    if not lead.verdict:
        return lead.caveat
    shown = p_text(lead.p) + " *" * (lead.p < SIGNIFICANCE)
    return f"{shown}, {lead.caveat}" if lead.caveat else shown


def sure(c: Comparison) -> bool:
    """Whether a test says more than noise: p below :data:`SIGNIFICANCE`, with the seeds' spread in it."""
    return c.verdict and c.p < SIGNIFICANCE


def _others(count: int) -> str:
    return f"{count} other change{'s' * (count > 1)} of order"


def _equals(p: float) -> str:
    return "< 0.001" if p < 0.0005 else f"= {p:.3f}"


def frontier(runs: list[Run], metric: str, higher_is_better: bool = True) -> Frontier | None:
    """The compute comparison among ``runs``, or None when they hold fewer than two budgets."""
    found = points(runs, metric)
    if len({p.budget for p in found}) < 2:
        return None
    return Frontier(metric, higher_is_better, found)
