"""Multi-head attention: fused vs explicit paths, masks, per-head scorer parameters, KV cache."""
from __future__ import annotations

import pytest
import torch

from zoo import registry

from zoo.registry import discovery
from zoo.nn.multihead import MultiHeadAttention

discovery.discover()

B, T, S, D, H = 2, 5, 7, 16, 4
TOL = 1e-5
KEY_MASK = torch.tensor([[True] * 7, [True] * 4 + [False] * 3])
SELF_MASK = torch.tensor([[True] * 5, [True] * 3 + [False] * 2])


def posenc(name: str):
    pe = registry.build("posenc", registry.default_config("posenc", name), dim=D, heads=H)
    for p in pe.parameters():
        torch.nn.init.normal_(p)  # make learned biases large enough to matter
    return pe


def mha(scorer: str = "scaled_dot", **kwargs) -> MultiHeadAttention:
    torch.manual_seed(0)
    return MultiHeadAttention(D, H, scorer, **kwargs).eval()


@pytest.mark.parametrize(
    "case",
    ["plain", "padding", "causal", "causal+padding", "alibi", "relative+causal+padding", "rotary", "cross", "fully-padded-row"],
)
def test_fused_path_matches_explicit_path(case):
    torch.manual_seed(1)
    x = torch.randn(B, T, D)
    kwargs: dict = {}
    attention = mha()
    if case == "cross":
        attention = mha(kdim=12)
        kwargs = dict(memory=torch.randn(B, S, 12), key_mask=KEY_MASK)
    if "padding" in case:
        kwargs["key_mask"] = SELF_MASK
    if "causal" in case:
        kwargs["causal"] = True
    for name in ("alibi", "relative", "rotary"):
        if case.startswith(name):
            kwargs["posenc"] = posenc(name)
    if case == "fully-padded-row":
        kwargs["key_mask"] = torch.tensor([[True] * 5, [False] * 5])
    assert attention.fused
    fused, none = attention(x, **kwargs)
    explicit, weights = attention(x, **kwargs, need_weights=True)
    assert none is None and weights is not None
    assert (fused - explicit).abs().max().item() <= TOL
    if case == "fully-padded-row":
        assert torch.all(weights[1] == 0)


def test_fused_and_explicit_gradients_agree_with_a_learned_bias():
    attention, pe = mha(), posenc("relative")
    x = torch.randn(B, T, D)
    grads = []
    for need_weights in (False, True):
        pe.zero_grad()
        out, _ = attention(x, key_mask=SELF_MASK, causal=True, posenc=pe, need_weights=need_weights)
        out.square().sum().backward()
        grads.append(pe.embedding.weight.grad.clone())
    assert grads[0].abs().sum() > 0
    assert torch.allclose(grads[0], grads[1], atol=1e-4)


def test_heads_must_divide_d_model():
    with pytest.raises(ValueError, match="not divisible by heads=3"):
        MultiHeadAttention(16, 3)


def test_other_scorers_take_the_explicit_path():
    attention = mha("additive")
    assert not attention.fused
    out, weights = attention(torch.randn(B, T, D))
    assert out.shape == (B, T, D) and weights is None


@pytest.mark.parametrize("scorer", ["additive", "general"])
def test_scorer_parameters_are_per_head(scorer):
    """Every scorer parameter has one slice per head, and a head's slice changes only that head."""
    attention = mha(scorer)
    params = list(attention.scorer.parameters())
    assert params and all(p.shape[0] == H for p in params)
    x = torch.randn(B, T, D)
    _, before = attention(x, need_weights=True)
    with torch.no_grad():
        for p in params:
            p[1].add_(torch.randn_like(p[1]))
    _, after = attention(x, need_weights=True)
    changed = [(before[:, h] - after[:, h]).abs().max().item() > 1e-4 for h in range(H)]
    assert changed == [False, True, False, False]


@pytest.mark.parametrize("scorer", ["scaled_dot", "additive"])
def test_padded_keys_get_zero_weight_and_causal_hides_the_future(scorer):
    attention = mha(scorer)
    _, weights = attention(torch.randn(B, T, D), key_mask=SELF_MASK, causal=True, need_weights=True)
    assert weights.shape == (B, H, T, T)
    assert torch.all(weights[1, :, :, 3:] == 0)  # padded keys
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    assert torch.all(weights[:, :, future] == 0)
    assert torch.allclose(weights.sum(-1), torch.ones(B, H, T))


@pytest.mark.parametrize("pe_name", [None, "rotary", "alibi", "relative"])
def test_self_attention_cache_steps_equal_the_full_causal_pass(pe_name):
    attention = mha()
    pe = posenc(pe_name) if pe_name else None
    x = torch.randn(B, T, D)
    full, _ = attention(x, causal=True, posenc=pe)
    cache: dict = {}
    steps = [attention(x[:, t : t + 1], causal=True, posenc=pe, q_offset=t, cache=cache)[0] for t in range(T)]
    assert cache["k"].shape == (B, H, T, D // H)
    assert (torch.cat(steps, dim=1) - full).abs().max().item() <= TOL


def test_cross_attention_cache_is_projected_once_and_reused():
    attention = mha("general", kdim=12)
    memory, x = torch.randn(B, S, 12), torch.randn(B, T, D)
    full, _ = attention(x, memory, key_mask=KEY_MASK)
    cache = attention.project_memory(memory)
    k = cache["k"]
    stepped = torch.cat([attention(x[:, t : t + 1], memory, key_mask=KEY_MASK, cache=cache)[0] for t in range(T)], 1)
    assert cache["k"] is k
    assert (stepped - full).abs().max().item() <= TOL


def test_a_cache_out_of_step_is_an_error():
    attention = mha()
    cache: dict = {}
    attention(torch.randn(B, 1, D), causal=True, cache=cache)
    with pytest.raises(ValueError, match="cache holds 1 steps but q_offset=3"):
        attention(torch.randn(B, 1, D), causal=True, cache=cache, q_offset=3)


def test_attention_dropout_only_while_training():
    attention = mha("additive", dropout=0.5)
    x = torch.randn(B, T, D)
    assert torch.equal(attention(x)[0], attention(x)[0])
    attention.train()
    assert not torch.equal(attention(x)[0], attention(x)[0])
