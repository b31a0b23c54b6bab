"""The ``tokens`` frontend: embedding, mask, scaling and dropout."""

import math

import pytest
import torch

from zoo import registry
from zoo.contracts import PAD, SourceDescription
from zoo.registry import discovery

discovery.discover()

V = 12


def frontend(**overrides):
    cfg = registry.default_config("frontend", "tokens", **{"dim": 8, **overrides})
    return registry.build("frontend", cfg, source=SourceDescription("tokens", vocab_size=V))


def test_shapes_and_mask():
    source = torch.tensor([[5, 6, 7], [4, PAD, PAD]])
    x, mask = frontend().eval()(source)
    assert x.shape == (2, 3, 8)
    assert mask.tolist() == [[True, True, True], [True, False, False]]


def test_padding_embeds_to_zero():
    x, _ = frontend().eval()(torch.tensor([[PAD, 5]]))
    assert torch.all(x[0, 0] == 0)
    assert x[0, 1].abs().sum() > 0


def test_scale_multiplies_by_sqrt_dim():
    torch.manual_seed(0)
    plain = frontend(scale=False).eval()
    scaled = frontend(scale=True).eval()
    scaled.load_state_dict(plain.state_dict())
    source = torch.tensor([[4, 9]])
    torch.testing.assert_close(scaled(source)[0], plain(source)[0] * math.sqrt(8))


def test_dropout_only_in_training():
    module = frontend(dropout=0.5)
    source = torch.randint(4, V, (4, 10))
    module.eval()
    assert torch.equal(module(source)[0], module(source)[0])
    module.train()
    x = module(source)[0]
    assert (x == 0).float().mean() > 0.2  # about half the entries are dropped


def test_output_dim_is_dim():
    assert frontend(dim=24).output_dim == 24


def test_tiny_vocabulary_is_rejected():
    with pytest.raises(ValueError, match="vocab_size=2"):
        registry.build(
            "frontend",
            registry.default_config("frontend", "tokens", dim=8),
            source=SourceDescription("tokens", vocab_size=2),
        )


def test_scaled_embeddings_start_with_unit_variance():
    """With scale=True the output, not the weight, has unit variance, like the positions added to it."""
    frontend = registry.build(
        "frontend",
        registry.default_config("frontend", "tokens", dim=256, scale=True, dropout=0.0),
        source=SourceDescription("tokens", vocab_size=512),
    )
    x, _ = frontend(torch.arange(4, 500)[None])
    assert 0.8 < x.std().item() < 1.2
    assert torch.all(frontend.embedding.weight[0] == 0)
