"""The ``recall`` dataset: multi-query recall tags every query with its key's value (relabelled by code of its
own), at power-law gaps, beyond a frequency guess; associative recall labels the value of the queried key,
selective copying writes out the data tokens in order; sizes, determinism and the settings' limits."""

from collections import Counter

import pytest

from zoo import registry
from zoo.api.metrics import UNSCORED
from zoo.config.checks import ConfigError
from zoo.registry import discovery

discovery.discover()

SMALL = {
    "mode": "associative_recall",
    "train_size": 200,
    "val_size": 20,
    "test_size": 20,
    "length": 40,
    "pairs": 6,
    "vocab_size": 16,
}


def splits(**overrides):
    cfg = registry.default_config("dataset", "recall", **{**SMALL, **overrides})
    return registry.build("dataset", cfg).splits()


MQAR = {"mode": "multi_query", "length": 64, "pairs": 8, "key_vocab": 32, "value_vocab": 32}


def relabel(source: str, pairs: int, asked: list[int]) -> list[str]:
    """The answers at the ``asked`` positions worked out from the source alone: the value stored with the key
    there, the pairs opening the sequence (the filler may repeat a key, so the positions come from the tags)."""
    tokens = source.split()
    stored = dict(zip(tokens[0 : 2 * pairs : 2], tokens[1 : 2 * pairs : 2]))
    return [stored[tokens[position]] for position in asked]


def test_multi_query_tags_every_key_once_with_its_value():
    wrong = 0
    for item in (item for items in splits(**MQAR).values() for item in items):
        tokens, tags = item.source.split(), item.references[0].split()
        assert len(tokens) == len(tags) == 64
        keys, values = tokens[0:16:2], tokens[1:16:2]
        assert len(set(keys)) == len(set(values)) == 8, "keys distinct, values distinct within a sequence"
        assert all(k.startswith("k") for k in keys) and all(v.startswith("v") for v in values)
        asked = [p for p, tag in enumerate(tags) if tag != UNSCORED]
        assert sorted(tokens[p] for p in asked) == sorted(keys), "every key is asked once"
        assert all(p >= 16 and p % 2 == 0 for p in asked), "at even offsets after the pairs"
        wrong += sum(tags[p] != answer for p, answer in zip(asked, relabel(item.source, 8, asked)))
    assert wrong == 0


def test_multi_query_asks_most_keys_soon_under_the_power_law_and_evenly_without_it():
    def share_in_first_quarter(exponent):
        gaps = [
            (position - 16) // 2
            for item in splits(**MQAR, gap_exponent=exponent)["train"]
            for position, tag in enumerate(item.references[0].split())
            if tag != UNSCORED
        ]
        return sum(gap < 6 for gap in gaps) / len(gaps)  # 24 slots: the first 6

    assert share_in_first_quarter(0.01) > 0.4 and abs(share_in_first_quarter(1.0) - 0.25) < 0.04


def test_multi_query_filler_is_random_keys_and_values():
    filler = Counter(
        t
        for item in splits(**MQAR)["train"]
        for t, tag in zip(item.source.split()[16:], item.references[0].split()[16:])
        if tag == UNSCORED
    )
    assert len(filler) > 60 and max(filler.values()) < 3 * min(filler.values()), "all 64 tokens, about evenly"


def test_constant_filler_leaves_the_pairs_and_queries_as_the_random_filler_has_them():
    """``filler=constant`` (Zoology's ``random_non_queries=False``): ``.`` between the queries, the same sequences
    otherwise, so the two settings compare on the same pairs and gaps."""
    for drawn, constant in zip(splits(**MQAR)["train"], splits(**MQAR, filler="constant")["train"]):
        tags = drawn.references[0].split()
        assert constant.references == drawn.references
        assert all(
            c == (d if p < 16 or tag != UNSCORED else ".")
            for p, (d, c, tag) in enumerate(zip(drawn.source.split(), constant.source.split(), tags))
        )


def test_naming_the_most_frequent_value_scores_at_chance():
    """With distinct values, the value seen most often before a query is one of the pairs' at best: 1 in 8."""
    hypotheses, references = [], []
    for item in splits(**MQAR, train_size=400)["train"]:
        tokens = item.source.split()
        guesses = []
        for position in range(len(tokens)):
            seen = Counter(t for t in tokens[:position] if t.startswith("v"))
            guesses.append(seen.most_common(1)[0][0] if seen else "v0")
        hypotheses.append(" ".join(guesses))
        references.append(item.references)
    accuracy = registry.build("metric", {"name": "tag_accuracy"}).corpus_score(hypotheses, references)
    assert accuracy < 100 / 8 + 2.5  # 3 standard errors above 1 in 8 over 3,200 queries


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
        ({"mode": "copying"}, "must be one of: multi_query, associative_recall, selective_copying"),
        ({"mode": "multi_query", "pairs": 6, "length": 23}, "4 \\* pairs"),
        ({"mode": "multi_query", "pairs": 6, "key_vocab": 5}, "distinct keys"),
        ({"mode": "multi_query", "pairs": 6, "value_vocab": 5}, "distinct values"),
        ({"mode": "multi_query", "gap_exponent": 0.0}, "gap_exponent"),
    ],
)
def test_settings_that_cannot_work_are_refused_when_configured(settings, message):
    with pytest.raises(ConfigError, match=message):
        registry.build("dataset", registry.default_config("dataset", "recall", **{**SMALL, **settings}))
