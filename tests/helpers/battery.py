"""The bad-input battery's machinery: a case, a real process per command, and what every case must show.

Every case asserts (:func:`assert_refused`):
- a non-zero exit status;
- exactly one line on stderr, ``zoo: error: ...``, naming what is wrong (the case's ``says``);
- no training started (no checkpoint, no metrics written anywhere);
- every file that existed before the command (runs, checkpoints, the user's files) is unchanged,
  and a refused command leaves no new run behind.

Each command runs in its own process, forked from a server that has imported zoo, torch and
Lightning once (:func:`zoo_process`): a real process with its own exit status and stderr, at a
fraction of a fresh interpreter's start-up time. The cases live in ``tests/e2e/test_bad_inputs*.py``, one
file per area (files run side by side); ``docs/bad_inputs.md`` lists them all.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from helpers.processes import fork_server
from helpers.runs import TINY
from zoo.registry.index import INDEX_FILE
from zoo.run.claim import Lock

TRAIN_TINY = [*TINY, "dataset.train_size=64", "dataset.val_size=8", "dataset.test_size=8"]


# ---------------------------------------------------------------------------------------------- processes
def _zoo_main(args: list[str], cwd: str, env: dict[str, str], out: str, err: str, stdin: str | None) -> None:
    """The body of one forked command: ``zoo ARGS`` in ``cwd`` with stdout and stderr in files, stdin from a
    file (None: the empty stdin a forked process gets)."""
    os.chdir(cwd)
    os.environ.update(env)
    for fd, path in ((1, out), (2, err)):
        os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), fd)
    if stdin is not None:
        os.dup2(os.open(stdin, os.O_RDONLY), 0)
        sys.stdin = open(0, closefd=False, errors="surrogateescape")  # as Python opens it
    from zoo.cli import main

    try:
        main(args)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()


def zoo_process(
    args: list[str], cwd: Path, stdin: bytes | None = None, env: dict[str, str] | None = None
) -> tuple[int, str, str]:
    """Run ``zoo ARGS`` in a fresh process (forked from a preloaded server) with ``stdin``'s bytes on its
    standard input and ``env`` added to its environment; its (exit status, stdout, stderr)."""
    out, err, given = (cwd.parent / f".{cwd.name}.{stream}" for stream in ("out", "err", "in"))
    if stdin is not None:
        given.write_bytes(stdin)
    env = {"WANDB_MODE": "offline", "WANDB_SILENT": "true", **(env or {})}
    process = fork_server().Process(
        target=_zoo_main, args=(list(args), str(cwd), env, str(out), str(err), None if stdin is None else str(given))
    )
    process.start()
    process.join(timeout=300)
    assert process.exitcode is not None, f"zoo {' '.join(args)} did not end within 300 s"
    return process.exitcode, out.read_text(), err.read_text()


def snapshot(*folders: Path) -> dict[str, str]:
    """Every file under ``folders``: path -> SHA-256 of its bytes."""
    return {
        str(path): hashlib.sha256(path.read_bytes()).hexdigest()
        for folder in folders
        if folder.exists()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


# ---------------------------------------------------------------------------------------------- a case
@dataclass
class Case:
    """``zoo ARGS`` run in a fresh folder that ``files`` fills first; stderr's one line must contain ``says``.

    In ``args``, ``{run}`` is a finished run. ``copy`` copies a shared run into the folder as ``run``
    first (``finished_run`` or ``plugin_run``), so ``files`` may damage the copy; ``locked`` names a
    folder (``run``: the copy, as if it were still training) that another process (this test) holds the
    run-directory lock of while the command runs;
    ``stdin`` is what the command reads on its standard input (None: nothing); ``env`` sets environment
    variables (shown before the command, ``ZOO_CACHE_DIR= zoo prepare``).
    """

    category: str
    args: list[str]
    says: str
    files: Callable[[Path], None] | None = None
    copy: str | None = None
    locked: str | None = None
    stdin: bytes | None = None
    env: dict[str, str] | None = None

    def __post_init__(self) -> None:
        shown = [arg for arg in self.args if arg not in TRAIN_TINY]
        given = f" < {self.stdin[:16]!r}" if self.stdin is not None else ""
        variables = "".join(f"{name}={value} " for name, value in (self.env or {}).items())
        self.id = f"{self.category}: {variables}zoo {' '.join(shown)}"[: 100 - len(given)] + given


def run_copy_with(path: str, data: bytes | None) -> Callable[[Path], None]:
    """Change one file of the copied run (``data`` None: delete it)."""

    def change(here: Path) -> None:
        target = here / "run" / path
        if data is None:
            target.unlink()
        else:
            target.write_bytes(data)

    return change


#: Set by helpers/battery_table.py: a file each case appends its answer to (one JSON line), for docs/bad_inputs.md.
TABLE_VARIABLE = "ZOO_BATTERY_TABLE"


def record_for_the_table(case: Case, request, status: int, lines: list[str]) -> None:
    """Append what zoo answered ``case`` to the table's file, when helpers/battery_table.py asks for it."""
    path = os.environ.get(TABLE_VARIABLE)
    if not path:
        return
    cases = request.module.CASES
    row = {
        "module": request.module.__name__.rsplit(".", 1)[-1],  # e2e.test_bad_inputs: the file's stem
        "index": next(k for k, c in enumerate(cases) if c is case),
        "category": case.category,
        "command": case.id.split(": ", 1)[1],
        "status": status,
        "line": lines[0] if len(lines) == 1 else f"**{len(lines)} lines**: " + " / ".join(lines[-2:]),
    }
    with open(path, "a") as table:
        table.write(json.dumps(row) + "\n")


#: The temporary folders pytest gave a case (its own folder, the shared finished run, others), as the table shows them.
TEMPORARY = [
    (re.compile(r"/tmp/pytest-of-[^/\s]+/pytest-\d+/(?:popen-gw\d+/)?[^/\s]+/case/"), ""),
    (re.compile(r"/tmp/pytest-of-[^/\s]+/pytest-\d+/(?:popen-gw\d+/)?trained\d+/run"), "{run}"),
    (re.compile(r"/tmp/pytest-of-[^/\s]+/pytest-\d+/(?:popen-gw\d+/)?[^/\s]+/"), ".../"),
]


def printable(text: str) -> str:
    """``text`` with a byte that was not UTF-8 (kept as a surrogate) written as its escape, and pytest's temporary
    folders shortened (a case's own folder is where its command ran)."""
    for pattern, replacement in TEMPORARY:
        text = pattern.sub(replacement, text)
    return text.encode("utf-8", "backslashreplace").decode()


def battery_cases(modules) -> list[Case]:
    """Every case of the battery's modules (``test_bad_inputs*.py``), in their order."""
    return [case for module in modules for case in module.CASES]


def assert_refused(case: Case, here: Path, finished_run: Path, request) -> str:
    """Run ``case`` in the empty folder ``here``, check everything the battery promises (module docstring) and
    return the error line."""
    if case.copy:
        shutil.copytree(request.getfixturevalue(case.copy), here / "run")
    if case.files is not None:
        case.files(here)
    holder = None
    if case.locked:
        (here / case.locked).mkdir(exist_ok=True)  # the copied run, or a new folder
        holder = Lock(here / case.locked, "run directory")
    args = [arg.format(run=finished_run) for arg in case.args]
    before = snapshot(here, finished_run)

    status, out, err = zoo_process(args, here, case.stdin, case.env)
    after = snapshot(here, finished_run)
    if holder is not None:
        holder.release()

    lines = [line for line in err.splitlines() if line.strip()]
    record_for_the_table(case, request, status, lines)
    assert status != 0, f"accepted: {out[-500:]}{err[-500:]}"
    assert len(lines) == 1 and lines[0].startswith("zoo: error: "), f"not one error line:\n{err[-3000:]}"
    assert case.says.lower() in lines[0].lower(), f"does not name {case.says!r}: {lines[0]}"
    assert {path: digest for path, digest in after.items() if path in before} == before, "a file changed"
    # zoo's index of the installed components (zoo.registry.index), which any command writes to its cache folder once
    # (zoo --help too), is no trace of the refused command
    new = [path for path in after if path not in before and Path(path).name != INDEX_FILE]
    assert not [p for p in new if p.endswith((".ckpt", "metrics.csv"))], f"training started: {new}"
    assert not new, f"a refused command left files behind: {new}"
    return lines[0]
