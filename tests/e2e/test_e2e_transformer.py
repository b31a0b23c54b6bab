"""End-to-end: a Transformer with rotary positions and cosine attention, trained, beam-decoded and drawn."""

from __future__ import annotations

import json

import pytest
from helpers import fork_zoo

pytestmark = pytest.mark.slow

TINY_TRANSFORMER = [
    "experiment=smoke",
    "dataset.train_size=64",
    "dataset.val_size=8",
    "dataset.test_size=4",
    "encoder=transformer",
    "decoder=transformer",
    "posenc=rotary",
    "attention=cosine",
    "frontend.dim=32",
    "encoder.d_model=32",
    "encoder.heads=2",
    "encoder.ff_dim=64",
    "encoder.layers=2",
    "decoder.d_model=32",
    "decoder.heads=2",
    "decoder.ff_dim=64",
    "decoder.layers=2",
    "decode.strategy=beam",
    "decode.beam_size=3",
    "trainer.enable_progress_bar=false",
]


def test_transformer_rotary_cosine_trains_translates_and_draws(tmp_path):
    run_dir = tmp_path / "run"
    fork_zoo("train", *TINY_TRANSFORMER, f"hydra.run.dir={run_dir}", cwd=tmp_path)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["components"]["posenc"]["name"] == "rotary" and summary["decode"] == "beam"

    beam = fork_zoo(
        "translate", str(run_dir), "the dog sees the cat", "--decode", "beam", "--beam-size", "4", cwd=tmp_path
    )
    assert len(beam.stdout.splitlines()) == 1

    out = fork_zoo("attention", str(run_dir), "the dog sees the cat", cwd=tmp_path).stdout
    pictures = sorted((run_dir / "attention").rglob("*.png"))
    # 2 layers x (encoder self, decoder self, cross) x (2 heads + 1 grid)
    assert len(pictures) == 2 * 3 * 3, out
    assert all(p.read_bytes().startswith(b"\x89PNG") for p in pictures)
