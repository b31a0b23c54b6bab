"""The bad-input battery, inference part: checkpoints of another run, and inputs that `zoo translate`, `zoo caption`
and `zoo attention` cannot use. What every case must show, and how it runs, is in ``helpers/battery.py``.

An input refused among others still leaves its empty output line on stdout (one output line per input); the
battery checks the one error line, the exit status and that nothing changed. test_predictor.py checks that the
other inputs are still answered.
"""

from __future__ import annotations

import io
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from helpers import fork_zoo
from helpers.battery import TRAIN_TINY, Case, assert_refused
from helpers.images import png
from PIL import Image

# Its cases take their runs by name (module ones, and the session's caption_run: one worker makes it for all its users).
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("caption_run")]

# The battery's tiny translation run on other training data, so with another vocabulary.
OTHER_DATA = [arg if not arg.startswith("dataset.train_size=") else "dataset.train_size=40" for arg in TRAIN_TINY]


@pytest.fixture(scope="module")
def other_data_run(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("other_data")
    fork_zoo("train", *OTHER_DATA, f"hydra.run.dir={work / 'run'}", cwd=work)
    return work / "run"


@pytest.fixture(scope="module")
def swapped_run(tmp_path_factory, finished_run, other_data_run) -> Path:
    """The finished run with the tokenizers of a run on other data: its config no longer tells its vocabulary."""
    run = tmp_path_factory.mktemp("swapped") / "run"
    shutil.copytree(finished_run, run)
    shutil.rmtree(run / "tokenizers")
    shutil.copytree(other_data_run / "tokenizers", run / "tokenizers")
    return run


def jpeg() -> bytes:
    buffer = io.BytesIO()
    Image.open(io.BytesIO(png())).save(buffer, "JPEG")
    return buffer.getvalue()


def huge_png() -> bytes:
    """15000 x 15000 black pixels: a 1-bit PNG of a few kilobytes that would decode to 675 MB of RGB."""
    buffer = io.BytesIO()
    Image.new("1", (15000, 15000)).save(buffer, "PNG")
    return buffer.getvalue()


def file_at(name: str, data: Callable[[], bytes]) -> Callable[[Path], None]:
    return lambda here: (here / name).write_bytes(data())


def not_a_zoo_checkpoint(here: Path) -> None:
    torch.save({"weights": torch.zeros(3)}, here / "weights.ckpt")


LONG_LINE = " ".join(["ein satz"] * 5000)  # 10000 tokens: decoded, it would take minutes
OTHER_CHECKPOINT = ["--checkpoint", "run/checkpoints/best.ckpt"]

CASES = [
    # ----- checkpoints of another run: another task, other data, other codecs, no zoo checkpoint at all
    Case(
        "inference", ["translate", "{run}", *OTHER_CHECKPOINT, "ein satz"], "trained for captioning", copy="caption_run"
    ),
    Case(
        "inference",
        ["caption", "run", "--checkpoint", "{run}/checkpoints/best.ckpt", "scene.png"],
        "trained for translation",
        copy="caption_run",
        files=file_at("scene.png", png),
    ),
    Case(
        "inference",
        ["translate", "{run}", *OTHER_CHECKPOINT, "ein satz"],
        "dataset.train_size=40",
        copy="other_data_run",
    ),
    Case("inference", ["translate", "run", "ein satz"], "vocab_size", copy="swapped_run"),
    Case(
        "inference",
        ["translate", "{run}", "--checkpoint", "weights.ckpt", "ein satz"],
        "not a zoo checkpoint",
        files=not_a_zoo_checkpoint,
    ),
    # ----- text: not UTF-8, far too long, an image path, nothing at all
    Case(
        "inference",
        ["translate", "{run}"],
        "stdin line 2: the text is not valid UTF-8 (byte 0xff at column 3)",
        stdin=b"ein satz\nab\xffcd\nnoch ein satz\n",
    ),
    Case("inference", ["translate", "{run}", "ab\udcffcd"], "command-line sentence 1: the text is not valid UTF-8"),
    Case(
        "inference",
        ["translate", "{run}"],
        "stdin line 2: the text has 10000 tokens",
        stdin=f"ein satz\n{LONG_LINE}\n".encode(),
    ),
    Case("inference", ["attention", "{run}", LONG_LINE], "10000 tokens"),
    Case("inference", ["translate", "{run}", "photo.png"], "names an image file", files=file_at("photo.png", png)),
    Case("inference", ["translate", "{run}"], "stdin is empty", stdin=b""),
    # ----- images: too large, a folder, not an image, truncated, empty, missing
    Case(
        "inference", ["caption", "run", "huge.png"], "pixels", copy="caption_run", files=file_at("huge.png", huge_png)
    ),
    Case(
        "inference",
        ["caption", "run", "photos"],
        "photos is a folder",
        copy="caption_run",
        files=lambda here: (here / "photos").mkdir(),
    ),
    Case(
        "inference",
        ["caption", "run", "notes.png"],
        "not in an image format",
        copy="caption_run",
        files=file_at("notes.png", lambda: b"my notes, not a picture\n"),
    ),
    Case(
        "inference",
        ["caption", "run", "cut.png"],
        "truncated",
        copy="caption_run",
        files=file_at("cut.png", lambda: png()[:1000]),
    ),
    Case(
        "inference",
        ["caption", "run", "cut.jpg"],
        "truncated",
        copy="caption_run",
        files=file_at("cut.jpg", lambda: jpeg()[:600]),
    ),
    Case(
        "inference",
        ["caption", "run", "empty.jpg"],
        "empty.jpg is empty",
        copy="caption_run",
        files=file_at("empty.jpg", lambda: b""),
    ),
    Case("inference", ["caption", "run", "gone.jpg"], "gone.jpg does not exist", copy="caption_run"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_bad_input_is_one_early_line_and_changes_nothing(case, tmp_path, finished_run, request):
    here = tmp_path / "case"
    here.mkdir()
    assert_refused(case, here, finished_run, request)
