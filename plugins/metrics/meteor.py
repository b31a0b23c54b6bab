"""``meteor``: METEOR 1.5 (Denkowski and Lavie, 2014, "Meteor Universal: Language Specific
Translation Evaluation for Any Target Language", WMT) as the MS COCO caption evaluation code
runs it: pycocoevalcap's Java scorer (``-l en -norm``) on coco-tokenised captions.

Only where Java and pycocoevalcap (with its METEOR jar and paraphrase table) are
installed; elsewhere :meth:`Meteor.unavailable` says what is missing and the metric suite
leaves the metric out. The Java process starts at the first score (a few seconds, 2 GB
of heap) and serves every later call of the same metric object.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from zoo import register
from zoo.contracts import Metric
from zoo.metrics.coco import MetricUnavailableError, java_scorer_unavailable, signature, tokenize_corpus


class JavaScorer(Metric):
    """A pycocoevalcap scorer run on coco-tokenised text; corpus and per-item scores from one run, cached."""

    higher_is_better = True
    needed: tuple[str, ...] = ()  # files inside the pycocoevalcap package

    @dataclass
    class Config:
        # coco-caption's PTB-style tokenisation; False: texts are tokenised already (split on spaces)
        tokenize: bool = True

    def __init__(self, cfg: Any) -> None:
        super().__init__(cfg)
        self._scorer: Any = None
        self._last: tuple[Any, tuple[float, list[float]]] | None = None

    @classmethod
    def unavailable(cls) -> str | None:
        return java_scorer_unavailable(cls.registry_entry.name, *cls.needed)

    def _new_scorer(self) -> Any:
        raise NotImplementedError

    def _run(self, scorer: Any, gts: dict, res: dict) -> tuple[float, list[float]]:
        raise NotImplementedError

    def _scores(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> tuple[float, list[float]]:
        key = (tuple(hypotheses), tuple(tuple(refs) for refs in references))
        if self._last is not None and self._last[0] == key:
            return self._last[1]
        reason = self.unavailable()
        if reason:
            raise MetricUnavailableError(reason)
        hyps, refs = tokenize_corpus(hypotheses, references, self.cfg.tokenize)
        if not hyps:
            return 0.0, []
        if self._scorer is None:
            self._scorer = self._new_scorer()
        gts = {i: [" ".join(r) for r in item_refs] for i, item_refs in enumerate(refs)}
        res = {i: [" ".join(h)] for i, h in enumerate(hyps)}
        corpus, items = self._run(self._scorer, gts, res)
        result = (100.0 * corpus, [100.0 * score for score in items])
        self._last = (key, result)
        return result

    def corpus_score(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> float:
        return self._scores(hypotheses, references)[0]

    def item_scores(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> list[float]:
        return self._scores(hypotheses, references)[1]


@register("metric", "meteor")
class Meteor(JavaScorer):
    """METEOR 1.5 through pycocoevalcap's Java scorer (needs Java and pycocoevalcap), 0–100.

    Corpus: METEOR's own aggregate over all items (not the mean of items). Per item: each
    item's METEOR.
    """

    needed = ("meteor/meteor-1.5.jar", "meteor/data/paraphrase-en.gz")

    def _new_scorer(self) -> Any:
        from pycocoevalcap.meteor.meteor import Meteor as CocoMeteor

        return CocoMeteor()

    def _run(self, scorer: Any, gts: dict, res: dict) -> tuple[float, list[float]]:
        # METEOR reads "|||" as a field separator; coco-caption strips it from hypotheses only.
        gts = {i: [r.replace("|||", "") for r in refs] for i, refs in gts.items()}
        corpus, items = scorer.compute_score(gts, res)
        return float(corpus), [float(s) for s in items]

    def signature(self) -> str:
        return signature("meteor-1.5", self.cfg.tokenize, "lang:en", "norm")
