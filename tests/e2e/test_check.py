"""``zoo check``: the shipped contract suite run on a plugin in a folder, as its author would, in a real process."""

from __future__ import annotations

import re

import pytest
from helpers import fenced_block_after, fork_zoo

pytestmark = pytest.mark.slow

FLAT_SCORER = '''
"""A scorer that breaks the contract: one score per query, (B, H, T, 1), which broadcasts over the keys."""
from dataclasses import dataclass

from zoo.api import Attention, register


@register("attention", "flat")
class FlatScorer(Attention):
    """One score per query."""

    @dataclass
    class Config:
        pass

    def __init__(self, cfg, query_dim, key_dim, heads=1):
        super().__init__()

    def forward(self, q, k):
        return q.sum(-1, keepdim=True)
'''


def test_zoo_check_passes_the_readme_scorer_and_names_a_broken_shape(tmp_path):
    folder = tmp_path / "my_plugins"
    folder.mkdir()
    (folder / "distance.py").write_text(fenced_block_after("<!-- docs-test: plugin my_plugins/distance.py -->"))
    (folder / "flat.py").write_text(FLAT_SCORER)
    good = fork_zoo("check", "distance", "--plugin-dir", str(folder), cwd=tmp_path)
    assert good.stdout.startswith("attention/distance [zoo.registry.folders.my_plugins.distance]: ")
    assert " failed" not in good.stdout
    bad = fork_zoo("check", "attention/flat", "--plugin-dir", str(folder), cwd=tmp_path, check=False)
    assert bad.returncode == 1
    assert (
        "FAILED: attention/flat scores, prepared keys, masking (heads=1): scores (3, 1, 5, 1), expected (B, H, T, S)"
        in bad.stdout
    )
    assert re.fullmatch(
        r"zoo: error: \d+ contract check\(s\) failed; each line above says what was expected\n", bad.stderr
    )


def test_a_run_with_a_broken_plugin_stops_before_any_data_loads(tmp_path):
    """The probe of the configured model names the plugin and the expected shape; no run folder is made."""
    folder = tmp_path / "my_plugins"
    folder.mkdir()
    (folder / "flat.py").write_text(FLAT_SCORER)
    run = fork_zoo("train", f"plugin_dirs=[{folder}]", "attention=flat", "hydra.run.dir=run", cwd=tmp_path, check=False)
    assert run.returncode == 1
    assert run.stderr.splitlines() == [
        "zoo: error: attention 'flat' broke its contract on a probe batch before any data loaded: scores (2, 1, 1, 1), "
        "expected (B, H, T, S) = (2, 1, 1, 6); `zoo check flat` runs its contract checks"
    ]
    assert not (tmp_path / "run").exists()
