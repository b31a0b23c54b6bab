"""The Transformer encoder and decoder: shapes, layouts, incremental decoding, mixing with RNNs."""

from __future__ import annotations

import pytest
import torch

from zoo import registry
from zoo.contracts import PAD, Decoder, EncoderOutput, SourceDescription
from zoo.model import AssemblyError, Seq2Seq
from zoo.nn.norms import DynamicTanh, make_norm
from zoo.registry import discovery

discovery.discover()

B, S, T, V = 3, 6, 5, 17
D_IN, D, H = 12, 16, 4
MASK = torch.arange(S)[None, :] < torch.tensor([6, 4, 2])[:, None]
POSENCS = ["none", "sinusoidal", "learned", "rotary", "alibi", "relative"]
RELATIVE = {"rotary", "alibi", "relative"}
TOL = 1e-5


def small(kind: str, **overrides) -> dict:
    layout = dict(layers=2, d_model=D, heads=H, ff_dim=32)
    return registry.default_config(kind, "transformer", **{**layout, **overrides})


def encoder(posenc: str | None = None, input_dim: int = D_IN, **overrides):
    torch.manual_seed(0)
    pe = registry.default_config("posenc", posenc) if posenc in RELATIVE else None
    scorer = registry.default_config("attention", "scaled_dot")
    return registry.build(
        "encoder", small("encoder", **overrides), input_dim=input_dim, scorer=scorer, posenc=pe
    ).eval()


def decoder(posenc: str = "sinusoidal", scorer: str = "scaled_dot", memory_dim: int = D, **overrides):
    torch.manual_seed(0)
    dec = registry.build(
        "decoder",
        small("decoder", **overrides),
        vocab_size=V,
        memory_dim=memory_dim,
        state_dim=memory_dim,
        scorer=registry.default_config("attention", scorer),
        posenc=registry.default_config("posenc", posenc),
    )
    for p in dec.posenc.parameters():
        torch.nn.init.normal_(p)  # learned position tables large enough to matter
    return dec.eval()


def targets() -> torch.Tensor:
    torch.manual_seed(1)
    return torch.randint(4, V, (B, T))


def stepped_logits(dec, y: torch.Tensor, enc: EncoderOutput) -> torch.Tensor:
    cache, out = dec.init_cache(enc), []
    for t in range(y.shape[1]):
        logits, cache, attn = dec.step(y[:, t], enc, cache, t)
        out.append(logits)
    assert attn.shape == (B, S) and torch.allclose(attn.sum(-1), torch.ones(B))
    return torch.stack(out, dim=1)


def test_encoder_shapes_state_and_padding():
    enc = encoder()
    x = torch.randn(B, S, D_IN)
    out = enc(x, MASK)
    assert out.memory.shape == (B, S, D) and out.state.shape == (B, D) and enc.output_dim == enc.state_dim == D
    assert torch.all(out.memory[~MASK] == 0)
    assert torch.allclose(out.state[1], out.memory[1, :4].mean(0), atol=1e-6)
    noisy = x.clone()
    noisy[~MASK] = 100.0  # padded steps must not influence real ones
    assert torch.allclose(enc(noisy, MASK).memory, out.memory, atol=1e-5)
    assert out.attention is None


@pytest.mark.parametrize("position", ["pre", "post"])
@pytest.mark.parametrize("norm", ["layernorm", "rmsnorm", "dyt"])
def test_every_layout_trains(position, norm):
    enc = encoder(norm_position=position, norm=norm, activation="gelu").train()
    dec = decoder(norm_position=position, norm=norm).train()
    out = dec(targets(), enc(torch.randn(B, S, D_IN), MASK))
    assert out.logits.shape == (B, T, V) and out.attention is None
    out.logits.logsumexp(-1).mean().backward()
    grads = [p.grad for p in [*enc.parameters(), *dec.parameters()] if p.requires_grad]
    assert all(g is not None and torch.isfinite(g).all() for g in grads)
    kinds = {type(m) for m in enc.modules()}
    assert type(make_norm(norm, D)) in kinds
    assert (position == "pre") == (not isinstance(enc.final_norm, torch.nn.Identity))


def test_dynamic_tanh():
    dyt = DynamicTanh(4)
    assert dyt.alpha.item() == 0.5 and dyt.alpha.shape == ()
    x = torch.randn(2, 4)
    with torch.no_grad():
        dyt.gamma.fill_(2.0)
        dyt.beta.fill_(1.0)
    assert torch.allclose(dyt(x), 2 * torch.tanh(0.5 * x) + 1)


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("heads", 3, "multiple of heads=3"),
        ("norm", "batchnorm", "norm='batchnorm' must be one of: layernorm, rmsnorm, dyt"),
        ("norm_position", "middle", "norm_position='middle' must be one of: pre, post"),
        ("activation", "swish", r"activation='swish' must be one of: relu, gelu"),
        ("dropout", 1.5, r"dropout=1.5 must be in \[0, 1\)"),
    ],
)
def test_bad_layouts_are_clear_errors(field, value, message):
    with pytest.raises(ValueError, match=message):
        encoder(**{field: value})


def test_the_encoder_builds_only_relative_posencs():
    with pytest.raises(ValueError, match="only relative posencs"):
        registry.build(
            "encoder", small("encoder"), input_dim=D, scorer={"name": "scaled_dot"}, posenc={"name": "sinusoidal"}
        )


@pytest.mark.parametrize("posenc", POSENCS)
def test_incremental_decoding_equals_teacher_forcing(posenc):
    enc = encoder(posenc)(torch.randn(B, S, D_IN), MASK)
    dec = decoder(posenc)
    y = targets()
    full = dec(y, enc).logits
    assert (stepped_logits(dec, y, enc) - full).abs().max().item() <= TOL


@pytest.mark.parametrize("scorer", ["additive", "general", "location", "none"])
def test_incremental_decoding_with_other_scorers(scorer):
    enc = encoder()(torch.randn(B, S, D_IN), MASK)
    dec = decoder("rotary", scorer=scorer)
    y = targets()
    cache, steps = dec.init_cache(enc), []
    for t in range(T):
        logits, cache, attn = dec.step(y[:, t], enc, cache, t)
        steps.append(logits)
    assert (attn is None) == (scorer == "none")
    assert (torch.stack(steps, 1) - dec(y, enc).logits).abs().max().item() <= TOL


def test_beam_reordering_of_the_cache():
    enc = encoder()(torch.randn(B, S, D_IN), MASK)
    dec, y = decoder("relative"), targets()
    cache = dec.init_cache(enc)
    for t in range(2):
        _, cache, _ = dec.step(y[:, t], enc, cache, t)
    index = torch.tensor([2, 2, 0])
    cache, enc_r, y_r = Decoder.reorder_cache(cache, index), enc.index_select(index), y.index_select(0, index)
    logits, _, _ = dec.step(y_r[:, 2], enc_r, cache, 2)
    assert torch.allclose(logits, dec(y_r, enc_r).logits[:, 2], atol=TOL)


def test_a_step_leaves_the_callers_cache_untouched():
    enc = encoder()(torch.randn(B, S, D_IN), MASK)
    dec, y = decoder(), targets()
    cache = dec.init_cache(enc)
    _, new, _ = dec.step(y[:, 0], enc, cache, 0)
    assert cache["layers"][0]["self"] == {} and new["layers"][0]["self"]["k"].shape == (B, H, 1, D // H)


def test_attention_maps_on_request():
    enc_model, dec = encoder("alibi"), decoder("alibi")
    enc = enc_model(torch.randn(B, S, D_IN), MASK, need_weights=True)
    assert len(enc.attention) == 2 and enc.attention[0].shape == (B, H, S, S)
    out = dec(targets(), enc, return_attention=True)
    assert [m.shape for m in out.attention["self"]] == [(B, H, T, T)] * 2
    assert [m.shape for m in out.attention["cross"]] == [(B, H, T, S)] * 2
    assert torch.all(out.attention["cross"][1][1, :, :, 4:] == 0)
    dec.return_attention = True
    assert dec(targets(), enc).attention is not None


def test_transformer_decoder_over_an_rnn_encoder():
    torch.manual_seed(0)
    gru = registry.build("encoder", registry.default_config("encoder", "gru", hidden_size=10), input_dim=D_IN).eval()
    enc = gru(torch.randn(B, S, D_IN), MASK)
    assert enc.memory.shape[-1] != D
    dec, y = decoder("learned", memory_dim=enc.memory.shape[-1]), targets()
    assert (stepped_logits(dec, y, enc) - dec(y, enc).logits).abs().max().item() <= TOL


def test_rnn_decoder_over_the_transformer_encoder():
    enc = encoder()(torch.randn(B, S, D_IN), MASK)
    torch.manual_seed(0)
    rnn = registry.build(
        "decoder",
        registry.default_config("decoder", "rnn", hidden_size=8, embed_dim=8),
        vocab_size=V,
        memory_dim=D,
        state_dim=D,
        scorer=registry.default_config("attention", "general"),
        posenc=registry.default_config("posenc", "none"),
    ).eval()
    assert rnn(targets(), enc).logits.shape == (B, T, V)


def test_tied_embeddings_share_storage():
    tied, untied = decoder(), decoder(tie_embeddings=False)
    assert tied.target.output.weight.data_ptr() == tied.target.embedding.weight.data_ptr()
    assert untied.target.output.weight.data_ptr() != untied.target.embedding.weight.data_ptr()
    assert sum(p.numel() for p in untied.parameters()) - sum(p.numel() for p in tied.parameters()) == V * D
    assert torch.all(tied.target.embedding.weight[PAD] == 0)


@pytest.mark.parametrize("posenc", ["sinusoidal", "rotary"])
def test_seq2seq_assembly(posenc):
    cfg = {
        "frontend": registry.default_config("frontend", "tokens", dim=D),
        "posenc": registry.default_config("posenc", posenc),
        "encoder": small("encoder"),
        "decoder": small("decoder"),
        "attention": registry.default_config("attention", "scaled_dot"),
    }
    model = Seq2Seq(cfg, SourceDescription("tokens", vocab_size=V), V)
    assert (model.posenc is None) == (posenc == "rotary")
    assert (model.encoder.posenc is not None) == (posenc == "rotary")
    source = torch.randint(4, V, (B, S)).masked_fill(~MASK, PAD)
    assert model(source, targets()).logits.shape == (B, T, V)
    cfg["decoder"] = small("decoder", heads=3)
    with pytest.raises(AssemblyError, match="decoder 'transformer'"):
        Seq2Seq(cfg, SourceDescription("tokens", vocab_size=V), V)
