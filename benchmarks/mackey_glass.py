"""One-step-ahead Mackey-Glass prediction with zoo's reservoir and ridge readout.

    python benchmarks/mackey_glass.py [--units 300 1000 --seeds 0 1 2 3 4]

The series is Mackey & Glass (1977) with tau = 17, beta = 0.2, gamma = 0.1, n = 10,
integrated by RK4 at dt = 0.1 and sampled every 1 time unit (:func:`zoo.reservoir.mackey_glass`),
after discarding 100 samples of transient. The reservoir reads x_t and a ridge readout
predicts x_{t+1}: trained on the first 2000 steps (the first 100 of them washout), tested
on the next 1000, scored by NRMSE (RMSE / std of the target). The seed picks both the
series' initial history and the reservoir. Baselines: persistence (predict x_t) and a
linear readout of x_t alone.
"""

from __future__ import annotations

import argparse
import statistics

import torch

from zoo.reservoir import Reservoir, RidgeReadout, mackey_glass, nrmse

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--units", type=int, nargs="+", default=[100, 300, 1000])
parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
parser.add_argument("--train", type=int, default=2000)
parser.add_argument("--test", type=int, default=1000)
parser.add_argument("--washout", type=int, default=100)
parser.add_argument("--leak-rate", type=float, default=1.0)
parser.add_argument("--spectral-radius", type=float, default=1.25)
parser.add_argument("--input-scaling", type=float, default=0.5)
parser.add_argument("--connectivity", type=float, default=0.1)
parser.add_argument("--ridge", type=float, default=1e-8)
args = parser.parse_args()


def split(seed: int):
    series = mackey_glass(args.train + args.test + 1, seed=seed, discard=100)
    u, y = series[:-1, None].float(), series[1:, None].float()
    return u, y


def score(features: torch.Tensor, y: torch.Tensor) -> float:
    readout = RidgeReadout().fit(features[: args.train], y[: args.train], ridge=args.ridge, washout=args.washout)
    return nrmse(readout(features[args.train :]), y[args.train :])


rows = []
persistence, linear = [], []
for seed in args.seeds:
    u, y = split(seed)
    persistence.append(nrmse(u[args.train :], y[args.train :]))
    linear.append(score(u, y))
rows.append(("persistence: predict x_t", persistence))
rows.append(("linear readout of x_t", linear))
for units in args.units:
    scores = []
    for seed in args.seeds:
        u, y = split(seed)
        reservoir = Reservoir(
            1,
            units,
            leak_rate=args.leak_rate,
            spectral_radius=args.spectral_radius,
            input_scaling=args.input_scaling,
            connectivity=args.connectivity,
            seed=seed,
        )
        scores.append(score(reservoir(u), y))
    rows.append((f"ESN N={units}", scores))

print(
    f"Mackey-Glass one-step-ahead, train {args.train} (washout {args.washout}), test {args.test}; "
    f"leak {args.leak_rate}, rho {args.spectral_radius}, input scaling {args.input_scaling}, "
    f"density {args.connectivity}, ridge {args.ridge}; seeds {args.seeds}"
)
print(f"| {'model':<26} | {'NRMSE mean':>10} | {'min':>9} | {'max':>9} |")
print(f"|{'-' * 28}|{'-' * 12}|{'-' * 11}|{'-' * 11}|")
for name, scores in rows:
    print(f"| {name:<26} | {statistics.mean(scores):10.2e} | {min(scores):9.2e} | {max(scores):9.2e} |")
