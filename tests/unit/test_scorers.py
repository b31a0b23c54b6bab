"""The attention scorers: each formula against a direct computation, sizes and errors."""

import math

import pytest
import torch

from zoo import registry
from zoo.registry import discovery

discovery.discover()

B, H, T, S = 2, 2, 3, 4


def scorer(name, dq=5, dk=5, heads=H, **cfg):
    config = registry.default_config("attention", name, **cfg)
    return registry.build("attention", config, query_dim=dq, key_dim=dk, heads=heads)


def qk(dq=5, dk=5):
    torch.manual_seed(0)
    return torch.randn(B, H, T, dq), torch.randn(B, H, S, dk)


def test_dot():
    q, k = qk()
    expected = torch.einsum("bhtd,bhsd->bhts", q, k)
    torch.testing.assert_close(scorer("dot")(q, k), expected)


def test_scaled_dot_divides_by_sqrt_d():
    q, k = qk()
    torch.testing.assert_close(scorer("scaled_dot")(q, k), scorer("dot")(q, k) / math.sqrt(5))


def test_general_is_bilinear_per_head():
    q, k = qk(dq=3, dk=5)
    module = scorer("general", dq=3, dk=5)
    assert module.weight.shape == (H, 3, 5)
    expected = torch.stack([q[:, h] @ module.weight[h] @ k[:, h].transpose(-1, -2) for h in range(H)], dim=1)
    torch.testing.assert_close(module(q, k), expected)


def test_general_with_identity_is_dot():
    q, k = qk()
    module = scorer("general")
    with torch.no_grad():
        module.weight.copy_(torch.eye(5).expand(H, 5, 5))
    torch.testing.assert_close(module(q, k), scorer("dot")(q, k))


def test_additive_matches_the_formula():
    q, k = qk(dq=3, dk=5)
    module = scorer("additive", dq=3, dk=5, hidden_size=7)
    expected = torch.empty(B, H, T, S)
    for b in range(B):
        for h in range(H):
            for t in range(T):
                for s in range(S):
                    hidden = torch.tanh(q[b, h, t] @ module.w_q[h] + k[b, h, s] @ module.w_k[h])
                    expected[b, h, t, s] = module.v[h] @ hidden
    torch.testing.assert_close(module(q, k), expected)


def test_cosine_is_scaled_cosine_similarity():
    q, k = qk()
    module = scorer("cosine", temperature=4.0)
    expected = 4.0 * torch.nn.functional.cosine_similarity(q[:, :, :, None], k[:, :, None], dim=-1)
    torch.testing.assert_close(module(q, k), expected)
    torch.testing.assert_close(module(3 * q, k), module(q, k))  # norms do not matter


def test_cosine_temperature_learnable_or_fixed():
    learnable = scorer("cosine", learnable=True)
    fixed = scorer("cosine", learnable=False)
    assert learnable.log_temperature.shape == (H,)
    assert [n for n, _ in learnable.named_parameters()] == ["log_temperature"]
    assert list(fixed.parameters()) == []
    assert "log_temperature" in dict(fixed.named_buffers())


def test_cosine_rejects_non_positive_temperature():
    with pytest.raises(ValueError, match="temperature=0.0 must be > 0"):
        scorer("cosine", temperature=0.0)


def test_location_uses_the_query_only():
    q, k = qk(dq=3, dk=5)
    module = scorer("location", dq=3, dk=5, max_len=10)
    assert module.weight.shape == (H, 3, 10)
    expected = torch.einsum("bhtq,hqs->bhts", q, module.weight)[..., :S]
    torch.testing.assert_close(module(q, k), expected)
    torch.testing.assert_close(module(q, torch.randn_like(k)), expected)


def test_location_rejects_sources_longer_than_max_len():
    q, k = qk()
    with pytest.raises(ValueError, match="max_len=3"):
        scorer("location", max_len=3)(q, k)


def test_none_does_not_attend():
    q, k = qk()
    module = scorer("none")
    assert module.attends is False
    assert torch.all(module(q, k) == 0)
    assert all(scorer(name).attends for name in registry.names("attention") if name != "none")


@pytest.mark.parametrize("name", ["dot", "scaled_dot", "cosine"])
def test_equal_dims_required(name):
    with pytest.raises(ValueError, match="query_dim=3 and key_dim=5"):
        scorer(name, dq=3, dk=5)


@pytest.mark.parametrize("name", ["general", "additive", "location"])
def test_different_dims_allowed(name):
    q, k = qk(dq=3, dk=5)
    assert scorer(name, dq=3, dk=5)(q, k).shape == (B, H, T, S)


@pytest.mark.parametrize("name", ["general", "additive", "location", "cosine"])
def test_heads_have_separate_parameters(name):
    module = scorer(name)
    for p in module.parameters():
        assert p.shape[0] == H
    q, k = qk()
    q = q[:, :1].expand(B, H, T, 5)  # the same query and keys for both heads
    k = k[:, :1].expand(B, H, S, 5)
    if name == "cosine":
        with torch.no_grad():
            module.log_temperature[1] += 1.0  # starts equal across heads; show the heads can differ
    scores = module(q, k)
    assert not torch.allclose(scores[:, 0], scores[:, 1])
