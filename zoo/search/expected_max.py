"""The expected best validation score after n trials (Dodge et al., 2019, "Show Your Work").

A search's N trial scores are treated as i.i.d. draws from the family's score distribution under the
search: the best of n draws (with replacement) from their empirical distribution has

    P(best <= v_(i)) = (i / N)^n,   E[best_n] = sum_i v_(i) ((i / N)^n - ((i - 1) / N)^n)

with v sorted from worst to best, and variance E[best_n^2] - E[best_n]^2. At n = 1 this is the mean
score; as n grows it approaches the best score seen (it reaches it only when every trial scored the
same: n draws with replacement may miss the best trial). A family whose curve still rises at n = N has
not been tuned enough; curves that cross mean the ranking depends on the budget.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ExpectedBest:
    """The expected best score over ``n`` trials and its variance."""

    n: int
    mean: float
    variance: float

    @property
    def std(self) -> float:
        return max(self.variance, 0.0) ** 0.5


def expected_best(scores: list[float], higher_is_better: bool = True, up_to: int | None = None) -> list[ExpectedBest]:
    """E[best of n trials] and its variance for n = 1 .. ``up_to`` (default: the number of scores).

    ``higher_is_better=False`` takes the minimum (TER, a loss). No scores: an empty curve.
    """
    sign = 1.0 if higher_is_better else -1.0
    ordered = sorted(sign * float(score) for score in scores)  # worst first
    count = len(ordered)
    if not count:
        return []
    curve = []
    for n in range(1, (count if up_to is None else up_to) + 1):
        weights = [(i / count) ** n - ((i - 1) / count) ** n for i in range(1, count + 1)]
        mean = sum(w * v for w, v in zip(weights, ordered))
        square = sum(w * v * v for w, v in zip(weights, ordered))
        curve.append(ExpectedBest(n, sign * mean, square - mean * mean))
    return curve
