"""Attention pictures from real tiny models and tokenizers."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from helpers.tiny_captioner import GRID, caption_model, caption_task

from zoo import registry
from zoo.contracts import BOS
from zoo.model import Seq2Seq
from zoo.registry import discovery
from zoo.viz.attention_maps import (
    AttentionMapError,
    attention_weights,
    grid_figure,
    heatmap_figure,
    write_attention_maps,
)
from zoo.viz.image_attention import caption_figure, overlay, scaled, word_maps

discovery.discover()

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def model(encoder: str, decoder: str, task, attention: str = "general", layers: int = 1, heads: int = 2):
    for kind, name in (("encoder", encoder), ("decoder", decoder), ("attention", attention)):
        if name not in registry.names(kind):
            pytest.skip(f"{kind} '{name}' is not registered")
    names = {
        "frontend": "tokens",
        "posenc": "sinusoidal" if "transformer" in (encoder, decoder) else "none",
        "encoder": encoder,
        "decoder": decoder,
        "attention": attention,
    }
    small = {
        "dim": 8,
        "hidden_size": 8,
        "embed_dim": 8,
        "d_model": 4 * heads,
        "heads": heads,
        "layers": layers,
        "ff_dim": 16,
    }
    cfg = {}
    for kind, name in names.items():
        defaults = registry.default_config(kind, name)
        cfg[kind] = {**defaults, **{k: v for k, v in small.items() if k in defaults}}
    torch.manual_seed(0)
    return Seq2Seq(cfg, task.source_description(), task.target_vocab_size)


def assert_pngs(paths):
    for path in paths:
        data = path.read_bytes()
        assert data.startswith(PNG_SIGNATURE), path
        assert len(data) > 2000, path  # a real picture, not an empty canvas


def test_rnn_decoder_gives_one_cross_attention_map(task, tmp_path):
    m = model("gru", "rnn", task).train()
    paths = write_attention_maps(m, task, "the cat sat on a mat", tmp_path / "maps")
    assert [p.name for p in paths] == ["cross_layer1_head1.png"]
    assert sorted(tmp_path.joinpath("maps").iterdir()) == paths
    assert_pngs(paths)
    assert m.training  # the mode it had is restored


def test_transformer_gives_every_layer_head_and_kind_plus_grids(task, tmp_path):
    layers, heads = 2, 3
    m = model("transformer", "transformer", task, attention="scaled_dot", layers=layers, heads=heads)
    paths = write_attention_maps(m, task, "the dog sat", tmp_path)
    kinds = ("encoder_self", "decoder_self", "cross")
    assert len(paths) == len(kinds) * layers * heads + len(kinds) * layers
    assert len(set(paths)) == len(paths)
    for kind in kinds:
        for layer in range(1, layers + 1):
            assert tmp_path / f"{kind}_layer{layer}_heads.png" in paths
            for head in range(1, heads + 1):
                assert tmp_path / f"{kind}_layer{layer}_head{head}.png" in paths
    assert_pngs(paths)
    assert not m.encoder.return_attention and not m.decoder.return_attention  # switched back off


def test_mixed_model_has_the_kinds_of_its_parts(task, tmp_path):
    m = model("transformer", "rnn", task, heads=2)
    paths = write_attention_maps(m, task, "a cat", tmp_path)
    assert [p.name for p in paths] == [
        "encoder_self_layer1_head1.png",
        "encoder_self_layer1_head2.png",
        "encoder_self_layer1_heads.png",
        "cross_layer1_head1.png",
    ]


def test_attention_weights_shapes_and_rows_sum_to_one(task):
    m = model("transformer", "transformer", task, attention="scaled_dot", layers=2, heads=2).eval()
    source = torch.tensor([[4, 5, 6]])
    target_in = torch.tensor([[BOS, 7, 8, 9]])
    maps = attention_weights(m, source, target_in)
    assert set(maps) == {"encoder_self", "decoder_self", "cross"}
    shapes = {"encoder_self": (1, 2, 3, 3), "decoder_self": (1, 2, 4, 4), "cross": (1, 2, 4, 3)}
    for kind, layers in maps.items():
        assert len(layers) == 2
        for w in layers:
            assert w.shape == shapes[kind]
            torch.testing.assert_close(w.sum(-1), torch.ones(w.shape[:-1]))
    assert torch.all(maps["decoder_self"][0][0, :, 0, 1:] == 0)  # causal: the first query sees only itself


def test_a_model_without_attention_draws_nothing(task, tmp_path):
    m = model("gru", "rnn", task, attention="none")
    assert write_attention_maps(m, task, "the cat", tmp_path) == []
    assert list(tmp_path.iterdir()) == []


def test_empty_sentence_is_rejected(task, tmp_path):
    with pytest.raises(AttentionMapError, match="no tokens"):
        write_attention_maps(model("gru", "rnn", task), task, "   ", tmp_path)


def test_figures_carry_the_token_labels():
    weights = torch.softmax(torch.randn(2, 3, 4), dim=-1)
    rows, cols = ["x", "y", "z"], ["a", "b", "c", "d"]
    ax = heatmap_figure(weights[0], rows, cols, "one head").axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == cols
    assert [t.get_text() for t in ax.get_yticklabels()] == rows
    grid = grid_figure(weights, rows, cols, "layer")
    assert sum(ax.has_data() for ax in grid.axes) == 2
    with pytest.raises(AttentionMapError, match="labels"):
        heatmap_figure(weights[0], rows, cols[:2], "bad")


def test_images_are_logged_to_wandb(task, tmp_path):
    import wandb

    class FakeRun:
        def __init__(self):
            self.logged = []

        def log(self, data):
            self.logged.append(data)

    run = FakeRun()
    paths = write_attention_maps(model("gru", "rnn", task), task, "the cat", tmp_path, wandb_run=run)
    assert len(run.logged) == 1
    assert list(run.logged[0]) == [f"attention/{p.stem}" for p in paths]
    assert all(isinstance(image, wandb.Image) for image in run.logged[0].values())


# --------------------------------------------------------------------------- a caption's words on the image
def test_a_uniform_map_is_drawn_uniformly_low_on_the_caption_scale():
    rows, columns = GRID
    uniform = torch.full(GRID, 1.0 / (rows * columns))
    peaked = torch.full(GRID, 0.1 / (rows * columns - 1))
    peaked[2, 5] = 0.9
    top = 0.9  # the caption's highest weight: the peaked word's
    grey = np.full((64, 64, 3), 128, dtype=np.uint8)

    diffuse, sharp = overlay(grey, uniform, top), overlay(grey, peaked, top)
    assert (diffuse == diffuse[0, 0]).all(), "every pixel of an even map has one colour"
    assert np.allclose(scaled(uniform, (64, 64), top), 1 / 64 / 0.9), "at its weight on the scale, not stretched"
    brightness = lambda picture: picture.astype(float).sum(-1)  # noqa: E731
    assert brightness(diffuse).max() < brightness(grey).max(), "a weight near 0 darkens the image"
    assert brightness(sharp).max() > brightness(diffuse).max() + 200, "the peak alone is bright"
    assert scaled(peaked, (64, 64), top).max() > 0.85, "the peak near the top of the scale (bilinear blurs it a little)"


@pytest.fixture(scope="module")
def captioner():
    task, image = caption_task()
    return task, image, caption_model(task)


def test_caption_pictures_share_one_scale_and_show_it(captioner):
    task, image, m = captioner
    words, maps, pixels = word_maps(m, task, image)
    assert maps.shape == (len(words), *GRID) and pixels.shape == (64, 64, 3)
    fig = caption_figure(pixels, words, maps)
    (bar,) = [ax for ax in fig.axes if ax.get_ylabel().startswith("attention weight")]
    assert bar.get_ylim() == pytest.approx((0.0, float(maps.max())))
    drawn = [ax.get_images()[0].get_array() for ax in fig.axes if ax.get_images()]
    assert len(drawn) == len(words) and all(
        np.array_equal(d, overlay(pixels, w, float(maps.max()))) for d, w in zip(drawn, maps)
    )
