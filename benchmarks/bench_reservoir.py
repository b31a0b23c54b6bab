"""Reservoir states per second: zoo (torch, batched) vs reservoirpy (numpy, one sequence at a time).

    python benchmarks/bench_reservoir.py [--units 1000 --sequences 64 --steps 100 --input-dim 32]

Both libraries run the *same* reservoir: zoo's random weights (dense W at density
``--connectivity``) are handed to reservoirpy as dense numpy arrays, and the states are
checked to agree before anything is timed. Extra reservoirpy rows show its own float64
default and its default sparse (CSR) recurrent matrix of the same density. zoo runs all
sequences as one batch (B = sequences); reservoirpy runs the list of sequences through
``Reservoir.run`` the normal way (``workers=1``), one after another. Both get
``--threads`` threads (torch.set_num_threads; OMP/OpenBLAS variables for numpy).
Timings are the best of ``--repeats`` runs after one warm-up. reservoirpy is a bench extra
(``pip install -e .[bench]``); zoo itself never imports it.
"""
from __future__ import annotations

import argparse
import os
import platform
import time

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
args = parser.parse_args()

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):  # before numpy loads its BLAS
    os.environ[var] = str(args.threads)

import numpy as np  # noqa: E402
import reservoirpy  # noqa: E402
import torch  # noqa: E402
from reservoirpy.nodes import Reservoir as RpyReservoir  # noqa: E402

from zoo.reservoir import Reservoir  # noqa: E402

torch.set_num_threads(args.threads)


def best_time(fn, repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


n_states = args.sequences * args.steps
rng = np.random.default_rng(0)
inputs = rng.standard_normal((args.sequences, args.steps, args.input_dim)).astype(np.float32)

zoo_res = Reservoir(
    args.input_dim,
    args.units,
    leak_rate=args.leak_rate,
    spectral_radius=args.spectral_radius,
    connectivity=args.connectivity,
    bias_scaling=0.2,
    seed=0,
)
u = torch.from_numpy(inputs)
zoo_states = zoo_res(u).numpy()


def rpy_dense(dtype):
    return RpyReservoir(
        units=args.units,
        lr=args.leak_rate,
        W=zoo_res.W.numpy().astype(dtype),
        Win=zoo_res.W_in.numpy().astype(dtype),
        bias=zoo_res.b.numpy().astype(dtype),
        input_dim=args.input_dim,
        dtype=dtype,
    )


def rpy_sparse():
    return RpyReservoir(
        units=args.units,
        lr=args.leak_rate,
        sr=args.spectral_radius,
        rc_connectivity=args.connectivity,
        input_connectivity=1.0,
        input_dim=args.input_dim,
        seed=0,
    )


rows = [("zoo (torch, float32, batched B=%d)" % args.sequences, "dense", best_time(lambda: zoo_res(u), args.repeats))]
for label, make, data in (
    ("reservoirpy (numpy, float32)", lambda: rpy_dense(np.float32), inputs),
    ("reservoirpy (numpy, float64 default)", lambda: rpy_dense(np.float64), inputs.astype(np.float64)),
    ("reservoirpy (numpy, float64, own init)", rpy_sparse, inputs.astype(np.float64)),
):
    node = make()
    states = np.asarray(node.run(data))
    if make is not rpy_sparse:  # the same weights must give the same states
        err = np.abs(states - zoo_states).max()
        assert err < 1e-3, f"reservoirpy and zoo disagree on the same reservoir: max |diff| = {err:.2e}"
    w = node.W
    kind = "sparse CSR" if hasattr(w, "tocsr") else "dense"
    rows.append((label, kind, best_time(lambda: node.run(data), args.repeats)))

print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPU cores, threads={args.threads}; "
      f"torch {torch.__version__}, reservoirpy {reservoirpy.__version__}, numpy {np.__version__}")
print(f"reservoir N={args.units}, density {args.connectivity}, {args.sequences} sequences x {args.steps} steps, "
      f"input dim {args.input_dim}; best of {args.repeats}")
zoo_rate = n_states / rows[0][2]
print(f"| {'implementation':<40} | {'W':<10} | {'seconds':>8} | {'states/s':>10} | {'zoo speed-up':>12} |")
print(f"|{'-' * 42}|{'-' * 12}|{'-' * 10}|{'-' * 12}|{'-' * 14}|")
for label, kind, seconds in rows:
    rate = n_states / seconds
    print(f"| {label:<40} | {kind:<10} | {seconds:8.4f} | {rate:10.0f} | {zoo_rate / rate:11.1f}x |")
