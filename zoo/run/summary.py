"""A finished run's test outputs with their per-item scores, the printed result, and the peak memory its segments
record (what training and the test measured is read off Lightning's objects by :mod:`zoo.training.measures`)."""

from __future__ import annotations

import json
import resource
from pathlib import Path
from typing import Any

import torch

from zoo.data.thumbnails import image_record
from zoo.registry import MODEL_KINDS, OPTIONAL_GROUPS
from zoo.run.layout import HYPOTHESES_FILE, SAMPLES_FILE, TEST_ITEMS_FILE


def peak_memory_mb(device: torch.device) -> float:
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


def write_outputs(
    run_dir: Path, test: dict | None, item_scores: dict[str, list[float]], task: Any, samples: int
) -> None:
    """When the test ran: one hypothesis per test item, the items with their per-item scores (what
    significance tests resample), and the first ``samples`` items as text."""
    if not test:
        return
    (run_dir / HYPOTHESES_FILE).write_text("\n".join(test["hypotheses"]) + "\n")
    with open(run_dir / TEST_ITEMS_FILE, "w") as out:
        for k, (item, hypothesis) in enumerate(zip(test["items"], test["hypotheses"])):
            scores = {name: round(values[k], 4) for name, values in item_scores.items()}
            row = {
                "id": item.id,
                "source": task.describe_source(item),
                "hypothesis": hypothesis,
                "references": list(item.references),
                "scores": scores,
                **image_record(item.source),  # an image's path or thumbnail, for the report
            }
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    blocks = []
    for item, hypothesis in list(zip(test["items"], test["hypotheses"]))[:samples]:
        references = "".join(f"REF {reference}\n" for reference in item.references)
        blocks.append(f"SRC {task.describe_source(item)}\n{references}HYP {hypothesis}\n\n")
    (run_dir / SAMPLES_FILE).write_text("".join(blocks))


def spent_again(compute: dict) -> str:
    """What a resume from an older checkpoint spent training steps again, beside the training the model received."""
    spent = compute.get("flops_spent", compute["flops"])
    if spent <= compute["flops"]:
        return ""
    return f" ({spent / 1e12:,.2f} TFLOPs spent: steps trained again after a resume)"


def print_result(summary: dict, run_dir: Path) -> None:
    """The result table a user sees at the end of ``zoo train``."""
    components = summary["components"]
    chosen = [kind for kind in MODEL_KINDS if kind != "frontend"]
    chosen += [
        group for group, kind in OPTIONAL_GROUPS.items() if components.get(group, components[kind]) != components[kind]
    ]
    model = ", ".join(f"{name}={components[name]['name']}" for name in chosen)
    rows = [("model", model)]
    rows += [
        (f"test {name}" + (" (monitored)" if name == summary["monitor"] else ""), f"{entry['score']:.2f}")
        for name, entry in summary["test"].items()
    ]
    average = summary.get("average")
    if average:  # did averaging help? The validation scores side by side
        monitor = summary["monitor"]
        label = f"val {monitor}: best / average of {len(average['snapshots'])} {average['of']}"
        tested = "average" if average.get("tested", True) else "best"
        rows.append((label, f"{summary['best_val']:.2f} / {average['val'][monitor]:.2f} ({tested} tested)"))
    if not summary["tested"]:
        best = summary["best_val"]
        rows += [
            (f"best val {summary['monitor']}", f"{best:.2f}" if best is not None else "n/a"),
            ("test", "not run (test=false)"),
        ]
    rows += [
        ("params (trainable)", f"{summary['parameters']['trainable']:,}"),
        ("train time", f"{summary['train_seconds']:.1f} s"),
        *(
            [
                (
                    "train compute",
                    f"{compute['flops'] / 1e12:,.2f} TFLOPs, {compute['processor_seconds']:,.0f} processor-s"
                    + spent_again(compute),
                )
            ]
            if (compute := summary.get("compute"))
            else []
        ),
        ("target tokens/s", f"{summary['tokens_per_second']:,.0f}" if summary["tokens_per_second"] else "n/a"),
    ]
    width = max(len(k) for k, _ in rows)
    print("\n" + "\n".join(f"{k:<{width}}  {v}" for k, v in rows))
    print(f"run directory: {run_dir}\n")
