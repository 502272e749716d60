"""The per-task cross-fitted evaluation (trac_metrics.heads.evaluate, docs/architecture.md#heads)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from record_factory import synthetic_task

from trac_metrics import TracWarning
from trac_metrics.features.evidence import question_evidence
from trac_metrics.heads import cross_fit
from trac_metrics.heads.evaluate import evaluate_task
from trac_metrics.selective import METRIC_NAMES, selective_metrics


@pytest.fixture(scope="module")
def task_evidence():
    return [question_evidence(records) for records in synthetic_task(120, seed=3, signal=1.0)]


def test_trac_metrics_equal_an_independent_cross_fit(task_evidence):
    evaluation = evaluate_task(task_evidence)
    labels = np.array([e["correct"] for e in task_evidence])
    rows = np.array([[*e["features"]["pce"], *e["features"]["tup"]] for e in task_evidence])
    by_seed = cross_fit(rows, labels, np.arange(len(labels)))
    expected = np.mean([selective_metrics(row, labels)["auroc"] for row in by_seed])
    assert evaluation.metrics["trac_auroc"] == pytest.approx(expected, abs=1e-12)
    np.testing.assert_allclose(evaluation.scores["trac"], by_seed.mean(axis=0))
    # a baseline is scored directly, without cross-fitting
    baseline = np.array([e["baselines"]["sc_modal"] for e in task_evidence])
    assert evaluation.metrics["sc_modal_aurc"] == pytest.approx(selective_metrics(baseline, labels)["aurc"])


def test_every_method_reports_every_metric_and_the_signal_is_found(task_evidence):
    metrics = evaluate_task(task_evidence).metrics
    for method in (
        "trac",
        "pce",
        "tup",
        "cf",
        "sup_consensus",
        "mean_logprob",
        "self_certainty",
        "deepconf_bottom",
        "selfdoubt",
        "sc_modal",
        "sc_primary",
        "semantic_entropy",
        "selfcheck",
        "cw_vote",
    ):
        for name in METRIC_NAMES:
            assert np.isfinite(metrics[f"{method}_{name}"]), f"{method}_{name}"
    assert metrics["trac_auroc"] > 0.8
    assert metrics["trac_excess_aurc"] < 1.0


def test_no_signal_gives_chance_level_trac():
    evidence = [question_evidence(records) for records in synthetic_task(150, seed=4, signal=0.0)]
    assert abs(evaluate_task(evidence).metrics["trac_auroc"] - 0.5) < 0.12


def test_same_seeds_same_metrics(task_evidence):
    assert evaluate_task(task_evidence).metrics == evaluate_task(task_evidence).metrics


def test_one_class_only_gives_nan_with_a_warning_not_an_error():
    evidence = [question_evidence(records) for records in synthetic_task(12, seed=5, accuracy=1.0)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        metrics = evaluate_task(evidence).metrics
    assert np.isnan(metrics["trac_auroc"]) and np.isnan(metrics["mean_logprob_auroc"])
    assert any(issubclass(w.category, TracWarning) and "one class" in str(w.message) for w in caught)
