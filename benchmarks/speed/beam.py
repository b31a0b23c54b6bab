"""Batched beam search against one sentence at a time, and what beam search costs over greedy."""

from __future__ import annotations

import torch

from speed.common import (
    Context,
    Row,
    composed_config,
    interleaved,
    median,
    median_speedup,
    ragged_ids,
    speedup_row,
    token_model,
)


def decoding_setup(ctx: Context) -> tuple[torch.nn.Module, torch.Tensor, torch.Tensor]:
    """The default model (bidirectional GRU encoder, GRU decoder with additive attention) with
    random weights, in eval mode; random source sentences and their output limits
    (1.5 x source length + 5, as zoo.decoding.max_output_len computes them)."""
    from zoo.contracts import PAD
    from zoo.decoding import max_output_len

    vocab = ctx.size(200, 2000)
    model = token_model(composed_config([]), vocab, ctx.device).eval()
    source = ragged_ids(ctx.size(8, 64), ctx.size(10, 30), vocab, shortest=3).to(ctx.device)
    return model, source, max_output_len(source != PAD, 1.5, 5)


def trim(source: torch.Tensor) -> torch.Tensor:
    """One sentence without its trailing padding: what decoding it alone would get."""
    from zoo.contracts import PAD

    return source[:, : int((source != PAD).sum())]


def measure_beam(ctx: Context) -> list[Row]:
    """Beam search (k=5) over the whole batch in one generate call, against generate on one
    sentence at a time, and beam against greedy search on the same batch.

    Fair because both beam contestants decode the same sentences with the same model, beam
    size and length penalty, and are checked to return the same outputs; one-at-a-time gets
    each sentence without padding and stops as soon as that sentence is done. The model is
    untrained, so hypotheses tend to run to their length limits: the work is the same on
    both sides, and longer than a trained model's.
    """
    from zoo.decoding import generate

    model, source, limits = decoding_setup(ctx)
    beam = {"strategy": "beam", "beam_size": 5}
    sentences = [(trim(source[i : i + 1]), limits[i : i + 1]) for i in range(source.shape[0])]
    batched = generate(model, source, beam, max_len=limits)
    alone = [generate(model, s, beam, max_len=m)[0] for s, m in sentences]
    same = sum(a == b for a, b in zip(batched, alone))
    rounds = ctx.size(2, 5)
    seconds = interleaved(
        ctx,
        {
            "batched": lambda: generate(model, source, beam, max_len=limits),
            "one at a time": lambda: [generate(model, s, beam, max_len=m) for s, m in sentences],
            "greedy": lambda: generate(model, source, {"strategy": "greedy"}, max_len=limits),
        },
        rounds,
        1,
    )
    n = source.shape[0]
    return [
        speedup_row(
            f"beam search k=5, {n} sentences batched vs one at a time (default GRU model, random weights)",
            f"{median(seconds['batched']):.3f} s",
            f"{median(seconds['one at a time']):.3f} s (one at a time)",
            median_speedup(seconds, "batched", "one at a time"),
            7.0,
            f"same outputs for {same}/{n} sentences",
        ),
        Row(
            f"beam search k=5 vs greedy, {n} sentences batched: cost",
            f"{median(seconds['batched']):.3f} s (beam)",
            f"{median(seconds['greedy']):.3f} s (greedy)",
            median_speedup(seconds, "greedy", "batched"),
            "",
            None,
            "ratio = beam time / greedy time; no goal",
        ),
    ]


def measure_key_prep(ctx: Context) -> list[Row]:
    """Key-side attention work once per sentence is measured by benchmarks/bench_key_prep.py,
    which compares this tree with an older checkout in two worker processes; it cannot run
    inside this process, so the suite points to it."""
    return [
        Row(
            "key-side attention work once per sentence",
            "see benchmarks/bench_key_prep.py",
            "an older checkout",
            None,
            "",
            None,
            "python benchmarks/bench_key_prep.py --before OLD_TREE",
        )
    ]
