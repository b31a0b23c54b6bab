"""The README's commands and its plugin example work as written."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
from helpers import README, ROOT, fenced_block_after, fork_zoo

pytestmark = pytest.mark.slow


def test_readme_opens_with_exactly_two_commands():
    first = re.search(r"```\w*\n(.*?)```", README, re.S).group(1)
    commands = [line for line in first.splitlines() if line.strip()]
    assert commands == ["./run train", "./run test"]
    assert (ROOT / ".ci" / "run").read_text().rstrip().endswith("./run test")


def test_write_a_plugin_example_works_verbatim(tmp_path: Path):
    path = re.search(r"<!-- readme-test: file (\S+) -->", README).group(1)
    source = fenced_block_after(f"<!-- readme-test: file {path} -->")
    (tmp_path / path).parent.mkdir(parents=True)
    (tmp_path / path).write_text(source)
    commands = fenced_block_after("<!-- readme-test: commands -->")
    zoo_bin = Path(os.sys.executable).parent  # the same environment's `zoo` console script
    env = {**os.environ, "PATH": f"{zoo_bin}{os.pathsep}{os.environ['PATH']}", "WANDB_MODE": "offline"}
    outputs = []
    for line in commands.strip().splitlines():
        line = (
            line.split("  #")[0] + " hydra.run.dir=run trainer.enable_progress_bar=false" if " train " in line else line
        )
        proc = subprocess.run(["bash", "-c", line], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, f"{line}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
        outputs.append(proc.stdout)
    assert "distance" in outputs[0] and "scale: float = 1.0" in outputs[0]
    assert outputs[1].startswith("attention/distance [") and "failed" not in outputs[1]
    assert "attention=distance" in outputs[2]
    assert (tmp_path / "run" / "summary.json").is_file()


def test_every_kind_example_passes_zoo_check(tmp_path: Path):
    """The README's example of each kind, copied out as written, passes the contract checks of its kind."""
    folder = tmp_path / "my_plugins"
    folder.mkdir()
    names = re.findall(r"<!-- readme-test: check my_plugins/(\w+)\.py -->", README)
    assert len(names) >= 6, "the README lost its examples of each kind"
    for name in names:
        (folder / f"{name}.py").write_text(fenced_block_after(f"<!-- readme-test: check my_plugins/{name}.py -->"))
    checked = fork_zoo("check", *names, "--plugin-dir", str(folder), cwd=tmp_path)
    lines = checked.stdout.splitlines()
    assert [line.split(" [")[0].split("/")[1] for line in lines] == names
    assert all(line.endswith(" ok") and "failed" not in line for line in lines), checked.stdout
