"""The typed sections of the config that are not plugins: data, model, optim, trainer, decode, scst, logger.

Each ``__post_init__`` checks its ranges (:mod:`zoo.config.checks`); OmegaConf does not
call it while composing, :func:`zoo.config.validate.check_sections` does before a run starts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from zoo.config.checks import Choice, ConfigError, at_least, between, fraction, in_unit_interval, one_of, positive
from zoo.config.suggest import did_you_mean, with_hint


class Strategy(Choice):
    """How :func:`zoo.decoding.generate` picks output tokens."""

    greedy = "greedy"
    beam = "beam"
    sample = "sample"


class LengthPenalty(Choice):
    """How beam search ranks finished hypotheses of different lengths (:func:`zoo.decoding.length_normalised`)."""

    gnmt = "gnmt"
    average = "average"


@dataclass
class DataConfig:
    # Token budget of a batch: batch size x longest padded sequence. It bounds a batch's memory: a training pair
    # wider than it is skipped (counted in the log), a validation or test item wider than it refused.
    max_tokens: int = 1024
    max_len: int = 128  # training pairs with more tokens on either side are skipped (counted in the log)
    num_workers: int = 0  # data loader worker processes (0: load in the training process)
    # Read the splits from files prepared once (zoo prepare: tokenised, memory-mapped, under ${paths.cache});
    # false encodes them in memory at every start. Both give the same batches and results.
    prepare: bool = True

    def __post_init__(self) -> None:
        at_least(self, "max_tokens", 1)
        at_least(self, "max_len", 1)
        at_least(self, "num_workers", 0)


@dataclass
class NetworkConfig:
    # One embedding matrix for source and target tokens (Press & Wolf, 2017); needs task.joint_vocab=true
    # and a target embedding of the frontend's width.
    share_embeddings: bool = False
    # One width for families whose width fields differ: a recipe reads it (model=family_gru's encoder.hidden_size,
    # model=family_mamba's encoder.d_model: ${network.width}), so a sweep over it sizes every family alike and
    # zoo compare draws score against width (experiment=recall_map). null: the recipes' own widths.
    width: int | None = None

    def __post_init__(self) -> None:
        at_least(self, "width", 1)


class Schedule(Choice):
    """What follows the linear warmup of the learning rate (:mod:`zoo.training.schedule`)."""

    inverse_sqrt = "inverse_sqrt"  # Vaswani et al. (2017)
    cosine = "cosine"  # to zero at the last step (Loshchilov & Hutter, 2017)
    constant = "constant"


#: The settings of the learning rate's course, in ``optim`` and, for the SCST stage, in ``scst``.
STEP_SETTINGS = ("lr", "warmup_steps", "schedule")


@dataclass
class OptimConfig:
    lr: float = 2e-3  # peak learning rate of AdamW, reached at the end of the warmup
    weight_decay: float = 0.01  # AdamW's decoupled weight decay
    betas: tuple[float, float] = (0.9, 0.98)  # AdamW's moment decay rates, each in [0, 1)
    warmup_steps: int = 100  # optimiser steps of linear warmup from 0 to lr
    schedule: Schedule = Schedule.inverse_sqrt  # after the warmup: inverse_sqrt | cosine (to zero) | constant
    label_smoothing: float = 0.1  # probability mass spread over the other tokens (Szegedy et al., 2016)

    def __post_init__(self) -> None:
        positive(self, "lr")
        at_least(self, "weight_decay", 0)
        if len(self.betas) != 2 or not all(0 <= beta < 1 for beta in self.betas):
            raise ConfigError(f"betas={list(self.betas)} must be two numbers in [0, 1), e.g. [0.9, 0.98]")
        at_least(self, "warmup_steps", 0)
        one_of(self, "schedule", Schedule)
        in_unit_interval(self, "label_smoothing")


#: What trains on the CPU, for a strategy that cannot.
ON_THE_CPU = "on the CPU use strategy=ddp (trainer=ddp_cpu: 2 processes) or auto, or train on GPUs with trainer=ddp"


#: The trainer's budgets: each lays out a run's steps, validations and stopping when it starts (zoo.training.budget).
BUDGETS = ("budget_flops", "budget_minutes")


@dataclass
class TrainerConfig:
    """Passed to ``lightning.Trainer`` as keyword arguments, except zoo's own fields (``patience``, ``cpu_threads``,
    ``checkpoint_every_minutes``, averaging and budgets: ``ZOO_TRAINER_FIELDS`` in :mod:`zoo.training.trainer`)."""

    # the default model reaches ~60 BLEU on the default synthetic data in 6 (about 2.5 min on 2 CPU cores)
    max_epochs: int = 6
    max_steps: int = -1  # -1: no limit; otherwise training stops after this many optimiser steps
    max_time: str | None = None  # "DD:HH:MM:SS"
    accelerator: str = "cpu"
    devices: Any = 1  # processes per machine (GPUs, or CPU processes with trainer=ddp_cpu); -1: every GPU
    num_nodes: int = 1  # machines; a multi-node run is launched once per node (e.g. by SLURM: hydra/launcher=slurm)
    strategy: str = "auto"  # auto, ddp, ddp_find_unused_parameters_true, ...: Lightning's strategies
    # 32-true, bf16-mixed (CPU or GPU: fp32 weights, bf16 products) or 16-mixed (GPUs without bf16; refused on the CPU)
    precision: str = "32-true"
    gradient_clip_val: float = 1.0  # clip the gradient norm to this (0: no clipping)
    patience: int = 5  # early stopping on validation BLEU, in validation rounds
    val_check_interval: float = 1.0
    check_val_every_n_epoch: int = 1
    limit_train_batches: float = 1.0
    limit_val_batches: float = 1.0
    limit_test_batches: float = 1.0
    log_every_n_steps: int = 10
    enable_progress_bar: bool = True
    # torch threads on the CPU (0: torch's default, one per core). Small recurrent models gain little from
    # more, and threads that must share their cores with other work slow down sharply.
    cpu_threads: int = 1
    # checkpoints/last.ckpt is also written after a training step once this many minutes have passed since the
    # last one (besides every validation and on SIGTERM/Ctrl-C), so a pre-empted job loses minutes. 0: off.
    checkpoint_every_minutes: float = 10.0
    # Checkpoint averaging (Vaswani et al., 2017): keep the weights of the last N validations under
    # checkpoints/snapshots/, average them when training ends (checkpoints/average.ckpt), validate the average and
    # test it instead of best.ckpt where its validation score is at least best.ckpt's. 0: off.
    average_last: int = 0
    # The same with the N best validations by the monitored metric instead of the last N. 0: off; not with average_last.
    average_best: int = 0
    # Training compute as the budget (zoo.training.budget): train for this many FLOPs (every batch charged from its
    # shape, zoo.training.flops's rule) instead of max_epochs, the learning-rate schedule laid out to end there, no
    # early stopping. null: off.
    budget_flops: float | None = None
    # The same in minutes of training (steps timed on this machine before training; validation not counted).
    budget_minutes: float | None = None
    # With a budget: validate at this many equal fractions of it (the same grid for every model).
    budget_validations: int = 8
    # Training batches counted exactly before training (forward and backward, one per batch shape, spread over the
    # first epoch's shapes) to fit the cost model that charges every batch (zoo.training.compute). Fewer start a
    # run sooner (counting a batch takes a few times as long as training on it) and charge its batches less exactly.
    counted_batches: int = 16

    def __post_init__(self) -> None:
        if self.max_steps == -1:
            at_least(self, "max_epochs", 1, "to stop after a number of optimiser steps instead, set max_steps")
        else:
            at_least(self, "max_steps", 1, "or -1 for no limit")
        at_least(self, "num_nodes", 1)
        self._check_devices()
        self._check_strategy()
        at_least(self, "gradient_clip_val", 0)
        at_least(self, "patience", 1)
        positive(self, "val_check_interval")
        at_least(self, "check_val_every_n_epoch", 1)
        positive(self, "limit_train_batches")
        at_least(self, "limit_val_batches", 0)
        at_least(self, "limit_test_batches", 0)
        at_least(self, "log_every_n_steps", 1)
        at_least(self, "cpu_threads", 0, "0 leaves torch's default")
        at_least(self, "checkpoint_every_minutes", 0, "0 writes last.ckpt only at validations and on a signal")
        at_least(self, "average_last", 0, "0 turns averaging off")
        at_least(self, "average_best", 0, "0 turns averaging off")
        if self.budget_flops is not None:
            between(self, "budget_flops", 1, 1e30, "e.g. 1e12, or null to train for max_epochs")
        if self.budget_minutes is not None:
            between(self, "budget_minutes", 1e-6, 1e9, "e.g. 10, or null to train for max_epochs")
        if self.budget_flops is not None and self.budget_minutes is not None:
            raise ConfigError(
                f"budget_flops={self.budget_flops:g} with budget_minutes={self.budget_minutes:g}: state the budget "
                "in FLOPs or in minutes, not both (null turns one off)"
            )
        at_least(self, "budget_validations", 1)
        at_least(self, "counted_batches", 1)
        if self.average_last and self.average_best:
            raise ConfigError(
                f"average_best={self.average_best} with average_last={self.average_last}: average the weights of the "
                "best N validations or of the last N, not both (0 turns one off)"
            )

    def _check_devices(self) -> None:
        """Lightning refuses these only as it builds its Trainer: after the data has loaded, in a page of traceback."""
        devices = self.devices
        if devices in (0, "0", []) or (isinstance(devices, int) and devices < -1):
            raise ConfigError(f"devices={devices!r} must be >= 1, or -1 for all of this machine's GPUs")
        processes = (isinstance(devices, int) and devices >= 1) or str(devices).isdigit() or devices == "auto"
        if str(self.accelerator) == "cpu" and not processes:
            raise ConfigError(
                f"devices={devices!r} picks GPUs (-1: all of them, a list: those), and accelerator=cpu: on the CPU "
                "give a number of processes, e.g. 2 (trainer=ddp_cpu), or train on the GPUs with trainer=ddp"
            )

    def _check_strategy(self) -> None:
        """The strategy must be one of Lightning's, and one that runs on the accelerator (FSDP and DeepSpeed shard
        a model across GPUs, XLA runs on TPUs)."""
        if self.strategy == "auto":
            return
        from lightning.pytorch.strategies import (
            DeepSpeedStrategy,
            FSDPStrategy,
            SingleDeviceXLAStrategy,
            StrategyRegistry,
            XLAStrategy,
        )

        known = ["auto", *StrategyRegistry.available_strategies()]
        if self.strategy not in StrategyRegistry:
            refusal = f"strategy={self.strategy} is not one of Lightning's"
            raise ConfigError(with_hint(refusal, did_you_mean(self.strategy, known), f"use one of {', '.join(known)}"))
        registered = StrategyRegistry[self.strategy]["strategy"]
        if str(self.accelerator) != "cpu":
            return
        if issubclass(registered, (XLAStrategy, SingleDeviceXLAStrategy)):
            raise ConfigError(f"strategy={self.strategy} runs on TPUs (accelerator=tpu): {ON_THE_CPU}")
        if issubclass(registered, (FSDPStrategy, DeepSpeedStrategy)):
            raise ConfigError(f"strategy={self.strategy} shards the model across GPUs: {ON_THE_CPU}")


@dataclass
class DecodeConfig:
    strategy: Strategy = Strategy.greedy  # greedy | beam | sample (validation is always greedy)
    # hypotheses kept per sentence by beam search; 1 keeps one (greedy's sequence, ranked with the length penalty)
    beam_size: int = 5
    length_penalty: LengthPenalty = LengthPenalty.gnmt  # gnmt: ((5+len)/6)^alpha | average: mean log-probability
    alpha: float = 0.6  # gnmt length penalty exponent; 0 ranks by the summed log-probability
    temperature: float = 1.0  # sampling: logits are divided by it
    top_k: int = 0  # sampling: keep the k most probable tokens (0: all)
    top_p: float = 1.0  # sampling: keep the smallest set of tokens with this much probability (1: all)

    def __post_init__(self) -> None:
        one_of(self, "strategy", Strategy)
        at_least(self, "beam_size", 1, "for one hypothesis use decode.strategy=greedy")
        one_of(self, "length_penalty", LengthPenalty)
        at_least(self, "alpha", 0)
        positive(self, "temperature", "for deterministic output use strategy=greedy")
        at_least(self, "top_k", 0, "0 keeps every token")
        fraction(self, "top_p", "1 keeps every token")


class Baseline(Choice):
    """What a sample's reward is measured against (``scst.baseline``; :mod:`zoo.training.scst`)."""

    greedy = "greedy"  # the greedy output's reward (Rennie et al., 2017)
    mean = "mean"  # the mean reward of the item's other samples (Luo, 2020)


@dataclass
class ScstConfig:
    """Self-critical sequence training (Rennie et al., 2017; zoo.training.scst): train on the model's own sampled
    outputs, each rewarded by a sequence metric against a baseline, instead of on the references' tokens. Starts
    best from a cross-entropy-trained model (``init_from``), whose weights are validated before the first step.
    Validation and test decode as without it. The reward metric is checked with the other components, once the
    config composes (:func:`zoo.training.preflight.validate`).

    Its own learning rate, warmup and schedule replace optim's: at a cross-entropy step (optim.lr=2e-3) SCST
    destroys the model it starts from (Flickr8k: CIDEr-D 139 to 81); self-critical.pytorch takes 5e-5, constant."""

    enabled: bool = False  # true: the SCST objective replaces token-level cross-entropy
    samples: int = 5  # outputs sampled per item of a training batch (k)
    baseline: Baseline = Baseline.greedy  # greedy: the greedy output's reward | mean: the other k-1 samples' mean
    metric: str | None = None  # the metric plugin whose per-item score is the reward; null: the monitored metric
    lr: float = 5e-5  # AdamW's learning rate with scst.enabled, in place of optim.lr (optim's betas, decay stay)
    warmup_steps: int = 0  # with scst.enabled, in place of optim.warmup_steps
    schedule: Schedule = Schedule.constant  # with scst.enabled, in place of optim.schedule

    def __post_init__(self) -> None:
        at_least(self, "samples", 1)
        between(self, "samples", 1, 100, "self-critical.pytorch samples 5 per image")
        one_of(self, "baseline", Baseline)
        positive(self, "lr")
        at_least(self, "warmup_steps", 0)
        one_of(self, "schedule", Schedule)
        if self.baseline is Baseline.mean and self.samples < 2:
            raise ConfigError(
                f"samples={self.samples} with baseline=mean: the mean of an item's other samples needs 2 samples or "
                "more; raise scst.samples or use scst.baseline=greedy"
            )


class WandbMode(Choice):
    """Where Weights & Biases sends a run."""

    online = "online"
    offline = "offline"
    shared = "shared"
    disabled = "disabled"


@dataclass
class LoggerConfig:
    # CSV is always written; each switch adds a tracker (presets: logger=wandb, tensorboard, mlflow).
    wandb: bool = False  # Weights & Biases
    tensorboard: bool = False  # TensorBoard event files in tensorboard/ (pip install 'zoo[tensorboard]')
    mlflow: bool = False  # an MLflow run (pip install 'zoo[mlflow]')
    project: str = "zoo"  # the W&B project and the MLflow experiment
    mode: WandbMode | None = None  # online | offline | shared | disabled; None: $WANDB_MODE if set, else offline
    group: str | None = None  # W&B group; None: the sweep directory in a sweep, else the experiment preset
    tags: list[str] = field(default_factory=list)  # W&B tags, besides one per component (encoder=gru, ...)
    tracking_uri: str | None = None  # MLflow tracking server or store; None: mlruns/ in the run directory

    def __post_init__(self) -> None:
        one_of(self, "mode", WandbMode)
