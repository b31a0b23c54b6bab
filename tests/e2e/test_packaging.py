"""The project builds as a normal wheel that ships the built-in plugins (plugins/) as `zoo_plugins` and the Hydra
configs (conf/) as `zoo.conf`, and that wheel works on its own: installed into a fresh virtual environment
and run from a folder outside the checkout."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from helpers import ROOT, TINY, fork_zoo
from omegaconf import OmegaConf

pytestmark = pytest.mark.slow

# What a fresh clone would not hold: build leftovers, local environments and run outputs.
NOT_SOURCE = (
    ".git",
    ".venv",
    "build",
    "dist",
    "*.egg-info",
    "__pycache__",
    "outputs",
    "multirun",
    "wandb",
    ".pytest_cache",
)

# The pages' skeletons, CSS and scripts, inlined into every explorer and report written.
PAGE_ASSETS = (
    "zoo/viz/assets/explorer.html",
    "zoo/viz/assets/explorer.css",
    "zoo/viz/assets/explorer.js",
    "zoo/report/assets/report.html",
    "zoo/report/assets/report.css",
    "zoo/report/assets/report.js",
    "zoo/report/assets/error.html",
)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel, built from a clean copy of the checkout: a stale build/ folder cannot hide a missing package."""
    source = tmp_path_factory.mktemp("source") / "zoo"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(*NOT_SOURCE))
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", str(source), "-w", str(out)],
        check=True,
        capture_output=True,
    )
    (built,) = out.glob("zoo-*.whl")
    return built


def in_checkout(path: str | Path) -> bool:
    """Whether ``path`` is the checkout or a folder of it, other than the running virtual environment."""
    resolved = Path(path).resolve()
    return resolved.is_relative_to(ROOT) and not resolved.is_relative_to(Path(sys.prefix).resolve())


def natural_sys_path(python: str | Path) -> list[str]:
    """The sys.path an interpreter starts with, away from the checkout and without PYTHONPATH."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    probe = "import json, sys; print(json.dumps(sys.path[1:]))"  # [0] is the script's folder
    out = subprocess.run([str(python), "-c", probe], check=True, capture_output=True, text=True, env=env, cwd="/")
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Path:
    """A fresh virtual environment holding only the wheel; its dependencies come from the test's environment.

    Installing torch and Lightning anew would take minutes, so a ``.pth`` file appends the folders this
    interpreter imports its dependencies from to the new environment's sys.path, after the new
    environment's own site-packages (so the wheel's ``zoo`` wins). Plain path lines do not run the ``.pth``
    files found there, so the checkout's editable install stays invisible. The wheel goes in before the
    ``.pth`` file exists: pip then sees an empty environment and never touches the project's own zoo.
    """
    venv = tmp_path_factory.mktemp("venv") / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, capture_output=True)
    python = venv / "bin" / "python"
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", "-q", str(wheel)],
        check=True,
        capture_output=True,
    )
    own = natural_sys_path(python)
    dependencies = [p for p in natural_sys_path(sys.executable) if p not in own and not in_checkout(p)]
    site_packages = next(
        p for p in own if p.endswith("site-packages") and Path(p).resolve().is_relative_to(venv.resolve())
    )
    Path(site_packages, "zz_zoo_test_dependencies.pth").write_text("".join(f"{p}\n" for p in dependencies))
    return venv


def run_installed(venv: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    """Run a program from the fresh environment's bin/ in ``cwd``, with nothing pointing at the checkout."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "ZOO_PLUGIN_DIRS")}
    env |= {"WANDB_MODE": "offline", "WANDB_SILENT": "true", "VIRTUAL_ENV": str(venv)}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    proc = subprocess.run(
        [str(venv / "bin" / args[0]), *args[1:]], cwd=cwd, capture_output=True, text=True, env=env, timeout=600
    )
    if proc.returncode != 0:
        raise AssertionError(
            f"{' '.join(args)} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
        )
    return proc


@pytest.fixture
def outside(tmp_path) -> Path:
    """A working folder that is not inside the checkout."""
    assert not tmp_path.resolve().is_relative_to(ROOT)
    return tmp_path


def test_wheel_ships_core_configs_and_every_plugin_package(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for module in sorted((ROOT / "plugins").rglob("*.py")):
        shipped = "zoo_plugins/" + module.relative_to(ROOT / "plugins").as_posix()
        assert shipped in names, f"{module.relative_to(ROOT)} is missing from the wheel (as {shipped})"
    for module in sorted([*(ROOT / "zoo").rglob("*.py"), *(ROOT / "zoo").rglob("*.c")]):  # C: compiled where it runs
        shipped = module.relative_to(ROOT).as_posix()
        assert shipped in names, f"{shipped} is missing from the wheel"
    for config in sorted((ROOT / "conf").rglob("*.yaml")):
        shipped = "zoo/conf/" + config.relative_to(ROOT / "conf").as_posix()
        assert shipped in names, f"{config.relative_to(ROOT)} is missing from the wheel (as {shipped})"
    assert "zoo/conf/config.yaml" in names
    # The explorer's and the report's pages are package data, read with importlib.resources.
    assets = {a.relative_to(ROOT).as_posix() for a in (ROOT / "zoo").rglob("assets/*") if a.is_file()}
    assert assets >= set(PAGE_ASSETS), f"assets missing from the checkout: {set(PAGE_ASSETS) - assets}"
    for shipped in sorted(assets):
        assert shipped in names, f"{shipped} is missing from the wheel"
    top_level = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    # hydra_plugins: the namespace Hydra finds sweepers in (zoo's Optuna sweeper, hydra/sweeper=optuna)
    assert top_level == {"zoo", "zoo_plugins", "hydra_plugins"}, (
        "no generic top-level 'plugins' or 'conf' module may be installed"
    )
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    text = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert "[zoo.plugins]" in text and "builtin = zoo_plugins" in text
    assert "zoo = zoo.cli:main" in text


def test_installed_wheel_imports_from_its_own_environment(installed, outside):
    probe = (
        "import json, sys, zoo, zoo.conf, zoo_plugins\n"
        "from importlib.metadata import distribution\n"
        "print(json.dumps({'files': [zoo.__file__, zoo.conf.__file__, zoo_plugins.__file__],"
        " 'dist': str(distribution('zoo').locate_file('')), 'path': sys.path}))"
    )
    seen = json.loads(run_installed(installed, "python", "-c", probe, cwd=outside).stdout)
    for file in seen["files"]:
        assert Path(file).resolve().is_relative_to(installed.resolve()), f"{file} is not the installed wheel's"
    assert Path(seen["dist"]).resolve().is_relative_to(installed.resolve()), "zoo's metadata is not the wheel's"
    inside = [p for p in seen["path"] if p and in_checkout(p)]
    assert not inside, f"the checkout is on sys.path: {inside}"


def test_installed_wheel_draws_the_explorer_and_the_report_pages(installed, outside):
    """The pages' CSS and scripts come from the wheel's package data, inlined: no asset is left behind."""
    probe = (
        "from pathlib import Path\n"
        "from zoo.viz.explorer_page import render_page\n"
        "from zoo.report.html import render\n"
        "Path('explorer.html').write_text(render_page('probe', '{}'))\n"
        "Path('report.html').write_text(render([], 'probe', Path('report.html')))\n"
    )
    run_installed(installed, "python", "-c", probe, cwd=outside)
    explorer, report = (outside / "explorer.html").read_text(), (outside / "report.html").read_text()
    assert "--accent" in explorer and "function buildHeadView()" in explorer and 'id="heads-grid"' in explorer
    assert "border-collapse" in report and "function sortTable(th)" in report
    assert "${" not in explorer.split('id="attention-data"')[0] and "${" not in report.split("<script>")[0]


def test_installed_zoo_lists_the_same_components_as_the_checkout(installed, outside):
    """A plugin package left out of the wheel would be missing from the installed list."""
    listed = run_installed(installed, "zoo", "list", cwd=outside).stdout
    assert "attention:" in listed and "zoo_plugins." in listed
    assert listed == fork_zoo("list", cwd=outside, env={"ZOO_PLUGIN_DIRS": None}).stdout


def test_installed_zoo_composes_and_trains_outside_the_checkout(installed, outside):
    """The Hydra configs come from the wheel's zoo.conf (there is no conf/ here to fall back on)."""
    run_dir = outside / "run"
    run_installed(
        installed,
        "zoo",
        "train",
        *TINY,
        "dataset.val_size=8",
        "dataset.test_size=4",
        f"hydra.run.dir={run_dir}",
        cwd=outside,
    )
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary  # a finished run
    assert not (outside / "outputs").exists(), "hydra.run.dir was ignored"
    job = (run_dir / "config.yaml").read_text()  # the composed config, as saved
    smoke = OmegaConf.load(ROOT / "conf" / "experiment" / "smoke.yaml")
    assert "encoder:" in job and f"train_size: {smoke.dataset.train_size}" in job  # the schema, and the preset
