"""State-space sequence layers: S4D (Gu et al., 2022) and Mamba (Gu & Dao, 2023), each with a parallel form for
training and a recurrent form, of constant-size state, for decoding.

A linear state-space model maps an input u(t) to an output y(t) through a state x(t) of N numbers per channel,
x'(t) = A x(t) + B u(t) and y(t) = C x(t) + D u(t). Discretised with a step Δ by zero-order hold (ZOH: the input
held constant over each step) it is a linear recurrence::

    x_k = Ā x_{k-1} + B̄ u_k,    y_k = C x_k + D u_k,    Ā = exp(ΔA),    B̄ = (ΔA)^-1 (exp(ΔA) - I) ΔB

With A diagonal every state dimension is a scalar recurrence of its own. The two layers differ in what may vary:

* :class:`S4D`: A, B, C and Δ are the same at every step (a linear time-invariant system), so the output is a
  causal convolution of the input with the kernel K_l = C Ā^l B̄. The kernel is a Vandermonde product (powers
  of the diagonal Ā), applied with the FFT in O(L log L); the recurrence is kept for decoding.
* :class:`Mamba`: Δ, B and C are computed from each token (the selection mechanism), so the model can keep or
  ignore a token, and there is no kernel. The recurrence h_t = a_t * h_{t-1} + b_t is still linear in h, and
  composing two steps gives a step of the same form, an associative operation, so it runs as a parallel scan
  (:func:`linear_scan`: recursive doubling, O(L) work in O(log L) sequential rounds of whole-tensor operations).
  The rounds pay where a GPU runs each one's products at once. A CPU is bound by memory instead: the (B, L, E, N)
  tensors of decays and states are N = 16 times the layer's input, and each round reads them again. There
  :func:`chunked_selective_scan` makes them a chunk of time at a time, in cache, and recomputes them for the
  backward pass, as ``mamba-ssm``'s kernel does on a GPU: 3.3× faster than the doubling at L = 1,024 in training,
  and the layer 12× faster than stepping it token by token (benchmarks/scan_speed.py).

Padding. A layer's input is zeroed at padded steps, and Mamba's step Δ is 0 there (Ā = 1, B̄u = 0: the state
passes through unchanged). A zero input leaves a zero state zero, and every layer is causal, so padded steps
before the real ones (a decoder reading the encoder memory as a prefix, :func:`padding_first`) or after them (an
encoder: its backward pass reverses only the real steps, zoo.reservoir.reverse_padded) never reach a real step.
Padding in the middle of a sequence would still decay S4D's state and enter Mamba's convolution window: zoo's
frontends pad at the end.

With ``mamba_ssm`` installed and tensors on CUDA, the selective scan runs its fused kernel
(``selective_scan_fn``); it is imported at first use, never when missing. The PyTorch form here runs everywhere.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from zoo.config.checks import TRAINED_BYTES, at_least, in_unit_interval, no_wider_than, one_of, positive, within_memory
from zoo.nn import recurrence
from zoo.nn.norms import Norm, make_norm
from zoo.reservoir import reverse_padded


def log_uniform_steps(channels: int, dt_min: float, dt_max: float) -> torch.Tensor:
    """Initial steps Δ (channels,), log-uniform in [dt_min, dt_max]: each channel starts at its own time scale,
    from about 1/dt_max to 1/dt_min steps (Gu et al., 2022)."""
    return torch.exp(torch.empty(channels).uniform_(math.log(dt_min), math.log(dt_max)))


# ------------------------------------------------------------------ S4D: a diagonal, time-invariant SSM
class S4D(nn.Module):
    """A diagonal state-space layer over H independent channels (Gu et al., 2022), N complex modes per channel.

    A_n = -exp(a_n) + i b_n, initialised S4D-Lin: A_n = -1/2 + i pi n (Gu et al., 2022, the diagonal
    initialisation they derive from HiPPO, Gu et al., 2020); the real part stays negative, so the system is
    stable. Each complex mode stands for itself and its conjugate, which gives the real output 2 Re(C x). B is
    fixed at 1 and only C is learnt (as the paper's S4D does: C_n B_n is what enters the kernel); Δ = exp(log_dt)
    is learnt per channel; D is a learnt skip.

    ``forward(u (B, L, H), mask (B, L) or None, return_state) -> y (B, L, H)`` (and, with ``return_state``, the
    state after the last step); ``step(u_t (B, H), state (B, H, N) complex) -> (y_t (B, H), state)`` from
    ``initial_state``. Run one after the other, the steps give ``forward``'s output.
    """

    def __init__(self, channels: int, d_state: int, dt_min: float = 1e-3, dt_max: float = 1e-1) -> None:
        super().__init__()
        self.log_dt = nn.Parameter(log_uniform_steps(channels, dt_min, dt_max).log())
        self.log_neg_real = nn.Parameter(torch.full((channels, d_state), math.log(0.5)))
        self.imag = nn.Parameter(math.pi * torch.arange(d_state, dtype=torch.float).expand(channels, -1).clone())
        self.C = nn.Parameter(torch.randn(channels, d_state, 2) * math.sqrt(0.5))  # complex N(0, 1), real view
        self.D = nn.Parameter(torch.ones(channels))

    def discretised(self, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """ZOH: log Ā = ΔA, B̄ = (Ā - 1) / A (B = 1) and C, each (H, N) complex, at the precision of ``dtype``."""
        real = torch.promote_types(dtype, torch.float32)
        A = torch.complex(-self.log_neg_real.exp(), self.imag).to(real.to_complex())
        dtA = self.log_dt.exp().to(real)[:, None] * A
        return dtA, (dtA.exp() - 1) / A, torch.view_as_complex(self.C.to(real).contiguous())

    def kernel(self, length: int, dtype: torch.dtype) -> torch.Tensor:
        """K_l = 2 Re(sum_n C_n B̄_n Ā_n^l) for l = 0..length-1: (H, L), by the Vandermonde matrix Ā_n^l.

        The powers are never made whole: with l = J k + j (J about the square root of L), Ā^l = Ā^(J k) Ā^j, so
        K[J k + j] = sum_n (C B̄ Ā^(J k))_n (Ā^j)_n is one complex matrix product per channel, (K, N) by (N, J), from
        2 sqrt(L) N exponentials per channel instead of L N (the complex exponentials were most of a training step).
        """
        dtA, dB, C = self.discretised(dtype)
        inner = math.isqrt(length - 1) + 1  # J >= sqrt(L), so J * K >= L
        outer = -(-length // inner)
        steps = torch.arange(max(inner, outer), device=dtA.device)
        near = (dtA[..., None] * steps[:inner]).exp()  # (H, N, J): Ā^j
        far = (C * dB)[..., None] * (dtA[..., None] * inner * steps[:outer]).exp()  # (H, N, K): C B̄ Ā^(J k)
        return 2 * (far.transpose(1, 2) @ near).flatten(1)[:, :length].real

    def forward(self, u: torch.Tensor, mask: torch.Tensor | None = None, return_state: bool = False):
        length = u.shape[1]
        if mask is not None:
            u = u.masked_fill(~mask[..., None], 0.0)
        v = u.transpose(1, 2).to(torch.promote_types(u.dtype, torch.float32))  # (B, H, L)
        k = self.kernel(length, v.dtype)
        n = 2 * length  # zero-padded to twice the length, so the FFT's circular convolution is a causal one
        y = torch.fft.irfft(torch.fft.rfft(v, n) * torch.fft.rfft(k, n), n)[..., :length]
        y = (y + self.D.to(v.dtype)[:, None] * v).transpose(1, 2).to(u.dtype)
        if not return_state:
            return y
        dtA, dB, _ = self.discretised(v.dtype)
        # x_{L-1} = sum_s Ā^(L-1-s) B̄ u_s: the same Vandermonde powers, read backwards.
        back = (dtA[..., None] * torch.arange(length - 1, -1, -1, device=u.device)).exp()  # (H, N, L)
        return y, torch.einsum("bhl,hnl->bhn", v.to(dB.dtype), back) * dB

    def initial_state(self, batch: int, like: torch.Tensor) -> torch.Tensor:
        """The zero state (B, H, N), complex, on ``like``'s device."""
        real = torch.promote_types(like.dtype, torch.float32)
        return torch.zeros(batch, *self.imag.shape, dtype=real.to_complex(), device=like.device)

    def step(self, u: torch.Tensor, state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        dtA, dB, C = self.discretised(u.dtype)
        v = u.to(torch.promote_types(u.dtype, torch.float32))
        state = dtA.exp() * state + dB * v[..., None]
        y = 2 * (C * state).sum(-1).real + self.D.to(v.dtype) * v
        return y.to(u.dtype), state


class S4DMixer(nn.Module):
    """The S4 layer's form around :class:`S4D` (Gu et al., 2022): the SSM mixes each channel over time, then GELU
    and a gated position-wise linear map (to 2H, then a GLU; Dauphin et al., 2017) mix the channels.

    ``forward(x (B, L, H), mask, return_state)``, ``initial_state`` and ``step`` as :class:`S4D`'s.
    """

    def __init__(self, channels: int, d_state: int, dt_min: float, dt_max: float) -> None:
        super().__init__()
        self.ssm = S4D(channels, d_state, dt_min, dt_max)
        self.output = nn.Sequential(nn.GELU(), nn.Linear(channels, 2 * channels), nn.GLU(dim=-1))

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None, return_state: bool = False):
        if not return_state:
            return self.output(self.ssm(x, mask))
        y, state = self.ssm(x, mask, return_state=True)
        return self.output(y), state

    def together(self, other: S4DMixer, x: torch.Tensor, other_x: torch.Tensor, mask: torch.Tensor | None):
        """``(self(x, mask), other(other_x, mask))``: two FFT convolutions gain nothing from one call."""
        return self(x, mask), other(other_x, mask)

    def initial_state(self, batch: int, like: torch.Tensor) -> torch.Tensor:
        return self.ssm.initial_state(batch, like)

    def step(self, x: torch.Tensor, state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y, state = self.ssm.step(x, state)
        return self.output(y), state


# ------------------------------------------------------------------ Mamba: a selective SSM
def linear_scan(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """h_t = a_t * h_{t-1} + b_t from h_{-1} = 0, for every t: a, b (B, L, ...) -> h (B, L, ...).

    Computed by :func:`doubling`, and differentiated by hand: the gradient of a linear recurrence is the same
    recurrence run backwards, g_t = dh_t + a_{t+1} g_{t+1}, with db_t = g_t and da_t = g_t h_{t-1} (Martin &
    Cundy, 2018). So the backward pass is one more scan, not autograd's record of every round.
    """
    return _LinearScan.apply(a, b)


class _LinearScan(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        h = doubling(a, b)
        ctx.save_for_backward(a, h)
        return h

    @staticmethod
    def backward(ctx, dh: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        a, h = ctx.saved_tensors
        a_next = torch.cat([a[:, 1:], torch.zeros_like(a[:, :1])], dim=1)  # nothing follows the last step
        g = doubling(a_next, dh, reverse=True)
        h_before = torch.cat([torch.zeros_like(h[:, :1]), h[:, :-1]], dim=1)
        return g * h_before, g


def doubling(a: torch.Tensor, b: torch.Tensor, reverse: bool = False) -> torch.Tensor:
    """h_t = a_t * h_{t-1} + b_t from h_{-1} = 0 (``reverse``: h_t = a_t * h_{t+1} + b_t from h_L = 0) by recursive
    doubling (Blelloch, 1990): O(L) work in log2(L) rounds. a, b (B, L, ...) -> h (B, L, ...).

    Two consecutive steps compose into one: after h_i = a_i h + b_i comes h_j = a_j h_i + b_j = (a_j a_i) h +
    (a_j b_i + b_j). So the pairs' second steps are a recurrence of half the length, solved the same way, and
    each first step is then one step from the previous pair's second. Every round is a few whole-tensor
    products; there is no division or logarithm, so nothing overflows where |a| <= 1. Not for autograd (it
    writes its output in place): :func:`linear_scan` differentiates it.
    """
    length = a.shape[1]
    if length == 1:
        return b.clone()
    if length % 2:  # one more step at the end that nothing reads (a = 1, b = 0) makes the pairs whole
        a = torch.cat([a, torch.ones_like(a[:, :1])], dim=1)
        b = torch.cat([b, torch.zeros_like(b[:, :1])], dim=1)
    first, second = (slice(1, None, 2), slice(0, None, 2)) if reverse else (slice(0, None, 2), slice(1, None, 2))
    h = torch.empty_like(b)
    h[:, second] = doubling(a[:, second] * a[:, first], torch.addcmul(b[:, second], a[:, second], b[:, first]), reverse)
    if reverse:  # pair i's first step (2i + 1) follows pair i + 1's second (2i + 2); the last pair's, nothing
        h[:, -1] = b[:, -1]
        h[:, 1:-1:2] = torch.addcmul(b[:, 1:-1:2], a[:, 1:-1:2], h[:, 2::2])
    else:  # pair i's first step (2i) follows pair i - 1's second (2i - 1); the first pair's, nothing
        h[:, 0] = b[:, 0]
        h[:, 2::2] = torch.addcmul(b[:, 2::2], a[:, 2::2], h[:, 1:-1:2])
    return h[:, :length]


def selective_scan(
    x: torch.Tensor, delta: torch.Tensor, A: torch.Tensor, B: torch.Tensor, C: torch.Tensor, D: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Mamba's SSM over a sequence from a zero state: h_t = exp(Δ_t A) h_{t-1} + Δ_t B_t x_t, y_t = C_t h_t + D x_t
    per channel (ZOH for A, Δ B for B̄, as Gu & Dao, 2023 simplify it).

    x, delta (B, L, E), A (E, N), B, C (B, L, N) or, for G groups of E / G channels each reading its own, (B, L, G,
    N), D (E,) -> (y (B, L, E), the last state h (B, E, N)). On CUDA through ``mamba_ssm``'s kernel when it is
    installed, else by :func:`parallel_selective_scan` over the whole (B, L, E, N) recurrence; on the CPU by
    :func:`chunked_selective_scan`, which never holds that tensor whole.
    """
    kernel = mamba_kernel() if x.is_cuda else None
    if kernel is not None:
        y, last = kernel(
            *(t.transpose(1, 2).contiguous() for t in (x, delta)),
            A.float(),
            *(in_groups(t).permute(0, 2, 3, 1).contiguous() for t in (B, C)),  # (B, G, N, L)
            D.float(),
            return_last_state=True,
        )
        return y.transpose(1, 2), last
    dtype = torch.promote_types(x.dtype, torch.float32)
    x, delta, B, C, A = (t.to(dtype) for t in (x, delta, B, C, A))
    scan = parallel_selective_scan if x.is_cuda else chunked_selective_scan
    y, last = scan(delta * x, delta, A, B, C)
    return y + D.to(dtype) * x, last


def in_groups(maps: torch.Tensor) -> torch.Tensor:
    """A selective SSM's B or C as (B, L, G, N): one group of channels where it is given as (B, L, N)."""
    return maps if maps.dim() == 4 else maps[:, :, None]


def parallel_selective_scan(
    u: torch.Tensor, delta: torch.Tensor, A: torch.Tensor, B: torch.Tensor, C: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`chunked_selective_scan`'s result by :func:`linear_scan` over the whole (B, L, E, N) recurrence: a
    GPU's form without ``mamba_ssm``, whose rounds of whole-tensor products it runs at once."""
    B, C = in_groups(B), in_groups(C)
    inputs = (u.unflatten(2, (B.shape[2], -1))[..., None] * B[:, :, :, None]).flatten(2, 3)  # u_t B_t: (B, L, E, N)
    h = linear_scan((delta[..., None] * A).exp(), inputs)
    return torch.einsum("blgen,blgn->blge", h.unflatten(2, (B.shape[2], -1)), C).flatten(2), h[:, -1]


LOG2_E = 1 / math.log(2)
CHUNK_ELEMENTS = 2**18  # numbers in a chunk's states: 1 MiB, so the chunk's few tensors stay near a L2 cache


def chunked_selective_scan(
    u: torch.Tensor, delta: torch.Tensor, A: torch.Tensor, B: torch.Tensor, C: torch.Tensor, chunk: int | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """The selective SSM without its skip, h_t = exp(Δ_t A) h_{t-1} + u_t B_t, y_t = C_t h_t, a chunk of time
    at a time: u = Δx, delta (B, L, E), A (E, N), B, C (B, L, N) or (B, L, G, N) (G groups of channels, each with
    its own B and C) -> (y (B, L, E), the last state (B, E, N)).

    The CPU's form of what ``mamba_ssm``'s kernel does on a GPU (Gu & Dao, 2023, section 3.3.2): the (B, L, E, N)
    states are never kept whole; only the state at each chunk's start is, and the backward pass makes each chunk
    again from it. So the memory is that of the (B, L, E) inputs, not N times more. Where the machine compiles it,
    zoo.nn.recurrence runs the whole scan in C, one sequence's state in cache (benchmarks/scan_speed.py). Else, in
    PyTorch, the chunk's tensors of decays, inputs and states are made one chunk at a time, laid out (B, T, G, N,
    E / G), channels last, so every product and every sum over the N states runs along contiguous channels and
    the sums over channels are matrix products; within a chunk the recurrence is one PyTorch call a step.
    ``chunk`` steps, by default as many as make ``CHUNK_ELEMENTS`` numbers: 64 at batch 1 for one Mamba layer's
    256 × 16 states, 2 at batch 32. Both forms save a state per chunk and are charged the same FLOPs.
    """
    B, C = in_groups(B), in_groups(C)
    if chunk is None:
        chunk = max(1, CHUNK_ELEMENTS // u.shape[0] // A.numel())
    form = _FusedSelectiveScan if recurrence.available_for(u, delta, A, B, C) else _ChunkedSelectiveScan
    return form.apply(u, delta, A, B, C, chunk)


def grouped(t: torch.Tensor, groups: int) -> torch.Tensor:
    """(B, T, E) -> (B, T, G, 1, E / G): the channels in G groups, shaped to meet the chunk's (B, T, G, N, E / G)
    tensors."""
    return t.unflatten(2, (groups, -1)).unsqueeze(3)


def by_group(A: torch.Tensor, groups: int) -> torch.Tensor:
    """A (E, N) -> (G, N, E / G), laid out as a chunk is (contiguous: a strided A would lay the decays out
    N-innermost, and the step loop would run at half speed)."""
    return A.view(groups, -1, A.shape[1]).transpose(1, 2).contiguous()


def last_state(states: torch.Tensor) -> torch.Tensor:
    """(B, G, N, E / G) -> (B, E, N), as the recurrent form keeps the state."""
    return states.transpose(2, 3).reshape(states.shape[0], -1, states.shape[2])


class _FusedSelectiveScan(torch.autograd.Function):
    """:func:`chunked_selective_scan` by zoo.nn.recurrence's compiled scan."""

    @staticmethod
    def forward(ctx, u, delta, A, B, C, chunk: int):
        (batch, length, _), groups = u.shape, B.shape[2]
        u, delta, B, C = (t.contiguous() for t in (u, delta, B, C))
        A2 = by_group(A, groups) * LOG2_E
        interval = recurrence.interval(A.numel())
        y = torch.empty_like(u)
        starts = u.new_empty(batch, -(-length // interval), *A2.shape)
        last = u.new_empty(batch, *A2.shape)
        recurrence.scan(u, delta, A2, B, C, y, starts, last, interval, chunk)
        ctx.interval, ctx.chunk = interval, chunk
        ctx.save_for_backward(u, delta, A, B, C, starts)
        return y, last_state(last)

    @staticmethod
    def backward(ctx, dy, dlast):
        u, delta, A, B, C, starts = ctx.saved_tensors
        (batch, length, _), groups, states_n = u.shape, B.shape[2], A.shape[1]
        A_g = by_group(A, groups)
        A2 = A_g * LOG2_E
        dlast = dlast.view(batch, groups, -1, states_n).transpose(2, 3).contiguous()
        du, ddelta, dB, dC = (torch.empty_like(t) for t in (u, delta, B, C))
        dA_g = torch.zeros_like(A_g)
        work = u.new_empty(2, min(ctx.interval, length), *A2.shape)  # the states and decays between two saves
        g = u.new_empty(A2.shape)  # the adjoint state
        gradients = du, ddelta, dA_g, dB, dC, work, g
        recurrence.scan_backward(
            u, delta, A_g, A2, B, C, starts, dy.contiguous(), dlast, *gradients, ctx.interval, ctx.chunk
        )
        return du, ddelta, dA_g.transpose(1, 2).reshape(A.shape), dB, dC, None


class _ChunkedSelectiveScan(torch.autograd.Function):
    """:func:`chunked_selective_scan` in PyTorch, a chunk at a time."""

    @staticmethod
    def chunk_states(u, delta, A2, B, start, span: slice) -> tuple[torch.Tensor, torch.Tensor]:
        """One chunk's decays exp(Δ_t A) and states h_t, each (B, T, G, N, E / G), from the state before it. The
        decay is 2^(Δ_t A log2 e) (``A2`` = A log2 e, (G, N, E / G)): torch's exp2 is about 3× faster than its exp
        on the CPU (AVX-512), and as accurate here."""
        groups = B.shape[2]
        decay = torch.exp2(grouped(delta[:, span], groups) * A2)
        h = u[:, span].unflatten(2, (groups, -1))[:, :, :, None] * B[:, span, :, :, None]  # u_t B_t
        previous = start
        for a_t, h_t in zip(decay.unbind(1), h.unbind(1)):
            previous = h_t.addcmul_(a_t, previous)
        return decay, h

    @staticmethod
    def adjoints(decay, h, start, g, delta, A, dA) -> torch.Tensor:
        """Backwards through a chunk of :meth:`chunk_states`: the adjoint states g_t += decay_{t+1} g_{t+1} in place
        over g (which holds C_t dy_t, and at the last step also the gradient from after the chunk), then through
        the decays exp(Δ_t A), with dlog_t = g_t decay_t h_{t-1}: the gradient of Δ_t (B, T, G, C), returned, and
        of A, added to ``dA`` (G, N, C). decay, h, g (B, T, G, N, C), start (B, G, N, C), delta (B, T, G, C), A
        (G, N, C)."""
        later = g[:, -1]
        for a_next, g_t in zip(decay.unbind(1)[:0:-1], g.unbind(1)[-2::-1]):
            later = g_t.addcmul_(a_next, later)
        dlog = g * decay
        dlog[:, 1:] *= h[:, :-1]
        dlog[:, 0] *= start
        dA += (dlog * delta[:, :, :, None]).sum((0, 1))
        return (dlog * A).sum(3)

    @staticmethod
    def forward(ctx, u, delta, A, B, C, chunk: int):
        batch, length, inner = u.shape
        groups, states_n = B.shape[2], A.shape[1]
        A2 = by_group(A, groups) * LOG2_E
        starts = u.new_zeros(batch, -(-length // chunk), groups, states_n, inner // groups)  # before each chunk
        y = torch.empty_like(u)
        for index, begin in enumerate(range(0, length, chunk)):
            span = slice(begin, begin + chunk)
            _, states = _ChunkedSelectiveScan.chunk_states(u, delta, A2, B, starts[:, index], span)
            y[:, span] = torch.einsum("btgne,btgn->btge", states, C[:, span]).flatten(2)
            if index + 1 < starts.shape[1]:
                starts[:, index + 1] = states[:, -1]
        ctx.chunk = chunk
        ctx.save_for_backward(u, delta, A, B, C, starts)
        return y, last_state(states[:, -1])

    @staticmethod
    def backward(ctx, dy, dlast):
        """The adjoint state g_t = C_t dy_t + exp(Δ_{t+1} A) g_{t+1} runs backwards, a chunk at a time (the gradient
        of a linear recurrence is the same recurrence reversed; Martin & Cundy, 2018); then du_t = g_t B_t,
        dB_t = g_t u_t, dC_t = h_t dy_t, and through the decay d(Δ_t A) = g_t exp(Δ_t A) h_{t-1}."""
        u, delta, A, B, C, starts = ctx.saved_tensors
        groups, states_n = B.shape[2], A.shape[1]
        A_g = by_group(A, groups)
        A2 = A_g * LOG2_E
        du, ddelta, dB, dC = (torch.empty_like(t) for t in (u, delta, B, C))
        dA_g = torch.zeros_like(A_g)
        after = dlast.view(u.shape[0], groups, -1, states_n).transpose(2, 3)  # the last state's gradient
        for index in reversed(range(starts.shape[1])):
            span = slice(index * ctx.chunk, (index + 1) * ctx.chunk)
            start = starts[:, index]
            decay, states = _ChunkedSelectiveScan.chunk_states(u, delta, A2, B, start, span)
            dy_t = dy[:, span].unflatten(2, (groups, -1))  # (B, T, G, E / G)
            g = dy_t[:, :, :, None] * C[:, span, :, :, None]
            g[:, -1] += after
            delta_t = delta[:, span].unflatten(2, (groups, -1))
            ddelta[:, span] = _ChunkedSelectiveScan.adjoints(decay, states, start, g, delta_t, A_g, dA_g).flatten(2)
            after = decay[:, 0] * g[:, 0]
            dC[:, span] = torch.einsum("btgne,btge->btgn", states, dy_t)
            du[:, span] = torch.einsum("btgne,btgn->btge", g, B[:, span]).flatten(2)
            dB[:, span] = torch.einsum("btgne,btge->btgn", g, u[:, span].unflatten(2, (groups, -1)))
        return du, ddelta, dA_g.transpose(1, 2).reshape(A.shape), dB, dC, None


@functools.cache
def mamba_kernel():
    """``mamba_ssm``'s fused selective scan, or None without the package (the ``kernels`` extra, CUDA only)."""
    try:
        from mamba_ssm.ops.selective_scan_interface import selective_scan_fn
    except ImportError:
        return None
    return selective_scan_fn


class Mamba(nn.Module):
    """Mamba's gated block around a selective SSM (Gu & Dao, 2023).

    x (B, L, d_model) -> in-projection to two branches of E = expand * d_model channels, x and z; x through a
    short causal depthwise convolution (``d_conv`` steps) and SiLU; the SSM with Δ = softplus(W_Δ x) (rank
    ``dt_rank``), B = W_B x and C = W_C x computed per token, A = -exp(A_log) per channel and state (initialised
    S4D-Real, A_n = -(n + 1)) and a skip D; the result gated by SiLU(z) and projected back to d_model.

    ``forward(x (B, L, d_model), mask (B, L) or None, return_state) -> (B, L, d_model)`` (and, with
    ``return_state``, the state after the last step). The state is (conv window (B, E, d_conv - 1), SSM state
    (B, E, N)), of constant size: ``step(x_t (B, d_model), state) -> (y_t (B, d_model), state)`` from
    ``initial_state`` gives ``forward``'s output one step at a time.
    """

    def __init__(
        self,
        d_model: int,
        d_state: int = 16,
        expand: int = 2,
        d_conv: int = 4,
        dt_rank: int | None = None,
        dt_min: float = 1e-3,
        dt_max: float = 1e-1,
    ) -> None:
        super().__init__()
        inner = expand * d_model
        self.dt_rank = dt_rank or math.ceil(d_model / 16)
        self.d_state, self.d_conv = d_state, d_conv
        self.in_proj = nn.Linear(d_model, 2 * inner, bias=False)
        self.conv = nn.Conv1d(inner, inner, d_conv, groups=inner)  # weights only: padded causally in forward
        self.x_proj = nn.Linear(inner, self.dt_rank + 2 * d_state, bias=False)
        self.dt_proj = nn.Linear(self.dt_rank, inner)
        # Δ starts log-uniform in [dt_min, dt_max]: the bias is softplus's inverse there, the weight small.
        dt = log_uniform_steps(inner, dt_min, dt_max)
        with torch.no_grad():
            self.dt_proj.bias.copy_(dt + torch.log(-torch.expm1(-dt)))
            nn.init.uniform_(self.dt_proj.weight, -(self.dt_rank**-0.5), self.dt_rank**-0.5)
        self.A_log = nn.Parameter(torch.arange(1, d_state + 1, dtype=torch.float).log().expand(inner, -1).clone())
        self.D = nn.Parameter(torch.ones(inner))
        self.out_proj = nn.Linear(inner, d_model, bias=False)

    def _selection(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Convolved x (..., E) -> Δ (..., E) > 0, B and C (..., N), computed from the token itself."""
        dt, B, C = self.x_proj(x).split([self.dt_rank, self.d_state, self.d_state], dim=-1)
        return F.softplus(self.dt_proj(dt)), B, C

    def _scan_inputs(self, x: torch.Tensor, mask: torch.Tensor | None) -> tuple[torch.Tensor, ...]:
        """x (B, L, d_model) -> the SSM's input u and step Δ (B, L, E), its B and C (B, L, N), the gate z (B, L,
        E) and the convolution's input (B, E, d_conv - 1 + L)."""
        x, z = self.in_proj(x).chunk(2, dim=-1)  # (B, L, E) each
        if mask is not None:
            x = x.masked_fill(~mask[..., None], 0.0)
        before = F.pad(x.transpose(1, 2), (self.d_conv - 1, 0))  # (B, E, d_conv - 1 + L): zeros before the start
        u = F.silu(F.conv1d(before, self.conv.weight, self.conv.bias, groups=before.shape[1])).transpose(1, 2)
        delta, B, C = self._selection(u)
        if mask is not None:
            delta = delta.masked_fill(~mask[..., None], 0.0)  # Ā = 1, B̄ = 0: the state passes padding unchanged
        return u, delta, B, C, z, before

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None, return_state: bool = False):
        u, delta, B, C, z, before = self._scan_inputs(x, mask)
        y, last = selective_scan(u, delta, -self.A_log.exp(), B, C, self.D)
        out = self._output(y, z)
        if not return_state:
            return out
        return out, (before[..., before.shape[-1] - (self.d_conv - 1) :], last)

    def together(self, other: Mamba, x: torch.Tensor, other_x: torch.Tensor, mask: torch.Tensor | None):
        """``(self(x, mask), other(other_x, mask))`` from one scan: the two layers' channels side by side, each
        half with its own B and C (two groups, as Mamba-2's), so the scan's sequential steps are taken once for
        both (half the per-step overhead of two scans on the CPU). A bidirectional block's two directions run so."""
        mine, theirs = self._scan_inputs(x, mask), other._scan_inputs(other_x, mask)
        u, delta = (torch.cat(pair, dim=-1) for pair in zip(mine[:2], theirs[:2]))
        B, C = (torch.stack(pair, dim=2) for pair in zip(mine[2:4], theirs[2:4]))
        A = -torch.cat([self.A_log, other.A_log]).exp()
        y, _ = selective_scan(u, delta, A, B, C, torch.cat([self.D, other.D]))
        y, other_y = y.chunk(2, dim=-1)
        return self._output(y, mine[4]), other._output(other_y, theirs[4])

    def _output(self, y: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        """The SSM's output y gated by SiLU(z) and projected back: (B, L, E) each -> (B, L, d_model)."""
        return self.out_proj(y.to(z.dtype) * F.silu(z))

    def initial_state(self, batch: int, like: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Zeros: the convolution window (B, E, d_conv - 1) and the SSM state (B, E, N), in float32 or wider."""
        inner = self.D.shape[0]
        dtype = torch.promote_types(like.dtype, torch.float32)
        window = like.new_zeros(batch, inner, self.d_conv - 1)
        return window, torch.zeros(batch, inner, self.d_state, dtype=dtype, device=like.device)

    def step(self, x: torch.Tensor, state: tuple[torch.Tensor, torch.Tensor]):
        window, h = state
        x, z = self.in_proj(x).chunk(2, dim=-1)  # (B, E) each
        full = torch.cat([window, x[..., None]], dim=-1)  # (B, E, d_conv): the convolution's whole window
        u = F.silu((full * self.conv.weight[:, 0]).sum(-1) + self.conv.bias)
        delta, B, C = (t.to(h.dtype) for t in self._selection(u))
        u32 = u.to(h.dtype)
        h = (delta[..., None] * -self.A_log.exp().to(h.dtype)).exp() * h + (delta * u32)[..., None] * B[:, None]
        y = (h * C[:, None]).sum(-1) + self.D.to(h.dtype) * u32
        return self.out_proj(y.to(z.dtype) * F.silu(z)), (full[..., 1:], h)


def step_by_step(layer: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """The reference: ``layer``'s recurrence run one step at a time from its initial state, as decoding runs it.

    x (B, L, D) -> (B, L, D'); equals ``layer(x)`` for a layer with ``initial_state`` and ``step``."""
    state = layer.initial_state(x.shape[0], x)
    outputs = []
    for x_t in x.unbind(1):  # whose backward is one stack, where x[:, t] would make a whole gradient per step
        y, state = layer.step(x_t, state)
        outputs.append(y)
    return torch.stack(outputs, dim=1)


# ------------------------------------------------------------------ residual stacks of either layer
@dataclass
class SSMLayout:
    """Config fields shared by the SSM encoders and decoders: a stack of pre-norm residual blocks, x + dropout(
    mixer(norm(x))) (Xiong et al., 2020), around one state-space layer each, and a final norm. Each family's
    layout (:class:`S4DLayout`, :class:`MambaLayout`) adds its own fields and builds its layer (``mixer()``)."""

    layers: int = 2  # stacked residual blocks
    d_model: int = 128  # width of the residual stream
    d_state: int = 16  # state size N per channel
    dt_min: float = 0.001  # the initial steps Δ are log-uniform in [dt_min, dt_max] (time scales 1/Δ)
    dt_max: float = 0.1  # the longest initial step: the shortest time scale
    dropout: float = 0.1  # on every block's output (and on a decoder's embeddings)
    norm: Norm = Norm.layernorm  # layernorm | rmsnorm | dyt, before every block and at the end

    def __post_init__(self) -> None:
        for field in ("layers", "d_model", "d_state"):
            at_least(self, field, 1)
        positive(self, "dt_min")
        no_wider_than(self, "dt_min", "dt_max")
        in_unit_interval(self, "dropout")
        one_of(self, "norm", Norm)


@dataclass
class S4DLayout(SSMLayout):
    """S4D blocks (Gu et al., 2022): :class:`S4DMixer`, an SSM per channel then a gated channel mix."""

    d_state: int = 32  # complex modes N per channel (each with its conjugate: a real state of 2N)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.d_model is not None:
            within_memory(
                self, ("d_model", "layers"), 2 * self.d_model**2 * self.layers * TRAINED_BYTES, "the output maps"
            )

    def mixer(self) -> S4DMixer:
        """One block's state-space layer, (B, L, d_model) -> (B, L, d_model)."""
        return S4DMixer(self.d_model, self.d_state, self.dt_min, self.dt_max)


@dataclass
class MambaLayout(SSMLayout):
    """Mamba blocks (Gu & Dao, 2023): :class:`Mamba`, a gated block around a selective SSM."""

    expand: int = 2  # inner channels E = expand * d_model
    d_conv: int = 4  # width of the causal depthwise convolution before the SSM
    dt_rank: int | None = None  # rank of the projection that computes Δ; null: ceil(d_model / 16)
    norm: Norm = Norm.rmsnorm  # layernorm | rmsnorm (Mamba's) | dyt, before every block and at the end

    def __post_init__(self) -> None:
        super().__post_init__()
        for field in ("expand", "d_conv", "dt_rank"):
            at_least(self, field, 1)
        if self.d_model is not None:
            within_memory(
                self,
                ("d_model", "expand", "layers"),
                3 * self.expand * self.d_model**2 * self.layers * TRAINED_BYTES,
                "the in- and out-projections",
            )

    def mixer(self) -> Mamba:
        """One block's state-space layer, (B, L, d_model) -> (B, L, d_model)."""
        return Mamba(self.d_model, self.d_state, self.expand, self.d_conv, self.dt_rank, self.dt_min, self.dt_max)


class Block(nn.Module):
    """x + dropout(mixer(norm(x))); bidirectional: plus a second mixer's pass over each sequence reversed within
    its real length (as Schuster & Paliwal's, 1997, bidirectional RNN reads it), so every step sees both sides."""

    def __init__(self, cfg: S4DLayout | MambaLayout, bidirectional: bool = False) -> None:
        super().__init__()
        self.norm = make_norm(cfg.norm, cfg.d_model)
        self.mixer = cfg.mixer()
        self.backward_mixer = cfg.mixer() if bidirectional else None
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, x: torch.Tensor, mask: torch.Tensor, return_state: bool = False):
        h = self.norm(x)
        if self.backward_mixer is None:
            out, state = self.mixer(h, mask, return_state=True) if return_state else (self.mixer(h, mask), None)
        else:  # an encoder's: nothing steps it on, so it has no state to return
            out, back = self.mixer.together(self.backward_mixer, h, reverse_padded(h, mask), mask)
            out, state = out + reverse_padded(back, mask), None
        return x + self.dropout(out), state

    def step(self, x: torch.Tensor, state):
        out, state = self.mixer.step(self.norm(x), state)
        return x + self.dropout(out), state


class SSMStack(nn.Module):
    """``cfg.layers`` :class:`Block` s and a final norm: (B, L, d_model) -> (B, L, d_model).

    ``forward(x, mask (B, L), return_state)``: the parallel form; with ``return_state`` (a unidirectional stack's)
    also every block's state after the last step, a list a decoder keeps as its cache. ``step(x_t (B, d_model),
    states) -> (y_t, states)`` advances them by one step.
    """

    def __init__(self, cfg: S4DLayout | MambaLayout, bidirectional: bool = False) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(Block(cfg, bidirectional) for _ in range(cfg.layers))
        self.final_norm = make_norm(cfg.norm, cfg.d_model)

    def forward(self, x: torch.Tensor, mask: torch.Tensor, return_state: bool = False):
        states = []
        for block in self.blocks:
            x, state = block(x, mask, return_state)
            states.append(state)
        return (self.final_norm(x), states) if return_state else self.final_norm(x)

    def initial_states(self, batch: int, like: torch.Tensor) -> list:
        return [block.mixer.initial_state(batch, like) for block in self.blocks]

    def step(self, x: torch.Tensor, states: list) -> tuple[torch.Tensor, list]:
        new = []
        for block, state in zip(self.blocks, states):
            x, state = block.step(x, state)
            new.append(state)
        return self.final_norm(x), new


def padding_first(x: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Move each row's padded steps before its real ones, both kept in order: x (B, S, ...), mask (B, S) -> the
    same, the real steps last. A prefix so arranged ends on its real steps, whatever its padding."""
    batch, length = mask.shape
    positions = torch.arange(length, device=mask.device).expand(batch, length)
    order = torch.where(mask, positions + length, positions).argsort(dim=1)
    index = order.view(batch, length, *([1] * (x.dim() - 2))).expand_as(x)
    return x.gather(1, index), mask.gather(1, order)
