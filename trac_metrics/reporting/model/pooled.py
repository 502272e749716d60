"""Curves over all the pairs of a report (docs/method.md#figures): each pair's expected risk–coverage curve
(docs/method.md#risk-coverage-curve-and-aurc) interpolated on one grid of coverages and averaged over the pairs, as
the leaderboard's macros average each pair's number. The report's PNG figures and its page draw these same points.

- :func:`macro_risk_coverage`: one method's macro curve and how many pairs it averages;
- :func:`macro_oracle_risk`, :func:`macro_random_risk`: the references, the oracle's macro curve (every correct
  answer first) and a random order's macro risk (the same at every coverage);
- :func:`pooled_curves`: both, for the methods the page shows (:class:`PooledCurves`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from trac_metrics.reporting.report_data import ReportData
from trac_metrics.selective import risk_coverage_curve

COVERAGE_GRID = np.linspace(0.01, 1.0, 100)
"""The common coverages of the macro curves: 0.01, 0.02, …, 1."""


def macro_risk_coverage(data: ReportData, method: str, grid: np.ndarray = COVERAGE_GRID) -> tuple[np.ndarray, int]:
    """Mean over pairs of each pair's risk–coverage curve, linearly interpolated at ``grid`` coverages.

    A pair's curve is known at coverages k/N (k = 1..N); below 1/N it is held at the risk of the top answer.
    Pairs without the method, or whose scores are NaN (a head not cross-fitted), are left out; returns the curve
    and how many pairs it averages (NaN curve and 0 when none).
    """
    curves = []
    for evaluation in data.evaluations:
        scores = evaluation.scores.get(method)
        if scores is None or np.isnan(scores).any():
            continue
        coverage, risk = risk_coverage_curve(scores, evaluation.labels)
        curves.append(np.interp(grid, coverage, risk))
    if not curves:
        return np.full(grid.shape, math.nan), 0
    return np.mean(curves, axis=0), len(curves)


def macro_oracle_risk(data: ReportData, grid: np.ndarray = COVERAGE_GRID) -> np.ndarray:
    """Mean over pairs of the oracle's risk curve (every correct answer first) at ``grid`` coverages."""
    curves = []
    for evaluation in data.evaluations:
        coverage, risk = risk_coverage_curve(evaluation.labels.astype(np.float64), evaluation.labels)
        curves.append(np.interp(grid, coverage, risk))
    return np.mean(curves, axis=0) if curves else np.full(grid.shape, math.nan)


def macro_random_risk(data: ReportData) -> float:
    """A random order's risk at every coverage (a pair's error rate), averaged over pairs."""
    rates = [1.0 - evaluation.labels.mean() for evaluation in data.evaluations]
    return float(np.mean(rates)) if rates else math.nan


@dataclass(frozen=True)
class PooledCurves:
    """The macro risk–coverage curves of a report on ``grid``: per method its curve (``risk``) and the number of
    pairs it averages (``pairs``; a method no pair scores has neither), the oracle's curve and the random order's
    constant risk, both averaged over every pair."""

    grid: list[float]
    risk: Mapping[str, list[float]]
    pairs: Mapping[str, int]
    oracle: list[float]
    random: float


def pooled_curves(data: ReportData, methods: Sequence[str], grid: np.ndarray = COVERAGE_GRID) -> PooledCurves:
    """The :class:`PooledCurves` of ``methods`` over the report's pairs."""
    risk: dict[str, list[float]] = {}
    pairs: dict[str, int] = {}
    for method in methods:
        curve, n_pairs = macro_risk_coverage(data, method, grid)
        if n_pairs:
            risk[method], pairs[method] = [float(value) for value in curve], n_pairs
    return PooledCurves(
        [float(value) for value in grid],
        risk,
        pairs,
        [float(value) for value in macro_oracle_risk(data, grid)],
        macro_random_risk(data),
    )
