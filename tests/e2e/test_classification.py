"""Sequence classification end to end: experiment=listops, shrunk to seconds, trains, tests and predicts labels."""

from __future__ import annotations

import json

import pytest
from helpers import fork_zoo

pytestmark = pytest.mark.slow

#: experiment=listops at a few seconds' scale: short expressions, few of them, a tiny GRU and head, one epoch.
LISTOPS_TINY = [
    "experiment=listops",
    "dataset.train_size=96",
    "dataset.val_size=8",
    "dataset.test_size=8",
    "dataset.min_length=8",
    "dataset.max_length=24",
    "frontend.dim=16",
    "encoder.hidden_size=16",
    "decoder.hidden_size=16",
    "trainer.max_epochs=1",
    "trainer.enable_progress_bar=false",
    "samples=2",
    "latency_items=2",
]


def test_a_listops_run_reports_test_accuracy_and_predicts_one_label_per_expression(tmp_path):
    run = tmp_path / "run"
    fork_zoo("train", *LISTOPS_TINY, f"hydra.run.dir={run}", cwd=tmp_path)
    summary = json.loads((run / "summary.json").read_text())
    assert summary["status"] == "finished" and summary["task"] == "classification"
    assert summary["monitor"] == "accuracy" and 0 <= summary["test"]["accuracy"]["score"] <= 100
    assert sum(bucket["count"] for bucket in summary["breakdowns"]["accuracy_by_length"].values()) == 8
    items = [json.loads(line) for line in (run / "test_items.jsonl").read_text().splitlines()]
    assert len(items) == 8 and all(item["references"][0] in "0123456789" for item in items)
    assert all(item["hypothesis"] in [*"0123456789", ""] for item in items), "a label, or nothing, per expression"
    predicted = fork_zoo("predict", str(run), "MAX 1 7 ]", "SM 3 MIN 4 5 ] ]", cwd=tmp_path).stdout.splitlines()
    assert len(predicted) == 2 and all(label in [*"0123456789", ""] for label in predicted)
