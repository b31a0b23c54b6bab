"""The bad-input battery, searches: a resumed search is the same search, and a range or storage a search cannot use
is refused, each in one line before Hydra starts; the sweep directory stays as it was and nothing new is made.

``run`` is a copy of a finished search of ``model=gru`` (``copy="finished_search"``, conftest.py); a resume is its
command with ``hydra.sweep.dir=run resume_mode=auto`` and one thing changed (first, so the case's id shows it).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import SEARCH_TINY
from helpers.battery import Case, assert_refused

# The session's finished_search is made once, on the worker of every test that copies it.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("finished_search")]


def resume(*changed: str, family: str = "model=gru") -> list[str]:
    return ["train", "-m", *changed, family, *SEARCH_TINY, "hydra.sweep.dir=run", "resume_mode=auto"]


def search(*changed: str) -> list[str]:
    return ["train", "-m", *changed, "model=gru", *SEARCH_TINY, "hydra.sweep.dir=new"]


def search_before_definitions(here: Path) -> None:
    """A sweep directory whose study was made before zoo stored what defines one (no attribute)."""
    import optuna

    (here / "old").mkdir()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    optuna.create_study(storage=f"sqlite:///{here / 'old' / 'optuna.db'}", study_name="search", direction="maximize")


SEARCHED = "finished_search"

CASES = [
    # ----- a resume that would change the search
    Case(
        "search", resume("monitor=chrf"), "holds a search of bleu (maximize); this command searches chrf", copy=SEARCHED
    ),
    Case("search", resume(family="model=lstm"), "made with model=gru; this command has model=lstm", copy=SEARCHED),
    Case("search", resume(family="model=gru,lstm"), "holds a search of one family (no comma list)", copy=SEARCHED),
    Case("search", resume("seed=3"), "made without seed; this command has seed=3", copy=SEARCHED),
    Case("search", resume("trainer.max_epochs=3"), "this command has trainer.max_epochs=3", copy=SEARCHED),
    Case(
        "search",
        resume('search.space.optim.lr="interval(0.001, 0.1)"'),
        "tuning optim.lr over tag(log, interval(0.0005, 0.01)); this command tunes it over interval(0.001, 0.1)",
        copy=SEARCHED,
    ),
    Case(
        "search", resume("hydra.sweeper.flops=1e12"), "budget is in trials; this command's is in flops", copy=SEARCHED
    ),
    Case("search", resume("hydra.sweeper.sampler=tpe"), "resume with hydra.sweeper.sampler=random", copy=SEARCHED),
    Case(
        "search",
        ["train", "-m", "model=gru", *SEARCH_TINY, "hydra.sweep.dir=old", "resume_mode=auto"],
        "made before zoo recorded what defines one",
        files=search_before_definitions,
    ),
    # ----- a range the setting refuses, a storage that cannot be opened
    Case(
        "search", search('search.space.decoder.dropout="interval(0.0, 1.5)"'), "decoder.dropout=1.5 must be in [0, 1)"
    ),
    Case("search", search('search.space.optim.warmup_steps="int(interval(-10, 400))"'), "warmup_steps=-10 must be"),
    Case("search", search('search.space.optim.label_smoothing="choice(0.1, 1.0)"'), "label_smoothing=1.0 must be"),
    Case("search", search("hydra.sweeper.storage=nosuch://x"), "hydra.sweeper.storage=nosuch://x cannot be opened"),
    Case("search", search("hydra.sweeper.storage=nosuch/optuna.journal"), "(folder nosuch does not exist): give"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_a_search_that_cannot_go_on_is_one_line_and_changes_nothing(case, tmp_path, finished_run, request):
    here = tmp_path / "case"
    here.mkdir()
    assert_refused(case, here, finished_run, request)
    assert not (here / "new").exists(), "a refused search made its sweep directory"
