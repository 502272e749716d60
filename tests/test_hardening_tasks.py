"""Hardening of the task side: strict ``trac`` switches, template failures and null references
refused by the document check, ``--gen_kwargs repeats``, a marker the model never writes, an output path that is a
file, and concurrent builds of the tiny model. Engine runs use the real ``lm_eval`` CLI (HF backend, tiny model)."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import time

import pytest
from conftest import REPO, engine_env
from lm_eval_runs import LOCAL_TASK, lm_eval_command, run_lm_eval, write_local_math500_task

from trac_tasks.generation.config import TracConfig
from trac_tasks.generation.runner import validate_documents


def _config(gen_kwargs: dict | None = None, **switches) -> TracConfig:
    block = {"answer_kind": "math", "reference": "{{answer}}", **switches}
    return TracConfig.from_gen_kwargs({**(gen_kwargs or {}), "trac": block}, "my_task")


@pytest.mark.parametrize(
    ("switches", "message"),
    [
        ({"top_k": 5.5}, "trac.top_k must be an integer, got 5.5"),
        ({"top_k": "5"}, "trac.top_k must be an integer, got '5'"),
        ({"top_k": True}, "trac.top_k must be an integer, got True"),
        ({"top_k": None}, "trac.top_k must be an integer, got None"),
        ({"marker": 3}, "trac.marker must be a string, got 3"),
        ({"cue": 5}, "trac.cue must be a string, got 5"),
        ({"reference": 5}, "trac.reference must be a string, got 5"),
        ({"answer_kind": None}, "trac.answer_kind must be a string, got None"),
        ({"p_true": "false"}, "trac.p_true must be true or false, got 'false'"),
        ({"probe_variants": None}, "trac.probe_variants must be a list of strings, got None"),
        ({"probe_variants": "trace"}, "trac.probe_variants must be a list of strings, got 'trace'"),
        ({"metadata_fields": None}, "trac.metadata_fields must be a list of strings, got None"),
        ({"metadata_fields": ["level", 2]}, "trac.metadata_fields must be a list of strings"),
    ],
)
def test_a_switch_of_the_wrong_type_names_the_task_and_the_switch(switches, message):
    with pytest.raises(ValueError, match="^task my_task: ") as error:
        _config(**switches)
    assert message in str(error.value)


@pytest.mark.parametrize(
    ("gen_kwargs", "message"),
    [
        ({"temperature": float("nan")}, "generation_kwargs.temperature must be a finite number ≥ 0, got nan"),
        ({"temperature": "0.7"}, "generation_kwargs.temperature must be a finite number ≥ 0, got '0.7'"),
        ({"temperature": -1.0}, "generation_kwargs.temperature must be a finite number ≥ 0"),
        ({"top_p": float("nan")}, "generation_kwargs.top_p must be a number in (0, 1], got nan"),
        ({"top_p": 0}, "generation_kwargs.top_p must be a number in (0, 1], got 0"),
    ],
)
def test_a_sampling_value_that_is_not_a_finite_number_is_refused(gen_kwargs, message):
    with pytest.raises(ValueError, match="^task my_task: ") as error:
        _config(gen_kwargs)
    assert message in str(error.value)


def test_well_typed_switches_are_kept():
    config = _config(
        {"temperature": 0, "top_p": 1.0}, top_k=3, p_true=True, probe_variants=["trace"], metadata_fields=["level"]
    )
    kept = (config.top_k, config.p_true, config.probe_variants, config.metadata_fields)
    assert kept == (3, True, ("trace",), ("level",))


class _Request:
    def __init__(self, doc_id: int, doc: dict) -> None:
        self.task_name, self.doc_id, self.doc = "t", doc_id, doc


def _check(reference: str, docs: list[dict]) -> str:
    config = TracConfig.from_gen_kwargs({"trac": {"answer_kind": "math", "reference": reference}}, "t")
    with pytest.raises(ValueError, match="^task t, document 1: ") as error:
        validate_documents([_Request(i, doc) for i, doc in enumerate(docs)], [config] * len(docs))
    return str(error.value)


@pytest.mark.parametrize("empty", [None, "", "  "])
def test_a_reference_that_renders_empty_is_refused_naming_the_document(empty):
    message = _check("{{answer}}", [{"answer": "4"}, {"answer": empty}])
    assert "trac.reference template '{{answer}}' renders to an empty reference" in message


@pytest.mark.parametrize(
    ("failing", "error"),
    [
        ("{{ (answer|int)/0 }}", "ZeroDivisionError: division by zero"),
        ("{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}", "RecursionError"),
        ("{{ answer.strip(1, 2, 3) }}", "TypeError"),
    ],
)
def test_any_template_failure_is_one_error_naming_task_template_and_document(failing, error):
    template = "{{answer}}{% if answer == '5' %}" + failing + "{% endif %}"
    message = _check(template, [{"answer": "4"}, {"answer": "5"}])
    assert f"trac.reference template {template!r} cannot be rendered" in message and error in message


def _hf_args(tiny_model) -> str:
    return f"pretrained={tiny_model},dtype=float32"


@pytest.fixture(scope="module")
def repeats_one_unknown_marker_run(tmp_path_factory, tiny_model):
    """One real run: a task with ``repeats: 2`` and ``trac.marker: "FINAL:"``, run with ``--gen_kwargs repeats=1``."""
    root = tmp_path_factory.mktemp("repeats")
    tasks = write_local_math500_task(root, 3, 2, max_gen_toks=16, extra_trac='    marker: "FINAL:"')
    return run_lm_eval(root, tasks, _hf_args(tiny_model), "hf", "--device", "cpu", "--gen_kwargs", "repeats=1")


@pytest.mark.engine
def test_gen_kwargs_repeats_sets_k(repeats_one_unknown_marker_run):
    (records_file,) = repeats_one_unknown_marker_run.record_files()
    records = [json.loads(line) for line in records_file.read_text().splitlines()]
    assert sorted(record["doc_id"] for record in records) == [0, 1, 2]
    assert {record["num_samples"] for record in records} == {1}
    assert "maj_acc" not in repeats_one_unknown_marker_run.task_metrics()


@pytest.mark.engine
def test_a_marker_the_model_never_writes_is_warned_once(repeats_one_unknown_marker_run):
    warning = f"task {LOCAL_TASK}: no answer was read from any of its 3 primary responses"
    assert repeats_one_unknown_marker_run.log.count(warning) == 1
    assert "trac.marker" in repeats_one_unknown_marker_run.log


@pytest.mark.engine
def test_an_output_path_that_is_a_file_is_refused_before_generation(tmp_path, tiny_model):
    tasks = write_local_math500_task(tmp_path, 3, 2, max_gen_toks=16)
    out = tmp_path / "results"
    out.write_text("not a folder")
    command = lm_eval_command(tasks, "hf", _hf_args(tiny_model), out, "--device", "cpu")
    result = subprocess.run(command, capture_output=True, text=True, timeout=900, env=engine_env(), cwd=tmp_path)
    log = result.stdout + result.stderr
    assert result.returncode != 0
    assert f"{out} is a file, not a folder: give --output_path a folder" in log
    assert "NotADirectoryError" not in log and "TrAC generations" not in log


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
