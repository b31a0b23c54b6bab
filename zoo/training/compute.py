"""Training compute: every batch's FLOPs from its shape, processor-seconds, per segment; budgets stated in FLOPs.

Equal epochs are not equal compute: a GRU and a Transformer do very different work per batch (Kaplan et al.,
2020; Tay et al., 2022 compare architectures at equal compute). So every run records what it spent:

- **FLOPs**, by the rule of :mod:`zoo.training.flops` (products, attention on every backend, FFTs, the C scan and
  element-wise work at one FLOP per output element). Counting every batch would slow a small recurrent model 4x,
  and charging later batches the first batches' FLOPs per token was 4-9 % off: FLOPs per token differ 1.5x between
  length buckets. So before training :data:`COUNTED_BATCHES` training batches spread over the epoch's shapes are
  counted exactly on a copy of the model, and a :class:`CostModel` fitted to them (least squares over the terms a
  batch's work grows with: rows, lengths, their squares and products, real tokens) charges every batch of the run
  from its shape. The model is kept in the run folder (:data:`COMPUTE_FILE`) and a resumed run charges by it.
- **processor-seconds**: on the CPU the process's CPU time (all its threads); on a GPU the training wall time
  times the processes.

A budget (``trainer.budget_flops``, or ``trainer.budget_minutes`` from a few batches timed here) is laid out before
training by :mod:`zoo.training.budget`.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import scipy.linalg
import torch
from lightning.pytorch.callbacks import Callback

from zoo.contracts import PAD
from zoo.training.flops import flop_counter

#: How many training batches are counted exactly before training, spread over the epoch's batch shapes.
COUNTED_BATCHES = 16
#: The run folder's file that keeps the cost model (and a budget's layout), read again on resume.
COMPUTE_FILE = "compute.json"
#: Batches timed for a budget in minutes.
TIMED_BATCHES = 4


@dataclass(frozen=True)
class BatchShape:
    """What a training batch's work grows with: rows, padded source and target lengths, real tokens of each. A
    source that is no token ids (an image, a feature grid) has the size of one row's source as its length."""

    rows: int
    source: int
    target: int
    source_tokens: int
    target_tokens: int

    @classmethod
    def of(cls, batch: dict) -> BatchShape:
        source, target = batch["source"], batch["target_out"]
        ids = not source.is_floating_point()
        return cls(
            rows=source.size(0),
            source=source.size(1) if ids else source[0].numel(),
            target=target.size(1),
            source_tokens=int((source != PAD).sum()) if ids else source.size(0),
            target_tokens=int((target != PAD).sum()),
        )

    def terms(self) -> np.ndarray:
        """The terms of the cost model: per batch (masks, a kernel computed from the weights) and per row (every
        layer's work per position, attention's per pair of positions), and per real token (a packed recurrent
        encoder skips the padding)."""
        s, t = self.source, self.target
        per_length = [1, s, t, s * s, t * t, s * t]
        return np.array(
            [*per_length, *(self.rows * term for term in per_length), self.source_tokens, self.target_tokens],
            dtype=np.float64,
        )


@dataclass
class CostModel:
    """A training batch's FLOPs (forward and backward) as a linear function of its shape's terms, fitted by least
    squares to batches counted exactly; ``counted`` keeps them, (shape, FLOPs), for the record."""

    coefficients: list[float]
    scale: list[float]
    counted: list[tuple[BatchShape, float]]

    @classmethod
    def fit(cls, counted: list[tuple[BatchShape, float]]) -> CostModel:
        """The least-squares fit (minimum norm, each term scaled to at most 1 so none dominates by its units)."""
        terms = np.stack([shape.terms() for shape, _ in counted])
        scale = np.maximum(np.abs(terms).max(axis=0), 1.0)
        flops = np.array([count for _, count in counted])
        coefficients, *_ = np.linalg.lstsq(terms / scale, flops, rcond=None)
        return cls(coefficients.tolist(), scale.tolist(), counted)

    def flops(self, shape: BatchShape) -> float:
        return float(max(0.0, shape.terms() / np.array(self.scale) @ np.array(self.coefficients)))

    def to_dict(self) -> dict:
        counted = [{**asdict(shape), "flops": flops} for shape, flops in self.counted]
        return {"coefficients": self.coefficients, "scale": self.scale, "counted": counted}

    @classmethod
    def from_dict(cls, saved: dict) -> CostModel:
        counted = [
            (BatchShape(**{k: v for k, v in row.items() if k != "flops"}), row["flops"]) for row in saved["counted"]
        ]
        return cls(saved["coefficients"], saved["scale"], counted)


def spread(shapes: list[BatchShape], k: int) -> list[int]:
    """The indices of ``k`` batches whose terms differ most (QR with column pivoting over the scaled terms: each
    next batch is the one least explained by those chosen before), so the fit sees every way the epoch's shapes
    vary (a source longer than its target, many short rows, few long ones); all of them where there are no more."""
    if len(shapes) <= k:
        return list(range(len(shapes)))
    terms = np.stack([shape.terms() for shape in shapes])
    terms = terms / np.maximum(np.abs(terms).max(axis=0), 1.0)
    _, _, pivots = scipy.linalg.qr(terms.T, mode="economic", pivoting=True)
    return sorted(pivots[:k].tolist())


@contextmanager
def probe(module: torch.nn.Module, device: torch.device) -> Iterator[torch.nn.Module]:
    """A copy of the model in training mode on ``device``, used with the random state restored after it, so the run
    itself draws and computes exactly as without the probe."""
    copied = copy.deepcopy(module).to(device)
    copied.train()
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        yield copied


def count_flops(module: torch.nn.Module, batches: list[dict]) -> list[float]:
    """Each batch's training FLOPs (forward and backward of the loss), counted on a :func:`probe` (FLOPs do not
    depend on the device: counted on the CPU)."""
    counts = []
    with probe(module, torch.device("cpu")) as copied:
        for batch in batches:
            with flop_counter() as counter:
                copied._loss(batch).backward()
            counts.append(float(counter.get_total_flops()))
            copied.zero_grad(set_to_none=True)
    return counts


def read_compute_file(run_dir: Path) -> dict | None:
    path = run_dir / COMPUTE_FILE
    return json.loads(path.read_text()) if path.exists() else None


class ComputeMeter(Callback):
    """Charges every training batch of this process its FLOPs by the run's :class:`CostModel`, and measures
    processor-seconds since its segment started (the run record adds up the segments, :mod:`zoo.run.record`);
    under DDP every process does the same work, so the run's FLOPs are one process's times the processes.

    A run resumed from a checkpoint older than where it stopped trains those steps again: the machine spends their
    FLOPs twice, but the model is trained on them once. So every checkpoint also keeps the FLOPs of the training
    that led to it, and a segment says both: ``flops`` (this segment's work) and ``trained_flops`` (the model's
    training so far, from its first step; absent where the segment resumed a checkpoint written before it was kept).
    """

    def __init__(self, cost: CostModel) -> None:
        self.cost = cost
        self.flops = 0.0
        self.before: float | None = None  # the trained FLOPs before this segment (None: a checkpoint that kept none)
        self._started: tuple[float, float] | None = None  # (process time, wall time) at the segment's start
        self._processes = 1
        self._gpu = False

    def state_dict(self) -> dict:
        return {"trained_flops": self.trained()}

    def load_state_dict(self, state: dict) -> None:  # a resumed checkpoint's, unless it was written before this
        self.before = state.get("trained_flops")

    def on_fit_start(self, trainer, module) -> None:
        self.flops = 0.0
        if trainer.ckpt_path is None:  # a new run: nothing trained before it
            self.before = 0.0
        self._started = (time.process_time(), time.perf_counter())
        self._processes = trainer.world_size
        self._gpu = trainer.strategy.root_device.type == "cuda"

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx) -> None:
        self.flops += self.cost.flops(BatchShape.of(batch))

    def trained(self) -> float | None:
        """The FLOPs of the model's training up to now, over every segment that led to it."""
        return None if self.before is None else self.before + self.flops * self._processes

    def segment(self) -> dict:
        """This segment's compute so far, as the run record keeps it."""
        if self._started is None:
            return {}
        cpu, wall = self._started
        seconds = (time.perf_counter() - wall) * self._processes if self._gpu else time.process_time() - cpu
        trained = self.trained()
        return {
            "flops": round(self.flops * self._processes),
            **({"trained_flops": round(trained)} if trained is not None else {}),
            "processor_seconds": round(seconds, 2),
        }


def uses_gpu(trainer_cfg) -> bool:
    return trainer_cfg.accelerator != "cpu" and torch.cuda.is_available()


def processes(trainer_cfg) -> int:
    """How many training processes the ``trainer`` section starts (``devices`` per machine times ``num_nodes``)."""
    devices = trainer_cfg.devices
    if isinstance(devices, str) and devices.lstrip("-").isdigit():
        devices = int(devices)
    if isinstance(devices, int) and devices > 0:
        per_node = devices
    elif isinstance(devices, (list, tuple)) or hasattr(devices, "__len__") and not isinstance(devices, str):
        per_node = len(devices)
    else:  # -1 or "auto": every GPU, or one CPU process
        per_node = torch.cuda.device_count() if uses_gpu(trainer_cfg) else 1
    return max(1, per_node) * trainer_cfg.num_nodes


def seconds_per_batch(module: torch.nn.Module, batches: list[dict], device: torch.device) -> float:
    """The mean wall seconds of a training step's forward and backward over ``batches`` after the first (a
    warm-up), on a :func:`probe` on ``device``."""
    from lightning.fabric.utilities.apply_func import move_data_to_device

    batches = [move_data_to_device(batch, device) for batch in batches]
    with probe(module, device) as copied:
        copied._loss(batches[0]).backward()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        started = time.perf_counter()
        for batch in batches[1:]:
            copied._loss(batch).backward()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
    return (time.perf_counter() - started) / max(1, len(batches) - 1)
