"""The ``rnn`` decoder: both attention styles, every cell, bridge, tying and the cache."""

import pytest
import torch
import torch.nn.functional as F

from zoo import registry
from zoo.contracts import BOS, EncoderOutput
from zoo.registry import discovery

discovery.discover()

B, S, T, V, MEM, STATE, HID = 3, 5, 4, 11, 6, 7, 8
LENGTHS = torch.tensor([5, 3, 1])


def enc_output(seed=0):
    torch.manual_seed(seed)
    mask = torch.arange(S)[None, :] < LENGTHS[:, None]
    return EncoderOutput(memory=torch.randn(B, S, MEM) * mask[..., None], mask=mask, state=torch.randn(B, STATE))


def decoder(scorer="additive", **overrides):
    cfg = registry.default_config("decoder", "rnn", **{"hidden_size": HID, "embed_dim": 5, **overrides})
    torch.manual_seed(1)
    return registry.build(
        "decoder",
        cfg,
        vocab_size=V,
        memory_dim=MEM,
        state_dim=STATE,
        scorer=registry.default_config("attention", scorer),
        posenc=registry.default_config("posenc", "none"),
    )


def targets():
    torch.manual_seed(2)
    y = torch.randint(4, V, (B, T))
    y[:, 0] = BOS
    return y


@pytest.mark.parametrize("layers", [1, 2])
@pytest.mark.parametrize("style", ["bahdanau", "luong"])
@pytest.mark.parametrize("cell", ["gru", "lstm", "rnn"])
def test_steps_equal_teacher_forcing(cell, style, layers):
    dec = decoder(cell=cell, style=style, layers=layers).eval()
    enc, y = enc_output(), targets()
    with torch.no_grad():
        out = dec(y, enc)
        cache = dec.init_cache(enc)
        for t in range(T):
            logits, cache, attn = dec.step(y[:, t], enc, cache, t)
            torch.testing.assert_close(logits, out.logits[:, t], atol=1e-6, rtol=0)
            torch.testing.assert_close(attn, out.attention["cross"][:, 0, t])


@pytest.mark.parametrize("style", ["bahdanau", "luong"])
def test_cross_attention_weights(style):
    dec = decoder(style=style).eval()
    enc = enc_output()
    weights = dec(targets(), enc).attention["cross"]
    assert weights.shape == (B, 1, T, S)
    torch.testing.assert_close(weights.sum(-1), torch.ones(B, 1, T))
    assert torch.all(weights[~enc.mask[:, None, None, :].expand_as(weights)] == 0)


@pytest.mark.parametrize("cell", ["gru", "lstm", "rnn"])
def test_cache_is_batch_first(cell):
    dec = decoder(cell=cell, style="luong", layers=2)
    cache = dec.init_cache(enc_output())
    expected = {"h", "keys", "feed"} | ({"c"} if cell == "lstm" else set())
    assert set(cache) == expected
    assert cache["h"].shape == (B, 2, HID)
    assert cache["keys"].shape[:3] == (B, 1, S)
    assert cache["feed"].shape == (B, HID)
    if cell == "lstm":
        assert cache["c"].shape == (B, 2, HID)


def test_bahdanau_queries_previous_state_luong_the_new_one():
    """At t = 0 Bahdanau attends with the initial state, so its weights depend on the bridge but not on y_0."""
    enc = enc_output()
    for style, depends_on_token in [("bahdanau", False), ("luong", True)]:
        dec = decoder(style=style).eval()
        cache = dec.init_cache(enc)
        _, _, a = dec.step(torch.full((B,), 4), enc, cache, 0)
        _, _, b = dec.step(torch.full((B,), 9), enc, cache, 0)
        assert (not torch.allclose(a, b)) == depends_on_token, style


def test_bridge_learned_or_zeros():
    enc = enc_output()
    zero_cache = decoder(cell="lstm", bridge="zeros").init_cache(enc)
    assert torch.all(zero_cache["h"] == 0) and torch.all(zero_cache["c"] == 0)
    learned = decoder(cell="lstm", bridge="learned")
    cache = learned.init_cache(enc)
    expected = torch.tanh(learned.bridge(enc.state)).view(B, 2, 1, HID)
    torch.testing.assert_close(cache["h"], expected[:, 0])
    torch.testing.assert_close(cache["c"], expected[:, 1])


def test_without_attention_only_the_summary_matters():
    dec = decoder(scorer="none").eval()
    enc, y = enc_output(), targets()
    out = dec(y, enc)
    assert out.attention is None
    other_memory = EncoderOutput(memory=torch.randn(B, S, MEM), mask=enc.mask, state=enc.state)
    torch.testing.assert_close(dec(y, other_memory).logits, out.logits)
    other_state = EncoderOutput(memory=enc.memory, mask=enc.mask, state=torch.randn(B, STATE))
    assert not torch.allclose(dec(y, other_state).logits, out.logits)
    _, _, attn = dec.step(y[:, 0], enc, dec.init_cache(enc), 0)
    assert attn is None


def test_summary_reaches_the_decoder_even_with_zero_bridge():
    dec = decoder(scorer="none", bridge="zeros").eval()
    enc, y = enc_output(), targets()
    other_state = EncoderOutput(memory=enc.memory, mask=enc.mask, state=torch.randn(B, STATE))
    assert not torch.allclose(dec(y, other_state).logits, dec(y, enc).logits)


@pytest.mark.parametrize("embed_dim", [5, HID])
def test_tied_embeddings_share_one_matrix(embed_dim):
    dec = decoder(tie_embeddings=True, embed_dim=embed_dim)
    assert dec.target.output.weight is dec.target.embedding.weight
    assert dec(targets(), enc_output()).logits.shape == (B, T, V)


@pytest.mark.parametrize("field,value", [("cell", "transformer"), ("style", "vaswani"), ("bridge", "mean")])
def test_bad_choices_are_named(field, value):
    with pytest.raises(ValueError, match=f"{field}='{value}' must be one of: "):
        decoder(**{field: value})


def test_learns_to_copy_a_batch():
    """A few dozen Adam steps on one batch fit it: the pieces are wired to learn."""
    dec = decoder(style="luong", dropout=0.0)
    enc = enc_output()
    y = targets()
    gold = torch.roll(y, -1, dims=1)
    optim = torch.optim.Adam(dec.parameters(), lr=0.05)
    losses = []
    for _ in range(60):
        loss = F.cross_entropy(dec(y, enc).logits.reshape(-1, V), gold.reshape(-1))
        optim.zero_grad()
        loss.backward()
        optim.step()
        losses.append(loss.item())
    assert losses[-1] < 0.1 * losses[0]


@pytest.mark.parametrize("scorer", ["dot", "scaled_dot", "cosine"])
def test_equal_dim_scorers_work_over_a_memory_of_another_width(scorer):
    """E.g. a bidirectional encoder's memory is wider than the decoder state: keys are projected to fit."""
    assert MEM != HID
    dec = decoder(scorer=scorer)
    assert dec.keys.weight.shape == (HID, MEM)
    assert dec(targets(), enc_output()).logits.shape == (B, T, V)
