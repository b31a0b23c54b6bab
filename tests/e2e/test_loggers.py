"""The loggers of a run: nothing leaves the machine unless a user says so; optional trackers say what to install;
the training curve (loss, learning rate, gradient norm) reaches metrics.csv and every tracker."""

import csv
import importlib.util
import json
import math
from pathlib import Path

import pytest
from helpers import TINY, fork_zoo
from omegaconf import OmegaConf

from zoo.errors import ZooError
from zoo.run.layout import TRAIN_GRAD_NORM, TRAIN_LOSS, TRAIN_LR
from zoo.training.loggers import wandb_mode
from zoo.training.preflight import check_tracker_packages
from zoo.training.schedule import warmup_then_decay

pytestmark = pytest.mark.slow


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


def training_rows(run_dir: Path) -> dict[int, dict[str, float]]:
    """The training curve in ``run_dir/metrics.csv``: step -> loss, learning rate and gradient norm."""
    with open(run_dir / "metrics.csv", newline="") as file:
        rows = [row for row in csv.DictReader(file) if row[TRAIN_LOSS]]
    curve = (TRAIN_LOSS, TRAIN_LR, TRAIN_GRAD_NORM)
    return {int(row["step"]): {name: float(row[name]) for name in curve} for row in rows}


CLIP = 0.01  # below every gradient norm of a tiny run's first steps


@pytest.fixture(scope="module")
def tracked_run(tmp_path_factory) -> Path:
    """A tiny run (5 steps) logged to TensorBoard and MLflow too, every 2 steps, its gradients clipped at 0.01."""
    work = tmp_path_factory.mktemp("tracked")
    run_dir = work / "run"
    fork_zoo(
        "train",
        *TINY,
        "logger=[tensorboard,mlflow]",
        "trainer.log_every_n_steps=2",
        f"trainer.gradient_clip_val={CLIP}",
        f"hydra.run.dir={run_dir}",
        cwd=work,
    )
    return run_dir


def test_metrics_csv_holds_the_training_curve_every_n_steps(tracked_run):
    rows = training_rows(tracked_run)
    assert list(rows) == [0, 2, 4], "the first step, then every trainer.log_every_n_steps=2 of the run's 5"
    assert all(math.isfinite(value) for row in rows.values() for value in row.values())
    optim = OmegaConf.load(tracked_run / "config.yaml").optim
    factor = warmup_then_decay(optim.schedule, optim.warmup_steps, total_steps=5)
    assert [row[TRAIN_LR] for row in rows.values()] == pytest.approx([optim.lr * factor(step) for step in rows])
    assert all(row[TRAIN_GRAD_NORM] > CLIP for row in rows.values()), "the norm before clipping, not after"


def test_a_short_run_logs_its_first_step_at_the_default_interval(trained_run):
    assert list(training_rows(trained_run)) == [0], "5 steps, trainer.log_every_n_steps=10: the first step only"


def test_tensorboard_and_mlflow_presets_log_the_run(tracked_run, monkeypatch):
    from mlflow.tracking import MlflowClient  # slow to import: only where it is used

    run_dir = tracked_run
    assert list((run_dir / "tensorboard").glob("events.out.tfevents.*")), "TensorBoard writes event files"

    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow 3 reads a file store only when told to
    client = MlflowClient(tracking_uri=f"file:{run_dir / 'mlruns'}")
    (run,) = client.search_runs([client.get_experiment_by_name("zoo").experiment_id])
    summary = json.loads((run_dir / "summary.json").read_text())
    assert run.info.status == "FINISHED" and run.data.tags["encoder"] == "gru"
    assert run.data.metrics["test/bleu"] == summary["test"]["bleu"]["score"]
    assert run.data.metrics["parameters/trainable"] == summary["parameters"]["trainable"]
    curve = {step: row[TRAIN_GRAD_NORM] for step, row in training_rows(run_dir).items()}
    history = client.get_metric_history(run.info.run_id, TRAIN_GRAD_NORM)
    assert {metric.step: metric.value for metric in history} == pytest.approx(curve), "the tracker gets metrics.csv's"


def test_tensorboard_gets_the_flat_config_against_the_final_metrics_as_hparams(tracked_run):
    """One set of HParams, written once the run has its results: every key of config.yaml, dotted as W&B gets
    them (not the module's nested ``cfg``), against the test scores, costs and latency zoo compare sorts by."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.plugins.hparams import plugin_data_pb2

    written = []
    for events in sorted((tracked_run / "tensorboard").glob("events.out.tfevents.*")):
        accumulator = EventAccumulator(str(events))
        accumulator.Reload()
        if "_hparams_/experiment" in accumulator.summary_metadata:
            written.append((accumulator, accumulator.PluginTagToContent("hparams")))
    ((accumulator, content),) = written
    data = plugin_data_pb2.HParamsPluginData
    hparams = data.FromString(content["_hparams_/session_start_info"]).session_start_info.hparams
    config = OmegaConf.to_container(OmegaConf.load(tracked_run / "config.yaml"))
    assert hparams["encoder.hidden_size"].number_value == config["encoder"]["hidden_size"] and "cfg" not in hparams
    assert hparams["config_key"].string_value == json.loads((tracked_run / "summary.json").read_text())["config_key"]
    metrics = [info.name.tag for info in data.FromString(content["_hparams_/experiment"]).experiment.metric_infos]
    summary = json.loads((tracked_run / "summary.json").read_text())
    assert {"test/bleu", "best_val/bleu", "parameters/trainable", "latency_ms/greedy"} <= set(metrics)
    (final,) = accumulator.Scalars("test/bleu")
    assert final.step == summary["steps"] and final.value == pytest.approx(summary["test"]["bleu"]["score"])
