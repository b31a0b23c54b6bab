"""Every experiment preset that sweeps (``hydra.sweeper.params``) runs its whole sweep, one tiny job per
combination, as ``zoo train -m experiment=NAME`` would (a swept encoder that is slow at its defaults narrow, in a
sweep of its own), and every model recipe trains a few batches in one sweep per dataset (``zoo train -m
model=a,b,...``); shrinking and data as in helpers/presets.py."""

from __future__ import annotations

import copy
import math
from pathlib import Path

import pytest
from helpers import fork_zoo
from helpers.presets import (
    CONF,
    DEFAULT_CHOICES,
    PRESETS,
    RECIPES,
    TINY_BUDGETS,
    check_run,
    load_preset,
    prepare,
    sweep_params,
)
from helpers.runs import NARROW_ENCODERS
from omegaconf import OmegaConf

from zoo.registry.discovery import discover

pytestmark = pytest.mark.slow


def without_seeds(preset: dict) -> dict:
    """A preset as written (:func:`load_preset`) less the seeds it sweeps."""
    preset = copy.deepcopy(preset)
    (preset.get("hydra", {}).get("sweeper", {}).get("params") or {}).pop("seed", None)
    return preset


# A preset that sweeps only recipes, seeds and FLOP budgets (compare_compute) trains what test_model_recipes_train
# trains already, the budgets laid out as compare_listops's sweep lays out its own; one that is another preset plus
# seeds (compare_posenc: posenc_length over 3 seeds) trains what that one trains.
ONLY_RECIPES = {"model", "seed", "trainer.budget_flops"}
SWEEPING = [p for p in PRESETS if sweep_params(load_preset(p)) and set(sweep_params(load_preset(p))) - ONLY_RECIPES]
SEEDED_COPIES = {
    p: q
    for p in SWEEPING
    for q in SWEEPING
    if "seed" in sweep_params(load_preset(p))
    and "seed" not in sweep_params(load_preset(q))
    and without_seeds(load_preset(p)) == without_seeds(load_preset(q))
}
# A study sweeps hundreds of cells for hours; tests/e2e/test_studies.py runs each at a tiny size, fewer of everything.
STUDIES = {"recall_map", "listops_long"}
SWEEPS = [p for p in SWEEPING if p not in SEEDED_COPIES and p.stem not in STUDIES]


@pytest.mark.parametrize("path", SWEEPS, ids=[p.stem for p in SWEEPS])
def test_preset_sweep_runs(path: Path, tmp_path: Path):
    preset, overrides, env, corpus = prepare(path, tmp_path)
    sweep = sweep_params(preset)
    if "seed" in sweep:  # one seed shows the sweep works; the others only repeat it
        overrides.append("hydra.sweeper.params.seed=1")
        sweep["seed"] = ["1"]
    if "trainer.budget_flops" in sweep:  # so does one budget (the overrides set it)
        sweep["trainer.budget_flops"] = list(TINY_BUDGETS)
    swept = {group: choices for group, choices in sweep.items() if group in DEFAULT_CHOICES}
    configs = []
    for folder, (narrowing, params) in narrow_apart(sweep).items():
        fork_zoo("train", "-m", *overrides, *narrowing, f"hydra.sweep.dir={tmp_path / folder}", cwd=tmp_path, env=env)
        jobs = math.prod(len(choices) for choices in params.values())
        configs += [check_run(tmp_path / folder / str(number), corpus) for number in range(jobs)]
        assert not (tmp_path / folder / str(jobs)).exists(), f"more than the {jobs} jobs the sweep names"
    for group, choices in swept.items():  # a swept component: every choice ran
        assert {config[group].name for config in configs} == set(choices)


def narrow_apart(sweep: dict[str, list[str]]) -> dict[str, tuple[list[str], dict[str, list[str]]]]:
    """The sweeps that run ``sweep`` (folder: its overrides and what it sweeps): a swept encoder whose defaults are
    slow trains narrow in a sweep of its own (an override names one encoder's fields, so the command line chooses the
    encoder too); the others sweep together."""
    wide = [name for name in sweep.get("encoder", []) if name in NARROW_ENCODERS]
    if not wide:
        return {"sweep": ([], sweep)}
    sweeps = {
        name: (
            [f"encoder={name}", f"hydra.sweeper.params.encoder={name}", *NARROW_ENCODERS[name]],
            {**sweep, "encoder": [name]},
        )
        for name in wide
    }
    rest = [name for name in sweep["encoder"] if name not in wide]
    if rest:
        sweeps["sweep"] = ([f"hydra.sweeper.params.encoder='{','.join(rest)}'"], {**sweep, "encoder": rest})
    return sweeps


@pytest.mark.parametrize("path", list(SEEDED_COPIES), ids=[p.stem for p in SEEDED_COPIES])
def test_a_preset_that_adds_seeds_composes_as_the_one_it_repeats(path: Path):
    """Hydra composes it (its defaults list included) into the configuration of the preset it repeats over seeds."""
    from zoo.config.compose import compose_config

    discover()
    repeated = SEEDED_COPIES[path]
    assert compose_config([f"experiment={path.stem}"]) == compose_config([f"experiment={repeated.stem}"])
    assert {**sweep_params(load_preset(path)), "seed": []} == {**sweep_params(load_preset(repeated)), "seed": []}


def recipes_by_dataset() -> dict[str, list[Path]]:
    """The model recipes (conf/model/), by the dataset each trains on: one sweep each. The families sized by
    network.width (family_*) choose an encoder alone, for any task's head, and sweep apart from the whole models."""
    groups: dict[str, list[Path]] = {}
    for path in RECIPES:
        recipe = load_preset(path)
        dataset = (
            "families" if "width" in recipe.get("network", {}) else recipe.get("dataset", {}).get("root", "synthetic")
        )
        groups.setdefault(str(dataset), []).append(path)
    return groups


RECIPE_SWEEPS = list(recipes_by_dataset().values())


@pytest.mark.parametrize("paths", RECIPE_SWEEPS, ids=[paths[0].stem for paths in RECIPE_SWEEPS])
def test_model_recipes_train(paths: list[Path], tmp_path: Path):
    _, overrides, env, corpus = prepare(paths[0], tmp_path)
    names = [path.stem for path in paths]
    overrides[0] = f"model={','.join(names)}"
    sweep_dir = tmp_path / "sweep"
    # training and validating show a recipe fits together; its test stage is every run's (the presets' tests)
    fork_zoo("train", "-m", *overrides, "test=false", f"hydra.sweep.dir={sweep_dir}", cwd=tmp_path, env=env)
    for number, name in enumerate(names):
        config = check_run(sweep_dir / str(number), corpus)
        recipe = load_preset(CONF / "model" / f"{name}.yaml")
        for group in ("encoder", "decoder"):  # the recipe's components, at its own settings
            for key, value in recipe.get(group, {}).items():
                if isinstance(value, str) and value.startswith("${"):  # read from another setting (network.width)
                    value = OmegaConf.select(config, value[2:-1])
                assert config[group][key] == value, f"model={name}: {group}.{key}"


def test_compare_families_sweeps_every_recipe_of_the_built_in_data():
    swept = sweep_params(load_preset(CONF / "experiment" / "compare_families.yaml"))["model"]
    assert sorted(swept) == sorted(path.stem for path in recipes_by_dataset()["synthetic"])
