"""End-to-end: the `zoo` command in real subprocesses on tiny synthetic data."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import TINY, fork_zoo, run_zoo

pytestmark = pytest.mark.slow


def test_train_writes_a_complete_run_directory(trained_run):
    summary = json.loads((trained_run / "summary.json").read_text())
    assert summary["parameters"]["trainable"] > 0
    assert summary["tokens_per_second"] > 0
    assert summary["task"] == "translation" and summary["monitor"] == "bleu"
    assert 0 <= summary["test"]["bleu"]["score"] <= 100 and summary["test"]["bleu"]["higher_is_better"]
    assert "nrefs:1" in summary["test"]["bleu"]["signature"] and "chrf" in summary["test"]
    assert set(summary["breakdowns"]["bleu_by_length"]) <= {"1-10", "11-20", "21-30", "31-40", "41-50", "51+"}
    assert summary["components"]["encoder"]["name"] == "gru"
    assert (trained_run / "config.yaml").is_file()
    assert (trained_run / "checkpoints" / "best.ckpt").is_file()
    assert (trained_run / "tokenizers" / "source.json").is_file()
    assert (trained_run / "metrics.csv").is_file()
    assert (trained_run / "samples.txt").read_text().startswith("SRC ")
    assert summary["status"] == "finished" and summary["seed"] == 1234 and len(summary["config_key"]) == 12
    assert "experiment=smoke" in summary["overrides"]
    assert summary["latency_ms"]["greedy"] > 0 and summary["latency_ms"]["beam"] > 0
    first = json.loads((trained_run / "test_items.jsonl").read_text().splitlines()[0])
    assert set(first) == {"id", "source", "hypothesis", "references", "scores"}
    assert set(first["scores"]) == {"bleu", "chrf"}
    assert "validation epoch 0 step" in (trained_run / "train.log").read_text()


def test_translate_arguments_stdin_and_python_api_agree(trained_run, tmp_path):
    sentences = ["the dog sees the cat", "a small bird sleeps"]
    by_args = fork_zoo("translate", str(trained_run), *sentences, cwd=tmp_path).stdout.splitlines()
    by_stdin = fork_zoo(
        "translate", str(trained_run), cwd=tmp_path, stdin="\n".join(sentences) + "\n"
    ).stdout.splitlines()
    assert len(by_args) == 2 and by_args == by_stdin

    import zoo

    assert zoo.load(trained_run).translate(sentences) == by_args


def test_config_typos_are_rejected_before_training(tmp_path):
    proc = fork_zoo(
        "train",
        "attention=cosine",
        "attention.temprature=5",
        f"hydra.run.dir={tmp_path / 'r'}",
        cwd=tmp_path,
        check=False,
    )
    assert proc.returncode != 0
    assert "temprature" in proc.stderr
    assert not (tmp_path / "r" / "checkpoints").exists()


def test_unknown_component_lists_the_registered_ones(tmp_path):
    proc = fork_zoo("train", "attention=nope", cwd=tmp_path, check=False)
    assert proc.returncode != 0
    assert "additive" in proc.stderr and "cosine" in proc.stderr


def test_print_config_and_help(tmp_path):
    job = fork_zoo("train", "--cfg", "job", "encoder=lstm", "encoder.bidirectional=false", cwd=tmp_path).stdout
    assert "bidirectional: false" in job and "name: lstm" in job
    helptext = fork_zoo("train", "--help", cwd=tmp_path).stdout
    for group in ("attention", "encoder", "decoder", "posenc", "tokenizer"):
        assert group in helptext


def test_list_shows_every_kind_with_fields_and_provider(tmp_path):
    out = fork_zoo("list", cwd=tmp_path).stdout
    for kind in ("encoder:", "decoder:", "attention:", "tokenizer:", "dataset:", "frontend:", "posenc:"):
        assert kind in out
    assert "temperature: float = 10.0" in out
    assert "[zoo_plugins.attention.cosine]" in out


def test_issue_example_and_sweep(tmp_path):
    fork_zoo(
        "train",
        "encoder=lstm",
        "encoder.bidirectional=false",
        "attention=cosine",
        "tokenizer=char",
        "trainer.max_epochs=1",
        *TINY[1:],
        "experiment=smoke",
        f"hydra.run.dir={tmp_path / 'one'}",
        cwd=tmp_path,
    )
    assert json.loads((tmp_path / "one" / "summary.json").read_text())["components"]["tokenizer"]["name"] == "char"
    fork_zoo("train", "-m", "attention=dot,cosine", *TINY, f"hydra.sweep.dir={tmp_path / 'sweep'}", cwd=tmp_path)
    summaries = sorted((tmp_path / "sweep").glob("*/summary.json"))
    assert [json.loads(p.read_text())["components"]["attention"]["name"] for p in summaries] == ["dot", "cosine"]
    table = fork_zoo("compare", str(tmp_path / "sweep"), "--format", "markdown", cwd=tmp_path).stdout
    assert "| attention=dot | 1 |" in table and "| attention=cosine | 1 |" in table and "| n | bleu | chrf |" in table


def test_existing_run_directory_is_never_overwritten(trained_run, tmp_path):
    before = (trained_run / "summary.json").read_bytes()
    proc = fork_zoo("train", *TINY, f"hydra.run.dir={trained_run}", cwd=tmp_path, check=False)
    assert proc.returncode == 1
    assert "already holds a run" in proc.stderr
    assert (trained_run / "summary.json").read_bytes() == before


def test_corrupt_checkpoint_gives_one_line_error(trained_run, tmp_path):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(trained_run, copy)
    (copy / "checkpoints" / "best.ckpt").write_bytes(b"not a checkpoint")
    proc = fork_zoo("translate", str(copy), "the dog", cwd=tmp_path, check=False)
    assert proc.returncode == 1
    assert proc.stderr.startswith("zoo: error:") and "corrupt" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_missing_run_directory(tmp_path):
    proc = fork_zoo("translate", str(tmp_path / "nowhere"), "x", cwd=tmp_path, check=False)
    assert proc.returncode == 1 and "not a zoo run directory" in proc.stderr


def test_no_command_prints_usage(tmp_path):
    proc = fork_zoo(cwd=tmp_path, check=False)
    assert proc.returncode == 2 and "usage: zoo" in proc.stderr


@pytest.fixture(scope="module")
def fresh_run(tmp_path_factory) -> tuple[Path, str]:
    """A tiny run (seed 7) in a fresh interpreter, as a user starts one, and its stderr."""
    work = tmp_path_factory.mktemp("fresh")
    proc = run_zoo("train", *TINY, "seed=7", f"hydra.run.dir={work / 'run'}", cwd=work)
    return work / "run", proc.stderr


def test_a_clean_run_writes_nothing_to_stderr(fresh_run):
    """stderr is for what went wrong: a library's notice at every checkpoint (or a warning raised while importing,
    which a fresh interpreter shows) would bury a real warning."""
    assert fresh_run[1].strip() == ""


def test_same_seed_repeats_a_cpu_run_exactly(fresh_run, tmp_path):
    """The same seed in another process, with another hash seed, repeats the fresh run step for step."""
    fork_zoo("train", *TINY, "seed=7", f"hydra.run.dir={tmp_path / 'again'}", cwd=tmp_path)
    assert (tmp_path / "again" / "metrics.csv").read_text() == (fresh_run[0] / "metrics.csv").read_text()


def test_wandb_logger_writes_an_offline_run(tmp_path):
    fork_zoo(
        "train", *TINY, "logger=wandb", f"hydra.run.dir={tmp_path / 'run'}", cwd=tmp_path, env={"WANDB_MODE": None}
    )
    assert list((tmp_path / "run" / "wandb").glob("offline-run-*")), "logger=wandb must default to offline"


def test_a_failing_job_is_recorded_and_the_sweep_goes_on(tmp_path):
    """Every value passed the checks made before job 0; the second corpus fails only when its job reads it."""
    for root, english_lines in (("good", 6), ("uneven", 2)):
        for split in ("train", "val", "test_2016_flickr"):
            (tmp_path / root).mkdir(exist_ok=True)
            (tmp_path / root / f"{split}.de").write_text("".join(f"ein satz {i}\n" for i in range(6)))
            (tmp_path / root / f"{split}.en").write_text("".join(f"a sentence {i}\n" for i in range(english_lines)))
    proc = fork_zoo(
        "train",
        "-m",
        "dataset=parallel",
        "dataset.root=good,uneven",
        "trainer.max_epochs=1",
        *TINY[1:],
        f"hydra.sweep.dir={tmp_path / 'sweep'}",
        cwd=tmp_path,
        check=False,
    )
    assert proc.returncode == 1
    assert "1 job(s) of the sweep failed" in proc.stderr and "uneven/train.de has 6 lines" in proc.stderr
    good, bad = (json.loads((tmp_path / "sweep" / job / "summary.json").read_text()) for job in ("0", "1"))
    assert good["status"] == "finished" and good["schema_version"] == 1
    assert (
        bad["status"] == "failed"
        and bad["reason"].startswith("CorpusError")
        and "dataset.root=uneven" in bad["overrides"]
    )


def test_translate_stdin_keeps_one_output_line_per_input_line(trained_run, tmp_path):
    stdin = "the dog sees the cat\n\n   \na small bird sleeps\n\n"
    out = fork_zoo("translate", str(trained_run), cwd=tmp_path, stdin=stdin).stdout.split("\n")
    assert out[-1] == "" and len(out[:-1]) == 5, "five input lines, five output lines"
    assert out[1] == out[2] == out[4] == "", "a blank input line gives a blank output line"

    import zoo

    assert [out[0], out[3]] == zoo.load(trained_run).translate(["the dog sees the cat", "a small bird sleeps"])


def test_translate_an_empty_argument_prints_an_empty_line(trained_run, tmp_path):
    assert fork_zoo("translate", str(trained_run), "", cwd=tmp_path).stdout == "\n", "not an invented translation"


def test_translate_options_stand_before_and_after_sentences(trained_run, tmp_path):
    args = [
        "translate",
        "--decode",
        "beam",
        str(trained_run),
        "the dog",
        "--beam-size",
        "3",
        "a cat",
        "--batch-size",
        "1",
    ]
    out = fork_zoo(*args, cwd=tmp_path).stdout.splitlines()

    import zoo

    assert out == zoo.load(trained_run).translate(["the dog", "a cat"], strategy="beam", beam_size=3)


def test_translate_checkpoint_last_and_a_missing_one(trained_run, tmp_path):
    from zoo.inference import Predictor, RunLoadError

    out = fork_zoo("translate", str(trained_run), "the dog", "--checkpoint", "last", cwd=tmp_path).stdout.splitlines()
    assert out == Predictor.from_run(trained_run, "last").translate(["the dog"])
    proc = fork_zoo("translate", str(trained_run), "the dog", "--checkpoint", "nope.ckpt", cwd=tmp_path, check=False)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.startswith("zoo: error: checkpoint nope.ckpt") and len(proc.stderr.strip().splitlines()) == 1
    no_last = tmp_path / "no_last"
    (no_last / "checkpoints").mkdir(parents=True)
    (no_last / "config.yaml").write_text((trained_run / "config.yaml").read_text())
    with pytest.raises(RunLoadError, match=r"no checkpoint .*last\.ckpt \(it has none\)") as error:
        Predictor.from_run(no_last, "last")
    assert "\n" not in str(error.value)


def test_translate_takes_every_decoding_field_as_an_option(trained_run, tmp_path, capsys):
    import dataclasses

    from zoo.cli import predict
    from zoo.config.sections import DecodeConfig

    with pytest.raises(SystemExit) as done:
        predict.use("translate", ["--help"], "")
    helptext = capsys.readouterr().out
    assert done.value.code == 0 and "--decode" in helptext
    for field in dataclasses.fields(DecodeConfig):
        assert "--" + field.name.replace("_", "-") in helptext, f"decode.{field.name} has no option"
    fork_zoo(
        "translate",
        str(trained_run),
        "the dog",
        "--decode",
        "beam",
        "--length-penalty",
        "average",
        "--alpha",
        "0.3",
        cwd=tmp_path,
    )
    for bad, message in (
        (["--beam-size", "0"], "zoo: error: --beam-size 0 must be >= 1"),
        (["--length-penalty", "nope"], "zoo: error: argument --length-penalty: invalid choice"),
    ):
        proc = fork_zoo("translate", str(trained_run), "the dog", *bad, cwd=tmp_path, check=False)
        assert proc.returncode != 0 and proc.stdout == ""
        assert proc.stderr.startswith(message) and len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version(flag, tmp_path):
    from importlib.metadata import version

    proc = fork_zoo(flag, cwd=tmp_path)
    assert proc.stdout == f"zoo {version('zoo')}\n"


def test_the_tasks_commands_are_built_from_the_registry_and_never_hide_zoos_own(tmp_path):
    # A fresh interpreter: this one may hold tasks that other tests registered in-process.
    script = """
import json
from zoo.cli import COMMANDS, all_commands
from zoo.inference.predictor import prediction_commands
from zoo.registry.discovery import discover

listed = all_commands()  # from the registry's cached index
discover()
print(json.dumps({"listed": sorted(listed), "zoo": sorted(COMMANDS), "declared": sorted(prediction_commands())}))
"""
    proc = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, check=True)
    seen = json.loads(proc.stdout)
    declared, own = set(seen["declared"]), set(seen["zoo"])
    assert {"translate", "caption"} <= declared and not declared & own
    assert set(seen["listed"]) == own | declared
