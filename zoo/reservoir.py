"""Reservoir computing core: echo state network reservoirs, ridge readouts, Mackey-Glass.

Usable on its own, without any of the sequence-to-sequence machinery::

    from zoo.reservoir import Reservoir, RidgeReadout, mackey_glass, nrmse

    series = mackey_glass(3001, seed=0)                      # (T,) float64
    u, y = series[:-1, None].float(), series[1:, None].float()
    res = Reservoir(input_dim=1, units=300, spectral_radius=1.25, input_scaling=0.5, seed=0)
    states = res(u)                                          # (T, 300)
    readout = RidgeReadout().fit(states[:2000], y[:2000], ridge=1e-8, washout=100)
    print(nrmse(readout(states[2000:]), y[2000:]))           # about 1e-4

A reservoir is a fixed random recurrent network whose states x_t follow the
leaky-integrator update (Jaeger 2001; Lukoševičius 2012, "A practical guide to
applying echo state networks", eq. 2-3)::

    x_t = (1 - a) * x_{t-1} + a * f(W_in u_t + W x_{t-1} + b)

Only a linear readout y_t = W_out [1; x_t] is trained, in closed form by ridge
regression. With ``spectral_radius=0`` there is no recurrent matrix at all and,
with leak a = 1, each state depends on its own input only: an extreme learning
machine's random hidden layer (Huang, Zhu & Siew 2006).
"""

from __future__ import annotations

import functools
import math
import warnings
from collections import deque
from collections.abc import Callable

import torch
from torch import nn

from zoo.errors import ZooError

# Below this density of W, a frozen reservoir on the CPU multiplies by a sparse (CSR) copy of W.
SPARSE_DENSITY = 0.2


def fast_tanh(x: torch.Tensor) -> torch.Tensor:
    """tanh(x) = 2 sigmoid(2x) - 1, exact up to float rounding (absolute error ~1e-7).

    On the CPU, torch.sigmoid is several times faster than torch.tanh (about 35 vs 240
    microseconds for 64k float32 values on one core of the benchmark machine), and the
    activation is a sizeable part of each reservoir step; elsewhere ``torch.tanh`` is used.
    """
    if x.device.type != "cpu":
        return torch.tanh(x)
    return torch.sigmoid(x * 2) * 2 - 1


ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "tanh": fast_tanh,
    "relu": torch.relu,
    "sigmoid": torch.sigmoid,
    "identity": torch.clone,  # a linear reservoir
}

# The same functions, overwriting their argument (for the no-grad loop, where no copy is needed).
INPLACE_ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "tanh": lambda x: x.mul_(2).sigmoid_().mul_(2).sub_(1) if x.device.type == "cpu" else x.tanh_(),
    "relu": torch.relu_,
    "sigmoid": torch.sigmoid_,
    "identity": lambda x: x,
}


class ReservoirError(ZooError, ValueError):
    """A reservoir or readout was configured or called with values that cannot work."""


# --------------------------------------------------------------------------- weights
def reservoir_weights(
    input_dim: int,
    units: int,
    *,
    spectral_radius: float = 0.9,
    input_scaling: float = 1.0,
    connectivity: float = 0.1,
    input_connectivity: float = 1.0,
    bias_scaling: float = 0.0,
    seed: int = 0,
) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor]:
    """Random reservoir weights ``(W_in (N, D), W (N, N) or None, b (N,))``, float32, on the CPU.

    Everything is drawn from one ``torch.Generator`` seeded with ``seed``, so the
    same arguments always give the same weights.

    - ``W_in``: each entry is non-zero with probability ``input_connectivity``, uniform
      on [-1, 1], scaled so that each unit's input drive sum_j W_in[i, j] u_j has standard
      deviation ``input_scaling`` for unit-variance inputs, i.e. by
      ``input_scaling * sqrt(3 / (D * input_connectivity))``. (Lukoševičius 2012 calls the
      raw entry range the input scaling; normalising by fan-in keeps one default sensible
      for any input size D.)
    - ``W``: density ``connectivity``, uniform on [-1, 1], then rescaled so that its largest
      absolute eigenvalue (computed with ``torch.linalg.eigvals`` on the dense matrix, in
      float64) is ``spectral_radius``. ``spectral_radius = 0`` means no recurrence: ``W`` is None.
    - ``b``: uniform on [-bias_scaling, bias_scaling].
    """
    if input_dim < 1 or units < 1:
        raise ReservoirError(
            f"a reservoir needs input_dim >= 1 and units >= 1, got input_dim={input_dim}, units={units}"
        )
    for name, value in (("connectivity", connectivity), ("input_connectivity", input_connectivity)):
        if not 0.0 < value <= 1.0:
            raise ReservoirError(f"{name} is a density and must lie in (0, 1], got {value}")
    for name, value in (
        ("spectral_radius", spectral_radius),
        ("input_scaling", input_scaling),
        ("bias_scaling", bias_scaling),
    ):
        if value < 0:
            raise ReservoirError(f"{name} must be >= 0, got {value}")
    drawn = _drawn_weights(
        input_dim, units, spectral_radius, input_scaling, connectivity, input_connectivity, bias_scaling, seed
    )
    return tuple(None if t is None else t.clone() for t in drawn)


@functools.lru_cache(maxsize=4)
def _drawn_weights(
    input_dim, units, spectral_radius, input_scaling, connectivity, input_connectivity, bias_scaling, seed
) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor]:
    """:func:`reservoir_weights`, drawn once per process for each of the last 4 settings (a 2-layer bidirectional
    encoder's reservoirs): the same seed gives the same matrices, and the eigenvalues of a 1,024-unit W take a
    second, which a model built again (to test its best checkpoint, or by a sweep's next job) would pay each
    time. Callers get copies."""
    gen = torch.Generator().manual_seed(seed)

    def sparse_uniform(rows: int, cols: int, density: float) -> torch.Tensor:
        values = torch.rand(rows, cols, generator=gen, dtype=torch.float64) * 2 - 1
        if density < 1.0:
            values = values * (torch.rand(rows, cols, generator=gen, dtype=torch.float64) < density)
        return values

    w_in = sparse_uniform(units, input_dim, input_connectivity)
    w_in *= input_scaling * math.sqrt(3.0 / (input_dim * input_connectivity))
    w = None
    if spectral_radius > 0:
        w = sparse_uniform(units, units, connectivity)
        radius = torch.linalg.eigvals(w).abs().max().item()
        if radius < 1e-12:
            raise ReservoirError(
                f"the random recurrent matrix ({units} units, connectivity {connectivity}) has spectral radius 0 "
                f"and cannot be rescaled to {spectral_radius}; raise units or connectivity"
            )
        w *= spectral_radius / radius
    b = (torch.rand(units, generator=gen, dtype=torch.float64) * 2 - 1) * bias_scaling
    return w_in.float(), None if w is None else w.float(), b.float()


# --------------------------------------------------------------------------- padding helpers
def reverse_padded(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Reverse the real steps of every sequence; padded steps stay where they are.

    ``x`` (B, S, ...) and ``mask`` (B, S) True where real. The i-th real step
    swaps with the i-th real step from the end, wherever the padding sits, so
    applying the function twice gives ``x`` back.
    """
    b, s = mask.shape
    pos = torch.arange(s, device=mask.device).expand(b, s)
    order = torch.where(mask, pos, pos + s).argsort(dim=1)  # positions of real steps first, in order
    rank = mask.long().cumsum(1) - 1  # index of each real step among the real ones
    partner = (mask.sum(1, keepdim=True) - 1 - rank).clamp(min=0)
    source = torch.where(mask, order.gather(1, partner), pos)
    index = source.view(b, s, *([1] * (x.dim() - 2))).expand_as(x)
    return x.gather(1, index)


def _carry_forward(states: torch.Tensor, mask: torch.Tensor, initial: torch.Tensor) -> torch.Tensor:
    """Replace each padded step's state (B, T, N) by the latest real one (``initial`` before any)."""
    b, t, _ = states.shape
    pos = torch.arange(t, device=mask.device).expand(b, t)
    last_real = torch.where(mask, pos, -1).cummax(dim=1).values  # (B, T), -1 before the first real step
    padded = torch.cat([initial.unsqueeze(1), states], dim=1)  # shift by one: index 0 is the initial state
    return padded.gather(1, (last_real + 1).unsqueeze(-1).expand_as(states))


# --------------------------------------------------------------------------- the reservoir
class Reservoir(nn.Module):
    """A leaky-integrator echo state reservoir (Jaeger 2001; Lukoševičius 2012).

    ``forward(u (B, T, D) or (T, D), mask (B, T) or (T,) or None, initial (B, N) or None)``
    returns the states ``(B, T, N)`` (or ``(T, N)``) after each step, possibly as a
    non-contiguous view (use ``.reshape``, not ``.view``)::

        x_t = (1 - a) * x_{t-1} + a * f(W_in u_t + W x_{t-1} + b),   x_0 = initial or 0

    Where ``mask`` is False the step is skipped (x_t = x_{t-1}), so ``states[:, -1]``
    is always the state after the last real step.

    Weights are ``W_in`` (N, D), ``W`` (N, N) (None when ``spectral_radius=0``) and ``b``
    (N,), made by :func:`reservoir_weights`. They are persistent buffers (saved in
    ``state_dict``, not returned by ``parameters()``) unless ``trainable=True``, which
    makes them Parameters trained by backpropagation through time (the spectral
    radius is then no longer kept at its initial value).

    Efficiency: the input drive ``W_in u_t + b`` of all steps is one matmul; only the
    recurrence loops over time, batched over the B sequences, one ``addmm`` per step
    (with a sparse CSR copy of ``W`` for a frozen CPU reservoir of density <= 0.2).
    A frozen reservoir runs under ``torch.no_grad()`` with its input detached: its
    states are a fixed function of the input and no autograd graph is built.
    """

    def __init__(
        self,
        input_dim: int,
        units: int,
        *,
        leak_rate: float = 1.0,
        spectral_radius: float = 0.9,
        input_scaling: float = 1.0,
        connectivity: float = 0.1,
        input_connectivity: float = 1.0,
        bias_scaling: float = 0.0,
        activation: str = "tanh",
        seed: int = 0,
        trainable: bool = False,
    ) -> None:
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ReservoirError(
                f"unknown reservoir activation '{activation}'; choose one of: {', '.join(ACTIVATIONS)}"
            )
        if not 0.0 < leak_rate <= 1.0:
            raise ReservoirError(f"leak_rate must lie in (0, 1], got {leak_rate}")
        self.input_dim, self.units = input_dim, units
        self.leak_rate, self.activation, self.trainable = leak_rate, activation, trainable
        w_in, w, b = reservoir_weights(
            input_dim,
            units,
            spectral_radius=spectral_radius,
            input_scaling=input_scaling,
            connectivity=connectivity,
            input_connectivity=input_connectivity,
            bias_scaling=bias_scaling,
            seed=seed,
        )
        for name, value in (("W_in", w_in), ("W", w), ("b", b)):
            if value is None:
                self.W = None
            elif trainable:
                setattr(self, name, nn.Parameter(value))
            else:
                self.register_buffer(name, value, persistent=True)

    def extra_repr(self) -> str:
        return (
            f"input_dim={self.input_dim}, units={self.units}, leak_rate={self.leak_rate}, "
            f"recurrent={self.W is not None}, activation={self.activation}, trainable={self.trainable}"
        )

    def forward(
        self, u: torch.Tensor, mask: torch.Tensor | None = None, initial: torch.Tensor | None = None
    ) -> torch.Tensor:
        unbatched = u.dim() == 2
        if unbatched:
            u = u.unsqueeze(0)
            mask = None if mask is None else mask.unsqueeze(0)
            initial = None if initial is None else initial.unsqueeze(0)
        if u.dim() != 3 or u.shape[-1] != self.input_dim:
            raise ReservoirError(
                f"reservoir expects input (B, T, {self.input_dim}) or (T, {self.input_dim}), got {tuple(u.shape)}"
            )
        if mask is not None:
            if mask.shape != u.shape[:2]:
                raise ReservoirError(
                    f"mask must have the input's (B, T) = {tuple(u.shape[:2])}, got {tuple(mask.shape)}"
                )
            mask = mask.bool()
        if self.trainable:
            states = self._run(u, mask, initial)
        else:
            with torch.no_grad():
                states = self._run(u.detach(), mask, None if initial is None else initial.detach())
        return states.squeeze(0) if unbatched else states

    def _run(self, u: torch.Tensor, mask: torch.Tensor | None, initial: torch.Tensor | None) -> torch.Tensor:
        batch, steps, _ = u.shape
        f = ACTIVATIONS[self.activation]
        if self.W is None and self.leak_rate == 1.0:  # no recurrence at all: an extreme learning machine
            states = f(torch.nn.functional.linear(u, self.W_in, self.b))
            if mask is None:
                return states
            return _carry_forward(states, mask, states.new_zeros(batch, self.units) if initial is None else initial)
        if self._sparse_recurrence(u):
            # Units first: drive and states (T, N, B), one CSR (N, N) @ (N, B) product per step.
            w_csr = self._csr_copy()
            drive = torch.matmul(self.W_in, u.permute(1, 2, 0)).add_(self.b.unsqueeze(-1))  # all steps at once
            x = drive.new_zeros(self.units, batch) if initial is None else initial.t()
            keep = None if mask is None else mask.t().unsqueeze(1)  # (T, 1, B)
            batch_first = (2, 0, 1)

            def recur(pre: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
                return torch.addmm(pre, w_csr, x)

        else:
            # Batch first: drive and states (T, B, N), one dense (B, N) @ (N, N) product per step.
            drive = torch.nn.functional.linear(u, self.W_in, self.b).transpose(0, 1)  # all steps in one matmul
            x = drive.new_zeros(batch, self.units) if initial is None else initial
            keep = None if mask is None else mask.t().unsqueeze(-1)  # (T, B, 1)
            batch_first = (1, 0, 2)
            w_t = None if self.W is None else self.W.t()

            def recur(pre: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
                return pre if w_t is None else torch.addmm(pre, x, w_t)

        states = drive.new_empty(drive.shape)
        for t in range(steps):
            if keep is None and not torch.is_grad_enabled():  # in place, straight into the output: no copies
                new = INPLACE_ACTIVATIONS[self.activation](recur(drive[t], x))
                x = torch.lerp(x, new, self.leak_rate, out=states[t])  # (1 - a) x + a new, fused
                continue
            new = f(recur(drive[t], x))
            if self.leak_rate != 1.0:
                new = torch.lerp(x, new, self.leak_rate)
            x = new if keep is None else torch.where(keep[t], new, x)
            states[t] = x
        return states.permute(*batch_first)  # (B, T, N): a view, not a copy

    def _csr_copy(self) -> torch.Tensor:
        """A CSR copy of ``W``, made once and reused while ``W`` is unchanged (its version counter)."""
        key = (self.W.data_ptr(), self.W._version, self.W.device)
        if getattr(self, "_csr_key", None) != key:
            with warnings.catch_warnings():  # "sparse CSR support is in beta": addmm with CSR is all we use
                warnings.simplefilter("ignore", UserWarning)
                self._csr = self.W.to_sparse_csr()
            self._csr_key = key
        return self._csr

    def _sparse_recurrence(self, u: torch.Tensor) -> bool:
        """Multiply by a CSR copy of W? Only for a frozen reservoir on the CPU with a sparse enough W.

        ``W`` itself stays dense (for access, eigenvalues and checkpoints); the CSR copy is
        kept until ``W`` changes (:meth:`_csr_copy`). Below density
        :data:`SPARSE_DENSITY` the CSR product is the faster one on the CPU (docs/reservoir.md).
        """
        if self.W is None or self.trainable or self.W.device.type != "cpu" or u.dtype != self.W.dtype:
            return False
        if torch.is_autocast_enabled("cpu"):
            return False
        return self.W.count_nonzero().item() <= SPARSE_DENSITY * self.W.numel()


# --------------------------------------------------------------------------- ridge readout
def ridge_regression(
    inputs: torch.Tensor, targets: torch.Tensor, ridge: float = 1e-6, bias: bool = True
) -> tuple[torch.Tensor, torch.Tensor]:
    """Closed-form ridge regression (Tikhonov 1943; Lukoševičius 2012, eq. 9).

    ``inputs`` X (M, N) rows are samples, ``targets`` Y (M, K). Solves
    ``W_out = Yᵀ X' (X'ᵀ X' + λ I)⁻¹`` with ``torch.linalg.solve`` in float64, where
    ``X' = [X, 1]`` when ``bias`` (the bias column is not penalised). Returns
    ``weight`` (K, N) and ``bias`` (K,) (zeros when ``bias=False``) in the inputs' dtype.
    """
    if inputs.dim() != 2 or targets.dim() != 2 or inputs.shape[0] != targets.shape[0]:
        raise ReservoirError(
            f"ridge_regression needs inputs (M, N) and targets (M, K) with the same M, "
            f"got {tuple(inputs.shape)} and {tuple(targets.shape)}"
        )
    if ridge < 0:
        raise ReservoirError(f"ridge must be >= 0, got {ridge}")
    x, y = inputs.double(), targets.double()
    n = x.shape[1]
    if bias:
        x = torch.cat([x, x.new_ones(x.shape[0], 1)], dim=1)
    penalty = torch.full((x.shape[1],), float(ridge), dtype=x.dtype, device=x.device)
    if bias:
        penalty[-1] = 0.0
    gram = x.T @ x + torch.diag(penalty)
    solution = torch.linalg.solve(gram, x.T @ y)  # (N [+1], K)
    weight = solution[:n].T.contiguous()
    offset = solution[n] if bias else y.new_zeros(y.shape[1])
    return weight.to(inputs.dtype), offset.to(inputs.dtype)


class RidgeReadout(nn.Module):
    """A linear readout ``y = W_out x + b_out`` fitted in closed form by :meth:`fit`.

    ``forward(states (..., N)) -> (..., K)``. ``weight`` (K, N) and ``bias`` (K,) are
    buffers, so a fitted readout is saved in ``state_dict``.
    """

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("weight", None)
        self.register_buffer("bias", None)

    def fit(
        self,
        states: torch.Tensor,
        targets: torch.Tensor,
        *,
        ridge: float = 1e-6,
        washout: int = 0,
        mask: torch.Tensor | None = None,
        bias: bool = True,
    ) -> RidgeReadout:
        """Fit on states (T, N) or (B, T, N) and targets (T, K) or (B, T, K).

        The first ``washout`` steps of every sequence are dropped (the reservoir is
        still forgetting its initial state); where ``mask`` (B, T) is False the step
        is ignored. Returns ``self``.
        """
        if states.dim() == 2:
            states, targets = states.unsqueeze(0), targets.unsqueeze(0)
            mask = None if mask is None else mask.unsqueeze(0)
        if states.dim() != 3 or targets.dim() != 3 or states.shape[:2] != targets.shape[:2]:
            raise ReservoirError(
                f"fit needs states (B, T, N) and targets (B, T, K) with the same B and T, "
                f"got {tuple(states.shape)} and {tuple(targets.shape)}"
            )
        if not 0 <= washout < states.shape[1]:
            raise ReservoirError(
                f"washout must lie in [0, {states.shape[1]}) for {states.shape[1]} steps, got {washout}"
            )
        keep = torch.ones(states.shape[:2], dtype=torch.bool, device=states.device)
        if mask is not None:
            keep &= mask.bool()
        keep[:, :washout] = False
        self.weight, self.bias = ridge_regression(states[keep], targets[keep], ridge=ridge, bias=bias)
        return self

    def forward(self, states: torch.Tensor) -> torch.Tensor:
        if self.weight is None:
            raise ReservoirError("this RidgeReadout is not fitted yet; call .fit(states, targets) first")
        return torch.nn.functional.linear(states, self.weight, self.bias)


# --------------------------------------------------------------------------- Mackey-Glass
def mackey_glass(
    n_samples: int,
    *,
    tau: float = 17.0,
    beta: float = 0.2,
    gamma: float = 0.1,
    n: float = 10.0,
    x0: float = 1.2,
    dt: float = 0.1,
    subsample: int = 10,
    discard: int = 0,
    seed: int | None = None,
) -> torch.Tensor:
    """The Mackey-Glass delay differential equation (Mackey & Glass 1977), sampled.

        dx/dt = beta * x(t - tau) / (1 + x(t - tau)^n) - gamma * x(t)

    Integrated with classical 4th-order Runge-Kutta at step ``dt``; the delayed value
    at a half step is the mean of its two neighbouring history points. One sample is
    kept every ``subsample`` steps (so the sampling interval is ``dt * subsample``,
    1 time unit by default) after ``discard`` samples of transient. The history on
    [-tau, 0] is ``x0``, plus uniform noise in [-0.1, 0.1] drawn from ``seed`` when a
    seed is given (different seeds give different trajectories). With tau = 17 the
    series is chaotic. Returns ``(n_samples,)`` float64.
    """
    if n_samples < 1 or dt <= 0 or subsample < 1 or discard < 0 or tau <= 0:
        raise ReservoirError(
            f"mackey_glass needs n_samples >= 1, dt > 0, subsample >= 1, discard >= 0, tau > 0; got "
            f"n_samples={n_samples}, dt={dt}, subsample={subsample}, discard={discard}, tau={tau}"
        )
    delay = max(1, round(tau / dt))  # the delay in integration steps
    history = deque([x0] * (delay + 1), maxlen=delay + 1)  # x at t - tau ... t
    if seed is not None:
        noise = torch.rand(delay + 1, generator=torch.Generator().manual_seed(seed), dtype=torch.float64) * 0.2 - 0.1
        history = deque((x0 + e for e in noise.tolist()), maxlen=delay + 1)

    def rate(x: float, x_delayed: float) -> float:
        return beta * x_delayed / (1.0 + x_delayed**n) - gamma * x

    samples = []
    step = 0
    x = history[-1]
    while len(samples) < discard + n_samples:
        lag0, lag1 = history[-1 - delay], history[-delay]  # x(t - tau), x(t - tau + dt)
        lag_half = 0.5 * (lag0 + lag1)
        k1 = rate(x, lag0)
        k2 = rate(x + 0.5 * dt * k1, lag_half)
        k3 = rate(x + 0.5 * dt * k2, lag_half)
        k4 = rate(x + dt * k3, lag1)
        x = x + dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
        history.append(x)
        step += 1
        if step % subsample == 0:
            samples.append(x)
    return torch.tensor(samples[discard:], dtype=torch.float64)


def nrmse(prediction: torch.Tensor, target: torch.Tensor) -> float:
    """Normalised root-mean-square error: RMSE / standard deviation of the target.

    0 is perfect; 1 is no better than always predicting the target's mean.
    """
    if prediction.shape != target.shape:
        raise ReservoirError(f"nrmse needs equal shapes, got {tuple(prediction.shape)} and {tuple(target.shape)}")
    p, t = prediction.double(), target.double()
    return (torch.sqrt(torch.mean((p - t) ** 2)) / t.std()).item()
