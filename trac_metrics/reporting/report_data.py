"""Everything a cross-run report's tables read, computed once: per-pair evaluations and shared bootstraps
(docs/method.md#hierarchical-bootstrap).

:func:`build_report_data` evaluates every pair with the standard heads plus the analysis heads (one cross-fitting
per pair, same folds; the standard heads' numbers equal lm-eval's per-task results) and runs the hierarchical
bootstrap of every metric of :func:`bootstrapped_metrics` once for all methods, so every confidence interval and
paired difference in every table comes from the same resamples. A cross-fitted head is resampled once per repetition
and its metric averaged over repetitions inside each resample (docs/method.md#cross-fitting-protocol), so its interval
is the interval of the number shown; the calibration metrics are resampled the same way on every method's
probabilities of correctness (a baseline's calibration map is cross-fitted too, docs/method.md#calibration-maps).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property, partial

import numpy as np

from trac_metrics import selective
from trac_metrics._util.parallel import Progress
from trac_metrics._warnings import TracWarning
from trac_metrics.heads.calibration_maps import DEFAULT_CALIBRATION_MAP
from trac_metrics.heads.evaluate import TaskEvaluation
from trac_metrics.methods import FeatureRow, Scope, head_features
from trac_metrics.reporting.runs import PairRun, dropped_methods, evaluate_pairs
from trac_metrics.selective.bootstrap import (
    BootstrapResult,
    Metric,
    PairData,
    hierarchical_bootstrap_many,
    mean_of_defined,
)

BOOTSTRAP_METRICS = {"auroc": selective.auroc, "aurc": selective.aurc}
"""The leaderboard's bootstrapped metrics: intervals, per-task columns and paired differences."""
REJECTION_BOOTSTRAP_METRICS = {"auprc": selective.auprc, "prr": selective.prr, "prr_50": selective.prr_50}
"""The rejection metrics, bootstrapped on each method's score like AUROC and AURC."""
RECENTRED_METRICS = ("ece",)
"""The metrics whose intervals and paired differences read resamples re-centred on the estimate: the binned ECE is
biased upward on a resample, so its percentile interval can miss its own value
(docs/method.md#hierarchical-bootstrap)."""
SCORES, PROBABILITIES = "scores", "probabilities"
"""What a bootstrapped metric reads of each method: its score, or its probability of correctness."""


def bootstrapped_metrics(ece_bins: int = selective.DEFAULT_ECE_BINS) -> dict[str, tuple[Metric, str]]:
    """Every metric a report bootstraps, with what it reads (:data:`SCORES` or :data:`PROBABILITIES`). smECE has no
    interval: relplot's estimator costs about 16 ms a call, far too much for every resample of every column."""
    return {
        **{name: (metric, SCORES) for name, metric in {**BOOTSTRAP_METRICS, **REJECTION_BOOTSTRAP_METRICS}.items()},
        "ece": (partial(selective.ece, n_bins=ece_bins), PROBABILITIES),
        "brier": (selective.brier, PROBABILITIES),
        "log_loss": (selective.log_loss, PROBABILITIES),
    }


@dataclass(frozen=True)
class ReportData:
    """Pairs, their evaluations (same order) and the bootstrap of each metric of :func:`bootstrapped_metrics`.

    ``bootstraps[metric]`` covers the methods evaluated on every pair (:attr:`common_methods`); a method missing
    from some pair (e.g. P(True) switched on for some runs only) has point estimates but no interval.
    ``calibration_map`` and ``ece_bins`` are the evaluation's baseline calibration map and ECE bins.
    """

    pairs: tuple[PairRun, ...]
    evaluations: tuple[TaskEvaluation, ...]
    bootstraps: dict[str, BootstrapResult]
    n_resamples: int
    seed: int
    calibration_map: str = DEFAULT_CALIBRATION_MAP
    ece_bins: int = selective.DEFAULT_ECE_BINS
    notes: tuple[str, ...] = ()
    """What every table and the page say under their own notes (:func:`report_notes`)."""

    @property
    def common_methods(self) -> tuple[str, ...]:
        return common_methods(self.evaluations)

    @cached_property
    def constant_methods(self) -> frozenset[str]:
        """The methods whose score is (nearly) constant on every pair that scored them
        (docs/method.md#expected-calibration-error): one value holds at least :data:`CONSTANT_SHARE` of the pair's
        answers. Such a score tells no answer from another (AUROC 0.5); its probability of correctness is the
        pair's accuracy, calibrated by construction, so a report marks it and never ranks it first on calibration."""
        scored: dict[str, list[bool]] = {}
        for evaluation in self.evaluations:
            for method, scores in evaluation.scores.items():
                scored.setdefault(method, []).append(_nearly_constant(scores))
        return frozenset(method for method, constant in scored.items() if all(constant))

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
        return bootstrap_all(
            [self.pairs[i] for i in indices],
            [self.evaluations[i] for i in indices],
            methods,
            {name: bootstrapped_metrics(self.ece_bins)[name] for name in metrics},
            self.n_resamples,
            self.seed,
        )

    def ci(self, method: str, metric: str, level: float = 0.95) -> tuple[float, float]:
        """Percentile interval of the macro (re-centred on it for :data:`RECENTRED_METRICS`); (NaN, NaN) when
        ``method`` is not in every pair or ``metric`` was not bootstrapped."""
        if metric not in self.bootstraps or method not in self.bootstraps[metric].methods:
            return (math.nan, math.nan)
        return self.bootstraps[metric].ci(method, level)


CONSTANT_SHARE = 0.99
"""A score is (nearly) constant on a pair when one value holds at least this share of its answers."""


def _nearly_constant(scores: np.ndarray) -> bool:
    """Whether one value holds at least :data:`CONSTANT_SHARE` of ``scores`` (NaN never counts as that value)."""
    defined = scores[~np.isnan(scores)]
    if defined.size == 0:
        return False
    _, counts = np.unique(defined, return_counts=True)
    return bool(counts.max() >= CONSTANT_SHARE * scores.size)


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
    calibration_map: str = DEFAULT_CALIBRATION_MAP,
    ece_bins: int = selective.DEFAULT_ECE_BINS,
    extra_notes: Sequence[str] = (),
) -> ReportData:
    """Evaluate ``pairs`` (standard + analysis heads; baselines calibrated by ``calibration_map``, ECE over
    ``ece_bins`` bins) and bootstrap every metric of :func:`bootstrapped_metrics` for the common methods, on ``jobs``
    processes (default: every CPU; the numbers do not depend on it). ``extra_notes`` go beside every table, after the
    report's own (:func:`report_notes`)."""
    if not pairs:
        raise ValueError("a report needs at least one (model, task) pair")
    heads = head_features(Scope.TASK, Scope.REPORT)
    notes = (*report_notes(pairs, heads), *extra_notes)
    with warnings.catch_warnings():
        # report_notes warned once per pair, naming the pair, for every head some of its questions lack
        warnings.filterwarnings("ignore", category=TracWarning, message=r".* head not reported: \d+ of \d+ questions")
        evaluations = evaluate_pairs(
            pairs, heads=heads, progress=progress, jobs=jobs, calibration_map=calibration_map, ece_bins=ece_bins
        )
    bootstraps = bootstrap_all(
        pairs, evaluations, common_methods(evaluations), bootstrapped_metrics(ece_bins), n_resamples, seed, jobs
    )
    return ReportData(tuple(pairs), tuple(evaluations), bootstraps, n_resamples, seed, calibration_map, ece_bins, notes)


def report_notes(pairs: Sequence[PairRun], heads: Mapping[str, FeatureRow]) -> tuple[str, ...]:
    """What a report says beside every table (docs/guide/reports.md): for each pair with methods some of its
    questions lack (:func:`~trac_metrics.reporting.runs.dropped_methods`), which and on how many questions, also
    warned once per pair as a :class:`~trac_metrics._warnings.TracWarning`; and, when the pairs are labelled by
    different labellers (``--mix-labellers``), the labeller of each pair."""
    notes = []
    for pair in pairs:
        dropped = dropped_methods(pair, heads)
        if dropped:
            listed = ", ".join(f"{method} ({count} of {len(pair.evidences)})" for method, count in dropped.items())
            note = (
                f"{pair.name}: not reported, as some questions lack their scores (a run resumed without the switch "
                f"that computes them?): {listed}."
            )
            warnings.warn(note, TracWarning, stacklevel=3)
            notes.append(note)
    if len({labeller for pair in pairs for labeller in pair.labellers}) > 1:
        listed = "; ".join(f"{pair.name}: {', '.join(pair.labellers)}" for pair in pairs)
        notes.append(f"Labellers differ between pairs (--mix-labellers): {listed}.")
    return tuple(notes)


def bootstrap_all(
    pairs: Sequence[PairRun],
    evaluations: Sequence[TaskEvaluation],
    methods: Sequence[str],
    metrics: Mapping[str, tuple[Metric, str]],
    n_resamples: int = 2000,
    seed: int = 0,
    jobs: int | None = None,
) -> dict[str, BootstrapResult]:
    """:func:`bootstrap` of metrics that read scores or probabilities (``metrics[name] = (metric, what it reads)``);
    the draws depend only on the labels and the seed, so every metric shares the same resamples."""
    results: dict[str, BootstrapResult] = {}
    for source in (SCORES, PROBABILITIES):
        chosen = {name: metric for name, (metric, reads) in metrics.items() if reads == source}
        if chosen:
            results.update(bootstrap(pairs, evaluations, methods, chosen, n_resamples, seed, jobs, source))
    return {name: results[name] for name in metrics}


def bootstrap(
    pairs: Sequence[PairRun],
    evaluations: Sequence[TaskEvaluation],
    methods: Sequence[str],
    metrics: Mapping[str, Metric] = BOOTSTRAP_METRICS,
    n_resamples: int = 2000,
    seed: int = 0,
    jobs: int | None = None,
    source: str = SCORES,
) -> dict[str, BootstrapResult]:
    """Hierarchical bootstrap (docs/method.md#hierarchical-bootstrap) of each metric for ``methods`` (scored on every
    given pair), same draws for all, on ``jobs`` processes, on each method's scores or (``source`` =
    :data:`PROBABILITIES`) probabilities of correctness; a cross-fitted head's or calibration map's metric is averaged
    over its repetitions inside each resample."""
    columns = _bootstrap_columns(evaluations[0], methods, source)
    data = [
        PairData(
            pair.name,
            evaluation.labels,
            np.arange(len(evaluation.labels)),
            {column: _column_values(evaluation, column, source) for names in columns.values() for column in names},
        )
        for pair, evaluation in zip(pairs, evaluations, strict=True)
    ]
    all_columns = [column for names in columns.values() for column in names]
    with warnings.catch_warnings():
        # pairs where a metric is undefined are skipped; the tables show those pairs' NaN values themselves
        warnings.filterwarnings("ignore", category=TracWarning, message=".*skipped.*")
        results = hierarchical_bootstrap_many(data, metrics, all_columns, n_resamples, seed, jobs)
    return {
        name: replace(result.averaged(columns), recentred=name in RECENTRED_METRICS) for name, result in results.items()
    }


_REPETITION = "#repetition"


def _by_seed(evaluation: TaskEvaluation, source: str) -> dict[str, np.ndarray]:
    return evaluation.scores_by_seed if source == SCORES else evaluation.probabilities_by_seed


def _bootstrap_columns(evaluation: TaskEvaluation, methods: Sequence[str], source: str) -> dict[str, list[str]]:
    """The columns bootstrapped for each method: one per cross-fitting repetition of a head (of a calibration map for
    probabilities), else one."""
    by_seed = _by_seed(evaluation, source)
    return {
        method: [f"{method}{_REPETITION}{r}" for r in range(len(by_seed[method]))] if method in by_seed else [method]
        for method in methods
    }


def _column_values(evaluation: TaskEvaluation, column: str, source: str) -> np.ndarray:
    method, _, repetition = column.partition(_REPETITION)
    return _by_seed(evaluation, source)[method][int(repetition)] if repetition else evaluation.scores[method]
