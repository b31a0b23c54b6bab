"""Equal-budget search (zoo.search): a 2-family x 3-trial search in real subprocesses, stopped by Ctrl-C after
its first trial and resumed; failed trials; every shipped search preset; the expected-best-of-n math."""

from __future__ import annotations

import json
import math
import re
import signal
import statistics
import time
from pathlib import Path

import optuna
import pytest
from helpers import ROOT, TINY, ForkedZoo, fork_zoo
from omegaconf import OmegaConf

from zoo.report.compare import compare, write_report
from zoo.report.runs import find_runs
from zoo.search.expected_max import expected_best
from zoo.search.report import expected_best_figure, format_search, search_families, search_record
from zoo.search.space import flat_space, read_space
from zoo.search.storage import open_storage
from zoo.search.sweeper import Search

pytestmark = pytest.mark.slow

# Two families (one study per encoder) of 3 trials, each over the GRU preset's space less the widths TINY fixes,
# and the best trial of each run again with one seed. Few items to score: each trial's second (the one
# stopped) trains on TINY's 200 pairs, long enough to be stopped while it trains.
SEARCH = [
    "-m",
    "hydra/sweeper=optuna",
    "encoder=gru,lstm",
    "search=gru",
    *TINY,
    "dataset.val_size=8",
    "dataset.test_size=4",
    "hydra.sweeper.trials=3",
    "hydra.sweeper.reseed=[1]",
]
FAMILIES = ("encoder=gru", "encoder=lstm")


def trial_states(sweep: Path) -> dict[str, list[str]]:
    storage = open_storage(None, sweep)
    return {
        name: [t.state.name for t in optuna.load_study(study_name=name, storage=storage).trials]
        for name in optuna.get_all_study_names(storage)
    }


@pytest.fixture(scope="module")
def resumed(tmp_path_factory) -> dict:
    """The search, stopped with SIGINT once its second trial has started, then resumed with resume_mode=auto."""
    work = tmp_path_factory.mktemp("search")
    sweep = work / "sweep"
    first = ForkedZoo("train", *SEARCH, f"hydra.sweep.dir={sweep}", cwd=work)
    deadline = time.monotonic() + 120
    while not (sweep / "1" / "summary.json").exists() and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    first.send_signal(signal.SIGINT)
    stopped = first.wait(timeout=120, check=False)
    before = {"states": trial_states(sweep), "mtime": (sweep / "0" / "summary.json").stat().st_mtime_ns}
    proc = fork_zoo("train", *SEARCH, f"hydra.sweep.dir={sweep}", "resume_mode=auto", cwd=work)
    return {"sweep": sweep, "stopped": (stopped.returncode, stopped.stderr), "before": before, "proc": proc}


def test_a_stopped_search_resumes_to_its_budget(resumed):
    returncode, stderr = resumed["stopped"]
    assert returncode == 130 and "resume_mode=auto" in stderr, stderr[-2000:]
    before = resumed["before"]
    assert before["states"] == {"encoder=gru": ["COMPLETE", "RUNNING"], "encoder=lstm": []}, "stopped in trial 2"
    sweep = resumed["sweep"]
    assert (sweep / "0" / "summary.json").stat().st_mtime_ns == before["mtime"], "a finished trial ran again"
    assert trial_states(sweep) == {family: ["COMPLETE"] * 3 for family in FAMILIES}
    families = search_families(find_runs([sweep]))
    assert [family.label for family in families] == list(FAMILIES)
    assert all(len(family.scores) == 3 and family.failed == 0 for family in families)


def test_trials_never_see_the_test_split(resumed):
    runs = [run for run in find_runs([resumed["sweep"]]) if run.status == "finished"]
    trials = [run for run in runs if search_record(run).role == "trial"]
    assert len(trials) == 6
    for run in trials:
        assert run.summary["tested"] is False and run.summary["test"] == {} and "test=false" in run.summary["overrides"]
        assert run.summary["best_val"] is not None and not (run.path / "test_items.jsonl").exists()


def test_the_best_trial_runs_again_with_the_test_split(resumed):
    runs = find_runs([resumed["sweep"]])
    for family in search_families(runs):
        (reseed,) = family.reseeds
        best = family.trials[family.best_trial]
        assert search_record(reseed).trial == family.best_trial and reseed.summary["seed"] == 1
        assert reseed.summary["tested"] and "bleu" in reseed.summary["test"]
        assert (reseed.path / "test_items.jsonl").is_file()
        assert reseed.summary["config_key"] == best.summary["config_key"], "a trial and its re-runs: one configuration"
        assert family.test.n == 1 and family.test.mean == reseed.score("bleu")
        assert set(family.best_params) == set(flat_space(OmegaConf.load(best.path / "config.yaml").search.space))
    text = resumed["proc"].stdout
    assert "expected best validation score" in text and all(family in text for family in FAMILIES)
    assert "test bleu over 1 seed(s)" in format_search(search_families(runs), markdown=True)
    figure = expected_best_figure(search_families(runs))
    assert figure.layout.xaxis.title.text == "trials (n)" and figure.layout.xaxis2.type == "log"
    assert len(figure.data) == 8  # per family: a band and a line against trials, and again against compute
    assert all(family.flops > 0 for family in search_families(runs)) and "trial TFLOPs" in text


def test_compare_over_a_search_shows_the_curves_and_ranks_only_tested_runs(resumed, tmp_path):
    report = tmp_path / "report.html"
    proc = fork_zoo("compare", str(resumed["sweep"]), "--format", "markdown", "--html", str(report), cwd=tmp_path)
    assert proc.stdout.startswith("expected best validation score after n trials")
    rows = [line for line in proc.stdout.splitlines() if line.startswith("| encoder=") and "finished" in line]
    assert len(rows) == 2 and all(row.split(" | ")[1] == "1" for row in rows), "a row holds the re-run, no trial"
    page = report.read_text()
    assert "Search: expected best validation score after n trials" in page and "trials (n)" in page


@pytest.fixture(scope="module")
def failed_search(tmp_path_factory) -> dict:
    """A search of two families, one of whose values every trial refuses (decoder.dropout=1.5)."""
    work = tmp_path_factory.mktemp("failed")
    sweep = work / "sweep"
    proc = fork_zoo(
        "train",
        "-m",
        "hydra/sweeper=optuna",
        "decoder.dropout=1.5,0.1",
        "search=gru",
        *TINY,
        "dataset.train_size=64",
        "dataset.val_size=4",
        "hydra.sweeper.trials=2",
        "hydra.sweeper.reseed=[]",
        f"hydra.sweep.dir={sweep}",
        cwd=work,
        check=False,
    )
    return {"sweep": sweep, "proc": proc}


def test_failed_trials_are_told_and_the_search_goes_on(failed_search):
    sweep, proc = failed_search["sweep"], failed_search["proc"]
    assert proc.returncode == 1 and "2 job(s) of the sweep failed" in proc.stderr
    assert trial_states(sweep) == {"decoder.dropout=1.5": ["FAIL", "FAIL"], "decoder.dropout=0.1": ["COMPLETE"] * 2}
    failed = json.loads((sweep / "0" / "summary.json").read_text())
    assert failed["status"] == "failed" and "dropout" in failed["reason"]
    (bad, good) = search_families(find_runs([sweep]))
    assert (bad.failed, len(bad.trials), good.failed, len(good.trials)) == (2, 0, 0, 2)
    assert "no trial finished" in format_search([bad, good])


def test_failed_trials_are_listed_in_the_summary_and_the_reports_runs(failed_search, tmp_path):
    sweep = failed_search["sweep"]
    reason = "ConfigError: decoder.dropout=1.5 must be in [0, 1)"
    listed = f"decoder.dropout=1.5: trials 0, 1 failed ({reason}): {sweep / '0'}, {sweep / '1'}"
    assert listed in failed_search["proc"].stdout
    runs = report_runs(write_report([sweep], tmp_path / "report.html"))
    assert {runs[str(sweep / str(job))]["status"] for job in (0, 1)} == {"failed"}, "the failed trials have rows"


def report_runs(page: Path) -> dict[str, dict]:
    """The runs a written report's Runs table and curves are drawn from, by run directory."""
    data = re.search(r'<script type="application/json" id="zoo-data">(.*?)</script>', page.read_text(), re.S)
    return {run["id"]: run for run in json.loads(data.group(1))["runs"]}


def test_a_searchs_re_runs_are_named_as_tuned_not_as_the_recipe(resumed, tmp_path):
    page = tmp_path / "report.html"
    table = compare([resumed["sweep"]], fmt="markdown")
    runs = report_runs(write_report([resumed["sweep"]], page))
    for family in search_families(find_runs([resumed["sweep"]])):
        tuned = f"{family.study} (tuned, trial {family.best_trial})"
        assert f"| {tuned} | 1 |" in table and f"<td>{tuned}</td>" in page.read_text()
        assert {runs[str(run.path)]["label"] for run in family.reseeds} == {tuned}


def test_the_reports_curves_keep_each_trial_apart_from_its_re_runs(resumed, tmp_path):
    runs = report_runs(write_report([resumed["sweep"]], tmp_path / "report.html"))
    for family in search_families(find_runs([resumed["sweep"]])):
        trials = {runs[str(run.path)]["group"] for run in family.trials.values()}
        (reseeds,) = {runs[str(run.path)]["group"] for run in family.reseeds}
        assert len(trials) == 3 and reseeds not in trials, "a trial's curve pooled with its re-runs'"


def test_a_range_given_on_the_command_line_holds_for_every_family(tmp_path):
    """Each recipe (model=gru,lstm) brings its own search= preset, which Hydra's own config (composed without the
    comma lists) lacks; the range given for optim.lr holds in both families' trials."""
    sweep = tmp_path / "sweep"
    fork_zoo(
        "train",
        "-m",
        "hydra/sweeper=optuna",
        "model=gru,lstm",
        'search.space.optim.lr="tag(log, interval(1e-5, 2e-5))"',
        *TINY,
        "trainer.max_epochs=1",
        "dataset.train_size=32",
        "dataset.val_size=4",
        "hydra.sweeper.trials=1",
        "hydra.sweeper.reseed=[]",
        f"hydra.sweep.dir={sweep}",
        cwd=tmp_path,
    )
    configs = [OmegaConf.load(sweep / str(job) / "config.yaml") for job in (0, 1)]
    assert [config.decoder.cell for config in configs] == ["gru", "lstm"], "each family's own recipe"
    assert all(1e-5 <= config.optim.lr <= 2e-5 for config in configs)


def test_a_search_without_a_space_stops_before_anything_runs(tmp_path):
    proc = fork_zoo(
        "train",
        "-m",
        "hydra/sweeper=optuna",
        "encoder=gru,lstm",
        f"hydra.sweep.dir={tmp_path / 's'}",
        cwd=tmp_path,
        check=False,
    )
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1
    assert "study 'encoder=gru' has no search space" in proc.stderr and not (tmp_path / "s").exists()


def test_without_optuna_the_sweeper_names_the_extra(monkeypatch):
    import importlib.util

    from zoo.cli import train_checks

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "optuna" else real(name, *a))
    with pytest.raises(train_checks.CompositionError, match=r"pip install 'zoo\[search\]'"):
        train_checks.check_sweeper(["-m", "hydra/sweeper=optuna", "search=gru"])


# What each preset's family is where its model= recipe (conf/model) does not exist.
FAMILY_OVERRIDES = {
    "gru": ["encoder=gru"],
    "lstm": ["encoder=lstm", "decoder.cell=lstm"],
    "rnn": ["encoder=rnn", "decoder.cell=rnn"],
    "transformer": ["encoder=transformer", "decoder=transformer", "attention=scaled_dot"],
    "transformer_encoder": ["encoder=transformer"],
    "esn": ["encoder=esn"],
    "elm": ["encoder=elm"],
}
PRESETS = sorted(path.stem for path in (ROOT / "conf" / "search").glob("*.yaml"))


@pytest.mark.parametrize("name", PRESETS)
def test_every_search_preset_names_valid_ranges_of_its_family(name):
    """The preset reads as ranges of settings its family has, and both ends of every range pass validation."""
    from zoo.config.compose import compose_config
    from zoo.registry.discovery import discover
    from zoo.search.space import as_overrides
    from zoo.training.preflight import validate

    discover()
    recipe = ROOT / "conf" / "model" / f"{name}.yaml"
    family = [*([f"model={name}"] if recipe.exists() else FAMILY_OVERRIDES[name]), f"search={name}"]
    space = read_space(compose_config(family), name)
    for end in ("low", "high"):
        values = {
            key: d.choices[0 if end == "low" else -1] if hasattr(d, "choices") else getattr(d, end)
            for key, d in space.items()
        }
        validate(compose_config([*family, *as_overrides(values)]))


def test_expected_best_against_a_hand_computed_case():
    """Scores 1, 2, 3: E[max of 2] = (1*1 + 2*3 + 3*5)/9, E[max of 3] = (1 + 2*7 + 3*19)/27, with variances."""
    curve = expected_best([3.0, 1.0, 2.0])
    expected = [(2.0, 2 / 3), (22 / 9, 38 / 81), (8 / 3, 8 / 27)]
    for point, (mean, variance) in zip(curve, expected, strict=True):
        assert point.mean == pytest.approx(mean) and point.variance == pytest.approx(variance)
    lowest = expected_best([3.0, 1.0, 2.0], higher_is_better=False)
    assert [p.mean for p in lowest] == pytest.approx([2.0, 14 / 9, 4 / 3])
    assert [p.variance for p in lowest] == pytest.approx([v for _, v in expected])


def test_expected_best_runs_from_the_mean_towards_the_best():
    """n = 1 is the mean; the curve never falls; with draws with replacement, n = N stays below the best score
    (one draw in N may miss it) and reaches it only as n grows, or when every score is the same."""
    scores = [52.0, 48.5, 61.2, 55.0, 49.9]
    curve = expected_best(scores, up_to=400)
    assert curve[0].mean == pytest.approx(sum(scores) / 5) and curve[0].std == pytest.approx(statistics.pstdev(scores))
    assert all(a.mean <= b.mean + 1e-9 for a, b in zip(curve, curve[1:]))
    assert curve[4].mean < max(scores) and curve[-1].mean == pytest.approx(max(scores)) and curve[-1].std < 1e-6
    assert [p.mean for p in expected_best([7.0] * 4)] == [7.0] * 4 and expected_best([]) == []


def test_the_budget_counts_trials_or_minutes():
    assert Search().budget_left(5, 1e9) == 15, "20 trials when no budget is given"
    assert Search(trials=3, minutes=1).budget_left(1, 59) == 2 and Search(trials=3, minutes=1).budget_left(1, 60) == 0
    assert Search(minutes=1).budget_left(100, 30) == math.inf


def test_a_compute_budget_stops_each_family_once_its_trials_spent_it(tmp_path):
    """A budget of one FLOP is spent by the first trial: each family runs one, and the study keeps the count."""
    search = [a for a in SEARCH if not a.startswith("hydra.sweeper.")]
    sweep = tmp_path / "sweep"
    fork_zoo(
        "train", *search, "hydra.sweeper.flops=1", "hydra.sweeper.reseed=[]", f"hydra.sweep.dir={sweep}", cwd=tmp_path
    )
    assert trial_states(sweep) == {name: ["COMPLETE"] for name in FAMILIES}
    storage = open_storage(None, sweep)
    assert all(optuna.load_study(study_name=n, storage=storage).user_attrs["flops"] > 1e6 for n in FAMILIES)
