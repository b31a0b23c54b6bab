"""``spice``: SPICE 1.0 (Anderson, Fernando, Johnson and Gould, 2016, "SPICE: Semantic
Propositional Image Caption Evaluation", ECCV) through pycocoevalcap's Java scorer.

SPICE parses captions into scene graphs with Stanford CoreNLP 3.6.0, whose jars
pycocoevalcap downloads at first use. zoo never downloads anything: the metric is
available only where Java, pycocoevalcap and those jars are already installed, and
:meth:`Spice.unavailable` says otherwise what to do.
"""

from __future__ import annotations

from typing import Any

from zoo.api import register
from zoo.api.metrics import JavaScorer, signature

CORENLP = ("spice/lib/stanford-corenlp-3.6.0.jar", "spice/lib/stanford-corenlp-3.6.0-models.jar")


@register("metric", "spice")
class Spice(JavaScorer):
    """SPICE F-score through pycocoevalcap (needs Java, pycocoevalcap and its Stanford CoreNLP jars), 0–100.

    Corpus: the mean of the items' SPICE F (NaN when SPICE could not parse an item, as
    pycocoevalcap reports it). Per item: each item's F over all tuples.
    """

    needed = ("spice/spice-1.0.jar", *CORENLP)

    @classmethod
    def unavailable(cls) -> str | None:
        reason = super().unavailable()
        if reason and "stanford-corenlp" in reason:
            return (
                "spice needs Stanford CoreNLP 3.6.0 in pycocoevalcap/spice/lib, which pycocoevalcap downloads at first "
                'use and zoo never does: run `python -c "from pycocoevalcap.spice.get_stanford_models import '
                'get_stanford_models as g; g()"` once'
            )
        return reason

    def _new_scorer(self) -> Any:
        from pycocoevalcap.spice.spice import Spice as CocoSpice

        return CocoSpice()

    def _run(self, scorer: Any, gts: dict, res: dict) -> tuple[float, list[float]]:
        corpus, items = scorer.compute_score(gts, res)
        return float(corpus), [float(item["All"]["f"]) for item in items]  # NaN where SPICE could not parse

    def signature(self) -> str:
        return signature("spice-1.0", self.cfg.tokenize)
