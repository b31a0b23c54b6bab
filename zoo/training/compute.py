"""Training compute: FLOPs counted on real batches and processor-seconds, per segment; budgets stated in FLOPs.

Equal epochs are not equal compute: a GRU and a Transformer do very different work per batch (Kaplan et al.,
2020; Tay et al., 2022 compare architectures at equal compute). So every run records what it spent:

- **FLOPs**: ``torch.utils.flop_counter``'s formulas count the matrix products (forward, backward and
  optimiser) of the first :data:`COUNTED_BATCHES` training batches of each segment exactly; counting every batch
  would slow a small recurrent model 4x, so later batches are charged the counted FLOPs per token times the
  tokens they read and write (:func:`batch_tokens`: real source and target tokens; per target token alone, a
  classifier's batch of 256 short sequences would be charged 8x a batch of 32 long ones of the same cost). The
  fast Fourier transforms of a long convolution (S4D's) are counted too, at the usual 5 n log2 n real FLOPs for
  a complex transform of length n and half that for a real one (Cooley & Tukey, 1965; the convention of FFTW's
  benchmarks). A grouped convolution's backward pass is counted per group (torch's formula charges a depthwise
  one's weight gradient channels times over). Element-wise work (activations, norms, a selective scan's
  recurrence) is not counted, as usual: for Mamba's scan that is roughly a tenth to a fifth of its block's
  FLOPs, so budgets in FLOPs favour it by that much (``budget_minutes`` has no such gap). On the CPU the scan's
  products with B and C run as batched matrix products and are counted (5 % of a Mamba block's count; on a GPU,
  in ``mamba-ssm``'s kernel, they are not).
- **processor-seconds**: on the CPU the process's CPU time (all its threads); on a GPU the training wall time
  times the processes.

A budget (``trainer.budget_flops``, or ``trainer.budget_minutes`` of training time) is turned into optimiser
steps before training, from the first training batches counted (or timed) on a copy of the model
(:func:`steps_for_budget`): ``max_steps`` ends there, so the learning-rate schedule is laid out to end at the
budget, and validation runs at the same fractions of it (``trainer.budget_validations``) for every family. A
time budget is the machine's: the same minutes buy different compute elsewhere, and validation's time is not
in it.
"""

from __future__ import annotations

import collections
import copy
import itertools
import math
import time
from collections.abc import Iterator
from contextlib import contextmanager

import torch
from lightning.pytorch.callbacks import Callback
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import conv_flop_count, flop_registry, shape_wrapper

from zoo.contracts import PAD
from zoo.run.record import COUNTED_BATCHES
from zoo.training.callbacks import target_tokens

aten = torch.ops.aten


def _fft_flops(real: bool, length_from_output: bool = False):
    """A FlopCounterMode formula for one FFT op: 5 n log2 n per complex transform of length n over the given
    dims, 2.5 n log2 n for a real one, times the transforms (the tensor's other elements)."""

    def count(input_shape, dim, *args, out_shape=None, **kwargs) -> int:
        shape = out_shape if length_from_output else input_shape
        n = math.prod(shape[d] for d in dim)
        transforms = math.prod(shape) // max(n, 1)
        return int((2.5 if real else 5.0) * transforms * n * math.log2(max(n, 2)))

    return count


#: The FFT ops torch.utils.flop_counter leaves out (it counts matrix products, convolutions and attention).
FFT_FLOPS = {
    aten._fft_r2c: _fft_flops(real=True),
    aten._fft_c2r: _fft_flops(real=True, length_from_output=True),
    aten._fft_c2c: _fft_flops(real=False),
}


def _conv_backward_flops(
    grad_out_shape,
    x_shape,
    w_shape,
    _bias,
    _stride,
    _padding,
    _dilation,
    transposed,
    _output_padding,
    _groups,
    output_mask,
    out_shape,
    **kwargs,
) -> int:
    """A convolution's backward pass: its input's gradient (a transposed convolution) and its weights' (one
    multiply-add per multiply-add of the forward pass, so the forward's count). torch's own formula counts the
    weights' gradient as if the convolution were dense across channels: for a depthwise one (Mamba's, ``groups`` =
    channels) that is channels times too much, almost half of what a Mamba block was charged."""
    count = 0
    if output_mask[0]:
        count += conv_flop_count(grad_out_shape, w_shape, out_shape[0], not transposed)
    if output_mask[1]:
        count += conv_flop_count(x_shape, w_shape, grad_out_shape, transposed)
    return count


#: The formula for each counted op: torch's, with the FFTs added and the convolution's backward pass replaced.
FORMULAS = {
    **flop_registry,
    **{op: shape_wrapper(count) for op, count in FFT_FLOPS.items()},
    aten.convolution_backward: shape_wrapper(_conv_backward_flops),
}


#: What a dispatch mode is asked about a tensor's layout, not work done (as FlopCounterMode leaves them alone).
_LAYOUT_QUERIES = {
    aten.is_contiguous.default,
    aten.is_contiguous.memory_format,
    aten.is_strides_like_format.default,
    aten.is_non_overlapping_and_dense.default,
    aten.size.default,
    aten.sym_size.default,
    aten.stride.default,
    aten.sym_stride.default,
    aten.storage_offset.default,
    aten.sym_storage_offset.default,
    aten.numel.default,
    aten.sym_numel.default,
    aten.dim.default,
    torch.ops.prim.layout.default,
}


class FlopCounter(TorchDispatchMode):
    """Total FLOPs of the operations run inside it, by ``torch.utils.flop_counter``'s formulas (FFTs added, grouped
    convolutions' backward pass corrected).

    The same count as ``FlopCounterMode`` otherwise, without its books per module: those hook every module's inputs and
    outputs, which made counting a step-by-step recurrent decoder's batch three times as slow as running it.
    """

    def __init__(self) -> None:
        super().__init__()
        self.counts: collections.Counter = collections.Counter()  # FLOPs by operation (aten.mm, ...)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _LAYOUT_QUERIES:
            return NotImplemented
        formula = FORMULAS.get(func._overloadpacket)
        if formula is None and func is not torch.ops.prim.device.default:  # a composite op: count its parts
            with self:
                parts = func.decompose(*args, **kwargs)
            if parts is not NotImplemented:
                return parts
        out = func(*args, **kwargs)
        if formula is not None:
            self.counts[func._overloadpacket] += formula(*args, **kwargs, out_val=out)
        return out

    def get_total_flops(self) -> int:
        return sum(self.counts.values())


def flop_counter() -> FlopCounter:
    """A FLOP counter, FFTs included, grouped convolutions counted right."""
    return FlopCounter()


def batch_tokens(batch: dict) -> int:
    """The tokens a training batch reads and writes, what its FLOPs grow with: real target tokens, plus real source
    tokens where the source is token ids (an image or a feature grid costs the same in every row: one each)."""
    source = batch["source"]
    read = source.size(0) if source.is_floating_point() else int((source != PAD).sum())
    return read + target_tokens(batch)


class ComputeMeter(Callback):
    """Counts this process's training FLOPs and processor-seconds since its segment started (the run record adds
    up the segments, :mod:`zoo.run.record`); under DDP every process does the same work, so the run's
    FLOPs are one process's times the processes."""

    def __init__(self) -> None:
        self.flops = 0.0
        self._counted = (0.0, 0)  # FLOPs and tokens (batch_tokens) of the batches counted exactly
        self._batches_counted = 0
        self._counter: FlopCounter | None = None
        self._started: tuple[float, float] | None = None  # (process time, wall time) at the segment's start
        self._processes = 1
        self._gpu = False

    def on_fit_start(self, trainer, module) -> None:
        self.flops, self._counted, self._batches_counted = 0.0, (0.0, 0), 0
        self._started = (time.process_time(), time.perf_counter())
        self._processes = trainer.world_size
        self._gpu = trainer.strategy.root_device.type == "cuda"

    def on_train_batch_start(self, trainer, module, batch, batch_idx) -> None:
        if self._batches_counted < COUNTED_BATCHES or not self._counted[1]:
            self._counter = flop_counter()
            self._counter.__enter__()

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx) -> None:
        tokens = batch_tokens(batch)
        if self._counter is not None:
            self._counter.__exit__(None, None, None)
            flops, self._counter = float(self._counter.get_total_flops()), None
            self._counted = (self._counted[0] + flops, self._counted[1] + tokens)
            self._batches_counted += 1
            self.flops += flops
        elif self._counted[1]:
            self.flops += self._counted[0] / self._counted[1] * tokens

    def segment(self) -> dict:
        """This segment's compute so far, as the run record keeps it."""
        if self._started is None:
            return {}
        cpu, wall = self._started
        seconds = (time.perf_counter() - wall) * self._processes if self._gpu else time.process_time() - cpu
        return {"flops": round(self.flops * self._processes), "processor_seconds": round(seconds, 2)}


@contextmanager
def probe(module: torch.nn.Module, device: torch.device) -> Iterator[torch.nn.Module]:
    """A copy of the model in training mode on ``device``, used with the random state restored after it, so the run
    itself draws and computes exactly as without the probe."""
    copied = copy.deepcopy(module).to(device)
    copied.train()
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        yield copied


def flops_per_batch(module: torch.nn.Module, batches: list[dict]) -> float:
    """The mean FLOPs of a training step (forward and backward of the loss) over ``batches``, counted on a
    :func:`probe` (FLOPs do not depend on the device: counted on the CPU)."""
    with probe(module, torch.device("cpu")) as copied, flop_counter() as counter:
        for batch in batches:
            copied._loss(batch).backward()
    return counter.get_total_flops() / len(batches)


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


def steps_for_budget(trainer_cfg, module: torch.nn.Module, loader) -> int:
    """Optimiser steps that spend the ``trainer`` section's budget: ``budget_flops`` (FLOPs of all processes) or
    ``budget_minutes`` (training time, each process's steps timed), a multiple of ``budget_validations`` (at least
    one step each) so validation falls on the same fractions of the budget in every run."""
    batches = list(itertools.islice(iter(loader), COUNTED_BATCHES))
    if trainer_cfg.budget_flops is not None:
        per_step, budget = flops_per_batch(module, batches) * processes(trainer_cfg), trainer_cfg.budget_flops
    else:
        per_step = seconds_per_batch(module, batches, torch.device("cuda" if uses_gpu(trainer_cfg) else "cpu"))
        budget = 60 * trainer_cfg.budget_minutes
    validations = trainer_cfg.budget_validations
    return int(max(validations, validations * round(budget / per_step / validations)))
