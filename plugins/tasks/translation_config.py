"""The ``translation`` task's options, apart from its module so that a config is checked without torch."""

from __future__ import annotations

from dataclasses import dataclass, field

from zoo.api import at_least, must_be, positive


@dataclass
class TranslationConfig:
    joint_vocab: bool = False  # one tokenizer trained on source and target text together
    max_len_ratio: float = 1.5  # longest output = ratio * source tokens + offset
    max_len_offset: int = 10  # added to the ratio's bound
    length_buckets: list[int] = field(default_factory=lambda: [10, 20, 30, 40, 50])  # BLEU by source length (words)

    def __post_init__(self) -> None:
        positive(self, "max_len_ratio")
        at_least(self, "max_len_offset", 0)
        must_be(
            self,
            "length_buckets",
            lambda e: min(e, default=1) >= 1 and list(e) == sorted(set(e)),
            "positive word counts in increasing order",
        )
