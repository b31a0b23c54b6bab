"""The LightningModule: loss, optimiser and schedule, greedy validation, test metrics."""
from __future__ import annotations

import dataclasses

import lightning as L
import torch
from torch import nn

from zoo.config.sections import DecodeConfig
from zoo.contracts import PAD
from zoo.decoding import generate
from zoo.metrics import bleu_by_source_length, corpus_scores
from zoo.model import Seq2Seq
from zoo.training.schedule import warmup_then_decay

class TranslationModule(L.LightningModule):
    """Trains a :class:`~zoo.model.Seq2Seq` with label-smoothed cross-entropy and scores it with BLEU/chrF.

    ``cfg`` is the whole composed config as a plain dict; it is stored in every checkpoint
    so a run can be rebuilt from its checkpoint alone.
    """

    def __init__(self, cfg: dict, src_vocab_size: int, tgt_vocab_size: int) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.cfg = cfg
        self.model = Seq2Seq(cfg, src_vocab_size, tgt_vocab_size)
        self.loss_fn = nn.CrossEntropyLoss(ignore_index=PAD, label_smoothing=cfg["optim"]["label_smoothing"])
        self.test_decode = DecodeConfig(**cfg["decode"])
        self.val_decode = dataclasses.replace(self.test_decode, strategy="greedy")  # validation is always greedy
        self._outputs: list[tuple[torch.Tensor, list[list[int]]]] = []
        self.results: dict[str, dict] = {}  # split -> metrics and hypotheses of the latest evaluation

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
        hypotheses = generate(self.model, batch["source"], decode)
        self._outputs.append((batch["index"].cpu(), hypotheses))

    def _evaluate_epoch(self, split: str) -> None:
        data = self.trainer.datamodule
        order = {}
        for index, hyps in self._outputs:
            order.update(zip(index.tolist(), hyps))
        self._outputs.clear()
        indices = sorted(order)
        hypotheses = data.tgt_tokenizer.decode([order[i] for i in indices])
        references = [data.references[split][i] for i in indices]
        sources = [data.sources[split][i] for i in indices]
        scores = corpus_scores(hypotheses, references)
        self.log(f"{split}/bleu", scores["bleu"], prog_bar=True)
        self.log(f"{split}/chrf", scores["chrf"])
        self.results[split] = {
            **scores,
            "sources": sources,
            "references": references,
            "hypotheses": hypotheses,
            "bleu_by_length": bleu_by_source_length(sources, hypotheses, references, self.cfg["task"]["length_buckets"]),
        }

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
