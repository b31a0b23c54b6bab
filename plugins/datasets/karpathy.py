"""The ``karpathy`` dataset: image captioning data in the Karpathy split format (Karpathy and Fei-Fei, 2015).

Flickr8k, Flickr30k and COCO are commonly used with the split files of Karpathy and
Fei-Fei. Each file is one JSON object::

    {"dataset": "flickr8k",
     "images": [{"filename": "2513260012_03d33305cf.jpg",
                 "filepath": "val2014",                  (COCO only; optional)
                 "split": "train",                       (train | val | test | restval)
                 "sentences": [{"raw": "A black dog is running .",
                                "tokens": ["a", "black", "dog", "is", "running"], ...}, ...],
                 ...}, ...]}

The images live under one folder, ``images``: an image is ``{images}/{filepath}/{filename}``,
or ``{images}/{filename}`` when the entry has no ``filepath``. Every image becomes one
:class:`~zoo.contracts.Item` whose id and ``ImageSource.key`` are that relative path
(``val2014/x.jpg``, ``x.jpg``) and whose references are its captions. ``restval``
images (COCO's validation images outside Karpathy's val and test) join training or
are dropped. Every kept image is opened when the splits are built, so a missing or
unreadable file fails (or is skipped) before training starts; only the image header
is read (about 0.2 s for Flickr8k's 8,000 images), so a truncated file can still
pass. Loading and resizing the pixels is the image frontend's business.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image, UnidentifiedImageError

from zoo.api import Choice, Dataset, ImageSource, Item, ZooError, at_least, one_of, register

log = logging.getLogger(__name__)

FILE_SPLITS = ("train", "val", "test", "restval")  # the split values a split file may use


class Captions(Choice):
    """Which form of each sentence becomes a reference."""

    tokens = "tokens"
    raw = "raw"


class OnMissing(Choice):
    """What to do with an image file that is missing or unreadable."""

    error = "error"
    skip = "skip"


class SplitFileError(ZooError, ValueError):
    """The split file or its images are missing or malformed."""


@dataclass(frozen=True)
class Entry:
    """One image entry of the split file, checked: where it sits and its captions."""

    key: str  # path relative to the image root, with '/' separators
    split: str  # as written in the file (restval included)
    captions: tuple[str, ...]


@register("dataset", "karpathy")
class KarpathyDataset(Dataset):
    """Captioned images listed in a Karpathy split file (Flickr8k, Flickr30k, COCO)."""

    source_kind = "image"

    @dataclass
    class Config:
        split_file: str = ""  # the split JSON, e.g. ${paths.data}/flickr8k/dataset_flickr8k.json
        images: str = ""  # image root folder: {images}/{filepath}/{filename}, or {images}/{filename} without filepath
        # tokens: joined by spaces, lower-cased (what papers train on) | raw: stripped
        captions: Captions = Captions.tokens
        restval: bool = True  # true: restval images join training (Karpathy's COCO setup); false: they are dropped
        # missing/unreadable image: error | skip (skips are counted in a log line)
        on_missing: OnMissing = OnMissing.error
        max_train: int | None = None  # keep the first N training images in file order, for quick runs (null: all)
        max_val: int | None = None  # the same for the validation split (null: all)
        max_test: int | None = None  # the same for the test split (null: all)

        def __post_init__(self) -> None:
            one_of(self, "captions", Captions)
            one_of(self, "on_missing", OnMissing)
            for field in ("max_train", "max_val", "max_test"):
                at_least(self, field, 1, "null keeps every image")

    @property
    def split_file(self) -> Path:
        if not self.cfg.split_file:
            raise SplitFileError(
                "dataset.split_file is not set; pass dataset.split_file=/path/to/dataset_flickr8k.json"
            )
        path = Path(self.cfg.split_file).expanduser()
        if not path.is_file():
            raise SplitFileError(
                f"missing split file {path}; pass dataset.split_file=/path/to/dataset_flickr8k.json "
                "(presets read ${paths.data}: set ZOO_DATA_DIR)"
            )
        return path

    @property
    def image_root(self) -> Path:
        if not self.cfg.images:
            raise SplitFileError("dataset.images is not set; pass dataset.images=/path/to/image/folder")
        root = Path(os.path.abspath(Path(self.cfg.images).expanduser()))  # absolute, '..' folded, links kept
        if not root.is_dir():
            raise SplitFileError(
                f"dataset.images {root} is not a folder; pass dataset.images=/path/to/image/folder "
                "(presets read ${paths.data}: set ZOO_DATA_DIR)"
            )
        return root

    def splits(self) -> dict[str, list[Item]]:
        path, root = self.split_file, self.image_root
        entries = [self._entry(path, index, image) for index, image in enumerate(self._images(path))]
        named = {"train": ("train", "restval") if self.cfg.restval else ("train",), "val": ("val",), "test": ("test",)}
        dropped = sum(entry.split == "restval" for entry in entries) if not self.cfg.restval else 0
        if dropped:
            log.info("%s: dropped %d restval images (dataset.restval=false)", path, dropped)
        limits = {"train": self.cfg.max_train, "val": self.cfg.max_val, "test": self.cfg.max_test}
        result = {}
        for split, values in named.items():
            chosen = [entry for entry in entries if entry.split in values]
            if not chosen:
                raise SplitFileError(
                    f"{path} has no {'/'.join(values)} images; the {split} split needs at least one "
                    "(is this a Karpathy split file?)"
                )
            self._check_unique(path, split, chosen)
            result[split] = self._items(path, root, split, chosen, limits[split])
        log.info(
            "%s: %s",
            path,
            ", ".join(
                f"{split} {len(items)} images ({sum(len(item.references) for item in items)} captions)"
                for split, items in result.items()
            ),
        )
        return result

    @staticmethod
    def _images(path: Path) -> list[Any]:
        """The ``images`` list of the split file."""
        try:
            with open(path, encoding="utf-8") as handle:
                data = json.load(handle)
        except json.JSONDecodeError as error:
            raise SplitFileError(
                f"{path}:{error.lineno}:{error.colno}: malformed JSON ({error.msg}); "
                "check that the file is complete (re-download it if it was cut short)"
            ) from None
        except UnicodeDecodeError as error:
            raise SplitFileError(
                f"{path} is not UTF-8 text ({error.reason} at byte {error.start}); "
                "dataset.split_file must name the JSON split file"
            ) from None
        if not isinstance(data, dict) or not isinstance(data.get("images"), list):
            raise SplitFileError(
                f'{path} has no "images" list; a Karpathy split file is {{"dataset": ..., "images": [...]}}'
            )
        return data["images"]

    def _entry(self, path: Path, index: int, image: Any) -> Entry:
        """Check one image entry: filename, split, sentences and their captions."""
        where = f"{path}: images[{index}]"
        if not isinstance(image, dict):
            raise SplitFileError(f"{where} is not an object; each image entry needs filename, split and sentences")
        filename, filepath = image.get("filename"), image.get("filepath") or ""
        if not isinstance(filename, str) or not filename.strip():
            raise SplitFileError(f"{where} has no filename; each image entry needs filename, split and sentences")
        if not isinstance(filepath, str):
            raise SplitFileError(f"{where} ({filename}): filepath must be a folder name, found {filepath!r}")
        key = "/".join(part.strip("/") for part in (filepath, filename) if part.strip("/"))
        where = f"{where} ({key})"
        split = image.get("split")
        if split not in FILE_SPLITS:
            raise SplitFileError(f"{where}: unknown split {split!r}; the split must be one of {', '.join(FILE_SPLITS)}")
        sentences = image.get("sentences")
        if not isinstance(sentences, list) or not sentences:
            raise SplitFileError(f"{where} has no sentences; each image needs at least one caption")
        return Entry(
            key,
            split,
            tuple(
                self._caption(f"{where}: sentences[{number}]", sentence) for number, sentence in enumerate(sentences)
            ),
        )

    def _caption(self, where: str, sentence: Any) -> str:
        """One reference: the tokens joined and lower-cased, or the raw sentence stripped."""
        field = str(self.cfg.captions)
        value = sentence.get(field) if isinstance(sentence, dict) else None
        other = "raw" if field == "tokens" else "tokens"
        if field == "tokens" and isinstance(value, list) and all(isinstance(token, str) for token in value):
            caption = " ".join(" ".join(value).split()).lower()
        elif field == "raw" and isinstance(value, str):
            caption = value.strip()
        else:
            raise SplitFileError(
                f"{where} has no {field} {'list' if field == 'tokens' else 'string'}; "
                f"fix the split file or set dataset.captions={other}"
            )
        if not caption:
            raise SplitFileError(f"{where}: the caption is empty; remove the sentence from the split file or fix it")
        return caption

    @staticmethod
    def _check_unique(path: Path, split: str, entries: list[Entry]) -> None:
        seen: set[str] = set()
        for entry in entries:
            if entry.key in seen:
                raise SplitFileError(
                    f"{path}: image {entry.key} is listed twice in the {split} split; "
                    "an image must appear once (merge its sentences into one entry)"
                )
            seen.add(entry.key)

    def _items(self, path: Path, root: Path, split: str, entries: list[Entry], limit: int | None) -> list[Item]:
        """Items of the first ``limit`` usable images in file order; missing or unreadable ones fail or are skipped."""
        items: list[Item] = []
        skipped: dict[str, list[str]] = {"missing": [], "unreadable": []}
        for entry in entries:
            if limit is not None and len(items) >= limit:
                break
            image = root / entry.key
            problem = image_problem(image)
            if problem is None:
                items.append(Item(entry.key, ImageSource(key=entry.key, path=str(image)), entry.captions))
            elif self.cfg.on_missing == "skip":
                skipped[problem[0]].append(str(image))
            else:
                kind, why = problem
                raise SplitFileError(
                    f"{kind} image {image} ({split} split of {path}{'; ' + why if why else ''}); "
                    "check dataset.images, or set dataset.on_missing=skip to skip such images"
                )
        count = sum(len(paths) for paths in skipped.values())
        if count:
            first = next(paths[0] for paths in skipped.values() if paths)
            log.warning(
                "%s split: skipped %d images (%d missing, %d unreadable), e.g. %s (dataset.on_missing=skip)",
                split,
                count,
                len(skipped["missing"]),
                len(skipped["unreadable"]),
                first,
            )
        if not items:
            raise SplitFileError(
                f"the {split} split has no readable images under {root} ({count} skipped); check dataset.images"
            )
        return items


def image_problem(path: Path) -> tuple[str, str] | None:
    """``None`` if Pillow can open ``path`` (only the header is read), else ``("missing", "")`` or ``("unreadable",
    why)``."""
    if not path.is_file():
        return "missing", ""
    try:
        with Image.open(path) as image:
            image.verify()  # cheap: checks chunk CRCs for PNG, nothing beyond the header for JPEG
    except UnidentifiedImageError:
        return "unreadable", "not an image format Pillow reads"
    except Exception as error:  # noqa: BLE001 - any failure to parse the file makes it unusable
        return "unreadable", f"{type(error).__name__}: {error}"
    return None
