"""Checkpoint averaging in-process: the mean of weights, the snapshots a run keeps for it (``trainer.average_last``),
which checkpoint a finished run's tests scored, and the averaging options. The runs are in
tests/e2e/test_averaging_runs.py."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from helpers.checkpoints import assert_bit_identical, snapshot

from zoo.run.checkpoints import RunLoadError, checkpoint_file
from zoo.training.averaging import AveragingError, average_state_dicts, validation_prefers_average

# ---------------------------------------------------------------------------------------------- the mean


def a_state_dict(seed: int) -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    return {
        "linear.weight": torch.randn(7, 5, generator=generator),
        "half.weight": torch.randn(4, generator=generator).to(torch.bfloat16),
        "double.bias": torch.randn(3, generator=generator, dtype=torch.float64),
        "norm.num_batches_tracked": torch.tensor(seed),
    }


def test_the_mean_of_identical_checkpoints_is_each_of_them_bit_for_bit():
    """Three copies: summed in float32 their mean would round (3x / 3 is not always x); in float64 it does not."""
    state = a_state_dict(0)
    assert_bit_identical(average_state_dicts([state, {k: v.clone() for k, v in state.items()}, state]), state)


def test_the_mean_of_two_state_dicts_is_their_mean_and_counters_come_from_the_newest():
    a, b = a_state_dict(1), a_state_dict(2)
    mean = average_state_dicts([a, b])
    for key in ("linear.weight", "half.weight", "double.bias"):
        exact = (a[key].double() + b[key].double()) / 2
        assert mean[key].dtype == a[key].dtype and torch.equal(mean[key], exact.to(a[key].dtype)), key
    torch.testing.assert_close(mean["linear.weight"], (a["linear.weight"] + b["linear.weight"]) / 2)
    assert int(mean["norm.num_batches_tracked"]) == 2  # an integer buffer: the newest's, not a mean


def test_state_dicts_of_different_models_are_refused_naming_the_weight():
    a = a_state_dict(1)
    with pytest.raises(AveragingError, match="linear.weight is torch.float32 \\[7, 6\\]"):
        average_state_dicts([a, {**a, "linear.weight": torch.zeros(7, 6)}])
    with pytest.raises(AveragingError, match="only one of them has the weight extra"):
        average_state_dicts([a, {**a, "extra": torch.zeros(1)}])


# --------------------------------------------------------------------------------------- the snapshots kept


def test_the_test_scores_the_average_only_where_validation_prefers_it():
    assert validation_prefers_average(46.4, 63.7, "max") is False  # the default run's average of its last 3
    assert validation_prefers_average(63.7, 63.7, "max") and validation_prefers_average(64.0, 63.7, "max")
    assert validation_prefers_average(1.9, 2.0, "min") and not validation_prefers_average(2.1, 2.0, "min")
    assert validation_prefers_average(10.0, None, "max")  # no best checkpoint to compare with


def test_choose_keeps_the_newest_or_the_best_in_the_metrics_direction():
    from zoo.training.snapshots import choose

    entries = [{"step": step, "score": score} for step, score in ((1, 5.0), (2, 9.0), (3, 7.0), (4, 9.0))]
    assert [e["step"] for e in choose(entries, 2, "last", "max")] == [3, 4]
    assert [e["step"] for e in choose(entries, 2, "best", "max")] == [2, 4]
    assert [e["step"] for e in choose(entries, 2, "best", "min")] == [1, 3]  # a loss or TER: lower is better
    assert [e["step"] for e in choose(entries, 1, "best", "max")] == [4]  # of equal scores, the newer


class FakeTrainer:
    """What WeightSnapshots reads of a Trainer, validating at the steps a test sets; a snapshot file holds its step."""

    def __init__(self) -> None:
        from lightning.pytorch.trainer.states import TrainerFn

        self.state = SimpleNamespace(fn=TrainerFn.FITTING)
        self.sanity_checking, self.is_global_zero = False, True
        self.global_step, self.current_epoch, self.callback_metrics = 0, 0, {}

    def validate_at(self, callback, step: int, score: float) -> None:
        self.global_step, self.callback_metrics = step, {"val/bleu": torch.tensor(score)}
        callback.on_validation_end(self, None)

    def save_checkpoint(self, path, weights_only: bool) -> None:
        assert weights_only
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(str(self.global_step))


def test_a_snapshot_leaves_the_disk_only_once_no_last_ckpt_lists_it(tmp_path):
    """Killed between a validation's snapshot and its last.ckpt, a run resumes from the previous last.ckpt: every
    snapshot that one lists must still be there, and the newer one is dropped."""
    from zoo.training.snapshots import WeightSnapshots, read_index

    trainer, kept = FakeTrainer(), WeightSnapshots(tmp_path, 2, "last", "val/bleu", "max")
    for step in (1, 2):
        trainer.validate_at(kept, step, float(step))
    last_ckpt = kept.state_dict()  # written after the validation at step 2
    trainer.validate_at(kept, 3, 3.0)  # then killed before its last.ckpt
    assert [e["step"] for e in read_index(tmp_path)["snapshots"]] == [2, 3]
    assert snapshot(tmp_path, 1).is_file(), "deleted while the latest last.ckpt still lists it"

    resumed = WeightSnapshots(tmp_path, 2, "last", "val/bleu", "max")
    resumed.load_state_dict(last_ckpt)
    resumed.on_train_start(trainer, None)
    assert [p.name for p in resumed.paths()] == [snapshot(tmp_path, s).name for s in (1, 2)]
    assert all(path.is_file() for path in resumed.paths()) and not snapshot(tmp_path, 3).exists()
    assert [e["step"] for e in read_index(tmp_path)["snapshots"]] == [1, 2]
    for step in (3, 4):
        trainer.validate_at(resumed, step, float(step))
    resumed.on_train_end(trainer, None)
    assert sorted(p.name for p in (tmp_path / "checkpoints" / "snapshots").glob("step-*")) == [
        snapshot(tmp_path, s).name for s in (3, 4)
    ]


def test_the_best_snapshots_are_kept_by_score(tmp_path):
    from zoo.training.snapshots import WeightSnapshots

    trainer, kept = FakeTrainer(), WeightSnapshots(tmp_path, 2, "best", "val/bleu", "max")
    for step, score in ((1, 5.0), (2, 9.0), (3, 4.0), (4, 7.0)):
        trainer.validate_at(kept, step, score)
    assert [(e["step"], e["score"]) for e in kept.kept] == [(2, 9.0), (4, 7.0)]
    assert not snapshot(tmp_path, 3).exists(), "a snapshot not among the best is never written"


def test_the_validation_of_the_average_after_training_keeps_no_snapshot(tmp_path):
    from lightning.pytorch.trainer.states import TrainerFn

    from zoo.training.snapshots import WeightSnapshots

    trainer, kept = FakeTrainer(), WeightSnapshots(tmp_path, 2, "last", "val/bleu", "max")
    trainer.state.fn = TrainerFn.VALIDATING
    trainer.validate_at(kept, 5, 1.0)
    assert kept.kept == [] and not (tmp_path / "checkpoints").exists()


# ------------------------------------------------------------------------------------------- a real run


# ---------------------------------------------------------------------------------------- the tested checkpoint


@pytest.mark.parametrize(
    "summary_text, chosen",
    [('{"average": {"tested": true}}', "average.ckpt"), ('{"average": {"tested": false}}', "best.ckpt"), ("{", None)],
)
def test_the_tested_checkpoint_follows_the_summary_and_a_damaged_one_is_refused(tmp_path, summary_text, chosen):
    (tmp_path / "checkpoints").mkdir()
    for name in ("average.ckpt", "best.ckpt"):
        (tmp_path / "checkpoints" / name).write_bytes(b"weights")
    (tmp_path / "summary.json").write_text(summary_text)
    if chosen:
        assert checkpoint_file(tmp_path).name == chosen
    else:  # no silent fall-back to best.ckpt: the user names the weights
        with pytest.raises(RunLoadError, match=r"summary.json is unreadable .*--checkpoint average.ckpt"):
            checkpoint_file(tmp_path)


# ------------------------------------------------------------------------------------------------ config


def test_the_options_are_checked_and_kept_from_lightning():
    from omegaconf import OmegaConf

    from zoo.config.checks import ConfigError
    from zoo.config.sections import TrainerConfig
    from zoo.training.trainer import lightning_options

    with pytest.raises(ConfigError, match="average_last=-1 must be >= 0; 0 turns averaging off"):
        TrainerConfig(average_last=-1)
    with pytest.raises(ConfigError, match="average_best=3 with average_last=5: .* not both"):
        TrainerConfig(average_last=5, average_best=3)
    options = lightning_options(OmegaConf.structured(TrainerConfig(average_best=3)))
    assert "average_best" not in options and "average_last" not in options
