"""zoo's configuration composed in-process, as ``zoo train OVERRIDES`` composes it before it validates."""

from __future__ import annotations

from hydra import compose, initialize_config_module

import zoo.config.schema  # noqa: F401  (stores the schema)
from zoo.registry import discovery


def composed(*overrides: str):
    """The config that ``overrides`` compose to (plugins discovered first)."""
    discovery.discover()
    with initialize_config_module("zoo.conf", version_base="1.3"):
        return compose("config", overrides=list(overrides))
