"""The LightningModule, the same for every task: loss, optimiser and schedule, decoding, metric plugins."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

import lightning as L
import torch
from torch import nn

from zoo.config.sections import DecodeConfig
from zoo.contracts import PAD, SourceDescription
from zoo.decoding import generate
from zoo.errors import ZooError
from zoo.model import Seq2Seq
from zoo.run.layout import TRAIN_BASELINE, TRAIN_LOSS, TRAIN_REWARD
from zoo.training.evaluation import MetricSuite
from zoo.training.schedule import warmup_then_decay
from zoo.training.scst import Scst, step_section


class DivergenceError(ZooError):
    """Training diverged (a NaN or infinite value, or a loss far above chance); the run stops and keeps the
    checkpoints written before."""


class NonFiniteLossError(DivergenceError):
    """A loss is NaN or infinite: a training step's (checked before it reaches the weights) or an evaluation's."""


class LossDivergedError(DivergenceError):
    """A finite training loss far above chance level (:data:`DIVERGENCE_FACTOR`)."""


class NonFiniteWeightsError(DivergenceError):
    """The weights hold NaN or inf at a checkpoint (a non-finite gradient with a finite loss); it is not written."""


#: A training loss above this many times chance level, ln(target vocabulary size), is divergence.
#:
#: Predicting every target token as equally likely costs ln V a token (chance level), and a freshly
#: initialised model starts there: learning only brings the loss down. A mean loss ten times higher
#: puts V^-10 on the right token on average (about 1e-30 for a vocabulary of a thousand): logits grown
#: without bound, which a learning rate too high or an overflow produces within a few steps, and the
#: noisy steps of a working run never come near (the default GRU and Transformer recipes stay under
#: 1.13 x chance over their first 400 steps; optim.lr=1e6 is at 2.5e4 x after one step). Tied to
#: chance rather than to the run's lowest loss so far, the rule keeps no state (nothing to resume,
#: the same on every process) and does not fire when a run that has memorised its data (a loss near
#: 0) meets a harder batch.
DIVERGENCE_FACTOR = 10


def likely_causes(cfg: dict, lr_now: float | None) -> str:
    """What usually makes a run diverge, each with the config option to change, from the run's ``cfg``."""
    section, trainer = step_section(cfg), cfg["trainer"]
    step = cfg[section]
    now = f", {lr_now:.3g} at this step" if lr_now is not None else ""
    causes = [
        f"learning rate too high ({section}.lr={step['lr']:g}{now}: lower it or lengthen the warmup, "
        f"{section}.warmup_steps={step['warmup_steps']})"
    ]
    precision = str(trainer.get("precision", ""))
    if precision.startswith("16"):  # 16, 16-mixed, 16-true; bf16 has fp32's range
        causes.append(f"fp16 overflow (trainer.precision={precision}: use bf16-mixed or 32-true)")
    clip = trainer.get("gradient_clip_val") or 0
    causes.append(
        f"exploding gradients (clipped at trainer.gradient_clip_val={clip:g}: try a lower value)"
        if clip
        else "exploding gradients (clipping is off: set trainer.gradient_clip_val, e.g. 1.0)"
    )
    causes.append("bad data (an extreme or corrupt training example)")
    return "likely causes: " + "; ".join(causes)


class ZooModule(L.LightningModule):
    """Trains a :class:`~zoo.model.Seq2Seq` with label-smoothed cross-entropy (or, with ``scst.enabled``, self-critical
    sequence training: :mod:`zoo.training.scst`) and scores it with the run's metrics.

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
        self._reset_evaluation()
        self.results: dict[str, dict[str, Any]] = {}  # split -> scores and hypotheses of the latest evaluation
        self._saved_step: int | None = None  # global step of the latest checkpoint written
        self.target_vocab_size = target_vocab_size
        self.divergence_limit = DIVERGENCE_FACTOR * math.log(target_vocab_size)  # chance level, ln V, times the factor
        self._latest_batch: dict | None = None  # the latest training batch, checked again before a checkpoint
        self.scst = Scst(cfg) if (cfg.get("scst") or {}).get("enabled") else None  # older runs have no scst section

    # ------------------------------------------------------------------ training
    def _loss(self, batch: dict) -> torch.Tensor:
        logits = self.model(batch["source"], batch["target_in"]).logits
        return self.loss_fn(logits.reshape(-1, logits.size(-1)), batch["target_out"].reshape(-1))

    def training_step(self, batch: dict, batch_idx: int) -> torch.Tensor | dict:
        if self.scst is not None:
            return self._scst_step(batch)
        loss = self._loss(batch)
        # Every step, before backward: a NaN or a divergence never reaches the weights, and the run stops
        # at the step it happens.
        self._check_training_loss(
            loss, f"at step {self.trainer.global_step}", "stopped before this step updated the weights"
        )
        self._latest_batch = batch
        # The progress bar's; the loggers get it from TrainingCurves (zoo.training.callbacks), every N steps
        self.log(TRAIN_LOSS, loss, prog_bar=True, logger=False, batch_size=batch["source"].size(0))
        return loss

    def _scst_step(self, batch: dict) -> dict:
        """Self-critical training's step. Its loss is no cross-entropy (negative where samples beat their baseline),
        so the divergence check reads the samples' mean token loss, which for outputs the model drew itself sits near
        its entropy, at most chance level, unless the model has diverged."""
        data = self.trainer.datamodule
        step = self.scst.step(self.model, batch, data.task, data.training_references())
        self._check_training_loss(
            step.token_loss,
            f"at step {self.trainer.global_step}",
            "stopped before this step updated the weights",
            what="the sampled outputs' token loss",
        )
        self._latest_batch = batch
        self.log(TRAIN_LOSS, step.loss, prog_bar=True, logger=False, batch_size=step.items)
        self.log(TRAIN_REWARD, step.reward, prog_bar=True, logger=False, batch_size=step.items)
        return {"loss": step.loss, TRAIN_REWARD: step.reward, TRAIN_BASELINE: step.baseline}

    def _check_training_loss(
        self, loss: torch.Tensor, when: str, consequence: str, what: str = "training loss"
    ) -> None:
        """Raise a :class:`DivergenceError` unless ``loss`` (``what``) is finite and at most :attr:`divergence_limit`.

        On a GPU this waits for the forward pass (one sync); under DDP the processes agree (one scalar
        all-reduce), so all of them stop together instead of one waiting for the others.
        """
        value = float(loss.detach())
        healthy = math.isfinite(value) and value <= self.divergence_limit
        if self.trainer.strategy.reduce_boolean_decision(healthy, all=True):
            return
        then = (
            f"{when} (epoch {self.trainer.current_epoch}); {consequence}, {self._kept_checkpoint()}; "
            f"{likely_causes(self.cfg, self._lr())}"
        )
        if not math.isfinite(value):
            raise NonFiniteLossError(f"{what} is {value} {then}")
        if value > self.divergence_limit:
            raise LossDivergedError(
                f"{what} is {value:.4g}, over {DIVERGENCE_FACTOR}x chance level ({self.divergence_limit:.4g}: "
                f"{DIVERGENCE_FACTOR} x ln of {self.target_vocab_size} target tokens), so training diverged {then}"
            )
        raise DivergenceError(f"{what} is non-finite or diverged on another process ({value:.4g} here) {then}")

    def on_save_checkpoint(self, checkpoint: dict) -> None:
        """Refuse to write a checkpoint from bad weights over a good one.

        Two checks, once per checkpoint, nothing per step. The weights must be finite: the loss check
        runs before backward, so a non-finite gradient with a finite loss (an overflow in backward)
        could otherwise reach a checkpoint. And the loss they give on the latest training batch must
        be healthy: the check before each update never sees what the last update did, so a run whose
        final step (or the step before a timed or a signal's checkpoint) made the weights diverge would
        otherwise be saved, and tested. One forward pass without dropout or gradients (nothing random is
        drawn, so a resumed run draws what it would have). (A per-step gradient check would cost a sync
        and would be wrong under fp16-mixed, whose GradScaler skips steps with inf gradients by design.)
        """
        if not bool(torch.stack([torch.isfinite(p).all() for p in self.parameters()]).all()):
            raise NonFiniteWeightsError(
                f"the weights hold nan/inf at step {self.trainer.global_step} (epoch {self.trainer.current_epoch}) "
                f"though the training loss was finite (an overflow in the gradients or the update); "
                f"the checkpoint is not written, {self._kept_checkpoint()}; {likely_causes(self.cfg, self._lr())}"
            )
        if self._latest_batch is not None:
            self._check_training_loss(
                self._loss_without_training(self._latest_batch),
                f"on the batch of step {self.trainer.global_step - 1} after its update",
                "the checkpoint is not written",
            )
        self._saved_step = self.trainer.global_step

    def _loss_without_training(self, batch: dict) -> torch.Tensor:
        """The loss on ``batch`` in evaluation mode (no dropout) and without gradients; the mode is restored."""
        training = self.training
        self.eval()
        try:
            with torch.no_grad():
                return self._loss(batch)
        finally:
            self.train(training)

    def on_train_end(self) -> None:
        self._latest_batch = None  # training is over: no checkpoint follows

    def _kept_checkpoint(self) -> str:
        callback = self.trainer.checkpoint_callback
        if self._saved_step is None or callback is None or not callback.dirpath:
            return "no checkpoint had been written yet"
        return f"the last checkpoint, from step {self._saved_step}, stays in {Path(callback.dirpath).name}/"

    def _lr(self) -> float | None:
        optimizers = self.trainer.optimizers
        return optimizers[0].param_groups[0]["lr"] if optimizers else None

    def configure_optimizers(self):
        opt, step = self.cfg["optim"], self.cfg[step_section(self.cfg)]
        optimizer = torch.optim.AdamW(
            [p for p in self.parameters() if p.requires_grad],
            lr=step["lr"],
            betas=tuple(opt["betas"]),
            weight_decay=opt["weight_decay"],
        )
        total = self.trainer.estimated_stepping_batches if self.trainer is not None else 1
        trainer_cfg = self.cfg["trainer"]
        budgeted = trainer_cfg.get("budget_flops") is not None or trainer_cfg.get("budget_minutes") is not None
        factor = warmup_then_decay(step["schedule"], step["warmup_steps"], int(min(total, 10**9)), cool_down=budgeted)
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}

    # ------------------------------------------------------------------ evaluation
    def _reset_evaluation(self) -> None:
        """Forget this process's evaluation results so far: ``(item indices, output ids)`` per batch, and the
        loss kept the way Lightning averaged a value logged per step (so one process's loss stays bit for bit
        what it was): the sum of (batch mean token loss × batch rows), a 0-dim float32 tensor on the CPU, and
        the number of rows."""
        self._outputs: list[tuple[list[int], list[list[int]]]] = []
        self._loss_sum, self._rows = torch.zeros(()), 0

    def _evaluate_step(self, batch: dict, decode: DecodeConfig, split: str) -> None:
        rows = batch["source"].size(0)
        self._loss_sum = self._loss_sum + (self._loss(batch).detach() * rows).cpu()
        self._rows += rows
        task = self.trainer.datamodule.task
        hypotheses = generate(self.model, batch["source"], decode, max_len=task.output_limit(batch["source"]))
        self._outputs.append((batch["index"].tolist(), hypotheses))

    def _gathered(self) -> list[dict[str, Any]]:
        """Every process's evaluation results, one dict per process; only this one's outside DDP.

        Under DDP each process evaluates its share of the batches
        (:meth:`~zoo.data.sampling.TokenBudgetBatchSampler.evaluation_share`); gathering the
        shares (plain Python objects: works on gloo and nccl) lets every process score the
        whole split, so all log the same metrics and none needs Lightning's ``sync_dist``.
        """
        mine = {"outputs": self._outputs, "loss_sum": self._loss_sum, "rows": self._rows}
        if not (torch.distributed.is_available() and torch.distributed.is_initialized()):
            return [mine]
        everyone: list[Any] = [None] * torch.distributed.get_world_size()
        torch.distributed.all_gather_object(everyone, mine)
        return everyone

    def _evaluate_epoch(self, split: str) -> None:
        """Score every item of ``split`` against all its references with every metric; log them and the loss
        (the mean over the split's rows of each batch's mean token loss, as Lightning would average it)."""
        shares = self._gathered()
        self._reset_evaluation()
        loss = sum(share["loss_sum"] for share in shares) / torch.tensor(sum(share["rows"] for share in shares))
        self._check_evaluation_loss(split, loss)
        self.log(f"{split}/loss", loss, batch_size=1)
        order = {
            index: hyp for share in shares for indices, hyps in share["outputs"] for index, hyp in zip(indices, hyps)
        }
        data = self.trainer.datamodule
        items = [data.items[split][i] for i in sorted(order)]
        hypotheses = data.task.decode_targets([order[i] for i in sorted(order)])
        references = [item.references for item in items]
        scores = self.metrics.scores(hypotheses, references)
        for name, score in scores.items():
            self.log(f"{split}/{name}", score, prog_bar=name == self.metrics.monitor)
        self.results[split] = {"scores": scores, "items": items, "hypotheses": hypotheses}

    def _check_evaluation_loss(self, split: str, loss: torch.Tensor) -> None:
        """Stop on a NaN or infinite evaluation loss: the model's outputs are not finite, so neither its scores
        nor a checkpoint of it mean anything. Called before a validation's results are logged, so before its
        checkpoints are written; every process computes the same loss from the gathered shares, so all agree."""
        if torch.isfinite(loss):
            return
        name = "validation" if split == "val" else split
        kept = (
            f"no checkpoint is written for it, {self._kept_checkpoint()}"
            if split == "val"
            else "the checkpoints stay as they are"
        )
        raise NonFiniteLossError(
            f"{name} loss is {float(loss)} at step {self.trainer.global_step} (epoch {self.trainer.current_epoch}): "
            f"the model's outputs hold nan/inf; {kept}; {likely_causes(self.cfg, self._lr())}"
        )

    def validation_step(self, batch: dict, batch_idx: int) -> None:
        self._evaluate_step(batch, self.val_decode, "val")

    def on_validation_epoch_end(self) -> None:
        if not self.trainer.sanity_checking:
            self._evaluate_epoch("val")
        else:
            self._reset_evaluation()

    def test_step(self, batch: dict, batch_idx: int) -> None:
        self._evaluate_step(batch, self.test_decode, "test")

    def on_test_epoch_end(self) -> None:
        self._evaluate_epoch("test")
