"""Screenshots of the attention explorer and of a caption's attention picture, for the docs.

    python benchmarks/attention_screenshots.py TRANSLATION_RUN CAPTION_RUN [--out docs] [--scene 3] [--word 2]

From each run's best checkpoint: ``attention_explorer.png`` (the translation run's explorer on its first test
sentence: cross-attention, every head of the first layer, one output token chosen with the keyboard),
``caption_explorer.png`` (the captioning run's explorer on test scene ``--scene``, as it opens, with word ``--word``
chosen) and ``caption_attention.png`` (that scene's ``caption.png``). The pages are shot in headless Chromium
(Playwright driving the system's ``chromium``). Look at the pictures before committing them.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
from pathlib import Path

import yaml
from PIL import Image
from playwright.sync_api import sync_playwright

import zoo
from zoo import registry
from zoo.registry import discovery

FLAGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("translation_run", type=Path)
parser.add_argument("caption_run", type=Path)
parser.add_argument("--out", type=Path, default=Path("docs"))
parser.add_argument("--scene", type=int, default=3, help="index of the test scene captioned")
parser.add_argument("--word", type=int, default=2, help="index of the caption's word chosen in the explorer")
args = parser.parse_args()
# Absolute: the script moves to a scratch folder to save the scene, so the page names it as "scene3.png".
translation_run, caption_run, out = (path.resolve() for path in (args.translation_run, args.caption_run, args.out))

first = json.loads((translation_run / "test_items.jsonl").read_text().splitlines()[0])
explorer = zoo.load(translation_run).attention_explorer(first["source"])

discovery.discover()
scenes = registry.build("dataset", yaml.safe_load((caption_run / "config.yaml").read_text())["dataset"])
os.chdir(tempfile.mkdtemp())
image = f"scene{args.scene}.png"
Image.fromarray(scenes.item("test", args.scene).source.pixels).save(image)
captioner = zoo.load(caption_run)
caption_explorer = captioner.attention_explorer(image)
pictures = captioner.attention_maps(image)
shutil.copy(next(p for p in pictures if p.name == "caption.png"), out / "caption_attention.png")

with sync_playwright() as playwright:
    browser = playwright.chromium.launch(executable_path=shutil.which("chromium"), args=FLAGS)
    page = browser.new_page(viewport={"width": 1280, "height": 760})
    page.goto(explorer.as_uri())
    page.wait_for_selector("body[data-ready]")
    page.click("#kinds button[data-kind='cross']")
    page.check("#all-heads")
    page.focus(".token.query[data-index='0']")
    for _ in range(6):
        page.keyboard.press("ArrowDown")
    page.screenshot(path=str(out / "attention_explorer.png"), full_page=True)

    page = browser.new_page(viewport={"width": 1280, "height": 760})
    page.goto(caption_explorer.as_uri())
    page.wait_for_selector("body[data-ready]")
    page.focus("#words .word[data-index='0']")
    for _ in range(args.word):
        page.keyboard.press("ArrowRight")
    page.screenshot(path=str(out / "caption_explorer.png"), full_page=True)
    browser.close()
print(f"wrote {out / 'attention_explorer.png'}, {out / 'caption_explorer.png'} and {out / 'caption_attention.png'}")
