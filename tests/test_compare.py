"""``zoo compare``: configurations over seeds, in each metric's own direction, robust to odd folders."""
import csv
import io
import json

import numpy as np
import pytest

from zoo.registry import discovery
from zoo.report.compare import CompareError, Leaderboard, comparable_sets, compare
from zoo.report.runs import RunsNotFound, find_runs
from zoo.report.stats import bootstrap_mean_difference

discovery.discover()


def summary(encoder: str, scores: dict, seed: int = 1, monitor: str = "bleu", status: str = "finished") -> dict:
    return {
        "schema_version": 1,
        "status": status,
        "task": "translation",
        "monitor": monitor,
        "seed": seed,
        "config_key": f"key-{encoder}",
        "overrides": [f"encoder={encoder}", f"seed={seed}"],
        "test": {m: {"score": v, "higher_is_better": m != "ter", "signature": None} for m, v in scores.items()},
        "breakdowns": {"bleu_by_length": {"1-10": {"bleu": 50.0, "count": 3}, "11-20": {"bleu": 40.0, "count": 2}}},
        "parameters": {"trainable": 1000, "frozen": 0},
        "tokens_per_second": 100.0,
        "train_seconds": 12.0,
        "components": {"encoder": {"name": encoder, "hidden_size": 64}, "decoder": {"name": "rnn"}},
    }


def write(folder, content) -> None:
    folder.mkdir(parents=True)
    (folder / "summary.json").write_text(content if isinstance(content, str) else json.dumps(content))


def test_seeds_of_a_configuration_become_one_row_with_mean_std_and_n(tmp_path):
    write(tmp_path / "a1", summary("gru", {"bleu": 30.0}, seed=1))
    write(tmp_path / "a2", summary("gru", {"bleu": 34.0}, seed=2))
    write(tmp_path / "b1", summary("lstm", {"bleu": 20.0}, seed=1))
    board = Leaderboard(find_runs([tmp_path]))
    assert [g.label for g in board.groups] == ["encoder=gru", "encoder=lstm"]
    gru = board.groups[0].metrics["bleu"]
    assert (gru.mean, round(gru.std, 3), gru.n) == (32.0, 2.828, 2)
    assert board.rows()[0][:3] == ["encoder=gru", "2", "32.0 ± 2.8"]


def test_rows_follow_the_sorted_metric_in_its_direction(tmp_path):
    write(tmp_path / "a", summary("gru", {"bleu": 30.0, "ter": 40.0}, monitor="ter"))
    write(tmp_path / "b", summary("lstm", {"bleu": 20.0, "ter": 35.0}, monitor="ter"))
    assert [g.label for g in Leaderboard(find_runs([tmp_path])).groups] == ["encoder=lstm", "encoder=gru"]  # lower TER
    assert [g.label for g in Leaderboard(find_runs([tmp_path]), sort="bleu").groups] == ["encoder=gru", "encoder=lstm"]


def test_group_by_any_setting(tmp_path):
    write(tmp_path / "a", summary("gru", {"bleu": 30.0}))
    write(tmp_path / "b", summary("lstm", {"bleu": 20.0}))
    (group,) = Leaderboard(find_runs([tmp_path]), by=["encoder.hidden_size"]).groups
    assert group.label == "encoder.hidden_size=64" and group.metrics["bleu"].mean == 25.0


def test_running_failed_old_and_damaged_runs_never_crash_it(tmp_path):
    write(tmp_path / "done", summary("gru", {"bleu": 30.0}))
    write(tmp_path / "going", {**summary("lstm", {}), "status": "running"})
    write(tmp_path / "broke", {**summary("esn", {}), "status": "failed", "reason": "CorpusError: missing"})
    write(tmp_path / "half", '{"task": "transl')
    write(tmp_path / "old", {"test": {"bleu": 12.0}})
    runs = find_runs([tmp_path])
    board = Leaderboard([run for run in runs if run.path.name not in ("half", "old")])
    rows = {row[0]: row for row in board.rows()}
    assert board.groups[0].label == "encoder=gru" and rows["encoder=gru"][-1] == "1 finished"
    assert rows["encoder=lstm"][-1] == "1 running" and rows["encoder=esn"][-1] == "1 failed"
    assert sorted(run.status for run in runs if run.path.name in ("half", "old")) == ["old", "unreadable"]
    report = compare([tmp_path], fmt="markdown")
    assert "left out 2 run(s)" in report and "half" in report and "old" in report


def test_machine_readable_formats(tmp_path):
    write(tmp_path / "a", summary("gru", {"bleu": 30.0}))
    rows = list(csv.DictReader(io.StringIO(compare([tmp_path], fmt="csv"))))
    assert rows[0]["configuration"] == "gru" and float(rows[0]["bleu mean"]) == 30.0  # alone: named by its encoder
    (data,) = json.loads(compare([tmp_path], fmt="json"))
    assert data["rows"][0]["metrics"]["bleu"] == {"mean": 30.0, "std": 0.0, "n": 1}
    assert "│ gru " in compare([tmp_path])  # the terminal table


def test_no_runs_or_a_missing_folder_is_an_error(tmp_path):
    with pytest.raises(RunsNotFound, match="no runs under"):
        compare([tmp_path])
    with pytest.raises(RunsNotFound, match="no such file or folder: .*nowhere"):
        compare([tmp_path / "nowhere"])


def test_sorting_by_a_metric_no_run_has_is_an_error(tmp_path):
    write(tmp_path / "a", summary("gru", {"bleu": 30.0}))
    with pytest.raises(CompareError, match="--sort ter: no run has that test metric; they have bleu"):
        compare([tmp_path], sort="ter")


SENTENCES = [f"the {a} {n} sees {k} small {m} near the old tower" for a in ("big", "red", "old", "shy", "wet")
             for n in ("dog", "cat", "fox", "owl") for k in ("a", "the") for m in ("bird", "frog")]


def write_items(folder, hypotheses) -> None:
    rows = [{"id": str(k), "hypothesis": h, "references": [r], "scores": {"ter": float(h != r)}}
            for k, (h, r) in enumerate(zip(hypotheses, SENTENCES))]
    (folder / "test_items.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))


def test_a_baseline_gets_paired_bootstrap_p_values_pooled_over_seeds(tmp_path):
    garbled = [" ".join(s.split()[:-2]) for s in SENTENCES]  # the last two words missing
    garbled_alike = [SENTENCES[0], " ".join(SENTENCES[1].split()[:5]), *garbled[2:]]  # one item better, one worse
    for name, hypotheses, seeds in (("gru", garbled, (1, 2)), ("lstm", SENTENCES, (1, 2)), ("rnn", garbled_alike, (1,))):
        for seed in seeds:
            folder = tmp_path / f"{name}{seed}"
            write(folder, summary(name, {"bleu": 100.0 if name == "lstm" else 20.0}, seed=seed))
            write_items(folder, hypotheses)
    board = Leaderboard(find_runs([tmp_path]))
    (baseline,) = board.find("encoder=gru")
    board.test_against(baseline)
    assert board.p_values["encoder=lstm"] < 0.01 and board.p_values["encoder=rnn"] > 0.05, board.p_values
    rows = {row[0]: row for row in board.rows()}
    assert rows["encoder=gru"][3] == "baseline" and rows["encoder=lstm"][3].endswith(" *")
    assert "paired bootstrap" in compare([tmp_path], fmt="markdown", baseline="encoder=gru")
    with pytest.raises(CompareError, match="names no single configuration"):
        compare([tmp_path], baseline="transformer")


def test_per_item_bootstrap_separates_real_differences_from_noise():
    rng = np.random.default_rng(0)
    base = rng.normal(0.5, 0.1, 400)
    assert bootstrap_mean_difference(base, base + 0.05) < 0.01
    assert bootstrap_mean_difference(base, base + rng.normal(0, 0.1, 400)) > 0.05


def test_runs_on_another_test_set_or_metric_tokenisation_are_separated(tmp_path):
    write(tmp_path / "a", summary("gru", {"bleu": 30.0}))
    other_data = summary("lstm", {"bleu": 20.0})
    other_data["components"]["dataset"] = {"name": "synthetic", "max_words": 50}
    write(tmp_path / "b", other_data)
    intl = summary("rnn", {"bleu": 25.0})
    intl["test"]["bleu"]["signature"] = "nrefs:1|tok:intl|version:2.6.0"
    write(tmp_path / "c", intl)
    write(tmp_path / "d", {**summary("esn", {}), "status": "running"})
    sets = comparable_sets(find_runs([tmp_path]))
    assert [sorted(r.path.name for r in runs) for _, runs in sets] == [["a", "d"], ["b"], ["c"]]
    assert "another test set" in sets[1][0] and "metrics computed differently" in sets[2][0]
    assert compare([tmp_path], fmt="markdown").count("| configuration |") == 3
