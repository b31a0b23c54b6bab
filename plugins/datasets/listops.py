"""The ``listops`` dataset: nested list operations over digits, labelled with their value; generated, no files.

ListOps (Nangia & Bowman, 2018) is the hierarchical task of the Long Range Arena (Tay et al., 2021): an
expression in prefix notation over the digits 0-9 with four operators, each applied to a list of 2 to
``max_args`` arguments (digits or expressions)::

    MAX 2 9 MIN 4 7 ] 0 ]          ->  9       (max(2, 9, min(4, 7), 0))
    SM 3 MED 8 1 6 ] 5 ]           ->  4       (3 + 6 + 5 mod 10)

``MIN``, ``MAX``, ``MED`` (the median; with an even count the mean of the middle two, rounded down) and
``SM`` (the sum modulo 10) open a list and ``]`` closes it. LRA writes an opening token ``[MAX``; here the
bracket is left out of the operator, so that a tokenizer splitting off punctuation (``tokenizer=word``) still
reads every token as one id and ``min_length``/``max_length`` count the positions a model sees. The label, the
expression's value, is one of ten digits: chance is 10 %, and always naming the most common labels, 0 and 9,
scores about 16 % (``MIN`` favours small values, ``MAX`` large ones). A model must track the open lists to the
end of the sequence, so the task needs long-range, hierarchical memory.

Generation, as LRA's generator draws (its ``listops.py``): a tree grows from the root at depth 1; a node is an
operator with probability 1/4 while its depth is below ``max_depth`` (so ``max_depth=10`` nests at most 9
operators and ``max_depth=1`` gives no operator), over 2-``max_args`` arguments drawn the same way, and a digit
otherwise. A tree is kept when its length in tokens lies in ``[min_length, max_length]`` (LRA's bounds are
exclusive, so its 500-2,000 is 501-1,999 here) and its expression is new, else drawn again; a tree is abandoned
as soon as it grows past ``max_length``, which rejects the same trees sooner. Kept lengths therefore follow the
trees' own distribution (most near the lower bound), not a uniform one. Split ``s`` is drawn from
``random.Random(f"listops:{seed}:{s}")``, test first, then validation, then training, each leaving out the
expressions of those before it, so no expression is in two splits (LRA removes duplicates too) and validation
and test do not change with the training split's size.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from zoo.api import SPLITS, ConfigError, Dataset, Item, ZooError, at_least, register

OPERATORS = ("MIN", "MAX", "MED", "SM")
CLOSE = "]"
DIGITS = tuple(str(d) for d in range(10))


def apply(operator: str, values: list[int]) -> int:
    """The value of ``operator`` over its arguments' values."""
    if operator == "MIN":
        return min(values)
    if operator == "MAX":
        return max(values)
    if operator == "MED":
        ordered = sorted(values)
        middle = len(ordered) // 2
        return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) // 2
    return sum(values) % 10  # SM


#: Draws in a row that repeat an expression before the settings are blamed (too few distinct expressions).
REPEATS = 1000
#: The chance that a node above the deepest level is an operator (LRA's VALUE_P).
OPERATOR_P = 0.25


def longest(max_depth: int, max_args: int) -> int:
    """Tokens of the largest expression: every list full, ``max_depth - 1`` operators deep."""
    tokens = 1  # a digit
    for _ in range(max_depth - 1):
        tokens = 2 + max_args * tokens  # operator, its arguments, ]
    return tokens


class _TooLong(Exception):
    """A tree grew past the longest length kept: it would be rejected, so it is abandoned."""


class ListOpsError(ZooError, ValueError):
    """The settings leave no expression of the lengths asked for."""


class ExpressionGenerator:
    """Random ListOps expressions of a range of lengths in tokens, drawn as LRA draws them (module docstring)."""

    ATTEMPTS = 100_000  # trees drawn for one expression before the settings are blamed

    def __init__(self, rng: random.Random, max_depth: int, max_args: int) -> None:
        self.rng, self.max_depth, self.max_args = rng, max_depth, max_args

    def expression(self, min_length: int, max_length: int) -> tuple[list[str], int]:
        """Tokens of an expression of ``min_length`` to ``max_length`` tokens, and its value."""
        for _ in range(self.ATTEMPTS):
            tokens: list[str] = []
            try:
                value = self.tree(1, tokens, max_length)
            except _TooLong:
                continue
            if len(tokens) >= min_length:
                return tokens, value
        raise ListOpsError(
            f"no expression of {min_length}-{max_length} tokens with max_args={self.max_args} and "
            f"max_depth={self.max_depth} in {self.ATTEMPTS} trees; widen the length range or raise max_args"
        )

    def tree(self, depth: int, tokens: list[str], limit: int) -> int:
        """Append a tree's tokens (prefix order) drawn from ``depth`` down and return its value; :class:`_TooLong`
        once ``tokens`` holds more than ``limit``."""
        rng = self.rng
        if depth < self.max_depth and rng.random() < OPERATOR_P:
            operator = OPERATORS[rng.randrange(len(OPERATORS))]
            tokens.append(operator)
            values = [self.tree(depth + 1, tokens, limit) for _ in range(rng.randint(2, self.max_args))]
            tokens.append(CLOSE)
            value = apply(operator, values)
        else:
            value = rng.randrange(10)
            tokens.append(DIGITS[value])
        if len(tokens) > limit:
            raise _TooLong
        return value


@register("dataset", "listops")
class ListOpsDataset(Dataset):
    """ListOps (Nangia & Bowman, 2018; LRA, Tay et al., 2021): nested MIN/MAX/MED/SM over digits -> its value.

    Sources are expressions of whitespace-separated tokens, references their value, one digit. LRA's setting is
    ``min_length=500 max_length=2000 train_size=96000 val_size=2000 test_size=2000`` (max_depth and max_args
    10 as here); the defaults are a CPU's scale.
    """

    @dataclass
    class Config:
        seed: int = 0  # chooses the expressions; each split draws from its own stream
        train_size: int = 10000  # expressions in the training split (LRA: 96000)
        val_size: int = 1000  # expressions in the validation split (LRA: 2000)
        test_size: int = 1000  # expressions in the test split (LRA: 2000)
        min_length: int = 64  # shortest expression in tokens (LRA: 500)
        max_length: int = 512  # longest expression in tokens (LRA: 2000)
        max_depth: int = 10  # an operator only above this depth: at most max_depth - 1 nested (LRA: 10)
        max_args: int = 10  # most arguments of an operator; the least is 2 (LRA: 10)

        def __post_init__(self) -> None:
            for size in ("train_size", "val_size", "test_size"):
                at_least(self, size, 1)
            at_least(self, "max_depth", 1)
            at_least(self, "max_args", 2)
            at_least(self, "min_length", 4, "the shortest expression, an operator over two digits, has 4 tokens")
            at_least(self, "max_length", self.min_length, "raise max_length or lower min_length")
            largest = longest(self.max_depth, self.max_args)
            if largest < self.min_length:
                raise ConfigError(
                    f"min_length={self.min_length} is longer than any expression of max_depth={self.max_depth} and "
                    f"max_args={self.max_args} ({largest} tokens); raise max_depth or max_args"
                )

    def files(self) -> list:
        return []  # generated from the config alone

    def splits(self) -> dict[str, list[Item]]:
        cfg = self.cfg
        sizes = {"train": cfg.train_size, "val": cfg.val_size, "test": cfg.test_size}
        seen: set[str] = set()  # every expression drawn so far: none is kept twice
        drawn = {split: self._generate(split, sizes[split], seen) for split in ("test", "val", "train")}
        return {split: drawn[split] for split in SPLITS}

    def _generate(self, split: str, size: int, seen: set[str]) -> list[Item]:
        """``size`` expressions not in ``seen`` (which gains them)."""
        cfg = self.cfg
        generator = ExpressionGenerator(random.Random(f"listops:{cfg.seed}:{split}"), cfg.max_depth, cfg.max_args)
        items, repeats = [], 0
        while len(items) < size:
            tokens, value = generator.expression(cfg.min_length, cfg.max_length)
            source = " ".join(tokens)
            if source in seen:
                repeats += 1
                if repeats > REPEATS:
                    raise ListOpsError(
                        f"{split}: {REPEATS} expressions in a row were already drawn after {len(seen)} distinct ones "
                        f"of {cfg.min_length}-{cfg.max_length} tokens; widen the length range or ask for fewer"
                    )
                continue
            seen.add(source)
            repeats = 0
            items.append(Item(f"{split}-{len(items)}", source, (DIGITS[value],)))
        return items
