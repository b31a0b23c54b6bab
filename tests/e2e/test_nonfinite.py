"""A run whose loss or weights turn NaN, or whose loss diverges, stops at that step, says why, and writes no checkpoint
from the bad weights (the ones written before stay): every step's loss, the last step's update, validation's loss."""

from __future__ import annotations

import json
import re
import textwrap

import pytest
import torch
from helpers import TINY, fork_zoo

pytestmark = pytest.mark.slow

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
        # loss: NaN logits | gradients: finite logits, NaN gradients | update: the step's update leaves the output
        # projection 1e30 times too large, yet finite (done at the next forward) | outputs: NaN evaluation logits after
        # it
        what: str = "loss"

    def __init__(self, cfg, **kwargs):
        super().__init__(cfg, **kwargs)
        self.at, self.what, self.calls = cfg.at, cfg.what, 0

    def forward(self, y_in, enc):
        after = self.calls > self.at  # training forward `at` has run
        if after and self.what == "update" and not getattr(self, "blown", False):
            with torch.no_grad():
                self.target.output.weight.mul_(1e30)
            self.blown = True
        out = super().forward(y_in, enc)
        if not self.training:
            return DecoderOutput(out.logits * float("nan"), out.attention) if after and self.what == "outputs" else out
        self.calls += 1
        if self.calls - 1 != self.at or self.what not in ("loss", "gradients"):
            return out
        logits = out.logits * float("nan") if self.what == "loss" else NanGradient.apply(out.logits)
        return DecoderOutput(logits, out.attention)
'''


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("zoo: error:")]


def failed_training(tmp_path, *overrides: str):
    """A tiny run that must fail: one error line naming the options to change, a failed summary."""
    run_dir = tmp_path / "run"
    proc = fork_zoo(
        "train",
        *TINY,
        *overrides,
        "trainer.val_check_interval=2",  # validation, so maybe a checkpoint, after steps 2 and 4 of 5
        f"hydra.run.dir={run_dir}",
        cwd=tmp_path,
        check=False,
    )
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    (line,) = error_lines(proc.stderr)
    assert all(f"{option}=" in line for option in ("optim.lr", "optim.warmup_steps", "trainer.gradient_clip_val"))
    assert "trainer.precision" not in line, "fp16 is named only when the run uses it"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "failed"
    assert summary["reason"].endswith(line.removeprefix("zoo: error: "))
    return run_dir, line, summary


def train_with_breaking_decoder(tmp_path, *overrides: str):
    plugins = tmp_path / "nan_plugins"
    plugins.mkdir()
    (plugins / "breaks.py").write_text(textwrap.dedent(BREAKS))
    return failed_training(tmp_path, f"plugin_dirs=[{plugins}]", "decoder=breaks", *overrides)


def checkpoint_steps(run_dir) -> dict[str, int]:
    """The global step of every checkpoint in the run, after checking its weights are finite."""
    steps = {}
    for path in sorted((run_dir / "checkpoints").glob("*.ckpt")):
        checkpoint = torch.load(path, map_location="cpu", weights_only=False)
        assert all(torch.isfinite(t).all() for t in checkpoint["state_dict"].values())
        steps[path.name] = checkpoint["global_step"]
    return steps


def test_nan_loss_stops_the_run_at_its_step_and_keeps_the_last_checkpoint(tmp_path):
    run_dir, line, summary = train_with_breaking_decoder(tmp_path, "decoder.what=loss", "decoder.at=3")
    assert line.startswith("zoo: error: training loss is nan at step 3 (epoch 0); stopped before this step updated")
    assert "the last checkpoint, from step 2, stays in checkpoints/" in line
    assert summary["reason"].startswith("NonFiniteLossError: ")
    assert [v["step"] for v in summary["validations"]] == [2]
    assert checkpoint_steps(run_dir) == {"best.ckpt": 2, "last.ckpt": 2}


def test_nan_weights_from_a_finite_loss_are_never_written_to_a_checkpoint(tmp_path):
    """NaN gradients at step 4, the last, make NaN weights; last.ckpt is due after it, with no validation before
    to find the model's outputs NaN."""
    run_dir, line, summary = train_with_breaking_decoder(tmp_path, "decoder.what=gradients", "decoder.at=4")
    assert line.startswith("zoo: error: the weights hold nan/inf at step 5 (epoch 0) though the training loss")
    assert "the checkpoint is not written, the last checkpoint, from step 4, stays in checkpoints/" in line
    assert summary["reason"].startswith("NonFiniteWeightsError: ")
    assert checkpoint_steps(run_dir)["last.ckpt"] == 4


def test_a_last_step_whose_update_diverges_writes_no_checkpoint(tmp_path):
    """Step 4, the last, leaves finite weights that give a loss of about 1e30: no step follows whose loss would
    show it, yet last.ckpt (due after the last step) is refused, and the one of step 4's validation stays."""
    run_dir, line, summary = train_with_breaking_decoder(tmp_path, "decoder.what=update", "decoder.at=4")
    assert re.match(
        r"zoo: error: training loss is \S+, over 10x chance level \(\S+: 10 x ln of \d+ target tokens\), "
        r"so training diverged on the batch of step 4 after its update \(epoch 0\); "
        r"the checkpoint is not written, the last checkpoint, from step 4, stays in checkpoints/",
        line,
    )
    assert summary["reason"].startswith("LossDivergedError: ")
    assert checkpoint_steps(run_dir)["last.ckpt"] == 4


def test_a_nan_validation_loss_stops_the_run_before_its_checkpoints(tmp_path):
    """Finite in training, NaN in evaluation after step 3: the validation at step 4 fails, writing nothing."""
    run_dir, line, summary = train_with_breaking_decoder(tmp_path, "decoder.what=outputs", "decoder.at=3")
    assert line.startswith(
        "zoo: error: validation loss is nan at step 4 (epoch 0): the model's outputs hold nan/inf; "
        "no checkpoint is written for it, the last checkpoint, from step 2, stays in checkpoints/"
    )
    assert summary["reason"].startswith("NonFiniteLossError: ")
    assert [v["step"] for v in summary["validations"]] == [2]
    assert checkpoint_steps(run_dir) == {"best.ckpt": 2, "last.ckpt": 2}


def test_a_finite_loss_far_above_chance_is_divergence(tmp_path):
    """lr 1e6 takes the loss from chance level (about 6.8) to about 1e5 in one step: stopped there, before its
    update, though every value is finite."""
    run_dir, line, summary = failed_training(tmp_path, "optim.lr=1e6")
    assert re.match(
        r"zoo: error: training loss is \S+, over 10x chance level .* so training diverged at step 1 "
        r"\(epoch 0\); stopped before this step updated the weights, no checkpoint had been written yet",
        line,
    )
    assert "optim.lr=1e+06" in line
    assert summary["reason"].startswith("LossDivergedError: ")
    assert checkpoint_steps(run_dir) == {}


def test_a_diverging_job_fails_in_a_sweep_and_the_others_run_on(tmp_path):
    """A real divergence: AdamW with lr 1e6 on the tiny default model."""
    sweep = tmp_path / "sweep"
    proc = fork_zoo("train", "-m", *TINY, "optim.lr=1e6,2e-3", f"hydra.sweep.dir={sweep}", cwd=tmp_path, check=False)
    assert proc.returncode == 1, proc.stderr[-3000:]
    diverged = json.loads((sweep / "0" / "summary.json").read_text())
    assert diverged["status"] == "failed"
    assert diverged["reason"].startswith("LossDivergedError: training loss is ")
    assert json.loads((sweep / "1" / "summary.json").read_text())["status"] == "finished"
    lines = error_lines(proc.stderr)
    assert len(lines) == 2 and "LossDivergedError" in lines[0]
    assert lines[1].startswith("zoo: error: 1 job(s) of the sweep failed") and str(sweep / "0") in lines[1]
