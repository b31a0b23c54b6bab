"""Data contracts: special token ids, dataset items, datasets and tokenizers."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

# Special token ids shared by every tokenizer.
PAD, BOS, EOS, UNK = 0, 1, 2, 3
SPECIAL_TOKENS = ("<pad>", "<s>", "</s>", "<unk>")


@dataclass(frozen=True)
class Example:
    """One parallel pair; ``source`` is text for translation (an image later)."""

    source: Any
    target: str


class Dataset:
    """Produces the train/val/test examples. ``Config`` holds its options."""

    def __init__(self, cfg: Any) -> None:
        self.cfg = cfg

    def splits(self) -> dict[str, list[Example]]:
        """``{"train": [...], "val": [...], "test": [...]}``."""
        raise NotImplementedError


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

    def save(self, path: str) -> None:
        """Write everything needed to rebuild the tokenizer to the file ``path``."""
        raise NotImplementedError

    def load(self, path: str) -> None:
        """Restore a tokenizer written by :meth:`save` (config comes from the constructor)."""
        raise NotImplementedError
