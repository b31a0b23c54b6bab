"""zoo compare's significance test over the whole calibration grid, beside the two t-tests it was chosen against.

    python benchmarks/calibration.py                  # the tables in docs/guide/comparing.md ("Calibration")
    python benchmarks/calibration.py --comparisons 2000   # as tests/unit/test_calibration.py draws them

The simulation is zoo.report.calibration's: shared item difficulty, a seed spread of 2 on the side with more seeds
and 1/10-10 times that on the other, each run's own item noise low (SD 3 over 100 items: 0.3 against the seeds'
2) or high (40: 4.0). Every cell holds ``--comparisons`` null comparisons; its rate of p < 0.05 is given for

- zoo: the test zoo compare runs for those seed counts (zoo.report.stats.method_for);
- Welch: Student's t with the Welch–Satterthwaite degrees of freedom, item term included, at every count;
- pooled average: that t with the degrees of freedom averaged with the pooled n_b + n_s - 2 (zoo's test before
  issue 47, at every count).

The second table is the power of zoo's test at a difference of twice the seed spread (4), equal spreads.
"""

from __future__ import annotations

import argparse

import numpy as np
from scipy import stats

from zoo.report.calibration import ALPHA, CELLS, ITEM_SD, SEED_SD, SEEDS, comparisons
from zoo.report.stats import CALIBRATED_RATIO, Estimate, method_for

#: The tests set beside zoo's, each a p-value of an estimate.
TESTS = {
    "zoo": Estimate.p,
    "Welch": lambda e: _t_p(e, _welch_df(e)),
    "pooled average": lambda e: _t_p(e, (_welch_df(e) + _pooled_df(e)) / 2),
}


def _welch_df(e: Estimate) -> np.ndarray:
    (v_b, v_s), (n_b, n_s) = e.seed_variances, e.counts
    return e.variance**2 / (v_b**2 / (n_b - 1) + v_s**2 / (n_s - 1) + e.item_variance**2 / (e.items - 1))


def _pooled_df(e: Estimate) -> np.ndarray:
    (v_b, v_s), (n_b, n_s) = e.seed_variances, e.counts
    return e.variance**2 / ((v_b + v_s) ** 2 / (n_b + n_s - 2) + e.item_variance**2 / (e.items - 1))


def _t_p(e: Estimate, df: np.ndarray) -> np.ndarray:
    return 2 * stats.t.sf(np.abs(e.difference) / np.sqrt(e.variance), df)


def null_rates(cell: tuple, noise: str, count: int) -> dict[str, float]:
    """Each test's rate of p < ALPHA over the cell's null comparisons."""
    found: dict[str, list] = {name: [] for name in TESTS}
    for estimate in comparisons(*cell, ITEM_SD[noise], count=count):
        for name, p in TESTS.items():
            found[name].append(p(estimate) < ALPHA)
    return {name: float(np.concatenate(hits).mean()) for name, hits in found.items()}


def ratio_text(ratio: float) -> str:
    return f"{ratio:g}×" if ratio >= 1 else f"1/{1 / ratio:g}×"


def rate_text(rate: float, cell: tuple) -> str:
    """A rate, in bold outside 3-7 % where the spreads are at most 3x apart (the goal of issue 47), in italics where
    they are 10x apart and it is over 7 %."""
    shown = f"{rate:.1%}"
    if max(cell[2], 1 / cell[2]) > CALIBRATED_RATIO:
        return f"*{shown}*" if rate > 0.07 else shown
    return shown if 0.03 <= rate <= 0.07 else f"**{shown}**"


def calibration_table(count: int) -> None:
    print(
        "| seeds (fewer v more) | spread of the fewer / the more | zoo's test | "
        + " | ".join(f"{name}: {noise}" for noise in ITEM_SD for name in TESTS)
        + " |"
    )
    print("|---|---|---|" + "---|" * len(TESTS) * len(ITEM_SD))
    for cell in CELLS:
        rates = {noise: null_rates(cell, noise, count) for noise in ITEM_SD}
        cells = [rate_text(rates[noise][name], cell) for noise in ITEM_SD for name in TESTS]
        fewer, more, ratio = cell
        print(f"| {fewer} v {more} | {ratio_text(ratio)} | {method_for(fewer, more)} | " + " | ".join(cells) + " |")


def power_table(count: int) -> None:
    effect = 2 * SEED_SD
    print(f"\n| seeds (fewer v more) | zoo's test | power at Δ = {effect:g}: low item noise | high item noise |")
    print("|---|---|---|---|")
    for k, fewer in enumerate(SEEDS):
        for more in SEEDS[k:]:
            power = [
                np.concatenate(
                    [e.p() < ALPHA for e in comparisons(fewer, more, 1.0, ITEM_SD[noise], effect, count=count, seed=1)]
                ).mean()
                for noise in ITEM_SD
            ]
            print(f"| {fewer} v {more} | {method_for(fewer, more)} | {power[0]:.1%} | {power[1]:.1%} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--comparisons", type=int, default=10_000, help="null comparisons per cell (10,000)")
    count = parser.parse_args().comparisons
    calibration_table(count)
    power_table(count)


if __name__ == "__main__":
    main()
