"""Fixtures: the end-to-end runs several tests share (one per test process), headless Chromium and a small task.

Shared code (run_zoo, fork_zoo, TINY, ROOT, ...) is in the package tests/helpers."""

from __future__ import annotations

import os

# One thread per test process (pytest-xdist runs one process per core) for OpenMP and the BLAS numpy uses, set
# before torch or numpy loads them: threads beyond the cores spin waiting for each other (numpy's simulations in
# unit/test_calibration.py took several times as long). The processes the tests start inherit it.
for _threads in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_threads, "1")

import atexit  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402
import torch  # noqa: E402
from helpers import CHROMIUM_FLAGS, SEARCH_TINY, fork_zoo, train_finished_run, train_plugin_run  # noqa: E402
from helpers.runs import initial_weights, train_caption_run  # noqa: E402
from helpers.scheduling import GROUPS, SharedFixtureScheduling, write_groups  # noqa: E402


def pytest_configure(config) -> None:
    """One torch thread per test process; prepared data (zoo prepare) in one folder per test process, never in the
    user's ~/.cache/zoo (runs of the same data share it, as a user's runs do); a file for the workers' groups."""
    torch.set_num_threads(1)
    if "ZOO_CACHE_DIR" not in os.environ:
        os.environ["ZOO_CACHE_DIR"] = tempfile.mkdtemp(prefix="zoo-cache-")
        atexit.register(shutil.rmtree, os.environ["ZOO_CACHE_DIR"], True)
    if GROUPS not in os.environ:  # pytest-xdist's controller; its workers inherit the variable
        folder = tempfile.mkdtemp(prefix="zoo-groups-")
        os.environ[GROUPS] = os.path.join(folder, "groups.json")
        atexit.register(shutil.rmtree, folder, True)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A worker of pytest-xdist writes which tests share a module-scoped fixture, for the scheduler."""
    if hasattr(config, "workerinput"):
        write_groups(items)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """``--dist load`` (pyproject.toml), keeping the tests that share a module fixture on one worker."""
    return SharedFixtureScheduling(config, log) if config.getvalue("dist") == "load" else None


@pytest.fixture(scope="session")
def trained_run(tmp_path_factory) -> Path:
    """One real, tiny training run shared by the tests that only read a finished run."""
    return train_finished_run(tmp_path_factory.mktemp("trained"))


@pytest.fixture(scope="session")
def finished_run(trained_run) -> Path:
    """A finished run that the bad-input battery reads and checks stays as it was (the shared tiny run)."""
    return trained_run


@pytest.fixture(scope="session")
def caption_run(tmp_path_factory) -> Path:
    """One real, tiny captioning run (helpers.runs.CAPTION_TINY) shared by the tests that read one."""
    return train_caption_run(tmp_path_factory.mktemp("captioning"))


@pytest.fixture(scope="session")
def init_ckpt(tmp_path_factory) -> Path:
    """Weights of the tiny captioner (helpers.runs.initial_weights) that runs start from (``init_from``)."""
    return initial_weights(tmp_path_factory.mktemp("init"))


@pytest.fixture(scope="session")
def finished_search(tmp_path_factory) -> Path:
    """A finished search of ``model=gru`` (one trial, no re-runs) in its sweep directory, which tests copy: the
    same command with ``hydra.sweep.dir=COPY resume_mode=auto`` resumes it."""
    work = tmp_path_factory.mktemp("search")
    sweep = work / "sweep"
    fork_zoo(
        "train",
        "-m",
        "model=gru",
        *SEARCH_TINY,
        "hydra.sweeper.trials=1",
        "hydra.sweeper.reseed=[]",
        f"hydra.sweep.dir={sweep}",
        cwd=work,
    )
    return sweep


@pytest.fixture(scope="session")
def plugin_run(tmp_path_factory) -> Path:
    """A run made with a folder plugin that is gone since (helpers.train_plugin_run)."""
    return train_plugin_run(tmp_path_factory.mktemp("plugin"))


@pytest.fixture(scope="module")
def chromium():
    """Headless Debian Chromium driven by Playwright (the system's binary: nothing is downloaded)."""
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
    translation = registry.build(
        "task",
        cfg,
        tokenizer=registry.default_config("tokenizer", "word"),
        frontend=registry.default_config("frontend", "tokens"),
    )
    translation.fit([Item(str(k), s, (t,)) for k, (s, t) in enumerate(zip(sources, targets))])
    return translation
