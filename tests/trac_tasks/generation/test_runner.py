"""The document check of the runner (trac_tasks.generation.runner.validate_documents,
docs/guide/reliability.md#broken-task-yamls-fail-before-generation):
the first document a TrAC template or metadata field fails on is named."""

from __future__ import annotations

import pytest

from trac_tasks.generation.config import TracConfig
from trac_tasks.generation.runner import validate_documents


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
