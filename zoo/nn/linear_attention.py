"""Linear attention (Katharopoulos et al., 2020) and its decayed forms, retention (Sun et al., 2023) and gated linear
attention (Yang et al., 2024): attention computed as a recurrence over a state of constant size.

Softmax attention weighs key j for query i by exp(q_i . k_j). Linear attention weighs it by phi(q_i) . phi(k_j)
for a non-negative feature map phi, so the sum over keys factorises and a causal layer is an RNN
("Transformers are RNNs")::

    o_i = phi(q_i)^T S_i / phi(q_i)^T z_i,    S_i = a_i * S_{i-1} + phi(k_i) v_i^T,    z_i = a_i * z_{i-1} + phi(k_i)

with the state S (d_k x d_v) and the normaliser z (d_k) per head. The decay a_i (one factor per row of S) is what
the gates differ in:

* ``none``: a_i = 1, every past token counts alike (Katharopoulos et al., 2020);
* ``retention``: a_i = gamma_h, fixed per head, gamma_h = 1 - 2^(-5-h) (RetNet; Sun et al., 2023): a token
  ``n`` steps back counts gamma_h^n, so heads see from about 32 to a few hundred tokens back;
* ``gla``: a_i = sigmoid(x_i W_1 W_2 + b)^(1/tau), one per key dimension, computed from the token (rank 16,
  tau = 16; Yang et al., 2024): the layer decides what to forget.

The normaliser is carried as one more value column that is always 1, so z is the last column of a single state
(B, H, d_k, d_v + 1). RetNet and GLA divide by a group norm instead; with a non-negative phi, dividing by
phi(q)^T z is RetNet's own score normalisation (the sum of the absolute decayed scores), so all three keep it and
share one scale. Their output gates are left out: the gates here are the decays.

Training runs the parallel form chunkwise (Hua et al., 2022; Sun et al., 2023; Yang et al., 2024): the sequence is
cut into chunks of C tokens; within a chunk the (C, C) matrix of decayed scores is formed as attention forms its
matrix (parallel, quadratic in C only), and between chunks the state is carried by the recurrence, once per chunk.
That costs O(L C d + L d^2) time and O(L C) memory per head: linear in the length L where softmax attention is
quadratic, with dense matrix products a token-by-token recurrence would lack. Every decay is taken as exp of a
later cumulative log-gate minus an earlier one (an exponent <= 0), so nothing overflows. ``gla``'s decay differs
per key dimension, so its scores within a chunk need a (C, C, d_k) decay tensor; it is formed only within
sub-chunks of :data:`SUB_CHUNK` tokens, each chunk being scanned chunkwise in turn (the secondary chunking of Yang
et al., 2024), and gla still costs a few times the scalar forms on a CPU (benchmarks/linear_attention_speed.py).

Non-causal self-attention (an encoder's): without decay, S and z are sums over all real tokens; with one, the
causal scan plus the same scan over the reversed sequence, less each token's own term (counted in both), decays
keys on both sides by their distance. Cross-attention over an encoder memory has no distance to decay by: the
memory is summarised once per sentence into S and z, and each target token reads that constant-size summary.

Padding: a padded key's feature vector is zeroed (it adds nothing to S or z) and its decay is 1, so it is
invisible to every real position, in either direction.

With flash-linear-attention (``fla``) installed and tensors on CUDA, the causal scan runs its chunkwise Triton
kernels (``chunk_simple_gla`` for one decay per head, ``chunk_gla`` for one per key dimension); it is imported at
first use, never when missing. The PyTorch form here is what runs everywhere else.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from zoo.config.checks import TRAINED_BYTES, Choice, at_least, in_unit_interval, multiple_of, one_of, within_memory
from zoo.nn.norms import Norm
from zoo.nn.transformer import Activation, NormPosition

#: Added to the normaliser phi(q)^T z, which is 0 only when no real key precedes.
EPS = 1e-6
#: Sub-chunk length for decays per key dimension (gla): their decay tensor costs this times F numbers per token.
SUB_CHUNK = 8
#: The rank of gla's gate projection and the temperature tau of its gate (Yang et al., 2024).
GATE_RANK, GATE_TEMPERATURE = 16, 16.0


class FeatureMap(Choice):
    """The non-negative map phi that queries and keys pass through."""

    elu = "elu"  # elu(x) + 1 (Katharopoulos et al., 2020): d_k features, all positive
    dpfp = "dpfp"  # Schlag et al. (2021), nu = 1: relu([x, -x]) times itself rolled by one, 2 d_k features


class Gate(Choice):
    """How the state decays from one token to the next (the module docstring)."""

    none = "none"
    retention = "retention"
    gla = "gla"


def feature_map(x: torch.Tensor, kind: FeatureMap) -> torch.Tensor:
    """(..., d) -> (..., d) for ``elu``, (..., 2 d) for ``dpfp``; every feature >= 0."""
    if kind == FeatureMap.elu:
        return F.elu(x) + 1
    r = F.relu(torch.cat([x, -x], dim=-1))
    return r * r.roll(1, dims=-1)


def feature_width(head_dim: int, kind: FeatureMap) -> int:
    return head_dim if kind == FeatureMap.elu else 2 * head_dim


# ------------------------------------------------------------------ the two forms of the recurrence
def chunkwise(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, log_decay: torch.Tensor, chunk: int) -> torch.Tensor:
    """o_t = q_t^T S_t, S_t = exp(g_t) * S_{t-1} + k_t v_t^T from S_0 = 0, for every t, chunk by chunk.

    q, k (B, H, L, F), v (B, H, L, E), log_decay g <= 0 (B, H, L, 1) (one decay per head and step) or (B, H, L, F)
    (one per key dimension) -> o (B, H, L, E).
    """
    length = q.shape[2]
    chunk = min(chunk, length)
    pad = -length % chunk
    if pad:  # zero keys with no decay at the end change nothing before them
        q, k, v, log_decay = (F.pad(x, (0, 0, 0, pad)) for x in (q, k, v, log_decay))
    q, k, v, g = (x.unflatten(2, (-1, chunk)) for x in (q, k, v, log_decay))  # (B, H, N, C, .)
    b = g.cumsum(3)  # log decay from the chunk's start to step i, inclusive
    out = within_chunks(q, k, v, g, b)
    # Between chunks: what each chunk adds to the state, carried forward by the recurrence once per chunk.
    last = b[..., -1:, :]  # (B, H, N, 1, 1|F)
    added = (k * (last - b).exp()).transpose(-1, -2) @ v  # (B, H, N, F, E)
    kept = last.exp().transpose(-1, -2)  # (B, H, N, 1|F, 1): the decay of a whole chunk
    states = [torch.zeros_like(added[:, :, 0])]
    for n in range(added.shape[2] - 1):
        states.append(kept[:, :, n] * states[-1] + added[:, :, n])
    out = out + (q * b.exp()) @ torch.stack(states, dim=2)  # the state at each chunk's start, decayed to step i
    return out.flatten(2, 3)[:, :, :length]


def within_chunks(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """What each chunk's own keys give its queries: q, k (B, H, N, C, F), v (B, H, N, C, E), the log decays g and
    their cumulative sums b within the chunk (B, H, N, C, 1|F) -> (B, H, N, C, E).

    Key j reaches query i >= j decayed by exp(b_i - b_j): a (C, C) matrix of decayed scores, as attention's. A
    decay per key dimension makes that a (C, C, F) tensor, C F numbers per token; so a chunk longer than
    :data:`SUB_CHUNK` is itself scanned chunkwise, in sub-chunks of that length (Yang et al.'s secondary chunking).
    """
    _, heads, chunks, chunk, _ = q.shape
    if g.shape[-1] > 1 and chunk > SUB_CHUNK:
        out = chunkwise(*(x.flatten(1, 2) for x in (q, k, v, g)), SUB_CHUNK)  # the chunks as a batch of sequences
        return out.unflatten(1, (heads, chunks))
    causal = torch.ones(chunk, chunk, dtype=torch.bool, device=q.device).tril()
    decay = (b.unsqueeze(4) - b.unsqueeze(3)).masked_fill(~causal[:, :, None], -math.inf).exp()  # (B,H,N,C,C,1|F)
    if g.shape[-1] == 1:
        scores = (q @ k.transpose(-1, -2)) * decay[..., 0]
    else:
        scores = torch.einsum("...id,...jd,...ijd->...ij", q, k, decay)
    return scores @ v


def recurrent_step(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, log_decay: torch.Tensor, state: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """One step of the recurrence :func:`chunkwise` computes in parallel.

    q, k (B, H, F), v (B, H, E), log_decay (B, H, 1|F), state (B, H, F, E) -> (o (B, H, E), new state).
    """
    state = log_decay.exp().unsqueeze(-1) * state + k.unsqueeze(-1) * v.unsqueeze(-2)
    return (q.unsqueeze(-2) @ state).squeeze(-2), state


def bidirectional(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, log_decay: torch.Tensor, chunk: int
) -> torch.Tensor:
    """Every key reaches every query, decayed by the gates between them: the causal scan, the scan of the
    reversed sequence, less each token's own term (in both). Shapes as :func:`chunkwise`'s."""
    forward = causal_scan(q, k, v, log_decay, chunk)
    backward = causal_scan(*(x.flip(2) for x in (q, k, v, log_decay)), chunk).flip(2)
    return forward + backward - (q * k).sum(-1, keepdim=True) * v


def causal_scan(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, log_decay: torch.Tensor, chunk: int) -> torch.Tensor:
    """:func:`chunkwise`, through fla's kernels on CUDA when it is installed."""
    kernels = fla_kernels() if q.is_cuda else None
    if kernels is None:
        return chunkwise(q, k, v, log_decay, chunk)
    per_head, per_dimension = kernels
    q, k, v, g = (x.transpose(1, 2) for x in (q, k, v, log_decay))  # fla's layout: (B, L, H, .)
    if g.shape[-1] == 1:
        out, _ = per_head(q, k, v, g=g[..., 0], scale=1.0)
    else:
        out, _ = per_dimension(q, k, v, g=g, scale=1.0)
    return out.transpose(1, 2)


@functools.cache
def fla_kernels():
    """fla's chunkwise kernels (one decay per head, one per key dimension), or None without flash-linear-attention."""
    try:
        from fla.ops.gla import chunk_gla
        from fla.ops.simple_gla import chunk_simple_gla
    except ImportError:
        return None
    return chunk_simple_gla, chunk_gla


# ------------------------------------------------------------------ the layers
class _Heads(nn.Module):
    """Query, key and value projections split into heads, phi, and the output of a normalised read."""

    def __init__(self, d_model: int, heads: int, features: FeatureMap, kdim: int | None = None) -> None:
        super().__init__()
        if heads < 1 or d_model % heads:
            raise ValueError(f"d_model={d_model} is not divisible by heads={heads}; choose heads that divide d_model")
        self.heads, self.head_dim, self.features = heads, d_model // heads, features
        self.feature_dim = feature_width(self.head_dim, features)
        self.q_proj, self.out_proj = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
        self.kv_proj = nn.Linear(kdim or d_model, 2 * d_model)
        for proj in (self.q_proj, self.kv_proj, self.out_proj):
            nn.init.xavier_uniform_(proj.weight)
            nn.init.zeros_(proj.bias)

    def split(self, x: torch.Tensor) -> torch.Tensor:
        """(B, L, H * d) -> (B, H, L, d)."""
        return x.unflatten(-1, (self.heads, -1)).transpose(1, 2)

    def queries(self, x: torch.Tensor) -> torch.Tensor:
        """(B, L, d_model) -> phi(q) (B, H, L, F)."""
        return feature_map(self.split(self.q_proj(x)), self.features)

    def keys_values(self, x: torch.Tensor, mask: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        """(B, L, kdim), mask (B, L) -> phi(k) (B, H, L, F), zero where padded, and [v, 1] (B, H, L, d + 1)."""
        k, v = self.kv_proj(x).chunk(2, dim=-1)
        k = feature_map(self.split(k), self.features)
        if mask is not None:
            k = k * mask[:, None, :, None]
        v = self.split(v)
        return k, torch.cat([v, torch.ones_like(v[..., :1])], dim=-1)

    def output(self, read: torch.Tensor) -> torch.Tensor:
        """phi(q)^T [S, z] (B, H, L, d + 1) -> phi(q)^T S / phi(q)^T z with the heads merged and projected (B, L,
        d_model)."""
        out = read[..., :-1] / (read[..., -1:] + EPS)
        return self.out_proj(out.transpose(1, 2).flatten(2))


class LinearAttention(_Heads):
    """Multi-head linear self-attention with a decay gate, in its parallel and its recurrent form.

    ``forward(x (B, L, d_model), mask (B, L) or None, causal) -> (B, L, d_model)``; the causal form equals
    ``initial_state(B)`` then ``step(x_t (B, d_model), state) -> (out (B, d_model), state)`` for t = 0, 1, ...
    where the state is (B, H, F, d_head + 1): S with z as its last column, F the feature width.
    """

    def __init__(
        self,
        d_model: int,
        heads: int,
        features: FeatureMap = FeatureMap.elu,
        gate: Gate = Gate.none,
        chunk: int = 64,
    ) -> None:
        super().__init__(d_model, heads, features)
        self.gate, self.chunk = gate, chunk
        if gate == Gate.retention:
            gamma = 1 - 2.0 ** (-5 - torch.arange(heads, dtype=torch.float))
            self.register_buffer("log_gamma", gamma.log()[None, :, None, None], persistent=False)
        elif gate == Gate.gla:
            self.gate_proj = nn.Sequential(
                nn.Linear(d_model, GATE_RANK, bias=False), nn.Linear(GATE_RANK, heads * self.feature_dim)
            )

    def log_decay(self, x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        """(B, L, d_model) -> log a (B, H, L, 1) or, for gla, (B, H, L, F); 0 (no decay) where padded."""
        batch, length, _ = x.shape
        if self.gate == Gate.gla:
            g = self.split(F.logsigmoid(self.gate_proj(x))) / GATE_TEMPERATURE
        elif self.gate == Gate.retention:
            g = self.log_gamma.to(x.dtype).expand(batch, -1, length, 1)
        else:
            g = x.new_zeros(batch, self.heads, length, 1)
        return g if mask is None else g * mask[:, None, :, None]

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None, causal: bool = False) -> torch.Tensor:
        q, (k, v) = self.queries(x), self.keys_values(x, mask)
        if causal:
            read = causal_scan(q, k, v, self.log_decay(x, mask), self.chunk)
        elif self.gate == Gate.none:
            read = q @ (k.transpose(-1, -2) @ v)
        else:
            read = bidirectional(q, k, v, self.log_decay(x, mask), self.chunk)
        return self.output(read)

    def initial_state(self, batch: int, like: torch.Tensor) -> torch.Tensor:
        """The empty state (B, H, F, d_head + 1), of ``like``'s dtype and device."""
        return like.new_zeros(batch, self.heads, self.feature_dim, self.head_dim + 1)

    def step(self, x: torch.Tensor, state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = x[:, None]
        q, (k, v), g = self.queries(x), self.keys_values(x, None), self.log_decay(x, None)
        read, state = recurrent_step(q[:, :, 0], k[:, :, 0], v[:, :, 0], g[:, :, 0], state)
        return self.output(read[:, :, None])[:, 0], state


class LinearCrossAttention(_Heads):
    """Multi-head linear attention over an encoder memory, read through its constant-size summary.

    ``summarise(memory (B, S, kdim), mask (B, S)) -> (B, H, F, d_head + 1)``: S = sum_j phi(k_j) v_j^T over the real
    positions, with z = sum_j phi(k_j) as its last column, once per sentence. ``forward(x (B, T, d_model),
    summary) -> (B, T, d_model)``: every query reads it, in O(F d_head) per head whatever the source length.
    """

    def __init__(self, d_model: int, heads: int, features: FeatureMap = FeatureMap.elu, kdim: int | None = None):
        super().__init__(d_model, heads, features, kdim)

    def summarise(self, memory: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        k, v = self.keys_values(memory, mask)
        return k.transpose(-1, -2) @ v

    def forward(self, x: torch.Tensor, summary: torch.Tensor) -> torch.Tensor:
        return self.output(self.queries(x) @ summary)


# ------------------------------------------------------------------ the block layout
@dataclass
class LinearLayout:
    """Config fields shared by the linear_transformer encoder and decoder: a Transformer's block (Vaswani et al.,
    2017) with linear attention in place of softmax attention."""

    layers: int = 2  # number of stacked blocks
    d_model: int = 128  # width of every block
    heads: int = 4  # attention heads per block; must divide d_model
    ff_dim: int = 512  # hidden width of the feed-forward sublayer
    activation: Activation = Activation.relu  # of the feed-forward sublayer
    dropout: float = 0.1  # on every sublayer output, inside the feed-forward sublayer and on decoder embeddings
    # pre: x + f(norm(x)) and a final norm (Xiong et al., 2020) | post: norm(x + f(x)) (Vaswani et al., 2017)
    norm_position: NormPosition = NormPosition.pre
    norm: Norm = Norm.layernorm  # layernorm | rmsnorm | dyt
    # none: linear attention (Katharopoulos et al., 2020) | retention: a fixed decay per head (Sun et al., 2023)
    # | gla: a decay per key dimension computed from each token (Yang et al., 2024)
    gate: Gate = Gate.none
    feature_map: FeatureMap = FeatureMap.elu  # elu: elu + 1 (Katharopoulos et al.) | dpfp (Schlag et al., 2021)
    chunk_size: int = 64  # tokens per chunk of the parallel form: (C, C) scores per chunk, the state between them

    def __post_init__(self) -> None:
        for field in ("layers", "d_model", "heads", "ff_dim", "chunk_size"):
            at_least(self, field, 1)
        multiple_of(self, "d_model", "heads", "choose heads that divide d_model")
        in_unit_interval(self, "dropout")
        one_of(self, "activation", Activation)
        one_of(self, "norm_position", NormPosition)
        one_of(self, "norm", Norm)
        one_of(self, "gate", Gate)
        one_of(self, "feature_map", FeatureMap)
        if self.d_model is not None:
            within_memory(
                self,
                ("d_model", "ff_dim", "layers"),
                2 * self.d_model * self.ff_dim * self.layers * TRAINED_BYTES,
                "the feed-forward weights in training",
            )
