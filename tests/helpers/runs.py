"""Tiny real runs: the overrides that make a training run take seconds, and the runs several tests read."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import torch
from omegaconf import OmegaConf

from helpers.config import composed
from helpers.plugins import NUMBERS_PLUGIN
from helpers.processes import fork_zoo
from helpers.readme import fenced_block_after

# Overrides that make a real training run take seconds: tiny data, tiny model, one epoch.
TINY = [
    "experiment=smoke",
    "frontend.dim=32",
    "encoder.hidden_size=32",
    "decoder.hidden_size=32",
    "decoder.embed_dim=32",
    "trainer.enable_progress_bar=false",
]

#: Encoders whose defaults take seconds a batch, and narrow settings that train them in a fraction of that. A test
#: that sweeps every encoder trains these alone (an override names one encoder's fields).
NARROW_ENCODERS = {
    "transformer": ["encoder.d_model=32", "encoder.heads=2", "encoder.ff_dim=64", "encoder.layers=1"],
    "mamba": ["encoder.d_model=32", "encoder.d_state=8", "encoder.layers=1"],  # its scan: 8-20 s at its defaults
}

#: A search on tiny settings (the family and its budget aside): what resuming it repeats.
SEARCH_TINY = [
    "hydra/sweeper=optuna",
    *TINY,
    "dataset.train_size=64",
    "dataset.val_size=8",
    "dataset.test_size=8",
]


#: A seconds-long captioning run: a few tiny scenes, a tiny CNN and decoder, one epoch, tested on six scenes.
CAPTION_TINY = [
    "task=captioning",
    "dataset.train_size=40",
    "dataset.val_size=6",
    "dataset.test_size=6",
    "task.image_size=32",  # a 4 x 4 grid after the CNN's three halvings
    "frontend.dim=32",
    "decoder.hidden_size=32",
    "decoder.embed_dim=32",
    "trainer.max_epochs=1",
    "trainer.enable_progress_bar=false",
    "samples=2",
    "latency_items=2",
]


def train_finished_run(work: Path) -> Path:
    """A real, tiny training run in ``work/run``."""
    work.mkdir(parents=True, exist_ok=True)
    fork_zoo("train", *TINY, f"hydra.run.dir={work / 'run'}", cwd=work)
    return work / "run"


def write_plugin_folder(folder: Path) -> Path:
    """A plugin folder with the README's `distance` scorer and a third party's `sorting` task (its own kind of
    source, its dataset and frontend: helpers.plugins)."""
    folder.mkdir(parents=True)
    (folder / "distance.py").write_text(fenced_block_after("<!-- docs-test: plugin my_plugins/distance.py -->"))
    (folder / "sorting.py").write_text(NUMBERS_PLUGIN)
    return folder


def train_plugin_run(work: Path) -> Path:
    """A tiny run in ``work/run`` of the folder plugins' `sorting` task attending with their `distance` scorer,
    whose plugin folder is gone since."""
    write_plugin_folder(work / "my_plugins")
    fork_zoo(
        "train",
        *TINY,
        "plugin_dirs=[my_plugins]",
        "task=sorting",
        "attention=distance",
        f"hydra.run.dir={work / 'run'}",
        cwd=work,
    )
    shutil.rmtree(work / "my_plugins")
    return work / "run"


def train_caption_run(work: Path) -> Path:
    """A real, tiny captioning run (:data:`CAPTION_TINY`) in ``work/run``."""
    work.mkdir(parents=True, exist_ok=True)
    fork_zoo("train", *CAPTION_TINY, f"hydra.run.dir={work / 'run'}", cwd=work)
    return work / "run"


def initial_weights(folder: Path, *overrides: str, seed: int = 7) -> Path:
    """A checkpoint of the tiny captioner, as a run of ``overrides`` would write it (in ``folder``'s checkpoints/,
    its tokenizers/ beside them), with weights of ``seed``."""
    from zoo.data.datamodule import ZooDataModule  # Lightning: imported by the tests that need it, so that
    from zoo.training.module import ZooModule  # pytest-xdist's controller, which runs none, starts its workers sooner

    cfg = composed(*CAPTION_TINY, *overrides)
    data = ZooDataModule(cfg, folder)
    data.setup()
    torch.manual_seed(seed)
    container = OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)
    source = dataclasses.asdict(data.task.source_description())
    module = ZooModule(container, source, data.task.target_vocab_size)
    stored = {"cfg": container, "source": source, "target_vocab_size": data.task.target_vocab_size}
    path = folder / "checkpoints" / f"init-{seed}.ckpt"
    path.parent.mkdir()
    torch.save({"state_dict": module.state_dict(), "hyper_parameters": stored}, path)
    return path
