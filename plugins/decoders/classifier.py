"""The ``classifier`` decoder: a pooling head that reads the whole encoder memory once and names one label.

A sequence classifier pools the encoder's states into one vector and maps it to class scores with a small
MLP: Long Range Arena's head (Tay et al., 2021) is a masked mean over positions followed by
Dense-ReLU-Dense. Other pools are offered and concatenated when several are chosen (``pooling``):

* ``mean``: the mean over real positions (LRA);
* ``max``: the largest value of each feature over real positions (max-over-time; Collobert et al., 2011);
* ``last``: the state at the last real position (a left-to-right RNN's summary of everything it read);
* ``state``: the encoder's own summary, ``enc.state`` (a bidirectional RNN's final states, a reservoir's
  readout), which is what the ``rnn`` decoder starts from.

zoo's outputs are text written by a decoder, so the head is a decoder whose output is the label and then
the end of sentence. At position 0 (after ``<s>``) the logits are the head's label scores; at every later
position they are a learned vector ``end`` that starts with ``</s>`` as its largest entry and that training
makes say ``</s>`` ever more surely (its target is always ``</s>``). So greedy, beam search and sampling all
write ``label </s>``; the head never reads the tokens it is fed, and teacher forcing and step-by-step
decoding give the same logits by construction. It ignores the scorers and positional encodings a decoder is
offered (there is nothing to attend from), so it works over the memory of any encoder: recurrent,
Transformer, linear-time or a fixed reservoir.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from zoo.api import (
    EOS,
    Choice,
    ConfigError,
    Decoder,
    DecoderOutput,
    EncoderOutput,
    at_least,
    in_unit_interval,
    register,
)


class Pool(Choice):
    """How the memory becomes one vector (module docstring)."""

    mean = "mean"
    max = "max"
    last = "last"
    state = "state"


def pool(enc: EncoderOutput, how: Pool) -> torch.Tensor:
    """The encoder output pooled one way: (B, D) (``state``: (B, state_dim)); padded positions are never read."""
    if how == Pool.state:
        return enc.state
    real = enc.mask[..., None]  # (B, S, 1)
    if how == Pool.mean:
        return enc.memory.masked_fill(~real, 0).sum(1) / real.sum(1).clamp(min=1)
    if how == Pool.max:
        return enc.memory.masked_fill(~real, torch.finfo(enc.memory.dtype).min).amax(1)
    positions = torch.arange(enc.mask.size(1), device=enc.mask.device)
    last = (positions * enc.mask).argmax(1)  # (B,): the highest real position
    return enc.memory[torch.arange(enc.memory.size(0), device=last.device), last]


@register("decoder", "classifier")
class ClassifierDecoder(Decoder):
    """Pooling classification head (masked mean, max, last real state or summary -> MLP); writes one label.

    Built as ``ClassifierDecoder(cfg, vocab_size=V, memory_dim=D, state_dim=Ds, scorer=cfg, posenc=cfg)`` (the
    scorer and posenc are not used). ``forward(y_in (B, T), enc) -> DecoderOutput(logits (B, T, V))``: row 0
    the label scores ``MLP(LayerNorm([pool_1; ...; pool_k]))``, rows 1.. the learned ``end`` logits. The cache
    is ``{"label": (B, V)}``, computed once per source. The pooled vector is layer-normalised so that pools of
    different scales (a mean and a max, a reservoir's readout) mix.
    """

    uses_scorer = False  # the run's cross-attention scorer is not used
    writes_one_token = True  # a label: task=classification's outputs, not a translation's

    @dataclass
    class Config:
        pooling: list[str] = field(default_factory=lambda: ["mean"])  # one or more of mean, max, last, state
        hidden_size: int = 256  # width of the MLP's hidden layers
        layers: int = 1  # hidden layers of the MLP (Dense-ReLU each); 0: a linear map to the label scores
        dropout: float = 0.1  # on the pooled vector and after every hidden layer

        def __post_init__(self) -> None:
            chosen = [Pool.parse(how, "pooling") for how in self.pooling]
            if not chosen or len(set(chosen)) != len(chosen):
                raise ConfigError(
                    f"pooling={list(self.pooling)} must name one or more different pools of: "
                    f"{', '.join(p.value for p in Pool)} (e.g. decoder.pooling=[mean,max])"
                )
            at_least(self, "hidden_size", 1)
            at_least(self, "layers", 0)
            in_unit_interval(self, "dropout")

    def __init__(
        self, cfg: Config, vocab_size: int, memory_dim: int, state_dim: int, scorer: Any = None, posenc: Any = None
    ) -> None:
        super().__init__()
        self.pools = [Pool(how) for how in cfg.pooling]
        width = sum(state_dim if how == Pool.state else memory_dim for how in self.pools)
        layers: list[nn.Module] = [nn.LayerNorm(width), nn.Dropout(cfg.dropout)]
        for _ in range(cfg.layers):
            layers += [nn.Linear(width, cfg.hidden_size), nn.ReLU(), nn.Dropout(cfg.dropout)]
            width = cfg.hidden_size
        layers.append(nn.Linear(width, vocab_size))
        self.head = nn.Sequential(*layers)
        end = torch.zeros(vocab_size)
        end[EOS] = 1.0
        self.end = nn.Parameter(end)  # (V,): the logits after the label

    def label_logits(self, enc: EncoderOutput) -> torch.Tensor:
        """(B, V) label scores of each source."""
        return self.head(torch.cat([pool(enc, how) for how in self.pools], dim=-1))

    def forward(self, y_in: torch.Tensor, enc: EncoderOutput) -> DecoderOutput:
        label = self.label_logits(enc)  # (B, V)
        after = self.end.to(label.dtype).expand(y_in.size(0), y_in.size(1) - 1, -1)  # (B, T - 1, V)
        return DecoderOutput(logits=torch.cat([label[:, None], after], dim=1))

    def init_cache(self, enc: EncoderOutput) -> dict:
        return {"label": self.label_logits(enc)}

    def step(self, y_t: torch.Tensor, enc: EncoderOutput, cache: dict, t: int):
        """y_t (B,) -> (logits (B, V), the cache unchanged, None: no attention)."""
        label = cache["label"]
        logits = label if t == 0 else self.end.to(label.dtype).expand(y_t.size(0), -1)
        return logits, cache, None
