"""Using a finished run from its directory alone, through its task."""
import shutil

import pytest

import zoo
from zoo.contracts.task import TaskError
from zoo.inference import Predictor, RunLoadError


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
    assert predictor.attention_dir("the dog sees the cat").name == "the_dog_sees_the_cat", "short sources keep a readable name"


@pytest.mark.parametrize("damage, message", [
    (lambda data: b"", r"is empty \(0 bytes\)"),
    (lambda data: data[: len(data) // 3], r"cannot be loaded \(RuntimeError"),  # a write cut off part-way
])
def test_an_empty_or_truncated_checkpoint_is_one_clear_error(trained_run, tmp_path, damage, message):
    run = tmp_path / "run"
    shutil.copytree(trained_run, run)
    best = run / "checkpoints" / "best.ckpt"
    best.write_bytes(damage(best.read_bytes()))
    with pytest.raises(RunLoadError, match=message):
        Predictor.from_run(run)
