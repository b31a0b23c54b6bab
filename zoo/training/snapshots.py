"""The weights of the last or the best N validations, kept for checkpoint averaging (``trainer.average_last``,
``trainer.average_best``).

At each validation, after its scores are logged and before ``best.ckpt`` and ``last.ckpt`` are written (Lightning
runs checkpoint callbacks last), the weights are written as a weights-only checkpoint (no optimiser state; a file
``zoo predict --checkpoint`` reads) under :data:`~zoo.run.layout.SNAPSHOTS_DIR` when they are among the last
N, or the best N by the monitored metric, and :data:`~zoo.run.layout.SNAPSHOT_INDEX` lists the kept ones with
their steps and scores. The list is this callback's state, so ``last.ckpt`` holds it and a resumed run goes on with
the snapshots it had.

A snapshot that leaves the list is deleted at the next validation or when training ends, not at once: until the
``last.ckpt`` of this validation is written, the previous one (which a run killed now resumes from) still lists it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lightning.pytorch.callbacks import Callback
from lightning.pytorch.trainer.states import TrainerFn

from zoo.errors import ZooError
from zoo.run.layout import SNAPSHOT_FILE, SNAPSHOT_INDEX, SNAPSHOTS_DIR
from zoo.run.record import write_json_atomic

#: Which snapshots a run keeps: its newest, or its best by the monitored validation metric.
LAST, BEST = "last", "best"


def averaging(trainer_cfg: Any) -> tuple[int, str]:
    """How many snapshots a run's ``trainer`` section keeps, and which (:data:`LAST` or :data:`BEST`); 0 when none."""
    if trainer_cfg.get("average_best", 0):
        return trainer_cfg.average_best, BEST
    return trainer_cfg.get("average_last", 0), LAST


def choose(entries: list[dict], n: int, by: str, mode: str) -> list[dict]:
    """The ``n`` entries (``step``, ``score``) to keep, oldest first: the newest (``by`` last) or those with the best
    score in the monitored metric's direction (``mode``: max or min; of equal scores, the newer)."""
    if by == LAST:
        ranked = sorted(entries, key=lambda entry: entry["step"], reverse=True)
    else:
        sign = 1 if mode == "max" else -1
        ranked = sorted(entries, key=lambda entry: (sign * entry["score"], entry["step"]), reverse=True)
    return sorted(ranked[:n], key=lambda entry: entry["step"])


class SnapshotIndexError(ZooError):
    """A run's snapshot index cannot be read: damaged (cut off, edited) or not zoo's."""


def read_index(run_dir: Path) -> dict | None:
    """A run's :data:`~zoo.run.layout.SNAPSHOT_INDEX` (``by``, ``keep``, ``monitor``, ``mode`` and the
    ``snapshots``: ``step``, ``epoch``, ``score``, ``file``), or None when it kept none; one line naming the file when
    it is damaged."""
    path = run_dir / SNAPSHOT_INDEX
    if not path.is_file():
        return None
    try:
        index = json.loads(path.read_text())
    except ValueError:  # cut off, or edited
        raise _damaged(path, "it is not valid JSON") from None
    if not (
        isinstance(index, dict)
        and all(key in index for key in ("by", "keep", "mode", "snapshots"))
        and isinstance(index["snapshots"], list)
        and all(isinstance(entry, dict) and {"step", "score", "file"} <= entry.keys() for entry in index["snapshots"])
    ):
        raise _damaged(path, "it lacks the fields zoo writes")
    return index


def _damaged(path: Path, why: str) -> SnapshotIndexError:
    return SnapshotIndexError(
        f"{path} is damaged ({why}), so which snapshots the run kept is not known; average snapshot files "
        f"of {path.parent} instead: zoo average FILE FILE... --out FILE"
    )


class WeightSnapshots(Callback):
    """Keeps the weights of the last or the best ``keep`` validations (module docstring)."""

    def __init__(self, run_dir: Path, keep: int, by: str, monitor: str, mode: str) -> None:
        self.folder = run_dir / SNAPSHOTS_DIR
        self.index = run_dir / SNAPSHOT_INDEX
        self.keep, self.by, self.monitor, self.mode = keep, by, monitor, mode
        self.kept: list[dict] = []  # step, epoch, score (the monitored metric's), file; oldest first

    def paths(self) -> list[Path]:
        """The kept snapshots' files, oldest first."""
        return [self.folder / entry["file"] for entry in self.kept]

    def state_dict(self) -> dict:
        return {"kept": [dict(entry) for entry in self.kept]}

    def load_state_dict(self, state: dict) -> None:
        self.kept = [dict(entry) for entry in state.get("kept", [])]

    def on_train_start(self, trainer, module) -> None:
        self._tidy(trainer)  # a resumed run: the files as its checkpoint lists them
        if self.kept and trainer.is_global_zero:
            write_json_atomic(self.index, self._listing())

    def on_train_end(self, trainer, module) -> None:
        self._tidy(trainer)

    def on_validation_end(self, trainer, module) -> None:
        if trainer.sanity_checking or trainer.state.fn is not TrainerFn.FITTING:  # not the average's own validation
            return
        self._tidy(trainer)
        step = trainer.global_step
        entry = {
            "step": step,
            "epoch": trainer.current_epoch,
            "score": float(trainer.callback_metrics[self.monitor]),
            "file": SNAPSHOT_FILE.format(step=step),
        }
        chosen = choose([*[e for e in self.kept if e["step"] != step], entry], self.keep, self.by, self.mode)
        if entry not in chosen:
            return
        trainer.save_checkpoint(self.folder / entry["file"], weights_only=True)  # every process: DDP saves together
        self.kept = chosen
        if trainer.is_global_zero:
            write_json_atomic(self.index, self._listing())

    def _listing(self) -> dict:
        return {"by": self.by, "keep": self.keep, "monitor": self.monitor, "mode": self.mode, "snapshots": self.kept}

    def _tidy(self, trainer) -> None:
        """Delete the snapshot files the list does not hold (left by the previous validation, or by a run that was
        stopped after writing one and resumed from an earlier ``last.ckpt``)."""
        if not trainer.is_global_zero or not self.folder.is_dir():
            return
        kept = {entry["file"] for entry in self.kept}
        for path in self.folder.glob(SNAPSHOT_FILE.split("{")[0] + "*"):
            if path.name not in kept:
                path.unlink()
