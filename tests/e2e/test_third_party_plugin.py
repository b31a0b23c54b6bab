"""A third-party package, written here into a temp folder, plugs in through the `zoo.plugins` entry point."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from helpers import TINY, fork_zoo
from helpers.plugins import PLUGIN

pytestmark = pytest.mark.slow


BROKEN = "raise RuntimeError('boom')\n"


def install_fake_distribution(site, package: str, code: str) -> None:
    """A package plus a .dist-info folder: exactly what pip would leave, minus pip."""
    (site / package).mkdir(parents=True)
    (site / package / "__init__.py").write_text(code)
    info = site / f"{package}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[zoo.plugins]\n{package} = {package}\n")


def test_entry_point_plugin_is_listed_and_trains(tmp_path):
    site = tmp_path / "site"
    install_fake_distribution(site, "thirdparty_zoo", textwrap.dedent(PLUGIN))
    env = {"PYTHONPATH": str(site)}
    listing = fork_zoo("list", cwd=tmp_path, env=env).stdout
    assert "negdist" in listing and "[thirdparty_zoo]" in listing
    assert "bag" in listing and "hidden_size: int = 64" in listing

    run_dir = tmp_path / "run"
    overrides = [o for o in TINY if not o.startswith("encoder.")]
    fork_zoo("train", "attention=negdist", "encoder=bag", *overrides, f"hydra.run.dir={run_dir}", cwd=tmp_path, env=env)
    components = json.loads((run_dir / "summary.json").read_text())["components"]
    assert components["attention"]["name"] == "negdist" and components["encoder"]["name"] == "bag"


def test_broken_entry_point_is_named_in_the_error(tmp_path):
    site = tmp_path / "site"
    install_fake_distribution(site, "broken_zoo", BROKEN)
    proc = fork_zoo("list", cwd=tmp_path, env={"PYTHONPATH": str(site)}, check=False)
    assert proc.returncode == 1
    assert "broken_zoo" in proc.stderr and "RuntimeError: boom" in proc.stderr


def plugin_folder(path, **files: str):
    """A plugin folder holding ``files`` (stem -> source)."""
    path.mkdir(parents=True)
    for stem, code in files.items():
        (path / f"{stem}.py").write_text(code)
    return path


def test_plugin_folder_from_env_and_override(tmp_path):
    folder = plugin_folder(tmp_path / "local_plugins", negdist=textwrap.dedent(PLUGIN))
    listing = fork_zoo("list", "attention", cwd=tmp_path, env={"ZOO_PLUGIN_DIRS": str(folder)}).stdout
    assert "negdist" in listing and "[zoo.registry.folders.local_plugins.negdist]" in listing
    job = fork_zoo("train", f"plugin_dirs=[{folder}]", "attention=negdist", "--cfg", "job", cwd=tmp_path).stdout
    assert "name: negdist" in job


def test_folder_plugin_module_imports_in_a_fresh_process_from_the_environment(tmp_path):
    """What a DDP rank or a sweep worker does when it unpickles a config that names a folder plugin's class."""
    folder = plugin_folder(tmp_path / "local_plugins", negdist=textwrap.dedent(PLUGIN))
    probe = "import zoo.registry.folders.local_plugins.negdist as m; print(m.NegativeDistance.registry_entry.name)"
    env = {**os.environ, "ZOO_PLUGIN_DIRS": str(folder)}
    proc = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip() == "negdist", proc.stderr[-2000:]


def test_same_folder_twice_is_harmless(tmp_path):
    folder = plugin_folder(tmp_path / "local_plugins", negdist=textwrap.dedent(PLUGIN))
    env = {"ZOO_PLUGIN_DIRS": os.pathsep.join([str(folder), "local_plugins"])}
    job = fork_zoo("train", "plugin_dirs=[local_plugins]", "attention=negdist", "--cfg", "job", cwd=tmp_path, env=env)
    assert "name: negdist" in job.stdout


def test_two_folders_with_one_name_are_a_clear_error(tmp_path):
    first = plugin_folder(tmp_path / "a" / "local_plugins", negdist=textwrap.dedent(PLUGIN))
    second = plugin_folder(tmp_path / "b" / "local_plugins")
    env = {"ZOO_PLUGIN_DIRS": os.pathsep.join([str(first), str(second)])}
    proc = fork_zoo("list", cwd=tmp_path, env=env, check=False)
    assert proc.returncode == 1 and "rename one" in proc.stderr and len(proc.stderr.splitlines()) == 1


def test_broken_folder_plugin_names_its_file(tmp_path):
    folder = plugin_folder(tmp_path / "local_plugins", broken=BROKEN)
    proc = fork_zoo("list", cwd=tmp_path, env={"ZOO_PLUGIN_DIRS": str(folder)}, check=False)
    assert proc.returncode == 1 and len(proc.stderr.splitlines()) == 1
    assert str(folder / "broken.py") in proc.stderr and "RuntimeError: boom" in proc.stderr


def test_missing_plugin_folder_is_a_clear_error(tmp_path):
    proc = fork_zoo("list", cwd=tmp_path, env={"ZOO_PLUGIN_DIRS": str(tmp_path / "nope")}, check=False)
    assert proc.returncode == 1 and "does not exist" in proc.stderr


@pytest.mark.xdist_group("plugin_run")  # with the battery's case that copies it: the run is made once
def test_a_task_with_its_own_kind_of_source_trains_compares_reports_and_predicts(plugin_run, tmp_path, monkeypatch):
    """The plugin_run fixture (conftest.py) trained the folder plugins' `sorting` task (numbers in, numbers sorted
    out): nothing in zoo names it, its source kind, its breakdown or its command."""
    summary = json.loads((plugin_run / "summary.json").read_text())
    assert summary["status"] == "finished" and summary["task"] == "sorting"
    assert set(summary["breakdowns"]["exact_by_length"]) <= {"1-3", "4-6"}

    table = fork_zoo("compare", str(plugin_run), "--html", str(tmp_path / "report.html"), cwd=tmp_path).stdout
    assert "exact 1-3" in table and "chrf" in table
    assert "exact by length" in (tmp_path / "report.html").read_text()

    predicted = fork_zoo("predict", str(plugin_run), "3 1 2", "two one", cwd=tmp_path, check=False)
    assert predicted.returncode == 1 and len(predicted.stdout.splitlines()) == 2
    assert predicted.stdout.splitlines()[1] == "" and predicted.stderr.splitlines()[-1].startswith(
        "zoo: error: command-line list 2: 'two one' is not a list of whole numbers from 0 to 9; space them"
    )
    # Its own command, found through the run's copy of the plugin folder (the folder itself is gone).
    sorted_ = fork_zoo("sort", str(plugin_run), cwd=tmp_path, stdin="5 4\n\n7 7 1\n").stdout.split("\n")
    assert len(sorted_) == 4 and sorted_[1] == "" and sorted_[0] and sorted_[2]
    refused = fork_zoo("translate", str(plugin_run), "5 4", cwd=tmp_path, check=False)
    assert refused.returncode == 1 and "reads numbers sources, not text; use zoo sort with it" in refused.stderr

    import zoo

    # zoo.load mounts the run's plugin folder and exports it to $ZOO_PLUGIN_DIRS: kept from the processes that
    # later tests start, where another folder of the same name would clash with it
    monkeypatch.setenv("ZOO_PLUGIN_DIRS", os.environ.get("ZOO_PLUGIN_DIRS", ""))
    assert zoo.load(plugin_run).sort(["5 4"]) == sorted_[:1], "from Python under the task's command name too"
