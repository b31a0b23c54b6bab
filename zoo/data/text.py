"""Tokenizers in a run directory: train on the training split, save atomically, load.

A task that reads or writes text keeps one file per side under
``run_dir/tokenizers/`` (``source.json``, ``target.json``), so ids never change
within a run and a finished run can be used without its data.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from zoo.contracts import SPECIAL_TOKENS, Tokenizer
from zoo.contracts.task import TaskError
from zoo.registry import build

TOKENIZER_DIR = "tokenizers"


def tokenizer_path(run_dir: str | os.PathLike, side: str) -> Path:
    """Where a run keeps the tokenizer of ``side`` (``"source"`` or ``"target"``)."""
    return Path(run_dir) / TOKENIZER_DIR / f"{side}.json"


def train_tokenizer(tokenizer_cfg: Any, texts: Iterable[str]) -> Tokenizer:
    """A new tokenizer of the kind ``tokenizer_cfg`` names (a ``tokenizer`` section: ``{"name": "bpe", ...}``),
    trained on ``texts``, such as the training split's sources; save it with :func:`save_tokenizer`, so that its
    ids stay the run's."""
    tokenizer = build("tokenizer", tokenizer_cfg)
    tokenizer.train(texts)
    return tokenizer


def save_tokenizer(tokenizer: Tokenizer, path: Path) -> None:
    """Write a tokenizer so the file appears complete or not at all
    (the processes of a multi-GPU run may write the same file at the same time)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        tokenizer.save(str(partial))
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)  # a write cut short (a full disk) leaves nothing behind


def save_tokenizers(run_dir: str | os.PathLike, tokenizers: dict[str, Tokenizer]) -> None:
    """Write each side's tokenizer (``{"source": ..., "target": ...}``) where the run keeps it."""
    for side, tokenizer in tokenizers.items():
        save_tokenizer(tokenizer, tokenizer_path(run_dir, side))


def tokenizers_saved(run_dir: str | os.PathLike, sides: Iterable[str]) -> bool:
    """Whether the run keeps a tokenizer of every one of ``sides``."""
    return all(tokenizer_path(run_dir, side).is_file() for side in sides)


def load_tokenizer(tokenizer_cfg: Any, path: Path) -> Tokenizer:
    """The tokenizer a run trained, read from ``path`` (:func:`tokenizer_path`) into the kind ``tokenizer_cfg``
    names: a finished run decodes with it, without its data. No file there is a :class:`TaskError` saying to train
    first."""
    if not path.is_file():
        raise TaskError(f"no trained tokenizer {path}; train a model in {path.parent.parent} first")
    tokenizer = build("tokenizer", tokenizer_cfg)
    tokenizer.load(str(path))
    return tokenizer


def token_labels(tokenizer: Tokenizer, ids: list[int]) -> list[str]:
    """Readable text of each id: special tokens by name, spaces as '␣', else the decoded piece."""
    pieces = tokenizer.decode([[i] for i in ids]) if ids else []
    labels = []
    for i, piece in zip(ids, pieces):
        if i < len(SPECIAL_TOKENS):
            labels.append(SPECIAL_TOKENS[i])
        elif piece.strip() == "":
            labels.append("␣" * max(1, len(piece)) if piece else f"#{i}")
        else:
            labels.append(piece)
    return labels
