"""The ``translation`` task: text in, text out."""
from __future__ import annotations

from dataclasses import dataclass, field

from zoo import register


@register("task", "translation")
class TranslationTask:
    """Machine translation: a source sentence, one or more reference translations."""

    @dataclass
    class Config:
        length_buckets: list[int] = field(default_factory=lambda: [10, 20, 30, 40, 50])  # BLEU by source length (words)
