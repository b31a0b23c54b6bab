"""zoo's public plugin API: everything a plugin may import from zoo, in one module.

A plugin imports from here and nowhere else in zoo, and from no other plugin;
the built-in plugins (``zoo_plugins``) follow the same rule, so each is an
example to copy. Names not listed here may move between versions.

Registering
    :func:`register` (``@register(kind, name)``) checks that the class subclasses
    its kind's base and has a nested ``@dataclass Config``; :func:`build` and
    :func:`get` reach another registered component by kind and name (a decoder
    building its scorer, a task reading its dataset's class).

The bases, one per kind (``zoo list`` shows the kinds)
    :class:`Tokenizer`, :class:`Dataset`, :class:`Task`, :class:`Metric`,
    :class:`Frontend`, :class:`Encoder`, :class:`Decoder`, :class:`Scorer`,
    :class:`PositionalEncoding`; what they exchange: :class:`Item`,
    :class:`ImageSource`, :class:`SourceDescription`, :class:`EncoderOutput`,
    :class:`DecoderOutput`; the special tokens (:data:`PAD` ...) and :data:`SPLITS`; a task's
    :class:`PredictCommand` (the ``zoo NAME RUN ...`` command its runs are used with).

Config checks (called from a ``Config.__post_init__``, so a bad value stops at composition)
    :func:`at_least`, :func:`above`, :func:`positive`, :func:`between`,
    :func:`in_unit_interval`, :func:`fraction`, :func:`multiple_of`,
    :func:`no_wider_than`, :func:`one_of` with a :class:`Choice` enum, and
    :func:`within_memory` with the bytes a parameter costs (:data:`TRAINED_BYTES`,
    :data:`FROZEN_BYTES`). Errors: :class:`ConfigError`, :class:`TaskError`,
    :class:`ZooError` (the one-line error every zoo failure is).

Shared layers (``zoo.nn``; one implementation each, so families differ only where they should)
    :func:`attend` (the masked softmax every attention uses), the Transformer
    block parts (:class:`TransformerLayout`, :func:`layout_attention`,
    :class:`FeedForward`, :class:`Residual`, :func:`final_norm`),
    :class:`TargetEmbedding`, :class:`GridProjection` and :func:`flatten_grid`
    for image grids, and the echo state network's :class:`Reservoir`.

Data helpers
    tokenizers (:class:`HFTokenizer`, :func:`train_tokenizer`, :func:`save_tokenizer`,
    :func:`load_tokenizer`, :func:`tokenizer_path`, :func:`token_labels`), images
    (:class:`ImageStore`, :class:`Fit`, :func:`as_image`, :func:`to_float`,
    :func:`names_image_file`: a prediction input that names an image file), image
    features (:class:`FeatureTable`, :func:`load_features`), :func:`pad` and
    :func:`max_output_len`.

Metric helpers
    coco-caption's tokenisation and n-grams (:func:`tokenize_corpus`,
    :func:`ngram_counts`, :func:`signature`), :class:`MeanOfItems` (a metric whose
    corpus score is the mean of its items'), :class:`JavaScorer` (a pycocoevalcap
    Java scorer), :func:`reference_streams` and :func:`bleu_by_source_length`.

Checking a plugin
    ``zoo check NAME...`` runs the contract tests on any registered component,
    installed or in a plugin folder.
"""

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
    no_wider_than,
    one_of,
    positive,
    within_memory,
)
from zoo.contracts import (
    BOS,
    EOS,
    PAD,
    SPECIAL_TOKENS,
    SPLITS,
    UNK,
    Dataset,
    Decoder,
    DecoderOutput,
    Encoder,
    EncoderOutput,
    Frontend,
    ImageSource,
    Item,
    Metric,
    PositionalEncoding,
    PredictCommand,
    Scorer,
    SourceDescription,
    Task,
    Tokenizer,
)
from zoo.contracts.task import TaskError
from zoo.data.collate import pad
from zoo.data.features import FeatureTable, load_features
from zoo.data.images import Fit, ImageStore, as_image, to_float
from zoo.data.text import load_tokenizer, save_tokenizer, token_labels, tokenizer_path, train_tokenizer
from zoo.data.tokenization import HFTokenizer
from zoo.decoding import max_output_len
from zoo.errors import ZooError
from zoo.inference.inputs import names_image_file
from zoo.metrics import bleu_by_source_length, reference_streams
from zoo.metrics.coco import (
    JavaScorer,
    MeanOfItems,
    MetricUnavailableError,
    java_scorer_unavailable,
    ngram_counts,
    signature,
    tokenize_corpus,
)
from zoo.nn.attention import attend
from zoo.nn.grid import GridProjection, flatten_grid
from zoo.nn.layers import TargetEmbedding
from zoo.nn.transformer import FeedForward, Residual, TransformerLayout, final_norm, layout_attention
from zoo.registry import build, get, register
from zoo.reservoir import ACTIVATIONS, Reservoir, reverse_padded

__all__ = [
    # registering
    "register", "build", "get",
    # the bases and what they exchange
    "Tokenizer", "Dataset", "Task", "Metric", "Frontend", "Encoder", "Decoder", "Scorer", "PositionalEncoding",
    "Item", "ImageSource", "SourceDescription", "EncoderOutput", "DecoderOutput", "PredictCommand",
    "BOS", "EOS", "PAD", "UNK", "SPECIAL_TOKENS", "SPLITS",
    # config checks and errors
    "at_least", "above", "positive", "between", "in_unit_interval", "fraction", "multiple_of", "no_wider_than",
    "one_of", "Choice", "within_memory", "TRAINED_BYTES", "FROZEN_BYTES", "ConfigError", "TaskError", "ZooError",
    # shared layers
    "attend", "TransformerLayout", "layout_attention", "FeedForward", "Residual", "final_norm", "TargetEmbedding",
    "GridProjection", "flatten_grid", "Reservoir", "ACTIVATIONS", "reverse_padded",
    # data helpers
    "HFTokenizer", "train_tokenizer", "save_tokenizer", "load_tokenizer", "tokenizer_path", "token_labels",
    "ImageStore", "Fit", "as_image", "to_float", "FeatureTable", "load_features", "pad", "max_output_len",
    "names_image_file",
    # metric helpers
    "tokenize_corpus", "ngram_counts", "signature", "MeanOfItems", "JavaScorer", "MetricUnavailableError",
    "java_scorer_unavailable", "reference_streams", "bleu_by_source_length",
]  # fmt: skip
