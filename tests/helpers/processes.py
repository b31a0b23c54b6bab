"""``zoo`` commands run as real processes: a fresh interpreter (:func:`run_zoo`) or a process forked from a server
that has imported zoo, torch and Lightning once (:func:`fork_zoo`, :class:`ForkedZoo`)."""

from __future__ import annotations

import atexit
import multiprocessing
import os
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path

#: What the fork server imports once, before it forks any command: helpers.forkserver (zoo, torch, Lightning and
#: the built-in plugins) and the modules a test adds (those its forked functions live in).
PRELOAD = ["helpers", "helpers.forkserver"]


def fork_server(*preload: str) -> multiprocessing.context.ForkServerContext:
    """The test process's one fork server, started on first use with :data:`PRELOAD` and ``preload`` imported.

    The server starts as ``python -c ...`` with the environment's ``PYTHONPATH`` as its only addition to
    sys.path, so tests/ goes there while it starts (or it could import none of the tests' modules, and would
    silently preload nothing of them); each process it forks gets this process's sys.path and environment back.
    """
    import multiprocessing.forkserver

    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([*PRELOAD, *preload])
    saved = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[1]), *filter(None, [saved])])
    try:
        multiprocessing.forkserver.ensure_running()  # once it runs, a no-op
    finally:
        if saved is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = saved
    return context


def run_zoo(*args: str, cwd: Path, stdin: str | None = None, env: dict | None = None, check: bool = True):
    """Run ``python -m zoo.cli ARGS`` in a subprocess and return the CompletedProcess.

    ``env`` adds variables; a value of None removes one.
    """
    full_env = {**os.environ, "WANDB_MODE": "offline", "WANDB_SILENT": "true", **(env or {})}
    full_env = {k: v for k, v in full_env.items() if v is not None}
    proc = subprocess.run(
        [sys.executable, "-m", "zoo.cli", *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        env=full_env,
        timeout=600,
    )
    if check and proc.returncode != 0:
        raise AssertionError(
            f"zoo {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
        )
    return proc


def _forked_zoo(
    args: list[str], cwd: str, env: dict[str, str], out: str, err: str, stdin: str | None, prepare=None
) -> None:
    """The body of a forked ``zoo ARGS`` (:class:`ForkedZoo`): what ``python -m zoo.cli ARGS`` does once imported,
    after ``prepare()`` (a module-level function: a test's hook into the run) where one is given."""
    os.chdir(cwd)
    had = os.environ.get("PYTHONPATH", "").split(os.pathsep)  # the server's own, on its sys.path already
    given = [folder for folder in env.get("PYTHONPATH", "").split(os.pathsep) if folder and folder not in had]
    os.environ.clear()
    os.environ.update(env)
    sys.path[:0] = [cwd, *given]  # as a new `python -m` puts the working folder, then $PYTHONPATH, first
    for fd, path in ((1, out), (2, err)):
        os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), fd)
    if stdin is not None:
        os.dup2(os.open(stdin, os.O_RDONLY), 0)
        sys.stdin = open(0, closefd=False)
    code = 1
    try:
        from zoo.cli import main

        if prepare is not None:
            prepare()
        main(args)
        code = 0
    except SystemExit as stop:  # as the interpreter ends on one
        if stop.code is None or isinstance(stop.code, int):
            code = stop.code or 0
        else:
            print(stop.code, file=sys.stderr)
    except BaseException:  # noqa: BLE001 - an uncaught error: its traceback, as the interpreter prints it
        traceback.print_exc()
    finally:
        atexit._run_exitfuncs()  # what the interpreter runs at exit (loggers' and trackers' last writes)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


class ForkedZoo:
    """``zoo ARGS`` started in a process forked from a server that has imported zoo, torch and Lightning once.

    A real process (its own pid, signals, exit status, stdout, stderr, working folder and environment) that
    starts in milliseconds instead of seconds, like helpers.battery's; folders added to ``PYTHONPATH`` in
    ``env`` join its sys.path. Not a fresh interpreter: where a test is about one (warnings at import,
    PYTHONHASHSEED, re-executing itself as DDP does, a folder taken off PYTHONPATH) or the command starts a
    pool of workers (hydra/launcher=joblib: loky's pool outlives the job here for minutes), use :func:`run_zoo`.
    """

    def __init__(self, *args: str, cwd: Path, stdin: str | None = None, env: dict | None = None, prepare=None):
        context = fork_server()
        full_env = {**os.environ, "WANDB_MODE": "offline", "WANDB_SILENT": "true", **(env or {})}
        full_env = {k: v for k, v in full_env.items() if v is not None}
        self.args = list(args)
        self._streams = tempfile.TemporaryDirectory(prefix="zoo-fork-")
        self._out, self._err, given = (os.path.join(self._streams.name, name) for name in ("out", "err", "in"))
        if stdin is not None:
            Path(given).write_text(stdin)
        self.process = context.Process(
            target=_forked_zoo,
            args=(self.args, str(cwd), full_env, self._out, self._err, None if stdin is None else given, prepare),
        )
        self.process.start()
        self.pid = self.process.pid

    def poll(self) -> int | None:
        """The exit status, or None while it runs."""
        return self.process.exitcode

    def send_signal(self, signum: int) -> None:
        os.kill(self.pid, signum)

    def wait(self, timeout: float = 600, check: bool = True) -> subprocess.CompletedProcess:
        """Its exit status, stdout and stderr once it has ended (killed after ``timeout`` seconds)."""
        self.process.join(timeout)
        if self.process.exitcode is None:
            self.process.kill()
            self.process.join()
        out, err = (Path(stream).read_text() if Path(stream).exists() else "" for stream in (self._out, self._err))
        proc = subprocess.CompletedProcess(["zoo", *self.args], self.process.exitcode, out, err)
        self._streams.cleanup()
        if check and proc.returncode != 0:
            raise AssertionError(
                f"zoo {' '.join(self.args)} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
            )
        return proc


def fork_zoo(*args: str, cwd: Path, stdin: str | None = None, env: dict | None = None, check: bool = True):
    """:func:`run_zoo` in a forked process (:class:`ForkedZoo`): the same command, without the seconds a new
    interpreter takes to import zoo, torch and Lightning."""
    return ForkedZoo(*args, cwd=cwd, stdin=stdin, env=env).wait(check=check)
