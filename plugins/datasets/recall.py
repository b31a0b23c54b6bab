"""The ``recall`` dataset: associative recall and selective copying over long sequences; generated, no files.

Synthetic probes of what a sequence model can keep in memory, the tasks on which linear-time models were
compared with attention:

* ``multi_query`` (Zoology's multi-query associative recall, MQAR; Arora et al., 2023): ``pairs`` key-value pairs
  (distinct keys from ``key_vocab`` keys, distinct values from a separate ``value_vocab``), then random filler
  in which every key is asked once. Pair ``i``'s query stands ``2 g`` positions after the pairs, the gap ``g``
  drawn without replacement with probability proportional to ``(g + 1) ** (gap_exponent - 1)`` (Zoology's power
  law: most queries come soon, a few late). The filler is drawn uniformly from every key and value, so a
  filler token may look like a query; only the queries are scored (``filler=constant``: the token ``.``
  instead, as in Zoology's figure 2, ``random_non_queries=False``). The reference tags every position, ``_``
  (unscored) except at the queries, which carry their value (``task=tagging``)::

      k3 v7 k12 v0 k5 v2 k12 v9 k5 k3 v0 ...  ->  _ _ _ _ _ _ v0 _ v2 v7 _ ...

  A model answers at each query from what it read before, so accuracy is averaged over ``pairs`` recalls per
  sequence. Values are distinct within a sequence: a guess that ignores the key (the most frequent value) is
  right once in ``pairs``.
* ``associative_recall`` (MQAR with one query): ``pairs`` key-value pairs with
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
from typing import Any

import numpy as np

from zoo.api import SPLITS, Choice, ConfigError, Dataset, Item, at_least, one_of, positive, register, within_memory
from zoo.api.metrics import UNSCORED

FILLER = "."
#: Bytes a drawn token takes at least: one reference in the splits' object arrays.
TOKEN_BYTES = 8


class Mode(Choice):
    """Which probe the sequences are (module docstring)."""

    multi_query = "multi_query"
    associative_recall = "associative_recall"
    selective_copying = "selective_copying"


class Filler(Choice):
    """What stands between multi_query's pairs and queries: Zoology's ``random_non_queries`` on or off."""

    random = "random"  # keys and values drawn uniformly: a filler token may look like a query
    constant = "constant"  # the filler token ``.`` (Zoology's figure 2: ``random_non_queries=False``)


@register("dataset", "recall")
class RecallDataset(Dataset):
    """Associative recall (Arora et al., 2023) or selective copying (Gu & Dao, 2023): tokens in, recalled tokens out.

    Sources are ``length`` whitespace-separated tokens: keys ``k<i>``, values ``v<i>`` and the filler (``.``, or
    random keys and values in multi_query unless ``filler=constant``). References are a tag per source token
    (multi_query), the recalled value (associative_recall) or the copied tokens in order (selective_copying).
    """

    @dataclass
    class Config:
        mode: Mode = Mode.multi_query  # recall every queried key's value, one queried key's, or copy the data tokens
        seed: int = 0  # chooses the sequences; each split draws from its own stream
        train_size: int = 10000  # sequences in the training split
        val_size: int = 1000  # sequences in the validation split
        test_size: int = 1000  # sequences in the test split
        length: int = 256  # tokens per source sequence
        pairs: int = 16  # associative_recall: key-value pairs before the filler
        scatter: bool = False  # associative_recall: the pairs at random places among the filler, not at the start
        copies: int = 16  # selective_copying: data tokens to copy
        vocab_size: int = 64  # associative_recall: keys and values, half each; selective_copying: data tokens
        key_vocab: int = 1024  # multi_query: the keys a sequence's distinct keys are drawn from (Zoology: 4096)
        value_vocab: int = 1024  # multi_query: the values, apart from the keys; distinct within a sequence
        gap_exponent: float = 0.01  # multi_query: a query's gap g has probability ~ (g + 1)^(a - 1) (Zoology: 0.01)
        filler: Filler = Filler.random  # multi_query: random keys and values between the queries, or the token "."

        def __post_init__(self) -> None:
            one_of(self, "mode", Mode)
            one_of(self, "filler", Filler)
            for size in ("train_size", "val_size", "test_size"):
                at_least(self, size, 1)
            at_least(self, "pairs", 1)
            at_least(self, "copies", 1)
            if self.mode == Mode.associative_recall:
                at_least(self, "vocab_size", 2 * self.pairs, "the pairs need distinct keys: vocab_size / 2 of them")
                at_least(self, "length", 2 * self.pairs + 1, "the pairs and the query must fit: 2 * pairs + 1")
            elif self.mode == Mode.selective_copying:
                at_least(self, "vocab_size", 1)
                if self.length < self.copies:
                    raise ConfigError(f"length={self.length} must hold the copies={self.copies} data tokens")
            elif self.mode == Mode.multi_query:  # distinct keys and values, and a query slot for each pair
                at_least(self, "key_vocab", self.pairs, "the pairs need distinct keys")
                at_least(self, "value_vocab", self.pairs, "the pairs need distinct values")
                positive(self, "gap_exponent", "Zoology's power law uses 0.01; 1 places the queries uniformly")
                at_least(self, "length", 4 * self.pairs, "the pairs and a query two positions apart each: 4 * pairs")

        def check_composed(self, cfg: Any) -> None:
            """The splits are drawn in memory, a token at a time (:data:`TOKEN_BYTES` each), and a sequence wider than
            a whole batch (``data.max_tokens``) is refused by validation: either way nothing would train."""
            tokens = (self.train_size + self.val_size + self.test_size) * self.length
            within_memory(self, ("length", "train_size"), tokens * TOKEN_BYTES, "the sequences of the three splits")
            if self.length > cfg.data.max_tokens:
                raise ConfigError(
                    f"length={self.length} tokens is wider than a whole batch (data.max_tokens={cfg.data.max_tokens}), "
                    "so validation would refuse every sequence; lower dataset.length or raise data.max_tokens"
                )

    def files(self) -> list:
        return []  # generated from the config alone

    def splits(self) -> dict[str, list[Item]]:
        cfg = self.cfg
        sizes = {"train": cfg.train_size, "val": cfg.val_size, "test": cfg.test_size}
        draw = {Mode.multi_query: self._multi_query, Mode.associative_recall: self._recall}.get(cfg.mode, self._copying)
        items = {}
        for number, split in enumerate(SPLITS):
            sources, labels = draw(np.random.default_rng([cfg.seed, number]), sizes[split])
            items[split] = [
                Item(f"{split}-{index}", " ".join(source), (" ".join(label),))
                for index, (source, label) in enumerate(zip(sources, labels))
            ]
        return items

    def _multi_query(self, rng: np.random.Generator, size: int) -> tuple[np.ndarray, np.ndarray]:
        """(size, length) source tokens and (size, length) tags of multi-query recall (module docstring)."""
        cfg = self.cfg
        context, slots = 2 * cfg.pairs, (cfg.length - 2 * cfg.pairs) // 2
        keys = np.stack([rng.choice(cfg.key_vocab, cfg.pairs, replace=False) for _ in range(size)])  # (N, P)
        values = np.stack([rng.choice(cfg.value_vocab, cfg.pairs, replace=False) for _ in range(size)])  # (N, P)
        # The gaps: P of the slots without replacement, each in proportion to its weight (the P smallest of
        # exponential arrival times divided by the weights: sampling one after another, vectorised).
        weights = (np.arange(slots) + 1.0) ** (cfg.gap_exponent - 1)  # (slots,)
        arrivals = rng.exponential(size=(size, slots)) / weights
        chosen = np.argpartition(arrivals, cfg.pairs - 1, axis=1)[:, : cfg.pairs]  # (N, P), in no useful order
        gaps = rng.permuted(chosen, axis=1)  # (N, P): pair i is asked at gap i, the pairs in random order
        key_names, value_names = _names("k", cfg.key_vocab), _names("v", cfg.value_vocab)
        every_token = np.concatenate([key_names, value_names])
        sources = every_token[rng.integers(0, len(every_token), (size, cfg.length))]  # drawn either way: same stream
        if cfg.filler == Filler.constant:
            sources[:] = FILLER
        sources[:, 0:context:2], sources[:, 1:context:2] = key_names[keys], value_names[values]
        queries = context + 2 * gaps  # (N, P)
        np.put_along_axis(sources, queries, key_names[keys], axis=1)
        tags = np.full((size, cfg.length), UNSCORED, dtype=object)
        np.put_along_axis(tags, queries, value_names[values], axis=1)
        return sources, tags

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
