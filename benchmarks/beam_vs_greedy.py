"""How often beam search returns a sequence that scores below greedy search's, and what beam search costs.

Beam search should never lose to greedy search under its own ranking, but a beam
that stops too early can. This counts it on small random models:

* **below greedy**: for every (length penalty, alpha) setting, ``--seeds`` random
  table models with ``--inputs`` sources each (5 x 64 = 320 by default) are decoded
  with greedy search and with beam search (``--beam``); an input counts when the
  beam's output has a lower final score (summed log-probability over the output and
  its EOS, divided by the length penalty, :func:`zoo.decoding.length_normalised`)
  than greedy's output under the same score, by more than 1e-6.
* **time**: beam search over one batch of 64 sentences, on a random table model and
  on a tiny untrained GRU encoder / RNN decoder Seq2Seq: the fastest of ``--rounds``
  rounds on ``--threads`` threads (the one least disturbed by other load), with the
  number of decoder steps it took, which does not depend on the machine.

A random table model's next-token distribution is ``softmax(scale * N(0, 1))``,
with ``eos_bias`` added to EOS's logit (so hypotheses end at different lengths),
indexed by the source (one table per input), the previous token and the current
one, so it has a cache that beam search must reorder, like a real decoder.

    python benchmarks/beam_vs_greedy.py [--seeds 5] [--inputs 64] [--beam 5] [--scale 2] [--eos-bias 1]
        [--rounds 15] [--threads 1]

To compare two versions of :mod:`zoo.decoding`, run this file with ``PYTHONPATH``
pointing at the other checkout (``git worktree add /tmp/old COMMIT``).
"""

from __future__ import annotations

import argparse
import time

import torch
import torch.nn.functional as F
from torch import nn

import zoo.decoding
from zoo.contracts import BOS, EOS, PAD, Decoder, EncoderOutput, SourceDescription
from zoo.decoding import beam_search, greedy, length_normalised

#: Ids of the random table models: PAD BOS EOS UNK and 8 ordinary tokens.
VOCAB = 12
#: (length penalty, alpha) settings counted.
SETTINGS = (("gnmt", 0.6), ("gnmt", 0.0), ("average", 0.0))


class RandomTableDecoder(Decoder):
    """Next-token logits ``table[source, prev, cur]`` for the step input ``cur`` and the token
    ``prev`` before it, which the cache keeps (so ``reorder_cache`` matters)."""

    def __init__(self, table: torch.Tensor) -> None:
        super().__init__()
        self.register_buffer("table", table)  # (sources, V, V, V) logits

    def init_cache(self, enc: EncoderOutput) -> dict:
        return {"prev": torch.full((enc.memory.size(0),), BOS, dtype=torch.long)}

    def step(self, y_t, enc, cache, t):
        return self.table[enc.memory[:, 0, 0].long(), cache["prev"], y_t], {"prev": y_t}, None


class RandomTableModel(nn.Module):
    """Source ``[[i]]`` selects table ``i``: ``sources`` independent inputs."""

    def __init__(self, sources: int, seed: int, scale: float, eos_bias: float) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        logits = torch.randn(sources, VOCAB, VOCAB, VOCAB, generator=g) * scale
        logits[..., EOS] += eos_bias
        self.decoder = RandomTableDecoder(logits)

    def encode(self, source: torch.Tensor) -> EncoderOutput:
        return EncoderOutput(memory=source.float()[..., None], mask=source != PAD, state=torch.zeros(source.size(0), 1))


@torch.no_grad()
def final_scores(model, source, hyps, limits, penalty, alpha) -> list[float]:
    """The score beam search ranks by, for each hypothesis: (B,) sources, their outputs, their (B,) limits.

    An output shorter than its limit is scored with its EOS; one as long as its limit
    was cut there and has none. Log-probabilities come from the decoder's steps with
    PAD and BOS made impossible, as in :mod:`zoo.decoding`, summed in float64.
    """
    targets = [ids + [EOS] if len(ids) < limit else ids for ids, limit in zip(hyps, limits.tolist())]
    width = max(len(t) for t in targets)
    padded = torch.tensor([t + [PAD] * (width - len(t)) for t in targets])  # (B, T)
    enc = model.encode(source)
    cache = model.decoder.init_cache(enc)
    y = torch.full((len(hyps),), BOS, dtype=torch.long)
    total = torch.zeros(len(hyps), dtype=torch.float64)
    for t in range(width):
        logits, cache, _ = model.decoder.step(y, enc, cache, t)
        logits = logits.float().clone()
        logits[:, [PAD, BOS]] = float("-inf")
        log_probs = F.log_softmax(logits, dim=-1).double().gather(1, padded[:, t : t + 1].clamp(min=0)).squeeze(1)
        total += log_probs.masked_fill(padded[:, t] == PAD, 0.0)
        y = padded[:, t].masked_fill(padded[:, t] == PAD, EOS)
    return [length_normalised(float(s), len(t), penalty, alpha) for s, t in zip(total, targets)]


def count_below_greedy(
    seeds: int, inputs: int, beam: int, scale: float, eos_bias: float, penalty: str, alpha: float
) -> int:
    """Inputs (of ``seeds * inputs``) where beam search's output scores below greedy search's."""
    below = 0
    for seed in range(seeds):
        model = RandomTableModel(inputs, seed, scale, eos_bias)
        source = torch.arange(inputs)[:, None]
        limits = torch.randint(3, 13, (inputs,), generator=torch.Generator().manual_seed(1000 + seed))
        greedy_out = greedy(model, source, max_len=limits)
        beam_out = beam_search(model, source, beam_size=beam, length_penalty=penalty, alpha=alpha, max_len=limits)
        g = final_scores(model, source, greedy_out, limits, penalty, alpha)
        b = final_scores(model, source, beam_out, limits, penalty, alpha)
        below += sum(bs < gs - 1e-6 for bs, gs in zip(b, g))
    return below


def tiny_seq2seq(vocab: int = 100):
    """An untrained GRU encoder / RNN decoder Seq2Seq with 64 units, seeded."""
    from zoo import registry
    from zoo.model import Seq2Seq
    from zoo.registry import discovery

    discovery.discover()
    names = {"frontend": "tokens", "posenc": "none", "encoder": "gru", "decoder": "rnn", "attention": "general"}
    sizes = {"dim": 64, "hidden_size": 64, "embed_dim": 64, "dropout": 0.0}
    cfg = {}
    for kind, name in names.items():
        defaults = registry.default_config(kind, name)
        cfg[kind] = {**defaults, **{k: v for k, v in sizes.items() if k in defaults}}
    torch.manual_seed(0)
    return Seq2Seq(cfg, SourceDescription("tokens", vocab_size=vocab), vocab).eval()


class StepCounter:
    """Counts a model's ``decoder.step`` calls by wrapping the bound method."""

    def __init__(self, model) -> None:
        self.model, self.count, self._step = model, 0, model.decoder.step

    def __enter__(self) -> StepCounter:
        def step(*args, **kwargs):
            self.count += 1
            return self._step(*args, **kwargs)

        self.model.decoder.step = step
        return self

    def __exit__(self, *exc) -> None:
        del self.model.decoder.step


def time_beam(model, source, limits, beam: int, penalty: str, alpha: float, rounds: int) -> tuple[float, int]:
    """Seconds of the fastest beam search over the batch in ``rounds``, and the decoder steps it takes."""

    def run():
        return beam_search(model, source, beam_size=beam, length_penalty=penalty, alpha=alpha, max_len=limits)

    with StepCounter(model) as counter:
        run()
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times), counter.count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--inputs", type=int, default=64, help="sources per random model")
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--scale", type=float, default=2.0, help="logit scale of the random tables (larger: sharper)")
    parser.add_argument("--eos-bias", type=float, default=1.0, help="added to EOS's logit in the random tables")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"zoo.decoding from {zoo.decoding.__file__}; random tables: scale {args.scale}, EOS bias {args.eos_bias}\n")

    total = args.seeds * args.inputs
    print(f"| length penalty | alpha | beam {args.beam} below greedy (of {total}) |")
    print("|---|---|---|")
    for penalty, alpha in SETTINGS:
        below = count_below_greedy(args.seeds, args.inputs, args.beam, args.scale, args.eos_bias, penalty, alpha)
        print(f"| {penalty} | {alpha if penalty == 'gnmt' else '-'} | {below} |")

    table = RandomTableModel(64, 0, args.scale, args.eos_bias)
    g = torch.Generator().manual_seed(7)
    table_batch = (table, torch.arange(64)[:, None], torch.randint(3, 13, (64,), generator=g))
    lengths = torch.randint(5, 21, (64,), generator=g)
    rnn_source = torch.randint(4, 100, (64, 20), generator=g)
    rnn_source = rnn_source.masked_fill(torch.arange(20)[None] >= lengths[:, None], PAD)  # (64, 20), padded
    rnn_batch = (tiny_seq2seq(), rnn_source, zoo.decoding.max_output_len(rnn_source != PAD, 1.5, 5))
    print(f"\n| model (64 sentences) | length penalty | alpha | beam {args.beam} time (ms) | decoder steps |")
    print("|---|---|---|---|---|")
    for label, (model, source, limits) in (("random table", table_batch), ("GRU/RNN, untrained", rnn_batch)):
        for penalty, alpha in SETTINGS:
            seconds, steps = time_beam(model, source, limits, args.beam, penalty, alpha, args.rounds)
            shown = alpha if penalty == "gnmt" else "-"
            print(f"| {label} | {penalty} | {shown} | {seconds * 1000:.1f} | {steps} |")


if __name__ == "__main__":
    main()
