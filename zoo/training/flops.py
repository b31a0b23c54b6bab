"""What a FLOP is: one rule for every operation a training step runs, whichever family runs it.

- **Products** (matrix products, convolutions, attention's two products): ``torch.utils.flop_counter``'s formulas,
  two FLOPs per multiply-add. Attention is counted by the same formula on every backend: the CPU's fused kernel
  (``_scaled_dot_product_flash_attention_for_cpu`` and its backward, which torch's table leaves out: it counted
  zero), the GPU's flash, memory-efficient and cuDNN kernels (torch's table), and the math backend, whose batched
  products are counted as products. A grouped convolution's backward pass is counted per group (torch's formula
  charges a depthwise one's weight gradient channels times over).
- **Fused recurrent layers**: oneDNN's LSTM layer (which torch runs for some batches and not for others) as the
  same layer counts step by step: its products, and 13 FLOPs a hidden unit for its cell; backward twice forward.
- **Fast Fourier transforms** (S4D's long convolution): 5 n log2 n real FLOPs for a complex transform of length n,
  half that for a real one (Cooley & Tukey, 1965; the convention of FFTW's benchmarks).
- **Element-wise work** (activations, gates, norms, softmax, losses, reductions, dropout, a scan's recurrence): one
  FLOP per output element of every operation that computes values, as fvcore's element-wise handles
  (``fvcore.nn.jit_handles.elementwise_flop_counter``) and DeepSpeed's FLOPs profiler (``numel`` of the output for
  activations and element-wise arithmetic) count it. Operations that only move, copy, index, reshape or create
  values (:data:`MOVES`, views) cost nothing. A fused attention kernel's softmax is counted the same way, one FLOP
  per score forward and one backward, and its backward pass as the math backend's four products (not the scores
  the fused kernels recompute), so the fused and math backends agree to the math backend's few extra element-wise
  passes (scaling, masking: 3 % at a head width of 32).
- **Mamba's selective scan in C** (:mod:`zoo.nn.recurrence`, called as the operators ``zoo::selective_scan`` and
  ``zoo::selective_scan_backward``): what its PyTorch form is counted by the rule above, so the count does not
  depend on whether the machine compiled the scan.

The optimiser's update is not counted (as in the 6N-per-token approximation of Kaplan et al., 2020): a budget is
the model's forward and backward work.
"""

from __future__ import annotations

import collections
import math

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import conv_flop_count, flop_registry, sdpa_flop_count

from zoo.nn import recurrence

aten = torch.ops.aten


def _fft_flops(real: bool, length_from_output: bool = False):
    """A formula for one FFT op: 5 n log2 n per complex transform of length n over the given dims, 2.5 n log2 n
    for a real one, times the transforms (the tensor's other elements)."""

    def count(input_shape, dim, *args, out_shape=None, **kwargs) -> int:
        shape = out_shape if length_from_output else input_shape
        n = math.prod(shape[d] for d in dim)
        transforms = math.prod(shape) // max(n, 1)
        return int((2.5 if real else 5.0) * transforms * n * math.log2(max(n, 2)))

    return count


def _conv_backward_flops(
    grad_out_shape,
    x_shape,
    w_shape,
    _bias,
    _stride,
    _padding,
    _dilation,
    transposed,
    _output_padding,
    _groups,
    output_mask,
    out_shape,
    **kwargs,
) -> int:
    """A convolution's backward pass: its input's gradient (a transposed convolution) and its weights' (one
    multiply-add per multiply-add of the forward pass, so the forward's count)."""
    count = 0
    if output_mask[0]:
        count += conv_flop_count(grad_out_shape, w_shape, out_shape[0], not transposed)
    if output_mask[1]:
        count += conv_flop_count(x_shape, w_shape, grad_out_shape, transposed)
    return count


def _scores(query_shape, key_shape) -> int:
    """The attention scores of (B, H, T, d) queries against (B, H', S, d) keys: B H T S."""
    return math.prod(query_shape[:-1]) * key_shape[-2]


def _attention(query_shape, key_shape, value_shape, *args, out_shape=None, **kwargs) -> int:
    """A fused attention kernel's forward pass: its two products and its softmax (one FLOP per score)."""
    return sdpa_flop_count(query_shape, key_shape, value_shape) + _scores(query_shape, key_shape)


def _attention_backward(grad_out_shape, query_shape, key_shape, value_shape, *args, out_shape=None, **kwargs) -> int:
    """A fused attention kernel's backward pass: the four products of the gradients (twice the forward's, as the
    math backend runs them: the fused kernels' recomputation of the scores is an implementation's choice, not
    counted, so that every backend counts the same) and its softmax's gradient (one FLOP a score)."""
    return 2 * sdpa_flop_count(query_shape, key_shape, value_shape) + _scores(query_shape, key_shape)


#: FLOPs per token and hidden unit of an LSTM cell's element-wise work, as the rule counts its PyTorch form: the
#: gates' sum (4), their activations (4), the cell's update (3) and the output (2).
LSTM_CELL_ELEMENT_WISE = 13


def _lstm_layer(input_shape, w_ih_shape, w_hh_shape, *args, out_shape=None, **kwargs) -> int:
    """oneDNN's fused LSTM layer (one direction), which torch runs for an unpacked or evenly packed batch: per token
    the two products of the gates (input and hidden) and the cell's element-wise work, as the same layer counts
    when torch runs it step by step (for a packed batch of uneven lengths)."""
    tokens, hidden = math.prod(input_shape[:-1]), w_hh_shape[1]
    return tokens * (2 * w_ih_shape[0] * (w_ih_shape[1] + hidden) + LSTM_CELL_ELEMENT_WISE * hidden)


def _lstm_layer_backward(input_shape, w_ih_shape, w_hh_shape, *args, out_shape=None, **kwargs) -> int:
    """Its backward pass: twice the forward (the gradients of the inputs and of the weights, each a product the
    size of the forward's; the gates' derivatives)."""
    return 2 * _lstm_layer(input_shape, w_ih_shape, w_hh_shape)


def _scan(u_shape, _delta, a2_shape, *args, out_shape=None, **kwargs) -> int:
    """recurrence.scan (zoo::selective_scan), as its PyTorch form (zoo.nn.ssm._ChunkedSelectiveScan) is counted:
    per state element Δ_t A, its exp2, the product u_t B_t, the step decay_t h_{t-1} + it (one addcmul) and the
    product with C_t (two FLOPs a multiply-add)."""
    return 6 * math.prod(u_shape[:2]) * math.prod(a2_shape)


def _scan_backward(u_shape, _delta, _a, a2_shape, *args, out_shape=None, **kwargs) -> int:
    """recurrence.scan_backward (zoo::selective_scan_backward), as its PyTorch form is counted: per state element
    the chunk's states again (4), the adjoint's C_t dy_t (1), its step, the products with the decay, h_{t-1}, Δ and
    A (5), and the three products for the gradients of u, B and C (6); per channel the sum into Δ's gradient; per
    chunk the step across its border (2 per state of a step, one of them the adjoint step counted above) and the
    sums into A's gradient (2 per element of A)."""
    chunk = args[-1]
    (batch, length, channels), elements = u_shape, math.prod(a2_shape)
    chunks = -(-length // chunk)
    per_state, per_chunk = 16 * batch * length * elements, chunks * (batch + 2) * elements
    return per_state + per_chunk + batch * length * channels


def _shape(value):
    """A tensor's shape, in place of the tensor, at any depth of tuples and lists; other values as they are."""
    if isinstance(value, torch.Tensor):
        return value.shape
    if isinstance(value, (tuple, list)):
        return type(value)(_shape(v) for v in value)
    return value


def on_shapes(formula):
    """``formula`` called with its op's shapes (``out_shape`` too) in place of its tensors, as torch's
    ``shape_wrapper`` calls it, without its pytree walk: that took a third of the time counting a batch took."""

    def count(*args, out_val=None, **kwargs) -> int:
        kwargs = {key: _shape(value) for key, value in kwargs.items()}
        return formula(*_shape(args), out_shape=_shape(out_val), **kwargs)

    return count


_ATTENTION = [
    aten._scaled_dot_product_flash_attention_for_cpu,
    aten._scaled_dot_product_flash_attention,
    aten._scaled_dot_product_efficient_attention,
    aten._scaled_dot_product_cudnn_attention,
]
_ATTENTION_BACKWARD = [
    aten._scaled_dot_product_flash_attention_for_cpu_backward,
    aten._scaled_dot_product_flash_attention_backward,
    aten._scaled_dot_product_efficient_attention_backward,
    aten._scaled_dot_product_cudnn_attention_backward,
]

#: The formula of each op that is not element-wise: torch's, with attention on every backend, FFTs, the C scan
#: and the grouped convolution's backward pass added or replaced.
FORMULAS = {
    **{op: on_shapes(raw) if (raw := getattr(f, "__wrapped__", None)) else f for op, f in flop_registry.items()},
    **{op: on_shapes(_attention) for op in _ATTENTION},
    **{op: on_shapes(_attention_backward) for op in _ATTENTION_BACKWARD},
    aten._fft_r2c: on_shapes(_fft_flops(real=True)),
    aten._fft_c2r: on_shapes(_fft_flops(real=True, length_from_output=True)),
    aten._fft_c2c: on_shapes(_fft_flops(real=False)),
    aten.convolution_backward: on_shapes(_conv_backward_flops),
    aten.mkldnn_rnn_layer: on_shapes(_lstm_layer),
    aten.mkldnn_rnn_layer_backward: on_shapes(_lstm_layer_backward),
    recurrence.SCAN_OPS[0]: on_shapes(_scan),
    recurrence.SCAN_OPS[1]: on_shapes(_scan_backward),
}

#: Operations that only move, copy, index, reshape or create values (views aside): no arithmetic, no FLOPs.
MOVES = frozenset(
    {
        aten.clone,
        aten.copy_,
        aten._to_copy,
        aten.cat,
        aten.stack,
        aten.constant_pad_nd,
        aten.flip,
        aten.roll,
        aten.repeat,
        aten.gather,
        aten.index,
        aten.index_select,
        aten.index_put_,
        aten.scatter_,
        aten.select_backward,
        aten.slice_backward,
        aten.embedding,
        aten.sort,
        aten._pack_padded_sequence,
        aten._unsafe_view,
        aten.unsafe_split,
        aten.empty,
        aten.empty_like,
        aten.empty_strided,
        aten.new_empty,
        aten.new_empty_strided,
        aten.zeros,
        aten.zeros_like,
        aten.new_zeros,
        aten.ones,
        aten.ones_like,
        aten.new_ones,
        aten.full,
        aten.full_like,
        aten.fill_,
        aten.zero_,
        aten.arange,
        aten.scalar_tensor,
        aten.complex,
        aten._local_scalar_dense,
        aten.lift_fresh_copy,
    }
)

#: What a dispatch mode is asked about a tensor's layout, not work done (as FlopCounterMode leaves them alone).
_LAYOUT_QUERIES = {
    aten.is_contiguous.default,
    aten.is_contiguous.memory_format,
    aten.is_strides_like_format.default,
    aten.is_non_overlapping_and_dense.default,
    aten.size.default,
    aten.sym_size.default,
    aten.stride.default,
    aten.sym_stride.default,
    aten.storage_offset.default,
    aten.sym_storage_offset.default,
    aten.numel.default,
    aten.sym_numel.default,
    aten.dim.default,
    torch.ops.prim.layout.default,
}


#: Operations found to have a kernel of their own, not a composite of others to count instead. Whether an op
#: decomposes depends on the op alone, so each is asked once: asking took half of a counted batch's time.
_KERNELS = {torch.ops.prim.device.default}


def output_elements(out) -> int:
    """The elements of an op's tensor outputs (one tensor, or a tuple or list of them)."""
    outputs = out if isinstance(out, (tuple, list)) else (out,)
    return sum(t.numel() for t in outputs if isinstance(t, torch.Tensor))


def element_wise(func) -> bool:
    """Whether ``func`` computes values element by element (or reduces them) rather than moving them."""
    return not func.is_view and func._overloadpacket not in MOVES


class FlopCounter(TorchDispatchMode):
    """Total FLOPs of the operations run inside it, by the module's rule; ``counts`` keeps them by operation and
    ``element_wise`` the part counted one FLOP per output element.

    No books per module (FlopCounterMode's hook every module's inputs and outputs, which made counting a
    step-by-step recurrent decoder's batch three times as slow as running it).
    """

    def __init__(self) -> None:
        super().__init__()
        self.counts: collections.Counter = collections.Counter()  # FLOPs by operation (aten.mm, ...)
        self.element_wise = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _LAYOUT_QUERIES:
            return NotImplemented
        formula = FORMULAS.get(func._overloadpacket)
        if formula is None and func not in _KERNELS:  # a composite op: count its parts
            with self:
                parts = func.decompose(*args, **kwargs)
            if parts is not NotImplemented:
                return parts
            _KERNELS.add(func)
        out = func(*args, **kwargs)
        if formula is not None:
            self.counts[func._overloadpacket] += formula(*args, **kwargs, out_val=out)
        elif isinstance(func, torch._ops.OpOverload) and element_wise(func):
            elements = output_elements(out)
            self.counts[func._overloadpacket] += elements
            self.element_wise += elements
        return out

    def get_total_flops(self) -> int:
        return sum(self.counts.values())


def flop_counter() -> FlopCounter:
    """A FLOP counter by the module's rule."""
    return FlopCounter()
