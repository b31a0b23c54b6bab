"""The ``rnn`` decoder: a recurrent decoder that attends with any scorer.

Two ways to wire attention into the recurrence are offered (``style``):

* ``bahdanau`` (Bahdanau et al., 2015). The previous state s_{t-1} is the query;
  the context c_t enters the cell together with the embedding e_t of the previous
  target token::

      c_t = attend(score(s_{t-1}, memory), memory)
      s_t = cell([e_t; c_t], s_{t-1})
      o_t = tanh(W_o [s_t; c_t; e_t])          # "deep output", tanh instead of maxout
      logits_t = W_v o_t

* ``luong`` (Luong et al., 2015). The new state s_t is the query, and the
  attentional vector of the previous step is fed back as input ("input feeding")::

      s_t = cell([e_t; h~_{t-1}], s_{t-1})
      c_t = attend(score(s_t, memory), memory)
      h~_t = tanh(W_c [c_t; s_t])
      logits_t = W_v h~_t

With the ``none`` scorer (``attends = False``) c_t is a learned projection of the
encoder summary ``enc.state``, the same at every step: the fixed-vector
encoder-decoder of Cho et al. (2014) and Sutskever et al. (2014).

Attention is :func:`zoo.nn.attention.attend` with one head and one query (H = 1,
T = 1). Positional encodings are ignored: the recurrence already knows the order.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from zoo.api import (
    Decoder,
    DecoderOutput,
    EncoderOutput,
    build,
    get,
    register,
)
from zoo.api.layers import TargetEmbedding, attend

from .rnn_config import Bridge, Cell, RNNDecoderConfig, Style

CELLS = {Cell.gru: nn.GRUCell, Cell.lstm: nn.LSTMCell, Cell.rnn: nn.RNNCell}


@register("decoder", "rnn")
class RNNDecoder(Decoder):
    """Recurrent (GRU/LSTM/RNN) decoder with Bahdanau- or Luong-style attention from any scorer.

    Built as ``RNNDecoder(cfg, vocab_size=V, memory_dim=D, state_dim=Ds, scorer=cfg, posenc=cfg)``.
    ``forward(y_in (B, T), enc) -> DecoderOutput(logits (B, T, V), attention={"cross": (B, 1, T, S)})``
    (``attention`` is None with the ``none`` scorer). The cache is
    ``{"h": (B, layers, hidden), "keys": (B, 1, S, ...) (the scorer's prepared keys),
    "c": (B, layers, hidden) (LSTM only), "feed": (B, hidden) (Luong only)}``.
    The initial state is ``tanh(W enc.state)`` for every layer (``bridge=learned``, as
    Bahdanau et al. (2015) initialise from the encoder) or zeros.
    """

    Config = RNNDecoderConfig

    def __init__(
        self, cfg: Config, vocab_size: int, memory_dim: int, state_dim: int, scorer: Any, posenc: Any = None
    ) -> None:
        super().__init__()
        hidden = cfg.hidden_size
        self.cell, self.style, self.bridge_kind = cfg.cell, cfg.style, cfg.bridge
        self.layers, self.hidden_size = cfg.layers, hidden

        scorer_cls = get("attention", scorer["name"]).cls
        key_dim = hidden if scorer_cls.needs_equal_dims else memory_dim
        # Keys are the memory, projected to the query size when the scorer compares q and k directly
        # (e.g. dot attention over a bidirectional encoder of twice the decoder's width).
        self.keys = nn.Linear(memory_dim, key_dim, bias=False) if key_dim != memory_dim else nn.Identity()
        self.scorer = build("attention", scorer, query_dim=hidden, key_dim=key_dim, heads=1)
        self.attends = self.scorer.attends
        self.summary = None if self.attends else nn.Linear(state_dim, memory_dim)

        self.target = TargetEmbedding(vocab_size, cfg.embed_dim, hidden, tie=cfg.tie_embeddings)
        feed_dim = memory_dim if cfg.style == Style.bahdanau else hidden  # c_t or h~_{t-1}
        cell_class = CELLS[cfg.cell]
        self.cells = nn.ModuleList(
            cell_class(cfg.embed_dim + feed_dim if i == 0 else hidden, hidden) for i in range(cfg.layers)
        )
        parts = 2 if cfg.cell == Cell.lstm else 1  # LSTM starts from h and c
        self.bridge = nn.Linear(state_dim, parts * cfg.layers * hidden) if cfg.bridge == Bridge.learned else None
        if cfg.style == Style.bahdanau:
            self.output = nn.Linear(hidden + memory_dim + cfg.embed_dim, hidden)  # W_o
        else:
            self.output = nn.Linear(memory_dim + hidden, hidden, bias=False)  # W_c
        self.dropout = nn.Dropout(cfg.dropout)

    # ------------------------------------------------------------------ public API
    def forward(self, y_in: torch.Tensor, enc: EncoderOutput) -> DecoderOutput:
        embedded = self.dropout(self.target.embed(y_in))  # (B, T, E)
        cache = self.init_cache(enc)
        outputs, weights = [], []
        for t in range(y_in.shape[1]):
            out, cache, w = self._step(embedded[:, t], enc, cache)
            outputs.append(out)
            weights.append(w)
        logits = self.target.logits(torch.stack(outputs, dim=1))  # (B, T, V)
        attention = {"cross": torch.stack(weights, dim=1)[:, None]} if self.attends else None  # (B, 1, T, S)
        return DecoderOutput(logits=logits, attention=attention)

    def init_cache(self, enc: EncoderOutput) -> dict:
        batch = enc.state.shape[0]
        parts = 2 if self.cell == Cell.lstm else 1
        if self.bridge is not None:
            start = torch.tanh(self.bridge(enc.state)).view(batch, parts, self.layers, self.hidden_size)
        else:
            start = enc.memory.new_zeros(batch, parts, self.layers, self.hidden_size)
        keys = self.scorer.prepare_keys(self.keys(enc.memory)[:, None])  # (B, 1, S, ...): once per sentence
        cache = {"h": start[:, 0], "keys": keys}
        if self.cell == Cell.lstm:
            cache["c"] = start[:, 1]
        if self.style == Style.luong:
            cache["feed"] = enc.memory.new_zeros(batch, self.hidden_size)  # h~_0
        return cache

    def step(self, y_t: torch.Tensor, enc: EncoderOutput, cache: dict, t: int):
        """One token: y_t (B,) -> (logits (B, V), new cache, cross-attention (B, S) or None)."""
        out, cache, weights = self._step(self.dropout(self.target.embed(y_t)), enc, cache)
        return self.target.logits(out), cache, weights

    # ------------------------------------------------------------------ internals
    def _step(self, e: torch.Tensor, enc: EncoderOutput, cache: dict):
        """Embedded token e (B, E) -> (output vector (B, hidden), new cache, weights (B, S) or None)."""
        if self.style == Style.bahdanau:
            context, weights = self._context(cache["h"][:, -1], enc, cache)  # query: s_{t-1} of the top layer
            top, new_cache = self._recur(torch.cat([e, context], dim=-1), cache)
            out = torch.tanh(self.output(torch.cat([top, context, e], dim=-1)))
        else:
            top, new_cache = self._recur(torch.cat([e, cache["feed"]], dim=-1), cache)
            context, weights = self._context(top, enc, cache)  # query: s_t
            out = torch.tanh(self.output(torch.cat([context, top], dim=-1)))  # h~_t
            new_cache["feed"] = out
        return self.dropout(out), new_cache, weights

    def _context(self, query: torch.Tensor, enc: EncoderOutput, cache: dict):
        """Query (B, hidden) -> context (B, D) and attention weights (B, S) (None without attention)."""
        if not self.attends:
            return self.summary(enc.state), None
        values = enc.memory[:, None]  # (B, 1, S, D): one head
        scores = self.scorer.score_prepared(query[:, None, None, :], cache["keys"])  # (B, 1, 1, S)
        context, weights = attend(scores, values, key_mask=enc.mask)
        return context[:, 0, 0], weights[:, 0, 0]

    def _recur(self, x: torch.Tensor, cache: dict):
        """Run the stacked cells one step: x (B, in) -> top-layer state (B, hidden) and the new h (and c)."""
        hs, cs = [], []
        for i, cell in enumerate(self.cells):
            if i > 0:
                x = self.dropout(x)
            if self.cell == Cell.lstm:
                h, c = cell(x, (cache["h"][:, i], cache["c"][:, i]))
                cs.append(c)
            else:
                h = cell(x, cache["h"][:, i])
            hs.append(h)
            x = h
        new_cache = {"h": torch.stack(hs, dim=1), "keys": cache["keys"]}
        if cs:
            new_cache["c"] = torch.stack(cs, dim=1)
        return x, new_cache
