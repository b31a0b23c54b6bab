"""A third-party package, written here into a temp folder, plugs in through the `zoo.plugins` entry point."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from conftest import TINY, fork_zoo

SCORER_PLUGIN = '''
from dataclasses import dataclass

import torch
from torch import nn

from zoo import register
from zoo.contracts import Scorer


@register("attention", "negdist")
class NegativeDistance(Scorer):
    """Negative squared distance between query and key."""

    @dataclass
    class Config:
        scale: float = 1.0

    def __init__(self, cfg, query_dim, key_dim, heads=1):
        super().__init__()
        self.scale = cfg.scale
        self.key_proj = nn.Linear(key_dim, query_dim) if key_dim != query_dim else nn.Identity()

    def forward(self, q, k):
        return -self.scale * torch.cdist(q, self.key_proj(k)).pow(2)
'''

ENCODER_PLUGIN = '''
from dataclasses import dataclass

from torch import nn

from zoo import register
from zoo.contracts import Encoder, EncoderOutput


@register("encoder", "bag")
class BagOfVectors(Encoder):
    """Each position sees only itself: a position-wise MLP."""

    @dataclass
    class Config:
        hidden_size: int = 64

    def __init__(self, cfg, input_dim):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(input_dim, cfg.hidden_size), nn.Tanh())
        self.output_dim = self.state_dim = cfg.hidden_size

    def forward(self, x, mask):
        memory = self.mlp(x) * mask[..., None]
        state = memory.sum(1) / mask.sum(1, keepdim=True).clamp(min=1)
        return EncoderOutput(memory, mask, state)
'''

# Both in one module, as a third party might ship them.
PLUGIN = SCORER_PLUGIN + ENCODER_PLUGIN

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
