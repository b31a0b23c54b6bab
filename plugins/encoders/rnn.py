"""Recurrent encoders: Elman RNN, GRU and LSTM, optionally bidirectional.

The three share one base class and differ only in the recurrent cell:

* ``rnn``:  h_t = tanh(W x_t + U h_{t-1} + b)                      (Elman, 1990)
* ``gru``:  gated update/reset recurrence                           (Cho et al., 2014)
* ``lstm``: input/forget/output gates and a memory cell c_t         (Hochreiter & Schmidhuber, 1997)

A bidirectional encoder runs one RNN left-to-right and one right-to-left and
concatenates their outputs at every position (Schuster & Paliwal, 1997), which is
how Bahdanau et al. (2015) annotate source words.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from zoo.api import Encoder, EncoderOutput, register

from .rnn_config import RecurrentConfig


class RecurrentEncoder(Encoder):
    """Shared code of the ``rnn``, ``gru`` and ``lstm`` encoders.

    ``forward(x (B, S, input_dim), mask (B, S)) -> EncoderOutput`` with
    ``memory`` (B, S, hidden_size * directions), zero at padded positions, and
    ``state`` (B, hidden_size * directions): the final hidden state of the top
    layer, forward and backward directions concatenated. For the LSTM the state is
    the hidden vector h only (not the memory cell c), so every recurrent encoder
    offers the same kind of summary.

    Appending padding changes neither memory nor state. A bidirectional encoder
    packs its sequences (``pack_padded_sequence``) so that the backward direction
    starts at each sequence's real last token. A one-way encoder needs no packing:
    padding trails every real token, so it runs over the padded batch and takes each
    row's state from its last real position. A row with no real token at all is run
    for one step and its memory is then zeroed. Unpacked is the same arithmetic (equal
    to float rounding: the input projection is summed in another order) and much
    cheaper on the CPU, where the packed form's backward pass costs O(length^2) (each
    step's slice of the input gets a gradient the size of the whole input): 4.5x the
    unpacked one at 8,192 tokens without padding, 14x on ListOps batches of
    600-2,000 tokens (docs/results.md, cost against length).
    """

    rnn_class: type[nn.RNNBase]  # set by each subclass

    Config = RecurrentConfig

    def __init__(self, cfg: Config, input_dim: int) -> None:
        super().__init__()
        self.directions = 2 if cfg.bidirectional else 1
        self.layers = cfg.layers
        self.output_dim = cfg.hidden_size * self.directions
        self.state_dim = self.output_dim
        self.rnn = self.rnn_class(
            input_size=input_dim,
            hidden_size=cfg.hidden_size,
            num_layers=cfg.layers,
            bidirectional=cfg.bidirectional,
            dropout=cfg.dropout if cfg.layers > 1 else 0.0,  # PyTorch applies it between layers only
            batch_first=True,
        )
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> EncoderOutput:
        batch, length, _ = x.shape
        padded = not bool(mask.all())
        if padded and self.directions == 2:  # the backward direction must start at each row's last real token
            lengths = mask.sum(dim=1).clamp(min=1).cpu()  # packing needs lengths on the CPU
            packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
            outputs, final = self.rnn(packed)
            memory, _ = pad_packed_sequence(outputs, batch_first=True, total_length=length)
        else:  # left to right, trailing padding is read after every real token and changes none of their outputs
            memory, final = self.rnn(x)
        if padded and self.directions == 1:  # ``final`` read the padding too: the top layer at the last real token
            last = (mask.sum(dim=1).clamp(min=1) - 1).view(-1, 1, 1).expand(-1, 1, memory.size(-1))
            state = memory.gather(1, last).squeeze(1)
        else:
            if isinstance(final, tuple):  # LSTM returns (h, c); the summary is h
                final = final[0]
            # final: (layers * directions, B, hidden) -> top layer, directions side by side: (B, directions * hidden)
            top = final.view(self.layers, self.directions, batch, -1)[-1]
            state = top.transpose(0, 1).reshape(batch, self.state_dim)
        if padded:
            memory = memory * mask.unsqueeze(-1).to(memory.dtype)
        return EncoderOutput(memory=self.dropout(memory), mask=mask, state=self.dropout(state))


@register("encoder", "rnn")
class ElmanEncoder(RecurrentEncoder):
    """Elman RNN (tanh) encoder, optionally bidirectional and stacked."""

    rnn_class = nn.RNN


@register("encoder", "gru")
class GRUEncoder(RecurrentEncoder):
    """GRU encoder (Cho et al., 2014), optionally bidirectional and stacked."""

    rnn_class = nn.GRU


@register("encoder", "lstm")
class LSTMEncoder(RecurrentEncoder):
    """LSTM encoder (Hochreiter & Schmidhuber, 1997), optionally bidirectional and stacked; state = final h."""

    rnn_class = nn.LSTM
