"""Token summaries, P(True), repeat indexing, the record's labeller and the records folder
(trac_tasks.generation.capture)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from trac_tasks.generation.capture import (
    GenerationText,
    build_record,
    p_true_probability,
    repeat_indices,
    token_summaries,
)
from trac_tasks.generation.config import TracConfig


def test_token_summaries_use_the_k_largest_returned_logprobs():
    # position 0: the sampled token (-3.0) was outside the top 2, so the engine returned 3 entries
    chosen = [-3.0, -0.1]
    top = [[-0.5, -1.0, -3.0], [-0.1, -2.5]]
    summary = token_summaries(chosen, top, k=2)
    np.testing.assert_allclose(summary["token_logprobs"], chosen)
    np.testing.assert_allclose(summary["topk_mean_logprob"], [(-0.5 - 1.0) / 2, (-0.1 - 2.5) / 2])
    p = np.exp([-0.5, -1.0]) / np.exp([-0.5, -1.0]).sum()  # top-2 renormalized: docs/method.md#token-summaries
    assert summary["topk_entropy"][0] == pytest.approx(-(p * np.log(p)).sum())


def test_p_true_renormalizes_over_the_two_options():
    assert p_true_probability({"A": math.log(0.3), "B": math.log(0.1)}) == pytest.approx(0.75)
    assert p_true_probability({"A": -1.0}) == 1.0  # B outside the returned candidates: probability ~ 0
    assert math.isnan(p_true_probability({}))


def test_repeat_indices_count_occurrences_of_the_same_instance():
    first, second = object(), object()
    assert repeat_indices([first, first, first, second, second]) == [0, 1, 2, 0, 1]


@pytest.mark.parametrize(
    ("labels", "labeller"), [({}, None), ({"labels": "trac"}, None), ({"labels": "math-verify"}, "math-verify")]
)
def test_the_record_names_a_labeller_other_than_the_checker(labels, labeller):
    config = TracConfig.from_gen_kwargs({"trac": {"answer_kind": "math", "reference": "{{answer}}", **labels}}, "t")
    record = build_record(
        SimpleNamespace(doc={"answer": "4"}, task_name="t", doc_id=0),
        0,
        config,
        model="m",
        prompt_token_count=3,
        generated_ids=[1, 2],
        text="so 4",
        generated_text="so 4",
        answer="4",
        marker="",
        finish_reason="eos",
        summaries={name: np.zeros(2) for name in ("token_logprobs", "topk_entropy", "topk_mean_logprob")},
        probes={},
        p_true=None,
        label=None,
        num_samples=1,
        decoding={"temperature": 0.0},
        timing={},
    )
    assert record.labeller == labeller


def test_two_runs_started_in_the_same_second_write_different_files(monkeypatch):
    from pathlib import Path

    from trac_tasks.generation import capture

    monkeypatch.setattr(capture.time, "strftime", lambda pattern: "2026-01-01T00-00-00")
    first = capture.RecordSink(Path("records")).path_for("task")
    monkeypatch.setattr(capture.os, "getpid", lambda: 4_000_000)  # another process, same start second
    second = capture.RecordSink(Path("records")).path_for("task")
    assert first != second and first.parent == second.parent


def test_lm_eval_can_cast_a_target_to_the_type_of_a_generation_text():
    """lm-eval's ``generate_until`` scoring casts a string target to the response's type (``type(result)(gold)``,
    lm_eval.api.task.ConfigurableTask.process_results) when no filter turned the response into a plain string: a
    plain task switched on with ``--metadata trac`` hands it ours (tests/e2e/test_served.py runs that path)."""
    response = GenerationText("41", record=None)
    gold = type(response)("42")
    assert gold == "42" and gold.record is None and gold != response
