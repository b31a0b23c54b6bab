"""A metric plugin written as docs/plugins/metric.md shows is reported, monitored and compared with no other change."""

from __future__ import annotations

import json
import shlex

import pytest
import torch
from helpers import TINY, fenced_block_after, fork_zoo

pytestmark = pytest.mark.slow


def test_ter_plugin_drives_checkpoints_early_stopping_summary_and_compare(tmp_path):
    plugin = tmp_path / "my_plugins" / "ter.py"
    plugin.parent.mkdir()
    plugin.write_text(fenced_block_after("<!-- docs-test: plugin my_plugins/ter.py -->"))
    command = shlex.split(fenced_block_after("<!-- docs-test: run -->", page="docs/plugins/metric.md").split("#")[0])
    assert command[:2] == ["zoo", "train"]
    run_dir = tmp_path / "run"
    tiny = [arg for arg in TINY if arg not in command]  # the page's command chooses experiment=smoke itself
    fork_zoo(*command[1:], *tiny, "trainer.max_epochs=2", f"hydra.run.dir={run_dir}", cwd=tmp_path)

    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["monitor"] == "ter"
    assert set(summary["test"]) == {"bleu", "chrf", "ter"}
    assert summary["test"]["ter"]["higher_is_better"] is False and "tok:tercom" in summary["test"]["ter"]["signature"]
    # what a sweeper receives: the best validation TER, the lowest (validations keep 4 decimals)
    assert summary["best_val"] == pytest.approx(min(v["ter"] for v in summary["validations"]), abs=1e-4)

    header = (run_dir / "metrics.csv").read_text().splitlines()[0].split(",")
    assert "val/ter" in header and "test/ter" in header
    states = torch.load(run_dir / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=False)["callbacks"]
    watched = {key.split("{")[0]: key for key in states}
    assert "'monitor': 'val/ter'" in watched["ModelCheckpoint"] and "'mode': 'min'" in watched["ModelCheckpoint"]
    assert "'monitor': 'val/ter'" in watched["EarlyStopping"] and "'mode': 'min'" in watched["EarlyStopping"]
    val_ter = [
        float(v)
        for row in (run_dir / "metrics.csv").read_text().splitlines()[1:]
        for k, v in zip(header, row.split(","))
        if k == "val/ter" and v
    ]
    assert summary["best_val"] == min(val_ter), "the best checkpoint is the one with the lowest val/ter"

    table = fork_zoo("compare", str(run_dir), "--format", "markdown", cwd=tmp_path).stdout
    assert "| ter |" in table and "sorted by ter (lower is better)" in table
