"""Every experiment preset in conf/experiment/ runs as shipped, shrunk to a few batches, in a real subprocess.

The presets are found by globbing, so a new one is tested without being listed here. Only sizes that
do not change what a preset compares are shrunk: the data, the epochs and batches, and the widths of
the components the preset leaves at their defaults (a preset that sets its own model keeps it).
Presets that sweep (``hydra.sweeper.params``) run in test_presets_sweeps.py, so that pytest-xdist
can run the two files side by side.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import fork_zoo
from helpers.presets import PRESETS, check_run, load_preset, prepare, sweep_params

pytestmark = pytest.mark.slow

SINGLE = [p for p in PRESETS if not sweep_params(load_preset(p))]


@pytest.mark.parametrize("path", SINGLE, ids=[p.stem for p in SINGLE])
def test_preset_runs(path: Path, tmp_path: Path):
    _, overrides, env, corpus = prepare(path, tmp_path)
    run_dir = tmp_path / "run"
    fork_zoo("train", *overrides, f"hydra.run.dir={run_dir}", cwd=tmp_path, env=env)
    check_run(run_dir, corpus)
