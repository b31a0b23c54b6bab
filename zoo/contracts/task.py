"""The task contract: what a source is, how it is batched, and how outputs are scored and shown.

The data module, the training module and the predictor are the same for every
task; everything that depends on the kind of source (text, image) or on how an
output is judged lives in a task plugin. Outputs are always text, produced by the
decoder as target token ids; the base class handles the target tokenizer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from zoo.contracts.data import Item, SourceDescription, Tokenizer
from zoo.errors import ZooError


class TaskError(ZooError, ValueError):
    """A task cannot work with the data or run directory it was given."""


@dataclass(frozen=True)
class PredictCommand:
    """How a finished run of a task is used from the command line: ``zoo NAME RUN INPUT...`` (or one input per
    stdin line), one output line per input. The CLI builds one command per name the registered tasks declare."""

    name: str  # the command, e.g. "translate"; it must not be one of zoo's own (train, list, predict, ...)
    summary: str  # its line in `zoo --help`
    input: str = "input"  # one input, as help and errors name it: "command-line sentence 2"
    output: str = "output line"  # what an input that cannot be used leaves empty: "its caption is empty"
    # print INPUT<TAB>OUTPUT (inputs that are file names, which the errors about them name) rather than the output
    echo: bool = False


class Task:
    """Built as ``cls(cfg, tokenizer=<tokenizer cfg>, frontend=<frontend cfg>)``; the tokenizer config
    builds the target tokenizer (and, for text sources, the source one); the frontend config
    says what the model reads (pixels of what size, or precomputed features).

    Life cycle: :meth:`fit` on the training items (or :meth:`load` from a run
    directory), then :meth:`save`. After that the task encodes sources, batches
    them, bounds output lengths and turns target ids into text.

    The class attributes below are what it declares; the core reads them, so a new task needs no change there.
    """

    #: What a source is ("text", "image", or a kind of the task's own); the dataset's must be the same.
    source_kind: str = "text"
    #: The source descriptions it can give a frontend, so a frontend of another kind is refused at composition.
    frontend_kinds: tuple[str, ...] = ("tokens",)
    #: Metric plugins used when the config names none, and the one that picks checkpoints.
    default_metrics: tuple[str, ...] = ()
    default_monitor: str = ""
    #: True when every output is one token (a label): a decoder that writes one token (``Decoder.writes_one_token``)
    #: is refused by a task whose outputs are sequences.
    one_token_outputs: bool = False
    #: Its choices for other kinds ({kind: name}) unless the command line or an experiment chooses.
    component_defaults: dict[str, str] = {}
    #: The command that uses its runs (``zoo translate RUN ...``); None: ``zoo predict RUN ...`` only.
    command: PredictCommand | None = None
    #: How attention over a source is drawn: "sequence" (a heatmap over :meth:`source_labels`) or "image" (each
    #: output word's weights laid over the picture, on the frontend's grid).
    attention_view: str = "sequence"
    #: True when :meth:`encode_sources` gives one list of ids per source (text, any token sequence) and
    #: :meth:`fits` is the default: its splits are then prepared once into memory-mapped files (``zoo prepare``).
    token_sources: bool = False
    #: True while its sources are rows of precomputed features: ``zoo features`` then has nothing left to extract.
    reads_features: bool = False

    def __init__(self, cfg: Any, tokenizer: Any, frontend: Any) -> None:
        self.cfg = cfg
        self.tokenizer_cfg = tokenizer
        self.frontend_cfg = frontend
        self.target_tokenizer: Tokenizer | None = None

    # ------------------------------------------------------------------ codecs
    def fit(self, train: Sequence[Item]) -> None:
        """Train the codecs (tokenizers) on the training items only."""
        raise NotImplementedError

    def save(self, run_dir: Path) -> None:
        """Write the trained codecs into ``run_dir``, each file complete or not at all.
        After :meth:`save` or :meth:`load` the task may keep caches under ``run_dir``."""
        raise NotImplementedError

    def saved(self, run_dir: Path) -> bool:
        """True when ``run_dir`` already holds this task's codecs (a relaunched run reuses them)."""
        raise NotImplementedError

    def load(self, run_dir: Path) -> None:
        """Restore the codecs written by :meth:`save`; a missing or broken file is a :class:`TaskError`."""
        raise NotImplementedError

    def tokenizers(self) -> dict[str, Tokenizer]:
        """The trained tokenizers by side, as :meth:`save` names their files (``tokenizers/<side>.json``): weights
        from another run (``init_from``) are refused unless that run's files hold the same tokens at the same ids."""
        return {"target": self.target_tokenizer}

    def source_description(self) -> SourceDescription:
        """What the frontend is built from (after fit or load)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ sources
    def read_input(self, text: str) -> Any:
        """The source one line of text stands for (a command-line argument, a stdin line, a str given to
        ``predict``): a sentence is itself, an image its file path. A :class:`TaskError` refuses that input alone."""
        return text

    def encode_sources(self, sources: Sequence[Any]) -> list[Any]:
        """Raw sources -> encoded sources (token ids, pixel tensors), one per source."""
        raise NotImplementedError

    def source_size(self, encoded: Any) -> int:
        """Positions an encoded source takes in a batch (for token-budget batching)."""
        raise NotImplementedError

    def fits(self, encoded: Any, max_len: int) -> bool:
        """Whether a training pair with this source may be kept under ``data.max_len`` (its target is checked apart)."""
        return self.source_size(encoded) <= max_len

    def collate_sources(self, encoded: Sequence[Any]) -> torch.Tensor:
        """Encoded sources -> the batch tensor the frontend reads."""
        raise NotImplementedError

    def source_labels(self, encoded: Any) -> list[str]:
        """One label per source position, for attention pictures."""
        raise NotImplementedError

    def output_limit(self, source: torch.Tensor) -> torch.Tensor:
        """(B,) most target ids (EOS included) each output of a source batch may have."""
        raise NotImplementedError

    # ------------------------------------------------------------------ targets
    @property
    def target_vocab_size(self) -> int:
        return self.target_tokenizer.vocab_size

    def encode_targets(self, texts: Sequence[str]) -> list[list[int]]:
        return self.target_tokenizer.encode(list(texts))

    def decode_targets(self, ids: Sequence[Sequence[int]]) -> list[str]:
        return self.target_tokenizer.decode([list(row) for row in ids])

    # ------------------------------------------------------------------ reporting
    def breakdowns(self, items: Sequence[Item], hypotheses: Sequence[str]) -> dict[str, Any]:
        """Scores of subsets of the test items, ``{breakdown: {bucket: {score: value, "count": items}}}`` in the
        buckets' order, e.g. ``{"bleu_by_length": {"1-10": {"bleu": 61.2, "count": 40}, ...}}``. ``zoo compare``
        shows every one as it is named: a column per score and bucket ("bleu 1-10"), a chart per breakdown."""
        return {}

    def describe_source(self, item: Item) -> str:
        """A one-line text form of an item's source for the samples file."""
        return str(item.source)
