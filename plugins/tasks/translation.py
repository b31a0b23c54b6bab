"""The ``translation`` task: a sentence in, its translation out."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from zoo.api import (
    PAD,
    Item,
    PredictCommand,
    TaskError,
    register,
)
from zoo.api.metrics import bleu_by_source_length
from zoo.api.text import TextTask, load_tokenizer, max_output_len, tokenizer_path, train_tokenizer
from zoo.api.vision import names_image_file

from .translation_config import TranslationConfig


@register("task", "translation")
class TranslationTask(TextTask):
    """Machine translation: text sources through a tokenizer, BLEU and chrF, BLEU by source length.

    Source and target each get a tokenizer trained on the training split
    (``joint_vocab``: one tokenizer for both, needed to share embeddings). A
    source is a list of token ids; an empty one becomes ``[UNK]`` so every item
    still gets a translation. An output may have
    ``floor(max_len_ratio * source tokens) + max_len_offset`` ids.
    """

    default_metrics = ("bleu", "chrf")
    default_monitor = "bleu"
    command = PredictCommand(
        "translate",
        "translate sentences (arguments, or stdin: one output line per input line) with a run's checkpoint",
        input="sentence",
    )

    Config = TranslationConfig

    # ------------------------------------------------------------------ codecs
    def fit(self, train: Sequence[Item]) -> None:
        sources = [item.source for item in train]
        targets = [reference for item in train for reference in item.references]
        if self.cfg.joint_vocab:
            self.source_tokenizer = self.target_tokenizer = train_tokenizer(
                self.tokenizer_cfg, itertools.chain(sources, targets)
            )
            return
        self.source_tokenizer = train_tokenizer(self.tokenizer_cfg, sources)
        self.target_tokenizer = train_tokenizer(self.tokenizer_cfg, targets)

    def load(self, run_dir: Path) -> None:
        source_path, target_path = tokenizer_path(run_dir, "source"), tokenizer_path(run_dir, "target")
        self.source_tokenizer = load_tokenizer(self.tokenizer_cfg, source_path)
        self.target_tokenizer = (
            self.source_tokenizer if self.cfg.joint_vocab else load_tokenizer(self.tokenizer_cfg, target_path)
        )

    # ------------------------------------------------------------------ sources
    def read_input(self, text: str) -> str:
        """The sentence itself; the name of an image file is a mistake worth saying (zoo caption reads those)."""
        if names_image_file(text):
            name = text.strip()
            raise TaskError(
                f"the text names an image file ({name}), but a translation run reads text, not images; "
                f"caption images with a captioning run (zoo caption RUN {name})"
            )
        return text

    def output_limit(self, source: torch.Tensor) -> torch.Tensor:
        return max_output_len(source != PAD, self.cfg.max_len_ratio, self.cfg.max_len_offset)

    # ------------------------------------------------------------------ reporting
    def breakdowns(self, items: Sequence[Item], hypotheses: Sequence[str]) -> dict[str, Any]:
        sources = [item.source for item in items]
        references = [item.references for item in items]
        return {"bleu_by_length": bleu_by_source_length(sources, hypotheses, references, self.cfg.length_buckets)}
