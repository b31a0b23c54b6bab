"""Helpers for text: tokenizers (:class:`HFTokenizer`, :func:`train_tokenizer`, :func:`save_tokenizer`,
:func:`save_tokenizers`, :func:`tokenizers_saved`, :func:`load_tokenizer`, :func:`tokenizer_path`,
:func:`token_labels`), :func:`pad` for a batch of id sequences, :func:`max_output_len`, the longest output a
decoder may write for a source, :class:`TextTask`, the base of a task that reads text through a tokenizer, and
:class:`LabelTask`, of one that also writes labels."""

from zoo.data.collate import pad
from zoo.data.labels import LabelTask
from zoo.data.text import (
    load_tokenizer,
    save_tokenizer,
    save_tokenizers,
    token_labels,
    tokenizer_path,
    tokenizers_saved,
    train_tokenizer,
)
from zoo.data.text_task import TextTask
from zoo.data.tokenization import HFTokenizer
from zoo.decoding import max_output_len

__all__ = [
    "HFTokenizer", "train_tokenizer", "save_tokenizer", "save_tokenizers", "tokenizers_saved", "load_tokenizer",
    "tokenizer_path", "token_labels", "pad",
    "max_output_len", "TextTask", "LabelTask",
]  # fmt: skip
