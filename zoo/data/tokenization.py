"""Shared glue for tokenizers built on the HuggingFace ``tokenizers`` library.

A tokenizer plugin subclasses :class:`HFTokenizer` and says only how its
pipeline is made: :meth:`HFTokenizer.pipeline` returns an untrained
``tokenizers.Tokenizer`` (model, normalizer, pre-tokenizer, decoder) and
:meth:`HFTokenizer.trainer` the trainer that fills its vocabulary. Training,
batch encoding/decoding, saving and loading are the same for all of them.

Every trainer receives :data:`zoo.contracts.SPECIAL_TOKENS` first, so the ids of
``<pad> <s> </s> <unk>`` are 0..3 in every vocabulary; this is checked after
training and after loading.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from tokenizers import Tokenizer as HFPipeline
from tokenizers import normalizers, trainers

from zoo.contracts import SPECIAL_TOKENS, Tokenizer
from zoo.errors import ZooError


class TokenizerError(ZooError, RuntimeError):
    """A tokenizer was used before training/loading, or a saved one is unusable."""


class HFTokenizer(Tokenizer):
    """Base class: a ``tokenizers.Tokenizer`` pipeline behind zoo's :class:`Tokenizer` contract."""

    def __init__(self, cfg) -> None:
        super().__init__(cfg)
        self._pipeline: HFPipeline | None = None

    # ------------------------------------------------------------------ what a plugin provides
    def pipeline(self) -> HFPipeline:
        """An untrained pipeline: model (with ``unk_token="<unk>"``), normalizer, pre-tokenizer, decoder."""
        raise NotImplementedError

    def trainer(self) -> trainers.Trainer:
        """The trainer that builds the vocabulary; pass ``special_tokens=list(SPECIAL_TOKENS)``."""
        raise NotImplementedError

    @staticmethod
    def lowercase_normalizer(lowercase: bool) -> normalizers.Normalizer | None:
        """``Lowercase()`` when asked for, else no normalizer."""
        return normalizers.Lowercase() if lowercase else None

    # ------------------------------------------------------------------ the contract
    def train(self, texts: Iterable[str]) -> None:
        """Learn the vocabulary from ``texts`` (the training split only)."""
        counted = _Counter(texts)
        pipeline = self.pipeline()
        pipeline.train_from_iterator(counted, trainer=self.trainer())
        if counted.seen == 0:
            raise TokenizerError(
                f"{type(self).__name__} got no text to train on; check that the training split is not empty"
            )
        self._pipeline = self._checked(pipeline, "after training")

    def encode(self, texts: list[str]) -> list[list[int]]:
        """Strings -> id lists, without BOS/EOS; unknown pieces become UNK (id 3)."""
        if isinstance(texts, str):
            raise TypeError("encode() takes a list of strings; wrap a single sentence as [sentence]")
        encodings = self._ready().encode_batch(list(texts), add_special_tokens=False)
        return [encoding.ids for encoding in encodings]

    def decode(self, ids: Sequence[Sequence[int]]) -> list[str]:
        """Id lists -> detokenised strings; PAD/BOS/EOS/UNK are dropped."""
        return self._ready().decode_batch([[int(i) for i in seq] for seq in ids], skip_special_tokens=True)

    @property
    def vocab_size(self) -> int:
        return self._ready().get_vocab_size()

    def save(self, path: str | os.PathLike) -> None:
        """Write the HF tokenizer JSON to ``path`` (its folder is created)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        self._ready().save(str(path))

    def load(self, path: str | os.PathLike) -> None:
        if not Path(path).is_file():
            raise TokenizerError(
                f"no tokenizer file {path}; train the tokenizer first (it is saved by the data module)"
            )
        try:
            pipeline = HFPipeline.from_file(str(path))
        except Exception as error:  # the Rust side raises plain Exceptions for bad JSON
            raise TokenizerError(f"{path} is not a tokenizer file ({error}); delete it to retrain") from error
        self._pipeline = self._checked(pipeline, f"in {path}")

    # ------------------------------------------------------------------ helpers
    def _ready(self) -> HFPipeline:
        if self._pipeline is None:
            raise TokenizerError(f"{type(self).__name__} is not trained; call train(texts) or load(path) first")
        return self._pipeline

    @staticmethod
    def _checked(pipeline: HFPipeline, where: str) -> HFPipeline:
        for expected, token in enumerate(SPECIAL_TOKENS):
            found = pipeline.token_to_id(token)
            if found != expected:
                raise TokenizerError(
                    f"special token {token} has id {found} {where}, expected {expected}; "
                    "pass special_tokens=list(SPECIAL_TOKENS) to the trainer"
                )
        return pipeline


class _Counter:
    """Iterates over texts and counts them (train_from_iterator gives no count back)."""

    def __init__(self, texts: Iterable[str]) -> None:
        self._texts = texts
        self.seen = 0

    def __iter__(self) -> Iterator[str]:
        for text in self._texts:
            self.seen += 1
            yield text
