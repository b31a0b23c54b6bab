"""The ``listops`` dataset: expressions evaluate to their labels, lengths and nesting keep to the settings as LRA
means them, lengths follow LRA's tree-then-reject draw, no expression repeats, and the same settings give the same
expressions."""

import math
import random
import statistics

import pytest

from zoo import registry
from zoo.config.checks import ConfigError
from zoo.registry import discovery
from zoo_plugins.datasets.listops import ExpressionGenerator, ListOpsError

discovery.discover()

SMALL = {"train_size": 300, "val_size": 30, "test_size": 30, "min_length": 10, "max_length": 80}


def splits(**overrides):
    cfg = registry.default_config("dataset", "listops", **{**SMALL, **overrides})
    return registry.build("dataset", cfg).splits()


def evaluate(tokens: list[str]) -> tuple[int, int, int]:
    """An expression's value, its nesting depth and its widest list, read with a stack (written apart from the
    generator: the median from the statistics module, rounded down)."""
    rules = {
        "MIN": min,
        "MAX": max,
        "MED": lambda values: math.floor(statistics.median(values)),
        "SM": lambda values: sum(values) % 10,
    }
    stack: list[tuple[str, list[int]]] = []
    depth = widest = 0
    result = None
    for token in tokens:
        if token in rules:
            stack.append((token, []))
            depth = max(depth, len(stack))
        elif token == "]":
            operator, values = stack.pop()
            widest = max(widest, len(values))
            assert len(values) >= 2, "every operator has at least two arguments"
            value = rules[operator](values)
            if stack:
                stack[-1][1].append(value)
            else:
                result = value
        else:
            stack[-1][1].append(int(token))
    assert not stack and result is not None, "one complete expression"
    return result, depth, widest


def test_every_expression_evaluates_to_its_label():
    for items in splits().values():
        for item in items:
            assert item.references == (str(evaluate(item.source.split())[0]),), item.source


def test_lengths_depth_and_arguments_keep_to_the_settings():
    data = splits(min_length=20, max_length=60, max_depth=4, max_args=4)
    lengths, depths = [], set()
    for item in (item for items in data.values() for item in items):
        tokens = item.source.split()
        _, depth, widest = evaluate(tokens)
        assert widest <= 4
        lengths.append(len(tokens))
        depths.add(depth)
    assert max(depths) == 3, "an operator only while the depth is below max_depth, as LRA's"
    assert min(lengths) >= 20 and max(lengths) <= 60
    assert max(lengths) - min(lengths) > 20, "lengths spread over the range"


def test_max_depth_one_gives_no_operator():
    generator = ExpressionGenerator(random.Random(0), max_depth=1, max_args=10)
    trees = []
    for _ in range(200):
        tokens: list[str] = []
        generator.tree(1, tokens, limit=100)
        trees.append(tokens)
    assert all(len(tokens) == 1 and tokens[0].isdigit() for tokens in trees)


def lra_length(rng: random.Random, depth: int, max_depth: int, max_args: int) -> int:
    """The length of one tree drawn as LRA's generator draws it (an operator with probability 1/4 while depth <
    max_depth, over 2-max_args subtrees; its tokens and ]), written apart from the dataset's code."""
    if depth >= max_depth or rng.random() > 0.25:
        return 1
    return 2 + sum(lra_length(rng, depth + 1, max_depth, max_args) for _ in range(rng.randint(2, max_args)))


def test_lengths_follow_lras_tree_then_reject_draw():
    rng = random.Random(7)
    theirs: list[int] = []
    while len(theirs) < 600:
        length = lra_length(rng, 1, 10, 10)
        if 10 <= length <= 200:
            theirs.append(length)
    ours = [len(item.source.split()) for item in splits(min_length=10, max_length=200, train_size=600)["train"]]
    # Kolmogorov-Smirnov distance of the two samples: 0.11 is the 0.1 % critical value for 600 and 600; a draw
    # uniform over the lengths (median 105, not LRA's 24) is 0.5 away.
    distance = max(abs(sum(x <= t for x in ours) - sum(x <= t for x in theirs)) / 600 for t in range(10, 201))
    assert distance < 0.11


def test_no_expression_is_drawn_twice_in_or_across_splits():
    sources = [item.source for items in splits(min_length=4, max_length=5, max_args=3).values() for item in items]
    assert len(sources) == 360 and len(set(sources)) == 360


def test_labels_are_digits_and_every_digit_occurs():
    labels = {item.references[0] for item in splits()["train"]}
    assert labels == {str(d) for d in range(10)}


def test_the_same_settings_give_the_same_expressions_and_another_seed_others():
    assert splits(seed=3) == splits(seed=3)
    assert splits(seed=3)["train"] != splits(seed=4)["train"]


def test_validation_and_test_come_from_their_own_streams():
    data = splits()
    sources = {split: [item.source for item in items] for split, items in data.items()}
    assert sources["val"] != sources["train"][:30] and sources["test"] != sources["val"]
    bigger = splits(train_size=500)
    assert bigger["val"] == data["val"] and bigger["test"] == data["test"], "val/test do not follow the train size"


def test_lengths_out_of_reach_are_refused_when_configured():
    with pytest.raises(ConfigError, match="raise max_depth or max_args"):  # two operators deep, full: 17 tokens
        registry.build("dataset", registry.default_config("dataset", "listops", max_depth=3, max_args=3, min_length=18))
    with pytest.raises(ConfigError, match="max_length"):
        registry.build("dataset", registry.default_config("dataset", "listops", min_length=50, max_length=40))


def test_a_length_no_tree_can_have_is_one_error_naming_the_settings():
    # With two arguments an operator adds 3 tokens: 4, 7, 10 ... so 9 tokens cannot be reached.
    with pytest.raises(ListOpsError, match="no expression of 9-9 tokens with max_args=2"):
        splits(min_length=9, max_length=9, max_args=2)
