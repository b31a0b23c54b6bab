"""The ``classification`` task: a sequence of tokens in, one label out.

Long-range sequence classification as in the Long Range Arena (Tay et al., 2021): the model reads a whole
sequence (a ListOps expression, a key-value list and a query) and names one class. zoo's outputs are text
written by a decoder, so a label is a one-token output: the target side is a word-level vocabulary of the
training labels (``tokenizer=word`` trained on them, whatever tokenizer reads the sources), an output may have
the label and the end of sentence, and the ``classifier`` decoder pools the encoder's memory and names the
label first. Any decoder still works (an ``rnn`` decoder that attends, say); the output limit keeps it to
one token.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from zoo.api import Item, TaskError, build, must_be, register
from zoo.api.metrics import length_bucket_label
from zoo.api.text import LabelTask

#: Ids an output may have: the label and the end of sentence.
OUTPUT_IDS = 2


@register("task", "classification")
class ClassificationTask(LabelTask):
    """Sequence classification: token sequences through a tokenizer, one label each; accuracy, by source length.

    Sources are text whose tokens the run's tokenizer reads (``word`` by default: whitespace-separated
    tokens, one id each); an empty one becomes ``[UNK]``. Every reference must be one word (a label); a
    dataset whose references are longer (``recall`` with ``mode=selective_copying``) is refused when the codecs
    are trained. Without other choices, ``task=classification`` trains on ``listops`` with the ``classifier``
    head over a GRU encoder.
    """

    default_metrics = ("accuracy",)
    default_monitor = "accuracy"
    one_token_outputs = True
    component_defaults = {"dataset": "listops", "tokenizer": "word", "decoder": "classifier"}

    @dataclass
    class Config:
        # accuracy by source length in tokens: the buckets' upper edges (zoo compare's columns and charts)
        length_buckets: list[int] = field(default_factory=lambda: [64, 128, 256, 512, 1024, 2048])

        def __post_init__(self) -> None:
            must_be(
                self,
                "length_buckets",
                lambda e: min(e, default=1) >= 1 and list(e) == sorted(set(e)),
                "positive token counts in increasing order",
            )

    def labels(self, references: Iterable[str]) -> list[str]:
        return sorted(set(references))

    def check_labels(self, labels: list[str]) -> None:
        """Every label must be one word of the label vocabulary."""
        longer = next(
            ((label, len(ids)) for label, ids in zip(labels, self.encode_targets(labels)) if len(ids) != 1), None
        )
        if longer is not None:
            raise TaskError(
                f"task=classification needs one-word labels, but a training reference is {longer[0]!r} "
                f"({longer[1]} tokens); choose a dataset of labels, or task=translation for sequence outputs"
            )

    def output_limit(self, source: torch.Tensor) -> torch.Tensor:
        return torch.full((source.size(0),), OUTPUT_IDS, dtype=torch.long, device=source.device)

    # ------------------------------------------------------------------ reporting
    def breakdowns(self, items: Sequence[Item], hypotheses: Sequence[str]) -> dict[str, Any]:
        """Accuracy by source length in whitespace-separated tokens: where a model's memory gives out."""
        edges = list(self.cfg.length_buckets)
        accuracy = build("metric", {"name": "accuracy"})
        groups: dict[str, tuple[list[str], list[Sequence[str]]]] = {}
        for item, hypothesis in zip(items, hypotheses):
            outputs, references = groups.setdefault(length_bucket_label(len(str(item.source).split()), edges), ([], []))
            outputs.append(hypothesis)
            references.append(item.references)
        order = [length_bucket_label(n, edges) for n in [*edges, edges[-1] + 1 if edges else 1]]
        return {
            "accuracy_by_length": {
                label: {"accuracy": accuracy.corpus_score(*groups[label]), "count": len(groups[label][0])}
                for label in order
                if label in groups
            }
        }
