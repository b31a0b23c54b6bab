"""The ``rotary`` positional encoding, RoPE: rotate queries and keys by their position (Su et al., 2021)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from zoo.api import PosEnc, above, register


@register("posenc", "rotary")
class RotaryPositionalEncoding(PosEnc):
    """RoPE (Su et al., 2021): each query/key channel pair is rotated by angle p * theta_i; q . k sees offsets only.

    Built with the model width ``dim`` and ``heads``; it acts per head on
    ``head_dim = dim / heads`` channels, with theta_i = base^(-2i/head_dim). Channel i
    is paired with channel i + head_dim/2 (the "rotate half" layout); this is a
    fixed permutation of the paper's adjacent pairs, which the learned projections
    absorb. Rotations keep norms, and R(p)^T R(p') = R(p' - p) makes
    <R(p) q, R(p') k> a function of p' - p.
    ``rotate(q (B, H, T, d), k (B, H, S, d), q_offset, k_offset) -> the same shapes``.
    """

    relative = True

    @dataclass
    class Config:
        base: float = 10000.0  # theta_i = base^(-2i/head_dim)

        def __post_init__(self) -> None:
            above(self, "base", 1, "the rotation angles must slow down from channel to channel")

    def __init__(self, cfg: Config, dim: int, heads: int = 1) -> None:
        super().__init__()
        if dim % heads != 0 or (dim // heads) % 2 != 0:
            raise ValueError(
                f"rotary positional encoding needs an even head size, got dim={dim} / heads={heads}; "
                "choose d_model and heads with d_model / heads even"
            )
        self.head_dim = dim // heads
        exponents = torch.arange(0, self.head_dim, 2, dtype=torch.float32) / self.head_dim
        self.register_buffer("inv_freq", cfg.base**-exponents, persistent=False)

    def rotate(self, q: torch.Tensor, k: torch.Tensor, q_offset: int = 0, k_offset: int = 0):
        if q.shape[-1] != self.head_dim or k.shape[-1] != self.head_dim:
            raise ValueError(
                f"rotary positional encoding was built for head size {self.head_dim} but got queries of "
                f"{q.shape[-1]} and keys of {k.shape[-1]}; build it with the attention's dim and heads"
            )
        return self._rotate(q, q_offset), self._rotate(k, k_offset)

    def _rotate(self, x: torch.Tensor, offset: int) -> torch.Tensor:
        """x (..., T, d) at positions offset .. offset+T-1 -> rotated x."""
        positions = torch.arange(offset, offset + x.shape[-2], device=x.device, dtype=torch.float32)
        angles = positions[:, None] * self.inv_freq[None, :]  # (T, d/2)
        cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
        x1, x2 = x.chunk(2, dim=-1)
        return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)
