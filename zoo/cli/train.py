"""``zoo train``: Hydra overrides in, one training job (or a sweep) out, through :mod:`zoo.training.entry`."""

from __future__ import annotations


def run(overrides: list[str], description: str) -> None:
    """Hydra parses ``overrides`` and prints its own ``--help``, so ``description`` is not used here."""
    from zoo.training.entry import main

    main(overrides)
