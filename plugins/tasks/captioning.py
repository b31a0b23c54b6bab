"""The ``captioning`` task: an image in, a sentence describing it out.

The same encoders, decoders, scorers and positional encodings as translation
run on an image: an image frontend turns it into a sequence of grid vectors (a
CNN's feature map flattened row-major, ViT patches, or precomputed features), an
encoder may run over that sequence (``identity`` lets the decoder attend to the
grid directly, as Show, Attend and Tell does), and the decoder writes the
caption. ``attention=none`` gives Show and Tell: the decoder starts from the
pooled image and never looks back at the grid.

Sources are :class:`~zoo.contracts.ImageSource` (a file or in-memory pixels),
decoded and resized once per run (:class:`~zoo.data.images.ImageStore`), or, when
the frontend reads features, the image's row in a memory-mapped features file,
whose grids a batch copies out when it is collated (no run holds them all).
Only the caption side has a tokenizer.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from zoo.api import (
    Choice,
    ImageSource,
    Item,
    PredictCommand,
    SourceDescription,
    Task,
    TaskError,
    at_least,
    get,
    register,
)
from zoo.api.text import load_tokenizer, save_tokenizer, tokenizer_path, train_tokenizer
from zoo.api.vision import FeatureTable, Fit, ImageStore, as_image, load_features, to_float

#: Image side when neither the config nor the frontend asks for one (the scenes' own size).
DEFAULT_IMAGE_SIZE = 64
#: For token-budget batching an image counts as one position per 16 x 16 pixels (ViT-B/16's patches).
PIXELS_PER_POSITION = 16 * 16


class Cache(Choice):
    """Where decoded, resized images are kept during a run."""

    memory = "memory"
    file = "file"  # a memory-mapped .npy under the run's cache/ folder: large datasets, fast restarts


@register("task", "captioning")
class CaptioningTask(Task):
    """Image captioning: images through an image frontend, captions through a tokenizer; BLEU-1..4, CIDEr-D, ROUGE-L.

    Every item has several reference captions: training draws one (image,
    caption) pair per reference, evaluation scores each generated caption against
    all references of its image. Without other choices, ``task=captioning`` trains
    on synthetic ``scenes`` with a ``cnn`` frontend and an ``identity`` encoder, so the
    attending decoder looks straight at the image grid.
    """

    source_kind = "image"
    frontend_kinds = ("image", "features")
    default_metrics = ("bleu1", "bleu2", "bleu3", "bleu4", "cider_d", "rouge_l")
    default_monitor = "cider_d"
    component_defaults = {"dataset": "scenes", "frontend": "cnn", "encoder": "identity"}
    command = PredictCommand(
        "caption",
        "caption image files (one FILE<TAB>CAPTION line each) with a captioning run's checkpoint",
        input="image",
        output="caption",
        echo=True,
    )
    attention_view = "image"  # each word's attention laid over the image, as Show, Attend and Tell drew it

    @dataclass
    class Config:
        image_size: int | None = None  # square side in pixels; null: the frontend's (pretrained: 224), else 64
        fit: Fit = Fit.center  # center: shorter side to image_size, then the central square; stretch: squeeze
        cache: Cache = Cache.memory  # decoded images in memory or in a memory-mapped file under cache/
        features: str | None = None  # precomputed features (NAME.npy from `zoo features`) for frontend=features
        max_caption_len: int = 32  # longest generated caption in tokens, end of sentence included

        def __post_init__(self) -> None:
            at_least(self, "image_size", 8)
            at_least(self, "max_caption_len", 2)

    def __init__(self, cfg: Config, tokenizer: Any, frontend: Any) -> None:
        super().__init__(cfg, tokenizer, frontend)
        frontend_cls = get("frontend", frontend["name"]).cls
        self.reads_features = frontend_cls.source_kind == "features"
        if self.reads_features and not cfg.features:
            raise TaskError(
                f"frontend={frontend['name']} reads precomputed features: set task.features=PATH "
                "(make them with `zoo features`) or choose an image frontend such as frontend=cnn"
            )
        if cfg.features and not self.reads_features:
            raise TaskError(
                f"task.features is set but frontend={frontend['name']} reads images; use frontend=features "
                "to train on the features, or drop task.features"
            )
        self.image_size = cfg.image_size or frontend_cls.image_size or DEFAULT_IMAGE_SIZE
        self.features: FeatureTable | None = None
        self.cache_dir: Path | None = None

    # ------------------------------------------------------------------ codecs
    def fit(self, train: Sequence[Item]) -> None:
        self.target_tokenizer = train_tokenizer(self.tokenizer_cfg, (ref for item in train for ref in item.references))
        self._open_sources()

    def save(self, run_dir: Path) -> None:
        save_tokenizer(self.target_tokenizer, tokenizer_path(run_dir, "target"))
        self.cache_dir = Path(run_dir) / "cache"

    def saved(self, run_dir: Path) -> bool:
        return tokenizer_path(run_dir, "target").is_file()

    def load(self, run_dir: Path) -> None:
        self.target_tokenizer = load_tokenizer(self.tokenizer_cfg, tokenizer_path(run_dir, "target"))
        self.cache_dir = Path(run_dir) / "cache"
        self._open_sources()

    def _open_sources(self) -> None:
        if self.reads_features and self.features is None:
            self.features = load_features(self.cfg.features)

    def source_description(self) -> SourceDescription:
        if self.features is not None:
            rows, columns = self.features.grid
            return SourceDescription("features", feature_dim=self.features.feature_dim, height=rows, width=columns)
        return SourceDescription("image", channels=3, height=self.image_size, width=self.image_size)

    # ------------------------------------------------------------------ sources
    def encode_sources(self, sources: Sequence[Any]) -> list[torch.Tensor | int]:
        """Images (ImageSource or file paths) -> (3, size, size) uint8 pixels, or their rows in the features file."""
        images = [as_image(source) for source in sources]
        if self.features is not None:
            return [self.features.row(image.key) for image in images]
        store = ImageStore(images, self.image_size, self.cfg.fit, self._cache_file(images))
        return [store[row] for row in range(len(store))]

    def _cache_file(self, images: Sequence[ImageSource]) -> Path | None:
        if self.cfg.cache != Cache.file or self.cache_dir is None:
            return None
        digest = hashlib.sha1("\n".join(image.key for image in images).encode()).hexdigest()[:12]
        return self.cache_dir / f"images-{self.image_size}-{self.cfg.fit}-{digest}.npy"

    def source_size(self, encoded: torch.Tensor | int) -> int:
        if self.features is not None:
            return self.features.positions
        return max(1, encoded.shape[-1] * encoded.shape[-2] // PIXELS_PER_POSITION)

    def fits(self, encoded: torch.Tensor, max_len: int) -> bool:
        return True  # every image has the same size; only the caption's length can exceed data.max_len

    def collate_sources(self, encoded: Sequence[torch.Tensor | int]) -> torch.Tensor:
        if self.features is not None:
            return self.features.rows(encoded).float()  # the batch's grids, read from the map only now
        return to_float(torch.stack(list(encoded)))

    def source_labels(self, encoded: torch.Tensor | int) -> list[str]:
        if self.features is None:
            return []  # an image frontend knows its grid only once it has run (Frontend.grid)
        rows, columns = self.features.grid
        return [f"r{r}c{c}" for r in range(rows) for c in range(columns)]

    def output_limit(self, source: torch.Tensor) -> torch.Tensor:
        return torch.full((source.shape[0],), self.cfg.max_caption_len, dtype=torch.long, device=source.device)

    # ------------------------------------------------------------------ reporting
    def describe_source(self, item: Item) -> str:
        return f"image {item.source}"
