"""``zoo compare``: leaderboards from run directories, in each metric's own direction, robust to odd folders."""
import json

from zoo.report.compare import find_summaries, leaderboard


def summary(encoder: str, scores: dict, monitor: str = "bleu", lower_is_better=("ter",)) -> dict:
    return {
        "task": "translation",
        "monitor": monitor,
        "test": {m: {"score": v, "higher_is_better": m not in lower_is_better, "signature": None} for m, v in scores.items()},
        "breakdowns": {"bleu_by_length": {"1-10": {"bleu": 50.0, "count": 3}, "11-20": {"bleu": 40.0, "count": 2}}},
        "parameters": {"trainable": 1000, "frozen": 0},
        "tokens_per_second": 100.0,
        "train_seconds": 12.0,
        "components": {"encoder": {"name": encoder}, "decoder": {"name": "rnn"}},
    }


def write(folder, content) -> None:
    folder.mkdir(parents=True)
    (folder / "summary.json").write_text(content if isinstance(content, str) else json.dumps(content))


def test_rows_follow_the_monitored_metric_in_its_direction(tmp_path):
    write(tmp_path / "a", summary("gru", {"bleu": 30.0, "ter": 40.0}, monitor="ter"))
    write(tmp_path / "b", summary("lstm", {"bleu": 20.0, "ter": 35.0}, monitor="ter"))
    table = leaderboard(find_summaries([tmp_path])).splitlines()
    assert table[0].startswith("| run | bleu | ter | params")
    assert "BLEU 1-10" in table[0] and "BLEU 11-20" in table[0]
    assert table[2].startswith("| encoder=lstm (b)") and table[3].startswith("| encoder=gru (a)")  # lower TER first


def test_damaged_and_old_summaries_are_skipped_not_fatal(tmp_path):
    write(tmp_path / "good", summary("gru", {"bleu": 30.0}))
    write(tmp_path / "half", '{"task": "transl')
    write(tmp_path / "old", {"test": {"bleu": 12.0}})
    runs = find_summaries([tmp_path])
    assert [path.name for path, _ in runs] == ["good"]
    assert "gru (good)" in leaderboard(runs)


def test_no_runs_says_where_it_looked(tmp_path):
    assert "no runs found" in leaderboard(find_summaries([tmp_path]))


def test_running_and_failed_runs_are_marked_and_ranked_last(tmp_path):
    write(tmp_path / "done", summary("gru", {"bleu": 30.0}))
    write(tmp_path / "going", {"monitor": "bleu", "status": "running", "components": {"encoder": {"name": "lstm"}, "decoder": {"name": "rnn"}},
                               "latest_val": {"bleu": 12.0}})
    write(tmp_path / "broke", {"monitor": "bleu", "status": "failed", "reason": "CorpusError: missing",
                               "components": {"encoder": {"name": "esn"}, "decoder": {"name": "rnn"}}})
    rows = leaderboard(find_summaries([tmp_path])).splitlines()[2:]
    assert rows[0].startswith("| encoder=gru (done) |")
    assert any("(going) [running]" in row for row in rows) and any("(broke) [failed]" in row for row in rows)
