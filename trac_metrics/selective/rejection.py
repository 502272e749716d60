"""Rejection metrics of the uncertainty-quantification toolkits for one (model, dataset) pair: AUPRC of errors and
LM-Polygraph's Prediction Rejection Ratio (docs/method.md#auprc-of-errors, docs/method.md#prediction-rejection-ratio).

Inputs follow :mod:`trac_metrics.selective.metrics`: ``scores`` higher = more likely correct, ``labels`` 1 = correct.
Both metrics are higher-is-better. Ties: AUPRC takes one threshold per distinct score, as scikit-learn's
``average_precision_score`` does (tied responses are flagged together); PRR reads the expected risk curve, so tied
responses are averaged over their orders (docs/method.md#tie-handling), where LM-Polygraph's ``argsort`` would pick
one order.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from numpy.typing import ArrayLike

from trac_metrics._warnings import TracWarning
from trac_metrics.selective.metrics import checked_inputs, expected_risk

REJECTION_METRIC_NAMES: tuple[str, ...] = ("auprc", "prr", "prr_50")
"""The rejection metrics reported per method, in order: the keys of :func:`rejection_metrics`."""

REJECTION_METRIC_LABELS: dict[str, str] = {"auprc": "AUPRC (errors)", "prr": "PRR", "prr_50": "PRR@50"}

MAX_REJECTION: dict[str, float] = {"prr": 1.0, "prr_50": 0.5}
"""The largest share of answers rejected by each PRR metric (LM-Polygraph's ``max_rejection``)."""


def _auprc(scores: np.ndarray, correct: np.ndarray) -> float:
    """Average precision of flagging errors from the lowest scores up, one threshold per distinct score."""
    errors = (~correct).astype(np.float64)
    n_errors = int(errors.sum())
    if n_errors == 0:
        warnings.warn("auprc: no response is wrong, there is no error to detect (NaN)", TracWarning, stacklevel=3)
        return math.nan
    values, group_of = np.unique(scores, return_inverse=True)  # increasing score: the least confident first
    group_errors = np.bincount(group_of, weights=errors, minlength=values.size)
    flagged = np.cumsum(np.bincount(group_of, minlength=values.size))
    return float(np.sum(group_errors * np.cumsum(group_errors) / flagged) / n_errors)


def rejection_area_count(n: int, max_rejection: float) -> int:
    """How many coverages k/N the rejection area averages: ⌊max_rejection · N⌋, as LM-Polygraph truncates."""
    return int(max_rejection * n)


def prr_undefined(n: int, n_correct: int, max_rejection: float) -> str | None:
    """Why the PRR of N answers with ``n_correct`` correct is undefined (the oracle gains nothing over a random
    order), or None: one class only, or a rejection range that holds full coverage alone."""
    if n_correct in (0, n):
        return f"all {n} answers are {'correct' if n_correct else 'wrong'}: no ordering can gain over another"
    if rejection_area_count(n, max_rejection) < 2:
        return f"rejecting up to {max_rejection:g} of {n} answers leaves only full coverage to compare"
    return None


def _prr(risk: np.ndarray, correct: np.ndarray, max_rejection: float, name: str) -> float:
    """(random area − area) / (random area − oracle area) over the coverages k = N − m + 1..N."""
    n, n_correct = correct.size, int(correct.sum())
    reason = prr_undefined(n, n_correct, max_rejection)
    if reason is not None:
        warnings.warn(f"{name}: {reason} (NaN)", TracWarning, stacklevel=3)
        return math.nan
    kept = np.arange(n - rejection_area_count(n, max_rejection) + 1, n + 1)
    random_risk = 1.0 - n_correct / n
    oracle_risk = np.maximum(kept - n_correct, 0) / kept
    return float((random_risk - risk[kept - 1].mean()) / (random_risk - oracle_risk.mean()))


def auprc(scores: ArrayLike, labels: ArrayLike) -> float:
    """Average precision of detecting wrong answers from low scores (docs/method.md#auprc-of-errors): the positive
    class is a wrong answer, flagged from the lowest score up. 1 = every error below every correct answer; a random
    score gets about the error rate. NaN with a ``TracWarning`` when no answer is wrong, for empty input or NaN
    scores; 1 when every answer is wrong."""
    checked = checked_inputs(scores, labels, "auprc")
    return math.nan if checked is None else _auprc(*checked)


def prr(scores: ArrayLike, labels: ArrayLike, max_rejection: float = 1.0) -> float:
    """Prediction Rejection Ratio, quality = correctness (docs/method.md#prediction-rejection-ratio): the share of
    the oracle's gain in mean retained accuracy over a random order that the score reaches, rejecting up to
    ``max_rejection`` of the answers. 1 = oracle, 0 = random, negative = worse than random. NaN with a
    ``TracWarning`` when undefined (:func:`prr_undefined`), for empty input or NaN scores."""
    if not 0.0 < max_rejection <= 1.0:
        raise ValueError(f"max_rejection must lie in (0, 1], got {max_rejection!r}")
    checked = checked_inputs(scores, labels, "prr")
    return math.nan if checked is None else _prr(expected_risk(*checked), checked[1], max_rejection, "prr")


def prr_50(scores: ArrayLike, labels: ArrayLike) -> float:
    """:func:`prr` rejecting up to half of the answers (LM-Polygraph's ``max_rejection = 0.5``)."""
    return prr(scores, labels, MAX_REJECTION["prr_50"])


def rejection_metrics(scores: ArrayLike, labels: ArrayLike) -> dict[str, float]:
    """Every metric of :data:`REJECTION_METRIC_NAMES` at once; empty input or NaN scores give NaN for every metric
    with one ``TracWarning``."""
    checked = checked_inputs(scores, labels, "rejection_metrics")
    if checked is None:
        return dict.fromkeys(REJECTION_METRIC_NAMES, math.nan)
    risk = expected_risk(*checked)
    return {
        "auprc": _auprc(*checked),
        **{name: _prr(risk, checked[1], fraction, name) for name, fraction in MAX_REJECTION.items()},
    }
