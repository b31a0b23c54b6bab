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
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import lightning as L
import numpy as np
import torch
from torch.utils.data import DataLoader
from torch.utils.data import Dataset as TorchDataset

from zoo.contracts import SPLITS, Item, Task
from zoo.data.collate import Collate
from zoo.data.prepare import PreparedData, preparable, prepared_data, read_splits, trained_references
from zoo.data.references import TrainingReferences
from zoo.data.sampling import DataError, LengthBucketSampler, TokenBudgetBatchSampler
from zoo.registry import build, get

log = logging.getLogger(__name__)

# A training chunk (shuffled, then sorted by size) holds about this many batches.
CHUNK_BATCHES = 100


class EncodedSplit(TorchDataset):
    """Encoded rows of one split: row ``k`` is ``(encoded source, target ids, item index)``.

    ``sources`` holds one encoded source per item and ``targets`` the ids of each target row, ``target_item``
    the item a target row belongs to: lists in memory, or the mapped files of prepared data
    (:class:`zoo.data.store.Sequences`), read row by row. ``kept`` are the target rows used, ``sizes`` the
    padded width each needs: max(source size, target length + 1).
    """

    def __init__(
        self, sources: Sequence, targets: Sequence, target_item: np.ndarray, kept: np.ndarray, sizes: np.ndarray
    ) -> None:
        self.sources, self.targets, self.target_item = sources, targets, target_item
        self.kept, self.sizes = kept, sizes

    def __len__(self) -> int:
        return len(self.kept)

    def __getitem__(self, k: int) -> tuple[Any, list[int], int]:
        row = int(self.kept[k])
        index = int(self.target_item[row])
        return self.sources[index], self.targets[row], index


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
        self._fitted = False  # codecs fitted by this data module and not yet saved to the run directory (at setup)
        self.prepared: PreparedData | None = None  # the prepared files the splits are read from
        self._samplers: dict[str, LengthBucketSampler] = {}
        self._resume_at: tuple[int, int] | None = None  # (epoch, training batches done) from a checkpoint
        self._training_references: TrainingReferences | None = None

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
        """The evaluation splits' items and the task's codecs, read once; nothing is written to the run directory
        (a run reads its data before it writes its directory, so missing or malformed data is refused before the
        run exists). Codecs are fitted on the training split, unless the run directory holds its own already (a
        resumed run keeps its ids).

        With ``data.prepare`` (and a task whose sources are ids), the splits come from prepared, memory-mapped
        files (:mod:`zoo.data.prepare`), prepared first if need be; the training items are then never held.
        Otherwise ``items`` holds every split, encoded at :meth:`setup`."""
        if self.items:
            return self.items
        if self.cfg["data"]["prepare"] and preparable(self.task):
            prepared = prepared_data(self.cfg)
            if not self.task.saved(self.run_dir) or prepared.same_codecs(self.run_dir):
                log.info("reading the splits prepared in %s", prepared.folder)
                self.prepared = prepared
                self.items = {split: prepared.items(split) for split in SPLITS if split != "train"}
                if not self.task.saved(self.run_dir):
                    self.task.load(prepared.codecs)
                    self._fitted = True
                return self.items
            log.warning(
                "the run's codecs in %s differ from those of the prepared data %s: encoding in memory instead",
                self.run_dir,
                prepared.folder,
            )
        self.items = read_splits(self.cfg)
        if not self.task.saved(self.run_dir):
            self.task.fit(self.items["train"])
            self._fitted = True
        return self.items

    def setup(self, stage: str | None = None) -> None:
        """Every split's rows selected (:meth:`select`), and the codecs this module fitted saved in the run."""
        self.select()
        if self._fitted:
            self.task.save(self.run_dir)
            self._fitted = False

    def select(self) -> None:
        """Encode every split and select its rows; nothing is written (a job lays out its budget over them before
        its record starts)."""
        if self.encoded:
            return
        self.read()
        if not self._fitted:
            self.task.load(self.run_dir)
            log.info("loaded the task's codecs from %s", self.run_dir)
        log.info("source: %s; target vocabulary: %d", self.task.source_description(), self.task.target_vocab_size)
        for split in SPLITS:
            self.encoded[split] = self._select(split, *self._encoded(split))

    def training_references(self) -> TrainingReferences:
        """Every training item's references by item index (``batch["index"]``), decoded from its target rows, so
        prepared and in-memory data give the same (:mod:`zoo.data.references`)."""
        if self._training_references is None:
            self.select()
            train = self.encoded["train"]
            self._training_references = TrainingReferences(
                train.targets, train.target_item, len(train.sources), self.task
            )
        return self._training_references

    def _encoded(self, split: str) -> tuple[Sequence, Sequence, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """A split's sources (one per item), targets (:func:`~zoo.data.prepare.trained_references`), each
        target's item and length, each source's size and whether it fits ``data.max_len``."""
        if self.prepared is not None:
            targets, sizes = self.prepared.targets(split), np.asarray(self.prepared.source_size(split))
            target_item = self.prepared.target_item(split)
            return self.prepared.sources(split), targets, target_item, targets.lengths(), sizes, sizes <= self.max_len
        items = self.items[split]
        sources = self.task.encode_sources([item.source for item in items])
        references = [trained_references(split, item) for item in items]
        targets = self.task.encode_targets([ref for refs in references for ref in refs])
        target_item = np.fromiter((k for k, refs in enumerate(references) for _ in refs), np.int64, len(targets))
        lengths = np.fromiter(map(len, targets), np.int64, len(targets))
        sizes = np.fromiter(map(self.task.source_size, sources), np.int64, len(sources))
        fits = np.fromiter((self.task.fits(source, self.max_len) for source in sources), bool, len(sources))
        return sources, targets, target_item, lengths, sizes, fits

    def _select(
        self,
        split: str,
        sources: Sequence,
        targets: Sequence,
        target_item: np.ndarray,
        lengths: np.ndarray,
        source_size: np.ndarray,
        fits: np.ndarray,
    ) -> EncodedSplit:
        """The rows of a split, from the stored lengths (no row is built).

        No row is wider than ``data.max_tokens``, a whole batch's token budget, so no batch
        takes more memory than that budget allows. Training skips what it cannot use, with a
        count in the log (:meth:`_unfit_for_training`); evaluation keeps every item, since
        dropping one would change the score, and refuses a split holding one that is too wide.
        """
        sizes = np.maximum(source_size[target_item], lengths + 1)
        if split != "train":
            self._refuse_too_wide(split, sizes, target_item)
            return EncodedSplit(sources, targets, target_item, np.arange(len(sizes)), sizes)
        unfit = self._unfit_for_training(lengths, fits[target_item], sizes)
        kept = np.flatnonzero(~np.any(list(unfit.values()), axis=0)) if unfit else np.arange(len(sizes))
        self._report_skipped({reason: int(mask.sum()) for reason, mask in unfit.items()}, len(kept))
        return EncodedSplit(sources, targets, target_item, kept, sizes[kept])

    def _unfit_for_training(self, lengths: np.ndarray, fits: np.ndarray, sizes: np.ndarray) -> dict[str, np.ndarray]:
        """The training rows to skip, by reason (each row under its first): an empty target, a side longer than
        ``data.max_len`` tokens (BOS/EOS included), or more positions than ``data.max_tokens`` (a batch of one
        would exceed the budget; only when data.max_len is the larger, or a source is not text)."""
        empty = lengths == 0
        too_long = ~empty & (~fits | (lengths + 1 > self.max_len))
        too_wide = ~empty & ~too_long & (sizes > self.max_tokens)
        reasons = {
            "with an empty target": empty,
            f"longer than data.max_len={self.max_len} tokens": too_long,
            f"wider than a whole batch, data.max_tokens={self.max_tokens}": too_wide,
        }
        return {reason: mask for reason, mask in reasons.items() if mask.any()}

    def _report_skipped(self, skipped: dict[str, int], kept: int) -> None:
        """Log how many training pairs were skipped and why; none left is an error."""
        why = ", ".join(f"{count} {reason}" for reason, count in skipped.items())
        if not kept:
            raise DataError(
                f"no training pair fits data.max_len={self.max_len} and data.max_tokens={self.max_tokens} "
                f"({why}); raise data.max_len (and data.max_tokens if it is the smaller)"
            )
        if skipped:
            total = sum(skipped.values())
            log.info("train: skipped %d of %d pairs: %s", total, total + kept, why)

    def _refuse_too_wide(self, split: str, sizes: np.ndarray, target_item: np.ndarray) -> None:
        """Refuse an evaluation split with an item wider than ``data.max_tokens``, naming the first (its id says
        where it comes from, e.g. ``val:7``: line 7 of the val file): skipping it would change the score."""
        too_wide = np.flatnonzero(sizes > self.max_tokens)
        if not too_wide.size:
            return
        first = int(too_wide[0])
        others = f" ({too_wide.size - 1} more are too)" if too_wide.size > 1 else ""
        raise DataError(
            f"{split} item {self.items[split][int(target_item[first])].id} has {int(sizes[first])} tokens, more than "
            f"a batch may hold (data.max_tokens={self.max_tokens}){others}; raise data.max_tokens to "
            f"{int(sizes[too_wide].max())} (training batches may then grow as large) or remove the item"
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
        self.select()
        if split not in self._samplers:  # one per split: a loader built again in the same epoch reuses its order
            sizes = self.encoded[split].sizes
            per_batch = max(1, self.max_tokens * len(sizes) // max(1, int(np.sum(sizes))))
            self._samplers[split] = LengthBucketSampler(
                sizes, shuffle, seed=int(self.cfg["seed"]), chunk_size=CHUNK_BATCHES * per_batch
            )
        sampler = self._samplers[split]
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
            # Page-locked batches copy to a GPU without a staging copy, and asynchronously.
            pin_memory=self.trainer is not None and self.trainer.strategy.root_device.type == "cuda",
        )
