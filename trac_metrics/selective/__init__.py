"""Selective-prediction metrics (docs/method.md#selective-prediction-metrics): the per-pair metrics of
:mod:`~trac_metrics.selective.metrics`, the rejection metrics of :mod:`~trac_metrics.selective.rejection`, the
calibration metrics of :mod:`~trac_metrics.selective.calibration` (docs/method.md#calibration) and the list every
method reports (:mod:`~trac_metrics.selective.reported`), importable from ``trac_metrics.selective`` itself, and the
pair-equal macro with its hierarchical bootstrap (:mod:`~trac_metrics.selective.bootstrap`,
docs/method.md#hierarchical-bootstrap).
"""

from trac_metrics.selective.calibration import (
    CALIBRATION_METRIC_NAMES,
    DEFAULT_ECE_BINS,
    brier,
    calibration_metrics,
    ece,
    log_loss,
    reliability_bins,
    smece,
)
from trac_metrics.selective.metrics import (
    DEFAULT_COVERAGES,
    SELECTIVE_METRIC_NAMES,
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
from trac_metrics.selective.rejection import REJECTION_METRIC_NAMES, auprc, prr, prr_50, rejection_metrics
from trac_metrics.selective.reported import (
    HIGHER_IS_BETTER,
    METRIC_DEFINITIONS,
    METRIC_LABELS,
    METRIC_NAMES,
    RANKING_METRIC_NAMES,
    ranking_metrics,
)

__all__ = [
    "CALIBRATION_METRIC_NAMES",
    "DEFAULT_COVERAGES",
    "DEFAULT_ECE_BINS",
    "HIGHER_IS_BETTER",
    "METRIC_DEFINITIONS",
    "METRIC_LABELS",
    "METRIC_NAMES",
    "RANKING_METRIC_NAMES",
    "REJECTION_METRIC_NAMES",
    "SELECTIVE_METRIC_NAMES",
    "as_binary_labels",
    "auprc",
    "aurc",
    "auroc",
    "brier",
    "calibration_metrics",
    "e_aurc",
    "ece",
    "excess_aurc",
    "log_loss",
    "prr",
    "prr_50",
    "ranking_metrics",
    "rejection_metrics",
    "reliability_bins",
    "risk_at_coverage",
    "risk_coverage_curve",
    "risk_key",
    "selective_metrics",
    "smece",
]
