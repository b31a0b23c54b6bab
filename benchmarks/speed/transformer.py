"""Transformer training speed, its share of the machine's matmul peak, and multi-head attention."""

from __future__ import annotations

import time

import bench_transformer
import torch
from torch import nn

from speed.common import Context, Row, interleaved, median, median_speedup, speedup_row


def matmul_peak(ctx: Context) -> float:
    """The machine's practical fp32 peak in FLOP/s: the best of several large square matrix
    products (2 n^3 operations each) at the suite's thread count. What a well-blocked BLAS
    reaches here is the ceiling a model's matrix products can hope for."""
    n = ctx.size(512, 2048)
    a, b = (torch.randn(n, n, device=ctx.device) for _ in range(2))
    a @ b  # warm-up
    best = float("inf")
    for _ in range(ctx.size(3, 10)):
        ctx.sync()
        start = time.perf_counter()
        a @ b
        ctx.sync()
        best = min(best, time.perf_counter() - start)
    return 2 * n**3 / best


#: Sentences per batch: 64 sentences of <= 24 tokens are ~1,500 tokens, about what the Multi30k
#: recipe trains with (2,048 tokens a batch); 16 shows what small batches cost (per-op overhead).
BATCHES = (64, 16)


def transformer_argv(ctx: Context, batch: int) -> list[str]:
    """bench_transformer's options: its defaults (3+3 layers, d_model 256, 4 heads) at ``batch``
    sentences for the full run, tiny for --quick."""
    if ctx.quick:
        return [
            "--device",
            ctx.device.type,
            "--layers",
            "1",
            "--d-model",
            "64",
            "--ff-dim",
            "128",
            "--vocab",
            "500",
            "--batch",
            "8",
            "--src-len",
            "12",
            "--tgt-len",
            "12",
            "--batches",
            "3",
            "--rounds",
            "3",
        ]
    return ["--device", ctx.device.type, "--batch", str(batch)]


def measure_transformer(ctx: Context) -> list[Row]:
    """Training target tokens/s of zoo's Transformer against torch.nn.Transformer of equal size,
    at a recipe-sized batch and a small one.

    Fair because bench_transformer gives both the same embeddings, positions, tied output,
    optimiser, dropout and batches, and interleaves their steps. The share of peak is zoo's
    training FLOP/s (bench_transformer.training_flops: 6 x params x positions + attention's
    12 x layers x d_model x (S^2 + T^2 + TS) per sentence) over the measured matmul peak; its
    goal applies at the recipe's batch size.
    """
    peak = matmul_peak(ctx)
    rows = []
    for batch in ctx.size(BATCHES[:1], BATCHES):
        args = bench_transformer.parse_args(transformer_argv(ctx, batch))
        result = bench_transformer.compare(args)
        speeds, ratio = result["speeds"], median(result["ratios"])
        size = (
            f"{args.layers}+{args.layers} layers, d_model {args.d_model}, batch {args.batch}, lengths <= {args.src_len}"
        )
        rows.append(
            speedup_row(
                f"Transformer training, target tokens/s ({size})",
                f"{median(speeds['zoo']):,.0f} tok/s",
                f"{median(speeds['torch.nn.Transformer']):,.0f} tok/s (torch.nn.Transformer)",
                ratio,
                1.0,
            )
        )
        flops = bench_transformer.training_flops(args, result["models"]["torch.nn.Transformer"], result["batches"])
        share = flops / median(result["seconds"]["zoo"]) / peak
        recipe_sized = batch == BATCHES[0]
        rows.append(
            Row(
                f"Transformer training FLOP/s, share of the fp32 matmul peak (batch {args.batch})",
                f"{flops / median(result['seconds']['zoo']) / 1e9:,.1f} GFLOP/s",
                f"{peak / 1e9:,.1f} GFLOP/s (matmul peak)",
                share,
                ">= 60%" if recipe_sized else "",
                share >= 0.6 if recipe_sized else None,
                "FLOPs = 6 x (P_enc x S + P_dec x T) + 12 x L x d x (S^2 + T^2 + TS) per sentence, padded lengths"
                + ("" if recipe_sized else "; small batches: per-operation overhead shows, no goal"),
            )
        )
    return rows


def mha_contestants(ctx: Context, causal: bool) -> tuple[dict, dict]:
    """zoo's MultiHeadAttention (built as the Transformer builds it: layout_attention with the
    scaled_dot scorer) and torch.nn.MultiheadAttention of the same width, heads and dropout,
    each as a forward+backward closure over the same input, padding mask and output gradient."""
    from zoo.nn.transformer import TransformerLayout, layout_attention
    from zoo.registry import default_config

    batch, length, d, heads = ctx.size((8, 16, 64, 4), (32, 64, 256, 4))
    layout = TransformerLayout(d_model=d, heads=heads, attention_dropout=0.1)
    ours = layout_attention(layout, default_config("attention", "scaled_dot")).to(ctx.device).train()
    reference = nn.MultiheadAttention(d, heads, dropout=0.1, batch_first=True).to(ctx.device).train()
    g = torch.Generator().manual_seed(0)
    x = torch.randn(batch, length, d, generator=g).to(ctx.device).requires_grad_()
    grad = torch.randn(batch, length, d, generator=g).to(ctx.device)
    lengths = torch.randint(length // 2, length + 1, (batch,), generator=g)
    mask = (torch.arange(length)[None, :] < lengths[:, None]).to(ctx.device)
    # A boolean mask (True: not allowed), of the same type as the padding mask, as torch asks.
    causal_mask = torch.ones(length, length, dtype=torch.bool, device=ctx.device).triu(1) if causal else None

    def run_ours():
        ours(x, None, mask, causal=causal)[0].backward(grad)

    def run_reference():
        reference(x, x, x, key_padding_mask=~mask, need_weights=False, attn_mask=causal_mask, is_causal=causal)[
            0
        ].backward(grad)

    shape = f"B={batch}, T={length}, d={d}, {heads} heads"
    return {"zoo": run_ours, "torch": run_reference}, {"shape": shape}


def measure_mha(ctx: Context) -> list[Row]:
    """Forward+backward of zoo's multi-head attention against torch.nn.MultiheadAttention.

    Fair because both have the same projections (Q, K, V, output, with biases), dropout 0.1
    on the weights in training mode, and get the same input, key padding mask and output
    gradient; the causal case gives both a causal mask. Gradients flow to the input and weights.
    """
    rows = []
    for causal in (False, True):
        contestants, info = mha_contestants(ctx, causal)
        seconds = interleaved(ctx, contestants, ctx.size(3, 7), ctx.size(3, 10))
        kind = "causal self-attention" if causal else "self-attention with padding mask"
        rows.append(
            speedup_row(
                f"multi-head attention fwd+bwd, {kind} ({info['shape']})",
                f"{median(seconds['zoo']) * 1e3:.2f} ms",
                f"{median(seconds['torch']) * 1e3:.2f} ms (nn.MultiheadAttention)",
                median_speedup(seconds, "zoo", "torch"),
                1.0,
            )
        )
    return rows
