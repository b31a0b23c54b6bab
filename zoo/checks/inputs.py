"""Tiny configs and inputs the contract checks build components with and feed them.

Components are built from their default configs with known size fields capped
(:func:`small_config`), so a check takes milliseconds; a component without
such fields is built as it is.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch

from zoo import registry
from zoo.contracts import BOS, PAD, SourceDescription

B, S, T, V, D = 3, 6, 5, 20, 32  # batch, source length, target length, vocabulary, input width
LENGTHS = torch.tensor([6, 4, 1])  # real source tokens per row: one full row, one padded, one almost empty
TOL = 1e-5

#: Known size fields and the largest value a check needs; only the fields a component has are touched.
SMALL_SIZES = {
    "dim": 32,
    "d_model": 32,
    "embed_dim": 32,
    "hidden_size": 16,
    "ffn_dim": 64,
    "ff_dim": 64,
    "ffn_size": 64,
    "dim_feedforward": 64,
    "heads": 2,
    "num_heads": 2,
    "layers": 2,
    "num_layers": 2,
    "reservoir_size": 32,
    "units": 32,
    "train_size": 20,
    "val_size": 5,
    "test_size": 5,
}
#: Words in a field name that point at files on disk: a dataset with such a field is not built without its data.
FILE_FIELDS = ("root", "path", "dir", "file", "url")
#: Attention layouts a component is also checked in when its config has all their fields (heads 4: two groups of 2).
LAYOUTS = {
    "gqa": {"heads": 4, "kv_heads": 2},
    "mqa": {"kv_heads": 1},
    "mla": {"kv_latent_dim": 8},
    "parameter-free": {"self_attention_projections": False},
    # a recurrent decoder's attention layers (zoo.nn.hybrid): cross-attention in place of the prefix, and a hybrid
    "encoder-decoder": {"prefix": "none", "cross_every": 1},
    "reversed prefix": {"prefix": "reversed"},
    "hybrid": {"cross_every": 2, "self_attention_every": 1},
    # a state-space encoder's attention layers
    "attention layers": {"attention_every": 1},
}
#: Key/value layouts, which shape attention layers only where there are some: a recurrent decoder is checked in
#: them with attention layers placed (:data:`PLACED`).
KV_LAYOUTS = ("gqa", "mqa", "mla")
PLACED = {"cross_every": 1, "self_attention_every": 1}


def small_config(kind: str, name: str, **overrides: Any) -> dict:
    """The default config of ``kind``/``name`` with known size fields capped to tiny values."""
    cfg = registry.default_config(kind, name)
    for field, cap in SMALL_SIZES.items():
        value = cfg.get(field)
        if type(value) is int and value > cap:
            cfg[field] = cap
    cfg.update(overrides)
    return cfg


def layouts(kind: str, name: str) -> list[str]:
    """``default`` and every layout of :data:`LAYOUTS` whose fields the component's config has."""
    fields = {f.name for f in dataclasses.fields(registry.get(kind, name).cls.Config)}
    return ["default", *(layout for layout, options in LAYOUTS.items() if set(options) <= fields)]


def layout_options(kind: str, name: str, layout: str) -> dict[str, Any]:
    """The config fields that set ``layout`` on the component (none for ``default``)."""
    options = LAYOUTS.get(layout, {})
    fields = {f.name for f in dataclasses.fields(registry.get(kind, name).cls.Config)}
    return {**PLACED, **options} if layout in KV_LAYOUTS and set(PLACED) <= fields else dict(options)


def needs_files(kind: str, name: str) -> bool:
    """Whether the component's config names files on disk (it cannot be built without the user's data)."""
    return any(word in f.name for f in dataclasses.fields(registry.get(kind, name).cls.Config) for word in FILE_FIELDS)


def seeded(seed: int = 0) -> None:
    torch.manual_seed(seed)


def source_mask() -> torch.Tensor:
    return torch.arange(S)[None, :] < LENGTHS[:, None]


def target_ids() -> torch.Tensor:
    y = torch.randint(4, V, (B, T))
    y[:, 0] = BOS
    return y


def example_source(frontend_cls: type, batch: int = B) -> tuple[SourceDescription, torch.Tensor, torch.Tensor | None]:
    """A source description, a batch a frontend of this class reads, and its true mask (None: every position real).

    A frontend of a source kind zoo does not define gives its own through ``Frontend.example_source``.
    """
    own = frontend_cls.example_source(batch)
    if own is not None:
        return own
    kind = frontend_cls.source_kind
    if kind == "tokens":
        lengths = LENGTHS[torch.arange(batch) % len(LENGTHS)]
        ids = torch.randint(4, V, (batch, S)).masked_fill(~(torch.arange(S)[None, :] < lengths[:, None]), PAD)
        return SourceDescription("tokens", vocab_size=V), ids, ids != PAD
    if kind == "image":  # pixels in [0, 1]
        side = frontend_cls.image_size or 32
        return SourceDescription("image", channels=3, height=side, width=side), torch.rand(batch, 3, side, side), None
    if kind == "features":  # a 2 x 3 grid of 10 features
        return SourceDescription("features", feature_dim=10, height=2, width=3), torch.randn(batch, 6, 10), None
    raise ValueError(
        f"frontend {frontend_cls.__qualname__} reads '{kind}' sources, which zoo has no example of; give it a "
        "classmethod example_source(batch) returning (SourceDescription, a source batch, its mask or None)"
    )
