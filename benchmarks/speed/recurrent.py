"""The gru, lstm and rnn encoder plugins against the bare torch modules they wrap."""

from __future__ import annotations

from functools import partial

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from speed.common import Context, Row, interleaved, median, median_speedup, speedup_row

TORCH_RNNS = {"gru": nn.GRU, "lstm": nn.LSTM, "rnn": nn.RNN}


class BareEncoder(nn.Module):
    """The least a padded batch needs: pack by length, run the torch RNN, unpack, zero the
    padding, and take the top layer's final state (both directions side by side)."""

    def __init__(self, rnn: nn.RNNBase) -> None:
        super().__init__()
        self.rnn = rnn

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        packed = pack_padded_sequence(x, mask.sum(dim=1).cpu(), batch_first=True, enforce_sorted=False)
        outputs, final = self.rnn(packed)
        memory, _ = pad_packed_sequence(outputs, batch_first=True, total_length=x.shape[1])
        final = final[0] if isinstance(final, tuple) else final
        directions = 2 if self.rnn.bidirectional else 1
        state = final[-directions:].transpose(0, 1).reshape(x.shape[0], -1)
        return memory * mask.unsqueeze(-1), state


def encoder_pair(
    ctx: Context, name: str, bidirectional: bool, input_dim: int, hidden: int, layers: int = 1
) -> tuple[nn.Module, nn.Module]:
    """The zoo plugin (dropout 0: the bare module has none) and a bare module of the same size."""
    from zoo.registry import build, default_config

    cfg = default_config("encoder", name, hidden_size=hidden, bidirectional=bidirectional, dropout=0.0, layers=layers)
    ours = build("encoder", cfg, input_dim=input_dim).to(ctx.device).train()
    rnn = TORCH_RNNS[name](input_dim, hidden, layers, batch_first=True, bidirectional=bidirectional)
    return ours, BareEncoder(rnn).to(ctx.device).train()


def padded_batch(ctx: Context, batch: int, shortest: int, length: int, dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Random inputs (B, S, dim) and a mask of lengths drawn from [shortest, length]."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(batch, length, dim, generator=g).to(ctx.device)
    lengths = torch.randint(shortest, length + 1, (batch,), generator=g)
    return x, (torch.arange(length)[None, :] < lengths[:, None]).to(ctx.device)


def measure_rnn_encoders(ctx: Context) -> list[Row]:
    """Forward+backward of each recurrent encoder plugin against a bare nn.GRU/LSTM/RNN.

    Fair because the bare module does the same necessary work (packing by length, unpacking,
    zeroing padding, the final state), has the same size and gets the same padded batch;
    both backpropagate sum(memory) + sum(state) into their weights. The zoo encoder's
    output dropout is set to 0, since the bare module has none.

    The last row is a ListOps batch at Long Range Arena's lengths (8 expressions of 600-2,000 tokens, the GRU of
    ``model=family_gru``): there the one-way plugin runs unpacked, and the bare module's packed backward pass is
    O(length^2) on the CPU, so the row has no goal, it measures what skipping the packing buys.
    """
    batch, length, dim, hidden = ctx.size((8, 12, 32, 32), (64, 30, 128, 128))
    x, mask = padded_batch(ctx, batch, 3, length, dim)

    def step(encoder, unpack, x, mask):
        memory, state = unpack(encoder(x, mask))
        (memory.sum() + state.sum()).backward()

    def race(ours, bare, x, mask, rounds, repeats):
        contestants = {
            "zoo": partial(step, ours, lambda out: (out.memory, out.state), x, mask),
            "bare": partial(step, bare, lambda out: out, x, mask),
        }
        return interleaved(ctx, contestants, rounds, repeats)

    def times(seconds, name):
        return (
            f"{median(seconds['zoo']) * 1e3:.2f} ms",
            f"{median(seconds['bare']) * 1e3:.2f} ms (bare nn.{TORCH_RNNS[name].__name__})",
            median_speedup(seconds, "zoo", "bare"),
        )

    rows = []
    for name in TORCH_RNNS:
        for bidirectional in (False, True):
            ours, bare = encoder_pair(ctx, name, bidirectional, dim, hidden)
            seconds = race(ours, bare, x, mask, ctx.size(3, 7), ctx.size(2, 10))
            direction = "bidirectional" if bidirectional else "unidirectional"
            what = f"{name} encoder fwd+bwd, {direction} (B={batch}, S<={length}, {dim}->{hidden})"
            rows.append(speedup_row(what, *times(seconds, name), 0.95))
    batch, shortest, length = ctx.size((4, 30, 60), (8, 600, 2000))
    ours, bare = encoder_pair(ctx, "gru", False, hidden, hidden, layers=2)
    seconds = race(ours, bare, *padded_batch(ctx, batch, shortest, length, hidden), ctx.size(2, 3), 1)
    what = f"gru encoder fwd+bwd, unidirectional, 2 layers (B={batch}, S={shortest}-{length}, ListOps at length)"
    rows.append(speedup_row(what, *times(seconds, "gru"), None, "unpacked against packed"))
    return rows
