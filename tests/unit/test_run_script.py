"""``./run``, the first command a new user types: which extras it installs and when, and what ``./run train`` trains.

The script runs for real, in bash, with a stand-in ``python`` on the PATH (an active virtual environment, so the
script uses it) that answers ``sys.prefix`` with a temporary folder and writes every other command it is given to a
log: installs and zoo's own commands are seen without installing or training anything.
"""

from __future__ import annotations

import os
import subprocess

import pytest
from helpers import ROOT

STAND_IN = """#!/usr/bin/env bash
if [ "$1" = -c ]; then echo "$PREFIX"; else echo "$*" >> "$PREFIX/log"; fi
"""


@pytest.fixture
def run(tmp_path):
    """``run(*args)`` runs ``./run args`` with the stand-in python; returns the commands it gave python, one a line."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python").write_text(STAND_IN)
    (bin_dir / "python").chmod(0o755)
    env = dict(
        os.environ, VIRTUAL_ENV=str(tmp_path), PREFIX=str(tmp_path), PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}"
    )

    def run(*args: str) -> list[str]:
        log = tmp_path / "log"
        log.unlink(missing_ok=True)
        proc = subprocess.run([str(ROOT / "run"), *args], cwd=tmp_path, env=env, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        run.stderr = proc.stderr
        return log.read_text().splitlines() if log.exists() else []

    return run


def zoo_installs(commands: list[str]) -> list[str]:
    return [c for c in commands if c.startswith("-m uv pip install") and f"-e {ROOT}[" in c]


def trained(commands: list[str]) -> str:
    (line,) = [c for c in commands if c.startswith("-m zoo.cli train")]
    return line.removeprefix("-m zoo.cli train").strip()


def test_train_keeps_the_gru_recipe_under_other_arguments(run):
    assert trained(run("train", "trainer.cpu_threads=1", "seed=2")) == "model=gru trainer.cpu_threads=1 seed=2"


def test_train_with_a_model_trains_that_recipe(run):
    assert trained(run("train", "seed=2", "model=lstm")) == "seed=2 model=lstm"


def test_train_with_model_none_trains_the_plain_defaults(run):
    assert trained(run("train", "model=none", "seed=2")) == "seed=2"


def test_switching_commands_installs_each_extra_once(run):
    installs = [zoo_installs(run(*command)) for command in (["docs", "build"], ["zoo", "--version"], ["train"])]
    assert [len(i) for i in installs] == [1, 0, 0], installs
    assert installs[0][0].endswith("[docs,parallel,report]")
    (tests,) = zoo_installs(run("test", "-q"))
    assert tests.endswith("[dev,docs,parallel,report]")
    for command in (["zoo", "list"], ["docs", "build"], ["train"], ["test"]):
        assert zoo_installs(run(*command)) == [], f"./run {' '.join(command)} installed again"


def test_the_set_up_says_how_long_it_took(run):
    run("zoo", "--version")
    assert "zoo is set up (" in run.stderr and " s)" in run.stderr
    run("zoo", "--version")
    assert "setting up" not in run.stderr
