"""Run directories are never damaged, and a run can be used again from anywhere.

A refused start (a folder holding a run or anything else, another process writing it, a bad config)
changes nothing in an existing folder, Hydra's `.hydra/` included: every file's bytes and every
modification time are compared. Two processes started into one new folder: one runs, the other is
refused. The lock dies with its process: a live holder blocks, a killed one does not. A run trained
with a folder plugin and a package plugin is translated from another folder without `ZOO_PLUGIN_DIRS`,
from the sources copied into the run when the folder is gone, and a plugin that cannot be found is one
line saying where it came from.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers import TINY, ForkedZoo, fork_zoo
from helpers.plugins import ENCODER_PLUGIN, SCORER_PLUGIN

from zoo.config.schema import ResumeMode
from zoo.run.claim import ForeignDirectory, Lock, RunDirectoryInUse, check_run_dir, lock_held, locked_message
from zoo.run.layout import LOCK_FILE
from zoo.run.resume import Verdict

pytestmark = pytest.mark.slow


def snapshot(folder: Path) -> dict[str, tuple]:
    """Every path under ``folder`` (itself included): modification time and, for a file, its bytes' hash."""
    state = {}
    for path in sorted([folder, *folder.rglob("*")]):
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None
        state[str(path.relative_to(folder))] = (path.lstat().st_mtime_ns, digest)
    return state


def refusal(proc: subprocess.CompletedProcess) -> str:
    """The one `zoo: error:` line of a refused start (exit status 1, no traceback)."""
    errors = [line for line in proc.stderr.splitlines() if line.startswith("zoo: error:")]
    assert proc.returncode == 1 and len(errors) == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return errors[0]


# ------------------------------------------------------------------------------------ refused starts


def test_an_existing_run_is_refused_and_left_byte_for_byte(trained_run, tmp_path):
    before = snapshot(trained_run)
    assert {".hydra/config.yaml", ".hydra/hydra.yaml", ".hydra/overrides.yaml"} <= set(before)
    proc = fork_zoo("train", *TINY, "seed=99", f"hydra.run.dir={trained_run}", cwd=tmp_path, check=False)
    assert "already holds a run" in refusal(proc)
    assert snapshot(trained_run) == before


def test_a_folder_holding_something_else_is_refused_and_left_as_it_was(tmp_path):
    mine = tmp_path / "mine"
    (mine / "notes").mkdir(parents=True)
    (mine / "config.yaml").write_text("my: own config\n")
    (mine / "notes" / "todo.txt").write_text("keep me\n")
    before = snapshot(mine)
    proc = fork_zoo("train", *TINY, f"hydra.run.dir={mine}", cwd=tmp_path, check=False)
    assert "not a zoo run (config.yaml, notes)" in refusal(proc)
    assert snapshot(mine) == before


def test_a_refused_config_leaves_an_existing_empty_folder_untouched(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    before = snapshot(empty)
    proc = fork_zoo("train", *TINY, "decode.beam_size=0", f"hydra.run.dir={empty}", cwd=tmp_path, check=False)
    assert "decode.beam_size=0 must be >= 1" in refusal(proc)
    assert snapshot(empty) == before  # not even a lock file came and went (the folder's mtime)


def test_a_sweep_into_a_folder_holding_a_sweep_is_refused_before_hydra_writes_there(tmp_path):
    sweep = tmp_path / "sweep"
    (sweep / "0").mkdir(parents=True)
    (sweep / "multirun.yaml").write_text("hydra: {}\n")
    (sweep / "0" / "summary.json").write_text("{}")
    before = snapshot(sweep)
    proc = fork_zoo("train", "-m", *TINY, "seed=1,2", f"hydra.sweep.dir={sweep}", cwd=tmp_path, check=False)
    assert "already holds a sweep" in refusal(proc)
    assert snapshot(sweep) == before


def test_two_runs_started_into_one_new_folder_one_runs_the_other_is_refused(tmp_path):
    run_dir = tmp_path / "shared"
    procs = {
        seed: ForkedZoo("train", *TINY, f"seed={seed}", f"hydra.run.dir={run_dir}", cwd=tmp_path) for seed in (11, 22)
    }
    results = {seed: proc.wait(check=False) for seed, proc in procs.items()}
    winners = [seed for seed, done in results.items() if done.returncode == 0]
    assert len(winners) == 1, {seed: (done.returncode, done.stderr[-3000:]) for seed, done in results.items()}
    (winner,) = winners
    (loser,) = set(results) - {winner}
    errors = [line for line in results[loser].stderr.splitlines() if line.startswith("zoo: error:")]
    assert results[loser].returncode == 1 and len(errors) == 1, results[loser].stderr[-3000:]
    assert "being written by another zoo process" in errors[0] or "already holds a run" in errors[0]
    # Nothing mixed: the config, Hydra's record and the summary are all the winner's.
    assert json.loads((run_dir / "summary.json").read_text())["seed"] == winner
    assert f"\nseed: {winner}\n" in (run_dir / "config.yaml").read_text()
    assert f"- seed={winner}" in (run_dir / ".hydra" / "overrides.yaml").read_text()
    assert not (run_dir / LOCK_FILE).exists(), "the lock is removed when the run ends"


# ----------------------------------------------------------------------------------- the lock, in-process


def test_a_lock_is_exclusive_and_leaves_nothing_behind(tmp_path):
    lock = Lock(tmp_path, "run directory")
    with pytest.raises(RunDirectoryInUse, match=f"being written by another zoo process \\(pid {os.getpid()}"):
        Lock(tmp_path, "run directory")
    with pytest.raises(RunDirectoryInUse, match="being written"):
        check_run_dir(tmp_path)
    lock.release()
    assert list(tmp_path.iterdir()) == []
    check_run_dir(tmp_path)  # empty: fine
    check_run_dir(tmp_path / "new")  # not there yet: fine


# Takes the lock on the folder named by argv[1], says so, and holds it until killed.
HOLD_LOCK = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from zoo.run.claim import Lock
    Lock(Path(sys.argv[1]), "run directory")
    print("locked", flush=True)
    time.sleep(600)
""")


def test_a_shared_lock_admits_the_workers_of_a_search_and_keeps_out_anything_else(tmp_path):
    """A search's sweep lock is shared by its workers; a plain sweep or run (exclusive) is refused while one lives."""
    workers = [Lock(tmp_path, "sweep directory", shared=True) for _ in range(2)]
    assert lock_held(tmp_path / LOCK_FILE) and not lock_held(tmp_path / LOCK_FILE, shared_too=False)
    with pytest.raises(RunDirectoryInUse, match="being written"):
        Lock(tmp_path, "sweep directory")
    for worker in workers:
        worker.release()
    assert not lock_held(tmp_path / LOCK_FILE)
    Lock(tmp_path, "sweep directory").release()


def test_a_live_holder_in_another_process_blocks_and_a_killed_one_does_not(tmp_path):
    """The lock dies with its process: a run killed with SIGKILL (no chance to clean up) is resumed at once."""
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    (run / "checkpoints" / "last.ckpt").write_bytes(b"the state it stopped at")
    (run / "summary.json").write_text(json.dumps({"status": "running"}))
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(run)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "locked\n"
        with pytest.raises(RunDirectoryInUse, match=f"being written by another zoo process \\(pid {holder.pid},"):
            check_run_dir(run, mode=ResumeMode.auto)
        with pytest.raises(RunDirectoryInUse, match=f"pid {holder.pid}"):
            Lock(run, "run directory")
    finally:
        holder.kill()
        holder.wait()
        holder.stdout.close()
    assert (run / LOCK_FILE).exists(), "SIGKILL leaves the file behind"
    assert check_run_dir(run, mode=ResumeMode.auto) is Verdict.resume
    lock = Lock(run, "run directory")
    assert json.loads((run / LOCK_FILE).read_text())["pid"] == os.getpid()
    lock.release()
    assert not (run / LOCK_FILE).exists()


def test_a_holder_on_another_host_is_named(tmp_path):
    (tmp_path / LOCK_FILE).write_text(json.dumps({"pid": 7, "host": "elsewhere", "started": "then"}))
    assert locked_message(tmp_path, "run directory") == (
        f"run directory {tmp_path} is being written by process 7 on host elsewhere (started then); choose a new folder"
    )


def test_what_a_folder_holds_decides(tmp_path):
    (tmp_path / "summary.json").write_text("{}")
    with pytest.raises(RunDirectoryInUse, match="already holds a run"):
        check_run_dir(tmp_path)
    (tmp_path / "summary.json").unlink()
    (tmp_path / ".hydra").mkdir()  # what Hydra left before zoo wrote it itself
    with pytest.raises(ForeignDirectory, match=r"not a zoo run \(.hydra\)"):
        check_run_dir(tmp_path)


# ------------------------------------------------------------------------- a run used from anywhere

# A folder plugin (the scorer) and a package plugin (the encoder), from the third-party plugin test.
FOLDER_PLUGIN, PACKAGE_PLUGIN = SCORER_PLUGIN, ENCODER_PLUGIN


def install_distribution(site: Path, package: str, version: str, code: str) -> None:
    """A package plus its .dist-info (with a `zoo.plugins` entry point): what pip would leave."""
    (site / package).mkdir(parents=True)
    (site / package / "__init__.py").write_text(textwrap.dedent(code))
    info = site / f"{package}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(f"[zoo.plugins]\n{package} = {package}\n")


def test_a_run_with_folder_and_package_plugins_is_used_from_anywhere(tmp_path):
    work, elsewhere = tmp_path / "work", tmp_path / "elsewhere"
    (work / "local_plugins").mkdir(parents=True)
    elsewhere.mkdir()
    (work / "local_plugins" / "negdist.py").write_text(textwrap.dedent(FOLDER_PLUGIN))
    site = tmp_path / "site"
    install_distribution(site, "bagenc_zoo", "0.3", PACKAGE_PLUGIN)
    with_package = {"PYTHONPATH": str(site), "ZOO_PLUGIN_DIRS": None}
    run_dir = work / "run"
    fork_zoo(
        "train",
        *TINY,
        "plugin_dirs=[local_plugins]",
        "attention=negdist",
        "encoder=bag",
        "hydra.run.dir=run",
        cwd=work,
        env=with_package,
    )

    # What the run recorded: the folder (absolute), its sources, and where every component came from.
    folder = str(work / "local_plugins")
    assert f"plugin_dirs:\n- {folder}\n" in (run_dir / "config.yaml").read_text()
    assert (run_dir / "plugins" / "local_plugins" / "negdist.py").read_text() == textwrap.dedent(FOLDER_PLUGIN)
    provenance = json.loads((run_dir / "provenance.json").read_text())
    origin = {c["kind"]: c for c in provenance["components"]}
    assert origin["attention"]["folder"] == folder and origin["attention"]["file"] == "negdist.py"
    assert (origin["encoder"]["package"], origin["encoder"]["version"]) == ("bagenc_zoo", "0.3")
    assert origin["decoder"]["package"] == "zoo" and origin["decoder"]["module"].startswith("zoo_plugins.")

    # From another folder, without ZOO_PLUGIN_DIRS.
    first = fork_zoo("translate", str(run_dir), "the dog sees the cat", cwd=elsewhere, env=with_package).stdout

    # The package missing: one line naming the component, its package and version, and how to get it.
    proc = fork_zoo("translate", str(run_dir), "the dog", cwd=elsewhere, env={"ZOO_PLUGIN_DIRS": None}, check=False)
    line = refusal(proc)
    assert "encoder 'bag'" in line and "bagenc_zoo" in line and "pip install 'bagenc_zoo==0.3'" in line

    # The folder gone: the sources copied into the run stand in for it.
    (work / "local_plugins").rename(tmp_path / "moved_away")
    again = fork_zoo("translate", str(run_dir), "the dog sees the cat", cwd=elsewhere, env=with_package)
    assert again.stdout == first and "using the copy of its sources" in again.stderr

    # Neither the folder nor a copy: one line naming the plugin and its folder.
    bare = tmp_path / "bare"
    shutil.copytree(run_dir, bare)
    shutil.rmtree(bare / "plugins")
    line = refusal(fork_zoo("translate", str(bare), "the dog", cwd=elsewhere, env=with_package, check=False))
    assert "attention 'negdist'" in line and folder in line and "negdist.py" in line
