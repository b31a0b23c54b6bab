"""Weights & Biases: one offline run per job, also in a sweep, with its own id (the one its summary.json names),
carrying what the W&B UI groups and filters by and the training curve.

wandb no longer ships a Python reader for its ``.wandb`` files (the writer is its Go core), so
``wandb_records`` reads them here: a LevelDB-style log (32 KiB blocks of length-prefixed chunks
after a 7-byte ``:W&B`` header) of wandb's own protobuf ``Record`` messages.
"""

from __future__ import annotations

import csv
import json
import struct
import sys
import types
from pathlib import Path

import pytest
from helpers import TINY, fork_zoo
from omegaconf import OmegaConf

from zoo.run.layout import TRAIN_GRAD_NORM, TRAIN_LOSS, TRAIN_LR
from zoo.run.tracking import final_metrics, one_wandb_run_per_job, run_group

pytestmark = pytest.mark.slow

CURVE = (TRAIN_LOSS, TRAIN_LR, TRAIN_GRAD_NORM)

BLOCK, CHUNK_HEADER = 32 * 1024, 7
FULL, LAST = 1, 4


def wandb_records(path: Path) -> list:
    """Every record of an offline run's ``.wandb`` file, as wandb's protobuf messages."""
    from wandb.proto import wandb_internal_pb2

    data = path.read_bytes()
    assert data[:4] == b":W&B", f"{path} is not a .wandb file"
    records, pending, pos = [], b"", 7
    while pos + CHUNK_HEADER <= len(data):
        left_in_block = BLOCK - pos % BLOCK
        _crc, length, kind = struct.unpack("<IHB", data[pos : pos + CHUNK_HEADER])
        if left_in_block < CHUNK_HEADER or (kind == 0 and length == 0):  # the rest of the block is padding
            pos += left_in_block
            continue
        pending += data[pos + CHUNK_HEADER : pos + CHUNK_HEADER + length]
        pos += CHUNK_HEADER + length
        if kind in (FULL, LAST):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            records.append(record)
            pending = b""
    return records


def offline_run(job_dir: Path) -> dict:
    """What the job's only offline W&B run recorded: id, group, name, tags, config, history, summary, exit code."""
    (run_folder,) = (job_dir / "wandb").glob("offline-run-*")
    (log,) = run_folder.glob("*.wandb")
    run: dict = {"config": {}, "summary": {}, "history": [], "exit_code": None, "folder": run_folder}
    for record in wandb_records(log):
        kind = record.WhichOneof("record_type")
        if kind == "run":
            run.update(group=record.run.run_group, name=record.run.display_name, tags=list(record.run.tags))
            run["id"] = record.run.run_id
            run["config"].update({item.key: json.loads(item.value_json) for item in record.run.config.update})
        elif kind == "summary":
            run["summary"].update(
                {item.key or "/".join(item.nested_key): json.loads(item.value_json) for item in record.summary.update}
            )
        elif kind == "history":
            run["history"].append(
                {item.key or "/".join(item.nested_key): json.loads(item.value_json) for item in record.history.item}
            )
        elif kind == "exit":
            run["exit_code"] = record.exit.exit_code
    return run


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> Path:
    """A real 2-job sweep logged to W&B offline (the default without $WANDB_MODE), its training curve every step."""
    work = tmp_path_factory.mktemp("wandb")
    fork_zoo(
        "train",
        "-m",
        *TINY,
        "dataset.train_size=64",
        "dataset.val_size=8",
        "dataset.test_size=4",
        "trainer.log_every_n_steps=1",
        "logger=wandb",
        "logger.tags=[nightly]",
        "attention=additive,dot",
        f"hydra.sweep.dir={work / 'sweep'}",
        cwd=work,
        env={"WANDB_MODE": None},
    )
    return work / "sweep"


def test_each_job_of_a_sweep_gets_its_own_finished_run(sweep):
    for job, attention in (("0", "additive"), ("1", "dot")):
        run = offline_run(sweep / job)
        summary = json.loads((sweep / job / "summary.json").read_text())
        assert run["exit_code"] == 0, "the job's run must be finished when the job ends"
        assert run["group"] == str(sweep) and run["name"] == f"sweep/{job}"
        assert {f"attention={attention}", "encoder=gru", "decoder=rnn", "nightly"} <= set(run["tags"])
        assert run["config"]["attention.name"] == attention and run["config"]["encoder.hidden_size"] == 32
        assert run["config"]["config_key"] == summary["config_key"]
        assert run["summary"]["test/bleu"] == pytest.approx(summary["test"]["bleu"]["score"])
        assert run["summary"]["parameters/trainable"] == summary["parameters"]["trainable"]
        assert run["summary"]["latency_ms/beam"] == summary["latency_ms"]["beam"]
        (table,) = (run["folder"] / "files" / "media" / "table").glob("samples_*.table.json")
        rows = json.loads(table.read_text())
        first = [json.loads(line) for line in (sweep / job / "test_items.jsonl").read_text().splitlines()][:3]
        assert rows["columns"] == ["source", "references", "hypothesis"]
        assert [row[2] for row in rows["data"]] == [item["hypothesis"] for item in first]


def test_wandb_gets_the_config_once_and_flat(sweep):
    """Every key of config.yaml, dotted, and the config key, when the run starts; no later update adds the
    module's nested hyperparameters (``cfg``) as a second copy."""
    from zoo.run.identity import flat

    (log,) = (sweep / "0" / "wandb").glob("offline-run-*/*.wandb")
    updates = [record for record in wandb_records(log) if record.WhichOneof("record_type") == "config"]
    config = OmegaConf.to_container(OmegaConf.load(sweep / "0" / "config.yaml"))
    keys = {key for key in offline_run(sweep / "0")["config"] if not key.startswith("_")}  # not wandb's own
    later = [item.key or item.nested_key[0] for update in updates for item in update.config.update]
    assert keys == {*flat(config), "config_key"} and [key for key in later if not key.startswith("_")] == []


def test_each_job_logs_into_the_wandb_run_its_summary_names(sweep):
    ids = []
    for job in ("0", "1"):
        run, summary = offline_run(sweep / job), json.loads((sweep / job / "summary.json").read_text())
        assert run["id"] == summary["wandb_run_id"] and run["folder"].name.endswith(f"-{run['id']}")
        ids.append(run["id"])
    assert ids[0] != ids[1], "two jobs in one W&B run would overwrite each other once synced"


def test_the_wandb_history_holds_the_training_curve_of_metrics_csv(sweep):
    for job in ("0", "1"):
        with open(sweep / job / "metrics.csv", newline="") as file:
            rows = [row for row in csv.DictReader(file) if row[TRAIN_LOSS]]
        curve = {int(row["step"]): [float(row[name]) for name in CURVE] for row in rows}
        logged = {
            entry["trainer/global_step"]: [entry[name] for name in CURVE]
            for entry in offline_run(sweep / job)["history"]
            if TRAIN_LOSS in entry
        }
        assert len(curve) >= 2 and logged == curve


def test_a_failed_job_finishes_its_run_as_failed(monkeypatch):
    finished = []
    fake_run = types.SimpleNamespace(finish=lambda exit_code: finished.append(exit_code))
    monkeypatch.setitem(sys.modules, "wandb", types.SimpleNamespace(run=fake_run))
    with pytest.raises(RuntimeError), one_wandb_run_per_job():
        raise RuntimeError("diverged")
    with one_wandb_run_per_job():
        pass
    assert finished == [1, 0]


def test_the_users_group_wins():
    assert run_group(OmegaConf.create({"logger": {"group": "ablation-3"}})) == "ablation-3"


def test_final_metrics_are_the_numbers_a_comparison_sorts_by():
    summary = {
        "monitor": "bleu",
        "test": {"bleu": {"score": 20.5, "higher_is_better": True}},
        "best_val": 19.0,
        "parameters": {"trainable": 10, "frozen": 2},
        "latency_ms": {"greedy": 1.5, "beam": None},
        "train_seconds": 3.0,
        "tokens_per_second": None,
        "decode": "greedy",
    }
    assert final_metrics(summary) == {
        "test/bleu": 20.5,
        "best_val/bleu": 19.0,
        "parameters/trainable": 10,
        "parameters/frozen": 2,
        "latency_ms/greedy": 1.5,
        "train_seconds": 3.0,
    }
