"""Calibration maps (docs/method.md#calibration-maps): cross-fitted in the heads' folds (a question's probability never
sees its own label), equal to scikit-learn's isotonic regression and logistic regression fitted fold by fold, stored
as checked JSON, and reaching every method's calibration metrics in the task evaluation."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from record_factory import synthetic_task
from sklearn.isotonic import IsotonicRegression
from sklearn.linear_model import LogisticRegression

from trac_metrics import TracWarning, selective
from trac_metrics.features.evidence import question_evidence
from trac_metrics.heads import FOLD_SEEDS, HeadFormatError, fold_assignments
from trac_metrics.heads.calibration_maps import CalibrationMap, fit_calibration_map, probability_bound
from trac_metrics.heads.cross_fitting import calibration_map_fitter, fit_head_predictor, out_of_fold
from trac_metrics.heads.evaluate import evaluate_task

N_QUESTIONS = 120


@pytest.fixture(scope="module")
def task_evidence() -> list[dict]:
    return [question_evidence(records) for records in synthetic_task(N_QUESTIONS, seed=11, signal=0.6)]


@pytest.fixture(scope="module")
def evaluation(task_evidence):
    return evaluate_task(task_evidence)


def folds_of(labels: np.ndarray) -> list[np.ndarray]:
    return [fold_assignments(labels, np.arange(labels.size), seed) for seed in FOLD_SEEDS]


@pytest.mark.parametrize(
    "fit",
    [calibration_map_fitter("isotonic"), calibration_map_fitter("platt"), fit_head_predictor],
    ids=["isotonic", "platt", "head"],
)
def test_a_questions_probability_does_not_change_when_its_own_label_is_flipped(task_evidence, fit) -> None:
    labels = np.asarray([evidence["correct"] for evidence in task_evidence])
    scores = np.asarray([evidence["baselines"]["mean_logprob"] for evidence in task_evidence])[:, None]
    folds = folds_of(labels)  # the folds of the real labels, held fixed
    original = out_of_fold(scores, labels, folds, fit)
    moved_elsewhere = 0
    for question in range(0, N_QUESTIONS, 7):
        flipped = labels.copy()
        flipped[question] = 1 - flipped[question]
        again = out_of_fold(scores, flipped, folds, fit)
        np.testing.assert_array_equal(again[:, question], original[:, question])
        moved_elsewhere += int((again != original).any())
    assert moved_elsewhere > 0  # the label does move the maps that train on it


def test_baseline_probabilities_are_isotonic_maps_fitted_fold_by_fold_on_the_heads_folds(task_evidence, evaluation):
    labels = evaluation.labels
    for method in ("mean_logprob", "sc_modal", "selfdoubt"):
        scores = np.asarray([evidence["baselines"][method] for evidence in task_evidence])
        expected = np.empty((len(FOLD_SEEDS), labels.size))
        for repetition, folds in enumerate(folds_of(labels)):
            for fold in np.unique(folds):
                test = folds == fold
                isotonic = IsotonicRegression(out_of_bounds="clip").fit(scores[~test], labels[~test])
                bound = 1 / ((~test).sum() + 2)
                expected[repetition, test] = np.clip(isotonic.predict(scores[test]), bound, 1 - bound)
        np.testing.assert_allclose(evaluation.probabilities_by_seed[method], expected, rtol=0, atol=1e-12)
        np.testing.assert_allclose(evaluation.p_correct[method], expected.mean(axis=0), rtol=0, atol=1e-12)


def test_a_heads_probability_is_its_out_of_fold_score(evaluation):
    for method, scores_by_seed in evaluation.scores_by_seed.items():
        np.testing.assert_array_equal(evaluation.probabilities_by_seed[method], scores_by_seed)


def test_every_method_reports_every_metric_from_the_right_input(task_evidence, evaluation):
    labels = evaluation.labels
    for method in ("mean_logprob", "sc_modal", "trac", "cf"):
        ranked = evaluation.scores_by_seed.get(method)
        if ranked is None:  # a baseline ranks by its own score
            expected = selective.ranking_metrics(evaluation.scores[method], labels)
        else:
            per_seed = [selective.ranking_metrics(row, labels) for row in ranked]
            expected = {key: np.mean([values[key] for values in per_seed]) for key in per_seed[0]}
        per_seed = [selective.calibration_metrics(row, labels) for row in evaluation.probabilities_by_seed[method]]
        expected.update({key: np.mean([values[key] for values in per_seed]) for key in per_seed[0]})
        for metric in selective.METRIC_NAMES:
            assert evaluation.metrics[f"{method}_{metric}"] == pytest.approx(expected[metric], abs=1e-12)


def test_same_seeds_same_metrics(task_evidence, evaluation):
    again = evaluate_task(task_evidence)
    assert again.metrics == evaluation.metrics


def test_platt_maps_change_only_the_baselines_calibration(task_evidence, evaluation):
    platt = evaluate_task(task_evidence, calibration_map="platt")
    baselines = [method for method in evaluation.scores if method not in evaluation.scores_by_seed]
    changed = {
        key for key, value in evaluation.metrics.items() if platt.metrics[key] != value
    }  # a constant score (SelfDoubt here) gets the accuracy from either map
    calibration_of_baselines = {
        f"{method}_{name}" for method in baselines for name in selective.CALIBRATION_METRIC_NAMES
    }
    assert changed <= calibration_of_baselines and "mean_logprob_ece" in changed
    with pytest.raises(ValueError, match="calibration maps are"):
        evaluate_task(task_evidence, calibration_map="beta")


def test_ece_bins_reach_the_evaluation(task_evidence, evaluation):
    coarse = evaluate_task(task_evidence, ece_bins=3)
    probabilities = coarse.probabilities_by_seed["trac"]
    expected = np.mean([selective.ece(row, coarse.labels, 3) for row in probabilities])
    assert coarse.metrics["trac_ece"] == pytest.approx(expected, abs=1e-12)
    assert coarse.metrics["trac_brier"] == evaluation.metrics["trac_brier"]


def test_degenerate_labels_make_every_probability_nan_with_one_warning():
    evidence = [question_evidence(records) for records in synthetic_task(30, seed=2, accuracy=1.0)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = evaluate_task(evidence)
    assert sum("every out-of-fold score is NaN" in str(item.message) for item in caught) == 1
    for method in ("trac", "mean_logprob", "sc_modal"):
        assert np.isnan(result.probabilities_by_seed[method]).all()
        assert all(math.isnan(result.metrics[f"{method}_{name}"]) for name in selective.CALIBRATION_METRIC_NAMES)
    assert math.isfinite(result.metrics["mean_logprob_aurc"])  # the ranking of a baseline needs no fit


def test_a_baseline_with_a_nan_score_has_no_map(task_evidence):
    broken = [dict(evidence, baselines=dict(evidence["baselines"])) for evidence in task_evidence]
    broken[3]["baselines"]["selfdoubt"] = math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TracWarning)
        result = evaluate_task(broken)
    assert np.isnan(result.p_correct["selfdoubt"]).all() and math.isnan(result.metrics["selfdoubt_ece"])
    assert math.isfinite(result.metrics["mean_logprob_ece"])


# -------------------------------------------------------------------------------------------------- the maps


def test_isotonic_map_is_scikit_learns_within_the_bound():
    rng = np.random.default_rng(0)
    scores = np.round(rng.normal(size=80), 1)
    labels = (rng.random(80) < 1 / (1 + np.exp(-2 * scores))).astype(int)
    fitted = fit_calibration_map(scores, labels)
    grid = np.linspace(-4, 4, 101)
    bound = probability_bound(80)
    expected = np.clip(IsotonicRegression(out_of_bounds="clip").fit(scores, labels).predict(grid), bound, 1 - bound)
    np.testing.assert_allclose(fitted.predict(grid), expected, rtol=0, atol=1e-12)
    assert np.all(np.diff(fitted.predict(grid)) >= 0)
    assert np.isnan(fitted.predict(np.array([np.nan]))).all()


def test_platt_map_is_a_logistic_regression_on_the_standardized_score():
    rng = np.random.default_rng(1)
    scores = rng.normal(3.0, 2.0, 200)
    labels = (rng.random(200) < 1 / (1 + np.exp(-(scores - 3.0)))).astype(int)
    fitted = fit_calibration_map(scores, labels, "platt")
    standardized = ((scores - scores.mean()) / scores.std())[:, None]
    reference = LogisticRegression(C=1.0, tol=1e-12, max_iter=10_000).fit(standardized, labels)
    np.testing.assert_allclose(fitted.predict(scores), reference.predict_proba(standardized)[:, 1], atol=1e-6)


def test_maps_round_trip_through_json_and_refuse_malformed_files(tmp_path):
    rng = np.random.default_rng(2)
    scores, labels = rng.normal(size=50), rng.integers(0, 2, 50)
    for form in ("isotonic", "platt"):
        fitted = fit_calibration_map(scores, labels, form)
        path = tmp_path / f"{form}.json"
        fitted.save(path)
        assert CalibrationMap.load(path) == fitted
    payload = fit_calibration_map(scores, labels).to_dict()
    for field, value, message in (
        ("knots_x", [1.0, 0.5], "increasing"),
        ("knots_p", [0.9] + [0.1] * (len(payload["knots_x"]) - 1), "non-decreasing"),
        ("slope", 2.0, "null"),
        ("bound", 0.7, r"\(0, 0.5\)"),
        ("form", "beta", "one of"),
    ):
        with pytest.raises(HeadFormatError, match=message):
            CalibrationMap.from_dict({**payload, field: value})
    with pytest.raises(HeadFormatError, match="unknown field"):
        CalibrationMap.from_dict({**payload, "extra": 1})
    with pytest.raises(ValueError, match="finite scores"):
        fit_calibration_map([0.1, np.inf], [0, 1])
