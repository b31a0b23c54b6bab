"""The codecs of a task that reads token sequences and writes labels: a source tokenizer and a label vocabulary.

Sequence classification names one label per source and tagging one per source token; both read the sources
through the run's tokenizer and write words of a closed set, so they share everything about codecs and sources
and differ in how a reference becomes target ids and how an output is bounded and scored.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import torch

from zoo.contracts import UNK, Item, SourceDescription, Task
from zoo.data.collate import pad
from zoo.data.text import (
    load_tokenizer,
    save_tokenizers,
    token_labels,
    tokenizer_path,
    tokenizers_saved,
    train_tokenizer,
)

#: The labels' vocabulary: one id per distinct label seen in training.
LABEL_TOKENIZER = {"name": "word"}


class LabelTask(Task):
    """A task whose sources are text read by the run's tokenizer and whose targets are words of a label vocabulary.

    Subclasses give :meth:`labels`, the label words of the training references, may refuse references in
    :meth:`check_labels`, and give whatever else is theirs (output bounds, target encoding, breakdowns).
    """

    source_kind = "text"
    token_sources = True

    def __init__(self, cfg: Any, tokenizer: Any, frontend: Any) -> None:
        super().__init__(cfg, tokenizer, frontend)
        self.source_tokenizer = None

    def labels(self, references: Iterable[str]) -> list[str]:
        """The label words the training references hold, sorted (the label vocabulary is trained on them)."""
        raise NotImplementedError

    def check_labels(self, labels: list[str]) -> None:
        """Refuse labels the task cannot write (a :class:`TaskError`), once the label vocabulary is trained on them."""

    # ------------------------------------------------------------------ codecs
    def fit(self, train: Sequence[Item]) -> None:
        labels = self.labels(reference for item in train for reference in item.references)
        self.target_tokenizer = train_tokenizer(LABEL_TOKENIZER, labels)
        self.check_labels(labels)
        self.source_tokenizer = train_tokenizer(self.tokenizer_cfg, (item.source for item in train))

    def save(self, run_dir: Path) -> None:
        save_tokenizers(run_dir, self.tokenizers())

    def saved(self, run_dir: Path) -> bool:
        return tokenizers_saved(run_dir, ("source", "target"))

    def load(self, run_dir: Path) -> None:
        source_path, target_path = tokenizer_path(run_dir, "source"), tokenizer_path(run_dir, "target")
        self.source_tokenizer = load_tokenizer(self.tokenizer_cfg, source_path)
        self.target_tokenizer = load_tokenizer(LABEL_TOKENIZER, target_path)

    def tokenizers(self) -> dict[str, Any]:
        return {"source": self.source_tokenizer, "target": self.target_tokenizer}

    def source_description(self) -> SourceDescription:
        return SourceDescription("tokens", vocab_size=self.source_tokenizer.vocab_size)

    # ------------------------------------------------------------------ sources
    def encode_sources(self, sources: Sequence[str]) -> list[list[int]]:
        return [ids or [UNK] for ids in self.source_tokenizer.encode(list(sources))]

    def source_size(self, encoded: list[int]) -> int:
        return len(encoded)

    def collate_sources(self, encoded: Sequence[list[int]]) -> torch.Tensor:
        return pad(encoded)

    def source_labels(self, encoded: list[int]) -> list[str]:
        return token_labels(self.source_tokenizer, encoded)
