"""Options that moved: a command line that still uses an old spelling gets one line naming the new one.

Without this, Hydra would report only that the old key does not exist.
"""

from __future__ import annotations

from zoo.config.checks import ConfigError
from zoo.config.overrides import key_and_value

#: old override key -> new key
RENAMED = {
    "data.joint_vocab": "task.joint_vocab",
    "decode.max_len_ratio": "task.max_len_ratio",
    "decode.max_len_offset": "task.max_len_offset",
    "length_buckets": "task.length_buckets",
    "model.share_embeddings": "network.share_embeddings",  # model= is the recipe group; the section is network
}

#: old group choice -> the override that replaces it
MOVED_CHOICES = {
    "experiment=multi30k_gru": "model=multi30k_gru",
    "experiment=multi30k_transformer": "model=multi30k_transformer",
    "experiment=multi30k_esn": "model=multi30k_esn",
    "experiment=compare_encoders": "experiment=compare_families",
}


def check_renamed(overrides: list[str]) -> None:
    """Raise :class:`ConfigError` for the first override that uses a moved option's old key or choice."""
    for override in overrides:
        key, value = key_and_value(override)
        if key in RENAMED:
            raise ConfigError(f"{key} is now {RENAMED[key]}; write {RENAMED[key]}={value}")
        for choice in value.split(","):
            if f"{key}={choice}" in MOVED_CHOICES:
                raise ConfigError(f"{key}={choice} is now {MOVED_CHOICES[f'{key}={choice}']}; write that instead")
