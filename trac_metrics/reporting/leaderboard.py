"""The leaderboard tables of ``trac report``: paper Table 1 layout, its confidence intervals, paired differences and
the per-pair numbers every macro is averaged from (docs/method.md#pair-equal-macro-average,
docs/method.md#hierarchical-bootstrap).

Every point number is the pair-equal macro of the per-pair ``TaskEvaluation.metrics`` (the numbers lm-eval's
aggregation reports for each task); intervals and p-values come from the shared hierarchical bootstrap of
:class:`~trac_metrics.reporting.report_data.ReportData`. A pair where a method's metric is undefined (one class only,
too few questions of a class to cross-fit the learned heads, a method the pair did not record) keeps its NaN in the
per-pair table, is left out of that method's macro, and is named with the reason in the table's note.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import pandas as pd

from trac_metrics._warnings import TracWarning
from trac_metrics.heads.evaluate import TaskEvaluation
from trac_metrics.methods import Family, get, leaderboard_rows
from trac_metrics.reporting.report_data import BOOTSTRAP_METRICS, ReportData
from trac_metrics.reporting.runs import PairRun
from trac_metrics.reporting.tables import ReportTable, rank_marks
from trac_metrics.selective import (
    CALIBRATION_METRIC_NAMES,
    DEFAULT_COVERAGES,
    HIGHER_IS_BETTER,
    METRIC_LABELS,
    REJECTION_METRIC_NAMES,
    risk_key,
)
from trac_metrics.selective.bootstrap import mean_of_defined
from trac_metrics.selective.rejection import MAX_REJECTION, prr_undefined

COMPARISONS = (("trac", "sc_modal"), ("trac", "sc_primary"), ("cf", "sc_modal"), ("cf", "sc_primary"))
"""Paired differences (docs/method.md#paired-differences): TrAC − SC@K and Consensus Fusion@K − SC@K (modal and
primary-answer SC)."""

_TIE_TOLERANCE = 1e-12
CALIBRATION_TABLE_METRICS = (*REJECTION_METRIC_NAMES, *CALIBRATION_METRIC_NAMES)
"""The metrics of :func:`calibration_table`: the rejection metrics, then the calibration metrics."""


def k_label(pairs: Sequence[PairRun]) -> str:
    """K of the sampling methods' labels: the number when every pair has the same K, else ``K``."""
    ks = {pair.num_samples for pair in pairs}
    return str(ks.pop()) if len(ks) == 1 else "K"


def method_label(method: str, k: str) -> str:
    """Display label of a registered method (paper Table 1 wording), ``@k`` filled in for sampling methods."""
    return get(method).display(k)


def leaderboard_methods(data: ReportData) -> list[tuple[str, str]]:
    """``(block, method)`` of every leaderboard method of the registry (:func:`trac_metrics.methods.leaderboard_rows`,
    paper Table 1 order) evaluated on at least one pair."""
    evaluated = {method for evaluation in data.evaluations for method in evaluation.scores}
    k = k_label(data.pairs)
    blocks = {"single-trace": "single-trace", "sampling": f"sampling (K={k})" if k != "K" else "sampling (K per pair)"}
    return [(blocks[method.block], method.name) for method in leaderboard_rows() if method.name in evaluated]


def mean_latency(data: ReportData, method: str) -> float:
    """Mean over the pairs that evaluated ``method`` (and stored timings) of its relative latency."""
    return mean_of_defined(
        pair.relative_latency(method)
        for pair, evaluation in zip(data.pairs, data.evaluations)
        if method in evaluation.scores
    )


def tasks(data: ReportData) -> list[str]:
    """Tasks of the pairs, in the pairs' (sorted) order."""
    return list(dict.fromkeys(pair.task for pair in data.pairs))


def task_means(data: ReportData, method: str, metric: str) -> dict[str, float]:
    """Task → mean of ``<method>_<metric>`` over the pairs of the task where it is defined (the models of that task),
    in :func:`tasks` order; one pass over the pairs."""
    values = data.per_pair(method, metric)
    by_task: dict[str, list[float]] = {task: [] for task in tasks(data)}
    for pair, value in zip(data.pairs, values):
        by_task[pair.task].append(value)
    return {task: mean_of_defined(found) for task, found in by_task.items()}


def undefined_reasons(data: ReportData, methods: Sequence[str], metrics: Sequence[str] = ("auroc",)) -> list[str]:
    """One line per pair where some ``<method>_<metric>`` is NaN: the methods, grouped by the reason."""
    k = k_label(data.pairs)
    lines = []
    for pair, evaluation in zip(data.pairs, data.evaluations):
        by_reason: dict[str, list[str]] = {}
        for metric in metrics:
            for method in methods:
                if math.isnan(evaluation.metrics.get(f"{method}_{metric}", math.nan)):
                    names = by_reason.setdefault(_reason(evaluation, method, metric), [])
                    if method_label(method, k) not in names:
                        names.append(method_label(method, k))
        if by_reason:
            lines.append(
                f"{pair.name}: " + "; ".join(f"{', '.join(names)}: {reason}" for reason, names in by_reason.items())
            )
    return lines


def _reason(evaluation: TaskEvaluation, method: str, metric: str) -> str:
    """Why ``<method>_<metric>`` is NaN on the pair of ``evaluation``, from its labels and scores."""
    correct, n = int(evaluation.labels.sum()), evaluation.labels.size
    if method not in evaluation.scores:
        return "not in this pair's records"
    not_cross_fitted = (
        f"not cross-fitted ({correct} correct / {n - correct} wrong answers: too few of a class for 5-fold "
        "stratified cross-fitting)"
    )
    if np.isnan(evaluation.scores[method]).any():
        return not_cross_fitted
    if metric in CALIBRATION_METRIC_NAMES and np.isnan(evaluation.probabilities_by_seed[method]).any():
        return not_cross_fitted
    if metric in MAX_REJECTION and (why := prr_undefined(n, correct, MAX_REJECTION[metric])) is not None:
        return f"{METRIC_LABELS[metric]} undefined ({why})"
    if metric == "auprc" and correct == n:
        return f"AUPRC undefined (no wrong answer among {n} to detect)"
    if metric == "auroc" and correct in (0, n):
        return f"AUROC undefined (all {n} answers {'correct' if correct else 'wrong'}: one class only)"
    if metric == "excess_aurc" and correct == n:
        return f"excess AURC undefined (no wrong answer among {n}: base error rate 0)"
    return f"{metric} undefined on this pair"


def _notes(*parts: str) -> str:
    return " ".join(part for part in parts if part)


def _undefined_note(data: ReportData, methods: Sequence[str], metrics: Sequence[str]) -> str:
    lines = undefined_reasons(data, methods, metrics)
    if not lines:
        return ""
    return "NaN per-pair values (left out of the means): " + " | ".join(lines) + "."


def main_table(data: ReportData) -> ReportTable:
    """Paper Table 1: per-task AUROC / AURC, pair-equal macro AUROC / AURC, excess AURC, risk at 10/20/50% coverage
    and measured relative latency, one row per method (single-trace block, then sampling block)."""
    rows = leaderboard_methods(data)
    k = k_label(data.pairs)
    columns: dict[str, list[float]] = {}
    means = {(method, metric): task_means(data, method, metric) for _, method in rows for metric in BOOTSTRAP_METRICS}
    for task in tasks(data):
        for metric in BOOTSTRAP_METRICS:
            columns[f"{task} {METRIC_LABELS[metric]}"] = [means[method, metric][task] for _, method in rows]
    for metric in (*BOOTSTRAP_METRICS, "excess_aurc", *map(risk_key, DEFAULT_COVERAGES)):
        label = METRIC_LABELS[metric]
        columns[f"macro {label}" if metric in BOOTSTRAP_METRICS else label] = [
            data.macro(method, metric) for _, method in rows
        ]
    columns["latency ×"] = [mean_latency(data, method) for _, method in rows]
    index = pd.MultiIndex.from_tuples(
        [(block, method_label(method, k)) for block, method in rows], names=["block", "method"]
    )
    frame = pd.DataFrame(columns, index=index)
    rank = {column: column.endswith("AUROC") for column in frame.columns if column != "latency ×"}
    methods = [method for _, method in rows]
    note = _notes(
        f"{len(data.pairs)} (model, task) pairs. Per-task columns: mean over the pairs (models) of that task; "
        "macro: pair-equal mean over all pairs; excess AURC = AURC / base error rate (1 ≈ random ranking); risk@c: "
        "error rate of the c% most confident answers. AUROC higher is better, the rest lower; best in bold, second "
        "underlined. Latency: cost per question in generations, from the runs' own timings (mean over pairs).",
        _missing_methods_note(data, methods),
        _undefined_note(data, methods, ("auroc", "aurc", "excess_aurc", "risk_at_10")),
    )
    return ReportTable("leaderboard", "Leaderboard (paper Table 1 layout)", frame, rank, note)


def _missing_methods_note(data: ReportData, methods: Sequence[str]) -> str:
    k = k_label(data.pairs)
    partial = [
        f"{method_label(method, k)} ({count} of {len(data.pairs)} pairs)"
        for method in methods
        if (count := sum(method in evaluation.scores for evaluation in data.evaluations)) < len(data.pairs)
    ]
    absent = [method.display(k) for method in leaderboard_rows() if method.name not in methods]
    return _notes(
        f"Evaluated on some pairs only (means over those, no bootstrap interval): {', '.join(partial)}."
        if partial
        else "",
        f"Not in the runs: {', '.join(absent)}." if absent else "",
    )


@contextmanager
def _nan_samples_in_note() -> Iterator[None]:
    """Silence the bootstrap's "samples are NaN and left out" warning: the tables' notes give those counts."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*bootstrap samples are NaN and left out", category=TracWarning)
        yield


def nan_samples(data: ReportData, metric: str, a: str, b: str | None = None) -> int:
    """Resamples without a macro of ``a`` (of ``a`` − ``b``): every pair they drew is undefined for the method."""
    bootstrap = data.bootstraps[metric]
    values = bootstrap.samples[:, bootstrap.methods.index(a)]
    if b is not None:
        values = values - bootstrap.samples[:, bootstrap.methods.index(b)]
    return int(np.isnan(values).sum())


def _nan_samples_note(data: ReportData, counts: dict[str, int]) -> str:
    shown = [f"{what} {count}" for what, count in counts.items() if count]
    if not shown:
        return ""
    return (
        f"Resamples that drew only pairs where the metric is undefined have no value and are left out of the "
        f"interval (count of {data.n_resamples}): {', '.join(shown)}."
    )


def ci_table(data: ReportData, level: float = 0.95) -> ReportTable:
    """Macro AUROC and AURC of every leaderboard method with hierarchical-bootstrap percentile intervals."""
    rows = leaderboard_methods(data)
    k = k_label(data.pairs)
    columns: dict[str, list[float]] = {}
    nan_counts: dict[str, int] = {}
    for metric in BOOTSTRAP_METRICS:
        shown = METRIC_LABELS[metric]
        bootstrap = data.bootstraps[metric]
        columns[f"macro {shown}"] = [data.macro(method, metric) for _, method in rows]
        with _nan_samples_in_note():
            intervals = [data.ci(method, metric, level) for _, method in rows]
        nan_counts.update(
            {
                f"{shown} {method_label(method, k)}": nan_samples(data, metric, method)
                for _, method in rows
                if method in bootstrap.methods
            }
        )
        columns[f"{shown} lo"] = [lo for lo, _ in intervals]
        columns[f"{shown} hi"] = [hi for _, hi in intervals]
    index = pd.MultiIndex.from_tuples(
        [(block, method_label(method, k)) for block, method in rows], names=["block", "method"]
    )
    without = [method_label(method, k) for _, method in rows if method not in data.common_methods]
    note = _notes(
        f"{level:.0%} percentile intervals of the pair-equal macro from {data.n_resamples} hierarchical bootstrap "
        f"resamples (pairs, then questions within a pair stratified by correctness; seed {data.seed}). A learned "
        "head's metric is averaged over its cross-fitting repetitions inside every resample, as on the full data, "
        "so each interval belongs to the macro shown.",
        f"No interval (not evaluated on every pair): {', '.join(without)}." if without else "",
        _nan_samples_note(data, nan_counts),
        _undefined_note(data, [method for _, method in rows], ("auroc", "aurc")),
    )
    return ReportTable(
        "confidence_intervals",
        f"Macro AUROC / AURC with {level:.0%} bootstrap intervals",
        pd.DataFrame(columns, index=index),
        {},
        note,
    )


def paired_table(data: ReportData, level: float = 0.95) -> ReportTable:
    """TrAC − SC@K and CF@K − SC@K (modal and primary): macro difference, paired bootstrap interval, one-sided
    bootstrap p-value and wins / ties / losses over pairs, for AUROC and AURC."""
    k = k_label(data.pairs)
    records, index, nan_counts = [], [], {}
    for metric in BOOTSTRAP_METRICS:
        shown = METRIC_LABELS[metric]
        for a, b in COMPARISONS:
            index.append((shown, f"{method_label(a, k)} − {method_label(b, k)}"))
            records.append(paired_row(data, a, b, metric, level))
            if a in data.bootstraps[metric].methods and b in data.bootstraps[metric].methods:
                nan_counts[f"{shown} {index[-1][1]}"] = nan_samples(data, metric, a, b)
    frame = pd.DataFrame(records, index=pd.MultiIndex.from_tuples(index, names=["metric", "comparison"]))
    missing = [
        f"{method_label(a, k)} − {method_label(b, k)}"
        for a, b in COMPARISONS
        if a not in data.common_methods or b not in data.common_methods
    ]
    note = _notes(
        "difference: macro of the first method minus macro of the second (leaderboard numbers). AUROC: positive "
        "favours the first method; AURC: negative favours the first method (lower is better). lo / hi: "
        f"{level:.0%} percentile interval of the paired differences over the same {data.n_resamples} bootstrap "
        "resamples; p: one-sided bootstrap p-value, the share of "
        "resamples where the first method is not better (AUROC difference ≤ 0, AURC difference ≥ 0). wins / ties "
        "/ losses: pairs where the first method's per-pair value is better / equal / worse (per-pair table); pairs: "
        "pairs where both are defined.",
        f"NaN interval (a method not evaluated on every pair): {', '.join(missing)}." if missing else "",
        _nan_samples_note(data, nan_counts),
    )
    return ReportTable("paired_differences", "Paired differences against self-consistency", frame, {}, note)


def paired_row(data: ReportData, a: str, b: str, metric: str, level: float = 0.95) -> dict[str, float]:
    """One row of :func:`paired_table`: difference, lo, hi, p, wins, ties, losses, pairs."""
    higher = HIGHER_IS_BETTER[metric]
    value_a, value_b = data.per_pair(a, metric), data.per_pair(b, metric)
    compared = ~np.isnan(value_a) & ~np.isnan(value_b)
    tied = compared & (np.abs(value_a - value_b) <= _TIE_TOLERANCE)
    better = compared & ~tied & ((value_a > value_b) if higher else (value_a < value_b))
    row = {
        "difference": data.macro(a, metric) - data.macro(b, metric),
        "lo": math.nan,
        "hi": math.nan,
        "p": math.nan,
        "wins": int(better.sum()),
        "ties": int(tied.sum()),
        "losses": int((compared & ~tied & ~better).sum()),
        "pairs": int(compared.sum()),
    }
    bootstrap = data.bootstraps[metric]
    if a in bootstrap.methods and b in bootstrap.methods:
        with _nan_samples_in_note():
            interval = bootstrap.paired_difference(a, b, level, higher_is_better=higher)
        row["lo"], row["hi"] = interval["lo"], interval["hi"]
        columns = bootstrap.samples[:, [bootstrap.methods.index(a), bootstrap.methods.index(b)]]
        differences = columns[:, 0] - columns[:, 1]
        defined = differences[~np.isnan(differences)]
        if defined.size:
            row["p"] = float(np.mean(defined <= 0 if higher else defined >= 0))
    return row


def per_pair_table(data: ReportData) -> ReportTable:
    """Every pair: questions, accuracy, K and the AUROC of each leaderboard method (what each macro averages)."""
    rows = leaderboard_methods(data)
    k = k_label(data.pairs)
    frame = pd.DataFrame(
        {
            "n": [len(pair.evidences) for pair in data.pairs],
            "accuracy": [pair.accuracy for pair in data.pairs],
            "K": [pair.num_samples for pair in data.pairs],
            **{method_label(method, k): data.per_pair(method, "auroc") for _, method in rows},
        },
        index=pd.Index([pair.name for pair in data.pairs], name="pair"),
    )
    note = _notes(
        "Per-pair AUROC (learned heads: mean over the cross-fitting repetitions, as lm-eval reports it).",
        _undefined_note(data, [method for _, method in rows], ("auroc",)),
    )
    return ReportTable("per_pair", "Per-pair AUROC", frame, {}, note)


def calibration_table(data: ReportData, level: float = 0.95) -> ReportTable:
    """The rejection and calibration metrics of every leaderboard method: pair-equal macro of AUPRC (errors), PRR,
    PRR@50, ECE, Brier, log loss and smECE, with hierarchical-bootstrap percentile intervals (none for smECE)."""
    rows = leaderboard_methods(data)
    k = k_label(data.pairs)
    columns: dict[str, list[float]] = {}
    rank: dict[str, bool] = {}
    nan_counts: dict[str, int] = {}
    for metric in CALIBRATION_TABLE_METRICS:
        shown = METRIC_LABELS[metric]
        columns[f"macro {shown}"] = [data.macro(method, metric) for _, method in rows]
        rank[f"macro {shown}"] = HIGHER_IS_BETTER[metric]
        if metric not in data.bootstraps:
            continue
        with _nan_samples_in_note():
            intervals = [data.ci(method, metric, level) for _, method in rows]
        columns[f"{shown} lo"] = [lo for lo, _ in intervals]
        columns[f"{shown} hi"] = [hi for _, hi in intervals]
        nan_counts.update(
            {
                f"{shown} {method_label(method, k)}": nan_samples(data, metric, method)
                for _, method in rows
                if method in data.bootstraps[metric].methods
            }
        )
    index = pd.MultiIndex.from_tuples(
        [(block, method_label(method, k)) for block, method in rows], names=["block", "method"]
    )
    methods = [method for _, method in rows]
    note = _notes(
        "AUPRC (errors): average precision of flagging wrong answers from the least confident up (1 = every error "
        "below every correct answer, random ≈ the error rate); PRR: share of the oracle's gain in retained accuracy "
        "over a random order (1 = oracle, 0 = random), PRR@50 rejecting at most half of the answers. Calibration of "
        "each method's probability of correctness (heads: out-of-fold probability; baselines: their score through "
        f"its calibration map, {data.calibration_map}, cross-fitted on the heads' folds): ECE over {data.ece_bins} "
        "equal-mass bins, Brier score, log loss and smECE (relplot), 0 = calibrated, lower is better. AUPRC and PRR "
        "higher is better; best in bold, second underlined.",
        f"{level:.0%} percentile intervals from the same {data.n_resamples} hierarchical bootstrap resamples as "
        "the leaderboard; smECE has no interval (its estimator is too slow to resample).",
        _missing_methods_note(data, methods),
        _nan_samples_note(data, nan_counts),
        _undefined_note(data, methods, CALIBRATION_TABLE_METRICS),
    )
    return ReportTable(
        "calibration_rejection",
        f"Rejection and calibration metrics with {level:.0%} bootstrap intervals",
        pd.DataFrame(columns, index=index),
        rank,
        note,
    )


SC_REFERENCE = "sc_modal"
"""The ranked summary's default reference: SC@K on the modal answer (docs/method.md#paired-differences)."""


@dataclass(frozen=True)
class RankedRow:
    """One method of :func:`ranked_summary`: its pair-equal macro with the bootstrap interval, its best / second mark
    (None for neither), and the paired difference to the reference (:func:`paired_row`; None for the reference
    itself)."""

    method: str
    label: str
    block: str
    value: float
    lo: float
    hi: float
    mark: str | None
    difference: dict[str, float] | None


@dataclass(frozen=True)
class RankedSummary:
    """The leaderboard methods ranked by the macro of ``metric`` (best first; NaN last), against ``reference``
    (None when no method can be one)."""

    metric: str
    reference: str | None
    level: float
    n_resamples: int
    rows: tuple[RankedRow, ...]

    @property
    def higher(self) -> bool:
        return HIGHER_IS_BETTER[self.metric]


def default_reference(data: ReportData, metric: str) -> str | None:
    """SC@K (modal answer) when it has an interval (evaluated on every pair), else the single-trace baseline (not a
    learned head) with the best macro of ``metric`` among those that have one; None when there is neither."""
    if metric not in data.bootstraps:
        return None
    common = data.bootstraps[metric].methods
    if SC_REFERENCE in common:
        return SC_REFERENCE
    baselines = [
        (macro, method)
        for _, method in leaderboard_methods(data)
        if method in common
        and get(method).family is Family.SINGLE_TRACE
        and not math.isnan(macro := data.macro(method, metric))
    ]
    if not baselines:
        return None
    sign = 1.0 if HIGHER_IS_BETTER[metric] else -1.0
    return max(baselines, key=lambda found: sign * found[0])[1]


def ranked_summary(
    data: ReportData, metric: str = "auroc", reference: str | None = None, level: float = 0.95
) -> RankedSummary:
    """Who wins and by how much: every leaderboard method's macro of ``metric`` with its interval, ranked (ties keep
    the paper's row order), best and second marked as in every table (:func:`~trac_metrics.reporting.tables
    .rank_marks`), and its paired difference to ``reference`` (default: :func:`default_reference`) with interval and
    one-sided p. What the ``ranked_summary`` table of ``trac report`` and the HTML page's summary both show."""
    if metric not in data.bootstraps:
        raise ValueError(f"ranked summary: {metric!r} is not bootstrapped; choose one of {sorted(data.bootstraps)}")
    reference = reference or default_reference(data, metric)
    k = k_label(data.pairs)
    higher = HIGHER_IS_BETTER[metric]
    listed = leaderboard_methods(data)
    values = {method: data.macro(method, metric) for _, method in listed}

    def rank_key(row: tuple[str, str]) -> tuple[bool, float]:
        value = values[row[1]]
        return (math.isnan(value), 0.0 if math.isnan(value) else (-value if higher else value))

    ordered = sorted(listed, key=rank_key)
    frame = pd.DataFrame({"value": [values[method] for _, method in ordered]})
    marks = rank_marks(ReportTable("ranked", "", frame, {"value": higher}))
    rows = []
    with _nan_samples_in_note():
        for position, (block, method) in enumerate(ordered):
            lo, hi = data.ci(method, metric, level)
            difference = None
            if reference is not None and method != reference:
                difference = paired_row(data, method, reference, metric, level)
            rows.append(
                RankedRow(
                    method,
                    method_label(method, k),
                    block,
                    values[method],
                    lo,
                    hi,
                    marks.get((position, "value")),
                    difference,
                )
            )
    return RankedSummary(metric, reference, level, data.n_resamples, tuple(rows))


def format_p(p: float, n_resamples: int) -> str:
    """A bootstrap p-value as the report writes it: ``p < 0.001`` below the finest step the resamples can show
    (1 / resamples, at least 0.001), else ``p = 0.012``; ``p = nan`` when there is none."""
    if math.isnan(p):
        return "p = nan"
    floor = max(1.0 / n_resamples, 0.001)
    return f"p < {floor:.3g}" if p < floor else f"p = {p:.3f}"


def ranked_table(summary: RankedSummary) -> ReportTable:
    """:func:`ranked_summary` as a report table (``ranked_summary.csv``): rank, method, macro, interval, difference
    to the reference with its interval and p, and the pairs compared."""
    label = METRIC_LABELS[summary.metric]
    reference = next((row.label for row in summary.rows if row.method == summary.reference), None)
    empty = dict.fromkeys(("difference", "lo", "hi", "p"), math.nan) | {"pairs": 0}
    differences = [row.difference or empty for row in summary.rows]
    frame = pd.DataFrame(
        {
            f"macro {label}": [row.value for row in summary.rows],
            f"{label} lo": [row.lo for row in summary.rows],
            f"{label} hi": [row.hi for row in summary.rows],
            "difference": [found["difference"] for found in differences],
            "difference lo": [found["lo"] for found in differences],
            "difference hi": [found["hi"] for found in differences],
            "p": [found["p"] for found in differences],
            "pairs": [int(found["pairs"]) for found in differences],
        },
        index=pd.MultiIndex.from_tuples(
            [(position + 1, row.label) for position, row in enumerate(summary.rows)], names=["rank", "method"]
        ),
    )
    direction = "higher" if summary.higher else "lower"
    note = _notes(
        f"Leaderboard methods ranked by the pair-equal macro {label} ({direction} is better; best in bold, second "
        f"underlined), with its {summary.level:.0%} hierarchical-bootstrap interval.",
        f"difference: the method's macro minus {reference}'s, with the {summary.level:.0%} interval of the paired "
        f"differences over the same {summary.n_resamples} resamples and the one-sided p (share of resamples where the "
        "method is not better); pairs: pairs where both are defined."
        if reference
        else "No reference: neither SC@K nor a single-trace baseline is evaluated on every pair.",
    )
    title = f"Ranked by macro {label}" + (f", against {reference}" if reference else "")
    return ReportTable("ranked_summary", title, frame, {f"macro {label}": summary.higher}, note)


def leaderboard_tables(data: ReportData) -> list[ReportTable]:
    """The leaderboard tables, in report order: Table 1, the ranked summary (AUROC against the default reference),
    intervals, calibration and rejection, paired differences, per pair."""
    return [
        main_table(data),
        ranked_table(ranked_summary(data)),
        ci_table(data),
        calibration_table(data),
        paired_table(data),
        per_pair_table(data),
    ]
