"""A broken TrAC template in a task YAML stops the run before anything is generated, naming the task, the template
and the first failing document (the real ``lm_eval`` CLI, HF backend, tiny model)."""

from __future__ import annotations

import subprocess

import pytest
from conftest import engine_env
from lm_eval_runs import LOCAL_TASK, lm_eval_command, write_local_math500_task

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
