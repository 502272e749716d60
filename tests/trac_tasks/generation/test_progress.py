"""The closing summary of a task's written records (trac_tasks.generation.progress.TaskSummary): P(True) answers
stored as NaN are counted and warned about (docs/method.md#ptrue)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
from record_factory import synthetic_question

from trac_tasks.generation.progress import TaskSummary


def _question(doc_id: int, p_true: float | None) -> list:
    records = synthetic_question(np.random.default_rng(doc_id), doc_id, correct=True, k=2, task="t")
    return [dataclasses.replace(records[0], p_true=p_true), *records[1:]]


def test_p_true_left_undefined_is_counted_over_the_questions_that_asked_for_it():
    summary = TaskSummary("t")
    for doc_id, p_true in enumerate([0.8, float("nan"), float("nan"), 0.1]):
        summary.add_question(_question(doc_id, p_true), Path("t.jsonl"))
    warning = summary.p_true_warning()
    assert warning is not None and "task t: P(True) is NaN for 2 of 4 questions" in warning


def test_no_warning_when_every_p_true_is_defined_or_none_was_asked():
    defined, not_asked = TaskSummary("t"), TaskSummary("t")
    for doc_id in range(3):
        defined.add_question(_question(doc_id, 0.5), Path("t.jsonl"))
        not_asked.add_question(_question(doc_id, None), Path("t.jsonl"))
    assert defined.p_true_warning() is None and not_asked.p_true_warning() is None
    assert not_asked.p_true_asked == 0
