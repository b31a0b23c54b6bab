"""The bad-input battery, run folders: weights of another vocabulary, a run still being written, a damaged snapshot
index and a page zoo did not write are refused in one line, and every file stays as it was.

``run`` is a copy of a finished tiny run (``copy="finished_run"``) that ``files`` may change first; ``locked="run"``
holds its lock while the command runs, as the process training it would.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import TINY
from helpers.battery import Case, assert_refused

pytestmark = pytest.mark.slow


def swap_target_tokens(here: Path) -> None:
    """The copied run's target vocabulary with two words' ids swapped: the sizes stay, the ids mean other words."""
    path = here / "run" / "tokenizers" / "target.json"
    tokenizer = json.loads(path.read_text())
    vocab = tokenizer["model"]["vocab"]
    first, second = (token for token, i in vocab.items() if i in (4, 5))
    vocab[first], vocab[second] = vocab[second], vocab[first]
    path.write_text(json.dumps(tokenizer))


def cut_off_snapshot_index(here: Path) -> None:
    """The copied run as if it kept snapshots, its index cut off while it was written."""
    index = here / "run" / "checkpoints" / "snapshots" / "index.json"
    index.parent.mkdir()
    index.write_bytes(b'{"by": "last", "keep": 2, "snaps')


def two_checkpoints(here: Path) -> None:
    for name in ("a.ckpt", "b.ckpt"):
        (here / name).write_bytes(b"weights")


LIVE = "is being written by another zoo process"

CASES = [
    Case(
        "checkpoint",
        ["train", *TINY, "hydra.run.dir=new", "init_from=run"],
        "target tokens differ (id 4 is",
        copy="finished_run",
        files=swap_target_tokens,
    ),
    Case(
        "checkpoint",
        ["average", "run"],
        "index.json is damaged",
        copy="finished_run",
        files=cut_off_snapshot_index,
    ),
    Case("run dir", ["average", "run"], LIVE, copy="finished_run", locked="run"),
    Case(
        "run dir",
        ["average", "a.ckpt", "b.ckpt", "--out", "run/checkpoints/mean.ckpt"],
        LIVE,
        copy="finished_run",
        locked="run",
        files=two_checkpoints,
    ),
    Case("run dir", ["attention", "run", "ein satz"], LIVE, copy="finished_run", locked="run"),
    Case("run dir", ["compare", "{run}", "--html", "run/report.html"], LIVE, copy="finished_run", locked="run"),
    Case("run dir", ["features", "run/features.npy"], LIVE, copy="finished_run", locked="run"),
    Case(
        "messages",
        ["compare", "{run}", "--html", "page.html"],
        "zoo did not write it",
        files=lambda here: (here / "page.html").write_text("<!DOCTYPE html><title>my page</title>\n"),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_a_write_into_a_run_that_is_not_zoos_to_make_is_one_line_and_changes_nothing(
    case, tmp_path, finished_run, request
):
    here = tmp_path / "case"
    here.mkdir()
    assert_refused(case, here, finished_run, request)
