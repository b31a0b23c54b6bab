"""The ``parallel`` dataset: Multi30k-style files (plain or .gz) and TSV files, with clear errors."""

import gzip
import logging

import pytest

from zoo import registry
from zoo.config.checks import ConfigError
from zoo.registry import discovery
from zoo_plugins.datasets.parallel import CorpusError

discovery.discover()

DE = {"train": ["ein Hund", "eine Katze", "zwei Männer"], "val": ["ein Mann"], "test_2016_flickr": ["eine Frau"]}
EN = {"train": ["a dog", "a cat", "two men"], "val": ["a man"], "test_2016_flickr": ["a woman"]}


def write(path, lines, compress=False):
    text = "".join(line + "\n" for line in lines)
    if compress:
        with gzip.open(f"{path}.gz", "wt", encoding="utf-8") as handle:
            handle.write(text)
    else:
        path.write_text(text, encoding="utf-8")


def corpus(folder, compress=False):
    for split in DE:
        write(folder / f"{split}.de", DE[split], compress)
        write(folder / f"{split}.en", EN[split], compress)
    return folder


def tsv_corpus(folder, rows=None):
    for split in DE:
        write(
            folder / f"{split}.tsv",
            rows if rows and split == "train" else [f"{d}\t{e}" for d, e in zip(DE[split], EN[split])],
        )
    return folder


def pairs(items):
    """(source, reference) of each single-reference item."""
    assert all(len(item.references) == 1 for item in items)
    return [(item.source, item.references[0]) for item in items]


def splits(root, **overrides):
    return registry.build(
        "dataset", registry.default_config("dataset", "parallel", root=str(root), **overrides)
    ).splits()


@pytest.mark.parametrize("compress", [False, True])
def test_reads_plain_and_gzip_files(tmp_path, compress):
    data = splits(corpus(tmp_path, compress))
    assert pairs(data["train"]) == [(d, e) for d, e in zip(DE["train"], EN["train"])]
    assert pairs(data["val"]) == [("ein Mann", "a man")]
    assert pairs(data["test"]) == [("eine Frau", "a woman")]


def test_language_direction_limit_and_lowercase(tmp_path):
    data = splits(corpus(tmp_path), src_lang="en", tgt_lang="de", limit=2, lowercase=True)
    assert pairs(data["train"]) == [("a dog", "ein hund"), ("a cat", "eine katze")]


def test_tsv_is_detected_automatically_and_can_be_forced_off(tmp_path):
    tsv_corpus(tmp_path)
    assert pairs(splits(tmp_path)["train"]) == [(d, e) for d, e in zip(DE["train"], EN["train"])]
    assert pairs(splits(tmp_path, format="tsv")["test"]) == [("eine Frau", "a woman")]
    with pytest.raises(CorpusError, match="train.de"):
        splits(tmp_path, format="files")


def test_empty_pairs_are_dropped_and_counted(tmp_path, caplog):
    corpus(tmp_path)
    write(tmp_path / "train.de", ["ein Hund", "  ", "eine Katze", ""])
    write(tmp_path / "train.en", ["a dog", "a thing", "", ""])
    with caplog.at_level(logging.INFO):
        data = splits(tmp_path)
    assert pairs(data["train"]) == [("ein Hund", "a dog")]
    assert data["train"][0].id == "train:1", "an item's id points to its line"
    assert "dropped 3 of 4 pairs" in caplog.text


def test_blank_tsv_lines_are_dropped(tmp_path):
    tsv_corpus(tmp_path, rows=["ein Hund\ta dog", "", "x\t ", "eine Katze\ta cat"])
    assert pairs(splits(tmp_path)["train"]) == [("ein Hund", "a dog"), ("eine Katze", "a cat")]


def test_missing_root(tmp_path):
    with pytest.raises(CorpusError, match="not a folder"):
        splits(tmp_path / "nowhere")
    with pytest.raises(CorpusError, match="dataset.root is not set"):
        splits("")


def test_missing_split_file_names_the_expected_paths(tmp_path):
    corpus(tmp_path)
    (tmp_path / "val.en").unlink()
    with pytest.raises(CorpusError) as error:
        splits(tmp_path)
    assert str(tmp_path / "val.en") in str(error.value) and "val.en.gz" in str(error.value)


def test_mismatched_line_counts_name_both_files(tmp_path):
    corpus(tmp_path)
    write(tmp_path / "train.en", ["a dog", "a cat"])
    with pytest.raises(CorpusError) as error:
        splits(tmp_path)
    message = str(error.value)
    assert "train.de has 3 lines" in message and "train.en has 2" in message


def test_empty_corpus(tmp_path):
    corpus(tmp_path)
    write(tmp_path / "test_2016_flickr.de", [])
    write(tmp_path / "test_2016_flickr.en", [])
    with pytest.raises(CorpusError, match="test split has no sentence pairs"):
        splits(tmp_path)


def test_malformed_tsv_line_names_file_and_line(tmp_path):
    tsv_corpus(tmp_path, rows=["ein Hund\ta dog", "eine Katze a cat"])
    with pytest.raises(CorpusError, match=r"train\.tsv:2: expected source<TAB>target, found 1"):
        splits(tmp_path)


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"format": "csv"}, "format='csv' must be one of: auto, files, tsv"),
        ({"limit": -1}, "limit=-1 must be >= 0; 0 keeps every pair"),
    ],
)
def test_bad_settings(tmp_path, overrides, message):
    with pytest.raises(ConfigError, match=message):
        splits(corpus(tmp_path), **overrides)


def test_a_folder_with_both_layouts_is_ambiguous_until_format_says(tmp_path):
    corpus(tmp_path)
    tsv_corpus(tmp_path)
    with pytest.raises(CorpusError, match="holds both train.tsv and train.de files; choose one with dataset.format"):
        splits(tmp_path)
    assert pairs(splits(tmp_path, format="files")["val"]) == [("ein Mann", "a man")]


def test_a_byte_order_mark_is_not_glued_to_the_first_word(tmp_path):
    corpus(tmp_path)
    (tmp_path / "train.de").write_text("ein Hund\neine Katze\nzwei Männer\n", encoding="utf-8-sig")
    assert pairs(splits(tmp_path)["train"])[0] == ("ein Hund", "a dog")


@pytest.mark.parametrize(
    "damage, message",
    [
        (  # one bad line in the middle of a large file: its number is said
            lambda folder: (folder / "train.de").write_bytes(
                ("ein Hund\n" * 5000 + "Männer\n" + "ein Hund\n" * 5000).encode("latin-1")
            ),
            "train.de:5001: not UTF-8 text",
        ),
        (lambda folder: (folder / "train.de").write_bytes(b"\x00\x01\x02binary\x00\n"), "train.de:1: holds NUL bytes"),
    ],
)
def test_text_that_is_not_utf8_is_one_line_naming_the_file_and_line(tmp_path, damage, message):
    corpus(tmp_path)
    damage(tmp_path)
    with pytest.raises(CorpusError, match=message):
        splits(tmp_path)


def test_a_truncated_archive_is_one_line_naming_it(tmp_path):
    corpus(tmp_path, compress=True)
    archive = gzip.compress("".join(f"ein Hund {k * 7919 % 10007}\n" for k in range(2000)).encode())
    (tmp_path / "train.de.gz").write_bytes(archive[: len(archive) // 2])  # a download cut off half-way
    with pytest.raises(CorpusError, match=r"cannot read .*train.de.gz .*truncated"):
        splits(tmp_path)
