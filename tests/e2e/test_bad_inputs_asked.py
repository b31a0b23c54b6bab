"""The bad-input battery, commands that would do less than asked: a sweep's setting or preset without ``-m``, a group
given twice, a setting a budget decides, a budget that cannot be spent as asked, a decoder that cannot write the
task's outputs, data that could never fit. Each is one line before anything runs, and every file stays as it was.

``run`` is a copy of a finished tiny run (``copy="finished_run"``) that ``files`` may change first.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from helpers.battery import TRAIN_TINY, Case, assert_refused

pytestmark = pytest.mark.slow

TRAIN = ["train", *TRAIN_TINY]
SWEEP = ["train", "-m", *TRAIN_TINY]
# No experiment: the cases choose their own.
BARE = ["train", "trainer.enable_progress_bar=false"]
# The smoke test's data without the tiny model's widths: the cases choose their own components.
SMOKE = [*BARE, "experiment=smoke"]
# The presets that sweep (their hydra.sweeper.params), each needing -m.
SWEEPING_PRESETS = [
    "compare_families",
    "compare_compute",
    "compare_listops",
    "compare_recall",
    "compare_kv",
    "compare_posenc",
    "compare_scorers",
    "compare_tokenizers",
    "compare_captioning",
    "compare_captioning_families",
    "attention_length",
    "posenc_length",
]
# The settings a budget decides, each given beside one.
DECIDED = [
    "trainer.max_steps=3",
    "trainer.max_epochs=1",
    "trainer.patience=2",
    "trainer.val_check_interval=0.5",
    "trainer.check_val_every_n_epoch=2",
]
DROPPED = "would be dropped"
SWEEP_ONLY = "is read only by a sweep"
TWICE = "is given twice"


def budgeted(here: Path) -> None:
    """The copied run as if it had trained to a FLOP budget (its overrides and config say so)."""
    overrides = here / "run" / ".hydra" / "overrides.yaml"
    overrides.write_text(yaml.safe_dump([*yaml.safe_load(overrides.read_text()), "trainer.budget_flops=1e9"]))
    config = here / "run" / "config.yaml"
    saved = yaml.safe_load(config.read_text())
    saved["trainer"]["budget_flops"] = 1e9
    config.write_text(yaml.safe_dump(saved))


def summaries(content: str) -> Callable[[Path], None]:
    """A folder of two runs whose summary.json holds ``content`` (no run's record)."""

    def write(here: Path) -> None:
        for name in ("a", "b"):
            (here / "runs" / name).mkdir(parents=True)
            (here / "runs" / name / "summary.json").write_text(content)

    return write


def plugin_with_a_bad_default(here: Path) -> None:
    """A plugin folder whose attention's Config has a default of the wrong type."""
    (here / "my_plugins").mkdir()
    (here / "my_plugins" / "wide.py").write_text(
        "from dataclasses import dataclass\n\nfrom zoo.api import Attention, register\n\n\n"
        "@register('attention', 'wide')\nclass Wide(Attention):\n    @dataclass\n    class Config:\n"
        "        width: int = 'wide'\n"
    )


CASES = [
    # ----- a sweep's settings without -m: one ordinary run would train
    Case("asked", [*TRAIN, "hydra/sweeper=optuna", "model=gru", "hydra.sweeper.trials=1"], SWEEP_ONLY),
    Case("asked", [*TRAIN, "hydra/sweeper=optuna", "hydra.sweeper.flops=1e12"], SWEEP_ONLY),
    Case("asked", [*TRAIN, "hydra/launcher=parallel"], SWEEP_ONLY),
    Case("asked", [*TRAIN, "hydra/launcher=slurm"], SWEEP_ONLY),
    Case("asked", [*TRAIN, "hydra.sweeper.trials=3"], SWEEP_ONLY),
    Case("asked", [*TRAIN, "hydra.launcher.n_jobs=2"], SWEEP_ONLY),
    Case("asked", [*TRAIN, "hydra.sweep.dir=mine"], SWEEP_ONLY),
    # ----- a preset that sweeps, without -m: its first values alone would train
    *[Case("asked", [*BARE, f"experiment={preset}"], "add -m") for preset in SWEEPING_PRESETS],
    # ----- a group given twice: the last would win, silently
    Case("asked", [*BARE, "experiment=listops", "experiment=recall"], TWICE),
    Case("asked", [*TRAIN, "experiment=listops"], TWICE),
    Case("asked", [*TRAIN, "model=gru", "model=lstm"], TWICE),
    Case("asked", [*TRAIN, "encoder=gru", "encoder=lstm"], TWICE),
    Case("asked", [*TRAIN, "decoder=rnn", "decoder=transformer"], TWICE),
    Case("asked", [*TRAIN, "attention=dot", "attention=additive"], TWICE),
    Case("asked", [*TRAIN, "cross_attention=dot", "cross_attention=cosine"], TWICE),
    Case("asked", [*TRAIN, "posenc=sinusoidal", "posenc=rotary"], TWICE),
    Case("asked", [*TRAIN, "tokenizer=word", "tokenizer=char"], TWICE),
    Case("asked", [*TRAIN, "dataset=synthetic", "dataset=recall"], TWICE),
    Case("asked", [*TRAIN, "trainer=cpu", "trainer=ddp_cpu"], TWICE),
    Case("asked", [*TRAIN, "kv_layout=gqa", "kv_layout=mqa"], TWICE),
    Case("asked", [*SWEEP, "encoder=gru,lstm", "encoder=transformer"], TWICE),
    # ----- a setting a budget decides: it would be dropped
    *[Case("asked", [*TRAIN, "trainer.budget_flops=1e12", decided], DROPPED) for decided in DECIDED],
    Case("asked", [*TRAIN, "trainer.budget_minutes=5", "trainer.max_steps=3"], DROPPED),
    Case("asked", [*TRAIN, "trainer.budget_minutes=5", "trainer.max_epochs=1"], DROPPED),
    Case("asked", [*SWEEP, "trainer.budget_flops=1e9,2e9", "trainer.max_epochs=2"], DROPPED),
    Case("asked", ["train", "-m", "experiment=compare_compute", "trainer.max_epochs=1"], "the preset's sweep over"),
    Case("asked", ["train", "-m", "experiment=compare_listops", "trainer.max_steps=5"], "the preset's sweep over"),
    # ----- a budget that cannot be spent as asked
    Case("budget", [*TRAIN, "trainer.budget_flops=1"], "buys less than the 8 steps its validations need"),
    Case("budget", [*TRAIN, "trainer.budget_flops=1", "trainer.budget_validations=1"], "give at least"),
    Case("budget", [*TRAIN, "trainer.budget_flops=1e30"], "epochs of this run's data"),
    Case("budget", [*TRAIN, "trainer.budget_flops=1e400"], "budget_flops=inf must be in"),
    Case("budget", [*TRAIN, "trainer.budget_flops=nan"], "budget_flops=nan must be in"),
    Case("budget", [*TRAIN, "trainer.budget_minutes=1e-6"], "buys less than the 8 steps its validations need"),
    Case("budget", [*TRAIN, "trainer.budget_minutes=1e8"], "epochs of this run's data"),
    Case("budget", [*TRAIN, "trainer.budget_minutes=inf"], "budget_minutes=inf must be in"),
    Case("budget", ["train", "-m", "hydra/sweeper=optuna", "model=gru", "hydra.sweeper.flops=inf"], "finite"),
    Case("budget", ["train", "-m", "hydra/sweeper=optuna", "model=gru", "hydra.sweeper.minutes=inf"], "finite"),
    Case("budget", ["train", "-m", "hydra/sweeper=optuna", "model=gru", "hydra.sweeper.flops=nan"], "finite"),
    # ----- a finished budget run resumed: it was laid out when it started, and would only test again
    Case("resume", ["train", "resume=run", "trainer.max_epochs=5"], DROPPED, copy="finished_run", files=budgeted),
    Case(
        "resume",
        ["train", "resume=run", "trainer.max_time=00:01:00:00"],
        "spent its trainer.budget_flops=1e+09 already",
        copy="finished_run",
        files=budgeted,
    ),
    Case("resume", ["train", "resume=run"], "whatever its training limits", copy="finished_run", files=budgeted),
    # ----- a decoder that cannot write the task's outputs
    Case("config", [*SMOKE, "decoder=classifier"], "writes one token per source (a label), but task=translation"),
    Case("config", [*BARE, "task=captioning", "decoder=classifier"], "but task=captioning writes sequences"),
    Case("config", ["train", "-m", *SMOKE[1:], "decoder=rnn,classifier"], "decoder=classifier writes one token"),
    # ----- a monitor that cannot score the task's outputs: it would choose the checkpoint by noise
    Case("config", [*BARE, "experiment=listops", "monitor=bleu"], "needs outputs of 4 words or more"),
    Case("config", [*BARE, "experiment=recall", "monitor=bleu4"], "e.g. monitor=accuracy"),
    # ----- a resume that chooses another component: named as such, not as an edited config.yaml
    Case("resume", ["train", "resume=run", "posenc=sinusoidal"], "with posenc.name=sinusoidal", copy="finished_run"),
    # ----- data that could never fit
    Case("bounds", [*BARE, "experiment=recall", "dataset.length=100000000"], "more than this machine's memory"),
    Case("bounds", [*BARE, "experiment=recall", "dataset.length=10000"], "wider than a whole batch"),
    Case(
        "bounds",
        [*BARE, "experiment=recall", "task=translation", "decoder=rnn", "dataset.mode=selective_copying"]
        + ["dataset.length=100000000", "data.max_tokens=1000000000"],
        "more than this machine's memory",
    ),
    # ----- the compiled kernel switched neither on nor off
    Case("config", ["check", "mamba"], "ZOO_CPU_KERNELS=maybe: write", env={"ZOO_CPU_KERNELS": "maybe"}),
    Case("config", ["check", "s4d"], "ZOO_CPU_KERNELS=1: write", env={"ZOO_CPU_KERNELS": "1"}),
    # ----- zoo compare given what holds no run
    Case("messages", ["compare", "{run}/summary.json"], "is a file; give the run directory that holds it"),
    Case("messages", ["compare", "runs"], "holds no run's summary (nor do 1 more)", files=summaries("{}")),
    Case("messages", ["compare", "runs"], "holds no run's summary", files=summaries("null")),
    Case("messages", ["compare", "runs"], "holds no run's summary", files=summaries("[1, 2]")),
    # ----- a plugin's Config whose default is of the wrong type: one line, not OmegaConf's three
    Case("plugin", [*TRAIN, "plugin_dirs=[my_plugins]"], "full_key: width", files=plugin_with_a_bad_default),
    # ----- a range for a setting the search space does not tune yet
    Case(
        "search",
        ["train", "-m", "hydra/sweeper=optuna", "model=gru", 'search.space.trainer.budget_flops="interval(1e10,1e12)"'],
        "add one to the space with +search.space.trainer.budget_flops",
    ),
    Case("messages", [*TRAIN, "traner.max_epochs=3"], "did you mean trainer.max_epochs=3?"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_a_command_that_would_do_less_than_asked_is_one_line_and_changes_nothing(case, tmp_path, finished_run, request):
    here = tmp_path / "case"
    here.mkdir()
    assert_refused(case, here, finished_run, request)
