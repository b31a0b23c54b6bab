"""Data contracts: special token ids, dataset items, datasets and tokenizers."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

# Special token ids shared by every tokenizer.
PAD, BOS, EOS, UNK = 0, 1, 2, 3
SPECIAL_TOKENS = ("<pad>", "<s>", "</s>", "<unk>")


SPLITS = ("train", "val", "test")


@dataclass(frozen=True)
class Item:
    """One unit of a dataset: an id, a source and one or more references.

    ``source`` is what the task's source codec reads: a sentence for translation,
    an image for captioning. Training draws one (source, reference) pair per
    reference; evaluation scores one hypothesis per item against all its references.
    """

    id: str
    source: Any
    references: tuple[str, ...]

    def __post_init__(self) -> None:
        if not self.references:
            raise ValueError(f"item {self.id!r} has no reference; every item needs at least one")


@dataclass(frozen=True, eq=False)
class ImageSource:
    """An image an item describes: a file on disk, or pixels made in memory (synthetic scenes).

    ``key`` names the image stably across runs and machines (the path relative to
    the image root, a scene's id); precomputed features and caches are keyed by it.
    Exactly one of ``path`` (any format Pillow reads) and ``pixels`` ((H, W, 3)
    uint8 RGB) is set.
    """

    key: str
    path: str | None = None
    pixels: np.ndarray | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if (self.path is None) == (self.pixels is None):
            raise ValueError(f"image {self.key!r} needs exactly one of a path and pixels")

    def __eq__(self, other: object) -> bool:  # pixels compare by value, not by array identity
        if not isinstance(other, ImageSource):
            return NotImplemented
        same_pixels = (self.pixels is None) == (other.pixels is None) and (
            self.pixels is None or np.array_equal(self.pixels, other.pixels)
        )
        return self.key == other.key and self.path == other.path and same_pixels

    def __hash__(self) -> int:
        return hash((self.key, self.path))

    def __str__(self) -> str:
        return self.key


@dataclass(frozen=True)
class SourceDescription:
    """What a frontend is built from: the kind of source and its sizes.

    ``kind`` is ``"tokens"`` (``vocab_size`` ids), ``"image"`` (``channels`` x
    ``height`` x ``width`` pixels), ``"features"`` (``feature_dim`` floats per
    position), or a kind of a task's own with the sizes it needs (a task of numbers:
    ``vocab_size`` ids). A frontend checks that it can read the kind it is given.
    """

    kind: str
    vocab_size: int = 0
    channels: int = 0
    height: int = 0
    width: int = 0
    feature_dim: int = 0

    def __str__(self) -> str:
        sizes = {
            "tokens": f"{self.vocab_size} ids",
            "image": f"{self.channels}x{self.height}x{self.width}",
            "features": f"{self.feature_dim} features",
        }
        return f"{self.kind} ({sizes.get(self.kind, f'{self.vocab_size} ids' if self.vocab_size else '?')})"


class Dataset:
    """Produces the items of every split. ``Config`` holds its options.

    ``source_kind`` names what its sources are (``"text"``, ``"image"``); a task
    accepts datasets of its own source kind only.
    """

    source_kind: str = "text"

    def __init__(self, cfg: Any) -> None:
        self.cfg = cfg

    def splits(self) -> dict[str, list[Item]]:
        """``{"train": [...], "val": [...], "test": [...]}``, item ids unique within a split."""
        raise NotImplementedError

    def files(self) -> list[Path] | None:
        """The files the items are read from, so data prepared from them (``zoo prepare``) is keyed by their
        contents and prepared again when one changes; ``[]``: items made from the config alone (generated).
        None (the default): not known, so the items themselves are read and hashed at every start."""
        return None


class Tokenizer:
    """Text <-> ids. Ids 0..3 are PAD, BOS, EOS, UNK in every tokenizer.

    ``encode`` returns ids without BOS/EOS; the data module adds them.
    """

    def __init__(self, cfg: Any) -> None:
        self.cfg = cfg

    def train(self, texts: Iterable[str]) -> None:
        raise NotImplementedError

    def encode(self, texts: list[str]) -> list[list[int]]:
        raise NotImplementedError

    def decode(self, ids: list[list[int]]) -> list[str]:
        """Ids to text; special tokens are dropped."""
        raise NotImplementedError

    @property
    def vocab_size(self) -> int:
        raise NotImplementedError

    def tokens(self) -> list[str]:
        """Each id's token, in id order: what the ids mean, so two vocabularies can be compared (``init_from``
        refuses weights whose ids mean other tokens). The default decodes each id alone."""
        return self.decode([[i] for i in range(self.vocab_size)])

    def save(self, path: str) -> None:
        """Write everything needed to rebuild the tokenizer to the file ``path``."""
        raise NotImplementedError

    def load(self, path: str) -> None:
        """Restore a tokenizer written by :meth:`save` (config comes from the constructor)."""
        raise NotImplementedError
