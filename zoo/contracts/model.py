"""Model contracts: frontends, positional encodings, scorers, encoders and decoders.

Everything is batch-first. Masks are boolean and True where a position is real
(not padding).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import torch
from torch import nn

from zoo.contracts.data import SourceDescription


class Frontend(nn.Module):
    """Source batch -> vectors. Built as ``cls(cfg, source=SourceDescription)``.

    ``Config`` has a ``dim: Optional[int]`` field, the output width; model assembly
    fills in a null one with the width the encoder works at, so one setting sizes
    the model. ``forward(source batch) -> (x (B, S, output_dim), mask (B, S) bool)``;
    for text the batch is token ids (B, S); for images it is pixels (B, 3, H, W),
    float in [0, 1] (normalising them is the frontend's job: a pretrained backbone
    brings its own mean and std); for precomputed features it is (B, S, F) floats.
    ``source_kind`` names the kind of :class:`~zoo.contracts.SourceDescription` it
    reads. An image frontend flattens its feature grid row-major into the sequence
    and sets ``grid`` to the (rows, columns) of the latest batch, so attention over
    the positions can be drawn on the image.

    An image frontend with a backbone (``feature_dim`` > 0) also offers
    :meth:`extract`: the backbone's grid before any projection, which
    ``zoo features`` saves so later runs can train on it with ``frontend=features``.
    ``image_size`` is the side in pixels such a frontend wants (a pretrained
    network's training size); None lets the task choose.
    """

    source_kind: str = "tokens"
    image_size: int | None = None
    feature_dim: int = 0

    output_dim: int
    grid: tuple[int, int] | None = None

    def extract(self, images: torch.Tensor) -> torch.Tensor:
        """Pixels (B, 3, H, W) in [0, 1] -> backbone features (B, rows * columns, feature_dim)."""
        raise NotImplementedError(f"{type(self).__name__} has no backbone to extract features with")

    @classmethod
    def example_source(cls, batch: int) -> tuple[SourceDescription, torch.Tensor, torch.Tensor | None] | None:
        """A small source batch of this frontend's kind, for ``zoo check`` and the probe a run makes of its model
        before data loads: (description, batch, true mask or None when every position is real). None: zoo's own
        example of a ``tokens``, ``image`` or ``features`` source; a frontend of a new source kind gives one."""
        return None


class PosEnc(nn.Module):
    """Built as ``cls(cfg, dim=D, heads=H)``.

    Absolute kinds add to vectors in ``forward(x (B, T, D), offset) -> (B, T, D)``;
    relative kinds (``relative = True``) return ``x`` unchanged and act inside
    self-attention through :meth:`rotate` and :meth:`bias`; cross-attention gets
    no positional hook. ``offset`` is the position of ``x[:, 0]``, which makes
    step-by-step decoding exact. One instance is shared by all layers of an
    encoder or decoder (``heads`` is their head count, ``dim`` their model width).
    """

    relative: bool = False

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        return x

    def rotate(self, q: torch.Tensor, k: torch.Tensor, q_offset: int = 0, k_offset: int = 0):
        """Queries (B, H, T, d) and keys (B, H, S, d) -> the same, position-aware."""
        return q, k

    def bias(self, t: int, s: int, q_offset: int = 0, causal: bool = False) -> torch.Tensor | None:
        """An additive (H, T, S) score bias for queries at ``q_offset..q_offset+t-1`` and keys
        at ``0..s-1``, or None. ``causal`` says keys lie only at or before the query
        (a decoder), so a kind may spend all its resolution on the past."""
        return None


class Attention(nn.Module):
    """Raw attention scores. Built as ``cls(cfg, query_dim=dq, key_dim=dk, heads=H)``.

    ``forward(q (B, H, T, dq), k (B, H, S, dk)) -> scores (B, H, T, S)``.
    Masking, softmax, dropout and the weighted sum live in
    :func:`zoo.nn.attention.attend`, never in a scorer.
    """

    def prepare_keys(self, k: torch.Tensor) -> torch.Tensor:
        """Key-side work that does not depend on the query (e.g. W_k k), done once per memory.

        Keys (B, H, S, dk) -> prepared keys (B, H, S, ...), batch-first because decoders
        cache them and beam search reorders their rows. The RNN decoder and multi-head
        cross-attention call it once per sentence (teacher forcing and generation alike)
        and then :meth:`score_prepared` at every step; ``score_prepared(q, prepare_keys(k))``
        must equal ``forward(q, k)``. The default (no key-side work) returns ``k`` itself,
        and multi-head attention then caches the plain keys.
        """
        return k

    def score_prepared(self, q: torch.Tensor, prepared: torch.Tensor) -> torch.Tensor:
        """Queries (B, H, T, dq) against keys from :meth:`prepare_keys` -> scores (B, H, T, S)."""
        return self(q, prepared)

    #: False for the ``none`` scorer: the decoder then sees only the encoder summary.
    attends: bool = True
    #: True when the formula compares q and k directly (dot, cosine): an RNN decoder
    #: then projects its memory to the query size first.
    needs_equal_dims: bool = False
    #: True when the score is exactly q . k / sqrt(d) with no parameters: multi-head attention may then
    #: compute it with torch's fused scaled_dot_product_attention instead of calling the scorer.
    fused_sdpa: bool = False

    def check_dims(self, query_dim: int, key_dim: int) -> None:
        """Raise a clear error when a scorer with ``needs_equal_dims`` is given unequal sizes."""
        if self.needs_equal_dims and query_dim != key_dim:
            name = self.registry_entry.name if hasattr(self, "registry_entry") else type(self).__name__
            raise ValueError(
                f"{name} attention needs query_dim == key_dim, got query_dim={query_dim} and key_dim={key_dim}; "
                "make the sizes equal or use attention=general or attention=additive"
            )


@dataclass
class EncoderOutput:
    """``memory`` (B, S, D), ``mask`` (B, S) True where real, ``state`` (B, state_dim) summary."""

    memory: torch.Tensor
    mask: torch.Tensor
    state: torch.Tensor

    def index_select(self, index: torch.Tensor) -> EncoderOutput:
        """Pick/repeat batch rows (beam search expands each sentence to k beams)."""
        return replace(
            self,
            memory=self.memory.index_select(0, index),
            mask=self.mask.index_select(0, index),
            state=self.state.index_select(0, index),
        )


class Encoder(nn.Module):
    """Built as ``cls(cfg, input_dim=D_in)``; sets ``output_dim`` and ``state_dim``.

    An encoder with self-attention sets ``uses_scorer = True`` and is also given
    ``scorer=<attention cfg>`` (the run's self-attention scorer); one whose options may add attention layers
    says when in ``scores_with``. One that applies relative position
    encodings inside attention sets ``supports_relative_posenc = True`` and gets ``posenc=<cfg>``.

    ``forward(x (B, S, D_in), mask (B, S)) -> EncoderOutput``. Padded steps must
    not influence real ones.
    """

    output_dim: int
    state_dim: int
    uses_scorer: bool = False
    supports_relative_posenc: bool = False

    @classmethod
    def scores_with(cls, cfg: Any) -> bool:
        """Whether this encoder, configured by ``cfg`` (its config section), scores attention with the run's
        self-attention scorer: ``uses_scorer``, unless an option places attention layers (a state-space hybrid's)."""
        return cls.uses_scorer

    @staticmethod
    def natural_input_dim(cfg: Any) -> int | None:
        """The input width this encoder works at without a projection (a Transformer's ``d_model``),
        or None when any width suits it (an RNN). A frontend with ``dim: null`` takes it."""
        return None


@dataclass
class DecoderOutput:
    """``logits`` (B, T, V) and optionally ``attention`` {name: (B, H, T, S) or per-layer list}."""

    logits: torch.Tensor
    attention: dict[str, Any] | None = None


class Decoder(nn.Module):
    """Target-side model. Built as ``cls(cfg, vocab_size=V, memory_dim=D, state_dim=Ds, scorer=cfg, posenc=cfg)``
    where ``scorer`` (the run's cross-attention scorer: attention over the encoder memory)
    and ``posenc`` are configs the decoder builds (per layer/head as it likes) with
    :func:`zoo.registry.build`. A decoder with self-attention sets ``uses_self_scorer = True``
    and is also given ``self_scorer=cfg`` (the run's self-attention scorer); one that scores no attention with
    the run's scorer (a state-space or linear-attention decoder) sets ``uses_scorer = False``, and its checks run
    once instead of once per scorer; one whose options may add attention layers says when in ``scores_with``.

    Training: ``forward(y_in (B, T), enc) -> DecoderOutput`` (teacher forcing).
    Generation: ``init_cache(enc)`` then ``step(y_t (B,), enc, cache, t) -> (logits (B, V), cache, attn)``
    where ``attn`` is (B, S) cross-attention or None. The step logits must equal the
    teacher-forced logits at position ``t``.
    """

    uses_scorer: bool = True
    uses_self_scorer: bool = False
    #: True when every output it writes is one token and the end of sentence (a classification head): only a task
    #: whose outputs are one token (``Task.one_token_outputs``) can use it.
    writes_one_token: bool = False
    #: Config groups of presets ({group: {choice: {field: value}}}) that set some of this decoder's fields in one
    #: word, chosen as ``group=choice`` (the Transformer's ``kv_layout=gqa``); they ship with the plugin, so a
    #: component's shorthands need no file in zoo's own config folder. Any component may declare them.
    presets: dict[str, dict[str, dict[str, Any]]] = {}

    @classmethod
    def scores_with(cls, cfg: Any) -> bool:
        """Whether this decoder, configured by ``cfg`` (its config section), scores attention with the run's
        scorers: ``uses_scorer``, unless an option places attention layers (a state-space hybrid's)."""
        return cls.uses_scorer

    def init_cache(self, enc: EncoderOutput) -> dict:
        raise NotImplementedError

    def step(self, y_t: torch.Tensor, enc: EncoderOutput, cache: dict, t: int):
        raise NotImplementedError

    @staticmethod
    def reorder_cache(cache: Any, index: torch.Tensor) -> Any:
        """Select batch rows of every tensor in a nested cache: beam search calls this to follow
        the surviving hypotheses and to drop the rows of finished sentences (``index`` may be
        shorter than the batch)."""
        if isinstance(cache, torch.Tensor):
            return cache.index_select(0, index)
        if isinstance(cache, dict):
            return {k: Decoder.reorder_cache(v, index) for k, v in cache.items()}
        if isinstance(cache, (list, tuple)):
            return type(cache)(Decoder.reorder_cache(v, index) for v in cache)
        return cache
