"""The typed sections of the config that are not plugins: data, model, optim, trainer, decode, logger."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional


@dataclass
class DataConfig:
    max_tokens: int = 1024  # token budget of a batch: batch size x longest padded sequence
    max_len: int = 128  # training pairs with more tokens on either side are skipped
    joint_vocab: bool = False  # one tokenizer trained on source and target text together
    num_workers: int = 0


@dataclass
class ModelConfig:
    # One embedding matrix for source and target tokens (Press & Wolf, 2017); needs data.joint_vocab=true
    # and a target embedding of the frontend's width.
    share_embeddings: bool = False


@dataclass
class OptimConfig:
    lr: float = 2e-3
    weight_decay: float = 0.01
    betas: tuple[float, float] = (0.9, 0.98)
    warmup_steps: int = 100
    schedule: str = "inverse_sqrt"  # inverse_sqrt | cosine | constant (all after linear warmup)
    label_smoothing: float = 0.1


@dataclass
class TrainerConfig:
    """Passed to ``lightning.Trainer`` as keyword arguments, except ``patience`` and ``cpu_threads``."""

    max_epochs: int = 6  # the default model reaches ~60 BLEU on the default synthetic data in 6 (about 2.5 min on 2 CPU cores)
    max_steps: int = -1
    max_time: Optional[str] = None  # "DD:HH:MM:SS"
    accelerator: str = "cpu"
    devices: Any = 1
    strategy: str = "auto"
    precision: str = "32-true"
    gradient_clip_val: float = 1.0
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


@dataclass
class DecodeConfig:
    strategy: str = "greedy"  # greedy | beam | sample (validation is always greedy)
    beam_size: int = 5
    length_penalty: str = "gnmt"  # gnmt: ((5+len)/6)^alpha | average: mean log-probability
    alpha: float = 0.6
    max_len_ratio: float = 1.5  # max output length = ratio * source length + offset
    max_len_offset: int = 10
    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0


@dataclass
class LoggerConfig:
    wandb: bool = False  # CSV is always written; this adds Weights & Biases
    project: str = "zoo"
    mode: Optional[str] = None  # None: $WANDB_MODE if set, else offline
