"""A chunk of Mamba's selective scan on the CPU: its states h_t = exp(Δ_t A) h_{t-1} + u_t B_t, and backwards its
adjoint states and the gradients of Δ and A; in C where the machine has a C compiler, else in PyTorch.

zoo.nn.ssm.chunked_selective_scan runs a sequence a chunk of time at a time. In PyTorch the recurrence is one call
a step, about 4 µs, mostly dispatch, for a few thousand numbers, and the steps are sequential, so a second thread
cannot share them; the backward pass makes every product as a tensor of its own (six passes over the chunk for
the gradient of Δ and A alone). recurrence.c takes a chunk in one call and forms those products where it sums
them. It is compiled once per machine with the system's C compiler (``$CC``, else ``cc``) into
``$ZOO_CACHE_DIR/kernels/`` (default ``~/.cache/zoo/kernels/``) and loaded with ctypes, which lets other threads
run while it works. ``ZOO_CPU_KERNELS=off`` keeps the PyTorch form. Without a compiler, or where it fails (its
message is logged once), the PyTorch form runs; the two compute the same sums (equal to rounding).

A library cut short (a copy or an rsync of the cache stopped part-way) still passes ``dlopen`` and then ends the
process with SIGBUS at its first call, without a word. So its size and SHA-256 are written beside it when it is
built (``recurrence-KEY.so.sha256``), checked before it is loaded, and a library that does not match, or has no
such record, is built again; a load that fails anyway leaves the PyTorch form, with one warning.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import logging
import os
import platform
import shutil
import subprocess
import tempfile
from pathlib import Path

import torch

from zoo.config.machine import kernels_switched_on

log = logging.getLogger(__name__)

SOURCE = Path(__file__).with_name("recurrence.c")
FLAGS = ["-O3", "-shared", "-fPIC"]  # no -march=native: a cache folder on a cluster's shared disk serves every node
TYPES = {torch.float32: "f32", torch.float64: "f64"}


def states(decay: torch.Tensor, u: torch.Tensor, maps: torch.Tensor, start: torch.Tensor) -> torch.Tensor:
    """A chunk's states, h_t = decay_t * h_{t-1} + u_t B_t from h_{-1} = start: decay (B, T, G, N, C), u (B, T, G, C),
    maps (the B_t: B, T, G, N), start (B, G, N, C) -> (B, T, G, N, C)."""
    if _library_for(decay) is None:
        h = u[:, :, :, None] * maps[..., None]
        previous = start
        for a_t, h_t in zip(decay.unbind(1), h.unbind(1)):
            previous = h_t.addcmul_(a_t, previous)
        return h
    h = torch.empty_like(decay)
    scan_states(decay, *(t.to(decay.dtype).contiguous() for t in (u, maps, start)), h)
    return h


def adjoints(
    decay: torch.Tensor,
    h: torch.Tensor,
    start: torch.Tensor,
    g: torch.Tensor,
    delta: torch.Tensor,
    A: torch.Tensor,
    dA: torch.Tensor,
) -> torch.Tensor:
    """Backwards through a chunk of :func:`states`: the adjoint states g_t += decay_{t+1} g_{t+1} in place over g
    (which holds C_t dy_t, and at the last step also the gradient from after the chunk), then through the decays
    exp(Δ_t A), with dlog_t = g_t decay_t h_{t-1}: the gradient of Δ_t (B, T, G, C), returned, and of A, added to
    ``dA`` (G, N, C). decay, h, g (B, T, G, N, C), start (B, G, N, C), delta (B, T, G, C), A (G, N, C)."""
    if _library_for(decay, h, g) is None:
        later = g[:, -1]
        for a_next, g_t in zip(decay.unbind(1)[:0:-1], g.unbind(1)[-2::-1]):
            later = g_t.addcmul_(a_next, later)
        dlog = g * decay
        dlog[:, 1:] *= h[:, :-1]
        dlog[:, 0] *= start
        dA += (dlog * delta[:, :, :, None]).sum((0, 1))
        return (dlog * A).sum(3)
    ddelta = delta.new_empty(delta.shape, dtype=decay.dtype)
    start, delta, A, dA_here = (t.to(decay.dtype).contiguous() for t in (start, delta, A, dA))
    scan_adjoints(decay, h, start, g, delta, A, ddelta, dA_here)
    if dA_here is not dA:
        dA.copy_(dA_here)
    return ddelta


@torch.library.custom_op("zoo::scan_states", mutates_args=("h",), device_types="cpu")
def _c_states(decay: torch.Tensor, u: torch.Tensor, maps: torch.Tensor, start: torch.Tensor, h: torch.Tensor) -> None:
    """recurrence.c's forward loop into ``h``, as an operator of its own so that a FLOP counter sees it
    (zoo.training.flops)."""
    getattr(compiled(), f"states_{TYPES[decay.dtype]}")(*_pointers(decay, u, maps, start, h), *_sizes(decay))


@torch.library.custom_op("zoo::scan_adjoints", mutates_args=("g", "ddelta", "dA"), device_types="cpu")
def _c_adjoints(
    decay: torch.Tensor,
    h: torch.Tensor,
    start: torch.Tensor,
    g: torch.Tensor,
    delta: torch.Tensor,
    A: torch.Tensor,
    ddelta: torch.Tensor,
    dA: torch.Tensor,
) -> None:
    """recurrence.c's backward loop (g, ddelta and dA written in place), as an operator of its own."""
    pointers = _pointers(decay, h, start, g, delta, A, ddelta, dA)
    getattr(compiled(), f"adjoints_{TYPES[decay.dtype]}")(*pointers, *_sizes(decay))


scan_states = torch.ops.zoo.scan_states
scan_adjoints = torch.ops.zoo.scan_adjoints


def _pointers(*tensors: torch.Tensor) -> list[int]:
    return [t.data_ptr() for t in tensors]


def _sizes(t: torch.Tensor) -> tuple[int, ...]:
    """(batch, steps, groups, states, channels) of a chunk's (B, T, G, N, C) tensor."""
    return tuple(t.shape)


def _library_for(*chunks: torch.Tensor) -> ctypes.CDLL | None:
    """The compiled scan, where it can take these (B, T, G, N, C) tensors: on the CPU, in a dtype it knows, the same
    shape and contiguous (made so, they are written in place or read whole)."""
    first = chunks[0]
    if first.device.type != "cpu" or first.dtype not in TYPES or first.dim() != 5 or first.numel() == 0:
        return None
    if any(t.dtype != first.dtype or t.shape != first.shape or not t.is_contiguous() for t in chunks):
        return None
    return compiled()


@functools.cache
def compiled() -> ctypes.CDLL | None:
    """recurrence.c compiled for this machine (once: the library is kept under the cache folder, named by a hash of
    the source, the compiler and its flags, and built again where it is not the file its record describes), or None
    where it is switched off or cannot be built or loaded."""
    if not kernels_switched_on():
        return None
    compiler = c_compiler()
    if compiler is None:
        return None
    library = library_path(compiler)
    try:
        if not intact(library):
            _compile(compiler, library)
        return _load(library)
    except (OSError, AttributeError, subprocess.SubprocessError) as error:
        detail = getattr(error, "stderr", None) or error
        log.warning("the C selective scan could not be built or loaded (%s); using the PyTorch form", detail)
        return None


def c_compiler() -> str | None:
    """The C compiler's path: ``$CC``, else ``cc``; None where there is none."""
    return shutil.which(os.environ.get("CC") or "cc")


def library_path(compiler: str) -> Path:
    """Where the library compiled from this source by ``compiler`` is kept."""
    key = hashlib.sha256("\n".join([SOURCE.read_text(), compiler, *FLAGS, platform.machine()]).encode()).hexdigest()
    cache = Path(os.environ.get("ZOO_CACHE_DIR") or "~/.cache/zoo").expanduser()
    return cache / "kernels" / f"recurrence-{key[:16]}.so"


def record_path(library: Path) -> Path:
    """Where the size and SHA-256 of ``library`` are kept: beside it."""
    return library.with_name(library.name + ".sha256")


def fingerprint(library: Path) -> str:
    """The record of a library: its size in bytes and its SHA-256."""
    data = library.read_bytes()
    return f"{len(data)} {hashlib.sha256(data).hexdigest()}\n"


def intact(library: Path) -> bool:
    """Whether ``library`` is the file its record describes (False where either is missing)."""
    record = record_path(library)
    return library.is_file() and record.is_file() and record.read_text() == fingerprint(library)


def _load(library: Path) -> ctypes.CDLL:
    scan = ctypes.CDLL(str(library))
    sizes = [ctypes.c_ssize_t] * 5  # ptrdiff_t
    for suffix in TYPES.values():
        getattr(scan, f"states_{suffix}").argtypes = [ctypes.c_void_p] * 5 + sizes
        getattr(scan, f"adjoints_{suffix}").argtypes = [ctypes.c_void_p] * 8 + sizes
    return scan


def _compile(compiler: str, library: Path) -> None:
    """Compile into a file of its own, write its record, then rename it into place: processes compiling at once
    (DDP's ranks, a sweep's jobs) never load a half-written library, and a full disk leaves nothing behind."""
    library.parent.mkdir(parents=True, exist_ok=True)
    handle, partial = tempfile.mkstemp(dir=library.parent, prefix=".recurrence-", suffix=".so")
    os.close(handle)
    partial, record = Path(partial), record_path(Path(partial))
    try:
        command = [compiler, *FLAGS, "-o", str(partial), str(SOURCE)]
        subprocess.run(command, check=True, capture_output=True, text=True, timeout=120)
        record.write_text(fingerprint(partial))
        os.replace(record, record_path(library))
        os.replace(partial, library)
        log.info("compiled the selective scan into %s", library)
    finally:
        partial.unlink(missing_ok=True)
        record.unlink(missing_ok=True)
