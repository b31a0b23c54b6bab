"""The config a command line composes to, outside a Hydra job: for the checks before Hydra starts, a search's
studies and the commands that work on a run's data."""

from __future__ import annotations

from omegaconf import DictConfig

from zoo.config.overrides import CompositionError, explain, parse_overrides


def compose_config(overrides: list[str], hydra: bool = False) -> DictConfig:
    """The config ``overrides`` compose to (no Hydra job; with Hydra's own settings when ``hydra``); one that does not
    compose is a :class:`CompositionError`."""
    from hydra import compose, initialize_config_module
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    try:
        with initialize_config_module("zoo.conf", version_base="1.3"):
            return compose("config", overrides=overrides, return_hydra_config=hydra)
    except (HydraException, OmegaConfBaseException) as error:
        raise CompositionError(explain(error, overrides)) from None


def config_groups() -> set[str]:
    """Every config group a command line may choose from (``encoder``, ``experiment``, ``hydra/sweeper``, ...), with
    the plugins discovered so far."""
    from hydra import initialize_config_module
    from hydra.core.global_hydra import GlobalHydra

    with initialize_config_module("zoo.conf", version_base="1.3"):
        loader = GlobalHydra.instance().config_loader()
        return {*loader.list_groups(""), *(f"hydra/{group}" for group in loader.list_groups("hydra"))}


def plugin_dirs_from_overrides(overrides: list[str]) -> list[str]:
    """The ``plugin_dirs=[...]`` override, read before Hydra composes anything (plugins must register first)."""
    candidates = [o for o in overrides if o.lstrip("+~").startswith("plugin_dirs=")]
    dirs: list[str] = []
    for override in parse_overrides(candidates):
        value = override.value()
        dirs.extend(value if isinstance(value, list) else [value])
    return [str(d) for d in dirs]
