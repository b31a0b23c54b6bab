"""Checkpoint averaging in real runs: the averaged model validated and tested at the end of training, and ``zoo
average`` on a finished run.

Two tiny runs in all: one trained straight through (shared by the module), and one stopped after its first epoch
and resumed, which must end with the same snapshots and the same average, bit for bit.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from helpers import TINY, fork_zoo
from helpers.checkpoints import assert_bit_identical, snapshot, weights

from zoo.training.averaging import average_state_dicts

pytestmark = pytest.mark.slow


def run_args(epochs: int = 2) -> list[str]:
    """5 training batches an epoch (the smoke data), validated after the 2nd and the 4th: at steps 2, 4, 7, 9."""
    return [*TINY, f"trainer.max_epochs={epochs}", "trainer.val_check_interval=0.4", "trainer.average_last=2"]


def summary(run_dir: Path) -> dict:
    return json.loads((run_dir / "summary.json").read_text())


@pytest.fixture(scope="module")
def averaged_run(tmp_path_factory) -> Path:
    """A run that keeps the weights of its last 2 validations (steps 7 and 9), averages and tests them."""
    work = tmp_path_factory.mktemp("averaged")
    fork_zoo("train", *run_args(), f"hydra.run.dir={work / 'run'}", cwd=work)
    return work / "run"


# ---------------------------------------------------------------------------------------------- the runs


def evaluate(run_dir: Path, checkpoint: Path) -> tuple[dict[str, float], list[str]]:
    """``checkpoint`` validated and tested by one process, outside the run: every val/ metric, and the test outputs."""
    import lightning as L
    from omegaconf import OmegaConf

    from zoo.data.datamodule import ZooDataModule
    from zoo.registry.discovery import discover
    from zoo.training.module import ZooModule

    discover()
    data = ZooDataModule(OmegaConf.load(run_dir / "config.yaml"), run_dir)  # the run's codecs
    module = ZooModule.load_from_checkpoint(checkpoint, map_location="cpu")
    trainer = L.Trainer(
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    (val,) = trainer.validate(module, datamodule=data, verbose=False)
    trainer.test(module, datamodule=data, verbose=False)
    return {name.split("/", 1)[1]: round(value, 4) for name, value in val.items()}, module.results["test"]["hypotheses"]


def test_a_run_keeps_its_last_snapshots_and_tests_their_validated_average(averaged_run):
    record = summary(averaged_run)
    assert [v["step"] for v in record["validations"]] == [2, 4, 7, 9]
    average = record["average"]
    assert average["of"] == "last" and [s["step"] for s in average["snapshots"]] == [7, 9]
    assert [round(s["score"], 4) for s in average["snapshots"]] == [v["bleu"] for v in record["validations"][2:]]
    folder = averaged_run / "checkpoints" / "snapshots"
    assert sorted(p.name for p in folder.iterdir()) == ["index.json", *(snapshot(averaged_run, s).name for s in (7, 9))]
    index = json.loads((folder / "index.json").read_text())
    assert index["monitor"] == "val/bleu" and index["mode"] == "max" and index["keep"] == 2
    assert [s["step"] for s in index["snapshots"]] == [7, 9]
    last = torch.load(averaged_run / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=False)
    assert last["callbacks"]["WeightSnapshots"]["kept"] == index["snapshots"], "resume reads the list from last.ckpt"
    snapshot_file = torch.load(snapshot(averaged_run, 9), map_location="cpu", weights_only=True)
    assert "optimizer_states" not in snapshot_file and "callbacks" not in snapshot_file  # weights only

    # average.ckpt is the mean of the two snapshots, not best.ckpt's weights
    averaged = averaged_run / "checkpoints" / "average.ckpt"
    assert average["checkpoint"] == str(averaged)
    assert_bit_identical(weights(averaged), average_state_dicts([weights(snapshot(averaged_run, s)) for s in (7, 9)]))
    best = weights(averaged_run / "checkpoints" / "best.ckpt")
    assert any(not torch.equal(best[key], value) for key, value in weights(averaged).items())

    # its validation is recorded beside best_val and nowhere on the curve; the test scores the weights validation
    # prefers, and zoo predict's default (--checkpoint tested) is those
    val, hypotheses = evaluate(averaged_run, averaged)
    assert average["val"] == val and record["best_val"] is not None
    assert average["tested"] == (val["bleu"] >= record["best_val"])
    if not average["tested"]:
        _, hypotheses = evaluate(averaged_run, averaged_run / "checkpoints" / "best.ckpt")
    assert (averaged_run / "test_hypotheses.txt").read_text().splitlines() == hypotheses
    rows = (averaged_run / "metrics.csv").read_text().splitlines()
    column = rows[0].split(",").index("val/loss")
    assert sum(1 for row in rows[1:] if row.split(",")[column]) == 4, "the average's validation is not a curve point"


def test_a_resumed_run_keeps_its_snapshots_and_averages_as_the_straight_run(averaged_run, tmp_path):
    run_dir = tmp_path / "run"
    fork_zoo("train", *run_args(epochs=1), f"hydra.run.dir={run_dir}", cwd=tmp_path)
    assert [s["step"] for s in summary(run_dir)["average"]["snapshots"]] == [2, 4]
    fork_zoo("train", f"resume={run_dir}", "trainer.max_epochs=2", cwd=tmp_path)
    straight, resumed = summary(averaged_run), summary(run_dir)
    assert resumed["resumes"] and resumed["status"] == "finished"
    assert {**resumed["average"], "checkpoint": None} == {**straight["average"], "checkpoint": None}
    assert resumed["test"] == straight["test"]
    assert_bit_identical(
        weights(run_dir / "checkpoints" / "average.ckpt"), weights(averaged_run / "checkpoints" / "average.ckpt")
    )
    assert sorted(p.name for p in (run_dir / "checkpoints" / "snapshots").glob("step-*")) == [
        snapshot(run_dir, s).name for s in (7, 9)
    ]


# -------------------------------------------------------------------------------------------- zoo average


def test_zoo_average_writes_a_checkpoint_zoo_predict_reads(averaged_run, tmp_path):
    both = tmp_path / "both.ckpt"
    files = [str(snapshot(averaged_run, s)) for s in (7, 9)]
    said = fork_zoo("average", *files, "--out", str(both), cwd=tmp_path).stdout
    assert said.startswith(f"wrote {both}: the mean of 2 checkpoints (steps 7, 9)")
    assert_bit_identical(weights(both), weights(averaged_run / "checkpoints" / "average.ckpt"))

    newest = tmp_path / "newest.ckpt"
    fork_zoo("average", str(averaged_run), "--last", "1", "--out", str(newest), cwd=tmp_path)
    assert_bit_identical(weights(newest), weights(snapshot(averaged_run, 9)))

    sentence = "the dog sees the cat"
    by_file = fork_zoo("predict", str(averaged_run), "--checkpoint", str(both), sentence, cwd=tmp_path).stdout
    by_default = fork_zoo("predict", str(averaged_run), sentence, cwd=tmp_path).stdout  # the weights it tested
    tested = str(both) if summary(averaged_run)["average"]["tested"] else "best"
    by_tested = fork_zoo("predict", str(averaged_run), "--checkpoint", tested, sentence, cwd=tmp_path).stdout
    assert by_default == by_tested and by_file.strip()
    assert not list(tmp_path.glob("*.partial")) and not list(averaged_run.rglob("*.partial"))


def another_model(here: Path, run_dir: Path) -> None:
    """A copy of a snapshot that says it was trained with another encoder width."""
    checkpoint = torch.load(snapshot(run_dir, 9), map_location="cpu", weights_only=True)
    checkpoint["hyper_parameters"]["cfg"]["encoder"]["hidden_size"] = 64
    torch.save(checkpoint, here / "other.ckpt")


def another_seed(here: Path, run_dir: Path) -> None:
    """A copy of a snapshot that says it was trained from another seed: another run's weights."""
    checkpoint = torch.load(snapshot(run_dir, 9), map_location="cpu", weights_only=True)
    checkpoint["hyper_parameters"]["cfg"]["seed"] = 7
    torch.save(checkpoint, here / "seed7.ckpt")


def truncated(here: Path, run_dir: Path) -> None:
    (here / "cut.ckpt").write_bytes(snapshot(run_dir, 9).read_bytes()[:5000])


def run_without_snapshots(here: Path, run_dir: Path) -> None:
    (here / "plain").mkdir()
    shutil.copy(run_dir / "config.yaml", here / "plain" / "config.yaml")


def users_file(here: Path, run_dir: Path) -> None:
    (here / "mine.ckpt").write_bytes(b"the user's own")


SNAP7, SNAP9 = "{run}/checkpoints/snapshots/step-00000007.ckpt", "{run}/checkpoints/snapshots/step-00000009.ckpt"


@pytest.mark.parametrize(
    "args, says, files",
    [
        (["{run}", "--last", "3"], "kept 2 snapshots (steps 7, 9: it trained with trainer.average_last=2)", None),
        (["{run}", "--best", "5", "--out", "x.ckpt"], "give --best 2 or fewer", None),
        (["plain"], "kept no weight snapshots", run_without_snapshots),
        ([SNAP7, SNAP9, "--out", "mine.ckpt"], "mine.ckpt exists; add --force", users_file),
        ([SNAP7, "cut.ckpt", "--out", "x.ckpt"], "cut.ckpt cannot be loaded", truncated),
        ([SNAP7, "other.ckpt", "--out", "x.ckpt"], "encoder.hidden_size=64 vs 32", another_model),
        ([SNAP7, "seed7.ckpt", "--out", "x.ckpt"], "different training runs (seed=7 vs 1234)", another_seed),
        ([SNAP7, SNAP9, "--last", "2", "--out", "x.ckpt"], "--last chooses among a run's kept snapshots", None),
        ([SNAP7, "--out", "x.ckpt"], "averages to itself", None),
        ([SNAP7, SNAP9], "give --out FILE", None),
        ([SNAP7, SNAP9, "--out", "nowhere/x.ckpt"], "there is no folder nowhere", None),
        (["nothing.ckpt", SNAP9, "--out", "x.ckpt"], "nothing.ckpt is neither a run directory", None),
        (["{run}", "--last", "0"], "0 must be >= 1", None),
    ],
    ids=[
        "more-than-kept",
        "best-more-than-kept",
        "no-snapshots",
        "users-file",
        "corrupt",
        "other-model",
        "other-seed",
        "last-with-files",
        "one-file",
        "no-out",
        "no-folder",
        "missing-file",
        "zero",
    ],
)
def test_zoo_average_refuses_in_one_line_and_writes_nothing(averaged_run, tmp_path, args, says, files):
    if files is not None:
        files(tmp_path, averaged_run)
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    run_files = sorted(averaged_run.rglob("*"))
    proc = fork_zoo("average", *[arg.format(run=averaged_run) for arg in args], cwd=tmp_path, check=False)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode in (1, 2) and len(lines) == 1 and lines[0].startswith("zoo: error: "), proc.stderr
    assert says in lines[0], lines[0]
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before
    assert sorted(averaged_run.rglob("*")) == run_files, "a file appeared in the run"


def test_zoo_average_replaces_a_file_only_when_forced(averaged_run, tmp_path):
    mine = tmp_path / "mine.ckpt"
    mine.write_bytes(b"the user's own")
    fork_zoo("average", str(averaged_run), "--out", str(mine), "--force", cwd=tmp_path)
    assert_bit_identical(weights(mine), weights(averaged_run / "checkpoints" / "average.ckpt"))
