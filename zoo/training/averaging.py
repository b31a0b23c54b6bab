"""Checkpoint averaging: one checkpoint whose weights are the element-wise mean of several checkpoints of one model.

The mean of a run's last checkpoints is often a better model than any one of them: Vaswani et al. (2017) test the
average of the last 5 checkpoints of their base Transformers and of the last 20 of their big ones, and fairseq
ships a script that averages a finished run's. Floating tensors are summed in float64 and the mean is stored in
each tensor's own dtype, so the mean of identical checkpoints is bit for bit each of them; other tensors (integer
counters) are taken from the newest checkpoint (the highest step), as is everything but the weights.

A run that keeps snapshots (``trainer.average_last``/``average_best``) averages them when training ends
(:func:`average_snapshots`) and tests the average where validation prefers it to ``best.ckpt``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from zoo.errors import ZooError
from zoo.run.checkpoints import model_difference, read_checkpoint
from zoo.run.layout import AVERAGE_CHECKPOINT
from zoo.run.record import validation_scores
from zoo.training.callbacks import AtomicCheckpointIO
from zoo.training.loggers import unlogged

if TYPE_CHECKING:
    from zoo.training.trainer import Built

log = logging.getLogger(__name__)

#: What to do about a checkpoint that cannot be read, said where ``zoo average`` refuses one.
READ_ADVICE = "give only checkpoints that `zoo train` or `zoo average` wrote, whole"
#: What an averaged checkpoint keeps of its newest input besides the weights: what zoo and Lightning read back.
CARRIED = ("epoch", "global_step", "pytorch-lightning_version", "hparams_name", "hyper_parameters")


class AveragingError(ZooError):
    """Checkpoints that cannot be averaged: of different models or training runs, or given twice."""


class RunningMean:
    """The element-wise mean of state dicts added one at a time; only the float64 sums and the newest are held."""

    def __init__(self) -> None:
        self.sums: dict[str, torch.Tensor] = {}
        self.newest: dict[str, torch.Tensor] = {}
        self.newest_step: int | None = None
        self.first = ""
        self.count = 0

    def add(self, state: dict[str, torch.Tensor], step: int, name: str) -> None:
        """Add ``state`` (named ``name`` in an error), the weights of training step ``step``."""
        if self.count:
            why = _layout_difference(self.newest, state)
            if why:
                raise AveragingError(f"cannot average {name} with {self.first}: {why}; they are different models")
        else:
            self.first = name
        for key, tensor in state.items():
            if tensor.is_floating_point():
                value = tensor.detach().to(torch.float64, copy=True)
                self.sums[key] = self.sums[key].add_(value) if key in self.sums else value
        if self.newest_step is None or step >= self.newest_step:
            self.newest, self.newest_step = state, step
        self.count += 1

    def mean(self) -> dict[str, torch.Tensor]:
        return {
            key: (self.sums[key] / self.count).to(tensor.dtype) if key in self.sums else tensor.clone()
            for key, tensor in self.newest.items()
        }


def _layout_difference(ours: dict[str, torch.Tensor], theirs: dict[str, torch.Tensor]) -> str:
    """Why two state dicts cannot be averaged (other weights, other shapes), or ""."""
    if ours.keys() != theirs.keys():
        key = sorted(ours.keys() ^ theirs.keys())[0]
        return f"only one of them has the weight {key}"
    for key, tensor in ours.items():
        other = theirs[key]
        if tensor.shape != other.shape or tensor.is_floating_point() != other.is_floating_point():
            return f"{key} is {other.dtype} {list(other.shape)} in one, {tensor.dtype} {list(tensor.shape)} in another"
    return ""


def average_state_dicts(states: Iterable[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """The element-wise mean of ``states``, given oldest first (the last one's non-floating tensors are kept)."""
    mean = RunningMean()
    for k, state in enumerate(states):
        mean.add(state, k, f"state dict {k + 1}")
    return mean.mean()


def average_checkpoints(paths: Sequence[Path]) -> dict[str, Any]:
    """A checkpoint whose weights are the mean of those in ``paths`` (zoo checkpoints of one model and one training
    run, read one at a time), with the newest one's config and step, and ``averaged_from``: each file with its
    step."""
    paths = [Path(path) for path in paths]
    seen: dict[Path, Path] = {}
    for path in paths:
        if path.resolve() in seen:
            also = f" (also as {seen[path.resolve()]})" if seen[path.resolve()] != path else ""
            raise AveragingError(f"{path} is given twice{also}; give each checkpoint once")
        seen[path.resolve()] = path
    mean, sources, newest, first = RunningMean(), [], {}, None
    for path in paths:
        checkpoint = read_checkpoint(path, READ_ADVICE)
        if first is None:
            first = (path, checkpoint["hyper_parameters"])
        else:
            stored = checkpoint["hyper_parameters"]
            why = model_difference(stored, first[1])
            if why:
                raise AveragingError(f"cannot average {path} with {first[0]}: they are different models ({why})")
            if stored["cfg"].get("seed") != first[1]["cfg"].get("seed"):
                raise AveragingError(
                    f"cannot average {path} with {first[0]}: they come from different training runs (seed="
                    f"{stored['cfg'].get('seed')} vs {first[1]['cfg'].get('seed')}), whose weights do not average "
                    "into a model; average checkpoints of one run"
                )
        step = int(checkpoint.get("global_step", 0))
        mean.add(checkpoint["state_dict"], step, str(path))
        sources.append({"file": str(path), "step": step})
        if mean.newest_step == step:
            newest = {key: checkpoint[key] for key in CARRIED if key in checkpoint}
    return {**newest, "state_dict": mean.mean(), "averaged_from": sources}


def validation_prefers_average(average: float, best: float | None, mode: str) -> bool:
    """Whether the average's validation score is at least the best checkpoint's in the metric's direction (``mode``:
    max or min); the test scores the weights this chooses, so the choice is made on validation data alone."""
    return best is None or (average >= best if mode == "max" else average <= best)


def write_checkpoint(checkpoint: dict[str, Any], path: Path) -> None:
    """Write ``checkpoint`` to ``path`` through a temporary file and a rename (replacing a file already there); a full
    disk is one line naming the path, and leaves no partial file."""
    AtomicCheckpointIO().save_checkpoint(checkpoint, path)


def average_snapshots(built: Built) -> str | None:
    """Write the mean of the kept snapshots as ``average.ckpt`` and validate it (recorded beside ``best_val``, off
    the validation curve); its path when its validation score is at least the best checkpoint's, so the test scores
    the weights validation chose (an average over weights still changing fast can be far worse), else None."""
    built.run.interruptions.enter("averaging")
    trainer, snapshots, kept = built.trainer, built.snapshots, built.snapshots.kept
    if not kept:
        log.warning("no snapshot to average (no validation ran): the test scores best.ckpt")
        return None
    path = built.run_dir / AVERAGE_CHECKPOINT
    if trainer.is_global_zero:
        write_checkpoint(average_checkpoints(snapshots.paths()), path)
    trainer.strategy.barrier("average")  # every process reads it
    with unlogged(trainer):
        (scores,) = trainer.validate(
            built.module, datamodule=built.data, ckpt_path=str(path), verbose=False, weights_only=True
        )
    val = validation_scores(scores)
    metrics, best = built.module.metrics, built.best.best_model_score
    chosen = validation_prefers_average(
        float(scores[f"val/{metrics.monitor}"]), None if best is None else float(best), metrics.mode
    )
    built.record.averaged(
        {
            "of": snapshots.by,
            "snapshots": [{"step": s["step"], "epoch": s["epoch"], "score": s["score"]} for s in kept],
            "val": val,
            "checkpoint": str(path),
            "tested": chosen,
        }
    )
    if trainer.is_global_zero:
        tested = (
            "the test scores it" if chosen else f"best.ckpt validates better ({float(best):.4f}): the test scores it"
        )
        log.info("average of the %s %d snapshots: validation %s; %s", snapshots.by, len(kept), val, tested)
    return str(path) if chosen else None
