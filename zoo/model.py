"""Assemble a sequence-to-sequence model from a composed config."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from zoo.config.schema import section
from zoo.contracts import DecoderOutput, EncoderOutput, SourceDescription
from zoo.errors import ZooError
from zoo.registry import MODEL_KINDS, build, get

#: Frontend width when neither the config nor the encoder asks for one.
DEFAULT_FRONTEND_DIM = 128


class AssemblyError(ZooError, ValueError):
    """Two components that cannot work together."""


class Seq2Seq(nn.Module):
    """frontend -> (absolute posenc) -> encoder -> decoder (-> logits).

    Built from the plugin sections of a config: ``frontend``, ``posenc``,
    ``encoder``, ``decoder`` and the scorers: ``self_attention`` (the encoder's and
    a decoder's self-attention) and ``cross_attention`` (a decoder's attention over
    the memory), each ``attention`` unless set, for
    sources the task describes (``source``) and a target vocabulary of
    ``tgt_vocab_size`` ids. One setting sizes the model: a frontend whose ``dim``
    is null takes the width the encoder works at (a Transformer's ``d_model``).
    """

    def __init__(self, cfg: Any, source: SourceDescription, tgt_vocab_size: int) -> None:
        super().__init__()
        self.names = {kind: cfg[kind]["name"] for kind in MODEL_KINDS}
        encoder_cls = get("encoder", cfg["encoder"]["name"]).cls
        frontend_cls = get("frontend", cfg["frontend"]["name"]).cls
        if frontend_cls.source_kind != source.kind:
            raise AssemblyError(
                f"frontend '{self.names['frontend']}' reads {frontend_cls.source_kind} sources but the task gives "
                f"{source}; choose a frontend for {source.kind} sources (zoo list frontend)"
            )
        frontend_dim = cfg["frontend"]["dim"] or encoder_cls.natural_input_dim(cfg["encoder"]) or DEFAULT_FRONTEND_DIM
        self.frontend = self._assemble("frontend", cfg, section={**cfg["frontend"], "dim": frontend_dim}, source=source)
        posenc_relative = get("posenc", cfg["posenc"]["name"]).cls.relative
        encoder_kwargs: dict[str, Any] = {"input_dim": self.frontend.output_dim}
        if encoder_cls.scores_with(cfg["encoder"]):
            encoder_kwargs["scorer"] = section(cfg, "self_attention")
        if posenc_relative:
            if not encoder_cls.supports_relative_posenc:
                raise AssemblyError(
                    f"posenc '{self.names['posenc']}' is relative (it acts inside attention) but encoder "
                    f"'{self.names['encoder']}' has no self-attention; use posenc=sinusoidal or posenc=learned"
                )
            encoder_kwargs["posenc"] = cfg["posenc"]
            self.posenc = None
        else:
            self.posenc = build("posenc", cfg["posenc"], dim=self.frontend.output_dim, heads=1)
        self.encoder = self._assemble("encoder", cfg, **encoder_kwargs)
        decoder_kwargs: dict[str, Any] = {}
        if get("decoder", cfg["decoder"]["name"]).cls.uses_self_scorer:
            decoder_kwargs["self_scorer"] = section(cfg, "self_attention")
        self.decoder = self._assemble(
            "decoder",
            cfg,
            vocab_size=tgt_vocab_size,
            memory_dim=self.encoder.output_dim,
            state_dim=self.encoder.state_dim,
            scorer=section(cfg, "cross_attention"),
            posenc=cfg["posenc"],
            **decoder_kwargs,
        )
        network = cfg.get("network") or cfg.get("model") or {}  # runs saved before zoo 0.2 call the section model
        if network.get("share_embeddings", False):
            self._share_embeddings(source.vocab_size, tgt_vocab_size)

    def _share_embeddings(self, src_vocab_size: int, tgt_vocab_size: int) -> None:
        """Make the source frontend and the decoder use one embedding matrix (joint vocabulary)."""
        source = getattr(self.frontend, "embedding", None)
        target = getattr(getattr(self.decoder, "target", None), "embedding", None)
        if source is None or target is None:
            raise AssemblyError(
                f"network.share_embeddings needs a token frontend and a decoder with a target embedding; "
                f"frontend '{self.names['frontend']}' or decoder '{self.names['decoder']}' has none"
            )
        if src_vocab_size != tgt_vocab_size or source.weight.shape != target.weight.shape:
            raise AssemblyError(
                f"network.share_embeddings: frontend '{self.names['frontend']}' embeds {tuple(source.weight.shape)} "
                "but "
                f"decoder '{self.names['decoder']}' embeds {tuple(target.weight.shape)}; set task.joint_vocab=true and "
                "make frontend.dim equal the decoder's embedding size"
            )
        source_scale = getattr(self.frontend, "scale", 1.0)
        target_scale = getattr(self.decoder.target, "scale", 1.0)
        if source_scale != target_scale:  # one matrix initialised for one scale: the other side starts 16x off
            raise AssemblyError(
                f"network.share_embeddings: frontend '{self.names['frontend']}' scales its embeddings by "
                f"{source_scale:g} but decoder '{self.names['decoder']}' by {target_scale:g}; set "
                f"frontend.scale={str(target_scale != 1.0).lower()} so one matrix serves both"
            )
        output = getattr(self.decoder.target, "output", None)
        if output is not None and output.weight is target.weight:  # keep a tied output projection tied
            output.weight = source.weight
        target.weight = source.weight

    def _assemble(self, kind: str, cfg: Any, section: Any = None, **kwargs: Any) -> nn.Module:
        """Build one component (from ``section``, default ``cfg[kind]``); a clash is reported with the others named."""
        try:
            return build(kind, cfg[kind] if section is None else section, **kwargs)
        except (ValueError, RuntimeError) as error:
            others = ", ".join(f"{k}={v}" for k, v in self.names.items() if k != kind)
            raise AssemblyError(f"cannot assemble {kind} '{self.names[kind]}' with {others}: {error}") from error

    def encode(self, source: torch.Tensor) -> EncoderOutput:
        """A source batch (token ids (B, S) for text) -> EncoderOutput."""
        x, mask = self.frontend(source)
        if self.posenc is not None:
            x = self.posenc(x)
        return self.encoder(x, mask)

    def forward(self, source: torch.Tensor, target_in: torch.Tensor) -> DecoderOutput:
        """Teacher forcing: source (B, S), target_in (B, T) starting with BOS -> logits (B, T, V)."""
        return self.decoder(target_in, self.encode(source))
