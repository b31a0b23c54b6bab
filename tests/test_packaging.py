"""The project builds as a normal wheel that ships the built-in plugins as `zoo_plugins`."""
from __future__ import annotations

import subprocess
import sys
import zipfile

from conftest import ROOT


def test_wheel_ships_core_configs_and_every_plugin_package(tmp_path):
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", str(ROOT), "-w", str(tmp_path)],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("zoo-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    plugin_packages = [p.parent.name for p in (ROOT / "plugins").glob("*/__init__.py")]
    for package in plugin_packages:
        modules = [p.name for p in (ROOT / "plugins" / package).glob("*.py")]
        for module in modules:
            assert f"zoo_plugins/{package}/{module}" in names, f"plugins/{package} is missing from pyproject's packages"
    assert "zoo/conf/config.yaml" in names
    assert not any(n.startswith("plugins/") for n in names), "no generic top-level 'plugins' module may be installed"
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    text = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert "[zoo.plugins]" in text and "builtin = zoo_plugins" in text
    assert "zoo = zoo.cli:main" in text
