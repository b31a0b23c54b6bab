"""How much two workers on one study save: the wall time of an 8-trial search run by one ``zoo train -m`` process
against the same search run by two at once on one sweep directory (zoo.search.workers).

    python benchmarks/search_workers.py                 # 2 rounds of an 8-trial search, tiny GRU trials
    python benchmarks/search_workers.py --rounds 3 --trials 8 --epochs 4

The two are timed side by side: each round runs both, the order reversed every other round, so load from other
processes hits both alike; the ratio is the median of the rounds' ratios (two workers' time over one's; the goal is
about 0.5). Every search is a real process from the start of the interpreter to its exit, so the seconds each
spends starting (imports, composing the studies) are in both. Each worker trains on one thread
(``trainer.cpu_threads=1``, the default), so two workers need two idle cores: the load average before and after
each round is printed beside it. Every search must end with exactly ``--trials`` finished trials (checked).

Each worker starts in a session of its own, as each task of a SLURM array is a job of its own: where Linux shares
the CPU between sessions first (``/proc/sys/kernel/sched_autogroup_enabled``), two workers started from one shell
share one session's part of a busy machine, and would measure nothing but that.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: A tiny GRU search: the trials train a few seconds each, long enough that a trial outweighs starting a process.
SETTINGS = [
    "hydra/sweeper=optuna",
    "model=gru",
    "experiment=smoke",
    "frontend.dim=32",
    "encoder.hidden_size=32",
    "decoder.hidden_size=32",
    "decoder.embed_dim=32",
    "trainer.enable_progress_bar=false",
    "dataset.train_size=400",
    "dataset.val_size=16",
    "dataset.test_size=8",
    "hydra.sweeper.reseed=[]",
]


def search(workers: int, trials: int, epochs: int, folder: Path) -> float:
    """Seconds until ``workers`` processes, started at once on one sweep directory, have all ended."""
    command = [
        sys.executable,
        "-m",
        "zoo.cli",
        "train",
        "-m",
        *SETTINGS,
        f"trainer.max_epochs={epochs}",
        f"hydra.sweeper.trials={trials}",
        f"hydra.sweep.dir={folder / 'search'}",
        "resume_mode=auto",
    ]
    started = time.perf_counter()
    processes = [  # each in a session of its own, as a job of a cluster is (see the module's text)
        subprocess.Popen(
            command, cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True
        )
        for _ in range(workers)
    ]
    for process in processes:
        _, err = process.communicate()
        if process.returncode != 0:
            raise SystemExit(f"a worker failed ({process.returncode}):\n{err[-3000:]}")
    seconds = time.perf_counter() - started
    finished = [p for p in (folder / "search").glob("*/summary.json") if '"status": "finished"' in p.read_text()]
    if len(finished) != trials:
        raise SystemExit(f"{workers} worker(s) finished {len(finished)} trials, not {trials}")
    return seconds


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3]) if Path("/proc/loadavg").exists() else "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--trials", type=int, default=8)
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} cores; {args.trials} trials of a tiny GRU, {args.epochs} epochs each")
    print("| round | one worker (s) | two workers (s) | ratio | load before | load after |")
    print("|---|---|---|---|---|---|")
    ratios = []
    for round_ in range(args.rounds):
        before, seconds = load(), {}
        for workers in (1, 2) if round_ % 2 == 0 else (2, 1):
            with tempfile.TemporaryDirectory(prefix="zoo-workers-") as folder:
                seconds[workers] = search(workers, args.trials, args.epochs, Path(folder))
        ratios.append(seconds[2] / seconds[1])
        print(f"| {round_ + 1} | {seconds[1]:.1f} | {seconds[2]:.1f} | {ratios[-1]:.2f} | {before} | {load()} |")
    print(f"\nmedian ratio (two workers' wall time / one's): {statistics.median(ratios):.2f} (goal: about 0.5)")


if __name__ == "__main__":
    main()
