"""Is a configuration's difference from a baseline more than noise? Bootstrap over seeds and test items.

Paired bootstrap resampling (Koehn, 2004) draws the test items with replacement,
scores both systems on the same draw and sees how often the observed difference
disappears. It knows nothing of training noise: pooling several seeds' items as
if they were independent lets one lucky seed look significant. So with two or more
seeds a configuration's seeds are resampled too (:func:`hierarchical_bootstrap`),
and the p-values of the rows tested against one baseline are adjusted for their
number (Holm, 1979). With one seed each, the test is sacrebleu's paired bootstrap
(its per-item scores for metrics sacrebleu does not provide).

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

from zoo.registry import build, names
from zoo.report.runs import Run
from zoo.training.layout import TEST_ITEMS_FILE

SAMPLES = 1000
SEED = 12345
CONFIDENCE = 0.95
HIERARCHICAL = "hierarchical bootstrap (each configuration's seeds, then test items)"
PAIRED_SACREBLEU = "sacrebleu's paired bootstrap over test items"
PAIRED_ITEMS = "paired bootstrap over per-item scores"


@dataclass
class Comparison:
    """A configuration against the baseline on one metric: the difference (system - baseline) of the mean over
    seeds, its confidence interval, the two-sided p-value (``p``: Holm-adjusted when several rows were tested,
    see :func:`holm`) and how it was tested."""

    difference: float
    ci_low: float
    ci_high: float
    p_unadjusted: float
    method: str
    seeds: tuple[int, int]  # baseline's, system's
    p: float = field(init=False)

    def __post_init__(self) -> None:
        self.p = self.p_unadjusted  # one row tested: nothing to adjust (:func:`holm` adjusts several)


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


def compare_to_baseline(scorer: Scorer, baseline: list[list[Run]], system: list[list[Run]]) -> Comparison | None:
    """Test ``system`` against ``baseline``, each given as seeds (the runs of one seed; see
    :attr:`zoo.report.aggregate.Group.seeds`), on the test items every run has; None when they share none."""
    sides = [
        [[run for run in runs if scorer.item_stats(run) is not None] for runs in side] for side in (baseline, system)
    ]
    sides = [[runs for runs in side if runs] for side in sides]
    if not all(sides):
        return None
    ids = sorted(set.intersection(*(set(scorer.item_stats(run)) for side in sides for runs in side for run in runs)))
    if not ids:
        return None
    aligned = [
        [[np.stack([scorer.item_stats(run)[i] for i in ids]) for run in runs] for runs in side] for side in sides
    ]
    observed, differences = hierarchical_bootstrap(aligned[0], aligned[1], scorer.scores)
    low, high = np.percentile(differences, [50 * (1 - CONFIDENCE), 50 * (1 + CONFIDENCE)])
    single = len(aligned[0]) == len(aligned[1]) == 1
    one_run_each = single and len(aligned[0][0]) == len(aligned[1][0]) == 1
    if one_run_each and scorer.sacrebleu is not None:
        p, method = sacrebleu_paired_p(scorer, sides[0][0][0], sides[1][0][0], ids), PAIRED_SACREBLEU
    else:
        p, method = centred_p(differences, observed), PAIRED_ITEMS if single else HIERARCHICAL
    return Comparison(observed, float(low), float(high), p, method, (len(aligned[0]), len(aligned[1])))


def hierarchical_bootstrap(
    baseline: list[list[np.ndarray]], system: list[list[np.ndarray]], score: Callable[[np.ndarray, int], np.ndarray]
) -> tuple[float, np.ndarray]:
    """The observed difference of mean scores (system - baseline) and ``SAMPLES`` resampled differences.

    Each side is a list of seeds, each seed a list of runs (several when runs share a seed: their scores are
    averaged), each run an (items x statistics) array over the same items. A draw takes one resample of the test
    items, shared by every run of both sides: the runs were all scored on one test set, so they are paired
    item by item, and the test set varies as one. It then resamples each side's seeds independently. Seeds are
    not paired across configurations even when their values match: seed 1 of a GRU and seed 1 of a Transformer
    share no initialisation, so the runs are independent samples of each configuration's training noise, and
    pairing by value would invent a correlation (and drop the seeds one side lacks). With one seed a side, this
    is the paired bootstrap over items (Koehn, 2004).
    """
    rng = np.random.default_rng(SEED)
    items = baseline[0][0].shape[0]
    draws = rng.integers(0, items, size=(SAMPLES, items)) + items * np.arange(SAMPLES)[:, None]
    counts = np.bincount(draws.ravel(), minlength=SAMPLES * items).reshape(SAMPLES, items).astype(float)
    everything = np.ones((1, items))

    def per_seed(side: list[list[np.ndarray]], weights: np.ndarray) -> np.ndarray:  # draws x seeds
        return np.stack([np.mean([score(weights @ run, items) for run in runs], axis=0) for runs in side], axis=1)

    observed = float(per_seed(system, everything).mean() - per_seed(baseline, everything).mean())
    sides = []
    for side in (baseline, system):
        picks = rng.integers(0, len(side), size=(SAMPLES, len(side)))
        sides.append(np.take_along_axis(per_seed(side, counts), picks, axis=1).mean(axis=1))
    return observed, sides[1] - sides[0]


def centred_p(differences: np.ndarray, observed: float) -> float:
    """Two-sided bootstrap p-value: how often the resampled differences, centred on zero (the null hypothesis),
    lie at least as far from it as the observed one."""
    centred = differences - differences.mean()
    return float((np.sum(np.abs(centred) >= abs(observed)) + 1) / (len(differences) + 1))


def sacrebleu_paired_p(scorer: Scorer, baseline: Run, system: Run, ids: list[str]) -> float:
    """sacrebleu's paired bootstrap test (Koehn, 2004) of one run against another, over ``ids`` in order
    (sacrebleu seeds it from ``SACREBLEU_SEED``, 12345 unless set)."""
    from sacrebleu.significance import PairedTest

    from zoo.metrics import reference_streams

    items = [read_items(run) for run in (baseline, system)]
    test = PairedTest(
        [(name, [rows[i]["hypothesis"] for i in ids]) for name, rows in zip(("baseline", "system"), items)],
        {scorer.metric: scorer.sacrebleu},
        reference_streams([items[0][i]["references"] for i in ids]),
        test_type="bs",
        n_samples=SAMPLES,
    )
    _, results = test()
    (column,) = [key for key in results if key != "System"]
    return results[column][1].p_value


def holm(p_values: list[float]) -> list[float]:
    """Holm's (1979) step-down adjustment for testing several rows against one baseline: the k-th smallest of m
    p-values is multiplied by m - k + 1, and adjusted values never fall below a smaller p's."""
    adjusted, running = [0.0] * len(p_values), 0.0
    for rank, k in enumerate(sorted(range(len(p_values)), key=lambda k: p_values[k])):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[k]))
        adjusted[k] = running
    return adjusted
