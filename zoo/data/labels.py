"""The codecs of a task that reads token sequences and writes labels: a source tokenizer and a label vocabulary.

Sequence classification names one label per source and tagging one per source token; both read the sources
through the run's tokenizer (:class:`~zoo.data.text_task.TextTask`) and write words of a closed set, so they share
their codecs and differ in how a reference becomes target ids and how an output is bounded and scored.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from zoo.contracts import Item
from zoo.data.text import load_tokenizer, tokenizer_path, train_tokenizer
from zoo.data.text_task import TextTask

#: The labels' vocabulary: one id per distinct label seen in training.
LABEL_TOKENIZER = {"name": "word"}


class LabelTask(TextTask):
    """A task whose sources are text read by the run's tokenizer and whose targets are words of a label vocabulary.

    Subclasses give :meth:`labels`, the label words of the training references, may refuse references in
    :meth:`check_labels`, and give whatever else is theirs (output bounds, target encoding, breakdowns).
    """

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

    def load(self, run_dir: Path) -> None:
        source_path, target_path = tokenizer_path(run_dir, "source"), tokenizer_path(run_dir, "target")
        self.source_tokenizer = load_tokenizer(self.tokenizer_cfg, source_path)
        self.target_tokenizer = load_tokenizer(LABEL_TOKENIZER, target_path)
