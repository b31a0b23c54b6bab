"""Moved options: the old spelling gets one line naming the new one, before anything is composed."""

import pytest
from helpers import fork_zoo

pytestmark = pytest.mark.slow


def test_an_old_option_name_points_to_its_new_spelling(tmp_path):
    proc = fork_zoo("train", "data.joint_vocab=true", f"hydra.run.dir={tmp_path / 'run'}", cwd=tmp_path, check=False)
    assert proc.returncode == 1
    assert proc.stderr.strip() == "zoo: error: data.joint_vocab is now task.joint_vocab; write task.joint_vocab=true"
    assert not (tmp_path / "run").exists()
