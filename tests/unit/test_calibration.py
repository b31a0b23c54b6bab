"""The significance test rejects a true null as often as it claims, with 2 to 10 seeds a side."""

import numpy as np
import pytest

from zoo.report.calibration import COMPARISONS, ITEM_SD, SEEDS, simulate


@pytest.mark.parametrize("noise", ITEM_SD)
@pytest.mark.parametrize("seeds", SEEDS)
def test_false_positive_rate_is_nominal(seeds, noise):
    rate = np.mean(simulate(seeds, ITEM_SD[noise]) < 0.05)
    assert COMPARISONS >= 2000 and 0.03 <= rate <= 0.07, f"{seeds} seeds a side, {noise} item noise: {rate:.1%}"


def test_power_grows_with_seeds():
    power = [np.mean(simulate(n, ITEM_SD["low"], effect=4.0, seed=1) < 0.05) for n in (2, 5, 10)]
    print(f"power at Δ = 4 (seed SD 2), 2/5/10 seeds a side: {power}")
    assert power[0] < power[1] < power[2] and power[2] > 0.9
