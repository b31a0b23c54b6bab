"""Shared fixtures: tiny end-to-end settings and a CLI runner that uses real subprocesses."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

# Tests run in parallel (pytest-xdist, one worker per core); one thread each avoids oversubscription.
torch.set_num_threads(1)
os.environ.setdefault("OMP_NUM_THREADS", "1")

ROOT = Path(__file__).resolve().parent.parent

# Overrides that make a real training run take seconds: tiny data, tiny model, one epoch.
TINY = [
    "experiment=smoke",
    "frontend.dim=32",
    "encoder.hidden_size=32",
    "decoder.hidden_size=32",
    "decoder.embed_dim=32",
    "trainer.enable_progress_bar=false",
]


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
        raise AssertionError(f"zoo {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}")
    return proc


def train_finished_run(work: Path) -> Path:
    """A real, tiny training run in ``work/run``."""
    work.mkdir(parents=True, exist_ok=True)
    run_zoo("train", *TINY, f"hydra.run.dir={work / 'run'}", cwd=work)
    return work / "run"


def train_plugin_run(work: Path) -> Path:
    """A tiny run in ``work/run`` trained with the README's folder plugin (the `distance` scorer), whose plugin
    folder is gone since."""
    import shutil

    from test_readme import fenced_block_after

    (work / "my_plugins").mkdir(parents=True)
    (work / "my_plugins" / "distance.py").write_text(fenced_block_after("<!-- readme-test: file my_plugins/distance.py -->"))
    run_zoo("train", *TINY, "dataset.train_size=64", "dataset.val_size=8", "dataset.test_size=8",
            "plugin_dirs=[my_plugins]", "attention=distance", f"hydra.run.dir={work / 'run'}", cwd=work)
    shutil.rmtree(work / "my_plugins")
    return work / "run"


@pytest.fixture(scope="session")
def trained_run(tmp_path_factory) -> Path:
    """One real, tiny training run shared by the tests that only read a finished run."""
    return train_finished_run(tmp_path_factory.mktemp("trained"))


@pytest.fixture(scope="session")
def finished_run(trained_run) -> Path:
    """A finished run that the bad-input battery reads and checks stays as it was (the shared tiny run)."""
    return trained_run


@pytest.fixture(scope="session")
def plugin_run(tmp_path_factory) -> Path:
    """A run made with a folder plugin that is gone since (:func:`train_plugin_run`)."""
    return train_plugin_run(tmp_path_factory.mktemp("plugin"))


# How the project's machines run Chromium headless (no sandbox as root, no background traffic on a closed network).
CHROMIUM_FLAGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


@pytest.fixture(scope="module")
def chromium():
    """Headless Debian Chromium driven by Playwright (the system's binary: nothing is downloaded)."""
    import shutil

    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed: pip install -e '.[dev]'")
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if binary is None:
        pytest.skip("Chromium is not installed (apt-get install chromium; .ci/run installs it where it can)")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=binary, args=CHROMIUM_FLAGS)
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def task():
    """A translation task fitted on three sentence pairs; outputs of at most source length + 1 ids (small pictures)."""
    from zoo import registry
    from zoo.contracts import Item
    from zoo.registry import discovery

    discovery.discover()
    sources = ["the cat sat", "a dog ran home", "the dog sat on a mat"]
    targets = ["le chat assis", "un chien courait", "le chien assis sur un tapis"]
    cfg = registry.default_config("task", "translation", max_len_ratio=1.0, max_len_offset=1)
    translation = registry.build("task", cfg, tokenizer=registry.default_config("tokenizer", "word"),
                                 frontend=registry.default_config("frontend", "tokens"))
    translation.fit([Item(str(k), s, (t,)) for k, (s, t) in enumerate(zip(sources, targets))])
    return translation
