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
    Decoder,
    DecoderOutput,
    Encoder,
    EncoderOutput,
    Frontend,
    PositionalEncoding,
    Scorer,
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
    "PositionalEncoding",
    "Scorer",
]
