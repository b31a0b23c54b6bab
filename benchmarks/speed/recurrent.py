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
    ctx: Context, name: str, bidirectional: bool, input_dim: int, hidden: int
) -> tuple[nn.Module, nn.Module]:
    """The zoo plugin (dropout 0: the bare module has none) and a bare module of the same size."""
    from zoo.registry import build, default_config

    cfg = default_config("encoder", name, hidden_size=hidden, bidirectional=bidirectional, dropout=0.0)
    ours = build("encoder", cfg, input_dim=input_dim).to(ctx.device).train()
    rnn = TORCH_RNNS[name](input_dim, hidden, batch_first=True, bidirectional=bidirectional)
    return ours, BareEncoder(rnn).to(ctx.device).train()


def measure_rnn_encoders(ctx: Context) -> list[Row]:
    """Forward+backward of each recurrent encoder plugin against a bare nn.GRU/LSTM/RNN.

    Fair because the bare module does the same necessary work (packing by length, unpacking,
    zeroing padding, the final state), has the same size and gets the same padded batch;
    both backpropagate sum(memory) + sum(state) into their weights. The zoo encoder's
    output dropout is set to 0, since the bare module has none.
    """
    batch, length, dim, hidden = ctx.size((8, 12, 32, 32), (64, 30, 128, 128))
    g = torch.Generator().manual_seed(0)
    x = torch.randn(batch, length, dim, generator=g).to(ctx.device)
    lengths = torch.randint(3, length + 1, (batch,), generator=g)
    mask = (torch.arange(length)[None, :] < lengths[:, None]).to(ctx.device)

    def step(encoder, unpack):
        memory, state = unpack(encoder(x, mask))
        (memory.sum() + state.sum()).backward()

    rows = []
    for name in TORCH_RNNS:
        for bidirectional in (False, True):
            ours, bare = encoder_pair(ctx, name, bidirectional, dim, hidden)
            seconds = interleaved(
                ctx,
                {
                    "zoo": partial(step, ours, lambda out: (out.memory, out.state)),
                    "bare": partial(step, bare, lambda out: out),
                },
                ctx.size(3, 7),
                ctx.size(2, 10),
            )
            direction = "bidirectional" if bidirectional else "unidirectional"
            rows.append(
                speedup_row(
                    f"{name} encoder fwd+bwd, {direction} (B={batch}, S<={length}, {dim}->{hidden})",
                    f"{median(seconds['zoo']) * 1e3:.2f} ms",
                    f"{median(seconds['bare']) * 1e3:.2f} ms (bare nn.{TORCH_RNNS[name].__name__})",
                    median_speedup(seconds, "zoo", "bare"),
                    0.95,
                )
            )
    return rows
