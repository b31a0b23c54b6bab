"""The speed suite: every speed goal of the "Benchmarks" issue measured side by side in one process.

    python benchmarks/speed_suite.py [--quick] [--device cuda] [--only NAME,...] [--out DIR] [--threads N]

Contestants run interleaved over rounds and each comparison is the median of per-round
ratios; the thread count is fixed before torch loads and printed. Writes results.csv,
results.md (one row per measurement: what, ours, reference, ratio, goal, met?),
machine.json and cost_vs_length.{csv,md,png} to --out. --quick runs tiny sizes to check
that everything works (its numbers mean nothing). See benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback
from pathlib import Path

NAMES = (
    "transformer",
    "mha",
    "rnn",
    "beam",
    "key_prep",
    "reservoir",
    "length",
    "tokenizers",
    "data_wait",
    "caption_data",
)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes and few repeats: a smoke test")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--only", default="", help=f"comma-separated measurements of: {', '.join(NAMES)}")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    parser.add_argument("--threads", type=int, default=os.cpu_count(), help="torch, BLAS and tokenizer threads")
    args = parser.parse_args()
    chosen = [name for name in args.only.split(",") if name] or list(NAMES)
    unknown = sorted(set(chosen) - set(NAMES))
    if unknown:
        parser.error(f"unknown measurement(s) {', '.join(unknown)}; choose from {', '.join(NAMES)}")
    args.only = chosen
    return args


def fix_threads(threads: int) -> None:
    """The same thread count for every library, set before any of them loads its thread pool."""
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "RAYON_NUM_THREADS"):
        os.environ[var] = str(threads)


def measurements() -> dict:
    """Name -> measure function (imported after the thread count is fixed)."""
    from speed import beam, data, length, recurrent, reservoir, transformer

    return {
        "transformer": transformer.measure_transformer,
        "mha": transformer.measure_mha,
        "rnn": recurrent.measure_rnn_encoders,
        "beam": beam.measure_beam,
        "key_prep": beam.measure_key_prep,
        "reservoir": reservoir.measure_reservoir,
        "length": length.measure_cost_vs_length,
        "tokenizers": data.measure_tokenizers,
        "data_wait": data.measure_data_wait,
        "caption_data": data.measure_caption_data,
    }


def run(ctx, name: str, measure) -> list:
    """One measurement's rows; a failure becomes a row saying so, and the suite goes on."""
    from speed.common import Row

    started = time.perf_counter()
    try:
        rows = measure(ctx)
    except Exception as error:  # noqa: BLE001  (one broken measurement must not hide the others)
        traceback.print_exc()
        rows = [Row(f"{name}: FAILED", f"{type(error).__name__}: {error}".replace("|", "/")[:200])]
    print(f"[{name}] {time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)
    return rows


def main() -> None:
    args = parse_args()
    fix_threads(args.threads)
    import torch
    from speed import report
    from speed.common import Context, machine

    from zoo.registry.discovery import discover

    torch.set_num_threads(args.threads)
    discover()  # the built-in plugins, for measurements that build components by name
    ctx = Context(torch.device(args.device), args.quick, args.threads, args.out.resolve())
    ctx.out.mkdir(parents=True, exist_ok=True)
    details = machine(ctx)
    print(", ".join(f"{k}: {v}" for k, v in details.items()), flush=True)
    table = measurements()
    rows = [row for name in args.only for row in run(ctx, name, table[name])]
    print(report.write(ctx, details, rows))
    print(f"written to {ctx.out}")


if __name__ == "__main__":
    main()
