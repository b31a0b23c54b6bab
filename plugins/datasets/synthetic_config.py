"""The ``synthetic`` dataset's options, apart from its module so that a config is checked without torch."""

from __future__ import annotations

from dataclasses import dataclass

from zoo.api import ConfigError, at_least


@dataclass
class SyntheticConfig:
    seed: int = 0  # chooses the sentences (the lexicon is fixed)
    train_size: int = 8000  # sentence pairs in the training split
    val_size: int = 300  # sentence pairs in the validation split
    test_size: int = 500  # sentence pairs in the test split
    min_words: int = 3  # shortest source sentence, in words (at least 2)
    max_words: int = 30  # longest source sentence, in words
    length_split: bool = False  # train/val short, test long (below)
    train_max_words: int = 20  # with length_split: longest train/val sentence
    test_min_words: int = 21  # with length_split: shortest test sentence

    def __post_init__(self) -> None:
        for size in ("train_size", "val_size", "test_size"):
            at_least(self, size, 1)
        at_least(self, "min_words", 2, "the shortest sentence has 2 words")
        at_least(self, "max_words", self.min_words, "raise max_words or lower min_words")
        if self.length_split and not (self.min_words <= self.train_max_words and self.test_min_words <= self.max_words):
            raise ConfigError(
                f"length_split needs min_words <= train_max_words and test_min_words <= max_words; got "
                f"{self.min_words}, {self.train_max_words}, {self.test_min_words}, {self.max_words}"
            )
