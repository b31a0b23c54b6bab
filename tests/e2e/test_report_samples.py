"""The report's sample outputs (every seed, per-item scores, images, the disagreement order) and its attention
pictures (the same sources across configurations, enlargeable), from run folders as zoo writes them."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from zoo.contracts import ImageSource, Item
from zoo.report.compare import Leaderboard, write_report
from zoo.report.pictures import attention_pictures, main_picture
from zoo.report.runs import find_runs
from zoo.report.samples import by_disagreement, sample_outputs
from zoo.run.summary import write_outputs

pytestmark = pytest.mark.slow

#: Per configuration, per seed, each item's CIDEr-D: item "b" is where the two disagree most, "a" where they agree.
SCORES = {
    "additive": {1: {"a": 50.0, "b": 90.0, "c": 40.0}, 2: {"a": 50.0, "b": 70.0, "c": 60.0}},
    "none": {1: {"a": 50.0, "b": 0.0, "c": 10.0}, 2: {"a": 50.0, "b": 20.0, "c": 50.0}},
}
#: Their spreads across the configurations' means over seeds: b 70 (80 - 10), c 20 (50 - 30), a 0; not the spread
#: over every run (b: 90 - 0, c: 60 - 10), which would count each configuration's seed noise as disagreement.


def scene(key: str) -> ImageSource:
    pixels = Image.new("RGB", (64, 64), (30, 30, 30))
    pixels.paste((220, 40, 40), (8, 8, 30, 30))
    return ImageSource(key, pixels=np.asarray(pixels))


class CaptionTask:
    """What write_outputs asks of a task: a line of text for a source."""

    @staticmethod
    def describe_source(item: Item) -> str:
        return f"image {item.source}"


def caption_run(folder: Path, attention: str, seed: int, scores: dict[str, float]) -> Path:
    """A finished captioning run: its summary and its test items as training writes them (zoo.run.summary)."""
    folder.mkdir(parents=True)
    items = [Item(item, scene(f"scene-{item}"), (f"a red square {item}", "a square")) for item in scores]
    test = {"items": items, "hypotheses": [f"{attention} {seed} says {item}" for item in scores]}
    write_outputs(folder, test, {"cider_d": list(scores.values())}, CaptionTask(), samples=1)
    summary = {
        "schema_version": 1,
        "status": "finished",
        "task": "captioning",
        "monitor": "cider_d",
        "seed": seed,
        "config_key": f"key-{attention}",
        "overrides": [f"attention={attention}", f"seed={seed}"],
        "components": {"attention": {"name": attention}},
        "test": {"cider_d": {"score": sum(scores.values()) / len(scores), "higher_is_better": True}},
    }
    (folder / "summary.json").write_text(json.dumps(summary))
    return folder


#: Pictures each configuration's first seed drew (``zoo attention``), by source: s2 and s3 are drawn by both.
PICTURES = {
    "additive": {"s1": ["caption.png"], "s2": ["word01_a.png", "caption.png", "explorer.html"], "s3": ["caption.png"]},
    "none": {
        "s2": ["cross_layer1_heads.png", "cross_layer2_head1.png", "cross_layer2_heads.png", "encoder_self_layer2.png"],
        "s3": ["decoder_self_layer1_head1.png"],
        "s4": ["caption.png"],
    },
}  # fmt: skip


def draw(folder: Path, names: list[str]) -> None:
    """Files as ``zoo attention`` names them; each picture is 1200 x 800, wider than the report shows it."""
    folder.mkdir(parents=True)
    for name in names:
        if name.endswith(".png"):
            Image.new("RGB", (1200, 800), (len(name) * 9 % 255, 90, 160)).save(folder / name)
        else:
            (folder / name).write_text("<!DOCTYPE html><title>explorer</title>")


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("runs")
    for attention, seeds in SCORES.items():
        for seed, scores in seeds.items():
            caption_run(root / f"{attention}-{seed}", attention, seed, scores)
        for source, names in PICTURES[attention].items():
            draw(root / f"{attention}-1" / "attention" / source, names)
    return root


@pytest.fixture(scope="module")
def report_page(chromium, runs, tmp_path_factory):
    """The report of the runs, open in Chromium, and the errors it raised."""
    report = write_report([runs], tmp_path_factory.mktemp("report") / "report.html")
    page = chromium.new_page(viewport={"width": 1300, "height": 900})
    page.errors = []
    page.on("pageerror", lambda error: page.errors.append(str(error)))
    page.goto(report.as_uri())
    yield page
    page.close()


def board(root: Path) -> Leaderboard:
    return Leaderboard(find_runs([root]))


def test_a_captioning_run_records_each_test_image(tmp_path):
    photo = tmp_path / "photo.png"
    Image.new("RGB", (300, 200), "green").save(photo)
    items = [Item("1", scene("scene-1"), ("a",)), Item("2", ImageSource("photo.png", path=str(photo)), ("b",))]
    write_outputs(tmp_path, {"items": items, "hypotheses": ["x", "y"]}, {}, CaptionTask(), samples=1)
    rows = [json.loads(line) for line in (tmp_path / "test_items.jsonl").read_text().splitlines()]
    assert rows[0]["thumbnail"].startswith("data:image/jpeg;base64,") and "image" not in rows[0]
    assert len(rows[0]["thumbnail"]) < 4000, "a small JPEG: a 64 px scene costs about 1.5 kB"
    assert rows[1]["image"] == str(photo) and "thumbnail" not in rows[1]


def test_the_disagreement_order_puts_the_widest_spread_first():
    assert by_disagreement({"a": 0.0, "b": 70.0, "c": 20.0, "d": None, "e": 20.0}) == ["b", "c", "e", "a", "d"]


def test_samples_show_every_seed_its_score_and_the_image(runs):
    section = sample_outputs(board(runs))
    rows = re.findall(r"<tr data-first=.*?</tr>", section)
    assert len(rows) == 3 and all(row.count('src="data:image/jpeg;base64,') == 1 for row in rows)
    for attention, seeds in SCORES.items():
        for seed, scores in seeds.items():
            for item, score in scores.items():
                assert f"{attention} {seed} says {item}" in section
                assert f'<span class="seed">seed {seed}</span><span class="score">{score:.1f}</span>' in section
    table = {
        re.search(r"<small>(\w)</small>", row).group(1): (
            re.search(r'data-spread="(\d)"', row).group(1),
            re.search(r"<td>([\d.]*)</td></tr>", row).group(1),
        )
        for row in rows
    }  # item -> (its rank by disagreement, its spread)
    assert table == {"b": ("0", "70.0"), "c": ("1", "20.0"), "a": ("2", "0.0")}


def test_samples_switch_to_where_the_systems_disagree_most_in_chromium(report_page):
    shown = "table.samples tbody tr:not([hidden]) td.source small"
    assert report_page.locator(shown).all_inner_texts() == ["a", "b", "c"]
    report_page.check("input[name='sample-order'][value='spread']")
    assert report_page.locator(shown).all_inner_texts() == ["b", "c", "a"]
    report_page.check("input[name='sample-order'][value='first']")
    assert report_page.locator(shown).all_inner_texts() == ["a", "b", "c"]
    assert report_page.errors == []


def test_pictures_line_up_the_sources_every_configuration_drew(runs, tmp_path):
    section = attention_pictures(board(runs), tmp_path / "report.html")
    assert re.findall(r"<tr><td>(\w+)</td>", section) == ["s2", "s3"]
    chosen = [
        runs / "additive-1/attention/s2/caption.png",  # a caption's overview
        runs / "none-1/attention/s2/cross_layer2_heads.png",  # else the last layer's cross-attention, all heads
        runs / "additive-1/attention/s3/caption.png",
        runs / "none-1/attention/s3/decoder_self_layer1_head1.png",  # else the other kinds' likewise
    ]
    assert [main_picture(path.parent) for path in chosen] == chosen
    pictures = re.findall(r'src="data:image/png;base64,([^"]+)"', section)
    assert pictures == [base64.b64encode(path.read_bytes()).decode() for path in chosen]
    assert section.count('href="file://') == 1 and "additive-1/attention/s2/explorer.html" in section


def test_without_a_shared_source_each_configuration_shows_its_own(tmp_path):
    for attention, source in (("additive", "s1"), ("none", "s4")):
        caption_run(tmp_path / attention, attention, 1, SCORES[attention][1])
        draw(tmp_path / attention / "attention" / source, ["caption.png"])
    section = attention_pictures(board(tmp_path), tmp_path / "report.html")
    assert "No source was drawn by every configuration" in section
    assert re.findall(r"<small>(s\d)</small>", section) == ["s1", "s4"] and section.count("<img") == 2


def test_a_picture_opens_at_full_size_and_closes_again_in_chromium(report_page):
    picture = report_page.locator("table.pictures label.zoom img").first
    width = lambda: picture.bounding_box()["width"] - 2  # noqa: E731 - less its border
    assert width() == 420, "shown small in the table"
    picture.click()
    assert width() == 1200 and picture.bounding_box()["x"] == pytest.approx((1300 - 1202) / 2, abs=1)
    picture.click()
    assert width() == 420
    report_page.focus("table.pictures label.zoom input")
    report_page.keyboard.press("Space")  # the keyboard opens it too
    assert width() == 1200
    report_page.keyboard.press("Space")
    assert report_page.errors == []
