"""Mamba's selective scan and a Mamba layer of this checkout against another commit's, side by side.

A change to the scan (zoo/nn/ssm.py, zoo/nn/recurrence.*) is measured against the code before it: the other commit
is checked out into a temporary git worktree, and fresh processes of each take turns (``--pairs`` times), one
thread each, so that load from other processes hits both alike. Each process times forward + backward at the
shapes training meets: a Multi30k batch (130 sentences of 16 tokens; 512 channels, and a bidirectional block's
two directions in one scan, 1,024 channels in 2 groups), a batch of the built-in data (32 × 62) and one long
sequence (1 × 1,024 for the scan, 1 × 2,048 for the layer), 16 states; the median of 5 calls after a warm-up.

    python benchmarks/scan_against.py 3e43f71 [--pairs 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SCANS = [(130, 16, 512, 1), (130, 16, 1024, 2), (32, 62, 256, 1), (1, 1024, 256, 1)]  # batch, length, channels, groups
LAYERS = [(130, 16, 256), (32, 62, 128), (1, 2048, 128)]  # batch, length, d_model

TIMER = """
import json, statistics, time, torch
from zoo.nn.ssm import Mamba, chunked_selective_scan
torch.set_num_threads(1)
torch.manual_seed(0)

def median_ms(step):
    step()
    times = []
    for _ in range(5):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3

def scan(batch, length, channels, groups):
    u = torch.randn(batch, length, channels, requires_grad=True)
    delta = (torch.rand(batch, length, channels) * 0.1).requires_grad_()
    A = (-torch.rand(channels, 16)).requires_grad_()
    B, C = (torch.randn(batch, length, groups, 16, requires_grad=True) for _ in "BC")
    def step():
        y, last = chunked_selective_scan(u, delta, A, B, C)
        (y.sum() + last.sum()).backward()
    return median_ms(step)

def layer(batch, length, d_model):
    mamba, x = Mamba(d_model), torch.randn(batch, length, d_model, requires_grad=True)
    return median_ms(lambda: mamba(x).sum().backward())

print(json.dumps({"scan": [scan(*s) for s in SCANS], "layer": [layer(*s) for s in LAYERS]}))
"""


def measure(root: Path) -> dict[str, list[float]]:
    """One fresh process's timings, with ``root``'s zoo first on the path."""
    code = f"SCANS = {SCANS!r}\nLAYERS = {LAYERS!r}\n{TIMER}"
    env_path = f"import sys; sys.path.insert(0, {str(root)!r})\n"
    out = subprocess.run([sys.executable, "-c", env_path + code], check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("ref", help="the commit to measure against (e.g. the one before the change)")
    parser.add_argument("--pairs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        other = Path(folder) / "other"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(other), args.ref], check=True)
        try:
            runs: dict[str, list[dict]] = {"before": [], "now": []}
            for _ in range(args.pairs):
                runs["before"].append(measure(other))
                runs["now"].append(measure(ROOT))
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(other)], check=True)
    print(f"ms per forward + backward, median of {args.pairs} processes each; before = {args.ref}")
    print("| what | shape | before | now | before / now |")
    print("|---|---|---|---|---|")
    for kind, shapes in (("scan", SCANS), ("layer", LAYERS)):
        for index, shape in enumerate(shapes):
            before, now = (statistics.median(run[kind][index] for run in runs[side]) for side in ("before", "now"))
            label = " × ".join(str(n) for n in shape)
            print(f"| {kind} | {label} | {before:.1f} | {now:.1f} | {before / now:.2f}× |")


if __name__ == "__main__":
    main()
