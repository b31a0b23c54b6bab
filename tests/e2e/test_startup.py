"""The commands a new user types first answer without loading what they do not need: ``zoo --help``, ``zoo
--version``, ``zoo list`` and ``zoo train --help`` import neither torch nor Lightning nor a plugin (the registry's
cached index stands in, :mod:`zoo.registry.index`), and a refused setting answers before any of them loads.

What a process imported is read from ``python -X importtime``. How long they take is measured by
benchmarks/startup.py, not here: the load of a shared machine would make a timed test fail at random."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import write_plugin_folder

pytestmark = pytest.mark.slow

#: What these commands must not load: seconds of imports each on a busy machine.
HEAVY = ("torch", "lightning", "zoo_plugins")


def zoo(*args: str, cache: Path, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    """``zoo ARGS`` in a fresh interpreter that reports its imports on stderr, with ``cache`` as its cache folder."""
    full_env = {k: v for k, v in os.environ.items() if k != "ZOO_PLUGIN_DIRS"} | {"ZOO_CACHE_DIR": str(cache)}
    command = [sys.executable, "-X", "importtime", "-m", "zoo.cli", *args]
    return subprocess.run(command, cwd=cwd, env=full_env | (env or {}), capture_output=True, text=True, timeout=600)


def imported(proc: subprocess.CompletedProcess) -> set[str]:
    return {line.rsplit("|", 1)[1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    """A cache folder holding the registry's index, as after any first command."""
    folder = tmp_path_factory.mktemp("cache")
    assert zoo("list", cache=folder, cwd=folder).returncode == 0
    return folder


@pytest.mark.parametrize("args", [["--help"], ["--version"], ["list"], ["train", "--help"]], ids=" ".join)
def test_answers_without_torch_lightning_or_a_plugin(args, cache, tmp_path):
    proc = zoo(*args, cache=cache, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert not sorted(m for m in imported(proc) if m.split(".")[0] in HEAVY)


def test_a_refused_setting_answers_before_torch_lightning_or_a_plugin_loads(cache, tmp_path):
    """The chosen components' configs come from their modules of their own (``rnn_config``), which import no torch."""
    proc = zoo("train", "encoder.hidden_size=0", cache=cache, cwd=tmp_path)
    assert "zoo: error: encoder.hidden_size=0 must be >= 1" in proc.stderr
    assert not sorted(m for m in imported(proc) if m.split(".")[0] in HEAVY and not m.endswith("_config"))


def test_the_help_prints_the_config_a_job_composes(cache, tmp_path):
    """Its config comes from the index's stand-ins, the job's from the plugins' own dataclasses."""
    shown = zoo("train", "--help", "model=lstm", cache=cache, cwd=tmp_path).stdout
    job = zoo("train", "--cfg", "job", "model=lstm", cache=cache, cwd=tmp_path).stdout
    assert "name: lstm" in job and job.strip() in shown


def test_a_missing_plugin_folder_is_refused_though_the_index_is_made(cache, tmp_path):
    proc = zoo("list", cache=cache, cwd=tmp_path, env={"ZOO_PLUGIN_DIRS": str(tmp_path / "gone")})
    assert proc.returncode == 1 and f"zoo: error: plugin folder {tmp_path / 'gone'} does not exist" in proc.stderr


def test_an_edited_plugin_is_listed_as_it_is_now(tmp_path):
    folder = write_plugin_folder(tmp_path / "my_plugins")
    env = {"ZOO_PLUGIN_DIRS": str(folder)}
    listed = zoo("list", "attention", "--filter", "distance", cache=tmp_path / "cache", cwd=tmp_path, env=env).stdout
    assert "Negative squared Euclidean distance" in listed
    plugin = folder / "distance.py"
    plugin.write_text(plugin.read_text().replace("Negative squared Euclidean distance", "Minus the squared distance"))
    listed = zoo("list", "attention", "--filter", "distance", cache=tmp_path / "cache", cwd=tmp_path, env=env).stdout
    assert "Minus the squared distance" in listed
