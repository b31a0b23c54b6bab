"""The DDP ranks a training job starts on its own machine follow it: it answers signals, they end with it.

Lightning starts ranks 1..N-1 of a machine as new processes (``python -m zoo.cli.train ...``). A terminal's
Ctrl-C reaches every one of them, a scheduler may signal them all, and a rank that stops alone leaves the others
waiting in a collective: so a rank leaves SIGINT and SIGTERM to the job, which stops its ranks together (training
stops after the same step on every rank) or ends, taking them with it. Light to import: ``zoo train`` calls
:func:`follow_job` before it imports Lightning.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager

#: The process id of the training job whose ranks this process's environment is for.
JOB_VARIABLE = "ZOO_JOB_PID"
#: prctl's option for the signal a process gets when its parent ends (linux/prctl.h).
PR_SET_PDEATHSIG = 1


def started_rank() -> bool:
    """Whether this process is a DDP rank that a training job on this machine started (Lightning gives it its
    LOCAL_RANK; torchrun and SLURM start every rank themselves, and no rank follows another then)."""
    return os.environ.get("LOCAL_RANK", "0") != "0" and JOB_VARIABLE in os.environ


@contextmanager
def ranks_follow() -> Iterator[None]:
    """While the block runs, ranks started from this process know it as their job."""
    previous = os.environ.get(JOB_VARIABLE)
    os.environ[JOB_VARIABLE] = str(os.getpid())
    try:
        yield
    finally:
        if previous is None:
            del os.environ[JOB_VARIABLE]
        else:
            os.environ[JOB_VARIABLE] = previous


def ignore(signum: int, frame) -> None:
    """A rank's answer to SIGINT and SIGTERM: none (a Python handler, unlike SIG_IGN, is not passed on to programs
    the rank runs)."""


def follow_job() -> None:
    """Make this rank leave signals to its job and end when the job's process does, however it ends (killed too)."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, ignore)
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != int(os.environ[JOB_VARIABLE]):  # the job ended before this rank got here
        os._exit(0)
