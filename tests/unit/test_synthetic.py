"""The ``synthetic`` dataset: a seeded toy language pair with reordering and morphology."""

import random

import pytest

from zoo import registry
from zoo.config.checks import ConfigError
from zoo.registry import discovery
from zoo_plugins.datasets.synthetic import (
    AGREEMENT,
    CASES,
    INTRANSITIVE_VERBS,
    PARTICIPLE,
    PAST,
    PLURAL,
    TRANSITIVE_VERBS,
    Attribute,
    Clause,
    NounPhrase,
    Pronoun,
    Relative,
    SentenceGenerator,
    SyntheticDataError,
    _past,
    _third_singular,
    inflect,
    source_words,
    target_words,
    toy_language,
)

discovery.discover()

SMALL = {"train_size": 200, "val_size": 20, "test_size": 30}


def splits(**overrides):
    return registry.build("dataset", registry.default_config("dataset", "synthetic", **{**SMALL, **overrides})).splits()


def lengths(examples):
    return [len(e.source.split()) for e in examples]


def test_same_seed_same_data_other_seed_other_data():
    assert splits(seed=3) == splits(seed=3)
    assert splits(seed=3)["train"] != splits(seed=4)["train"]


def test_sizes_lengths_and_no_repeated_sentences():
    data = splits(min_words=4, max_words=12)
    assert {k: len(v) for k, v in data.items()} == {"train": 200, "val": 20, "test": 30}
    every = [e.source for split in data.values() for e in split]
    assert len(set(every)) == len(every)  # so val/test never repeat a training sentence
    assert all(4 <= n <= 12 for split in data.values() for n in lengths(split))
    assert {4, 12} <= set(lengths(data["train"]))


def test_every_target_word_has_one_reading():
    language = toy_language()
    assert all(w in language.forms for split in splits().values() for e in split for w in e.references[0].split())


def test_simple_clause_is_reordered_and_inflected():
    stem = toy_language().stem
    clause = Clause(
        NounPhrase("dog", False, "the", adjectives=["big", "old"]), "see", False, NounPhrase("cat", True, "the")
    )
    assert " ".join(source_words([clause], [])) == "the big old dog sees the cats"
    assert target_words([clause], [], toy_language()) == [
        stem["dog"],
        stem["old"],
        stem["big"],  # adjectives follow the noun, mirrored
        inflect(stem["cat"], PLURAL, CASES["acc"]),  # plural + accusative suffixes
        inflect(stem["see"], AGREEMENT["3sg"]),  # verb last, agreeing with "the dog"
    ]


def test_verb_agrees_with_subject_and_places_become_postpositions():
    stem, language = toy_language().stem, toy_language()
    place = ("in", NounPhrase("garden", True, "the"))
    we = Clause(Pronoun(5), "sleep", True, places=[place])
    she = Clause(Pronoun(3), "sleep", True, places=[place])
    assert source_words([we, she], ["and"]) == "we slept in the gardens and she slept in the gardens".split()
    garden = [inflect(stem["garden"], PLURAL, CASES["obl"]), stem["in"]]
    assert target_words([we, she], ["and"], language) == [
        stem["we"],
        *garden,
        inflect(stem["sleep"], PAST, AGREEMENT["1pl"]),
        stem["and"],
        stem["she"],
        *garden,
        inflect(stem["sleep"], PAST, AGREEMENT["3sg"]),
    ]


def test_noun_modifiers_move_before_the_noun():
    stem, language = toy_language().stem, toy_language()
    king = NounPhrase("king", False, "a", modifier=Relative("chase", False, NounPhrase("dog", False, "the")))
    hat = NounPhrase("hat", False, "this", modifier=Attribute("of", NounPhrase("girl", True, "the")))
    clause = Clause(king, "take", False, hat)
    assert " ".join(source_words([clause], [])) == "a king that chases the dog takes this hat of the girls"
    assert target_words([clause], [], language) == [
        inflect(stem["dog"], CASES["acc"]),
        inflect(stem["chase"], PARTICIPLE[False]),
        stem["king"],
        stem["a"],
        stem["this"],
        inflect(stem["girl"], PLURAL, CASES["gen"]),
        inflect(stem["hat"], CASES["acc"]),
        inflect(stem["take"], AGREEMENT["3sg"]),
    ]


def test_generated_data_is_verb_final_while_the_source_is_not():
    language = toy_language()
    verbs = TRANSITIVE_VERBS + INTRANSITIVE_VERBS
    source_verb_forms = {form for v in verbs for form in (v, _third_singular(v), _past(v))}
    examples = splits()["train"]
    assert all(e.references[0].split()[-1] in language.finite_verb_forms for e in examples)
    source_verb_final = sum(e.source.split()[-1] in source_verb_forms for e in examples)
    assert source_verb_final < len(examples) // 3  # only when the last clause is like "... the dog slept"


def test_translation_is_a_function_of_the_source():
    generator = SentenceGenerator(random.Random(0))
    seen = {}
    for _ in range(3000):  # short sentences repeat often, so repeated sources are compared
        clauses, conjunctions = generator.sentence(generator.rng.randint(3, 7))
        source = " ".join(source_words(clauses, conjunctions))
        target = " ".join(target_words(clauses, conjunctions, toy_language()))
        assert seen.setdefault(source, target) == target
    assert len(seen) < 3000


def test_length_split_keeps_long_sentences_for_test():
    data = splits(length_split=True, min_words=3, max_words=40, train_max_words=12, test_min_words=25)
    assert max(lengths(data["train"]) + lengths(data["val"])) <= 12
    assert min(lengths(data["test"])) >= 25 and max(lengths(data["test"])) <= 40


def test_long_sentences_are_reachable():
    data = splits(train_size=20, val_size=5, test_size=20, min_words=50, max_words=60)
    assert max(lengths(data["test"])) >= 58
    assert all(50 <= n <= 60 for n in lengths(data["test"]))


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"min_words": 10, "max_words": 5}, "max_words=5 must be >= 10; raise max_words"),
        ({"min_words": 1}, "min_words=1 must be >= 2; the shortest sentence has 2 words"),
        ({"val_size": 0}, "val_size=0 must be >= 1"),
        ({"length_split": True, "test_min_words": 99}, "length_split needs"),
    ],
)
def test_inconsistent_settings_are_rejected(overrides, message):
    with pytest.raises(ConfigError, match=message):
        splits(**overrides)


def test_asking_for_more_distinct_sentences_than_exist_is_an_error():
    with pytest.raises(SyntheticDataError, match="distinct sentences"):
        splits(min_words=2, max_words=2, train_size=1000)
