"""The ``recall`` dataset: associative recall labels the value of the queried key, selective copying writes out
the data tokens in order; sizes, determinism and the settings' limits."""

import pytest

from zoo import registry
from zoo.config.checks import ConfigError
from zoo.registry import discovery

discovery.discover()

SMALL = {"train_size": 200, "val_size": 20, "test_size": 20, "length": 40, "pairs": 6, "vocab_size": 16}


def splits(**overrides):
    cfg = registry.default_config("dataset", "recall", **{**SMALL, **overrides})
    return registry.build("dataset", cfg).splits()


def test_the_label_is_the_value_stored_with_the_queried_key():
    for items in splits().values():
        for item in items:
            tokens = item.source.split()
            assert len(tokens) == 40
            keys, values = tokens[0:12:2], tokens[1:12:2]
            assert all(k.startswith("k") for k in keys) and all(v.startswith("v") for v in values)
            assert len(set(keys)) == 6, "the keys of one sequence differ"
            assert set(tokens[12:-1]) == {"."}, "filler between the pairs and the query"
            assert item.references == (dict(zip(keys, values))[tokens[-1]],)


def test_scattered_pairs_stand_at_random_places_each_key_before_its_value():
    places = set()
    for item in splits(scatter=True)["train"]:
        tokens = item.source.split()
        starts = [i for i, t in enumerate(tokens[:-1]) if t.startswith("k")]
        assert len(tokens) == 40 and len(starts) == 6 and all(i % 2 == 0 for i in starts)
        pairs = {tokens[i]: tokens[i + 1] for i in starts}
        assert all(v.startswith("v") for v in pairs.values()) and tokens.count(".") == 27
        assert item.references == (pairs[tokens[-1]],)
        places.add(tuple(starts))
    assert len(places) > 150, "the places differ from sequence to sequence"


def test_keys_and_values_come_from_half_the_vocabulary_each():
    tokens = {token for item in splits()["train"] for token in item.source.split()} - {"."}
    assert {t for t in tokens if t.startswith("k")} == {f"k{i}" for i in range(8)}
    assert {t for t in tokens if t.startswith("v")} == {f"v{i}" for i in range(8)}


def test_selective_copying_writes_the_data_tokens_in_order():
    for item in splits(mode="selective_copying", copies=5)["train"]:
        tokens = item.source.split()
        data = [t for t in tokens if t != "."]
        assert len(tokens) == 40 and len(data) == 5
        assert item.references == (" ".join(data),)


def test_the_same_settings_give_the_same_sequences_and_each_split_its_own():
    data = splits(seed=5)
    assert data == splits(seed=5) and data["train"] != splits(seed=6)["train"]
    assert [i.source for i in data["val"]] != [i.source for i in data["train"][:20]]
    assert splits(seed=5, train_size=300)["test"] == data["test"], "val/test do not follow the train size"


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"pairs": 9, "vocab_size": 16}, "distinct keys"),
        ({"pairs": 6, "length": 12}, "2 \\* pairs \\+ 1"),
        ({"mode": "selective_copying", "copies": 41}, "must hold the copies"),
        ({"mode": "copying"}, "must be one of: associative_recall, selective_copying"),
    ],
)
def test_settings_that_cannot_work_are_refused_when_configured(settings, message):
    with pytest.raises(ConfigError, match=message):
        registry.build("dataset", registry.default_config("dataset", "recall", **{**SMALL, **settings}))
