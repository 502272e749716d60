"""An independent re-computation of a report's bootstrap intervals, for tests of the tables that show them."""

from __future__ import annotations

import numpy as np

from trac_metrics import selective
from trac_metrics.selective.bootstrap import PairData, hierarchical_bootstrap

METRICS = {"auroc": selective.auroc, "aurc": selective.aurc}


def reference_samples(pairs, evaluations, methods, metric, n_resamples, seed) -> dict[str, np.ndarray]:
    """Per method, the bootstrap samples of its macro: a learned head is resampled once per cross-fitting repetition
    (columns ``<method>/<r>``) and its samples are the mean of those columns (docs/method.md#cross-fitting-protocol
    averages over repetitions)."""
    columns = {
        method: [f"{method}/{r}" for r in range(len(evaluations[0].scores_by_seed[method]))]
        if method in evaluations[0].scores_by_seed
        else [method]
        for method in methods
    }

    def scores(evaluation, column):
        method, _, repetition = column.partition("/")
        return evaluation.scores_by_seed[method][int(repetition)] if repetition else evaluation.scores[method]

    data = [
        PairData(
            pair.name,
            evaluation.labels,
            np.arange(evaluation.labels.size),
            {column: scores(evaluation, column) for names in columns.values() for column in names},
        )
        for pair, evaluation in zip(pairs, evaluations, strict=True)
    ]
    flat = [column for names in columns.values() for column in names]
    result = hierarchical_bootstrap(data, METRICS[metric], flat, n_resamples, seed)
    return {
        method: result.samples[:, [flat.index(column) for column in names]].mean(axis=1)
        for method, names in columns.items()
    }


def percentile_interval(samples: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    lo, hi = np.percentile(samples[~np.isnan(samples)], [50 * (1 - level), 50 * (1 + level)])
    return float(lo), float(hi)
