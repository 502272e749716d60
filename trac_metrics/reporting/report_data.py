"""Everything a cross-run report's tables read, computed once: per-pair evaluations and shared bootstraps
(docs/method.md#hierarchical-bootstrap).

:func:`build_report_data` evaluates every pair with the standard heads plus the analysis heads (one cross-fitting
per pair, same folds; the standard heads' numbers equal lm-eval's per-task results) and runs the hierarchical
bootstrap of AUROC and AURC once for all methods, so every confidence interval and paired difference in every
table comes from the same resamples. A cross-fitted head is resampled once per repetition and its metric
averaged over repetitions inside each resample (docs/method.md#cross-fitting-protocol), so its interval is the interval
of the number shown.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from trac_metrics import selective
from trac_metrics._util.parallel import Progress
from trac_metrics._warnings import TracWarning
from trac_metrics.heads.evaluate import TaskEvaluation
from trac_metrics.methods import Scope, head_features
from trac_metrics.reporting.runs import PairRun, evaluate_pairs
from trac_metrics.selective.bootstrap import (
    BootstrapResult,
    Metric,
    PairData,
    hierarchical_bootstrap_many,
    mean_of_defined,
)

BOOTSTRAP_METRICS = {"auroc": selective.auroc, "aurc": selective.aurc}


@dataclass(frozen=True)
class ReportData:
    """Pairs, their evaluations (same order) and the bootstrap of each metric in :data:`BOOTSTRAP_METRICS`.

    ``bootstraps[metric]`` covers the methods evaluated on every pair (:attr:`common_methods`); a method missing
    from some pair (e.g. P(True) switched on for some runs only) has point estimates but no interval.
    """

    pairs: tuple[PairRun, ...]
    evaluations: tuple[TaskEvaluation, ...]
    bootstraps: dict[str, BootstrapResult]
    n_resamples: int
    seed: int

    @property
    def common_methods(self) -> tuple[str, ...]:
        return common_methods(self.evaluations)

    def per_pair(self, method: str, metric: str) -> np.ndarray:
        """``<method>_<metric>`` of every pair (NaN where the pair lacks the method)."""
        key = f"{method}_{metric}"
        return np.asarray([evaluation.metrics.get(key, math.nan) for evaluation in self.evaluations])

    def macro(self, method: str, metric: str) -> float:
        """Pair-equal macro (docs/method.md#pair-equal-macro-average) over the pairs where the metric is defined; NaN
        when none is."""
        return mean_of_defined(self.per_pair(method, metric))

    def bootstrap_subset(
        self, indices: Sequence[int], methods: Sequence[str], metrics: Sequence[str] = tuple(BOOTSTRAP_METRICS)
    ) -> dict[str, BootstrapResult]:
        """The same bootstrap (resample count, seed) restricted to the pairs ``indices``, e.g. those that have a
        method missing from other pairs."""
        return bootstrap(
            [self.pairs[i] for i in indices],
            [self.evaluations[i] for i in indices],
            methods,
            {name: BOOTSTRAP_METRICS[name] for name in metrics},
            self.n_resamples,
            self.seed,
        )

    def ci(self, method: str, metric: str, level: float = 0.95) -> tuple[float, float]:
        """Percentile interval of the macro; (NaN, NaN) when ``method`` is not in every pair or ``metric`` was not
        bootstrapped."""
        if metric not in self.bootstraps or method not in self.bootstraps[metric].methods:
            return (math.nan, math.nan)
        return self.bootstraps[metric].ci(method, level)


def common_methods(evaluations: Sequence[TaskEvaluation]) -> tuple[str, ...]:
    """Methods scored on every pair, in the first pair's order."""
    names = [set(evaluation.scores) for evaluation in evaluations]
    return tuple(method for method in evaluations[0].scores if all(method in found for found in names))


def build_report_data(
    pairs: Sequence[PairRun],
    n_resamples: int = 2000,
    seed: int = 0,
    progress: Progress | None = None,
    jobs: int | None = None,
) -> ReportData:
    """Evaluate ``pairs`` (standard + analysis heads) and bootstrap AUROC and AURC of the common methods, on
    ``jobs`` processes (default: every CPU; the numbers do not depend on it)."""
    if not pairs:
        raise ValueError("a report needs at least one (model, task) pair")
    evaluations = evaluate_pairs(pairs, heads=head_features(Scope.TASK, Scope.REPORT), progress=progress, jobs=jobs)
    bootstraps = bootstrap(pairs, evaluations, common_methods(evaluations), BOOTSTRAP_METRICS, n_resamples, seed, jobs)
    return ReportData(tuple(pairs), tuple(evaluations), bootstraps, n_resamples, seed)


def bootstrap(
    pairs: Sequence[PairRun],
    evaluations: Sequence[TaskEvaluation],
    methods: Sequence[str],
    metrics: Mapping[str, Metric] = BOOTSTRAP_METRICS,
    n_resamples: int = 2000,
    seed: int = 0,
    jobs: int | None = None,
) -> dict[str, BootstrapResult]:
    """Hierarchical bootstrap (docs/method.md#hierarchical-bootstrap) of each metric for ``methods`` (scored on every
    given pair), same draws for all, on ``jobs`` processes; a cross-fitted head's metric is averaged over its
    repetitions inside each resample."""
    columns = _bootstrap_columns(evaluations[0], methods)
    data = [
        PairData(
            pair.name,
            evaluation.labels,
            np.arange(len(evaluation.labels)),
            {column: _column_scores(evaluation, column) for names in columns.values() for column in names},
        )
        for pair, evaluation in zip(pairs, evaluations, strict=True)
    ]
    all_columns = [column for names in columns.values() for column in names]
    with warnings.catch_warnings():
        # pairs where a metric is undefined are skipped; the tables show those pairs' NaN values themselves
        warnings.filterwarnings("ignore", category=TracWarning, message=".*skipped.*")
        results = hierarchical_bootstrap_many(data, metrics, all_columns, n_resamples, seed, jobs)
    return {name: result.averaged(columns) for name, result in results.items()}


_REPETITION = "#repetition"


def _bootstrap_columns(evaluation: TaskEvaluation, methods: Sequence[str]) -> dict[str, list[str]]:
    """The score columns bootstrapped for each method: one per cross-fitting repetition of a head, else one."""
    return {
        method: [f"{method}{_REPETITION}{r}" for r in range(len(evaluation.scores_by_seed[method]))]
        if method in evaluation.scores_by_seed
        else [method]
        for method in methods
    }


def _column_scores(evaluation: TaskEvaluation, column: str) -> np.ndarray:
    method, _, repetition = column.partition(_REPETITION)
    return evaluation.scores_by_seed[method][int(repetition)] if repetition else evaluation.scores[method]
