"""Write ``docs/bad_inputs.md``: every case of the bad-input battery with the one line zoo answers it with.

``.venv/bin/python tests/battery_table.py`` (a few minutes: it trains the two shared tiny runs, then runs every
case as the tests do, with the same checks). The tests check that the table lists every case, so a new case
means running this again.
"""
from __future__ import annotations

import importlib
import sys
import tempfile
from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parent
sys.path.insert(0, str(TESTS))

from battery import Case, assert_refused, battery_cases  # noqa: E402
from conftest import train_finished_run, train_plugin_run  # noqa: E402

TABLE = TESTS.parent / "docs" / "bad_inputs.md"


class SharedRuns:
    """What a case's ``copy`` asks pytest's ``request`` for: the shared runs, trained once."""

    def __init__(self, work: Path) -> None:
        self.runs = {"finished_run": train_finished_run(work / "finished"), "plugin_run": train_plugin_run(work / "plugin")}

    def getfixturevalue(self, name: str) -> Path:
        return self.runs[name]


def answer(case: Case, work: Path, shared: SharedRuns) -> str:
    """The error line zoo gives ``case``, or what went wrong when it did not pass the battery's checks."""
    here = work / f"case{id(case)}"
    here.mkdir()
    try:
        return assert_refused(case, here, shared.runs["finished_run"], shared)
    except AssertionError as failure:
        return f"**FAILS**: {str(failure).splitlines()[0]}"


def markdown(rows: list[tuple[Case, str]]) -> str:
    counts = Counter(case.category for case, _ in rows)
    lines = [
        "# The bad-input battery",
        "",
        f"{len(rows)} mistakes a user makes, each run as a real `zoo` process by the tests "
        "(`tests/test_bad_inputs*.py`, machinery in `tests/battery.py`). Every one must exit non-zero with exactly "
        "one `zoo: error:` line that says what to do, start no training and leave every existing file as it was. "
        "Regenerate with `.venv/bin/python tests/battery_table.py`.",
        "",
        "By category: " + ", ".join(f"{name} {count}" for name, count in counts.items()) + ".",
        "",
        "| # | category | command (`{run}`: a finished run; files the case makes are in the test) | zoo says |",
        "|---|---|---|---|",
    ]
    for k, (case, line) in enumerate(rows, 1):
        command, said = (text.replace("|", "\\|") for text in (case.id.split(": ", 1)[1], line))
        lines.append(f"| {k} | {case.category} | `{command}` | {said} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    modules = [importlib.import_module(path.stem) for path in sorted(TESTS.glob("test_bad_inputs*.py"))]
    cases = battery_cases(modules)
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        shared = SharedRuns(work)
        rows = [(case, answer(case, work, shared)) for case in cases]
    TABLE.write_text(markdown(rows))
    failing = sum(line.startswith("**FAILS**") for _, line in rows)
    print(f"{TABLE}: {len(rows)} cases, {failing} failing")


if __name__ == "__main__":
    main()
