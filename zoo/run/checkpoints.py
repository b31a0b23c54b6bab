"""A run's checkpoint: which file a name means, reading it, and whether it belongs to the run.

``zoo translate RUN --checkpoint FILE`` builds the network from FILE (every checkpoint stores the
whole config it was trained with) but reads and writes text with RUN's codecs (its tokenizers).
A checkpoint from a run with another task, other data or another network would load, and then
crash deep inside the model or print fluent nonsense; it is refused instead, in one line.

What "the same run" means is judged by what the weights mean, not by how they were found: the
config sections that build the task, its codecs and the network (every component group, from
``task``, ``dataset`` and ``tokenizer`` to ``decoder`` and the attention groups, and ``model``)
must be equal, and the sizes the checkpoint stored for its source and target vocabulary must be
what the run's codecs give. Everything else may differ (``seed``, ``optim``, ``trainer``,
``decode``, ``data`` loading, loggers, metrics): best and last, a copy of either, or the
checkpoint of a seed sibling (same data, same network, another seed) all translate correctly with
the run's codecs, so all are accepted. The sizes catch what the config cannot: a dataset whose
files changed under the same path, or a ``tokenizers/`` folder copied from another run (a new
vocabulary of exactly the old sizes would still pass unseen).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import torch

from zoo.config.files import RESTORE
from zoo.contracts import Task
from zoo.errors import ZooError, first_line
from zoo.registry.kinds import GROUP_KINDS
from zoo.run.layout import AVERAGE_CHECKPOINT, CHECKPOINTS_DIR, CONFIG_FILE, SUMMARY_FILE

#: The config sections that decide what a checkpoint's weights mean (see the module docstring).
MEANING_SECTIONS: tuple[str, ...] = (*(group for kind in GROUP_KINDS for group in kind.groups), "model")
#: The hyperparameters a zoo checkpoint stores (zoo.training.module.ZooModule's arguments).
STORED = ("cfg", "source", "target_vocab_size")
#: Differences named in a refusal; more are counted.
SHOWN_DIFFERENCES = 3
_NONE = "(none)"  # a key one side lacks


class RunLoadError(ZooError):
    """A run directory or its checkpoint cannot be used."""


def checkpoint_file(run_dir: Path, checkpoint: str | Path = "tested") -> Path:
    """The checkpoint file that ``checkpoint`` names for the run in ``run_dir`` (see :meth:`Predictor.from_run`);
    :class:`RunLoadError` when there is none. ``tested`` is the weights the run's test scores: the average of its
    kept snapshots where it averaged them (``trainer.average_last``/``average_best``) and validation preferred the
    average, else ``best``."""
    folder = run_dir / "checkpoints"
    if str(checkpoint) == "tested":
        averaged = run_dir / AVERAGE_CHECKPOINT
        checkpoint = averaged if averaged.is_file() and _average_tested(run_dir) else "best"
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
    raise RunLoadError(f"checkpoint {name} is not a file{also}; give tested, best, last or the path of a .ckpt file")


def _average_tested(run_dir: Path) -> bool:
    """Whether the run's test scored its averaged weights (validation preferred them to ``best.ckpt``), from its
    ``summary.json``; :class:`RunLoadError` when that cannot be read, rather than a guess at the weights."""
    summary = run_dir / SUMMARY_FILE
    try:
        average = json.loads(summary.read_text()).get("average")
    except (OSError, ValueError, AttributeError) as err:
        raise RunLoadError(
            f"cannot tell which weights the run tested: {summary} is unreadable ({type(err).__name__}); "
            f"name them with --checkpoint {Path(AVERAGE_CHECKPOINT).name} or --checkpoint best"
        ) from None
    return bool(average) and average.get("tested", True)  # runs before the choice always tested the average


#: What to do about a checkpoint that cannot be read, for a command that uses one (``--checkpoint``).
USE_ANOTHER = "use another checkpoint (--checkpoint last) or retrain"


def read_checkpoint(ckpt: Path, advice: str = USE_ANOTHER, mmap: bool = False) -> dict[str, Any]:
    """The contents of a zoo checkpoint (tensors only: nothing in it is run); one line ending in ``advice`` when it
    cannot be read, one naming what it lacks when it is not a zoo checkpoint. ``mmap`` maps the tensors instead of
    reading them: a check of the stored config then reads little more than the config."""
    if ckpt.stat().st_size == 0:
        raise RunLoadError(f"checkpoint {ckpt} is empty (0 bytes): its writing was cut off; {advice}")
    try:
        checkpoint = torch.load(ckpt, map_location="cpu", weights_only=True, mmap=mmap)
    except Exception as error:
        reason = first_line(error)[:120]  # some errors (EOFError) have no text
        raise RunLoadError(
            f"checkpoint {ckpt} cannot be loaded ({type(error).__name__}{': ' + reason if reason else ''}); "
            f"it may be truncated, corrupt or from another zoo version: {advice}"
        ) from error
    stored = checkpoint.get("hyper_parameters") if isinstance(checkpoint, dict) else None
    if not isinstance(stored, dict) or not all(key in stored for key in STORED) or "state_dict" not in checkpoint:
        raise RunLoadError(
            f"{ckpt} is not a zoo checkpoint (it holds no zoo config and weights); "
            "give best, last or a .ckpt file that `zoo train` wrote"
        )
    return checkpoint


def check_config(checkpoint: dict[str, Any], ckpt: Path, run_dir: Path, cfg: dict) -> None:
    """Refuse a checkpoint trained with another task, data or network than the run's ``config.yaml`` (``cfg``) says,
    before a task is built from that file. The run's own checkpoint holds the config the run trained with: there the
    file is what changed (edited, cut off), and it is named."""
    stored = checkpoint["hyper_parameters"]["cfg"]
    why = config_mismatch(stored, cfg)
    if why is None:
        return
    if _is_own(ckpt, run_dir):
        differences = _differences(_meaning(stored), _meaning(cfg), versus="config.yaml has ")
        raise RunLoadError(
            f"{run_dir / CONFIG_FILE} does not match the run's own checkpoint {ckpt.name}, trained with {differences}: "
            f"config.yaml was edited or cut off since; {RESTORE}"
        )
    raise _does_not_fit(ckpt, run_dir, why)


def check_belongs(checkpoint: dict[str, Any], ckpt: Path, run_dir: Path, cfg: dict, task: Task) -> None:
    """Refuse a checkpoint whose weights mean something else than ``run_dir``'s codecs (module docstring)."""
    stored = checkpoint["hyper_parameters"]
    why = mismatch(stored, cfg, task)
    if why is None:
        return
    if _is_own(ckpt, run_dir):  # its config.yaml matched (check_config): the codecs are what changed
        sizes = _differences(
            _sizes(stored["source"], stored["target_vocab_size"]),
            _sizes(dataclasses.asdict(task.source_description()), task.target_vocab_size),
            versus="tokenizers/ give ",
        )
        raise RunLoadError(
            f"{run_dir / 'tokenizers'} does not match the run's own checkpoint {ckpt.name}, trained with {sizes}: "
            "the folder was replaced since; restore it from a copy of the run, or train a new run"
        )
    raise _does_not_fit(ckpt, run_dir, why)


def _does_not_fit(ckpt: Path, run_dir: Path, why: str) -> RunLoadError:
    return RunLoadError(
        f"checkpoint {ckpt} does not fit run {run_dir}: {why}; use one of the run's own checkpoints "
        f"(--checkpoint best or last){_own_run(ckpt, run_dir)}"
    )


def _is_own(ckpt: Path, run_dir: Path) -> bool:
    """Whether ``ckpt`` lies in ``run_dir``'s checkpoints/ (its snapshots/ too)."""
    return (run_dir / CHECKPOINTS_DIR).resolve() in ckpt.resolve().parents


def mismatch(stored: dict[str, Any], cfg: dict, task: Task) -> str | None:
    """Why weights trained with ``stored`` (a checkpoint's hyperparameters) cannot serve a run with config ``cfg``
    and the codecs of ``task``, or None when they can."""
    why = config_mismatch(stored["cfg"], cfg)
    if why is not None:
        return why
    sizes = _differences(
        _sizes(stored["source"], stored["target_vocab_size"]),
        _sizes(dataclasses.asdict(task.source_description()), task.target_vocab_size),
    )
    if sizes:
        return (
            f"its ids mean other tokens than the run's tokenizers/ give ({sizes}): it comes from a run on other "
            "data, or the run's tokenizers/ were replaced"
        )
    return None


def config_mismatch(stored_cfg: dict, cfg: dict) -> str | None:
    """Why weights trained with the config ``stored_cfg`` cannot serve a run with config ``cfg`` (its task, data or
    network differ), or None when the configs agree; the vocabulary sizes are :func:`mismatch`'s to compare."""
    theirs, ours = stored_cfg["task"]["name"], (cfg.get("task") or {}).get("name")  # a cut-off config lacks it
    if theirs != ours:
        return f"it was trained for {theirs}, the run does {ours}"
    differences = _differences(_meaning(stored_cfg), _meaning(cfg))
    if differences:
        return f"it was trained with another task, data or network: {differences}"
    return None


def model_difference(first: dict[str, Any], second: dict[str, Any]) -> str:
    """Where the weights of two checkpoints (their stored hyperparameters) mean different things: the first settings
    of the task, data or network and the sizes that differ, ``key=first's vs second's``; "" when they mean the same
    (weights that can be averaged, or swapped)."""
    return _differences(_meaning(first["cfg"]), _meaning(second["cfg"]), versus="") or _differences(
        _sizes(first["source"], first["target_vocab_size"]),
        _sizes(second["source"], second["target_vocab_size"]),
        versus="",
    )


def _meaning(cfg: dict) -> dict[str, Any]:
    """The meaning sections of a config as ``{dotted.key: value}`` (lists stay whole)."""
    flat: dict[str, Any] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict):
            for key, inner in value.items():
                walk(f"{prefix}.{key}", inner)
        else:
            flat[prefix] = value

    for section in MEANING_SECTIONS:
        walk(section, cfg.get(section))
    return flat


def _sizes(source: dict[str, Any], target_vocab_size: int) -> dict[str, Any]:
    """What the network was sized for: the source description's fields and the target vocabulary."""
    return {**{f"source.{key}": value for key, value in source.items()}, "target_vocab_size": target_vocab_size}


def _differences(theirs: dict[str, Any], ours: dict[str, Any], versus: str = "the run's ") -> str:
    """``key=theirs vs the run's ours`` (``versus`` names ours) for the first keys whose values differ, and how many
    more; "" if none."""
    keys = [key for key in {**theirs, **ours} if theirs.get(key, _NONE) != ours.get(key, _NONE)]
    shown = [f"{key}={theirs.get(key, _NONE)} vs {versus}{ours.get(key, _NONE)}" for key in keys[:SHOWN_DIFFERENCES]]
    more = len(keys) - len(shown)
    return ", ".join(shown) + (f" and {more} more" if more else "")


def _own_run(ckpt: Path, run_dir: Path) -> str:
    """``, or use it with its own run (RUN)`` when the checkpoint lies in another run directory's checkpoints/."""
    folder = ckpt.resolve().parent
    run = folder.parent
    if folder.name == "checkpoints" and (run / "config.yaml").is_file() and run != run_dir.resolve():
        return f", or use it with its own run ({run})"
    return ""
