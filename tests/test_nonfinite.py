"""A run whose loss or weights turn NaN stops at that step, says why, and keeps the checkpoint written before."""
from __future__ import annotations

import json
import re
import textwrap

import torch

from conftest import TINY, run_zoo

# A test-only decoder: the rnn decoder, broken on purpose from one training step on, deterministically.
BREAKS = '''
from dataclasses import dataclass

import torch

from zoo import register
from zoo.contracts import DecoderOutput
from zoo.registry import get

RNN = get("decoder", "rnn").cls


class NanGradient(torch.autograd.Function):
    """The identity going forward; NaN coming back."""

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        return torch.full_like(grad, float("nan"))


@register("decoder", "breaks")
class BreaksAtStep(RNN):
    """The rnn decoder whose training forward number `at` (0-based: the global step) goes wrong."""

    @dataclass
    class Config(RNN.Config):
        at: int = 3
        what: str = "loss"  # loss: NaN logits | gradients: finite logits, NaN gradients

    def __init__(self, cfg, **kwargs):
        super().__init__(cfg, **kwargs)
        self.at, self.what, self.calls = cfg.at, cfg.what, 0

    def forward(self, y_in, enc):
        out = super().forward(y_in, enc)
        if not self.training:
            return out
        self.calls += 1
        if self.calls - 1 != self.at:
            return out
        logits = out.logits * float("nan") if self.what == "loss" else NanGradient.apply(out.logits)
        return DecoderOutput(logits, out.attention)
'''


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("zoo: error:")]


def train_with_breaking_decoder(tmp_path, *overrides: str):
    plugins = tmp_path / "nan_plugins"
    plugins.mkdir()
    (plugins / "breaks.py").write_text(textwrap.dedent(BREAKS))
    run_dir = tmp_path / "run"
    proc = run_zoo("train", *TINY, f"plugin_dirs=[{plugins}]", "decoder=breaks", *overrides,
                   "trainer.val_check_interval=2",  # validation, so maybe a checkpoint, after steps 2 and 4 of 5
                   f"hydra.run.dir={run_dir}", cwd=tmp_path, check=False)
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    (line,) = error_lines(proc.stderr)
    assert all(f"{option}=" in line for option in ("optim.lr", "optim.warmup_steps", "trainer.gradient_clip_val"))
    assert "trainer.precision" not in line, "fp16 is named only when the run uses it"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "failed"
    return run_dir, line, summary


def test_nan_loss_stops_the_run_at_its_step_and_keeps_the_last_checkpoint(tmp_path):
    run_dir, line, summary = train_with_breaking_decoder(tmp_path, "decoder.what=loss", "decoder.at=3")
    assert line.startswith("zoo: error: training loss is nan at step 3 (epoch 0); stopped before this step updated")
    assert "the last checkpoint, from step 2, stays in checkpoints/" in line
    assert summary["reason"] == f"NonFiniteLossError: {line.removeprefix('zoo: error: ')}"
    assert [v["step"] for v in summary["validations"]] == [2]
    for name in ("best.ckpt", "last.ckpt"):
        checkpoint = torch.load(run_dir / "checkpoints" / name, map_location="cpu", weights_only=False)
        assert checkpoint["global_step"] == 2
        assert all(torch.isfinite(t).all() for t in checkpoint["state_dict"].values())


def test_nan_weights_from_a_finite_loss_are_never_written_to_a_checkpoint(tmp_path):
    """NaN gradients at step 1 make NaN weights; the first validation (step 2) would save them as the best."""
    run_dir, line, summary = train_with_breaking_decoder(tmp_path, "decoder.what=gradients", "decoder.at=1")
    assert line.startswith("zoo: error: the weights hold nan/inf at step 2 (epoch 0) though the training loss")
    assert "the checkpoint is not written, no checkpoint had been written yet" in line
    assert summary["reason"] == f"NonFiniteWeightsError: {line.removeprefix('zoo: error: ')}"
    assert not list(run_dir.glob("checkpoints/*.ckpt"))


def test_a_diverging_job_fails_in_a_sweep_and_the_others_run_on(tmp_path):
    """A real divergence: AdamW with lr 1e30 overflows within two steps on the tiny default model."""
    sweep = tmp_path / "sweep"
    proc = run_zoo("train", "-m", *TINY, "optim.lr=1e30,2e-3", f"hydra.sweep.dir={sweep}", cwd=tmp_path, check=False)
    assert proc.returncode == 1, proc.stderr[-3000:]
    diverged = json.loads((sweep / "0" / "summary.json").read_text())
    assert diverged["status"] == "failed"
    assert re.match(r"NonFiniteLossError: training loss is (nan|inf|-inf) at step \d+ \(epoch 0\)", diverged["reason"])
    assert "optim.lr=1e+30" in diverged["reason"] and "no checkpoint had been written yet" in diverged["reason"]
    assert json.loads((sweep / "1" / "summary.json").read_text())["status"] == "finished"
    lines = error_lines(proc.stderr)
    assert len(lines) == 2 and "NonFiniteLossError" in lines[0]
    assert lines[1].startswith("zoo: error: 1 job(s) of the sweep failed") and str(sweep / "0") in lines[1]
