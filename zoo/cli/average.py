"""``zoo average``: the mean of a finished run's kept weight snapshots (``trainer.average_last``/``average_best``),
or of checkpoint files of one model, written as a checkpoint ``zoo predict --checkpoint`` reads.

The file is written through a temporary file and a rename, and a file already there is replaced only with
``--force``: a user's checkpoint is never lost to a mistyped ``--out``. A run still being written (its lock held by a
live process) is neither read nor written: its snapshots change at every validation.
"""

from __future__ import annotations

from pathlib import Path

from zoo.cli.args import CommandParser, positive_int
from zoo.errors import ZooError


def run(args: list[str], description: str) -> None:
    parser = CommandParser(prog="zoo average", description=description)
    parser.add_argument(
        "sources",
        nargs="+",
        metavar="RUN_DIR|CKPT",
        help="a run directory trained with trainer.average_last or average_best (its kept snapshots), "
        "or two or more .ckpt files of one model",
    )
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--last", type=positive_int, metavar="N", help="the run's N newest snapshots (default: all)")
    which.add_argument("--best", type=positive_int, metavar="N", help="the run's N best snapshots by validation")
    parser.add_argument(
        "--out", metavar="FILE", help="the checkpoint to write (a run's default: checkpoints/average-last-N.ckpt)"
    )
    parser.add_argument("--force", action="store_true", help="replace FILE if it exists")
    opts = parser.parse_args(args)
    run_dir, paths, default_out = _sources(opts)
    out = Path(opts.out) if opts.out else default_out
    _check_out(out, opts.force)
    from zoo.run.claim import refuse_live_run

    refuse_live_run(out, "write the average outside it (--out), or once that process has ended")

    from zoo.run.layout import CHECKPOINTS_DIR
    from zoo.training.averaging import average_checkpoints, write_checkpoint

    averaged = average_checkpoints(paths)
    write_checkpoint(averaged, out)
    steps = ", ".join(str(source["step"]) for source in averaged["averaged_from"])
    # a file in the run's checkpoints/ is named by its name alone (zoo.run.checkpoints.checkpoint_file)
    name = out.name if run_dir is not None and out.parent == run_dir / CHECKPOINTS_DIR else out
    print(
        f"wrote {out}: the mean of {len(paths)} checkpoints (steps {steps}); "
        f"use it with: zoo predict {run_dir or 'RUN_DIR'} --checkpoint {name}"
    )


def _sources(opts) -> tuple[Path | None, list[Path], Path | None]:
    """The run directory (None for files), the checkpoints to average oldest first, and the default output."""
    given = [Path(source) for source in opts.sources]
    if len(given) == 1 and given[0].is_dir():
        return given[0], *_run_snapshots(given[0], opts.last, opts.best)
    for path in given:
        if path.is_dir():
            raise ZooError(f"{path} is a folder: give one run directory alone, or .ckpt files")
        if not path.is_file():
            raise ZooError(f"{path} is neither a run directory nor a checkpoint file")
    if opts.last or opts.best:
        flag = "--last" if opts.last else "--best"
        raise ZooError(f"{flag} chooses among a run's kept snapshots; give the run directory, or drop {flag}")
    if len(given) < 2:
        raise ZooError(f"one checkpoint ({given[0]}) averages to itself; give two or more, or a run directory")
    if opts.out is None:
        raise ZooError("give --out FILE: where to write the average of checkpoint files")
    return None, given, None


def _run_snapshots(run_dir: Path, last: int | None, best: int | None) -> tuple[list[Path], Path]:
    """The run's kept snapshots that ``--last``/``--best`` choose (all without either) and the default output."""
    from zoo.run.claim import refuse_live_run
    from zoo.run.layout import AVERAGE_OF_FILE, CONFIG_FILE, SNAPSHOTS_DIR
    from zoo.training.snapshots import BEST, LAST, choose, read_index

    if not (run_dir / CONFIG_FILE).is_file():
        raise ZooError(f"{run_dir} is not a zoo run directory (no {CONFIG_FILE}); pass the folder `zoo train` printed")
    refuse_live_run(run_dir, "average its snapshots once that process has ended (they change at every validation)")
    index = read_index(run_dir)
    if not index or not index["snapshots"]:
        raise ZooError(
            f"{run_dir} kept no weight snapshots: train with trainer.average_last=N (or average_best=N) to keep "
            "them, or give .ckpt files to average"
        )
    kept = index["snapshots"]
    n, by = (last, LAST) if last else (best, BEST) if best else (len(kept), index["by"])
    if n > len(kept):
        steps = ", ".join(str(entry["step"]) for entry in kept)
        raise ZooError(
            f"--{by} {n}: {run_dir} kept {len(kept)} snapshots (steps {steps}: it trained with "
            f"trainer.average_{index['by']}={index['keep']}); give --{by} {len(kept)} or fewer"
        )
    chosen = choose(kept, n, by, index["mode"])
    folder = run_dir / SNAPSHOTS_DIR
    missing = [entry["file"] for entry in chosen if not (folder / entry["file"]).is_file()]
    if missing:
        raise ZooError(f"snapshot {folder / missing[0]} is missing (deleted?); choose others with --last or --best")
    return [folder / entry["file"] for entry in chosen], run_dir / AVERAGE_OF_FILE.format(by=by, n=n)


def _check_out(out: Path, force: bool) -> None:
    """Refuse an output that is a folder, in a folder that does not exist, or a file already there unless ``force``."""
    if out.is_dir():
        raise ZooError(f"--out {out} is a folder; give the path of the checkpoint file to write")
    if not out.parent.is_dir():
        raise ZooError(f"--out {out}: there is no folder {out.parent}")
    if out.exists() and not force:
        raise ZooError(f"{out} exists; add --force to replace it, or give another --out")
