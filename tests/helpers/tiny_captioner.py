"""A captioning task fitted on a few synthetic scenes and real, untrained tiny captioners: for the tests of
attention pictures and the explorer on an image (no training, so a model's weights are fixed by its seed)."""

from __future__ import annotations

import torch

from zoo import registry
from zoo.model import Seq2Seq
from zoo.registry import discovery

#: Captions of at most this many tokens (end of sentence included): small pages and pictures.
CAPTION_LEN = 5
#: Three CNN stages halve the 64 px scenes to an 8 x 8 grid.
GRID = (8, 8)


def caption_task():
    """The captioning task with a word tokenizer fitted on eight scenes' captions."""
    discovery.discover()
    scenes = registry.build("dataset", registry.default_config("dataset", "scenes", train_size=8))
    task = registry.build(
        "task",
        registry.default_config("task", "captioning", max_caption_len=CAPTION_LEN),
        tokenizer=registry.default_config("tokenizer", "word"),
        frontend=registry.default_config("frontend", "cnn"),
    )
    task.fit([scenes.item("train", k) for k in range(8)])
    return task, scenes.item("test", 0).source


def caption_model(task, decoder: str = "transformer", layers: int = 2, heads: int = 3):
    """A CNN frontend read straight by the decoder (``identity`` encoder), as ``task=captioning`` builds it."""
    names = {"frontend": "cnn", "posenc": "none", "encoder": "identity", "decoder": decoder, "attention": "scaled_dot"}
    small = {"dim": 4 * heads, "channels": [8, 8, 8], "d_model": 4 * heads, "heads": heads, "layers": layers}
    small |= {"ff_dim": 16, "hidden_size": 12, "embed_dim": 12}
    cfg = {}
    for kind, name in names.items():
        defaults = registry.default_config(kind, name)
        cfg[kind] = {**defaults, **{k: v for k, v in small.items() if k in defaults}}
    torch.manual_seed(3)  # its untrained transformer writes a five-word caption ("big big are are are")
    return Seq2Seq(cfg, task.source_description(), task.target_vocab_size)
