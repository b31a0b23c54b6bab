"""The ``word`` tokenizer's options, apart from its module so that a config is checked without torch."""

from __future__ import annotations

from dataclasses import dataclass

from zoo.api import at_least


@dataclass
class WordConfig:
    min_frequency: int = 1  # words seen fewer times in training become <unk>
    lowercase: bool = False  # lowercase text before splitting it

    def __post_init__(self) -> None:
        at_least(self, "min_frequency", 1)
