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

As a reward (self-critical training, :meth:`CiderD.reward`) the document frequencies are
counted once on the training items' references, as the captioning toolkits do (Rennie et
al., 2017), so a sample's reward does not depend on the batch it was drawn in.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence

from zoo.api import register
from zoo.api.metrics import MeanOfItems, signature, tokenize_corpus

ORDERS = 4
SIGMA = 6.0

#: A hypothesis' or a reference's tf-idf weights per order, their norms and its length in words.
Vector = tuple[list[dict], list[float], int]


def ngrams(tokens: Sequence[str]) -> list[list[str]]:
    """The n-grams of each order (1 to 4) in the order they occur, each its words joined by a space: a string keeps its
    hash once computed, so the many lookups of one n-gram cost little (a tuple's hash is computed at every lookup)."""
    shifted = [tokens[k:] for k in range(ORDERS)]
    return [list(tokens), *([" ".join(gram) for gram in zip(*shifted[:n])] for n in range(2, ORDERS + 1))]


def document_frequency(references: Iterable[Sequence[Sequence[str]]]) -> tuple[Counter, int]:
    """In how many items' references each n-gram occurs, and the number of items (tokenised references)."""
    frequency: Counter = Counter()
    items = 0
    for refs in references:
        frequency.update({gram for tokens in refs for order in ngrams(tokens) for gram in order})
        items += 1
    return frequency, items


class TfIdf:
    """CIDEr-D's n-gram weights, ``count x (log items - log max(1, document frequency))``, and its similarity."""

    def __init__(self, frequency: Counter, items: int) -> None:
        self.unseen = math.log(items) if items else 0.0  # the weight of an n-gram no item's references hold
        self.idf = {gram: self.unseen - math.log(count) for gram, count in frequency.items()}

    def vector(self, tokens: Sequence[str]) -> Vector:
        idf, unseen = self.idf, self.unseen
        weights, norms = [], []
        for grams in ngrams(tokens):
            order = {gram: idf.get(gram, unseen) for gram in grams}
            if len(order) < len(grams):  # an n-gram occurs more than once: weigh it by its count
                order = {gram: count * idf.get(gram, unseen) for gram, count in Counter(grams).items()}
            weights.append(order)
            norms.append(math.sqrt(sum(w * w for w in order.values())))
        return weights, norms, len(tokens)

    @staticmethod
    def similarity(hyp: Vector, ref: Vector) -> float:
        (hyp_w, hyp_norms, hyp_len), (ref_w, ref_norms, ref_len) = hyp, ref
        penalty = math.exp(-((hyp_len - ref_len) ** 2) / (2 * SIGMA**2))
        total = 0.0
        for k in range(ORDERS):
            ours, theirs = hyp_w[k], ref_w[k]
            dot = 0.0
            for gram, w in ours.items():  # only n-grams both hold add to the clipped dot product
                r = theirs.get(gram)
                if r is not None:
                    dot += min(w, r) * r
            if hyp_norms[k] != 0 and ref_norms[k] != 0:
                dot /= hyp_norms[k] * ref_norms[k]
            total += dot * penalty
        return total / ORDERS

    def score(self, hyp: Vector, refs: Sequence[Vector]) -> float:
        """CIDEr-D on coco's scale (0 to 10): ten times the mean similarity to the references."""
        return 10.0 * sum(self.similarity(hyp, ref) for ref in refs) / len(refs)


def cider_d(hypotheses: Sequence[Sequence[str]], references: Sequence[Sequence[Sequence[str]]]) -> list[float]:
    """CIDEr-D of every tokenised hypothesis (coco's scale: 0 to 10), document frequencies from ``references``."""
    weights = TfIdf(*document_frequency(references))
    return [
        weights.score(weights.vector(h), [weights.vector(r) for r in refs]) for h, refs in zip(hypotheses, references)
    ]


class TrainedCiderD:
    """CIDEr-D per item (x 100) with document frequencies fixed on the training references: self-critical
    training's reward. Within one call each distinct caption is weighted once and each distinct (hypothesis,
    references) pair scored once: a batch scores k samples and a greedy output against the same references, and a
    trained model's samples often repeat."""

    def __init__(self, train_references: Iterable[Sequence[str]], ptb: bool) -> None:
        self.ptb = ptb
        self.weights = TfIdf(*document_frequency(self._tokens(refs) for refs in train_references))

    def _tokens(self, refs: Sequence[str]) -> list[tuple[str, ...]]:
        """One item's references as scoring tokens (tokenize_corpus tokenises pairs: its hypothesis is empty)."""
        return tokenize_corpus([""], [refs], self.ptb)[1][0]

    def __call__(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> list[float]:
        hyps, refs = tokenize_corpus(hypotheses, references, self.ptb)
        vectors: dict[tuple[str, ...], Vector] = {}
        scores: dict[tuple, float] = {}

        def vector(tokens: tuple[str, ...]) -> Vector:
            known = vectors.get(tokens)
            if known is None:
                known = vectors[tokens] = self.weights.vector(tokens)
            return known

        def score(hyp: tuple[str, ...], item_refs: tuple[tuple[str, ...], ...]) -> float:
            known = scores.get((hyp, item_refs))
            if known is None:
                known = scores[hyp, item_refs] = 100.0 * self.weights.score(vector(hyp), [vector(r) for r in item_refs])
            return known

        return [score(h, tuple(rs)) for h, rs in zip(hyps, refs)]


@register("metric", "cider_d")
class CiderD(MeanOfItems):
    """CIDEr-D as coco-caption's ``Cider`` computes it (σ = 6, clipping, × 10), reported × 100 (coco 0.85 -> 85.0).

    Corpus: the mean of the items' scores. Per item: each item's score, with document
    frequencies from the whole corpus (so an item's score depends on the other items).
    A corpus of one item scores 0 (every n-gram's idf is log 1 = 0), as in coco-caption.
    As a reward, document frequencies come from the training references instead.
    """

    bounds = (0.0, None)  # open above: good captioners score over 100 (coco's 1.3 is 130 here)

    def item_scores(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> list[float]:
        hyps, refs = tokenize_corpus(hypotheses, references, self.cfg.tokenize)
        return [100.0 * score for score in cider_d(hyps, refs)]

    def reward(self, train_references: Iterable[Sequence[str]]) -> TrainedCiderD:
        return TrainedCiderD(train_references, self.cfg.tokenize)

    def signature(self) -> str:
        return signature("cider-d", self.cfg.tokenize, f"n:{ORDERS}", f"sigma:{SIGMA:g}", "df:corpus")
