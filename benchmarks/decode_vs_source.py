"""What one generated token costs against the source's length, for every layout of every decoder family: the
pure recurrent decoders (a state of constant size, whatever the source), encoder-decoders and hybrids with
softmax cross-attention (O(S) a step: every step reads the whole memory), and the Transformer.

Each decoder at its defaults over the identity encoder (the embedded source is the memory), a random source of
S tokens, greedy feed of random ids, no gradient: the step time is the median of 32 steps from t = 16 on, the
state every tensor the decoder carries to its next step (``init_cache``/``step``; a projected memory counts).

    python benchmarks/decode_vs_source.py [--sources 50,500] [--threads 1] [--out benchmarks/results]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cost_vs_length import state_bytes  # noqa: E402
from speed.common import composed_config, cpu_model, token_model  # noqa: E402

HYBRID = ["decoder.cross_every=1", "decoder.self_attention_every=2", "attention=scaled_dot"]
ENCODER_DECODER = ["decoder.prefix=none", "decoder.cross_every=1", "attention=scaled_dot"]
#: label: (decoder, overrides): each decoder family in each layout it has.
LAYOUTS = {
    "GRU + attention": ("rnn", []),
    "Transformer": ("transformer", ["attention=scaled_dot"]),
    "GLA (linear cross-attention)": ("linear_transformer", ["decoder.gate=gla"]),
    "GLA hybrid (+ softmax cross- and self-attention)": ("linear_transformer", ["decoder.gate=gla", *HYBRID]),
    "S4D, decoder-only (prefix)": ("s4d", []),
    "S4D encoder-decoder (cross-attention)": ("s4d", ENCODER_DECODER),
    "S4D hybrid (prefix + cross- and self-attention)": ("s4d", HYBRID),
    "Mamba, decoder-only (prefix)": ("mamba", []),
    "Mamba encoder-decoder (cross-attention)": ("mamba", ENCODER_DECODER),
    "Mamba hybrid (prefix + cross- and self-attention)": ("mamba", HYBRID),
}
VOCAB, START, STEPS = 1000, 16, 32


def step_cost(decoder: str, overrides: list[str], source_length: int) -> tuple[float, int]:
    """(median seconds a step from t = START on, state bytes at t = START) over a source of ``source_length``."""
    import torch

    cfg = composed_config([f"decoder={decoder}", "encoder=identity", *overrides])
    model = token_model(cfg, VOCAB, torch.device("cpu")).eval()
    source = torch.randint(4, VOCAB, (1, source_length), generator=torch.Generator().manual_seed(0))
    tokens = torch.randint(4, VOCAB, (START + STEPS,), generator=torch.Generator().manual_seed(1))
    times = []
    with torch.no_grad():
        enc = model.encode(source)
        cache = model.decoder.init_cache(enc)
        for t in range(START + STEPS):
            if t == START:
                size = state_bytes(cache)
            began = time.perf_counter()
            _, cache, _ = model.decoder.step(tokens[t : t + 1], enc, cache, t)
            if t >= START:
                times.append(time.perf_counter() - began)
    return statistics.median(times), size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sources", default="50,500", help="source lengths, comma-separated")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    sources = [int(s) for s in args.sources.split(",")]
    head = " | ".join(f"S = {s:,}: ms/token, state KiB" for s in sources)
    rows = [
        f"| layout | {head} | step time S = {sources[-1]:,} / S = {sources[0]:,} |",
        "|---" * (len(sources) + 2) + "|",
    ]
    for label, (decoder, overrides) in LAYOUTS.items():
        cells = [step_cost(decoder, overrides, s) for s in sources]
        said = " | ".join(f"{seconds * 1e3:.3f}, {size / 2**10:,.1f}" for seconds, size in cells)
        rows.append(f"| {label} | {said} | {cells[-1][0] / cells[0][0]:.2f}× |")
        print(rows[-1], flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    note = f"\n{cpu_model()}, {args.threads} thread(s), {time.strftime('%Y-%m-%d %H:%M')}\n"
    (args.out / "decode_vs_source.md").write_text("\n".join(rows) + "\n" + note)
    print(note + f"written to {args.out}/decode_vs_source.md")


if __name__ == "__main__":
    main()
