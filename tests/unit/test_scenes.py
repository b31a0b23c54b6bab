"""The ``scenes`` dataset: seeded images of coloured shapes with captions about count, kind and place."""

import random

import numpy as np
import pytest

from zoo import registry
from zoo.config.checks import ConfigError
from zoo.contracts import ImageSource
from zoo.registry import discovery
from zoo_plugins.datasets.scenes import (
    BACKGROUND,
    COLOURS,
    MAX_REFERENCES,
    PLURALS,
    SceneError,
    Thing,
    describe,
    random_layout,
    render,
)

discovery.discover()

SMALL = {"train_size": 60, "val_size": 20, "test_size": 20}


def build(**overrides):
    return registry.build("dataset", registry.default_config("dataset", "scenes", **{**SMALL, **overrides}))


def splits(**overrides):
    return build(**overrides).splits()


def pixels_and_captions(data):
    return {
        split: [(item.id, item.source.key, item.source.pixels.tobytes(), item.references) for item in items]
        for split, items in data.items()
    }


def test_registered_as_an_image_dataset():
    assert registry.get("dataset", "scenes").cls.source_kind == "image"


def test_same_config_same_data_other_seed_other_data():
    assert pixels_and_captions(splits(seed=3)) == pixels_and_captions(splits(seed=3))
    other = pixels_and_captions(splits(seed=4))["train"]
    assert all(a[2] != b[2] for a, b in zip(pixels_and_captions(splits(seed=3))["train"], other))


def test_an_item_does_not_depend_on_the_split_sizes():
    small, large = splits(), splits(train_size=80, val_size=5)
    assert pixels_and_captions(small)["test"] == pixels_and_captions(large)["test"]
    assert pixels_and_captions(small)["train"] == pixels_and_captions(large)["train"][:60]


def test_sizes_ids_and_keys():
    data = splits()
    assert {split: len(items) for split, items in data.items()} == {"train": 60, "val": 20, "test": 20}
    assert data["val"][7].id == "val-00007"
    assert data["val"][7].source.key == "scenes-seed0-64px-noise6-objects1to3/val-00007"
    keys = [item.source.key for items in data.values() for item in items]
    assert len(set(keys)) == len(keys)


def test_images_are_uint8_rgb_of_the_configured_size():
    for size in (64, 40):
        item = splits(image_size=size)["train"][0]
        assert isinstance(item.source, ImageSource) and item.source.path is None
        assert item.source.pixels.shape == (size, size, 3) and item.source.pixels.dtype == np.uint8


def test_splits_share_no_image():
    data = splits(train_size=300, val_size=100, test_size=100)
    images = [item.source.pixels.tobytes() for items in data.values() for item in items]
    assert len(set(images)) == len(images)


def test_references_count_canonical_first_and_all_different():
    for count in (1, 3, MAX_REFERENCES):
        for index, item in enumerate(splits(references=count)["train"]):
            assert len(item.references) == len(set(item.references)) == count
            captions = describe(random_layout(random.Random(f"0:train:{index}")))  # the layout item() draws
            assert item.references[0] == captions[0] and set(item.references) <= set(captions)
            assert all(ref == ref.lower() and ref.replace(" ", "").isalpha() for ref in item.references)


def content_words(caption):
    """The words that carry the scene's content (counts, sizes, colours, shapes), as a multiset."""
    content = {"a", "one", "two", "three", "small", "big", *COLOURS, *PLURALS, *PLURALS.values()}
    return sorted(w for w in caption.split() if w in content and w != "one")  # "one" also opens "one in the top left"


def test_paraphrases_name_the_same_things():
    layouts = [random_layout(random.Random(i)) for i in range(300)]
    for things in layouts:
        captions = describe(things)
        assert len(captions) >= MAX_REFERENCES and len(set(captions)) == len(captions)
        assert all(content_words(c) == content_words(captions[0]) for c in captions)


def test_one_object_is_placed_in_the_image():
    captions = describe([Thing("triangle", "green", "big", row=0, column=0)])
    assert captions[0] == "a big green triangle in the top left"
    assert "a big green triangle in the top left corner" in captions
    assert "in the top left there is a big green triangle" in captions
    assert describe([Thing("cross", "blue", "small", 1, 2)])[0] == "a small blue cross on the right"
    assert describe([Thing("circle", "white", "big", 1, 1)])[0] == "a big white circle in the middle"


def test_identical_objects_are_counted_and_placed():
    pair = [Thing("circle", "red", "small", 2, 1), Thing("circle", "red", "small", 0, 0)]
    captions = describe(pair)
    assert captions[0] == "two small red circles in the top left and at the bottom"
    assert "there are two small red circles one at the bottom and one in the top left" in captions
    trio = [Thing("square", "blue", "big", 0, c) for c in range(3)]
    assert describe(trio)[0] == "three big blue squares in the top left at the top and in the top right"


def test_two_groups_are_related_by_their_centres():
    circles = [Thing("circle", "red", "small", 0, 0), Thing("circle", "red", "small", 2, 0)]
    square = Thing("square", "blue", "big", 1, 2)
    captions = describe([square, *circles])
    assert captions[0] == "two small red circles left of a big blue square"  # the left group comes first
    assert "a big blue square to the right of two small red circles" in captions
    assert "there are two small red circles to the left of a big blue square" in captions
    assert describe([Thing("cross", "white", "small", 2, 2), Thing("cross", "white", "big", 0, 2)])[0] == (
        "a big white cross above a small white cross"
    )
    diagonal = describe([Thing("triangle", "green", "small", 2, 1), Thing("triangle", "white", "small", 1, 0)])
    assert diagonal[0] == "a small white triangle above and left of a small green triangle"
    assert "a small green triangle below and to the right of a small white triangle" in diagonal


def test_one_object_between_a_pair():
    things = [
        Thing("circle", "red", "small", 1, 0),
        Thing("square", "blue", "big", 1, 1),
        Thing("circle", "red", "small", 1, 2),
    ]
    captions = describe(things)
    assert captions[0] == "a big blue square between two small red circles"
    assert "two small red circles with a big blue square between them" in captions


def test_three_different_objects_in_order_or_around_a_corner():
    red, blue, green = ("circle", "red", "big"), ("square", "blue", "small"), ("cross", "green", "big")
    in_a_row = [Thing(*green, 2, 2), Thing(*red, 0, 0), Thing(*blue, 1, 1)]
    captions = describe(in_a_row)
    assert captions[0] == "from left to right a big red circle a small blue square and a big green cross"
    assert "from right to left a big green cross a small blue square and a big red circle" in captions
    assert "from top to bottom a big red circle a small blue square and a big green cross" in captions
    in_a_column = [Thing(*red, 0, 1), Thing(*blue, 1, 0), Thing(*green, 2, 0)]
    assert describe(in_a_column)[0] == "from top to bottom a big red circle a small blue square and a big green cross"
    corner = [Thing(*red, 0, 0), Thing(*blue, 0, 2), Thing(*green, 1, 0)]
    captions = describe(corner)
    assert captions[0] == "a big red circle left of a small blue square and above a big green cross"
    assert "a big red circle above a big green cross and to the left of a small blue square" in captions


def test_render_draws_each_object_in_its_cell_in_its_colour():
    things = [Thing("square", "red", "big", 0, 0), Thing("circle", "blue", "small", 2, 2)]
    image = render(things, image_size=63)  # 21-pixel cells, objects centred, no noise
    assert tuple(image[10, 10]) == COLOURS["red"]  # centre of the top-left cell
    assert tuple(image[52, 52]) == COLOURS["blue"]  # centre of the bottom-right cell
    assert (image[21:42] == BACKGROUND).all() and (image[:, 21:42] == BACKGROUND).all()  # the middle cells are empty
    big, small = (image == COLOURS["red"]).all(-1).sum(), (image == COLOURS["blue"]).all(-1).sum()
    assert big > 2 * small > 0


def test_render_is_exact_and_noise_is_seeded():
    things = [Thing("triangle", "yellow", "big", 1, 1)]
    assert np.array_equal(render(things, noise=6, noise_seed=1), render(things, noise=6, noise_seed=1))
    assert not np.array_equal(render(things, noise=6, noise_seed=1), render(things, noise=6, noise_seed=2))
    spread = render(things, noise=6, noise_seed=1).astype(int)[:10, :10] - BACKGROUND
    assert spread.min() >= -6 and spread.max() <= 6 and spread.std() > 1


def test_impossible_layouts_are_rejected():
    with pytest.raises(SceneError, match="share a cell"):
        describe([Thing("circle", "red", "big", 0, 0), Thing("square", "red", "big", 0, 0)])
    with pytest.raises(SceneError, match="1 to 3 objects"):
        describe([Thing("circle", "red", "big", 0, c) for c in range(3)] + [Thing("circle", "red", "big", 1, 0)])
    with pytest.raises(ValueError, match="colour='pink'"):
        Thing("circle", "pink", "big", 0, 0)


def objects_named(caption):
    """How many objects a caption names: ``two small red circles left of a big blue square`` -> 3."""
    words = caption.split()
    numbers = {"a": 1, "two": 2, "three": 3}
    return sum(numbers[w] for w, after in zip(words, words[1:]) if w in numbers and after in ("small", "big"))


def test_object_counts_follow_the_config():
    for low, high in ((1, 1), (2, 2), (3, 3), (1, 3)):
        counts = {objects_named(item.references[0]) for item in splits(min_objects=low, max_objects=high)["train"]}
        assert counts == set(range(low, high + 1))


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"train_size": 0}, "train_size=0 must be >= 1"),
        ({"image_size": 16}, "image_size=16 must be >= 32"),
        ({"max_objects": 4}, "max_objects=4 must be in \\[1, 3\\]"),
        ({"min_objects": 0}, "min_objects=0 must be in \\[1, 3\\]"),
        ({"min_objects": 3, "max_objects": 2}, "max_objects=2 must be >= min_objects=3"),
        ({"references": 6}, "references=6 must be in \\[1, 5\\]"),
        ({"noise": -1}, "noise=-1 must be in \\[0, 64\\]"),
    ],
)
def test_bad_settings_are_rejected_naming_the_field(overrides, message):
    with pytest.raises(ConfigError, match=message):
        build(**overrides)
