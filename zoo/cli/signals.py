"""SIGINT and SIGTERM for every ``zoo`` command: exit 128 + the signal with one line, never a traceback.

``zoo train`` answers signals itself once its job has started (:mod:`zoo.run.interruptions`, which
puts this handler back when the job ends); before that, and in every other command (``translate`` and
``caption`` while they predict, ``compare``, ``dashboard``), a signal stops the command at once. A process
forked from the command (the worker of ``zoo prepare``) leaves signals to it: the command stops it as it stops.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager


class CommandInterrupted(BaseException):
    """A signal stopped a command (a BaseException, like KeyboardInterrupt, which it stands in for)."""

    def __init__(self, signum: int, command: str) -> None:
        self.signum, self.command = signum, command
        super().__init__(f"{signal.Signals(signum).name} during zoo {command}")


@contextmanager
def stopped_by_signals(command: str) -> Iterator[None]:
    """While the block runs, SIGINT and SIGTERM raise :class:`CommandInterrupted` (SIGTERM would otherwise end the
    process without a word, SIGINT with a traceback)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    owner = os.getpid()

    def stop(signum: int, frame) -> None:
        if os.getpid() == owner:  # not in a forked worker, whose traceback would follow the command's line
            raise CommandInterrupted(signum, command)

    previous = {signum: signal.signal(signum, stop) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
