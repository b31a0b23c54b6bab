"""The ``rnn`` decoder's options and their choices, apart from its module so that a config is checked without torch."""

from __future__ import annotations

from dataclasses import dataclass

from zoo.api import TRAINED_BYTES, Choice, at_least, in_unit_interval, one_of, within_memory


class Cell(Choice):
    """The recurrent cell of every layer."""

    gru = "gru"
    lstm = "lstm"
    rnn = "rnn"


class Style(Choice):
    """How attention is wired into the recurrence (see the ``rnn`` decoder's module)."""

    bahdanau = "bahdanau"
    luong = "luong"


class Bridge(Choice):
    """How the decoder's first state is made from the encoder's summary."""

    learned = "learned"
    zeros = "zeros"


@dataclass
class RNNDecoderConfig:
    cell: Cell = Cell.gru  # recurrent cell; rnn: Elman, tanh
    # bahdanau: query s_{t-1}, context into the cell | luong: query s_t, input feeding
    style: Style = Style.bahdanau
    hidden_size: int = 256  # units per layer; also the attention query size
    embed_dim: int = 128  # target embedding size
    layers: int = 1  # stacked recurrent cells
    dropout: float = 0.1  # on embeddings, between layers and before the vocabulary projection
    bridge: Bridge = Bridge.learned  # initial state: learned (tanh(W enc.state)) | zeros
    tie_embeddings: bool = False  # share the target embedding with the vocabulary projection

    def __post_init__(self) -> None:
        one_of(self, "cell", Cell)
        one_of(self, "style", Style)
        one_of(self, "bridge", Bridge)
        for field in ("hidden_size", "embed_dim", "layers"):
            at_least(self, field, 1)
        in_unit_interval(self, "dropout")
        # Every layer's cell maps its state (and the first its embedding) to each of its gates.
        gates = {Cell.gru: 3, Cell.lstm: 4, Cell.rnn: 1}[self.cell]
        weights = gates * self.hidden_size * (self.layers * self.hidden_size + self.embed_dim)
        within_memory(
            self,
            ("hidden_size", "embed_dim", "layers"),
            weights * TRAINED_BYTES,
            "the recurrent weights in training",
        )
