"""Use a finished run, whatever its task: ``zoo.load(run_dir).predict([...])``."""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import torch
from omegaconf import OmegaConf

from zoo.config.files import load_yaml
from zoo.config.sections import DecodeConfig
from zoo.contracts import Task
from zoo.errors import ZooError, first_line
from zoo.inference.inputs import InputError, source_limit, undecodable
from zoo.run.checkpoints import STORED, RunLoadError, check_belongs, check_config, checkpoint_file, read_checkpoint


def module_from(checkpoint: dict[str, Any], ckpt: Path) -> Any:
    """The trained :class:`~zoo.training.module.ZooModule` a checkpoint read by :func:`read_checkpoint` holds."""
    from zoo.training.module import ZooModule

    module = ZooModule(**{key: checkpoint["hyper_parameters"][key] for key in STORED})
    try:
        module.load_state_dict(checkpoint["state_dict"])
    except RuntimeError as error:  # weights of other shapes or names than the stored config builds
        raise RunLoadError(
            f"checkpoint {ckpt} cannot be loaded ({first_line(error)[:120]}); it may be corrupt or "
            "from another zoo version: use another checkpoint (--checkpoint last) or retrain"
        ) from None
    return module


def prediction_commands() -> dict[str, list[type[Task]]]:
    """Each command the registered tasks declare (``translate``, ``caption``), with the task classes declaring it."""
    from zoo.registry.entries import entries

    commands: dict[str, list[type[Task]]] = {}
    for entry in entries("task"):
        if entry.cls.command is not None:
            commands.setdefault(entry.cls.command.name, []).append(entry.cls)
    return commands


class Predictor:
    """A trained model with its task's codecs, ready to turn sources into outputs.

    Built from a run directory alone (config, codecs, checkpoint), so it needs
    neither the training data nor the process that trained it. Each source is
    checked on its own (:meth:`encode`): one that cannot be used is an
    :class:`~zoo.inference.inputs.InputError` for it alone (:meth:`predictions`),
    or stops :meth:`predict` naming its position.
    """

    def __init__(self, module: Any, task: Task, run_dir: Path) -> None:
        self.module = module.eval()
        self.task = task
        self.run_dir = Path(run_dir)
        self.decode_cfg = DecodeConfig(**module.cfg["decode"])
        self.source_limit, self.source_limit_why = source_limit(module.cfg)

    @classmethod
    def from_run(cls, run_dir: str | Path, checkpoint: str | Path = "tested") -> Predictor:
        """The run in ``run_dir`` with the weights of ``checkpoint``: ``tested`` (the default: those its test
        scored, the average of its snapshots where it averaged them, else ``best``), ``best``, ``last``,
        a file name under ``run_dir/checkpoints`` (``best.ckpt``) or the path of a ``.ckpt`` file
        that belongs to the run (see :mod:`zoo.run.checkpoints`).

        The run's plugins are found from any folder and environment: the plugin folders it recorded
        (absolute), else the copies of their sources saved in the run (``plugins/``); a component still
        missing is an error naming it, where it came from and how to get it."""
        from zoo.data.datamodule import build_task
        from zoo.run.provenance import PluginMissing, load_run_plugins

        run_dir = Path(run_dir)
        config_file = run_dir / "config.yaml"
        if not config_file.is_file():
            raise RunLoadError(
                f"{run_dir} is not a zoo run directory (no config.yaml); pass the folder `zoo train` printed"
            )
        ckpt = checkpoint_file(run_dir, checkpoint)
        cfg = load_yaml(config_file)
        try:
            load_run_plugins(run_dir, cfg)
        except PluginMissing as error:
            raise RunLoadError(str(error)) from None
        stored = read_checkpoint(ckpt)
        plain = OmegaConf.to_container(cfg, resolve=True)
        check_config(stored, ckpt, run_dir, plain)  # before a task is built from a config.yaml cut off or edited
        task = build_task(cfg)
        task.load(run_dir)
        check_belongs(stored, ckpt, run_dir, plain, task)
        return cls(module_from(stored, ckpt), task, run_dir)

    def predict(self, sources: Sequence[Any], batch_size: int = 64, **decode_overrides: Any) -> list[str]:
        """One output per source; ``decode_overrides`` are DecodeConfig fields, e.g. ``strategy="beam", beam_size=5``.
        A source that cannot be used stops it: an InputError naming the source's position (``source 3: ...``)."""
        outputs = []
        for position, result in enumerate(self.predictions(sources, batch_size, **decode_overrides), 1):
            if isinstance(result, InputError):
                raise InputError(f"source {position}: {result}")
            outputs.append(result)
        return outputs

    def predictions(
        self, sources: Sequence[Any], batch_size: int = 64, **decode_overrides: Any
    ) -> Iterator[str | InputError]:
        """One result per source, in order, a batch at a time: its output, or the InputError saying why it
        cannot be used (the others are still decoded)."""
        decode = dataclasses.replace(self.decode_cfg, **decode_overrides)
        for start in range(0, len(sources), batch_size):
            encoded = self.encode(sources[start : start + batch_size])
            usable = [source for source in encoded if not isinstance(source, InputError)]
            outputs = iter(self._generate(usable, decode) if usable else [])
            yield from (source if isinstance(source, InputError) else next(outputs) for source in encoded)

    @torch.no_grad()
    def _generate(self, encoded: Sequence[Any], decode: DecodeConfig) -> list[str]:
        from zoo.decoding import generate

        batch = self.task.collate_sources(encoded)
        ids = generate(self.module.model, batch, decode, max_len=self.task.output_limit(batch))
        return self.task.decode_targets(ids)

    def __getattr__(self, name: str) -> Any:
        """:meth:`predict` under the name of a task's command, as a user of that task looks for it
        (``translate``, ``caption``); refused for a run whose task does not declare it."""
        if name.startswith("_") or name not in prediction_commands():
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        self.expect_command(name)
        return self.predict

    def expect_command(self, name: str) -> None:
        """Refuse ``zoo NAME`` for a run whose task declares another command (a translation run cannot caption),
        saying which kind of source each reads and the command to use."""
        declared = self.task.command.name if self.task.command else "predict"
        if name in (declared, "predict"):
            return
        kinds = "/".join(dict.fromkeys(task.source_kind for task in prediction_commands().get(name, [])))
        raise RunLoadError(
            f"cannot {name} with {self.run_dir}: its task ({self.module.cfg['task']['name']}) reads "
            f"{self.task.source_kind} sources, not {kinds or name}; use zoo {declared} with it"
        )

    # ------------------------------------------------------------------ checking sources
    def encode(self, sources: Sequence[Any]) -> list[Any]:
        """Each source as the model reads it, or the InputError that says why it cannot be used."""
        read = [self.read(source) for source in sources]
        encoded = iter(self._encode_each([source for source in read if not isinstance(source, InputError)]))
        return [source if isinstance(source, InputError) else self._within_limit(next(encoded)) for source in read]

    def read(self, source: Any) -> Any:
        """A source as the task takes it: a line of text through :meth:`~zoo.contracts.Task.read_input` (numbers
        parsed, a path kept), anything else as it is; or the InputError saying why that line cannot be used."""
        if not isinstance(source, str):
            return source
        where = undecodable(source)
        if where is not None:
            return InputError(f"the text is not valid UTF-8 ({where}); save the input as UTF-8")
        try:
            return self.task.read_input(source)
        except ZooError as error:
            return InputError(str(error))

    def check(self, source: Any) -> Any:
        """The source as the task takes it; the InputError of one that cannot be used (attention pictures need one
        that can)."""
        read = self.read(source)
        (encoded,) = self.encode([read])
        if isinstance(encoded, InputError):
            raise encoded
        return read

    def _encode_each(self, sources: Sequence[Any]) -> list[Any]:
        """The sources encoded together; when that fails, one by one, so a bad one (an image that cannot be
        decoded) costs only itself, and a batch of good ones is still decoded (and cached) together."""
        if not sources:
            return []
        try:
            return list(self.task.encode_sources(sources))
        except ZooError:
            return [self._encode_one(source) for source in sources]

    def _encode_one(self, source: Any) -> Any:
        try:
            return self.task.encode_sources([source])[0]
        except ZooError as error:
            return InputError(str(error))

    def _within_limit(self, encoded: Any) -> Any:
        """``encoded``, or an InputError when it has more tokens than the run accepts (see inputs.LENGTH_FACTOR)."""
        if isinstance(encoded, InputError) or self.task.fits(encoded, self.source_limit):
            return encoded
        return InputError(
            f"the text has {self.task.source_size(encoded)} tokens, more than the {self.source_limit} that run "
            f"{self.run_dir} accepts ({self.source_limit_why}); split it into sentences, one per line"
        )

    def attention_maps(self, source: Any) -> list[Path]:
        """PNG pictures of one source's attention under ``run_dir/attention/<source>/``: heatmaps for a
        sentence; for an image, each word's attention laid over the image (Show, Attend and Tell style)."""
        if self.task.attention_view == "image":
            from zoo.viz.image_attention import write_image_attention

            return self._with_wandb(write_image_attention, source)
        from zoo.viz.attention_maps import write_attention_maps

        return self._with_wandb(write_attention_maps, source)

    def attention_explorer(self, source: Any) -> Path:
        """One offline HTML page with every layer and head of one source's attention:
        ``run_dir/attention/<source>/explorer.html``."""
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
        """Call a writer of :mod:`zoo.viz` for a usable ``source``, logging to W&B when the training run did."""
        read = self.check(source)  # before a folder or a W&B run is made for it
        from zoo.run.claim import refuse_live_run

        refuse_live_run(self.run_dir, "draw its attention once that process has ended")
        wandb_run = self._wandb_run("attention")
        try:
            return write(
                self.module.model,
                self.task,
                read,
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
            project=logger["project"],
            dir=str(self.run_dir),
            mode=wandb_mode(logger),
            job_type=job_type,
            name=self.run_dir.name,
        )
