"""Runs that survive: resume from last.ckpt, SIGTERM/Ctrl-C mid-epoch, atomic checkpoints, sweeps that finish.

Every run here is tiny (the smoke experiment: 5 training batches an epoch). The equality tests compare a run
trained straight through with one stopped in the middle of an epoch and resumed: same batches, learning
rates, random draws, weights, metrics.csv and learning curve.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
import torch
from helpers import TINY, ForkedZoo, fork_zoo
from helpers.config import composed
from omegaconf import OmegaConf

from zoo.run.resume import ResumeRefused, check_resume_config

pytestmark = pytest.mark.slow


def run_args(max_steps: int = 15) -> list[str]:
    """3 epochs of 5 batches; a validation every 2 batches and at each epoch's end; a learning rate that moves."""
    return [
        *TINY,
        "trainer.max_epochs=3",
        f"trainer.max_steps={max_steps}",
        "trainer.val_check_interval=0.4",
        "trainer.log_every_n_steps=1",
        "optim.warmup_steps=2",
    ]


RUN = run_args()


def summary(run_dir: Path) -> dict:
    return json.loads((run_dir / "summary.json").read_text())


def weights(run_dir: Path) -> dict:
    return torch.load(run_dir / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=False)["state_dict"]


def largest_difference(a: dict, b: dict) -> float:
    assert a.keys() == b.keys()
    return max(float((a[k].float() - b[k].float()).abs().max()) for k in a)


def assert_same_run(straight: Path, resumed: Path) -> None:
    """Step for step the same: every logged value, the learning curve, the test scores and the weights."""
    assert (resumed / "metrics.csv").read_text() == (straight / "metrics.csv").read_text()
    a, b = summary(straight), summary(resumed)
    assert b["status"] == "finished" and b["resumes"]
    assert b["validations"] == [{**v, "seconds": w["seconds"]} for v, w in zip(a["validations"], b["validations"])]
    assert b["test"] == a["test"] and b["steps"] == a["steps"] == 15 and b["train_tokens"] == a["train_tokens"]
    # the cost of every segment counts: its seconds add up, each segment listed
    assert len(b["segments"]) == len(b["resumes"]) + 1
    assert b["train_seconds"] == pytest.approx(sum(s["train_seconds"] for s in b["segments"]), abs=0.011)
    # so do its FLOPs: each segment counts its own, charged by the cost model the run started with (compute.json),
    # and the model's training is the straight run's 15 steps
    assert b["compute"]["flops_spent"] == sum(s["flops"] for s in b["segments"])
    assert b["compute"]["flops"] == pytest.approx(a["compute"]["flops"], rel=1e-9)
    assert largest_difference(weights(straight), weights(resumed)) == 0.0


@pytest.fixture(scope="module")
def straight(tmp_path_factory) -> Path:
    """The reference: 15 steps without a stop."""
    work = tmp_path_factory.mktemp("straight")
    fork_zoo("train", *RUN, f"hydra.run.dir={work / 'run'}", cwd=work)
    return work / "run"


# A run that signals itself in the middle of the step at ``global_step == $STOP_AT`` (deterministic).
def signal_at_step() -> None:
    """In a forked run: send this process $SIGNAL when training reaches step $STOP_AT (once)."""
    from zoo.training.module import ZooModule

    step, sent = ZooModule.training_step, []

    def training_step(self, batch, batch_idx):
        if self.trainer.global_step == int(os.environ["STOP_AT"]) and not sent:
            sent.append(True)
            os.kill(os.getpid(), getattr(signal, os.environ["SIGNAL"]))
        return step(self, batch, batch_idx)

    ZooModule.training_step = training_step


def run_stopped(
    tmp_path: Path, run_dir: Path, stop_at: int, signame: str = "SIGTERM", extra: tuple[str, ...] = ()
) -> subprocess.CompletedProcess:
    """A run of :data:`RUN` that signals itself at step ``stop_at``, in a process forked from the zoo server."""
    env = {"STOP_AT": str(stop_at), "SIGNAL": signame}
    run = ForkedZoo("train", *RUN, *extra, f"hydra.run.dir={run_dir}", cwd=tmp_path, env=env, prepare=signal_at_step)
    return run.wait(check=False)


def test_half_the_steps_then_resume_equals_the_straight_run(straight, tmp_path):
    """7 steps (the run ends at a mid-epoch validation), then resume=RUN_DIR with more steps: the same 15 steps."""
    run_dir = tmp_path / "run"
    fork_zoo("train", *run_args(max_steps=7), f"hydra.run.dir={run_dir}", cwd=tmp_path)
    assert summary(run_dir)["status"] == "finished"
    fork_zoo("train", f"resume={run_dir}", "trainer.max_steps=15", cwd=tmp_path)
    assert summary(run_dir)["resumes"][0] == {**summary(run_dir)["resumes"][0], "step": 7, "from": "finished"}
    assert_same_run(straight, run_dir)


def test_steps_trained_again_after_a_resume_are_spent_twice_and_trained_once(straight, tmp_path):
    """A resume from a checkpoint older than where the run stopped (a pre-emption that outran its checkpoint) trains
    those steps again: the record's ``flops`` is the model's training, the straight run's, and ``flops_spent`` adds
    the steps trained twice."""
    run_dir = tmp_path / "run"
    fork_zoo("train", *run_args(max_steps=7), f"hydra.run.dir={run_dir}", cwd=tmp_path)
    last = run_dir / "checkpoints" / "last.ckpt"
    shutil.copy(last, tmp_path / "step7.ckpt")
    fork_zoo("train", f"resume={run_dir}", "trainer.max_steps=11", cwd=tmp_path)
    shutil.copy(tmp_path / "step7.ckpt", last)
    resumed = fork_zoo("train", f"resume={run_dir}", "trainer.max_steps=15", cwd=tmp_path)
    assert_same_run(straight, run_dir)
    compute, segments = summary(run_dir)["compute"], summary(run_dir)["segments"]
    assert [(s["from_step"], s["to_step"]) for s in segments] == [(0, 7), (7, 11), (7, 15)]
    assert compute["flops_spent"] == pytest.approx(compute["flops"] + segments[1]["flops"], abs=2)  # each rounded
    assert "TFLOPs spent: steps trained again after a resume" in resumed.stdout


@pytest.mark.parametrize(
    "stop_at, signame",
    [(2, "SIGTERM"), (3, "SIGINT"), (9, "SIGTERM")],
    ids=["mid-epoch", "ctrl-c-before-a-validation", "last-step-of-an-epoch"],
)
def test_a_signal_writes_last_ckpt_and_a_resume_ends_as_the_straight_run(straight, tmp_path, stop_at, signame):
    run_dir = tmp_path / "run"
    proc = run_stopped(tmp_path, run_dir, stop_at, signame)
    number = getattr(signal, signame).value
    assert proc.returncode == 128 + number, proc.stderr[-3000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("zoo: ") and f"zoo train resume={run_dir}" in last
    record = summary(run_dir)
    assert record["status"] == "interrupted" and record["resumable"] and record["step"] == stop_at + 1
    assert not (run_dir / ".zoo.lock").exists()
    assert not list((run_dir / "checkpoints").glob("*.partial"))
    resumed = fork_zoo("train", f"resume={run_dir}", cwd=tmp_path)
    assert_same_run(straight, run_dir)
    assert "not resumable" not in resumed.stderr  # Lightning's warning; zoo's data module resumes mid-epoch exactly


def test_sigterm_from_outside_mid_epoch_then_resume_to_the_end(tmp_path):
    """A real pre-emption: SIGTERM from another process while the run trains; the resumed run ends where it should."""
    run_dir = tmp_path / "run"
    slow = [*TINY, "trainer.max_epochs=6", "trainer.val_check_interval=0.4", "trainer.patience=1000"]
    proc = ForkedZoo("train", *slow, f"hydra.run.dir={run_dir}", cwd=tmp_path)
    deadline = time.time() + 300
    while time.time() < deadline and proc.poll() is None:
        try:
            if len(summary(run_dir)["validations"]) >= 3:
                break
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    stderr = proc.wait(check=False).stderr
    assert proc.poll() == 128 + signal.SIGTERM, stderr[-3000:]
    assert "zoo train resume=" in stderr.strip().splitlines()[-1]
    stopped = summary(run_dir)
    assert stopped["status"] == "interrupted" and 0 < stopped["step"] < 30

    fork_zoo("train", f"resume={run_dir}", cwd=tmp_path)
    done = summary(run_dir)
    assert done["status"] == "finished" and done["resumes"][0]["step"] == stopped["step"]
    steps = [v["step"] for v in done["validations"]]
    # 6 epochs of 5 steps, validated after the 2nd and 4th batch of each: the curve goes on without a gap or a repeat
    assert steps == [5 * epoch + k for epoch in range(6) for k in (2, 4)] and done["steps"] == 30
    assert done["validations"][: len(stopped["validations"])] == stopped["validations"]
    rows = (run_dir / "metrics.csv").read_text().splitlines()
    assert rows[0].startswith("epoch,step") and len({r for r in rows}) == len(rows)  # nothing logged twice


@pytest.fixture
def finished_run(trained_run, tmp_path) -> Path:
    """A copy of the session's finished run, to resume or to lock."""
    copy = tmp_path / "finished"
    shutil.copytree(trained_run, copy)
    return copy


def test_a_run_made_before_a_setting_was_added_resumes_at_the_value_it_had(finished_run):
    """``trainer.counted_batches`` came after runs were recorded with 16 batches counted: such a run's config.yaml
    has no such key, and it resumes where the setting is 16 (what it counted), not at another value."""
    saved = OmegaConf.load(finished_run / "config.yaml")
    del saved.trainer["counted_batches"]
    OmegaConf.save(saved, finished_run / "config.yaml")
    check_resume_config(finished_run, composed(*TINY, "trainer.counted_batches=16"))
    with pytest.raises(ResumeRefused, match="trainer.counted_batches=4: the run has trainer.counted_batches=16"):
        check_resume_config(finished_run, composed(*TINY, "trainer.counted_batches=4"))


def test_an_incompatible_override_is_refused_naming_the_key_and_changes_nothing(finished_run, tmp_path):
    trained_run = finished_run
    before = {p: p.stat().st_mtime_ns for p in trained_run.rglob("*")}
    proc = fork_zoo("train", f"resume={trained_run}", "encoder.hidden_size=64", cwd=tmp_path, check=False)
    assert proc.returncode == 1
    line = proc.stderr.strip().splitlines()[-1]
    assert line.startswith("zoo: error: cannot resume") and "encoder.hidden_size=64" in line
    assert {p: p.stat().st_mtime_ns for p in trained_run.rglob("*")} == before


def test_a_run_held_by_another_process_is_not_resumed(finished_run, tmp_path):
    from zoo.run.claim import Lock

    lock = Lock(finished_run, "run directory")  # this process holds it while zoo tries to resume the run
    try:
        proc = fork_zoo("train", f"resume={finished_run}", cwd=tmp_path, check=False)
    finally:
        lock.release()
    assert proc.returncode == 1 and f"being written by another zoo process (pid {os.getpid()}," in proc.stderr


def test_resume_modes_decide_what_a_folder_means(tmp_path):
    from zoo.config.schema import ResumeMode
    from zoo.run.claim import NothingToResume, RunDirectoryInUse, check_run_dir
    from zoo.run.resume import Verdict

    empty = tmp_path / "empty"
    assert check_run_dir(empty, mode=ResumeMode.auto) is Verdict.start
    with pytest.raises(NothingToResume):
        check_run_dir(empty, mode=ResumeMode.must)
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    (run / "summary.json").write_text(json.dumps({"status": "interrupted"}))
    assert check_run_dir(run, mode=ResumeMode.auto) is Verdict.restart  # stopped before its first checkpoint
    (run / "checkpoints" / "last.ckpt").write_bytes(b"x")
    assert check_run_dir(run, mode=ResumeMode.auto) is Verdict.resume
    with pytest.raises(RunDirectoryInUse, match="resume="):
        check_run_dir(run)  # never: refused, saying how to continue it
    (run / "summary.json").write_text(json.dumps({"status": "finished"}))
    assert check_run_dir(run, mode=ResumeMode.auto) is Verdict.finished
    assert check_run_dir(run, mode=ResumeMode.must) is Verdict.resume  # e.g. with more epochs
    (run / "checkpoints" / "last.ckpt").unlink()
    with pytest.raises(RunDirectoryInUse, match="a finished run but no checkpoints/last.ckpt"):
        check_run_dir(run, mode=ResumeMode.must)


def test_resume_composes_the_runs_overrides_with_the_new_ones(tmp_path):
    from zoo.run.resume import resume_overrides

    run = tmp_path / "run"
    (run / ".hydra").mkdir(parents=True)
    (run / ".hydra" / "overrides.yaml").write_text("- experiment=smoke\n- trainer.max_epochs=2\n- hydra.run.dir=x\n")
    assert resume_overrides([f"resume={run}", "trainer.max_epochs=5"]) == [
        "experiment=smoke",
        f"resume={run}",
        "trainer.max_epochs=5",
        f"hydra.run.dir={run}",
    ]
    assert resume_overrides(["trainer.max_epochs=5"]) == ["trainer.max_epochs=5"]
    from zoo.errors import ZooError

    with pytest.raises(ZooError, match="resume_mode=auto"):  # the mode has its own option
        resume_overrides(["-m", "seed=1,2", "resume=auto"])


def test_a_checkpoint_write_cut_off_never_replaces_the_good_one(tmp_path, monkeypatch):
    from zoo.training import callbacks

    path = tmp_path / "last.ckpt"
    io = callbacks.AtomicCheckpointIO()
    io.save_checkpoint({"step": 1}, path)

    def broken(obj, file):
        file.write(b"half a checkpoint")
        raise OSError("disk full")

    monkeypatch.setattr(callbacks.torch, "save", broken)
    with pytest.raises(OSError):
        io.save_checkpoint({"step": 2}, path)
    assert torch.load(path, weights_only=True) == {"step": 1}


def test_a_sweep_resumed_with_auto_skips_finished_jobs_and_finishes_the_others(tmp_path):
    sweep = tmp_path / "sweep"
    args = ["train", "-m", *TINY, "seed=1,2", f"hydra.sweep.dir={sweep}"]
    fork_zoo(*args, cwd=tmp_path)
    # Job 1 is cut off (as if killed after a checkpoint): its record says so.
    record = summary(sweep / "1")
    (sweep / "1" / "summary.json").write_text(json.dumps({**record, "status": "interrupted"}))
    finished_0 = (sweep / "0" / "summary.json").read_text()

    refused = fork_zoo(*args, cwd=tmp_path, check=False)
    assert refused.returncode == 1 and "resume_mode=auto" in refused.stderr

    proc = fork_zoo(*args, "resume_mode=auto", cwd=tmp_path)
    assert f"{sweep / '0'} finished already; skipped" in proc.stderr
    assert (sweep / "0" / "summary.json").read_text() == finished_0
    again = summary(sweep / "1")
    assert again["status"] == "finished" and again["resumes"][0]["from"] == "interrupted"


def test_a_resumed_run_logs_into_the_same_wandb_run(tmp_path):
    pytest.importorskip("wandb")
    run_dir = tmp_path / "run"
    stopped = run_stopped(tmp_path, run_dir, 2, extra=("logger=wandb",))
    assert stopped.returncode == 128 + signal.SIGTERM, stopped.stderr[-3000:]
    run_id = summary(run_dir)["wandb_run_id"]
    fork_zoo("train", f"resume={run_dir}", cwd=tmp_path)
    assert summary(run_dir)["wandb_run_id"] == run_id
    runs = sorted(p.name for p in (run_dir / "wandb").glob("offline-run-*"))
    assert len(runs) == 2 and all(name.endswith(f"-{run_id}") for name in runs), runs


def test_a_killed_run_resumes_from_its_timed_checkpoint_at_once(straight, tmp_path):
    """SIGKILL (no chance to write anything): last.ckpt from the timer holds the step before; the lock died with the
    process (its file, left behind, locks nothing), and the resumed run ends as the straight one."""
    run_dir = tmp_path / "run"
    killed = run_stopped(tmp_path, run_dir, 8, "SIGKILL", extra=("trainer.checkpoint_every_minutes=0.000001",))
    assert killed.returncode == -signal.SIGKILL
    assert summary(run_dir)["status"] == "running"
    ckpt = torch.load(run_dir / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=False)
    assert ckpt["global_step"] == 8  # written by the timer after step 8, which no validation follows
    assert summary(run_dir)["segments"][-1]["to_step"] == 8, "the record is written with the checkpoint"

    assert (run_dir / ".zoo.lock").exists()
    fork_zoo("train", f"resume={run_dir}", cwd=tmp_path)
    assert_same_run(straight, run_dir)
    killed_segment, resumed = summary(run_dir)["segments"]
    assert killed_segment["ended"] == "killed" and killed_segment["processor_seconds"] > 0
    assert resumed["from_step"] == 8  # nothing trained twice, nothing left out
    assert summary(run_dir)["compute"]["flops_spent"] == pytest.approx(summary(straight)["compute"]["flops"], rel=1e-9)
