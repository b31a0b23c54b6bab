"""``rouge_l``: ROUGE-L (Lin, 2004, "ROUGE: A Package for Automatic Evaluation of Summaries")
as the MS COCO caption evaluation code computes it (Chen et al., 2015, arXiv:1504.00325).

Per item, with the longest common subsequence (LCS) of the hypothesis and each
reference: precision P = max over references of LCS / hypothesis length, recall R = max
over references of LCS / reference length (the two maxima may come from different
references), and F = (1 + β²) P R / (R + β² P) with β = 1.2, or 0 when P or R is 0.
The corpus score is the mean over items.
"""

from __future__ import annotations

from collections.abc import Sequence

from zoo.api import register
from zoo.api.metrics import MeanOfItems, signature, tokenize_corpus

BETA = 1.2


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence of two token sequences (dynamic programming, one row)."""
    if len(a) < len(b):
        a, b = b, a
    row = [0] * (len(b) + 1)
    for token in a:
        diagonal = 0
        for j, other in enumerate(b, start=1):
            above = row[j]
            row[j] = diagonal + 1 if token == other else max(above, row[j - 1])
            diagonal = above
    return row[-1]


def rouge_l(hypothesis: Sequence[str], references: Sequence[Sequence[str]]) -> float:
    """ROUGE-L F (β = 1.2) of one tokenised hypothesis against its references, in 0..1.

    An empty caption matches only an empty caption (coco-caption splits an empty text into
    one empty token, so that pair scores 1 and an empty one against a non-empty one 0).
    """
    precision = recall = 0.0
    for reference in references:
        if not hypothesis or not reference:
            p = r = float(not hypothesis and not reference)
        else:
            common = lcs_length(reference, hypothesis)
            p, r = common / len(hypothesis), common / len(reference)
        precision, recall = max(precision, p), max(recall, r)
    if precision == 0 or recall == 0:
        return 0.0
    return (1 + BETA**2) * precision * recall / (recall + BETA**2 * precision)


@register("metric", "rouge_l")
class RougeL(MeanOfItems):
    """ROUGE-L F (β = 1.2, best precision and recall over references) as coco-caption computes it, 0–100."""

    bounds = (0.0, 100.0)

    def item_scores(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> list[float]:
        hyps, refs = tokenize_corpus(hypotheses, references, self.cfg.tokenize)
        return [100.0 * rouge_l(h, r) for h, r in zip(hyps, refs)]

    def signature(self) -> str:
        return signature("rouge-l", self.cfg.tokenize, f"beta:{BETA:g}")
