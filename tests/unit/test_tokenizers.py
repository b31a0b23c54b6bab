"""The ``char``, ``word`` and ``bpe`` tokenizers and their shared glue (zoo/tokenization.py)."""

import json

import pytest
from tokenizers import Tokenizer as HFPipeline

from zoo import registry
from zoo.contracts import BOS, EOS, PAD, SPECIAL_TOKENS, UNK
from zoo.data.tokenization import HFTokenizer, TokenizerError
from zoo.registry import discovery

discovery.discover()

KINDS = ("char", "word", "bpe")
TEXTS = ["the cat sat on the mat", "the cats sat on the mats", "a dog saw the cats", "the dog sat"] * 3


def trained(kind, texts=TEXTS, **overrides):
    tokenizer = registry.build("tokenizer", registry.default_config("tokenizer", kind, **overrides))
    tokenizer.train(iter(texts))
    return tokenizer


@pytest.mark.parametrize("kind", KINDS)
def test_round_trip(kind):
    tokenizer = trained(kind)
    sentences = ["the cats sat", "a dog sat on the mat"]
    assert tokenizer.decode(tokenizer.encode(sentences)) == sentences


@pytest.mark.parametrize("kind", KINDS)
def test_special_tokens_have_fixed_ids_and_are_not_added_or_decoded(kind, tmp_path):
    tokenizer = trained(kind)
    tokenizer.save(str(tmp_path / "tok.json"))
    vocab = HFPipeline.from_file(str(tmp_path / "tok.json")).get_vocab()
    assert [vocab[t] for t in SPECIAL_TOKENS] == [PAD, BOS, EOS, UNK]
    (ids,) = tokenizer.encode(["the cat"])
    assert ids and min(ids) >= len(SPECIAL_TOKENS)  # no BOS/EOS, no UNK for known text
    assert tokenizer.decode([[BOS, *ids, EOS, PAD, PAD]]) == tokenizer.decode([ids]) == ["the cat"]


def test_char_keeps_every_space():
    tokenizer = trained("char")
    text = " the  cat "
    (ids,) = tokenizer.encode([text])
    assert len(ids) == len(text)
    assert tokenizer.decode([ids]) == [text]


def test_word_unknown_and_rare_words_become_unk():
    tokenizer = trained("word", texts=["the cat sat", "the dog sat", "the cat ran"], min_frequency=2)
    (ids,) = tokenizer.encode(["the zebra sat dog"])
    assert ids[1] == UNK and ids[3] == UNK  # unseen, and seen only once
    assert ids[0] != UNK and ids[2] != UNK
    assert tokenizer.decode([ids]) == ["the sat"]


def test_word_splits_punctuation_and_lowercases():
    tokenizer = trained("word", texts=["The cat sat."], lowercase=True)
    assert tokenizer.decode(tokenizer.encode(["THE CAT SAT."])) == ["the cat sat ."]


@pytest.mark.parametrize("kind", ("char", "bpe"))
def test_unseen_characters_become_unk(kind):
    tokenizer = trained(kind)
    (ids,) = tokenizer.encode(["the q"])
    assert ids[-1] == UNK


def test_bpe_splits_unseen_words_into_learnt_subwords():
    stems, suffixes = ["kalu", "dome", "sira", "peto"], ["", "ri", "rit", "t"]
    words = [s + x for s in stems for x in suffixes if s + x not in ("kalurit", "domet")]  # held out
    tokenizer = trained("bpe", texts=[" ".join(words)] * 20, vocab_size=40, min_frequency=2)
    (ids,) = tokenizer.encode(["kalurit domet"])
    assert UNK not in ids
    assert 2 < len(ids) < len("kalurit domet")  # subwords: more than whole words, fewer than characters
    assert tokenizer.decode([ids]) == ["kalurit domet"]
    assert tokenizer.vocab_size <= 40


@pytest.mark.parametrize("kind", KINDS)
def test_save_and_load_give_identical_encodings(kind, tmp_path):
    tokenizer = trained(kind)
    path = tmp_path / "sub" / "tok.json"
    tokenizer.save(str(path))
    assert "model" in json.loads(path.read_text())  # the HF tokenizer JSON
    fresh = registry.build("tokenizer", registry.default_config("tokenizer", kind))
    fresh.load(str(path))
    sentences = ["the cats sat on a mat", "a zebra"]
    assert fresh.encode(sentences) == tokenizer.encode(sentences)
    assert fresh.vocab_size == tokenizer.vocab_size
    assert fresh.decode(fresh.encode(sentences)) == tokenizer.decode(tokenizer.encode(sentences))


def test_vocabulary_comes_only_from_the_training_texts():
    tokenizer = trained("word", texts=["the cat sat"])
    assert tokenizer.vocab_size == len(SPECIAL_TOKENS) + 3
    assert tokenizer.encode(["mat"]) == [[UNK]]


def test_untrained_tokenizer_and_bad_files_are_clear_errors(tmp_path):
    tokenizer = registry.build("tokenizer", registry.default_config("tokenizer", "word"))
    with pytest.raises(TokenizerError, match="not trained"):
        tokenizer.encode(["the cat"])
    with pytest.raises(TokenizerError, match="no tokenizer file"):
        tokenizer.load(str(tmp_path / "missing.json"))
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(TokenizerError, match="not a tokenizer file"):
        tokenizer.load(str(bad))
    with pytest.raises(TokenizerError, match="no text"):
        tokenizer.train(iter([]))


def test_loading_a_vocabulary_without_zoo_special_ids_is_rejected(tmp_path):
    from tokenizers import models

    foreign = HFPipeline(models.WordLevel({"<unk>": 0, "<pad>": 1, "<s>": 2, "</s>": 3}, unk_token="<unk>"))
    path = tmp_path / "foreign.json"
    foreign.save(str(path))
    tokenizer = registry.build("tokenizer", registry.default_config("tokenizer", "word"))
    with pytest.raises(TokenizerError, match="special token <pad> has id 1"):
        tokenizer.load(str(path))


def test_encode_needs_a_list():
    with pytest.raises(TypeError, match="list of strings"):
        trained("word").encode("the cat")


AWKWARD = [
    "",
    " ",
    "the  cat",
    " the cat",
    "the cat ",
    "the <s> cat",
    "the<unk>",
    "the\tcat sat",
    "cat. dog, mat!",
    "ÉTÉ été",
]


@pytest.mark.parametrize("kind", registry.names("tokenizer"))
def test_encode_equals_the_pipeline_text_by_text(kind):
    """Every registered tokenizer on HF's pipeline: ``encode`` (by word, where the plugin says it may) gives the
    pipeline's own ids for each text, spacing and special tokens included."""
    tokenizer = registry.build("tokenizer", registry.default_config("tokenizer", kind))
    if not isinstance(tokenizer, HFTokenizer):
        pytest.skip(f"{kind} is not built on the tokenizers library")
    tokenizer.train(iter(TEXTS + AWKWARD))
    texts = AWKWARD + TEXTS + ["the mat sat the cat dog"]
    pipeline = tokenizer._ready()
    assert tokenizer.encode(texts) == [pipeline.encode(text, add_special_tokens=False).ids for text in texts]
