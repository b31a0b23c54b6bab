"""Positional encodings: offsets, values, limits and the relative hooks."""

from __future__ import annotations

import math

import pytest
import torch

from zoo import registry
from zoo.api import SourceDescription
from zoo.registry import discovery
from zoo_plugins.posenc.alibi import alibi_slopes
from zoo_plugins.posenc.relative import relative_bucket

discovery.discover()

D, H = 16, 4
ALL = ["none", "sinusoidal", "learned", "rotary", "alibi", "relative"]


def build(name: str, **overrides):
    pe = registry.build("posenc", registry.default_config("posenc", name, **overrides), dim=D, heads=H)
    for p in pe.parameters():
        torch.nn.init.normal_(p)
    return pe


def test_relative_flags():
    assert {n: registry.get("posenc", n).cls.relative for n in ALL} == {
        "none": False,
        "sinusoidal": False,
        "learned": False,
        "rotary": True,
        "alibi": True,
        "relative": True,
    }


@pytest.mark.parametrize("name", ALL)
def test_offsets_address_the_same_positions_as_a_full_pass(name):
    """Positions offset..offset+n-1 computed alone equal that slice of the whole sequence."""
    pe, offset, n, length = build(name), 3, 2, 6
    x = torch.randn(2, length, D)
    assert torch.allclose(pe(x[:, offset : offset + n], offset), pe(x)[:, offset : offset + n], atol=1e-6)
    q, k = torch.randn(2, H, length, D // H), torch.randn(2, H, length, D // H)
    full_q, full_k = pe.rotate(q, k)
    part_q, part_k = pe.rotate(q[:, :, offset : offset + n], k[:, :, offset:], q_offset=offset, k_offset=offset)
    assert torch.allclose(part_q, full_q[:, :, offset : offset + n], atol=1e-6)
    assert torch.allclose(part_k, full_k[:, :, offset:], atol=1e-6)
    for causal in (False, True):
        full = pe.bias(length, length, causal=causal)
        part = pe.bias(n, length, q_offset=offset, causal=causal)
        if full is None:
            assert part is None
        else:
            assert full.shape == (H, length, length)
            assert torch.equal(part, full[:, offset : offset + n])


def test_sinusoidal_values():
    pe = build("sinusoidal")
    table = pe(torch.zeros(1, 5, D))[0]
    positions = torch.arange(5.0)
    assert torch.allclose(table[:, 0], positions.sin()) and torch.allclose(table[:, 1], positions.cos())
    i = 3  # channel pair (6, 7): wavelength 10000^(6/16)
    assert torch.allclose(table[:, 2 * i], (positions / 10000 ** (2 * i / D)).sin())
    odd = registry.build("posenc", {"name": "sinusoidal"}, dim=7, heads=1)
    assert odd(torch.zeros(1, 3, 7)).shape == (1, 3, 7)


def test_learned_positions_past_max_len_are_an_error():
    pe = build("learned", max_len=8)
    assert pe(torch.zeros(1, 8, D)).shape == (1, 8, D)
    with pytest.raises(ValueError, match=r"max_len=8 .* position 9 .*offset 5"):
        pe(torch.zeros(1, 5, D), offset=5)


@pytest.mark.parametrize("scale", [False, True])
def test_learned_positions_start_at_the_token_vectors_scale(scale):
    """A table 50x smaller than the tokens it is added to hides the positions (multi-query recall stalls)."""
    torch.manual_seed(0)
    source = SourceDescription(kind="tokens", vocab_size=1000)
    tokens = registry.build(
        "frontend", registry.default_config("frontend", "tokens", dim=64, scale=scale, dropout=0.0), source=source
    )
    vectors, _ = tokens(torch.randint(4, 1000, (8, 256)))
    table = registry.build("posenc", registry.default_config("posenc", "learned", max_len=256), dim=64).embedding.weight
    assert 0.8 < table.std().item() / vectors.std().item() < 1.25


def test_rotary_preserves_norms_and_depends_only_on_the_offset():
    pe = build("rotary")
    q, k = torch.randn(1, H, 1, D // H), torch.randn(1, H, 1, D // H)
    rq, rk = pe.rotate(q, k, q_offset=7, k_offset=2)
    assert torch.allclose(rq.norm(dim=-1), q.norm(dim=-1)) and torch.allclose(rk.norm(dim=-1), k.norm(dim=-1))

    def score(p_q: int, p_k: int) -> torch.Tensor:
        a, b = pe.rotate(q, k, q_offset=p_q, k_offset=p_k)
        return (a * b).sum(-1)

    assert torch.allclose(score(3, 7), score(20, 24), atol=1e-5)
    assert not torch.allclose(score(3, 7), score(3, 8), atol=1e-3)


def test_rotary_needs_an_even_head_size_and_the_built_one():
    with pytest.raises(ValueError, match="even head size"):
        registry.build("posenc", {"name": "rotary"}, dim=12, heads=4)
    pe = build("rotary")
    with pytest.raises(ValueError, match="head size 4"):
        pe.rotate(torch.randn(1, H, 2, 8), torch.randn(1, H, 2, 8))


def test_alibi_slopes_follow_press_et_al():
    assert torch.allclose(alibi_slopes(8), torch.tensor([2.0**-i for i in range(1, 9)]))
    assert torch.allclose(alibi_slopes(4), torch.tensor([2.0**-2, 2.0**-4, 2.0**-6, 2.0**-8]))
    # 6 heads: the 4 slopes of 4 heads, then every other slope of 8 heads.
    assert torch.allclose(alibi_slopes(6), torch.tensor([2.0**-2, 2.0**-4, 2.0**-6, 2.0**-8, 2.0**-1, 2.0**-3]))


def test_alibi_bias_is_a_linear_distance_penalty():
    bias = build("alibi").bias(3, 5, q_offset=2)
    slopes = alibi_slopes(H)
    assert bias[1, 0, 0].item() == pytest.approx(-2 * slopes[1].item())  # query 2, key 0
    assert bias[3, 2, 1].item() == pytest.approx(-3 * slopes[3].item())  # query 4, key 1
    assert torch.all(bias[:, 0, 2] == 0)  # query 2, key 2


def test_t5_buckets():
    offsets = torch.tensor([0, -1, 1, -7, 7, -8, -127, -128, -1000, 1000])
    bi = relative_bucket(offsets, bidirectional=True, num_buckets=32, max_distance=128).tolist()
    # Keys before/at the query use buckets 0..15, keys after 16..31; distances < 8 get their own bucket.
    assert bi[:5] == [0, 1, 17, 7, 23]
    assert bi[5] == 8 and bi[6] == 15 and bi[7] == 15 and bi[8] == 15 and bi[9] == 31
    uni = relative_bucket(offsets, bidirectional=False, num_buckets=32, max_distance=128).tolist()
    # Causal: only the past; distances < 16 exact, the future shares bucket 0, >= 128 the last bucket.
    assert uni[:6] == [0, 1, 0, 7, 0, 8] and uni[7] == 31 and uni[8] == 31
    past = relative_bucket(-torch.arange(300), bidirectional=False)
    assert torch.all(past[1:] >= past[:-1]) and past.max() == 31
    assert past[16] == 16 and past[15] == 15
    # Log spacing: bucket 16 + floor(log(d/16)/log(128/16) * 16).
    assert past[40].item() == 16 + math.floor(math.log(40 / 16) / math.log(8) * 16)


def test_t5_bias_uses_a_table_per_head_and_direction():
    pe = build("relative")
    both, past = pe.bias(4, 4), pe.bias(4, 4, causal=True)
    assert both.shape == past.shape == (H, 4, 4)
    table = pe.embedding.weight  # (buckets, heads)
    assert torch.equal(both[:, 1, 3], table[16 + 2])  # key two after the query
    assert torch.equal(past[:, 3, 1], table[2])  # key two before the query
    with pytest.raises(ValueError, match="num_buckets"):
        build("relative", num_buckets=7)
    with pytest.raises(ValueError, match="max_distance"):
        build("relative", num_buckets=32, max_distance=10)
