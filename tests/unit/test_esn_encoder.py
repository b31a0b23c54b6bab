"""The ``esn`` and ``elm`` encoders: shapes, seeds, buffers, padding, recurrence and gradients."""

from __future__ import annotations

import pytest
import torch

from zoo.contracts import EncoderOutput
from zoo.registry import build, default_config, discovery

discovery.discover()
IN = 6


def make(name: str = "esn", **overrides):
    cfg = default_config("encoder", name, **{"units": 24, "readout_dim": 10, **overrides})
    return build("encoder", cfg, input_dim=IN).eval()


def batch(b: int = 3, s: int = 7):
    x = torch.randn(b, s, IN, generator=torch.Generator().manual_seed(0))
    mask = torch.ones(b, s, dtype=torch.bool)
    mask[1, 4:] = False
    mask[2, 2:] = False
    return x, mask


@pytest.mark.parametrize(
    "name, overrides, reservoirs",
    [
        ("esn", dict(bidirectional=False), 1),
        ("esn", dict(bidirectional=True), 2),
        ("esn", dict(bidirectional=False, layers=3), 3),
        ("esn", dict(bidirectional=True, layers=2), 4),
        ("elm", dict(layers=2), 2),
    ],
)
def test_shapes(name, overrides, reservoirs):
    enc = make(name, **overrides)
    x, mask = batch()
    out = enc(x, mask)
    assert isinstance(out, EncoderOutput)
    assert out.memory.shape == (3, 7, 10) and out.state.shape == (3, 10)
    assert enc.output_dim == enc.state_dim == 10
    assert len(enc.reservoirs) == reservoirs
    assert enc.reservoirs[0].W_in.shape == (24, IN)
    directions = len(enc.reservoirs) // enc.layers
    if len(enc.reservoirs) > directions:  # a deeper layer reads all directions of the one below
        assert enc.reservoirs[directions].W_in.shape == (24, 24 * directions)


def test_same_seed_rebuilds_identical_reservoirs_and_directions_differ():
    a, b = make(bidirectional=True, seed=5), make(bidirectional=True, seed=5)
    for ra, rb in zip(a.reservoirs, b.reservoirs):
        assert torch.equal(ra.W_in, rb.W_in) and torch.equal(ra.W, rb.W) and torch.equal(ra.b, rb.b)
    assert not torch.equal(a.reservoirs[0].W, a.reservoirs[1].W)
    assert not torch.equal(a.reservoirs[0].W, make(seed=6).reservoirs[0].W)


def test_reservoir_is_saved_in_state_dict_but_not_trained():
    enc = make(bidirectional=True)
    params = {name for name, _ in enc.named_parameters()}
    assert not any(name.startswith("reservoirs.") for name in params)
    assert {"reservoirs.0.W_in", "reservoirs.0.W", "reservoirs.0.b", "reservoirs.1.W"} <= set(enc.state_dict())
    other = make(bidirectional=True, seed=99)
    other.load_state_dict(enc.state_dict())
    x, mask = batch()
    torch.testing.assert_close(other(x, mask).memory, enc(x, mask).memory)


def test_trainable_reservoir_makes_parameters_that_learn():
    enc = make(trainable_reservoir=True, bidirectional=False)
    names = {name for name, _ in enc.named_parameters()}
    assert {"reservoirs.0.W_in", "reservoirs.0.W", "reservoirs.0.b"} <= names
    x, mask = batch()
    out = enc(x, mask)
    (out.memory.sum() + out.state.sum()).backward()
    assert enc.reservoirs[0].W.grad.abs().sum() > 0


def test_gradient_reaches_the_readout_and_the_input_but_not_a_frozen_reservoir():
    enc = make()
    x, mask = batch()
    x.requires_grad_(True)
    out = enc(x, mask)
    (out.memory.sum() + out.state.sum()).backward()
    assert enc.readout.weight.grad.abs().sum() > 0 and enc.state_readout.weight.grad.abs().sum() > 0
    assert x.grad.abs().sum() > 0  # through the readout's input columns
    assert all(not t.requires_grad for t in enc.reservoirs[0].buffers())
    # Cut the readout's direct input columns: with a frozen reservoir no gradient is left for x.
    for trainable, expect_grad in ((False, False), (True, True)):
        enc = make(trainable_reservoir=trainable)
        with torch.no_grad():
            enc.readout.weight[:, :IN] = 0
        x = batch()[0].requires_grad_(True)
        enc(x, torch.ones(3, 7, dtype=torch.bool)).memory.sum().backward()
        assert (x.grad.abs().sum() > 0) == expect_grad


@pytest.mark.parametrize("name, overrides", [("esn", {}), ("esn", dict(bidirectional=True, layers=2)), ("elm", {})])
def test_padding_changes_nothing_and_memory_is_zero_there(name, overrides):
    enc = make(name, **overrides)
    x, mask = batch()
    out = enc(x, mask)
    assert out.memory[~mask].abs().max() == 0
    padded_x = torch.cat([x, torch.randn(3, 4, IN)], dim=1)  # garbage in the extra padding
    padded_mask = torch.cat([mask, torch.zeros(3, 4, dtype=torch.bool)], dim=1)
    longer = enc(padded_x, padded_mask)
    torch.testing.assert_close(longer.memory[:, :7], out.memory)
    torch.testing.assert_close(longer.state, out.state)
    alone = enc(x[2:, :2], mask[2:, :2])  # the short sentence on its own
    torch.testing.assert_close(alone.memory[0], out.memory[2, :2])
    torch.testing.assert_close(alone.state[0], out.state[2])


def perturbation_effect(enc, step: int) -> torch.Tensor:
    """|change| of memory at every position (B=1, S=6) when the input at ``step`` changes."""
    x = torch.randn(1, 6, IN, generator=torch.Generator().manual_seed(1))
    changed = x.clone()
    changed[0, step] += 1.0
    mask = torch.ones(1, 6, dtype=torch.bool)
    return (enc(x, mask).memory - enc(changed, mask).memory).abs().sum(-1)[0]


def test_elm_has_no_recurrence():
    enc = make("elm")
    assert enc.reservoirs[0].W is None
    effect = perturbation_effect(enc, 2)
    assert effect[2] > 0 and effect[[0, 1, 3, 4, 5]].max() == 0


def test_esn_reads_forward_and_backward_when_bidirectional():
    forward_only = perturbation_effect(make(bidirectional=False), 2)
    assert forward_only[3:].min() > 0 and forward_only[:2].max() == 0  # the echo runs left-to-right
    both = perturbation_effect(make(bidirectional=True), 2)
    assert both.min() > 0  # the backward reservoir carries it to earlier positions


def test_unknown_activation_is_a_clear_error():
    with pytest.raises(ValueError, match="activation='gelu' must be one of: tanh"):
        make(activation="gelu")
