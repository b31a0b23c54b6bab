"""The loggers of a run: nothing leaves the machine unless a user says so; optional trackers say what to install."""

import importlib.util
import json

import pytest
from conftest import TINY, fork_zoo

from zoo.config.validate import check_tracker_packages
from zoo.errors import ZooError
from zoo.training.loggers import wandb_mode


def test_config_mode_wins_then_environment_then_offline(monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "online")
    assert wandb_mode({"mode": "disabled"}) == "disabled"
    assert wandb_mode({"mode": None}) == "online"
    monkeypatch.setenv("WANDB_MODE", "")
    assert wandb_mode({"mode": None}) == "offline"
    monkeypatch.delenv("WANDB_MODE")
    assert wandb_mode({"mode": None}) == "offline"


def test_a_missing_tracker_package_names_the_extra_to_install(monkeypatch):
    logger = {"wandb": False, "tensorboard": False, "mlflow": True}
    check_tracker_packages(logger)  # installed with the dev extra
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ZooError, match=r"^logger.mlflow=true needs the mlflow package: pip install 'zoo\[mlflow\]'$"):
        check_tracker_packages(logger)
    check_tracker_packages({**logger, "mlflow": False})  # nothing asked for, nothing needed


def test_tensorboard_and_mlflow_presets_log_the_run(tmp_path, monkeypatch):
    from mlflow.tracking import MlflowClient  # slow to import: only where it is used

    run_dir = tmp_path / "run"
    fork_zoo("train", *TINY, "logger=[tensorboard,mlflow]", f"hydra.run.dir={run_dir}", cwd=tmp_path)
    assert list((run_dir / "tensorboard").glob("events.out.tfevents.*")), "TensorBoard writes event files"
    assert (run_dir / "metrics.csv").exists(), "CSV is always written"

    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow 3 reads a file store only when told to
    client = MlflowClient(tracking_uri=f"file:{run_dir / 'mlruns'}")
    (run,) = client.search_runs([client.get_experiment_by_name("zoo").experiment_id])
    summary = json.loads((run_dir / "summary.json").read_text())
    assert run.info.status == "FINISHED" and run.data.tags["encoder"] == "gru"
    assert run.data.metrics["test/bleu"] == summary["test"]["bleu"]["score"]
    assert run.data.metrics["parameters/trainable"] == summary["parameters"]["trainable"]
