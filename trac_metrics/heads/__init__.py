"""Learned heads (docs/architecture.md#heads): the shared logistic head and its JSON file
(:mod:`~trac_metrics.heads.logistic`), the baselines' calibration maps (:mod:`~trac_metrics.heads.calibration_maps`,
docs/method.md#calibration-maps), question-grouped cross-fitting (:mod:`~trac_metrics.heads.cross_fitting`), one
task's evaluation (:mod:`~trac_metrics.heads.evaluate`) and saved heads and maps for ``trac fit`` / ``trac score``
(:mod:`~trac_metrics.heads.saved_heads`). The names below are importable from ``trac_metrics.heads`` itself.
"""

from trac_metrics.heads.cross_fitting import (
    FOLD_SEEDS,
    cross_fit,
    cross_fit_many,
    fold_assignments,
    mean_oof_score,
    oof_metric,
)
from trac_metrics.heads.logistic import (
    HEAD_FIELDS,
    HEAD_FORMAT_VERSION,
    HEAD_KIND,
    MIN_SAMPLES_PER_CLASS,
    FittedHead,
    HeadFormatError,
    as_float,
    check_fields,
    expect,
    fit_head,
    is_finite_number,
    is_number,
    newton_memory,
    transfer_scores,
)

__all__ = [
    "FOLD_SEEDS",
    "HEAD_FIELDS",
    "HEAD_FORMAT_VERSION",
    "HEAD_KIND",
    "MIN_SAMPLES_PER_CLASS",
    "FittedHead",
    "HeadFormatError",
    "as_float",
    "check_fields",
    "cross_fit",
    "cross_fit_many",
    "expect",
    "fit_head",
    "fold_assignments",
    "is_finite_number",
    "is_number",
    "mean_oof_score",
    "newton_memory",
    "oof_metric",
    "transfer_scores",
]
