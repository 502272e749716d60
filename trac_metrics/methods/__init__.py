"""The uncertainty methods, each declared once (docs/architecture.md#method-registry): the registry's types and
queries (:mod:`~trac_metrics.methods.registry`), the built-in methods (:mod:`~trac_metrics.methods.builtin`,
registered on import) and the generator of the ``trac_math`` group YAML (:mod:`~trac_metrics.methods.group_yaml`).
"""

from trac_metrics.methods import builtin as _builtin  # noqa: F401  (registers the built-in methods)
from trac_metrics.methods.registry import (
    K_GENERATIONS,
    LAST_ROW,
    ONE_GENERATION,
    Cost,
    Family,
    FeatureRow,
    Method,
    Question,
    Scope,
    all_methods,
    get,
    group_methods,
    head_features,
    leaderboard_rows,
    register,
    saved_head_methods,
    scored_methods,
    task_methods,
    unregister,
    with_probe,
)

__all__ = [
    "K_GENERATIONS",
    "LAST_ROW",
    "ONE_GENERATION",
    "Cost",
    "Family",
    "FeatureRow",
    "Method",
    "Question",
    "Scope",
    "all_methods",
    "get",
    "group_methods",
    "head_features",
    "leaderboard_rows",
    "register",
    "saved_head_methods",
    "scored_methods",
    "task_methods",
    "unregister",
    "with_probe",
]
