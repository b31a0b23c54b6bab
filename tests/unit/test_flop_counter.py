"""The FLOP counter counts as torch's FlopCounterMode does, and charges fast Fourier transforms (a long
convolution's cost), which torch's counter leaves out."""

from __future__ import annotations

import math

import torch
from torch.utils.flop_counter import FlopCounterMode

from zoo.training.compute import flop_counter


def test_the_count_is_torch_flop_counters_forward_and_backward():
    torch.manual_seed(0)
    conv, linear = torch.nn.Conv1d(8, 16, 3, padding=1), torch.nn.Linear(16, 16)
    x = torch.randn(2, 8, 10, requires_grad=True)

    def step():
        h = linear(conv(x).transpose(1, 2))  # (2, 10, 16): a convolution, then a matrix product
        attended = torch.nn.functional.scaled_dot_product_attention(h, h, h)  # batched products
        (attended @ h.transpose(1, 2)).sum().backward()

    with FlopCounterMode(display=False) as theirs:
        step()
    with flop_counter() as ours:
        step()
    assert ours.get_total_flops() == theirs.get_total_flops() > 0


def test_a_real_fft_is_charged_two_and_a_half_n_log_n_per_transform():
    x = torch.randn(3, 8, 128)  # 24 transforms of length 256 (zero-padded)
    with flop_counter() as counter:
        torch.fft.rfft(x, n=256)
    assert counter.get_total_flops() == 2.5 * 24 * 256 * math.log2(256)


def test_an_fft_convolution_costs_more_than_nothing_forward_and_backward():
    x = torch.randn(2, 4, 64, requires_grad=True)
    with flop_counter() as counter:
        torch.fft.irfft(torch.fft.rfft(x, n=128) * 2, n=128).sum().backward()
    counts = {str(op): flops for op, flops in counter.counts.items()}
    assert set(counts) == {"aten._fft_r2c", "aten._fft_c2r", "aten._fft_c2c"}
    assert all(flops > 0 for flops in counts.values())


def test_a_depthwise_convolution_backward_costs_twice_its_forward():
    """Its input's gradient and its weights' gradient each take the forward's multiply-adds (torch's formula
    charges the weights' gradient as if every channel met every other: 64 times too much here)."""
    conv = torch.nn.Conv1d(64, 64, 4, groups=64)
    x = torch.randn(2, 64, 50, requires_grad=True)
    with flop_counter() as forward:
        y = conv(x)
    with flop_counter() as backward:
        y.sum().backward()
    assert backward.get_total_flops() == 2 * forward.get_total_flops() > 0
