"""A run's record while it goes: atomic summary writes, the configuration key, running/failed states."""
import json

from omegaconf import OmegaConf

from zoo.training.record import RunRecord, config_key, write_json_atomic


def test_atomic_write_leaves_only_the_file(tmp_path):
    write_json_atomic(tmp_path / "summary.json", {"a": 1})
    write_json_atomic(tmp_path / "summary.json", {"a": 2})
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"]
    assert json.loads((tmp_path / "summary.json").read_text()) == {"a": 2}


def test_config_key_ignores_seed_and_logging_but_not_the_model():
    base = {"seed": 1, "encoder": {"name": "gru"}, "logger": {"wandb": False},
            "trainer": {"max_epochs": 6, "enable_progress_bar": True}}
    key = config_key(OmegaConf.create(base))
    reseeded = {**base, "seed": 2, "logger": {"wandb": True}, "trainer": {"max_epochs": 6, "enable_progress_bar": False}}
    assert config_key(OmegaConf.create(reseeded)) == key
    assert config_key(OmegaConf.create({**base, "encoder": {"name": "lstm"}})) != key
    assert config_key(OmegaConf.create({**base, "trainer": {"max_epochs": 7, "enable_progress_bar": True}})) != key


def test_a_run_is_running_then_failed_with_its_reason(tmp_path):
    record = RunRecord(tmp_path, {"seed": 3}, writes=True)
    record.start()
    assert json.loads((tmp_path / "summary.json").read_text()) == {"seed": 3, "status": "running", "latest_val": {},
                                                                   "validations": []}
    record.fail(ValueError("bad things\nand more"))
    assert json.loads((tmp_path / "summary.json").read_text())["reason"] == "ValueError: bad things"


def test_a_rank_that_does_not_write_records_nothing(tmp_path):
    RunRecord(tmp_path, {}, writes=False).start()
    assert not list(tmp_path.iterdir())


def test_ctrl_c_is_recorded_as_interrupted_not_failed(tmp_path):
    record = RunRecord(tmp_path, {}, writes=True)
    record.on_exception(None, None, KeyboardInterrupt())
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["status"] == "interrupted" and "stopped by the user" in summary["reason"]
