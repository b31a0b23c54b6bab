"""A run's cost model, and a FLOP budget laid out as optimiser steps before training.

The training batches of every epoch are known before training: the sampler's order is fixed by the seed and the
epoch (:class:`zoo.data.sampling.LengthBucketSampler`). So the layout walks the run's own batches in the order
training will read them, charges each by the run's :class:`~zoo.training.compute.CostModel`, and ends at the step
whose running total is nearest the budget: the run is charged what the layout added up, and the budget holds to
half a step's FLOPs whatever the epoch's mix of lengths (the first batches alone were 4-9 % off). Validation runs
every ``ceil(steps / budget_validations)`` steps and at the last one (the last segment is trimmed to the budget),
so at the same fractions of the budget for every model. The cost model and the layout are written to the run
folder (:data:`~zoo.training.compute.COMPUTE_FILE`) and a resumed run reads them instead of measuring again.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from lightning.pytorch.callbacks import Callback
from torch.utils.data import DataLoader

from zoo.data.collate import Collate
from zoo.training.compute import COMPUTE_FILE, COUNTED_BATCHES, BatchShape, CostModel, count_flops, processes, spread


@dataclass(frozen=True)
class Layout:
    """A FLOP budget as Lightning's limits: ``steps`` optimiser steps, validated every ``validate_every`` steps and
    at the last; ``flops`` is what those steps are charged."""

    budget: float
    steps: int
    validate_every: int
    flops: float


def epoch_batches(data, epoch: int) -> Iterator[dict]:
    """The training batches of ``epoch`` (all processes'), in the order training reads them."""
    sampler = data.batch_sampler("train", shuffle=True)
    sampler.sampler.set_epoch(epoch)
    loader = DataLoader(data.encoded["train"], batch_sampler=sampler, collate_fn=Collate(data.task.collate_sources))
    try:
        yield from loader
    finally:
        sampler.sampler.set_epoch(0)


def fit_run_cost(module: torch.nn.Module, data, k: int = COUNTED_BATCHES) -> CostModel:
    """The run's cost model: ``k`` batches of the first epoch, spread over its shapes, counted exactly."""
    shapes = [BatchShape.of(batch) for batch in epoch_batches(data, 0)]
    chosen = set(spread(shapes, k))
    batches = [batch for index, batch in enumerate(epoch_batches(data, 0)) if index in chosen]
    counts = count_flops(module, batches)
    return CostModel.fit(list(zip((shapes[i] for i in sorted(chosen)), counts)))


def step_charges(cost: CostModel, data, world: int) -> Iterator[float]:
    """The FLOPs of every optimiser step of the run, epoch after epoch: ``world`` processes each take one batch a
    step, and an epoch's last batches that not every process would get are left out (as training leaves them)."""
    for epoch in range(10**9):
        charges = [cost.flops(BatchShape.of(batch)) for batch in epoch_batches(data, epoch)]
        usable = len(charges) // world * world
        for first in range(0, usable, world):
            yield sum(charges[first : first + world])


def lay_out(budget: float, validations: int, charges: Iterable[float]) -> Layout:
    """The steps whose total charge is nearest ``budget`` (at least one a validation)."""
    spent, steps = 0.0, 0
    for charge in charges:
        if steps >= validations and spent + charge / 2 > budget:
            break
        spent, steps = spent + charge, steps + 1
    return Layout(budget, steps, math.ceil(steps / validations), spent)


def budget_layout(trainer_cfg, cost: CostModel, data) -> Layout:
    """``trainer.budget_flops`` laid out over this run's batches."""
    charges = step_charges(cost, data, processes(trainer_cfg))
    return lay_out(trainer_cfg.budget_flops, trainer_cfg.budget_validations, charges)


def write_compute_file(run_dir: Path, cost: CostModel, layout: Layout | None) -> None:
    record = {"cost_model": cost.to_dict(), "budget": asdict(layout) if layout else None}
    (run_dir / COMPUTE_FILE).write_text(json.dumps(record, indent=1))


def read_layout(saved: dict) -> tuple[CostModel, Layout | None]:
    """The cost model and layout a run wrote when it started."""
    return CostModel.from_dict(saved["cost_model"]), Layout(**saved["budget"]) if saved["budget"] else None


class LastStepValidates(Callback):
    """Asks Lightning to stop after the budget's last step, which makes it validate there (Lightning validates when
    a run is asked to stop), however many steps the last segment has."""

    def __init__(self, steps: int) -> None:
        self.steps = steps

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx) -> None:
        if trainer.global_step >= self.steps:
            trainer.should_stop = True
