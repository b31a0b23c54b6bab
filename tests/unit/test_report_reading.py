"""How the report reads: a configuration's colour from its key alone, runs and test sets named in words, and
large numbers in a unit that lets the leaderboard's columns fit."""

import pytest
from helpers.run_files import summary, write

from zoo.report.aggregate import Stat
from zoo.report.colours import PALETTE, fnv1a, palette
from zoo.report.columns import stat_column
from zoo.report.compare import Leaderboard, comparable_sets, leaderboards
from zoo.report.live import colours_of
from zoo.report.runs import find_runs
from zoo.report.words import dataset_words, recipe_words


def test_fnv1a_is_the_standard_32_bit_hash():
    """The test vectors of FNV-1a (Fowler, Noll and Vo): the page's script must compute the same numbers."""
    assert [fnv1a(text) for text in ("", "a", "foobar")] == [0x811C9DC5, 0xE40C292C, 0xBF9CF968]


def test_a_configuration_keeps_its_colour_whatever_else_is_drawn_and_in_whatever_order():
    keys = [f"config-{k}" for k in range(8)]
    colours = palette(keys)
    assert colours == palette(reversed(keys)) == palette(keys + keys[:3]), "the set of keys decides, not the order"
    assert len(set(colours.values())) == len(keys), "fewer keys than colours: no two alike"
    for key in keys:  # each key's own slot, unless a key of a smaller hash took it first
        before = [other for other in keys if (fnv1a(other), other) < (fnv1a(key), key)]
        if fnv1a(key) % len(PALETTE) not in {fnv1a(other) % len(PALETTE) for other in before}:
            assert colours[key] == PALETTE[fnv1a(key) % len(PALETTE)] == palette([key])[key]


def test_keys_that_pick_the_same_colour_get_the_next_free_ones_in_hash_order():
    slot = fnv1a("a") % len(PALETTE)
    clashing = [key for key in (f"k{n}" for n in range(2000)) if fnv1a(key) % len(PALETTE) == slot][:3]
    keys = sorted(["a", *clashing], key=fnv1a)
    colours = palette(keys)
    assert [colours[key] for key in keys] == [PALETTE[(slot + k) % len(PALETTE)] for k in range(4)]
    many = palette(f"run {k}" for k in range(len(PALETTE) + 3))
    assert set(many.values()) == set(PALETTE), "more keys than colours: every colour used, then shared"


def test_the_dashboard_of_a_sweep_under_way_colours_each_configuration_as_the_finished_report(tmp_path):
    """The first job's configuration keeps its colour when a later job's, whose hash is smaller, claims its slot."""
    slot = fnv1a("key-gru") % len(PALETTE)
    later = next(
        name
        for name in (f"e{n}" for n in range(5000))
        if fnv1a(f"key-{name}") % len(PALETTE) == slot and fnv1a(f"key-{name}") < fnv1a("key-gru")
    )
    write(tmp_path / "9", summary("gru", {"bleu": 30.0}, status="running"))
    under_way = colours_of(leaderboards(find_runs([tmp_path])), [])
    write(tmp_path / "10", summary(later, {"bleu": 20.0}))
    finished = colours_of(leaderboards(find_runs([tmp_path])), [])
    assert finished["key-gru"] == under_way["key-gru"] == PALETTE[slot]
    assert finished[f"key-{later}"] == PALETTE[(slot + 1) % len(PALETTE)], "the later job takes the next free slot"


def test_a_dataset_is_named_by_its_corpus_direction_and_test_split_then_what_differs():
    multi30k = {"name": "parallel", "root": "/data/multi30k", "src_lang": "en", "tgt_lang": "de"}
    multi30k |= {"test": "test_2016_flickr", "limit": 0}
    assert dataset_words(multi30k) == "multi30k (en→de), test_2016_flickr"
    flickr = {"name": "karpathy", "split_file": "/data/flickr8k/dataset_flickr8k.json", "max_test": None}
    assert dataset_words(flickr, multi30k) == "flickr8k", "another plugin: its own fields are not compared"
    synthetic = {"name": "synthetic", "seed": 0, "test_size": 500, "max_words": 30}
    assert dataset_words({**synthetic, "test_size": 30, "seed": 1}, synthetic) == "synthetic, seed 1, test_size 30"


def test_a_board_of_another_test_set_or_metric_says_how_in_words(tmp_path):
    def run(encoder: str, tokenised: str = "13a") -> dict:
        found = summary(encoder, {"bleu": 30.0})
        found["test"]["bleu"]["signature"] = f"nrefs:1|tok:{tokenised}|version:2.6.0"
        return found

    write(tmp_path / "a", run("gru"))
    other = run("lstm")
    other["components"]["dataset"] = {"name": "parallel", "root": "/data/multi30k", "src_lang": "en", "tgt_lang": "de"}
    other["components"]["dataset"]["test"] = "test_2016_flickr"
    write(tmp_path / "b", other)
    write(tmp_path / "c", run("rnn", tokenised="intl"))
    notes = [note for note, _ in comparable_sets(find_runs([tmp_path]))]
    assert notes == [
        "",
        "not comparable with the runs above, another test set: multi30k (en→de), test_2016_flickr",
        "not comparable with the runs above, metrics computed differently: bleu with tok:intl (above: tok:13a)",
    ]


def test_a_run_alone_on_its_board_is_named_by_its_recipe_else_its_components(tmp_path):
    recipe = {**summary("gru", {"bleu": 30.0}), "choices": {"model": "gru", "encoder": "gru"}}
    write(tmp_path / "recipe" / "r", recipe)
    captioner = summary("identity", {"bleu": 20.0})
    captioner["components"] |= {"frontend": {"name": "cnn"}, "decoder": {"name": "transformer"}}
    captioner["components"]["attention"] = {"name": "scaled_dot"}
    write(tmp_path / "captioner" / "r", captioner)
    (recipe_run,), (captioning_run,) = find_runs([tmp_path / "recipe"]), find_runs([tmp_path / "captioner"])
    assert recipe_words(recipe_run) == "gru recipe"
    assert recipe_words(captioning_run) == "cnn frontend, identity encoder, transformer decoder, scaled_dot attention"
    assert [g.label for g in Leaderboard([captioning_run]).groups] == [recipe_words(captioning_run)]
    captioner["components"]["decoder"] = {"name": "mamba"}  # it scores with no scorer: none is named
    write(tmp_path / "ssm" / "r", captioner)
    assert recipe_words(find_runs([tmp_path / "ssm"])[0]) == "cnn frontend, identity encoder, mamba decoder"


def test_large_costs_are_written_in_one_si_unit_per_column():
    params = [Stat(1_269_198.0, 0.0, 2), Stat(512_000.0, 31_000.0, 2), Stat(999_999.0, 0.0, 1), None]
    assert [cell.text for cell in stat_column("params", params, 0, short=True).cells] == [
        "1.27M ± 0",
        "0.512M ± 0.031M",
        "1M",
        "",
    ]
    assert [cell.value for cell in stat_column("params", params, 0, short=True).cells][:2] == [1_269_198.0, 512_000.0]
    small = [Stat(1_807.1, 30.0, 2)]
    assert stat_column("target tok/s", small, 0, short=True).cells[0].text == "1,807 ± 30", "below 10,000: as it is"
    assert stat_column("params", params, 0).cells[0].text == "1,269,198 ± 0", "the terminal's table keeps every digit"


@pytest.mark.parametrize("short", [False, True])
def test_the_leaderboard_view_writes_costs_in_si_units_only_when_asked(tmp_path, short):
    write(tmp_path / "a", {**summary("gru", {"bleu": 30.0}), "parameters": {"trainable": 1_269_198, "frozen": 0}})
    write(tmp_path / "b", {**summary("lstm", {"bleu": 20.0}), "parameters": {"trainable": 2_000_000, "frozen": 0}})
    view = Leaderboard(find_runs([tmp_path])).view(short=short)
    (params,) = [column for column in view.columns if column.name == "params"]
    assert [cell.text for cell in params.cells] == (["1.27M", "2M"] if short else ["1,269,198", "2,000,000"])
