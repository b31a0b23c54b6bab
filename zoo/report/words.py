"""What a reader is told a run or a set of runs is, in words rather than config dumps.

A board of runs on another test set was headed by the dataset's config as JSON, and a run alone on its board was
named by its encoder's name only (``gru``, ``identity``). Here a dataset reads as its corpus, direction and test
split (``multi30k (en→de), test_2016_flickr``) plus whatever else sets it apart, and a lone run as its recipe and
components (``gru recipe``; ``cnn frontend, identity encoder, transformer decoder, scaled_dot attention``).
"""

from __future__ import annotations

import json
from pathlib import PurePath
from typing import Any

from zoo.report.runs import Run

#: The dataset fields :func:`dataset_words` reads into its phrase (the rest are named when they differ).
_PHRASED = ("name", "root", "split_file", "src_lang", "tgt_lang", "test")
#: The components that describe a lone run, in the order a model is built; a component set to one of ``_PLAIN``
#: (the default front end, no attention) goes unsaid.
_PARTS = ("frontend", "encoder", "decoder", "attention")
_PLAIN = {"frontend": "tokens", "attention": "none"}


def corpus(dataset: dict[str, Any]) -> str:
    """The corpus's name: its folder (``root``) or split file's stem, else the dataset plugin's name."""
    source = dataset.get("root") or dataset.get("split_file")
    if not source:
        return str(dataset.get("name", "?"))
    stem = PurePath(str(source)).stem
    return stem.removeprefix("dataset_") or str(dataset.get("name", "?"))


def dataset_words(dataset: dict[str, Any], against: dict[str, Any] | None = None) -> str:
    """``multi30k (en→de), test_2016_flickr``, then each other field whose value differs from ``against``'s
    (``test_size 30``) where both are the same plugin (another plugin's fields are said by its name)."""
    words = corpus(dataset)
    if dataset.get("src_lang") and dataset.get("tgt_lang"):
        words += f" ({dataset['src_lang']}→{dataset['tgt_lang']})"
    parts = [words, *([str(dataset["test"])] if dataset.get("test") else [])]
    if against is not None and against.get("name") == dataset.get("name"):
        keys = dict.fromkeys([*dataset, *against])
        parts += [
            f"{key} {show(dataset.get(key))}"
            for key in keys
            if key not in _PHRASED and dataset.get(key) != against.get(key)
        ]
    return ", ".join(parts)


def signature_words(signatures: dict[str, str], against: dict[str, str]) -> str:
    """How each metric was computed where it differs from ``against``: ``bleu with tok:intl (above: tok:13a)``."""
    said = []
    for metric, signature in signatures.items():
        mine, theirs = signature.split("|"), against.get(metric, "").split("|")
        own = [part for part in mine if part not in theirs]
        if own:
            other = [part for part in theirs if part and part not in mine]
            said.append(f"{metric} with {', '.join(own)}" + (f" (above: {', '.join(other)})" if other else ""))
    return "; ".join(said) or "signatures differ"


def recipe_words(run: Run) -> str:
    """A run alone on its board: its recipe, which names all it sets (``gru recipe``), else its components
    (``gru encoder, rnn decoder, additive attention``; no scorer where the decoder scores with none: ``mamba
    decoder``); empty when it records neither."""
    recipe = run.choices.get("model")
    if recipe:
        return f"{recipe} recipe"
    plain = _PLAIN | ({} if decoder_scores(run) else {"attention": run.setting("attention")})
    return ", ".join(
        f"{name} {part}"
        for part in _PARTS
        if (name := run.setting(part)) is not None and not isinstance(name, dict) and name != plain.get(part)
    )


def decoder_scores(run: Any) -> bool:
    """Whether the run's decoder uses the run's attention scorer: its ``scores_with`` its config section (a
    state-space decoder scores only where its options place attention layers); True when the decoder is not
    registered here, since most do."""
    from zoo import registry
    from zoo.registry.discovery import discover

    discover()  # once a process: the built-in plugins and installed ones
    name = run.setting("decoder")
    if name not in registry.names("decoder"):
        return True
    section = (run.config or {}).get("decoder") or {}
    return registry.get("decoder", name).cls.scores_with(section)


def show(value: Any) -> str:
    """A setting's value as it is written on the command line (``null``, ``true``, ``[0.9,0.98]``)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list):
        return "[" + ",".join(map(show, value)) + "]"
    if isinstance(value, float) and abs(value) >= 1e6:
        return f"{value:g}"  # a budget of FLOPs: 4e+12, not 4000000000000.0
    return json.dumps(value, sort_keys=True) if isinstance(value, dict) else str(value)
