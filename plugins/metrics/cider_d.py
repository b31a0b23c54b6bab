"""``cider_d``: CIDEr-D (Vedantam, Zitnick and Parikh, 2015, "CIDEr: Consensus-based Image
Description Evaluation", CVPR; arXiv:1411.5726) as the MS COCO caption evaluation code computes it.

pycocoevalcap calls its scorer ``Cider``, but it is the CIDEr-D variant of the paper: each
n-gram (n = 1 … 4) is weighted by tf-idf, where the document frequency counts the items
whose references contain it (taken from the references of the corpus being scored, so a
score depends on the whole test set); the weighted vectors are compared by a cosine in
which the hypothesis weights are clipped at the reference weights; the similarity is
damped by a Gaussian of the length difference in words, exp(-Δ² / 2σ²) with σ = 6; and
the mean over orders and references is multiplied by 10. Term frequencies are raw counts,
as in that code. (It counts lengths in bigrams, words − 1: the same difference except
for an empty caption, whose similarity is 0 either way.)
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from zoo.api import MeanOfItems, ngram_counts, register, signature, tokenize_corpus

ORDERS = 4
SIGMA = 6.0


def cider_d(hypotheses: Sequence[Sequence[str]], references: Sequence[Sequence[Sequence[str]]]) -> list[float]:
    """CIDEr-D of every tokenised hypothesis (coco's scale: 0 to 10), document frequencies from ``references``."""
    hyp_counts = [ngram_counts(h, ORDERS) for h in hypotheses]
    ref_counts = [[ngram_counts(r, ORDERS) for r in refs] for refs in references]
    frequency: Counter = Counter()
    for counts in ref_counts:
        frequency.update(set().union(*counts))
    log_items = math.log(len(references)) if references else 0.0

    def vector(counts: Counter, tokens: Sequence[str]) -> tuple[list[dict], list[float], int]:
        weights: list[dict] = [{} for _ in range(ORDERS)]
        for gram, count in counts.items():
            weights[len(gram) - 1][gram] = count * (log_items - math.log(max(1.0, frequency[gram])))
        norms = [math.sqrt(sum(w * w for w in order.values())) for order in weights]
        return weights, norms, len(tokens)

    def similarity(hyp: tuple, ref: tuple) -> float:
        (hyp_w, hyp_norms, hyp_len), (ref_w, ref_norms, ref_len) = hyp, ref
        penalty = math.exp(-((hyp_len - ref_len) ** 2) / (2 * SIGMA**2))
        total = 0.0
        for k in range(ORDERS):
            dot = sum(min(w, ref_w[k].get(g, 0.0)) * ref_w[k].get(g, 0.0) for g, w in hyp_w[k].items())
            if hyp_norms[k] != 0 and ref_norms[k] != 0:
                dot /= hyp_norms[k] * ref_norms[k]
            total += dot * penalty
        return total / ORDERS

    scores = []
    for h_counts, h_tokens, r_counts, r_tokens in zip(hyp_counts, hypotheses, ref_counts, references):
        hyp = vector(h_counts, h_tokens)
        refs = [vector(c, t) for c, t in zip(r_counts, r_tokens)]
        scores.append(10.0 * sum(similarity(hyp, ref) for ref in refs) / len(refs))
    return scores


@register("metric", "cider_d")
class CiderD(MeanOfItems):
    """CIDEr-D as coco-caption's ``Cider`` computes it (σ = 6, clipping, × 10), reported × 100 (coco 0.85 -> 85.0).

    Corpus: the mean of the items' scores. Per item: each item's score, with document
    frequencies from the whole corpus (so an item's score depends on the other items).
    A corpus of one item scores 0 (every n-gram's idf is log 1 = 0), as in coco-caption.
    """

    bounds = (0.0, None)  # open above: good captioners score over 100 (coco's 1.3 is 130 here)

    def item_scores(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> list[float]:
        hyps, refs = tokenize_corpus(hypotheses, references, self.cfg.tokenize)
        return [100.0 * score for score in cider_d(hyps, refs)]

    def signature(self) -> str:
        return signature("cider-d", self.cfg.tokenize, f"n:{ORDERS}", f"sigma:{SIGMA:g}", "df:corpus")
