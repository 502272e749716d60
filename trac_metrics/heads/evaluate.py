"""One task's TrAC evaluation: cross-fitted heads, baselines and their calibration maps → selective-prediction,
rejection and calibration metrics (docs/method.md#cross-fitting-protocol, docs/method.md#selective-prediction-metrics,
docs/method.md#calibration).

Input: the per-question evidence dicts of :mod:`trac_metrics.features.evidence` (one row per question: the primary
response). Every learned method of the registry (:func:`trac_metrics.methods.head_features`: TrAC, its PCE / TUP
components, Consensus Fusion @K, Supervised Consensus@K and the probe-variant ablation heads) and the calibration map
of every baseline (docs/method.md#calibration-maps) are cross-fitted on the same folds, computed once
(``heads.cross_fit_many``). A method's ranking metrics are computed from its score (a head's out-of-fold score per
repetition, averaged over repetitions; a baseline's own score), its calibration metrics from its probability of
correctness per repetition (a head's out-of-fold score; a baseline's score through a map fitted without the scored
question), averaged over repetitions. Results use one naming scheme: ``<method>_<metric>``, e.g. ``trac_auroc``,
``sc_modal_aurc``, ``mean_logprob_ece``, ``trac_risk_at_10``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from trac_metrics._warnings import TracWarning
from trac_metrics.heads.calibration_maps import DEFAULT_CALIBRATION_MAP
from trac_metrics.heads.cross_fitting import FOLD_SEEDS, calibration_map_fitter, cross_fit_many, mean_oof_score
from trac_metrics.methods import FeatureRow, head_features
from trac_metrics.selective import (
    CALIBRATION_METRIC_NAMES,
    DEFAULT_ECE_BINS,
    RANKING_METRIC_NAMES,
    calibration_metrics,
    ranking_metrics,
)


@dataclass(frozen=True)
class TaskEvaluation:
    """Metrics (``<method>_<metric>``), per-question scores per method, labels and the question ids.

    ``scores`` of a learned head is its mean out-of-fold score; ``scores_by_seed[head]`` keeps the out-of-fold
    scores of each cross-fitting repetition (repetitions × questions), from which its metrics are averaged.
    ``probabilities_by_seed[method]`` is every method's out-of-fold probability of correctness per repetition (a
    head's out-of-fold scores; a baseline's calibrated score), from which its calibration metrics are averaged.
    """

    metrics: dict[str, float]
    scores: dict[str, np.ndarray]
    labels: np.ndarray
    doc_ids: list[Any]
    scores_by_seed: dict[str, np.ndarray] = field(default_factory=dict)
    probabilities_by_seed: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def p_correct(self) -> dict[str, np.ndarray]:
        """Each method's per-question probability of correctness: the mean over repetitions of its out-of-fold
        probability (docs/method.md#calibration-maps)."""
        return {method: mean_oof_score(values) for method, values in self.probabilities_by_seed.items()}


def _named(metrics: Mapping[str, float], method: str) -> dict[str, float]:
    return {f"{method}_{name}": float(value) for name, value in metrics.items()}


def _repetition_mean(
    values_by_seed: np.ndarray,
    labels: np.ndarray,
    metrics: Callable[[np.ndarray, np.ndarray], dict[str, float]],
    names: Sequence[str],
) -> dict[str, float]:
    """docs/method.md#cross-fitting-protocol: the metrics ``names`` are computed per repetition and averaged over
    repetitions; all NaN when the cross-fit gave NaN (it warned already)."""
    if np.isnan(values_by_seed).any():
        return dict.fromkeys(names, float("nan"))
    per_seed = [metrics(row, labels) for row in values_by_seed]
    return {key: float(np.mean([values[key] for values in per_seed])) for key in per_seed[0]}


def evaluate_task(
    evidences: Sequence[Mapping[str, Any]],
    seeds: Sequence[int] = FOLD_SEEDS,
    n_splits: int = 5,
    heads: Mapping[str, FeatureRow] | None = None,
    calibration_map: str = DEFAULT_CALIBRATION_MAP,
    ece_bins: int = DEFAULT_ECE_BINS,
) -> TaskEvaluation:
    """Cross-fitted metrics of every method computable from ``evidences`` (one dict per question).

    ``heads`` (default: the registry's task heads, :func:`trac_metrics.methods.head_features`) names the learned
    methods and their feature rows; a report adds its analysis heads here so they share the folds. Each head is
    fitted on its own, so adding heads never changes another head's numbers. ``calibration_map`` is the form of the
    baselines' maps (``isotonic`` or ``platt``), ``ece_bins`` the ECE's number of equal-mass bins.

    Degenerate data (one class, too few questions to split) gives NaN metrics with a TracWarning, never an error;
    accuracy is reported by the caller independently of this function. BLAS runs single-threaded here: the many
    small logistic fits are several times faster that way, with identical results.
    """
    with threadpool_limits(limits=1, user_api="blas"):
        chosen = head_features() if heads is None else heads
        return _evaluate(evidences, seeds, n_splits, chosen, calibration_map, ece_bins)


def _head_rows(evidences: Sequence[Mapping[str, Any]], heads: Mapping[str, FeatureRow]) -> dict[str, np.ndarray]:
    """The feature matrix of every head whose row every question has (a warning names a head some questions lack)."""
    feature_sets = {}
    for method, row_of in heads.items():
        rows = [row_of(evidence) for evidence in evidences]
        missing = sum(row is None for row in rows)
        if not missing:
            feature_sets[method] = np.asarray(rows, dtype=np.float64)
        elif missing < len(rows):
            warnings.warn(
                f"{method} head not reported: {missing} of {len(rows)} questions lack its features",
                TracWarning,
                stacklevel=4,
            )
    return feature_sets


def _baseline_scores(evidences: Sequence[Mapping[str, Any]]) -> dict[str, np.ndarray]:
    """The score of every baseline every question has."""
    names = [name for name in evidences[0]["baselines"] if all(name in evidence["baselines"] for evidence in evidences)]
    return {
        name: np.asarray([evidence["baselines"][name] for evidence in evidences], dtype=np.float64) for name in names
    }


def _cross_fit(
    feature_sets: Mapping[str, np.ndarray],
    baselines: Mapping[str, np.ndarray],
    labels: np.ndarray,
    seeds: Sequence[int],
    n_splits: int,
    calibration_map: str,
) -> dict[str, np.ndarray]:
    """Out-of-fold probabilities (repetitions × questions) of every head and of every baseline's calibration map, on
    the same folds; a baseline with a non-finite score has no map (NaN). Cross-fitting warnings are issued once."""
    calibrated = {name: values[:, None] for name, values in baselines.items() if np.isfinite(values).all()}
    models = {**feature_sets, **calibrated}
    fitted: dict[str, np.ndarray] = {}
    if models:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fit_map = calibration_map_fitter(calibration_map)
            fitted = cross_fit_many(
                models, labels, np.arange(labels.size), seeds, n_splits, dict.fromkeys(calibrated, fit_map)
            )
        _rewarn_once(caught, ", ".join(models))
    missing = np.full((len(seeds), labels.size), np.nan)
    return {method: fitted.get(method, missing) for method in (*feature_sets, *baselines)}


def _evaluate(
    evidences: Sequence[Mapping[str, Any]],
    seeds: Sequence[int],
    n_splits: int,
    heads: Mapping[str, FeatureRow],
    calibration_map: str,
    ece_bins: int,
) -> TaskEvaluation:
    if not evidences:
        raise ValueError("evaluate_task needs at least one question's evidence")
    labels = np.asarray([evidence["correct"] for evidence in evidences], dtype=np.int64)
    doc_ids = [evidence["doc_id"] for evidence in evidences]
    feature_sets = _head_rows(evidences, heads)
    baselines = _baseline_scores(evidences)
    probabilities = _cross_fit(feature_sets, baselines, labels, seeds, n_splits, calibration_map)
    calibration = partial(calibration_metrics, n_bins=ece_bins)
    metrics: dict[str, float] = {}
    scores: dict[str, np.ndarray] = {}
    by_seed = {method: probabilities[method] for method in feature_sets}
    for method, scores_by_seed in by_seed.items():
        scores[method] = mean_oof_score(scores_by_seed)
        metrics.update(_named(_repetition_mean(scores_by_seed, labels, ranking_metrics, RANKING_METRIC_NAMES), method))
        metrics.update(_named(_repetition_mean(scores_by_seed, labels, calibration, CALIBRATION_METRIC_NAMES), method))
    for method, values in baselines.items():
        scores[method] = values
        metrics.update(_named(ranking_metrics(values, labels), method))
        calibrated = _repetition_mean(probabilities[method], labels, calibration, CALIBRATION_METRIC_NAMES)
        metrics.update(_named(calibrated, method))
    return TaskEvaluation(metrics, scores, labels, doc_ids, by_seed, probabilities)


def _rewarn_once(caught: list[warnings.WarningMessage], methods: str) -> None:
    """Re-issue the cross-fitting warnings once, naming the heads (and baselines' calibration maps) they concern."""
    for message in {str(item.message) for item in caught if issubclass(item.category, TracWarning)}:
        warnings.warn(f"heads {methods}: {message}", TracWarning, stacklevel=4)
