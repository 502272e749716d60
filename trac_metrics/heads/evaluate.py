"""One task's TrAC evaluation: cross-fitted heads and baselines → selective-prediction metrics
(docs/method.md#cross-fitting-protocol, docs/method.md#selective-prediction-metrics).

Input: the per-question evidence dicts of :mod:`trac_metrics.features.evidence` (one row per question: the primary
response). Every learned method of the registry (:func:`trac_metrics.methods.head_features`: TrAC, its PCE / TUP
components, Consensus Fusion @K, Supervised Consensus@K and the probe-variant ablation heads) is cross-fitted on
the same folds, computed once (``heads.cross_fit_many``): its metrics are computed per repetition and averaged, its
per-question score is the mean out-of-fold score. Baselines are scored directly from the evidence. Results use one
naming scheme: ``<method>_<metric>``, e.g. ``trac_auroc``, ``sc_modal_aurc``, ``mean_logprob_excess_aurc``,
``trac_risk_at_10``.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from trac_metrics._warnings import TracWarning
from trac_metrics.heads.cross_fitting import FOLD_SEEDS, cross_fit_many, mean_oof_score
from trac_metrics.methods import FeatureRow, head_features
from trac_metrics.selective import METRIC_NAMES, selective_metrics


@dataclass(frozen=True)
class TaskEvaluation:
    """Metrics (``<method>_<metric>``), per-question scores per method, labels and the question ids.

    ``scores`` of a learned head is its mean out-of-fold score; ``scores_by_seed[head]`` keeps the out-of-fold
    scores of each cross-fitting repetition (repetitions × questions), from which its metrics are averaged.
    """

    metrics: dict[str, float]
    scores: dict[str, np.ndarray]
    labels: np.ndarray
    doc_ids: list[Any]
    scores_by_seed: dict[str, np.ndarray] = field(default_factory=dict)


def _named(metrics: Mapping[str, float], method: str) -> dict[str, float]:
    """``<method>_<metric>`` of every metric in :data:`~trac_metrics.selective.METRIC_NAMES`."""
    return {f"{method}_{name}": float(metrics[name]) for name in METRIC_NAMES}


def _head_metrics(scores_by_seed: np.ndarray, labels: np.ndarray, method: str) -> dict[str, float]:
    """docs/method.md#cross-fitting-protocol: a metric is computed per repetition and averaged over repetitions."""
    if np.isnan(scores_by_seed).any():
        return {f"{method}_{name}": float("nan") for name in METRIC_NAMES}
    per_seed = [_named(selective_metrics(row, labels), method) for row in scores_by_seed]
    return {key: float(np.mean([values[key] for values in per_seed])) for key in per_seed[0]}


def evaluate_task(
    evidences: Sequence[Mapping[str, Any]],
    seeds: Sequence[int] = FOLD_SEEDS,
    n_splits: int = 5,
    heads: Mapping[str, FeatureRow] | None = None,
) -> TaskEvaluation:
    """Cross-fitted metrics of every method computable from ``evidences`` (one dict per question).

    ``heads`` (default: the registry's task heads, :func:`trac_metrics.methods.head_features`) names the learned
    methods and their feature rows; a report adds its analysis heads here so they share the folds. Each head is
    fitted on its own, so adding heads never changes another head's numbers.

    Degenerate data (one class, too few questions to split) gives NaN metrics with a TracWarning, never an error;
    accuracy is reported by the caller independently of this function. BLAS runs single-threaded here: the many
    small logistic fits are several times faster that way, with identical results.
    """
    with threadpool_limits(limits=1, user_api="blas"):
        return _evaluate(evidences, seeds, n_splits, head_features() if heads is None else heads)


def _evaluate(
    evidences: Sequence[Mapping[str, Any]], seeds: Sequence[int], n_splits: int, heads: Mapping[str, FeatureRow]
) -> TaskEvaluation:
    if not evidences:
        raise ValueError("evaluate_task needs at least one question's evidence")
    labels = np.asarray([evidence["correct"] for evidence in evidences], dtype=np.int64)
    doc_ids = [evidence["doc_id"] for evidence in evidences]
    groups = np.arange(len(evidences))
    metrics: dict[str, float] = {}
    scores: dict[str, np.ndarray] = {}
    by_seed: dict[str, np.ndarray] = {}
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
                stacklevel=3,
            )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scores_by_head = cross_fit_many(feature_sets, labels, groups, seeds, n_splits)
    _rewarn_once(caught, ", ".join(feature_sets))
    for method, scores_by_seed in scores_by_head.items():
        scores[method] = mean_oof_score(scores_by_seed)
        by_seed[method] = scores_by_seed
        metrics.update(_head_metrics(scores_by_seed, labels, method))
    baseline_names = [
        name for name in evidences[0]["baselines"] if all(name in evidence["baselines"] for evidence in evidences)
    ]
    for method in baseline_names:
        values = np.asarray([evidence["baselines"][method] for evidence in evidences], dtype=np.float64)
        scores[method] = values
        metrics.update(_named(selective_metrics(values, labels), method))
    return TaskEvaluation(metrics, scores, labels, doc_ids, by_seed)


def _rewarn_once(caught: list[warnings.WarningMessage], methods: str) -> None:
    """Re-issue the cross-fitting warnings once, naming the heads they concern."""
    for message in {str(item.message) for item in caught if issubclass(item.category, TracWarning)}:
        warnings.warn(f"heads {methods}: {message}", TracWarning, stacklevel=3)
