"""The offline tiny model (trac_tasks.data.tiny_model): two builders take turns on a file lock, each staging in its own
folder, and leave one sound model folder."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import time

import pytest
from testenv import REPO


@pytest.mark.subprocess
def test_a_builder_waits_for_the_lock_and_returns_the_folder_built_meanwhile(tmp_path, tiny_model):
    target = tmp_path / "tiny"
    with open(tmp_path / "tiny.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another builder at work
        builder = subprocess.Popen([sys.executable, "-m", "trac_tasks.data.tiny_model", str(target)], cwd=REPO)
        time.sleep(3)  # the builder has found no folder and waits on the lock
        target.mkdir()
        for path in tiny_model.iterdir():  # what the other builder renames into place
            (target / path.name).symlink_to(path)
    assert builder.wait(timeout=600) == 0
    assert all(path.is_symlink() for path in target.iterdir()), "the folder built meanwhile is kept, not rebuilt"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["tiny", "tiny.lock"]


@pytest.mark.subprocess
def test_two_concurrent_builds_of_the_tiny_model_give_one_sound_folder(tmp_path, tiny_model):
    target = tmp_path / "tiny"
    build = [sys.executable, "-m", "trac_tasks.data.tiny_model"]
    env = {**os.environ, "TRAC_TINY_MODEL_DIR": str(target)}
    builders = [
        subprocess.Popen(build, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO, env=env) for _ in range(2)
    ]
    outputs = [builder.communicate(timeout=900) for builder in builders]
    assert [builder.returncode for builder in builders] == [0, 0], [err.decode()[-3000:] for _, err in outputs]
    assert [out.decode().strip().splitlines()[-1] for out, _ in outputs] == [str(target)] * 2
    assert sorted(path.name for path in tmp_path.iterdir()) == ["tiny", "tiny.lock"], "no staging folder is left"
    assert sorted(path.name for path in target.iterdir()) == sorted(path.name for path in tiny_model.iterdir())
    assert target.stat().st_mode & 0o777 == 0o755
    assert (target / "model.safetensors").stat().st_size == (tiny_model / "model.safetensors").stat().st_size
