"""One task's metrics as method × metric tables: what ``trac summary`` and ``trac evaluate`` print
(docs/method.md#metric-names): the ranking metrics (selective prediction and rejection) and the calibration metrics.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import pandas as pd

from trac_metrics.methods import task_methods
from trac_metrics.selective import CALIBRATION_METRIC_NAMES, METRIC_NAMES, RANKING_METRIC_NAMES

SUMMARY_TABLES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("ranking", RANKING_METRIC_NAMES),
    ("calibration", CALIBRATION_METRIC_NAMES),
)
"""The tables ``trac summary`` prints per task, with their metrics (together :data:`METRIC_NAMES`)."""


def method_table(metrics: Mapping[str, float], names: Sequence[str] = METRIC_NAMES) -> pd.DataFrame:
    """A method × metric frame of the metrics ``names`` from ``{"<method>_<metric>": value}``, one row per registered
    task method present, in registry order (:func:`trac_metrics.methods.task_methods`); keys that are not such
    metrics are ignored."""
    order = [method.name for method in task_methods()]
    rows: dict[str, dict[str, float]] = {}
    for key, value in metrics.items():
        for name in names:
            if key.endswith(f"_{name}"):
                method = key[: -len(name) - 1]
                if method in order:
                    rows.setdefault(method, {})[name] = float(value)
    ordered = [method for method in order if method in rows]
    return pd.DataFrame(
        [rows[method] for method in ordered], index=pd.Index(ordered, name="method"), columns=list(names)
    )


def format_table(table: pd.DataFrame) -> str:
    """Plain-text table, NaN shown as ``nan`` (a metric that could not be computed, never dropped)."""
    header = ["method", *table.columns]
    lines = [" | ".join(f"{cell:>14}" for cell in header)]
    for method, row in table.iterrows():
        cells = [f"{value:.4f}" if not math.isnan(value) else "nan" for value in row]
        lines.append(" | ".join(f"{cell:>14}" for cell in [method, *cells]))
    return "\n".join(lines)
