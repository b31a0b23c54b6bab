"""How much a trained translator reads its source: validation cross-entropy with each sentence's own source
against the same with another sentence's source (the batch's sources rolled by one).

A decoder that has learned only the target language (a language model) scores the same either way; one that
translates loses much of its probability when the source is wrong. This is how docs/results.md diagnoses the
state-space prefix decoders (``model=s4d``, ``model=mamba``): is their 0.1-0.4 BLEU a decoder that cannot carry
the source through its state, or one that has not learned to yet?

    python benchmarks/source_use.py RUN_DIR [RUN_DIR ...] [--checkpoint best] [--threads 1]

Prints, per run: nats per target token (no label smoothing) with the right and with the wrong sources, and the
difference, which is what the source is worth to the model (0: nothing).
"""

from __future__ import annotations

import argparse
import tempfile

import torch
import torch.nn.functional as F
from omegaconf import OmegaConf

from zoo.contracts import PAD
from zoo.data.datamodule import ZooDataModule
from zoo.inference import Predictor


def token_loss(model: torch.nn.Module, batches: list[dict], wrong: bool) -> float:
    """Mean cross-entropy per real target token over ``batches``; ``wrong``: each row reads the next row's source."""
    total, tokens = 0.0, 0
    with torch.no_grad():
        for batch in batches:
            source = batch["source"].roll(1, dims=0) if wrong else batch["source"]
            logits = model(source, batch["target_in"]).logits
            out = batch["target_out"]
            total += float(F.cross_entropy(logits.flatten(0, 1), out.flatten(), ignore_index=PAD, reduction="sum"))
            tokens += int((out != PAD).sum())
    return total / tokens


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+")
    parser.add_argument("--checkpoint", default="best")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print("| run | right source | wrong source | source worth (nats/token) |\n|---|---|---|---|")
    for run in args.runs:
        predictor = Predictor.from_run(run, args.checkpoint)
        with tempfile.TemporaryDirectory() as scratch:
            data = ZooDataModule(OmegaConf.create(predictor.module.cfg), scratch)
            data.task = predictor.task  # the run's own codecs
            data.task.save(scratch)
            data.setup()
            batches = list(data.val_dataloader())
        model = predictor.module.model.eval()
        right, wrong = token_loss(model, batches, False), token_loss(model, batches, True)
        print(f"| {run} | {right:.3f} | {wrong:.3f} | {wrong - right:.3f} |")


if __name__ == "__main__":
    main()
