"""One statement of each model component's output contract, for the full checks and the probe alike."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from zoo.contracts import Attention, Encoder, Frontend, PosEnc


def output_problem(module: nn.Module, inputs: tuple, output: Any) -> str:
    """What is wrong with ``output`` for a component of this kind called with ``inputs``, or ""."""
    if isinstance(module, Attention) and len(inputs) == 2:
        q, k = inputs
        want = (*q.shape[:3], k.shape[2])
        if tuple(output.shape) != want:
            return f"scores {tuple(output.shape)}, expected (B, H, T, S) = {want}"
    elif isinstance(module, Frontend):
        x, mask = output
        want = (x.shape[0], x.shape[1], module.output_dim)
        if tuple(x.shape) != want or mask.shape != x.shape[:2] or mask.dtype != torch.bool:
            return f"x {tuple(x.shape)} and mask {tuple(mask.shape)} {mask.dtype}, expected (B, S, output_dim) = {want}"
    elif isinstance(module, PosEnc) and inputs:
        if output.shape != inputs[0].shape:
            return f"{tuple(output.shape)}, expected the input's shape {tuple(inputs[0].shape)}"
    elif isinstance(module, Encoder):
        x, mask = inputs[0], inputs[1]
        memory, state = (x.shape[0], x.shape[1], module.output_dim), (x.shape[0], module.state_dim)
        if tuple(output.memory.shape) != memory or tuple(output.state.shape) != state:
            return (
                f"memory {tuple(output.memory.shape)} and state {tuple(output.state.shape)}, "
                f"expected (B, S, output_dim) = {memory} and (B, state_dim) = {state}"
            )
        if not torch.equal(output.mask, mask):
            return "its output mask differs from its input mask"
    return ""
