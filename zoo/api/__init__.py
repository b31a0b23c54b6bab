"""zoo's public plugin API: the core a plugin needs, in one module, and its helpers in three named ones.

A plugin imports from ``zoo.api`` and its helper modules and nowhere else in zoo, and from no other plugin;
the built-in plugins (``zoo_plugins``) follow the same rule, so each is an example to copy. Names not listed
here or in the helper modules may move between versions.

Registering
    :func:`register` (``@register(kind, name)``) checks that the class subclasses its kind's base and has a
    nested ``@dataclass Config``; :func:`build` and :func:`get` reach another registered component by kind and
    name (a decoder building its attention, a task reading its dataset's class).

The bases, one per kind, named as the kind is (``zoo list`` shows the kinds)
    :class:`Task`, :class:`Dataset`, :class:`Tokenizer`, :class:`Metric`, :class:`Frontend`, :class:`PosEnc`,
    :class:`Encoder`, :class:`Decoder`, :class:`Attention`; what they exchange: :class:`Item`,
    :class:`ImageSource`, :class:`SourceDescription`, :class:`EncoderOutput`, :class:`DecoderOutput`; the
    special tokens (:data:`PAD` ...) and :data:`SPLITS`; a task's :class:`PredictCommand` (the
    ``zoo NAME RUN ...`` command its runs are used with).

Config checks (called from a ``Config.__post_init__``, so a bad value stops at composition)
    :func:`at_least`, :func:`above`, :func:`positive`, :func:`between`, :func:`in_unit_interval`,
    :func:`fraction`, :func:`multiple_of`, :func:`no_wider_than`, :func:`one_of` with a :class:`Choice`
    enum, :func:`must_be` for a rule of the plugin's own (``"odd"``), and :func:`within_memory` with the bytes
    a parameter costs (:data:`TRAINED_BYTES`, :data:`FROZEN_BYTES`). Errors: :class:`ConfigError`,
    :class:`TaskError`, :class:`ZooError` (the one-line error every zoo failure is).

Helpers, by what they help with
    :mod:`zoo.api.layers` (the shared network parts: masked attention, Transformer blocks, reservoirs),
    :mod:`zoo.api.text` (tokenizers, padding, output lengths), :mod:`zoo.api.vision` (images and image
    features) and :mod:`zoo.api.metrics` (coco-caption's tokenisation and n-grams, Java scorers).

Checking a plugin
    ``zoo check NAME...`` runs the contract tests on any registered component, installed or in a plugin folder.

The bases and what they exchange are imported on first use: they import torch, which a module holding only a
plugin's ``Config`` (checked before anything trains) does not need.
"""

from typing import TYPE_CHECKING

from zoo.api._moved import moved_name
from zoo.config.checks import (
    FROZEN_BYTES,
    TRAINED_BYTES,
    Choice,
    ConfigError,
    above,
    at_least,
    between,
    fraction,
    in_unit_interval,
    multiple_of,
    must_be,
    no_wider_than,
    one_of,
    positive,
    within_memory,
)
from zoo.errors import ZooError
from zoo.registry import build, get, register

if TYPE_CHECKING:
    from zoo.contracts import (
        BOS,
        EOS,
        PAD,
        SPECIAL_TOKENS,
        SPLITS,
        UNK,
        Attention,
        Dataset,
        Decoder,
        DecoderOutput,
        Encoder,
        EncoderOutput,
        Frontend,
        ImageSource,
        Item,
        Metric,
        PosEnc,
        PredictCommand,
        SourceDescription,
        Task,
        Tokenizer,
    )
    from zoo.contracts.task import TaskError

__all__ = [
    # registering
    "register", "build", "get",
    # the bases and what they exchange
    "Task", "Dataset", "Tokenizer", "Metric", "Frontend", "PosEnc", "Encoder", "Decoder", "Attention",
    "Item", "ImageSource", "SourceDescription", "EncoderOutput", "DecoderOutput", "PredictCommand",
    "BOS", "EOS", "PAD", "UNK", "SPECIAL_TOKENS", "SPLITS",
    # config checks and errors
    "at_least", "above", "positive", "between", "in_unit_interval", "fraction", "multiple_of", "no_wider_than",
    "one_of", "must_be", "Choice", "within_memory", "TRAINED_BYTES", "FROZEN_BYTES",
    "ConfigError", "TaskError", "ZooError",
]  # fmt: skip


#: The names :mod:`zoo.contracts` holds, imported on first use (with torch).
CONTRACTS = ("Task", "Dataset", "Tokenizer", "Metric", "Frontend", "PosEnc", "Encoder", "Decoder", "Attention", "Item",
             "ImageSource", "SourceDescription", "EncoderOutput", "DecoderOutput", "PredictCommand",
             "BOS", "EOS", "PAD", "UNK", "SPECIAL_TOKENS", "SPLITS")  # fmt: skip


def __getattr__(name: str):
    """A base or what the bases exchange, imported now; a name that moved to a helper module or was renamed still
    works, with a warning naming where it is now."""
    if name in CONTRACTS or name == "TaskError":
        import zoo.contracts
        import zoo.contracts.task

        value = getattr(zoo.contracts.task if name == "TaskError" else zoo.contracts, name)
        globals()[name] = value
        return value
    return moved_name(__name__, name)
