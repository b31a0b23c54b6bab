"""Is a configuration's difference from a baseline more than noise? A t-test over seeds and test items.

A difference of mean scores over seeds varies for two reasons: training noise
(another seed, another model) and test-set sampling (other items, other scores).
The test estimates both (:func:`two_level`):

- the seeds' variance of each side's score, ``s²/n``, as Welch's test does;
- what the test items add beyond it: the variance of the difference over
  bootstrap draws of the items (Koehn, 2004), shared by every run because every
  run was scored on the same items, less the part of it that is each run's own
  item noise (already inside the seeds' variance).

The difference over its standard error is read against Student's t with the
average of the Welch–Satterthwaite degrees of freedom (Welch, 1947; Satterthwaite,
1946) and the pooled ``n_a + n_b - 2``: chosen by simulation of null comparisons
(``benchmarks/calibration.py``, docs/results.md), where Welch–Satterthwaite alone
rejects 2.3 % at 2 seeds a side and the pooled degrees of freedom too often when
the two sides' seed spreads differ. Resampling 2-3 seeds with replacement (a
hierarchical bootstrap) understates their spread and rejected 14-28 %.

With one seed on a side the seeds' variance is unknown: the test is then over the
test items only and says so. The p-values of the rows tested against one baseline
are adjusted for their number (Holm, 1979).

Everything random is drawn from a fixed seed over items sorted by id and runs
sorted by seed and path, so the same runs give the same p-value in every process.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats as distributions

from zoo.registry import build, names
from zoo.report.runs import Run
from zoo.run.layout import TEST_ITEMS_FILE

SAMPLES = 1000  # bootstrap draws of the test items
SEED = 12345
CONFIDENCE = 0.95
POWER = 0.8
MAX_SEEDS = 1000  # the most seeds a side :func:`seeds_for_power` looks for
TWO_LEVEL = "t-test over seeds and test items"
ITEMS_ONLY = "test items only (one seed on a side: its seed spread is unknown)"


@dataclass
class Comparison:
    """A configuration against the baseline on one metric: the difference (system - baseline) of the mean over
    seeds, its confidence interval, the two-sided p-value (``p``: Holm-adjusted when several rows were tested,
    see :func:`holm`), how it was tested and how many seeds a side would find a difference this large with
    80 % power (None with one seed on a side; ``MAX_SEEDS + 1``: more than that)."""

    difference: float
    ci_low: float
    ci_high: float
    p_unadjusted: float
    method: str
    seeds: tuple[int, int]  # baseline's, system's
    seeds_for_power: int | None = None
    p: float = field(init=False)

    def __post_init__(self) -> None:
        self.p = self.p_unadjusted  # one row tested: nothing to adjust (:func:`holm` adjusts several)

    @property
    def items_only(self) -> bool:
        """Whether the p-value covers test-set sampling only (one seed on a side)."""
        return min(self.seeds) < 2


def read_items(run: Run) -> dict[str, dict]:
    """A finished run's test items by id (empty when the run wrote none)."""
    path = Path(run.path) / TEST_ITEMS_FILE
    if not path.is_file():
        return {}
    rows = (json.loads(line) for line in path.read_text().splitlines() if line.strip())
    return {str(row["id"]): row for row in rows}


class Scorer:
    """One metric as sufficient statistics per item, summed over any draw of items into a score.

    For a metric sacrebleu provides, its own statistics (n-gram matches for BLEU, character n-grams for chrF),
    so each draw recomputes the corpus score exactly; otherwise the per-item scores, averaged.
    """

    def __init__(self, metric: str, options: dict) -> None:
        self.metric = metric
        self.sacrebleu: Any = build("metric", options).sacrebleu_metric() if metric in names("metric") else None
        self._stats: dict[Path, dict[str, np.ndarray] | None] = {}

    def item_stats(self, run: Run) -> dict[str, np.ndarray] | None:
        """The run's statistics by item id (cached per run); None when it has no items or no scores for the metric."""
        key = Path(run.path).resolve()
        if key not in self._stats:
            self._stats[key] = self._read(run)
        return self._stats[key]

    def _read(self, run: Run) -> dict[str, np.ndarray] | None:
        items = read_items(run)
        ids = sorted(items)
        if not ids:
            return None
        if self.sacrebleu is not None:
            from zoo.metrics import reference_streams

            stats = self.sacrebleu._extract_corpus_statistics(
                [items[i]["hypothesis"] for i in ids], reference_streams([items[i]["references"] for i in ids])
            )
            return dict(zip(ids, np.asarray(stats, dtype=float)))
        scores = [items[i].get("scores", {}).get(self.metric) for i in ids]
        if any(score is None for score in scores):
            return None
        return {i: np.array([score], dtype=float) for i, score in zip(ids, scores)}

    def scores(self, sums: np.ndarray, items: int) -> np.ndarray:
        """One score per row of summed statistics (``items`` drawn per row)."""
        if self.sacrebleu is not None:
            return np.array([self.sacrebleu._compute_score_from_stats(row).score for row in sums])
        return sums[:, 0] / items


def _metric_options(run: Run, metric: str) -> dict:
    """The options the run computed ``metric`` with (``metrics=[{name: chrf, word_order: 2}]``), else its defaults."""
    for entry in run.config.get("metrics") or []:
        options = {"name": entry} if isinstance(entry, str) else dict(entry)
        if options.get("name") == metric:
            return options
    return {"name": metric}


def scorer_for(metric: str, runs: list[Run]) -> Scorer:
    """The scorer for ``metric`` as the first of ``runs`` computed it (comparable runs share how)."""
    return Scorer(metric, _metric_options(runs[0], metric) if runs else {"name": metric})


def item_draws(items: int, samples: int = SAMPLES) -> np.ndarray:
    """(samples + 1) x items weights: all items once, then ``samples`` bootstrap draws (how often each item is
    drawn), from the fixed seed."""
    rng = np.random.default_rng(SEED)
    picks = rng.integers(0, items, size=(samples, items)) + items * np.arange(samples)[:, None]
    counts = np.bincount(picks.ravel(), minlength=samples * items).reshape(samples, items)
    return np.concatenate([np.ones((1, items)), counts]).astype(float)


def replicates(
    seeds: list[list[np.ndarray]], weights: np.ndarray, score: Callable[[np.ndarray, int], np.ndarray]
) -> np.ndarray:
    """seeds x (1 + draws) scores: each seed's score on all items, then on each draw of :func:`item_draws`.
    A seed is a list of runs (several when runs share a seed: their scores are averaged), each run an
    (items x statistics) array over the same items."""
    items = weights.shape[1]
    return np.stack([np.mean([score(weights @ run, items) for run in runs], axis=0) for runs in seeds])


@dataclass
class Estimate:
    """The difference of means (system - baseline), its variance and degrees of freedom, the seeds' variance
    of one seed's score (pooled over the sides) and what the test items add to the difference's variance.
    Arrays of any leading shape: :func:`two_level` tests many comparisons at once."""

    difference: np.ndarray
    variance: np.ndarray
    df: np.ndarray
    seed_variance: np.ndarray
    item_variance: np.ndarray

    def p(self) -> np.ndarray:
        """Two-sided p-value of the difference against Student's t (1 for no difference, 0 for one without
        variance)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.nan_to_num(np.abs(self.difference) / np.sqrt(self.variance), nan=0.0)
        return 2 * distributions.t.sf(t, self.df)

    def interval(self, confidence: float = CONFIDENCE) -> tuple[np.ndarray, np.ndarray]:
        half = distributions.t.ppf(0.5 + confidence / 2, self.df) * np.sqrt(self.variance)
        return self.difference - half, self.difference + half


def _own_item_noise(side: np.ndarray) -> np.ndarray:
    """The variance that each run's own item noise gives the side's mean score: the spread over draws of each
    seed's deviation from the side's mean, n / (n - 1) times that of one seed, over n seeds."""
    n = side.shape[-2]
    deviations = side[..., 1:] - side[..., 1:].mean(axis=-2, keepdims=True)
    return deviations.var(axis=-1, ddof=1).sum(axis=-1) / (n * (n - 1))


def two_level(baseline: np.ndarray, system: np.ndarray, items: int) -> Estimate:
    """The test of ``system`` against ``baseline``, each ``[...,] seeds x (1 + draws)`` (:func:`replicates`) over
    the same ``items`` test items.

    Variance = s_b²/n_b + s_s²/n_s (the seeds, each side's own) + what the draws of test items add beyond the
    runs' own item noise (never below 0). Degrees of freedom: the Welch–Satterthwaite combination of the three
    terms (the items' with items - 1), averaged with the pooled seeds' n_b + n_s - 2 plus the same item share.
    With one seed on a side, the variance over draws alone, with items - 1 degrees of freedom.
    """
    n_b, n_s = baseline.shape[-2], system.shape[-2]
    difference = system[..., 0].mean(axis=-1) - baseline[..., 0].mean(axis=-1)
    over_draws = (system[..., 1:].mean(axis=-2) - baseline[..., 1:].mean(axis=-2)).var(axis=-1, ddof=1)
    if min(n_b, n_s) < 2:
        nothing = np.zeros_like(difference)
        return Estimate(difference, over_draws, np.full_like(difference, items - 1.0), nothing, over_draws)
    v_b = baseline[..., 0].var(axis=-1, ddof=1) / n_b
    v_s = system[..., 0].var(axis=-1, ddof=1) / n_s
    extra = np.maximum(0.0, over_draws - _own_item_noise(baseline) - _own_item_noise(system))
    variance = v_b + v_s + extra
    item_share = extra**2 / (items - 1)
    with np.errstate(divide="ignore", invalid="ignore"):  # no variance at all: any df, the difference is exact
        welch = np.nan_to_num(variance**2 / (v_b**2 / (n_b - 1) + v_s**2 / (n_s - 1) + item_share), nan=np.inf)
        pooled = np.nan_to_num(variance**2 / ((v_b + v_s) ** 2 / (n_b + n_s - 2) + item_share), nan=np.inf)
    seed_variance = (v_b * n_b * (n_b - 1) + v_s * n_s * (n_s - 1)) / (n_b + n_s - 2)
    return Estimate(difference, variance, (welch + pooled) / 2, seed_variance, extra)


def seeds_for_power(estimate: Estimate, power: float = POWER, alpha: float = 0.05) -> int:
    """How many seeds a side a two-sided test at ``alpha`` needs to find the estimate's difference with
    ``power``, given its seeds' and items' variances (Student's noncentral t; ``MAX_SEEDS + 1``: more)."""
    effect = abs(float(estimate.difference))
    for n in range(2, MAX_SEEDS + 1):
        se = np.sqrt(2 * float(estimate.seed_variance) / n + float(estimate.item_variance))
        if se == 0:
            return n
        df = 2 * n - 2
        critical = distributions.t.ppf(1 - alpha / 2, df)
        ncp = effect / se
        if distributions.nct.sf(critical, df, ncp) + distributions.nct.cdf(-critical, df, ncp) >= power:
            return n
    return MAX_SEEDS + 1


def compare_to_baseline(scorer: Scorer, baseline: list[list[Run]], system: list[list[Run]]) -> Comparison | None:
    """Test ``system`` against ``baseline``, each given as repetitions (the runs of one configuration and seed;
    see :attr:`zoo.report.aggregate.Group.repetitions`), on the test items every run has; None when they share
    none."""
    sides = [
        [[run for run in runs if scorer.item_stats(run) is not None] for runs in side] for side in (baseline, system)
    ]
    sides = [[runs for runs in side if runs] for side in sides]
    if not all(sides):
        return None
    ids = sorted(set.intersection(*(set(scorer.item_stats(run)) for side in sides for runs in side for run in runs)))
    if not ids:
        return None
    weights = item_draws(len(ids))
    aligned = [
        replicates(
            [[np.stack([scorer.item_stats(run)[i] for i in ids]) for run in runs] for runs in side],
            weights,
            scorer.scores,
        )
        for side in sides
    ]
    estimate = two_level(aligned[0], aligned[1], len(ids))
    low, high = estimate.interval()
    seeds = (len(aligned[0]), len(aligned[1]))
    comparison = Comparison(
        float(estimate.difference),
        float(low),
        float(high),
        float(estimate.p()),
        ITEMS_ONLY if min(seeds) < 2 else TWO_LEVEL,
        seeds,
    )
    if not comparison.items_only:
        comparison.seeds_for_power = seeds_for_power(estimate)
    return comparison


def p_text(p: float) -> str:
    """A p-value as a table shows it: three decimals, ``<0.001`` below them (never a p of 0)."""
    return "<0.001" if p < 0.0005 else f"{p:.3f}"


def holm(p_values: list[float]) -> list[float]:
    """Holm's (1979) step-down adjustment for testing several rows against one baseline: the k-th smallest of m
    p-values is multiplied by m - k + 1, and adjusted values never fall below a smaller p's."""
    adjusted, running = [0.0] * len(p_values), 0.0
    for rank, k in enumerate(sorted(range(len(p_values)), key=lambda k: p_values[k])):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[k]))
        adjusted[k] = running
    return adjusted
