"""State-space layers (zoo/nn/ssm.py) and the s4d and mamba plugins built on them.

Each layer's parallel form (S4D's FFT convolution, Mamba's scan) must compute what its recurrence computes one step
at a time, padding must be invisible to real steps, and the decoders must generate from a state of one size.
Float64 throughout, so a gap is a bug rather than rounding.
"""

from __future__ import annotations

import pytest
import torch

from zoo import registry
from zoo.api import BOS, ConfigError, EncoderOutput
from zoo.nn.ssm import (
    S4D,
    Mamba,
    MambaLayout,
    S4DLayout,
    S4DMixer,
    chunked_selective_scan,
    linear_scan,
    mamba_kernel,
    padding_first,
    parallel_selective_scan,
    selective_scan,
    step_by_step,
)
from zoo.registry import discovery
from zoo_plugins.encoders.ssm import MambaEncoder

discovery.discover()
D, V, MEMORY_DIM = 8, 23, 12
TOL = 1e-10
LAYERS = {
    "s4d": lambda: S4D(D, d_state=6),
    "s4d-mixer": lambda: S4DMixer(D, d_state=6, dt_min=1e-3, dt_max=1e-1),
    "mamba": lambda: Mamba(D, d_state=4, expand=2, d_conv=4),
}
FAMILIES = ["s4d", "mamba"]


def layer(name: str) -> torch.nn.Module:
    torch.manual_seed(0)
    return LAYERS[name]().double().eval()


def inputs(batch: int = 2, length: int = 37, width: int = D, seed: int = 1) -> torch.Tensor:
    torch.manual_seed(seed)
    return torch.randn(batch, length, width, dtype=torch.float64)


def gap(a: torch.Tensor, b: torch.Tensor) -> float:
    return (a - b).abs().max().item()


# ------------------------------------------------------------------ the parallel forms equal the recurrences
def test_s4d_convolution_equals_the_recurrence():
    ssm, x = layer("s4d"), inputs()
    assert gap(ssm(x), step_by_step(ssm, x)) <= TOL


def test_mamba_parallel_scan_equals_the_step_loop():
    mamba, x = layer("mamba"), inputs()
    assert gap(mamba(x), step_by_step(mamba, x)) <= TOL


@pytest.mark.parametrize("length", [1, 2, 7, 64, 100])
def test_linear_scan_equals_the_loop(length):
    torch.manual_seed(0)
    a, b = torch.rand(3, length, 4, 2, dtype=torch.float64), torch.randn(3, length, 4, 2, dtype=torch.float64)
    h, expected = torch.zeros(3, 4, 2, dtype=torch.float64), []
    for t in range(length):
        h = a[:, t] * h + b[:, t]
        expected.append(h)
    assert gap(linear_scan(a, b), torch.stack(expected, dim=1)) <= TOL


@pytest.mark.parametrize("length", [1, 7, 16, 45])
def test_the_chunked_scan_equals_the_parallel_scan_with_its_gradients(length):
    """The CPU's chunked form (chunks of 16 here, so the states and the adjoints cross chunk borders) against the
    whole-sequence scan, outputs, last state and the gradient of every input."""
    torch.manual_seed(0)
    u, B, C = (torch.randn(2, length, n, dtype=torch.float64) for n in (5, 3, 3))
    delta, A = torch.rand(2, length, 5, dtype=torch.float64), -torch.rand(5, 3, dtype=torch.float64) * 4
    leaves = [t.requires_grad_() for t in (u, delta, A, B, C)]

    weights = torch.randn(2, length, 5, dtype=torch.float64), torch.randn(2, 5, 3, dtype=torch.float64)
    results = []
    for scan in (parallel_selective_scan, lambda *t: chunked_selective_scan(*t, chunk=16)):
        y, last = scan(*leaves)
        loss = (y * weights[0]).sum() + (last * weights[1]).sum()
        results.append([y, last, *torch.autograd.grad(loss, leaves)])
    assert max(gap(a, b) for a, b in zip(*results)) <= TOL


def test_a_grouped_scan_equals_each_group_scanned_alone_with_its_gradients():
    """Two groups of channels, each with its own B and C (how a bidirectional block runs its two directions in one
    scan), chunked and parallel, against each group's scan on its own: outputs, last states and every input's
    gradient."""
    torch.manual_seed(0)
    u, delta = torch.randn(2, 23, 6, dtype=torch.float64), torch.rand(2, 23, 6, dtype=torch.float64)
    A, B, C = -torch.rand(6, 3, dtype=torch.float64) * 4, *(torch.randn(2, 23, 2, 3, dtype=torch.float64) for _ in "BC")
    leaves = [t.requires_grad_() for t in (u, delta, A, B, C)]
    weights = torch.randn(2, 23, 6, dtype=torch.float64), torch.randn(2, 6, 3, dtype=torch.float64)

    def alone(u, delta, A, B, C):
        halves = [
            chunked_selective_scan(
                u[..., g * 3 : g * 3 + 3],
                delta[..., g * 3 : g * 3 + 3],
                A[g * 3 : g * 3 + 3],
                B[:, :, g],
                C[:, :, g],
                chunk=8,
            )
            for g in range(2)
        ]
        return (torch.cat(parts, dim=-2 if i else -1) for i, parts in enumerate(zip(*halves)))

    results = []
    for scan in (alone, lambda *t: chunked_selective_scan(*t, chunk=8), parallel_selective_scan):
        y, last = scan(*leaves)
        loss = (y * weights[0]).sum() + (last * weights[1]).sum()
        results.append([y, last, *torch.autograd.grad(loss, leaves)])
    assert max(gap(a, b) for result in results[1:] for a, b in zip(results[0], result)) <= TOL


def test_two_mamba_layers_together_equal_each_alone_with_their_gradients():
    """``Mamba.together`` (a bidirectional block's one scan for both directions) against two separate calls."""
    torch.manual_seed(0)
    first, second = layer("mamba"), LAYERS["mamba"]().double()
    x, other_x = inputs(seed=1).requires_grad_(), inputs(seed=2).requires_grad_()
    mask = torch.ones(2, 37, dtype=torch.bool)
    mask[1, 30:] = False
    leaves = [x, other_x, *first.parameters(), *second.parameters()]
    results = []
    for outputs in (first.together(second, x, other_x, mask), (first(x, mask), second(other_x, mask))):
        loss = sum((out * torch.linspace(-1, 1, out.numel()).view_as(out)).sum() for out in outputs)
        results.append([*outputs, *torch.autograd.grad(loss, leaves)])
    assert max(gap(a, b) for a, b in zip(*results)) <= TOL


def test_selective_scan_stays_finite_under_strong_decays():
    """Steps of exp(-50) decay over 300 tokens: the scan only multiplies decays together, never divides by one."""
    torch.manual_seed(0)
    x, B, C = torch.randn(1, 300, 3), torch.randn(1, 300, 2), torch.randn(1, 300, 2)
    delta, A = torch.full((1, 300, 3), 10.0), -5 * torch.ones(3, 2)
    y, last = selective_scan(x, delta, A, B, C, torch.ones(3))
    assert torch.isfinite(y).all() and torch.isfinite(last).all()


@pytest.mark.parametrize("name", LAYERS)
def test_the_state_after_a_prefix_continues_the_sequence(name):
    """``return_state`` gives the state the recurrence reaches after the sequence: stepping on from it gives what
    the parallel form gives for the longer sequence (what a decoder's init_cache relies on)."""
    model, x, more = layer(name), inputs(), inputs(length=5, seed=2)
    _, state = model(x, return_state=True)
    steps = []
    for t in range(more.shape[1]):
        y, state = model.step(more[:, t], state)
        steps.append(y)
    assert gap(torch.stack(steps, dim=1), model(torch.cat([x, more], dim=1))[:, x.shape[1] :]) <= TOL


# ------------------------------------------------------------------ padding
@pytest.mark.parametrize("name", LAYERS)
def test_padding_before_the_real_steps_leaves_the_state_untouched(name):
    """Arbitrary vectors at padded steps before the real ones: the real steps' outputs and the final state are
    those of the real steps alone (a zero input keeps a zero state zero; Mamba's Δ = 0 keeps any state)."""
    model, x = layer(name), inputs(batch=1, length=9)
    mask = torch.tensor([[False] * 4 + [True] * 5])
    y, state = model(x, mask, return_state=True)
    y_alone, state_alone = model(x[:, 4:], return_state=True)
    assert gap(y[:, 4:], y_alone) <= TOL
    for got, expected in zip(*(s if isinstance(s, tuple) else (s,) for s in (state, state_alone))):
        assert gap(got, expected) <= TOL


def test_padding_first_moves_padding_before_the_real_steps_in_order():
    x = torch.arange(10.0).view(2, 5)
    mask = torch.tensor([[True, True, True, False, False], [True, True, True, True, True]])
    moved, moved_mask = padding_first(x, mask)
    assert moved.tolist() == [[3.0, 4.0, 0.0, 1.0, 2.0], [5.0, 6.0, 7.0, 8.0, 9.0]]
    assert moved_mask.tolist() == [[False, False, True, True, True], [True] * 5]


def encoder(family: str, bidirectional: bool = True, attention_every: int = 0):
    torch.manual_seed(0)
    cfg = {
        "name": family,
        "d_model": D,
        "d_state": 4,
        "bidirectional": bidirectional,
        "attention_every": attention_every,
    }
    scorer = {"name": "scaled_dot"}
    return registry.build("encoder", cfg, input_dim=D, scorer=scorer).double().eval()


@pytest.mark.parametrize("bidirectional", [False, True], ids=["forward", "bidirectional"])
@pytest.mark.parametrize("family", FAMILIES)
def test_encoder_ignores_appended_padding(family, bidirectional):
    model, x = encoder(family, bidirectional), inputs(length=6)
    mask = torch.tensor([[True] * 6, [True] * 4 + [False] * 2])
    longer = torch.cat([x, inputs(length=3, seed=5)], dim=1)
    longer_mask = torch.cat([mask, torch.zeros(2, 3, dtype=torch.bool)], dim=1)
    short, long = model(x, mask), model(longer, longer_mask)
    assert gap(long.memory[:, :6], short.memory) <= TOL
    assert gap(long.state, short.state) <= TOL


@pytest.mark.parametrize("attention_every", [0, 1], ids=["plain", "with attention layers"])
@pytest.mark.parametrize("family", FAMILIES)
def test_only_a_bidirectional_encoder_reads_later_tokens(family, attention_every):
    """Changing the last real token changes the first position's memory in both directions, not in one: a hybrid's
    attention layers are causal when it reads left to right."""
    x, mask = inputs(batch=1, length=6), torch.tensor([[True] * 5 + [False]])
    changed = x.clone()
    changed[:, 4] = inputs(batch=1, length=1, seed=6)[:, 0]
    for bidirectional, reads in ((True, True), (False, False)):
        model = encoder(family, bidirectional, attention_every)
        moved = gap(model(x, mask).memory[:, 0], model(changed, mask).memory[:, 0])
        assert (moved > TOL) == reads


# ------------------------------------------------------------------ the decoders
def decoder(family: str, posenc: str = "none"):
    torch.manual_seed(0)
    cfg = {"name": family, "d_model": D, "d_state": 4}
    return registry.build("decoder", cfg, vocab_size=V, memory_dim=MEMORY_DIM, posenc=posenc).double().eval()


def memory(length: int = 7, seed: int = 2) -> EncoderOutput:
    torch.manual_seed(seed)
    mask = torch.arange(length)[None, :] < torch.tensor([[length], [3]])
    return EncoderOutput(torch.randn(2, length, MEMORY_DIM, dtype=torch.float64), mask, torch.zeros(2, 1))


def targets(length: int = 9) -> torch.Tensor:
    torch.manual_seed(3)
    y = torch.randint(4, V, (2, length))
    y[:, 0] = BOS
    return y


@pytest.mark.parametrize("posenc", ["none", "sinusoidal"])
@pytest.mark.parametrize("family", FAMILIES)
def test_decoder_steps_equal_teacher_forcing(family, posenc):
    model, enc, y = decoder(family, posenc), memory(), targets()
    full = model(y, enc)
    assert full.attention is None
    cache = model.init_cache(enc)
    for t in range(y.shape[1]):
        logits, cache, attn = model.step(y[:, t], enc, cache, t)
        assert attn is None
        assert gap(logits, full.logits[:, t]) <= TOL


@pytest.mark.parametrize("family", FAMILIES)
def test_decoder_ignores_padded_memory(family):
    """Other vectors at the padded memory positions, and more of them, change neither teacher forcing nor steps."""
    model, enc, y = decoder(family), memory(7), targets()
    wider = memory(12, seed=4)
    wider.memory[:, :7][enc.mask] = enc.memory[enc.mask]
    wider.mask = torch.cat([enc.mask, torch.zeros(2, 5, dtype=torch.bool)], dim=1)
    wider.mask[0, 7:] = False  # row 0: its 7 real steps, 5 padded ones after them
    assert gap(model(y, wider).logits, model(y, enc).logits) <= TOL
    first, _, _ = model.step(y[:, 0], wider, model.init_cache(wider), 0)
    assert gap(first, model(y, enc).logits[:, 0]) <= TOL


@pytest.mark.parametrize("family", FAMILIES)
def test_decoder_state_has_one_size_whatever_the_lengths(family):
    model, y = decoder(family), targets()

    def shapes(cache) -> list:
        """The shape of every tensor anywhere in the cache (states, attention caches, masks)."""
        if isinstance(cache, torch.Tensor):
            return [tuple(cache.shape)]
        parts = cache.values() if isinstance(cache, dict) else cache if isinstance(cache, (list, tuple)) else []
        return [shape for part in parts for shape in shapes(part)]

    short, long = model.init_cache(memory(3)), model.init_cache(memory(40))
    assert shapes(short) == shapes(long)
    cache = long
    for t in range(y.shape[1]):
        _, cache, _ = model.step(y[:, t], memory(40), cache, t)
    assert shapes(cache) == shapes(long)


@pytest.mark.parametrize("family", FAMILIES)
def test_decoder_refuses_a_relative_posenc(family):
    with pytest.raises(ValueError, match="posenc=none"):
        registry.build("decoder", {"name": family}, vocab_size=V, memory_dim=D, posenc="rotary")


# ------------------------------------------------------------------ config checks
@pytest.mark.parametrize(
    ("layout", "fields", "message"),
    [
        (MambaLayout, {"expand": 0}, "expand=0 must be >= 1"),
        (MambaLayout, {"d_conv": 0}, "d_conv=0 must be >= 1"),
        (S4DLayout, {"d_state": 0}, "d_state=0 must be >= 1"),
        (S4DLayout, {"dt_min": 0.5, "dt_max": 0.1}, "dt_min=0.5 must be <= dt_max=0.1"),
        (MambaLayout, {"norm": "batchnorm"}, "norm='batchnorm' must be one of: layernorm, rmsnorm, dyt"),
        (
            MambaEncoder.Config,
            {"d_model": 30, "attention_every": 1},
            "d_model=30 must be a multiple of attention_heads",
        ),
    ],
)
def test_a_value_out_of_range_is_one_config_error(layout, fields, message):
    with pytest.raises(ConfigError, match=message):
        layout(**fields)


# ------------------------------------------------------------------ the optional kernel
@pytest.mark.skipif(not torch.cuda.is_available() or mamba_kernel() is None, reason="needs CUDA and mamba_ssm")
def test_mamba_kernel_equals_the_pytorch_scan():
    torch.manual_seed(0)
    model, x = Mamba(32, d_state=16).eval(), torch.randn(2, 200, 32)
    with torch.no_grad():
        expected, (_, expected_state) = model(x, return_state=True)
        got, (_, state) = model.cuda()(x.cuda(), return_state=True)
    assert gap(got.cpu(), expected) <= 1e-3 * expected.abs().max().item()
    assert gap(state.cpu(), expected_state) <= 1e-3 * expected_state.abs().max().item()
    other, other_x = Mamba(32, d_state=16).eval(), torch.randn(2, 200, 32)  # two groups of B and C, as bidirectional
    with torch.no_grad():
        expected = model.cpu().together(other, x, other_x, None)
        got = model.cuda().together(other.cuda(), x.cuda(), other_x.cuda(), None)
    assert max(gap(a.cpu(), b) for a, b in zip(got, expected)) <= 1e-3 * expected[0].abs().max().item()
