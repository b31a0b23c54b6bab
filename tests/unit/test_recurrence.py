"""The step loops of the chunked selective scan (zoo/nn/recurrence.py): the C loops compute what the PyTorch loops
compute, and a machine that cannot compile them runs the PyTorch loops after one warning."""

from __future__ import annotations

import logging

import pytest
import torch

from zoo.nn import recurrence


@pytest.fixture
def pytorch_loops(monkeypatch):
    """The PyTorch loops, whatever the machine can compile."""
    monkeypatch.setattr(recurrence, "compiled", lambda: None)


def both_loops(a, b, start, monkeypatch):
    """(forward, backward) of :mod:`recurrence` in C, then in PyTorch."""
    results = []
    for loops in (recurrence.compiled, lambda: None):
        monkeypatch.setattr(recurrence, "compiled", loops)
        results.append((recurrence.forward_in_place(a, b.clone(), start), recurrence.backward_in_place(a, b.clone())))
    return results


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("steps", [1, 7])
def test_the_c_loops_equal_the_pytorch_loops(dtype, steps, monkeypatch):
    if recurrence.compiled() is None:
        pytest.skip("no C compiler here (cc or $CC): only the PyTorch loops run")
    torch.manual_seed(0)
    a, b = torch.rand(3, steps, 2, 5, 13, dtype=dtype), torch.randn(3, steps, 2, 5, 13, dtype=dtype)
    start = torch.randn(3, 4, 5, 13, dtype=dtype)[:, 1:3]  # a slice of a larger tensor, as a chunk's start is
    (c_forward, c_backward), (forward, backward) = both_loops(a, b, start, monkeypatch)
    # equal to rounding: PyTorch's vectorised multiply-add may fuse its two roundings into one (FMA), the C one not
    torch.testing.assert_close(c_forward, forward)
    torch.testing.assert_close(c_backward, backward)
    expected = b.clone()  # and they are the recurrence
    expected[:, 0] += a[:, 0] * start
    for t in range(1, steps):
        expected[:, t] += a[:, t] * expected[:, t - 1]
    torch.testing.assert_close(c_forward, expected)


def test_the_pytorch_loops_are_the_recurrence_and_its_adjoint(pytorch_loops):
    """g = backward(a, dh) is the gradient of sum(h * dh) with respect to b, where h = forward(a, b)."""
    torch.manual_seed(0)
    a, b, dh = torch.rand(2, 6, 4, dtype=torch.float64), torch.randn(2, 6, 4, dtype=torch.float64), torch.randn(2, 6, 4)
    b.requires_grad_()
    h, previous = [], torch.zeros(2, 4, dtype=torch.float64)
    for t in range(6):
        previous = a[:, t] * previous + b[:, t]
        h.append(previous)
    (grad,) = torch.autograd.grad((torch.stack(h, 1) * dh).sum(), b)
    torch.testing.assert_close(recurrence.forward_in_place(a, b.detach().clone(), torch.zeros(2, 4)), torch.stack(h, 1))
    torch.testing.assert_close(recurrence.backward_in_place(a, dh.to(torch.float64)), grad)


def test_a_compiler_that_fails_leaves_the_pytorch_loops_and_no_file(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("ZOO_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("CC", "false")  # found, and fails whatever it is given
    monkeypatch.delenv("ZOO_CPU_KERNELS", raising=False)
    recurrence.compiled.cache_clear()
    try:
        with caplog.at_level(logging.WARNING, logger=recurrence.__name__):
            assert recurrence.compiled() is None
        (warning,) = caplog.records
        assert warning.message.startswith("the C step loop of the selective scan did not compile")
        assert list((tmp_path / "kernels").iterdir()) == []  # the partial library removed
        b = torch.ones(1, 3, 2)
        states = recurrence.forward_in_place(torch.full_like(b, 0.5), b, torch.zeros(1, 2))
        assert states[0, :, 0].tolist() == [1.0, 1.5, 1.75]
    finally:
        recurrence.compiled.cache_clear()


def test_a_damaged_library_in_the_cache_is_compiled_again(tmp_path, monkeypatch):
    if recurrence.compiled() is None:
        pytest.skip("no C compiler here (cc or $CC)")
    monkeypatch.setenv("ZOO_CACHE_DIR", str(tmp_path))
    library = recurrence.library_path(recurrence.c_compiler())
    library.parent.mkdir()
    library.write_bytes(b"\x7fELF cut short")
    recurrence.compiled.cache_clear()
    try:
        assert recurrence.compiled() is not None
        assert library.stat().st_size > 1000
    finally:
        recurrence.compiled.cache_clear()


def test_the_c_loops_can_be_switched_off(monkeypatch):
    monkeypatch.setenv("ZOO_CPU_KERNELS", "Off")
    recurrence.compiled.cache_clear()
    try:
        assert recurrence.compiled() is None
    finally:
        recurrence.compiled.cache_clear()
