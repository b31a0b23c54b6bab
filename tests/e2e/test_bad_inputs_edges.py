"""The bad-input battery, edges: settings Lightning or a tracker would refuse only after the data has loaded (or
never: a multi-node job on one machine waits for ever), a run folder whose config.yaml changed since it trained,
and a plugin folder that is a file. What every case must show, and how it runs, is in ``helpers/battery.py``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from helpers.battery import TRAIN_TINY, Case, assert_refused

pytestmark = pytest.mark.slow

TRAIN = ["train", *TRAIN_TINY]


def config_edited(old: str, new: str) -> Callable[[Path], None]:
    """The copied run's config.yaml with ``old`` replaced by ``new`` (as a hand edit would leave it)."""

    def edit(here: Path) -> None:
        path = here / "run" / "config.yaml"
        assert old in path.read_text()
        path.write_text(path.read_text().replace(old, new))

    return edit


def config_cut_off(here: Path) -> None:
    """The copied run's config.yaml cut off after its first 20 lines (still YAML: a copy cut short)."""
    path = here / "run" / "config.yaml"
    path.write_text("".join(path.read_text().splitlines(keepends=True)[:20]))


def a_file(name: str) -> Callable[[Path], None]:
    def write(here: Path) -> None:
        (here / name).write_text("from zoo import registry\n")

    return write


CASES = [
    # ----- the trainer: what Lightning refuses only once it builds its Trainer
    Case("trainer", [*TRAIN, "trainer.devices=0"], "trainer.devices=0 must be >= 1"),
    Case("trainer", [*TRAIN, "trainer.devices=-1"], "on the CPU give a number of processes"),
    Case("trainer", [*TRAIN, "trainer.devices=[0,1]"], "trainer.devices=[0, 1] picks GPUs"),
    Case("trainer", [*TRAIN, "trainer.strategy=nosuch"], "not one of Lightning's; use one of auto, ddp,"),
    Case("trainer", [*TRAIN, "trainer.strategy=fsdp"], "trainer.strategy=fsdp shards the model across GPUs"),
    Case("trainer", [*TRAIN, "trainer=ddp_cpu", "trainer.num_nodes=2"], "hydra/launcher=slurm"),
    # ----- trackers and settings that would cost minutes before a word
    Case("tracker", [*TRAIN, "logger=mlflow", "logger.tracking_uri=http://127.0.0.1:9"], "http://127.0.0.1:9"),
    Case("config", [*TRAIN, "scst.samples=1000000"], "scst.samples=1000000 must be in [1, 100]"),
    # ----- a run's config.yaml changed since it trained: named, not the checkpoint
    Case(
        "run dir",
        ["translate", "run", "ein satz"],
        "run/config.yaml does not match the run's own checkpoint",
        copy="finished_run",
        files=config_edited("hidden_size: 32", "hidden_size: 64"),
    ),
    Case(
        "run dir",
        ["translate", "run", "ein satz"],
        "run/config.yaml does not match",
        copy="finished_run",
        files=config_cut_off,
    ),
    Case(
        "resume",
        ["train", "resume=run", "trainer.max_epochs=3"],
        "config.yaml has decoder.hidden_size=64, and the run trained with 32",
        copy="finished_run",
        files=config_edited("hidden_size: 32", "hidden_size: 64"),
    ),
    Case(
        "resume",
        ["train", "resume=run", "trainer.max_epochs=3"],
        "config.yaml has no",
        copy="finished_run",
        files=config_cut_off,
    ),
    # ----- a plugin folder that is a file
    Case("plugin", ["check", "--plugin-dir", "mine.py", "gru"], "mine.py is a file", files=a_file("mine.py")),
    Case("plugin", [*TRAIN, "plugin_dirs=[mine.py]"], "mine.py is a file", files=a_file("mine.py")),
]


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_an_edge_input_is_one_early_line_and_changes_nothing(case, tmp_path, finished_run, request):
    here = tmp_path / "case"
    here.mkdir()
    assert_refused(case, here, finished_run, request)
