"""The metrics reported for every method, in one list (docs/method.md#metric-names): the selective-prediction
metrics and the rejection metrics of its ranking score, then the calibration metrics of its probability of
correctness. Every consumer of ``<method>_<metric>`` (the registry's results keys, the evaluation, ``trac summary``,
the ``trac_math`` group, the report) reads :data:`METRIC_NAMES`.
"""

from __future__ import annotations

from numpy.typing import ArrayLike

from trac_metrics.selective.calibration import CALIBRATION_METRIC_LABELS, CALIBRATION_METRIC_NAMES
from trac_metrics.selective.metrics import SELECTIVE_METRIC_LABELS, SELECTIVE_METRIC_NAMES, selective_metrics
from trac_metrics.selective.rejection import REJECTION_METRIC_LABELS, REJECTION_METRIC_NAMES, rejection_metrics

RANKING_METRIC_NAMES: tuple[str, ...] = SELECTIVE_METRIC_NAMES + REJECTION_METRIC_NAMES
"""The metrics computed from a method's score (its ranking): the keys of :func:`ranking_metrics`."""

METRIC_NAMES: tuple[str, ...] = RANKING_METRIC_NAMES + CALIBRATION_METRIC_NAMES
"""Every metric reported per method, in order: the ``<metric>`` of every ``<method>_<metric>`` result."""

METRIC_LABELS: dict[str, str] = {**SELECTIVE_METRIC_LABELS, **REJECTION_METRIC_LABELS, **CALIBRATION_METRIC_LABELS}
"""How rendered report tables name each metric (the one place display labels come from)."""

HIGHER_IS_BETTER: dict[str, bool] = {name: name in ("auroc", *REJECTION_METRIC_NAMES) for name in METRIC_NAMES}
"""The orientation of each metric: AUROC, AUPRC and PRR are higher-is-better, every other metric lower-is-better."""

METRIC_DEFINITIONS: dict[str, tuple[str, str]] = {
    "auroc": ("The chance that a correct answer scores above a wrong one (ties count half)", "docs/method.md#auroc"),
    "aurc": (
        "The mean error rate of the most confident answers over every coverage; lower is better",
        "docs/method.md#risk-coverage-curve-and-aurc",
    ),
    "e_aurc": ("AURC minus the AURC of the perfect ranking; 0 is perfect", "docs/method.md#e-aurc"),
    "excess_aurc": ("AURC divided by the error rate: about 1 for a random ranking", "docs/method.md#excess-aurc"),
    **{
        key: (f"The error rate of the most confident {label[5:]} % of answers", "docs/method.md#risk-at-coverage")
        for key, label in SELECTIVE_METRIC_LABELS.items()
        if label.startswith("risk@")
    },
    "auprc": (
        "Average precision of finding the wrong answers from the lowest scores up",
        "docs/method.md#auprc-of-errors",
    ),
    "prr": (
        "Where the ranking sits between random (0) and the oracle (1) in rejecting answers",
        "docs/method.md#prediction-rejection-ratio",
    ),
    "prr_50": ("PRR when at most half of the answers are rejected", "docs/method.md#prediction-rejection-ratio"),
    "ece": (
        "The mean gap between stated probability and accuracy over equal-mass bins",
        "docs/method.md#expected-calibration-error",
    ),
    "brier": ("The mean squared error of the probability of correctness", "docs/method.md#brier-score"),
    "log_loss": ("The mean negative log-likelihood of the labels under the probability", "docs/method.md#log-loss"),
    "smece": ("A binning-free calibration error (kernel-smoothed)", "docs/method.md#smooth-ece"),
}
"""Each metric's one-line definition and the docs section that defines it (the HTML report's header help)."""


def ranking_metrics(scores: ArrayLike, labels: ArrayLike) -> dict[str, float]:
    """:func:`~trac_metrics.selective.metrics.selective_metrics` and
    :func:`~trac_metrics.selective.rejection.rejection_metrics` of one score, keys in :data:`RANKING_METRIC_NAMES`
    order."""
    return {**selective_metrics(scores, labels), **rejection_metrics(scores, labels)}
