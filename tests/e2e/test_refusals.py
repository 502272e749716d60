"""Refusals before generation through the real ``lm_eval`` CLI (HF backend, tiny reasoner): a broken TrAC template in a
task YAML stops the run before anything is generated, naming the task, the template and the first failing document;
an output path that is a file is refused; a records folder that cannot be created (a virtual filesystem) is refused
before the model loads."""

from __future__ import annotations

import subprocess

import pytest
from lm_eval_runs import LOCAL_TASK, REASONER_ROWS, lm_eval_command, write_local_math500_task
from testenv import engine_env

pytestmark = pytest.mark.engine


def _lm_eval(root, tasks, reasoner_model):
    command = lm_eval_command(
        tasks, "hf", f"pretrained={reasoner_model},dtype=float32", root / "out", "--device", "cpu"
    )
    return subprocess.run(command, capture_output=True, text=True, timeout=900, env=engine_env(), cwd=root)


def test_an_unclosed_reference_template_fails_before_generation(tmp_path, reasoner_model):
    tasks = write_local_math500_task(tmp_path, 3, 2, max_gen_toks=16, rows=REASONER_ROWS)
    yaml = tasks / f"{LOCAL_TASK}.yaml"
    yaml.write_text(yaml.read_text().replace('reference: "{{answer}}"', 'reference: "{{answer"'))
    result = _lm_eval(tmp_path, tasks, reasoner_model)
    log = result.stdout + result.stderr
    assert result.returncode != 0
    assert f"task {LOCAL_TASK}, document 0" in log and "'{{answer'" in log
    assert "TrAC generations" not in log, "nothing may be generated"
    assert not list((tmp_path / "out").rglob("*.jsonl"))


def test_an_output_path_that_is_a_file_is_refused_before_generation(tmp_path, reasoner_model):
    tasks = write_local_math500_task(tmp_path, 3, 2, max_gen_toks=16, rows=REASONER_ROWS)
    out = tmp_path / "out"
    out.write_text("not a folder")
    result = _lm_eval(tmp_path, tasks, reasoner_model)
    log = result.stdout + result.stderr
    assert result.returncode != 0
    assert f"{out} is a file, not a folder: give --output_path a folder" in log
    assert "NotADirectoryError" not in log and "TrAC generations" not in log


def test_a_records_folder_that_cannot_be_created_is_refused_before_the_model_loads(tmp_path, reasoner_model):
    command = [
        *lm_eval_command(
            tmp_path, "hf", f"pretrained={reasoner_model},dtype=float32", tmp_path / "out", tasks="trac_demo"
        ),
        "--device",
        "cpu",
    ]
    command[command.index("--output_path") + 1] = "/proc/trac-eval-out"  # a virtual filesystem: no folder there
    result = subprocess.run(command, capture_output=True, text=True, timeout=900, env=engine_env(), cwd=tmp_path)
    log = result.stdout + result.stderr
    assert result.returncode != 0
    assert "write their records to /proc/trac-eval-out/trac_records, which cannot be written" in log
    assert "Initializing hf model" not in log, "refused before the model loads"
    assert "FileNotFoundError" not in log and "TrAC generations" not in log
