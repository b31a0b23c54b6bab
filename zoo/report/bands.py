"""Mean ± std drawn within the range a quantity can take: a BLEU band never dips below 0 nor rises above 100.

One place for the ranges and the clipping that every chart of a spread uses: the search's expected-best curve
(:mod:`zoo.search.report`) draws its bands with :func:`band_traces`, the report's bars their error bars with
:func:`error_bars`, and the report's curves (``assets/charts.js``, drawn in the browser) clip their bands to the
:func:`metric_bounds` the page hands them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import plotly.graph_objects as go

#: The lowest and highest value a quantity can take; None where it is open.
Bounds = tuple[float | None, float | None]
UNBOUNDED: Bounds = (None, None)


def declared_bounds(name: str) -> Bounds:
    """What the metric plugin ``name`` declares (``Metric.bounds``), for a logged column too (``val/bleu``);
    unbounded for a name that is no registered metric (a loss) or one that declares nothing."""
    from zoo import registry

    metric = name.rsplit("/", 1)[-1]
    if metric not in registry.names("metric"):
        return UNBOUNDED
    low, high = registry.get("metric", metric).cls.bounds
    return (low, high)


def metric_bounds(name: str, values: Iterable[float]) -> Bounds:
    """The range of ``name``: its metric's declared bounds, else what the observed ``values`` say of its sign
    (none negative: never below 0, as a loss, a learning rate or a gradient norm; none positive: never above 0)."""
    declared = declared_bounds(name)
    if declared != UNBOUNDED:
        return declared
    values = list(values)
    if not values:
        return UNBOUNDED
    return (0.0 if min(values) >= 0 else None, 0.0 if max(values) <= 0 else None)


def clip(value: float, bounds: Bounds) -> float:
    low, high = bounds
    if low is not None:
        value = max(low, value)
    return value if high is None else min(high, value)


def band(means: Sequence[float], stds: Sequence[float], bounds: Bounds) -> tuple[list[float], list[float]]:
    """The lower and upper edges of mean ± std, each clipped to ``bounds``."""
    lower = [clip(mean - std, bounds) for mean, std in zip(means, stds)]
    upper = [clip(mean + std, bounds) for mean, std in zip(means, stds)]
    return lower, upper


def band_traces(
    x: Sequence[float], means: Sequence[float], stds: Sequence[float], bounds: Bounds, name: str, colour: str
) -> list[go.Scatter]:
    """A shaded band of ± one std (clipped to ``bounds``) and the line of the means over it, one legend entry."""
    import plotly.graph_objects as go

    lower, upper = band(means, stds, bounds)
    x = list(x)
    return [
        go.Scatter(
            x=x + x[::-1],
            y=upper + lower[::-1],
            fill="toself",
            fillcolor=colour,
            opacity=0.2,
            mode="lines",
            line={"width": 0},
            hoverinfo="skip",
            showlegend=False,
            legendgroup=name,
        ),
        go.Scatter(x=x, y=list(means), name=name, mode="lines+markers", line={"color": colour}, legendgroup=name),
    ]


def error_bars(means: Sequence[float | None], stds: Sequence[float], bounds: Bounds) -> dict:
    """Plotly's ``error_y`` for ± one std around each mean, each arm cut where it would leave ``bounds``."""
    lower, upper = band([m or 0.0 for m in means], stds, bounds)
    return {
        "type": "data",
        "symmetric": False,
        "array": [high - (m or 0.0) for m, high in zip(means, upper)],
        "arrayminus": [(m or 0.0) - low for m, low in zip(means, lower)],
    }
