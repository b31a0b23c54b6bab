"""``zoo compare``: configurations over seeds, in each metric's own direction, robust to odd folders."""

import csv
import io
import json
import shutil
from itertools import product

import numpy as np
import pytest
from helpers import fork_zoo
from helpers.run_files import SENTENCES, summary, write, write_items

from zoo.registry import discovery
from zoo.report.columns import decimals
from zoo.report.compare import CompareError, Leaderboard, comparable_sets, compare
from zoo.report.runs import RunsNotFound, UnknownSetting, find_runs
from zoo.report.stats import item_draws, replicates, two_level
from zoo.run.claim import Lock

discovery.discover()


def test_seeds_of_a_configuration_become_one_row_with_mean_std_and_n(tmp_path):
    write(tmp_path / "a1", summary("gru", {"bleu": 30.0}, seed=1))
    write(tmp_path / "a2", summary("gru", {"bleu": 34.0}, seed=2))
    write(tmp_path / "b1", summary("lstm", {"bleu": 20.0}, seed=1))
    board = Leaderboard(find_runs([tmp_path]))
    assert [g.label for g in board.groups] == ["encoder=gru", "encoder=lstm"]
    gru = board.groups[0].metrics["bleu"]
    assert (gru.mean, round(gru.std, 3), gru.n) == (32.0, 2.828, 2)
    assert board.view().rows[0][:3] == ["encoder=gru", "2", "32.0 ± 2.8"]


def test_rows_follow_the_sorted_metric_in_its_direction(tmp_path):
    write(tmp_path / "a", summary("gru", {"bleu": 30.0, "ter": 40.0}, monitor="ter"))
    write(tmp_path / "b", summary("lstm", {"bleu": 20.0, "ter": 35.0}, monitor="ter"))
    assert [g.label for g in Leaderboard(find_runs([tmp_path])).groups] == ["encoder=lstm", "encoder=gru"]  # lower TER
    assert [g.label for g in Leaderboard(find_runs([tmp_path]), sort="bleu").groups] == ["encoder=gru", "encoder=lstm"]


def test_group_by_any_setting(tmp_path):
    write(tmp_path / "a", summary("gru", {"bleu": 30.0}))
    write(tmp_path / "b", summary("lstm", {"bleu": 20.0}))
    (group,) = Leaderboard(find_runs([tmp_path]), by=["encoder.hidden_size"]).groups
    assert group.label == "encoder.hidden_size=64" and group.metrics["bleu"].mean == 25.0


def test_running_killed_failed_old_and_damaged_runs_never_crash_it(tmp_path):
    write(tmp_path / "done", summary("gru", {"bleu": 30.0}))
    write(tmp_path / "going", {**summary("lstm", {}), "status": "running"})
    write(tmp_path / "gone", {**summary("rnn", {}), "status": "running"})  # killed: no process holds its lock
    write(tmp_path / "broke", {**summary("esn", {}), "status": "failed", "reason": "CorpusError: missing"})
    write(tmp_path / "half", '{"task": "transl')
    write(tmp_path / "old", {"test": {"bleu": 12.0}})
    lock = Lock(tmp_path / "going", "run directory")
    runs = find_runs([tmp_path])
    board = Leaderboard([run for run in runs if run.path.name not in ("half", "old")])
    rows = {row[0]: row for row in board.view().rows}
    lock.release()
    assert board.groups[0].label == "encoder=gru" and rows["encoder=gru"][-1] == "1 finished"
    assert rows["encoder=lstm"][-1] == "1 running" and rows["encoder=esn"][-1] == "1 failed"
    assert rows["encoder=rnn"][-1] == "1 killed"
    assert sorted(run.status for run in runs if run.path.name in ("half", "old")) == ["old", "unreadable"]
    report = compare([tmp_path], fmt="markdown")
    assert "left out 2 run(s)" in report and "half" in report and "old" in report


def test_machine_readable_formats(tmp_path):
    write(tmp_path / "a", summary("gru", {"bleu": 30.0}))
    rows = list(csv.DictReader(io.StringIO(compare([tmp_path], fmt="csv"))))
    assert rows[0]["configuration"] == "gru encoder, rnn decoder" and float(rows[0]["bleu mean"]) == 30.0  # alone
    (data,) = json.loads(compare([tmp_path], fmt="json"))
    assert data["rows"][0]["metrics"]["bleu"] == {"mean": 30.0, "std": 0.0, "n": 1}
    assert "│ gru " in compare([tmp_path])  # the terminal table


def test_no_runs_or_a_missing_folder_is_an_error(tmp_path):
    with pytest.raises(RunsNotFound, match="no runs under"):
        compare([tmp_path])
    with pytest.raises(RunsNotFound, match="no such file or folder: .*nowhere"):
        compare([tmp_path / "nowhere"])


def test_sorting_by_a_metric_no_run_has_is_an_error(tmp_path):
    write(tmp_path / "a", summary("gru", {"bleu": 30.0}))
    with pytest.raises(CompareError, match="--sort ter: no run has that test metric; they have bleu"):
        compare([tmp_path], sort="ter")


def test_a_baseline_gets_a_difference_ci_and_p_value_for_every_row(tmp_path):
    garbled = [" ".join(s.split()[:-2]) for s in SENTENCES]  # the last two words missing
    garbled_alike = [SENTENCES[0], " ".join(SENTENCES[1].split()[:5]), *garbled[2:]]  # one item better, one worse
    for name, hypotheses, seeds in (
        ("gru", garbled, (1, 2)),
        ("lstm", SENTENCES, (1, 2)),
        ("rnn", garbled_alike, (1,)),
    ):
        for seed in seeds:
            folder = tmp_path / f"{name}{seed}"
            write(folder, summary(name, {"bleu": 100.0 if name == "lstm" else 20.0}, seed=seed))
            write_items(folder, hypotheses)
    board = Leaderboard(find_runs([tmp_path]))
    (baseline,) = board.find("encoder=gru")
    board.test_against(baseline)
    lstm, rnn = board.comparisons["encoder=lstm"], board.comparisons["encoder=rnn"]
    assert lstm.p < 0.01 and lstm.ci_low > 0 and rnn.p > 0.05 and rnn.ci_low < 0 < rnn.ci_high, board.comparisons
    view = board.view()
    assert view.header[3:5] == ["Δ bleu [95% CI]", "p"]
    rows = {row[0]: row for row in view.rows}
    assert rows["encoder=gru"][3:5] == ["baseline", ""] and rows["encoder=lstm"][4].endswith(" *")
    assert rows["encoder=lstm"][3].startswith(f"+{lstm.difference:.1f} [") and rows["encoder=lstm"][4].startswith(
        ("0.0", "<0.001")
    )
    assert rows["encoder=rnn"][4] == "needs ≥ 2 seeds for a verdict"  # one seed: no p, the test set's CI apart
    assert [g.label for g, marked in zip(board.groups, view.significant) if marked] == ["encoder=lstm"]
    markdown = compare([tmp_path], fmt="markdown", baseline="encoder=gru")
    assert "t-test over seeds and test items" in markdown and "Holm-adjusted over 1 row " in markdown  # not the 1-seed
    with pytest.raises(CompareError, match="names no single configuration"):
        compare([tmp_path], baseline="transformer")


def test_a_configuration_alone_is_a_baseline_by_its_settings_and_offered_as_one(tmp_path):
    """Alone, a configuration is labelled in words ("gru encoder, ..."), which no command line writes."""
    for seed in (1, 2):
        write(tmp_path / f"gru{seed}", summary("gru", {"bleu": 20.0}, seed=seed))
    (group,) = Leaderboard(find_runs([tmp_path])).find("encoder=gru")
    assert not group.settings
    with pytest.raises(CompareError, match="choose one of: encoder=gru$"):
        compare([tmp_path], baseline="encoder=lstm")


def test_csv_and_json_carry_the_test_of_each_row(tmp_path):
    for name, hypotheses in (("gru", [" ".join(s.split()[:-2]) for s in SENTENCES]), ("lstm", SENTENCES)):
        for seed in (1, 2):
            write(tmp_path / f"{name}{seed}", summary(name, {"bleu": 20.0}, seed=seed))
            write_items(tmp_path / f"{name}{seed}", hypotheses)
    rows = {r["configuration"]: r for r in csv.DictReader(io.StringIO(compare([tmp_path], fmt="csv", baseline="gru")))}
    lstm = rows["encoder=lstm"]
    assert lstm["seeds"] == "2" and float(lstm["ci_low"]) <= float(lstm["difference"]) <= float(lstm["ci_high"])
    assert float(lstm["p"]) < 0.05 and "t-test over seeds and test items" in lstm["method"]
    assert rows["encoder=gru"]["p"] == ""
    (data,) = json.loads(compare([tmp_path], fmt="json", baseline="gru"))
    row = next(r for r in data["rows"] if r["configuration"] == "encoder=lstm")
    assert row["p"] == float(lstm["p"]) and row["seeds"] == 2 and "Holm" in data["method"]


def test_a_run_reached_twice_counts_once_and_runs_sharing_a_seed_are_flagged(tmp_path):
    write(tmp_path / "sweep" / "0", summary("gru", {"bleu": 30.0}, seed=1))
    write(tmp_path / "sweep" / "1", summary("gru", {"bleu": 34.0}, seed=2))
    write(tmp_path / "again", summary("gru", {"bleu": 32.0}, seed=1))  # seed 1 of the same configuration, rerun
    runs = find_runs([tmp_path / "sweep", tmp_path / "sweep" / "0", f"{tmp_path}/sweep/../sweep/0", tmp_path / "again"])
    assert len(runs) == 3
    (group,) = Leaderboard(runs).groups
    assert len(group.repetitions) == 2 and group.metrics["bleu"].mean == 32.5  # seed 1: (30 + 32) / 2, seed 2: 34
    assert group.shared_seeds == ["2 runs share seed 1 (counted once)"]
    assert "gru encoder, rnn decoder: 2 runs share seed 1 (counted once)" in compare(
        [tmp_path / "sweep", tmp_path / "again"], fmt="markdown"
    )


def test_group_by_any_config_key_seed_or_learning_rate(tmp_path):
    for k, (encoder, lr, seed) in enumerate(product(("gru", "lstm"), (0.001, 0.002), (1, 2))):
        config = {"encoder": {"name": encoder, "hidden_size": 64}, "optim": {"lr": lr}, "seed": seed}
        write(
            tmp_path / str(k),
            {**summary(encoder, {"bleu": 10.0 * seed + 1000 * lr}, seed=seed), "config_key": f"{encoder}-{lr}"},
            config,
        )
    by_seed = Leaderboard(find_runs([tmp_path]), by=["seed"])
    assert [(g.label, len(g.seeds), len(g.configurations), g.metrics["bleu"].mean) for g in by_seed.groups] == [
        ("seed=2", 1, 4, 21.5),
        ("seed=1", 1, 4, 11.5),
    ]
    by_lr = Leaderboard(find_runs([tmp_path]), by=["optim.lr"])
    assert [g.label for g in by_lr.groups] == ["optim.lr=0.002", "optim.lr=0.001"]
    # by configuration, each row is named by every setting that differs, not only by the overrides
    labels = {g.label for g in Leaderboard(find_runs([tmp_path])).groups}
    assert labels == {f"encoder={e} optim.lr={lr}" for e in ("gru", "lstm") for lr in (0.001, 0.002)}


def test_a_row_pooling_configurations_counts_seeds_and_configurations_apart(tmp_path):
    for k, (attention, seed) in enumerate(product(("dot", "additive"), (1, 2))):
        config = {"encoder": {"name": "gru"}, "attention": {"name": attention}, "seed": seed}
        write(tmp_path / str(k), {**summary("gru", {"bleu": 10.0 * seed}, seed=seed), "config_key": attention}, config)
    board = Leaderboard(find_runs([tmp_path]), by=["seed"])
    assert [row[:2] for row in board.view().rows] == [["seed=2", "1 × 2 cfg"], ["seed=1", "1 × 2 cfg"]]
    assert "seed=1: pools 2 configurations; its ± is over configurations and seeds, not seeds alone" in (
        board.footnote()
    )
    (row,) = [r for r in csv.DictReader(io.StringIO(board.csv())) if r["configuration"] == "seed=1"]
    assert (row["seeds"], row["configurations"]) == ("1", "2")
    assert {(r["seeds"], r["configurations"]) for r in json.loads(board.json())["rows"]} == {(1, 2)}
    uneven = Leaderboard([run for run in find_runs([tmp_path]) if run.path.name != "1"], by=["encoder"])
    assert uneven.view().rows[0][1] == "3 of 2 × 2 cfg"  # additive at seeds 1 and 2, dot at seed 1 only


def test_runs_of_several_configurations_sharing_a_seed_are_flagged(tmp_path):
    for name, seed, key in (("recipe1", 1, "recipe"), ("recipe2", 2, "recipe"), ("tuned1", 1, "tuned")):
        config = {"encoder": {"name": "gru"}, "model": "gru", "seed": seed}
        write(tmp_path / name, {**summary("gru", {"bleu": 30.0}, seed=seed), "config_key": key}, config)
    (group,) = Leaderboard(find_runs([tmp_path]), by=["model"]).groups
    assert group.shared_seeds == ["seed 1 is used by 2 runs (2 configurations)"]
    assert "model=gru: seed 1 is used by 2 runs (2 configurations)" in compare([tmp_path], by=["model"], fmt="markdown")


def test_by_an_unknown_key_names_the_close_ones(tmp_path):
    write(tmp_path / "a", summary("gru", {"bleu": 30.0}), {"encoder": {"name": "gru", "hidden_size": 64}, "seed": 1})
    with pytest.raises(
        UnknownSetting,
        match=r"^--by encoder.hiden_size: no run has that setting; "
        r"did you mean encoder.hidden_size\?$",
    ):
        compare([tmp_path], by=["encoder.hiden_size"])
    with pytest.raises(UnknownSetting, match="--by foo: no run has that setting; give a key of a run's config.yaml"):
        compare([tmp_path], by=["foo"])


def test_one_seed_a_side_tests_the_items_and_separates_real_differences_from_noise():
    rng = np.random.default_rng(0)
    base = rng.normal(0.5, 0.1, 400)
    weights = item_draws(400)

    def p(system):  # one seed a side: the test over items alone
        sides = [
            replicates([[scores[:, None]]], weights, lambda sums, items: sums[:, 0] / items)
            for scores in (base, system)
        ]
        return float(two_level(*sides, 400).p())

    assert p(base + 0.05) < 0.01
    assert p(base + rng.normal(0, 0.1, 400)) > 0.05


def test_runs_on_another_test_set_or_metric_tokenisation_are_separated(tmp_path):
    write(tmp_path / "a", summary("gru", {"bleu": 30.0}))
    other_data = summary("lstm", {"bleu": 20.0})
    other_data["components"]["dataset"] = {"name": "synthetic", "max_words": 50}
    write(tmp_path / "b", other_data)
    intl = summary("rnn", {"bleu": 25.0})
    intl["test"]["bleu"]["signature"] = "nrefs:1|tok:intl|version:2.6.0"
    write(tmp_path / "c", intl)
    write(tmp_path / "d", {**summary("esn", {}), "status": "running"})
    sets = comparable_sets(find_runs([tmp_path]))
    assert [sorted(r.path.name for r in runs) for _, runs in sets] == [["a", "d"], ["b"], ["c"]]
    assert "another test set" in sets[1][0] and "metrics computed differently" in sets[2][0]
    assert compare([tmp_path], fmt="markdown").count("| configuration |") == 3


def test_recipes_label_their_rows_and_settings_differing_within_one_recipe_follow(tmp_path):
    """A recipe names everything it sets (model=gru, not its encoder, widths and search space); a setting that
    differs between runs of one recipe is added."""
    for k, (model, encoder, lr) in enumerate(
        [("gru", "gru", 0.001), ("gru", "gru", 0.002), ("tf", "transformer", 0.001)]
    ):
        config = {"encoder": {"name": encoder, "layers": 2 if model == "tf" else 1}, "optim": {"lr": lr}, "seed": 1}
        write(
            tmp_path / str(k),
            {
                **summary(encoder, {"bleu": 10.0 + k}),
                "config_key": f"{model}-{lr}",
                "choices": {"experiment": None, "model": model, "search": model, "encoder": encoder},
            },
            config,
        )
    labels = {g.label for g in Leaderboard(find_runs([tmp_path])).groups}
    assert labels == {"model=gru optim.lr=0.001", "model=gru optim.lr=0.002", "model=tf optim.lr=0.001"}


def test_a_row_is_not_named_by_a_field_its_component_lacks_or_a_scorer_its_decoder_ignores(tmp_path):
    """decoder.gate tells two linear-attention rows apart, attention the Transformer's from the GRU's: neither is
    said of a mamba decoder, which has no gate and scores nothing, but the scorer is said of a mamba hybrid's
    cross-attention layers."""
    rows = [("rnn", {}, "additive"), ("transformer", {}, "scaled_dot"), ("mamba", {}, "additive")]
    rows += [("mamba", {"cross_every": 1}, "cosine")]
    rows += [("linear_transformer", {"gate": gate}, "additive") for gate in ("none", "gla")]
    for k, (decoder, fields, attention) in enumerate(rows):
        config = {"decoder": {"name": decoder, **fields}, "attention": {"name": attention}, "seed": 1}
        write(tmp_path / str(k), {**summary("identity", {"bleu": 10.0 + k}), "config_key": str(k)}, config)
    labels = {g.label for g in Leaderboard(find_runs([tmp_path])).groups}
    assert labels == {
        "decoder=rnn attention=additive",
        "decoder=transformer attention=scaled_dot",
        "decoder=mamba",
        "decoder=mamba attention=cosine decoder.cross_every=1",
        "decoder=linear_transformer decoder.gate=none",
        "decoder=linear_transformer decoder.gate=gla",
    }


def test_the_dashboard_says_on_its_page_what_it_cannot_read(tmp_path):
    """A watched folder removed while the dashboard serves it: the page says so in one line and keeps reloading."""
    import shutil
    import threading
    import urllib.error
    import urllib.request

    from zoo.report.serve import make_server

    write(tmp_path / "runs" / "a", summary("gru", {"bleu": 20.0}))
    server = make_server([tmp_path / "runs"], port=0, refresh=7)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()  # shutdown() waits a poll
    shutil.rmtree(tmp_path / "runs")
    try:
        with pytest.raises(urllib.error.HTTPError) as answer:
            urllib.request.urlopen(f"http://127.0.0.1:{server.server_address[1]}/")
    finally:
        server.shutdown()
        server.server_close()
    page = answer.value.read().decode()
    assert answer.value.code == 500 and "zoo: error: no such file or folder" in page and 'content="7"' in page


def test_the_tasks_breakdowns_are_columns_named_as_the_task_named_them(tmp_path):
    write(tmp_path / "a", summary("gru", {"bleu": 30.0}))
    sorting = {"exact_by_length": {"1-3": {"exact": 80.0, "count": 4}, "4-6": {"exact": 25.0, "count": 4}}}
    write(tmp_path / "b", {**summary("lstm", {"bleu": 20.0}), "breakdowns": sorting})
    board = Leaderboard(find_runs([tmp_path]))
    view = board.view()
    header = view.header
    assert header[-5:-1] == ["bleu_by_length bleu 1-10", "bleu_by_length bleu 11-20", "exact_by_length exact 1-3",
                             "exact_by_length exact 4-6"]  # fmt: skip
    rows = {row[0]: row for row in view.rows}
    assert rows["encoder=lstm"][-3:-1] == ["80.0", "25.0"] and rows["encoder=gru"][-3:-1] == ["", ""]
    listed = json.loads(board.json())["rows"]
    assert listed[1]["breakdowns"]["exact_by_length"]["1-3"]["exact"]["mean"] == 80.0
    alone = Leaderboard(find_runs([tmp_path / "b"]))
    assert alone.view().header[-3:-1] == ["exact 1-3", "exact 4-6"], "one breakdown: its scores and buckets say enough"


def test_settings_that_look_like_markup_are_printed_as_they_are(tmp_path):
    """A run's plugin_dirs=[/abs/folder] once crashed the table: rich read it as a closing markup tag."""
    write(tmp_path / "a", summary("gru", {"bleu": 30.0}), config={"encoder": {"name": "gru"}, "plugin_dirs": []})
    mine = {"encoder": {"name": "gru"}, "plugin_dirs": ["/abs/my_plugins"]}
    write(tmp_path / "b", {**summary("gru", {"bleu": 20.0}), "config_key": "other"}, config=mine)
    assert "plugin_dirs=[/abs/my_plugins]" in compare([tmp_path], by=["plugin_dirs"])


def test_each_score_column_takes_the_decimals_that_tell_its_rows_apart(tmp_path):
    """Three rows once all read ``0.4``. A score column takes the fewest decimals, one at least and four at most,
    at which its distinct means differ, its standard deviations at the same; csv and json keep every digit."""
    scores = {"gru": [(0.40, 52.0, 30.00001), (0.42, 52.0, 30.00001)], "lstm": [(0.43, 48.0, 30.00002)]}
    scores["rnn"] = [(0.38, 48.0, 30.00001)]
    for encoder, seeds in scores.items():
        for seed, (bleu, chrf, ter) in enumerate(seeds, start=1):
            write(tmp_path / f"{encoder}{seed}", summary(encoder, {"bleu": bleu, "chrf": chrf, "ter": ter}, seed=seed))
    view = Leaderboard(find_runs([tmp_path])).view()
    columns = {column.name: [cell.text for cell in column.cells] for column in view.columns}
    assert columns["configuration"] == ["encoder=lstm", "encoder=gru", "encoder=rnn"]
    assert columns["bleu"] == ["0.43", "0.41 ± 0.01", "0.38"]
    assert columns["chrf"] == ["48.0", "52.0 ± 0.0", "48.0"], "equal means need no more decimals"
    assert columns["ter"] == ["30.0000", "30.0000 ± 0.0000", "30.0000"], "closer than four decimals: four"
    assert decimals([0.4, 0.4]) == 1 and decimals([1.21, 1.24]) == 2 and decimals([3.0, 4.0], natural=0) == 0
    rows = {row["configuration"]: row for row in csv.DictReader(io.StringIO(compare([tmp_path], fmt="csv")))}
    assert float(rows["encoder=lstm"]["ter mean"]) == 30.00002
    (data,) = json.loads(compare([tmp_path], fmt="json"))
    assert data["rows"][1]["metrics"]["ter"]["mean"] == 30.00001 and data["rows"][0]["metrics"]["bleu"]["mean"] == 0.43


@pytest.mark.slow
def test_digits_sets_the_decimals_of_every_score_and_a_bad_value_is_one_line(tmp_path):
    write(tmp_path / "a", summary("gru", {"bleu": 30.0, "chrf": 0.123456}))
    write(tmp_path / "b", summary("lstm", {"bleu": 20.0, "chrf": 0.5}))
    markdown = compare([tmp_path], fmt="markdown", digits=3)
    assert "| encoder=gru | 1 | 30.000 | 0.123 |" in markdown and "| 50.000 | 40.000 |" in markdown  # breakdowns too
    assert "| encoder=gru | 1 | 30.0 | 0.1 |" in compare([tmp_path], fmt="markdown"), "0.1 and 0.5 differ already"
    proc = fork_zoo("compare", str(tmp_path), "--digits", "11", cwd=tmp_path, check=False)
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr == "zoo: error: --digits 11: give a number of decimals from 0 to 10\n"


def test_settings_and_costs_alike_in_every_row_are_said_once_above_the_table(tmp_path):
    for encoder, bleu in (("gru", 30.0), ("lstm", 20.0)):
        write(tmp_path / encoder, summary(encoder, {"bleu": bleu}))
    board = Leaderboard(find_runs([tmp_path]), by=["decoder", "encoder"])
    view = board.view()
    assert view.shared_line() == "same in every run: decoder=rnn, params=1,000, frozen=0, train s=12, target tok/s=100"
    assert [row[0] for row in view.rows] == ["encoder=gru", "encoder=lstm"]
    assert not {"params", "frozen", "train s", "target tok/s"} & set(view.header)
    assert board.markdown().startswith("same in every run: decoder=rnn, params=1,000")
    assert "same in every run: decoder=rnn" in board.table(width=100)
    (data,) = json.loads(compare([tmp_path], by=["decoder", "encoder"], baseline="encoder=gru", fmt="json"))
    assert data["baseline"] == "decoder=rnn encoder=gru", "a row is found by the name it shows"
    alone = Leaderboard(find_runs([tmp_path / "gru"]), by=["decoder", "encoder"]).view()
    assert alone.shared == {} and alone.rows[0][0] == "decoder=rnn encoder=gru" and "params" in alone.header


def test_the_best_of_each_metric_is_marked_in_its_own_direction(tmp_path):
    write(tmp_path / "a", summary("gru", {"bleu": 30.0, "ter": 40.0}))
    write(tmp_path / "b", summary("lstm", {"bleu": 20.0, "ter": 35.0}))
    write(tmp_path / "c", {**summary("rnn", {}), "status": "running"})
    view = Leaderboard(find_runs([tmp_path])).view()
    labels = view.columns[0].cells
    best = {c.name: [label.text for label, cell in zip(labels, c.cells) if cell.best] for c in view.columns}
    assert best["bleu"] == ["encoder=gru"] and best["ter"] == ["encoder=lstm"] and best["n"] == []


@pytest.mark.slow
def test_the_terminal_table_fits_the_terminal_and_never_breaks_a_number(tmp_path):
    """``zoo compare`` in a terminal of 100 columns: the table goes on below in blocks rather than be drawn
    wider, or wrap a value over lines."""
    garbled = [" ".join(s.split()[:-2]) for s in SENTENCES]
    for name, hypotheses in (("gru", garbled), ("lstm", SENTENCES), ("rnn", garbled[:20] + SENTENCES[20:])):
        for seed in (1, 2):
            folder = tmp_path / "runs" / f"{name}{seed}"
            scores = {"bleu": 30.0 + len(name) + seed / 10, "chrf": 50.0 + seed, "ter": 40.0 - seed}
            write(folder, {**summary(name, scores, seed=seed), "latency_ms": {"greedy": 3.0 + seed, "beam": 9.5}})
            write_items(folder, hypotheses)
    board = Leaderboard(find_runs([tmp_path / "runs"]))
    board.test_against(board.find("encoder=gru")[0])
    assert max(len(line) for line in board.table(width=1000).splitlines()) > 100, "the table is wider than that"
    proc = fork_zoo("compare", "runs", "--baseline", "encoder=gru", cwd=tmp_path, env={"COLUMNS": "100"})
    lines = proc.stdout.splitlines()
    assert max(len(line) for line in lines) <= 100
    numbers = [cell.text for column in board.view().columns if column.numeric for cell in column.cells if cell.text]
    assert len(numbers) > 20 and all(any(number in line for line in lines) for number in numbers), proc.stdout
    assert (
        sum(line.startswith("┏") for line in lines) > 1
        and sum(line.startswith("│ encoder=lstm ") for line in lines) > 1
    )


def test_a_score_that_is_no_number_is_left_out_of_mean_and_std_and_said_under_the_table(tmp_path):
    write(tmp_path / "a1", summary("gru", {"bleu": 30.0}, seed=1))
    write(tmp_path / "a2", summary("gru", {"bleu": 34.0}, seed=2))
    write(tmp_path / "a3", summary("gru", {"bleu": float("nan")}, seed=3))  # a seed that diverged
    write(tmp_path / "b1", summary("lstm", {"bleu": float("inf")}, seed=1))
    board = Leaderboard(find_runs([tmp_path]))
    gru, lstm = (group.metrics["bleu"] for group in board.groups)
    assert (gru.mean, round(gru.std, 3), gru.n) == (32.0, 2.828, 2) and lstm is None
    table = compare([tmp_path])
    assert "encoder=gru: 1 run's bleu is NaN, left out" in table
    assert "encoder=lstm: 1 run's bleu is inf, left out" in table
    (data,) = json.loads(compare([tmp_path], fmt="json"))
    assert data["rows"][0]["left_out"] == ["1 run's bleu is NaN, left out"]


def test_a_report_replaces_only_a_page_zoo_wrote(tmp_path):
    from zoo.report.compare import write_report, written_by_zoo

    write(tmp_path / "runs" / "a", summary("gru", {"bleu": 30.0}))
    page = write_report([tmp_path / "runs"], tmp_path / "report.html")
    assert written_by_zoo(page) and '<meta name="generator" content="zoo ' in page.read_text()
    page.write_text(page.read_text().replace("encoder=gru", "an older report"))
    write_report([tmp_path / "runs"], page)
    assert "an older report" not in page.read_text()
    (tmp_path / "mine.html").write_text("<!DOCTYPE html><title>my notes</title>")
    assert not written_by_zoo(tmp_path / "mine.html")


def _seeded_run(folder, encoder: str, seed: int, key: str, config: dict) -> None:
    """A run whose hypotheses drop the last words of a seed-dependent third of the references."""
    cut = 2 if encoder == "lstm" else 1
    hypotheses = [" ".join(s.split()[:-cut]) if (k + seed) % 3 else s for k, s in enumerate(SENTENCES)]
    write(folder, {**summary(encoder, {"bleu": 20.0 + seed}, seed=seed), "config_key": key}, config)
    write_items(folder, hypotheses)


def test_a_configuration_copied_under_by_adds_no_seed_and_leaves_p_alone(tmp_path):
    """``--by encoder`` pools configurations; runs of two configurations at one seed are one unit of the test, so a
    run copied as a second configuration (its seed, its outputs) leaves p where it was: counted as repetitions, it
    had lowered p (0.237 to 0.204 in the issue)."""
    for seed in (1, 2, 3):
        for encoder, dropout in (("lstm", 0.1), ("gru", 0.1)):
            config = {"encoder": {"name": encoder}, "dropout": dropout, "seed": seed}
            _seeded_run(tmp_path / "alone" / f"{encoder}{seed}", encoder, seed, f"{encoder}-{dropout}", config)
    shutil.copytree(tmp_path / "alone", tmp_path / "copied")
    for seed in (1, 2, 3):
        config = {"encoder": {"name": "gru"}, "dropout": 0.2, "seed": seed}
        _seeded_run(tmp_path / "copied" / f"gru-again{seed}", "gru", seed, "gru-0.2", config)
    rows = {
        name: next(
            r
            for r in json.loads(compare([tmp_path / name], by=["encoder"], baseline="encoder=lstm", fmt="json"))[0][
                "rows"
            ]
            if r["configuration"] == "encoder=gru"
        )
        for name in ("alone", "copied")
    }
    assert rows["copied"]["configurations"] == 2 and rows["alone"]["configurations"] == 1
    assert rows["copied"]["p"] == rows["alone"]["p"] and 0 < rows["alone"]["p"] < 1
    assert rows["copied"]["ci_low"] == rows["alone"]["ci_low"] and rows["copied"]["seeds_for_power"] is not None
    board = Leaderboard(find_runs([tmp_path / "copied"]), by=["encoder"])
    assert [len(cluster) for cluster in board.find("encoder=gru")[0].clusters] == [2, 2, 2]
    board.test_against(board.find("encoder=lstm")[0])
    assert "tested with each seed once, its configurations' runs averaged" in board.footnote()


def test_the_budget_and_its_share_stand_beside_the_flops_recorded(tmp_path):
    """A run's budget from its summary (as laid out), else from its config's ``trainer.budget_flops``."""
    for k, (encoder, spent) in enumerate((("gru", 1.81e11), ("transformer", 2.08e11))):
        record = {**summary(encoder, {"bleu": 20.0 + k}), "compute": {"flops": spent}}
        if encoder == "gru":
            record["budget"] = {"flops": 2e11, "steps": 40}
        config = {"encoder": {"name": encoder}, "trainer": {"budget_flops": 2e11}, "seed": 1}
        write(tmp_path / encoder, record, config)
    write(tmp_path / "epochs", {**summary("lstm", {"bleu": 10.0}), "compute": {"flops": 1e11}})
    board = Leaderboard(find_runs([tmp_path]), by=["encoder"])
    view = board.view()
    columns = {column.name: [cell.text for cell in column.cells] for column in view.columns}
    assert view.header.index("budget TFLOPs") == view.header.index("train TFLOPs") + 1
    rows = {name: k for k, name in enumerate(columns["configuration"])}
    gru, transformer, lstm = rows["encoder=gru"], rows["encoder=transformer"], rows["encoder=lstm"]
    assert [columns["train TFLOPs"][gru], columns["budget TFLOPs"][gru], columns["% of budget"][gru]] == [
        "0.18",
        "0.20",
        "90.5",
    ]
    assert columns["% of budget"][transformer] == "104.0" and columns["budget TFLOPs"][lstm] == ""
    gru_row = next(r for r in json.loads(board.json())["rows"] if r["configuration"] == "encoder=gru")
    assert gru_row["costs"]["% of budget"]["mean"] == pytest.approx(90.5)
