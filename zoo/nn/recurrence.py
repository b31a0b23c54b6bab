"""Mamba's selective scan on the CPU in C, forward and backward, fused (recurrence.c), where the machine can
compile it; zoo.nn.ssm runs the PyTorch form elsewhere.

The PyTorch form (zoo.nn.ssm.chunked_selective_scan) makes the scan's (B, L, E, N) tensors of decays, inputs and
states a chunk of time at a time and passes over each several times; at a training batch's size a chunk of one
step is already 4 MiB, so it is bound by memory, and its recurrence is one call a step, about 4 µs of dispatch.
recurrence.c makes no such tensor: it keeps one sequence's state in cache and reads each step's inputs once, and
its backward pass makes each chunk's states again from the state saved at the chunk's start. It is compiled once
per machine with the system's C compiler (``$CC``, else ``cc``) into ``$ZOO_CACHE_DIR/kernels/`` (default
``~/.cache/zoo/kernels/``) and loaded with ctypes. ``ZOO_CPU_KERNELS=off`` keeps the PyTorch form. Without a
compiler, or where it fails (its message is logged once), the PyTorch form runs; the two compute the same sums
(equal to rounding) and are charged the same FLOPs (zoo.training.flops).

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
# No -march=native: a cache folder on a cluster's shared disk serves every node. -fopenmp-simd lets the compiler
# vectorise the loops marked #pragma omp simd (the sums over channels), without OpenMP's runtime;
# -fno-trapping-math, the clamp in exp2 (no floating-point exception is ever looked at).
FLAGS = ["-O3", "-fopenmp-simd", "-fno-trapping-math", "-shared", "-fPIC"]
TYPES = {torch.float32: "f32", torch.float64: "f64"}


def available_for(*tensors: torch.Tensor) -> bool:
    """Whether the compiled scan can take these tensors: on the CPU, in one dtype it knows (it is then compiled or
    loaded, once)."""
    first = tensors[0]
    if first.device.type != "cpu" or first.dtype not in TYPES:
        return False
    return all(t.device == first.device and t.dtype == first.dtype for t in tensors) and compiled() is not None


@torch.library.custom_op("zoo::selective_scan", mutates_args=("y", "starts", "last"), device_types="cpu")
def scan(
    u: torch.Tensor,
    delta: torch.Tensor,
    A2: torch.Tensor,
    B: torch.Tensor,
    C: torch.Tensor,
    y: torch.Tensor,
    starts: torch.Tensor,
    last: torch.Tensor,
    interval: int,
    chunk: int,
) -> None:
    """The scan from a zero state: u, delta (B, L, E), A2 = A log2 e (G, N, E / G), B, C (B, L, G, N) -> into y
    (B, L, E), the state every ``interval`` steps into starts (B, K, G, N, E / G) and the last state into last (B,
    G, N, E / G). An operator of its own, so that a FLOP counter sees it: ``chunk`` is the PyTorch form's, which
    its count (zoo.training.flops) depends on."""
    library = getattr(compiled(), f"scan_{TYPES[u.dtype]}")
    library(*_pointers(u, delta, A2, B, C, y, starts, last), *_sizes(u, A2), interval)


@torch.library.custom_op(
    "zoo::selective_scan_backward", mutates_args=("du", "ddelta", "dA", "dB", "dC", "work", "g"), device_types="cpu"
)
def scan_backward(
    u: torch.Tensor,
    delta: torch.Tensor,
    A: torch.Tensor,
    A2: torch.Tensor,
    B: torch.Tensor,
    C: torch.Tensor,
    starts: torch.Tensor,
    dy: torch.Tensor,
    dlast: torch.Tensor,
    du: torch.Tensor,
    ddelta: torch.Tensor,
    dA: torch.Tensor,
    dB: torch.Tensor,
    dC: torch.Tensor,
    work: torch.Tensor,
    g: torch.Tensor,
    interval: int,
    chunk: int,
) -> None:
    """Backwards through :func:`scan` from its saved ``starts``: the gradients of u, Δ, B and C written, A's (G, N,
    E / G) added to ``dA``; dy (B, L, E), dlast (B, G, N, E / G) the upstream gradients; ``work`` (2 × min(interval,
    L) × G × N × E / G numbers) and ``g`` (G × N × E / G) scratch; ``chunk`` as in :func:`scan`."""
    library = getattr(compiled(), f"scan_backward_{TYPES[u.dtype]}")
    pointers = _pointers(u, delta, A, A2, B, C, starts, dy, dlast, du, ddelta, dA, dB, dC, work, g)
    library(*pointers, *_sizes(u, A2), interval)


STATES_BETWEEN_SAVES = 2**17  # numbers: the states a backward pass makes again from one saved state, 512 KiB in float


def interval(lanes: int) -> int:
    """Steps between the states :func:`scan` saves, for a state of ``lanes`` numbers: as many as make
    ``STATES_BETWEEN_SAVES``, so that the backward pass's chunk of states and decays stays near the cache (16 steps
    of 512 channels × 16 states), and the saved states are a small part of the memory (a state per step, as a
    chunk of one step would save, is N times the layer's input and, freshly allocated, costs a page fault every
    4 KiB)."""
    return max(1, STATES_BETWEEN_SAVES // lanes)


#: The two operators, as a FLOP counter's dispatch mode sees them (zoo.training.flops charges them by formula).
SCAN_OPS = (torch.ops.zoo.selective_scan, torch.ops.zoo.selective_scan_backward)


def _pointers(*tensors: torch.Tensor) -> list[int]:
    return [t.data_ptr() for t in tensors]


def _sizes(u: torch.Tensor, A2: torch.Tensor) -> tuple[int, ...]:
    """(batch, length, groups, states, channels per group) of a scan of u (B, L, E) with A2 (G, N, E / G)."""
    return (*u.shape[:2], *A2.shape)


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
    recipe = [SOURCE.read_text(), compiler, *FLAGS, platform.machine()]
    key = hashlib.sha256("\n".join(recipe).encode()).hexdigest()
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
    library = ctypes.CDLL(str(library))
    sizes = [ctypes.c_ssize_t] * 6  # ptrdiff_t: batch, length, groups, states, channels, interval
    for suffix in TYPES.values():
        getattr(library, f"scan_{suffix}").argtypes = [ctypes.c_void_p] * 8 + sizes
        getattr(library, f"scan_backward_{suffix}").argtypes = [ctypes.c_void_p] * 16 + sizes
    return library


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
