"""SIGTERM and SIGINT in every phase of a job: exit 128 + the signal, one line saying where it stopped and what to
run next, ``summary.json`` interrupted with the phase, and a resume that does what is left.

Each run signals itself the first time it reaches a phase (the function patched in :data:`PHASES`), so the
signal lands at the same point every time. Runs are processes forked from a server that imported zoo once.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import socket
import sys
import time
from pathlib import Path

import pytest
from helpers import TINY
from helpers.processes import fork_server

pytestmark = pytest.mark.slow

#: Where each phase is entered: (module, class or None, function) to wrap with a self-signal on the first call.
PHASES = {
    "setup": ("zoo.data.datamodule", "ZooDataModule", "setup"),
    "sanity check": ("zoo.training.module", "ZooModule", "validation_step"),
    "training": ("zoo.training.module", "ZooModule", "training_step"),
    "validation": ("zoo.training.module", "ZooModule", "validation_step"),
    "test": ("zoo.training.module", "ZooModule", "test_step"),
    "outputs": ("zoo.training.train", None, "test_summary"),
}


def _signal_on_first_call(phase: str, where: tuple[str, str | None, str], signum: int) -> None:
    """Wrap the function ``where`` names so that its first call in ``phase`` sends ``signum`` to this process."""
    import importlib

    module_name, class_name, name = where
    module = importlib.import_module(module_name)
    owner = getattr(module, class_name) if class_name else module
    original = getattr(owner, name)
    sent: list[bool] = []

    def wrapped(*args, **kwargs):
        trainer = getattr(args[0], "_trainer", None) if class_name == "ZooModule" else None
        sanity = bool(trainer is not None and trainer.sanity_checking)
        if not sent and (phase != "sanity check" or sanity) and (phase != "validation" or not sanity):
            sent.append(True)
            os.kill(os.getpid(), signum)
        return original(*args, **kwargs)

    setattr(owner, name, wrapped)


def _signalled_zoo(phase: str | None, where: tuple | None, signum: int, argv: list[str], cwd: str, err: str) -> None:
    os.chdir(cwd)
    os.environ.update({"WANDB_MODE": "offline", "WANDB_SILENT": "true"})
    os.dup2(os.open(err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 2)
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    if phase is not None:
        _signal_on_first_call(phase, where, signum)
    from zoo.cli import main

    try:
        main(argv)
    finally:
        sys.stderr.flush()


def zoo(
    tmp_path: Path, *argv: str, phase: str | None = None, where: tuple | None = None, signum: int = signal.SIGTERM
) -> tuple[int, str]:
    """``zoo ARGV`` in a forked process that signals itself on entering ``where``: its exit status and stderr."""
    err = tmp_path / f"zoo.{len(list(tmp_path.glob('zoo.*.err')))}.err"
    process = fork_server().Process(
        target=_signalled_zoo, args=(phase, where, int(signum), list(argv), str(tmp_path), str(err))
    )
    process.start()
    process.join(timeout=300)
    return process.exitcode, err.read_text()


def train(
    tmp_path: Path,
    run_dir: Path,
    *args: str,
    phase: str | None = None,
    signum: int = signal.SIGTERM,
    where: tuple[str, str | None, str] | None = None,
) -> tuple[int, str]:
    """``zoo train TINY ARGS hydra.run.dir=RUN_DIR`` (or ``zoo train resume=...``) signalled in ``phase`` (on
    entering ``where``, by default the phase's function in :data:`PHASES`)."""
    resuming = any(a.startswith("resume=") for a in args)
    overrides = list(args) if resuming else [*TINY, *args, f"hydra.run.dir={run_dir}"]
    return zoo(tmp_path, "train", *overrides, phase=phase, where=where or PHASES.get(phase), signum=signum)


def summary(run_dir: Path) -> dict:
    return json.loads((run_dir / "summary.json").read_text())


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
@pytest.mark.parametrize("phase", list(PHASES))
def test_a_signal_in_any_phase_exits_128_plus_it_with_one_line_and_an_interrupted_record(tmp_path, phase, signum):
    run_dir = tmp_path / "run"
    status, err = train(tmp_path, run_dir, phase=phase, signum=signum)

    assert status == 128 + signum, err[-3000:]
    last = err.strip().splitlines()[-1]
    name = signal.Signals(signum).name
    assert last.startswith(f"zoo: interrupted: {name} during {phase}"), last
    assert last.endswith(f"continue with: zoo train resume={run_dir}"), last
    assert "Traceback" not in err and "Received SIGTERM" not in err
    record = summary(run_dir)
    assert (record["status"], record["phase"]) == ("interrupted", phase)
    assert not (run_dir / ".zoo.lock").exists()


def test_a_signal_before_anything_is_written_says_to_run_the_command_again(tmp_path):
    """Reading the data comes before the run's first file: nothing to resume, the same command starts it."""
    status, err = train(
        tmp_path, tmp_path / "run", phase="setup", where=("zoo.data.datamodule", "ZooDataModule", "read")
    )
    assert status == 128 + signal.SIGTERM
    assert (
        err.strip().splitlines()[-1].endswith(f"nothing was written in {tmp_path / 'run'}; run the same command again")
    )
    assert not (tmp_path / "run").exists() or not any((tmp_path / "run").iterdir())


@pytest.mark.parametrize("phase", ["setup", "sanity check"])
def test_a_run_stopped_before_its_first_checkpoint_starts_again_in_place(tmp_path, phase, finished_run):
    run_dir = tmp_path / "run"
    assert train(tmp_path, run_dir, phase=phase)[0] == 128 + signal.SIGTERM
    assert not (run_dir / "checkpoints" / "last.ckpt").exists()

    status, err = train(tmp_path, run_dir, f"resume={run_dir}")
    assert status == 0, err[-3000:]
    record = summary(run_dir)
    assert record["status"] == "finished" and "resumes" not in record and len(record["segments"]) == 1
    assert record["test"] == summary(finished_run)["test"]  # the same run as one never stopped


def test_a_run_stopped_while_testing_resumes_by_testing(tmp_path, finished_run):
    """The training record is kept (its segment listed, its seconds counted); only the test runs again."""
    run_dir = tmp_path / "run"
    assert train(tmp_path, run_dir, phase="test")[0] == 128 + signal.SIGTERM
    stopped = summary(run_dir)
    assert stopped["trained"] and stopped["resumable"] is False and stopped["segments"][0]["ended"] == "trained"

    status, err = train(tmp_path, run_dir, f"resume={run_dir}")
    assert status == 0, err[-3000:]
    assert "only the test runs" in (run_dir / "train.log").read_text()
    record, straight = summary(run_dir), summary(finished_run)
    assert record["status"] == "finished" and record["test"] == straight["test"]
    assert (record["steps"], record["best_val"], record["train_tokens"]) == (
        straight["steps"],
        straight["best_val"],
        straight["train_tokens"],
    )
    first, retest = record["segments"]
    assert (first["to_step"], retest["from_step"], retest["to_step"]) == (straight["steps"],) * 3
    assert record["train_seconds"] == pytest.approx(first["train_seconds"] + retest["train_seconds"], abs=0.011)
    assert record["peak_memory_mb"] >= first["peak_memory_mb"]


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_while_predicting_exits_128_plus_it_with_one_line(tmp_path, finished_run, signum):
    status, err = zoo(
        tmp_path,
        "translate",
        str(finished_run),
        "ein satz",
        phase="prediction",
        signum=signum,
        where=("zoo.inference.predictor", "Predictor", "predictions"),
    )
    assert status == 128 + signum
    assert err.strip() == f"zoo: interrupted: {signal.Signals(signum).name} during zoo translate"


def test_a_signal_while_the_config_is_composed_exits_128_plus_it_with_one_line(tmp_path):
    status, err = zoo(
        tmp_path,
        "train",
        *TINY,
        f"hydra.run.dir={tmp_path / 'run'}",
        phase="composition",
        where=("zoo.cli.train", None, "check_composition"),
    )
    assert status == 128 + signal.SIGTERM
    assert err.strip() == "zoo: interrupted: SIGTERM during zoo train" and not (tmp_path / "run").exists()


def _zoo_with(settings: list[tuple[str, str, object]], env: dict[str, str], argv: list[str], cwd: str, err: str):
    """``zoo ARGV`` with ``env`` added and each ``(module, name, value)`` of ``settings`` set first."""
    import importlib

    os.environ.update(env)
    for module, name, value in settings:
        setattr(importlib.import_module(module), name, value)
    _signalled_zoo(None, None, 0, argv, cwd, err)


def started(tmp_path: Path, *argv: str, settings=(), env=None, ready: str = "") -> tuple[multiprocessing.Process, Path]:
    """``zoo ARGV`` started in a forked process (see :func:`zoo`), once its stderr shows ``ready``; and that file."""
    err = tmp_path / "zoo.started.err"
    process = fork_server().Process(
        target=_zoo_with, args=(list(settings), env or {}, list(argv), str(tmp_path), str(err))
    )
    process.start()
    deadline = time.monotonic() + 120
    while not (err.is_file() and ready in err.read_text()):
        assert process.is_alive() and time.monotonic() < deadline, err.read_text() if err.is_file() else ""
        time.sleep(0.1)
    return process, err


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, ended but not yet reaped by its parent, does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except FileNotFoundError:
        return False


def ended(pids: list[int], within: float = 10) -> bool:
    deadline = time.monotonic() + within
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    return not any(alive(pid) for pid in pids)


def ranks_of(run_dir: Path) -> list[int]:
    """The DDP ranks Lightning started into ``run_dir`` (their command line names it and the rank's job name)."""
    ranks = []
    for proc in Path("/proc").iterdir():
        try:
            command = (proc / "cmdline").read_bytes().decode(errors="replace") if proc.name.isdigit() else ""
        except OSError:  # ended meanwhile
            continue
        if str(run_dir) in command and "train_ddp_process" in command:
            ranks.append(int(proc.name))
    return ranks


def test_a_signal_while_ddp_waits_for_other_nodes_ends_the_job_and_its_ranks(tmp_path):
    """trainer.num_nodes=2 started by hand on one node: both ranks wait in DDP's rendezvous (native code, where no
    Python handler runs) for a node that never comes. SIGTERM ends the job anyway, with the one line, and its rank."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    run_dir = tmp_path / "run"
    process, err = started(
        tmp_path,
        "train",
        *TINY,
        "trainer=ddp_cpu",
        "trainer.num_nodes=2",
        f"hydra.run.dir={run_dir}",
        settings=[("zoo.run.interruptions", "ANSWER_SECONDS", 1.0)],
        env={"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "NODE_RANK": "0"},
        ready="MEMBER: 2/4",
    )
    ranks = ranks_of(run_dir)
    assert len(ranks) == 1
    os.kill(process.pid, signal.SIGTERM)
    process.join(timeout=30)

    assert process.exitcode == 128 + signal.SIGTERM
    lines = [line for line in err.read_text().splitlines() if not line.startswith("Initializing distributed")]
    assert lines == [
        "zoo: interrupted: SIGTERM during setup at step 0; no checkpoint written yet: resuming starts it again in "
        f"place; continue with: zoo train resume={run_dir}"
    ]
    assert ended(ranks)


def _preparing_for_ever(cfg, inputs, folder) -> None:
    """In place of the prepare worker's work: say it started (its pid), then work for a minute."""
    Path("worker.pid").write_text(str(os.getpid()))
    time.sleep(60)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_while_zoo_prepare_works_stops_its_worker_at_once_with_one_line(tmp_path, signum):
    """SIGTERM to the command alone (kill PID), and SIGINT to the command and its worker (a terminal's Ctrl-C)."""
    process, err = started(
        tmp_path,
        "prepare",
        *TINY,
        settings=[("zoo.data.prepare", "_prepare", _preparing_for_ever)],
        env={"ZOO_CACHE_DIR": str(tmp_path / "cache")},
    )
    pid = tmp_path / "worker.pid"
    while not pid.is_file() or not pid.read_text():
        assert process.is_alive()
        time.sleep(0.1)
    worker = int(pid.read_text())
    os.kill(process.pid, signum)
    if signum == signal.SIGINT:
        os.kill(worker, signum)
    process.join(timeout=10)

    assert process.exitcode == 128 + signum
    assert err.read_text().strip() == f"zoo: interrupted: {signal.Signals(signum).name} during zoo prepare"
    assert ended([worker], within=1)
