"""The data module, the same for every task: items -> encoded pairs -> token-budget batches.

The dataset plugin gives items (id, source, references); the task plugin trains
or loads its codecs and encodes sources and targets. Training draws one pair per
reference of an item; evaluation has one row per item (its first reference
gives the validation loss; metrics score against all references).
Batches are the dict described in :mod:`zoo.data.collate`.
"""

from __future__ import annotations

import logging
import os
from collections import Counter
from pathlib import Path
from typing import Any

import lightning as L
import torch
from torch.utils.data import DataLoader
from torch.utils.data import Dataset as TorchDataset

from zoo.contracts import SPLITS, Item, Task
from zoo.data.collate import Collate
from zoo.data.sampling import DataError, LengthBucketSampler, TokenBudgetBatchSampler
from zoo.registry import build, get

log = logging.getLogger(__name__)

# A training chunk (shuffled, then sorted by size) holds about this many batches.
CHUNK_BATCHES = 100


class EncodedSplit(TorchDataset):
    """Encoded rows of one split: row ``k`` is ``(encoded source, target ids, item index)``."""

    def __init__(self, rows: list[tuple[Any, list[int], int]], sizes: list[int]) -> None:
        self.rows = rows
        self.sizes = sizes  # padded width each row needs: max(source size, target length + 1)

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, k: int) -> tuple[Any, list[int], int]:
        return self.rows[k]


def build_task(cfg: Any) -> Task:
    """The run's task plugin, checked against the dataset's kind of source and the frontend's."""
    task_name, dataset_name, frontend_name = (cfg[kind]["name"] for kind in ("task", "dataset", "frontend"))
    dataset_kind = get("dataset", dataset_name).cls.source_kind
    task_cls = get("task", task_name).cls
    if dataset_kind != task_cls.source_kind:
        raise DataError(
            f"dataset '{dataset_name}' gives {dataset_kind} sources but task '{task_name}' reads "
            f"{task_cls.source_kind}; choose a dataset made for the task (zoo list dataset)"
        )
    frontend_kind = get("frontend", frontend_name).cls.source_kind
    if frontend_kind not in task_cls.frontend_kinds:
        raise DataError(
            f"frontend '{frontend_name}' reads {frontend_kind} but task '{task_name}' gives "
            f"{' or '.join(task_cls.frontend_kinds)}; choose a frontend for the task (zoo list frontend)"
        )
    return build("task", cfg["task"], tokenizer=cfg["tokenizer"], frontend=cfg["frontend"])


class ZooDataModule(L.LightningDataModule):
    """Builds a run's dataset and task codecs and serves batches of every split.

    ``cfg`` is the composed config (sections ``task``, ``dataset``, ``tokenizer``,
    ``data`` and ``seed``). After :meth:`setup`: ``task`` (codecs trained on the
    training split, or loaded when ``run_dir`` already holds them, so ids never
    change within a run), ``items[split]`` and ``encoded[split]``;
    ``batch["index"]`` points into ``items[split]``.
    """

    def __init__(self, cfg: Any, run_dir: str | os.PathLike) -> None:
        super().__init__()
        self.cfg = cfg
        self.run_dir = Path(run_dir)
        data = cfg["data"]
        self.max_tokens = int(data["max_tokens"])
        self.max_len = int(data["max_len"])
        self.num_workers = int(data["num_workers"])
        self.task = build_task(cfg)
        self.items: dict[str, list[Item]] = {}
        self.encoded: dict[str, EncodedSplit] = {}
        self._fitted = False  # codecs fitted by this data module (saved to the run directory at setup)
        self._resume_at: tuple[int, int] | None = None  # (epoch, training batches done) from a checkpoint

    # ------------------------------------------------------------------ resuming
    def state_dict(self) -> dict:
        """Saved in every checkpoint: how far the current training epoch had gone (batches whose step is done)."""
        if self.trainer is None:
            return {}
        progress = self.trainer.fit_loop.epoch_loop.batch_progress.current
        return {"train_epoch": self.trainer.current_epoch, "train_batches_done": progress.processed}

    def load_state_dict(self, state: dict) -> None:
        if "train_epoch" in state:
            self._resume_at = (int(state["train_epoch"]), int(state["train_batches_done"]))

    def read(self) -> dict[str, list[Item]]:
        """The dataset's splits, read once, and the task's codecs fitted on the training split (unless the run
        directory holds codecs already: a resumed run keeps its ids). Nothing is written: a run reads its data
        before it writes its directory, so missing or malformed data is refused before the run exists."""
        if not self.items:
            splits = build("dataset", self.cfg["dataset"]).splits()
            missing = [s for s in SPLITS if not splits.get(s)]
            if missing:
                raise DataError(f"dataset '{self.cfg['dataset']['name']}' returned no {', '.join(missing)} items")
            self.items = {split: splits[split] for split in SPLITS}
            if not self.task.saved(self.run_dir):
                self.task.fit(self.items["train"])
                self._fitted = True
        return self.items

    def setup(self, stage: str | None = None) -> None:
        if self.encoded:
            return
        self.read()
        if self._fitted:
            self.task.save(self.run_dir)
        else:
            self.task.load(self.run_dir)
            log.info("loaded the task's codecs from %s", self.run_dir)
        log.info("source: %s; target vocabulary: %d", self.task.source_description(), self.task.target_vocab_size)
        for split in SPLITS:
            self.encoded[split] = self._encode(split)

    def _encode(self, split: str) -> EncodedSplit:
        """One row per reference in training, per item (its first reference) in evaluation.

        No row is wider than ``data.max_tokens``, a whole batch's token budget, so no batch
        takes more memory than that budget allows. Training skips what it cannot use, with a
        count in the log (:meth:`_unfit_for_training`); evaluation keeps every item, since
        dropping one would change the score, and refuses a split holding one that is too wide.
        """
        items = self.items[split]
        sources = self.task.encode_sources([item.source for item in items])
        references = [item.references if split == "train" else item.references[:1] for item in items]
        targets = iter(self.task.encode_targets([ref for refs in references for ref in refs]))
        rows, sizes, skipped = [], [], Counter()
        for index, (source, refs) in enumerate(zip(sources, references)):
            source_size, fits = self.task.source_size(source), self.task.fits(source, self.max_len)
            for target in (next(targets) for _ in refs):
                size = max(source_size, len(target) + 1)
                reason = self._unfit_for_training(target, fits, size) if split == "train" else None
                if reason:
                    skipped[reason] += 1
                    continue
                rows.append((source, target, index))
                sizes.append(size)
        if split == "train":
            self._report_skipped(skipped, rows)
        else:
            self._refuse_too_wide(split, rows, sizes)
        return EncodedSplit(rows, sizes)

    def _unfit_for_training(self, target: list[int], source_fits: bool, size: int) -> str | None:
        """Why a training pair is skipped, or None: an empty target, a side longer than ``data.max_len``
        tokens (BOS/EOS included), or more positions than ``data.max_tokens`` (a batch of one would
        exceed the budget; only when data.max_len is the larger, or a source is not text)."""
        if not target:
            return "with an empty target"
        if not source_fits or len(target) + 1 > self.max_len:
            return f"longer than data.max_len={self.max_len} tokens"
        if size > self.max_tokens:
            return f"wider than a whole batch, data.max_tokens={self.max_tokens}"
        return None

    def _report_skipped(self, skipped: Counter, rows: list) -> None:
        """Log how many training pairs were skipped and why; none left is an error."""
        why = ", ".join(f"{count} {reason}" for reason, count in skipped.items())
        if not rows:
            raise DataError(
                f"no training pair fits data.max_len={self.max_len} and data.max_tokens={self.max_tokens} "
                f"({why}); raise data.max_len (and data.max_tokens if it is the smaller)"
            )
        if skipped:
            log.info("train: skipped %d of %d pairs: %s", skipped.total(), skipped.total() + len(rows), why)

    def _refuse_too_wide(self, split: str, rows: list, sizes: list[int]) -> None:
        """Refuse an evaluation split with an item wider than ``data.max_tokens``, naming the first (its id says
        where it comes from, e.g. ``val:7``: line 7 of the val file): skipping it would change the score."""
        too_wide = [(size, index) for (_, _, index), size in zip(rows, sizes) if size > self.max_tokens]
        if not too_wide:
            return
        size, index = too_wide[0]
        others = f" ({len(too_wide) - 1} more are too)" if len(too_wide) > 1 else ""
        raise DataError(
            f"{split} item {self.items[split][index].id} has {size} tokens, more than a batch may hold "
            f"(data.max_tokens={self.max_tokens}){others}; raise data.max_tokens to "
            f"{max(size for size, _ in too_wide)} (training batches may then grow as large) or remove the item"
        )

    # ------------------------------------------------------------------ loaders
    def train_dataloader(self) -> DataLoader:
        return self._loader("train", shuffle=True)

    def val_dataloader(self) -> DataLoader:
        return self._loader("val", shuffle=False)

    def test_dataloader(self) -> DataLoader:
        return self._loader("test", shuffle=False)

    def batch_sampler(self, split: str, shuffle: bool) -> TokenBudgetBatchSampler:
        """The batch sampler of a split; under DDP each process gets its share of the batches of every split
        (evaluation: every batch exactly once, see :meth:`TokenBudgetBatchSampler.evaluation_share`)."""
        self.setup()
        sizes = self.encoded[split].sizes
        per_batch = max(1, self.max_tokens * len(sizes) // max(1, sum(sizes)))
        sampler = LengthBucketSampler(sizes, shuffle, seed=int(self.cfg["seed"]), chunk_size=CHUNK_BATCHES * per_batch)
        world, rank = 1, 0
        if self.trainer is not None:
            world, rank = self.trainer.world_size, self.trainer.global_rank
            if shuffle:
                # The number of batches differs a little between epochs. Lightning reloads this loader every
                # epoch (reload_dataloaders_every_n_epochs=1) and reads its length once, so the length must
                # already be that of the coming epoch, or the end-of-epoch validation is skipped.
                sampler.set_epoch(self.trainer.current_epoch)
        skip = 0
        # Resumed mid-epoch: the batches seen before the checkpoint are not seen again. Lightning may build this
        # loader once before it has restored the epoch, so the skip waits for the loader of the saved epoch.
        if (
            shuffle
            and self._resume_at is not None
            and self.trainer is not None
            and self._resume_at[0] == self.trainer.current_epoch
        ):
            skip, self._resume_at = self._resume_at[1], None
        return TokenBudgetBatchSampler(sampler, self.max_tokens, num_replicas=world, rank=rank, skip=skip)

    def _loader(self, split: str, shuffle: bool) -> DataLoader:
        batches = self.batch_sampler(split, shuffle)  # sets the data up on first use
        return DataLoader(
            self.encoded[split],
            batch_sampler=batches,
            collate_fn=Collate(self.task.collate_sources),
            num_workers=self.num_workers,
            # Its own generator: making an iterator then draws nothing from torch's global one, so a run resumed
            # from a checkpoint draws (dropout) exactly what the run would have drawn without stopping.
            generator=torch.Generator().manual_seed(int(self.cfg["seed"])),
            persistent_workers=self.num_workers > 0,
        )
