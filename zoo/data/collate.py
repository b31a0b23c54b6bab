"""Padding and the batch dict every task's batches share.

A batch is a dict (``B`` items, ``T`` the longest target in the batch)::

    source      the task's source batch (token ids (B, S) for text)
    target_in   (B, T) long   [BOS] + y       (decoder input, teacher forcing)
    target_out  (B, T) long   y + [EOS]       (what the decoder must predict)
    index       (B,)   long   position of each item in its split

``(batch["target_out"] != PAD).sum()`` counts the real target tokens.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import chain
from typing import Any

import numpy as np
import torch

from zoo.contracts import BOS, EOS, PAD


def pad(sequences: Sequence[Sequence[int]]) -> torch.Tensor:
    """Token id lists -> (B, longest) long tensor, PAD on the right (at least one column).

    One array filled through a mask, row after row, rather than a tensor per row: this runs for every batch in
    the training loop (or its data workers), where a tensor per row cost 3 ms of a 4 ms batch.
    """
    lengths = np.fromiter(map(len, sequences), dtype=np.int64, count=len(sequences))
    batch = np.full((len(sequences), max(1, int(lengths.max(initial=0)))), PAD, dtype=np.int64)
    batch[np.arange(batch.shape[1]) < lengths[:, None]] = np.fromiter(
        chain.from_iterable(sequences), dtype=np.int64, count=int(lengths.sum())
    )
    return torch.from_numpy(batch)


class Collate:
    """Turns ``(encoded source, target ids, item index)`` triples into the batch dict above.

    ``collate_sources`` is the task's: it knows what a source batch looks like.
    A class, not a closure, so data-loader workers can pickle it.
    """

    def __init__(self, collate_sources: Callable[[Sequence[Any]], torch.Tensor]) -> None:
        self.collate_sources = collate_sources

    def __call__(self, rows: Sequence[tuple[Any, Sequence[int], int]]) -> dict[str, torch.Tensor]:
        return {
            "source": self.collate_sources([source for source, _, _ in rows]),
            "target_in": pad([[BOS, *target] for _, target, _ in rows]),
            "target_out": pad([[*target, EOS] for _, target, _ in rows]),
            "index": torch.tensor([index for _, _, index in rows], dtype=torch.long),
        }
