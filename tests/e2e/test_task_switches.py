"""Task switches through the real ``lm_eval`` CLI (HF backend, tiny model): a broken TrAC template in a task YAML
stops the run before anything is generated, naming the task, the template and the first failing document; an output
path that is a file is refused before generation; ``--gen_kwargs repeats`` sets K; a marker the model never writes
is warned about once."""

from __future__ import annotations

import json
import subprocess

import pytest
from lm_eval_runs import LOCAL_TASK, lm_eval_command, run_lm_eval, write_local_math500_task
from testenv import engine_env

from trac_tasks.generation.config import TracConfig
from trac_tasks.generation.runner import validate_documents

pytestmark = pytest.mark.engine


def _lm_eval(root, tasks, tiny_model):
    command = lm_eval_command(tasks, "hf", f"pretrained={tiny_model},dtype=float32", root / "out", "--device", "cpu")
    return subprocess.run(command, capture_output=True, text=True, timeout=900, env=engine_env(), cwd=root)


def test_an_unclosed_reference_template_fails_before_generation(tmp_path, tiny_model):
    tasks = write_local_math500_task(tmp_path, 3, 2, max_gen_toks=16)
    yaml = tasks / f"{LOCAL_TASK}.yaml"
    yaml.write_text(yaml.read_text().replace('reference: "{{answer}}"', 'reference: "{{answer"'))
    result = _lm_eval(tmp_path, tasks, tiny_model)
    log = result.stdout + result.stderr
    assert result.returncode != 0
    assert f"task {LOCAL_TASK}, document 0" in log and "'{{answer'" in log
    assert "TrAC generations" not in log, "nothing may be generated"
    assert not list((tmp_path / "out").rglob("*.jsonl"))


class _Request:
    def __init__(self, doc_id: int, doc: dict) -> None:
        self.task_name, self.doc_id, self.doc = "t", doc_id, doc


@pytest.mark.parametrize(
    ("switches", "expected"),
    [
        ({"reference": "{{gold}}"}, "document 1: trac.reference template '{{gold}}'"),
        ({"reference": "{{answer}}", "answer_kind": "{{kind}}"}, "document 1: trac.answer_kind template"),
        ({"reference": "{{answer}}", "metadata_fields": ["topic"]}, "document 1: trac.metadata_fields ['topic']"),
    ],
)
def test_the_first_failing_document_is_named(switches, expected):
    docs = [{"answer": "1", "gold": "1", "kind": "math", "topic": "x"}, {"answer": "2", "kind": "essay"}]
    config = TracConfig.from_gen_kwargs({"trac": {"answer_kind": "math", **switches}}, "t")
    with pytest.raises(ValueError, match="task t, ") as error:
        validate_documents([_Request(i, doc) for i, doc in enumerate(docs)], [config, config])
    assert expected in str(error.value)


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
