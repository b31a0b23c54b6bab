"""Hydra's ConfigStore, shared rather than copied.

Hydra 1.3 deep-copies its config repository for every composition and for each group its ``--help`` lists, and the
repository holds the ConfigStore singleton, so every copy copied every stored config: ``zoo train --help`` made
about 140 copies of every registered component's config (20 s of CPU on a busy machine), and each job's composition
one. The repository's copy exists so that re-reading the search path leaves the original alone; the store is not
touched by that, and Hydra after 1.3 reads the one live store instead (facebookresearch/hydra#2928). A copy of the
singleton is therefore the singleton itself, here as there.
"""

from hydra.core.config_store import ConfigStore


def _shared(store: ConfigStore, memo: dict) -> ConfigStore:
    return store


ConfigStore.__deepcopy__ = _shared

__all__ = ["ConfigStore"]
