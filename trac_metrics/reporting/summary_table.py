"""One task's metrics as a method × metric table: what ``trac summary`` and ``trac evaluate`` print
(docs/method.md#metric-names).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd

from trac_metrics.selective import METRIC_NAMES

METHOD_ORDER = (
    "trac", "pce", "tup", "cf", "sup_consensus", "mean_logprob", "self_certainty", "deepconf_bottom", "p_true",
    "selfdoubt", "sc_modal", "sc_primary", "semantic_entropy", "selfcheck", "cw_vote",
    "pce_question_only", "pce_shuffled_trace", "pce_teacher_forced",
)
"""Display order: TrAC and its components, single-trace baselines, sampling baselines, ablation heads."""


def method_table(metrics: Mapping[str, float]) -> pd.DataFrame:
    """A method × metric frame from ``{"<method>_<metric>": value}``; keys that are not such metrics are ignored."""
    rows: dict[str, dict[str, float]] = {}
    for key, value in metrics.items():
        for name in METRIC_NAMES:
            if key.endswith(f"_{name}"):
                method = key[: -len(name) - 1]
                if method in METHOD_ORDER:
                    rows.setdefault(method, {})[name] = float(value)
    ordered = [method for method in METHOD_ORDER if method in rows]
    return pd.DataFrame([rows[method] for method in ordered], index=pd.Index(ordered, name="method"),
                        columns=list(METRIC_NAMES))


def format_table(table: pd.DataFrame) -> str:
    """Plain-text table, NaN shown as ``nan`` (a metric that could not be computed, never dropped)."""
    header = ["method", *table.columns]
    lines = [" | ".join(f"{cell:>14}" for cell in header)]
    for method, row in table.iterrows():
        cells = [f"{value:.4f}" if not math.isnan(value) else "nan" for value in row]
        lines.append(" | ".join(f"{cell:>14}" for cell in [method, *cells]))
    return "\n".join(lines)
