"""The ``parallel`` dataset: real parallel text read from files, e.g. Multi30k (Elliott et al., 2016).

Two layouts are understood, chosen by ``format``:

* ``files`` (Multi30k style): one sentence per line, one file per language and
  split, plain or gzip-compressed::

      {root}/train.de  {root}/train.en      (or train.de.gz, train.en.gz)
      {root}/val.de    {root}/val.en
      {root}/test_2016_flickr.de ...

* ``tsv``: one file per split, ``source<TAB>target`` on each line::

      {root}/train.tsv  {root}/val.tsv  {root}/test_2016_flickr.tsv

``auto`` (the default) picks ``tsv`` when ``{root}/{train}.tsv`` exists and
``files`` otherwise. Pairs with an empty side are dropped (the count is logged).
"""

from __future__ import annotations

import gzip
import logging
from dataclasses import dataclass
from pathlib import Path

from zoo.api import Choice, Dataset, Item, ZooError, at_least, one_of, register

log = logging.getLogger(__name__)


class Format(Choice):
    """How the corpus files are laid out."""

    auto = "auto"
    files = "files"
    tsv = "tsv"


class CorpusError(ZooError, ValueError):
    """The corpus files are missing or malformed."""


def read_lines(path: Path) -> list[str]:
    """The lines of a UTF-8 text file (``.gz`` is decompressed), without line endings or a byte-order mark.

    A line that is not UTF-8 text (another encoding, binary data) is one error naming the
    file and the line number, wherever it is in the file; so is a truncated archive.
    """
    opener = gzip.open if path.suffix == ".gz" else open
    lines = []
    try:
        with opener(path, "rb") as handle:
            for number, raw in enumerate(handle, start=1):
                lines.append(_decoded(raw, path, number))
    except (EOFError, OSError) as error:  # gzip.BadGzipFile is an OSError
        raise CorpusError(
            f"cannot read {path} ({error}); the archive may be truncated: download or compress it again"
        ) from None
    return lines


def _decoded(raw: bytes, path: Path, number: int) -> str:
    try:
        line = raw.decode("utf-8-sig" if number == 1 else "utf-8").rstrip("\r\n")  # -sig: drop a leading BOM
    except UnicodeDecodeError as error:
        raise CorpusError(
            f"{path}:{number}: not UTF-8 text (byte {error.start} of the line: {error.reason}); "
            "convert the file, e.g. iconv -f latin1 -t utf-8, or fix that line"
        ) from None
    if "\x00" in line:
        raise CorpusError(f"{path}:{number}: holds NUL bytes: the file is binary, not a text file of sentences")
    return line


@register("dataset", "parallel")
class ParallelDataset(Dataset):
    """Parallel text from files: one file per language and split (Multi30k style), or one TSV per split."""

    @dataclass
    class Config:
        root: str = ""  # folder holding the corpus files
        src_lang: str = "de"  # source language suffix in file names (files format)
        tgt_lang: str = "en"  # target language suffix in file names (files format)
        train: str = "train"  # file stem of the training split
        val: str = "val"  # file stem of the validation split
        test: str = "test_2016_flickr"  # file stem of the test split
        format: Format = Format.auto  # auto | files | tsv (auto: tsv if {root}/{train}.tsv exists)
        limit: int = 0  # keep only the first N pairs of each split (0: all), for quick runs
        lowercase: bool = False  # lowercase both sides

        def __post_init__(self) -> None:
            one_of(self, "format", Format)
            at_least(self, "limit", 0, "0 keeps every pair")

    @property
    def root(self) -> Path:
        if not self.cfg.root:
            raise CorpusError("dataset.root is not set; pass dataset.root=/path/to/corpus")
        root = Path(self.cfg.root).expanduser()
        if not root.is_dir():
            raise CorpusError(
                f"dataset.root {root} is not a folder; pass dataset.root=/path/to/corpus "
                "(presets read ${paths.data}: set ZOO_DATA_DIR)"
            )
        return root

    def layout(self) -> str:
        """``files`` or ``tsv``: the configured format, with ``auto`` resolved; a folder holding both is ambiguous."""
        if self.cfg.format != "auto":
            return self.cfg.format
        tsv = (self.root / f"{self.cfg.train}.tsv").is_file()
        files = any((self.root / f"{self.cfg.train}.{self.cfg.src_lang}{gz}").is_file() for gz in ("", ".gz"))
        if tsv and files:
            raise CorpusError(
                f"{self.root} holds both {self.cfg.train}.tsv and {self.cfg.train}.{self.cfg.src_lang} files; "
                "choose one with dataset.format=tsv or dataset.format=files"
            )
        return "tsv" if tsv else "files"

    def files(self) -> list[Path]:
        stems = (self.cfg.train, self.cfg.val, self.cfg.test)
        if self.layout() == "tsv":
            return [self._tsv(stem) for stem in stems]
        return [self._find(stem, lang) for stem in stems for lang in (self.cfg.src_lang, self.cfg.tgt_lang)]

    def splits(self) -> dict[str, list[Item]]:
        stems = {"train": self.cfg.train, "val": self.cfg.val, "test": self.cfg.test}
        read = self._read_tsv if self.layout() == "tsv" else self._read_files
        return {split: self._clean(split, stem, *read(stem)) for split, stem in stems.items()}

    def _read_files(self, stem: str) -> tuple[list[tuple[str, str]], str]:
        paths = [self._find(stem, lang) for lang in (self.cfg.src_lang, self.cfg.tgt_lang)]
        sources, targets = (read_lines(p) for p in paths)
        if len(sources) != len(targets):
            raise CorpusError(
                f"{paths[0]} has {len(sources)} lines but {paths[1]} has {len(targets)}; "
                "the files must be line-aligned translations"
            )
        return list(zip(sources, targets)), f"{paths[0]} + {paths[1]}"

    def _find(self, stem: str, lang: str) -> Path:
        plain = self.root / f"{stem}.{lang}"
        for path in (plain, plain.with_name(plain.name + ".gz")):
            if path.is_file():
                return path
        raise CorpusError(f"missing {plain} (or {plain}.gz); check dataset.root, the split names and src_lang/tgt_lang")

    def _tsv(self, stem: str) -> Path:
        path = self.root / f"{stem}.tsv"
        if not path.is_file():
            raise CorpusError(f"missing {path}; check dataset.root and the split names (or set dataset.format=files)")
        return path

    def _read_tsv(self, stem: str) -> tuple[list[tuple[str, str]], str]:
        path = self._tsv(stem)
        pairs = []
        for number, line in enumerate(read_lines(path), start=1):
            if not line.strip():
                pairs.append(("", ""))  # a blank line: an empty pair, dropped like the others
                continue
            fields = line.split("\t")
            if len(fields) != 2:
                raise CorpusError(
                    f"{path}:{number}: expected source<TAB>target, found {len(fields)} tab-separated fields"
                )
            pairs.append((fields[0], fields[1]))
        return pairs, str(path)

    def _clean(self, split: str, stem: str, pairs: list[tuple[str, str]], origin: str) -> list[Item]:
        """Strip, optionally lowercase, drop pairs with an empty side, apply ``limit``.
        An item's id is ``stem:line`` (1-based), so it points back into the files."""
        examples = []
        for line, (source, target) in enumerate(pairs, start=1):
            source, target = source.strip(), target.strip()
            if self.cfg.lowercase:
                source, target = source.lower(), target.lower()
            if source and target:
                examples.append(Item(f"{stem}:{line}", source, (target,)))
        dropped = len(pairs) - len(examples)
        if dropped:
            log.warning("%s split: dropped %d of %d pairs with an empty side (%s)", split, dropped, len(pairs), origin)
        if not examples:
            raise CorpusError(f"the {split} split has no sentence pairs ({origin}); check that the files are not empty")
        if self.cfg.limit:
            examples = examples[: self.cfg.limit]
        return examples
