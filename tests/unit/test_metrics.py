"""Scoring helpers and the built-in metrics with several references per item."""

import pytest

from zoo import registry
from zoo.metrics import bleu_by_source_length, length_bucket_label, reference_streams
from zoo.registry import discovery

discovery.discover()


def metric(name: str):
    return registry.build("metric", registry.default_config("metric", name))


def test_reference_streams_transpose_and_fill_missing_references_with_none():
    assert reference_streams([("a", "b"), ("c",)]) == [["a", "c"], ["b", None]]


def test_a_hypothesis_matching_any_reference_scores_perfectly():
    references = [("the cat sat on the mat today", "a cat was sitting on the mat")]
    for name in ("bleu", "chrf"):
        assert metric(name).corpus_score(["a cat was sitting on the mat"], references) == pytest.approx(100.0)
        assert metric(name).item_scores(["a cat was sitting on the mat"], references) == [pytest.approx(100.0)]


def test_signatures_say_how_many_references_were_scored():
    for name in ("bleu", "chrf"):
        scorer = metric(name)
        scorer.corpus_score(["x y"], [("x y", "y x")])
        assert "nrefs:2" in scorer.signature()


def test_item_scores_are_one_per_item_and_order_like_the_corpus():
    references = [("a dog runs in the park",), ("the cat sleeps on a warm mat",)]
    scores = metric("bleu").item_scores(["a dog runs in the park", "zebra"], references)
    assert len(scores) == 2 and scores[0] > scores[1]


def test_bleu_by_source_length_buckets_items_and_uses_all_references():
    sources = ["one two", "one two three four five six seven eight nine ten eleven twelve"]
    hypotheses = ["the same words here now", "nothing alike"]
    references = [("other words entirely", "the same words here now"), ("zebra quantum",)]
    table = bleu_by_source_length(sources, hypotheses, references, [10, 20])
    assert table["1-10"] == {"bleu": pytest.approx(100.0), "count": 1}
    assert table["11-20"]["count"] == 1 and table["11-20"]["bleu"] == 0.0
    assert length_bucket_label(21, [10, 20]) == "21+"
