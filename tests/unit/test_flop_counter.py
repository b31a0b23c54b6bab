"""The FLOP counter's one rule: products as torch's FlopCounterMode counts them, attention on every backend, FFTs,
the C scan as its PyTorch form, a fused LSTM layer as the same layer step by step, and one FLOP per output element of
every other operation that computes values."""

from __future__ import annotations

import math
from unittest import mock

import pytest
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.nn.utils.rnn import pack_padded_sequence
from torch.utils.flop_counter import FlopCounterMode

from zoo.nn import recurrence
from zoo.nn.ssm import chunked_selective_scan
from zoo.training.flops import flop_counter

aten = torch.ops.aten


def test_products_are_counted_as_torch_flop_counter_counts_them():
    torch.manual_seed(0)
    conv, linear = torch.nn.Conv1d(8, 16, 3, padding=1), torch.nn.Linear(16, 16)
    x = torch.randn(2, 8, 10, requires_grad=True)

    def step():
        h = linear(conv(x).transpose(1, 2))  # (2, 10, 16): a convolution, then a matrix product
        (h @ h.transpose(1, 2)).sum().backward()

    with FlopCounterMode(display=False) as theirs:
        step()
    with flop_counter() as ours:
        step()
    assert ours.get_total_flops() - ours.element_wise == theirs.get_total_flops() > 0
    assert ours.element_wise > 0  # the bias additions, the sum and their gradients


def test_element_wise_work_is_one_flop_per_output_element_and_moving_values_is_free():
    x = torch.randn(3, 5)
    with flop_counter() as counter:
        y = torch.tanh(x) * 2  # 15 + 15
        z = torch.cat([y.t().contiguous(), y.t()]).clone()  # views, a copy, a concatenation: nothing
        z.sum(0)  # (10, 3) summed to 3 outputs
        torch.zeros(100)
    assert counter.get_total_flops() == counter.element_wise == 15 + 15 + 3


def test_cpu_attention_is_counted_forward_and_backward_as_the_math_backend_counts_it():
    """The issue's case: q, k, v of (8, 4, 30, 32) counted zero on the CPU's fused kernel. Now its products are
    torch's formula (as the math backend's batched products count) and its softmax one FLOP a score each way."""
    q, k, v = (torch.randn(8, 4, 30, 32, requires_grad=True) for _ in range(3))
    counts = {}
    for backend in (SDPBackend.FLASH_ATTENTION, SDPBackend.MATH):
        with sdpa_kernel(backend), flop_counter() as counter:
            torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True).sum().backward()
        counts[backend] = counter
    fused, math_backend = counts[SDPBackend.FLASH_ATTENTION], counts[SDPBackend.MATH]
    scores, products = 8 * 4 * 30 * 30, 2 * 2 * 8 * 4 * 30 * 30 * 32  # two products of 2 B H T S d forward
    assert fused.counts[aten._scaled_dot_product_flash_attention_for_cpu] == products + scores
    backward = fused.counts[aten._scaled_dot_product_flash_attention_for_cpu_backward]
    assert backward == 2 * products + scores  # four products, as the math backend's (not the scores recomputed)
    assert fused.get_total_flops() == pytest.approx(math_backend.get_total_flops(), rel=0.05)
    assert math_backend.get_total_flops() - math_backend.element_wise == 3 * products


def test_a_real_fft_is_charged_two_and_a_half_n_log_n_per_transform():
    x = torch.randn(3, 8, 128)  # 24 transforms of length 256 (zero-padded)
    with flop_counter() as counter:
        torch.fft.rfft(x, n=256)
    assert counter.counts[aten._fft_r2c] == 2.5 * 24 * 256 * math.log2(256)


def test_an_fft_convolution_costs_more_than_nothing_forward_and_backward():
    x = torch.randn(2, 4, 64, requires_grad=True)
    with flop_counter() as counter:
        torch.fft.irfft(torch.fft.rfft(x, n=128) * 2, n=128).sum().backward()
    counts = {str(op): flops for op, flops in counter.counts.items()}
    assert {"aten._fft_r2c", "aten._fft_c2r", "aten._fft_c2c"} <= set(counts)
    assert all(counts[op] > 0 for op in ("aten._fft_r2c", "aten._fft_c2r", "aten._fft_c2c"))


def test_a_depthwise_convolution_backward_costs_twice_its_forward_products():
    """Its input's gradient and its weights' gradient each take the forward's multiply-adds (torch's formula
    charges the weights' gradient as if every channel met every other: 64 times too much here)."""
    conv = torch.nn.Conv1d(64, 64, 4, groups=64, bias=False)
    x = torch.randn(2, 64, 50, requires_grad=True)
    with flop_counter() as forward:
        y = conv(x)
    with flop_counter() as backward:
        y.backward(torch.ones_like(y))
    assert backward.counts[aten.convolution_backward] == 2 * forward.counts[aten.convolution] > 0


def scan_flops() -> int:
    torch.manual_seed(0)
    u, delta = torch.randn(2, 40, 16, requires_grad=True), torch.rand(2, 40, 16, requires_grad=True)
    A = (-torch.rand(16, 4)).requires_grad_()
    B, C = torch.randn(2, 40, 4, requires_grad=True), torch.randn(2, 40, 4, requires_grad=True)
    with flop_counter() as counter:
        y, last = chunked_selective_scan(u, delta, A, B, C, chunk=8)
        (y.sum() + last.sum()).backward()
    return counter.get_total_flops()


@pytest.mark.skipif(recurrence.compiled() is None, reason="no C compiler: the scan runs in PyTorch")
def test_the_c_scan_is_charged_what_its_pytorch_form_counts():
    """A dispatch-mode counter cannot see inside the C loop; as operators of their own its forward and backward
    are charged by formula, exactly what the PyTorch form of the same chunks is counted."""
    in_c = scan_flops()
    with mock.patch.object(recurrence, "available_for", return_value=False):
        in_pytorch = scan_flops()
    assert in_c == in_pytorch > 0


def test_a_fused_lstm_layer_is_counted_as_the_same_layer_step_by_step():
    """torch runs an unpadded batch through oneDNN's fused LSTM layer (one op: its products were invisible) and a
    batch of uneven lengths step by step; the forward passes count the same per token."""
    torch.manual_seed(0)
    lstm = torch.nn.LSTM(8, 16, batch_first=True)
    x = torch.randn(4, 5, 8)
    with flop_counter() as fused:
        lstm(x)
    with flop_counter() as stepped:
        lstm(pack_padded_sequence(x, torch.tensor([5, 4, 3, 2]), batch_first=True))
    assert aten.mkldnn_rnn_layer in fused.counts and aten.mkldnn_rnn_layer not in stepped.counts
    assert fused.get_total_flops() / 20 == stepped.get_total_flops() / 14  # per token: 20 and 14 tokens
