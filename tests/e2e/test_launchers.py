"""Sweeps through Hydra launchers: submitit's jobs, and a pre-empted job that is requeued and resumes.

Submitit's local executor runs each job as its own process under a controller that restarts it when it
exits for a requeue, as SLURM would: the pre-emption signal (USR2), zoo's last.ckpt, submitit's
checkpoint-and-requeue and the resumed run are the real ones; only ``scontrol requeue`` is left out.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest
from helpers import TINY, ForkedZoo

pytestmark = pytest.mark.slow

pytest.importorskip("hydra_plugins.hydra_submitit_launcher", reason="pip install -e '.[dev]' (zoo[slurm])")

SUBMITIT = ["-m", "hydra/launcher=submitit_local"]


def summary(run_dir: Path) -> dict:
    return json.loads((run_dir / "summary.json").read_text())


def wait_for_validation(sweep_root: Path, deadline: float) -> Path:
    """Job 0's run directory once it has validated once (training is under way, last.ckpt written)."""
    while time.time() < deadline:
        for record in sweep_root.glob("*/*/0/summary.json"):
            try:
                summary = json.loads(record.read_text())
            except (OSError, ValueError):
                continue
            if summary.get("validations"):
                return record.parent
            if summary.get("status") == "failed":  # say why now, not after the deadline
                raise AssertionError(f"job 0 failed before validating: {summary.get('reason')}")
        time.sleep(0.05)
    raise AssertionError("the job never validated")


@pytest.fixture(scope="module")
def preempted(tmp_path_factory) -> Path:
    """A submitit sweep of two jobs (seeds 3 and 4) in the default sweep directory (a timestamp), whose job 0 gets
    USR2 (what SLURM sends before a time limit or on pre-emption) once it has validated; job 0's run directory."""
    work = tmp_path_factory.mktemp("submitit")
    long = [
        *TINY,
        "trainer.max_epochs=5",
        "trainer.val_check_interval=0.4",
        "trainer.patience=1000",
        "dataset.val_size=8",
        "dataset.test_size=4",
    ]
    sweep = ForkedZoo("train", *SUBMITIT, *long, "seed=3,4", cwd=work)
    run_dir = wait_for_validation(work / "multirun", time.time() + 300)
    job_pid = json.loads((run_dir / ".zoo.lock").read_text())["pid"]  # the job, not the sweep (it waits)
    os.kill(job_pid, signal.SIGUSR2)
    sweep.wait(timeout=300)
    return run_dir


def test_a_submitit_sweep_runs_every_job_to_its_summary(preempted):
    for job, seed in (("0", 3), ("1", 4)):
        record = summary(preempted.parent / job)
        assert record["status"] == "finished" and record["seed"] == seed and record["steps"] == 25
        assert not (preempted.parent / job / ".zoo.lock").exists()
    assert not summary(preempted.parent / "1").get("resumes"), "the job left alone ran straight through"


def test_a_preempted_job_writes_last_ckpt_is_requeued_and_resumes_in_its_directory(preempted):
    """USR2 to the training job: it stops after the step, writes last.ckpt, is recorded as interrupted and requeued;
    the requeued job resumes it and finishes. The requeued job must not compute a new sweep directory."""
    multirun = preempted.parent.parent.parent
    assert [p.relative_to(multirun) for p in multirun.glob("*/*")] == [preempted.parent.relative_to(multirun)], (
        "the requeued job ran in another sweep directory"
    )
    job_logs = "".join(p.read_text() for p in preempted.parent.glob(".submitit/*/*_log.*"))
    assert "zoo: SIGUSR2: stopping after this step, writing last.ckpt" in job_logs
    assert "Requeued job" in job_logs
    done = summary(preempted)
    (resume,) = done["resumes"]
    assert resume["from"] == "interrupted" and 0 < resume["step"] < 25
    assert done["status"] == "finished" and done["steps"] == 25  # 5 epochs of 5 batches: nothing lost, nothing twice
    steps = [v["step"] for v in done["validations"]]
    assert steps == [5 * epoch + k for epoch in range(5) for k in (2, 4)]


def test_a_missing_launcher_plugin_is_one_line_naming_the_extra(monkeypatch):
    from hydra.core.config_store import ConfigStore

    from zoo.cli.train_checks import CompositionError, check_composition
    from zoo.registry.discovery import discover

    discover()
    check_composition(["-m", "hydra/launcher=slurm", "seed=1,2"])  # installed: composes (and registers its configs)
    monkeypatch.delitem(ConfigStore.instance().repo["hydra"]["launcher"], "submitit_slurm.yaml")
    for launcher in ("slurm", "submitit_slurm"):  # zoo's preset, and the plugin's own config
        with pytest.raises(CompositionError) as error:
            check_composition(["-m", f"hydra/launcher={launcher}", "seed=1,2"])
        assert str(error.value) == (
            f"hydra/launcher={launcher} needs the Hydra launcher plugin "
            "hydra-submitit-launcher, which is not installed: pip install 'zoo[slurm]'"
        )


def test_an_interruption_crosses_process_boundaries():
    """A joblib worker hands a stopped job's RunInterrupted back to the sweep by pickling it."""
    import pickle

    from zoo.run.interruptions import RunInterrupted

    stop = RunInterrupted(2, "test", 328, saved=True, trained=True)
    stop.run_dir = "multirun/x/2"
    back = pickle.loads(pickle.dumps(stop))
    assert (back.signum, back.phase, back.step, back.saved, back.trained, back.run_dir, str(back)) == (
        2,
        "test",
        328,
        True,
        True,
        "multirun/x/2",
        str(stop),
    )
