"""Evidence and features of one question (docs/architecture.md#evidence): the feature vectors TUP φ_P, PCE φ_A and
the consensus statistics (:mod:`~trac_metrics.features.vectors`, importable from ``trac_metrics.features``
itself), the unsupervised baseline scores (:mod:`~trac_metrics.features.baselines`), the scores of the prefix
probes (:mod:`~trac_metrics.features.prefix_probes`) and the per-question evidence dict every later stage reads
(:mod:`~trac_metrics.features.evidence`).
"""

from trac_metrics.features.vectors import (
    LOW_THRESHOLD,
    N_BINS,
    PCE_FEATURE_NAMES,
    TAIL_WINDOW,
    TOP_K,
    TUP_FEATURE_NAMES,
    check_primary_index,
    class_shares,
    consensus_features,
    finite_sequence,
    pce_features,
    topk_entropy,
    tup_feature_names,
    tup_features,
)

__all__ = [
    "LOW_THRESHOLD",
    "N_BINS",
    "PCE_FEATURE_NAMES",
    "TAIL_WINDOW",
    "TOP_K",
    "TUP_FEATURE_NAMES",
    "check_primary_index",
    "class_shares",
    "consensus_features",
    "finite_sequence",
    "pce_features",
    "topk_entropy",
    "tup_feature_names",
    "tup_features",
]
