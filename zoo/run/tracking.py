"""What zoo tells experiment trackers beyond Lightning's own logging.

At the start, who a run is: its group (the sweep or experiment it belongs to), one tag
per component (``encoder=gru``) and a flat config, so a tracker's UI can group and filter
runs. At the end, what it measured: sample outputs as a W&B table and the final test
scores, costs and latency in the W&B run summary (as metrics in MLflow, as TensorBoard's HParams). And one W&B run
per job: Lightning leaves its run open in the process, where a sweep's next job would
otherwise go on logging into it; each gets its own W&B run id, the one its ``summary.json`` names, and a resumed
run logs into its own W&B run again.
"""

from __future__ import annotations

import secrets
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from zoo.run.identity import config_key, flat
from zoo.run.record import RunRecord

#: Longest group and tag W&B accepts.
WANDB_GROUP_CHARS, WANDB_TAG_CHARS = 128, 64


def in_sweep() -> bool:
    return HydraConfig.initialized() and HydraConfig.get().mode == RunMode.MULTIRUN


def run_group(cfg: DictConfig) -> str | None:
    """``logger.group`` if set; in a sweep its directory (its jobs are one comparison); else the experiment preset."""
    if cfg.logger.group:
        return cfg.logger.group
    if in_sweep():
        return str(HydraConfig.get().sweep.dir)[-WANDB_GROUP_CHARS:]
    return HydraConfig.get().runtime.choices.get("experiment") if HydraConfig.initialized() else None


def run_name(run_dir: Path) -> str:
    """The run directory's last two parts (``2026-11-21/10-00-00``, a sweep's ``10-00-00/3``): they find it on disk."""
    return "/".join(run_dir.parts[-2:])


def components(cfg: DictConfig) -> dict[str, str]:
    """The plugin chosen in each config group: the sections that name one (``encoder: gru``, ``attention: dot``)."""
    return {
        group: section["name"]
        for group, section in cfg.items()
        if isinstance(section, DictConfig) and "name" in section
    }


def run_tags(cfg: DictConfig) -> list[str]:
    """``group=plugin`` for every component, then the user's ``logger.tags``."""
    tags = [f"{group}={name}" for group, name in components(cfg).items()] + list(cfg.logger.tags)
    return [tag[:WANDB_TAG_CHARS] for tag in tags]


def flat_config(cfg: DictConfig) -> dict[str, Any]:
    """The resolved config as dotted keys (``encoder.name``, ``optim.lr``) and the ``config_key`` its seeds share."""
    return {**flat(OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)), "config_key": config_key(cfg)}


def final_metrics(summary: dict) -> dict[str, float]:
    """The numbers a comparison sorts by: test scores, the best validation score, costs and latency."""
    metrics = {f"test/{name}": entry["score"] for name, entry in summary.get("test", {}).items()}
    metrics[f"best_val/{summary.get('monitor')}"] = summary.get("best_val")
    if summary.get("average"):  # the averaged checkpoint's validation (trainer.average_last/average_best)
        metrics[f"average_val/{summary.get('monitor')}"] = summary["average"]["val"].get(summary.get("monitor"))
    metrics.update({f"parameters/{kind}": count for kind, count in summary.get("parameters", {}).items()})
    metrics.update({f"latency_ms/{strategy}": ms for strategy, ms in (summary.get("latency_ms") or {}).items()})
    for key in ("train_seconds", "train_tokens", "tokens_per_second", "peak_memory_mb", "epochs", "steps"):
        metrics[key] = summary.get(key)
    return {key: value for key, value in metrics.items() if isinstance(value, (int, float))}


def sample_rows(test: dict | None, task: Any, samples: int) -> list[list[str]]:
    """Source, references (one per line) and hypothesis of the first ``samples`` test items."""
    if not test:
        return []
    pairs = list(zip(test["items"], test["hypotheses"]))[:samples]
    return [[task.describe_source(item), "\n".join(item.references), hypothesis] for item, hypothesis in pairs]


def send_results(trainer: Any, summary: dict, test: dict | None, task: Any, samples: int) -> None:
    """Give the trackers the run's results; called once, by the process that writes the run."""
    from lightning.pytorch.loggers import MLFlowLogger, WandbLogger

    metrics = final_metrics(summary)
    for logger in trainer.loggers:
        if isinstance(logger, WandbLogger):
            rows = sample_rows(test, task, samples)
            if rows:
                logger.log_table("samples", columns=["source", "references", "hypothesis"], data=rows)
            logger.experiment.summary.update(metrics)
        elif isinstance(logger, MLFlowLogger):
            logger.log_metrics(metrics, step=trainer.global_step)
        elif hasattr(logger, "log_results"):  # TensorBoard: its HParams, the config against these metrics
            logger.log_results(metrics, trainer.global_step)


def finish_wandb_run(exit_code: int) -> None:
    """Finish the process's open W&B run, if any (wandb not imported: none was started)."""
    wandb = sys.modules.get("wandb")
    if wandb is not None and wandb.run is not None:
        wandb.run.finish(exit_code=exit_code)


@contextmanager
def one_wandb_run_per_job() -> Iterator[None]:
    """Finish the job's W&B run when the job ends, marked failed if it raised, so the next job starts its own."""
    try:
        yield
    except BaseException:
        finish_wandb_run(exit_code=1)
        raise
    finish_wandb_run(exit_code=0)


def wandb_run_id(cfg: DictConfig, record: RunRecord, previous: dict) -> str | None:
    """The job's W&B run id (None with W&B off), kept in its record (``summary.json``): a resumed run's is the one
    its record names, so it logs into the same W&B run again (Lightning's WandbLogger resumes with
    ``resume="allow"``); any other run gets a new one.

    The id is handed to wandb as ``wandb.init(id=...)``, never through ``$WANDB_RUN_ID``: wandb reads its
    environment once per process, so in a sweep every later job would reuse the first job's id.
    """
    if not cfg.logger.wandb:
        return None
    run_id = previous.get("wandb_run_id") or secrets.token_hex(4)
    record.identity["wandb_run_id"] = run_id
    return run_id
