"""The references of the training items, decoded from their target rows.

Training draws one target row per reference of an item, and prepared data keeps only those ids (the training
items themselves are never held), so the rows are where every training item's references are found, whether the
splits were prepared or encoded in memory: both give the same text. It is the text the model's outputs become
(``Task.decode_targets``), so a sampled output and its references are compared in one form (an unknown word is
dropped from both). Self-critical training scores its samples against them (:mod:`zoo.training.scst`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from zoo.contracts import Task

#: Target rows decoded at a time while every item is read (:meth:`TrainingReferences.__iter__`).
CHUNK_ROWS = 10_000


class TrainingReferences:
    """Every training item's references by item index (``batch["index"]``), decoded when asked for.

    ``targets`` holds every target row (also those training skips for their length) and ``target_item`` the item
    each belongs to; an item's rows are consecutive, as the split is encoded item by item.
    """

    def __init__(self, targets: Sequence, target_item: np.ndarray, items: int, task: Task) -> None:
        self.targets, self.task = targets, task
        self.bounds = np.searchsorted(np.asarray(target_item), np.arange(items + 1))  # item k: rows bounds[k]..[k+1]

    def __len__(self) -> int:
        return len(self.bounds) - 1

    def of(self, items: Sequence[int]) -> list[tuple[str, ...]]:
        """The references of ``items``, in their order, decoded in one call."""
        spans = [(int(self.bounds[k]), int(self.bounds[k + 1])) for k in items]
        texts = self.task.decode_targets([self.targets[row] for start, end in spans for row in range(start, end)])
        return _split(texts, [end - start for start, end in spans])

    def __iter__(self) -> Iterator[tuple[str, ...]]:
        """Every item's references in item order, decoded :data:`CHUNK_ROWS` rows at a time."""
        first = 0
        while first < len(self):
            last = int(np.searchsorted(self.bounds, self.bounds[first] + CHUNK_ROWS, side="right")) - 1
            last = min(max(last, first + 1), len(self))  # at least one item, however many rows it has
            yield from self.of(range(first, last))
            first = last


def _split(texts: list[str], counts: list[int]) -> list[tuple[str, ...]]:
    """``texts`` cut into consecutive groups of ``counts``."""
    ends = np.cumsum(counts)
    return [tuple(texts[end - count : end]) for count, end in zip(counts, ends.tolist())]
