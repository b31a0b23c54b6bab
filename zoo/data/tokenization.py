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
import re
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

    #: Whether the pipeline encodes a text as its space-separated words, each on its own (its pre-tokenizer splits
    #: at spaces first and its normalizer works character by character). Then :meth:`encode` encodes each
    #: distinct word once and joins their ids: a corpus repeats its words, so this is several times faster than
    #: encoding every line (prepared data spends most of its time here). Texts where spacing is itself encoded
    #: (two spaces running, a space at either end) or that hold a special token go through the pipeline whole.
    encodes_words_apart: bool = False

    def __init__(self, cfg) -> None:
        super().__init__(cfg)
        self._pipeline: HFPipeline | None = None
        self._words: dict[str, list[int]] = {}  # word -> ids, for encodes_words_apart

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
        self._use(self._checked(pipeline, "after training"))

    def encode(self, texts: list[str]) -> list[list[int]]:
        """Strings -> id lists, without BOS/EOS; unknown pieces become UNK (id 3)."""
        if isinstance(texts, str):
            raise TypeError("encode() takes a list of strings; wrap a single sentence as [sentence]")
        pipeline = self._ready()
        if self.encodes_words_apart:
            if len(self._words) > WORDS_KEPT:
                self._words.clear()
            return _encode_by_word(pipeline, list(texts), self._words)
        return [encoding.ids for encoding in pipeline.encode_batch(list(texts), add_special_tokens=False)]

    def decode(self, ids: Sequence[Sequence[int]]) -> list[str]:
        """Id lists -> detokenised strings; PAD/BOS/EOS/UNK are dropped."""
        return self._ready().decode_batch([[int(i) for i in seq] for seq in ids], skip_special_tokens=True)

    @property
    def vocab_size(self) -> int:
        return self._ready().get_vocab_size()

    def tokens(self) -> list[str]:
        pipeline = self._ready()
        return [pipeline.id_to_token(i) for i in range(pipeline.get_vocab_size())]

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
        self._use(self._checked(pipeline, f"in {path}"))

    # ------------------------------------------------------------------ helpers
    def _use(self, pipeline: HFPipeline) -> None:
        self._pipeline = pipeline
        self._words.clear()  # ids of the previous vocabulary

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


#: A special token written out in a text: the pipeline encodes such texts whole.
_SPECIAL = re.compile("|".join(map(re.escape, SPECIAL_TOKENS)))
#: Distinct words whose ids :meth:`HFTokenizer.encode` keeps; past this many it starts afresh (a corpus's words
#: are far fewer, so this only bounds the memory a stream of new words can take).
WORDS_KEPT = 1 << 20


def _encode_by_word(pipeline: HFPipeline, texts: list[str], known: dict[str, list[int]]) -> list[list[int]]:
    """``pipeline``'s ids for ``texts``, each word not in ``known`` encoded once and added to it (see
    ``HFTokenizer.encodes_words_apart``)."""
    encoded: list[list[int] | None] = []
    whole = []  # positions of the texts the pipeline encodes whole
    for text in texts:
        if "  " in text or text[:1] == " " or text[-1:] == " " or _SPECIAL.search(text):
            whole.append(len(encoded))
            encoded.append(None)
            continue
        words = text.split(" ")
        try:
            ids = [i for word in words for i in known[word]]
        except KeyError:  # a word seen for the first time
            for word in words:
                if word not in known:
                    known[word] = pipeline.encode(word, add_special_tokens=False).ids
            ids = [i for word in words for i in known[word]]
        encoded.append(ids)
    if whole:
        for position, encoding in zip(
            whole, pipeline.encode_batch([texts[k] for k in whole], add_special_tokens=False)
        ):
            encoded[position] = encoding.ids
    return encoded


class _Counter:
    """Iterates over texts and counts them (train_from_iterator gives no count back)."""

    def __init__(self, texts: Iterable[str]) -> None:
        self._texts = texts
        self.seen = 0

    def __iter__(self) -> Iterator[str]:
        for text in self._texts:
            self.seen += 1
            yield text
