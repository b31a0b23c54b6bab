"""An independent check of multi-query recall: torch's own Transformer encoder on zoo's MQAR data.

zoo's model, head and training loop are left out: only the data comes from zoo (``recall``'s multi-query mode,
constant filler), so a model that stalls here stalls for a reason of its own, not a bug of zoo's. The model is 2
pre-norm layers of ``nn.TransformerEncoderLayer`` (2 heads, width 64, feed-forward 128), AdamW at lr 3e-3 with
100 warmup steps and a cosine decay, batches of 256 fresh sequences, and positions that are sinusoidal, learned
from N(0, 1), or learned from N(0, 0.02^2) (BERT's init). It prints validation accuracy over the queries
(docs/results.md, "The recall map at this machine's scale"):

    python benchmarks/mqar_reference.py --length 16 --pairs 2 --vocab 8 --steps 800 --positions learned
"""

from __future__ import annotations

import argparse
import math

import torch
from torch import nn

from zoo_plugins.datasets.recall import RecallDataset

WIDTH, BATCH, IGNORED = 64, 256, -100


def encode(items, vocab: dict[str, int]) -> tuple[torch.Tensor, torch.Tensor]:
    """Items -> (token ids (N, L), query targets (N, L), IGNORED where nothing is asked)."""
    sources = [[vocab.setdefault(t, len(vocab)) for t in item.source.split()] for item in items]
    targets = [
        [IGNORED if t == "_" else vocab.setdefault(t, len(vocab)) for t in item.references[0].split()] for item in items
    ]
    return torch.tensor(sources), torch.tensor(targets)


class Reference(nn.Module):
    """Token embedding + positions -> torch's encoder -> LayerNorm + Linear at every position."""

    def __init__(self, vocab_size: int, length: int, positions: str) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, WIDTH)  # N(0, 1), as zoo's unscaled token frontend
        if positions == "sinusoidal":
            position = torch.arange(length)[:, None]
            rate = torch.exp(torch.arange(0, WIDTH, 2) * (-math.log(1e4) / WIDTH))
            table = torch.zeros(length, WIDTH)
            table[:, 0::2], table[:, 1::2] = torch.sin(position * rate), torch.cos(position * rate)
            self.register_buffer("positions", table)
        else:
            self.positions = nn.Parameter(torch.randn(length, WIDTH) * (0.02 if positions == "learned-0.02" else 1.0))
        layer = nn.TransformerEncoderLayer(WIDTH, 2, 128, 0.0, batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Sequential(nn.LayerNorm(WIDTH), nn.Linear(WIDTH, vocab_size))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(self.embedding(tokens) + self.positions))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--length", type=int, default=16)
    parser.add_argument("--pairs", type=int, default=2)
    parser.add_argument("--vocab", type=int, default=8, help="keys and values each")
    parser.add_argument("--steps", type=int, default=800)
    parser.add_argument("--positions", choices=["sinusoidal", "learned", "learned-0.02"], default="learned")
    args = parser.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    data = RecallDataset.Config(
        mode="multi_query", length=args.length, pairs=args.pairs, key_vocab=args.vocab, value_vocab=args.vocab,
        filler="constant", train_size=args.steps * BATCH, val_size=500, test_size=500,
    )  # fmt: skip
    splits = RecallDataset(data).splits()
    vocab: dict[str, int] = {}
    train_x, train_y = encode(splits["train"], vocab)
    val_x, val_y = encode(splits["val"], vocab)
    model = Reference(len(vocab), args.length, args.positions)
    optimiser = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01, betas=(0.9, 0.98))
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimiser, lambda t: min(1.0, (t + 1) / 100) * 0.5 * (1 + math.cos(math.pi * t / args.steps))
    )
    for step in range(args.steps):
        rows = slice(step * BATCH, (step + 1) * BATCH)
        loss = nn.functional.cross_entropy(model(train_x[rows]).flatten(0, 1), train_y[rows].flatten())
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        schedule.step()
        if step % max(1, args.steps // 8) == 0 or step == args.steps - 1:
            with torch.no_grad():
                asked = val_y != IGNORED
                right = (model(val_x).argmax(-1)[asked] == val_y[asked]).float().mean().item()
            print(f"step {step:5d}  train loss {loss.item():.3f}  validation accuracy {100 * right:.1f} %", flush=True)


if __name__ == "__main__":
    main()
