"""Every experiment preset that sweeps (``hydra.sweeper.params``) runs its whole sweep, one tiny job per
combination, as ``zoo train -m experiment=NAME`` would; shrinking and data as in tests/test_presets.py."""
from __future__ import annotations

import math
from pathlib import Path

import pytest

from conftest import run_zoo
from test_presets import DEFAULT_CHOICES, PRESETS, check_run, load_preset, prepare, sweep_params

SWEEPS = [p for p in PRESETS if sweep_params(load_preset(p))]


@pytest.mark.parametrize("path", SWEEPS, ids=[p.stem for p in SWEEPS])
def test_preset_sweep_runs(path: Path, tmp_path: Path):
    preset, overrides, env, corpus = prepare(path, tmp_path)
    sweep = sweep_params(preset)
    if "seed" in sweep:  # one seed shows the sweep works; the others only repeat it
        overrides.append("hydra.sweeper.params.seed=1")
        sweep["seed"] = ["1"]
    sweep_dir = tmp_path / "sweep"
    run_zoo("train", "-m", *overrides, f"hydra.sweep.dir={sweep_dir}", cwd=tmp_path, env=env)
    jobs = math.prod(len(choices) for choices in sweep.values())
    configs = [check_run(sweep_dir / str(number), corpus) for number in range(jobs)]
    assert not (sweep_dir / str(jobs)).exists(), f"more than the {jobs} jobs the sweep names"
    for group in sweep.keys() & DEFAULT_CHOICES.keys():  # a swept component: every choice ran
        assert {config[group].name for config in configs} == set(sweep[group])
