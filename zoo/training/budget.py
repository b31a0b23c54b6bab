"""A run's cost model, and a FLOP budget laid out as optimiser steps before training.

The training batches of every epoch are known before training: the sampler's order is fixed by the seed and the
epoch (:class:`zoo.data.sampling.LengthBucketSampler`). So the layout walks the run's own batches in the order
training will read them, charges each by the run's :class:`~zoo.training.compute.CostModel`, and ends at the step
whose running total is nearest the budget: the run is charged what the layout added up, and the budget holds to
half a step's FLOPs whatever the epoch's mix of lengths (the first batches alone were 4-9 % off). Validation runs
every ``ceil(steps / budget_validations)`` steps and at the last one (the last segment is trimmed to the budget),
so at the same fractions of the budget for every model. A budget in minutes (``trainer.budget_minutes``) is laid
out as the steps a few timed batches say it buys. The cost model and the layout are written to the run folder
(:data:`~zoo.training.compute.COMPUTE_FILE`) and a resumed run reads them instead of measuring or timing again, so it
trains the steps and schedule it started with.

A budget is refused, before the run's record starts, when it cannot buy a step for each of its validations, or when
it would take more than :data:`MAX_EPOCHS` epochs of the run's data (``budget_flops=1e30``: 1e17 epochs).
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from lightning.pytorch.callbacks import Callback
from torch.utils.data import DataLoader

from zoo.data.collate import Collate
from zoo.errors import ZooError
from zoo.training.compute import (
    COMPUTE_FILE,
    COUNTED_BATCHES,
    TIMED_BATCHES,
    BatchShape,
    CostModel,
    count_flops,
    processes,
    seconds_per_batch,
    spread,
    uses_gpu,
)

#: The most epochs of its data a budget is laid out over: beyond, it is refused with what it would take.
MAX_EPOCHS = 1000


class BudgetError(ZooError):
    """A budget that cannot be spent as asked: too small for a step a validation, or absurdly large."""


@dataclass(frozen=True)
class Layout:
    """A budget as Lightning's limits: ``steps`` optimiser steps, validated every ``validate_every`` steps and at the
    last, whose batch keeps its first ``last_rows`` rows (all where None); ``budget`` is in ``unit`` (flops or
    minutes), and ``flops`` is what a FLOP budget's steps are charged."""

    budget: float
    steps: int
    validate_every: int
    flops: float | None
    last_rows: int | None = None
    unit: str = "flops"


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
    """The run's cost model: ``k`` batches of the first epoch, spread over its shapes, counted exactly (a shape
    once: batches of one shape cost the same)."""
    shapes = [BatchShape.of(batch) for batch in epoch_batches(data, 0)]
    chosen = set(spread(shapes, k))
    batches = [batch for index, batch in enumerate(epoch_batches(data, 0)) if index in chosen]
    distinct = {BatchShape.of(batch): batch for batch in batches}
    counts = count_flops(module, list(distinct.values()))
    return CostModel.fit(list(zip(distinct, counts)))


def epoch_steps(cost: CostModel, data, world: int, epoch: int) -> list[tuple[float, dict | None]]:
    """The optimiser steps of ``epoch`` as their FLOPs and (in a single process) their batch: ``world`` processes
    each take one batch a step, and the last batches that not every process would get are left out (as training
    leaves them)."""
    batches = list(epoch_batches(data, epoch))
    charges = [cost.flops(BatchShape.of(batch)) for batch in batches]
    return [
        (sum(charges[first : first + world]), batches[first] if world == 1 else None)
        for first in range(0, len(batches) // world * world, world)
    ]


def run_steps(cost: CostModel, data, world: int, first: list) -> Iterator[tuple[float, dict | None]]:
    """Every optimiser step of the run, epoch after epoch, from the ``first`` epoch's (:func:`epoch_steps`)."""
    yield from first
    for epoch in itertools.count(1):
        yield from epoch_steps(cost, data, world, epoch)


def head(batch: dict, rows: int) -> dict:
    """The first ``rows`` rows of a batch."""
    return {key: value[:rows] for key, value in batch.items()}


def rows_to_spend(cost: CostModel, batch: dict, remainder: float) -> int:
    """How many of ``batch``'s first rows cost nearest ``remainder`` FLOPs (0: none)."""
    charges = [0.0, *(cost.flops(BatchShape.of(head(batch, rows))) for rows in range(1, len(batch["index"]) + 1))]
    return min(range(len(charges)), key=lambda rows: abs(charges[rows] - remainder))


def steps_needed(validations: int) -> str:
    """What ``validations`` need of a budget, in words: a step each."""
    return f"the {validations} steps its validations need" if validations > 1 else "the step its validation needs"


def lay_out(budget: float, validations: int, cost: CostModel, steps: Iterable[tuple[float, dict | None]]) -> Layout:
    """The steps that spend ``budget``: whole steps while they fit, then as many rows of the next batch as come
    nearest the rest (in a single process; else the whole step where that is nearer). One step a validation, the
    last of them trimmed the same way where the budget ends within it; a budget smaller than those steps (the
    last cut to one row) is a :class:`BudgetError` naming the least that buys them."""
    spent, taken, last_rows = 0.0, 0, None
    for charge, batch in steps:
        if taken == validations - 1:
            least = spent + (cost.flops(BatchShape.of(head(batch, 1))) if batch is not None else charge)
            if budget < least:
                raise BudgetError(
                    f"trainer.budget_flops={budget:g} buys less than {steps_needed(validations)} (a "
                    f"step each: at least {least:.3g} FLOPs for this run, the last step cut to one row); give at least "
                    f"{least:.3g}, or fewer trainer.budget_validations"
                )
        if spent + charge <= budget or taken < validations - 1:
            spent, taken = spent + charge, taken + 1
            continue
        rows = rows_to_spend(cost, batch, budget - spent) if batch is not None else round((budget - spent) / charge)
        rows = max(rows, int(taken < validations))
        if rows:
            last_rows = rows if batch is not None and rows < len(batch["index"]) else None
            spent += cost.flops(BatchShape.of(head(batch, rows))) if last_rows else charge
            taken += 1
        break
    return Layout(budget, taken, math.ceil(taken / validations), spent, last_rows)


def budget_layout(trainer_cfg, cost: CostModel, data) -> Layout:
    """``trainer.budget_flops`` laid out over this run's batches, refused beyond :data:`MAX_EPOCHS` of them."""
    world, budget = processes(trainer_cfg), trainer_cfg.budget_flops
    first = epoch_steps(cost, data, world, 0)
    epoch = sum(charge for charge, _ in first)
    if budget > MAX_EPOCHS * epoch:
        raise BudgetError(
            f"trainer.budget_flops={budget:g} would train {budget / epoch:.3g} epochs of this run's data (one costs "
            f"{epoch:.3g} FLOPs); a budget is laid out over at most {MAX_EPOCHS} epochs ({MAX_EPOCHS * epoch:.3g} "
            "FLOPs): lower it"
        )
    return lay_out(budget, trainer_cfg.budget_validations, cost, run_steps(cost, data, world, first))


def minutes_layout(trainer_cfg, module: torch.nn.Module, loader) -> Layout:
    """``trainer.budget_minutes`` as the optimiser steps that spend it (each process's steps timed on a few batches
    here), a multiple of ``budget_validations``: at least one step each, at most :data:`MAX_EPOCHS` epochs."""
    batches = list(itertools.islice(iter(loader), TIMED_BATCHES))
    per_step = seconds_per_batch(module, batches, torch.device("cuda" if uses_gpu(trainer_cfg) else "cpu"))
    minutes, validations = trainer_cfg.budget_minutes, trainer_cfg.budget_validations
    steps = validations * round(60 * minutes / per_step / validations)
    if steps < validations:
        raise BudgetError(
            f"trainer.budget_minutes={minutes:g} buys less than {steps_needed(validations)} (a step "
            f"each, and a step takes {per_step:.3g} s here: at least {validations * per_step / 60:.3g} minutes); "
            "raise it, or lower trainer.budget_validations"
        )
    if steps > MAX_EPOCHS * len(loader):
        raise BudgetError(
            f"trainer.budget_minutes={minutes:g} would train {steps / len(loader):.3g} epochs of this run's data (a "
            f"step takes {per_step:.3g} s here); a budget is laid out over at most {MAX_EPOCHS} epochs: lower it"
        )
    return Layout(minutes, steps, steps // validations, None, unit="minutes")


def write_compute_file(run_dir: Path, cost: CostModel, layout: Layout | None) -> None:
    record = {"cost_model": cost.to_dict(), "budget": asdict(layout) if layout else None}
    (run_dir / COMPUTE_FILE).write_text(json.dumps(record, indent=1))


def read_layout(saved: dict) -> tuple[CostModel, Layout | None]:
    """The cost model and layout a run wrote when it started."""
    return CostModel.from_dict(saved["cost_model"]), Layout(**saved["budget"]) if saved["budget"] else None


class BudgetSteps(Callback):
    """Trims the last step's batch to the layout's ``last_rows``, then asks Lightning to stop, which makes it
    validate there (Lightning validates when a run is asked to stop), however many steps the last segment has."""

    def __init__(self, steps: int, last_rows: int | None) -> None:
        self.steps, self.last_rows = steps, last_rows

    def on_train_batch_start(self, trainer, module, batch, batch_idx) -> None:
        if self.last_rows and trainer.global_step == self.steps - 1:
            batch.update(head(batch, self.last_rows))

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx) -> None:
        if trainer.global_step >= self.steps:
            trainer.should_stop = True
