"""Cost against length for every family: what one sequence costs to train at 256 ... 16,384 tokens, the fitted
slope of that cost, and what one generated token costs after t tokens with the state it keeps.

* training: one training step (forward, backward, SGD) of each encoder family alone, at its defaults (``zoo list
  encoder``; the Transformer's self-attention scaled dot-product), on one sequence of each length, each point in a
  fresh process (``speed.length.point``: time is the median of the timed steps, memory the growth of the resident
  set during the first). The slope is the least-squares fit of log time (and log memory) against log length over
  the lengths from 2,048 up, where a step's fixed costs have faded: about 1 for work linear in the length, 2 for
  quadratic.
* decoding: each decoder family at its defaults, attending to (or reading) a 16-token source, generates token after
  token (greedy feed of random ids, no gradient); the time of one step after t tokens is the median of 16 steps
  from t on, and the state is every tensor the decoder carries to its next step (``init_cache``/``step``): a
  key/value cache grows with t, a recurrent or state-space state does not.

A point that fails or runs past ``--max-seconds`` is left out with the lengths after it.

    python benchmarks/cost_vs_length.py [--lengths 256,...,16384] [--threads 1] [--out benchmarks/results]
    python benchmarks/cost_vs_length.py --quick     # tiny lengths: a smoke test, not a measurement
    python benchmarks/cost_vs_length.py --families S4D,Mamba   # measure these again, keep the others' rows
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from speed.common import composed_config, cpu_model, token_model  # noqa: E402
from speed.length import run_point  # noqa: E402

#: label: (encoder, overrides), every encoder family at its defaults (identity, which encodes nothing, left out).
ENCODERS = {
    "Elman RNN": ("rnn", []),
    "GRU": ("gru", []),
    "LSTM": ("lstm", []),
    "ESN": ("esn", []),
    "ELM": ("elm", []),
    "Transformer": ("transformer", ["self_attention=scaled_dot"]),
    "linear attention": ("linear_transformer", []),
    "GLA": ("linear_transformer", ["encoder.gate=gla"]),
    "S4D": ("s4d", []),
    "Mamba": ("mamba", []),
}
#: label: (decoder, overrides), every generating decoder family at its defaults.
DECODERS = {
    "GRU + attention": ("rnn", []),
    "Transformer": ("transformer", ["self_attention=scaled_dot"]),
    "linear attention": ("linear_transformer", []),
    "GLA": ("linear_transformer", ["decoder.gate=gla"]),
    "S4D": ("s4d", []),
    "Mamba": ("mamba", []),
}
VOCAB, SOURCE = 1000, 16
FIT_FROM = 2048  # the slope is fitted over lengths from here up


def slope(points: list[tuple[int, float]]) -> float | None:
    """Least-squares slope of log(value) against log(length) over the points from FIT_FROM up (two or more)."""
    xs = [(math.log(n), math.log(v)) for n, v in points if n >= FIT_FROM and v > 0]
    if len(xs) < 2:
        return None
    mx, my = statistics.fmean(x for x, _ in xs), statistics.fmean(y for _, y in xs)
    return sum((x - mx) * (y - my) for x, y in xs) / sum((x - mx) ** 2 for x, _ in xs)


def training(lengths: list[int], threads: int, max_seconds: float, families: set[str]) -> dict[str, list[dict]]:
    """Each encoder family's training step on one sequence of every length, shortest first."""
    results: dict[str, list[dict]] = {}
    for label, (encoder, overrides) in ENCODERS.items():
        if label not in families:
            continue
        results[label] = []
        for length in lengths:
            spec = {
                "encoder": encoder,
                "length": length,
                "budget": length,  # one sequence a batch
                "vocab": VOCAB,
                "overrides": overrides,
                "threads": threads,
                "device": "cpu",
                "repeats": 3 if length <= 4096 else 1,
            }
            started = time.perf_counter()
            try:
                point = run_point(spec, timeout=max_seconds)
            except RuntimeError as failed:
                print(f"  {label} at {length:,}: {failed}; longer lengths left out", flush=True)
                break
            results[label].append(point)
            print(
                f"  {label:>16} {length:>6,}: {point['seconds'] * 1e3:10.1f} ms "
                f"{point['memory_bytes'] / 2**20:8.1f} MiB  ({time.perf_counter() - started:.0f} s)",
                flush=True,
            )
    return results


def state_bytes(cache) -> int:
    """Bytes of every tensor in a decoder's cache (nested dicts, lists and tuples)."""
    import torch

    if isinstance(cache, torch.Tensor):
        return cache.numel() * cache.element_size()
    if isinstance(cache, dict):
        return sum(state_bytes(v) for v in cache.values())
    if isinstance(cache, (list, tuple)):
        return sum(state_bytes(v) for v in cache)
    return 0


def decoding(checkpoints: list[int], threads: int, max_seconds: float, families: set[str]) -> dict[str, list[dict]]:
    """Each decoder family's step time and state after t tokens, for every t in ``checkpoints``."""
    import torch

    torch.set_num_threads(threads)
    results: dict[str, list[dict]] = {}
    window = 16
    for label, (decoder, overrides) in DECODERS.items():
        if label not in families:
            continue
        cfg = composed_config([f"decoder={decoder}", "encoder=identity", *overrides])
        model = token_model(cfg, VOCAB, torch.device("cpu")).eval()
        source = torch.randint(4, VOCAB, (1, SOURCE), generator=torch.Generator().manual_seed(0))
        tokens = torch.randint(4, VOCAB, (checkpoints[-1] + window,), generator=torch.Generator().manual_seed(1))
        results[label] = []
        started = time.perf_counter()
        with torch.no_grad():
            enc = model.encode(source)
            cache = model.decoder.init_cache(enc)
            wanted, times = list(checkpoints), []
            for t in range(checkpoints[-1] + window):
                if wanted and t == wanted[0]:
                    size, times = state_bytes(cache), []
                step_start = time.perf_counter()
                _, cache, _ = model.decoder.step(tokens[t : t + 1], enc, cache, t)
                if wanted and t >= wanted[0]:
                    times.append(time.perf_counter() - step_start)
                    if len(times) == window:
                        point = {"t": wanted.pop(0), "seconds": statistics.median(times), "state_bytes": size}
                        results[label].append(point)
                        print(
                            f"  {label:>16} t={point['t']:>6,}: {point['seconds'] * 1e3:8.3f} ms/token "
                            f"{size / 2**10:10.1f} KiB",
                            flush=True,
                        )
                if time.perf_counter() - started > max_seconds:
                    print(f"  {label}: past {max_seconds:.0f} s at t={t:,}; later t left out", flush=True)
                    break
    return results


def table(results: dict[str, list[dict]], key: str, unit: float, fmt: str, lengths: list[int], field: str) -> list:
    """Markdown rows: one per family, a cell per length, then the fitted slope."""
    rows = []
    for label, points in results.items():
        by_length = {p[key]: p[field] for p in points}
        cells = [format(by_length[n] / unit, fmt) if n in by_length else "—" for n in lengths]
        fitted = slope([(p[key], p[field]) for p in points])
        rows.append(f"| {label} | " + " | ".join(cells) + f" | {'—' if fitted is None else f'{fitted:.2f}'} |")
    return rows


def plot(train: dict[str, list[dict]], decode: dict[str, list[dict]], out: Path) -> None:
    """cost_vs_length_families.png: training time and memory per sequence, decode time per token, log-log."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
    for label, points in train.items():
        lengths = [p["length"] for p in points]
        axes[0].plot(lengths, [p["seconds"] * 1e3 for p in points], marker="o", label=label)
        axes[1].plot(lengths, [max(p["memory_bytes"], 1) / 2**20 for p in points], marker="o", label=label)
    for label, points in decode.items():
        axes[2].plot([p["t"] for p in points], [p["seconds"] * 1e3 for p in points], marker="o", label=label)
    titles = (
        "training step on one sequence (ms)",
        "peak memory of that step (MiB, resident set growth)",
        "decoding: one token after t tokens (ms)",
    )
    for axis, title in zip(axes, titles):
        axis.set_xscale("log", base=2)
        axis.set_yscale("log")
        axis.set_xlabel("length (tokens)" if axis is not axes[2] else "t (tokens generated)")
        axis.set_title(title, fontsize=9)
        axis.legend(fontsize=7)
    fig.suptitle("Cost against length, every family at its defaults: slope 1 on these axes is linear, 2 quadratic")
    fig.tight_layout()
    fig.savefig(out / "cost_vs_length_families.png", dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lengths", default=",".join(str(256 * 2**i) for i in range(7)))
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--max-seconds", type=float, default=600, help="per training point and per decoder")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    parser.add_argument("--quick", action="store_true", help="lengths 64 and 128: checks that everything runs")
    parser.add_argument(
        "--families",
        help="measure only these labels (comma-separated, e.g. S4D,Mamba) and keep the others' rows from --out",
    )
    args = parser.parse_args()
    everyone = set(ENCODERS) | set(DECODERS)
    families = set(args.families.split(",")) if args.families else everyone
    if families - everyone:
        parser.error(f"unknown families {sorted(families - everyone)}; known: {', '.join(sorted(everyone))}")
    lengths = [64, 128] if args.quick else [int(n) for n in args.lengths.split(",")]
    args.out.mkdir(parents=True, exist_ok=True)
    print(f"{cpu_model()}, {args.threads} thread(s), lengths {lengths}", flush=True)
    print("training, one sequence a step:", flush=True)
    train = training(lengths, args.threads, args.max_seconds, families)
    print("decoding, one token after t:", flush=True)
    decode = decoding(lengths, args.threads, args.max_seconds, families)
    kept = args.out / "cost_vs_length_families.json"
    if args.families and kept.exists():  # the other families' rows, as measured before, in the usual order
        before = json.loads(kept.read_text())
        train = {label: train.get(label, before["training"].get(label, [])) for label in ENCODERS}
        decode = {label: decode.get(label, before["decoding"].get(label, [])) for label in DECODERS}
    heads = " | ".join(f"{n:,}" for n in lengths)
    rule = "|---" * (len(lengths) + 2) + "|"
    md = [
        f"{cpu_model()}, {args.threads} thread(s); slopes fitted from length {FIT_FROM:,} up.",
        "",
        "Training step on one sequence, ms:",
        "",
        f"| family | {heads} | slope |",
        rule,
        *table(train, "length", 1e-3, ",.0f", lengths, "seconds"),
        "",
        "Peak memory of the step, MiB:",
        "",
        f"| family | {heads} | slope |",
        rule,
        *table(train, "length", 2**20, ",.1f", lengths, "memory_bytes"),
        "",
        "Decoding: one token after t tokens, ms:",
        "",
        f"| family | {heads} | slope |",
        rule,
        *table(decode, "t", 1e-3, ".3f", lengths, "seconds"),
        "",
        "State carried from token to token, KiB:",
        "",
        f"| family | {heads} | slope |",
        rule,
        *table(decode, "t", 2**10, ",.1f", lengths, "state_bytes"),
    ]
    (args.out / "cost_vs_length_families.md").write_text("\n".join(md) + "\n")
    (args.out / "cost_vs_length_families.json").write_text(json.dumps({"training": train, "decoding": decode}))
    plot(train, decode, args.out)
    print("\n".join(md))
    print(f"\nwritten to {args.out}/cost_vs_length_families.{{md,json,png}}")


if __name__ == "__main__":
    main()
