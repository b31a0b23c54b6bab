"""The bad-input battery, first part: config values, data files, checkpoints, command arguments, plugins and run
directories. What every case must show, and how it runs, is in ``helpers/battery.py``."""

from __future__ import annotations

import gzip
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers.battery import TRAIN_TINY, Case, assert_refused, run_copy_with, zoo_process

pytestmark = pytest.mark.slow


def corpus(root: Path, lines: int = 4, **replace: bytes) -> None:
    """A Multi30k-style corpus in ``root`` (train/val/test_2016_flickr x de/en); ``replace`` gives a file's bytes."""
    root.mkdir(parents=True, exist_ok=True)
    for split in ("train", "val", "test_2016_flickr"):
        for lang in ("de", "en"):
            name = f"{split}.{lang}"
            data = replace.get(name.replace(".", "_"), "".join(f"{lang} satz {i}\n" for i in range(lines)).encode())
            (root / name).write_bytes(data)


def corpus_files(**replace: bytes) -> Callable[[Path], None]:
    return lambda here: corpus(here / "data", **replace)


def truncated_gzip(here: Path) -> None:
    corpus(here / "data")
    (here / "data" / "train.de").unlink()
    whole = gzip.compress(b"".join(b"ein satz %d\n" % i for i in range(500)))
    (here / "data" / "train.de.gz").write_bytes(whole[: len(whole) // 2])


def mixed_formats(here: Path) -> None:
    corpus(here / "data")
    for split in ("train", "val", "test_2016_flickr"):
        (here / "data" / f"{split}.tsv").write_text("ein satz\ta sentence\n")


def file_at(name: str, data: bytes) -> Callable[[Path], None]:
    def write(here: Path) -> None:
        (here / name).parent.mkdir(parents=True, exist_ok=True)
        (here / name).write_bytes(data)

    return write


def split_file(data: bytes) -> Callable[[Path], None]:
    """A Karpathy split file with these bytes beside an empty image folder."""

    def write(here: Path) -> None:
        (here / "images").mkdir()
        (here / "split.json").write_bytes(data)

    return write


def plugin_folder(source: str) -> Callable[[Path], None]:
    return file_at("my_plugins/broken.py", source.encode())


def truncate_checkpoint(here: Path) -> None:
    best = here / "run" / "checkpoints" / "best.ckpt"
    best.write_bytes(best.read_bytes()[:5000])


TRAIN = ["train", *TRAIN_TINY]
PARALLEL = [
    "train",
    "dataset=parallel",
    "dataset.root=data",
    "trainer.max_epochs=1",
    "trainer.enable_progress_bar=false",
]
KARPATHY = [
    "train",
    "task=captioning",
    "dataset=karpathy",
    "dataset.split_file=split.json",
    "dataset.images=images",
    "trainer.max_epochs=1",
    "trainer.enable_progress_bar=false",
]
ANY_ENCODER = ["train", "experiment=smoke", "trainer.enable_progress_bar=false"]  # no encoder-specific override

CASES = [
    # ----- config values: unknown choices, wrong types, out of range, renamed, sizes that do not fit
    Case("config", [*TRAIN, "decode.strategy=foo"], "decode.strategy"),
    Case("config", [*TRAIN, "decode.beam_size=0"], "decode.beam_size"),
    Case("config", [*TRAIN, "decode.temperature=0"], "decode.temperature"),
    Case("config", [*TRAIN, "decode.max_len_ratio=0"], "decode.max_len_ratio"),
    Case("config", [*TRAIN, "decode.top_p=1.5"], "decode.top_p"),
    Case("config", [*TRAIN, "decode.beam_size=many"], "decode.beam_size"),
    Case("config", [*TRAIN, "trainer.max_epochs=0"], "trainer.max_epochs"),
    Case("config", [*TRAIN, "trainer.cpu_threads=-3"], "trainer.cpu_threads"),
    Case("config", [*TRAIN, "trainer.patience=-1"], "trainer.patience"),
    Case("config", [*TRAIN, "tokenizer.vocab_size=0"], "tokenizer.vocab_size"),
    Case("config", [*TRAIN, "samples=-1"], "samples"),
    Case("config", [*TRAIN, "latency_items=-1"], "latency_items"),
    Case("config", [*TRAIN, "seed=abc"], "seed"),
    Case("config", [*TRAIN, "encoder=grux"], "grux"),
    Case("config", [*TRAIN, "attention=dott"], "dott"),
    Case("config", [*TRAIN, "posenc=rope2"], "rope2"),
    Case("config", [*TRAIN, "task=summarise"], "summarise"),
    Case("config", [*TRAIN, "dataset=wmt99"], "wmt99"),
    Case("config", [*TRAIN, "tokenizer=sentencepiece9"], "sentencepiece9"),
    Case("config", [*TRAIN, "encoder.hidden_size=abc"], "encoder.hidden_size"),
    Case("config", [*TRAIN, "encoder.hidden_size=-5"], "hidden_size"),
    Case("config", [*TRAIN, "encoder.num_layers=0"], "num_layers"),
    Case("config", [*TRAIN, "encoder.bogus=1"], "bogus"),
    Case("config", [*TRAIN, "+ckpt_path=last.ckpt"], "ckpt_path"),
    Case("config", [*TRAIN, "optim.lr=-1"], "optim.lr"),
    Case("config", [*TRAIN, "optim.lr=fast"], "optim.lr"),
    Case("config", [*TRAIN, "optim.label_smoothing=1.5"], "label_smoothing"),
    Case("config", [*TRAIN, "data.max_tokens=0"], "max_tokens"),
    Case("config", [*TRAIN, "data.joint_vocab=true"], "task.joint_vocab"),
    Case("config", [*TRAIN, "experiment=multi30k_gru"], "model=multi30k_gru"),
    Case("config", [*TRAIN, "model=multi30k_transformer", "experiment=multi30k"], "drop it"),
    Case("config", [*TRAIN, "model=multi30k_gla", "experiment=multi30k"], "drop it"),
    Case("config", TRAIN, "ZOO_CPU_KERNELS=maybe: write ZOO_CPU_KERNELS=on", env={"ZOO_CPU_KERNELS": "maybe"}),
    Case("config", ["train", "-m", *TRAIN_TINY, "model=gru,gur"], "gur"),
    Case("config", [*TRAIN, "metrics=[bleu,nosuch]"], "nosuch"),
    Case("config", [*TRAIN, "monitor=nosuch"], "nosuch"),
    Case("config", [*ANY_ENCODER, "encoder=transformer", "encoder.d_model=30", "encoder.heads=4"], "heads"),
    Case("config", [*ANY_ENCODER, "encoder=transformer", "encoder.heads=0"], "heads"),
    Case("config", [*ANY_ENCODER, "model=mamba", "decoder.cross_every=5"], "places no layer in a stack of 2 blocks"),
    Case("config", [*ANY_ENCODER, "model=s4d", "decoder.prefix=none"], "reads nothing of the source"),
    Case("config", [*TRAIN, "trainer.budget_flops=inf"], "budget_flops=inf must be in"),
    Case("config", [*TRAIN, "frontend=patches"], "frontend"),
    Case("config", [*ANY_ENCODER, "task=captioning", "frontend=features"], "task.features"),
    Case("config", [*TRAIN, "dataset=scenes"], "dataset"),
    Case("config", ["train", "-m", *TRAIN_TINY, "encoder.hidden_size=32,abc"], "hidden_size"),
    Case("config", [*TRAIN, "resume_mode=sometimes"], "resume_mode"),
    Case("config", [*TRAIN, "trainer.precision=16-mixed"], "trainer.precision"),
    Case("config", [*TRAIN, "trainer.num_nodes=0"], "trainer.num_nodes"),
    Case("config", [*TRAIN, "trainer.average_last=-1"], "trainer.average_last"),
    Case("config", [*TRAIN, "scst.samples=0"], "scst.samples"),
    Case("config", [*TRAIN, "scst.baseline=mean", "scst.samples=1"], "baseline=mean"),
    Case("config", [*TRAIN, "scst.baseline=best"], "scst.baseline"),
    Case("config", [*TRAIN, "scst.enabled=true", "scst.metric=cider"], "cider_d"),
    Case("config", [*TRAIN, "init_from=nowhere"], "init_from=nowhere"),
    Case("config", [*TRAIN, "init_from={run}"], "dataset.train_size"),
    Case("config", [*TRAIN, "-m", "hydra/launcher=rocket"], "rocket"),
    # ----- data: missing, mixed formats, mismatched, empty, binary, wrong encoding, truncated archive
    Case("data", [*PARALLEL], "data", files=None),
    Case("data", [*PARALLEL], "train.en", files=corpus_files(train_en=b"one\ntwo\n")),
    Case("data", [*PARALLEL], "train", files=corpus_files(train_de=b"", train_en=b"")),
    Case("data", [*PARALLEL], "train.de", files=corpus_files(train_de=bytes(range(256)) * 8)),
    Case("data", [*PARALLEL], "train.de", files=corpus_files(train_de="Grüße aus Köln\n".encode("latin-1") * 4)),
    Case("data", [*PARALLEL], "train.de.gz", files=truncated_gzip),
    Case("data", [*PARALLEL], "tsv", files=mixed_formats),
    Case("data", [*PARALLEL, "dataset.src_lang=fr"], "train.fr", files=corpus_files()),
    Case("data", KARPATHY, "split.json", files=lambda here: (here / "images").mkdir()),
    Case("data", KARPATHY, "split.json", files=split_file(b'{"images": [')),
    Case(
        "data",
        KARPATHY,
        "a.jpg",
        files=split_file(
            json.dumps(
                {
                    "images": [
                        {
                            "filename": "a.jpg",
                            "split": "train",
                            "sentences": [{"tokens": ["a", "dog"], "raw": "A dog."}],
                        }
                    ]
                }
            ).encode()
        ),
    ),
    Case("data", ["train", "task=captioning", "frontend=features", "task.features=missing.pt"], "missing.pt"),
    Case(
        "data",
        ["train", "task=captioning", "frontend=features", "task.features=bad.pt"],
        "bad.pt",
        files=file_at("bad.pt", b"not a torch file"),
    ),
    # ----- checkpoints: missing, empty, truncated, not a checkpoint, from a missing plugin
    Case("checkpoint", ["translate", "nowhere", "ein satz"], "nowhere"),
    Case(
        "checkpoint",
        ["translate", "run", "ein satz"],
        "best.ckpt",
        copy="finished_run",
        files=run_copy_with("checkpoints/best.ckpt", None),
    ),
    Case(
        "checkpoint",
        ["translate", "run", "ein satz"],
        "best.ckpt",
        copy="finished_run",
        files=run_copy_with("checkpoints/best.ckpt", b""),
    ),
    Case("checkpoint", ["translate", "run", "ein satz"], "best.ckpt", copy="finished_run", files=truncate_checkpoint),
    Case(
        "checkpoint",
        ["translate", "{run}", "--checkpoint", "notes.txt", "ein satz"],
        "notes.txt",
        files=file_at("notes.txt", b"my notes\n"),
    ),
    Case("checkpoint", ["translate", "{run}", "--checkpoint", "gone.ckpt", "ein satz"], "gone.ckpt"),
    Case(
        "checkpoint",
        ["predict", "run", "3 1 2"],
        "sorting",
        copy="plugin_run",
        files=lambda here: shutil.rmtree(here / "run" / "plugins"),
    ),
    Case("checkpoint", ["caption", "{run}", "image.png"], "caption"),
    Case(
        "checkpoint",
        [*TRAIN, "init_from=run"],
        "best.ckpt cannot be loaded",
        copy="finished_run",
        files=truncate_checkpoint,
    ),
    # ----- the other commands' arguments
    Case("cli", ["trian"], "train"),
    Case("cli", ["train", "-m", "seed=1,2", "--cfg", "job"], "--multirun and --cfg"),
    Case("cli", ["--bogus"], "--bogus"),
    Case("cli", ["translate"], "run_dir"),
    Case("cli", ["translate", "{run}", "--beam-size", "0", "ein satz"], "beam"),
    Case("cli", ["translate", "{run}", "--decode", "foo", "ein satz"], "foo"),
    Case("cli", ["translate", "{run}", "--temperature", "0", "--decode", "sample", "ein satz"], "temperature"),
    Case("cli", ["translate", "{run}", "--threads", "0", "ein satz"], "threads"),
    Case("cli", ["translate", "{run}", "--frobnicate", "ein satz"], "--frobnicate"),
    Case("cli", ["caption", "{run}"], "image"),
    Case("cli", ["attention", "{run}"], "sentence"),
    Case("cli", ["list", "encoders"], "encoders"),
    Case("cli", ["compare", "nowhere"], "nowhere"),
    Case("cli", ["compare", "{run}", "--format", "xml"], "xml"),
    Case("cli", ["compare", "{run}", "--sort", "nosuch"], "nosuch"),
    Case("cli", ["compare", "{run}", "--baseline", "nosuch"], "nosuch"),
    Case("cli", ["dashboard", "nowhere"], "nowhere"),
    Case("cli", ["dashboard", "{run}", "--port", "99999"], "port"),
    Case("cli", ["features", "out.txt", "frontend=pretrained"], "out.txt"),
    Case("cli", ["features", "mine.npy", "frontend=pretrained"], "mine.npy", files=file_at("mine.npy", b"the user's")),
    Case("cli", ["features", "out.npy", "frontend=cnn"], "backbone"),
    Case("cli", ["prepare", "task=captioning"], "zoo features"),
    Case("cli", ["prepare", "dataset=parallel", "dataset.root=nowhere"], "nowhere"),
    Case("cli", ["average", "{run}"], "kept no weight snapshots"),
    # ----- plugins: missing folder, import error, syntax error, duplicate name
    Case("plugin", [*TRAIN, "plugin_dirs=[my_plugins]"], "my_plugins"),
    Case(
        "plugin",
        [*TRAIN, "plugin_dirs=[my_plugins]"],
        "broken.py",
        files=plugin_folder("import no_such_module_anywhere\n"),
    ),
    Case("plugin", [*TRAIN, "plugin_dirs=[my_plugins]"], "broken.py", files=plugin_folder("def oops(:\n")),
    Case(
        "plugin",
        [*TRAIN, "plugin_dirs=[my_plugins]"],
        "dot",
        files=plugin_folder(
            "from zoo.registry import register\nfrom zoo.contracts import Attention\n\n"
            "@register('attention', 'dot')\nclass Dot(Attention):\n    pass\n"
        ),
    ),
    # ----- run directories: an existing run, a foreign folder, a locked one, resume mismatches
    Case("run dir", [*TRAIN, "hydra.run.dir={run}"], "run"),
    Case("run dir", [*TRAIN, "hydra.run.dir=mine"], "mine", files=file_at("mine/config.yaml", b"my: own config\n")),
    Case("run dir", [*TRAIN, "hydra.run.dir=busy"], "another zoo process", locked="busy"),
    Case("run dir", ["train", "resume=run", "encoder=lstm"], "encoder", copy="finished_run"),
    Case("run dir", ["train", "resume=nowhere"], "nowhere"),
    Case("run dir", [*TRAIN, "hydra.run.dir=new", "resume_mode=must"], "new"),
    Case(
        "run dir",
        ["train", "-m", *TRAIN_TINY, "seed=1,2", "hydra.sweep.dir=mine"],
        "mine",
        files=file_at("mine/notes.txt", b"my notes\n"),
    ),
]


# A case copying the session's plugin_run goes to the worker of its other user: the run is made once.
@pytest.mark.parametrize(
    "case",
    [pytest.param(c, marks=pytest.mark.xdist_group("plugin_run")) if c.copy == "plugin_run" else c for c in CASES],
    ids=lambda case: case.id,
)
def test_bad_input_is_one_early_line_and_changes_nothing(case, tmp_path, finished_run, request):
    here = tmp_path / "case"
    here.mkdir()
    assert_refused(case, here, finished_run, request)


def test_the_battery_is_large_and_listed_in_the_docs():
    """At least 150 distinct mistakes over every area, each in docs/bad_inputs.md (tests/helpers/battery_table.py)."""
    import importlib

    from helpers.battery import battery_cases, printable

    here = Path(__file__).parent
    files = sorted(here.glob("test_bad_inputs*.py"))
    cases = battery_cases([importlib.import_module(f"{__package__}.{path.stem}") for path in files])
    counts = {
        category: sum(case.category == category for case in cases)
        for category in (
            "config",
            "data",
            "checkpoint",
            "cli",
            "plugin",
            "run dir",
            "inference",
            "bounds",
            "resume",
            "messages",
        )
    }
    assert len(cases) >= 150 and all(counts.values()), counts
    table = (here.parents[1] / "docs" / "bad_inputs.md").read_text()
    unlisted = [
        case.id
        for case in cases
        if f"`{printable(case.id.split(': ', 1)[1]).replace('|', chr(92) + '|')}`" not in table
    ]
    assert not unlisted, f"not in docs/bad_inputs.md (run tests/helpers/battery_table.py): {unlisted[:5]}"


def test_verbose_adds_the_traceback(tmp_path):
    status, _, err = zoo_process(["--verbose", "train", "decode.beam_size=0"], tmp_path)
    assert status == 1
    assert "Traceback (most recent call last)" in err and err.rstrip().splitlines()[-1].startswith("zoo: error: ")
