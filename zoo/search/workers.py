"""Many processes, one search: each ``zoo train -m`` on a sweep directory is a worker of the search stored there.

Workers (one per SLURM array task, say) pull trials from the shared storage (:mod:`zoo.search.storage`) until the
budget is spent. Two things keep them from running a trial twice or losing one:

* **Turns.** Every decision (which trial to run, its job number, what the budget has left, a result told) is taken
  while holding :data:`TURN_FILE`'s lock in the sweep directory (:func:`turn`), so no two workers decide
  from the same state.
* **Liveness.** A worker holds a lock of its own, in :data:`WORKERS_DIR`, for as long as it lives, and records its
  name beside every job it takes. A trial left running by a worker whose lock no process holds (killed, its node
  lost) is taken over by another worker, which runs it again in its own directory, continuing from its
  ``last.ckpt`` (:meth:`Worker.alive`).

These are ``flock`` locks, as the run directories' own (:mod:`zoo.run.claim`): the OS drops them when a process
ends, however it ends, so a dead worker is known at once, with no heartbeat to wait out.
"""

from __future__ import annotations

import fcntl
import os
import socket
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from zoo.run.claim import Lock, lock_held
from zoo.run.layout import LOCK_FILE

#: The lock a worker holds while it decides (never removed: every worker must lock the same file).
TURN_FILE = ".zoo.turn"
#: One folder per live worker, holding its lock.
WORKERS_DIR = ".zoo.workers"


class Worker:
    """This process as a worker of the search in ``sweep_dir``: named uniquely, and alive while it holds its lock."""

    def __init__(self, sweep_dir: Path) -> None:
        self.sweep_dir = sweep_dir
        self.name = f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        folder = sweep_dir / WORKERS_DIR / self.name
        folder.mkdir(parents=True)
        self.lock = Lock(folder, "search worker")

    def alive(self, name: str | None) -> bool:
        """Whether the worker ``name`` still runs (None, a job no worker took: no)."""
        return name is not None and (name == self.name or lock_held(self.sweep_dir / WORKERS_DIR / name / LOCK_FILE))

    def leave(self) -> None:
        """Stop being a worker: the lock and its folder go."""
        self.lock.release()
        try:
            (self.sweep_dir / WORKERS_DIR / self.name).rmdir()
        except OSError:
            pass


@contextmanager
def turn(sweep_dir: Path) -> Iterator[None]:
    """Hold the search's turn: other workers wait until this block ends to read or change the search."""
    fd = os.open(sweep_dir / TURN_FILE, os.O_CREAT | os.O_RDWR, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
