"""The ``tagger`` decoder: a head that names a tag at every source position from the encoder's state there.

Multi-query recall is scored as a language model is, at many positions of one sequence: the answer at position
``t`` is read from the encoder's memory at ``t`` alone (Zoology's head over a causal model's states; Arora et al.,
2023). zoo's outputs are text written by a decoder, so the head is a decoder whose output is one tag per source
position and then the end of sentence: the logits at position ``t`` are ``Linear(LayerNorm(memory_t))`` while
``t`` is a real source position, and a learned vector ``end`` (``</s>`` its largest entry at first) after them.
The head never reads the tokens it is fed, so teacher forcing and step-by-step decoding give the same logits by
construction, and it works over the memory of any encoder. What a position knows is what the encoder put there:
a left-to-right encoder (``encoder.bidirectional=false``) answers from the past alone, as Zoology's models do.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from zoo.api import EOS, Decoder, DecoderOutput, EncoderOutput, in_unit_interval, register


@register("decoder", "tagger")
class TaggerDecoder(Decoder):
    """Per-position head (LayerNorm -> Linear at every real source position); writes one tag a position.

    Built as ``TaggerDecoder(cfg, vocab_size=V, memory_dim=D, state_dim=Ds, scorer=cfg, posenc=cfg)`` (the
    state, scorer and posenc are not used). ``forward(y_in (B, T), enc) -> DecoderOutput(logits (B, T, V))``:
    row ``t`` the tag scores of source position ``t`` where it is real, the learned ``end`` logits elsewhere
    (padding, and rows past the source). The cache is ``{"tags": (B, S, V)}``, computed once per source.
    """

    uses_scorer = False  # the run's cross-attention scorer is not used

    @dataclass
    class Config:
        dropout: float = 0.0  # on the normalised states before the linear map

        def __post_init__(self) -> None:
            in_unit_interval(self, "dropout")

    def __init__(
        self, cfg: Config, vocab_size: int, memory_dim: int, state_dim: int, scorer: Any = None, posenc: Any = None
    ) -> None:
        super().__init__()
        self.head = nn.Sequential(nn.LayerNorm(memory_dim), nn.Dropout(cfg.dropout), nn.Linear(memory_dim, vocab_size))
        end = torch.zeros(vocab_size)
        end[EOS] = 1.0
        self.end = nn.Parameter(end)  # (V,): the logits after the last tag

    def tag_logits(self, enc: EncoderOutput) -> torch.Tensor:
        """(B, S, V): each real position's tag scores, ``end`` at padding.

        A real position never names ``</s>``: the head is trained only where a tag is asked, so at an unscored
        position it may prefer anything, and an end there would cut the output short and score every query
        after it wrong.
        """
        scores = self.head(enc.memory)
        is_end = torch.arange(scores.size(-1), device=scores.device) == EOS
        scores = scores.masked_fill(is_end, torch.finfo(scores.dtype).min)
        return torch.where(enc.mask[..., None], scores, self.end.to(scores.dtype))

    def _rows(self, tags: torch.Tensor, steps: int) -> torch.Tensor:
        """The first ``steps`` rows of the output from the tag scores (B, S, V): (B, steps, V)."""
        extra = steps - tags.size(1)
        if extra <= 0:
            return tags[:, :steps]
        return torch.cat([tags, self.end.to(tags.dtype).expand(tags.size(0), extra, -1)], dim=1)

    def forward(self, y_in: torch.Tensor, enc: EncoderOutput) -> DecoderOutput:
        return DecoderOutput(logits=self._rows(self.tag_logits(enc), y_in.size(1)))

    def init_cache(self, enc: EncoderOutput) -> dict:
        return {"tags": self.tag_logits(enc)}

    def step(self, y_t: torch.Tensor, enc: EncoderOutput, cache: dict, t: int):
        """y_t (B,) -> (logits (B, V), the cache unchanged, None: no attention)."""
        return self._rows(cache["tags"], t + 1)[:, t], cache, None
