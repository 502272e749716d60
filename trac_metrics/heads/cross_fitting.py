"""Question-grouped cross-fitting: out-of-fold scores of the learned heads and out-of-fold probabilities of the
baselines' calibration maps (docs/method.md#cross-fitting-protocol, docs/method.md#calibration-maps).

In-domain scores are out-of-fold over 5 repetitions of a stratified 5-fold split that keeps all responses of a
question together, with fold seeds 2026, 7, 13, 42, 100. Every head and every calibration map of a task is fitted
on the same folds (:func:`cross_fit_many` with a :data:`Fitter` per model). A metric is computed per repetition and
averaged (:func:`oof_metric`); the per-response score is the mean out-of-fold score (:func:`mean_oof_score`).
Degenerate data (docs/method.md#degenerate-data) gives NaN scores with a TracWarning, never an error.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

import numpy as np
from sklearn.model_selection import StratifiedGroupKFold, StratifiedKFold

from trac_metrics._warnings import TracWarning
from trac_metrics.heads.calibration_maps import check_form, fit_calibration_map
from trac_metrics.heads.logistic import as_binary_labels, as_feature_matrix, class_shortage, fit_unchecked

FOLD_SEEDS = (2026, 7, 13, 42, 100)
"""Fold seeds of the 5 cross-fitting repetitions (docs/method.md#cross-fitting-protocol)."""

Predictor = Callable[[np.ndarray], np.ndarray]
Fitter = Callable[[np.ndarray, np.ndarray], Predictor]
"""Fits a model on training rows (features, 0/1 labels) and returns its P(correct) of other rows' features."""


def fit_head_predictor(features: np.ndarray, labels: np.ndarray) -> Predictor:
    """The learned head (docs/method.md#learned-heads) fitted on the rows: the default :data:`Fitter`."""
    return fit_unchecked(features, labels, [""] * features.shape[1]).predict


def _fit_map_predictor(features: np.ndarray, labels: np.ndarray, form: str) -> Predictor:
    fitted = fit_calibration_map(features[:, 0], labels, form)
    return lambda rows: fitted.predict(rows[:, 0])


def calibration_map_fitter(form: str) -> Fitter:
    """The :data:`Fitter` of a ``form`` calibration map on a one-column score matrix
    (docs/method.md#calibration-maps)."""
    return partial(_fit_map_predictor, form=check_form(form))


def _as_group_codes(groups: Any, n_rows: int) -> np.ndarray:
    """Question ids as integer codes 0..G-1 (same order as ``np.unique`` of the ids, as sklearn uses)."""
    ids = np.asarray(groups)
    if ids.ndim != 1 or ids.shape[0] != n_rows:
        raise ValueError(f"groups must be 1-D with one question id per row ({n_rows}), got shape {ids.shape}")
    try:
        _, codes = np.unique(ids, return_inverse=True)
    except TypeError:
        raise ValueError("groups must be comparable ids of one type (all str or all int)") from None
    return codes.reshape(-1)


def _check_n_splits(n_splits: Any) -> None:
    """``n_splits`` must be an integer ≥ 2."""
    if isinstance(n_splits, bool) or not isinstance(n_splits, (int, np.integer)) or n_splits < 2:
        raise ValueError(f"n_splits must be an integer ≥ 2, got {n_splits!r}")


def _check_seeds(seeds: Sequence[int]) -> tuple[int, ...]:
    """Fold seeds as a non-empty tuple of integers."""
    seeds = tuple(seeds)
    if not seeds or any(isinstance(s, bool) or not isinstance(s, (int, np.integer)) for s in seeds):
        raise ValueError(f"seeds must be a non-empty sequence of integers, got {seeds!r}")
    return seeds


def _as_scores_by_seed(scores_by_seed: Any) -> np.ndarray:
    """Out-of-fold scores as a 2-D float array (repetitions × responses)."""
    scores = np.asarray(scores_by_seed, dtype=float)
    if scores.ndim != 2 or scores.shape[0] == 0:
        raise ValueError(f"scores_by_seed must be 2-D (seeds × responses), got shape {scores.shape}")
    return scores


def _unsplittable_reason(labels: np.ndarray, group_codes: np.ndarray, n_splits: int) -> str | None:
    """Why no stratified group split into ``n_splits`` folds exists, or None when one does."""
    counts = np.bincount(labels, minlength=2)
    if (counts == 0).any():
        return f"all {labels.size} labels are {int(labels[0])} (one class only)"
    n_groups = int(group_codes.max()) + 1
    if n_groups < n_splits:
        return f"only {n_groups} question group(s), fewer than n_splits={n_splits}"
    if (counts < n_splits).all():
        return f"every class has fewer than n_splits={n_splits} samples (class counts {counts.tolist()})"
    return None


def fold_assignments(y: Any, groups: Any, seed: int, n_splits: int = 5) -> np.ndarray:
    """Test-fold index (0..n_splits-1) of each row for one repetition (docs/method.md#cross-fitting-protocol).

    ``StratifiedGroupKFold(n_splits, shuffle=True, random_state=seed)``: class-stratified, every row of a question
    (same ``groups`` id) in one fold. When every question has one row (the per-question evaluation) the grouping
    constraint is empty and ``StratifiedKFold(n_splits, shuffle=True, random_state=seed)`` splits instead: the same
    guarantees (stratified, seeded), a different assignment than the group splitter would draw, at a small
    fraction of its cost. Raises ValueError when no such split exists (one class, fewer groups than
    folds, every class smaller than ``n_splits``). sklearn's "least populated class" warning is silenced here:
    :func:`cross_fit` checks the resulting training folds itself.
    """
    labels = as_binary_labels(y)
    codes = _as_group_codes(groups, labels.size)
    _check_seeds([seed])
    _check_n_splits(n_splits)
    reason = _unsplittable_reason(labels, codes, n_splits)
    if reason is not None:
        raise ValueError(f"cannot split into {n_splits} stratified question-grouped folds: {reason}")
    rows = np.zeros((labels.size, 1))
    if int(codes.max()) + 1 == labels.size:  # one row per question
        splits = StratifiedKFold(n_splits=n_splits, shuffle=True, random_state=seed).split(rows, labels)
    else:
        splits = StratifiedGroupKFold(n_splits=n_splits, shuffle=True, random_state=seed).split(rows, labels, codes)
    folds = np.empty(labels.size, dtype=int)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The least populated class in y", category=UserWarning)
        for fold, (_, test_rows) in enumerate(splits):
            folds[test_rows] = fold
    return folds


def _degenerate_training_fold(
    labels: np.ndarray, folds_by_seed: Sequence[np.ndarray], seeds: Sequence[int]
) -> str | None:
    """The first training fold that cannot fit a head (docs/method.md#degenerate-data), described; None if all can."""
    for seed, folds in zip(seeds, folds_by_seed):
        for fold in np.unique(folds):
            shortage = class_shortage(labels[folds != fold])
            if shortage is not None:
                return f"with fold seed {seed}, the training rows for test fold {fold} have {shortage}"
    return None


def cross_fit(X: Any, y: Any, groups: Any, seeds: Sequence[int] = FOLD_SEEDS, n_splits: int = 5) -> np.ndarray:
    """Out-of-fold probabilities of class 1, shape (len(seeds), n rows) (docs/method.md#cross-fitting-protocol).

    For each seed, rows are split by :func:`fold_assignments`; for each fold a fresh head
    (:func:`~trac_metrics.heads.logistic.fit_head`) is fitted on the other folds only and scores the fold. Degenerate
    data (one class, fewer question groups than folds, or a training fold with fewer than 2 samples of a class) gives an
    all-NaN result and a TracWarning naming the cause; nothing is fitted then.
    """
    return cross_fit_many({"X": X}, y, groups, seeds, n_splits)["X"]


def cross_fit_many(
    feature_sets: Mapping[str, Any],
    y: Any,
    groups: Any,
    seeds: Sequence[int] = FOLD_SEEDS,
    n_splits: int = 5,
    fitters: Mapping[str, Fitter] | None = None,
) -> dict[str, np.ndarray]:
    """:func:`cross_fit` of several feature matrices of the same rows (one per model), on the same folds.

    The folds depend only on the labels, the question groups and the seeds, so they are computed once and every
    model is fitted on identical splits (docs/method.md#cross-fitting-protocol: all learned variants and the
    calibration maps share the folds). ``fitters[name]`` fits the model of ``feature_sets[name]`` (default: the head,
    :func:`fit_head_predictor`). Degenerate data gives all-NaN scores for every model and one TracWarning.
    """
    if not feature_sets:
        raise ValueError("cross_fit_many needs at least one feature matrix")
    matrices = {name: as_feature_matrix(X, name) for name, X in feature_sets.items()}
    n_rows = {matrix.shape[0] for matrix in matrices.values()}
    if len(n_rows) != 1:
        raise ValueError(
            f"feature matrices have different numbers of rows: "
            f"{ {name: matrix.shape[0] for name, matrix in matrices.items()} }"
        )
    labels = as_binary_labels(y, n_rows.pop())
    codes = _as_group_codes(groups, labels.size)
    seeds = _check_seeds(seeds)
    _check_n_splits(n_splits)
    reason = _unsplittable_reason(labels, codes, n_splits)
    folds_by_seed = [] if reason else [fold_assignments(labels, codes, seed, n_splits) for seed in seeds]
    reason = reason or _degenerate_training_fold(labels, folds_by_seed, seeds)
    if reason is not None:
        warnings.warn(f"cross_fit: {reason}; every out-of-fold score is NaN", TracWarning, stacklevel=3)
        return {name: np.full((len(seeds), labels.size), np.nan) for name in matrices}
    chosen = fitters or {}
    return {
        name: out_of_fold(features, labels, folds_by_seed, chosen.get(name, fit_head_predictor))
        for name, features in matrices.items()
    }


def out_of_fold(
    features: np.ndarray, labels: np.ndarray, folds_by_seed: Sequence[np.ndarray], fit: Fitter
) -> np.ndarray:
    """Scores of each fold by a model fitted on the other folds, for each repetition's fold assignment."""
    scores = np.full((len(folds_by_seed), labels.size), np.nan)
    for repetition, folds in enumerate(folds_by_seed):
        for fold in np.unique(folds):
            test_rows = folds == fold
            scores[repetition, test_rows] = fit(features[~test_rows], labels[~test_rows])(features[test_rows])
    return scores


def oof_metric(scores_by_seed: Any, labels: Any, metric: Callable[[np.ndarray, np.ndarray], float]) -> float:
    """Mean over repetitions of ``metric(scores_by_seed[i], labels)`` (docs/method.md#cross-fitting-protocol).

    NaN when a repetition's metric is NaN (the metric warns) or its scores contain NaN (a TracWarning here; the
    metric is not called on NaN scores).
    """
    scores = _as_scores_by_seed(scores_by_seed)
    labels = np.asarray(labels)
    if labels.shape != (scores.shape[1],):
        raise ValueError(f"labels must have shape ({scores.shape[1]},) to match scores_by_seed, got {labels.shape}")
    values = []
    for repetition, row in enumerate(scores):
        if np.isnan(row).any():
            warnings.warn(
                f"oof_metric: repetition {repetition} has NaN scores (degenerate cross-fit); the metric is NaN",
                TracWarning,
                stacklevel=2,
            )
            return float("nan")
        values.append(float(metric(row, labels)))
    return float(np.mean(values))


def mean_oof_score(scores_by_seed: Any) -> np.ndarray:
    """Per-response mean of the out-of-fold scores over repetitions: the reported score
    (docs/method.md#cross-fitting-protocol)."""
    return _as_scores_by_seed(scores_by_seed).mean(axis=0)
