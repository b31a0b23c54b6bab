"""Write ``docs/bad_inputs.md``: every case of the bad-input battery with the one line zoo answers it with.

``.venv/bin/python tests/helpers/battery_table.py`` runs the battery (``tests/e2e/test_bad_inputs*.py``) under
pytest with :data:`battery.TABLE_VARIABLE` set, so every case appends what zoo answered, then writes the table in
the cases' order. The tests check that the table lists every case: a new case means running this again.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
BATTERY = TESTS / "e2e"
TABLE = TESTS.parent / "docs" / "bad_inputs.md"
sys.path.insert(0, str(TESTS))

from helpers.battery import TABLE_VARIABLE, printable  # noqa: E402


def markdown(rows: list[dict]) -> str:
    counts = Counter(row["category"] for row in rows)
    lines = [
        "# The bad-input battery",
        "",
        f"{len(rows)} mistakes a user makes, each run as a real `zoo` process by the tests "
        "(`tests/e2e/test_bad_inputs*.py`, machinery in `tests/helpers/battery.py`). Every one must exit non-zero "
        "with exactly one `zoo: error:` line that says what to do, start no training, leave every existing file as "
        "it was and create nothing. Regenerate with `.venv/bin/python tests/helpers/battery_table.py`.",
        "",
        "By area: " + ", ".join(f"{name} {count}" for name, count in counts.items()) + ".",
        "",
        "| # | area | command (`{run}`: a finished run; `run`: a copy the case may damage) | exit | zoo says |",
        "|---|---|---|---|---|",
    ]
    for k, row in enumerate(rows, 1):
        command, said = (printable(row[key]).replace("|", "\\|") for key in ("command", "line"))
        lines.append(f"| {k} | {row['category']} | `{command}` | {row['status']} | {said} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    modules = sorted(path.stem for path in BATTERY.glob("test_bad_inputs*.py"))
    with tempfile.TemporaryDirectory() as folder:
        answers = Path(folder) / "answers.jsonl"
        answers.touch()
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                *[str(BATTERY / f"{name}.py") for name in modules],
                "-k",
                "not listed_in_the_docs",
            ],
            cwd=TESTS.parent,
            env={**os.environ, TABLE_VARIABLE: str(answers)},
        )
        rows = [json.loads(line) for line in answers.read_text().splitlines()]
    rows.sort(key=lambda row: (modules.index(row["module"]), row["index"]))
    TABLE.write_text(markdown(rows))
    print(f"{TABLE}: {len(rows)} cases")


if __name__ == "__main__":
    main()
