"""What the report shows of each (model, task, decoding) pair on its own, computed once: the interval of its headline
metrics over its questions alone (docs/method.md#hierarchical-bootstrap with one pair), its figures' points
(docs/method.md#figures) and its question rows."""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from trac_metrics._warnings import TracWarning
from trac_metrics.reporting.report_data import ReportData
from trac_metrics.reporting.summary_table import HEADLINE_METRICS
from trac_metrics.selective import reliability_bins, risk_coverage_curve

CURVE_DECIMALS = 4
"""Decimals of the risk–coverage points (and of the histograms' bin edges)."""
HISTOGRAM_BINS = 20
"""Equal-width bins of [0, 1] in the histograms of the probability of correctness."""


@dataclass(frozen=True)
class Reliability:
    """Reliability bins of a method's probability of correctness (count, mean confidence and accuracy per bin) and
    its ECE on the pair."""

    count: np.ndarray
    confidence: np.ndarray
    accuracy: np.ndarray
    ece: float


@dataclass(frozen=True)
class PairFigures:
    """The points of a pair's figures: each method's risk at every coverage k/N (k = 1..N;
    docs/method.md#risk-coverage-curve-and-aurc), reliability bins, histograms of its probability of correctness over
    the correct and the wrong answers (``histogram[method]["correct" | "wrong"]`` over the bins of ``edges``), the
    oracle's risk curve (every correct answer first) and a random order's risk (the error rate at every coverage), the
    references of docs/method.md#prediction-rejection-ratio; NaN references when the pair has no question. A method
    with an undefined score or probability has no curve, bins or histogram."""

    risk: Mapping[str, list[float]]
    reliability: Mapping[str, Reliability]
    histogram: Mapping[str, Mapping[str, list[int]]]
    edges: list[float]
    oracle: list[float]
    random: float

    @property
    def oracle_aurc(self) -> float:
        """The oracle's AURC: the mean of its risk curve's points."""
        return float(np.mean(self.oracle)) if self.oracle else math.nan


@dataclass(frozen=True)
class QuestionRows:
    """A pair's questions field by field (columns of equal length, document order): document id, label, majority
    label, agreement (None where not recorded), primary answer, probe answer, reference, answers, answer classes,
    metadata; each method's score and probability of correctness, and the positions of the questions in the top
    decile of each method's confidence (:func:`top_decile`)."""

    doc: list[str]
    correct: list[int]
    majority: list[int]
    agree: list[int | None]
    answer: list[Any]
    probe: list[Any]
    reference: list[Any]
    answers: list[Any]
    classes: list[Any]
    metadata: list[Any]
    scores: Mapping[str, np.ndarray]
    p_correct: Mapping[str, np.ndarray]
    top_decile: Mapping[str, list[int]]


@dataclass(frozen=True)
class PairDetails:
    """A pair's own intervals (``intervals[metric][method]``, headline metrics of the methods it has), figure points
    and question rows."""

    intervals: Mapping[str, Mapping[str, tuple[float, float]]]
    figures: PairFigures
    questions: QuestionRows


def top_decile(scores: np.ndarray) -> np.ndarray:
    """Whether each question is in the top decile of a method's confidence within its pair: its score is at least
    the m-th largest defined score, m = ⌈n / 10⌉ of the n defined scores (ties at the cut all included; a NaN score
    never is)."""
    scores = np.asarray(scores, dtype=np.float64)
    defined = ~np.isnan(scores)
    n = int(defined.sum())
    if not n:
        return np.zeros(scores.shape, dtype=bool)
    cut = np.sort(scores[defined])[::-1][math.ceil(n / 10) - 1]
    return defined & (scores >= cut)


def pair_intervals(
    data: ReportData, index: int, methods: Sequence[str], level: float
) -> dict[str, dict[str, tuple[float, float]]]:
    """The interval of each headline metric of ``methods`` over the questions of pair ``index`` alone."""
    present = [method for method in methods if method in data.evaluations[index].scores]
    if not present:
        return {}
    with warnings.catch_warnings():
        # a pair too small or one-class has NaN intervals: shown as such, as the tables show theirs
        warnings.simplefilter("ignore", TracWarning)
        results = data.bootstrap_subset([index], present, HEADLINE_METRICS)
        return {metric: {method: result.ci(method, level) for method in present} for metric, result in results.items()}


def _curve(scores: np.ndarray, labels: np.ndarray) -> list[float]:
    return [round(float(value), CURVE_DECIMALS) for value in risk_coverage_curve(scores, labels)[1]]


def pair_figures(
    data: ReportData, index: int, methods: Sequence[str], p_correct: Mapping[str, np.ndarray]
) -> PairFigures:
    """The :class:`PairFigures` of pair ``index`` for ``methods``; ``p_correct``: its methods' probabilities of
    correctness."""
    evaluation = data.evaluations[index]
    labels = np.asarray(evaluation.labels, dtype=bool)
    risk: dict[str, list[float]] = {}
    reliability: dict[str, Reliability] = {}
    histogram: dict[str, dict[str, list[int]]] = {}
    edges = np.linspace(0.0, 1.0, HISTOGRAM_BINS + 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TracWarning)  # a method without defined values gets no figure
        for method in methods:
            scores = evaluation.scores.get(method)
            if scores is not None and not np.isnan(scores).any():
                risk[method] = _curve(scores, evaluation.labels)
            probabilities = p_correct.get(method)
            if probabilities is not None and not np.isnan(probabilities).any():
                histogram[method] = {
                    name: [int(count) for count in np.histogram(probabilities[chosen], bins=edges)[0]]
                    for name, chosen in (("correct", labels), ("wrong", ~labels))
                }
                bins = reliability_bins(probabilities, evaluation.labels, data.ece_bins)
                reliability[method] = Reliability(
                    bins["count"],
                    bins["confidence"],
                    bins["accuracy"],
                    evaluation.metrics.get(f"{method}_ece", math.nan),
                )
    return PairFigures(
        risk,
        reliability,
        histogram,
        [round(float(edge), CURVE_DECIMALS) for edge in edges],
        _curve(labels.astype(np.float64), labels) if labels.size else [],
        float(1.0 - labels.mean()) if labels.size else math.nan,
    )


def _agreement(value: Any) -> int | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else int(value)


def question_rows(data: ReportData, index: int, p_correct: Mapping[str, np.ndarray]) -> QuestionRows:
    """The :class:`QuestionRows` of pair ``index``; ``p_correct``: its methods' probabilities of correctness."""
    evaluation, evidences = data.evaluations[index], data.pairs[index].evidences
    return QuestionRows(
        doc=[str(evidence["doc_id"]) for evidence in evidences],
        correct=[int(evidence["correct"]) for evidence in evidences],
        majority=[int(evidence["majority_correct"]) for evidence in evidences],
        agree=[_agreement(evidence["agree"]) for evidence in evidences],
        answer=[evidence["primary_answer"] for evidence in evidences],
        probe=[evidence["probe_answer"] for evidence in evidences],
        reference=[evidence["reference"] for evidence in evidences],
        answers=[evidence["answers"] for evidence in evidences],
        classes=[evidence["answer_classes"] for evidence in evidences],
        metadata=[evidence["metadata"] for evidence in evidences],
        scores=evaluation.scores,
        p_correct=p_correct,
        top_decile={
            method: np.flatnonzero(top_decile(scores)).tolist() for method, scores in evaluation.scores.items()
        },
    )


def pair_details(data: ReportData, index: int, methods: Sequence[str], level: float) -> PairDetails:
    """Pair ``index``'s :class:`PairDetails` for the leaderboard ``methods`` at interval ``level``."""
    p_correct = data.evaluations[index].p_correct
    return PairDetails(
        pair_intervals(data, index, methods, level),
        pair_figures(data, index, methods, p_correct),
        question_rows(data, index, p_correct),
    )
