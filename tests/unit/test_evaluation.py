"""The run's metric suite: the task's defaults, the config's choice, the monitor and its direction."""

import pytest

from zoo.registry import discovery
from zoo.training.evaluation import MetricChoiceError, MetricSuite

discovery.discover()


def suite(**chosen) -> MetricSuite:
    return MetricSuite({"task": {"name": "translation"}, "metrics": None, "monitor": None, **chosen})


def test_defaults_come_from_the_task():
    metrics = suite()
    assert list(metrics.metrics) == ["bleu", "chrf"] and metrics.monitor == "bleu" and metrics.mode == "max"


def test_a_monitor_outside_the_list_is_added_and_duplicates_collapse():
    metrics = suite(metrics=["bleu", "bleu"], monitor="chrf")
    assert list(metrics.metrics) == ["bleu", "chrf"] and metrics.monitor == "chrf"


def test_scores_and_descriptions_cover_every_metric():
    metrics = suite()
    scores = metrics.scores(["a dog runs in the big green park"], [("a dog runs in the big green park",)])
    assert scores == {"bleu": pytest.approx(100.0), "chrf": pytest.approx(100.0)}
    assert set(metrics.item_scores(["a dog runs in the big green park"], [("a dog runs in the big green park",)])) == {
        "bleu",
        "chrf",
    }
    assert all(entry["higher_is_better"] and "nrefs:1" in entry["signature"] for entry in metrics.describe().values())


def test_an_unknown_metric_lists_the_registered_ones():
    with pytest.raises(MetricChoiceError, match="unknown metric.* nope; registered metrics: accuracy, bleu, .*chrf"):
        suite(metrics=["bleu", "nope"])


def test_a_metric_can_carry_its_options():
    metrics = suite(metrics=["bleu", {"name": "chrf", "word_order": 2}])
    metrics.scores(["a dog runs in the big green park"], [("a dog runs in the big green park",)])
    assert "nw:2" in metrics.describe()["chrf"]["signature"]
    with pytest.raises(Exception, match="word_ordr"):
        suite(metrics=[{"name": "chrf", "word_ordr": 2}])
