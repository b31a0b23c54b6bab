"""Multi-head attention: fused vs explicit paths, masks, per-head scorer parameters, KV cache, key/value layouts."""

from __future__ import annotations

import pytest
import torch

from zoo import registry
from zoo.nn.multihead import MultiHeadAttention
from zoo.registry import discovery

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


# Key/value layouts: multi-head, grouped-query (2 groups), multi-query, latent (MLA), a latent decompressed into shared
# heads.
LAYOUTS = {
    "mha": {},
    "gqa": {"kv_heads": 2},
    "mqa": {"kv_heads": 1},
    "mla": {"kv_latent_dim": 6},
    "mla+gqa": {"kv_latent_dim": 6, "kv_heads": 2},
}


def mha(scorer: str = "scaled_dot", **kwargs) -> MultiHeadAttention:
    torch.manual_seed(0)
    return MultiHeadAttention(D, H, scorer, **kwargs).eval()


def nbytes(cache: dict) -> int:
    return sum(t.numel() * t.element_size() for t in cache.values())


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize(
    "case",
    [
        "plain",
        "padding",
        "causal",
        "causal+padding",
        "alibi",
        "relative+causal+padding",
        "rotary",
        "cross",
        "fully-padded-row",
    ],
)
def test_fused_path_matches_explicit_path(case, layout):
    torch.manual_seed(1)
    x = torch.randn(B, T, D)
    kwargs: dict = {}
    attention = mha(**LAYOUTS[layout])
    if case == "cross":
        attention = mha(kdim=12, **LAYOUTS[layout])
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


@pytest.mark.parametrize(
    "name", [n for n in registry.names("attention") if registry.get("attention", n).cls.fused_sdpa]
)
def test_a_scorer_that_declares_fused_sdpa_scores_as_the_fused_kernel_does(name):
    """The fused kernel replaces the scorer's own call, so its declaration must be the truth: q . k / sqrt(d)."""
    scorer = registry.build("attention", {"name": name}, query_dim=D // H, key_dim=D // H, heads=H)
    q, k = torch.randn(B, H, T, D // H), torch.randn(B, H, S, D // H)
    assert torch.allclose(scorer(q, k), q @ k.transpose(-1, -2) / (D // H) ** 0.5, atol=1e-6)
    assert not list(scorer.parameters()), "the fused kernel would leave its parameters untrained"


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
        MultiHeadAttention(16, 3, "scaled_dot")


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


def expected_cache_shapes(layout: str, steps: int) -> dict[str, tuple]:
    """What a cache of ``steps`` positions holds: the kv_heads shared keys/values, or the latent."""
    options = LAYOUTS[layout]
    if "kv_latent_dim" in options:
        return {"latent": (B, steps, options["kv_latent_dim"])}
    kv_heads = options.get("kv_heads", H)
    return {"k": (B, kv_heads, steps, D // H), "v": (B, kv_heads, steps, D // H)}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("pe_name", [None, "rotary", "alibi", "relative"])
def test_self_attention_cache_steps_equal_the_full_causal_pass(pe_name, layout):
    attention = mha("additive" if pe_name == "alibi" else "scaled_dot", **LAYOUTS[layout])
    pe = posenc(pe_name) if pe_name else None
    x = torch.randn(B, T, D)
    full, _ = attention(x, causal=True, posenc=pe)
    cache: dict = {}
    steps = [attention(x[:, t : t + 1], causal=True, posenc=pe, q_offset=t, cache=cache)[0] for t in range(T)]
    assert {name: tuple(t.shape) for name, t in cache.items()} == expected_cache_shapes(layout, T)
    assert (torch.cat(steps, dim=1) - full).abs().max().item() <= TOL


@pytest.mark.parametrize("layout", LAYOUTS)
def test_cross_attention_cache_is_projected_once_and_reused(layout):
    attention = mha("general", kdim=12, **LAYOUTS[layout])
    memory, x = torch.randn(B, S, 12), torch.randn(B, T, D)
    full, _ = attention(x, memory, key_mask=KEY_MASK)
    cache = attention.project_memory(memory)
    assert {name: tuple(t.shape) for name, t in cache.items()} == expected_cache_shapes(layout, S)
    held = dict(cache)
    stepped = torch.cat([attention(x[:, t : t + 1], memory, key_mask=KEY_MASK, cache=cache)[0] for t in range(T)], 1)
    assert all(cache[name] is tensor for name, tensor in held.items())
    assert (stepped - full).abs().max().item() <= TOL


def count_prepare_keys(attention: MultiHeadAttention) -> list[torch.Size]:
    """Record the shape of the keys of every call to the scorer's prepare_keys (its own forward's calls included)."""
    calls, prepare = [], attention.scorer.prepare_keys

    def counted(k: torch.Tensor) -> torch.Tensor:
        calls.append(k.shape)
        return prepare(k)

    attention.scorer.prepare_keys = (
        counted  # an instance attribute, so self.prepare_keys inside the scorer finds it too
    )
    return calls


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("scorer", [entry.name for entry in registry.entries("attention")])
def test_cross_attention_prepares_keys_once_per_memory(scorer, layout):
    """The cache holds the scorer's prepared keys (B, H, S, ...) when it has key-side work; steps then never
    prepare again and equal the full pass. A latent cache is decompressed, and so prepared, at every use."""
    attention = mha(scorer, kdim=12, **LAYOUTS[layout])
    memory, x = torch.randn(B, S, 12), torch.randn(B, T, D)
    full, _ = attention(x, memory, key_mask=KEY_MASK)
    calls = count_prepare_keys(attention)
    cache = attention.project_memory(memory)
    stepped = torch.cat([attention(x[:, t : t + 1], memory, key_mask=KEY_MASK, cache=cache)[0] for t in range(T)], 1)
    assert (stepped - full).abs().max().item() <= TOL
    if "kv_latent_dim" in LAYOUTS[layout] or not attention.prepares_keys:
        assert {name: tuple(t.shape) for name, t in cache.items()} == expected_cache_shapes(layout, S)
        return
    assert set(cache) == {"prepared", "v"} and tuple(cache["prepared"].shape[:3]) == (B, H, S)
    assert calls == [(B, H, S, D // H)]


def test_cache_bytes_shrink_with_the_layout():
    """Per cached position: 2 x kv_heads x head_dim numbers, or the latent's width."""
    x = torch.randn(B, 1, D)
    per_step = {}
    for layout, options in LAYOUTS.items():
        cache: dict = {}
        mha(**options)(x, causal=True, cache=cache)
        per_step[layout] = nbytes(cache) / B
    full = 2 * D * 4  # float32 keys and values of every head
    latent = LAYOUTS["mla"]["kv_latent_dim"] * 4
    assert per_step == {"mha": full, "gqa": full / 2, "mqa": full / 4, "mla": latent, "mla+gqa": latent}


def test_default_layout_is_torch_multi_head_attention():
    """kv_heads = heads is the classic module: its parameters, and torch.nn.MultiheadAttention's outputs for the same
    weights."""
    attention = mha(kv_heads=H)
    shapes = {name: tuple(p.shape) for name, p in attention.named_parameters()}
    assert shapes == {
        "q_proj.weight": (D, D),
        "q_proj.bias": (D,),
        "kv_proj.weight": (2 * D, D),
        "kv_proj.bias": (2 * D,),
        "out_proj.weight": (D, D),
        "out_proj.bias": (D,),
    }
    reference = torch.nn.MultiheadAttention(D, H, batch_first=True).eval()
    with torch.no_grad():
        reference.in_proj_weight.copy_(torch.cat([attention.q_proj.weight, attention.kv_proj.weight]))
        reference.in_proj_bias.copy_(torch.cat([attention.q_proj.bias, attention.kv_proj.bias]))
        reference.out_proj.load_state_dict(attention.out_proj.state_dict())
    x = torch.randn(B, T, D)
    ours, _ = attention(x, key_mask=SELF_MASK)
    theirs, _ = reference(x, x, x, key_padding_mask=~SELF_MASK, need_weights=False)
    assert (ours - theirs).abs().max().item() <= TOL


@pytest.mark.parametrize("kv_heads", [1, 2])
@pytest.mark.parametrize("scorer", ["scaled_dot", "additive", "cosine"])
def test_shared_heads_equal_multi_head_attention_with_copied_key_value_heads(scorer, kv_heads):
    """Query head h reads key/value head h // (heads / kv_heads), for any scorer, with RoPE and causal masks."""
    shared = mha(scorer, kv_heads=kv_heads)
    full = mha(scorer)
    group = H // kv_heads
    with torch.no_grad():
        k_rows, v_rows = shared.kv_proj.weight.unflatten(0, (2, kv_heads, D // H))
        full.kv_proj.weight.copy_(torch.stack([k_rows, v_rows]).repeat_interleave(group, dim=1).flatten(0, 2))
        full.kv_proj.bias.zero_()
        for name in ("q_proj", "out_proj", "scorer"):
            getattr(full, name).load_state_dict(getattr(shared, name).state_dict())
    x, pe = torch.randn(B, T, D), posenc("rotary")
    for need_weights in (False, True):
        ours, _ = shared(x, key_mask=SELF_MASK, causal=True, posenc=pe, need_weights=need_weights)
        theirs, _ = full(x, key_mask=SELF_MASK, causal=True, posenc=pe, need_weights=need_weights)
        assert (ours - theirs).abs().max().item() <= TOL


def test_parameter_free_attention_mixes_the_vectors_themselves():
    """No projections: per head, softmax(x_h x_h^T / sqrt(d)) x_h over the real keys, heads concatenated."""
    attention = mha(projections=False)
    assert not list(attention.parameters())
    x = torch.randn(B, T, D)
    out, _ = attention(x, key_mask=SELF_MASK)
    heads = x.unflatten(-1, (H, D // H)).transpose(1, 2)  # (B, H, T, d)
    scores = (heads @ heads.transpose(-1, -2) / (D // H) ** 0.5).masked_fill(
        ~SELF_MASK[:, None, None, :], float("-inf")
    )
    expected = (scores.softmax(-1) @ heads).transpose(1, 2).reshape(B, T, D)
    assert (out - expected).abs().max().item() <= TOL


@pytest.mark.parametrize(
    "options,message",
    [
        ({"kv_heads": 3}, "kv_heads=3 must divide heads=4"),
        ({"projections": False, "kv_heads": 2}, "parameter-free attention"),
        ({"projections": False, "kdim": 12}, "parameter-free attention"),
    ],
)
def test_layouts_that_cannot_work_are_errors(options, message):
    with pytest.raises(ValueError, match=message):
        MultiHeadAttention(D, H, "scaled_dot", **options)


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
