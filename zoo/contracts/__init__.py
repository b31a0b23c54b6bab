"""The contracts between components: what each kind receives and returns.

A plugin subclasses one of these bases, adds a nested dataclass ``Config`` and
registers itself with :func:`zoo.registry.register`.
"""

from zoo.contracts.data import (
    BOS,
    EOS,
    PAD,
    SPECIAL_TOKENS,
    SPLITS,
    UNK,
    Dataset,
    ImageSource,
    Item,
    SourceDescription,
    Tokenizer,
)
from zoo.contracts.metric import Metric
from zoo.contracts.model import (
    Attention,
    Decoder,
    DecoderOutput,
    Encoder,
    EncoderOutput,
    Frontend,
    PosEnc,
)
from zoo.contracts.task import PredictCommand, Task

__all__ = [
    "BOS",
    "EOS",
    "PAD",
    "SPECIAL_TOKENS",
    "SPLITS",
    "UNK",
    "Dataset",
    "ImageSource",
    "Item",
    "SourceDescription",
    "Tokenizer",
    "Metric",
    "Task",
    "PredictCommand",
    "Decoder",
    "DecoderOutput",
    "Encoder",
    "EncoderOutput",
    "Frontend",
    "PosEnc",
    "Attention",
]


def __getattr__(name: str):
    """The bases' old names (``Scorer``, ``PositionalEncoding``) still work, with a warning naming the new one."""
    from zoo.api._moved import moved_name

    return moved_name(__name__, name)
