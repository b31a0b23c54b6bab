"""The ``none`` positional encoding's options (none), apart from its module: a config is checked without torch."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class NoneConfig:
    pass
