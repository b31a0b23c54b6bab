"""Run folders written by hand, as zoo writes them: a run's summary.json, config.yaml and test_items.jsonl, for the
tests of what reads finished runs (zoo compare, significance, compute frontiers)."""

import json


def summary(encoder: str, scores: dict, seed: int = 1, monitor: str = "bleu", status: str = "finished") -> dict:
    """A translation run's summary.json: ``encoder`` trained with ``seed``, its test ``scores`` (metric -> score)."""
    return {
        "schema_version": 1,
        "status": status,
        "task": "translation",
        "monitor": monitor,
        "seed": seed,
        "config_key": f"key-{encoder}",
        "overrides": [f"encoder={encoder}", f"seed={seed}"],
        "test": {m: {"score": v, "higher_is_better": m != "ter", "signature": None} for m, v in scores.items()},
        "breakdowns": {"bleu_by_length": {"1-10": {"bleu": 50.0, "count": 3}, "11-20": {"bleu": 40.0, "count": 2}}},
        "parameters": {"trainable": 1000, "frozen": 0},
        "tokens_per_second": 100.0,
        "train_seconds": 12.0,
        "components": {"encoder": {"name": encoder, "hidden_size": 64}, "decoder": {"name": "rnn"}},
    }


def write(folder, content, config: dict | None = None) -> None:
    """A run folder holding ``content`` (a summary, or text) as its summary.json and ``config`` as its config.yaml."""
    folder.mkdir(parents=True)
    (folder / "summary.json").write_text(content if isinstance(content, str) else json.dumps(content))
    if config is not None:  # the resolved config.yaml (JSON is YAML)
        (folder / "config.yaml").write_text(json.dumps(config))


#: 80 distinct test references, for runs with per-item scores.
SENTENCES = [
    f"the {a} {n} sees {k} small {m} near the old tower"
    for a in ("big", "red", "old", "shy", "wet")
    for n in ("dog", "cat", "fox", "owl")
    for k in ("a", "the")
    for m in ("bird", "frog")
]


def write_items(folder, hypotheses) -> None:
    """The run's test_items.jsonl: hypothesis k against reference ``SENTENCES[k]``, its TER 0 if equal else 1."""
    rows = [
        {"id": str(k), "hypothesis": h, "references": [r], "scores": {"ter": float(h != r)}}
        for k, (h, r) in enumerate(zip(hypotheses, SENTENCES))
    ]
    (folder / "test_items.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
