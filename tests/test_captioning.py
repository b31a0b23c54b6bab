"""The captioning task end to end: its defaults, training on scenes, captions and attention pictures, features."""

from __future__ import annotations

import json

import pytest
from conftest import fork_zoo
from hydra import compose, initialize_config_module
from PIL import Image

import zoo.config.schema  # noqa: F401  (stores the schema)
from zoo.config.validate import validate
from zoo.data.sampling import DataError
from zoo.registry import discovery

# Seconds-long captioning runs: a few tiny scenes, a tiny CNN and decoder, one epoch.
CAPTION_TINY = [
    "task=captioning",
    "dataset.train_size=40",
    "dataset.val_size=6",
    "dataset.test_size=6",
    "frontend.dim=32",
    "decoder.hidden_size=32",
    "decoder.embed_dim=32",
    "trainer.max_epochs=1",
    "trainer.enable_progress_bar=false",
    "samples=2",
    "latency_items=2",
]


def composed(*overrides: str):
    discovery.discover()
    with initialize_config_module("zoo.conf", version_base="1.3"):
        return compose("config", overrides=list(overrides))


def test_task_captioning_brings_scenes_a_cnn_and_no_encoder_unless_told_otherwise():
    cfg = composed("task=captioning")
    assert (cfg.dataset.name, cfg.frontend.name, cfg.encoder.name) == ("scenes", "cnn", "identity")
    cfg = composed("task=captioning", "frontend=patches", "encoder=gru")
    assert (cfg.dataset.name, cfg.frontend.name, cfg.encoder.name) == ("scenes", "patches", "gru")
    assert composed().dataset.name == "synthetic", "translation keeps its own defaults"


def test_a_frontend_the_task_cannot_feed_is_refused_at_validation():
    with pytest.raises(DataError, match="frontend 'tokens' reads tokens but task 'captioning' gives image or features"):
        validate(composed("task=captioning", "frontend=tokens"))


def test_frontend_features_without_a_features_file_is_refused_at_validation():
    with pytest.raises(ValueError, match="set task.features=PATH"):
        validate(composed("task=captioning", "frontend=features"))


@pytest.fixture(scope="module")
def caption_run(tmp_path_factory):
    work = tmp_path_factory.mktemp("captioning")
    fork_zoo("train", *CAPTION_TINY, f"hydra.run.dir={work / 'run'}", cwd=work)
    return work / "run"


def test_a_captioning_run_reports_caption_metrics_and_samples(caption_run):
    summary = json.loads((caption_run / "summary.json").read_text())
    assert summary["status"] == "finished" and summary["monitor"] == "cider_d"
    assert {"bleu1", "bleu4", "cider_d", "rouge_l"} <= set(summary["test"])
    items = [json.loads(line) for line in (caption_run / "test_items.jsonl").read_text().splitlines()]
    assert len(items) == 6 and all(len(item["references"]) > 1 for item in items), (
        "every reference of an image is scored"
    )


def test_zoo_caption_and_zoo_attention_read_image_files(caption_run, tmp_path):
    from zoo_plugins.datasets.scenes import ScenesDataset

    scene = ScenesDataset(ScenesDataset.Config())
    image = tmp_path / "scene.png"
    Image.fromarray(scene.item("test", 0).source.pixels).save(image)
    out = fork_zoo("caption", str(caption_run), str(image), cwd=tmp_path).stdout.strip().split("\t")
    assert out[0] == str(image) and out[1], "one line per image: the file, a tab, its caption"
    printed = fork_zoo("attention", str(caption_run), str(image), cwd=tmp_path).stdout
    pictures = sorted((caption_run / "attention").rglob("*.png"))
    assert "wrote" in printed and any(p.name == "caption.png" for p in pictures)
    assert len(pictures) == len(out[1].split()) + 2, "one picture per word and the end of sentence, plus the overview"


def test_features_extracted_once_train_a_captioner(tmp_path):
    features = tmp_path / "scenes.npy"
    sizes = ["dataset.train_size=20", "dataset.val_size=4", "dataset.test_size=4", "task.image_size=64"]
    fork_zoo("features", str(features), "frontend=pretrained", *sizes, "--dtype", "float32", cwd=tmp_path)
    index = json.loads((tmp_path / "scenes.index.json").read_text())
    assert (index["images"], index["grid"], index["feature_dim"], index["dtype"]) == (28, [2, 2], 1280, "float32")
    assert index["made_by"]["frontend"]["name"] == "pretrained" and index["made_by"]["image_size"] == 64
    again = fork_zoo("features", str(features), "frontend=pretrained", *sizes, cwd=tmp_path, check=False)
    assert again.returncode != 0 and "already exists" in again.stderr
    tiny = [o for o in CAPTION_TINY if not o.startswith("dataset.")] + sizes
    fork_zoo(
        "train",
        *tiny,
        "frontend=features",
        f"task.features={features}",
        f"hydra.run.dir={tmp_path / 'run'}",
        cwd=tmp_path,
    )
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["status"] == "finished" and summary["components"]["frontend"]["name"] == "features"
    key = json.loads((tmp_path / "run" / "test_items.jsonl").read_text().splitlines()[0])["source"].split()[-1]
    named_by_path = fork_zoo("caption", str(tmp_path / "run"), f"/anywhere/{key}", cwd=tmp_path).stdout
    assert named_by_path.split("\t")[1].strip(), "a features run finds an image of its file by the path's tail"
    unknown = fork_zoo("caption", str(tmp_path / "run"), "/anywhere/else.jpg", cwd=tmp_path, check=False)
    assert unknown.returncode != 0 and "no precomputed features for image" in unknown.stderr


# Encoders whose defaults are wide enough to take seconds a batch, and their narrow settings (each trains alone).
NARROW_ENCODERS = {"transformer": ["encoder.d_model=32", "encoder.heads=2", "encoder.ff_dim=64", "encoder.layers=1"]}


def test_every_encoder_reads_an_image_grid(tmp_path):
    discovery.discover()
    from zoo.registry import names

    few = [
        "dataset.train_size=16",
        "dataset.val_size=2",
        "dataset.test_size=2",
        "trainer.limit_train_batches=2",
        "trainer.limit_val_batches=1",
        "test=false",  # reading the grid is the point: training and validation show it, testing adds nothing
    ]
    tiny = [override for override in CAPTION_TINY if not override.startswith("dataset.")]
    at_defaults = [name for name in names("encoder") if name not in NARROW_ENCODERS]
    sweeps = {"sweep": [f"encoder={','.join(at_defaults)}"]}
    sweeps |= {name: [f"encoder={name}", *sizes] for name, sizes in NARROW_ENCODERS.items() if name in names("encoder")}
    for folder, overrides in sweeps.items():
        fork_zoo("train", "-m", *tiny, *few, *overrides, f"hydra.sweep.dir={tmp_path / folder}", cwd=tmp_path)
    finished = {
        json.loads(p.read_text())["components"]["encoder"]["name"]
        for p in tmp_path.glob("*/*/summary.json")
        if json.loads(p.read_text())["status"] == "finished"
    }
    assert finished == set(names("encoder"))
