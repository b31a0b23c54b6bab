"""Run folders in the shape real runs write them (summary.json, config.yaml, metrics.csv as Lightning's CSV logger
writes it with zoo's training columns, an attention explorer), so the report's and the dashboard's tests need no
training; the dashboard served from a thread; and the page as a reader sees it in Chromium."""

from __future__ import annotations

import csv
import io
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import yaml
from PIL import Image

from helpers.browser import watched_page
from zoo.report.serve import make_server
from zoo.run.layout import ATTENTION_DIR, EXPLORER_FILE, TRAIN_GRAD_NORM, TRAIN_LOSS, TRAIN_LR

#: metrics.csv's header as a real run writes it (Lightning sorts the logged names after epoch and step).
COLUMNS = ["epoch", "step", "test/bleu", "test/loss", TRAIN_GRAD_NORM, TRAIN_LOSS, TRAIN_LR, "val/bleu", "val/loss"]
STEPS_PER_EPOCH = 10
#: Validation BLEU after each epoch: the two seeds of attention=additive are 0 and 2 after the first (mean - std
#: below 0) and 96 and 100 after the last (mean + std above 100), so their band must be clipped at both ends.
BLEU = {("additive", 1): [0.0, 50.0, 96.0], ("additive", 2): [2.0, 52.0, 100.0], ("dot", 1): [1.0, 20.0, 30.0]}


def bleu_at(attention: str, seed: int, epoch: int) -> float:
    return BLEU[attention, seed][epoch]


def training_row(step: int, seed: int) -> dict:
    return {
        "epoch": step // STEPS_PER_EPOCH,
        "step": step,
        TRAIN_LOSS: 6.0 / (1 + 0.1 * step) + 0.01 * seed,
        TRAIN_LR: 2e-3 * min(1.0, (step + 1) / 10),
        TRAIN_GRAD_NORM: 1.0 / (1 + 0.05 * step),
    }


def validation_row(attention: str, seed: int, epoch: int) -> dict:
    step = STEPS_PER_EPOCH * (epoch + 1) - 1
    return {"epoch": epoch, "step": step, "val/bleu": bleu_at(attention, seed, epoch), "val/loss": 5.0 - epoch}


def write_metrics(folder: Path, rows: list[dict]) -> None:
    text = io.StringIO()
    writer = csv.DictWriter(text, COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    (folder / "metrics.csv").write_text(text.getvalue())


def append_metrics(folder: Path, row: dict) -> None:
    with (folder / "metrics.csv").open("a") as file:
        csv.DictWriter(file, COLUMNS, lineterminator="\n").writerow(row)


def summary(attention: str, seed: int, epochs: int, status: str) -> dict:
    """summary.json as a run writes it after ``epochs`` validations (and its test, once finished)."""
    validations = [
        {"epoch": e, "step": STEPS_PER_EPOCH * (e + 1), "seconds": 4.0 * (e + 1), "bleu": bleu_at(attention, seed, e)}
        for e in range(epochs)
    ]
    record = {
        "schema_version": 1,
        "task": "translation",
        "monitor": "bleu",
        "seed": seed,
        "config_key": f"key-{attention}",
        "overrides": [f"attention={attention}", f"seed={seed}"],
        "choices": {"attention": attention, "encoder": "gru", "task": "translation"},
        "components": {"attention": {"name": attention}, "encoder": {"name": "gru"}},
        "status": status,
        "latest_val": {"bleu": validations[-1]["bleu"]} if validations else {},
        "validations": validations,
        "epoch": max(epochs - 1, 0),
        "step": STEPS_PER_EPOCH * epochs,
        "max_epochs": 3,
    }
    if validations:
        record["best_val"] = max(v["bleu"] for v in validations)
    if status == "finished":
        score = validations[-1]["bleu"]
        record |= {
            "test": {"bleu": {"score": score, "higher_is_better": True, "signature": "nrefs:1|tok:13a|version:2.6.0"}},
            "breakdowns": {
                "bleu_by_length": {"1-10": {"bleu": score, "count": 6}, "11-20": {"bleu": score / 2, "count": 7}}
            },
            "parameters": {"trainable": 5000 + 100 * len(attention), "frozen": 0},
            "train_seconds": 12.0 + seed,
            "latency_ms": {"greedy": 3.0, "beam": 9.0},
        }
    return record


def make_run(folder: Path, attention: str, seed: int, epochs: int = 3, status: str = "finished") -> None:
    """A run folder after ``epochs`` epochs: its config, logged curves and summary; once finished, its test row
    and the attention picture and explorer ``zoo attention`` writes."""
    folder.mkdir(parents=True)
    config = {
        "task": {"name": "translation"},
        "encoder": {"name": "gru", "hidden_size": 32},
        "attention": {"name": attention, "hidden_size": 32 if attention == "additive" else None},
        "optim": {"lr": 0.002 if attention == "additive" else 0.001},
        "seed": seed,
        "paths": {"data": "data"},
    }
    (folder / "config.yaml").write_text(yaml.safe_dump(config))
    rows = []
    for epoch in range(epochs):
        rows += [training_row(step, seed) for step in range(epoch * STEPS_PER_EPOCH, (epoch + 1) * STEPS_PER_EPOCH, 5)]
        rows.append(validation_row(attention, seed, epoch))
    if status == "finished":
        finish(folder, attention, seed, rows)
    write_metrics(folder, rows)
    (folder / "summary.json").write_text(json.dumps(summary(attention, seed, epochs, status)))


def finish(folder: Path, attention: str, seed: int, rows: list[dict]) -> None:
    """What a run adds once finished: its test row (to ``rows``), and the pictures ``zoo attention`` draws."""
    rows.append({"epoch": 3, "step": STEPS_PER_EPOCH * 3, "test/bleu": bleu_at(attention, seed, 2)})
    pictures = folder / ATTENTION_DIR / "the_dog_sees_the_cat"
    pictures.mkdir(parents=True)
    Image.new("RGB", (8, 8), "white").save(pictures / "cross_layer1_head1.png")
    (pictures / EXPLORER_FILE).write_text("<!DOCTYPE html><title>explorer</title><p>attention</p>")


@contextmanager
def serving(folder: Path, host: str = "127.0.0.1", refresh: int = 5) -> Iterator[int]:
    """``zoo dashboard FOLDER --host HOST --refresh REFRESH`` served from a thread: its port."""
    server = make_server([folder], host, port=0, refresh=refresh)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()  # shutdown() waits a poll
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


# --------------------------------------------------------------------------- in Chromium (conftest's `chromium`)
def open_page(browser, address: str):
    """The page at ``address`` once its charts are drawn, with the lists its console errors and requests go to."""
    page = watched_page(browser, address, 15_000, 60_000)  # Plotly's 4.8 MB of script, parsed on a busy machine
    page.wait_for_selector(".zoo-panel .main-svg")
    return page


def chart(name: str) -> str:
    """JavaScript naming the graph element of the chart showing ``name``."""
    return (
        "[...document.querySelectorAll('.zoo-panel')].find(p => p.querySelector('select').value === "
        f"{json.dumps(name)}).querySelector('.zoo-chart')"
    )


def traces(page, name: str) -> list[dict]:
    return page.evaluate(
        f"{chart(name)}.data.map(t => ({{run: t.legendgroup, shown: t.showlegend !== false, x: t.x, y: t.y, "
        "fill: t.fill || null, opacity: t.opacity}))"
    )


def choose(page, selector: str, value: str) -> None:
    """Set a control as a reader would (a select, or a range input's value) and let the page hear of it."""
    page.eval_on_selector(
        selector,
        "(e, v) => { e.value = v; e.dispatchEvent(new Event(e.type === 'range' ? 'input' : 'change')); }",
        value,
    )


def ema(values: list[float], weight: float) -> list[float]:
    """TensorBoard's smoothing, as the page should draw it."""
    last, smoothed = 0.0, []
    for k, value in enumerate(values, start=1):
        last = last * weight + (1 - weight) * value
        smoothed.append(last / (1 - weight**k))
    return smoothed
