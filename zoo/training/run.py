"""``zoo train``: compose the config, train, test with the best checkpoint, record the run."""
from __future__ import annotations

import json
import logging
import platform
import resource
import sys
import time
import warnings
from pathlib import Path

import hydra
import lightning as L
import torch
from hydra.core.hydra_config import HydraConfig
from lightning.pytorch.callbacks import Callback, EarlyStopping, ModelCheckpoint
from lightning.pytorch.loggers import CSVLogger
from omegaconf import DictConfig, OmegaConf

from zoo.config.validate import validate
from zoo.contracts import PAD
from zoo.data.datamodule import TranslationData
from zoo.errors import ZooError
from zoo.training.module import TranslationModule
from zoo.registry import GROUP_KINDS

log = logging.getLogger(__name__)

# Files whose presence means a run directory already holds results that must not be overwritten.
RUN_MARKERS = ("summary.json", "checkpoints")


class RunDirectoryInUse(ZooError):
    """The chosen run directory already holds a run."""


class Throughput(Callback):
    """Counts target tokens and the wall time spent in training batches."""

    def __init__(self) -> None:
        self.tokens = 0
        self.seconds = 0.0
        self._start = 0.0

    def on_train_batch_start(self, trainer, module, batch, batch_idx) -> None:
        self._start = time.perf_counter()

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx) -> None:
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        self.seconds += time.perf_counter() - self._start
        self.tokens += int((batch["target_out"] != PAD).sum())


def parameter_counts(module: torch.nn.Module) -> dict[str, int]:
    """Trainable parameters, and frozen weights (frozen parameters plus persistent buffers such as a reservoir)."""
    trainable = sum(p.numel() for p in module.parameters() if p.requires_grad)
    frozen = sum(p.numel() for p in module.parameters() if not p.requires_grad)
    parameter_storage = {p.data_ptr() for p in module.parameters()}  # tied weights appear twice in a state_dict
    frozen += sum(t.numel() for t in module.state_dict().values() if t.data_ptr() not in parameter_storage)
    return {"trainable": trainable, "frozen": frozen}


def peak_memory_mb(device: torch.device) -> float:
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


def check_run_dir(run_dir: Path) -> None:
    used = [m for m in RUN_MARKERS if (run_dir / m).exists()]
    if used:
        raise RunDirectoryInUse(
            f"run directory {run_dir} already holds a run ({', '.join(used)}); "
            "choose a new hydra.run.dir instead of overwriting it"
        )


def make_loggers(cfg: DictConfig, run_dir: Path) -> list:
    loggers = [CSVLogger(save_dir=str(run_dir), name="", version="")]
    if cfg.logger.wandb:
        from lightning.pytorch.loggers import WandbLogger

        from zoo.training.loggers import wandb_mode

        loggers.append(
            WandbLogger(
                project=cfg.logger.project,
                save_dir=str(run_dir),
                name=run_dir.name,
                mode=wandb_mode(cfg.logger),
                config=OmegaConf.to_container(cfg, resolve=True),
            )
        )
    return loggers


def quiet_lightning() -> None:
    """Hide Lightning's advertising and notices that do not apply to a zoo run."""
    warnings.filterwarnings("ignore", message=".*exists and is not empty.*")
    warnings.filterwarnings("ignore", message=".*is smaller than the logging interval.*")
    warnings.filterwarnings("ignore", message=".*does not have many workers.*")
    warnings.filterwarnings("ignore", message=".*LeafSpec.*")
    for name in ("lightning.pytorch.utilities.rank_zero", "lightning.pytorch.accelerators.cuda"):
        logging.getLogger(name).setLevel(logging.WARNING)


def train(cfg: DictConfig) -> dict:
    """Run one training job in Hydra's output directory and return its summary."""
    validate(cfg)
    run_dir = Path(HydraConfig.get().runtime.output_dir)
    check_run_dir(run_dir)
    quiet_lightning()
    L.seed_everything(cfg.seed, workers=True, verbose=False)
    if cfg.trainer.cpu_threads > 0:
        torch.set_num_threads(cfg.trainer.cpu_threads)
    (run_dir / "config.yaml").write_text(OmegaConf.to_yaml(cfg, resolve=True))

    data = TranslationData(cfg, run_dir)
    data.setup()
    container = OmegaConf.to_container(cfg, resolve=True)
    module = TranslationModule(container, data.src_tokenizer.vocab_size, data.tgt_tokenizer.vocab_size)

    checkpoint = ModelCheckpoint(
        dirpath=str(run_dir / "checkpoints"), filename="best", monitor="val/bleu", mode="max", save_last=True
    )
    throughput = Throughput()
    trainer = L.Trainer(
        **lightning_options(cfg.trainer),
        default_root_dir=str(run_dir),
        logger=make_loggers(cfg, run_dir),
        callbacks=[checkpoint, EarlyStopping(monitor="val/bleu", mode="max", patience=cfg.trainer.patience), throughput],
        enable_model_summary=False,
        use_distributed_sampler=False,  # zoo's token-budget batch sampler shards batches across processes itself
        reload_dataloaders_every_n_epochs=1,  # each epoch has its own number of token-budget batches
    )
    started = time.perf_counter()
    trainer.fit(module, datamodule=data)
    train_seconds = time.perf_counter() - started
    trainer.test(module, datamodule=data, ckpt_path="best" if checkpoint.best_model_path else None, verbose=False)

    summary = build_summary(cfg, module, trainer, checkpoint, throughput, train_seconds)
    write_outputs(run_dir, module, summary, cfg.samples)
    print_result(summary, run_dir)
    return summary


# TrainerConfig fields that are zoo's own; every other field is passed to lightning.Trainer as it is.
ZOO_TRAINER_FIELDS = ("patience", "cpu_threads")


def lightning_options(trainer_cfg: DictConfig) -> dict:
    """Keyword arguments for ``lightning.Trainer`` from the ``trainer`` section.

    Batch limits left at 1.0 ("all") are not passed: passing them makes Lightning print a notice.
    """
    options = OmegaConf.to_container(trainer_cfg, resolve=True)
    return {
        k: v
        for k, v in options.items()
        if k not in ZOO_TRAINER_FIELDS and not (k.startswith("limit_") and v == 1.0)
    }


def build_summary(cfg, module, trainer, checkpoint, throughput, train_seconds) -> dict:
    test = module.results.get("test", {})
    return {
        "test": {k: test.get(k) for k in ("bleu", "chrf", "bleu_signature", "chrf_signature", "bleu_by_length")},
        "best_val_bleu": float(checkpoint.best_model_score) if checkpoint.best_model_score is not None else None,
        "parameters": parameter_counts(module.model),
        "train_seconds": round(train_seconds, 2),
        "train_tokens": throughput.tokens,
        "tokens_per_second": round(throughput.tokens / throughput.seconds, 1) if throughput.seconds else None,
        "peak_memory_mb": round(peak_memory_mb(module.device), 1),
        "epochs": trainer.current_epoch,
        "steps": trainer.global_step,
        "components": {kind: OmegaConf.to_container(cfg[kind]) for kind in (k.name for k in GROUP_KINDS)},
        "decode": OmegaConf.to_container(cfg.decode)["strategy"],
        "best_checkpoint": checkpoint.best_model_path or None,
        "machine": {"platform": platform.platform(), "torch": torch.__version__, "device": str(module.device)},
    }


def write_outputs(run_dir: Path, module: TranslationModule, summary: dict, samples: int) -> None:
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2))
    test = module.results.get("test")
    if not test:
        return
    (run_dir / "test_hypotheses.txt").write_text("\n".join(test["hypotheses"]) + "\n")
    rows = zip(test["sources"][:samples], test["references"][:samples], test["hypotheses"][:samples])
    (run_dir / "samples.txt").write_text("".join(f"SRC {s}\nREF {r}\nHYP {h}\n\n" for s, r, h in rows))


def print_result(summary: dict, run_dir: Path) -> None:
    names = summary["components"]
    model = ", ".join(f"{k}={names[k]['name']}" for k in ("encoder", "decoder", "attention", "posenc", "tokenizer"))
    test = summary["test"]
    rows = [
        ("model", model),
        ("test BLEU", f"{test['bleu']:.2f}" if test["bleu"] is not None else "n/a"),
        ("test chrF", f"{test['chrf']:.2f}" if test["chrf"] is not None else "n/a"),
        ("params (trainable)", f"{summary['parameters']['trainable']:,}"),
        ("train time", f"{summary['train_seconds']:.1f} s"),
        ("tokens/s", f"{summary['tokens_per_second']:,.0f}" if summary["tokens_per_second"] else "n/a"),
    ]
    width = max(len(k) for k, _ in rows)
    print("\n" + "\n".join(f"{k:<{width}}  {v}" for k, v in rows))
    print(f"run directory: {run_dir}\n")


@hydra.main(config_path="pkg://zoo.conf", config_name="config", version_base="1.3")
def hydra_entry(cfg: DictConfig) -> float | None:
    try:
        summary = train(cfg)
    except ZooError as error:  # one line, no traceback: the message says what to do
        print(f"zoo: error: {error}", file=sys.stderr)
        raise SystemExit(1)
    return summary["test"]["bleu"]
