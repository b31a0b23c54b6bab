"""A full disk is one line naming the file, what it needs and what is free, and leaves no partial file: prepared
data, feature files, checkpoints of a run and of ``zoo average`` (zoo.disk).

Where this machine lets a test mount a file system (root, Linux), a tiny tmpfs is filled for real; elsewhere those
cases are skipped and the same writes are made to fail as a full disk fails them.
"""

from __future__ import annotations

import contextlib
import errno
import subprocess
import sys

import numpy as np
import pytest
import torch
from helpers import ROOT, TINY, fork_zoo
from helpers.corpus import tsv_config, write_corpus
from helpers.disk import tmpfs

import zoo.data.features
import zoo.data.store
import zoo.training.callbacks
from zoo.data.features import write_features
from zoo.data.prepare import cache_root, prepared_data
from zoo.disk import DiskFullError
from zoo.registry import discovery
from zoo.training.callbacks import AtomicCheckpointIO

discovery.discover()  # the built-in task and dataset that zoo.data.prepare builds

pytestmark = pytest.mark.slow

#: What torch.save raises when the disk fills under it (torch 2.x, a zip writer without an errno).
TORCH_FULL = "[enforce fail at inline_container.cc:672] . unexpected pos 704 vs 598"


def one_error_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("zoo: error: "), stderr[-3000:]
    return lines[0]


def test_a_run_on_a_full_disk_ends_in_one_line_naming_the_checkpoint(tmp_path):
    """600 KB hold the run's first files but not its 1.4 MB checkpoint."""
    with tmpfs(tmp_path / "disk", "600k") as disk:
        proc = fork_zoo("train", *TINY, f"hydra.run.dir={disk / 'run'}", cwd=tmp_path, check=False)
        line = one_error_line(proc.stderr)
        assert proc.returncode == 1 and f"no space left to write {disk / 'run' / 'checkpoints'}" in line
        assert "needs more than 1." in line and "KB free" in line
        assert not list(disk.rglob("*.partial"))


def test_a_run_whose_disk_fills_before_its_checkpoint_ends_in_one_line_naming_its_folder(tmp_path):
    """40 KB fill while the run saves its tokenizers, and the record of that failure cannot be written either."""
    with tmpfs(tmp_path / "disk", "40k") as disk:
        proc = fork_zoo("train", *TINY, f"hydra.run.dir={disk / 'run'}", cwd=tmp_path, check=False)
        line = one_error_line(proc.stderr)
        assert proc.returncode == 1 and line.startswith(f"zoo: error: no space left to write {disk / 'run'}")
        assert not [p for p in disk.rglob("*") if p.name.endswith((".tmp", ".partial"))]


def test_a_checkpoint_that_does_not_fit_leaves_the_file_it_would_replace(tmp_path, monkeypatch):
    last = tmp_path / "last.ckpt"
    last.write_bytes(b"the previous checkpoint")

    def fills_up(checkpoint, file):
        file.write(b"PK\x03\x04 half a zip")
        raise RuntimeError(TORCH_FULL)

    monkeypatch.setattr(zoo.training.callbacks.torch, "save", fills_up)
    with pytest.raises(DiskFullError, match=rf"no space left to write {last}: it needs more than 400.0 KB and"):
        AtomicCheckpointIO().save_checkpoint({"state_dict": {"w": torch.zeros(100_000)}, "epoch": 3}, last)
    assert last.read_bytes() == b"the previous checkpoint" and sorted(tmp_path.iterdir()) == [last]


def test_zoo_average_on_a_full_disk_is_one_line_and_writes_nothing(finished_run, tmp_path):
    checkpoints = finished_run / "checkpoints"
    with tmpfs(tmp_path / "disk", "64k") as disk:
        out = disk / "average.ckpt"
        proc = fork_zoo(
            "average",
            str(checkpoints / "best.ckpt"),
            str(checkpoints / "last.ckpt"),
            "--out",
            str(out),
            cwd=tmp_path,
            check=False,
        )
        assert proc.returncode == 1 and f"no space left to write {out}" in one_error_line(proc.stderr)
        assert list(disk.iterdir()) == []


@pytest.mark.parametrize("disk", ["tmpfs", "simulated"])
def test_preparing_on_a_full_disk_is_one_line_and_leaves_no_folder(tmp_path, monkeypatch, disk):
    write_corpus(tmp_path / "corpus", pairs=3000)
    with contextlib.ExitStack() as stack:
        if disk == "tmpfs":
            cache = stack.enter_context(tmpfs(tmp_path / "cache", "32k"))
        else:
            cache = tmp_path / "cache"

            def short_write(self, sequences):
                raise OSError("4000 requested and 1024 written")  # numpy's tofile on a full disk

            monkeypatch.setattr(zoo.data.store.SequenceWriter, "extend", short_write)
        cfg = tsv_config(tmp_path / "corpus", cache)
        with pytest.raises(DiskFullError, match=rf"no space left to write {cache_root(cfg)}/parallel-\w+: it needs"):
            prepared_data(cfg)
        assert [path.suffix for path in cache_root(cfg).iterdir()] == [".lock"]


FILL_A_TINY_DISK = """
import sys
import numpy as np
from zoo.data.features import write_features
from zoo.disk import DiskFullError
try:
    write_features(sys.argv[1], [str(k) for k in range(100)], [np.ones((100, 4, 640))], (2, 2))
except DiskFullError as error:
    print(error)
"""


@pytest.mark.parametrize("disk", ["tmpfs", "simulated"])
def test_features_on_a_full_disk_are_one_line_not_a_bus_error(tmp_path, monkeypatch, disk):
    """The array's 512 KB are claimed before anything is written through its map (a mapped write to a full disk is
    SIGBUS: the process dies without a word, here in a child process rather than the test's)."""
    if disk == "tmpfs":
        with tmpfs(tmp_path / "disk", "64k") as folder:
            out = folder / "f.npy"
            proc = subprocess.run([sys.executable, "-c", FILL_A_TINY_DISK, str(out)], cwd=ROOT, capture_output=True)
            assert proc.returncode == 0, f"exit status {proc.returncode}: {proc.stderr.decode()[-2000:]}"
            said = proc.stdout.decode()
            assert list(folder.iterdir()) == []
    else:
        out = tmp_path / "f.npy"

        def full(path, size):
            raise OSError(errno.ENOSPC, "No space left on device", str(path))

        monkeypatch.setattr(zoo.data.features, "reserve", full)
        with pytest.raises(DiskFullError) as refused:
            write_features(out, [str(k) for k in range(100)], [np.ones((100, 4, 640))], (2, 2))
        said = str(refused.value)
        assert list(tmp_path.iterdir()) == []
    assert said.startswith(f"no space left to write {out}: it needs 512.1 KB and its disk has ")
