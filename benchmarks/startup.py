"""How long zoo takes to answer the commands a new user types first: ``zoo --help``, ``zoo --version``, ``zoo list``,
``zoo train --help`` and a one-line config error, each a fresh process from a warm install (run once before it is
timed, so the registry's cached index and Python's bytecode exist).

Wall time says what a user waits; CPU time (the process's user + system) says what it costs and moves less with
the machine's load, which the table's heading reports. With ``--before TREE`` (an older checkout of the old layout,
``zoo_plugins/`` and ``zoo/conf/``, e.g. ``git archive <commit> | tar -x -C /tmp/old``) each command also runs from
that tree, on ``PYTHONPATH``, in turn with this one, so another job on the machine slows both alike; the table
shows the medians of ``--repeats`` runs side by side and their ratio.

    python benchmarks/startup.py                        # this install
    python benchmarks/startup.py --before /tmp/old      # an older tree and this install, side by side
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: Each command with the arguments it gives zoo and its goal on an idle 2-core machine (seconds, wall).
COMMANDS = {
    "zoo --help": (["--help"], 0.3),
    "zoo --version": (["--version"], 0.3),
    "zoo list": (["list"], 1.0),
    "zoo train --help": (["train", "--help"], 1.5),
    "zoo train encoder.hidden_size=0": (["train", "encoder.hidden_size=0"], 1.5),
}


def timed(args: list[str], env: dict[str, str], cwd: str) -> tuple[float, float]:
    """One zoo process: its wall time and its CPU time (user + system), in seconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "zoo.cli", *args], env=env, cwd=cwd, capture_output=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def environment(tree: Path | None, cache: str) -> dict[str, str]:
    """This process's environment with its own cache folder, and ``tree`` first on the path where given."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ZOO_PLUGIN_DIRS")}
    env["ZOO_CACHE_DIR"] = cache
    if tree is not None:
        env["PYTHONPATH"] = str(tree.resolve())
    return env


def median_times(args: list[str], setups: list[dict[str, str]], cwd: str, repeats: int) -> list[tuple[float, float]]:
    """Each setup's median wall and CPU time for ``args``, the setups taking turns (a warm-up run each first)."""
    for env in setups:
        timed(args, env, cwd)
    runs: list[list[tuple[float, float]]] = [[] for _ in setups]
    for _ in range(repeats):
        for k, env in enumerate(setups):
            runs[k].append(timed(args, env, cwd))
    return [(statistics.median(w for w, _ in r), statistics.median(c for _, c in r)) for r in runs]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, help="an older tree to time side by side with this install")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs of each command (median shown)")
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        trees = ([opts.before] if opts.before else []) + [None]
        setups = [environment(tree, os.path.join(scratch, f"cache{k}")) for k, tree in enumerate(trees)]
        load = os.getloadavg()[0]
        print(f"{os.cpu_count()} cores, load average {load:.1f} at the start; median of {opts.repeats} runs\n")
        columns = ["before: wall", "before: CPU", "after: wall", "after: CPU", "CPU ratio"] if opts.before else []
        heads = ["command", "goal (idle)", *(columns or ["wall", "CPU"])]
        print("| " + " | ".join(heads) + " |\n|" + "---|" * len(heads))
        for name, (args, goal) in COMMANDS.items():
            times = median_times(args, setups, scratch, opts.repeats)
            cells = [f"`{name}`", f"≤ {goal} s", *(f"{t:.2f} s" for pair in times for t in pair)]
            if opts.before:
                cells.append(f"{times[0][1] / times[1][1]:.1f}×")
            print("| " + " | ".join(cells) + " |", flush=True)
        print(f"\nload average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
