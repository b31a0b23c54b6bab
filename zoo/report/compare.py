"""``zoo compare``: a leaderboard of finished runs, read only from their run directories.

The columns follow the runs' own metrics: every metric any run reports, sorted by
the monitored one in its own direction (higher or lower is better).
"""
from __future__ import annotations

import json
from pathlib import Path

from zoo.registry import GROUP_KINDS
from zoo.training.record import SUMMARY_FILE
from zoo.training.summary import monitored_score


def find_summaries(paths: list[str | Path]) -> list[tuple[Path, dict]]:
    """Every readable ``summary.json`` under ``paths`` (run or sweep directories) written by this zoo version."""
    found = []
    for path in map(Path, paths):
        files = [path / SUMMARY_FILE] if (path / SUMMARY_FILE).is_file() else sorted(path.rglob(SUMMARY_FILE))
        for file in files:
            try:
                summary = json.loads(file.read_text())
            except (OSError, json.JSONDecodeError):
                continue  # a summary being written or damaged: not a finished run
            if "monitor" in summary:
                found.append((file.parent, summary))
    return found


def _varying_kinds(summaries: list[dict]) -> list[str]:
    """The component kinds whose name differs between runs: what the comparison is about."""
    kinds = [kind.name for kind in GROUP_KINDS]
    return [k for k in kinds if len({s.get("components", {}).get(k, {}).get("name") for s in summaries}) > 1]


def _label(summary: dict, varying: list[str]) -> str:
    components = summary.get("components", {})
    names = ", ".join(f"{kind}={components.get(kind, {}).get('name', '?')}" for kind in varying)
    return names or components.get("encoder", {}).get("name", "?")


def _bucket_start(label: str) -> int:
    return int(label.split("-")[0].rstrip("+"))  # '1-10' < '11-20' < '51+'


def leaderboard(runs: list[tuple[Path, dict]]) -> str:
    """A Markdown table: one row per run, best first by the monitored metric, with BLEU per source-length bucket."""
    if not runs:
        return f"no runs found (looked for {SUMMARY_FILE})"
    summaries = [s for _, s in runs]
    varying = _varying_kinds(summaries)
    metrics = list(dict.fromkeys(name for s in summaries for name in s.get("test", {})))
    monitor = summaries[0]["monitor"]
    directions = [s["test"][monitor]["higher_is_better"] for s in summaries if monitor in s.get("test", {})]
    higher_is_better = directions[0] if directions else True
    buckets = sorted({b for s in summaries for b in s.get("breakdowns", {}).get("bleu_by_length", {})}, key=_bucket_start)
    header = ["run", *metrics, "params", "frozen", "tokens/s", "train s", *[f"BLEU {b}" for b in buckets]]

    def rank(run: tuple[Path, dict]) -> float:
        score = monitored_score(run[1])
        if score is None:
            return float("inf")
        return -score if higher_is_better else score

    rows = []
    for path, s in sorted(runs, key=rank):
        by_length = s.get("breakdowns", {}).get("bleu_by_length", {})
        status = s.get("status", "finished")
        parameters = s.get("parameters", {})
        rows.append([
            f"{_label(s, varying)} ({path.name})" + ("" if status == "finished" else f" [{status}]"),
            *[f"{s['test'][m]['score']:.1f}" if m in s.get("test", {}) else "" for m in metrics],
            f"{parameters.get('trainable', 0):,}",
            f"{parameters.get('frozen', 0):,}",
            f"{s.get('tokens_per_second') or 0:,.0f}",
            f"{s.get('train_seconds', 0):.0f}",
            *[f"{by_length[b]['bleu']:.1f} ({by_length[b]['count']})" if b in by_length else "" for b in buckets],
        ])
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)
