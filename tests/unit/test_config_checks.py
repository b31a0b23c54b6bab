"""Config checks: choices are rejected at composition, ranges before anything trains, each naming the field."""

from __future__ import annotations

import sys
from dataclasses import dataclass

import pytest
from helpers import ROOT, fork_zoo
from helpers.config import composed
from hydra.errors import ConfigCompositionException
from omegaconf import OmegaConf

import zoo.config.schema  # noqa: F401  (stores the schema)
from zoo import registry
from zoo.config.checks import (
    Choice,
    ConfigError,
    above,
    at_least,
    between,
    fraction,
    in_unit_interval,
    multiple_of,
    must_be,
    no_wider_than,
    one_of,
    physical_memory,
    positive,
    within_memory,
)
from zoo.config.validate import check_sections
from zoo.contracts import Attention
from zoo.nn.norms import Norm
from zoo.registry.discovery import discover
from zoo.training.preflight import validate

discover()


# --------------------------------------------------------------------------- the helpers
class Colour(Choice):
    red = "red"
    green = "green"


@dataclass
class Sample:
    size: int = 4
    heads: int = 2
    rate: float = 0.5
    share: float = 1.0
    colour: Colour = Colour.red
    width: int | None = None


@pytest.mark.parametrize(
    "check, field, value, message",
    [
        (lambda c: at_least(c, "size", 1), "size", 0, "size=0 must be >= 1"),
        (lambda c: positive(c, "rate"), "rate", 0.0, "rate=0.0 must be > 0"),
        (lambda c: above(c, "rate", 0.25), "rate", 0.25, "rate=0.25 must be > 0.25"),
        (lambda c: between(c, "size", 0, 9), "size", 10, r"size=10 must be in \[0, 9\]"),
        (lambda c: in_unit_interval(c, "rate"), "rate", 1.0, r"rate=1.0 must be in \[0, 1\)"),
        (lambda c: fraction(c, "share"), "share", 0.0, r"share=0.0 must be in \(0, 1\]"),
        (lambda c: multiple_of(c, "size", "heads"), "size", 5, "size=5 must be a multiple of heads=2"),
        (lambda c: no_wider_than(c, "heads", "size"), "heads", 5, "heads=5 must be <= size=4"),
    ],
)
def test_each_range_helper_names_the_field_value_and_range(check, field, value, message):
    check(Sample())  # the defaults lie inside every range
    with pytest.raises(ConfigError, match=f"^{message}$"):
        check(Sample(**{field: value}))


def test_a_hint_follows_the_range():
    with pytest.raises(ConfigError, match=r"^size=0 must be >= 1; 1 is the smallest model$"):
        at_least(Sample(size=0), "size", 1, "1 is the smallest model")


def test_an_unset_optional_passes_every_range():
    sample = Sample(width=None)
    at_least(sample, "width", 1)
    positive(sample, "width")
    multiple_of(sample, "width", "heads")


def test_within_memory_refuses_only_what_this_machine_could_never_hold():
    within_memory(Sample(), ("size", "heads"), physical_memory(), "the weights")
    with pytest.raises(
        ConfigError,
        match=r"^size=4, heads=2 need at least [\d,.]+ GiB for the weights, more than "
        r"this machine's memory \([\d,.]+ GiB\); lower them$",
    ):
        within_memory(Sample(), ("size", "heads"), physical_memory() + 1, "the weights")


def test_one_of_turns_plain_strings_into_members_and_names_the_choices():
    sample = Sample(colour="green")
    one_of(sample, "colour", Colour)
    assert sample.colour is Colour.green
    with pytest.raises(ConfigError, match="^colour='blue' must be one of: red, green$"):
        one_of(Sample(colour="blue"), "colour", Colour)


def test_a_choice_is_its_plain_string():
    assert Norm.rmsnorm == "rmsnorm" and f"{Norm.rmsnorm}" == str(Norm.rmsnorm) == "rmsnorm"
    assert Norm("dyt") is Norm.dyt and {Norm.dyt: 1}["dyt"] == 1


def test_a_component_built_from_python_runs_the_same_checks():
    with pytest.raises(ConfigError, match="^norm='batchnorm' must be one of: layernorm, rmsnorm, dyt$"):
        registry.build(
            "encoder",
            registry.default_config("encoder", "transformer", norm="batchnorm"),
            input_dim=8,
            scorer={"name": "dot"},
        )


def test_a_decoder_width_taken_from_the_encoder_is_checked_when_built():
    """d_model null follows the memory's width, known only then: a latent wider than it is refused there."""
    with pytest.raises(ConfigError, match="^kv_latent_dim=17 must be <= d_model=16; the latent compresses"):
        registry.build(
            "decoder",
            registry.default_config("decoder", "transformer", kv_latent_dim=17, heads=2),
            vocab_size=11,
            memory_dim=16,
            scorer={"name": "dot"},
            posenc={"name": "none"},
        )


# --------------------------------------------------------------------------- composition
@pytest.mark.parametrize(
    "overrides, allowed",
    [
        (["decoder=transformer", "decoder.norm=foo"], "layernorm, rmsnorm, dyt"),
        (["decoder.cell=transformer"], "gru, lstm, rnn"),
        (["encoder=esn", "encoder.activation=gelu"], "tanh, relu, sigmoid, identity"),
        (["decode.strategy=viterbi"], "greedy, beam, sample"),
        (["optim.schedule=linear"], "inverse_sqrt, cosine, constant"),
    ],
)
def test_an_unknown_choice_is_rejected_at_composition_naming_the_allowed_values(overrides, allowed):
    with pytest.raises(ConfigCompositionException) as error:
        composed(*overrides)
    message = f"{error.value} {error.value.__cause__}"
    assert overrides[-1].split("=")[0] in message and f"expected one of [{allowed}]" in message


def test_an_optional_scorer_group_offers_every_scorer_and_rejects_typos():
    cfg = composed("attention=scaled_dot", "cross_attention=additive", "cross_attention.hidden_size=64")
    assert cfg.cross_attention.name == "additive" and cfg.cross_attention.hidden_size == 64
    assert cfg.self_attention is None  # null: the attention choice
    for overrides in (
        ["cross_attention=additive", "cross_attention.hiden_size=64"],  # a field the scorer lacks
        ["cross_attention.hidden_size=64"],  # no scorer chosen there
        ["cross_atention=additive"],
    ):  # no such group
        with pytest.raises(ConfigCompositionException):
            composed(*overrides)


def test_a_kv_layout_sets_the_decoders_key_value_layout():
    cfg = composed("experiment=transformer", "kv_layout=gqa")
    assert (cfg.decoder.kv_heads, cfg.decoder.kv_latent_dim, cfg.encoder.kv_heads) == (2, None, None)
    assert composed("experiment=transformer", "kv_layout=mla").decoder.kv_latent_dim == 32


def test_choices_survive_yaml_plain_containers_and_building():
    cfg = composed("decoder=transformer", "decoder.norm=rmsnorm", "decode.strategy=beam")
    assert "norm: rmsnorm" in OmegaConf.to_yaml(cfg.decoder)
    container = OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)
    assert type(container["decoder"]["norm"]) is str and container["decode"]["strategy"] == "beam"
    decoder = registry.build(
        "decoder", container["decoder"], vocab_size=11, memory_dim=16, scorer={"name": "dot"}, posenc={"name": "none"}
    )
    assert type(decoder.final_norm).__name__ == "RMSNorm"


# --------------------------------------------------------------------------- validate()
@pytest.mark.parametrize(
    "overrides, message",
    [
        (["decode.beam_size=0"], "decode.beam_size=0 must be >= 1"),
        (["decode.top_p=0"], r"decode.top_p=0.0 must be in \(0, 1\]"),
        (["decode.temperature=0"], "decode.temperature=0.0 must be > 0"),
        (["optim.lr=0"], "optim.lr=0.0 must be > 0"),
        (["optim.label_smoothing=1"], r"optim.label_smoothing=1.0 must be in \[0, 1\)"),
        (["trainer.max_epochs=0"], "trainer.max_epochs=0 must be >= 1"),
        (["trainer.cpu_threads=-1"], "trainer.cpu_threads=-1 must be >= 0"),
        (["data.max_tokens=0"], "data.max_tokens=0 must be >= 1"),
        (["decoder.dropout=1"], r"decoder.dropout=1.0 must be in \[0, 1\)"),
        (["encoder=transformer", "encoder.heads=3"], "encoder.d_model=256 must be a multiple of heads=3"),
        (["decoder=transformer", "decoder.kv_heads=3"], "decoder.heads=4 must be a multiple of kv_heads=3"),
        (["decoder=transformer", "decoder.kv_latent_dim=0"], "decoder.kv_latent_dim=0 must be >= 1"),
        (["encoder=transformer", "encoder.kv_latent_dim=257"], "encoder.kv_latent_dim=257 must be <= d_model=256"),
        (
            ["encoder=transformer", "encoder.self_attention_projections=false", "encoder.kv_heads=1"],
            "encoder.self_attention_projections=False compares the vectors themselves",
        ),
        (["cross_attention=additive", "cross_attention.hidden_size=0"], "cross_attention.hidden_size=0 must be >= 1"),
        (["encoder=esn", "encoder.connectivity=0"], r"encoder.connectivity=0.0 must be in \(0, 1\]"),
        (["posenc=relative", "posenc.num_buckets=7"], "posenc.num_buckets=7 must be even"),
        (["tokenizer=bpe", "tokenizer.vocab_size=4"], "tokenizer.vocab_size=4 must be >= 5"),
        (["attention=cosine", "attention.temperature=-1"], "attention.temperature=-1.0 must be > 0"),
        (["samples=-1"], "samples=-1 must be >= 0"),
        (["seed=-1"], "seed=-1 must be in"),
    ],
)
def test_an_out_of_range_value_names_its_section_and_field(overrides, message):
    with pytest.raises(ConfigError, match=f"^{message}"):
        validate(composed(*overrides))


class OddWindow(Attention):
    """A scorer with rules of its own: its window odd (the helper), its scale not 3 (the plugin's own message,
    written with its section, as a plugin author might)."""

    @dataclass
    class Config:
        kernel_size: int = 3
        scale: float = 1.0

        def __post_init__(self) -> None:
            must_be(self, "kernel_size", lambda k: k % 2 == 1, "odd", "a window centred on the query")
            if self.scale == 3:
                raise ConfigError(f"attention.scale={self.scale} is reserved")


def test_a_plugins_own_rule_names_its_key_once(monkeypatch):
    entries = sys.modules["zoo.registry.entries"]  # the module (zoo.registry.entries is also a function)
    monkeypatch.setattr(entries, "_ENTRIES", dict(entries._ENTRIES))  # the registry as it was, afterwards
    registry.register("attention", "odd_window")(OddWindow)
    with pytest.raises(ConfigError, match=r"^attention.kernel_size=4 must be odd; a window centred on the query$"):
        check_sections(composed("attention=odd_window", "attention.kernel_size=4"))
    with pytest.raises(ConfigError, match=r"^attention.scale=3.0 is reserved$"):
        check_sections(composed("attention=odd_window", "attention.scale=3"))


def test_a_section_checks_itself_against_the_rest_of_the_composed_config():
    """The learned position table is checked against the data section's lengths, through its check_composed."""
    with pytest.raises(
        ConfigError,
        match=r"^posenc.max_len=8 positions are fewer than a training sequence may have "
        r"\(128: data.max_len=128, data.max_tokens=1024\); raise posenc.max_len",
    ):
        validate(composed("posenc=learned", "posenc.max_len=8"))
    validate(composed("posenc=learned", "posenc.max_len=8", "data.max_len=8"))


def test_max_epochs_may_be_anything_when_max_steps_limits_training():
    validate(composed("trainer.max_epochs=-1", "trainer.max_steps=10"))
    with pytest.raises(ConfigError, match="^trainer.max_steps=0 must be >= 1"):
        validate(composed("trainer.max_steps=0"))


@pytest.mark.parametrize("experiment", [None, *sorted(p.stem for p in (ROOT / "conf" / "experiment").glob("*.yaml"))])
def test_the_default_config_and_every_preset_pass(experiment):
    validate(composed(*([f"experiment={experiment}"] if experiment else [])))


@pytest.mark.slow
def test_zoo_train_stops_on_a_bad_range_before_anything_trains(tmp_path):
    run_dir = tmp_path / "run"
    proc = fork_zoo("train", "decode.beam_size=0", f"hydra.run.dir={run_dir}", cwd=tmp_path, check=False)
    assert proc.returncode == 1
    errors = [line for line in proc.stderr.splitlines() if line.startswith("zoo: error:")]
    assert len(errors) == 1 and "decode.beam_size=0 must be >= 1" in errors[0]
    assert "Traceback" not in proc.stderr
    left = [p.name for p in run_dir.iterdir()] if run_dir.exists() else []
    assert all(name == ".hydra" or name.endswith(".log") for name in left), left  # only what Hydra writes first


@pytest.mark.slow
@pytest.mark.parametrize(
    "overrides, message",
    [
        (["decode.strategy=foo"], "Invalid value 'foo', expected one of [greedy, beam, sample]"),
        (["tokenizer.vocab_size=0"], "Key 'vocab_size' not in 'Tokenizer_word'"),
        (["encoder=lstmm"], "Could not find 'encoder/lstmm'; Available options in 'encoder'; elm; esn"),
        (["-m", "seed=1", "attention=dot,nope"], "Could not find 'attention/nope'"),  # a sweep's later value too
        (["+ckpt_path=last.ckpt"], "zoo has no option ckpt_path"),
        (  # a group's choice beside a recipe that chooses another: wherever it stands, it replaces the recipe's
            ["encoder=gru", "model=transformer"],
            "encoder=gru replaces encoder=transformer, which model=transformer chooses, and gru has no encoder.d_model"
            " for model=transformer to set: drop encoder=gru to train model=transformer as it is, or drop model=",
        ),
    ],
)
def test_an_override_that_does_not_compose_is_one_line_and_starts_nothing(tmp_path, overrides, message):
    where = f"hydra.sweep.dir={tmp_path / 'sweep'}" if "-m" in overrides else f"hydra.run.dir={tmp_path / 'run'}"
    proc = fork_zoo("train", *overrides, where, cwd=tmp_path, check=False)
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith("zoo: error: ") and message in proc.stderr
    assert not (tmp_path / "sweep").exists() and not any((tmp_path / "run").glob("*"))


@pytest.mark.parametrize("precision", ["16", "16-mixed", "16-true"])
def test_fp16_on_the_cpu_is_refused_naming_what_to_use(precision):
    with pytest.raises(ConfigError, match=f"^trainer.precision={precision} .*use bf16-mixed or 32-true"):
        validate(composed(f"trainer.precision={precision}"))
    validate(composed("trainer=gpu_fp16"))  # a GPU preset is not checked against this machine
    validate(composed("trainer.precision=bf16-mixed"))


@pytest.mark.slow
def test_zoo_train_refuses_fp16_on_the_cpu_in_one_line(tmp_path):
    proc = fork_zoo(
        "train", "trainer.precision=16-mixed", f"hydra.run.dir={tmp_path / 'run'}", cwd=tmp_path, check=False
    )
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith("zoo: error: trainer.precision=16-mixed (fp16) needs a GPU")


def test_an_experiment_a_recipe_builds_on_through_another_recipe_is_not_named_twice():
    """multi30k_gla builds on multi30k_linear_transformer, which builds on experiment=multi30k."""
    from zoo.config.presets import check_presets_not_repeated

    for model in ("multi30k_linear_transformer", "multi30k_gla"):
        with pytest.raises(ConfigError, match=f"model={model} builds on experiment=multi30k already"):
            check_presets_not_repeated([f"model={model}", "experiment=multi30k"])
    check_presets_not_repeated(["model=gla", "experiment=multi30k"])  # a recipe of the built-in data: allowed


def test_an_override_that_fits_only_a_swept_value_is_refused_before_the_sweep():
    """Hydra composes a sweep once without its swept values: ``decoder.prefix`` beside ``decoder=s4d,mamba`` would land
    on the preset's rnn decoder there and fail in Hydra's words, although each job composes. One line instead."""
    from zoo.cli.train_checks import check_composition
    from zoo.config.overrides import CompositionError

    preset = ["-m", "experiment=compare_captioning_families", "attention=scaled_dot"]
    swept_first = r"first composed without its swept values \(seed, decoder\).*sweep decoder one value a command"
    with pytest.raises(CompositionError, match=swept_first):  # names the swept group the others need, not the seed
        check_composition([*preset, "seed=1,2", "decoder=s4d,mamba", "decoder.prefix=none", "decoder.cross_every=1"])
    check_composition(
        [*preset, "decoder=mamba", "decoder.prefix=none", "decoder.cross_every=1", "seed=1,2"]
    )  # one decoder a sweep composes
