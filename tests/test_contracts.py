"""Contract tests generated from the registry.

Every registered component is tested against the contract of its kind the
moment it registers: the test ids come from ``zoo.registry.entries(kind)`` after
plugin discovery, so a new plugin needs no new test to be checked here.

Components are built from their default configs, with known size fields
(``dim``, ``hidden_size``, ``layers``...) capped to tiny values when present
(:func:`small_config`); a component without such fields is built as it is.

Encoders and decoders whose config has the fields of a key/value layout
(:data:`LAYOUTS`: grouped-query, multi-query, latent, parameter-free) are also
tested in each such layout.

Datasets are tested only when their config has no field naming files on disk
or a download location (``root``, ``path``, ``dir``, ``file``, ``url``): those
cannot be built generically without data.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import math
import sys
from dataclasses import dataclass

import pytest
import torch
import torch.nn.functional as F

from zoo import registry
from zoo.contracts import BOS, EOS, PAD, Encoder, Item, Scorer, SourceDescription
from zoo.nn.attention import attend
from zoo.registry import discovery

discovery.discover()

B, S, T, V, D = 3, 6, 5, 20, 32  # batch, source length, target length, vocabulary, input size
LENGTHS = torch.tensor([6, 4, 1])  # real source tokens per row: one full row, one padded, one almost empty
TOL = 1e-5

# Known size fields and the largest value a contract test needs; only fields a component has are touched.
SMALL_SIZES = {
    "dim": 32,
    "d_model": 32,
    "embed_dim": 32,
    "hidden_size": 16,
    "ffn_dim": 64,
    "ff_dim": 64,
    "ffn_size": 64,
    "dim_feedforward": 64,
    "heads": 2,
    "num_heads": 2,
    "layers": 2,
    "num_layers": 2,
    "reservoir_size": 32,
    "units": 32,
    "train_size": 20,
    "val_size": 5,
    "test_size": 5,
}
FILE_FIELDS = ("root", "path", "dir", "file", "url")
# Attention layouts a component is also tested in when its config has all the fields (heads 4: two groups of 2).
LAYOUTS = {
    "gqa": {"heads": 4, "kv_heads": 2},
    "mqa": {"kv_heads": 1},
    "mla": {"kv_latent_dim": 8},
    "parameter-free": {"self_attention_projections": False},
}


def small_config(kind: str, name: str, **overrides) -> dict:
    """The default config of ``kind``/``name`` with known size fields capped to tiny values."""
    cfg = registry.default_config(kind, name)
    for field, cap in SMALL_SIZES.items():
        value = cfg.get(field)
        if type(value) is int and value > cap:
            cfg[field] = cap
    cfg.update(overrides)
    return cfg


def names(kind: str) -> list[str]:
    return [entry.name for entry in registry.entries(kind)]


def layouts(kind: str, name: str) -> list[str]:
    """``default`` and every layout of :data:`LAYOUTS` whose fields the component's config has."""
    fields = {f.name for f in dataclasses.fields(registry.get(kind, name).cls.Config)}
    return ["default", *(layout for layout, options in LAYOUTS.items() if set(options) <= fields)]


def source_mask() -> torch.Tensor:
    return torch.arange(S)[None, :] < LENGTHS[:, None]


def source_ids() -> torch.Tensor:
    ids = torch.randint(4, V, (B, S))
    return ids.masked_fill(~source_mask(), PAD)


def seeded(seed: int = 0) -> None:
    torch.manual_seed(seed)


# ------------------------------------------------------------------ every component
@pytest.mark.parametrize("kind,name", [(e.kind, e.name) for e in registry.entries()])
def test_every_component_documents_itself(kind, name):
    entry = registry.get(kind, name)
    assert entry.description, f"{kind} '{name}' needs a class docstring (its first line is shown by `zoo list`)"
    for field in dataclasses.fields(entry.cls.Config):
        has_default = field.default is not dataclasses.MISSING or field.default_factory is not dataclasses.MISSING
        assert has_default, f"{kind} '{name}' field '{field.name}' needs a default"
    assert registry.default_config(kind, name)["name"] == name


# ------------------------------------------------------------------ registry behaviour
def test_unknown_name_lists_registered_names():
    with pytest.raises(registry.RegistryError) as error:
        registry.get("attention", "no_such_scorer")
    for name in names("attention"):
        assert name in str(error.value)


def test_build_with_unknown_name_is_rejected():
    with pytest.raises(registry.RegistryError, match="no_such_encoder"):
        registry.build("encoder", {"name": "no_such_encoder"}, input_dim=D)


def test_duplicate_registration_from_another_module_names_both_modules():
    original = registry.get("encoder", "gru")

    class Impostor(Encoder):
        """Pretends to be the GRU encoder."""

        @dataclass
        class Config:
            pass

    Impostor.__module__ = "somebody_elses_plugin"
    with pytest.raises(registry.RegistryError) as error:
        registry.register("encoder", "gru")(Impostor)
    assert "somebody_elses_plugin" in str(error.value)
    assert original.module in str(error.value)
    assert registry.get("encoder", "gru") is original


TWICE_SEEN = '''
from dataclasses import dataclass

from zoo.api import Scorer, register


@register("attention", "twice_seen")
class TwiceSeen(Scorer):
    """Scores every key alike."""

    @dataclass
    class Config:
        pass
'''


def test_the_same_plugin_from_a_folder_and_a_package_is_registered_once(tmp_path):
    """A run trained from a plugin folder, loaded where that plugin is also installed as a package."""
    first, second = tmp_path / "folder" / "twice.py", tmp_path / "package" / "twice.py"
    for path in (first, second):
        path.parent.mkdir()
        path.write_text(TWICE_SEEN)
    kept = import_file(first, "zoo_test_folder_twice").TwiceSeen
    assert import_file(second, "zoo_test_package_twice").TwiceSeen is kept
    second.write_text(TWICE_SEEN.replace("alike", "the same"))
    with pytest.raises(registry.RegistryError, match="their code differs; keep one"):
        import_file(second, "zoo_test_package_twice_changed")


def import_file(path, module_name: str):
    """Import ``path`` as module ``module_name``, as a plugin folder or an installed package would."""
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    "declaration,complaint",
    [
        ("class Loose(torch.nn.Module): pass", "does not subclass zoo.api.Scorer"),
        ("class Loose(Scorer):\n    Config = dict", "needs a nested @dataclass named Config"),
        ("class Loose(Scorer):\n    @dataclass\n    class Config:\n        width: int", "width have no default"),
    ],
)
def test_register_checks_the_base_class_and_the_config(declaration, complaint):
    namespace = {"torch": torch, "Scorer": Scorer, "dataclass": dataclass}
    exec(declaration, namespace)
    with pytest.raises(registry.RegistryError, match=complaint):
        registry.register("attention", "loose")(namespace["Loose"])
    assert "loose" not in registry.names("attention")


def test_config_with_unknown_field_is_rejected():
    cfg = registry.default_config("attention", "dot", no_such_field=3)
    with pytest.raises(registry.RegistryError, match="no_such_field"):
        registry.build("attention", cfg, query_dim=8, key_dim=8, heads=1)


def test_config_without_name_is_rejected():
    with pytest.raises(registry.RegistryError, match="no 'name'"):
        registry.build("attention", {}, query_dim=8, key_dim=8, heads=1)


def test_unknown_kind_is_rejected():
    with pytest.raises(registry.RegistryError, match="unknown component kind"):
        registry.register("no_such_kind", "x")


# ------------------------------------------------------------------ attention scorers
@pytest.mark.parametrize("heads", [1, 2])
@pytest.mark.parametrize("name", names("attention"))
def test_scorer_contract(name, heads):
    seeded()
    dim = 8
    scorer = registry.build("attention", small_config("attention", name), query_dim=dim, key_dim=dim, heads=heads)
    assert isinstance(scorer, Scorer)
    q = torch.randn(B, heads, T, dim, requires_grad=True)
    k = torch.randn(B, heads, S, dim, requires_grad=True)
    scores = scorer(q, k)
    assert scores.shape == (B, heads, T, S)
    if not scorer.attends:
        return
    prepared = scorer.score_prepared(q, scorer.prepare_keys(k))
    torch.testing.assert_close(prepared, scores, msg=f"{name}: prepared keys must give the same scores")

    params = [p for p in scorer.parameters() if p.requires_grad]
    scores.square().sum().backward()
    for p in params:
        assert p.grad is not None and p.grad.abs().sum() > 0, f"{name}: a parameter gets no gradient"
    assert q.grad.abs().sum() > 0, f"{name}: no gradient reaches the queries"

    mask = source_mask()
    values = torch.randn(B, heads, S, 4)
    context, weights = attend(scores.detach(), values, key_mask=mask)
    assert context.shape == (B, heads, T, 4)
    assert torch.all(weights.masked_select(~mask[:, None, None, :]) == 0), "padded keys must get exactly zero weight"
    torch.testing.assert_close(weights.sum(-1), torch.ones(B, heads, T))


# ------------------------------------------------------------------ frontends
def frontend_input(kind: str) -> tuple[SourceDescription, torch.Tensor, torch.Tensor]:
    """A source description, a source batch of that kind and its true mask."""
    if kind == "tokens":
        source = source_ids()
        return SourceDescription("tokens", vocab_size=V), source, source != PAD
    if kind == "image":  # pixels in [0, 1]; every grid cell is real
        return SourceDescription("image", channels=3, height=32, width=32), torch.rand(B, 3, 32, 32), None
    if kind == "features":  # a 2 x 3 grid of 10 features
        return SourceDescription("features", feature_dim=10, height=2, width=3), torch.randn(B, 6, 10), None
    raise AssertionError(f"the contract tests have no {kind} batch yet; add one to frontend_input()")


@pytest.mark.parametrize("name", names("frontend"))
def test_frontend_contract(name):
    seeded()
    description, source, true_mask = frontend_input(registry.get("frontend", name).cls.source_kind)
    frontend = registry.build("frontend", small_config("frontend", name, dim=D), source=description).eval()
    x, mask = frontend(source)
    positions = source.shape[1] if true_mask is not None else math.prod(frontend.grid)
    assert x.shape == (B, positions, frontend.output_dim) and frontend.output_dim == D
    assert mask.dtype == torch.bool
    assert torch.equal(mask, true_mask if true_mask is not None else torch.ones(B, positions, dtype=torch.bool))
    if frontend.feature_dim:  # a backbone: zoo features saves its grid
        assert frontend.extract(source).shape == (B, positions, frontend.feature_dim)


# ------------------------------------------------------------------ encoders
def build_encoder(name: str, input_dim: int = D, scorer: str | None = "scaled_dot", layout: str = "default"):
    extra = {"scorer": small_config("attention", scorer)} if registry.get("encoder", name).cls.uses_scorer else {}
    return registry.build(
        "encoder", small_config("encoder", name, **LAYOUTS.get(layout, {})), input_dim=input_dim, **extra
    )


def encoder_cases() -> list[tuple[str, str | None, str]]:
    """Each encoder; one with self-attention with each scorer in each of its layouts."""
    cases = []
    for name in names("encoder"):
        scorers = names("attention") if registry.get("encoder", name).cls.uses_scorer else [None]
        cases += [(name, scorer, layout) for scorer in scorers for layout in layouts("encoder", name)]
    return cases


@pytest.mark.parametrize("name,scorer,layout", encoder_cases())
def test_encoder_shapes_and_gradients(name, scorer, layout):
    seeded()
    encoder = build_encoder(name, scorer=scorer, layout=layout).train()
    mask = source_mask()
    x = torch.randn(B, S, D, requires_grad=True)
    out = encoder(x, mask)
    assert out.memory.shape == (B, S, encoder.output_dim)
    assert out.state.shape == (B, encoder.state_dim)
    assert torch.equal(out.mask, mask)

    # A loss over real positions and the summary; something trainable (the input stands in for the embedding) learns.
    (out.memory[mask].sum() + out.state.sum()).backward()
    trainable = [x] + [p for p in encoder.parameters() if p.requires_grad]
    assert any(t.grad is not None and t.grad.abs().sum() > 0 for t in trainable), f"{name}: no gradient flows"


@pytest.mark.parametrize("name,scorer,layout", encoder_cases())
def test_encoder_ignores_appended_padding(name, scorer, layout):
    seeded()
    encoder = build_encoder(name, scorer=scorer, layout=layout).eval()
    mask = source_mask()
    x = torch.randn(B, S, D)
    extra = 3
    x_long = torch.cat([x, torch.randn(B, extra, D)], dim=1)  # arbitrary vectors at the new padded steps
    mask_long = torch.cat([mask, torch.zeros(B, extra, dtype=torch.bool)], dim=1)
    with torch.no_grad():
        short, long = encoder(x, mask), encoder(x_long, mask_long)
    assert long.memory.shape[:2] == (B, S + extra)
    real = mask[..., None]
    torch.testing.assert_close(long.memory[:, :S] * real, short.memory * real, atol=TOL, rtol=0)
    torch.testing.assert_close(long.state, short.state, atol=TOL, rtol=0)


# ------------------------------------------------------------------ decoders
def encoder_output(train: bool):
    """A small GRU encoder's output over a padded batch (the default encoder)."""
    encoder = build_encoder("gru").train(train)
    out = encoder(torch.randn(B, S, D), source_mask())
    return encoder, out


def build_decoder(name: str, scorer: str, posenc: str, layout: str, memory_dim: int, state_dim: int):
    cfg = small_config("decoder", name, **LAYOUTS.get(layout, {}))
    if "hidden_size" in cfg:  # queries then match the memory size, which dot-product scorers need
        cfg["hidden_size"] = memory_dim
    return registry.build(
        "decoder",
        cfg,
        vocab_size=V,
        memory_dim=memory_dim,
        state_dim=state_dim,
        scorer=small_config("attention", scorer),
        posenc=small_config("posenc", posenc),
    )


def scorer_reads_keys(name: str) -> bool:
    """Whether the scorer's scores change when its keys change."""
    seeded()
    scorer = registry.build("attention", small_config("attention", name), query_dim=8, key_dim=8, heads=1)
    q, k = torch.randn(1, 1, 2, 8), torch.randn(1, 1, 3, 8)
    with torch.no_grad():
        return scorer.attends and not torch.allclose(scorer(q, k), scorer(q, torch.randn_like(k)))


def target_ids() -> torch.Tensor:
    y = torch.randint(4, V, (B, T))
    y[:, 0] = BOS
    return y


def decoder_cases() -> list[tuple[str, str, str, str]]:
    """Each decoder, in each of its layouts, with each scorer (posenc none) and with each posenc (scaled_dot attention)."""
    cases = []
    for decoder in names("decoder"):
        for layout in layouts("decoder", decoder):
            cases += [(decoder, scorer, "none", layout) for scorer in names("attention")]
            cases += [(decoder, "scaled_dot", posenc, layout) for posenc in names("posenc") if posenc != "none"]
    return cases


def decoder_or_skip(name, scorer, posenc, layout, enc_module):
    """Build the decoder; a decoder other than ``rnn`` may refuse a scorer/posenc with a clear ValueError."""
    try:
        return build_decoder(name, scorer, posenc, layout, enc_module.output_dim, enc_module.state_dim)
    except ValueError as error:
        if name == "rnn":
            raise
        pytest.skip(f"decoder '{name}' refuses scorer '{scorer}' / posenc '{posenc}': {error}")


@pytest.mark.parametrize("name,scorer,posenc,layout", decoder_cases())
def test_decoder_shapes_and_gradients(name, scorer, posenc, layout):
    seeded()
    encoder, enc = encoder_output(train=True)
    decoder = decoder_or_skip(name, scorer, posenc, layout, encoder).train()
    y = target_ids()
    out = decoder(y, enc)
    assert out.logits.shape == (B, T, V)
    F.cross_entropy(out.logits.reshape(-1, V), torch.randint(4, V, (B * T,))).backward()
    trainable = [(n, p) for n, p in decoder.named_parameters() if p.requires_grad]
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for _, p in trainable), "no gradient in the decoder"
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in encoder.parameters()), "no gradient to encoder"
    if scorer_reads_keys(scorer):
        # Every trainable parameter must take part (DDP fails on unused parameters). A scorer that ignores
        # its keys (location, none) may leave a decoder's key projections unused, so it is exempt.
        unused = [n for n, p in trainable if p.grad is None]
        assert not unused, f"decoder parameters without gradient: {unused}"


@pytest.mark.parametrize("name,scorer,posenc,layout", decoder_cases())
def test_decoder_steps_match_teacher_forcing(name, scorer, posenc, layout):
    seeded()
    encoder, enc = encoder_output(train=False)
    decoder = decoder_or_skip(name, scorer, posenc, layout, encoder).eval()
    y = target_ids()
    with torch.no_grad():
        full = decoder(y, enc).logits
        cache = decoder.init_cache(enc)
        for t in range(T):
            logits, cache, attn = decoder.step(y[:, t], enc, cache, t)
            assert logits.shape == (B, V)
            torch.testing.assert_close(logits, full[:, t], atol=TOL, rtol=0, msg=f"step {t} differs from forward()")
            if attn is not None:
                assert attn.shape == (B, S)
                assert torch.all(attn.masked_select(~enc.mask) == 0), "padded source positions got attention"


@pytest.mark.parametrize("name,scorer,posenc,layout", decoder_cases())
def test_decoder_reorder_cache(name, scorer, posenc, layout):
    """Reordering (and repeating, as beam search does) cache rows equals stepping reordered inputs."""
    seeded()
    encoder, enc = encoder_output(train=False)
    decoder = decoder_or_skip(name, scorer, posenc, layout, encoder).eval()
    y = target_ids()
    index = torch.tensor([2, 0, 1, 0])
    with torch.no_grad():
        cache = decoder.init_cache(enc)
        for t in range(2):
            _, cache, _ = decoder.step(y[:, t], enc, cache, t)
        expected, _, _ = decoder.step(y[:, 2], enc, cache, 2)
        reordered = decoder.reorder_cache(cache, index)
        logits, _, _ = decoder.step(y[index, 2], enc.index_select(index), reordered, 2)
    torch.testing.assert_close(logits, expected[index], atol=TOL, rtol=0)


def count_source_key_preparations(decoder) -> dict[str, int]:
    """Count, per scorer in ``decoder``, the calls to its prepare_keys with S keys (the source's; no target
    here is that long), including those its own forward makes. Returns the live counts by module name."""
    counts: dict[str, int] = {}
    for module_name, module in decoder.named_modules():
        if isinstance(module, Scorer):
            counts[module_name] = 0
            module.prepare_keys = _counted(module.prepare_keys, counts, module_name)  # an instance attribute
    return counts


def _counted(prepare, counts: dict[str, int], module_name: str):
    """``prepare`` that adds 1 to ``counts[module_name]`` for keys (B, H, S, d) of the source's length."""

    def counted(k: torch.Tensor) -> torch.Tensor:
        counts[module_name] += k.shape[2] == S
        return prepare(k)

    return counted


@pytest.mark.parametrize("name,scorer,posenc,layout", decoder_cases())
def test_decoder_prepares_source_keys_once_per_sentence(name, scorer, posenc, layout):
    """Key-side work over the source (Scorer.prepare_keys) is done at most once per sentence: once in a
    teacher-forced pass, not per target position, and once in init_cache, not per generated token
    (a latent key/value cache is decompressed, and so prepared, at every step by design)."""
    assert T < S, "source keys are told from target keys by their length"
    seeded()
    encoder, enc = encoder_output(train=False)
    decoder = decoder_or_skip(name, scorer, posenc, layout, encoder).eval()
    y = target_ids()
    counts = count_source_key_preparations(decoder)
    with torch.no_grad():
        decoder(y, enc)
        assert max(counts.values(), default=0) <= 1, f"teacher forcing prepared source keys more than once: {counts}"
        counts.update(dict.fromkeys(counts, 0))
        cache = decoder.init_cache(enc)
        for t in range(T):
            _, cache, _ = decoder.step(y[:, t], enc, cache, t)
    if "kv_latent_dim" not in LAYOUTS.get(layout, {}):
        assert max(counts.values(), default=0) <= 1, f"generation prepared source keys more than once: {counts}"


# ------------------------------------------------------------------ positional encodings
@pytest.mark.parametrize("name", names("posenc"))
def test_posenc_offsets(name):
    """Offsets make step-by-step use exact: encoding a suffix at offset k equals the suffix of the whole."""
    seeded()
    heads, k = 2, 2
    posenc = registry.build("posenc", small_config("posenc", name), dim=D, heads=heads).eval()
    x = torch.randn(B, T, D)
    with torch.no_grad():
        full = posenc(x)
        assert full.shape == x.shape
        torch.testing.assert_close(posenc(x[:, k:], offset=k), full[:, k:], atol=TOL, rtol=0)
        if not posenc.relative:
            return
        torch.testing.assert_close(full, x)  # relative kinds act inside attention only
        dh = D // heads
        q, keys = torch.randn(B, heads, T, dh), torch.randn(B, heads, S, dh)
        q_rot, k_rot = posenc.rotate(q, keys)
        assert q_rot.shape == q.shape and k_rot.shape == keys.shape
        torch.testing.assert_close(posenc.rotate(q[:, :, k:], keys, q_offset=k)[0], q_rot[:, :, k:], atol=TOL, rtol=0)
        torch.testing.assert_close(posenc.rotate(q, keys[:, :, k:], k_offset=k)[1], k_rot[:, :, k:], atol=TOL, rtol=0)
        bias = posenc.bias(T, S)
        if bias is not None:
            assert bias.shape == (heads, T, S)
            torch.testing.assert_close(posenc.bias(T - k, S, q_offset=k), bias[:, k:], atol=TOL, rtol=0)


# ------------------------------------------------------------------ tokenizers
SENTENCES = ["the cat sat on the mat", "a dog ran in the park", "the dog sat", "a cat ran on a mat"]


@pytest.mark.parametrize("name", names("tokenizer"))
def test_tokenizer_contract(name, tmp_path):
    tokenizer = registry.build("tokenizer", small_config("tokenizer", name))
    tokenizer.train(SENTENCES * 3)  # every word seen several times, so no frequency cut-off drops it
    ids = tokenizer.encode(SENTENCES)
    assert len(ids) == len(SENTENCES)
    for row in ids:
        assert row and all(isinstance(i, int) and 0 <= i < tokenizer.vocab_size for i in row)
        assert not {PAD, BOS, EOS} & set(row), "encode must not add PAD/BOS/EOS"
    assert tokenizer.decode(ids) == SENTENCES
    assert tokenizer.decode([[BOS, *ids[0], EOS, PAD, PAD]]) == [SENTENCES[0]], "decode must drop special tokens"

    path = tmp_path / "tokenizer"
    tokenizer.save(str(path))
    restored = registry.build("tokenizer", small_config("tokenizer", name))
    restored.load(str(path))
    assert restored.vocab_size == tokenizer.vocab_size
    assert restored.encode(SENTENCES) == ids


# ------------------------------------------------------------------ datasets
def dataset_names_without_files() -> list[str]:
    return [
        e.name
        for e in registry.entries("dataset")
        if not any(word in f.name for f in dataclasses.fields(e.cls.Config) for word in FILE_FIELDS)
    ]


@pytest.mark.parametrize("name", dataset_names_without_files())
def test_dataset_contract(name):
    cfg = small_config("dataset", name)
    splits = registry.build("dataset", cfg).splits()
    assert set(splits) == {"train", "val", "test"}
    for split, items in splits.items():
        assert items, f"{split} split is empty"
        assert all(isinstance(item, Item) and item.references for item in items)
        assert all(isinstance(ref, str) for item in items for ref in item.references)
        assert len({item.id for item in items}) == len(items), "item ids must be unique within a split"
    again = registry.build("dataset", cfg).splits()
    assert again == splits, "building the same config twice must give the same items"


# ------------------------------------------------------------------ tasks
def build_task(name: str):
    """Task ``name`` with the word tokenizer and the frontend it chooses (else the first one it can feed)."""
    task_cls = registry.get("task", name).cls
    frontend = task_cls.component_defaults.get("frontend") or next(
        f for f in names("frontend") if registry.get("frontend", f).cls.source_kind in task_cls.frontend_kinds
    )
    return registry.build(
        "task",
        small_config("task", name),
        tokenizer=registry.default_config("tokenizer", "word"),
        frontend=registry.default_config("frontend", frontend),
    )


def task_and_items(name: str):
    """A task built with the word tokenizer, and tiny splits of a file-free dataset of its source kind."""
    task = build_task(name)
    datasets = [
        d for d in dataset_names_without_files() if registry.get("dataset", d).cls.source_kind == task.source_kind
    ]
    assert datasets, f"no file-free dataset gives {task.source_kind} sources to test task '{name}' with"
    return task, registry.build("dataset", small_config("dataset", datasets[0])).splits()


@pytest.mark.parametrize("name", names("task"))
def test_task_contract(name, tmp_path):
    task, splits = task_and_items(name)
    assert set(task.default_metrics) <= set(names("metric")) and task.default_monitor in names("metric")
    task.fit(splits["train"])
    task.save(tmp_path)
    assert task.saved(tmp_path)
    loaded = build_task(name)
    assert not loaded.saved(tmp_path / "elsewhere")
    loaded.load(tmp_path)
    assert loaded.source_description() == task.source_description()
    items = splits["test"][:B]
    encoded = loaded.encode_sources([item.source for item in items])
    batch = loaded.collate_sources(encoded)
    assert torch.equal(batch, task.collate_sources(task.encode_sources([item.source for item in items]))), (
        "a loaded task must encode like the fitted one"
    )
    assert batch.shape[0] == len(items)
    assert all(loaded.source_size(e) >= 1 for e in encoded)
    labels = loaded.source_labels(encoded[0])  # [] when only the frontend knows the positions (an image's grid)
    assert labels == [] or len(labels) == loaded.source_size(encoded[0])
    limit = loaded.output_limit(batch)
    assert limit.shape == (len(items),) and bool((limit >= 1).all())
    references = [item.references[0] for item in splits["train"][:B]]  # seen in training: no <unk>
    ids = loaded.encode_targets(references)
    assert all(min(row) >= 4 and max(row) < loaded.target_vocab_size for row in ids), "targets use no special ids"
    assert len(loaded.decode_targets(ids)) == len(items)
    assert isinstance(loaded.breakdowns(splits["train"][:B], references), dict)


# ------------------------------------------------------------------ metrics
@pytest.mark.parametrize("name", names("metric"))
def test_metric_contract(name):
    missing = registry.get("metric", name).cls.unavailable()
    if missing:  # e.g. SPICE without its Java jars: absent with a note, never a crash
        pytest.skip(missing)
    metric = registry.build("metric", registry.default_config("metric", name))
    references = [("the cat sat on the mat",), ("a dog runs in the big park", "a dog is running in the park")]
    perfect = [refs[0] for refs in references]
    wrong = ["zebra", "quantum"]
    better, worse = metric.corpus_score(perfect, references), metric.corpus_score(wrong, references)
    assert (better > worse) if metric.higher_is_better else (better < worse)
    per_item = metric.item_scores(perfect, references)
    assert per_item is None or len(per_item) == len(references)
    assert metric.signature() is None or isinstance(metric.signature(), str)
    second = ["a dog is running in the park"] * 2
    with_match = metric.corpus_score(second[:1], references[1:])
    without = metric.corpus_score(second[:1], [references[1][:1]])
    assert (with_match >= without) if metric.higher_is_better else (with_match <= without), (
        "a hypothesis equal to one of several references must score at least as well as against the other alone"
    )
