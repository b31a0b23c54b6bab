"""The run's record while it goes: ``summary.json`` from the first minute, one log line per validation.

``summary.json`` is written as soon as a run starts (status ``running``), updated
after every validation with the latest metrics and the learning curve, and finally
set to ``finished``, ``failed`` (with the reason) or ``interrupted`` (a signal, with the phase it
stopped in; a resumed run is ``running`` again, its earlier learning curve kept and each resume
listed), so ``zoo compare`` and a live view can read a sweep while it runs. Every write goes to
a temporary file that is then renamed, so a reader never sees half a summary.

A run trained in several segments (stopped and resumed) lists each one under ``segments`` (from which
step to which, its training seconds and peak memory, how it ended); ``train_seconds`` is their sum and
``peak_memory_mb`` their maximum, so a pre-empted run costs what it cost. A segment's seconds are
recorded at each validation and each checkpoint too, so even a killed segment keeps what it had spent by the
checkpoint its run resumes from.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lightning.pytorch.callbacks import Callback
from lightning.pytorch.trainer.states import TrainerFn

from zoo.errors import one_line_reason
from zoo.run.interruptions import RunInterrupted
from zoo.run.layout import SUMMARY_FILE
from zoo.run.summary import peak_memory_mb

log = logging.getLogger("zoo.run")

#: How the record's FLOPs were counted, as ``summary.json`` says it (zoo.training.compute, zoo.training.flops).
FLOPS_METHOD = (
    "every training batch charged from its shape by a cost model fitted to batches counted exactly before training "
    "(at most trainer.counted_batches, one per batch shape; forward and backward: products, attention, FFTs and the "
    "C scan by formula, element-wise work one FLOP per output element; compute.json in the run folder lists them); "
    "flops: the training the model received; flops_spent adds the steps a resume from an older checkpoint trained again"
)


def write_json_atomic(path: Path, data: Any) -> None:
    """Write JSON to ``path`` through a temporary file and a rename: readers see the old or the new file."""
    partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        partial.write_text(json.dumps(data, indent=2))
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)  # a write cut short (a full disk) leaves nothing behind


def validation_scores(logged: Mapping[str, Any]) -> dict[str, float]:
    """The ``val/`` values of logged metrics by metric name, rounded to 4 places as the record keeps them."""
    return {key.split("/", 1)[1]: round(float(value), 4) for key, value in logged.items() if key.startswith("val/")}


class RunRecord(Callback):
    """Keeps ``summary.json`` current while a run trains and logs one line per validation (to ``train.log``).

    Only the process that writes the run (global rank 0) records; the others are silent.
    """

    def __init__(self, run_dir: Path, identity: dict, writes: bool) -> None:
        self.path = run_dir / SUMMARY_FILE
        self.identity = identity
        self.writes = writes
        self.started = time.time()
        self.latest_val: dict[str, float] = {}
        self.validations: list[dict] = []  # the learning curve: epoch, step, seconds and every val metric
        self.resumes: list[dict] = []  # each time the run was continued: from which step, when
        self.segments: list[dict] = []  # the earlier segments of training (a resumed run), each as it ended
        self.trained: dict[str, Any] = {}  # what training measured, once it has ended (before the test)
        self._segment_start: tuple[float, int] | None = None  # this segment's fit: (perf_counter, first step)
        self._trainer: Any = None
        self.compute: Any = None  # the ComputeMeter counting this segment's FLOPs and processor-seconds

    def resume_from(self, previous: dict, step: int) -> None:
        """Continue the record of an earlier part of this run, resumed from a checkpoint at global ``step``:
        its validations up to that step (later ones are done again), its elapsed time and earlier resumes."""
        self.validations = [v for v in previous.get("validations", []) if v.get("step", 0) <= step]
        self.latest_val = (
            {k: v for k, v in self.validations[-1].items() if k not in ("epoch", "step", "seconds")}
            if self.validations
            else {}
        )
        elapsed = self.validations[-1]["seconds"] if self.validations else 0.0
        self.started = time.time() - elapsed  # seconds on the curve go on from where the checkpoint was
        self.resumes = [
            *previous.get("resumes", []),
            {"step": step, "at": time.strftime("%Y-%m-%d %H:%M:%S"), "from": previous.get("status")},
        ]
        self.segments = [
            {**segment, "ended": "killed"} if segment.get("ended") == "running" else segment
            for segment in previous.get("segments", [])
        ]

    # -------------------------------------------------------------- segments
    def on_fit_start(self, trainer, module) -> None:
        self._trainer = trainer
        self._segment_start = (time.perf_counter(), self.resumes[-1]["step"] if self.resumes else 0)

    def on_fit_end(self, trainer, module) -> None:
        """Training ended (not stopped): this segment is closed, and what training measured is kept for the record."""
        self.segments.append(self._segment("trained"))
        self._segment_start = None

    def _segment(self, ended: str) -> dict:
        started, first = self._segment_start
        return {
            "from_step": first,
            "to_step": self._trainer.global_step,
            "train_seconds": round(time.perf_counter() - started, 2),
            "peak_memory_mb": round(peak_memory_mb(self._trainer.strategy.root_device), 1),
            **(self.compute.segment() if self.compute is not None else {}),
            "ended": ended,
        }

    def _all_segments(self, ended: str = "running") -> list[dict]:
        """The earlier segments and this one (while it runs: up to now)."""
        now = [self._segment(ended)] if self._segment_start is not None else []
        return [*self.segments, *now]

    def _write(self, status: str, segments: list[dict] | None = None, **extra: Any) -> None:
        if self.writes:
            resumes = {"resumes": self.resumes} if self.resumes else {}
            segments = self._all_segments() if segments is None else segments
            write_json_atomic(
                self.path,
                {
                    **self.identity,
                    "status": status,
                    "latest_val": self.latest_val,
                    "validations": self.validations,
                    **resumes,
                    **self.trained,
                    **totals(segments),
                    **extra,
                },
            )

    def start(self) -> None:
        self._write("running")

    def on_validation_end(self, trainer, module) -> None:
        if trainer.sanity_checking or trainer.state.fn is not TrainerFn.FITTING:  # the average's is recorded apart
            return
        self.validated(trainer, trainer.callback_metrics)

    def validated(self, trainer, logged: Mapping[str, Any]) -> None:
        """A validation of the weights at the trainer's step: each one training makes, and the start's before training
        (``init_from``: :func:`zoo.training.train.validate_start`)."""
        self.latest_val = validation_scores(logged)
        seconds = round(time.time() - self.started, 1)
        self.validations.append(
            {"epoch": trainer.current_epoch, "step": trainer.global_step, "seconds": seconds, **self.latest_val}
        )
        scores = ", ".join(f"{name} {value:.2f}" for name, value in self.latest_val.items())
        if self.writes:
            log.info(
                "validation epoch %d step %d: %s (%.0f s)", trainer.current_epoch, trainer.global_step, scores, seconds
            )
        self._write("running", epoch=trainer.current_epoch, step=trainer.global_step, max_epochs=trainer.max_epochs)

    def on_save_checkpoint(self, trainer, module, checkpoint: dict) -> None:
        """A checkpoint goes on record with the segment's cost so far: a run killed before its next validation
        resumes from this checkpoint, and its record keeps what the killed segment spent to get there."""
        if self._segment_start is not None and trainer.state.fn is TrainerFn.FITTING:
            self._write("running", epoch=trainer.current_epoch, step=trainer.global_step, max_epochs=trainer.max_epochs)

    def training_ended(self, measured: dict) -> None:
        """Training is over (the test comes next): record what it measured, so a run stopped while testing keeps
        its training record and resumes by testing (``trained``)."""
        self.trained = {"trained": True, **measured}
        self._write("running", phase="test")

    def averaged(self, average: dict) -> None:
        """The kept snapshots' average was validated (``trainer.average_last``/``average_best``): recorded with what
        training measured, beside ``best_val``; the test scores it."""
        self.trained["average"] = average
        self._write("running", phase="test")

    def interrupt(self, stop: RunInterrupted) -> None:
        """A signal stopped the run (:class:`zoo.run.interruptions.RunInterrupted`) in some phase."""
        self._write(
            "interrupted",
            self._all_segments(f"interrupted during {stop.phase}"),
            reason=f"{stop}: stopped by a signal",
            step=stop.step,
            phase=stop.phase,
            resumable=stop.saved,
        )

    def fail(self, error: BaseException) -> None:
        """Mark the run failed with a one-line reason; the exception goes on to the caller."""
        self._write("failed", self._all_segments("failed"), reason=one_line_reason(error))

    def finish(self, summary: dict) -> dict:
        """The final summary: the identity, ``finished``, every segment of training and everything the run measured."""
        resumes = {"resumes": self.resumes} if self.resumes else {}
        cost = totals(self._all_segments())
        if self._trainer is not None:  # the test and its latency measurement ran in this process too
            now = round(peak_memory_mb(self._trainer.strategy.root_device), 1)
            cost["peak_memory_mb"] = max(cost.get("peak_memory_mb", now), now)
        final = {
            **self.identity,
            "status": "finished",
            "latest_val": self.latest_val,
            "validations": self.validations,
            **resumes,
            **self.trained,
            **summary,
            **cost,
        }
        if self.writes:
            write_json_atomic(self.path, final)
        return final


def totals(segments: list[dict]) -> dict:
    """The run's cost over all its segments: training seconds, spent FLOPs and processor-seconds add up (a segment
    recorded before they were counted adds none), peak memory is the largest peak. ``flops`` is the training the
    model received, the last segment's ``trained_flops``: less than the FLOPs spent where a run resumed from a
    checkpoint older than where it stopped and trained those steps again (its segments overlap). Where that is
    unknown (a segment resumed a checkpoint written before it was kept), it is the FLOPs spent."""
    if not segments:
        return {}
    spent = sum(s.get("flops", 0) for s in segments)
    return {
        "segments": segments,
        "train_seconds": round(sum(s["train_seconds"] for s in segments), 2),
        "peak_memory_mb": max(s["peak_memory_mb"] for s in segments),
        "compute": {
            "flops": segments[-1].get("trained_flops", spent),
            "flops_spent": spent,
            "processor_seconds": round(sum(s.get("processor_seconds", 0.0) for s in segments), 2),
            "flops_method": FLOPS_METHOD,
        },
    }
