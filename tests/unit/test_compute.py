"""Training compute: FLOPs counted on real batches, summed over resumed segments; budgets in FLOPs; who wins at
which budget."""

import dataclasses
import json

import numpy as np
import pytest
import torch
from helpers import TINY, fork_zoo
from helpers.config import composed
from helpers.run_files import summary, write
from helpers.runs import NARROW_ENCODERS
from omegaconf import OmegaConf
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import FlopCounterMode

from zoo.config.checks import ConfigError
from zoo.config.sections import TrainerConfig
from zoo.contracts import PAD
from zoo.data.datamodule import ZooDataModule
from zoo.report.compare import compare
from zoo.report.frontier import frontier
from zoo.report.runs import find_runs
from zoo.run.record import totals
from zoo.training import budget
from zoo.training.budget import (
    MAX_EPOCHS,
    BudgetError,
    Layout,
    budget_layout,
    epoch_batches,
    fit_run_cost,
    lay_out,
    minutes_layout,
    write_compute_file,
)
from zoo.training.compute import (
    COMPUTE_FILE,
    COUNTED_BATCHES,
    BatchShape,
    ComputeMeter,
    CostModel,
    count_flops,
    probe,
    spread,
)
from zoo.training.module import ZooModule
from zoo.training.schedule import warmup_then_decay


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
    (flops,) = count_flops(model, [batch])
    products = 2 * 4 * 16 * 8 * 2  # the forward product and the weight gradient (the input needs none)
    assert products < flops < products * 1.1  # and the square, the mean and their gradients, per output element
    assert model.layer.weight.grad is None and torch.equal(model.layer.weight, before)
    assert torch.equal(torch.random.get_rng_state(), state)


def token_batch(rows: int, length: int, targets: int = 1) -> dict:
    source = torch.full((rows, length + 2), 5)
    source[:, length:] = PAD
    return {"source": source, "target_out": torch.full((rows, targets), 7), "index": torch.arange(rows)}


def test_a_batch_shape_is_its_rows_padded_lengths_and_real_tokens():
    assert BatchShape.of(token_batch(4, 30)) == BatchShape(4, 32, 1, 120, 4)
    images = {"source": torch.randn(3, 3, 8, 8), "target_out": torch.full((3, 5), 7)}
    assert BatchShape.of(images) == BatchShape(3, 3 * 8 * 8, 5, 3, 15)  # an image: one source token, its size wide


def polynomial_flops(shape: BatchShape) -> float:
    """What a model's FLOPs look like: per row, linear and quadratic in the lengths; per real token; per batch."""
    s, t = shape.source, shape.target
    return 1e5 + 7e3 * t * t + shape.rows * (3e4 * s + 2e4 * t + 90 * s * s + 40 * s * t) + 5e4 * shape.source_tokens


def test_the_cost_model_is_exact_where_flops_are_its_terms_from_batches_spread_over_the_shapes():
    rng = np.random.default_rng(0)
    shapes = []
    for _ in range(200):  # rows x the longest length near a token budget, as a bucketed epoch's batches are
        s = int(rng.integers(5, 60))
        t, rows = max(2, s + int(rng.integers(-4, 5))), 2048 // s
        shapes.append(BatchShape(rows, s, t, int(rows * s * rng.uniform(0.8, 1)), int(rows * t * 0.9)))
    chosen = spread(shapes, 16)
    assert len(set(chosen)) == 16
    cost = CostModel.fit([(shapes[i], polynomial_flops(shapes[i])) for i in chosen])
    for shape in shapes:
        assert cost.flops(shape) == pytest.approx(polynomial_flops(shape), rel=1e-6)
    assert CostModel.from_dict(json.loads(json.dumps(cost.to_dict()))).flops(shapes[7]) == cost.flops(shapes[7])


def test_every_batch_is_charged_by_the_cost_model_from_its_shape():
    """A classifier's batch of many short sequences has many labels; of few long ones, few: each is charged what
    its shape costs."""
    cost = CostModel.fit([(BatchShape.of(token_batch(r, n)), 100.0 * r * n) for r, n in ((32, 32), (8, 128), (4, 9))])
    meter = ComputeMeter(cost)
    meter._started = (0.0, 0.0)
    for rows, length in ((32, 32), (8, 128)):
        meter.on_train_batch_end(None, None, None, token_batch(rows, length), 0)
    assert meter.flops == pytest.approx(100.0 * (32 * 32 + 8 * 128))


def test_compute_adds_up_over_resumed_segments():
    segments = [
        {"train_seconds": 10.0, "peak_memory_mb": 500.0, "flops": 3e12, "processor_seconds": 9.5, "ended": "killed"},
        {"train_seconds": 5.0, "peak_memory_mb": 520.0, "flops": 2e12, "processor_seconds": 4.5, "ended": "trained"},
    ]
    cost = totals(segments)
    assert cost["compute"]["flops"] == 5e12 and cost["compute"]["processor_seconds"] == 14.0
    assert cost["train_seconds"] == 15.0 and "cost model" in cost["compute"]["flops_method"]


@pytest.mark.slow
def test_a_flops_budget_lays_out_steps_schedule_and_validations(tmp_path):
    """The steps end where the budget does (the last step's batch trimmed to the rows that spend the rest), the
    last segment validates at its end, the layout is in compute.json, and the run is charged what it laid out."""
    fork_zoo(
        "train",
        *TINY,
        "trainer.budget_flops=1e10",
        "trainer.budget_validations=4",
        f"hydra.run.dir={tmp_path / 'run'}",
        cwd=tmp_path,
    )
    record = json.loads((tmp_path / "run" / "summary.json").read_text())
    layout = json.loads((tmp_path / "run" / COMPUTE_FILE).read_text())["budget"]
    steps, every = record["budget"]["steps"], layout["validate_every"]
    assert record["steps"] == steps == layout["steps"] and record["budget"]["warmup_steps"] <= steps // 10
    assert [v["step"] for v in record["validations"]] == [every, 2 * every, 3 * every, steps]
    assert record["compute"]["flops"] == pytest.approx(1e10, rel=0.01) and record["compute"]["processor_seconds"] > 0
    assert record["compute"]["flops"] == pytest.approx(layout["flops"]) == record["segments"][0]["flops"]


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


@pytest.mark.slow
def test_a_resumed_budget_in_minutes_reads_its_steps_and_is_not_timed_again(tmp_path):
    """A run trained untested, resumed to test: its record keeps the steps compute.json laid out (9 here, which no
    timing gives: timed steps are a multiple of the 8 validations)."""
    run = tmp_path / "run"
    fork_zoo("train", *TINY, "trainer.budget_minutes=0.02", "test=false", f"hydra.run.dir={run}", cwd=tmp_path)
    compute = json.loads((run / COMPUTE_FILE).read_text())
    assert compute["budget"]["unit"] == "minutes" and compute["budget"]["steps"] % 8 == 0
    compute["budget"]["steps"] = 9
    (run / COMPUTE_FILE).write_text(json.dumps(compute))
    fork_zoo("train", f"resume={run}", "test=true", cwd=tmp_path)
    record = json.loads((run / "summary.json").read_text())
    assert record["tested"] and record["budget"]["steps"] == 9


def test_a_budget_is_in_flops_or_in_minutes_not_both():
    with pytest.raises(ConfigError, match="state the budget in FLOPs or in minutes, not both"):
        TrainerConfig(budget_flops=1e12, budget_minutes=5)


def test_a_flops_budget_must_be_finite():
    with pytest.raises(ConfigError, match="budget_flops=inf must be in"):
        TrainerConfig(budget_flops=float("inf"))


#: Tiny recipes of every family whose count is checked over a whole epoch, with more batches than are counted.
FAMILIES = {
    "gru": ["model=gru"],
    "lstm": ["model=lstm"],
    "transformer": ["model=transformer"],
    "mamba": ["model=mamba", *NARROW_ENCODERS["mamba"]],
    "s4d": ["model=s4d"],
    "gla": ["model=gla"],
}


def built(tmp_path, *overrides: str):
    """The data and a fresh model of a composed config, as ``zoo train`` builds them before training."""
    cfg = composed(*overrides)
    data = ZooDataModule(cfg, tmp_path)
    data.setup()
    container = OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)
    source = dataclasses.asdict(data.task.source_description())
    return cfg, data, ZooModule(container, source, data.task.target_vocab_size)


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_is_charged_within_a_percent_of_every_batch_counted_over_an_epoch(tmp_path, family):
    """The charge per batch from the cost model (16 batches counted) against every batch of the epoch counted (36:
    20 of them shapes the fit never saw)."""
    overrides = ["experiment=smoke", "dataset.train_size=300", "data.max_tokens=160", *FAMILIES[family]]
    _, data, module = built(tmp_path, *overrides)
    batches = list(epoch_batches(data, 0))
    assert len(batches) > 2 * COUNTED_BATCHES
    cost = fit_run_cost(module, data)
    charged = sum(cost.flops(BatchShape.of(batch)) for batch in batches)
    assert charged == pytest.approx(sum(count_flops(module, batches)), rel=0.01)


class ElementWiseTally(TorchDispatchMode):
    """An independent tally of element-wise work: the output elements of every op torch tags pointwise, and of
    the softmaxes, norms, reductions and losses by name."""

    NAMED = ("softmax", "norm", "sum", "mean", "nll_loss", "dropout", "bernoulli", "embedding_dense_backward")

    def __init__(self) -> None:
        super().__init__()
        self.elements = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = func.__name__
        if (torch.Tag.pointwise in func.tags and not name.startswith("clone")) or any(n in name for n in self.NAMED):
            outputs = out if isinstance(out, (tuple, list)) else (out,)
            self.elements += sum(t.numel() for t in outputs if isinstance(t, torch.Tensor))
        return out


@pytest.mark.slow
def test_a_listops_transformer_batch_is_counted_within_two_percent_of_an_independent_count(tmp_path):
    """32 expressions of 256 tokens through the Transformer encoder at its defaults (3 blocks of 256): zoo's count
    (attention on the CPU's fused kernel) against torch's FlopCounterMode over the math backend plus an independent
    tally of element-wise work. Attention is a tenth of it: the CPU kernel's count was zero."""
    _, data, module = built(tmp_path, "experiment=listops", "encoder=transformer", "dataset.train_size=200")
    batch = max(epoch_batches(data, 0), key=lambda b: b["source"].numel())
    assert batch["source"].shape[1] >= 200
    (ours,) = count_flops(module, [batch])
    with probe(module, torch.device("cpu")) as copied, sdpa_kernel(SDPBackend.MATH):
        with FlopCounterMode(display=False) as products, ElementWiseTally() as tally:
            copied._loss(batch).backward()
    independent = products.get_total_flops() + tally.elements
    assert ours == pytest.approx(independent, rel=0.02)
    attention = products.get_flop_counts()["Global"][torch.ops.aten.bmm]
    assert attention > 0.1 * independent


def test_a_resumed_run_charges_by_the_cost_model_and_layout_it_wrote(tmp_path, monkeypatch):
    from zoo.training import trainer

    cost = CostModel.fit([(BatchShape(4, 10, 10, 40, 40), 1e6)])
    layout = Layout(budget=2e6, steps=2, validate_every=1, flops=2e6, last_rows=None)
    write_compute_file(tmp_path, cost, layout)
    monkeypatch.setattr(trainer, "fit_run_cost", lambda *a: pytest.fail("measured again on resume"))
    saved = json.loads((tmp_path / COMPUTE_FILE).read_text())
    read_cost, read = trainer.compute_layout(TrainerConfig(budget_flops=2e6), None, None, saved)
    assert read == layout and read_cost.flops(BatchShape(4, 10, 10, 40, 40)) == pytest.approx(1e6)


def test_a_resumed_budget_in_minutes_keeps_the_steps_it_was_timed_at(tmp_path, monkeypatch):
    """Timed again, a resumed run would train other steps than it started with, and change its schedule mid-run."""
    from zoo.training import trainer

    layout = Layout(budget=5.0, steps=40, validate_every=5, flops=None, unit="minutes")
    write_compute_file(tmp_path, CostModel.fit([(BatchShape(4, 10, 10, 40, 40), 1e6)]), layout)
    monkeypatch.setattr(trainer, "minutes_layout", lambda *a: pytest.fail("timed again on resume"))
    saved = json.loads((tmp_path / COMPUTE_FILE).read_text())
    assert trainer.compute_layout(TrainerConfig(budget_minutes=5.0), None, None, saved)[1] == layout


def test_a_budget_ends_with_the_rows_of_the_last_batch_that_spend_it():
    cost = CostModel.fit([(BatchShape.of(token_batch(r, 10)), 1000.0 * r) for r in (2, 5, 8)])  # 1,000 a row
    steps = [(8000.0, token_batch(8, 10))] * 10
    layout = lay_out(35_000, 2, cost, iter(steps))
    assert (layout.steps, layout.last_rows, layout.validate_every) == (5, 3, 3)  # four batches and 3 rows
    assert layout.flops == pytest.approx(35_000)
    at_the_floor = lay_out(12_000, 2, cost, iter(steps))  # two validations: two steps, the second trimmed
    assert (at_the_floor.steps, at_the_floor.last_rows, at_the_floor.flops) == (2, 4, pytest.approx(12_000))


def test_a_budget_below_a_step_a_validation_is_refused_with_the_least_that_buys_them():
    cost = CostModel.fit([(BatchShape.of(token_batch(r, 10)), 1000.0 * r) for r in (2, 5, 8)])  # 1,000 a row
    with pytest.raises(BudgetError, match=r"at least 9e\+03 FLOPs"):  # a whole step, then one row
        lay_out(3_000, 2, cost, iter([(8000.0, token_batch(8, 10))] * 10))


def test_a_budget_of_more_epochs_than_are_laid_out_is_refused_with_what_it_would_take(monkeypatch):
    monkeypatch.setattr(budget, "epoch_steps", lambda *a: [(1000.0, None)] * 10)  # 1e4 FLOPs an epoch
    with pytest.raises(BudgetError, match=r"would train 1e\+26 epochs .* at most 1000 epochs"):
        budget_layout(TrainerConfig(budget_flops=1e30), None, None)
    assert budget_layout(TrainerConfig(budget_flops=MAX_EPOCHS * 1e4), None, None).steps == MAX_EPOCHS * 10


@pytest.mark.parametrize(
    ("minutes", "refusal"),
    [(0.05, r"buys less than the 8 steps .* at least 0.133 minutes"), (1e6, r"would train 6e\+06 epochs")],
)
def test_a_budget_in_minutes_buys_a_step_a_validation_and_at_most_the_epochs_laid_out(minutes, refusal, monkeypatch):
    monkeypatch.setattr(budget, "seconds_per_batch", lambda *a: 1.0)  # a step a second, ten steps an epoch
    with pytest.raises(BudgetError, match=refusal):
        minutes_layout(TrainerConfig(budget_minutes=minutes), None, [None] * 10)
    assert minutes_layout(TrainerConfig(budget_minutes=1.0), None, [None] * 10).steps == 64  # 60 steps, 8 a validation


@pytest.mark.parametrize("schedule", ["cosine", "inverse_sqrt", "constant"])
def test_a_budgets_schedule_ends_at_its_last_step_without_a_step_at_lr_zero(schedule):
    factor = warmup_then_decay(schedule, warmup_steps=10, total_steps=200, cool_down=True)
    last = factor(199)
    assert 0 < last < 0.05 * factor(150) and factor(200) == pytest.approx(0, abs=1e-4)
    lrs = [factor(i) for i in range(161, 200)]
    assert all(a > b for a, b in zip(lrs, lrs[1:]))  # annealing to the end (the last fifth, at least)


def test_the_warmup_cap_leaves_inverse_sqrt_annealing_to_the_budget():
    """A recipe's 4,000 warmup steps capped at a tenth of a 400-step budget: the decay still reaches zero there."""
    factor = warmup_then_decay("inverse_sqrt", warmup_steps=40, total_steps=400, cool_down=True)
    assert factor(39) == 1.0 and factor(319) == pytest.approx((40 / 320) ** 0.5) and factor(399) < 0.01
