"""Hyperparameter importance of a search, from its trials' folders alone: the setting the scores depend on comes
first, in zoo compare's search summary and in the report's search section; without Optuna, one line says so."""

import importlib.util
import json
import math
import random

import pytest
import yaml

from zoo.report.compare import compare, leaderboards
from zoo.report.html import sections
from zoo.report.importance import FANOVA, NO_OPTUNA, PED_ANOVA, TOO_FEW, importances
from zoo.report.runs import find_runs
from zoo.search.report import search_families

SPACE = {"optim": {"lr": "tag(log, interval(1e-4, 1e-2))"}, "encoder": {"hidden_size": "choice(64, 128)"}}


def trial(folder, number: int, lr: float, hidden_size: int, bleu: float, status: str = "finished") -> None:
    """A search trial's folder as the sweeper leaves it: its overrides (its place in the search) and best
    validation score in summary.json, its values and the search space in config.yaml."""
    folder.mkdir(parents=True)
    place = ["+search.study='search'", f"+search.trial={number}", "+search.role=trial", "+search.direction=maximize"]
    record = {"schema_version": 1, "status": status, "task": "translation", "monitor": "bleu", "seed": 1}
    record |= {"config_key": f"trial-{number}", "overrides": [f"optim.lr={lr}", *place], "best_val": bleu}
    (folder / "summary.json").write_text(json.dumps(record))
    config = {"optim": {"lr": lr}, "encoder": {"name": "gru", "hidden_size": hidden_size}, "search": {"space": SPACE}}
    (folder / "config.yaml").write_text(yaml.safe_dump(config))


@pytest.fixture
def search(tmp_path):
    """16 trials whose score is a bump in log10(lr), peaking at 1e-3, whatever the hidden size."""
    draw = random.Random(0)
    for number in range(16):
        lr, hidden_size = 10 ** draw.uniform(-4, -2), draw.choice([64, 128])
        trial(tmp_path / "sweep" / str(number), number, lr, hidden_size, 40.0 - 30.0 * (math.log10(lr) + 3) ** 2)
    return tmp_path / "sweep"


def test_the_setting_the_scores_depend_on_matters_most(search):
    (found,) = importances(search_families(find_runs([search])))
    assert found.trials == 16 and list(found.shares) == ["optim.lr", "encoder.hidden_size"]
    assert found.shares["optim.lr"] > 0.7 and sum(found.shares.values()) == pytest.approx(1.0)
    assert found.method == (FANOVA if importlib.util.find_spec("sklearn") else PED_ANOVA)


def test_zoo_compare_and_the_report_show_it(search, tmp_path):
    text = compare([search])
    line = next(line for line in text.splitlines() if line.startswith("search (16 trials): "))
    assert line.startswith("search (16 trials): optim.lr 0.")
    assert "hyperparameter importance" in text and ("Hutter et al., 2014" in text or "Watanabe et al., 2023" in text)
    runs = find_runs([search])
    top, _ = sections(leaderboards(runs), tmp_path / "report.html", search_families(runs))
    assert "<h3>Hyperparameter importance</h3>" in top and '"y":["encoder.hidden_size","optim.lr"]' in top


def test_a_family_of_one_finished_trial_has_none(tmp_path):
    trial(tmp_path / "sweep" / "0", 0, 1e-3, 64, 30.0)
    trial(tmp_path / "sweep" / "1", 1, 2e-3, 128, 0.0, status="failed")
    families = search_families(find_runs([tmp_path / "sweep"]))
    assert importances(families) == [] and TOO_FEW in compare([tmp_path / "sweep"])


def test_without_optuna_one_line_says_what_to_install(search, tmp_path, monkeypatch):
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "optuna" else find_spec(name, *a))
    runs = find_runs([search])
    assert importances(search_families(runs)) is None
    assert [line for line in compare([search]).splitlines() if "importance" in line] == [NO_OPTUNA]
    top, _ = sections(leaderboards(runs), tmp_path / "report.html", search_families(runs))
    assert f'<p class="note">{NO_OPTUNA}</p>'.replace("'", "&#x27;") in top


def test_trials_that_all_tied_leave_the_shares_undefined(tmp_path):
    """Nine tuned settings and every trial at 0.00: no setting gets 1/9 of a variation there is not."""
    space = {"optim": {f"s{k}": "interval(0.0, 1.0)" for k in range(9)}}
    draw = random.Random(0)
    for number in range(4):
        folder = tmp_path / "sweep" / str(number)
        trial(folder, number, 1e-3, 64, 0.0)
        values = {f"s{k}": draw.random() for k in range(9)}
        (folder / "config.yaml").write_text(yaml.safe_dump({"optim": values, "search": {"space": space}}))
    (found,) = importances(search_families(find_runs([tmp_path / "sweep"])))
    assert found.shares == {} and found.tied == 0.0
    assert "search (4 trials): undefined, every trial scored 0.00" in compare([tmp_path / "sweep"]).splitlines()
