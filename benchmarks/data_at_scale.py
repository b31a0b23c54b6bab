"""Data at scale: prepare a WMT-sized corpus once, then train from the memory-mapped files.

Builds a parallel corpus from Multi30k (train.en/train.de under --multi30k): each pair
joins Multi30k training pairs at random until both sides have 20-30 words, so a
corpus of 4.5 million pairs is WMT14 English-German's size with sentences about
twice Multi30k's length; validation and test are Multi30k's own. Then it measures,
each in its own process, polling /proc for resident memory (VmRSS, and PSS: pages
shared between processes counted once, split among them):

  prepare     `zoo prepare` of the corpus (dataset=parallel, the multi30k preset's BPE)
  prepare-repeated  the same of Multi30k's training split repeated to 1,015,000 pairs
  first step  `zoo train` of one optimiser step from the prepared files, start to exit
  train       `zoo train` of --steps steps: peak resident memory, model included
  repeat      Multi30k's training split repeated to 1,015,000 pairs: `zoo train` of --steps steps,
              prepared (data.prepare=true) against read into memory (data.prepare=false)
  ddp         two gloo processes (trainer=ddp_cpu) over the 1,015,000-pair corpus: each rank's RSS and PSS
  speed       tokens/s on Multi30k itself, prepared against in memory (--speed-steps steps each, alternating)
  checksums   what the prepared files' checksums cost over the 1,015,000 pairs (prepared first if need be):
              hashing every file (once as it is written) and checking the folder (each time a run opens it)

    python benchmarks/data_at_scale.py --multi30k ../shared/data/multi30k --work /tmp/scale [--pairs 4500000]
        [--only prepare,first,train,prepare-repeated,repeat,ddp,speed,checksums]

Prints a Markdown table; docs/results.md ("Data at scale") records a run of it.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

ZOO = [sys.executable, "-m", "zoo.cli"]
#: The multi30k preset (its default model: the GRU encoder-decoder with additive attention), pointed at a corpus.
PRESET = ["experiment=multi30k", "trainer.enable_progress_bar=false", "trainer.cpu_threads=1"]


def read(path: Path) -> list[str]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [line.rstrip("\n") for line in handle]


def write(path: Path, lines) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        for line in lines:
            handle.write(line + "\n")


def make_corpus(multi30k: Path, out: Path, pairs: int, long: bool) -> Path:
    """``out`` with train.{en,de} of ``pairs`` pairs (joined to 20-30 words a side when ``long``, else Multi30k's
    own repeated) and Multi30k's val and test_2016_flickr; made once."""
    if (out / "train.de").is_file():
        return out
    out.mkdir(parents=True, exist_ok=True)
    en, de = read(multi30k / "train.en.gz"), read(multi30k / "train.de.gz")
    rng = random.Random(0)

    def joined():
        for _ in range(pairs):
            source, target = [], []
            while len(source) < 20 or len(target) < 20:
                k = rng.randrange(len(en))
                source, target = source + en[k].split(), target + de[k].split()
            yield " ".join(source[:30]), " ".join(target[:30])

    rows = joined() if long else ((en[k % len(en)], de[k % len(de)]) for k in range(pairs))
    with open(out / "train.en", "w", encoding="utf-8") as fen, open(out / "train.de", "w", encoding="utf-8") as fde:
        for source, target in rows:
            fen.write(source + "\n")
            fde.write(target + "\n")
    for split in ("val", "test_2016_flickr"):
        for lang in ("en", "de"):
            write(out / f"{split}.{lang}", read(multi30k / f"{split}.{lang}.gz"))
    return out


def children(pid: int) -> list[int]:
    """Every descendant (started from a main thread: zoo's prepare child, DDP's second process)."""
    try:
        found = [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []
    return found + [grandchild for c in found for grandchild in children(c)]


def memory(pid: int) -> tuple[int, int]:
    """(RSS, PSS) of a process in bytes, 0 once it is gone."""
    try:
        rss = next(int(line.split()[1]) for line in open(f"/proc/{pid}/status") if line.startswith("VmRSS"))
        pss = next(int(line.split()[1]) for line in open(f"/proc/{pid}/smaps_rollup") if line.startswith("Pss:"))
        return rss * 1024, pss * 1024
    except (OSError, StopIteration):
        return 0, 0


def measure(args: list[str], cwd: Path, env: dict) -> dict:
    """Run ``zoo ARGS``; wall seconds and, per process of its tree, the peak RSS and PSS seen (every 0.5 s)."""
    started = time.perf_counter()
    log = cwd / "last_command.log"
    with open(log, "wb") as sink:
        process = subprocess.Popen([*ZOO, *args], cwd=cwd, env=env, stdout=sink, stderr=subprocess.STDOUT)
        peaks = watch(process)
    output = log.read_text(errors="replace")
    if process.returncode:
        raise SystemExit(f"zoo {' '.join(args)} failed:\n{output[-3000:]}")
    return {"seconds": time.perf_counter() - started, "peaks": peaks, "output": output}


def watch(process: subprocess.Popen) -> dict[int, list[int]]:
    """Until ``process`` ends: per process of its tree, the peak RSS and PSS seen."""
    peaks: dict[int, list[int]] = {}
    while process.poll() is None:
        for pid in [process.pid, *children(process.pid)]:
            rss, pss = memory(pid)
            peak = peaks.setdefault(pid, [0, 0])
            peak[0], peak[1] = max(peak[0], rss), max(peak[1], pss)
        time.sleep(0.5)
    return peaks


def fresh(path: Path) -> Path:
    """A run folder of this benchmark's, emptied of an earlier measurement."""
    shutil.rmtree(path, ignore_errors=True)
    return path


def mb(value: float) -> str:
    return f"{value / 1e6:,.0f} MB"


def summary(run: Path) -> dict:
    return json.loads((run / "summary.json").read_text())


def checksum_rows(work: Path, env: dict, corpus: Path) -> list[tuple[str, str, str]]:
    """Hashing the prepared files of ``corpus`` (what writing them adds) and checking the folder (what each run's
    opening adds), in this process, the files in the page cache as after a prepare; the best of three of each."""
    from zoo.data.store import MANIFEST, checksum, incomplete

    measure(["prepare", *PRESET, f"dataset.root={corpus}"], work, env)
    (folder,) = [
        manifest.parent
        for manifest in (work / "cache" / "prepared").glob(f"*/{MANIFEST}")
        if json.loads(manifest.read_text())["inputs"]["dataset"]["root"] == str(corpus)
    ]
    files = [path for path in folder.rglob("*") if path.is_file() and path.name != MANIFEST]
    size = sum(path.stat().st_size for path in files)

    def best(work_once) -> float:
        times = []
        for _ in range(3):
            started = time.perf_counter()
            work_once()
            times.append(time.perf_counter() - started)
        return min(times)

    hashing = best(lambda: [checksum(path) for path in files])
    checking = best(lambda: incomplete(folder))
    what = f"{len(files)} files, {mb(size)}"
    return [
        (
            f"checksums of 1,015,000 prepared pairs ({what}): hashed as written",
            f"{hashing:.2f} s",
            f"{size / hashing / 1e6:,.0f} MB/s",
        ),
        (
            "the same, checked as a run opens the folder (`incomplete`)",
            f"{checking:.2f} s",
            f"{size / checking / 1e6:,.0f} MB/s",
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--multi30k", type=Path, required=True)
    parser.add_argument("--work", type=Path, default=Path("/tmp/zoo-scale"))
    parser.add_argument("--pairs", type=int, default=4_500_000)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--speed-steps", type=int, default=300)
    parser.add_argument("--only", default="prepare,first,train,prepare-repeated,repeat,ddp,speed,checksums")
    opts = parser.parse_args()
    only = set(opts.only.split(","))
    work = opts.work.resolve()
    env = {**os.environ, "ZOO_CACHE_DIR": str(work / "cache"), "OMP_NUM_THREADS": "1", "WANDB_MODE": "disabled"}
    rows = []
    large = make_corpus(opts.multi30k, work / "wmt_sized", opts.pairs, long=True)
    on_large = [*PRESET, f"dataset.root={large}"]
    train = ["train", "test=false", "trainer.limit_val_batches=0", "trainer.max_epochs=1"]

    if "prepare" in only:
        result = measure(["prepare", *on_large], work, env)
        peak = max(rss for rss, _ in result["peaks"].values())
        rows.append((f"prepare {opts.pairs:,} pairs (20-30 words a side)", f"{result['seconds']:.0f} s", mb(peak)))
        print(result["output"], flush=True)
    if "first" in only:
        first = ["trainer.max_steps=1", f"hydra.run.dir={fresh(work / 'first')}"]
        result = measure([*train, *on_large, *first], work, env)
        peak = max(rss for rss, _ in result["peaks"].values())
        rows.append(("one step from the prepared files, start to exit", f"{result['seconds']:.0f} s", mb(peak)))
    if "train" in only:
        steps = f"trainer.max_steps={opts.steps}"
        result = measure([*train, *on_large, steps, f"hydra.run.dir={fresh(work / 'train')}"], work, env)
        peak = max(rss for rss, _ in result["peaks"].values())
        rows.append((f"{opts.steps} steps from the prepared files", f"{result['seconds']:.0f} s", mb(peak)))
    repeated = make_corpus(opts.multi30k, work / "repeated", 1_015_000, long=False)
    on_repeated = [*PRESET, f"dataset.root={repeated}", f"trainer.max_steps={opts.steps}"]
    if "prepare-repeated" in only:
        result = measure(["prepare", *PRESET, f"dataset.root={repeated}"], work, env)
        peak = max(rss for rss, _ in result["peaks"].values())
        rows.append(("prepare 1,015,000 pairs (Multi30k repeated)", f"{result['seconds']:.0f} s", mb(peak)))
    if "repeat" in only:
        for prepare in ("true", "false"):
            result = measure(
                [*train, *on_repeated, f"data.prepare={prepare}", f"hydra.run.dir={fresh(work / f'repeat-{prepare}')}"],
                work,
                env,
            )
            peak = max(rss for rss, _ in result["peaks"].values())
            how = "prepared" if prepare == "true" else "in memory"
            rows.append((f"1,015,000 pairs, {opts.steps} steps, {how}", f"{result['seconds']:.0f} s", mb(peak)))
    if "ddp" in only:
        result = measure([*train, *on_repeated, "trainer=ddp_cpu", f"hydra.run.dir={fresh(work / 'ddp')}"], work, env)
        for rank, (pid, (rss, pss)) in enumerate(sorted(result["peaks"].items())):
            rows.append(
                (f"ddp_cpu over 1,015,000 prepared pairs: process {rank} (pid {pid})", mb(rss), f"PSS {mb(pss)}")
            )
    if "speed" in only:
        on_multi30k = [*PRESET, f"dataset.root={opts.multi30k}", f"trainer.max_steps={opts.speed_steps}"]
        speeds = {"true": [], "false": []}
        for turn in range(2):
            for prepare in ("true", "false") if turn % 2 == 0 else ("false", "true"):
                run = fresh(work / f"speed-{prepare}-{turn}")
                measure([*train, *on_multi30k, f"data.prepare={prepare}", f"hydra.run.dir={run}"], work, env)
                speeds[prepare].append(summary(run)["tokens_per_second"])
        mean = {k: sum(v) / len(v) for k, v in speeds.items()}
        rows.append(("Multi30k tokens/s, prepared", f"{mean['true']:,.0f}", str([round(s) for s in speeds["true"]])))
        rows.append(("Multi30k tokens/s, in memory", f"{mean['false']:,.0f}", str([round(s) for s in speeds["false"]])))
        rows.append(("prepared / in memory", f"{mean['true'] / mean['false']:.3f}", ""))
    if "checksums" in only:
        rows.extend(checksum_rows(work, env, repeated))
    print("| measurement | value | memory / detail |\n|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
