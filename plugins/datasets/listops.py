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

Generation. LRA draws trees top-down and rejects those outside its length range, which is slow at long
lengths. Here each expression gets a length in tokens drawn uniformly from ``[min_length, max_length]`` and a
tree grows to it: the root is an operator over 2-``max_args`` digits, then random digits (not at
``max_depth``) become operators over 2-``max_args`` digits, and the last token or two are digits added to
lists with room. A tree that stops short (no list with room for its last token or two) is kept if it is
still ``min_length`` long, else drawn again; nothing else is rejected. Split ``s`` is drawn from
``random.Random(f"listops:{seed}:{s}")``, so validation and test come from other streams than training and do
not change with the training split's size. The expressions of different splits may coincide only at lengths
with few expressions (a handful of tokens).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
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


def longest(max_depth: int, max_args: int) -> int:
    """Tokens of the largest expression: every list full, nested ``max_depth`` operators deep."""
    tokens = 1  # a digit
    for _ in range(max_depth):
        tokens = 2 + max_args * tokens  # operator, its arguments, ]
    return tokens


class _Node:
    """A digit, until it becomes an operator over ``children``; ``depth`` counts the operators down to it, itself
    included once it is one."""

    __slots__ = ("operator", "children", "depth")

    def __init__(self, depth: int) -> None:
        self.operator: str | None = None
        self.children: list[_Node] = []
        self.depth = depth


class ListOpsError(ZooError, ValueError):
    """The settings leave no expression of the lengths asked for."""


class ExpressionGenerator:
    """Random ListOps expressions of a given length in tokens (see the module docstring)."""

    ATTEMPTS = 100  # trees drawn for one length before the settings are blamed

    def __init__(self, rng: random.Random, max_depth: int, max_args: int) -> None:
        self.rng, self.max_depth, self.max_args = rng, max_depth, max_args

    def expression(self, min_length: int, max_length: int) -> tuple[list[str], int]:
        """Tokens of an expression of ``min_length`` to ``max_length`` tokens, and its value."""
        for _ in range(self.ATTEMPTS):
            root, size = self._grow(self.rng.randint(min_length, max_length))
            if size >= min_length:
                tokens: list[str] = []
                digits = iter(self.rng.choices(range(10), k=size))  # more than enough: one per token
                return tokens, self._write(root, tokens, digits)
        raise ListOpsError(
            f"no expression of {min_length}-{max_length} tokens with max_args={self.max_args} and "
            f"max_depth={self.max_depth} in {self.ATTEMPTS} tries; widen the length range or raise max_args"
        )

    def _grow(self, length: int) -> tuple[_Node, int]:
        """A tree of ``length`` tokens, or smaller when no list has room for its last token or two."""
        rng, max_args = self.rng, self.max_args
        root = _Node(1)
        leaves: list[_Node] = []  # digits that may become operators (not at max_depth)
        open_lists: list[_Node] = []  # operators with fewer than max_args arguments
        size = 1 + self._branch(root, min(rng.randint(2, max_args), length - 2), leaves, open_lists)
        while size < length:
            room = length - size
            if leaves and room >= 3:  # a digit becomes an operator over k digits: k + 1 tokens more
                node = _take(leaves, rng)
                size += self._branch(node, min(rng.randint(2, max_args), room - 1), leaves, open_lists)
            elif open_lists:  # one digit more in a list with room
                node = open_lists[rng.randrange(len(open_lists))]
                child = _Node(node.depth + 1)
                node.children.insert(rng.randrange(len(node.children) + 1), child)
                self._keep(child, leaves)
                if len(node.children) == max_args:
                    open_lists.remove(node)
                size += 1
            else:
                break
        return root, size

    def _branch(self, node: _Node, arguments: int, leaves: list[_Node], open_lists: list[_Node]) -> int:
        """Make ``node`` an operator over ``arguments`` new digits; the tokens this adds."""
        rng = self.rng
        node.operator = OPERATORS[rng.randrange(len(OPERATORS))]
        node.children = [_Node(node.depth + 1) for _ in range(arguments)]
        for child in node.children:
            self._keep(child, leaves)
        if arguments < self.max_args:
            open_lists.append(node)
        return arguments + 1  # operator, arguments and ] in place of the digit

    def _keep(self, digit: _Node, leaves: list[_Node]) -> None:
        """List a new digit among those that may become operators, unless it lies at ``max_depth``."""
        if digit.depth <= self.max_depth:
            leaves.append(digit)

    def _write(self, node: _Node, tokens: list[str], digits: Iterator[int]) -> int:
        """Append the tokens of ``node`` (prefix order), its digits drawn from ``digits``, and return its value."""
        if node.operator is None:
            value = next(digits)
            tokens.append(DIGITS[value])
            return value
        tokens.append(node.operator)
        values = [self._write(child, tokens, digits) for child in node.children]
        tokens.append(CLOSE)
        return apply(node.operator, values)


def _take(nodes: list[_Node], rng: random.Random) -> _Node:
    """Remove and return a random element in O(1) (order does not matter)."""
    index = rng.randrange(len(nodes))
    nodes[index], nodes[-1] = nodes[-1], nodes[index]
    return nodes.pop()


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
        max_depth: int = 10  # most operators nested inside one another (LRA: 10)
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
        return {split: self._generate(split, sizes[split]) for split in SPLITS}

    def _generate(self, split: str, size: int) -> list[Item]:
        cfg = self.cfg
        generator = ExpressionGenerator(random.Random(f"listops:{cfg.seed}:{split}"), cfg.max_depth, cfg.max_args)
        items = []
        for index in range(size):
            tokens, value = generator.expression(cfg.min_length, cfg.max_length)
            items.append(Item(f"{split}-{index}", " ".join(tokens), (DIGITS[value],)))
        return items
