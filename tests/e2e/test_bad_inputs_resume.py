"""The bad-input battery, resumes: what cannot be continued is refused in one line, and the run stays as it was.

``run`` is a copy of a finished tiny run (``copy="finished_run"``) that ``files`` may change first.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers.battery import Case, assert_refused, run_copy_with

pytestmark = pytest.mark.slow


def cut_off_last_checkpoint(here: Path) -> None:
    last = here / "run" / "checkpoints" / "last.ckpt"
    last.write_bytes(last.read_bytes()[:4096])


def status(value: str, **more) -> Callable[[Path], None]:
    """Give the copied run's summary another status (as a run stopped or killed at some point would have)."""

    def rewrite(here: Path) -> None:
        path = here / "run" / "summary.json"
        path.write_text(json.dumps({**json.loads(path.read_text()), "status": value, **more}))

    return rewrite


def both(*changes: Callable[[Path], None]) -> Callable[[Path], None]:
    def apply(here: Path) -> None:
        for change in changes:
            change(here)

    return apply


RESUME = ["train", "resume=run"]

CASES = [
    Case("resume", RESUME, "finished already", copy="finished_run"),
    Case("resume", [*RESUME, "test=true"], "finished already", copy="finished_run"),
    Case("resume", [*RESUME, "decode.beam_size=2"], "finished already", copy="finished_run"),
    Case("resume", [*RESUME, "resume_mode=must"], "finished already", copy="finished_run"),
    Case(
        "resume",
        [*RESUME, "trainer.max_epochs=3"],
        "last.ckpt cannot be read",
        copy="finished_run",
        files=run_copy_with("checkpoints/last.ckpt", b""),
    ),
    Case(
        "resume",
        [*RESUME, "trainer.max_epochs=3"],
        "last.ckpt cannot be read",
        copy="finished_run",
        files=cut_off_last_checkpoint,
    ),
    Case(
        "resume",
        [*RESUME, "trainer.max_epochs=3"],
        "last.ckpt cannot be read",
        copy="finished_run",
        files=run_copy_with("checkpoints/last.ckpt", b"my notes, not a checkpoint\n"),
    ),
    Case(
        "resume",
        RESUME,
        "last.ckpt cannot be read",
        copy="finished_run",
        files=both(status("interrupted", phase="training"), run_copy_with("checkpoints/last.ckpt", b"")),
    ),
    Case(
        "resume",
        [*RESUME, "trainer.max_epochs=3"],
        "summary.json is not valid JSON",
        copy="finished_run",
        files=run_copy_with("summary.json", b'{"status": "runn'),
    ),
    Case(
        "resume",
        RESUME,
        "no checkpoints/last.ckpt",
        copy="finished_run",
        files=run_copy_with("checkpoints/last.ckpt", None),
    ),
    Case(
        "resume",
        RESUME,
        "summary.json unreadable",
        copy="finished_run",
        files=both(run_copy_with("summary.json", b"\x00\x01"), run_copy_with("checkpoints/last.ckpt", None)),
    ),
    Case(
        "resume",
        [*RESUME, "trainer.max_epochs=3"],
        "config.yaml",
        copy="finished_run",
        files=run_copy_with("config.yaml", None),
    ),
    Case(
        "resume",
        [*RESUME, "decoder.hidden_size=64"],
        "decoder.hidden_size",
        copy="finished_run",
        files=status("interrupted", phase="training"),
    ),
    Case("resume", [*RESUME, "seed=7"], "seed", copy="finished_run", files=status("interrupted", phase="test")),
]


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_a_resume_that_cannot_continue_is_one_line_and_changes_nothing(case, tmp_path, finished_run, request):
    here = tmp_path / "case"
    here.mkdir()
    assert_refused(case, here, finished_run, request)
