"""Lightning callbacks that measure a run and keep it resumable (``last.ckpt``, signals, atomic checkpoints)."""

from __future__ import annotations

import os
import random
import signal
import time
from pathlib import Path

import numpy as np
import torch
from lightning.fabric.plugins.io.torch_io import TorchCheckpointIO
from lightning.pytorch.callbacks import Callback, Checkpoint
from lightning.pytorch.trainer.states import TrainerFn

from zoo.contracts import PAD
from zoo.disk import disk_full, no_space
from zoo.run.interruptions import Interruptions
from zoo.run.layout import TRAIN_GRAD_NORM, TRAIN_LOSS, TRAIN_LR


def target_tokens(batch: dict) -> int:
    """The real (not padding) target tokens of a training batch: what throughput and compute are counted per."""
    return int((batch["target_out"] != PAD).sum())


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
        self.tokens += target_tokens(batch)

    def state_dict(self) -> dict:  # a resumed run goes on counting (tokens/s over the whole training)
        return {"tokens": self.tokens, "seconds": self.seconds}

    def load_state_dict(self, state: dict) -> None:
        self.tokens, self.seconds = int(state.get("tokens", 0)), float(state.get("seconds", 0.0))


class TrainingCurves(Callback):
    """The training loss, learning rate and gradient norm of every ``every_n_steps``-th optimiser step, to every
    logger (``metrics.csv`` and the trackers), under the names :mod:`zoo.run.layout` declares, with any other
    value the step returns beside its loss under its own name (self-critical training's reward and baseline).

    The step of index ``i`` (``trainer.global_step`` before its update: the ``step`` Lightning gives a row) is
    logged when ``i`` is a multiple of ``every_n_steps``, so the first step always is, even in a run of a few
    steps. Its loss is the batch's (the mean over the processes under DDP), its learning rate the one its update
    uses, its gradient norm the total L2 norm before clipping (gradients already unscaled under fp16), computed
    only on the steps logged. Nothing here changes a value training uses or draws a random number.

    Resume keeps the curve true: a checkpoint after k steps has the rows of steps 0..k-1 on disk (Lightning runs
    checkpoint callbacks after this one, and :class:`LastCheckpoint` saves the loggers first),
    :func:`zoo.training.loggers.keep_earlier_metrics` keeps exactly those, and the resumed run logs from step k on.
    """

    def __init__(self, every_n_steps: int) -> None:
        self.every_n_steps = every_n_steps
        self._pending: tuple[int, dict] | None = None  # the step under way, if logged: its index, lr, gradient norm

    def on_before_optimizer_step(self, trainer, module, optimizer) -> None:
        step = trainer.global_step
        if step % self.every_n_steps:
            return
        norm = torch.nn.utils.get_total_norm([p.grad for p in module.parameters() if p.grad is not None])
        self._pending = (step, {TRAIN_LR: optimizer.param_groups[0]["lr"], TRAIN_GRAD_NORM: float(norm)})

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx) -> None:
        if self._pending is None:
            return
        (step, values), self._pending = self._pending, None
        reduced = {
            name: float(trainer.strategy.reduce(value.detach(), reduce_op="mean")) for name, value in outputs.items()
        }
        metrics = {TRAIN_LOSS: reduced.pop("loss"), **reduced, **values, "epoch": trainer.current_epoch}
        for logger in trainer.loggers:
            logger.log_metrics(metrics, step=step)
            logger.save()  # on disk at once, as Lightning's own rows: a dashboard reads metrics.csv as it grows


# ------------------------------------------------------------------------------------ surviving runs


class AtomicCheckpointIO(TorchCheckpointIO):
    """Every checkpoint is written to ``<name>.partial``, then renamed: a cut-off write never replaces a good file,
    and a write that fails leaves no partial file behind; a full disk is one line (:mod:`zoo.disk`) rather than
    torch's "enforce fail at inline_container.cc"."""

    def save_checkpoint(self, checkpoint: dict, path, storage_options=None) -> None:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(path.name + ".partial")
        try:
            with open(partial, "wb") as file:
                torch.save(checkpoint, file)
                file.flush()
                os.fsync(file.fileno())
            os.replace(partial, path)
        except BaseException as error:
            partial.unlink(missing_ok=True)
            if disk_full(error):
                raise no_space(path, tensor_bytes(checkpoint), at_least=True) from None
            raise


def tensor_bytes(value) -> int:
    """The bytes of the tensors in a checkpoint's nested dicts and lists: what writing it takes, at least."""
    if isinstance(value, torch.Tensor):
        return value.nbytes
    if isinstance(value, dict):
        return sum(tensor_bytes(item) for item in value.values())
    if isinstance(value, list | tuple):
        return sum(tensor_bytes(item) for item in value)
    return 0


def rng_states() -> dict:
    """Python's, numpy's and torch's random states, as tensors and numbers (loadable with ``weights_only``)."""
    kind, keys, position, has_gauss, gauss = np.random.get_state()
    states = {
        "python": random.getstate(),
        "torch": torch.get_rng_state(),
        "numpy": {
            "kind": str(kind),
            "keys": torch.from_numpy(keys.astype(np.int64)),
            "position": int(position),
            "has_gauss": int(has_gauss),
            "gauss": float(gauss),
        },
    }
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
    previous one, and when a signal asks training to stop (:class:`~zoo.run.interruptions.Interruptions`
    received it during training: SIGINT, SIGTERM, or in a submitit job its pre-emption signal, which
    submitit would otherwise answer by requeueing the job at once, without a checkpoint). The step under
    way ends, with its validation if one is due, ``last.ckpt`` is written where Lightning writes its own
    (the end of a training batch, the end of a validation), then Lightning's own SIGTERM stop
    (``SIGTERMException``) ends training and :func:`zoo.training.train.fit` turns it into
    :class:`~zoo.run.interruptions.RunInterrupted`. The random states (python, numpy, torch) go into
    the checkpoint and are set again before the first resumed step.
    """

    def __init__(self, path: Path, every_minutes: float, interruptions: Interruptions) -> None:
        self.path = path
        self.every_seconds = every_minutes * 60
        self.interruptions = interruptions
        self._saved_at = time.monotonic()
        self.saved_on_signal = False
        self._rng_to_restore: dict | None = None

    @staticmethod
    def _ask_lightning_to_stop(trainer, stop: bool) -> None:
        trainer._signal_connector.received_sigterm = stop

    def on_train_start(self, trainer, module) -> None:
        self._saved_at = time.monotonic()

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
        return bool(
            max_epochs is not None
            and max_epochs > 0
            and trainer.current_epoch + 1 >= max_epochs
            and loop.epoch_loop._num_ready_batches_reached()
        )

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
            if stop and self.interruptions.signal is None:
                self.interruptions.signal = signal.SIGTERM  # another process was signalled
        return stop, timer

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx) -> None:
        # Saved here (where Lightning's own step checkpoints are), unless a validation follows this step: then at
        # its end, so that a resumed run does not skip it.
        timer = bool(self.every_seconds) and time.monotonic() - self._saved_at >= self.every_seconds
        stop, timer = self._agree(trainer, self.interruptions.signal is not None, timer)
        if not (stop or timer or self._last_step(trainer)) or self._validation_due(trainer):
            return
        self.save(trainer)
        if stop:
            self._stop(trainer)

    def on_validation_end(self, trainer, module) -> None:
        if not trainer.sanity_checking and trainer.state.fn is TrainerFn.FITTING:  # not the average's validation
            self.save(trainer)
            stop, _ = self._agree(trainer, self.interruptions.signal is not None)
            if stop:
                self._stop(trainer)

    def _stop(self, trainer) -> None:
        """Lightning's own SIGTERM stop: it raises ``SIGTERMException`` once this step is done."""
        self.saved_on_signal = True
        self._ask_lightning_to_stop(trainer, True)
