"""Self-critical sequence training: the objective on a tiny model, CIDEr-D as a reward, the references of the training
items, the ``scst`` and ``init_from`` settings, and a tiny captioning run that starts from given weights, trains on
its rewards and resumes exactly.

Two runs in all (one straight, one stopped after its first epoch and resumed); everything else is in-process.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from helpers.config import composed
from helpers.runs import CAPTION_TINY

import zoo.config.schema  # noqa: F401  (stores the schema)
from zoo.config.checks import ConfigError
from zoo.contracts import EOS, Metric, SourceDescription
from zoo.data import references as references_module
from zoo.data.datamodule import ZooDataModule
from zoo.data.references import TrainingReferences
from zoo.decoding import sample
from zoo.model import Seq2Seq
from zoo.registry import build, default_config, discovery, get
from zoo.training.preflight import validate
from zoo.training.scst import Baseline, Scst, advantages, scst_loss, sequence_log_probs

discovery.discover()


def tiny_model(source_vocab: int = 12, target_vocab: int = 12) -> Seq2Seq:
    torch.manual_seed(0)
    cfg = {
        "frontend": default_config("frontend", "tokens", dim=16),
        "posenc": default_config("posenc", "none"),
        "encoder": default_config("encoder", "gru", hidden_size=16),
        "decoder": default_config("decoder", "rnn", hidden_size=16, embed_dim=16),
        "attention": default_config("attention", "additive"),
    }
    return Seq2Seq(cfg, SourceDescription("tokens", vocab_size=source_vocab), target_vocab).eval()  # no dropout


# ------------------------------------------------------------------------------------------- the objective


@pytest.mark.parametrize("advantage", [1.0, -1.0], ids=["above-the-baseline", "below-the-baseline"])
def test_one_step_raises_a_sample_above_its_baseline_and_lowers_one_below(advantage):
    model = tiny_model()
    source, output, limits = torch.tensor([[4, 5, 6]]), [[7, 8, 9]], torch.tensor([6])
    before, _ = sequence_log_probs(model, source, output, limits)
    scst_loss(before, torch.tensor([advantage])).backward()
    torch.optim.SGD(model.parameters(), lr=0.05).step()
    with torch.no_grad():
        after, _ = sequence_log_probs(model, source, output, limits)
    assert float(after - before) * advantage > 0


def test_an_outputs_log_probability_counts_the_eos_that_ended_it_and_nothing_after():
    model = tiny_model()
    source = torch.tensor([[4, 5], [6, 7]])
    outputs, limits = [[8], [9, 10]], torch.tensor([2, 2])  # the first ended with EOS; the second was cut at 2
    with torch.no_grad():
        log_probs, tokens = sequence_log_probs(model, source, outputs, limits)
        logits = model(source, torch.tensor([[1, 8], [1, 9]])).logits  # BOS = 1, then the output
        logits[..., :2] = float("-inf")  # PAD and BOS are never generated
        table = logits.log_softmax(-1)
    assert int(tokens) == 4
    assert float(log_probs[0]) == pytest.approx(float(table[0, 0, 8] + table[0, 1, EOS]), abs=1e-5)
    assert float(log_probs[1]) == pytest.approx(float(table[1, 0, 9] + table[1, 1, 10]), abs=1e-5)


def test_sampling_k_outputs_per_source_encodes_once_and_draws_as_repeated_sources():
    model = tiny_model()
    source = torch.tensor([[4, 5, 6], [7, 8, 9]])
    once = sample(model, source, max_len=5, count=3, generator=torch.Generator().manual_seed(3))
    repeated = sample(model, source.repeat_interleave(3, 0), max_len=5, generator=torch.Generator().manual_seed(3))
    assert once == repeated and len(once) == 6


def test_the_mean_baseline_is_the_mean_of_the_items_other_samples():
    rewards = torch.tensor([[1.0, 2.0, 6.0], [3.0, 3.0, 3.0]])
    torch.testing.assert_close(
        advantages(rewards, Baseline.mean, None), torch.tensor([[-3.0, -1.5, 4.5], [0.0, 0.0, 0.0]])
    )
    torch.testing.assert_close(
        advantages(rewards, Baseline.greedy, torch.tensor([2.0, 4.0])), rewards - torch.tensor([[2.0], [4.0]])
    )


def test_samples_equal_to_the_greedy_output_have_no_advantage_and_no_gradient(task):
    """A model sure of one word: every sample is the greedy output, so it is rewarded exactly as its baseline."""
    vocab = task.source_description().vocab_size
    model = tiny_model(vocab, task.target_vocab_size)
    word = task.encode_targets(["chien"])[0][0]
    with torch.no_grad():
        model.decoder.target.output.bias[word] = 100.0
    sources = task.encode_sources(["the dog sat", "the cat sat"])
    batch = {"source": task.collate_sources(sources), "index": torch.tensor([1, 0])}
    targets = task.encode_targets(["le chat assis", "le chien assis", "un chien courait"])
    references = TrainingReferences(targets, np.array([0, 1, 1]), 2, task)
    cfg = {"task": {"name": "translation"}, "scst": {"samples": 4, "baseline": "greedy", "metric": "bleu"}}
    step = Scst(cfg).step(model.train(), batch, task, references)
    assert float(step.reward) == float(step.baseline) > 0
    step.loss.backward()
    assert float(step.loss) == 0.0 and all(not p.grad.any() for p in model.parameters() if p.grad is not None)


# ------------------------------------------------------------------------------------------- the reward

TRAIN_CAPTIONS = [("a dog runs",), ("A dog sleeps.",), ("a cat sleeps",), ("the bird sings",)]


def test_cider_d_with_training_document_frequencies_follows_its_definition():
    """CIDEr-D (Vedantam et al., 2015) by hand: n-gram weights tf x log(N / max(1, df)) with df counted over the
    N = 4 training items, clipped cosine per order, the mean of orders 1-4, a Gaussian length penalty (sigma 6), x 10;
    zoo reports x 100."""
    reward = build("metric", default_config("metric", "cider_d")).reward(iter(TRAIN_CAPTIONS))
    l2, l4, l43 = math.log(2), math.log(4), math.log(4 / 3)  # idf of df 2 (dog, sleeps, a dog), 1 and 0; of "a"
    same_length = (l43**2 + l2**2) / (math.sqrt(l43**2 + 2 * l2**2) * math.sqrt(l43**2 + l2**2 + l4**2))
    same_length += l2**2 / (l2**2 + l4**2)  # bigrams: "a dog" in common; "dog sleeps" and "dog runs" not
    shorter = math.sqrt(l43**2 + l2**2) / math.sqrt(l43**2 + l2**2 + l4**2) + l2 / math.sqrt(l2**2 + l4**2)
    expected = [1000 * same_length / 4, 1000 * math.exp(-1 / 72) * shorter / 4]
    scores = reward(["a dog sleeps", "A dog!"], [("a dog runs",), ("a dog runs",)])
    assert scores == pytest.approx(expected, abs=1e-9)
    metric = build("metric", default_config("metric", "cider_d"))
    assert metric.item_scores(["a dog sleeps"], [("a dog runs",)]) == [0.0], "the batch's own df: one item scores 0"


def test_a_reward_depends_on_the_sample_and_its_references_alone():
    reward = build("metric", default_config("metric", "cider_d")).reward(TRAIN_CAPTIONS)
    alone = reward(["a dog sleeps"], [("a dog runs",)])
    among = reward(["the cat", "a dog sleeps", "a dog sleeps"], [("a cat",), ("a dog runs",), ("a dog runs",)])
    assert among[1:] == alone * 2


def test_a_metric_can_reward_when_it_has_per_item_scores():
    class CorpusOnly(Metric):
        def corpus_score(self, hypotheses, references) -> float:
            return 0.0

    assert not CorpusOnly.scores_items()
    for name in ("bleu", "chrf", "bleu4", "cider_d", "rouge_l", "meteor", "spice"):
        assert get("metric", name).cls.scores_items(), name


# ------------------------------------------------------------------------------ the training references


def test_training_references_are_each_items_target_rows_decoded(task, monkeypatch):
    texts = ["le chat assis", "le chien assis", "un chien courait", "le chien assis sur un tapis"]
    references = TrainingReferences(task.encode_targets(texts), np.array([0, 0, 2, 3]), 4, task)
    assert references.of([2, 0, 1]) == [(texts[2],), tuple(texts[:2]), ()]
    monkeypatch.setattr(references_module, "CHUNK_ROWS", 1)  # every chunk holds one item, however many rows it has
    assert list(references) == [tuple(texts[:2]), (), (texts[2],), (texts[3],)] and len(references) == 4


def test_prepared_and_in_memory_data_give_the_same_training_references(tmp_path):
    prepared, in_memory = (
        ZooDataModule(composed("experiment=smoke", f"data.prepare={flag}"), tmp_path / flag)
        for flag in ("true", "false")
    )
    assert prepared.training_references().of([0, 5, 199]) == in_memory.training_references().of([0, 5, 199])
    assert prepared.prepared is not None and in_memory.prepared is None


# --------------------------------------------------------------------------------------------- settings


@pytest.mark.parametrize(
    "overrides, message",
    [
        (["scst.samples=0"], "scst.samples=0 must be >= 1"),
        (["scst.baseline=mean", "scst.samples=1"], "scst.samples=1 with baseline=mean"),
        (["scst.enabled=true", "scst.metric=cidr_d"], "scst.metric=cidr_d is not a registered metric; did you mean"),
        (["scst.enabled=true", "scst.metric=spice"], "scst.metric=spice cannot run here"),
    ],
    ids=["no-samples", "mean-of-one", "unknown-metric", "unavailable-metric"],
)
def test_scst_settings_are_refused_at_composition_in_one_line(overrides, message):
    with pytest.raises(ConfigError, match=message) as refused:
        validate(composed("task=captioning", *overrides))
    assert "\n" not in str(refused.value)
    assert "metric" not in message or "choose one that scores items one by one: scst.metric=accuracy|bleu|" in str(
        refused.value
    )


def test_a_metric_without_per_item_scores_is_refused_naming_those_that_have_them(monkeypatch):
    monkeypatch.setattr(get("metric", "rouge_l").cls, "scores_items", classmethod(lambda cls: False))
    with pytest.raises(ConfigError, match="scst.metric=null takes the monitored metric rouge_l, which has no per-item"):
        validate(composed("task=captioning", "scst.enabled=true", "monitor=rouge_l"))


def test_init_from_of_another_model_or_nothing_is_refused_at_composition(init_ckpt, tmp_path):
    with pytest.raises(ConfigError, match=r"decoder.hidden_size=32 vs the run's 64; start from a run of the same"):
        validate(composed(*CAPTION_TINY, "decoder.hidden_size=64", f"init_from={init_ckpt}"))
    with pytest.raises(ConfigError, match="init_from=nowhere: there is no such run directory or checkpoint file"):
        validate(composed(*CAPTION_TINY, "init_from=nowhere"))
    (tmp_path / "notes.ckpt").write_text("my notes")
    with pytest.raises(ConfigError, match="cannot be loaded .* give a run directory or a .ckpt file"):
        validate(composed(*CAPTION_TINY, f"init_from={tmp_path / 'notes.ckpt'}"))
    (tmp_path / "run").mkdir()
    with pytest.raises(ConfigError, match="init_from=.*/run: no checkpoint .*best.ckpt"):
        validate(composed(*CAPTION_TINY, f"init_from={tmp_path / 'run'}"))
    validate(composed(*CAPTION_TINY, f"init_from={init_ckpt}"))
    validate(composed(*CAPTION_TINY, "init_from=nowhere", "resume_mode=must"))  # a resume never reads it
