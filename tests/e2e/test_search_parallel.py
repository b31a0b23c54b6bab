"""Searches that run several trials at once: through joblib and through submitit's local executor (``n_jobs``), a
trial's submitit job pre-empted and requeued, and two workers sharing one study in a journal file, one of them
killed in the middle of a trial. Each runs the searching guide's command (``<!-- docs-test: search -->``) on tiny
settings, and checks that the study holds exactly its budget and every trial has one run directory."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import optuna
import pytest
from helpers import SEARCH_TINY, ForkedZoo, fork_zoo, run_zoo
from helpers.readme import search_command

from zoo.report.runs import find_runs
from zoo.search.report import search_families, search_record
from zoo.search.storage import open_storage

pytestmark = pytest.mark.slow

#: The guide's command on tiny settings, with a budget of ``trials`` and no re-runs unless asked.
TINY = [o for o in SEARCH_TINY if o != "hydra/sweeper=optuna"]
#: Trials long enough to be stopped after their first validation: 5 epochs of 5 steps, validated twice an epoch.
LONG = ["dataset.train_size=200", "trainer.max_epochs=5", "trainer.val_check_interval=0.4", "trainer.patience=1000"]


def search(naming: str, *settings: str) -> list[str]:
    return [*search_command(naming), *TINY, *settings]


def trials(sweep: Path) -> list[optuna.trial.FrozenTrial]:
    """The trials of the sweep's one study, as its storage holds them."""
    (study,) = optuna.get_all_study_names(open_storage(None, sweep))
    return optuna.load_study(study_name=study, storage=open_storage(None, sweep)).trials


def trial_dirs(sweep: Path) -> dict[int, list[Path]]:
    """Every trial's run directories, by trial number."""
    dirs: dict[int, list[Path]] = {}
    for run in find_runs([sweep]):
        record = search_record(run)
        if record is not None and record.role == "trial":
            dirs.setdefault(record.trial, []).append(run.path)
    return dirs


def summary(run_dir: Path) -> dict:
    return json.loads((run_dir / "summary.json").read_text())


def wait_for(found, what: str, timeout: float = 300):
    """``found()`` once it is true (polled), or an AssertionError naming ``what``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := found():
            return value
        time.sleep(0.05)
    raise AssertionError(f"{what} never happened")


def validated_job_of(sweep: Path, pid: int | None = None) -> Path | None:
    """A trial's run directory whose job (process ``pid``, if given) holds its lock and has written last.ckpt."""
    for lock in sweep.glob("*/.zoo.lock"):
        try:
            holder = json.loads(lock.read_text())["pid"]
        except (OSError, ValueError, KeyError):
            continue
        if (lock.parent / "checkpoints" / "last.ckpt").is_file() and pid in (None, holder):
            return lock.parent
    return None


#: A scorer that will not let its run start training until a second process has built one too: two trials that
#: ran one after the other would wait forever, so a search that gets past it ran its trials side by side.
BARRIER_SCORER = """
import os, time
from dataclasses import dataclass
from pathlib import Path

from zoo.api import Attention, register


@register("attention", "barrier")
class BarrierScorer(Attention):
    needs_equal_dims = True

    @dataclass
    class Config:
        pass

    def __init__(self, cfg, query_dim, key_dim, heads=1):
        super().__init__()
        self.check_dims(query_dim, key_dim)
        here = Path(os.environ["ZOO_TEST_BARRIER"])
        (here / str(os.getpid())).touch()
        deadline = time.monotonic() + 120
        while len(list(here.iterdir())) < 2:
            if time.monotonic() > deadline:
                raise RuntimeError("no second trial started within 120 s")
            time.sleep(0.05)

    def forward(self, q, k):
        return q @ k.transpose(-1, -2)
"""


def test_n_jobs_runs_trials_side_by_side_through_joblib(tmp_path):
    (tmp_path / "barrier_plugins").mkdir()
    (tmp_path / "barrier_plugins" / "barrier.py").write_text(BARRIER_SCORER)
    (tmp_path / "barrier").mkdir()
    naming = ["plugin_dirs=[barrier_plugins]", "attention=barrier"]
    command = search("hydra/launcher=parallel", *naming, "hydra.sweeper.trials=2", "hydra.sweeper.reseed=[]")
    run_zoo(*command, cwd=tmp_path, env={"ZOO_TEST_BARRIER": str(tmp_path / "barrier")})
    (sweep,) = tmp_path.glob("multirun/*/*")
    assert [t.state.name for t in trials(sweep)] == ["COMPLETE", "COMPLETE"]
    dirs = trial_dirs(sweep)
    assert sorted(dirs) == [0, 1] and all(len(found) == 1 for found in dirs.values())
    assert len(list((tmp_path / "barrier").iterdir())) == 2, "each trial in its own process"


@pytest.fixture(scope="module")
def preempted(tmp_path_factory) -> dict:
    """The guide's submitit search of two trials at a time, whose first trial to validate gets USR2 (SLURM's signal
    before a time limit or on pre-emption): its job writes last.ckpt and submitit requeues it."""
    work = tmp_path_factory.mktemp("submitit")
    command = search("hydra/launcher=submitit_local", *LONG, "hydra.sweeper.trials=2", "hydra.sweeper.reseed=[]")
    worker = ForkedZoo(*command, cwd=work)
    run_dir = wait_for(lambda: next((validated_job_of(s) for s in work.glob("multirun/*/*")), None), "a validation")
    os.kill(json.loads((run_dir / ".zoo.lock").read_text())["pid"], signal.SIGUSR2)
    return {"run_dir": run_dir, "proc": worker.wait(timeout=300)}


def test_n_jobs_runs_trials_as_submitit_jobs(preempted):
    sweep = preempted["run_dir"].parent
    assert [t.state.name for t in trials(sweep)] == ["COMPLETE", "COMPLETE"]
    assert all(summary(found).get("status") == "finished" for (found,) in trial_dirs(sweep).values())
    assert len(list(sweep.glob(".submitit/*"))) >= 2, "each trial its own submitit job"


def test_a_preempted_trial_job_is_requeued_resumes_and_reports_once(preempted):
    run_dir = preempted["run_dir"]
    done = summary(run_dir)
    (resume,) = done["resumes"]
    assert resume["from"] == "interrupted" and done["status"] == "finished" and done["steps"] == 25
    number = search_record(next(r for r in find_runs([run_dir]) if r.path == run_dir)).trial
    (trial,) = [t for t in trials(run_dir.parent) if t.number == number]
    assert trial.value == done["best_val"], "the study was told the resumed run's result"
    assert trial_dirs(run_dir.parent)[number] == [run_dir], "the trial ran in its one directory"
    assert f"trial {number} was interrupted" in preempted["proc"].stdout


@pytest.fixture(scope="module")
def workers(tmp_path_factory) -> dict:
    """The guide's worker command started twice at once on one sweep directory (a 3-trial budget and one re-run);
    the first worker is killed (SIGKILL: no chance to record anything) once a trial of its own has validated."""
    work = tmp_path_factory.mktemp("workers")
    command = search("resume_mode=auto", *LONG, "hydra.sweeper.trials=3", "hydra.sweeper.reseed=[1]")
    first, second = (ForkedZoo(*command, cwd=work) for _ in range(2))
    sweep = work / "search"
    killed = wait_for(lambda: validated_job_of(sweep, first.pid), "a validated trial of the first worker")
    finished = {d: (d / "summary.json").stat().st_mtime_ns for d in sweep.glob("*") if (d / "summary.json").is_file()}
    finished = {d: mtime for d, mtime in finished.items() if summary(d)["status"] == "finished"}
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=60, check=False)
    return {"sweep": sweep, "killed": killed, "finished": finished, "proc": second.wait(timeout=300)}


def test_two_workers_run_exactly_the_budget_each_trial_once(workers):
    sweep = workers["sweep"]
    assert [t.state.name for t in trials(sweep)] == ["COMPLETE"] * 3
    dirs = trial_dirs(sweep)
    assert sorted(dirs) == [0, 1, 2] and all(len(found) == 1 for found in dirs.values()), dirs
    assert all(summary(found)["status"] == "finished" for (found,) in dirs.values())
    (family,) = search_families(find_runs([sweep]))
    assert len(family.scores) == 3 and family.failed == 0 and len(family.reseeds) == 1
    for run_dir, mtime in workers["finished"].items():
        assert (run_dir / "summary.json").stat().st_mtime_ns == mtime, f"{run_dir} finished and ran again"


def test_a_killed_workers_trial_is_taken_over_and_said_in_the_summary(workers, tmp_path):
    killed = summary(workers["killed"])
    (resume,) = killed["resumes"]
    assert resume["from"] == "running" and killed["status"] == "finished"
    number = search_record(next(r for r in find_runs([workers["killed"]]) if r.path == workers["killed"])).trial
    assert f"trial {number} was killed at step {resume['step']} and resumed from there" in workers["proc"].stdout
    assert "+search.attempt=2" in killed["overrides"], "the trial's record says it ran again"
    compared = fork_zoo("compare", str(workers["sweep"]), "--format", "markdown", cwd=tmp_path).stdout
    (row,) = [line for line in compared.splitlines() if line.startswith("| search | bleu |")]
    assert row.split(" | ")[2:4] == ["3", "0"], "zoo compare counts each trial once"
