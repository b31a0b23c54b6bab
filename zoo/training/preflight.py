"""A job's config checked before any data loads: what ``zoo train`` checks for every job of its command line
(:mod:`zoo.cli.train`), and each job again before it reads its data (:mod:`zoo.training.train`).

First the config's own sections (:func:`zoo.config.validate.check_sections`: keys and ranges), then what takes
building: the reward of self-critical training, the metrics, the task with its dataset and frontend, the weights
``init_from`` names, the model itself on a tiny batch (:func:`zoo.checks.probe.probe_model`) and the trackers.
Each refusal is one line, before a minute of data loading.
"""

from __future__ import annotations

import importlib.util
from typing import Any

from omegaconf import DictConfig

from zoo.config.checks import ConfigError
from zoo.config.schema import ResumeMode
from zoo.config.validate import check_sections
from zoo.errors import ZooError
from zoo.registry import get
from zoo.run.resume import resume_mode

#: Trackers whose packages are optional: the switch in ``logger`` (also zoo's extra) and the modules any of which do.
OPTIONAL_TRACKERS = {"tensorboard": ("tensorboard", "tensorboardX"), "mlflow": ("mlflow",)}


class MissingTrackerPackage(ZooError):
    """A tracker was asked for but its package is not installed."""


def validate(cfg: DictConfig) -> None:
    """Raise one line (a :class:`ConfigError` naming the section and field, or what is missing) for the first thing
    in ``cfg`` a job would trip over."""
    check_sections(cfg)
    # What takes building needs the plugins, torch and Lightning, imported once the sections pass: a refused key or
    # range answers in a second rather than after them.
    from zoo.checks.probe import probe_model
    from zoo.data.datamodule import build_task
    from zoo.registry.discovery import discover
    from zoo.training.evaluation import MetricSuite
    from zoo.training.init_from import read_initial
    from zoo.training.loggers import check_tracking_server

    discover(list(cfg.get("plugin_dirs") or []))
    if cfg.scst.enabled:
        check_reward(cfg)
    MetricSuite(cfg)  # an unknown metric or monitor is reported now, not after the data has loaded
    build_task(cfg)  # the task, its dataset and its frontend must read the same kind of source
    check_decoder_writes(cfg)
    if cfg.init_from and resume_mode(cfg) is ResumeMode.never:  # a job that may resume checks it once it starts
        read_initial(cfg)  # a missing, damaged or other model's checkpoint is refused before any data loads
    probe_model(cfg)  # the model as configured runs once on a tiny batch, each component held to its contract
    check_tracker_packages(cfg.logger)
    check_tracking_server(cfg.logger)


def check_decoder_writes(cfg: DictConfig) -> None:
    """A decoder that writes one token per source (a classification head) cannot write a task's sequences: it would
    train a one-word translator, silently."""
    task, decoder = get("task", cfg.task.name).cls, get("decoder", cfg.decoder.name).cls
    if decoder.writes_one_token and not task.one_token_outputs:
        raise ConfigError(
            f"decoder={cfg.decoder.name} writes one token per source (a label), but task={cfg.task.name} writes "
            "sequences; choose a decoder that writes them (zoo list decoder), or task=classification for labels"
        )


def check_reward(cfg: DictConfig) -> None:
    """Self-critical training's reward metric must be registered, run here and score items one by one."""
    from zoo.training.scst import reward_metric

    try:
        reward_metric(cfg)
    except ConfigError as error:
        raise ConfigError(f"scst.{error}") from None


def check_tracker_packages(logger_cfg: Any) -> None:
    """Refuse a run before it starts when a chosen tracker's package is missing, naming the extra that installs it."""
    for tracker, modules in OPTIONAL_TRACKERS.items():
        if logger_cfg[tracker] and not any(importlib.util.find_spec(module) for module in modules):
            raise MissingTrackerPackage(
                f"logger.{tracker}=true needs the {modules[0]} package: pip install 'zoo[{tracker}]'"
            )
