"""The LightningModule, the same for every task: loss, optimiser and schedule, decoding, metric plugins."""
from __future__ import annotations

import dataclasses
from typing import Any

import lightning as L
import torch
from torch import nn

from zoo.config.sections import DecodeConfig
from zoo.contracts import PAD, SourceDescription
from zoo.decoding import generate
from zoo.model import Seq2Seq
from zoo.training.evaluation import MetricSuite
from zoo.training.schedule import warmup_then_decay


class ZooModule(L.LightningModule):
    """Trains a :class:`~zoo.model.Seq2Seq` with label-smoothed cross-entropy and scores it with the run's metrics.

    ``cfg`` is the whole composed config as a plain dict, ``source`` the task's
    :class:`~zoo.contracts.SourceDescription` as a dict and ``target_vocab_size``
    the target tokenizer's; all three are stored in every checkpoint so a run can be
    rebuilt from its checkpoint alone. Evaluation asks the task (the data module's)
    how long outputs may be and turns ids into text; validation decodes greedily.
    """

    def __init__(self, cfg: dict, source: dict, target_vocab_size: int) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.cfg = cfg
        self.model = Seq2Seq(cfg, SourceDescription(**source), target_vocab_size)
        self.loss_fn = nn.CrossEntropyLoss(ignore_index=PAD, label_smoothing=cfg["optim"]["label_smoothing"])
        self.metrics = MetricSuite(cfg)
        self.test_decode = DecodeConfig(**cfg["decode"])
        self.val_decode = dataclasses.replace(self.test_decode, strategy="greedy")  # validation is always greedy
        self._outputs: list[tuple[torch.Tensor, list[list[int]]]] = []
        self.results: dict[str, dict[str, Any]] = {}  # split -> scores and hypotheses of the latest evaluation

    # ------------------------------------------------------------------ training
    def _loss(self, batch: dict) -> torch.Tensor:
        logits = self.model(batch["source"], batch["target_in"]).logits
        return self.loss_fn(logits.reshape(-1, logits.size(-1)), batch["target_out"].reshape(-1))

    def training_step(self, batch: dict, batch_idx: int) -> torch.Tensor:
        loss = self._loss(batch)
        self.log("train/loss", loss, prog_bar=True, batch_size=batch["source"].size(0))
        return loss

    def configure_optimizers(self):
        opt = self.cfg["optim"]
        optimizer = torch.optim.AdamW(
            [p for p in self.parameters() if p.requires_grad],
            lr=opt["lr"],
            betas=tuple(opt["betas"]),
            weight_decay=opt["weight_decay"],
        )
        total = self.trainer.estimated_stepping_batches if self.trainer is not None else 1
        factor = warmup_then_decay(opt["schedule"], opt["warmup_steps"], int(min(total, 10**9)))
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}

    # ------------------------------------------------------------------ evaluation
    def _evaluate_step(self, batch: dict, decode: DecodeConfig, split: str) -> None:
        loss = self._loss(batch)
        self.log(f"{split}/loss", loss, batch_size=batch["source"].size(0))
        task = self.trainer.datamodule.task
        hypotheses = generate(self.model, batch["source"], decode, max_len=task.output_limit(batch["source"]))
        self._outputs.append((batch["index"].cpu(), hypotheses))

    def _evaluate_epoch(self, split: str) -> None:
        """Score every item of ``split`` against all its references with every metric; log them."""
        data = self.trainer.datamodule
        order = {}
        for index, hyps in self._outputs:
            order.update(zip(index.tolist(), hyps))
        self._outputs.clear()
        items = [data.items[split][i] for i in sorted(order)]
        hypotheses = data.task.decode_targets([order[i] for i in sorted(order)])
        references = [item.references for item in items]
        scores = self.metrics.scores(hypotheses, references)
        for name, score in scores.items():
            self.log(f"{split}/{name}", score, prog_bar=name == self.metrics.monitor)
        self.results[split] = {"scores": scores, "items": items, "hypotheses": hypotheses}

    def validation_step(self, batch: dict, batch_idx: int) -> None:
        self._evaluate_step(batch, self.val_decode, "val")

    def on_validation_epoch_end(self) -> None:
        if not self.trainer.sanity_checking:
            self._evaluate_epoch("val")
        else:
            self._outputs.clear()

    def test_step(self, batch: dict, batch_idx: int) -> None:
        self._evaluate_step(batch, self.test_decode, "test")

    def on_test_epoch_end(self) -> None:
        self._evaluate_epoch("test")
