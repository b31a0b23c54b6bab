"""The experiment presets (conf/experiment/) and model recipes (conf/model/) as written, and how the tests
shrink one to a few batches on tiny data without changing what it compares (tests/e2e/test_presets*.py)."""

from __future__ import annotations

import copy
import functools
import gzip
import json
import random
from pathlib import Path

import pytest
from omegaconf import DictConfig, OmegaConf

from helpers.paths import ROOT
from zoo import registry
from zoo.registry.discovery import discover
from zoo.registry.kinds import GROUP_KINDS

CONF = ROOT / "conf"
PRESETS = sorted((CONF / "experiment").glob("*.yaml"))
RECIPES = sorted((CONF / "model").glob("*.yaml"))

# A few batches of everything, whatever the preset says.
FEW_BATCHES = [
    "trainer.max_epochs=1",
    "trainer.limit_train_batches=2",
    "trainer.limit_val_batches=1",
    "trainer.limit_test_batches=1",
    "trainer.enable_progress_bar=false",
    "samples=2",
    "latency_items=2",  # every run times greedy and beam decoding of each of these test items alone
]
# Tiny data, by dataset: a preset that picks a dataset not named here must say how to shrink it.
SMALL_DATA = {
    "synthetic": ["dataset.train_size=64", "dataset.val_size=4", "dataset.test_size=2"],
    "scenes": ["dataset.train_size=32", "dataset.val_size=4", "dataset.test_size=2"],
    "parallel": [],  # reads the tiny corpus written by tiny_multi30k()
    "karpathy": ["task.image_size=64"],  # reads the tiny split file and images written by tiny_karpathy()
    "listops": ["dataset.train_size=64", "dataset.val_size=4", "dataset.test_size=2", "dataset.max_length=64"],
    "recall": ["dataset.train_size=64", "dataset.val_size=4", "dataset.test_size=2"],
}
# Narrow widths for default components, applied only to the groups a preset leaves alone.
SMALL_MODEL = {
    ("frontend", "tokens"): ["frontend.dim=32"],
    ("encoder", "gru"): ["encoder.hidden_size=32"],
    ("decoder", "rnn"): ["decoder.hidden_size=32", "decoder.embed_dim=32"],
    ("decoder", "classifier"): ["decoder.hidden_size=32"],
    ("frontend", "cnn"): ["frontend.channels=[4,8,8]", "frontend.dim=32"],
    ("frontend", "patches"): ["frontend.dim=32"],
}
DEFAULT_CHOICES = {kind.name: kind.default for kind in GROUP_KINDS}


def base_paths(path: Path, entries: list) -> list[Path]:
    """The files a preset builds on: plain names in its defaults list (``multi30k``, ``/experiment/multi30k``)
    and the model recipe it chooses (``override /model: transformer``)."""
    named = [
        CONF / f"{entry[1:]}.yaml" if entry.startswith("/") else path.parent / f"{entry}.yaml"
        for entry in entries
        if isinstance(entry, str) and entry != "_self_"
    ]
    recipes = [
        CONF / "model" / f"{choice}.yaml"
        for entry in entries
        if isinstance(entry, dict)
        for key, choice in entry.items()
        if key.removeprefix("override ").strip("/ ") == "model"
    ]
    return [*recipes, *named]


def load_preset(path: Path) -> dict:
    """A preset as written, merged over the presets and the recipe it builds on (the caller's own copy)."""
    return copy.deepcopy(merged_preset(path))


@functools.cache  # collecting the preset tests asks for each preset dozens of times
def merged_preset(path: Path) -> dict:
    """:func:`load_preset`'s merge, read and made once per file."""
    preset = OmegaConf.to_container(OmegaConf.load(path))
    entries = preset.get("defaults", [])
    bases = [merged_preset(base) for base in base_paths(path, entries)]
    merged = OmegaConf.to_container(OmegaConf.merge(*bases, preset)) if bases else preset
    merged["defaults"] = [d for base in bases for d in base.get("defaults", [])] + [
        d for d in entries if isinstance(d, dict)
    ]
    return merged


def chosen_groups(preset: dict) -> dict[str, str]:
    """The config groups a preset chooses in its defaults list (``override /encoder: transformer``),
    with the choices its task makes for the groups it leaves alone (captioning: scenes, cnn, ...)."""
    chosen = {}
    for entry in preset.get("defaults", []):
        if isinstance(entry, dict):
            for key, choice in entry.items():
                chosen[key.removeprefix("override ").strip("/ ")] = choice
    chosen.pop("model", None)  # a recipe's own choices are in the list already (load_preset)
    discover()
    task = registry.get("task", chosen.get("task", DEFAULT_CHOICES["task"])).cls
    return {**task.component_defaults, **chosen}


def sweep_params(preset: dict) -> dict[str, list[str]]:
    """``hydra.sweeper.params`` of a preset, each value split into its choices."""
    params = preset.get("hydra", {}).get("sweeper", {}).get("params", {}) or {}
    return {key: [choice.strip() for choice in str(value).split(",")] for key, value in params.items()}


#: The FLOP budget a preset that sweeps budgets runs at here, buying the tiny models a step or two: one (more only
#: repeat the sweep; unit/test_compute.py shows zoo compare reading several).
TINY_BUDGETS = ["1e10"]


def shrinking_overrides(preset: dict) -> list[str]:
    """Overrides that make ``preset`` take seconds without changing what it compares."""
    chosen = chosen_groups(preset)
    touched = set(chosen) | set(preset) | set(sweep_params(preset))
    for recipe in sweep_params(preset).get("model", []):  # a swept recipe sets its own components
        loaded = load_preset(CONF / "model" / f"{recipe}.yaml")
        touched |= set(chosen_groups(loaded)) | set(loaded)
    choice = DEFAULT_CHOICES | chosen
    if choice["dataset"] not in SMALL_DATA:
        pytest.fail(f"no tiny settings for dataset={choice['dataset']}; add them to SMALL_DATA in {__file__}")
    overrides = [*FEW_BATCHES, *SMALL_DATA[choice["dataset"]]]
    if "trainer.budget_flops" in sweep_params(preset):  # budgets in FLOPs train for as many steps as they buy
        overrides = [o for o in overrides if not o.startswith("trainer.max_epochs=")]  # which the budget decides
        overrides += [f"trainer.budget_flops={','.join(TINY_BUDGETS)}", "trainer.budget_validations=1"]
    for (group, name), sizes in SMALL_MODEL.items():
        if group not in touched and choice[group] == name:
            overrides += sizes
    return overrides


# Made-up German/English sentence pairs, combined from a few phrases, gzipped as Multi30k ships them.
SUBJECTS = [
    ("ein Hund", "a dog"),
    ("eine Frau", "a woman"),
    ("zwei Männer", "two men"),
    ("ein kleines Mädchen", "a little girl"),
    ("ein älterer Mann", "an older man"),
]
ACTIONS = [
    ("läuft über", "runs across"),
    ("sitzt auf", "sits on"),
    ("steht vor", "stands in front of"),
    ("wartet an", "waits at"),
]
PLACES = [("der Straße", "the street"), ("einer Bank", "a bench"), ("dem Haus", "the house")]


def tiny_multi30k(folder: Path) -> None:
    """Write train/val/test_2016_flickr .de/.en.gz files with a few dozen line-aligned pairs."""
    pairs = [
        (f"{sd} {ad} {pd} .", f"{se.capitalize()} {ae} {pe} .")
        for sd, se in SUBJECTS
        for ad, ae in ACTIONS
        for pd, pe in PLACES
    ]
    random.Random(0).shuffle(pairs)  # 60 pairs; every split mixes all phrases
    splits = {"train": pairs[:52], "val": pairs[52:57], "test_2016_flickr": pairs[57:]}
    folder.mkdir(parents=True)
    for split, split_pairs in splits.items():
        for lang, side in (("de", 0), ("en", 1)):
            with gzip.open(folder / f"{split}.{lang}.gz", "wt", encoding="utf-8") as handle:
                handle.writelines(pair[side] + "\n" for pair in split_pairs)


def tiny_karpathy(split_file: Path, images: Path) -> None:
    """A Karpathy-format split file with 12 coloured images (8 train, 2 val, 2 test), two captions each."""
    from PIL import Image

    images.mkdir(parents=True)
    colours = {"red": (200, 30, 30), "green": (30, 200, 30), "blue": (30, 30, 200)}
    entries = []
    for k in range(12):
        name, rgb = list(colours.items())[k % 3]
        Image.new("RGB", (40, 30), rgb).save(images / f"{k}.jpg")
        captions = [f"a {name} picture", f"the picture is {name}"]
        entries.append(
            {
                "filename": f"{k}.jpg",
                "split": "train" if k < 8 else "val" if k < 10 else "test",
                "sentences": [{"raw": c, "tokens": c.split()} for c in captions],
            }
        )
    split_file.write_text(json.dumps({"dataset": "tiny", "images": entries}))


def below_data_dir(raw: str, data_dir: Path, field: str) -> Path:
    """A preset's ``${paths.data}/...`` path resolved with ``${paths.data}`` set to ``data_dir``."""
    path = Path(OmegaConf.create({"paths": {"data": str(data_dir)}, "value": raw}).value)
    if not raw or not path.is_relative_to(data_dir):
        pytest.fail(f"{field}={raw!r}: a preset should read its data below ${{paths.data}} (ZOO_DATA_DIR)")
    return path


def prepare(path: Path, tmp_path: Path) -> tuple[dict, list[str], dict, Path | None]:
    """The preset (an experiment or a model recipe) as written, its shrunk overrides, the environment, and
    the corpus root it reads (if any)."""
    preset = load_preset(path)
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    root = None
    dataset = (DEFAULT_CHOICES | chosen_groups(preset))["dataset"]
    if dataset == "parallel":
        root = below_data_dir(preset.get("dataset", {}).get("root", ""), data_dir, "dataset.root")
        tiny_multi30k(root)
    if dataset == "karpathy":
        split_file = below_data_dir(preset["dataset"]["split_file"], data_dir, "dataset.split_file")
        split_file.parent.mkdir(parents=True, exist_ok=True)
        tiny_karpathy(split_file, below_data_dir(preset["dataset"]["images"], data_dir, "dataset.images"))
    overrides = [f"{path.parent.name}={path.stem}", *shrinking_overrides(preset)]
    return preset, overrides, {"ZOO_DATA_DIR": str(data_dir)}, root


def check_run(run_dir: Path, corpus: Path | None) -> DictConfig:
    """A finished run: its summary, and the corpus it read (ZOO_DATA_DIR -> ${paths.data} -> dataset.root)."""
    assert json.loads((run_dir / "summary.json").read_text()), f"{run_dir} has an empty summary"
    config = OmegaConf.load(run_dir / "config.yaml")  # saved resolved
    if corpus is not None:
        assert config.dataset.root == str(corpus)
    return config
