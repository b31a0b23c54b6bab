"""The ``accuracy`` metric: the percentage of outputs equal to a reference."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from zoo.api import Metric, register


@register("metric", "accuracy")
class Accuracy(Metric):
    """Exact match: an item scores 100 when its output equals one of its references, else 0; the corpus the mean.

    Texts are compared word by word (runs of whitespace count as one space, none at the ends), so a label
    decoded as ``"v12"`` matches the reference ``"v12 "``. For a one-token label this is classification
    accuracy; for a longer output, the share of outputs with every token right (selective copying).
    """

    higher_is_better = True
    bounds = (0.0, 100.0)

    @dataclass
    class Config:
        lowercase: bool = False  # compare case-insensitively

    def corpus_score(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> float:
        scores = self.item_scores(hypotheses, references)
        return sum(scores) / len(scores) if scores else 0.0

    def item_scores(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> list[float]:
        return [
            100.0 * (self._words(hypothesis) in {self._words(reference) for reference in refs})
            for hypothesis, refs in zip(hypotheses, references)
        ]

    def _words(self, text: str) -> tuple[str, ...]:
        return tuple((text.lower() if self.cfg.lowercase else text).split())
