"""The ``tokens`` frontend's options, apart from its module so that a config is checked without torch."""

from __future__ import annotations

from dataclasses import dataclass

from zoo.api import at_least, in_unit_interval


@dataclass
class TokensConfig:
    # embedding size = output_dim; null: the encoder's width (a Transformer's d_model, else 128)
    dim: int | None = None
    scale: bool = False  # multiply embeddings by sqrt(dim)
    dropout: float = 0.1  # dropout on the embedded vectors

    def __post_init__(self) -> None:
        at_least(self, "dim", 1)
        in_unit_interval(self, "dropout")
