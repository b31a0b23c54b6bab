"""Tokenizers in a run directory: atomic save, load, readable token labels."""

import pytest

from zoo import registry
from zoo.contracts import BOS, EOS
from zoo.contracts.task import TaskError
from zoo.data.text import load_tokenizer, save_tokenizer, token_labels, tokenizer_path, train_tokenizer
from zoo.registry import discovery

discovery.discover()


def test_saved_tokenizer_loads_with_the_same_ids_and_leaves_no_partial_file(tmp_path):
    cfg = registry.default_config("tokenizer", "word")
    trained = train_tokenizer(cfg, ["the cat sat", "a dog ran"])
    path = tokenizer_path(tmp_path, "target")
    save_tokenizer(trained, path)
    assert sorted(p.name for p in path.parent.iterdir()) == ["target.json"]
    assert load_tokenizer(cfg, path).encode(["a cat ran"]) == trained.encode(["a cat ran"])


def test_a_missing_tokenizer_is_a_clear_error(tmp_path):
    with pytest.raises(TaskError, match="no trained tokenizer"):
        load_tokenizer(registry.default_config("tokenizer", "word"), tokenizer_path(tmp_path, "source"))


def test_token_labels_name_specials_and_spaces():
    chars = train_tokenizer(registry.default_config("tokenizer", "char"), ["ab c"])
    ids = chars.encode(["a c"])[0]
    assert token_labels(chars, [BOS, *ids, EOS]) == ["<s>", "a", "␣", "c", "</s>"]
