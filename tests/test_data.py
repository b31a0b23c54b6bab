"""The data module: tokenizers in the run directory, token-budget batches, padding and shuffling."""
import pytest
import torch
from lightning.fabric.utilities.data import _set_sampler_epoch
from omegaconf import OmegaConf

import zoo.data.datamodule
from zoo import registry
from zoo.registry import discovery
from zoo.contracts import BOS, EOS, PAD, UNK
from zoo.data.datamodule import (
    DataError,
    LengthBucketSampler,
    TokenBudgetBatchSampler,
    TranslationData,
    load_tokenizers,
    tokenizer_paths,
)

discovery.discover()

MAX_TOKENS = 150


def config(dataset=None, tokenizer="word", seed=7, **data):
    dataset = dataset or registry.default_config("dataset", "synthetic", train_size=120, val_size=15, test_size=15, max_words=15)
    return OmegaConf.create({
        "seed": seed,
        "dataset": dataset,
        "tokenizer": registry.default_config("tokenizer", tokenizer),
        "data": {"max_tokens": MAX_TOKENS, "max_len": 64, "joint_vocab": False, "num_workers": 0, **data},
    })


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    module = TranslationData(config(), tmp_path_factory.mktemp("run"))
    module.setup()
    return module


def all_batches(module):
    return {split: list(getattr(module, f"{split}_dataloader")()) for split in ("train", "val", "test")}


def test_every_batch_keeps_the_token_budget_and_every_pair_appears_once(data):
    for split, batches in all_batches(data).items():
        for batch in batches:
            rows, width = batch["source"].size(0), max(batch["source"].size(1), batch["target_in"].size(1))
            assert rows * width <= MAX_TOKENS or rows == 1
        seen = sorted(i for batch in batches for i in batch["index"].tolist())
        assert seen == sorted(i for _, _, i in data.encoded[split].items)
    assert len(data.encoded["val"]) == len(data.references["val"]) == 15


def test_padding_bos_eos_and_text_alignment(data):
    batch = next(iter(data.val_dataloader()))
    assert batch["source"].dtype == batch["target_in"].dtype == batch["index"].dtype == torch.long
    assert batch["target_in"].shape == batch["target_out"].shape
    for row, index in enumerate(batch["index"].tolist()):
        source = data.src_tokenizer.encode([data.sources["val"][index]])[0]
        target = data.tgt_tokenizer.encode([data.references["val"][index]])[0]
        n = len(target)
        assert batch["source"][row, : len(source)].tolist() == source
        assert (batch["source"][row, len(source) :] == PAD).all()
        assert batch["target_in"][row, : n + 1].tolist() == [BOS, *target]
        assert batch["target_out"][row, : n + 1].tolist() == [*target, EOS]
        assert (batch["target_in"][row, n + 1 :] == PAD).all() and (batch["target_out"][row, n + 1 :] == PAD).all()
        assert data.tgt_tokenizer.decode([batch["target_out"][row].tolist()]) == data.tgt_tokenizer.decode([target])
    assert int((batch["target_out"] != PAD).sum()) == int((batch["target_in"] != PAD).sum())


def test_evaluation_batches_are_sorted_and_fixed(data):
    first = [b["index"].tolist() for b in data.test_dataloader()]
    assert first == [b["index"].tolist() for b in data.test_dataloader()]
    sizes = {i: s for (_, _, i), s in zip(data.encoded["test"].items, data.encoded["test"].sizes)}
    flat = [sizes[i] for batch in first for i in batch]
    assert flat == sorted(flat)


def test_training_order_depends_only_on_seed_and_epoch(data, tmp_path):
    def order(module, epoch):
        loader = module.train_dataloader()
        _set_sampler_epoch(loader, epoch)  # what Lightning does before each epoch
        return [b["index"].tolist() for b in loader]

    other = TranslationData(config(), data.run_dir)  # same seed, fresh object
    assert order(data, 0) == order(other, 0)
    assert order(data, 1) == order(other, 1)
    assert order(data, 0) != order(data, 1)
    reseeded = TranslationData(config(seed=8), tmp_path)
    assert order(reseeded, 0) != order(data, 0)


def test_tokenizers_are_saved_and_reused(data, monkeypatch):
    source_file, target_file = tokenizer_paths(data.run_dir)
    assert source_file.is_file() and target_file.is_file()
    monkeypatch.setattr(zoo.data.datamodule, "train_tokenizers", lambda *a: pytest.fail("tokenizers were retrained"))
    resumed = TranslationData(config(), data.run_dir)
    resumed.setup()
    text = data.references["test"][:5]
    assert resumed.tgt_tokenizer.encode(text) == data.tgt_tokenizer.encode(text)
    src, tgt = load_tokenizers(data.run_dir, config().tokenizer, joint=False)
    assert tgt.encode(text) == data.tgt_tokenizer.encode(text) and src.vocab_size == data.src_tokenizer.vocab_size


def test_joint_vocabulary_is_one_tokenizer(tmp_path):
    module = TranslationData(config(joint_vocab=True), tmp_path)
    module.setup()
    assert module.src_tokenizer is module.tgt_tokenizer
    source, target = load_tokenizers(tmp_path, config().tokenizer, joint=True)
    assert source is target
    assert source.encode(module.sources["train"][:3] + module.references["train"][:3]) == module.src_tokenizer.encode(
        module.sources["train"][:3] + module.references["train"][:3]
    )


def test_vocabulary_comes_from_the_training_split_only(tmp_path):
    root = tmp_path / "corpus"
    root.mkdir()
    for split, (de, en) in {"train": ("ein hund", "a dog"), "val": ("ein zebra", "a zebra"), "test": ("ein hund", "a dog")}.items():
        (root / f"{split}.tsv").write_text(f"{de}\t{en}\n")
    dataset = registry.default_config("dataset", "parallel", root=str(root), test="test")
    module = TranslationData(config(dataset=dataset), tmp_path / "run")
    module.setup()
    (val_source, val_target, _), = module.encoded["val"].items
    assert val_source[1] == UNK and val_target[1] == UNK
    assert module.tgt_tokenizer.vocab_size == 4 + 2


def test_long_training_pairs_are_skipped_but_evaluation_keeps_all(tmp_path):
    module = TranslationData(config(max_len=8), tmp_path)
    module.setup()
    train = module.encoded["train"].items
    assert 0 < len(train) < len(module.sources["train"])
    assert all(len(src) <= 8 and len(tgt) + 1 <= 8 for src, tgt, _ in train)
    assert len(module.encoded["test"]) == len(module.sources["test"])


def test_no_pair_fits_max_len(tmp_path):
    with pytest.raises(DataError, match="raise data.max_len"):
        TranslationData(config(max_len=1), tmp_path).setup()


def test_missing_tokenizers_are_a_clear_error(tmp_path):
    with pytest.raises(DataError, match="no trained tokenizer"):
        load_tokenizers(tmp_path, config().tokenizer, joint=False)


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


def test_training_loader_length_is_that_of_the_epoch_it_serves(tmp_path, monkeypatch):
    """Lightning reads the loader's length once per epoch; a wrong length silently skips validation."""
    from types import SimpleNamespace

    monkeypatch.setattr(zoo.data.datamodule, "CHUNK_BATCHES", 2)  # many small sorted chunks: batch counts vary by epoch
    synthetic = registry.default_config("dataset", "synthetic", train_size=600, val_size=5, test_size=5, max_words=15)
    module = TranslationData(config(synthetic, max_tokens=40), tmp_path)
    module.setup()
    lengths = set()
    for epoch in range(6):
        module.trainer = SimpleNamespace(current_epoch=epoch, world_size=1, global_rank=0)
        loader = module.train_dataloader()
        announced = len(loader)
        _set_sampler_epoch(loader, epoch)  # what Lightning does before iterating
        assert announced == sum(1 for _ in loader), f"epoch {epoch}"
        lengths.add(announced)
    assert len(lengths) > 1, "the test needs epochs whose batch counts differ"
