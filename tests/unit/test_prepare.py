"""Data prepared once: memory-mapped splits equal the in-memory path, are rebuilt when stale or broken, never
used half-written, and prepared once when two processes ask at the same time."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
from helpers import TINY, ForkedZoo, fork_zoo
from helpers.corpus import tsv_config, write_corpus

import zoo.data.prepare
from zoo.data.datamodule import ZooDataModule
from zoo.data.prepare import CacheError, cache_root, prepared_data
from zoo.data.store import MANIFEST, Sequences, incomplete
from zoo.registry import discovery

discovery.discover()


def metric_columns(run: Path, prefix: str) -> list[tuple[str, str]]:
    with open(run / "metrics.csv", encoding="utf-8") as handle:
        return [
            (row["step"], value)
            for row in csv.DictReader(handle)
            for key, value in row.items()
            if key.startswith(prefix) and value
        ]


@pytest.mark.slow
def test_prepared_training_equals_the_in_memory_path(trained_run, tmp_path):
    """The shared tiny run read prepared files (the default); the same run encoded in memory gives the same
    losses, validation scores and test hypotheses, to the last digit."""
    fork_zoo("train", *TINY, "data.prepare=false", f"hydra.run.dir={tmp_path / 'run'}", cwd=tmp_path)
    for prefix in ("train/loss", "val/"):
        assert metric_columns(trained_run, prefix) == metric_columns(tmp_path / "run", prefix)
    hypotheses = (trained_run / "test_hypotheses.txt").read_text()
    assert hypotheses.strip() and hypotheses == (tmp_path / "run" / "test_hypotheses.txt").read_text()


def test_splits_are_mapped_and_the_run_keeps_the_codecs(tmp_path):
    write_corpus(tmp_path / "corpus")
    data = ZooDataModule(tsv_config(tmp_path / "corpus", tmp_path / "cache"), tmp_path / "run")
    data.setup()
    assert isinstance(data.encoded["train"].sources, Sequences)
    assert isinstance(data.encoded["train"].targets.ids.base, np.memmap)  # a view of the file's mapping
    assert "train" not in data.items and len(data.items["val"]) == 30
    assert data.prepared.same_codecs(tmp_path / "run")
    source, target, index = data.encoded["train"][0]
    assert data.task.decode_targets([target]) == ["a sentence number 0"] and index == 0


def test_a_changed_file_is_prepared_again(tmp_path):
    write_corpus(tmp_path / "corpus")
    cfg = tsv_config(tmp_path / "corpus", tmp_path / "cache")
    first = prepared_data(cfg)
    assert first.made_now and not prepared_data(cfg).made_now  # the same files: found, not made again
    (tmp_path / "corpus" / "train.tsv").write_text("ein anderer satz\tanother sentence\n", encoding="utf-8")
    second = prepared_data(cfg)
    assert second.made_now and second.folder != first.folder
    assert second.manifest["splits"]["train"]["items"] == 1


def test_a_folder_cut_short_is_rebuilt_not_read(tmp_path, caplog):
    write_corpus(tmp_path / "corpus")
    cfg = tsv_config(tmp_path / "corpus", tmp_path / "cache")
    folder = prepared_data(cfg).folder
    tokens = folder / "train.target.bin"
    tokens.write_bytes(tokens.read_bytes()[:-6])  # a copy or disk that cut the file short
    assert "cut short" in incomplete(folder)
    rebuilt = prepared_data(cfg)
    assert rebuilt.made_now and rebuilt.folder == folder and incomplete(folder) is None
    assert "cannot be used" in caplog.text


def test_an_interrupted_prepare_leaves_nothing_that_is_used(tmp_path, monkeypatch):
    """A prepare that stops half-way (here: an error while writing the test split) publishes nothing; one killed
    outright leaves a building folder, which the next prepare removes and never reads."""
    write_corpus(tmp_path / "corpus")
    cfg = tsv_config(tmp_path / "corpus", tmp_path / "cache")
    write_split = zoo.data.prepare._write_split

    def stopping(folder, split, *args):
        if split == "test":
            raise KeyboardInterrupt  # what Ctrl-C raises in the middle of the work
        return write_split(folder, split, *args)

    monkeypatch.setattr(zoo.data.prepare, "_write_split", stopping)
    with pytest.raises(KeyboardInterrupt):
        prepared_data(cfg)
    root = cache_root(cfg)
    assert not [p for p in root.iterdir() if p.is_dir()]  # neither a prepared folder nor a half-built one
    monkeypatch.setattr(zoo.data.prepare, "_write_split", write_split)

    name = zoo.data.prepare.folder_name(cfg, zoo.data.prepare.key_inputs(cfg))
    leftover = root / f".{name}.building-99999"  # a prepare killed with SIGKILL left this
    leftover.mkdir()
    (leftover / "train.source.bin").write_bytes(b"\0\0")
    prepared = prepared_data(cfg)
    assert prepared.made_now and not leftover.exists() and (prepared.folder / MANIFEST).is_file()


SLOW_DATASET = """
import time
from dataclasses import dataclass

from zoo.api import Dataset, Item, register


@register("dataset", "slow")
class Slow(Dataset):
    @dataclass
    class Config:
        pairs: int = 40

    def files(self):
        return []

    def splits(self):
        time.sleep(1)  # a large corpus: whoever prepares holds the lock a while
        items = [Item(str(k), f"ein satz {k}", (f"a sentence {k}",)) for k in range(self.cfg.pairs)]
        return {"train": items, "val": items[:5], "test": items[:5]}
"""


@pytest.mark.slow
def test_two_processes_preparing_at_once_prepare_it_once(tmp_path):
    """Two `zoo prepare` started together: one prepares, the other waits for it and then reads the same folder."""
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "slow.py").write_text(SLOW_DATASET)
    env = {"ZOO_CACHE_DIR": str(tmp_path / "cache")}
    both = [ForkedZoo("prepare", "plugin_dirs=[plugins]", "dataset=slow", cwd=tmp_path, env=env) for _ in "ab"]
    done = [process.wait(check=False) for process in both]
    assert [proc.returncode for proc in done] == [0, 0], [proc.stderr for proc in done]
    said = sorted(proc.stdout.split(":")[1].split(",")[-1].strip() for proc in done)
    assert said[0] == "already prepared" and said[1].startswith("prepared in")
    (folder,) = [p for p in (tmp_path / "cache" / "prepared").iterdir() if p.is_dir()]
    assert incomplete(folder) is None and all(str(folder) in proc.stdout for proc in done)


def test_a_file_overwritten_with_bytes_of_its_size_is_rebuilt_not_trained_on(tmp_path, caplog):
    """Random bytes of the right size pass a size check; the checksum finds them, and the folder is prepared
    again (said once) into the very files zoo wrote first."""
    write_corpus(tmp_path / "corpus")
    cfg = tsv_config(tmp_path / "corpus", tmp_path / "cache")
    folder = prepared_data(cfg).folder
    tokens = folder / "train.target.bin"
    written = tokens.read_bytes()
    tokens.write_bytes(np.random.default_rng(0).bytes(len(written)))
    assert "checksum differs" in incomplete(folder)
    rebuilt = prepared_data(cfg)
    assert rebuilt.made_now and tokens.read_bytes() == written and incomplete(folder) is None
    assert caplog.text.count("cannot be used") == 1 and "train.target.bin is not the file zoo wrote" in caplog.text


@pytest.mark.parametrize(
    "manifest",
    [b"[]", b'{"format": 2, "files": {}}', b"\xff\xfe not json", b'{"format": 1, "files": {}}'],
    ids=["a list", "edited", "unreadable", "older format"],
)
def test_a_manifest_zoo_did_not_write_is_rebuilt(tmp_path, manifest):
    write_corpus(tmp_path / "corpus")
    cfg = tsv_config(tmp_path / "corpus", tmp_path / "cache")
    folder = prepared_data(cfg).folder
    (folder / MANIFEST).write_bytes(manifest)
    assert incomplete(folder) is not None
    rebuilt = prepared_data(cfg)
    assert rebuilt.made_now and incomplete(folder) is None and rebuilt.manifest["splits"]["train"]["items"] == 30


@pytest.mark.parametrize("in_the_way", ["a file", "a folder with a user's file"])
def test_what_zoo_did_not_write_is_refused_never_deleted(tmp_path, in_the_way):
    """A broken prepared folder is removed only when all it holds is what a prepare writes."""
    write_corpus(tmp_path / "corpus")
    cfg = tsv_config(tmp_path / "corpus", tmp_path / "cache")
    folder = cache_root(cfg) / zoo.data.prepare.folder_name(cfg, zoo.data.prepare.key_inputs(cfg))
    folder.parent.mkdir(parents=True)
    if in_the_way == "a file":
        mine, says = folder, "is a file zoo did not write"
    else:
        folder.mkdir()
        (folder / MANIFEST).write_text("[]")
        mine, says = folder / "notes.txt", "holds notes.txt, which zoo does not write"
    mine.write_text("the user's")
    with pytest.raises(CacheError, match=says):
        prepared_data(cfg)
    assert mine.read_text() == "the user's"
