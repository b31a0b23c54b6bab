"""The ``additive`` scorer's options, apart from its module so that a config is checked without torch."""

from __future__ import annotations

from dataclasses import dataclass

from zoo.api import at_least


@dataclass
class AdditiveConfig:
    hidden_size: int = 128  # width A of the attention MLP

    def __post_init__(self) -> None:
        at_least(self, "hidden_size", 1)
