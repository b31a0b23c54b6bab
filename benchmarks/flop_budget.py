"""How close a FLOP budget lands: each family's layout against an exact count of every batch it lays out.

For each family and task, the run's cost model is fitted (zoo.training.budget.fit_run_cost: 16 batches of the
first epoch counted exactly) and ``trainer.budget_flops`` laid out over the run's own batches, as ``zoo train``
does before training; then every batch of the laid-out steps is counted exactly by the same rule
(zoo.training.flops) on a fresh copy of the model. FLOPs do not depend on the weights, so no training is needed:
``charged / budget`` is what the run records against its budget, ``exact / budget`` what it really spends.

With ``--missed``, instead: the share of each family's count (4 batches spread over the first epoch) that the rule
before 2026-11-29 left out: element-wise work, attention on the CPU's fused kernel, oneDNN's fused LSTM layer and
the C scan, so by how much a budget in FLOPs favoured each family.

    python benchmarks/flop_budget.py [--budget 2e11] [--tasks translation listops] [--families gru lstm ...]
    python benchmarks/flop_budget.py --missed
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import sys
import tempfile
import time
from pathlib import Path

import torch
from omegaconf import OmegaConf

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from helpers.config import composed  # noqa: E402

from zoo.data.datamodule import ZooDataModule  # noqa: E402
from zoo.training.budget import budget_layout, epoch_batches, fit_run_cost, head  # noqa: E402
from zoo.training.compute import BatchShape, count_flops, probe, spread  # noqa: E402
from zoo.training.flops import flop_counter  # noqa: E402
from zoo.training.module import ZooModule  # noqa: E402

#: The overrides of each family on each task: its recipe on the built-in translation data, its encoder at its
#: defaults under experiment=listops's classifier (GLA: the linear Transformer with the GLA gate).
TASKS = {
    "translation": {f: [f"model={f}"] for f in ("gru", "lstm", "transformer", "mamba", "s4d", "gla")},
    "listops": {
        **{f: ["experiment=listops", f"encoder={f}"] for f in ("gru", "lstm", "transformer", "mamba", "s4d")},
        "gla": ["experiment=listops", "encoder=linear_transformer", "encoder.gate=gla"],
    },
}


def run_batches(data, layout) -> list[dict]:
    """The run's training batches, epoch after epoch, the last trimmed as the layout trims it."""
    epochs = (epoch_batches(data, epoch) for epoch in itertools.count())
    batches = list(itertools.islice(itertools.chain.from_iterable(epochs), layout.steps))
    if layout.last_rows:
        batches[-1] = head(batches[-1], layout.last_rows)
    return batches


def built(overrides: list[str], folder: Path, *more: str):
    """The data and a fresh model, as ``zoo train`` builds them."""
    cfg = composed(*overrides, *more)
    data = ZooDataModule(cfg, folder)
    data.setup()
    torch.manual_seed(0)
    container = OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)
    module = ZooModule(container, dataclasses.asdict(data.task.source_description()), data.task.target_vocab_size)
    return data, module


def measure(overrides: list[str], budget: float, folder: Path) -> dict:
    data, module = built(overrides, folder, f"trainer.budget_flops={budget}")
    started = time.perf_counter()
    cost = fit_run_cost(module, data)
    layout = budget_layout(data.cfg.trainer, cost, data)
    laid_out = time.perf_counter() - started
    exact = sum(count_flops(module, run_batches(data, layout)))
    return {"steps": layout.steps, "charged": layout.flops / budget, "exact": exact / budget, "seconds": laid_out}


#: What the rule before 2026-11-29 counted zero (element-wise work aside).
UNCOUNTED_BEFORE = (
    torch.ops.aten._scaled_dot_product_flash_attention_for_cpu,
    torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward,
    torch.ops.aten.mkldnn_rnn_layer,
    torch.ops.aten.mkldnn_rnn_layer_backward,
    torch.ops.zoo.scan_states,
    torch.ops.zoo.scan_adjoints,
)


def missed(overrides: list[str], folder: Path) -> dict:
    """The shares of a family's count the earlier rule left out, over 4 batches spread over the first epoch."""
    data, module = built(overrides, folder)
    batches = list(epoch_batches(data, 0))
    chosen = [batches[i] for i in spread([BatchShape.of(batch) for batch in batches], 4)]
    total = element_wise = fused = 0
    with probe(module, torch.device("cpu")) as copied:
        for batch in chosen:
            with flop_counter() as counter:
                copied._loss(batch).backward()
            total += counter.get_total_flops()
            element_wise += counter.element_wise
            fused += sum(counter.counts[op] for op in UNCOUNTED_BEFORE)
    return {"element_wise": element_wise / total, "fused": fused / total}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=2e11)
    parser.add_argument("--tasks", nargs="+", default=list(TASKS))
    parser.add_argument("--families", nargs="+", default=list(TASKS["translation"]))
    parser.add_argument("--missed", action="store_true", help="the shares the earlier rule left out")
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.missed:
        print("| task | family | element-wise | fused attention, LSTM layer, C scan |\n|---|---|---|---|")
        for task, family in itertools.product(args.tasks, args.families):
            with tempfile.TemporaryDirectory() as folder:
                row = missed(TASKS[task][family], Path(folder))
            print(f"| {task} | {family} | {row['element_wise']:.1%} | {row['fused']:.1%} |", flush=True)
        return
    print(f"budget {args.budget:g} FLOPs, torch {torch.__version__}")
    print("| task | family | steps | charged / budget | exact / budget | layout s |")
    print("|---|---|---|---|---|---|")
    for task, family in itertools.product(args.tasks, args.families):
        with tempfile.TemporaryDirectory() as folder:
            row = measure(TASKS[task][family], args.budget, Path(folder))
        ratios = f"{row['charged']:.4f} | {row['exact']:.4f}"
        print(f"| {task} | {family} | {row['steps']} | {ratios} | {row['seconds']:.0f} |", flush=True)


if __name__ == "__main__":
    main()
