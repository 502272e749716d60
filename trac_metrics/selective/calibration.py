"""Calibration metrics of a probability of correctness for one (model, dataset) pair (docs/method.md#calibration).

Conventions shared by every function here:

- ``probabilities``: one number in [0, 1] per response, the probability that it is correct (a head's out-of-fold
  probability, or a baseline's score through its cross-fitted calibration map, docs/method.md#calibration-maps).
  A value outside [0, 1] is a ``ValueError``; a NaN makes the metric NaN with a ``TracWarning`` (as for scores).
- ``labels``: 1 / ``True`` = correct, as in :mod:`trac_metrics.selective.metrics`.

Every metric here is lower-is-better and 0 for a perfectly calibrated and sharp predictor; one class of labels,
ties and fewer questions than bins are defined (docs/method.md#expected-calibration-error).
"""

from __future__ import annotations

import math
import numbers

import numpy as np
from numpy.typing import ArrayLike

from trac_metrics.selective.metrics import checked_inputs

DEFAULT_ECE_BINS = 15
"""The number of equal-mass bins of the ECE and of the reliability diagrams (``trac report --ece-bins``)."""

CALIBRATION_METRIC_NAMES: tuple[str, ...] = ("ece", "brier", "log_loss", "smece")
"""The calibration metrics reported per method, in order: the keys of :func:`calibration_metrics`."""

CALIBRATION_METRIC_LABELS: dict[str, str] = {"ece": "ECE", "brier": "Brier", "log_loss": "log loss", "smece": "smECE"}

LOG_LOSS_EPSILON = float(np.finfo(np.float64).eps)
"""Probabilities are clipped to [ε, 1 − ε] in the log loss (scikit-learn's ``log_loss`` clipping)."""


def _checked_probabilities(
    probabilities: ArrayLike, labels: ArrayLike, metric: str
) -> tuple[np.ndarray, np.ndarray] | None:
    """Validated inputs (see :func:`~trac_metrics.selective.metrics.checked_inputs`), probabilities in [0, 1]."""
    checked = checked_inputs(probabilities, labels, metric, stacklevel=4)
    if checked is not None:
        outside = checked[0][(checked[0] < 0.0) | (checked[0] > 1.0)]
        if outside.size:
            raise ValueError(
                f"{metric}: probabilities must lie in [0, 1]; got {outside.size} outside, e.g. {outside[:3].tolist()}"
            )
    return checked


def check_n_bins(n_bins: int) -> int:
    """``n_bins`` as an integer ≥ 1; ``ValueError`` otherwise."""
    if isinstance(n_bins, bool) or not isinstance(n_bins, numbers.Integral) or n_bins < 1:
        raise ValueError(f"the number of ECE bins must be an integer >= 1, got {n_bins!r}")
    return int(n_bins)


def equal_mass_bins(probabilities: np.ndarray, n_bins: int) -> np.ndarray:
    """The bin (0..n_bins − 1) of each probability (docs/method.md#expected-calibration-error).

    With the probabilities sorted increasingly, the response at position i (0-based) of N belongs to bin
    ⌊i·B/N⌋; tied probabilities are never split: a tie group goes whole to the bin of its first position. Each bin
    then holds N/B responses up to rounding and ties; with N < B every distinct probability has its own bin.
    """
    n = probabilities.size
    order = np.argsort(probabilities, kind="stable")
    sorted_values = probabilities[order]
    first_position = np.zeros(n, dtype=np.int64)
    opens_group = np.ones(n, dtype=bool)
    opens_group[1:] = sorted_values[1:] != sorted_values[:-1]
    first_position[opens_group] = np.flatnonzero(opens_group)
    first_position = np.maximum.accumulate(first_position)
    bins = np.empty(n, dtype=np.int64)
    bins[order] = first_position * n_bins // n
    return bins


def _ece(probabilities: np.ndarray, correct: np.ndarray, n_bins: int) -> float:
    gaps = np.bincount(
        equal_mass_bins(probabilities, n_bins), weights=probabilities - correct, minlength=n_bins
    )  # Σ (p − z) per bin = n_b (mean p_b − accuracy_b)
    return float(np.abs(gaps).sum() / probabilities.size)


def _brier(probabilities: np.ndarray, correct: np.ndarray) -> float:
    return float(np.mean((probabilities - correct) ** 2))


def _log_loss(probabilities: np.ndarray, correct: np.ndarray) -> float:
    clipped = np.clip(probabilities, LOG_LOSS_EPSILON, 1.0 - LOG_LOSS_EPSILON)
    return float(-np.mean(np.where(correct, np.log(clipped), np.log1p(-clipped))))


def _smece(probabilities: np.ndarray, correct: np.ndarray) -> float:
    """relplot's ``smECE`` (Błasiok and Nakkiran 2023), imported here: relplot imports pyplot and seaborn."""
    from relplot.metrics import smECE

    return float(smECE(probabilities, correct.astype(np.float64)))


def ece(probabilities: ArrayLike, labels: ArrayLike, n_bins: int = DEFAULT_ECE_BINS) -> float:
    """Expected calibration error over ``n_bins`` equal-mass bins (docs/method.md#expected-calibration-error):
    Σ_b (n_b / N) |mean probability_b − accuracy_b|. 0 = calibrated within every bin; at most 1."""
    bins = check_n_bins(n_bins)
    checked = _checked_probabilities(probabilities, labels, "ece")
    return math.nan if checked is None else _ece(*checked, bins)


def brier(probabilities: ArrayLike, labels: ArrayLike) -> float:
    """Brier score (docs/method.md#brier-score): mean of (p − z)². 0 = certain and right everywhere, 0.25 = a
    constant 0.5, 1 = certain and wrong everywhere."""
    checked = _checked_probabilities(probabilities, labels, "brier")
    return math.nan if checked is None else _brier(*checked)


def log_loss(probabilities: ArrayLike, labels: ArrayLike) -> float:
    """Log loss (docs/method.md#log-loss): −mean(z log p + (1 − z) log(1 − p)), p clipped to [ε, 1 − ε]
    (:data:`LOG_LOSS_EPSILON`). 0 = certain and right everywhere, log 2 ≈ 0.693 = a constant 0.5."""
    checked = _checked_probabilities(probabilities, labels, "log_loss")
    return math.nan if checked is None else _log_loss(*checked)


def smece(probabilities: ArrayLike, labels: ArrayLike) -> float:
    """Smooth ECE (docs/method.md#smooth-ece) as the ``relplot`` package computes it (``relplot.smECE``, its
    automatic kernel bandwidth). 0 = calibrated; at most 1."""
    checked = _checked_probabilities(probabilities, labels, "smece")
    return math.nan if checked is None else _smece(*checked)


def calibration_metrics(
    probabilities: ArrayLike, labels: ArrayLike, n_bins: int = DEFAULT_ECE_BINS
) -> dict[str, float]:
    """Every metric of :data:`CALIBRATION_METRIC_NAMES` at once; empty input or a NaN probability gives NaN for
    every metric with one ``TracWarning``."""
    bins = check_n_bins(n_bins)
    checked = _checked_probabilities(probabilities, labels, "calibration_metrics")
    if checked is None:
        return dict.fromkeys(CALIBRATION_METRIC_NAMES, math.nan)
    return {
        "ece": _ece(*checked, bins),
        "brier": _brier(*checked),
        "log_loss": _log_loss(*checked),
        "smece": _smece(*checked),
    }


def reliability_bins(
    probabilities: ArrayLike, labels: ArrayLike, n_bins: int = DEFAULT_ECE_BINS
) -> dict[str, np.ndarray]:
    """The non-empty equal-mass bins of the ECE, for a reliability diagram (docs/method.md#figures): ``count``,
    ``confidence`` (mean probability) and ``accuracy`` of each bin, in increasing confidence. Empty arrays (after a
    ``TracWarning``) for empty input or NaN probabilities."""
    bins = check_n_bins(n_bins)
    checked = _checked_probabilities(probabilities, labels, "reliability_bins")
    if checked is None:
        return {"count": np.empty(0, dtype=np.int64), "confidence": np.empty(0), "accuracy": np.empty(0)}
    values, correct = checked
    of = equal_mass_bins(values, bins)
    count = np.bincount(of, minlength=bins)
    used = count > 0
    return {
        "count": count[used],
        "confidence": np.bincount(of, weights=values, minlength=bins)[used] / count[used],
        "accuracy": np.bincount(of, weights=correct, minlength=bins)[used] / count[used],
    }
