"""The ``chrf`` metric: character n-gram F-score (Popović, 2015) through sacrebleu."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sacrebleu.metrics import CHRF

from zoo.api import Metric, register
from zoo.api.metrics import reference_streams


@register("metric", "chrf")
class ChrfMetric(Metric):
    """chrF (character 6-grams, beta 2) with sacrebleu's signature; ``word_order=2`` gives chrF++ (Popović, 2017)."""

    higher_is_better = True
    bounds = (0.0, 100.0)

    @dataclass
    class Config:
        word_order: int = 0  # word n-grams added to the character n-grams (2: chrF++)

    def __init__(self, cfg: Config) -> None:
        super().__init__(cfg)
        self.chrf = CHRF(word_order=cfg.word_order)

    def corpus_score(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> float:
        return self.chrf.corpus_score(list(hypotheses), reference_streams(references)).score

    def item_scores(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> list[float]:
        return [self.chrf.sentence_score(h, list(refs)).score for h, refs in zip(hypotheses, references)]

    def sacrebleu_metric(self) -> CHRF:
        return CHRF(word_order=self.cfg.word_order)

    def signature(self) -> str:
        return str(self.chrf.get_signature())
