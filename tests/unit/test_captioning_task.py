"""The captioning task's defaults and the frontends it refuses, at composition and validation."""

from __future__ import annotations

import pytest
from helpers.config import composed

import zoo.config.schema  # noqa: F401  (stores the schema)
from zoo.data.sampling import DataError
from zoo.training.preflight import validate


def test_task_captioning_brings_scenes_a_cnn_and_no_encoder_unless_told_otherwise():
    cfg = composed("task=captioning")
    assert (cfg.dataset.name, cfg.frontend.name, cfg.encoder.name) == ("scenes", "cnn", "identity")
    cfg = composed("task=captioning", "frontend=patches", "encoder=gru")
    assert (cfg.dataset.name, cfg.frontend.name, cfg.encoder.name) == ("scenes", "patches", "gru")
    assert composed().dataset.name == "synthetic", "translation keeps its own defaults"


def test_a_frontend_the_task_cannot_feed_is_refused_at_validation():
    with pytest.raises(DataError, match="frontend 'tokens' reads tokens but task 'captioning' gives image or features"):
        validate(composed("task=captioning", "frontend=tokens"))


def test_frontend_features_without_a_features_file_is_refused_at_validation():
    with pytest.raises(ValueError, match="set task.features=PATH"):
        validate(composed("task=captioning", "frontend=features"))
