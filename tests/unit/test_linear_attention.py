"""Linear attention and its decayed forms (zoo/nn/linear_attention.py) and the linear_transformer plugins built on it.

The parallel (chunkwise) and recurrent forms must compute the same function, padding must be invisible to real
positions, and the decoder must generate from a cache that does not grow. Float64 throughout, so a gap is a bug
rather than rounding.
"""

from __future__ import annotations

import pytest
import torch

from zoo import registry
from zoo.api import BOS, ConfigError, EncoderOutput
from zoo.nn.linear_attention import (
    FeatureMap,
    Gate,
    LinearAttention,
    LinearCrossAttention,
    LinearLayout,
    causal_scan,
    chunkwise,
    fla_kernels,
    recurrent_step,
)
from zoo.registry import discovery

discovery.discover()
D, HEADS, V = 16, 2, 23
FORMS = [(gate, features) for gate in Gate for features in FeatureMap]
TOL = 1e-10


def ids(form) -> str:
    return "-".join(map(str, form))


def attention(gate: Gate, features: FeatureMap = FeatureMap.elu, chunk: int = 3) -> LinearAttention:
    torch.manual_seed(0)
    return LinearAttention(D, HEADS, features, gate, chunk).double().eval()


def inputs(batch: int = 2, length: int = 10) -> torch.Tensor:
    torch.manual_seed(1)
    return torch.randn(batch, length, D, dtype=torch.float64)


def recurrence(layer: LinearAttention, x: torch.Tensor) -> torch.Tensor:
    """The causal layer run token by token from its empty state."""
    state, outs = layer.initial_state(x.shape[0], x), []
    for t in range(x.shape[1]):
        out, state = layer.step(x[:, t], state)
        outs.append(out)
    return torch.stack(outs, dim=1)


def decay_matrix(layer: LinearAttention, x: torch.Tensor) -> torch.Tensor:
    """(B, H, L, L, 1|F): the decay from key j to query i, the product of the gates from the key (excluded) to the
    query (included): of positions j+1..i for a key before the query, i..j-1 for one after; one entry at a time."""
    g = layer.log_decay(x, None)
    length = x.shape[1]
    rows = []
    for i in range(length):
        row = [g[:, :, j + 1 : i + 1].sum(2) if j <= i else g[:, :, i:j].sum(2) for j in range(length)]
        rows.append(torch.stack(row, dim=2))
    return torch.stack(rows, dim=2).exp()


def quadratic(layer: LinearAttention, x: torch.Tensor, causal: bool) -> torch.Tensor:
    """The attention-matrix form: weights phi(q_i) . (decay_ij * phi(k_j)), normalised over the visible keys."""
    q, (k, v) = layer.queries(x), layer.keys_values(x, None)
    scores = torch.einsum("bhid,bhjd,bhijd->bhij", q, k, decay_matrix(layer, x).expand(-1, -1, -1, -1, q.shape[-1]))
    if causal:
        scores = scores.tril()
    return layer.output(scores @ v)


# ------------------------------------------------------------------ the two forms of self-attention
@pytest.mark.parametrize("form", FORMS, ids=ids)
def test_chunkwise_causal_equals_the_recurrence(form):
    layer, x = attention(*form), inputs()
    assert (layer(x, causal=True) - recurrence(layer, x)).abs().max() <= TOL


@pytest.mark.parametrize("form", FORMS, ids=ids)
def test_causal_form_equals_the_masked_attention_matrix(form):
    layer, x = attention(*form), inputs()
    assert (layer(x, causal=True) - quadratic(layer, x, causal=True)).abs().max() <= TOL


@pytest.mark.parametrize("form", FORMS, ids=ids)
def test_non_causal_form_equals_the_decayed_attention_matrix(form):
    layer, x = attention(*form), inputs()
    assert (layer(x) - quadratic(layer, x, causal=False)).abs().max() <= TOL


@pytest.mark.parametrize("gate", list(Gate), ids=str)
def test_chunk_size_does_not_change_the_output(gate):
    x = inputs(length=13)
    whole = attention(gate, chunk=64)(x, causal=True)
    for chunk in (1, 4, 5):
        assert (attention(gate, chunk=chunk)(x, causal=True) - whole).abs().max() <= TOL


def test_strong_decays_neither_overflow_nor_drift():
    """Gates of exp(-40) per step over whole chunks: every exponent taken is <= 0, so nothing overflows."""
    torch.manual_seed(0)
    batch, heads, length, width = 1, 2, 40, 4
    q, k = torch.rand(batch, heads, length, width).double(), torch.rand(batch, heads, length, width).double()
    v, g = torch.randn(batch, heads, length, 3).double(), -40 * torch.rand(batch, heads, length, width).double()
    parallel = chunkwise(q, k, v, g, chunk=16)
    state, outs = torch.zeros(batch, heads, width, 3, dtype=torch.float64), []
    for t in range(length):
        out, state = recurrent_step(q[:, :, t], k[:, :, t], v[:, :, t], g[:, :, t], state)
        outs.append(out)
    assert torch.isfinite(parallel).all()
    assert (parallel - torch.stack(outs, dim=2)).abs().max() <= TOL


# ------------------------------------------------------------------ cross-attention
def test_cross_attention_equals_normalised_attention_over_the_real_memory():
    torch.manual_seed(0)
    layer = LinearCrossAttention(D, HEADS, kdim=12).double()
    x, memory = inputs(length=4), torch.randn(2, 7, 12, dtype=torch.float64)
    mask = torch.tensor([[True] * 7, [True] * 3 + [False] * 4])
    q, (k, v) = layer.queries(x), layer.keys_values(memory, None)
    weights = (q @ k.transpose(-1, -2)).masked_fill(~mask[:, None, None, :], 0.0)
    expected = layer.output(weights @ v)  # the weights times [v, 1]: the numerator and the normaliser
    assert (layer(x, layer.summarise(memory, mask)) - expected).abs().max() <= TOL


def test_cross_attention_reads_each_token_alone_as_in_the_whole():
    torch.manual_seed(0)
    layer = LinearCrossAttention(D, HEADS).double()
    x, memory = inputs(length=5), torch.randn(2, 7, D, dtype=torch.float64)
    summary = layer.summarise(memory, torch.ones(2, 7, dtype=torch.bool))
    whole = layer(x, summary)
    alone = torch.cat([layer(x[:, t : t + 1], summary) for t in range(5)], dim=1)
    assert (alone - whole).abs().max() <= TOL


# ------------------------------------------------------------------ padding
@pytest.mark.parametrize("gate", list(Gate), ids=str)
@pytest.mark.parametrize("causal", [False, True], ids=["non-causal", "causal"])
def test_padding_anywhere_is_invisible_to_real_positions(gate, causal):
    """Padded positions with arbitrary vectors, even between real ones, change nothing at the real positions: the
    output there is that of the sequence with the padding removed."""
    layer, x = attention(gate), inputs(batch=1, length=9)
    mask = torch.tensor([[True, True, False, True, True, True, False, True, False]])
    padded = layer(x, mask, causal=causal)[mask]
    alone = layer(x[:, mask[0]], causal=causal)[0]
    assert (padded - alone).abs().max() <= TOL


@pytest.mark.parametrize("gate", list(Gate), ids=str)
def test_encoder_memory_ignores_appended_padding(gate):
    torch.manual_seed(0)
    encoder = registry.build("encoder", {"name": "linear_transformer", "d_model": D, "gate": gate}, input_dim=D)
    encoder.double().eval()
    x, mask = inputs(length=6), torch.tensor([[True] * 6, [True] * 4 + [False] * 2])
    longer = torch.cat([x, torch.randn(2, 3, D, dtype=torch.float64)], dim=1)
    longer_mask = torch.cat([mask, torch.zeros(2, 3, dtype=torch.bool)], dim=1)
    short, long = encoder(x, mask), encoder(longer, longer_mask)
    assert (long.memory[:, :6] - short.memory).abs().max() <= TOL
    assert (long.state - short.state).abs().max() <= TOL


# ------------------------------------------------------------------ the decoder
def decoder(gate: Gate, features: FeatureMap = FeatureMap.elu):
    torch.manual_seed(0)
    cfg = {"name": "linear_transformer", "d_model": D, "heads": HEADS, "gate": gate, "feature_map": features}
    return registry.build("decoder", cfg, vocab_size=V, memory_dim=12, posenc="sinusoidal").double().eval()


def memory(length: int = 7) -> EncoderOutput:
    torch.manual_seed(2)
    mask = torch.arange(length)[None, :] < torch.tensor([[length], [3]])
    return EncoderOutput(torch.randn(2, length, 12, dtype=torch.float64), mask, torch.zeros(2, 1))


def targets(length: int = 9) -> torch.Tensor:
    torch.manual_seed(3)
    y = torch.randint(4, V, (2, length))
    y[:, 0] = BOS
    return y


@pytest.mark.parametrize("form", FORMS, ids=ids)
def test_decoder_steps_equal_teacher_forcing(form):
    model, enc, y = decoder(*form), memory(), targets()
    full = model(y, enc).logits
    cache = model.init_cache(enc)
    for t in range(y.shape[1]):
        logits, cache, attn = model.step(y[:, t], enc, cache, t)
        assert attn is None
        assert (logits - full[:, t]).abs().max() <= TOL


@pytest.mark.parametrize("gate", list(Gate), ids=str)
def test_decoder_cache_has_one_size_whatever_the_source_and_output_lengths(gate):
    model, y = decoder(gate), targets()

    def shapes(cache) -> list:
        return [(name, tuple(tensor.shape)) for layer in cache["layers"] for name, tensor in layer.items()]

    short, long = model.init_cache(memory(3)), model.init_cache(memory(40))
    assert shapes(short) == shapes(long)
    cache = long
    for t in range(y.shape[1]):
        _, cache, _ = model.step(y[:, t], memory(40), cache, t)
    assert shapes(cache) == shapes(long)


def test_decoder_refuses_a_relative_posenc():
    with pytest.raises(ValueError, match="posenc=sinusoidal, learned or none"):
        registry.build("decoder", {"name": "linear_transformer"}, vocab_size=V, memory_dim=D, posenc="rotary")


def test_an_unknown_gate_names_the_choices():
    with pytest.raises(ConfigError, match="gate='softmax' must be one of: none, retention, gla"):
        LinearLayout(gate="softmax")


# ------------------------------------------------------------------ the optional kernel
@pytest.mark.skipif(not torch.cuda.is_available() or fla_kernels() is None, reason="needs CUDA and fla installed")
@pytest.mark.parametrize("per_dimension", [False, True], ids=["per-head decay", "per-dimension decay"])
def test_fla_kernels_equal_the_pytorch_form(per_dimension):
    torch.manual_seed(0)
    batch, heads, length, width = 2, 4, 200, 32
    q, k = torch.rand(batch, heads, length, width), torch.rand(batch, heads, length, width)
    v = torch.randn(batch, heads, length, width + 1)
    g = -torch.rand(batch, heads, length, width if per_dimension else 1) / 8
    expected = chunkwise(q, k, v, g, chunk=64)
    got = causal_scan(*(x.cuda() for x in (q, k, v, g)), chunk=64).cpu()
    assert (got - expected).abs().max() <= 1e-3 * expected.abs().max()
