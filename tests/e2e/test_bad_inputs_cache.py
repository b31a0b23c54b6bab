"""The bad-input battery, the cache of prepared data: a cache folder that cannot be used, something zoo did not
write where its prepared files go, and paths where a command takes something else are each one line, and nothing
is deleted or written.

``ZOO_CACHE_DIR=cache`` is a folder inside the case's own, so the battery sees every file the command leaves.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.battery import TRAIN_TINY, Case, assert_refused, zoo_process
from helpers.disk import tmpfs

from zoo.cli.args import train_config
from zoo.data.prepare import cache_root, folder_name, key_inputs

pytestmark = pytest.mark.slow

CACHE = {"ZOO_CACHE_DIR": "cache"}


def prepared_folder(here: Path) -> Path:
    """Where ``zoo prepare`` of the tiny data puts its files under ``here/cache``."""
    cfg = train_config(TRAIN_TINY)
    cfg.paths.cache = str(here / "cache")
    return cache_root(cfg) / folder_name(cfg, key_inputs(cfg))


def file_where_the_prepared_folder_goes(here: Path) -> None:
    folder = prepared_folder(here)
    folder.parent.mkdir(parents=True)
    folder.write_text("the user's notes")


def broken_folder_with_a_user_file(here: Path) -> None:
    folder = prepared_folder(here)
    folder.mkdir(parents=True)
    (folder / "manifest.json").write_text("[]")
    (folder / "results.csv").write_text("the user's results\n")


def a_file(name: str):
    def write(here: Path) -> None:
        (here / name).write_text("the user's notes")

    return write


CASES = [
    Case("cache", ["prepare", "{run}"], "is a run directory: zoo prepare takes the config overrides"),
    Case("cache", ["prepare", "runs/de-en"], "runs/de-en is not an override"),
    Case("cache", ["prepare", *TRAIN_TINY], "unset ZOO_CACHE_DIR", env={"ZOO_CACHE_DIR": ""}),
    Case("cache", ["train", *TRAIN_TINY], "unset ZOO_CACHE_DIR", env={"ZOO_CACHE_DIR": ""}),
    Case(
        "cache",
        ["prepare", *TRAIN_TINY],
        "notes.txt is a file",
        env={"ZOO_CACHE_DIR": "notes.txt"},
        files=a_file("notes.txt"),
    ),
    Case(
        "cache",
        ["prepare", *TRAIN_TINY],
        "is a file zoo did not write",
        env=CACHE,
        files=file_where_the_prepared_folder_goes,
    ),
    Case(
        "cache",
        ["train", *TRAIN_TINY],
        "holds results.csv, which zoo does not write",
        env=CACHE,
        files=broken_folder_with_a_user_file,
    ),
    Case("cache", ["features", "no/such/dir/x.npy", "frontend=pretrained"], "there is no folder no/such/dir"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_a_cache_that_cannot_be_used_is_one_line_and_changes_nothing(case, tmp_path, finished_run, request):
    here = tmp_path / "case"
    here.mkdir()
    assert_refused(case, here, finished_run, request)


def test_a_read_only_cache_folder_is_one_line_naming_it(tmp_path):
    """Outside the table of cases: it needs a read-only file system (root ignores a folder's permissions)."""
    with tmpfs(tmp_path / "cache", "64k", read_only=True) as cache:
        status, _, err = zoo_process(["prepare", *TRAIN_TINY], tmp_path, env=CACHE)
        assert list(cache.iterdir()) == []
    lines = [line for line in err.splitlines() if line.strip()]
    assert status == 1 and len(lines) == 1, err[-3000:]
    assert lines[0].startswith("zoo: error: cannot write prepared data to the cache folder cache/prepared (")
    assert "Read-only file system" in lines[0] and "ZOO_CACHE_DIR" in lines[0]
