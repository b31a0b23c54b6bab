"""Data prepared once: a run's splits, tokenised, in memory-mapped files under a cache folder.

``zoo prepare`` (or the first ``zoo train`` that needs it) reads the dataset, fits the
task's codecs on the training split and writes every split's token ids
(:mod:`zoo.data.store`) into ``<paths.cache>/prepared/<dataset>-<key>/``. The key hashes
everything the files are made from: the dataset's, task's and tokenizer's settings, the
code of their plugins, and the contents of the dataset's files (:meth:`Dataset.files`),
or of its items where it names none. A changed file, setting or tokenizer gives another
key, so the data is prepared again; the same ones find the folder and read it at once.

One process prepares while the others wait on a lock (DDP ranks, a sweep's jobs, two
runs started together), then all map the same files. The work runs in a child process,
so the training process never holds the corpus as Python objects. A folder that is
incomplete or damaged (an interrupted prepare, a file cut short or overwritten, a manifest
zoo did not write: :func:`zoo.data.store.incomplete` checks every file's checksum) is
prepared again, never read; one that holds a file zoo does not write, or a file where the
folder should be, is refused in one line rather than deleted. A cache folder that cannot
be written and a disk that fills while preparing are one line too, leaving no partial folder.

Only tasks whose sources are id sequences (``Task.token_sources``) are prepared; image
sources are read through the task's own caches and ``zoo features``.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import inspect
import itertools
import json
import logging
import multiprocessing
import os
import shutil
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import OmegaConf

from zoo.contracts import SPLITS, Item, Task
from zoo.data.sampling import DataError
from zoo.data.store import (
    FORMAT_VERSION,
    MANIFEST,
    Sequences,
    SequenceWriter,
    id_dtype,
    incomplete,
    load_array,
    publish,
    read_manifest,
    save_array,
    write_manifest,
)
from zoo.disk import disk_full, no_space
from zoo.errors import ZooError
from zoo.registry import build, get

log = logging.getLogger(__name__)

#: Folder of the prepared data under ``paths.cache``.
PREPARED_DIR = "prepared"
#: The task's codecs (``Task.save``), inside a prepared folder, laid out as in a run directory.
CODECS_DIR = "codecs"
#: Items encoded at a time while preparing (one batch for the tokenizer's parallel encoder).
CHUNK_ITEMS = 50_000
#: The files a prepare writes for each split, beside the manifest and the codecs' folder.
SPLIT_FILES = (
    "source.bin",
    "source.offsets.npy",
    "target.bin",
    "target.offsets.npy",
    "source_size.npy",
    "target_item.npy",
    "items.jsonl",
)


class CacheError(ZooError):
    """The cache folder cannot hold prepared data, or something zoo did not write stands where it would."""


def cache_root(cfg: Any) -> Path:
    """Where prepared folders live: ``<paths.cache>/prepared``. An empty ``paths.cache`` (``ZOO_CACHE_DIR=``)
    is refused: it would prepare into whatever folder the command runs in."""
    cache = str(cfg.paths.cache).strip()
    if not cache:
        raise CacheError(
            "the cache folder is empty (ZOO_CACHE_DIR= or paths.cache=), which would put prepared data in the "
            "current folder: unset ZOO_CACHE_DIR (for ~/.cache/zoo) or give it a folder (ZOO_CACHE_DIR=/scratch/zoo)"
        )
    return Path(cache).expanduser() / PREPARED_DIR


def _plain(section: Any) -> Any:
    return OmegaConf.to_container(section, resolve=True, enum_to_str=True) if OmegaConf.is_config(section) else section


def _file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _code_digest(*classes: type) -> dict[str, str]:
    """The source files of the plugins' classes and their bases: changed code prepares again."""
    modules = {c.__module__: inspect.getsourcefile(c) for cls in classes for c in cls.__mro__ if c is not object}
    return {module: _file_digest(Path(file))[:16] for module, file in sorted(modules.items()) if file}


def key_inputs(cfg: Any) -> dict[str, Any]:
    """Everything the prepared files are made from (their folder's key is its hash)."""
    dataset_cls = get("dataset", cfg.dataset.name).cls
    task_cls = get("task", cfg.task.name).cls
    tokenizer_cls = get("tokenizer", cfg.tokenizer.name).cls
    dataset = build("dataset", cfg.dataset)
    files = dataset.files()
    if files is None:  # the dataset does not say what it reads: what it gives is hashed instead
        digest = hashlib.sha256()
        for split, items in dataset.splits().items():
            for item in items:
                digest.update(json.dumps([split, item.id, str(item.source), item.references]).encode())
        contents = {"items": digest.hexdigest()}
    else:
        contents = {str(path): _file_digest(Path(path)) for path in files}
    return {
        "format": FORMAT_VERSION,
        "dataset": _plain(cfg.dataset),
        "task": _plain(cfg.task),
        "tokenizer": _plain(cfg.tokenizer),
        "code": _code_digest(dataset_cls, task_cls, tokenizer_cls),
        "contents": contents,
    }


def folder_name(cfg: Any, inputs: dict[str, Any]) -> str:
    key = hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()[:16]
    return f"{cfg.dataset.name}-{key}"


class PreparedData:
    """A complete prepared folder, mapped: eval items, every split's sources and targets, the codecs."""

    def __init__(self, folder: Path, made_now: bool = False) -> None:
        self.folder = folder
        self.made_now = made_now  # prepared by this call rather than found
        self.manifest = read_manifest(folder)
        self.codecs = folder / CODECS_DIR

    def items(self, split: str) -> list[Item]:
        """An evaluation split's items (ids, sources and every reference, for the metrics and samples)."""
        with open(self.folder / f"{split}.items.jsonl", encoding="utf-8") as handle:
            return [Item(row["id"], row["source"], tuple(row["references"])) for row in map(json.loads, handle)]

    def sources(self, split: str) -> Sequences:
        return Sequences(self.folder, f"{split}.source", self.manifest["dtypes"]["source"])

    def targets(self, split: str) -> Sequences:
        return Sequences(self.folder, f"{split}.target", self.manifest["dtypes"]["target"])

    def target_item(self, split: str) -> np.ndarray:
        """The item each target row belongs to (training: every reference; evaluation: the first)."""
        return load_array(self.folder, f"{split}.target_item")

    def source_size(self, split: str) -> np.ndarray:
        """Positions each item's source takes in a batch (``Task.source_size``)."""
        return load_array(self.folder, f"{split}.source_size")

    def same_codecs(self, run_dir: Path) -> bool:
        """Whether ``run_dir`` holds the codecs these ids were made with, file for file."""
        return all(
            (run_dir / path.relative_to(self.codecs)).is_file()
            and (run_dir / path.relative_to(self.codecs)).read_bytes() == path.read_bytes()
            for path in self.codecs.rglob("*")
            if path.is_file()
        )


def trained_references(split: str, item: Item) -> tuple[str, ...]:
    """The references that make an item's target rows: every one in training (a pair each), the first in
    evaluation (its loss; the metrics score the output against all of them)."""
    return item.references if split == "train" else item.references[:1]


def preparable(task: Task) -> bool:
    """Tasks whose encoded sources are id sequences and whose fit test is the source's size are prepared."""
    return type(task).token_sources and type(task).fits is Task.fits


def prepared_data(cfg: Any) -> PreparedData:
    """The prepared folder of ``cfg``'s data, prepared first when there is none (or only a broken one)."""
    root = cache_root(cfg)
    inputs = key_inputs(cfg)
    folder = root / folder_name(cfg, inputs)
    why = incomplete(folder)
    if why is None:
        return PreparedData(folder)
    _check_removable(folder, why)
    with _exclusive(root / f"{folder.name}.lock", folder):
        why = incomplete(folder)
        if why is None:  # another process prepared it while this one waited
            return PreparedData(folder)
        if folder.exists():
            log.warning("prepared data %s cannot be used (%s): preparing it again", folder, why)
            shutil.rmtree(folder)
        for leftover in root.glob(f".{folder.name}.building-*"):  # a prepare killed outright; none runs now
            shutil.rmtree(leftover, ignore_errors=True)
        started = time.perf_counter()
        _in_child(_prepare, _plain(cfg), inputs, folder)
        log.info("prepared %s in %.0f s", folder, time.perf_counter() - started)
    return PreparedData(folder, made_now=True)


def _check_removable(folder: Path, why: str) -> None:
    """Refuse to prepare again over what zoo did not write (it would be deleted): a file or a link where the prepared
    folder should be, or a folder holding a file a prepare does not write."""
    if not folder.exists() and not folder.is_symlink():
        return
    if folder.is_symlink() or not folder.is_dir():
        raise CacheError(
            f"{folder} is where zoo keeps this data's prepared files, but it is a "
            f"{'link' if folder.is_symlink() else 'file'} zoo did not write; move or delete it, then run again"
        )
    ours = {MANIFEST, CODECS_DIR, *(f"{split}.{name}" for split in SPLITS for name in SPLIT_FILES)}
    foreign = sorted(path.name for path in folder.iterdir() if path.name not in ours)
    if foreign:
        raise CacheError(
            f"prepared data {folder} cannot be used ({why}) and holds {foreign[0]}, which zoo does not write; "
            "move what you keep there elsewhere or delete the folder, then run again"
        )


@contextlib.contextmanager
def _exclusive(lock_path: Path, folder: Path) -> Iterator[None]:
    """An exclusive ``flock`` on ``lock_path`` for as long as the block runs; waits, saying so, while another
    process holds it. The lock file stays (removing it would let a third process lock a new file). A cache
    folder that cannot be made or written is one line naming it."""
    try:
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(lock_path, "a")  # noqa: SIM115 (closed by the with below)
    except OSError as error:
        in_the_way = next((p for p in lock_path.parents if p.exists() and not p.is_dir()), None)
        why = f"{in_the_way} is a file" if in_the_way else f"{error.strerror}: {error.filename}"
        raise CacheError(
            f"cannot write prepared data to the cache folder {lock_path.parent} ({why}); set ZOO_CACHE_DIR "
            "(or paths.cache) to a folder you can write"
        ) from None
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log.info("waiting for another process preparing %s", folder)
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _in_child(function: Any, *args: Any) -> Any:
    """``function(*args)`` in a forked child, so the memory it takes goes back when it ends; its error is raised
    here. In this process where fork is unavailable. A signal that stops this process stops the child at once (it
    leaves signals to this process: :mod:`zoo.cli.signals`), rather than once it has finished."""
    if "fork" not in multiprocessing.get_all_start_methods():
        return function(*args)
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork")) as pool:
        try:
            return pool.submit(function, *args).result()
        except BaseException:
            for process in pool._processes.values():  # no public way to end a pool's worker before Python 3.14
                process.kill()
            raise


def _prepare(cfg: dict, inputs: dict, folder: Path) -> None:
    """Read the dataset, fit the codecs on the training split, write every split into a temporary folder beside
    ``folder`` and rename it into place once complete."""
    from zoo.data.datamodule import build_task  # the data module imports this module

    cfg = OmegaConf.create(cfg)
    task = build_task(cfg)
    splits = read_splits(cfg)
    building = folder.with_name(f".{folder.name}.building-{os.getpid()}")
    shutil.rmtree(building, ignore_errors=True)
    building.mkdir(parents=True)
    try:
        task.fit(splits["train"])
        task.save(building / CODECS_DIR)
        dtypes = {"source": id_dtype(task.source_description().vocab_size), "target": id_dtype(task.target_vocab_size)}
        counts = {split: _write_split(building, split, splits[split], task, dtypes) for split in SPLITS}
        write_manifest(building, {"inputs": inputs, "splits": counts, "dtypes": {k: v.name for k, v in dtypes.items()}})
        publish(building, folder)
    except Exception as error:
        if not disk_full(error):
            raise
        written = sum(path.stat().st_size for path in building.rglob("*") if path.is_file())
        shutil.rmtree(building, ignore_errors=True)  # before the free space is measured
        advice = "free some space, or set ZOO_CACHE_DIR (or paths.cache) to a folder on a larger disk"
        raise no_space(folder, written, at_least=True, advice=advice) from None
    finally:
        shutil.rmtree(building, ignore_errors=True)


def read_splits(cfg: Any) -> dict[str, list[Item]]:
    """The dataset's splits; one that is empty is an error naming it."""
    splits = build("dataset", cfg.dataset).splits()
    missing = [s for s in SPLITS if not splits.get(s)]
    if missing:
        raise DataError(f"dataset '{cfg.dataset.name}' returned no {', '.join(missing)} items")
    return splits


def _write_split(folder: Path, split: str, items: Sequence[Item], task: Task, dtypes: dict) -> dict[str, int]:
    """One split's sources (one per item) and targets (every reference in training, the first in evaluation)."""
    sources = SequenceWriter(folder, f"{split}.source", dtypes["source"])
    targets = SequenceWriter(folder, f"{split}.target", dtypes["target"])
    source_size, target_item = [], []
    for start in range(0, len(items), CHUNK_ITEMS):
        chunk = items[start : start + CHUNK_ITEMS]
        encoded = task.encode_sources([item.source for item in chunk])
        sources.extend(encoded)
        source_size.extend(task.source_size(source) for source in encoded)
        references = [trained_references(split, item) for item in chunk]
        targets.extend(task.encode_targets(list(itertools.chain.from_iterable(references))))
        target_item.extend(start + k for k, refs in enumerate(references) for _ in refs)
    sources.close()
    targets.close()
    save_array(folder, f"{split}.source_size", source_size)
    save_array(folder, f"{split}.target_item", target_item)
    if split != "train":  # evaluation keeps its items: references for the metrics, sources for samples
        with open(folder / f"{split}.items.jsonl", "w", encoding="utf-8") as handle:
            for item in items:
                handle.write(json.dumps({"id": item.id, "source": item.source, "references": item.references}) + "\n")
    return {"items": len(items), "targets": len(target_item)}
