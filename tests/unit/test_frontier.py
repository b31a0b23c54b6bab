"""Who wins at which budget (``zoo.report.frontier``) judged as ``zoo compare`` judges a row: the seed is the unit,
one seed gives no verdict, spreads beyond calibration are said."""

import json
import zlib

import numpy as np
import pytest
from helpers.run_files import summary, write

from zoo.report.compare import Leaderboard
from zoo.report.frontier import frontier
from zoo.report.html import score_against_compute
from zoo.report.live import colours_of
from zoo.report.runs import find_runs
from zoo.report.stats import TWO_A_SIDE, WELCH

LOW, HIGH = ("flops", 1e12), ("flops", 4e12)
ITEMS = 60
#: Each test item's difficulty, shared by every run (it cancels in a difference, as a real test set's does).
DIFFICULTY = np.random.default_rng(0).normal(0, 10, ITEMS)


def budgeted(folder, model: str, spend: float, seed: int, score: float, configuration: str = "") -> None:
    """A finished run of ``model`` trained to ``spend`` FLOPs with ``seed``, scoring ``score``: the mean of its test
    items, each the item's difficulty plus the run's own noise (from its model and seed, small: items alone would
    call any gap of a point sure). ``configuration`` names another configuration of the family (its config key)."""
    content = summary(model, {"quality": score}, seed=seed, monitor="quality")
    content.update(
        config_key=f"{model}{configuration}-{spend:g}",
        choices={"model": model},
        budget={"flops": spend, "steps": 100},
        compute={"flops": spend, "processor_seconds": 10.0},
    )
    write(folder, content)
    noise = np.random.default_rng([seed, zlib.crc32(model.encode())]).normal(0, 0.3, ITEMS)
    item_scores = score + DIFFICULTY - DIFFICULTY.mean() + noise - noise.mean()
    rows = [{"id": str(k), "scores": {"quality": float(s)}} for k, s in enumerate(item_scores)]
    (folder / "test_items.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))


def cells(table: str, budget: str) -> list[str]:
    """The row of ``budget`` in the frontier's table, split into its cells."""
    row = next(line for line in table.splitlines() if line.startswith(budget))
    return [cell.strip() for cell in row.split("  ") if cell.strip()]


def one_seed_each(root) -> None:
    """A GRU and a Transformer with one seed each, the Transformer overtaking the GRU by 10 points."""
    scores = {("gru", 1e12): 40.0, ("gru", 4e12): 60.0, ("transformer", 1e12): 30.0, ("transformer", 4e12): 70.0}
    for (model, spend), score in scores.items():
        budgeted(root / f"{model}-{spend:g}", model, spend, 1, score)


def test_a_lead_of_one_seed_a_side_has_no_p_and_says_it_needs_two(tmp_path):
    one_seed_each(tmp_path)
    found = frontier(find_runs([tmp_path]), "quality")
    assert found.lead(HIGH).items_only and found.lead(HIGH).p_unadjusted < 0.001  # items alone: "sure" of noise
    table = found.table()
    assert cells(table, "1e+12 FLOPs")[-2:] == ["model=gru (no verdict)", "needs ≥ 2 seeds for a verdict"]
    assert cells(table, "4e+12 FLOPs")[-2:] == ["model=transformer (no verdict)", "needs ≥ 2 seeds for a verdict"]
    assert "†" not in table and "<0.001" not in table and "< 0.001" not in table
    assert "needs ≥ 2 seeds for a verdict: with one seed on a side its training noise is unknown" in table
    assert found.changes() == ["1 other change of order with no verdict (needs ≥ 2 seeds for a verdict)"]


def test_the_report_shows_a_one_seed_lead_without_a_p(tmp_path):
    one_seed_each(tmp_path)
    board = Leaderboard(find_runs([tmp_path]))
    page = "\n".join(score_against_compute(board, colours_of([("", board)], [])))
    assert "needs ≥ 2 seeds for a verdict" in page and "†" not in page and "&lt;0.001" not in page


def seeds_of_two_families(root, spreads: tuple[float, float] = (2.0, 2.0), seeds: int = 3, gap: float = 4.0) -> None:
    """A GRU and a Transformer at two budgets, ``seeds`` seeds each, their seed scores ``spreads`` apart around
    means 1.5 points apart at the small budget (the GRU ahead) and ``gap`` at the large (the Transformer ahead)."""
    means = {("gru", 1e12): 40.0, ("gru", 4e12): 60.0, ("transformer", 1e12): 38.5, ("transformer", 4e12): 60.0 + gap}
    offsets = np.linspace(-1, 1, seeds)
    for (model, spend), mean in means.items():
        spread = spreads[model == "transformer"]
        for seed, offset in enumerate(offsets, 1):
            budgeted(root / f"{model}-{spend:g}-{seed}", model, spend, seed, mean + spread * offset)


def test_a_configuration_pooled_at_the_same_seeds_is_no_more_seeds(tmp_path):
    """A copy of the Transformer's runs as a second configuration of its family: the seed is the unit, so its
    points, leads and overtaking stay where they were; the table counts seeds and names the pooling."""
    seeds_of_two_families(tmp_path / "runs")
    alone = frontier(find_runs([tmp_path / "runs"]), "quality")
    for seed in (1, 2, 3):
        for spend, mean in ((1e12, 38.5), (4e12, 64.0)):
            score = mean + 2.0 * (seed - 2)
            budgeted(tmp_path / "runs" / f"copy-{spend:g}-{seed}", "transformer", spend, seed, score, "-dropout")
    pooled = frontier(find_runs([tmp_path / "runs"]), "quality")
    for spend in (LOW, HIGH):
        assert pooled.lead(spend).p == pytest.approx(alone.lead(spend).p, rel=1e-12)
        assert pooled.lead(spend).seeds == alone.lead(spend).seeds == (3, 3)
    assert [(p.score.mean, p.score.std, p.score.n) for p in pooled.points] == [
        (p.score.mean, p.score.std, p.score.n) for p in alone.points
    ]
    assert pooled.changes() == alone.changes()
    table = pooled.table()
    assert cells(table, "4e+12 FLOPs")[2] == "64.0 ± 2.0 (n=3)"
    notes = [line for line in table.splitlines() if line.startswith("model=transformer at")]
    assert notes == [
        "model=transformer at 1e+12 FLOPs: 6 runs of 2 configurations at 3 seeds, each seed's runs averaged",
        "model=transformer at 4e+12 FLOPs: 6 runs of 2 configurations at 3 seeds, each seed's runs averaged",
    ]


def test_a_lead_is_tested_as_zoo_compare_tests_the_same_runs_grouped_by_family(tmp_path):
    """The same test, over the same units: the frontier's lead and ``zoo compare --by model``'s row agree, pooled
    configurations and all."""
    seeds_of_two_families(tmp_path)
    for seed in (1, 2, 3):
        budgeted(tmp_path / f"copy-{seed}", "gru", 4e12, seed, 60.0 + 2.0 * (seed - 2), "-dropout")
    runs = find_runs([tmp_path])
    found = frontier(runs, "quality")
    board = Leaderboard([run for run in runs if run.summary["budget"]["flops"] == 4e12], by=["model"])
    board.test_against(board.find("model=gru")[0])
    row = board.comparisons["model=transformer"]
    lead = found.lead(HIGH)
    assert (lead.p, lead.difference, lead.method, lead.seeds) == (row.p, row.difference, row.method, row.seeds)


def test_spreads_beyond_calibration_are_said_in_the_cell_and_with_zoo_compare_s_line(tmp_path):
    """Two seeds a side, the GRU's spread 10x the Transformer's: no test holds its rate there, so a lead and an
    overtaking called sure say so too."""
    seeds_of_two_families(tmp_path, spreads=(5.0, 0.5), seeds=2, gap=50.0)
    runs = find_runs([tmp_path])
    found = frontier(runs, "quality")
    table = found.table()
    assert cells(table, "1e+12 FLOPs")[-1].endswith(", spreads differ 10×: add seeds")
    assert cells(table, "4e+12 FLOPs")[-1] == f"{found.lead(HIGH).p:.3f} *, spreads differ 10×: add seeds"
    (change,) = found.changes()
    assert change.startswith("from 1e+12 FLOPs to 4e+12 FLOPs model=transformer overtakes model=gru (+50.0, p = 0.0")
    assert change.endswith(", spreads differ 10×: add seeds)")
    (line,) = [line for line in table.splitlines() if line.startswith("spreads differ:")]
    board = Leaderboard([run for run in runs if run.summary["budget"]["flops"] == 4e12], by=["model"])
    board.test_against(board.find("model=gru")[0])
    assert line in board.footnote().splitlines()


@pytest.mark.parametrize("seeds, method", [(2, TWO_A_SIDE), (3, WELCH)])
def test_the_table_names_the_test_its_seed_counts_chose(tmp_path, seeds, method):
    seeds_of_two_families(tmp_path, seeds=seeds)
    table = frontier(find_runs([tmp_path]), "quality").table()
    assert f"two-sided, each seed once: {method} (docs/guide/comparing.md)" in table
    assert "needs ≥ 2 seeds" not in table and "spreads differ" not in table
    assert not [line for line in table.splitlines() if line.startswith("model=")]  # each run a seed: no note
