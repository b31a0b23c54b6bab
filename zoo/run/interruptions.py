"""SIGINT and SIGTERM in every phase of a training job, answered the same way.

A job goes through phases: ``setup`` (reading data, training tokenizers), ``start validation`` (a run from
``init_from``: the weights it starts from, validated before training), ``sanity check`` (Lightning's
first validation batches), ``training`` and the ``validation`` rounds between its steps, ``averaging`` (with
``trainer.average_last``/``average_best``: the kept snapshots averaged and validated), ``test`` and
``outputs`` (latency, per-item scores, the printed result). Wherever a signal arrives, the job ends
with :class:`RunInterrupted` naming the phase; the job's boundary (:func:`zoo.run.job.run_job`) records it in
``summary.json`` (``interrupted``, with the phase) and ``zoo train`` prints one line with what to run next
and exits 128 + the signal's number, so a scheduler never mistakes a pre-empted job for a success.

Only training has something worth finishing: there the signal asks for a stop, the step under way ends
(with its validation if one is due) and :class:`~zoo.training.callbacks.LastCheckpoint` writes
``last.ckpt`` first. In every other phase the signal raises at once: the work lost is redone on resume
(setup and the sanity check from the start, the test from ``best.ckpt``). A second signal always stops
at once.

The job answers for every process it started: a process forked from it (a data worker, the worker that prepares
data) and the DDP ranks it started (:mod:`zoo.run.ranks`) leave signals to it and end with it, quietly. Where
the main thread cannot answer (it waits in native code: DDP's rendezvous for ranks that never come), the job ends
without it, with the same line, :data:`ANSWER_SECONDS` after the signal.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path

from hydra.core.hydra_config import HydraConfig
from lightning.pytorch.callbacks import Callback
from lightning.pytorch.trainer.states import TrainerFn

from zoo.run.layout import LAST_CHECKPOINT, SUMMARY_FILE
from zoo.run.ranks import ranks_follow, started_rank
from zoo.run.resume import under_submitit

#: Phases in which a signal only asks for a stop (LastCheckpoint saves, then training stops).
DEFERRED_PHASES = ("training", "validation")
#: Seconds the main thread has to answer a signal before the job ends without it (it waits in native code).
ANSWER_SECONDS = 10.0
#: The descriptor signals are written to while a job is watched (:meth:`Interruptions.leading`), else None.
_watched_fd: int | None = None


def _forked() -> None:
    """A process forked from a watched job (a data worker) must not write its own signals into the job's watch."""
    if _watched_fd is not None:
        signal.set_wakeup_fd(-1)


os.register_at_fork(after_in_child=_forked)


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
        self._pid = os.getpid()
        self._received = self._answered = 0  # signals the watch saw, signals the handler answered

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
            with nullcontext() if started_rank() else self.leading():
                yield self
        finally:
            for signum, handler in self._previous.items():
                signal.signal(signum, handler)

    @contextmanager
    def leading(self) -> Iterator[None]:
        """While the block runs, the ranks started from this process follow it (:mod:`zoo.run.ranks`), and a
        thread sees each signal (Python writes its number to a wakeup descriptor) and ends the job when the main
        thread has not answered it within :data:`ANSWER_SECONDS`."""
        global _watched_fd
        reader, writer = socket.socketpair()
        writer.setblocking(False)
        previous = signal.set_wakeup_fd(writer.fileno())
        _watched_fd = writer.fileno()
        threading.Thread(target=self._watch, args=(reader,), name="zoo-signal-watch", daemon=True).start()
        try:
            with ranks_follow():
                yield
        finally:
            signal.set_wakeup_fd(previous)
            _watched_fd = None
            writer.close()  # the watch reads the end of the stream and stops

    def _watch(self, reader: socket.socket) -> None:
        with reader:
            while numbers := reader.recv(64):
                ours = [signum for signum in numbers if signum in self._previous]
                self._received += len(ours)
                if ours and not self._answered_in_time():
                    self._end_here(ours[0])

    def _answered_in_time(self) -> bool:
        """Whether the main thread answered every signal so far, or at least moved on, within ANSWER_SECONDS."""
        main = threading.main_thread().ident
        stuck = sys._current_frames().get(main)
        at = stuck and stuck.f_lasti
        deadline = time.monotonic() + ANSWER_SECONDS
        while self._answered < self._received and time.monotonic() < deadline:
            time.sleep(0.05)
        now = sys._current_frames().get(main)
        return self._answered >= self._received or now is None or now is not stuck or now.f_lasti != at

    def _end_here(self, signum: int) -> None:
        """End the job from the watch: the line ``zoo train`` prints, and its exit status (the ranks end with it)."""
        run_dir = Path(HydraConfig.get().runtime.output_dir) if HydraConfig.initialized() else None
        sys.stdout.flush()
        print(f"zoo: interrupted: {RunInterrupted(signum, self.phase, self.step).what_next(run_dir)}", file=sys.stderr)
        sys.stderr.flush()
        os._exit(128 + signum)

    @staticmethod
    def _signals() -> tuple[int, ...]:
        preempted = preemption_signal()
        return (signal.SIGINT, signal.SIGTERM, *([preempted] if preempted else []))

    def _install(self) -> None:
        if self._previous and threading.current_thread() is threading.main_thread():
            for signum in self._previous:
                signal.signal(signum, self._handle)

    def _handle(self, signum: int, frame) -> None:
        if os.getpid() != self._pid or started_rank():  # a process the job started: the job answers, and stops it
            return
        self._answered += 1
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
