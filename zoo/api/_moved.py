"""Names that moved out of :mod:`zoo.api` or were renamed: still importable from their old place, with a
one-line warning that names the new one, so a plugin written for an older zoo keeps working.

The warning is a DeprecationWarning, for tools and tests, and zoo's own logged warning, once per name: Python shows
a DeprecationWarning only in ``__main__``, and a plugin's import never is, so ``zoo list``, ``zoo check`` and ``zoo
train`` would not say it."""

from __future__ import annotations

import importlib
import logging
import warnings

log = logging.getLogger(__name__)

#: old ``zoo.api`` name -> (module it lives in now, its name there)
MOVED = {
    "Scorer": ("zoo.api", "Attention"),
    "PositionalEncoding": ("zoo.api", "PosEnc"),
    **{
        name: ("zoo.api.layers", name)
        for name in (
            "attend", "TransformerLayout", "layout_attention", "FeedForward", "Residual", "final_norm",
            "TargetEmbedding", "GridProjection", "flatten_grid", "Reservoir", "ACTIVATIONS", "reverse_padded",
        )
    },
    **{
        name: ("zoo.api.text", name)
        for name in (
            "HFTokenizer", "train_tokenizer", "save_tokenizer", "load_tokenizer", "tokenizer_path", "token_labels",
            "pad", "max_output_len",
        )
    },
    **{
        name: ("zoo.api.vision", name)
        for name in ("ImageStore", "Fit", "as_image", "to_float", "FeatureTable", "load_features", "names_image_file")
    },
    **{
        name: ("zoo.api.metrics", name)
        for name in (
            "tokenize_corpus", "ngram_counts", "signature", "MeanOfItems", "JavaScorer", "MetricUnavailableError",
            "java_scorer_unavailable", "reference_streams", "bleu_by_source_length",
        )
    },
}  # fmt: skip


#: The moved names a warning was logged for, in this process.
told: set[str] = set()


def moved_name(module: str, name: str):
    """``module.name`` from where it lives now, with a DeprecationWarning; AttributeError for a name never there."""
    if name not in MOVED:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    new_module, new_name = MOVED[name]
    said = f"{module}.{name} is now {new_module}.{new_name}"
    warnings.warn(said, DeprecationWarning, stacklevel=3)
    if said not in told:
        told.add(said)
        log.warning("%s: import it from there (the old name will go)", said)
    return getattr(importlib.import_module(new_module), new_name)
