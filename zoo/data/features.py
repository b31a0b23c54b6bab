"""Precomputed image features, memory-mapped: one (positions, feature_dim) grid per image, read a batch at a time.

Users with their own backbone extract features once (``zoo features`` does it with
any image frontend that has one) and then train with ``frontend=features`` in
seconds per epoch. A features file is two files side by side::

    NAME.npy          (images, positions, feature_dim) in numpy's .npy format, float16 or float32
    NAME.index.json   which image is which row, the grid, the dtype, the settings that made it,
                      and the array's size and fingerprint (a hash of its first and last rows)

An array is a grid flattened row-major (rows * columns positions); a pooled vector
is a 1 x 1 grid. A run opens the index and checks the array against it (shape,
dtype, size, fingerprint), so a file cut short or paired with another's index is
refused at once. It never reads the array whole: it maps the file read-only
(``numpy.load(mmap_mode="r")``), and each batch copies out its own rows
(:meth:`FeatureTable.rows`) and lets the mapped pages go, so a run's memory does not
grow with the number of images. The table pickles without its map: a data-loader
worker maps the file itself on first use. :func:`write_features` writes both files
under temporary names and renames them into place only when complete; it claims the
array's whole size on disk before writing through its map (a mapped write to a full
disk is SIGBUS, which kills the process without a word), so a full disk is one line.
"""

from __future__ import annotations

import hashlib
import json
import mmap
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from numpy.lib import format as npy

from zoo.disk import disk_full, no_space, reserve
from zoo.errors import ZooError, first_line

#: What the index says it is (a file from another program, or a later layout, is refused).
FORMAT, VERSION = "zoo-features", 1
INDEX_SUFFIX = ".index.json"
#: Element types a features array may have; float16 halves the file (and the page cache it takes) at no cost
#: a caption model can measure, since the frontend normalises the features in float32.
DTYPES = ("float16", "float32")
DEFAULT_DTYPE = "float16"
#: The files the earlier, whole-in-memory format used.
OLD_SUFFIXES = (".pt", ".npz")
RERUN = "rerun `zoo features`"
#: madvise advice that drops a mapping's pages from this process (they stay in the page cache); None where absent.
RELEASE = getattr(mmap, "MADV_DONTNEED", None)


class FeatureError(ZooError, ValueError):
    """A features file is missing, unreadable, cut short or inconsistent with its index."""


def index_path(path: Path) -> Path:
    """The index beside a features array: ``NAME.npy`` -> ``NAME.index.json``."""
    return path.with_name(path.stem + INDEX_SUFFIX)


class FeatureTable:
    """The features of many images in a mapped .npy file: :meth:`row` finds an image's row, :meth:`rows` reads some.

    ``grid`` is (rows, columns), ``positions`` = rows * columns vectors of
    ``feature_dim`` per image, the same for every image; ``made_by`` the settings
    that extracted them. The array is mapped on first use in each process, never
    pickled (a data-loader worker maps the file itself).
    """

    def __init__(self, path: Path, index: dict[str, Any]) -> None:
        self.path = path
        self.grid: tuple[int, int] = (index["grid"][0], index["grid"][1])
        self.feature_dim: int = index["feature_dim"]
        self.dtype: str = index["dtype"]
        self.made_by: dict[str, Any] = index["made_by"]
        self._row_of = {key: row for row, key in enumerate(index["keys"])}
        self._array: np.memmap | None = None

    @property
    def positions(self) -> int:
        return self.grid[0] * self.grid[1]

    def __len__(self) -> int:
        return len(self._row_of)

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_array": None}

    @property
    def array(self) -> np.memmap:
        """The (images, positions, feature_dim) array, mapped read-only; nothing is read until rows are."""
        if self._array is None:
            try:
                self._array = np.load(self.path, mmap_mode="r")
            except (OSError, ValueError) as error:  # moved, deleted or cut short since the run opened it
                raise FeatureError(f"cannot map features file {self.path} ({first_line(error)}); {RERUN}") from None
        return self._array

    def row(self, key: str) -> int:
        """The row of image ``key``; a file path finds its image by its trailing parts
        (``/data/flickr8k/images/x.jpg`` finds ``x.jpg``), so dataset images can be named by path."""
        parts = Path(key).parts
        for start in range(len(parts)):
            found = self._row_of.get("/".join(parts[start:]))
            if found is not None:
                return found
        raise FeatureError(
            f"no precomputed features for image '{key}'; a run that reads features captions only the images "
            "of its features file: extract them with `zoo features`, or use a run with an image frontend"
        )

    def rows(self, rows: Sequence[int]) -> torch.Tensor:
        """The grids of these rows, (len(rows), positions, feature_dim) in the file's dtype, copied out of the map.

        The map's pages are then dropped from this process (they stay in the page cache for the next read),
        so its resident memory holds about one batch, however many images the file has.
        """
        array = self.array
        batch = torch.from_numpy(array[np.asarray(rows, dtype=np.int64)])
        _release(array)
        return batch


def _release(array: np.memmap) -> None:
    """Drop a map's pages from this process's resident set; they stay in the page cache (or go to disk)."""
    if RELEASE is not None:
        array.base.madvise(RELEASE)


# ------------------------------------------------------------------ writing
def check_new(path: Path) -> None:
    """Refuse to write features to ``path`` unless it is a new ``.npy`` in a folder that exists (an existing file is
    never replaced)."""
    if path.suffix != ".npy":
        raise FeatureError(f"{path}: features are written as a memory-mapped .npy file; end the name with .npy")
    if not path.parent.is_dir():
        raise FeatureError(f"{path}: there is no folder {path.parent}; create it first or write the file elsewhere")
    for taken in (path, index_path(path)):
        if taken.exists():
            raise FeatureError(f"{taken} already exists; choose another file name or delete it first")


def write_features(
    path: str | Path,
    keys: Sequence[str],
    blocks: Iterable[torch.Tensor | np.ndarray],
    grid: tuple[int, int],
    dtype: str = DEFAULT_DTYPE,
    made_by: dict[str, Any] | None = None,
) -> FeatureTable:
    """Write the grids of images ``keys`` to a new ``path`` (NAME.npy) and its index; row k is ``keys[k]``.

    ``blocks`` are consecutive (B, rows * columns, feature_dim) batches of grids, so no more than one is held.
    Both files are written as ``*.partial`` and renamed into place once complete: an error or Ctrl-C removes
    them, and a killed write leaves only ``.partial`` files, which no run reads and the next write replaces.
    """
    path = Path(path)
    check_new(path)
    if dtype not in DTYPES:
        raise FeatureError(f"features dtype {dtype!r} is not one of {', '.join(DTYPES)}")
    if not keys or len(set(keys)) != len(keys):
        raise FeatureError(f"features need one distinct key per image, got {len(set(keys))} distinct of {len(keys)}")
    targets = (path, index_path(path))
    partials = [target.with_name(target.name + ".partial") for target in targets]
    placed: list[Path] = []
    try:
        array = _fill(partials[0], (len(keys), grid[0] * grid[1]), blocks, np.dtype(dtype))
        index = {
            "format": FORMAT,
            "version": VERSION,
            "images": len(keys),
            "grid": list(grid),
            "feature_dim": array.shape[2],
            "dtype": dtype,
            "bytes": partials[0].stat().st_size,
            "fingerprint": _fingerprint(array[0].tobytes(), array[-1].tobytes()),
            "made_by": made_by or {},
            "keys": list(keys),
        }
        del array
        partials[1].write_text(json.dumps(index, indent=1) + "\n")
        for partial, target in zip(partials, targets):
            _sync(partial)
            os.replace(partial, target)
            placed.append(target)
    except BaseException as error:
        written = sum(partial.stat().st_size for partial in partials if partial.exists())
        for leftover in (*partials, *placed):
            leftover.unlink(missing_ok=True)
        if disk_full(error):  # the header or the index: the array's space was claimed already
            raise no_space(path, written, at_least=True) from None
        raise
    return load_features(path)


def _fill(
    partial: Path, shape: tuple[int, int], blocks: Iterable[torch.Tensor | np.ndarray], dtype: np.dtype
) -> np.memmap:
    """Write ``blocks`` row after row into a new (images, positions, F) .npy at ``partial``; the first block gives F."""
    (images, positions), array, filled = shape, None, 0
    for block in blocks:
        block = np.asarray(block.detach().cpu() if isinstance(block, torch.Tensor) else block, dtype=dtype)
        if block.ndim != 3 or block.shape[1] != positions:
            raise FeatureError(f"a block of grids is (images, {positions} positions, feature_dim), not {block.shape}")
        if array is None:
            array = _mapped(partial, (images, positions, block.shape[2]), dtype)
        if block.shape[2] != array.shape[2] or filled + len(block) > images:
            raise FeatureError(f"grids of shape {block.shape[1:]} after {filled} rows do not fit {array.shape}")
        array[filled : filled + len(block)] = block
        filled += len(block)
        array.flush()  # written out, so the pages can go: writing holds one block too, however many images
        _release(array)
    if filled != images:
        raise FeatureError(f"{filled} grids for {images} images")
    return array


def _mapped(partial: Path, shape: tuple[int, int, int], dtype: np.dtype) -> np.memmap:
    """A new .npy of ``shape`` at ``partial`` mapped for writing, its whole size claimed on disk first: a disk
    without the space is one line, before anything is written through the map."""
    array = npy.open_memmap(partial, mode="w+", dtype=dtype, shape=shape)
    size = array.offset + array.nbytes
    try:
        reserve(partial, size)
    except OSError as error:
        if not disk_full(error):
            raise
        del array  # unmapped, so removing the file frees what the claim took
        partial.unlink()
        raise no_space(partial.with_name(partial.name.removesuffix(".partial")), size) from None
    return array


def _sync(path: Path) -> None:
    """Data on disk before the rename that publishes it, so a crash cannot publish a file of zeros."""
    with open(path, "rb+") as handle:
        os.fsync(handle.fileno())


def _fingerprint(*rows: bytes) -> str:
    digest = hashlib.sha256()
    for row in rows:
        digest.update(row)
    return digest.hexdigest()


# ------------------------------------------------------------------ reading
def load_features(location: str | Path) -> FeatureTable:
    """Open the features file ``location`` (NAME.npy) after checking it against its index; every problem is one
    line naming the file and what to do. Only the index and the array's header and two rows are read."""
    path = Path(location)
    if not path.exists():
        raise FeatureError(f"features file {path} does not exist; make one with `zoo features`")
    if path.suffix in OLD_SUFFIXES or (path.is_dir() and any(p.suffix in OLD_SUFFIXES for p in path.iterdir())):
        raise FeatureError(
            f"{path} holds features in the old format, read whole into memory; {RERUN} to write the "
            "memory-mapped format (NAME.npy and its index)"
        )
    if path.is_dir():
        raise FeatureError(f"{path} is a folder; set task.features to the NAME.npy file `zoo features` wrote")
    if path.suffix != ".npy":
        raise FeatureError(f"features file {path} is not a .npy file; give the NAME.npy that `zoo features` wrote")
    index = _read_index(path)
    _check_array(path, index)
    return FeatureTable(path.resolve(), index)  # absolute: a worker may map it from another working folder


#: The fields of an index and their JSON types.
INDEX_FIELDS = {
    "images": int,
    "grid": list,
    "feature_dim": int,
    "dtype": str,
    "bytes": int,
    "fingerprint": str,
    "made_by": dict,
    "keys": list,
}


def _read_index(path: Path) -> dict[str, Any]:
    where = index_path(path)
    if not where.is_file():
        raise FeatureError(
            f"features file {path} has no index {where.name} beside it (an interrupted write, or only the .npy "
            f"was copied); copy the index too or {RERUN}"
        )
    try:
        index = json.loads(where.read_text())
    except (OSError, ValueError) as error:
        raise FeatureError(f"cannot read the features index {where} ({first_line(error)}); {RERUN}") from None
    problem = _malformed(index)
    if problem:
        raise FeatureError(f"the features index {where} is not one `zoo features` wrote ({problem}); {RERUN}")
    return index


def _malformed(index: Any) -> str | None:
    """What is wrong with a parsed index, or None."""
    if not isinstance(index, dict) or index.get("format") != FORMAT or index.get("version") != VERSION:
        return f"not a {FORMAT} index of version {VERSION}"
    wrong = [field for field, kind in INDEX_FIELDS.items() if not isinstance(index.get(field), kind)]
    if wrong:
        return f"{', '.join(wrong)} missing or of the wrong type"
    if index["dtype"] not in DTYPES or len(index["grid"]) != 2 or len(index["keys"]) != index["images"]:
        return "its dtype, grid or number of keys is wrong"
    return None


def _check_array(path: Path, index: dict[str, Any]) -> None:
    """The array's header, size and first and last rows must be those its index recorded."""
    try:
        with open(path, "rb") as handle:
            version = npy.read_magic(handle)
            read_header = npy.read_array_header_1_0 if version == (1, 0) else npy.read_array_header_2_0
            shape, fortran_order, dtype = read_header(handle)
            offset = handle.tell()
            expected = (index["images"], index["grid"][0] * index["grid"][1], index["feature_dim"])
            if shape != expected or dtype != np.dtype(index["dtype"]) or fortran_order:
                raise FeatureError(
                    f"features file {path} does not match its index (shape {shape} {dtype}, index says {expected} "
                    f"{index['dtype']}); {RERUN}"
                )
            size, row_bytes = os.fstat(handle.fileno()).st_size, int(np.prod(shape[1:])) * dtype.itemsize
            needed = offset + shape[0] * row_bytes
            if size != needed:
                cut = "cut short (an interrupted copy, a full disk?)" if size < needed else "longer than its shape"
                raise FeatureError(f"features file {path} is {cut}: {size} bytes of {needed}; {RERUN}")
            handle.seek(offset)
            first = handle.read(row_bytes)
            handle.seek(offset + (shape[0] - 1) * row_bytes)
            last = handle.read(row_bytes)
    except FeatureError:
        raise
    except (OSError, ValueError) as error:
        raise FeatureError(f"features file {path} is not a .npy array ({first_line(error)}); {RERUN}") from None
    if size != index["bytes"] or _fingerprint(first, last) != index["fingerprint"]:
        raise FeatureError(
            f"features file {path} does not match its index (another extraction's array or index); {RERUN}"
        )
