"""Pieces of the training job that are not end-to-end: schedules, parameter counts, Trainer options."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch
from omegaconf import OmegaConf
from torch import nn

from zoo.config.sections import TrainerConfig
from zoo.training.measures import epochs_trained, parameter_counts
from zoo.training.schedule import warmup_then_decay
from zoo.training.trainer import lightning_options


def test_warmup_then_inverse_sqrt_and_cosine():
    inv = warmup_then_decay("inverse_sqrt", warmup_steps=100, total_steps=1000)
    assert inv(0) == pytest.approx(0.01) and inv(99) == pytest.approx(1.0)
    assert inv(399) == pytest.approx(math.sqrt(100 / 400))
    cos = warmup_then_decay("cosine", warmup_steps=100, total_steps=1000)
    assert cos(99) == pytest.approx(1.0) and 0 < cos(999) < 1e-5  # no step at lr 0: zero one step after the last
    assert warmup_then_decay("constant", 10, 100)(50) == 1.0


def test_unknown_schedule_names_the_choices():
    with pytest.raises(ValueError, match="inverse_sqrt, cosine, constant"):
        warmup_then_decay("linear", 10, 100)


def test_parameter_counts_split_trainable_frozen_and_count_tied_weights_once():
    model = nn.Module()
    model.embedding = nn.Embedding(10, 4)
    model.output = nn.Linear(4, 10, bias=False)
    model.output.weight = model.embedding.weight  # tied
    model.frozen = nn.Linear(4, 4, bias=False).requires_grad_(False)
    model.register_buffer("reservoir", torch.zeros(3, 3))
    model.register_buffer("table", torch.zeros(100), persistent=False)  # derived, not a weight
    assert parameter_counts(model) == {"trainable": 40, "frozen": 16 + 9}


def test_an_epoch_cut_short_counts_as_the_fraction_that_ran():
    def trainer(current_epoch, done, batches):
        progress = SimpleNamespace(current=SimpleNamespace(completed=done))
        return SimpleNamespace(
            current_epoch=current_epoch,
            num_training_batches=batches,
            fit_loop=SimpleNamespace(epoch_loop=SimpleNamespace(batch_progress=progress)),
        )

    assert epochs_trained(trainer(3, 40, 40)) == 3  # three whole epochs
    assert epochs_trained(trainer(3, 10, 40)) == 2.25  # max_time stopped the third a quarter of the way
    assert epochs_trained(trainer(0, 0, 40)) == 0


def test_trainer_section_maps_onto_lightning_options():
    options = lightning_options(OmegaConf.structured(TrainerConfig(limit_val_batches=0.5)))
    assert "patience" not in options and "cpu_threads" not in options
    assert options["limit_val_batches"] == 0.5 and "limit_train_batches" not in options
    assert options["max_epochs"] == TrainerConfig().max_epochs
