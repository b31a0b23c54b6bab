"""What ``zoo train``'s command line asks, held against what Hydra will do with it, before anything runs.

Hydra does some of what a command line says without a word where it does less, or other, than asked: a sweeper or
launcher chosen without ``-m`` is never used (one ordinary run trains), a preset that sweeps (its
``hydra.sweeper.params``) trains its first values alone, a group given twice keeps the last, and a budget
decides the steps, the validations and the stopping, so ``trainer.max_steps`` beside one is dropped. Each is one line
naming the fix. The first two are read from the command line as written (:func:`check_asked`), the others from the
config each job composes (:func:`check_composed_as_asked`).
"""

from __future__ import annotations

from typing import Any

from omegaconf import OmegaConf

from zoo.config.compose import config_groups
from zoo.config.overrides import key_and_value
from zoo.config.sections import BUDGETS
from zoo.errors import ZooError

#: Settings only a sweep reads (``-m``): without it Hydra runs one job and never looks at them.
SWEEP_ONLY = ("hydra/sweeper", "hydra/launcher", "hydra.sweeper.", "hydra.launcher.", "hydra.sweep.")
#: Settings a budget decides (:func:`zoo.training.trainer.budget_options`): given beside one, they would be dropped.
BUDGET_DECIDES = (
    "trainer.max_steps",
    "trainer.max_epochs",
    "trainer.patience",
    "trainer.val_check_interval",
    "trainer.check_val_every_n_epoch",
)


class NotAsAsked(ZooError):
    """Hydra would run something else than the command line asks, without a word."""


def check_asked(overrides: list[str], multirun: bool) -> None:
    """Refuse a group given twice, and a sweep's setting without ``-m``, as the command line writes them."""
    settings = [o for o in overrides if not o.startswith("-")]
    check_groups_given_once(settings)
    if not multirun:
        check_no_sweep_settings(settings)


def check_groups_given_once(overrides: list[str]) -> None:
    """Hydra applies overrides in order, so of a group given twice the last wins and the first is gone. (A key given
    twice is how a command line changes a value a list of settings holds, as the tests' tiny runs do.)"""
    groups, first = config_groups(), {}
    for override in overrides:
        key = key_and_value(override)[0]
        if key not in groups:
            continue
        if key not in first:
            first[key] = override
            continue
        values = ",".join(key_and_value(o)[1] for o in (first[key], override))
        raise NotAsAsked(
            f"{key} is given twice ({first[key]}, then {override}): Hydra would use the last alone; give it once, "
            f"or run both with -m {key}={values}"
        )


def check_no_sweep_settings(overrides: list[str]) -> None:
    """A sweeper, a launcher or their settings are read only by a sweep: without ``-m`` one plain run trains."""
    for override in overrides:
        if key_and_value(override)[0].startswith(SWEEP_ONLY):
            raise NotAsAsked(
                f"{override} is read only by a sweep, and without -m Hydra would train one ordinary run instead: "
                f"add -m (zoo train -m {' '.join(overrides)})"
            )


def check_preset_sweep(hydra_cfg: Any, overrides: list[str], multirun: bool) -> None:
    """A preset that sweeps (``experiment=compare_families`` sets ``hydra.sweeper.params``) needs ``-m``: without it
    Hydra trains one run of the first values (one point of the sweep, every swept key set on the command line, is
    what it asks). With it, a budget among the values it sweeps decides what :data:`BUDGET_DECIDES` names, as one on
    the command line does."""
    params = OmegaConf.select(hydra_cfg, "hydra.sweeper.params", default=None) or {}
    given = {key_and_value(override)[0] for override in overrides}
    unset = {key: value for key, value in params.items() if key not in given}
    if unset and not multirun:
        swept = ", ".join(f"{key}={value}" for key, value in unset.items())
        raise NotAsAsked(
            f"this command line's presets sweep ({swept}), and without -m Hydra would train one run of their first "
            f"values: add -m (zoo train -m {' '.join(overrides)})"
        )
    for budget in BUDGETS:
        if f"trainer.{budget}" in params:
            refuse_decided(overrides, budget, f"the preset's sweep over trainer.{budget}={params[f'trainer.{budget}']}")


def check_composed_as_asked(cfg: Any, overrides: list[str]) -> None:
    """A setting the command line gives that the composed config's budget decides is refused, naming the budget."""
    for budget in BUDGETS:
        if cfg.trainer.get(budget) is not None:
            refuse_decided(overrides, budget, f"trainer.{budget}={cfg.trainer[budget]:g}")


def refuse_decided(overrides: list[str], budget: str, given_as: str) -> None:
    """Refuse the first of ``overrides`` that sets what ``budget`` (``given_as`` names where it is set) decides."""
    for override in overrides:
        key = key_and_value(override)[0]
        if key in BUDGET_DECIDES:
            raise NotAsAsked(
                f"{override} would be dropped: {given_as} decides the steps, the validations and when training stops "
                f"(a budget is spent whole); drop {key}, or train for it without a budget (trainer.{budget}=null)"
            )
