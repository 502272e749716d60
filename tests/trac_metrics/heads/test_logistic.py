"""Tests for trac_metrics.heads: the head (docs/method.md#learned-heads), question-grouped cross-fitting, FittedHead
JSON, transfer."""

import json
import warnings

import numpy as np
import pytest
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import StratifiedKFold
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from trac_metrics._warnings import TracWarning
from trac_metrics.heads import (
    FOLD_SEEDS,
    FittedHead,
    cross_fit,
    cross_fitting,
    fit_head,
    fold_assignments,
    mean_oof_score,
    oof_metric,
    transfer_scores,
)


@pytest.fixture(autouse=True)
def single_threaded_blas():
    """These small logistic fits run 2-5x faster on one BLAS thread on a busy 2-core machine; scores are equal."""
    with threadpool_limits(limits=1, user_api="blas"):
        yield


def sklearn_head():
    """The head (docs/method.md#preprocessing) built from sklearn's own parts, its logistic regression solved to a tight
    tolerance: an independent implementation of what heads.fit_head computes."""
    return Pipeline(
        [
            ("impute", SimpleImputer(strategy="mean", add_indicator=True, keep_empty_features=True)),
            ("scale", StandardScaler()),
            ("logistic", LogisticRegression(C=1.0, tol=1e-12, max_iter=100_000)),
        ]
    )


def auroc(scores, labels):
    """Independent AUROC (sklearn), in the (scores, labels) order oof_metric passes."""
    return roc_auc_score(labels, scores)


def question_data(rng, n_questions, per_question, n_features):
    """Rows of ``per_question`` responses per question, with per-row labels and features weakly tied to them."""
    labels = rng.integers(0, 2, n_questions * per_question)
    features = rng.normal(size=(labels.size, n_features)) + 0.8 * labels[:, None]
    return features, labels, np.repeat(np.arange(n_questions), per_question)


# --------------------------------------------------------------------------------------- leakage / out-of-fold


def test_grouped_cross_fit_does_not_leak_questions_where_an_ungrouped_split_would(monkeypatch):
    # Every response of a question has the same 200 random features and the same random label: nothing
    # generalizes across questions, so an honest out-of-fold AUROC is ≈ 0.5. An ungrouped split puts ~3 of a
    # question's 4 copies in training, and 200 free dimensions let the head memorize them.
    rng = np.random.default_rng(0)
    n_questions, per_question = 300, 4
    X = np.repeat(rng.normal(size=(n_questions, 200)), per_question, axis=0)
    y = np.repeat(rng.integers(0, 2, n_questions), per_question)
    groups = np.repeat(np.arange(n_questions), per_question)

    grouped_auroc = oof_metric(cross_fit(X, y, groups), y, auroc)

    def ungrouped_fold_assignments(labels, group_ids, seed, n_splits):  # the regression this test guards against
        folds = np.empty(len(labels), dtype=int)
        splitter = StratifiedKFold(n_splits, shuffle=True, random_state=seed)
        for fold, (_, test) in enumerate(splitter.split(np.zeros((len(labels), 1)), labels)):
            folds[test] = fold
        return folds

    monkeypatch.setattr(cross_fitting, "fold_assignments", ungrouped_fold_assignments)
    ungrouped_auroc = oof_metric(cross_fit(X, y, groups), y, auroc)

    assert abs(grouped_auroc - 0.5) < 0.1
    assert ungrouped_auroc > 0.8  # a cross_fit that stopped grouping questions fails the line above


def test_perfect_feature_gives_out_of_fold_auroc_one():
    rng = np.random.default_rng(1)
    _, y, groups = question_data(rng, 60, 3, 1)
    X = np.column_stack([y + 0.01 * rng.normal(size=y.size), rng.normal(size=y.size)])
    scores = cross_fit(X, y, groups)
    assert [auroc(row, y) for row in scores] == [1.0] * len(FOLD_SEEDS)
    assert oof_metric(scores, y, auroc) == 1.0


def test_cross_fit_equals_an_independent_fold_by_fold_fit_using_its_fold_assignments(monkeypatch):
    rng = np.random.default_rng(2)
    X, y, groups = question_data(rng, 50, 3, 4)
    X[rng.random(X.shape) < 0.1] = np.nan

    used_seeds = []

    def recording_fold_assignments(labels, group_ids, seed, n_splits):
        used_seeds.append(seed)
        return fold_assignments(labels, group_ids, seed, n_splits)

    monkeypatch.setattr(cross_fitting, "fold_assignments", recording_fold_assignments)
    scores = cross_fit(X, y, groups)
    assert tuple(used_seeds) == FOLD_SEEDS

    for repetition, seed in enumerate(FOLD_SEEDS):
        folds = fold_assignments(y, groups, seed)
        expected = np.empty(y.size)
        for fold in range(5):
            test = folds == fold
            expected[test] = sklearn_head().fit(X[~test], y[~test]).predict_proba(X[test])[:, 1]
        np.testing.assert_allclose(scores[repetition], expected, rtol=0, atol=1e-7)


def test_fold_assignments_keep_questions_whole_and_stratify_labels():
    rng = np.random.default_rng(3)
    sizes = rng.integers(1, 7, 200)  # questions with 1..6 responses
    groups = np.repeat(np.arange(sizes.size), sizes)
    y = rng.integers(0, 2, groups.size)
    assignments = []
    for seed in FOLD_SEEDS:
        folds = fold_assignments(y, groups, seed, n_splits=5)
        assignments.append(folds)
        for question in range(sizes.size):
            assert np.unique(folds[groups == question]).size == 1
        assert sorted(np.unique(folds)) == [0, 1, 2, 3, 4]
        for fold in range(5):
            assert abs(y[folds == fold].mean() - y.mean()) < 0.05
    assert all(not np.array_equal(assignments[0], other) for other in assignments[1:])


def test_rows_of_a_test_fold_do_not_influence_each_others_scores():
    rng = np.random.default_rng(4)
    X, y, groups = question_data(rng, 40, 3, 3)
    seed = (FOLD_SEEDS[0],)
    folds = fold_assignments(y, groups, FOLD_SEEDS[0])
    row = int(np.flatnonzero(folds == 0)[0])
    base = cross_fit(X, y, groups, seeds=seed)[0, row]

    others_in_test_fold = (folds == 0) & (np.arange(y.size) != row)
    perturbed = X.copy()
    perturbed[others_in_test_fold] = 100.0 + rng.normal(size=perturbed[others_in_test_fold].shape)
    perturbed[np.flatnonzero(others_in_test_fold)[:3], 0] = np.nan  # NaNs only in the test fold
    assert cross_fit(perturbed, y, groups, seeds=seed)[0, row] == base

    training_perturbed = X.copy()  # the same change to training rows does move the score
    training_perturbed[folds != 0] = 100.0 + rng.normal(size=training_perturbed[folds != 0].shape)
    assert cross_fit(training_perturbed, y, groups, seeds=seed)[0, row] != pytest.approx(base, abs=1e-6)


def test_cross_fit_is_deterministic_and_depends_on_the_seed_list():
    rng = np.random.default_rng(5)
    X, y, groups = question_data(rng, 40, 3, 3)
    first = cross_fit(X, y, groups)
    np.testing.assert_array_equal(first, cross_fit(X, y, groups))
    assert first.shape == (len(FOLD_SEEDS), y.size)
    assert not np.allclose(first, cross_fit(X, y, groups, seeds=(1, 2, 3, 4, 5)))


# --------------------------------------------------------------------------------------- missing / constant


def test_missingness_indicator_carries_the_signal_of_a_missing_value():
    # The value is missing exactly when the label is 1 and N(0, 1) otherwise: after mean imputation the value
    # sits in the middle of the label-0 values, so only the indicator column can separate the classes.
    rng = np.random.default_rng(6)
    y = rng.integers(0, 2, 150)
    groups = np.arange(150)
    value = np.where(y == 1, np.nan, rng.normal(size=150))
    imputed_alone = np.where(np.isnan(value), np.nanmean(value), value)
    assert abs(auroc(imputed_alone, y) - 0.5) < 0.15
    assert oof_metric(cross_fit(value[:, None], y, groups), y, auroc) == 1.0


def test_all_nan_and_constant_columns_change_nothing_and_never_give_nan():
    rng = np.random.default_rng(7)
    X, y, groups = question_data(rng, 40, 3, 2)
    reference = cross_fit(X, y, groups)
    with_empty_and_constant = np.column_stack([X[:, 0], np.full(y.size, np.nan), np.full(y.size, 3.0), X[:, 1]])
    scores = cross_fit(with_empty_and_constant, y, groups)
    assert np.isfinite(scores).all()
    np.testing.assert_allclose(scores, reference, atol=1e-8)


def test_column_empty_in_some_training_folds_keeps_the_layout_aligned():
    rng = np.random.default_rng(8)
    X, y, groups = question_data(rng, 40, 3, 2)
    only_question_0 = np.where(groups == 0, 5.0, np.nan)  # all-NaN in every training fold without question 0
    scores = cross_fit(np.column_stack([only_question_0, X]), y, groups)
    assert np.isfinite(scores).all()
    # The fold that tests question 0 trains on an all-NaN column (coefficient 0): its scores are those of the
    # head without the column, although the test rows carry a value there.
    folds = fold_assignments(y, groups, FOLD_SEEDS[0])
    test = folds == folds[0]
    without = sklearn_head().fit(X[~test], y[~test]).predict_proba(X[test])[:, 1]
    np.testing.assert_allclose(scores[0, test], without, atol=1e-8)


# --------------------------------------------------------------------------------------- degenerate / bad input


@pytest.mark.parametrize(
    ("labels", "group_ids", "reason"),
    [
        ([1] * 30, np.arange(30), "one class only"),
        ([0, 1] * 15, np.arange(30) % 4, r"only 4 question group\(s\), fewer than n_splits=5"),
        # one positive: every training fold that does not test it has 1 positive
        ([0] * 29 + [1], np.arange(30), r"1 sample\(s\) of class 1"),
        # two positives in one question: the training rows of the fold that tests that question have none
        ([0] * 28 + [1, 1], np.r_[np.arange(28), 28, 28], r"0 sample\(s\) of class 1"),
        ([0, 0, 0, 1, 1, 1], np.arange(6), "every class has fewer than n_splits=5"),
    ],
)
def test_degenerate_data_gives_all_nan_and_a_warning_naming_the_cause(labels, group_ids, reason):
    y = np.array(labels)
    X = np.random.default_rng(9).normal(size=(y.size, 2))
    with pytest.warns(TracWarning, match=reason):
        scores = cross_fit(X, y, group_ids)
    assert scores.shape == (len(FOLD_SEEDS), y.size)
    assert np.isnan(scores).all()


@pytest.mark.parametrize(
    ("X", "y", "groups", "kwargs", "message"),
    [
        (np.zeros(6), [0, 1] * 3, range(6), {}, "must be 2-D"),
        (np.full((6, 1), np.inf), [0, 1] * 3, range(6), {}, "inf"),
        (np.zeros((6, 1)), [0, 2] * 3, range(6), {}, "only 0/1 labels"),
        (np.zeros((6, 1)), [0, 1] * 2, range(6), {}, "one label per row"),
        (np.zeros((6, 1)), [0, 1] * 3, range(5), {}, "one question id per row"),
        (np.zeros((6, 1)), [0, 1] * 3, range(6), {"n_splits": 1}, "n_splits"),
        (np.zeros((6, 1)), [0, 1] * 3, range(6), {"seeds": ()}, "seeds"),
    ],
)
def test_bad_input_is_a_value_error_naming_the_problem(X, y, groups, kwargs, message):
    with pytest.raises(ValueError, match=message):
        cross_fit(X, y, list(groups), **kwargs)


def test_fold_assignments_refuses_an_impossible_split():
    with pytest.raises(ValueError, match="fewer than n_splits=5"):
        fold_assignments([0, 1, 0, 1], [0, 1, 2, 3], seed=7)


# --------------------------------------------------------------------------------------- metric averaging


def test_oof_metric_averages_the_per_repetition_metric_not_the_metric_of_the_mean():
    labels = [1, 0, 1, 0]
    scores = [[0.9, 0.1, 0.8, 0.2], [0.1, 0.9, 0.8, 0.2]]
    # Repetition 0 ranks both positives first: AUROC 1. Repetition 1: positive scores {0.1, 0.8} vs negative
    # {0.9, 0.2}; of the 4 pairs only 0.8 > 0.2 is won: AUROC 1/4. Mean = (1 + 0.25) / 2 = 0.625.
    assert oof_metric(scores, labels, auroc) == pytest.approx(0.625)
    # The mean score [0.5, 0.5, 0.8, 0.2] would give (0.5 tie + 1 + 1 + 1) / 4 = 0.875 instead.
    np.testing.assert_allclose(mean_oof_score(scores), [0.5, 0.5, 0.8, 0.2])


def test_oof_metric_is_nan_for_nan_scores_or_a_nan_metric():
    calls = []

    def recording_metric(scores, labels):
        calls.append(scores)
        return float("nan")

    with pytest.warns(TracWarning, match="repetition 1 has NaN scores"):
        assert np.isnan(oof_metric([[0.2, 0.8], [np.nan, 0.5]], [0, 1], auroc))
    assert np.isnan(oof_metric([[0.2, 0.8]], [0, 1], recording_metric))
    assert len(calls) == 1
    with pytest.raises(ValueError, match="labels must have shape"):
        oof_metric([[0.2, 0.8]], [0, 1, 1], auroc)


# --------------------------------------------------------------------------------------- FittedHead


def training_rows_with_missing_values():
    rng = np.random.default_rng(10)
    y = rng.integers(0, 2, 80)
    X = np.column_stack(
        [
            rng.normal(size=80) + y,  # complete
            np.where(rng.random(80) < 0.3, np.nan, rng.normal(size=80) - y),  # partly missing
            np.full(80, np.nan),  # missing everywhere
            np.full(80, 2.0),  # constant
        ]
    )
    new_rows = np.array([[0.3, np.nan, 1.0, np.nan], [np.nan, -0.5, np.nan, 2.0], [1.5, 0.2, np.nan, 7.0]])
    return X, y, new_rows


def test_fitted_head_predicts_like_the_sklearn_pipeline():
    X, y, new_rows = training_rows_with_missing_values()
    head = fit_head(X, y, ["a", "b", "c", "d"])
    pipeline = sklearn_head().fit(X, y)
    assert head.indicator_features == (1, 2)
    for rows in (X, new_rows):
        np.testing.assert_allclose(head.predict(rows), pipeline.predict_proba(rows)[:, 1], rtol=0, atol=1e-8)
    with pytest.raises(ValueError, match="X has 3 columns, expected 4"):
        head.predict(new_rows[:, :3])


def test_fitted_head_json_round_trip(tmp_path):
    X, y, new_rows = training_rows_with_missing_values()
    head = fit_head(X, y, ["a", "b", "c", "d"], metadata={"task": "gsm8k", "seeds": [2026, 7]})
    assert FittedHead.from_dict(head.to_dict()) == head

    path = tmp_path / "head.json"
    head.save(path)
    payload = json.loads(path.read_text())
    assert (payload["kind"], payload["version"]) == ("trac_metrics.FittedHead", 1)
    loaded = FittedHead.load(path)
    assert loaded == head
    np.testing.assert_array_equal(loaded.predict(new_rows), head.predict(new_rows))

    for field, value, message in [
        ("version", 2, r"head.json: field 'version': expected 1 .*got 2"),
        ("kind", "trac-record/1", "not a FittedHead"),
    ]:
        path.write_text(json.dumps({**payload, field: value}))
        with pytest.raises(ValueError, match=message):
            FittedHead.load(path)
    del payload["coef"]
    with pytest.raises(ValueError, match="lacks the field 'coef'"):
        FittedHead.from_dict(payload)


@pytest.mark.parametrize("C", [1.0, 0.1])
def test_head_is_the_l2_penalized_logistic_optimum(C):
    # Stationarity of  C·Σ log-loss + ½‖w‖²  at the optimum: w = C·Zᵀ(y − p) and Σ(y − p) = 0, with Z the design
    # built here by hand: column means imputed, an indicator for the partly missing column, z-scored (ddof 0).
    # An unpenalized or L1 head violates the first equation by about the size of w.
    X, y, _ = training_rows_with_missing_values()
    X = X[:, :2]
    head = fit_head(X, y, ["a", "b"], C=C)
    missing = np.isnan(X[:, 1])
    design = np.column_stack([X[:, 0], np.where(missing, np.nanmean(X[:, 1]), X[:, 1]), missing])
    design = (design - design.mean(axis=0)) / design.std(axis=0)
    residual = y - head.predict(X)
    np.testing.assert_allclose(head.coef, C * design.T @ residual, atol=0.01)
    assert abs(residual.sum()) < 0.01


def test_fit_head_refuses_a_single_class():
    with pytest.raises(ValueError, match=r"1 sample\(s\) of class 1"):
        fit_head(np.zeros((5, 1)), [0, 0, 0, 0, 1], ["a"])


# --------------------------------------------------------------------------------------- transfer heads


def test_transfer_scores_use_source_statistics_only():
    rng = np.random.default_rng(11)
    X_source, y_source, _ = question_data(rng, 60, 1, 2)
    X_target = rng.normal(loc=5.0, size=(10, 2))
    X_target[0, 1] = np.nan  # the source has no NaN in column 1: the source mean is imputed, no indicator
    names = ["a", "b"]
    scores = transfer_scores(X_source, y_source, X_target, names)

    head = fit_head(X_source, y_source, names)
    np.testing.assert_array_equal(scores, head.predict(X_target))
    filled_with_source_mean = [[X_target[0, 0], X_source[:, 1].mean()]]
    assert scores[0] == pytest.approx(transfer_scores(X_source, y_source, filled_with_source_mean, names)[0])

    other_targets_changed = X_target.copy()
    other_targets_changed[1:] = rng.normal(loc=-50.0, size=(9, 2))
    other_targets_changed[1:4, 0] = np.nan
    assert transfer_scores(X_source, y_source, other_targets_changed, names)[0] == scores[0]


def test_transfer_scores_degenerate_source_warns_and_gives_nan():
    with pytest.warns(TracWarning, match=r"source rows have 0 sample\(s\) of class 1"):
        scores = transfer_scores(np.zeros((4, 1)), [0, 0, 0, 0], np.zeros((3, 1)), ["a"])
    assert scores.shape == (3,) and np.isnan(scores).all()
    with pytest.raises(ValueError, match="column counts differ"):
        transfer_scores(np.zeros((4, 1)), [0, 1, 0, 1], np.zeros((3, 2)), ["a"])


def test_no_stray_warnings_on_ordinary_data():
    rng = np.random.default_rng(12)
    X, y, groups = question_data(rng, 30, 2, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cross_fit(X, y, groups)
