"""The ``classification`` task: a sequence of tokens in, one label out.

Long-range sequence classification as in the Long Range Arena (Tay et al., 2021): the model reads a whole
sequence (a ListOps expression, a key-value list and a query) and names one class. zoo's outputs are text
written by a decoder, so a label is a one-token output: the target side is a word-level vocabulary of the
training labels (``tokenizer=word`` trained on them, whatever tokenizer reads the sources), an output may have
the label and the end of sentence, and the ``classifier`` decoder pools the encoder's memory and names the
label first. Any decoder still works (an ``rnn`` decoder that attends, say); the output limit keeps it to
one token.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from zoo.api import UNK, ConfigError, Item, SourceDescription, Task, TaskError, build, register
from zoo.api.metrics import length_bucket_label
from zoo.api.text import load_tokenizer, pad, save_tokenizer, token_labels, tokenizer_path, train_tokenizer

#: The labels' vocabulary: one id per distinct label seen in training.
LABEL_TOKENIZER = {"name": "word"}
#: Ids an output may have: the label and the end of sentence.
OUTPUT_IDS = 2


@register("task", "classification")
class ClassificationTask(Task):
    """Sequence classification: token sequences through a tokenizer, one label each; accuracy, by source length.

    Sources are text whose tokens the run's tokenizer reads (``word`` by default: whitespace-separated
    tokens, one id each); an empty one becomes ``[UNK]``. Every reference must be one word (a label); a
    dataset whose references are longer (``recall`` with ``mode=selective_copying``) is refused when the codecs
    are trained. Without other choices, ``task=classification`` trains on ``listops`` with the ``classifier``
    head over a GRU encoder.
    """

    source_kind = "text"
    token_sources = True
    default_metrics = ("accuracy",)
    default_monitor = "accuracy"
    component_defaults = {"dataset": "listops", "tokenizer": "word", "decoder": "classifier"}

    @dataclass
    class Config:
        # accuracy by source length in tokens: the buckets' upper edges (zoo compare's columns and charts)
        length_buckets: list[int] = field(default_factory=lambda: [64, 128, 256, 512, 1024, 2048])

        def __post_init__(self) -> None:
            edges = list(self.length_buckets)
            if any(edge < 1 for edge in edges) or edges != sorted(set(edges)):
                raise ConfigError(f"length_buckets={edges} must be positive token counts in increasing order")

    def __init__(self, cfg: Config, tokenizer: Any, frontend: Any) -> None:
        super().__init__(cfg, tokenizer, frontend)
        self.source_tokenizer = None

    # ------------------------------------------------------------------ codecs
    def fit(self, train: Sequence[Item]) -> None:
        labels = sorted({reference for item in train for reference in item.references})
        self.target_tokenizer = train_tokenizer(LABEL_TOKENIZER, labels)
        longer = next(
            ((label, len(ids)) for label, ids in zip(labels, self.encode_targets(labels)) if len(ids) != 1), None
        )
        if longer is not None:
            raise TaskError(
                f"task=classification needs one-word labels, but a training reference is {longer[0]!r} "
                f"({longer[1]} tokens); choose a dataset of labels, or task=translation for sequence outputs"
            )
        self.source_tokenizer = train_tokenizer(self.tokenizer_cfg, (item.source for item in train))

    def _paths(self, run_dir: Path) -> tuple[Path, Path]:
        return tokenizer_path(run_dir, "source"), tokenizer_path(run_dir, "target")

    def save(self, run_dir: Path) -> None:
        for tokenizer, path in zip((self.source_tokenizer, self.target_tokenizer), self._paths(run_dir)):
            save_tokenizer(tokenizer, path)

    def saved(self, run_dir: Path) -> bool:
        return all(path.is_file() for path in self._paths(run_dir))

    def load(self, run_dir: Path) -> None:
        source_path, target_path = self._paths(run_dir)
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

    def output_limit(self, source: torch.Tensor) -> torch.Tensor:
        return torch.full((source.size(0),), OUTPUT_IDS, dtype=torch.long, device=source.device)

    # ------------------------------------------------------------------ reporting
    def breakdowns(self, items: Sequence[Item], hypotheses: Sequence[str]) -> dict[str, Any]:
        """Accuracy by source length in whitespace-separated tokens: where a model's memory gives out."""
        edges = list(self.cfg.length_buckets)
        accuracy = build("metric", {"name": "accuracy"})
        groups: dict[str, tuple[list[str], list[Sequence[str]]]] = {}
        for item, hypothesis in zip(items, hypotheses):
            outputs, references = groups.setdefault(length_bucket_label(len(str(item.source).split()), edges), ([], []))
            outputs.append(hypothesis)
            references.append(item.references)
        order = [length_bucket_label(n, edges) for n in [*edges, edges[-1] + 1 if edges else 1]]
        return {
            "accuracy_by_length": {
                label: {"accuracy": accuracy.corpus_score(*groups[label]), "count": len(groups[label][0])}
                for label in order
                if label in groups
            }
        }
