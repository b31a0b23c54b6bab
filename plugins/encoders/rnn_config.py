"""The options of the ``rnn``, ``gru`` and ``lstm`` encoders, apart from their module: a config is checked without
torch."""

from __future__ import annotations

from dataclasses import dataclass

from zoo.api import TRAINED_BYTES, at_least, in_unit_interval, within_memory


@dataclass
class RecurrentConfig:
    hidden_size: int = 128  # units per direction and layer
    layers: int = 1  # stacked recurrent layers
    bidirectional: bool = True  # also read the sentence right-to-left
    dropout: float = 0.1  # between stacked layers and on the outputs

    def __post_init__(self) -> None:
        at_least(self, "hidden_size", 1)
        at_least(self, "layers", 1)
        in_unit_interval(self, "dropout")
        directions = 2 if self.bidirectional else 1
        within_memory(
            self,
            ("hidden_size", "layers"),
            directions * self.layers * self.hidden_size**2 * TRAINED_BYTES,
            "the recurrent weights in training (one hidden x hidden matrix a layer)",
        )
