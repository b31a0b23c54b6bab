"""Self-critical sequence training in real runs: a tiny captioning run that starts from given weights, trains on its
rewards, validates and tests, and resumes exactly.

Two runs in all (one straight, one stopped after its first epoch and resumed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from helpers import fork_zoo
from helpers.config import composed
from helpers.runs import CAPTION_TINY
from omegaconf import OmegaConf

from zoo.config.sections import STEP_SETTINGS
from zoo.run.resume import ResumeRefused, check_resume_config

pytestmark = pytest.mark.slow

# ------------------------------------------------------------------------------------------- real runs

LR = 5e-5


def scst_args(init: Path, epochs: int, lr: float = LR) -> list[str]:
    """SCST from ``init`` on the tiny captioning data: its start validated, 3 steps an epoch, a validation after each
    epoch; at ``lr`` (constant, scst's default) rather than optim's."""
    return [
        *(override for override in CAPTION_TINY if not override.startswith("trainer.max_epochs")),
        "scst.enabled=true",
        "scst.samples=3",
        f"init_from={init}",
        f"scst.lr={lr}",
        "optim.lr=1e3",  # not the SCST stage's: it would diverge at once
        "trainer.log_every_n_steps=1",
        f"trainer.max_epochs={epochs}",
    ]


@pytest.fixture(scope="module")
def scst_run(init_ckpt, tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("scst")
    fork_zoo("train", *scst_args(init_ckpt, 2), f"hydra.run.dir={work / 'run'}", cwd=work)
    return work / "run"


def last_weights(run_dir: Path) -> dict:
    return torch.load(run_dir / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=False)["state_dict"]


def test_an_scst_run_starts_from_init_from_trains_on_rewards_validates_and_tests(scst_run, init_ckpt):
    summary = json.loads((scst_run / "summary.json").read_text())
    assert summary["status"] == "finished" and "cider_d" in summary["test"]
    assert [v["step"] for v in summary["validations"]] == [0, 3, 6], "the start, then one validation an epoch"
    rows = (scst_run / "metrics.csv").read_text().splitlines()
    header = rows[0].split(",")
    steps = [dict(zip(header, row.split(","))) for row in rows[1:] if row.split(",")[header.index("train/reward")]]
    assert len(steps) == summary["steps"] and all(float(s["train/baseline"]) >= 0 for s in steps)
    assert {float(s["train/lr"]) for s in steps} == {LR}, "scst.lr, constant: not optim.lr"
    assert "starting from the weights of" in (scst_run / "train.log").read_text()
    start, end = torch.load(init_ckpt, weights_only=True)["state_dict"], last_weights(scst_run)
    statistics = ("running_mean", "running_var", "num_batches_tracked")  # BatchNorm's follow the data, not the lr
    moved = max(float((end[key] - start[key]).abs().max()) for key in start if not key.endswith(statistics))
    assert 0 < moved <= 2 * LR * summary["steps"], "AdamW moves a weight about lr a step: the run began at init_from"


def test_a_resumed_scst_run_ends_as_the_straight_run(scst_run, init_ckpt, tmp_path):
    run_dir = tmp_path / "run"
    fork_zoo("train", *scst_args(init_ckpt, 1), f"hydra.run.dir={run_dir}", cwd=tmp_path)
    init_ckpt.rename(init_ckpt.with_suffix(".moved"))  # a resume never reads init_from again
    try:
        fork_zoo("train", f"resume={run_dir}", "trainer.max_epochs=2", cwd=tmp_path)
    finally:
        init_ckpt.with_suffix(".moved").rename(init_ckpt)
    assert (run_dir / "metrics.csv").read_text() == (scst_run / "metrics.csv").read_text()
    straight, resumed = last_weights(scst_run), last_weights(run_dir)
    assert all(torch.equal(straight[key], resumed[key]) for key in straight)


def test_the_start_is_validated_first_and_stays_the_best_checkpoint_until_a_validation_beats_it(init_ckpt, tmp_path):
    """At a step too small to change an output, no later validation beats the start: best.ckpt holds init_from's
    weights, and they are what the test scores."""
    fork_zoo("train", *scst_args(init_ckpt, 1, lr=1e-12), f"hydra.run.dir={tmp_path / 'run'}", cwd=tmp_path)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    start, later = summary["validations"]
    assert start["step"] == 0 and later["step"] == 3 and later["cider_d"] == start["cider_d"]
    assert summary["best_val"] == pytest.approx(start["cider_d"], abs=1e-4)
    assert summary["best_checkpoint"].endswith("checkpoints/best.ckpt")
    best = torch.load(summary["best_checkpoint"], map_location="cpu", weights_only=True)["state_dict"]
    initial = torch.load(init_ckpt, map_location="cpu", weights_only=True)["state_dict"]
    assert best.keys() == initial.keys() and all(torch.equal(best[key], initial[key]) for key in initial)


def test_an_scst_run_made_before_scst_lr_resumes_only_at_the_optim_step_it_trained_with(scst_run, init_ckpt, tmp_path):
    """Its SCST stage took optim's lr, warmup and schedule: resumed at scst's defaults it would train at another."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    saved = OmegaConf.load(scst_run / "config.yaml")
    for key in STEP_SETTINGS:
        del saved.scst[key]
    OmegaConf.save(saved, run_dir / "config.yaml")
    with pytest.raises(ResumeRefused, match="cannot resume .* with scst.lr=5e-05: the run has scst.lr=1000.0"):
        check_resume_config(run_dir, composed(*scst_args(init_ckpt, 2)))
    optim = saved.optim
    steps = [f"scst.warmup_steps={optim.warmup_steps}", f"scst.schedule={optim.schedule}"]
    check_resume_config(run_dir, composed(*scst_args(init_ckpt, 2, lr=optim.lr), *steps))


def test_scst_from_random_weights_warns_to_pass_init_from(scst_run, tmp_path):
    args = [arg for arg in scst_args(Path("unused"), 1) if not arg.startswith("init_from=")]
    fork_zoo("train", *args, "trainer.max_steps=1", "test=false", f"hydra.run.dir={tmp_path / 'run'}", cwd=tmp_path)
    warning = "scst.enabled without init_from: self-critical training starts from random weights"
    assert warning in (tmp_path / "run" / "train.log").read_text()
    assert warning not in (scst_run / "train.log").read_text()
