"""``zoo compare``: a leaderboard of configurations, read only from run directories.

One row per configuration with each metric's mean ± standard deviation and the
number of seeds, cost columns and every score of the task's breakdowns (``bleu 1-10``:
BLEU on sources of 1-10 words); sorted by the monitored metric (or ``sort``) in its own
direction. Running and failed runs are
counted in the status column, never averaged in. With a baseline, each row also
holds its difference from it, a confidence interval and a p-value (``stats.py``).
The table, Markdown and HTML show the :class:`View` of ``columns.py`` (scores at a
precision that tells the rows apart, what every row shares said once above); CSV and
JSON keep every digit.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from zoo.config.suggest import did_you_mean, with_hint
from zoo.errors import ZooError
from zoo.report.aggregate import BUDGET, BUDGET_SHARE, COST_COLUMNS, Group, Stat, breakdown_keys, group_runs
from zoo.report.columns import MAX_DIGITS, Cell, Column, View, decimals, mark_best, stat_column
from zoo.report.frontier import frontier
from zoo.report.importance import format_importance
from zoo.report.runs import Run, RunsNotFound, check_settings, find_runs
from zoo.report.stats import (
    CALIBRATED_RATIO,
    CONFIDENCE,
    MAX_SEEDS,
    POWER,
    SAMPLES,
    Comparison,
    compare_to_baseline,
    holm,
    p_text,
    scorer_for,
)
from zoo.report.terminal import draw
from zoo.report.widths import width_map
from zoo.report.words import dataset_words, signature_words
from zoo.run.claim import refuse_live_run
from zoo.run.layout import SUMMARY_FILE
from zoo.search.report import format_search, mark_tuned, search_families, search_record

FORMATS = ("table", "markdown", "csv", "json")
#: The formats read by a person, which a search's summary and the compute comparison come with.
TEXT = ("table", "markdown")
#: What each row carries of its test against the baseline in CSV and JSON (``p`` Holm-adjusted; a one-seed row
#: has no p and no confidence interval, its interval over the test items in ``test_set_ci_*``).
TEST_FIELDS = (
    "difference",
    "ci_low",
    "ci_high",
    "p",
    "p_unadjusted",
    "method",
    "seeds_for_power",
    "seeds_for_power_low",
    "seeds_for_power_high",
    "spread_ratio",
    "test_set_ci_low",
    "test_set_ci_high",
    "caveat",
)
#: The Holm-adjusted p-value below which a row differs from the baseline (marked ``*``).
SIGNIFICANCE = 0.05
#: The column of a one-seed row's interval, which covers test-set sampling only.
TEST_SET_CI = "test-set CI, 1 seed"
#: The false-positive rate measured at 2 seeds a side with spreads 10x apart (docs/guide/comparing.md).
RATE_AT_10X = "8.2-9.3 %"
#: Decimals of each cost column: measured, not scored, so at a fixed precision (one decimal for the others).
COST_DECIMALS = {
    "params": 0,
    "frozen": 0,
    "target tok/s": 0,
    "train s": 0,
    "proc s": 0,
    "train TFLOPs": 2,
    BUDGET: 2,
    BUDGET_SHARE: 1,
}
#: The decimals of a score column, at least (more where its rows would read alike).
SCORE_DECIMALS = 1


class CompareError(ZooError, ValueError):
    """The comparison asked for cannot be made from these runs."""


class Leaderboard:
    """Groups of runs, their columns and order, renderable as a terminal table, Markdown, CSV or JSON."""

    def __init__(
        self,
        runs: list[Run],
        by: list[str] | None = None,
        sort: str | None = None,
        skipped: list[Run] | None = None,
        digits: int | None = None,
    ) -> None:
        """``runs`` must be comparable (see :func:`comparable_sets`); ``skipped`` are named under the table;
        ``digits``: the decimals of every score shown (default: per column, the fewest that tell its rows apart)."""
        if digits is not None and not 0 <= digits <= MAX_DIGITS:
            raise CompareError(f"--digits {digits}: give a number of decimals from 0 to {MAX_DIGITS}")
        self.digits = digits
        self.by = by or []
        self.runs = runs
        self.skipped = skipped or []
        self.groups = mark_tuned(group_runs(runs, by))
        summaries = [run.summary for run in runs]
        self.metrics = list(dict.fromkeys(name for s in summaries for name in s.get("test", {})))
        self.sort = sort or next((s["monitor"] for s in summaries if s.get("monitor")), None)
        if sort and self.metrics and sort not in self.metrics:
            raise CompareError(
                with_hint(
                    f"--sort {sort}: no run has that test metric",
                    did_you_mean(sort, self.metrics),
                    f"they have {', '.join(self.metrics)}",
                )
            )
        #: Whether a higher score is better, per metric, as the first summary holding it says.
        self.directions: dict[str, bool] = {}
        for s in summaries:
            for name, entry in s.get("test", {}).items():
                self.directions.setdefault(name, entry.get("higher_is_better", True))
        self.higher_is_better = self.directions.get(self.sort, True)
        self.costs = [column for column in COST_COLUMNS if any(column in g.costs for g in self.groups)]
        found = {key for g in self.groups for key in g.breakdowns}
        #: The breakdowns' (breakdown, bucket, score) columns, in the order the tasks wrote them.
        self.breakdowns = [key for key in breakdown_keys([r for g in self.groups for r in g.finished]) if key in found]
        self.groups.sort(key=self._rank)
        self.baseline: Group | None = None
        self.comparisons: dict[str, Comparison | None] = {}

    def find(self, label: str) -> list[Group]:
        """The groups named ``label``, else those whose name contains it, else those whose every run has the settings
        it writes as ``key=value`` (a configuration alone is labelled in words: ``gru encoder, rnn decoder``)."""
        named = [g for g in self.groups if g.label == label] or [g for g in self.groups if label in g.label]
        return named or [g for g in self.groups if g.runs and all(has_settings(run, label) for run in g.runs)]

    def test_against(self, baseline: Group) -> None:
        """Each configuration's difference from ``baseline`` on the sorted metric, its confidence interval and
        p-value, each seed one unit (:attr:`Group.clusters`); the p-values of the rows with a verdict (seeds on
        both sides) Holm-adjusted over them (Holm, 1979)."""
        self.baseline = baseline
        scorer = scorer_for(self.sort, baseline.finished)
        self.comparisons = {
            group.label: compare_to_baseline(scorer, baseline.clusters, group.clusters)
            for group in self.groups
            if group is not baseline
        }
        tested = [c for c in self.comparisons.values() if c is not None and c.verdict]
        for comparison, p in zip(tested, holm([c.p_unadjusted for c in tested])):
            comparison.p = p

    def _rank(self, group: Group) -> float:
        stat = group.metrics.get(self.sort)
        if stat is None:
            return float("inf")
        return -stat.mean if self.higher_is_better else stat.mean

    # ------------------------------------------------------------------ columns
    @staticmethod
    def _status(group: Group) -> str:
        counts = group.statuses
        return ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))

    def breakdown_columns(self) -> list[str]:
        """``bleu 1-10``: a breakdown's score in one bucket, named by the task; the breakdown's name leads when
        the runs report several."""
        several = len({name for name, _, _ in self.breakdowns}) > 1
        return [f"{name} " * several + f"{score} {bucket}" for name, bucket, score in self.breakdowns]

    def _decimals(self, stats: list[Stat | None]) -> int:
        """A score column's decimals: ``digits`` if given, else the fewest that tell its rows' means apart."""
        if self.digits is not None:
            return self.digits
        return decimals([s.mean for s in stats if s], SCORE_DECIMALS)

    def _score_column(self, name: str, stats: list[Stat | None]) -> Column:
        return stat_column(name, stats, self._decimals(stats))

    def _shared_settings(self) -> dict[str, str]:
        """The naming settings alike in every row (of two or more), while another still tells the rows apart."""
        if len(self.groups) < 2:
            return {}
        first = self.groups[0].settings
        keys = list(dict.fromkeys(key for g in self.groups for key in g.settings))
        alike = {key: first[key] for key in keys if all(g.settings.get(key) == first.get(key) for g in self.groups)}
        return alike if len(alike) < len(keys) else {}

    def _alike_costs(self) -> dict[str, str]:
        """The costs every finished run has alike (``frozen=0``), in two rows or more: rows with no finished run
        yet (running, failed) have no costs to differ."""
        alike = {}
        for column in self.costs:
            stats = [g.costs.get(column) for g in self.groups if g.finished]
            if len(stats) > 1 and all(s and s.std == 0 and s.mean == stats[0].mean for s in stats):
                alike[column] = f"{stats[0].mean:,.{COST_DECIMALS.get(column, 1)}f}"
        return alike

    def _test_columns(self, digits: int) -> list[Column]:
        """Each row's difference from the baseline with its confidence interval (``+3.12 [-1.20, 7.40]``), its
        Holm-adjusted p-value (`` *`` below :data:`SIGNIFICANCE`) or why it has no verdict, the interval of a
        one-seed row over the test items alone (a column of its own, shown where there is one) and the seeds a
        side that would find a difference this large with 80 % power, over the confidence interval."""
        if not self.baseline:
            return []
        found = [None if g is self.baseline else self.comparisons.get(g.label) for g in self.groups]
        columns = [
            Column(
                f"Δ {self.sort} [{CONFIDENCE:.0%} CI]",
                [self._difference_cell(g, c, digits) for g, c in zip(self.groups, found)],
            ),
            Column("p", [self._p_cell(c) for c in found]),
        ]
        if any(c and c.items_only for c in found):
            columns.append(Column(TEST_SET_CI, [self._test_set_cell(c, digits) for c in found]))
        columns.append(
            Column(f"seeds for {POWER:.0%}", [Cell(power_text(c), c.seeds_for_power) if c else Cell("") for c in found])
        )
        return columns

    def _difference_cell(self, group: Group, c: Comparison | None, digits: int) -> Cell:
        """``+3.12 [-1.20, 7.40]``; a one-seed row's difference alone (its interval is the test set's)."""
        if group is self.baseline:
            return Cell("baseline", 0.0)
        if c is None:
            return Cell("")
        interval = "" if c.items_only else f" [{c.ci_low:,.{digits}f}, {c.ci_high:,.{digits}f}]"
        return Cell(f"{c.difference:+,.{digits}f}{interval}", c.difference)

    @staticmethod
    def _p_cell(c: Comparison | None) -> Cell:
        """``0.012 *``; what keeps a row from a verdict, after its p or instead of it (one seed)."""
        if c is None:
            return Cell("")
        if c.items_only:
            return Cell(c.caveat)
        shown = f"{p_text(c.p)}{' *' * (c.p < SIGNIFICANCE)}"
        return Cell(f"{shown}, {c.caveat}" if c.caveat else shown, c.p)

    @staticmethod
    def _test_set_cell(c: Comparison | None, digits: int) -> Cell:
        if c is None or not c.items_only:
            return Cell("")
        return Cell(f"[{c.ci_low:,.{digits}f}, {c.ci_high:,.{digits}f}]", c.ci_low)

    @staticmethod
    def _n(group: Group) -> str:
        """The row's seeds and, in a row pooling configurations, their number (``1 × 2 cfg``; ``4 of 3 × 2 cfg``
        where not every configuration has every seed): configurations are never counted as seeds."""
        seeds, configurations = len(group.seeds), len(group.configurations)
        if configurations < 2:
            return str(seeds)
        grid = f"{seeds} × {configurations} cfg"
        repetitions = len(group.repetitions)
        return grid if repetitions == seeds * configurations else f"{repetitions} of {grid}"

    def _significant(self, group: Group) -> bool:
        c = self.comparisons.get(group.label)
        return c is not None and c.verdict and c.p < SIGNIFICANCE

    def view(self, short: bool = False) -> View:
        """The leaderboard as shown in the terminal, Markdown and HTML: the row's name less what every row shares,
        the seeds, each metric (its best marked), the test against the baseline, costs, breakdowns, runs.
        ``short``: costs of ten thousand or more with an SI prefix (``1.27M``), as the HTML page fits them."""
        shared, alike = self._shared_settings(), self._alike_costs()
        metrics = [self._score_column(name, [g.metrics.get(name) for g in self.groups]) for name in self.metrics]
        for column in metrics:
            mark_best(column, self.directions.get(column.name, True))
        columns = [
            Column("configuration", [Cell(g.name(shared)) for g in self.groups], numeric=False),
            Column("n", [Cell(self._n(g), len(g.repetitions)) for g in self.groups]),
            *metrics,
            *self._test_columns(self._decimals([g.metrics.get(self.sort) for g in self.groups])),
            *(
                stat_column(column, [g.costs.get(column) for g in self.groups], COST_DECIMALS.get(column, 1), short)
                for column in self.costs
                if column not in alike
            ),
            *(
                self._score_column(name, [g.breakdowns.get(key) for g in self.groups])
                for name, key in zip(self.breakdown_columns(), self.breakdowns)
            ),
            Column("runs", [Cell(self._status(g)) for g in self.groups], numeric=False),
        ]
        return View(columns, {**shared, **alike}, [self._significant(g) for g in self.groups])

    # ------------------------------------------------------------------ formats
    def render(self, fmt: str = "table") -> str:
        return {"table": self.table, "markdown": self.markdown, "csv": self.csv, "json": self.json}[fmt]()

    def footnote(self) -> str:
        """How to read the table: the sort order, the significance method, rows pooling configurations, shared
        seeds, scores that are no number (left out of the statistics), the runs left out."""
        order = "higher" if self.higher_is_better else "lower"
        lines = [f"sorted by {self.sort} ({order} is better); mean ± std over the n finished seeds, each counted once"]
        if self.baseline:
            lines.append(self.method())
        for g in self.groups:
            if len(g.configurations) > 1:
                tested = "; tested with each seed once, its configurations' runs averaged" if self.baseline else ""
                lines.append(
                    f"{g.label}: pools {len(g.configurations)} configurations; "
                    f"its ± is over configurations and seeds, not seeds alone{tested}"
                )
            lines += [f"{g.label}: {note}" for note in (*g.shared_seeds, *g.left_out)]
        if self.skipped:
            lines.append(
                f"left out {len(self.skipped)} run(s) with an old or unreadable summary: "
                + ", ".join(str(run.path) for run in self.skipped)
            )
        return "\n".join(lines)

    def table(self, width: int | None = None) -> str:
        """The terminal table, no wider than ``width`` (default: the terminal's)."""
        return draw(self.view(), self.footnote(), width)

    def method(self) -> str:
        """How the rows were tested against the baseline, naming the rows of each method; what keeps a row from a
        verdict; how to read the seeds-for-power column."""
        methods: dict[str, list[str]] = {}
        for label, c in self.comparisons.items():
            methods.setdefault(c.method if c and c.verdict else "", []).append(label)
        unjudged = [label for label, c in self.comparisons.items() if c and not c.verdict]
        untested = [label for label in methods.pop("", []) if label not in unjudged]
        tested = sum(map(len, methods.values()))
        used = "; ".join(m if len(methods) == 1 else f"{m} for {', '.join(labels)}" for m, labels in methods.items())
        lines = [
            f"Δ {self.sort}: row - {self.baseline.label} ({self._seeds_of(self.baseline)}), mean over seeds with "
            f"its {CONFIDENCE:.0%} CI; p two-sided: {used or 'no test'} (each seed once; seeds' variance + "
            f"{SAMPLES} draws of the test items, Koehn, 2004; calibration: docs/guide/comparing.md), Holm-adjusted "
            f"over {tested} row{'s' * (tested != 1)} (Holm, 1979); * p < {SIGNIFICANCE}"
        ]
        comparisons = [c for c in self.comparisons.values() if c]
        if any(c.items_only for c in comparisons):
            lines.append(
                f"needs ≥ 2 seeds for a verdict: with one seed on a side its training noise is unknown; "
                f"{TEST_SET_CI} covers test-set sampling only"
            )
        if any(not c.calibrated for c in comparisons):
            lines.append(
                f"spreads differ: at 2 seeds a side with seed spreads more than {CALIBRATED_RATIO:g}× apart no test "
                f"holds its false-positive rate ({RATE_AT_10X} at 10×); add seeds"
            )
        if any(c.power_range for c in comparisons):
            lines.append(
                f"seeds for {POWER:.0%}: seeds a side that would find the row's difference with {POWER:.0%} power at "
                f"p < {SIGNIFICANCE}, from the seeds' and items' variance seen, over the differences in its "
                f"{CONFIDENCE:.0%} CI (>{MAX_SEEDS}: the CI holds 0)"
            )
        if untested:
            lines.append(f"not tested (no shared test items or item scores): {', '.join(untested)}")
        return "\n".join(lines)

    @staticmethod
    def _seeds_of(group: Group) -> str:
        """``2 seeds``, or ``2 seeds of 2 configurations`` for a row pooling them."""
        configurations = len(group.configurations)
        return f"{len(group.seeds)} seeds" + (f" of {configurations} configurations" if configurations > 1 else "")

    def _test_fields(self, group: Group) -> dict:
        return comparison_fields(self.comparisons.get(group.label))

    def markdown(self) -> str:
        view = self.view()
        lines = ["| " + " | ".join(view.header) + " |", "|" + "---|" * len(view.header)]
        lines += ["| " + " | ".join(row) + " |" for row in view.rows]
        shared = view.shared_line()
        return (f"{shared}\n\n" if shared else "") + "\n".join(lines) + "\n\n" + self.footnote()

    def csv(self) -> str:
        out = io.StringIO()
        writer = csv.writer(out)
        stat_columns = [*self.metrics, *self.costs, *self.breakdown_columns()]
        tests = list(TEST_FIELDS) if self.baseline else []
        writer.writerow(
            [
                "configuration",
                "seeds",
                "configurations",
                *(f"{c} {part}" for c in stat_columns for part in ("mean", "std")),
                *tests,
                "runs",
            ]
        )
        for g in self.groups:
            stats = [g.metrics.get(m) for m in self.metrics] + [g.costs.get(c) for c in self.costs]
            stats += [g.breakdowns.get(key) for key in self.breakdowns]
            cells = [value for s in stats for value in ((s.mean, s.std) if s else ("", ""))]
            fields = self._test_fields(g) if self.baseline else {}
            tested = ("" if v is None else v for v in fields.values())
            writer.writerow([g.label, len(g.seeds), len(g.configurations), *cells, *tested, self._status(g)])
        return out.getvalue().rstrip()

    def json(self) -> str:
        def stats(values: dict[str, Stat]) -> dict:
            return {k: {"mean": s.mean, "std": s.std, "n": s.n} for k, s in values.items() if s}

        def breakdowns(values: dict[tuple[str, str, str], Stat]) -> dict:
            """As the summaries hold them: {breakdown: {bucket: {score: statistics}}}."""
            nested: dict = {}
            for (name, bucket, score), s in values.items():
                nested.setdefault(name, {}).setdefault(bucket, {})[score] = {"mean": s.mean, "std": s.std, "n": s.n}
            return nested

        rows = [
            {
                "configuration": g.label,
                "seeds": len(g.seeds),
                "configurations": len(g.configurations),
                "runs": [str(r.path) for r in g.runs],
                "status": dict(g.statuses),
                "shared_seeds": g.shared_seeds,
                "left_out": g.left_out,
                "metrics": stats(g.metrics),
                "costs": stats(g.costs),
                "breakdowns": breakdowns(g.breakdowns),
                **self._test_fields(g),
            }
            for g in self.groups
        ]
        return json.dumps(
            {
                "sort": self.sort,
                "higher_is_better": self.higher_is_better,
                "rows": rows,
                "baseline": self.baseline.label if self.baseline else None,
                "method": self.method() if self.baseline else None,
                "left_out": [str(r.path) for r in self.skipped],
            },
            indent=2,
        )


def power_text(c: Comparison) -> str:
    """The seeds for 80 % power over the confidence interval: ``4–57``, ``>1000`` at both ends, empty untested."""
    if c.power_range is None:
        return ""
    low, high = (f">{MAX_SEEDS}" if n > MAX_SEEDS else str(n) for n in c.power_range)
    return low if low == high else f"{low}–{high}"


def comparison_fields(c: Comparison | None) -> dict:
    """What CSV and JSON carry of a row's test (:data:`TEST_FIELDS`): a one-seed row has no p and its interval
    is the test set's."""
    if c is None:
        return dict.fromkeys(TEST_FIELDS)
    one = c.items_only
    low, high = c.power_range or (None, None)
    return {
        "difference": c.difference,
        "ci_low": None if one else c.ci_low,
        "ci_high": None if one else c.ci_high,
        "p": None if one else c.p,
        "p_unadjusted": None if one else c.p_unadjusted,
        "method": c.method,
        "seeds_for_power": c.seeds_for_power,
        "seeds_for_power_low": low,
        "seeds_for_power_high": high,
        "spread_ratio": c.spread_ratio,
        "test_set_ci_low": c.ci_low if one else None,
        "test_set_ci_high": c.ci_high if one else None,
        "caveat": c.caveat or None,
    }


def _test_conditions(run: Run) -> tuple[str, str]:
    """What must be equal for two runs' scores to be comparable: the task and its test set."""
    dataset = run.summary.get("components", {}).get("dataset", {})
    return run.summary.get("task", "?"), json.dumps(dataset, sort_keys=True)


def _signatures(run: Run) -> str | None:
    """How the run's metrics were computed (sacrebleu signatures without the version); None before any test."""
    test = run.summary.get("test", {})
    if not test:
        return None
    signatures = {
        m: "|".join(p for p in str(e.get("signature")).split("|") if not p.startswith("version:"))
        for m, e in test.items()
    }
    return json.dumps(signatures, sort_keys=True)


def comparable_sets(runs: list[Run]) -> list[tuple[str, list[Run]]]:
    """Runs split into sets whose scores can be compared, each with a line saying how it differs from the first.

    Two runs are comparable when they share the task, the test set (the dataset's config) and the way each
    metric was computed (signature). Runs without test scores yet join the first set with their task and data.
    """
    sets: dict[tuple, list[Run]] = {}
    for run in sorted(runs, key=lambda r: _signatures(r) is None):
        conditions, signatures = _test_conditions(run), _signatures(run)
        key = next((k for k in sets if k[0] == conditions and signatures in (None, k[1])), (conditions, signatures))
        sets.setdefault(key, []).append(run)
    keys = list(sets)
    described = []
    for key in keys:
        if key is keys[0]:
            described.append(("", sets[key]))
            continue
        described.append((f"not comparable with the runs above, {_difference(key, keys[0])}", sets[key]))
    return described


def _difference(key: tuple, first: tuple) -> str:
    """How a set of runs differs from the first set, in words: its task, its test set, or how a metric was
    computed (:mod:`zoo.report.words`)."""
    (task, dataset), signatures = key
    (first_task, first_dataset), first_signatures = first
    if task != first_task:
        return f"task {task}, not {first_task}"
    if dataset != first_dataset:
        return f"another test set: {dataset_words(json.loads(dataset), json.loads(first_dataset))}"
    mine, theirs = json.loads(signatures or "{}"), json.loads(first_signatures or "{}")
    return f"metrics computed differently: {signature_words(mine, theirs)}"


def is_trial(run: Run) -> bool:
    """A search's trial: scored on validation only (the test split stays unseen), so it has no leaderboard row;
    its family's expected-best curve shows it (:mod:`zoo.search.report`)."""
    record = search_record(run)
    return record is not None and record.role == "trial"


def leaderboards(
    runs: list[Run],
    by: list[str] | None = None,
    sort: str | None = None,
    baseline: str | None = None,
    digits: int | None = None,
) -> list[tuple[str, Leaderboard]]:
    """One leaderboard per set of comparable runs (with a note saying how it differs); a search's trials
    are left to its curves."""
    runs = [run for run in runs if not is_trial(run)]
    usable = [run for run in runs if run.status not in ("old", "unreadable")]
    if usable and by:
        check_settings(usable, by)
    boards = [(why, Leaderboard(members, by, sort, digits=digits)) for why, members in comparable_sets(usable)]
    boards = boards or [("", Leaderboard([], by, sort, digits=digits))]
    boards[0][1].skipped = [run for run in runs if run not in usable]
    if baseline:
        _set_baseline(boards, baseline)
    return boards


def compare(
    paths: list[str | Path],
    by: list[str] | None = None,
    sort: str | None = None,
    fmt: str = "table",
    baseline: str | None = None,
    digits: int | None = None,
) -> str:
    """The leaderboards of every run under ``paths`` as text; as a table or Markdown, a search's expected best
    validation score against the number of trials and its hyperparameter importance come first."""
    runs = find_runs(paths)
    boards = leaderboards(runs, by, sort, baseline, digits)
    families = search_families(runs)
    if not families and not any(board.runs or board.skipped for _, board in boards):
        raise RunsNotFound(
            f"no runs under {', '.join(map(str, paths))} (looked for summary.json in every folder below)"
        )
    if not families and all(run.status == "unreadable" for run in runs):
        raise RunsNotFound(
            f"no run under {', '.join(map(str, paths))} has a record to compare: {runs[0].path / SUMMARY_FILE} "
            f"holds no run's summary{f' (nor do {len(runs) - 1} more)' if len(runs) > 1 else ''}; give folders of "
            "runs that zoo train wrote"
        )
    if fmt == "json":
        return json.dumps([{"note": why, **json.loads(board.render(fmt))} for why, board in boards], indent=2)
    text = "\n\n".join(
        f"{why}\n{board.render(fmt)}" if why else board.render(fmt)
        for why, board in boards
        if board.runs or board.skipped or not families
    )
    markdown = fmt == "markdown"
    search = format_search(families, markdown) + format_importance(families, markdown) if fmt in TEXT else ""
    compute = compute_section(boards) if fmt in TEXT else ""
    widths = widths_section(boards) if fmt in TEXT else ""
    return "\n".join(part for part in (search, text, compute, widths) if part)


def compute_section(boards: list[tuple[str, Leaderboard]]) -> str:
    """Who wins at which budget (:mod:`zoo.report.frontier`), for the first board's runs trained to budgets."""
    board = boards[0][1]
    found = frontier(board.runs, board.sort, board.higher_is_better) if board.sort else None
    return f"\nscore against training compute\n{found.table()}" if found else ""


def map_of(boards: list[tuple[str, Leaderboard]]):
    """The width study (:mod:`zoo.report.widths`) of every board's runs, scored by the first board's monitored
    metric: its panels are data sets, which the leaderboards keep apart."""
    metric = boards[0][1].sort if boards else None
    return width_map([run for _, board in boards for run in board.runs], metric) if metric else None


def widths_section(boards: list[tuple[str, Leaderboard]]) -> str:
    """Where each family breaks: the smallest width that reaches the threshold, per family and data set."""
    found = map_of(boards)
    return f"\nscore against width\n{found.table()}" if found else ""


def write_report(
    paths: list[str | Path],
    out: str | Path,
    by: list[str] | None = None,
    sort: str | None = None,
    baseline: str | None = None,
    digits: int | None = None,
) -> Path:
    """Write the self-contained HTML report of the runs under ``paths`` to ``out`` (atomically: a write that
    fails leaves neither a part of the page nor its temporary file)."""
    try:
        from zoo.report.html import render
    except ImportError as error:
        raise CompareError(
            f"the HTML report needs Plotly ({error}); install it with: pip install 'zoo[report]'"
        ) from None

    out = Path(out)
    check_report_file(out)
    runs = find_runs(paths)
    page = render(
        leaderboards(runs, by, sort, baseline, digits),
        f"zoo compare: {', '.join(map(str, paths))}",
        out,
        families=search_families(runs),
    )
    partial = out.with_name(f".{out.name}.tmp")
    try:
        partial.write_text(page)
        partial.replace(out)
    except OSError as error:
        raise CompareError(f"--html {out}: cannot write it ({error.strerror or error}); choose another file") from None
    finally:
        partial.unlink(missing_ok=True)
    return out


#: The endings of a file the report may replace: an earlier report, never a file of another kind.
REPORT_SUFFIXES = (".html", ".htm")
#: What marks a page zoo wrote, in its head (``assets/report.html``): only such a page is replaced.
GENERATOR_MARK = b'<meta name="generator" content="zoo'


def check_report_file(out: Path) -> None:
    """Refuse a report file that could not be written, or whose writing would replace something else, before
    any run is read: a folder, a file in a folder that does not exist, an existing file that is not a page zoo
    wrote, a file in a run still being written."""
    if out.is_dir():
        raise CompareError(f"--html {out}: that is a folder; name a file in it, e.g. --html {out / 'report.html'}")
    if not out.parent.is_dir():
        raise CompareError(
            f"--html {out}: there is no folder {out.parent}; create it first (mkdir -p {out.parent}) "
            "or name a file in a folder that exists"
        )
    if out.exists() and out.suffix.lower() not in REPORT_SUFFIXES:
        raise CompareError(
            f"--html {out}: that file exists and is not an HTML page, so the report will not replace "
            "it; name a new file, e.g. report.html"
        )
    if out.exists() and not written_by_zoo(out):
        raise CompareError(
            f"--html {out}: that page exists and zoo did not write it, so the report will not replace it; "
            "name a new file, e.g. report.html"
        )
    refuse_live_run(out, "write the report outside it")


def written_by_zoo(page: Path) -> bool:
    """Whether ``page`` is a report zoo wrote (:data:`GENERATOR_MARK` in its first kilobytes)."""
    try:
        with page.open("rb") as opened:
            return GENERATOR_MARK in opened.read(4096)
    except OSError:
        return False


def has_settings(run: Run, written: str) -> bool:
    """Whether ``run`` has every ``key=value`` setting ``written`` names (space-separated)."""
    pairs = [pair.partition("=") for pair in written.split()]
    return bool(pairs) and all(sep and str(run.settings.get(key)) == value for key, sep, value in pairs)


def typed(group: Group) -> str:
    """How ``--baseline`` names ``group`` on a command line: its label where that is settings, else its encoder."""
    encoder = group.runs[0].settings.get("encoder") if group.runs else None
    return group.label if group.settings or encoder is None else f"encoder={encoder}"


def _set_baseline(boards: list[tuple[str, Leaderboard]], label: str) -> None:
    """Test every board holding exactly one configuration named ``label`` against it."""
    found = [(board, board.find(label)) for _, board in boards]
    if not any(len(groups) == 1 for _, groups in found):
        groups = [g for _, board in boards for g in board.groups]
        labels = [typed(g) for g in groups]
        # a label in words ("gru encoder, rnn decoder") is found by any part of it, so a typo is matched to the parts
        words = {part.split()[0] for g in groups for part in g.label.split(", ") if part.split()}
        raise CompareError(
            with_hint(
                f"--baseline {label!r} names no single configuration",
                did_you_mean(label, [*labels, *sorted(words)]),
                f"choose one of: {'; '.join(labels)}",
            )
        )
    for board, groups in found:
        if len(groups) == 1:
            board.test_against(groups[0])
