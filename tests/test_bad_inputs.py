"""The bad-input battery: every mistake a user makes gets one clear line, early, and changes nothing.

Each case is a command line plus the files it finds. Every case asserts:
- a non-zero exit status;
- exactly one line on stderr, ``zoo: error: ...``, naming what is wrong (the case's ``says``);
- no training started (no checkpoint, no metrics written anywhere);
- every file that existed before the command (runs, checkpoints, the user's files) is unchanged,
  and a refused command leaves no new run behind.

Each command runs in its own process, forked from a server that has imported zoo, torch and
Lightning once (:func:`zoo_process`): a real process with its own exit status and stderr, at a
fraction of a fresh interpreter's start-up time.
"""
from __future__ import annotations

import gzip
import hashlib
import json
import multiprocessing
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

from conftest import TINY, run_zoo
from test_readme import fenced_block_after
from zoo.training.rundir import Lock

TRAIN_TINY = [*TINY, "dataset.train_size=64", "dataset.val_size=8", "dataset.test_size=8"]


# ---------------------------------------------------------------------------------------------- processes
def _zoo_main(args: list[str], cwd: str, env: dict[str, str], out: str, err: str) -> None:
    """The body of one forked command: ``zoo ARGS`` in ``cwd`` with stdout and stderr in files."""
    os.chdir(cwd)
    os.environ.update(env)
    for fd, path in ((1, out), (2, err)):
        os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), fd)
    from zoo.cli import main

    try:
        main(args)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()


_server: multiprocessing.context.ForkServerContext | None = None


def zoo_process(args: list[str], cwd: Path) -> tuple[int, str, str]:
    """Run ``zoo ARGS`` in a fresh process (forked from a preloaded server); its (exit status, stdout, stderr)."""
    global _server
    if _server is None:
        _server = multiprocessing.get_context("forkserver")
        _server.set_forkserver_preload(["test_bad_inputs", "zoo.cli", "zoo.training.entry", "zoo.training.run",
                                        "zoo.inference.predictor"])
    out, err = cwd.parent / f".{cwd.name}.out", cwd.parent / f".{cwd.name}.err"
    env = {"WANDB_MODE": "offline", "WANDB_SILENT": "true"}
    process = _server.Process(target=_zoo_main, args=(list(args), str(cwd), env, str(out), str(err)))
    process.start()
    process.join(timeout=300)
    assert process.exitcode is not None, f"zoo {' '.join(args)} did not end within 300 s"
    return process.exitcode, out.read_text(), err.read_text()


def snapshot(*folders: Path) -> dict[str, str]:
    """Every file under ``folders``: path -> SHA-256 of its bytes."""
    return {str(path): hashlib.sha256(path.read_bytes()).hexdigest()
            for folder in folders if folder.exists() for path in sorted(folder.rglob("*")) if path.is_file()}


# ---------------------------------------------------------------------------------------------- shared runs
@pytest.fixture(scope="module")
def finished_run(tmp_path_factory) -> Path:
    """A tiny finished translation run (read-only for every case: each case checks it stays as it was)."""
    work = tmp_path_factory.mktemp("finished")
    run_zoo("train", *TRAIN_TINY, f"hydra.run.dir={work / 'run'}", cwd=work)
    return work / "run"


@pytest.fixture(scope="module")
def plugin_run(tmp_path_factory) -> Path:
    """A tiny run trained with the README's folder plugin (the `distance` scorer), whose plugin folder is gone since."""
    work = tmp_path_factory.mktemp("plugin")
    (work / "my_plugins").mkdir()
    (work / "my_plugins" / "distance.py").write_text(fenced_block_after("<!-- readme-test: file my_plugins/distance.py -->"))
    run_zoo("train", *TRAIN_TINY, "plugin_dirs=[my_plugins]", "attention=distance", f"hydra.run.dir={work / 'run'}",
            cwd=work)
    shutil.rmtree(work / "my_plugins")
    return work / "run"


# ---------------------------------------------------------------------------------------------- the cases
@dataclass
class Case:
    """``zoo ARGS`` run in a fresh folder that ``files`` fills first; stderr's one line must contain ``says``.

    In ``args``, ``{run}`` is a finished run. ``copy`` copies a shared run into the folder as ``run``
    first (``finished_run`` or ``plugin_run``), so ``files`` may damage the copy; ``locked`` names a
    folder that another process (this test) holds the run-directory lock of while the command runs.
    """

    category: str
    args: list[str]
    says: str
    files: Callable[[Path], None] | None = None
    copy: str | None = None
    locked: str | None = None

    def __post_init__(self) -> None:
        shown = [arg for arg in self.args if arg not in TRAIN_TINY]
        self.id = f"{self.category}: zoo {' '.join(shown)}"[:100]


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


def run_copy_with(path: str, data: bytes | None) -> Callable[[Path], None]:
    """Change one file of the copied run (``data`` None: delete it)."""
    def change(here: Path) -> None:
        target = here / "run" / path
        if data is None:
            target.unlink()
        else:
            target.write_bytes(data)
    return change


def truncate_checkpoint(here: Path) -> None:
    best = here / "run" / "checkpoints" / "best.ckpt"
    best.write_bytes(best.read_bytes()[:5000])


TRAIN = ["train", *TRAIN_TINY]
PARALLEL = ["train", "dataset=parallel", "dataset.root=data", "trainer.max_epochs=1", "trainer.enable_progress_bar=false"]
KARPATHY = ["train", "task=captioning", "dataset=karpathy", "dataset.split_file=split.json", "dataset.images=images",
            "trainer.max_epochs=1", "trainer.enable_progress_bar=false"]
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
    Case("config", ["train", "-m", *TRAIN_TINY, "model=gru,gur"], "gur"),
    Case("config", [*TRAIN, "metrics=[bleu,nosuch]"], "nosuch"),
    Case("config", [*TRAIN, "monitor=nosuch"], "nosuch"),
    Case("config", [*ANY_ENCODER, "encoder=transformer", "encoder.d_model=30", "encoder.heads=4"], "heads"),
    Case("config", [*ANY_ENCODER, "encoder=transformer", "encoder.heads=0"], "heads"),
    Case("config", [*TRAIN, "frontend=patches"], "frontend"),
    Case("config", [*ANY_ENCODER, "task=captioning", "frontend=features"], "task.features"),
    Case("config", [*TRAIN, "dataset=scenes"], "dataset"),
    Case("config", ["train", "-m", *TRAIN_TINY, "encoder.hidden_size=32,abc"], "hidden_size"),
    Case("config", [*TRAIN, "resume_mode=sometimes"], "resume_mode"),
    Case("config", [*TRAIN, "trainer.precision=16-mixed"], "trainer.precision"),
    Case("config", [*TRAIN, "trainer.num_nodes=0"], "trainer.num_nodes"),
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
    Case("data", KARPATHY, "a.jpg", files=split_file(json.dumps({"images": [
        {"filename": "a.jpg", "split": "train", "sentences": [{"tokens": ["a", "dog"], "raw": "A dog."}]}]}).encode())),
    Case("data", ["train", "task=captioning", "frontend=features", "task.features=missing.pt"], "missing.pt"),
    Case("data", ["train", "task=captioning", "frontend=features", "task.features=bad.pt"], "bad.pt",
         files=file_at("bad.pt", b"not a torch file")),
    # ----- checkpoints: missing, empty, truncated, not a checkpoint, from a missing plugin
    Case("checkpoint", ["translate", "nowhere", "ein satz"], "nowhere"),
    Case("checkpoint", ["translate", "run", "ein satz"], "best.ckpt", copy="finished_run",
         files=run_copy_with("checkpoints/best.ckpt", None)),
    Case("checkpoint", ["translate", "run", "ein satz"], "best.ckpt", copy="finished_run",
         files=run_copy_with("checkpoints/best.ckpt", b"")),
    Case("checkpoint", ["translate", "run", "ein satz"], "best.ckpt", copy="finished_run", files=truncate_checkpoint),
    Case("checkpoint", ["translate", "{run}", "--checkpoint", "notes.txt", "ein satz"], "notes.txt",
         files=file_at("notes.txt", b"my notes\n")),
    Case("checkpoint", ["translate", "{run}", "--checkpoint", "gone.ckpt", "ein satz"], "gone.ckpt"),
    Case("checkpoint", ["translate", "run", "ein satz"], "distance", copy="plugin_run",
         files=lambda here: shutil.rmtree(here / "run" / "plugins")),
    Case("checkpoint", ["caption", "{run}", "image.png"], "caption"),
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
    Case("cli", ["features", "mine.pt", "frontend=pretrained"], "mine.pt", files=file_at("mine.pt", b"the user's own")),
    Case("cli", ["features", "out.pt", "frontend=cnn"], "backbone"),
    # ----- plugins: missing folder, import error, syntax error, duplicate name
    Case("plugin", [*TRAIN, "plugin_dirs=[my_plugins]"], "my_plugins"),
    Case("plugin", [*TRAIN, "plugin_dirs=[my_plugins]"], "broken.py",
         files=plugin_folder("import no_such_module_anywhere\n")),
    Case("plugin", [*TRAIN, "plugin_dirs=[my_plugins]"], "broken.py", files=plugin_folder("def oops(:\n")),
    Case("plugin", [*TRAIN, "plugin_dirs=[my_plugins]"], "dot", files=plugin_folder(
        "from zoo.registry import register\nfrom zoo.contracts import Scorer\n\n"
        "@register('attention', 'dot')\nclass Dot(Scorer):\n    pass\n")),
    # ----- run directories: an existing run, a foreign folder, a locked one, resume mismatches
    Case("run dir", [*TRAIN, "hydra.run.dir={run}"], "run"),
    Case("run dir", [*TRAIN, "hydra.run.dir=mine"], "mine", files=file_at("mine/config.yaml", b"my: own config\n")),
    Case("run dir", [*TRAIN, "hydra.run.dir=busy"], "another zoo process", locked="busy"),
    Case("run dir", ["train", "resume=run", "encoder=lstm"], "encoder", copy="finished_run"),
    Case("run dir", ["train", "resume=nowhere"], "nowhere"),
    Case("run dir", [*TRAIN, "hydra.run.dir=new", "resume_mode=must"], "new"),
    Case("run dir", ["train", "-m", *TRAIN_TINY, "seed=1,2", "hydra.sweep.dir=mine"], "mine",
         files=file_at("mine/notes.txt", b"my notes\n")),
]


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_bad_input_is_one_early_line_and_changes_nothing(case, tmp_path, finished_run, request):
    here = tmp_path / "case"
    here.mkdir()
    if case.copy:
        shutil.copytree(request.getfixturevalue(case.copy), here / "run")
    if case.files is not None:
        case.files(here)
    holder = None
    if case.locked:
        (here / case.locked).mkdir()
        holder = Lock(here / case.locked, "run directory")
    args = [arg.format(run=finished_run) for arg in case.args]
    before = snapshot(here, finished_run)

    status, out, err = zoo_process(args, here)
    after = snapshot(here, finished_run)
    if holder is not None:
        holder.release()

    lines = [line for line in err.splitlines() if line.strip()]
    assert status != 0, f"accepted: {out[-500:]}{err[-500:]}"
    assert len(lines) == 1 and lines[0].startswith("zoo: error: "), f"not one error line:\n{err[-3000:]}"
    assert case.says.lower() in lines[0].lower(), f"does not name {case.says!r}: {lines[0]}"
    assert {path: digest for path, digest in after.items() if path in before} == before, "a file changed"
    new = [path for path in after if path not in before]
    assert not [p for p in new if p.endswith((".ckpt", "metrics.csv"))], f"training started: {new}"
    assert not new, f"a refused command left files behind: {new}"


def test_the_battery_covers_every_category():
    counts = {category: sum(case.category == category for case in CASES)
              for category in ("config", "data", "checkpoint", "cli", "plugin", "run dir")}
    assert sum(counts.values()) >= 60 and all(counts.values()), counts


def test_verbose_adds_the_traceback(tmp_path):
    status, _, err = zoo_process(["--verbose", "train", "decode.beam_size=0"], tmp_path)
    assert status == 1
    assert "Traceback (most recent call last)" in err and err.rstrip().splitlines()[-1].startswith("zoo: error: ")
