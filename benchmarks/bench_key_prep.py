"""Key-side attention work once per sentence: this tree against an older one, decoder by decoder.

Cross-attention's keys are fixed for a sentence, so a scorer's key-side work
(``Attention.prepare_keys``, e.g. additive attention's W_k k) belongs to the sentence,
not to each decoding step. Two timings, with random weights and inputs:

* Transformer decoder generation: ``init_cache`` and ``--steps`` decoding steps, with
  ``additive``, ``general`` and ``scaled_dot`` cross-attention (self-attention is
  ``scaled_dot`` throughout, so only cross-attention differs);
* RNN decoder teacher-forced forward (Bahdanau style, GRU) over ``--steps`` target
  positions, with the same scorers.

One worker process per tree serves the timings, each case warmed up once; the driver
asks for one run of a case from each tree in turn (alternating which goes first), so
another job on the machine slows both trees alike, and the table shows the median
of ``--repeats`` runs. The older tree is a checkout (``git worktree add /tmp/keyold
<commit>``) given as ``--before``; the worker imports its ``zoo/`` and, through a
symlink the script makes in a temporary folder, its ``plugins/`` as ``zoo_plugins``.

    python benchmarks/bench_key_prep.py --before /tmp/keyold            # markdown table
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from zoo.contracts import EncoderOutput
from zoo.registry import build, default_config
from zoo.registry.discovery import discover

SCORERS = ("additive", "general", "scaled_dot")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, help="a checkout of the older tree (its zoo/ and plugins/)")
    parser.add_argument(
        "--worker", action="store_true", help="serve timings of this tree on stdin/stdout (the driver starts it)"
    )
    parser.add_argument("--repeats", type=int, default=15, help="timed runs per case and tree")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument(
        "--source", type=int, default=30, help="source length (a quarter of the rows padded by a third)"
    )
    parser.add_argument("--steps", type=int, default=30, help="decoding steps / target positions")
    parser.add_argument("--d-model", type=int, default=256)
    parser.add_argument("--threads", type=int, default=1)
    return parser.parse_args()


# ------------------------------------------------------------------ worker: one tree, one process
def encoder_output(args):
    """A random encoder output: memory (B, S, d_model), mask (B, S) with padded rows, summary state (B, d_model)."""
    lengths = torch.full((args.batch,), args.source)
    lengths[: args.batch // 4] = args.source * 2 // 3
    mask = torch.arange(args.source)[None, :] < lengths[:, None]
    memory = torch.randn(args.batch, args.source, args.d_model) * mask[..., None]
    return EncoderOutput(memory=memory, mask=mask, state=memory.mean(dim=1))


def build_decoder(name: str, scorer: str, args):
    """A decoder of the default config (RNN hidden size = d_model), cross-attention by ``scorer``."""
    cfg = default_config("decoder", name)
    if name == "rnn":
        cfg["hidden_size"] = args.d_model
    extra = {"self_scorer": {"name": "scaled_dot"}} if name == "transformer" else {}
    decoder = build(
        "decoder",
        cfg,
        vocab_size=1000,
        memory_dim=args.d_model,
        state_dim=args.d_model,
        scorer=default_config("attention", scorer),
        posenc={"name": "sinusoidal"},
        **extra,
    )
    return decoder.eval()


def generate(decoder, enc, tokens) -> None:
    """init_cache, then one step per column of tokens (B, steps): what greedy search does, minus the argmax."""
    cache = decoder.init_cache(enc)
    for t in range(tokens.shape[1]):
        _, cache, _ = decoder.step(tokens[:, t], enc, cache, t)


def cases() -> dict[str, tuple[str, str]]:
    """{case name: (decoder, scorer)} for every timed case."""
    names = {f"transformer generation, {scorer} cross-attention": ("transformer", scorer) for scorer in SCORERS}
    names.update({f"rnn teacher-forced forward, {scorer} attention": ("rnn", scorer) for scorer in SCORERS})
    return names


def timed_runs(args):
    """{case name: a function that runs the case once}: generation under no_grad, teacher forcing with autograd on."""
    torch.manual_seed(0)
    enc = encoder_output(args)
    tokens = torch.randint(4, 1000, (args.batch, args.steps))
    runs = {}
    for case, (name, scorer) in cases().items():
        decoder = build_decoder(name, scorer, args)
        if name == "transformer":
            runs[case] = torch.no_grad()(lambda decoder=decoder: generate(decoder, enc, tokens))
        else:
            runs[case] = lambda decoder=decoder: decoder(tokens, enc)
    return runs


def worker(args) -> None:
    """Serve timings of this process's tree: read a case name per line, answer its wall time in seconds."""
    discover()
    torch.set_num_threads(args.threads)
    runs = timed_runs(args)
    for run in runs.values():
        run()  # warm-up
    print("ready", flush=True)
    for line in sys.stdin:
        start = time.perf_counter()
        runs[line.strip()]()
        print(time.perf_counter() - start, flush=True)


# ------------------------------------------------------------------ driver: both trees, interleaved
def plugin_path(tree: Path, scratch: Path) -> str:
    """A PYTHONPATH on which ``zoo`` and ``zoo_plugins`` are the tree's (plugins/ is shipped as zoo_plugins)."""
    link = scratch / "zoo_plugins"
    link.symlink_to(tree.resolve() / "plugins")
    return os.pathsep.join([str(tree.resolve()), str(scratch)])


def start_worker(tree: Path, scratch: Path, argv: list[str]) -> subprocess.Popen:
    """A worker process with ``tree``'s zoo first on the path; checks that it really imports that tree."""
    env = dict(os.environ, PYTHONPATH=plugin_path(tree, scratch))
    check = "import zoo, zoo_plugins; print(zoo.__file__, zoo_plugins.__path__[0])"
    where = subprocess.run(
        [sys.executable, "-c", check], env=env, cwd=scratch, capture_output=True, text=True, check=True
    )
    zoo_file, plugins_dir = where.stdout.split()
    if not (
        Path(zoo_file).resolve().is_relative_to(tree.resolve())
        and Path(plugins_dir).resolve() == (tree / "plugins").resolve()
    ):
        raise SystemExit(f"the worker for {tree} imported {zoo_file} and {plugins_dir}")
    process = subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), "--worker", *argv],
        env=env,
        cwd=scratch,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    if process.stdout.readline().strip() != "ready":
        raise SystemExit(f"the worker for {tree} did not start")
    return process


def ask(process: subprocess.Popen, case: str) -> float:
    """One timed run of ``case`` in a worker: its wall time in seconds."""
    process.stdin.write(case + "\n")
    process.stdin.flush()
    return float(process.stdout.readline())


def worker_argv(args) -> list[str]:
    """The options a worker needs, as its command line."""
    options = ("batch", "source", "steps", "d_model", "threads")
    return [part for name in options for part in (f"--{name.replace('_', '-')}", str(getattr(args, name)))]


def compare(args) -> None:
    """Time every case ``--repeats`` times in each tree, the two trees alternating run by run so both see
    the same machine load (another job on the machine slows both alike), then print the medians."""
    here = Path(__file__).resolve().parents[1]
    times: dict[str, dict[str, list[float]]] = {"before": {}, "after": {}}
    with tempfile.TemporaryDirectory() as before_dir, tempfile.TemporaryDirectory() as after_dir:
        workers = {
            "before": start_worker(args.before, Path(before_dir), worker_argv(args)),
            "after": start_worker(here, Path(after_dir), worker_argv(args)),
        }
        for repeat in range(args.repeats):
            for case in cases():
                for label in ("before", "after") if repeat % 2 == 0 else ("after", "before"):
                    times[label].setdefault(case, []).append(ask(workers[label], case))
        for process in workers.values():
            process.stdin.close()
            process.wait()
    print_table(
        args, {label: {case: statistics.median(t) for case, t in by_case.items()} for label, by_case in times.items()}
    )


def print_table(args, times: dict[str, dict[str, float]]) -> None:
    """The markdown table: per case, the median milliseconds in each tree and their ratio."""
    print(
        f"batch {args.batch}, source {args.source}, {args.steps} steps, d_model {args.d_model}, "
        f"{args.threads} thread(s), torch {torch.__version__}, {platform.machine()}; "
        f"median of {args.repeats} runs per case, the two trees alternating"
    )
    print()
    print("| case | before (ms) | after (ms) | before / after |")
    print("|---|---:|---:|---:|")
    for case, before in times["before"].items():
        after = times["after"][case]
        print(f"| {case} | {before * 1e3:.1f} | {after * 1e3:.1f} | {before / after:.2f} |")


def main() -> None:
    args = parse_args()
    if args.worker:
        worker(args)
    elif args.before is None:
        raise SystemExit("give --before OLD_TREE (e.g. git worktree add /tmp/keyold HEAD~1)")
    else:
        compare(args)


if __name__ == "__main__":
    main()
