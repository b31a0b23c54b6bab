"""``zoo compare``: a leaderboard of finished runs, read only from their run directories."""
from __future__ import annotations

import json
from pathlib import Path

from zoo.registry import GROUP_KINDS


def find_summaries(paths: list[str | Path]) -> list[tuple[Path, dict]]:
    """Every ``summary.json`` under ``paths`` (run or sweep directories), oldest first."""
    found = []
    for path in map(Path, paths):
        files = [path / "summary.json"] if (path / "summary.json").is_file() else sorted(path.rglob("summary.json"))
        found.extend((f.parent, json.loads(f.read_text())) for f in files)
    return found


def _label(summary: dict, varying: list[str]) -> str:
    names = ", ".join(f"{kind}={summary['components'][kind]['name']}" for kind in varying)
    return names or summary["components"]["encoder"]["name"]


def _varying_kinds(summaries: list[dict]) -> list[str]:
    """The component kinds whose name differs between runs: what the comparison is about."""
    return [k for k in (kind.name for kind in GROUP_KINDS) if len({s["components"][k]["name"] for s in summaries}) > 1]


def leaderboard(runs: list[tuple[Path, dict]]) -> str:
    """A Markdown table: one row per run, sorted by test BLEU, with BLEU per source-length bucket."""
    if not runs:
        return "no runs found (looked for summary.json)"
    summaries = [s for _, s in runs]
    varying = _varying_kinds(summaries)
    labels = {label for s in summaries for label in (s["test"].get("bleu_by_length") or {})}
    buckets = sorted(labels, key=lambda label: int(label.split("-")[0].rstrip("+")))  # '1-10' < '11-20' < '51+'
    header = ["run", "BLEU", "chrF", "params", "frozen", "tokens/s", "train s", *[f"BLEU {b}" for b in buckets]]
    rows = []
    for path, s in sorted(runs, key=lambda r: -(r[1]["test"]["bleu"] or 0)):
        by_length = s["test"].get("bleu_by_length") or {}
        rows.append([
            f"{_label(s, varying)} ({path.name})",
            f"{s['test']['bleu']:.1f}",
            f"{s['test']['chrf']:.1f}",
            f"{s['parameters']['trainable']:,}",
            f"{s['parameters']['frozen']:,}",
            f"{s['tokens_per_second'] or 0:,.0f}",
            f"{s['train_seconds']:.0f}",
            *[f"{by_length[b]['bleu']:.1f} ({by_length[b]['count']})" if b in by_length else "" for b in buckets],
        ])
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)
