"""Contracts of the model's components: scorers, frontends, encoders, decoders and positional encodings.

Shapes and masks (padded positions change nothing real), gradients that reach
every parameter, and incremental decoding equal to teacher forcing, including
after beam search reorders the cache. Encoders and decoders whose config has
the fields of a key/value layout (:data:`~zoo.checks.inputs.LAYOUTS`) are
checked in each such layout too.
"""

from __future__ import annotations

import math
from functools import partial
from pathlib import Path

import torch
import torch.nn.functional as F

from zoo import registry
from zoo.checks.case import Case, Refused, expect
from zoo.checks.inputs import (
    KV_LAYOUTS,
    TOL,
    B,
    D,
    S,
    T,
    V,
    example_source,
    layout_options,
    layouts,
    seeded,
    small_config,
    source_mask,
    target_ids,
)
from zoo.checks.shapes import output_problem
from zoo.contracts import Attention, EncoderOutput
from zoo.nn.attention import attend


def names(kind: str) -> list[str]:
    return registry.names(kind)


def close(actual: torch.Tensor, expected: torch.Tensor, message: str) -> None:
    """``actual`` equals ``expected`` within :data:`TOL`, else a violation with ``message`` and the largest gap."""
    expect(actual.shape == expected.shape, f"{message}: shape {tuple(actual.shape)}, expected {tuple(expected.shape)}")
    gap = (actual - expected).abs().max().item() if actual.numel() else 0.0
    expect(gap <= TOL, f"{message} (largest difference {gap:.2g})")


# ------------------------------------------------------------------ scorers
def check_scorer(name: str, heads: int, tmp: Path) -> None:
    seeded()
    dim = 8
    scorer = registry.build("attention", small_config("attention", name), query_dim=dim, key_dim=dim, heads=heads)
    q = torch.randn(B, heads, T, dim, requires_grad=True)
    k = torch.randn(B, heads, S, dim, requires_grad=True)
    scores = scorer(q, k)
    expect(not (problem := output_problem(scorer, (q, k), scores)), problem)
    if not scorer.attends:
        return
    close(
        scorer.score_prepared(q, scorer.prepare_keys(k)), scores, "score_prepared(q, prepare_keys(k)) != forward(q, k)"
    )
    scores.square().sum().backward()
    for param_name, param in scorer.named_parameters():
        if param.requires_grad:
            expect(param.grad is not None and param.grad.abs().sum() > 0, f"parameter {param_name} gets no gradient")
    expect(q.grad is not None and q.grad.abs().sum() > 0, "no gradient reaches the queries")
    mask = source_mask()
    context, weights = attend(scores.detach(), torch.randn(B, heads, S, 4), key_mask=mask)
    expect(context.shape == (B, heads, T, 4), f"attended values {tuple(context.shape)}, expected {(B, heads, T, 4)}")
    expect(bool(torch.all(weights.masked_select(~mask[:, None, None, :]) == 0)), "padded keys got weight")
    close(weights.sum(-1), torch.ones(B, heads, T), "attention weights do not sum to 1")


def scorer_reads_keys(name: str) -> bool:
    """Whether the scorer's scores change when its keys change (not for ``none`` or ``location``)."""
    seeded()
    scorer = registry.build("attention", small_config("attention", name), query_dim=8, key_dim=8, heads=1)
    q, k = torch.randn(1, 1, 2, 8), torch.randn(1, 1, 3, 8)
    with torch.no_grad():
        return scorer.attends and not torch.allclose(scorer(q, k), scorer(q, torch.randn_like(k)))


# ------------------------------------------------------------------ frontends
def check_frontend(name: str, tmp: Path) -> None:
    seeded()
    description, source, true_mask = example_source(registry.get("frontend", name).cls)
    frontend = registry.build("frontend", small_config("frontend", name, dim=D), source=description).eval()
    x, mask = frontend(source)
    positions = source.shape[1] if true_mask is not None else math.prod(frontend.grid)
    expect(frontend.output_dim == D, f"output_dim {frontend.output_dim}, expected the config's dim {D}")
    expect(x.shape == (B, positions, D), f"x {tuple(x.shape)}, expected (B, S, output_dim) = {(B, positions, D)}")
    expect(mask.dtype == torch.bool, f"mask dtype {mask.dtype}, expected torch.bool")
    expected_mask = true_mask if true_mask is not None else torch.ones(B, positions, dtype=torch.bool)
    expect(torch.equal(mask, expected_mask), "mask is not True exactly at the real positions")
    if frontend.feature_dim:  # a backbone: zoo features saves its grid
        grid = frontend.extract(source)
        expect(grid.shape == (B, positions, frontend.feature_dim), f"extract() gives {tuple(grid.shape)}")


# ------------------------------------------------------------------ encoders
def build_encoder(name: str, scorer: str | None, layout: str = "default", input_dim: int = D):
    cfg = small_config("encoder", name, **layout_options("encoder", name, layout))
    extra = {"scorer": small_config("attention", scorer)} if registry.get("encoder", name).cls.scores_with(cfg) else {}
    return registry.build("encoder", cfg, input_dim=input_dim, **extra)


def check_encoder_shapes(name: str, scorer: str | None, layout: str, tmp: Path) -> None:
    seeded()
    encoder = build_encoder(name, scorer, layout).train()
    mask = source_mask()
    x = torch.randn(B, S, D, requires_grad=True)
    out = encoder(x, mask)
    expect(not (problem := output_problem(encoder, (x, mask), out)), problem)
    # A loss over real positions and the summary; something trainable (the input stands in for the embedding) learns.
    (out.memory[mask].sum() + out.state.sum()).backward()
    trainable = [x] + [p for p in encoder.parameters() if p.requires_grad]
    expect(any(t.grad is not None and t.grad.abs().sum() > 0 for t in trainable), "no gradient flows")


def check_encoder_padding(name: str, scorer: str | None, layout: str, tmp: Path) -> None:
    seeded()
    encoder = build_encoder(name, scorer, layout).eval()
    mask, x, extra = source_mask(), torch.randn(B, S, D), 3
    x_long = torch.cat([x, torch.randn(B, extra, D)], dim=1)  # arbitrary vectors at the new padded steps
    mask_long = torch.cat([mask, torch.zeros(B, extra, dtype=torch.bool)], dim=1)
    with torch.no_grad():
        short, long = encoder(x, mask), encoder(x_long, mask_long)
    real = mask[..., None]
    close(long.memory[:, :S] * real, short.memory * real, "appended padding changed the memory at real positions")
    close(long.state, short.state, "appended padding changed the state")


def encoder_cases() -> list[Case]:
    """Each encoder; one with self-attention (in a layout that places it) with each scorer in each of its layouts."""
    cases = []
    for name in names("encoder"):
        cls = registry.get("encoder", name).cls
        for layout in layouts("encoder", name):
            scores = cls.scores_with(layout_options("encoder", name, layout))
            for scorer in names("attention") if scores else [None]:
                parts = (("encoder", name), *((("attention", scorer),) if scorer else ()))
                detail = ", ".join(x for x in (scorer and f"attention={scorer}", layout != "default" and layout) if x)
                cases.append(
                    Case("shapes and gradients", parts, partial(check_encoder_shapes, name, scorer, layout), detail)
                )
                cases.append(
                    Case("ignores padding", parts, partial(check_encoder_padding, name, scorer, layout), detail)
                )
    return cases


# ------------------------------------------------------------------ decoders
MEMORY_DIM, STATE_DIM = D, D // 2  # unequal, so a decoder that mixes them up fails


def encoder_output() -> EncoderOutput:
    """An encoder's output over a padded batch, its memory and state leaf tensors whose gradients are checked;
    the padded positions hold arbitrary vectors, which a decoder must not read."""
    return EncoderOutput(
        memory=torch.randn(B, S, MEMORY_DIM, requires_grad=True),
        mask=source_mask(),
        state=torch.randn(B, STATE_DIM, requires_grad=True),
    )


def build_decoder(name: str, scorer: str | None, posenc: str, layout: str):
    """The decoder over :func:`encoder_output`; a refused scorer/posenc combination is :class:`Refused`. A decoder
    that scores with no scorer (``scorer`` None) is given the kind's default, as a run gives it."""
    cfg = small_config("decoder", name, **layout_options("decoder", name, layout))
    if "hidden_size" in cfg:  # queries then match the memory size, which dot-product scorers need
        cfg["hidden_size"] = MEMORY_DIM
    try:
        return registry.build(
            "decoder",
            cfg,
            vocab_size=V,
            memory_dim=MEMORY_DIM,
            state_dim=STATE_DIM,
            scorer=small_config("attention", scorer or registry.kind("attention").default),
            posenc=small_config("posenc", posenc),
        )
    except ValueError as error:
        combination = (f"attention '{scorer}' / " if scorer else "") + f"posenc '{posenc}'"
        raise Refused(f"decoder '{name}' refuses {combination}: {error}") from error


def check_decoder_shapes(name: str, scorer: str | None, posenc: str, layout: str, tmp: Path) -> None:
    seeded()
    enc = encoder_output()
    decoder = build_decoder(name, scorer, posenc, layout).train()
    out = decoder(target_ids(), enc)
    expect(out.logits.shape == (B, T, V), f"logits {tuple(out.logits.shape)}, expected (B, T, V) = {(B, T, V)}")
    F.cross_entropy(out.logits.reshape(-1, V), torch.randint(4, V, (B * T,))).backward()
    trainable = [(n, p) for n, p in decoder.named_parameters() if p.requires_grad]
    expect(any(p.grad is not None and p.grad.abs().sum() > 0 for _, p in trainable), "no gradient in the decoder")
    reached = [t.grad is not None and t.grad.abs().sum() > 0 for t in (enc.memory, enc.state)]
    expect(any(reached), "no gradient reaches the encoder's output (memory or state)")
    if scorer is None or scorer_reads_keys(scorer):
        # Every trainable parameter must take part (DDP fails on unused parameters). A scorer that ignores
        # its keys (location, none) may leave a decoder's key projections unused, so it is exempt.
        unused = [n for n, p in trainable if p.grad is None]
        expect(not unused, f"decoder parameters without gradient: {unused}")


def check_decoder_steps(name: str, scorer: str | None, posenc: str, layout: str, tmp: Path) -> None:
    seeded()
    enc = encoder_output()
    decoder = build_decoder(name, scorer, posenc, layout).eval()
    y = target_ids()
    with torch.no_grad():
        full = decoder(y, enc).logits
        cache = decoder.init_cache(enc)
        for t in range(T):
            logits, cache, attn = decoder.step(y[:, t], enc, cache, t)
            expect(logits.shape == (B, V), f"step logits {tuple(logits.shape)}, expected (B, V) = {(B, V)}")
            close(logits, full[:, t], f"step {t} differs from forward() at position {t}")
            if attn is not None:
                expect(attn.shape == (B, S), f"step attention {tuple(attn.shape)}, expected (B, S) = {(B, S)}")
                expect(bool(torch.all(attn.masked_select(~enc.mask) == 0)), "padded source positions got attention")


def check_decoder_reorder(name: str, scorer: str | None, posenc: str, layout: str, tmp: Path) -> None:
    """Reordering (and repeating, as beam search does) cache rows equals stepping reordered inputs."""
    seeded()
    enc = encoder_output()
    decoder = build_decoder(name, scorer, posenc, layout).eval()
    y, index = target_ids(), torch.tensor([2, 0, 1, 0])
    with torch.no_grad():
        cache = decoder.init_cache(enc)
        for t in range(2):
            _, cache, _ = decoder.step(y[:, t], enc, cache, t)
        expected, _, _ = decoder.step(y[:, 2], enc, cache, 2)
        logits, _, _ = decoder.step(y[index, 2], enc.index_select(index), decoder.reorder_cache(cache, index), 2)
    close(logits, expected[index], "a reordered cache does not step like the reordered batch")


def check_decoder_prepares_keys_once(name: str, scorer: str | None, posenc: str, layout: str, tmp: Path) -> None:
    """Key-side work over the source (Attention.prepare_keys) is done at most once per sentence: once in a
    teacher-forced pass, not per target position, and once in init_cache, not per generated token
    (a latent key/value cache is decompressed, and so prepared, at every step by design)."""
    seeded()
    enc = encoder_output()
    decoder = build_decoder(name, scorer, posenc, layout).eval()
    y = target_ids()
    counts = count_source_key_preparations(decoder)
    with torch.no_grad():
        decoder(y, enc)
        expect(max(counts.values(), default=0) <= 1, f"teacher forcing prepared source keys more than once: {counts}")
        counts.update(dict.fromkeys(counts, 0))
        cache = decoder.init_cache(enc)
        for t in range(T):
            _, cache, _ = decoder.step(y[:, t], enc, cache, t)
    if "kv_latent_dim" not in layout_options("decoder", name, layout):
        expect(max(counts.values(), default=0) <= 1, f"generation prepared source keys more than once: {counts}")


def count_source_key_preparations(decoder) -> dict[str, int]:
    """Count, per scorer in ``decoder``, the calls to its prepare_keys with S keys (the source's; no target
    here is that long: T < S), including those its own forward makes. Returns the live counts by module name."""
    counts: dict[str, int] = {}
    for module_name, module in decoder.named_modules():
        if isinstance(module, Attention):
            counts[module_name] = 0
            module.prepare_keys = _counted(module.prepare_keys, counts, module_name)  # an instance attribute
    return counts


def _counted(prepare, counts: dict[str, int], module_name: str):
    def counted(k: torch.Tensor) -> torch.Tensor:
        counts[module_name] += k.shape[2] == S
        return prepare(k)

    return counted


DECODER_CHECKS = {
    "shapes and gradients": check_decoder_shapes,
    "steps equal teacher forcing": check_decoder_steps,
    "reordered cache": check_decoder_reorder,
    "source keys prepared once": check_decoder_prepares_keys_once,
}


def decoder_cases() -> list[Case]:
    """Each decoder, in each of its layouts, with each scorer (and the default posenc) and with each other
    posenc (and the default scorer): the kinds' defaults are what a run gets when it chooses none. A decoder
    that scores only where a layout places attention layers in it (a state-space hybrid) is checked with every
    scorer in those layouts, at the default posenc, and in the key/value layouts with the default scorer."""
    plain_posenc, scorer_for_posencs = registry.kind("posenc").default, registry.kind("attention").default
    other_posencs = [posenc for posenc in names("posenc") if posenc != plain_posenc]
    combinations = []
    for decoder in names("decoder"):
        cls = registry.get("decoder", decoder).cls
        for layout in layouts("decoder", decoder):
            placed = not cls.uses_scorer and cls.scores_with(layout_options("decoder", decoder, layout))
            if placed:
                scorers = [scorer_for_posencs] if layout in KV_LAYOUTS else names("attention")
                combinations += [(decoder, scorer, plain_posenc, layout) for scorer in scorers]
                continue
            scores = cls.uses_scorer
            scorers, posenc_scorer = (names("attention"), scorer_for_posencs) if scores else ([None], None)
            combinations += [(decoder, scorer, plain_posenc, layout) for scorer in scorers]
            combinations += [(decoder, posenc_scorer, posenc, layout) for posenc in other_posencs]
    cases = []
    for decoder, scorer, posenc, layout in combinations:
        parts = (("decoder", decoder), *((("attention", scorer),) if scorer else ()), ("posenc", posenc))
        said = (scorer and f"attention={scorer}", f"posenc={posenc}", layout != "default" and layout)
        detail = ", ".join(x for x in said if x)
        for check, function in DECODER_CHECKS.items():
            cases.append(Case(check, parts, partial(function, decoder, scorer, posenc, layout), detail))
    return cases


# ------------------------------------------------------------------ positional encodings
def check_posenc(name: str, tmp: Path) -> None:
    """Offsets make step-by-step use exact: encoding a suffix at offset k equals the suffix of the whole."""
    seeded()
    heads, k = 2, 2
    posenc = registry.build("posenc", small_config("posenc", name), dim=D, heads=heads).eval()
    x = torch.randn(B, T, D)
    with torch.no_grad():
        full = posenc(x)
        expect(full.shape == x.shape, f"output {tuple(full.shape)}, expected the input's {tuple(x.shape)}")
        close(posenc(x[:, k:], offset=k), full[:, k:], "a suffix at its offset differs from the whole's suffix")
        if not posenc.relative:
            return
        close(full, x, "a relative encoding must leave the vectors alone (it acts inside attention)")
        dh = D // heads
        q, keys = torch.randn(B, heads, T, dh), torch.randn(B, heads, S, dh)
        q_rot, k_rot = posenc.rotate(q, keys)
        expect(q_rot.shape == q.shape and k_rot.shape == keys.shape, "rotate() changed the shapes")
        close(posenc.rotate(q[:, :, k:], keys, q_offset=k)[0], q_rot[:, :, k:], "rotate() ignores q_offset")
        close(posenc.rotate(q, keys[:, :, k:], k_offset=k)[1], k_rot[:, :, k:], "rotate() ignores k_offset")
        bias = posenc.bias(T, S)
        if bias is not None:
            expect(bias.shape == (heads, T, S), f"bias {tuple(bias.shape)}, expected (H, T, S) = {(heads, T, S)}")
            close(posenc.bias(T - k, S, q_offset=k), bias[:, k:], "bias() ignores q_offset")


def model_cases() -> list[Case]:
    cases = [
        Case(
            "scores, prepared keys, masking",
            (("attention", name),),
            partial(check_scorer, name, heads),
            f"heads={heads}",
        )
        for name in names("attention")
        for heads in (1, 2)
    ]
    cases += [
        Case("shapes and mask", (("frontend", name),), partial(check_frontend, name)) for name in names("frontend")
    ]
    cases += [Case("offsets", (("posenc", name),), partial(check_posenc, name)) for name in names("posenc")]
    return cases + encoder_cases() + decoder_cases()
