"""A preset named twice: a model recipe that builds on an experiment preset, with that preset named again.

``model=multi30k_transformer`` includes ``/experiment/multi30k`` in its defaults list and then sets its own
batches, epochs and schedule over it. ``experiment=multi30k`` on the same command line is applied after every
other choice (the experiment comes last in the defaults list), so the preset's settings would silently replace
the recipe's: another run than the one the recipe describes.
"""

from __future__ import annotations

from importlib.resources import files

import yaml

from zoo.config.checks import ConfigError
from zoo.config.overrides import key_and_value

#: The experiment presets' folder in a defaults list (``/experiment/NAME`` or ``experiment/NAME``).
EXPERIMENT_DEFAULT = "experiment/"
#: A model recipe named by its absolute path in another recipe's defaults list.
RECIPE_DEFAULT = "/model/"


def included_experiments(model: str) -> set[str]:
    """The experiment presets that zoo's model recipe ``model`` includes in its defaults list, itself or through the
    recipes it builds on (``multi30k_gla`` on ``multi30k_linear_transformer``); none for a name that is no recipe of
    zoo's: Hydra reports that one."""
    recipe = files("zoo.conf").joinpath("model", f"{model}.yaml")
    if not recipe.is_file():
        return set()
    defaults = (yaml.safe_load(recipe.read_text(encoding="utf-8")) or {}).get("defaults") or []
    found = set()
    for entry in defaults:
        if not isinstance(entry, str) or entry.strip() == "_self_":
            continue
        name = entry.strip()
        if name.lstrip("/").startswith(EXPERIMENT_DEFAULT):
            found.add(name.lstrip("/").removeprefix(EXPERIMENT_DEFAULT))
        elif name.startswith(RECIPE_DEFAULT) or not name.startswith("/"):  # another recipe (a plain name: model/'s)
            found |= included_experiments(name.removeprefix(RECIPE_DEFAULT))
    return found


def check_presets_not_repeated(overrides: list[str]) -> None:
    """Raise :class:`ConfigError` when an ``experiment`` choice is one that a chosen model recipe includes already."""
    chosen: dict[str, list[str]] = {}
    for override in overrides:
        key, value = key_and_value(override)
        chosen.setdefault(key, []).extend(value.split(","))
    for model in chosen.get("model", []):
        for experiment in set(chosen.get("experiment", [])) & included_experiments(model):
            raise ConfigError(
                f"model={model} builds on experiment={experiment} already; naming experiment={experiment} again "
                "applies the preset's settings over the recipe's (its batches, epochs, schedule): drop it"
            )
