"""One job in its run folder, from the claim to the release, inside one error boundary: :func:`run_job`.

A job (a run, or one point of a sweep) discovers the plugin folders its config names (once per process: a sweep's
worker, handed the config pickled, discovers them itself), claims its directory (:mod:`zoo.run.claim`: new or empty,
or holding a run its ``resume_mode`` continues; locked from the first write until the job ends), answers signals in
every phase (:mod:`zoo.run.interruptions`), and is trained by a function that gets the claimed folder
(:class:`RunFolder`). However the job ends, the folder says so:

* finished: the training function's last record (a run that had finished, under ``resume_mode=auto``, is skipped);
* stopped by a signal: ``summary.json`` says ``interrupted``, with the phase (once the record has started); the
  process then says what to run next and exits 128 + the signal (:mod:`zoo.cli.train`); under submitit the job is
  requeued (:meth:`~zoo.run.interruptions.RunInterrupted.hand_over`);
* failed: ``summary.json`` says ``failed``, with the reason (once the record has started). A single run then ends
  with one ``zoo: error:`` line (a bug: Hydra's report, with its traceback). In a sweep the job's failure is one line
  and the sweep goes on; there a job refused before its record started leaves a failed ``summary.json`` too, unless
  it was refused its directory (one that holds a run or anything else, or that another process writes): that
  directory is left as it was.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from hydra.utils import to_absolute_path
from lightning.pytorch.utilities import rank_zero_only
from omegaconf import DictConfig

from zoo.disk import full_disk
from zoo.errors import ZooError, one_line_reason, report
from zoo.registry.discovery import discover
from zoo.run.claim import Claim, RunDirRefused, claim_run_dir
from zoo.run.identity import SCHEMA_VERSION
from zoo.run.interruptions import Interruptions, RunInterrupted
from zoo.run.layout import SUMMARY_FILE
from zoo.run.provenance import write_run_files
from zoo.run.record import RunRecord, write_json_atomic
from zoo.run.resume import Resume, Verdict, resume_mode
from zoo.run.tracking import one_wandb_run_per_job

log = logging.getLogger("zoo.run")

#: Run directories of the jobs of this process's sweep that failed (the others ran on).
FAILED_JOBS: list[str] = []


class RunFolder:
    """A job's claimed run directory and its books: the claim (lock and log), the handler of signals, and from the
    moment the run has passed its checks, its record (:meth:`start_record`)."""

    def __init__(self, cfg: DictConfig, claim: Claim) -> None:
        self.cfg = cfg
        self.claim = claim
        self.interruptions = Interruptions()
        self.record: RunRecord | None = None

    @property
    def path(self) -> Path:
        return self.claim.run_dir

    @property
    def writes(self) -> bool:
        """Whether this process writes the run (DDP ranks > 0 run in rank 0's directory: they write nothing)."""
        return self.claim.writes

    def start_record(self, identity: dict, resume: Resume, metrics: Iterable[str]) -> RunRecord:
        """``summary.json`` first, ``running`` (a resumed run's record goes on): from here on the directory holds a
        run, and how the job ends is recorded. Then what a run writes before it trains: what Hydra would have, its
        resolved config and provenance (:func:`zoo.run.provenance.write_run_files`), and its log file."""
        record = RunRecord(self.path, identity, self.writes)
        if resume.resuming:
            record.resume_from(resume.previous, resume.step)
        record.start()
        self.record = record
        if self.writes:
            write_run_files(self.path, self.cfg, metrics)
            self.claim.open_log()
        return record

    def ended(self, error: BaseException, sweep: bool) -> None:
        """Say in the folder how the job ended early (module docstring), then hand a pre-empted job to submitit."""
        if self.record is not None and isinstance(error, RunInterrupted):
            self.record.interrupt(error)
        elif self.record is not None and isinstance(error, Exception):
            self.record.fail(error)
        if sweep and self.writes and isinstance(error, Exception):
            if not isinstance(error, ZooError):  # a bug, not a bad input: keep the traceback in the job's log
                log.error("the job failed", exc_info=error)
            self.claim.acquire()  # locked already unless the config was refused
            if not (self.path / SUMMARY_FILE).exists():
                write_json_atomic(
                    self.path / SUMMARY_FILE,
                    {
                        "schema_version": SCHEMA_VERSION,
                        "status": "failed",
                        "reason": one_line_reason(error),
                        "overrides": list(HydraConfig.get().overrides.task),
                    },
                )
        if isinstance(error, RunInterrupted):
            error.run_dir = str(self.path)
            error.hand_over()  # submitit's pre-emption signal: requeued (this process exits)


def run_job(cfg: DictConfig, train: Callable[[DictConfig, RunFolder], dict]) -> dict | None:
    """Run ``train`` on the job's claimed folder (module docstring): its summary (a skipped run's, as it finished),
    or None where the job failed in a sweep."""
    hydra = HydraConfig.get()
    run_dir, sweep = Path(hydra.runtime.output_dir), hydra.mode == RunMode.MULTIRUN
    writes = rank_zero_only.rank == 0  # DDP ranks > 0 run in rank 0's directory: they neither check nor write it
    try:
        with claim_run_dir(run_dir, writes, resume_mode(cfg)) as claim:
            folder = RunFolder(cfg, claim)
            try:
                discover([to_absolute_path(d) for d in cfg.plugin_dirs])
                with folder.interruptions.guard(), one_wandb_run_per_job():  # in a sweep too, each job its own
                    if claim.verdict is Verdict.finished:
                        print(f"zoo: {run_dir} finished already; skipped (resume_mode=auto)", file=sys.stderr)
                        return json.loads((run_dir / SUMMARY_FILE).read_text())
                    return train(cfg, folder)
            except BaseException as error:
                folder.ended(error, sweep)
                raise
    except Exception as error:
        if not sweep:  # one line for a bad input or a full disk (a bug: Hydra's report), before Hydra's own
            said = error if isinstance(error, ZooError) else full_disk(error, run_dir)
            if said is None:
                raise
            report(said)
            raise SystemExit(1) from None
        if isinstance(error, RunDirRefused):
            print(f"zoo: error: {error}; the sweep goes on", file=sys.stderr)
        else:
            print(
                f"zoo: error: the job in {run_dir} failed ({one_line_reason(error)}); the sweep goes on",
                file=sys.stderr,
            )
        FAILED_JOBS.append(str(run_dir))
        return None
