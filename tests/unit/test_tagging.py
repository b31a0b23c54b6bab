"""The tagging task, the ``tagger`` head and ``tag_accuracy``: a tag per source token, unscored positions left out
of the loss and the score, and each position's tag read from that position's state alone."""

from __future__ import annotations

import pytest
import torch

from zoo import registry
from zoo.checks.inputs import small_config
from zoo.contracts import EOS, PAD, EncoderOutput, Item
from zoo.contracts.task import TaskError
from zoo.registry import discovery

discovery.discover()

ITEMS = [Item("a", "k1 v2 k3 v4 k3 k1", ("_ _ _ _ v4 v2",)), Item("b", "k5 v6 . k5", ("_ _ _ v6",))]


def task(tokenizer: str = "word"):
    return registry.build(
        "task",
        registry.default_config("task", "tagging"),
        tokenizer=registry.default_config("tokenizer", tokenizer),
        frontend=registry.default_config("frontend", "tokens"),
    )


def test_an_unscored_tag_is_padding_to_the_loss_and_comes_back_in_place():
    tagger = task()
    tagger.fit(ITEMS)
    ids = tagger.encode_targets(["_ _ _ _ v4 v2"])[0]
    assert ids[:4] == [PAD] * 4 and min(ids[4:]) > EOS
    assert tagger.decode_targets([ids + [EOS, 7]]) == ["_ _ _ _ v4 v2"], "cut at the end, aligned with the source"


def test_an_output_may_have_a_tag_per_source_token_and_the_end():
    tagger = task()
    tagger.fit(ITEMS)
    sources = tagger.collate_sources(tagger.encode_sources([item.source for item in ITEMS]))
    assert tagger.output_limit(sources).tolist() == [7, 5]


def test_a_tokenizer_that_splits_tokens_is_refused_when_the_codecs_are_trained():
    with pytest.raises(TaskError, match="a tag per source token"):
        task("char").fit(ITEMS)


def test_tag_accuracy_scores_tagged_positions_alone_and_a_missing_one_is_wrong():
    metric = registry.build("metric", {"name": "tag_accuracy"})
    references = [("_ _ v4 v2",), ("_ v6",)]
    assert metric.corpus_score(["v9 v9 v4 v2", "v9 v6"], references) == 100.0, "unscored positions say nothing"
    assert metric.corpus_score(["_ _ v4", "_ v6"], references) == pytest.approx(200 / 3), "pooled over positions"
    assert metric.item_scores(["_ _ v4", "_ v6"], references) == [50.0, 100.0]


def test_the_tagger_reads_each_position_from_its_own_state_and_ends_after_the_source():
    decoder = registry.build(
        "decoder", small_config("decoder", "tagger"), vocab_size=12, memory_dim=8, state_dim=8, scorer=None, posenc=None
    ).eval()
    memory, mask = torch.randn(1, 4, 8), torch.tensor([[True, True, True, False]])
    changed = memory.clone()
    changed[0, 1] = torch.randn(8)
    with torch.no_grad():
        before = decoder(torch.zeros(1, 6, dtype=torch.long), EncoderOutput(memory, mask, memory[:, 0])).logits
        after = decoder(torch.zeros(1, 6, dtype=torch.long), EncoderOutput(changed, mask, changed[:, 0])).logits
    assert not torch.allclose(before[0, 1], after[0, 1])
    assert torch.equal(before[0, [0, 2]], after[0, [0, 2]]), "other positions do not read position 1"
    assert (before[0, 3:].argmax(-1) == EOS).all(), "padding and the rows past the source end the output"


def test_a_real_position_never_ends_the_output():
    """An unscored position's tag is untrained: were it the end, every query after it would be lost."""
    decoder = registry.build(
        "decoder", small_config("decoder", "tagger"), vocab_size=12, memory_dim=8, state_dim=8, scorer=None, posenc=None
    ).eval()
    with torch.no_grad():
        decoder.head[-1].bias[EOS] = 1e4
        memory, mask = torch.randn(1, 4, 8), torch.tensor([[True, True, True, False]])
        logits = decoder(torch.zeros(1, 5, dtype=torch.long), EncoderOutput(memory, mask, memory[:, 0])).logits
    assert (logits[0, :3].argmax(-1) != EOS).all() and (logits[0, 3:].argmax(-1) == EOS).all()
