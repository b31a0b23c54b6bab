"""zoo compare's significance test beside the two it was chosen against, on the same simulated null comparisons.

    python benchmarks/calibration.py            # the table in docs/results.md ("Significance with few seeds")

Each row: seeds a side x the runs' item noise (zoo.report.calibration's simulation: shared item difficulty, seed
spread 2, 100 test items), 2,000 null comparisons and 2,000 with the system better by 4 (twice the seed spread).
Columns: the rate of p < 0.05 under the null and the power, for

- zoo's t-test over seeds and test items (zoo.report.stats.two_level);
- Welch's t-test on the seeds' scores alone (scipy.stats.ttest_ind, equal_var=False);
- the hierarchical bootstrap zoo used before: each draw resamples the test items (shared by every run) and each
  side's seeds with replacement; p is the share of centred differences at least as far from 0 as the observed one.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from zoo.report.calibration import ALPHA, ITEM_SD, ITEMS, SEED_SD, SEEDS, comparisons
from zoo.report.stats import two_level


def welch(baseline: np.ndarray, system: np.ndarray) -> np.ndarray:
    return stats.ttest_ind(system[..., 0], baseline[..., 0], axis=-1, equal_var=False).pvalue


def hierarchical_bootstrap(baseline: np.ndarray, system: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The old test, vectorised over comparisons: the draws of items are the replicates' columns."""
    observed = system[..., 0].mean(-1) - baseline[..., 0].mean(-1)
    sides = []
    for side in (baseline, system):
        draws = side[..., 1:].transpose(0, 2, 1)  # comparisons x draws x seeds
        picks = rng.integers(0, side.shape[1], size=draws.shape)
        sides.append(np.take_along_axis(draws, picks, axis=2).mean(-1))
    differences = sides[1] - sides[0]
    centred = differences - differences.mean(-1, keepdims=True)
    return (np.sum(np.abs(centred) >= np.abs(observed)[:, None], axis=-1) + 1) / (differences.shape[-1] + 1)


def rates(seeds: int, item_sd: float, effect: float, seed: int) -> dict[str, float]:
    rng = np.random.default_rng(seed + 100)
    found: dict[str, list[np.ndarray]] = {"zoo": [], "welch": [], "bootstrap": []}
    for baseline, system in comparisons(seeds, item_sd, effect, seed=seed):
        found["zoo"].append(two_level(baseline, system, ITEMS).p())
        found["welch"].append(welch(baseline, system))
        found["bootstrap"].append(hierarchical_bootstrap(baseline, system, rng))
    return {name: float(np.mean(np.concatenate(p) < ALPHA)) for name, p in found.items()}


def main() -> None:
    effect = 2 * SEED_SD
    print(
        f"| seeds a side | item noise | false positives: zoo | Welch | old bootstrap | power at Δ = {effect:g}: zoo | "
        "Welch | old bootstrap |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for noise, item_sd in ITEM_SD.items():
        for n in SEEDS:
            null, power = rates(n, item_sd, 0.0, seed=0), rates(n, item_sd, effect, seed=1)
            cells = [f"{null[k]:.1%}" for k in null] + [f"{power[k]:.1%}" for k in power]
            print(f"| {n} | {noise} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
