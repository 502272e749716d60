"""One task's metrics as method × metric tables: what ``trac summary`` and ``trac evaluate`` print
(docs/method.md#metric-names): the ranking metrics (selective prediction and rejection) and the calibration metrics;
and the probe cache share line ``trac summary`` and the HTML report show per task (:func:`probe_cache_line`,
docs/method.md#probe-cache-share).

The headline view (:data:`HEADLINE_METRICS` of every method for ``trac summary``; of :data:`HEADLINE_METHODS` only in
the console table lm-eval prints, :func:`headline_keys`) fits on one screen; every metric stays in lm-eval's results
file and in ``trac summary --all``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import pandas as pd

from trac_metrics.features.cache_share import ProbeCacheCounts, format_share
from trac_metrics.methods import ACCURACY_KEYS, all_methods, task_methods
from trac_metrics.selective import CALIBRATION_METRIC_NAMES, METRIC_NAMES, RANKING_METRIC_NAMES

SUMMARY_TABLES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("ranking", RANKING_METRIC_NAMES),
    ("calibration", CALIBRATION_METRIC_NAMES),
)
"""The tables ``trac summary --all`` prints per task, with their metrics (together :data:`METRIC_NAMES`)."""

HEADLINE_METRICS: tuple[str, ...] = ("auroc", "aurc", "ece")
"""The headline metrics of a method: how it ranks answers (AUROC), the selective risk it gives (AURC) and the
calibration of its probability of correctness (ECE)."""
HEADLINE_TABLES: tuple[tuple[str, tuple[str, ...]], ...] = (("headline", HEADLINE_METRICS),)
"""The table ``trac summary`` prints per task by default: every method's headline metrics."""
HEADLINE_METHODS: tuple[str, ...] = (
    "trac",
    "cf",
    "sc_modal",
    "mean_logprob",
    "self_certainty",
    "deepconf_bottom",
    "p_true",
)
"""The methods of the console table lm-eval prints for a TrAC task: TrAC, TrAC + CF@K and the strongest baselines of
each leaderboard block (SC@K on the modal answer; mean log-probability, self-certainty, DeepConf-bottom and, when
switched on, P(True)). With ``acc`` and ``maj_acc`` that is at most 2 + 7 × 3 = 23 rows; the task's probe cache share,
undecided comparisons and the probe's two agreement shares (docs/method.md#probe-agreement) follow them."""


def headline_keys() -> frozenset[str]:
    """The results keys the console table shows by default: ``acc``, ``maj_acc`` and ``<method>_<metric>`` of the
    registered :data:`HEADLINE_METHODS` × :data:`HEADLINE_METRICS`."""
    names = {method.name for method in all_methods()}
    chosen = [name for name in HEADLINE_METHODS if name in names]
    return frozenset((*ACCURACY_KEYS, *(f"{name}_{metric}" for name in chosen for metric in HEADLINE_METRICS)))


def method_keys() -> frozenset[str]:
    """Every ``<method>_<metric>`` results key of the registered methods (a task's own metrics are none of them)."""
    return frozenset(key for method in all_methods() for key in method.results_keys)


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


def probe_cache_line(counts: ProbeCacheCounts) -> str:
    """``probe cache share: 91.3 % (N of M prompt tokens over P probes)`` (docs/method.md#probe-cache-share), naming
    the probes whose engine gave no cached count; ``probe cache share: not reported (...)`` when none gave one."""
    unreported = f"{counts.unreported} probes without a cached-token count" if counts.unreported else ""
    if counts.reported == 0:
        return f"probe cache share: not reported ({unreported or 'no trace probes'})"
    counted = f"{counts.cached_tokens} of {counts.prompt_tokens} prompt tokens over {counts.reported} probes"
    return f"probe cache share: {format_share(counts)} ({counted}{'; ' + unreported if unreported else ''})"
