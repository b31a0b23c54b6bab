"""The data module: dataset -> tokenizers -> length-bucketed batches within a token budget.

Every batch is a dict of tensors (``B`` sentences, ``S``/``T`` the longest
source/target in the batch, shorter rows padded with PAD)::

    source      (B, S) long   token ids, no BOS/EOS
    target_in   (B, T) long   [BOS] + y       (decoder input, teacher forcing)
    target_out  (B, T) long   y + [EOS]       (what the decoder must predict)
    index       (B,)   long   position of each pair in its split

``(batch["target_out"] != PAD).sum()`` counts the real target tokens.

A batch holds as many sentences as fit a token budget,
``B * max(S, T) <= data.max_tokens`` (a single longer pair still gets a batch of
its own). Sorting by length first means little padding (the bucketing of
Sutskever et al., 2014 and of fairseq's token-based batches, Ott et al., 2019).
"""
from __future__ import annotations

import itertools
import logging
import os
import random
from pathlib import Path
from typing import Any, Iterator, Sequence

import lightning as L
import torch
from torch.utils.data import DataLoader, Sampler
from torch.utils.data import Dataset as TorchDataset

from zoo.contracts import BOS, EOS, PAD, UNK, Example, Tokenizer
from zoo.data.sampling import DataError, LengthBucketSampler, TokenBudgetBatchSampler
from zoo.registry import build

log = logging.getLogger(__name__)

SPLITS = ("train", "val", "test")
TOKENIZER_DIR = "tokenizers"
# A training chunk (shuffled, then sorted by size) holds about this many batches.
CHUNK_BATCHES = 100


# --------------------------------------------------------------------------- tokenizers
def tokenizer_paths(run_dir: str | os.PathLike) -> tuple[Path, Path]:
    """Where a run keeps its source and target tokenizers."""
    folder = Path(run_dir) / TOKENIZER_DIR
    return folder / "source.json", folder / "target.json"


def load_tokenizers(run_dir: str | os.PathLike, tokenizer_cfg: Any, joint: bool) -> tuple[Tokenizer, Tokenizer]:
    """The trained tokenizers of a run: ``(source, target)``; the same object twice when ``joint``."""
    src_path, tgt_path = tokenizer_paths(run_dir)
    missing = [str(p) for p in (src_path, tgt_path) if not p.is_file()]
    if missing:
        raise DataError(f"no trained tokenizer {', '.join(missing)}; train a model in {run_dir} first")
    source = build("tokenizer", tokenizer_cfg)
    source.load(str(src_path))
    if joint:
        return source, source
    target = build("tokenizer", tokenizer_cfg)
    target.load(str(tgt_path))
    return source, target


def train_tokenizers(tokenizer_cfg: Any, train: Sequence[Example], joint: bool) -> tuple[Tokenizer, Tokenizer]:
    """Tokenizers trained on the training pairs only: one per side, or one on both sides when ``joint``."""
    sources = [example.source for example in train]
    targets = [example.target for example in train]
    source = build("tokenizer", tokenizer_cfg)
    if joint:
        source.train(itertools.chain(sources, targets))
        return source, source
    source.train(sources)
    target = build("tokenizer", tokenizer_cfg)
    target.train(targets)
    return source, target


def save_tokenizers(run_dir: str | os.PathLike, source: Tokenizer, target: Tokenizer) -> None:
    """Write both tokenizers into the run; each file appears complete or not at all
    (processes of a multi-GPU run may write the same files at the same time)."""
    for tokenizer, path in zip((source, target), tokenizer_paths(run_dir)):
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tokenizer.save(str(partial))
        os.replace(partial, path)


# --------------------------------------------------------------------------- tensors
class EncodedSplit(TorchDataset):
    """Token ids of one split: item ``k`` is ``(source ids, target ids, index in the split)``."""

    def __init__(self, items: list[tuple[list[int], list[int], int]]) -> None:
        self.items = items

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, k: int) -> tuple[list[int], list[int], int]:
        return self.items[k]

    @property
    def sizes(self) -> list[int]:
        """Padded width each pair needs: ``max(len(source), len(target) + 1)`` (BOS/EOS add one)."""
        return [max(len(src), len(tgt) + 1) for src, tgt, _ in self.items]


def pad(sequences: Sequence[Sequence[int]]) -> torch.Tensor:
    """Token id lists -> (B, longest) long tensor, PAD on the right (at least one column)."""
    batch = torch.full((len(sequences), max([1, *map(len, sequences)])), PAD, dtype=torch.long)
    for row, ids in enumerate(sequences):
        batch[row, : len(ids)] = torch.tensor(ids, dtype=torch.long)
    return batch


def collate(items: Sequence[tuple[Sequence[int], Sequence[int], int]]) -> dict[str, torch.Tensor]:
    """Pad a list of ``(source ids, target ids, index)`` into the batch dict described above."""
    return {
        "source": pad([src for src, _, _ in items]),
        "target_in": pad([[BOS, *tgt] for _, tgt, _ in items]),
        "target_out": pad([[*tgt, EOS] for _, tgt, _ in items]),
        "index": torch.tensor([i for _, _, i in items], dtype=torch.long),
    }


# --------------------------------------------------------------------------- the module
class TranslationData(L.LightningDataModule):
    """Builds the dataset and tokenizers of a run and serves its batches.

    ``cfg`` is the composed config (sections ``dataset``, ``tokenizer``, ``data``
    and ``seed``). After :meth:`setup`: ``src_tokenizer``/``tgt_tokenizer``,
    ``sources[split]``/``references[split]`` (raw text; ``batch["index"]``
    points into them) and ``encoded[split]``.

    Tokenizers are trained on the training split only and saved in
    ``run_dir/tokenizers/``; if they are already there (a resumed run), they
    are loaded instead, so ids never change within a run.
    """

    def __init__(self, cfg: Any, run_dir: str | os.PathLike) -> None:
        super().__init__()
        self.cfg = cfg
        self.run_dir = Path(run_dir)
        data = cfg["data"]
        self.max_tokens = int(data["max_tokens"])
        self.max_len = int(data["max_len"])
        self.joint_vocab = bool(data["joint_vocab"])
        self.num_workers = int(data["num_workers"])
        if self.max_tokens < 1 or self.max_len < 1:
            raise DataError(f"data.max_tokens={self.max_tokens} and data.max_len={self.max_len} must be positive")
        self.src_tokenizer: Tokenizer | None = None
        self.tgt_tokenizer: Tokenizer | None = None
        self.sources: dict[str, list[Any]] = {}
        self.references: dict[str, list[str]] = {}
        self.encoded: dict[str, EncodedSplit] = {}

    def setup(self, stage: str | None = None) -> None:
        if self.encoded:
            return
        splits = build("dataset", self.cfg["dataset"]).splits()
        missing = [s for s in SPLITS if not splits.get(s)]
        if missing:
            raise DataError(f"dataset '{self.cfg['dataset']['name']}' returned no {', '.join(missing)} examples")
        if all(p.is_file() for p in tokenizer_paths(self.run_dir)):
            self.src_tokenizer, self.tgt_tokenizer = load_tokenizers(self.run_dir, self.cfg["tokenizer"], self.joint_vocab)
            log.info("loaded tokenizers from %s", self.run_dir / TOKENIZER_DIR)
        else:
            self.src_tokenizer, self.tgt_tokenizer = train_tokenizers(self.cfg["tokenizer"], splits["train"], self.joint_vocab)
            save_tokenizers(self.run_dir, self.src_tokenizer, self.tgt_tokenizer)
        log.info("vocabulary: source %d, target %d", self.src_tokenizer.vocab_size, self.tgt_tokenizer.vocab_size)
        for split in SPLITS:
            self.sources[split] = [example.source for example in splits[split]]
            self.references[split] = [example.target for example in splits[split]]
            self.encoded[split] = self._encode(split)

    def _encode(self, split: str) -> EncodedSplit:
        """Token ids of a split. Training drops pairs with an empty side or more than ``max_len``
        tokens (source, or target plus BOS/EOS); evaluation keeps every pair (an empty source becomes [UNK])."""
        sources = self.src_tokenizer.encode(self.sources[split])
        targets = self.tgt_tokenizer.encode(self.references[split])
        items, empty, long = [], 0, 0
        for index, (src, tgt) in enumerate(zip(sources, targets)):
            if split == "train":
                if not src or not tgt:
                    empty += 1
                    continue
                if len(src) > self.max_len or len(tgt) + 1 > self.max_len:
                    long += 1
                    continue
            items.append((src or [UNK], tgt, index))
        if empty or long:
            log.info("train: skipped %d pairs that tokenize to nothing and %d longer than data.max_len=%d tokens",
                     empty, long, self.max_len)
        if not items:
            raise DataError(f"no training pair fits data.max_len={self.max_len} tokens; raise data.max_len")
        return EncodedSplit(items)

    # ------------------------------------------------------------------ loaders
    def train_dataloader(self) -> DataLoader:
        return self._loader("train", shuffle=True)

    def val_dataloader(self) -> DataLoader:
        return self._loader("val", shuffle=False)

    def test_dataloader(self) -> DataLoader:
        return self._loader("test", shuffle=False)

    def batch_sampler(self, split: str, shuffle: bool) -> TokenBudgetBatchSampler:
        """The batch sampler of a split; training batches are split across processes in multi-GPU runs."""
        self.setup()
        sizes = self.encoded[split].sizes
        per_batch = max(1, self.max_tokens * len(sizes) // max(1, sum(sizes)))
        sampler = LengthBucketSampler(sizes, shuffle, seed=int(self.cfg["seed"]), chunk_size=CHUNK_BATCHES * per_batch)
        world, rank = 1, 0
        if shuffle and self.trainer is not None:
            world, rank = self.trainer.world_size, self.trainer.global_rank
            # The number of batches differs a little between epochs. Lightning reloads this loader every
            # epoch (reload_dataloaders_every_n_epochs=1) and reads its length once, so the length must
            # already be that of the coming epoch, or the end-of-epoch validation is skipped.
            sampler.set_epoch(self.trainer.current_epoch)
        return TokenBudgetBatchSampler(sampler, self.max_tokens, num_replicas=world, rank=rank)

    def _loader(self, split: str, shuffle: bool) -> DataLoader:
        batches = self.batch_sampler(split, shuffle)
        return DataLoader(
            self.encoded[split],
            batch_sampler=batches,
            collate_fn=collate,
            num_workers=self.num_workers,
            persistent_workers=self.num_workers > 0,
        )
