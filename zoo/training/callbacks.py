"""Lightning callbacks that measure a run and keep it resumable (``last.ckpt``, signals, atomic checkpoints)."""
from __future__ import annotations

import os
import random
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from lightning.fabric.plugins.io.torch_io import TorchCheckpointIO
from lightning.pytorch.callbacks import Callback, Checkpoint

from zoo.contracts import PAD
from zoo.training.rundir import under_submitit


class Throughput(Callback):
    """Counts target tokens and the wall time spent in training batches."""

    def __init__(self) -> None:
        self.tokens = 0
        self.seconds = 0.0
        self._start = 0.0

    def on_train_batch_start(self, trainer, module, batch, batch_idx) -> None:
        self._start = time.perf_counter()

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx) -> None:
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        self.seconds += time.perf_counter() - self._start
        self.tokens += int((batch["target_out"] != PAD).sum())

    def state_dict(self) -> dict:  # a resumed run goes on counting (tokens/s over the whole training)
        return {"tokens": self.tokens, "seconds": self.seconds}

    def load_state_dict(self, state: dict) -> None:
        self.tokens, self.seconds = int(state.get("tokens", 0)), float(state.get("seconds", 0.0))


# ------------------------------------------------------------------------------------ surviving runs


class AtomicCheckpointIO(TorchCheckpointIO):
    """Every checkpoint is written to ``<name>.partial`` and then renamed: a cut-off write never replaces a good file."""

    def save_checkpoint(self, checkpoint: dict, path, storage_options=None) -> None:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(path.name + ".partial")
        with open(partial, "wb") as file:
            torch.save(checkpoint, file)
            file.flush()
            os.fsync(file.fileno())
        os.replace(partial, path)


class TrainingInterrupted(BaseException):
    """SIGINT or SIGTERM (or submitit's pre-emption signal) stopped training (a BaseException, like
    KeyboardInterrupt: no ``except Exception`` records it as a failure, and a sweep stops). ``saved``:
    ``last.ckpt`` holds the state it stopped at."""

    def __init__(self, signum: int, step: int, saved: bool) -> None:
        self.signum, self.step, self.saved = signum, step, saved
        super().__init__(f"{signal.Signals(signum).name} at step {step}")

    def __reduce__(self) -> tuple:
        """Rebuilt from its own arguments (``args`` holds only the message), so a joblib worker can hand it back."""
        return type(self), (self.signum, self.step, self.saved), self.__dict__

    def hand_over(self) -> None:
        """Pass submitit's pre-emption signal on to submitit's own handler, once the run is recorded as interrupted.

        That handler (in place again since training ended) has the Hydra launcher resubmit the job with the same
        arguments, requeues it and exits; the requeued job finds its directory holding this run and resumes it
        from ``last.ckpt`` (``resume_mode`` is auto under submitit). Any other signal: nothing to pass on.
        """
        if self.signum != preemption_signal():
            return
        handler = signal.getsignal(self.signum)
        if callable(handler):
            handler(self.signum, None)


def preemption_signal() -> int | None:
    """The signal submitit sends a job it will requeue (before its time limit, or when pre-empted: USR2 unless
    ``SUBMITIT_PREEMPT_SIGNAL`` says otherwise), in a job submitit runs; None elsewhere."""
    if not under_submitit():
        return None
    from submitit import JobEnvironment

    return signal.Signals["SIG" + JobEnvironment.USR_SIG]


def rng_states() -> dict:
    """Python's, numpy's and torch's random states, as tensors and numbers (loadable with ``weights_only``)."""
    kind, keys, position, has_gauss, gauss = np.random.get_state()
    states = {"python": random.getstate(), "torch": torch.get_rng_state(),
              "numpy": {"kind": str(kind), "keys": torch.from_numpy(keys.astype(np.int64)), "position": int(position),
                        "has_gauss": int(has_gauss), "gauss": float(gauss)}}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        states["cuda"] = torch.cuda.get_rng_state_all()
    return states


def set_rng_states(states: dict) -> None:
    version, internal, gauss = states["python"]
    random.setstate((version, tuple(internal), gauss))
    n = states["numpy"]
    np.random.set_state((n["kind"], n["keys"].numpy().astype(np.uint32), n["position"], n["has_gauss"], n["gauss"]))
    torch.set_rng_state(states["torch"])
    if "cuda" in states and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(states["cuda"])


class LastCheckpoint(Checkpoint):
    """``checkpoints/last.ckpt``: always the latest state, so a run can be resumed from where it stopped.

    Written after every validation (after ``best.ckpt``: Lightning runs checkpoint callbacks last, in
    order), after the last training step, after a step once ``every_minutes`` have passed since the
    previous one, and when SIGINT or SIGTERM (in a submitit job also its pre-emption signal, which
    submitit would otherwise answer by requeueing the job at once, without a checkpoint: see
    :meth:`TrainingInterrupted.hand_over`) arrives during training. The signal only sets a flag:
    the step under way ends, with its validation if one is due, ``last.ckpt`` is written where
    Lightning writes its own (the end of a training batch, the end of a validation), then Lightning's own SIGTERM stop
    (``SIGTERMException``) ends training and :func:`zoo.training.run.train` turns it into
    :class:`TrainingInterrupted`. A second Ctrl-C stops at once. The random states (python, numpy,
    torch) go into the checkpoint and are set again before the first resumed step.
    """

    FILE = "last.ckpt"

    def __init__(self, dirpath: Path, every_minutes: float) -> None:
        self.path = Path(dirpath) / self.FILE
        self.every_seconds = every_minutes * 60
        self._saved_at = time.monotonic()
        self.signal: int | None = None  # the signal that asked training to stop
        self.saved_on_signal = False
        self._previous: dict[int, Any] = {}
        self._rng_to_restore: dict | None = None

    # -------------------------------------------------------------- signals
    def _handle(self, signum: int, frame) -> None:
        if self.signal is not None and signum == preemption_signal():  # the stop under way ends in a requeue
            self.signal = signum
            return
        if self.signal is not None:  # the second one: stop now
            self._restore_handlers()
            if signum == signal.SIGINT:
                raise KeyboardInterrupt
            return
        self.signal = signum
        print(f"zoo: {signal.Signals(signum).name}: stopping after this step, writing {self.path.name}"
              + (" (Ctrl-C again stops at once, without it)" if signum == signal.SIGINT else ""),
              file=sys.stderr, flush=True)

    def _install_handlers(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        preempted = preemption_signal()
        for signum in (signal.SIGINT, signal.SIGTERM, *([preempted] if preempted else [])):
            self._previous[signum] = signal.signal(signum, self._handle)

    def _restore_handlers(self) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous = {}

    @staticmethod
    def _ask_lightning_to_stop(trainer, stop: bool) -> None:
        trainer._signal_connector.received_sigterm = stop

    def on_train_start(self, trainer, module) -> None:
        self._saved_at = time.monotonic()
        self._install_handlers()

    def on_train_end(self, trainer, module) -> None:
        self._restore_handlers()

    def teardown(self, trainer, module, stage: str) -> None:
        self._restore_handlers()

    # -------------------------------------------------------------- saving
    def save(self, trainer) -> None:
        for logger in trainer.loggers:  # what was logged before the checkpoint is on disk with it (metrics.csv)
            logger.save()
        trainer.save_checkpoint(str(self.path), weights_only=False)  # the whole state: it is resumed from
        self._saved_at = time.monotonic()

    def state_dict(self) -> dict:
        return {"rng": rng_states()}

    def load_state_dict(self, state: dict) -> None:
        self._rng_to_restore = state.get("rng")

    def on_train_batch_start(self, trainer, module, batch, batch_idx) -> None:
        if self._rng_to_restore is not None:  # as they were when the checkpoint was written
            set_rng_states(self._rng_to_restore)
            self._rng_to_restore = None

    @staticmethod
    def _last_step(trainer) -> bool:
        """Whether training ends with this step (max_steps, or the last batch of the last epoch)."""
        loop = trainer.fit_loop
        if trainer.max_steps is not None and trainer.max_steps > 0 and trainer.global_step >= trainer.max_steps:
            return True
        max_epochs = loop.max_epochs
        return bool(max_epochs is not None and max_epochs > 0 and trainer.current_epoch + 1 >= max_epochs
                    and loop.epoch_loop._num_ready_batches_reached())

    @staticmethod
    def _validation_due(trainer) -> bool:
        """Whether the step that just ended is followed by a validation (Lightning decides it after this hook)."""
        loop = trainer.fit_loop
        return bool(loop._data_fetcher is not None and loop.epoch_loop._should_check_val_fx(loop._data_fetcher))

    def _agree(self, trainer, stop: bool, timer: bool = False) -> tuple[bool, bool]:
        """Under DDP every process saves and stops together: a signal or a timer on any of them counts for all."""
        if trainer.world_size > 1:
            stop = trainer.strategy.reduce_boolean_decision(stop, all=False)
            timer = trainer.strategy.reduce_boolean_decision(timer, all=False)
            if stop and self.signal is None:
                self.signal = signal.SIGTERM  # another process was signalled
        return stop, timer

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx) -> None:
        # Saved here (where Lightning's own step checkpoints are), unless a validation follows this step: then at
        # its end, so that a resumed run does not skip it.
        timer = bool(self.every_seconds) and time.monotonic() - self._saved_at >= self.every_seconds
        stop, timer = self._agree(trainer, self.signal is not None, timer)
        if not (stop or timer or self._last_step(trainer)) or self._validation_due(trainer):
            return
        self.save(trainer)
        if stop:
            self._stop(trainer)

    def on_validation_end(self, trainer, module) -> None:
        if not trainer.sanity_checking:
            self.save(trainer)
            stop, _ = self._agree(trainer, self.signal is not None)
            if stop:
                self._stop(trainer)

    def _stop(self, trainer) -> None:
        """Lightning's own SIGTERM stop: it raises ``SIGTERMException`` once this step is done."""
        self.saved_on_signal = True
        self._ask_lightning_to_stop(trainer, True)

    def on_exception(self, trainer, module, exception: BaseException) -> None:
        self._restore_handlers()

