"""Is a configuration's difference from a baseline more than noise? Paired bootstrap over test items.

Paired bootstrap resampling (Koehn, 2004): draw the test items with replacement,
score both systems on the same draw, and see how often the observed difference
disappears. Items are pooled over seeds: seed k of one configuration is paired
with seed k of the other (the first min(n, m) seeds of each), item by item id.
Metrics that sacrebleu can test (BLEU, chrF, TER) use sacrebleu's own paired
bootstrap, which recomputes the corpus score on every draw; any other metric is
resampled through its per-item scores (mean of the item scores).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from zoo.registry import build, names
from zoo.report.runs import Run
from zoo.training.summary import TEST_ITEMS_FILE

SAMPLES = 1000
SEED = 12345
METHOD = (f"paired bootstrap resampling (Koehn, 2004) over test items pooled over seeds, {SAMPLES} samples; "
          "sacrebleu's implementation for the metrics it provides, per-item scores otherwise")


@dataclass
class Pooled:
    """The test items of a configuration's seeds, concatenated: hypotheses, references, per-item scores."""

    hypotheses: list[str]
    references: list[list[str]]
    scores: dict[str, list[float]]


def read_items(run: Run) -> dict[str, dict]:
    """A finished run's test items by id (empty when the run wrote none)."""
    path = Path(run.path) / TEST_ITEMS_FILE
    if not path.is_file():
        return {}
    rows = (json.loads(line) for line in path.read_text().splitlines() if line.strip())
    return {row["id"]: row for row in rows}


def pool(runs: list[Run], other: list[Run]) -> tuple[Pooled, Pooled] | None:
    """The two configurations' items, paired seed by seed and item by item; None when they share no items."""
    a, b = Pooled([], [], {}), Pooled([], [], {})
    for run_a, run_b in zip(runs, other):
        items_a, items_b = read_items(run_a), read_items(run_b)
        for item_id in items_a.keys() & items_b.keys():
            for pooled, row in ((a, items_a[item_id]), (b, items_b[item_id])):
                pooled.hypotheses.append(row["hypothesis"])
                pooled.references.append(row["references"])
                for name, score in row["scores"].items():
                    pooled.scores.setdefault(name, []).append(score)
    return (a, b) if a.hypotheses else None


def _reference_streams(references: list[list[str]]) -> list[list[str | None]]:
    from zoo.metrics import reference_streams

    return reference_streams(references)


def p_value(metric_name: str, baseline: Pooled, system: Pooled) -> float | None:
    """Two-sided p-value of the difference between ``system`` and ``baseline`` on one metric, or None."""
    if metric_name in names("metric"):
        sacrebleu_metric = build("metric", {"name": metric_name}).sacrebleu_metric()
        if sacrebleu_metric is not None:
            from sacrebleu.significance import PairedTest

            test = PairedTest([("baseline", baseline.hypotheses), ("system", system.hypotheses)],
                              {metric_name: sacrebleu_metric}, _reference_streams(baseline.references),
                              test_type="bs", n_samples=SAMPLES)
            _, results = test()
            (column,) = [key for key in results if key != "System"]
            return results[column][1].p_value
    if metric_name not in baseline.scores or metric_name not in system.scores:
        return None
    return bootstrap_mean_difference(np.array(baseline.scores[metric_name]), np.array(system.scores[metric_name]))


def bootstrap_mean_difference(baseline: np.ndarray, system: np.ndarray) -> float:
    """Two-sided paired bootstrap p-value for the difference of mean per-item scores.

    The resampled differences are centred on zero (the null hypothesis) and compared
    with the observed difference, as sacrebleu does for corpus metrics.
    """
    rng = np.random.default_rng(SEED)
    differences = system - baseline
    observed = differences.mean()
    draws = rng.integers(0, len(differences), size=(SAMPLES, len(differences)))
    resampled = differences[draws].mean(axis=1)
    centred = resampled - resampled.mean()
    return float((np.sum(np.abs(centred) >= abs(observed)) + 1) / (SAMPLES + 1))
