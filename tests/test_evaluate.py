"""Per-question evidence and the per-task cross-fitted evaluation (trac_metrics.features.evidence / .evaluate)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from record_factory import synthetic_question, synthetic_task

from trac_metrics import TracWarning
from trac_metrics.features import pce_features, tup_features
from trac_metrics.features.baselines import mean_logprob
from trac_metrics.features.evidence import question_evidence
from trac_metrics.heads import cross_fit
from trac_metrics.heads.evaluate import evaluate_task
from trac_metrics.selective import METRIC_NAMES, selective_metrics


@pytest.fixture(scope="module")
def task_evidence():
    return [question_evidence(records) for records in synthetic_task(120, seed=3, signal=1.0)]


def test_labels_use_answer_equivalence_not_string_equality():
    rng = np.random.default_rng(0)
    records = synthetic_question(rng, 0, correct=True, k=1)
    record = records[0]
    half = type(record)(**{**record.__dict__, "answer": "\\frac{1}{2}", "reference": "0.5"})
    assert question_evidence([half])["correct"] == 1


def test_evidence_rejects_mixed_or_incomplete_questions():
    rng = np.random.default_rng(1)
    first, second = synthetic_question(rng, 0, True), synthetic_question(rng, 1, False)
    with pytest.raises(ValueError, match="several questions"):
        question_evidence([first[0], second[1]])
    with pytest.raises(ValueError, match="repeats \\[0, 2\\]"):
        question_evidence([first[0], first[2]])
    no_reference = type(first[0])(**{**first[0].__dict__, "reference": None})
    with pytest.raises(ValueError, match="no reference answer"):
        question_evidence([no_reference])


def test_evidence_features_match_the_feature_functions():
    rng = np.random.default_rng(2)
    records = synthetic_question(rng, 5, correct=False, k=3)
    evidence = question_evidence(records)
    primary = records[0]
    probe = primary.probes["trace"]
    np.testing.assert_allclose(
        evidence["features"]["tup"],
        tup_features(primary.token_logprobs.astype(float), primary.topk_entropy.astype(float)),
    )
    np.testing.assert_allclose(
        evidence["features"]["pce"],
        pce_features(primary.answer, probe.answer, probe.answer_logprobs, probe.first_token_logprob),
        equal_nan=True,
    )
    assert evidence["baselines"]["mean_logprob"] == pytest.approx(mean_logprob(primary.token_logprobs))
    assert evidence["num_samples"] == 3 and set(evidence["features"]["consensus"]) == {
        "q_K",
        "h_K",
        "vote_margin",
        "q_primary",
    }


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
