"""Corpus metrics through sacrebleu, so scores are comparable and signed."""
from __future__ import annotations

from sacrebleu.metrics import BLEU, CHRF


def corpus_scores(hypotheses: list[str], references: list[str]) -> dict:
    """BLEU and chrF (Popović 2015) of detokenised text, with sacrebleu's signatures."""
    bleu, chrf = BLEU(), CHRF()
    return {
        "bleu": bleu.corpus_score(hypotheses, [references]).score,
        "chrf": chrf.corpus_score(hypotheses, [references]).score,
        "bleu_signature": str(bleu.get_signature()),
        "chrf_signature": str(chrf.get_signature()),
    }


def length_bucket_label(length: int, edges: list[int]) -> str:
    """``edges=[10, 20]`` gives buckets '1-10', '11-20', '21+'."""
    low = 1
    for edge in edges:
        if length <= edge:
            return f"{low}-{edge}"
        low = edge + 1
    return f"{low}+"


def bleu_by_source_length(sources: list[str], hypotheses: list[str], references: list[str], edges: list[int]) -> dict:
    """BLEU per source-length bucket (length in whitespace-separated words) with the bucket sizes.

    Shows where a model breaks down, e.g. an encoder-decoder without attention on long inputs.
    """
    groups: dict[str, tuple[list[str], list[str]]] = {}
    for src, hyp, ref in zip(sources, hypotheses, references):
        label = length_bucket_label(len(str(src).split()), edges)
        hyps, refs = groups.setdefault(label, ([], []))
        hyps.append(hyp)
        refs.append(ref)
    order = [length_bucket_label(n, edges) for n in [*edges, (edges[-1] if edges else 0) + 1]]
    bleu = BLEU()
    return {
        label: {"bleu": bleu.corpus_score(groups[label][0], [groups[label][1]]).score, "count": len(groups[label][0])}
        for label in order
        if label in groups
    }
