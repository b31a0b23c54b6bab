"""Contracts of the components around the model: tokenizers, datasets, tasks and metrics, and the
self-description every component owes ``zoo list``."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import torch

from zoo import registry
from zoo.checks.case import Case, Refused, expect
from zoo.checks.inputs import B, needs_files, small_config
from zoo.contracts import BOS, EOS, PAD, SPLITS, Item

SENTENCES = ["the cat sat on the mat", "a dog ran in the park", "the dog sat", "a cat ran on a mat"]


def check_documented(kind: str, name: str, tmp: Path) -> None:
    entry = registry.get(kind, name)
    expect(bool(entry.description), "needs a class docstring (its first line is what `zoo list` shows)")
    expect(registry.default_config(kind, name)["name"] == name, "its default config does not name it")


def check_tokenizer(name: str, tmp: Path) -> None:
    tokenizer = registry.build("tokenizer", small_config("tokenizer", name))
    tokenizer.train(SENTENCES * 3)  # every word seen several times, so no frequency cut-off drops it
    ids = tokenizer.encode(SENTENCES)
    expect(len(ids) == len(SENTENCES), f"encode() gave {len(ids)} rows for {len(SENTENCES)} texts")
    for row in ids:
        expect(bool(row), "encode() gave an empty row for a non-empty text")
        expect(all(isinstance(i, int) and 0 <= i < tokenizer.vocab_size for i in row), f"ids out of range: {row}")
        expect(not {PAD, BOS, EOS} & set(row), "encode() must not add PAD, BOS or EOS")
    expect(tokenizer.decode(ids) == SENTENCES, "decode(encode(texts)) != texts")
    expect(tokenizer.decode([[BOS, *ids[0], EOS, PAD, PAD]]) == [SENTENCES[0]], "decode() must drop special tokens")
    tokenizer.save(str(tmp / "tokenizer"))
    restored = registry.build("tokenizer", small_config("tokenizer", name))
    restored.load(str(tmp / "tokenizer"))
    expect(restored.vocab_size == tokenizer.vocab_size, "a loaded tokenizer has another vocabulary size")
    expect(restored.encode(SENTENCES) == ids, "a loaded tokenizer encodes differently")


def check_dataset(name: str, tmp: Path) -> None:
    if needs_files("dataset", name):
        raise Refused(f"dataset '{name}' reads files; check it by training on a small copy of its data")
    cfg = small_config("dataset", name)
    splits = registry.build("dataset", cfg).splits()
    expect(set(splits) == set(SPLITS), f"splits {sorted(splits)}, expected {list(SPLITS)}")
    for split, items in splits.items():
        expect(bool(items), f"the {split} split is empty")
        expect(all(isinstance(item, Item) and item.references for item in items), f"{split}: an item lacks references")
        expect(all(isinstance(ref, str) for item in items for ref in item.references), f"{split}: a non-text reference")
        expect(len({item.id for item in items}) == len(items), f"{split}: item ids are not unique")
    expect(registry.build("dataset", cfg).splits() == splits, "building the same config twice gives other items")


def build_task(name: str):
    """Task ``name`` with the default tokenizer and the frontend it chooses (else the first it can feed)."""
    task_cls = registry.get("task", name).cls
    frontend = task_cls.component_defaults.get("frontend") or next(
        (
            f
            for f in registry.names("frontend")
            if registry.get("frontend", f).cls.source_kind in task_cls.frontend_kinds
        ),
        None,
    )
    if frontend is None:
        raise Refused(f"no registered frontend reads what task '{name}' gives ({', '.join(task_cls.frontend_kinds)})")
    tokenizer = task_cls.component_defaults.get("tokenizer") or registry.kind("tokenizer").default
    return registry.build(
        "task",
        small_config("task", name),
        tokenizer=registry.default_config("tokenizer", tokenizer),
        frontend=registry.default_config("frontend", frontend),
    )


def task_items(task) -> dict:
    """Tiny splits of a registered dataset that needs no files and gives the task's source kind: the task's own
    default dataset where it has one (a tagging task needs references that tag), else the first such."""
    fitting = [
        d
        for d in registry.names("dataset")
        if not needs_files("dataset", d) and registry.get("dataset", d).cls.source_kind == task.source_kind
    ]
    fitting.sort(key=lambda d: d != task.component_defaults.get("dataset"))
    if not fitting:
        raise Refused(f"no registered dataset without files gives {task.source_kind} sources to check the task with")
    return registry.build("dataset", small_config("dataset", fitting[0])).splits()


def check_task(name: str, tmp: Path) -> None:
    task = build_task(name)
    splits = task_items(task)
    metrics = registry.names("metric")
    expect(set(task.default_metrics) <= set(metrics), f"default_metrics {task.default_metrics} are not all registered")
    expect(task.default_monitor in metrics, f"default_monitor '{task.default_monitor}' is not a registered metric")
    task.fit(splits["train"])
    task.save(tmp)
    expect(task.saved(tmp), "saved() is False right after save()")
    loaded = build_task(name)
    expect(not loaded.saved(tmp / "elsewhere"), "saved() is True for an empty folder")
    loaded.load(tmp)
    expect(loaded.source_description() == task.source_description(), "a loaded task describes its sources otherwise")
    items = splits["test"][:B]
    encoded = loaded.encode_sources([item.source for item in items])
    batch = loaded.collate_sources(encoded)
    fitted = task.collate_sources(task.encode_sources([item.source for item in items]))
    expect(torch.equal(batch, fitted), "a loaded task encodes sources unlike the fitted one")
    expect(batch.shape[0] == len(items), f"collate_sources() gave {batch.shape[0]} rows for {len(items)} items")
    expect(all(loaded.source_size(e) >= 1 for e in encoded), "source_size() below 1")
    labels = loaded.source_labels(encoded[0])  # [] when only the frontend knows the positions (an image's grid)
    expect(labels == [] or len(labels) == loaded.source_size(encoded[0]), "source_labels() and source_size() differ")
    limit = loaded.output_limit(batch)
    expect(limit.shape == (len(items),) and bool((limit >= 1).all()), "output_limit() must give each item >= 1")
    references = [item.references[0] for item in splits["train"][:B]]  # seen in training: no <unk>
    ids = loaded.encode_targets(references)
    expect(  # padding stands for a position no metric scores (task=tagging)
        all(min(set(r) - {PAD}, default=4) >= 4 and max(r) < loaded.target_vocab_size for r in ids),
        "targets must use no special ids but padding",
    )
    expect(len(loaded.decode_targets(ids)) == len(references), "decode_targets() lost rows")
    expect(isinstance(loaded.breakdowns(splits["train"][:B], references), dict), "breakdowns() must give a dict")


def check_metric(name: str, tmp: Path) -> None:
    missing = registry.get("metric", name).cls.unavailable()
    if missing:  # e.g. SPICE without its Java jars: absent with a note, never a crash
        raise Refused(missing)
    metric = registry.build("metric", registry.default_config("metric", name))
    references = [("the cat sat on the mat",), ("a dog runs in the big park", "a dog is running in the park")]
    perfect, wrong = [refs[0] for refs in references], ["zebra", "quantum"]
    better, worse = metric.corpus_score(perfect, references), metric.corpus_score(wrong, references)
    expect((better > worse) if metric.higher_is_better else (better < worse), "a perfect output does not score better")
    per_item = metric.item_scores(perfect, references)
    expect(per_item is None or len(per_item) == len(references), "item_scores() must give one score per item")
    if type(metric).scores_items():  # it can reward self-critical training: its reward scores item by item too
        rewarded = metric.reward(iter(references))(perfect, references)
        expect(len(rewarded) == len(references), "reward(train references) must score one item at a time")
    expect(metric.signature() is None or isinstance(metric.signature(), str), "signature() must be text or None")
    second = ["a dog is running in the park"]
    with_match, without = metric.corpus_score(second, references[1:]), metric.corpus_score(second, [references[1][:1]])
    expect(
        (with_match >= without) if metric.higher_is_better else (with_match <= without),
        "a hypothesis equal to one of several references must score at least as well as against the other alone",
    )


CHECKS = {
    "tokenizer": ("encode, decode, save and load", check_tokenizer),
    "dataset": ("splits and items", check_dataset),
    "task": ("fit, save, load, encode and decode", check_task),
    "metric": ("orders outputs, one score per item", check_metric),
}


def data_cases() -> list[Case]:
    cases = [
        Case("documents itself", ((entry.kind, entry.name),), partial(check_documented, entry.kind, entry.name))
        for entry in registry.entries()
    ]
    for kind, (check, function) in CHECKS.items():
        cases += [Case(check, ((kind, name),), partial(function, name)) for name in registry.names(kind)]
    return cases
