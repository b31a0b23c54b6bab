"""Using a finished run from its directory alone, through its task."""

import copy
import shutil

import pytest
import torch
from helpers.battery import zoo_process
from helpers.images import png

import zoo
from zoo.contracts.task import TaskError
from zoo.inference import InputError, Predictor, RunLoadError
from zoo.run.checkpoints import mismatch

pytestmark = pytest.mark.slow


def test_predict_uses_the_runs_task_and_decoding_overrides(trained_run):
    predictor = zoo.load(trained_run)
    assert isinstance(predictor, Predictor) and predictor.task.registry_entry.name == "translation"
    sentences = ["the dog sees the cat", "a small bird sleeps", ""]
    greedy = predictor.predict(sentences)
    assert len(greedy) == 3 and predictor.translate(sentences) == greedy
    assert len(predictor.predict(sentences, strategy="beam", beam_size=3)) == 3


def test_a_moved_run_works_without_its_training_data(trained_run, tmp_path, monkeypatch):
    moved = tmp_path / "moved"
    shutil.copytree(trained_run, moved)
    monkeypatch.chdir(tmp_path)
    assert zoo.load(moved).predict(["the dog"]) == zoo.load(trained_run).predict(["the dog"])


def test_missing_pieces_are_one_line_errors(trained_run, tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(trained_run, broken)
    (broken / "tokenizers" / "target.json").unlink()
    with pytest.raises(TaskError, match="no trained tokenizer .*target.json"):
        zoo.load(broken)
    (broken / "checkpoints" / "best.ckpt").unlink()
    with pytest.raises(RunLoadError, match="no checkpoint"):
        zoo.load(broken)


def test_sources_that_share_their_start_get_their_own_attention_folders(trained_run):
    predictor = zoo.load(trained_run)
    start = "the old man sees the small dog near the river and"
    first, second = predictor.attention_dir(start + " smiles"), predictor.attention_dir(start + " laughs")
    assert first != second and first.parent == second.parent == trained_run / "attention"
    assert predictor.attention_dir("the dog sees the cat").name == "the_dog_sees_the_cat", (
        "short sources keep a readable name"
    )


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda data: b"", r"is empty \(0 bytes\)"),
        (lambda data: data[: len(data) // 3], r"cannot be loaded \(RuntimeError"),  # a write cut off part-way
    ],
)
def test_an_empty_or_truncated_checkpoint_is_one_clear_error(trained_run, tmp_path, damage, message):
    run = tmp_path / "run"
    shutil.copytree(trained_run, run)
    best = run / "checkpoints" / "best.ckpt"
    best.write_bytes(damage(best.read_bytes()))
    with pytest.raises(RunLoadError, match=message):
        Predictor.from_run(run)


def test_a_copy_of_the_runs_checkpoint_still_works(trained_run, tmp_path):
    copy = tmp_path / "saved.ckpt"
    shutil.copyfile(trained_run / "checkpoints" / "best.ckpt", copy)
    assert Predictor.from_run(trained_run, copy).predict(["the dog"]) == zoo.load(trained_run).predict(["the dog"])


def test_a_checkpoint_fits_a_run_with_the_same_data_and_network_whatever_its_seed(trained_run):
    stored = torch.load(trained_run / "checkpoints" / "best.ckpt", weights_only=True)["hyper_parameters"]
    predictor = zoo.load(trained_run)
    cfg = copy.deepcopy(predictor.module.cfg)
    cfg["seed"], cfg["optim"]["lr"], cfg["trainer"]["max_epochs"], cfg["decode"]["strategy"] = 7, 0.1, 9, "beam"
    assert mismatch(stored, cfg, predictor.task) is None, "how the weights were found does not matter"
    cfg["encoder"]["hidden_size"] = 64
    assert "encoder.hidden_size=32 vs the run's 64" in mismatch(stored, cfg, predictor.task)


def test_a_source_that_cannot_be_used_is_named_and_the_others_are_still_translated(trained_run):
    predictor = zoo.load(trained_run)
    good = ["the dog sees the cat", "a small bird sleeps"]
    results = list(predictor.predictions([good[0], "ab\udcffcd", " ".join(["dog"] * 10_000), good[1]]))
    assert [results[0], results[3]] == predictor.predict(good)
    assert "not valid UTF-8 (byte 0xff at column 3)" in str(results[1]) and "10000 tokens" in str(results[2])
    with pytest.raises(InputError, match=r"^source 2: the text is not valid UTF-8"):
        predictor.predict([good[0], "ab\udcffcd"])


def test_bad_stdin_lines_get_empty_output_lines_and_the_others_their_translations(trained_run, tmp_path):
    good = ["the dog sees the cat", "a small bird sleeps", "the cat"]
    long_line = " ".join(["dog"] * 10_000)
    stdin = f"{good[0]}\n".encode() + b"ab\xffcd\n" + f"{good[1]}\n{long_line}\n\n{good[2]}\n".encode()
    status, out, err = zoo_process(["translate", str(trained_run)], tmp_path, stdin)
    first, second, third = zoo.load(trained_run).translate(good)
    assert status == 1 and out.split("\n") == [first, "", second, "", "", third, ""], "one output line per input line"
    assert err.splitlines() == [
        "zoo: error: stdin line 2: the text is not valid UTF-8 (byte 0xff at column 3); save the input as UTF-8; "
        "its output line is empty",
        f"zoo: error: stdin line 4: the text has 10000 tokens, more than the 512 that run {trained_run} accepts "
        "(4 x data.max_len=128); split it into sentences, one per line; its output line is empty",
    ]


@pytest.mark.xdist_group("caption_run")  # the session's run: made once, on the worker of all its users
def test_images_that_cannot_be_used_get_empty_captions_and_the_others_theirs(caption_run, tmp_path):
    images = {"a.png": png(), "cut.png": png()[:1000], "b.png": png(48, 40)}
    for name, data in images.items():
        (tmp_path / name).write_bytes(data)
    (tmp_path / "photos").mkdir()
    status, out, err = zoo_process(["caption", str(caption_run), *images, "photos"], tmp_path)
    a, b = Predictor.from_run(caption_run).caption([str(tmp_path / "a.png"), str(tmp_path / "b.png")])
    assert status == 1 and out.splitlines() == [f"a.png\t{a}", "cut.png\t", f"b.png\t{b}", "photos\t"]
    assert [line.split(";")[0] for line in err.splitlines()] == [
        "zoo: error: cannot decode image cut.png (OSError: image file is truncated)",
        "zoo: error: photos is a folder, not an image file",
    ]
