"""Prepared splits on disk: token sequences as one flat array and an index, memory-mapped.

The layout is fairseq's indexed dataset (Ott et al., 2019) in numpy: a split's
sequences are concatenated into ``NAME.bin`` (raw ids of one dtype) and
``NAME.offsets.npy`` holds where each starts (``n + 1`` int64, the last is the
total). Reading maps both (``numpy.memmap``): a process holds only the pages it
touches, and processes that read the same file share them in the page cache, so
DataLoader workers and DDP ranks do not each hold a copy.

A prepared folder is complete when its :data:`MANIFEST` exists, is the one zoo
wrote (its own checksum matches) and every file it lists has the size and the
BLAKE2b checksum it records. The manifest is written last and the folder is
built under a temporary name and renamed into place (:func:`publish`), so an
interrupted prepare leaves nothing that is read; a file cut short, removed or
overwritten afterwards makes the folder incomplete (:func:`incomplete`), never
silently used. Checking reads every file once as a run opens the folder (0.1 s
for the 91 MB of a million pairs, docs/results.md "Data at scale").
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

#: Bumped whenever the files' layout or meaning changes: a folder of another version is prepared again.
FORMAT_VERSION = 2
MANIFEST = "manifest.json"
#: The manifest's field that holds the checksum of the rest of it.
CHECKSUM = "blake2b"


def id_dtype(vocab_size: int) -> np.dtype:
    """The smallest unsigned type that holds every id of a vocabulary (uint16 for up to 65,536 ids)."""
    return np.dtype(np.uint16 if 0 < vocab_size <= 1 << 16 else np.int32)


class SequenceWriter:
    """Appends id sequences to ``NAME.bin`` chunk by chunk; :meth:`close` writes the offsets."""

    def __init__(self, folder: Path, name: str, dtype: np.dtype) -> None:
        self.folder, self.name, self.dtype = folder, name, np.dtype(dtype)
        self.handle = open(folder / f"{name}.bin", "wb")  # noqa: SIM115 (closed in close())
        self.lengths: list[np.ndarray] = []
        self.limit = np.iinfo(self.dtype).max

    def extend(self, sequences: Sequence[Sequence[int]]) -> None:
        lengths = np.fromiter(map(len, sequences), dtype=np.int64, count=len(sequences))
        flat = np.fromiter(itertools.chain.from_iterable(sequences), dtype=np.int64, count=int(lengths.sum()))
        if flat.size and (flat.min() < 0 or flat.max() > self.limit):
            raise ValueError(f"{self.name}: an id outside 0..{self.limit} ({self.dtype}); the vocabulary is too large")
        flat.astype(self.dtype).tofile(self.handle)
        self.lengths.append(lengths)

    def close(self) -> None:
        self.handle.close()
        offsets = np.zeros(1 + sum(len(part) for part in self.lengths), dtype=np.int64)
        np.cumsum(np.concatenate([np.zeros(0, np.int64), *self.lengths]), out=offsets[1:])
        np.save(self.folder / f"{self.name}.offsets.npy", offsets)


class Sequences(Sequence[list[int]]):
    """The id sequences of one file pair, mapped read-only; ``sequences[k]`` is a list of ints."""

    def __init__(self, folder: Path, name: str, dtype: str) -> None:
        # Plain ndarray views of the mappings: indexing a np.memmap runs Python code per access, three per item.
        self.offsets = np.load(folder / f"{name}.offsets.npy", mmap_mode="r").view(np.ndarray)
        size = int(self.offsets[-1])
        ids = np.memmap(folder / f"{name}.bin", dtype=dtype, mode="r", shape=(size,)) if size else np.zeros(0)
        self.ids = ids.view(np.ndarray)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, k: int) -> list[int]:  # type: ignore[override]
        return self.ids[self.offsets[k] : self.offsets[k + 1]].tolist()

    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)


def save_array(folder: Path, name: str, values: Iterable[int] | np.ndarray) -> None:
    np.save(folder / f"{name}.npy", np.asarray(values, dtype=np.int64))


def load_array(folder: Path, name: str) -> np.ndarray:
    return np.load(folder / f"{name}.npy", mmap_mode="r")


def checksum(path: Path) -> str:
    """A file's BLAKE2b digest: fast enough to check every prepared file each time a run opens it."""
    digest = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _manifest_checksum(manifest: dict) -> str:
    """The manifest's own checksum: one edited or written by hand is not trusted to describe the files."""
    text = json.dumps({k: v for k, v in manifest.items() if k != CHECKSUM}, sort_keys=True)
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def write_manifest(folder: Path, manifest: dict) -> None:
    """The manifest, listing every file of the folder with its size and checksum, and its own checksum: written
    last, it marks the folder complete."""
    files = {
        str(path.relative_to(folder)): {"bytes": path.stat().st_size, CHECKSUM: checksum(path)}
        for path in sorted(folder.rglob("*"))
        if path.is_file() and path.name != MANIFEST
    }
    manifest = json.loads(json.dumps({"format": FORMAT_VERSION, **manifest, "files": files}))  # as it reads back
    text = json.dumps({**manifest, CHECKSUM: _manifest_checksum(manifest)}, indent=1, sort_keys=True)
    (folder / MANIFEST).write_text(text, encoding="utf-8")


def read_manifest(folder: Path) -> dict:
    return json.loads((folder / MANIFEST).read_text(encoding="utf-8"))


def incomplete(folder: Path) -> str | None:
    """Why the prepared folder cannot be used (no manifest, one zoo did not write, another format, a file missing,
    cut short or changed), or None."""
    try:
        manifest = read_manifest(folder)
    except FileNotFoundError:
        return "it has no manifest (its prepare did not finish)"
    except (OSError, ValueError) as error:
        return f"its manifest is unreadable ({error})"
    if not isinstance(manifest, dict):
        return f"its manifest is a JSON {type(manifest).__name__}, not the object zoo writes"
    if manifest.get("format") != FORMAT_VERSION:
        return f"it is format {manifest.get('format')}, this zoo reads {FORMAT_VERSION}"
    if manifest.get(CHECKSUM) != _manifest_checksum(manifest):
        return "its manifest was changed after zoo wrote it"
    files = manifest["files"]
    for name, entry in files.items():
        path = folder / name
        if not path.is_file():
            return f"{name} is missing"
        if path.stat().st_size != entry["bytes"]:
            return f"{name} has {path.stat().st_size} bytes, the manifest says {entry['bytes']} (cut short or changed)"
    for name, entry in files.items():
        try:
            if checksum(folder / name) != entry[CHECKSUM]:
                return f"{name} is not the file zoo wrote: its checksum differs (overwritten or damaged)"
        except OSError as error:
            return f"{name} is unreadable ({error.strerror})"
    return None


def publish(building: Path, folder: Path) -> bool:
    """Rename the finished ``building`` folder to ``folder`` in one step; False (and ``building`` removed) when
    another process published it first."""
    try:
        os.rename(building, folder)
        return True
    except OSError:
        if folder.is_dir() and incomplete(folder) is None:
            shutil.rmtree(building, ignore_errors=True)
            return False
        raise
