"""The sources of a task that reads text through a tokenizer it trains: one id list per source.

Translation, classification and tagging all read their sources this way, and keep a tokenizer per side in the run
(``tokenizers/source.json``, ``target.json``); they differ in their targets, so the rest lives here once.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from zoo.contracts import UNK, SourceDescription, Task
from zoo.data.collate import pad
from zoo.data.text import save_tokenizers, token_labels, tokenizers_saved


class TextTask(Task):
    """A task whose sources are text read by ``source_tokenizer`` (set by the subclass's ``fit`` or ``load``):
    a source is its ids, an empty one ``[UNK]`` so that every item still gets an output."""

    source_kind = "text"
    token_sources = True

    def __init__(self, cfg: Any, tokenizer: Any, frontend: Any) -> None:
        super().__init__(cfg, tokenizer, frontend)
        self.source_tokenizer = None

    def tokenizers(self) -> dict[str, Any]:
        return {"source": self.source_tokenizer, "target": self.target_tokenizer}

    def save(self, run_dir: Path) -> None:
        save_tokenizers(run_dir, self.tokenizers())

    def saved(self, run_dir: Path) -> bool:
        return tokenizers_saved(run_dir, ("source", "target"))

    def source_description(self) -> SourceDescription:
        return SourceDescription("tokens", vocab_size=self.source_tokenizer.vocab_size)

    def encode_sources(self, sources: Sequence[str]) -> list[list[int]]:
        return [ids or [UNK] for ids in self.source_tokenizer.encode(list(sources))]

    def source_size(self, encoded: list[int]) -> int:
        return len(encoded)

    def collate_sources(self, encoded: Sequence[list[int]]) -> torch.Tensor:
        return pad(encoded)

    def source_labels(self, encoded: list[int]) -> list[str]:
        return token_labels(self.source_tokenizer, encoded)
