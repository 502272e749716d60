"""``trac evaluate`` says what it leaves out, as ``trac report`` does: a method some questions of a task lack is warned
with its count; a response without reasoning tokens scores its own question's trace length (0, warned), never
leaving the whole task without trace length (docs/guide/reliability.md#numbers-a-report-can-use)."""

from __future__ import annotations

import dataclasses
import json
import math
import warnings
from pathlib import Path

import numpy as np
import pytest
from record_factory import synthetic_question, with_every_input

from trac_metrics._warnings import TracWarning
from trac_metrics.cli import main
from trac_metrics.records import RecordWriter, ResponseRecord


def write_task(path: Path, change: dict[int, object]) -> Path:
    """24 questions of model m on task t; ``change`` maps a question to how its records change."""
    rng = np.random.default_rng(5)
    writer = RecordWriter(path)
    for doc_id in range(24):
        question = synthetic_question(rng, doc_id, rng.random() < 0.5, k=4, signal=0.5, task="t", model="m")
        writer.write_batch(change[doc_id](question, rng) if doc_id in change else question)
    return path


def evaluate(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[dict[str, float | None], list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        main(["evaluate", str(path), "--json"])
    messages = [str(item.message) for item in caught if issubclass(item.category, TracWarning)]
    return json.loads(capsys.readouterr().out)["t"], messages


def test_a_method_some_questions_lack_is_warned(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_task(tmp_path / "t.jsonl", dict.fromkeys(range(18), with_every_input))
    metrics, messages = evaluate(path, capsys)
    (note,) = [message for message in messages if "not reported, as some questions lack their scores" in message]
    assert note.startswith("m / t: not reported") and "p_true (6 of 24)" in note
    assert "p_true_auroc" not in metrics and metrics["trac_auroc"] is not None


def test_a_response_without_reasoning_scores_its_own_question(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def unreasoned(question: list[ResponseRecord], rng: np.random.Generator) -> list[ResponseRecord]:
        return [dataclasses.replace(question[0], reasoning_tokens=0), *question[1:]]

    metrics, messages = evaluate(write_task(tmp_path / "t.jsonl", {3: unreasoned}), capsys)
    assert "trace_length: a response with no reasoning tokens scores the shortest trace, 0" in messages
    assert metrics["trace_length_auroc"] is not None and math.isfinite(metrics["trace_length_auroc"])
    assert metrics["trace_length_ece"] is not None
