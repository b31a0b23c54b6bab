"""Length-bucketed sampling within a token budget.

A batch holds as many examples as fit a token budget,
``B * max(S, T) <= data.max_tokens``. The budget bounds a batch's memory only if no
single example exceeds it: the data module never gives one (it skips such training
pairs and refuses such evaluation items); handed one, the sampler would give it a batch
of its own. Sorting by size first means little padding (the bucketing of
Sutskever et al., 2014 and of fairseq's token-based batches, Ott et al., 2019).
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence

import numpy as np
from torch.utils.data import Sampler

from zoo.errors import ZooError


class DataError(ZooError, ValueError):
    """The data cannot be turned into batches as configured."""


class LengthBucketSampler(Sampler[int]):
    """Example indices ordered so that neighbours have similar sizes.

    ``shuffle=False`` (evaluation): every index, sorted by size.
    ``shuffle=True`` (training): a random permutation drawn from ``(seed, epoch)``,
    cut into chunks of ``chunk_size``, each chunk sorted by size (ties stay in
    random order). Batches then pad little, yet differ every epoch; the same
    seed and epoch always give the same order. Lightning calls :meth:`set_epoch`
    before each training epoch. Sizes and order are numpy arrays, so a corpus of
    millions of rows holds no Python object per row between epochs.
    """

    def __init__(self, sizes: Sequence[int], shuffle: bool, seed: int = 0, chunk_size: int = 10_000) -> None:
        self.sizes = np.asarray(sizes, dtype=np.int64)
        self.shuffle = shuffle
        self.seed = seed
        self.chunk_size = max(1, chunk_size)
        self.epoch = 0
        self._order: tuple[int, np.ndarray] | None = None  # (epoch, order): a loader built twice draws it once

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def rng(self, purpose: str) -> random.Random:
        """A generator fixed by seed, epoch and ``purpose`` (independent streams for order and batches)."""
        return random.Random(f"{self.seed}:{self.epoch}:{purpose}")

    def order(self) -> np.ndarray:
        """The indices in the order described above, computed once per epoch. Python's shuffle draws the
        permutation (the same on every platform and numpy version); stable sorts keep ties in that order."""
        if self._order is not None and self._order[0] == self.epoch:
            return self._order[1]
        if not self.shuffle:
            order = np.argsort(self.sizes, kind="stable")
        else:
            permutation = list(range(len(self.sizes)))
            self.rng("order").shuffle(permutation)
            order = np.fromiter(permutation, dtype=np.int64, count=len(permutation))
            del permutation
            for start in range(0, len(order), self.chunk_size):
                chunk = order[start : start + self.chunk_size]
                chunk[:] = chunk[np.argsort(self.sizes[chunk], kind="stable")]
        self._order = (self.epoch, order)
        return order

    def __iter__(self) -> Iterator[int]:
        return iter(self.order().tolist())

    def __len__(self) -> int:
        return len(self.sizes)


class TokenBudgetBatchSampler(Sampler[list[int]]):
    """Cuts the index stream of a :class:`LengthBucketSampler` into batches within a token budget.

    A batch is closed when one more pair would make ``batch size * largest size``
    exceed ``max_tokens``, or when the size drops (a new sorted chunk begins).
    Training batches are then shuffled. With ``num_replicas > 1`` (DDP) process
    ``rank`` takes every ``num_replicas``-th batch: in training all the same number
    (:meth:`training_share`), in evaluation every batch exactly once (:meth:`evaluation_share`).
    ``skip``: the first batches of the epoch are not given again (a run resumed in the middle of an
    epoch saw them before it stopped); the length stays the whole epoch's, as the training loop counts on.
    A batch is a span ``(start, end)`` of the epoch's order, computed once per epoch.
    """

    def __init__(
        self, sampler: LengthBucketSampler, max_tokens: int, num_replicas: int = 1, rank: int = 0, skip: int = 0
    ) -> None:
        self.sampler = sampler
        self.max_tokens = max_tokens
        self.num_replicas = num_replicas
        self.rank = rank
        self.skip = skip
        self._epoch: tuple[int, np.ndarray, list[tuple[int, int]]] | None = None

    def spans(self) -> tuple[np.ndarray, list[tuple[int, int]]]:
        """The epoch's order and this process's batches as spans of it."""
        if self._epoch is None or self._epoch[0] != self.sampler.epoch:
            order = self.sampler.order()
            spans = self._cut(self.sampler.sizes[order])
            if self.sampler.shuffle:
                self.sampler.rng("batches").shuffle(spans)
            if self.num_replicas > 1:
                spans = self.training_share(spans) if self.sampler.shuffle else self.evaluation_share(spans)
            self._epoch = (self.sampler.epoch, order, spans)
        return self._epoch[1], self._epoch[2]

    def _cut(self, sizes: np.ndarray) -> list[tuple[int, int]]:
        """Batches as spans of the ordered ``sizes``: a batch ends where the size drops (a new chunk) and before
        the row that would take it over the budget. Between drops sizes never fall, so the row just added is the
        longest and a batch from ``start`` may reach row ``k`` while ``(k - start + 1) * sizes[k] <= max_tokens``:
        a bisection per batch, not a step per row."""
        drops = np.flatnonzero(sizes[1:] < sizes[:-1]) + 1
        bounds = [0, *drops.tolist(), len(sizes)]
        spans: list[tuple[int, int]] = []
        for start, segment_end in zip(bounds, bounds[1:]):
            while start < segment_end:
                end = self._batch_end(sizes, start, segment_end)
                spans.append((start, end))
                start = end
        return spans

    def _batch_end(self, sizes: np.ndarray, start: int, segment_end: int) -> int:
        """The first row after ``start`` that would take the batch over the budget (or ``segment_end``)."""
        low, high = start + 1, segment_end
        while low < high:
            middle = (low + high) // 2
            if (middle - start + 1) * int(sizes[middle]) > self.max_tokens:
                high = middle
            else:
                low = middle + 1
        return low

    def batches(self) -> list[list[int]]:
        order, spans = self.spans()
        return [order[a:b].tolist() for a, b in spans]

    def training_share(self, batches: list) -> list:
        """This process's training batches, as many as every other process's.

        Every step all-reduces the gradients, so a process with one batch more would wait
        for the others forever; the last ``len(batches) % num_replicas`` batches of the
        (shuffled) epoch are left out, different ones each epoch.
        """
        usable = len(batches) // self.num_replicas * self.num_replicas
        if usable == 0:
            raise DataError(f"only {len(batches)} batches for {self.num_replicas} processes; lower data.max_tokens")
        return batches[self.rank : usable : self.num_replicas]

    def evaluation_share(self, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
        """This process's evaluation batches: every batch goes to exactly one process, none is left out.

        Process ``rank`` takes batches ``rank, rank + num_replicas, ...``, so counts differ by
        at most one and the metrics, gathered from all processes, cover the whole split. Each
        process needs one batch at least (Lightning refuses an empty loader on one process and
        would skip its end of evaluation, where the results are gathered), so while there are
        fewer batches than processes the largest is halved: only a split this small is batched
        differently from a single process.
        """
        spans = list(spans)
        while len(spans) < self.num_replicas:
            k = max(range(len(spans)), key=lambda j: spans[j][1] - spans[j][0])
            start, end = spans[k]
            if end - start == 1:
                raise DataError(
                    f"only {len(spans)} evaluation examples for {self.num_replicas} processes; "
                    "use fewer processes (trainer.devices)"
                )
            half = start + (end - start) // 2
            spans[k : k + 1] = [(start, half), (half, end)]
        return spans[self.rank :: self.num_replicas]

    def __iter__(self) -> Iterator[list[int]]:
        order, spans = self.spans()
        skip, self.skip = self.skip, 0  # once: the next pass over this sampler is a whole epoch
        return (order[a:b].tolist() for a, b in spans[skip:])

    def __len__(self) -> int:
        return len(self.spans()[1])
