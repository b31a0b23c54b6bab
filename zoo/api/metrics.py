"""Helpers for metrics: coco-caption's tokenisation and n-grams (:func:`tokenize_corpus`,
:func:`ngram_counts`, :func:`signature`), :class:`MeanOfItems` (a metric whose corpus score is the mean of its
items'), :class:`JavaScorer` (a pycocoevalcap Java scorer) with :class:`MetricUnavailableError` and
:func:`java_scorer_unavailable`, :func:`reference_streams`, :func:`bleu_by_source_length`,
:func:`length_bucket_label` (the bucket a source length falls in, for scores by length) and :data:`UNSCORED` (the
tag of a position no metric scores)."""

from zoo.metrics import UNSCORED, bleu_by_source_length, length_bucket_label, reference_streams
from zoo.metrics.coco import (
    JavaScorer,
    MeanOfItems,
    MetricUnavailableError,
    java_scorer_unavailable,
    ngram_counts,
    signature,
    tokenize_corpus,
)

__all__ = [
    "tokenize_corpus", "ngram_counts", "signature", "MeanOfItems", "JavaScorer", "MetricUnavailableError",
    "java_scorer_unavailable", "reference_streams", "bleu_by_source_length", "length_bucket_label", "UNSCORED",
]  # fmt: skip
