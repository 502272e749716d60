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


def ranking_metrics(scores: ArrayLike, labels: ArrayLike) -> dict[str, float]:
    """:func:`~trac_metrics.selective.metrics.selective_metrics` and
    :func:`~trac_metrics.selective.rejection.rejection_metrics` of one score, keys in :data:`RANKING_METRIC_NAMES`
    order."""
    return {**selective_metrics(scores, labels), **rejection_metrics(scores, labels)}
