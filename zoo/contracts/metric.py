"""The metric contract: hypotheses and their references in, a corpus score and per-item scores out."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

#: A per-item scorer: ``(hypotheses, references per item) -> one score per item`` (:meth:`Metric.reward`).
Reward = Callable[[Sequence[str], Sequence[Sequence[str]]], list[float]]


class Metric:
    """A corpus-level score of generated text. Built as ``cls(cfg)``.

    ``references[i]`` holds every reference of item ``i`` (one or more, the count
    may differ between items). ``higher_is_better`` tells checkpointing, early
    stopping and comparisons which way is up. ``bounds`` is the range a score can take
    (low, high; None where it is open): charts clip a ± std band to it (BLEU's never dips below 0).
    """

    higher_is_better: bool = True
    bounds: tuple[float | None, float | None] = (None, None)
    #: The fewest words an output needs for its score to say anything (BLEU's 4-grams: 4): a task whose outputs are
    #: one token (``Task.one_token_outputs``) refuses to monitor one that needs more.
    min_words: int = 1

    def __init__(self, cfg: Any) -> None:
        self.cfg = cfg

    @classmethod
    def unavailable(cls) -> str | None:
        """None when the metric can run here; otherwise one line saying why and what to install.

        A metric that needs something optional (Java, an extra package, model files) says so
        here, cheaply and without side effects: the metric suite then leaves it out with a
        warning, and refuses it as the monitored metric.
        """
        return None

    def corpus_score(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> float:
        raise NotImplementedError

    def item_scores(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> list[float] | None:
        """One score per item (for significance tests over items), or None when the metric has no per-item form."""
        return None

    @classmethod
    def scores_items(cls) -> bool:
        """Whether the metric has per-item scores (it overrides :meth:`item_scores`): only such a metric can reward
        one sampled output at a time (self-critical training, ``scst.metric``)."""
        return cls.item_scores is not Metric.item_scores

    def reward(self, train_references: Iterable[Sequence[str]]) -> Reward:
        """The per-item score self-critical training maximises, fixed for a whole run: ``reward(hypotheses,
        references)`` gives one float per item, in the metric's own scale.

        ``train_references`` holds every training item's references, read only when iterated. A metric whose item
        scores depend on the corpus scored (CIDEr-D's document frequencies) fixes that part on them, so a sample's
        reward depends on it and its own references alone, not on the batch it was drawn in. The default is
        :meth:`item_scores`, which for most metrics depends on nothing else.
        """
        return self.item_scores

    def sacrebleu_metric(self) -> Any | None:
        """A fresh ``sacrebleu.metrics`` object computing the same score, whose sufficient statistics let ``zoo
        compare`` rescore draws of the test items exactly (a corpus score is no mean of item scores); None (the
        default) means draws average :meth:`item_scores`."""
        return None

    def signature(self) -> str | None:
        """A string that pins down how the latest :meth:`corpus_score` was computed (sacrebleu's signature), or None."""
        return None
