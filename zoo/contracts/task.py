"""The task contract: what a source is, how it is batched, and how outputs are scored and shown.

The data module, the training module and the predictor are the same for every
task; everything that depends on the kind of source (text, image) or on how an
output is judged lives in a task plugin. Outputs are always text, produced by the
decoder as target token ids; the base class handles the target tokenizer.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from zoo.contracts.data import Item, SourceDescription, Tokenizer
from zoo.errors import ZooError


class TaskError(ZooError, ValueError):
    """A task cannot work with the data or run directory it was given."""


class Task:
    """Built as ``cls(cfg, tokenizer=<tokenizer cfg>, frontend=<frontend cfg>)``; the tokenizer config
    builds the target tokenizer (and, for text sources, the source one); the frontend config
    says what the model reads (pixels of what size, or precomputed features).

    Life cycle: :meth:`fit` on the training items (or :meth:`load` from a run
    directory), then :meth:`save`. After that the task encodes sources, batches
    them, bounds output lengths and turns target ids into text.

    Class attributes: ``source_kind`` must equal the dataset's; ``default_metrics``
    and ``default_monitor`` name metric plugins used when the config names none;
    ``frontend_kinds`` are the source descriptions it can give a frontend;
    ``component_defaults`` ({kind: name}) are the task's choices for other kinds
    unless the command line or an experiment chooses (captioning: ``scenes``, ``cnn``).
    """

    source_kind: str = "text"
    frontend_kinds: tuple[str, ...] = ("tokens",)
    default_metrics: tuple[str, ...] = ()
    default_monitor: str = ""
    component_defaults: dict[str, str] = {}

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

    def source_description(self) -> SourceDescription:
        """What the frontend is built from (after fit or load)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ sources
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
        """Scores of subsets of the test items (e.g. BLEU by source length), keyed by breakdown name."""
        return {}

    def describe_source(self, item: Item) -> str:
        """A one-line text form of an item's source for the samples file."""
        return str(item.source)
