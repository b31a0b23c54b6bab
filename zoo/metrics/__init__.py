"""Scores of subsets: BLEU by source length (sacrebleu), with several references per item."""

from __future__ import annotations

from collections.abc import Sequence

from sacrebleu.metrics import BLEU

#: The tag of a position no metric scores, in a reference that tags every source position (``task=tagging``):
#: multi-query recall labels only its queries.
UNSCORED = "_"


def reference_streams(references: Sequence[Sequence[str]]) -> list[list[str | None]]:
    """Per-item reference lists -> sacrebleu's reference streams (stream k holds every item's k-th
    reference; None where an item has fewer, which sacrebleu skips)."""
    count = max((len(refs) for refs in references), default=1)
    return [[refs[k] if k < len(refs) else None for refs in references] for k in range(count)]


def length_bucket_label(length: int, edges: list[int]) -> str:
    """``edges=[10, 20]`` gives buckets '1-10', '11-20', '21+'."""
    low = 1
    for edge in edges:
        if length <= edge:
            return f"{low}-{edge}"
        low = edge + 1
    return f"{low}+"


def bleu_by_source_length(
    sources: Sequence[str], hypotheses: Sequence[str], references: Sequence[Sequence[str]], edges: list[int]
) -> dict:
    """BLEU per source-length bucket (length in whitespace-separated words) with the bucket sizes.

    Shows where a model breaks down, e.g. an encoder-decoder without attention on long inputs.
    """
    groups: dict[str, tuple[list[str], list[Sequence[str]]]] = {}
    for src, hyp, refs in zip(sources, hypotheses, references):
        label = length_bucket_label(len(str(src).split()), edges)
        hyps, group_refs = groups.setdefault(label, ([], []))
        hyps.append(hyp)
        group_refs.append(refs)
    order = [length_bucket_label(n, edges) for n in [*edges, (edges[-1] if edges else 0) + 1]]
    bleu = BLEU()
    return {
        label: {
            "bleu": bleu.corpus_score(groups[label][0], reference_streams(groups[label][1])).score,
            "count": len(groups[label][0]),
        }
        for label in order
        if label in groups
    }
