"""Reservoir states per second: zoo (torch, batched) vs reservoirpy (numpy, one sequence at a time).

    python benchmarks/bench_reservoir.py [--units 1000 --sequences 64 --steps 100 --input-dim 32]

Rows, all the same size and density (``--connectivity``, 0.1 by default):

- zoo, all sequences as one batch (B = sequences), float32: as it runs by default (a frozen
  CPU reservoir this sparse multiplies by a CSR copy of W), and with the dense W product forced;
- reservoirpy 0.4 with zoo's weights handed over as dense float64 arrays: the *same* reservoir
  (its states are checked against zoo's before anything is timed);
- reservoirpy with its own initialisers (W a scipy CSR matrix, float64: its defaults).

reservoirpy runs the (sequences, steps, dim) array through ``Reservoir.run`` the normal way
(``workers=1``): one sequence after another. Both get ``--threads`` threads
(torch.set_num_threads; the OMP/OpenBLAS/MKL variables for numpy, set before it loads, which
is why numpy, torch and reservoirpy are imported inside the functions).
Timings are the best of ``--repeats`` runs after one warm-up. reservoirpy is a bench extra
(``pip install -e .[bench]``); zoo itself never imports it. The speed suite
(benchmarks/speed_suite.py) imports :func:`contestants` and times them interleaved.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from collections.abc import Callable


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The reservoir's size and the timing options (``argv`` None: the command line)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, default=1000)
    parser.add_argument("--sequences", type=int, default=64)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--input-dim", type=int, default=32)
    parser.add_argument("--leak-rate", type=float, default=0.3)
    parser.add_argument("--spectral-radius", type=float, default=0.9)
    parser.add_argument("--connectivity", type=float, default=0.1, help="density of W")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--repeats", type=int, default=3)
    return parser.parse_args(argv)


def set_blas_threads(threads: int) -> None:
    """Thread counts for numpy's BLAS; they only take effect if numpy has not been imported yet."""
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(threads)


def best_time(fn: Callable[[], object], repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def zoo_reservoir(args: argparse.Namespace):
    """zoo's reservoir of the requested size, and the (sequences, steps, input_dim) float32 inputs as a tensor."""
    import numpy as np
    import torch

    from zoo.reservoir import Reservoir

    inputs = np.random.default_rng(0).standard_normal((args.sequences, args.steps, args.input_dim)).astype(np.float32)
    res = Reservoir(
        args.input_dim,
        args.units,
        leak_rate=args.leak_rate,
        spectral_radius=args.spectral_radius,
        connectivity=args.connectivity,
        bias_scaling=0.2,
        seed=0,
    )
    return res, torch.from_numpy(inputs)


def rpy_same_reservoir(res, args: argparse.Namespace):
    """reservoirpy with zoo's weights as dense numpy arrays (its default float64)."""
    from reservoirpy.nodes import Reservoir as RpyReservoir

    return RpyReservoir(
        units=args.units,
        lr=args.leak_rate,
        W=res.W.double().numpy(),
        Win=res.W_in.double().numpy(),
        bias=res.b.double().numpy(),
        input_dim=args.input_dim,
    )


def rpy_own_init(args: argparse.Namespace):
    """reservoirpy's own initialisers at the same size, radius and density (W is a scipy CSR matrix)."""
    from reservoirpy.nodes import Reservoir as RpyReservoir

    return RpyReservoir(
        units=args.units,
        lr=args.leak_rate,
        sr=args.spectral_radius,
        rc_connectivity=args.connectivity,
        input_connectivity=1.0,
        input_dim=args.input_dim,
        seed=0,
    )


def zoo_dense(res, u):
    """zoo with the dense W product forced (the CSR path switched off)."""
    import zoo.reservoir as reservoir_module

    saved, reservoir_module.SPARSE_DENSITY = reservoir_module.SPARSE_DENSITY, 0.0
    try:
        return res(u)
    finally:
        reservoir_module.SPARSE_DENSITY = saved


def contestants(args: argparse.Namespace) -> dict[str, tuple[str, Callable[[], object]]]:
    """{label: (kind of W product, a call computing every state)} for the four rows, after
    checking that zoo's two paths agree and that reservoirpy on zoo's weights gives zoo's states."""
    import numpy as np

    res, u = zoo_reservoir(args)
    states = res(u).numpy()
    assert np.abs(zoo_dense(res, u).numpy() - states).max() < 1e-4, "zoo's dense and CSR paths disagree"
    zoo_kind = "sparse CSR" if res._sparse_recurrence(u) else "dense"
    label = f"zoo (torch float32, B={args.sequences})"
    rows = {
        f"{label}, default": (zoo_kind, lambda: res(u)),
        f"{label}, dense forced": ("dense", lambda: zoo_dense(res, u)),
    }
    data = u.numpy().astype(np.float64)
    same, own = rpy_same_reservoir(res, args), rpy_own_init(args)
    err = np.abs(np.asarray(same.run(data)) - states).max()
    assert err < 1e-3, f"reservoirpy and zoo disagree on the same reservoir: max |diff| = {err:.2e}"
    for name, node in (
        ("reservoirpy (numpy float64), zoo's weights", same),
        ("reservoirpy (numpy float64), own init", own),
    ):
        rows[name] = ("sparse CSR" if hasattr(node.W, "tocsr") else "dense", lambda node=node: node.run(data))
    return rows


def main() -> None:
    args = parse_args()
    set_blas_threads(args.threads)
    import numpy as np
    import reservoirpy
    import torch

    torch.set_num_threads(args.threads)
    rows = [(label, kind, best_time(run, args.repeats)) for label, (kind, run) in contestants(args).items()]
    n_states = args.sequences * args.steps
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPU cores, threads={args.threads}; "
        f"torch {torch.__version__}, reservoirpy {reservoirpy.__version__}, numpy {np.__version__}"
    )
    print(
        f"reservoir N={args.units}, density {args.connectivity}, {args.sequences} sequences x {args.steps} steps, "
        f"input dim {args.input_dim}; best of {args.repeats}"
    )
    rates = [n_states / seconds for _, _, seconds in rows]
    print(f"| {'implementation':<44} | {'W product':<10} | {'seconds':>8} | {'states/s':>9} | {'vs rpy dense':>12} |")
    print(f"|{'-' * 46}|{'-' * 12}|{'-' * 10}|{'-' * 11}|{'-' * 14}|")
    for (label, kind, seconds), rate in zip(rows, rates):
        print(f"| {label:<44} | {kind:<10} | {seconds:8.4f} | {rate:9.0f} | {rate / rates[2]:11.1f}x |")
    print(
        f"zoo ({rows[0][1]}) / reservoirpy (own init, {rows[3][1]}): {rates[0] / rates[3]:.1f}x; "
        f"zoo dense / reservoirpy dense: {rates[1] / rates[2]:.1f}x"
    )


if __name__ == "__main__":
    main()
