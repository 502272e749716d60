"""Vectorized twins of the rejection and calibration metrics for the hierarchical bootstrap
(docs/method.md#hierarchical-bootstrap): each computes its metric for many resamples of one pair at once from
integer tie-group counts, without re-sorting per resample.

Every twin receives ``correct`` and ``total`` [draws, groups] (the drawn responses of each tie group, groups in
decreasing score) and ``values`` [groups] (each group's score; a probability for the calibration metrics) and returns
one value per draw, equal to its metric on the resampled responses up to floating-point rounding:

- :func:`auprc_from_groups`: :func:`~trac_metrics.selective.rejection.auprc`;
- :func:`prr_from_groups`: :func:`~trac_metrics.selective.rejection.prr` with its ``max_rejection``;
- :func:`brier_from_groups`, :func:`log_loss_from_groups`, :func:`ece_from_groups`: the calibration metrics of
  :mod:`~trac_metrics.selective.calibration`.

A draw where the metric is undefined gives NaN (the direct metric's warning is not repeated per draw).
"""

from __future__ import annotations

import math

import numpy as np

from trac_metrics.selective.calibration import DEFAULT_ECE_BINS, LOG_LOSS_EPSILON


def _divided(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """``numerator / denominator`` where the denominator is positive, NaN elsewhere."""
    result = np.full(np.broadcast(numerator, denominator).shape, math.nan)
    np.divide(numerator, denominator, out=result, where=denominator > 0)
    return result


def auprc_from_groups(correct: np.ndarray, total: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Average precision of errors flagged from the lowest score up, one threshold per group present in a draw:
    Σ_g e_g · (errors through g / responses through g) / errors, groups in increasing score."""
    errors = (total - correct)[:, ::-1]
    flagged = np.cumsum(total[:, ::-1], axis=1)
    precision = np.zeros(errors.shape)
    np.divide(np.cumsum(errors, axis=1), flagged, out=precision, where=flagged > 0)
    return _divided(np.einsum("ij,ij->i", errors, precision), errors.sum(axis=1))


def prr_from_groups(correct: np.ndarray, total: np.ndarray, values: np.ndarray, max_rejection: float) -> np.ndarray:
    """PRR from the harmonic-number form of Σ_k R(k/N) over the kept coverages k = N − m + 1..N, m = ⌊r·N⌋.

    In a group with G responses (e errors) preceded by B responses (E errors), the expected errors of the top k are
    E + (k − B)·e/G for B < k ≤ B + G, so the group adds (E − B·e/G)·(H(hi) − H(lo − 1)) + (e/G)·(hi − lo + 1) over
    its kept k ∈ [lo, hi] (H: harmonic numbers). The oracle's risk max(0, k − C)/k sums the same way. NaN where the
    PRR is undefined (one class, m < 2).
    """
    errors = total - correct
    n = total.sum(axis=1)
    n_correct = correct.sum(axis=1)
    kept = (max_rejection * n).astype(np.int64)
    first_kept = n - kept + 1
    through = np.cumsum(total, axis=1)
    before = through - total
    errors_before = np.cumsum(errors, axis=1) - errors
    harmonic = np.concatenate(([0.0], np.cumsum(1.0 / np.arange(1, n.max() + 1))))
    reciprocal = np.concatenate(([0.0], 1.0 / np.arange(1, total.max() + 1)))
    share = errors * reciprocal[total]  # e/G, 0 for a group absent from the draw
    low = np.maximum(before + 1, first_kept[:, None])
    counted = np.maximum(through - low + 1, 0)
    low = np.minimum(low, through + 1)  # no kept k: H(hi) − H(lo − 1) = 0
    risk_sum = np.einsum("ij,ij->i", errors_before - before * share, harmonic[through] - harmonic[low - 1])
    risk_sum += np.einsum("ij,ij->i", share, counted)
    oracle_low = np.maximum(first_kept, n_correct + 1)
    oracle_sum = (n - oracle_low + 1) - n_correct * (harmonic[n] - harmonic[oracle_low - 1])
    random_risk = 1.0 - n_correct / n
    defined = (n_correct > 0) & (n_correct < n) & (kept >= 2)
    gain = np.where(defined, random_risk - oracle_sum / np.maximum(kept, 1), 0.0)
    return _divided(random_risk - risk_sum / np.maximum(kept, 1), gain)


def brier_from_groups(correct: np.ndarray, total: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Σ_g [c_g (1 − p_g)² + (t_g − c_g) p_g²] / N."""
    squared = correct @ (1.0 - values) ** 2 + (total - correct) @ values**2
    return squared / total.sum(axis=1)


def log_loss_from_groups(correct: np.ndarray, total: np.ndarray, values: np.ndarray) -> np.ndarray:
    """−Σ_g [c_g log p_g + (t_g − c_g) log(1 − p_g)] / N, p clipped to [ε, 1 − ε]."""
    clipped = np.clip(values, LOG_LOSS_EPSILON, 1.0 - LOG_LOSS_EPSILON)
    return -(correct @ np.log(clipped) + (total - correct) @ np.log1p(-clipped)) / total.sum(axis=1)


def ece_from_groups(
    correct: np.ndarray, total: np.ndarray, values: np.ndarray, n_bins: int = DEFAULT_ECE_BINS
) -> np.ndarray:
    """Equal-mass ECE: a group whose first position in increasing probability is S goes to bin ⌊S·B/N⌋; the ECE is
    Σ_bins |Σ (p − z)| / N."""
    ascending_total, ascending_correct, ascending_values = total[:, ::-1], correct[:, ::-1], values[::-1]
    n = total.sum(axis=1)
    first_position = np.cumsum(ascending_total, axis=1) - ascending_total
    bins = np.minimum(first_position * n_bins // n[:, None], n_bins - 1)  # a group absent from a draw may sit at N
    slots = (np.arange(total.shape[0])[:, None] * n_bins + bins).ravel()
    weights = (ascending_total * ascending_values - ascending_correct).ravel()
    gaps = np.bincount(slots, weights=weights, minlength=total.shape[0] * n_bins)
    return np.abs(gaps.reshape(total.shape[0], n_bins)).sum(axis=1) / n
