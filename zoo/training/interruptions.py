"""SIGINT and SIGTERM in every phase of a training job, answered the same way.

A job goes through phases: ``setup`` (reading data, training tokenizers), ``start validation`` (a run from
``init_from``: the weights it starts from, validated before training), ``sanity check`` (Lightning's
first validation batches), ``training`` and the ``validation`` rounds between its steps, ``averaging`` (with
``trainer.average_last``/``average_best``: the kept snapshots averaged and validated), ``test`` and
``outputs`` (latency, per-item scores, the printed result). Wherever a signal arrives, the job ends
with :class:`RunInterrupted` naming the phase; :meth:`zoo.training.record.RunRecord.recording` records it in
``summary.json`` (``interrupted``, with the phase) and the entry prints one line with what to run next
and exits 128 + the signal's number, so a scheduler never mistakes a pre-empted job for a success.

Only training has something worth finishing: there the signal asks for a stop, the step under way ends
(with its validation if one is due) and :class:`~zoo.training.callbacks.LastCheckpoint` writes
``last.ckpt`` first. In every other phase the signal raises at once: the work lost is redone on resume
(setup and the sanity check from the start, the test from ``best.ckpt``). A second signal always stops
at once.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from lightning.pytorch.callbacks import Callback
from lightning.pytorch.trainer.states import TrainerFn

from zoo.training.layout import LAST_CHECKPOINT, SUMMARY_FILE
from zoo.training.resume import under_submitit

#: Phases in which a signal only asks for a stop (LastCheckpoint saves, then training stops).
DEFERRED_PHASES = ("training", "validation")


class RunInterrupted(BaseException):
    """A signal stopped the job (a BaseException, like KeyboardInterrupt: no ``except Exception`` records it as a
    failure, and a sweep stops). ``phase``: where it stopped; ``saved``: ``last.ckpt`` holds the state it stopped at;
    ``trained``: training had ended, so resuming only tests."""

    def __init__(self, signum: int, phase: str, step: int, saved: bool = False, trained: bool = False) -> None:
        self.signum, self.phase, self.step, self.saved, self.trained = signum, phase, step, saved, trained
        super().__init__(f"{signal.Signals(signum).name} during {phase} at step {step}")

    def __reduce__(self) -> tuple:
        """Rebuilt from its own arguments (``args`` holds only the message), so a joblib worker can hand it back."""
        return type(self), (self.signum, self.phase, self.step, self.saved, self.trained), self.__dict__

    def what_next(self, run_dir: Path | None, continue_with: str | None = None) -> str:
        """One line for the user: where the job stopped, what holds its state, and what to run next."""
        if run_dir is None or not (run_dir / SUMMARY_FILE).is_file():
            where = f" in {run_dir}" if run_dir is not None else ""
            return f"{self}; nothing was written{where}; run the same command again"
        if self.trained:
            held = "training had ended and best.ckpt holds its weights: resuming runs the test"
        elif self.saved:
            held = "checkpoints/last.ckpt holds its state"
        elif (run_dir / LAST_CHECKPOINT).is_file():
            held = "checkpoints/last.ckpt holds its state at the latest checkpoint"
        else:
            held = "no checkpoint written yet: resuming starts it again in place"
        return f"{self}; {held}; continue with: {continue_with or f'zoo train resume={run_dir}'}"

    def hand_over(self) -> None:
        """Pass submitit's pre-emption signal on to submitit's own handler, once the run is recorded as interrupted.

        That handler (in place again once the job's own is restored) has the Hydra launcher resubmit the job with
        the same arguments, requeues it and exits; the requeued job finds its directory holding this run and resumes
        it (``resume_mode`` is auto under submitit). Any other signal: nothing to pass on.
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


class Interruptions(Callback):
    """The job's one handler for SIGINT, SIGTERM (and submitit's pre-emption signal), and the phase the job is in.

    Installed by :meth:`guard` for the whole job. Lightning puts its own SIGTERM handler in front for each
    ``fit`` and ``test`` (it logs, and sets a flag that only training reads); the hooks below put this one back,
    and Lightning restores it when the stage ends. ``signal`` is the first signal received (LastCheckpoint stops
    training when it is set).
    """

    def __init__(self) -> None:
        self.phase = "setup"
        self.signal: int | None = None
        self.signal_phase = ""  # the phase the first signal arrived in (a deferred stop ends in another)
        self._trainer = None
        self._previous: dict[int, object] = {}

    # -------------------------------------------------------------- the handler
    @contextmanager
    def guard(self) -> Iterator[Interruptions]:
        """Answer signals as this object says while the block runs (in the main thread: only there can it)."""
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        self._previous = {signum: signal.getsignal(signum) for signum in self._signals()}
        self._install()
        try:
            yield self
        finally:
            for signum, handler in self._previous.items():
                signal.signal(signum, handler)

    @staticmethod
    def _signals() -> tuple[int, ...]:
        preempted = preemption_signal()
        return (signal.SIGINT, signal.SIGTERM, *([preempted] if preempted else []))

    def _install(self) -> None:
        if self._previous and threading.current_thread() is threading.main_thread():
            for signum in self._previous:
                signal.signal(signum, self._handle)

    def _handle(self, signum: int, frame) -> None:
        if self.signal is not None and signum == preemption_signal():  # the stop under way ends in a requeue
            self.signal = signum
            return
        first = self.signal is None
        if first:
            self.signal, self.signal_phase = signum, self.phase
        if first and self.phase in DEFERRED_PHASES:
            print(
                f"zoo: {signal.Signals(signum).name}: stopping after this step, writing last.ckpt"
                + (" (Ctrl-C again stops at once, without it)" if signum == signal.SIGINT else ""),
                file=sys.stderr,
                flush=True,
            )
            return
        raise RunInterrupted(signum, self.phase, self.step)

    @property
    def step(self) -> int:
        return self._trainer.global_step if self._trainer is not None else 0

    def stopped(self, saved: bool, trained: bool = False) -> RunInterrupted:
        """The interruption to raise once training stopped on a deferred signal."""
        return RunInterrupted(
            self.signal or signal.SIGTERM, self.signal_phase or self.phase, self.step, saved=saved, trained=trained
        )

    # -------------------------------------------------------------- the phases
    def enter(self, phase: str) -> None:
        self.phase = phase

    def on_fit_start(self, trainer, module) -> None:
        self._trainer = trainer
        self._install()

    def on_sanity_check_start(self, trainer, module) -> None:
        self.phase = "sanity check"

    def on_sanity_check_end(self, trainer, module) -> None:
        self.phase = "training"

    def on_train_start(self, trainer, module) -> None:
        self.phase = "training"

    def on_validation_start(self, trainer, module) -> None:
        if trainer.state.fn is not TrainerFn.FITTING:  # the averaged weights' validation, after training
            self._install()
        elif not trainer.sanity_checking:
            self.phase = "validation"

    def on_validation_end(self, trainer, module) -> None:
        if not trainer.sanity_checking and trainer.state.fn is TrainerFn.FITTING:
            self.phase = "training"

    def on_test_start(self, trainer, module) -> None:
        self._trainer = trainer
        self.phase = "test"
        self._install()
