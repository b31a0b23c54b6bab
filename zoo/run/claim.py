"""The run directory, claimed before a run writes anything.

A job first *claims* its directory (:func:`claim_run_dir`): the directory must be new or
empty (a folder holding a zoo run, or anything else, is refused without a byte changed), or hold a run
its ``resume_mode`` may continue; an exclusive OS lock on ``.zoo.lock`` (``flock``; the file holds the pid,
host and start time) keeps a second process out until the job ends, and no longer than the process lives.
Hydra writes nothing into the directory (``hydra.output_subdir: null`` and a console-only job logging in
``conf/config.yaml``): what it would have written comes later, once the run has passed its checks
(:func:`zoo.run.provenance.write_run_files`).

A sweep is claimed as a whole too (:class:`SweepDirCheck`, a Hydra callback), because Hydra writes
``multirun.yaml`` into the sweep directory before any job starts.
"""

from __future__ import annotations

import atexit
import fcntl
import json
import logging
import logging.handlers
import os
import socket
import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hydra.core.hydra_config import HydraConfig
from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from zoo.config.schema import ResumeMode
from zoo.errors import ZooError
from zoo.run.layout import LAST_CHECKPOINT, LOCK_FILE, RUN_MARKERS, SEARCH_SWEEPER, STUDY_FILES, SUMMARY_FILE
from zoo.run.resume import CONTINUING, Verdict, resume_mode

log = logging.getLogger("zoo.run")

LOG_FORMAT = "[%(asctime)s][%(name)s][%(levelname)s] - %(message)s"  # Hydra's default job log format


class RunDirRefused(ZooError):
    """A run (or sweep) may not write into the chosen directory; nothing in it was changed."""


class RunDirectoryInUse(RunDirRefused):
    """The directory holds a zoo run, or another process is writing one into it."""


class ForeignDirectory(RunDirRefused):
    """The directory holds files that are not a zoo run."""


class NothingToResume(RunDirRefused):
    """``resume_mode=must`` names a directory that holds no run."""


# ---------------------------------------------------------------------------------------------- checks


def _listing(names: Iterable[str], limit: int = 5) -> str:
    names = sorted(names)
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def check_run_dir(run_dir: Path, own_lock: bool = False, mode: ResumeMode = ResumeMode.never) -> Verdict:
    """Refuse ``run_dir`` unless it may be written; only reads. ``own_lock``: the lock there is ours.

    Returns what the job does there (:class:`~zoo.run.resume.Verdict`): start (new or empty); resume (a run
    with ``checkpoints/last.ckpt``, under ``mode`` auto or must); restart (under auto or must, a run stopped
    before its first checkpoint); finished (a finished run under auto: the job is skipped; under must it is
    resumed when it is asked to train longer or to be tested, :func:`zoo.run.resume.training_had_ended`).
    """
    mode = ResumeMode(mode)
    entries = {p.name for p in run_dir.iterdir()} if run_dir.is_dir() else set()
    if LOCK_FILE in entries and not own_lock and lock_held(run_dir / LOCK_FILE):
        raise RunDirectoryInUse(locked_message(run_dir, "run directory"))
    entries.discard(LOCK_FILE)  # ours, or left by a process that ended: it locks nothing
    used = [m for m in RUN_MARKERS if m in entries]
    if used and mode in CONTINUING:
        status = run_status(run_dir)
        if mode is ResumeMode.auto and status == "finished":
            return Verdict.finished
        if (run_dir / LAST_CHECKPOINT).is_file():
            return Verdict.resume
        if status in ("running", "interrupted", "failed"):  # stopped before its first checkpoint: it starts again
            return Verdict.restart
        what = "a finished run" if status == "finished" else f"a run ({SUMMARY_FILE} unreadable)"
        raise RunDirectoryInUse(
            f"run directory {run_dir} holds {what} but no {LAST_CHECKPOINT} to resume from; choose a new hydra.run.dir"
        )
    if used:
        raise RunDirectoryInUse(
            f"run directory {run_dir} already holds a run ({', '.join(used)}); choose a new hydra.run.dir instead "
            f"of overwriting it, or continue it with resume={run_dir}"
        )
    if entries:
        raise ForeignDirectory(
            f"run directory {run_dir} holds files that are not a zoo run ({_listing(entries)}); "
            "choose a new or empty folder for hydra.run.dir"
        )
    if mode is ResumeMode.must:
        raise NothingToResume(
            f"run directory {run_dir} holds no run to resume (resume_mode=must); "
            "resume_mode=auto starts one there instead"
        )
    return Verdict.start


def run_status(run_dir: Path) -> str | None:
    """The status ``summary.json`` records (running, finished, failed, interrupted), or None."""
    try:
        return json.loads((run_dir / SUMMARY_FILE).read_text()).get("status")
    except (OSError, ValueError, AttributeError):
        return None


# ------------------------------------------------------------------------------------------------ lock


def locked_message(folder: Path, what: str, advice: str = "choose a new folder") -> str:
    """Why ``folder`` is refused while a live process holds its lock: who holds it, from the lock file.

    A lock file left by a process that ended (killed, or its node lost) locks nothing (:func:`lock_held`).
    """
    lock = folder / LOCK_FILE
    try:
        holder = json.loads(lock.read_text())
        pid, host, started = int(holder["pid"]), str(holder["host"]), str(holder.get("started", "?"))
    except (OSError, ValueError, KeyError, TypeError):
        return f"{what} {folder} is being claimed by another zoo process ({lock}); {advice}"
    if host == socket.gethostname():
        return f"{what} {folder} is being written by another zoo process (pid {pid}, started {started}); {advice}"
    return f"{what} {folder} is being written by process {pid} on host {host} (started {started}); {advice}"


def refuse_live_run(path: Path, advice: str) -> None:
    """Refuse a command's write at ``path`` (a run directory, or a file to write in one) while a live process holds
    the lock of the run holding it (the nearest folder with a lock, a record or checkpoints: a run in training, or a
    sweep): what it writes there would race the run's own writes, or be deleted by them. ``advice``: what to do."""
    path = Path(path).absolute()
    for folder in (path, *path.parents):
        if any(os.path.exists(folder / name) for name in (LOCK_FILE, *RUN_MARKERS)):
            if lock_held(folder / LOCK_FILE):
                sweep = any(os.path.exists(folder / name) for name in SWEEP_MARKERS)
                raise RunDirectoryInUse(locked_message(folder, "sweep directory" if sweep else "run directory", advice))
            return


def lock_held(path: Path, shared_too: bool = True) -> bool:
    """Whether a live process holds the lock on ``path``: exclusively (a run, a sweep) or, with ``shared_too``, shared
    (a search's workers, :class:`SweepDirCheck`). Only reads: the lock is tried and dropped at once, and a refusal
    is tried again a few times, since another probe holds the lock for a moment too."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        for attempt in range(PROBES):
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                if shared_too:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return False
            except BlockingIOError:
                fcntl.flock(fd, fcntl.LOCK_UN)
                time.sleep(0.002 * (attempt + 1))
        return True
    except OSError:  # no file locks on this file system: Lock itself says so
        return False
    finally:
        os.close(fd)


#: How many times :func:`lock_held` tries a lock before it takes a refusal for a holder.
PROBES = 3


class Lock:
    """An exclusive ``flock`` on ``folder``'s :data:`LOCK_FILE`, held while this process keeps the file open.

    The OS drops it when the process ends, however it ends (SIGKILL, a lost node): a killed run can be resumed
    at once, while a live holder keeps every other process out. The file holds the holder's pid, host and start
    time for the messages; :meth:`release` (also at exit) removes it, a killed process leaves it, locking nothing.
    A ``shared`` lock (a search's workers share its sweep directory) keeps out only exclusive holders, and is left
    in place on release: another worker may hold it still.
    """

    #: How long a refused attempt is repeated: a probe (:func:`lock_held`) holds the lock for a moment too.
    PATIENCE_S = 0.5

    def __init__(self, folder: Path, what: str, shared: bool = False) -> None:
        self.path = folder / LOCK_FILE
        self.pid = os.getpid()
        self.shared = shared
        self.fd: int | None = self._take(folder, what)
        atexit.register(self.release)  # Ctrl-C or sys.exit outside the claim's own `finally`
        holder = {
            "pid": self.pid,
            "host": socket.gethostname(),
            "started": time.strftime("%Y-%m-%d %H:%M:%S"),
            "argv": sys.argv,
        }
        os.ftruncate(self.fd, 0)
        os.write(self.fd, json.dumps(holder).encode())

    def _take(self, folder: Path, what: str) -> int:
        """Open and lock the file; its descriptor. Locked but no longer the file at ``self.path`` (its holder removed
        it on release meanwhile): taken again."""
        deadline = time.monotonic() + self.PATIENCE_S
        while True:
            fd = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o644)
            try:
                fcntl.flock(fd, (fcntl.LOCK_SH if self.shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                if time.monotonic() > deadline:
                    raise RunDirectoryInUse(locked_message(folder, what)) from None
                time.sleep(0.02)
                continue
            except OSError as error:
                os.close(fd)
                raise RunDirRefused(
                    f"cannot lock {self.path} ({error.strerror}): zoo needs a file system with file "
                    f"locks (flock) for the {what}"
                ) from None
            if self._is_current(fd):
                return fd
            os.close(fd)

    def _is_current(self, fd: int) -> bool:
        try:
            return os.path.samestat(os.fstat(fd), os.stat(self.path))
        except FileNotFoundError:
            return False

    def release(self) -> None:
        """Remove the file, then drop the lock (closing it); never from a forked child (a data loader worker)."""
        if self.fd is None or os.getpid() != self.pid:
            return
        try:
            if not self.shared:
                self.path.unlink()
        except FileNotFoundError:
            pass
        os.close(self.fd)
        self.fd = None
        atexit.unregister(self.release)


# ------------------------------------------------------------------------------------------- the claim


class Claim:
    """This process's hold on a run directory: checked when the job starts, locked from its first write
    (:meth:`acquire`) and released when the job ends, with the log file it opened there."""

    def __init__(self, run_dir: Path, writes: bool, mode: ResumeMode, verdict: Verdict) -> None:
        self.run_dir = run_dir
        self.writes = writes
        self.mode = mode
        self.verdict = verdict
        self.lock: Lock | None = None
        self.log_handler: logging.Handler | None = None
        # What the job logs before its log file opens (reading the data, the weights it starts from) is held here
        # and written first into the file: the directory is not written before the run's record starts.
        self.early_log: logging.handlers.MemoryHandler | None = None
        if writes:
            self.early_log = logging.handlers.MemoryHandler(capacity=1 << 16, flushLevel=logging.CRITICAL + 1)
            logging.getLogger().addHandler(self.early_log)

    def acquire(self) -> None:
        """Lock the directory before the first write (again: a no-op). A config refused before this point
        leaves an existing directory exactly as it was, its modification time included."""
        if not self.writes or self.lock is not None:
            return
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.lock = Lock(self.run_dir, "run directory")
        try:
            # a process that wrote between the first check and the lock
            if check_run_dir(self.run_dir, own_lock=True, mode=self.mode) != self.verdict:
                raise RunDirectoryInUse(f"run directory {self.run_dir} changed while this job checked it; try again")
        except RunDirRefused:
            self.release()
            raise

    def open_log(self) -> None:
        """``<job name>.log`` in the run directory, as Hydra's job logging would write it (unless it already does)."""
        job_name = str(HydraConfig.get().job.name) if HydraConfig.initialized() else "train"
        path = (self.run_dir / f"{job_name}.log").resolve()
        root = logging.getLogger()
        if not any(getattr(h, "baseFilename", None) == str(path) for h in root.handlers):
            # (else a hydra/job_logging the user chose writes it already)
            self.log_handler = logging.FileHandler(path)
            self.log_handler.setFormatter(logging.Formatter(LOG_FORMAT))
            root.addHandler(self.log_handler)
            if self.early_log is not None:
                self.early_log.setTarget(self.log_handler)
                self.early_log.flush()
        self._drop_early_log()

    def _drop_early_log(self) -> None:
        if self.early_log is not None:
            logging.getLogger().removeHandler(self.early_log)
            self.early_log.setTarget(None)
            self.early_log.close()
            self.early_log = None

    def release(self) -> None:
        self._drop_early_log()
        if self.log_handler is not None:
            logging.getLogger().removeHandler(self.log_handler)
            self.log_handler.close()
            self.log_handler = None
        if self.lock is not None:
            self.lock.release()
            self.lock = None


@contextmanager
def claim_run_dir(run_dir: Path, writes: bool = True, mode: ResumeMode = ResumeMode.never) -> Iterator[Claim]:
    """Hold ``run_dir`` for one job (:func:`zoo.run.job.run_job` claims it once): refused at once
    (:class:`RunDirRefused`, nothing changed) unless it is new or empty and no other process holds it;
    :meth:`Claim.acquire` locks it before the first write, and the lock is removed when the block ends, however it
    ends.

    ``writes=False`` (DDP ranks > 0, relaunched into rank 0's directory) checks and locks nothing.
    ``mode`` auto or must also accepts a directory holding a run to continue (:func:`check_run_dir`).
    """
    key = Path(run_dir).resolve()
    verdict = Verdict.start
    if writes:
        verdict = check_run_dir(key, mode=mode)  # read-only
    elif mode in CONTINUING and (key / LAST_CHECKPOINT).is_file():
        verdict = Verdict.resume  # a DDP rank > 0 follows what rank 0 decided (rank 0 holds the lock: no check here)
    claim = Claim(key, writes, ResumeMode(mode), verdict)
    try:
        yield claim
    finally:
        claim.release()


# ------------------------------------------------------------------------------------------ sweep dirs


#: What makes a folder a sweep's: Hydra's record of it, or a search's study (zoo.search).
SWEEP_MARKERS = ("multirun.yaml", *STUDY_FILES)


def is_search(config: DictConfig) -> bool:
    """Whether the sweep is zoo's search (``hydra/sweeper=optuna``), whose workers share the sweep directory."""
    return str(config.hydra.sweeper.get("_target_", "")).endswith(SEARCH_SWEEPER)


class SweepDirCheck(Callback):
    """Hydra callback (``hydra.callbacks`` in conf/config.yaml): claim the sweep directory before Hydra writes
    ``multirun.yaml`` into it. A sweep directory must be new or empty (or, with ``resume_mode`` auto or must,
    hold the sweep or search to resume); it is locked while the sweep runs. A search's lock is shared: several
    processes may work on one search together (:mod:`zoo.search.workers`), but on nothing else there."""

    def __init__(self) -> None:
        self.lock: Lock | None = None

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        sweep_dir = Path(str(config.hydra.sweep.dir)).resolve()
        shared = is_search(config)
        try:
            if sweep_dir.is_dir():
                entries = {p.name for p in sweep_dir.iterdir()}
                if LOCK_FILE in entries and lock_held(sweep_dir / LOCK_FILE, shared_too=not shared):
                    raise RunDirectoryInUse(locked_message(sweep_dir, "sweep directory"))
                entries.discard(LOCK_FILE)  # left by a process that ended: it locks nothing
                sweep = any(marker in entries for marker in SWEEP_MARKERS)
                if entries and not (sweep and resume_mode(config) in CONTINUING):
                    held = "already holds a sweep" if sweep else "holds files that are not a zoo sweep"
                    raise ForeignDirectory(
                        f"sweep directory {sweep_dir} {held} ({_listing(entries)}); "
                        "choose a new or empty folder for hydra.sweep.dir (or resume_mode=auto "
                        "to finish that sweep's jobs or search)"
                    )
            sweep_dir.mkdir(parents=True, exist_ok=True)
            self.lock = Lock(sweep_dir, "sweep directory", shared=shared)
        except RunDirRefused as error:
            print(f"zoo: error: {error}", file=sys.stderr)
            raise SystemExit(1) from None

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        if self.lock is not None:
            self.lock.release()

    def __getstate__(self) -> dict:  # pickled to a launcher's workers, which hold no lock
        return {"lock": None}
