"""The ``rnn``, ``gru`` and ``lstm`` encoders: packing, padding, state and sizes."""

import pytest
import torch
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from zoo import registry
from zoo.registry import discovery

discovery.discover()

B, S, D, H = 3, 5, 6, 4
LENGTHS = torch.tensor([5, 3, 1])
CELLS = ["rnn", "gru", "lstm"]


def encoder(name, **overrides):
    cfg = registry.default_config("encoder", name, hidden_size=H, **overrides)
    return registry.build("encoder", cfg, input_dim=D)


def mask_for(lengths, length):
    return torch.arange(length)[None, :] < lengths[:, None]


def assert_same_outputs_and_gradients(unpacked, packed):
    """Each a (memory, state, parameter gradients) triple: equal to float rounding."""
    (memory, state, grads), (packed_memory, packed_state, packed_grads) = unpacked, packed
    torch.testing.assert_close(memory, packed_memory, atol=1e-6, rtol=0)
    torch.testing.assert_close(state, packed_state, atol=1e-6, rtol=0)
    for grad, packed_grad in zip(grads, packed_grads):
        torch.testing.assert_close(grad, packed_grad, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("bidirectional", [True, False])
@pytest.mark.parametrize("name", CELLS)
def test_sizes(name, bidirectional):
    enc = encoder(name, bidirectional=bidirectional, layers=2)
    directions = 2 if bidirectional else 1
    assert enc.output_dim == enc.state_dim == H * directions
    out = enc(torch.randn(B, S, D), mask_for(LENGTHS, S))
    assert out.memory.shape == (B, S, H * directions)
    assert out.state.shape == (B, H * directions)


@pytest.mark.parametrize("bidirectional", [True, False])
@pytest.mark.parametrize("layers", [1, 2])
@pytest.mark.parametrize("name", CELLS)
def test_padding_is_invisible(name, layers, bidirectional):
    torch.manual_seed(0)
    enc = encoder(name, layers=layers, bidirectional=bidirectional).eval()
    x = torch.randn(B, S, D)
    mask = mask_for(LENGTHS, S)
    x_long = torch.cat([x, 100 * torch.randn(B, 4, D)], dim=1)  # loud garbage in the new padded steps
    with torch.no_grad():
        short = enc(x, mask)
        long = enc(x_long, mask_for(LENGTHS, S + 4))
        garbage_inside = enc(torch.where(mask[..., None], x, 100 * torch.randn(B, S, D)), mask)
    torch.testing.assert_close(long.memory[:, :S], short.memory, atol=1e-6, rtol=0)
    torch.testing.assert_close(long.state, short.state, atol=1e-6, rtol=0)
    torch.testing.assert_close(garbage_inside.memory, short.memory, atol=1e-6, rtol=0)
    assert torch.all(long.memory[~mask_for(LENGTHS, S + 4)] == 0), "memory at padded positions must be zero"


@pytest.mark.parametrize("name", CELLS)
def test_a_batch_without_padding_gives_what_the_packed_form_gives_gradients_too(name):
    """Such a batch runs unpacked (linear-time backward on the CPU); a padded row beside it sends it packed."""
    torch.manual_seed(0)
    enc = encoder(name, layers=2, dropout=0.0)
    x = torch.randn(B, S, D)
    whole = mask_for(torch.full((B,), S), S)
    results = []
    for rows in (B, B + 1):  # alone, then packed beside a padded row
        enc.zero_grad()
        padded = (
            torch.cat([x, torch.randn(rows - B, S, D)]),
            torch.cat([whole, mask_for(torch.tensor([1]), S)[: rows - B]]),
        )
        out = enc(*padded)
        (out.memory[:B].square().sum() + out.state[:B].sum()).backward()
        results.append((out.memory[:B], out.state[:B], [p.grad.clone() for p in enc.parameters()]))
    assert_same_outputs_and_gradients(*results)


@pytest.mark.parametrize("name", CELLS)
def test_a_one_way_encoder_runs_padding_unpacked_to_what_packing_gives_gradients_too(name):
    """Trailing padding cannot reach a real position left to right, so the one-way encoder skips packing."""
    torch.manual_seed(0)
    enc = encoder(name, layers=2, dropout=0.0, bidirectional=False)
    x = torch.randn(B, S, D)
    results = []
    for pack in (False, True):
        enc.zero_grad()
        if pack:
            packed = pack_padded_sequence(x, LENGTHS, batch_first=True, enforce_sorted=False)
            memory, _ = pad_packed_sequence(enc.rnn(packed)[0], batch_first=True, total_length=S)
            state = memory[torch.arange(B), LENGTHS - 1]
        else:
            out = enc(x, mask_for(LENGTHS, S))
            memory, state = out.memory, out.state
        (memory.square().sum() + state.sum()).backward()
        results.append((memory, state, [p.grad.clone() for p in enc.parameters()]))
    assert_same_outputs_and_gradients(*results)


@pytest.mark.parametrize("name", CELLS)
def test_state_is_final_state_of_each_direction(name):
    """Forward direction ends at the last real token, backward direction at the first."""
    enc = encoder(name).eval()
    with torch.no_grad():
        out = enc(torch.randn(B, S, D), mask_for(LENGTHS, S))
    last = out.memory[torch.arange(B), LENGTHS - 1, :H]
    torch.testing.assert_close(out.state[:, :H], last)
    torch.testing.assert_close(out.state[:, H:], out.memory[:, 0, H:])


@pytest.mark.parametrize("bidirectional", [True, False])
@pytest.mark.parametrize("name", CELLS)
def test_row_without_real_tokens_gives_zero_memory(name, bidirectional):
    enc = encoder(name, bidirectional=bidirectional).eval()
    mask = mask_for(torch.tensor([3, 0]), 3)
    out = enc(torch.randn(2, 3, D), mask)
    assert torch.all(out.memory[1] == 0)
    assert torch.isfinite(out.state).all()


def test_elman_uses_tanh_and_lstm_is_an_lstm():
    assert encoder("rnn").rnn.nonlinearity == "tanh"
    assert isinstance(encoder("lstm").rnn, torch.nn.LSTM)
    assert isinstance(encoder("gru").rnn, torch.nn.GRU)


def test_dropout_only_in_training():
    enc = encoder("gru", dropout=0.5)
    x, mask = torch.randn(B, S, D), mask_for(LENGTHS, S)
    enc.eval()
    assert torch.equal(enc(x, mask).memory, enc(x, mask).memory)
    enc.train()
    assert not torch.equal(enc(x, mask).memory, enc(x, mask).memory)


def test_zero_layers_is_rejected():
    with pytest.raises(ValueError, match="layers=0 must be >= 1"):
        encoder("gru", layers=0)
