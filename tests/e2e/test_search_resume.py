"""A resumed search is the same search: each study stores what defines it, a resume that matches goes on, one that
differs is refused before anything runs; a range the config refuses and a storage that cannot be opened are one line
before the first trial. Real searches on tiny settings (conftest.finished_search: one trial of model=gru)."""

from __future__ import annotations

import shutil
from pathlib import Path

import optuna
import pytest
from helpers import ROOT, SEARCH_TINY, fork_zoo, run_zoo
from helpers.battery import snapshot
from omegaconf import OmegaConf

from zoo.search.space import distribution, flat_space, range_text
from zoo.search.storage import open_storage
from zoo.search.sweeper import DEFINITION

# The session's finished_search is made once, on the worker of every test that copies it.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("finished_search")]


def studies(sweep: Path) -> dict[str, optuna.study.StudySummary]:
    storage = open_storage(None, sweep)
    return {s.study_name: s for s in optuna.study.get_all_study_summaries(storage, include_best_trial=False)}


def resume(sweep: Path, *changed: str, family: str = "model=gru", check: bool = False):
    args = [family, *SEARCH_TINY, *changed, f"hydra.sweep.dir={sweep}", "resume_mode=auto"]
    return fork_zoo("train", "-m", *args, cwd=sweep.parent, check=check)


def test_each_study_stores_what_defines_it(finished_search):
    (study,) = studies(finished_search).values()
    defined = study.user_attrs[DEFINITION]
    assert (defined["family"], defined["monitor"], defined["direction"]) == ("search", "bleu", "maximize")
    assert (defined["budget"], defined["sampler"]) == (["trials"], "random")
    computing = [o for o in SEARCH_TINY[1:] if not o.startswith("trainer.enable_progress_bar")]
    assert defined["overrides"] == ["model=gru", *computing], "Hydra's settings and the recording ones left out"
    assert defined["space"]["optim.lr"] == "tag(log, interval(0.0005, 0.01))", "the ranges in one spelling"
    assert "encoder.hidden_size" not in defined["space"], "a key the command fixes is not tuned"


def test_a_resume_of_the_same_search_goes_on_to_its_new_budget(finished_search, tmp_path):
    """The same search with a larger budget, a range spelled otherwise and a setting that changes no trial."""
    sweep = shutil.copytree(finished_search, tmp_path / "sweep")
    resume(
        sweep,
        "hydra.sweeper.trials=2",
        "hydra.sweeper.reseed=[]",
        'search.space.optim.lr="tag(log, interval(5e-4, 1e-2))"',
        "trainer.log_every_n_steps=5",
        check=True,
    )
    (study,) = studies(sweep).values()
    assert study.n_trials == 2
    assert study.user_attrs[DEFINITION] == studies(finished_search)["search"].user_attrs[DEFINITION]


@pytest.mark.parametrize(
    ("changed", "family", "says"),
    [
        (["monitor=chrf"], "model=gru", "holds a search of bleu (maximize); this command searches chrf (maximize)"),
        ([], "model=lstm", "holds a search made with model=gru; this command has model=lstm"),
    ],
)
def test_a_resume_that_changes_the_search_is_refused_before_anything_runs(
    finished_search, tmp_path, changed, family, says
):
    """The tester's two: a BLEU search resumed with monitor=chrf, and the GRU's search resumed with model=lstm."""
    sweep = shutil.copytree(finished_search, tmp_path / "sweep")
    before = snapshot(sweep)
    proc = resume(sweep, *changed, family=family)
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1 and says in proc.stderr, proc.stderr
    assert f"hydra.sweep.dir={sweep}" in proc.stderr and "or choose a new hydra.sweep.dir" in proc.stderr
    assert snapshot(sweep) == before, "the search changed"


def test_a_range_the_config_refuses_stops_before_the_first_trial(tmp_path):
    sweep = tmp_path / "sweep"
    wide = 'search.space.decoder.dropout="interval(0.0, 1.5)"'
    proc = fork_zoo(
        "train", "-m", "model=gru", *SEARCH_TINY, wide, f"hydra.sweep.dir={sweep}", cwd=tmp_path, check=False
    )
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1, proc.stderr
    assert "search.space.decoder.dropout=interval(0.0, 1.5) of study 'search'" in proc.stderr
    assert "refuses (decoder.dropout=1.5 must be in [0, 1)): give a range within" in proc.stderr and not sweep.exists()


@pytest.mark.parametrize("storage", ["nosuch://x", "nosuch/optuna.journal"])
def test_a_storage_that_cannot_be_opened_is_one_line_naming_it(tmp_path, storage):
    """A database URL SQLAlchemy cannot open, and a journal file in a folder that does not exist."""
    sweep = tmp_path / "sweep"
    setting = f"hydra.sweeper.storage={storage}"
    proc = fork_zoo(
        "train", "-m", "model=gru", *SEARCH_TINY, setting, f"hydra.sweep.dir={sweep}", cwd=tmp_path, check=False
    )
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith(f"zoo: error: {setting} cannot be opened (")
    assert "a journal file in a folder that exists" in proc.stderr and not sweep.exists()
    assert list(tmp_path.iterdir()) == [], "a refused search made a file"


def test_a_search_checked_in_a_fresh_process_imports_the_plugins_its_studies_need(tmp_path):
    """A fresh interpreter reads the registry's index from the cache and imports no plugin until a check needs one:
    the search's studies need the metrics (with the index cached, the check once found no task registered)."""
    env = {"ZOO_CACHE_DIR": str(tmp_path / "cache")}
    run_zoo("list", cwd=tmp_path, env=env)  # writes the index
    setting = "hydra.sweeper.storage=nosuch://x"  # refused after the studies are read
    sweep = f"hydra.sweep.dir={tmp_path / 'sweep'}"
    proc = run_zoo("train", "-m", "model=gru", *SEARCH_TINY, setting, sweep, cwd=tmp_path, env=env, check=False)
    assert proc.stderr.startswith(f"zoo: error: {setting} cannot be opened ("), proc.stderr


def test_a_stored_range_reads_back_as_the_same_range():
    """The spelling a study stores its space in (range_text) is the grammar's, and reads back as the same range:
    every range of the shipped presets, integer steps, float steps and text choices."""
    ranges = {"steps": "range(1, 8, 3)", "halves": "range(0.5, 1.0, 0.25)", "cells": "choice(gru, 'a b', true)"}
    for path in (ROOT / "conf" / "search").glob("*.yaml"):
        ranges.update(flat_space(OmegaConf.load(path).space, f"{path.stem}."))
    for key, text in ranges.items():
        values = distribution(key, text)
        assert distribution(key, range_text(values)) == values, (text, range_text(values))
