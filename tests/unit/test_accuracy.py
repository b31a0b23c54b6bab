"""The ``accuracy`` metric: 100 for an output equal to one of its references, 0 otherwise, the corpus the mean."""

import pytest

from zoo import registry
from zoo.registry import discovery

discovery.discover()


def accuracy(**settings):
    return registry.build("metric", registry.default_config("metric", "accuracy", **settings))


def test_an_item_scores_100_when_it_equals_any_reference_and_0_otherwise():
    references = [("7",), ("v3", "v4"), ("2",)]
    assert accuracy().item_scores(["7", "v4", "3"], references) == [100.0, 100.0, 0.0]


def test_the_corpus_score_is_the_percentage_of_exact_matches():
    references = [("1",), ("2",), ("3",), ("4",)]
    assert accuracy().corpus_score(["1", "2", "3", "0"], references) == pytest.approx(75.0)
    assert accuracy().corpus_score([], []) == 0.0


def test_outputs_are_compared_word_by_word_not_by_spacing():
    assert accuracy().item_scores([" v1  v2 ", "v1 v2", "v1v2"], [("v1 v2",)] * 3) == [100.0, 100.0, 0.0]


def test_a_near_miss_is_wrong():
    assert accuracy().item_scores(["v1 v2", "v1", ""], [("v1 v2 v3",)] * 3) == [0.0, 0.0, 0.0]


def test_case_counts_unless_lowercase_is_set():
    assert accuracy().item_scores(["Yes"], [("yes",)]) == [0.0]
    assert accuracy(lowercase=True).item_scores(["Yes"], [("yes",)]) == [100.0]
