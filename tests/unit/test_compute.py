"""Training compute: FLOPs counted on real batches, summed over resumed segments; budgets in FLOPs; who wins at
which budget."""

import json

import numpy as np
import pytest
import torch
from helpers import TINY, fork_zoo
from helpers.run_files import summary, write

from zoo.config.checks import ConfigError
from zoo.config.sections import TrainerConfig
from zoo.contracts import PAD
from zoo.report.compare import compare
from zoo.report.frontier import frontier
from zoo.report.runs import find_runs
from zoo.run.record import totals
from zoo.training.compute import ComputeMeter, batch_tokens, flops_per_batch


class Linear(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(16, 8, bias=False)

    def _loss(self, batch):
        return self.layer(batch["x"]).square().mean()


def test_flops_are_counted_forward_and_backward_without_touching_the_model():
    model = Linear()
    before, batch = model.layer.weight.clone(), {"x": torch.randn(4, 16)}
    state = torch.random.get_rng_state()
    flops = flops_per_batch(model, [batch])
    assert flops == 2 * 4 * 16 * 8 * 2  # the forward product and the weight gradient (the input needs none)
    assert model.layer.weight.grad is None and torch.equal(model.layer.weight, before)
    assert torch.equal(torch.random.get_rng_state(), state)


def test_batches_after_the_counted_ones_are_charged_by_the_tokens_they_read_and_write():
    """A classifier's batch of many short sequences has many labels; of few long ones, few. Both cost what their
    source tokens cost."""

    def batch(rows: int, length: int) -> dict:
        source = torch.full((rows, length + 2), 5)
        source[:, length:] = PAD
        return {"source": source, "target_out": torch.full((rows, 1), 7)}

    assert batch_tokens(batch(4, 30)) == 4 * 30 + 4
    assert batch_tokens({"source": torch.randn(3, 3, 8, 8), "target_out": torch.full((3, 5), 7)}) == 3 + 15
    meter, model = ComputeMeter(), Linear()
    meter._started = (0.0, 0.0)
    charged = []
    for index, rows in enumerate([32] * 4 + [8]):  # four counted batches of 32 sequences of 32 tokens, then 8 x 128
        given = batch(rows, 32 if rows == 32 else 128)
        meter.on_train_batch_start(None, model, given, index)
        model.layer(torch.randn(64, 16))  # what a counted batch costs
        before = meter.flops
        meter.on_train_batch_end(None, model, None, given, index)
        charged.append(meter.flops - before)
    assert charged[4] == pytest.approx(charged[0] * (8 * 128 + 8) / (32 * 32 + 32)), "by its 1,032 tokens, not 8 labels"


def test_compute_adds_up_over_resumed_segments():
    segments = [
        {"train_seconds": 10.0, "peak_memory_mb": 500.0, "flops": 3e12, "processor_seconds": 9.5, "ended": "killed"},
        {"train_seconds": 5.0, "peak_memory_mb": 520.0, "flops": 2e12, "processor_seconds": 4.5, "ended": "trained"},
    ]
    cost = totals(segments)
    assert cost["compute"]["flops"] == 5e12 and cost["compute"]["processor_seconds"] == 14.0
    assert cost["train_seconds"] == 15.0 and "flop_counter" in cost["compute"]["flops_method"]


@pytest.mark.slow
def test_a_flops_budget_lays_out_steps_schedule_and_validations(tmp_path):
    fork_zoo(
        "train",
        *TINY,
        "trainer.budget_flops=1e10",
        "trainer.budget_validations=4",
        f"hydra.run.dir={tmp_path / 'run'}",
        cwd=tmp_path,
    )
    record = json.loads((tmp_path / "run" / "summary.json").read_text())
    steps = record["budget"]["steps"]
    assert record["steps"] == steps and steps % 4 == 0 and record["budget"]["warmup_steps"] <= steps // 10
    assert [v["step"] for v in record["validations"]] == [steps // 4 * k for k in (1, 2, 3, 4)]
    assert record["compute"]["flops"] == pytest.approx(1e10, rel=0.35) and record["compute"]["processor_seconds"] > 0
    assert record["segments"][0]["flops"] == record["compute"]["flops"]


def budgeted(folder, model, spend, seed, score):
    """A finished run of ``model`` trained to ``spend`` FLOPs whose 50 test items average ``score``."""
    content = summary(model, {"quality": score}, seed=seed, monitor="quality")
    content.update(
        config_key=f"{model}-{spend}",
        choices={"model": model},
        budget={"flops": spend, "steps": 100},
        compute={"flops": spend * 1.02, "processor_seconds": 10.0},
    )
    write(folder, content)
    noise = np.random.default_rng(seed).normal(0, 5, 50)
    rows = [{"id": str(k), "scores": {"quality": float(score + e - noise.mean())}} for k, e in enumerate(noise)]
    (folder / "test_items.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))


def test_compare_names_who_wins_at_which_budget(tmp_path):
    scores = {("gru", 1e12): 40.0, ("gru", 4e12): 60.0, ("transformer", 1e12): 39.5, ("transformer", 4e12): 70.0}
    for (model, spend), mean in scores.items():
        for seed in (1, 2, 3):
            budgeted(tmp_path / f"{model}-{spend:g}-{seed}", model, spend, seed, mean + seed - 2)
    found = frontier(find_runs([tmp_path]), "quality")
    low, high = ("flops", 1e12), ("flops", 4e12)
    assert [p.family for p in found.ranking(low)] == ["model=gru", "model=transformer"]
    assert found.lead(low).p > 0.5 and found.lead(high).p < 0.01  # a lead of 0.5 is noise, one of 10 is not
    (change,) = found.changes()
    assert change.startswith("from 1e+12 FLOPs to 4e+12 FLOPs model=transformer overtakes model=gru")
    assert "(+10.0, p = 0.0" in change or "(+10.0, p < 0.001)" in change
    assert found.points[0].flops == pytest.approx(1.02e12) and found.points[0].score.n == 3
    text = compare([tmp_path])
    assert "score against training compute" in text and "model=transformer overtakes model=gru" in text
    assert "train TFLOPs" in text


@pytest.mark.slow
def test_a_budget_in_minutes_is_laid_out_from_timed_steps(tmp_path):
    fork_zoo("train", *TINY, "trainer.budget_minutes=0.02", f"hydra.run.dir={tmp_path / 'run'}", cwd=tmp_path)
    record = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert record["budget"]["minutes"] == 0.02 and record["steps"] == record["budget"]["steps"] >= 8


def test_a_budget_is_in_flops_or_in_minutes_not_both():
    with pytest.raises(ConfigError, match="state the budget in FLOPs or in minutes, not both"):
        TrainerConfig(budget_flops=1e12, budget_minutes=5)
