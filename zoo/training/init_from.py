"""``init_from``: the weights a run starts from, taken from another run (self-critical training starts from a
cross-entropy-trained model).

It names a run directory (the weights its test scored: ``average.ckpt`` where it averaged, else ``best.ckpt``) or
a checkpoint file. The checkpoint must hold the same model: the same task, data and network settings
(:func:`zoo.run.checkpoints.config_mismatch`), checked with the config, before any data loads; then, once
the run's codecs are known and before the run directory is locked, the same vocabulary sizes and the same
vocabulary: the tokens at each id of every tokenizer (:meth:`zoo.contracts.Task.tokenizers`) equal to those of the
files the checkpoint's run saved (``tokenizers/<side>.json`` in the run directory holding it), since weights
trained on another corpus with a vocabulary of the same size load and then mean other words. A checkpoint file
outside any run directory has no tokenizers beside it: only its sizes are checked, and a warning says so. Only the
weights are taken: the optimiser, the schedule and the step count start afresh. A resumed run continues from its
own ``last.ckpt`` and never reads ``init_from`` again, so it is checked only where a job starts a run. The weights it
gives are validated before the first step (:func:`validate_start`).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from hydra.utils import to_absolute_path
from omegaconf import DictConfig, OmegaConf

from zoo.config.checks import ConfigError
from zoo.contracts import Task
from zoo.data.text import TOKENIZER_DIR, load_tokenizer, tokenizer_path
from zoo.errors import ZooError
from zoo.run.checkpoints import checkpoint_file, config_mismatch, mismatch, read_checkpoint

if TYPE_CHECKING:
    from zoo.training.trainer import Built

log = logging.getLogger(__name__)

#: What to do about an ``init_from`` checkpoint that cannot be read.
READ_ADVICE = "give a run directory or a .ckpt file that `zoo train` wrote"


def initial_checkpoint(init_from: str) -> Path:
    """The checkpoint file ``init_from`` names: a file, or the weights a run directory's test scored."""
    path = Path(to_absolute_path(init_from))
    if path.is_file():
        return path
    if not path.is_dir():
        raise ConfigError(
            f"init_from={init_from}: there is no such run directory or checkpoint file; give the folder `zoo train` "
            "printed for a finished run, or a .ckpt file"
        )
    try:
        return checkpoint_file(path)
    except ZooError as error:
        raise ConfigError(f"init_from={init_from}: {error}") from None


def read_initial(cfg: Any, task: Task | None = None) -> tuple[Path, dict[str, Any]]:
    """The checkpoint ``init_from`` names and its contents, its tensors mapped (not read); refused in one line when
    it is missing, damaged, not zoo's, of another task, data or network than ``cfg`` or, given the run's ``task``
    (its codecs), of other vocabulary sizes."""
    ckpt = initial_checkpoint(cfg["init_from"])
    try:
        checkpoint = read_checkpoint(ckpt, READ_ADVICE, mmap=True)
    except ZooError as error:
        raise ConfigError(f"init_from={cfg['init_from']}: {error}") from None
    stored, plain = checkpoint["hyper_parameters"], _plain(cfg)
    _refuse(cfg, ckpt, config_mismatch(stored["cfg"], plain) if task is None else mismatch(stored, plain, task))
    return ckpt, checkpoint


def check_initial(cfg: Any, task: Task) -> None:
    """Refuse ``init_from`` weights that do not fit the run whose codecs ``task`` holds: :func:`read_initial`'s
    checks, then the vocabulary itself (module docstring)."""
    ckpt, _ = read_initial(cfg, task)
    run_dir = checkpoint_run(ckpt)
    if run_dir is None:
        log.warning(
            "init_from=%s: no tokenizers/ beside %s (not in a run directory), so only its vocabulary sizes are "
            "checked; give the run directory to check its vocabulary too",
            cfg["init_from"],
            ckpt,
        )
        return
    try:
        why = vocabulary_difference(run_dir, task)
    except ZooError as error:  # a tokenizer file of that run missing or damaged
        why = f"its run's vocabulary cannot be read ({error})"
    _refuse(cfg, ckpt, why)


def checkpoint_run(ckpt: Path) -> Path | None:
    """The run directory holding ``ckpt`` (in ``checkpoints/`` or ``checkpoints/snapshots/``): the first folder above
    it with a ``tokenizers/`` folder; None for a file outside any run."""
    return next((folder for folder in ckpt.resolve().parents[:3] if (folder / TOKENIZER_DIR).is_dir()), None)


def vocabulary_difference(run_dir: Path, task: Task) -> str | None:
    """Where the vocabulary ``run_dir`` saved differs from ``task``'s codecs, side by side: ``3,102 of 8,000 target
    tokens differ (id 57 is 'dog' there, 'cat' here)``; None when every id means the same token."""
    differences = []
    for side, tokenizer in task.tokenizers().items():
        theirs = load_tokenizer(task.tokenizer_cfg, tokenizer_path(run_dir, side)).tokens()
        ours = tokenizer.tokens()
        changed = [i for i in range(max(len(theirs), len(ours))) if _token(theirs, i) != _token(ours, i)]
        if changed:
            first = changed[0]
            differences.append(
                f"{len(changed):,} of {len(ours):,} {side} tokens differ "
                f"(id {first} is {_token(theirs, first)!r} there, {_token(ours, first)!r} here)"
            )
    if not differences:
        return None
    return "; ".join(differences) + ": its ids mean other words (weights trained on another corpus)"


def _token(tokens: list[str], i: int) -> str | None:
    return tokens[i] if i < len(tokens) else None


def start_from(module: Any, cfg: Any, task: Task) -> Path:
    """Load the weights ``init_from`` names into ``module`` (a :class:`~zoo.training.module.ZooModule` built for
    ``cfg`` and the codecs of ``task``); the checkpoint's path."""
    ckpt, checkpoint = read_initial(cfg, task)
    try:
        module.load_state_dict(checkpoint["state_dict"])
    except RuntimeError as error:  # weights of other names or shapes than the same config builds: another zoo
        _refuse(cfg, ckpt, f"its weights do not load ({' '.join(str(error).split())[:160]})")
    log.info("starting from the weights of %s (init_from)", ckpt)
    return ckpt


def validate_start(built: Built) -> None:
    """Validate the weights ``init_from`` gave before the first step: recorded as the run's first validation (step 0)
    and written as ``best.ckpt`` with its score, so the best checkpoint is replaced only by better weights and early
    stopping counts from the start (an SCST stage at too large a step leaves its start as the best, and tested)."""
    built.run.interruptions.enter("start validation")  # a signal stops it at once: nothing is written before it ends
    trainer, best = built.trainer, built.best
    (scores,) = trainer.validate(built.module, datamodule=built.data, verbose=False)
    if best.monitor not in scores:  # no validation batches (trainer.limit_val_batches=0)
        return
    built.record.validated(trainer, scores)
    score = torch.tensor(float(scores[best.monitor]))
    path = best.format_checkpoint_name({})  # the name ModelCheckpoint gives best.ckpt, which it then replaces
    trainer.save_checkpoint(path)
    best.best_k_models = {path: score}
    best.best_model_path = best.kth_best_model_path = path
    best.best_model_score = best.kth_value = score
    for stopping in trainer.early_stopping_callbacks:
        stopping.best_score = score


def _refuse(cfg: Any, ckpt: Path, why: str | None) -> None:
    if why is None:
        return
    given = cfg["init_from"]
    named = given if Path(to_absolute_path(given)) == ckpt else f"{given} ({ckpt})"  # a run directory: its file
    raise ConfigError(
        f"init_from={named} does not fit this run: {why}; start from a run of the same task, data and network"
    )


def _plain(cfg: Any) -> dict:
    return OmegaConf.to_container(cfg, resolve=True, enum_to_str=True) if isinstance(cfg, DictConfig) else cfg
