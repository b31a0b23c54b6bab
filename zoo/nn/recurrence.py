"""The step loops of a diagonal linear recurrence, h_t = a_t * h_{t-1} + b_t, in place over a chunk of time: in C
where the machine has a C compiler, else in PyTorch.

Mamba's chunked scan on the CPU (zoo.nn.ssm.chunked_selective_scan) runs these loops over every step of a sequence,
forward and backward. In PyTorch each step is one call of about 4 µs, mostly dispatch, for a few thousand numbers,
and the steps are sequential, so a second thread cannot share them. recurrence.c takes the whole chunk in one call
instead: it is compiled once per machine with the system's C compiler (``$CC``, else ``cc``) into
``$ZOO_CACHE_DIR/kernels/`` (default ``~/.cache/zoo/kernels/``) and loaded with ctypes, which lets other threads
run while it works. ``ZOO_CPU_KERNELS=off`` keeps the PyTorch loops. Without a compiler, or where it fails (its
message is logged once), the PyTorch loops run; both take the same sums in the same order (equal to rounding).
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

from zoo.config.checks import ConfigError

log = logging.getLogger(__name__)

SOURCE = Path(__file__).with_name("recurrence.c")
FLAGS = ["-O3", "-shared", "-fPIC"]  # no -march=native: a cache folder on a cluster's shared disk serves every node
TYPES = {torch.float32: "f32", torch.float64: "f64"}
SWITCH = "ZOO_CPU_KERNELS"


def forward_in_place(a: torch.Tensor, b: torch.Tensor, start: torch.Tensor) -> torch.Tensor:
    """b_t <- a_t * b_{t-1} + b_t along dim 1, from b_{-1} = start: a, b (B, T, ...), start (B, ...) -> b, now the
    states."""
    library = _library_for(a, b)
    if library is None:
        previous = start
        for a_t, b_t in zip(a.unbind(1), b.unbind(1)):
            previous = b_t.addcmul_(a_t, previous)
        return b
    start = start.to(b.dtype).contiguous()
    getattr(library, f"forward_{TYPES[b.dtype]}")(a.data_ptr(), b.data_ptr(), start.data_ptr(), *_shape(b))
    return b


def backward_in_place(a: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    """g_t <- a_{t+1} * g_{t+1} + g_t along dim 1, from the last step (left as it is) back: the adjoint of
    :func:`forward_in_place`'s recurrence. a, g (B, T, ...) -> g."""
    library = _library_for(a, g)
    if library is None:
        later = g[:, -1]
        for a_next, g_t in zip(a.unbind(1)[:0:-1], g.unbind(1)[-2::-1]):
            later = g_t.addcmul_(a_next, later)
        return g
    getattr(library, f"backward_{TYPES[g.dtype]}")(a.data_ptr(), g.data_ptr(), *_shape(g))
    return g


def _shape(t: torch.Tensor) -> tuple[int, int, int]:
    """(batch, steps, lanes) of a (B, T, ...) tensor."""
    return t.shape[0], t.shape[1], t[0, 0].numel() if t.shape[1] else 0


def _library_for(*tensors: torch.Tensor) -> ctypes.CDLL | None:
    """The compiled loops, where they can take these tensors (on the CPU, one dtype they know, contiguous)."""
    first = tensors[0]
    if first.device.type != "cpu" or first.dtype not in TYPES or first.numel() == 0:
        return None
    if any(t.dtype != first.dtype or t.shape != first.shape or not t.is_contiguous() for t in tensors):
        return None
    return compiled()


@functools.cache
def compiled() -> ctypes.CDLL | None:
    """recurrence.c compiled for this machine (once: the library is kept under the cache folder, named by a hash of
    the source, the compiler and its flags), or None where it is switched off or cannot be compiled."""
    if not kernels_switched_on():
        return None
    compiler = c_compiler()
    if compiler is None:
        return None
    library = library_path(compiler)
    if library.exists():
        try:
            return _load(library)
        except (OSError, AttributeError):
            pass  # not a library of these loops (cut short by a full disk?): compiled again
    try:
        _compile(compiler, library)
        return _load(library)
    except (OSError, AttributeError, subprocess.SubprocessError) as error:
        detail = getattr(error, "stderr", None) or error
        log.warning("the C step loop of the selective scan did not compile (%s); using PyTorch's", detail)
        return None


def kernels_switched_on() -> bool:
    """Whether ``$ZOO_CPU_KERNELS`` lets the C loops run: ``on`` (the default) or ``off``; any other value is a
    :class:`ConfigError`, which ``zoo train`` raises before anything runs."""
    value = os.environ.get(SWITCH, "on")
    if value.strip().lower() not in ("on", "off"):
        raise ConfigError(
            f"{SWITCH}={value}: write {SWITCH}=on (the default: Mamba's scan takes its step loops in C where this "
            f"machine compiles them) or {SWITCH}=off (in PyTorch)"
        )
    return value.strip().lower() == "on"


def c_compiler() -> str | None:
    """The C compiler's path: ``$CC``, else ``cc``; None where there is none."""
    return shutil.which(os.environ.get("CC") or "cc")


def library_path(compiler: str) -> Path:
    """Where the library compiled from this source by ``compiler`` is kept."""
    key = hashlib.sha256("\n".join([SOURCE.read_text(), compiler, *FLAGS, platform.machine()]).encode()).hexdigest()
    cache = Path(os.environ.get("ZOO_CACHE_DIR") or "~/.cache/zoo").expanduser()
    return cache / "kernels" / f"recurrence-{key[:16]}.so"


def _load(library: Path) -> ctypes.CDLL:
    loops = ctypes.CDLL(str(library))
    pointers, sizes = [ctypes.c_void_p] * 3, [ctypes.c_ssize_t] * 3  # ptrdiff_t
    for suffix in TYPES.values():
        getattr(loops, f"forward_{suffix}").argtypes = pointers + sizes
        getattr(loops, f"backward_{suffix}").argtypes = pointers[:2] + sizes
    return loops


def _compile(compiler: str, library: Path) -> None:
    """Compile into a file of its own, then rename it into place: processes compiling at once (DDP's ranks, a
    sweep's jobs) never load a half-written library, and a full disk leaves nothing behind."""
    library.parent.mkdir(parents=True, exist_ok=True)
    handle, partial = tempfile.mkstemp(dir=library.parent, prefix=".recurrence-", suffix=".so")
    os.close(handle)
    try:
        command = [compiler, *FLAGS, "-o", partial, str(SOURCE)]
        subprocess.run(command, check=True, capture_output=True, text=True, timeout=120)
        os.replace(partial, library)
        log.info("compiled the selective scan's step loops into %s", library)
    finally:
        Path(partial).unlink(missing_ok=True)
