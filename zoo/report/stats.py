"""Is a configuration's difference from a baseline more than noise? A test over seeds and test items.

A difference of mean scores over seeds varies for two reasons: training noise
(another seed, another model) and test-set sampling (other items, other scores).
The test estimates both (:func:`two_level`):

- the seeds' variance of each side's score, ``s²/n``, as Welch's test does;
- what the test items add beyond it: the variance of the difference over
  bootstrap draws of the items (Koehn, 2004), shared by every run because every
  run was scored on the same items, less the part of it that is each run's own
  item noise (already inside the seeds' variance).

The seed is the unit: runs that share a seed (of one configuration, or of several
pooled by ``zoo compare --by``) are averaged into one score before anything else.
Which distribution the difference is read against depends on the seed counts, each
choice the one that held its false-positive rate in a simulation of null comparisons
over 2-10 seeds a side and seed spreads 1/10-10x apart (``benchmarks/calibration.py``,
docs/guide/comparing.md):

- Welch–Satterthwaite: Student's t with the Welch–Satterthwaite degrees of freedom of
  the three terms (Welch, 1947; Satterthwaite, 1946), at equal counts of 3 or more
  and where both sides have 4 seeds or more;
- 2 seeds a side: the same t, its degrees of freedom averaged with the pooled
  ``n_b + n_s - 2`` (Welch–Satterthwaite alone rejected 2.8 %: its 1-2 degrees of
  freedom understate);
- 2 or 3 seeds against more: the Behrens–Fisher test (Fisher, 1935; the posterior
  under Jeffreys' prior, Box & Tiao, 1973, §2.5), known to be conservative (Fisher,
  1939; Robinson, 1976): its rate stayed at or under 5.0 % at every ratio of spreads
  simulated. Welch–Satterthwaite reached 9-12 % at 2 v 5 and 2 v 10, 7.6 % at 2 v 3 and
  6.9 % at 3 v 10 where the smaller side is the noisier: a variance from 2-3 seeds is
  near 0 often enough to make a difference look sure. The price: the test is
  conservative there (0.5-4.4 %), and seeds added to the larger side alone buy little.

At 2 seeds a side with spreads more than 3x apart no test held its rate: the row says
so. With one seed on a side the seeds' variance is unknown: the test is then over the
test items only and gives no verdict. The p-values of the rows tested against one
baseline are adjusted for their number (Holm, 1979).

Everything random is drawn from a fixed seed over items sorted by id and runs
sorted by seed and path, so the same runs give the same p-value in every process.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats as distributions
from scipy.special import ndtr

from zoo.registry import build, names
from zoo.registry.discovery import discover
from zoo.report.runs import Run
from zoo.run.layout import TEST_ITEMS_FILE

SAMPLES = 1000  # bootstrap draws of the test items
SEED = 12345
CONFIDENCE = 0.95
POWER = 0.8
MAX_SEEDS = 1000  # the most seeds a side :func:`seeds_for_power` looks for
QUADRATURE = 24  # Gauss–Legendre nodes per side of the Behrens–Fisher tail
#: The seed spreads' ratio up to which every test was calibrated; beyond it, at 2 seeds a side, none was
#: (docs/guide/comparing.md, "Calibration").
CALIBRATED_RATIO = 3.0
#: At most this many seeds on a side, against more on the other: the Behrens–Fisher test.
FEW_SEEDS = 3
TWO_A_SIDE = "t-test over seeds and test items (2 seeds a side)"
WELCH = "Welch–Satterthwaite t-test over seeds and test items"
BEHRENS_FISHER = "Behrens–Fisher test over seeds and test items"
ITEMS_ONLY = "test items only (one seed on a side: its seed spread is unknown)"


@dataclass
class Comparison:
    """A configuration against the baseline on one metric: the difference (system - baseline) of the mean over
    seeds, its confidence interval, the two-sided p-value (``p``: Holm-adjusted when several rows were tested,
    see :func:`holm`), how it was tested and, with seeds on both sides, how many seeds a side would find a
    difference this large with 80 % power (``power_range``: over the interval's differences; ``MAX_SEEDS + 1``:
    more than that), the ratio of the two sides' seed spreads and whether the test holds its rate at it."""

    difference: float
    ci_low: float
    ci_high: float
    p_unadjusted: float
    method: str
    seeds: tuple[int, int]  # baseline's, system's
    seeds_for_power: int | None = None
    power_range: tuple[int, int] | None = None
    spread_ratio: float | None = None  # None: one side has no spread
    calibrated: bool = True
    p: float = field(init=False)

    def __post_init__(self) -> None:
        self.p = self.p_unadjusted  # one row tested: nothing to adjust (:func:`holm` adjusts several)

    @property
    def items_only(self) -> bool:
        """Whether the p-value covers test-set sampling only (one seed on a side)."""
        return min(self.seeds) < 2

    @property
    def verdict(self) -> bool:
        """Whether the test may call the difference more than noise: seeds on both sides (where the spreads are
        beyond those it holds its rate at, the row says so, :attr:`caveat`)."""
        return not self.items_only

    @property
    def caveat(self) -> str:
        """What the row's verdict lacks, in words: a second seed, or seeds enough to trust spreads this far apart
        ("" for neither)."""
        if self.items_only:
            return "needs ≥ 2 seeds for a verdict"
        if not self.calibrated:
            return f"spreads differ {_times(self.spread_ratio)}: add seeds"
        return ""


def _times(ratio: float | None) -> str:
    """``10×``; ``>100×`` for a spread against none."""
    return ">100×" if ratio is None or ratio > 100 else f"{ratio:.0f}×"


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
        discover()  # the metric plugins, which a caller in Python (not zoo compare) may not have imported yet
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


def method_for(baseline_seeds: int, system_seeds: int) -> str:
    """The test for these seed counts (module docstring): chosen by simulation, ``benchmarks/calibration.py``."""
    fewer = min(baseline_seeds, system_seeds)
    if fewer < 2:
        return ITEMS_ONLY
    if baseline_seeds == system_seeds == 2:
        return TWO_A_SIDE
    return BEHRENS_FISHER if fewer <= FEW_SEEDS and baseline_seeds != system_seeds else WELCH


def _over(h: np.ndarray, sd: np.ndarray) -> np.ndarray:
    """h / sd, where sd = 0 reads as an exact difference: infinitely far for h > 0, no distance for h = 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(sd > 0, h / np.where(sd > 0, sd, 1.0), np.where(h > 0, np.inf, 0.0))


@cache
def _chi2_nodes(df: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss–Legendre nodes over the probabilities of chi² / df, and their weights: a side's variance is its
    estimate over one of them. In probability the integrand is smooth where chi² itself has a pole at 0."""
    probabilities, weights = np.polynomial.legendre.leggauss(QUADRATURE)
    return distributions.chi2.ppf((probabilities + 1) / 2, df) / df, weights / 2


@dataclass
class Estimate:
    """The difference of means (system - baseline), each side's seeds' variance of its mean (s²/n), what the test
    items add to the difference's variance, the seed counts and the number of items. Arrays of any leading shape:
    :func:`two_level` tests many comparisons at once."""

    difference: np.ndarray
    seed_variances: tuple[np.ndarray, np.ndarray]
    item_variance: np.ndarray
    counts: tuple[int, int]
    items: int

    @property
    def method(self) -> str:
        return method_for(*self.counts)

    @property
    def variance(self) -> np.ndarray:
        return self.seed_variances[0] + self.seed_variances[1] + self.item_variance

    @property
    def df(self) -> np.ndarray:
        """Student's t degrees of freedom: the Welch–Satterthwaite combination of the seeds' and the items' terms
        (the items' with items - 1); at 2 seeds a side averaged with the pooled seeds' n_b + n_s - 2."""
        (v_b, v_s), (n_b, n_s) = self.seed_variances, self.counts
        if self.method == ITEMS_ONLY:
            return np.full_like(self.difference, self.items - 1.0)
        item_share = self.item_variance**2 / (self.items - 1)
        with np.errstate(divide="ignore", invalid="ignore"):  # no variance at all: any df, the difference is exact
            welch = np.nan_to_num(self.variance**2 / (v_b**2 / (n_b - 1) + v_s**2 / (n_s - 1) + item_share), nan=np.inf)
            pooled = np.nan_to_num(self.variance**2 / ((v_b + v_s) ** 2 / (n_b + n_s - 2) + item_share), nan=np.inf)
        return (welch + pooled) / 2 if self.method == TWO_A_SIDE else welch

    def tail(self, h: np.ndarray) -> np.ndarray:
        """The chance that the difference lies ``h`` or more from its expectation, under the method's distribution."""
        if self.method != BEHRENS_FISHER:
            return 2 * distributions.t.sf(_over(h, np.sqrt(self.variance)), self.df)
        return self._behrens_fisher_tail(np.asarray(h))

    def _behrens_fisher_tail(self, h: np.ndarray) -> np.ndarray:
        """Behrens–Fisher: each side's true variance is its estimate times df / chi²(df) (Jeffreys' prior), the
        items' taken as known; the normal tail integrated over both sides' chi² (:func:`_chi2_nodes`)."""
        (v_b, v_s), (n_b, n_s) = self.seed_variances, self.counts
        (u_b, w_b), (u_s, w_s) = _chi2_nodes(n_b - 1), _chi2_nodes(n_s - 1)
        spread = v_b[..., None, None] / u_b[:, None] + v_s[..., None, None] / u_s + self.item_variance[..., None, None]
        tails = 2 * ndtr(-_over(h[..., None, None], np.sqrt(spread)))
        return (tails * w_b[:, None] * w_s).sum(axis=(-2, -1))

    def p(self) -> np.ndarray:
        """Two-sided p-value of the difference (1 for no difference, 0 for one without variance)."""
        return self.tail(np.abs(self.difference))

    def interval(self, confidence: float = CONFIDENCE) -> tuple[np.ndarray, np.ndarray]:
        """The difference ± the distance its tail puts at 1 - ``confidence``."""
        if self.method != BEHRENS_FISHER:
            half = distributions.t.ppf(0.5 + confidence / 2, self.df) * np.sqrt(self.variance)
        else:
            half = self._bisect_tail(1 - confidence)
        return self.difference - half, self.difference + half

    def _bisect_tail(self, level: float, steps: int = 60) -> np.ndarray:
        """The distance at which the Behrens–Fisher tail falls to ``level``, by bisection."""
        (v_b, v_s), (n_b, n_s) = self.seed_variances, self.counts
        widest = v_b / _chi2_nodes(n_b - 1)[0][0] + v_s / _chi2_nodes(n_s - 1)[0][0] + self.item_variance
        low, high = np.zeros_like(self.difference), 10 * np.sqrt(widest)
        for _ in range(steps):
            middle = (low + high) / 2
            beyond = self._behrens_fisher_tail(middle) > level
            low, high = np.where(beyond, middle, low), np.where(beyond, high, middle)
        return high

    @property
    def seed_variance(self) -> np.ndarray:
        """One seed's variance, pooled over the sides (what another seed would add)."""
        (v_b, v_s), (n_b, n_s) = self.seed_variances, self.counts
        if self.method == ITEMS_ONLY:
            return np.zeros_like(self.difference)
        return (v_b * n_b * (n_b - 1) + v_s * n_s * (n_s - 1)) / (n_b + n_s - 2)

    @property
    def spread_ratio(self) -> np.ndarray:
        """The larger side's seed spread (standard deviation of one seed's score) over the smaller's; 1 for none."""
        spreads = [v * n for v, n in zip(self.seed_variances, self.counts)]
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.sqrt(np.maximum(*spreads) / np.minimum(*spreads))
        return np.where(np.isnan(ratio), 1.0, ratio)

    @property
    def calibrated(self) -> np.ndarray:
        """False where the simulation found no test holding its rate: 2 seeds a side, spreads more than
        :data:`CALIBRATED_RATIO` apart."""
        return ~((self.method == TWO_A_SIDE) & (self.spread_ratio > CALIBRATED_RATIO))


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
    runs' own item noise (never below 0). With one seed on a side, the variance over draws alone.
    """
    counts = (baseline.shape[-2], system.shape[-2])
    difference = system[..., 0].mean(axis=-1) - baseline[..., 0].mean(axis=-1)
    over_draws = (system[..., 1:].mean(axis=-2) - baseline[..., 1:].mean(axis=-2)).var(axis=-1, ddof=1)
    if min(counts) < 2:
        nothing = np.zeros_like(difference)
        return Estimate(difference, (nothing, nothing), over_draws, counts, items)
    seeds = tuple(side[..., 0].var(axis=-1, ddof=1) / n for side, n in zip((baseline, system), counts))
    extra = np.maximum(0.0, over_draws - _own_item_noise(baseline) - _own_item_noise(system))
    return Estimate(difference, seeds, extra, counts, items)


def seeds_for_power(
    effect: float, seed_variance: float, item_variance: float, power: float = POWER, alpha: float = 0.05
) -> int:
    """How many seeds a side a two-sided t-test at ``alpha`` needs to find a difference of ``effect`` with
    ``power``, given one seed's variance and the items' (Student's noncentral t; ``MAX_SEEDS + 1``: more)."""
    n = np.arange(2, MAX_SEEDS + 1)
    df = 2 * n - 2
    critical = distributions.t.ppf(1 - alpha / 2, df)
    ncp = _over(np.full(n.shape, abs(effect)), np.sqrt(2 * seed_variance / n + item_variance))
    exact = np.isinf(ncp)  # a difference without variance: any test finds it
    ncp = np.where(exact, 0.0, ncp)
    reached = distributions.nct.sf(critical, df, ncp) + distributions.nct.cdf(-critical, df, ncp)
    normal = distributions.norm.sf(critical - ncp) + distributions.norm.cdf(-critical - ncp)
    reached = np.where(np.isnan(reached), normal, reached)  # scipy's noncentral t gives nan far out (ncp ~10-60)
    found = exact | (reached >= power)
    return int(n[found.argmax()]) if found.any() else MAX_SEEDS + 1


def power_range(estimate: Estimate, low: float, high: float) -> tuple[int, int]:
    """Seeds a side for 80 % power over the differences in [``low``, ``high``] (the confidence interval): from the
    end farthest from 0 to the nearest (``MAX_SEEDS + 1``, more than that, when the interval holds 0)."""
    variances = float(estimate.seed_variance), float(estimate.item_variance)
    near = 0.0 if low <= 0 <= high else min(abs(low), abs(high))
    return seeds_for_power(max(abs(low), abs(high)), *variances), seeds_for_power(near, *variances)


def compare_to_baseline(scorer: Scorer, baseline: list[list[Run]], system: list[list[Run]]) -> Comparison | None:
    """Test ``system`` against ``baseline``, each given as seeds (the runs of one seed, averaged: see
    :attr:`zoo.report.aggregate.Group.clusters`), on the test items every run has; None when they share none."""
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
    return comparison_of(two_level(aligned[0], aligned[1], len(ids)))


def comparison_of(estimate: Estimate) -> Comparison:
    """What a row shows of one test: with seeds on both sides, also the seeds for power and the spreads' ratio."""
    low, high = (float(end) for end in estimate.interval())
    found = Comparison(float(estimate.difference), low, high, float(estimate.p()), estimate.method, estimate.counts)
    if not found.items_only:
        found.seeds_for_power = seeds_for_power(
            found.difference, float(estimate.seed_variance), float(estimate.item_variance)
        )
        found.power_range = power_range(estimate, low, high)
        ratio = float(estimate.spread_ratio)
        found.spread_ratio = ratio if np.isfinite(ratio) else None  # a side without spread: JSON has no inf
        found.calibrated = bool(estimate.calibrated)
    return found


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
