"""The ``bleu`` metric: corpus BLEU (Papineni et al., 2002) through sacrebleu (Post, 2018)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sacrebleu.metrics import BLEU

from zoo.api import Metric, register
from zoo.api.metrics import reference_streams


@register("metric", "bleu")
class BleuMetric(Metric):
    """Corpus BLEU with sacrebleu's defaults (13a tokenisation, exponential smoothing) and its signature.

    Per item: sentence BLEU with effective order, so short sentences without a
    matching 4-gram still get a score (sacrebleu's advice for sentence-level use).
    """

    higher_is_better = True
    bounds = (0.0, 100.0)
    min_words = 4  # its largest n-grams

    @dataclass
    class Config:
        lowercase: bool = False  # case-insensitive BLEU

    def __init__(self, cfg: Config) -> None:
        super().__init__(cfg)
        self.corpus = BLEU(lowercase=cfg.lowercase)
        self.sentence = BLEU(lowercase=cfg.lowercase, effective_order=True)

    def corpus_score(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> float:
        return self.corpus.corpus_score(list(hypotheses), reference_streams(references)).score

    def item_scores(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> list[float]:
        return [self.sentence.sentence_score(h, list(refs)).score for h, refs in zip(hypotheses, references)]

    def sacrebleu_metric(self) -> BLEU:
        return BLEU(lowercase=self.cfg.lowercase)

    def signature(self) -> str:
        return str(self.corpus.get_signature())
