"""The ``none`` positional encoding: order comes only from the model itself (e.g. recurrence)."""

from zoo.api import PosEnc, register

from .none_config import NoneConfig


@register("posenc", "none")
class NoPositionalEncoding(PosEnc):
    """No position information; RNNs need none, a Transformer becomes order-blind."""

    Config = NoneConfig

    def __init__(self, cfg: Config, dim: int, heads: int = 1) -> None:
        super().__init__()
