"""The ``transformer`` decoder: causal self-attention, cross-attention and feed-forward blocks (Vaswani et al.,
2017)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from zoo.api import (
    Decoder,
    DecoderOutput,
    EncoderOutput,
    build,
    register,
)
from zoo.api.layers import FeedForward, Residual, TargetEmbedding, TransformerLayout, final_norm, layout_attention


class DecoderLayer(nn.Module):
    """Causal self-attention, cross-attention over the encoder memory, feed-forward; each inside a :class:`Residual`."""

    def __init__(self, cfg: TransformerLayout, self_scorer: Any, cross_scorer: Any, memory_dim: int) -> None:
        super().__init__()
        self.self_attn = layout_attention(cfg, self_scorer)
        self.self_residual = Residual(cfg)
        self.cross_attn = layout_attention(cfg, cross_scorer, kdim=memory_dim)
        self.cross_residual = Residual(cfg)
        self.ff = FeedForward(cfg)
        self.ff_residual = Residual(cfg)

    def forward(self, x, enc: EncoderOutput, *, posenc=None, q_offset=0, cache=None, need_self=False, need_cross=False):
        """x (B, T, D) at positions q_offset.. -> (x, self weights (B, H, T, T') or None,
        cross weights (B, H, T, S) or None).

        ``cache`` is None (teacher forcing) or ``{"self": {...}, "cross": {...}}``, updated in place.
        """
        self_out, self_w = self.self_attn(
            self.self_residual.open(x),
            causal=True,
            posenc=posenc,
            q_offset=q_offset,
            cache=None if cache is None else cache["self"],
            need_weights=need_self,
        )
        x = self.self_residual.close(x, self_out)
        cross_out, cross_w = self.cross_attn(
            self.cross_residual.open(x),
            enc.memory,
            key_mask=enc.mask,
            cache=None if cache is None else cache["cross"],
            need_weights=need_cross,
        )
        x = self.cross_residual.close(x, cross_out)
        x = self.ff_residual.close(x, self.ff(self.ff_residual.open(x)))
        return x, self_w, cross_w


@register("decoder", "transformer")
class TransformerDecoder(Decoder):
    """Transformer decoder: causal self- and cross-attention per layer, any scorer and posenc (Vaswani et al., 2017).

    Built as ``cls(cfg, vocab_size=V, memory_dim=D, state_dim=Ds, scorer=<cross-attention scorer cfg>,
    posenc=<posenc cfg>, self_scorer=<self-attention scorer cfg>)`` (``self_scorer`` null:
    ``scorer`` for both). A scorer is built separately for every attention (self and
    cross, in every layer). ``kv_heads`` and ``kv_latent_dim`` shape the keys and values
    of both, and so what ``init_cache``/``step`` cache per layer (docs/transformer.md).
    Target embeddings are multiplied by sqrt(d_model) and initialised
    N(0, 1/d_model), so they enter the first block with unit variance (Vaswani et
    al., 2017); with ``tie_embeddings`` the output projection reuses the embedding
    matrix (Press & Wolf, 2017). An absolute posenc is added to the embeddings
    (at offset t while stepping); a relative one acts inside every self-attention;
    cross-attention has no positional term. ``d_model`` defaults to ``memory_dim``,
    so the encoder's width sizes the decoder too; set it to differ (cross-attention
    reads any memory width, e.g. an RNN encoder's); ``state_dim`` is unused, the decoder reads the
    encoder only through attention. With the ``none`` scorer every attention is a
    plain average over the visible positions.

    ``forward(y_in (B, T), enc, return_attention=None) -> DecoderOutput(logits (B, T, V), attention)``
    where ``attention = {"self": [(B, H, T, T)] per layer, "cross": [(B, H, T, S)] per layer}``
    when asked for (default: the ``return_attention`` attribute, False), else None.
    ``step(y_t (B,), enc, cache, t) -> (logits (B, V), cache, cross weights (B, S))``,
    the cross weights being the head average of the last layer.
    """

    @dataclass
    class Config(TransformerLayout):
        d_model: int | None = None  # width of every block; null: the encoder's output width
        tie_embeddings: bool = True  # the output projection shares the target embedding matrix

    uses_self_scorer = True  # its self-attention may score with another scorer than its cross-attention
    # kv_layout=mha|gqa|mqa|mla: the key/value layout in one word. Only the decoder's is set: it alone caches keys
    # and values while generating, as in Ainslie et al. (2023), who leave the encoder multi-head
    # (encoder.kv_heads=... sets the encoder's). Compared by experiment=compare_kv.
    presets = {
        "kv_layout": {
            "mha": {"kv_heads": None, "kv_latent_dim": None},  # Vaswani et al. (2017): a key/value head per query head
            "gqa": {"kv_heads": 2, "kv_latent_dim": None},  # Ainslie et al. (2023): 2 key/value heads, each shared
            "mqa": {"kv_heads": 1, "kv_latent_dim": None},  # Shazeer (2019): one key/value head for every query head
            # DeepSeek-V2 (2024): a 32-wide latent is cached and decompressed into every head's keys and values,
            # 32 numbers per token and layer against 256 for multi-head attention's at d_model=128
            "mla": {"kv_heads": None, "kv_latent_dim": 32},
        }
    }

    def __init__(
        self,
        cfg: Config,
        vocab_size: int,
        memory_dim: int,
        state_dim: int = 0,
        scorer: Any = "scaled_dot",
        posenc: Any = "sinusoidal",
        self_scorer: Any = None,
    ) -> None:
        super().__init__()
        posenc = {"name": posenc} if isinstance(posenc, str) else posenc
        cfg = dataclasses.replace(cfg, d_model=cfg.d_model or memory_dim)  # checks heads divide the width
        d = cfg.d_model
        self.target = TargetEmbedding(vocab_size, d, d, tie=cfg.tie_embeddings, scale=True)
        self.posenc = build("posenc", posenc, dim=d, heads=cfg.heads)
        self.dropout = nn.Dropout(cfg.dropout)
        self.layers = nn.ModuleList(
            DecoderLayer(cfg, self_scorer or scorer, scorer, memory_dim) for _ in range(cfg.layers)
        )
        self.final_norm = final_norm(cfg)
        self.attends = self.layers[0].cross_attn.scorer.attends
        self.return_attention = False

    def _embed(self, y: torch.Tensor, offset: int) -> torch.Tensor:
        """Token ids (B, T) at positions offset.. -> block input (B, T, d_model)."""
        x = self.target.embed(y)
        if not self.posenc.relative:
            x = self.posenc(x, offset)
        return self.dropout(x)

    def forward(self, y_in: torch.Tensor, enc: EncoderOutput, return_attention: bool | None = None) -> DecoderOutput:
        need = self.return_attention if return_attention is None else return_attention
        relative = self.posenc if self.posenc.relative else None
        x = self._embed(y_in, 0)
        maps: dict[str, list] = {"self": [], "cross": []}
        for layer in self.layers:
            x, self_w, cross_w = layer(x, enc, posenc=relative, need_self=need, need_cross=need)
            maps["self"].append(self_w)
            maps["cross"].append(cross_w)
        logits = self.target.logits(self.final_norm(x))
        return DecoderOutput(logits, maps if need else None)

    def init_cache(self, enc: EncoderOutput) -> dict:
        """Per layer: an empty self-attention cache and the projected memory, made once per sentence: keys/values
        (B, kv_heads, S, d), the scorer's prepared keys (B, H, S, ...) and values, or the latent
        (B, S, kv_latent_dim)."""
        return {"layers": [{"self": {}, "cross": layer.cross_attn.project_memory(enc.memory)} for layer in self.layers]}

    def step(self, y_t: torch.Tensor, enc: EncoderOutput, cache: dict, t: int):
        relative = self.posenc if self.posenc.relative else None
        x = self._embed(y_t[:, None], t)
        new_layers, last = [], len(self.layers) - 1
        cross_w = None
        for i, (layer, old) in enumerate(zip(self.layers, cache["layers"])):
            layer_cache = {"self": dict(old["self"]), "cross": dict(old["cross"])}  # the caller's cache stays intact
            x, _, cross_w = layer(
                x, enc, posenc=relative, q_offset=t, cache=layer_cache, need_cross=self.attends and i == last
            )
            new_layers.append(layer_cache)
        logits = self.target.logits(self.final_norm(x))[:, 0]
        attn = cross_w[:, :, 0].mean(dim=1) if cross_w is not None else None
        return logits, {"layers": new_layers}, attn
