"""The ``trac`` aggregation reports the task's probe cache share (results key ``probe_cached_share``) and warns when
it is below 50 % (docs/method.md#probe-cache-share)."""

from __future__ import annotations

import dataclasses
import logging
import warnings
from types import SimpleNamespace

import numpy as np
import pytest
from record_factory import synthetic_question

from trac_metrics._warnings import TracWarning
from trac_metrics.answers import UNDECIDED_KEY
from trac_metrics.features.cache_share import probe_cache_counts
from trac_tasks.harness.task_functions import CACHED_SHARE_METRIC, aggregate_trac, process_results

TASK = "trac_demo"


def documents(cached: int | None) -> tuple[list[dict], list]:
    """20 questions' ``trac`` evidence and their records; ``cached`` replaces every trace probe's cached count."""
    rng = np.random.default_rng(7)
    evidences, every_record = [], []
    for doc_id in range(20):
        records = synthetic_question(rng, doc_id, doc_id % 2 == 0, k=3, task=TASK)
        if cached is not None:
            records = [
                dataclasses.replace(
                    record, probes={"trace": dataclasses.replace(record.probes["trace"], num_cached_tokens=cached)}
                )
                for record in records
            ]
        every_record += records
        evidences.append(process_results({}, [[SimpleNamespace(record=record) for record in records]])["trac"])
    return evidences, every_record


def aggregate(evidences: list[dict]) -> dict[str, float]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TracWarning)
        return dict(aggregate_trac(evidences))


def test_the_results_carry_the_share_of_the_records(caplog):
    evidences, records = documents(cached=None)
    with caplog.at_level(logging.WARNING, logger="lm_eval.trac_eval"):
        metrics = aggregate(evidences)
    share = metrics[CACHED_SHARE_METRIC]
    assert share == probe_cache_counts(records).share
    assert 0.5 < share < 1 and "prefix cache" not in caplog.text


def test_a_task_whose_probes_missed_the_cache_is_warned_about_once(caplog):
    evidences, _ = documents(cached=0)
    with caplog.at_level(logging.WARNING, logger="lm_eval.trac_eval"):
        metrics = aggregate(evidences)
    assert metrics[CACHED_SHARE_METRIC] == 0.0
    (warning,) = [record.getMessage() for record in caplog.records if "prefix cache" in record.getMessage()]
    assert f"task {TASK}: only 0.0 %" in warning and "enable_prefix_caching=False" in warning


def test_an_engine_that_reports_no_count_gives_nan_without_a_warning(caplog):
    evidences, _ = documents(cached=None)
    for evidence in evidences:
        evidence["probe_cache"] = {**evidence["probe_cache"], "cached_tokens": 0, "prompt_tokens": 0, "reported": 0}
    with caplog.at_level(logging.WARNING, logger="lm_eval.trac_eval"):
        metrics = aggregate(evidences)
    assert np.isnan(metrics[CACHED_SHARE_METRIC]) and "prefix cache" not in caplog.text


def test_evidence_with_malformed_counts_is_refused_naming_the_field():
    evidences, _ = documents(cached=None)
    evidences[3]["probe_cache"]["prompt_tokens"] = -5
    with pytest.raises(ValueError, match="'prompt_tokens' must be a non-negative integer"):
        aggregate(evidences)


OVER_BUDGET = ("(a+b+c+d+e)^{16}", "a^{16}")
"""An answer and a reference whose comparison runs out of the symbolic work budget (sympy expands the power)."""


def test_the_results_count_the_comparisons_that_ran_out_of_the_work_budget(caplog):
    rng = np.random.default_rng(3)
    evidences = []
    for doc_id in range(20):
        records = synthetic_question(rng, doc_id, doc_id % 2 == 0, k=3, task=TASK)
        if doc_id < 2:
            records = [dataclasses.replace(record, reference=OVER_BUDGET[1]) for record in records]
            records[0] = dataclasses.replace(records[0], answer=OVER_BUDGET[0])
        evidences.append(process_results({}, [[SimpleNamespace(record=record) for record in records]])["trac"])
    undecided = [evidence[UNDECIDED_KEY] for evidence in evidences]
    assert undecided[0] >= 1 and undecided[1] >= 1 and not any(undecided[2:]), undecided
    assert evidences[0]["correct"] == 0  # undecided: not equivalent
    with caplog.at_level(logging.WARNING, logger="lm_eval.trac_eval"):
        metrics = aggregate(evidences)
    assert metrics[UNDECIDED_KEY] == sum(undecided)
    (warning,) = [record.getMessage() for record in caplog.records if "work budget" in record.getMessage()]
    assert f"task {TASK}: {sum(undecided)} comparison(s)" in warning and "counted as not equivalent" in warning
