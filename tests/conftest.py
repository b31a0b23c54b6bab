"""Shared fixtures: tiny end-to-end settings and a CLI runner that uses real subprocesses."""

from __future__ import annotations

import atexit
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path

import pytest
import torch

# Tests run in parallel (pytest-xdist, one worker per core); one thread each avoids oversubscription.
torch.set_num_threads(1)
os.environ.setdefault("OMP_NUM_THREADS", "1")
# Prepared data (zoo prepare) goes to one folder per test process, never to the user's ~/.cache/zoo; runs of the
# same data share it, as a user's runs do.
if "ZOO_CACHE_DIR" not in os.environ:
    os.environ["ZOO_CACHE_DIR"] = tempfile.mkdtemp(prefix="zoo-cache-")
    atexit.register(shutil.rmtree, os.environ["ZOO_CACHE_DIR"], True)

ROOT = Path(__file__).resolve().parent.parent

#: The files that take longest (docs/results.md, "The test suite"), started first: pytest-xdist's loadfile deals
#: whole files to the workers in collection order, so a long file dealt last would leave the other worker idle.
LONGEST_FIRST = (
    "test_presets_sweeps.py",
    "test_resume.py",
    "test_bad_inputs.py",
    "test_cli.py",
    "test_distributed.py",
    "test_presets.py",
    "test_captioning.py",
    "test_signals.py",
    "test_search.py",
    "test_launchers.py",
    "test_bad_inputs_messages.py",
)


def pytest_collection_modifyitems(items: list) -> None:
    """The longest files first, each file's tests in their own order."""
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


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
        raise AssertionError(
            f"zoo {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
        )
    return proc


def _forked_zoo(
    args: list[str], cwd: str, env: dict[str, str], out: str, err: str, stdin: str | None, prepare=None
) -> None:
    """The body of a forked ``zoo ARGS`` (:class:`ForkedZoo`): what ``python -m zoo.cli ARGS`` does once imported,
    after ``prepare()`` (a module-level function: a test's hook into the run) where one is given."""
    os.chdir(cwd)
    had = os.environ.get("PYTHONPATH", "").split(os.pathsep)  # the server's own, on its sys.path already
    given = [folder for folder in env.get("PYTHONPATH", "").split(os.pathsep) if folder and folder not in had]
    os.environ.clear()
    os.environ.update(env)
    sys.path[:0] = [cwd, *given]  # as a new `python -m` puts the working folder, then $PYTHONPATH, first
    for fd, path in ((1, out), (2, err)):
        os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), fd)
    if stdin is not None:
        os.dup2(os.open(stdin, os.O_RDONLY), 0)
        sys.stdin = open(0, closefd=False)
    code = 1
    try:
        from zoo.cli import main

        if prepare is not None:
            prepare()
        main(args)
        code = 0
    except SystemExit as stop:  # as the interpreter ends on one
        if stop.code is None or isinstance(stop.code, int):
            code = stop.code or 0
        else:
            print(stop.code, file=sys.stderr)
    except BaseException:  # noqa: BLE001 - an uncaught error: its traceback, as the interpreter prints it
        traceback.print_exc()
    finally:
        atexit._run_exitfuncs()  # what the interpreter runs at exit (loggers' and trackers' last writes)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


class ForkedZoo:
    """``zoo ARGS`` started in a process forked from a server that has imported zoo, torch and Lightning once.

    A real process (its own pid, signals, exit status, stdout, stderr, working folder and environment) that
    starts in milliseconds instead of seconds, like tests/battery.py's; folders added to ``PYTHONPATH`` in
    ``env`` join its sys.path. Not a fresh interpreter: where a test is about one (warnings at import,
    PYTHONHASHSEED, re-executing itself as DDP does, a folder taken off PYTHONPATH) or the command starts a
    pool of workers (hydra/launcher=joblib: loky's pool outlives the job here for minutes), use :func:`run_zoo`.
    """

    def __init__(self, *args: str, cwd: Path, stdin: str | None = None, env: dict | None = None, prepare=None):
        import tempfile

        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(
            ["conftest", "zoo.cli", "zoo.training.entry", "zoo.training.run", "zoo.inference.predictor"]
        )  # once the server runs, a no-op
        full_env = {**os.environ, "WANDB_MODE": "offline", "WANDB_SILENT": "true", **(env or {})}
        full_env = {k: v for k, v in full_env.items() if v is not None}
        self.args = list(args)
        self._streams = tempfile.TemporaryDirectory(prefix="zoo-fork-")
        self._out, self._err, given = (os.path.join(self._streams.name, name) for name in ("out", "err", "in"))
        if stdin is not None:
            Path(given).write_text(stdin)
        self.process = context.Process(
            target=_forked_zoo,
            args=(self.args, str(cwd), full_env, self._out, self._err, None if stdin is None else given, prepare),
        )
        self.process.start()
        self.pid = self.process.pid

    def poll(self) -> int | None:
        """The exit status, or None while it runs."""
        return self.process.exitcode

    def send_signal(self, signum: int) -> None:
        os.kill(self.pid, signum)

    def wait(self, timeout: float = 600, check: bool = True) -> subprocess.CompletedProcess:
        """Its exit status, stdout and stderr once it has ended (killed after ``timeout`` seconds)."""
        self.process.join(timeout)
        if self.process.exitcode is None:
            self.process.kill()
            self.process.join()
        out, err = (Path(stream).read_text() if Path(stream).exists() else "" for stream in (self._out, self._err))
        proc = subprocess.CompletedProcess(["zoo", *self.args], self.process.exitcode, out, err)
        self._streams.cleanup()
        if check and proc.returncode != 0:
            raise AssertionError(
                f"zoo {' '.join(self.args)} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
            )
        return proc


def fork_zoo(*args: str, cwd: Path, stdin: str | None = None, env: dict | None = None, check: bool = True):
    """:func:`run_zoo` in a forked process (:class:`ForkedZoo`): the same command, without the seconds a new
    interpreter takes to import zoo, torch and Lightning."""
    return ForkedZoo(*args, cwd=cwd, stdin=stdin, env=env).wait(check=check)


def train_finished_run(work: Path) -> Path:
    """A real, tiny training run in ``work/run``."""
    work.mkdir(parents=True, exist_ok=True)
    fork_zoo("train", *TINY, f"hydra.run.dir={work / 'run'}", cwd=work)
    return work / "run"


def write_plugin_folder(folder: Path) -> Path:
    """A plugin folder with the README's `distance` scorer and a third party's `sorting` task (its own kind of
    source, its dataset and frontend: tests/test_third_party_plugin.py)."""
    from test_readme import fenced_block_after
    from test_third_party_plugin import NUMBERS_PLUGIN

    folder.mkdir(parents=True)
    (folder / "distance.py").write_text(fenced_block_after("<!-- readme-test: file my_plugins/distance.py -->"))
    (folder / "sorting.py").write_text(NUMBERS_PLUGIN)
    return folder


def train_plugin_run(work: Path) -> Path:
    """A tiny run in ``work/run`` of the folder plugins' `sorting` task attending with their `distance` scorer,
    whose plugin folder is gone since."""
    import shutil

    write_plugin_folder(work / "my_plugins")
    fork_zoo(
        "train",
        *TINY,
        "plugin_dirs=[my_plugins]",
        "task=sorting",
        "attention=distance",
        f"hydra.run.dir={work / 'run'}",
        cwd=work,
    )
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


#: A search on tiny settings (the family and its budget aside): what resuming it repeats.
SEARCH_TINY = [
    "hydra/sweeper=optuna",
    *TINY,
    "dataset.train_size=64",
    "dataset.val_size=8",
    "dataset.test_size=8",
]


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
    """A run made with a folder plugin that is gone since (:func:`train_plugin_run`)."""
    return train_plugin_run(tmp_path_factory.mktemp("plugin"))


# How the project's machines run Chromium headless (no sandbox as root, no background traffic on a closed network).
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def watched_page(browser, address: str, timeout_ms: int = 10_000, load_timeout_ms: int = 30_000):
    """A new page opened at ``address``, its console errors and requests collected in ``page.errors`` and
    ``page.requests``."""
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.set_default_timeout(timeout_ms)
    page.errors, page.requests = [], []
    page.on("console", lambda message: page.errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: page.errors.append(str(error)))
    page.on("request", lambda request: page.requests.append(request.url))
    page.goto(address, timeout=load_timeout_ms)
    return page


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
    translation = registry.build(
        "task",
        cfg,
        tokenizer=registry.default_config("tokenizer", "word"),
        frontend=registry.default_config("frontend", "tokens"),
    )
    translation.fit([Item(str(k), s, (t,)) for k, (s, t) in enumerate(zip(sources, targets))])
    return translation
