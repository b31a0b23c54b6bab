"""Model assembly: components are wired from the config, and clashes name both sides."""

from __future__ import annotations

import pytest
import torch

from zoo.contracts import SourceDescription
from zoo.model import AssemblyError, Seq2Seq
from zoo.registry import default_config, discovery

discovery.discover()


def config(encoder="gru", decoder="rnn", attention="additive", posenc="none", **encoder_fields):
    small = {"gru": {"hidden_size": 16}, "transformer": {"d_model": 16, "heads": 2, "ff_dim": 32, "layers": 1}}
    dec_small = {
        "rnn": {"hidden_size": 16, "embed_dim": 16},
        "transformer": {"d_model": 16, "heads": 2, "ff_dim": 32, "layers": 1},
    }
    return {
        "frontend": default_config("frontend", "tokens", dim=16),
        "posenc": default_config("posenc", posenc),
        "encoder": default_config("encoder", encoder, **{**small.get(encoder, {}), **encoder_fields}),
        "decoder": default_config("decoder", decoder, **dec_small[decoder]),
        "attention": default_config("attention", attention),
    }


def test_transformer_encoder_scores_with_the_runs_scorer():
    model = Seq2Seq(
        config("transformer", "transformer", attention="general"), SourceDescription("tokens", vocab_size=20), 30
    )
    assert (
        type(model.encoder.layers[0].self_attn.scorer).__name__
        == type(model.decoder.layers[0].self_attn.scorer).__name__
    )
    assert "General" in type(model.encoder.layers[0].self_attn.scorer).__name__


@pytest.mark.parametrize("encoder,decoder", [("transformer", "transformer"), ("transformer", "rnn")])
def test_self_and_cross_attention_may_use_their_own_scorers(encoder, decoder):
    """self_attention scores the encoder's (and a decoder's) self-attention, cross_attention the decoder's attention
    over the memory."""
    cfg = config(encoder, decoder, attention="dot") | {
        "self_attention": default_config("attention", "general"),
        "cross_attention": default_config("attention", "additive"),
    }
    model = Seq2Seq(cfg, SourceDescription("tokens", vocab_size=20), 30)
    scorers = {"encoder self": model.encoder.layers[0].self_attn.scorer}
    if decoder == "transformer":
        scorers |= {
            "decoder self": model.decoder.layers[0].self_attn.scorer,
            "cross": model.decoder.layers[0].cross_attn.scorer,
        }
    else:
        scorers["cross"] = model.decoder.scorer
    names = {use: type(scorer).__name__ for use, scorer in scorers.items()}
    assert names == {use: "AdditiveScorer" if use == "cross" else "GeneralScorer" for use in scorers}


def test_relative_posenc_with_a_recurrent_encoder_is_refused_with_both_names():
    with pytest.raises(AssemblyError, match="posenc 'rotary'.*encoder 'gru'"):
        Seq2Seq(config(posenc="rotary"), SourceDescription("tokens", vocab_size=20), 30)


def test_absolute_posenc_is_added_before_a_recurrent_encoder():
    model = Seq2Seq(config(posenc="sinusoidal"), SourceDescription("tokens", vocab_size=20), 30)
    assert model.posenc is not None
    logits = model(torch.randint(4, 20, (2, 5)), torch.randint(4, 30, (2, 4))).logits
    assert logits.shape == (2, 4, 30)


def test_component_errors_name_the_other_components():
    with pytest.raises(AssemblyError, match="decoder 'transformer'.*encoder=gru"):
        Seq2Seq(
            config(decoder="transformer", attention="location")
            | {"decoder": default_config("decoder", "transformer", d_model=16, heads=3)},
            SourceDescription("tokens", vocab_size=20),
            30,
        )


def test_mixing_families_both_ways():
    for enc, dec in (("gru", "transformer"), ("transformer", "rnn")):
        model = Seq2Seq(config(enc, dec, attention="scaled_dot"), SourceDescription("tokens", vocab_size=20), 30)
        assert model(torch.randint(4, 20, (2, 5)), torch.randint(4, 30, (2, 4))).logits.shape == (2, 4, 30)


def test_shared_embeddings_use_one_matrix_for_source_target_and_output():
    cfg = config("transformer", "transformer", attention="scaled_dot") | {"network": {"share_embeddings": True}}
    cfg["frontend"]["scale"] = True
    model = Seq2Seq(cfg, SourceDescription("tokens", vocab_size=25), 25)
    assert model.frontend.embedding.weight is model.decoder.target.embedding.weight
    assert model.decoder.target.output.weight is model.frontend.embedding.weight
    shared = sum(p.numel() for p in model.parameters())
    unshared = sum(
        p.numel()
        for p in Seq2Seq(
            config("transformer", "transformer", attention="scaled_dot"), SourceDescription("tokens", vocab_size=25), 25
        ).parameters()
    )
    assert unshared - shared == 25 * 16


def test_shared_embeddings_need_one_scale():
    """A matrix shared by a frontend that does not scale and a decoder that does starts sqrt(d) times too large."""
    cfg = config("transformer", "transformer", attention="scaled_dot") | {"network": {"share_embeddings": True}}
    cfg["frontend"]["scale"] = False
    with pytest.raises(AssemblyError, match="set frontend.scale=true"):
        Seq2Seq(cfg, SourceDescription("tokens", vocab_size=25), 25)


def test_shared_embeddings_need_a_joint_vocabulary():
    cfg = config("transformer", "transformer", attention="scaled_dot") | {"network": {"share_embeddings": True}}
    with pytest.raises(AssemblyError, match="joint_vocab"):
        Seq2Seq(cfg, SourceDescription("tokens", vocab_size=20), 30)


def test_one_setting_sizes_a_transformer(caplog):
    cfg = config("transformer", "transformer", attention="scaled_dot", d_model=24)
    cfg["frontend"]["dim"] = None
    cfg["decoder"]["d_model"] = None
    model = Seq2Seq(cfg, SourceDescription("tokens", vocab_size=20), 30)
    assert model.frontend.output_dim == model.encoder.output_dim == model.decoder.target.embedding.embedding_dim == 24
    assert isinstance(model.encoder.input_proj, torch.nn.Identity)
    assert "linear map" not in caplog.text


def test_a_projection_nobody_asked_for_is_logged(caplog):
    cfg = config("transformer", "transformer", attention="scaled_dot", d_model=24)  # frontend.dim=16
    with caplog.at_level("INFO"):
        model = Seq2Seq(cfg, SourceDescription("tokens", vocab_size=20), 30)
    assert isinstance(model.encoder.input_proj, torch.nn.Linear)
    assert "16-wide inputs to d_model=24" in caplog.text


def test_a_frontend_for_another_kind_of_source_is_refused():
    with pytest.raises(AssemblyError, match="frontend 'tokens' reads tokens sources but the task gives image"):
        Seq2Seq(config(), SourceDescription("image", channels=3, height=8, width=8), 30)
