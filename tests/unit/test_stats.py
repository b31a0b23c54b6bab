"""Significance against a baseline: seed and item variance in the p-value, one-seed rows said to cover items only,
seeds needed for power, Holm over rows, the same p in every process."""

import json
import os

import numpy as np
import pytest
from helpers import fork_zoo
from helpers.run_files import SENTENCES, summary, write, write_items

from zoo.report.compare import Leaderboard, compare
from zoo.report.runs import find_runs
from zoo.report.stats import ITEMS_ONLY, TWO_LEVEL, compare_to_baseline, holm, p_text, scorer_for

ITEMS = 200


def sweep(root, means: dict[str, tuple[float, ...]]) -> Leaderboard:
    """Runs whose per-item ``quality`` averages exactly ``means[encoder][k]`` for seed k + 1 (items share a
    difficulty, as real test items do, plus each run's own noise); the first encoder is the baseline."""
    rng = np.random.default_rng(0)
    difficulty = rng.normal(0, 10, ITEMS)
    for encoder, scores in means.items():
        for seed, mean in enumerate(scores, start=1):
            noise = difficulty + rng.normal(0, 3, ITEMS)
            items = mean + noise - noise.mean()
            folder = root / f"{encoder}{seed}"
            write(folder, summary(encoder, {"quality": mean}, seed=seed, monitor="quality"))
            rows = [
                {"id": f"test-{k}", "hypothesis": "", "references": [""], "scores": {"quality": float(score)}}
                for k, score in enumerate(items)
            ]
            (folder / "test_items.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    board = Leaderboard(find_runs([root]))
    board.test_against(board.find(f"encoder={next(iter(means))}")[0])
    return board


def test_one_lucky_seed_is_not_significant(tmp_path):
    board = sweep(tmp_path, {"dot": (7.5, 7.8, 7.2), "additive": (7.2, 20.5, 6.3)})  # the chrF over seeds
    lucky = board.comparisons["encoder=additive"]
    assert lucky.method == TWO_LEVEL and lucky.seeds == (3, 3) and lucky.difference == pytest.approx(3.833, abs=1e-3)
    assert lucky.p >= 0.05 and lucky.ci_low < 0 < lucky.ci_high, lucky
    dot, additive = board.find("encoder=dot")[0], board.find("encoder=additive")[0]
    pooled = compare_to_baseline(scorer_for("quality", []), [dot.finished], [additive.finished])
    assert pooled.method == ITEMS_ONLY and pooled.p < 0.01  # what testing items alone concludes


def test_a_consistent_difference_over_seeds_stays_significant(tmp_path):
    board = sweep(tmp_path, {"dot": (30.0, 31.0, 29.0), "additive": (36.0, 37.5, 35.0)})
    better = board.comparisons["encoder=additive"]
    assert better.method == TWO_LEVEL and better.p < 0.05 and 0 < better.ci_low < 6.17 < better.ci_high, better


def test_holm_adjusts_the_rows_tested_against_one_baseline(tmp_path):
    assert holm([0.01, 0.04, 0.03, 0.5]) == pytest.approx([0.04, 0.09, 0.09, 0.5])
    board = sweep(
        tmp_path,
        {
            "dot": (30.0, 31.0, 29.0),
            "additive": (36.0, 37.5, 35.0),
            "cosine": (29.0, 35.0, 28.0),
            "none": (25.0, 24.0, 26.5),
        },
    )
    tested = list(board.comparisons.values())
    assert [c.p for c in tested] == holm([c.p_unadjusted for c in tested]) and len(tested) == 3
    assert all(c.p >= c.p_unadjusted for c in tested) and board.comparisons["encoder=additive"].p < 0.05
    assert "Holm-adjusted over 3 rows (Holm, 1979)" in board.footnote()


def test_three_seeds_a_side_are_not_overstated(tmp_path):
    """The issue's run folders: resampling three seeds had printed p = 0.028 *; Welch's test on the seeds gives
    0.067 and the items add a little variance."""
    board = sweep(tmp_path, {"lstm": (56.0, 57.9, 60.3), "gru": (60.3, 62.3, 64.2)})
    row = board.comparisons["encoder=gru"]
    assert row.difference == pytest.approx(4.2, abs=0.01) and 0.05 < row.p < 0.12 and row.ci_low < 0, row
    assert 3 < row.seeds_for_power < 20
    table = board.table(width=200)
    assert f"{row.p:.3f} " in table and f"{row.p:.3f} *" not in table and "seeds for 80%" in table


def test_a_one_seed_row_says_its_p_covers_the_test_items_only(tmp_path):
    board = sweep(tmp_path, {"dot": (30.0, 31.0, 29.0), "additive": (34.0,)})
    one = board.comparisons["encoder=additive"]
    assert one.method == ITEMS_ONLY and one.seeds == (3, 1) and one.p < 0.05 and one.seeds_for_power is None
    table = board.table(width=200)
    assert f"{p_text(one.p)} †" in table and "*" not in table.split("†")[0].splitlines()[-1]
    assert "† one seed on a side: p covers test-set sampling only" in table


@pytest.mark.slow
def test_p_values_are_the_same_in_every_process(tmp_path):
    """Another process (another PYTHONHASHSEED: set and string iteration orders differ) gets this one's p-values."""
    for name, cut in (("gru", 2), ("lstm", 1)):
        for seed in (1, 2, 3):
            hypotheses = [" ".join(s.split()[:-cut]) if (k + seed) % 4 else s for k, s in enumerate(SENTENCES)]
            write(tmp_path / f"{name}{seed}", summary(name, {"bleu": 50.0}, seed=seed))
            write_items(tmp_path / f"{name}{seed}", hypotheses)
    other_seed = "2" if os.environ.get("PYTHONHASHSEED") == "1" else "1"  # unset or "random": this one's is random
    outputs = [
        fork_zoo(
            "compare",
            str(tmp_path),
            "--format",
            "json",
            "--baseline",
            "gru",
            cwd=tmp_path,
            env={"PYTHONHASHSEED": other_seed},
        ).stdout,
        compare([tmp_path], fmt="json", baseline="gru"),
    ]
    tests = [
        {r["configuration"]: (r["p"], r["ci_low"], r["ci_high"]) for r in json.loads(out)[0]["rows"]} for out in outputs
    ]
    assert tests[0] == tests[1] and tests[0]["encoder=lstm"][0] is not None
