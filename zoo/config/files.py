"""The YAML files of a run directory, read so that a damaged one is one line naming it.

A run's ``config.yaml`` and ``.hydra/overrides.yaml`` are written once, when the run starts;
an editor, a full disk or a copy cut short can leave one that is no longer YAML. PyYAML's
report on it is a page of parser state; the user needs the file, the place and what to do.
"""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig, ListConfig, OmegaConf

from zoo.errors import ZooError

#: What to do about a damaged file of a run: it cannot be rebuilt from the rest of the run.
RESTORE = "restore it from a copy of the run, or train a new run"


class DamagedFile(ZooError, ValueError):
    """A run's YAML file cannot be read: not text, not YAML, or not the mapping or list it must hold."""


def load_yaml(path: Path, holds: type = DictConfig) -> DictConfig | ListConfig:
    """``path`` read with OmegaConf; it must hold ``holds`` (a mapping, or a ListConfig for a list)."""
    import yaml
    from omegaconf.errors import OmegaConfBaseException

    try:
        loaded = OmegaConf.load(path)
    except UnicodeDecodeError:
        raise DamagedFile(f"{path} is damaged: it is not UTF-8 text; {RESTORE}") from None
    except yaml.YAMLError as error:
        raise DamagedFile(f"{path} is damaged: {yaml_problem(error)}; {RESTORE}") from None
    except OmegaConfBaseException as error:
        raise DamagedFile(f"{path} is damaged: {str(error).splitlines()[0]}; {RESTORE}") from None
    if not isinstance(loaded, holds) or (holds is DictConfig and not loaded):
        what = "a mapping of settings" if holds is DictConfig else "a list"
        raise DamagedFile(f"{path} is damaged: it does not hold {what}; {RESTORE}")
    return loaded


def yaml_problem(error: Exception) -> str:
    """PyYAML's complaint in a few words, with the line and column where the parser stopped."""
    problem = getattr(error, "problem", None) or str(error).splitlines()[0]
    mark = getattr(error, "problem_mark", None)
    return f"{problem} at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else problem
