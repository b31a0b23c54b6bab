"""The classification task and the ``classifier`` head: defaults, one-token labels, pooling that never reads
padding, and a head that learns over every encoder and decodes its label then the end with every strategy."""

from __future__ import annotations

import pytest
import torch
from helpers.config import composed

from zoo import registry
from zoo.checks.inputs import small_config
from zoo.config.checks import ConfigError
from zoo.contracts import EOS, PAD, UNK, EncoderOutput, Item, SourceDescription
from zoo.contracts.task import TaskError
from zoo.decoding import beam_search, greedy, sample
from zoo.model import Seq2Seq
from zoo.registry import discovery
from zoo_plugins.decoders.classifier import Pool, pool

discovery.discover()


def task():
    return registry.build(
        "task",
        registry.default_config("task", "classification", length_buckets=[4, 8]),
        tokenizer=registry.default_config("tokenizer", "word"),
        frontend=registry.default_config("frontend", "tokens"),
    )


def items(*pairs: tuple[str, str]) -> list[Item]:
    return [Item(f"i{k}", source, (label,)) for k, (source, label) in enumerate(pairs)]


def test_task_classification_brings_listops_word_tokens_and_the_classifier_head():
    cfg = composed("task=classification")
    assert (cfg.dataset.name, cfg.tokenizer.name, cfg.decoder.name) == ("listops", "word", "classifier")
    assert composed("task=classification", "dataset=recall", "decoder=rnn").decoder.name == "rnn"


def test_each_label_is_one_target_id_and_an_output_is_the_label_and_the_end():
    classifier = task()
    classifier.fit(items(("MAX 1 2 ]", "2"), ("k1 v7 k1", "v7"), ("SM 9 9 ]", "8")))
    assert [len(ids) for ids in classifier.encode_targets(["2", "v7", "8"])] == [1, 1, 1]
    assert classifier.decode_targets(classifier.encode_targets(["v7"])) == ["v7"]
    sources = classifier.collate_sources(classifier.encode_sources(["MAX 1 2 ]", "SM 9 ]"]))
    assert classifier.output_limit(sources).tolist() == [2, 2]


def test_labels_of_several_words_are_refused_when_the_codecs_are_trained():
    with pytest.raises(TaskError, match="needs one-word labels.*'v1 v2' \\(2 tokens\\).*task=translation"):
        task().fit(items((". v4 . v9", "v4 v9"), (". v1 . v2", "v1 v2")))


def test_accuracy_is_broken_down_by_source_length():
    classifier = task()
    data = items(("1 2 3", "a"), ("1 2 3 4 5", "b"), ("1 2 3 4 5 6 7", "c"), ("1 2 3 4 5 6 7 8 9", "d"))
    breakdown = classifier.breakdowns(data, ["a", "x", "c", "d"])["accuracy_by_length"]
    assert breakdown == {
        "1-4": {"accuracy": 100.0, "count": 1},
        "5-8": {"accuracy": 50.0, "count": 2},
        "9+": {"accuracy": 100.0, "count": 1},
    }


@pytest.mark.parametrize("how", list(Pool))
def test_no_pool_reads_a_padded_position(how):
    mask = torch.tensor([[True, True, True], [True, False, False]])
    memory = torch.randn(2, 3, 4)
    enc = EncoderOutput(memory, mask, torch.randn(2, 5))
    scribbled = EncoderOutput(memory.masked_fill(~mask[..., None], float("nan")), mask, enc.state)
    assert torch.equal(pool(scribbled, how), pool(enc, how))


def test_the_pools_are_the_mean_the_maximum_and_the_last_real_state():
    memory = torch.tensor([[[1.0], [5.0], [3.0]], [[2.0], [9.0], [9.0]]])
    enc = EncoderOutput(memory, torch.tensor([[True, True, True], [True, False, False]]), torch.zeros(2, 1))
    assert pool(enc, Pool.mean).flatten().tolist() == [3.0, 2.0]
    assert pool(enc, Pool.max).flatten().tolist() == [5.0, 2.0]
    assert pool(enc, Pool.last).flatten().tolist() == [3.0, 2.0]


@pytest.mark.parametrize("pooling", [[], ["mean", "mean"], ["average"]])
def test_pools_must_be_named_once_each(pooling):
    with pytest.raises(ConfigError, match="pooling"):
        registry.build(
            "decoder",
            registry.default_config("decoder", "classifier", pooling=pooling),
            vocab_size=9,
            memory_dim=4,
            state_dim=4,
        )


def classifier_model(encoder: str) -> Seq2Seq:
    """A tiny model of ``encoder`` (at its contract-check size) under a head that pools every way."""
    cfg = {
        "frontend": registry.default_config("frontend", "tokens", dim=None),
        "posenc": registry.default_config("posenc", "none"),
        "encoder": small_config("encoder", encoder),
        "decoder": registry.default_config(
            "decoder", "classifier", pooling=["mean", "max", "last", "state"], hidden_size=32, dropout=0.0
        ),
        "attention": registry.default_config("attention", "scaled_dot"),
    }
    return Seq2Seq(cfg, SourceDescription("tokens", vocab_size=12), 9)


@pytest.mark.parametrize("encoder", registry.names("encoder"))
def test_the_head_learns_a_batch_over_every_encoder_and_writes_its_label_then_the_end(encoder):
    torch.manual_seed(0)
    model = classifier_model(encoder)
    source = torch.randint(4, 12, (6, 7))
    source[3:, 5:] = PAD  # three shorter sources
    labels = torch.tensor([4, 5, 6, 7, 8, 4])
    target_in = torch.stack([torch.ones_like(labels), labels], dim=1)  # <s> label
    target_out = torch.stack([labels, torch.full_like(labels, EOS)], dim=1)  # label </s>
    optimiser = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(60):
        logits = model(source, target_in).logits
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, 9), target_out.reshape(-1))
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0] / 4, f"{encoder}: loss {losses[0]:.3f} -> {losses[-1]:.3f}"
    model.eval()
    expected = [[label] for label in labels.tolist()]
    assert greedy(model, source, max_len=2) == expected
    assert beam_search(model, source, beam_size=3, max_len=2) == expected
    assert sample(model, source, top_k=1, max_len=2) == expected


def test_the_head_never_writes_a_special_token_as_the_label():
    """Untrained, the head may score the end of sentence or the unknown token highest; a label is written instead."""
    torch.manual_seed(0)
    model = classifier_model("gru").eval()
    with torch.no_grad():
        model.decoder.head[-1].bias[[EOS, UNK]] = 100.0
    source = torch.randint(4, 12, (3, 7))
    for written in (greedy(model, source, max_len=2), beam_search(model, source, beam_size=3, max_len=2)):
        assert all(len(ids) == 1 and ids[0] >= 4 for ids in written), written
