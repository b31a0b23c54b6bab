"""A run's record while it goes: atomic summary writes, the configuration key, running/failed states."""

import json

from omegaconf import OmegaConf

from zoo.run.identity import config_key
from zoo.run.record import RunRecord, write_json_atomic


def test_atomic_write_leaves_only_the_file(tmp_path):
    write_json_atomic(tmp_path / "summary.json", {"a": 1})
    write_json_atomic(tmp_path / "summary.json", {"a": 2})
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"]
    assert json.loads((tmp_path / "summary.json").read_text()) == {"a": 2}


def test_config_key_ignores_seed_and_logging_but_not_the_model():
    base = {
        "seed": 1,
        "encoder": {"name": "gru"},
        "logger": {"wandb": False},
        "trainer": {"max_epochs": 6, "enable_progress_bar": True, "log_every_n_steps": 10},
    }
    key = config_key(OmegaConf.create(base))
    reseeded = {
        **base,
        "seed": 2,
        "logger": {"wandb": True},
        "trainer": {"max_epochs": 6, "enable_progress_bar": False, "log_every_n_steps": 1},
    }
    assert config_key(OmegaConf.create(reseeded)) == key
    assert config_key(OmegaConf.create({**base, "encoder": {"name": "lstm"}})) != key
    assert config_key(OmegaConf.create({**base, "trainer": {"max_epochs": 7, "enable_progress_bar": True}})) != key


def test_a_run_is_running_then_failed_with_its_reason(tmp_path):
    record = RunRecord(tmp_path, {"seed": 3}, writes=True)
    record.start()
    assert json.loads((tmp_path / "summary.json").read_text()) == {
        "seed": 3,
        "status": "running",
        "latest_val": {},
        "validations": [],
    }
    record.fail(ValueError("bad things\nand more"))
    assert json.loads((tmp_path / "summary.json").read_text())["reason"] == "ValueError: bad things"


def test_a_rank_that_does_not_write_records_nothing(tmp_path):
    RunRecord(tmp_path, {}, writes=False).start()
    assert not list(tmp_path.iterdir())


def test_a_resumed_record_adds_up_its_segments_and_names_a_killed_one(tmp_path):
    """Training seconds add up over segments and the peak is the largest; a segment still `running` in the
    summary was killed (its seconds are the ones recorded at its last validation)."""
    previous = {
        "status": "running",
        "segments": [
            {
                "from_step": 0,
                "to_step": 7,
                "train_seconds": 10.0,
                "peak_memory_mb": 500.0,
                "ended": "interrupted during test",
            },
            {"from_step": 7, "to_step": 9, "train_seconds": 3.5, "peak_memory_mb": 800.0, "ended": "running"},
        ],
    }
    record = RunRecord(tmp_path, {}, writes=True)
    record.resume_from(previous, 9)
    record.start()
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert [s["ended"] for s in summary["segments"]] == ["interrupted during test", "killed"]
    assert (summary["train_seconds"], summary["peak_memory_mb"]) == (13.5, 800.0)
    assert summary["resumes"][0]["from"] == "running"
