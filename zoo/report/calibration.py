"""Does ``zoo compare``'s test reject as often as it claims? Null comparisons simulated, counted.

Each simulated run scores ``ITEMS`` test items: score = 60 + item difficulty (shared by every run, as real
test items are hard or easy for every model) + the seed's offset (training noise, ``SEED_SD``) + the run's own
noise on each item (``ITEM_SD``, low or high against the seeds' spread). Both sides of a null comparison are the
same configuration, so every p < 0.05 is a false positive; with ``effect`` added to one side the same count is
the power. The tests of the project require the false-positive rate in [3 %, 7 %] in every cell
(tests/unit/test_calibration.py); ``python -m zoo.report.calibration`` prints the table docs/results.md holds.
"""

from __future__ import annotations

import numpy as np

from zoo.report.stats import item_draws, two_level

ITEMS = 100
SEED_SD = 2.0
DIFFICULTY_SD = 20.0
#: The per-item noise of a run: low makes the seeds' spread dominate a run's score (2.0 against 0.3),
#: high the test items (2.0 against 4.0).
ITEM_SD = {"low": 3.0, "high": 40.0}
SEEDS = (2, 3, 5, 10)
COMPARISONS = 2000
ALPHA = 0.05


def comparisons(seeds: int, item_sd: float, effect: float = 0.0, count: int = COMPARISONS, seed: int = 0):
    """Simulated comparisons of ``seeds`` seeds a side, the system better by ``effect``, in batches: (baseline,
    system) arrays of batch x seeds x (1 + draws) scores, on all items and on each draw of them (what
    :func:`zoo.report.stats.replicates` gives ``zoo compare``)."""
    rng = np.random.default_rng(seed)
    weights = item_draws(ITEMS)
    for start in range(0, count, 250):
        k = min(250, count - start)
        difficulty = rng.normal(0, DIFFICULTY_SD, size=(k, 1, ITEMS))
        yield tuple(
            _scores(rng, difficulty, seeds, item_sd, shift) @ weights.T / ITEMS  # additive: the mean over items
            for shift in (0.0, effect)
        )


def _scores(rng: np.random.Generator, difficulty: np.ndarray, seeds: int, item_sd: float, shift: float):
    """batch x seeds x items scores of one side: shared difficulty, each seed's offset, each run's item noise."""
    batch = difficulty.shape[0]
    offsets = rng.normal(0, SEED_SD, (batch, seeds, 1))
    return 60 + shift + difficulty + offsets + rng.normal(0, item_sd, (batch, seeds, ITEMS))


def simulate(seeds: int, item_sd: float, effect: float = 0.0, seed: int = 0) -> np.ndarray:
    """The p-values ``zoo compare``'s test (:func:`zoo.report.stats.two_level`) gives the simulated comparisons."""
    return np.concatenate([two_level(a, b, ITEMS).p() for a, b in comparisons(seeds, item_sd, effect, seed=seed)])


def table(effect: float = 2 * SEED_SD) -> list[dict]:
    """Per cell (seeds a side, item noise): the rate of p < 0.05 under the null and the power at ``effect``."""
    rows = []
    for noise, item_sd in ITEM_SD.items():
        for n in SEEDS:
            rows.append(
                {
                    "seeds": n,
                    "item noise": noise,
                    "false positives": float(np.mean(simulate(n, item_sd) < ALPHA)),
                    "power": float(np.mean(simulate(n, item_sd, effect, seed=1) < ALPHA)),
                }
            )
    return rows


if __name__ == "__main__":
    print(f"| seeds a side | item noise | p < {ALPHA} under the null | power at Δ = {2 * SEED_SD:g} |")
    print("|---|---|---|---|")
    for row in table():
        print(f"| {row['seeds']} | {row['item noise']} | {row['false positives']:.1%} | {row['power']:.1%} |")
