"""A tiny parallel corpus on disk (``dataset=parallel`` reads its .tsv splits) and the config that prepares it."""

from __future__ import annotations

from pathlib import Path

from omegaconf import OmegaConf

from zoo import registry


def tsv_config(root: Path, cache: Path):
    """The config of a word-level translation run on the corpus at ``root``, preparing its data in ``cache``."""
    return OmegaConf.create(
        {
            "seed": 1,
            "task": registry.default_config("task", "translation"),
            "dataset": registry.default_config("dataset", "parallel", root=str(root)),
            "tokenizer": registry.default_config("tokenizer", "word"),
            "frontend": registry.default_config("frontend", "tokens"),
            "data": {"max_tokens": 200, "max_len": 64, "num_workers": 0, "prepare": True},
            "paths": {"cache": str(cache)},
        }
    )


def write_corpus(root: Path, pairs: int = 30) -> None:
    """train, val and test_2016_flickr .tsv files of ``pairs`` numbered sentence pairs each."""
    root.mkdir(exist_ok=True)
    for split in ("train", "val", "test_2016_flickr"):
        lines = [f"ein satz nummer {k}\ta sentence number {k}" for k in range(pairs)]
        (root / f"{split}.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
