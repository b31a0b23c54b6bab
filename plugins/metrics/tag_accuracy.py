"""The ``tag_accuracy`` metric: the percentage of tagged positions whose tag an output names."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from zoo.api import Metric, register
from zoo.api.metrics import UNSCORED


def counts(hypothesis: str, reference: str) -> tuple[int, int]:
    """(right, scored): the positions the reference tags (not ``_``) and how many of them the output names."""
    said = hypothesis.split()
    scored = [(position, tag) for position, tag in enumerate(reference.split()) if tag != UNSCORED]
    right = sum(position < len(said) and said[position] == tag for position, tag in scored)
    return right, len(scored)


@register("metric", "tag_accuracy")
class TagAccuracy(Metric):
    """Accuracy over tagged positions (``task=tagging``): Zoology's MQAR accuracy, every query counted once.

    An output and its first reference are read as a tag per position (whitespace-separated); positions the
    reference tags ``_`` are not scored, and a position the output does not reach is wrong. The corpus score
    pools every scored position of every item (a sequence with more queries weighs more); an item's score is
    its own share.
    """

    higher_is_better = True
    bounds = (0.0, 100.0)

    @dataclass
    class Config:
        pass

    def corpus_score(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> float:
        totals = [counts(hypothesis, refs[0]) for hypothesis, refs in zip(hypotheses, references)]
        scored = sum(total for _, total in totals)
        return 100.0 * sum(right for right, _ in totals) / scored if scored else 0.0

    def item_scores(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> list[float]:
        return [100.0 * right / max(total, 1) for right, total in map(counts, hypotheses, (r[0] for r in references))]
