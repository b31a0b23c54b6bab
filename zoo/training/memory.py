"""Running out of memory as one line that says what to lower, instead of an allocator's traceback."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch

from zoo.errors import ZooError

#: What the CPU allocator says when a request cannot be met (torch raises a plain RuntimeError there).
CPU_ALLOCATOR = "can't allocate memory"


class OutOfMemory(ZooError, MemoryError):
    """Training or testing asked for more memory than the device has."""


def is_out_of_memory(error: BaseException) -> bool:
    return isinstance(error, (torch.OutOfMemoryError, MemoryError)) or (
        isinstance(error, RuntimeError) and CPU_ALLOCATOR in str(error)
    )


@contextmanager
def memory_refusal(phase: str, max_tokens: int, device: str) -> Iterator[None]:
    """Turn running out of memory during ``phase`` into :class:`OutOfMemory`, naming the settings that bound it."""
    try:
        yield
    except Exception as error:
        if not is_out_of_memory(error) or isinstance(error, OutOfMemory):
            raise
        detail = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise OutOfMemory(
            f"out of memory on the {device} while {phase} ({detail[:160]}): lower data.max_tokens (now "
            f"{max_tokens:,}, the tokens of a batch) or the model's widths, or train with "
            "trainer.precision=bf16-mixed"
        ) from None
