"""The data module: items to encoded rows, codecs in the run directory, token-budget batches, padding and shuffling."""

import os
from dataclasses import dataclass

import pytest
import torch
from helpers import TINY, fork_zoo
from lightning.fabric.utilities.data import _set_sampler_epoch
from omegaconf import OmegaConf

import zoo.data.datamodule
from zoo import registry
from zoo.contracts import BOS, EOS, PAD, UNK, Dataset, Item
from zoo.contracts.task import TaskError
from zoo.data.collate import pad
from zoo.data.datamodule import ZooDataModule
from zoo.data.sampling import DataError, LengthBucketSampler, TokenBudgetBatchSampler
from zoo.data.text import load_tokenizer, tokenizer_path
from zoo.registry import discovery

discovery.discover()

MAX_TOKENS = 150
TINY_MODEL = [override for override in TINY if override != "experiment=smoke"] + ["trainer.max_epochs=1"]


def config(dataset=None, tokenizer="word", seed=7, joint_vocab=False, **data):
    dataset = dataset or registry.default_config(
        "dataset", "synthetic", train_size=120, val_size=15, test_size=15, max_words=15
    )
    return OmegaConf.create(
        {
            "seed": seed,
            "task": registry.default_config("task", "translation", joint_vocab=joint_vocab),
            "dataset": dataset,
            "tokenizer": registry.default_config("tokenizer", tokenizer),
            "frontend": registry.default_config("frontend", "tokens"),
            "data": {"max_tokens": MAX_TOKENS, "max_len": 64, "num_workers": 0, "prepare": True, **data},
            "paths": {"cache": os.environ["ZOO_CACHE_DIR"]},
        }
    )


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    module = ZooDataModule(config(), tmp_path_factory.mktemp("run"))
    module.setup()
    return module


def all_batches(module):
    return {split: list(getattr(module, f"{split}_dataloader")()) for split in ("train", "val", "test")}


def test_every_batch_keeps_the_token_budget_and_every_pair_appears_once(data):
    for split, batches in all_batches(data).items():
        for batch in batches:
            rows, width = batch["source"].size(0), max(batch["source"].size(1), batch["target_in"].size(1))
            assert rows * width <= MAX_TOKENS
        seen = sorted(i for batch in batches for i in batch["index"].tolist())
        assert seen == sorted(i for _, _, i in list(data.encoded[split]))
    assert len(data.encoded["val"]) == len(data.items["val"]) == 15


def test_padding_bos_eos_and_text_alignment(data):
    batch = next(iter(data.val_dataloader()))
    assert batch["source"].dtype == batch["target_in"].dtype == batch["index"].dtype == torch.long
    assert batch["target_in"].shape == batch["target_out"].shape
    for row, index in enumerate(batch["index"].tolist()):
        source = data.task.source_tokenizer.encode([data.items["val"][index].source])[0]
        target = data.task.target_tokenizer.encode([data.items["val"][index].references[0]])[0]
        n = len(target)
        assert batch["source"][row, : len(source)].tolist() == source
        assert (batch["source"][row, len(source) :] == PAD).all()
        assert batch["target_in"][row, : n + 1].tolist() == [BOS, *target]
        assert batch["target_out"][row, : n + 1].tolist() == [*target, EOS]
        assert (batch["target_in"][row, n + 1 :] == PAD).all() and (batch["target_out"][row, n + 1 :] == PAD).all()
        assert data.task.decode_targets([batch["target_out"][row].tolist()]) == data.task.decode_targets([target])
    assert int((batch["target_out"] != PAD).sum()) == int((batch["target_in"] != PAD).sum())


def test_evaluation_batches_are_sorted_and_fixed(data):
    first = [b["index"].tolist() for b in data.test_dataloader()]
    assert first == [b["index"].tolist() for b in data.test_dataloader()]
    sizes = {i: s for (_, _, i), s in zip(list(data.encoded["test"]), data.encoded["test"].sizes)}
    flat = [sizes[i] for batch in first for i in batch]
    assert flat == sorted(flat)


def test_training_order_depends_only_on_seed_and_epoch(data, tmp_path):
    def order(module, epoch):
        loader = module.train_dataloader()
        _set_sampler_epoch(loader, epoch)  # what Lightning does before each epoch
        return [b["index"].tolist() for b in loader]

    other = ZooDataModule(config(), data.run_dir)  # same seed, fresh object
    assert order(data, 0) == order(other, 0)
    assert order(data, 1) == order(other, 1)
    assert order(data, 0) != order(data, 1)
    reseeded = ZooDataModule(config(seed=8), tmp_path)
    assert order(reseeded, 0) != order(data, 0)


def test_tokenizers_are_saved_and_reused(data):
    assert tokenizer_path(data.run_dir, "source").is_file() and tokenizer_path(data.run_dir, "target").is_file()
    resumed = ZooDataModule(config(), data.run_dir)
    resumed.task.fit = lambda items: pytest.fail("tokenizers were retrained")
    resumed.setup()
    text = [item.references[0] for item in data.items["test"][:5]]
    assert resumed.task.encode_targets(text) == data.task.encode_targets(text)
    target = load_tokenizer(config().tokenizer, tokenizer_path(data.run_dir, "target"))
    assert target.encode(text) == data.task.encode_targets(text)


def test_joint_vocabulary_is_one_tokenizer(tmp_path):
    module = ZooDataModule(config(joint_vocab=True), tmp_path)
    module.setup()
    assert module.task.source_tokenizer is module.task.target_tokenizer
    loaded = zoo.data.datamodule.build_task(config(joint_vocab=True))
    loaded.load(tmp_path)
    assert loaded.source_tokenizer is loaded.target_tokenizer
    text = [item.source for item in module.items["val"][:3]] + [item.references[0] for item in module.items["val"][:3]]
    assert loaded.encode_targets(text) == module.task.encode_targets(text)


def test_vocabulary_comes_from_the_training_split_only(tmp_path):
    root = tmp_path / "corpus"
    root.mkdir()
    for split, (de, en) in {
        "train": ("ein hund", "a dog"),
        "val": ("ein zebra", "a zebra"),
        "test": ("ein hund", "a dog"),
    }.items():
        (root / f"{split}.tsv").write_text(f"{de}\t{en}\n")
    dataset = registry.default_config("dataset", "parallel", root=str(root), test="test")
    module = ZooDataModule(config(dataset=dataset), tmp_path / "run")
    module.setup()
    ((val_source, val_target, _),) = list(module.encoded["val"])
    assert val_source[1] == UNK and val_target[1] == UNK
    assert module.task.target_vocab_size == 4 + 2


def test_long_training_pairs_are_skipped_but_evaluation_keeps_all(tmp_path):
    module = ZooDataModule(config(max_len=8), tmp_path)
    module.setup()
    train = list(module.encoded["train"])
    assert 0 < len(train) < len(module.prepared.target_item("train")) == 120
    assert all(len(src) <= 8 and len(tgt) + 1 <= 8 for src, tgt, _ in train)
    assert len(module.encoded["test"]) == len(module.items["test"])


def test_no_pair_fits_max_len(tmp_path):
    with pytest.raises(DataError, match="raise data.max_len"):
        ZooDataModule(config(max_len=1), tmp_path).setup()


def tsv_corpus(root, long_split: str, long_words: int) -> None:
    """Eight short pairs per split, and in ``long_split`` a ninth (line 9) of ``long_words`` words a side."""
    root.mkdir()
    for split in ("train", "val", "test"):
        lines = [f"ein satz {k}\ta sentence {k}" for k in range(8)]
        if split == long_split:
            lines.append(f"{' '.join(['wort'] * long_words)}\t{' '.join(['word'] * long_words)}")
        (root / f"{split}.tsv").write_text("\n".join(lines) + "\n")


def test_an_evaluation_item_wider_than_a_batch_is_refused_naming_it(tmp_path):
    """Skipping it would change the score; batching it alone would break the memory bound."""
    tsv_corpus(tmp_path / "corpus", "val", long_words=30)
    dataset = registry.default_config("dataset", "parallel", root=str(tmp_path / "corpus"), test="test")
    with pytest.raises(
        DataError,
        match=r"^val item val:9 has 31 tokens, more than a batch may hold "
        r"\(data.max_tokens=20\); raise data.max_tokens to 31",
    ):
        ZooDataModule(config(dataset=dataset, max_tokens=20), tmp_path / "run").setup()


@pytest.mark.slow
def test_a_training_pair_wider_than_a_batch_is_skipped_with_a_count(tmp_path):
    """data.max_len raised far above data.max_tokens: a 3000-token pair (gigabytes of activations in a batch of its
    own) is skipped, counted in the log, and the run trains on the rest."""
    tsv_corpus(tmp_path / "corpus", "train", long_words=3000)
    run_dir = tmp_path / "run"
    fork_zoo(
        "train",
        "dataset=parallel",
        f"dataset.root={tmp_path / 'corpus'}",
        "dataset.test=test",
        *TINY_MODEL,
        "data.max_len=5000",
        "data.max_tokens=200",
        f"hydra.run.dir={run_dir}",
        cwd=tmp_path,
    )
    log = (run_dir / "train.log").read_text()
    assert "train: skipped 1 of 9 pairs: 1 wider than a whole batch, data.max_tokens=200" in log


def test_missing_tokenizers_are_a_clear_error(tmp_path):
    with pytest.raises(TaskError, match="no trained tokenizer"):
        zoo.data.datamodule.build_task(config()).load(tmp_path)


def test_multi_process_training_gets_disjoint_equal_shares():
    sizes = [3, 5, 2, 8, 4, 4, 6, 1, 7, 2, 3]
    shares = []
    for rank in range(2):
        sampler = LengthBucketSampler(sizes, shuffle=True, seed=1, chunk_size=4)
        shares.append(list(TokenBudgetBatchSampler(sampler, max_tokens=10, num_replicas=2, rank=rank)))
    assert len(shares[0]) == len(shares[1]) > 0
    first, second = ({i for b in share for i in b} for share in shares)
    assert not first & second
    for share in shares:
        assert all(len(b) * max(sizes[i] for i in b) <= 10 or len(b) == 1 for b in share)


@pytest.mark.parametrize("processes", [2, 3, 9])  # 9: more than the 7 batches
def test_multi_process_evaluation_gives_every_batch_to_exactly_one_process(processes):
    """Nothing is dropped: counts may differ; with fewer batches than processes the largest batches are halved."""
    sizes = [3, 5, 2, 8, 4, 4, 6, 1, 7, 2, 3]
    single = list(TokenBudgetBatchSampler(LengthBucketSampler(sizes, shuffle=False), max_tokens=10))
    shares = [
        list(
            TokenBudgetBatchSampler(
                LengthBucketSampler(sizes, shuffle=False), max_tokens=10, num_replicas=processes, rank=rank
            )
        )
        for rank in range(processes)
    ]
    assert sorted(i for share in shares for b in share for i in b) == list(range(len(sizes)))
    assert all(share for share in shares)
    if len(single) >= processes:  # the same batches as one process, dealt out in turn
        assert [shares[k % processes][k // processes] for k in range(len(single))] == single
    assert max(map(len, shares)) - min(map(len, shares)) <= 1


def test_more_processes_than_evaluation_examples_is_a_clear_error():
    sampler = TokenBudgetBatchSampler(LengthBucketSampler([3, 4], shuffle=False), max_tokens=10, num_replicas=3)
    with pytest.raises(DataError, match="only 2 evaluation examples for 3 processes"):
        list(sampler)


def test_training_loader_length_is_that_of_the_epoch_it_serves(tmp_path, monkeypatch):
    """Lightning reads the loader's length once per epoch; a wrong length silently skips validation."""
    from types import SimpleNamespace

    monkeypatch.setattr(zoo.data.datamodule, "CHUNK_BATCHES", 2)  # many small sorted chunks: batch counts vary by epoch
    synthetic = registry.default_config("dataset", "synthetic", train_size=600, val_size=5, test_size=5, max_words=15)
    module = ZooDataModule(config(synthetic, max_tokens=40), tmp_path)
    module.setup()
    lengths = set()
    for epoch in range(6):
        cpu = SimpleNamespace(root_device=torch.device("cpu"))
        module.trainer = SimpleNamespace(current_epoch=epoch, world_size=1, global_rank=0, strategy=cpu)
        loader = module.train_dataloader()
        announced = len(loader)
        _set_sampler_epoch(loader, epoch)  # what Lightning does before iterating
        assert announced == sum(1 for _ in loader), f"epoch {epoch}"
        lengths.add(announced)
    assert len(lengths) > 1, "the test needs epochs whose batch counts differ"


class TwoReferences(Dataset):
    """Every item has two references: its sentence and the sentence reversed."""

    @dataclass
    class Config:
        pass

    def splits(self):
        words = ["a dog runs", "the cat sleeps", "birds sing now", "a fox jumps high"]
        items = [Item(f"{k}", w, (w, " ".join(reversed(w.split())))) for k, w in enumerate(words)]
        return {"train": items, "val": items[:2], "test": items[:2]}


def test_training_draws_one_pair_per_reference_and_evaluation_one_row_per_item(tmp_path):
    registry.register("dataset", "two_references")(TwoReferences)
    module = ZooDataModule(config(registry.default_config("dataset", "two_references")), tmp_path)
    module.setup()
    train = list(module.encoded["train"])
    assert len(train) == 8 and sorted(index for _, _, index in train) == [0, 0, 1, 1, 2, 2, 3, 3]
    assert module.task.decode_targets([train[0][1], train[1][1]]) == list(module.items["val"][0].references)
    assert [index for _, _, index in list(module.encoded["val"])] == [0, 1]


def test_a_dataset_of_another_source_kind_is_refused_before_loading(tmp_path):
    class Pictures(TwoReferences):
        source_kind = "image"

    registry.register("dataset", "pictures")(Pictures)
    with pytest.raises(DataError, match="gives image sources but task 'translation' reads text"):
        ZooDataModule(config(registry.default_config("dataset", "pictures")), tmp_path)


def test_a_frontend_for_another_kind_of_source_is_refused_before_loading(tmp_path):
    cfg = config()
    cfg.frontend = registry.default_config("frontend", "cnn")
    with pytest.raises(DataError, match="frontend 'cnn' reads image but task 'translation' gives tokens"):
        ZooDataModule(cfg, tmp_path)


def row_by_row_batches(sizes, order, max_tokens):
    """The batching rule stated one row at a time: close the batch when the size drops or the next row would take
    batch size x longest over the budget."""
    batches, batch, longest, previous = [], [], 0, 0
    for k in order:
        if batch and (sizes[k] < previous or (len(batch) + 1) * max(longest, sizes[k]) > max_tokens):
            batches.append(batch)
            batch, longest = [], 0
        batch.append(k)
        longest, previous = max(longest, sizes[k]), sizes[k]
    return batches + [batch] if batch else batches


def test_batches_cut_by_bisection_are_the_row_by_row_rule():
    generator = torch.Generator().manual_seed(0)
    for trial in range(100):
        n, budget, chunk = (
            int(torch.randint(low, high, (1,), generator=generator)) for low, high in ((1, 300), (40, 200), (1, 50))
        )
        sizes = torch.randint(1, 40, (n,), generator=generator).tolist()
        for shuffle in (False, True):
            sampler = LengthBucketSampler(sizes, shuffle, seed=trial, chunk_size=chunk)
            expected = row_by_row_batches(sizes, sampler.order().tolist(), budget)
            if shuffle:
                sampler.rng("batches").shuffle(expected)
            assert TokenBudgetBatchSampler(sampler, budget).batches() == expected


def test_pad_right_pads_each_row_in_order_with_at_least_one_column():
    assert pad([[5, 6, 7], (8,), []]).tolist() == [[5, 6, 7], [8, PAD, PAD], [PAD, PAD, PAD]]
    assert pad([[]]).tolist() == [[PAD]] and pad([]).shape == (0, 1)
    assert pad([[70000, 1]]).dtype == torch.long
