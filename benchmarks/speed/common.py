"""What every measurement shares: the run's context, result rows and interleaved timing.

Contestants are timed in one process, taking turns call by call (the order reversed
every other turn) over several rounds, so a change in machine load hits both alike;
a comparison is the median over rounds of the per-round ratio, which a single
disturbed round cannot move.
"""

from __future__ import annotations

import os
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch


@dataclass
class Context:
    """What a measurement needs to know about the run: its device, whether it is a quick smoke run, and where
    to write."""

    device: torch.device
    quick: bool
    threads: int
    out: Path

    def sync(self) -> None:
        """Wait for queued GPU work, so a timer stops when the work is done (nothing to wait for on the CPU)."""
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def size(self, quick, full):
        """``quick`` in a --quick run, else ``full``."""
        return quick if self.quick else full


@dataclass
class Row:
    """One line of the results table. ``ratio`` is ours against the reference (above 1: ours is better)."""

    what: str
    ours: str
    reference: str = "-"
    ratio: float | None = None
    goal: str = ""
    met: bool | None = None
    note: str = ""


def speedup_row(what: str, ours: str, reference: str, ratio: float, goal: float | None, note: str = "") -> Row:
    """A row whose goal is a minimum ratio (``goal`` None: reported, no goal)."""
    return Row(
        what, ours, reference, ratio, f">= {goal:g}x" if goal else "", None if goal is None else ratio >= goal, note
    )


def interleaved(
    ctx: Context, contestants: dict[str, Callable[[], object]], rounds: int, repeats: int
) -> dict[str, list[float]]:
    """Seconds per round of each contestant: one untimed warm-up call each, then per round
    ``repeats`` timed calls each, taking turns (order reversed every other turn)."""
    names = list(contestants)
    for fn in contestants.values():
        fn()
    seconds: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        total = dict.fromkeys(names, 0.0)
        for i in range(repeats):
            for name in names if (r + i) % 2 == 0 else names[::-1]:
                ctx.sync()
                start = time.perf_counter()
                contestants[name]()
                ctx.sync()
                total[name] += time.perf_counter() - start
        for name in names:
            seconds[name].append(total[name] / repeats)
    return seconds


def median_speedup(seconds: dict[str, list[float]], ours: str, reference: str) -> float:
    """Median over rounds of reference time / our time (above 1: ours is faster)."""
    return statistics.median(ref / own for own, ref in zip(seconds[ours], seconds[reference]))


def median(values: list[float]) -> float:
    return statistics.median(values)


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo (Linux), else what platform knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine(ctx: Context) -> dict[str, str]:
    """The details a reader needs to compare these numbers with others."""
    details = {
        "cpu": cpu_model(),
        "cores": str(os.cpu_count()),
        "torch": torch.__version__,
        "threads": str(torch.get_num_threads()),
        "device": ctx.device.type,
        "python": platform.python_version(),
        "load average (1 min) at start": f"{os.getloadavg()[0]:.2f}",
        "mode": "quick (tiny sizes: smoke test, not a measurement)" if ctx.quick else "full",
    }
    if ctx.device.type == "cuda":
        details["device"] = f"cuda ({torch.cuda.get_device_name(ctx.device)})"
    return details


def composed_config(overrides: list[str]) -> dict:
    """The config ``zoo train OVERRIDES`` would run with, as a plain dict (plugins discovered)."""
    from hydra import compose, initialize_config_module
    from omegaconf import OmegaConf

    import zoo.config.schema  # noqa: F401  (stores the schema)
    from zoo.registry.discovery import discover

    discover()
    with initialize_config_module("zoo.conf", version_base="1.3"):
        cfg = compose("config", overrides=overrides)
    return OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)


def token_model(cfg: dict, vocab: int, device: torch.device) -> torch.nn.Module:
    """A zoo Seq2Seq of ``cfg``'s components for token sources and targets of ``vocab`` ids (random weights)."""
    from zoo.contracts import SourceDescription
    from zoo.model import Seq2Seq

    torch.manual_seed(0)
    return Seq2Seq(cfg, SourceDescription("tokens", vocab_size=vocab), vocab).to(device)


def ragged_ids(batch: int, length: int, vocab: int, shortest: int, seed: int = 0) -> torch.Tensor:
    """(batch, length) random ids of real tokens (>= 4), each row of a random length in [shortest, length],
    PAD after."""
    from zoo.contracts import PAD

    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(4, vocab, (batch, length), generator=g)
    lengths = torch.randint(shortest, length + 1, (batch,), generator=g)
    return ids.masked_fill(torch.arange(length)[None, :] >= lengths[:, None], PAD)
