"""Mamba's selective scan in its three forms, and the state-space encoders' training speed against the Transformer's.

* scan: Mamba's selective SSM (zoo.nn.ssm; E = 256 channels of N = 16 states) over a sequence of ``--scan-length``
  tokens on the CPU, forward and forward + backward, in three forms: chunked (``chunked_selective_scan``, what the
  CPU runs: a chunk of time at a time, recomputed in the backward pass), parallel (``parallel_selective_scan``:
  recursive doubling over the whole (B, L, E, N) tensors, what a GPU without ``mamba-ssm`` runs) and the loop of
  one recurrence step per token, h_t = a_t * h_{t-1} + b_t, as autograd records it. Then the whole Mamba layer
  (``Mamba.forward``) against ``step_by_step``, the loop decoding runs. At batch 1 (one long sequence) and at
  batch 32 of 62 tokens (a training batch of the built-in synthetic task: encoder memory and target), where the
  loop's one-step slices are large enough to keep the CPU busy and small enough to stay in its cache.
* training: target tokens per second of forward + backward through the ``mamba``, ``s4d`` and ``transformer``
  encoder plugins at their recipes' width (d_model 128, 2 layers; bidirectional state-space encoders; the
  Transformer's 4 heads, feed-forward 512, scaled dot-product attention) on one sequence of ``--length`` tokens,
  with 1 and 2 threads. A bidirectional Mamba block runs its two directions in one scan (``Mamba.together``).
  Mamba twice: with the scan in C (zoo.nn.recurrence, where this machine compiles it) and in PyTorch
  (``ZOO_CPU_KERNELS=off``). The scan rows' chunked form is the C one where it compiles.

Contestants take turns within each round and the median over rounds is printed, so load from other processes
hits all of them alike. The script checks that what it compares computes the same result.

    python benchmarks/scan_speed.py [--scan-length 1024] [--length 2048] [--rounds 3]
"""

from __future__ import annotations

import argparse
import functools
import platform
import statistics
import time

import torch

from zoo import registry
from zoo.nn import recurrence
from zoo.nn.ssm import Mamba, chunked_selective_scan, parallel_selective_scan, step_by_step
from zoo.registry import discovery

D_MODEL, INNER, STATES = 128, 256, 16
PYTORCH_SCAN = "mamba, PyTorch scan"


def medians(contestants: dict, rounds: int) -> dict[str, float]:
    """Seconds per call of each contestant: one warm-up, then ``rounds`` rounds of one call each, in turn."""
    for fn in contestants.values():
        fn()
    times: dict[str, list[float]] = {name: [] for name in contestants}
    for _ in range(rounds):
        for name, fn in contestants.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in times.items()}


def loop_scan(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """h_t = a_t * h_{t-1} + b_t one step at a time: a, b (B, L, E, N) -> h (B, L, E, N). The steps are taken
    apart by unbind, whose backward is one stack (indexing a[:, t] would write a whole zero gradient per step)."""
    h, out = torch.zeros_like(b[:, 0]), []
    for a_t, b_t in zip(a.unbind(1), b.unbind(1)):
        h = a_t * h + b_t
        out.append(h)
    return torch.stack(out, dim=1)


def looped(u, delta, A, B, C):
    """The selective SSM y_t = C_t h_t, h_t = exp(Δ_t A) h_{t-1} + u_t B_t, by :func:`loop_scan` over its whole
    (B, L, E, N) decays and inputs: u, delta (B, L, E), A (E, N), B, C (B, L, N) -> y (B, L, E)."""
    h = loop_scan((delta[..., None] * A).exp(), u[..., None] * B[:, :, None])
    return (h * C[:, :, None]).sum(-1)


def compare(contestants: dict, inputs: tuple, rounds: int) -> dict[str, dict[str, float]]:
    """Seconds of each contestant on ``inputs``: forward alone and forward + backward."""

    def backward_too(fn):
        return lambda: fn(*inputs).square().mean().backward()

    with torch.no_grad():
        forward = medians({name: functools.partial(fn, *inputs) for name, fn in contestants.items()}, rounds)
    both = medians({name: backward_too(fn) for name, fn in contestants.items()}, rounds)
    return {"forward": forward, "forward + backward": both}


def scan_rows(batch: int, length: int, rounds: int) -> list[str]:
    """Table rows, ms of each form, forward and forward + backward: the selective SSM alone, then the Mamba layer
    (whose CPU form is the chunked scan) against stepping it token by token as decoding does."""
    torch.manual_seed(0)
    u, B, C = torch.randn(batch, length, INNER), torch.randn(batch, length, STATES), torch.randn(batch, length, STATES)
    delta, A = 0.1 * torch.rand(batch, length, INNER), -torch.arange(1.0, STATES + 1).expand(INNER, -1)
    ssm_inputs = tuple(t.clone().requires_grad_() for t in (u, delta, A, B, C))
    layer = Mamba(D_MODEL, STATES, expand=INNER // D_MODEL)
    x = torch.randn(batch, length, D_MODEL, requires_grad=True)
    forms = {
        "chunked": lambda *t: chunked_selective_scan(*t)[0],
        "parallel": lambda *t: parallel_selective_scan(*t)[0],
        "loop": looped,
    }
    with torch.no_grad():
        outputs = [form(*ssm_inputs) for form in forms.values()]
        assert all((y - outputs[-1]).abs().max() < 1e-3 for y in outputs), "a form of the scan differs from the loop"
        assert (layer(x) - step_by_step(layer, x)).abs().max() < 1e-4, "the layer's scan differs from its steps"
    rows = []
    for label, ms in compare(forms, ssm_inputs, rounds).items():
        c, p, s = (1e3 * ms[name] for name in forms)
        rows.append(f"| {batch} x {length:,} | selective SSM, {label} | {c:.1f} | {p:.1f} | {s:.1f} | {s / c:.2f}x |")
    steps = {"layer": layer, "loop": lambda x: step_by_step(layer, x)}
    for label, ms in compare(steps, (x,), rounds).items():
        c, s = 1e3 * ms["layer"], 1e3 * ms["loop"]
        rows.append(f"| {batch} x {length:,} | Mamba layer, {label} | {c:.1f} | | {s:.1f} | {s / c:.2f}x |")
    return rows


ENCODERS = {
    "mamba": {"name": "mamba", "d_model": D_MODEL, "layers": 2, "bidirectional": True},
    "s4d": {"name": "s4d", "d_model": D_MODEL, "layers": 2, "bidirectional": True},
    "transformer": {"name": "transformer", "d_model": D_MODEL, "layers": 2, "heads": 4, "ff_dim": 512},
}


def training_rows(length: int, rounds: int) -> list[str]:
    """One row per thread count: tokens/s of forward + backward through each encoder over one sequence."""
    torch.manual_seed(0)
    encoders = {}
    for name, cfg in ENCODERS.items():
        extra = {"scorer": {"name": "scaled_dot"}} if name == "transformer" else {}
        encoders[name] = registry.build("encoder", cfg, input_dim=D_MODEL, **extra).train()
    x, mask = torch.randn(1, length, D_MODEL), torch.ones(1, length, dtype=torch.bool)

    compiled = recurrence.compiled

    def step(encoder, scan=compiled):
        """One training step, the scan by ``scan`` (recurrence.compiled: C where it compiles)."""

        def run() -> None:
            recurrence.compiled = scan
            try:
                out = encoder(x, mask)
                (out.memory.square().mean() + out.state.square().mean()).backward()
            finally:
                recurrence.compiled = compiled

        return run

    contestants = {name: step(encoder) for name, encoder in encoders.items()}
    contestants[PYTORCH_SCAN] = step(encoders["mamba"], lambda: None)
    rows = []
    for threads in (1, 2):
        torch.set_num_threads(threads)
        rate = {name: length / s for name, s in medians(contestants, rounds).items()}
        cells = " | ".join(f"{rate[name]:,.0f}" for name in contestants)
        rows.append(f"| {threads} | {cells} | {rate['mamba'] / rate['transformer']:.2f}x |")
    return rows, {name: sum(p.numel() for p in e.parameters()) for name, e in encoders.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scan-length", type=int, default=1024)
    parser.add_argument("--length", type=int, default=2048)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    discovery.discover()
    torch.set_num_threads(1)
    print(f"{platform.processor() or platform.machine()}, torch {torch.__version__}, median of {args.rounds} rounds\n")

    print(f"scan: Mamba's selective SSM (E = {INNER}, N = {STATES}), 1 thread, ms; the ratio above 1: the chunked")
    print("scan (in the Mamba layer, what the CPU runs) is faster than the loop")
    print("| batch x length | what | chunked | parallel | loop | loop / chunked |")
    print("|---|---|---|---|---|---|")
    for batch, length in ((1, args.scan_length), (32, 62)):
        print("\n".join(scan_rows(batch, length, args.rounds)))

    rows, params = training_rows(args.length, args.rounds)
    print(f"\ntraining: encoder forward + backward over one sequence of {args.length:,} tokens, tokens/s")
    print("(parameters: " + ", ".join(f"{name} {n:,}" for name, n in params.items()) + ")")
    form = "C" if recurrence.compiled() else "PyTorch: no C compiler here"
    print(f"(mamba: the scan in {form}; {PYTORCH_SCAN}: ZOO_CPU_KERNELS=off)")
    print("| threads | " + " | ".join([*ENCODERS, PYTORCH_SCAN]) + " | mamba / transformer |")
    print("|---" * (len(ENCODERS) + 3) + "|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
