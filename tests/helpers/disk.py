"""A small file system of its own, to fill for real (tests/e2e/test_disk_full.py, the battery's cache cases)."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def tmpfs(folder: Path, size: str, read_only: bool = False) -> Iterator[Path]:
    """A file system of ``size`` of its own at ``folder`` for the block, or the test skipped where mounting one is
    not permitted (not root, not Linux)."""
    folder.mkdir(parents=True, exist_ok=True)
    options = f"size={size}" + (",ro" if read_only else "")
    command = [shutil.which("mount") or "mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)]
    try:
        subprocess.run(command, check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError) as error:
        pytest.skip(f"cannot mount a tmpfs here ({error})")
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=True)
