"""Selective-prediction metrics (docs/method.md#selective-prediction-metrics): the per-pair metrics of
:mod:`~trac_metrics.selective.metrics`, importable from ``trac_metrics.selective`` itself, and the pair-equal macro
with its hierarchical bootstrap (:mod:`~trac_metrics.selective.bootstrap`, docs/method.md#hierarchical-bootstrap).
"""

from trac_metrics.selective.metrics import (
    DEFAULT_COVERAGES,
    METRIC_LABELS,
    METRIC_NAMES,
    as_binary_labels,
    aurc,
    auroc,
    e_aurc,
    excess_aurc,
    risk_at_coverage,
    risk_coverage_curve,
    risk_key,
    selective_metrics,
)

__all__ = [
    "DEFAULT_COVERAGES",
    "METRIC_LABELS",
    "METRIC_NAMES",
    "as_binary_labels",
    "aurc",
    "auroc",
    "e_aurc",
    "excess_aurc",
    "risk_at_coverage",
    "risk_coverage_curve",
    "risk_key",
    "selective_metrics",
]
