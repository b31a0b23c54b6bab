"""``zoo train``: Hydra overrides in, one training job (or a sweep) out."""
from __future__ import annotations

import sys


def plugin_dirs_from_overrides(overrides: list[str]) -> list[str]:
    """The ``plugin_dirs=[...]`` override, read before Hydra composes anything (plugins must register first)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    candidates = [o for o in overrides if o.lstrip("+~").startswith("plugin_dirs=")]
    dirs: list[str] = []
    for override in OverridesParser.create().parse_overrides(candidates):
        value = override.value()
        dirs.extend(value if isinstance(value, list) else [value])
    return [str(d) for d in dirs]


def run(overrides: list[str], description: str) -> None:
    """Hydra parses ``overrides`` and prints its own ``--help``, so ``description`` is not used here."""
    from zoo.registry.discovery import discover

    discover(plugin_dirs_from_overrides(overrides))
    import zoo.config.schema  # noqa: F401  (stores the schema)
    from zoo.training.run import hydra_entry

    sys.argv = ["zoo train", *overrides]
    hydra_entry()
