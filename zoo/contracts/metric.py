"""The metric contract: hypotheses and their references in, a corpus score and per-item scores out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class Metric:
    """A corpus-level score of generated text. Built as ``cls(cfg)``.

    ``references[i]`` holds every reference of item ``i`` (one or more, the count
    may differ between items). ``higher_is_better`` tells checkpointing, early
    stopping and comparisons which way is up. ``bounds`` is the range a score can take
    (low, high; None where it is open): charts clip a ± std band to it (BLEU's never dips below 0).
    """

    higher_is_better: bool = True
    bounds: tuple[float | None, float | None] = (None, None)

    def __init__(self, cfg: Any) -> None:
        self.cfg = cfg

    @classmethod
    def unavailable(cls) -> str | None:
        """None when the metric can run here; otherwise one line saying why and what to install.

        A metric that needs something optional (Java, an extra package, model files) says so
        here, cheaply and without side effects: the metric suite then leaves it out with a
        warning, and refuses it as the monitored metric.
        """
        return None

    def corpus_score(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> float:
        raise NotImplementedError

    def item_scores(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> list[float] | None:
        """One score per item (for significance tests over items), or None when the metric has no per-item form."""
        return None

    def sacrebleu_metric(self) -> Any | None:
        """A fresh ``sacrebleu.metrics`` object computing the same score, for sacrebleu's paired significance
        tests; None (the default) means significance is tested by resampling :meth:`item_scores`."""
        return None

    def signature(self) -> str | None:
        """A string that pins down how the latest :meth:`corpus_score` was computed (sacrebleu's signature), or None."""
        return None
