"""``bleu1`` … ``bleu4``: BLEU-n (Papineni et al., 2002) as captioning papers report it.

Captioning papers take BLEU from the MS COCO caption evaluation code (Chen et al., 2015,
arXiv:1504.00325), which differs from sacrebleu's ``bleu`` plugin: its own tokenisation
(:mod:`coco`), counts clipped by the largest count in any reference, the brevity penalty
from the reference length closest to each hypothesis (the shorter one on a tie), no
smoothing beyond two tiny constants (``1e-15`` added to the matches, ``1e-9`` to the
n-gram and reference counts, so that a hypothesis without a match scores zero instead of
failing) and BLEU-n as the geometric mean of the precisions of orders 1 … n.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from zoo.api import Metric, register
from zoo.api.metrics import ngram_counts, signature, tokenize_corpus

TINY = 1e-15  # added to the clipped matches of each order and to the hypothesis length
SMALL = 1e-9  # added to the n-gram count of each order and to the reference length


@dataclass
class BleuStats:
    """What BLEU needs of one or more hypotheses: lengths, clipped matches and n-grams per order."""

    hypothesis_length: int
    reference_length: int
    matches: list[int]
    totals: list[int]

    def __add__(self, other: BleuStats) -> BleuStats:
        return BleuStats(
            self.hypothesis_length + other.hypothesis_length,
            self.reference_length + other.reference_length,
            [a + b for a, b in zip(self.matches, other.matches)],
            [a + b for a, b in zip(self.totals, other.totals)],
        )

    def bleu(self) -> float:
        """BLEU-n in 0..1 for n = the number of orders counted."""
        n = len(self.matches)
        precision = 1.0
        for matches, total in zip(self.matches, self.totals):
            precision *= (matches + TINY) / (total + SMALL)
        score = precision ** (1.0 / n)
        ratio = (self.hypothesis_length + TINY) / (self.reference_length + SMALL)
        return score * math.exp(1.0 - 1.0 / ratio) if ratio < 1.0 else score


def bleu_stats(hypothesis: Sequence[str], references: Sequence[Sequence[str]], n: int) -> BleuStats:
    """Clipped n-gram matches of one tokenised hypothesis against all its references, and the closest reference
    length."""
    counts = ngram_counts(hypothesis, n)
    most: dict[tuple, int] = {}
    for reference in references:
        for gram, count in ngram_counts(reference, n).items():
            if count > most.get(gram, 0):
                most[gram] = count
    matches = [0] * n
    for gram, count in counts.items():
        matches[len(gram) - 1] += min(count, most.get(gram, 0))
    length = len(hypothesis)
    closest = min((abs(len(r) - length), len(r)) for r in references)[1]
    return BleuStats(length, closest, matches, [max(0, length - k) for k in range(n)])


class CocoBleu(Metric):
    """BLEU-n as coco-caption computes it, on the 0–100 scale (coco's value × 100).

    Corpus: clipped matches, n-gram counts and lengths summed over items, one brevity
    penalty. Per item: the same formula on the item alone (coco's per-sentence BLEU-n).
    """

    higher_is_better = True
    bounds = (0.0, 100.0)
    order = 4
    min_words = 4  # its largest n-grams: each BLEU-n's order

    @dataclass
    class Config:
        # coco-caption's PTB-style tokenisation; False: texts are tokenised already (split on spaces)
        tokenize: bool = True

    def _stats(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> list[BleuStats]:
        hyps, refs = tokenize_corpus(hypotheses, references, self.cfg.tokenize)
        return [bleu_stats(h, r, self.order) for h, r in zip(hyps, refs)]

    def corpus_score(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> float:
        stats = self._stats(hypotheses, references)
        if not stats:
            return 0.0
        total = stats[0]
        for item in stats[1:]:
            total = total + item
        return 100.0 * total.bleu()

    def item_scores(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> list[float]:
        return [100.0 * item.bleu() for item in self._stats(hypotheses, references)]

    def signature(self) -> str:
        return signature(f"bleu{self.order}", self.cfg.tokenize, "ref-len:closest")


@register("metric", "bleu1")
class CocoBleu1(CocoBleu):
    """coco-caption BLEU-1 (unigram precision and brevity penalty), 0–100."""

    order = min_words = 1


@register("metric", "bleu2")
class CocoBleu2(CocoBleu):
    """coco-caption BLEU-2, 0–100."""

    order = min_words = 2


@register("metric", "bleu3")
class CocoBleu3(CocoBleu):
    """coco-caption BLEU-3, 0–100."""

    order = min_words = 3


@register("metric", "bleu4")
class CocoBleu4(CocoBleu):
    """coco-caption BLEU-4, the BLEU of captioning papers, 0–100."""

    order = 4
