"""The ``tagging`` task: a sequence of tokens in, one tag per token out.

Multi-query associative recall (Zoology, Arora et al., 2023) asks for an answer at many positions of one
sequence, as a language model is scored on its next token: the reference tags every source token, with ``_``
(:data:`zoo.api.metrics.UNSCORED`) where nothing is asked. zoo's outputs are text written by a decoder, so the
output is the tags in order and then the end of sentence; the ``tagger`` decoder names position ``t``'s tag from
the encoder's state there. An unscored tag is the padding id among the targets, so the loss leaves it out (a
position where nothing is asked teaches nothing), and it comes back as ``_`` when ids are decoded, so an output
stays aligned with its source. ``tag_accuracy`` scores the tagged positions alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import torch

from zoo.api import EOS, PAD, SPECIAL_TOKENS, UNK, Item, TaskError, register
from zoo.api.metrics import UNSCORED
from zoo.api.text import LabelTask

#: Items whose tags are counted against their source tokens when the codecs are trained.
CHECKED_ITEMS = 100


@register("task", "tagging")
class TaggingTask(LabelTask):
    """Sequence tagging: token sequences through a tokenizer, a tag per token; tag accuracy over tagged positions.

    A reference is a tag per source token, whitespace-separated (``_`` where none is scored). The tokenizer must
    read one id per whitespace-separated token (``word``, the default) so tags and positions line up; another is
    refused when the codecs are trained. An output may have a tag per source token and the end of sentence.
    """

    default_metrics = ("tag_accuracy",)
    default_monitor = "tag_accuracy"
    component_defaults = {"dataset": "recall", "tokenizer": "word", "decoder": "tagger"}

    @dataclass
    class Config:
        pass

    def labels(self, references: Iterable[str]) -> list[str]:
        return sorted({tag for reference in references for tag in reference.split()} - {UNSCORED})

    def fit(self, train: Sequence[Item]) -> None:
        super().fit(train)
        checked = train[:CHECKED_ITEMS]
        sizes = map(len, self.encode_sources([item.source for item in checked]))
        for item, size in zip(checked, sizes):
            tags = len(item.references[0].split())
            if tags != size:
                raise TaskError(
                    f"task=tagging needs a tag per source token, but training item {item.id} has {tags} tags for "
                    f"{size} tokens; use tokenizer=word and a dataset that tags (recall with dataset.mode=multi_query)"
                )

    # ------------------------------------------------------------------ targets
    def encode_targets(self, texts: Sequence[str]) -> list[list[int]]:
        """Tags -> ids, the unscored tag as the padding id the loss ignores."""
        ids = {tag: i for i, tag in enumerate(self.target_tokenizer.tokens())} | {UNSCORED: PAD}
        return [[ids.get(tag, UNK) for tag in text.split()] for text in texts]

    def decode_targets(self, ids: Sequence[Sequence[int]]) -> list[str]:
        """Ids -> tags up to the end of sentence, every special id (padding: unscored) as ``_``, one per position."""
        names = [UNSCORED if i < len(SPECIAL_TOKENS) else tag for i, tag in enumerate(self.target_tokenizer.tokens())]
        texts = []
        for row in ids:
            row = [int(i) for i in row]
            texts.append(" ".join(names[i] for i in (row[: row.index(EOS)] if EOS in row else row)))
        return texts

    def output_limit(self, source: torch.Tensor) -> torch.Tensor:
        return (source != PAD).sum(1) + 1
