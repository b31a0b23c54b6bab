"""Does ``zoo compare``'s test reject as often as it claims? Null comparisons simulated, counted.

Each simulated run scores ``ITEMS`` test items: score = item difficulty (shared by every run, as real
test items are hard or easy for every model) + the seed's offset (training noise: SD ``SEED_SD`` on one side,
``ratio`` times that on the other) + the run's own noise on each item (``ITEM_SD``, low or high against the
seeds' spread). Both sides of a null comparison are the same configuration, so every verdict (p < 0.05 in a row
the test holds at, :attr:`zoo.report.stats.Comparison.verdict`) is a false positive; with ``effect`` added to one
side the same count is the power.

The grid (:data:`CELLS`): 2, 3, 5 or 10 seeds a side, every pair, the spread of the side with fewer seeds 1/10,
1/3, 1, 3 or 10 times the other's (at equal counts 1, 3, 10: the test is symmetric in its sides, so a cell and its
mirror are one). tests/unit/test_calibration.py requires each cell's false-positive rate in the range
:func:`required` gives it; ``python benchmarks/calibration.py`` prints the table docs/guide/comparing.md holds.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from zoo.report.stats import BEHRENS_FISHER, CALIBRATED_RATIO, Estimate, item_draws, method_for, two_level

ITEMS = 100
SEED_SD = 2.0
DIFFICULTY_SD = 20.0
#: The per-item noise of a run: low makes the seeds' spread dominate a run's score (2.0 against 0.3),
#: high the test items (2.0 against 4.0).
ITEM_SD = {"low": 3.0, "high": 40.0}
SEEDS = (2, 3, 5, 10)
#: The seed spread of the side with fewer seeds over the other side's.
RATIOS = (0.1, 1 / 3, 1.0, 3.0, 10.0)
#: (fewer seeds, more seeds, spread ratio) of every distinct cell.
CELLS = [
    (fewer, more, ratio)
    for k, fewer in enumerate(SEEDS)
    for more in SEEDS[k:]
    for ratio in RATIOS
    if fewer < more or ratio >= 1
]
COMPARISONS = 3000
#: Bootstrap draws of the test items per simulated run (zoo compare draws 1,000; the item term needs fewer here).
DRAWS = 100
ALPHA = 0.05
BATCH = 500


def required(fewer: int, more: int, ratio: float) -> tuple[float, float] | None:
    """The range a cell's false-positive rate must fall in: 3-7 % for a t-test at spreads at most 3x apart; under
    5 % (6 % with the simulation's noise) at any spreads for the Behrens–Fisher test; None where nothing is
    promised (a t-test at 10x: at 2 seeds a side the row says so)."""
    if method_for(fewer, more) == BEHRENS_FISHER:
        return 0.0, 0.06
    return (0.03, 0.07) if max(ratio, 1 / ratio) <= CALIBRATED_RATIO + 1e-9 else None


def comparisons(
    fewer: int,
    more: int,
    ratio: float,
    item_sd: float,
    effect: float = 0.0,
    count: int = COMPARISONS,
    seed: int = 0,
    samples: int = DRAWS,
) -> Iterator[Estimate]:
    """The tests of ``count`` simulated comparisons, in batches: the baseline has ``fewer`` seeds of spread
    ``ratio * SEED_SD``, the system ``more`` seeds of spread ``SEED_SD`` and is better by ``effect``; each run
    scored on all items and on ``samples`` draws of them (what :func:`zoo.report.stats.replicates` gives
    ``zoo compare``)."""
    rng = np.random.default_rng(seed)
    weights = (item_draws(ITEMS, samples).T / ITEMS).astype(np.float32)  # a draw's score: its items' mean
    for start in range(0, count, BATCH):
        k = min(BATCH, count - start)
        difficulty = DIFFICULTY_SD * rng.standard_normal((k, 1, ITEMS), dtype=np.float32)
        baseline = _scores(rng, difficulty, fewer, ratio * SEED_SD, item_sd) @ weights
        system = _scores(rng, difficulty, more, SEED_SD, item_sd) + effect
        yield two_level(baseline, system @ weights, ITEMS)


def _scores(rng: np.random.Generator, difficulty: np.ndarray, seeds: int, seed_sd: float, item_sd: float):
    """batch x seeds x items scores of one side: shared difficulty, each seed's offset, each run's item noise."""
    batch = difficulty.shape[0]
    offsets = seed_sd * rng.standard_normal((batch, seeds, 1), dtype=np.float32)
    return difficulty + offsets + item_sd * rng.standard_normal((batch, seeds, ITEMS), dtype=np.float32)


def verdicts(estimates: Iterator[Estimate]) -> np.ndarray:
    """Whether each comparison would be starred: p < ``ALPHA``."""
    return np.concatenate([e.p() < ALPHA for e in estimates])


def rate(fewer: int, more: int, ratio: float, noise: str, effect: float = 0.0, **options) -> float:
    """The share of verdicts in one cell: false positives under the null, else the power at ``effect``."""
    return float(verdicts(comparisons(fewer, more, ratio, ITEM_SD[noise], effect, **options)).mean())
