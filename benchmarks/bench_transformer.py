"""Training speed of zoo's Transformer against torch.nn.Transformer of the same size.

Both models get identical source/target embeddings (scaled by sqrt(d_model)),
sinusoidal positions, a tied output projection, the same random batches, the same
optimiser and the same dropout; only the encoder/decoder stack differs. They are
timed in one process with their training steps interleaved (so both see the same
machine load), over several rounds; the median per-round speed ratio is reported.

    python benchmarks/bench_transformer.py                # CPU
    python benchmarks/bench_transformer.py --device cuda  # GPU
    python benchmarks/bench_transformer.py --device cuda --size base --precision bf16 --peak-tflops 989.4
                                                          # Transformer base in bf16, as model FLOPs utilisation

The speed suite (benchmarks/speed_suite.py) calls :func:`parse_args`, :func:`compare`
and :func:`training_flops`.
"""

from __future__ import annotations

import argparse
import math
import platform
import statistics
import time
import warnings

import torch
import torch.nn.functional as F
from torch import nn

from zoo.contracts import PAD, EncoderOutput
from zoo.registry import build, default_config
from zoo.registry.discovery import discover


class Embed(nn.Module):
    """Token ids -> embedding * sqrt(d) + sinusoidal positions -> dropout (shared by both contestants' designs)."""

    def __init__(self, vocab: int, d: int, dropout: float) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab, d, padding_idx=PAD)
        nn.init.normal_(self.embedding.weight, std=d**-0.5)
        self.scale = math.sqrt(d)
        self.posenc = build("posenc", {"name": "sinusoidal"}, dim=d, heads=1)
        self.dropout = nn.Dropout(dropout)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.posenc(self.embedding(ids) * self.scale))


warnings.filterwarnings(
    "ignore", message="enable_nested_tensor"
)  # torch's pre-norm encoder has no nested-tensor fast path


class ZooModel(nn.Module):
    """Source embedding -> zoo transformer encoder -> zoo transformer decoder (own tied target embedding)."""

    def __init__(self, args) -> None:
        super().__init__()
        layout = dict(
            layers=args.layers,
            d_model=args.d_model,
            heads=args.heads,
            ff_dim=args.ff_dim,
            dropout=args.dropout,
            attention_dropout=args.dropout,  # torch.nn.Transformer uses one dropout for both
        )
        self.src = Embed(args.vocab, args.d_model, args.dropout)
        self.encoder = build(
            "encoder",
            default_config("encoder", "transformer", **layout),
            input_dim=args.d_model,
            scorer=default_config("attention", "scaled_dot"),
        )
        self.decoder = build(
            "decoder",
            default_config("decoder", "transformer", **layout),
            vocab_size=args.vocab,
            memory_dim=args.d_model,
            state_dim=args.d_model,
            scorer={"name": "scaled_dot"},
            posenc={"name": "sinusoidal"},
        )

    def forward(self, src: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        mask = src != PAD
        enc: EncoderOutput = self.encoder(self.src(src), mask)
        return self.decoder(tgt_in, enc).logits


class TorchModel(nn.Module):
    """The same embeddings and output around torch.nn.Transformer (pre-norm, batch first)."""

    def __init__(self, args) -> None:
        super().__init__()
        self.src = Embed(args.vocab, args.d_model, args.dropout)
        self.tgt = Embed(args.vocab, args.d_model, args.dropout)
        self.transformer = nn.Transformer(
            args.d_model,
            args.heads,
            args.layers,
            args.layers,
            args.ff_dim,
            args.dropout,
            batch_first=True,
            norm_first=True,
        )
        self.output = nn.Linear(args.d_model, args.vocab)
        self.output.weight = self.tgt.embedding.weight

    def forward(self, src: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        pad = src == PAD
        causal = nn.Transformer.generate_square_subsequent_mask(tgt_in.shape[1], device=src.device)
        h = self.transformer(
            self.src(src),
            self.tgt(tgt_in),
            tgt_mask=causal,
            tgt_is_causal=True,
            src_key_padding_mask=pad,
            memory_key_padding_mask=pad,
        )
        return self.output(h)


def make_batches(args, device) -> list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    """Random (src, tgt_in, tgt_out) batches with ragged lengths padded at the end."""
    g = torch.Generator().manual_seed(0)

    def ragged(length: int) -> torch.Tensor:
        ids = torch.randint(4, args.vocab, (args.batch, length), generator=g)
        lengths = torch.randint(length // 2, length + 1, (args.batch,), generator=g)
        return ids.masked_fill(torch.arange(length)[None, :] >= lengths[:, None], PAD)

    batches = []
    for _ in range(args.batches):
        src, tgt = ragged(args.src_len), ragged(args.tgt_len + 1)
        batches.append((src.to(device), tgt[:, :-1].to(device), tgt[:, 1:].to(device)))
    return batches


def train_step(model, optimiser, batch, device, precision: str = "32") -> float:
    """One optimiser step on ``batch``; returns its wall-clock seconds. ``precision`` bf16: the forward pass and
    loss under bf16 autocast (weights, gradients and the optimiser stay fp32, as Lightning's bf16-mixed)."""
    src, tgt_in, tgt_out = batch
    if device.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    with torch.autocast(device.type, dtype=torch.bfloat16, enabled=precision == "bf16"):
        logits = model(src, tgt_in)
        loss = F.cross_entropy(logits.flatten(0, 1).float(), tgt_out.flatten(), ignore_index=PAD)
    optimiser.zero_grad(set_to_none=True)
    loss.backward()
    optimiser.step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - start


#: ``--size base``: the Transformer base of Vaswani et al. (2017), 6+6 layers, d_model 512, 8 heads, feed-forward
#: 2048, a 32k shared vocabulary, and ~25k target tokens a batch (1,024 sentences of 16-32 tokens; they train on
#: batches of ~25k source and ~25k target tokens).
BASE = dict(layers=6, d_model=512, heads=8, ff_dim=2048, vocab=32000, batch=1024, src_len=32, tgt_len=32)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The model size, batches and rounds (``argv`` None: the command line); ``--size base`` sets :data:`BASE`'s
    sizes, which options given beside it override."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=["small", "base"], default="small", help="small: the defaults below")
    parser.add_argument("--precision", choices=["32", "bf16"], default="32", help="bf16: bf16 autocast (mixed)")
    parser.add_argument("--compile", action="store_true", help="torch.compile both models (the same for both)")
    parser.add_argument(
        "--peak-tflops",
        dest="peak_tflops",
        type=float,
        default=0.0,
        help="the device's dense peak at --precision, to report model FLOPs utilisation (H100/H200 SXM: 989.4 "
        "bf16, 494.7 TF32; NVIDIA's data sheet)",
    )
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--layers", type=int, default=3)
    parser.add_argument("--d-model", dest="d_model", type=int, default=256)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--ff-dim", dest="ff_dim", type=int, default=1024)
    parser.add_argument("--dropout", type=float, default=0.1)
    parser.add_argument("--vocab", type=int, default=4000)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--src-len", dest="src_len", type=int, default=24)
    parser.add_argument("--tgt-len", dest="tgt_len", type=int, default=24)
    parser.add_argument("--batches", type=int, default=8, help="training steps per model per round")
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds")
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    args = parser.parse_args(argv)
    if args.size == "base":
        given = parser.parse_args(argv, argparse.Namespace(**dict.fromkeys(BASE)))  # None where not given
        for key, value in BASE.items():
            if getattr(given, key) is None:
                setattr(args, key, value)
    return args


def compare(args: argparse.Namespace) -> dict:
    """Train both models on the same batches, steps interleaved, and return what was measured:
    ``models``, ``batches``, ``tokens`` (their target tokens), ``speeds`` (target tokens/s per round and model),
    ``seconds`` (step seconds per round and model) and ``ratios`` (zoo / torch speed per round)."""
    discover()
    device = torch.device(args.device)
    torch.manual_seed(0)
    models = {"zoo": ZooModel(args).to(device), "torch.nn.Transformer": TorchModel(args).to(device)}
    optimisers = {name: torch.optim.Adam(m.parameters(), lr=1e-4) for name, m in models.items()}
    batches = make_batches(args, device)
    steps = {name: torch.compile(m) if args.compile else m for name, m in models.items()}
    for name, model in models.items():  # warm-up: allocator, kernels, lazy init (and compilation)
        model.train()
        for batch in batches[: 4 if args.compile else 2]:
            train_step(steps[name], optimisers[name], batch, device, args.precision)

    # Steps alternate between the models (in alternating order), so both see the same
    # machine load; each round's speed is its target tokens over its summed step times.
    names = list(models)
    speeds: dict[str, list[float]] = {name: [] for name in names}
    seconds: dict[str, list[float]] = {name: [] for name in names}
    tokens = sum(int((tgt_out != PAD).sum()) for _, _, tgt_out in batches)
    for r in range(args.rounds):
        spent = dict.fromkeys(names, 0.0)
        for i, batch in enumerate(batches):
            for name in names if (r + i) % 2 == 0 else names[::-1]:
                spent[name] += train_step(steps[name], optimisers[name], batch, device, args.precision)
        for name in names:
            speeds[name].append(tokens / spent[name])
            seconds[name].append(spent[name])
    ratios = [z / t for z, t in zip(speeds["zoo"], speeds["torch.nn.Transformer"])]
    return {
        "models": models,
        "batches": batches,
        "tokens": tokens,
        "speeds": speeds,
        "seconds": seconds,
        "ratios": ratios,
    }


def training_flops(args: argparse.Namespace, model: TorchModel, batches) -> float:
    """Floating-point operations of one training pass over ``batches`` (forward + backward = 3 x forward):

        6 x (P_enc x source positions + P_dec x target positions)
        + 12 x layers x d_model x (S^2 + T^2 + T x S) per sentence

    P_enc, P_dec: the encoder and decoder stacks' parameters, the decoder's counting the
    (tied) output projection, d_model x vocab, which is a matrix product; embedding
    lookups are not. The second term is attention's score and weighted-sum products
    (2 x 2 x T x S x d_model forward per layer) for encoder self- (S x S), decoder
    self- (T x T, computed in full though causal) and cross-attention (T x S).
    Positions are padded lengths: the work the machine does, padding included.
    """
    p_enc = sum(p.numel() for p in model.transformer.encoder.parameters())
    p_dec = sum(p.numel() for p in model.transformer.decoder.parameters()) + model.output.weight.numel()
    total = 0.0
    for src, tgt_in, _ in batches:
        (b, s), t = src.shape, tgt_in.shape[1]
        total += 6 * (p_enc * b * s + p_dec * b * t) + 12 * args.layers * args.d_model * b * (s * s + t * t + t * s)
    return total


def main() -> None:
    args = parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    result = compare(args)
    device = torch.device(args.device)
    speeds, ratios = result["speeds"], result["ratios"]
    where = f"{device.type}" + (
        f" ({torch.cuda.get_device_name(device)})" if device.type == "cuda" else f", {torch.get_num_threads()} threads"
    )
    print(f"torch {torch.__version__}, {platform.machine()} {where}")
    tokens = result["tokens"] / len(result["batches"])
    print(
        f"layers={args.layers} d_model={args.d_model} heads={args.heads} ff_dim={args.ff_dim} vocab={args.vocab} "
        f"batch={args.batch} src_len<={args.src_len} tgt_len<={args.tgt_len} (~{tokens:,.0f} target tokens), "
        f"precision {args.precision}{', compiled' if args.compile else ''}, {args.rounds} rounds x {args.batches} steps"
    )
    flops = training_flops(args, result["models"]["torch.nn.Transformer"], result["batches"])
    mfu = f"{'MFU':>6}" if args.peak_tflops else ""
    print(f"{'model':<22} {'params':>12} {'target tokens/s (median)':>26} {'model TFLOP/s':>14}{mfu}")
    for name, model in result["models"].items():
        params = sum(p.numel() for p in model.parameters())
        achieved = flops / statistics.median(result["seconds"][name]) / 1e12
        mfu = f"{achieved / args.peak_tflops:>6.1%}" if args.peak_tflops else ""
        print(f"{name:<22} {params:>12,} {statistics.median(speeds[name]):>26,.0f} {achieved:>14.2f}{mfu}")
    rounds = ", ".join(f"{r:.3f}" for r in ratios)
    print(f"speed ratio zoo / torch: median {statistics.median(ratios):.3f} (rounds: {rounds})")


if __name__ == "__main__":
    main()
