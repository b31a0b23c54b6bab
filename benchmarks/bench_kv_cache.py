"""What each key/value layout of the Transformer decoder caches while generating, and how fast it generates.

For each finished run given (e.g. the four of ``zoo train -m experiment=compare_kv``,
or ``zoo train experiment=transformer kv_layout=gqa``, ...):

* cache bytes per generated token and layer: what one decoding step adds to one
  layer's self-attention cache, measured on the cache tensors themselves; and the
  cross-attention cache per source token and layer, built once per sentence;
* greedy generation speed over the run's test set, in batches of ``--batch``
  sentences: output tokens (EOS not counted) per second of encoding and decoding
  (tokenisation excluded), the median of ``--rounds`` rounds; the runs take turns
  within each round, so all of them see the same machine load;
* the run's test BLEU, from its summary.json.

    python benchmarks/bench_kv_cache.py RUN_DIR [RUN_DIR ...] [--batch 64] [--rounds 3] [--threads 1]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from pathlib import Path

import torch

from zoo import load
from zoo.contracts import BOS
from zoo.decoding import greedy
from zoo.registry import build

#: Decoding steps over which the self-attention cache growth is measured.
CACHE_STEPS = 8


def layout_name(decoder: dict) -> str:
    """The decoder's key/value layout in words: mha, gqa/mqa with its kv_heads, or mla with its latent width."""
    heads, kv_heads = decoder["heads"], decoder.get("kv_heads") or decoder["heads"]
    if decoder.get("kv_latent_dim"):
        return f"mla (latent {decoder['kv_latent_dim']})"
    if kv_heads == heads:
        return f"mha ({heads} heads)"
    return "mqa (1 kv head)" if kv_heads == 1 else f"gqa ({kv_heads} kv heads)"


def nbytes(tensors: dict) -> int:
    return sum(t.numel() * t.element_size() for t in tensors.values())


@torch.no_grad()
def cache_bytes(model, source: torch.Tensor) -> tuple[float, float]:
    """(self-attention bytes per generated token and layer, cross-attention bytes per source token and layer)."""
    enc = model.encode(source)
    batch, length = source.shape
    cache = model.decoder.init_cache(enc)
    y = torch.full((batch,), BOS, dtype=torch.long)  # the tokens fed do not change the cache's size
    for t in range(CACHE_STEPS):
        _, cache, _ = model.decoder.step(y, enc, cache, t)
    layers = cache["layers"]
    per_token = sum(nbytes(layer["self"]) for layer in layers) / (len(layers) * batch * CACHE_STEPS)
    per_source_token = sum(nbytes(layer["cross"]) for layer in layers) / (len(layers) * batch * length)
    return per_token, per_source_token


@torch.no_grad()
def generate_all(model, batches: list[tuple[torch.Tensor, torch.Tensor]]) -> tuple[int, float]:
    """Greedy outputs of every batch: (output tokens, seconds)."""
    tokens, started = 0, time.perf_counter()
    for source, limits in batches:
        tokens += sum(len(ids) for ids in greedy(model, source, max_len=limits))
    return tokens, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", help="run directories of Transformer-decoder runs")
    parser.add_argument("--batch", type=int, default=64, help="sentences decoded together")
    parser.add_argument("--rounds", type=int, default=3, help="timed passes over the test set per run")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (0: torch's default)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    rows = {}
    for run in args.runs:
        predictor = load(run)
        cfg = predictor.module.cfg
        test = build("dataset", cfg["dataset"]).splits()["test"]
        task, model = predictor.task, predictor.module.model.eval()
        batches = []
        for start in range(0, len(test), args.batch):
            source = task.collate_sources(
                task.encode_sources([item.source for item in test[start : start + args.batch]])
            )
            batches.append((source, task.output_limit(source)))
        summary = json.loads((Path(run) / "summary.json").read_text())
        self_bytes, cross_bytes = cache_bytes(model, batches[0][0])
        rows[run] = {
            "layout": layout_name(cfg["decoder"]),
            "decoder params": sum(p.numel() for p in model.decoder.parameters()),
            "self": self_bytes,
            "cross": cross_bytes,
            "bleu": summary["test"]["bleu"]["score"],
            "model": model,
            "batches": batches,
            "speeds": [],
        }
        generate_all(model, batches[:1])  # warm-up

    for r in range(args.rounds):
        order = list(rows) if r % 2 == 0 else list(rows)[::-1]
        for run in order:
            tokens, seconds = generate_all(rows[run]["model"], rows[run]["batches"])
            rows[run]["speeds"].append(tokens / seconds)

    print(
        f"torch {torch.__version__}, {platform.machine()}, {torch.get_num_threads()} thread(s); "
        f"greedy, batches of {args.batch} sentences, median of {args.rounds} rounds"
    )
    print(
        "| layout | decoder params | self-attention cache, bytes per generated token and layer "
        "| cross-attention cache, bytes per source token and layer | tokens/s | test BLEU |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for row in rows.values():
        print(
            f"| {row['layout']} | {row['decoder params']:,} | {row['self']:,.0f} | {row['cross']:,.0f} "
            f"| {statistics.median(row['speeds']):,.0f} | {row['bleu']:.1f} |"
        )


if __name__ == "__main__":
    main()
