"""The bad-input battery, messages: a typo is answered with its closest valid spelling, a damaged run file,
a report or resume target that cannot be used and a sweep with one bad value are each one line naming the
fix, before anything starts. What every case must show, and how it runs, is in ``helpers/battery.py``; here a
refused command must also leave no new folder behind (the battery compares files only).

``run`` is a copy of a finished tiny run (``copy="finished_run"``) that ``files`` may damage first.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from helpers.battery import TRAIN_TINY, Case, assert_refused

pytestmark = pytest.mark.slow

TRAIN = ["train", *TRAIN_TINY]
SWEEP = ["train", "-m", *TRAIN_TINY]
# No encoder-specific override: the cases choose their own encoder.
ANY_ENCODER = ["train", "-m", "experiment=smoke", "trainer.enable_progress_bar=false"]


def run_file(path: str, data: bytes) -> Callable[[Path], None]:
    """Replace one file of the copied run with ``data``."""
    return lambda here: (here / "run" / path).write_bytes(data)


def user_file(path: str) -> Callable[[Path], None]:
    """A file of the user's at ``path`` (its folders made first)."""

    def write(here: Path) -> None:
        (here / path).parent.mkdir(parents=True, exist_ok=True)
        (here / path).write_text("the user's own\n")

    return write


def search_with_a_damaged_best_trial(here: Path) -> None:
    """A search of two trials (copies of the run with a search record); the best one's config.yaml is cut off."""
    for trial in (0, 1):
        shutil.copytree(here / "run", here / "search" / str(trial))
        summary_file = here / "search" / str(trial) / "summary.json"
        summary = json.loads(summary_file.read_text())
        summary["overrides"] += [
            "+search.study=search",
            f"+search.trial={trial}",
            "+search.role=trial",
            "+search.direction=maximize",
        ]
        summary_file.write_text(json.dumps({**summary, "best_val": float(trial)}))
    (here / "search" / "1" / "config.yaml").write_text("encoder: {name: gru, hidden_size: [32,\n")


CUT_OFF_YAML = b"encoder: {name: gru\n  hidden_size: [32,\n"

#: Refused only on a machine without a CUDA GPU (where there is one, they train).
WITHOUT_GPU = [
    Case("messages", [*TRAIN, "trainer=gpu"], "train on the CPU with trainer=cpu"),
    Case("messages", [*SWEEP, "trainer=cpu,gpu"], "train on the CPU with trainer=cpu"),
]

CASES = [
    # ----- a mistyped config key: the closest key of its section (Hydra's advice to append it with + is not given)
    Case("messages", [*TRAIN, "attention=cosine", "attention.temprature=5"], "did you mean attention.temperature=5?"),
    Case("messages", [*TRAIN, "attention=cosine", "+attention.temprature=5"], "did you mean attention.temperature?"),
    Case("messages", [*TRAIN, "+attention.temprature=5"], "attention=additive has no field temprature"),
    Case("messages", [*TRAIN, "encoder.hiden_size=3"], "did you mean encoder.hidden_size=3?"),
    Case("messages", [*TRAIN, "trainer.acelerator=cpu"], "did you mean trainer.accelerator=cpu?"),
    Case("messages", [*TRAIN, "+trainer.max_epoch=2"], "did you mean trainer.max_epochs?"),
    Case("messages", [*TRAIN, "optim.lrr=0.01"], "did you mean optim.lr=0.01?"),
    Case("messages", [*TRAIN, "ecoder=lstm"], "did you mean encoder=lstm?"),
    Case("messages", [*TRAIN, "+sed=3"], "zoo has no option sed; did you mean seed?"),
    Case("messages", [*TRAIN, "hydra.run.dirr=elsewhere"], "did you mean hydra.run.dir=elsewhere?"),
    Case("messages", [*TRAIN, "cross_attention.hidden_size=64"], "nothing is chosen for cross_attention"),
    # ----- a mistyped option of a config group or value of a field: the closest first, then the choices
    Case("messages", [*TRAIN, "encoder=gruu"], "did you mean encoder=gru?"),
    Case("messages", [*TRAIN, "model=tranformer"], "did you mean model=transformer?"),
    Case("messages", [*TRAIN, "trainer=gpuu"], "did you mean trainer=gpu?"),
    Case("messages", [*SWEEP, "seed=1,2", "hydra/launcher=jobilb"], "did you mean hydra/launcher=joblib?"),
    Case("messages", [*TRAIN, "decode.strategy=beem"], "did you mean decode.strategy=beam?"),
    Case("messages", [*TRAIN, "trainer.accelerator=gpuu"], "did you mean gpu?"),
    Case("messages", [*TRAIN, "monitor=chrff"], "did you mean chrf?"),
    Case("messages", [*TRAIN, "metrics=[bleu,chfr]"], "did you mean chrf?"),
    # ----- overrides written the wrong way
    Case("messages", [*TRAIN, "+attention=cosine"], "choose its option with attention=cosine (without +)"),
    Case("messages", [*TRAIN, "~encoder"], "encoder=NAME"),
    Case("messages", [*TRAIN, "encoder.hidden_size"], "write KEY=VALUE"),
    Case("messages", [*TRAIN, "trainer.devices=[0,1"], "quote a value"),
    # ----- flags and commands
    Case("messages", ["train", "--multirn", *TRAIN_TINY, "seed=1,2"], "did you mean --multirun?"),
    Case("messages", ["train", "--cfg", "jobb", *TRAIN_TINY], "did you mean job?"),
    Case("messages", ["train", "--verbose", *TRAIN_TINY], "zoo --verbose train"),
    Case("messages", ["--verbos", "train", *TRAIN_TINY], "did you mean --verbose?"),
    Case("messages", ["compaer", "{run}"], "did you mean compare?"),
    Case("messages", ["list", "atention"], "did you mean attention?"),
    Case("messages", ["list", "attention", "--filter", "dott"], "did you mean dot?"),
    Case("messages", ["dashboard", "{run}", "--prot", "0"], "did you mean --port?"),
    Case("messages", ["compare", "{run}", "--sotr", "bleu"], "did you mean --sort?"),
    Case("messages", ["compare", "{run}", "--format", "jsn"], "did you mean json?"),
    Case("messages", ["compare", "{run}", "--sort", "blue"], "did you mean bleu?"),
    Case("messages", ["compare", "{run}", "--by", "encoder.hiden_size"], "did you mean encoder.hidden_size"),
    Case("messages", ["compare", "{run}", "--baseline", "gruu"], "did you mean gru?"),
    # ----- the machine: a GPU asked for where there are not that many
    Case("messages", [*TRAIN, "trainer=gpu", "trainer.devices=99"], "GPU"),
    # ----- a damaged file of a run: one line naming it
    Case(
        "messages",
        ["train", "resume=run"],
        "run/config.yaml is damaged",
        copy="finished_run",
        files=run_file("config.yaml", CUT_OFF_YAML),
    ),
    Case(
        "messages",
        ["train", "resume=run"],
        "run/.hydra/overrides.yaml is damaged",
        copy="finished_run",
        files=run_file(".hydra/overrides.yaml", b"- experiment=smoke\n- [trainer.max_epochs=1\n"),
    ),
    Case(
        "messages",
        ["train", "hydra.run.dir=run", "resume_mode=must"],
        "run/config.yaml is damaged",
        copy="finished_run",
        files=run_file("config.yaml", CUT_OFF_YAML),
    ),
    Case(
        "messages",
        ["translate", "run", "ein satz"],
        "run/config.yaml is damaged",
        copy="finished_run",
        files=run_file("config.yaml", CUT_OFF_YAML),
    ),
    Case(
        "messages",
        ["translate", "run", "ein satz"],
        "not UTF-8",
        copy="finished_run",
        files=run_file("config.yaml", b"encoder: {name: \xff\xfe}\n"),
    ),
    Case(
        "messages",
        ["translate", "run", "ein satz"],
        "does not hold a mapping",
        copy="finished_run",
        files=run_file("config.yaml", b""),
    ),
    Case(
        "messages",
        ["compare", "search"],
        "search/1/config.yaml is damaged",
        copy="finished_run",
        files=search_with_a_damaged_best_trial,
    ),
    # ----- a report or resume target that cannot be used
    Case("messages", ["compare", "{run}", "--html", "out/missing/report.html"], "there is no folder out/missing"),
    Case(
        "messages", ["compare", "{run}", "--html", "reports"], "that is a folder", files=user_file("reports/notes.txt")
    ),
    Case("messages", ["compare", "{run}", "--html", "notes.txt"], "not an HTML page", files=user_file("notes.txt")),
    Case("messages", ["train", "resume=notes.txt"], "is a file, not a run directory", files=user_file("notes.txt")),
    Case("messages", ["train", "resume=no/such/run"], "there is no folder"),
    # ----- a sweep with one bad value, wherever it stands: refused before job 0
    Case("messages", [*SWEEP, "decode.beam_size=0,2"], "decode.beam_size=0 must be >= 1"),
    Case("messages", [*SWEEP, "encoder.hidden_size=64,0,32"], "encoder.hidden_size=0 must be >= 1"),
    Case("messages", [*SWEEP, "seed=1,2", "optim.lr=0.001,-1"], "optim.lr=-1.0 must be > 0"),
    Case(
        "messages",
        [*ANY_ENCODER, "encoder=transformer", "encoder.d_model=32", "encoder.heads=2,3"],
        "must be a multiple of heads=3",
    ),
    Case("messages", [*SWEEP, "attention=dot,cosin"], "did you mean attention=cosine?"),
    Case("messages", [*SWEEP, "monitor=bleu,chrff"], "did you mean chrf?"),
    *WITHOUT_GPU,
]
NEEDS_NO_GPU = pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA GPU")


@pytest.mark.parametrize(
    "case",
    [pytest.param(case, marks=NEEDS_NO_GPU) if case in WITHOUT_GPU else case for case in CASES],
    ids=lambda case: case.id,
)
def test_a_mistake_is_one_line_naming_the_fix_and_changes_nothing(case, tmp_path, finished_run, request):
    here = tmp_path / "case"
    here.mkdir()
    assert_refused(case, here, finished_run, request)
    assert not [str(folder) for folder in here.rglob("*") if folder.is_dir() and not any(folder.iterdir())], (
        "a refused command left a new folder behind"
    )
