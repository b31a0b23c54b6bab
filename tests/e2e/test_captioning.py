"""The captioning task end to end: training on scenes, captions and attention pictures, features."""

from __future__ import annotations

import json

import pytest
from helpers import fork_zoo
from helpers.runs import CAPTION_TINY, NARROW_ENCODERS
from PIL import Image

import zoo.config.schema  # noqa: F401  (stores the schema)
from zoo.registry import discovery

pytestmark = pytest.mark.slow


@pytest.mark.xdist_group("caption_run")  # the session's run: made once, on the worker of all its users
def test_a_captioning_run_reports_caption_metrics_and_samples(caption_run):
    summary = json.loads((caption_run / "summary.json").read_text())
    assert summary["status"] == "finished" and summary["monitor"] == "cider_d"
    assert {"bleu1", "bleu4", "cider_d", "rouge_l"} <= set(summary["test"])
    items = [json.loads(line) for line in (caption_run / "test_items.jsonl").read_text().splitlines()]
    assert len(items) == 6 and all(len(item["references"]) > 1 for item in items), (
        "every reference of an image is scored"
    )


@pytest.mark.xdist_group("caption_run")
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
