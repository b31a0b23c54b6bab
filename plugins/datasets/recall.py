"""The ``recall`` dataset: associative recall and selective copying over long sequences; generated, no files.

Two synthetic probes of what a sequence model can keep in memory, the tasks on which linear-time models were
compared with attention:

* ``associative_recall`` (Zoology's MQAR, Arora et al., 2023, with one query): ``pairs`` key-value pairs with
  distinct keys, filler up to the sequence's length, then one of the keys; the label is its value::

      k3 v7 k12 v0 k5 v7 . . . . . . k12        ->  v0

  Keys and values are two vocabularies of ``vocab_size / 2`` tokens each; the query sits at the end, so the
  model must keep every pair across the filler (or attend back to it). Chance is ``2 / vocab_size``. With
  ``scatter`` the pairs stand at random places among the filler (each key still just before its value)::

      . . k3 v7 . . k12 v0 . . k5 v7 . . . k12  ->  v0

  At fixed places a time-invariant model can read each pair from its fixed distance to the query (a kernel can
  single out lags); scattered, only a model that chooses by content what to keep can (Gu & Dao, 2023, make the
  same point with selective copying).
* ``selective_copying`` (Gu & Dao, 2023): ``copies`` data tokens at random positions among filler; the
  output is the data tokens in order::

      . v4 . . v9 . v4 . . . v1 .               ->  v4 v9 v4 v1

  The output has ``copies`` tokens, so it trains with a sequence decoder (``task=translation``); the
  classification task needs ``copies=1`` (find the one data token).

Each split draws from its own numpy stream (seeded with ``[seed, split]``), vectorised over the items: tens
of thousands of sequences take a second, validation and test come from other streams than training and do
not change with the training split's size.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from zoo.api import SPLITS, Choice, ConfigError, Dataset, Item, at_least, one_of, register

FILLER = "."


class Mode(Choice):
    """Which probe the sequences are (module docstring)."""

    associative_recall = "associative_recall"
    selective_copying = "selective_copying"


@register("dataset", "recall")
class RecallDataset(Dataset):
    """Associative recall (Arora et al., 2023) or selective copying (Gu & Dao, 2023): tokens in, recalled tokens out.

    Sources are ``length`` whitespace-separated tokens: keys ``k<i>``, values ``v<i>`` and the filler ``.``.
    References are the recalled value (associative_recall) or the copied tokens in order (selective_copying).
    """

    @dataclass
    class Config:
        mode: Mode = Mode.associative_recall  # recall the queried key's value, or copy the data tokens in order
        seed: int = 0  # chooses the sequences; each split draws from its own stream
        train_size: int = 10000  # sequences in the training split
        val_size: int = 1000  # sequences in the validation split
        test_size: int = 1000  # sequences in the test split
        length: int = 256  # tokens per source sequence
        pairs: int = 16  # associative_recall: key-value pairs before the filler
        scatter: bool = False  # associative_recall: the pairs at random places among the filler, not at the start
        copies: int = 16  # selective_copying: data tokens to copy
        vocab_size: int = 64  # associative_recall: keys and values, half each; selective_copying: data tokens

        def __post_init__(self) -> None:
            one_of(self, "mode", Mode)
            for size in ("train_size", "val_size", "test_size"):
                at_least(self, size, 1)
            at_least(self, "pairs", 1)
            at_least(self, "copies", 1)
            if self.mode == Mode.associative_recall:
                at_least(self, "vocab_size", 2 * self.pairs, "the pairs need distinct keys: vocab_size / 2 of them")
                at_least(self, "length", 2 * self.pairs + 1, "the pairs and the query must fit: 2 * pairs + 1")
            else:
                at_least(self, "vocab_size", 1)
                if self.length < self.copies:
                    raise ConfigError(f"length={self.length} must hold the copies={self.copies} data tokens")

    def files(self) -> list:
        return []  # generated from the config alone

    def splits(self) -> dict[str, list[Item]]:
        cfg = self.cfg
        sizes = {"train": cfg.train_size, "val": cfg.val_size, "test": cfg.test_size}
        draw = self._recall if cfg.mode == Mode.associative_recall else self._copying
        items = {}
        for number, split in enumerate(SPLITS):
            sources, labels = draw(np.random.default_rng([cfg.seed, number]), sizes[split])
            items[split] = [
                Item(f"{split}-{index}", " ".join(source), (" ".join(label),))
                for index, (source, label) in enumerate(zip(sources, labels))
            ]
        return items

    def _recall(self, rng: np.random.Generator, size: int) -> tuple[np.ndarray, np.ndarray]:
        """(size, length) source tokens and (size, 1) labels of associative recall."""
        cfg = self.cfg
        half = cfg.vocab_size // 2
        keys = np.stack([rng.choice(half, cfg.pairs, replace=False) for _ in range(size)])  # (N, P), distinct
        values = rng.integers(0, half, (size, cfg.pairs))  # (N, P)
        query = rng.integers(0, cfg.pairs, size)  # (N,): which pair is asked for
        key_names, value_names = _names("k", half), _names("v", half)
        sources = np.full((size, cfg.length), FILLER, dtype=object)
        starts = 2 * np.arange(cfg.pairs)[None].repeat(size, axis=0)  # (N, P): where each pair's key stands
        if cfg.scatter:  # P of the (length - 1) // 2 two-token slots before the query, in order
            slots = rng.random((size, (cfg.length - 1) // 2)).argpartition(cfg.pairs - 1, axis=1)[:, : cfg.pairs]
            starts = 2 * np.sort(slots, axis=1)
        np.put_along_axis(sources, starts, key_names[keys], axis=1)
        np.put_along_axis(sources, starts + 1, value_names[values], axis=1)
        rows = np.arange(size)
        sources[:, -1] = key_names[keys[rows, query]]
        return sources, value_names[values[rows, query]][:, None]

    def _copying(self, rng: np.random.Generator, size: int) -> tuple[np.ndarray, np.ndarray]:
        """(size, length) source tokens and (size, copies) labels of selective copying."""
        cfg = self.cfg
        # The data tokens' positions: the `copies` smallest of random keys per position, in order.
        positions = np.sort(np.argpartition(rng.random((size, cfg.length)), cfg.copies - 1, axis=1)[:, : cfg.copies])
        data = _names("v", cfg.vocab_size)[rng.integers(0, cfg.vocab_size, (size, cfg.copies))]  # (N, C)
        sources = np.full((size, cfg.length), FILLER, dtype=object)
        np.put_along_axis(sources, positions, data, axis=1)
        return sources, data


def _names(prefix: str, count: int) -> np.ndarray:
    """Token names ``prefix0 .. prefix<count-1>`` as an object array, indexable by id arrays."""
    return np.array([f"{prefix}{i}" for i in range(count)], dtype=object)
