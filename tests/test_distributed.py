"""Runs that start more processes: Lightning's DDP relaunch and a Hydra joblib sweep with a folder plugin.

Each child process rebuilds the run from the environment and its command line alone, so these
runs check that `zoo train` relaunches as `python -m zoo.training.entry` and that folder plugins
have importable module names.
"""
from __future__ import annotations

import json

from conftest import TINY, run_zoo
from test_readme import fenced_block_after


def test_ddp_on_two_cpu_processes_writes_one_run_directory(tmp_path):
    """The default run directory holds a timestamp: a rank that composed its own would make a second one."""
    ddp = ["trainer.accelerator=cpu", "trainer.devices=2", "trainer.strategy=ddp"]  # on CPU Lightning picks gloo
    proc = run_zoo("train", *TINY, *ddp, cwd=tmp_path)
    assert "MEMBER: 2/2" in proc.stdout + proc.stderr, "the second rank never started"
    assert proc.stdout.count("run directory:") == 1, "only rank 0 prints the result"
    assert [p.name for p in tmp_path.iterdir()] == ["outputs"], "a rank wrote outside the run directory"
    (run_dir,) = (tmp_path / "outputs").glob("*/*")
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["steps"] > 0
    assert (run_dir / "checkpoints" / "best.ckpt").is_file()
    assert (run_dir / "config.yaml").is_file()


def test_joblib_sweep_workers_import_a_folder_plugin(tmp_path):
    (tmp_path / "my_plugins").mkdir()
    scorer = fenced_block_after("<!-- readme-test: file my_plugins/distance.py -->")  # the README's example plugin
    (tmp_path / "my_plugins" / "distance.py").write_text(scorer)
    sweep = ["-m", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2", "attention=distance,dot"]
    run_zoo("train", *sweep, "plugin_dirs=[my_plugins]", *TINY, f"hydra.sweep.dir={tmp_path / 'sweep'}", cwd=tmp_path)
    scorers = {
        job: json.loads((tmp_path / "sweep" / job / "summary.json").read_text())["components"]["attention"]["name"]
        for job in ("0", "1")
    }
    assert scorers == {"0": "distance", "1": "dot"}
