"""Mamba's selective scan in C (zoo/nn/recurrence.py): it computes what the PyTorch form computes, outputs and every
gradient, across the states it saves, and a machine that cannot compile it runs the PyTorch form after one
warning."""

from __future__ import annotations

import ctypes
import logging

import pytest
import torch

from zoo.nn import recurrence
from zoo.nn.ssm import LOG2_E, chunked_selective_scan


def scan_inputs(dtype: torch.dtype, length: int) -> list[torch.Tensor]:
    """u, Δ, A, B, C of 3 sequences in 2 groups of 13 channels with 5 states each (a bidirectional block's layout),
    Δ and A wide enough that some decays are strong."""
    torch.manual_seed(0)
    u, delta = torch.randn(3, length, 26, dtype=dtype), torch.rand(3, length, 26, dtype=dtype) * 2
    A, B, C = -torch.rand(26, 5, dtype=dtype) * 4, *(torch.randn(3, length, 2, 5, dtype=dtype) for _ in "BC")
    return [t.requires_grad_() for t in (u, delta, A, B, C)]


def run(inputs: list[torch.Tensor]) -> list[torch.Tensor]:
    """y, the last state and the gradient of every input of :func:`chunked_selective_scan` under a fixed loss."""
    y, last = chunked_selective_scan(*inputs)
    torch.manual_seed(1)
    loss = (y * torch.randn_like(y)).sum() + (last * torch.randn_like(last)).sum()
    return [y, last, *torch.autograd.grad(loss, inputs)]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("length", [1, 7, 23])
def test_the_c_scan_equals_the_pytorch_form_with_every_gradient(dtype, length, monkeypatch):
    """A state saved every 3 steps here, so the backward pass makes its states again across saves and a partial
    last stretch (7 and 23 steps)."""
    if recurrence.compiled() is None:
        pytest.skip("no C compiler here (cc or $CC): only the PyTorch form runs")
    monkeypatch.setattr(recurrence, "STATES_BETWEEN_SAVES", 3 * 2 * 5 * 13)
    inputs = scan_inputs(dtype, length)
    in_c = run(inputs)
    monkeypatch.setattr(recurrence, "available_for", lambda *tensors: False)
    for c, pytorch in zip(in_c, run(inputs), strict=True):
        torch.testing.assert_close(c, pytorch)


@pytest.mark.parametrize("dtype, lowest", [(torch.float32, -126), (torch.float64, -1022)])
def test_the_c_decays_are_torchs_exp2_to_two_units_in_the_last_place(dtype, lowest):
    """recurrence.c computes the decays 2^(Δ A log2 e) by hand (so that the compiler vectorises it) over the
    normal range, clamped below it. Read through the scan: a sequence of two steps whose first puts 1 in the state
    and whose second adds nothing gives y_1 = its decay, here against torch's exp2 of the same exponent, as the
    PyTorch form computes it."""
    if recurrence.compiled() is None:
        pytest.skip("no C compiler here (cc or $CC)")
    exponents = torch.cat([torch.linspace(lowest, 20, 50_001), -torch.rand(1_000)]).to(dtype)
    A = -torch.ones(1, 1, dtype=dtype)
    log2_a = (A * LOG2_E)[0, 0]
    delta = torch.stack([torch.zeros_like(exponents), exponents / log2_a], dim=1)[..., None]
    u = torch.tensor([1.0, 0.0], dtype=dtype).expand(len(exponents), 2)[..., None]
    ones = torch.ones(len(exponents), 2, 1, dtype=dtype)
    y, _ = chunked_selective_scan(u, delta, A, ones, ones)
    expected = torch.exp2(delta[:, 1, 0] * log2_a)
    assert ((y[:, 1, 0] - expected).abs() <= 2 * torch.finfo(dtype).eps * expected).all()  # measured: 1
    far_below = torch.tensor([0.0, (lowest - 30) / log2_a], dtype=dtype)[None, :, None]
    y, _ = chunked_selective_scan(u[:1], far_below, A, ones[:1], ones[:1])
    assert 0 <= y[0, 1, 0] <= 2.0**lowest


def test_a_compiler_that_fails_leaves_the_pytorch_form_and_no_file(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("ZOO_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("CC", "false")  # found, and fails whatever it is given
    monkeypatch.delenv("ZOO_CPU_KERNELS", raising=False)
    recurrence.compiled.cache_clear()
    try:
        with caplog.at_level(logging.WARNING, logger=recurrence.__name__):
            assert recurrence.compiled() is None
        (warning,) = caplog.records
        assert warning.message.startswith("the C selective scan could not be built or loaded")
        assert list((tmp_path / "kernels").iterdir()) == []  # the partial library removed
        halves = -torch.full((2, 1), 2.0).log()  # A: a decay exp(Δ A) of 1/2 at Δ = 1
        y, _ = chunked_selective_scan(torch.ones(1, 3, 2), torch.ones(1, 3, 2), halves, *[torch.ones(1, 3, 1)] * 2)
        assert y[0, :, 0].tolist() == [1.0, 1.5, 1.75]
    finally:
        recurrence.compiled.cache_clear()


@pytest.mark.parametrize("kept", [2_000, 8_000, 16_000])
def test_a_library_cut_short_in_the_cache_is_built_again_before_it_is_loaded(kept, tmp_path, monkeypatch):
    """Loaded, a library cut short passes dlopen and ends the process with SIGBUS at its first call."""
    if recurrence.compiled() is None:
        pytest.skip("no C compiler here (cc or $CC)")
    monkeypatch.setenv("ZOO_CACHE_DIR", str(tmp_path))
    recurrence.compiled.cache_clear()
    try:
        library = recurrence.library_path(recurrence.c_compiler())
        assert recurrence.compiled() is not None and recurrence.intact(library)
        cut = library.with_name("cut.so")  # as a copy of the cache stopped part-way leaves it (a file of its own:
        cut.write_bytes(library.read_bytes()[:kept])  # cut in place, the library this process maps would be too)
        cut.replace(library)
        recurrence.compiled.cache_clear()
        run(scan_inputs(torch.float32, 3))
        assert recurrence.intact(library) and library.stat().st_size > kept
    finally:
        recurrence.compiled.cache_clear()


def test_a_library_that_does_not_load_leaves_the_pytorch_form_with_one_warning(tmp_path, monkeypatch, caplog):
    if recurrence.compiled() is None:
        pytest.skip("no C compiler here (cc or $CC)")
    monkeypatch.setenv("ZOO_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(recurrence, "_load", lambda library: ctypes.CDLL(str(library.with_name("nothing.so"))))
    recurrence.compiled.cache_clear()
    try:
        with caplog.at_level(logging.WARNING, logger=recurrence.__name__):
            y, *_ = run(scan_inputs(torch.float32, 3))
            run(scan_inputs(torch.float32, 3))
        (warning,) = caplog.records
        assert warning.message.startswith("the C selective scan could not be built or loaded") and "nothing.so" in (
            warning.message
        )
        assert y.shape == (3, 3, 26)
    finally:
        recurrence.compiled.cache_clear()


def test_the_c_scan_can_be_switched_off(monkeypatch):
    monkeypatch.setenv("ZOO_CPU_KERNELS", "Off")
    recurrence.compiled.cache_clear()
    try:
        assert recurrence.compiled() is None
    finally:
        recurrence.compiled.cache_clear()
