"""A sweep says what it launches before it starts: its runs counted as Hydra's sweeper makes them, their time from
this machine's last runs of the same recipes; the short variant ./run train offers passes zoo train's checks."""

import json

import pytest
from omegaconf import OmegaConf

import zoo.config.schema  # noqa: F401  (stores the schema)
from zoo.cli.next_steps import FULL, SHORT
from zoo.cli.sweep_cost import sweep_cost, sweep_jobs
from zoo.cli.train_asked import check_asked, check_composed_as_asked, check_preset_sweep
from zoo.cli.train_checks import check_modes, is_multirun
from zoo.config.compose import compose_config
from zoo.registry.discovery import discover

discover()


def past_run(folder, overrides: list[str], seconds: float) -> None:
    """A finished run folder as a job leaves it: its resolved config and the training seconds it took."""
    folder.mkdir(parents=True)
    (folder / "config.yaml").write_text(OmegaConf.to_yaml(compose_config(overrides), resolve=True))
    summary = {"status": "finished", "train_seconds": seconds, "compute": {"flops": 6e12}}
    (folder / "summary.json").write_text(json.dumps(summary))


def test_compare_families_counts_every_recipe_at_every_seed(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no run here yet: the count alone
    cost = sweep_cost(FULL)
    assert (cost.runs, cost.configurations, cost.seconds) == (45, 15, None)
    assert cost.says().startswith("45 runs of 15 configurations; no finished run on this machine")


def test_the_time_comes_from_the_last_run_here_of_each_recipe_scaled_to_its_epochs(tmp_path, monkeypatch):
    """A 6-epoch GRU took 600 s here: 3 epochs take 300; the LSTM, never run here, is taken at the same median."""
    monkeypatch.chdir(tmp_path)
    past_run(tmp_path / "outputs" / "2026-11-29" / "10-00-00", ["model=gru", "seed=7"], 600.0)
    cost = sweep_cost(["-m", "model=gru,lstm", "seed=1,2", "trainer.max_epochs=3"])
    assert (cost.runs, cost.configurations, cost.found, cost.seconds) == (4, 2, 1, pytest.approx(1200.0))
    assert "about 20 min of training one after another" in cost.says()
    assert "1 recipe(s) never run here taken at the median of the others" in cost.says()


@pytest.mark.slow  # composes each of its 15 configurations
def test_the_short_variant_passes_zoo_trains_checks_of_its_command_line():
    """What could refuse it as written: a flag, a sweep setting, the preset's sweep, a budget deciding epochs."""
    check_modes(SHORT)
    check_asked(SHORT, is_multirun(SHORT))
    hydra_cfg = compose_config([o for o in SHORT if not o.startswith("-")], hydra=True)
    check_preset_sweep(hydra_cfg, SHORT, is_multirun(SHORT))
    jobs = sweep_jobs(SHORT, hydra_cfg)
    assert len(jobs) == 15 and all("seed=1" in job and "trainer.max_epochs=3" in job for job in jobs)
    for job in jobs:
        check_composed_as_asked(compose_config(job), job)


def test_a_continued_sweep_counts_its_finished_jobs_apart_and_estimates_the_rest_from_them(tmp_path, monkeypatch):
    """Jobs 0 and 2 of four finished in the sweep's folder (120 s and 180 s): resume_mode=auto skips them, and the
    other two are taken at their median, 150 s each. Without resume_mode the folder is not read."""
    monkeypatch.chdir(tmp_path)
    sweep = tmp_path / "map"
    past_run(sweep / "0", ["model=gru", "optim.lr=0.001"], 120.0)
    past_run(sweep / "2", ["model=lstm", "optim.lr=0.001"], 180.0)
    (sweep / "1").mkdir()  # started, not finished
    asked = ["-m", "model=gru,lstm", "optim.lr=0.001,0.003", f"hydra.sweep.dir={sweep}"]
    cost = sweep_cost([*asked, "resume_mode=auto"])
    assert (cost.runs, cost.finished, cost.seconds) == (4, 2, pytest.approx(300.0))
    assert "4 runs of 4 configurations, 2 of them finished in its folder" in cost.says()
    assert "about 5 min of training for the other 2" in cost.says()
    assert (sweep_cost(asked).finished, sweep_cost(asked).seconds) == (0, None)
