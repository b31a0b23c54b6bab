"""The kinds of component, declared once.

The config schema and the primary config's defaults (:mod:`zoo.config.schema`),
``zoo list``, model assembly, ``summary.json`` and ``zoo compare`` all read
this table; adding a kind here is the whole of making it one.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Kind:
    """One kind of component.

    ``default`` names the built-in a run uses when the config chooses none; a kind
    with a default is a Hydra config group (``encoder=lstm``). ``metric`` has none:
    a run names a list of them (``metrics=[bleu,chrf]``). ``optional_groups`` offer
    the same plugins for one use of the kind (``cross_attention=additive``); such a
    group left null means the kind's own choice.
    """

    name: str
    default: str | None
    contract: str  # the base class a plugin subclasses, in zoo.contracts
    role: str  # what a component of this kind receives and returns
    in_model: bool = False  # a part of the neural network (assembled by zoo.model)
    optional_groups: tuple[str, ...] = ()  # more config groups offering this kind's plugins; null: the kind's choice
    chooses_defaults: bool = False  # its plugins may choose other kinds' defaults (captioning: scenes, cnn)

    @property
    def is_group(self) -> bool:
        return self.default is not None

    @property
    def groups(self) -> tuple[str, ...]:
        """Every config group whose options are this kind's plugins: its own and its optional ones."""
        return (self.name, *self.optional_groups) if self.is_group else ()


KINDS: tuple[Kind, ...] = (
    Kind(
        "task",
        "translation",
        "Task",
        "owns sources and outputs: source codec, items -> training pairs, output length, metrics, samples, prediction",
        chooses_defaults=True,
    ),
    Kind("dataset", "synthetic", "Dataset", "config -> items {id, source, references[]} for train/val/test"),
    Kind("tokenizer", "word", "Tokenizer", "text <-> token ids (trained on the training split)"),
    Kind("frontend", "tokens", "Frontend", "source batch -> vectors x (B, S, D) and mask (B, S)", in_model=True),
    Kind(
        "posenc",
        "none",
        "PosEnc",
        "x (B, T, D) -> x with positions, or hooks inside attention",
        in_model=True,
    ),
    Kind("encoder", "gru", "Encoder", "x (B, S, D), mask -> memory (B, S, H), mask, state (B, H)", in_model=True),
    Kind(
        "decoder",
        "rnn",
        "Decoder",
        "target ids + encoder output -> logits (B, T, V); step() for generation",
        in_model=True,
    ),
    Kind(
        "attention",
        "additive",
        "Attention",
        "queries (B, H, T, d), keys (B, H, S, d) -> scores (B, H, T, S)",
        in_model=True,
        optional_groups=("self_attention", "cross_attention"),
    ),
    Kind("metric", None, "Metric", "hypotheses, references per item -> corpus score, per-item scores"),
)

KIND_NAMES: tuple[str, ...] = tuple(kind.name for kind in KINDS)
#: Kinds chosen through a Hydra config group, in the order the config composes them.
GROUP_KINDS: tuple[Kind, ...] = tuple(kind for kind in KINDS if kind.is_group)
#: Optional config groups -> the kind whose plugins they offer (``cross_attention`` -> ``attention``).
OPTIONAL_GROUPS: dict[str, str] = {group: kind.name for kind in GROUP_KINDS for group in kind.optional_groups}
#: Kinds that make up the model, in the order data flows through them.
MODEL_KINDS: tuple[str, ...] = tuple(kind.name for kind in KINDS if kind.in_model)


#: What users call a kind by its base class's or its parts' names -> the kind's name.
OTHER_NAMES = {"scorer": "attention", "positional_encoding": "posenc"}


def kind(name: str) -> Kind:
    """The declaration of kind ``name``; an unknown name lists the kinds (or names the kind it means)."""
    for declared in KINDS:
        if declared.name == name:
            return declared
    from zoo.config.suggest import did_you_mean, with_hint
    from zoo.registry.entries import RegistryError

    if name in OTHER_NAMES:
        raise RegistryError(f"the kind '{name}' is called '{OTHER_NAMES[name]}': register('{OTHER_NAMES[name]}', NAME)")

    raise RegistryError(
        with_hint(
            f"unknown component kind '{name}'", did_you_mean(name, KIND_NAMES), f"kinds are: {', '.join(KIND_NAMES)}"
        )
    )
