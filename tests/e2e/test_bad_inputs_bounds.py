"""The bad-input battery, bounds: settings whose cost is absurd, or that leave sequences no room, are refused
when the config is checked, before any data loads. What every case must show, and how it runs, is in
``battery.py``; what training does with data that cannot fit (skips it, or refuses an evaluation split) is
tested in ``test_data.py``."""

from __future__ import annotations

import pytest
from helpers.battery import TRAIN_TINY, Case, assert_refused

pytestmark = pytest.mark.slow

TRAIN = ["train", *TRAIN_TINY]
# No encoder- or decoder-specific override: the cases choose their own components.
ANY_MODEL = ["train", "experiment=smoke", "trainer.enable_progress_bar=false"]

CASES = [
    # ----- a key/value latent wider than the vectors it compresses
    Case("bounds", [*ANY_MODEL, "encoder=transformer", "encoder.kv_latent_dim=100000"], "encoder.kv_latent_dim"),
    Case(
        "bounds",
        [*ANY_MODEL, "model=transformer", "decoder.d_model=64", "decoder.kv_latent_dim=65"],
        "decoder.kv_latent_dim",
    ),
    # ----- a learned position table shorter than the sequences the data lets through
    Case("bounds", [*TRAIN, "posenc=learned", "posenc.max_len=8"], "posenc.max_len"),
    Case("bounds", [*TRAIN, "posenc=learned", "posenc.max_len=50", "data.max_tokens=64"], "data.max_tokens=64"),
    # ----- widths whose weights no machine here could hold
    Case("bounds", [*TRAIN, "encoder.hidden_size=1000000"], "encoder.hidden_size"),
    Case("bounds", [*ANY_MODEL, "encoder=lstm", "encoder.layers=100000000"], "layers=100000000"),
    Case("bounds", [*TRAIN, "decoder.hidden_size=1000000"], "decoder.hidden_size"),
    Case("bounds", [*TRAIN, "decoder.embed_dim=10000000000"], "embed_dim"),
    Case("bounds", [*ANY_MODEL, "encoder=transformer", "encoder.ff_dim=1000000000"], "ff_dim"),
    Case("bounds", [*ANY_MODEL, "encoder=transformer", "encoder.d_model=1000000", "encoder.heads=1"], "d_model"),
    Case(
        "bounds",
        [*ANY_MODEL, "model=transformer", "decoder.d_model=128", "decoder.layers=1000000000"],
        "decoder.d_model",
    ),
    # ----- reservoirs that could never be allocated
    Case("bounds", [*ANY_MODEL, "encoder=esn", "encoder.units=1000000"], "encoder.units"),
    Case("bounds", [*ANY_MODEL, "encoder=esn", "encoder.layers=100000"], "layers=100000"),
    Case("bounds", [*ANY_MODEL, "encoder=elm", "encoder.units=100000000"], "encoder.units"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_absurd_costs_are_one_early_line_and_change_nothing(case, tmp_path, finished_run, request):
    here = tmp_path / "case"
    here.mkdir()
    assert_refused(case, here, finished_run, request)
