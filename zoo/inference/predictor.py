"""Use a finished run, whatever its task: ``zoo.load(run_dir).predict([...])``."""
from __future__ import annotations

import dataclasses
import hashlib
import re
from pathlib import Path
from typing import Any, Sequence

import torch
from omegaconf import OmegaConf

from zoo.config.sections import DecodeConfig
from zoo.contracts import Task
from zoo.errors import ZooError, first_line


class RunLoadError(ZooError):
    """A run directory or its checkpoint cannot be used."""


def checkpoint_file(run_dir: Path, checkpoint: str | Path = "best") -> Path:
    """The checkpoint file that ``checkpoint`` names for the run in ``run_dir`` (see :meth:`Predictor.from_run`);
    :class:`RunLoadError` when there is none."""
    folder = run_dir / "checkpoints"
    name = str(checkpoint)
    if name in ("best", "last"):
        ckpt = folder / f"{name}.ckpt"
        if ckpt.is_file():
            return ckpt
        found = sorted(p.name for p in folder.glob("*.ckpt")) if folder.is_dir() else []
        have = f"it has {', '.join(found)}" if found else "it has none"
        raise RunLoadError(f"no checkpoint {ckpt} ({have}); the run may not have finished a validation round")
    path = Path(checkpoint)
    bare = path.name == name  # a bare file name may also name a file under checkpoints/
    if bare and (folder / name).is_file():
        return folder / name
    if path.is_file():
        return path
    also = f" (nor is {folder / name})" if bare else ""
    raise RunLoadError(f"checkpoint {name} is not a file{also}; give best, last or the path of a .ckpt file")


class Predictor:
    """A trained model with its task's codecs, ready to turn sources into outputs.

    Built from a run directory alone (config, codecs, checkpoint), so it needs
    neither the training data nor the process that trained it.
    """

    def __init__(self, module: Any, task: Task, run_dir: Path) -> None:
        self.module = module.eval()
        self.task = task
        self.run_dir = Path(run_dir)
        self.decode_cfg = DecodeConfig(**module.cfg["decode"])

    @classmethod
    def from_run(cls, run_dir: str | Path, checkpoint: str | Path = "best") -> "Predictor":
        """The run in ``run_dir`` with the weights of ``checkpoint``: ``best`` (the default), ``last``,
        a file name under ``run_dir/checkpoints`` (``best.ckpt``) or the path of a ``.ckpt`` file.

        The run's plugins are found from any folder and environment: the plugin folders it recorded
        (absolute), else the copies of their sources saved in the run (``plugins/``); a component still
        missing is an error naming it, where it came from and how to get it."""
        from zoo.data.datamodule import build_task
        from zoo.training.module import ZooModule
        from zoo.training.provenance import PluginMissing, load_run_plugins

        run_dir = Path(run_dir)
        config_file = run_dir / "config.yaml"
        if not config_file.is_file():
            raise RunLoadError(f"{run_dir} is not a zoo run directory (no config.yaml); pass the folder `zoo train` printed")
        ckpt = checkpoint_file(run_dir, checkpoint)
        cfg = OmegaConf.load(config_file)
        try:
            load_run_plugins(run_dir, cfg)
        except PluginMissing as error:
            raise RunLoadError(str(error)) from None
        task = build_task(cfg)
        task.load(run_dir)
        if ckpt.stat().st_size == 0:
            raise RunLoadError(f"checkpoint {ckpt} is empty (0 bytes): its writing was cut off; use another checkpoint "
                               "(--checkpoint last) or retrain")
        try:
            module = ZooModule.load_from_checkpoint(str(ckpt), map_location="cpu")
        except ZooError:
            raise
        except Exception as error:
            reason = first_line(error)[:120]  # some errors (EOFError) have no text
            raise RunLoadError(
                f"checkpoint {ckpt} cannot be loaded ({type(error).__name__}{': ' + reason if reason else ''}); "
                "it may be truncated, corrupt or from another zoo version: use another checkpoint (--checkpoint last) "
                "or retrain"
            ) from error
        return cls(module, task, run_dir)

    @torch.no_grad()
    def predict(self, sources: Sequence[Any], batch_size: int = 64, **decode_overrides: Any) -> list[str]:
        """One output per source; ``decode_overrides`` are DecodeConfig fields, e.g. ``strategy="beam", beam_size=5``."""
        from zoo.decoding import generate

        decode = dataclasses.replace(self.decode_cfg, **decode_overrides)
        outputs: list[str] = []
        for start in range(0, len(sources), batch_size):
            batch = self.task.collate_sources(self.task.encode_sources(sources[start : start + batch_size]))
            ids = generate(self.module.model, batch, decode, max_len=self.task.output_limit(batch))
            outputs.extend(self.task.decode_targets(ids))
        return outputs

    def translate(self, sentences: Sequence[str], batch_size: int = 64, **decode_overrides: Any) -> list[str]:
        """:meth:`predict` under the name a translation user looks for."""
        self.expect_sources("text", "translate", "caption")
        return self.predict(sentences, batch_size, **decode_overrides)

    def caption(self, images: Sequence[Any], batch_size: int = 64, **decode_overrides: Any) -> list[str]:
        """:meth:`predict` for a captioner: image file paths (or ImageSource) in, one caption each."""
        self.expect_sources("image", "caption", "translate")
        return self.predict(images, batch_size, **decode_overrides)

    def expect_sources(self, kind: str, verb: str, other_verb: str) -> None:
        """Refuse to ``verb`` with a run whose task reads another kind of source (the other verb is its use)."""
        if self.task.source_kind != kind:
            raise RunLoadError(f"cannot {verb} with {self.run_dir}: its task ({self.module.cfg['task']['name']}) reads "
                               f"{self.task.source_kind} sources, not {kind}; use zoo {other_verb} with it")

    def attention_maps(self, source: Any) -> list[Path]:
        """PNG pictures of one source's attention under ``run_dir/attention/<source>/``: heatmaps for a
        sentence; for an image, each word's attention laid over the image (Show, Attend and Tell style)."""
        if self.task.source_kind == "image":
            from zoo.viz.image_attention import write_image_attention

            return self._with_wandb(write_image_attention, source)
        from zoo.viz.attention_maps import write_attention_maps

        return self._with_wandb(write_attention_maps, source)

    def attention_explorer(self, source: Any) -> Path:
        """One offline HTML page with every layer and head of one source's attention: ``run_dir/attention/<source>/explorer.html``."""
        from zoo.viz.explorer import write_attention_explorer

        return self._with_wandb(write_attention_explorer, source)

    def attention_dir(self, source: Any) -> Path:
        """Where the pictures of ``source`` go: ``run_dir/attention/<slug of the source>``; a source longer
        than the slug gets a hash of the whole of it, so two that share their start never share a folder."""
        text = str(source).strip()
        words = re.sub(r"[^\w]+", "_", text)
        slug = words[:40].strip("_")
        if slug != words.strip("_") or not slug:  # cut short, or nothing readable left
            slug = f"{slug or 'source'}-{hashlib.sha1(text.encode()).hexdigest()[:8]}"
        return self.run_dir / "attention" / slug

    def _with_wandb(self, write: Any, source: Any) -> Any:
        """Call a writer of :mod:`zoo.viz` for ``source``, logging to W&B when the training run did."""
        wandb_run = self._wandb_run("attention")
        try:
            return write(
                self.module.model,
                self.task,
                source,
                self.attention_dir(source),
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
