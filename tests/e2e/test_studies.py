"""The studies end to end at a tiny size, as their commands run them: ``experiment=recall_map`` sweeps families,
widths and data sizes, zoo compare draws its map and table; ``experiment=listops_long`` trains its families to a
FLOP budget on LRA-length data (shrunk). Each sweep keeps its preset's shape with fewer of everything."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import fork_zoo
from helpers.presets import FEW_BATCHES

pytestmark = pytest.mark.slow

TINY_DATA = ["dataset.train_size=32", "dataset.val_size=4", "dataset.test_size=4"]
#: FEW_BATCHES less the epoch limit, which a FLOP budget decides (zoo refuses both at once).
UNLIMITED_EPOCHS = [o for o in FEW_BATCHES if not o.startswith("trainer.max_epochs=")]


@pytest.fixture(scope="module")
def recall_map(tmp_path_factory) -> Path:
    """Two families at two widths on the smallest panel, at the preset's learning rates: 8 tiny runs."""
    root = tmp_path_factory.mktemp("recall_map")
    sweep = root / "sweep"
    fork_zoo(
        "train", "-m", "experiment=recall_map", "model=family_gru,family_transformer", "network.width=8,16",
        "recall_panel=l16_p2", *FEW_BATCHES, "latency_items=0", *TINY_DATA, f"hydra.sweep.dir={sweep}", cwd=root,
    )  # fmt: skip
    return sweep


def test_the_recall_map_sweeps_every_cell_at_each_learning_rate(recall_map: Path):
    summaries = sorted(recall_map.glob("*/summary.json"))
    assert len(summaries) == 8 and not (recall_map / "8").exists()


def test_zoo_compare_draws_the_map_and_its_table(recall_map: Path):
    text = fork_zoo("compare", str(recall_map), cwd=recall_map).stdout
    table = text[text.index("score against width") :]
    assert "model=family_gru" in table and "model=family_transformer" in table and "length=16 pairs=2" not in table
    page = recall_map / "report.html"
    fork_zoo("compare", str(recall_map), "--html", str(page), cwd=recall_map)
    assert "Score against width" in page.read_text()


def test_long_listops_trains_its_families_to_the_flop_budget(tmp_path: Path):
    sweep = tmp_path / "sweep"
    fork_zoo(
        "train", "-m", "experiment=listops_long", "model=family_gru,family_s4d", "optim.lr=3e-3", "network.width=16",
        "dataset.min_length=10", "dataset.max_length=40", "data.max_len=40", "data.max_tokens=400",
        "trainer.budget_flops=3e7", "trainer.budget_validations=1", *UNLIMITED_EPOCHS, "latency_items=0", *TINY_DATA,
        f"hydra.sweep.dir={sweep}", cwd=tmp_path,
    )  # fmt: skip
    text = fork_zoo("compare", str(sweep), cwd=tmp_path).stdout
    assert "model=family_gru" in text and "model=family_s4d" in text
