"""What a finished run measured (for ``summary.json``), its test outputs and per-item scores, the printed result."""

from __future__ import annotations

import json
import platform
import resource
from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig

from zoo.data.thumbnails import image_record
from zoo.inference.latency import latency_ms
from zoo.registry import MODEL_KINDS, OPTIONAL_GROUPS
from zoo.run.layout import HYPOTHESES_FILE, SAMPLES_FILE, TEST_ITEMS_FILE


def parameter_counts(module: torch.nn.Module) -> dict[str, int]:
    """Trainable parameters, and frozen weights (frozen parameters plus persistent buffers such as a reservoir)."""
    trainable = sum(p.numel() for p in module.parameters() if p.requires_grad)
    frozen = sum(p.numel() for p in module.parameters() if not p.requires_grad)
    parameter_storage = {p.data_ptr() for p in module.parameters()}  # tied weights appear twice in a state_dict
    frozen += sum(t.numel() for t in module.state_dict().values() if t.data_ptr() not in parameter_storage)
    return {"trainable": trainable, "frozen": frozen}


def peak_memory_mb(device: torch.device) -> float:
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


def training_summary(module: Any, trainer: Any, checkpoint: Any, throughput: Any) -> dict:
    """What training measured, once it has ended: ``best_val`` is the monitored metric's best validation score
    (the one that chose the checkpoint). Its time and peak memory are the run record's, summed over segments."""
    return {
        "best_val": float(checkpoint.best_model_score) if checkpoint.best_model_score is not None else None,
        "parameters": parameter_counts(module.model),
        "train_tokens": throughput.tokens,
        "tokens_per_second": round(throughput.tokens / throughput.seconds, 1) if throughput.seconds else None,
        "epochs": epochs_trained(trainer),
        "steps": trainer.global_step,
        "best_checkpoint": checkpoint.best_model_path or None,
    }


def test_summary(cfg: DictConfig, module: Any, task: Any, trainer: Any) -> dict:
    """What the test measured. ``test`` holds every metric's score with its direction and signature (empty, and
    ``tested`` false, when ``test=false`` kept the test split unseen); ``latency_ms`` the median milliseconds to
    decode one test item alone, greedy and beam, over the first ``latency_items`` (None for 0)."""
    suite = module.metrics
    test = module.results.get("test")
    # Lightning hands the model back on the CPU after testing: latency is measured, and the
    # machine recorded, on the device the run trained on.
    device = trainer.strategy.root_device
    module.model.to(device)
    described = suite.describe() if test else {}  # a signature is known once a metric has scored (sacrebleu's nrefs)
    items = test["items"][: cfg.latency_items] if test else []
    return {
        "tested": bool(cfg.test),
        "test": {name: {"score": score, **described[name]} for name, score in test["scores"].items()} if test else {},
        "breakdowns": task.breakdowns(test["items"], test["hypotheses"]) if test else {},
        "latency_ms": {
            strategy: latency_ms(module.model, task, items, module.test_decode, strategy)
            for strategy in ("greedy", "beam")
        },
        "decode": str(cfg.decode.strategy),
        "machine": {"platform": platform.platform(), "torch": torch.__version__, "device": str(device)},
    }


def epochs_trained(trainer: Any) -> float:
    """Epochs of training, the last one as the fraction of its batches that ran when a limit (``max_time``,
    ``max_steps``) or a signal stopped it: Lightning counts an epoch cut short as a whole one."""
    whole = trainer.current_epoch
    done, batches = trainer.fit_loop.epoch_loop.batch_progress.current.completed, trainer.num_training_batches
    if whole and 0 < done < batches:
        return round(whole - 1 + done / batches, 2)
    return whole


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


def _compute(compute: dict) -> str:
    return f"{compute['flops'] / 1e12:,.2f} TFLOPs, {compute['processor_seconds']:,.0f} processor-s"


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
                    f"{compute['flops'] / 1e12:,.2f} TFLOPs, {compute['processor_seconds']:,.0f} processor-s",
                )
            ]
            if (compute := summary.get("compute"))
            else []
        ),
        ("tokens/s", f"{summary['tokens_per_second']:,.0f}" if summary["tokens_per_second"] else "n/a"),
    ]
    width = max(len(k) for k, _ in rows)
    print("\n" + "\n".join(f"{k:<{width}}  {v}" for k, v in rows))
    print(f"run directory: {run_dir}\n")
