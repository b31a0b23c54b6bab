"""Cost against length: one training step of the GRU, ESN and Transformer encoders alone at
lengths 32 ... 2048 with the same number of source tokens per batch.

The encoder is timed without a decoder: with equal tokens per batch, a decoder's batch would
shrink as the source grows (batch = tokens / length), and its falling cost would hide the
encoder's rising one.

Each point runs in a fresh process (``python -m speed.length POINT_JSON``), so that no
memory freed by an earlier point can be reused unseen. Peak memory on the CPU is the growth
of the process's resident set during the first training step: the peak (VmHWM, reset just
before the step through /proc/self/clear_refs) minus the resident set before it, model and
batch already built; it counts everything the step touches (activations, gradients,
allocator and library work space). On CUDA it is torch.cuda.max_memory_allocated minus
the memory allocated before the step (tensors only).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from speed.common import Context, Row, composed_config, token_model

ENCODERS = ("gru", "esn", "transformer")
#: Overrides per encoder: the Transformer's self-attention is scaled dot-product (as in
#: experiment=transformer), not the default additive scorer, whose (B, H, T, S, d) scores
#: would make it O(n^2 d) rather than attention's usual O(n^2).
OVERRIDES = {"transformer": ["self_attention=scaled_dot"]}


def proc_status_kib(field: str) -> int:
    """A memory field of /proc/self/status (VmRSS, VmHWM) in KiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def step_memory(step, device) -> float:
    """Bytes the process (CPU) or torch's allocator (CUDA) grew to at most while ``step()`` ran."""
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        before = torch.cuda.memory_allocated(device)
        step()
        torch.cuda.synchronize(device)
        return float(torch.cuda.max_memory_allocated(device) - before)
    Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current resident set
    before = proc_status_kib("VmRSS")
    step()
    return float(proc_status_kib("VmHWM") - before) * 1024


def point(spec: dict) -> dict:
    """Time and peak memory of one training step (SGD: no optimiser state) of ``spec``'s
    encoder and its token frontend, batch = budget // length sentences of ``length`` tokens.
    The loss is the mean square of the encoder's output, so the backward pass runs through
    every trained encoder weight as a translation loss would."""
    import torch

    torch.set_num_threads(spec["threads"])
    device = torch.device(spec["device"])
    model = token_model(
        composed_config([f"encoder={spec['encoder']}", *spec["overrides"]]), spec["vocab"], device
    ).train()
    optimiser = torch.optim.SGD(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(0)
    batch = max(1, spec["budget"] // spec["length"])
    source = torch.randint(4, spec["vocab"], (batch, spec["length"]), generator=g).to(device)

    def step():
        model.encode(source).memory.square().mean().backward()
        optimiser.step()
        optimiser.zero_grad(set_to_none=True)

    memory = step_memory(step, device)
    times = []
    for _ in range(spec["repeats"]):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        start = time.perf_counter()
        step()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        times.append(time.perf_counter() - start)
    times.sort()
    return {
        "encoder": spec["encoder"],
        "length": spec["length"],
        "batch": batch,
        "seconds": times[len(times) // 2],
        "memory_bytes": memory,
    }


def run_point(spec: dict, timeout: float | None = None) -> dict:
    """``point(spec)`` in a fresh Python process (a RuntimeError when it fails or runs past ``timeout`` s)."""
    here = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(here), os.environ.get("PYTHONPATH", "")]))
    try:
        out = subprocess.run(
            [sys.executable, "-m", "speed.length", json.dumps(spec)],
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"the point {spec['encoder']} at length {spec['length']} ran past {timeout:.0f} s") from None
    if out.returncode != 0:
        last = (out.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"the point {spec['encoder']} at length {spec['length']} failed: {last}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def points(ctx: Context) -> list[dict]:
    """Every (length, encoder) point, shortest first."""
    lengths = ctx.size([32, 64, 128], [32 * 2**i for i in range(7)])  # 32 ... 2048
    budget = ctx.size(256, 4096)
    results = []
    for length in lengths:
        for encoder in ENCODERS:
            spec = {
                "encoder": encoder,
                "length": length,
                "budget": budget,
                "vocab": 1000,
                "overrides": OVERRIDES.get(encoder, []),
                "threads": ctx.threads,
                "device": ctx.device.type,
                "repeats": ctx.size(1, 3),
            }
            results.append(run_point(spec))
    return results


def write_table(ctx: Context, results: list[dict]) -> None:
    """cost_vs_length.csv and .md: one line per point."""
    header = ["encoder", "length", "batch", "step_ms", "peak_memory_mib"]
    lines = [
        [r["encoder"], r["length"], r["batch"], f"{r['seconds'] * 1e3:.1f}", f"{r['memory_bytes'] / 2**20:.1f}"]
        for r in results
    ]
    (ctx.out / "cost_vs_length.csv").write_text("\n".join(",".join(map(str, line)) for line in [header, *lines]) + "\n")
    md = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + [
        "| " + " | ".join(map(str, line)) + " |" for line in lines
    ]
    (ctx.out / "cost_vs_length.md").write_text("\n".join(md) + "\n")


def plot(ctx: Context, results: list[dict]) -> None:
    """cost_vs_length.png: step time and peak memory against length, log-log, one line per encoder."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    for encoder in ENCODERS:
        mine = [r for r in results if r["encoder"] == encoder]
        lengths = [r["length"] for r in mine]
        left.plot(lengths, [r["seconds"] * 1e3 for r in mine], marker="o", label=encoder)
        right.plot(lengths, [max(r["memory_bytes"], 1) / 2**20 for r in mine], marker="o", label=encoder)
    memory = "torch.cuda.max_memory_allocated growth" if ctx.device.type == "cuda" else "resident set growth (VmHWM)"
    for axis, title in ((left, "time of one training step (ms)"), (right, f"peak memory of the step, MiB ({memory})")):
        axis.set_xscale("log", base=2)
        axis.set_yscale("log")
        axis.set_xlabel("source length (batch = tokens per batch / length)")
        axis.set_title(title, fontsize=9)
        axis.legend()
    fig.suptitle(
        "Same tokens per batch at every length: a flat line is O(n) work per sentence, a line of slope 1 is O(n^2)",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(ctx.out / "cost_vs_length.png", dpi=120)
    plt.close(fig)


def measure_cost_vs_length(ctx: Context) -> list[Row]:
    """Time and peak memory of one training step of the gru, esn and transformer encoders alone
    at lengths 32 ... 2048, batch = budget / length.

    Fair because every point trains on the same number of source tokens, so what changes with
    length is the encoder's cost per token; each point runs in its own fresh process. Writes
    cost_vs_length.{csv,md,png}; the rows here give each encoder's growth from the shortest to
    the longest length.
    """
    results = points(ctx)
    write_table(ctx, results)
    plot(ctx, results)
    rows = []
    for encoder in ENCODERS:
        mine = [r for r in results if r["encoder"] == encoder]
        first, last = mine[0], mine[-1]
        rows.append(
            Row(
                f"cost vs length, {encoder} encoder alone: one training step at length {last['length']} "
                f"vs {first['length']} (equal tokens)",
                f"{last['seconds'] * 1e3:,.0f} ms, {last['memory_bytes'] / 2**20:,.0f} MiB",
                f"{first['seconds'] * 1e3:,.0f} ms, {first['memory_bytes'] / 2**20:,.0f} MiB "
                f"(length {first['length']})",
                last["seconds"] / first["seconds"],
                "",
                None,
                "ratio = time at the longest / at the shortest length; cost_vs_length.png",
            )
        )
    return rows


if __name__ == "__main__":
    print(json.dumps(point(json.loads(sys.argv[1]))))
