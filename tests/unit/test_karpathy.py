"""The ``karpathy`` dataset: Karpathy split files (Flickr/COCO style) over a tiny generated image folder."""

import json
import logging

import pytest
from PIL import Image

from zoo import registry
from zoo.config.checks import ConfigError
from zoo.contracts import ImageSource
from zoo_plugins.datasets.karpathy import KarpathyDataset, SplitFileError  # importing it registers the dataset


def sentence(raw):
    return {"raw": raw, "tokens": raw.lower().replace(".", "").split()}


def entry(filename, split, *raws, filepath=None):
    image = {"filename": filename, "split": split, "sentences": [sentence(raw) for raw in raws or ("A thing .",)]}
    if filepath is not None:
        image["filepath"] = filepath
    return image


FLICKR = [
    entry("a.jpg", "train", "A Dog runs .", "  A dog   running on grass "),
    entry("b.jpg", "val", "A cat sleeps ."),
    entry("c.jpg", "test", "Two men talk ."),
    entry("d.jpg", "train", "A red car ."),
]


def write_image(path, fmt="JPEG"):
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (8, 6), (200, 30, 10)).save(path, fmt)


def make(tmp_path, images=FLICKR, write=True):
    """A split file and its images under tmp_path/images; returns (split file, image root)."""
    root = tmp_path / "images"
    root.mkdir(exist_ok=True)
    if write:
        for image in images:
            write_image(root / image.get("filepath", "") / image["filename"])
    split_file = tmp_path / "dataset.json"
    split_file.write_text(json.dumps({"dataset": "tiny", "images": images}), encoding="utf-8")
    return split_file, root


def splits(split_file, root, **overrides):
    cfg = registry.default_config("dataset", "karpathy", split_file=str(split_file), images=str(root), **overrides)
    return registry.build("dataset", cfg).splits()


def ids(items):
    return [item.id for item in items]


def test_is_an_image_dataset():
    assert registry.get("dataset", "karpathy").cls is KarpathyDataset
    assert KarpathyDataset.source_kind == "image"


def test_parses_entries_without_filepath(tmp_path):
    split_file, root = make(tmp_path)
    data = splits(split_file, root)
    assert {split: ids(items) for split, items in data.items()} == {
        "train": ["a.jpg", "d.jpg"],
        "val": ["b.jpg"],
        "test": ["c.jpg"],
    }
    source = data["train"][0].source
    assert isinstance(source, ImageSource) and source.key == "a.jpg"
    assert source.path == str(root / "a.jpg") and source.pixels is None


def test_parses_coco_entries_with_filepath(tmp_path):
    images = [
        entry("x.jpg", "train", filepath="train2014"),
        entry("x.jpg", "val", filepath="val2014"),
        entry("y.jpg", "test", filepath="val2014"),
    ]
    split_file, root = make(tmp_path, images)
    data = splits(split_file, root)
    assert ids(data["train"]) == ["train2014/x.jpg"] and ids(data["val"]) == ["val2014/x.jpg"]
    assert data["test"][0].source.key == "val2014/y.jpg"
    assert data["test"][0].source.path == str(root / "val2014" / "y.jpg")


def test_restval_joins_training_or_is_dropped(tmp_path, caplog):
    images = [
        entry("t.jpg", "train"),
        entry("r.jpg", "restval", filepath="val2014"),
        entry("u.jpg", "train"),
        entry("v.jpg", "val"),
        entry("w.jpg", "test"),
    ]
    split_file, root = make(tmp_path, images)
    assert ids(splits(split_file, root)["train"]) == ["t.jpg", "val2014/r.jpg", "u.jpg"], "file order, restval included"
    with caplog.at_level(logging.INFO):
        assert ids(splits(split_file, root, restval=False)["train"]) == ["t.jpg", "u.jpg"]
    assert "dropped 1 restval images" in caplog.text


def test_token_captions_by_default_raw_on_request(tmp_path):
    split_file, root = make(tmp_path)
    assert splits(split_file, root)["train"][0].references == ("a dog runs", "a dog running on grass")
    raw = splits(split_file, root, captions="raw")["train"][0].references
    assert raw == ("A Dog runs .", "A dog   running on grass")


def test_tokens_are_lower_cased(tmp_path):
    image = entry("a.jpg", "train")
    image["sentences"] = [{"raw": "x", "tokens": ["A", "Dog", ""]}]
    split_file, root = make(tmp_path, [image, entry("b.jpg", "val"), entry("c.jpg", "test")])
    assert splits(split_file, root)["train"][0].references == ("a dog",)


def test_missing_image_names_the_file(tmp_path):
    split_file, root = make(tmp_path)
    (root / "d.jpg").unlink()
    with pytest.raises(SplitFileError) as error:
        splits(split_file, root)
    message = str(error.value)
    assert message.startswith(f"missing image {root / 'd.jpg'} (train split of {split_file})")
    assert "dataset.on_missing=skip" in message and "\n" not in message


def test_skip_drops_missing_and_unreadable_images_and_counts_them(tmp_path, caplog):
    split_file, root = make(tmp_path, FLICKR + [entry("e.jpg", "val")])
    (root / "a.jpg").unlink()
    (root / "d.jpg").write_bytes(b"\x00not an image at all")
    (root / "b.jpg").unlink()
    with caplog.at_level(logging.WARNING):
        with pytest.raises(SplitFileError, match=r"the train split has no readable images .*\(2 skipped\)"):
            splits(split_file, root, on_missing="skip")
    assert "train split: skipped 2 images (1 missing, 1 unreadable)" in caplog.text
    write_image(root / "d.jpg")
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        data = splits(split_file, root, on_missing="skip")
    assert ids(data["train"]) == ["d.jpg"] and ids(data["val"]) == ["e.jpg"]
    assert "val split: skipped 1 images (1 missing, 0 unreadable)" in caplog.text


@pytest.mark.parametrize("fmt, corrupt", [("JPEG", b"\x00\x01garbage"), ("PNG", None)])
def test_unreadable_image_is_an_error(tmp_path, fmt, corrupt):
    split_file, root = make(tmp_path)
    path = root / "b.jpg"
    if corrupt is None:  # a PNG whose pixel data was damaged after writing: the chunk checksum fails
        write_image(path, fmt)
        data = bytearray(path.read_bytes())
        data[-20] ^= 0xFF
        path.write_bytes(bytes(data))
    else:
        path.write_bytes(corrupt)
    with pytest.raises(SplitFileError, match=rf"^unreadable image {path} \(val split of .*dataset.on_missing=skip"):
        splits(split_file, root)


def test_malformed_json_names_file_line_and_column(tmp_path):
    split_file, root = make(tmp_path)
    split_file.write_text('{"images": [\n  {"filename": "a.jpg",,}\n]}', encoding="utf-8")
    with pytest.raises(SplitFileError, match=rf"^{split_file}:2:24: malformed JSON"):
        splits(split_file, root)


def test_missing_settings_and_files(tmp_path):
    split_file, root = make(tmp_path)
    with pytest.raises(SplitFileError, match="dataset.split_file is not set"):
        splits("", root)
    with pytest.raises(SplitFileError, match=f"missing split file {tmp_path / 'nope.json'}"):
        splits(tmp_path / "nope.json", root)
    with pytest.raises(SplitFileError, match="dataset.images is not set"):
        splits(split_file, "")
    with pytest.raises(SplitFileError, match="is not a folder"):
        splits(split_file, tmp_path / "nowhere")


def bad_entry(**changes):
    image = entry("a.jpg", "train")
    for key, value in changes.items():
        if value is None:
            del image[key]
        else:
            image[key] = value
    return image


@pytest.mark.parametrize(
    "images, message",
    [
        ({"dataset": "x"}, 'has no "images" list'),
        ([bad_entry(filename=None)], r"images\[0\] has no filename"),
        ([bad_entry(sentences=None)], r"images\[0\] \(a.jpg\) has no sentences"),
        ([bad_entry(sentences=[])], r"images\[0\] \(a.jpg\) has no sentences"),
        ([bad_entry(split="dev")], r"unknown split 'dev'; the split must be one of train, val, test, restval"),
        ([bad_entry(sentences=[{"raw": " ", "tokens": []}])], r"sentences\[0\]: the caption is empty"),
        ([bad_entry(sentences=[{"raw": "A dog ."}])], r"sentences\[0\] has no tokens list; .* dataset.captions=raw"),
        ([entry("a.jpg", "train"), entry("b.jpg", "test")], "has no val images"),
        (
            [entry("a.jpg", "train"), entry("a.jpg", "train"), entry("b.jpg", "val"), entry("c.jpg", "test")],
            "image a.jpg is listed twice in the train split",
        ),
    ],
)
def test_bad_split_file_is_a_one_line_error(tmp_path, images, message):
    split_file, root = make(tmp_path)
    body = images if isinstance(images, dict) else {"dataset": "x", "images": images}
    split_file.write_text(json.dumps(body), encoding="utf-8")
    with pytest.raises(SplitFileError, match=message) as error:
        splits(split_file, root)
    assert "\n" not in str(error.value)


def test_limits_take_the_first_images_in_file_order(tmp_path):
    images = [entry(f"t{i}.jpg", "train") for i in range(5)] + [
        entry("v0.jpg", "val"),
        entry("v1.jpg", "val"),
        entry("w.jpg", "test"),
    ]
    split_file, root = make(tmp_path, images)
    data = splits(split_file, root, max_train=3, max_val=1)
    assert ids(data["train"]) == ["t0.jpg", "t1.jpg", "t2.jpg"]
    assert ids(data["val"]) == ["v0.jpg"] and ids(data["test"]) == ["w.jpg"]
    (root / "t1.jpg").unlink()
    (root / "t4.jpg").unlink()  # beyond the limit: never checked
    assert ids(splits(split_file, root, max_train=3, on_missing="skip")["train"]) == ["t0.jpg", "t2.jpg", "t3.jpg"]


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"captions": "words"}, "captions='words' must be one of: tokens, raw"),
        ({"on_missing": "warn"}, "on_missing='warn' must be one of: error, skip"),
        ({"max_val": 0}, "max_val=0 must be >= 1; null keeps every image"),
    ],
)
def test_bad_settings(tmp_path, overrides, message):
    with pytest.raises(ConfigError, match=message):
        splits(*make(tmp_path), **overrides)
