"""Reservoir encoders: the echo state network (``esn``) and extreme learning machine (``elm``).

Both run the source vectors through fixed random reservoirs (:class:`zoo.reservoir.Reservoir`)
and train only a linear readout, by backpropagation together with the rest of the model:

* ``esn``: leaky-integrator recurrent reservoirs (Jaeger 2001; Lukoševičius 2012),
  optionally bidirectional and stacked (a deep ESN, Gallicchio, Micheli & Pedrelli 2017).
* ``elm``: the same with no recurrent matrix (W = 0) and leak 1, so the state at step t
  is a random nonlinear feature of u_t alone (Huang, Zhu & Siew 2006).

Reservoir weights live at ``encoder.reservoirs[k].W_in`` (N, D_k), ``.W`` (N, N) (None for
``elm``) and ``.b`` (N,), where ``k = layer * directions + direction`` (direction 0 reads
left-to-right, 1 right-to-left). They are persistent buffers (in ``state_dict``, so in
every checkpoint, but not in ``parameters()``) unless ``trainable_reservoir=true`` makes
them Parameters. Reservoir k is generated from ``seed + k``, so the same config always
rebuilds the same reservoirs.

Gradients: a frozen reservoir runs without autograd, so its states are a fixed function
of the source vectors and nothing flows back through it. The readout sees
``[u_t; x_t]``, the input vector next to the states, so the frontend embedding still
learns, through the readout's input columns.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from zoo.api import (
    FROZEN_BYTES,
    TRAINED_BYTES,
    Choice,
    Encoder,
    EncoderOutput,
    at_least,
    fraction,
    in_unit_interval,
    one_of,
    positive,
    register,
    within_memory,
)
from zoo.api.layers import ACTIVATIONS, Reservoir, reverse_padded

#: The reservoir's nonlinearity f: one member per function :class:`zoo.reservoir.Reservoir` knows.
ReservoirActivation = Choice("ReservoirActivation", [(name, name) for name in ACTIVATIONS], module=__name__)


def check_reservoir_fields(cfg: EchoStateEncoder.Config | ExtremeLearningMachineEncoder.Config) -> None:
    """The range checks the ``esn`` and ``elm`` configs share."""
    for field in ("units", "layers", "readout_dim"):
        at_least(cfg, field, 1)
    fraction(cfg, "leak_rate", "1 means no leak")
    at_least(cfg, "input_scaling", 0)
    fraction(cfg, "input_connectivity")
    at_least(cfg, "bias_scaling", 0)
    one_of(cfg, "activation", ReservoirActivation)
    in_unit_interval(cfg, "dropout")


def check_reservoir_memory(
    cfg: EchoStateEncoder.Config | ExtremeLearningMachineEncoder.Config, directions: int, recurrent: bool
) -> None:
    """Refuse reservoirs that could never be allocated: each recurrent one holds a dense N x N matrix W
    (stored dense whatever its connectivity, and its spectral radius is computed on it), and the two
    readouts are trained on the N states of every layer and direction."""
    reservoirs = cfg.layers * directions
    per_weight = TRAINED_BYTES if cfg.trainable_reservoir else FROZEN_BYTES
    recurrent_bytes = reservoirs * cfg.units**2 * per_weight if recurrent else 0
    readout_bytes = 2 * reservoirs * cfg.units * cfg.readout_dim * TRAINED_BYTES
    within_memory(
        cfg, ("units", "layers", "readout_dim"), recurrent_bytes + readout_bytes, "the reservoirs and readouts"
    )


class ReservoirEncoder(Encoder):
    """Shared code of ``esn`` and ``elm``: reservoirs, then a trained linear readout.

    ``forward(x (B, S, input_dim), mask (B, S)) -> EncoderOutput`` with

    - ``memory`` (B, S, readout_dim) = ``readout([u_t; x_t])``, x_t the states of every
      layer and direction at step t; zero at padded positions;
    - ``state`` (B, readout_dim) = ``state_readout`` of the final states: each forward
      reservoir's state after the last real step and each backward reservoir's state after
      the first real step (i.e. after reading the whole sequence right-to-left).

    Padded steps never update a reservoir; a backward reservoir reads only the real part
    of each sequence reversed (:func:`zoo.reservoir.reverse_padded`), so appending
    padding changes neither memory nor state.
    """

    def __init__(
        self,
        cfg: EchoStateEncoder.Config | ExtremeLearningMachineEncoder.Config,
        input_dim: int,
        *,
        spectral_radius: float,
        connectivity: float,
        bidirectional: bool,
    ) -> None:
        super().__init__()
        self.directions = 2 if bidirectional else 1
        self.layers = cfg.layers
        self.reservoirs = nn.ModuleList()
        layer_input = input_dim
        for layer in range(cfg.layers):
            for direction in range(self.directions):
                k = layer * self.directions + direction
                self.reservoirs.append(
                    Reservoir(
                        layer_input,
                        cfg.units,
                        leak_rate=cfg.leak_rate,
                        spectral_radius=spectral_radius,
                        input_scaling=cfg.input_scaling,
                        connectivity=connectivity,
                        input_connectivity=cfg.input_connectivity,
                        bias_scaling=cfg.bias_scaling,
                        activation=cfg.activation,
                        seed=cfg.seed + k,
                        trainable=cfg.trainable_reservoir,
                    )
                )
            layer_input = cfg.units * self.directions  # layer l+1 reads layer l's states, directions side by side
        state_size = cfg.units * self.directions * cfg.layers
        self.readout = nn.Linear(input_dim + state_size, cfg.readout_dim)
        self.state_readout = nn.Linear(state_size, cfg.readout_dim)
        self.dropout = nn.Dropout(cfg.dropout)
        self.output_dim = self.state_dim = cfg.readout_dim

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> EncoderOutput:
        mask = mask.bool()
        features, finals = [x], []
        layer_input = x
        for layer in range(self.layers):
            outputs = []
            for direction in range(self.directions):
                reservoir = self.reservoirs[layer * self.directions + direction]
                backward = direction == 1
                states = reservoir(reverse_padded(layer_input, mask) if backward else layer_input, mask)
                finals.append(states[:, -1])  # padded steps do not update: the state after the last real step
                outputs.append(reverse_padded(states, mask) if backward else states)  # in source order
            layer_input = torch.cat(outputs, dim=-1)
            features.append(layer_input)
        keep = mask.unsqueeze(-1).to(x.dtype)
        memory = self.readout(torch.cat(features, dim=-1)) * keep
        state = self.state_readout(torch.cat(finals, dim=-1))
        return EncoderOutput(memory=self.dropout(memory), mask=mask, state=self.dropout(state))


@register("encoder", "esn")
class EchoStateEncoder(ReservoirEncoder):
    """Echo state network: fixed random leaky reservoirs + a trained linear readout (Jaeger 2001)."""

    @dataclass
    class Config:
        units: int = 512  # reservoir size N per layer and direction
        layers: int = 1  # deep ESN: layer l+1 is driven by layer l's states
        bidirectional: bool = True  # add a reservoir (seed + 1) reading each sequence right-to-left
        leak_rate: float = 0.5  # a in x_t = (1 - a) x_{t-1} + a f(...); in (0, 1]
        spectral_radius: float = 0.9  # largest |eigenvalue| of W; below ~1 for the echo state property
        # std of each unit's input drive for unit-variance inputs (W_in is fan-in normalised)
        input_scaling: float = 0.3
        connectivity: float = 0.1  # density of W
        input_connectivity: float = 1.0  # density of W_in
        bias_scaling: float = 0.2  # b uniform in [-bias_scaling, bias_scaling]
        # f in the state update; identity: a linear reservoir
        activation: ReservoirActivation = ReservoirActivation.tanh
        seed: int = 0  # reservoir k = layer * directions + direction is drawn from seed + k
        trainable_reservoir: bool = False  # make W_in, W, b Parameters (backprop through time) instead of buffers
        readout_dim: int = 256  # readout width = output_dim = state_dim
        dropout: float = 0.1  # on memory and state

        def __post_init__(self) -> None:
            check_reservoir_fields(self)
            positive(self, "spectral_radius", "encoder=elm has no recurrence at all")
            fraction(self, "connectivity")
            check_reservoir_memory(self, 2 if self.bidirectional else 1, recurrent=True)

    def __init__(self, cfg: Config, input_dim: int) -> None:
        super().__init__(
            cfg,
            input_dim,
            spectral_radius=cfg.spectral_radius,
            connectivity=cfg.connectivity,
            bidirectional=cfg.bidirectional,
        )


@register("encoder", "elm")
class ExtremeLearningMachineEncoder(ReservoirEncoder):
    """Extreme learning machine: a fixed random nonlinear layer per step, no recurrence (Huang et al. 2006)."""

    @dataclass
    class Config:
        units: int = 512  # random hidden units N per layer
        layers: int = 1  # stacked random layers: layer l+1 is driven by layer l's features
        leak_rate: float = 1.0  # 1: x_t depends on u_t only; < 1 smooths features over time (still no W)
        # std of each unit's input drive for unit-variance inputs (W_in is fan-in normalised)
        input_scaling: float = 1.0
        input_connectivity: float = 1.0  # density of W_in
        bias_scaling: float = 0.2  # b uniform in [-bias_scaling, bias_scaling]
        # f in the state update; identity: a linear reservoir
        activation: ReservoirActivation = ReservoirActivation.tanh
        seed: int = 0  # layer l is drawn from seed + l
        trainable_reservoir: bool = False  # make W_in, b Parameters instead of buffers
        readout_dim: int = 256  # readout width = output_dim = state_dim
        dropout: float = 0.1  # on memory and state

        def __post_init__(self) -> None:
            check_reservoir_fields(self)
            check_reservoir_memory(self, 1, recurrent=False)

    def __init__(self, cfg: Config, input_dim: int) -> None:
        super().__init__(cfg, input_dim, spectral_radius=0.0, connectivity=1.0, bidirectional=False)
