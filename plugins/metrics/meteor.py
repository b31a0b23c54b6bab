"""``meteor``: METEOR 1.5 (Denkowski and Lavie, 2014, "Meteor Universal: Language Specific
Translation Evaluation for Any Target Language", WMT) as the MS COCO caption evaluation code
runs it: pycocoevalcap's Java scorer (``-l en -norm``) on coco-tokenised captions.

Only where Java and pycocoevalcap (with its METEOR jar and paraphrase table) are
installed; elsewhere :meth:`Meteor.unavailable` says what is missing and the metric suite
leaves the metric out. The Java process starts at the first score (a few seconds, 2 GB
of heap) and serves every later call of the same metric object.
"""

from __future__ import annotations

from typing import Any

from zoo.api import register
from zoo.api.metrics import JavaScorer, signature


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
