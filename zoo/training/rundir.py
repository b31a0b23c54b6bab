"""The run directory: claimed before a run writes anything, and made usable again from anywhere.

A job first *claims* its directory (:func:`claim_run_dir`): the directory must be new or
empty (a folder holding a zoo run, or anything else, is refused without a byte changed), and an
exclusive OS lock on :data:`LOCK_FILE` (``flock``; the file holds the pid, host and start time) keeps a
second process out until the job ends, and no longer than the process lives. Hydra writes nothing into the directory
(``hydra.output_subdir: null`` and a console-only job logging in ``conf/config.yaml``); once the run's
config has passed its checks, :func:`write_run_files` writes what Hydra would have (``.hydra/``,
``train.log``) and what makes the run usable from any folder and environment: ``plugin_dirs`` as
absolute paths in ``config.yaml``, a copy of every plugin folder's sources under ``plugins/`` and
``provenance.json`` (each component's kind, name, module, package and version; :mod:`zoo.training.provenance`).

A sweep is claimed as a whole too (:class:`SweepDirCheck`, a Hydra callback), because Hydra writes
``multirun.yaml`` into the sweep directory before any job starts.
"""

from __future__ import annotations

import atexit
import fcntl
import json
import logging
import os
import socket
import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from zoo.errors import ZooError
from zoo.search import STUDY_FILE
from zoo.training.provenance import PROVENANCE_FILE, copy_plugin_sources, loaded_plugin_folders, provenance

log = logging.getLogger("zoo.run")

SUMMARY_FILE = "summary.json"  # written by zoo.training.record.RunRecord (the same name)
#: Files whose presence means a directory holds a zoo run (finished, failed, running or killed).
RUN_MARKERS = (SUMMARY_FILE, "checkpoints")
#: Held by the one process that writes a run (or launches a sweep): pid, host, start time.
LOCK_FILE = ".zoo.lock"
#: Where zoo writes Hydra's record of a job (the name Hydra uses: users' habits keep working).
HYDRA_DIR = ".hydra"
LOG_FORMAT = "[%(asctime)s][%(name)s][%(levelname)s] - %(message)s"  # Hydra's default job log format


class RunDirRefused(ZooError):
    """A run (or sweep) may not write into the chosen directory; nothing in it was changed."""


class RunDirectoryInUse(RunDirRefused):
    """The directory holds a zoo run, or another process is writing one into it."""


class ForeignDirectory(RunDirRefused):
    """The directory holds files that are not a zoo run."""


# ---------------------------------------------------------------------------------------------- checks


def _listing(names: Iterable[str], limit: int = 5) -> str:
    names = sorted(names)
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def check_run_dir(run_dir: Path, own_lock: bool = False, resume_mode: str = "never") -> str:
    """Refuse ``run_dir`` unless it may be written; only reads. ``own_lock``: the lock there is ours.

    Returns what the job does there: ``"start"`` (new or empty), ``"resume"`` (a run with
    ``checkpoints/last.ckpt``, under ``resume_mode`` auto or must), ``"restart"`` (under auto or must, a
    run stopped before its first checkpoint: it starts again in place, :func:`clear_stopped_run`) or
    ``"finished"`` (a finished run under auto: the job is skipped; under must it is resumed when it is
    asked to train longer or to be tested, :func:`resume_plan`).
    """
    resuming = str(resume_mode) in ("auto", "must")
    entries = {p.name for p in run_dir.iterdir()} if run_dir.is_dir() else set()
    if LOCK_FILE in entries and not own_lock and lock_held(run_dir / LOCK_FILE):
        raise RunDirectoryInUse(locked_message(run_dir, "run directory"))
    entries.discard(LOCK_FILE)  # ours, or left by a process that ended: it locks nothing
    used = [m for m in RUN_MARKERS if m in entries]
    if used and resuming:
        status = run_status(run_dir)
        if str(resume_mode) == "auto" and status == "finished":
            return "finished"
        if (run_dir / LAST_CHECKPOINT).is_file():
            return "resume"
        if status in ("running", "interrupted", "failed"):  # stopped before its first checkpoint: it starts again
            return "restart"
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
    if str(resume_mode) == "must":
        raise NothingToResume(
            f"run directory {run_dir} holds no run to resume (resume_mode=must); "
            "resume_mode=auto starts one there instead"
        )
    return "start"


def run_status(run_dir: Path) -> str | None:
    """The status ``summary.json`` records (running, finished, failed, interrupted), or None."""
    try:
        return json.loads((run_dir / SUMMARY_FILE).read_text()).get("status")
    except (OSError, ValueError, AttributeError):
        return None


# ---------------------------------------------------------------------------------------------- resume

#: The checkpoint a run resumes from: always the latest state (zoo.training.callbacks.LastCheckpoint).
LAST_CHECKPOINT = "checkpoints/last.ckpt"
#: Settings a resumed run may change (a key or a whole section); any other difference is refused.
RESUME_MAY_CHANGE = (
    "resume",
    "resume_mode",
    "plugin_dirs",
    "paths",
    "samples",
    "logger",
    "decode",
    "data.num_workers",
    "test",
    "search",
    "trainer.max_epochs",
    "trainer.max_steps",
    "trainer.max_time",
    "trainer.patience",
    "trainer.checkpoint_every_minutes",
    "trainer.enable_progress_bar",
    "trainer.cpu_threads",
    "trainer.log_every_n_steps",
    "trainer.limit_val_batches",
    "trainer.limit_test_batches",
)

#: Settings added after runs were first recorded, with the value every run made before them had: a run that
#: predates a setting resumes when the setting keeps that value.
ADDED_SETTINGS = {"trainer.num_nodes": 1}


def resume_mode(cfg: Any) -> str:
    """``resume_mode``, or its default: must with ``resume=RUN_DIR``; auto in a job submitit runs, never elsewhere.

    A submitit job (``hydra/launcher=slurm``, ``submitit_slurm``, ``submitit_local``) may run again: submitit requeues
    it after a pre-emption or time-out signal, SLURM after a pre-emption or a node failure. It runs again with the
    same arguments, into the same directory, which then holds its run: auto continues it from ``last.ckpt`` (and
    skips it if it finished). The first time the directory is new, so auto starts the run as never would.
    """
    mode = cfg.get("resume_mode")
    if mode:
        return str(mode)
    if cfg.get("resume"):
        return "must"
    return "auto" if under_submitit() else "never"


def under_submitit() -> bool:
    """Whether this process is a job submitit runs (it sets ``SUBMITIT_EXECUTOR``: slurm, local, ...)."""
    return bool(os.environ.get("SUBMITIT_EXECUTOR"))


class NothingToResume(RunDirRefused):
    """``resume_mode=must`` names a directory that holds no run."""


class ResumeRefused(ZooError):
    """The overrides of a resumed run change what it computes (its model, data, tokenizer, ...)."""


def _flat(values: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(values, dict) and values:
        flat: dict[str, Any] = {}
        for key, value in values.items():
            flat.update(_flat(value, f"{prefix}{key}."))
        return flat
    return {prefix[:-1]: values}


def check_resume_config(run_dir: Path, cfg: DictConfig) -> None:
    """Refuse a resume whose config differs from the run's saved ``config.yaml`` in a setting outside
    :data:`RESUME_MAY_CHANGE`, naming the first such key; only reads."""
    saved_file = run_dir / "config.yaml"
    if not saved_file.is_file():
        raise ResumeRefused(f"run {run_dir} has no config.yaml to resume with; it cannot be resumed")
    saved = {**ADDED_SETTINGS, **_flat(OmegaConf.to_container(OmegaConf.load(saved_file), resolve=False))}
    new = _flat(OmegaConf.to_container(cfg, resolve=True, enum_to_str=True))
    for key in sorted(set(saved) | set(new), key=lambda k: (k.split(".")[0], k)):
        if saved.get(key, "<unset>") == new.get(key, "<unset>"):
            continue
        if any(key == allowed or key.startswith(allowed + ".") for allowed in RESUME_MAY_CHANGE):
            continue
        raise ResumeRefused(
            f"cannot resume {run_dir} with {key}={new.get(key, '<unset>')}: the run has {key}={saved.get(key, '<unset>')}; "
            f"a resumed run keeps what it computes (only {', '.join(RESUME_MAY_CHANGE[2:])} may change), "
            "so start a new run for this"
        )


#: The settings that say how long a run trains: a finished run resumed with one of them changed trains further.
TRAINING_LIMITS = ("trainer.max_epochs", "trainer.max_steps", "trainer.max_time", "trainer.patience")


def resume_plan(run_dir: Path, cfg: DictConfig, previous: dict) -> str:
    """What resuming the run in ``run_dir`` does: ``"train"`` (on from ``last.ckpt``) or ``"test"`` (its training
    had ended: stopped while testing, or finished untested and resumed with ``test=true``).

    A finished, tested run resumed with the same training limits would only test again and overwrite its
    record (its time, memory and latency): refused, saying how to train it longer.
    """
    saved = _flat(OmegaConf.to_container(OmegaConf.load(run_dir / "config.yaml"), resolve=False))
    new = _flat(OmegaConf.to_container(cfg, resolve=True, enum_to_str=True))
    if any(saved.get(key) != new.get(key) for key in TRAINING_LIMITS):
        return "train"
    finished = previous.get("status") == "finished"
    if not (finished or previous.get("trained")):
        return "train"
    if finished and (previous.get("tested", True) or not cfg.test):
        raise ResumeRefused(
            f"run {run_dir} finished already ({previous.get('steps', '?')} steps); resuming it would only test it "
            f"again and overwrite its record: to train it longer, raise trainer.max_epochs (now "
            f"{saved.get('trainer.max_epochs')}) or trainer.max_steps; its results: zoo compare {run_dir}"
        )
    return "test"


def checkpoint_step(path: Path) -> int:
    """The global step ``path`` (a run's ``last.ckpt``) was written at; one line when the file cannot be read."""
    import torch

    try:
        return int(torch.load(path, map_location="cpu", weights_only=False, mmap=True)["global_step"])
    except Exception as error:  # empty, cut off, or not a checkpoint: torch's messages say little about which
        size = path.stat().st_size
        raise ResumeRefused(
            f"{path} cannot be read ({size} bytes, {type(error).__name__}): it is empty, cut off or not a "
            "checkpoint, so the run cannot be resumed from it; start it again in a new hydra.run.dir "
            "(its best.ckpt, if any, still works with zoo translate --checkpoint best)"
        ) from None


def clear_stopped_run(run_dir: Path) -> None:
    """Empty a run directory whose run stopped before its first checkpoint (under its lock), so it starts again
    there as a new run would: what it had written (config, logs, tokenizers) was all made by that attempt."""
    import shutil

    for entry in run_dir.iterdir():
        if entry.name == LOCK_FILE:
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


# ------------------------------------------------------------------------------------------------ lock


def locked_message(folder: Path, what: str) -> str:
    """Why ``folder`` is refused while a live process holds its lock: who holds it, from the lock file.

    A lock file left by a process that ended (killed, or its node lost) locks nothing (:func:`lock_held`).
    """
    lock = folder / LOCK_FILE
    try:
        holder = json.loads(lock.read_text())
        pid, host, started = int(holder["pid"]), str(holder["host"]), str(holder.get("started", "?"))
    except (OSError, ValueError, KeyError, TypeError):
        return f"{what} {folder} is being claimed by another zoo process ({lock}); choose a new folder"
    if host == socket.gethostname():
        return (
            f"{what} {folder} is being written by another zoo process (pid {pid}, started {started}); "
            "choose a new folder"
        )
    return f"{what} {folder} is being written by process {pid} on host {host} (started {started}); choose a new folder"


def lock_held(path: Path) -> bool:
    """Whether a live process holds the lock on ``path``; only reads (a shared lock, tried and dropped at once)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:  # no file locks on this file system: Lock itself says so
        return False
    finally:
        os.close(fd)
    return False


class Lock:
    """An exclusive ``flock`` on ``folder``'s :data:`LOCK_FILE`, held while this process keeps the file open.

    The OS drops it when the process ends, however it ends (SIGKILL, a lost node): a killed run can be resumed
    at once, while a live holder keeps every other process out. The file holds the holder's pid, host and start
    time for the messages; :meth:`release` (also at exit) removes it, a killed process leaves it, locking nothing.
    """

    #: How long a refused attempt is repeated: a probe (:func:`lock_held`) holds the lock for a moment too.
    PATIENCE_S = 0.5

    def __init__(self, folder: Path, what: str) -> None:
        self.path = folder / LOCK_FILE
        self.pid = os.getpid()
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
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
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

    def __init__(self, run_dir: Path, writes: bool, resume_mode: str = "never", verdict: str = "start") -> None:
        self.run_dir = run_dir
        self.writes = writes
        self.resume_mode = resume_mode
        self.verdict = verdict  # start | resume | restart | finished (see check_run_dir)
        self.lock: Lock | None = None
        self.log_handler: logging.Handler | None = None

    def acquire(self) -> None:
        """Lock the directory before the first write (again: a no-op). A config refused before this point
        leaves an existing directory exactly as it was, its modification time included."""
        if not self.writes or self.lock is not None:
            return
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.lock = Lock(self.run_dir, "run directory")
        try:
            # a process that wrote between the first check and the lock
            if check_run_dir(self.run_dir, own_lock=True, resume_mode=self.resume_mode) != self.verdict:
                raise RunDirectoryInUse(f"run directory {self.run_dir} changed while this job checked it; try again")
        except RunDirRefused:
            self.release()
            raise

    def open_log(self, job_name: str) -> None:
        """``<job name>.log`` in the run directory, as Hydra's job logging would write it (unless it already does)."""
        path = (self.run_dir / f"{job_name}.log").resolve()
        root = logging.getLogger()
        if any(getattr(h, "baseFilename", None) == str(path) for h in root.handlers):
            return  # a hydra/job_logging the user chose writes it already
        self.log_handler = logging.FileHandler(path)
        self.log_handler.setFormatter(logging.Formatter(LOG_FORMAT))
        root.addHandler(self.log_handler)

    def release(self) -> None:
        if self.log_handler is not None:
            logging.getLogger().removeHandler(self.log_handler)
            self.log_handler.close()
            self.log_handler = None
        if self.lock is not None:
            self.lock.release()
            self.lock = None


_CLAIMS: dict[Path, Claim] = {}  # run directories this process holds (a claim is re-entrant)


@contextmanager
def claim_run_dir(run_dir: Path, writes: bool = True, resume_mode: str = "never") -> Iterator[Claim]:
    """Hold ``run_dir`` for one job: refused at once (:class:`RunDirRefused`, nothing changed) unless it is
    new or empty and no other process holds it; :meth:`Claim.acquire` locks it before the first write, and
    the lock is removed when the block ends, however it ends. Re-entrant: the entry claims, ``train`` asks again.

    ``writes=False`` (DDP ranks > 0, relaunched into rank 0's directory) checks and locks nothing.
    ``resume_mode`` auto or must also accepts a directory holding a run to continue (:func:`check_run_dir`).
    """
    key = Path(run_dir).resolve()
    held = _CLAIMS.get(key)
    if held is not None:
        yield held
        return
    verdict = "start"
    if writes:
        verdict = check_run_dir(key, resume_mode=str(resume_mode))  # read-only
    elif str(resume_mode) in ("auto", "must") and (key / LAST_CHECKPOINT).is_file():
        verdict = "resume"  # a DDP rank > 0 follows what rank 0 decided (rank 0 holds the lock: no check here)
    claim = Claim(key, writes, str(resume_mode), verdict)
    _CLAIMS[key] = claim
    try:
        yield claim
    finally:
        _CLAIMS.pop(key, None)
        claim.release()


# ------------------------------------------------------------------------------------------ sweep dirs


#: What makes a folder a sweep's: Hydra's record of it, or a search's study (zoo.search).
SWEEP_MARKERS = ("multirun.yaml", STUDY_FILE)


class SweepDirCheck(Callback):
    """Hydra callback (``hydra.callbacks`` in conf/config.yaml): claim the sweep directory before Hydra writes
    ``multirun.yaml`` into it. A sweep directory must be new or empty (or, with ``resume_mode`` auto or must,
    hold the sweep or search to resume); it is locked while the sweep runs."""

    def __init__(self) -> None:
        self.lock: Lock | None = None

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        sweep_dir = Path(str(config.hydra.sweep.dir)).resolve()
        try:
            if sweep_dir.is_dir():
                entries = {p.name for p in sweep_dir.iterdir()}
                if LOCK_FILE in entries and lock_held(sweep_dir / LOCK_FILE):
                    raise RunDirectoryInUse(locked_message(sweep_dir, "sweep directory"))
                entries.discard(LOCK_FILE)  # left by a process that ended: it locks nothing
                sweep = any(marker in entries for marker in SWEEP_MARKERS)
                if entries and not (sweep and resume_mode(config) in ("auto", "must")):
                    held = "already holds a sweep" if sweep else "holds files that are not a zoo sweep"
                    raise ForeignDirectory(
                        f"sweep directory {sweep_dir} {held} ({_listing(entries)}); "
                        "choose a new or empty folder for hydra.sweep.dir (or resume_mode=auto "
                        "to finish that sweep's jobs or search)"
                    )
            sweep_dir.mkdir(parents=True, exist_ok=True)
            self.lock = Lock(sweep_dir, "sweep directory")
        except RunDirRefused as error:
            print(f"zoo: error: {error}", file=sys.stderr)
            raise SystemExit(1)

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        if self.lock is not None:
            self.lock.release()

    def __getstate__(self) -> dict:  # pickled to a launcher's workers, which hold no lock
        return {"lock": None}


# ------------------------------------------------------------------------------------- the run's files


def write_hydra_files(run_dir: Path, cfg: DictConfig) -> None:
    """``.hydra/config.yaml``, ``hydra.yaml`` and ``overrides.yaml``: what Hydra writes before a job starts,
    written once the directory is claimed and the config has passed its checks."""
    from hydra.core.hydra_config import HydraConfig

    folder = run_dir / HYDRA_DIR
    folder.mkdir(exist_ok=True)
    (folder / "config.yaml").write_text(OmegaConf.to_yaml(cfg))
    if HydraConfig.initialized():
        hydra_cfg = HydraConfig.instance().cfg
        (folder / "hydra.yaml").write_text(OmegaConf.to_yaml(hydra_cfg))
        (folder / "overrides.yaml").write_text(OmegaConf.to_yaml(hydra_cfg.hydra.overrides.task))


def write_run_files(claim: Claim, cfg: DictConfig, metrics: Iterable[str]) -> None:
    """Everything a claimed run writes before it trains: Hydra's ``.hydra/`` files (the config as composed),
    ``<job>.log``, ``config.yaml`` (resolved, ``plugin_dirs`` absolute: every folder this process loaded),
    the plugin folders' sources and ``provenance.json``. ``cfg.plugin_dirs`` is made absolute in place, so the
    checkpoint's copy of the config says the same."""
    from hydra.core.hydra_config import HydraConfig

    run_dir = claim.run_dir
    write_hydra_files(run_dir, cfg)
    claim.open_log(str(HydraConfig.get().job.name) if HydraConfig.initialized() else "train")
    folders = loaded_plugin_folders()
    cfg.plugin_dirs = [str(folder) for folder in folders]
    (run_dir / "config.yaml").write_text(OmegaConf.to_yaml(cfg, resolve=True))
    record = provenance(cfg, metrics, copy_plugin_sources(run_dir, folders))
    (run_dir / PROVENANCE_FILE).write_text(json.dumps(record, indent=2))
