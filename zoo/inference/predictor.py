"""Use a finished run: ``zoo.load(run_dir).translate([...])``."""
from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import torch
from omegaconf import OmegaConf

from zoo.config.sections import DecodeConfig
from zoo.errors import ZooError


class RunLoadError(ZooError):
    """A run directory or its checkpoint cannot be used."""


class Translator:
    """A trained model with its tokenizers, ready to translate text."""

    def __init__(self, module, src_tokenizer, tgt_tokenizer, run_dir: Path) -> None:
        self.module = module.eval()
        self.src_tokenizer = src_tokenizer
        self.tgt_tokenizer = tgt_tokenizer
        self.run_dir = Path(run_dir)
        self.decode_cfg = DecodeConfig(**module.cfg["decode"])

    @classmethod
    def from_run(cls, run_dir: str | Path, checkpoint: str = "best.ckpt") -> "Translator":
        from zoo.data.datamodule import load_tokenizers
        from zoo.registry.discovery import discover
        from zoo.training.module import TranslationModule

        run_dir = Path(run_dir)
        config_file = run_dir / "config.yaml"
        ckpt = run_dir / "checkpoints" / checkpoint
        if not config_file.is_file():
            raise RunLoadError(f"{run_dir} is not a zoo run directory (no config.yaml); pass the folder `zoo train` printed")
        if not ckpt.is_file():
            raise RunLoadError(f"no checkpoint {ckpt}; the run may not have finished a validation round")
        cfg = OmegaConf.load(config_file)
        discover(list(cfg.get("plugin_dirs", [])))
        src_tok, tgt_tok = load_tokenizers(run_dir, cfg.tokenizer, cfg.data.joint_vocab)
        try:
            module = TranslationModule.load_from_checkpoint(str(ckpt), map_location="cpu")
        except ZooError:
            raise
        except Exception as error:
            raise RunLoadError(
                f"checkpoint {ckpt} cannot be loaded ({type(error).__name__}: {str(error).splitlines()[0][:200]}); "
                "it may be corrupt or from another zoo version: use checkpoints/last.ckpt or retrain"
            ) from error
        return cls(module, src_tok, tgt_tok, run_dir)

    @torch.no_grad()
    def translate(self, sentences: list[str], batch_size: int = 64, **decode_overrides) -> list[str]:
        """Translate sentences; ``decode_overrides`` are DecodeConfig fields, e.g. ``strategy="beam", beam_size=5``."""
        from zoo.data.datamodule import pad
        from zoo.decoding import generate

        decode = dataclasses.replace(self.decode_cfg, **decode_overrides)
        out: list[str] = []
        for start in range(0, len(sentences), batch_size):
            source = pad(self.src_tokenizer.encode(sentences[start : start + batch_size]))
            out.extend(self.tgt_tokenizer.decode(generate(self.module.model, source, decode)))
        return out

    def attention_maps(self, sentence: str) -> list[Path]:
        """PNG heatmaps for ``sentence`` under ``run_dir/attention/<sentence>/``."""
        from zoo.viz.attention_maps import write_attention_maps

        slug = re.sub(r"[^\w]+", "_", sentence.strip())[:40].strip("_") or "sentence"
        wandb_run = self._wandb_run("attention")
        try:
            return write_attention_maps(
                self.module.model,
                self.src_tokenizer,
                self.tgt_tokenizer,
                sentence,
                self.run_dir / "attention" / slug,
                decode_cfg=self.decode_cfg,
                wandb_run=wandb_run,
            )
        finally:
            if wandb_run is not None:
                wandb_run.finish()

    def _wandb_run(self, job_type: str):
        """A W&B run beside the training run's, when that run logged to W&B."""
        logger = self.module.cfg["logger"]
        if not logger["wandb"]:
            return None
        import wandb

        from zoo.training.loggers import wandb_mode

        return wandb.init(
            project=logger["project"], dir=str(self.run_dir), mode=wandb_mode(logger), job_type=job_type, name=self.run_dir.name
        )
