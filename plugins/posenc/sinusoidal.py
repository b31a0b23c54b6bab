"""The ``sinusoidal`` positional encoding: fixed sine and cosine waves (Vaswani et al., 2017)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from zoo.api import PosEnc, above, register


@register("posenc", "sinusoidal")
class SinusoidalPositionalEncoding(PosEnc):
    """Fixed sinusoids added: PE(p, 2i) = sin(p / base^(2i/D)), PE(p, 2i+1) = cos(...) (Vaswani et al., 2017).

    Nothing is learned and any length works. The wavelengths grow geometrically
    from 2*pi to base*2*pi, so PE(p + k) is a fixed linear function (a rotation per
    frequency) of PE(p), which lets attention pick up relative offsets.
    ``forward(x (B, T, D), offset) -> x + PE(offset .. offset+T-1)``.
    """

    @dataclass
    class Config:
        base: float = 10000.0  # the longest wavelength is base * 2 * pi positions

        def __post_init__(self) -> None:
            above(self, "base", 1)

    def __init__(self, cfg: Config, dim: int, heads: int = 1) -> None:
        super().__init__()
        self.dim = dim
        exponents = torch.arange(0, dim, 2, dtype=torch.float32) / dim  # 2i / D for i = 0 .. ceil(D/2)-1
        self.register_buffer("inv_freq", cfg.base**-exponents, persistent=False)

    def table(self, length: int, offset: int = 0) -> torch.Tensor:
        """PE for positions ``offset .. offset+length-1``: (length, D), sin and cos interleaved."""
        positions = torch.arange(offset, offset + length, device=self.inv_freq.device, dtype=torch.float32)
        angles = positions[:, None] * self.inv_freq[None, :]  # (T, ceil(D/2))
        return torch.stack([angles.sin(), angles.cos()], dim=-1).flatten(-2)[:, : self.dim]

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        return x + self.table(x.shape[1], offset).to(x.dtype)
