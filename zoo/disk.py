"""A full disk said in one line: which file could not be written, how much it needs and how much is free.

Each writer of large files (prepared data, feature files, checkpoints) writes through a temporary name,
removes it when the write fails and turns running out of space into :class:`DiskFullError`, so a user reads
what to free instead of a library's message about a short write.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
from pathlib import Path

from zoo.errors import ZooError

#: What a write that ran out of space raises besides an OSError of ENOSPC or EDQUOT, none with an errno: numpy's
#: short write (``tofile``, ``np.save``), torch's zip writer (``torch.save``: "enforce fail at inline_container.cc")
#: and a Rust library's I/O error (``tokenizers``' ``save``: "No space left on device (os error 28)").
WITHOUT_ERRNO = re.compile(
    rf"\d+ requested and \d+ written|inline_container|PytorchStreamWriter failed|"
    rf"\(os error (?:{errno.ENOSPC}|{errno.EDQUOT})\)"
)


class DiskFullError(ZooError):
    """A file could not be written for want of space; nothing of it is left behind."""


def disk_full(error: BaseException) -> bool:
    """Whether ``error`` is a write that ran out of space (or of the user's quota)."""
    if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    return isinstance(error, Exception) and bool(WITHOUT_ERRNO.search(str(error)))


def free_bytes(path: Path) -> int:
    """The space free on the file system that holds ``path`` (its nearest existing folder)."""
    folder = Path(path).absolute()
    while not folder.is_dir() and folder != folder.parent:
        folder = folder.parent
    return shutil.disk_usage(folder).free


def size_text(size: int) -> str:
    """``size`` bytes for a person: ``512 bytes``, ``3.4 MB``, ``1.2 GB``."""
    if size < 1000:
        return f"{size} bytes"
    for unit in ("KB", "MB", "GB", "TB"):
        size /= 1000
        if size < 1000 or unit == "TB":
            break
    return f"{size:.1f} {unit}"


def no_space(path: Path, needed: int, at_least: bool = False, advice: str = "free some space") -> DiskFullError:
    """The error for ``path`` not written for want of space: ``needed`` bytes (``at_least``: more than that), and
    what is free now (measured once the partial file is gone)."""
    more = "more than " if at_least else ""
    return DiskFullError(
        f"no space left to write {path}: it needs {more}{size_text(needed)} and its disk has "
        f"{size_text(free_bytes(path))} free; {advice}, then run again"
    )


def full_disk(error: BaseException, folder: Path) -> DiskFullError | None:
    """One line for a write that ran out of space anywhere in ``error``'s chain (the errors it was raised while
    handling): the file it names, or at least ``folder``, with the space free; None for any other error. The
    writers of large files say which file and how much it needed (:func:`no_space`); this covers every other write."""
    while error is not None and not disk_full(error):
        error = error.__cause__ or error.__context__
    if error is None:
        return None
    where = Path(getattr(error, "filename", None) or folder)
    return DiskFullError(
        f"no space left to write {where}: its disk has {size_text(free_bytes(where))} free; free some "
        "space or choose a folder on another disk, then run again"
    )


def reserve(path: Path, size: int) -> None:
    """Claim ``size`` bytes on disk for the file at ``path`` before it is written through a memory map: a mapped
    page that finds the disk full raises SIGBUS, which ends the process without a word. Where the OS cannot
    allocate ahead (macOS), the free space is checked instead."""
    if not hasattr(os, "posix_fallocate"):
        if free_bytes(path) < size:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        return
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        os.posix_fallocate(descriptor, 0, size)
    finally:
        os.close(descriptor)
