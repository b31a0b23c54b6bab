"""Linear attention against softmax attention: training time across lengths, and what one generated token costs.

* training: forward + backward of one causal self-attention layer (d_model 128, 4 heads, batch 1) at each length:
  softmax attention (``zoo.nn.multihead.MultiHeadAttention`` with ``scaled_dot``, which runs PyTorch's fused
  scaled_dot_product_attention) against the chunkwise linear attention of ``zoo.nn.linear_attention`` with each
  gate (none, retention, gla; chunks of 64). Softmax attention's cost grows with L^2, the chunkwise form's with L.
* decoding: one generated token after t tokens: softmax attention appends to its key/value cache of t tokens and
  attends over it (as zoo's transformer decoder does); linear attention advances its state, which holds the same
  numbers at every t. Milliseconds per token and the bytes each keeps per layer and sentence.

Contestants take turns within each round and the median over rounds is printed, so load from other processes
hits all of them alike. The script checks that the recurrent step it times computes what the chunkwise form
computes.

    python benchmarks/linear_attention_speed.py [--lengths 512,1024,2048,4096,8192] [--rounds 3] [--threads 1]
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

import torch

from zoo.nn.linear_attention import Gate, LinearAttention
from zoo.nn.multihead import MultiHeadAttention
from zoo.registry import discovery

D_MODEL, HEADS = 128, 4


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def medians(contestants: dict, rounds: int) -> dict[str, float]:
    """Seconds per call of each contestant: one warm-up, then ``rounds`` rounds of one call each, in turn."""
    for fn in contestants.values():
        fn()
    times: dict[str, list[float]] = {name: [] for name in contestants}
    for _ in range(rounds):
        for name, fn in contestants.items():
            times[name].append(timed(fn))
    return {name: statistics.median(values) for name, values in times.items()}


def layers() -> dict[str, torch.nn.Module]:
    torch.manual_seed(0)
    built = {"softmax": MultiHeadAttention(D_MODEL, HEADS, "scaled_dot")}
    for gate in Gate:
        built[f"linear ({gate})"] = LinearAttention(D_MODEL, HEADS, gate=gate, chunk=64)
    return built


def training_step(name: str, layer: torch.nn.Module, x: torch.Tensor):
    def step() -> None:
        out = layer(x, causal=True)
        (out[0] if name == "softmax" else out).square().mean().backward()

    return step


def decoding_step(name: str, layer: torch.nn.Module, t: int):
    """One token after ``t``: softmax over a key/value cache of t tokens (copied, so every call sees t), or the
    linear state; returns (the step, bytes kept per layer and sentence)."""
    x = torch.randn(1, 1, D_MODEL)
    if name == "softmax":
        head_dim = D_MODEL // HEADS
        cache = {"k": torch.randn(1, HEADS, t, head_dim), "v": torch.randn(1, HEADS, t, head_dim)}
        return lambda: layer(x, causal=True, q_offset=t, cache=dict(cache)), 2 * (t + 1) * D_MODEL * 4
    state = layer.initial_state(1, x)
    return lambda: layer.step(x[:, 0], state), state.numel() * state.element_size()


@torch.no_grad()
def check_step_equals_chunkwise(layer: LinearAttention) -> None:
    x = torch.randn(1, 100, D_MODEL)
    whole, state = layer(x, causal=True), layer.initial_state(1, x)
    for t in range(100):
        out, state = layer.step(x[:, t], state)
        assert (out - whole[:, t]).abs().max() < 1e-4, "the recurrent step differs from the chunkwise form"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lengths", default="512,1024,2048,4096,8192")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    discovery.discover()  # the scaled_dot scorer of softmax attention
    lengths = [int(n) for n in args.lengths.split(",")]
    modules = layers()
    for name, layer in modules.items():
        if name != "softmax":
            check_step_equals_chunkwise(layer)
    print(f"{platform.processor() or platform.machine()}, torch {torch.__version__}, {args.threads} thread(s), "
          f"d_model {D_MODEL}, {HEADS} heads, batch 1, median of {args.rounds} rounds\n")  # fmt: skip

    print("training: forward + backward of one causal self-attention layer, ms")
    print("| length | " + " | ".join(modules) + " | softmax / linear (none) |")
    print("|---" * (len(modules) + 2) + "|")
    for length in lengths:
        x = torch.randn(1, length, D_MODEL)
        steps = {k: training_step(k, m, x) for k, m in modules.items()}
        ms = {k: 1e3 * s for k, s in medians(steps, args.rounds).items()}
        ratio = ms["softmax"] / ms["linear (none)"]
        print(f"| {length:,} | " + " | ".join(f"{v:.1f}" for v in ms.values()) + f" | {ratio:.1f}x |")

    print("\ndecoding: one token after t tokens, ms per token (bytes kept per layer and sentence)")
    print("| t | " + " | ".join(modules) + " |")
    print("|---" * (len(modules) + 1) + "|")
    with torch.no_grad():
        for t in lengths:
            steps = {k: decoding_step(k, m, t) for k, m in modules.items()}
            ms = medians({k: step for k, (step, _) in steps.items()}, args.rounds * 10)
            cells = [f"{1e3 * ms[k]:.3f} ({size / 1024:,.1f} KiB)" for k, (_, size) in steps.items()]
            print(f"| {t:,} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
