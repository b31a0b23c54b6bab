"""Score a finished run's test (or validation) split greedy and with beam search, as docs/results.md records it.

The run's own dataset config reads the test split (the same files, direction and
preprocessing as in training) and the run's own metric plugins score it, so the
numbers and sacrebleu signatures match the run's summary.json; greedy decoding is
added because a run tests with one strategy only.

    python benchmarks/score_run.py RUN_DIR [RUN_DIR ...] [--beam-size 5] [--alpha A] [--split val] [--threads 1]

``--alpha`` sets gnmt's length-penalty exponent of the beam rows (default: the run's own);
``--split val`` scores the validation split, where such a setting is chosen. ``--checkpoint`` picks the
weights (default: those the run's test scored): ``best``, ``last`` or a file, e.g. an average written by
``zoo average RUN --last N``, to choose N on the validation split.

``--beam-from FILE`` adds a beam row decoded by the beam search of another version of
zoo/decoding.py, to measure what a change to the search does to the scores:

    git show af5ddea:zoo/decoding.py > /tmp/decoding_before.py   # before the stopping bound
    python benchmarks/score_run.py RUN_DIR --beam-from /tmp/decoding_before.py
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import time
from pathlib import Path

import torch

import zoo.decoding
from zoo.inference import Predictor
from zoo.registry import build
from zoo.training.evaluation import MetricSuite


def repeats_a_trigram(text: str) -> bool:
    """Whether a word trigram occurs twice: the looping a badly trained or badly stopped decoder shows."""
    words = text.split()
    trigrams = list(zip(words, words[1:], words[2:]))
    return len(set(trigrams)) < len(trigrams)


@contextlib.contextmanager
def beam_search_from(path: Path | None):
    """While active, zoo's beam search is the one in ``path`` (a copy of an older zoo/decoding.py)."""
    if path is None:
        yield
        return

    spec = importlib.util.spec_from_file_location("decoding_compared", path)
    other = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(other)
    current = zoo.decoding._beam_search
    zoo.decoding._beam_search = other._beam_search
    try:
        yield
    finally:
        zoo.decoding._beam_search = current


def score(
    run_dir: str, strategies: dict[str, tuple[dict, Path | None]], split: str = "test", checkpoint: str = "tested"
) -> list[dict]:
    """One row per decoding strategy (name -> DecodeConfig fields and the decoding.py copy whose
    beam search to use, None for this one): every metric's score and signature, and the decoding time."""
    predictor = Predictor.from_run(run_dir, checkpoint)
    cfg = predictor.module.cfg
    items = build("dataset", cfg["dataset"]).splits()[split]
    references = [item.references for item in items]
    metrics = MetricSuite(cfg)
    rows = []
    for name, (decode, beam_from) in strategies.items():
        started = time.perf_counter()
        with beam_search_from(beam_from):
            hypotheses = predictor.predict([item.source for item in items], **decode)
        seconds = time.perf_counter() - started
        scores = metrics.scores(hypotheses, references)
        repeats = sum(map(repeats_a_trigram, hypotheses))
        rows.append(
            {
                "run": run_dir,
                "decode": name,
                "seconds": seconds,
                "items": len(items),
                "repeats": repeats,
                "length_ratio": sum(len(h.split()) for h in hypotheses) / sum(len(r[0].split()) for r in references),
                **scores,
                "signatures": {m: s["signature"] for m, s in metrics.describe().items()},
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+")
    parser.add_argument("--beam-size", type=int, default=5)
    parser.add_argument(
        "--alpha", type=float, help="gnmt length-penalty exponent of the beam rows (default: the run's)"
    )
    parser.add_argument("--split", default="test", choices=("test", "val"))
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument(
        "--checkpoint",
        default="tested",
        help="tested (the weights the run's test scored), best, last or a .ckpt file (an average of zoo average)",
    )
    parser.add_argument(
        "--beam-from", type=Path, help="also decode with the beam search of this copy of zoo/decoding.py"
    )
    args = parser.parse_args()
    if args.beam_from is not None and not args.beam_from.is_file():
        parser.error(
            f"--beam-from {args.beam_from}: no such file; write one with git show COMMIT:zoo/decoding.py > FILE"
        )
    torch.set_num_threads(args.threads)
    beam = {"strategy": "beam", "beam_size": args.beam_size, **({} if args.alpha is None else {"alpha": args.alpha})}
    strategies = {"greedy": ({"strategy": "greedy"}, None), f"beam {args.beam_size}": (beam, None)}
    if args.beam_from:
        strategies[f"beam {args.beam_size} (from FILE)"] = (beam, args.beam_from)
    print(
        "| run | decoding | BLEU | chrF | words / reference words | repeated trigram | seconds |\n"
        "|---|---|---|---|---|---|---|"
    )
    signatures = {}
    for run in args.runs:
        for row in score(run, strategies, args.split, args.checkpoint):
            print(
                f"| {run} | {row['decode']} | {row.get('bleu', float('nan')):.2f} "
                f"| {row.get('chrf', float('nan')):.2f} "
                f"| {row['length_ratio']:.3f} | {row['repeats']} of {row['items']} | {row['seconds']:.0f} |"
            )
            signatures.update(row["signatures"])
    for metric, signature in signatures.items():
        print(f"{metric}: {signature}")
    if args.beam_from:
        print(f"FILE: {args.beam_from}")


if __name__ == "__main__":
    main()
