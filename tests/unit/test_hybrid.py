"""Attention layers placed in recurrent decoders (zoo/nn/hybrid.py): where they go, what is refused, and what a
hybrid caches while decoding. That each layout steps as it trains, ignores padding and works with every scorer is
the decoder contract's (tests/contracts, layouts ``encoder-decoder``, ``hybrid``, ``gqa``, ``mqa``, ``mla``)."""

from __future__ import annotations

import pytest
import torch

from zoo import registry
from zoo.api import BOS, ConfigError, EncoderOutput
from zoo.nn.hybrid import AttentionLayers, HybridLayout
from zoo.registry import discovery

discovery.discover()
V, MEMORY_DIM = 23, 12


def placed(layers: AttentionLayers) -> tuple[list[int], list[int]]:
    """The blocks (from 1) followed by a self-attention layer and by a cross-attention layer."""
    where = [
        [i + 1 for i, layer in enumerate(kind) if not isinstance(layer, torch.nn.Identity)]
        for kind in (layers.self_layers, layers.cross_layers)
    ]
    return where[0], where[1]


@pytest.mark.parametrize(
    ("fields", "self_after", "cross_after"),
    [
        ({"cross_every": 2, "self_attention_every": 3}, [3, 6], [2, 4, 6]),
        ({"cross_at": (1, 5)}, [], [1, 5]),
        ({}, [], []),
    ],
)
def test_attention_layers_go_after_the_blocks_asked_for(fields, self_after, cross_after):
    layers = AttentionLayers(HybridLayout(**fields), 6, 8, "layernorm", 0.0, {"self": "dot", "cross": "dot"}, 8)
    assert placed(layers) == (self_after, cross_after)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"cross_every": 3}, "cross_every=3 places no layer in a stack of 2 blocks"),
        ({"self_attention_every": 5}, "self_attention_every=5 places no layer"),
        ({"cross_at": (3,)}, r"cross_at=\[3\] names blocks \[3\], but the stack has 2"),
        ({"cross_at": (1,), "cross_every": 1}, "set one of them"),
        ({"heads": 4, "kv_heads": 3}, "kv_heads=3"),
        ({"prefix": "none"}, "prefix=none with no cross-attention layer reads nothing of the source"),
    ],
)
def test_a_placement_that_cannot_be_built_is_one_config_error(fields, message):
    with pytest.raises(ConfigError, match=message):
        registry.get("decoder", "mamba").cls.Config(layers=2, **fields)


@pytest.mark.parametrize("family", ["s4d", "mamba", "linear_transformer"])
def test_a_hybrid_caches_keys_for_self_attention_and_the_projected_memory_once(family):
    """Self-attention's cache grows a step per token (over the prefix too, where there is one); the projected
    memory is made once, at init_cache, and read at every step."""
    torch.manual_seed(0)
    cfg = {"name": family, "d_model": 8, "layers": 2, "cross_every": 1, "self_attention_every": 2, "heads": 2}
    model = registry.build("decoder", cfg, vocab_size=V, memory_dim=MEMORY_DIM, posenc="none").eval()
    enc = EncoderOutput(torch.randn(2, 5, MEMORY_DIM), torch.ones(2, 5, dtype=torch.bool), torch.zeros(2, 1))
    prefix = 5 if family != "linear_transformer" else 0
    with torch.no_grad():
        cache = model.init_cache(enc)
        memory_keys = cache["attention"][1]["cross"]["k"]
        for t in range(3):
            _, cache, attn = model.step(torch.full((2,), BOS), enc, cache, t)
        assert cache["attention"][1]["self"]["k"].shape[2] == prefix + 3
        assert cache["attention"][0]["self"] == {}  # no self-attention after block 1
        assert cache["attention"][1]["cross"]["k"] is memory_keys
        assert attn.shape == (2, 5) and torch.allclose(attn.sum(-1), torch.ones(2))


@pytest.mark.parametrize("family", ["s4d", "mamba"])
def test_a_reversed_prefix_is_the_forward_prefix_of_the_source_reversed_within_its_length(family):
    torch.manual_seed(0)
    cfg = {"name": family, "d_model": 8, "layers": 2}
    forward = registry.build("decoder", {**cfg, "prefix": "forward"}, vocab_size=V, memory_dim=MEMORY_DIM).eval()
    backward = registry.build("decoder", {**cfg, "prefix": "reversed"}, vocab_size=V, memory_dim=MEMORY_DIM).eval()
    backward.load_state_dict(forward.state_dict())
    memory, mask = torch.randn(2, 5, MEMORY_DIM), torch.tensor([[True] * 5, [True, True, True, False, False]])
    flipped = torch.stack([memory[0].flip(0), torch.cat([memory[1, :3].flip(0), memory[1, 3:]])])
    y = torch.full((2, 4), BOS)
    with torch.no_grad():
        ours = backward(y, EncoderOutput(memory, mask, torch.zeros(2, 1))).logits
        theirs = forward(y, EncoderOutput(flipped, mask, torch.zeros(2, 1))).logits
    assert torch.allclose(ours, theirs, atol=1e-6)
