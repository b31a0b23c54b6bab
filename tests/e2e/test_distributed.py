"""Runs that start more processes: Lightning's DDP relaunch (sharded evaluation) and a Hydra joblib sweep
with a folder plugin.

Each child process rebuilds the run from the environment and its command line alone, so these
runs check that `zoo train` relaunches as `python -m zoo.cli.train` and that folder plugins
have importable module names.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from helpers import TINY, fenced_block_after, run_zoo

pytestmark = pytest.mark.slow


def evaluate_in_one_process(run_dir: Path) -> tuple[dict[str, float], list[str]]:
    """The run's best checkpoint validated and tested by one process: every metric logged, and the test outputs."""
    import lightning as L
    from omegaconf import OmegaConf

    from zoo.data.datamodule import ZooDataModule
    from zoo.registry.discovery import discover
    from zoo.training.module import ZooModule

    discover()
    data = ZooDataModule(OmegaConf.load(run_dir / "config.yaml"), run_dir)  # loads the run's codecs
    module = ZooModule.load_from_checkpoint(run_dir / "checkpoints" / "best.ckpt", map_location="cpu")
    trainer = L.Trainer(
        accelerator="cpu",
        devices=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.validate(module, datamodule=data, verbose=False)
    metrics = {name: float(value) for name, value in trainer.callback_metrics.items()}
    trainer.test(module, datamodule=data, verbose=False)
    metrics.update({name: float(value) for name, value in trainer.callback_metrics.items()})
    return metrics, module.results["test"]["hypotheses"]


def logged_metrics(run_dir: Path) -> dict[str, float]:
    """The last value of every val/ and test/ metric in the run's metrics.csv."""
    with open(run_dir / "metrics.csv", newline="") as file:
        rows = list(csv.DictReader(file))
    evaluated = ("val/", "test/")
    return {name: float(value) for row in rows for name, value in row.items() if name.startswith(evaluated) and value}


def test_ddp_on_two_cpu_processes_writes_one_run_and_scores_whole_splits(tmp_path):
    """Two gloo processes (trainer=ddp_cpu) share the evaluation batches and agree with one process.

    The default run directory holds a timestamp: a rank that composed its own would make a second one.
    """
    # 3 validation and test batches: one process evaluates two of them, the other one
    proc = run_zoo("train", *TINY, "trainer=ddp_cpu", "data.max_tokens=200", "dataset.train_size=64", cwd=tmp_path)
    assert "MEMBER: 2/2" in proc.stdout + proc.stderr, "the second rank never started"
    assert proc.stdout.count("run directory:") == 1, "only rank 0 prints the result"
    assert [p.name for p in tmp_path.iterdir()] == ["outputs"], "a rank wrote outside the run directory"
    (run_dir,) = (tmp_path / "outputs").glob("*/*")
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["steps"] > 0
    assert (run_dir / "checkpoints" / "best.ckpt").is_file()
    assert (run_dir / "config.yaml").is_file()
    assert [p.name for p in run_dir.glob("*.log")] == ["train.log"]
    assert (run_dir / "train.log").read_text().count("validation epoch 0") == 1, "only rank 0 logs"
    with open(run_dir / "metrics.csv", newline="") as file:
        assert sum(1 for row in csv.DictReader(file) if row["val/loss"]) == len(summary["validations"]) == 1

    # The one validation chose best.ckpt, so one process evaluating it gets what the two logged.
    expected, hypotheses = evaluate_in_one_process(run_dir)
    logged = logged_metrics(run_dir)
    assert logged.keys() == expected.keys() >= {"val/loss", "val/bleu", "test/loss", "test/bleu"}
    for name in logged:  # the losses add the processes' sums in another order
        assert logged[name] == (pytest.approx(expected[name], rel=1e-6) if name.endswith("/loss") else expected[name])
    assert (run_dir / "test_hypotheses.txt").read_text().splitlines() == hypotheses


def test_joblib_sweep_workers_import_a_folder_plugin(tmp_path):
    (tmp_path / "my_plugins").mkdir()
    scorer = fenced_block_after("<!-- docs-test: plugin my_plugins/distance.py -->")  # the README's example plugin
    (tmp_path / "my_plugins" / "distance.py").write_text(scorer)
    sweep = ["-m", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2", "attention=distance"]  # in a loky worker
    run_zoo(
        "train",
        *sweep,
        "plugin_dirs=[my_plugins]",
        *TINY,
        "dataset.train_size=64",
        "dataset.val_size=8",
        "dataset.test_size=8",
        f"hydra.sweep.dir={tmp_path / 'sweep'}",
        cwd=tmp_path,
    )
    record = json.loads((tmp_path / "sweep" / "0" / "summary.json").read_text())
    assert record["status"] == "finished" and record["components"]["attention"]["name"] == "distance"
