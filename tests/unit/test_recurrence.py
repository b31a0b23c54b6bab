"""A chunk of the selective scan in C (zoo/nn/recurrence.py): it computes what the PyTorch form computes, and a
machine that cannot compile it runs the PyTorch form after one warning."""

from __future__ import annotations

import ctypes
import logging

import pytest
import torch

from zoo.nn import recurrence


def chunk(dtype: torch.dtype, steps: int) -> dict[str, torch.Tensor]:
    """A chunk of 3 sequences in 2 groups of 13 channels with 5 states each, its inputs and upstream gradients."""
    torch.manual_seed(0)
    shape = (3, steps, 2, 5, 13)
    return {
        "decay": torch.rand(shape, dtype=dtype),
        "u": torch.randn(3, steps, 2, 13, dtype=dtype),
        "maps": torch.randn(3, steps, 2, 5, dtype=dtype),
        "start": torch.randn(3, 4, 5, 13, dtype=dtype)[:, 1:3],  # a slice of a larger tensor, as a chunk's start is
        "g": torch.randn(shape, dtype=dtype),
        "delta": torch.rand(3, steps, 2, 13, dtype=dtype),
        "A": -torch.rand(2, 5, 13, dtype=dtype),
    }


def run(t: dict[str, torch.Tensor]) -> tuple[torch.Tensor, ...]:
    """(states, adjoints, gradient of Δ, gradient of A) of :mod:`recurrence` on a chunk."""
    h = recurrence.states(t["decay"], t["u"], t["maps"], t["start"])
    g, dA = t["g"].clone(), torch.zeros_like(t["A"])
    ddelta = recurrence.adjoints(t["decay"], h, t["start"], g, t["delta"], t["A"], dA)
    return h, g, ddelta, dA


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("steps", [1, 7])
def test_the_c_chunk_equals_the_pytorch_chunk(dtype, steps, monkeypatch):
    if recurrence.compiled() is None:
        pytest.skip("no C compiler here (cc or $CC): only the PyTorch form runs")
    inputs = chunk(dtype, steps)
    in_c = run(inputs)
    monkeypatch.setattr(recurrence, "compiled", lambda: None)
    for c, pytorch in zip(in_c, run(inputs), strict=True):
        torch.testing.assert_close(c, pytorch)


def test_the_pytorch_chunk_is_the_recurrence_and_its_gradients(monkeypatch):
    """States by a plain loop, and the adjoints, Δ's and A's gradients as autograd takes them through that loop."""
    monkeypatch.setattr(recurrence, "compiled", lambda: None)
    t = chunk(torch.float64, 6)
    delta, A = t["delta"].clone().requires_grad_(), t["A"].clone().requires_grad_()
    decay = (delta[:, :, :, None] * A).exp()
    b = (t["u"][:, :, :, None] * t["maps"][..., None]).requires_grad_()
    h, previous = [], t["start"]
    for step in range(6):
        previous = decay[:, step] * previous + b[:, step]
        h.append(previous)
    h = torch.stack(h, 1)
    g_b, g_delta, g_A = torch.autograd.grad((h * t["g"]).sum(), (b, delta, A))

    states, adjoint, ddelta, dA = run({**t, "decay": decay.detach()})
    torch.testing.assert_close(states, h.detach())
    torch.testing.assert_close(adjoint, g_b)  # the gradient of each step's input is its adjoint state
    torch.testing.assert_close(ddelta, g_delta)
    torch.testing.assert_close(dA, g_A)


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
        h = recurrence.states(
            torch.full((1, 3, 1, 1, 2), 0.5), torch.ones(1, 3, 1, 2), torch.ones(1, 3, 1, 1), torch.zeros(1, 1, 1, 2)
        )
        assert h[0, :, 0, 0, 0].tolist() == [1.0, 1.5, 1.75]
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
        run(chunk(torch.float32, 3))
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
            h, *_ = run(chunk(torch.float32, 3))
            run(chunk(torch.float32, 3))
        (warning,) = caplog.records
        assert warning.message.startswith("the C selective scan could not be built or loaded") and "nothing.so" in (
            warning.message
        )
        assert h.shape == (3, 3, 2, 5, 13)
    finally:
        recurrence.compiled.cache_clear()


def test_the_c_scan_can_be_switched_off(monkeypatch):
    monkeypatch.setenv("ZOO_CPU_KERNELS", "Off")
    recurrence.compiled.cache_clear()
    try:
        assert recurrence.compiled() is None
    finally:
        recurrence.compiled.cache_clear()
