"""Where W&B logs go: nothing leaves the machine unless a user says so."""
from zoo.training.loggers import wandb_mode


def test_config_mode_wins_then_environment_then_offline(monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "online")
    assert wandb_mode({"mode": "disabled"}) == "disabled"
    assert wandb_mode({"mode": None}) == "online"
    monkeypatch.setenv("WANDB_MODE", "")
    assert wandb_mode({"mode": None}) == "offline"
    monkeypatch.delenv("WANDB_MODE")
    assert wandb_mode({"mode": None}) == "offline"
